/* Plain-loop references of the KV write path; contracts in kv_ref.h. */
#include <assert.h>
#include <string.h>

#include "half.h"
#include "int2_quant.h"
#include "kv_ref.h"

static_assert(sizeof(struct kv_append_push) == 8, "kv_append_push must match the shader");
static_assert(sizeof(struct kv_flush_push) == 24, "kv_flush_push must match the shader");
static_assert(sizeof(struct kv_rotate_push) == 16, "kv_rotate_push must match the shader");

/* ---- addressing ------------------------------------------------------------------------- */

uint64_t kv_ref_f16_row(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot)
{
    uint64_t half_d = s->head_dim / 2;
    return (uint64_t)page * KV_F16_PAGE_WORDS((uint64_t)s->n_kv, s->page, s->head_dim) +
           (uint64_t)kind * s->n_kv * s->page * half_d + ((uint64_t)head * s->page + slot) * half_d;
}

/* First word of the K (kind 0) or V (kind 1) half of an INT2 page. */
static uint64_t int2_half_base(const kv_ref_shape *s, uint32_t page, uint32_t kind)
{
    uint64_t half_page = (uint64_t)s->n_kv * s->page * (KV_INT2_ROW_CODE_WORDS(s->head_dim) +
                                                        KV_INT2_ROW_PARAM_WORDS(s->head_dim, s->group));
    return (uint64_t)page * 2 * half_page + kind * half_page;
}

uint64_t kv_ref_int2_codes(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot)
{
    return int2_half_base(s, page, kind) + ((uint64_t)head * s->page + slot) * KV_INT2_ROW_CODE_WORDS(s->head_dim);
}

uint64_t kv_ref_int2_params(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot)
{
    uint64_t cw = KV_INT2_ROW_CODE_WORDS(s->head_dim), pw = KV_INT2_ROW_PARAM_WORDS(s->head_dim, s->group);
    return int2_half_base(s, page, kind) + (uint64_t)s->n_kv * s->page * cw + ((uint64_t)head * s->page + slot) * pw;
}

/* ---- append --------------------------------------------------------------------------- */

/* Element i of input row `row` (already row * NKV + head) as fp32. */
static float input_elem(const void *in, uint32_t input_f16, uint32_t d, uint64_t row, uint32_t i)
{
    if (input_f16) {
        uint32_t w = ((const uint32_t *)in)[row * (d / 2) + i / 2];
        return ovk_f16_to_f32((uint16_t)(i & 1 ? w >> 16 : w & 0xFFFFu));
    }
    return ((const float *)in)[row * d + i];
}

void kv_ref_append(const kv_ref_shape *s, uint32_t mode, uint32_t rot_per_head, uint32_t input_f16,
                   const void *k, const void *v, const float *r_k, const float *r_v, const float *mean_k,
                   const float *mean_v, const uint32_t *key_centers, uint32_t center_block,
                   const struct kv_token_slot *slots, uint32_t n_slots, uint32_t *f16_pool)
{
    const uint32_t d = s->head_dim;
    const int rotate = mode >= KV_MODE_HADAMARD;
    float x[KV_MAX_HEAD_DIM], y[KV_MAX_HEAD_DIM];
    for (uint32_t t = 0; t < n_slots; t++) {
        for (uint32_t kind = 0; kind < 2; kind++) {
            const void *in = kind == 0 ? k : v;
            const float *rot = kind == 0 ? r_k : r_v;
            for (uint32_t h = 0; h < s->n_kv; h++) {
                uint64_t row = (uint64_t)slots[t].src_row * s->n_kv + h;
                uint32_t *dst = f16_pool + kv_ref_f16_row(s, slots[t].dst_page, kind, h, slots[t].dst_slot);
                if (!rotate && input_f16) {
                    memcpy(dst, (const uint32_t *)in + row * (d / 2), d / 2 * sizeof(uint32_t));
                    continue;
                }
                for (uint32_t i = 0; i < d; i++) x[i] = input_elem(in, input_f16, d, row, i);
                const float *mean = mode == KV_MODE_ROTATED ? (kind == 0 ? mean_k : mean_v) : NULL;
                if (mean)
                    for (uint32_t i = 0; i < d; i++) x[i] = x[i] - mean[(uint64_t)h * d + i];
                if (rotate) {
                    const float *r = rot + (uint64_t)(rot_per_head ? h : 0) * d * d;
                    for (uint32_t j = 0; j < d; j++) {
                        float acc = 0.0f;
                        for (uint32_t i = 0; i < d; i++) {
                            float p = x[i] * r[(uint64_t)i * d + j];
                            acc = acc + p;
                        }
                        y[j] = acc;
                    }
                    if (mode == KV_MODE_ROTATED && kind == 0 && key_centers) { /* less the block's rotated center */
                        const uint32_t *cw = key_centers + ((uint64_t)(slots[t].src_slot / center_block) * s->n_kv + h) * (d / 2);
                        for (uint32_t j = 0; j < d; j++) y[j] = y[j] - ovk_f16_to_f32((uint16_t)(cw[j / 2] >> (16 * (j % 2))));
                    }
                } else {
                    memcpy(y, x, d * sizeof(float));
                }
                for (uint32_t w = 0; w < d / 2; w++)
                    dst[w] = (uint32_t)ovk_f32_to_f16(y[2 * w]) | (uint32_t)ovk_f32_to_f16(y[2 * w + 1]) << 16;
            }
        }
    }
}

/* ---- flush ---------------------------------------------------------------------------- */

void kv_ref_flush(const kv_ref_shape *s, const struct kv_token_slot *slots, uint32_t n_slots,
                  float clip_k, float clip_v, const float *key_feedback, uint32_t feedback_per_head,
                  const float *key_metric, uint32_t refit_rounds, const uint32_t *f16_pool, uint32_t *int2_pool)
{
    const uint32_t d = s->head_dim, G = s->group;
    float x[KV_MAX_HEAD_DIM], y[KV_MAX_HEAD_DIM], scratch[KV_MAX_HEAD_DIM];
    uint8_t codes[KV_MAX_HEAD_DIM];
    for (uint32_t t = 0; t < n_slots; t++) {
        for (uint32_t kind = 0; kind < 2; kind++) {
            float r = kind == 0 ? clip_k : clip_v;
            if (r < 0.0f) r = 0.0f;
            for (uint32_t h = 0; h < s->n_kv; h++) {
                const uint32_t *src = f16_pool + kv_ref_f16_row(s, slots[t].src_row, kind, h, slots[t].src_slot);
                for (uint32_t w = 0; w < d / 2; w++) {
                    x[2 * w] = ovk_f16_to_f32((uint16_t)(src[w] & 0xFFFFu));
                    x[2 * w + 1] = ovk_f16_to_f32((uint16_t)(src[w] >> 16));
                }
                float tau = ovk_int2_clip_threshold(x, d, r, scratch);
                memcpy(y, x, d * sizeof *y);
                ovk_int2_clip(x, d, tau, x);
                uint32_t *cw = int2_pool + kv_ref_int2_codes(s, slots[t].dst_page, kind, h, slots[t].dst_slot);
                uint32_t *pw = int2_pool + kv_ref_int2_params(s, slots[t].dst_page, kind, h, slots[t].dst_slot);
                uint16_t scale_h[KV_MAX_HEAD_DIM], min_h[KV_MAX_HEAD_DIM];
                for (uint32_t g = 0; g < d / G; g++) {
                    ovk_int2_quantize_group(x + g * G, G, codes + g * G, &scale_h[g], &min_h[g]);
                    pw[g] = (uint32_t)scale_h[g] | (uint32_t)min_h[g] << 16;
                }
                size_t mat = feedback_per_head ? (size_t)h * d * d : 0;
                const float *F = kind == 0 && key_feedback ? key_feedback + mat : NULL;
                if (F) ovk_int2_feedback_codes(x, d, G, scale_h, min_h, F, codes);
                if (refit_rounds && G == d) {
                    ovk_int2_refit_row(y, d, kind == 0 && key_metric ? key_metric + mat : NULL, F, refit_rounds, codes,
                                         &scale_h[0], &min_h[0]);
                    pw[0] = (uint32_t)scale_h[0] | (uint32_t)min_h[0] << 16;
                }
                for (uint32_t w = 0; w < d / 16; w++) {
                    uint32_t word = 0;
                    for (uint32_t e = 0; e < 16; e++) word |= (uint32_t)codes[16 * w + e] << (2 * e);
                    cw[w] = word;
                }
            }
        }
    }
}

void kv_ref_dequant_row(const kv_ref_shape *s, const uint32_t *codes, const uint32_t *params, float *out)
{
    const uint32_t d = s->head_dim, G = s->group;
    for (uint32_t g = 0; g < d / G; g++) {
        uint8_t c[KV_MAX_HEAD_DIM];
        for (uint32_t e = 0; e < G; e++) {
            uint32_t i = g * G + e;
            c[e] = (uint8_t)(codes[i / 16] >> (2 * (i % 16)) & 3u);
        }
        ovk_int2_dequantize_group(c, G, (uint16_t)(params[g] & 0xFFFFu), (uint16_t)(params[g] >> 16), out + g * G);
    }
}

/* ---- rotation ------------------------------------------------------------------------- */

void kv_ref_rotate_rows(const float *x, uint32_t n_rows, uint32_t n_heads, uint32_t d, const float *r,
                        uint32_t heads_per_rot, int transpose, float *y)
{
    double xr[KV_MAX_HEAD_DIM];
    for (uint64_t item = 0; item < (uint64_t)n_rows * n_heads; item++) {
        uint32_t h = (uint32_t)(item % n_heads);
        const float *rot = r + (uint64_t)(heads_per_rot ? h / heads_per_rot : 0) * d * d;
        for (uint32_t i = 0; i < d; i++) xr[i] = x[item * d + i];
        for (uint32_t j = 0; j < d; j++) {
            double acc = 0.0;
            for (uint32_t i = 0; i < d; i++)
                acc += xr[i] * (transpose ? rot[(uint64_t)j * d + i] : rot[(uint64_t)i * d + j]);
            y[item * d + j] = (float)acc;
        }
    }
}
