/* Weight matrices in GGUF block layouts for the product tests. */
#ifndef OSCAR_TEST_WEIGHTS_H
#define OSCAR_TEST_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

/* Fills a [rows][cols] weight matrix of `type` (returned malloc'd, size rounded up to a word,
 * *bytes set to that size; NULL on a bad shape or no memory). Quantized types are random bytes
 * with the fp16 scale fields replaced by sane values (|s| in [0.002, 0.022), random sign), so
 * every bit of every code, scale and high-bit field is exercised; float types hold N(0, 1). */
uint8_t *test_make_weights(uint32_t type, uint32_t rows, uint32_t cols, size_t *bytes);

#endif
