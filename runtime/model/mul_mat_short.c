/* The short-batch product's plan and dispatch; see mul_mat_short.h. */
#include <string.h>

#include "mul_mat_coopmat.h"
#include "mul_mat_short.h"

#define GRID_MAX 65535u

/* Default plan: 2 row groups x 4 column parts of 2 row matrices (64 rows a workgroup, each
 * subgroup 32 rows by all the tokens over a quarter of the slice's columns). */
static const uint32_t default_plan[3] = { 2, 4, 2 }; /* sg_r, sg_k, cm */

/* The column slices of plan p (see ovk_mms_plan_for). */
static void plan_slices(const ovk_ops *ops, ovk_mms_plan *p, uint32_t rows, uint32_t cols, uint32_t n)
{
    uint32_t steps = ovk_div_up(cols, MMS_BK);
    p->slices = 1;
    p->k_slice = steps * MMS_BK;
    uint64_t part = (uint64_t)n * rows * 4, room = ovk_mm_scratch_bytes(ops);
    if (part > room) return;
    uint32_t want = ops->matmul_split;
    if (want == 0) {
        uint64_t groups = (uint64_t)ovk_div_up(rows, p->bm) * ovk_div_up(n, p->rn) * p->sg_r * p->sg_k;
        if (groups >= OVK_MMS_SUBGROUPS) return;
        want = (uint32_t)ovk_div_up(OVK_MMS_SUBGROUPS, (uint32_t)groups);
        uint32_t most = steps / (p->sg_k * OVK_MMS_MIN_STEPS);
        if (want > most) want = most;
    }
    if ((uint64_t)want * part > room) want = (uint32_t)(room / part);
    if (want > steps) want = steps;
    if (want < 2) return;
    p->k_slice = ovk_div_up(steps, want) * MMS_BK;
    p->slices = ovk_div_up(cols, p->k_slice);
}

oscar_status ovk_mms_plan_for(const ovk_ops *ops, uint32_t tm, uint32_t tn, uint32_t tk, uint32_t min_sg, uint32_t max_sg,
                              uint32_t rows, uint32_t cols, uint32_t n, ovk_mms_plan *p)
{
    const VkPhysicalDeviceLimits *lim = &ops->ctx->limits;
    if (n == 0 || n > OVK_MMS_TOKENS_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_short: %u tokens (1..%u)", n, OVK_MMS_TOKENS_MAX);
    if (MMS_TOKEN_PAD % tn || tk % 4 || MMS_BK % tk || tm % 4 || min_sg == 0 || max_sg < min_sg)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_short: shape %u x %u x %u, subgroups of %u..%u", tm, tn, tk,
                           min_sg, max_sg);
    const uint32_t *t = ops->matmul_short;
    *p = (ovk_mms_plan){ .tm = tm, .tn = tn, .tk = tk, .sg_r = t[0] ? t[0] : default_plan[0],
                         .sg_k = t[1] ? t[1] : default_plan[1], .cm = t[2] ? t[2] : default_plan[2] };
    p->cn = ovk_div_up(n, tn);
    p->rn = p->cn * tn;
    uint64_t shared;
    for (;;) { /* the default plan halves its column parts, then its row groups, to fit the device */
        p->bm = p->sg_r * p->cm * tm;
        p->workgroup = p->sg_r * p->sg_k * max_sg;
        shared = (uint64_t)p->sg_r * p->sg_k * p->cm * tm * (MMS_BK / 4 + 2) * 8 + (uint64_t)p->sg_r * p->cm * tm * p->rn * 4;
        int fits = shared <= lim->maxComputeSharedMemorySize && p->workgroup <= lim->maxComputeWorkGroupInvocations &&
                   p->workgroup <= lim->maxComputeWorkGroupSize[0];
        if (fits || t[0] || t[1] || p->sg_r * p->sg_k == 1) break;
        if (p->sg_k > 1) p->sg_k /= 2;
        else p->sg_r /= 2;
    }
    p->runs = ovk_div_up(p->cm * tm * (MMS_BK / 8), min_sg);
    if (p->sg_r * p->sg_k > 16 || p->cm * p->cn > 16)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_short: %u x %u subgroups of %u x %u matrices", p->sg_r,
                           p->sg_k, p->cm, p->cn);
    if (p->workgroup > lim->maxComputeWorkGroupInvocations || p->workgroup > lim->maxComputeWorkGroupSize[0])
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_short: %u subgroups of %u threads exceed '%s''s workgroup",
                           p->sg_r * p->sg_k, max_sg, ops->ctx->info.name);
    if (shared > lim->maxComputeSharedMemorySize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_short: %llu bytes of shared memory, '%s' has %u",
                           (unsigned long long)shared, ops->ctx->info.name, lim->maxComputeSharedMemorySize);
    plan_slices(ops, p, rows, cols, n);
    return OSCAR_OK;
}

/* The smallest subgroup size the device may run (the largest is ovk_max_subgroup_size). */
static uint32_t min_subgroup_size(const oscar_context *ctx)
{
    return ctx->info.min_subgroup_size ? ctx->info.min_subgroup_size : ctx->info.subgroup_size;
}

int ovk_mms_supported(const ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    if (!(ctx->features.enabled & OVK_NEEDS_COOPMAT) || ctx->env.matmul_short == 0) return 0;
    const char *shader = ovk_pick_variant(ctx, "mul_mat_short");
    const oscar_coopmat_shape *s = ovk_mmc_shape(ctx);
    ovk_mms_plan p;
    return shader && strcmp(shader, "mul_mat_short.coopmat") == 0 && s &&
           ovk_mms_plan_for(ops, s->m, s->n, s->k, min_subgroup_size(ctx), ovk_max_subgroup_size(ctx), 4096, 4096,
                            OVK_MMS_TOKENS_MAX, &p) == OSCAR_OK;
}

/* Records `shader` with plan p: into y, or for a split plan into the slices of ops' scratch, then
 * their sum into y (a barrier before the product too: the previous split product's sum may still
 * read the scratch). */
static oscar_status dispatch(const ovk_ops *ops, ovk_cmd *cmd, const char *shader, const ovk_mms_plan *p, uint32_t type,
                             ovk_binding w, ovk_binding xh, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                             uint32_t n)
{
    if (rows == 0 || n == 0) return OSCAR_OK;
    uint32_t groups[3] = { ovk_div_up(rows, p->bm), ovk_div_up(n, p->rn), p->slices };
    if (groups[0] > GRID_MAX || groups[2] > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u rows exceed the grid", shader, rows);
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = 3, .push_size = 28, .n_spec = MMS_SPEC_COUNT,
                            .spec = { [MMS_SPEC_WORKGROUP] = p->workgroup, [MMS_SPEC_TYPE] = type, [MMS_SPEC_TM] = p->tm,
                                      [MMS_SPEC_TN] = p->tn, [MMS_SPEC_TK] = p->tk, [MMS_SPEC_CM] = p->cm,
                                      [MMS_SPEC_CN] = p->cn, [MMS_SPEC_SG_R] = p->sg_r, [MMS_SPEC_SG_K] = p->sg_k,
                                      [MMS_SPEC_RUNS] = p->runs } };
    int split = p->slices > 1;
    uint64_t part = (uint64_t)n * rows; /* floats of a slice: [n][rows] */
    ovk_binding out = y;
    if (split) {
        out = ops->matmul_scratch;
        out.range = part * p->slices * 4;
    }
    uint32_t push[7] = { rows, cols, n, split ? rows : y_stride, p->k_slice, split ? (uint32_t)part : 0, ovk_x16_stride(cols) };
    ovk_binding b[3] = { w, xh, out };
    ovk_pipeline *pl;
    oscar_status st = ovk_pipeline_get(ops->ctx, &d, &pl);
    if (st == OSCAR_OK && split) ovk_cmd_barrier(ops->ctx, cmd);
    if (st == OSCAR_OK) st = ovk_cmd_dispatch(ops->ctx, cmd, pl, b, push, groups);
    if (st != OSCAR_OK || !split) return st;
    return ovk_mm_sum_slices(ops, cmd, out, y, y_stride, rows, n, p->slices);
}

oscar_status ovk_mms_record(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding xh,
                            ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    const oscar_coopmat_shape *s = ovk_mmc_shape(ctx);
    if (!ovk_mms_supported(ops) || !s)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_short: no fp16 cooperative matrices it can use on '%s'%s",
                           ctx->info.name, ctx->env.disable_coopmat ? " (OSCAR_DISABLE_COOPMAT=1)" : "");
    ovk_mms_plan p;
    oscar_status st = ovk_mms_plan_for(ops, s->m, s->n, s->k, min_subgroup_size(ctx), ovk_max_subgroup_size(ctx), rows, cols,
                                       n, &p);
    if (st != OSCAR_OK) return st;
    return dispatch(ops, cmd, "mul_mat_short.coopmat", &p, type, w, xh, y, y_stride, rows, cols, n);
}

oscar_status ovk_mms_record_emulated(const ovk_ops *ops, ovk_cmd *cmd, uint32_t tm, uint32_t tn, uint32_t tk,
                                     uint32_t type, ovk_binding w, ovk_binding xh, ovk_binding y, uint32_t y_stride,
                                     uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    const char *shader = ovk_pick_variant(ctx, "mul_mat_short_emu");
    uint32_t min_sg = min_subgroup_size(ctx);
    if (!shader || !ctx->info.storage_16bit)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_short_emu: no fp16 arithmetic and 16-bit storage on '%s'",
                           ctx->info.name);
    if (tm * tn > MMS_EMU_ELEMS * min_sg)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_short_emu: shape %u x %u x %u (subgroups of %u and more)", tm,
                           tn, tk, min_sg);
    ovk_mms_plan p;
    oscar_status st = ovk_mms_plan_for(ops, tm, tn, tk, min_sg, ovk_max_subgroup_size(ctx), rows, cols, n, &p);
    if (st != OSCAR_OK) return st;
    return dispatch(ops, cmd, shader, &p, type, w, xh, y, y_stride, rows, cols, n);
}
