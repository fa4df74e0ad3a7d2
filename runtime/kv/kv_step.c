/* The paged KV cache's steps: sequences, planning a step (pages, attention items or prefill
 * tiles), staging its uploads, recording append / attention / flush into a command stream, and
 * the public step API that wraps them with one timed submission per call. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/q8_layout.h"
#include "half.h"
#include "kv_cache_impl.h"

/* ---- sequences ----------------------------------------------------------------------------- */
OSCAR_API oscar_status oscar_kv_seq_add(oscar_kv_cache *c, int32_t *seq)
{
    if (!c || !seq) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_add: NULL argument");
    return kv_book_seq_add(&c->book, seq);
}

OSCAR_API oscar_status oscar_kv_seq_free(oscar_kv_cache *c, int32_t seq)
{
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_free: NULL cache");
    return kv_book_seq_free(&c->book, seq);
}

OSCAR_API oscar_status oscar_kv_seq_length(const oscar_kv_cache *c, int32_t seq, uint32_t *len)
{
    if (!c || !len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_length: NULL argument");
    if (seq < 0 || (uint32_t)seq >= c->p.max_sequences || !c->book.seqs[seq].active)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "sequence %d does not exist", (int)seq);
    *len = c->book.seqs[seq].len;
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_kv_seq_fork(oscar_kv_cache *c, int32_t src, int32_t *dst)
{
    oscar_status st = OSCAR_OK;
    if (!c || !dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_fork: NULL argument");
    if (c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "cannot fork inside a step");
    OSCAR_TRY(kv_book_seq_fork(&c->book, src, dst));
    if (c->book.n_copies == 0) return OSCAR_OK;
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    for (uint32_t i = 0; i < c->book.n_copies; i++) {
        const kv_page_copy *pc = &c->book.copies[i];
        uint64_t bytes = pc->kind == KV_ITEM_INT2 ? c->int2_page_bytes : c->f16_page_bytes;
        for (uint32_t l = 0; l < c->p.n_layer; l++) {
            const ovk_buffer *pool = pc->kind == KV_ITEM_INT2 ? &c->int2_pool[l] : &c->f16_pool[l];
            ovk_cmd_copy(c->ctx, &c->cmd, pool, pc->src * bytes, pool, pc->dst * bytes, bytes);
        }
    }
    st = ovk_cmd_submit_wait(c->ctx, &c->cmd);
    if (st != OSCAR_OK) kv_book_seq_free(&c->book, *dst);
fail:
    return st;
}

/* ---- steps --------------------------------------------------------------------------------- */
uint32_t ovk_kv_step_tokens(const oscar_kv_cache *c) { return c->book.plan.active ? c->book.plan.n_tokens : 0; }

/* A prefill step (some sequence has more than one new row) with attn_prefill available: its
 * rows (sequence, causal limit) and tiles, *done = 1; with attn_prefill.coopmat, long walks
 * split by ovk_attn_split_tiles (the rows of split tiles then have items, n_pf_items in all).
 * Otherwise n_tiles = 0 and *done = 0 (items as usual). h_seq_sink, h_seq_fe and h_row_vis are
 * filled. */
static oscar_status plan_prefill(oscar_kv_cache *c, int *done)
{
    oscar_status st = OSCAR_OK;
    const kv_step_plan *pl = &c->book.plan;
    *done = 0;
    c->n_tiles = c->n_pf_items = 0;
    int prefill = 0;
    for (uint32_t r = 1; r < pl->n_tokens && !prefill; r++) prefill = pl->row_seq[r] == pl->row_seq[r - 1];
    if (!c->pl_prefill || !prefill) return OSCAR_OK;
    for (uint32_t r = 0; r < pl->n_tokens; r++) c->h_rows[r] = (struct kv_attn_row){ pl->row_seq[r], c->h_row_vis[r], 0, 0 };
    uint32_t n_walks = 0;
    OSCAR_TRY(ovk_attn_build_tiles(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, c->pf_rows,
                                     c->h_walks, c->p.max_step_tokens, &n_walks));
    OSCAR_TRY(ovk_attn_split_tiles(c->h_walks, n_walks, c->pf_chunk, c->p.n_kv_head, c->pf_split_below, c->pf_target,
                                     c->pf_split_chunks, c->h_rows, c->h_tiles, c->tiles_cap, &c->n_tiles, &c->n_pf_items));
    if (c->n_pf_items > c->pf_items_cap) /* cannot happen (attn_tiles.h's bound): a planning bug */
        OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "prefill attention: %u partials, room for %u", c->n_pf_items, c->pf_items_cap);
    ovk_kv_zone_tiles(c, c->h_tiles_z);
    c->n_items = 0;
    *done = 1;
fail:
    return st;
}

/* Builds the attention rows and items of the planned step (pre-step INT2 boundary). */
static oscar_status plan_attention(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    const kv_step_plan *pl = &c->book.plan;
    uint64_t visible = 0;
    for (uint32_t s = 0; s < c->p.max_sequences; s++) {
        const kv_seq *q = &c->book.seqs[s];
        c->h_seq_sink[s] = c->book.cfg.sink;
        c->h_seq_fe[s] = q->flushed_end;
    }
    for (uint32_t r = 0; r < pl->n_tokens; r++) {
        c->h_row_vis[r] = pl->row_pos[r] + 1;
        visible += c->h_row_vis[r];
    }
    int prefill;
    c->cm_step = 0;
    OSCAR_TRY(plan_prefill(c, &prefill));
    if (prefill) return OSCAR_OK;
    /* many rows at short contexts, or long contexts: the cooperative-matrix kernel, with its own
     * split sizing */
    c->cm_step = c->pl_decode_cm && ovk_attn_cm_step(pl->n_tokens, visible, c->cm_batch_context, c->cm_long_context);
    uint32_t target_groups = c->cm_step ? c->cm_target_groups : c->target_groups;
    uint32_t min_split_tokens = c->cm_step ? c->cm_min_split : c->min_split;
    /* split so the call has about target_groups workgroups, and at most ATTN_MAX_ITEMS items
     * (their partials) even when a prefill chunk's rows each see a long context */
    uint64_t split = visible * c->p.n_kv_head / target_groups;
    uint64_t min_split = (visible + ATTN_MAX_ITEMS / 2 - 1) / (ATTN_MAX_ITEMS / 2);
    if (split < min_split) split = min_split;
    split = (split + ATTN_MIN_SPLIT - 1) / ATTN_MIN_SPLIT * ATTN_MIN_SPLIT;
    if (split < min_split_tokens) split = min_split_tokens;
    if (split > UINT32_MAX / 2) split = UINT32_MAX / 2;
    uint32_t n_items = 0;
    OSCAR_TRY(ovk_attn_build_items(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, (uint32_t)split,
                                     NULL, NULL, 0, &n_items));
    if (ovk_kv_n_zones(c) > 1) n_items += ovk_kv_n_zones(c) * (c->item_align - 1); /* each zone's group aligned */
    if (n_items > c->items_cap) { /* grow (rarely: the split keeps the count near the target) */
        uint32_t cap = n_items + n_items / 2;
        ovk_buffer_destroy(c->ctx, &c->items);
        ovk_buffer_destroy(c->ctx, &c->partials);
        free(c->h_items), free(c->h_items_z);
        c->items_cap = 0;
        c->h_items = malloc((size_t)cap * sizeof *c->h_items);
        c->h_items_z = malloc((size_t)cap * sizeof *c->h_items_z);
        if (!c->h_items || !c->h_items_z) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        OSCAR_TRY(ovk_buffer_create(c->ctx, (uint64_t)cap * sizeof *c->h_items, OSCAR_BUFFER_DEVICE, &c->items));
        OSCAR_TRY(ovk_buffer_create(c->ctx, (uint64_t)cap * c->p.n_head * KV_PARTIAL_FLOATS(c->p.head_dim) * 4,
                                      OSCAR_BUFFER_DEVICE, &c->partials));
        c->items_cap = cap;
    }
    OSCAR_TRY(ovk_attn_build_items(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, (uint32_t)split,
                                     c->h_rows, c->h_items, c->items_cap, &c->n_items));
    for (uint32_t i = 0; i < c->n_items; i++) { /* the items' first page ids, from this step's tables */
        struct kv_attn_item *it = &c->h_items[i];
        const kv_seq *q = &c->book.seqs[it->seq];
        ovk_attn_item_pages(it, c->p.page_tokens, it->kind == KV_ITEM_INT2 ? q->int2_pages : q->f16_pages, c->book.max_pages);
    }
    ovk_kv_zone_items(c, c->h_items_z);
fail:
    return st;
}

/* Bytes the staging buffer needs for a step with the current item capacity. */
static uint64_t staging_bytes(const oscar_kv_cache *c)
{
    return 2ull * c->p.max_sequences * c->book.max_pages * 4 + c->slots.size + c->rows.size +
           (uint64_t)c->items_cap * sizeof(struct kv_attn_item) + c->tiles.size;
}

/* Queues `bytes` from `src` to dst+offset through the staging buffer at *at. */
static void stage(oscar_kv_cache *c, uint64_t *at, const ovk_buffer *dst, uint64_t offset, const void *src, uint64_t bytes)
{
    if (bytes == 0) return;
    memcpy((char *)c->staging.mapped + *at, src, bytes);
    c->copies[c->n_copies] = (VkBufferCopy){ .srcOffset = *at, .dstOffset = offset, .size = bytes };
    c->copy_dst[c->n_copies++] = dst;
    *at += (bytes + 15) & ~15ull;
}

oscar_status ovk_kv_upload_step(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    kv_book *b = &c->book;
    const kv_step_plan *pl = &b->plan;
    uint32_t need = 2 * c->p.max_sequences + 5;
    if (c->staging.size < staging_bytes(c) + 16 * need) {
        ovk_buffer_destroy(c->ctx, &c->staging);
        OSCAR_TRY(ovk_buffer_create(c->ctx, staging_bytes(c) + 16 * need, OSCAR_BUFFER_STAGING, &c->staging));
    }
    if (c->max_copies < need) {
        free(c->copies), free(c->copy_dst);
        c->copies = malloc(need * sizeof *c->copies);
        c->copy_dst = malloc(need * sizeof *c->copy_dst);
        if (!c->copies || !c->copy_dst) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        c->max_copies = need;
    }
    uint64_t at = 0, row_bytes = (uint64_t)b->max_pages * 4;
    if (c->n_copies) /* the last step's uploads were never recorded: send every table again */
        for (uint32_t s = 0; s < c->p.max_sequences; s++) b->seqs[s].dirty = 1;
    c->n_copies = 0;
    for (uint32_t s = 0; s < c->p.max_sequences; s++) {
        kv_seq *q = &b->seqs[s];
        if (!q->dirty) continue;
        if (ovk_kv_n_zones(c) == 1) { /* ids are zone-local as they are */
            stage(c, &at, &c->int2_table, s * row_bytes, q->int2_pages, row_bytes);
            stage(c, &at, &c->f16_table, s * row_bytes, q->f16_pages, row_bytes);
        } else {
            for (uint32_t k = 0; k < b->max_pages; k++) c->h_table[k] = ovk_kv_local_page(c, KV_ITEM_INT2, q->int2_pages[k]);
            stage(c, &at, &c->int2_table, s * row_bytes, c->h_table, row_bytes);
            for (uint32_t k = 0; k < b->max_pages; k++) c->h_table[k] = ovk_kv_local_page(c, KV_ITEM_F16, q->f16_pages[k]);
            stage(c, &at, &c->f16_table, s * row_bytes, c->h_table, row_bytes);
        }
        q->dirty = 0;
    }
    uint32_t n_append = ovk_kv_zone_slots(c, pl->append, pl->n_tokens, 0, c->z_append, c->h_slots);
    stage(c, &at, &c->slots, 0, c->h_slots, n_append * sizeof *c->h_slots);
    uint32_t n_flush = ovk_kv_zone_slots(c, pl->flush, pl->n_flush, 1, c->z_flush, c->h_slots + c->flush_offset);
    stage(c, &at, &c->slots, (uint64_t)c->flush_offset * sizeof *c->h_slots, c->h_slots + c->flush_offset,
          n_flush * sizeof *c->h_slots);
    stage(c, &at, &c->rows, 0, c->h_rows, pl->n_tokens * sizeof *c->h_rows);
    stage(c, &at, &c->items, 0, c->h_items, c->n_items * sizeof *c->h_items);
    stage(c, &at, &c->tiles, 0, c->h_tiles, c->n_tiles * sizeof *c->h_tiles);
fail:
    return st;
}

/* Records the staged uploads of the step (once) ahead of the first kernel that reads them. */
static void record_uploads(oscar_kv_cache *c, ovk_cmd *cmd)
{
    if (c->n_copies == 0) return;
    for (uint32_t i = 0; i < c->n_copies; i++)
        c->ctx->vk.vkCmdCopyBuffer(cmd->cb, c->staging.buffer, c->copy_dst[i]->buffer, 1, &c->copies[i]);
    c->n_copies = 0;
}

OSCAR_API oscar_status oscar_kv_step_begin(oscar_kv_cache *c, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new)
{
    oscar_status st = OSCAR_OK;
    if (!c || !seqs || !n_new) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_step_begin: NULL argument");
    OSCAR_TRY(kv_book_step_plan(&c->book, n_seqs, seqs, n_new));
    c->ext_flushed = 0;
    /* the last step's command buffers have completed (oscar/vulkan.h): their sets are free */
    if ((st = ovk_cmd_reset_sets(c->ctx, &c->ext_cmd)) != OSCAR_OK) {
        ovk_kv_cancel_step(c);
        return st;
    }
    if ((st = plan_attention(c)) != OSCAR_OK || (st = ovk_kv_upload_step(c)) != OSCAR_OK) ovk_kv_cancel_step(c);
fail:
    return st;
}

static oscar_status check_step(const oscar_kv_cache *c, uint32_t layer, const char *what)
{
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "%s outside a step (call oscar_kv_step_begin)", what);
    if (layer >= c->p.n_layer) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: layer %u of %u", what, layer, c->p.n_layer);
    return OSCAR_OK;
}

/* KV_SPEC_ROPE of a RoPE description (NULL: none). */
static uint32_t rope_spec(const ovk_kv_rope *rope)
{
    if (!rope) return KV_ROPE_NONE;
    return rope->type == OSCAR_ROPE_NEOX ? KV_ROPE_NEOX : KV_ROPE_NORMAL;
}

/* The layer's centering vectors, [K,V][n_kv][d] fp32, and key-center table (kv_append,
 * attn_decode, attn_prefill). */
static ovk_binding mean_binding(oscar_kv_cache *c, uint32_t layer)
{
    uint64_t bytes = 4ull * c->means_words;
    ovk_binding b = { &c->means, layer * bytes, bytes };
    return b;
}

/* Workgroups of WG_TEXEL covering n invocations, the texel shapes' grid (ovk_attn_grid). */
static uint32_t texel_groups(uint64_t n) { return (uint32_t)((n + WG_TEXEL - 1) / WG_TEXEL); }

/* The append dispatch (no barrier): K rows get RoPE on load when rope is given (fp32 rows only). */
static oscar_status dispatch_append(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *k,
                                    const ovk_binding *v, int input_f16, const ovk_kv_rope *rope)
{
    ovk_pipeline *p = NULL;
    if (input_f16 && rope) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: RoPE on load needs fp32 rows");
    if (input_f16) {
        oscar_status st = ovk_kv_append_pipeline(c, KV_SPEC_INPUT_F16, 1, &p);
        if (st != OSCAR_OK) return st;
    } else {
        ovk_pipeline **slot = rope ? &c->pl_append_rope[rope_spec(rope)] : &c->pl_append;
        if (!*slot) {
            oscar_status st = ovk_kv_append_pipeline(c, rope ? KV_SPEC_ROPE : 0, rope ? rope_spec(rope) : 0, slot);
            if (st != OSCAR_OK) return st;
        }
        p = *slot;
    }
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    if (c->write_texel) { /* R_K and R_V bound whole (one texel view each), the layer's at rot_base */
        ovk_binding slots = { &c->slots, 0, c->book.plan.n_tokens * sizeof(struct kv_token_slot) };
        ovk_binding b[9] = { *k, *v, { &c->rot_k, 0, 0 }, { &c->rot_v, 0, 0 }, slots, { &c->f16_pool[layer], 0, 0 },
                               mean_binding(c, layer), rope ? rope->pos : slots, rope ? rope->inv_freq : slots };
        struct kv_append_texel_push push = { c->book.plan.n_tokens, rope ? rope->n_rot : 0, (uint32_t)(layer * rot_bytes / 16) };
        uint32_t groups[3];
        ovk_attn_grid(texel_groups((uint64_t)push.n_tokens * c->p.n_kv_head), 2, groups); /* y: K, V */
        return ovk_cmd_dispatch(c->ctx, cmd, p, b, &push, groups);
    }
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) { /* each zone's slots into its window of the fp16 pool */
        uint32_t n = c->z_append[z].count;
        if (n == 0) continue;
        ovk_binding slots = { &c->slots, c->z_append[z].first * sizeof(struct kv_token_slot), n * sizeof(struct kv_token_slot) };
        ovk_binding b[9] = { *k, *v, { &c->rot_k, layer * rot_bytes, rot_bytes }, { &c->rot_v, layer * rot_bytes, rot_bytes },
                               slots, ovk_kv_zone_pool(c, KV_ITEM_F16, layer, z), mean_binding(c, layer),
                               rope ? rope->pos : slots, rope ? rope->inv_freq : slots }; /* unread without RoPE */
        struct kv_append_push push = { n, rope ? rope->n_rot : 0 };
        uint32_t groups[3] = { n < 65535 ? n : 65535, c->p.n_kv_head, 2 };
        if (c->mode >= KV_MODE_HADAMARD) { /* column blocks of R times token groups (a CPU device: a
                                              * group a token, which keeps lavapipe's loops short);
                                              * blocks <= KV_MAX_HEAD_DIM / 2 (append_pairs >= 1) */
            static_assert((KV_MAX_HEAD_DIM / 2) * APPEND_TOKEN_GROUPS <= 65535, "kv_append's grid exceeds 65535 groups");
            uint32_t blocks = c->p.head_dim / 2 / c->append_pairs;
            /* on a GPU a group takes a pass of tokens together, so that a short step loads each
             * block of R once a pass */
            int cpu = c->ctx->info.type == OSCAR_DEVICE_CPU;
            uint32_t per = KV_APPEND_PASS_TOKENS(WG_APPEND_ROT, c->append_pairs);
            uint32_t cap = cpu ? 65535 / blocks : APPEND_TOKEN_GROUPS;
            uint32_t want = cpu ? n : (n + per - 1) / per;
            groups[0] = blocks * (want < cap ? want : cap);
        }
        oscar_status st = ovk_cmd_dispatch(c->ctx, cmd, p, b, &push, groups);
        if (st != OSCAR_OK) return st;
    }
    return OSCAR_OK;
}

oscar_status ovk_kv_record_append(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *k,
                                    const ovk_binding *v, int input_f16)
{
    oscar_status st = check_step(c, layer, "append");
    if (st != OSCAR_OK) return st;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    return dispatch_append(c, cmd, layer, k, v, input_f16, NULL);
}

/* attn_prefill over the step's tiles: one workgroup per (tile, KV head), o·R_Vᵀ (+ μ_V) included;
 * where walks were split, a barrier and attn_prefill_merge over the step's rows (one workgroup
 * per (row, KV head); rows of whole walks return at once), which writes the split rows. */
static oscar_status record_prefill(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                   const ovk_binding *out)
{
    oscar_status st = OSCAR_OK;
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    ovk_binding rot_v = { &c->rot_v, layer * rot_bytes, rot_bytes }, rows = { &c->rows, 0, 0 };
    ovk_binding partials = { &c->pf_partials, 0, 0 };
    uint32_t groups[3];
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) { /* each zone's tiles */
        const kv_zone_range *r = &c->z_tiles[z];
        if (r->count == 0) continue;
        struct attn_prefill_push pp = { r->count, c->book.max_pages, c->book.max_pages, c->p.attn_scale };
        /* binding 10 (partials): attn_prefill.coopmat only (one zone: walks never split across zones) */
        ovk_binding b[11] = { *q, rows,
                                { &c->tiles, r->first * sizeof(struct kv_attn_tile), r->count * sizeof(struct kv_attn_tile) },
                                ovk_kv_zone_pool(c, KV_ITEM_INT2, layer, z), ovk_kv_zone_pool(c, KV_ITEM_F16, layer, z),
                                { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 }, rot_v, *out, mean_binding(c, layer), partials };
        ovk_attn_grid(r->count, c->p.n_kv_head, groups);
        OSCAR_TRY(ovk_cmd_dispatch(c->ctx, cmd, c->pl_prefill, b, &pp, groups));
    }
    if (c->n_pf_items == 0) return OSCAR_OK;
    ovk_cmd_barrier(c->ctx, cmd);
    /* decode attention's interface: q, the items and the counters unread (the rows bound there) */
    uint32_t n_rows = c->book.plan.n_tokens;
    struct attn_decode_push mp = { n_rows, c->book.max_pages, c->book.max_pages, c->p.attn_scale };
    ovk_binding m[12] = { *q, rows, rows, { &c->int2_pool[layer], 0, 0 }, { &c->f16_pool[layer], 0, 0 },
                            { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 }, partials, rot_v, *out, rows,
                            mean_binding(c, layer) };
    ovk_attn_grid(n_rows, c->p.n_kv_head, groups);
    st = ovk_cmd_dispatch(c->ctx, cmd, c->pl_prefill_merge, m, &mp, groups);
fail:
    return st;
}

/* q_out = RoPE(q) (when rope is given), times R_K in the rotated modes: rotate_rows, no barrier.
 * *done: 1 when it recorded that (attention then reads q_out), 0 when there was nothing to do
 * (no rotation, no RoPE: attention reads q). */
static oscar_status dispatch_q_prep(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                    const ovk_kv_rope *rope, const ovk_binding *q_out, int *done)
{
    uint32_t n_rows = c->book.plan.n_tokens, d = c->p.head_dim, H = c->p.n_head;
    uint64_t rot_bytes = (uint64_t)c->n_rot * d * d * 4;
    int rotated = c->mode == KV_MODE_HADAMARD || c->mode == KV_MODE_ROTATED;
    *done = 0;
    if (!rotated && !rope) return OSCAR_OK;
    ovk_pipeline **slot = rope ? &c->pl_q_prep[rope_spec(rope)] : &c->pl_rot;
    if (!*slot) {
        oscar_status st = ovk_kv_rotate_pipeline(c, rope && !rotated ? 2 /* RoPE alone */ : 0, rope ? rope_spec(rope) : KV_ROPE_NONE, slot);
        if (st != OSCAR_OK) return st;
    }
    ovk_pipeline *p = *slot;
    /* query head h uses the R of its KV head */
    struct kv_rotate_push rp = { n_rows, H, c->n_rot > 1 ? c->gqa : H, rope ? rope->n_rot : 0 };
    ovk_binding rk = { &c->rot_k, layer * rot_bytes, rot_bytes };
    ovk_binding b[5] = { *q, rk, *q_out, rope ? rope->pos : rk, rope ? rope->inv_freq : rk }; /* unread without RoPE */
    *done = 1;
    if (c->write_texel) { /* R bound whole, the layer's at rot_base */
        struct kv_rotate_texel_push tp = { rp.n_rows, rp.n_heads, rp.heads_per_rot, rp.n_rot, (uint32_t)(layer * rot_bytes / 16) };
        b[1] = (ovk_binding){ &c->rot_k, 0, 0 };
        uint32_t groups[3];
        ovk_attn_grid(texel_groups((uint64_t)n_rows * H), 1, groups);
        return ovk_cmd_dispatch(c->ctx, cmd, p, b, &tp, groups);
    }
    uint32_t groups[3] = { n_rows * H < 65535 ? n_rows * H : 65535, 1, 1 };
    return ovk_cmd_dispatch(c->ctx, cmd, p, b, &rp, groups);
}

int ovk_kv_attention_writes_q8(const oscar_kv_cache *c)
{
    return c->book.plan.active && c->book.plan.n_tokens == 1 && c->n_tiles == 0 && !c->attn.rows && c->p.head_dim % 32 == 0;
}

/* The attention dispatch over q as attention reads it (RoPE'd, rotated): attn_prefill in a
 * prefill step, else flash-decoding, whose last workgroup of each (row, KV head) merges and
 * applies R_Vᵀ (and with out_q8 writes out's int8 blocks). No barrier. */
static oscar_status dispatch_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                       const ovk_binding *out, const ovk_binding *out_q8)
{
    if (out_q8 && !ovk_kv_attention_writes_q8(c))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention: int8 output only from a one-row decode step");
    if (c->n_tiles) return record_prefill(c, cmd, layer, q, out);
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    if (c->attn.rows) { /* R_V bound whole (one texel view for every layer), the layer's by rot_base */
        uint32_t n_rows = c->book.plan.n_tokens;
        struct attn_rows_push rp = { n_rows, c->book.max_pages, c->book.max_pages, c->p.attn_scale,
                                     (uint32_t)(layer * rot_bytes / 16) };
        ovk_binding b[12] = { *q, { &c->rows, 0, 0 }, { &c->items, 0, 0 }, { &c->int2_pool[layer], 0, 0 },
                                { &c->f16_pool[layer], 0, 0 }, { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 },
                                { &c->partials, 0, 0 }, { &c->rot_v, 0, 0 }, *out, { &c->counters, 0, 0 },
                                mean_binding(c, layer) }; /* partials and counters unread */
        uint32_t groups[3];
        ovk_attn_grid((uint32_t)(((uint64_t)n_rows * c->p.n_head + c->attn.wg - 1) / c->attn.wg), 1, groups);
        return ovk_cmd_dispatch(c->ctx, cmd, c->pl_decode, b, &rp, groups);
    }
    struct attn_decode_push dp = { c->n_items, c->book.max_pages, c->book.max_pages, c->p.attn_scale, out_q8 != NULL };
    /* out's int8 blocks as two bindings, codes and scales (OSCAR_X_Q8_BYTES); out again where unwritten */
    uint32_t q_dim = c->p.n_head * c->p.head_dim;
    ovk_binding q8c = out_q8 ? (ovk_binding){ out_q8->buffer, out_q8->offset, q_dim } : *out;
    ovk_binding q8s = out_q8 ? (ovk_binding){ out_q8->buffer, out_q8->offset + OSCAR_X_Q8_SCALES(q_dim), q_dim / 8u } : *out;
    oscar_status st;
    if (out_q8 && (st = ovk_binding_check(out_q8, OSCAR_X_Q8_BYTES(q_dim), "attention", "out_q8")) != OSCAR_OK) return st;
    uint64_t part_bytes = (uint64_t)c->p.n_head * KV_PARTIAL_FLOATS(c->p.head_dim) * 4;
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) { /* each zone's items (their rows' ranges are relative to them) */
        const kv_zone_range *r = &c->z_items[z];
        if (r->count == 0) continue;
        dp.n_items = r->count;
        ovk_binding b[14] = { *q, { &c->rows, 0, 0 },
                                { &c->items, r->first * sizeof(struct kv_attn_item), r->count * sizeof(struct kv_attn_item) },
                                ovk_kv_zone_pool(c, KV_ITEM_INT2, layer, z), ovk_kv_zone_pool(c, KV_ITEM_F16, layer, z),
                                { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 },
                                { &c->partials, r->first * part_bytes, r->count * part_bytes },
                                { &c->rot_v, layer * rot_bytes, rot_bytes }, *out, { &c->counters, 0, 0 },
                                mean_binding(c, layer), q8c, q8s };
        uint32_t groups[3];
        ovk_attn_grid(r->count, c->p.n_kv_head, groups);
        if ((st = ovk_cmd_dispatch(c->ctx, cmd, c->cm_step ? c->pl_decode_cm : c->pl_decode, b, &dp, groups)) != OSCAR_OK)
            return st;
    }
    return OSCAR_OK;
}

oscar_status ovk_kv_record_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                       const ovk_binding *out)
{
    oscar_status st = check_step(c, layer, "attention");
    if (st != OSCAR_OK) return st;
    ovk_binding q_rot = { &c->q_rot, 0, (uint64_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4 };
    int prepared = 0;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    OSCAR_TRY(dispatch_q_prep(c, cmd, layer, q, NULL, &q_rot, &prepared));
    if (prepared) ovk_cmd_barrier(c->ctx, cmd);
    st = dispatch_attention(c, cmd, layer, prepared ? &q_rot : q, out, NULL);
fail:
    return st;
}

oscar_status ovk_kv_record_append_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                              const ovk_binding *k, const ovk_binding *v, const ovk_binding *out,
                                              const ovk_binding *out_q8, const ovk_kv_rope *rope)
{
    oscar_status st = check_step(c, layer, "append");
    if (st != OSCAR_OK) return st;
    if (rope && (rope->n_rot % 2 || rope->n_rot > c->p.head_dim))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: RoPE over %u of %u dims (must be even and fit)",
                           rope->n_rot, c->p.head_dim);
    ovk_binding q_rot = { &c->q_rot, 0, (uint64_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4 };
    int prepared = 0;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    OSCAR_TRY(dispatch_q_prep(c, cmd, layer, q, rope, &q_rot, &prepared));
    OSCAR_TRY(dispatch_append(c, cmd, layer, k, v, 0, rope));
    ovk_cmd_barrier(c->ctx, cmd);
    st = dispatch_attention(c, cmd, layer, prepared ? &q_rot : q, out, out_q8);
fail:
    return st;
}

oscar_status ovk_kv_record_flushes(oscar_kv_cache *c, ovk_cmd *cmd, int ordered)
{
    oscar_status st = OSCAR_OK;
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "flush outside a step (call oscar_kv_step_begin)");
    if (c->book.plan.n_flush == 0) return OSCAR_OK;
    if (!ordered && c->n_copies)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "flush: the step's uploads are not recorded yet, so a barrier must come first");
    uint64_t fb_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    if (ordered) {
        record_uploads(c, cmd);
        ovk_cmd_barrier(c->ctx, cmd);
    }
    /* each layer reads and writes its own pools: no barrier among them */
    for (uint32_t layer = 0; layer < c->p.n_layer; layer++) {
        ovk_binding fb = c->key_feedback ? (ovk_binding){ &c->feedback, layer * fb_bytes, fb_bytes } : (ovk_binding){ &c->feedback, 0, 0 };
        ovk_binding mb = c->key_metric ? (ovk_binding){ &c->metric, layer * fb_bytes, fb_bytes } : (ovk_binding){ &c->metric, 0, 0 };
        for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) { /* each zone's slots between its windows of the two pools */
            uint32_t n = c->z_flush[z].count;
            if (n == 0) continue;
            struct kv_flush_push push = { n, c->clip_k[layer], c->clip_v[layer], c->key_feedback, c->refit_rounds, c->key_metric };
            uint32_t groups[3] = { n < 65535 ? n : 65535, c->p.n_kv_head, 2 };
            ovk_binding b[5] = { { &c->slots, ((uint64_t)c->flush_offset + c->z_flush[z].first) * sizeof(struct kv_token_slot),
                                   n * sizeof(struct kv_token_slot) },
                                 ovk_kv_zone_pool(c, KV_ITEM_F16, layer, z), ovk_kv_zone_pool(c, KV_ITEM_INT2, layer, z), fb, mb };
            OSCAR_TRY(ovk_cmd_dispatch(c->ctx, cmd, c->pl_flush, b, &push, groups));
        }
    }
fail:
    return st;
}

void ovk_kv_commit_step(oscar_kv_cache *c) { kv_book_step_commit(&c->book); }

void ovk_kv_cancel_step(oscar_kv_cache *c)
{
    const kv_step_plan *pl = &c->book.plan;
    if (!pl->active) return;
    for (uint32_t i = 0; i < pl->n_seqs; i++) c->book.seqs[pl->seqs[i]].dirty = 1; /* tables back as they were */
    kv_book_step_cancel(&c->book);
}

/* ---- public step API: one submission per call, timed ---------------------------------------- */
static oscar_status submit_timed(oscar_kv_cache *c, int t0)
{
    int t1 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    oscar_status st = ovk_cmd_submit_wait(c->ctx, &c->cmd);
    double ns = 0;
    if (st == OSCAR_OK && t0 >= 0 && t1 >= 0 && ovk_cmd_elapsed_ns(c->ctx, &c->cmd, t0, t1, &ns) == OSCAR_OK)
        c->last_gpu_ms = ns * 1e-6;
    return st;
}

OSCAR_API oscar_status oscar_kv_append(oscar_kv_cache *c, uint32_t layer, const float *k, const float *v)
{
    oscar_status st = OSCAR_OK;
    if (!c || !k || !v) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_append: NULL argument");
    OSCAR_TRY(check_step(c, layer, "oscar_kv_append"));
    size_t bytes = (size_t)c->book.plan.n_tokens * c->p.n_kv_head * c->p.head_dim * 4;
    memcpy(c->io_k.mapped, k, bytes);
    memcpy(c->io_v.mapped, v, bytes);
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    ovk_binding bk = { &c->io_k, 0, bytes }, bv = { &c->io_v, 0, bytes };
    st = ovk_kv_record_append(c, &c->cmd, layer, &bk, &bv, 0);
    oscar_status st2 = submit_timed(c, t0);
    if (st == OSCAR_OK) st = st2;
fail:
    return st;
}

OSCAR_API oscar_status oscar_kv_attention(oscar_kv_cache *c, uint32_t layer, const float *q, float *out)
{
    oscar_status st = OSCAR_OK;
    if (!c || !q || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_attention: NULL argument");
    OSCAR_TRY(check_step(c, layer, "oscar_kv_attention"));
    size_t bytes = (size_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4;
    memcpy(c->io_q.mapped, q, bytes);
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    ovk_cmd_copy(c->ctx, &c->cmd, &c->io_q, 0, &c->q_dev, 0, bytes);
    /* timed: the attention kernels only; q is read from device memory, out written to the
     * host-visible readback buffer (n_rows x n_head x d floats, small) */
    int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    ovk_binding bq = { &c->q_dev, 0, bytes }, bo = { &c->io_out, 0, bytes };
    st = ovk_kv_record_attention(c, &c->cmd, layer, &bq, &bo);
    oscar_status st2 = OSCAR_OK;
    if (st == OSCAR_OK) ovk_cmd_host_barrier(c->ctx, &c->cmd);
    st2 = submit_timed(c, t0);
    if (st == OSCAR_OK) st = st2;
    if (st == OSCAR_OK) {
        if (!c->io_out.host_coherent) {
            VkMappedMemoryRange r = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = c->io_out.memory, .size = VK_WHOLE_SIZE };
            c->ctx->vk.vkInvalidateMappedMemoryRanges(c->ctx->device, 1, &r);
        }
        memcpy(out, c->io_out.mapped, bytes);
    }
fail:
    return st;
}

OSCAR_API oscar_status oscar_kv_step_end(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_step_end: NULL cache");
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "oscar_kv_step_end without oscar_kv_step_begin");
    if (c->book.plan.n_flush && !c->ext_flushed) {
        OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
        int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
        st = ovk_kv_record_flushes(c, &c->cmd, 1);
        oscar_status st2 = submit_timed(c, t0);
        if (st == OSCAR_OK) st = st2;
        if (st != OSCAR_OK) goto fail;
    }
    ovk_kv_commit_step(c);
fail:
    return st;
}
