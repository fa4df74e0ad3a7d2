/* GGML type table and the plain-C reference (de)quantizers. The block layouts and formulas
 * are spelled out in ggml_types.h; this file follows them line for line. */
#include <math.h>
#include <string.h>

#include "error.h"
#include "ggml_types.h"
#include "half.h"

/* ---- type table ------------------------------------------------------------------------- */

#define T(id, nm, bs, ts, dq, q) [id] = { nm, bs, ts, dq, q }
static const ovk_ggml_type_info type_table[] = {
    T(OSCAR_GGML_TYPE_F32, "F32", 1, 4, 1, 1),
    T(OSCAR_GGML_TYPE_F16, "F16", 1, 2, 1, 1),
    T(OSCAR_GGML_TYPE_Q4_0, "Q4_0", 32, 18, 1, 1),
    T(OSCAR_GGML_TYPE_Q4_1, "Q4_1", 32, 20, 1, 1),
    T(OSCAR_GGML_TYPE_Q5_0, "Q5_0", 32, 22, 1, 1),
    T(OSCAR_GGML_TYPE_Q5_1, "Q5_1", 32, 24, 1, 1),
    T(OSCAR_GGML_TYPE_Q8_0, "Q8_0", 32, 34, 1, 1),
    T(OSCAR_GGML_TYPE_Q8_1, "Q8_1", 32, 36, 0, 0),
    T(OSCAR_GGML_TYPE_Q2_K, "Q2_K", 256, 84, 0, 0),
    T(OSCAR_GGML_TYPE_Q3_K, "Q3_K", 256, 110, 0, 0),
    T(OSCAR_GGML_TYPE_Q4_K, "Q4_K", 256, 144, 1, 1),
    T(OSCAR_GGML_TYPE_Q5_K, "Q5_K", 256, 176, 1, 1),
    T(OSCAR_GGML_TYPE_Q6_K, "Q6_K", 256, 210, 1, 1),
    T(OSCAR_GGML_TYPE_Q8_K, "Q8_K", 256, 292, 0, 0),
    T(OSCAR_GGML_TYPE_I8, "I8", 1, 1, 0, 0),
    T(OSCAR_GGML_TYPE_I16, "I16", 1, 2, 0, 0),
    T(OSCAR_GGML_TYPE_I32, "I32", 1, 4, 0, 0),
    T(OSCAR_GGML_TYPE_I64, "I64", 1, 8, 0, 0),
    T(OSCAR_GGML_TYPE_F64, "F64", 1, 8, 0, 0),
    T(OSCAR_GGML_TYPE_BF16, "BF16", 1, 2, 1, 1),
};
#undef T

const ovk_ggml_type_info *ovk_ggml_type_get(uint32_t type)
{
    if (type >= sizeof type_table / sizeof type_table[0]) return NULL;
    const ovk_ggml_type_info *t = &type_table[type];
    return t->name ? t : NULL;
}

const char *ovk_ggml_type_name(uint32_t type)
{
    const ovk_ggml_type_info *t = ovk_ggml_type_get(type);
    return t ? t->name : "unknown";
}

oscar_status ovk_ggml_row_size(uint32_t type, uint64_t n, uint64_t *bytes)
{
    const ovk_ggml_type_info *t = ovk_ggml_type_get(type);
    if (!t) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ggml type %u is unknown", type);
    if (n % t->block_size != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "row of %llu elements is not a multiple of %s's block size %u",
                           (unsigned long long)n, t->name, t->block_size);
    uint64_t blocks = n / t->block_size;
    if (blocks > UINT64_MAX / t->type_size)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "row of %llu %s elements overflows uint64 bytes",
                           (unsigned long long)n, t->name);
    *bytes = blocks * t->type_size;
    return OSCAR_OK;
}

/* ---- little helpers --------------------------------------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (uint16_t)p[1] << 8); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static float rdf16(const uint8_t *p) { return ovk_f16_to_f32(rd16(p)); }

/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
static uint16_t f32_to_bf16(float f)
{
    uint32_t u = ovk_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Smallest fp16 value >= v, for v >= 0 (a scale rounded outward). +inf bits when too large. */
static uint16_t f16_ceil_pos(float v)
{
    uint16_t h = ovk_f32_to_f16(v);
    if (h < 0x7C00u && ovk_f16_to_f32(h) < v) h++;
    return h;
}

/* Largest fp16 value <= v (a minimum rounded outward). */
static uint16_t f16_floor(float v)
{
    uint16_t h = ovk_f32_to_f16(v);
    if (ovk_f16_to_f32(h) > v) {
        if (h == 0x0000u) h = 0x8001u;            /* +0 -> smallest negative subnormal */
        else if (h & 0x8000u) h++;                /* negative: grow the magnitude */
        else h--;                                 /* positive: shrink it */
    }
    return h;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Rounds x / step to the nearest integer in [lo, hi]; 0 when step is 0. */
static int qround(float x, float step, int lo, int hi)
{
    if (step == 0.0f) return clampi(0, lo, hi);
    return clampi((int)roundf(x / step), lo, hi);
}

/* ---- dequantizers (one block each) -------------------------------------------------------- */

static void dq_q4_0(const uint8_t *b, float *y)
{
    float d = rdf16(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((qs[j] & 15) - 8);
        y[j + 16] = d * (float)((qs[j] >> 4) - 8);
    }
}

static void dq_q4_1(const uint8_t *b, float *y)
{
    float d = rdf16(b), m = rdf16(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(qs[j] & 15) + m;
        y[j + 16] = d * (float)(qs[j] >> 4) + m;
    }
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void dq_q5_0(const uint8_t *b, float *y)
{
    float d = rdf16(b);
    uint32_t h = rd32(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int q0 = (qs[j] & 15) | (int)((h >> j) & 1u) << 4;
        int q1 = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1u) << 4;
        y[j] = d * (float)(q0 - 16);
        y[j + 16] = d * (float)(q1 - 16);
    }
}

static void dq_q5_1(const uint8_t *b, float *y)
{
    float d = rdf16(b), m = rdf16(b + 2);
    uint32_t h = rd32(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        int q0 = (qs[j] & 15) | (int)((h >> j) & 1u) << 4;
        int q1 = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1u) << 4;
        y[j] = d * (float)q0 + m;
        y[j + 16] = d * (float)q1 + m;
    }
}

static void dq_q8_0(const uint8_t *b, float *y)
{
    float d = rdf16(b);
    for (int j = 0; j < 32; j++) y[j] = d * (float)(int8_t)b[2 + j];
}

/* The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block. */
static void k_scale_min(const uint8_t *scales, int s, int *sc, int *m)
{
    if (s < 4) {
        *sc = scales[s] & 63;
        *m = scales[s + 4] & 63;
    } else {
        *sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4;
        *m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4;
    }
}

/* Q4_K (qh == NULL) and Q5_K (qh = the 32 high-bit bytes). */
static void dq_q45_k(float d, float dmin, const uint8_t *scales, const uint8_t *qh, const uint8_t *qs, float *y)
{
    for (int c = 0; c < 4; c++) {
        int sc0, m0, sc1, m1;
        k_scale_min(scales, 2 * c, &sc0, &m0);
        k_scale_min(scales, 2 * c + 1, &sc1, &m1);
        float d0 = d * (float)sc0, mn0 = dmin * (float)m0;
        float d1 = d * (float)sc1, mn1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
            if (qh) {
                lo += ((qh[l] >> (2 * c)) & 1) << 4;
                hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            y[64 * c + l] = d0 * (float)lo - mn0;
            y[64 * c + 32 + l] = d1 * (float)hi - mn1;
        }
    }
}

static void dq_q4_k(const uint8_t *b, float *y) { dq_q45_k(rdf16(b), rdf16(b + 2), b + 4, NULL, b + 16, y); }
static void dq_q5_k(const uint8_t *b, float *y) { dq_q45_k(rdf16(b), rdf16(b + 2), b + 4, b + 16, b + 48, y); }

static void dq_q6_k(const uint8_t *b, float *y)
{
    float d = rdf16(b + 208);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        float *yy = y + 128 * h;
        for (int l = 0; l < 32; l++) {
            int k = l / 16;
            int q1 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            yy[l] = d * (float)sc[k] * (float)q1;
            yy[l + 32] = d * (float)sc[k + 2] * (float)q2;
            yy[l + 64] = d * (float)sc[k + 4] * (float)q3;
            yy[l + 96] = d * (float)sc[k + 6] * (float)q4;
        }
    }
}

/* ---- quantizers (one block each) ------------------------------------------------------------ */

/* Q4_0 / Q5_0: the element of largest magnitude maps to -half (ggml's choice), nmax = 2*half-1. */
static void q_sym_0(const float *x, uint8_t *b, int bits)
{
    int half = 1 << (bits - 1);
    float amax = 0.0f, vmax = 0.0f;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); vmax = x[j]; }
    /* d = vmax / -half, magnitude rounded up so no element needs more than +-half steps */
    uint16_t dh = f16_ceil_pos(amax / (float)half);
    if (vmax > 0.0f) dh |= 0x8000u;
    float d = ovk_f16_to_f32(dh);
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = qround(x[j], d, -half, half - 1) + half;
    wr16(b, dh);
    if (bits == 4) {
        for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(q[j] | q[j + 16] << 4);
    } else {
        uint32_t h = 0;
        for (int j = 0; j < 32; j++) h |= (uint32_t)(q[j] >> 4) << j;
        for (int k = 0; k < 4; k++) b[2 + k] = (uint8_t)(h >> (8 * k));
        for (int j = 0; j < 16; j++) b[6 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
    }
}

/* Q4_1 / Q5_1: min rounded down, step rounded up, codes 0..2^bits-1. */
static void q_affine_1(const float *x, uint8_t *b, int bits)
{
    int nmax = (1 << bits) - 1;
    float mn = x[0], mx = x[0];
    for (int j = 1; j < 32; j++) { mn = fminf(mn, x[j]); mx = fmaxf(mx, x[j]); }
    uint16_t mh = f16_floor(mn);
    float m = ovk_f16_to_f32(mh);
    uint16_t dh = f16_ceil_pos((mx - m) / (float)nmax);
    while (dh < 0x7C00u && ovk_f16_to_f32(dh) * (float)nmax + m < mx) dh++;
    float d = ovk_f16_to_f32(dh);
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = qround(x[j] - m, d, 0, nmax);
    wr16(b, dh);
    wr16(b + 2, mh);
    if (bits == 4) {
        for (int j = 0; j < 16; j++) b[4 + j] = (uint8_t)(q[j] | q[j + 16] << 4);
    } else {
        uint32_t h = 0;
        for (int j = 0; j < 32; j++) h |= (uint32_t)(q[j] >> 4) << j;
        for (int k = 0; k < 4; k++) b[4 + k] = (uint8_t)(h >> (8 * k));
        for (int j = 0; j < 16; j++) b[8 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
    }
}

static void q_q8_0(const float *x, uint8_t *b)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    uint16_t dh = f16_ceil_pos(amax / 127.0f);
    while (dh < 0x7C00u && ovk_f16_to_f32(dh) * 127.0f < amax) dh++;
    float d = ovk_f16_to_f32(dh);
    wr16(b, dh);
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)qround(x[j], d, -127, 127);
}

/* Q4_K (bits 4) / Q5_K (bits 5). Per sub-block s of 32: lo_s = dmin*m_s >= -min(0, min x),
 * step_s = d*sc_s with lo_s + nmax*step_s >= max x; m_s and sc_s are rounded up so that no
 * element clips. */
static void q_q45_k(const float *x, uint8_t *b, int bits)
{
    int nmax = (1 << bits) - 1;
    float neg[8], top[8];
    float negmax = 0.0f;
    for (int s = 0; s < 8; s++) {
        float mn = 0.0f, mx = x[32 * s];
        for (int l = 0; l < 32; l++) { mn = fminf(mn, x[32 * s + l]); mx = fmaxf(mx, x[32 * s + l]); }
        neg[s] = -mn;
        top[s] = mx;
        negmax = fmaxf(negmax, neg[s]);
    }
    uint16_t dminh = f16_ceil_pos(negmax / 63.0f);
    while (dminh < 0x7C00u && ovk_f16_to_f32(dminh) * 63.0f < negmax) dminh++;
    float dmin = ovk_f16_to_f32(dminh);
    int m[8], sc[8];
    float lo[8], need[8], needmax = 0.0f;
    for (int s = 0; s < 8; s++) {
        m[s] = dmin > 0.0f ? clampi((int)ceilf(neg[s] / dmin), 0, 63) : 0;
        while (m[s] < 63 && dmin * (float)m[s] < neg[s]) m[s]++;
        lo[s] = dmin * (float)m[s];
        need[s] = fmaxf(0.0f, (top[s] + lo[s]) / (float)nmax);
        needmax = fmaxf(needmax, need[s]);
    }
    uint16_t dh = f16_ceil_pos(needmax / 63.0f);
    while (dh < 0x7C00u && ovk_f16_to_f32(dh) * 63.0f < needmax) dh++;
    float d = ovk_f16_to_f32(dh);
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0.0f ? clampi((int)ceilf(need[s] / d), 0, 63) : 0;
        while (sc[s] < 63 && (d * (float)sc[s]) * (float)nmax - lo[s] < top[s]) sc[s]++;
    }
    wr16(b, dh);
    wr16(b + 2, dminh);
    uint8_t *scales = b + 4;
    memset(scales, 0, 12);
    for (int s = 0; s < 4; s++) {
        scales[s] = (uint8_t)(sc[s] | (sc[s + 4] >> 4) << 6);
        scales[s + 4] = (uint8_t)(m[s] | (m[s + 4] >> 4) << 6);
        scales[s + 8] = (uint8_t)((sc[s + 4] & 15) | (m[s + 4] & 15) << 4);
    }
    int q[256];
    for (int s = 0; s < 8; s++) {
        float step = d * (float)sc[s];
        for (int l = 0; l < 32; l++) q[32 * s + l] = qround(x[32 * s + l] + lo[s], step, 0, nmax);
    }
    uint8_t *qh = bits == 5 ? b + 16 : NULL;
    uint8_t *qs = bits == 5 ? b + 48 : b + 16;
    if (qh) memset(qh, 0, 32);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int a = q[64 * c + l], z = q[64 * c + 32 + l];
            qs[32 * c + l] = (uint8_t)((a & 15) | (z & 15) << 4);
            if (qh) qh[l] |= (uint8_t)(((a >> 4) << (2 * c)) | ((z >> 4) << (2 * c + 1)));
        }
    }
}

/* Q6_K: per sub-block s of 16, step_s = d*sc_s >= amax_s / 31, codes -31..31 stored +32. */
static void q_q6_k(const float *x, uint8_t *b)
{
    float need[16], needmax = 0.0f, amax[16];
    for (int s = 0; s < 16; s++) {
        amax[s] = 0.0f;
        for (int l = 0; l < 16; l++) amax[s] = fmaxf(amax[s], fabsf(x[16 * s + l]));
        need[s] = amax[s] / 31.0f;
        needmax = fmaxf(needmax, need[s]);
    }
    uint16_t dh = f16_ceil_pos(needmax / 127.0f);
    while (dh < 0x7C00u && ovk_f16_to_f32(dh) * 127.0f < needmax) dh++;
    float d = ovk_f16_to_f32(dh);
    int sc[16], q[256];
    for (int s = 0; s < 16; s++) {
        sc[s] = d > 0.0f ? clampi((int)ceilf(need[s] / d), 0, 127) : 0;
        while (sc[s] < 127 && (d * (float)sc[s]) * 31.0f < amax[s]) sc[s]++;
        float step = d * (float)sc[s];
        for (int l = 0; l < 16; l++) q[16 * s + l] = qround(x[16 * s + l], step, -32, 31) + 32;
    }
    for (int h = 0; h < 2; h++) {
        uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int *qq = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((qq[l] & 15) | (qq[l + 64] & 15) << 4);
            ql[l + 32] = (uint8_t)((qq[l + 32] & 15) | (qq[l + 96] & 15) << 4);
            qh[l] = (uint8_t)((qq[l] >> 4) | (qq[l + 32] >> 4) << 2 | (qq[l + 64] >> 4) << 4 | (qq[l + 96] >> 4) << 6);
        }
    }
    for (int s = 0; s < 16; s++) b[192 + s] = (uint8_t)(int8_t)sc[s];
    wr16(b + 208, dh);
}

/* ---- row entry points ------------------------------------------------------------------- */

typedef void (*dq_fn)(const uint8_t *, float *);

static dq_fn block_dequantizer(uint32_t type)
{
    switch (type) {
    case OSCAR_GGML_TYPE_Q4_0: return dq_q4_0;
    case OSCAR_GGML_TYPE_Q4_1: return dq_q4_1;
    case OSCAR_GGML_TYPE_Q5_0: return dq_q5_0;
    case OSCAR_GGML_TYPE_Q5_1: return dq_q5_1;
    case OSCAR_GGML_TYPE_Q8_0: return dq_q8_0;
    case OSCAR_GGML_TYPE_Q4_K: return dq_q4_k;
    case OSCAR_GGML_TYPE_Q5_K: return dq_q5_k;
    case OSCAR_GGML_TYPE_Q6_K: return dq_q6_k;
    default: return NULL;
    }
}

oscar_status ovk_ggml_dequantize_row(uint32_t type, const void *src, float *y, uint64_t n)
{
    const ovk_ggml_type_info *t = ovk_ggml_type_get(type);
    if (!t || !t->has_dequantize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "no dequantizer for ggml type %u (%s)", type, ovk_ggml_type_name(type));
    if (n % t->block_size != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "row of %llu elements is not a multiple of %s's block size %u",
                           (unsigned long long)n, t->name, t->block_size);
    const uint8_t *p = src;
    switch (type) {
    case OSCAR_GGML_TYPE_F32:
        memcpy(y, p, (size_t)n * 4);
        return OSCAR_OK;
    case OSCAR_GGML_TYPE_F16:
        for (uint64_t i = 0; i < n; i++) y[i] = ovk_f16_to_f32(rd16(p + 2 * i));
        return OSCAR_OK;
    case OSCAR_GGML_TYPE_BF16:
        for (uint64_t i = 0; i < n; i++) y[i] = ovk_bits_f32((uint32_t)rd16(p + 2 * i) << 16);
        return OSCAR_OK;
    default: break;
    }
    dq_fn fn = block_dequantizer(type);
    for (uint64_t i = 0; i < n / t->block_size; i++) fn(p + i * t->type_size, y + i * t->block_size);
    return OSCAR_OK;
}

oscar_status ovk_ggml_quantize_row(uint32_t type, const float *x, void *dst, uint64_t n)
{
    const ovk_ggml_type_info *t = ovk_ggml_type_get(type);
    if (!t || !t->has_quantize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "no quantizer for ggml type %u (%s)", type, ovk_ggml_type_name(type));
    if (n % t->block_size != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "row of %llu elements is not a multiple of %s's block size %u",
                           (unsigned long long)n, t->name, t->block_size);
    uint8_t *p = dst;
    switch (type) {
    case OSCAR_GGML_TYPE_F32:
        memcpy(p, x, (size_t)n * 4);
        return OSCAR_OK;
    case OSCAR_GGML_TYPE_F16:
        for (uint64_t i = 0; i < n; i++) wr16(p + 2 * i, ovk_f32_to_f16(x[i]));
        return OSCAR_OK;
    case OSCAR_GGML_TYPE_BF16:
        for (uint64_t i = 0; i < n; i++) wr16(p + 2 * i, f32_to_bf16(x[i]));
        return OSCAR_OK;
    default: break;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "cannot quantize non-finite value at element %llu to %s",
                               (unsigned long long)i, t->name);
    for (uint64_t i = 0; i < n / t->block_size; i++) {
        const float *xb = x + i * t->block_size;
        uint8_t *b = p + i * t->type_size;
        switch (type) {
        case OSCAR_GGML_TYPE_Q4_0: q_sym_0(xb, b, 4); break;
        case OSCAR_GGML_TYPE_Q5_0: q_sym_0(xb, b, 5); break;
        case OSCAR_GGML_TYPE_Q4_1: q_affine_1(xb, b, 4); break;
        case OSCAR_GGML_TYPE_Q5_1: q_affine_1(xb, b, 5); break;
        case OSCAR_GGML_TYPE_Q8_0: q_q8_0(xb, b); break;
        case OSCAR_GGML_TYPE_Q4_K: q_q45_k(xb, b, 4); break;
        case OSCAR_GGML_TYPE_Q5_K: q_q45_k(xb, b, 5); break;
        case OSCAR_GGML_TYPE_Q6_K: q_q6_k(xb, b); break;
        default: break;
        }
    }
    return OSCAR_OK;
}
