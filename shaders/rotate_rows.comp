#version 450
// y = x·R (TRANSPOSE = 0) or y = x·Rᵀ (TRANSPOSE = 1) for every head of every row:
// x, y [n_rows][n_heads][d] fp32, head h uses R[h / heads_per_rot] of R [n_rot][d][d]
// (row-major, R[i][j] at i*d + j). Rotates queries by R_K before attention and un-rotates the
// attention output by R_Vᵀ. Reference: kv_ref_rotate_rows (runtime/kv_ref.c), error bound
// not bit-exact (fp32 sums, fused as the compiler likes).
//
// Dispatch: (min(n_rows * n_heads, 65535), 1, 1) workgroups, each looping over (row, head)
// items with stride gl_NumWorkGroups.x. Any workgroup size (spec 0). x and y may be the same
// buffer range (each workgroup reads its whole row before writing it).
#include "common/kv_layout.h"
#include "common/kv_write.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_TRANSPOSE) const uint TRANSPOSE = 0;

const uint WG = gl_WorkGroupSize.x;
const uint D4 = HEAD_DIM / 4u;

layout(std430, binding = 0) readonly buffer XIn { vec4 x_in[]; };   // [n_rows][n_heads][d/4]
layout(std430, binding = 1) readonly buffer Rot { vec4 rot[]; };    // [n_rot][d][d/4]
layout(std430, binding = 2) writeonly buffer YOut { vec4 y_out[]; }; // [n_rows][n_heads][d/4]

layout(push_constant) uniform Push { kv_rotate_push pc; };

shared vec4 xs[KV_MAX_HEAD_DIM / 4]; // [d/4] the input row

// With WG >= d/4 the sum over i of each output vec4 is split into PARTS strided parts, one
// thread each, and the parts are added in shared memory: more loads in flight per row (the
// kernel is latency-bound: a few rows of d x d multiply-adds each). Smaller workgroups loop
// over the outputs with whole sums.
const uint PARTS = WG >= D4 ? WG / D4 : 1u;
shared vec4 red[PARTS * D4];        // [PARTS][d/4] partial sums

// Part `part` of output vec4 w of x·R (T = 0) or x·Rᵀ (T = 1), i4 = part, part + PARTS, ...
vec4 partial_sum(uint rbase, uint w, uint part)
{
    vec4 acc = vec4(0.0);
    for (uint i4 = part; i4 < D4; i4 += PARTS) {
        vec4 x = xs[i4];
        if (TRANSPOSE == 0u) {
            // outputs 4w..4w+3 = sum_i x_i R[i][4w..4w+3]; a warp reads a row of R
            uint r = rbase + 4u * i4 * D4 + w;
            acc += x.x * rot[r] + x.y * rot[r + D4] + x.z * rot[r + 2u * D4] + x.w * rot[r + 3u * D4];
        } else {
            // outputs 4w..4w+3 = dot(R[j], x) for j = 4w..4w+3
            uint r = rbase + 4u * w * D4 + i4;
            acc += vec4(dot(rot[r], x), dot(rot[r + D4], x), dot(rot[r + 2u * D4], x), dot(rot[r + 3u * D4], x));
        }
    }
    return acc;
}

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint n_items = pc.n_rows * pc.n_heads;
    for (uint item = gl_WorkGroupID.x; item < n_items; item += gl_NumWorkGroups.x) {
        uint h = item % pc.n_heads;
        uint rbase = (pc.heads_per_rot == 0u ? 0u : h / pc.heads_per_rot) * HEAD_DIM * D4; // vec4 index
        barrier(); // the previous item's readers of xs and red are done
        for (uint i = tid; i < D4; i += WG) xs[i] = x_in[item * D4 + i];
        barrier();
        if (WG >= D4) {
            uint w = tid % D4, part = tid / D4;
            if (part < PARTS) red[part * D4 + w] = partial_sum(rbase, w, part);
            barrier();
            if (tid < D4) {
                vec4 acc = red[tid];
                for (uint p = 1u; p < PARTS; p++) acc += red[p * D4 + tid];
                y_out[item * D4 + tid] = acc;
            }
        } else {
            for (uint w = tid; w < D4; w += WG) y_out[item * D4 + w] = partial_sum(rbase, w, 0u);
        }
    }
}
