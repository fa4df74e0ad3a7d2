// Flash-decoding over the paged KV cache, workgroup-wide: one workgroup per (work item, KV
// head), all its threads on each chunk of the item in turn, with barriers between the phases.
// The body of shaders/attn_decode_chunked.comp (fp32 arithmetic), attn_decode_chunked_f16.comp
// (ATTN_F16 = 1: the INT2 value sums in packed fp16, for devices with shaderFloat16; scores stay
// fp32) and attn_decode_chunked_f16.idot.comp (ATTN_IDOT = 1 as well: INT2 keys scored by
// integer dot products of their codes with q quantized to two levels of int8, see scores_int2;
// opt-in). The cache's default (ovk_attn_pick): on an H100 it is faster than the streaming
// kernel (attn_decode_body.glsl) for the INT2 modes at every context and for fp16 mode up to 32K.
//
// An item (kv_attn_item) is a range of tokens of one row in one storage kind. The workgroup
// loads the row's GQA query heads of its KV head (q already rotated, scaled here by pc.scale)
// and works through the item in chunks of up to ITEM_TOKENS tokens (usually a single chunk), each in
// three phases, with a handful of barriers per chunk:
//   scores:  thread t scores tokens t, t + WG, ... (U at a time, their K rows loaded together,
//            INT2 rows a round ahead) for every head against q in shared memory; scores go
//            to sh_p [token][GQA] and each thread keeps its own maxima.
//            INT2: s_h = sum_g mn_g * qsum_hg + sc_g * sum_{e in g} q_h[e] * c_e.
//            With a key-center table (CENTER_BLOCK = B > 0) every key was stored less its
//            block's center c_b·R_K, so each score gets q_h·(c_b·R_K) back, computed once per
//            (block, head) of the chunk at its start (sh_bias).
//   softmax: the maxima are reduced; the running max m moves to include them (what was summed
//            so far is rescaled by exp(m_old - m)); p = exp(s - m) replaces s in sh_p; each
//            thread sums its p into l. INT2 chunks with one V group a row (PRE_W) store the
//            value weight p * scale instead (fp16 pairs in the f16 variant) and sum p * min
//            per thread, so the value phase's 16 threads of a token do not each redo it.
//   values:  thread owns 8 elements of d (half an INT2 code word) for ALL GQA heads and a
//            lane of tokens (lane, lane + LANES, ...): codes are unpacked once for the GQA
//            heads, VU tokens' loads are issued before use. At the end the lanes are summed in
//            shared memory, one head at a time (with PRE_W the min terms, summed over the
//            workgroup, are added once).
// The partial (m, l, o[d]) of every query head goes to partials [n_items][n_head][d + 4].
// The page ids of a chunk are read once into shared memory at its start: the first chunk's from
// the item (which carries its first pages), beside q before the first barrier; the others' from
// the page table.
//
// Merge (the last workgroup of a (row, KV head)): every workgroup counts itself in
// counters[row][kvh] after writing its partials; the one that completes the count combines
// the row's partials of its GQA heads exactly (M = max m_s, L = sum l_s e^(m_s - M),
// o = sum o_s e^(m_s - M) / L; 0 when nothing was attended; lanes of threads take every
// LANES_M-th item, branch-free, so their loads overlap), applies R_Vᵀ in the rotated
// modes, writes out[row][head][d] and resets the counter for the next call. So one dispatch
// does split-K attention and its merge. Visibility: partials and counters are `coherent`, each
// workgroup's memoryBarrierBuffer() orders its partial writes before its atomic, and the last
// one's orders the atomic before its reads.
//
// Codes become floats without a conversion instruction: or-ing code c into the mantissa of
// 1.0 gives x = 1 + c/4 (fp32), so sum_e q_e c_e = 4 * (sum_e q_e x_e - qsum) per group; in
// fp16 or-ing c into 1024.0 gives 1024 + c, less 1024 = c exactly.
//
// Nothing assumes a subgroup size: every reduction goes through shared memory and barriers.
// Shared memory: the host picks ITEM_TOKENS with ovk_attn_item_tokens() (attn_items.h), from
// the same formula as the declarations below (ATTN_CH_SHARED_FLOATS, common/attn_chunked.h).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/attn_chunked.h"
#include "common/kv_write.h"

#define ATTN_MERGE_Q8 // the merge may write out's int8 blocks too (pc.q8_out)
#include "common/attn_decode_decl.glsl"

#ifndef ATTN_IDOT
#define ATTN_IDOT 0
#endif
#if ATTN_IDOT
#include "common/dot4_idot.glsl"
#include "common/q8_layout.h"
const float ATTN_Q_INV_254 = 0.003937007859349251; // (float)(1/254.0): the second level's scale factor
#endif

layout(constant_id = KV_SPEC_CH_ITEM_TOKENS) const uint ITEM_TOKENS = 512;

const bool K_VEC4 = (INT2_PAGE_WORDS % 4) == 0;  // K code rows 16-byte aligned (CW % 4 == 0)
const uint CW4 = CW / 4;                        // uvec4s of K codes per row
layout(constant_id = KV_SPEC_CH_U) const uint U = 2;   // tokens per thread per round of the scores
layout(constant_id = KV_SPEC_CH_VU) const uint VU = 8; // tokens per lane per step of the values
const uint LANES = WG / (2 * CW);               // value phase: token lanes (WG % (d/8) == 0)
const uint NPART = 16;                          // first-level reduction width
const uint P_FLOATS = ATTN_CH_P_FLOATS(ITEM_TOKENS, GQA, WG, D);
const uint MAX_PAGES = ATTN_CH_ITEM_PAGES(ITEM_TOKENS, PAGE);   // pages an item can touch
// One V group per row (G = head_dim, the default for head_dim <= 128): the softmax phase then
// turns each INT2 token's p into its value weights once (see values_int2), not each thread of
// the value phase; with several groups a row the value phase does it from p.
const bool PRE_W = PWD == 1u;
const uint PV = 4;                              // PRE_W: V params a thread loads at once
const uint HR_FIT = P_FLOATS / (LANES * D);
const uint HR = HR_FIT < 1u ? 1u : HR_FIT > GQA ? GQA : HR_FIT; // heads whose lane sums sh_p holds at once

layout(std430, binding = 4) readonly buffer F16Pool2 { uvec2 f16_pool2[]; }; // F16Pool4, 8-byte view

// ---- shared memory (ATTN_CH_SHARED_FLOATS floats in all) ----
shared vec4 sh_q[GQA * D / 4];      // [GQA][d] scaled q of the workgroup's heads
shared float sh_qs[GQA * PWD];      // [GQA][d/G] per-group sums of sh_q (INT2)
shared float sh_p[P_FLOATS];        // [ITEM_TOKENS][GQA] scores, then p; at the end [HR][LANES][d] lane sums;
                                    // in the merge [LANES_M][d] lane sums, then [GQA][d] o
shared float sh_red[GQA * WG];      // [GQA][WG] per-thread maxima or sums
shared float sh_part[GQA * NPART];  // [GQA][NPART] first-level reduction results
shared uint sh_page[MAX_PAGES];     // page ids of the item's pages, from the item's first page
shared float sh_bias[ATTN_CH_BIAS_FLOATS(ITEM_TOKENS, GQA)]; // [blocks of the chunk][GQA] q_h·(c_b·R_K) (CENTERED)
shared bool sh_last;                // this workgroup completes its (row, KV head)
#if ATTN_IDOT
// sh_q quantized in blocks of 32 (OSCAR_Q8_BLOCK) to two levels of int8: q ≈ d (254 c1 + c2),
// c1 the block's int8 codes at scale 254 d = amax / 127 (as common/q8_quantize.glsl), c2 those of
// what c1 leaves at scale d (|c2| <= 127), so q is held to about 16 bits. Laid out for the key
// codes: word 4w + j of a head holds elements 16w + j + {0, 4, 8, 12} in bytes 0..3, the
// elements that the byte lanes of (code word w >> 2j) & 0x03030303 hold.
shared uint sh_qi[2 * GQA * D / 4];   // [c1, c2][GQA][d/16][4] int8 q
shared float sh_qd[GQA * D / 32];      // [GQA][d/32] block scales d
shared float sh_qbs[GQA * D / 32];     // [GQA][d/32] block sums of the quantized q (d * sum of 254 c1 + c2)
#endif

const float NEG_INF = -1.0 / 0.0;

// reduce_heads and the merge of a (row, KV head) by its last workgroup (merge_row), lane sums
// in sh_p
#define OUT_SCRATCH sh_p
#include "common/attn_merge.glsl"

// v[h] for an h known only at run time, without indexing a register array by it (which may put
// the array in memory).
float head_value(float v[GQA], uint h)
{
    float r = v[0];
    [[unroll]] for (uint k = 1; k < GQA; k++)
        if (k == h) r = v[k];
    return r;
}

// Page base (word) and row of token j (an INT2 index, j >= the item's begin) of this KV head.
void int2_row(uint begin, uint j, uint kvh, out uint base, out uint row)
{
    base = sh_page[j / PAGE - begin / PAGE] * INT2_PAGE_WORDS;
    row = kvh * PAGE + j % PAGE;
}

// uvec4 index of the fp16 K row of position p of this KV head (V is F16_PAGE_VEC4 / 2 further).
uint f16_row(uint begin, uint p, uint kvh)
{
    return sh_page[p / PAGE - begin / PAGE] * F16_PAGE_VEC4 + (kvh * PAGE + p % PAGE) * F16_ROW_VEC4;
}

// ---- scores: sh_p[k][h] = q_h . k_k for the item's tokens k < n; m[h] = this thread's max ----
// The scores of this thread's U tokens k0, k0 + WG, ... (those below n) into sh_p and m;
// pos0: the position of the chunk's first token (its key-center blocks, CENTERED).
void store_scores(uint k0, uint n, uint pos0, float s[U][GQA], inout float m[GQA])
{
    for (uint u = 0; u < U; u++) {
        uint k = k0 + u * WG;
        if (k < n)
            for (uint h = 0; h < GQA; h++) {
                float v = s[u][h];
                if (CENTERED) v += sh_bias[((pos0 + k) / max(CENTER_BLOCK, 1u) - pos0 / max(CENTER_BLOCK, 1u)) * GQA + h];
                sh_p[k * GQA + h] = v;
                m[h] = max(m[h], v);
            }
    }
}

// sh_bias for the blocks of positions pos0 .. pos0 + n - 1: q_h·(c_b·R_K) of the chunk's
// heads (sh_q, scaled). No barrier.
void center_logits(uint pos0, uint n, uint kvh)
{
    uint cbk = max(CENTER_BLOCK, 1u), b0 = pos0 / cbk, nb = (pos0 + n - 1u) / cbk - b0 + 1u;
    for (uint i = gl_LocalInvocationID.x; i < nb * GQA; i += WG) {
        uint bi = i / GQA, h = i % GQA;
        uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + ((b0 + bi) * N_KV + kvh) * (D / 2);
        float s = 0.0;
        for (uint w = 0; w < D / 4; w++)
            s += dot(sh_q[h * (D / 4) + w], vec4(unpackHalf2x16(means_w[cb + 2 * w]), unpackHalf2x16(means_w[cb + 2 * w + 1])));
        sh_bias[i] = s;
    }
}

// K codes and params of this thread's U tokens k0, k0 + WG, ... (past n: a valid row, unused).
void load_keys(uint begin, uint n, uint k0, uint kvh, out uvec4 kc[U][CW4], out uint kp[U][PWD])
{
    for (uint u = 0; u < U; u++) {
        uint base, row;
        int2_row(begin, begin + min(k0 + u * WG, n - 1), kvh, base, row);
        uint krow = base + row * CW;
        for (uint c4 = 0; c4 < CW4; c4++)
            kc[u][c4] = K_VEC4 ? int2_pool4[krow / 4 + c4]
                               : uvec4(int2_pool[krow + 4 * c4], int2_pool[krow + 4 * c4 + 1],
                                       int2_pool[krow + 4 * c4 + 2], int2_pool[krow + 4 * c4 + 3]);
        for (uint g = 0; g < PWD; g++) kp[u][g] = int2_pool[base + K_PARAM_OFF + row * PWD + g];
    }
}

// The next round's keys are loaded while this round's are scored, so the loads' latency is paid
// once a chunk, not once a round.
void scores_int2(uint begin, uint n, uint pos0, uint kvh, inout float m[GQA])
{
    uint t = gl_LocalInvocationID.x;
    uvec4 kn[U][CW4];   // the next round's K code words and params
    uint kpn[U][PWD];
    if (t < n) load_keys(begin, n, t, kvh, kn, kpn);
    for (uint k0 = t; k0 < n; k0 += U * WG) {
        uvec4 kc[U][CW4];   // K code words of the U tokens
        uint kp[U][PWD];    // K params (fp16 scale low, min high) per group
        [[unroll]] for (uint u = 0; u < U; u++) {
            [[unroll]] for (uint c4 = 0; c4 < CW4; c4++) kc[u][c4] = kn[u][c4];
            [[unroll]] for (uint g = 0; g < PWD; g++) kp[u][g] = kpn[u][g];
        }
        if (k0 + U * WG < n) load_keys(begin, n, k0 + U * WG, kvh, kn, kpn);
        float s[U][GQA];
        for (uint u = 0; u < U; u++)
            for (uint h = 0; h < GQA; h++) s[u][h] = 0.0;
#if ATTN_IDOT
        // s_h = sum_g sc_g * sum_{b in g} d_hb * (254 * c1·codes + c2·codes) + mn_g * qsum_hg, the
        // block's integer exact (at most 32 * 3 * 127 * 255)
        for (uint g = 0; g < PWD; g++) {
            float dq[U][GQA];
            for (uint u = 0; u < U; u++)
                for (uint h = 0; h < GQA; h++) dq[u][h] = 0.0;
            for (uint b = g * (GROUP / 32); b < (g + 1) * (GROUP / 32); b++) {
                int is[U][GQA];
                for (uint u = 0; u < U; u++)
                    for (uint h = 0; h < GQA; h++) is[u][h] = 0;
                [[unroll]] for (uint ww = 0; ww < 2; ww++) {
                    uint w = 2 * b + ww;
                    uint cw[U];
                    for (uint u = 0; u < U; u++) cw[u] = kc[u][w / 4][w % 4];
                    // one q word of each level at a time (a head's whole uvec4 of both levels
                    // held at once cost the kernel 50 registers)
                    [[unroll]] for (uint j = 0; j < 4; j++) {
                        uint c[U];
                        for (uint u = 0; u < U; u++) c[u] = (cw[u] >> (2u * j)) & 0x03030303u;
                        for (uint h = 0; h < GQA; h++) {
                            uint qhi = sh_qi[(h * (D / 16) + w) * 4 + j], qlo = sh_qi[((GQA + h) * (D / 16) + w) * 4 + j];
                            for (uint u = 0; u < U; u++) is[u][h] += 254 * dot4(qhi, c[u]) + dot4(qlo, c[u]);
                        }
                    }
                }
                for (uint h = 0; h < GQA; h++) {
                    float d = sh_qd[h * (D / 32) + b];
                    for (uint u = 0; u < U; u++) dq[u][h] += d * float(is[u][h]);
                }
            }
            for (uint u = 0; u < U; u++) {
                vec2 sm = unpackHalf2x16(kp[u][g]); // x = scale, y = min
                for (uint h = 0; h < GQA; h++) s[u][h] += sm.x * dq[u][h] + sm.y * sh_qs[h * PWD + g];
            }
        }
#else
        for (uint g = 0; g < PWD; g++) {
            float dq[U][GQA];   // sum_{e in g} q_h[e] * x_e
            for (uint u = 0; u < U; u++)
                for (uint h = 0; h < GQA; h++) dq[u][h] = 0.0;
            for (uint w = g * WPG; w < (g + 1) * WPG; w++)
                for (uint j = 0; j < 4; j++) {
                    vec4 x[U];
                    for (uint u = 0; u < U; u++) x[u] = code_x4(kc[u][w / 4][w % 4], 4 * j);
                    for (uint h = 0; h < GQA; h++) {
                        vec4 qv = sh_q[h * (D / 4) + w * 4 + j];
                        for (uint u = 0; u < U; u++) dq[u][h] += dot(qv, x[u]);
                    }
                }
            for (uint u = 0; u < U; u++) {
                vec2 sm = unpackHalf2x16(kp[u][g]); // x = scale, y = min
                for (uint h = 0; h < GQA; h++) {
                    float qs = sh_qs[h * PWD + g];
                    s[u][h] += 4.0 * sm.x * (dq[u][h] - qs) + sm.y * qs;
                }
            }
        }
#endif
        store_scores(k0, n, pos0, s, m);
    }
}

#if ATTN_IDOT
// Block i = (h, b) of sh_q to two levels of int8 into sh_qi, sh_qd and sh_qbs: c1 as
// common/q8_quantize.glsl (scale d1 = amax / 127, roundEven(v / d1)), c2 = roundEven((v - d1 c1)
// / d) with d = d1 / 254.
void quantize_q_block(uint i)
{
    uint h = i / (D / 32), b = i % (D / 32);
    float amax = 0.0;
    [[unroll]] for (uint k = 0; k < 8; k++) {
        vec4 v = abs(sh_q[h * (D / 4) + b * 8 + k]);
        amax = max(amax, max(max(v.x, v.y), max(v.z, v.w)));
    }
    float d1 = amax * OSCAR_Q8_INV_127, d = d1 * ATTN_Q_INV_254;
    int sum = 0;
    [[unroll]] for (uint ww = 0; ww < 2; ww++) {
        uint w = 2 * b + ww;
        uvec4 hi = uvec4(0u), lo = uvec4(0u);
        [[unroll]] for (uint k = 0; k < 16; k++) {
            float v = sh_q[h * (D / 4) + w * 4 + k / 4][k % 4];
            int c1 = d1 > 0.0 ? clamp(int(roundEven(v / d1)), -127, 127) : 0;
            float r = v - d1 * float(c1);
            int c2 = d > 0.0 ? clamp(int(roundEven(r / d)), -127, 127) : 0;
            sum += 254 * c1 + c2;
            hi[k % 4] |= uint(c1 & 0xFF) << (8u * (k / 4)); // element 16w + k: word k % 4, byte k / 4
            lo[k % 4] |= uint(c2 & 0xFF) << (8u * (k / 4));
        }
        [[unroll]] for (uint j = 0; j < 4; j++) {
            sh_qi[(h * (D / 16) + w) * 4 + j] = hi[j];
            sh_qi[((GQA + h) * (D / 16) + w) * 4 + j] = lo[j];
        }
    }
    sh_qd[i] = d;
    sh_qbs[i] = d * float(sum);
}
#endif

void scores_f16(uint begin, uint n, uint pos0, uint kvh, inout float m[GQA])
{
    uint t = gl_LocalInvocationID.x;
    for (uint k0 = t; k0 < n; k0 += U * WG) {
        uint krow[U];
        for (uint u = 0; u < U; u++) krow[u] = f16_row(begin, begin + min(k0 + u * WG, n - 1), kvh);
        float s[U][GQA];
        for (uint u = 0; u < U; u++)
            for (uint h = 0; h < GQA; h++) s[u][h] = 0.0;
        for (uint c = 0; c < D / 8; c++) {
            vec4 ka[U], kb[U];
            for (uint u = 0; u < U; u++) {
                uvec4 w4 = f16_pool4[krow[u] + c];
                ka[u] = vec4(unpackHalf2x16(w4.x), unpackHalf2x16(w4.y));
                kb[u] = vec4(unpackHalf2x16(w4.z), unpackHalf2x16(w4.w));
            }
            for (uint h = 0; h < GQA; h++) {
                vec4 qa = sh_q[h * (D / 4) + 2 * c], qb = sh_q[h * (D / 4) + 2 * c + 1];
                for (uint u = 0; u < U; u++) s[u][h] += dot(qa, ka[u]) + dot(qb, kb[u]);
            }
        }
        store_scores(k0, n, pos0, s, m);
    }
}

// ---- values: acc[h][j] + acc_b[h] = sum_k p_hk v_k[value_elem(j)] over this lane's tokens ----
// A thread owns 8 elements of d: half `hf` of code word `w` holds elements
// w*16 + {4hf..4hf+3, 4hf+8..4hf+11} (j = 0..7 in that order), so the fp16 code pairs
// (e, e + 8) of one word fall to one thread.
uint value_elem(uint w, uint hf, uint j) { return w * 16 + 4 * hf + j + (j >= 4 ? 4 : 0); }

void values_int2(uint begin, uint n, uint kvh, uint w, uint hf, uint lane, inout float acc[GQA][8], inout float acc_b[GQA])
{
    // PRE_W: sh_p holds the value weights the softmax phase made of p (and acc_b its min terms);
    // else p, and each token's weights come from its V params here
    uint g = w * 16 / GROUP;
    for (uint k0 = lane; k0 < n; k0 += VU * LANES) {
        uint vw[VU], vp[VU];    // V code word w, V params of its group (not with PRE_W)
        [[unroll]] for (uint u = 0; u < VU; u++) {
            uint base, row;
            int2_row(begin, begin + min(k0 + u * LANES, n - 1), kvh, base, row);
            vw[u] = int2_pool[base + V_CODE_OFF + row * CW + w];
            vp[u] = 0u;
            if (!PRE_W) vp[u] = int2_pool[base + V_PARAM_OFF + row * PWD + g];
        }
#if ATTN_F16
        // p * scale * c summed in fp16 over the VU tokens (bounded: at most VU * 3 * |scale|),
        // then added to the fp32 sums; the min terms stay fp32
        f16vec2 a16[GQA][4];    // elements (j, j + 4)
        [[unroll]] for (uint h = 0; h < GQA; h++)
            [[unroll]] for (uint j = 0; j < 4; j++) a16[h][j] = f16vec2(0.0hf);
        [[unroll]] for (uint u = 0; u < VU; u++) {
            uint k = k0 + u * LANES;
            if (k >= n) continue;
            vec2 sm = unpackHalf2x16(vp[u]);
            f16vec2 c2[4];
            [[unroll]] for (uint j = 0; j < 4; j++) c2[j] = code_pair(vw[u] >> (8 * hf), j); // elements 4 hf + j (+ 8)
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                f16vec2 ps;
                if (PRE_W) {
                    ps = f16vec2(unpackFloat2x16(floatBitsToUint(sh_p[k * GQA + h / 2]))[h & 1]);
                } else {
                    float p = sh_p[k * GQA + h];
                    acc_b[h] += p * sm.y;
                    ps = f16vec2(float16_t(p * sm.x));
                }
                [[unroll]] for (uint j = 0; j < 4; j++) a16[h][j] = fma(ps, c2[j], a16[h][j]);
            }
        }
        [[unroll]] for (uint h = 0; h < GQA; h++)
            [[unroll]] for (uint j = 0; j < 4; j++) {
                acc[h][j] += float(a16[h][j].x);
                acc[h][j + 4] += float(a16[h][j].y);
            }
#else
        // with x = 1 + c/4: mn + sc * c = (mn - 4 sc) + 4 sc * x
        [[unroll]] for (uint u = 0; u < VU; u++) {
            uint k = k0 + u * LANES;
            if (k >= n) continue;
            vec2 sm = unpackHalf2x16(vp[u]);
            float sc4 = 4.0 * sm.x, b = sm.y - sc4;
            float x[8];
            [[unroll]] for (uint j = 0; j < 4; j++) {
                x[j] = code_x(vw[u], 4 * hf + j);
                x[j + 4] = code_x(vw[u], 4 * hf + j + 8);
            }
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                float p = sh_p[k * GQA + h], ps = PRE_W ? p : p * sc4;
                if (!PRE_W) acc_b[h] += p * b;
                [[unroll]] for (uint j = 0; j < 8; j++) acc[h][j] += ps * x[j];
            }
        }
#endif
    }
}

void values_f16(uint begin, uint n, uint kvh, uint w, uint hf, uint lane, inout float acc[GQA][8])
{
    for (uint k0 = lane; k0 < n; k0 += VU * LANES) {
        uvec2 v[VU][2];         // fp16 pairs of elements value_elem(w, hf, 0..3) and (4..7)
        [[unroll]] for (uint u = 0; u < VU; u++) {
            uint vrow = 2 * (f16_row(begin, begin + min(k0 + u * LANES, n - 1), kvh) + F16_PAGE_VEC4 / 2) + 4 * w + hf;
            v[u][0] = f16_pool2[vrow];      // elements w*16 + 4hf + 0..3
            v[u][1] = f16_pool2[vrow + 2];  // elements w*16 + 4hf + 8..11
        }
        [[unroll]] for (uint u = 0; u < VU; u++) {
            uint k = k0 + u * LANES;
            if (k >= n) continue;
            vec2 f[4] = vec2[4](unpackHalf2x16(v[u][0].x), unpackHalf2x16(v[u][0].y),
                                unpackHalf2x16(v[u][1].x), unpackHalf2x16(v[u][1].y));
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                float p = sh_p[k * GQA + h];
                [[unroll]] for (uint i = 0; i < 4; i++) {
                    acc[h][2 * i] += p * f[i].x;
                    acc[h][2 * i + 1] += p * f[i].y;
                }
            }
        }
    }
}

// The page ids of the chunk at c0 of n tokens into sh_page (item_page). No barrier.
void load_pages(kv_attn_item it, uint c0, uint n)
{
    uint first = c0 / PAGE, n_pages = (c0 + n - 1) / PAGE - first + 1;
    for (uint i = gl_LocalInvocationID.x; i < n_pages; i += WG) sh_page[i] = item_page(it, first + i);
}

void main()
{
    uint item_id = attn_item_id();
    if (item_id >= pc.n_items) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_item it = items[item_id];
    bool is_int2 = MODE != KV_MODE_FP16 && it.kind == KV_ITEM_INT2;
    bool pre_w = is_int2 && PRE_W; // uniform over the workgroup

    // q, its group sums and the first chunk's page ids are loaded together, before the first
    // barrier: the item holds its first pages, so no load waits for another (the group sums are
    // summed from q in global memory, in the order sh_q's would be)
    uint q0 = (it.row * N_HEAD + kvh * GQA) * (D / 4);
    for (uint i = t; i < GQA * D / 4; i += WG) sh_q[i] = q4[q0 + i] * pc.scale;
#if !ATTN_IDOT
    if (is_int2)
        for (uint i = t; i < GQA * PWD; i += WG) {
            uint h = i / PWD, g = i % PWD;
            float s = 0.0;
            for (uint k = 0; k < GROUP / 4; k++) {
                vec4 v = q4[q0 + h * (D / 4) + g * (GROUP / 4) + k] * pc.scale;
                s += (v.x + v.y) + (v.z + v.w);
            }
            sh_qs[i] = s;
        }
#endif
    if (it.begin < it.end) load_pages(it, it.begin, min(it.end - it.begin, ITEM_TOKENS));
#if ATTN_IDOT
    barrier();
    if (is_int2) {
        for (uint i = t; i < GQA * (D / 32); i += WG) quantize_q_block(i);
        barrier();
        for (uint i = t; i < GQA * PWD; i += WG) {
            uint h = i / PWD, g = i % PWD;
            float s = 0.0;
            for (uint b = 0; b < GROUP / 32; b++) s += sh_qbs[h * (D / 32) + g * (GROUP / 32) + b];
            sh_qs[i] = s;
        }
    }
#endif

    uint vw_ = (t / 2) % CW, hf = t % 2, lane = t / (2 * CW); // value phase: word, half, lane
    float m_run[GQA];       // running max (the same in every thread)
    float l[GQA];           // sum of this thread's p
    float acc[GQA][8];      // this lane's value sums of its 8 elements (see values_*)
    float acc_b[GQA];
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        m_run[h] = NEG_INF, l[h] = 0.0, acc_b[h] = 0.0;
        [[unroll]] for (uint j = 0; j < 8; j++) acc[h][j] = 0.0;
    }
    for (uint c0 = it.begin; c0 < it.end; c0 += ITEM_TOKENS) {
        uint n = min(it.end - c0, ITEM_TOKENS);
        if (c0 != it.begin) { // the first chunk's pages came with q
            barrier(); // the previous chunk's readers of sh_page and sh_p are done
            load_pages(it, c0, n);
        }
        uint pos0 = c0 + (is_int2 ? SINK : 0u); // position of the chunk's first token
        if (CENTERED) {
            if (c0 == it.begin) barrier(); // sh_q written
            center_logits(pos0, n, kvh);
        }
        barrier(); // sh_q, sh_qs, sh_page (and sh_bias) written

        float m[GQA];
        [[unroll]] for (uint h = 0; h < GQA; h++) m[h] = NEG_INF;
        if (is_int2) scores_int2(c0, n, pos0, kvh, m);
        else scores_f16(c0, n, pos0, kvh, m);
        reduce_heads(m, true); // its first barrier also publishes the scores

        [[unroll]] for (uint h = 0; h < GQA; h++) {
            float m_new = max(m_run[h], m[h]);
            float alpha = exp(m_run[h] - m_new); // 0 on the first chunk (m_run = -inf)
            m_run[h] = m_new;
            l[h] *= alpha, acc_b[h] *= alpha;
            [[unroll]] for (uint j = 0; j < 8; j++) acc[h][j] *= alpha;
        }
        if (pre_w) {
            // INT2 value weights, once per token and head: with v = mn + sc * c, thread t sums
            // p * mn (fp32; its x = 1 + c/4 form: p * (mn - 4 sc)) into acc_b over its tokens
            // and leaves p * sc (fp16 pairs; fp32: p * 4 sc) in the token's slots of sh_p
            // (the V params of a thread's next PV tokens are loaded together, so that their
            // latency is paid once, not once a token)
            for (uint k0 = t; k0 < n; k0 += PV * WG) {
                uint vpw[PV];
                [[unroll]] for (uint j = 0; j < PV; j++) {
                    uint base, row;
                    int2_row(c0, c0 + min(k0 + j * WG, n - 1), kvh, base, row); // past n: a valid row, unused
                    vpw[j] = int2_pool[base + V_PARAM_OFF + row];
                }
                [[unroll]] for (uint i = 0; i < PV; i++) {
                    uint k = k0 + i * WG;
                    if (k >= n) break;
                    vec2 sm = unpackHalf2x16(vpw[i]); // x = scale, y = min
                    float ps[GQA];
                    [[unroll]] for (uint h = 0; h < GQA; h++) {
                        float p = exp(sh_p[k * GQA + h] - m_run[h]);
                        l[h] += p;
#if ATTN_F16
                        acc_b[h] += p * sm.y;
                        ps[h] = p * sm.x;
#else
                        acc_b[h] += p * (sm.y - 4.0 * sm.x);
                        ps[h] = p * (4.0 * sm.x);
#endif
                    }
#if ATTN_F16
                    [[unroll]] for (uint i2 = 0; i2 < (GQA + 1) / 2; i2++)
                        sh_p[k * GQA + i2] = uintBitsToFloat(packFloat2x16(f16vec2(ps[2 * i2], 2 * i2 + 1 < GQA ? ps[min(2 * i2 + 1, GQA - 1)] : 0.0)));
#else
                    [[unroll]] for (uint h = 0; h < GQA; h++) sh_p[k * GQA + h] = ps[h];
#endif
                }
            }
        } else {
            [[unroll]] for (uint h = 0; h < GQA; h++)
                for (uint k = t; k < n; k += WG) {
                    float p = exp(sh_p[k * GQA + h] - m_run[h]);
                    sh_p[k * GQA + h] = p;
                    l[h] += p;
                }
        }
        barrier();
        if (is_int2) values_int2(c0, n, kvh, vw_, hf, lane, acc, acc_b);
        else values_f16(c0, n, kvh, vw_, hf, lane, acc);
    }
    reduce_heads(l, false); // its barriers also end the value phase's reads of sh_p
    if (pre_w) reduce_heads(acc_b, false); // the min terms of the whole item, added once below

    // the lanes' sums of HR heads a round ([HR][LANES][d] in sh_p), two barriers a round
    uint out_base = item_id * N_HEAD + kvh * GQA; // first query head of this KV head
    [[unroll]] for (uint h0 = 0; h0 < GQA; h0 += HR) {
        [[unroll]] for (uint r = 0; r < HR; r++) {
            uint h = min(h0 + r, GQA - 1);
            float lane_b = pre_w ? 0.0 : acc_b[h];
            if (h0 + r < GQA)
                [[unroll]] for (uint j = 0; j < 8; j++) sh_p[(r * LANES + lane) * D + value_elem(vw_, hf, j)] = acc[h][j] + lane_b;
        }
        barrier();
        for (uint i = t; i < HR * D; i += WG) {
            uint r = i / D, j = i % D;
            if (h0 + r >= GQA) break;
            float v = pre_w ? head_value(acc_b, h0 + r) : 0.0;
            for (uint ln = 0; ln < LANES; ln++) v += sh_p[(r * LANES + ln) * D + j];
            partials[(out_base + h0 + r) * PF + 4 + j] = v;
        }
        if (t < HR && h0 + t < GQA) {
            partials[(out_base + h0 + t) * PF] = head_value(m_run, h0 + t);
            partials[(out_base + h0 + t) * PF + 1] = head_value(l, h0 + t);
        }
        barrier();
    }

    // count this workgroup in; the last of its (row, KV head) merges
    count_and_merge(it.row, kvh);
}
