/* The KV write path on the GPU against its C references (runtime/kv_ref.c):
 *   kv_append   fp32/fp16 rows -> (rotated) fp16 pages: exact without rotation, at most 1 fp16
 *               ulp with it (the shader sums in the reference's order without fusing, so it is
 *               exact on a conforming device; the bound leaves room for denormal flushing), and
 *               the orientation y = x·R checked against an explicit product with a
 *               non-symmetric R;
 *   kv_flush    fp16 pages -> INT2 pages: every word of the INT2 pool bit-exact, on random and
 *               adversarial rows (outliers, all-equal, zeros of both signs, ties at the clip
 *               quantile, subnormals);
 *   rotate_rows x·R and x·Rᵀ, per layer and per head: normalised squared error vs double.
 * RoPE on load (the model's path: kv_append's K rows, rotate_rows' q, normal and neox pairs,
 * partial n_rot) must equal rope.comp followed by the plain kernel bit for bit.
 * Every pool is filled with a sentinel first, so a write outside the addressed slots shows.
 * Workgroup sizes include ones smaller than head_dim and not powers of two. */
#include <string.h>

#include "half.h"
#include "int2_quant.h"
#include "kv_cache_impl.h" /* ovk_kv_append_pairs */
#include "kv_ref.h"
#include "ops.h" /* ovk_rope_inv_freq */
#include "orthogonal.h"
#include "test_gpu.h"

#define SENTINEL_F16 0xA5A5A5A5u
#define SENTINEL_INT2 0x5A5A5A5Au

static const uint32_t workgroups[] = { 32, 64, 128, 256, 48, 7 };
#define N_WORKGROUPS (sizeof workgroups / sizeof workgroups[0])

/* ---- helpers ----------------------------------------------------------------------------- */

/* Distance in fp16 ulps (steps of the ordered encoding; +0 and -0 are 0 apart). */
static uint32_t f16_ulps(uint16_t a, uint16_t b)
{
    int32_t ia = a & 0x8000u ? -(int32_t)(a & 0x7FFFu) : (int32_t)a;
    int32_t ib = b & 0x8000u ? -(int32_t)(b & 0x7FFFu) : (int32_t)b;
    return (uint32_t)(ia > ib ? ia - ib : ib - ia);
}

static ovk_pipeline *pipeline(oscar_context *ctx, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                const uint32_t spec[KV_WRITE_N_SPEC])
{
    ovk_pipeline_desc desc = { .shader = shader, .n_buffers = n_buffers, .push_size = push_size,
                                 .n_spec = KV_WRITE_N_SPEC };
    memcpy(desc.spec, spec, sizeof(uint32_t) * KV_WRITE_N_SPEC);
    ovk_pipeline *p = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &desc, &p));
    return p;
}

/* Picks n distinct (page, slot) positions out of n_pages * P, in random order. */
static void distinct_positions(uint32_t n, uint32_t n_pages, uint32_t P, uint32_t *page, uint32_t *slot)
{
    uint32_t total = n_pages * P;
    uint32_t *perm = malloc(sizeof(uint32_t) * total);
    for (uint32_t i = 0; i < total; i++) perm[i] = i;
    for (uint32_t i = total - 1; i > 0; i--) {
        uint32_t j = test_rng_u32() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t i = 0; i < n; i++) {
        page[i] = perm[i] / P;
        slot[i] = perm[i] % P;
    }
    free(perm);
}

/* Fills one row x[0..d) with a pattern; kinds beyond the adversarial ones are Gaussian. */
static void fill_row(float *x, uint32_t d, uint32_t kind)
{
    switch (kind) {
    case 0: /* planted 30x outliers */
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_normal();
        for (int k = 0; k < 3; k++) x[test_rng_u32() % d] = 30.0f * (test_rng_u32() & 1 ? 1.0f : -1.0f);
        break;
    case 1: /* all equal */
        for (uint32_t i = 0; i < d; i++) x[i] = 0.75f;
        break;
    case 2: /* all equal, negative */
        for (uint32_t i = 0; i < d; i++) x[i] = -3.5f;
        break;
    case 3: /* zeros of both signs */
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_u32() & 1 ? -0.0f : 0.0f;
        break;
    case 4: /* few magnitudes, many ties at any quantile */
        for (uint32_t i = 0; i < d; i++) x[i] = (float)(1 + test_rng_u32() % 3) * (test_rng_u32() & 1 ? 1.0f : -1.0f);
        break;
    case 5: /* +0 / -0 runs inside groups, with one nonzero value per 32 */
        for (uint32_t i = 0; i < d; i++) x[i] = (i / 4) & 1 ? -0.0f : 0.0f;
        for (uint32_t i = 5; i < d; i += 32) x[i] = test_rng_u32() & 1 ? 0.5f : -0.0f;
        break;
    case 6: /* fp16 subnormals and tiny values */
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_normal() * 1e-6f;
        break;
    case 7: /* two levels */
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_u32() & 1 ? 1.0f : -2.0f;
        break;
    case 8: /* small integers, exactly representable */
        for (uint32_t i = 0; i < d; i++) x[i] = (float)((int)(test_rng_u32() % 17) - 8);
        break;
    case 9: /* large but finite in fp16 */
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_normal() * 6000.0f;
        break;
    case 10: /* -0 first in every group, then +0 runs, one negative value */
        for (uint32_t i = 0; i < d; i++) x[i] = (i / 4) & 1 ? 0.0f : -0.0f;
        x[d - 3] = -0.25f;
        break;
    default:
        for (uint32_t i = 0; i < d; i++) x[i] = test_rng_normal() * (kind % 3 == 0 ? 0.05f : 1.0f);
        break;
    }
}

/* ---- kv_flush -------------------------------------------------------------------------------- */

typedef struct flush_case {
    uint32_t d, G, P, nkv, wg;
    float clip_k, clip_v;
    uint32_t gx_max; /* workgroups in x; fewer than tokens exercises the shader's token loop */
    uint32_t feedback; /* K codes by error feedback: 0 no, 1 one matrix, 2 one per KV head */
    uint32_t refit;    /* rounds of least-squares refit (G == d) */
    uint32_t metric;   /* keys refitted under a random metric (laid out as the feedback; per layer without it) */
} flush_case;

/* Random error-feedback matrices [n][d][d]: strictly upper triangular, entries in [-0.25, 0.25]
 * (the calibrator's are mostly smaller), half of them zero so that sparse rows occur too. */
static float *random_feedback(uint32_t n, uint32_t d)
{
    float *f = calloc((size_t)n * d * d, sizeof *f);
    for (size_t m = 0; f && m < n; m++)
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = i + 1; j < d; j++)
                if (test_rng_u32() & 1) f[(m * d + i) * d + j] = 0.5f * test_rng_uniform() - 0.25f;
    return f;
}

/* Random refit metrics [n][d][d]: AᵀA/d + 0.1 I for a normal A, scaled to mean diagonal 1
 * (what oscar-calib writes: symmetric positive definite, mean diagonal 1). */
static float *random_metric(uint32_t n, uint32_t d)
{
    float *m = calloc((size_t)n * d * d, sizeof *m), *a = malloc((size_t)d * d * sizeof *a);
    for (size_t k = 0; m && a && k < n; k++) {
        for (size_t i = 0; i < (size_t)d * d; i++) a[i] = test_rng_normal();
        double trace = 0.0;
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = 0; j < d; j++) {
                double s = i == j ? 0.1 * d : 0.0;
                for (uint32_t r = 0; r < d; r++) s += (double)a[r * d + i] * a[r * d + j];
                m[(k * d + i) * d + j] = (float)(s / d);
                trace += i == j ? s / d : 0.0;
            }
        for (size_t i = 0; i < (size_t)d * d; i++) m[k * d * d + i] = (float)(m[k * d * d + i] * d / trace);
    }
    free(a);
    return m;
}

/* Runs kv_flush over an fp16 pool of adversarial and random rows; every INT2 word must equal
 * kv_ref_flush's. With `overflow` some rows hold fp16 infinities: only checks nothing breaks
 * and the untouched words stay untouched (inf - inf has no portable result). */
static void test_flush(oscar_context *ctx, const flush_case *c, int overflow)
{
    kv_ref_shape s = { c->d, c->G, c->P, c->nkv };
    const uint32_t n_src_pages = 3, n_dst_pages = 4, n_tok = c->P + 5;
    size_t f16_words = (size_t)n_src_pages * KV_F16_PAGE_WORDS(c->nkv, c->P, c->d);
    size_t int2_words = (size_t)n_dst_pages * KV_INT2_PAGE_WORDS(c->nkv, c->P, c->d, c->G);
    uint32_t *f16_pool = malloc(f16_words * 4);     /* [page][K,V][NKV][P][d/2] */
    uint32_t *want = malloc(int2_words * 4);        /* [page][K codes, K params, V codes, V params] */
    uint32_t *got = malloc(int2_words * 4);
    struct kv_token_slot *slots = malloc(sizeof *slots * n_tok);
    uint32_t src_page[64 + 5], src_slot[64 + 5], dst_page[64 + 5], dst_slot[64 + 5];
    float row[KV_MAX_HEAD_DIM];
    uint32_t kind_counter = 0;
    for (size_t off = 0; off < f16_words; off += c->d / 2) {
        fill_row(row, c->d, kind_counter++ % 15);
        if (overflow && kind_counter % 3 == 0) row[test_rng_u32() % c->d] = (test_rng_u32() & 1) ? 1e6f : -1e6f;
        for (uint32_t w = 0; w < c->d / 2; w++)
            f16_pool[off + w] = (uint32_t)ovk_f32_to_f16(row[2 * w]) | (uint32_t)ovk_f32_to_f16(row[2 * w + 1]) << 16;
    }
    distinct_positions(n_tok, n_src_pages, c->P, src_page, src_slot);
    distinct_positions(n_tok, n_dst_pages, c->P, dst_page, dst_slot);
    for (uint32_t t = 0; t < n_tok; t++)
        slots[t] = (struct kv_token_slot){ .src_row = src_page[t], .src_slot = src_slot[t],
                                           .dst_page = dst_page[t], .dst_slot = dst_slot[t] };
    for (size_t i = 0; i < int2_words; i++) want[i] = SENTINEL_INT2;
    uint32_t n_fb = c->feedback == 2 ? c->nkv : 1;
    float *fb = c->feedback ? random_feedback(n_fb, c->d) : NULL;
    float *met = c->metric ? random_metric(n_fb, c->d) : NULL;
    kv_ref_flush(&s, slots, n_tok, c->clip_k, c->clip_v, fb, c->feedback == 2, met, c->refit, f16_pool, want);

    ovk_buffer b_slots = { 0 }, b_f16 = { 0 }, b_int2 = { 0 }, b_fb = { 0 }, b_met = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, fb, fb ? (size_t)n_fb * c->d * c->d * 4 : 16, &b_fb));
    CHECK_OK(test_gpu_buffer_from(ctx, met, met ? (size_t)n_fb * c->d * c->d * 4 : 16, &b_met));
    CHECK_OK(test_gpu_buffer_from(ctx, slots, sizeof *slots * n_tok, &b_slots));
    CHECK_OK(test_gpu_buffer_from(ctx, f16_pool, f16_words * 4, &b_f16));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, int2_words * 4, &b_int2));
    CHECK_OK(ovk_buffer_fill(ctx, &b_int2, 0, int2_words * 4, SENTINEL_INT2));
    uint32_t spec[KV_WRITE_N_SPEC] = { /* WORKGROUP */ c->wg, /* HEAD_DIM */ c->d, /* GROUP */ c->G,
                                       /* PAGE */ c->P, /* N_KV */ c->nkv, /* GQA */ 1, /* MODE */ KV_MODE_ROTATED,
                                       /* ROT_PER_HEAD */ 0, /* INPUT_F16 */ 0, /* TRANSPOSE */ 0 };
    ovk_pipeline *p = pipeline(ctx, "kv_flush", 5, sizeof(struct kv_flush_push), spec);
    if (p) {
        struct kv_flush_push push = { .n_tokens = n_tok, .clip_k = c->clip_k, .clip_v = c->clip_v, .key_feedback = c->feedback,
                                      .refit = c->refit, .key_metric = c->metric ? (c->feedback == 2 ? 2 : 1) : 0 };
        ovk_binding b[5] = { { &b_slots, 0, 0 }, { &b_f16, 0, 0 }, { &b_int2, 0, 0 }, { &b_fb, 0, 0 }, { &b_met, 0, 0 } };
        uint32_t gx = n_tok < c->gx_max ? n_tok : c->gx_max;
        CHECK_OK(test_gpu_run(ctx, p, b, &push, gx, c->nkv, 2));
        CHECK_OK(ovk_buffer_download(ctx, &b_int2, 0, got, int2_words * 4));
        size_t bad = 0, bad_sentinel = 0;
        for (size_t i = 0; i < int2_words; i++) {
            if (want[i] == SENTINEL_INT2 && got[i] != SENTINEL_INT2) bad_sentinel++;
            if (!overflow && got[i] != want[i] && bad++ < 4)
                fprintf(stderr, "  int2 word %zu: gpu %08x, ref %08x\n", i, got[i], want[i]);
        }
        CHECK_MSG(bad == 0 && bad_sentinel == 0,
                  "kv_flush d=%u G=%u P=%u nkv=%u wg=%u clip %.3g/%.3g feedback %u refit %u metric %u%s: %zu words differ, "
                  "%zu untouched words written", c->d, c->G, c->P, c->nkv, c->wg, c->clip_k, c->clip_v, c->feedback, c->refit,
                  c->metric, overflow ? " (inf rows)" : "", bad, bad_sentinel);
    }
    if ((fb || c->refit) && !overflow) { /* the feedback and the refit must each change words, or this case tests nothing */
        uint32_t *plain = malloc(int2_words * 4);
        for (size_t i = 0; plain && i < int2_words; i++) plain[i] = SENTINEL_INT2;
        /* without the last feature this case adds (the refit, else the feedback) */
        if (plain) kv_ref_flush(&s, slots, n_tok, c->clip_k, c->clip_v, c->refit ? fb : NULL, c->feedback == 2, NULL, 0, f16_pool, plain);
        size_t changed = 0;
        for (size_t i = 0; plain && i < int2_words; i++) changed += plain[i] != want[i];
        CHECK_MSG(plain && changed > 0, "kv_flush d=%u feedback %u refit %u: the words equal those without it", c->d, c->feedback,
                  c->refit);
        free(plain);
    }
    free(fb);
    free(met);
    ovk_buffer_destroy(ctx, &b_fb);
    ovk_buffer_destroy(ctx, &b_met);
    ovk_buffer_destroy(ctx, &b_slots);
    ovk_buffer_destroy(ctx, &b_f16);
    ovk_buffer_destroy(ctx, &b_int2);
    free(f16_pool);
    free(want);
    free(got);
    free(slots);
}

/* ---- kv_append ------------------------------------------------------------------------------- */

typedef struct append_case {
    uint32_t d, G, P, nkv, wg, mode, per_head, input_f16;
    uint32_t gx_max;
    uint32_t center_block; /* OSCAR mode: a key-center table of blocks of this many positions, 0: none */
    int texel;             /* kv_append_texel (the CPU shape: R by texel fetches at a texel offset) */
    uint32_t pairs;        /* kv_append, rotated modes: output pairs a workgroup (0: append_pairs picks) */
} append_case;

/* kv_append's output pairs a workgroup for a case: 1 without rotation; else the case's, or the
 * cache's choice for this device (ovk_kv_append_pairs) halved 0-2 times, still dividing d/2. */
static uint32_t append_pairs(oscar_context *ctx, const append_case *c)
{
    if (c->mode < KV_MODE_HADAMARD || c->texel) return 1;
    if (c->pairs) return c->pairs;
    uint32_t pairs = ovk_kv_append_pairs(c->d, ctx->info.max_shared_memory);
    for (uint32_t k = (c->wg + c->nkv) % 3; k > 0 && pairs % 2 == 0; k--) pairs /= 2;
    return pairs;
}

/* R at a texel offset, as the texel shapes read a layer's: [one NaN copy][r], n floats each;
 * *base: the texel of r. */
static void upload_rot_at(oscar_context *ctx, const float *r, size_t n, ovk_buffer *b, uint32_t *base)
{
    float *two = malloc(2 * n * sizeof *two);
    for (size_t i = 0; i < n; i++) two[i] = NAN, two[n + i] = r[i];
    CHECK_OK(test_gpu_buffer_from(ctx, two, 2 * n * sizeof *two, b));
    *base = (uint32_t)(n / 4);
    free(two);
}

/* Runs kv_append (or kv_append_texel with c->texel) with RoPE over n_rot dims (0: none) on
 * bindings b; R at texel rot_base for the texel shape. */
static void run_append(oscar_context *ctx, const append_case *c, const uint32_t *spec, const ovk_binding *b,
                       uint32_t n_rows, uint32_t n_rot, uint32_t rot_base)
{
    ovk_pipeline_desc desc = { .shader = c->texel ? "kv_append_texel" : "kv_append", .n_buffers = 9,
                                 .push_size = c->texel ? sizeof(struct kv_append_texel_push) : sizeof(struct kv_append_push),
                                 .n_spec = KV_WRITE_N_SPEC, .texel_bindings = c->texel ? 1u << 2 | 1u << 3 : 0 };
    memcpy(desc.spec, spec, sizeof(uint32_t) * KV_WRITE_N_SPEC);
    if (c->texel) desc.spec[KV_SPEC_WORKGROUP] = c->wg % 13 + 1; /* any size (8 in the cache) */
    ovk_pipeline *p = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &desc, &p));
    if (!p) return;
    if (c->texel) {
        struct kv_append_texel_push push = { n_rows, n_rot, rot_base };
        uint32_t groups = (n_rows * c->nkv + desc.spec[KV_SPEC_WORKGROUP] - 1) / desc.spec[KV_SPEC_WORKGROUP];
        CHECK_OK(test_gpu_run(ctx, p, b, &push, groups, 2, 1)); /* y: K, V */
    } else { /* token groups up to gx_max, times R's column blocks in the rotated modes */
        struct kv_append_push push = { .n_tokens = n_rows, .n_rot = n_rot };
        uint32_t blocks = c->mode >= KV_MODE_HADAMARD ? c->d / 2 / spec[KV_SPEC_APPEND_PAIRS] : 1;
        uint32_t groups = n_rows < c->gx_max ? n_rows : c->gx_max;
        if (groups > 65535 / blocks) groups = 65535 / blocks;
        CHECK_OK(test_gpu_run(ctx, p, b, &push, groups * blocks, c->nkv, 2));
    }
}

/* ---- RoPE on load (kv_append's K rows, rotate_rows' q) ---------------------------------------- */

/* y = RoPE(x) by rope.comp, the op the model ran before the cache applied RoPE itself:
 * x, y [n_tok][n_heads][d], pos [n_tok], freq [n_rot/2]. */
static void gpu_rope(oscar_context *ctx, int neox, const ovk_buffer *x, const ovk_buffer *pos, const ovk_buffer *freq,
                     const ovk_buffer *y, uint32_t d, uint32_t n_heads, uint32_t n_tok, uint32_t n_rot)
{
    ovk_pipeline_desc desc = { .shader = "rope", .n_buffers = 4, .push_size = 16, .n_spec = 2, .spec = { 64, (uint32_t)neox } };
    ovk_pipeline *p = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &desc, &p));
    if (!p) return;
    uint32_t push[4] = { d, n_heads, n_tok, n_rot };
    ovk_binding b[4] = { { x, 0, 0 }, { pos, 0, 0 }, { freq, 0, 0 }, { y, 0, 0 } };
    CHECK_OK(test_gpu_run(ctx, p, b, push, (n_tok * n_heads * d / 2 + 63) / 64, 1, 1));
}

/* Positions (large, so the angle reduction matters) and frequencies for n_tok rows. */
static void rope_inputs(oscar_context *ctx, uint32_t n_tok, uint32_t n_rot, ovk_buffer *b_pos, ovk_buffer *b_freq)
{
    int32_t *pos = malloc(n_tok * sizeof *pos);
    float freq[KV_MAX_HEAD_DIM / 2];
    for (uint32_t t = 0; t < n_tok; t++) pos[t] = (int32_t)(t * 7919u % 131072u);
    CHECK_OK(ovk_rope_inv_freq(freq, n_rot, 500000.0, 1.0, NULL));
    CHECK_OK(test_gpu_buffer_from(ctx, pos, n_tok * sizeof *pos, b_pos));
    CHECK_OK(test_gpu_buffer_from(ctx, freq, n_rot / 2 * sizeof(float), b_freq));
    free(pos);
}

/* kv_append with RoPE on load must write what rope.comp followed by kv_append without it
 * writes, bit for bit (fp32 input; b: the bindings of the plain run, K at 0, pool at 5).
 * Normal pairs over every dim for even modes, neox over half of them for odd ones. */
static void check_append_rope(oscar_context *ctx, const append_case *c, const uint32_t *spec0, const ovk_binding *b0,
                              uint32_t n_rows, size_t pool_words, uint32_t rot_base)
{
    const int neox = c->mode % 2;
    const uint32_t d = c->d, n_rot = neox ? d / 2 : d;
    uint32_t *want = malloc(pool_words * 4), *got = malloc(pool_words * 4);
    ovk_buffer b_pos = { 0 }, b_freq = { 0 }, b_kr = { 0 }, b_pool = { 0 };
    rope_inputs(ctx, n_rows, n_rot, &b_pos, &b_freq);
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)n_rows * c->nkv * d * 4, &b_kr));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, pool_words * 4, &b_pool));
    gpu_rope(ctx, neox, b0[0].buffer, &b_pos, &b_freq, &b_kr, d, c->nkv, n_rows, n_rot);
    uint32_t spec[KV_WRITE_N_SPEC], spec_rope[KV_WRITE_N_SPEC];
    memcpy(spec, spec0, sizeof spec);
    memcpy(spec_rope, spec0, sizeof spec);
    spec_rope[KV_SPEC_ROPE] = neox ? KV_ROPE_NEOX : KV_ROPE_NORMAL;
    {
        ovk_binding b[9];
        memcpy(b, b0, sizeof b);
        b[5] = (ovk_binding){ &b_pool, 0, 0 };
        b[0] = (ovk_binding){ &b_kr, 0, 0 }; /* RoPE'd by rope.comp, then the plain append */
        CHECK_OK(ovk_buffer_fill(ctx, &b_pool, 0, pool_words * 4, SENTINEL_F16));
        run_append(ctx, c, spec, b, n_rows, 0, rot_base);
        CHECK_OK(ovk_buffer_download(ctx, &b_pool, 0, want, pool_words * 4));
        b[0] = b0[0]; /* the raw rows, RoPE on load */
        b[7] = (ovk_binding){ &b_pos, 0, 0 };
        b[8] = (ovk_binding){ &b_freq, 0, 0 };
        CHECK_OK(ovk_buffer_fill(ctx, &b_pool, 0, pool_words * 4, SENTINEL_F16));
        run_append(ctx, c, spec_rope, b, n_rows, n_rot, rot_base);
        CHECK_OK(ovk_buffer_download(ctx, &b_pool, 0, got, pool_words * 4));
        size_t differ = 0, written = 0;
        for (size_t i = 0; i < pool_words; i++) {
            differ += got[i] != want[i];
            written += got[i] != SENTINEL_F16;
        }
        CHECK_MSG(differ == 0 && written > 0, "%s RoPE on load d=%u mode=%u neox=%d wg=%u: %zu of %zu words differ",
                  c->texel ? "kv_append_texel" : "kv_append", d, c->mode, neox, c->wg, differ, pool_words);
    }
    ovk_buffer_destroy(ctx, &b_pos);
    ovk_buffer_destroy(ctx, &b_freq);
    ovk_buffer_destroy(ctx, &b_kr);
    ovk_buffer_destroy(ctx, &b_pool);
    free(want);
    free(got);
}


/* Runs kv_append on random and adversarial rows; compares every fp16 pool word with
 * kv_ref_append (exact unrotated, <= 1 ulp rotated), checks the orientation of R against an
 * explicit x·R, then flushes the appended pages on both sides and compares the INT2 pools. */
static void test_append(oscar_context *ctx, const append_case *c)
{
    kv_ref_shape s = { c->d, c->G, c->P, c->nkv };
    const uint32_t d = c->d, n_rows = c->P + 3, n_pages = 3;
    const int rotate = c->mode >= KV_MODE_HADAMARD;
    const uint32_t n_rot = c->per_head ? c->nkv : 1;
    size_t in_elems = (size_t)n_rows * c->nkv * d;
    size_t in_words = c->input_f16 ? in_elems / 2 : in_elems;
    size_t pool_words = (size_t)n_pages * KV_F16_PAGE_WORDS(c->nkv, c->P, d);
    size_t int2_words = (size_t)n_pages * KV_INT2_PAGE_WORDS(c->nkv, c->P, d, c->G);
    float *kv_f32[2];                                   /* [n_rows][NKV][d] the fp32 rows (K, V) */
    uint32_t *kv_in[2];                                 /* what is uploaded: fp32 bits or fp16 pairs */
    float *rot[2];                                      /* [n_rot][d][d] R_K, R_V */
    uint32_t *want = malloc(pool_words * 4), *got = malloc(pool_words * 4); /* fp16 pools */
    uint32_t *want2 = malloc(int2_words * 4), *got2 = malloc(int2_words * 4); /* INT2 pools */
    struct kv_token_slot *slots = malloc(sizeof *slots * n_rows);
    struct kv_token_slot *fslots = malloc(sizeof *fslots * n_rows);
    uint32_t page[64 + 3], slot[64 + 3];
    for (int k = 0; k < 2; k++) {
        kv_f32[k] = malloc(in_elems * 4);
        kv_in[k] = malloc(in_elems * 4);
        rot[k] = malloc(sizeof(float) * n_rot * d * d);
        for (size_t r = 0; r < (size_t)n_rows * c->nkv; r++) fill_row(kv_f32[k] + r * d, d, (uint32_t)(r * 5 + k) % 16);
        /* one row whose rotation leaves the fp16 range: must not break anything */
        for (uint32_t i = 0; i < d; i++) kv_f32[k][i] = 70000.0f * (i % 2 ? 1.0f : -1.0f);
        if (c->input_f16) {
            for (size_t i = 0; i < in_elems / 2; i++) {
                kv_in[k][i] = (uint32_t)ovk_f32_to_f16(kv_f32[k][2 * i]) | (uint32_t)ovk_f32_to_f16(kv_f32[k][2 * i + 1]) << 16;
                kv_f32[k][2 * i] = ovk_f16_to_f32((uint16_t)(kv_in[k][i] & 0xFFFFu));
                kv_f32[k][2 * i + 1] = ovk_f16_to_f32((uint16_t)(kv_in[k][i] >> 16));
            }
            if (!rotate) kv_in[k][d] = 0x7E017C01u; /* NaN payloads: copied verbatim */
        } else {
            memcpy(kv_in[k], kv_f32[k], in_elems * 4);
        }
        if (c->mode == KV_MODE_HADAMARD)
            for (uint32_t m = 0; m < n_rot; m++) ovk_kv_hadamard(d, rot[k] + (size_t)m * d * d);
        else
            test_random_orthogonal(rot[k], n_rot, d);
    }
    /* centering vectors [K,V][NKV][d]: random in OSCAR mode (subtracted before the rotation),
     * ignored by the other modes (non-zero there too, so reading them would show); then the
     * key-center table [n_blocks][NKV][d/2] fp16 pairs (kv_write.h), random, read with
     * center_block only. Positions (the append slots' src_slot) span 4 blocks. */
    const uint32_t n_blocks = 4, cb = c->center_block ? c->center_block : 16;
    const size_t mean_words = 2 * (size_t)c->nkv * d + (size_t)n_blocks * c->nkv * d / 2;
    float *means = malloc(sizeof(float) * mean_words);
    uint32_t *centers = (uint32_t *)(means + 2 * (size_t)c->nkv * d);
    for (uint32_t i = 0; i < 2 * c->nkv * d; i++) means[i] = 3.0f * test_rng_normal();
    for (size_t i = 0; i < (size_t)n_blocks * c->nkv * d / 2; i++)
        centers[i] = (uint32_t)ovk_f32_to_f16(2.0f * test_rng_normal()) | (uint32_t)ovk_f32_to_f16(2.0f * test_rng_normal()) << 16;
    distinct_positions(n_rows, n_pages, c->P, page, slot);
    for (uint32_t t = 0; t < n_rows; t++) {
        uint32_t pos = (t * 37) % (n_blocks * cb);
        slots[t] = (struct kv_token_slot){ .src_row = (t * 7) % n_rows, .src_slot = pos, .dst_page = page[t], .dst_slot = slot[t] };
        fslots[t] = (struct kv_token_slot){ .src_row = page[t], .src_slot = slot[t], .dst_page = page[t], .dst_slot = slot[t] };
    }
    for (size_t i = 0; i < pool_words; i++) want[i] = SENTINEL_F16;
    kv_ref_append(&s, c->mode, c->per_head, c->input_f16, kv_in[0], kv_in[1], rot[0], rot[1], means,
                  means + (size_t)c->nkv * d, c->center_block ? centers : NULL, c->center_block, slots, n_rows, want);

    ovk_buffer b_k = { 0 }, b_v = { 0 }, b_rk = { 0 }, b_rv = { 0 }, b_slots = { 0 }, b_pool = { 0 };
    ovk_buffer b_fslots = { 0 }, b_int2 = { 0 }, b_means = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, means, sizeof(float) * mean_words, &b_means));
    CHECK_OK(test_gpu_buffer_from(ctx, kv_in[0], in_words * 4, &b_k));
    CHECK_OK(test_gpu_buffer_from(ctx, kv_in[1], in_words * 4, &b_v));
    uint32_t rot_base = 0;
    if (rotate && c->texel) {
        upload_rot_at(ctx, rot[0], (size_t)n_rot * d * d, &b_rk, &rot_base);
        upload_rot_at(ctx, rot[1], (size_t)n_rot * d * d, &b_rv, &rot_base);
    } else if (rotate) {
        CHECK_OK(test_gpu_buffer_from(ctx, rot[0], sizeof(float) * n_rot * d * d, &b_rk));
        CHECK_OK(test_gpu_buffer_from(ctx, rot[1], sizeof(float) * n_rot * d * d, &b_rv));
    }
    CHECK_OK(test_gpu_buffer_from(ctx, slots, sizeof *slots * n_rows, &b_slots));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, pool_words * 4, &b_pool));
    CHECK_OK(ovk_buffer_fill(ctx, &b_pool, 0, pool_words * 4, SENTINEL_F16));
    uint32_t spec[KV_WRITE_N_SPEC] = { /* WORKGROUP */ c->wg, /* HEAD_DIM */ d, /* GROUP */ c->G, /* PAGE */ c->P,
                                       /* N_KV */ c->nkv, /* GQA */ 1, /* MODE */ c->mode,
                                       /* ROT_PER_HEAD */ c->per_head, /* INPUT_F16 */ c->input_f16, /* TRANSPOSE */ 0 };
    spec[KV_SPEC_CENTER_BLOCK] = c->center_block;
    spec[KV_SPEC_APPEND_PAIRS] = append_pairs(ctx, c);
    /* the rotations are not read without rotation: any buffer will do */
    /* nor are positions and frequencies without RoPE */
    ovk_binding b[9] = { { &b_k, 0, 0 }, { &b_v, 0, 0 }, { rotate ? &b_rk : &b_k, 0, 0 },
                           { rotate ? &b_rv : &b_k, 0, 0 }, { &b_slots, 0, 0 }, { &b_pool, 0, 0 }, { &b_means, 0, 0 },
                           { &b_slots, 0, 0 }, { &b_slots, 0, 0 } };
    run_append(ctx, c, spec, b, n_rows, 0, rot_base);
    CHECK_OK(ovk_buffer_download(ctx, &b_pool, 0, got, pool_words * 4));
    if (!c->input_f16) check_append_rope(ctx, c, spec, b, n_rows, pool_words, rot_base);

    /* the row that leaves the fp16 range (input row 0) only has to be written: inf - inf and
     * the sign of a NaN have no portable result */
    uint8_t *overflow_word = calloc(pool_words, 1);
    for (uint32_t t = 0; t < n_rows; t++)
        for (uint32_t kind = 0; kind < 2 && rotate && slots[t].src_row == 0; kind++)
            for (uint32_t h = 0; h < c->nkv; h++)
                memset(overflow_word + kv_ref_f16_row(&s, slots[t].dst_page, kind, h, slots[t].dst_slot), 1, d / 2);
    size_t inexact = 0, beyond = 0;
    for (size_t i = 0; i < pool_words; i++) {
        if (got[i] == want[i]) continue;
        if (overflow_word[i] && got[i] != SENTINEL_F16) continue;
        inexact++;
        uint32_t u0 = f16_ulps((uint16_t)got[i], (uint16_t)want[i]), u1 = f16_ulps((uint16_t)(got[i] >> 16), (uint16_t)(want[i] >> 16));
        if (!rotate || want[i] == SENTINEL_F16 || u0 > 1 || u1 > 1) {
            if (beyond++ < 4) fprintf(stderr, "  fp16 word %zu: gpu %08x, ref %08x\n", i, got[i], want[i]);
        }
    }
    CHECK_MSG(beyond == 0, "%s d=%u P=%u nkv=%u wg=%u mode=%u per_head=%u f16in=%u: %zu words beyond the bound (%s)",
              c->texel ? "kv_append_texel" : "kv_append", d, c->P, c->nkv, c->wg, c->mode, c->per_head, c->input_f16, beyond,
              rotate ? "1 ulp" : "exact");
    free(overflow_word);
    if (inexact) printf("kv_append d=%u mode=%u: %zu words within 1 ulp but not exact\n", d, c->mode, inexact);

    /* orientation: the stored rows are (x − μ)·R (not x·Rᵀ), checked against explicit products */
    if (c->mode == KV_MODE_ROTATED) {
        double e_r = 0, e_rt = 0, ss = 0;
        for (uint32_t t = 0; t < n_rows; t++) {
            for (uint32_t kind = 0; kind < 2; kind++) {
                for (uint32_t h = 0; h < c->nkv; h++) {
                    const float *x = kv_f32[kind] + ((size_t)slots[t].src_row * c->nkv + h) * d;
                    const float *r = rot[kind] + (size_t)(c->per_head ? h : 0) * d * d;
                    const float *mu = means + ((size_t)kind * c->nkv + h) * d;
                    const uint32_t *ctr = centers + ((size_t)(slots[t].src_slot / cb) * c->nkv + h) * (d / 2);
                    const uint32_t *y = got + kv_ref_f16_row(&s, slots[t].dst_page, kind, h, slots[t].dst_slot);
                    if (slots[t].src_row == 0) continue; /* the overflow row */
                    for (uint32_t j = 0; j < d; j++) {
                        double xr = 0, xrt = 0;
                        for (uint32_t i = 0; i < d; i++) {
                            xr += ((double)x[i] - mu[i]) * r[(size_t)i * d + j];
                            xrt += ((double)x[i] - mu[i]) * r[(size_t)j * d + i];
                        }
                        if (kind == 0 && c->center_block) { /* less the block's rotated center */
                            double cj = ovk_f16_to_f32((uint16_t)(ctr[j / 2] >> (16 * (j % 2))));
                            xr -= cj, xrt -= cj;
                        }
                        double g = ovk_f16_to_f32((uint16_t)(y[j / 2] >> (16 * (j % 2))));
                        e_r += (g - xr) * (g - xr);
                        e_rt += (g - xrt) * (g - xrt);
                        ss += xr * xr;
                    }
                }
            }
        }
        CHECK_MSG(e_r / ss < 1e-6, "kv_append d=%u: stored rows are not (x − μ)·R%s (nse %.3g)", d,
                  c->center_block ? " − c_b·R" : "", e_r / ss);
        CHECK_MSG(e_rt / ss > 0.1, "kv_append d=%u: R is symmetric enough that x·Rᵀ matches (nse %.3g)", d, e_rt / ss);
    }

    /* then flush every appended token on both sides (the write path end to end) */
    if (c->mode != KV_MODE_FP16) {
        for (size_t i = 0; i < int2_words; i++) want2[i] = SENTINEL_INT2;
        /* the GPU pool and the reference pool may differ by an ulp: flush the GPU's on both sides */
        kv_ref_flush(&s, fslots, n_rows, OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V, NULL, 0, NULL, 0, got, want2);
        CHECK_OK(test_gpu_buffer_from(ctx, fslots, sizeof *fslots * n_rows, &b_fslots));
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, int2_words * 4, &b_int2));
        CHECK_OK(ovk_buffer_fill(ctx, &b_int2, 0, int2_words * 4, SENTINEL_INT2));
        ovk_pipeline *pf = pipeline(ctx, "kv_flush", 5, sizeof(struct kv_flush_push), spec);
        if (pf) {
            struct kv_flush_push fpush = { .n_tokens = n_rows, .clip_k = OSCAR_CLIP_RATIO_K, .clip_v = OSCAR_CLIP_RATIO_V };
            ovk_binding fb[5] = { { &b_fslots, 0, 0 }, { &b_pool, 0, 0 }, { &b_int2, 0, 0 }, { &b_int2, 0, 0 }, { &b_int2, 0, 0 } }; /* the last two unread */
            CHECK_OK(test_gpu_run(ctx, pf, fb, &fpush, n_rows, c->nkv, 2));
            CHECK_OK(ovk_buffer_download(ctx, &b_int2, 0, got2, int2_words * 4));
            size_t bad = 0;
            for (size_t i = 0; i < int2_words; i++) {
                /* the overflow row holds infinities: its words have no portable value */
                bad += got2[i] != want2[i] && (want2[i] == SENTINEL_INT2 || got2[i] == SENTINEL_INT2);
            }
            size_t differ = 0;
            for (uint32_t t = 0; t < n_rows; t++) {
                for (uint32_t kind = 0; kind < 2; kind++)
                    for (uint32_t h = 0; h < c->nkv; h++) {
                        /* rows holding inf or NaN have no portable codes (kv_ref.h) */
                        const uint32_t *src = got + kv_ref_f16_row(&s, fslots[t].src_row, kind, h, fslots[t].src_slot);
                        int finite = 1;
                        for (uint32_t w = 0; w < d / 2; w++)
                            finite &= (src[w] & 0x7C00u) != 0x7C00u && (src[w] & 0x7C000000u) != 0x7C000000u;
                        if (!finite) continue;
                        uint64_t cw = kv_ref_int2_codes(&s, fslots[t].dst_page, kind, h, fslots[t].dst_slot);
                        uint64_t pw = kv_ref_int2_params(&s, fslots[t].dst_page, kind, h, fslots[t].dst_slot);
                        int dc = memcmp(got2 + cw, want2 + cw, d / 16 * 4) != 0;
                        int dp = memcmp(got2 + pw, want2 + pw, d / c->G * 4) != 0;
                        differ += dc + dp;
                    }
            }
            CHECK_MSG(bad == 0 && differ == 0, "append+flush d=%u G=%u mode=%u: %zu sentinel, %zu rows differ",
                      d, c->G, c->mode, bad, differ);
        }
    }
    ovk_buffer_destroy(ctx, &b_k);
    ovk_buffer_destroy(ctx, &b_v);
    ovk_buffer_destroy(ctx, &b_rk);
    ovk_buffer_destroy(ctx, &b_rv);
    ovk_buffer_destroy(ctx, &b_slots);
    ovk_buffer_destroy(ctx, &b_pool);
    ovk_buffer_destroy(ctx, &b_fslots);
    ovk_buffer_destroy(ctx, &b_int2);
    ovk_buffer_destroy(ctx, &b_means);
    free(means);
    for (int k = 0; k < 2; k++) {
        free(kv_f32[k]);
        free(kv_in[k]);
        free(rot[k]);
    }
    free(want);
    free(got);
    free(want2);
    free(got2);
    free(slots);
    free(fslots);
}

/* ---- rotate_rows ----------------------------------------------------------------------------- */

/* Runs rotate_rows (rotate_rows_texel with texel: R at texel rot_base, n_rows * H invocations
 * in workgroups of spec's size) with RoPE over n_rot dims on bindings b (5). */
static void run_rotate(oscar_context *ctx, int texel, const uint32_t *spec, const ovk_binding *b, uint32_t n_rows,
                       uint32_t H, uint32_t hpr, uint32_t n_rot, uint32_t rot_base, uint32_t gx)
{
    ovk_pipeline_desc desc = { .shader = texel ? "rotate_rows_texel" : "rotate_rows", .n_buffers = 5,
                                 .push_size = texel ? sizeof(struct kv_rotate_texel_push) : sizeof(struct kv_rotate_push),
                                 .n_spec = KV_WRITE_N_SPEC, .texel_bindings = texel ? 1u << 1 : 0 };
    memcpy(desc.spec, spec, sizeof(uint32_t) * KV_WRITE_N_SPEC);
    ovk_pipeline *p = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &desc, &p));
    if (!p) return;
    if (texel) {
        struct kv_rotate_texel_push push = { n_rows, H, hpr, n_rot, rot_base };
        CHECK_OK(test_gpu_run(ctx, p, b, &push, (n_rows * H + spec[KV_SPEC_WORKGROUP] - 1) / spec[KV_SPEC_WORKGROUP], 1, 1));
    } else {
        struct kv_rotate_push push = { .n_rows = n_rows, .n_heads = H, .heads_per_rot = hpr, .n_rot = n_rot };
        CHECK_OK(test_gpu_run(ctx, p, b, &push, gx, 1, 1));
    }
}

/* rotate_rows with RoPE on load must give what rope.comp followed by rotate_rows without it
 * gives, bit for bit: x·R (transpose 0), x·Rᵀ (1) or RoPE alone (2). */
static void check_rotate_rope(oscar_context *ctx, int texel, const uint32_t *spec0, const ovk_buffer *b_x,
                              const ovk_buffer *b_r, uint32_t rot_base, uint32_t n_rows, uint32_t H, uint32_t d,
                              uint32_t hpr, uint32_t gx, int neox)
{
    const uint32_t n_rot = neox ? d : d - 16;
    size_t n = (size_t)n_rows * H * d;
    float *want = malloc(n * 4), *got = malloc(n * 4);
    ovk_buffer b_pos = { 0 }, b_freq = { 0 }, b_xr = { 0 }, b_y = { 0 };
    rope_inputs(ctx, n_rows, n_rot, &b_pos, &b_freq);
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, n * 4, &b_xr));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, n * 4, &b_y));
    gpu_rope(ctx, neox, b_x, &b_pos, &b_freq, &b_xr, d, H, n_rows, n_rot);
    for (uint32_t transpose = 0; transpose < 3; transpose++) {
        uint32_t spec[KV_WRITE_N_SPEC];
        memcpy(spec, spec0, sizeof spec);
        spec[KV_SPEC_TRANSPOSE] = transpose;
        ovk_binding bp[5] = { { &b_xr, 0, 0 }, { b_r, 0, 0 }, { &b_y, 0, 0 }, { b_r, 0, 0 }, { b_r, 0, 0 } };
        run_rotate(ctx, texel, spec, bp, n_rows, H, hpr, 0, rot_base, gx);
        CHECK_OK(ovk_buffer_download(ctx, &b_y, 0, want, n * 4));
        spec[KV_SPEC_ROPE] = neox ? KV_ROPE_NEOX : KV_ROPE_NORMAL;
        ovk_binding bf[5] = { { b_x, 0, 0 }, { b_r, 0, 0 }, { &b_y, 0, 0 }, { &b_pos, 0, 0 }, { &b_freq, 0, 0 } };
        run_rotate(ctx, texel, spec, bf, n_rows, H, hpr, n_rot, rot_base, gx);
        CHECK_OK(ovk_buffer_download(ctx, &b_y, 0, got, n * 4));
        CHECK_MSG(memcmp(got, want, n * 4) == 0, "%s RoPE on load d=%u transpose=%u neox=%d: differs from rope + rotate_rows",
                  texel ? "rotate_rows_texel" : "rotate_rows", d, transpose, neox);
    }
    ovk_buffer_destroy(ctx, &b_pos);
    ovk_buffer_destroy(ctx, &b_freq);
    ovk_buffer_destroy(ctx, &b_xr);
    ovk_buffer_destroy(ctx, &b_y);
    free(want);
    free(got);
}

/* x·R or x·Rᵀ for [n_rows][H][d] with per-layer (one R) or per-KV-head R shared by GQA query
 * heads; normalised squared error vs the double reference, whose orientation is itself checked
 * against an explicit product. Also in place (x and y the same buffer). */
static void test_rotate(oscar_context *ctx, uint32_t d, uint32_t nkv, uint32_t gqa, int per_head, int transpose,
                        uint32_t wg, uint32_t gx_max, int texel)
{
    const uint32_t n_rows = 5, H = nkv * gqa, n_rot = per_head ? nkv : 1, hpr = per_head ? gqa : H;
    size_t n = (size_t)n_rows * H * d;
    float *x = malloc(n * 4), *want = malloc(n * 4), *got = malloc(n * 4);
    float *r = malloc(sizeof(float) * n_rot * d * d); /* [n_rot][d][d] */
    for (size_t i = 0; i < n; i++) x[i] = test_rng_normal() * (i % 97 == 0 ? 30.0f : 1.0f);
    test_random_orthogonal(r, n_rot, d);
    kv_ref_rotate_rows(x, n_rows, H, d, r, hpr, transpose, want);
    /* the reference's orientation, on one head */
    {
        uint32_t h = H - 1, item = 2 * H + h;
        const float *rr = r + (size_t)(h / hpr) * d * d;
        double e = 0, ss = 0;
        for (uint32_t j = 0; j < d; j++) {
            double acc = 0;
            for (uint32_t i = 0; i < d; i++) acc += (double)x[(size_t)item * d + i] * (transpose ? rr[(size_t)j * d + i] : rr[(size_t)i * d + j]);
            e += (acc - want[(size_t)item * d + j]) * (acc - want[(size_t)item * d + j]);
            ss += acc * acc;
        }
        CHECK(e / ss < 1e-12);
    }
    ovk_buffer b_x = { 0 }, b_r = { 0 }, b_y = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, x, n * 4, &b_x));
    uint32_t rot_base = 0;
    if (texel) upload_rot_at(ctx, r, (size_t)n_rot * d * d, &b_r, &rot_base);
    else CHECK_OK(test_gpu_buffer_from(ctx, r, sizeof(float) * n_rot * d * d, &b_r));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, n * 4, &b_y));
    uint32_t spec[KV_WRITE_N_SPEC] = { /* WORKGROUP */ wg, /* HEAD_DIM */ d, /* GROUP */ 0, /* PAGE */ 0, /* N_KV */ 0,
                                       /* GQA */ 0, /* MODE */ 0, /* ROT_PER_HEAD */ 0, /* INPUT_F16 */ 0,
                                       /* TRANSPOSE */ (uint32_t)transpose };
    const char *name = texel ? "rotate_rows_texel" : "rotate_rows";
    {
        uint32_t gx = n_rows * H < gx_max ? n_rows * H : gx_max;
        ovk_binding b[5] = { { &b_x, 0, 0 }, { &b_r, 0, 0 }, { &b_y, 0, 0 }, { &b_r, 0, 0 }, { &b_r, 0, 0 } };
        run_rotate(ctx, texel, spec, b, n_rows, H, hpr, 0, rot_base, gx);
        CHECK_OK(ovk_buffer_download(ctx, &b_y, 0, got, n * 4));
        double nse = test_nse(got, want, n);
        CHECK_MSG(nse < 1e-10, "%s d=%u H=%u per_head=%d transpose=%d wg=%u: nse %.3g", name, d, H, per_head, transpose, wg, nse);
        ovk_binding bi[5] = { { &b_x, 0, 0 }, { &b_r, 0, 0 }, { &b_x, 0, 0 }, { &b_r, 0, 0 }, { &b_r, 0, 0 } }; /* in place */
        run_rotate(ctx, texel, spec, bi, n_rows, H, hpr, 0, rot_base, gx);
        CHECK_OK(ovk_buffer_download(ctx, &b_x, 0, got, n * 4));
        nse = test_nse(got, want, n);
        CHECK_MSG(nse < 1e-10, "%s in place d=%u transpose=%d: nse %.3g", name, d, transpose, nse);
        if (!transpose) { /* x is y now; restore it for the RoPE check */
            for (size_t i = 0; i < n; i++) x[i] = test_rng_normal() * (i % 97 == 0 ? 30.0f : 1.0f);
            CHECK_OK(ovk_buffer_upload(ctx, &b_x, 0, x, n * 4));
            check_rotate_rope(ctx, texel, spec, &b_x, &b_r, rot_base, n_rows, H, d, hpr, gx, per_head);
        }
    }
    ovk_buffer_destroy(ctx, &b_x);
    ovk_buffer_destroy(ctx, &b_r);
    ovk_buffer_destroy(ctx, &b_y);
    free(x);
    free(want);
    free(got);
    free(r);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(2024);
    static const uint32_t dims[][2] = { { 64, 32 }, { 64, 64 }, { 128, 32 }, { 128, 64 }, { 128, 128 },
                                        { 256, 32 }, { 256, 64 }, { 256, 128 } };
    static const uint32_t nkvs[] = { 1, 2, 8 };
    static const float clips[][2] = { { OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V }, { 1.0f, 1.0f }, { 0.5f, 0.999f },
                                      { 0.0f, 2.0f }, { 0.9f, 0.75f } };
    uint32_t k = 0;

    /* kv_flush: every (d, G), three variants each */
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        for (int v = 0; v < 3; v++, k++) {
            flush_case c = { dims[i][0], dims[i][1], k % 2 ? 64 : 16, nkvs[k % 3], workgroups[k % N_WORKGROUPS],
                             clips[k % 5][0], clips[k % 5][1], k % 4 == 0 ? 3 : 65535 };
            test_flush(ctx, &c, 0);
        }
    }
    {
        flush_case c = { 128, 32, 16, 2, 64, OSCAR_CLIP_RATIO_K, 1.0f, 65535 };
        test_flush(ctx, &c, 1);
        /* a workgroup smaller than d / G groups and than 16 */
        flush_case c2 = { 256, 32, 16, 2, 5, OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V, 4 };
        test_flush(ctx, &c2, 0);
        /* one invocation per workgroup, one token per workgroup */
        flush_case c3 = { 256, 64, 16, 1, 1, OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V, 65535 };
        test_flush(ctx, &c3, 0);
    }
    /* K codes by error feedback, one matrix per layer and per KV head (workgroups of 32 and
     * more: the feedback's d rounds of d / WG updates fit lavapipe's loop budget) */
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i += 2) {
        flush_case c = { dims[i][0], dims[i][1], i % 4 ? 64 : 16, nkvs[i % 3], i % 4 ? 48 : 64,
                         clips[i % 5][0], clips[i % 5][1], 65535, 1 + (uint32_t)(i / 2 % 2) };
        test_flush(ctx, &c, 0);
    }
    /* each row's min and scale refitted by least squares (one group per row): values under the
     * squared error, keys under it or a metric, with and without the feedback */
    {
        static const flush_case rc[] = {
            { 64, 64, 16, 2, 64, OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V, 65535, 1, 3, 1 },
            { 128, 128, 64, 8, 48, 0.9f, 0.75f, 65535, 2, 2, 1 },
            { 64, 64, 64, 1, 32, 1.0f, 1.0f, 3, 0, 3, 0 },
            { 128, 128, 16, 2, 256, OSCAR_CLIP_RATIO_K, OSCAR_CLIP_RATIO_V, 65535, 0, 1, 1 },
        };
        for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) test_flush(ctx, &rc[i], 0);
    }

    /* kv_append: every mode, fp32 and fp16 input, per-layer and per-head R */
    k = 0;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        for (uint32_t mode = 0; mode < 4; mode++, k++) {
            append_case c = { dims[i][0], dims[i][1], k % 2 ? 16 : 64, nkvs[k % 3], workgroups[k % N_WORKGROUPS], mode,
                              (uint32_t)(i % 2), (k / 3) % 2, k % 5 == 0 ? 2 : 65535,
                              mode == KV_MODE_ROTATED && i % 4 != 3 ? 16u << (i % 3) : 0 };
            test_append(ctx, &c);
        }
    }
    /* a head_dim that is not a power of two (80: 5 INT2 groups of 16) */
    for (uint32_t mode = KV_MODE_HADAMARD; mode <= KV_MODE_ROTATED; mode++) {
        append_case c = { 80, 16, 16, 2, 64, mode, 1, 0, 65535, mode == KV_MODE_ROTATED ? 16u : 0u, 0,
                          mode == KV_MODE_ROTATED ? 5u : 0u }; /* 5 pairs: R loaded a pair at a time */
        test_append(ctx, &c);
    }

    /* rotate_rows */
    k = 0;
    for (uint32_t d = 64; d <= 256; d *= 2)
        for (int per_head = 0; per_head < 2; per_head++)
            for (int transpose = 0; transpose < 2; transpose++, k++)
                test_rotate(ctx, d, nkvs[k % 3], k % 2 ? 3 : 4, per_head, transpose, workgroups[k % N_WORKGROUPS],
                            k % 3 == 0 ? 5 : 65535, 0);

    /* the texel shapes of CPU devices (head_dim 64 and 128), where texel buffers work: every
     * mode and R layout of the write path, fp16 input, centers, and workgroups of 1..13 (fewer
     * cases than above: lavapipe compiles their unrolled rows slowly) */
    if (ctx->texel_buffers) {
        static const append_case tc[] = {
            /* d    G   P   nkv wg   mode             per_head f16in gx    centers texel */
            { 64, 64, 16, 3, 7, KV_MODE_FP16, 0, 0, 65535, 0, 1 },
            { 64, 64, 16, 3, 12, KV_MODE_INT2, 0, 1, 65535, 0, 1 },
            { 64, 32, 64, 2, 8, KV_MODE_HADAMARD, 1, 0, 65535, 0, 1 },
            { 128, 64, 16, 2, 3, KV_MODE_ROTATED, 0, 0, 65535, 16, 1 },
            { 128, 128, 64, 1, 64, KV_MODE_ROTATED, 1, 1, 65535, 0, 1 },
        };
        for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) test_append(ctx, &tc[i]);
        for (uint32_t d = 64; d <= 128; d *= 2)
            for (int transpose = 0; transpose < 2; transpose++)
                test_rotate(ctx, d, d == 128 ? 2 : 3, transpose ? 3 : 4, d == 128, transpose, d / 16 + (uint32_t)transpose, 65535, 1);
    } else
        printf("texel shapes: skipped (no R32G32B32A32_UINT uniform texel buffers)\n");
    return test_gpu_finish(ctx);
}
