#version 450
// x [n][cols] fp32 as xh [n_pad][x_stride] fp16 x4, the input of the short-batch product
// (mul_mat_short.coopmat.comp): rounded to nearest, beyond the fp16 range clamped to +-65504,
// zeros in the padding (tokens n..n_pad-1, columns cols..4 x_stride-1). A thread per fp16 x4.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 256;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };      // [n][cols] fp32, cols a multiple of 4
layout(std430, binding = 1) writeonly buffer XH { f16vec4 xh[]; }; // [n_pad][x_stride] fp16 x4

layout(push_constant) uniform Push {
    uint n;        // tokens of x
    uint cols;     // columns of x
    uint n_pad;    // token rows of xh
    uint x_stride; // fp16 x4 a row of xh, >= cols / 4
} pc;

#include "common/grid.glsl"

void main()
{
    uint i = grid_invocation();
    if (i >= pc.n_pad * pc.x_stride) return;
    uint t = i / pc.x_stride, c = i % pc.x_stride;
    vec4 v = t < pc.n && 4u * c < pc.cols ? xv[t * (pc.cols / 4u) + c] : vec4(0.0);
    xh[i] = f16vec4(clamp(v, vec4(-65504.0), vec4(65504.0)));
}
