/* Plain-C references of the forward-pass kernels; see ops_ref.h for the contracts. */
#include <math.h>
#include <stdlib.h>

#include "error.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_ref.h"

/* f to fp16 as the cooperative-matrix kernel rounds it: clamped to the fp16 range, then to nearest. */
static float round_f16_clamped(float f)
{
    return ovk_round_f16(f > 65504.0f ? 65504.0f : f < -65504.0f ? -65504.0f : f);
}

/* The product, with W's dequantized values and x rounded to fp16 first when f16 is set. */
static oscar_status mul_mat(uint32_t type, const void *w, const float *x, float *y, uint32_t rows, uint32_t cols,
                            uint32_t n, int f16)
{
    oscar_status st = OSCAR_OK;
    float *row = NULL, *xr = NULL;
    uint64_t row_bytes;
    OSCAR_TRY(ovk_ggml_row_size(type, cols, &row_bytes));
    row = malloc((size_t)cols * sizeof *row + 1);
    if (!row) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "mul_mat reference: %u floats", cols);
    if (f16) {
        xr = malloc((size_t)n * cols * sizeof *xr + 1);
        if (!xr) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "mul_mat reference: %u x %u floats", n, cols);
        for (size_t i = 0; i < (size_t)n * cols; i++) xr[i] = round_f16_clamped(x[i]);
        x = xr;
    }
    for (uint32_t r = 0; r < rows; r++) {
        OSCAR_TRY(ovk_ggml_dequantize_row(type, (const uint8_t *)w + r * row_bytes, row, cols));
        if (f16)
            for (uint32_t c = 0; c < cols; c++) row[c] = round_f16_clamped(row[c]);
        for (uint32_t t = 0; t < n; t++) {
            const float *xt = x + (size_t)t * cols;
            double s = 0.0;
            for (uint32_t c = 0; c < cols; c++) s += (double)row[c] * (double)xt[c];
            y[(size_t)t * rows + r] = (float)s;
        }
    }
fail:
    free(row);
    free(xr);
    return st;
}

oscar_status ovk_ref_mul_mat(uint32_t type, const void *w, const float *x, float *y,
                               uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat(type, w, x, y, rows, cols, n, 0);
}

oscar_status ovk_ref_mul_mat_f16(uint32_t type, const void *w, const float *x, float *y,
                                   uint32_t rows, uint32_t cols, uint32_t n)
{
    return mul_mat(type, w, x, y, rows, cols, n, 1);
}

oscar_status ovk_ref_get_rows(uint32_t type, const void *w, const uint32_t *ids, float *out,
                                uint32_t cols, uint32_t n)
{
    oscar_status st = OSCAR_OK;
    uint64_t row_bytes;
    OSCAR_TRY(ovk_ggml_row_size(type, cols, &row_bytes));
    for (uint32_t t = 0; t < n; t++)
        OSCAR_TRY(ovk_ggml_dequantize_row(type, (const uint8_t *)w + ids[t] * row_bytes, out + (size_t)t * cols, cols));
fail:
    return st;
}

void ovk_ref_rms_norm(const float *x, const float *w, float *y, uint32_t dim, uint32_t n_rows, float eps)
{
    for (uint32_t r = 0; r < n_rows; r++) {
        const float *xr = x + (size_t)r * dim;
        double ss = 0.0;
        for (uint32_t i = 0; i < dim; i++) ss += (double)xr[i] * (double)xr[i];
        double s = 1.0 / sqrt(ss / dim + (double)eps);
        for (uint32_t i = 0; i < dim; i++) y[(size_t)r * dim + i] = (float)((double)xr[i] * s * (double)w[i]);
    }
}

void ovk_ref_rope(const float *x, const int32_t *pos, float *y, uint32_t head_dim, uint32_t n_heads,
                    uint32_t n_tok, uint32_t n_rot, int neox, double freq_base, double freq_scale,
                    const float *factors)
{
    for (uint32_t t = 0; t < n_tok; t++) {
        for (uint32_t h = 0; h < n_heads; h++) {
            size_t base = ((size_t)t * n_heads + h) * head_dim;
            for (uint32_t i = n_rot; i < head_dim; i++) y[base + i] = x[base + i];
            for (uint32_t i = 0; i < n_rot / 2; i++) {
                double theta = (double)pos[t] * freq_scale * pow(freq_base, -2.0 * i / n_rot);
                if (factors) theta /= factors[i];
                uint32_t i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
                double x0 = x[base + i0], x1 = x[base + i1];
                y[base + i0] = (float)(x0 * cos(theta) - x1 * sin(theta));
                y[base + i1] = (float)(x0 * sin(theta) + x1 * cos(theta));
            }
        }
    }
}

void ovk_ref_swiglu(const float *gate, const float *up, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double g = gate[i];
        y[i] = (float)(g / (1.0 + exp(-g)) * (double)up[i]);
    }
}

void ovk_ref_add(const float *a, const float *b, float *y, size_t n, size_t nb)
{
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i % nb];
}

void ovk_ref_scale(const float *x, float s, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] * s;
}

uint32_t ovk_ref_argmax(const float *x, size_t n)
{
    size_t best = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) continue;
        if (!found || x[i] > x[best]) { best = i; found = 1; }
    }
    return (uint32_t)best;
}
