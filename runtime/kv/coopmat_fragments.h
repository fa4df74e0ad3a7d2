/* Where a subgroup's lanes hold the elements of the 16 x 8 x 16 fp16 cooperative matrices of
 * decode attention (shaders/coopmat_fragments.coopmat.comp reads it on the device). The
 * specification leaves that order to the implementation; attn_decode_cm8r builds its A operands
 * from INT2 codes in registers, in one such order, and runs only where the device holds the
 * matrices that way. */
#ifndef OSCAR_COOPMAT_FRAGMENTS_H
#define OSCAR_COOPMAT_FRAGMENTS_H

#include "vk_context.h"

#define OVK_FRAGMENT_LANES_MAX 128u

/* Each lane's components of A (16 x 16 fp16), B (16 x 8 fp16) and the accumulator (16 x 8 fp32),
 * as the index r * columns + c of the element each holds (-1 past a matrix's length). */
typedef struct ovk_cm8_fragments {
    uint32_t lanes;          /* the subgroup the probe ran in */
    uint32_t length[3];      /* components a lane holds of A, B and the accumulator */
    int16_t at[OVK_FRAGMENT_LANES_MAX][3][8];
} ovk_cm8_fragments;

/* Runs the probe on ctx's own stream (not recording) in one workgroup of the largest subgroup
 * size. MISSING_FEATURE where the device has no 16 x 8 x 16 fp16 products or this build lacks
 * the probe. */
oscar_status ovk_cm8_fragments_read(oscar_context *ctx, ovk_cm8_fragments *out);

/* 1 when f is the order attn_decode_cm8r assumes: 32 lanes, 8 components of A a lane, lane L
 * (g = L / 4, t = L % 4) holding A's (row, column) (g, 2t), (g, 2t + 1), (g, 2t + 8),
 * (g, 2t + 9), then the same columns of row g + 8 (NVIDIA's order). Only A's order matters to
 * the kernel: B and the accumulator go through shared memory. */
int ovk_cm8_fragments_match(const ovk_cm8_fragments *f);

/* ctx->cm8_fragments, reading it the first time (a failed read counts as no). */
int ovk_cm8_fragments_known(oscar_context *ctx);

#endif
