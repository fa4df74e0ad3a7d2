/* Greedy tokens against the C reference's; see test_greedy.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_greedy.h"

int test_greedy_matches(ovk_model_ref *ref, const int32_t *prompt, uint32_t n_prompt, const int32_t *want,
                        const int32_t *got, uint32_t n, uint32_t n_vocab, int exact, const char *name)
{
    uint32_t i = 0;
    while (i < n && want[i] == got[i]) i++;
    if (i == n) return 1;
    int32_t *hist = malloc((size_t)(n_prompt + i) * sizeof *hist);
    float *lr = malloc((size_t)n_vocab * sizeof *lr);
    int ok = 0;
    if (!hist || !lr) goto done;
    memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
    memcpy(hist + n_prompt, want, (size_t)i * sizeof *hist);
    if (ovk_model_ref_eval(ref, hist, n_prompt + i, 0, lr, 0) != OSCAR_OK) goto done;
    double ss = 0;
    for (uint32_t v = 0; v < n_vocab; v++) ss += (double)lr[v] * lr[v];
    double margin = (double)lr[want[i]] - lr[got[i]], rms = sqrt(ss / n_vocab);
    fprintf(stderr, "  %s: first difference at step %u: reference %d (logit %.6f), device %d (reference logit %.6f), "
                    "margin %.3g of rms %.3g\n", name, i, want[i], lr[want[i]], got[i], lr[got[i]], margin, rms);
    ok = !exact && margin <= 2e-2 * rms;
done:
    free(hist), free(lr);
    return ok;
}
