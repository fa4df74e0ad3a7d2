/* Building and checking rotations R (float32 [d][d], y = x·R). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "calib.h"
#include "orthogonal.h"

/* R = U·B·H (= U·H·B for Sylvester H and bit-reversal B, see calib.h): position p
 * before the Hadamard holds the eigenvector of rank perm[p]; with no_perm, rank p. */
static oscar_status build_oscar(uint32_t d, const double *C, int no_perm, float *R, double *lambda)
{
    oscar_status st = OSCAR_OK;
    double *U = NULL;    /* [d][d] eigenvectors in columns, descending */
    double *lam = NULL;  /* [d] */
    double *H = NULL;    /* [d][d] */
    double *UB = NULL;   /* [d][d] U with columns permuted */
    double *out = NULL;  /* [d][d] UB·H */
    uint32_t *perm = NULL; /* [d] */
    size_t dd = (size_t)d * d;
    if (!C) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_rotation_build: OSCAR needs a target covariance C");
    U = malloc(dd * sizeof *U);
    lam = malloc(d * sizeof *lam);
    H = malloc(dd * sizeof *H);
    UB = malloc(dd * sizeof *UB);
    out = malloc(dd * sizeof *out);
    perm = malloc(d * sizeof *perm);
    if (!U || !lam || !H || !UB || !out || !perm)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_rotation_build: d = %u", d);
    OSCAR_TRY(ovk_hadamard_matrix(d, H));
    OSCAR_TRY(ovk_bit_reversal_permutation(d, perm));
    OSCAR_TRY(ovk_eigh_descending(d, C, U, lam));
    for (uint32_t r = 0; r < d; r++)
        for (uint32_t p = 0; p < d; p++)
            UB[(size_t)r * d + p] = U[(size_t)r * d + (no_perm ? p : perm[p])];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, UB, (int)d, H,
                (int)d, 0.0, out, (int)d);
    for (size_t i = 0; i < dd; i++) R[i] = (float)out[i];
    if (lambda) memcpy(lambda, lam, d * sizeof *lam);
fail:
    free(U);
    free(lam);
    free(H);
    free(UB);
    free(out);
    free(perm);
    return st;
}

oscar_status ovk_rotation_build(ovk_rotation_kind kind, uint32_t d, const double *C, float *R,
                                  double *lambda)
{
    oscar_status st = OSCAR_OK;
    if (!R) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_rotation_build: R is NULL");
    if (d == 0 || d > OSCAR_CALIB_MAX_HEAD_DIM || (d & (d - 1)) != 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT,
                   "ovk_rotation_build: head_dim %u is not a power of two in 1..%u", d, OSCAR_CALIB_MAX_HEAD_DIM);
    if (lambda) memset(lambda, 0, d * sizeof *lambda);
    switch (kind) {
    case OSCAR_ROTATION_IDENTITY:
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = 0; j < d; j++) R[(size_t)i * d + j] = i == j ? 1.0f : 0.0f;
        break;
    case OSCAR_ROTATION_HADAMARD: /* the runtime's int2-hadamard matrix itself */
        ovk_kv_hadamard(d, R);
        break;
    case OSCAR_ROTATION_OSCAR:
    case OSCAR_ROTATION_OSCAR_NO_PERM:
        OSCAR_TRY(build_oscar(d, C, kind == OSCAR_ROTATION_OSCAR_NO_PERM, R, lambda));
        break;
    default:
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_rotation_build: unknown rotation kind %d", (int)kind);
    }
fail:
    return st;
}

oscar_status ovk_rotation_check(const float *R, uint32_t d, double tol, double *max_dev)
{
    if (max_dev) *max_dev = INFINITY;
    if (!R || d == 0 || d > 4096)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_rotation_check: R is NULL or d = %u", d);
    ovk_rotation_error e = ovk_rotation_max_error(R, d);
    if (!e.finite)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "rotation entry R[%zu][%zu] is not finite (%g)",
                           e.first_bad / d, e.first_bad % d, (double)R[e.first_bad]);
    if (max_dev) *max_dev = e.max;
    if (!(e.max <= tol))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT,
                           "rotation is not orthogonal: |R^T R - I| = %.3g at [%u][%u], tolerance %.3g",
                           e.max, e.row, e.col, tol);
    return OSCAR_OK;
}

void ovk_rotate_rows(const float *x, uint32_t n, size_t x_stride, uint32_t d, const float *R,
                       int transpose, float *y)
{
    if (n == 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose ? CblasTrans : CblasNoTrans, (int)n, (int)d, (int)d,
                1.0f, x, (int)x_stride, R, (int)d, 0.0f, y, (int)d);
}
