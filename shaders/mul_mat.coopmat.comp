#version 450
// Dequantizing matrix-matrix product (prefill) on cooperative matrices: y[t][r] = sum_c W[r][c] *
// x[t][c], the interface of mul_mat.comp (W [rows][cols] in its raw GGUF blocks, x [n][cols] fp32,
// y [n][y_stride] fp32). Inputs are rounded to fp16 (W after dequantization in fp32, x as read),
// products accumulated in fp32 by the device's matrix units (runtime/ref/mul_mat_f16_ref.c is
// the rounding-faithful reference).
//
// A workgroup computes a BM x BN tile (rows x tokens). Per step of BK = 32 columns its threads
// dequantize the W tile (runs of 8 elements, as mul_mat.comp) and convert the x tile, both to
// fp16 in shared memory, k contiguous: sw [BM][SK], sx [BN][SK]. The tile is cut into WARPS =
// SG_M x SG_N warp tiles of CM x CN matrices of TM x TN; a subgroup owns one warp tile and keeps
// its CM * CN accumulators across the steps. The next step's global loads are issued before the
// current step's matrix products (held in registers, stored after them).
//
// No subgroup size is assumed: the host sizes the workgroup as SG_M * SG_N times the largest
// subgroup size the device may use, so subgroups are full; where the device runs fewer, larger
// subgroups, each takes several warp tiles one pass after another (every pass re-reads the
// tiles), and where it runs more, the extra ones only load.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/mul_mat_coopmat.h"

layout(local_size_x_id = MMC_SPEC_WORKGROUP) in;
layout(constant_id = MMC_SPEC_WORKGROUP) const uint WORKGROUP = 128;
layout(constant_id = MMC_SPEC_TYPE) const uint TYPE = 0; // GGML type id of W
layout(constant_id = MMC_SPEC_TM) const uint TM = 16;    // the device's coopmat shape (fp16 x fp16 + fp32)
layout(constant_id = MMC_SPEC_TN) const uint TN = 16;
layout(constant_id = MMC_SPEC_TK) const uint TK = 16;    // divides BK = 32, a multiple of 4
layout(constant_id = MMC_SPEC_SG_M) const uint SG_M = 2; // warp tiles along rows
layout(constant_id = MMC_SPEC_SG_N) const uint SG_N = 2; // along tokens
layout(constant_id = MMC_SPEC_CM) const uint CM = 4;     // matrices per warp tile along rows
layout(constant_id = MMC_SPEC_CN) const uint CN = 4;     // along tokens

layout(std430, binding = 0) readonly buffer W { uint wq[]; };     // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };     // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };    // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of W (tiles of BM in workgroup x)
    uint cols;     // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;        // tokens (tiles of BN in workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
} pc;

#include "common/dequant.glsl"

const uint BK = MMC_BK;
const uint BM = SG_M * CM * TM, BN = SG_N * CN * TN;
const uint WARPS = SG_M * SG_N;
const uint SK = BK / 4u + 2u; // shared row stride in f16vec4 (80 bytes: 16-byte aligned, rows spread over banks)

shared f16vec4 sw[BM * SK];          // [BM][SK] fp16 x4: W[row0 + r][k0 + 4i ..], dequantized
shared f16vec4 sx[BN * SK];          // [BN][SK] fp16 x4: x[tok0 + j][k0 + 4i ..]
shared float so[WARPS * TM * TN];    // [warp tile][TN][TM] fp32: an edge matrix on its way to y

const uint W_RUNS = (BM * (BK / 8u) + WORKGROUP - 1u) / WORKGROUP; // runs of 8 weights a thread loads per step
const uint X_VECS = (BN * (BK / 4u) + WORKGROUP - 1u) / WORKGROUP; // vec4s of x a thread loads per step

// The step at column K0 of this thread's part of the tiles, into registers wv (two fp16 x4 a run;
// run t = tid + i * WORKGROUP: row t / 4, columns 8 (t % 4) ..) and xh (vec4 t: token t / 8,
// columns 4 (t % 8) ..); outside the matrix zeros. (A macro: the arrays' sizes are
// specialization constants, which function parameters do not take.)
#define LOAD_STEP(K0)                                                                                     \
    for (uint i = 0u; i < W_RUNS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), col = (K0) + (t % (BK / 8u)) * 8u;               \
        bool live = r < BM && row0 + r < pc.rows && col < pc.cols;                                        \
        uint row = min(row0 + r, pc.rows - 1u), c = min(col, pc.cols - 8u);                               \
        float w[8];                                                                                       \
        dequant8(row * rb + (c / be) * bb, c % be, w);                                                    \
        wv[2u * i] = live ? f16vec4(w[0], w[1], w[2], w[3]) : f16vec4(0.0);                               \
        wv[2u * i + 1u] = live ? f16vec4(w[4], w[5], w[6], w[7]) : f16vec4(0.0);                          \
    }                                                                                                     \
    for (uint i = 0u; i < X_VECS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, j = t / (BK / 4u), col = (K0) + (t % (BK / 4u)) * 4u;               \
        bool live = j < BN && tok0 + j < pc.n && col < pc.cols;                                           \
        vec4 x = xv[(min(tok0 + j, pc.n - 1u) * pc.cols + min(col, pc.cols - 4u)) >> 2];                  \
        xh[i] = live ? f16vec4(x) : f16vec4(0.0);                                                         \
    }

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    uint passes = (WARPS + gl_NumSubgroups - 1u) / gl_NumSubgroups; // the same for every subgroup

    f16vec4 wv[W_RUNS * 2u]; // this thread's runs of W and vec4s of x of the next step
    f16vec4 xh[X_VECS];
    coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> acc[CM * CN];
    coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ma[CM];
    coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> mb;

    for (uint pass = 0u; pass < passes; pass++) {
        uint wt = gl_SubgroupID + pass * gl_NumSubgroups; // this subgroup's warp tile (none when >= WARPS)
        bool own = wt < WARPS;
        uint wm = (wt % SG_M) * CM * TM, wn = (wt / SG_M) * CN * TN; // its first row and token in the tile
        for (uint i = 0u; i < CM * CN; i++)
            acc[i] = coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
        LOAD_STEP(0u)
        for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
            for (uint i = 0u; i < W_RUNS; i++) {
                uint t = tid + i * WORKGROUP, r = t / (BK / 8u), kq = (t % (BK / 8u)) * 2u;
                if (r < BM) {
                    sw[r * SK + kq] = wv[2u * i];
                    sw[r * SK + kq + 1u] = wv[2u * i + 1u];
                }
            }
            for (uint i = 0u; i < X_VECS; i++) {
                uint t = tid + i * WORKGROUP, j = t / (BK / 4u);
                if (j < BN) sx[j * SK + t % (BK / 4u)] = xh[i];
            }
            barrier();
            LOAD_STEP(k0 + BK) // past the end: zeros
            if (own) {
                for (uint kk = 0u; kk < BK; kk += TK) {
                    for (uint i = 0u; i < CM; i++)
                        coopMatLoad(ma[i], sw, (wm + i * TM) * SK + kk / 4u, SK, gl_CooperativeMatrixLayoutRowMajor);
                    for (uint j = 0u; j < CN; j++) {
                        coopMatLoad(mb, sx, (wn + j * TN) * SK + kk / 4u, SK, gl_CooperativeMatrixLayoutColumnMajor);
                        for (uint i = 0u; i < CM; i++) acc[i * CN + j] = coopMatMulAdd(ma[i], mb, acc[i * CN + j]);
                    }
                }
            }
            barrier();
        }
        if (own) {
            // y[tok][row] is the accumulator (row, tok) stored column-major with stride y_stride
            for (uint i = 0u; i < CM; i++) {
                for (uint j = 0u; j < CN; j++) {
                    uint row = row0 + wm + i * TM, tok = tok0 + wn + j * TN;
                    if (row >= pc.rows || tok >= pc.n) continue;
                    if (row + TM <= pc.rows && tok + TN <= pc.n) {
                        coopMatStore(acc[i * CN + j], y, tok * pc.y_stride + row, pc.y_stride,
                                     gl_CooperativeMatrixLayoutColumnMajor);
                        continue;
                    }
                    // an edge matrix: through this warp tile's slot of so, then the part inside
                    coopMatStore(acc[i * CN + j], so, wt * TM * TN, TM, gl_CooperativeMatrixLayoutColumnMajor);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) {
                        uint r = row + e % TM, t = tok + e / TM;
                        if (r < pc.rows && t < pc.n) y[t * pc.y_stride + r] = so[wt * TM * TN + e];
                    }
                    subgroupBarrier(); // the slot is read before the next edge matrix overwrites it
                }
            }
        }
    }
}
