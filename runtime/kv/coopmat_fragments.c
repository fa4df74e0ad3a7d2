/* The probe of the cooperative matrices' element order: its dispatch, the read-back and the
 * order attn_decode_cm8r assumes. */
#include <stdlib.h>
#include <string.h>

#include "coopmat_fragments.h"

#define FRAGMENT_FLOATS 24u /* a lane's record: A, B, accumulator, 8 components each */

oscar_status ovk_cm8_fragments_read(oscar_context *ctx, ovk_cm8_fragments *out)
{
    oscar_status st = OSCAR_OK;
    ovk_buffer buf = { 0 };
    float *host = NULL;
    memset(out, 0, sizeof *out);
    if (!(ctx->features.enabled & OVK_NEEDS_COOPMAT) || !ovk_coopmat_has_f16_shape(ctx, 16, 8, 16) ||
        !ovk_variant_usable(ctx, "coopmat_fragments.coopmat"))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "cooperative-matrix fragments: no 16 x 8 x 16 fp16 products on '%s'",
                           ctx->info.name);
    uint32_t lanes = ovk_max_subgroup_size(ctx);
    if (lanes == 0 || lanes > OVK_FRAGMENT_LANES_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "cooperative-matrix fragments: subgroups of %u lanes", lanes);
    size_t bytes = ((size_t)lanes * FRAGMENT_FLOATS + 3) * 4;
    host = malloc(bytes);
    if (!host) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "cooperative-matrix fragments: %zu bytes", bytes);
    ovk_pipeline_desc d = { .shader = "coopmat_fragments.coopmat", .n_buffers = 1, .n_spec = 1, .spec = { lanes },
                            .required_subgroup_size = ctx->info.min_subgroup_size != ctx->info.max_subgroup_size ? lanes : 0 };
    ovk_pipeline *p;
    ovk_binding b = { &buf, 0, 0 };
    OSCAR_TRY(ovk_pipeline_get(ctx, &d, &p));
    OSCAR_TRY(ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &buf));
    OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
    OSCAR_TRY(ovk_cmd_dispatch(ctx, &ctx->cmd, p, &b, NULL, (uint32_t[3]){ 1, 1, 1 }));
    OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    OSCAR_TRY(ovk_buffer_download(ctx, &buf, 0, host, bytes));
    out->lanes = lanes;
    for (uint32_t m = 0; m < 3; m++) {
        float n = host[lanes * FRAGMENT_FLOATS + m];
        out->length[m] = n >= 0 && n <= 8 ? (uint32_t)n : 0;
    }
    for (uint32_t l = 0; l < lanes; l++)
        for (uint32_t m = 0; m < 3; m++)
            for (uint32_t i = 0; i < 8; i++) {
                float v = host[l * FRAGMENT_FLOATS + 8 * m + i];
                out->at[l][m][i] = v >= 0 && v < 256 ? (int16_t)v : -1;
            }
fail:
    if (ctx->cmd.recording) ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &buf);
    free(host);
    return st;
}

int ovk_cm8_fragments_match(const ovk_cm8_fragments *f)
{
    if (f->lanes != 32 || f->length[0] != 8) return 0;
    for (uint32_t l = 0; l < 32; l++) {
        uint32_t g = l / 4, t = l % 4;
        for (uint32_t i = 0; i < 8; i++) {
            uint32_t row = g + 8 * (i >> 2), col = 2 * t + (i & 1) + 8 * ((i >> 1) & 1);
            if (f->at[l][0][i] != (int16_t)(row * 16 + col)) return 0;
        }
    }
    return 1;
}

int ovk_cm8_fragments_known(oscar_context *ctx)
{
    if (ctx->cm8_fragments == 0) {
        ovk_cm8_fragments f;
        ctx->cm8_fragments = ovk_cm8_fragments_read(ctx, &f) == OSCAR_OK && ovk_cm8_fragments_match(&f) ? 1 : -1;
    }
    return ctx->cm8_fragments == 1;
}
