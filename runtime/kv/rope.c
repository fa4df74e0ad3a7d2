/* Rotary position embedding on the CPU (rope.h). */
#include <math.h>
#include <string.h>

#include "rope.h"

void ovk_rope_apply(float *x, uint32_t head_dim, uint32_t n_rot, ovk_rope_type type, const float *theta,
                      uint32_t pos)
{
    (void)head_dim;
    uint32_t half = n_rot / 2;
    for (uint32_t i = 0; i < half; i++) {
        float angle = (float)pos * theta[i];
        float c = cosf(angle), s = sinf(angle);
        uint32_t i0 = type == OSCAR_ROPE_NEOX ? i : 2 * i;
        uint32_t i1 = type == OSCAR_ROPE_NEOX ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = a * s + b * c;
    }
}

void ovk_rope_average(const float *x, uint32_t head_dim, uint32_t n_rot, ovk_rope_type type, const float *theta,
                        uint32_t pos_begin, uint32_t pos_end, float *out)
{
    memmove(out, x, head_dim * sizeof *out);
    if (pos_end <= pos_begin) return;
    double n = (double)pos_end - (double)pos_begin;
    uint32_t half = n_rot / 2;
    for (uint32_t i = 0; i < half; i++) {
        /* (1/n) Σ_{p=b}^{b+n-1} e^{iθp} = e^{iθ(b + (n-1)/2)} · sin(nθ/2) / (n sin(θ/2)) */
        double t = theta[i], mid = t * ((double)pos_begin + 0.5 * (n - 1.0)), s2 = sin(0.5 * t);
        double amp = fabs(s2) < 1e-12 ? 1.0 : sin(0.5 * n * t) / (n * s2);
        double c = amp * cos(mid), s = amp * sin(mid);
        uint32_t i0 = type == OSCAR_ROPE_NEOX ? i : 2 * i;
        uint32_t i1 = type == OSCAR_ROPE_NEOX ? i + half : 2 * i + 1;
        double a = x[i0], b = x[i1];
        out[i0] = (float)(a * c - b * s);
        out[i1] = (float)(a * s + b * c);
    }
}
