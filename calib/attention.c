/* Causal softmax attention of one query head (the S·V of C_S, DESIGN.md §1 (b)). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "error.h"
#include "calib.h"

#define ATTN_BLOCK 64u /* query rows per score block */

void ovk_softmax_causal_row(float *row, uint32_t seen, uint32_t n)
{
    float mx = row[0];
    for (uint32_t j = 1; j < seen; j++) mx = row[j] > mx ? row[j] : mx;
    double sum = 0.0;
    for (uint32_t j = 0; j < seen; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    float inv = (float)(1.0 / sum);
    for (uint32_t j = 0; j < seen; j++) row[j] *= inv;
    for (uint32_t j = seen; j < n; j++) row[j] = 0.0f;
}

oscar_status ovk_attention_causal(const float *q, size_t q_stride, uint32_t n_new, const float *k,
                                    const float *v, size_t kv_stride, uint32_t n_past, uint32_t d,
                                    float *out)
{
    oscar_status st = OSCAR_OK;
    float *s = NULL; /* [ATTN_BLOCK][n_past + n_new] scores, then probabilities */
    uint64_t t_all = (uint64_t)n_past + n_new;
    if (n_new == 0) return OSCAR_OK;
    if (!q || !k || !v || !out || d == 0 || t_all > INT32_MAX)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_attention_causal: NULL pointer or bad shape");
    s = malloc((size_t)ATTN_BLOCK * t_all * sizeof *s);
    if (!s) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_attention_causal: %u x %llu scores",
                       ATTN_BLOCK, (unsigned long long)t_all);
    float scale = 1.0f / sqrtf((float)d);
    for (uint32_t a0 = 0; a0 < n_new; a0 += ATTN_BLOCK) {
        uint32_t nb = n_new - a0 < ATTN_BLOCK ? n_new - a0 : ATTN_BLOCK;
        uint32_t tk = n_past + a0 + nb; /* keys the last row of the block may see */
        /* s[a][j] = scale · q_a·k_j, leading dimension tk */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)tk, (int)d, scale,
                    q + (size_t)a0 * q_stride, (int)q_stride, k, (int)kv_stride, 0.0f, s, (int)tk);
        for (uint32_t a = 0; a < nb; a++) /* causal: keys 0..pos */
            ovk_softmax_causal_row(s + (size_t)a * tk, n_past + a0 + a + 1, tk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)d, (int)tk, 1.0f, s, (int)tk,
                    v, (int)kv_stride, 0.0f, out + (size_t)a0 * d, (int)d);
    }
fail:
    free(s);
    return st;
}
