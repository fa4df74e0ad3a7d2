#version 450
// y = x·R (TRANSPOSE = 0), y = x·Rᵀ (TRANSPOSE = 1) or y = x (TRANSPOSE = 2) for every head of
// every row: x, y [n_rows][n_heads][d] fp32, head h uses R[h / heads_per_rot] of R [n_rot][d][d]
// (row-major, R[i][j] at i*d + j). Prepares the queries before attention (x·R_K). Reference:
// kv_ref_rotate_rows (runtime/kv_ref.c), error bound not bit-exact (fp32 sums, fused as the
// compiler likes).
// With ROPE (KV_ROPE_*), x gets RoPE at its row's position first, with rope.comp's arithmetic
// (common/rope.glsl): with TRANSPOSE = 2 the result is rope.comp's, bit for bit.
//
// Dispatch: (min(n_rows * n_heads, 65535), 1, 1) workgroups, each looping over (row, head)
// items with stride gl_NumWorkGroups.x. Any workgroup size (spec 0). x and y may be the same
// buffer range (each workgroup reads its whole row before writing it).
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/kv_write.h"
#include "common/rope.glsl"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_TRANSPOSE) const uint TRANSPOSE = 0;
layout(constant_id = KV_SPEC_ROPE) const uint ROPE = KV_ROPE_NONE;

const uint WG = gl_WorkGroupSize.x;
const uint D4 = HEAD_DIM / 4u;

layout(std430, binding = 0) readonly buffer XIn { vec4 x_in[]; };   // [n_rows][n_heads][d/4]
layout(std430, binding = 1) readonly buffer Rot { vec4 rot[]; };    // [n_rot][d][d/4]
layout(std430, binding = 2) writeonly buffer YOut { vec4 y_out[]; }; // [n_rows][n_heads][d/4]
layout(std430, binding = 0) readonly buffer XInS { float x_s[]; };  // the same as XIn, by element
layout(std430, binding = 3) readonly buffer Pos { int pos[]; };     // [n_rows] positions (ROPE)
layout(std430, binding = 4) readonly buffer Freq { float inv_freq[]; }; // [n_rot/2] radians per position (ROPE)

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
    [[unroll]] for (uint i4 = part; i4 < D4; i4 += PARTS) { // an unroll hint: the loads of R go out together
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

// Elements 4 i4 .. 4 i4 + 3 of the input row `item` after RoPE at position p.
vec4 roped4(uint item, uint i4, int p)
{
    if (ROPE == KV_ROPE_NONE) return x_in[item * D4 + i4];
    vec4 y;
    for (uint c = 0u; c < 4u; c++) {
        uint i = 4u * i4 + c, pair, i0, i1;
        if (rope_pair_of(i, pc.n_rot, ROPE == KV_ROPE_NEOX, pair, i0, i1)) {
            vec2 r = rope_pair(x_s[item * HEAD_DIM + i0], x_s[item * HEAD_DIM + i1], p, inv_freq[pair]);
            y[c] = i == i0 ? r.x : r.y;
        } else {
            y[c] = x_s[item * HEAD_DIM + i];
        }
    }
    return y;
}

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint n_items = pc.n_rows * pc.n_heads;
    for (uint item = gl_WorkGroupID.x; item < n_items; item += gl_NumWorkGroups.x) {
        uint h = item % pc.n_heads;
        uint rbase = (pc.heads_per_rot == 0u ? 0u : h / pc.heads_per_rot) * HEAD_DIM * D4; // vec4 index
        int p = ROPE != KV_ROPE_NONE ? pos[item / pc.n_heads] : 0;
        barrier(); // the previous item's readers of xs and red are done
        for (uint i = tid; i < D4; i += WG) xs[i] = roped4(item, i, p);
        barrier();
        if (TRANSPOSE == 2u) { // no rotation: RoPE (or a copy)
            for (uint i = tid; i < D4; i += WG) y_out[item * D4 + i] = xs[i];
            continue;
        }
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
