/* Weight matrices for the product tests; see test_weights.h. */
#include <stdlib.h>

#include "ggml_types.h"
#include "half.h"
#include "test_util.h"
#include "test_weights.h"

/* Byte offsets of the fp16 scale fields in one block of `type` (-1 ends the list). */
static const int *scale_fields(uint32_t type)
{
    static const int q0[] = { 0, -1 }, q1[] = { 0, 2, -1 }, q6k[] = { 208, -1 }, none[] = { -1 };
    switch (type) {
    case OSCAR_GGML_TYPE_Q4_0:
    case OSCAR_GGML_TYPE_Q8_0: return q0;
    case OSCAR_GGML_TYPE_Q4_1:
    case OSCAR_GGML_TYPE_Q4_K:
    case OSCAR_GGML_TYPE_Q5_K: return q1;
    case OSCAR_GGML_TYPE_Q6_K: return q6k;
    default: return none;
    }
}

uint8_t *test_make_weights(uint32_t type, uint32_t rows, uint32_t cols, size_t *bytes)
{
    uint64_t row_bytes;
    if (ovk_ggml_row_size(type, cols, &row_bytes) != OSCAR_OK) return NULL;
    size_t total = (size_t)row_bytes * rows;
    *bytes = (total + 3) & ~(size_t)3;
    uint8_t *w = calloc(*bytes, 1);
    float *row = malloc(cols * sizeof *row);
    if (!w || !row) { free(w); free(row); return NULL; }
    const ovk_ggml_type_info *ti = ovk_ggml_type_get(type);
    if (ti->block_size == 1) {
        for (uint32_t r = 0; r < rows; r++) {
            for (uint32_t c = 0; c < cols; c++) row[c] = test_rng_normal();
            ovk_ggml_quantize_row(type, row, w + r * row_bytes, cols);
        }
    } else {
        for (size_t i = 0; i < total; i++) w[i] = (uint8_t)test_rng_u32();
        const int *f = scale_fields(type);
        for (size_t b = 0; b < total / ti->type_size; b++) {
            for (int k = 0; f[k] >= 0; k++) {
                float s = (0.002f + 0.02f * test_rng_uniform()) * (test_rng_u32() & 1 ? 1.0f : -1.0f);
                uint16_t h = ovk_f32_to_f16(s);
                w[b * ti->type_size + f[k]] = (uint8_t)h;
                w[b * ti->type_size + f[k] + 1] = (uint8_t)(h >> 8);
            }
        }
    }
    free(row);
    return w;
}

