// The body of prefill attention on cooperative matrices (shaders/attn_prefill.coopmat.comp),
// shared with its scalar emulation (shaders/attn_prefill_emu.f16.comp). The interface is
// attn_prefill.comp's: the same bindings, push constants, tiles (common/attn_prefill.h) and
// output, o·R_Vᵀ (+ μ_V) included.
//
// One workgroup per (tile, KV head). The tile's M = ROWS x GQA (row, query head) pairs are the
// rows of the matrices, cut into RB = M / 16 row blocks; subgroup b owns row block b and keeps
// its d / 16 output accumulators (fp32) across the whole walk. The walk is attn_prefill's
// (fp16 sinks, INT2 middle, fp16 recent window), in chunks of CHUNK tokens. Per chunk:
//   load:    every thread: its part of the chunk's K and V rows of this KV head (read into
//            registers during the previous chunk's products), dequantized in fp32 (INT2: min +
//            code * scale, as int2_quant.h; keys plus their block's center where the cache has
//            a key-center table) and rounded to fp16 into sk, sv; then the next chunk's reads
//   scores:  each owner: S = Q · Kᵀ for its 16 rows (Q = q·scale in fp16, held in its registers
//            as d / 16 A matrices, staged once through sk and sv at the start) into ss; its
//            lanes (1, 2 or 4 a row) then run the online softmax of its rows with a lazy maximum:
//            p = exp(s - m) for the tokens the row sees, rounded to fp16 into sp, l += p; m
//            moves only when the chunk's maximum passes it by more than TAU, so p <= e^TAU
//            (fp16 holds it) and the accumulators are rescaled (through ss: a matrix's layout
//            is the device's own) only when some row's m moved
//   values:  each owner: O += P · V
// Two workgroup barriers a chunk; the softmax and the rescale wait at subgroup barriers only.
// At the end each row block's O goes through ss and every thread writes its rows' o = O / l
// (0 where l = 0), times R_Vᵀ in the rotated modes (+ μ_V in OSCAR mode), fp32 as attn_prefill.
//
// A part of a split walk (tile.part = s + 1; runtime/kv/attn_tiles.h says when the host splits)
// walks only positions [tile.walk_begin, tile.n_visible), whose chunks are chunks of the whole
// walk, and writes its partials instead: for row r, query head h, item i =
// rows[row_begin + r].item_begin + s, partials[i][head] = (m, l, -, -, O[d]) with m the lazy
// maximum the p were taken against, O unnormalised in the kernel's output space (before R_Vᵀ);
// a row that saw nothing in the part gives m = -inf, l = 0, O = 0. attn_prefill_merge then
// combines each row's items and applies R_Vᵀ (+ μ_V) (common/attn_merge.glsl, decode's merge).
//
// Rounding (docs/accuracy.md): q·scale, K and V in fp16 (clamped to +-65504), p in fp16, fp32
// sums. attn_ref_attention with f16_inputs reproduces it.
//
// The host sizes the workgroup as RB times the largest subgroup size the device may use, so
// that every owner subgroup is full; where the device runs smaller subgroups the extra ones
// only load. Nothing assumes a subgroup size.
#include "common/kv_layout.h"
#include "common/kv_write.h"
#include "common/attn_prefill.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_GROUP) const uint GROUP = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 64;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;
layout(constant_id = KV_SPEC_GQA) const uint GQA = 4;
layout(constant_id = KV_SPEC_MODE) const uint MODE = KV_MODE_ROTATED;
layout(constant_id = KV_SPEC_ROT_PER_HEAD) const uint ROT_PER_HEAD = 0;
layout(constant_id = KV_SPEC_PF_ROWS) const uint ROWS = 16;   // ROWS x GQA a multiple of 16
layout(constant_id = KV_SPEC_PF_CHUNK) const uint CHUNK = 32; // a multiple of 16
layout(constant_id = KV_SPEC_CENTER_BLOCK) const uint CENTER_BLOCK = 0; // 0: no key-center table
const bool CENTERED = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u;
const bool ROTATED = MODE == KV_MODE_HADAMARD || MODE == KV_MODE_ROTATED;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint D4 = D / 4u;
const uint N_HEAD = N_KV * GQA;
const uint M = ROWS * GQA;   // pair p = row * GQA + head
const uint RB = M / 16u;     // row blocks
const uint BC = CHUNK;
const uint QS = D4 + 2u;     // row stride of sk, sv (and Q's staging) in f16vec4 (16-byte aligned, spread over banks)
const uint PS = BC / 4u + 2u; // row stride of sp in f16vec4
const uint SS = BC;          // row stride of ss in floats while it holds scores
const uint SS_FLOATS = M * SS > 16u * D ? M * SS : 16u * D; // scores, or one row block's O at the end
const uint CW = D / 16u;     // code words per INT2 row
const uint PWD = D / GROUP;  // param words per INT2 row
const uint INT2_PAGE_WORDS = 2u * N_KV * PAGE * (CW + PWD);
const uint K_PARAM_OFF = N_KV * PAGE * CW; // word offsets of the four INT2 page regions
const uint V_CODE_OFF = N_KV * PAGE * (CW + PWD);
const uint V_PARAM_OFF = N_KV * PAGE * (2u * CW + PWD);
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4u; // fp16 page (K and V) in uvec4 units
const uint F16_ROW_VEC4 = D / 8u;
const float TAU = 8.0;        // the lazy maximum's slack: p <= e^8 ~ 2981
const float NEG_INF = -1.0 / 0.0;

#include "common/attn_prefill_io.glsl"
// the partials of a split walk's parts: [n_items][n_head][d + 4] fp32 (kv_layout.h's
// KV_PARTIAL_FLOATS: m, l, two unused, O[d]); unread by whole walks
layout(std430, binding = 10) writeonly buffer Partials { float partials[]; };
const uint PF = D + 4u;

// ---- shared memory (ovk_attn_prefill_cm_shared_bytes in runtime/kv/attn_tiles.c) ----
shared f16vec4 sk[BC * QS];     // [CHUNK][d] K of the chunk, fp16; at the start, q·scale of row blocks
shared f16vec4 sv[BC * QS];     // [CHUNK][d] V of the chunk, fp16; at the start, as sk
shared f16vec4 sp[M * PS];      // [M][CHUNK] p, fp16
shared float ss[SS_FLOATS];     // [M][CHUNK] scores; a row block's accumulators to rescale; [16][d] O at the end
shared float s_m[M];            // the lazy maximum per pair
shared float s_l[M];            // the sum of p per pair
shared float s_a[M];            // this chunk's rescale factor per pair
shared uint s_nv[(ROWS + 3u) & ~3u]; // causal limit per tile row (0 past the tile's rows); whole 16 bytes,
                                // as every array here (the matrix loads need 16-byte aligned arrays)

#include "common/attn_prefill_cm_ops.glsl"

f16vec4 to_f16(vec4 v) { return f16vec4(clamp(v, vec4(-65504.0), vec4(65504.0))); }

// Loading a chunk goes in two halves, so that the next chunk's global reads are in flight while
// the current chunk is multiplied: FETCH reads a thread's part of the chunk's raw words into
// raw[RAW] (INT2: a uvec4 (K codes, K params, V codes, V params) per code word; fp16: the K and V
// uvec4 of 8 elements), STORE converts them into sk, sv (dequantized in fp32, key centers added,
// rounded to fp16; tokens [n, CHUNK) as zeros). Macros: raw's size is a specialization constant,
// which a function parameter cannot take.
const uint I_ITEMS = (BC * CW + WG - 1u) / WG;            // INT2 code words a thread a chunk
const uint F_ITEMS = (BC * F16_ROW_VEC4 + WG - 1u) / WG;  // fp16 uvec4 pairs a thread a chunk
const uint RAW = 2u * F_ITEMS > I_ITEMS ? 2u * F_ITEMS : I_ITEMS;

// INT2 index j0 + tok (seq, KV head kvh), or fp16 position p0 + tok
#define FETCH(IS_INT2, SEQ, P0, J0, N)                                                                   \
    if (IS_INT2) {                                                                                      \
        [[unroll]] for (uint it = 0u; it < I_ITEMS; it++) {                                             \
            uint i = t + it * WG, tok = i / CW, w = i % CW;                                             \
            raw[it] = uvec4(0u);                                                                        \
            if (i < BC * CW && tok < (N)) {                                                             \
                uint j = (J0) + tok;                                                                    \
                uint base = uint(int2_table[(SEQ) * pc.max_int2_pages + j / PAGE]) * INT2_PAGE_WORDS;   \
                uint row = kvh * PAGE + j % PAGE, g = w * 16u / GROUP;                                  \
                raw[it] = uvec4(int2_pool[base + row * CW + w], int2_pool[base + K_PARAM_OFF + row * PWD + g], \
                                int2_pool[base + V_CODE_OFF + row * CW + w], int2_pool[base + V_PARAM_OFF + row * PWD + g]); \
            }                                                                                           \
        }                                                                                               \
    } else {                                                                                            \
        [[unroll]] for (uint it = 0u; it < F_ITEMS; it++) {                                             \
            uint i = t + it * WG, tok = i / F16_ROW_VEC4, c = i % F16_ROW_VEC4, p = (P0) + tok;         \
            raw[2u * it] = raw[2u * it + 1u] = uvec4(0u);                                               \
            if (i < BC * F16_ROW_VEC4 && tok < (N)) {                                                   \
                uint krow = uint(f16_table[(SEQ) * pc.max_f16_pages + p / PAGE]) * F16_PAGE_VEC4 +      \
                            (kvh * PAGE + p % PAGE) * F16_ROW_VEC4;                                     \
                raw[2u * it] = f16_pool4[krow + c];                                                     \
                raw[2u * it + 1u] = f16_pool4[krow + F16_PAGE_VEC4 / 2u + c];                           \
            }                                                                                           \
        }                                                                                               \
    }

#define STORE(IS_INT2, P0, N)                                                                            \
    if (IS_INT2) {                                                                                      \
        [[unroll]] for (uint it = 0u; it < I_ITEMS; it++) {                                             \
            uint i = t + it * WG, tok = i / CW, w = i % CW;                                             \
            if (i >= BC * CW) continue;                                                                 \
            vec2 ksm = unpackHalf2x16(raw[it].y), vsm = unpackHalf2x16(raw[it].w); /* (scale, min) */  \
            [[unroll]] for (uint k = 0u; k < 4u; k++) {                                                 \
                vec4 kc = CENTERED && tok < (N) ? key_center4((P0) + tok, kvh, 4u * w + k) : vec4(0.0); \
                sk[tok * QS + 4u * w + k] = tok < (N) ? to_f16(dequant4(raw[it].x, 4u * k, ksm) + kc) : f16vec4(0.0); \
                sv[tok * QS + 4u * w + k] = tok < (N) ? to_f16(dequant4(raw[it].z, 4u * k, vsm)) : f16vec4(0.0); \
            }                                                                                           \
        }                                                                                               \
    } else {                                                                                            \
        [[unroll]] for (uint it = 0u; it < F_ITEMS; it++) {                                             \
            uint i = t + it * WG, tok = i / F16_ROW_VEC4, c = i % F16_ROW_VEC4;                         \
            if (i >= BC * F16_ROW_VEC4) continue;                                                       \
            uvec4 kw = raw[2u * it], vw = raw[2u * it + 1u];                                            \
            vec4 k0 = vec4(unpackHalf2x16(kw.x), unpackHalf2x16(kw.y)), k1 = vec4(unpackHalf2x16(kw.z), unpackHalf2x16(kw.w)); \
            if (CENTERED && tok < (N))                                                                  \
                k0 += key_center4((P0) + tok, kvh, 2u * c), k1 += key_center4((P0) + tok, kvh, 2u * c + 1u); \
            sk[tok * QS + 2u * c] = to_f16(k0);                                                         \
            sk[tok * QS + 2u * c + 1u] = to_f16(k1);                                                    \
            sv[tok * QS + 2u * c] = f16vec4(unpackFloat2x16(vw.x), unpackFloat2x16(vw.y));              \
            sv[tok * QS + 2u * c + 1u] = f16vec4(unpackFloat2x16(vw.z), unpackFloat2x16(vw.w));         \
        }                                                                                               \
    }

// The walk's ranges (fp16 sinks, INT2 middle, fp16 recent window; only the first in fp16 mode):
// range r covers positions [begin, end), cut to the tile's [walk_begin, n_visible) (a part of a
// split walk; walk_begin is a chunk's first position, so the part's chunks are the whole walk's).
void range_bounds(uint r, kv_attn_tile tl, out uint begin, out uint end)
{
    bool split = MODE != KV_MODE_FP16 && tl.flushed_end > tl.sink;
    uint n_vis = tl.n_visible, sink = tl.sink, fe = tl.flushed_end;
    begin = max(r == 0u ? 0u : r == 1u ? sink : max(fe, sink), tl.walk_begin);
    end = !split ? (r == 0u ? n_vis : 0u) : r == 0u ? min(sink, n_vis) : r == 1u ? min(fe, n_vis) : n_vis;
}

// The chunk after the one at (range, p0), or range = 3 when the walk is done.
void next_chunk(kv_attn_tile tl, inout uint range, inout uint p0)
{
    uint begin, end;
    range_bounds(range, tl, begin, end);
    p0 += BC;
    while (range < 3u && p0 >= end) {
        range++;
        if (range < 3u) range_bounds(range, tl, begin, end), p0 = begin;
    }
}

// The online softmax of row block rb's pairs over the chunk's scores in ss (tokens [0, n) at
// positions p0..): p into sp, m, l and the rescale factor into s_m, s_l, s_a. Returns whether
// some row of this lane's moved its maximum after it had seen a token (its O must be rescaled).
// H lanes share a row where the subgroup has 16 H lanes (H = 4, 2), each taking H's part of the
// chunk, their maxima and sums meeting through subgroup shuffles; else one lane a row, rows in
// turn. Each lane starts its part at its own token, so that the lanes' reads of ss (rows CHUNK
// floats apart) fall in different banks.
bool softmax_rows(uint rb, uint p0, uint n)
{
    uint H = gl_SubgroupSize >= 64u ? 4u : gl_SubgroupSize >= 32u ? 2u : 1u;
    uint TPL = BC / H, G = TPL / 4u; // tokens and groups of 4 tokens a lane
    bool moved = false;
    for (uint task = gl_SubgroupInvocationID; task < 16u * H; task += gl_SubgroupSize) { // H > 1: task = lane, once
        uint r = task % 16u, h = task / 16u, pr = rb * 16u + r;
        uint nv = s_nv[pr / GQA];
        uint nt = nv > p0 ? min(nv - p0, n) : 0u; // tokens this row sees in the chunk
        float mc = NEG_INF;
        for (uint u = 0u; u < TPL; u++) {
            uint tok = h * TPL + (u + r) % TPL;
            if (tok < nt) mc = max(mc, ss[pr * SS + tok]);
        }
        if (H > 1u) mc = max(mc, subgroupShuffleXor(mc, 16u));
        if (H > 2u) mc = max(mc, subgroupShuffleXor(mc, 32u));
        float m = s_m[pr], alpha = 1.0;
        if (m == NEG_INF) m = mc; // nothing summed yet: no rescale
        else if (mc > m + TAU) {
            alpha = exp(m - mc);
            m = mc;
            moved = true;
        }
        float l = 0.0;
        for (uint u = 0u; u < G; u++) {
            uint t4 = h * G + (u + r) % G;
            vec4 p;
            [[unroll]] for (uint k = 0u; k < 4u; k++) {
                uint tok = 4u * t4 + k;
                p[k] = tok < nt ? exp(ss[pr * SS + tok] - m) : 0.0;
            }
            f16vec4 ph = to_f16(p);
            sp[pr * PS + t4] = ph;
            l += float(ph.x) + float(ph.y) + float(ph.z) + float(ph.w);
        }
        if (H > 1u) l += subgroupShuffleXor(l, 16u);
        if (H > 2u) l += subgroupShuffleXor(l, 32u);
        if (h == 0u) s_m[pr] = m, s_l[pr] = s_l[pr] * alpha + l, s_a[pr] = alpha;
    }
    return moved;
}

void main()
{
    uint tile_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (tile_id >= pc.n_tiles) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_tile tl = tiles[tile_id];
    uint rb = gl_SubgroupID;
    bool own = rb < RB;

    for (uint r = t; r < ((ROWS + 3u) & ~3u); r += WG) s_nv[r] = r < tl.n_rows ? rows[tl.row_begin + r].n_visible : 0u;
    for (uint pr = t; pr < M; pr += WG) s_m[pr] = NEG_INF, s_l[pr] = 0.0;

    // Q = q·scale (fp16) into each owner's registers: sk and sv each hold BC / 16 row blocks of
    // [16][d], so the row blocks are staged QB at a time (rows past the tile as zeros)
    const uint QB = 2u * (BC / 16u);
    APC_QA qa[D / 16u];
    for (uint b0 = 0u; b0 < RB; b0 += QB) {
        barrier(); // the previous round's loads are done
        for (uint i = t; i < QB * 16u * D4; i += WG) {
            uint sb = i / (16u * D4), e = i % (16u * D4), pr = (b0 + sb) * 16u + e / D4, c = e % D4;
            uint r = pr / GQA, h = pr % GQA, slot = (sb % (BC / 16u)) * 16u * QS + (e / D4) * QS + c;
            f16vec4 v = pr < M && r < tl.n_rows ? to_f16(q4[((tl.row_begin + r) * N_HEAD + kvh * GQA + h) * D4 + c] * pc.scale)
                                                : f16vec4(0.0);
            if (sb < BC / 16u) sk[slot] = v;
            else sv[slot] = v;
        }
        barrier();
        if (own && rb >= b0 && rb < b0 + QB) { // uniform over the subgroup
            uint sb = rb - b0, off = (sb % (BC / 16u)) * 16u * QS;
            if (sb < BC / 16u) APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_QA_LOAD(qa[j], sk, off + 4u * j);
            else APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_QA_LOAD(qa[j], sv, off + 4u * j);
        }
    }

    APC_ACC o[D / 16u];
    APC_UNROLL for (uint j = 0u; j < D / 16u; j++) o[j] = APC_ZERO;
    // the walk, a chunk at a time (the chunk's body is here, not in a function: the accumulators'
    // array has a specialization-constant size, which a function parameter cannot take)
    bool split = MODE != KV_MODE_FP16 && tl.flushed_end > tl.sink;
    uint range = 0u, p0, begin, end;
    range_bounds(0u, tl, begin, end);
    p0 = begin - BC; // the first chunk of the first non-empty range (p0 may wrap back to begin)
    next_chunk(tl, range, p0);
    uvec4 raw[RAW];
    if (range < 3u) {
        range_bounds(range, tl, begin, end);
        FETCH(split && range == 1u, tl.seq, p0, p0 - tl.sink, min(end - p0, BC))
    }
    while (range < 3u) {
        range_bounds(range, tl, begin, end);
        bool is_int2 = split && range == 1u;
        uint n = min(end - p0, BC), cur_p0 = p0;
        barrier(); // the previous chunk's readers of sk, sv are done (the first: Q's loads; s_nv, s_m, s_l are published)
        STORE(is_int2, cur_p0, n)
        barrier();
        next_chunk(tl, range, p0);
        if (range < 3u) { // the next chunk's reads, in flight during this chunk's products
            uint nb, ne;
            range_bounds(range, tl, nb, ne);
            FETCH(split && range == 1u, tl.seq, p0, p0 - tl.sink, min(ne - p0, BC))
        }
        if (own) { // uniform over the subgroup
            APC_ACC s[BC / 16u];
            APC_UNROLL for (uint j = 0u; j < BC / 16u; j++) s[j] = APC_ZERO;
            APC_UNROLL for (uint kk = 0u; kk < D4; kk += 4u)
                APC_UNROLL for (uint j = 0u; j < BC / 16u; j++) APC_QK(s[j], qa[kk / 4u], j * 16u * QS + kk);
            APC_UNROLL for (uint j = 0u; j < BC / 16u; j++) APC_STORE(s[j], rb * 16u * SS + j * 16u, SS);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            bool moved = subgroupAny(softmax_rows(rb, cur_p0, n));
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            if (moved) { // O *= alpha per row, through this row block's rows of ss (its scores are used)
                APC_UNROLL for (uint j = 0u; j < D / 16u; j++) {
                    APC_STORE(o[j], rb * 16u * SS, SS);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint e = gl_SubgroupInvocationID; e < 256u; e += gl_SubgroupSize)
                        ss[(rb * 16u + e / 16u) * SS + e % 16u] *= s_a[rb * 16u + e / 16u];
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    APC_LOAD(o[j], rb * 16u * SS, SS);
                    subgroupBarrier(); // read before the next matrix overwrites the slot
                }
            }
            APC_UNROLL for (uint kt = 0u; kt < BC; kt += 16u)
                APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_PV(o[j], rb * 16u * PS + kt / 4u, kt * QS + 4u * j);
        }
    }

    // out = o·R_Vᵀ (+ μ_V), o = O / l, a row block at a time through ss as [16][d]; a part of a
    // split walk writes its partials (m, l, O) instead
    for (uint b = 0u; b < RB; b++) {
        barrier(); // every reader of ss is done
        if (own && rb == b) APC_UNROLL for (uint j = 0u; j < D / 16u; j++) APC_STORE(o[j], 16u * j, D);
        barrier();
        for (uint i = t; i < 16u * D; i += WG) {
            uint r = i / D, j = i % D, pr = b * 16u + r, row = pr / GQA, h = pr % GQA;
            if (row >= tl.n_rows) continue;
            if (tl.part != 0u) { // uniform over the workgroup
                uint pb = ((rows[tl.row_begin + row].item_begin + tl.part - 1u) * N_HEAD + kvh * GQA + h) * PF;
                partials[pb + 4u + j] = ss[r * D + j];
                if (j == 0u) partials[pb] = s_m[pr], partials[pb + 1u] = s_l[pr];
                continue;
            }
            float l = s_l[pr], inv = l > 0.0 ? 1.0 / l : 0.0, v;
            if (ROTATED) {
                uint rbase = (ROT_PER_HEAD != 0u ? kvh : 0u) * D * D4 + j * D4;
                v = 0.0;
                for (uint i4 = 0u; i4 < D4; i4++) {
                    vec4 o4 = vec4(ss[r * D + 4u * i4], ss[r * D + 4u * i4 + 1u], ss[r * D + 4u * i4 + 2u], ss[r * D + 4u * i4 + 3u]);
                    v += dot(rot_v[rbase + i4], o4 * inv);
                }
                if (MODE == KV_MODE_ROTATED) v += means[(N_KV + kvh) * D + j];
            } else
                v = ss[r * D + j] * inv;
            out_[((tl.row_begin + row) * N_HEAD + kvh * GQA + h) * D + j] = v;
        }
    }
}
