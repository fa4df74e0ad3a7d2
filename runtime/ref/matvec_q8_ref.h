/* C reference of the int8 decode mat-vec (shaders/mul_mat_vec_q8[.idot].comp, ops.h
 * ovk_op_mul_mat_vec_q8), per docs/accuracy.md: it reproduces the kernel's rounding (x as int8
 * blocks, made by ovk_ref_q8_quantize or read back from the GPU, exact integer block sums, the
 * same fp32 scale products), adding the block terms in double. The exact reference, the stored
 * weights times the unrounded x, is ovk_ref_mul_mat (ops_ref.h). */
#ifndef OSCAR_MATVEC_Q8_REF_H
#define OSCAR_MATVEC_Q8_REF_H

#include <stdint.h>

#include "oscar/oscar.h"

/* y [rows] = W x for W [rows][cols] raw GGUF blocks of type Q4_0, Q4_1, Q8_0, Q4_K, Q5_K or Q6_K
 * (any alignment) and x = x_codes [cols / 4] words (common/q8_layout.h) with x_scales [cols / 32], per
 * block of 32 elements:
 *   Q8_0  (float)(sum q c) * (d * xd)
 *   Q4_0  (float)(sum q c - 8 sum c) * (d * xd)              q the nibble 0..15
 *   Q4_1  (float)(sum q c) * (d * xd) + (float)(sum c) * (m * xd)
 *   Q4_K, Q5_K (sub-block s, 6-bit scale sc and min m; q 0..15 or 0..31):
 *         (float)(sum q c) * ((d * sc) * xd) - (float)(sum c) * ((dmin * m) * xd)
 *   Q6_K  per 16 elements (int8 scale sc, q 0..63): (float)(sum q c - 32 sum c) * ((d * sc) * xd)
 * each product and sum of a term in fp32 (a Q4_K/Q5_K chunk's two sub-block terms and a Q6_K
 * block's two halves added in fp32),
 * the terms added in double. INVALID_ARGUMENT for another type or cols not a multiple of the
 * block. */
oscar_status ovk_ref_mul_mat_vec_q8(uint32_t type, const void *w, const uint32_t *x_codes, const float *x_scales,
                                      float *y, uint32_t rows, uint32_t cols);

#endif
