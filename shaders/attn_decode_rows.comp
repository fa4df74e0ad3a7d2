#version 450
// Decode attention shaped for CPU devices (lavapipe): one invocation per (row, query head) walks
// every item of its row in order with a single online softmax and writes the row's output
// itself: no partials, no merge, no shared memory, no barrier, no subgroup operation. The pages
// and R_V are read by 16-byte texel fetches, which llvmpipe compiles to plain gathers (a
// storage-buffer load there is a loop over the SIMD lanes). The same contract as the other
// decode kernels (common/attn_decode_body.glsl): rows, items, page tables, q rotated, out =
// o·R_Vᵀ (+ μ_V in OSCAR mode) in the rotated modes; fp32 arithmetic throughout.
//
// Tokens go in rounds of TB, unrolled, so a row of n tokens costs n / TB loop iterations:
// lavapipe ends an invocation after 65535 of them in all (the host keeps rows within that).
// Scores: fp16 keys as q·k; INT2 keys with the algebra of the other kernels, s = sum_g 4 sc_g
// (q·x - qsum_g) + mn_g qsum_g, x = 1 + c/4 made by or-ing the code into 1.0's mantissa; with a
// key-center table, + q·(c_b·R_K) of the token's block. Values: INT2 rows sum 4 p sc_g x_e per
// element and p mn_g - 4 p sc_g per group, added to every element of the group at the end.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/attn_push.h"
#include "common/kv_write.h"
#include "common/int2_code_x.glsl"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_GROUP) const uint GROUP = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 64;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;
layout(constant_id = KV_SPEC_GQA) const uint GQA = 1;
layout(constant_id = KV_SPEC_MODE) const uint MODE = KV_MODE_ROTATED;
layout(constant_id = KV_SPEC_ROT_PER_HEAD) const uint ROT_PER_HEAD = 0;
layout(constant_id = KV_SPEC_CENTER_BLOCK) const uint CENTER_BLOCK = 0; // B >= 16, or 0: no key-center table
layout(constant_id = KV_SPEC_SINK) const uint SINK = 64;               // INT2 index j is position SINK + j
layout(constant_id = KV_SPEC_ROWS_TB) const uint TB = 4;               // tokens a round

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint D4 = D / 4;
const uint N_HEAD = N_KV * GQA;
const uint CW = D / 16;                        // code words per INT2 row
const uint PWD = D / GROUP;                    // param words per INT2 row (groups)
const uint WPG = GROUP / 16;                   // code words per group
const uint INT2_PAGE_WORDS = 2 * N_KV * PAGE * (CW + PWD);
const uint K_PARAM_OFF = N_KV * PAGE * CW;     // word offsets of the four INT2 page regions
const uint V_CODE_OFF = N_KV * PAGE * (CW + PWD);
const uint V_PARAM_OFF = N_KV * PAGE * (2 * CW + PWD);
// K and V code rows on whole texels (sums, not &&: glslang's && of specialization constants
// fails its optimizer here)
const bool K_VEC4 = (INT2_PAGE_WORDS % 4u) + (CW % 4u) == 0u;
const bool V_VEC4 = (INT2_PAGE_WORDS % 4u) + (CW % 4u) + (V_CODE_OFF % 4u) == 0u;
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4; // fp16 page (K and V) in texels
const uint F16_ROW_VEC4 = D / 8;                // texels of an fp16 row
const bool CENTERED = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u;
const bool ROTATED = MODE == KV_MODE_HADAMARD || MODE == KV_MODE_ROTATED;
const float NEG_INF = -1.0 / 0.0;

// ---- bindings (those of the other decode kernels; 7 and 10, partials and counters, unread) ----
layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };              // [n_rows][n_head][d] fp32, rotated
layout(std430, binding = 1) readonly buffer Rows { kv_attn_row rows[]; };  // [n_rows]
layout(std430, binding = 2) readonly buffer Items { kv_attn_item items[]; }; // [n_items]
layout(binding = 3) uniform usamplerBuffer int2_pool;                      // [pages][INT2 page words / 4] texels
layout(binding = 4) uniform usamplerBuffer f16_pool;                       // [pages][fp16 page words / 4] texels
layout(std430, binding = 5) readonly buffer Int2Table { int int2_table[]; }; // [n_seq][max_int2_pages]
layout(std430, binding = 6) readonly buffer F16Table { int f16_table[]; };   // [n_seq][max_f16_pages]
layout(binding = 8) uniform usamplerBuffer rot_v;                          // [layers][n_rot][d][d/4] texels of fp32 R_V
layout(std430, binding = 9) writeonly buffer Out { float out_[]; };        // [n_rows][n_head][d] fp32
layout(std430, binding = 11) readonly buffer Means { float means[]; };     // [K,V][N_KV][d] centering vectors μ of the layer,
layout(std430, binding = 11) readonly buffer MeansW { uint means_w[]; };   // then its key-center table (kv_write.h)

layout(push_constant) uniform Push { attn_rows_push pc; };

// Word w of the INT2 pool.
uint int2_word(uint w)
{
    uvec4 t = texelFetch(int2_pool, int(w / 4u));
    uint c = w % 4u;
    return c == 0u ? t.x : c == 1u ? t.y : c == 2u ? t.z : t.w;
}

// The CW code words of the INT2 row starting at word `at`: whole texels, or word by word where
// rows do not start on a texel (K_VEC4 for K rows, V_VEC4 for V rows).
void code_row_vec4(uint at, out uint cw[CW])
{
    [[unroll]] for (uint i = 0u; i < CW / 4u; i++) {
        uvec4 t = texelFetch(int2_pool, int(at / 4u + i));
        cw[4u * i] = t.x, cw[4u * i + 1u] = t.y, cw[4u * i + 2u] = t.z, cw[4u * i + 3u] = t.w;
    }
}

void code_row_words(uint at, out uint cw[CW])
{
    [[unroll]] for (uint i = 0u; i < CW; i++) cw[i] = int2_word(at + i);
}

// q·(c_b·R_K) for the key-center block b of KV head kvh (scaled q).
float center_logit(vec4 q[D4], uint b, uint kvh)
{
    uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + (b * N_KV + kvh) * (D / 2u);
    float s = 0.0;
    [[unroll]] for (uint w = 0u; w < D4; w++)
        s += dot(q[w], vec4(unpackHalf2x16(means_w[cb + 2u * w]), unpackHalf2x16(means_w[cb + 2u * w + 1u])));
    return s;
}

// Online softmax over a round: the running max m moves to include the round's scores s (what
// was summed so far is rescaled by exp(m_old - m)), s becomes p = exp(s - m), summed into l.
// Tokens past the item's end carry s = -inf, so p = 0.
void softmax_round(inout float s[TB], inout float m, inout float l, inout vec4 o[D4], inout float ob[PWD])
{
    float mx = s[0];
    [[unroll]] for (uint u = 1u; u < TB; u++) mx = max(mx, s[u]);
    if (mx > m) { // rarely, once the max settles
        float r = exp(m - mx); // 0 while nothing was summed (m = -inf)
        l *= r;
        [[unroll]] for (uint i = 0u; i < D4; i++) o[i] *= r;
        [[unroll]] for (uint g = 0u; g < PWD; g++) ob[g] *= r;
        m = mx;
    }
    [[unroll]] for (uint u = 0u; u < TB; u++) {
        s[u] = exp(s[u] - m);
        l += s[u];
    }
}

// The bias of key-center block b, recomputed when b is not the block in *block.
float block_bias(vec4 q[D4], uint b, uint kvh, inout uint block, inout float bias)
{
    if (b != block) bias = center_logit(q, b, kvh), block = b;
    return bias;
}

// A round of TB INT2 tokens k0.. of item `it` (those at or past its end scored -inf).
void int2_round(kv_attn_item it, uint k0, uint kvh, vec4 q[D4], float qs[PWD], inout float m, inout float l,
                inout vec4 o[D4], inout float ob[PWD], inout uint block, inout float bias)
{
    uint base[TB], r[TB];
    float s[TB];
    [[unroll]] for (uint u = 0u; u < TB; u++) {
        uint k = min(k0 + u, it.end - 1u);
        base[u] = uint(int2_table[it.seq * pc.max_int2_pages + k / PAGE]) * INT2_PAGE_WORDS;
        r[u] = kvh * PAGE + k % PAGE;
        uint kc[CW];
        if (K_VEC4) code_row_vec4(base[u] + r[u] * CW, kc);
        else code_row_words(base[u] + r[u] * CW, kc);
        s[u] = CENTERED ? block_bias(q, (SINK + k) / max(CENTER_BLOCK, 1u), kvh, block, bias) : 0.0;
        [[unroll]] for (uint g = 0u; g < PWD; g++) {
            vec4 a = vec4(0.0);
            [[unroll]] for (uint i = 0u; i < WPG; i++) // from 0: llvmpipe unrolls loops of a constant count only
                [[unroll]] for (uint j = 0u; j < 4u; j++) a += q[4u * (g * WPG + i) + j] * code_x4(kc[g * WPG + i], 4u * j);
            vec2 sm = unpackHalf2x16(int2_word(base[u] + K_PARAM_OFF + r[u] * PWD + g)); // scale, min
            s[u] += 4.0 * sm.x * (a.x + a.y + a.z + a.w - qs[g]) + sm.y * qs[g];
        }
        if (k0 + u >= it.end) s[u] = NEG_INF;
    }
    softmax_round(s, m, l, o, ob);
    [[unroll]] for (uint u = 0u; u < TB; u++) {
        uint vc[CW];
        if (V_VEC4) code_row_vec4(base[u] + V_CODE_OFF + r[u] * CW, vc);
        else code_row_words(base[u] + V_CODE_OFF + r[u] * CW, vc);
        [[unroll]] for (uint g = 0u; g < PWD; g++) {
            vec2 sm = unpackHalf2x16(int2_word(base[u] + V_PARAM_OFF + r[u] * PWD + g));
            float w4 = 4.0 * s[u] * sm.x;
            ob[g] += s[u] * sm.y - w4;
            [[unroll]] for (uint i = 0u; i < WPG; i++)
                [[unroll]] for (uint j = 0u; j < 4u; j++) o[4u * (g * WPG + i) + j] += w4 * code_x4(vc[g * WPG + i], 4u * j);
        }
    }
}

// A round of TB fp16 tokens k0.. (positions) of item `it`.
void f16_round(kv_attn_item it, uint k0, uint kvh, vec4 q[D4], inout float m, inout float l, inout vec4 o[D4],
               inout float ob[PWD], inout uint block, inout float bias)
{
    int kt[TB];
    float s[TB];
    [[unroll]] for (uint u = 0u; u < TB; u++) {
        uint k = min(k0 + u, it.end - 1u);
        kt[u] = f16_table[it.seq * pc.max_f16_pages + k / PAGE] * int(F16_PAGE_VEC4) + int((kvh * PAGE + k % PAGE) * F16_ROW_VEC4);
        vec4 a = vec4(0.0);
        [[unroll]] for (uint c = 0u; c < F16_ROW_VEC4; c++) {
            uvec4 t = texelFetch(f16_pool, kt[u] + int(c));
            a += q[2u * c] * vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y));
            a += q[2u * c + 1u] * vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w));
        }
        s[u] = a.x + a.y + a.z + a.w + (CENTERED ? block_bias(q, k / max(CENTER_BLOCK, 1u), kvh, block, bias) : 0.0);
        if (k0 + u >= it.end) s[u] = NEG_INF;
    }
    softmax_round(s, m, l, o, ob);
    [[unroll]] for (uint u = 0u; u < TB; u++)
        [[unroll]] for (uint c = 0u; c < F16_ROW_VEC4; c++) {
            uvec4 t = texelFetch(f16_pool, kt[u] + int(F16_PAGE_VEC4 / 2u + c));
            o[2u * c] += s[u] * vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y));
            o[2u * c + 1u] += s[u] * vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w));
        }
}

void main()
{
    uint gid = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * WG + gl_LocalInvocationID.x;
    uint row_id = gid / N_HEAD, head = gid % N_HEAD, kvh = head / GQA;
    if (row_id >= pc.n_rows) return;
    kv_attn_row row = rows[row_id];

    vec4 q[D4];      // scaled q of this head
    float qs[PWD];   // its group sums (INT2 keys)
    [[unroll]] for (uint i = 0u; i < D4; i++) q[i] = q4[(row_id * N_HEAD + head) * D4 + i] * pc.scale;
    [[unroll]] for (uint g = 0u; g < PWD; g++) {
        vec4 a = vec4(0.0);
        [[unroll]] for (uint i = 0u; i < GROUP / 4u; i++) a += q[g * (GROUP / 4u) + i];
        qs[g] = a.x + a.y + a.z + a.w;
    }

    float m = NEG_INF, l = 0.0;
    vec4 o[D4];      // sum of p v (INT2: of p 4 sc x) in the rotated basis
    float ob[PWD];   // INT2: per group, sum of p mn - 4 p sc, added to every element of the group
    [[unroll]] for (uint i = 0u; i < D4; i++) o[i] = vec4(0.0);
    [[unroll]] for (uint g = 0u; g < PWD; g++) ob[g] = 0.0;
    uint bias_block = 0xFFFFFFFFu; // the key-center block whose logit is in bias
    float bias = 0.0;

    for (uint ii = row.item_begin; ii < row.item_end; ii++) {
        kv_attn_item it = items[ii];
        // one loop per kind, so a lane runs only its own kind's (llvmpipe runs both sides of a
        // branch inside a loop)
        if (MODE != KV_MODE_FP16 && it.kind == KV_ITEM_INT2)
            for (uint k0 = it.begin; k0 < it.end; k0 += TB) int2_round(it, k0, kvh, q, qs, m, l, o, ob, bias_block, bias);
        else
            for (uint k0 = it.begin; k0 < it.end; k0 += TB) f16_round(it, k0, kvh, q, m, l, o, ob, bias_block, bias);
    }

    // o / L (0 when nothing was attended), then o·R_Vᵀ (+ μ_V) in the rotated modes
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    [[unroll]] for (uint i = 0u; i < D4; i++) o[i] = (o[i] + ob[i / (GROUP / 4u)]) * inv;
    uint ob_at = (row_id * N_HEAD + head) * D;
    if (!ROTATED) {
        [[unroll]] for (uint i = 0u; i < D4; i++)
            out_[ob_at + 4u * i] = o[i].x, out_[ob_at + 4u * i + 1u] = o[i].y, out_[ob_at + 4u * i + 2u] = o[i].z,
            out_[ob_at + 4u * i + 3u] = o[i].w;
        return;
    }
    int rbase = int(pc.rot_base + (ROT_PER_HEAD != 0u ? kvh : 0u) * D * D4);
    for (uint j = 0u; j < D; j++) {
        vec4 a = vec4(0.0);
        [[unroll]] for (uint i = 0u; i < D4; i++) a += uintBitsToFloat(texelFetch(rot_v, rbase + int(j * D4 + i))) * o[i];
        out_[ob_at + j] = a.x + a.y + a.z + a.w + (MODE == KV_MODE_ROTATED ? means[(N_KV + kvh) * D + j] : 0.0);
    }
}
