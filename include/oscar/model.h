/* OSCAR-VK model level: load a llama-family GGUF model (llama, qwen2, qwen3) onto the device,
 * tokenize, format chats, run prefill and batched decode with the KV cache in any mode, and
 * sample. For apps; engines that bring their own matmuls use oscar/kv.h instead.
 *
 * Life of a generation:
 *   oscar_model_load(ctx, path, &mp, &model)            weights uploaded once
 *   oscar_session_create(model, &sp, &session)          KV cache + activation buffers, once
 *   oscar_session_seq_add(session, &seq)
 *   oscar_session_prefill(session, seq, prompt, n, logits)       logits of the last token
 *   loop: oscar_sampler_sample(sampler, logits, &tok); oscar_sampler_accept(sampler, tok);
 *         oscar_session_decode(session, 1, &seq, &tok, logits)
 * Several sequences decode together in one step: oscar_session_decode(session, n, seqs, toks,
 * logits[n][n_vocab]). A step is one command buffer on the device; logits come back after it.
 *
 * Ownership: the model borrows the context (destroy sessions, then the model, then the
 * context). A session borrows its model and copies the rotation set it was given (the set may
 * be destroyed after oscar_session_create). Every output buffer is the caller's.
 */
#ifndef OSCAR_MODEL_H
#define OSCAR_MODEL_H

#include "oscar/kv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oscar_model oscar_model;
typedef struct oscar_session oscar_session;
typedef struct oscar_rotation_set oscar_rotation_set;

/* ---- model --------------------------------------------------------------------------------- */

/* Called during loading with the fraction of weight bytes uploaded so far (0..1). */
typedef void (*oscar_progress_fn)(void *user, float fraction);

typedef struct oscar_model_params {
    oscar_progress_fn progress;   /* NULL: no reports */
    void *progress_user;
} oscar_model_params;

OSCAR_API oscar_model_params oscar_model_params_default(void);

/* Opens the GGUF at `path`, checks it (architecture, hyperparameters, every tensor's type and
 * shape), builds the tokenizer and uploads every weight to the context's device, in its raw
 * GGUF block layout. On failure *out is NULL and the status says why, with
 * oscar_last_error() naming the file and the field in one line:
 *   IO (cannot open), BAD_FORMAT (truncated or corrupt file, missing tensor, wrong shape),
 *   UNSUPPORTED_FORMAT (architecture other than llama/qwen2/qwen3, a weight type other than
 *   F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q4_K/Q5_K/Q6_K, a head_dim the KV cache cannot hold),
 *   OUT_OF_DEVICE_MEMORY, OUT_OF_HOST_MEMORY. */
OSCAR_API oscar_status oscar_model_load(oscar_context *ctx, const char *path, const oscar_model_params *params,
                                        oscar_model **out);
/* Releases the device weights and the host description. Sessions must be destroyed first.
 * NULL is a no-op. */
OSCAR_API void oscar_model_destroy(oscar_model *model);

typedef struct oscar_model_info {
    char arch[16];                /* "llama", "qwen2", "qwen3" */
    char name[128];               /* general.name, "" when absent */
    uint32_t n_layer, n_embd, n_ff;
    uint32_t n_head, n_head_kv, head_dim;
    uint32_t n_vocab;
    uint32_t n_ctx_train;         /* context length the model was trained for */
    uint64_t n_params;            /* parameters (elements of every tensor) */
    uint64_t weight_bytes;        /* bytes of the tensors as stored (and as uploaded) */
    uint64_t fingerprint;         /* a hash of the model's shape and tensors that rotation files record (docs/rotationzoo.md) */
    char fingerprint_hex[17];     /* the same as 16 lower-case hex digits */
    int tied_embeddings;          /* 1: the LM head is token_embd */
    int32_t bos, eos, eot;        /* token ids, -1 when none */
} oscar_model_info;

OSCAR_API oscar_status oscar_model_get_info(const oscar_model *model, oscar_model_info *out);

/* ---- tokens and text ----------------------------------------------------------------------- */

/* Encodes `len` bytes of text. add_bos: prepend BOS when the model asks for it;
 * parse_special: match control tokens such as "<|im_start|>" (use 1 for chat prompts).
 * Writes up to `capacity` ids and sets *n_tokens to the number the text needs; returns
 * INVALID_ARGUMENT when capacity was too small (tokens may be NULL to count: OK). */
OSCAR_API oscar_status oscar_model_tokenize(const oscar_model *model, const char *text, size_t len, int add_bos,
                                            int parse_special, int32_t *tokens, size_t capacity, size_t *n_tokens);
/* The text of n tokens (no NUL written; buf may be NULL to measure; *len is the full length).
 * render_special: write control tokens' text. INVALID_ARGUMENT for a bad id or a short buffer. */
OSCAR_API oscar_status oscar_model_detokenize(const oscar_model *model, const int32_t *tokens, size_t n,
                                              int render_special, char *buf, size_t capacity, size_t *len);
/* The bytes of one token (may be part of a UTF-8 character). As detokenize. */
OSCAR_API oscar_status oscar_model_token_to_piece(const oscar_model *model, int32_t token, int render_special,
                                                  char *buf, size_t capacity, size_t *len);
/* 1 when the token ends a generation (eos, eot, <|im_end|>, ...). */
OSCAR_API int oscar_model_is_eog(const oscar_model *model, int32_t token);

/* ---- chat ---------------------------------------------------------------------------------- */
typedef struct oscar_chat_message {
    const char *role;             /* "system", "user", "assistant" */
    const char *content;          /* UTF-8, NUL-terminated */
} oscar_chat_message;

/* Writes the prompt text for n messages in the model's chat format (tokenizer.chat_template:
 * ChatML or Llama 3; unknown templates are formatted as ChatML), ending with the assistant
 * header when add_generation_prompt is 1. system_prompt: used when messages[0] is not a system
 * message; NULL: the template's own default, if any; "": none. Output NUL-terminated when it
 * fits; *len is the full length; buf may be NULL to measure. Tokenize the result with
 * parse_special = 1 and add_bos = 0. INVALID_ARGUMENT for a short buffer or a NULL field. */
OSCAR_API oscar_status oscar_model_chat_format(const oscar_model *model, const oscar_chat_message *messages, size_t n,
                                               int add_generation_prompt, const char *system_prompt, char *buf,
                                               size_t capacity, size_t *len);

/* ---- sampler ------------------------------------------------------------------------------- */
/* Chain (llama.cpp's order): repetition penalty -> top-k -> top-p -> min-p -> temperature ->
 * draw from the sampler's own seeded generator. temperature <= 0 is greedy (argmax). */
typedef struct oscar_sampler oscar_sampler;

typedef struct oscar_sampler_params {
    float temperature;      /* divides the logits; <= 0: greedy */
    int32_t top_k;          /* keep the k highest logits; <= 0: keep all */
    float top_p;            /* keep the smallest set of tokens whose mass reaches top_p; >= 1: off */
    float min_p;            /* keep tokens with p >= min_p * p_max; <= 0: off */
    float repeat_penalty;   /* for tokens in the last repeat_last_n accepted; 1: off */
    int32_t repeat_last_n;  /* history the penalty looks at; 0: off */
    uint64_t seed;          /* generator seed */
} oscar_sampler_params;

/* temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1, repeat_last_n 64,
 * seed 0x5EED. */
OSCAR_API oscar_sampler_params oscar_sampler_params_default(void);
/* A sampler for n_vocab tokens (oscar_model_info.n_vocab). INVALID_ARGUMENT for n_vocab 0 or
 * a bad parameter. */
OSCAR_API oscar_status oscar_sampler_create(const oscar_sampler_params *params, uint32_t n_vocab, oscar_sampler **out);
OSCAR_API void oscar_sampler_destroy(oscar_sampler *s);
/* Picks a token from logits[n_vocab] (not modified); does not record it. */
OSCAR_API oscar_status oscar_sampler_sample(oscar_sampler *s, const float *logits, int32_t *token);
/* Records a token in the repetition history. */
OSCAR_API void oscar_sampler_accept(oscar_sampler *s, int32_t token);
/* Forgets the history and restarts the generator from the seed. */
OSCAR_API void oscar_sampler_reset(oscar_sampler *s);

/* ---- rotation sets (RotationZoo, docs/rotationzoo.md) ---------------------------------------- */
/* Orientation: R is row-major float32, element (i, j) at i*d + j (GGUF [d, d]: ne0 = d columns
 * contiguous), and the runtime computes y = x·R for a row vector x (y_j = sum_i x_i R[i][j]):
 * k <- k·R_K and q <- q·R_K after RoPE, v <- v·R_V, attention output o <- o·R_Vᵀ. The OSCAR
 * reference's llama.cpp export stores the transpose (Rᵀ); convert it before loading (a
 * transposed R is still orthogonal, so no check can catch it). */

/* Reads a RotationZoo GGUF (tensors blk.<l>.attn_k_rot.weight / attn_v_rot.weight, F32 [d, d]
 * or [d, d, n_kv_head] per head; metadata oscar.*) and checks it against `model`: format
 * version, architecture, layer count, head_dim, KV heads, fingerprint, every tensor present
 * with the right type and shape, every R finite and orthogonal (max |RᵀR - I| <= 1e-3), clip
 * ratios in (0, 1], the group size (oscar.group_size, when present) dividing head_dim; a
 * session in mode oscar then quantizes in groups of that size. Errors name the field: BAD_FORMAT (truncated, corrupt, missing or
 * malformed tensor or key, not orthogonal, not finite), UNSUPPORTED_FORMAT (format version),
 * MISMATCH (made for another model). The set does not reference the model afterwards. */
OSCAR_API oscar_status oscar_rotation_set_load(const char *path, const oscar_model *model, oscar_rotation_set **out);

/* Builds a set in memory with the same checks. rot_k, rot_v: [n_layer][n_rot][d][d] float32
 * row-major as above, n_rot = 1 (per layer) or n_kv_head (per KV head); clip_k, clip_v:
 * [n_layer] ratios in (0, 1], or NULL for 0.96 (K) and 0.92 (V). Everything is copied.
 * INVALID_ARGUMENT for a NULL matrix or a bad value, MISMATCH when n_layer or n_rot does not
 * fit the model. */
OSCAR_API oscar_status oscar_rotation_set_create(const oscar_model *model, uint32_t n_layer, uint32_t n_rot,
                                                 const float *rot_k, const float *rot_v, const float *clip_k,
                                                 const float *clip_v, oscar_rotation_set **out);
/* Sets a set's centering (either may be NULL: that side is not centered; NULL, NULL removes it):
 * mean_k, the mean of the keys BEFORE RoPE, and mean_v, the mean of the values, float32
 * [n_layer][n_kv_head][head_dim], finite, copied. A session in mode oscar then stores
 * (k − c_K)·R_K and (v − μ_V)·R_V, where c_K is RoPE(mean_k) averaged over the positions
 * sink .. n_ctx-1 of the session (the constant nearest to the rotated mean over the context:
 * oscar_kv_params.mean_k); attention adds μ_V back and is unchanged by c_K. RotationZoo files
 * carry them as blk.<l>.attn_k_mean / attn_v_mean.
 * INVALID_ARGUMENT for a non-finite value (naming it). */
OSCAR_API oscar_status oscar_rotation_set_set_means(oscar_rotation_set *set, const float *mean_k, const float *mean_v);
/* NULL is a no-op. */
OSCAR_API void oscar_rotation_set_destroy(oscar_rotation_set *set);

/* ---- sessions ------------------------------------------------------------------------------ */
typedef struct oscar_session_params {
    oscar_kv_mode kv_mode;        /* default OSCAR_KV_FP16; OSCAR_KV_INT2_ROTATED needs `rotations` */
    uint32_t n_ctx;               /* longest sequence in tokens; 0: min(n_ctx_train, 4096) */
    uint32_t n_seq_max;           /* sequences alive at once (default 1) */
    uint32_t n_batch;             /* prompt tokens per step: longer prompts run in chunks; 0 (default):
                                   * 256 on a CPU device, 2048 on a GPU (less where a step's
                                   * activations would pass a storage binding) */
    const oscar_rotation_set *rotations; /* the OSCAR rotations (copied), or NULL */
    uint64_t kv_memory_budget;    /* bytes for the KV page pools; 0: enough for n_seq_max x n_ctx */
    /* KV cache layout (oscar/kv.h) */
    uint32_t group_size;          /* INT2 group; 0 (default): the rotation file's oscar.group_size in
                                   * mode oscar, else min(head_dim, 128); another value than the
                                   * file's is a MISMATCH */
    uint32_t page_tokens;         /* tokens per page (default 64; 0: 64) */
    uint32_t sink_tokens;         /* first tokens kept in fp16 (default 64; 0: none) */
    uint32_t recent_tokens;       /* most recent tokens kept in fp16 (default 256; 0: none) */
    uint32_t flush_tokens;        /* tokens quantized together (default 8; 0: 8) */
    /* Research settings (oscar/experimental.h): NULL, or overrides of the rotation file's. */
    const struct oscar_session_experimental *experimental;
} oscar_session_params;

OSCAR_API oscar_session_params oscar_session_params_default(void);

/* Creates the KV cache and every activation buffer a step needs (sized for n_batch tokens and
 * n_seq_max logits rows; nothing is allocated per token). INVALID_ARGUMENT names a bad field;
 * OUT_OF_DEVICE_MEMORY when the cache does not fit its budget. */
OSCAR_API oscar_status oscar_session_create(oscar_model *model, const oscar_session_params *params,
                                            oscar_session **out);
/* Waits for the device and releases the session. NULL is a no-op. */
OSCAR_API void oscar_session_destroy(oscar_session *session);

/* Sequences: ids 0..n_seq_max-1, valid until freed. add: a new empty sequence; fork: a copy of
 * src (shares the cache's full pages); reset: empties seq, keeping its id; free: releases it.
 * OUT_OF_PAGES / INVALID_STATE when no slot or page is left or the id is not in use. */
OSCAR_API oscar_status oscar_session_seq_add(oscar_session *session, int32_t *seq);
OSCAR_API oscar_status oscar_session_seq_fork(oscar_session *session, int32_t src, int32_t *dst);
OSCAR_API oscar_status oscar_session_seq_reset(oscar_session *session, int32_t seq);
OSCAR_API oscar_status oscar_session_seq_free(oscar_session *session, int32_t seq);
OSCAR_API oscar_status oscar_session_seq_length(const oscar_session *session, int32_t seq, uint32_t *length);

/* Appends n tokens to seq (in steps of n_batch) and writes the logits of the last one to
 * logits[n_vocab] (NULL: none). CONTEXT_FULL (nothing appended) when the sequence would exceed
 * n_ctx; INVALID_ARGUMENT for a token id outside the vocabulary. */
OSCAR_API oscar_status oscar_session_prefill(oscar_session *session, int32_t seq, const int32_t *tokens, uint32_t n,
                                             float *logits);
/* One step: appends tokens[i] to seqs[i] for i < n_seqs (distinct sequences, n_seqs <=
 * n_seq_max) and writes logits[n_seqs][n_vocab] (NULL: none). Errors as prefill; on error no
 * sequence changed (after OSCAR_ERROR_DEVICE_LOST the context itself is no longer usable). */
OSCAR_API oscar_status oscar_session_decode(oscar_session *session, uint32_t n_seqs, const int32_t *seqs,
                                            const int32_t *tokens, float *logits);
/* The device's argmax of each logits row of the last prefill or decode step (ties to the
 * lowest id): out[0..n) with n <= rows of that step. */
OSCAR_API oscar_status oscar_session_last_argmax(const oscar_session *session, int32_t *out, uint32_t n);

/* The prompt tokens a step takes (n_batch as resolved at creation); 0 for NULL. */
OSCAR_API uint32_t oscar_session_n_batch(const oscar_session *session);

/* The session's KV cache accounting (oscar/kv.h); last_gpu_ms is the last step's GPU time. */
OSCAR_API oscar_status oscar_session_kv_stats(const oscar_session *session, oscar_kv_stats *out);

#ifdef __cplusplus
}
#endif
#endif
