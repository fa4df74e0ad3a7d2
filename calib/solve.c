/* Solving every layer: rotations, their checks, clip ratios, with progress reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "calib.h"

void ovk_calib_result_free(ovk_calib_result *res)
{
    if (!res) return;
    free(res->rot_k);
    free(res->rot_v);
    free(res->eig_k);
    free(res->eig_v);
    free(res->clip_k);
    free(res->clip_v);
    free(res->err_k);
    free(res->err_v);
    free(res->feedback_k);
    free(res->metric_k);
    memset(res, 0, sizeof *res);
}

/* Fits one clip ratio for a layer: per-layer grouping uses one R for every head, per-head
 * grouping the head's own R (rots [n_rot][d][d]); the curves of all heads are pooled. Values
 * use the attention-output curve when the calibrator kept sequences for it, else (and keys
 * always) the per-row curve of the reservoir; keys with their error feedback and refit metric
 * when given (feedback, metric: [n_rot][d][d], else NULL). */
static oscar_status fit_layer_clip(ovk_calib *cal, uint32_t layer, int values, const float *rots, const float *feedback,
                                   const float *metric, uint32_t n_rot, const float *center, float *ratio, double *err)
{
    oscar_status st = OSCAR_OK;
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    size_t dd = (size_t)p->head_dim * p->head_dim;
    float *ratios = malloc(OSCAR_CALIB_CLIP_GRID_MAX * sizeof *ratios); /* [OSCAR_CALIB_CLIP_GRID_MAX] */
    double *sums = calloc(OSCAR_CALIB_CLIP_GRID_MAX, sizeof *sums);     /* [OSCAR_CALIB_CLIP_GRID_MAX] */
    if (!ratios || !sums) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_solve: clip grid");
    uint32_t n = ovk_calib_clip_grid(p, ratios, OSCAR_CALIB_CLIP_GRID_MAX);
    uint64_t rows = 0;
    if (values && ovk_calib_has_output_fit(cal))
        for (uint32_t h = 0; h < n_rot; h++)
            OSCAR_TRY(ovk_calib_clip_curve_output(cal, layer, n_rot == 1 ? OSCAR_CALIB_ALL_HEADS : h, rots + h * dd, center,
                                                    ratios, n, sums, &rows));
    /* keys; or values when no kept query sees an INT2 token (sequences no longer than the
     * sink and the recent window): each sampled row's own error */
    int per_row = rows == 0;
    for (uint32_t h = 0; h < n_rot && per_row; h++)
        OSCAR_TRY(ovk_calib_clip_curve(cal, layer, n_rot == 1 ? OSCAR_CALIB_ALL_HEADS : h, values, rots + h * dd,
                                         feedback ? feedback + h * dd : NULL, metric ? metric + h * dd : NULL, center,
                                         ratios, n, sums, &rows));
    if (rows == 0) OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "ovk_calib_solve: layer %u has no sample rows", layer);
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (sums[i] <= sums[best]) best = i;
    *ratio = ratios[best];
    *err = sums[best] / (double)rows;
fail:
    free(ratios);
    free(sums);
    return st;
}

oscar_status ovk_calib_solve(ovk_calib *cal, ovk_rotation_kind kind, ovk_calib_target v_target,
                               const float *center_k, const float *center_v, ovk_calib_result *out)
{
    oscar_status st = OSCAR_OK;
    double *C = NULL; /* [d][d] target covariance */
    ovk_calib_result res;
    memset(&res, 0, sizeof res);
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    if (out) memset(out, 0, sizeof *out);
    if (!p || !out) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_solve: NULL argument");
    if (v_target != OSCAR_CALIB_VALUES_PROXY && v_target != OSCAR_CALIB_VALUES_SCORES)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_solve: v_target must be VALUES_PROXY or VALUES_SCORES");
    uint32_t d = p->head_dim, nl = p->n_layer;
    uint32_t n_rot = p->grouping == OSCAR_CALIB_PER_HEAD ? p->n_kv_head : 1;
    size_t dd = (size_t)d * d, per_layer = (size_t)n_rot * dd;
    res.n_layer = nl;
    res.n_rot = n_rot;
    res.head_dim = d;
    res.rot_k = malloc(nl * per_layer * sizeof *res.rot_k);
    res.rot_v = malloc(nl * per_layer * sizeof *res.rot_v);
    res.eig_k = calloc((size_t)nl * n_rot * d, sizeof *res.eig_k);
    res.eig_v = calloc((size_t)nl * n_rot * d, sizeof *res.eig_v);
    res.clip_k = malloc(nl * sizeof *res.clip_k);
    res.clip_v = malloc(nl * sizeof *res.clip_v);
    res.err_k = malloc(nl * sizeof *res.err_k);
    res.err_v = malloc(nl * sizeof *res.err_v);
    C = malloc(dd * sizeof *C);
    if (p->key_feedback) {
        res.feedback_k = malloc(nl * per_layer * sizeof *res.feedback_k);
        if (!res.feedback_k) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_solve: feedback for %u layers", nl);
    }
    if (p->refit_rounds) {
        res.metric_k = malloc(nl * per_layer * sizeof *res.metric_k);
        if (!res.metric_k) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_solve: refit metric for %u layers", nl);
    }
    if (!res.rot_k || !res.rot_v || !res.eig_k || !res.eig_v || !res.clip_k || !res.clip_v || !res.err_k ||
        !res.err_v || !C)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_solve: results for %u layers", nl);
    int need_c = kind == OSCAR_ROTATION_OSCAR || kind == OSCAR_ROTATION_OSCAR_NO_PERM;
    for (uint32_t l = 0; l < nl; l++) {
        for (uint32_t g = 0; g < n_rot; g++) {
            uint32_t head = n_rot == 1 ? OSCAR_CALIB_ALL_HEADS : g;
            size_t at = (size_t)l * n_rot + g;
            for (int which = 0; which < 2; which++) {
                float *R = (which ? res.rot_v : res.rot_k) + at * dd;
                double *eig = (which ? res.eig_v : res.eig_k) + at * d;
                int c_spread_k = need_c && which == 0 && p->key_spread; /* C holds the spread C_K */
                if (c_spread_k) OSCAR_TRY(ovk_calib_spread_key_covariance(cal, l, head, C));
                else if (need_c) OSCAR_TRY(ovk_calib_covariance(cal, l, head, which ? v_target : OSCAR_CALIB_KEYS, C));
                OSCAR_TRY(ovk_rotation_build(kind, d, need_c ? C : NULL, R, eig));
                double dev;
                st = ovk_rotation_check(R, d, 1e-4, &dev);
                if (st != OSCAR_OK)
                    OSCAR_FAIL(st, "ovk_calib_solve: layer %u group %u %s rotation failed its check (%.3g)", l, g,
                               which ? "value" : "key", dev);
                if (which == 0 && (res.feedback_k || res.metric_k)) { /* from the spread C_K, whatever the rotation kind */
                    if (!c_spread_k) OSCAR_TRY(ovk_calib_spread_key_covariance(cal, l, head, C)); /* R's build left C as it was */
                    if (res.feedback_k) OSCAR_TRY(ovk_key_feedback_matrix(d, C, R, p->feedback_damp, res.feedback_k + at * dd));
                    if (res.metric_k) OSCAR_TRY(ovk_key_metric_matrix(d, C, R, p->feedback_damp, res.metric_k + at * dd));
                }
            }
        }
        size_t cl = (size_t)l * p->n_kv_head * d; /* this layer's centers */
        OSCAR_TRY(fit_layer_clip(cal, l, 0, res.rot_k + (size_t)l * per_layer,
                                 res.feedback_k ? res.feedback_k + (size_t)l * per_layer : NULL,
                                 res.metric_k ? res.metric_k + (size_t)l * per_layer : NULL, n_rot,
                                 center_k ? center_k + cl : NULL, &res.clip_k[l], &res.err_k[l]));
        OSCAR_TRY(fit_layer_clip(cal, l, 1, res.rot_v + (size_t)l * per_layer, NULL, NULL, n_rot,
                                 center_v ? center_v + cl : NULL, &res.clip_v[l], &res.err_v[l]));
        if (p->progress) p->progress(p->progress_user, "solve", l + 1, nl);
    }
    *out = res;
    memset(&res, 0, sizeof res);
fail:
    ovk_calib_result_free(&res);
    free(C);
    return st;
}
