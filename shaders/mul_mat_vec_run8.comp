#version 450
// Dequantizing matrix-vector product (decode), element-wise variant: the shader of d1554ab,
// kept for F32/F16/BF16 (about 70% of read bandwidth on the H200) and for comparison
// (runtime/ops.c: matvec_shader). Same bindings and result as mul_mat_vec.comp.
// A workgroup owns ROWS consecutive rows of one token t (= workgroup z); its threads stride
// over the rows' runs of 8 elements, accumulate in fp32, and reduce in shared memory (no
// subgroup-size assumption). Rows are spread over workgroups x and y (x < 65536).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two >= ROWS
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (= workgroups in z)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]: rows, more for a row range of a wider y
} pc;

#include "common/dequant.glsl"

#include "common/mv_reduce.glsl"

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    uint xbase = (tok * pc.cols) >> 2;
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) acc[i] = 0.0;
    for (uint run = tid; run < (pc.cols >> 3); run += WORKGROUP) {
        uint col = run << 3;
        vec4 xa = xv[xbase + (col >> 2)], xb = xv[xbase + (col >> 2) + 1u];
        uint blk = (col / be) * bb, e = col % be;
        for (uint i = 0u; i < ROWS; i++) {
            if (row0 + i < pc.rows) {
                float v[8];
                dequant8((row0 + i) * rb + blk, e, v);
                acc[i] += dot(vec4(v[0], v[1], v[2], v[3]), xa) + dot(vec4(v[4], v[5], v[6], v[7]), xb);
            }
        }
    }
    mv_reduce_store(acc, tid, row0, tok);
}
