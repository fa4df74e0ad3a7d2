/* Plain loops for the fp16 matrix product; see tile_ref.h. */
#include "half.h"
#include "tile_ref.h"

void ovk_ref_matmul_f16(const uint16_t *a, const uint16_t *b, float *c, uint32_t m, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (uint32_t l = 0; l < k; l++)
                acc += (double)ovk_f16_to_f32(a[(size_t)i * k + l]) * ovk_f16_to_f32(b[(size_t)l * n + j]);
            c[(size_t)i * n + j] = (float)acc;
        }
}

void ovk_ref_matmul_f32(const float *a, const float *b, float *c, uint32_t m, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (uint32_t l = 0; l < k; l++) acc += (double)a[(size_t)i * k + l] * b[(size_t)l * n + j];
            c[(size_t)i * n + j] = (float)acc;
        }
}
