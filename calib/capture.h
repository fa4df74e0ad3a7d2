/* Calibration capture: the reference forward pass (runtime/ref/model_ref.h) run over chunks of
 * text with OpenBLAS kernels plugged in, handing out every layer's post-RoPE Q, K and V.
 *
 * One forward pass serves the tests and the calibrator; this file adds only its fast kernels:
 *  - Matrix products are cblas_sgemm over the weights dequantized to float once at create
 *    (y[n][out] = x[n][in] · Wᵀ), so a chunk of n tokens reads each weight once and OpenBLAS may
 *    use several threads (openblas_set_num_threads, or OPENBLAS_NUM_THREADS).
 *  - Attention of a chunk is causal over the sequence so far, one query head at a time through
 *    ovk_attention_causal (calib/attention.c: sgemm scores, float64 softmax sums).
 * So the summation order differs from the reference's plain loops, and results match them to
 * float32 rounding only, not bit for bit (tests/test_calib_capture.c states the tolerance).
 *
 *  - The hook receives a whole chunk of one layer at once: q [n][n_head][head_dim],
 *    k and v [n][n_head_kv][head_dim], post-RoPE, exactly the layout ovk_calib_add() takes,
 *    and may fail (its status stops the evaluation).
 *  - The token embedding is dequantized row by row as tokens are looked up; the LM head is
 *    dequantized only when want_logits is set (SmolLM2: 113 MB saved).
 *  - head_dim_v must equal head_dim (the calibrator needs it anyway).
 */
#ifndef OSCAR_CAPTURE_H
#define OSCAR_CAPTURE_H

#include <stdint.h>

#include "model_desc.h"
#include "model_ref.h"
#include "oscar/oscar.h"

/* Receives the post-RoPE rows of n consecutive tokens (positions pos0..pos0+n-1) of one layer:
 * q [n][n_head][head_dim], k and v [n][n_head_kv][head_dim], float32, valid during the call.
 * Called for layer 0, 1, ... of each chunk in order. A status other than OSCAR_OK stops the
 * evaluation, which returns it. The reference forward pass's hook, handed to it unchanged. */
typedef ovk_ref_qkv_hook ovk_capture_hook;

typedef struct ovk_capture_params {
    uint32_t max_seq_len;    /* positions the per-layer KV buffer holds; default 2048 */
    uint32_t chunk;          /* tokens per matmul batch inside eval; default 256 */
    int want_logits;         /* 1: dequantize the LM head so eval can return logits; default 0 */
    ovk_capture_hook hook; /* NULL: none */
    void *hook_user;
} ovk_capture_params;

ovk_capture_params ovk_capture_params_default(void);

typedef struct ovk_capture ovk_capture;

/* Dequantizes the block weights of `desc` (borrowed: it must outlive the object) and allocates
 * the KV buffer and scratch. INVALID_ARGUMENT for bad params, UNSUPPORTED for head_dim_v !=
 * head_dim, OUT_OF_HOST_MEMORY. *out is NULL on failure. */
oscar_status ovk_capture_create(const ovk_model_desc *desc, const ovk_capture_params *params,
                                  ovk_capture **out);
/* Frees everything; NULL is a no-op. */
void ovk_capture_destroy(ovk_capture *c);

/* Runs tokens[0..n) at positions pos0.. of the current sequence (pos0 <= the positions
 * already evaluated; pos0 = 0 starts a new sequence), calling the hook per layer per chunk.
 * logits: NULL, or [n][n_vocab] (needs want_logits). INVALID_ARGUMENT for a token out of
 * range, n = 0, pos0 past the sequence or logits without want_logits; CONTEXT_FULL when
 * pos0 + n > max_seq_len; the hook's status when it fails. */
oscar_status ovk_capture_eval(ovk_capture *c, const int32_t *tokens, uint32_t n, uint32_t pos0, float *logits);

#endif
