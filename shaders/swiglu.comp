#version 450
// SwiGLU gate: y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). y may alias either.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer G { float gate[]; }; // [n] fp32
layout(std430, binding = 1) readonly buffer U { float up[]; };   // [n] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n] fp32

layout(push_constant) uniform Push { uint n; } pc;

#include "common/grid.glsl"

void main()
{
    uint i = grid_invocation();
    if (i >= pc.n) return;
    float g = gate[i];
    y[i] = g / (1.0 + exp(-g)) * up[i];
}
