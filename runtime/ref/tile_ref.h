/* C references of the cooperative-matrix product (runtime/kv/tile_mul.h), per docs/accuracy.md:
 * the rounding-faithful one takes the same fp16 inputs the kernel reads, the exact one the fp32
 * values before they were rounded to fp16. Both sum in double. */
#ifndef OSCAR_TILE_REF_H
#define OSCAR_TILE_REF_H

#include <stdint.h>

/* c [m][n] = a [m][k] * b [k][n], a and b fp16 bits. */
void ovk_ref_matmul_f16(const uint16_t *a, const uint16_t *b, float *c, uint32_t m, uint32_t n, uint32_t k);
/* c [m][n] = a [m][k] * b [k][n], all fp32. */
void ovk_ref_matmul_f32(const float *a, const float *b, float *c, uint32_t m, uint32_t n, uint32_t k);

#endif
