/* Weight planes (weight_planes.h). */
#include "weight_planes.h"

#include <string.h>

#include "ggml_types.h"

static int is_k_type(uint32_t type) { return type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q6_K; }

/* Elements and stored bytes of a block (ggml_types.h's table). */
static uint32_t block_elems(uint32_t type) { return ovk_ggml_type_get(type)->block_size; }
static uint32_t block_bytes(uint32_t type) { return ovk_ggml_type_get(type)->type_size; }

int ovk_planes_type(uint32_t type) { return ovk_planes_code_bytes(type) != 0; }

uint32_t ovk_planes_code_bytes(uint32_t type)
{
    switch (type) {
    case OSCAR_GGML_TYPE_Q4_0:
    case OSCAR_GGML_TYPE_Q4_1: return 16;
    case OSCAR_GGML_TYPE_Q8_0: return 32;
    case OSCAR_GGML_TYPE_Q4_K: return 144;
    case OSCAR_GGML_TYPE_Q6_K: return 224;
    default: return 0;
    }
}

uint32_t ovk_planes_scale_words(uint32_t cols) { return (cols / 32 + 3) & ~3u; }

uint64_t ovk_planes_scale_offset(uint32_t type, uint32_t rows, uint32_t cols)
{
    return (uint64_t)rows * (cols / block_elems(type)) * ovk_planes_code_bytes(type);
}

uint64_t ovk_planes_bytes(uint32_t type, uint32_t rows, uint32_t cols)
{
    uint64_t scales = is_k_type(type) ? 0 : (uint64_t)rows * ovk_planes_scale_words(cols) * 4;
    return ovk_planes_scale_offset(type, rows, cols) + scales;
}

void ovk_planes_pack(uint32_t type, const void *src, uint32_t rows, uint32_t cols, void *dst)
{
    const uint8_t *in = src;
    uint8_t *codes = dst;
    uint32_t blocks = cols / block_elems(type), code_bytes = ovk_planes_code_bytes(type);
    if (is_k_type(type)) { /* the blocks as stored, each padded with zeros to whole texels */
        uint32_t stored = block_bytes(type);
        for (uint64_t b = 0; b < (uint64_t)rows * blocks; b++, in += stored, codes += code_bytes) {
            memcpy(codes, in, stored);
            memset(codes + stored, 0, code_bytes - stored);
        }
        return;
    }
    uint8_t *scales = codes + ovk_planes_scale_offset(type, rows, cols);
    uint32_t words = ovk_planes_scale_words(cols);
    /* the block's fp16 fields come first: d, then m for Q4_1 */
    uint32_t stored = block_bytes(type), head = stored - code_bytes;
    memset(scales, 0, (size_t)rows * words * 4);
    for (uint64_t r = 0; r < rows; r++) {
        for (uint32_t b = 0; b < blocks; b++, in += stored) {
            memcpy(codes, in + head, code_bytes);
            codes += code_bytes;
            uint8_t *s = scales + (r * words + b) * 4;
            memcpy(s, in, head); /* d | m << 16, little-endian as stored; m stays 0 without one */
        }
    }
}
