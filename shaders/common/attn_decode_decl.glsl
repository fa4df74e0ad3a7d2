// Declarations shared by the decode-attention kernels (common/attn_decode_body.glsl, the
// streaming one, and common/attn_chunked_body.glsl): the cache's shape as specialization
// constants, the INT2 and fp16 page geometry, and the bindings of one dispatch. Include after
// kv_layout.h and the push-constant struct attn_decode_push. ATTN_F16 (default 0) picks the
// packed-fp16 value sums; ATTN_MERGE_Q8 declares the merge's int8 output (common/attn_merge.glsl).

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
layout(constant_id = KV_SPEC_ROT_PER_HEAD) const uint ROT_PER_HEAD = 0;
layout(constant_id = KV_SPEC_CENTER_BLOCK) const uint CENTER_BLOCK = 0; // B >= 16, or 0: no key-center table
layout(constant_id = KV_SPEC_SINK) const uint SINK = 64;               // INT2 index j is position SINK + j

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint N_HEAD = N_KV * GQA;
const uint CW = D / 16;                         // code words per INT2 row
const uint PWD = D / GROUP;                     // param words per INT2 row
const uint WPG = GROUP / 16;                    // code words per group
const uint INT2_PAGE_WORDS = 2 * N_KV * PAGE * (CW + PWD);
const uint K_PARAM_OFF = N_KV * PAGE * CW;      // word offsets of the four INT2 page regions
const uint V_CODE_OFF = N_KV * PAGE * (CW + PWD);
const uint V_PARAM_OFF = N_KV * PAGE * (2 * CW + PWD);
const uint F16_PAGE_VEC4 = N_KV * PAGE * D / 4; // fp16 page (K and V) in uvec4 units
const uint F16_ROW_VEC4 = D / 8;
const uint PF = D + 4;                          // floats per partial (kv_layout.h)
const uint D4 = D / 4;
const uint LANES_M = WG / D4;                   // merge: item lanes (WG % (d/4) == 0)
const bool CENTERED = MODE == KV_MODE_ROTATED && CENTER_BLOCK != 0u;
const bool ROTATED = MODE == KV_MODE_HADAMARD || MODE == KV_MODE_ROTATED;

// ---- bindings ----
layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };              // [n_rows][n_head][d] fp32, rotated
layout(std430, binding = 1) readonly buffer Rows { kv_attn_row rows[]; };  // [n_rows]
layout(std430, binding = 2) readonly buffer Items { kv_attn_item items[]; }; // [n_items]
layout(std430, binding = 3) readonly buffer Int2Pool { uint int2_pool[]; };  // [pages][INT2 page words]
layout(std430, binding = 3) readonly buffer Int2Pool4 { uvec4 int2_pool4[]; }; // same buffer, 16-byte view
layout(std430, binding = 4) readonly buffer F16Pool4 { uvec4 f16_pool4[]; }; // [pages][fp16 page words / 4]
layout(std430, binding = 5) readonly buffer Int2Table { int int2_table[]; }; // [n_seq][max_int2_pages]
layout(std430, binding = 6) readonly buffer F16Table { int f16_table[]; };   // [n_seq][max_f16_pages]
layout(std430, binding = 7) coherent buffer Partials { float partials[]; }; // [n_items][n_head][d + 4]
layout(std430, binding = 7) coherent buffer Partials4 { vec4 partials4[]; }; // same buffer, 16-byte view
layout(std430, binding = 8) readonly buffer RotV { vec4 rot_v[]; };          // [n_rot][d][d/4] R_V of the layer
layout(std430, binding = 9) writeonly buffer Out { float out_[]; };          // [n_rows][n_head][d] fp32
layout(std430, binding = 10) coherent buffer Counters { uint counters[]; };  // [n_rows][N_KV], 0 between calls
layout(std430, binding = 11) readonly buffer Means { float means[]; };       // [K,V][N_KV][d] centering vectors μ of the layer,
layout(std430, binding = 11) readonly buffer MeansW { uint means_w[]; };     // then its key-center table (kv_write.h)

#ifdef ATTN_MERGE_Q8 // the decode kernels: out's int8 blocks, written by the merge where pc.q8_out is 1
#include "common/q8_layout.h"
layout(std430, binding = 12) writeonly buffer Q8Codes { uint q8_codes[]; };   // [n_rows * n_head * d / 4] 4 codes a word
layout(std430, binding = 13) writeonly buffer Q8Scales { float q8_scales[]; }; // [n_rows * n_head * d / 32]
#endif

layout(push_constant) uniform Push { attn_decode_push pc; };

// The work item of this workgroup: the grid is ovk_attn_grid's, x + z * (groups in x), KV head in y.
uint attn_item_id() { return gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x; }

// Physical page of the item's logical page lp (of its kind): from the item for its first
// pages, else from the sequence's page table.
uint item_page(kv_attn_item it, uint lp)
{
    uint rel = lp - it.begin / PAGE;
    if (rel == 0u) return uint(it.page0);
    if (rel == 1u) return uint(it.page1);
    if (rel == 2u) return uint(it.page2);
    return uint(it.kind == KV_ITEM_INT2 ? int2_table[it.seq * pc.max_int2_pages + lp]
                                        : f16_table[it.seq * pc.max_f16_pages + lp]);
}

// INT2 codes become numbers without a conversion instruction: fp32 by code_x
// (common/int2_code_x.glsl), fp16 two at a time by code_pair (common/int2_code_f16.glsl).
#include "common/int2_code_x.glsl"
#if ATTN_F16
#include "common/int2_code_f16.glsl"
#endif
