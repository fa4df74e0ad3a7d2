/* Plain loops for the int8 decode mat-vec; see matvec_q8_ref.h. */
#include "matvec_q8_ref.h"

#include "ggml_types.h"
#include "half.h"
#include "q8_ref.h"

static float f16_at(const uint8_t *p) { return ovk_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Weight code of element i (0..31) of the block at p: the signed byte, or the nibble 0..15. */
static int w_code(uint32_t type, const uint8_t *p, uint32_t i)
{
    if (type == OSCAR_GGML_TYPE_Q8_0) return (int8_t)p[2 + i];
    const uint8_t *qs = p + (type == OSCAR_GGML_TYPE_Q4_1 ? 4 : 2);
    return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
}

oscar_status ovk_ref_mul_mat_vec_q8(uint32_t type, const void *w, const uint32_t *x_codes, const float *x_scales,
                                      float *y, uint32_t rows, uint32_t cols)
{
    uint32_t bytes = type == OSCAR_GGML_TYPE_Q8_0 ? 34 : type == OSCAR_GGML_TYPE_Q4_1 ? 20 : 18;
    if ((type != OSCAR_GGML_TYPE_Q8_0 && type != OSCAR_GGML_TYPE_Q4_1 && type != OSCAR_GGML_TYPE_Q4_0) || cols % 32)
        return OSCAR_ERROR_INVALID_ARGUMENT;
    uint32_t nb = cols / 32;
    for (uint32_t r = 0; r < rows; r++) {
        double acc = 0.0;
        for (uint32_t b = 0; b < nb; b++) {
            const uint8_t *p = (const uint8_t *)w + ((size_t)r * nb + b) * bytes;
            int32_t s = 0, csum = 0;
            for (uint32_t i = 0; i < 32; i++) {
                int c = ovk_ref_q8_code(x_codes, (size_t)b * 32 + i);
                s += w_code(type, p, i) * c;
                csum += c;
            }
            float xd = x_scales[b], term;
            if (type == OSCAR_GGML_TYPE_Q4_0) term = (float)(s - 8 * csum) * (f16_at(p) * xd);
            else if (type == OSCAR_GGML_TYPE_Q4_1) term = (float)s * (f16_at(p) * xd) + (float)csum * (f16_at(p + 2) * xd);
            else term = (float)s * (f16_at(p) * xd);
            acc += term;
        }
        y[r] = (float)acc;
    }
    return OSCAR_OK;
}
