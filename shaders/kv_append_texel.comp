#version 450
// kv_append.comp's contract and arithmetic, bit for bit, shaped for CPU devices (lavapipe): one
// invocation per (token, KV head) of K (workgroup y = 0) or V (y = 1) holds its row in
// registers and reads R by 16-byte texel fetches; no shared memory, no barrier. Output texel w
// of y = (x − μ)·R sums x_i * R[i][4w..4w+3] in index order, nothing fused, as kv_ref_append
// (runtime/kv_ref.c) and kv_append do.
//
// Dispatch: (min(n, 65535), 2, ceil(n / 65535)) workgroups for n = ceil(n_tokens * NKV / WG)
// (ovk_attn_grid); invocation (x + z * num_x) * WG + local is token / NKV, KV head % NKV. Any
// workgroup size.
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

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint D4 = D / 4u;
const uint HALF_D = D / 2u;
const bool ROTATE = MODE >= KV_MODE_HADAMARD;

layout(std430, binding = 0) readonly buffer KIn { uint k_in[]; };   // [n_rows][NKV][d] fp32 bits, or [..][d/2] fp16 pairs
layout(std430, binding = 1) readonly buffer VIn { uint v_in[]; };   // same shape as K
layout(binding = 2) uniform usamplerBuffer r_k;                     // [layers][n_rot][d][d/4] texels of fp32 R_K
layout(binding = 3) uniform usamplerBuffer r_v;                     // same for R_V
layout(std430, binding = 4) readonly buffer Slots { kv_token_slot slots[]; }; // [n_tokens] src_row -> (dst_page, dst_slot)
layout(std430, binding = 5) writeonly buffer Pool { uint f16_pool[]; };      // [page][K,V][NKV][P][d/2] fp16 pairs
layout(std430, binding = 6) readonly buffer Means { float means[]; };       // [K,V][NKV][d] centering vectors μ of the layer,
layout(std430, binding = 6) readonly buffer MeansW { uint means_w[]; };     // then its key-center table (kv_write.h)
layout(std430, binding = 7) readonly buffer Pos { int pos[]; };             // [n_rows] positions (ROPE)
layout(std430, binding = 8) readonly buffer Freq { float inv_freq[]; };     // [n_rot/2] radians per position (ROPE)

layout(push_constant) uniform Push { kv_append_texel_push pc; };

#include "common/kv_append_input.glsl"

// Output texel w of x·R, R's matrix at texel rbase of `rot`: in index order, nothing fused.
vec4 rotate4(usamplerBuffer rot, int rbase, float x[D], uint w)
{
    precise vec4 a = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < D; i++) {
        precise vec4 t = x[i] * uintBitsToFloat(texelFetch(rot, rbase + int(i * D4 + w)));
        a = a + t;
    }
    return a;
}

void main()
{
    const uint kind = gl_WorkGroupID.y;
    uint gid = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * WG + gl_LocalInvocationID.x;
    uint t = gid / N_KV, h = gid % N_KV;
    if (t >= pc.n_tokens) return;
    kv_token_slot s = slots[t]; // s.src_slot: the token's position
    uint row = s.src_row * N_KV + h;
    uint base = INPUT_F16 != 0u ? row * HALF_D : row * D;
    uint dst = s.dst_page * KV_F16_PAGE_WORDS(N_KV, PAGE, D) + kind * (N_KV * PAGE * HALF_D) + (h * PAGE + s.dst_slot) * HALF_D;
    bool staged = ROTATE || (ROPE != KV_ROPE_NONE && kind == 0u);
    if (!staged) {
        for (uint w = 0u; w < HALF_D; w++) {
            uint word;
            if (INPUT_F16 != 0u) word = in_word(kind, base + w); // verbatim copy
            else word = pack_half2(uintBitsToFloat(in_word(kind, base + 2u * w)), uintBitsToFloat(in_word(kind, base + 2u * w + 1u)));
            f16_pool[dst + w] = word;
        }
        return;
    }
    uint mbase = (kind * N_KV + h) * D;
    int p = ROPE != KV_ROPE_NONE ? pos[s.src_row] : 0;
    float x[D]; // the row (after RoPE; less μ in OSCAR mode), fp32
    [[unroll]] for (uint i = 0u; i < D; i++) {
        float v = roped_elem(kind, base, i, p);
        x[i] = MODE == KV_MODE_ROTATED ? v - means[mbase + i] : v;
    }
    if (!ROTATE) { // RoPE only: as rope.comp's fp32 output, then rounded like the copy above
        [[unroll]] for (uint w = 0u; w < HALF_D; w++) f16_pool[dst + w] = pack_half2(x[2u * w], x[2u * w + 1u]);
        return;
    }
    int rbase = int(pc.rot_base + (ROT_PER_HEAD != 0u ? h : 0u) * D * D4);
    bool centered = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u && kind == 0u;
    uint cbase = KV_CENTER_TABLE_OFF(N_KV, D) + (s.src_slot / max(CENTER_BLOCK, 1u) * N_KV + h) * HALF_D;
    for (uint w = 0u; w < D4; w++) {
        vec4 a = kind == 0u ? rotate4(r_k, rbase, x, w) : rotate4(r_v, rbase, x, w); // kind: uniform in the workgroup
        if (centered) {
            vec2 c0 = unpackHalf2x16(means_w[cbase + 2u * w]), c1 = unpackHalf2x16(means_w[cbase + 2u * w + 1u]);
            a = a - vec4(c0, c1);
        }
        f16_pool[dst + 2u * w] = pack_half2(a.x, a.y);
        f16_pool[dst + 2u * w + 1u] = pack_half2(a.z, a.w);
    }
}
