/* The orthogonal matrices of the rotated KV modes, built and checked in one place for the KV
 * cache, the RotationZoo loader (runtime/model/rotation_set.c) and the calibrator (calib/):
 * the normalised Walsh-Hadamard matrix (mode int2-hadamard, and the H of OSCAR's R = U·H·P)
 * and the measure of how far a rotation is from orthogonal. A rotation R is float32 [d][d],
 * row-major, applied to a row vector as y = x·R. */
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

/* How far a rotation is from orthogonal (ovk_rotation_max_error). */
typedef struct ovk_rotation_error {
    int finite;         /* 1: every element of R is finite */
    size_t first_bad;   /* finite = 0: index row·d + col of the first element that is not */
    double max;         /* max over i <= j of |(RᵀR − I)[i][j]|; +inf when not finite */
    uint32_t row, col;  /* (i, j) where max is first reached (0, 0 when not finite) */
} ovk_rotation_error;

/* Measures R [d][d] float32: (RᵀR)[i][j] = Σ_k R[k][i]·R[k][j] summed in float64, k ascending,
 * over the upper triangle (RᵀR is symmetric); skipped when an element is not finite. O(d³).
 * Each caller applies its own tolerance and names what failed in its own message. */
ovk_rotation_error ovk_rotation_max_error(const float *R, uint32_t d);

#endif
