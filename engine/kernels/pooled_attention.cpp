// One decode token of every run of a pooled store, attending to its own row of the store
// (models/decoders/batched.py, _PooledStep): the same sums as torch's SDPA over
// (rows, H_kv, H / H_kv, D) queries and (rows, H_kv, S, D) keys and values with a boolean mask,
// computed in fp32 with an fp32 softmax (the maximum subtracted first).
//
// Why a kernel: these are (H / H_kv) x S products per (row, KV head), tiny matrices, where
// torch's SDPA pays a fixed cost per call and per batch entry; with one thread, or beside other
// work on the 2-core CPU, it took 10-50 ms more than this kernel of a 30-run SmolLM2 step.
// Here a layer is one parallel loop over (row, KV head) pairs, bound by reading their keys and
// values. With AVX-512 (and a head size a multiple of 16) a pair's dot products, e^x and
// weighted sums run 16 lanes at a time (attend<true>): the sums in another order and e^x to
// ~2 ulp, so within a few ulp of the scalar loop.
// A masked column's key and value are never read (a slot never written may hold anything).
//
// Layout (strides in floats, every innermost D contiguous):
//   q    (n, H_kv, rep, D) contiguous
//   k, v the store of one layer, (rows >= n, H_kv, width >= S, D) contiguous: row r's KV head g
//        starts at (r * H_kv + g) * width * D
//   mask (n, S) bytes, 1 where row r's query sees column c (at least one per row; a row with
//        none gets zeros, where SDPA would give NaN)
//   out  (n, H_kv, rep, D) contiguous
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HAVE_AVX512 1

// e^x for 16 lanes, x <= 0 or -inf (a score minus the row's largest): x = n ln2 + r with
// |r| <= ln2 / 2 (ln2 split in two parts, so that r keeps its bits), e^r by its Taylor series to
// r^7 (truncation below 2^-27 of e^r), then scaled by 2^n; within ~2 ulp of std::exp. -inf
// and anything below fp32's range give exactly 0, as std::exp does.
static inline __m512 exp_lanes(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-104.f);   // e^-104 underflows fp32 anyway
    const __mmask16 zero = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_max_ps(x, lo);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);          // ln2's high part
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);                // and its low part
    __m512 p = _mm512_set1_ps(1.f / 5040.f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    return _mm512_maskz_mov_ps(~zero, _mm512_scalef_ps(p, n));
}

static inline __mmask16 tail(int64_t c, int64_t s) {   // the lanes of columns c .. c + 15 below s
    return s - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (s - c)) - 1);
}
#else
#define HAVE_AVX512 0
#endif

// q . k over d values (SIMD: d a multiple of 16)
template <bool SIMD>
static inline float dot(const float* q, const float* k, int64_t d) {
#if HAVE_AVX512
    if constexpr (SIMD) {
        __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(q), _mm512_loadu_ps(k));
        for (int64_t i = 16; i < d; i += 16)
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(k + i), acc);
        return _mm512_reduce_add_ps(acc);
    }
#endif
    float total = 0.f;
#pragma omp simd reduction(+ : total)
    for (int64_t i = 0; i < d; ++i) total += q[i] * k[i];
    return total;
}

// One row of scores (s columns, -inf where masked) made its softmax in place; zeros where
// nothing is visible (no weights at all)
template <bool SIMD>
static void softmax(float* pj, int64_t s) {
#if HAVE_AVX512
    if constexpr (SIMD) {
        const __m512 none = _mm512_set1_ps(-INFINITY);
        __m512 vmax = none;
        for (int64_t c = 0; c < s; c += 16)
            vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(none, tail(c, s), pj + c));
        const float top = _mm512_reduce_max_ps(vmax);
        if (top == -INFINITY) {
            for (int64_t c = 0; c < s; ++c) pj[c] = 0.f;
            return;
        }
        __m512 vsum = _mm512_setzero_ps();
        for (int64_t c = 0; c < s; c += 16) {
            const __m512 e = exp_lanes(_mm512_sub_ps(_mm512_mask_loadu_ps(none, tail(c, s), pj + c),
                                                     _mm512_set1_ps(top)));
            _mm512_mask_storeu_ps(pj + c, tail(c, s), e);
            vsum = _mm512_add_ps(vsum, e);   // lanes past s hold e^-inf = 0
        }
        const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(vsum));
        for (int64_t c = 0; c < s; c += 16)
            _mm512_mask_storeu_ps(pj + c, tail(c, s), _mm512_mul_ps(_mm512_maskz_loadu_ps(tail(c, s), pj + c), inv));
        return;
    }
#endif
    float top = -INFINITY;
    for (int64_t c = 0; c < s; ++c) top = pj[c] > top ? pj[c] : top;
    if (top == -INFINITY) {
        for (int64_t c = 0; c < s; ++c) pj[c] = 0.f;
        return;
    }
    float total = 0.f;
    for (int64_t c = 0; c < s; ++c) {
        pj[c] = std::exp(pj[c] - top);   // exp(-inf) = 0: a masked column weighs nothing
        total += pj[c];
    }
    const float inv = 1.f / total;
    for (int64_t c = 0; c < s; ++c) pj[c] *= inv;
}

// o += w v over d values
template <bool SIMD>
static inline void add_weighted(float* o, float w, const float* v, int64_t d) {
#if HAVE_AVX512
    if constexpr (SIMD) {
        const __m512 wv = _mm512_set1_ps(w);
        for (int64_t i = 0; i < d; i += 16)
            _mm512_storeu_ps(o + i, _mm512_fmadd_ps(wv, _mm512_loadu_ps(v + i), _mm512_loadu_ps(o + i)));
        return;
    }
#endif
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) o[i] += w * v[i];
}

// One (row, KV head) task: the `rep` queries qh against the keys and values kh, vh of the
// columns `seen`, into oh; p holds rep rows of s scores
template <bool SIMD>
static void attend(const float* qh, const float* kh, const float* vh, const uint8_t* seen,
                   float* oh, float* p, int64_t rep, int64_t d, int64_t s, float scale) {
    // scores: each visible key read once for the `rep` queries that share its head
    for (int64_t c = 0; c < s; ++c) {
        for (int64_t j = 0; j < rep; ++j)
            p[j * s + c] = seen[c] ? dot<SIMD>(qh + j * d, kh + c * d, d) * scale : -INFINITY;
    }
    for (int64_t j = 0; j < rep; ++j) softmax<SIMD>(p + j * s, s);
    // the weighted values: each value read once for the `rep` queries
    for (int64_t i = 0; i < rep * d; ++i) oh[i] = 0.f;
    for (int64_t c = 0; c < s; ++c) {
        if (!seen[c]) continue;
        for (int64_t j = 0; j < rep; ++j) add_weighted<SIMD>(oh + j * d, p[j * s + c], vh + c * d, d);
    }
}

extern "C" int pooled_decode_attention(const float* q, const float* k, const float* v,
                                       const uint8_t* mask, float* out, int64_t n, int64_t n_kv,
                                       int64_t rep, int64_t d, int64_t s, int64_t width,
                                       float scale, int n_threads) {
    if (n <= 0 || n_kv <= 0 || rep <= 0 || d <= 0 || s <= 0 || width < s) return 1;
    const bool simd = HAVE_AVX512 && d % 16 == 0;
#pragma omp parallel num_threads(n_threads)
    {
        std::vector<float> p(static_cast<size_t>(rep * s));   // row j of the scores: p[j * s ..]
#pragma omp for schedule(static)
        for (int64_t task = 0; task < n * n_kv; ++task) {
            const int64_t r = task / n_kv;
            const float* qh = q + task * rep * d;
            const float* kh = k + task * width * d;
            const float* vh = v + task * width * d;
            float* oh = out + task * rep * d;
            if (simd) attend<true>(qh, kh, vh, mask + r * s, oh, p.data(), rep, d, s, scale);
            else attend<false>(qh, kh, vh, mask + r * s, oh, p.data(), rep, d, s, scale);
        }
    }
    return 0;
}
