// One decode token of a Llama-family or Gemma 3 model in a single call: the CPU kernel behind
// models/decoders/fused.py (read that module's doc first; it explains why this exists).
//
// Why one call: at batch 1 a decode step reads every weight once and does little else, so its
// speed is set by memory bandwidth. On a small CPU the step spends a large share of its time
// between the matrix-vector products -- in the Python dispatch of ~1,000 aten calls (eager), or
// in ~250 separate parallel regions and their thread wake-ups (torch.compile). Here the two
// (or n) threads enter ONE OpenMP parallel region per token, share the rows of every matrix
// (in chunks, to whichever thread is free), and meet at a barrier only where the next phase
// needs the whole previous result: 6 barriers per layer. The small vector work (norms, residual
// adds) is done by every thread on its own copy of the residual stream, which costs less than
// a barrier.
//
// The math is exactly models/llama.py and models/gemma3.py (tests compare the logits with the
// engine's forward to ~1e-5); only the summation order of the dot products differs.
// Layouts: every matrix row-major (out_features, in_features), as nn.Linear stores it;
// K/V cache (n_kv_heads, capacity, head_dim) of batch 1, as models/kv_cache.py allocates it.
//
// Weight formats (FusedModel.wtype; models/decoders/quantized.py makes the copies): 0 fp32;
// 1 bf16 (the upper half of each fp32); 2 int8 in blocks of QBLOCK along a row, each block
// with one fp32 scale (w = q * scale, q in [-127, 127], Q8_0's arithmetic with an fp32 scale).
// bf16 and int8 are stored packed in tiles of 16 rows ("The packed layouts" below).
// A step reads every weight once, so fewer bytes per weight is a faster step. The products
// with bf16 weights use AVX512_BF16's dot product where the CPU has it (the input vector is
// then rounded to bf16 too: the instruction multiplies bf16 pairs, summing in fp32), else a
// portable loop that widens each weight to fp32. The products with int8 weights quantize the
// input vector the same way (blocks of QBLOCK, one scale each), sum q_w * q_x exactly in int32
// per block (AVX512_VNNI's vpdpbusd where the CPU has it, else a portable loop) and scale each
// block's sum in fp32. 3 "gguf": the checkpoint's own GGUF codes (explorer/checkpoints/
// gguf_codes.py), w = scale * code + offset in blocks along a row (QMat.block: CBLOCK = 16,
// or 32 where each pair of 16-blocks shares its scale and offset, as in every format but
// Q6_K), code in [-128, 127]: the fp32 checkpoint's exact weights. Their input is quantized
// to two int8 digits per block (x ~ s * (256 h + l), |256 h + l| <= 32512: 15 bits of the
// block's largest value, where bf16 keeps 8 of each element), so that one vpdpbusd per digit
// sums code * digit exactly; the result is s * scale * (256 sum(code h) + sum(code l)) +
// offset * sum(x). A block of 32 reads half the scales and offsets and scales half as many
// sums as two of 16.
// FusedModel.portable = 1 takes the portable loops on any CPU (tests).
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <vector>

// The entry points (fused_simd_paths, fused_decode_step, quant_linear) have C linkage, for ctypes.

// A weight matrix in the model's format: its elements, for int8 and gguf its block scales
// (rows, cols / QBLOCK or block), for gguf its block offsets (null where all are 0), else
// null; block: gguf's weights per block along a row (CBLOCK or 2 * CBLOCK), read for gguf only
struct QMat { const void* w; const float* scales; const float* offsets; int64_t block; };

struct FusedLayer {
    QMat wqkv; const float* bqkv;           // (q_dim + 2 kv_dim, d); bias or null
    QMat wo; const float* bo;               // (d, q_dim); bias or null
    QMat w_gate_up;                         // (2 d_ff, d): gate rows, then up rows
    QMat w_down;                            // (d, d_ff)
    // RMSNorm scales as used (Gemma's 1 + w already added); post norms null for Llama
    const float* attn_norm; const float* attn_post_norm;
    const float* mlp_norm; const float* mlp_post_norm;
    const float* q_norm; const float* k_norm;  // (head_dim) QK-norm (Gemma) or null
    float* k_cache; float* v_cache;          // (n_kv_heads, capacity, head_dim)
    int64_t capacity;
    // set by Python before every step; the KVCache (models/kv_cache.py) chose the slot and
    // records its position: this kernel writes only the K/V rows
    int64_t slot;                            // where this token's K/V go
    const float* rope;                       // (2, head_dim): cos, then sin with its first half negated
    const float* mask;                       // (capacity,) 0 where visible, -inf where not
};

struct FusedModel {
    int64_t n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab, n_threads;
    int64_t activation;                      // 0: SiLU (SwiGLU), 1: tanh-GELU (GeGLU)
    float norm_eps, attn_scale, embed_scale;  // embed_scale 0: none
    float attn_softcap, final_softcap;       // 0: none
    const float* embed;                      // (vocab, d)
    const float* final_norm;                 // (d)
    QMat lm_head;                            // (vocab, d), the embedding when tied
    const float* sinks;                      // (n_heads) sink logits (gpt-oss style) or null
    FusedLayer* layers;
    int64_t wtype;                           // 0 fp32, 1 bf16, 2 int8, 3 gguf (see the top)
    int64_t portable;                        // 1: the portable loops even where SIMD exists
};

// ---------------------------------------------------------------------------------------------

static void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) {
    // F.rms_norm: x * rsqrt(mean(x^2) + eps) * w, accumulated in fp32
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
    const float r = 1.f / sqrtf(ss / (float)n + eps);
#pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * r * w[i];
}

// Rows [r0, r1) of y = W x (+ b). Four rows at a time share each load of x and keep four
// independent streams of W in flight, which is what a bandwidth-bound GEMV needs.
static void matvec_rows(const float* W, const float* b, const float* x, int64_t n,
                        int64_t r0, int64_t r1, float* y) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
        const float *w0 = W + r * n, *w1 = w0 + n, *w2 = w1 + n, *w3 = w2 + n;
        float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (int64_t i = 0; i < n; i++) {
            const float xi = x[i];
            s0 += w0[i] * xi; s1 += w1[i] * xi; s2 += w2[i] * xi; s3 += w3[i] * xi;
        }
        y[r] = s0; y[r + 1] = s1; y[r + 2] = s2; y[r + 3] = s3;
    }
    for (; r < r1; r++) {
        const float* w = W + r * n;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) s += w[i] * x[i];
        y[r] = s;
    }
    if (b) for (int64_t i = r0; i < r1; i++) y[i] += b[i];
}

static const int64_t QBLOCK = 32, CBLOCK = 16;

// bf16 <-> fp32: a bf16 is the upper 16 bits of an fp32; rounding to nearest even
static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

// The packed layouts of bf16 and int8 weights (models/decoders/quantized.py writes them).
// Rows are grouped in tiles of TILE = 16 (the last tile padded with zero rows), and inside a
// tile the elements of one small step along the input are stored row after row, so that one
// 64-byte load holds the same input positions of 16 output rows and one dot-product
// instruction adds them into 16 independent sums, one per row, with the input element(s)
// broadcast: no horizontal reduction, and one load of the input per 16 rows.
//   bf16: pairs along the input (n even): element (r, k) at
//         ((r / 16 * (n / 2) + k / 2) * 16 + r % 16) * 2 + k % 2
//   int8: quads along the input, blocks of QBLOCK = 32 inputs (8 quads) with one fp32 scale
//         per row and block: byte (r, k) at
//         (((r / 16 * nb + k / 32) * 8 + k % 32 / 4) * 16 + r % 16) * 4 + k % 4, nb = n / 32,
//         stored as q + 128 (1..255, an unsigned byte: vpdpbusd multiplies unsigned bytes by
//         signed ones, so the input stays signed and sum((q + 128) x) - 128 sum(x) is the exact
//         integer sum(q x)); the scale of (r, block j) at (r / 16 * nb + j) * 16 + r % 16.
//   gguf: as int8 with blocks of CBLOCK = 16 inputs (4 quads), code + 128 in each byte; the
//         scale and the offset of (r, block j) at (r / 16 * nb + j) * 16 + r % 16, nb = n / 16.
static const int64_t TILE = 16;

// The input vector of a product in the form the weights' format multiplies: fp32 as is; for
// bf16 also rounded to bf16 (used by the AVX512_BF16 path); for int8 quantized per block, with
// each block's -128 * sum(q) (the correction of the unsigned weights above).
struct QVec {
    const float* f; std::vector<uint16_t> b; std::vector<int8_t> q; std::vector<float> s;
    std::vector<int32_t> c;
    // gguf: the low digits (q holds the high ones), their correction, each block's sum(x)
    std::vector<int8_t> lo; std::vector<int32_t> c_lo; std::vector<float> sum;
};

static void quantize_blocks(const float* x, int64_t n, int8_t* q, float* s, int32_t* c) {
    for (int64_t blk = 0; blk < n / QBLOCK; blk++) {
        const float* xb = x + blk * QBLOCK;
        int8_t* qb = q + blk * QBLOCK;
        float amax = 0.f;
        for (int64_t i = 0; i < QBLOCK; i++) amax = fmaxf(amax, fabsf(xb[i]));
        const float scale = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
        s[blk] = scale;
        int32_t sum = 0;
#if defined(__AVX512F__)
        // rounded to nearest even by the default rounding mode, as nearbyintf below
        for (int64_t i = 0; i < QBLOCK; i += 16) {
            const __m512i r = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), _mm512_set1_ps(inv)));
            _mm_storeu_si128((__m128i*)(qb + i), _mm512_cvtsepi32_epi8(r));
            sum += _mm512_reduce_add_epi32(r);
        }
#else
        for (int64_t i = 0; i < QBLOCK; i++) { qb[i] = (int8_t)nearbyintf(xb[i] * inv); sum += qb[i]; }
#endif
        c[blk] = -128 * sum;
    }
}

// gguf's input: per block of the matrix's (`block`), x = s * (256 h + l) with h, l int8 (to
// 15 bits of the block's largest |x|), the corrections -128 sum(h) and -128 sum(l), and
// sum(x) in fp32
static void quantize_digits(const float* x, int64_t n, int64_t block, QVec& v) {
    const int64_t nb = n / block;
    v.q.resize(n); v.lo.resize(n); v.s.resize(nb); v.c.resize(nb); v.c_lo.resize(nb); v.sum.resize(nb);
    for (int64_t blk = 0; blk < nb; blk++) {
        const float* xb = x + blk * block;
        float amax = 0.f, sum = 0.f;
#if defined(__AVX512F__)
        // 16 lanes at a time (a block is 16 or 32): the largest |x| is the same in any order;
        // sum(x) is added as a tree of lanes, a fixed order shared by every product that reads it
        __m512 vmax = _mm512_setzero_ps(), vsum = _mm512_setzero_ps();
        for (int64_t i = 0; i < block; i += 16) {
            const __m512 xv = _mm512_loadu_ps(xb + i);
            vmax = _mm512_max_ps(vmax, _mm512_abs_ps(xv));
            vsum = _mm512_add_ps(vsum, xv);
        }
        amax = _mm512_reduce_max_ps(vmax);
        sum = _mm512_reduce_add_ps(vsum);
#else
        for (int64_t i = 0; i < block; i++) { amax = fmaxf(amax, fabsf(xb[i])); sum += xb[i]; }
#endif
        const float inv = amax > 0.f ? 32512.f / amax : 0.f;
        v.s[blk] = amax / 32512.f;
        v.sum[blk] = sum;
        int32_t sh = 0, sl = 0;
#if defined(__AVX512F__)
        // as the loop below: cvtps rounds half to even under the default rounding mode, as
        // nearbyintf does; h and l fit a byte, so the narrowing stores keep them exactly
        __m512i vh = _mm512_setzero_si512(), vl = _mm512_setzero_si512();
        for (int64_t i = 0; i < block; i += 16) {
            const __m512i xq = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), _mm512_set1_ps(inv)));
            const __m512i h = _mm512_srai_epi32(_mm512_add_epi32(xq, _mm512_set1_epi32(128)), 8);
            const __m512i l = _mm512_sub_epi32(xq, _mm512_slli_epi32(h, 8));
            _mm_storeu_si128((__m128i*)(v.q.data() + blk * block + i), _mm512_cvtepi32_epi8(h));
            _mm_storeu_si128((__m128i*)(v.lo.data() + blk * block + i), _mm512_cvtepi32_epi8(l));
            vh = _mm512_add_epi32(vh, h); vl = _mm512_add_epi32(vl, l);
        }
        sh = _mm512_reduce_add_epi32(vh); sl = _mm512_reduce_add_epi32(vl);
#else
        for (int64_t i = 0; i < block; i++) {
            const int32_t xq = (int32_t)nearbyintf(xb[i] * inv);            // |xq| <= 32512
            const int32_t h = (xq + 128) >> 8, l = xq - 256 * h;            // h in [-127, 127], l in [-128, 127]
            v.q[blk * block + i] = (int8_t)h; v.lo[blk * block + i] = (int8_t)l;
            sh += h; sl += l;
        }
#endif
        v.c[blk] = -128 * sh; v.c_lo[blk] = -128 * sl;
    }
}

// block: the gguf matrix's (QMat.block), which the input's digit blocks must match
static void prepare(int64_t wtype, const float* x, int64_t n, QVec& v, int64_t block = CBLOCK) {
    v.f = x;
    if (wtype == 1) {
        v.b.resize(n);
        for (int64_t i = 0; i < n; i++) v.b[i] = f32_to_bf16(x[i]);
    } else if (wtype == 2) {
        v.q.resize(n); v.s.resize(n / QBLOCK); v.c.resize(n / QBLOCK);
        quantize_blocks(x, n, v.q.data(), v.s.data(), v.c.data());
    } else if (wtype == 3) {
        quantize_digits(x, n, block, v);
    }
}

static inline int32_t load4(const void* p) { int32_t v; memcpy(&v, p, 4); return v; }

// Whole tiles t0 .. t0 + NT - 1 of y = W x for MB input vectors at once: out[m * NT * 16 +
// tt * 16 + i] is row (t0 + tt) * 16 + i for input m. Every weight load serves MB inputs and
// every broadcast input element NT tiles; the MB * NT sums are independent chains.
#if defined(__AVX512BF16__) && defined(__AVX512F__)
template <int MB, int NT>
static void tiles_bf16(const uint16_t* W, int64_t t0, int64_t n, const QVec* const* x, float* out) {
    const int64_t pairs = n / 2;
    __m512 acc[MB][NT];
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++) acc[m][t] = _mm512_setzero_ps();
    const uint16_t* base[NT];
    for (int t = 0; t < NT; t++) base[t] = W + (t0 + t) * pairs * 2 * TILE;
    for (int64_t p = 0; p < pairs; p++) {
        __m512i xp[MB];
        for (int m = 0; m < MB; m++) xp[m] = _mm512_set1_epi32(load4(x[m]->b.data() + 2 * p));
        for (int t = 0; t < NT; t++) {
            const __m512bh w = (__m512bh)_mm512_loadu_si512(base[t] + p * 2 * TILE);
            for (int m = 0; m < MB; m++) acc[m][t] = _mm512_dpbf16_ps(acc[m][t], w, (__m512bh)xp[m]);
        }
    }
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++)
        _mm512_storeu_ps(out + (m * NT + t) * TILE, acc[m][t]);
}
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
template <int MB, int NT>
static void tiles_int8(const uint8_t* W, const float* S, int64_t t0, int64_t n, const QVec* const* x,
                       float* out) {
    const int64_t nb = n / QBLOCK;
    __m512 res[MB][NT];
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++) res[m][t] = _mm512_setzero_ps();
    for (int64_t j = 0; j < nb; j++) {
        __m512i acc[MB][NT];
        for (int m = 0; m < MB; m++) {
            const __m512i c = _mm512_set1_epi32(x[m]->c[j]);   // starts at -128 sum(x): exact
            for (int t = 0; t < NT; t++) acc[m][t] = c;
        }
        for (int64_t q = 0; q < QBLOCK / 4; q++) {
            __m512i xq[MB];
            for (int m = 0; m < MB; m++) xq[m] = _mm512_set1_epi32(load4(x[m]->q.data() + j * QBLOCK + 4 * q));
            for (int t = 0; t < NT; t++) {
                const __m512i w = _mm512_loadu_si512(W + (((t0 + t) * nb + j) * (QBLOCK / 4) + q) * 4 * TILE);
                for (int m = 0; m < MB; m++) acc[m][t] = _mm512_dpbusd_epi32(acc[m][t], w, xq[m]);
            }
        }
        for (int t = 0; t < NT; t++) {
            const __m512 sw = _mm512_loadu_ps(S + ((t0 + t) * nb + j) * TILE);
            for (int m = 0; m < MB; m++)
                res[m][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][t]),
                                            _mm512_mul_ps(sw, _mm512_set1_ps(x[m]->s[j])), res[m][t]);
        }
    }
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++)
        _mm512_storeu_ps(out + (m * NT + t) * TILE, res[m][t]);
}
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
// OFF: the matrix has offsets (null where every offset is 0, as in Q8_0, Q5_0 and Q6_K: one
// multiply-add less per block). QB: quads per block (4: CBLOCK, 8: a block of 32); the codes'
// layout is the same for both, a block of 32 being two of 16 one after the other.
template <int MB, int NT, bool OFF, int QB>
static void tiles_gguf(const uint8_t* W, const float* S, const float* O, int64_t t0, int64_t n,
                       const QVec* const* x, float* out) {
    const int64_t nb = n / (4 * QB);
    __m512 res[MB][NT];
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++) res[m][t] = _mm512_setzero_ps();
    for (int64_t j = 0; j < nb; j++) {
        __m512i hi[MB][NT], lo[MB][NT];
        for (int m = 0; m < MB; m++) {
            const __m512i ch = _mm512_set1_epi32(x[m]->c[j]), cl = _mm512_set1_epi32(x[m]->c_lo[j]);
            for (int t = 0; t < NT; t++) { hi[m][t] = ch; lo[m][t] = cl; }
        }
        for (int64_t q = 0; q < QB; q++) {
            __m512i xh[MB], xl[MB];
            for (int m = 0; m < MB; m++) {
                xh[m] = _mm512_set1_epi32(load4(x[m]->q.data() + j * 4 * QB + 4 * q));
                xl[m] = _mm512_set1_epi32(load4(x[m]->lo.data() + j * 4 * QB + 4 * q));
            }
            for (int t = 0; t < NT; t++) {
                const __m512i w = _mm512_loadu_si512(W + (((t0 + t) * nb + j) * QB + q) * 4 * TILE);
                for (int m = 0; m < MB; m++) {
                    hi[m][t] = _mm512_dpbusd_epi32(hi[m][t], w, xh[m]);
                    lo[m][t] = _mm512_dpbusd_epi32(lo[m][t], w, xl[m]);
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const __m512 sw = _mm512_loadu_ps(S + ((t0 + t) * nb + j) * TILE);
            const __m512 ow = OFF ? _mm512_loadu_ps(O + ((t0 + t) * nb + j) * TILE) : _mm512_setzero_ps();
            for (int m = 0; m < MB; m++) {
                // 256 sum(code h) + sum(code l): exact in int32 (|.| <= 32 * 128 * 32512)
                const __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hi[m][t], 8), lo[m][t]);
                res[m][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
                                            _mm512_mul_ps(sw, _mm512_set1_ps(x[m]->s[j])), res[m][t]);
                if (OFF) res[m][t] = _mm512_fmadd_ps(ow, _mm512_set1_ps(x[m]->sum[j]), res[m][t]);
            }
        }
    }
    for (int m = 0; m < MB; m++) for (int t = 0; t < NT; t++)
        _mm512_storeu_ps(out + (m * NT + t) * TILE, res[m][t]);
}
#endif

// The portable loops, one tile of one input: bf16 widens each weight to fp32 and keeps the
// input in fp32; int8 sums q_w * q_x exactly in int32 per block, as the SIMD path does.
static void tile_bf16_portable(const uint16_t* W, int64_t t, int64_t n, const QVec& x, float* out) {
    const uint16_t* base = W + t * (n / 2) * 2 * TILE;
    float acc[TILE] = {0.f};
    for (int64_t p = 0; p < n / 2; p++) {
        const uint16_t* w = base + p * 2 * TILE;
        const float x0 = x.f[2 * p], x1 = x.f[2 * p + 1];
        for (int64_t i = 0; i < TILE; i++) acc[i] += bf16_to_f32(w[2 * i]) * x0 + bf16_to_f32(w[2 * i + 1]) * x1;
    }
    memcpy(out, acc, sizeof(acc));
}

static void tile_int8_portable(const uint8_t* W, const float* S, int64_t t, int64_t n, const QVec& x,
                               float* out) {
    const int64_t nb = n / QBLOCK;
    float acc[TILE] = {0.f};
    for (int64_t j = 0; j < nb; j++) {
        int32_t dot[TILE] = {0};
        const uint8_t* wb = W + (t * nb + j) * QBLOCK * TILE;
        const int8_t* xb = x.q.data() + j * QBLOCK;
        for (int64_t q = 0; q < QBLOCK / 4; q++)
            for (int64_t i = 0; i < TILE; i++)
                for (int64_t c = 0; c < 4; c++)
                    dot[i] += ((int32_t)wb[(q * TILE + i) * 4 + c] - 128) * (int32_t)xb[4 * q + c];
        for (int64_t i = 0; i < TILE; i++) acc[i] += (float)dot[i] * (S[(t * nb + j) * TILE + i] * x.s[j]);
    }
    memcpy(out, acc, sizeof(acc));
}

static void tile_gguf_portable(const uint8_t* W, const float* S, const float* O, int64_t block, int64_t t,
                               int64_t n, const QVec& x, float* out) {
    const int64_t nb = n / block;
    float acc[TILE] = {0.f};
    for (int64_t j = 0; j < nb; j++) {
        int32_t dot[TILE] = {0};
        const uint8_t* wb = W + (t * nb + j) * block * TILE;
        for (int64_t q = 0; q < block / 4; q++)
            for (int64_t i = 0; i < TILE; i++)
                for (int64_t c = 0; c < 4; c++) {
                    const int64_t k = j * block + 4 * q + c;
                    dot[i] += ((int32_t)wb[(q * TILE + i) * 4 + c] - 128) * (256 * (int32_t)x.q[k] + (int32_t)x.lo[k]);
                }
        for (int64_t i = 0; i < TILE; i++) {
            const int64_t at = (t * nb + j) * TILE + i;
            acc[i] += (float)dot[i] * (S[at] * x.s[j]) + (O ? O[at] * x.sum[j] : 0.f);
        }
    }
    memcpy(out, acc, sizeof(acc));
}

// MB inputs, NT tiles from t0 into out (the layout of tiles_bf16), by whichever path runs.
template <int MB, int NT>
static void tiles(int64_t wtype, bool portable, const QMat& W, int64_t t0, int64_t n,
                  const QVec* const* x, float* out) {
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    if (wtype == 1 && !portable) { tiles_bf16<MB, NT>((const uint16_t*)W.w, t0, n, x, out); return; }
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    if (wtype == 2 && !portable) { tiles_int8<MB, NT>((const uint8_t*)W.w, W.scales, t0, n, x, out); return; }
    if (wtype == 3 && !portable) {
        const uint8_t* w = (const uint8_t*)W.w;
        if (W.block == 2 * CBLOCK) {
            if (W.offsets) tiles_gguf<MB, NT, true, 8>(w, W.scales, W.offsets, t0, n, x, out);
            else tiles_gguf<MB, NT, false, 8>(w, W.scales, nullptr, t0, n, x, out);
        } else {
            if (W.offsets) tiles_gguf<MB, NT, true, 4>(w, W.scales, W.offsets, t0, n, x, out);
            else tiles_gguf<MB, NT, false, 4>(w, W.scales, nullptr, t0, n, x, out);
        }
        return;
    }
#endif
    (void)portable;
    for (int m = 0; m < MB; m++)
        for (int t = 0; t < NT; t++) {
            float* o = out + (m * NT + t) * TILE;
            if (wtype == 1) tile_bf16_portable((const uint16_t*)W.w, t0 + t, n, *x[m], o);
            else if (wtype == 2) tile_int8_portable((const uint8_t*)W.w, W.scales, t0 + t, n, *x[m], o);
            else tile_gguf_portable((const uint8_t*)W.w, W.scales, W.offsets, W.block, t0 + t, n, *x[m], o);
        }
}

// The instantiations a call picks from: NT_MAX tiles at a time (four for one input: four
// independent chains of dot products; two for several inputs, whose MB x NT int8 sums and
// results must stay in registers), MB_MAX = 4 inputs at a time.
static const int MB_MAX = 4;
template <int MB>
static void tiles_n(int nt, int64_t wtype, bool portable, const QMat& W, int64_t t0, int64_t n,
                    const QVec* const* x, float* out) {
    switch (nt) {
        case 4: tiles<MB, 4>(wtype, portable, W, t0, n, x, out); break;
        case 3: tiles<MB, 3>(wtype, portable, W, t0, n, x, out); break;
        case 2: tiles<MB, 2>(wtype, portable, W, t0, n, x, out); break;
        default: tiles<MB, 1>(wtype, portable, W, t0, n, x, out); break;
    }
}

// Rows [r0, r1) of y_m = W x_m (+ b) for nx inputs (ys[m] indexed by the matrix's row), any
// r0 and r1: the tiles that cover them are computed whole and only rows in range stored (a
// range starting inside a tile, as the up rows of a fused gate/up matrix whose d_ff is not a
// multiple of 16, computes a few rows twice).
static void qproduct(int64_t wtype, bool portable, const QMat& W, const float* b, const QVec* const* x,
                     int64_t nx, int64_t n, int64_t r0, int64_t r1, float* const* ys) {
    if (r1 <= r0) return;
    const int64_t t_end = (r1 + TILE - 1) / TILE;
    float out[MB_MAX * 4 * TILE];
    for (int64_t m0 = 0; m0 < nx; m0 += MB_MAX) {
        const int mb = (int)(nx - m0 < MB_MAX ? nx - m0 : MB_MAX);
        const int nt_max = mb == 1 ? 4 : 2;
        for (int64_t t0 = r0 / TILE; t0 < t_end; t0 += nt_max) {
            const int nt = (int)(t_end - t0 < nt_max ? t_end - t0 : nt_max);
            const QVec* const* xm = x + m0;
            switch (mb) {
                case 4: tiles_n<4>(nt, wtype, portable, W, t0, n, xm, out); break;
                case 3: tiles_n<3>(nt, wtype, portable, W, t0, n, xm, out); break;
                case 2: tiles_n<2>(nt, wtype, portable, W, t0, n, xm, out); break;
                default: tiles_n<1>(nt, wtype, portable, W, t0, n, xm, out); break;
            }
            const int64_t lo = t0 * TILE > r0 ? t0 * TILE : r0;
            const int64_t hi = (t0 + nt) * TILE < r1 ? (t0 + nt) * TILE : r1;
            for (int m = 0; m < mb; m++) {
                float* y = ys[m0 + m];
                const float* o = out + m * nt * TILE - t0 * TILE;   // o[r]: row r of input m
                for (int64_t r = lo; r < hi; r++) y[r] = b ? o[r] + b[r] : o[r];
            }
        }
    }
}

// Rows [r0, r1) of y = W x (+ b) in any of the weight formats; x prepared by `prepare`
static void qmatvec_rows(int64_t wtype, bool portable, const QMat& W, const float* b, const QVec& x,
                         int64_t n, int64_t r0, int64_t r1, float* y) {
    if (wtype == 0) { matvec_rows((const float*)W.w, b, x.f, n, r0, r1, y); return; }
    const QVec* xs[1] = {&x};
    float* ys[1] = {y};
    qproduct(wtype, portable, W, b, xs, 1, n, r0, r1, ys);
}

// Which SIMD paths this build has (models/decoders/quantized.py reports the path that runs):
// bit 0 AVX512_BF16 dot products, bit 1 AVX512_VNNI int8 dot products
extern "C" int fused_simd_paths() {
    int paths = 0;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    paths |= 1;
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    paths |= 2;
#endif
    return paths;
}

// The rows of a product are handed out in chunks of CHUNK (a multiple of 4, so that
// matvec_rows keeps its four-row groups) to whichever thread is free (schedule(dynamic)): in a
// web server the OS now and then gives one of the two cores to another thread for a while, and
// with a fixed half each the other thread would wait at the barrier for that half; handed out
// in chunks, it takes the chunks the busy one has not started. Each row is computed by one
// thread exactly as before, so the results do not depend on who computed it.
// The LM head's rows are many more (the vocabulary): HEAD_CHUNK keeps its chunks few.
static const int64_t CHUNK = 64, HEAD_CHUNK = 512;
static int64_t chunks(int64_t n, int64_t size = CHUNK) { return (n + size - 1) / size; }
static int64_t chunk_end(int64_t c, int64_t n, int64_t size = CHUNK) {
    return c * size + size < n ? c * size + size : n;
}

// RoPE, rotate_half layout (models/layers.rotate): out = x * cos + roll(x, D/2) * signed_sin
static void rope(float* x, const float* table, int64_t D) {
    const float* cs = table;
    const float* sn = table + D;
    const int64_t h = D / 2;
    float tmp[1024];
    memcpy(tmp, x, sizeof(float) * D);
    for (int64_t i = 0; i < D; i++) {
        const float rolled = i < h ? tmp[i + h] : tmp[i - h];
        x[i] = tmp[i] * cs[i] + rolled * sn[i];
    }
}

static float activate(float g, int64_t kind) {
    if (kind == 0) return g / (1.f + expf(-g));                                       // SiLU
    const float c = 0.7978845608028654f;                                               // sqrt(2/pi)
    return 0.5f * g * (1.f + tanhf(c * (g + 0.044715f * g * g * g)));                  // tanh-GELU
}

// One query head against every visible slot of its KV head: softmax(q k^T * scale) v, with an
// optional logit softcap and sink logit (an extra softmax column whose value is dropped).
// K, V: the KV head's slots, head_dim floats apart; hidden(j): slot j is hidden or empty.
template <typename Hidden>
static void attend(const FusedModel* m, const float* q, const float* K, const float* V, int64_t C,
                   Hidden hidden, const float* sinks, int64_t head, float* scores, float* out) {
    const int64_t D = m->head_dim;
    float mx = -INFINITY;
    for (int64_t j = 0; j < C; j++) {
        if (hidden(j)) { scores[j] = -INFINITY; continue; }   // hidden or empty slot
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < D; i++) s += q[i] * K[j * D + i];
        s *= m->attn_scale;
        if (m->attn_softcap > 0.f) s = m->attn_softcap * tanhf(s / m->attn_softcap);
        scores[j] = s;
        if (s > mx) mx = s;
    }
    const float sink = sinks ? sinks[head] : -INFINITY;
    if (sink > mx) mx = sink;
    float denom = sinks ? expf(sink - mx) : 0.f;
    for (int64_t i = 0; i < D; i++) out[i] = 0.f;
    for (int64_t j = 0; j < C; j++) {
        if (scores[j] == -INFINITY) continue;
        const float p = expf(scores[j] - mx);
        denom += p;
#pragma omp simd
        for (int64_t i = 0; i < D; i++) out[i] += p * V[j * D + i];
    }
    const float inv = 1.f / denom;
    for (int64_t i = 0; i < D; i++) out[i] *= inv;
}

// attend for the single-run step: the layer's contiguous cache, its additive mask
static void attend_head(const FusedModel* m, const FusedLayer* L, const float* q, int64_t kv_head,
                        int64_t head, float* scores, float* out) {
    const int64_t D = m->head_dim, C = L->capacity;
    const float* mask = L->mask;
    attend(m, q, L->k_cache + kv_head * C * D, L->v_cache + kv_head * C * D, C,
           [mask](int64_t j) { return isinf(mask[j]); }, m->sinks, head, scores, out);
}

// x += (post_norm ? norm(a) : a), on this thread's private copy of the residual stream
static void residual(float* x, const float* a, const float* post_norm, float eps, int64_t d,
                     float* tmp) {
    if (post_norm) { rms_norm(a, post_norm, eps, d, tmp); a = tmp; }
#pragma omp simd
    for (int64_t i = 0; i < d; i++) x[i] += a[i];
}

// A gguf matrix of n columns: a block the kernel has (CBLOCK or 2 * CBLOCK) that divides n
static bool block_fits(const QMat& W, int64_t n) {
    return (W.block == CBLOCK || W.block == 2 * CBLOCK) && n % W.block == 0 && W.scales;
}

// The model's sizes and weights fit the kernel: head_dim, the format's widths, gguf blocks
static bool model_fits(const FusedModel* m) {
    const int64_t d = m->d_model, q_dim = m->n_heads * m->head_dim, ff = m->d_ff;
    if (m->head_dim > 1024 || m->wtype < 0 || m->wtype > 3) return false;
    if (m->wtype == 2 && (d % QBLOCK || q_dim % QBLOCK || ff % QBLOCK)) return false;
    if (m->wtype == 3) {
        if (!block_fits(m->lm_head, d)) return false;
        for (int64_t l = 0; l < m->n_layers; l++) {
            const FusedLayer* L = &m->layers[l];
            if (!block_fits(L->wqkv, d) || !block_fits(L->wo, q_dim) || !block_fits(L->w_gate_up, d)
                || !block_fits(L->w_down, ff)) return false;
        }
    }
    return !(m->wtype == 1 && (d % 2 || q_dim % 2 || ff % 2));
}

// Feed `token` (its position is in the RoPE tables and the masks); writes the logits (vocab,).
// Returns 0, or -1 when a buffer size is out of range (checked by the Python side too).
extern "C" int fused_decode_step(const FusedModel* m, int64_t token, float* logits) {
    const int64_t d = m->d_model, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads;
    const int64_t q_dim = H * D, kv_dim = Hkv * D, ff = m->d_ff;
    if (token < 0 || token >= m->vocab || !model_fits(m)) return -1;
    const int64_t wt = m->wtype;
    const bool portable = m->portable != 0;
    int64_t max_c = 0;
    for (int64_t l = 0; l < m->n_layers; l++)
        if (m->layers[l].capacity > max_c) max_c = m->layers[l].capacity;
    // shared between the threads: outputs of the row-split products
    std::vector<float> qkv(q_dim + 2 * kv_dim), att(q_dim), o(d), h(ff), up(ff), down(d);
    const int64_t group = H / Hkv;                     // query heads per KV head (GQA)

#pragma omp parallel num_threads((int)m->n_threads)
    {
        // private: the residual stream, its normalized copy, scratch
        std::vector<float> x(d), xn(d), tmp(d), scores(max_c > 0 ? max_c : 1);
        QVec xv;   // this thread's copy of a product's input in the weights' format
        const float* e = m->embed + token * d;
        for (int64_t i = 0; i < d; i++) x[i] = m->embed_scale > 0.f ? e[i] * m->embed_scale : e[i];
        const int64_t n_qkv = q_dim + 2 * kv_dim;
        for (int64_t l = 0; l < m->n_layers; l++) {
            const FusedLayer* L = &m->layers[l];
            rms_norm(x.data(), L->attn_norm, m->norm_eps, d, xn.data());
            prepare(wt, xn.data(), d, xv, L->wqkv.block);
            // each `omp for` ends with a barrier: the next phase needs all of its result
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(n_qkv); c++)
                qmatvec_rows(wt, portable, L->wqkv, L->bqkv, xv, d, c * CHUNK, chunk_end(c, n_qkv), qkv.data());
            // keys and values of this token into the cache, split by KV head
#pragma omp for schedule(dynamic, 1)
            for (int64_t g = 0; g < Hkv; g++) {
                float* k = qkv.data() + q_dim + g * D;
                const float* v = qkv.data() + q_dim + kv_dim + g * D;
                if (L->k_norm) { rms_norm(k, L->k_norm, m->norm_eps, D, tmp.data()); memcpy(k, tmp.data(), sizeof(float) * D); }
                rope(k, L->rope, D);
                memcpy(L->k_cache + (g * L->capacity + L->slot) * D, k, sizeof(float) * D);
                memcpy(L->v_cache + (g * L->capacity + L->slot) * D, v, sizeof(float) * D);
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t head = 0; head < H; head++) {
                float* q = qkv.data() + head * D;
                if (L->q_norm) { rms_norm(q, L->q_norm, m->norm_eps, D, tmp.data()); memcpy(q, tmp.data(), sizeof(float) * D); }
                rope(q, L->rope, D);
                attend_head(m, L, q, head / group, head, scores.data(), att.data() + head * D);
            }
            prepare(wt, att.data(), q_dim, xv, L->wo.block);
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(d); c++)
                qmatvec_rows(wt, portable, L->wo, L->bo, xv, q_dim, c * CHUNK, chunk_end(c, d), o.data());
            residual(x.data(), o.data(), L->attn_post_norm, m->norm_eps, d, tmp.data());
            rms_norm(x.data(), L->mlp_norm, m->norm_eps, d, xn.data());
            prepare(wt, xn.data(), d, xv, L->w_gate_up.block);
            // gate row i and up row ff + i together, so act(gate) * up needs no barrier
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(ff); c++) {
                const int64_t lo = c * CHUNK, hi = chunk_end(c, ff);
                qmatvec_rows(wt, portable, L->w_gate_up, nullptr, xv, d, lo, hi, h.data());          // gate
                qmatvec_rows(wt, portable, L->w_gate_up, nullptr, xv, d, ff + lo, ff + hi, up.data() - ff); // up
                for (int64_t i = lo; i < hi; i++) h[i] = activate(h[i], m->activation) * up[i];
            }
            prepare(wt, h.data(), ff, xv, L->w_down.block);
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(d); c++)
                qmatvec_rows(wt, portable, L->w_down, nullptr, xv, ff, c * CHUNK, chunk_end(c, d), down.data());
            residual(x.data(), down.data(), L->mlp_post_norm, m->norm_eps, d, tmp.data());
        }
        rms_norm(x.data(), m->final_norm, m->norm_eps, d, xn.data());
        prepare(wt, xn.data(), d, xv, m->lm_head.block);
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < chunks(m->vocab, HEAD_CHUNK); c++) {
            const int64_t lo = c * HEAD_CHUNK, hi = chunk_end(c, m->vocab, HEAD_CHUNK);
            qmatvec_rows(wt, portable, m->lm_head, nullptr, xv, d, lo, hi, logits);
            if (m->final_softcap > 0.f)
                for (int64_t i = lo; i < hi; i++) logits[i] = m->final_softcap * tanhf(logits[i] / m->final_softcap);
        }
    }
    return 0;
}

// y (B, rows) = x (B, n) W^T (+ b) for the batched steps (models/decoders/quantized.py): each
// chunk of rows against all B inputs while it is in cache, MB_MAX inputs per pass over it.
// Returns 0, or -1 on an unknown format or a width the format cannot take (bf16: even, int8: a
// multiple of QBLOCK, gguf: of its block).
extern "C" int quant_linear(int64_t wtype, int64_t portable, const void* w, const float* scales,
                 const float* offsets, int64_t block, const float* b, const float* x, int64_t B,
                 int64_t n, int64_t rows, float* y, int64_t n_threads) {
    if (wtype < 1 || wtype > 3 || B < 0 || n <= 0 || rows < 0) return -1;
    const QMat W = {w, scales, offsets, block};
    if ((wtype == 2 && n % QBLOCK) || (wtype == 1 && n % 2) || (wtype == 3 && !block_fits(W, n))) return -1;
    // the prepared inputs' buffers are kept per calling thread (the decode loop's) from call to
    // call: ~120 products a step, each of up to a class's rows, would otherwise allocate them anew
    static thread_local std::vector<QVec> kept;
    if ((int64_t)kept.size() < B) kept.resize(B);
    QVec* xs = kept.data();   // the caller's: inside the parallel region `kept` would name each thread's own
    std::vector<const QVec*> xp(B);
    std::vector<float*> yp(B);
    for (int64_t i = 0; i < B; i++) { xp[i] = &xs[i]; yp[i] = y + i * rows; }
#pragma omp parallel num_threads((int)n_threads)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < B; i++) prepare(wtype, x + i * n, n, xs[i], block);
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < chunks(rows); c++)
            qproduct(wtype, portable != 0, W, b, xp.data(), B, n, c * CHUNK, chunk_end(c, rows), yp.data());
    }
    return 0;
}


// ---------------------------------------------------------------------------------------------
// Several runs at once (engine/fused_batch.py): one decode token for each of B runs in
// one call, every weight read once for all of them (qproduct takes MB_MAX inputs per pass over
// a tile; fp32 rows are taken a few at a time for every input while they are in cache). Each
// run has its own token, position, cache buffers, slots, RoPE rows, mask and sink logits; the
// weights and everything else of FusedModel are shared (its `sinks` and its layers' cache,
// slot, rope and mask fields are not read here).

// One run's layer: where its keys and values live and which slots its query sees.
struct FusedRunLayer {
    float* k_cache; float* v_cache;          // (n_kv_heads, capacity, head_dim), heads head_stride apart
    const int64_t* slot_pos;                 // (capacity,) each slot's absolute position, -1 empty
    int64_t head_stride;                     // floats from one KV head to the next (>= capacity * head_dim)
    int64_t capacity;
    // (capacity,) 0 where the run's query sees the slot, -inf where not: the layer's MaskSpec
    // evaluated in Python over slot_pos (engine/fused_batch.py), so the mask predicates live
    // in models/attention.py only
    const float* mask;
    int64_t rope_kind;                       // which of the RoPE tables (0 full, 1 sliding)
};

// Rows [r0, r1) of y_m = W x_m (+ b) for nx inputs in any format. fp32: eight rows at a time
// for every input (those rows stay in L1 between the inputs), each run's rows summed exactly
// as matvec_rows sums them alone (its groups of four start at r0 either way).
static void product(int64_t wtype, bool portable, const QMat& W, const float* b, const QVec* const* x,
                    int64_t nx, int64_t n, int64_t r0, int64_t r1, float* const* ys) {
    if (wtype != 0) { qproduct(wtype, portable, W, b, x, nx, n, r0, r1, ys); return; }
    for (int64_t s = r0; s < r1; s += 8) {
        const int64_t e = s + 8 < r1 ? s + 8 : r1;
        for (int64_t i = 0; i < nx; i++) matvec_rows((const float*)W.w, b, x[i]->f, n, s, e, ys[i]);
    }
}

// tokens, positions (B,); slots (B, n_layers): each run's slot per layer, already recorded in
// its slot_pos (KVCache.append); runs[b]: run b's n_layers layers; sinks[b]: its sink
// logits (n_heads) or null; rope (n_kinds, B, 2, head_dim): run b's cos and signed sin at its
// position; writes logits (B, vocab) and visible[b], the slots run b's query saw summed over
// the layers. Returns 0, or -1 when an argument is out of range (checked by Python too).
extern "C" int fused_decode_batch(const FusedModel* m, int64_t B, const int64_t* tokens,
                                  const int64_t* positions, const int64_t* slots,
                                  const FusedRunLayer* const* runs, const float* const* sinks,
                                  const float* rope, float* logits, int64_t* visible) {
    const int64_t d = m->d_model, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads;
    const int64_t q_dim = H * D, kv_dim = Hkv * D, ff = m->d_ff, NL = m->n_layers;
    if (B < 1 || !model_fits(m)) return -1;
    int64_t max_c = 1;
    for (int64_t b = 0; b < B; b++) {
        if (tokens[b] < 0 || tokens[b] >= m->vocab) return -1;
        for (int64_t l = 0; l < NL; l++) {
            const FusedRunLayer* R = &runs[b][l];
            const int64_t slot = slots[b * NL + l];
            if (slot < 0 || slot >= R->capacity || R->head_stride < R->capacity * D
                || R->rope_kind < 0 || R->rope_kind > 1) return -1;
            if (R->capacity > max_c) max_c = R->capacity;
        }
        visible[b] = 0;
    }
    const int64_t wt = m->wtype, n_qkv = q_dim + 2 * kv_dim, group = H / Hkv;
    const bool portable = m->portable != 0;
    // shared between the threads: every run's residual stream and the products' outputs
    std::vector<float> x(B * d), xn(B * d), qkv(B * n_qkv), att(B * q_dim), o(B * d), h(B * ff),
        up(B * ff), down(B * d);
    std::vector<QVec> xv(B);
    std::vector<const QVec*> xp(B);
    std::vector<float*> y_qkv(B), y_o(B), y_h(B), y_up(B), y_down(B), y_logits(B);
    for (int64_t b = 0; b < B; b++) {
        xp[b] = &xv[b];
        y_qkv[b] = qkv.data() + b * n_qkv; y_o[b] = o.data() + b * d; y_h[b] = h.data() + b * ff;
        y_up[b] = up.data() + b * ff - ff;   // the up rows are ff .. 2 ff of the gate/up matrix
        y_down[b] = down.data() + b * d; y_logits[b] = logits + b * m->vocab;
    }

#pragma omp parallel num_threads((int)m->n_threads)
    {
        std::vector<float> tmp(d > D ? d : D), scores(max_c);
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            const float* e = m->embed + tokens[b] * d;
            for (int64_t i = 0; i < d; i++) x[b * d + i] = m->embed_scale > 0.f ? e[i] * m->embed_scale : e[i];
        }
        for (int64_t l = 0; l < NL; l++) {
            const FusedLayer* L = &m->layers[l];
            // each `omp for` ends with a barrier: the next phase needs all of its result
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++) {
                rms_norm(&x[b * d], L->attn_norm, m->norm_eps, d, &xn[b * d]);
                prepare(wt, &xn[b * d], d, xv[b], L->wqkv.block);
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(n_qkv); c++)
                product(wt, portable, L->wqkv, L->bqkv, xp.data(), B, d, c * CHUNK, chunk_end(c, n_qkv), y_qkv.data());
            // per run and KV head: its key and value into the run's cache, then the query heads
            // that read that KV head (they read only what this iteration wrote)
#pragma omp for schedule(dynamic, 1)
            for (int64_t bg = 0; bg < B * Hkv; bg++) {
                const int64_t b = bg / Hkv, g = bg % Hkv, pos = positions[b];
                const FusedRunLayer* R = &runs[b][l];
                const float* table = rope + (R->rope_kind * B + b) * 2 * D;
                float* base = y_qkv[b];
                float* k = base + q_dim + g * D;
                const float* v = base + q_dim + kv_dim + g * D;
                if (L->k_norm) { rms_norm(k, L->k_norm, m->norm_eps, D, tmp.data()); memcpy(k, tmp.data(), sizeof(float) * D); }
                ::rope(k, table, D);
                float* K = R->k_cache + g * R->head_stride;
                float* V = R->v_cache + g * R->head_stride;
                const int64_t slot = slots[b * NL + l];
                memcpy(K + slot * D, k, sizeof(float) * D);
                memcpy(V + slot * D, v, sizeof(float) * D);
                const float* mask = R->mask;
                auto hidden = [mask](int64_t j) { return isinf(mask[j]); };
                if (g == 0) {   // the slots this run's query sees in this layer, once per layer
                    int64_t n = 0;
                    for (int64_t j = 0; j < R->capacity; j++) n += !hidden(j);
                    visible[b] += n;
                }
                for (int64_t head = g * group; head < (g + 1) * group; head++) {
                    float* q = base + head * D;
                    if (L->q_norm) { rms_norm(q, L->q_norm, m->norm_eps, D, tmp.data()); memcpy(q, tmp.data(), sizeof(float) * D); }
                    ::rope(q, table, D);
                    attend(m, q, K, V, R->capacity, hidden, sinks[b], head, scores.data(), &att[b * q_dim + head * D]);
                }
            }
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++) prepare(wt, &att[b * q_dim], q_dim, xv[b], L->wo.block);
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(d); c++)
                product(wt, portable, L->wo, L->bo, xp.data(), B, q_dim, c * CHUNK, chunk_end(c, d), y_o.data());
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++) {
                residual(&x[b * d], &o[b * d], L->attn_post_norm, m->norm_eps, d, tmp.data());
                rms_norm(&x[b * d], L->mlp_norm, m->norm_eps, d, &xn[b * d]);
                prepare(wt, &xn[b * d], d, xv[b], L->w_gate_up.block);
            }
            // gate row i and up row ff + i together, so act(gate) * up needs no barrier
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(ff); c++) {
                const int64_t lo = c * CHUNK, hi = chunk_end(c, ff);
                product(wt, portable, L->w_gate_up, nullptr, xp.data(), B, d, lo, hi, y_h.data());            // gate
                product(wt, portable, L->w_gate_up, nullptr, xp.data(), B, d, ff + lo, ff + hi, y_up.data()); // up
                for (int64_t b = 0; b < B; b++)
                    for (int64_t i = lo; i < hi; i++) h[b * ff + i] = activate(h[b * ff + i], m->activation) * up[b * ff + i];
            }
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++) prepare(wt, &h[b * ff], ff, xv[b], L->w_down.block);
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks(d); c++)
                product(wt, portable, L->w_down, nullptr, xp.data(), B, ff, c * CHUNK, chunk_end(c, d), y_down.data());
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++)
                residual(&x[b * d], &down[b * d], L->mlp_post_norm, m->norm_eps, d, tmp.data());
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            rms_norm(&x[b * d], m->final_norm, m->norm_eps, d, &xn[b * d]);
            prepare(wt, &xn[b * d], d, xv[b], m->lm_head.block);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < chunks(m->vocab, HEAD_CHUNK); c++) {
            const int64_t lo = c * HEAD_CHUNK, hi = chunk_end(c, m->vocab, HEAD_CHUNK);
            product(wt, portable, m->lm_head, nullptr, xp.data(), B, d, lo, hi, y_logits.data());
            if (m->final_softcap > 0.f)
                for (int64_t b = 0; b < B; b++)
                    for (int64_t i = lo; i < hi; i++)
                        y_logits[b][i] = m->final_softcap * tanhf(y_logits[b][i] / m->final_softcap);
        }
    }
    return 0;
}
