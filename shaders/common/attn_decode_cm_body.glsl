// Decode attention on cooperative matrices: the body of shaders/attn_decode_cm.coopmat.comp and
// of its scalar emulation attn_decode_cm_emu.f16.comp (common/attn_prefill_cm_ops.glsl holds
// the matrix operations of both). The interface is attn_decode_chunked's: the same bindings,
// push constants, items, partials and merge (common/attn_decode_decl.glsl, attn_merge.glsl).
//
// One workgroup per (work item, KV head). The GQA query heads of the KV head are the first
// rows of a 16-row Q (q·scale in fp16, rows past GQA zero), which every subgroup holds in its
// registers as d / 16 A matrices. The item's tokens go in steps of T = 16 * TT; walker s (the
// first WALKERS subgroups; any further ones only join at the end) takes steps s, s + S, s + 2S,
// ... (S walkers) and keeps its own output accumulators O [16][d] (fp32), maxima and sums: no
// workgroup barrier inside the walk. A step:
//   load:    INT2: the step's raw words (a K and a V code word and their group's params a
//            (token, word) unit) were read into registers during the previous step; K is
//            dequantized (min + code * scale, in fp16 with one rounding; with a key-center table
//            in fp32 plus the block's center, then rounded) into the walker's part of sk, and
//            the next step's reads are issued. fp16 rows (the windows, fp16 mode) are read and
//            stored at once.
//   scores:  S = Q · Kᵀ [16][T] into ss; the lanes take (head, 4 tokens) entries, a head's in
//            neighbouring lanes, whose step maximum meets through shuffles; as in
//            attn_prefill.coopmat the running maximum m moves only when a score passes it by
//            more than TAU (p <= e^TAU then fits fp16; O is rescaled through ss only when it
//            moved); p = exp(s - m) in fp16 into sp (0 past the item), l += p
//   values:  V is dequantized into the same sk rows (the scores' reads of them are done) and
//            O += P · V
// Rows of sk hold each 16-element word of a K or V row in the order (e, e + 8) for e = 0..7,
// the order in which two codes of an INT2 word come out of one shift and mask; q is staged in
// the same order, so the scores are unchanged, and O's columns come out in it (undone below).
//
// At the end the walkers' (m, l, O) meet through shared memory into the item's partial
// (M = max m_s, L = sum l_s e^(m_s - M), O = sum O_s e^(m_s - M)), written to partials
// [n_items][n_head][d + 4] as the other decode kernels write theirs, and the last workgroup of the
// (row, KV head) merges the row (common/attn_merge.glsl: R_Vᵀ, μ_V, out's int8 blocks).
//
// Rounding (docs/accuracy.md): q·scale, K (with its key center) and V in fp16 (clamped to
// +-65504), p in fp16, fp32 sums: attn_ref_attention with f16_inputs reproduces it, as for
// attn_prefill.coopmat.
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
const uint UNITS = T * CW;               // (token, 16-element word) units of a step
const uint UPL = (UNITS + SG_MIN - 1u) / SG_MIN; // units a lane at most
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
shared float s_a[NSG * 16u];             // per walker: rescale factor of each row
shared float s_m[NSG * 16u];             // per walker at the end: m of each head
shared float s_l[NSG * 16u];             // ... and l
shared float sh_out[OUT_FLOATS];         // the merge's lane sums, then outputs
shared float sh_red[GQA * WG];           // the merge's per-thread values
shared float sh_part[GQA * 16u];         // the merge's first-level results
shared bool sh_last;                     // this workgroup completes its (row, KV head)

#define OUT_SCRATCH sh_out
#include "common/attn_merge.glsl"
#include "common/attn_prefill_cm_ops.glsl"

// The walkers' only synchronisation: a subgroup's lanes (and its matrix operations) see each
// other's shared-memory writes (a control barrier with subgroup-scope shared-memory semantics).
#define SG_SYNC() controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease)

f16vec2 clamp_f16(vec2 v) { return f16vec2(clamp(v, vec2(-65504.0), vec2(65504.0))); }
const f16vec2 F16_LIM = f16vec2(65504.0hf);

// Two fp16 pairs (words a, b: elements 2i, 2i + 1 and 2i + 8, 2i + 9 of a 16-element word) in
// (e, e + 8) order: (2i, 2i + 8) and (2i + 1, 2i + 9).
uvec2 permute_pairs(uint a, uint b) { return uvec2((a & 0xFFFFu) | (b << 16), (a >> 16) | (b & 0xFFFF0000u)); }

// Codes (e, e + 8) of INT2 word w, exact in fp16.
f16vec2 codes(uint w, uint e) { return unpackFloat2x16(((w >> (2u * e)) & 0x00030003u) | 0x64006400u) - f16vec2(1024.0hf); }

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
// step's products: FETCH_INT2 reads a lane's units u = lane + i * gl_SubgroupSize (token u / CW,
// word u % CW) of the step at INT2 index J0 with N tokens into RAW[UPL] (x = K code word, y = its
// group's K params, z = V code word, w = V params; tokens past N read token N - 1); STORE_INT2
// dequantizes K (IS_V false) or V of them into this subgroup's sk rows (tokens past N as zeros;
// POS0 the position of the step's first token, for key centers). Macros: RAW's size is a
// specialization constant, which a function parameter cannot take.
#define FETCH_INT2(RAW, J0, N)                                                                             \
    [[unroll]] for (uint i_ = 0u; i_ < UPL; i_++) {                                                       \
        uint u_ = lane + i_ * sgs;                                                                        \
        uint tok_ = min(u_ / CW, (N) - 1u), w_ = u_ % CW, g_ = w_ * 16u / GROUP, base_, row_;             \
        int2_at(seq, (J0) + tok_, kvh, base_, row_);                                                      \
        RAW[i_] = u_ < UNITS ? uvec4(int2_pool[base_ + row_ * CW + w_], int2_pool[base_ + K_PARAM_OFF + row_ * PWD + g_], \
                                     int2_pool[base_ + V_CODE_OFF + row_ * CW + w_],                      \
                                     int2_pool[base_ + V_PARAM_OFF + row_ * PWD + g_])                    \
                             : uvec4(0u);                                                                 \
    }

#define STORE_INT2(RAW, IS_V, N, POS0)                                                                     \
    [[unroll]] for (uint i_ = 0u; i_ < UPL; i_++) {                                                       \
        uint u_ = lane + i_ * sgs;                                                                        \
        if (u_ >= UNITS) continue;                                                                        \
        uint tok_ = u_ / CW, w_ = u_ % CW, dst_ = kb + tok_ * QS + 4u * w_;                               \
        uint cw_ = (IS_V) ? RAW[i_].z : RAW[i_].x, pw_ = (IS_V) ? RAW[i_].w : RAW[i_].y;                  \
        if (tok_ >= (N)) {                                                                                \
            [[unroll]] for (uint j_ = 0u; j_ < 4u; j_++) sk[dst_ + j_] = f16vec4(0.0hf);                  \
        } else if (!(IS_V) && CENTERED) {                                                                 \
            vec2 sm_ = unpackHalf2x16(pw_); /* (scale, min) */                                            \
            [[unroll]] for (uint j_ = 0u; j_ < 4u; j_++) {                                                \
                uvec2 c_ = center_pairs((POS0) + tok_, kvh, w_, j_);                                      \
                vec2 a_ = vec2(codes(cw_, 2u * j_)) * sm_.x + sm_.y + unpackHalf2x16(c_.x);                \
                vec2 b_ = vec2(codes(cw_, 2u * j_ + 1u)) * sm_.x + sm_.y + unpackHalf2x16(c_.y);           \
                sk[dst_ + j_] = f16vec4(clamp_f16(a_), clamp_f16(b_));                                     \
            }                                                                                             \
        } else {                                                                                          \
            f16vec2 s2_ = f16vec2(unpackFloat2x16(pw_).x), m2_ = f16vec2(unpackFloat2x16(pw_).y);         \
            [[unroll]] for (uint j_ = 0u; j_ < 4u; j_++)                                                  \
                sk[dst_ + j_] = f16vec4(clamp(fma(codes(cw_, 2u * j_), s2_, m2_), -F16_LIM, F16_LIM),     \
                                        clamp(fma(codes(cw_, 2u * j_ + 1u), s2_, m2_), -F16_LIM, F16_LIM)); \
        }                                                                                                 \
    }

// K (is_v = false) or V of the step's fp16 rows at position p0 with n tokens into the
// subgroup's sk rows (past n as zeros), read and stored at once.
void load_f16(bool is_v, uint seq, uint p0, uint n, uint kvh, uint kb)
{
    uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    for (uint u = lane; u < UNITS; u += sgs) {
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
    uint sg = gl_SubgroupID, nsg = gl_NumSubgroups, lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    uint kb = sg * T * QS, pb = sg * 16u * PS, sb = sg * SSF; // this subgroup's parts of sk, sp, ss
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
    if (walker)
        for (uint i = lane; i < 16u * PS; i += sgs) sp[pb + i] = f16vec4(0.0hf);
    barrier();
    APC_QA qa[D / 16u];
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_QA_LOAD(qa[j], sk, 4u * j);
    barrier(); // every subgroup has q before the walkers' K rows overwrite it

    APC_ACC o[D / 16u];
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) o[j] = APC_ZERO;
    float m[EPL], l[EPL]; // of each softmax entry's head (below): running maximum, this lane's sum of p
    [[unroll]] for (uint i = 0u; i < EPL; i++) m[i] = NEG_INF, l[i] = 0.0;

    uint n_tok = it.end - it.begin, n_steps = (n_tok + T - 1u) / T;
    uint pos_off = is_int2 ? SINK : 0u; // position of INT2 index j is SINK + j
    uvec4 raw[UPL], cur[UPL];
    if (is_int2 && walker && sg < n_steps) { FETCH_INT2(raw, it.begin + sg * T, min(T, n_tok - sg * T)) }
    for (uint st = walker ? sg : n_steps; st < n_steps; st += nw) { // uniform over the subgroup
        uint b0 = it.begin + st * T, n = min(T, it.end - b0);
        if (is_int2) {
            [[unroll]] for (uint i = 0u; i < UPL; i++) cur[i] = raw[i];
            STORE_INT2(cur, false, n, b0 + pos_off)
            uint nx = st + nw;
            if (nx < n_steps) { FETCH_INT2(raw, it.begin + nx * T, min(T, n_tok - nx * T)) }
        } else
            load_f16(false, seq, b0, n, kvh, kb);
        SG_SYNC();

        APC_ACC s[TT];
        APC_UNROLL for (uint c = 0u; c < TT; c++) s[c] = APC_ZERO;
        APC_UNROLL for (uint kk = 0u; kk < D4; kk += 4u)
            APC_UNROLL for (uint c = 0u; c < TT; c++) APC_QK(s[c], qa[kk / 4u], kb + c * 16u * QS + kk);
        APC_UNROLL for (uint c = 0u; c < TT; c++) APC_STORE(s[c], sb + c * 16u, T);
        SG_SYNC();

        // softmax: a lane's entry i is e = lane + i * gl_SubgroupSize, head e / T4, tokens
        // 4 (e % T4) .. + 3: a head's entries fill T4 neighbouring lanes, whose maxima meet by
        // log2(T4) shuffles; m[i] and l[i] belong to entry i's head
        vec4 sc[EPL];
        bool moved = false;
        [[unroll]] for (uint i = 0u; i < EPL; i++) {
            uint e = lane + i * sgs, h = e / T4, t0 = 4u * (e % T4);
            sc[i] = vec4(NEG_INF);
            if (e < GQA * T4)
                [[unroll]] for (uint k = 0u; k < 4u; k++)
                    if (t0 + k < n) sc[i][k] = ss[sb + h * T + t0 + k];
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
            if (e < GQA * T4 && t0 == 0u) s_a[sg * 16u + h] = a;
            if (e < GQA * T4) {
                vec4 p = exp(sc[i] - m[i]); // exp(-inf) = 0 past the item
                f16vec4 ph = f16vec4(p);
                sp[pb + h * PS + t0 / 4u] = ph;
                l[i] += (float(ph.x) + float(ph.y)) + (float(ph.z) + float(ph.w));
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

        if (is_int2) { STORE_INT2(cur, true, n, b0 + pos_off) }
        else load_f16(true, seq, b0, n, kvh, kb);
        SG_SYNC();
        APC_UNROLL for (uint c = 0u; c < TT; c++)
            APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_PV(o[j], pb + 4u * c, kb + c * 16u * QS + 4u * j);
        SG_SYNC(); // the products' reads of sk and sp are done before the next step's stores
    }

    // the subgroups' (m, l, O) into the item's partial
    [[unroll]] for (uint i = 0u; i < EPL; i++) {
        uint e = lane + i * sgs;
        float lh = l[i];
        for (uint x = 1u; x < T4; x <<= 1) lh += subgroupShuffleXor(lh, x);
        if (walker && e < GQA * T4 && e % T4 == 0u) s_m[sg * 16u + e / T4] = m[i], s_l[sg * 16u + e / T4] = lh;
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
                v += f * ss[s2 * SSF + e];
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
