#version 450
// Append n tokens' K and V rows to fp16 pages (kv_layout.h), rotated (y = x·R) in the
// Hadamard and OSCAR modes (in OSCAR mode after subtracting the layer's centering vector,
// y = (x − μ)·R, and for K rows with a key-center table (CENTER_BLOCK = B > 0) minus the rotated
// center of the token's block of positions, y = (x − μ)·R − c_{p/B}·R_K), and rounded to fp16
// exactly (common/half.glsl).
// Reference: kv_ref_append (runtime/kv_ref.c); the rotation sums x_i * R[i][j] in fp32 in
// index order with nothing fused, as the reference does.
// With ROPE (KV_ROPE_*), each K row first gets RoPE at its row's position, with the arithmetic
// of rope.comp (common/rope.glsl): the result equals rope.comp followed by this kernel without
// ROPE, bit for bit, one dispatch and barrier fewer.
//
// Dispatch: (min(n_tokens, 65535), NKV, 2) workgroups; z = 0 writes K, z = 1 writes V; x loops
// over the tokens with stride gl_NumWorkGroups.x. Any workgroup size (spec 0); HEAD_DIM a
// multiple of 4. Dispatch as many x groups as there are tokens (up to 65535): lavapipe ends an
// invocation after about 65535 loop iterations, and one token costs d * d / (8 WG) of them.
#include "common/half.glsl"
#include "common/kv_layout.h"
#include "common/kv_write.h"
#include "common/rope.glsl"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 16;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;
layout(constant_id = KV_SPEC_MODE) const uint MODE = KV_MODE_FP16;
layout(constant_id = KV_SPEC_ROT_PER_HEAD) const uint ROT_PER_HEAD = 0;
layout(constant_id = KV_SPEC_INPUT_F16) const uint INPUT_F16 = 0;
layout(constant_id = KV_SPEC_ROPE) const uint ROPE = KV_ROPE_NONE;
layout(constant_id = KV_SPEC_CENTER_BLOCK) const uint CENTER_BLOCK = 0;

const uint WG = gl_WorkGroupSize.x;
const uint HALF_D = HEAD_DIM / 2u;
const bool ROTATE = MODE >= KV_MODE_HADAMARD;

layout(std430, binding = 0) readonly buffer KIn { uint k_in[]; };   // [n_rows][NKV][d] fp32 bits, or [..][d/2] fp16 pairs
layout(std430, binding = 1) readonly buffer VIn { uint v_in[]; };   // same shape as K
layout(std430, binding = 2) readonly buffer RotK { vec2 r_k[]; };   // [n_rot][d][d/2] pairs of R_K[i][2w..2w+1]
layout(std430, binding = 3) readonly buffer RotV { vec2 r_v[]; };   // same for R_V
layout(std430, binding = 4) readonly buffer Slots { kv_token_slot slots[]; }; // [n_tokens] src_row -> (dst_page, dst_slot)
layout(std430, binding = 5) writeonly buffer Pool { uint f16_pool[]; };      // [page][K,V][NKV][P][d/2] fp16 pairs
layout(std430, binding = 6) readonly buffer Means { float means[]; };       // [K,V][NKV][d] centering vectors μ of the layer,
layout(std430, binding = 6) readonly buffer MeansW { uint means_w[]; };     // then its key-center table (kv_write.h)
layout(std430, binding = 7) readonly buffer Pos { int pos[]; };             // [n_rows] positions (ROPE)
layout(std430, binding = 8) readonly buffer Freq { float inv_freq[]; };     // [n_rot/2] radians per position (ROPE)

layout(push_constant) uniform Push { kv_append_push pc; };

shared float xs[KV_MAX_HEAD_DIM]; // [d] the input row, fp32

#include "common/kv_append_input.glsl"

void main()
{
    const uint h = gl_WorkGroupID.y, kind = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
    for (uint t = gl_WorkGroupID.x; t < pc.n_tokens; t += gl_NumWorkGroups.x) {
        kv_token_slot s = slots[t]; // s.src_slot: the token's position
        uint row = s.src_row * N_KV + h;
        uint base = INPUT_F16 != 0u ? row * HALF_D : row * HEAD_DIM;
        uint dst = s.dst_page * KV_F16_PAGE_WORDS(N_KV, PAGE, HEAD_DIM) + kind * (N_KV * PAGE * HALF_D) +
                   (h * PAGE + s.dst_slot) * HALF_D;
        bool staged = ROTATE || (ROPE != KV_ROPE_NONE && kind == 0u); // uniform over the workgroup
        if (!staged) {
            for (uint w = tid; w < HALF_D; w += WG) {
                uint word;
                if (INPUT_F16 != 0u) word = in_word(kind, base + w); // verbatim copy
                else word = pack_half2(uintBitsToFloat(in_word(kind, base + 2u * w)),
                                       uintBitsToFloat(in_word(kind, base + 2u * w + 1u)));
                f16_pool[dst + w] = word;
            }
            continue;
        }
        barrier(); // the previous token's readers of xs are done
        uint mbase = (kind * N_KV + h) * HEAD_DIM;
        int p = ROPE != KV_ROPE_NONE ? pos[s.src_row] : 0;
        for (uint i = tid; i < HEAD_DIM; i += WG) {
            float x = roped_elem(kind, base, i, p);
            xs[i] = MODE == KV_MODE_ROTATED ? x - means[mbase + i] : x;
        }
        barrier();
        if (!ROTATE) { // RoPE only: as rope.comp's fp32 output, then rounded like the copy above
            for (uint w = tid; w < HALF_D; w += WG) f16_pool[dst + w] = pack_half2(xs[2u * w], xs[2u * w + 1u]);
            continue;
        }
        uint rbase = (ROT_PER_HEAD != 0u ? h : 0u) * HEAD_DIM * HALF_D;
        bool centered = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u && kind == 0u;
        uint cbase = KV_CENTER_TABLE_OFF(N_KV, HEAD_DIM) + (s.src_slot / max(CENTER_BLOCK, 1u) * N_KV + h) * HALF_D;
        for (uint w = tid; w < HALF_D; w += WG) {
            precise float a0 = 0.0, a1 = 0.0;
            for (uint i = 0u; i < HEAD_DIM; i += 4u) { // 4 terms per iteration, still in order
                uint ri = rbase + i * HALF_D + w;
                vec2 r0 = kind == 0u ? r_k[ri] : r_v[ri];
                vec2 r1 = kind == 0u ? r_k[ri + HALF_D] : r_v[ri + HALF_D];
                vec2 r2 = kind == 0u ? r_k[ri + 2u * HALF_D] : r_v[ri + 2u * HALF_D];
                vec2 r3 = kind == 0u ? r_k[ri + 3u * HALF_D] : r_v[ri + 3u * HALF_D];
                a0 += xs[i] * r0.x;
                a1 += xs[i] * r0.y;
                a0 += xs[i + 1u] * r1.x;
                a1 += xs[i + 1u] * r1.y;
                a0 += xs[i + 2u] * r2.x;
                a1 += xs[i + 2u] * r2.y;
                a0 += xs[i + 3u] * r3.x;
                a1 += xs[i + 3u] * r3.y;
            }
            if (centered) {
                vec2 cr = unpackHalf2x16(means_w[cbase + w]);
                a0 = a0 - cr.x;
                a1 = a1 - cr.y;
            }
            f16_pool[dst + w] = pack_half2(a0, a1);
        }
    }
}
