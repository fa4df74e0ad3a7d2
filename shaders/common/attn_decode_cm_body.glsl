// Decode attention on cooperative matrices: the body of shaders/attn_decode_cm.coopmat.comp and
// of its scalar emulation attn_decode_cm_emu.f16.comp (common/attn_prefill_cm_ops.glsl holds
// the matrix operations of both), and with APC_HEADS8 of attn_decode_cm8.coopmat and its
// emulation, whose operations (common/attn_decode_cm8_ops.glsl) run each product below
// transposed, the heads along N = 8, over the same shared-memory layouts. The interface is attn_decode_chunked's: the same bindings,
// push constants, items, partials and merge (common/attn_decode_decl.glsl, attn_merge.glsl).
//
// One workgroup per (work item, KV head). The GQA query heads of the KV head are the first
// rows of a 16-row Q (q·scale in fp16, rows past GQA zero), which every subgroup holds in its
// registers as d / 16 A matrices. The item's tokens go in steps of T = 16 * TT; walker s (the
// first WALKERS subgroups; any further ones only join at the end) takes steps s, s + S, s + 2S,
// ... (S walkers) and keeps its own output accumulators O [16][d] (fp32), maxima and sums: no
// workgroup barrier inside the walk. INT2 rows enter the products as their exact codes (0..3
// in fp16), so the dequantization's multiply-add moves out of the d-element rows into the
// scores and weights (one group a row: a multiply-add per score and per weight):
//   s = sum_g scale_g (q · c)_g + min_g (sum of q over g),  O += sum_t (p scale_g) c_t + (sum_t p min_g)
// A step:
//   load:    INT2: the step's codes (a lane's units: 4 K and 4 V code words of a token, as
//            16-byte loads) and its groups' (scale, min) were read into registers during the
//            previous step; the K codes go into the walker's part of sk, the pairs into s_kp and
//            s_vp, and the next step's reads are issued. With a key-center table, K is
//            dequantized instead (min + code * scale, in fp32 plus the block's center, then
//            rounded). fp16 rows (the windows, fp16 mode) are read and stored at once.
//   scores:  S_g = Q · Kᵀ [16][T] over each group's columns into ss; the lanes take (head, 4
//            tokens) entries, a head's in neighbouring lanes, and sum scale * S_g + min * qsum_g
//            (code keys) or S_g; the step maximum meets through shuffles; as in
//            attn_prefill.coopmat the running maximum m moves only when a score passes it by
//            more than TAU (p <= e^TAU then fits fp16; O is rescaled through ss only when it
//            moved); p = exp(s - m) in fp16 (0 past the item), l += p
//   values:  the V codes go into the same sk rows (the scores' reads of them are done); per
//            group, p * scale_g in fp16 into sp, mv += p * min_g (fp32, per lane), and O's
//            columns of the group += P_g · V
// Rows of sk hold each 16-element word of a K or V row in the order (e, e + 8) for e = 0..7,
// the order in which two codes of an INT2 word come out of one shift and mask; q is staged in
// the same order, so the scores are unchanged, and O's columns come out in it (undone below).
//
// At the end the walkers' (m, l, mv, O) meet through shared memory into the item's partial
// (M = max m_s, L = sum l_s e^(m_s - M), O = sum (O_s + mv_s) e^(m_s - M)), written to partials
// [n_items][n_head][d + 4] as the other decode kernels write theirs, and the last workgroup of the
// (row, KV head) merges the row (common/attn_merge.glsl: R_Vᵀ, μ_V, out's int8 blocks).
//
// Rounding (docs/accuracy.md): q·scale in fp16 (clamped to +-65504); INT2 codes exact; fp16
// rows and centered keys in fp16 (clamped); p and p * scale in fp16 (clamped); fp32 sums:
// attn_ref_attention with f16_inputs and int2_codes reproduces it.
//
// The host sizes the workgroup as WALKERS subgroups of the largest size the device may use (more
// where the merge needs d/4 threads), and keeps WALKERS <= WG / SG_MIN, so a device that runs
// smaller subgroups still has every walker. Nothing assumes a subgroup size; a head's softmax
// entries (4 TT lanes, a power of two) need subgroups of at least that many lanes.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#include "common/kv_layout.h"
#include "common/attn_decode_cm.h"
#include "common/kv_write.h"

#define ATTN_MERGE_Q8 // the merge may write out's int8 blocks too (pc.q8_out)
#include "common/attn_decode_decl.glsl"

layout(constant_id = KV_SPEC_CM_SG_MIN) const uint SG_MIN = 32;
layout(constant_id = KV_SPEC_CM_TILES) const uint TT = 2;
layout(constant_id = KV_SPEC_CM_WALKERS) const uint WALKERS = 4; // subgroups that walk the item (the rest only merge)

const uint T = 16u * TT;                 // tokens a subgroup takes a step
const uint T4 = T / 4u;
const uint NSG = WALKERS;                // walkers
const uint QS = ATTN_CM_QS(D);           // row stride of sk (f16vec4)
const uint PS = ATTN_CM_PS(TT);          // row stride of sp (f16vec4)
const uint SSF = 256u * TT;              // floats of ss a subgroup: [16][T] scores, or a [16][16] accumulator
const uint CW4 = CW / 4u;                // 4-word code loads a row (d a multiple of 64)
const uint UNITS = T * CW4;              // (token, 4 code words) units of a step
const uint UPL = (UNITS + SG_MIN - 1u) / SG_MIN; // units a lane at most
const uint PUNITS = T * PWD;             // (token, group) parameter units of a step
const uint PPL = (PUNITS + SG_MIN - 1u) / SG_MIN; // parameter units a lane at most
const bool CODES_VEC4 = (INT2_PAGE_WORDS % 4u) + (V_CODE_OFF % 4u) == 0u; // code rows 16-byte aligned
const uint EPL = (GQA * T4 + SG_MIN - 1u) / SG_MIN; // softmax entries (head, 4 tokens) a lane at most
const float TAU = 8.0;                   // the lazy maximum's slack: p <= e^8 ~ 2981
const float NEG_INF = -1.0 / 0.0;

// ---- shared memory (ATTN_CM_SHARED_BYTES) ----
const uint OUT_FLOATS = (LANES_M > GQA ? LANES_M : GQA) * D; // the merge's lane sums, then outputs
shared f16vec4 sk[NSG * T * QS];         // per walker [T][d]: K rows, then V rows, (e, e + 8) order; at
                                         // the start [16][d] q·scale in that order
#define sv sk
shared f16vec4 sp[NSG * 16u * PS];       // per walker [16][T] p
shared float ss[NSG * SSF];              // per walker [16][T] scores, or a [16][16] accumulator
shared vec2 s_kp[NSG * PUNITS];          // per walker [T][d/G] (scale, min) of the step's INT2 K groups
shared vec2 s_vp[NSG * PUNITS];          // ... and V groups
shared float s_qs[16u * PWD];            // [GQA][d/G] group sums of q·scale in fp16
shared float s_mv[NSG * 16u * PWD];      // per walker at the end: [16][d/G] sum of p * V group min
shared float s_a[NSG * 16u];             // per walker: rescale factor of each row
shared float s_m[NSG * 16u];             // per walker at the end: m of each head
shared float s_l[NSG * 16u];             // ... and l
shared float sh_out[OUT_FLOATS];         // the merge's lane sums, then outputs
shared float sh_red[GQA * WG];           // the merge's per-thread values
shared float sh_part[GQA * 16u];         // the merge's first-level results
shared bool sh_last;                     // this workgroup completes its (row, KV head)

#define OUT_SCRATCH sh_out
#include "common/attn_merge.glsl"
#ifdef APC_HEADS8
#include "common/attn_decode_cm8_ops.glsl" // the products transposed, heads along N = 8
#else
#include "common/attn_prefill_cm_ops.glsl"
#endif

// The walkers' only synchronisation: a subgroup's lanes (and its matrix operations) see each
// other's shared-memory writes (a control barrier with subgroup-scope shared-memory semantics).
#define SG_SYNC() controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease)

f16vec2 clamp_f16(vec2 v) { return f16vec2(clamp(v, vec2(-65504.0), vec2(65504.0))); }

// Two fp16 pairs (words a, b: elements 2i, 2i + 1 and 2i + 8, 2i + 9 of a 16-element word) in
// (e, e + 8) order: (2i, 2i + 8) and (2i + 1, 2i + 9).
uvec2 permute_pairs(uint a, uint b) { return uvec2((a & 0xFFFFu) | (b << 16), (a >> 16) | (b & 0xFFFF0000u)); }

#include "common/int2_code_f16.glsl"

// Physical word base and row of INT2 index j (KV head kvh).
void int2_at(uint seq, uint j, uint kvh, out uint base, out uint row)
{
    base = uint(int2_table[seq * pc.max_int2_pages + j / PAGE]) * INT2_PAGE_WORDS;
    row = kvh * PAGE + j % PAGE;
}

// Key-center pairs 2i and 2i + 1 of 16-element word w, (e, e + 8) order, of position p's block.
uvec2 center_pairs(uint p, uint kvh, uint w, uint i)
{
    uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + (p / max(CENTER_BLOCK, 1u) * N_KV + kvh) * (D / 2u) + 8u * w;
    return permute_pairs(means_w[cb + i], means_w[cb + 4u + i]);
}

// An INT2 step goes in two halves, so that the next step's reads are in flight during this
// step's products. FETCH_INT2 reads a lane's units u = lane + i * gl_SubgroupSize of the step at
// INT2 index J0 with N tokens: code units (token u / CW4, code words 4 (u % CW4) .. + 3) into
// RAW[UPL] (K codes) and RAWV[UPL] (V codes), and parameter units (token u / PWD, group u % PWD)
// into RAWP[PPL] (x = K params, y = V params); tokens past N read token N - 1, whose scores are
// masked and whose weights are 0. STORE_CODES writes a code array's exact codes into this
// subgroup's sk rows; STORE_PARAMS the (scale, min) pairs into s_kp and s_vp. Macros: the
// arrays' sizes are specialization constants, which a function parameter cannot take.
#define FETCH_INT2(RAW, RAWV, RAWP, J0, N)                                                             \
    [[unroll]] for (uint i_ = 0u; i_ < UPL; i_++) {                                                    \
        uint u_ = min(lane + i_ * sgs, UNITS - 1u);                                                    \
        uint tok_ = min(u_ / CW4, (N) - 1u), base_, row_;                                              \
        int2_at(seq, (J0) + tok_, kvh, base_, row_);                                                   \
        uint k_ = base_ + row_ * CW + 4u * (u_ % CW4), v_ = k_ + V_CODE_OFF;                           \
        RAW[i_] = CODES_VEC4 ? int2_pool4[k_ / 4u] : uvec4(int2_pool[k_], int2_pool[k_ + 1u], int2_pool[k_ + 2u], int2_pool[k_ + 3u]); \
        RAWV[i_] = CODES_VEC4 ? int2_pool4[v_ / 4u] : uvec4(int2_pool[v_], int2_pool[v_ + 1u], int2_pool[v_ + 2u], int2_pool[v_ + 3u]); \
    }                                                                                                  \
    [[unroll]] for (uint i_ = 0u; i_ < PPL; i_++) {                                                    \
        uint u_ = min(lane + i_ * sgs, PUNITS - 1u);                                                   \
        uint tok_ = min(u_ / PWD, (N) - 1u), base_, row_;                                              \
        int2_at(seq, (J0) + tok_, kvh, base_, row_);                                                   \
        uint p_ = base_ + K_PARAM_OFF + row_ * PWD + u_ % PWD;                                         \
        RAWP[i_] = uvec2(int2_pool[p_], int2_pool[p_ + V_PARAM_OFF - K_PARAM_OFF]);                    \
    }

#define STORE_CODES(RAW)                                                                               \
    [[unroll]] for (uint i_ = 0u; i_ < UPL; i_++) {                                                    \
        uint u_ = lane + i_ * sgs;                                                                     \
        if (u_ >= UNITS) continue;                                                                     \
        uint dst_ = kb + (u_ / CW4) * QS + 16u * (u_ % CW4);                                           \
        [[unroll]] for (uint w_ = 0u; w_ < 4u; w_++)                                                   \
            [[unroll]] for (uint j_ = 0u; j_ < 4u; j_++)                                               \
                sk[dst_ + 4u * w_ + j_] = f16vec4(code_pair(RAW[i_][w_], 2u * j_), code_pair(RAW[i_][w_], 2u * j_ + 1u)); \
    }

#define STORE_PARAMS(RAWP)                                                                             \
    [[unroll]] for (uint i_ = 0u; i_ < PPL; i_++) {                                                    \
        uint u_ = lane + i_ * sgs;                                                                     \
        if (u_ >= PUNITS) continue;                                                                    \
        s_kp[pp + u_] = unpackHalf2x16(RAWP[i_].x);                                                    \
        s_vp[pp + u_] = unpackHalf2x16(RAWP[i_].y);                                                    \
    }

// Keys with a key-center table (OSCAR): this subgroup's K rows dequantized from RAW and the
// (scale, min) pairs in s_kp (min + code * scale, plus the block's center, in fp32, then
// rounded to fp16 and clamped); POS0 is the position of the step's first token.
#define STORE_CENTERED(RAW, POS0)                                                                      \
    [[unroll]] for (uint i_ = 0u; i_ < UPL; i_++) {                                                    \
        uint u_ = lane + i_ * sgs;                                                                     \
        if (u_ >= UNITS) continue;                                                                     \
        uint tok_ = u_ / CW4, dst_ = kb + tok_ * QS + 16u * (u_ % CW4);                                \
        [[unroll]] for (uint w_ = 0u; w_ < 4u; w_++) {                                                 \
            uint wd_ = 4u * (u_ % CW4) + w_;                                                           \
            vec2 sm_ = s_kp[pp + tok_ * PWD + wd_ / WPG];                                              \
            [[unroll]] for (uint j_ = 0u; j_ < 4u; j_++) {                                             \
                uvec2 c_ = center_pairs((POS0) + tok_, kvh, wd_, j_);                                  \
                vec2 a_ = vec2(code_pair(RAW[i_][w_], 2u * j_)) * sm_.x + sm_.y + unpackHalf2x16(c_.x);    \
                vec2 b_ = vec2(code_pair(RAW[i_][w_], 2u * j_ + 1u)) * sm_.x + sm_.y + unpackHalf2x16(c_.y); \
                sk[dst_ + 4u * w_ + j_] = f16vec4(clamp_f16(a_), clamp_f16(b_));                       \
            }                                                                                          \
        }                                                                                              \
    }

// K (is_v = false) or V of the step's fp16 rows at position p0 with n tokens into the
// subgroup's sk rows (past n as zeros), read and stored at once.
void load_f16(bool is_v, uint seq, uint p0, uint n, uint kvh, uint kb)
{
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    for (uint u = lane; u < T * CW; u += sgs) {
        uint tok = u / CW, w = u % CW, dst = kb + tok * QS + 4u * w;
        if (tok >= n) {
            [[unroll]] for (uint j = 0u; j < 4u; j++) sk[dst + j] = f16vec4(0.0hf);
            continue;
        }
        uint p = p0 + tok;
        uint row = (uint(f16_table[seq * pc.max_f16_pages + p / PAGE]) * F16_PAGE_VEC4 + (kvh * PAGE + p % PAGE) * F16_ROW_VEC4) * 4u +
                   (is_v ? 2u * F16_PAGE_VEC4 : 0u) + 8u * w;
        uvec4 a = f16_pool4[row / 4u], b = f16_pool4[row / 4u + 1u];
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            uvec2 pr = permute_pairs(a[j], b[j]);
            if (!is_v && CENTERED) {
                uvec2 c = center_pairs(p, kvh, w, j);
                sk[dst + j] = f16vec4(clamp_f16(unpackHalf2x16(pr.x) + unpackHalf2x16(c.x)),
                                      clamp_f16(unpackHalf2x16(pr.y) + unpackHalf2x16(c.y)));
            } else
                sk[dst + j] = f16vec4(unpackFloat2x16(pr.x), unpackFloat2x16(pr.y));
        }
    }
}

void main()
{
    uint item_id = attn_item_id();
    if (item_id >= pc.n_items) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_item it = items[item_id];
    uint seq = it.seq;
    bool is_int2 = MODE != KV_MODE_FP16 && it.kind == KV_ITEM_INT2;
    bool k_codes = is_int2 && !CENTERED; // keys as exact codes, their groups' (scale, min) applied to the scores
    uint sg = gl_SubgroupID, nsg = gl_NumSubgroups, lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    uint kb = sg * T * QS, pb = sg * 16u * PS, sb = sg * SSF, pp = sg * PUNITS; // this subgroup's parts of sk, sp, ss, s_kp/s_vp
    bool walker = sg < NSG;
    uint nw = min(nsg, NSG); // walkers

    // q·scale in fp16, (e, e + 8) order: f16vec4 4w + j of a row holds elements 16w + 2j, 16w + 2j + 8,
    // 16w + 2j + 1, 16w + 2j + 9; this subgroup's p rows zero (rows past GQA stay so)
    for (uint i = t; i < 16u * D4; i += WG) {
        uint h = i / D4, c = i % D4, w = c / 4u, j = c % 4u;
        f16vec4 v = f16vec4(0.0hf);
        if (h < GQA) {
            uint qb = (it.row * N_HEAD + kvh * GQA + h) * D + 16u * w + 2u * j;
            vec4 a = q4[qb / 4u], b = q4[qb / 4u + 2u]; // elements qb.., qb + 8..  (qb even: 2j is 0, 2, 4, 6)
            uint o = (2u * j) % 4u;
            v = f16vec4(clamp_f16(vec2(a[o], b[o]) * pc.scale), clamp_f16(vec2(a[o + 1u], b[o + 1u]) * pc.scale));
        }
        sk[h * QS + c] = v;
    }
    // each group's sum of that fp16 q·scale, for the code keys' minima
    for (uint i = t; i < GQA * PWD; i += WG) {
        uint qb = (it.row * N_HEAD + kvh * GQA + i / PWD) * D4 + (i % PWD) * (GROUP / 4u);
        float s = 0.0;
        for (uint k = 0u; k < GROUP / 4u; k++) {
            vec4 v = vec4(f16vec4(clamp(q4[qb + k] * pc.scale, vec4(-65504.0), vec4(65504.0))));
            s += (v.x + v.y) + (v.z + v.w);
        }
        s_qs[i] = s;
    }
    if (walker)
        for (uint i = lane; i < 16u * PS; i += sgs) sp[pb + i] = f16vec4(0.0hf);
    barrier();
    APC_QA qa[D / 16u];
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_QA_LOAD(qa[j], sk, 4u * j);
    barrier(); // every subgroup has q before the walkers' K rows overwrite it

    APC_ACC o[D / 16u];
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) o[j] = APC_ZERO;
    // of each softmax entry's head (below): running maximum, this lane's sum of p, and of p times
    // each V group's min (the part of O that the code products leave out)
    float m[EPL], l[EPL], mv[EPL * PWD];
    [[unroll]] for (uint i = 0u; i < EPL; i++) m[i] = NEG_INF, l[i] = 0.0;
    [[unroll]] for (uint i = 0u; i < EPL * PWD; i++) mv[i] = 0.0;

    uint n_tok = it.end - it.begin, n_steps = (n_tok + T - 1u) / T;
    uint pos_off = is_int2 ? SINK : 0u; // position of INT2 index j is SINK + j
    uvec4 raw[UPL], rawv[UPL], cur[UPL], curv[UPL];
    uvec2 rawp[PPL], curp[PPL];
    if (is_int2 && walker && sg < n_steps) { FETCH_INT2(raw, rawv, rawp, it.begin + sg * T, min(T, n_tok - sg * T)) }
    for (uint st = walker ? sg : n_steps; st < n_steps; st += nw) { // uniform over the subgroup
        uint b0 = it.begin + st * T, n = min(T, it.end - b0);
        if (is_int2) {
            [[unroll]] for (uint i = 0u; i < UPL; i++) cur[i] = raw[i], curv[i] = rawv[i];
            [[unroll]] for (uint i = 0u; i < PPL; i++) curp[i] = rawp[i];
            STORE_PARAMS(curp)
            if (k_codes) { STORE_CODES(cur) }
            else {
                SG_SYNC(); // the centered keys read s_kp
                STORE_CENTERED(cur, b0 + pos_off)
            }
            uint nx = st + nw;
            if (nx < n_steps) { FETCH_INT2(raw, rawv, rawp, it.begin + nx * T, min(T, n_tok - nx * T)) }
        } else
            load_f16(false, seq, b0, n, kvh, kb);
        SG_SYNC();

        // scores, a K group at a time: S_g = Q · Kᵀ over the group's columns, through ss; a lane
        // sums its entries' scale * S_g + min * (q's group sum) (code keys) or S_g. A lane's entry
        // i is e = lane + i * gl_SubgroupSize: head e / T4, tokens 4 (e % T4) .. + 3, so a head's
        // entries fill T4 neighbouring lanes; m[i] and l[i] belong to entry i's head
        vec4 sc[EPL];
        [[unroll]] for (uint i = 0u; i < EPL; i++) sc[i] = vec4(0.0);
        [[unroll]] for (uint g = 0u; g < PWD; g++) {
            APC_ACC s[TT];
            APC_UNROLL for (uint c = 0u; c < TT; c++) s[c] = APC_ZERO;
            APC_UNROLL for (uint kk = g * (GROUP / 4u); kk < (g + 1u) * (GROUP / 4u); kk += 4u)
                APC_UNROLL for (uint c = 0u; c < TT; c++) APC_QK(s[c], qa[kk / 4u], kb + c * 16u * QS + kk);
            APC_UNROLL for (uint c = 0u; c < TT; c++) APC_STORE(s[c], sb + c * 16u, T);
            SG_SYNC();
            [[unroll]] for (uint i = 0u; i < EPL; i++) {
                uint e = lane + i * sgs, h = e / T4, t0 = 4u * (e % T4);
                if (e < GQA * T4) {
                    vec4 x = vec4(ss[sb + h * T + t0], ss[sb + h * T + t0 + 1u], ss[sb + h * T + t0 + 2u], ss[sb + h * T + t0 + 3u]);
                    if (k_codes) {
                        float qs = s_qs[h * PWD + g];
                        [[unroll]] for (uint k = 0u; k < 4u; k++) {
                            vec2 sm = s_kp[pp + (t0 + k) * PWD + g];
                            x[k] = fma(sm.x, x[k], sm.y * qs);
                        }
                    }
                    sc[i] += x;
                }
            }
            if (PWD > 1u) SG_SYNC(); // read before the next group's scores overwrite ss
        }

        // softmax: a head's maxima meet by log2(T4) shuffles; as in attn_prefill.coopmat the
        // running maximum m moves only when a score passes it by more than TAU (p <= e^TAU then
        // fits fp16; O is rescaled through ss only when it moved); p = exp(s - m) in fp16, l += p
        f16vec4 ph[EPL];
        bool moved = false;
        [[unroll]] for (uint i = 0u; i < EPL; i++) {
            uint e = lane + i * sgs, h = e / T4, t0 = 4u * (e % T4);
            [[unroll]] for (uint k = 0u; k < 4u; k++)
                if (e >= GQA * T4 || t0 + k >= n) sc[i][k] = NEG_INF;
            float mc = max(max(sc[i].x, sc[i].y), max(sc[i].z, sc[i].w));
            for (uint x = 1u; x < T4; x <<= 1) mc = max(mc, subgroupShuffleXor(mc, x));
            float a = 1.0;
            if (m[i] == NEG_INF) m[i] = mc; // nothing summed yet: no rescale
            else if (mc > m[i] + TAU) {
                a = exp(m[i] - mc);
                m[i] = mc;
                moved = true;
            }
            l[i] *= a;
            [[unroll]] for (uint g = 0u; g < PWD; g++) mv[i * PWD + g] *= a;
            if (e < GQA * T4 && t0 == 0u) s_a[sg * 16u + h] = a;
            ph[i] = f16vec4(0.0hf);
            if (e < GQA * T4) {
                ph[i] = f16vec4(exp(sc[i] - m[i])); // exp(-inf) = 0 past the item
                l[i] += (float(ph[i].x) + float(ph[i].y)) + (float(ph[i].z) + float(ph[i].w));
            }
        }
        moved = subgroupAny(moved);
        SG_SYNC();
        if (moved) { // O *= a per row, an accumulator at a time through this subgroup's ss
            APC_UNROLL for (uint j = 0u; j < D / 16u; j++) {
                APC_STORE(o[j], sb, 16u);
                SG_SYNC();
                for (uint e = lane; e < GQA * 16u; e += sgs) ss[sb + e] *= s_a[sg * 16u + e / 16u];
                SG_SYNC();
                APC_LOAD(o[j], sb, 16u);
                SG_SYNC(); // read before the next accumulator overwrites it
            }
        }

        // values, a V group at a time: INT2 rows as exact codes with P_g = p * scale in fp16 (and
        // mv += p * min), fp16 rows with P = p; O's columns of the group += P_g · V
        if (is_int2) { STORE_CODES(curv) }
        else load_f16(true, seq, b0, n, kvh, kb);
        [[unroll]] for (uint g = 0u; g < PWD; g++) {
            [[unroll]] for (uint i = 0u; i < EPL; i++) {
                uint e = lane + i * sgs, h = e / T4, t0 = 4u * (e % T4);
                if (e < GQA * T4) {
                    f16vec4 w = ph[i];
                    if (is_int2) {
                        vec4 pf = vec4(ph[i]), sv, mn;
                        [[unroll]] for (uint k = 0u; k < 4u; k++) {
                            vec2 sm = s_vp[pp + (t0 + k) * PWD + g];
                            sv[k] = sm.x, mn[k] = sm.y;
                        }
                        w = f16vec4(clamp(pf * sv, vec4(-65504.0), vec4(65504.0)));
                        mv[i * PWD + g] += (pf.x * mn.x + pf.y * mn.y) + (pf.z * mn.z + pf.w * mn.w);
                    }
                    sp[pb + h * PS + t0 / 4u] = w;
                }
            }
            SG_SYNC();
            APC_UNROLL for (uint c = 0u; c < TT; c++)
                APC_UNROLL for (uint j = g * (GROUP / 16u); j < (g + 1u) * (GROUP / 16u); j++)
                    APC_PV(o[j], pb + 4u * c, kb + c * 16u * QS + 4u * j);
            SG_SYNC(); // the products' reads of sk and sp are done before the next stores
        }
    }

    // the subgroups' (m, l, mv, O) into the item's partial
    [[unroll]] for (uint i = 0u; i < EPL; i++) {
        uint e = lane + i * sgs;
        float lh = l[i];
        for (uint x = 1u; x < T4; x <<= 1) lh += subgroupShuffleXor(lh, x);
        float mh[PWD];
        [[unroll]] for (uint g = 0u; g < PWD; g++) {
            mh[g] = mv[i * PWD + g];
            for (uint x = 1u; x < T4; x <<= 1) mh[g] += subgroupShuffleXor(mh[g], x);
        }
        if (walker && e < GQA * T4 && e % T4 == 0u) {
            uint h = e / T4;
            s_m[sg * 16u + h] = m[i], s_l[sg * 16u + h] = lh;
            [[unroll]] for (uint g = 0u; g < PWD; g++) s_mv[(sg * 16u + h) * PWD + g] = mh[g];
        }
    }
    barrier();
    uint out_base = item_id * N_HEAD + kvh * GQA; // first query head of this KV head
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) {
        if (walker) APC_STORE(o[j], sb, 16u);
        barrier();
        for (uint e = t; e < GQA * 16u; e += WG) {
            uint h = e / 16u, c = e % 16u;
            float mm = NEG_INF;
            for (uint s2 = 0u; s2 < nw; s2++) mm = max(mm, s_m[s2 * 16u + h]);
            float v = 0.0, lsum = 0.0;
            for (uint s2 = 0u; s2 < nw; s2++) {
                float ms = s_m[s2 * 16u + h], f = ms == NEG_INF ? 0.0 : exp(ms - mm);
                v += f * (ss[s2 * SSF + e] + s_mv[(s2 * 16u + h) * PWD + 16u * j / GROUP]);
                lsum += f * s_l[s2 * 16u + h];
            }
            uint pf = (out_base + h) * PF;
            partials[pf + 4u + 16u * j + c / 2u + 8u * (c % 2u)] = v; // column c is element c / 2 (+ 8)
            if (j == 0u && c == 0u) partials[pf] = mm, partials[pf + 1u] = lsum;
        }
        barrier();
    }

    // count this workgroup in; the last of its (row, KV head) merges
    count_and_merge(it.row, kvh);
}
