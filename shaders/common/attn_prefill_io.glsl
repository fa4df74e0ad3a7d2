// The prefill-attention kernels' interface and the readers they share (attn_prefill.comp,
// common/attn_prefill_cm_body.glsl): bindings, push constants, INT2 dequantization and key
// centers. The including shader declares the cache's specialization constants first (D, D4,
// N_KV, CENTER_BLOCK).
#ifndef OSCAR_ATTN_PREFILL_IO_GLSL
#define OSCAR_ATTN_PREFILL_IO_GLSL

// ---- bindings ----
layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };                // [n_rows][n_head][d] fp32, rotated
layout(std430, binding = 1) readonly buffer Rows { kv_attn_row rows[]; };    // [n_rows]
layout(std430, binding = 2) readonly buffer Tiles { kv_attn_tile tiles[]; }; // [n_tiles]
layout(std430, binding = 3) readonly buffer Int2Pool { uint int2_pool[]; };  // [pages][INT2 page words]
layout(std430, binding = 4) readonly buffer F16Pool4 { uvec4 f16_pool4[]; }; // [pages][fp16 page words / 4]
layout(std430, binding = 5) readonly buffer Int2Table { int int2_table[]; }; // [n_seq][max_int2_pages]
layout(std430, binding = 6) readonly buffer F16Table { int f16_table[]; };   // [n_seq][max_f16_pages]
layout(std430, binding = 7) readonly buffer RotV { vec4 rot_v[]; };          // [n_rot][d][d/4] R_V of the layer
layout(std430, binding = 8) writeonly buffer Out { float out_[]; };          // [n_rows][n_head][d] fp32
layout(std430, binding = 9) readonly buffer Means { float means[]; };       // [K,V][N_KV][d] centering vectors μ of the layer,
layout(std430, binding = 9) readonly buffer MeansW { uint means_w[]; };     // then its key-center table (kv_write.h)

layout(push_constant) uniform Push { attn_prefill_push pc; };

// 4 dequantized elements e0..e0+3 of an INT2 code word w: min + code * scale
vec4 dequant4(uint w, uint e0, vec2 sm)
{
    uvec4 c = (uvec4(w) >> (2u * (uvec4(e0) + uvec4(0u, 1u, 2u, 3u)))) & 3u;
    return vec4(sm.y) + vec4(c) * sm.x;
}

// Elements 4i .. 4i + 3 of the rotated key center of position p's block (KV head kvh).
vec4 key_center4(uint p, uint kvh, uint i)
{
    uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + (p / max(CENTER_BLOCK, 1u) * N_KV + kvh) * (D / 2) + 2u * i;
    return vec4(unpackHalf2x16(means_w[cb]), unpackHalf2x16(means_w[cb + 1u]));
}

#endif
