#version 450
// Greedy decoding on the GPU: out[r] = the index of the largest value of logits[r][0..n),
// ties to the lowest index. NaNs are never chosen; a row of only NaNs gives 0.
// One workgroup per row; (value, index) pairs reduced in shared memory.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // a power of two

layout(std430, binding = 0) readonly buffer L { float logits[]; }; // [n_rows][n] fp32
layout(std430, binding = 1) writeonly buffer O { uint outi[]; };   // [n_rows] indices

layout(push_constant) uniform Push {
    uint n;       // logits per row
    uint n_rows;  // rows (= workgroups, x-major over x and y)
} pc;

#include "common/grid.glsl"

shared float sv[WORKGROUP];
shared uint si[WORKGROUP];

void main()
{
    uint row = grid_group(), tid = gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    uint base = row * pc.n;
    float bv = uintBitsToFloat(0xFF800000u); // -inf
    uint bi = 0xFFFFFFFFu;                   // none yet
    for (uint i = tid; i < pc.n; i += WORKGROUP) {
        float v = logits[base + i];
        if (v > bv || (v == bv && bi == 0xFFFFFFFFu)) { bv = v; bi = i; } // i grows: first wins ties
    }
    sv[tid] = bv;
    si[tid] = bi;
    barrier();
    for (uint h = WORKGROUP >> 1; h > 0u; h >>= 1) {
        if (tid < h) {
            float v = sv[tid + h];
            uint i = si[tid + h];
            if (i != 0xFFFFFFFFu && (si[tid] == 0xFFFFFFFFu || v > sv[tid] || (v == sv[tid] && i < si[tid]))) {
                sv[tid] = v;
                si[tid] = i;
            }
        }
        barrier();
    }
    if (tid == 0u) outi[row] = si[0] == 0xFFFFFFFFu ? 0u : si[0];
}
