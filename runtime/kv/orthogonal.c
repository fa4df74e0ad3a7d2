/* Walsh-Hadamard matrix and orthogonality measure of rotations (see orthogonal.h). */
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

ovk_rotation_error ovk_rotation_max_error(const float *R, uint32_t d)
{
    ovk_rotation_error e = { .finite = 1, .first_bad = 0, .max = 0.0, .row = 0, .col = 0 };
    for (size_t i = 0; i < (size_t)d * d; i++)
        if (!isfinite(R[i])) {
            e.finite = 0;
            e.first_bad = i;
            e.max = INFINITY;
            return e;
        }
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = i; j < d; j++) {
            double s = 0.0;
            for (uint32_t k = 0; k < d; k++) s += (double)R[(size_t)k * d + i] * (double)R[(size_t)k * d + j];
            double dev = fabs(s - (i == j ? 1.0 : 0.0));
            if (dev > e.max) {
                e.max = dev;
                e.row = i;
                e.col = j;
            }
        }
    return e;
}
