/* The llama-family forward pass on Vulkan: weights uploaded once (raw GGUF blocks, one device
 * buffer per tensor, or per row range of a matrix larger than a storage binding), per-session
 * activation buffers allocated once, and a step function that records a whole forward pass
 * over a batch of sequences as ONE command stream, waited on once,
 * with no host work between its commands (submitted in a few parts as it is recorded, so the
 * GPU starts before the host has finished: flush_growth below):
 *
 *   x = token_embd[ids]                                              get_rows
 *   per layer: h = rmsnorm(x) * attn_norm
 *              q, k, v = Wq h, Wk h, Wv h (+ biases, qwen2)         mul_mat (+ add)
 *              qwen3: per-head rmsnorm of q and k                    rms_norm over head_dim rows
 *              q, k = rope(q, pos), rope(k, pos)                     normal (llama) / neox (qwen)
 *              KV append, attention, flush                           kv_cache.h
 *              x += Wo o;  h = rmsnorm(x) * ffn_norm
 *              x += Wdown (silu(Wgate h) * (Wup h))
 *   rows whose logits are wanted: gather, rmsnorm * output_norm, LM head, argmax
 *
 * Token ids, positions and the gathered rows are written to a host-visible buffer and copied at
 * the start of the command buffer; logits and argmax come back after the fence. The KV cache's
 * own per-step tables are uploaded by oscar_kv_step_begin before recording. */
#ifndef OSCAR_MODEL_GPU_H
#define OSCAR_MODEL_GPU_H

#include "kv_cache.h"
#include "model_desc.h"
#include "ops.h"
#include "vk_context.h"

/* A weight on the device: the tensor's bytes, padded to a multiple of 4. A matrix larger than
 * one storage binding may cover (maxStorageBufferRange: 128 MiB on lavapipe, 4 GiB on NVIDIA,
 * e.g. a 152K-token vocabulary's embedding) is stored split by rows into n_parts buffers, part
 * i holding rows [i * part_rows, min((i + 1) * part_rows, rows)); every product or lookup over
 * it then runs one dispatch per part (see mul_mats and the step's get_rows). */
typedef struct ovk_gpu_weight {
    ovk_buffer buf;          /* raw GGUF blocks of `type` (F32 for norms and biases); part 0 when split */
    ovk_buffer *more;        /* [n_parts - 1] parts 1..: [part_rows][row bytes] blocks each, the last
                              * part's rows fewer (NULL when whole) */
    uint32_t type;           /* ovk_ggml_type */
    uint32_t rows;           /* rows of a matrix (ne[1]); 1 for a vector */
    uint32_t part_rows;      /* rows per part; rows when whole */
    uint32_t n_parts;        /* 1: whole in buf */
    ovk_buffer *planes;      /* [n_parts] each part's rows as planes (weight_planes.h) for the
                              * texel-fetch products, where the model keeps them
                              * (ovk_model_gpu.planes); NULL otherwise */
} ovk_gpu_weight;

typedef struct ovk_gpu_layer {
    ovk_gpu_weight attn_norm, ffn_norm;        /* [n_embd] F32 */
    ovk_gpu_weight wq, wk, wv, wo;             /* [q_dim][n_embd], [kv_dim][n_embd] x2, [n_embd][q_dim] */
    ovk_gpu_weight bq, bk, bv;                 /* [q_dim], [kv_dim] F32 (qwen2; else empty) */
    ovk_gpu_weight q_norm, k_norm;             /* [head_dim] F32 (qwen3; else empty) */
    ovk_gpu_weight w_gate, w_up, w_down;       /* [n_ff][n_embd] x2, [n_embd][n_ff] */
} ovk_gpu_layer;

typedef struct ovk_model_gpu {
    oscar_context *ctx;
    const ovk_model_desc *desc;  /* borrowed */
    ovk_gpu_weight token_embd;   /* [n_vocab][n_embd] */
    ovk_gpu_weight output;       /* [n_vocab][n_embd]; unused (empty) when tied */
    ovk_gpu_weight output_norm;  /* [n_embd] F32 */
    ovk_buffer rope_freq;        /* [n_rot/2] fp32 radians per position (desc->rope_theta) */
    ovk_gpu_layer *layers;       /* [n_layer] */
    uint64_t weight_bytes;         /* bytes uploaded */
    uint64_t part_limit;           /* bytes: the most one weight buffer holds; larger matrices are split */
    uint32_t split_matrices;       /* matrices stored in more than one part */
    int planes;                    /* Q4_0/Q4_1/Q8_0/Q4_K/Q6_K matrices also kept as planes: the texel-fetch
                                    * product is preferred here (lavapipe) or OSCAR_MATVEC_PLANES=1 */
} ovk_model_gpu;

/* Uploads every weight of `desc` (borrowed: it must outlive the result). Norm and bias vectors
 * are dequantized to F32 on the host whatever their stored type. progress(user, fraction) is
 * called after each tensor when not NULL. UNSUPPORTED_FORMAT for a matrix type the kernels do
 * not read or a row length that is not a multiple of its block; OUT_OF_DEVICE_MEMORY. */
oscar_status ovk_model_gpu_create(oscar_context *ctx, const ovk_model_desc *desc,
                                    void (*progress)(void *user, float fraction), void *user,
                                    ovk_model_gpu **out);

/* The same, with matrices split into parts of at most part_limit bytes (0: the device's
 * maxStorageBufferRange, which ovk_model_gpu_create uses; a larger value is lowered to it).
 * Part boundaries fall on rows, a multiple of minStorageBufferOffsetAlignment / 4 of them so
 * that each part's output columns start on an aligned offset. A small limit makes a small
 * model run the split path (tests). UNSUPPORTED when a limit cannot hold one such group of
 * rows. */
oscar_status ovk_model_gpu_create_split(oscar_context *ctx, const ovk_model_desc *desc, uint64_t part_limit,
                                          void (*progress)(void *user, float fraction), void *user,
                                          ovk_model_gpu **out);
/* Waits for nothing (the caller has finished every step) and frees the buffers. NULL: no-op. */
void ovk_model_gpu_destroy(ovk_model_gpu *m);

/* Per-session state: the activation buffers of a step of up to max_tokens rows and max_out
 * logits rows, its command stream, and the cache it appends to (borrowed). */
typedef struct ovk_gpu_state {
    ovk_model_gpu *m;
    oscar_kv_cache *kv;
    ovk_ops ops;
    ovk_cmd cmd;
    uint32_t max_tokens, max_out;
    uint32_t q_dim, kv_dim;        /* n_head * head_dim, n_head_kv * head_dim */
    ovk_buffer meta_host;        /* STAGING: ids [max_tokens] u32, pos [max_tokens] i32, rows [max_out] u32,
                                    * each array at a 256-byte boundary */
    ovk_buffer meta;             /* device copy of meta_host, same layout */
    ovk_buffer x;                /* [max_tokens][n_embd] fp32 residual stream */
    ovk_buffer xb;               /* [max_tokens][n_embd] fp32 normed input of a sub-block */
    ovk_buffer proj;             /* [max_tokens][n_embd] fp32 output of Wo / Wdown */
    ovk_buffer q, att;           /* [max_tokens][n_head][head_dim] fp32: query, attention output */
    ovk_buffer k, v;             /* [max_tokens][n_head_kv][head_dim] fp32 post-RoPE key, value */
    ovk_buffer gate, up;         /* [max_tokens][n_ff] fp32 */
    ovk_buffer xo;               /* [max_out][n_embd] fp32 gathered rows for the LM head */
    ovk_buffer logits;           /* [max_out][n_vocab] fp32 */
    ovk_buffer amax;             /* [max_out] u32 argmax of each logits row */
    ovk_buffer rb_logits;        /* READBACK [max_out][n_vocab] fp32 */
    ovk_buffer rb_amax;          /* READBACK [max_out] u32 */
    ovk_buffer xq;               /* x prepared for the packed-fp16 mat-vec (one row) or the int8
                                    * products (up to OVK_Q8_BATCH_MAX rows): OSCAR_X_F16_BYTES /
                                    * OSCAR_X_Q8_BYTES of the widest input; unused (0 bytes) when
                                    * matvec_f16 and matvec_q8 are 0 */
    ovk_buffer mm_scratch;       /* [OVK_MMC_SCRATCH_BYTES] fp32 partial sums of the split products of
                                    * a short batch (ops.matmul_scratch); where cooperative matrices
                                    * run and a step may hold more than one token, else unused */
    int matvec_f16;                /* single-row steps run Q4_0/Q8_0 products in packed fp16 (ops.h):
                                    * opt-in, OSCAR_MATVEC_F16=1 where the device has shaderFloat16 */
    int matvec_q8;                 /* single rows and decode steps of up to OVK_Q8_BATCH_MAX rows run the
                                    * quant types' products with x in int8 (ovk_op_mul_mat_q8): where
                                    * integer dot products are fast and subgroup arithmetic exists, or
                                    * as OSCAR_MATVEC_Q8 says */
    int step_decode;               /* while a step records: each of its rows is another sequence's one
                                    * new token (batched decode), not a prompt's */
    uint32_t flush_growth;         /* a step's command buffer is submitted in parts, each flush_growth
                                    * times longer than the one before (OSCAR_STEP_FLUSH, default 4:
                                    * layers 0 | 1-4 | 5-20 | 21-84 ...; 0: one part) */
    uint32_t last_rows;            /* logits rows of the last step */
    double last_gpu_ms;            /* GPU time of the last step (0 without timestamps) */
} ovk_gpu_state;

oscar_status ovk_gpu_state_create(ovk_model_gpu *m, oscar_kv_cache *kv, uint32_t max_tokens, uint32_t max_out,
                                    ovk_gpu_state **out);
void ovk_gpu_state_destroy(ovk_gpu_state *s);

/* One forward step. seqs[i] (KV cache sequence ids, distinct) gets n_new[i] tokens; tokens holds
 * them all in order (seqs[0]'s, then seqs[1]'s, ...), total <= max_tokens; each id must be
 * < n_vocab (checked). With want_logits, the last token of every sequence gets a logits row:
 * logits [n_seqs][n_vocab] (NULL: kept on the device only) and argmax [n_seqs] (NULL: not
 * read); n_seqs <= max_out. Positions continue each sequence. CONTEXT_FULL / OUT_OF_PAGES from
 * the cache leave every sequence unchanged. */
oscar_status ovk_gpu_step(ovk_gpu_state *s, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new,
                            const int32_t *tokens, int want_logits, float *logits, int32_t *argmax);

/* Makes the pipelines of a prompt step (max_tokens rows) and of a decode step ahead of them, by
 * recording both without submitting; before the cache holds a token (else it does nothing).
 * Leaves the cache as it was. */
oscar_status ovk_gpu_prepare(ovk_gpu_state *s);

/* Benchmark hook: appends n tokens of seeded pseudo-random K and V (uniform in (-1, 1), the
 * same block of max_tokens rows repeated) to cache sequence kv_seq in every layer, without
 * running the model: append, then the flush of the tokens that leave the recent window, as a
 * prefill stores them. It lets oscar-bench time decode at 128K tokens without a prefill of
 * ~14 minutes; what the model computes after it is meaningless. CONTEXT_FULL / OUT_OF_PAGES
 * from the cache leave the sequence as it was before the failing chunk. */
oscar_status ovk_gpu_fill_synthetic(ovk_gpu_state *s, int32_t kv_seq, uint32_t n, uint32_t seed);

#endif
