/* The decode attention kernels (shaders/attn_decode.comp, the streaming one,
 * attn_decode_chunked.comp, both split-K with the merge and o·R_Vᵀ, and attn_decode_rows.comp)
 * against the C reference (runtime/attn_ref.c) on random paged caches: shuffled physical pages, forked sequences
 * sharing pages, lengths at every window and page boundary, several flush points, prefill
 * rows (one sequence, n_visible = n, n-1, ...), small splits (1-token items), empty items,
 * GQA 1/3/4/8, d 64/128/256, G 32/64/128, workgroups 64/128/256, the kernel's tuning constants
 * (KU, VE, FKU) varied over the cases, the device's own subgroup size (lavapipe's is small:
 * tiles of few tokens, lanes holding several value slots), and adversarial scores that
 * overflow exp() without the max trick. Every slot no row may read is poisoned with fp16 NaN,
 * so a kernel reading outside its tokens fails the comparison.
 * Every case runs through the CPU-shaped rows kernel (attn_decode_rows.comp: fp32, texel
 * fetches, R_V at a texel offset behind a NaN copy) where the device has texel buffers.
 * Every case runs through both kernels in fp32 and, where the device has shaderFloat16, in
 * packed fp16 (the streaming kernel: INT2 dot products and value sums in packed fp16, q rounded
 * to fp16 for the INT2 keys; the chunked one: INT2 value sums in fp16), and the INT2 cases
 * through the chunked kernel's integer-dot variant where the device has integer dot products
 * (INT2 keys scored against q quantized to two levels of int8 in blocks of 32). The call runs twice back to back (the merge counters must be back at 0 after
 * each) and the second output is checked. In the rotated modes R_V is a random non-symmetric
 * matrix, so a transposed R_V fails.
 * Bounds: normalised squared error <= 1e-5 against the reference over the same stored values
 * that reproduces the variant's input rounding (the f16 variant's q rounded to fp16, the idot
 * variant's quantized to two levels of int8); these two also <= 1e-4 against the fp32-q reference (cases
 * without huge q); fp16 mode also
 * <= 1e-4 against exact attention over the fp32 values before fp16 rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_items.h"
#include "kv_cache.h"
#include "attn_ref.h"
#include "common/kv_write.h"
#include "common/q8_layout.h"
#include "half.h"
#include "attn_scene.h"
#include "test_accuracy.h"
#include "test_gpu.h"

#define POISON ATTN_SCENE_POISON

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

/* The shared random cache (tests/support/attn_scene.h) for c, then this test's rows. */
static int scene_build(const attn_case *c, attn_scene *s)
{
    attn_scene_shape shape = { c->mode, c->d, c->G, c->P, c->nkv, c->sink, c->recent, c->mn_mul, c->long_len };
    attn_scene_build(&shape, s);

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
static void exact_fp16_attention(const attn_case *c, const attn_scene *s, const float *q, float scale, float *out)
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
        out[k++] = (struct kv_attn_item){ r, r % 2 ? KV_ITEM_INT2 : KV_ITEM_F16, 3, 3, rows[r].seq, -1, -1, -1 };
        for (uint32_t i = b; i < e; i++) out[k++] = items[i];
        rows[r].item_end = k;
    }
    *n_items = k;
    return out;
}

/* Runs one case through a kernel: 1 stream (attn_decode[_f16]), 0 chunked
 * (attn_decode_chunked[_f16], attn_decode_chunked_f16.idot with idot), packed fp16 or fp32, 2
 * rows (attn_decode_rows, fp32, texel buffers; its R_V at a texel offset), or 3 cooperative
 * matrices (cm_n 16: attn_decode_cm, 8: attn_decode_cm8, or their emulations). */
static void run_case(oscar_context *ctx, const attn_case *c, int kernel, int f16, int idot, uint32_t cm_n)
{
    int stream = kernel == 1, by_rows = kernel == 2, cm = kernel == 3;
    attn_scene s = { 0 };
    scene_build(c, &s);
    uint32_t d = c->d, n_head = c->nkv * c->gqa;
    float scale = 1.0f / sqrtf((float)d);
    size_t out_n = (size_t)s.n_rows * n_head * d;
    float *q = attn_scene_random_q(&s, n_head, c->q_mul);
    float *got = malloc(sizeof *got * out_n), *want = malloc(sizeof *want * out_n);

    /* the kernel's shape for this device, the case's workgroup and tuning constants varied over
     * the cases (the picker keeps them within the shared memory) */
    ovk_attn_device dev = { ctx->info.min_subgroup_size, ctx->info.max_subgroup_size, 1024,
                            ctx->info.max_shared_memory < 32768 ? ctx->info.max_shared_memory : 32768, 1, idot, 0,
                            ctx->texel_buffers, ovk_kv_attn_cm_device(ctx),
                            ctx->info.max_shared_memory < 32768 ? ctx->info.max_shared_memory : 32768,
                            ovk_kv_attn_cm8_device(ctx) };
    static const uint32_t ves[3] = { 4, 8, 16 };
    ovk_attn_tuning tune = { kernel, f16, by_rows ? c->wg / 16 : c->wg, 1 + (c->d / 64 + c->gqa) % 3, ves[(c->P + c->gqa) % 3],
                             1 + (c->P + c->d / 64 + c->gqa) % 8, (int)((c->d / 64 + c->P) % 4), idot, 0, cm_n };
    ovk_attn_config cfg;
    CHECK_OK(ovk_attn_pick(&dev, d, c->G, c->P, c->gqa, 0, c->mode == KV_MODE_FP16, &tune, &cfg));
    CHECK_MSG(cfg.stream == stream && cfg.rows == by_rows && cfg.cm == cm && cfg.idot == idot, "%s: kernel %s picked", c->name,
              cfg.variant);
    if (!stream && !by_rows && !cm) {
        cfg.vu = idot && c->gqa % 2 == 0 ? 16 : 1 + c->P % 9; /* varied over the cases; 16: the idot default */
        if (c->split >= 300 && !c->long_len) cfg.item_tokens = 64; /* long splits: items run through several chunks */
    }
    const char *shader = cfg.shader;
    uint32_t split = c->split;
    /* the rows kernel walks a row's items in one invocation; lavapipe's 65535 loop iterations
     * bound how many: the cache gives it whole ranges (one item a kind), so long rows do here */
    if (by_rows && c->long_len > 4096) split = 1u << 30;

    uint32_t n_items = 0;
    struct kv_attn_row *rows = malloc(sizeof *rows * s.n_rows);
    CHECK_OK(ovk_attn_build_items(s.row_seq, s.row_n, s.n_rows, s.sink, s.flushed, split, NULL, NULL, 0, &n_items));
    struct kv_attn_item *items = malloc(sizeof *items * (n_items + 1));
    CHECK_OK(ovk_attn_build_items(s.row_seq, s.row_n, s.n_rows, s.sink, s.flushed, split, rows, items, n_items,
                                    &n_items));
    if (c->empty_items) {
        struct kv_attn_item *e = with_empty_items(rows, s.n_rows, items, &n_items);
        free(items);
        items = e;
    }
    for (uint32_t i = 0; i < n_items; i++) {
        int int2 = items[i].kind == KV_ITEM_INT2;
        ovk_attn_item_pages(&items[i], c->P, int2 ? s.int2_table + (size_t)items[i].seq * s.max_int2_pages
                                                  : s.f16_table + (size_t)items[i].seq * s.max_f16_pages,
                            int2 ? s.max_int2_pages : s.max_f16_pages);
    }

    attn_ref_cache rc = attn_scene_ref_cache(&s);
    float *want_q32 = NULL; /* streaming f16 and idot variants: the reference with fp32 q too */
    if ((f16 && stream) || idot || cm) {
        want_q32 = malloc(sizeof *want_q32 * out_n);
        CHECK_OK(attn_ref_attention(&rc, q, s.row_seq, s.row_n, s.n_rows, n_head, scale, want_q32));
    }
    rc.q_f16_int2 = f16 && stream;
    rc.q_q8_int2 = idot;
    rc.f16_inputs = cm;
    rc.int2_codes = cm;
    CHECK_OK(attn_ref_attention(&rc, q, s.row_seq, s.row_n, s.n_rows, n_head, scale, want));

    ovk_buffer b_q, b_rows, b_items, b_part, b_out;
    attn_scene_buffers cache;
    size_t part_bytes = sizeof(float) * n_items * n_head * KV_PARTIAL_FLOATS(d);
    CHECK_OK(test_gpu_buffer_from(ctx, q, sizeof *q * out_n, &b_q));
    CHECK_OK(test_gpu_buffer_from(ctx, rows, sizeof *rows * s.n_rows, &b_rows));
    CHECK_OK(test_gpu_buffer_from(ctx, items, sizeof *items * (n_items ? n_items : 1), &b_items));
    CHECK_OK(attn_scene_upload(ctx, &s, &cache));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, part_bytes ? part_bytes : 16, &b_part));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, sizeof *got * out_n, &b_out));
    CHECK_OK(ovk_buffer_fill(ctx, &b_part, 0, part_bytes ? part_bytes : 16, POISON));
    CHECK_OK(ovk_buffer_fill(ctx, &b_out, 0, sizeof *got * out_n, POISON));

    /* R_V: the reference output is in the rotated basis; the kernel returns o·R_Vᵀ */
    uint32_t n_rot = c->rot_per_head ? c->nkv : 1;
    float *rot = attn_scene_random_rv(n_rot, d);
    /* centering vectors: OSCAR mode adds μ_V to its output; the other modes must ignore them */
    float *means = attn_scene_random_means(c->nkv, d);
    attn_scene_kernel_output(&s, want, c->gqa, rot, c->rot_per_head, means);
    if (want_q32) attn_scene_kernel_output(&s, want_q32, c->gqa, rot, c->rot_per_head, means);
    ovk_buffer b_means;
    CHECK_OK(test_gpu_buffer_from(ctx, means, sizeof *means * 2 * c->nkv * d, &b_means));
    ovk_buffer b_rot, b_cnt;
    /* the rows kernel reads R_V at a texel offset (a layer's): behind one poisoned copy */
    size_t rot_n = (size_t)n_rot * d * d;
    float *rot_at = calloc(2 * rot_n, sizeof *rot_at);
    for (size_t i = 0; i < rot_n; i++) rot_at[i] = NAN, rot_at[rot_n + i] = rot[i];
    uint32_t rot_base = by_rows ? (uint32_t)(rot_n / 4) : 0;
    CHECK_OK(test_gpu_buffer_from(ctx, by_rows ? rot_at : rot, sizeof *rot * rot_n * (by_rows ? 2 : 1), &b_rot));
    free(rot_at);
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4 * s.n_rows * c->nkv, &b_cnt));
    CHECK_OK(ovk_buffer_fill(ctx, &b_cnt, 0, 4 * s.n_rows * c->nkv, 0));

    /* the flash-decoding kernels' merge also writes out's int8 blocks (bindings 12, 13), here for
     * every row: codes [out_n / 4] words at 0, scales [out_n / 32] at OSCAR_X_Q8_SCALES(out_n) */
    ovk_buffer b_q8;
    uint64_t q8_bytes = OSCAR_X_Q8_BYTES(out_n);
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, q8_bytes, &b_q8));
    CHECK_OK(ovk_buffer_fill(ctx, &b_q8, 0, q8_bytes, POISON));
    ovk_pipeline_desc dd = { .shader = cfg.shader, .n_buffers = by_rows ? 12 : 14, .push_size = sizeof(struct attn_decode_push),
                               .n_spec = ATTN_N_SPEC,
                               .spec = { /* WORKGROUP */ cfg.wg, /* HEAD_DIM */ d, /* GROUP */ c->G, /* PAGE */ c->P,
                                         /* N_KV */ c->nkv, /* GQA */ c->gqa, /* MODE */ c->mode,
                                         [KV_SPEC_ROT_PER_HEAD] = c->rot_per_head != 0 } };
    if (by_rows) {
        dd.spec[KV_SPEC_ROWS_TB] = cfg.tb;
        dd.texel_bindings = 1u << 3 | 1u << 4 | 1u << 8;
        dd.push_size = sizeof(struct attn_rows_push);
    } else if (cm) {
        dd.spec[KV_SPEC_CM_SG_MIN] = cfg.sg_min, dd.spec[KV_SPEC_CM_TILES] = cfg.ku, dd.spec[KV_SPEC_CM_WALKERS] = cfg.walkers;
    } else if (stream) {
        dd.spec[KV_SPEC_ATTN_SG_MIN] = cfg.sg_min, dd.spec[KV_SPEC_ATTN_KU] = cfg.ku, dd.spec[KV_SPEC_ATTN_VE] = cfg.ve;
        dd.spec[KV_SPEC_ATTN_FKU] = cfg.fku, dd.spec[KV_SPEC_ATTN_PREFETCH] = cfg.prefetch;
    } else {
        dd.spec[KV_SPEC_CH_ITEM_TOKENS] = cfg.item_tokens, dd.spec[KV_SPEC_CH_U] = cfg.u, dd.spec[KV_SPEC_CH_VU] = cfg.vu;
    }
    ovk_pipeline *pd = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &dd, &pd));
    if (pd) {
        ovk_binding bd[14] = { { &b_q, 0, 0 }, { &b_rows, 0, 0 }, { &b_items, 0, 0 }, { &cache.int2_pool, 0, 0 },
                                 { &cache.f16_pool, 0, 0 }, { &cache.int2_table, 0, 0 }, { &cache.f16_table, 0, 0 },
                                 { &b_part, 0, 0 }, { &b_rot, 0, 0 }, { &b_out, 0, 0 }, { &b_cnt, 0, 0 },
                                 { &b_means, 0, 0 }, { &b_q8, 0, out_n }, { &b_q8, OSCAR_X_Q8_SCALES(out_n), out_n / 8 } };
        struct attn_decode_push pushd = { n_items, s.max_int2_pages, s.max_f16_pages, scale, 1 };
        struct attn_rows_push pushr = { s.n_rows, s.max_int2_pages, s.max_f16_pages, scale, rot_base };
        uint32_t gd[3];
        if (by_rows) ovk_attn_grid((s.n_rows * n_head + cfg.wg - 1) / cfg.wg, 1, gd);
        else ovk_attn_grid(n_items, c->nkv, gd);
        CHECK_OK(attn_scene_run_twice(ctx, pd, bd, by_rows ? (const void *)&pushr : (const void *)&pushd, gd, &b_out));
        CHECK_OK(ovk_buffer_download(ctx, &b_out, 0, got, sizeof *got * out_n));
        uint32_t *cnt = malloc(4 * s.n_rows * c->nkv);
        CHECK_OK(ovk_buffer_download(ctx, &b_cnt, 0, cnt, 4 * s.n_rows * c->nkv));
        uint32_t nonzero = 0;
        for (uint32_t i = 0; i < s.n_rows * c->nkv; i++) nonzero += cnt[i] != 0;
        CHECK_MSG(nonzero == 0, "%s: %u merge counters not back at 0", c->name, nonzero);
        free(cnt);

        if (!by_rows) { /* int8 blocks of the kernel's own output: scales bit-exact, codes within one step */
            uint8_t *q8 = malloc(q8_bytes);
            CHECK_OK(ovk_buffer_download(ctx, &b_q8, 0, q8, q8_bytes));
            size_t off = test_q8_blocks_off(got, out_n, (const uint32_t *)q8, (const float *)(q8 + OSCAR_X_Q8_SCALES(out_n)));
            CHECK_MSG(off == 0, "%s %s: %zu int8 scales or codes off the output's", shader, c->name, off);
            free(q8);
        }
        size_t bad;
        double nse = attn_scene_nse(c->name, got, want, out_n, &bad);
        CHECK_MSG(bad == 0 && nse <= 1e-5, "%s %s: %zu non-finite, nse %.3g vs reference (%u rows, %u items)", shader,
                  c->name, bad, nse, s.n_rows, n_items);
        if (by_rows)
            printf("%-24s %-34s rows %3u items %5u split %4u wg %3u TB %u  nse %.3g", shader, c->name, s.n_rows, n_items,
                   split, cfg.wg, cfg.tb, nse);
        else if (cm)
            printf("%-24s %-34s rows %3u items %5u split %4u wg %3u walkers %u step %2u  nse %.3g", shader, c->name, s.n_rows,
                   n_items, split, cfg.wg, cfg.walkers, 16 * cfg.ku, nse);
        else if (stream)
            printf("%-16s %-34s rows %3u items %5u split %4u wg %3u KU %u VE %2u FKU %u PF %u  nse %.3g", shader, c->name,
                   s.n_rows, n_items, split, cfg.wg, cfg.ku, cfg.ve, cfg.fku, cfg.prefetch, nse);
        else
            printf("%-24s %-34s rows %3u items %5u split %4u wg %3u chunk %4u U %u VU %u  nse %.3g", shader, c->name, s.n_rows,
                   n_items, split, cfg.wg, cfg.item_tokens, cfg.u, cfg.vu, nse);
        if (want_q32 && c->q_mul <= 1.0f) {
            double nse_q32 = test_nse(got, want_q32, out_n);
            CHECK_MSG(nse_q32 <= 1e-4, "%s: nse %.3g vs the fp32-q reference", c->name, nse_q32);
            printf("  fp32-q %.3g", nse_q32);
        }
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
    ovk_buffer *bufs[] = { &b_q, &b_rows, &b_items, &b_part, &b_out, &b_rot, &b_cnt, &b_means, &b_q8 };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    attn_scene_buffers_destroy(ctx, &cache);
    free(q); free(got); free(want); free(want_q32); free(rows); free(items); free(rot); free(means);
    attn_scene_free(&s);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL; /* run only the cases whose name holds this text */
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
        /* one long sequence in items of 700 tokens, each one chunk: every thread scores and
         * weighs several tokens, every value lane several rounds */
        { "int2 long chunks d64 G64 gqa2",  R, 64, 64, 16, 2, 2, 64, 700, 4, 24, 1.0f, 1.0f, 0, 0, 2000 },
        /* more than 65535 items in all (x/z grid split); each row stays under 65535 items
         * because lavapipe stops any shader loop after 65535 iterations */
        { "int2 72000 one-token items",  R, 64, 64, 64, 1, 1, 64, 1, 4, 16, 1.0f, 1.0f, 0, 0, 36000 },
    };
    /* each kernel, fp32 and (where the device has fp16 arithmetic) packed fp16; the last case
     * only tests the grid, which the variants share */
    size_t n_cases = sizeof cases / sizeof cases[0];
    for (int stream = 0; stream < 2; stream++) {
        for (size_t i = 0; i < n_cases; i++)
            if (!only || strstr(cases[i].name, only)) run_case(ctx, &cases[i], stream, 0, 0, 0);
        if (ctx->info.float16_arithmetic) {
            for (size_t i = 0; i + 1 < n_cases; i++)
                if (!only || strstr(cases[i].name, only)) run_case(ctx, &cases[i], stream, 1, 0, 0);
        } else
            printf("packed fp16 variants: skipped (no shaderFloat16)\n");
    }
    /* the rows kernel (fp32 only), where the device has texel buffers */
    if (ctx->texel_buffers) {
        for (size_t i = 0; i < n_cases; i++)
            if (!only || strstr(cases[i].name, only)) run_case(ctx, &cases[i], 2, 0, 0, 0);
    } else
        printf("rows kernel: skipped (no R32G32B32A32_UINT uniform texel buffers)\n");
    /* the cooperative-matrix kernel on every case but the grid one; its scalar emulation (where the
     * device has fp16 arithmetic but no cooperative matrices; slow) on the cases that reach each of
     * its boundaries: GQA 3, 4 and 8, d 64 to 256, G 32 to 128, empty and 1-token items, several
     * steps a walker, unaligned pages, fp16 items, huge logits */
    /* (the picker refuses the emulation on subgroups under 4 lanes) */
    int cm_dev = ovk_kv_attn_cm_device(ctx);
    if (cm_dev == 2 && ctx->info.min_subgroup_size < 4) cm_dev = 0;
    static const char *const emulated[] = { "int2 d128 G64 gqa4 wg64", "int2 d64 G32 gqa8 wg128", "int2 d256 G128 gqa8 wg64",
                                            "int2 adversarial q x300", "fp16 d64 gqa3 wg64 split1", "int2 unaligned pages P5",
                                            "int2 long chunks d64 G64 gqa2" };
    /* each on 16 x 16 x 16 matrices and, at GQA <= 8 where the device has them, on 16 x 8 x 16
     * ones; where only the emulations run, the latter's on two cases (GQA 8 and 4, d 64 and 128):
     * lavapipe takes minutes to compile an emulation for a new shape */
    static const char *const emulated8[] = { "int2 d64 G32 gqa8 wg128", "int2 d128 G64 gqa4 wg64" };
    int cm8 = cm_dev && ovk_kv_attn_cm8_device(ctx) == cm_dev;
    if (cm_dev) {
        for (size_t i = 0; i + 1 < n_cases; i++) {
            int take = cm_dev == 1;
            for (size_t k = 0; k < sizeof emulated / sizeof emulated[0]; k++) take |= !strcmp(cases[i].name, emulated[k]);
            if (!take || (only && !strstr(cases[i].name, only))) continue;
            run_case(ctx, &cases[i], 3, 1, 0, 16);
            int take8 = cm_dev == 1;
            for (size_t k = 0; k < sizeof emulated8 / sizeof emulated8[0]; k++) take8 |= !strcmp(cases[i].name, emulated8[k]);
            if (cm8 && take8 && cases[i].gqa <= 8) run_case(ctx, &cases[i], 3, 1, 0, 8);
        }
        if (!cm8) printf("cooperative-matrix kernel on 16 x 8 x 16 matrices: skipped (not on this device)\n");
    } else
        printf("cooperative-matrix kernel: skipped (neither cooperative matrices nor fp16 arithmetic with subgroups of 4 or more)\n");
    /* the integer-dot variant: INT2 cases only (fp16 mode never takes it) */
    if (ctx->info.float16_arithmetic && ovk_variant_usable(ctx, "attn_decode_chunked_f16.idot")) {
        for (size_t i = 0; i + 1 < n_cases; i++)
            if (cases[i].mode != KV_MODE_FP16 && (!only || strstr(cases[i].name, only))) run_case(ctx, &cases[i], 0, 1, 1, 0);
    } else
        printf("integer-dot variant: skipped (no integer dot products or shaderFloat16, or not built)\n");
    return test_gpu_finish(ctx);
}
