/* Generator of small llama-family GGUF models with seeded random weights, for tests and for
 * running the whole pipeline (tokenizer, chat template, forward pass, KV cache, calibration)
 * without a downloaded model.
 *
 * Weights: every matrix [n_in -> n_out] is N(0, 1/n_in) (standard deviation 1/sqrt(n_in)) so
 * activations keep unit scale through the blocks, except attn_q and attn_k, whose std is
 * multiplied by attn_scale (default 4; qwen3: the q/k norm weights have mean attn_scale), so
 * that attention is peaked rather than uniform; token_embd and output are N(0, embd_std^2)
 * (default 1/sqrt(n_embd)); norm weights are 1 + 0.1 N(0,1); qwen2 biases 0.1 N(0,1).
 * With these defaults greedy decoding of a 2-layer model gives 8..16 distinct tokens in 16
 * steps (measured over the three architectures, tied or not, seeds 1..5) instead of falling
 * into a one-token loop. Matrices are stored in `weight_type`, token_embd and output in
 * `embd_type`, norms and biases in F32.
 *
 * Tokenizer metadata ("gpt2" byte-level BPE, pre "smollm"): ids 0..2 are <|endoftext|>,
 * <|im_start|>, <|im_end|> (CONTROL; bos = 1, eos = 2, as SmolLM2), ids 3..258 the 256 byte
 * tokens in GPT-2's byte-to-unicode spelling, then the tokens of a short list of English
 * merges ("Ġ t", "h e", "Ġt he", ...), then "<|reserved_N|>" CONTROL tokens up to n_vocab.
 * tokenizer.chat_template is the ChatML template.
 */
#ifndef OSCAR_MODEL_GEN_H
#define OSCAR_MODEL_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "model_desc.h"
#include "oscar/oscar.h"

typedef struct ovk_model_gen_params {
    ovk_arch arch;
    uint32_t weight_type;      /* GGML type of the block matrices (default F32) */
    uint32_t embd_type;        /* GGML type of token_embd and output (default = weight_type) */
    uint32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
    uint32_t n_ctx_train;      /* context_length */
    uint32_t n_rot;            /* rope.dimension_count; 0: head_dim (key omitted) */
    float rope_freq_base;
    float norm_eps;
    int tied_embeddings;       /* 1: no output.weight */
    const char *rope_scaling;  /* NULL: none; "linear", "llama3", ... written as is */
    float rope_scale_factor;
    uint32_t rope_orig_ctx;
    uint64_t seed;
    float embd_std;            /* standard deviation of token_embd/output; 0: 1/sqrt(n_embd) */
    float attn_scale;          /* multiplies the std of attn_q/attn_k (qwen3: the mean of the
                                * q/k norm weights); 0: 4 */
    int write_head_dim;        /* 1: write attention.key_length/value_length even when equal to
                                * n_embd / n_head */
    int tokenizer;             /* 1 (default): write the tokenizer and chat template */
} ovk_model_gen_params;

/* Defaults for an architecture: 2 layers, n_embd 64, 4 heads, 2 KV heads, head_dim 16,
 * n_ff 128, n_vocab 320, context 512, F32, untied, seed 1. */
ovk_model_gen_params ovk_model_gen_params_default(ovk_arch arch);

/* The smallest vocabulary the generator can spell (3 special + 256 byte + merge tokens). */
uint32_t ovk_model_gen_min_vocab(void);

/* Writes the model to `path`. INVALID_ARGUMENT for shapes that do not fit (a row length not a
 * multiple of a type's block size, n_head not a multiple of n_head_kv, n_vocab too small);
 * IO on a write failure. */
oscar_status ovk_model_gen_write(const ovk_model_gen_params *p, const char *path);

/* Same, into a malloc'ed buffer (*out, *size; the caller frees it). */
oscar_status ovk_model_gen_write_memory(const ovk_model_gen_params *p, void **out, size_t *size);

#endif
