// Decode attention over the paged KV cache, streaming: the body of shaders/attn_decode.comp
// (fp32 arithmetic) and shaders/attn_decode_f16.comp (ATTN_F16 = 1: INT2 dot products and
// value sums in packed fp16, q rounded to fp16; fp32 accumulation across tiles).
//
// One workgroup per (work item, KV head). An item (kv_attn_item) is a range of one row's
// tokens in one storage kind, with the row's sequence and its first page ids. The workgroup's
// subgroups are independent: each walks its own tiles of the item (a tile is a chunk of one
// page, see attn_tiles_int2.glsl and attn_tiles_f16.glsl) with its own online softmax (running
// max m, sum l, unnormalised output o for every query head of the KV head), and no workgroup
// barrier inside the loop. Within a tile a subgroup loads everything first (the next tile's
// INT2 keys, scales and page id are loaded before the current tile's math), scores its tokens,
// takes the tile's max with subgroupMax, and accumulates the values; codes are unpacked once for
// all the GQA heads. Only the number of lanes, gl_SubgroupSize, decides how a tile is shared
// out: nothing assumes a subgroup size (SG_MIN only bounds the per-lane arrays).
//
// After the loop the subgroups' states meet in shared memory (a few barriers) and the item's
// partial (m, l, o[d]) of every query head goes to partials [n_items][n_head][d + 4].
// Merge (the last workgroup of a (row, KV head), attn_merge.glsl): every workgroup counts itself
// in counters[row][kvh] after writing its partials; the one that completes the count combines
// the row's partials exactly, applies R_Vᵀ in the rotated modes, writes out[row][head][d] and
// resets the counter. One dispatch does split-K attention and its merge.
//
// INT2 algebra: a K row is stored as codes c_e in 0..3 with fp16 (scale, min) per group g, so
// q·k = sum_g scale_g * (q·c)_g + min_g * (sum_{e in g} q_e): the inner loop is code conversion
// and multiply-adds only, the group sums of q are computed once per item. Values likewise:
// sum_k p_k v_k = sum_k (p_k scale_k) c_k + sum_k p_k min_k, the weights p_k scale_k and the min
// term made once per token (with one V group a row) by the lane that scored it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common/kv_layout.h"
#include "common/attn_push.h"
#include "common/kv_write.h"

#define ATTN_MERGE_Q8 // the merge may write out's int8 blocks too (pc.q8_out)
#include "common/attn_decode_decl.glsl"

layout(constant_id = KV_SPEC_ATTN_SG_MIN) const uint SG_MIN = 32;
layout(constant_id = KV_SPEC_ATTN_KU) const uint KU = 2;
layout(constant_id = KV_SPEC_ATTN_VE) const uint VE = 8;
layout(constant_id = KV_SPEC_ATTN_FKU) const uint FKU = 4;
layout(constant_id = KV_SPEC_ATTN_PREFETCH) const uint PREFETCH = 3;

const uint CW4 = (CW + 3) / 4;                  // code words per INT2 row in 16-byte loads
const bool K_VEC4 = (INT2_PAGE_WORDS % 4) == 0 && (CW % 4) == 0; // K code rows 16-byte aligned
const uint NS = D / VE;                         // INT2 value slots of a row (VE elements each)
const uint SP_MAX = NS > SG_MIN ? NS / SG_MIN : 1; // value slots a lane holds (subgroups smaller than NS)
const uint VT_MAX = KU * NS;                    // value tokens a lane takes per tile (at most)
const uint FL = D / 8;                          // fp16 tiles: lanes of a row (8 elements each)
const uint FC_MAX = FL > SG_MIN ? FL / SG_MIN : 1; // row chunks a lane holds (subgroups smaller than FL)
const uint NSG_MAX = WG / SG_MIN;
const bool PRE_W = PWD == 1u;                   // one V group a row: weights made once per token
const uint CB_MAX = ATTN_CB_MAX(PAGE, KU);
const uint X_FLOATS = ATTN_X_FLOATS(WG, SG_MIN, D, GQA, KU, VE);
const uint VB = 8;                              // f16 value sums: tokens summed in fp16 before fp32
const bool K_NEXT = (PREFETCH & 1u) != 0u;      // the next tile's keys loaded before this tile's math
const uint V_PRE = (PREFETCH / 2u) % 2u * (VT_MAX * SP_MAX <= 32u ? 1u : 0u);
const bool V_PRELOAD = V_PRE != 0u;             // a tile's value codes loaded before its key math
const uint VL = V_PRE * VT_MAX + (1u - V_PRE) * VB; // value tokens loaded at once

// ---- shared memory (ATTN_SHARED_FLOATS floats in all) ----
shared vec4 sh_q[ATTN_Q_FLOATS(GQA, D, ATTN_F16, CENTER_BLOCK) / 4]; // [GQA][d/4] scaled q (fp32)
shared uvec4 sh_q2[ATTN_Q2_WORDS(GQA, D, ATTN_F16) / 4];             // [GQA][d/8] scaled q, fp16 pairs (e, e + 8)
shared float sh_qs[GQA * PWD];        // [GQA][d/G] group sums of q (INT2)
shared float sh_x[X_FLOATS];          // tile weights, then value sums, then the merge's (see attn_push.h)
shared float sh_cb[ATTN_CB_FLOATS(WG, SG_MIN, PAGE, GQA, KU, CENTER_BLOCK)]; // [subgroup][block][GQA] q·(c_b·R_K)
shared float sh_ms[NSG_MAX * GQA];    // [subgroup][GQA] running max m
shared float sh_ls[NSG_MAX * GQA];    // [subgroup][GQA] sum l
shared float sh_bs[NSG_MAX * GQA];    // [subgroup][GQA] value offset sum_k p_k min_k (one V group a row)
shared float sh_red[GQA * WG];        // [GQA][WG] merge: per-thread maxima or sums
shared float sh_part[GQA * 16];       // [GQA][16] merge: first-level reduction results
shared bool sh_last;                  // this workgroup completes its (row, KV head)

const float NEG_INF = -1.0 / 0.0;

#include "common/attn_tiles_int2.glsl"
#include "common/attn_tiles_f16.glsl"
#define OUT_SCRATCH sh_x
#include "common/attn_merge.glsl"

// ---- the subgroups' states into the item's partial ----
// Every subgroup has m (uniform), l, the value offset b (per lane) and its lanes' value sums.
// The partial of head h: M = max m_s, L = sum l_s e^(m_s - M), o = sum_s e^(m_s - M) (sums_s + b_s).

// Each subgroup's m, l and b into shared memory; then a barrier (also: every subgroup is done
// with its tiles, so sh_x is free).
void partial_begin(float m_run[GQA], float l[GQA], float b[GQA])
{
    uint sg = gl_SubgroupID;
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        float ls = subgroupAdd(l[h]), bs = subgroupAdd(b[h]);
        if (subgroupElect()) {
            sh_ms[sg * GQA + h] = m_run[h];
            sh_ls[sg * GQA + h] = ls;
            sh_bs[sg * GQA + h] = bs;
        }
    }
    barrier();
}

float partial_max(uint h)
{
    float mx = NEG_INF;
    for (uint s = 0; s < gl_NumSubgroups; s++) mx = max(mx, sh_ms[s * GQA + h]);
    return mx;
}

// Floats of a subgroup's region of sh_x (its value sums [rows][d]).
uint partial_region() { return max(gl_SubgroupSize * max(VE, 8u), D); }

// Head h's partial from the subgroups' value sums in sh_x (rows of d per subgroup, written
// and a barrier passed), then a barrier.
void partial_head(uint item_id, uint kvh, uint h, float mx, uint rows)
{
    uint t = gl_LocalInvocationID.x, nsg = gl_NumSubgroups, rs = partial_region();
    uint pb = ((item_id * N_HEAD + kvh * GQA) + h) * PF;
    for (uint j = t; j < D; j += WG) {
        float v = 0.0;
        for (uint s = 0; s < nsg; s++) {
            float ws = sh_ms[s * GQA + h] == NEG_INF ? 0.0 : exp(sh_ms[s * GQA + h] - mx);
            float r = ws * sh_bs[s * GQA + h];
            for (uint k = 0; k < rows; k++) r += sh_x[s * rs + k * D + j];
            v += r;
        }
        partials[pb + 4 + j] = v;
    }
    if (t == 0) {
        float ls = 0.0;
        for (uint s = 0; s < nsg; s++)
            ls += sh_ms[s * GQA + h] == NEG_INF ? 0.0 : sh_ls[s * GQA + h] * exp(sh_ms[s * GQA + h] - mx);
        partials[pb] = mx;
        partials[pb + 1] = ls;
    }
    barrier();
}

// An INT2 item: q, the subgroups' tiles, the partial. Its accumulators live here only.
void int2_item(uint item_id, kv_attn_item it, uint kvh)
{
    float m_run[GQA], l[GQA], b[GQA]; // running max (uniform in the subgroup), this lane's sum of p and value offset
    float acc[SP_MAX][GQA][VE];       // this lane's value sums (attn_tiles_int2.glsl)
    float acc_b[SP_MAX][GQA];         // with several V groups a row: this lane's min terms
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        m_run[h] = NEG_INF, l[h] = 0.0, b[h] = 0.0;
        [[unroll]] for (uint s = 0; s < SP_MAX; s++) {
            acc_b[s][h] = 0.0;
            [[unroll]] for (uint j = 0; j < VE; j++) acc[s][h][j] = 0.0;
        }
    }
    int2_load_q(it.row, kvh);
    barrier();
    int2_tiles(it, kvh, m_run, l, b, acc, acc_b);
    partial_begin(m_run, l, b);
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        float mx = partial_max(h);
        int2_store_sums(h, m_run[h] == NEG_INF ? 0.0 : exp(m_run[h] - mx), gl_SubgroupID * partial_region(), acc, acc_b);
        barrier();
        partial_head(item_id, kvh, h, mx, max(gl_SubgroupSize / NS, 1u));
    }
}

// An fp16 item: the subgroups' tiles, the partial.
void f16_item(uint item_id, kv_attn_item it, uint kvh)
{
    float m_run[GQA], l[GQA], b[GQA];
    float acc[FC_MAX][GQA][8]; // this lane's value sums (attn_tiles_f16.glsl)
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        m_run[h] = NEG_INF, l[h] = 0.0, b[h] = 0.0;
        [[unroll]] for (uint c = 0; c < FC_MAX; c++)
            [[unroll]] for (uint j = 0; j < 8; j++) acc[c][h][j] = 0.0;
    }
    f16_tiles(it, kvh, m_run, l, acc);
    partial_begin(m_run, l, b);
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        float mx = partial_max(h);
        f16_store_sums(h, m_run[h] == NEG_INF ? 0.0 : exp(m_run[h] - mx), gl_SubgroupID * partial_region(), acc);
        barrier();
        partial_head(item_id, kvh, h, mx, max(gl_SubgroupSize / FL, 1u));
    }
}

void main()
{
    uint item_id = attn_item_id();
    if (item_id >= pc.n_items) return; // uniform over the workgroup
    uint kvh = gl_WorkGroupID.y;
    kv_attn_item it = items[item_id];
    if (MODE != KV_MODE_FP16 && it.kind == KV_ITEM_INT2) int2_item(item_id, it, kvh);
    else f16_item(item_id, it, kvh);

    // count this workgroup in; the last of its (row, KV head) merges
    count_and_merge(it.row, kvh);
}
