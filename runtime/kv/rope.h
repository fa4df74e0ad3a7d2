/* Rotary position embedding on the CPU: the pairing a model uses, RoPE of one head, and the
 * closed-form average of RoPE over a range of positions (the KV cache's key centers). The GPU
 * kernels apply the same arithmetic on load (shaders/common/rope.glsl). */
#ifndef OVK_ROPE_H
#define OVK_ROPE_H

#include <stdint.h>

typedef enum ovk_rope_type {
    OSCAR_ROPE_NORMAL = 0, /* rotate (x[2i], x[2i+1]) */
    OSCAR_ROPE_NEOX = 1,   /* rotate (x[i], x[i + n_rot/2]) */
} ovk_rope_type;

/* Applies RoPE in place to one head x[0..head_dim) at position `pos`: pairs (2i, 2i+1) for
 * NORMAL, (i, i + n_rot/2) for NEOX, i < n_rot/2, angle pos * theta[i]; dims >= n_rot pass. */
void ovk_rope_apply(float *x, uint32_t head_dim, uint32_t n_rot, ovk_rope_type type, const float *theta,
                      uint32_t pos);

/* The mean over positions pos_begin .. pos_end-1 of RoPE applied to x (one head, as
 * ovk_rope_apply rotates it), in closed form and double precision: pair i is x's pair times
 * (1/n) Σ_p e^{i·p·theta[i]}. out may alias x; pos_end <= pos_begin copies x. Centers keys:
 * the constant that best matches RoPE_p(μ) over a context, for a pre-RoPE key mean μ. */
void ovk_rope_average(const float *x, uint32_t head_dim, uint32_t n_rot, ovk_rope_type type, const float *theta,
                        uint32_t pos_begin, uint32_t pos_end, float *out);

#endif
