/* Greedy tokens against the C reference's, with the one allowed difference: a near-tie. */
#ifndef OSCAR_TEST_GREEDY_H
#define OSCAR_TEST_GREEDY_H

#include <stdint.h>

#include "model_ref.h"

/* Whether `got` [n] may stand for the reference's greedy tokens `want` [n] after the prompt
 * [n_prompt] (logits of n_vocab). Equal tokens pass. Otherwise, unless `exact`, the first
 * difference passes where it is a near-tie: the reference's logit of its token minus its logit
 * of got's is at most 2e-2 of the rms of its logits there (the GPU sums in another order than
 * the reference's double sums, so two logits that close may swap). The first difference is
 * printed to stderr either way. */
int test_greedy_matches(ovk_model_ref *ref, const int32_t *prompt, uint32_t n_prompt, const int32_t *want,
                        const int32_t *got, uint32_t n, uint32_t n_vocab, int exact, const char *name);

#endif
