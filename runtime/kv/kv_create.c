/* The paged KV cache: parameters and their checks, sizing of the page pools, the buffers and
 * pipelines of a cache, and memory accounting. Steps are kv_step.c; bookkeeping kv_pages.c;
 * layout kv_layout.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "int2_quant.h"
#include "kv_cache_impl.h"

OSCAR_API const char *oscar_kv_mode_name(oscar_kv_mode mode)
{
    switch (mode) {
    case OSCAR_KV_FP16: return "fp16";
    case OSCAR_KV_INT2: return "int2";
    case OSCAR_KV_INT2_HADAMARD: return "int2-hadamard";
    case OSCAR_KV_INT2_ROTATED: return "oscar";
    }
    return "unknown";
}

OSCAR_API oscar_kv_params oscar_kv_params_default(void)
{
    oscar_kv_params p;
    memset(&p, 0, sizeof p);
    p.mode = OSCAR_KV_INT2_HADAMARD;
    p.n_layer = 1, p.n_head = 1, p.n_kv_head = 1, p.head_dim = 128;
    p.page_tokens = 64, p.sink_tokens = 64, p.recent_tokens = 256, p.flush_tokens = 8;
    p.max_sequences = 1, p.max_context = 8192, p.max_step_tokens = 512;
    return p;
}

/* ---- checks -------------------------------------------------------------------------------- */
static int is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

/* Fills defaults and checks the shape; names the first bad field. */
static oscar_status check_params(oscar_kv_params *p)
{
    if (p->group_size == 0) p->group_size = ovk_int2_default_group(p->head_dim);
    if (p->attn_scale == 0) p->attn_scale = 1.0f / sqrtf((float)p->head_dim);
    if ((unsigned)p->mode > OSCAR_KV_INT2_ROTATED) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: unknown mode %d", (int)p->mode);
    if (!is_pow2(p->head_dim) || p->head_dim < 64 || p->head_dim > KV_MAX_HEAD_DIM)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: head_dim %u is not a power of two in 64..256", p->head_dim);
    if (p->group_size != 32 && p->group_size != 64 && p->group_size != 128)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: group_size %u is not 32, 64 or 128", p->group_size);
    if (p->head_dim % p->group_size)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: group_size %u does not divide head_dim %u", p->group_size, p->head_dim);
    if (p->n_layer == 0 || p->n_kv_head == 0 || p->n_head == 0 || p->n_head % p->n_kv_head)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: n_head %u is not a positive multiple of n_kv_head %u (n_layer %u)",
                           p->n_head, p->n_kv_head, p->n_layer);
    if (p->n_head / p->n_kv_head > 16)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "KV cache: %u query heads per KV head (at most 16)", p->n_head / p->n_kv_head);
    if (p->page_tokens == 0 || p->page_tokens > 1024 || p->flush_tokens == 0 || p->max_sequences == 0 ||
        p->max_context == 0 || p->max_step_tokens == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: page_tokens (1..1024), flush_tokens, max_sequences, "
                                                         "max_context and max_step_tokens must be positive");
    if (p->mode == OSCAR_KV_INT2_ROTATED && (!p->rot_k || !p->rot_v))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: mode oscar needs rot_k and rot_v");
    return OSCAR_OK;
}

/* Each R of a rotation set must be finite and orthogonal: max |RᵀR − I| below 1e-3. */
static oscar_status check_rotations(const float *r, uint32_t n, uint32_t d, const char *which)
{
    for (uint32_t m = 0; m < n; m++) {
        ovk_rotation_error e = ovk_rotation_max_error(r + (size_t)m * d * d, d);
        if (!e.finite)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rotation %s[%u]: element (%zu, %zu) is not finite", which, m,
                               e.first_bad / d, e.first_bad % d);
        if (e.max > 1e-3)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rotation %s[%u] is not orthogonal: max |R^T R - I| = %.3g", which, m, e.max);
    }
    return OSCAR_OK;
}

/* ---- creation ------------------------------------------------------------------------------ */
ovk_pipeline_desc ovk_kv_cache_desc(const oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                      uint32_t wg, uint32_t n_spec)
{
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = n_buffers, .push_size = push_size, .n_spec = n_spec };
    d.spec[KV_SPEC_WORKGROUP] = wg;
    d.spec[KV_SPEC_HEAD_DIM] = c->p.head_dim;
    d.spec[KV_SPEC_GROUP] = c->p.group_size;
    d.spec[KV_SPEC_PAGE] = c->p.page_tokens;
    d.spec[KV_SPEC_N_KV] = c->p.n_kv_head;
    d.spec[KV_SPEC_GQA] = c->gqa;
    d.spec[KV_SPEC_MODE] = c->mode;
    d.spec[KV_SPEC_ROT_PER_HEAD] = c->n_rot > 1;
    d.spec[KV_SPEC_CENTER_BLOCK] = c->center_block;
    d.spec[KV_SPEC_SINK] = c->p.sink_tokens;
    return d;
}

oscar_status ovk_kv_get_pipeline(oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                 uint32_t wg, uint32_t extra_id, uint32_t extra_value, ovk_pipeline **out)
{
    ovk_pipeline_desc d = ovk_kv_cache_desc(c, shader, n_buffers, push_size, wg, ATTN_N_SPEC);
    if (extra_id) d.spec[extra_id] = extra_value;
    return ovk_pipeline_get(c->ctx, &d, out);
}

uint32_t ovk_kv_append_pairs(uint32_t d, uint32_t shared_bytes)
{
    uint32_t budget = shared_bytes < APPEND_SHARED_BYTES ? shared_bytes : APPEND_SHARED_BYTES;
    uint32_t pairs = d / 2;
    while (pairs % 2 == 0 && (uint64_t)d * pairs * 8 + 4 * KV_MAX_HEAD_DIM * 4 > budget) pairs /= 2;
    return pairs;
}

oscar_status ovk_kv_append_pipeline(oscar_kv_cache *c, uint32_t id, uint32_t value, ovk_pipeline **out)
{
    if (!c->write_texel) {
        int rotated = c->mode >= KV_MODE_HADAMARD;
        ovk_pipeline_desc d = ovk_kv_cache_desc(c, "kv_append", 9, sizeof(struct kv_append_push),
                                                rotated ? WG_APPEND_ROT : WG_WRITE, ATTN_N_SPEC);
        if (id) d.spec[id] = value;
        d.spec[KV_SPEC_APPEND_PAIRS] = rotated ? c->append_pairs : 1;
        return ovk_pipeline_get(c->ctx, &d, out);
    }
    ovk_pipeline_desc d = ovk_kv_cache_desc(c, "kv_append_texel", 9, sizeof(struct kv_append_texel_push), WG_TEXEL, ATTN_N_SPEC);
    if (id) d.spec[id] = value;
    d.texel_bindings = 1u << 2 | 1u << 3; /* R_K, R_V */
    return ovk_pipeline_get(c->ctx, &d, out);
}

oscar_status ovk_kv_rotate_pipeline(oscar_kv_cache *c, uint32_t transpose, uint32_t rope, ovk_pipeline **out)
{
    ovk_pipeline_desc d = c->write_texel
        ? ovk_kv_cache_desc(c, "rotate_rows_texel", 5, sizeof(struct kv_rotate_texel_push), WG_TEXEL, ATTN_N_SPEC)
        : ovk_kv_cache_desc(c, "rotate_rows", 5, sizeof(struct kv_rotate_push), c->wg_rotate, ATTN_N_SPEC);
    d.spec[KV_SPEC_TRANSPOSE] = transpose;
    d.spec[KV_SPEC_ROPE] = rope;
    if (c->write_texel) d.texel_bindings = 1u << 1; /* R */
    return ovk_pipeline_get(c->ctx, &d, out);
}

/* Whether attn_decode_rows can take this cache: a row's walk within lavapipe's 65535 loop
 * iterations an invocation (one a round of tb tokens, one an item: 3 storage ranges, more when
 * OSCAR_ATTN_MIN_SPLIT cuts them; then head_dim for the output), and the pools and R_V within the
 * device's texel-buffer size. */
static int rows_fit(const oscar_kv_cache *c)
{
    uint64_t tokens = (uint64_t)c->book.max_pages * c->p.page_tokens;
    uint64_t split = c->ctx->env.attn_min_split ? c->ctx->env.attn_min_split : ATTN_ROWS_MIN_SPLIT;
    uint64_t limit = c->ctx->limits.maxTexelBufferElements;
    if (ovk_kv_n_zones(c) > 1) return 0; /* its texel views of the pools are whole */
    if (tokens / c->attn.tb + tokens / split + 3 + c->p.head_dim > 65000) return 0;
    if (c->rot_v.size / 16 > limit) return 0;
    for (uint32_t l = 0; l < c->p.n_layer; l++)
        if (c->int2_pool[l].size / 16 > limit || c->f16_pool[l].size / 16 > limit) return 0;
    return 1;
}

/* Zones of the page pools (kv_pages.h): the fewest zones N such that a zone of each pool, its
 * pages a multiple of what keeps zone offsets at the device's storage-buffer offset alignment,
 * fits one storage binding (the device's range, or OSCAR_KV_ZONE_BYTES where smaller: a
 * development aid for testing zones at small sizes). With N > 1 each pool grows to N whole zones
 * (at most that multiple of pages a zone more than the budget gave), so every zone holds pages
 * of both kinds. Fails with a message when one page (times that multiple) is already over the
 * binding. */
static oscar_status plan_zones(oscar_kv_cache *c, kv_book_config *cfg)
{
    uint64_t limit = c->ctx->info.max_storage_buffer_range;
    if (c->ctx->env.kv_zone_bytes && c->ctx->env.kv_zone_bytes < limit) limit = c->ctx->env.kv_zone_bytes;
    uint64_t step_i = ovk_kv_align_elems(c, c->int2_page_bytes), step_f = ovk_kv_align_elems(c, c->f16_page_bytes);
    if (step_i * c->int2_page_bytes > limit || step_f * c->f16_page_bytes > limit)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "KV cache: a page (%llu INT2 / %llu fp16 bytes) does not fit one storage "
                           "binding of %llu bytes", (unsigned long long)c->int2_page_bytes,
                           (unsigned long long)c->f16_page_bytes, (unsigned long long)limit);
    for (uint64_t n = 1;; n++) {
        uint64_t zi = (cfg->n_int2_pages + n - 1) / n, zf = (cfg->n_f16_pages + n - 1) / n;
        zi = (zi + step_i - 1) / step_i * step_i;
        zf = (zf + step_f - 1) / step_f * step_f;
        if (zi == 0) zi = step_i;
        if (zi * c->int2_page_bytes <= limit && zf * c->f16_page_bytes <= limit) {
            cfg->n_zones = (uint32_t)n, cfg->zone_int2_pages = (uint32_t)zi, cfg->zone_f16_pages = (uint32_t)zf;
            if (n > 1) {
                if (cfg->n_int2_pages) cfg->n_int2_pages = (uint32_t)(n * zi);
                cfg->n_f16_pages = (uint32_t)(n * zf);
            }
            return OSCAR_OK;
        }
    }
}

int ovk_kv_attn_cm_device(const oscar_context *ctx)
{
    if (ovk_variant_usable(ctx, "attn_decode_cm.coopmat") && ovk_coopmat_has_f16_shape(ctx, 16, 16, 16)) return 1;
    return ovk_variant_usable(ctx, "attn_decode_cm_emu.f16") ? 2 : 0;
}

int ovk_kv_attn_cm8_device(const oscar_context *ctx)
{
    if (ovk_variant_usable(ctx, "attn_decode_cm8.coopmat") && ovk_coopmat_has_f16_shape(ctx, 16, 8, 16)) return 1;
    return ovk_variant_usable(ctx, "attn_decode_cm8_emu.f16") ? 2 : 0;
}

/* The pipeline of decode-attention configuration a for cache c. */
static oscar_status decode_pipeline(oscar_kv_cache *c, const ovk_attn_config *a, ovk_pipeline **out)
{
    ovk_pipeline_desc pd = ovk_kv_cache_desc(c, a->shader, a->rows ? 12 : 14, /* + out's int8 blocks */
                                             a->rows ? sizeof(struct attn_rows_push) : sizeof(struct attn_decode_push), a->wg,
                                             ATTN_N_SPEC);
    if (a->rows) {
        pd.spec[KV_SPEC_ROWS_TB] = a->tb;
        pd.texel_bindings = 1u << 3 | 1u << 4 | 1u << 8; /* the pools and R_V */
    } else if (a->cm) {
        pd.spec[KV_SPEC_CM_SG_MIN] = a->sg_min;
        pd.spec[KV_SPEC_CM_TILES] = a->ku;
        pd.spec[KV_SPEC_CM_WALKERS] = a->walkers;
    } else if (a->stream) {
        pd.spec[KV_SPEC_ATTN_SG_MIN] = a->sg_min;
        pd.spec[KV_SPEC_ATTN_KU] = a->ku;
        pd.spec[KV_SPEC_ATTN_VE] = a->ve;
        pd.spec[KV_SPEC_ATTN_FKU] = a->fku;
        pd.spec[KV_SPEC_ATTN_PREFETCH] = a->prefetch;
    } else {
        pd.spec[KV_SPEC_CH_ITEM_TOKENS] = a->item_tokens;
        pd.spec[KV_SPEC_CH_U] = a->u;
        pd.spec[KV_SPEC_CH_VU] = a->vu;
    }
    return ovk_pipeline_get(c->ctx, &pd, out);
}

/* The cooperative-matrix kernel of batched and long decode steps (pl_decode_cm, ATTN_CM_BATCH_ROWS):
 * attn_decode_cm[8].coopmat where the cache runs the chunked kernel by default in an INT2 mode and
 * the device runs the cooperative-matrix one; else none. */
static oscar_status create_decode_cm(oscar_kv_cache *c, const ovk_attn_device *dev)
{
    const ovk_env *env = &c->ctx->env;
    if (env->attn_kernel >= 0 || c->attn.rows || c->attn.stream || c->attn.cm || c->mode == KV_MODE_FP16 || dev->coopmat != 1)
        return OSCAR_OK;
    ovk_attn_tuning tune = { 3, env->attn_f16, 0, 0, 0, 0, -1, -1, 0, env->attn_cm_n };
    if (ovk_attn_pick(dev, c->p.head_dim, c->p.group_size, c->p.page_tokens, c->gqa, c->center_block != 0, 0, &tune,
                      &c->attn_cm) != OSCAR_OK) {
        ovk_error_clear(); /* not this cache's shape or device: every step stays on the chunked kernel */
        return OSCAR_OK;
    }
    c->cm_target_groups = env->attn_target_groups ? env->attn_target_groups : ATTN_CM_TARGET_GROUPS;
    c->cm_min_split = env->attn_min_split ? env->attn_min_split : ATTN_CM_MIN_SPLIT_INT2;
    int n8 = strcmp(c->attn_cm.variant, "coopmat8") == 0;
    c->cm_batch_context = n8 ? ATTN_CM8_BATCH_CONTEXT : ATTN_CM_BATCH_CONTEXT;
    c->cm_long_context = n8 ? ATTN_CM8_LONG_CONTEXT : 0;
    return decode_pipeline(c, &c->attn_cm, &c->pl_decode_cm);
}

/* Decode attention's pipeline: the kernel, variant and shape ovk_attn_pick chooses for this
 * device (the environment's tuning overrides, vk_env.h; OSCAR_ATTN_F16=0 forces the fp32
 * fallback, OSCAR_ATTN_IDOT the integer-dot keys, OSCAR_ATTN_KERNEL the kernel), logged with OSCAR_PIPELINE_STATS=1; and the split
 * sizing of the cache's attention calls. */
static oscar_status create_decode(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = c->ctx;
    const ovk_env *env = &ctx->env;
    uint32_t d = c->p.head_dim;
    ovk_attn_device dev = { ctx->info.min_subgroup_size, ctx->info.max_subgroup_size,
                            ctx->limits.maxComputeWorkGroupInvocations < ctx->limits.maxComputeWorkGroupSize[0]
                                ? ctx->limits.maxComputeWorkGroupInvocations
                                : ctx->limits.maxComputeWorkGroupSize[0],
                            ctx->info.max_shared_memory < ATTN_SHARED_BUDGET ? ctx->info.max_shared_memory : ATTN_SHARED_BUDGET,
                            ctx->info.float16_arithmetic, ovk_variant_usable(ctx, "attn_decode_chunked_f16.idot"),
                            ctx->info.type == OSCAR_DEVICE_CPU, ctx->texel_buffers,
                            ovk_kv_attn_cm_device(ctx), ctx->info.max_shared_memory, ovk_kv_attn_cm8_device(ctx) };
    if (!ctx->info.subgroup_arithmetic || !ctx->info.subgroup_shuffle)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "KV cache: decode attention needs subgroup arithmetic and shuffle "
                           "operations in compute shaders");
    ovk_attn_tuning tune = { env->attn_kernel, env->attn_f16, env->attn_wg, env->attn_ku, env->attn_ve, env->attn_fku,
                             env->attn_prefetch, env->attn_idot, env->attn_vu, env->attn_cm_n };
    OSCAR_TRY(ovk_attn_pick(&dev, d, c->p.group_size, c->p.page_tokens, c->gqa, c->center_block != 0, c->mode == KV_MODE_FP16,
                              &tune, &c->attn));
    if (c->attn.rows && !rows_fit(c)) { /* the rows kernel cannot take this cache: the chunked one */
        tune.kernel = 0;
        OSCAR_TRY(ovk_attn_pick(&dev, d, c->p.group_size, c->p.page_tokens, c->gqa, c->center_block != 0,
                                  c->mode == KV_MODE_FP16, &tune, &c->attn));
    }
    OSCAR_TRY(decode_pipeline(c, &c->attn, &c->pl_decode));
    if (env->pipeline_stats) {
        if (c->attn.rows)
            fprintf(stderr, "decode attention: %s workgroup %u, %u tokens a round\n", c->attn.shader, c->attn.wg, c->attn.tb);
        else if (c->attn.cm)
            fprintf(stderr, "decode attention: %s workgroup %u, %u walkers, subgroups of %u..%u, %u tokens a step, %u bytes "
                    "shared\n", c->attn.shader, c->attn.wg, c->attn.walkers, ctx->info.min_subgroup_size,
                    ctx->info.max_subgroup_size, 16 * c->attn.ku, c->attn.shared_bytes);
        else if (c->attn.stream)
            fprintf(stderr, "decode attention: %s (%s) workgroup %u, subgroups of %u..%u, KU %u VE %u FKU %u prefetch %u, "
                    "%u bytes shared\n", c->attn.shader, c->attn.variant, c->attn.wg, ctx->info.min_subgroup_size,
                    ctx->info.max_subgroup_size, c->attn.ku, c->attn.ve, c->attn.fku, c->attn.prefetch, c->attn.shared_bytes);
        else
            fprintf(stderr, "decode attention: %s (%s) workgroup %u, chunks of %u tokens, U %u VU %u, %u bytes shared\n",
                    c->attn.shader, c->attn.variant, c->attn.wg, c->attn.item_tokens, c->attn.u, c->attn.vu, c->attn.shared_bytes);
    }
    int fp16 = c->p.mode == OSCAR_KV_FP16;
    c->target_groups = env->attn_target_groups ? env->attn_target_groups
                       : c->attn.stream        ? ATTN_STREAM_TARGET_GROUPS
                       : c->attn.cm            ? ATTN_CM_TARGET_GROUPS
                                               : ATTN_CHUNKED_TARGET_GROUPS;
    c->min_split = env->attn_min_split ? env->attn_min_split
                   : c->attn.rows    ? ATTN_ROWS_MIN_SPLIT
                   : fp16            ? ATTN_MIN_SPLIT
                   : c->attn.stream  ? ATTN_STREAM_MIN_SPLIT_INT2
                   : c->attn.cm      ? ATTN_CM_MIN_SPLIT_INT2
                   : c->attn.idot    ? ATTN_CHUNKED_IDOT_MIN_SPLIT_INT2
                                     : ATTN_CHUNKED_MIN_SPLIT_INT2;
    OSCAR_TRY(create_decode_cm(c, &dev));
    if (env->pipeline_stats && c->pl_decode_cm)
        fprintf(stderr, "decode attention, steps of %u rows or more at up to %u tokens a row, and of rows at %u or more "
                "(0: none): %s workgroup %u, %u walkers\n", ATTN_CM_BATCH_ROWS, c->cm_batch_context, c->cm_long_context,
                c->attn_cm.shader, c->attn_cm.wg, c->attn_cm.walkers);
fail:
    return st;
}

/* attn_prefill.coopmat's workgroup size where the device runs it (16 x 16 x 16 fp16 matrices,
 * subgroup shuffles) and OSCAR_ATTN_PREFILL is not 2, with its tile shape in c; else 0. */
static uint32_t prefill_coopmat_shape(oscar_kv_cache *c)
{
    oscar_context *ctx = c->ctx;
    const char *shader = ovk_pick_variant(ctx, "attn_prefill");
    if (ctx->env.attn_prefill == 2 || !shader || strcmp(shader, "attn_prefill.coopmat") != 0 || !ovk_coopmat_has_f16_shape(ctx, 16, 16, 16) ||
        !ctx->info.subgroup_shuffle)
        return 0;
    uint32_t wg = 0;
    uint32_t pairs = ctx->env.attn_prefill_pairs ? ctx->env.attn_prefill_pairs : OVK_ATTN_PF_CM_PAIRS;
    ovk_attn_prefill_cm_shape(c->p.head_dim, c->gqa, pairs, ovk_max_subgroup_size(ctx),
                              ctx->limits.maxComputeWorkGroupInvocations, ctx->info.max_shared_memory, &c->pf_rows,
                              &c->pf_chunk, &wg);
    return c->pf_rows >= 2 ? wg : 0;
}

/* The prefill attention's pipeline and tile buffers: attn_prefill.coopmat where the device has
 * 16 x 16 x 16 fp16 cooperative matrices, else attn_prefill with the largest tile shape that
 * fits the shared memory attention may use. Leaves pl_prefill NULL (prefill steps then run
 * attn_decode) when tiles would hold fewer than 2 rows, or when the environment variable
 * OSCAR_ATTN_PREFILL is 0 (for comparisons; 2 keeps attn_prefill where the cooperative-matrix
 * kernel would run). With attn_prefill.coopmat, unless OSCAR_ATTN_PREFILL_SPLIT is 0: the merge
 * of split walks and the buffers for a step's most parts and partials (attn_tiles.h). */
static oscar_status create_prefill(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = c->ctx;
    if (ctx->env.attn_prefill == 0) return OSCAR_OK;
    if (c->attn.rows && ctx->env.attn_prefill != 1) return OSCAR_OK; /* the rows kernel takes prefill rows as well */
    uint32_t wg = prefill_coopmat_shape(c);
    int coopmat = wg != 0;
    uint32_t budget = ctx->info.max_shared_memory < ATTN_SHARED_BUDGET ? ctx->info.max_shared_memory : ATTN_SHARED_BUDGET;
    if (!coopmat &&
        (!ovk_attn_prefill_shape(c->p.head_dim, c->gqa, WG_ATTN, budget, &c->pf_rows, &c->pf_chunk) || c->pf_rows < 2))
        return OSCAR_OK;
    uint32_t T = c->p.max_step_tokens, nkv = c->p.n_kv_head;
    int env_split = ctx->env.attn_prefill_split;
    /* split walks write partials by the step's item numbers, which one dispatch a zone does not keep */
    c->pf_split_chunks = !coopmat || ovk_kv_n_zones(c) > 1 ? 0 : env_split >= 0 ? (uint32_t)env_split : ATTN_PF_MIN_PART_CHUNKS;
    c->pf_split_below = env_split > 0 ? UINT32_MAX : ATTN_PF_SPLIT_BELOW; /* a part size given: any step splits */
    /* rows a split step may have: its walks are fewer than pf_split_below / n_kv */
    uint64_t split_rows = T;
    if (c->pf_split_below != UINT32_MAX && (uint64_t)c->pf_rows * ((c->pf_split_below - 1) / nkv) < T)
        split_rows = (uint64_t)c->pf_rows * ((c->pf_split_below - 1) / nkv);
    /* the partials of a step's most parts within one storage binding: fewer workgroups aimed at
     * where they would not fit (few KV heads, long steps); none added below one a KV head */
    uint64_t part_bytes = (uint64_t)c->p.n_head * KV_PARTIAL_FLOATS(c->p.head_dim) * 4;
    c->pf_target = ATTN_PF_TARGET_GROUPS;
    while (c->pf_split_chunks && c->pf_target >= nkv &&
           OVK_ATTN_SPLIT_MAX_ITEMS(c->pf_rows, split_rows, nkv, c->pf_target) * part_bytes > ctx->limits.maxStorageBufferRange)
        c->pf_target /= 2;
    if (c->pf_target < nkv) c->pf_split_chunks = 0;
    uint64_t tiles_cap = c->pf_split_chunks ? OVK_ATTN_SPLIT_MAX_TILES(T, nkv, c->pf_target) : T;
    if (ovk_kv_n_zones(c) > 1) tiles_cap += (uint64_t)ovk_kv_n_zones(c) * (c->tile_align - 1); /* each zone's group aligned */
    uint64_t items_cap = c->pf_split_chunks ? OVK_ATTN_SPLIT_MAX_ITEMS(c->pf_rows, split_rows, nkv, c->pf_target) : 0;
    c->tiles_cap = (uint32_t)tiles_cap;
    c->pf_items_cap = (uint32_t)items_cap;
    OSCAR_TRY(ovk_buffer_create(ctx, tiles_cap * sizeof(struct kv_attn_tile), OSCAR_BUFFER_DEVICE, &c->tiles));
    c->h_tiles = malloc((size_t)tiles_cap * sizeof *c->h_tiles);
    c->h_tiles_z = malloc((size_t)tiles_cap * sizeof *c->h_tiles_z);
    c->h_walks = malloc((size_t)T * sizeof *c->h_walks);
    if (!c->h_tiles || !c->h_tiles_z || !c->h_walks) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    ovk_pipeline_desc d = ovk_kv_cache_desc(c, coopmat ? "attn_prefill.coopmat" : "attn_prefill", coopmat ? 11 : 10,
                                            sizeof(struct attn_prefill_push), coopmat ? wg : WG_ATTN, ATTN_PF_N_SPEC);
    d.spec[KV_SPEC_PF_ROWS] = c->pf_rows;
    d.spec[KV_SPEC_PF_CHUNK] = c->pf_chunk;
    OSCAR_TRY(ovk_pipeline_get(ctx, &d, &c->pl_prefill));
    if (!coopmat) return OSCAR_OK;
    uint64_t partial_bytes = items_cap * part_bytes;
    OSCAR_TRY(ovk_buffer_create(ctx, partial_bytes ? partial_bytes : 16, OSCAR_BUFFER_DEVICE, &c->pf_partials));
    if (c->pf_split_chunks)
        OSCAR_TRY(ovk_kv_get_pipeline(c, "attn_prefill_merge", 12, sizeof(struct attn_decode_push), WG_ATTN, 0, 0,
                                      &c->pl_prefill_merge));
    if (ctx->env.pipeline_stats)
        fprintf(stderr, "prefill attention: attn_prefill.coopmat, tiles of %u rows, chunks of %u tokens, walks split into "
                "parts of at least %u chunks below %u workgroups, towards %u (%.1f MiB of partials)\n", c->pf_rows,
                c->pf_chunk, c->pf_split_chunks, c->pf_split_below, c->pf_target, partial_bytes / 1048576.0);
fail:
    return st;
}

/* fp16 pages the INT2 modes need for every sequence's windows at once: per sequence the sink
 * pages, the recent window with its flush batch and a partial page at each end, plus the
 * new tokens of one step (at most max_step_tokens over all sequences, one partial page each). */
static uint32_t f16_window_pool(const kv_book_config *c)
{
    uint32_t P = c->page;
    uint32_t per_seq = (c->sink + P - 1) / P + (c->recent + c->flush - 1 + P - 1) / P + 2;
    return c->max_seqs * per_seq + (c->max_step_tokens + P - 1) / P + c->max_seqs;
}

static void seq_sizes(const oscar_kv_params *p, uint32_t int2, uint64_t budget, uint64_t int2_page, uint64_t f16_page,
                      kv_book_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->page = p->page_tokens;
    cfg->sink = int2 ? p->sink_tokens : 0;
    cfg->recent = p->recent_tokens;
    cfg->flush = p->flush_tokens;
    cfg->int2 = int2;
    cfg->max_seqs = p->max_sequences;
    cfg->max_context = p->max_context;
    cfg->max_step_tokens = p->max_step_tokens;
    uint32_t i2, f16;
    kv_book_pages_for(cfg, p->max_context, &i2, &f16);
    if (!int2) {
        cfg->n_f16_pages = budget ? (uint32_t)(budget / f16_page) : f16 * p->max_sequences;
        return;
    }
    /* windows first (every sequence needs its fp16 pages), then INT2 */
    uint32_t w = f16_window_pool(cfg), all = f16 * p->max_sequences;
    cfg->n_f16_pages = w < all ? w : all;
    if (budget == 0) cfg->n_int2_pages = i2 * p->max_sequences;
    else {
        uint64_t f16_bytes = (uint64_t)cfg->n_f16_pages * f16_page;
        cfg->n_int2_pages = budget > f16_bytes ? (uint32_t)((budget - f16_bytes) / int2_page) : 0;
    }
}

OSCAR_API oscar_status oscar_kv_cache_create(oscar_context *ctx, const oscar_kv_params *params, oscar_kv_cache **out)
{
    oscar_status st = OSCAR_OK;
    oscar_kv_cache *c = NULL;
    float *rot = NULL;
    if (!ctx || !params || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_cache_create: NULL argument");
    *out = NULL;
    oscar_kv_params p = *params;
    static const oscar_kv_experimental no_research;
    const oscar_kv_experimental *x = p.experimental ? p.experimental : &no_research;
    OSCAR_TRY(check_params(&p));
    uint32_t d = p.head_dim, L = p.n_layer;
    uint32_t n_rot = p.mode == OSCAR_KV_INT2_ROTATED && p.rot_per_head ? p.n_kv_head : 1;
    if (p.mode == OSCAR_KV_INT2_ROTATED) {
        OSCAR_TRY(check_rotations(p.rot_k, L * n_rot, d, "rot_k"));
        OSCAR_TRY(check_rotations(p.rot_v, L * n_rot, d, "rot_v"));
    }
    if (x->key_feedback && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_feedback needs mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    for (size_t m = 0; x->key_feedback && m < (size_t)L * n_rot; m++)
        for (size_t i = 0; i < (size_t)d * d; i++) {
            float f = x->key_feedback[m * d * d + i];
            if (!isfinite(f) || (i / d >= i % d && f != 0.0f))
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_feedback of layer %zu (head %zu): element (%zu, %zu) "
                                   "is %s", m / n_rot, m % n_rot, i / d, i % d, isfinite(f) ? "not 0 on or below the diagonal" : "not finite");
        }
    if ((x->refit_rounds || x->key_metric) && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: refit_rounds / key_metric need mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    if (x->refit_rounds > 8 || (x->refit_rounds && p.group_size != d) || (x->key_metric && !x->refit_rounds))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: refit_rounds %u must be at most 8, needs group_size %u equal "
                           "to head_dim %u, and key_metric needs it", x->refit_rounds, p.group_size, d);
    for (size_t i = 0; x->key_metric && i < (size_t)L * n_rot * d * d; i++) {
        size_t m = i / ((size_t)d * d), r = i / d % d, c = i % d;
        if (!isfinite(x->key_metric[i]) || x->key_metric[i] != x->key_metric[(m * d + c) * d + r])
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_metric of layer %zu (head %zu): element (%zu, %zu) is %s",
                               m / n_rot, m % n_rot, r, c, isfinite(x->key_metric[i]) ? "not its transpose's" : "not finite");
    }
    if ((p.mean_k || p.mean_v) && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: mean_k / mean_v need mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    for (size_t i = 0; i < (size_t)L * p.n_kv_head * d; i++)
        if ((p.mean_k && !isfinite(p.mean_k[i])) || (p.mean_v && !isfinite(p.mean_v[i])))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: %s of layer %zu, KV head %zu, element %zu is not finite",
                               p.mean_k && !isfinite(p.mean_k[i]) ? "mean_k" : "mean_v", i / ((size_t)p.n_kv_head * d),
                               i / d % p.n_kv_head, i % d);
    if (x->key_centers && (p.mode != OSCAR_KV_INT2_ROTATED || x->key_center_block < OSCAR_KEY_CENTER_BLOCK_MIN))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_centers need mode oscar (not %s) and key_center_block "
                           ">= %u (not %u)", oscar_kv_mode_name(p.mode), OSCAR_KEY_CENTER_BLOCK_MIN, x->key_center_block);
    uint32_t n_blocks = x->key_centers ? (uint32_t)(((uint64_t)p.max_context + x->key_center_block - 1) / x->key_center_block) : 0;
    for (size_t i = 0; i < (size_t)L * n_blocks * p.n_kv_head * d; i++)
        if (!isfinite(x->key_centers[i]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_centers of layer %zu, block %zu, KV head %zu, element %zu "
                               "is not finite", i / ((size_t)n_blocks * p.n_kv_head * d), i / ((size_t)p.n_kv_head * d) % n_blocks,
                               i / d % p.n_kv_head, i % d);
    for (uint32_t l = 0; l < L; l++)
        if ((p.clip_k && !(p.clip_k[l] > 0 && p.clip_k[l] <= 1)) || (p.clip_v && !(p.clip_v[l] > 0 && p.clip_v[l] <= 1)))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: clip ratio of layer %u is not in (0, 1]", l);

    c = calloc(1, sizeof *c);
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    c->ctx = ctx;
    c->p = p;
    c->mode = (uint32_t)p.mode; /* OSCAR_KV_* equal KV_MODE_* */
    c->gqa = p.n_head / p.n_kv_head;
    c->n_rot = n_rot;
    uint32_t int2 = p.mode != OSCAR_KV_FP16;
    c->int2_page_bytes = 4ull * KV_INT2_PAGE_WORDS(p.n_kv_head, p.page_tokens, d, p.group_size);
    c->f16_page_bytes = 4ull * KV_F16_PAGE_WORDS(p.n_kv_head, p.page_tokens, d);

    kv_book_config cfg;
    seq_sizes(&p, int2, p.memory_budget / L, c->int2_page_bytes, c->f16_page_bytes, &cfg);
    if (cfg.n_f16_pages == 0 || (int2 && cfg.n_int2_pages == 0 && p.max_context > cfg.sink + cfg.recent))
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_DEVICE_MEMORY, "KV cache: memory_budget %llu bytes holds no page (fp16 pages need %llu bytes per layer)",
                   (unsigned long long)p.memory_budget, (unsigned long long)c->f16_page_bytes);
    OSCAR_TRY(plan_zones(c, &cfg));
    OSCAR_TRY(kv_book_init(&c->book, &cfg));

    /* page pools */
    c->int2_pool = calloc(L, sizeof *c->int2_pool);
    c->f16_pool = calloc(L, sizeof *c->f16_pool);
    if (!c->int2_pool || !c->f16_pool) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t l = 0; l < L; l++) {
        OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)cfg.n_int2_pages * c->int2_page_bytes, OSCAR_BUFFER_DEVICE, &c->int2_pool[l]));
        OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)cfg.n_f16_pages * c->f16_page_bytes, OSCAR_BUFFER_DEVICE, &c->f16_pool[l]));
    }

    /* rotations: the given set, or Hadamard for every layer, or identity (unused) */
    size_t rot_floats = (size_t)L * n_rot * d * d;
    rot = malloc(rot_floats * sizeof *rot);
    if (!rot) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_buffer_create(ctx, rot_floats * 4, OSCAR_BUFFER_DEVICE, &c->rot_k));
    OSCAR_TRY(ovk_buffer_create(ctx, rot_floats * 4, OSCAR_BUFFER_DEVICE, &c->rot_v));
    if (p.mode == OSCAR_KV_INT2_ROTATED) {
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_k, 0, p.rot_k, rot_floats * 4));
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_v, 0, p.rot_v, rot_floats * 4));
    } else {
        for (uint32_t m = 0; m < L * n_rot; m++) {
            if (p.mode == OSCAR_KV_INT2_HADAMARD) ovk_kv_hadamard(d, rot + (size_t)m * d * d);
            else for (uint32_t i = 0; i < d * d; i++) rot[(size_t)m * d * d + i] = (i / d == i % d) ? 1.0f : 0.0f;
        }
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_k, 0, rot, rot_floats * 4));
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_v, 0, rot, rot_floats * 4));
    }
    c->clip_k = malloc(L * sizeof *c->clip_k);
    c->clip_v = malloc(L * sizeof *c->clip_v);
    if (!c->clip_k || !c->clip_v) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t l = 0; l < L; l++) {
        c->clip_k[l] = p.clip_k ? p.clip_k[l] : OSCAR_CLIP_RATIO_K;
        c->clip_v[l] = p.clip_v ? p.clip_v[l] : OSCAR_CLIP_RATIO_V;
    }
    {   /* centering vectors: per layer K then V, zeros where none are given; then the rotated key
         * centers, c_b·R_K of each block and KV head, rounded to fp16 (kv_append subtracts and the
         * attention adds back these same values) */
        size_t per = (size_t)p.n_kv_head * d;
        c->center_block = x->key_centers ? x->key_center_block : 0;
        c->means_words = (uint32_t)((2 * per + n_blocks * per / 2 + 63) / 64 * 64);
        size_t words = (size_t)L * c->means_words;
        uint32_t *m = calloc(words, sizeof *m);
        if (!m) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        for (uint32_t l = 0; l < L; l++) {
            uint32_t *ml = m + (size_t)l * c->means_words;
            if (p.mean_k) memcpy(ml, p.mean_k + (size_t)l * per, per * sizeof *m);
            if (p.mean_v) memcpy(ml + per, p.mean_v + (size_t)l * per, per * sizeof *m);
            for (size_t b = 0; b < n_blocks; b++)
                for (uint32_t h = 0; h < p.n_kv_head; h++) {
                    const float *kc = x->key_centers + (((size_t)l * n_blocks + b) * p.n_kv_head + h) * d;
                    const float *R = p.rot_k + ((size_t)l * n_rot + (n_rot > 1 ? h : 0)) * d * d;
                    uint32_t *dst = ml + 2 * per + (b * p.n_kv_head + h) * d / 2; /* KV_CENTER_TABLE_OFF */
                    double y[KV_MAX_HEAD_DIM] = { 0 }; /* x·R, R read row by row */
                    for (uint32_t i = 0; i < d; i++)
                        for (uint32_t j = 0; j < d; j++) y[j] += (double)kc[i] * R[(size_t)i * d + j];
                    for (uint32_t j = 0; j < d; j++) dst[j / 2] |= (uint32_t)ovk_f32_to_f16((float)y[j]) << (j % 2 * 16);
                }
        }
        st = ovk_buffer_create(ctx, words * 4, OSCAR_BUFFER_DEVICE, &c->means);
        if (st == OSCAR_OK) st = ovk_buffer_upload(ctx, &c->means, 0, m, words * 4);
        free(m);
        if (st != OSCAR_OK) goto fail;
    }
    {   /* key error feedback (a 16-byte buffer the flush never reads when there is none) */
        uint64_t bytes = x->key_feedback ? (uint64_t)L * n_rot * d * d * 4 : 16;
        st = ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &c->feedback);
        if (st == OSCAR_OK && x->key_feedback) st = ovk_buffer_upload(ctx, &c->feedback, 0, x->key_feedback, bytes);
        if (st != OSCAR_OK) goto fail;
        c->key_feedback = x->key_feedback ? (n_rot > 1 ? 2 : 1) : 0;
    }
    {   /* keys' refit metric (likewise) */
        uint64_t bytes = x->key_metric ? (uint64_t)L * n_rot * d * d * 4 : 16;
        st = ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &c->metric);
        if (st == OSCAR_OK && x->key_metric) st = ovk_buffer_upload(ctx, &c->metric, 0, x->key_metric, bytes);
        if (st != OSCAR_OK) goto fail;
        c->key_metric = x->key_metric ? (n_rot > 1 ? 2 : 1) : 0;
    }
    c->p.rot_k = c->p.rot_v = NULL;
    c->p.clip_k = c->p.clip_v = NULL;
    c->p.mean_k = c->p.mean_v = NULL;
    c->p.experimental = NULL;
    c->refit_rounds = x->refit_rounds;

    /* tables and per-step buffers */
    uint64_t table_bytes = (uint64_t)p.max_sequences * c->book.max_pages * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, table_bytes, OSCAR_BUFFER_DEVICE, &c->int2_table));
    OSCAR_TRY(ovk_buffer_create(ctx, table_bytes, OSCAR_BUFFER_DEVICE, &c->f16_table));
    uint32_t T = p.max_step_tokens;
    /* zones: each kind of slot, item and tile grouped by zone at aligned offsets (kv_zones.c) */
    uint32_t n_zones = ovk_kv_n_zones(c);
    c->slot_align = ovk_kv_align_elems(c, sizeof(struct kv_token_slot));
    /* items and their partials: both alignments, powers of two (the alignment is one) */
    uint32_t item_align = ovk_kv_align_elems(c, sizeof(struct kv_attn_item));
    uint32_t part_align = ovk_kv_align_elems(c, (uint64_t)p.n_head * KV_PARTIAL_FLOATS(d) * 4);
    c->item_align = item_align > part_align ? item_align : part_align;
    c->tile_align = ovk_kv_align_elems(c, sizeof(struct kv_attn_tile));
    uint32_t slot_pad = n_zones > 1 ? n_zones * (c->slot_align - 1) : 0;
    c->z_append = calloc(n_zones, sizeof *c->z_append);
    c->z_flush = calloc(n_zones, sizeof *c->z_flush);
    c->z_items = calloc(n_zones, sizeof *c->z_items);
    c->z_tiles = calloc(n_zones, sizeof *c->z_tiles);
    c->h_table = malloc(c->book.max_pages * sizeof *c->h_table);
    c->flush_offset = (T + slot_pad + c->slot_align - 1) / c->slot_align * c->slot_align; /* an aligned offset too */
    uint64_t max_flush = (uint64_t)T + (uint64_t)p.max_sequences * (p.recent_tokens + p.flush_tokens) + slot_pad;
    c->h_slots = malloc((c->flush_offset + max_flush) * sizeof *c->h_slots);
    if (!c->z_append || !c->z_flush || !c->z_items || !c->z_tiles || !c->h_table || !c->h_slots)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_buffer_create(ctx, (c->flush_offset + max_flush) * sizeof(struct kv_token_slot), OSCAR_BUFFER_DEVICE,
                                &c->slots));
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)T * sizeof(struct kv_attn_row), OSCAR_BUFFER_DEVICE, &c->rows));
    uint64_t row_bytes = (uint64_t)T * p.n_head * d * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_DEVICE, &c->q_rot));
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)T * p.n_kv_head * 4, OSCAR_BUFFER_DEVICE, &c->counters));
    OSCAR_TRY(ovk_buffer_fill(ctx, &c->counters, 0, (uint64_t)T * p.n_kv_head * 4, 0));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_DEVICE, &c->q_dev));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_STAGING, &c->io_q));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_READBACK, &c->io_out));
    uint64_t kv_bytes = (uint64_t)T * p.n_kv_head * d * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, kv_bytes, OSCAR_BUFFER_STAGING, &c->io_k));
    OSCAR_TRY(ovk_buffer_create(ctx, kv_bytes, OSCAR_BUFFER_STAGING, &c->io_v));
    c->h_rows = malloc(T * sizeof *c->h_rows);
    c->h_row_vis = malloc(T * sizeof *c->h_row_vis);
    c->h_seq_sink = malloc(p.max_sequences * sizeof *c->h_seq_sink);
    c->h_seq_fe = malloc(p.max_sequences * sizeof *c->h_seq_fe);
    if (!c->h_rows || !c->h_row_vis || !c->h_seq_sink || !c->h_seq_fe) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");

    OSCAR_TRY(ovk_cmd_init(ctx, &c->cmd));
    /* on a CPU device the write path's texel shapes: an invocation a row, R by texel fetches
     * (lavapipe, SmolLM2-135M in int2-hadamard mode: kv_append 1.6 -> 0.24 ms, rotate_rows 0.83 -> 0.20
     * ms a call); up to head_dim 128, whose unrolled rows lavapipe still compiles in seconds */
    c->write_texel = ctx->info.type == OSCAR_DEVICE_CPU && ctx->texel_buffers && d <= 128 && ovk_kv_n_zones(c) == 1 &&
                     c->rot_k.size / 16 <= ctx->limits.maxTexelBufferElements &&
                     c->rot_v.size / 16 <= ctx->limits.maxTexelBufferElements;
    /* kv_append and rotate_rows are got at first use, in the RoPE variant a model asks for or
     * without RoPE for an engine that applies its own (on lavapipe each costs 20-150 ms) */
    OSCAR_TRY(ovk_kv_get_pipeline(c, "kv_flush", 5, sizeof(struct kv_flush_push), WG_WRITE, 0, 0, &c->pl_flush));
    c->wg_rotate = ctx->info.type == OSCAR_DEVICE_CPU ? d / 4 : WG_ROTATE;
    c->append_pairs = ovk_kv_append_pairs(d, ctx->info.max_shared_memory);
    OSCAR_TRY(create_decode(c));
    OSCAR_TRY(create_prefill(c));
    free(rot);
    *out = c;
    return OSCAR_OK;
fail:
    free(rot);
    oscar_kv_cache_destroy(c);
    return st;
}

OSCAR_API void oscar_kv_cache_destroy(oscar_kv_cache *c)
{
    if (!c) return;
    oscar_context *ctx = c->ctx;
    ovk_cmd_release(ctx, &c->cmd);
    ovk_cmd_release(ctx, &c->ext_cmd);
    for (uint32_t l = 0; c->int2_pool && l < c->p.n_layer; l++) ovk_buffer_destroy(ctx, &c->int2_pool[l]);
    for (uint32_t l = 0; c->f16_pool && l < c->p.n_layer; l++) ovk_buffer_destroy(ctx, &c->f16_pool[l]);
    free(c->int2_pool);
    free(c->f16_pool);
    ovk_buffer *bufs[] = { &c->rot_k, &c->rot_v, &c->means, &c->feedback, &c->metric, &c->int2_table, &c->f16_table, &c->slots, &c->rows, &c->items,
                             &c->partials, &c->q_rot, &c->counters, &c->q_dev, &c->staging, &c->io_k, &c->io_v, &c->io_q, &c->io_out,
                             &c->tiles, &c->pf_partials };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    free(c->clip_k), free(c->clip_v);
    free(c->copies), free(c->copy_dst);
    free(c->h_rows), free(c->h_items), free(c->h_row_vis), free(c->h_seq_sink), free(c->h_seq_fe);
    free(c->h_tiles), free(c->h_walks), free(c->h_tiles_z), free(c->h_items_z), free(c->h_slots), free(c->h_table);
    free(c->z_append), free(c->z_flush), free(c->z_items), free(c->z_tiles);
    kv_book_free(&c->book);
    free(c);
}

void ovk_kv_pools(const oscar_kv_cache *c, uint32_t layer, const ovk_buffer **int2, const ovk_buffer **f16)
{
    *int2 = &c->int2_pool[layer];
    *f16 = &c->f16_pool[layer];
}

const char *ovk_kv_attention_variant(const oscar_kv_cache *c)
{
    return c->cm_step ? c->attn_cm.variant : c->attn.variant;
}

/* ---- accounting ---------------------------------------------------------------------------- */
OSCAR_API oscar_status oscar_kv_get_stats(const oscar_kv_cache *c, oscar_kv_stats *s)
{
    if (!c || !s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_get_stats: NULL argument");
    memset(s, 0, sizeof *s);
    const kv_book *b = &c->book;
    uint32_t L = c->p.n_layer, P = c->p.page_tokens;
    s->mode = c->p.mode;
    s->page_tokens = P;
    s->int2_pages_total = b->int2.n_pages;
    s->int2_pages_used = b->int2.n_pages - kv_pool_n_free(&b->int2);
    s->f16_pages_total = b->f16.n_pages;
    s->f16_pages_used = b->f16.n_pages - kv_pool_n_free(&b->f16);
    s->int2_bytes_per_token = c->int2_page_bytes * L / P;
    s->f16_bytes_per_token = c->f16_page_bytes * L / P;
    s->bytes_total = (uint64_t)L * (b->int2.n_pages * c->int2_page_bytes + b->f16.n_pages * c->f16_page_bytes);
    s->bytes_used = (uint64_t)L * (s->int2_pages_used * c->int2_page_bytes + s->f16_pages_used * c->f16_page_bytes);
    for (uint32_t q = 0; q < c->p.max_sequences; q++) {
        const kv_seq *sq = &b->seqs[q];
        if (!sq->active) continue;
        uint64_t n_int2 = b->cfg.int2 && sq->flushed_end > b->cfg.sink ? sq->flushed_end - b->cfg.sink : 0;
        s->int2_tokens += n_int2;
        s->f16_tokens += sq->len - n_int2;
    }
    uint64_t tokens = s->int2_tokens + s->f16_tokens;
    if (tokens)
        s->bits_per_element = (double)s->bytes_used * 8.0 / ((double)tokens * L * 2 * c->p.n_kv_head * c->p.head_dim);
    /* longest new sequence (in the zone it would take): fp16 window pages first, then INT2 pages */
    uint32_t lo = 0, hi = c->p.max_context, z = kv_book_new_zone(b);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2, i2, f;
        kv_book_pages_for(&b->cfg, mid, &i2, &f);
        if (i2 <= b->int2.n_free[z] && f <= b->f16.n_free[z]) lo = mid;
        else hi = mid - 1;
    }
    s->max_context = lo;
    s->last_gpu_ms = c->last_gpu_ms;
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_kv_max_context(const oscar_kv_params *params, uint64_t budget, uint32_t *max_tokens)
{
    oscar_status st = OSCAR_OK;
    if (!params || !max_tokens) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_max_context: NULL argument");
    oscar_kv_params p = *params;
    p.max_context = UINT32_MAX / 2;
    p.max_sequences = 1;
    OSCAR_TRY(check_params(&p));
    uint32_t d = p.head_dim;
    uint64_t i2b = 4ull * KV_INT2_PAGE_WORDS(p.n_kv_head, p.page_tokens, d, p.group_size) * p.n_layer;
    uint64_t f16b = 4ull * KV_F16_PAGE_WORDS(p.n_kv_head, p.page_tokens, d) * p.n_layer;
    kv_book_config cfg;
    seq_sizes(&p, p.mode != OSCAR_KV_FP16, 0, 0, 0, &cfg);
    uint32_t lo = 0, hi = UINT32_MAX / 2;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2, i2, f;
        kv_book_pages_for(&cfg, mid, &i2, &f);
        if ((uint64_t)i2 * i2b + (uint64_t)f * f16b <= budget) lo = mid;
        else hi = mid - 1;
    }
    *max_tokens = lo;
fail:
    return st;
}
