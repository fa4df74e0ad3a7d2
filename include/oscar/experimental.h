/* OSCAR-VK experimental interface: research settings and benchmark tools. Unlike the rest of
 * the API, these may change between versions; define OSCAR_EXPERIMENTAL before including this
 * header to say that you accept that. */
#ifndef OSCAR_EXPERIMENTAL_H
#define OSCAR_EXPERIMENTAL_H

#ifndef OSCAR_EXPERIMENTAL
#error "oscar/experimental.h may change between versions: define OSCAR_EXPERIMENTAL to use it"
#endif

#include "oscar/oscar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- KV cache: research settings of mode oscar (oscar_kv_params.experimental) -------------- */
typedef struct oscar_kv_experimental {
    /* OSCAR_KV_INT2_ROTATED only (NULL: none): key centers that follow the position, float32
     * [n_layer][n_blocks][n_kv_head][head_dim] in the unrotated basis, n_blocks =
     * ceil(max_context / key_center_block); block b serves positions [b·B, (b+1)·B), B =
     * key_center_block (at least 16). A key at position p is stored as (k − μ_K − c_b)·R_K with
     * b = p / B, and attention adds q·c_b back to that key's logit, so attention is unchanged
     * except for the quantization error. RoPE turns a key mean with the position, so a center
     * per block of positions follows it where one constant cannot (docs/kv-cache.md,
     * "Centering"). The cache keeps c_b·R_K rounded to fp16 (the append subtracts and attention
     * adds back the same values). Copied at creation; must be finite. */
    const float *key_centers;
    uint32_t key_center_block;  /* at least OSCAR_KEY_CENTER_BLOCK_MIN */
    /* OSCAR_KV_INT2_ROTATED only (NULL: nearest rounding): error feedback of the key codes,
     * float32 [n_layer][n_rot][head_dim][head_dim] (n_rot as rot_k), strictly upper triangular:
     * a key row (rotated, clipped, its groups' scale and min set as usual) is rounded element by
     * element, and element i's rounding error times F[i][j] is taken out of each later element
     * j before it is rounded, so the errors go where the layer's queries look least (oscar-calib
     * writes F; docs/kv-cache.md). Copied at creation; finite, 0 on and below the diagonal. */
    const float *key_feedback;
    /* OSCAR_KV_INT2_ROTATED only (0: the reference's min–max grid): rounds of least-squares
     * refit of each row's fp16 min and scale after its codes are chosen, codes chosen again on
     * the new grid, the best kept; needs one group per row (group_size == head_dim). At most 8. Values are refitted under the squared
     * error, keys under key_metric (the squared error when NULL). */
    uint32_t refit_rounds;
    /* With refit_rounds: float32 [n_layer][n_rot][head_dim][head_dim], symmetric positive
     * definite, the metric of a key row's error in the rotated basis (oscar-calib writes the
     * queries' covariance Rᵀ C_Q R, scaled to mean diagonal 1). Copied at creation; finite and
     * exactly symmetric. */
    const float *key_metric;
} oscar_kv_experimental;

/* The shortest block of positions key_centers may use (attention keeps a chunk's blocks in
 * shared memory, sized for blocks at least this long). */
#define OSCAR_KEY_CENTER_BLOCK_MIN 16u

/* ---- sessions: overrides of the rotation file (oscar_session_params.experimental) ---------- */
typedef struct oscar_session_experimental {
    /* Mode oscar with a key mean: the key center follows the position in blocks of this many
     * positions (oscar_kv_experimental.key_centers: block b's center is RoPE(mean_k) averaged over
     * positions [b·B, (b+1)·B)). 0 (default): the rotation set's (a RotationZoo file's
     * oscar.key_center_block, which oscar-calib writes: 128 by default); a set without one
     * gets one center for the whole context (sink .. n_ctx-1), as OSCAR_KEY_CENTER_CONTEXT
     * asks explicitly. Else at least OSCAR_KEY_CENTER_BLOCK_MIN. */
    uint32_t key_center_block;
} oscar_session_experimental;

#define OSCAR_KEY_CENTER_CONTEXT 0xFFFFFFFFu /* key_center_block: one key center for the whole context */

/* ---- benchmark tools ------------------------------------------------------------------------ */
/* Measures device read bandwidth with a streaming kernel over a buffer of `bytes` bytes,
 * repeated `iterations` times after one warm-up; writes the best rate in GB/s (1e9 bytes/s).
 * This is the roofline every benchmark quotes. */
OSCAR_API oscar_status oscar_measure_read_bandwidth(oscar_context *ctx, uint64_t bytes,
                                                    uint32_t iterations, double *gbps);

/* Fills `n` tokens of sequence `seq` with random keys and values in every layer without running
 * the model: a long context in seconds, for timing decode at a context length (the values do
 * not change the speed). The sequence is then n tokens long. */
OSCAR_API oscar_status oscar_session_fill_synthetic(oscar_session *session, int32_t seq, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
