/* OSCAR-VK KV-cache level: a paged KV cache in fp16 or INT2 (optionally rotated by Hadamard
 * or an OSCAR rotation set) and attention over it, for engines that bring their own matmuls.
 *
 * Life of a step (one forward pass of the engine over some sequences):
 *   oscar_kv_step_begin(cache, n_seqs, seqs, n_new)   reserve room for the new tokens
 *   for each layer:
 *       oscar_kv_append(cache, layer, k, v)           store the new tokens' post-RoPE K, V
 *       oscar_kv_attention(cache, layer, q, out)       attention of the new tokens (causal)
 *   oscar_kv_step_end(cache)                           commit; quantize tokens that left the
 *                                                      recent window into INT2 pages
 * Rows of k, v, q and out are the step's new tokens in order: all new tokens of seqs[0], then
 * of seqs[1], and so on. Each new token attends to every earlier token of its sequence and to
 * itself. If step_begin fails (OSCAR_ERROR_OUT_OF_PAGES, OSCAR_ERROR_CONTEXT_FULL) nothing
 * changed, in any sequence.
 *
 * Storage per sequence: the first sink_tokens positions and the most recent recent_tokens
 * stay in fp16 (already rotated); the rest are INT2 (2 bits per element plus an fp16 scale
 * and min per group of group_size elements). Full pages of a common prefix are shared between
 * forked sequences; the partial last pages are copied at fork. The exact layout is in
 * shaders/common/kv_layout.h and docs/kv-cache.md.
 */
#ifndef OSCAR_KV_H
#define OSCAR_KV_H

#include "oscar/oscar.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oscar_kv_cache oscar_kv_cache;

typedef enum oscar_kv_mode {
    OSCAR_KV_FP16 = 0,          /* every token in fp16, no rotation: the baseline */
    OSCAR_KV_INT2 = 1,          /* INT2 without rotation */
    OSCAR_KV_INT2_HADAMARD = 2, /* INT2 after a normalised Walsh-Hadamard rotation */
    OSCAR_KV_INT2_ROTATED = 3,  /* INT2 after the given rotation set (OSCAR) */
} oscar_kv_mode;

/* Returns "fp16", "int2", "int2-hadamard" or "oscar". */
OSCAR_API const char *oscar_kv_mode_name(oscar_kv_mode mode);

typedef struct oscar_kv_params {
    oscar_kv_mode mode;
    uint32_t n_layer, n_head, n_kv_head; /* n_head must be a multiple of n_kv_head */
    uint32_t head_dim;          /* 64, 128 or 256 */
    uint32_t group_size;        /* INT2 group G: 32, 64 or 128, dividing head_dim (default 0: min(head_dim, 128)) */
    uint32_t page_tokens;       /* tokens per page (default 64) */
    uint32_t sink_tokens;       /* first tokens kept in fp16 (default 64) */
    uint32_t recent_tokens;     /* most recent tokens kept in fp16 (default 256) */
    uint32_t flush_tokens;      /* tokens quantized together when they leave the window (default 8) */
    uint32_t max_sequences;     /* sequences alive at once (default 1) */
    uint32_t max_context;       /* longest sequence in tokens (default 8192) */
    uint32_t max_step_tokens;   /* most new tokens in one step, all sequences together (default 512) */
    uint64_t memory_budget;     /* bytes for all page pools; 0: enough for every sequence at max_context */
    float attn_scale;           /* logit scale; 0: 1/sqrt(head_dim) */
    /* OSCAR_KV_INT2_ROTATED: row-major float32 rotations, applied as y = x·R to row vectors x:
     * [n_layer][n_rot][head_dim][head_dim] with n_rot = 1 (per layer) or n_kv_head (per head).
     * Each R must be orthogonal and finite. Copied at creation. */
    const float *rot_k, *rot_v;
    uint32_t rot_per_head;      /* 0: one R per layer; 1: one per (layer, KV head) */
    const float *clip_k, *clip_v; /* [n_layer] clip ratios in (0, 1]; NULL: 0.96 for K, 0.92 for V */
    /* OSCAR_KV_INT2_ROTATED only (NULL: none): centering vectors, float32 [n_layer][n_kv_head]
     * [head_dim] in the unrotated basis. Every key row is stored as (k − μ_K)·R_K and every value
     * row as (v − μ_V)·R_V, so the quantizer sees rows without their common offset; attention
     * adds μ_V back to its output and is unchanged by μ_K (a constant key offset moves all of a
     * query's logits alike). Copied at creation; must be finite. */
    const float *mean_k, *mean_v;
    /* Research settings of mode oscar (key centers per block of positions, error-feedback key
     * codes, refit of the grid): NULL (none), or a struct of oscar/experimental.h, which may
     * change between versions. The model level fills it from the RotationZoo file. */
    const struct oscar_kv_experimental *experimental;
} oscar_kv_params;

OSCAR_API oscar_kv_params oscar_kv_params_default(void);

/* Creates a cache on the context's device: page pools sized from memory_budget, page tables,
 * and the kernels' pipelines. Fails with INVALID_ARGUMENT naming the bad field (head_dim not a
 * power of two, G not dividing head_dim, a rotation not orthogonal or not finite, ...). */
OSCAR_API oscar_status oscar_kv_cache_create(oscar_context *ctx, const oscar_kv_params *params, oscar_kv_cache **out);
/* Releases the cache and its device memory. NULL is a no-op. */
OSCAR_API void oscar_kv_cache_destroy(oscar_kv_cache *cache);

/* Sequences: small integer ids, valid until freed. */
OSCAR_API oscar_status oscar_kv_seq_add(oscar_kv_cache *cache, int32_t *seq);
/* A new sequence with the same content as src: full pages are shared, partial ones copied. */
OSCAR_API oscar_status oscar_kv_seq_fork(oscar_kv_cache *cache, int32_t src, int32_t *dst);
OSCAR_API oscar_status oscar_kv_seq_free(oscar_kv_cache *cache, int32_t seq);
OSCAR_API oscar_status oscar_kv_seq_length(const oscar_kv_cache *cache, int32_t seq, uint32_t *length);

/* The step API described above. k, v: [n_step_tokens][n_kv_head][head_dim] float32 post-RoPE;
 * q, out: [n_step_tokens][n_head][head_dim] float32. */
OSCAR_API oscar_status oscar_kv_step_begin(oscar_kv_cache *cache, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new);
OSCAR_API oscar_status oscar_kv_append(oscar_kv_cache *cache, uint32_t layer, const float *k, const float *v);
OSCAR_API oscar_status oscar_kv_attention(oscar_kv_cache *cache, uint32_t layer, const float *q, float *out);
OSCAR_API oscar_status oscar_kv_step_end(oscar_kv_cache *cache);

typedef struct oscar_kv_stats {
    oscar_kv_mode mode;
    uint32_t page_tokens;
    uint32_t int2_pages_total, int2_pages_used;
    uint32_t f16_pages_total, f16_pages_used;
    uint64_t int2_bytes_per_token;  /* all layers, K and V, codes + scales + mins */
    uint64_t f16_bytes_per_token;   /* all layers, K and V */
    uint64_t int2_tokens, f16_tokens; /* tokens stored in each region, all sequences (shared counted once per sequence) */
    uint64_t bytes_total;           /* device bytes of the page pools */
    uint64_t bytes_used;            /* bytes of pages in use */
    uint32_t max_context;           /* longest new sequence that fits in the free pages now */
    double bits_per_element;        /* stored bytes*8 / (tokens * layers * 2 * n_kv_head * head_dim) */
    double last_gpu_ms;             /* GPU time of the last append/attention/step_end call (timestamps) */
} oscar_kv_stats;

OSCAR_API oscar_status oscar_kv_get_stats(const oscar_kv_cache *cache, oscar_kv_stats *out);

/* The longest single sequence whose cache fits in budget_bytes with these params (page
 * granularity and fp16 windows included), without creating anything. */
OSCAR_API oscar_status oscar_kv_max_context(const oscar_kv_params *params, uint64_t budget_bytes, uint32_t *max_tokens);

#ifdef __cplusplus
}
#endif
#endif
