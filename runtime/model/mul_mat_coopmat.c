/* The cooperative-matrix matmul's plan per device and its dispatch; see mul_mat_coopmat.h. */
#include <string.h>

#include "mul_mat_coopmat.h"
#include "ggml_types.h"

#include "common/mul_mat_coopmat.h"

#define GRID_MAX 65535u

/* The fp16 shape the kernel uses: 16 x 16 x 16 where listed, else the largest M x N whose K
 * divides the step (and is a multiple of 4: the shared tiles are read in fp16 x4). */
static const oscar_coopmat_shape *pick_shape(const oscar_context *ctx)
{
    const oscar_coopmat_shape *best = NULL;
    for (uint32_t i = 0; i < ctx->info.coopmat_shape_count; i++) {
        const oscar_coopmat_shape *s = &ctx->info.coopmat_shapes[i];
        if (!ovk_coopmat_shape_f16_f32(s) || s->k % 4 || MMC_BK % s->k || s->m % 4 || s->m > 64 || s->n > 64) continue;
        if (s->m == 16 && s->n == 16 && s->k == 16) return s;
        if (!best || s->m * s->n > best->m * best->n) best = s;
    }
    return best;
}

/* The default plans, tried in order: 4 x 4 warp tiles of 2 x 4 matrices (128 x 256 at 16 x
 * 16; on the H100 1.7x the throughput of the second at 512 tokens, 79 against 45 TFLOPS:
 * sixteen subgroups hide the tile loads' latency where four do not), then 2 x 2 warp tiles of
 * 4 x 4 matrices where a workgroup cannot hold the first (threads or shared memory). The token
 * matrices, and the warp tiles along tokens, shrink for a short batch so that a workgroup does
 * not multiply padding; a split one (OVK_MMC_SPLIT_TOKENS or fewer) takes at most two warp tiles
 * along tokens, so that 33 to 64 tokens are 2 x 2 token matrices in 8 subgroups rather than 3
 * or 4 warp tiles of one in 12 or 16: 110 against 141-163 us for Q4_0 14336 x 4096 at 40 and
 * 64 tokens on the H200. */
static const uint32_t default_plans[2][3] = { { 4, 4, 2 }, { 2, 2, 4 } }; /* sg_m, sg_n, cm */

/* Plan p for shape s, n tokens and subgroups of at most `sg` threads, from ops' tuning where it
 * sets a value and from default d elsewhere; its shared memory in *shared. */
static void plan_fill(const ovk_ops *ops, const oscar_coopmat_shape *s, uint32_t sg, uint32_t n, const uint32_t d[3],
                      ovk_mmc_plan *p, uint64_t *shared)
{
    const uint32_t *t = ops->matmul_coopmat;
    uint32_t most = n <= OVK_MMC_SPLIT_TOKENS && d[1] > 2 ? 2 : d[1];
    uint32_t sg_n = t[1] ? t[1] : n < most * s->n ? ovk_div_up(n, s->n) : most; /* no warp tile of padding only */
    uint32_t cn = n > 2 * sg_n * s->n ? 4 : n > sg_n * s->n ? 2 : 1;
    *p = (ovk_mmc_plan){ .tm = s->m, .tn = s->n, .tk = s->k, .sg_m = t[0] ? t[0] : d[0], .sg_n = sg_n,
                         .cm = t[2] ? t[2] : d[2], .cn = t[3] ? t[3] : cn };
    p->workgroup = p->sg_m * p->sg_n * sg; /* every subgroup full, whatever size the device picks */
    p->bm = p->sg_m * p->cm * p->tm;
    p->bn = p->sg_n * p->cn * p->tn;
    p->slices = 1;
    p->k_slice = 0; /* set by ovk_mmc_plan_split, which every recording calls (the whole row unsplit) */
    p->f16_decode = 0; /* set by the recording for its weight type (packed_decode) */
    uint32_t sk = MMC_BK / 4 + 2; /* the shader's SK: fp16 x4 per shared row */
    *shared = (uint64_t)(p->bm + p->bn) * sk * 8 + (uint64_t)p->sg_m * p->sg_n * p->tm * p->tn * 4;
    /* the short batches' build's staged Q4_0 words (sraw): counted for every plan of that tile,
     * whose type the plan does not know */
    if (p->bn == MMC_Q4_RAW_TOKENS) *shared += (uint64_t)p->bm * MMC_Q4_RAW_WORDS * 4;
}

/* Whether a workgroup of plan p fits the device. */
static int plan_fits(const oscar_context *ctx, const ovk_mmc_plan *p, uint64_t shared)
{
    const VkPhysicalDeviceLimits *lim = &ctx->limits;
    return p->workgroup <= lim->maxComputeWorkGroupInvocations && p->workgroup <= lim->maxComputeWorkGroupSize[0] &&
           shared <= lim->maxComputeSharedMemorySize;
}

/* The plan for shape s, n tokens and subgroups of at most `sg` threads (see ovk_mmc_plan_for). */
static oscar_status plan_shape(const ovk_ops *ops, const oscar_coopmat_shape *s, uint32_t sg, uint32_t n, ovk_mmc_plan *plan)
{
    oscar_context *ctx = ops->ctx;
    uint64_t shared = 0;
    for (uint32_t i = 0; i < 2; i++) {
        plan_fill(ops, s, sg, n, default_plans[i], plan, &shared);
        if (plan_fits(ctx, plan, shared)) break;
    }
    if (plan->sg_m * plan->sg_n > 16 || plan->cm * plan->cn > 32)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat.coopmat: %u x %u warp tiles of %u x %u matrices", plan->sg_m,
                           plan->sg_n, plan->cm, plan->cn);
    const VkPhysicalDeviceLimits *lim = &ctx->limits;
    if (plan->workgroup > lim->maxComputeWorkGroupInvocations || plan->workgroup > lim->maxComputeWorkGroupSize[0])
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat.coopmat: %u subgroups of %u threads exceed '%s''s workgroup",
                           plan->sg_m * plan->sg_n, sg, ctx->info.name);
    if (shared > lim->maxComputeSharedMemorySize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat.coopmat: a %u x %u tile needs %llu bytes of shared memory, "
                           "'%s' has %u", plan->bm, plan->bn, (unsigned long long)shared, ctx->info.name,
                           lim->maxComputeSharedMemorySize);
    return OSCAR_OK;
}

oscar_status ovk_mmc_plan_for(const ovk_ops *ops, uint32_t n, ovk_mmc_plan *plan)
{
    oscar_context *ctx = ops->ctx;
    const char *shader = ovk_pick_variant(ctx, "mul_mat");
    if (!shader || strcmp(shader, "mul_mat.coopmat") != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat.coopmat: no fp16 cooperative matrices on '%s'%s",
                           ctx->info.name, ctx->env.disable_coopmat ? " (OSCAR_DISABLE_COOPMAT=1)" : "");
    const oscar_coopmat_shape *s = pick_shape(ctx);
    if (!s)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat.coopmat: '%s' lists no fp16 shape with K dividing %u",
                           ctx->info.name, MMC_BK);
    return plan_shape(ops, s, ovk_max_subgroup_size(ctx), n, plan);
}

/* The usable bytes of ops' scratch for split products (0 without one). */
static uint64_t scratch_bytes(const ovk_ops *ops)
{
    const ovk_binding *b = &ops->matmul_scratch;
    if (!b->buffer || b->offset >= b->buffer->size) return 0;
    uint64_t left = b->buffer->size - b->offset;
    return b->range && b->range < left ? b->range : left;
}

void ovk_mmc_plan_split(const ovk_ops *ops, ovk_mmc_plan *p, uint32_t rows, uint32_t cols, uint32_t n)
{
    p->slices = 1;
    p->k_slice = ovk_div_up(cols, MMC_BK) * MMC_BK;
    uint64_t part = (uint64_t)n * rows * 4, room = scratch_bytes(ops);
    if (rows == 0 || n == 0 || part > room) return;
    uint32_t want = ops->matmul_split;
    if (want == 0) { /* auto: a short batch whose tiles leave cores idle */
        uint32_t tiles = ovk_div_up(rows, p->bm) * ovk_div_up(n, p->bn);
        if (n > OVK_MMC_SPLIT_TOKENS || tiles >= OVK_MMC_SPLIT_GROUPS) return;
        want = ovk_div_up(OVK_MMC_SPLIT_GROUPS, tiles);
    }
    uint32_t steps = ovk_div_up(cols, MMC_BK), most = steps / (ops->matmul_split ? 1 : OVK_MMC_SPLIT_STEPS);
    if ((uint64_t)want * part > room) want = (uint32_t)(room / part);
    if (want > most) want = most;
    if (want < 2) return;
    p->k_slice = ovk_div_up(steps, want) * MMC_BK;
    p->slices = ovk_div_up(cols, p->k_slice);
}

/* Records the sum of a split product's slices into y (mul_mat_slices; no barrier). */
static oscar_status record_sum(const ovk_ops *ops, ovk_cmd *cmd, const struct ovk_mm_pending *s)
{
    ovk_pipeline_desc sum = { .shader = "mul_mat_slices", .n_buffers = 2, .push_size = 16, .n_spec = 1, .spec = { 256 } };
    uint32_t push[4] = { s->rows, s->n, s->y_stride, s->slices }, groups[3] = { ovk_div_up(s->rows, 256), s->n, 1 };
    ovk_binding b[2] = { s->part, s->y };
    ovk_pipeline *pl;
    oscar_status st = ovk_pipeline_get(ops->ctx, &sum, &pl);
    return st != OSCAR_OK ? st : ovk_cmd_dispatch(ops->ctx, cmd, pl, b, push, groups);
}

void ovk_op_mul_mat_group_begin(ovk_ops *ops, ovk_mm_group *g)
{
    g->used = 0;
    g->count = 0;
    ops->mm_group = g;
}

/* The group's pending sums after one barrier (none pending: nothing recorded); the scratch is
 * free again for products recorded after a further barrier. */
static oscar_status group_sums(const ovk_ops *ops, ovk_cmd *cmd, ovk_mm_group *g)
{
    oscar_status st = OSCAR_OK;
    if (g->count) ovk_cmd_barrier(ops->ctx, cmd);
    for (uint32_t i = 0; i < g->count && st == OSCAR_OK; i++) st = record_sum(ops, cmd, &g->p[i]);
    g->count = 0;
    g->used = 0;
    return st;
}

oscar_status ovk_op_mul_mat_group_end(ovk_ops *ops, ovk_cmd *cmd)
{
    ovk_mm_group *g = ops->mm_group;
    ops->mm_group = NULL;
    return g ? group_sums(ops, cmd, g) : OSCAR_OK;
}

/* Where a split product's slices go: alone, the start of the scratch, after a barrier (the
 * products of one input are recorded without barriers among them, and the previous split
 * product's sum may still be reading it); in a group, the next free part of the scratch, after
 * the group's pending sums where it has no room left. */
static oscar_status scratch_part(const ovk_ops *ops, ovk_cmd *cmd, uint64_t bytes, ovk_binding *out)
{
    ovk_mm_group *g = ops->mm_group;
    *out = ops->matmul_scratch;
    out->range = bytes;
    if (!g) {
        ovk_cmd_barrier(ops->ctx, cmd);
        return OSCAR_OK;
    }
    uint64_t align = ops->ctx->limits.minStorageBufferOffsetAlignment, room = scratch_bytes(ops);
    uint64_t at = (g->used + align - 1) / align * align;
    if (g->count == OVK_MM_GROUP_MAX || at + bytes > room) {
        oscar_status st = group_sums(ops, cmd, g);
        if (st != OSCAR_OK) return st;
        ovk_cmd_barrier(ops->ctx, cmd); /* the sums read the scratch before it is written again */
        at = 0;
    }
    out->offset += at;
    g->used = at + bytes;
    return OSCAR_OK;
}

/* Records `shader` with plan p over checked arguments: into y, or for a split plan into slices
 * of ops' scratch (scratch_part), then their sum into y: after a barrier, or in a group at its
 * end. */
static oscar_status dispatch(const ovk_ops *ops, ovk_cmd *cmd, const char *shader, const ovk_mmc_plan *p, uint32_t type,
                             ovk_binding w, ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                             uint32_t n)
{
    if (w.offset % 16)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: W bound at byte %llu (it is read 16 bytes at a time: a multiple "
                           "of 16)", shader, (unsigned long long)w.offset);
    if (rows == 0 || n == 0) return OSCAR_OK;
    uint32_t groups[3] = { ovk_div_up(rows, p->bm), ovk_div_up(n, p->bn), p->slices };
    if (groups[0] > GRID_MAX || groups[1] > GRID_MAX || groups[2] > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u rows x %u tokens exceed the grid", shader, rows, n);
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = 3, .push_size = 24, .n_spec = MMC_SPEC_COUNT,
                            .spec = { [MMC_SPEC_WORKGROUP] = p->workgroup, [MMC_SPEC_TYPE] = type, [MMC_SPEC_TM] = p->tm,
                                      [MMC_SPEC_TN] = p->tn, [MMC_SPEC_TK] = p->tk, [MMC_SPEC_SG_M] = p->sg_m,
                                      [MMC_SPEC_SG_N] = p->sg_n, [MMC_SPEC_CM] = p->cm, [MMC_SPEC_CN] = p->cn,
                                      [MMC_SPEC_F16_DECODE] = p->f16_decode } };
    int split = p->slices > 1;
    uint64_t part = (uint64_t)n * rows; /* floats of a slice: [n][rows] */
    ovk_pipeline *pl;
    oscar_status st = ovk_pipeline_get(ops->ctx, &d, &pl);
    if (st != OSCAR_OK) return st;
    ovk_binding out = y;
    if (split && (st = scratch_part(ops, cmd, part * p->slices * 4, &out)) != OSCAR_OK) return st;
    uint32_t push[6] = { rows, cols, n, split ? rows : y_stride, p->k_slice, split ? (uint32_t)part : 0 };
    ovk_binding b[3] = { w, x, out };
    if ((st = ovk_cmd_dispatch(ops->ctx, cmd, pl, b, push, groups)) != OSCAR_OK || !split) return st;
    struct ovk_mm_pending sum = { out, y, rows, n, y_stride, p->slices };
    ovk_mm_group *g = ops->mm_group;
    if (g) {
        g->p[g->count++] = sum;
        return OSCAR_OK;
    }
    ovk_cmd_barrier(ops->ctx, cmd);
    return record_sum(ops, cmd, &sum);
}

/* Whether n tokens of `type` have their weights decoded in packed fp16: a short batch of Q4_0. */
static uint32_t packed_decode(uint32_t type, uint32_t n) { return type == OSCAR_GGML_TYPE_Q4_0 && n <= OVK_MMC_SPLIT_TOKENS; }

oscar_status ovk_mmc_record(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                            ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    ovk_mmc_plan p;
    oscar_status st = ovk_mmc_plan_for(ops, n, &p);
    if (st != OSCAR_OK) return st;
    ovk_mmc_plan_split(ops, &p, rows, cols, n);
    /* the decode steps' own build, built beside mul_mat.coopmat (one compiler makes both) */
    p.f16_decode = packed_decode(type, n);
    return dispatch(ops, cmd, p.f16_decode ? "mul_mat_decode.coopmat" : "mul_mat.coopmat", &p, type, w, x, y, y_stride, rows,
                    cols, n);
}

oscar_status ovk_mmc_record_emulated(const ovk_ops *ops, ovk_cmd *cmd, uint32_t tm, uint32_t tn, uint32_t tk,
                                     uint32_t type, ovk_binding w, ovk_binding x, ovk_binding y, uint32_t y_stride,
                                     uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    const char *shader = ovk_pick_variant(ctx, "mul_mat_emu");
    uint32_t min_sg = ctx->info.min_subgroup_size ? ctx->info.min_subgroup_size : ctx->info.subgroup_size;
    if (!shader)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_emu: no fp16 arithmetic on '%s'", ctx->info.name);
    if (tk % 4 || MMC_BK % tk || tm % 4 || tm * tn > MMC_EMU_ELEMS * min_sg)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_emu: shape %u x %u x %u (subgroups of %u and more)", tm, tn,
                           tk, min_sg);
    oscar_coopmat_shape s = { .m = tm, .n = tn, .k = tk };
    ovk_mmc_plan p;
    oscar_status st = plan_shape(ops, &s, ovk_max_subgroup_size(ctx), n, &p);
    if (st != OSCAR_OK) return st;
    ovk_mmc_plan_split(ops, &p, rows, cols, n);
    p.f16_decode = packed_decode(type, n); /* the emulation's specialization constant */
    return dispatch(ops, cmd, shader, &p, type, w, x, y, y_stride, rows, cols, n);
}

