/* Error-feedback matrices for the key codes (oscar_kv_experimental.key_feedback) through LAPACKE, the
 * keys' metric for the least-squares refit, and the query covariance spread over the positions
 * of a longer context. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "calib.h"

/* *out = M = Rᵀ C R + damp · tr(Rᵀ C R)/d · I, float64 [d][d] allocated here (the caller frees
 * it, also on failure): the keys' logit-error weight in the rotated basis, damped, which the
 * feedback and the refit's metric are both built from. Checks the arguments; `who` names the
 * caller in the error messages. */
static oscar_status damped_metric(uint32_t d, const double *C, const float *R, double damp, const void *dst, double **out,
                                  const char *who)
{
    oscar_status st = OSCAR_OK;
    double *T = NULL; /* [d][d] C·R */
    *out = NULL;
    if (d == 0 || d > 4096 || !C || !R || !dst || !(damp > 0.0))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "%s: d = %u, damping %g or a NULL pointer", who, d, damp);
    T = calloc((size_t)d * d, sizeof *T);
    double *M = *out = malloc((size_t)d * d * sizeof *M);
    if (!T || !M) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "%s: %u x %u", who, d, d);
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t k = 0; k < d; k++) {
            double c = C[(size_t)i * d + k];
            for (uint32_t j = 0; j < d; j++) T[(size_t)i * d + j] += c * R[(size_t)k * d + j];
        }
    double trace = 0.0;
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) {
            double s = 0.0;
            for (uint32_t k = 0; k < d; k++) s += (double)R[(size_t)k * d + i] * T[(size_t)k * d + j];
            M[(size_t)i * d + j] = s;
            if (i == j) trace += s;
        }
    if (!(trace > 0.0) || !isfinite(trace))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "%s: the query covariance has trace %g", who, trace);
    for (uint32_t i = 0; i < d; i++) M[(size_t)i * d + i] += damp * trace / d;
fail:
    free(T);
    return st;
}

oscar_status ovk_key_feedback_matrix(uint32_t d, const double *C, const float *R, double damp, float *F)
{
    double *M = NULL; /* [d][d] Rᵀ C R + damping, then its inverse, then that inverse's upper Cholesky factor */
    oscar_status st = damped_metric(d, C, R, damp, F, &M, "ovk_key_feedback_matrix");
    if (st != OSCAR_OK) goto fail;
    lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    if (info == 0) info = LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    for (uint32_t i = 0; info == 0 && i < d; i++) /* dpotri leaves the upper triangle: mirror it */
        for (uint32_t j = 0; j < i; j++) M[(size_t)i * d + j] = M[(size_t)j * d + i];
    if (info == 0) info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    if (info != 0)
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "ovk_key_feedback_matrix: LAPACK Cholesky failed (info %d)", (int)info);
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++)
            F[(size_t)i * d + j] = j > i ? (float)(M[(size_t)i * d + j] / M[(size_t)i * d + i]) : 0.0f;
fail:
    free(M);
    return st;
}

oscar_status ovk_key_metric_matrix(uint32_t d, const double *C, const float *R, double damp, float *metric)
{
    double *M = NULL; /* [d][d] Rᵀ C R + damping */
    oscar_status st = damped_metric(d, C, R, damp, metric, &M, "ovk_key_metric_matrix");
    if (st != OSCAR_OK) goto fail;
    double diag = 0.0;
    for (uint32_t i = 0; i < d; i++) diag += M[(size_t)i * d + i];
    double scale = (double)d / diag; /* mean diagonal 1: the refit's fp32 sums stay near the row's own scale */
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) {
            /* the mean of both triangles, so the float matrix is exactly symmetric; no
             * denormals for a GPU that flushes them */
            double x = 0.5 * (M[(size_t)i * d + j] + M[(size_t)j * d + i]) * scale;
            metric[(size_t)i * d + j] = fabs(x) < 1e-30 ? 0.0f : (float)x;
        }
fail:
    free(M);
    return st;
}

uint32_t ovk_calib_key_rope_span(const ovk_calib_params *p)
{
    return p && p->rope_theta && p->rope_n_rot >= 2 && p->feedback_span >= 2 ? p->feedback_span : 0;
}

oscar_status ovk_calib_spread_key_covariance(ovk_calib *cal, uint32_t layer, uint32_t head, double *C)
{
    const ovk_calib_params *p = ovk_calib_get_params(cal);
    oscar_status st = ovk_calib_covariance(cal, layer, head, OSCAR_CALIB_KEYS, C);
    uint32_t span = ovk_calib_key_rope_span(p);
    if (st == OSCAR_OK && span)
        ovk_rope_spread_covariance(p->head_dim, p->rope_n_rot, p->rope_neox, p->rope_theta, span, C);
    return st;
}

/* (1/n) Σ_{p=0}^{n-1} R(ωp) = amp · R(ω(n−1)/2): the cosine and sine of that average. */
static void mean_rotation(double w, uint32_t n, double *c, double *s)
{
    double s2 = sin(0.5 * w), amp = fabs(s2) < 1e-12 ? 1.0 : sin(0.5 * n * w) / (n * s2), mid = 0.5 * w * (n - 1.0);
    *c = amp * cos(mid);
    *s = amp * sin(mid);
}

void ovk_rope_spread_covariance(uint32_t d, uint32_t n_rot, int neox, const float *theta, uint32_t span, double *C)
{
    if (span < 2 || n_rot < 2) return;
    uint32_t half = n_rot / 2;
    /* dims of pair i; a dim past n_rot is its own "pair" with angle 0 */
    for (uint32_t i = 0; i < half; i++) {
        uint32_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        for (uint32_t j = 0; j < half; j++) {
            uint32_t j0 = neox ? j : 2 * j, j1 = neox ? j + half : 2 * j + 1;
            /* block B = [[p, q], [r, t]] = (αI + βJ) + (γK + ηL); under R(a)·B·R(b)ᵀ the first
             * part turns by a − b, the second by a + b (K, L reflections) */
            double p = C[(size_t)i0 * d + j0], q = C[(size_t)i0 * d + j1], r = C[(size_t)i1 * d + j0], t = C[(size_t)i1 * d + j1];
            double al = 0.5 * (p + t), be = 0.5 * (r - q), ga = 0.5 * (p - t), et = 0.5 * (q + r);
            double cm, sm, cp, sp;
            mean_rotation((double)theta[i] - (double)theta[j], span, &cm, &sm);
            mean_rotation((double)theta[i] + (double)theta[j], span, &cp, &sp);
            /* (αI + βJ)·R(m): a scaled rotation by m */
            double a11 = al * cm - be * sm, a21 = be * cm + al * sm;
            /* R(m')·(γK + ηL) */
            double b11 = cp * ga - sp * et, b12 = cp * et + sp * ga;
            C[(size_t)i0 * d + j0] = a11 + b11;
            C[(size_t)i0 * d + j1] = -a21 + b12;
            C[(size_t)i1 * d + j0] = a21 + b12;
            C[(size_t)i1 * d + j1] = a11 - b11;
        }
        for (uint32_t k = n_rot; k < d; k++) { /* pair i against an unrotated dim: the pair's side turns */
            double c, sn;
            mean_rotation(theta[i], span, &c, &sn);
            double x = C[(size_t)i0 * d + k], y = C[(size_t)i1 * d + k];
            C[(size_t)i0 * d + k] = C[(size_t)k * d + i0] = c * x - sn * y;
            C[(size_t)i1 * d + k] = C[(size_t)k * d + i1] = sn * x + c * y;
        }
    }
}
