/* The KV-cache layout, shared by C (runtime/) and GLSL (shaders/): page shapes,
 * specialization-constant ids, and the structs the host passes to the kernels. Only macros
 * and structs of 32-bit fields here, so both languages read it; C checks the struct sizes
 * with static_assert (runtime/kv_layout_check.c).
 *
 * Units: a "word" is 32 bits. d = head_dim, G = quantization group size, P = tokens per page,
 * NKV = KV heads. Positions are token indices within a sequence, from 0.
 *
 * INT2 page (one per P tokens of the INT2 region, per layer; the page id is the same for all
 * layers, each layer has its own pool buffer):
 *   K codes  [NKV][P][d/16]  16 two-bit codes per word; element e of a row sits at bits
 *                            2*(e%16)..2*(e%16)+1 of word e/16, so a row's codes are d/4
 *                            contiguous bytes and a thread reads them as d/64 16-byte loads
 *   K params [NKV][P][d/G]   one word per group: low half = fp16 scale, high half = fp16 min
 *   V codes  [NKV][P][d/16]
 *   V params [NKV][P][d/G]
 *   words per page = 2 * NKV * P * (d/16 + d/G)
 *   bits per element = 2 + 32/G  (2.25 at G = 128, 2.5 at G = 64, 3 at G = 32)
 *
 * fp16 page (sink and recent windows in the int2 modes, every token in fp16 mode):
 *   K [NKV][P][d/2]  two fp16 per word (element 2i low, 2i+1 high), already rotated
 *   V [NKV][P][d/2]
 *   words per page = NKV * P * d
 *
 * Where a token lives: position p of a sequence is INT2 when sink <= p < flushed_end, at INT2
 * index j = p - sink: page int2_table[seq][j / P], slot j % P. Every other position is fp16:
 * page f16_table[seq][p / P], slot p % P. Tables hold physical page ids (-1: none).
 */
#ifndef OSCAR_KV_LAYOUT_H
#define OSCAR_KV_LAYOUT_H

#ifdef GL_core_profile
#define KV_U32 uint
#define KV_I32 int
#define KV_F32 float
#else
#include <stdint.h>
#define KV_U32 uint32_t
#define KV_I32 int32_t
#define KV_F32 float
#endif

/* ---- specialization-constant ids (id 0 is always the workgroup size in x) ---- */
#define KV_SPEC_WORKGROUP 0
#define KV_SPEC_HEAD_DIM 1   /* d: 64, 128 or 256 */
#define KV_SPEC_GROUP 2      /* G: 32, 64 or 128, dividing d */
#define KV_SPEC_PAGE 3       /* P: tokens per page */
#define KV_SPEC_N_KV 4       /* NKV: KV heads */
#define KV_SPEC_GQA 5        /* query heads per KV head */
#define KV_SPEC_MODE 6       /* KV_MODE_* below */

#define KV_MODE_FP16 0       /* no INT2 region, no rotation */
#define KV_MODE_INT2 1       /* INT2 without rotation */
#define KV_MODE_HADAMARD 2   /* INT2, R = normalised Walsh-Hadamard */
#define KV_MODE_ROTATED 3    /* INT2, R from a rotation set (OSCAR) */

#define KV_MAX_HEAD_DIM 256

/* Words per page of each kind. */
#define KV_INT2_ROW_CODE_WORDS(d) ((d) / 16)
#define KV_INT2_ROW_PARAM_WORDS(d, G) ((d) / (G))
#define KV_INT2_PAGE_WORDS(nkv, P, d, G) (2 * (nkv) * (P) * ((d) / 16 + (d) / (G)))
#define KV_F16_PAGE_WORDS(nkv, P, d) ((nkv) * (P) * (d))

/* ---- what the host passes ---- */

/* One token to write into an fp16 page (append) or to move from an fp16 page into an INT2
 * page (flush). 16 bytes. */
struct kv_token_slot {
    KV_U32 src_row;   /* append: row of the K/V input [n_rows][NKV][d]; flush: fp16 page id */
    KV_U32 src_slot;  /* flush: slot in that fp16 page; append: the token's position */
    KV_U32 dst_page;  /* append: fp16 page id; flush: INT2 page id */
    KV_U32 dst_slot;  /* slot in dst_page, < P */
};

/* One query row of an attention call: the n_head query heads of one new token. 16 bytes. */
struct kv_attn_row {
    KV_U32 seq;          /* sequence slot: index into the page tables */
    KV_U32 n_visible;    /* positions [0, n_visible) are attended (causal limit) */
    KV_U32 item_begin;   /* this row's work items are [item_begin, item_end) */
    KV_U32 item_end;
};

/* One work item (a split of flash-decoding): a range of one row's tokens in one storage
 * kind, with the row's sequence and the physical ids of the range's first KV_ITEM_PAGES pages
 * (so the kernel starts loading codes without a page-table lookup). Dispatched as one
 * workgroup per (item, KV head). 32 bytes. */
#define KV_ITEM_PAGES 3
struct kv_attn_item {
    KV_U32 row;       /* index into the rows array */
    KV_U32 kind;      /* KV_ITEM_INT2: begin/end are INT2 indices j; KV_ITEM_F16: positions p */
    KV_U32 begin;
    KV_U32 end;       /* exclusive */
    KV_U32 seq;       /* the row's sequence slot (its page tables) */
    KV_I32 page0;     /* physical page of the kind's logical page begin / P (-1: none) */
    KV_I32 page1;     /* ... of logical page begin / P + 1 */
    KV_I32 page2;     /* ... of logical page begin / P + 2 */
};
#define KV_ITEM_INT2 0u
#define KV_ITEM_F16 1u

/* Partial result of one item for one query head: running max m, sum l, and the unnormalised
 * output o[d] (in the rotated basis): [n_items][n_head][d + 4] floats, m at 0, l at 1, two
 * unused, o from 4 (16-byte aligned). */
#define KV_PARTIAL_FLOATS(d) ((d) + 4)

#endif
