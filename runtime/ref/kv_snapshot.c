/* Test hooks of the KV cache: its device state copied out for the C attention reference. Part
 * of the reference library, not of liboscar. */
#include <stdlib.h>
#include <string.h>

#include "attn_ref.h"
#include "kv_cache_impl.h"
#include "kv_snapshot.h"

oscar_status ovk_kv_snapshot(oscar_kv_cache *c, uint32_t layer, attn_ref_cache *out)
{
    oscar_status st = OSCAR_OK;
    memset(out, 0, sizeof *out);
    const kv_book *b = &c->book;
    uint32_t S = c->p.max_sequences;
    uint32_t *int2 = malloc(c->int2_pool[layer].size), *f16 = malloc(c->f16_pool[layer].size);
    int32_t *t_int2 = malloc((size_t)S * b->max_pages * 4), *t_f16 = malloc((size_t)S * b->max_pages * 4);
    uint32_t *sink = malloc(S * 4), *fe = malloc(S * 4), *means = malloc(4ull * c->means_words);
    out->int2_pool = int2, out->f16_pool = f16, out->int2_table = t_int2, out->f16_table = t_f16;
    out->sink = sink, out->flushed_end = fe, out->means = means;
    if (!int2 || !f16 || !t_int2 || !t_f16 || !sink || !fe || !means) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->means, 4ull * layer * c->means_words, means, 4ull * c->means_words));
    if (c->center_block) out->key_centers = means + 2 * c->p.n_kv_head * c->p.head_dim, out->center_block = c->center_block;
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->int2_pool[layer], 0, int2, c->int2_pool[layer].size));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->f16_pool[layer], 0, f16, c->f16_pool[layer].size));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->int2_table, 0, t_int2, (size_t)S * b->max_pages * 4));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->f16_table, 0, t_f16, (size_t)S * b->max_pages * 4));
    for (uint32_t s = 0; s < S; s++) {
        sink[s] = b->cfg.sink;
        fe[s] = b->seqs[s].flushed_end;
        /* the GPU's tables hold zone-local ids (kv_zones.c): back to ids over the whole pool */
        for (uint32_t k = 0; k < b->max_pages; k++) {
            size_t i = (size_t)s * b->max_pages + k;
            if (t_int2[i] >= 0) t_int2[i] += (int32_t)(b->seqs[s].zone * b->int2.zone_pages);
            if (t_f16[i] >= 0) t_f16[i] += (int32_t)(b->seqs[s].zone * b->f16.zone_pages);
        }
    }
    out->mode = c->mode;
    out->head_dim = c->p.head_dim;
    out->group = c->p.group_size;
    out->page = c->p.page_tokens;
    out->n_kv = c->p.n_kv_head;
    out->n_int2_pages = b->int2.n_pages;
    out->n_f16_pages = b->f16.n_pages;
    out->max_int2_pages = out->max_f16_pages = b->max_pages;
    out->n_seq = S;
    return OSCAR_OK;
fail:
    ovk_kv_snapshot_free(out);
    return st;
}

void ovk_kv_snapshot_free(attn_ref_cache *s)
{
    free((void *)s->int2_pool), free((void *)s->f16_pool), free((void *)s->int2_table), free((void *)s->f16_table);
    free((void *)s->sink), free((void *)s->flushed_end), free((void *)s->means);
    memset(s, 0, sizeof *s);
}

oscar_status ovk_kv_rotations(oscar_kv_cache *c, uint32_t layer, float *rot_k, float *rot_v, uint32_t *n_rot)
{
    oscar_status st = OSCAR_OK;
    uint64_t bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    if (rot_k) OSCAR_TRY(ovk_buffer_download(c->ctx, &c->rot_k, layer * bytes, rot_k, bytes));
    if (rot_v) OSCAR_TRY(ovk_buffer_download(c->ctx, &c->rot_v, layer * bytes, rot_v, bytes));
    if (n_rot) *n_rot = c->n_rot;
fail:
    return st;
}
