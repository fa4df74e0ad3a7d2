#version 450
// Dequantizing matrix-vector product (decode): y[t][r] = sum_c W[r][c] * x[t][c] for the
// weight matrix W [rows][cols] in its raw GGUF block layout (ggml ne0 = cols contiguous).
//
// A workgroup owns ROWS consecutive rows of one token t (= workgroup z). x is staged in
// shared memory XCHUNK columns at a time; each thread takes units of those columns
// (common/dequant_unit.glsl: 16 bytes of quants, 4..32 elements), keeps the unit's x in
// registers and runs it against all ROWS rows, so adjacent threads read adjacent words of
// W and x is read from memory once per workgroup. Per-row sums go through a shared-memory
// tree (no subgroup-size assumption). Rows are spread over workgroups x and y (x < 65536).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup
layout(constant_id = 3) const uint XCHUNK = 256;    // columns of x staged at once, a multiple of 256

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][rows] fp32

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (= workgroups in z)
} pc;

#include "common/dequant.glsl"
#include "common/dequant_unit.glsl"

// [XCHUNK / 4 + XCHUNK / 32] vec4: x columns c0 .. c0 + XCHUNK of this token; after every
// 8 vec4 (32 columns) one vec4 of padding, so threads reading 32-column units in parallel
// hit different banks.
shared vec4 xs[XCHUNK / 4u + XCHUNK / 32u];
shared float red[WORKGROUP * ROWS]; // [ROWS][WORKGROUP] partial sums

vec4 x_at(uint e) { uint j = e >> 2; return xs[j + (j >> 3)]; } // e: column in the chunk, % 4 == 0

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint rb = dq_row_bytes(pc.cols), ue = mv_unit_elems(), gap = mv_unit_gap();
    uint xbase = (tok * pc.cols) >> 2;
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) acc[i] = 0.0;

    for (uint c0 = 0u; c0 < pc.cols; c0 += XCHUNK) {
        uint len = min(XCHUNK, pc.cols - c0);
        for (uint j = tid; j < (len >> 2); j += WORKGROUP) xs[j + (j >> 3)] = xv[xbase + (c0 >> 2) + j];
        barrier();
        for (uint uc = tid; uc < len / ue; uc += WORKGROUP) {
            uint u = c0 / ue + uc, e = mv_unit_x(u) - c0;
            vec4 xl[4], xh[4];
            float sl = 0.0, sh = 0.0;
            if (mv_perm()) {
                for (uint k = 0u; k < 4u; k++) {
                    xl[k] = x_at(e + 4u * k).xzyw;
                    xh[k] = x_at(e + gap + 4u * k).xzyw;
                }
                if (TYPE == GGML_Q4_1 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
                    vec4 a = xl[0] + xl[1] + xl[2] + xl[3], b = xh[0] + xh[1] + xh[2] + xh[3];
                    sl = (a.x + a.y) + (a.z + a.w);
                    sh = (b.x + b.y) + (b.z + b.w);
                }
            } else {
                xl[0] = x_at(e);
                xl[1] = ue > 4u ? x_at(e + 4u) : vec4(0.0);
                xl[2] = xl[3] = xh[0] = xh[1] = xh[2] = xh[3] = vec4(0.0);
            }
            for (uint i = 0u; i < ROWS; i++)
                if (row0 + i < pc.rows) acc[i] += mv_unit_dot((row0 + i) * rb, u, xl, xh, sl, sh);
        }
        barrier();
    }

    for (uint i = 0u; i < ROWS; i++) red[i * WORKGROUP + tid] = acc[i];
    barrier();
    // halve every row's partial sums per step; all threads share the ROWS * s additions
    for (uint s = WORKGROUP >> 1, ls = uint(findLSB(WORKGROUP)) - 1u; s > 0u; s >>= 1, ls--) {
        for (uint j = tid; j < ROWS * s; j += WORKGROUP) {
            uint r = j >> ls, i = r * WORKGROUP + (j & (s - 1u));
            red[i] += red[i + s];
        }
        barrier();
    }
    if (tid < ROWS && row0 + tid < pc.rows) y[tok * pc.rows + row0 + tid] = red[tid * WORKGROUP];
}
