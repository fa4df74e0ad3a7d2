/* Plain-C reference of the INT2 quantizer; the contract is in int2_quant.h. */
#include <math.h>
#include <stdlib.h>

#include "half.h"
#include "int2_quant.h"

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

float ovk_int2_clip_threshold_sorted(const float *a, uint32_t n, float r)
{
    if (n == 0 || !(r < 1.0f)) return INFINITY;
    float pos = r * (float)(n - 1);
    uint32_t lo = (uint32_t)floorf(pos);
    if (lo > n - 1) lo = n - 1;
    uint32_t hi = lo + 1 < n ? lo + 1 : n - 1;
    float frac = pos - (float)lo;
    float diff = a[hi] - a[lo];
    float step = frac * diff;
    return a[lo] + step;
}

float ovk_int2_clip_threshold(const float *x, uint32_t n, float r, float *scratch)
{
    if (n == 0 || !(r < 1.0f)) return INFINITY;
    for (uint32_t i = 0; i < n; i++) scratch[i] = fabsf(x[i]);
    qsort(scratch, n, sizeof(float), cmp_float);
    return ovk_int2_clip_threshold_sorted(scratch, n, r);
}

void ovk_int2_clip(const float *x, uint32_t n, float tau, float *out)
{
    for (uint32_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = v > tau ? tau : (v < -tau ? -tau : v);
    }
}

/* Codes of x[0..n) on the grid (min_h, scale_h): the nearest level, ties up; 0 when the scale is 0. */
static void nearest_codes(const float *x, uint32_t n, uint16_t scale_h, uint16_t min_h, uint8_t *codes)
{
    float mn = ovk_f16_to_f32(min_h), sc = ovk_f16_to_f32(scale_h);
    float t0 = mn + 0.5f * sc, t1 = mn + 1.5f * sc, t2 = mn + 2.5f * sc;
    for (uint32_t i = 0; i < n; i++) codes[i] = sc == 0.0f ? 0 : (uint8_t)((x[i] >= t0) + (x[i] >= t1) + (x[i] >= t2));
}

void ovk_int2_quantize_group(const float *x, uint32_t G, uint8_t *codes, uint16_t *scale_h, uint16_t *min_h)
{
    float lo = x[0], hi = x[0];
    for (uint32_t i = 1; i < G; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *min_h = ovk_f32_to_f16(lo);
    float mn = ovk_f16_to_f32(*min_h);
    float range = hi - mn;
    *scale_h = ovk_f32_to_f16(range * (1.0f / 3.0f));
    nearest_codes(x, G, *scale_h, *min_h, codes);
}

void ovk_int2_feedback_codes(float *x, uint32_t n, uint32_t G, const uint16_t *scale_h, const uint16_t *min_h,
                               const float *F, uint8_t *codes)
{
    for (uint32_t i = 0; i < n; i++) {
        float mn = ovk_f16_to_f32(min_h[i / G]), sc = ovk_f16_to_f32(scale_h[i / G]);
        float t0 = mn + 0.5f * sc, t1 = mn + 1.5f * sc, t2 = mn + 2.5f * sc;
        uint8_t c = sc == 0.0f ? 0 : (uint8_t)((x[i] >= t0) + (x[i] >= t1) + (x[i] >= t2));
        codes[i] = c;
        float step = (float)c * sc;
        float q = mn + step;
        float e = x[i] - q;
        for (uint32_t j = i + 1; j < n; j++) {
            float t = e * F[(size_t)i * n + j];
            x[j] = x[j] - t;
        }
    }
}

void ovk_int2_dequantize_group(const uint8_t *codes, uint32_t G, uint16_t scale_h, uint16_t min_h, float *out)
{
    float mn = ovk_f16_to_f32(min_h), sc = ovk_f16_to_f32(scale_h);
    for (uint32_t i = 0; i < G; i++) {
        float step = (float)codes[i] * sc;
        out[i] = mn + step;
    }
}

void ovk_int2_fake_quantize_tau(const float *x, uint32_t n, uint32_t G, float tau, float *out)
{
    uint8_t codes[OSCAR_INT2_MAX_GROUP];
    ovk_int2_clip(x, n, tau, out);
    for (uint32_t g = 0; g + G <= n; g += G) {
        uint16_t s, m;
        ovk_int2_quantize_group(out + g, G, codes, &s, &m);
        ovk_int2_dequantize_group(codes, G, s, m, out + g);
    }
}

void ovk_int2_fake_quantize_feedback(const float *x, uint32_t n, uint32_t G, float tau, const float *F, float *out)
{
    uint8_t codes[OSCAR_INT2_MAX_ROW];
    uint16_t s[OSCAR_INT2_MAX_ROW] = { 0 }, m[OSCAR_INT2_MAX_ROW] = { 0 };
    ovk_int2_clip(x, n, tau, out);
    for (uint32_t g = 0; g + G <= n; g += G) ovk_int2_quantize_group(out + g, G, codes + g, &s[g / G], &m[g / G]);
    ovk_int2_feedback_codes(out, n, G, s, m, F, codes);
    for (uint32_t g = 0; g + G <= n; g += G) ovk_int2_dequantize_group(codes + g, G, s[g / G], m[g / G], out + g);
}

void ovk_int2_fake_quantize_row(const float *x, uint32_t n, uint32_t G, float r, float *out, float *scratch)
{
    ovk_int2_fake_quantize_tau(x, n, G, ovk_int2_clip_threshold(x, n, r, scratch), out);
}

float ovk_int2_recip(float d)
{
    union { float f; uint32_t u; } v = { d };
    v.u = 0x7EF311C3u - v.u;
    float r = v.f;
    for (int k = 0; k < 4; k++) {
        float t = d * r;
        float u = 2.0f - t;
        r = r * u;
    }
    return r;
}

/* Codes of the one-group row y on the grid (min_h, scale_h): nearest, or by feedback under F
 * (x is scratch for the targets). */
static void grid_codes(const float *y, uint32_t n, uint16_t scale_h, uint16_t min_h, const float *F, float *x,
                       uint8_t *codes)
{
    if (F) {
        for (uint32_t i = 0; i < n; i++) x[i] = y[i];
        ovk_int2_feedback_codes(x, n, n, &scale_h, &min_h, F, codes);
        return;
    }
    nearest_codes(y, n, scale_h, min_h, codes);
}

/* score(a, b) of int2_quant.h */
static float refit_score(float a, float b, float m11, float m12, float m22, float r1, float r2)
{
    float ar = a * r1, br = b * r2, lin = ar + br, lin2 = lin + lin;
    float aa = a * a, q1 = aa * m11, ab = a * b, ab2 = ab + ab, q2 = ab2 * m12, bb = b * b, q3 = bb * m22;
    float s = lin2 - q1;
    s = s - q2;
    return s - q3;
}

void ovk_int2_refit_row(const float *y, uint32_t n, const float *M, const float *F, uint32_t rounds, uint8_t *codes,
                          uint16_t *scale_h, uint16_t *min_h)
{
    uint8_t cur[OSCAR_INT2_MAX_ROW];
    float x[OSCAR_INT2_MAX_ROW], mcs[OSCAR_INT2_MAX_ROW], m1s[OSCAR_INT2_MAX_ROW]; /* (M c)_j, (M 1)_j */
    uint16_t cur_s = *scale_h, cur_m = *min_h;
    float best = -INFINITY;
    for (uint32_t i = 0; i < n; i++) cur[i] = codes[i];
    for (uint32_t r = 0; r < rounds; r++) {
        /* each (M c)_j and (M 1)_j summed over i ascending, as written in int2_quant.h; i outer so
         * that the n sums advance side by side, M read by rows (M[j][i] = M[i][j]; M 1 does not
         * change: once) */
        for (uint32_t j = 0; j < n; j++) {
            mcs[j] = M ? 0.0f : (float)cur[j];
            if (r == 0) m1s[j] = M ? 0.0f : 1.0f;
        }
        for (uint32_t i = 0; M && i < n; i++) {
            float ci = (float)cur[i];
            for (uint32_t j = 0; j < n; j++) {
                float p = M[(size_t)i * n + j] * ci;
                mcs[j] = mcs[j] + p;
            }
            for (uint32_t j = 0; r == 0 && j < n; j++) m1s[j] = m1s[j] + M[(size_t)i * n + j];
        }
        float m11 = 0.0f, m12 = 0.0f, m22 = 0.0f, r1 = 0.0f, r2 = 0.0f;
        for (uint32_t j = 0; j < n; j++) {
            float mc = mcs[j], m1 = m1s[j];
            float t22 = mc * (float)cur[j], t1 = m1 * y[j], t2 = mc * y[j];
            m11 = m11 + m1;
            m12 = m12 + mc;
            m22 = m22 + t22;
            r1 = r1 + t1;
            r2 = r2 + t2;
        }
        /* the current grid as a candidate */
        float s = refit_score(ovk_f16_to_f32(cur_m), ovk_f16_to_f32(cur_s), m11, m12, m22, r1, r2);
        if (s > best) {
            best = s, *scale_h = cur_s, *min_h = cur_m;
            for (uint32_t i = 0; i < n; i++) codes[i] = cur[i];
        }
        float p11 = m11 * m22, p12 = m12 * m12, det = p11 - p12;
        if (!(det > p11 * 0x1p-20f)) break;
        float inv = ovk_int2_recip(det);
        float u1 = r1 * m22, u2 = r2 * m12, u3 = m11 * r2, u4 = m12 * r1;
        float na = u1 - u2, nb = u3 - u4;
        float a = na * inv, b = nb * inv;
        uint16_t new_m = ovk_f32_to_f16(a), new_s = ovk_f32_to_f16(b);
        float bs = ovk_f16_to_f32(new_s);
        if (!(bs > 0.0f)) break;
        s = refit_score(ovk_f16_to_f32(new_m), bs, m11, m12, m22, r1, r2);
        if (s > best) {
            best = s, *scale_h = new_s, *min_h = new_m;
            for (uint32_t i = 0; i < n; i++) codes[i] = cur[i];
        }
        cur_s = new_s, cur_m = new_m;
        grid_codes(y, n, cur_s, cur_m, F, x, cur);
    }
}

void ovk_int2_fake_quantize_refit(const float *x, uint32_t n, float tau, const float *F, const float *M,
                                    uint32_t rounds, float *out)
{
    uint8_t codes[OSCAR_INT2_MAX_ROW];
    uint16_t s, m;
    ovk_int2_clip(x, n, tau, out);
    ovk_int2_quantize_group(out, n, codes, &s, &m);
    if (F) ovk_int2_feedback_codes(out, n, n, &s, &m, F, codes);
    ovk_int2_refit_row(x, n, M, F, rounds, codes, &s, &m);
    ovk_int2_dequantize_group(codes, n, s, m, out);
}
