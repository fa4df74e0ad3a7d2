/* A shader against its C reference: fp32 -> fp16 conversion (shaders/common/half.glsl vs
 * runtime/half.h), bit-exact on random and adversarial values, under several workgroup
 * sizes (none of which may matter: no shader assumes a subgroup size). */
#include <string.h>

#include "half.h"
#include "test_gpu.h"

static uint32_t special_values[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x3F800000u, 0xBF800000u,
    0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FFFFFu, 0x47800000u, /* around 65504 / overflow */
    0x38800000u, 0x387FFFFFu, 0x33000000u, 0x33000001u, 0x32FFFFFFu, 0x33800000u, /* subnormal edges */
    0x3F801000u, 0x3F803000u, 0x3F800FFFu, 0x3F801001u, /* ties to even and near-ties */
    0x00000001u, 0x807FFFFFu, /* fp32 subnormals */
    0x7F7FFFFFu, 0x38FFE000u, 0x35000000u, 0x34FFF000u,
};

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(42);
    enum { N = 1 << 16 };
    static uint32_t in[N], got_half[N], got_back[N];
    size_t n_special = sizeof special_values / sizeof special_values[0];
    for (size_t i = 0; i < N; i++) {
        if (i < n_special) in[i] = special_values[i];
        else if (i % 4 == 0) in[i] = test_rng_u32();                           /* any bit pattern */
        else if (i % 4 == 1) in[i] = (test_rng_u32() & 0x81FFFFFFu) | 0x30000000u; /* near fp16 range */
        else { float f = test_rng_normal() * 100.0f; memcpy(&in[i], &f, 4); }
        if ((in[i] & 0x7F800000u) == 0x7F800000u && (in[i] & 0x7FFFFFu)) in[i] = 0x7FC00000u; /* one NaN */
    }
    ovk_buffer b_in, b_half, b_back;
    CHECK_OK(test_gpu_buffer_from(ctx, in, sizeof in, &b_in));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, sizeof in, &b_half));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, sizeof in, &b_back));
    uint32_t workgroups[] = { 1, 7, 64, 256 };
    for (size_t w = 0; w < 4; w++) {
        ovk_pipeline_desc d = { .shader = "convert_f16", .n_buffers = 3, .push_size = 4, .n_spec = 1,
                                  .spec = { /* WORKGROUP */ workgroups[w] } };
        ovk_pipeline *p;
        CHECK_OK(ovk_pipeline_get(ctx, &d, &p));
        ovk_binding b[3] = { { &b_in, 0, 0 }, { &b_half, 0, 0 }, { &b_back, 0, 0 } };
        uint32_t push = N;
        CHECK_OK(ovk_buffer_fill(ctx, &b_half, 0, sizeof in, 0xFFFFFFFFu));
        uint32_t groups = ovk_div_up(N, workgroups[w]), gy = groups > 32768 ? 2 : 1;
        CHECK_OK(test_gpu_run(ctx, p, b, &push, ovk_div_up(groups, gy), gy, 1));
        CHECK_OK(ovk_buffer_download(ctx, &b_half, 0, got_half, sizeof got_half));
        CHECK_OK(ovk_buffer_download(ctx, &b_back, 0, got_back, sizeof got_back));
        size_t bad_half = 0, bad_back = 0;
        for (size_t i = 0; i < N; i++) {
            float f;
            memcpy(&f, &in[i], 4);
            uint16_t want = ovk_f32_to_f16(f);
            if (got_half[i] != want) {
                if (bad_half++ < 5) fprintf(stderr, "f32 %08x: gpu %04x, c %04x\n", in[i], got_half[i], want);
            }
            float back = ovk_f16_to_f32(want);
            uint32_t back_bits;
            memcpy(&back_bits, &back, 4);
            int nan = (want & 0x7C00u) == 0x7C00u && (want & 0x3FFu);
            if (!nan && got_back[i] != back_bits) {
                if (bad_back++ < 5) fprintf(stderr, "f16 %04x: gpu %08x, c %08x\n", want, got_back[i], back_bits);
            }
        }
        CHECK_MSG(bad_half == 0, "workgroup %u: %zu fp16 conversions differ", workgroups[w], bad_half);
        CHECK_MSG(bad_back == 0, "workgroup %u: %zu fp16->fp32 conversions differ", workgroups[w], bad_back);
    }
    ovk_buffer_destroy(ctx, &b_in);
    ovk_buffer_destroy(ctx, &b_half);
    ovk_buffer_destroy(ctx, &b_back);
    return test_gpu_finish(ctx);
}
