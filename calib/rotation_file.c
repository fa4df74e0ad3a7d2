/* Writing a RotationZoo GGUF file (see rotation_file.h and docs/rotationzoo.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "ggml_types.h"
#include "rotation_file.h"

const char *ovk_rotation_objective_k(ovk_rotation_kind kind)
{
    switch (kind) {
    case OSCAR_ROTATION_IDENTITY: return "identity";
    case OSCAR_ROTATION_HADAMARD: return "hadamard";
    default: return "query_covariance";
    }
}

const char *ovk_rotation_objective_v(ovk_rotation_kind kind, ovk_calib_target v_target)
{
    switch (kind) {
    case OSCAR_ROTATION_IDENTITY: return "identity";
    case OSCAR_ROTATION_HADAMARD: return "hadamard";
    default: return v_target == OSCAR_CALIB_VALUES_SCORES ? "attention_output" : "proxy_score_weighted";
    }
}

oscar_status ovk_rotation_file_write(const char *path, const ovk_calib_result *res,
                                       const ovk_rotation_file_meta *meta)
{
    oscar_status st = OSCAR_OK;
    ovk_gguf_writer *w = NULL;
    float *eig = NULL; /* [n_rot][d] float copy of one layer's eigenvalues */
    if (!path || !res || !meta || !res->rot_k || !res->rot_v || !meta->clip_k || !meta->clip_v)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "rotation file: NULL argument");
    uint32_t d = res->head_dim, nl = res->n_layer, n_rot = res->n_rot;
    uint32_t want_rot = meta->grouping == OSCAR_CALIB_PER_HEAD ? meta->n_kv_head : 1;
    if (nl != meta->n_layer || d != meta->head_dim || n_rot != want_rot || nl == 0 || d == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT,
                   "rotation file: result (%u layers, d %u, %u rotations per layer) does not match the metadata "
                   "(%u layers, d %u, grouping %s with %u KV heads)", nl, d, n_rot, meta->n_layer, meta->head_dim,
                   meta->grouping == OSCAR_CALIB_PER_HEAD ? "head" : "layer", meta->n_kv_head);
    for (uint32_t l = 0; l < nl; l++)
        if (!(meta->clip_k[l] > 0.0f && meta->clip_k[l] <= 1.0f) || !(meta->clip_v[l] > 0.0f && meta->clip_v[l] <= 1.0f))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "rotation file: clip ratio of layer %u (%g, %g) not in (0, 1]", l,
                       (double)meta->clip_k[l], (double)meta->clip_v[l]);
    if (meta->refit_rounds && (!res->metric_k || (meta->group_size && meta->group_size != d)))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "rotation file: refit_rounds %u needs the keys' metric (%s) and one group per row "
                   "(group size %u, head_dim %u)", meta->refit_rounds, res->metric_k ? "given" : "missing",
                   meta->group_size, d);
    char fp[17];
    snprintf(fp, sizeof fp, "%016" PRIx64, meta->fingerprint);

    OSCAR_TRY(ovk_gguf_writer_create(&w));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.format_version", OSCAR_ROTATIONZOO_FORMAT_VERSION));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.objective_k", meta->objective_k));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.objective_v", meta->objective_v));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.grouping", meta->grouping == OSCAR_CALIB_PER_HEAD ? "head" : "layer"));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.group_size", meta->group_size ? meta->group_size : d));
    OSCAR_TRY(ovk_gguf_writer_set_array(w, "oscar.clip_k", OSCAR_GGUF_TYPE_FLOAT32, meta->clip_k, nl));
    OSCAR_TRY(ovk_gguf_writer_set_array(w, "oscar.clip_v", OSCAR_GGUF_TYPE_FLOAT32, meta->clip_v, nl));
    OSCAR_TRY(ovk_gguf_writer_set_bool(w, "oscar.clip_fitted", meta->clip_fitted != 0));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.sink_tokens", meta->sink_tokens));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.recent_tokens", meta->recent_tokens));
    if (meta->refit_rounds) OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.refit_rounds", meta->refit_rounds));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.model.architecture", meta->architecture ? meta->architecture : ""));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.model.block_count", meta->n_layer));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.model.head_count_kv", meta->n_kv_head));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.model.head_count", meta->n_head));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.model.head_dim", meta->head_dim));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.model.fingerprint", fp));
    OSCAR_TRY(ovk_gguf_writer_set_u64(w, "oscar.calib.tokens", meta->calib_tokens));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.calib.sequence_length", meta->sequence_length));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "oscar.calib.text_source", meta->text_source ? meta->text_source : ""));
    if (meta->key_rope_span) OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.calib.key_rope_span", meta->key_rope_span));
    if (meta->key_center_block) OSCAR_TRY(ovk_gguf_writer_set_u32(w, "oscar.key_center_block", meta->key_center_block));

    /* GGUF ne: [d, d] per layer, [d, d, n_kv_head] per head; ne0 = column index j. */
    size_t dd = (size_t)d * d;
    uint64_t ne_rot[3] = {d, d, n_rot}, ne_eig[2] = {d, n_rot};
    uint32_t dims_rot = n_rot == 1 ? 2 : 3, dims_eig = n_rot == 1 ? 1 : 2;
    int with_eig = meta->write_eigenvalues && res->eig_k && res->eig_v;
    if (with_eig) {
        eig = malloc((size_t)n_rot * d * sizeof *eig);
        if (!eig) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "rotation file: out of memory");
    }
    for (uint32_t l = 0; l < nl; l++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%u.attn_k_rot.weight", l);
        OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, dims_rot, ne_rot,
                                                   res->rot_k + (size_t)l * n_rot * dd));
        snprintf(name, sizeof name, "blk.%u.attn_v_rot.weight", l);
        OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, dims_rot, ne_rot,
                                                   res->rot_v + (size_t)l * n_rot * dd));
        size_t per = (size_t)meta->n_kv_head * d;
        uint64_t ne_mean[2] = {d, meta->n_kv_head};
        if (meta->mean_k) {
            snprintf(name, sizeof name, "blk.%u.attn_k_mean", l);
            OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, 2, ne_mean, meta->mean_k + l * per));
        }
        if (meta->mean_v) {
            snprintf(name, sizeof name, "blk.%u.attn_v_mean", l);
            OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, 2, ne_mean, meta->mean_v + l * per));
        }
        if (res->feedback_k) {
            snprintf(name, sizeof name, "blk.%u.attn_k_feedback", l);
            OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, dims_rot, ne_rot,
                                                       res->feedback_k + (size_t)l * n_rot * dd));
        }
        if (meta->refit_rounds) {
            snprintf(name, sizeof name, "blk.%u.attn_k_metric", l);
            OSCAR_TRY(ovk_gguf_writer_add_tensor_ref(w, name, OSCAR_GGML_TYPE_F32, dims_rot, ne_rot,
                                                       res->metric_k + (size_t)l * n_rot * dd));
        }
        if (!with_eig) continue;
        for (int which = 0; which < 2; which++) {
            const double *src = (which ? res->eig_v : res->eig_k) + (size_t)l * n_rot * d;
            for (size_t i = 0; i < (size_t)n_rot * d; i++) eig[i] = (float)src[i];
            snprintf(name, sizeof name, "blk.%u.attn_%c_eig", l, which ? 'v' : 'k');
            OSCAR_TRY(ovk_gguf_writer_add_tensor(w, name, OSCAR_GGML_TYPE_F32, dims_eig, ne_eig, eig));
        }
    }
    OSCAR_TRY(ovk_gguf_writer_write_file(w, path));
fail:
    free(eig);
    ovk_gguf_writer_destroy(w);
    return st;
}
