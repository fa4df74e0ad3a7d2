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

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint n_items = pc.n_rows * pc.n_heads;
    for (uint item = gl_WorkGroupID.x; item < n_items; item += gl_NumWorkGroups.x) {
        uint h = item % pc.n_heads;
        uint rbase = (pc.heads_per_rot == 0u ? 0u : h / pc.heads_per_rot) * HEAD_DIM * D4; // vec4 index
        barrier(); // the previous item's readers of xs are done
        for (uint i = tid; i < D4; i += WG) xs[i] = x_in[item * D4 + i];
        barrier();
        if (TRANSPOSE == 0u) {
            // thread w: outputs 4w..4w+3 = sum_i x_i R[i][4w..4w+3]; a warp reads a row of R
            for (uint w = tid; w < D4; w += WG) {
                vec4 acc = vec4(0.0);
                for (uint i4 = 0u; i4 < D4; i4++) {
                    vec4 x = xs[i4];
                    uint r = rbase + 4u * i4 * D4 + w;
                    acc += x.x * rot[r] + x.y * rot[r + D4] + x.z * rot[r + 2u * D4] + x.w * rot[r + 3u * D4];
                }
                y_out[item * D4 + w] = acc;
            }
        } else {
            // thread w: outputs 4w..4w+3 = dot(R[j], x) for j = 4w..4w+3
            for (uint w = tid; w < D4; w += WG) {
                vec4 acc = vec4(0.0);
                for (uint i4 = 0u; i4 < D4; i4++) {
                    vec4 x = xs[i4];
                    uint r = rbase + 4u * w * D4 + i4;
                    acc += vec4(dot(rot[r], x), dot(rot[r + D4], x), dot(rot[r + 2u * D4], x), dot(rot[r + 3u * D4], x));
                }
                y_out[item * D4 + w] = acc;
            }
        }
    }
}
