/* Recording the forward-pass kernels other than attention; see ops.h. Each op validates
 * shapes and bindings on the host (the shaders trust them), then records one dispatch. */
#include <math.h>
#include <string.h>

#include "ggml_types.h"
#include "mul_mat_coopmat.h"
#include "ops.h"
#include "weight_planes.h"
#include "q8_dot.h"

/* Tile of shaders/mul_mat.comp: 64 rows x (threads / 4) tokens, 32 columns a step; its shared
 * memory, the two tiles transposed with rows padded by 4 floats. */
#define MUL_MAT_BM 64u
#define MUL_MAT_BK 32u
#define MUL_MAT_SHARED_BYTES(wg) (4u * MUL_MAT_BK * ((MUL_MAT_BM + 4u) + ((wg) / 4u + 4u)))
/* Workgroups per grid dimension every Vulkan device supports. */
#define GRID_MAX 65535u
/* mul_mat_vec_planes for more than one token: rows and tokens a thread (docs/forward-kernels.md) */
#define PLANES_ROWS 12u
#define PLANES_TOKENS 8u

/* ---- helpers -------------------------------------------------------------------------------- */

int ovk_op_type_supported(uint32_t type) { return ovk_op_type_block(type) != 0; }

uint32_t ovk_op_type_block(uint32_t type)
{
    switch (type) {
    case OSCAR_GGML_TYPE_F32:
    case OSCAR_GGML_TYPE_F16:
    case OSCAR_GGML_TYPE_BF16: return 8;
    case OSCAR_GGML_TYPE_Q4_0:
    case OSCAR_GGML_TYPE_Q4_1:
    case OSCAR_GGML_TYPE_Q8_0: return 32;
    case OSCAR_GGML_TYPE_Q4_K:
    case OSCAR_GGML_TYPE_Q5_K:
    case OSCAR_GGML_TYPE_Q6_K: return OSCAR_QK_K;
    default: return 0;
    }
}

void ovk_ops_init(ovk_ops *ops, oscar_context *ctx)
{
    /* the fields not named are 0, each field's default (ops.h) */
    *ops = (ovk_ops){ .ctx = ctx, .workgroup = 128, .matvec_shader = OSCAR_MATVEC_AUTO, .matmul_split = ctx->env.matmul_split };
}

/* Checks that binding b (named `what` in messages of op `op`) holds at least `bytes` bytes. */
static oscar_status check_binding(const ovk_binding *b, uint64_t bytes, const char *op, const char *what)
{
    return ovk_binding_check(b, bytes, op, what);
}

/* Checks ops->workgroup: a power of two in 32..256 within the device's limit. */
static oscar_status check_workgroup(const ovk_ops *ops, const char *op)
{
    uint32_t wg = ops->workgroup;
    if (wg < 32 || wg > 256 || (wg & (wg - 1)) != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: workgroup %u is not a power of two in 32..256", op, wg);
    return OSCAR_OK;
}

/* Spreads `count` workgroups over x and y (the shaders recombine them x-major). */
static oscar_status grid_2d(uint64_t count, uint32_t groups[3], const char *op)
{
    uint32_t gx = count < GRID_MAX ? (uint32_t)count : GRID_MAX;
    uint64_t gy = (count + gx - 1) / gx;
    if (gy > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %llu workgroups exceed the grid", op, (unsigned long long)count);
    groups[0] = gx;
    groups[1] = (uint32_t)gy;
    groups[2] = 1;
    return OSCAR_OK;
}

/* Gets the pipeline for desc and records one dispatch of it. */
static oscar_status record(const ovk_ops *ops, ovk_cmd *cmd, const ovk_pipeline_desc *desc,
                           const ovk_binding *bindings, const void *push, const uint32_t groups[3])
{
    ovk_pipeline *p;
    oscar_status st = ovk_pipeline_get(ops->ctx, desc, &p);
    if (st != OSCAR_OK) return st;
    return ovk_cmd_dispatch(ops->ctx, cmd, p, bindings, push, groups);
}

/* Checks the shared arguments of the matrix products and returns W's row bytes. y holds token
 * t's rows at y[t * y_stride ..] (y_stride >= rows floats). */
static oscar_status check_mul_mat(const ovk_ops *ops, const char *op, uint32_t type, const ovk_binding *w,
                                  const ovk_binding *x, uint64_t x_bytes, const ovk_binding *y, uint32_t y_stride,
                                  uint32_t rows, uint32_t cols, uint32_t n, uint64_t *row_bytes)
{
    oscar_status st = check_workgroup(ops, op);
    if (st != OSCAR_OK) return st;
    uint32_t block = ovk_op_type_block(type);
    if (!block)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "%s: weight type %u (%s) has no GPU kernel", op, type, ovk_ggml_type_name(type));
    if (cols == 0 || cols % block != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: cols %u is not a positive multiple of %u (%s)", op, cols, block,
                           ovk_ggml_type_name(type));
    st = ovk_ggml_row_size(type, cols, row_bytes);
    if (st != OSCAR_OK) return st;
    if (y_stride < rows)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: y rows %u floats apart hold no %u rows", op, y_stride, rows);
    if ((uint64_t)rows * *row_bytes > UINT32_MAX || (uint64_t)n * cols > UINT32_MAX || (uint64_t)n * y_stride > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u x %u %s times %u tokens exceeds 32-bit indexing", op, rows, cols,
                           ovk_ggml_type_name(type), n);
    /* the shaders read whole words: the last block's bytes are rounded up to a word */
    if ((st = check_binding(w, ((uint64_t)rows * *row_bytes + 3) & ~3ull, op, "w")) != OSCAR_OK) return st;
    if ((st = check_binding(x, x_bytes, op, "x")) != OSCAR_OK) return st;
    return check_binding(y, n ? ((uint64_t)(n - 1) * y_stride + rows) * 4 : 0, op, "y");
}

/* ---- matrix products ------------------------------------------------------------------------ */

/* Rows per mat-vec workgroup when ops->matvec_rows is 0: 4 for every type. H200 sweep of the
 * UNITS shader (128 threads, unroll 1; oscar-bench ops --rows-per-group): 4 rows beat 1 and 2
 * for Q8_0, Q4_0, Q4_K and Q6_K; 4 was also best for F16 with the RUN8 shader. */
static uint32_t matvec_default_rows(uint32_t type)
{
    switch (type) {
    case OSCAR_GGML_TYPE_F32:
    case OSCAR_GGML_TYPE_F16:
    case OSCAR_GGML_TYPE_BF16: return 4;
    default: return 4;
    }
}

/* The mat-vec shaders and their specialization constants: WORKGROUP, TYPE, ROWS, then (not
 * run8) UNROLL and W16, then (lanes) TOKENS. */
typedef struct matvec_shader {
    const char *name;
    uint32_t n_spec;
    uint32_t unroll; /* default UNROLL (ops->matvec_unroll overrides it) */
} matvec_shader;

static const matvec_shader MV_UNITS = { "mul_mat_vec", 5, 1 };
static const matvec_shader MV_RUN8 = { "mul_mat_vec_run8", 3, 1 };
static const matvec_shader MV_F16 = { "mul_mat_vec_f16", 5, 1 };
/* 2 words per pass: Q4_0 14336 x 4096 24.2 us vs 27.2 at 1 (H200) */
static const matvec_shader MV_LANES = { "mul_mat_vec_lanes", 6, 2 };

/* Records a mat-vec shader over the checked bindings, with ops' tuning or the per-type
 * defaults; `tokens` per workgroup (1 but for the lanes shader). */
static oscar_status record_matvec(const ovk_ops *ops, ovk_cmd *cmd, const matvec_shader *sh, uint32_t tokens,
                                  uint32_t type, ovk_binding w, ovk_binding x, ovk_binding y, uint32_t y_stride,
                                  uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_status st;
    const char *shader = sh->name;
    uint32_t wg = ops->matvec_workgroup ? ops->matvec_workgroup : ops->workgroup;
    uint32_t per = ops->matvec_rows ? ops->matvec_rows : matvec_default_rows(type);
    uint32_t unroll = ops->matvec_unroll ? ops->matvec_unroll : sh->unroll;
    if (wg < 32 || wg > 256 || (wg & (wg - 1)) != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: workgroup %u is not a power of two in 32..256", shader, wg);
    if (per > wg || (uint64_t)per * tokens * wg * 4 > ops->ctx->limits.maxComputeSharedMemorySize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u rows x %u tokens per workgroup of %u threads", shader, per,
                           tokens, wg);
    if (unroll > 8) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: unroll %u exceeds 8", shader, unroll);
    uint32_t groups_z = ovk_div_up(n, tokens);
    if (groups_z > GRID_MAX) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u tokens exceed the grid", shader, n);
    if (rows == 0 || n == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = 3, .push_size = 16, .n_spec = sh->n_spec,
                              .spec = { /* WORKGROUP */ wg, /* TYPE */ type, /* ROWS */ per, /* UNROLL */ unroll,
                                        /* W16: the uvec4 view of W is aligned */ (w.offset % 16) == 0,
                                        /* TOKENS */ tokens } };
    uint32_t push[4] = { rows, cols, n, y_stride }, groups[3];
    if ((st = grid_2d(ovk_div_up(rows, per), groups, shader)) != OSCAR_OK) return st;
    groups[2] = groups_z;
    ovk_binding b[3] = { w, x, y };
    return record(ops, cmd, &d, b, push, groups);
}

static int is_float_type(uint32_t type)
{
    return type == OSCAR_GGML_TYPE_F32 || type == OSCAR_GGML_TYPE_F16 || type == OSCAR_GGML_TYPE_BF16;
}

/* Tokens per workgroup of the batched lanes product: ops' tuning, else 4 (at most n). H200,
 * 14336 x 4096 Q4_0 at 4 rows a group: 8 tokens 72 us at 4 a group, 82 at 8; 32 tokens 265 us
 * at 4, 287 at 8, 540 at 16 (docs/performance.md). */
static uint32_t lanes_tokens(const ovk_ops *ops, uint32_t n)
{
    uint32_t t = ops->matvec_tokens ? ops->matvec_tokens : 4;
    return t < n ? t : n;
}

/* Whether ovk_op_mul_mat takes the batched lanes product for n > 1 tokens: always up to 16
 * tokens (2-8x faster than the tiled matmul on the H200), up to OSCAR_MATVEC_BATCH_MAX for the
 * 32-element block types (K-quants: the tiled matmul is faster at 32 tokens). */
static int prefers_batch(uint32_t type, uint32_t n)
{
    if (is_float_type(type) || n > OSCAR_MATVEC_BATCH_MAX) return 0;
    return n <= 16 || type == OSCAR_GGML_TYPE_Q4_0 || type == OSCAR_GGML_TYPE_Q4_1 || type == OSCAR_GGML_TYPE_Q8_0;
}

/* The products, y's rows y_stride floats apart (the public functions pass rows). */
static oscar_status mul_mat_vec(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                                ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    uint64_t row_bytes;
    oscar_status st = check_mul_mat(ops, "mul_mat_vec", type, &w, &x, (uint64_t)n * cols * 4, &y, y_stride, rows, cols, n,
                                    &row_bytes);
    if (st != OSCAR_OK) return st;
    int is_float = is_float_type(type);
    /* auto: the fastest shader per type on the H200 (docs/performance.md, "Forward-pass
     * kernels"): run8 for the float types and Q8_0, lanes for Q4_0 and Q4_1, units for the
     * K-quants */
    uint32_t shader = ops->matvec_shader;
    if (shader == OSCAR_MATVEC_AUTO)
        shader = is_float || type == OSCAR_GGML_TYPE_Q8_0                         ? OSCAR_MATVEC_RUN8
                 : type == OSCAR_GGML_TYPE_Q4_0 || type == OSCAR_GGML_TYPE_Q4_1 ? OSCAR_MATVEC_LANES
                                                                                  : OSCAR_MATVEC_UNITS;
    switch (shader) {
    case OSCAR_MATVEC_UNITS: return record_matvec(ops, cmd, &MV_UNITS, 1, type, w, x, y, y_stride, rows, cols, n);
    case OSCAR_MATVEC_RUN8: return record_matvec(ops, cmd, &MV_RUN8, 1, type, w, x, y, y_stride, rows, cols, n);
    case OSCAR_MATVEC_LANES:
        if (is_float)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "mul_mat_vec: the lanes shader reads block types, not %s",
                               ovk_ggml_type_name(type));
        return record_matvec(ops, cmd, &MV_LANES, 1, type, w, x, y, y_stride, rows, cols, n);
    default: OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec: shader variant %u", shader);
    }
}

static oscar_status mul_mat_batch(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                                  ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    uint64_t row_bytes;
    oscar_status st = check_mul_mat(ops, "mul_mat_batch", type, &w, &x, (uint64_t)n * cols * 4, &y, y_stride, rows, cols,
                                    n, &row_bytes);
    if (st != OSCAR_OK) return st;
    if (is_float_type(type))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "mul_mat_batch: the lanes shader reads block types, not %s",
                           ovk_ggml_type_name(type));
    if (n == 0) return OSCAR_OK;
    return record_matvec(ops, cmd, &MV_LANES, lanes_tokens(ops, n), type, w, x, y, y_stride, rows, cols, n);
}

int ovk_op_mul_mat_vec_planes_supported(const ovk_ops *ops, uint32_t type)
{
    return ops->ctx->texel_buffers && ovk_planes_type(type);
}

/* The planes product, and with `up` (GLU) SwiGLU's pair of them (ovk_op_mul_mat_vec_planes_glu). */
static oscar_status planes_product(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding planes, const ovk_binding *up,
                                   ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_status st;
    const char *op = up ? "mul_mat_vec_planes_glu" : "mul_mat_vec_planes";
    if (!ovk_op_mul_mat_vec_planes_supported(ops, type))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "%s: needs texel buffers and Q4_0, Q4_1, Q8_0, Q4_K or Q6_K (%s)", op,
                           ovk_ggml_type_name(type));
    /* one token (decode): 4 rows a thread, 2 for the K types; more: PLANES_ROWS rows of
     * PLANES_TOKENS tokens (n when fewer); GLU: half of them from each weight. lavapipe, 2-core
     * AMD EPYC, oscar-bench ops --planes-tile 8x4 against 8x2: Q4_K 8960 x 1536 1636 against
     * 1461 us, Q6_K 1536 x 8960 1578 against 1304, Q6_K 151936 x 1536 34.2 against 32.9 ms; but
     * Q4_1 49152 x 576 3.30 against 3.96 ms (SmolLM2's head), so the 32-element types keep 4 */
    int k_type = ovk_op_type_block(type) == 256;
    uint32_t wg = ops->matvec_workgroup ? ops->matvec_workgroup : 8;
    uint32_t per = ops->matvec_rows ? ops->matvec_rows : n > 1 ? PLANES_ROWS : k_type ? 2 : 4;
    uint32_t tok = ops->matvec_tokens ? ops->matvec_tokens : n < PLANES_TOKENS ? (n ? n : 1) : PLANES_TOKENS;
    if (wg > 256 || per > 16 || tok > 8 || (up && per % 2))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u threads of %u rows and %u tokens", op, wg, per, tok);
    uint32_t block = ovk_op_type_block(type); /* 32, or 256 for the K types */
    if (cols == 0 || cols % block || y_stride < rows || (uint64_t)n * cols > UINT32_MAX || (uint64_t)n * y_stride > UINT32_MAX ||
        n > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u x %u, %u tokens, y rows %u apart", op, rows, cols, n, y_stride);
    uint64_t bytes = ovk_planes_bytes(type, rows, cols);
    if ((st = check_binding(&planes, bytes, op, up ? "gate" : "planes")) != OSCAR_OK) return st;
    if (up && (st = check_binding(up, bytes, op, "up")) != OSCAR_OK) return st;
    if ((st = check_binding(&x, (uint64_t)n * cols * 4, op, "x")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, n ? ((uint64_t)(n - 1) * y_stride + rows) * 4 : 0, op, "y")) != OSCAR_OK) return st;
    if (rows == 0 || n == 0) return OSCAR_OK;
    /* one view per weight, and one per x buffer whatever the token count (its buffer's whole
     * texels from the offset), so each buffer keeps a view or two (OVK_BUFFER_VIEWS) */
    planes.range = bytes;
    x.range = (x.buffer->size - x.offset) & ~(VkDeviceSize)15;
    ovk_binding wu = up ? *up : planes; /* unread without GLU */
    wu.range = bytes;
    uint32_t out_rows = up ? per / 2 : per;
    ovk_pipeline_desc d = { .shader = "mul_mat_vec_planes", .n_buffers = 4, .push_size = 20, .n_spec = 5,
                            .spec = { /* WORKGROUP */ wg, /* TYPE */ type, /* ROWS */ per, /* TOKENS */ tok, /* GLU */ up != NULL },
                            .texel_bindings = 0xB };
    uint32_t push[5] = { rows, cols, (uint32_t)(ovk_planes_scale_offset(type, rows, cols) / 16), y_stride, n }, groups[3];
    if ((st = grid_2d(ovk_div_up(ovk_div_up(rows, out_rows), wg), groups, op)) != OSCAR_OK) return st;
    groups[2] = ovk_div_up(n, tok);
    ovk_binding b[4] = { planes, x, y, wu };
    return record(ops, cmd, &d, b, push, groups);
}

oscar_status ovk_op_mul_mat_vec_planes(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding planes,
                                       ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                                       uint32_t n)
{
    return planes_product(ops, cmd, type, planes, NULL, x, y, y_stride, rows, cols, n);
}

oscar_status ovk_op_mul_mat_vec_planes_glu(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding gate,
                                           ovk_binding up, ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows,
                                           uint32_t cols, uint32_t n)
{
    return planes_product(ops, cmd, type, gate, &up, x, y, y_stride, rows, cols, n);
}

int ovk_op_mul_mat_vec_f16_supported(const ovk_ops *ops, uint32_t type)
{
    return ops->ctx->info.float16_arithmetic && (type == OSCAR_GGML_TYPE_Q4_0 || type == OSCAR_GGML_TYPE_Q8_0);
}

oscar_status ovk_op_mul_mat_vec_f16(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding xq, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    if (!ovk_op_mul_mat_vec_f16_supported(ops, type))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "mul_mat_vec_f16: needs shaderFloat16 and Q4_0 or Q8_0 weights (%s)",
                           ovk_ggml_type_name(type));
    uint64_t row_bytes;
    oscar_status st = check_mul_mat(ops, "mul_mat_vec_f16", type, &w, &xq, OSCAR_X_F16_BYTES(n, cols), &y, rows, rows,
                                    cols, n, &row_bytes);
    if (st != OSCAR_OK) return st;
    return record_matvec(ops, cmd, &MV_F16, 1, type, w, xq, y, rows, rows, cols, n);
}

/* Tokens per workgroup of the int8 product: ops->matvec_tokens, else OVK_Q8_TOKENS (at most n). */
static uint32_t q8_tokens(const ovk_ops *ops, uint32_t n)
{
    uint32_t t = ops->matvec_tokens ? ops->matvec_tokens : OVK_Q8_TOKENS;
    return t < n ? t : n;
}

int ovk_op_mul_mat_vec_q8_supported(const ovk_ops *ops, uint32_t type)
{
    return ops->ctx->info.subgroup_arithmetic &&
           (type == OSCAR_GGML_TYPE_Q4_0 || type == OSCAR_GGML_TYPE_Q4_1 || type == OSCAR_GGML_TYPE_Q8_0 ||
            type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q5_K || type == OSCAR_GGML_TYPE_Q6_K);
}

oscar_status ovk_op_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding xq, uint32_t cols)
{
    oscar_status st;
    if ((st = check_binding(&xq, OSCAR_X_Q8_BYTES(cols), "x_q8", "xq")) != OSCAR_OK) return st;
    ovk_binding codes = { xq.buffer, xq.offset, cols }, scales = { xq.buffer, xq.offset + OSCAR_X_Q8_SCALES(cols), cols / 8u };
    return ovk_q8_quantize(ops->ctx, cmd, x, codes, scales, cols, 1);
}

oscar_status ovk_op_mul_mat_q8(const ovk_ops *ops, ovk_cmd *cmd, const char *variant, uint32_t type, ovk_binding w,
                                 ovk_binding xq, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    return ovk_op_mul_mat_q8_bias(ops, cmd, variant, type, w, xq, NULL, y, y_stride, rows, cols, n);
}

oscar_status ovk_op_mul_mat_q8_bias(const ovk_ops *ops, ovk_cmd *cmd, const char *variant, uint32_t type, ovk_binding w,
                                      ovk_binding xq, const ovk_binding *bias, ovk_binding y, uint32_t y_stride, uint32_t rows,
                                      uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    if (!ovk_op_mul_mat_vec_q8_supported(ops, type))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "mul_mat_vec_q8: needs subgroup arithmetic and a quant type Q4_0..Q6_K (%s)",
                           ovk_ggml_type_name(type));
    uint64_t row_bytes, nc = (uint64_t)n * cols;
    if (nc > UINT32_MAX / 2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: %u tokens of %u columns", n, cols);
    oscar_status st = check_mul_mat(ops, "mul_mat_vec_q8", type, &w, &xq, OSCAR_X_Q8_BYTES(nc), &y, y_stride, rows, cols,
                                    n, &row_bytes);
    if (st != OSCAR_OK) return st;
    if (bias && (st = check_binding(bias, (uint64_t)rows * 4, "mul_mat_vec_q8", "bias")) != OSCAR_OK) return st;
    if (variant && strcmp(variant, "mul_mat_vec_q8") != 0 && strcmp(variant, "mul_mat_vec_q8.idot") != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: no variant '%s'", variant);
    if (variant && !ovk_variant_usable(ctx, variant))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "mul_mat_vec_q8: this context cannot run '%s'", variant);
    if (!variant && !(variant = ovk_pick_variant(ctx, "mul_mat_vec_q8")))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_SHADER, "mul_mat_vec_q8: no variant in this build");
    uint32_t wg = ops->matvec_workgroup ? ops->matvec_workgroup : ops->workgroup;
    /* rows per subgroup and tasks per lane and pass: H200 sweep (oscar-bench ops --rows-per-group,
     * --mv-unroll over 14336 x 4096, 4096 x 4096 and 4096 x 14336): one row and two tasks for the
     * 32-element types and Q6_K (Q6_K 4096 x 14336 23.0 us against 32.9 at two rows and two tasks;
     * Q4_0 13.9 against 18.5), two rows and one task for the 64-element chunks of Q4_K and Q5_K
     * (Q4_K 14336 x 4096 14.9 against 17.5). Over two or more groups of tokens (9 to 16 tokens)
     * a subgroup takes two rows of a long matrix and four of a short one (Q4_0 at 15 tokens:
     * 14336 x 4096 73.4 us against 87.7, 4096 x 14336 65.4 against 90.8; batch-12 decode 6%
     * faster, batch 16 4% faster than on cooperative matrices). Up to 8 tokens two rows were
     * faster alone (14336 x 4096 at 8 tokens 42.0 against 47.8) but made batch 2 and 8 decode
     * slower beside the products they run with. */
    int chunks = type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q5_K;
    uint32_t tokens = q8_tokens(ops, n); /* a workgroup's; n > tokens: two or more groups */
    uint32_t per = ops->matvec_rows ? ops->matvec_rows : chunks ? 2 : n <= tokens ? 1 : rows >= 8192 ? 2 : 4;
    uint32_t unroll = ops->matvec_unroll ? ops->matvec_unroll : chunks ? 1 : 2;
    uint32_t sg = ctx->info.subgroup_size ? ctx->info.subgroup_size : 1;
    if (wg < 32 || wg > 256 || (wg & (wg - 1)) != 0 || wg % ctx->info.max_subgroup_size != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: workgroup %u is not a power of two in 32..256 "
                           "and a multiple of the subgroup size %u", wg, ctx->info.max_subgroup_size);
    if (per < 1 || per > 8 || unroll < 1 || unroll > 8)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: %u rows and %u blocks per pass (1..8 each)", per,
                           unroll);
    if (rows == 0 || n == 0) return OSCAR_OK;
    /* subgroups a row (H200, oscar-bench ops --mv-split over 1 / 2 / 4): long rows of the 32-element
     * types and Q6_K, six passes or more, in four parts (Q4_0 4096 x 14336 12.5 us against 13.6,
     * Q6_K 21.6 against 26.0), one token only: with several tokens one subgroup a row is faster at
     * every shape (Q4_0 4096 x 14336 at 2 / 4 / 8 / 15 tokens 16.7 / 25.6 / 44.2 / 91.2 us against
     * 17.8 / 30.1 / 50.9 / 96.7 in four parts); the K chunks never (Q4_K slower at every split).
     * Few rows in two parts were faster alone (Q4_0 1024 x 4096 4.2 against 5.1 us) but made the
     * step slower beside the products they run with. */
    uint32_t sgs = wg / sg > 0 ? wg / sg : 1, passes = ovk_div_up(cols / (chunks ? 64 : 32), unroll * sg);
    uint32_t split = ops->matvec_split ? ops->matvec_split : !chunks && passes >= 6 && n == 1 ? 4 : 1;
    while (!ops->matvec_split && sgs % split) split /= 2; /* a workgroup of fewer subgroups */
    if (split > 8 || sgs % split)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: %u subgroups a row (1..8, dividing %u)", split, sgs);
    /* rows per workgroup: ROWS for each row's subgroups of the default size (others loop or idle) */
    uint32_t group_rows = per * sgs / split;
    ovk_pipeline_desc d = { .shader = variant, .n_buffers = 5, .push_size = 16, .n_spec = 9,
                            .spec = { /* WORKGROUP */ wg, /* TYPE */ type, /* ROWS */ per, /* UNROLL */ unroll,
                                      /* GROUP_ROWS */ group_rows, /* W16: the uvec4 view of W is aligned */
                                      (w.offset % 16) == 0, /* TOKENS */ tokens, /* BIAS */ bias != NULL, /* SPLIT */ split } };
    uint32_t push[4] = { rows, cols, n, y_stride }, groups[3];
    if ((st = grid_2d(ovk_div_up(rows, group_rows), groups, "mul_mat_vec_q8")) != OSCAR_OK) return st;
    groups[2] = ovk_div_up(n, tokens);
    if (groups[2] > 65535) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat_vec_q8: %u tokens exceed the grid", n);
    ovk_binding b[5] = { w, { xq.buffer, xq.offset, nc }, { xq.buffer, xq.offset + OSCAR_X_Q8_SCALES(nc), nc / 8u }, y,
                         bias ? *bias : y }; /* y unread without a bias */
    return record(ops, cmd, &d, b, push, groups);
}

static oscar_status mul_mat_tiled(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                                  ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    uint64_t row_bytes;
    oscar_status st = check_mul_mat(ops, "mul_mat", type, &w, &x, (uint64_t)n * cols * 4, &y, y_stride, rows, cols, n,
                                    &row_bytes);
    if (st != OSCAR_OK) return st;
    const VkPhysicalDeviceLimits *lim = &ops->ctx->limits;
    uint32_t wg = ops->matmul_workgroup;
    if (wg == 0) /* 256 where the device has the threads and the 17 KiB (every Vulkan device has 128 and 16 KiB) */
        wg = lim->maxComputeWorkGroupInvocations >= 256 && lim->maxComputeWorkGroupSize[0] >= 256 &&
                     lim->maxComputeSharedMemorySize >= MUL_MAT_SHARED_BYTES(256)
                 ? 256 : 128;
    if (wg < 32 || wg > 256 || (wg & (wg - 1)) != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat: workgroup %u is not a power of two in 32..256", wg);
    if (MUL_MAT_SHARED_BYTES(wg) > lim->maxComputeSharedMemorySize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "mul_mat: %u threads need %u bytes of shared memory, the device has %u",
                           wg, MUL_MAT_SHARED_BYTES(wg), lim->maxComputeSharedMemorySize);
    if (rows == 0 || n == 0) return OSCAR_OK;
    uint32_t groups[3] = { ovk_div_up(rows, MUL_MAT_BM), ovk_div_up(n, wg / 4), 1 };
    if (groups[0] > GRID_MAX || groups[1] > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "mul_mat: %u rows x %u tokens exceed the grid", rows, n);
    ovk_pipeline_desc d = { .shader = "mul_mat", .n_buffers = 3, .push_size = 16, .n_spec = 2,
                              .spec = { /* WORKGROUP */ wg, /* TYPE */ type } };
    uint32_t push[4] = { rows, cols, n, y_stride };
    ovk_binding b[3] = { w, x, y };
    return record(ops, cmd, &d, b, push, groups);
}

static oscar_status mul_mat_coopmat(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                                    ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    uint64_t row_bytes;
    oscar_status st = check_mul_mat(ops, "mul_mat.coopmat", type, &w, &x, (uint64_t)n * cols * 4, &y, y_stride, rows,
                                    cols, n, &row_bytes);
    if (st != OSCAR_OK) return st;
    return ovk_mmc_record(ops, cmd, type, w, x, y, y_stride, rows, cols, n);
}

int ovk_op_mul_mat_coopmat_supported(const ovk_ops *ops)
{
    ovk_mmc_plan plan;
    if (!(ops->ctx->features.enabled & OVK_NEEDS_COOPMAT)) return 0; /* no error recorded on the common path */
    return ovk_mmc_plan_for(ops, 1024, &plan) == OSCAR_OK;
}

oscar_status ovk_op_mul_mat_coopmat(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat_coopmat(ops, cmd, type, w, x, y, rows, rows, cols, n);
}

oscar_status ovk_op_mul_mat_vec(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                  ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat_vec(ops, cmd, type, w, x, y, rows, rows, cols, n);
}

oscar_status ovk_op_mul_mat_batch(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat_batch(ops, cmd, type, w, x, y, rows, rows, cols, n);
}

oscar_status ovk_op_mul_mat_tiled(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat_tiled(ops, cmd, type, w, x, y, rows, rows, cols, n);
}

int ovk_op_mul_mat_splits(const ovk_ops *ops, uint32_t n)
{
    /* cooperative matrices by default where the device has them; for a short batch only with a
     * scratch to split its columns (unsplit, too few workgroups walk the whole row) */
    return n >= OVK_MMC_BATCH_MIN && ops->matmul_scratch.buffer && ops->ctx->env.matmul_coopmat != 0 &&
           ovk_op_mul_mat_coopmat_supported(ops);
}

oscar_status ovk_op_mul_mat_strided(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                                      uint32_t n)
{
    if (n == 1) return mul_mat_vec(ops, cmd, type, w, x, y, y_stride, rows, cols, n);
    int aligned = w.offset % 16 == 0; /* the cooperative-matrix kernels read W from 16-byte boundaries */
    int split = aligned && ovk_op_mul_mat_splits(ops, n);
    int coopmat = split || (aligned && ops->ctx->env.matmul_coopmat != 0 && ovk_op_mul_mat_coopmat_supported(ops));
    if (prefers_batch(type, n) && !split) return mul_mat_batch(ops, cmd, type, w, x, y, y_stride, rows, cols, n);
    if (coopmat) return mul_mat_coopmat(ops, cmd, type, w, x, y, y_stride, rows, cols, n);
    return mul_mat_tiled(ops, cmd, type, w, x, y, y_stride, rows, cols, n);
}

oscar_status ovk_op_mul_mat(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                              ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n)
{
    return ovk_op_mul_mat_strided(ops, cmd, type, w, x, y, rows, rows, cols, n);
}

/* ---- small kernels -------------------------------------------------------------------------- */

oscar_status ovk_op_get_rows_part(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding ids, ovk_binding out, uint32_t cols, uint32_t n, uint32_t row0,
                                    uint32_t rows)
{
    oscar_status st = check_workgroup(ops, "get_rows");
    if (st != OSCAR_OK) return st;
    uint32_t block = ovk_op_type_block(type);
    if (!block)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "get_rows: weight type %u (%s) has no GPU kernel", type, ovk_ggml_type_name(type));
    if (cols == 0 || cols % block != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "get_rows: cols %u is not a positive multiple of %u", cols, block);
    uint64_t row_bytes;
    if ((st = ovk_ggml_row_size(type, cols, &row_bytes)) != OSCAR_OK) return st;
    if ((uint64_t)n * cols > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "get_rows: %u rows of %u exceed 32-bit indexing", n, cols);
    /* the whole table (rows = UINT32_MAX): its size is not known here, one row at least */
    uint64_t w_rows = rows == UINT32_MAX ? 1 : rows;
    if (rows == 0 || w_rows * row_bytes > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "get_rows: a part of %u rows of %llu bytes", rows,
                           (unsigned long long)row_bytes);
    if ((st = check_binding(&w, (w_rows * row_bytes + 3) & ~3ull, "get_rows", "w")) != OSCAR_OK) return st;
    if ((st = check_binding(&ids, (uint64_t)n * 4, "get_rows", "ids")) != OSCAR_OK) return st;
    if ((st = check_binding(&out, (uint64_t)n * cols * 4, "get_rows", "out")) != OSCAR_OK) return st;
    if (n == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = "get_rows", .n_buffers = 3, .push_size = 16, .n_spec = 2,
                              .spec = { /* WORKGROUP */ ops->workgroup, /* TYPE */ type } };
    uint32_t push[4] = { cols, n, row0, rows }, groups[3];
    if ((st = grid_2d(n, groups, "get_rows")) != OSCAR_OK) return st;
    ovk_binding b[3] = { w, ids, out };
    return record(ops, cmd, &d, b, push, groups);
}

oscar_status ovk_op_get_rows(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                               ovk_binding ids, ovk_binding out, uint32_t cols, uint32_t n)
{
    return ovk_op_get_rows_part(ops, cmd, type, w, ids, out, cols, n, 0, UINT32_MAX);
}

/* Codes and scales of one prepared row of cols (OSCAR_X_Q8_BYTES), as two bindings, for a
 * kernel that writes them a word per thread (common/q8_quantize.glsl: workgroups of a multiple
 * of 8 threads; rms_norm's only grows from ops->workgroup by doubling). */
static oscar_status x_q8_parts(ovk_binding xq, uint32_t cols, uint32_t workgroup, const char *op, ovk_binding parts[2])
{
    oscar_status st;
    if (cols % OSCAR_Q8_BLOCK || workgroup % 8)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u columns (a multiple of %u) in workgroups of %u (a multiple "
                           "of 8)", op, cols, OSCAR_Q8_BLOCK, workgroup);
    if ((st = check_binding(&xq, OSCAR_X_Q8_BYTES(cols), op, "xq")) != OSCAR_OK) return st;
    parts[0] = (ovk_binding){ xq.buffer, xq.offset, cols };
    parts[1] = (ovk_binding){ xq.buffer, xq.offset + OSCAR_X_Q8_SCALES(cols), cols / 8u };
    return OSCAR_OK;
}

/* Threads of a kernel whose workgroup walks a whole row of n elements, 8 a thread a round (rms_norm,
 * argmax): the ops' workgroup, doubled up to 1024 while rounds remain, so that a long row's loads
 * are in flight together (one 4096-wide norm row took 17 us with 128 threads on the H200, a
 * memory latency per round; a 128,256-logit argmax 64 us on the H100). */
static uint32_t row_workgroup(const ovk_ops *ops, uint32_t n)
{
    uint32_t wg = ops->workgroup, limit = ops->ctx->limits.maxComputeWorkGroupInvocations;
    if (ops->ctx->limits.maxComputeWorkGroupSize[0] < limit) limit = ops->ctx->limits.maxComputeWorkGroupSize[0];
    while (wg < 1024 && 2 * wg <= limit && 8ull * wg < n) wg *= 2;
    return wg;
}

/* rms_norm with an optional residual (res NULL: none) and an optional int8 copy of y (xq NULL:
 * none; one row). */
static oscar_status rms_norm(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, const ovk_binding *res,
                             ovk_binding w, ovk_binding y, const ovk_binding *xq, uint32_t dim, uint32_t n_rows,
                             float eps)
{
    const char *op = xq ? "rms_norm_x_q8" : res ? "add_rms_norm" : "rms_norm";
    oscar_status st = check_workgroup(ops, op);
    if (st != OSCAR_OK) return st;
    if (dim == 0 || (uint64_t)dim * n_rows > UINT32_MAX || !(eps >= 0.0f) || (xq && n_rows != 1))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %u rows of %u, eps %g", op, n_rows, dim, (double)eps);
    uint64_t bytes = (uint64_t)dim * n_rows * 4;
    if ((st = check_binding(&x, bytes, op, "x")) != OSCAR_OK) return st;
    if ((st = check_binding(&w, (uint64_t)dim * 4, op, "w")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, bytes, op, "y")) != OSCAR_OK) return st;
    if (res && (st = check_binding(res, bytes, op, "res")) != OSCAR_OK) return st;
    if (res && y.buffer == x.buffer && y.offset < x.offset + bytes && x.offset < y.offset + bytes)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: y overlaps x", op);
    ovk_binding q8[2] = { y, y }; /* without an int8 copy bindings 4 and 5 are not written */
    if (xq && (st = x_q8_parts(*xq, dim, ops->workgroup, op, q8)) != OSCAR_OK) return st;
    if (n_rows == 0) return OSCAR_OK;
    /* a CPU device runs a workgroup as one thread, its barriers as switches between SIMD groups:
     * 8 threads (lavapipe's SIMD group) there, 0.29 -> 0.14 ms a call for SmolLM2-135M's rows */
    uint32_t wg = ops->ctx->info.type == OSCAR_DEVICE_CPU ? 8 : row_workgroup(ops, dim);
    ovk_pipeline_desc d = { .shader = "rms_norm", .n_buffers = 6, .push_size = 12, .n_spec = 3,
                              .spec = { /* WORKGROUP */ wg, /* RESIDUAL */ res != NULL, /* Q8_OUT */ xq != NULL } };
    struct { uint32_t dim, n_rows; float eps; } push = { dim, n_rows, eps };
    uint32_t groups[3];
    if ((st = grid_2d(n_rows, groups, op)) != OSCAR_OK) return st;
    ovk_binding b[6] = { x, w, y, res ? *res : x, q8[0], q8[1] }; /* without a residual binding 3 is not read */
    return record(ops, cmd, &d, b, &push, groups);
}

oscar_status ovk_op_rms_norm(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding w,
                               ovk_binding y, uint32_t dim, uint32_t n_rows, float eps)
{
    return rms_norm(ops, cmd, x, NULL, w, y, NULL, dim, n_rows, eps);
}

oscar_status ovk_op_add_rms_norm(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding res,
                                   ovk_binding w, ovk_binding y, uint32_t dim, uint32_t n_rows, float eps)
{
    return rms_norm(ops, cmd, x, &res, w, y, NULL, dim, n_rows, eps);
}

oscar_status ovk_op_rms_norm_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, const ovk_binding *res,
                                    ovk_binding w, ovk_binding y, ovk_binding xq, uint32_t dim, float eps)
{
    return rms_norm(ops, cmd, x, res, w, y, &xq, dim, 1, eps);
}

oscar_status ovk_rope_inv_freq(float *inv_freq, uint32_t n_rot, double freq_base, double freq_scale,
                                 const float *factors)
{
    if (n_rot == 0 || n_rot % 2 != 0 || !(freq_base > 0.0) || !(freq_scale > 0.0))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rope: n_rot %u, freq base %g, freq scale %g", n_rot, freq_base, freq_scale);
    for (uint32_t i = 0; i < n_rot / 2; i++) {
        double f = freq_scale * pow(freq_base, -2.0 * i / n_rot);
        if (factors) {
            if (!(factors[i] > 0.0f))
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rope: frequency factor %u is %g", i, (double)factors[i]);
            f /= factors[i];
        }
        inv_freq[i] = (float)f;
    }
    return OSCAR_OK;
}

oscar_status ovk_op_rope(const ovk_ops *ops, ovk_cmd *cmd, ovk_rope_type mode, ovk_binding x,
                           ovk_binding pos, ovk_binding inv_freq, ovk_binding y, uint32_t head_dim,
                           uint32_t n_heads, uint32_t n_tok, uint32_t n_rot)
{
    oscar_status st = check_workgroup(ops, "rope");
    if (st != OSCAR_OK) return st;
    if ((mode != OSCAR_ROPE_NORMAL && mode != OSCAR_ROPE_NEOX) || head_dim == 0 || head_dim % 2 || n_rot == 0 ||
        n_rot % 2 || n_rot > head_dim)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rope: mode %d, head_dim %u, n_rot %u", (int)mode, head_dim, n_rot);
    uint64_t elems = (uint64_t)n_tok * n_heads * head_dim;
    if (elems > UINT32_MAX) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rope: %llu elements exceed 32-bit indexing", (unsigned long long)elems);
    if ((st = check_binding(&x, elems * 4, "rope", "x")) != OSCAR_OK) return st;
    if ((st = check_binding(&pos, (uint64_t)n_tok * 4, "rope", "pos")) != OSCAR_OK) return st;
    if ((st = check_binding(&inv_freq, (uint64_t)n_rot / 2 * 4, "rope", "inv_freq")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, elems * 4, "rope", "y")) != OSCAR_OK) return st;
    if (elems == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = "rope", .n_buffers = 4, .push_size = 16, .n_spec = 2,
                              .spec = { /* WORKGROUP */ ops->workgroup, /* MODE */ (uint32_t)mode } };
    uint32_t push[4] = { head_dim, n_heads, n_tok, n_rot }, groups[3];
    if ((st = grid_2d(ovk_div_up(elems / 2, ops->workgroup), groups, "rope")) != OSCAR_OK) return st;
    ovk_binding b[4] = { x, pos, inv_freq, y };
    return record(ops, cmd, &d, b, push, groups);
}

/* Records a flat elementwise kernel over n elements with 1-word-per-element bindings. */
static oscar_status elementwise(const ovk_ops *ops, ovk_cmd *cmd, const char *shader, const ovk_binding *b,
                                uint32_t n_buffers, const void *push, uint32_t push_size, uint32_t n)
{
    oscar_status st = check_workgroup(ops, shader);
    if (st != OSCAR_OK) return st;
    if (n == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = n_buffers, .push_size = push_size, .n_spec = 1,
                              .spec = { /* WORKGROUP */ ops->workgroup } };
    uint32_t groups[3];
    if ((st = grid_2d(ovk_div_up(n, ops->workgroup), groups, shader)) != OSCAR_OK) return st;
    return record(ops, cmd, &d, b, push, groups);
}

/* swiglu with an optional int8 copy of y (xq NULL: none; one row). */
static oscar_status swiglu(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding gate, ovk_binding up, ovk_binding y,
                           const ovk_binding *xq, uint32_t n)
{
    const char *op = xq ? "swiglu_x_q8" : "swiglu";
    oscar_status st = check_workgroup(ops, op);
    if (st != OSCAR_OK) return st;
    if ((st = check_binding(&gate, (uint64_t)n * 4, op, "gate")) != OSCAR_OK) return st;
    if ((st = check_binding(&up, (uint64_t)n * 4, op, "up")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, (uint64_t)n * 4, op, "y")) != OSCAR_OK) return st;
    ovk_binding q8[2] = { y, y }; /* without an int8 copy bindings 3 and 4 are not written */
    if (xq && (st = x_q8_parts(*xq, n, ops->workgroup, op, q8)) != OSCAR_OK) return st;
    if (n == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = "swiglu", .n_buffers = 5, .push_size = 4, .n_spec = 2,
                              .spec = { /* WORKGROUP */ ops->workgroup, /* Q8_OUT */ xq != NULL } };
    uint32_t groups[3], threads = xq ? n / 4u : n; /* with xq: one per word of 4 */
    if ((st = grid_2d(ovk_div_up(threads, ops->workgroup), groups, op)) != OSCAR_OK) return st;
    ovk_binding b[5] = { gate, up, y, q8[0], q8[1] };
    return record(ops, cmd, &d, b, &n, groups);
}

oscar_status ovk_op_swiglu(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding gate, ovk_binding up,
                             ovk_binding y, uint32_t n)
{
    return swiglu(ops, cmd, gate, up, y, NULL, n);
}

oscar_status ovk_op_swiglu_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding gate, ovk_binding up, ovk_binding y,
                                  ovk_binding xq, uint32_t n)
{
    return swiglu(ops, cmd, gate, up, y, &xq, n);
}

oscar_status ovk_op_read_stream(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding src, uint64_t bytes,
                                  uint32_t per_thread, ovk_binding sink)
{
    oscar_status st;
    if (bytes == 0 || bytes % 16 || bytes / 16 > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "read_stream: %llu bytes is not a positive multiple of 16 "
                           "below 64 GiB", (unsigned long long)bytes);
    if ((st = check_binding(&src, bytes, "read_stream", "src")) != OSCAR_OK) return st;
    if ((st = check_binding(&sink, 4, "read_stream", "sink")) != OSCAR_OK) return st;
    ovk_pipeline_desc d = { .shader = "read_bandwidth", .n_buffers = 2, .push_size = 8, .n_spec = 1,
                              .spec = { /* WORKGROUP */ READ_STREAM_WORKGROUP } };
    uint32_t n_vec4 = (uint32_t)(bytes / 16);
    struct { uint32_t n_vec4, magic; } push = { n_vec4, 0x0BADF00Du };
    /* by default 16 vec4s a thread (four rounds of four loads in flight), at most 65535
     * workgroups: any larger buffer is read grid-stride */
    if (per_thread == 0) per_thread = READ_STREAM_PER_THREAD;
    uint32_t groups[3] = { (uint32_t)(((uint64_t)n_vec4 + (uint64_t)READ_STREAM_WORKGROUP * per_thread - 1) /
                                      ((uint64_t)READ_STREAM_WORKGROUP * per_thread)), 1, 1 };
    if (groups[0] > 65535) groups[0] = 65535;
    ovk_binding b[2] = { src, sink };
    return record(ops, cmd, &d, b, &push, groups);
}

oscar_status ovk_op_x_f16_blocks(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding xq,
                                   uint32_t cols, uint32_t n)
{
    oscar_status st = check_workgroup(ops, "x_f16_blocks");
    if (st != OSCAR_OK) return st;
    if (cols == 0 || cols % 32 || (uint64_t)n * cols > UINT32_MAX / 2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "x_f16_blocks: %u rows of %u columns (a multiple of 32)", n, cols);
    if ((st = check_binding(&x, (uint64_t)n * cols * 4, "x_f16_blocks", "x")) != OSCAR_OK) return st;
    if ((st = check_binding(&xq, OSCAR_X_F16_BYTES(n, cols), "x_f16_blocks", "xq")) != OSCAR_OK) return st;
    uint32_t blocks = n * (cols / 32);
    ovk_binding b[2] = { x, xq };
    return elementwise(ops, cmd, "x_f16_blocks", b, 2, &blocks, 4, blocks);
}

oscar_status ovk_op_add(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding a, ovk_binding b,
                          ovk_binding y, uint32_t n, uint32_t nb)
{
    oscar_status st;
    if (nb == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "add: nb is 0");
    if ((st = check_binding(&a, (uint64_t)n * 4, "add", "a")) != OSCAR_OK) return st;
    if ((st = check_binding(&b, (uint64_t)nb * 4, "add", "b")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, (uint64_t)n * 4, "add", "y")) != OSCAR_OK) return st;
    uint32_t push[2] = { n, nb };
    ovk_binding bb[3] = { a, b, y };
    return elementwise(ops, cmd, "add", bb, 3, push, 8, n);
}

oscar_status ovk_op_scale(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding y,
                            uint32_t n, float s)
{
    oscar_status st;
    if ((st = check_binding(&x, (uint64_t)n * 4, "scale", "x")) != OSCAR_OK) return st;
    if ((st = check_binding(&y, (uint64_t)n * 4, "scale", "y")) != OSCAR_OK) return st;
    struct { uint32_t n; float s; } push = { n, s };
    ovk_binding b[2] = { x, y };
    return elementwise(ops, cmd, "scale", b, 2, &push, 8, n);
}

oscar_status ovk_op_argmax(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding logits, ovk_binding out,
                             uint32_t n, uint32_t n_rows)
{
    oscar_status st = check_workgroup(ops, "argmax");
    if (st != OSCAR_OK) return st;
    if (n == 0 || (uint64_t)n * n_rows > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "argmax: %u rows of %u", n_rows, n);
    if ((st = check_binding(&logits, (uint64_t)n * n_rows * 4, "argmax", "logits")) != OSCAR_OK) return st;
    if ((st = check_binding(&out, (uint64_t)n_rows * 4, "argmax", "out")) != OSCAR_OK) return st;
    if (n_rows == 0) return OSCAR_OK;
    /* (a CPU device keeps the ops' workgroup) */
    uint32_t wg = ops->ctx->info.type == OSCAR_DEVICE_CPU ? ops->workgroup : row_workgroup(ops, n);
    ovk_pipeline_desc d = { .shader = "argmax", .n_buffers = 2, .push_size = 8, .n_spec = 1, .spec = { /* WORKGROUP */ wg } };
    uint32_t push[2] = { n, n_rows }, groups[3];
    if ((st = grid_2d(n_rows, groups, "argmax")) != OSCAR_OK) return st;
    ovk_binding b[2] = { logits, out };
    return record(ops, cmd, &d, b, push, groups);
}
