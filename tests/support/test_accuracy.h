/* The accuracy policy of docs/accuracy.md as one check: a fast kernel variant's output against
 * (1) the C reference that reproduces its input rounding (same fp16 / int8 values, same scales):
 *     NSE <= TEST_NSE_FAITHFUL, tight enough that an indexing or packing bug shows; and
 * (2) the exact computation over the same stored values before that rounding:
 *     NSE <= TEST_NSE_EXACT, which bounds what the rounding itself costs on ordinary data.
 * NSE = sum (got - ref)^2 / sum ref^2 (test_nse). */
#ifndef OSCAR_TEST_ACCURACY_H
#define OSCAR_TEST_ACCURACY_H

#include <stddef.h>
#include <stdint.h>

#define TEST_NSE_FAITHFUL 1e-5
#define TEST_NSE_EXACT 1e-4

/* Checks got [n] against faithful [n] (tight) and, unless exact is NULL, against exact [n]
 * (loose); prints one line naming `what` with both errors. Returns 1 when both hold. */
int test_check_accuracy(const char *what, const float *got, const float *faithful, const float *exact, size_t n);

/* Int8 blocks a kernel made of x [n] (codes [n / 4] words, scales [n / 32]; common/q8_layout.h)
 * against the C quantizer (ovk_ref_q8_quantize): the scales bit for bit, each code within one
 * step (a GPU's x / scale may be off by 2.5 ulp, which moves a near-tie). Returns how many scales
 * and codes are off. */
size_t test_q8_blocks_off(const float *x, size_t n, const uint32_t *codes, const float *scales);

#endif
