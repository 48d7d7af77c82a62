// FlashAttention's forward for one head, compiled: the schedule of models.attention's
// tiled_attention (query blocks outer, key blocks inner, online softmax) with the visibility of
// each (query, key) pair evaluated from positions by the same predicate as MaskSpec:
// filled (k >= 0) and causal (k <= q) and (window: q - k < w, or sink: k < s).
//
// Everything of size n x n is absent: a query block's working set is its score tile
// (bq x bk), running max and normalizer (bq each) and partial output (bq x d), in a scratch
// buffer per thread that the caller allocates (so that its memory is the caller's to measure).
// On a CPU the caches play SRAM's role: a 64 x 64 tile of scores plus the Q, K and V blocks
// (64 x 64 fp32 each) is 64 KiB.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <omp.h>

namespace {

inline bool visible(int64_t q, int64_t k, int causal, int64_t window, int64_t sinks) {
    if (k < 0) return false;                        // an empty cache slot
    if (causal && k > q) return false;
    if (window < 0) return true;                    // no window
    return (q - k) < window || k < sinks;
}

}  // namespace

extern "C" {

// Scratch floats one thread needs for block sizes (bq, bk) and head dim d.
int64_t flash_tiled_scratch_floats(int64_t block_q, int64_t block_k, int64_t d) {
    return block_q * block_k + 2 * block_q + block_q * d;
}

// q (n_q, d), k and v (n_k, d), out (n_q, d), all fp32 row-major; positions int64.
// scratch: n_threads * flash_tiled_scratch_floats(...) floats. window < 0: none.
// Returns the number of tiles computed (tiles the mask empties entirely are skipped).
int64_t flash_tiled_forward(const float* q, const float* k, const float* v, float* out,
                            int64_t n_q, int64_t n_k, int64_t d,
                            const int64_t* q_pos, const int64_t* k_pos,
                            int causal, int64_t window, int64_t sinks, float scale,
                            int64_t block_q, int64_t block_k, float* scratch, int64_t n_threads) {
    const int64_t n_qb = (n_q + block_q - 1) / block_q;
    const int64_t n_kb = (n_k + block_k - 1) / block_k;
    const int64_t per_thread = flash_tiled_scratch_floats(block_q, block_k, d);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    int64_t computed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) reduction(+ : computed)
    for (int64_t qb = 0; qb < n_qb; ++qb) {
        float* s = scratch + omp_get_thread_num() * per_thread;   // (bq, bk) scores, then p
        float* m = s + block_q * block_k;                           // (bq,) running max
        float* l = m + block_q;                                     // (bq,) running normalizer
        float* acc = l + block_q;                                   // (bq, d) partial output
        const int64_t q0 = qb * block_q, q1 = std::min(q0 + block_q, n_q), rows = q1 - q0;
        std::fill(m, m + rows, neg_inf);
        std::fill(l, l + rows, 0.0f);
        std::fill(acc, acc + rows * d, 0.0f);
        for (int64_t kb = 0; kb < n_kb; ++kb) {
            const int64_t k0 = kb * block_k, k1 = std::min(k0 + block_k, n_k), cols = k1 - k0;
            bool any = false;
            for (int64_t i = 0; i < rows && !any; ++i)
                for (int64_t j = 0; j < cols && !any; ++j)
                    any = visible(q_pos[q0 + i], k_pos[k0 + j], causal, window, sinks);
            if (!any) continue;                                     // skipped: nothing read
            ++computed;
            for (int64_t i = 0; i < rows; ++i) {
                const float* qi = q + (q0 + i) * d;
                float* si = s + i * block_k;
                float row_max = m[i];
                for (int64_t j = 0; j < cols; ++j) {
                    if (!visible(q_pos[q0 + i], k_pos[k0 + j], causal, window, sinks)) {
                        si[j] = neg_inf;
                        continue;
                    }
                    const float* kj = k + (k0 + j) * d;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int64_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
                    si[j] = dot * scale;
                    row_max = std::max(row_max, si[j]);
                }
                if (row_max == neg_inf) continue;                   // nothing visible yet
                const float rescale = std::exp(m[i] - row_max);     // exp(-inf) = 0 at first
                float* ai = acc + i * d;
                for (int64_t c = 0; c < d; ++c) ai[c] *= rescale;
                float sum = 0.0f;
                for (int64_t j = 0; j < cols; ++j) {
                    const float p = si[j] == neg_inf ? 0.0f : std::exp(si[j] - row_max);
                    sum += p;
                    if (p == 0.0f) continue;
                    const float* vj = v + (k0 + j) * d;
#pragma omp simd
                    for (int64_t c = 0; c < d; ++c) ai[c] += p * vj[c];
                }
                l[i] = l[i] * rescale + sum;
                m[i] = row_max;
            }
        }
        for (int64_t i = 0; i < rows; ++i) {
            const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
            for (int64_t c = 0; c < d; ++c) out[(q0 + i) * d + c] = acc[i * d + c] * inv;
        }
    }
    return computed;
}

}  // extern "C"
