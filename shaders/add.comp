#version 450
// y[i] = a[i] + b[i % nb]: the residual add (nb = n) and a bias broadcast over rows
// (nb = row length). y may alias a.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer A { float a[]; };  // [n] fp32
layout(std430, binding = 1) readonly buffer B { float b[]; };  // [nb] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n] fp32

layout(push_constant) uniform Push {
    uint n;
    uint nb;   // >= 1
} pc;

#include "common/grid.glsl"

void main()
{
    uint i = grid_invocation();
    if (i >= pc.n) return;
    y[i] = a[i] + b[i % pc.nb];
}
