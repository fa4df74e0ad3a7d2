// The x of a mat-vec shader (mul_mat_vec*.comp): binding 1 as it is, or with X_GLU the SwiGLU
// of two buffers, x = silu(gate) * up with gate at binding 1 and up at binding 3, computed as
// the swiglu op does (swiglu.comp), so the down projection of an MLP reads its input without
// a swiglu dispatch and barrier before it. Include after the X binding (xv).
#ifndef OSCAR_MV_X_GLSL
#define OSCAR_MV_X_GLSL

layout(constant_id = 6) const uint X_GLU = 0;                   // 1: x = silu(xv) * xu
layout(std430, binding = 3) readonly buffer XUp { vec4 xu[]; }; // [n][cols] fp32 (X_GLU), else unread

// x[4i .. 4i + 3] of the flat [n][cols] input.
vec4 mv_x(uint i)
{
    if (X_GLU == 0u) return xv[i];
    vec4 g = xv[i];
    return g / (1.0 + exp(-g)) * xu[i];
}

#endif
