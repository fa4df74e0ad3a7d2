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

float oscar_int2_clip_threshold_sorted(const float *a, uint32_t n, float r)
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

float oscar_int2_clip_threshold(const float *x, uint32_t n, float r, float *scratch)
{
    if (n == 0 || !(r < 1.0f)) return INFINITY;
    for (uint32_t i = 0; i < n; i++) scratch[i] = fabsf(x[i]);
    qsort(scratch, n, sizeof(float), cmp_float);
    return oscar_int2_clip_threshold_sorted(scratch, n, r);
}

void oscar_int2_clip(const float *x, uint32_t n, float tau, float *out)
{
    for (uint32_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = v > tau ? tau : (v < -tau ? -tau : v);
    }
}

void oscar_int2_quantize_group(const float *x, uint32_t G, uint8_t *codes, uint16_t *scale_h, uint16_t *min_h)
{
    float lo = x[0], hi = x[0];
    for (uint32_t i = 1; i < G; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *min_h = oscar_f32_to_f16(lo);
    float mn = oscar_f16_to_f32(*min_h);
    float range = hi - mn;
    *scale_h = oscar_f32_to_f16(range * (1.0f / 3.0f));
    float sc = oscar_f16_to_f32(*scale_h);
    float t0 = mn + 0.5f * sc, t1 = mn + 1.5f * sc, t2 = mn + 2.5f * sc;
    for (uint32_t i = 0; i < G; i++)
        codes[i] = sc == 0.0f ? 0 : (uint8_t)((x[i] >= t0) + (x[i] >= t1) + (x[i] >= t2));
}

void oscar_int2_feedback_codes(float *x, uint32_t n, uint32_t G, const uint16_t *scale_h, const uint16_t *min_h,
                               const float *F, uint8_t *codes)
{
    for (uint32_t i = 0; i < n; i++) {
        float mn = oscar_f16_to_f32(min_h[i / G]), sc = oscar_f16_to_f32(scale_h[i / G]);
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

void oscar_int2_dequantize_group(const uint8_t *codes, uint32_t G, uint16_t scale_h, uint16_t min_h, float *out)
{
    float mn = oscar_f16_to_f32(min_h), sc = oscar_f16_to_f32(scale_h);
    for (uint32_t i = 0; i < G; i++) {
        float step = (float)codes[i] * sc;
        out[i] = mn + step;
    }
}

void oscar_int2_fake_quantize_tau(const float *x, uint32_t n, uint32_t G, float tau, float *out)
{
    uint8_t codes[OSCAR_INT2_MAX_GROUP];
    oscar_int2_clip(x, n, tau, out);
    for (uint32_t g = 0; g + G <= n; g += G) {
        uint16_t s, m;
        oscar_int2_quantize_group(out + g, G, codes, &s, &m);
        oscar_int2_dequantize_group(codes, G, s, m, out + g);
    }
}

void oscar_int2_fake_quantize_feedback(const float *x, uint32_t n, uint32_t G, float tau, const float *F, float *out)
{
    uint8_t codes[OSCAR_INT2_MAX_ROW];
    uint16_t s[OSCAR_INT2_MAX_ROW] = { 0 }, m[OSCAR_INT2_MAX_ROW] = { 0 };
    oscar_int2_clip(x, n, tau, out);
    for (uint32_t g = 0; g + G <= n; g += G) oscar_int2_quantize_group(out + g, G, codes + g, &s[g / G], &m[g / G]);
    oscar_int2_feedback_codes(out, n, G, s, m, F, codes);
    for (uint32_t g = 0; g + G <= n; g += G) oscar_int2_dequantize_group(codes + g, G, s[g / G], m[g / G], out + g);
}

void oscar_int2_fake_quantize_row(const float *x, uint32_t n, uint32_t G, float r, float *out, float *scratch)
{
    oscar_int2_fake_quantize_tau(x, n, G, oscar_int2_clip_threshold(x, n, r, scratch), out);
}
