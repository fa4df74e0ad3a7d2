#version 450
// Dequantizing matrix-vector product for the block types, "lanes" layout, for one token
// (decode) or a few (batched decode): y[t][r] = sum_c W[r][c] * x[t][c], W [rows][cols] in its
// raw GGUF blocks. Same bindings and result as mul_mat_vec.comp.
//
// A workgroup owns ROWS consecutive rows and TOKENS consecutive tokens (workgroup z: tokens
// z * TOKENS ..). Each 16-byte unit of a row (common/dequant_unit.glsl) is split into its four
// 32-bit words, and a "task" is one word: task j is word j & 3 of unit j >> 2. Thread tid takes
// tasks tid, tid + WORKGROUP, ..., UNROLL of them per pass, so four adjacent threads share a
// unit: a subgroup's loads of W are runs of adjacent words and its loads of x runs of adjacent
// 16-byte vectors (two per task and token, shared by the ROWS rows), where the thread-per-unit
// shader reads x 128 bytes apart per thread. With several tokens a word is decoded once
// (mv_word_decode) and applied to the x of each of the TOKENS tokens, so a batch of n tokens
// reads W n / TOKENS times instead of n; one token takes the fused mv_word_dot. The pass has
// no branch (tasks past the row and tokens past n are clamped, their sums dropped by a select
// or not stored). The workgroup's sums are reduced by common/mv_reduce.glsl.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two >= ROWS
layout(constant_id = 1) const uint TYPE = 2;        // GGML type id of W: a quant type of 32 or 256 elements
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup
layout(constant_id = 3) const uint UNROLL = 1;      // tasks per thread per pass
layout(constant_id = 4) const uint W16 = 0;         // unused (the units shader's; same spec list)
layout(constant_id = 5) const uint TOKENS = 1;      // tokens per workgroup

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size
    uint n;      // tokens
    uint y_stride; // floats from y[t][0] to y[t + 1][0]: rows, more for a row range of a wider y
} pc;

#include "common/dequant.glsl"
#include "common/dequant_unit.glsl"
#include "common/dequant_word.glsl"

#define MV_TOKENS TOKENS
#include "common/mv_reduce.glsl"

// The word's x at vec4 index xi (lo) and xi + xg (hi), permuted as the decoded quants, and
// their sums where the type needs them.
void load_x(uint xi, uint xg, out vec4 xl, out vec4 xh, out float sl, out float sh)
{
    xl = xv[xi].xzyw;
    xh = xv[xi + xg].xzyw;
    sl = sh = 0.0;
    if (mv_word_has_min()) {
        sl = (xl.x + xl.y) + (xl.z + xl.w);
        sh = (xh.x + xh.y) + (xh.z + xh.w);
    }
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok0 = gl_WorkGroupID.z * TOKENS;
    if (row0 >= pc.rows || tok0 >= pc.n) return; // uniform over the workgroup
    uint rb = dq_row_bytes(pc.cols), nt = 4u * (pc.cols / 32u); // a unit holds 32 elements
    uint rbase[ROWS];    // byte offset of each row, the last row standing in for rows past the end
    uint xbase[TOKENS];  // vec4 index of each token's x, the last token standing in for those past n
    float acc[MV_SUMS];  // [TOKENS][ROWS]
    for (uint i = 0u; i < ROWS; i++) rbase[i] = min(row0 + i, pc.rows - 1u) * rb;
    for (uint t = 0u; t < TOKENS; t++) xbase[t] = (min(tok0 + t, pc.n - 1u) * pc.cols) >> 2;
    for (uint i = 0u; i < MV_SUMS; i++) acc[i] = 0.0;

    for (uint j0 = tid; j0 < nt; j0 += UNROLL * WORKGROUP) {
        for (uint r = 0u; r < UNROLL; r++) {
            uint j = j0 + r * WORKGROUP;
            bool live = j < nt;
            j = min(j, nt - 1u);
            uint u = j >> 2, k = j & 3u;
            uint xo = (mv_unit_x(u) + 4u * k) >> 2, xg = mv_unit_gap() >> 2;
            vec4 xl, xh;
            float sl, sh;
            if (TOKENS == 1u) { // the fused form (common/dequant_word.glsl says why)
                load_x(xbase[0] + xo, xg, xl, xh, sl, sh);
                for (uint i = 0u; i < ROWS; i++) {
                    float d = mv_word_dot(rbase[i], u, k, xl, xh, sl, sh);
                    acc[i] += live ? d : 0.0;
                }
                continue;
            }
            vec4 lo[ROWS], hi[ROWS], c[ROWS];
            for (uint i = 0u; i < ROWS; i++) mv_word_decode(rbase[i], u, k, lo[i], hi[i], c[i]);
            for (uint t = 0u; t < TOKENS; t++) {
                load_x(xbase[t] + xo, xg, xl, xh, sl, sh);
                for (uint i = 0u; i < ROWS; i++) {
                    float d = mv_word_apply(lo[i], hi[i], c[i], xl, xh, sl, sh);
                    acc[t * ROWS + i] += live ? d : 0.0;
                }
            }
        }
    }

    mv_reduce_store(acc, tid, row0, tok0);
}
