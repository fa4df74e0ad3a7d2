/* Clip-ratio fitting: attention-weighted INT2 error per ratio on the reservoir rows, and the
 * attention-output error of the values on the kept sequences; rows quantized as the runtime
 * will (error feedback for keys, the least-squares refit with refit_rounds). */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "error.h"
#include "int2_quant.h"
#include "model_ref.h" /* ovk_rope_average */
#include "calib.h"

static int cmp_float_asc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The rows as the runtime stores them before quantizing, y = (x − c)·R, for n rows of x
 * [n][stride] (first d used; c: NULL or [d]), and ys = |y| of each row sorted ascending (the
 * clip thresholds of every ratio come from it). xc [n][d] is scratch for the centered rows. */
static void stored_rows(const float *x, uint32_t n, size_t stride, uint32_t d, const float *c, const float *R, float *xc,
                        float *y, float *ys)
{
    if (c) {
        for (uint32_t t = 0; t < n; t++)
            for (uint32_t j = 0; j < d; j++) xc[(size_t)t * d + j] = x[(size_t)t * stride + j] - c[j];
        x = xc, stride = d;
    }
    ovk_rotate_rows(x, n, stride, d, R, 0, y);
    for (size_t i = 0; i < (size_t)n * d; i++) ys[i] = fabsf(y[i]);
    for (uint32_t t = 0; t < n; t++) qsort(ys + (size_t)t * d, d, sizeof(float), cmp_float_asc);
}

/* One head's rows under a part of the clip grid: ratios first, first + stride, ... of the
 * grid, each quantized as the runtime stores it and scored (values: proxy-weighted squared
 * error; keys: eᵀMe) into acc[ratio]. Workers share only read-only inputs. */
typedef struct ratio_work {
    const float *y, *ys;      /* [n][d] rotated rows; |y| of each sorted ascending */
    const double *w, *M;      /* values: [n] weights; keys: [d][d] Rᵀ C_Q R */
    const float *F, *MR;      /* keys' feedback and refit metric, or NULL */
    const float *ratios;      /* [n_ratios] */
    uint32_t n, d, G, rounds, n_ratios, first, stride;
    int values;
    double *acc;              /* [n_ratios], this worker's ratios written */
    double *e;                /* [d] scratch: a row's quantization error */
    float *yq;                /* [d] scratch */
} ratio_work;

static void *ratio_errors(void *arg)
{
    ratio_work *k = arg;
    uint32_t d = k->d;
    for (uint32_t ri = k->first; ri < k->n_ratios; ri += k->stride) {
        double acc = 0.0;
        for (uint32_t t = 0; t < k->n; t++) {
            const float *yt = k->y + (size_t)t * d;
            double *e = k->e;
            float tau = ovk_int2_clip_threshold_sorted(k->ys + (size_t)t * d, d, k->ratios[ri]);
            if (k->rounds) ovk_int2_fake_quantize_refit(yt, d, tau, k->F, k->MR, k->rounds, k->yq); /* G = d */
            else if (k->F) ovk_int2_fake_quantize_feedback(yt, d, k->G, tau, k->F, k->yq);
            else ovk_int2_fake_quantize_tau(yt, d, k->G, tau, k->yq);
            for (uint32_t j = 0; j < d; j++) e[j] = (double)k->yq[j] - (double)yt[j];
            double s = 0.0;
            if (k->values) {
                for (uint32_t j = 0; j < d; j++) s += e[j] * e[j];
                acc += k->w[t] * s;
            } else {
                for (uint32_t i = 0; i < d; i++) {
                    double me = 0.0;
                    for (uint32_t j = 0; j < d; j++) me += k->M[(size_t)i * d + j] * e[j];
                    s += e[i] * me;
                }
                acc += s;
            }
        }
        k->acc[ri] = acc;
    }
    return NULL;
}

/* Workers for the clip curves: the machine's processors, at most CLIP_WORKERS. */
#define CLIP_WORKERS 8
static uint32_t clip_workers(uint32_t n_ratios)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t n = c < 1 ? 1 : c > CLIP_WORKERS ? CLIP_WORKERS : (uint32_t)c;
    return n < n_ratios ? n : n_ratios;
}

oscar_status ovk_calib_clip_curve(ovk_calib *cal, uint32_t layer, uint32_t head, int values, const float *R,
                                    const float *feedback, const float *metric, const float *center, const float *ratios,
                                    uint32_t n_ratios, double *err_sum, uint64_t *rows)
{
    oscar_status st = OSCAR_OK;
    double *CQ = NULL;  /* [d][d] C_Q of the head */
    double *Rd = NULL;  /* [d][d] R in float64 */
    double *T = NULL;   /* [d][d] C_Q·R */
    double *M = NULL;   /* [d][d] Rᵀ C_Q R: logit-error weight in the rotated basis */
    float *y = NULL;    /* [n][d] rotated reservoir rows */
    double *K = NULL;   /* values only: [n][d] the head's key rows in float64, for the weights */
    double *KC = NULL;  /* values only: [n][d] K·C_Q */
    double *w = NULL;   /* [n] proxy weights, mean 1 */
    float *ys = NULL;   /* [n][d] |y| of each row, sorted ascending */
    float *xc = NULL;   /* [n][d] centered reservoir rows */
    double *scratch = NULL; /* [workers][d] each worker's row error */
    float *yqs = NULL;      /* [workers][d] */
    double *acc = NULL;     /* [n_ratios] one head's error per ratio */
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    if (!p || !R || !ratios || !err_sum || !rows || n_ratios == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_clip_curve: NULL argument or no ratios");
    for (uint32_t i = 0; i < n_ratios; i++)
        if (!(ratios[i] > 0.0f && ratios[i] <= 1.0f))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_clip_curve: clip ratio %g outside (0, 1]", (double)ratios[i]);
    uint32_t d = p->head_dim, G = p->group_size, cap = p->reservoir_rows, rounds = p->refit_rounds;
    const float *F = values ? NULL : feedback, *MR = values ? NULL : metric; /* the refit's metric; NULL: identity */
    size_t dd = (size_t)d * d;
    CQ = malloc(dd * sizeof *CQ);
    Rd = malloc(dd * sizeof *Rd);
    T = malloc(dd * sizeof *T);
    M = malloc(dd * sizeof *M);
    y = malloc((size_t)cap * d * sizeof *y);
    K = values ? malloc((size_t)cap * d * sizeof *K) : NULL;
    KC = values ? malloc((size_t)cap * d * sizeof *KC) : NULL;
    w = malloc((size_t)cap * sizeof *w);
    ys = malloc((size_t)cap * d * sizeof *ys);
    xc = center ? malloc((size_t)cap * d * sizeof *xc) : NULL;
    int block_centers = !values && center && p->key_center_block; /* center: pre-RoPE key means */
    if (block_centers && !p->rope_theta)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_clip_curve: key_center_block needs rope_theta");
    uint32_t nw = clip_workers(n_ratios);
    scratch = malloc((size_t)nw * d * sizeof *scratch);
    yqs = malloc((size_t)nw * d * sizeof *yqs);
    acc = malloc(n_ratios * sizeof *acc);
    if (!CQ || !Rd || !T || !M || !y || (values && (!K || !KC)) || !w || !ys || (center && !xc) || !scratch || !yqs || !acc)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_clip_curve: %u rows", cap);
    for (size_t i = 0; i < dd; i++) Rd[i] = R[i];

    uint32_t h0 = head == OSCAR_CALIB_ALL_HEADS ? 0 : head;
    uint32_t h1 = head == OSCAR_CALIB_ALL_HEADS ? p->n_kv_head : head + 1;
    for (uint32_t h = h0; h < h1; h++) {
        const float *rk, *rv;
        uint32_t n;
        OSCAR_TRY(ovk_calib_covariance(cal, layer, h, OSCAR_CALIB_KEYS, CQ));
        OSCAR_TRY(ovk_calib_reservoir(cal, layer, h, &rk, &rv, &n));
        if (n == 0) continue;
        const float *x = values ? rv : rk, *c = center ? center + (size_t)h * d : NULL;
        if (block_centers) { /* each row less RoPE(mean) averaged over its block of positions */
            const uint32_t *pos = ovk_calib_reservoir_positions(cal, layer, h);
            uint32_t B = p->key_center_block;
            float cb[OSCAR_CALIB_MAX_HEAD_DIM];
            for (uint32_t t = 0; t < n; t++) {
                ovk_rope_average(c, d, p->rope_n_rot, p->rope_neox ? OSCAR_ROPE_NEOX : OSCAR_ROPE_NORMAL, p->rope_theta,
                                   pos[t] / B * B, (pos[t] / B + 1) * B, cb);
                for (uint32_t j = 0; j < d; j++) xc[(size_t)t * d + j] = x[(size_t)t * d + j] - cb[j];
            }
            x = xc, c = NULL;
        }
        stored_rows(x, n, d, d, c, R, xc, y, ys);
        if (values) {
            /* w_t = k_t C_Q k_tᵀ, normalised to mean 1 over this head's rows */
            double mean = 0.0;
            for (size_t x = 0; x < (size_t)n * d; x++) K[x] = rk[x];
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)d, (int)d, 1.0, K, (int)d, CQ, (int)d,
                        0.0, KC, (int)d);
            for (uint32_t t = 0; t < n; t++) {
                double s = 0.0;
                for (uint32_t j = 0; j < d; j++) s += KC[(size_t)t * d + j] * K[(size_t)t * d + j];
                w[t] = s > 0.0 ? s : 0.0;
                mean += w[t];
            }
            mean /= n;
            for (uint32_t t = 0; t < n; t++) w[t] = mean > 0.0 ? w[t] / mean : 1.0;
        } else {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, CQ, (int)d, Rd, (int)d,
                        0.0, T, (int)d);
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, Rd, (int)d, T, (int)d,
                        0.0, M, (int)d);
        }
        /* the grid's ratios over the workers (the calling thread is worker 0), each ratio's
         * error summed by one worker in row order */
        ratio_work work[CLIP_WORKERS];
        pthread_t tid[CLIP_WORKERS];
        int started[CLIP_WORKERS] = { 0 };
        for (uint32_t k = 0; k < nw; k++) {
            work[k] = (ratio_work){ y, ys, w, M, F, MR, ratios, n, d, G, rounds, n_ratios, k, nw, values, acc,
                                    scratch + (size_t)k * d, yqs + (size_t)k * d };
            if (k > 0) started[k] = pthread_create(&tid[k], NULL, ratio_errors, &work[k]) == 0;
        }
        ratio_errors(&work[0]);
        for (uint32_t k = 1; k < nw; k++) {
            if (started[k]) pthread_join(tid[k], NULL);
            else ratio_errors(&work[k]); /* no thread: its share here */
        }
        for (uint32_t ri = 0; ri < n_ratios; ri++) err_sum[ri] += acc[ri];
        *rows += n;
    }
fail:
    free(CQ);
    free(Rd);
    free(T);
    free(M);
    free(y);
    free(K);
    free(KC);
    free(w);
    free(ys);
    free(xc);
    free(scratch);
    free(yqs);
    free(acc);
    return st;
}

oscar_status ovk_calib_clip_curve_output(ovk_calib *cal, uint32_t layer, uint32_t head, const float *R,
                                           const float *center, const float *ratios, uint32_t n_ratios,
                                           double *err_sum, uint64_t *rows)
{
    oscar_status st = OSCAR_OK;
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    float *xc = NULL; /* [T][d] centered values of one head */
    float *y = NULL;  /* [T][d] rotated */
    float *ys = NULL; /* [T][d] |y| of each row, sorted ascending */
    float *E = NULL;  /* [T][d] quantization error ŷ − y (0 for the sink) */
    float *P = NULL;  /* [group heads][kept queries][T] softmax weights over the INT2 tokens */
    float *O = NULL;  /* [group heads][kept queries][d] P·E */
    if (!p || !R || !ratios || !err_sum || !rows || n_ratios == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_clip_curve_output: NULL argument or no ratios");
    if (!ovk_calib_has_output_fit(cal))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "ovk_calib_clip_curve_output: no sequence was kept (vfit_sequences)");
    uint32_t d = p->head_dim, G = p->group_size, T = p->max_seq_len, nkv = p->n_kv_head, nh = p->n_head;
    uint32_t grp = nh / nkv, q_cap = T / p->vfit_query_stride + 1;
    xc = malloc((size_t)T * d * sizeof *xc);
    y = malloc((size_t)T * d * sizeof *y);
    ys = malloc((size_t)T * d * sizeof *ys);
    E = malloc((size_t)T * d * sizeof *E);
    P = malloc((size_t)grp * q_cap * T * sizeof *P);
    O = malloc((size_t)grp * q_cap * d * sizeof *O);
    if (!xc || !y || !ys || !E || !P || !O) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_clip_curve_output");
    const float scale = 1.0f / sqrtf((float)d);
    uint32_t h0 = head == OSCAR_CALIB_ALL_HEADS ? 0 : head;
    uint32_t h1 = head == OSCAR_CALIB_ALL_HEADS ? nkv : head + 1;
    for (uint32_t s = 0; s < p->vfit_sequences; s++) {
        const float *k, *v, *q;
        const uint32_t *qpos;
        uint32_t n, nq;
        OSCAR_TRY(ovk_calib_kept_sequence(cal, layer, s, &k, &v, &n, &q, &qpos, &nq));
        if (n == 0 || nq == 0) continue;
        for (uint32_t h = h0; h < h1; h++) {
            /* P: the exact causal softmax of each kept query of the group's heads over the real
             * keys (rows [i − h·grp][a]), then only the weights of its INT2 tokens kept; the rows
             * of queries that see none stay 0 and are not counted */
            uint32_t m = 0; /* queries that see an INT2 token */
            for (uint32_t g = 0; g < grp; g++) {
                float *Pg = P + (size_t)g * nq * n;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)n, (int)d, scale,
                            q + (size_t)(h * grp + g) * d, (int)(nh * d), k + (size_t)h * d, (int)(nkv * d), 0.0f, Pg, (int)n);
                for (uint32_t a = 0; a < nq; a++) {
                    float *row = Pg + (size_t)a * n;
                    ovk_softmax_causal_row(row, qpos[a] + 1 < n ? qpos[a] + 1 : n, n);
                    uint32_t int2_end = qpos[a] > p->vfit_recent ? qpos[a] - p->vfit_recent : 0; /* INT2: sink .. int2_end - 1 */
                    m += int2_end > p->vfit_sink;
                    for (uint32_t j = 0; j < n; j++)
                        if (j < p->vfit_sink || j >= int2_end) row[j] = 0.0f;
                }
            }
            if (m == 0) continue;
            /* the head's values as the runtime stores them: (v − μ)·R */
            stored_rows(v + (size_t)h * d, n, (size_t)nkv * d, d, center ? center + (size_t)h * d : NULL, R, xc, y, ys);
            for (uint32_t ri = 0; ri < n_ratios; ri++) {
                for (uint32_t j = 0; j < n; j++) {
                    float *ej = E + (size_t)j * d;
                    const float *yj = y + (size_t)j * d;
                    if (j < p->vfit_sink) { /* weight 0 in P */
                        for (uint32_t e = 0; e < d; e++) ej[e] = 0.0f;
                        continue;
                    }
                    float tau = ovk_int2_clip_threshold_sorted(ys + (size_t)j * d, d, ratios[ri]);
                    if (p->refit_rounds) ovk_int2_fake_quantize_refit(yj, d, tau, NULL, NULL, p->refit_rounds, ej); /* G = d */
                    else ovk_int2_fake_quantize_tau(yj, d, G, tau, ej);
                    for (uint32_t e = 0; e < d; e++) ej[e] -= yj[e];
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(grp * nq), (int)d, (int)n, 1.0f, P, (int)n, E,
                            (int)d, 0.0f, O, (int)d);
                double acc = 0.0;
                for (size_t x = 0; x < (size_t)grp * nq * d; x++) acc += (double)O[x] * O[x];
                err_sum[ri] += acc;
            }
            *rows += m;
        }
    }
fail:
    free(xc);
    free(y);
    free(ys);
    free(E);
    free(P);
    free(O);
    return st;
}

uint32_t ovk_calib_clip_grid(const ovk_calib_params *p, float *ratios, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; n < cap; i++) {
        double r = (double)p->clip_min + (double)i * (double)p->clip_step;
        if (r > (double)p->clip_max + 0.5 * (double)p->clip_step) break;
        if (r > (double)p->clip_max) r = p->clip_max;
        ratios[n++] = (float)r;
    }
    return n;
}

oscar_status ovk_calib_fit_clip(ovk_calib *cal, uint32_t layer, uint32_t head, int values, const float *R,
                                  const float *center, float *ratio, double *err)
{
    oscar_status st = OSCAR_OK;
    float *ratios = NULL; /* [OSCAR_CALIB_CLIP_GRID_MAX] */
    double *sums = NULL;  /* [OSCAR_CALIB_CLIP_GRID_MAX] */
    double *C = NULL;     /* [d][d] spread C_K, for the keys' refit metric */
    float *metric = NULL; /* [d][d] the keys' refit metric (refit_rounds > 0), else NULL */
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    if (!p || !ratio || !R) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_fit_clip: NULL argument");
    ratios = malloc(OSCAR_CALIB_CLIP_GRID_MAX * sizeof *ratios);
    sums = calloc(OSCAR_CALIB_CLIP_GRID_MAX, sizeof *sums);
    if (!ratios || !sums) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_fit_clip");
    if (!values && p->refit_rounds) {
        size_t dd = (size_t)p->head_dim * p->head_dim;
        C = malloc(dd * sizeof *C);
        metric = malloc(dd * sizeof *metric);
        if (!C || !metric) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_fit_clip");
        OSCAR_TRY(ovk_calib_spread_key_covariance(cal, layer, head, C));
        OSCAR_TRY(ovk_key_metric_matrix(p->head_dim, C, R, p->feedback_damp, metric));
    }
    uint32_t n = ovk_calib_clip_grid(p, ratios, OSCAR_CALIB_CLIP_GRID_MAX);
    uint64_t rows = 0;
    OSCAR_TRY(ovk_calib_clip_curve(cal, layer, head, values, R, NULL, metric, center, ratios, n, sums, &rows));
    if (rows == 0) OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "ovk_calib_fit_clip: layer %u has no sample rows", layer);
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (sums[i] <= sums[best]) best = i;
    *ratio = ratios[best];
    if (err) *err = sums[best] / (double)rows;
fail:
    free(ratios);
    free(sums);
    free(C);
    free(metric);
    return st;
}
