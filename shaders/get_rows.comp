#version 450
// Embedding lookup: out[t][c] = W[ids[t]][c] dequantized to fp32, for any weight type of
// common/dequant.glsl (bit-exact with ovk_ggml_dequantize_row). One workgroup per token.
// W may be a row range of a larger table (a table over the storage-binding limit is split
// into such parts, one dispatch each): it holds rows row0 .. row0 + rows - 1, and a token
// whose id lies outside is left to the dispatch of its part (its out row is not written).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W

layout(std430, binding = 0) readonly buffer W { uint wq[]; };      // [rows][row bytes] GGUF blocks: rows row0..
layout(std430, binding = 1) readonly buffer Ids { uint ids[]; };   // [n] row indices (< vocab)
layout(std430, binding = 2) writeonly buffer Out { vec4 outv[]; }; // [n][cols] fp32

layout(push_constant) uniform Push {
    uint cols;   // elements per row, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (= workgroups, x-major over x and y)
    uint row0;   // first row of the table in W (0 unless W is a part)
    uint rows;   // rows of the table in W (0xffffffff: all, W is the whole table)
} pc;

#include "common/dequant.glsl"
#include "common/grid.glsl"

void main()
{
    uint tok = grid_group();
    if (tok >= pc.n) return;
    uint row = ids[tok] - pc.row0; // wraps past rows for an id below row0
    if (row >= pc.rows) return;    // uniform over the workgroup: another part's row
    uint be = dq_block_elems(), bb = dq_block_bytes();
    uint base = row * dq_row_bytes(pc.cols), obase = (tok * pc.cols) >> 2;
    for (uint run = gl_LocalInvocationID.x; run < (pc.cols >> 3); run += WORKGROUP) {
        uint col = run << 3;
        float v[8];
        dequant8(base + (col / be) * bb, col % be, v);
        outv[obase + (col >> 2)] = vec4(v[0], v[1], v[2], v[3]);
        outv[obase + (col >> 2) + 1u] = vec4(v[4], v[5], v[6], v[7]);
    }
}
