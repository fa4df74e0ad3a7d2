/* Reference forward pass of the llama family in plain C, float32 throughout: the ground truth
 * the GPU forward pass is tested against. Readable before fast, in the manner of llama2.c.
 *
 * Per token t at position p, per block (x is the residual stream, [n_embd]):
 *   h = rmsnorm(x) * attn_norm
 *   q = Wq h (+ bq), k = Wk h (+ bk), v = Wv h (+ bv)          per head: [head_dim]
 *   qwen3: q_h = rmsnorm(q_h) * q_norm, k_h = rmsnorm(k_h) * k_norm   (per head)
 *   q, k = rope(q, p), rope(k, p)           (normal or neox pairing, model_desc rope_theta)
 *   --> qkv_hook(layer, p0, n, q, k, v)     (post-RoPE, before any transform; the whole batch)
 *   --> kv_transform(layer, p, k, v)         (may modify k and v in place, e.g. fake INT2)
 *   store k, v at position p of this layer's cache
 *   o_h = sum_{j <= p} softmax_j(q_h . k_{g(h),j} / sqrt(head_dim)) v_{g(h),j}
 *        with g(h) = h / (n_head / n_head_kv)   (GQA: consecutive query heads share a KV head)
 *   x += Wo o
 *   h = rmsnorm(x) * ffn_norm
 *   x += Wdown (silu(Wgate h) * (Wup h))
 * logits = Wout (rmsnorm(x) * output_norm)
 * rmsnorm(x) = x / sqrt(mean(x^2) + eps).  RoPE on a pair (a, b) with angle p * theta_i:
 *   (a cos - b sin, a sin + b cos).
 *
 * A batch of tokens is run block by block (all tokens through block 0, then block 1, ...):
 * every dot product is summed in the same order whatever the batch size, so evaluating a
 * prompt at once or token by token gives bit-identical logits. Hooks are called in that order:
 * for each layer, qkv_hook once for the batch, then kv_transform for each token of it.
 *
 * The matrix products and the attention are plain loops unless the caller plugs in kernels of
 * its own (matmul, attention below): the calibrator runs this same forward pass with OpenBLAS
 * (calib/capture.c). Such kernels choose their own summation order, so the bit-identity above
 * then holds only as far as theirs is independent of the batch.
 */
#ifndef OSCAR_MODEL_REF_H
#define OSCAR_MODEL_REF_H

#include <stdint.h>

#include "model_desc.h"
#include "oscar/oscar.h"

/* Receives the post-RoPE queries, keys and values of the n tokens of a batch (positions
 * pos0..pos0+n-1) in one layer, read-only and valid during the call: q [n][n_head][head_dim],
 * k [n][n_head_kv][head_dim], v [n][n_head_kv][head_dim_v], float32. A status other than
 * OSCAR_OK stops the evaluation, which returns it. */
typedef oscar_status (*ovk_ref_qkv_hook)(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q,
                                           const float *k, const float *v);

/* Transforms a token's key and value in place just before they are written to the cache
 * (k [n_head_kv][head_dim], v [n_head_kv][head_dim_v]); the query is not touched. A fake-quant
 * reference quantizes and dequantizes here (rotate, quantize, dequantize, rotate back). */
typedef void (*ovk_ref_kv_transform)(void *user, uint32_t layer, uint32_t pos, float *k, float *v);

/* A matrix product over a batch: y[t][o] = sum_i w[o][i] * x[t][i] for t < n, with
 * w [n_out][n_in], x [n][n_in], y [n][n_out], float32. */
typedef void (*ovk_ref_matmul)(void *user, const float *w, uint32_t n_out, uint32_t n_in, const float *x, uint32_t n,
                               float *y);

/* Causal attention of a batch in one layer: for token t (position pos0 + t) and query head h,
 *   out[t][h] = sum_{j <= pos0+t} softmax_j(q[t][h] . k[j][g(h)] / sqrt(head_dim)) v[j][g(h)]
 * with g(h) = h / (n_head / n_head_kv). q [n][n_head][head_dim]; k [n_ctx][n_head_kv][head_dim]
 * and v [n_ctx][n_head_kv][head_dim_v] are the layer's cache, positions 0..pos0+n-1 written;
 * out [n][n_head][head_dim_v]. A status other than OSCAR_OK stops the evaluation. */
typedef oscar_status (*ovk_ref_attention)(void *user, const ovk_model_hparams *hp, uint32_t n, uint32_t pos0,
                                          const float *q, const float *k, const float *v, float *out);

typedef struct ovk_model_ref_params {
    uint32_t n_ctx;          /* positions the KV cache holds; 0: min(n_ctx_train, 4096) (or 4096) */
    uint32_t max_batch;      /* tokens run together inside eval (scratch size), at most 8192; 0: 32 */
    int predequantize;       /* 1 (default): dequantize every weight to float once at create
                              * (4 bytes per parameter); 0: dequantize rows on the fly */
    int vocab_on_the_fly;    /* 1: token_embd and the LM head stay quantized even with predequantize,
                              * rows dequantized when used (n_vocab x n_embd x 4 bytes saved each,
                              * 113 MB on SmolLM2; for callers that never or seldom want logits) */
    ovk_ref_qkv_hook qkv_hook;        /* NULL: none */
    void *qkv_hook_user;
    ovk_ref_kv_transform kv_transform; /* NULL: none */
    void *kv_transform_user;
    ovk_ref_matmul matmul;   /* NULL: plain loops. Used for every weight held as floats; rows
                              * dequantized on the fly always go through the plain loops */
    void *matmul_user;
    ovk_ref_attention attention; /* NULL: plain loops */
    void *attention_user;
} ovk_model_ref_params;

ovk_model_ref_params ovk_model_ref_params_default(void);

typedef struct ovk_model_ref ovk_model_ref;

/* Creates the reference model over `desc` (borrowed: it must outlive the model). On failure
 * *out is NULL (INVALID_ARGUMENT, OUT_OF_HOST_MEMORY). */
oscar_status ovk_model_ref_create(const ovk_model_desc *desc, const ovk_model_ref_params *params,
                                    ovk_model_ref **out);
/* Frees the model. NULL is a no-op. */
void ovk_model_ref_destroy(ovk_model_ref *r);

/* Forgets every cached position (n_past = 0). */
void ovk_model_ref_reset(ovk_model_ref *r);
/* Positions currently cached. */
uint32_t ovk_model_ref_n_past(const ovk_model_ref *r);
uint32_t ovk_model_ref_n_ctx(const ovk_model_ref *r);

/* Runs tokens[0..n) at positions pos0..pos0+n-1 and writes logits: with all_logits = 0 the
 * last token's [n_vocab], otherwise [n][n_vocab]. pos0 may rewind (pos0 <= n_past): positions
 * from pos0 on are overwritten and n_past becomes pos0 + n. `logits` may be NULL.
 * INVALID_ARGUMENT for a token id out of range, n = 0, or pos0 > n_past; CONTEXT_FULL when
 * pos0 + n > n_ctx; a hook's or kernel's status when it fails (n_past is then the first
 * position of the batch that failed). */
oscar_status ovk_model_ref_eval(ovk_model_ref *r, const int32_t *tokens, uint32_t n, uint32_t pos0,
                                  float *logits, int all_logits);

/* Resets, evaluates the prompt, then appends up to n_gen greedy tokens (argmax, lowest id on
 * ties) to out[0..n_gen), stopping after a token for which is_stop(stop_user, token) returns
 * nonzero (that token is written; is_stop may be NULL). *n_out = tokens written. */
oscar_status ovk_model_ref_generate_greedy(ovk_model_ref *r, const int32_t *prompt, uint32_t n_prompt,
                                             uint32_t n_gen, int (*is_stop)(void *stop_user, int32_t token),
                                             void *stop_user, int32_t *out, uint32_t *n_out);

/* This layer's cache: k [n_ctx][n_head_kv][head_dim] and v [n_ctx][n_head_kv][head_dim_v]
 * floats, positions < n_past valid. Writable, so a windowed fake-quant reference can requantize
 * tokens as they leave a window. NULL pointers for a bad layer. */
void ovk_model_ref_kv_cache(ovk_model_ref *r, uint32_t layer, float **k, float **v);

/* Index of the largest of x[0..n) (lowest index on ties; NaN never wins). */
uint32_t ovk_argmax(const float *x, uint32_t n);

/* y = x / sqrt(mean(x^2) + eps) * w  over n elements (y may alias x). */
void ovk_rmsnorm(float *y, const float *x, const float *w, uint32_t n, float eps);

#endif
