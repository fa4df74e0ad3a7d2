/* Plain-C reference of attention over the paged KV cache (shaders/attn_decode.comp +
 * its merge): each row's softmax(q . K^T * scale) . V over positions
 * [0, n_visible) of its sequence, every K/V row read from the same pools and page tables
 * the GPU uses (layout in shaders/common/kv_layout.h) and dequantized as int2_quant.h
 * defines (x = mn + code * sc in fp32). Accumulation in double. */
#ifndef OSCAR_ATTN_REF_H
#define OSCAR_ATTN_REF_H

#include <stdint.h>

#include "common/kv_layout.h"
#include "oscar/oscar.h"

/* The cache as host arrays. Per-sequence sink/flushed_end say where the INT2 region is
 * (kv_layout.h); in KV_MODE_FP16 every position is fp16 and they are ignored. */
typedef struct attn_ref_cache {
    uint32_t mode;             /* KV_MODE_* */
    uint32_t head_dim;         /* d */
    uint32_t group;            /* G */
    uint32_t page;             /* P, tokens per page */
    uint32_t n_kv;             /* KV heads */
    const uint32_t *int2_pool; /* [n_int2_pages][KV_INT2_PAGE_WORDS] words */
    uint32_t n_int2_pages;
    const uint32_t *f16_pool;  /* [n_f16_pages][KV_F16_PAGE_WORDS] words */
    uint32_t n_f16_pages;
    const int32_t *int2_table; /* [n_seq][max_int2_pages] physical INT2 page ids, -1 none */
    uint32_t max_int2_pages;
    const int32_t *f16_table;  /* [n_seq][max_f16_pages] physical fp16 page ids, -1 none */
    uint32_t max_f16_pages;
    uint32_t n_seq;
    const uint32_t *sink;        /* [n_seq] positions: INT2 region starts here */
    const uint32_t *flushed_end; /* [n_seq] positions: INT2 region ends here (exclusive) */
    /* Key-center table (NULL: none): [n_blocks][n_kv][d/2] fp16 pairs, the rotated center of
     * positions [b·center_block, (b+1)·center_block) that the stored keys lack and attention
     * adds back (kv_write.h). */
    const uint32_t *key_centers;
    uint32_t center_block;
    const uint32_t *means;       /* owner of key_centers in a snapshot (freed with it), else NULL */
    /* 1: INT2 keys (less their key center) are scored as attn_decode_f16 does: q·scale rounded
     * to fp16, each code word's products summed in fp16 in the kernel's order, fp32 beyond; the
     * key center's part and fp16 keys keep fp32 q. 0: fp32 q, double sums. */
    int q_f16_int2;
    /* 1: INT2 keys (less their key center) are scored as the integer-dot variant of
     * attn_decode_chunked does: q·scale (an fp32 product) quantized in blocks of 32 to two
     * levels of int8 (the first as q8_ref.h, the second its remainder at 1/254 of its scale), the
     * scores exact over those values. The key center's part and fp16 keys keep fp32 q. */
    int q_q8_int2;
    /* 1: as attn_prefill.coopmat rounds: q·scale, every K row (with its key center) and every V
     * row in fp16 (clamped to +-65504), the softmax weights exp(s - max) in fp16; sums in double. */
    int f16_inputs;
    /* 1 (with f16_inputs): as attn_decode_cm rounds: INT2 rows enter as their exact codes, so an
     * INT2 key without a key-center table scores exactly scale·Σ qs·c + min·Σ qs per group (qs the
     * fp16 q·scale), and an INT2 value row adds fp16(p·scale)·c + p·min per group (p the fp16
     * weight, the product clamped to +-65504); other rows as f16_inputs. */
    int int2_codes;
} attn_ref_cache;

/* Reads the K and V rows (d floats each, dequantized, rotated basis, K with its key center
 * added back) of position `pos` of
 * sequence `seq`, KV head `kvh`. Fails with OSCAR_ERROR_INVALID_ARGUMENT when a table entry
 * is missing (-1) or out of range. */
oscar_status attn_ref_read_kv(const attn_ref_cache *c, uint32_t seq, uint32_t pos, uint32_t kvh, float *k, float *v);

/* Attention of n_rows query rows.
 * q [n_rows][n_head][d] fp32, rotated; row_seq, row_n_visible [n_rows]; n_head = n_kv * gqa
 * (query head h uses KV head h / gqa); scale multiplies q . k.
 * out [n_rows][n_head][d] fp32: softmax-weighted V, 0 for a row with n_visible = 0. */
oscar_status attn_ref_attention(const attn_ref_cache *c, const float *q, const uint32_t *row_seq,
                                const uint32_t *row_n_visible, uint32_t n_rows, uint32_t n_head, float scale,
                                float *out);

#endif
