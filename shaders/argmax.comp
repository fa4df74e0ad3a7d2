#version 450
// Greedy decoding on the GPU: out[r] = the index of the largest value of logits[r][0..n),
// ties to the lowest index. NaNs are never chosen; a row of only NaNs gives 0.
// One workgroup per row; (value, index) pairs reduced in shared memory. Each thread reads
// UNROLL logits before comparing them: one load at a time waits a memory latency per element
// (a 128K vocabulary took ~107 us on the H200).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // a power of two

layout(std430, binding = 0) readonly buffer L { float logits[]; }; // [n_rows][n] fp32
layout(std430, binding = 1) writeonly buffer O { uint outi[]; };   // [n_rows] indices

layout(push_constant) uniform Push {
    uint n;       // logits per row
    uint n_rows;  // rows (= workgroups, x-major over x and y)
} pc;

#include "common/grid.glsl"

const uint UNROLL = 8;

shared float sv[WORKGROUP];
shared uint si[WORKGROUP];

void main()
{
    uint row = grid_group(), tid = gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    uint base = row * pc.n;
    float bv = uintBitsToFloat(0xFF800000u); // -inf
    uint bi = 0xFFFFFFFFu;                   // none yet
    for (uint i0 = tid; i0 < pc.n; i0 += UNROLL * WORKGROUP) {
        float v[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) v[u] = logits[base + min(i0 + u * WORKGROUP, pc.n - 1u)];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
            uint i = i0 + u * WORKGROUP; // grows: the first of equal values wins
            if (i < pc.n && (v[u] > bv || (v[u] == bv && bi == 0xFFFFFFFFu))) { bv = v[u]; bi = i; }
        }
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
