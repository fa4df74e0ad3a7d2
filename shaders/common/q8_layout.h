/* Int8 blocks for integer dot products, shared by C (runtime/kv/q8_dot.c, runtime/ref/q8_ref.c)
 * and GLSL (shaders/quantize_q8.comp, dot_q8*.comp). Only macros and structs of 32-bit fields,
 * so both languages read it; C checks the push structs' sizes with static_assert.
 *
 * A vector of n elements (n a multiple of OSCAR_Q8_BLOCK) is n / OSCAR_Q8_BLOCK blocks:
 *   codes  [n / 4]      uint words, 4 signed 8-bit codes each: element 4w + j in byte j of word w
 *                       (two's complement), so a block is OSCAR_Q8_WORDS consecutive words
 *   scales [n / BLOCK]  fp32, one per block: element i is codes[i] * scales[i / BLOCK]
 * Quantizing a block: scale = amax * (1/127) in fp32 (a product, so C and every GPU round it the
 * same way), code = roundEven(x / scale) clamped to [-127, 127]; an all-zero block has scale 0
 * and codes 0. -128 never occurs, so a code's negation is a code too.
 */
#ifndef OSCAR_Q8_LAYOUT_H
#define OSCAR_Q8_LAYOUT_H

#ifdef GL_core_profile
#define Q8_U32 uint
#else
#include <stdint.h>
#define Q8_U32 uint32_t
#endif

#define OSCAR_Q8_BLOCK 32u
#define OSCAR_Q8_WORDS 8u /* OSCAR_Q8_BLOCK / 4 */
#define OSCAR_Q8_INV_127 0.007874015718698502f /* (float)(1/127.0), the scale's factor */

#ifndef GL_core_profile
/* One prepared vector of cols (a multiple of 32) elements in one buffer: codes [cols / 4] words at
 * byte 0, scales [cols / 32] fp32 at OSCAR_X_Q8_SCALES(cols) (256-aligned: every device's storage
 * offset alignment). */
#define OSCAR_X_Q8_SCALES(cols) (((uint64_t)(cols) + 255u) & ~(uint64_t)255u)
#define OSCAR_X_Q8_BYTES(cols) (OSCAR_X_Q8_SCALES(cols) + (uint64_t)(cols) / 8u)
#endif

/* shaders/quantize_q8.comp's push constants */
struct q8_quantize_push {
    Q8_U32 n_blocks; /* blocks to quantize, all rows together */
};

/* shaders/dot_q8*.comp's push constants */
struct q8_dot_push {
    Q8_U32 n_blocks; /* blocks per row and per vector (n / OSCAR_Q8_BLOCK) */
    Q8_U32 rows;     /* rows of W; y holds rows fp32 per vector */
};

#endif
