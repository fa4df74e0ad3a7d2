/* Internal view of the KV cache for the model runtime: record the cache's kernels into a
 * caller's command stream, so a whole forward step is one command buffer. The public API in
 * include/oscar/kv.h wraps these with uploads, one submission per call and timing. */
#ifndef OSCAR_KV_CACHE_H
#define OSCAR_KV_CACHE_H

#include "kv_pages.h"
#include "orthogonal.h" /* ovk_kv_hadamard: the rotation of mode int2-hadamard */
#include "rope.h"
#include "oscar/kv.h"
#include "vk_context.h"

/* Stages what a planned step needs (page tables of changed sequences, token slots, attention
 * rows and items) in a host-visible buffer; the first of the record functions below that runs
 * in the step records the copies into its command stream. Called by oscar_kv_step_begin. The
 * previous step's command buffers must have completed (the staging buffer is reused). */
oscar_status ovk_kv_upload_step(oscar_kv_cache *c);

/* k, v: [n_step_tokens][n_kv_head][head_dim], fp32 (input_f16 = 0) or fp16 pairs (1). */
oscar_status ovk_kv_record_append(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *k,
                                    const ovk_binding *v, int input_f16);
/* q, out: [n_step_tokens][n_head][head_dim] fp32; out is in the model's (unrotated) basis. */
oscar_status ovk_kv_record_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                       const ovk_binding *out);
/* RoPE that the cache's kernels apply on load: to the K rows in the append, to q before the
 * attention (the arithmetic of the rope op, bit for bit). */
typedef struct ovk_kv_rope {
    ovk_binding pos;      /* [n_step_tokens] int32 positions of the step's rows */
    ovk_binding inv_freq; /* [n_rot/2] fp32 radians per position (ovk_rope_inv_freq) */
    ovk_rope_type type;
    uint32_t n_rot;         /* rotated dims of a head, even, <= head_dim */
} ovk_kv_rope;
/* A layer's append and attention in one go, RoPE applied on load (rope may be NULL): q, k, v as
 * the projections left them, out as above. One barrier, then q's preparation (RoPE, and R_K in
 * the rotated modes) and the append side by side, a barrier, the attention: one dispatch and
 * barrier fewer than rope + append + attention, two fewer in the rotated modes. out_q8 (NULL:
 * none; only where ovk_kv_attention_writes_q8) also receives out's int8 blocks, codes then
 * scales (OSCAR_X_Q8_BYTES of n_head * head_dim), as quantize_q8 would make them from out. */
oscar_status ovk_kv_record_append_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                              const ovk_binding *k, const ovk_binding *v, const ovk_binding *out,
                                              const ovk_binding *out_q8, const ovk_kv_rope *rope);
/* Whether this step's attention can write out's int8 blocks itself: a step of one row on the
 * flash-decoding kernels (not the CPU's rows kernel, not prefill), head_dim a multiple of 32. */
int ovk_kv_attention_writes_q8(const oscar_kv_cache *c);
/* Quantizes the step's tokens that leave the recent window, every layer's (no-op when there are
 * none), as dispatches unordered among themselves: each layer's flush needs only that layer's
 * append of the step before it, and the next step's commands after it. With `ordered`, a
 * barrier (after the step's uploads) comes first; without, the caller has recorded one after
 * the step's last append, and the flushes run beside whatever follows it up to the next barrier
 * (the forward pass puts them beside the LM head). */
oscar_status ovk_kv_record_flushes(oscar_kv_cache *c, ovk_cmd *cmd, int ordered);
/* Commits the planned step's bookkeeping (after its command buffer was submitted). */
void ovk_kv_commit_step(oscar_kv_cache *c);
/* Drops the planned step instead (recording or submission failed): pages it reserved go back
 * and every sequence is as before the step. */
void ovk_kv_cancel_step(oscar_kv_cache *c);

/* The page pools of `layer` (INT2 and fp16), for reports of where memory lives. */
void ovk_kv_pools(const oscar_kv_cache *c, uint32_t layer, const ovk_buffer **int2, const ovk_buffer **f16);
/* The variant of the cache's decode attention kernel (ovk_attn_config.variant: "chunked-f16",
 * "coopmat8", ...): the one picked at creation, or during a planned decode step that runs the
 * cooperative-matrix kernel of batched and long steps (ATTN_CM_BATCH_ROWS), that one. */
const char *ovk_kv_attention_variant(const oscar_kv_cache *c);

/* Decode attention on cooperative matrices in this context (ovk_attn_device.coopmat): 1 where
 * attn_decode_cm.coopmat runs (16 x 16 x 16 fp16 matrices), 2 where only its scalar emulation
 * attn_decode_cm_emu.f16 does (fp16 arithmetic), 0 neither. */
int ovk_kv_attn_cm_device(const oscar_context *ctx);
/* The same for attn_decode_cm8 (ovk_attn_device.coopmat8: 16 x 8 x 16 fp16 matrices). */
int ovk_kv_attn_cm8_device(const oscar_context *ctx);

/* Rows (new tokens) of the open step, 0 when none is open. */
uint32_t ovk_kv_step_tokens(const oscar_kv_cache *c);

#endif

