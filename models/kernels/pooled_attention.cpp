// One decode token of every run of a pooled store, attending to its own row of the store
// (models/decoders/batched.py, _PooledStep): the same sums as torch's SDPA over
// (rows, H_kv, H / H_kv, D) queries and (rows, H_kv, S, D) keys and values with a boolean mask,
// computed in fp32 with an fp32 softmax (the maximum subtracted first).
//
// Why a kernel: these are (H / H_kv) x S products per (row, KV head), tiny matrices, where
// torch's SDPA pays a fixed cost per call and per batch entry; with one thread, or beside other
// work on the 2-core CPU, it took 10-50 ms more than this kernel of a 30-run SmolLM2 step.
// Here a layer is one parallel loop over (row, KV head) pairs, bound by reading their keys and
// values.
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

extern "C" int pooled_decode_attention(const float* q, const float* k, const float* v,
                                       const uint8_t* mask, float* out, int64_t n, int64_t n_kv,
                                       int64_t rep, int64_t d, int64_t s, int64_t width,
                                       float scale, int n_threads) {
    if (n <= 0 || n_kv <= 0 || rep <= 0 || d <= 0 || s <= 0 || width < s) return 1;
#pragma omp parallel num_threads(n_threads)
    {
        std::vector<float> p(static_cast<size_t>(rep * s));   // row j of the scores: p[j * s ..]
#pragma omp for schedule(static)
        for (int64_t task = 0; task < n * n_kv; ++task) {
            const int64_t r = task / n_kv;
            const uint8_t* seen = mask + r * s;
            const float* kh = k + task * width * d;
            const float* vh = v + task * width * d;
            const float* qh = q + task * rep * d;
            float* oh = out + task * rep * d;
            // scores: each visible key read once for the `rep` queries that share its head
            for (int64_t c = 0; c < s; ++c) {
                if (!seen[c]) {
                    for (int64_t j = 0; j < rep; ++j) p[j * s + c] = -INFINITY;
                    continue;
                }
                const float* kc = kh + c * d;
                for (int64_t j = 0; j < rep; ++j) {
                    const float* qj = qh + j * d;
                    float dot = 0.f;
#pragma omp simd reduction(+ : dot)
                    for (int64_t i = 0; i < d; ++i) dot += qj[i] * kc[i];
                    p[j * s + c] = dot * scale;
                }
            }
            for (int64_t i = 0; i < rep * d; ++i) oh[i] = 0.f;
            for (int64_t j = 0; j < rep; ++j) {
                float* pj = p.data() + j * s;
                float top = -INFINITY;
                for (int64_t c = 0; c < s; ++c) top = pj[c] > top ? pj[c] : top;
                if (top == -INFINITY) {   // nothing visible: zeros (no weights at all)
                    for (int64_t c = 0; c < s; ++c) pj[c] = 0.f;
                    continue;
                }
                float total = 0.f;
                for (int64_t c = 0; c < s; ++c) {
                    pj[c] = std::exp(pj[c] - top);   // exp(-inf) = 0: a masked column weighs nothing
                    total += pj[c];
                }
                const float inv = 1.f / total;
                for (int64_t c = 0; c < s; ++c) pj[c] *= inv;
            }
            // the weighted values: each value read once for the `rep` queries
            for (int64_t c = 0; c < s; ++c) {
                if (!seen[c]) continue;
                const float* vc = vh + c * d;
                for (int64_t j = 0; j < rep; ++j) {
                    const float w = p[j * s + c];
                    float* o = oh + j * d;
#pragma omp simd
                    for (int64_t i = 0; i < d; ++i) o[i] += w * vc[i];
                }
            }
        }
    }
    return 0;
}
