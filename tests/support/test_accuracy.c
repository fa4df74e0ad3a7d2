#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "q8_ref.h"
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

size_t test_q8_blocks_off(const float *x, size_t n, const uint32_t *codes, const float *scales)
{
    uint32_t *codes_ref = malloc(n);
    float *scales_ref = malloc(n / 8);
    size_t off = 0;
    CHECK(codes_ref && scales_ref);
    if (codes_ref && scales_ref) {
        ovk_ref_q8_quantize(x, n / 32, codes_ref, scales_ref);
        for (size_t b = 0; b < n / 32; b++) off += memcmp(&scales[b], &scales_ref[b], 4) != 0;
        for (size_t i = 0; i < n; i++) off += abs(ovk_ref_q8_code(codes, i) - ovk_ref_q8_code(codes_ref, i)) > 1;
    }
    free(codes_ref), free(scales_ref);
    return off;
}
