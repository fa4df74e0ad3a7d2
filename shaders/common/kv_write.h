/* The KV write path's own specialization-constant ids and push constants (kv_append.comp,
 * kv_flush.comp, rotate_rows.comp), shared by C and GLSL like common/kv_layout.h, whose ids
 * 0..6 these continue. C checks the struct sizes in runtime/kv_ref.c.
 *
 * Spec-constant arrays at the call sites are indexed by id, so a pipeline that uses id 9
 * passes n_spec = 10 with the ids it does not read set to 0 (they are ignored). */
#ifndef OSCAR_KV_WRITE_H
#define OSCAR_KV_WRITE_H

#include "common/kv_layout.h"

#define KV_SPEC_ROT_PER_HEAD 7 /* kv_append: 0 = one R per layer [d][d], 1 = one per KV head [NKV][d][d] */
#define KV_SPEC_INPUT_F16 8    /* kv_append: 0 = fp32 input rows, 1 = fp16 pairs in uint words */
#define KV_SPEC_TRANSPOSE 9    /* rotate_rows: 0 = y = x·R, 1 = y = x·Rᵀ, 2 = y = x (RoPE only) */
#define KV_SPEC_APPEND_PAIRS 10 /* kv_append, rotated modes: the output pairs (columns 2w, 2w + 1 of R) a
                                  workgroup stages R for, dividing d/2 (id 10 is also the attention
                                  kernels', common/attn_push.h, each pipeline filling its own) */
#define KV_SPEC_ROPE 15        /* kv_append (K rows) and rotate_rows: RoPE on load, KV_ROPE_* below
                                  (ids 10..14 are the attention kernels', common/attn_push.h) */
#define KV_SPEC_CENTER_BLOCK 16 /* kv_append, attn_decode, attn_prefill: B > 0, keys centered per block
                                  of B positions (the layer's key-center table, KV_CENTER_* below);
                                  0: no table */
#define KV_SPEC_SINK 17        /* attn_decode with a key-center table: sink tokens (INT2 index j is
                                  position sink + j) */
#define KV_WRITE_N_SPEC 18     /* n_spec that covers every id above */

/* kv_append, rotated modes: the tokens a workgroup of wg threads sums at once (a pass), with
 * `pairs` output pairs a token: as many as its threads hold, 1 to 4. The host sizes its token
 * groups by it (a pass a group on a GPU). */
#define KV_APPEND_PASS_TOKENS(wg, pairs) ((wg) / (pairs) < 1u ? 1u : (wg) / (pairs) > 4u ? 4u : (wg) / (pairs))

/* The layer's centering buffer (binding "Means" of kv_append, attn_decode, attn_prefill), in
 * 32-bit words: [K,V][NKV][d] fp32 centering vectors (zeros unless given), then, with
 * KV_SPEC_CENTER_BLOCK = B > 0, the key-center table [n_blocks][NKV][d/2] fp16 pairs: block b
 * holds c_b·R_K of every KV head, the rotated key center of positions [bB, (b+1)B). kv_append
 * subtracts the token's block center after rotating a K row; attention adds it back to every
 * key it reads (prefill) or adds q·(c_b·R_K) to the block's logits (decode). */
#define KV_CENTER_TABLE_OFF(nkv, d) (2u * (nkv) * (d))

#define KV_ROPE_NONE 0
#define KV_ROPE_NORMAL 1       /* pairs (2i, 2i + 1): llama */
#define KV_ROPE_NEOX 2         /* pairs (i, i + n_rot/2): qwen */

/* kv_append.comp push constants. 8 bytes. */
struct kv_append_push {
    KV_U32 n_tokens;      /* entries of the token-slot list */
    KV_U32 n_rot;         /* with RoPE: rotated dims of a K row (even, <= d), else unused */
};

/* kv_flush.comp push constants. 24 bytes. A clip ratio r >= 1 (or NaN) means no clipping;
 * r < 0 is treated as 0 (tau = min |x|). */
struct kv_flush_push {
    KV_U32 n_tokens;      /* entries of the token-slot list */
    KV_F32 clip_k;        /* r_K of this layer, e.g. 0.96 */
    KV_F32 clip_v;        /* r_V of this layer, e.g. 0.92 */
    KV_U32 key_feedback;  /* K codes by error feedback (ovk_int2_feedback_codes): 0 no,
                           * 1 one matrix for the layer, 2 one per KV head */
    KV_U32 refit;         /* rounds of least-squares refit (oscar_int2_refit_row), 0: none */
    KV_U32 key_metric;    /* the keys' refit metric: 0 identity, 1 one for the layer, 2 one per KV head */
};

/* rotate_rows.comp push constants. 16 bytes. Head h of every row uses rotation
 * h / heads_per_rot: per-layer R -> heads_per_rot = n_heads; per-KV-head R for query heads ->
 * heads_per_rot = GQA ratio; per-KV-head R for KV-head rows -> 1. */
struct kv_rotate_push {
    KV_U32 n_rows;        /* rows of the input [n_rows][n_heads][d] */
    KV_U32 n_heads;       /* heads per row */
    KV_U32 heads_per_rot; /* >= 1 */
    KV_U32 n_rot;         /* with RoPE: rotated dims of a row (even, <= d), else unused */
};

/* kv_append_texel.comp and rotate_rows_texel.comp (the CPU shapes of kv_append and
 * rotate_rows) bind each R buffer whole as a texel buffer and find the layer's matrices at
 * rot_base (in 16-byte texels). 12 and 20 bytes. */
struct kv_append_texel_push {
    KV_U32 n_tokens;
    KV_U32 n_rot;
    KV_U32 rot_base;      /* texel of the layer's R_K in its buffer, and of R_V in its own */
};

struct kv_rotate_texel_push {
    KV_U32 n_rows;
    KV_U32 n_heads;
    KV_U32 heads_per_rot;
    KV_U32 n_rot;
    KV_U32 rot_base;      /* texel of the layer's first R */
};

#endif
