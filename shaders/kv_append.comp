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
// Dispatch: (x, NKV, 2) workgroups; z = 0 writes K, z = 1 writes V. Any workgroup size (spec 0);
// HEAD_DIM a multiple of 4.
//   Without rotation: x = min(n_tokens, 65535), looping over the tokens with stride x.
//   Rotated modes: x = (d/2 / PAIRS) column blocks times a number of token groups. A workgroup
//   first loads the PAIRS output pairs' columns of R [d][2 PAIRS] into shared memory, all its
//   threads at once, each issuing all its loads before its first store, then takes the tokens of
//   its group (stride: the number of groups) TOK at a time (WG / PAIRS, 1 to 4): thread task
//   (k, w) sums output pair w of the k-th token over i from there. Each output's sum keeps its
//   order; R's loads are paid once a workgroup, not once a term.
// lavapipe ends an invocation after about 65535 loop iterations: as many token groups as tokens
// (up to 65535) keep a workgroup's loop short there.
#extension GL_EXT_control_flow_attributes : require
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
layout(constant_id = KV_SPEC_APPEND_PAIRS) const uint PAIRS = 1; // rotated modes: output pairs a workgroup, <= WG

const uint WG = gl_WorkGroupSize.x;
const uint HALF_D = HEAD_DIM / 2u;
const bool ROTATE = MODE >= KV_MODE_HADAMARD;
const uint N_CB = ROTATE ? HALF_D / PAIRS : 1u; // column blocks (rotated modes)
const uint TOK = ROTATE ? KV_APPEND_PASS_TOKENS(WG, PAIRS) : 1u; // rotated modes: tokens a pass
const uint R_VEC4 = HEAD_DIM * PAIRS / 2u;      // rotated modes, PAIRS even: vec4s of R's column block
const uint R_LOADS = (R_VEC4 + WG - 1u) / WG;   // ... a thread loads, all in flight at once

layout(std430, binding = 0) readonly buffer KIn { uint k_in[]; };   // [n_rows][NKV][d] fp32 bits, or [..][d/2] fp16 pairs
layout(std430, binding = 1) readonly buffer VIn { uint v_in[]; };   // same shape as K
layout(std430, binding = 2) readonly buffer RotK { vec2 r_k[]; };   // [n_rot][d][d/2] pairs of R_K[i][2w..2w+1]
layout(std430, binding = 3) readonly buffer RotV { vec2 r_v[]; };   // same for R_V
layout(std430, binding = 2) readonly buffer RotK4 { vec4 r_k4[]; }; // the same buffers, two pairs at a time
layout(std430, binding = 3) readonly buffer RotV4 { vec4 r_v4[]; };
layout(std430, binding = 4) readonly buffer Slots { kv_token_slot slots[]; }; // [n_tokens] src_row -> (dst_page, dst_slot)
layout(std430, binding = 5) writeonly buffer Pool { uint f16_pool[]; };      // [page][K,V][NKV][P][d/2] fp16 pairs
layout(std430, binding = 6) readonly buffer Means { float means[]; };       // [K,V][NKV][d] centering vectors μ of the layer,
layout(std430, binding = 6) readonly buffer MeansW { uint means_w[]; };     // then its key-center table (kv_write.h)
layout(std430, binding = 7) readonly buffer Pos { int pos[]; };             // [n_rows] positions (ROPE)
layout(std430, binding = 8) readonly buffer Freq { float inv_freq[]; };     // [n_rot/2] radians per position (ROPE)

layout(push_constant) uniform Push { kv_append_push pc; };

shared float xs[TOK * KV_MAX_HEAD_DIM]; // [TOK][d] the input rows, fp32 (rotated modes: less μ)
shared vec2 rs[HEAD_DIM * PAIRS];        // rotated modes: [d][PAIRS] the column pairs of R this workgroup sums

#include "common/kv_append_input.glsl"

// Rotated modes: y = (x − μ)·R (− the block's rotated center) for this workgroup's column block
// cb of R, over the tokens t0, t0 + n_groups, ... of its group, TOK of them a pass: thread task
// (k, w) of the pass sums output pair w of its k-th token.
void append_rotated(uint h, uint kind, uint tid)
{
    const uint cb = gl_WorkGroupID.x % N_CB, n_groups = gl_NumWorkGroups.x / N_CB, t0 = gl_WorkGroupID.x / N_CB;
    if (t0 >= pc.n_tokens) return; // uniform over the workgroup
    uint rbase = (ROT_PER_HEAD != 0u ? h : 0u) * HEAD_DIM * HALF_D + cb * PAIRS; // pair index of row 0
    if (PAIRS % 2u == 0u) { // two pairs a load (rbase and HALF_D even), all of a thread's loads before its stores
        vec4 rl[R_LOADS];
        [[unroll]] for (uint k = 0u; k < R_LOADS; k++) {
            uint e = min(tid + k * WG, R_VEC4 - 1u), i = e / (PAIRS / 2u), w2 = e % (PAIRS / 2u);
            uint ri = (rbase + i * HALF_D) / 2u + w2;
            rl[k] = kind == 0u ? r_k4[ri] : r_v4[ri];
        }
        [[unroll]] for (uint k = 0u; k < R_LOADS; k++) {
            uint e = tid + k * WG, i = e / (PAIRS / 2u), w2 = e % (PAIRS / 2u);
            if (e < R_VEC4) {
                rs[i * PAIRS + 2u * w2] = rl[k].xy;
                rs[i * PAIRS + 2u * w2 + 1u] = rl[k].zw;
            }
        }
    } else {
        for (uint e = tid; e < HEAD_DIM * PAIRS; e += WG) {
            uint ri = rbase + (e / PAIRS) * HALF_D + e % PAIRS;
            rs[e] = kind == 0u ? r_k[ri] : r_v[ri];
        }
    }
    uint mbase = (kind * N_KV + h) * HEAD_DIM;
    bool centered = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u && kind == 0u;
    for (uint tp = t0; tp < pc.n_tokens; tp += TOK * n_groups) {
        barrier(); // the previous pass's readers of xs are done
        for (uint e = tid; e < TOK * HEAD_DIM; e += WG) {
            uint k = e / HEAD_DIM, i = e % HEAD_DIM, t = tp + k * n_groups;
            if (t >= pc.n_tokens) continue;
            kv_token_slot s = slots[t];
            uint row = s.src_row * N_KV + h;
            float x = roped_elem(kind, INPUT_F16 != 0u ? row * HALF_D : row * HEAD_DIM, i,
                                 ROPE != KV_ROPE_NONE ? pos[s.src_row] : 0);
            xs[e] = MODE == KV_MODE_ROTATED ? x - means[mbase + i] : x;
        }
        barrier(); // xs (and on the first pass rs) written
        for (uint task = tid; task < TOK * PAIRS; task += WG) {
            uint k = task / PAIRS, wl = task % PAIRS, t = tp + k * n_groups;
            if (t >= pc.n_tokens) continue;
            kv_token_slot s = slots[t]; // s.src_slot: the token's position
            uint w = cb * PAIRS + wl;  // output pair: columns 2w, 2w + 1
            precise float a0 = 0.0, a1 = 0.0;
            [[unroll]] for (uint i = 0u; i < HEAD_DIM; i++) { // in index order, products not fused
                vec2 r = rs[i * PAIRS + wl];
                a0 += xs[k * HEAD_DIM + i] * r.x;
                a1 += xs[k * HEAD_DIM + i] * r.y;
            }
            if (centered) {
                uint cbase = KV_CENTER_TABLE_OFF(N_KV, HEAD_DIM) + (s.src_slot / max(CENTER_BLOCK, 1u) * N_KV + h) * HALF_D;
                vec2 cr = unpackHalf2x16(means_w[cbase + w]);
                a0 = a0 - cr.x;
                a1 = a1 - cr.y;
            }
            uint dst = s.dst_page * KV_F16_PAGE_WORDS(N_KV, PAGE, HEAD_DIM) + kind * (N_KV * PAGE * HALF_D) +
                       (h * PAGE + s.dst_slot) * HALF_D;
            f16_pool[dst + w] = pack_half2(a0, a1);
        }
    }
}

void main()
{
    const uint h = gl_WorkGroupID.y, kind = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
    if (ROTATE) {
        append_rotated(h, kind, tid);
        return;
    }
    for (uint t = gl_WorkGroupID.x; t < pc.n_tokens; t += gl_NumWorkGroups.x) {
        kv_token_slot s = slots[t];
        uint row = s.src_row * N_KV + h;
        uint base = INPUT_F16 != 0u ? row * HALF_D : row * HEAD_DIM;
        uint dst = s.dst_page * KV_F16_PAGE_WORDS(N_KV, PAGE, HEAD_DIM) + kind * (N_KV * PAGE * HALF_D) +
                   (h * PAGE + s.dst_slot) * HALF_D;
        if (ROPE == KV_ROPE_NONE || kind != 0u) { // uniform over the workgroup
            for (uint w = tid; w < HALF_D; w += WG) {
                uint word;
                if (INPUT_F16 != 0u) word = in_word(kind, base + w); // verbatim copy
                else word = pack_half2(uintBitsToFloat(in_word(kind, base + 2u * w)),
                                       uintBitsToFloat(in_word(kind, base + 2u * w + 1u)));
                f16_pool[dst + w] = word;
            }
            continue;
        }
        // RoPE: as rope.comp's fp32 output, then rounded like the copy above
        barrier(); // the previous token's readers of xs are done
        for (uint i = tid; i < HEAD_DIM; i += WG) xs[i] = roped_elem(kind, base, i, pos[s.src_row]);
        barrier();
        for (uint w = tid; w < HALF_D; w += WG) f16_pool[dst + w] = pack_half2(xs[2u * w], xs[2u * w + 1u]);
    }
}
