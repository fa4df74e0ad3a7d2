/* Push constants of the attention kernels (shaders/attn_decode.comp, shaders/attn_merge.comp),
 * shared by C and GLSL like kv_layout.h: 32-bit fields only, sizes checked in
 * runtime/attn_items.c. */
#ifndef OSCAR_ATTN_PUSH_H
#define OSCAR_ATTN_PUSH_H

#include "common/kv_layout.h"

/* attn_decode: one workgroup per (work item, KV head). 16 bytes. */
struct attn_decode_push {
    KV_U32 n_items;        /* items in the items buffer; the grid may overshoot it */
    KV_U32 max_int2_pages; /* row width of the INT2 page table (entries per sequence) */
    KV_U32 max_f16_pages;  /* row width of the fp16 page table */
    KV_F32 scale;          /* logit scale applied to q (usually 1/sqrt(d)) */
};

/* attn_merge: one workgroup per (row, query head). 8 bytes. */
struct attn_merge_push {
    KV_U32 n_rows;         /* rows in the rows buffer; the grid may overshoot it */
    KV_U32 n_head;         /* query heads = N_KV * GQA */
};

#endif
