/* Rotation sets (include/oscar/model.h): built in memory or read from a RotationZoo GGUF
 * (docs/rotationzoo.md), checked against the model they are for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "int2_quant.h"
#include "model_api.h"
#include "orthogonal.h"
#include "oscar/experimental.h"

#define ORTHO_TOLERANCE 1e-3

/* Finite and orthogonal (max |RᵀR - I| <= ORTHO_TOLERANCE) check of every d x d matrix of
 * r[0..n); fails with `status` naming `what`, the layer and the head. */
static oscar_status check_matrices(const float *r, uint32_t n_layer, uint32_t n_rot, uint32_t d, const char *what,
                                   oscar_status status)
{
    for (uint32_t m = 0; m < n_layer * n_rot; m++) {
        uint32_t layer = m / n_rot, head = m % n_rot;
        ovk_rotation_error e = ovk_rotation_max_error(r + (size_t)m * d * d, d);
        if (!e.finite)
            OSCAR_RETURN_ERROR(status, "%s of layer %u (head %u): element (%zu, %zu) is not finite", what,
                               layer, head, e.first_bad / d, e.first_bad % d);
        if (!(e.max <= ORTHO_TOLERANCE))
            OSCAR_RETURN_ERROR(status, "%s of layer %u (head %u) is not orthogonal: max |R^T R - I| = %.3g (limit %g)",
                               what, layer, head, e.max, ORTHO_TOLERANCE);
    }
    return OSCAR_OK;
}

static oscar_status check_clips(const float *c, uint32_t n_layer, const char *what, oscar_status status)
{
    for (uint32_t l = 0; c && l < n_layer; l++)
        if (!(c[l] > 0 && c[l] <= 1))
            OSCAR_RETURN_ERROR(status, "clip ratio %s[%u] = %g is not in (0, 1]", what, l, (double)c[l]);
    return OSCAR_OK;
}

/* Copies and checks; `status` is what a bad value is reported as (INVALID_ARGUMENT in memory,
 * BAD_FORMAT from a file). */
static oscar_status build(const oscar_model *model, uint32_t n_layer, uint32_t n_rot, const float *rot_k, const float *rot_v,
                          const float *clip_k, const float *clip_v, oscar_status status, oscar_rotation_set **out)
{
    oscar_status st = OSCAR_OK;
    oscar_rotation_set *s = NULL;
    if (!model || !rot_k || !rot_v || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_rotation_set_create: NULL argument");
    *out = NULL;
    const ovk_model_hparams *hp = &model->desc->hp;
    uint32_t d = hp->head_dim;
    if (n_layer != hp->n_layer)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "rotation set: %u layers, the model has %u", n_layer, hp->n_layer);
    if (n_rot != 1 && n_rot != hp->n_head_kv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "rotation set: %u rotations per layer, expected 1 or the model's %u KV heads",
                           n_rot, hp->n_head_kv);
    OSCAR_TRY(check_matrices(rot_k, n_layer, n_rot, d, "R_K", status));
    OSCAR_TRY(check_matrices(rot_v, n_layer, n_rot, d, "R_V", status));
    OSCAR_TRY(check_clips(clip_k, n_layer, "clip_k", status));
    OSCAR_TRY(check_clips(clip_v, n_layer, "clip_v", status));
    s = calloc(1, sizeof *s);
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    size_t n_floats = (size_t)n_layer * n_rot * d * d;
    s->n_layer = n_layer, s->n_rot = n_rot, s->head_dim = d, s->n_kv = hp->n_head_kv;
    s->fingerprint = model->info.fingerprint;
    s->rot_k = malloc(n_floats * sizeof(float));
    s->rot_v = malloc(n_floats * sizeof(float));
    s->clip_k = malloc(n_layer * sizeof(float));
    s->clip_v = malloc(n_layer * sizeof(float));
    if (!s->rot_k || !s->rot_v || !s->clip_k || !s->clip_v) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    memcpy(s->rot_k, rot_k, n_floats * sizeof(float));
    memcpy(s->rot_v, rot_v, n_floats * sizeof(float));
    for (uint32_t l = 0; l < n_layer; l++) {
        s->clip_k[l] = clip_k ? clip_k[l] : 0.96f;
        s->clip_v[l] = clip_v ? clip_v[l] : 0.92f;
    }
    *out = s;
    return OSCAR_OK;
fail:
    oscar_rotation_set_destroy(s);
    return st;
}

OSCAR_API oscar_status oscar_rotation_set_create(const oscar_model *model, uint32_t n_layer, uint32_t n_rot, const float *rot_k,
                                                 const float *rot_v, const float *clip_k, const float *clip_v,
                                                 oscar_rotation_set **out)
{
    return build(model, n_layer, n_rot, rot_k, rot_v, clip_k, clip_v, OSCAR_ERROR_INVALID_ARGUMENT, out);
}

OSCAR_API void oscar_rotation_set_destroy(oscar_rotation_set *s)
{
    if (!s) return;
    free(s->rot_k), free(s->rot_v), free(s->clip_k), free(s->clip_v);
    free(s->mean_k), free(s->mean_v), free(s->key_feedback), free(s->key_metric);
    free(s);
}

/* Checks and copies the means (status for a bad value, as in build). */
static oscar_status set_means(oscar_rotation_set *s, const float *mean_k, const float *mean_v, oscar_status status)
{
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_rotation_set_set_means: NULL set");
    size_t per = (size_t)s->n_kv * s->head_dim, n = (size_t)s->n_layer * per;
    for (size_t i = 0; i < n; i++)
        if ((mean_k && !isfinite(mean_k[i])) || (mean_v && !isfinite(mean_v[i])))
            OSCAR_RETURN_ERROR(status, "%s of layer %zu, KV head %zu, element %zu is not finite",
                               mean_k && !isfinite(mean_k[i]) ? "mean_k" : "mean_v", i / per, i % per / s->head_dim,
                               i % s->head_dim);
    float *k = mean_k ? malloc(n * sizeof *k) : NULL, *v = mean_v ? malloc(n * sizeof *v) : NULL;
    if ((mean_k && !k) || (mean_v && !v)) {
        free(k), free(v);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    if (k) memcpy(k, mean_k, n * sizeof *k);
    if (v) memcpy(v, mean_v, n * sizeof *v);
    free(s->mean_k), free(s->mean_v);
    s->mean_k = k, s->mean_v = v;
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_rotation_set_set_means(oscar_rotation_set *s, const float *mean_k, const float *mean_v)
{
    return set_means(s, mean_k, mean_v, OSCAR_ERROR_INVALID_ARGUMENT);
}

/* ---- RotationZoo files --------------------------------------------------------------------- */

/* u32 key that must equal `want` (MISMATCH naming the key otherwise). */
static oscar_status expect_u32(const ovk_gguf *g, const char *key, uint32_t want)
{
    uint32_t v;
    oscar_status st = ovk_gguf_get_u32(g, key, &v);
    if (st != OSCAR_OK) return st;
    if (v != want) OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "%s: %s = %u, the model has %u", g->path, key, v, want);
    return OSCAR_OK;
}

/* Optional f32 array key of n_layer ratios into out (left NULL when absent). */
static oscar_status read_clips(const ovk_gguf *g, const char *key, uint32_t n_layer, float **out)
{
    oscar_status st = OSCAR_OK;
    const ovk_gguf_array *a;
    *out = NULL;
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    OSCAR_TRY(ovk_gguf_get_array(g, key, -1, &a));
    if (a->count != n_layer || (a->type != OSCAR_GGUF_TYPE_FLOAT32 && a->type != OSCAR_GGUF_TYPE_FLOAT64))
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: %s: %llu values of type %s, expected %u float32 (one per layer)", g->path, key,
                   (unsigned long long)a->count, ovk_gguf_type_name(a->type), n_layer);
    *out = malloc(n_layer * sizeof **out);
    if (!*out) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t l = 0; l < n_layer; l++) (*out)[l] = (float)ovk_gguf_array_number(a, l);
fail:
    return st;
}

/* Copies tensor blk.<l>.<what>.weight into dst ([n_rot][d][d]) after checking type and shape;
 * *n_rot is set by layer 0's tensor (0 on entry) and must agree for the others. */
static oscar_status read_rot(const ovk_gguf *g, uint32_t l, const char *what, uint32_t d, uint32_t n_kv, uint32_t *n_rot,
                             float **dst, uint32_t n_layer)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s.weight", l, what);
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
    if (!t) OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s is missing", g->path, name);
    if (t->type != OSCAR_GGML_TYPE_F32)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: type %s, expected F32", g->path, name, ovk_ggml_type_name(t->type));
    uint32_t r = t->n_dims == 2 ? 1 : (uint32_t)t->ne[2];
    int ok = t->ne[0] == d && t->ne[1] == d && (t->n_dims == 2 || (t->n_dims == 3 && t->ne[2] == n_kv));
    if (!ok)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "%s: tensor %s: shape [%llu, %llu, %llu], expected [%u, %u] or [%u, %u, %u] "
                           "(head_dim %u, %u KV heads)", g->path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                           (unsigned long long)t->ne[2], d, d, d, d, n_kv, d, n_kv);
    if (*n_rot == 0) {
        *n_rot = r;
        *dst = malloc((size_t)n_layer * r * d * d * sizeof(float));
        if (!*dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    } else if (r != *n_rot) {
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s holds %u rotations, earlier layers %u", g->path, name, r, *n_rot);
    }
    memcpy(*dst + (size_t)l * r * d * d, t->data, (size_t)r * d * d * sizeof(float));
    return OSCAR_OK;
}

/* Optional F32 tensor `name` of layer l: *t is it or NULL; *present is set by layer 0 and every
 * later layer must agree. */
static oscar_status find_optional(const ovk_gguf *g, const char *name, uint32_t l, int *present, const ovk_gguf_tensor **t)
{
    *t = ovk_gguf_find_tensor(g, name);
    if (l == 0) *present = *t != NULL;
    if (!*t != !*present)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s is %s, unlike layer 0's", g->path, name, *t ? "present" : "missing");
    if (*t && (*t)->type != OSCAR_GGML_TYPE_F32)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: type %s, expected F32", g->path, name,
                           ovk_ggml_type_name((*t)->type));
    return OSCAR_OK;
}

/* Optional tensor blk.<l>.<what> (F32, ne [d, n_kv]) into dst [n_layer][n_kv][d], allocated at
 * the first layer; *present says whether layer 0 had it, and every later layer must agree. */
static oscar_status read_mean(const ovk_gguf *g, uint32_t l, const char *what, uint32_t d, uint32_t n_kv, int *present,
                              float **dst, uint32_t n_layer)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", l, what);
    const ovk_gguf_tensor *t;
    oscar_status st = find_optional(g, name, l, present, &t);
    if (st != OSCAR_OK || !t) return st;
    if (t->n_dims != 2 || t->ne[0] != d || t->ne[1] != n_kv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "%s: tensor %s: shape [%llu, %llu], expected [%u, %u] (head_dim, KV heads)",
                           g->path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], d, n_kv);
    if (!*dst) {
        *dst = malloc((size_t)n_layer * n_kv * d * sizeof(float));
        if (!*dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    memcpy(*dst + (size_t)l * n_kv * d, t->data, (size_t)n_kv * d * sizeof(float));
    return OSCAR_OK;
}

/* Optional per-rotation matrix blk.<l>.<what> (F32, ne [d, d] or [d, d, n_rot]) into dst
 * [n_layer][n_rot][d][d], allocated at the first layer; present in every layer or in none;
 * finite, and with `upper` 0 on and below the diagonal, else symmetric. attn_k_feedback: the key
 * codes' error feedback (oscar_kv_experimental.key_feedback, upper); attn_k_metric: the keys' refit
 * metric (symmetric). */
static oscar_status read_matrix(const ovk_gguf *g, uint32_t l, const char *what, int upper, uint32_t d, uint32_t n_rot,
                                int *present, float **dst, uint32_t n_layer)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", l, what);
    const ovk_gguf_tensor *t;
    oscar_status st = find_optional(g, name, l, present, &t);
    if (st != OSCAR_OK || !t) return st;
    uint32_t r = t->n_dims == 2 ? 1 : (uint32_t)t->ne[2];
    if (t->ne[0] != d || t->ne[1] != d || t->n_dims > 3 || r != n_rot)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "%s: tensor %s: shape [%llu, %llu, %u], expected [%u, %u, %u] (as the rotations)",
                           g->path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], r, d, d, n_rot);
    const float *f = t->data;
    for (size_t i = 0; i < (size_t)n_rot * d * d; i++) {
        size_t row = i / d % d, col = i % d;
        size_t mirror = (i / ((size_t)d * d) * d + col) * d + row;
        if (!isfinite(f[i]) || (upper && col <= row && f[i] != 0.0f) || (!upper && f[i] != f[mirror]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: element (%zu, %zu) of head %zu is %s", g->path, name, row, col,
                               i / ((size_t)d * d), !isfinite(f[i]) ? "not finite" : upper ? "not 0 on or below the diagonal"
                                                                                            : "not its transpose's");
    }
    if (!*dst) {
        *dst = malloc((size_t)n_layer * n_rot * d * d * sizeof(float));
        if (!*dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    memcpy(*dst + (size_t)l * n_rot * d * d, f, (size_t)n_rot * d * d * sizeof(float));
    return OSCAR_OK;
}

/* Drops the " (file.c:123)" source location ovk_error_set appended to a message, so that a
 * message quoted inside another carries one location only (the outer one). */
static void drop_location(char *msg)
{
    size_t n = strlen(msg);
    if (n < 6 || msg[n - 1] != ')') return;
    char *open = strrchr(msg, '(');
    if (!open || open == msg || open[-1] != ' ' || !strstr(open, ".c:")) return;
    open[-1] = '\0';
}

/* Reads and checks a parsed RotationZoo image against the model (oscar_rotation_set_load). */
static oscar_status load_gguf(const ovk_gguf *g, const oscar_model *model, oscar_rotation_set **out)
{
    oscar_status st = OSCAR_OK;
    const char *path = g->path;
    float *rot_k = NULL, *rot_v = NULL, *clip_k = NULL, *clip_v = NULL;
    float *mean_k = NULL, *mean_v = NULL; /* [n_layer][n_kv][d], optional */
    float *feedback = NULL, *metric = NULL; /* [n_layer][n_rot][d][d], optional */
    const ovk_model_hparams *hp = &model->desc->hp;

    /* a model given where a rotation file belongs: say so rather than name a missing key */
    const ovk_gguf_kv *arch_kv = ovk_gguf_find_key(g, "general.architecture");
    if (!ovk_gguf_find_key(g, "oscar.format_version") && arch_kv && arch_kv->value.type == OSCAR_GGUF_TYPE_STRING)
        OSCAR_FAIL(OSCAR_ERROR_MISMATCH, "%s is a model (general.architecture \"%.64s\"), not a RotationZoo rotation file",
                   path, arch_kv->value.cstr);
    uint32_t version;
    OSCAR_TRY(ovk_gguf_get_u32(g, "oscar.format_version", &version));
    if (version != 1)
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: oscar.format_version %u is not supported (1)", path, version);
    const char *arch;
    OSCAR_TRY(ovk_gguf_get_str(g, "oscar.model.architecture", &arch));
    if (strcmp(arch, ovk_arch_name(hp->arch)))
        OSCAR_FAIL(OSCAR_ERROR_MISMATCH, "%s: oscar.model.architecture = \"%s\", the model is \"%s\"", path, arch,
                   ovk_arch_name(hp->arch));
    OSCAR_TRY(expect_u32(g, "oscar.model.block_count", hp->n_layer));
    OSCAR_TRY(expect_u32(g, "oscar.model.head_count_kv", hp->n_head_kv));
    OSCAR_TRY(expect_u32(g, "oscar.model.head_dim", hp->head_dim));
    if (ovk_gguf_find_key(g, "oscar.model.head_count")) OSCAR_TRY(expect_u32(g, "oscar.model.head_count", hp->n_head));
    const char *fp;
    OSCAR_TRY(ovk_gguf_get_str(g, "oscar.model.fingerprint", &fp));
    char *end = NULL;
    unsigned long long fpv = strtoull(fp, &end, 16);
    if (strlen(fp) != 16 || !end || *end)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.model.fingerprint \"%s\" is not 16 hex digits", path, fp);
    if (fpv != model->info.fingerprint)
        OSCAR_FAIL(OSCAR_ERROR_MISMATCH, "%s: oscar.model.fingerprint %s, the model's is %s (calibrated on another model)", path,
                   fp, model->info.fingerprint_hex);
    const char *grouping = NULL;
    if (ovk_gguf_find_key(g, "oscar.grouping")) {
        OSCAR_TRY(ovk_gguf_get_str(g, "oscar.grouping", &grouping));
        if (strcmp(grouping, "layer") && strcmp(grouping, "head"))
            OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.grouping \"%s\" is neither \"layer\" nor \"head\"", path, grouping);
    }

    uint32_t nk = 0, nv = 0, d = hp->head_dim, group = 0;
    int has_mk = 0, has_mv = 0;
    if (ovk_gguf_find_key(g, "oscar.group_size")) {
        OSCAR_TRY(ovk_gguf_get_u32(g, "oscar.group_size", &group));
        if (group == 0 || d % group != 0)
            OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.group_size %u does not divide head_dim %u", path, group, d);
    }
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        OSCAR_TRY(read_rot(g, l, "attn_k_rot", d, hp->n_head_kv, &nk, &rot_k, hp->n_layer));
        OSCAR_TRY(read_rot(g, l, "attn_v_rot", d, hp->n_head_kv, &nv, &rot_v, hp->n_layer));
        OSCAR_TRY(read_mean(g, l, "attn_k_mean", d, hp->n_head_kv, &has_mk, &mean_k, hp->n_layer));
        OSCAR_TRY(read_mean(g, l, "attn_v_mean", d, hp->n_head_kv, &has_mv, &mean_v, hp->n_layer));
    }
    if (nk != nv)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: attn_k_rot holds %u rotations per layer, attn_v_rot %u", path, nk, nv);
    if (grouping && nk != (strcmp(grouping, "head") ? 1u : hp->n_head_kv))
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.grouping \"%s\" but the tensors hold %u rotation(s) per layer", path,
                   grouping, nk);
    int has_fb = 0, has_metric = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        OSCAR_TRY(read_matrix(g, l, "attn_k_feedback", 1, d, nk, &has_fb, &feedback, hp->n_layer));
        OSCAR_TRY(read_matrix(g, l, "attn_k_metric", 0, d, nk, &has_metric, &metric, hp->n_layer));
    }
    uint32_t refit = 0;
    if (ovk_gguf_find_key(g, "oscar.refit_rounds")) {
        OSCAR_TRY(ovk_gguf_get_u32(g, "oscar.refit_rounds", &refit));
        uint32_t G = group ? group : ovk_int2_default_group(d);
        if (refit > 8 || (refit && G != d))
            OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.refit_rounds %u: at most 8, and only with one group per row (group %u, "
                       "head_dim %u)", path, refit, G, d);
    }
    if (has_metric && !refit)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: the file has attn_k_metric but no oscar.refit_rounds", path);
    uint32_t center_block = 0;
    if (ovk_gguf_find_key(g, "oscar.key_center_block")) {
        OSCAR_TRY(ovk_gguf_get_u32(g, "oscar.key_center_block", &center_block));
        if (center_block < OSCAR_KEY_CENTER_BLOCK_MIN)
            OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.key_center_block %u is below %u", path, center_block,
                       OSCAR_KEY_CENTER_BLOCK_MIN);
        if (!has_mk) OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: oscar.key_center_block without attn_k_mean", path);
    }
    OSCAR_TRY(read_clips(g, "oscar.clip_k", hp->n_layer, &clip_k));
    OSCAR_TRY(read_clips(g, "oscar.clip_v", hp->n_layer, &clip_v));
    st = build(model, hp->n_layer, nk, rot_k, rot_v, clip_k, clip_v, OSCAR_ERROR_BAD_FORMAT, out);
    if (st == OSCAR_OK) {
        (*out)->group_size = group;
        (*out)->key_feedback = feedback;
        (*out)->key_metric = metric;
        (*out)->refit_rounds = refit;
        (*out)->key_center_block = center_block;
        feedback = metric = NULL;
    }
    if (st == OSCAR_OK && (st = set_means(*out, mean_k, mean_v, OSCAR_ERROR_BAD_FORMAT)) != OSCAR_OK) {
        oscar_rotation_set_destroy(*out);
        *out = NULL;
    }
    if (st != OSCAR_OK) {
        /* prefix the file name to the check's message, keeping one source location */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", oscar_last_error());
        drop_location(msg);
        ovk_error_set(st, __FILE__, __LINE__, "%s: %s", path, msg);
    }
fail:
    free(rot_k), free(rot_v), free(clip_k), free(clip_v), free(mean_k), free(mean_v), free(feedback), free(metric);
    return st;
}

OSCAR_API oscar_status oscar_rotation_set_load(const char *path, const oscar_model *model, oscar_rotation_set **out)
{
    if (!path || !model || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_rotation_set_load: NULL argument");
    *out = NULL;
    ovk_gguf *g = NULL;
    oscar_status st = ovk_gguf_open(path, &g);
    if (st == OSCAR_OK) st = load_gguf(g, model, out);
    ovk_gguf_close(g);
    return st;
}

oscar_status ovk_rotation_set_load_memory(const void *data, size_t size, const char *name, const oscar_model *model,
                                          oscar_rotation_set **out)
{
    if (!model || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_rotation_set_load_memory: NULL argument");
    *out = NULL;
    ovk_gguf *g = NULL;
    oscar_status st = ovk_gguf_open_memory(data, size, name, &g);
    if (st == OSCAR_OK) st = load_gguf(g, model, out);
    ovk_gguf_close(g);
    return st;
}
