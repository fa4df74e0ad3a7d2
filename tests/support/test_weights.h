/* Weight matrices for the product tests: quantized types are random bytes with the fp16 scale
 * fields replaced by sane values (so every bit of every code, scale and high-bit field is
 * exercised, where the reference quantizer would leave many patterns unused); float types come
 * from Gaussian data through the reference quantizer. */
#ifndef OSCAR_TEST_WEIGHTS_H
#define OSCAR_TEST_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

/* A [rows][cols] weight matrix of `type` in its GGUF layout (malloc'd, size rounded up to a
 * word, *bytes set to that size), from test_rng; NULL for a bad type or cols, or no memory. */
uint8_t *test_make_weights(uint32_t type, uint32_t rows, uint32_t cols, size_t *bytes);

#endif
