#version 450
// fp32 -> int8 blocks for the integer dot products (layout and rounding: common/q8_layout.h).
// One invocation per block of 32 elements; rows are consecutive blocks, so any number of rows of
// n elements (n a multiple of 32) is n_rows * n / 32 blocks. Inputs must be finite.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/q8_layout.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 64;

#include "common/grid.glsl" // after the workgroup size, which it reads

layout(std430, binding = 0) readonly buffer X { float x[]; };        // [n_blocks * 32] fp32
layout(std430, binding = 1) writeonly buffer Q { uint q8_codes[]; };  // [n_blocks * 8] 4 int8 per word
layout(std430, binding = 2) writeonly buffer S { float q8_scales[]; }; // [n_blocks] fp32

layout(push_constant) uniform Push { q8_quantize_push pc; };

#include "common/q8_quantize.glsl"

void main()
{
    uint b = grid_invocation();
    if (b >= pc.n_blocks) return;
    float v[OSCAR_Q8_BLOCK];
    [[unroll]] for (uint i = 0u; i < OSCAR_Q8_BLOCK; i++) v[i] = x[b * OSCAR_Q8_BLOCK + i];
    q8_store_block(b, v);
}
