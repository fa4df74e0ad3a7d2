/* Plain loops for the int8 block dot products; see q8_ref.h. */
#include <math.h>

#include "q8_ref.h"

void ovk_ref_q8_quantize(const float *x, size_t n_blocks, uint32_t *codes, float *scales)
{
    for (size_t b = 0; b < n_blocks; b++) {
        const float *xb = x + b * OSCAR_Q8_BLOCK;
        float amax = 0.0f;
        for (uint32_t i = 0; i < OSCAR_Q8_BLOCK; i++) amax = fmaxf(amax, fabsf(xb[i]));
        float d = amax * OSCAR_Q8_INV_127;
        scales[b] = d;
        for (uint32_t w = 0; w < OSCAR_Q8_WORDS; w++) {
            uint32_t word = 0;
            for (uint32_t j = 0; j < 4; j++) {
                int c = 0;
                if (d > 0.0f) {
                    float q = rintf(xb[4 * w + j] / d); /* round half to even, the default mode */
                    c = q > 127.0f ? 127 : q < -127.0f ? -127 : (int)q;
                }
                word |= (uint32_t)(c & 0xFF) << (8 * j);
            }
            codes[b * OSCAR_Q8_WORDS + w] = word;
        }
    }
}

void ovk_ref_q8_dot(const uint32_t *w_codes, const float *w_scales, const uint32_t *x_codes, const float *x_scales,
                    float *y, uint32_t n, uint32_t rows, uint32_t n_vec)
{
    uint32_t blocks = n / OSCAR_Q8_BLOCK;
    for (uint32_t v = 0; v < n_vec; v++)
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t *wc = w_codes + (size_t)r * (n / 4), *xc = x_codes + (size_t)v * (n / 4);
            double acc = 0.0;
            for (uint32_t b = 0; b < blocks; b++) {
                int32_t isum = 0;
                for (uint32_t i = b * OSCAR_Q8_BLOCK; i < (b + 1) * OSCAR_Q8_BLOCK; i++)
                    isum += ovk_ref_q8_code(wc, i) * ovk_ref_q8_code(xc, i);
                float d = w_scales[(size_t)r * blocks + b] * x_scales[(size_t)v * blocks + b];
                acc += (double)((float)isum * d);
            }
            y[(size_t)v * rows + r] = (float)acc;
        }
}

void ovk_ref_q8_dot_exact(const uint32_t *w_codes, const float *w_scales, const float *x, float *y, uint32_t n,
                          uint32_t rows, uint32_t n_vec)
{
    uint32_t blocks = n / OSCAR_Q8_BLOCK;
    for (uint32_t v = 0; v < n_vec; v++)
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t *wc = w_codes + (size_t)r * (n / 4);
            double acc = 0.0;
            for (uint32_t i = 0; i < n; i++)
                acc += (double)ovk_ref_q8_code(wc, i) * w_scales[(size_t)r * blocks + i / OSCAR_Q8_BLOCK] *
                       x[(size_t)v * n + i];
            y[(size_t)v * rows + r] = (float)acc;
        }
}
