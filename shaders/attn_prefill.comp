#version 450
// Query-tiled prefill attention over the paged KV cache (flash-attention style), fp32
// arithmetic. One workgroup per (tile, KV head): a tile (kv_attn_tile, common/attn_prefill.h)
// is up to ROWS query rows of one sequence, each with its own causal limit (row r sees
// positions [0, n_visible_r)). The workgroup serves PAIRS = ROWS x GQA (row, query head) pairs.
//
// It walks the positions [0, tile.n_visible) in three ranges (fp16 sinks, INT2 middle, fp16
// recent window; where a position lives is kv_layout.h's rule) and each range in chunks of up
// to CHUNK tokens. Per chunk, with four barriers:
//   load:    the chunk's K and V rows of this KV head, read from the pools ONCE and dequantized
//            to fp32 in shared memory (INT2: x = min + code * scale, as int2_quant.h); with a
//            key-center table (CENTER_BLOCK = B > 0) each K row gets its block's center c_b·R_K
//            back, which kv_append took out
//   scores:  s[pair][token] = q_pair . k_token for every pair (q scaled by pc.scale, in shared)
//   softmax: one thread per pair: tokens at or past the pair's causal limit are masked; the
//            running max m moves to include the chunk, alpha = exp(m_old - m_new) rescales what
//            was summed so far, p = exp(s - m) replaces s, l = l * alpha + sum p
//   values:  o[pair][e] = o * alpha + sum_token p * v[token][e]; thread t owns the 4 elements
//            e = 4 (t % (d/4)) .. +3 of the pairs t / (d/4), t / (d/4) + WG / (d/4), ...:
//            o[PAIRS][d] lives in registers, PAIRS * d / WG floats per thread
// At the end o / l (0 for a row that sees nothing) goes to shared memory, is rotated back
// (o·R_Vᵀ in the rotated modes, R_V of the layer or of the KV head, as attn_decode's merge) and
// written to out[row][head][d] for the tile's rows.
//
// Shared memory: ATTN_PF_SHARED_FLOATS(ROWS, CHUNK, GQA, d) floats; the host picks ROWS and
// CHUNK with ovk_attn_prefill_shape() (attn_items.h). Nothing assumes a subgroup size; loops
// per invocation are bounded by the chunk count (lavapipe stops a loop after 65535 iterations).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/kv_write.h"
#include "common/attn_prefill.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_GROUP) const uint GROUP = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 64;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;
layout(constant_id = KV_SPEC_GQA) const uint GQA = 1;
layout(constant_id = KV_SPEC_MODE) const uint MODE = KV_MODE_ROTATED;
layout(constant_id = KV_SPEC_ROT_PER_HEAD) const uint ROT_PER_HEAD = 0;
layout(constant_id = KV_SPEC_PF_ROWS) const uint ROWS = 16;
layout(constant_id = KV_SPEC_PF_CHUNK) const uint CHUNK = 16;
layout(constant_id = KV_SPEC_CENTER_BLOCK) const uint CENTER_BLOCK = 0; // 0: no key-center table
const bool CENTERED = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint D4 = D / 4;
const uint N_HEAD = N_KV * GQA;
const uint PAIRS = ROWS * GQA;                  // pair index = row * GQA + head
const uint CW = D / 16;                         // code words per INT2 row
const uint PWD = D / GROUP;                     // param words per INT2 row
const uint INT2_PAGE_WORDS = 2 * N_KV * PAGE * (CW + PWD);
const uint K_PARAM_OFF = N_KV * PAGE * CW;      // word offsets of the four INT2 page regions
const uint V_CODE_OFF = N_KV * PAGE * (CW + PWD);
const uint V_PARAM_OFF = N_KV * PAGE * (2 * CW + PWD);
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4; // fp16 page (K and V) in uvec4 units
const uint F16_ROW_VEC4 = D / 8;
const uint KS = D4 + 1;                         // K row stride in shared (vec4), padded
const uint NPG = WG / D4;                       // value phase: pair groups (WG % (d/4) == 0)
const uint PT = (PAIRS + NPG - 1) / NPG;        // pairs per thread in the value phase
const bool ROTATED = MODE == KV_MODE_HADAMARD || MODE == KV_MODE_ROTATED;

#include "common/attn_prefill_io.glsl"

// ---- shared memory (ATTN_PF_SHARED_FLOATS floats in all) ----
shared vec4 sh_q[PAIRS * D4];      // [PAIRS][d] scaled q; at the end o / l
shared vec4 sh_k[CHUNK * KS];      // [CHUNK][d + 4] K of the chunk
shared vec4 sh_v[CHUNK * D4];      // [CHUNK][d] V of the chunk
shared float sh_s[PAIRS * CHUNK];  // [PAIRS][CHUNK] scores, then p
shared float sh_m[PAIRS];          // running max per pair
shared float sh_l[PAIRS];          // running sum per pair
shared float sh_a[PAIRS];          // this chunk's rescale factor per pair
shared uint sh_nv[ROWS];           // causal limit per tile row (0 past the tile's rows)

const float NEG_INF = -1.0 / 0.0;

// Loads tokens [0, n) of a chunk (positions p0 + tok) into sh_k / sh_v. INT2: indices j0 + tok;
// fp16: positions p0 + tok.
void load_int2(uint seq, uint p0, uint j0, uint n, uint kvh)
{
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < n * CW; i += WG) {
        uint tok = i / CW, w = i % CW, j = j0 + tok;
        uint base = uint(int2_table[seq * pc.max_int2_pages + j / PAGE]) * INT2_PAGE_WORDS;
        uint row = kvh * PAGE + j % PAGE;
        uint g = w * 16 / GROUP;
        uint kw = int2_pool[base + row * CW + w];
        vec2 ksm = unpackHalf2x16(int2_pool[base + K_PARAM_OFF + row * PWD + g]); // x = scale, y = min
        uint vw = int2_pool[base + V_CODE_OFF + row * CW + w];
        vec2 vsm = unpackHalf2x16(int2_pool[base + V_PARAM_OFF + row * PWD + g]);
        [[unroll]] for (uint k = 0; k < 4; k++) {
            vec4 kc = CENTERED ? key_center4(p0 + tok, kvh, 4 * w + k) : vec4(0.0);
            sh_k[tok * KS + 4 * w + k] = dequant4(kw, 4 * k, ksm) + kc;
            sh_v[tok * D4 + 4 * w + k] = dequant4(vw, 4 * k, vsm);
        }
    }
}

void load_f16(uint seq, uint p0, uint n, uint kvh)
{
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < n * F16_ROW_VEC4; i += WG) {
        uint tok = i / F16_ROW_VEC4, c = i % F16_ROW_VEC4, p = p0 + tok;
        uint krow = uint(f16_table[seq * pc.max_f16_pages + p / PAGE]) * F16_PAGE_VEC4 + (kvh * PAGE + p % PAGE) * F16_ROW_VEC4;
        uvec4 kw = f16_pool4[krow + c];
        uvec4 vw = f16_pool4[krow + F16_PAGE_VEC4 / 2 + c];
        vec4 k0 = vec4(unpackHalf2x16(kw.x), unpackHalf2x16(kw.y)), k1 = vec4(unpackHalf2x16(kw.z), unpackHalf2x16(kw.w));
        if (CENTERED) k0 += key_center4(p, kvh, 2 * c), k1 += key_center4(p, kvh, 2 * c + 1);
        sh_k[tok * KS + 2 * c] = k0;
        sh_k[tok * KS + 2 * c + 1] = k1;
        sh_v[tok * D4 + 2 * c] = vec4(unpackHalf2x16(vw.x), unpackHalf2x16(vw.y));
        sh_v[tok * D4 + 2 * c + 1] = vec4(unpackHalf2x16(vw.z), unpackHalf2x16(vw.w));
    }
}

// One chunk of n tokens at positions p0 .. p0 + n - 1, loaded from INT2 indices j0.. or fp16
// positions p0.. (is_int2). o: this thread's value accumulators (see the header comment).
void chunk(uint seq, bool is_int2, uint p0, uint j0, uint n, uint kvh, inout vec4 o[PT])
{
    uint t = gl_LocalInvocationID.x;
    barrier(); // the previous chunk's readers of sh_k, sh_v, sh_s are done
    if (is_int2) load_int2(seq, p0, j0, n, kvh);
    else load_f16(seq, p0, n, kvh);
    barrier();
    // scores
    for (uint i = t; i < PAIRS * CHUNK; i += WG) {
        uint pr = i / CHUNK, tok = i % CHUNK;
        if (tok >= n) continue;
        float s = 0.0;
        for (uint i4 = 0; i4 < D4; i4++) s += dot(sh_q[pr * D4 + i4], sh_k[tok * KS + i4]);
        sh_s[i] = s;
    }
    barrier();
    // online softmax, one thread per pair
    for (uint pr = t; pr < PAIRS; pr += WG) {
        uint nv = sh_nv[pr / GQA];
        uint nt = nv > p0 ? min(nv - p0, n) : 0; // tokens this row sees in the chunk
        float m_old = sh_m[pr], mc = NEG_INF;
        for (uint tok = 0; tok < nt; tok++) mc = max(mc, sh_s[pr * CHUNK + tok]);
        float m_new = max(m_old, mc);
        float alpha = 1.0, l = sh_l[pr];
        if (m_new != NEG_INF) {
            alpha = exp(m_old - m_new); // 0 on the first chunk a row sees (m_old = -inf)
            l *= alpha;
            for (uint tok = 0; tok < n; tok++) {
                float p = tok < nt ? exp(sh_s[pr * CHUNK + tok] - m_new) : 0.0;
                sh_s[pr * CHUNK + tok] = p;
                l += p;
            }
        } else
            for (uint tok = 0; tok < n; tok++) sh_s[pr * CHUNK + tok] = 0.0;
        sh_m[pr] = m_new, sh_l[pr] = l, sh_a[pr] = alpha;
    }
    barrier();
    // values
    uint c4 = t % D4, pg = t / D4;
    if (pg < NPG) {
        [[unroll]] for (uint k = 0; k < PT; k++) {
            uint pr = pg + k * NPG;
            if (pr < PAIRS) o[k] *= sh_a[pr];
        }
        for (uint tok = 0; tok < n; tok++) {
            vec4 v = sh_v[tok * D4 + c4];
            [[unroll]] for (uint k = 0; k < PT; k++) {
                uint pr = pg + k * NPG;
                if (pr < PAIRS) o[k] += sh_s[pr * CHUNK + tok] * v;
            }
        }
    }
}

// Positions [begin, end) of one storage kind, in chunks.
void walk(uint seq, bool is_int2, uint begin, uint end, uint sink, uint kvh, inout vec4 o[PT])
{
    for (uint p0 = begin; p0 < end; p0 += CHUNK) chunk(seq, is_int2, p0, p0 - (is_int2 ? sink : 0u), min(end - p0, CHUNK), kvh, o);
}

void main()
{
    uint tile_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (tile_id >= pc.n_tiles) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_tile tl = tiles[tile_id];

    for (uint i = t; i < PAIRS * D4; i += WG) {
        uint r = i / (GQA * D4), rest = i % (GQA * D4); // rest = head * D4 + i4
        sh_q[i] = r < tl.n_rows ? q4[((tl.row_begin + r) * N_HEAD + kvh * GQA) * D4 + rest] * pc.scale : vec4(0.0);
    }
    for (uint r = t; r < ROWS; r += WG) sh_nv[r] = r < tl.n_rows ? rows[tl.row_begin + r].n_visible : 0u;
    for (uint pr = t; pr < PAIRS; pr += WG) sh_m[pr] = NEG_INF, sh_l[pr] = 0.0;
    // (the first chunk's barrier publishes these)

    vec4 o[PT];
    [[unroll]] for (uint k = 0; k < PT; k++) o[k] = vec4(0.0);
    uint n = tl.n_visible, sink = tl.sink, fe = tl.flushed_end;
    if (MODE == KV_MODE_FP16 || fe <= sink) walk(tl.seq, false, 0, n, 0, kvh, o);
    else {
        walk(tl.seq, false, 0, min(sink, n), 0, kvh, o);
        walk(tl.seq, true, sink, min(fe, n), sink, kvh, o);
        walk(tl.seq, false, max(fe, sink), n, 0, kvh, o);
    }

    // o / l into sh_q (every reader of sh_q is done after this barrier)
    barrier();
    uint c4 = t % D4, pg = t / D4;
    if (pg < NPG)
        [[unroll]] for (uint k = 0; k < PT; k++) {
            uint pr = pg + k * NPG;
            if (pr < PAIRS) {
                float l = sh_l[pr];
                sh_q[pr * D4 + c4] = l > 0.0 ? o[k] / l : vec4(0.0);
            }
        }
    barrier();
    // out = o·R_Vᵀ: out[j] = dot(R[j], o) (rotated modes; + μ_V[j] in OSCAR mode), else o
    uint n_out = tl.n_rows * GQA * D;
    for (uint i = t; i < n_out; i += WG) {
        uint pr = i / D, j = i % D, r = pr / GQA, h = pr % GQA;
        float v;
        if (ROTATED) {
            uint rbase = (ROT_PER_HEAD != 0 ? kvh : 0) * D * D4 + j * D4;
            v = 0.0;
            for (uint i4 = 0; i4 < D4; i4++) v += dot(rot_v[rbase + i4], sh_q[pr * D4 + i4]);
            if (MODE == KV_MODE_ROTATED) v += means[(N_KV + kvh) * D + j];
        } else {
            vec4 o4 = sh_q[pr * D4 + j / 4];
            v = o4[j % 4];
        }
        out_[((tl.row_begin + r) * N_HEAD + kvh * GQA + h) * D + j] = v;
    }
}
