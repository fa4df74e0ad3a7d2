// Flash-decoding over the paged KV cache: one workgroup per (work item, KV head). The body of
// shaders/attn_decode.comp (fp32 arithmetic) and shaders/attn_decode_f16.comp (ATTN_F16 = 1:
// the INT2 dot products and value sums in packed fp16, for devices with shaderFloat16).
//
// An item (kv_attn_item) is a token range of one row in one storage kind. The workgroup loads
// the row's GQA query heads of its KV head (q already rotated; scaled here by pc.scale), walks
// the range in tiles of TILE tokens and keeps an online softmax per query head:
//   score phase:  thread t scores token t of the tile for every head. INT2: the thread's K and
//                 V codes and params were loaded one tile ahead (all independent 16-byte loads,
//                 the page-table entry two tiles ahead), so each item waits on memory about once;
//                 V codes and params go to shared memory for the value phase.
//                 s_h = sum_g mn_g * qsum_hg + sc_g * sum_{e in g} q_h[e] * code_e.
//   softmax:      tile max per head by a two-level shared-memory reduction; every thread then
//                 holds the running max m and the rescale factor alpha itself; p in shared.
//   value phase:  thread owns a 16-element slice of d for ALL GQA heads (a V code word is
//                 unpacked once for GQA heads) and one lane of tokens; fp16 items read their V
//                 rows from the page, four tokens' loads issued before use.
// At the end the lanes are summed in shared memory and the partial (m, l, o[d]) of every query
// head is written to partials [n_items][n_head][d + 2] (kv_layout.h).
//
// Codes become floats without a conversion instruction: or-ing code c into the mantissa of
// 1.0 gives 1 + c/4 (fp32); in fp16 or-ing into 1024.0 gives 1024 + c, less 1024 = c exactly.
// With x = XA + XB * c the sums are corrected once per group:
//   sum_e q_e c_e = (sum_e q_e x_e - XA * qsum) / XB.
//
// Nothing assumes a subgroup size: every reduction goes through shared memory and barriers.
// Shared memory stays under 28 KB (TILE is halved when it would not).
#extension GL_GOOGLE_include_directive : require
#include "common/kv_layout.h"
#include "common/attn_push.h"

#ifndef ATTN_F16
#define ATTN_F16 0
#endif
#if ATTN_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_GROUP) const uint GROUP = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 64;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;
layout(constant_id = KV_SPEC_GQA) const uint GQA = 1;
layout(constant_id = KV_SPEC_MODE) const uint MODE = KV_MODE_ROTATED;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint N_HEAD = N_KV * GQA;
const uint CW = D / 16;                         // code words per INT2 row
const uint PWD = D / GROUP;                     // param words per INT2 row
const uint INT2_PAGE_WORDS = 2 * N_KV * PAGE * (CW + PWD);
const uint K_PARAM_OFF = N_KV * PAGE * CW;      // word offsets of the four INT2 page regions
const uint V_CODE_OFF = N_KV * PAGE * (CW + PWD);
const uint V_PARAM_OFF = N_KV * PAGE * (2 * CW + PWD);
const bool K_VEC4 = (INT2_PAGE_WORDS % 4) == 0;  // K code rows 16-byte aligned (CW % 4 == 0)
const bool V_VEC4 = K_VEC4 && (V_CODE_OFF % 4) == 0;
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4; // fp16 page (K and V) in uvec4 units
const uint F16_ROW_VEC4 = D / 8;
const uint NCH = 16;                            // first-level reduction width
const uint EC = 4;                              // elements per step of the final lane sums
// tile: WG tokens, halved while shared memory would pass the budget (bytes: fixed part, the
// per-token arrays, and sh_red shared by scores [GQA][TILE] and lane sums [EC][WG])
const uint SH_FIXED = 4 * (GQA * D + ATTN_F16 * GQA * D / 2 + GQA * PWD + GQA * NCH + 64);
const uint SH_PER_TOKEN = 4 * (CW + PWD + 1);
const uint SH_BUDGET = 28 * 1024;
const uint TILE1 = WG, TILE2 = WG / 2, TILE4 = WG / 4;
const uint SH1 = SH_FIXED + SH_PER_TOKEN * TILE1 + 4 * (GQA * TILE1 > EC * WG ? GQA * TILE1 : EC * WG);
const uint SH2 = SH_FIXED + SH_PER_TOKEN * TILE2 + 4 * (GQA * TILE2 > EC * WG ? GQA * TILE2 : EC * WG);
const uint TILE = SH1 <= SH_BUDGET ? TILE1 : (SH2 <= SH_BUDGET ? TILE2 : TILE4);
const uint LANES = WG / CW;                     // value phase: token lanes per slice (CW <= WG)
const uint RED_SZ = GQA * TILE > EC * WG ? GQA * TILE : EC * WG;

// ---- bindings ----
layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };              // [n_rows][n_head][d] fp32, rotated
layout(std430, binding = 1) readonly buffer Rows { kv_attn_row rows[]; };  // [n_rows]
layout(std430, binding = 2) readonly buffer Items { kv_attn_item items[]; }; // [n_items]
layout(std430, binding = 3) readonly buffer Int2Pool { uint int2_pool[]; };  // [pages][INT2 page words]
layout(std430, binding = 3) readonly buffer Int2Pool4 { uvec4 int2_pool4[]; }; // same buffer, 16-byte view
layout(std430, binding = 4) readonly buffer F16Pool4 { uvec4 f16_pool4[]; }; // [pages][fp16 page words / 4]
layout(std430, binding = 5) readonly buffer Int2Table { int int2_table[]; }; // [n_seq][max_int2_pages]
layout(std430, binding = 6) readonly buffer F16Table { int f16_table[]; };   // [n_seq][max_f16_pages]
layout(std430, binding = 7) writeonly buffer Partials { float partials[]; }; // [n_items][n_head][d + 2]

layout(push_constant) uniform Push { attn_decode_push pc; };

// ---- shared memory ----
shared vec4 sh_q[GQA * D / 4];      // scaled q of the workgroup's heads [GQA][d]
#if ATTN_F16
shared uvec4 sh_qh[GQA * D / 8];    // the same in fp16, [GQA][word][8 pairs (e, e + 8)]
#endif
shared float sh_qsum[GQA * PWD];    // [GQA][d/G] per-group sums of sh_q
shared float sh_red[RED_SZ];        // [GQA][TILE] scores, then p; scratch for the final sums
shared uint sh_vc[TILE * CW];       // [TILE][d/16] V code words of the tile (INT2)
shared uint sh_vp[TILE * PWD];      // [TILE][d/G] V params of the tile (INT2)
shared uint sh_tok[TILE];           // [TILE] page * PAGE + slot of each tile token (fp16 items)
shared float sh_part[GQA * NCH];    // [GQA][NCH] first-level reduction results
shared float sh_l[GQA];             // final sum of p per head

const float NEG_INF = -1.0 / 0.0;
#if ATTN_F16
const float XA = 0.0, XB = 1.0;     // x = c
#else
const float XA = 1.0, XB = 0.25;    // x = 1 + c/4
#endif

// Element e (0..15) of code word w as 1 + c/4 (fp32).
float code_x(uint w, uint e)
{
    uint b = 2u * e <= 21u ? w << (21u - 2u * e) : w >> (2u * e - 21u);
    return uintBitsToFloat((b & 0x00600000u) | 0x3F800000u);
}

#if ATTN_F16
// Elements (e, e + 8) of code word w (e < 8) as exact fp16 codes.
f16vec2 code_pair(uint w, uint e)
{
    return unpackFloat2x16(((w >> (2u * e)) & 0x00030003u) | 0x64006400u) - f16vec2(1024.0hf);
}
#endif

// sum_e q_h[e] x_e over the 16 elements of code word `word` (x as XA, XB say).
float word_dot(uint w, uint h, uint word)
{
#if ATTN_F16
    f16vec2 acc = f16vec2(0.0hf);
    uvec4 qa = sh_qh[(h * CW + word) * 2], qb = sh_qh[(h * CW + word) * 2 + 1];
    uint qw[8] = uint[8](qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w);
    for (uint e = 0; e < 8; e++) acc = fma(unpackFloat2x16(qw[e]), code_pair(w, e), acc);
    return float(acc.x) + float(acc.y);
#else
    uint qb = h * (D / 4) + word * 4;
    float dp = 0.0;
    for (uint j = 0; j < 4; j++) {
        vec4 x = vec4(code_x(w, 4 * j), code_x(w, 4 * j + 1), code_x(w, 4 * j + 2), code_x(w, 4 * j + 3));
        dp += dot(sh_q[qb + j], x);
    }
    return dp;
#endif
}

// Reduces sh_red[h][0..TILE) for every head h into sh_part (max when is_max, else sum). All
// threads call it; a barrier follows before sh_part is read.
void reduce_parts(bool is_max)
{
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < GQA * NCH; i += WG) {
        uint h = i / NCH, c = i % NCH;
        float v = is_max ? NEG_INF : 0.0;
        for (uint k = c; k < TILE; k += NCH) {
            float x = sh_red[h * TILE + k];
            v = is_max ? max(v, x) : v + x;
        }
        sh_part[i] = v;
    }
}

float part_result(uint h, bool is_max)
{
    float v = is_max ? NEG_INF : 0.0;
    for (uint c = 0; c < NCH; c++) {
        float x = sh_part[h * NCH + c];
        v = is_max ? max(v, x) : v + x;
    }
    return v;
}

// The raw INT2 words of this thread's token of the next tile (K and V codes and params),
// loaded a tile ahead.
uvec4 r_kc[CW / 4];
uvec4 r_vc[CW / 4];
uint r_kp[PWD];
uint r_vp[PWD];

void load_int2(uint gs, uint kvh)
{
    uint page = gs / PAGE, row = kvh * PAGE + gs % PAGE;
    uint base = page * INT2_PAGE_WORDS;
    uint krow = base + row * CW, vrow = base + V_CODE_OFF + row * CW;
    for (uint c4 = 0; c4 < CW / 4; c4++) {
        r_kc[c4] = K_VEC4 ? int2_pool4[krow / 4 + c4]
                          : uvec4(int2_pool[krow + 4 * c4], int2_pool[krow + 4 * c4 + 1],
                                  int2_pool[krow + 4 * c4 + 2], int2_pool[krow + 4 * c4 + 3]);
        r_vc[c4] = V_VEC4 ? int2_pool4[vrow / 4 + c4]
                          : uvec4(int2_pool[vrow + 4 * c4], int2_pool[vrow + 4 * c4 + 1],
                                  int2_pool[vrow + 4 * c4 + 2], int2_pool[vrow + 4 * c4 + 3]);
    }
    for (uint g = 0; g < PWD; g++) {
        r_kp[g] = int2_pool[base + K_PARAM_OFF + row * PWD + g];
        r_vp[g] = int2_pool[base + V_PARAM_OFF + row * PWD + g];
    }
}

void main()
{
    uint item_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (item_id >= pc.n_items) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_item it = items[item_id];
    uint seq = rows[it.row].seq;
    bool is_int2 = MODE != KV_MODE_FP16 && it.kind == KV_ITEM_INT2;

    // first INT2 tile's words and the page of the second tile, in flight during the q setup
    int pg_next = 0;
    if (is_int2) {
        uint idx = it.begin + t;
        if (t < TILE && idx < it.end) {
            uint page = uint(int2_table[seq * pc.max_int2_pages + idx / PAGE]);
            load_int2(page * PAGE + idx % PAGE, kvh);
        }
        idx += TILE;
        if (t < TILE && idx < it.end) pg_next = int2_table[seq * pc.max_int2_pages + idx / PAGE];
    }

    for (uint i = t; i < GQA * D / 4; i += WG) {
        vec4 v = q4[(it.row * N_HEAD + kvh * GQA) * (D / 4) + i] * pc.scale;
        sh_q[i] = v;
    }
    barrier();
#if ATTN_F16
    for (uint i = t; i < GQA * D / 8; i += WG) {
        uint h = i / (2 * CW), w = (i / 2) % CW, half_ = i % 2; // pairs 4*half_ .. 4*half_+3
        uint qb = h * (D / 4) + w * 4;
        uvec4 o;
        for (uint j = 0; j < 4; j++) {
            uint e = 4 * half_ + j;
            float lo = sh_q[qb + e / 4][e % 4], hi = sh_q[qb + (e + 8) / 4][(e + 8) % 4];
            o[j] = packFloat2x16(f16vec2(lo, hi));
        }
        sh_qh[i] = o;
    }
#endif
    if (is_int2) {
        for (uint i = t; i < GQA * PWD; i += WG) {
            uint h = i / PWD, g = i % PWD;
            float s = 0.0;
            for (uint k = 0; k < GROUP / 4; k++) {
                vec4 v = sh_q[h * (D / 4) + g * (GROUP / 4) + k];
                s += (v.x + v.y) + (v.z + v.w);
            }
            sh_qsum[i] = s;
        }
    }
    barrier();

    // value phase ownership: slice of 16 elements for all heads, token lane
    uint slice = t % CW, lane = t / CW;
    float acc[GQA][16];     // unnormalised o (x-sums for INT2) of this lane's tokens
    float acc_mn[GQA];      // INT2: the per-token constant terms, added to every element
    for (uint h = 0; h < GQA; h++) {
        acc_mn[h] = 0.0;
        for (uint i = 0; i < 16; i++) acc[h][i] = 0.0;
    }
    float l_own[GQA];       // sum of p over this thread's score-phase tokens
    float m_run[GQA];       // running max (the same in every thread)
    for (uint h = 0; h < GQA; h++) l_own[h] = 0.0, m_run[h] = NEG_INF;

    for (uint tile = it.begin; tile < it.end; tile += TILE) {
        uint tn = min(TILE, it.end - tile);
        // ---- score phase: thread t scores token tile + t for every head ----
        float s[GQA];
        for (uint h = 0; h < GQA; h++) s[h] = NEG_INF;
        if (is_int2) {
            uvec4 kc[CW / 4], vc[CW / 4];
            uint kp[PWD], vp[PWD];
            for (uint c4 = 0; c4 < CW / 4; c4++) kc[c4] = r_kc[c4], vc[c4] = r_vc[c4];
            for (uint g = 0; g < PWD; g++) kp[g] = r_kp[g], vp[g] = r_vp[g];
            uint idx = tile + TILE + t;   // next tile: its words now, the page after it
            if (t < TILE && idx < it.end) {
                load_int2(uint(pg_next) * PAGE + idx % PAGE, kvh);
                idx += TILE;
                if (idx < it.end) pg_next = int2_table[seq * pc.max_int2_pages + idx / PAGE];
            }
            if (t < tn) {
                for (uint h = 0; h < GQA; h++) s[h] = 0.0;
                float scx[PWD];
                for (uint g = 0; g < PWD; g++) {
                    vec2 sm = unpackHalf2x16(kp[g]); // x = scale, y = min
                    scx[g] = sm.x / XB;
                    float base = sm.y - XA * scx[g];
                    for (uint h = 0; h < GQA; h++) s[h] += base * sh_qsum[h * PWD + g];
                    sh_vp[t * PWD + g] = vp[g];
                }
                for (uint word = 0; word < CW; word++) {
                    uint w = kc[word / 4][word % 4];
                    for (uint h = 0; h < GQA; h++) s[h] += scx[word * 16 / GROUP] * word_dot(w, h, word);
                    sh_vc[t * CW + word] = vc[word / 4][word % 4];
                }
            }
        } else if (t < tn) {
            uint idx = tile + t;
            for (uint h = 0; h < GQA; h++) s[h] = 0.0;
            uint page = uint(f16_table[seq * pc.max_f16_pages + idx / PAGE]);
            uint slot = idx % PAGE;
            sh_tok[t] = page * PAGE + slot;
            uint krow = page * F16_PAGE_VEC4 + (kvh * PAGE + slot) * F16_ROW_VEC4;
            for (uint c = 0; c < D / 8; c++) {
                uvec4 w4 = f16_pool4[krow + c];
                vec4 k0 = vec4(unpackHalf2x16(w4.x), unpackHalf2x16(w4.y));
                vec4 k1 = vec4(unpackHalf2x16(w4.z), unpackHalf2x16(w4.w));
                for (uint h = 0; h < GQA; h++)
                    s[h] += dot(sh_q[h * (D / 4) + 2 * c], k0) + dot(sh_q[h * (D / 4) + 2 * c + 1], k1);
            }
        }
        if (t < TILE)
            for (uint h = 0; h < GQA; h++) sh_red[h * TILE + t] = s[h];
        barrier();

        // ---- online softmax: tile max, running max, rescale factor, p ----
        reduce_parts(true);
        barrier();
        float alpha[GQA];
        for (uint h = 0; h < GQA; h++) {
            float m_new = max(m_run[h], part_result(h, true));
            alpha[h] = m_run[h] == m_new ? 1.0 : exp(m_run[h] - m_new);
            m_run[h] = m_new;
            float p = s[h] == NEG_INF ? 0.0 : exp(s[h] - m_new);
            if (t < TILE) sh_red[h * TILE + t] = p;
            l_own[h] = l_own[h] * alpha[h] + p;
        }
        barrier();

        // ---- value phase: slice of all heads, tokens lane, lane + LANES, ... ----
        if (lane < LANES) {
            for (uint h = 0; h < GQA; h++) {
                acc_mn[h] *= alpha[h];
                for (uint i = 0; i < 16; i++) acc[h][i] *= alpha[h];
            }
            if (is_int2) {
#if ATTN_F16
                f16vec2 acc16[GQA][8];   // this tile's p * scale * code, (e, e + 8) pairs
                for (uint h = 0; h < GQA; h++)
                    for (uint e = 0; e < 8; e++) acc16[h][e] = f16vec2(0.0hf);
#endif
                for (uint k = lane; k < tn; k += LANES) {
                    uint w = sh_vc[k * CW + slice];
                    vec2 sm = unpackHalf2x16(sh_vp[k * PWD + slice * 16 / GROUP]);
                    float scx = sm.x / XB, base = sm.y - XA * scx;
#if ATTN_F16
                    f16vec2 c2[8];
                    for (uint e = 0; e < 8; e++) c2[e] = code_pair(w, e);
                    for (uint h = 0; h < GQA; h++) {
                        float p = sh_red[h * TILE + k];
                        acc_mn[h] += p * base;
                        f16vec2 ps = f16vec2(float16_t(p * scx));
                        for (uint e = 0; e < 8; e++) acc16[h][e] = fma(ps, c2[e], acc16[h][e]);
                    }
#else
                    float x[16];
                    for (uint e = 0; e < 16; e++) x[e] = code_x(w, e);
                    for (uint h = 0; h < GQA; h++) {
                        float p = sh_red[h * TILE + k];
                        float ps = p * scx;
                        acc_mn[h] += p * base;
                        for (uint e = 0; e < 16; e++) acc[h][e] += ps * x[e];
                    }
#endif
                }
#if ATTN_F16
                for (uint h = 0; h < GQA; h++)
                    for (uint e = 0; e < 8; e++) {
                        acc[h][e] += float(acc16[h][e].x);
                        acc[h][e + 8] += float(acc16[h][e].y);
                    }
#endif
            } else {
                for (uint k0 = lane; k0 < tn; k0 += 4 * LANES) {
                    uvec4 v[4][2];
                    for (uint u = 0; u < 4; u++) {
                        uint k = k0 + u * LANES;
                        if (k < tn) {
                            uint gs = sh_tok[k];
                            uint page = gs / PAGE, row = kvh * PAGE + gs % PAGE;
                            uint vrow = page * F16_PAGE_VEC4 + (N_KV * PAGE + row) * F16_ROW_VEC4 + slice * 2;
                            v[u][0] = f16_pool4[vrow];
                            v[u][1] = f16_pool4[vrow + 1];
                        }
                    }
                    for (uint u = 0; u < 4; u++) {
                        uint k = k0 + u * LANES;
                        if (k >= tn) break;
                        vec2 f[8];
                        for (uint i = 0; i < 4; i++) {
                            f[i] = unpackHalf2x16(v[u][0][i]);
                            f[4 + i] = unpackHalf2x16(v[u][1][i]);
                        }
                        for (uint h = 0; h < GQA; h++) {
                            float p = sh_red[h * TILE + k];
                            for (uint i = 0; i < 8; i++) {
                                acc[h][2 * i] += p * f[i].x;
                                acc[h][2 * i + 1] += p * f[i].y;
                            }
                        }
                    }
                }
            }
        }
        barrier();
    }

    // ---- l: sum over the workgroup ----
    if (t < TILE)
        for (uint h = 0; h < GQA; h++) sh_red[h * TILE + t] = l_own[h];
    barrier();
    reduce_parts(false);
    barrier();
    if (t < GQA) sh_l[t] = part_result(t, false);

    // ---- o: sum the lanes of every (head, slice), EC elements at a time ----
    // acc index i is element i of the slice (fp16 items, fp16 INT2 pairs) or of x (fp32 INT2:
    // the same order); the INT2 x-sums need the constant term acc_mn added.
    uint out_base = item_id * N_HEAD + kvh * GQA;     // first query head of this KV head
    for (uint h = 0; h < GQA; h++)
        for (uint part = 0; part < 16 / EC; part++) {
            for (uint i = 0; i < EC; i++)
                sh_red[i * WG + t] = lane < LANES ? acc[h][part * EC + i] + acc_mn[h] : 0.0;
            barrier();
            for (uint x = t; x < CW * EC; x += WG) {
                uint i = x % EC, sl = x / EC;
                float v = 0.0;
                for (uint ln = 0; ln < LANES; ln++) v += sh_red[i * WG + ln * CW + sl];
                partials[(out_base + h) * (D + 2) + 2 + sl * 16 + part * EC + i] = v;
            }
            barrier();
        }
    if (t < GQA) {
        partials[(out_base + t) * (D + 2)] = m_run[t];
        partials[(out_base + t) * (D + 2) + 1] = sh_l[t];
    }
}
