/* Random paged KV caches for the attention tests; the contract is in attn_scene.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_scene.h"
#include "common/kv_layout.h"
#include "half.h"
#include "test_gpu.h"
#include "test_util.h"

void attn_scene_free(attn_scene *s)
{
    free(s->len); free(s->sink); free(s->flushed);
    free(s->int2_table); free(s->f16_table);
    free(s->int2_pool); free(s->f16_pool); free(s->f16_orig);
    free(s->row_seq); free(s->row_n);
    memset(s, 0, sizeof *s);
}

uint32_t attn_scene_rng_below(uint32_t n) { return n ? test_rng_u32() % n : 0; }

int attn_scene_is_int2(const attn_scene_shape *c, const attn_scene *s, uint32_t seq, uint32_t p)
{
    return c->mode != KV_MODE_FP16 && p >= s->sink[seq] && p < s->flushed[seq];
}

/* Assigns physical ids to every needed table entry: a shuffled permutation of the pool, and
 * every third sequence a fork of the previous one (sharing its first half of the pages). */
static uint32_t assign_pages(int32_t *table, uint32_t n_seq, uint32_t width, const uint8_t *need, uint32_t spare)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_seq * width; i++) table[i] = -1;
    for (uint32_t q = 0; q < n_seq; q++)
        for (uint32_t i = 0; i < width; i++) {
            int fork = q % 3 == 2 && i < width / 2 && need[(q - 1) * width + i];
            if (need[q * width + i] && !fork) table[q * width + i] = (int32_t)n++;
            else if (need[q * width + i]) table[q * width + i] = -2; /* resolved below */
        }
    uint32_t total = n + spare;
    uint32_t *perm = malloc(sizeof *perm * (total ? total : 1));
    for (uint32_t i = 0; i < total; i++) perm[i] = i;
    for (uint32_t i = total; i > 1; i--) {
        uint32_t j = attn_scene_rng_below(i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (uint32_t q = 0; q < n_seq; q++)
        for (uint32_t i = 0; i < width; i++) {
            int32_t *e = &table[q * width + i];
            if (*e >= 0) *e = (int32_t)perm[*e];
        }
    for (uint32_t q = 0; q < n_seq; q++) /* forks copy the parent's (already permuted) entry */
        for (uint32_t i = 0; i < width; i++)
            if (table[q * width + i] == -2) table[q * width + i] = table[(q - 1) * width + i];
    free(perm);
    return total;
}

void attn_scene_build(const attn_scene_shape *c, attn_scene *s)
{
    s->shape = *c;
    uint32_t S = c->sink, R = c->recent, P = c->P, d = c->d, nkv = c->nkv;
    uint32_t lens[] = { 1, S ? S - 1 : 2, S ? S : 3, S + 1, S + R - 1, S + R, S + R + 1, P - 1, P, P + 1,
                        2 * P + 5, S + R + 3 * P + 7, 1 + attn_scene_rng_below(S + R + 2 * P) };
    s->n_seq = sizeof lens / sizeof lens[0];
    if (c->long_len) {
        lens[0] = c->long_len;
        s->n_seq = 1;
    }
    s->len = calloc(s->n_seq, 4);
    s->sink = calloc(s->n_seq, 4);
    s->flushed = calloc(s->n_seq, 4);
    for (uint32_t q = 0; q < s->n_seq; q++) {
        uint32_t n = lens[q] ? lens[q] : 1;
        s->len[q] = n;
        if (c->mode == KV_MODE_FP16) continue;
        s->sink[q] = S;
        uint32_t natural = n > S + R ? S + (n - S - R) / 8 * 8 : S;
        switch (q % 4) {
        case 0: s->flushed[q] = natural; break;
        case 1: s->flushed[q] = n > S ? S + attn_scene_rng_below(n - S + 1) : S; break; /* anywhere */
        case 2: s->flushed[q] = n > S ? n : 0; break;                         /* all flushed / none */
        default: s->flushed[q] = natural > S ? natural - 1 : natural; break;
        }
    }
    /* table widths and needed entries */
    s->max_int2_pages = 1;
    s->max_f16_pages = 1;
    for (uint32_t q = 0; q < s->n_seq; q++) {
        uint32_t ni = s->flushed[q] > s->sink[q] ? (s->flushed[q] - s->sink[q] + P - 1) / P : 0;
        if (ni > s->max_int2_pages) s->max_int2_pages = ni;
        if ((s->len[q] + P - 1) / P > s->max_f16_pages) s->max_f16_pages = (s->len[q] + P - 1) / P;
    }
    uint8_t *need2 = calloc(s->n_seq * s->max_int2_pages, 1), *need16 = calloc(s->n_seq * s->max_f16_pages, 1);
    for (uint32_t q = 0; q < s->n_seq; q++)
        for (uint32_t p = 0; p < s->len[q]; p++) {
            if (attn_scene_is_int2(c, s, q, p)) need2[q * s->max_int2_pages + (p - s->sink[q]) / P] = 1;
            else need16[q * s->max_f16_pages + p / P] = 1;
        }
    s->int2_table = malloc(sizeof(int32_t) * s->n_seq * s->max_int2_pages);
    s->f16_table = malloc(sizeof(int32_t) * s->n_seq * s->max_f16_pages);
    s->n_int2_pages = assign_pages(s->int2_table, s->n_seq, s->max_int2_pages, need2, 2);
    s->n_f16_pages = assign_pages(s->f16_table, s->n_seq, s->max_f16_pages, need16, 2);
    free(need2);
    free(need16);

    /* pools: poison everything, then write each readable slot once */
    size_t w2 = KV_INT2_PAGE_WORDS(nkv, P, d, c->G), w16 = KV_F16_PAGE_WORDS(nkv, P, d);
    s->int2_pool = malloc(4 * (w2 * s->n_int2_pages + 4));
    s->f16_pool = malloc(4 * (w16 * s->n_f16_pages + 4));
    s->f16_orig = calloc((size_t)s->n_f16_pages * 2 * nkv * P * d + 1, sizeof(float));
    for (size_t i = 0; i < w2 * s->n_int2_pages; i++) s->int2_pool[i] = ATTN_SCENE_POISON;
    for (size_t i = 0; i < w16 * s->n_f16_pages; i++) s->f16_pool[i] = ATTN_SCENE_POISON;
    uint8_t *done2 = calloc((size_t)s->n_int2_pages * P + 1, 1), *done16 = calloc((size_t)s->n_f16_pages * P + 1, 1);
    uint32_t cw = d / 16, pw = d / c->G;
    for (uint32_t q = 0; q < s->n_seq; q++)
        for (uint32_t p = 0; p < s->len[q]; p++) {
            if (attn_scene_is_int2(c, s, q, p)) {
                uint32_t j = p - s->sink[q];
                uint32_t page = (uint32_t)s->int2_table[q * s->max_int2_pages + j / P], slot = j % P;
                if (done2[page * P + slot]++) continue;
                uint32_t *base = s->int2_pool + page * w2;
                for (uint32_t h = 0; h < nkv; h++) {
                    size_t row = (size_t)h * P + slot;
                    for (uint32_t kv = 0; kv < 2; kv++) {
                        uint32_t *codes = base + kv * nkv * P * (cw + pw) + row * cw;
                        uint32_t *params = base + kv * nkv * P * (cw + pw) + (size_t)nkv * P * cw + row * pw;
                        for (uint32_t i = 0; i < cw; i++) codes[i] = test_rng_u32();
                        for (uint32_t g = 0; g < pw; g++) {
                            float sc = fabsf(test_rng_normal()) * 0.7f, mn = test_rng_normal() * c->mn_mul;
                            if (g == 1) sc = 0.0f; /* an all-equal group */
                            params[g] = ovk_f32_to_f16(sc) | ((uint32_t)ovk_f32_to_f16(mn) << 16);
                        }
                    }
                }
            } else {
                uint32_t page = (uint32_t)s->f16_table[q * s->max_f16_pages + p / P], slot = p % P;
                if (done16[page * P + slot]++) continue;
                for (uint32_t kv = 0; kv < 2; kv++)
                    for (uint32_t h = 0; h < nkv; h++) {
                        size_t row = (size_t)kv * nkv * P + (size_t)h * P + slot;
                        uint32_t *words = s->f16_pool + page * w16 + row * (d / 2);
                        float *orig = s->f16_orig + ((size_t)page * 2 * nkv * P + row) * d;
                        for (uint32_t e = 0; e < d; e++) {
                            float x = test_rng_normal() * (kv == 0 ? 1.0f : 2.0f);
                            if (test_rng_u32() % 64 == 0) x *= 20.0f; /* outliers */
                            orig[e] = x;
                            uint32_t hb = ovk_f32_to_f16(x);
                            if (e % 2 == 0) words[e / 2] = hb;
                            else words[e / 2] |= hb << 16;
                        }
                    }
            }
        }
    free(done2);
    free(done16);
}

float *attn_scene_random_rv(uint32_t n_rot, uint32_t d)
{
    float *rot = malloc(sizeof *rot * n_rot * d * d);
    for (size_t i = 0; rot && i < (size_t)n_rot * d * d; i++) rot[i] = test_rng_normal() / sqrtf((float)d);
    return rot;
}

void attn_scene_unrotate(float *out, uint32_t n_rows, uint32_t n_head, uint32_t gqa, uint32_t d, const float *rot,
                         int per_head)
{
    float *o = malloc(sizeof *o * d);
    for (size_t rh = 0; o && rh < (size_t)n_rows * n_head; rh++) {
        const float *R = rot + (per_head ? (rh % n_head) / gqa : 0) * d * d;
        memcpy(o, out + rh * d, sizeof *o * d);
        for (uint32_t j = 0; j < d; j++) {
            double v = 0;
            for (uint32_t e = 0; e < d; e++) v += (double)o[e] * R[j * d + e];
            out[rh * d + j] = (float)v;
        }
    }
    free(o);
}

float *attn_scene_random_means(uint32_t n_kv, uint32_t d)
{
    float *m = malloc(sizeof *m * 2 * n_kv * d);
    for (uint32_t i = 0; m && i < 2 * n_kv * d; i++) m[i] = 2.0f * test_rng_normal();
    return m;
}

void attn_scene_add_mean_v(float *out, uint32_t n_rows, uint32_t n_head, uint32_t gqa, uint32_t d, const float *mean_v)
{
    for (size_t rh = 0; rh < (size_t)n_rows * n_head; rh++)
        for (uint32_t j = 0; j < d; j++) out[rh * d + j] += mean_v[(rh % n_head) / gqa * d + j];
}

float *attn_scene_random_q(const attn_scene *s, uint32_t n_head, float q_mul)
{
    size_t n = (size_t)s->n_rows * n_head * s->shape.d;
    float *q = malloc(sizeof *q * n);
    for (size_t i = 0; i < n; i++) q[i] = test_rng_normal() * q_mul;
    return q;
}

attn_ref_cache attn_scene_ref_cache(const attn_scene *s)
{
    const attn_scene_shape *c = &s->shape;
    attn_ref_cache rc = { .mode = c->mode, .head_dim = c->d, .group = c->G, .page = c->P, .n_kv = c->nkv,
                          .int2_pool = s->int2_pool, .n_int2_pages = s->n_int2_pages,
                          .f16_pool = s->f16_pool, .n_f16_pages = s->n_f16_pages,
                          .int2_table = s->int2_table, .max_int2_pages = s->max_int2_pages,
                          .f16_table = s->f16_table, .max_f16_pages = s->max_f16_pages,
                          .n_seq = s->n_seq, .sink = s->sink, .flushed_end = s->flushed };
    return rc;
}

oscar_status attn_scene_upload(oscar_context *ctx, const attn_scene *s, attn_scene_buffers *b)
{
    const attn_scene_shape *c = &s->shape;
    oscar_status st;
    memset(b, 0, sizeof *b);
    if ((st = test_gpu_buffer_from(ctx, s->int2_pool,
                                   4 * (KV_INT2_PAGE_WORDS(c->nkv, c->P, c->d, c->G) * s->n_int2_pages + 4),
                                   &b->int2_pool)))
        return st;
    if ((st = test_gpu_buffer_from(ctx, s->f16_pool, 4 * (KV_F16_PAGE_WORDS(c->nkv, c->P, c->d) * s->n_f16_pages + 4),
                                   &b->f16_pool)))
        return st;
    if ((st = test_gpu_buffer_from(ctx, s->int2_table, 4 * s->n_seq * s->max_int2_pages, &b->int2_table))) return st;
    return test_gpu_buffer_from(ctx, s->f16_table, 4 * s->n_seq * s->max_f16_pages, &b->f16_table);
}

void attn_scene_buffers_destroy(oscar_context *ctx, attn_scene_buffers *b)
{
    ovk_buffer_destroy(ctx, &b->int2_pool);
    ovk_buffer_destroy(ctx, &b->f16_pool);
    ovk_buffer_destroy(ctx, &b->int2_table);
    ovk_buffer_destroy(ctx, &b->f16_table);
}

void attn_scene_kernel_output(const attn_scene *s, float *out, uint32_t gqa, const float *rot, int per_head,
                              const float *means)
{
    const attn_scene_shape *c = &s->shape;
    uint32_t n_head = c->nkv * gqa;
    if (c->mode == KV_MODE_HADAMARD || c->mode == KV_MODE_ROTATED)
        attn_scene_unrotate(out, s->n_rows, n_head, gqa, c->d, rot, per_head);
    if (c->mode == KV_MODE_ROTATED) attn_scene_add_mean_v(out, s->n_rows, n_head, gqa, c->d, means + (size_t)c->nkv * c->d);
}

oscar_status attn_scene_run_twice(oscar_context *ctx, const ovk_pipeline *p, const ovk_binding *bindings,
                                  const void *push, const uint32_t grid[3], const ovk_buffer *out)
{
    oscar_status st;
    if ((st = ovk_cmd_begin(ctx, &ctx->cmd))) return st;
    if ((st = ovk_cmd_dispatch(ctx, &ctx->cmd, p, bindings, push, grid))) return st;
    ovk_cmd_barrier(ctx, &ctx->cmd);
    ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, out->buffer, 0, out->size, ATTN_SCENE_POISON);
    ovk_cmd_barrier(ctx, &ctx->cmd);
    if ((st = ovk_cmd_dispatch(ctx, &ctx->cmd, p, bindings, push, grid))) return st;
    return ovk_cmd_submit_wait(ctx, &ctx->cmd);
}

double attn_scene_nse(const char *name, const float *got, const float *want, size_t n, size_t *bad)
{
    size_t bad_ref = 0;
    *bad = 0;
    for (size_t i = 0; i < n; i++) *bad += !isfinite(got[i]);
    for (size_t i = 0; i < n; i++) bad_ref += !isfinite(want[i]);
    CHECK_MSG(bad_ref == 0, "%s: reference has %zu non-finite values", name, bad_ref);
    return test_nse(got, want, n);
}
