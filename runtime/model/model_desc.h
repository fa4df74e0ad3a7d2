/* Model description: the hyperparameters and the tensor map of a llama-family GGUF model,
 * checked once at load so that every forward pass (the C reference in model_ref.c and the
 * GPU path) can trust shapes and types without re-checking.
 *
 * Architectures (general.architecture):
 *   llama  Llama 2/3, SmolLM/SmolLM2. RoPE "normal": adjacent pairs (x[2i], x[2i+1]).
 *   qwen2  as llama plus biases on Q, K and V. RoPE "neox": pairs (x[i], x[i + n_rot/2]).
 *   qwen3  as llama plus per-head RMSNorm of Q and K (attn_q_norm, attn_k_norm) applied
 *          before RoPE. RoPE "neox".
 *
 * Tensor shapes below are GGUF ne[] order (ne[0] is the contiguous row), so a matrix that
 * maps n_in -> n_out is [n_in, n_out] and y[o] = sum_i W[o][i] * x[i]:
 *   token_embd.weight        [n_embd, n_vocab]
 *   output_norm.weight       [n_embd]
 *   output.weight            [n_embd, n_vocab]     absent: tied to token_embd
 *   blk.N.attn_norm.weight   [n_embd]
 *   blk.N.attn_q.weight      [n_embd, n_head * head_dim]         (.bias [n_head*head_dim], qwen2)
 *   blk.N.attn_k.weight      [n_embd, n_head_kv * head_dim]      (.bias, qwen2)
 *   blk.N.attn_v.weight      [n_embd, n_head_kv * head_dim_v]    (.bias, qwen2)
 *   blk.N.attn_q_norm.weight [head_dim]  blk.N.attn_k_norm.weight [head_dim]   (qwen3)
 *   blk.N.attn_output.weight [n_head * head_dim_v, n_embd]
 *   blk.N.ffn_norm.weight    [n_embd]
 *   blk.N.ffn_gate.weight    [n_embd, n_ff]   blk.N.ffn_up.weight [n_embd, n_ff]
 *   blk.N.ffn_down.weight    [n_ff, n_embd]
 *   rope_freqs.weight        [n_rot / 2] F32, optional (Llama 3.1 frequency divisors)
 * Weight types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K (ovk_model_type_supported);
 * the row length must be a multiple of the type's block size.
 *
 * Errors: an architecture or tensor type we do not run is OSCAR_ERROR_UNSUPPORTED_FORMAT; a
 * missing key or tensor, a wrong shape, an inconsistent hyperparameter is
 * OSCAR_ERROR_BAD_FORMAT. The message names the file, the tensor or key, and the field.
 */
#ifndef OSCAR_MODEL_DESC_H
#define OSCAR_MODEL_DESC_H

#include <stdint.h>

#include "gguf.h"
#include "oscar/oscar.h"
#include "rope.h"
#include "tokenizer.h"

typedef enum ovk_arch {
    OSCAR_ARCH_LLAMA = 1,
    OSCAR_ARCH_QWEN2 = 2,
    OSCAR_ARCH_QWEN3 = 3,
} ovk_arch;

typedef enum ovk_rope_scaling {
    OSCAR_ROPE_SCALING_NONE = 0,
    OSCAR_ROPE_SCALING_LINEAR = 1, /* position / factor */
    OSCAR_ROPE_SCALING_LLAMA3 = 2, /* Llama 3.1 per-frequency divisors (from rope_freqs.weight,
                                    * or computed from factor, low/high frequency factors and
                                    * the original context length) */
} ovk_rope_scaling;

/* "llama", "qwen2", "qwen3" or "unknown". */
const char *ovk_arch_name(ovk_arch arch);
/* 1 when the forward passes read weights of this GGML type. */
int ovk_model_type_supported(uint32_t ggml_type);

typedef struct ovk_model_hparams {
    ovk_arch arch;
    uint32_t n_layer;          /* <arch>.block_count */
    uint32_t n_embd;           /* <arch>.embedding_length */
    uint32_t n_ff;             /* <arch>.feed_forward_length */
    uint32_t n_head;           /* <arch>.attention.head_count */
    uint32_t n_head_kv;        /* <arch>.attention.head_count_kv (default n_head) */
    uint32_t head_dim;         /* <arch>.attention.key_length (default n_embd / n_head) */
    uint32_t head_dim_v;       /* <arch>.attention.value_length (default head_dim) */
    uint32_t n_vocab;          /* token_embd.weight ne[1] */
    uint32_t n_ctx_train;      /* <arch>.context_length */
    float norm_eps;            /* <arch>.attention.layer_norm_rms_epsilon (default 1e-5) */
    /* RoPE */
    ovk_rope_type rope_type; /* from the architecture */
    uint32_t n_rot;            /* <arch>.rope.dimension_count (default head_dim): the first
                                * n_rot dimensions of a head are rotated, the rest pass */
    float rope_freq_base;      /* <arch>.rope.freq_base (default 10000) */
    ovk_rope_scaling rope_scaling; /* <arch>.rope.scaling.type */
    float rope_scale_factor;   /* <arch>.rope.scaling.factor (1 when none) */
    uint32_t rope_orig_ctx;    /* <arch>.rope.scaling.original_context_length (0 when absent) */
    float rope_low_freq_factor, rope_high_freq_factor; /* llama3 only (defaults 1 and 4) */
    /* structure */
    int tied_embeddings;       /* 1: no output.weight, the LM head is token_embd.weight */
    int has_qkv_bias;          /* qwen2 */
    int has_qk_norm;           /* qwen3 */
} ovk_model_hparams;

/* One block's tensors (pointers into the GGUF; NULL where the architecture has none). */
typedef struct ovk_model_layer {
    const ovk_gguf_tensor *attn_norm;
    const ovk_gguf_tensor *wq, *wk, *wv, *wo;
    const ovk_gguf_tensor *bq, *bk, *bv;         /* qwen2 */
    const ovk_gguf_tensor *q_norm, *k_norm;      /* qwen3 */
    const ovk_gguf_tensor *ffn_norm;
    const ovk_gguf_tensor *w_gate, *w_up, *w_down;
} ovk_model_layer;

typedef struct ovk_model_desc {
    ovk_gguf *gguf;                  /* the file (owned when owns_gguf) */
    int owns_gguf;
    ovk_model_hparams hp;
    const ovk_gguf_tensor *token_embd;
    const ovk_gguf_tensor *output_norm;
    const ovk_gguf_tensor *output;   /* == token_embd when tied */
    const ovk_gguf_tensor *rope_freqs; /* optional [n_rot/2] F32 divisors, else NULL */
    ovk_model_layer *layers;         /* [n_layer] */
    float *rope_theta;                 /* [n_rot/2] radians per position of pair i, all
                                        * scaling applied: angle(pos, i) = pos * rope_theta[i] */
    uint64_t fingerprint;              /* ovk_model_fingerprint() of this model */
} ovk_model_desc;

/* Opens `path` and describes it. On failure *out is NULL and the status says why (IO,
 * BAD_FORMAT, UNSUPPORTED_FORMAT, OUT_OF_HOST_MEMORY); oscar_last_error() names the field. */
oscar_status ovk_model_desc_load(const char *path, ovk_model_desc **out);

/* Describes an already-open GGUF. With take_ownership = 1 the description closes `g` when it is
 * destroyed (also when this call fails); otherwise `g` must outlive the description. */
oscar_status ovk_model_desc_from_gguf(ovk_gguf *g, int take_ownership, ovk_model_desc **out);

/* Frees the description (and the GGUF when owned). NULL is a no-op. */
void ovk_model_desc_destroy(ovk_model_desc *m);

/* Model fingerprint, FNV-1a 64 over a canonical byte stream (all integers little-endian,
 * floats as their IEEE bits):
 *   "oscar-model-fp-v1\0", the architecture name with its NUL,
 *   u32: n_layer n_embd n_ff n_head n_head_kv head_dim head_dim_v n_vocab n_rot rope_type
 *        rope_scaling tied_embeddings, f32 bits: norm_eps rope_freq_base rope_scale_factor,
 *   then for every tensor in load order (token_embd, output_norm, output unless tied,
 *   rope_freqs if present, then per block: attn_norm, attn_q, attn_k, attn_v, [q/k/v biases],
 *   [q_norm, k_norm], attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down):
 *     name with its NUL, u32 type, u32 n_dims, u64 ne[0..n_dims), u64 n_bytes,
 *     and a sample of the data: the first 256 bytes, the 256 bytes starting at n_bytes / 2
 *     (clamped to the end) and the last 256 bytes (fewer when the tensor is smaller).
 * Not covered: context_length, the tokenizer and chat template, other metadata, and tensor
 * bytes outside the samples. Two files with equal weights in the same layout get the same
 * fingerprint whatever their metadata order; requantizing a model changes it. */
uint64_t ovk_model_fingerprint(const ovk_model_desc *m);

/* Builds a tokenizer from the GGUF's tokenizer.ggml.* keys (model, pre, tokens, token_type,
 * scores, merges, bos/eos/eot/unknown ids, add_bos_token, add_space_prefix). BAD_FORMAT when
 * the tokens array is missing or an array has the wrong length; otherwise as
 * ovk_tokenizer_create. */
oscar_status ovk_model_tokenizer_create(const ovk_gguf *g, ovk_tokenizer **out);

#endif
