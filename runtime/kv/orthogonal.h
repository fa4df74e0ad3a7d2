/* The orthogonal matrices of the rotated KV modes, built in one place for the KV cache and the
 * calibrator (calib/): the normalised Walsh-Hadamard matrix (mode int2-hadamard, and the H of
 * OSCAR's R = U·H·P). A rotation R is float32 [d][d], row-major, applied to a row vector as
 * y = x·R. */
#ifndef OSCAR_ORTHOGONAL_H
#define OSCAR_ORTHOGONAL_H

#include <stddef.h>
#include <stdint.h>

/* Element (i, j) of the normalised Walsh-Hadamard matrix of order d, in Sylvester order:
 * (-1)^popcount(i & j) / sqrt(d), float64; d a power of two, i, j < d. Rounded to float32 it
 * is the float32 ±1.0f / sqrtf(d) bit for bit (tests/test_calib_synthetic.c checks every d up
 * to 4096), so the float32 and float64 matrices come from this one formula. */
double ovk_hadamard_entry(uint32_t d, uint32_t i, uint32_t j);

/* The rotation mode int2-hadamard applies: H [d][d] float32, H[i][j] = ovk_hadamard_entry
 * rounded to float; d a power of two. */
void ovk_kv_hadamard(uint32_t d, float *H);

#endif
