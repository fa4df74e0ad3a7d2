/* Sampler: picks the next token from a row of logits, on the CPU.
 *
 * The chain runs in llama.cpp's default order:
 *   repetition penalty -> top-k -> top-p -> min-p -> temperature -> random draw,
 * so top-p and min-p see the distribution at temperature 1 (as in llama.cpp), and the
 * temperature only reshapes what survives. temperature <= 0 is greedy: the argmax after the
 * penalty (lowest id on ties), no randomness.
 *
 * Randomness comes from the sampler's own generator (splitmix64-seeded xorshift64*), never from
 * rand(), so a seed gives the same draws on every platform. The probabilities themselves use
 * exp() from the C library; two libms that round exp() differently could, in a rare tie at a
 * boundary, pick differently, but nothing else varies.
 */
#ifndef OSCAR_SAMPLER_H
#define OSCAR_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* oscar_sampler_params {temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed}
 * is public: include/oscar/model.h, which oscar/oscar.h includes. */

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1.0
 * (off), repeat_last_n 64; seed 0x5EED (fixed, so runs reproduce; pass your own for variety). */
oscar_sampler_params oscar_sampler_params_default(void);

typedef struct oscar_sampler oscar_sampler;

/* Creates a sampler for a vocabulary of n_vocab tokens. INVALID_ARGUMENT for n_vocab 0, a
 * NaN parameter, top_p <= 0 or a repeat_penalty <= 0; OUT_OF_HOST_MEMORY. */
oscar_status oscar_sampler_create(const oscar_sampler_params *params, uint32_t n_vocab, oscar_sampler **out);
/* NULL is a no-op. */
void oscar_sampler_destroy(oscar_sampler *s);

/* Picks a token from logits[n_vocab] (not modified). NaN logits count as -infinity.
 * Does not record the token: call oscar_sampler_accept with what was actually used.
 * INVALID_ARGUMENT when no logit is finite or above -infinity. */
oscar_status oscar_sampler_sample(oscar_sampler *s, const float *logits, int32_t *token);

/* The distribution the next draw would use: probs[n_vocab], 0 for tokens the filters removed,
 * summing to 1 (greedy: 1 on the argmax). Does not advance the generator. */
oscar_status ovk_sampler_distribution(oscar_sampler *s, const float *logits, float *probs);

/* Records a token in the repetition history (prompt tokens too, if they should count). */
void oscar_sampler_accept(oscar_sampler *s, int32_t token);
/* Forgets the history and restarts the generator from the seed. */
void oscar_sampler_reset(oscar_sampler *s);

/* The generator on its own, for reproducible randomness elsewhere. */
typedef struct ovk_rng {
    uint64_t state; /* never 0 */
} ovk_rng;
void ovk_rng_seed(ovk_rng *rng, uint64_t seed);
uint64_t ovk_rng_next(ovk_rng *rng);
double ovk_rng_uniform(ovk_rng *rng); /* [0, 1), 53 random bits */

#endif
