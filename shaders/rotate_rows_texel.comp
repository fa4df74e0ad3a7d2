#version 450
// rotate_rows.comp's contract shaped for CPU devices (lavapipe): y = x·R (TRANSPOSE = 0),
// y = x·Rᵀ (1) or y = x (2) for every head of every row, RoPE first with ROPE (common/rope.glsl:
// with TRANSPOSE = 2 rope.comp's bits). One invocation per (row, head) holds the row in registers
// and reads R by 16-byte texel fetches; no shared memory, no barrier. x, y [n_rows][n_heads][d]
// fp32 may be the same buffer range (an invocation reads its whole row before writing it); head
// h uses R[h / heads_per_rot] of the layer's R [n_rot][d][d] at texel pc.rot_base. Reference:
// kv_ref_rotate_rows (runtime/kv_ref.c), error bound, not bit-exact.
//
// Dispatch: (min(n, 65535), 1, ceil(n / 65535)) workgroups for n = ceil(n_rows * n_heads / WG)
// (ovk_attn_grid); invocation (x + z * num_x) * WG + local is item row * n_heads + head. Any
// workgroup size.
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/kv_write.h"
#include "common/rope.glsl"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_TRANSPOSE) const uint TRANSPOSE = 0;
layout(constant_id = KV_SPEC_ROPE) const uint ROPE = KV_ROPE_NONE;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint D4 = D / 4u;

layout(std430, binding = 0) readonly buffer XIn { float x_s[]; };   // [n_rows][n_heads][d]
layout(binding = 1) uniform usamplerBuffer rot;                     // [layers][n_rot][d][d/4] texels of fp32 R
layout(std430, binding = 2) writeonly buffer YOut { vec4 y_out[]; }; // [n_rows][n_heads][d/4]
layout(std430, binding = 3) readonly buffer Pos { int pos[]; };     // [n_rows] positions (ROPE)
layout(std430, binding = 4) readonly buffer Freq { float inv_freq[]; }; // [n_rot/2] radians per position (ROPE)

layout(push_constant) uniform Push { kv_rotate_texel_push pc; };

// Element i of input row `item` after RoPE at position p (as read without ROPE).
float roped(uint item, uint i, int p)
{
    uint pair, i0, i1;
    if (ROPE == KV_ROPE_NONE || !rope_pair_of(i, pc.n_rot, ROPE == KV_ROPE_NEOX, pair, i0, i1)) return x_s[item * D + i];
    vec2 r = rope_pair(x_s[item * D + i0], x_s[item * D + i1], p, inv_freq[pair]);
    return i == i0 ? r.x : r.y;
}

void main()
{
    uint item = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * WG + gl_LocalInvocationID.x;
    if (item >= pc.n_rows * pc.n_heads) return;
    int p = ROPE != KV_ROPE_NONE ? pos[item / pc.n_heads] : 0;
    vec4 x[D4]; // the row after RoPE
    [[unroll]] for (uint i = 0u; i < D4; i++)
        x[i] = vec4(roped(item, 4u * i, p), roped(item, 4u * i + 1u, p), roped(item, 4u * i + 2u, p), roped(item, 4u * i + 3u, p));
    if (TRANSPOSE == 2u) { // no rotation: RoPE (or a copy)
        [[unroll]] for (uint i = 0u; i < D4; i++) y_out[item * D4 + i] = x[i];
        return;
    }
    uint h = item % pc.n_heads;
    int rbase = int(pc.rot_base + (pc.heads_per_rot == 0u ? 0u : h / pc.heads_per_rot) * D * D4);
    for (uint w = 0u; w < D4; w++) {
        vec4 a = vec4(0.0);
        if (TRANSPOSE == 0u) {
            // outputs 4w..4w+3 = sum_i x_i R[i][4w..4w+3]
            [[unroll]] for (uint i = 0u; i < D4; i++) {
                int r = rbase + int(4u * i * D4 + w);
                a += x[i].x * uintBitsToFloat(texelFetch(rot, r)) + x[i].y * uintBitsToFloat(texelFetch(rot, r + int(D4))) +
                     x[i].z * uintBitsToFloat(texelFetch(rot, r + int(2u * D4))) + x[i].w * uintBitsToFloat(texelFetch(rot, r + int(3u * D4)));
            }
        } else {
            // outputs 4w..4w+3 = dot(R[j], x) for j = 4w..4w+3
            [[unroll]] for (uint i = 0u; i < D4; i++) {
                int r = rbase + int(4u * w * D4 + i);
                a += vec4(dot(uintBitsToFloat(texelFetch(rot, r)), x[i]), dot(uintBitsToFloat(texelFetch(rot, r + int(D4))), x[i]),
                          dot(uintBitsToFloat(texelFetch(rot, r + int(2u * D4))), x[i]),
                          dot(uintBitsToFloat(texelFetch(rot, r + int(3u * D4))), x[i]));
            }
        }
        y_out[item * D4 + w] = a;
    }
}
