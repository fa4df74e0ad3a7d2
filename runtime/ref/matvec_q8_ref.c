/* Plain loops for the int8 decode mat-vec; see matvec_q8_ref.h. */
#include "matvec_q8_ref.h"

#include "ggml_types.h"
#include "half.h"
#include "q8_ref.h"

static float f16_at(const uint8_t *p) { return ovk_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Weight code of element i (0..31) of the 32-element block at p: the signed byte, or the nibble 0..15. */
static int w_code(uint32_t type, const uint8_t *p, uint32_t i)
{
    if (type == OSCAR_GGML_TYPE_Q8_0) return (int8_t)p[2 + i];
    const uint8_t *qs = p + (type == OSCAR_GGML_TYPE_Q4_1 ? 4 : 2);
    return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
}

/* Code (0..15, Q5_K 0..31) of element i (0..255) of the K-quant block at p, and sub-block s's
 * 6-bit scale and min (ggml_types.h spells both out). */
static int k_code(uint32_t type, const uint8_t *p, uint32_t i)
{
    uint32_t c = i / 64, l = i % 32, high = (i / 32) % 2;
    const uint8_t *qs = p + (type == OSCAR_GGML_TYPE_Q5_K ? 48 : 16);
    int q = high ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
    if (type == OSCAR_GGML_TYPE_Q5_K) q += ((p[16 + l] >> (2 * c + high)) & 1) << 4;
    return q;
}

static void k_scale_min(const uint8_t *scales, uint32_t s, int *sc, int *m)
{
    if (s < 4) {
        *sc = scales[s] & 63;
        *m = scales[s + 4] & 63;
    } else {
        *sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4;
        *m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4;
    }
}

/* The term of x block j (0..7) of the Q6_K block at p: its two halves of 16 elements. */
static float q6k_term(const uint8_t *p, uint32_t j, const uint32_t *x_codes, size_t x0, float xd)
{
    uint32_t h = j / 4, t = j % 4;
    float d = f16_at(p + 208), term = 0.0f;
    for (uint32_t half = 0; half < 2; half++) {
        int32_t s = 0, csum = 0;
        for (uint32_t l = 16 * half; l < 16 * half + 16; l++) {
            int c = ovk_ref_q8_code(x_codes, x0 + l);
            int q = ((p[64 * h + l + 32 * (t % 2)] >> (4 * (t / 2))) & 15) | ((p[128 + 32 * h + l] >> (2 * t)) & 3) << 4;
            s += q * c;
            csum += c;
        }
        int sc = (int8_t)p[192 + 8 * h + 2 * t + half];
        term += (float)(s - 32 * csum) * ((d * (float)sc) * xd);
    }
    return term;
}

oscar_status ovk_ref_mul_mat_vec_q8(uint32_t type, const void *w, const uint32_t *x_codes, const float *x_scales,
                                      float *y, uint32_t rows, uint32_t cols)
{
    int kq = type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q5_K, q6k = type == OSCAR_GGML_TYPE_Q6_K;
    if (type != OSCAR_GGML_TYPE_Q8_0 && type != OSCAR_GGML_TYPE_Q4_1 && type != OSCAR_GGML_TYPE_Q4_0 && !kq && !q6k)
        return OSCAR_ERROR_INVALID_ARGUMENT;
    uint32_t block = kq || q6k ? 256 : 32, bytes = (uint32_t)ovk_ggml_type_get(type)->type_size;
    if (cols % block) return OSCAR_ERROR_INVALID_ARGUMENT;
    for (uint32_t r = 0; r < rows; r++) {
        double acc = 0.0;
        float pending = 0.0f; /* a K-quant chunk's first sub-block term, added to its second in fp32 */
        for (uint32_t b = 0; b < cols / 32; b++) { /* x blocks */
            const uint8_t *p = (const uint8_t *)w + ((size_t)r * (cols / block) + b * 32 / block) * bytes;
            if (q6k) {
                acc += q6k_term(p, b % 8, x_codes, (size_t)b * 32, x_scales[b]);
                continue;
            }
            int32_t s = 0, csum = 0;
            for (uint32_t i = 0; i < 32; i++) {
                int c = ovk_ref_q8_code(x_codes, (size_t)b * 32 + i);
                s += (kq ? k_code(type, p, b % 8 * 32 + i) : w_code(type, p, i)) * c;
                csum += c;
            }
            float xd = x_scales[b], term;
            if (kq) {
                int sc, m;
                k_scale_min(p + 4, b % 8, &sc, &m);
                term = (float)s * ((f16_at(p) * (float)sc) * xd) - (float)csum * ((f16_at(p + 2) * (float)m) * xd);
                if (b % 2 == 0) {
                    pending = term;
                    continue;
                }
                term = pending + term;
            } else if (type == OSCAR_GGML_TYPE_Q4_0) {
                term = (float)(s - 8 * csum) * (f16_at(p) * xd);
            } else if (type == OSCAR_GGML_TYPE_Q4_1) {
                term = (float)s * (f16_at(p) * xd) + (float)csum * (f16_at(p + 2) * xd);
            } else {
                term = (float)s * (f16_at(p) * xd);
            }
            acc += term;
        }
        y[r] = (float)acc;
    }
    return OSCAR_OK;
}
