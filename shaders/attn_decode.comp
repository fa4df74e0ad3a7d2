#version 450
// Flash-decoding over the paged KV cache: one workgroup per (work item, KV head).
//
// An item (kv_attn_item) is a token range of one row in one storage kind. The workgroup loads
// the row's GQA query heads of its KV head (q already rotated; scaled here by pc.scale), walks
// the range in tiles of WG tokens and keeps an online softmax per query head:
//   score phase:  thread t scores token t of the tile for every head (INT2: codes and fp16
//                 scale/min read straight from the page and dequantized in registers, as
//                 s_h = sum_g mn_g * sum_{e in g} q_h[e] + sc_g * sum_{e in g} q_h[e] * code_e);
//   softmax:      tile max per head by a two-level shared-memory reduction, running max m,
//                 rescale factor alpha = exp(m_old - m_new), p = exp(s - m_new) in shared;
//   value phase:  thread owns a (head, 16-element slice) pair and one lane of tokens, reads
//                 the V code word (or 8 fp16 words) of that slice and accumulates p * v.
// At the end the lanes are summed in shared memory and the partial (m, l, o[d]) of every
// query head is written to partials [n_items][n_head][d + 2] (kv_layout.h).
//
// Nothing assumes a subgroup size: every reduction goes through shared memory and barriers.
// Shared memory: 4*(GQA*d + GQA*d/G + max(GQA,8)*WG + 16*GQA + 3*GQA + WG) bytes
// (17 KB at d = 256, GQA = 8, WG = 256).
#include "common/kv_layout.h"
#include "common/attn_push.h"

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
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4; // fp16 page (K and V) in uvec4 units
const uint F16_ROW_VEC4 = D / 8;
const uint PAIRS = GQA * CW;                    // (head, 16-element slice) pairs
const uint LANES = PAIRS <= WG ? WG / PAIRS : 1;// token lanes per pair
const uint PPT = (PAIRS + WG - 1) / WG;         // pairs per thread (1 unless PAIRS > WG)
const uint NCH = 16;                            // first-level reduction width
const uint RED = (GQA > 8 ? GQA : 8) * WG;

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
shared float sh_qsum[GQA * PWD];    // [GQA][d/G] per-group sums of sh_q
shared float sh_red[RED];           // [GQA][WG] scores, then p; scratch for the final sums
shared float sh_part[GQA * NCH];    // [GQA][NCH] first-level reduction results
shared float sh_m[GQA];             // running max per head
shared float sh_alpha[GQA];         // rescale factor of the current tile
shared float sh_l[GQA];             // final sum of p per head
shared uint sh_tok[WG];             // [WG] page * PAGE + slot of each tile token

const float NEG_INF = -1.0 / 0.0;

// Reduces sh_red[h][0..WG) for every head h into sh_part, then (thread h) into the returned
// value: max when is_max, else sum. All threads must call it; the result is valid in
// threads t < GQA only.
float reduce_heads(bool is_max)
{
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < GQA * NCH; i += WG) {
        uint h = i / NCH, c = i % NCH;
        float v = is_max ? NEG_INF : 0.0;
        for (uint k = c; k < WG; k += NCH) {
            float x = sh_red[h * WG + k];
            v = is_max ? max(v, x) : v + x;
        }
        sh_part[i] = v;
    }
    barrier();
    float v = is_max ? NEG_INF : 0.0;
    if (t < GQA)
        for (uint c = 0; c < NCH; c++) {
            float x = sh_part[t * NCH + c];
            v = is_max ? max(v, x) : v + x;
        }
    return v;
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

    for (uint i = t; i < GQA * D / 4; i += WG)
        sh_q[i] = q4[(it.row * N_HEAD + kvh * GQA) * (D / 4) + i] * pc.scale;
    if (t < GQA) sh_m[t] = NEG_INF;
    barrier();
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
        barrier();
    }

    // pair ownership of the value phase
    uint my_pair[PPT];
    uint lane = PPT == 1 ? t / PAIRS : 0;
    for (uint pp = 0; pp < PPT; pp++) my_pair[pp] = PPT == 1 ? t % PAIRS : t + pp * WG;
    float acc[PPT][16];     // unnormalised o over this lane's tokens: code / fp16 part
    float acc_mn[PPT];      // INT2: sum of p * min (added to every element of the slice)
    for (uint pp = 0; pp < PPT; pp++) {
        acc_mn[pp] = 0.0;
        for (uint i = 0; i < 16; i++) acc[pp][i] = 0.0;
    }
    float l_own[GQA];       // sum of p over this thread's score-phase tokens
    for (uint h = 0; h < GQA; h++) l_own[h] = 0.0;

    for (uint tile = it.begin; tile < it.end; tile += WG) {
        uint tn = min(WG, it.end - tile);
        // ---- score phase: thread t scores token tile + t for every head ----
        float s[GQA];
        for (uint h = 0; h < GQA; h++) s[h] = NEG_INF;
        if (t < tn) {
            uint idx = tile + t;
            for (uint h = 0; h < GQA; h++) s[h] = 0.0;
            if (is_int2) {
                uint page = uint(int2_table[seq * pc.max_int2_pages + idx / PAGE]);
                uint slot = idx % PAGE;
                sh_tok[t] = page * PAGE + slot;
                uint r = page * INT2_PAGE_WORDS;
                uint krow = r + (kvh * PAGE + slot) * CW;
                uint kpar = r + K_PARAM_OFF + (kvh * PAGE + slot) * PWD;
                float sc[PWD];
                for (uint g = 0; g < PWD; g++) {
                    vec2 sm = unpackHalf2x16(int2_pool[kpar + g]); // x = scale, y = min
                    sc[g] = sm.x;
                    for (uint h = 0; h < GQA; h++) s[h] += sm.y * sh_qsum[h * PWD + g];
                }
                for (uint c4 = 0; c4 < CW / 4; c4++) {
                    uvec4 w4 = K_VEC4 ? int2_pool4[krow / 4 + c4]
                                      : uvec4(int2_pool[krow + 4 * c4], int2_pool[krow + 4 * c4 + 1],
                                              int2_pool[krow + 4 * c4 + 2], int2_pool[krow + 4 * c4 + 3]);
                    for (uint k = 0; k < 4; k++) {
                        uint w = w4[k];
                        uint word = c4 * 4 + k;
                        vec4 c0 = vec4(uvec4(w, w >> 2, w >> 4, w >> 6) & 3u);
                        vec4 c1 = vec4(uvec4(w >> 8, w >> 10, w >> 12, w >> 14) & 3u);
                        vec4 c2 = vec4(uvec4(w >> 16, w >> 18, w >> 20, w >> 22) & 3u);
                        vec4 c3 = vec4(uvec4(w >> 24, w >> 26, w >> 28, w >> 30) & 3u);
                        float scale = sc[word * 16 / GROUP];
                        for (uint h = 0; h < GQA; h++) {
                            uint qb = h * (D / 4) + word * 4;
                            float dp = dot(sh_q[qb], c0) + dot(sh_q[qb + 1], c1) + dot(sh_q[qb + 2], c2) +
                                       dot(sh_q[qb + 3], c3);
                            s[h] += scale * dp;
                        }
                    }
                }
            } else {
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
        }
        for (uint h = 0; h < GQA; h++) sh_red[h * WG + t] = s[h];
        barrier();

        // ---- online softmax: tile max, running max, rescale factor ----
        float tile_max = reduce_heads(true);
        if (t < GQA) {
            float m_old = sh_m[t];
            float m_new = max(m_old, tile_max);
            sh_alpha[t] = m_old == m_new ? 1.0 : exp(m_old - m_new);
            sh_m[t] = m_new;
        }
        barrier();
        for (uint h = 0; h < GQA; h++) {
            float p = s[h] == NEG_INF ? 0.0 : exp(s[h] - sh_m[h]);
            sh_red[h * WG + t] = p;
            l_own[h] = l_own[h] * sh_alpha[h] + p;
        }
        barrier();

        // ---- value phase: pair (head, slice), tokens lane, lane + LANES, ... ----
        for (uint pp = 0; pp < PPT; pp++) {
            uint pair = my_pair[pp];
            if (lane >= LANES || pair >= PAIRS) continue;
            uint h = pair / CW, slice = pair % CW;
            float a = sh_alpha[h];
            acc_mn[pp] *= a;
            for (uint i = 0; i < 16; i++) acc[pp][i] *= a;
            if (is_int2) {
                for (uint k = lane; k < tn; k += LANES) {
                    float p = sh_red[h * WG + k];
                    uint gs = sh_tok[k];
                    uint page = gs / PAGE, row = kvh * PAGE + gs % PAGE;
                    uint r = page * INT2_PAGE_WORDS;
                    uint w = int2_pool[r + V_CODE_OFF + row * CW + slice];
                    vec2 sm = unpackHalf2x16(int2_pool[r + V_PARAM_OFF + row * PWD + slice * 16 / GROUP]);
                    float ps = p * sm.x;
                    acc_mn[pp] += p * sm.y;
                    for (uint i = 0; i < 16; i++) acc[pp][i] += ps * float((w >> (2 * i)) & 3u);
                }
            } else {
                for (uint k = lane; k < tn; k += LANES) {
                    float p = sh_red[h * WG + k];
                    uint gs = sh_tok[k];
                    uint page = gs / PAGE, row = kvh * PAGE + gs % PAGE;
                    uint vrow = page * F16_PAGE_VEC4 + (N_KV * PAGE + row) * F16_ROW_VEC4 + slice * 2;
                    uvec4 a0 = f16_pool4[vrow], a1 = f16_pool4[vrow + 1];
                    uint wv[8] = uint[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
                    for (uint i = 0; i < 8; i++) {
                        vec2 v = unpackHalf2x16(wv[i]);
                        acc[pp][2 * i] += p * v.x;
                        acc[pp][2 * i + 1] += p * v.y;
                    }
                }
            }
        }
        barrier();
    }

    // ---- l: sum over the workgroup ----
    for (uint h = 0; h < GQA; h++) sh_red[h * WG + t] = l_own[h];
    barrier();
    float l_sum = reduce_heads(false);
    if (t < GQA) sh_l[t] = l_sum;
    barrier();

    // ---- o: sum the lanes of every pair, 8 elements at a time ----
    uint out_base = item_id * N_HEAD + kvh * GQA;     // first query head of this KV head
    if (LANES == 1) {
        for (uint pp = 0; pp < PPT; pp++) {
            uint pair = my_pair[pp];
            if (pair >= PAIRS) continue;
            uint h = pair / CW, slice = pair % CW;
            uint o = (out_base + h) * (D + 2) + 2 + slice * 16;
            for (uint i = 0; i < 16; i++) partials[o + i] = acc[pp][i] + acc_mn[pp];
        }
    } else {
        for (uint half_ = 0; half_ < 2; half_++) {
            for (uint i = 0; i < 8; i++)
                sh_red[i * WG + t] = lane < LANES ? acc[0][half_ * 8 + i] + acc_mn[0] : 0.0;
            barrier();
            for (uint x = t; x < PAIRS * 8; x += WG) {
                uint i = x % 8, pair = x / 8;
                float v = 0.0;
                for (uint ln = 0; ln < LANES; ln++) v += sh_red[i * WG + ln * PAIRS + pair];
                uint h = pair / CW, slice = pair % CW;
                partials[(out_base + h) * (D + 2) + 2 + slice * 16 + half_ * 8 + i] = v;
            }
            barrier();
        }
    }
    if (t < GQA) {
        partials[(out_base + t) * (D + 2)] = sh_m[t];
        partials[(out_base + t) * (D + 2) + 1] = sh_l[t];
    }
}
