/* The GGML tensor type table and plain-C reference (de)quantizers for the weight types the
 * runtime reads from GGUF files.
 *
 * Block layouts follow ggml's ggml-common.h exactly (all fields little-endian, fp16 = IEEE
 * binary16, no padding between fields). A row of n elements of a block type is n / block_size
 * consecutive blocks. For an element index i in a block ("y" = the dequantized value):
 *
 *   F32   4 bytes/element.  F16  2 bytes.  BF16  2 bytes (upper half of an fp32).
 *   Q4_0  32 elements, 18 bytes: { f16 d; u8 qs[16] }
 *         y[j] = d * ((qs[j] & 15) - 8),  y[j+16] = d * ((qs[j] >> 4) - 8),  j < 16
 *   Q4_1  32 elements, 20 bytes: { f16 d; f16 m; u8 qs[16] }
 *         y[j] = d * (qs[j] & 15) + m,    y[j+16] = d * (qs[j] >> 4) + m
 *   Q5_0  32 elements, 22 bytes: { f16 d; u8 qh[4]; u8 qs[16] }, h = qh as a LE u32
 *         y[j] = d * (((qs[j] & 15) | ((h >> j) & 1) << 4) - 16)
 *         y[j+16] = d * (((qs[j] >> 4) | ((h >> (j+16)) & 1) << 4) - 16)
 *   Q5_1  32 elements, 24 bytes: { f16 d; f16 m; u8 qh[4]; u8 qs[16] }: as Q5_0 without the
 *         -16, plus m.
 *   Q8_0  32 elements, 34 bytes: { f16 d; i8 qs[32] }      y[j] = d * qs[j]
 *   Q4_K  256 elements, 144 bytes: { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }
 *         8 sub-blocks of 32 with 6-bit scale sc[s] and min m[s] packed in scales[12]:
 *           s < 4:  sc = scales[s] & 63,   m = scales[s+4] & 63
 *           s >= 4: sc = (scales[s+4] & 15) | (scales[s-4] >> 6) << 4
 *                   m  = (scales[s+4] >> 4) | (scales[s]   >> 6) << 4
 *         For chunk c < 4 (64 elements), l < 32, q = qs[32c + l]:
 *           y[64c + l]      = (d*sc[2c])   * (q & 15) - (dmin*m[2c])
 *           y[64c + 32 + l] = (d*sc[2c+1]) * (q >> 4) - (dmin*m[2c+1])
 *   Q5_K  256 elements, 176 bytes: { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }
 *         as Q4_K, with a fifth bit: low nibble += 16 * ((qh[l] >> 2c) & 1),
 *         high nibble += 16 * ((qh[l] >> (2c+1)) & 1).
 *   Q6_K  256 elements, 210 bytes: { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }
 *         For half h < 2 (128 elements), l < 32, with ql' = ql + 64h, qh' = qh + 32h,
 *         sc' = scales + 8h, k = l / 16:
 *           q1 = (ql'[l]    & 15) | ((qh'[l] >> 0) & 3) << 4    y[128h + l]      = d*sc'[k]   * (q1-32)
 *           q2 = (ql'[l+32] & 15) | ((qh'[l] >> 2) & 3) << 4    y[128h + l + 32] = d*sc'[k+2] * (q2-32)
 *           q3 = (ql'[l]    >> 4) | ((qh'[l] >> 4) & 3) << 4    y[128h + l + 64] = d*sc'[k+4] * (q3-32)
 *           q4 = (ql'[l+32] >> 4) | ((qh'[l] >> 6) & 3) << 4    y[128h + l + 96] = d*sc'[k+6] * (q4-32)
 *
 * The products are evaluated in fp32 in the order written (d*sc first, then times q, then
 * minus the min), the order the GPU shaders must follow to match bit for bit.
 *
 * The quantizers are simple round-to-nearest encoders (not ggml's error-minimizing search).
 * Their fp16 scales are rounded *outward* (so that the largest element never clips), which
 * gives the bound |x - y| <= step / 2 for every element of a type-1 or K-quant block, where
 * step is the block's (sub-block's) effective scale. Q4_0 maps the element of largest
 * magnitude to -8 as ggml does, so elements of the opposite sign may clip: |x - y| <= |d|.
 */
#ifndef OSCAR_GGML_TYPES_H
#define OSCAR_GGML_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* GGML type ids as stored in GGUF tensor infos (ggml.h's enum ggml_type). */
typedef enum ovk_ggml_type {
    OSCAR_GGML_TYPE_F32 = 0,
    OSCAR_GGML_TYPE_F16 = 1,
    OSCAR_GGML_TYPE_Q4_0 = 2,
    OSCAR_GGML_TYPE_Q4_1 = 3,
    /* 4 and 5 (Q4_2, Q4_3) were removed from ggml */
    OSCAR_GGML_TYPE_Q5_0 = 6,
    OSCAR_GGML_TYPE_Q5_1 = 7,
    OSCAR_GGML_TYPE_Q8_0 = 8,
    OSCAR_GGML_TYPE_Q8_1 = 9,
    OSCAR_GGML_TYPE_Q2_K = 10,
    OSCAR_GGML_TYPE_Q3_K = 11,
    OSCAR_GGML_TYPE_Q4_K = 12,
    OSCAR_GGML_TYPE_Q5_K = 13,
    OSCAR_GGML_TYPE_Q6_K = 14,
    OSCAR_GGML_TYPE_Q8_K = 15,
    /* 16..23, 29 and 31.. are the IQ / ternary families: not in this table */
    OSCAR_GGML_TYPE_I8 = 24,
    OSCAR_GGML_TYPE_I16 = 25,
    OSCAR_GGML_TYPE_I32 = 26,
    OSCAR_GGML_TYPE_I64 = 27,
    OSCAR_GGML_TYPE_F64 = 28,
    OSCAR_GGML_TYPE_BF16 = 30,
} ovk_ggml_type;

/* Elements per super-block of the K-quants. */
#define OSCAR_QK_K 256u

typedef struct ovk_ggml_type_info {
    const char *name;        /* "Q4_K" */
    uint32_t block_size;     /* elements per block (1 for plain types) */
    uint32_t type_size;      /* bytes per block */
    int has_dequantize;      /* 1: ovk_ggml_dequantize_row handles it */
    int has_quantize;        /* 1: ovk_ggml_quantize_row handles it */
} ovk_ggml_type_info;

/* Returns the table entry of a type id, or NULL for an id this table does not know (the
 * reader then reports OSCAR_ERROR_UNSUPPORTED_FORMAT). */
const ovk_ggml_type_info *ovk_ggml_type_get(uint32_t type);

/* Returns the type's name, or "unknown" for an id not in the table. */
const char *ovk_ggml_type_name(uint32_t type);

/* Byte size of a row of n elements: sets *bytes and returns OSCAR_OK, or returns
 * OSCAR_ERROR_INVALID_ARGUMENT when the type is unknown, n is not a multiple of the block
 * size, or the size overflows uint64. */
oscar_status ovk_ggml_row_size(uint32_t type, uint64_t n, uint64_t *bytes);

/* Dequantizes a row of n elements (n a multiple of the block size) from `src` (n / block
 * row bytes, any alignment) to y[0..n). Returns INVALID_ARGUMENT for a type without a
 * dequantizer or a bad n. */
oscar_status ovk_ggml_dequantize_row(uint32_t type, const void *src, float *y, uint64_t n);

/* Quantizes x[0..n) (n a multiple of the block size, values finite) into `dst`, which must
 * hold ovk_ggml_row_size(type, n) bytes. Returns INVALID_ARGUMENT for a type without a
 * quantizer, a bad n, or a non-finite input. */
oscar_status ovk_ggml_quantize_row(uint32_t type, const float *x, void *dst, uint64_t n);

#endif
