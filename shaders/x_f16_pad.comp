#version 450
// x [n][cols] fp32 -> xh [n_pad][x_stride] fp16 for the streaming short-batch matmul
// (mul_mat_stream.coopmat.comp): rounded to nearest even, clamped to +-65504 first (the rounding
// ovk_ref_mul_mat_f16 reproduces); the tokens n..n_pad-1 and the columns cols..x_stride-1 are
// zeros, so that the matmul's whole matrices of tokens and steps of columns read only numbers.
// A thread per 4 elements.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 1) writeonly buffer XH { uvec2 xh[]; }; // [n_pad][x_stride] fp16, 4 a uvec2

layout(push_constant) uniform Push {
    uint n, cols;        // cols a multiple of 4
    uint n_pad, x_stride; // x_stride >= cols, a multiple of 4
} pc;

#include "common/grid.glsl"
#include "common/half.glsl"

void main()
{
    uint i = grid_invocation(), quads = pc.x_stride / 4u;
    if (i >= pc.n_pad * quads) return;
    uint t = i / quads, c = (i % quads) * 4u;
    vec4 v = t < pc.n && c < pc.cols ? clamp(xv[(t * pc.cols + c) / 4u], vec4(-65504.0), vec4(65504.0)) : vec4(0.0);
    xh[i] = uvec2(pack_half2(v.x, v.y), pack_half2(v.z, v.w));
}
