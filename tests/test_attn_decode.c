/* shaders/attn_decode.comp (flash-decoding with its merge and o·R_Vᵀ) against the C reference
 * (runtime/attn_ref.c) on random paged caches: shuffled physical pages, forked sequences
 * sharing pages, lengths at every window and page boundary, several flush points, prefill
 * rows (one sequence, n_visible = n, n-1, ...), small splits (1-token items), empty items,
 * GQA 1/3/4/8, d 64/128/256, G 32/64/128, workgroups 64/128/256, and adversarial scores that
 * overflow exp() without the max trick. Every slot no row may read is poisoned with fp16 NaN,
 * so a kernel reading outside its tokens fails the comparison.
 * Every case runs through attn_decode (fp32) and, where the device has shaderFloat16, through
 * attn_decode_f16 (INT2 value sums in packed fp16). The call runs twice back to back (the
 * merge counters must be back at 0 after each) and the second output is checked. In the
 * rotated modes R_V is a random non-symmetric matrix, so a transposed R_V fails.
 * Bounds: normalised squared error <= 1e-5 against the reference over the same dequantized
 * values; fp16 mode also <= 1e-4 against exact attention over the fp32 values before fp16
 * rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_items.h"
#include "attn_ref.h"
#include "common/kv_write.h"
#include "half.h"
#include "test_gpu.h"

#define POISON 0x7E007E00u /* two fp16 NaNs */

typedef struct attn_case {
    const char *name;
    uint32_t mode, d, G, P, nkv, gqa, wg, split;
    uint32_t sink, recent;  /* window sizes (int2 modes) */
    float q_mul;            /* query magnitude: large values make logits overflow exp() */
    float mn_mul;           /* INT2 min magnitude: large mins with small scales cancel */
    int empty_items;        /* insert an empty item in front of every row's items */
    int rot_per_head;       /* rotated modes: one R_V per KV head (else one for the layer) */
    uint32_t long_len;      /* nonzero: one sequence of this length instead of the boundary list */
} attn_case;

/* One generated cache: host pools/tables in kv_layout.h format plus fp32 originals. */
typedef struct scene {
    uint32_t n_seq, n_int2_pages, n_f16_pages, max_int2_pages, max_f16_pages;
    uint32_t *len, *sink, *flushed;  /* [n_seq] */
    int32_t *int2_table, *f16_table; /* [n_seq][max_*_pages] */
    uint32_t *int2_pool, *f16_pool;  /* [pages][page words] */
    float *f16_orig;                 /* [f16 pages][2][NKV][P][d] fp32 values before rounding */
    uint32_t n_rows;
    uint32_t *row_seq, *row_n;       /* [n_rows] */
} scene;

static void scene_free(scene *s)
{
    free(s->len); free(s->sink); free(s->flushed);
    free(s->int2_table); free(s->f16_table);
    free(s->int2_pool); free(s->f16_pool); free(s->f16_orig);
    free(s->row_seq); free(s->row_n);
    memset(s, 0, sizeof *s);
}

static uint32_t rng_below(uint32_t n) { return n ? test_rng_u32() % n : 0; }

static int is_int2(const attn_case *c, const scene *s, uint32_t seq, uint32_t p)
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
        uint32_t j = rng_below(i), t = perm[i - 1];
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

/* Builds lengths at the boundaries of c's windows and pages, flush points, tables, pools and
 * rows. */
static int scene_build(const attn_case *c, scene *s)
{
    uint32_t S = c->sink, R = c->recent, P = c->P, d = c->d, nkv = c->nkv;
    uint32_t lens[] = { 1, S ? S - 1 : 2, S ? S : 3, S + 1, S + R - 1, S + R, S + R + 1, P - 1, P, P + 1,
                        2 * P + 5, S + R + 3 * P + 7, 1 + rng_below(S + R + 2 * P) };
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
        case 1: s->flushed[q] = n > S ? S + rng_below(n - S + 1) : S; break; /* anywhere */
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
            if (is_int2(c, s, q, p)) need2[q * s->max_int2_pages + (p - s->sink[q]) / P] = 1;
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
    for (size_t i = 0; i < w2 * s->n_int2_pages; i++) s->int2_pool[i] = POISON;
    for (size_t i = 0; i < w16 * s->n_f16_pages; i++) s->f16_pool[i] = POISON;
    uint8_t *done2 = calloc((size_t)s->n_int2_pages * P + 1, 1), *done16 = calloc((size_t)s->n_f16_pages * P + 1, 1);
    uint32_t cw = d / 16, pw = d / c->G;
    for (uint32_t q = 0; q < s->n_seq; q++)
        for (uint32_t p = 0; p < s->len[q]; p++) {
            if (is_int2(c, s, q, p)) {
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
                            params[g] = oscar_f32_to_f16(sc) | ((uint32_t)oscar_f32_to_f16(mn) << 16);
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
                            uint32_t hb = oscar_f32_to_f16(x);
                            if (e % 2 == 0) words[e / 2] = hb;
                            else words[e / 2] |= hb << 16;
                        }
                    }
            }
        }
    free(done2);
    free(done16);

    /* rows: one decode row per sequence, a prefill block on sequences 11 and 5, an empty row;
     * one long sequence: two rows (n, n - 1) */
    uint32_t n_prefill = c->long_len ? 1 : 12;
    s->n_rows = s->n_seq + n_prefill + (c->long_len ? 0 : 1);
    s->row_seq = malloc(4 * s->n_rows);
    s->row_n = malloc(4 * s->n_rows);
    uint32_t r = 0;
    for (uint32_t q = 0; q < s->n_seq; q++) { s->row_seq[r] = q; s->row_n[r++] = s->len[q]; }
    for (uint32_t k = 0; k < n_prefill; k++) {
        uint32_t q = (k < 6 ? 11 : 5) % s->n_seq;
        uint32_t back = k % 6 + 1;
        s->row_seq[r] = q;
        s->row_n[r++] = s->len[q] > back ? s->len[q] - back : 1;
    }
    if (!c->long_len) {
        s->row_seq[r] = 0;
        s->row_n[r++] = 0;
    }
    return 0;
}

/* Exact attention over the fp32 values behind the fp16 pool (fp16 mode only). */
static void exact_fp16_attention(const attn_case *c, const scene *s, const float *q, float scale, float *out)
{
    uint32_t d = c->d, P = c->P, nkv = c->nkv, n_head = nkv * c->gqa;
    uint32_t max_n = 1;
    for (uint32_t r = 0; r < s->n_rows; r++) max_n = s->row_n[r] > max_n ? s->row_n[r] : max_n;
    double *w = malloc(sizeof *w * max_n), *o = malloc(sizeof *o * d);
    for (uint32_t r = 0; r < s->n_rows; r++)
        for (uint32_t h = 0; h < n_head; h++) {
            uint32_t seq = s->row_seq[r], n = s->row_n[r], kvh = h / c->gqa;
            const float *qh = q + ((size_t)r * n_head + h) * d;
            double m = -INFINITY, l = 0.0;
            for (uint32_t p = 0; p < n; p++) {
                uint32_t page = (uint32_t)s->f16_table[seq * s->max_f16_pages + p / P];
                const float *k = s->f16_orig + ((size_t)page * 2 * nkv * P + (size_t)kvh * P + p % P) * d;
                double dot = 0.0;
                for (uint32_t e = 0; e < d; e++) dot += (double)qh[e] * k[e];
                w[p] = dot * scale;
                if (w[p] > m) m = w[p];
            }
            for (uint32_t e = 0; e < d; e++) o[e] = 0.0;
            for (uint32_t p = 0; p < n; p++) {
                uint32_t page = (uint32_t)s->f16_table[seq * s->max_f16_pages + p / P];
                const float *v = s->f16_orig + ((size_t)page * 2 * nkv * P + (size_t)nkv * P + (size_t)kvh * P + p % P) * d;
                double e_ = exp(w[p] - m);
                l += e_;
                for (uint32_t e = 0; e < d; e++) o[e] += e_ * v[e];
            }
            for (uint32_t e = 0; e < d; e++) out[((size_t)r * n_head + h) * d + e] = n ? (float)(o[e] / l) : 0.0f;
        }
    free(w);
    free(o);
}

/* Inserts an empty item (alternating kinds) in front of every row's items. */
static struct kv_attn_item *with_empty_items(struct kv_attn_row *rows, uint32_t n_rows,
                                             const struct kv_attn_item *items, uint32_t *n_items)
{
    struct kv_attn_item *out = malloc(sizeof *out * (*n_items + n_rows));
    uint32_t k = 0;
    for (uint32_t r = 0; r < n_rows; r++) {
        uint32_t b = rows[r].item_begin, e = rows[r].item_end;
        rows[r].item_begin = k;
        out[k++] = (struct kv_attn_item){ r, r % 2 ? KV_ITEM_INT2 : KV_ITEM_F16, 3, 3 };
        for (uint32_t i = b; i < e; i++) out[k++] = items[i];
        rows[r].item_end = k;
    }
    *n_items = k;
    return out;
}

/* Runs one case through `shader` (attn_decode or attn_decode_f16). */
static void run_case(oscar_context *ctx, const attn_case *c, const char *shader)
{
    scene s = { 0 };
    scene_build(c, &s);
    uint32_t d = c->d, n_head = c->nkv * c->gqa;
    float scale = 1.0f / sqrtf((float)d);
    size_t out_n = (size_t)s.n_rows * n_head * d;
    float *q = malloc(sizeof *q * out_n), *got = malloc(sizeof *got * out_n), *want = malloc(sizeof *want * out_n);
    for (size_t i = 0; i < out_n; i++) q[i] = test_rng_normal() * c->q_mul;

    /* the kernel's chunk for this shape, as the cache picks it; long splits get 64-token
     * chunks so items run through several */
    uint32_t shared = ctx->info.max_shared_memory < 32768 ? ctx->info.max_shared_memory : 32768;
    uint32_t item_tokens = oscar_attn_item_tokens(d, c->G, c->P, c->gqa, c->wg, shared);
    CHECK_MSG(item_tokens >= 64, "%s: item size %u for %u bytes of shared memory", c->name, item_tokens, shared);
    if (c->split >= 300) item_tokens = 64;
    uint32_t split = c->split;

    uint32_t n_items = 0;
    struct kv_attn_row *rows = malloc(sizeof *rows * s.n_rows);
    CHECK_OK(oscar_attn_build_items(s.row_seq, s.row_n, s.n_rows, s.sink, s.flushed, split, NULL, NULL, 0, &n_items));
    struct kv_attn_item *items = malloc(sizeof *items * (n_items + 1));
    CHECK_OK(oscar_attn_build_items(s.row_seq, s.row_n, s.n_rows, s.sink, s.flushed, split, rows, items, n_items,
                                    &n_items));
    if (c->empty_items) {
        struct kv_attn_item *e = with_empty_items(rows, s.n_rows, items, &n_items);
        free(items);
        items = e;
    }

    attn_ref_cache rc = { .mode = c->mode, .head_dim = d, .group = c->G, .page = c->P, .n_kv = c->nkv,
                          .int2_pool = s.int2_pool, .n_int2_pages = s.n_int2_pages,
                          .f16_pool = s.f16_pool, .n_f16_pages = s.n_f16_pages,
                          .int2_table = s.int2_table, .max_int2_pages = s.max_int2_pages,
                          .f16_table = s.f16_table, .max_f16_pages = s.max_f16_pages,
                          .n_seq = s.n_seq, .sink = s.sink, .flushed_end = s.flushed };
    CHECK_OK(attn_ref_attention(&rc, q, s.row_seq, s.row_n, s.n_rows, n_head, scale, want));

    oscar_buffer b_q, b_rows, b_items, b_pool2, b_pool16, b_t2, b_t16, b_part, b_out;
    size_t part_bytes = sizeof(float) * n_items * n_head * KV_PARTIAL_FLOATS(d);
    CHECK_OK(test_gpu_buffer_from(ctx, q, sizeof *q * out_n, &b_q));
    CHECK_OK(test_gpu_buffer_from(ctx, rows, sizeof *rows * s.n_rows, &b_rows));
    CHECK_OK(test_gpu_buffer_from(ctx, items, sizeof *items * (n_items ? n_items : 1), &b_items));
    CHECK_OK(test_gpu_buffer_from(ctx, s.int2_pool,
                                  4 * (KV_INT2_PAGE_WORDS(c->nkv, c->P, d, c->G) * s.n_int2_pages + 4), &b_pool2));
    CHECK_OK(test_gpu_buffer_from(ctx, s.f16_pool, 4 * (KV_F16_PAGE_WORDS(c->nkv, c->P, d) * s.n_f16_pages + 4),
                                  &b_pool16));
    CHECK_OK(test_gpu_buffer_from(ctx, s.int2_table, 4 * s.n_seq * s.max_int2_pages, &b_t2));
    CHECK_OK(test_gpu_buffer_from(ctx, s.f16_table, 4 * s.n_seq * s.max_f16_pages, &b_t16));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, part_bytes ? part_bytes : 16, &b_part));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, sizeof *got * out_n, &b_out));
    CHECK_OK(oscar_buffer_fill(ctx, &b_part, 0, part_bytes ? part_bytes : 16, POISON));
    CHECK_OK(oscar_buffer_fill(ctx, &b_out, 0, sizeof *got * out_n, POISON));

    /* R_V: the reference output is in the rotated basis; the kernel returns o·R_Vᵀ */
    int rotated = c->mode == KV_MODE_HADAMARD || c->mode == KV_MODE_ROTATED;
    uint32_t n_rot = c->rot_per_head ? c->nkv : 1;
    float *rot = malloc(sizeof *rot * n_rot * d * d);
    for (size_t i = 0; i < (size_t)n_rot * d * d; i++) rot[i] = test_rng_normal() / sqrtf((float)d);
    if (rotated) {
        float *o = malloc(sizeof *o * d);
        for (size_t rh = 0; rh < (size_t)s.n_rows * n_head; rh++) {
            const float *R = rot + (c->rot_per_head ? (rh % n_head) / c->gqa : 0) * d * d;
            memcpy(o, want + rh * d, sizeof *o * d);
            for (uint32_t j = 0; j < d; j++) {
                double v = 0;
                for (uint32_t e = 0; e < d; e++) v += (double)o[e] * R[j * d + e];
                want[rh * d + j] = (float)v;
            }
        }
        free(o);
    }
    oscar_buffer b_rot, b_cnt;
    CHECK_OK(test_gpu_buffer_from(ctx, rot, sizeof *rot * n_rot * d * d, &b_rot));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4 * s.n_rows * c->nkv, &b_cnt));
    CHECK_OK(oscar_buffer_fill(ctx, &b_cnt, 0, 4 * s.n_rows * c->nkv, 0));

    oscar_pipeline_desc dd = { .shader = shader, .n_buffers = 11, .push_size = sizeof(struct attn_decode_push),
                               .n_spec = ATTN_N_SPEC,
                               .spec = { /* WORKGROUP */ c->wg, /* HEAD_DIM */ d, /* GROUP */ c->G, /* PAGE */ c->P,
                                         /* N_KV */ c->nkv, /* GQA */ c->gqa, /* MODE */ c->mode,
                                         [KV_SPEC_ROT_PER_HEAD] = c->rot_per_head != 0,
                                         [KV_SPEC_ITEM_TOKENS] = item_tokens,
                                         /* the tuning constants vary over the cases */
                                         [KV_SPEC_ATTN_U] = 1 + (c->d / 64 + c->gqa) % 3, [KV_SPEC_ATTN_VU] = 1 + c->P % 9 } };
    oscar_pipeline *pd = NULL;
    CHECK_OK(oscar_pipeline_get(ctx, &dd, &pd));
    if (pd) {
        oscar_binding bd[11] = { { &b_q, 0, 0 }, { &b_rows, 0, 0 }, { &b_items, 0, 0 }, { &b_pool2, 0, 0 },
                                 { &b_pool16, 0, 0 }, { &b_t2, 0, 0 }, { &b_t16, 0, 0 }, { &b_part, 0, 0 },
                                 { &b_rot, 0, 0 }, { &b_out, 0, 0 }, { &b_cnt, 0, 0 } };
        struct attn_decode_push pushd = { n_items, s.max_int2_pages, s.max_f16_pages, scale };
        uint32_t gd[3];
        oscar_attn_grid(n_items, c->nkv, gd);
        CHECK_OK(oscar_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(oscar_cmd_dispatch(ctx, &ctx->cmd, pd, bd, &pushd, gd));
        oscar_cmd_barrier(ctx, &ctx->cmd);
        ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, b_out.buffer, 0, b_out.size, POISON); /* the 2nd call must write it all */
        oscar_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(oscar_cmd_dispatch(ctx, &ctx->cmd, pd, bd, &pushd, gd));
        CHECK_OK(oscar_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(oscar_buffer_download(ctx, &b_out, 0, got, sizeof *got * out_n));
        uint32_t *cnt = malloc(4 * s.n_rows * c->nkv);
        CHECK_OK(oscar_buffer_download(ctx, &b_cnt, 0, cnt, 4 * s.n_rows * c->nkv));
        uint32_t nonzero = 0;
        for (uint32_t i = 0; i < s.n_rows * c->nkv; i++) nonzero += cnt[i] != 0;
        CHECK_MSG(nonzero == 0, "%s: %u merge counters not back at 0", c->name, nonzero);
        free(cnt);

        size_t bad = 0, bad_ref = 0;
        for (size_t i = 0; i < out_n; i++) bad += !isfinite(got[i]);
        for (size_t i = 0; i < out_n; i++) bad_ref += !isfinite(want[i]);
        CHECK_MSG(bad_ref == 0, "%s: reference has %zu non-finite values", c->name, bad_ref);
        double nse = test_nse(got, want, out_n);
        CHECK_MSG(bad == 0 && nse <= 1e-5, "%s %s: %zu non-finite, nse %.3g vs reference (%u rows, %u items)", shader,
                  c->name, bad, nse, s.n_rows, n_items);
        printf("%-16s %-34s rows %3u items %5u split %4u chunk %4u  nse %.3g", shader, c->name, s.n_rows, n_items, split,
               item_tokens, nse);
        /* the exact check is meaningful when fp16 rounding moves logits little (no huge q) */
        if (c->mode == KV_MODE_FP16 && c->q_mul <= 1.0f) {
            float *exact = malloc(sizeof *exact * out_n);
            exact_fp16_attention(c, &s, q, scale, exact);
            double nse_exact = test_nse(got, exact, out_n);
            CHECK_MSG(nse_exact <= 1e-4, "%s: nse %.3g vs exact fp32 attention", c->name, nse_exact);
            printf("  exact %.3g", nse_exact);
            free(exact);
        }
        printf("\n");
    }
    oscar_buffer *bufs[] = { &b_q, &b_rows, &b_items, &b_pool2, &b_pool16, &b_t2, &b_t16, &b_part, &b_out, &b_rot, &b_cnt };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) oscar_buffer_destroy(ctx, bufs[i]);
    free(q); free(got); free(want); free(rows); free(items); free(rot);
    scene_free(&s);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(7);
    const uint32_t R = KV_MODE_ROTATED, F = KV_MODE_FP16, I = KV_MODE_INT2, H = KV_MODE_HADAMARD;
    const attn_case cases[] = {
        /* name                         mode d   G    P   nkv gqa wg  split sink rec q_mul mn  empty per-head-R */
        { "int2 d128 G128 gqa1 wg128",   R, 128, 128, 32, 2, 1, 128, 64, 4, 24, 1.0f, 1.0f, 0, 0 },
        { "int2 d128 G64 gqa4 wg64",     R, 128, 64, 16, 2, 4, 64, 37, 4, 24, 1.0f, 1.0f, 0, 1 },
        { "int2 d64 G32 gqa8 wg128",     I, 64, 32, 16, 1, 8, 128, 300, 8, 16, 1.0f, 1.0f, 1, 0 },
        { "int2 d64 G64 gqa3 wg64",      H, 64, 64, 32, 3, 3, 64, 7, 4, 24, 1.0f, 1.0f, 0, 1 },
        { "int2 d128 G32 gqa8 wg256",    R, 128, 32, 64, 1, 8, 256, 512, 64, 256, 1.0f, 1.0f, 0, 0 },
        { "int2 d64 G64 gqa1 split1",    R, 64, 64, 8, 2, 1, 64, 1, 3, 5, 1.0f, 1.0f, 1, 0 },
        { "int2 d256 G128 gqa8 wg64",    R, 256, 128, 16, 1, 8, 64, 50, 4, 20, 1.0f, 1.0f, 0, 0 },
        { "int2 d128 G128 gqa2 wg256",   R, 128, 128, 5, 2, 2, 256, 1000, 4, 24, 1.0f, 1.0f, 0, 1 },
        { "int2 adversarial q x300",     R, 128, 64, 16, 2, 4, 128, 29, 4, 24, 300.0f, 1.0f, 0, 1 },
        { "int2 adversarial mins x100",  R, 64, 32, 16, 1, 3, 64, 17, 4, 24, 3.0f, 100.0f, 1, 0 },
        { "fp16 d128 gqa4 wg128",        F, 128, 128, 32, 2, 4, 128, 45, 4, 24, 1.0f, 1.0f, 0, 0 },
        { "fp16 d64 gqa3 wg64 split1",   F, 64, 64, 16, 3, 3, 64, 1, 4, 8, 1.0f, 1.0f, 0, 0 },
        { "fp16 d256 gqa1 wg256",        F, 256, 128, 16, 1, 1, 256, 200, 4, 24, 1.0f, 1.0f, 1, 0 },
        { "fp16 adversarial q x300",     F, 64, 64, 16, 2, 8, 64, 23, 4, 24, 300.0f, 1.0f, 0, 0 },
        /* P = 5, one KV head, d/G = 1: INT2 pages are not 16-byte multiples (scalar code loads) */
        { "int2 unaligned pages P5",     R, 64, 64, 5, 1, 2, 64, 9, 4, 12, 1.0f, 1.0f, 0, 0 },
        /* more than 65535 items in all (x/z grid split); each row stays under 65535 items
         * because lavapipe stops any shader loop after 65535 iterations */
        { "int2 72000 one-token items",  R, 64, 64, 64, 1, 1, 64, 1, 4, 16, 1.0f, 1.0f, 0, 0, 36000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(ctx, &cases[i], "attn_decode");
    /* the packed-fp16 variant where the device has fp16 arithmetic (the last case only tests
     * the grid, which the variants share) */
    if (ctx->info.float16_arithmetic)
        for (size_t i = 0; i + 1 < sizeof cases / sizeof cases[0]; i++) run_case(ctx, &cases[i], "attn_decode_f16");
    else
        printf("attn_decode_f16: skipped (no shaderFloat16)\n");
    return test_gpu_finish(ctx);
}
