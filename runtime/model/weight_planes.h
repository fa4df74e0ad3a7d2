/* Weight planes: block types rewritten at load for devices that read memory best in aligned
 * 16-byte texels (lavapipe: mul_mat_vec_planes.comp). The values are the GGUF bytes
 * rearranged, nothing is requantized.
 *
 * Q4_0, Q4_1, Q8_0 (blocks of 32 elements, 18, 20 and 34 bytes, so a block seldom starts on a
 * texel): every block's codes on whole texels, its scales four to a texel:
 *
 *   codes  [rows][blocks][code bytes]  the block's qs as stored: 16 bytes of nibbles (Q4_0,
 *                                      Q4_1: byte j holds element j low, j + 16 high) or 32
 *                                      int8 (Q8_0)
 *   scales [rows][scale words][4]      one word per block: d (fp16) | m (fp16) << 16, m = 0 for
 *                                      Q4_0 and Q8_0; a row's words padded to a multiple of 4
 *
 * blocks = cols / 32; the scales start at byte ovk_planes_scale_offset.
 *
 * Q4_K, Q6_K (blocks of 256 elements, 144 and 210 bytes): each block as stored, padded to whole
 * texels (144 bytes, 9 texels: as stored; 224 bytes, 14 texels, the last 14 zero), [rows][blocks]
 * of them; no scale plane (ovk_planes_scale_offset = ovk_planes_bytes). */
#ifndef OSCAR_WEIGHT_PLANES_H
#define OSCAR_WEIGHT_PLANES_H

#include <stdint.h>

/* Whether `type` (ovk_ggml_type) has planes. */
int ovk_planes_type(uint32_t type);
/* Code bytes per block: 16 or 32 for the 32-element types, the padded block for the K types,
 * 0 for a type without planes. */
uint32_t ovk_planes_code_bytes(uint32_t type);
/* Scale words of one row of a 32-element type: blocks rounded up to 4. */
uint32_t ovk_planes_scale_words(uint32_t cols);
/* Byte offset of the scale plane, and the planes' total bytes (both multiples of 16). */
uint64_t ovk_planes_scale_offset(uint32_t type, uint32_t rows, uint32_t cols);
uint64_t ovk_planes_bytes(uint32_t type, uint32_t rows, uint32_t cols);
/* Writes the planes of `rows` rows of GGUF blocks `src` into dst (ovk_planes_bytes bytes). */
void ovk_planes_pack(uint32_t type, const void *src, uint32_t rows, uint32_t cols, void *dst);

#endif
