/* Error-feedback matrices for the key codes (oscar_kv_params.key_feedback) through LAPACKE. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "oscar_calib.h"

oscar_status oscar_key_feedback_matrix(uint32_t d, const double *C, const float *R, double damp, float *F)
{
    oscar_status st = OSCAR_OK;
    double *T = NULL; /* [d][d] C·R */
    double *M = NULL; /* [d][d] Rᵀ C R + damping, then its inverse, then that inverse's upper Cholesky factor */
    if (d == 0 || d > 4096 || !C || !R || !F || !(damp > 0.0))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_key_feedback_matrix: d = %u, damping %g or a NULL pointer", d, damp);
    T = calloc((size_t)d * d, sizeof *T);
    M = calloc((size_t)d * d, sizeof *M);
    if (!T || !M) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "oscar_key_feedback_matrix: %u x %u", d, d);
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
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_key_feedback_matrix: the query covariance has trace %g", trace);
    for (uint32_t i = 0; i < d; i++) M[(size_t)i * d + i] += damp * trace / d;
    lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    if (info == 0) info = LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    for (uint32_t i = 0; info == 0 && i < d; i++) /* dpotri leaves the upper triangle: mirror it */
        for (uint32_t j = 0; j < i; j++) M[(size_t)i * d + j] = M[(size_t)j * d + i];
    if (info == 0) info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, M, (lapack_int)d);
    if (info != 0)
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "oscar_key_feedback_matrix: LAPACK Cholesky failed (info %d)", (int)info);
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++)
            F[(size_t)i * d + j] = j > i ? (float)(M[(size_t)i * d + j] / M[(size_t)i * d + i]) : 0.0f;
fail:
    free(T);
    free(M);
    return st;
}
