/* Symmetric eigendecomposition through LAPACKE_dsyevd, sorted descending. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "calib.h"

oscar_status ovk_eigh_descending(uint32_t d, const double *C, double *U, double *lambda)
{
    oscar_status st = OSCAR_OK;
    double *a = NULL; /* [d][d] LAPACK work copy; eigenvectors in columns on return, ascending */
    double *w = NULL; /* [d] eigenvalues, ascending */
    if (d == 0 || d > 4096 || !C || !U || !lambda)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_eigh_descending: d = %u or a NULL pointer", d);
    for (size_t i = 0; i < (size_t)d * d; i++)
        if (!isfinite(C[i]))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_eigh_descending: C[%zu][%zu] is not finite",
                       i / d, i % d);
    a = malloc((size_t)d * d * sizeof *a);
    w = malloc((size_t)d * sizeof *w);
    if (!a || !w) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_eigh_descending: %u x %u", d, d);
    memcpy(a, C, (size_t)d * d * sizeof *a);
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)d, a, (lapack_int)d, w);
    if (info != 0)
        OSCAR_FAIL(info < 0 ? OSCAR_ERROR_INVALID_ARGUMENT : OSCAR_ERROR_UNSUPPORTED,
                   "LAPACKE_dsyevd failed (info %d) on a %u x %u covariance", (int)info, d, d);
    for (uint32_t i = 0; i < d; i++) {
        uint32_t src = d - 1 - i; /* descending */
        lambda[i] = w[src];
        /* sign: largest-magnitude component positive (first one on ties) */
        double best = 0.0;
        for (uint32_t r = 0; r < d; r++) {
            double x = a[(size_t)r * d + src];
            if (fabs(x) > fabs(best)) best = x;
        }
        double sgn = best < 0.0 ? -1.0 : 1.0;
        for (uint32_t r = 0; r < d; r++) U[(size_t)r * d + i] = sgn * a[(size_t)r * d + src];
    }
fail:
    free(a);
    free(w);
    return st;
}
