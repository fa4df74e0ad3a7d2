/* The llama-family forward pass on Vulkan: weight upload, per-session buffers, one command
 * stream per step (see model_gpu.h for the sequence of kernels and how it is submitted). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml_types.h"
#include "model_gpu.h"
#include "mul_mat_coopmat.h"
#include "weight_planes.h"

/* ---- weights ------------------------------------------------------------------------------- */

typedef struct upload_progress {
    void (*fn)(void *user, float fraction);
    void *user;
    uint64_t done, total;      /* bytes */
} upload_progress;

static void report(upload_progress *pr, uint64_t bytes)
{
    pr->done += bytes;
    if (pr->fn) pr->fn(pr->user, pr->total ? (float)((double)pr->done / (double)pr->total) : 1.0f);
}

/* Part i of a weight (i < n_parts), and its rows: part_rows from row i * part_rows on, the last fewer. */
static const ovk_buffer *weight_part(const ovk_gpu_weight *w, uint32_t i) { return i ? &w->more[i - 1] : &w->buf; }
static uint32_t weight_part_rows(const ovk_gpu_weight *w, uint32_t i)
{
    uint32_t row0 = i * w->part_rows;
    return w->rows - row0 < w->part_rows ? w->rows - row0 : w->part_rows;
}

/* Rows per part of a matrix of rows of row_bytes stored in buffers of at most `limit` bytes
 * (each part's bytes padded to a word): as many as fit, a multiple of
 * minStorageBufferOffsetAlignment / 4, since a part's outputs are bound from y[row0], at byte
 * row0 * 4, which must be aligned (each part has its own buffer, bound from 0: the weights
 * need no alignment). 0 when not one such group of rows fits. */
static uint32_t part_rows_for(const oscar_context *ctx, uint64_t row_bytes, uint32_t rows, uint64_t limit)
{
    uint64_t align = ctx->limits.minStorageBufferOffsetAlignment, unit = align > 4 ? align / 4 : 1;
    uint64_t per = (limit & ~3ull) / row_bytes;
    per -= per % unit;
    return per > rows ? rows : (uint32_t)per;
}

/* Uploads the planes of a Q4_0/Q4_1/Q8_0/Q4_K/Q6_K matrix (weight_planes.h) beside its blocks, a buffer
 * per part as the blocks, when every part fits one texel view. */
static oscar_status upload_planes(ovk_model_gpu *m, const ovk_gguf_tensor *t, ovk_gpu_weight *w, uint64_t row_bytes)
{
    oscar_status st = OSCAR_OK;
    uint32_t cols = (uint32_t)t->ne[0];
    uint64_t most = ovk_planes_bytes(t->type, w->part_rows, cols);
    if (most / 16 > m->ctx->limits.maxTexelBufferElements) return OSCAR_OK; /* the blocks' products serve it */
    void *host = malloc(most);
    if (!host) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (!(w->planes = calloc(w->n_parts, sizeof *w->planes))) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < w->n_parts; i++) {
        uint32_t rows = weight_part_rows(w, i);
        uint64_t bytes = ovk_planes_bytes(t->type, rows, cols);
        ovk_planes_pack(t->type, (const char *)t->data + (uint64_t)i * w->part_rows * row_bytes, rows, cols, host);
        OSCAR_TRY(ovk_buffer_create(m->ctx, bytes, OSCAR_BUFFER_DEVICE, &w->planes[i]));
        OSCAR_TRY(ovk_buffer_upload(m->ctx, &w->planes[i], 0, host, bytes));
    }
fail:
    free(host);
    return st;
}

/* Uploads a matrix of m as stored (raw GGUF blocks): one buffer, or parts of at most
 * m->part_limit bytes each. The kernels read the type and need whole blocks per row; checked
 * here so a step never fails on a shape. */
static oscar_status upload_matrix(ovk_model_gpu *m, const ovk_gguf_tensor *t, ovk_gpu_weight *w, upload_progress *pr)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = m->ctx;
    uint64_t limit = m->part_limit;
    uint32_t block = ovk_op_type_block(t->type);
    if (!ovk_op_type_supported(t->type) || block == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "tensor %s: type %s is not read by the GPU kernels", t->name,
                           ovk_ggml_type_name(t->type));
    if (t->ne[0] % block)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "tensor %s: row length %llu is not a multiple of %u (%s on the GPU)",
                           t->name, (unsigned long long)t->ne[0], block, ovk_ggml_type_name(t->type));
    uint64_t row_bytes, rows = t->ne[0] ? t->n_elements / t->ne[0] : 0;
    OSCAR_TRY(ovk_ggml_row_size(t->type, t->ne[0], &row_bytes));
    if (rows == 0 || rows > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "tensor %s: %llu rows", t->name, (unsigned long long)rows);
    w->type = t->type;
    w->rows = w->part_rows = (uint32_t)rows;
    w->n_parts = 1;
    if (((t->n_bytes + 3) & ~3ull) > limit) {
        w->part_rows = part_rows_for(ctx, row_bytes, w->rows, limit);
        if (w->part_rows == 0)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "tensor %s: rows of %llu bytes cannot be split into storage bindings of "
                               "%llu bytes at offsets aligned to %llu", t->name, (unsigned long long)row_bytes,
                               (unsigned long long)limit, (unsigned long long)ctx->limits.minStorageBufferOffsetAlignment);
        w->n_parts = ovk_div_up(w->rows, w->part_rows);
        w->more = calloc(w->n_parts - 1, sizeof *w->more);
        if (!w->more) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        m->split_matrices++;
    }
    for (uint32_t i = 0; i < w->n_parts; i++) {
        uint64_t row0 = (uint64_t)i * w->part_rows, n = weight_part_rows(w, i);
        ovk_buffer *b = i ? &w->more[i - 1] : &w->buf;
        OSCAR_TRY(ovk_buffer_create(ctx, (n * row_bytes + 3) & ~3ull, OSCAR_BUFFER_DEVICE, b));
        OSCAR_TRY(ovk_buffer_upload(ctx, b, 0, (const char *)t->data + row0 * row_bytes, n * row_bytes));
    }
    if (m->planes && ovk_planes_type(t->type)) OSCAR_TRY(upload_planes(m, t, w, row_bytes));
    report(pr, t->n_bytes);
fail:
    return st;
}

/* Uploads a vector (norm weight, bias) as F32, dequantizing it on the host. */
static oscar_status upload_vector(oscar_context *ctx, const ovk_gguf_tensor *t, ovk_gpu_weight *w, upload_progress *pr)
{
    oscar_status st = OSCAR_OK;
    float *f = malloc(t->n_elements * sizeof *f);
    if (!f) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_ggml_dequantize_row(t->type, t->data, f, t->n_elements));
    OSCAR_TRY(ovk_buffer_create(ctx, t->n_elements * 4, OSCAR_BUFFER_DEVICE, &w->buf));
    OSCAR_TRY(ovk_buffer_upload(ctx, &w->buf, 0, f, t->n_elements * 4));
    w->type = OSCAR_GGML_TYPE_F32;
    w->rows = w->part_rows = w->n_parts = 1;
    report(pr, t->n_bytes);
fail:
    free(f);
    return st;
}

oscar_status ovk_model_gpu_create(oscar_context *ctx, const ovk_model_desc *desc,
                                    void (*progress)(void *user, float fraction), void *user, ovk_model_gpu **out)
{
    return ovk_model_gpu_create_split(ctx, desc, 0, progress, user, out);
}

oscar_status ovk_model_gpu_create_split(oscar_context *ctx, const ovk_model_desc *desc, uint64_t part_limit,
                                          void (*progress)(void *user, float fraction), void *user, ovk_model_gpu **out)
{
    oscar_status st = OSCAR_OK;
    ovk_model_gpu *m = NULL;
    if (!ctx || !desc || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_gpu_create: NULL argument");
    *out = NULL;
    const ovk_model_hparams *hp = &desc->hp;
    m = calloc(1, sizeof *m);
    if (!m) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    m->ctx = ctx;
    m->desc = desc;
    uint64_t limit = ctx->limits.maxStorageBufferRange; /* the shaders' 32-bit byte offsets reach it too */
    m->part_limit = part_limit && part_limit < limit ? part_limit : limit;
    /* planes on CPU devices, where the texel-fetch products are 10x the storage-buffer ones
     * (docs/performance.md, "CPU through lavapipe"); on GPUs the other kernels are faster */
    m->planes = ctx->texel_buffers && (ctx->env.matvec_planes == 1 || (ctx->env.matvec_planes == -1 &&
                                                                       ctx->info.type == OSCAR_DEVICE_CPU));
    m->layers = calloc(hp->n_layer, sizeof *m->layers);
    if (!m->layers) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");

    upload_progress pr = { progress, user, 0, 0 };
    for (uint64_t i = 0; i < desc->gguf->n_tensors; i++) pr.total += desc->gguf->tensors[i].n_bytes;
    if (progress) progress(user, 0.0f);

    OSCAR_TRY(upload_matrix(m, desc->token_embd, &m->token_embd, &pr));
    if (!hp->tied_embeddings) OSCAR_TRY(upload_matrix(m, desc->output, &m->output, &pr));
    OSCAR_TRY(upload_vector(ctx, desc->output_norm, &m->output_norm, &pr));
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        const ovk_model_layer *src = &desc->layers[l];
        ovk_gpu_layer *dst = &m->layers[l];
        OSCAR_TRY(upload_vector(ctx, src->attn_norm, &dst->attn_norm, &pr));
        OSCAR_TRY(upload_vector(ctx, src->ffn_norm, &dst->ffn_norm, &pr));
        OSCAR_TRY(upload_matrix(m, src->wq, &dst->wq, &pr));
        OSCAR_TRY(upload_matrix(m, src->wk, &dst->wk, &pr));
        OSCAR_TRY(upload_matrix(m, src->wv, &dst->wv, &pr));
        OSCAR_TRY(upload_matrix(m, src->wo, &dst->wo, &pr));
        if (src->bq) {
            OSCAR_TRY(upload_vector(ctx, src->bq, &dst->bq, &pr));
            OSCAR_TRY(upload_vector(ctx, src->bk, &dst->bk, &pr));
            OSCAR_TRY(upload_vector(ctx, src->bv, &dst->bv, &pr));
        }
        if (src->q_norm) {
            OSCAR_TRY(upload_vector(ctx, src->q_norm, &dst->q_norm, &pr));
            OSCAR_TRY(upload_vector(ctx, src->k_norm, &dst->k_norm, &pr));
        }
        OSCAR_TRY(upload_matrix(m, src->w_gate, &dst->w_gate, &pr));
        OSCAR_TRY(upload_matrix(m, src->w_up, &dst->w_up, &pr));
        OSCAR_TRY(upload_matrix(m, src->w_down, &dst->w_down, &pr));
    }
    uint32_t half = hp->n_rot / 2;
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)(half ? half : 1) * 4, OSCAR_BUFFER_DEVICE, &m->rope_freq));
    if (half) OSCAR_TRY(ovk_buffer_upload(ctx, &m->rope_freq, 0, desc->rope_theta, (size_t)half * 4));
    m->weight_bytes = pr.done;
    if (progress) progress(user, 1.0f);
    *out = m;
    return OSCAR_OK;
fail:
    ovk_model_gpu_destroy(m);
    return st;
}

static void weight_destroy(oscar_context *ctx, ovk_gpu_weight *w)
{
    ovk_buffer_destroy(ctx, &w->buf);
    for (uint32_t i = 0; w->planes && i < w->n_parts; i++) ovk_buffer_destroy(ctx, &w->planes[i]);
    free(w->planes);
    w->planes = NULL;
    for (uint32_t i = 1; w->more && i < w->n_parts; i++) ovk_buffer_destroy(ctx, &w->more[i - 1]);
    free(w->more);
    w->more = NULL;
}

void ovk_model_gpu_destroy(ovk_model_gpu *m)
{
    if (!m) return;
    oscar_context *ctx = m->ctx;
    weight_destroy(ctx, &m->token_embd);
    weight_destroy(ctx, &m->output);
    weight_destroy(ctx, &m->output_norm);
    ovk_buffer_destroy(ctx, &m->rope_freq);
    for (uint32_t l = 0; m->layers && l < m->desc->hp.n_layer; l++) {
        ovk_gpu_layer *L = &m->layers[l];
        ovk_gpu_weight *ws[] = { &L->attn_norm, &L->ffn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk,
                                   &L->bv, &L->q_norm, &L->k_norm, &L->w_gate, &L->w_up, &L->w_down };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) weight_destroy(ctx, ws[i]);
    }
    free(m->layers);
    free(m);
}

/* ---- per-session state --------------------------------------------------------------------- */

/* Byte offsets of the three arrays inside meta / meta_host, each aligned to 256 bytes (the
 * largest minStorageBufferOffsetAlignment Vulkan allows). */
static uint64_t meta_stride(uint32_t n) { return ((uint64_t)n * 4 + 255) & ~255ull; }
static uint64_t meta_pos_offset(const ovk_gpu_state *s) { return meta_stride(s->max_tokens); }
static uint64_t meta_rows_offset(const ovk_gpu_state *s) { return 2 * meta_stride(s->max_tokens); }

oscar_status ovk_gpu_state_create(ovk_model_gpu *m, oscar_kv_cache *kv, uint32_t max_tokens, uint32_t max_out,
                                    ovk_gpu_state **out)
{
    oscar_status st = OSCAR_OK;
    ovk_gpu_state *s = NULL;
    if (!m || !kv || !out || max_tokens == 0 || max_out == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gpu_state_create: NULL argument or zero size");
    *out = NULL;
    const ovk_model_hparams *hp = &m->desc->hp;
    oscar_context *ctx = m->ctx;
    s = calloc(1, sizeof *s);
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    s->m = m;
    s->kv = kv;
    s->max_tokens = max_tokens;
    s->max_out = max_out;
    s->q_dim = hp->n_head * hp->head_dim;
    s->kv_dim = hp->n_head_kv * hp->head_dim;
    ovk_ops_init(&s->ops, ctx);
    OSCAR_TRY(ovk_cmd_init(ctx, &s->cmd));
    uint64_t T = max_tokens, O = max_out;
    uint64_t meta_bytes = 2 * meta_stride(max_tokens) + meta_stride(max_out);
    OSCAR_TRY(ovk_buffer_create(ctx, meta_bytes, OSCAR_BUFFER_STAGING, &s->meta_host));
    OSCAR_TRY(ovk_buffer_create(ctx, meta_bytes, OSCAR_BUFFER_DEVICE, &s->meta));
    OSCAR_TRY(ovk_buffer_create(ctx, T * hp->n_embd * 4, OSCAR_BUFFER_DEVICE, &s->x));
    OSCAR_TRY(ovk_buffer_create(ctx, T * hp->n_embd * 4, OSCAR_BUFFER_DEVICE, &s->xb));
    OSCAR_TRY(ovk_buffer_create(ctx, T * hp->n_embd * 4, OSCAR_BUFFER_DEVICE, &s->proj));
    OSCAR_TRY(ovk_buffer_create(ctx, T * s->q_dim * 4, OSCAR_BUFFER_DEVICE, &s->q));
    OSCAR_TRY(ovk_buffer_create(ctx, T * s->q_dim * 4, OSCAR_BUFFER_DEVICE, &s->att));
    OSCAR_TRY(ovk_buffer_create(ctx, T * s->kv_dim * 4, OSCAR_BUFFER_DEVICE, &s->k));
    OSCAR_TRY(ovk_buffer_create(ctx, T * s->kv_dim * 4, OSCAR_BUFFER_DEVICE, &s->v));
    OSCAR_TRY(ovk_buffer_create(ctx, T * hp->n_ff * 4, OSCAR_BUFFER_DEVICE, &s->gate));
    OSCAR_TRY(ovk_buffer_create(ctx, T * hp->n_ff * 4, OSCAR_BUFFER_DEVICE, &s->up));
    OSCAR_TRY(ovk_buffer_create(ctx, O * hp->n_embd * 4, OSCAR_BUFFER_DEVICE, &s->xo));
    OSCAR_TRY(ovk_buffer_create(ctx, O * hp->n_vocab * 4, OSCAR_BUFFER_DEVICE, &s->logits));
    OSCAR_TRY(ovk_buffer_create(ctx, O * 4, OSCAR_BUFFER_DEVICE, &s->amax));
    OSCAR_TRY(ovk_buffer_create(ctx, O * hp->n_vocab * 4, OSCAR_BUFFER_READBACK, &s->rb_logits));
    OSCAR_TRY(ovk_buffer_create(ctx, O * 4, OSCAR_BUFFER_READBACK, &s->rb_amax));
    if (max_tokens > 1 && ovk_op_mul_mat_coopmat_supported(&s->ops)) { /* a short batch's products split their columns */
        OSCAR_TRY(ovk_buffer_create(ctx, OVK_MMC_SCRATCH_BYTES, OSCAR_BUFFER_DEVICE, &s->mm_scratch));
        s->ops.matmul_scratch = (ovk_binding){ &s->mm_scratch, 0, 0 };
    }
    s->flush_growth = ctx->env.step_flush >= 0 ? (uint32_t)ctx->env.step_flush : 4;
    s->matvec_f16 = ctx->info.float16_arithmetic && ctx->env.matvec_f16;
    /* int8 products by default where the device runs integer dot products fast (forward-kernels.md) */
    s->matvec_q8 = ctx->info.subgroup_arithmetic &&
                   (ctx->env.matvec_q8 == 1 || (ctx->env.matvec_q8 == -1 && ctx->info.integer_dot_4x8_signed_accelerated));
    if (s->matvec_f16 || s->matvec_q8) {
        uint32_t widest = hp->n_embd > s->q_dim ? hp->n_embd : s->q_dim;
        widest = hp->n_ff > widest ? hp->n_ff : widest;
        uint32_t batch = max_tokens < OVK_Q8_BATCH_MAX ? max_tokens : OVK_Q8_BATCH_MAX; /* rows of int8 products */
        uint64_t f16 = OSCAR_X_F16_BYTES(1, widest), q8 = OSCAR_X_Q8_BYTES((uint64_t)batch * widest);
        OSCAR_TRY(ovk_buffer_create(ctx, f16 > q8 ? f16 : q8, OSCAR_BUFFER_DEVICE, &s->xq));
    }
    *out = s;
    return OSCAR_OK;
fail:
    ovk_gpu_state_destroy(s);
    return st;
}

void ovk_gpu_state_destroy(ovk_gpu_state *s)
{
    if (!s) return;
    oscar_context *ctx = s->m->ctx;
    ovk_cmd_release(ctx, &s->cmd);
    ovk_buffer *bufs[] = { &s->meta_host, &s->meta, &s->x, &s->xb, &s->proj, &s->q, &s->att, &s->k, &s->v,
                             &s->gate, &s->up, &s->xo, &s->logits, &s->amax, &s->rb_logits, &s->rb_amax, &s->xq,
                             &s->mm_scratch };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    free(s);
}

/* ---- recording ----------------------------------------------------------------------------- */

/* The first `bytes` bytes of a buffer (a whole-weight binding when bytes is 0). */
static ovk_binding bind(const ovk_buffer *b, uint64_t bytes) { return (ovk_binding){ b, 0, bytes }; }

/* Whether the products of one input x [n][cols] by the n_w weights w run as int8 products:
 * with s->matvec_q8, one row or a decode step of up to OVK_Q8_BATCH_MAX rows (OVK_Q8_BATCH_MAX_SPLIT
 * where ovk_op_mul_mat would split the product), whose weights all
 * have one. A prompt's rows keep the fp32 (or cooperative-matrix) products, whatever its length. */
static int products_q8(const ovk_gpu_state *s, uint32_t cols, uint32_t n, uint32_t n_w, const ovk_gpu_weight *const *w)
{
    int q8 = s->matvec_q8 && (n == 1 || (s->step_decode && n <= OVK_Q8_BATCH_MAX)) && cols % 32 == 0;
    if (q8 && n > OVK_Q8_BATCH_MAX_SPLIT && ovk_op_mul_mat_splits(&s->ops, n)) q8 = 0; /* the split product is faster */
    for (uint32_t i = 0; i < n_w && q8; i++) q8 = ovk_op_mul_mat_vec_q8_supported(&s->ops, w[i]->type);
    return q8;
}

/* The products of one input: y_i = W_i x (+ b_i) for the n_w weights, with x [n][cols] (each y_i
 * [n][rows_i]; bias NULL, or n_w biases b_i [rows_i] fp32, a NULL buffer for none). The int8
 * products add their bias as they write y_i; the others are followed by a barrier and adds.
 * Where products_q8 holds (or else, with s->matvec_f16, a single row whose weights
 * all have the packed-fp16 mat-vec: Q4_0, Q8_0), x is prepared once into s->xq and shared by
 * them: by the kernel that wrote x where `x_ready` (ovk_op_rms_norm_x_q8, ovk_op_swiglu_x_q8,
 * which write one row), else here (one dispatch and barrier more); the rest go through
 * ovk_op_mul_mat. Starts with a barrier (x was just written); the products themselves run
 * unordered among each other, a short batch's split products too: as one group, each into its
 * own part of the scratch, their slices' sums after one barrier at the end.
 *
 * A weight split by rows (over the storage-binding limit) runs one product per part, writing
 * its columns row0 .. row0 + part rows - 1 of y_i in place: y bound from y_i[0][row0] (aligned,
 * model_gpu_create_split), the token rows rows_i floats apart (ovk_op_mul_mat_strided). The
 * alternative, each part into a packed scratch [n][part rows] and copies of its n row pieces
 * into y, would cost a scratch of y's size, a barrier and n copy regions per part, where the
 * stride costs one push constant; the parts write disjoint columns and need no barrier among
 * them. A whole weight records exactly the one dispatch it always did. */
static oscar_status mul_mats(ovk_gpu_state *s, ovk_binding x, uint32_t cols, uint32_t n, uint32_t n_w,
                             const ovk_gpu_weight *const *w, const ovk_binding *y, const uint32_t *rows,
                             const ovk_binding *bias, int x_ready)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = s->m->ctx;
    /* the texel-fetch products where every weight has planes, for any token count (on lavapipe
     * 8x faster than the tiled matmul at 37 tokens); the others' x is then not made */
    int planes = x.offset % ctx->limits.minTexelBufferOffsetAlignment == 0;
    for (uint32_t i = 0; i < n_w && planes; i++) planes = w[i]->planes != NULL;
    int q8 = !planes && products_q8(s, cols, n, n_w, w);
    int f16 = !planes && !q8 && s->matvec_f16 && n == 1 && cols % 32 == 0;
    for (uint32_t i = 0; i < n_w && f16; i++) f16 = ovk_op_mul_mat_vec_f16_supported(&s->ops, w[i]->type);
    ovk_binding xq = { &s->xq, 0, 0 };
    ovk_mm_group group; /* a short batch's split products: their sums after all of them */
    ovk_cmd_barrier(ctx, &s->cmd);
    if (!planes && !q8 && !f16 && n > 1) ovk_op_mul_mat_group_begin(&s->ops, &group);
    if (f16 || (q8 && !x_ready)) {
        OSCAR_TRY(q8 ? ovk_op_x_q8(&s->ops, &s->cmd, x, xq, n * cols) : ovk_op_x_f16_blocks(&s->ops, &s->cmd, x, xq, cols, 1));
        ovk_cmd_barrier(ctx, &s->cmd);
    }
    for (uint32_t i = 0; i < n_w; i++) {
        if (w[i]->rows != rows[i])
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "a product of %u rows over a weight of %u", rows[i], w[i]->rows);
        const ovk_binding *b = q8 && bias && bias[i].buffer ? &bias[i] : NULL; /* added by the int8 product */
        if (w[i]->n_parts == 1) {
            ovk_binding wb = bind(&w[i]->buf, 0);
            if (planes) OSCAR_TRY(ovk_op_mul_mat_vec_planes(&s->ops, &s->cmd, w[i]->type, bind(&w[i]->planes[0], 0), x, y[i],
                                                            rows[i], rows[i], cols, n));
            else if (q8) OSCAR_TRY(ovk_op_mul_mat_q8_bias(&s->ops, &s->cmd, NULL, w[i]->type, wb, xq, b, y[i], rows[i], rows[i], cols, n));
            else if (f16) OSCAR_TRY(ovk_op_mul_mat_vec_f16(&s->ops, &s->cmd, w[i]->type, wb, xq, y[i], rows[i], cols, 1));
            else OSCAR_TRY(ovk_op_mul_mat(&s->ops, &s->cmd, w[i]->type, wb, x, y[i], rows[i], cols, n));
            continue;
        }
        for (uint32_t p = 0; p < w[i]->n_parts; p++) {
            uint32_t row0 = p * w[i]->part_rows, pr = weight_part_rows(w[i], p);
            ovk_binding wb = bind(weight_part(w[i], p), 0);
            ovk_binding yp = { y[i].buffer, y[i].offset + (uint64_t)row0 * 4, ((uint64_t)(n - 1) * rows[i] + pr) * 4 };
            ovk_binding bp = b ? (ovk_binding){ b->buffer, b->offset + (uint64_t)row0 * 4, (uint64_t)pr * 4 } : yp;
            if (planes) OSCAR_TRY(ovk_op_mul_mat_vec_planes(&s->ops, &s->cmd, w[i]->type, bind(&w[i]->planes[p], 0), x, yp,
                                                            rows[i], pr, cols, n));
            else if (q8) OSCAR_TRY(ovk_op_mul_mat_q8_bias(&s->ops, &s->cmd, NULL, w[i]->type, wb, xq, b ? &bp : NULL, yp, rows[i],
                                                          pr, cols, n));
            else if (f16) OSCAR_TRY(ovk_op_mul_mat_vec_f16(&s->ops, &s->cmd, w[i]->type, wb, xq, yp, pr, cols, 1));
            else OSCAR_TRY(ovk_op_mul_mat_strided(&s->ops, &s->cmd, w[i]->type, wb, x, yp, rows[i], pr, cols, n));
        }
    }
    OSCAR_TRY(ovk_op_mul_mat_group_end(&s->ops, &s->cmd));
    if (bias && !q8) {
        ovk_cmd_barrier(ctx, &s->cmd);
        for (uint32_t i = 0; i < n_w; i++)
            if (bias[i].buffer) OSCAR_TRY(ovk_op_add(&s->ops, &s->cmd, y[i], bias[i], y[i], n * rows[i], rows[i]));
    }
fail:
    s->ops.mm_group = NULL; /* the group lived on this stack */
    return st;
}

/* Whether layer L's gate and up products and SwiGLU run as one dispatch
 * (ovk_op_mul_mat_vec_planes_glu, bit for bit the three): both weights whole, with planes, of
 * one type. On lavapipe it saves SwiGLU's dispatch, which reads and writes through storage
 * buffers at under 1 GB/s, and the up product's stores. */
static int glu_planes(const ovk_gpu_state *s, const ovk_gpu_layer *L)
{
    return s->m->planes && L->w_gate.planes && L->w_up.planes && L->w_gate.n_parts == 1 && L->w_up.n_parts == 1 &&
           L->w_gate.type == L->w_up.type && L->w_gate.rows == L->w_up.rows;
}

/* Records one block (attention + MLP) of layer l for n rows. Each residual add is fused into
 * the norm after it: with add_pending, the previous layer's MLP output (proj) is added to x by
 * this layer's attention norm; this layer's MLP output is left in proj, for the next layer or
 * (after the last layer) for record_head to add. */
static oscar_status record_layer(ovk_gpu_state *s, uint32_t l, uint32_t n, int add_pending)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = s->m->ctx;
    ovk_cmd *cmd = &s->cmd;
    const ovk_ops *ops = &s->ops;
    const ovk_model_hparams *hp = &s->m->desc->hp;
    const ovk_gpu_layer *L = &s->m->layers[l];
    uint32_t D = hp->n_embd, hd = hp->head_dim, H = hp->n_head, KV = hp->n_head_kv, F = hp->n_ff;
    ovk_binding x = bind(&s->x, (uint64_t)n * D * 4), xb = bind(&s->xb, (uint64_t)n * D * 4);
    ovk_binding proj = bind(&s->proj, (uint64_t)n * D * 4);
    ovk_binding q = bind(&s->q, (uint64_t)n * s->q_dim * 4), att = bind(&s->att, (uint64_t)n * s->q_dim * 4);
    ovk_binding k = bind(&s->k, (uint64_t)n * s->kv_dim * 4), v = bind(&s->v, (uint64_t)n * s->kv_dim * 4);
    ovk_binding gate = bind(&s->gate, (uint64_t)n * F * 4), up = bind(&s->up, (uint64_t)n * F * 4);
    ovk_binding pos = { &s->meta, meta_pos_offset(s), (uint64_t)n * 4 };
    ovk_binding freq = bind(&s->m->rope_freq, 0);

    ovk_binding xq = { &s->xq, 0, 0 };
    const ovk_gpu_weight *w_qkv[3] = { &L->wq, &L->wk, &L->wv }, *w_gate_up[2] = { &L->w_gate, &L->w_up };
    const ovk_gpu_weight *w_out[1] = { &L->wo }, *w_down[1] = { &L->w_down };

    /* attention (the norm prepares x for int8 products itself) */
    ovk_cmd_barrier(ctx, cmd);
    int q8 = products_q8(s, D, n, 3, w_qkv), fused = q8 && n == 1; /* the norm's int8 blocks: one row */
    if (fused) OSCAR_TRY(ovk_op_rms_norm_x_q8(ops, cmd, x, add_pending ? &proj : NULL, bind(&L->attn_norm.buf, 0), xb, xq, D,
                                           hp->norm_eps));
    else if (add_pending) OSCAR_TRY(ovk_op_add_rms_norm(ops, cmd, x, proj, bind(&L->attn_norm.buf, 0), xb, D, n, hp->norm_eps));
    else OSCAR_TRY(ovk_op_rms_norm(ops, cmd, x, bind(&L->attn_norm.buf, 0), xb, D, n, hp->norm_eps));
    {
        ovk_binding y[3] = { q, k, v };
        uint32_t rows[3] = { s->q_dim, s->kv_dim, s->kv_dim };
        const ovk_gpu_weight *wb[3] = { &L->bq, &L->bk, &L->bv }; /* qwen2's biases */
        ovk_binding b[3] = { { 0 } };
        int biased = 0;
        for (int i = 0; i < 3; i++)
            if (wb[i]->buf.buffer) b[i] = bind(&wb[i]->buf, 0), biased = 1;
        OSCAR_TRY(mul_mats(s, xb, D, n, 3, w_qkv, y, rows, biased ? b : NULL, fused));
    }
    if (L->q_norm.buf.buffer) { /* qwen3: rows of head_dim */
        ovk_cmd_barrier(ctx, cmd);
        OSCAR_TRY(ovk_op_rms_norm(ops, cmd, q, bind(&L->q_norm.buf, 0), q, hd, n * H, hp->norm_eps));
        OSCAR_TRY(ovk_op_rms_norm(ops, cmd, k, bind(&L->k_norm.buf, 0), k, hd, n * KV, hp->norm_eps));
    }
    { /* RoPE of q and k happens as the cache loads them */
        ovk_kv_rope rope = { pos, freq, hp->rope_type, hp->n_rot };
        /* the attention writes x's int8 blocks for the output product itself where it can */
        int att_q8 = products_q8(s, s->q_dim, n, 1, w_out) && ovk_kv_attention_writes_q8(s->kv);
        OSCAR_TRY(ovk_kv_record_append_attention(s->kv, cmd, l, &q, &k, &v, &att, att_q8 ? &xq : NULL, &rope));
        uint32_t rows[1] = { D };
        OSCAR_TRY(mul_mats(s, att, s->q_dim, n, 1, w_out, &proj, rows, NULL, att_q8));
    }

    /* MLP (the attention's residual added by its norm; x for int8 products prepared by the norm
     * and by SwiGLU) */
    ovk_cmd_barrier(ctx, cmd);
    q8 = products_q8(s, D, n, 2, w_gate_up), fused = q8 && n == 1;
    if (fused) OSCAR_TRY(ovk_op_rms_norm_x_q8(ops, cmd, x, &proj, bind(&L->ffn_norm.buf, 0), xb, xq, D, hp->norm_eps));
    else OSCAR_TRY(ovk_op_add_rms_norm(ops, cmd, x, proj, bind(&L->ffn_norm.buf, 0), xb, D, n, hp->norm_eps));
    int down_q8 = products_q8(s, F, n, 1, w_down); /* SwiGLU then writes x's int8 blocks too */
    if (glu_planes(s, L) && !down_q8) { /* SwiGLU inside the gate and up products */
        ovk_cmd_barrier(ctx, cmd);
        OSCAR_TRY(ovk_op_mul_mat_vec_planes_glu(ops, cmd, L->w_gate.type, bind(&L->w_gate.planes[0], 0),
                                                bind(&L->w_up.planes[0], 0), xb, gate, F, F, D, n));
    } else {
        ovk_binding y[2] = { gate, up };
        uint32_t rows[2] = { F, F };
        OSCAR_TRY(mul_mats(s, xb, D, n, 2, w_gate_up, y, rows, NULL, fused));
        ovk_cmd_barrier(ctx, cmd);
        if (down_q8 && n == 1) OSCAR_TRY(ovk_op_swiglu_x_q8(ops, cmd, gate, up, gate, xq, F));
        else OSCAR_TRY(ovk_op_swiglu(ops, cmd, gate, up, gate, n * F));
    }
    {
        uint32_t rows[1] = { D };
        OSCAR_TRY(mul_mats(s, gate, F, n, 1, w_down, &proj, rows, NULL, down_q8 && n == 1));
    }
fail:
    return st;
}

/* Records the LM head over n_out gathered rows, argmax, and the copies to the readback
 * buffers. */
static oscar_status record_head(ovk_gpu_state *s, uint32_t n, uint32_t n_out)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = s->m->ctx;
    ovk_cmd *cmd = &s->cmd;
    const ovk_model_hparams *hp = &s->m->desc->hp;
    const ovk_gpu_weight *head = hp->tied_embeddings ? &s->m->token_embd : &s->m->output;
    uint32_t D = hp->n_embd, V = hp->n_vocab;
    ovk_binding xo = bind(&s->xo, (uint64_t)n_out * D * 4);
    ovk_binding logits = bind(&s->logits, (uint64_t)n_out * V * 4), amax = bind(&s->amax, (uint64_t)n_out * 4);
    ovk_binding rows = { &s->meta, meta_rows_offset(s), (uint64_t)n_out * 4 };
    ovk_cmd_barrier(ctx, cmd);
    /* the last layer's MLP residual (only the logits need x after the last layer) */
    OSCAR_TRY(ovk_op_add(&s->ops, cmd, bind(&s->x, (uint64_t)n * D * 4), bind(&s->proj, (uint64_t)n * D * 4),
                           bind(&s->x, (uint64_t)n * D * 4), n * D, n * D));
    ovk_cmd_barrier(ctx, cmd);
    OSCAR_TRY(ovk_op_get_rows(&s->ops, cmd, OSCAR_GGML_TYPE_F32, bind(&s->x, (uint64_t)n * D * 4), rows, xo, D, n_out));
    ovk_cmd_barrier(ctx, cmd);
    int q8 = products_q8(s, D, n_out, 1, &head), fused = q8 && n_out == 1;
    if (fused) OSCAR_TRY(ovk_op_rms_norm_x_q8(&s->ops, cmd, xo, NULL, bind(&s->m->output_norm.buf, 0), xo,
                                           (ovk_binding){ &s->xq, 0, 0 }, D, hp->norm_eps));
    else OSCAR_TRY(ovk_op_rms_norm(&s->ops, cmd, xo, bind(&s->m->output_norm.buf, 0), xo, D, n_out, hp->norm_eps));
    {
        uint32_t rows[1] = { V };
        OSCAR_TRY(mul_mats(s, xo, D, n_out, 1, &head, &logits, rows, NULL, fused));
    }
    /* the step's KV flushes beside the LM head: nothing in the step waits for them, and the
     * barriers since the last layer order them after its appends */
    OSCAR_TRY(ovk_kv_record_flushes(s->kv, cmd, 0));
    ovk_cmd_barrier(ctx, cmd);
    OSCAR_TRY(ovk_op_argmax(&s->ops, cmd, logits, amax, V, n_out));
    ovk_cmd_barrier(ctx, cmd);
    ovk_cmd_copy(ctx, cmd, &s->logits, 0, &s->rb_logits, 0, (uint64_t)n_out * V * 4);
    ovk_cmd_copy(ctx, cmd, &s->amax, 0, &s->rb_amax, 0, (uint64_t)n_out * 4);
    ovk_cmd_host_barrier(ctx, cmd);
fail:
    return st;
}

static void invalidate(oscar_context *ctx, const ovk_buffer *b)
{
    if (b->host_coherent) return;
    VkMappedMemoryRange r = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->memory, .size = VK_WHOLE_SIZE };
    ctx->vk.vkInvalidateMappedMemoryRanges(ctx->device, 1, &r);
}

/* A recording or device failure after the cache planned a step: drop the step, so every
 * sequence is as it was before it (the pages it reserved go back). */
static void drop_step(ovk_gpu_state *s)
{
    ovk_cmd_abort(s->m->ctx, &s->cmd);
    ovk_kv_cancel_step(s->kv);
}

/* Host profile (OSCAR_PROFILE): the time since *t0 under `name`; *t0 moves to now. */
static void host_phase(oscar_context *ctx, const char *name, struct timespec *t0)
{
    if (!ctx->host_profile) return;
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ovk_profile_add(ctx->host_profile, name, (double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec));
    *t0 = t1;
}

/* Begins s->cmd and records a whole step of n rows into it: the metadata copy, the embedding,
 * every layer and, with want_logits, the head over n_out rows. With `flush` the first parts go
 * to the device as they are recorded. *t0, *t1: the timestamps around it (-1 without). The
 * cache's step must be planned. */
static oscar_status record_step(ovk_gpu_state *s, uint32_t n, uint32_t n_out, int want_logits, int flush, int *t0, int *t1)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = s->m->ctx;
    const ovk_model_hparams *hp = &s->m->desc->hp;
    OSCAR_TRY(ovk_cmd_begin(ctx, &s->cmd));
    *t0 = ovk_cmd_timestamp(ctx, &s->cmd);
    ovk_cmd_copy(ctx, &s->cmd, &s->meta_host, 0, &s->meta, 0, s->meta.size);
    ovk_cmd_barrier(ctx, &s->cmd);
    {
        /* the embedding: one lookup, or one per part of a split table (each fills the rows of its
         * tokens; the parts write disjoint rows and run unordered) */
        const ovk_gpu_weight *te = &s->m->token_embd;
        ovk_binding ids = bind(&s->meta, (uint64_t)n * 4), x = bind(&s->x, (uint64_t)n * hp->n_embd * 4);
        if (te->n_parts == 1) OSCAR_TRY(ovk_op_get_rows(&s->ops, &s->cmd, te->type, bind(&te->buf, 0), ids, x, hp->n_embd, n));
        for (uint32_t p = 0; te->n_parts > 1 && p < te->n_parts; p++) {
            OSCAR_TRY(ovk_op_get_rows_part(&s->ops, &s->cmd, te->type, bind(weight_part(te, p), 0), ids, x, hp->n_embd, n,
                                             p * te->part_rows, weight_part_rows(te, p)));
        }
    }
    /* The step goes to the GPU in parts of growing size: after layer 0, so the GPU starts at
     * once, then after layers 1..g, then g + 1..g^2 + g, ... (g = s->flush_growth). Recording a
     * Llama-3-8B layer takes the host ~30 us and running it the H200 ~150, so each part is
     * recorded while the GPU runs the ones before; and each submission costs the GPU ~25 us
     * (9 parts of 4 layers made the GPU time 0.23 ms longer), so the parts are few. */
    uint32_t next_flush = 1;
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        OSCAR_TRY(record_layer(s, l, n, l > 0));
        if (flush && s->flush_growth && l + 1 == next_flush && l + 1 < hp->n_layer) {
            OSCAR_TRY(ovk_cmd_flush(ctx, &s->cmd));
            next_flush = next_flush * s->flush_growth + 1;
        }
    }
    if (want_logits) OSCAR_TRY(record_head(s, n, n_out)); /* with the flushes */
    else OSCAR_TRY(ovk_kv_record_flushes(s->kv, &s->cmd, 1));
    *t1 = ovk_cmd_timestamp(ctx, &s->cmd);
fail:
    return st;
}

oscar_status ovk_gpu_step(ovk_gpu_state *s, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new,
                            const int32_t *tokens, int want_logits, float *logits, int32_t *argmax)
{
    oscar_status st = OSCAR_OK;
    int planned = 0;
    if (!s || !seqs || !n_new || !tokens || n_seqs == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gpu_step: NULL argument or no sequence");
    oscar_context *ctx = s->m->ctx;
    const ovk_model_hparams *hp = &s->m->desc->hp;
    struct timespec tp;
    if (ctx->host_profile) clock_gettime(CLOCK_MONOTONIC, &tp);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_seqs; i++) total += n_new[i];
    if (total == 0 || total > s->max_tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "step of %llu tokens (1..%u per step)", (unsigned long long)total,
                           s->max_tokens);
    if (want_logits && n_seqs > s->max_out)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "step of %u sequences with logits (at most %u)", n_seqs, s->max_out);
    uint32_t n = (uint32_t)total;

    /* metadata: token ids, positions, rows whose logits are wanted */
    uint32_t *ids = s->meta_host.mapped;
    int32_t *pos = (int32_t *)((char *)s->meta_host.mapped + meta_pos_offset(s));
    uint32_t *rows = (uint32_t *)((char *)s->meta_host.mapped + meta_rows_offset(s));
    for (uint32_t r = 0; r < n; r++) {
        if (tokens[r] < 0 || (uint32_t)tokens[r] >= hp->n_vocab)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "token %d (row %u) is outside the vocabulary of %u", tokens[r], r,
                               hp->n_vocab);
        ids[r] = (uint32_t)tokens[r];
    }
    for (uint32_t i = 0, r = 0; i < n_seqs; i++) {
        uint32_t len;
        OSCAR_TRY(oscar_kv_seq_length(s->kv, seqs[i], &len));
        for (uint32_t j = 0; j < n_new[i]; j++) pos[r + j] = (int32_t)(len + j);
        r += n_new[i];
        if (n_new[i] == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sequence %d gets no token in this step", seqs[i]);
        rows[i] = r - 1;
    }
    if (!s->meta_host.host_coherent) {
        VkMappedMemoryRange mr = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = s->meta_host.memory,
                                   .size = VK_WHOLE_SIZE };
        ctx->vk.vkFlushMappedMemoryRanges(ctx->device, 1, &mr);
    }

    /* reserve the cache's room (all or nothing) and upload its step tables */
    OSCAR_TRY(oscar_kv_step_begin(s->kv, n_seqs, seqs, n_new));
    planned = 1;
    host_phase(ctx, "step: plan + upload", &tp);

    int t0 = -1, t1 = -1;
    s->step_decode = n == n_seqs; /* one new token a sequence */
    st = record_step(s, n, n_seqs, want_logits, 1, &t0, &t1);
    s->step_decode = 0;
    if (st != OSCAR_OK) goto fail;
    host_phase(ctx, "step: record", &tp);
    OSCAR_TRY(ovk_cmd_submit_wait(ctx, &s->cmd));
    host_phase(ctx, "step: submit + wait", &tp);
    planned = 0;
    ovk_kv_commit_step(s->kv);
    double ns = 0;
    s->last_gpu_ms = t0 >= 0 && t1 >= 0 && ovk_cmd_elapsed_ns(ctx, &s->cmd, t0, t1, &ns) == OSCAR_OK ? ns * 1e-6 : 0;

    s->last_rows = want_logits ? n_seqs : 0;
    if (want_logits) {
        invalidate(ctx, &s->rb_logits);
        invalidate(ctx, &s->rb_amax);
        if (logits) memcpy(logits, s->rb_logits.mapped, (size_t)n_seqs * hp->n_vocab * 4);
        if (argmax) memcpy(argmax, s->rb_amax.mapped, (size_t)n_seqs * 4);
    }
    host_phase(ctx, "step: commit + readback", &tp);
    return OSCAR_OK;
fail:
    if (planned) drop_step(s);
    return st;
}

/* Rehearsal (model_gpu.h): a step of max_tokens rows and one of a single row, each on a
 * sequence of its own, recorded and dropped. Recording is what makes a pipeline (ovk_pipeline_get,
 * on first use): lavapipe takes 0.4-150 ms a pipeline (SPIR-V to NIR and its passes, which
 * Mesa's disk cache does not keep), and SmolLM2's first prompt spent ~0.32 s making 11. Only
 * while no sequence has a page: the recorded and never submitted uploads of the cache's tables
 * are then the rehearsal's own. A shape the cache has no room for is left to its first step. */
oscar_status ovk_gpu_prepare(ovk_gpu_state *s)
{
    oscar_status st = OSCAR_OK;
    int32_t seq = -1;
    oscar_kv_stats ks;
    OSCAR_TRY(oscar_kv_get_stats(s->kv, &ks));
    if (ks.int2_pages_used || ks.f16_pages_used) return OSCAR_OK;
    OSCAR_TRY(oscar_kv_seq_add(s->kv, &seq));
    uint32_t shapes[2] = { s->max_tokens, 1 }; /* a prompt's piece (oscar_session_prefill), a decode step */
    for (int i = 0; i < 2; i++) {
        int t0, t1;
        if (oscar_kv_step_begin(s->kv, 1, &seq, &shapes[i]) != OSCAR_OK) {
            ovk_error_clear();
            continue;
        }
        st = record_step(s, shapes[i], 1, 1, 0, &t0, &t1);
        drop_step(s);
        if (st != OSCAR_OK) goto fail;
    }
fail:
    if (seq >= 0) oscar_kv_seq_free(s->kv, seq);
    return st;
}

/* Benchmark hook (model_gpu.h): n tokens of seeded random K and V into every layer's cache. */
oscar_status ovk_gpu_fill_synthetic(ovk_gpu_state *s, int32_t kv_seq, uint32_t n, uint32_t seed)
{
    oscar_status st = OSCAR_OK;
    int planned = 0;
    oscar_context *ctx = s->m->ctx;
    size_t count = (size_t)s->max_tokens * s->kv_dim;
    float *h = malloc(count * sizeof *h); /* [max_tokens][n_kv_head][head_dim] in (-1, 1) */
    if (!h) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uint32_t r = seed * 2654435761u + 1u;
    for (int pass = 0; pass < 2; pass++) { /* K, then V */
        for (size_t i = 0; i < count; i++) {
            r = r * 1664525u + 1013904223u;
            h[i] = (float)(r >> 8) * (2.0f / 16777216.0f) - 1.0f;
        }
        OSCAR_TRY(ovk_buffer_upload(ctx, pass ? &s->v : &s->k, 0, h, count * sizeof *h));
    }
    for (uint32_t done = 0; done < n;) {
        uint32_t chunk = n - done < s->max_tokens ? n - done : s->max_tokens;
        ovk_binding k = bind(&s->k, (uint64_t)chunk * s->kv_dim * 4), v = bind(&s->v, (uint64_t)chunk * s->kv_dim * 4);
        OSCAR_TRY(oscar_kv_step_begin(s->kv, 1, &kv_seq, &chunk));
        planned = 1;
        OSCAR_TRY(ovk_cmd_begin(ctx, &s->cmd));
        for (uint32_t l = 0; l < s->m->desc->hp.n_layer; l++) OSCAR_TRY(ovk_kv_record_append(s->kv, &s->cmd, l, &k, &v, 0));
        OSCAR_TRY(ovk_kv_record_flushes(s->kv, &s->cmd, 1));
        OSCAR_TRY(ovk_cmd_submit_wait(ctx, &s->cmd));
        planned = 0;
        ovk_kv_commit_step(s->kv);
        done += chunk;
    }
fail:
    if (planned) drop_step(s);
    free(h);
    return st;
}
