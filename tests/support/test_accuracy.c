#include <stdio.h>

#include "test_accuracy.h"
#include "test_util.h"

int test_check_accuracy(const char *what, const float *got, const float *faithful, const float *exact, size_t n)
{
    double tight = test_nse(got, faithful, n);
    double loose = exact ? test_nse(got, exact, n) : 0.0;
    int ok_tight = tight <= TEST_NSE_FAITHFUL, ok_loose = loose <= TEST_NSE_EXACT;
    printf("%s: NSE %.3g against the rounding-faithful reference (<= %g)", what, tight, TEST_NSE_FAITHFUL);
    if (exact) printf(", %.3g against the exact one (<= %g)", loose, TEST_NSE_EXACT);
    printf("\n");
    CHECK_MSG(ok_tight, "%s: NSE %.3g against the rounding-faithful reference exceeds %g", what, tight, TEST_NSE_FAITHFUL);
    CHECK_MSG(ok_loose, "%s: NSE %.3g against the exact reference exceeds %g", what, loose, TEST_NSE_EXACT);
    return ok_tight && ok_loose;
}
