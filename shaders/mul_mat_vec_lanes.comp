#version 450
// Dequantizing matrix-vector product (decode) for the block types, "lanes" layout:
// y[t][r] = sum_c W[r][c] * x[t][c], W [rows][cols] in its raw GGUF blocks. Same bindings and
// result as mul_mat_vec.comp.
//
// A workgroup owns ROWS consecutive rows of one token t (= workgroup z). Each 16-byte unit of a
// row (common/dequant_unit.glsl) is split into its four 32-bit words, and a "task" is one word:
// task j is word j & 3 of unit j >> 2. Thread tid takes tasks tid, tid + WORKGROUP, ..., UNROLL
// of them per pass, so four adjacent threads share a unit: a subgroup's loads of W are runs of
// adjacent words and its loads of x runs of adjacent 16-byte vectors (two per task, shared by
// the ROWS rows), where the thread-per-unit shader reads x 128 bytes apart per thread (on the
// H200 those scattered x loads, one cache line each, cost more than W itself). The pass has no
// branch (tasks past the row are clamped and dropped by a select). The workgroup's sums are
// reduced by common/mv_reduce.glsl.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two >= ROWS
layout(constant_id = 1) const uint TYPE = 2;        // GGML type id of W: a quant type of 32 or 256 elements
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup
layout(constant_id = 3) const uint UNROLL = 1;      // tasks per thread per pass
layout(constant_id = 4) const uint W16 = 0;         // unused (the units shader's; same spec list)

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][rows] fp32

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size
    uint n;      // tokens (= workgroups in z)
} pc;

#include "common/dequant.glsl"
#include "common/dequant_unit.glsl"
#include "common/dequant_word.glsl"

#include "common/mv_reduce.glsl"

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint rb = dq_row_bytes(pc.cols), nt = 4u * (pc.cols / 32u); // a unit holds 32 elements
    uint xb = (tok * pc.cols) >> 2;
    uint rbase[ROWS];   // byte offset of each row, the last row standing in for rows past the end
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) {
        rbase[i] = min(row0 + i, pc.rows - 1u) * rb;
        acc[i] = 0.0;
    }

    for (uint j0 = tid; j0 < nt; j0 += UNROLL * WORKGROUP) {
        for (uint r = 0u; r < UNROLL; r++) {
            uint j = j0 + r * WORKGROUP;
            bool live = j < nt;
            j = min(j, nt - 1u);
            uint u = j >> 2, k = j & 3u;
            uint xi = xb + ((mv_unit_x(u) + 4u * k) >> 2);
            vec4 xl = xv[xi].xzyw, xh = xv[xi + (mv_unit_gap() >> 2)].xzyw;
            float sl = 0.0, sh = 0.0;
            if (TYPE == GGML_Q4_1 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
                sl = (xl.x + xl.y) + (xl.z + xl.w);
                sh = (xh.x + xh.y) + (xh.z + xh.w);
            }
            for (uint i = 0u; i < ROWS; i++) {
                float d = mv_word_dot(rbase[i], u, k, xl, xh, sl, sh);
                acc[i] += live ? d : 0.0;
            }
        }
    }

    mv_reduce_store(acc, tid, row0, tok);
}
