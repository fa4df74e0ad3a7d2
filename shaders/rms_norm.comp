#version 450
// RMS norm per row: y[r][i] = (x[r][i] * s) * w[i], s = 1 / sqrt(mean_i(x[r][i]^2) + eps).
// Rows of `dim` elements share the weight w: the hidden-state norm (rows = tokens, dim =
// n_embd) and qwen3's per-head q/k norm (rows = tokens * heads, dim = head_dim) alike.
// One workgroup per row; sum of squares in fp32, reduced in shared memory. y may alias x.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // a power of two

layout(std430, binding = 0) readonly buffer X { float x[]; };  // [n_rows][dim] fp32
layout(std430, binding = 1) readonly buffer Wt { float w[]; }; // [dim] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n_rows][dim] fp32

layout(push_constant) uniform Push {
    uint dim;     // elements per row
    uint n_rows;  // rows (= workgroups, x-major over x and y)
    float eps;
} pc;

#include "common/grid.glsl"

shared float red[WORKGROUP];

void main()
{
    uint row = grid_group(), tid = gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    uint base = row * pc.dim;
    float s = 0.0;
    for (uint i = tid; i < pc.dim; i += WORKGROUP) s += x[base + i] * x[base + i];
    red[tid] = s;
    barrier();
    for (uint h = WORKGROUP >> 1; h > 0u; h >>= 1) {
        if (tid < h) red[tid] += red[tid + h];
        barrier();
    }
    float scale = 1.0 / sqrt(red[0] / float(pc.dim) + pc.eps);
    for (uint i = tid; i < pc.dim; i += WORKGROUP) y[base + i] = (x[base + i] * scale) * w[i];
}
