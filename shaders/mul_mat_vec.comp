#version 450
// Dequantizing matrix-vector product (decode): y[t][r] = sum_c W[r][c] * x[t][c] for the
// weight matrix W [rows][cols] in its raw GGUF block layout (ggml ne0 = cols contiguous).
//
// A workgroup owns ROWS consecutive rows of one token t (= workgroup z). The row is cut into
// units (common/dequant_unit.glsl: 16 bytes of quants, 4..32 elements); thread tid takes
// units tid, tid + WORKGROUP, ..., UNROLL of them per pass, so adjacent threads read
// adjacent 16-byte pieces of W. A thread reads each unit's x straight from memory (x is
// small and stays in the caches) and runs it against all ROWS rows; the pass body has no
// branch (rows past the end and units past the row are clamped and their sums dropped by a
// select), so the compiler can issue all UNROLL * ROWS weight loads before the first is used.
// Where units start on 16 bytes (F32/F16/BF16, Q4_K/Q5_K quants) and the binding does (W16),
// a unit is one 16-byte load: on NVIDIA four 4-byte loads 16 bytes apart per thread cost about
// four L1 wavefronts each for 128 useful bytes, one 16-byte load four for 512.
// One shared-memory tree reduction at the end (no subgroup-size assumption). Rows are spread
// over workgroups x and y (x < 65536).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two >= ROWS
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup
layout(constant_id = 3) const uint UNROLL = 1;      // units per thread per pass
layout(constant_id = 4) const uint W16 = 0;         // 1: binding W starts on 16 bytes, wq4 may be used

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; }; // the same, 16 bytes at a time
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (= workgroups in z)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]: rows, more for a row range of a wider y
} pc;

#include "common/dequant.glsl"
#define MV_WQ4
#include "common/dequant_unit.glsl"

#include "common/mv_reduce.glsl"

// x of unit u of the token whose x starts at vec4 xb, as mv_unit_dot takes it: lo and hi
// pieces (permuted for the quant types), and their sums where the type has a zero point.
void load_x(uint xb, uint u, out vec4 xl[4], out vec4 xh[4], out float sl, out float sh)
{
    uint j = xb + (mv_unit_x(u) >> 2), g = mv_unit_gap() >> 2;
    sl = 0.0;
    sh = 0.0;
    if (mv_perm()) {
        for (uint k = 0u; k < 4u; k++) {
            xl[k] = xv[j + k].xzyw;
            xh[k] = xv[j + g + k].xzyw;
        }
        if (TYPE == GGML_Q4_1 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
            vec4 a = xl[0] + xl[1] + xl[2] + xl[3], b = xh[0] + xh[1] + xh[2] + xh[3];
            sl = (a.x + a.y) + (a.z + a.w);
            sh = (b.x + b.y) + (b.z + b.w);
        }
    } else {
        xl[0] = xv[j];
        xl[1] = TYPE == GGML_F32 ? vec4(0.0) : xv[j + 1u];
        xl[2] = xl[3] = xh[0] = xh[1] = xh[2] = xh[3] = vec4(0.0);
    }
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint rb = dq_row_bytes(pc.cols), nu = pc.cols / mv_unit_elems();
    uint xb = (tok * pc.cols) >> 2;
    uint rbase[ROWS];   // byte offset of each row, the last row standing in for rows past the end
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) {
        rbase[i] = min(row0 + i, pc.rows - 1u) * rb;
        acc[i] = 0.0;
    }

    for (uint u0 = tid; u0 < nu; u0 += UNROLL * WORKGROUP) {
        for (uint k = 0u; k < UNROLL; k++) {
            uint u = u0 + k * WORKGROUP;
            bool live = u < nu;
            u = min(u, nu - 1u);
            vec4 xl[4], xh[4];
            float sl, sh;
            load_x(xb, u, xl, xh, sl, sh);
            for (uint i = 0u; i < ROWS; i++) {
                float d = mv_unit_dot(rbase[i], u, xl, xh, sl, sh);
                acc[i] += live ? d : 0.0;
            }
        }
    }

    mv_reduce_store(acc, tid, row0, tok);
}
