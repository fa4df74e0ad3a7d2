/* Perplexity pieces shared by oscar-perplexity and oscar-quality: tokenizing a text, the
 * negative log-likelihood of a token, and the chunked evaluation rule.
 *
 * The rule (llama.cpp's): the text is tokenized once (no BOS) and cut into non-overlapping
 * chunks of ctx tokens; a trailing partial chunk is dropped. When the model asks for a BOS
 * token, the first token of every chunk is replaced by BOS. Each chunk starts from an empty
 * KV cache; with first = ctx/2, the tokens at positions first+1 .. ctx-1 are scored
 * (ctx-1-first per chunk), each from the logits of the token before it. Positions 0..first
 * are prefilled (one logits row comes back), the rest is decoded one token per step, so the
 * cache behaves as in real use: tokens that leave the fp16 recent window are quantized.
 * P chunks run as P sequences of one session and decode together, one token each per step.
 */
#ifndef OSCAR_APP_PPL_H
#define OSCAR_APP_PPL_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* Tokenizes a whole text without BOS into a malloc'ed array (*tokens, *n_tokens) and sets
 * *bos to the model's BOS id when its tokenizer adds one (else -1). Returns OSCAR_OK, or the
 * status of the failing call (OUT_OF_HOST_MEMORY when the array cannot be allocated). */
oscar_status app_tokenize_text(const oscar_model *model, const char *text, size_t len, int32_t **tokens,
                               size_t *n_tokens, int32_t *bos);

/* -log softmax(logits)[target], in double over the whole vocabulary. */
double app_token_nll(const float *logits, uint32_t n_vocab, int32_t target);

/* Called after each group of chunks: chunk index c (0-based) and the sum of its scored NLLs. */
typedef void (*app_ppl_chunk_fn)(void *user, uint32_t chunk, double nll_sum);
/* Called after each prefill or decode step: tokens scored so far, of `total`. */
typedef void (*app_ppl_step_fn)(void *user, uint64_t scored, uint64_t total);

typedef struct app_ppl_hooks {
    app_ppl_chunk_fn on_chunk;    /* may be NULL */
    app_ppl_step_fn on_step;      /* may be NULL */
    void *user;
} app_ppl_hooks;

/* What app_ppl_eval returns when a logit is NaN or infinite (a corrupt model): a perplexity
 * from such logits means nothing. Outside the library's status bands. */
#define APP_PPL_NOT_FINITE ((oscar_status)1)

/* Scores chunks 0..n_chunks-1 of tokens[n_chunks * ctx] with the rule above, n_par at a time
 * on the sequences seqs[n_par] of `session` (each already added; reset here before use; the
 * session needs n_ctx >= ctx). bos: replaces each chunk's first token when >= 0.
 * logits: scratch [n_par][n_vocab]. chunk_nll[n_chunks]: out, the sum of the scored NLLs of
 * each chunk (ctx-1-ctx/2 tokens each). hooks may be NULL. tokens is not modified.
 * Returns OSCAR_OK, APP_PPL_NOT_FINITE (stopped at the first non-finite negative
 * log-likelihood), or the first failing session call's status (oscar_last_error() has the
 * detail); OUT_OF_HOST_MEMORY for the scratch copy of a chunk's prefix. */
oscar_status app_ppl_eval(oscar_session *session, const int32_t *seqs, uint32_t n_par, const int32_t *tokens,
                          uint32_t ctx, uint32_t n_chunks, int32_t bos, uint32_t n_vocab, float *logits,
                          double *chunk_nll, const app_ppl_hooks *hooks);

/* The same over chunks given one by one: chunks[c] points at chunk c's ctx tokens, so that the
 * chunks of several texts decode together. */
oscar_status app_ppl_eval_chunks(oscar_session *session, const int32_t *seqs, uint32_t n_par,
                                 const int32_t *const *chunks, uint32_t ctx, uint32_t n_chunks, int32_t bos,
                                 uint32_t n_vocab, float *logits, double *chunk_nll, const app_ppl_hooks *hooks);

/* Perplexity and its standard error from per-chunk NLL sums of n_scored tokens each:
 * ppl = exp(mean NLL); *err = standard error of the mean NLL from the spread of the chunk
 * means (chunks are independent samples, tokens inside a chunk are not) carried through exp,
 * 0 for one chunk. *nll (may be NULL) = the mean NLL. */
double app_ppl_summary(const double *chunk_nll, uint32_t n_chunks, uint32_t n_scored, double *err, double *nll);

/* The perplexity ratio of two runs over the same chunks, ppl_a / ppl_b = exp(mean over chunks
 * of the per-token NLL difference), and in *err (may be NULL) its standard error from the
 * spread of the per-chunk differences carried through exp. Paired: what makes one chunk
 * harder than another cancels, so this error is the one to compare a change against (the
 * perplexities' own errors hold the chunks' spread in difficulty, often larger than the
 * change). */
double app_ppl_ratio(const double *nll_a, const double *nll_b, uint32_t n_chunks, uint32_t n_scored, double *err);

#endif
