#version 450
// y[i] = x[i] * s. y may alias x.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer X { float x[]; };  // [n] fp32
layout(std430, binding = 1) writeonly buffer Y { float y[]; }; // [n] fp32

layout(push_constant) uniform Push {
    uint n;
    float s;
} pc;

#include "common/grid.glsl"

void main()
{
    uint i = grid_invocation();
    if (i >= pc.n) return;
    y[i] = x[i] * pc.s;
}
