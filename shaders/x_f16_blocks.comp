#version 450
// Prepares the input of the packed-fp16 mat-vec (mul_mat_vec_f16.comp): each 32-element block
// of x [n][cols] fp32 becomes 16 fp16 pairs, scaled by the power of two s = 2^k that puts
// max|x * s| of the block in [8, 16) (so the shader's fp16 products and sums cannot overflow,
// and small blocks keep their precision), plus 1 / s in fp32. A thread per block.
//
// Pair order: pair 2j holds elements (4j, 4j + 2), pair 2j + 1 elements (4j + 1, 4j + 3),
// j = 0..7: the order in which one mask-and-or decodes the codes of bytes 0 and 2 (then 1
// and 3) of a 32-bit word.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };     // [n][cols] fp32
layout(std430, binding = 1) writeonly buffer XQ { uvec4 xq4[]; }; // [n][cols/32][4] uvec4: 16 fp16 pairs a block,
layout(std430, binding = 1) writeonly buffer XS { float xs[]; };  // then [n][cols/32] fp32 1/s (from word n*cols/2)

layout(push_constant) uniform Push {
    uint blocks; // n * cols / 32
} pc;

#include "common/grid.glsl"

void main()
{
    uint b = grid_invocation();
    if (b >= pc.blocks) return;
    vec4 x[8];
    for (uint k = 0u; k < 8u; k++) x[k] = xv[8u * b + k];
    vec4 m4 = max(max(max(abs(x[0]), abs(x[1])), max(abs(x[2]), abs(x[3]))),
                  max(max(abs(x[4]), abs(x[5])), max(abs(x[6]), abs(x[7]))));
    int e;
    frexp(max(max(m4.x, m4.y), max(m4.z, m4.w)), e); // max = f * 2^e, f in [0.5, 1); 0 and NaN give some e
    e = clamp(e, -100, 100);                         // inf: the block stays inf
    float s = ldexp(1.0, 4 - e);
    for (uint k = 0u; k < 4u; k++) {
        vec4 a = x[2u * k] * s, c = x[2u * k + 1u] * s;
        xq4[4u * b + k] = uvec4(packHalf2x16(a.xz), packHalf2x16(a.yw), packHalf2x16(c.xz), packHalf2x16(c.yw));
    }
    xs[16u * pc.blocks + b] = ldexp(1.0, e - 4);
}
