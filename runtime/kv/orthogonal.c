/* Walsh-Hadamard matrix of the rotated KV modes (see orthogonal.h). */
#include <math.h>

#include "orthogonal.h"

double ovk_hadamard_entry(uint32_t d, uint32_t i, uint32_t j)
{
    double s = 1.0 / sqrt((double)d);
    return (__builtin_popcount(i & j) & 1) ? -s : s;
}

void ovk_kv_hadamard(uint32_t d, float *H)
{
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) H[(size_t)i * d + j] = (float)ovk_hadamard_entry(d, i, j);
}
