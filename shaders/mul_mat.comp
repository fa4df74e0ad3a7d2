#version 450
// Dequantizing matrix-matrix product (prefill): y[t][r] = sum_c W[r][c] * x[t][c] for the
// weight matrix W [rows][cols] in its raw GGUF block layout and n tokens at once.
// A workgroup computes a BM x BN tile (rows x tokens); per step of BK columns it dequantizes
// the W tile and copies the x tile into shared memory, then each thread accumulates a 4-row
// by (256 / WORKGROUP)-token register tile in fp32, in column order.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads: 32, 64, 128 or 256
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][rows] fp32

layout(push_constant) uniform Push {
    uint rows;   // rows of W (tiles of BM in workgroup x)
    uint cols;   // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (tiles of BN in workgroup y)
} pc;

#include "common/dequant.glsl"

const uint BM = 32u, BN = 32u, BK = 32u, LD = BK + 1u; // LD: padded shared row stride
const uint TM = 4u;                                    // rows per thread
const uint TN = 256u / WORKGROUP;                      // tokens per thread (BM*BN / (TM*WORKGROUP))

shared float sw[BM * LD]; // [BM][LD] dequantized W tile
shared float sx[BN * LD]; // [BN][LD] x tile

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    uint tr = tid % (BM / TM), tt = tid / (BM / TM); // this thread: rows tr + 8a, tokens tt + (WORKGROUP/8) b
    float acc[TM * 8];                                // [TM][TN], TN <= 8
    for (uint i = 0u; i < TM * TN; i++) acc[i] = 0.0;

    for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
        for (uint t = tid; t < BM * (BK / 8u); t += WORKGROUP) {
            uint r = t / (BK / 8u), kr = (t % (BK / 8u)) * 8u;
            uint row = row0 + r, col = k0 + kr;
            float v[8];
            if (row < pc.rows && col < pc.cols) dequant8(row * rb + (col / be) * bb, col % be, v);
            else for (uint k = 0u; k < 8u; k++) v[k] = 0.0;
            for (uint k = 0u; k < 8u; k++) sw[r * LD + kr + k] = v[k];
        }
        for (uint t = tid; t < BN * (BK / 4u); t += WORKGROUP) {
            uint j = t / (BK / 4u), kv = (t % (BK / 4u)) * 4u;
            uint tok = tok0 + j, col = k0 + kv;
            vec4 xx = (tok < pc.n && col < pc.cols) ? xv[(tok * pc.cols + col) >> 2] : vec4(0.0);
            sx[j * LD + kv] = xx.x;
            sx[j * LD + kv + 1u] = xx.y;
            sx[j * LD + kv + 2u] = xx.z;
            sx[j * LD + kv + 3u] = xx.w;
        }
        barrier();
        for (uint k = 0u; k < BK; k++) {
            float wr[TM];
            for (uint a = 0u; a < TM; a++) wr[a] = sw[(tr + a * (BM / TM)) * LD + k];
            for (uint b = 0u; b < TN; b++) {
                float xk = sx[(tt + b * (WORKGROUP / (BM / TM))) * LD + k];
                for (uint a = 0u; a < TM; a++) acc[a * TN + b] += wr[a] * xk;
            }
        }
        barrier();
    }
    for (uint b = 0u; b < TN; b++) {
        uint tok = tok0 + tt + b * (WORKGROUP / (BM / TM));
        for (uint a = 0u; a < TM; a++) {
            uint row = row0 + tr + a * (BM / TM);
            if (row < pc.rows && tok < pc.n) y[tok * pc.rows + row] = acc[a * TN + b];
        }
    }
}
