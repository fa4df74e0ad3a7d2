/* Reference attention over the paged cache; the contract is in attn_ref.h. */
#include <math.h>
#include <stdlib.h>

#include "attn_ref.h"
#include "error.h"
#include "half.h"
#include "q8_ref.h"

/* An INT2 group's parameter word (lo fp16 scale, hi min) and element e's code of a row. */
static float param_scale(uint32_t p) { return ovk_f16_to_f32((uint16_t)(p & 0xFFFFu)); }
static float param_min(uint32_t p) { return ovk_f16_to_f32((uint16_t)(p >> 16)); }
static uint32_t code_at(const uint32_t *codes, uint32_t e) { return (codes[e / 16] >> (2 * (e % 16))) & 3u; }

/* Dequantizes one INT2 row: codes [d/16] words, params [d/G] words. */
static void dequant_row(const uint32_t *codes, const uint32_t *params, uint32_t d, uint32_t G, float *out)
{
    for (uint32_t e = 0; e < d; e++) {
        float step = (float)code_at(codes, e) * param_scale(params[e / G]);
        out[e] = param_min(params[e / G]) + step;
    }
}

static void f16_row(const uint32_t *words, uint32_t d, float *out)
{
    for (uint32_t e = 0; e < d; e++) out[e] = ovk_f16_to_f32((uint16_t)(words[e / 2] >> (16 * (e % 2))));
}

oscar_status attn_ref_read_kv(const attn_ref_cache *c, uint32_t seq, uint32_t pos, uint32_t kvh, float *k, float *v)
{
    uint32_t d = c->head_dim, G = c->group, P = c->page, nkv = c->n_kv;
    if (seq >= c->n_seq || kvh >= nkv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: sequence %u or KV head %u out of range", seq, kvh);
    int int2 = c->mode != KV_MODE_FP16 && pos >= c->sink[seq] && pos < c->flushed_end[seq];
    if (int2) {
        uint32_t j = pos - c->sink[seq];
        if (j / P >= c->max_int2_pages)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: INT2 index %u beyond the table", j);
        int32_t page = c->int2_table[(size_t)seq * c->max_int2_pages + j / P];
        if (page < 0 || (uint32_t)page >= c->n_int2_pages)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: seq %u INT2 page %u missing", seq, j / P);
        const uint32_t *base = c->int2_pool + (size_t)page * KV_INT2_PAGE_WORDS(nkv, P, d, G);
        size_t row = (size_t)kvh * P + j % P;
        size_t cw = d / 16, pw = d / G;
        dequant_row(base + row * cw, base + (size_t)nkv * P * cw + row * pw, d, G, k);
        dequant_row(base + (size_t)nkv * P * (cw + pw) + row * cw, base + (size_t)nkv * P * (2 * cw + pw) + row * pw,
                    d, G, v);
    } else {
        if (pos / P >= c->max_f16_pages)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: position %u beyond the fp16 table", pos);
        int32_t page = c->f16_table[(size_t)seq * c->max_f16_pages + pos / P];
        if (page < 0 || (uint32_t)page >= c->n_f16_pages)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: seq %u fp16 page %u missing", seq, pos / P);
        const uint32_t *base = c->f16_pool + (size_t)page * KV_F16_PAGE_WORDS(nkv, P, d);
        size_t row = (size_t)kvh * P + pos % P;
        f16_row(base + row * (d / 2), d, k);
        f16_row(base + (size_t)nkv * P * (d / 2) + row * (d / 2), d, v);
    }
    if (c->key_centers) { /* the center kv_append took out of every key */
        float ctr[KV_MAX_HEAD_DIM];
        f16_row(c->key_centers + ((size_t)(pos / c->center_block) * nkv + kvh) * (d / 2), d, ctr);
        for (uint32_t e = 0; e < d; e++) k[e] += ctr[e];
    }
    return OSCAR_OK;
}

/* Half-precision rounding of x (through fp32). */
static float h16(double x) { return ovk_round_f16((float)x); }

/* x in fp16, clamped to +-65504 as the cooperative-matrix kernels convert */
static float h16_clamped(float x) { return ovk_round_f16(x > 65504.0f ? 65504.0f : x < -65504.0f ? -65504.0f : x); }

/* q·k of fp16 q·scale (qs, already rounded) and fp16 k, in double (f16_inputs) */
static double dot_f16(const float *qs, const float *k, uint32_t d)
{
    double dot = 0.0;
    for (uint32_t e = 0; e < d; e++) dot += (double)qs[e] * h16_clamped(k[e]);
    return dot;
}

/* The code and parameter words of position pos's INT2 K and V rows, or 0 when the position is
 * not INT2; attn_ref_read_kv checked the page. */
static int int2_rows(const attn_ref_cache *c, uint32_t seq, uint32_t pos, uint32_t kvh, const uint32_t *words[4])
{
    uint32_t d = c->head_dim, G = c->group, P = c->page, nkv = c->n_kv;
    if (c->mode == KV_MODE_FP16 || pos < c->sink[seq] || pos >= c->flushed_end[seq]) return 0;
    uint32_t j = pos - c->sink[seq];
    const uint32_t *base = c->int2_pool + (size_t)c->int2_table[(size_t)seq * c->max_int2_pages + j / P] *
                                               KV_INT2_PAGE_WORDS(nkv, P, d, G);
    size_t row = (size_t)kvh * P + j % P, cw = d / 16, pw = d / G;
    words[0] = base + row * cw;                                   /* K codes */
    words[1] = base + (size_t)nkv * P * cw + row * pw;            /* K params */
    words[2] = base + (size_t)nkv * P * (cw + pw) + row * cw;     /* V codes */
    words[3] = base + (size_t)nkv * P * (2 * cw + pw) + row * pw; /* V params */
    return 1;
}

/* q·k of fp16 q·scale (qs) and an INT2 key's exact codes: per group scale·Σ qs·c + min·Σ qs */
static double dot_codes(const float *qs, const uint32_t *codes, const uint32_t *params, uint32_t d, uint32_t G)
{
    double s = 0.0;
    for (uint32_t g = 0; g < d / G; g++) {
        double dq = 0.0, qsum = 0.0;
        for (uint32_t e = g * G; e < (g + 1) * G; e++) {
            dq += (double)qs[e] * code_at(codes, e);
            qsum += qs[e];
        }
        s += (double)param_scale(params[g]) * dq + (double)param_min(params[g]) * qsum;
    }
    return s;
}

/* q·(k - center) of an INT2 key as attn_decode_f16 computes it: q·scale rounded to fp16, per
 * code word the pairs (e, e + 8), j = 0..7, multiplied and accumulated in fp16 (one rounding
 * each: a = q_0 c_0, a = fma(q_j, c_j, a)), the word's two halves summed in fp32; per group
 * scale * sum + min * (sum of the rounded q). codes [d/16] words, params [d/G] words. */
static double int2_dot_f16(const float *q, float scale, const uint32_t *codes, const uint32_t *params, uint32_t d, uint32_t G)
{
    double s = 0.0;
    for (uint32_t g = 0; g < d / G; g++) {
        double dq = 0.0, qs = 0.0;
        for (uint32_t w = g * G / 16; w < (g + 1) * G / 16; w++) {
            float a[2] = { 0.0f, 0.0f };
            for (uint32_t j = 0; j < 8; j++)
                for (uint32_t half = 0; half < 2; half++) {
                    uint32_t e = 16 * w + j + 8 * half;
                    float qh = h16((double)q[e] * scale), c = (float)code_at(codes, e);
                    a[half] = h16((double)qh * c + (j ? a[half] : 0.0));
                    qs += qh;
                }
            dq += (double)a[0] + a[1];
        }
        uint32_t p = params[g];
        s += (double)param_scale(p) * dq + (double)param_min(p) * qs;
    }
    return s;
}

/* q·(k - center) of an INT2 key as attn_decode_chunked_f16.idot computes it: q·scale (fp32)
 * quantized in blocks of 32 to two levels of int8, c1 as ovk_ref_q8_quantize does (scale d1 =
 * amax / 127) and c2 = roundEven((x - d1 c1) / d) clamped to ±127 with d = d1 * (float)(1/254),
 * so that x ≈ d (254 c1 + c2); then exact sums of those values against the codes, per group
 * scale * sum + min * (sum of the quantized q). codes [d/16] words, params [d/G] words. */
static double int2_dot_q8(const float *q, float scale, const uint32_t *codes, const uint32_t *params, uint32_t d, uint32_t G)
{
    float qs32[KV_MAX_HEAD_DIM] = { 0 }, qd[KV_MAX_HEAD_DIM / OSCAR_Q8_BLOCK] = { 0 };
    uint32_t qc[KV_MAX_HEAD_DIM / 4];
    double qv[KV_MAX_HEAD_DIM];
    for (uint32_t e = 0; e < d; e++) qs32[e] = q[e] * scale;
    ovk_ref_q8_quantize(qs32, d / OSCAR_Q8_BLOCK, qc, qd);
    for (uint32_t e = 0; e < d; e++) {
        float d1 = qd[e / OSCAR_Q8_BLOCK], unit = d1 * (float)(1.0 / 254.0);
        int c1 = ovk_ref_q8_code(qc, e), c2 = 0;
        if (unit > 0.0f) {
            float r = qs32[e] - d1 * (float)c1, c = nearbyintf(r / unit);
            c2 = c > 127.0f ? 127 : c < -127.0f ? -127 : (int)c;
        }
        qv[e] = (double)unit * (254 * c1 + c2);
    }
    double s = 0.0;
    for (uint32_t g = 0; g < d / G; g++) {
        double dq = 0.0, qs = 0.0;
        for (uint32_t e = g * G; e < (g + 1) * G; e++) {
            dq += qv[e] * (double)code_at(codes, e);
            qs += qv[e];
        }
        uint32_t p = params[g];
        s += (double)param_scale(p) * dq + (double)param_min(p) * qs;
    }
    return s;
}

/* q·k * scale of position pos; with q_f16_int2 or q_q8_int2, an INT2 key less its center as
 * attn_decode_f16 scores it (int2_dot_f16), or the integer-dot variant (int2_dot_q8), plus the
 * center against q·scale in fp32. */
static double score(const attn_ref_cache *c, const float *q, const float *k, uint32_t seq, uint32_t pos, uint32_t kvh,
                    float scale)
{
    uint32_t d = c->head_dim, G = c->group, nkv = c->n_kv;
    double dot = 0.0;
    const uint32_t *words[4];
    if ((!c->q_f16_int2 && !c->q_q8_int2) || !int2_rows(c, seq, pos, kvh, words)) {
        for (uint32_t e = 0; e < d; e++) dot += (double)q[e] * k[e];
        return dot * scale;
    }
    dot = c->q_q8_int2 ? int2_dot_q8(q, scale, words[0], words[1], d, G) : int2_dot_f16(q, scale, words[0], words[1], d, G);
    if (c->key_centers) {
        float ctr[KV_MAX_HEAD_DIM];
        f16_row(c->key_centers + ((size_t)(pos / c->center_block) * nkv + kvh) * (d / 2), d, ctr);
        for (uint32_t e = 0; e < d; e++) dot += (double)(q[e] * scale) * ctr[e];
    }
    return dot;
}

oscar_status attn_ref_attention(const attn_ref_cache *c, const float *q, const uint32_t *row_seq,
                                const uint32_t *row_n_visible, uint32_t n_rows, uint32_t n_head, float scale,
                                float *out)
{
    oscar_status st = OSCAR_OK;
    uint32_t d = c->head_dim, nkv = c->n_kv;
    float *k = NULL, *v = NULL;
    double *s = NULL, *o = NULL;
    if (d == 0 || d > KV_MAX_HEAD_DIM || nkv == 0 || n_head % nkv != 0 || c->group == 0 || d % c->group != 0 ||
        d % 16 != 0 || c->page == 0 || (c->q_q8_int2 && d % OSCAR_Q8_BLOCK != 0))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "attn_ref: bad shape (d %u, G %u, P %u, n_kv %u, n_head %u)", d,
                   c->group, c->page, nkv, n_head);
    uint32_t gqa = n_head / nkv, max_n = 0;
    for (uint32_t r = 0; r < n_rows; r++)
        if (row_n_visible[r] > max_n) max_n = row_n_visible[r];
    k = malloc(sizeof *k * d);
    v = malloc(sizeof *v * d);
    s = malloc(sizeof *s * ((size_t)max_n + 1));
    o = malloc(sizeof *o * d);
    if (!k || !v || !s || !o) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "attn_ref: out of host memory");

    for (uint32_t r = 0; r < n_rows; r++) {
        uint32_t n = row_n_visible[r];
        for (uint32_t h = 0; h < n_head; h++) {
            const float *qh = q + ((size_t)r * n_head + h) * d;
            float qs[KV_MAX_HEAD_DIM];
            for (uint32_t e = 0; e < d && c->f16_inputs; e++) qs[e] = h16_clamped(qh[e] * scale);
            double m = -INFINITY;
            for (uint32_t p = 0; p < n; p++) {
                OSCAR_TRY(attn_ref_read_kv(c, row_seq[r], p, h / gqa, k, v));
                const uint32_t *words[4];
                if (c->f16_inputs && c->int2_codes && !c->key_centers && int2_rows(c, row_seq[r], p, h / gqa, words))
                    s[p] = dot_codes(qs, words[0], words[1], d, c->group);
                else s[p] = c->f16_inputs ? dot_f16(qs, k, d) : score(c, qh, k, row_seq[r], p, h / gqa, scale);
                if (s[p] > m) m = s[p];
            }
            double l = 0.0;
            for (uint32_t e = 0; e < d; e++) o[e] = 0.0;
            for (uint32_t p = 0; p < n; p++) {
                OSCAR_TRY(attn_ref_read_kv(c, row_seq[r], p, h / gqa, k, v));
                double w = c->f16_inputs ? h16(exp(s[p] - m)) : exp(s[p] - m);
                l += w;
                const uint32_t *words[4];
                if (c->f16_inputs && c->int2_codes && int2_rows(c, row_seq[r], p, h / gqa, words))
                    for (uint32_t e = 0; e < d; e++) {
                        uint32_t pw = words[3][e / c->group];
                        o[e] += (double)h16_clamped((float)(w * param_scale(pw))) * code_at(words[2], e) + w * param_min(pw);
                    }
                else
                    for (uint32_t e = 0; e < d; e++) o[e] += w * (c->f16_inputs ? h16_clamped(v[e]) : v[e]);
            }
            float *oh = out + ((size_t)r * n_head + h) * d;
            for (uint32_t e = 0; e < d; e++) oh[e] = n ? (float)(o[e] / l) : 0.0f;
        }
    }
fail:
    free(k);
    free(v);
    free(s);
    free(o);
    return st;
}
