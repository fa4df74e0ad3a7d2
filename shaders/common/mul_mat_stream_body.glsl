// The body of the streaming cooperative-matrix matmul (shaders/mul_mat_stream.coopmat.comp
// describes it), shared with its scalar emulation (shaders/mul_mat_stream_emu.f16.comp): the
// including shader enables the extensions, and defines MMC_EMULATE for the emulation;
// common/mul_mat_stream_ops.glsl spells the matrix operations either way.
#include "common/mul_mat_coopmat.h"

layout(local_size_x_id = MMC_SPEC_WORKGROUP) in;
layout(constant_id = MMC_SPEC_WORKGROUP) const uint WORKGROUP = 128;
layout(constant_id = MMC_SPEC_TYPE) const uint TYPE = 0;  // GGML type id of W
layout(constant_id = MMC_SPEC_TM) const uint TM = 16;     // the device's coopmat shape (fp16 x fp16 + fp32)
layout(constant_id = MMC_SPEC_TN) const uint TN = 16;
layout(constant_id = MMC_SPEC_TK) const uint TK = 16;     // divides BK = 32, a multiple of 4
layout(constant_id = MMC_SPEC_SG_M) const uint SG_M = 4;  // subgroups of a workgroup, each its own rows
layout(constant_id = MMC_SPEC_CM) const uint CM = 2;      // row matrices of a subgroup
layout(constant_id = MMC_SPEC_CN) const uint CN = 2;      // token matrices (a workgroup's tokens)
layout(constant_id = MMC_SPEC_SG_MIN) const uint SG_MIN = 32; // the smallest subgroup the device may run

layout(std430, binding = 0) readonly buffer W { uint wq[]; };  // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { f16vec4 xh[]; }; // [n rounded up to TN][x_stride] fp16, zeros past n and cols
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [slices][n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of W (SG_M * CM * TM a workgroup, workgroup x)
    uint cols;     // columns of W, a multiple of the block size
    uint n;        // tokens (CN * TN a workgroup, workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
    uint k_slice;  // columns of a slice (workgroup z), a multiple of BK; cols rounded up to BK when unsplit
    uint slice;    // floats from slice z's y to slice z + 1's (unsplit: 0)
    uint x_stride; // fp16 from xh[t][0] to xh[t + 1][0]: cols rounded up to BK
} pc;

#include "common/dequant.glsl"

const uint BK = MMC_BK;
const uint RM = CM * TM;      // rows a subgroup owns
const uint SK = BK / 4u + 2u; // shared row stride in f16vec4 (80 bytes: 16-byte aligned, rows spread over banks)

shared f16vec4 sw[SG_M * RM * SK]; // [subgroup][RM][SK] fp16 x4: its rows' step, dequantized
shared float so[SG_M * TM * TN];   // [subgroup][TN][TM] fp32: an edge matrix on its way to y

#include "common/mul_mat_stream_ops.glsl"

const uint RUNS = (RM * (BK / 8u) + SG_MIN - 1u) / SG_MIN; // runs of 8 weights a lane loads per step, at most

// v in fp16, rounded to nearest, values beyond the fp16 range clamped to +-65504 (the rounding
// of mul_mat.coopmat.comp, which the reference ovk_ref_mul_mat_f16 reproduces).
f16vec4 to_f16(vec4 v) { return f16vec4(clamp(v, vec4(-65504.0), vec4(65504.0))); }

// A subgroup's step of BK columns at K0: run t = lane + i * gl_SubgroupSize of its rows (row t / 4,
// columns 8 (t % 4) ..) as the words dq_fetch8 reads, with the run's element, byte alignment and
// whether it lies inside the matrix in wa. Read two steps before they are stored (see main).
#define FETCH_STEP(K0, wr, wa)                                                                            \
    MMS_UNROLL for (uint i = 0u; i < RUNS; i++) {                                                         \
        uint t = lane + i * lanes, r = t / (BK / 8u), col = (K0) + (t % (BK / 8u)) * 8u;                  \
        bool live = t < RM * (BK / 8u) && row0 + r < pc.rows && col < pc.cols;                           \
        uint row = min(row0 + r, pc.rows - 1u), c = min(col, pc.cols - 8u);                              \
        uint blk = row * rb + (c / be) * bb, raw[DQ_RAW];                                                 \
        dq_fetch8(blk, c % be, raw);                                                                      \
        MMS_UNROLL for (uint k = 0u; k < DQ_RAW; k++) wr[i * DQ_RAW + k] = raw[k];                        \
        wa[i] = (c % be) | ((blk & 3u) << 16) | (live ? 1u << 31 : 0u);                                   \
    }

// The runs of a register set dequantized, rounded to fp16 and written to the subgroup's rows of sw.
#define STORE_STEP(wr, wa)                                                                                \
    MMS_UNROLL for (uint i = 0u; i < RUNS; i++) {                                                         \
        uint t = lane + i * lanes, r = t / (BK / 8u), kq = (t % (BK / 8u)) * 2u, raw[DQ_RAW];             \
        if (t >= RM * (BK / 8u)) continue;                                                                \
        MMS_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = wr[i * DQ_RAW + k];                        \
        float w[8];                                                                                       \
        dq_decode8(raw, wa[i] & 0xFFFFu, (wa[i] >> 16) & 3u, w);                                          \
        bool live = (wa[i] >> 31) != 0u;                                                                  \
        sw[slot + r * SK + kq] = live ? to_f16(vec4(w[0], w[1], w[2], w[3])) : f16vec4(0.0);              \
        sw[slot + r * SK + kq + 1u] = live ? to_f16(vec4(w[4], w[5], w[6], w[7])) : f16vec4(0.0);         \
    }

// The subgroup's products over the step at K0: its rows in sw by the tokens' columns of xh.
#define PRODUCTS_STEP(K0)                                                                                 \
    MMS_UNROLL for (uint kk = 0u; kk < BK; kk += TK) {                                                    \
        MMS_UNROLL for (uint j = 0u; j < CN; j++)                                                         \
            if (j < tiles) MMS_LOAD_B(mb[j], ((tok0 + j * TN) * pc.x_stride + (K0) + kk) / 4u, pc.x_stride / 4u); \
        MMS_UNROLL for (uint i = 0u; i < CM; i++) {                                                       \
            MMS_LOAD_A(ma, slot + i * TM * SK + kk / 4u);                                                 \
            MMS_UNROLL for (uint j = 0u; j < CN; j++)                                                     \
                if (j < tiles) acc[i * CN + j] = MMS_MUL_ADD(ma, mb[j], acc[i * CN + j]);                 \
        }                                                                                                 \
    }

// One step from a register set: store it, let the subgroup see it, read the step at K_NEXT into
// the same set (past the slice: not stored; past the matrix: zeros), the products, and wait
// until every lane has read sw before the next step overwrites it.
#define STEP(K0, K_NEXT, wr, wa)                                                                          \
    STORE_STEP(wr, wa)                                                                                    \
    subgroupMemoryBarrierShared();                                                                        \
    subgroupBarrier();                                                                                    \
    FETCH_STEP(K_NEXT, wr, wa)                                                                            \
    PRODUCTS_STEP(K0)                                                                                     \
    subgroupBarrier();

void main()
{
    uint lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize;
    uint tok0 = gl_WorkGroupID.y * CN * TN;
    uint tiles = min(CN, (pc.n - tok0 + TN - 1u) / TN); // token matrices holding tokens (xh has them, padded)
    // slice z sums columns k_begin..k_end-1 into its own y (split: partial sums the host adds up)
    uint k_begin = gl_WorkGroupID.z * pc.k_slice, k_end = min(pc.cols, k_begin + pc.k_slice);
    uint y0 = gl_WorkGroupID.z * pc.slice;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);

    uint wr[RUNS * DQ_RAW], wr2[RUNS * DQ_RAW]; // this lane's runs of the next two steps, as read:
    uint wa[RUNS], wa2[RUNS];                   // steps k, k + 2 BK, ... in the first set, k + BK, ... in the second
    MMS_ACC acc[CM * CN];
    MMS_A ma;
    MMS_B mb[CN];

    // a subgroup owns RM rows; where the device runs fewer subgroups than SG_M, each takes several
    // row groups in turn, and where it runs more, the extra ones have none
    for (uint g = gl_SubgroupID; g < SG_M; g += gl_NumSubgroups) {
        uint row0 = gl_WorkGroupID.x * SG_M * RM + g * RM, slot = gl_SubgroupID * RM * SK;
        if (row0 >= pc.rows) break; // uniform in the subgroup, and later row groups lie further out
        MMS_UNROLL for (uint i = 0u; i < CM * CN; i++)
            acc[i] = MMS_ZERO;
        FETCH_STEP(k_begin, wr, wa)
        FETCH_STEP(k_begin + BK, wr2, wa2)
        for (uint k0 = k_begin; k0 < k_end; k0 += 2u * BK) {
            STEP(k0, k0 + 2u * BK, wr, wa)
            if (k0 + BK >= k_end) break; // uniform
            STEP(k0 + BK, k0 + 3u * BK, wr2, wa2)
        }
        // y[tok][row] is the accumulator (row, tok) stored column-major with stride y_stride
        MMS_UNROLL for (uint i = 0u; i < CM; i++) {
            MMS_UNROLL for (uint j = 0u; j < CN; j++) {
                uint row = row0 + i * TM, tok = tok0 + j * TN;
                if (row >= pc.rows || tok >= pc.n) continue;
                if (row + TM <= pc.rows && tok + TN <= pc.n) {
                    MMS_STORE(acc[i * CN + j], y, y0 + tok * pc.y_stride + row, pc.y_stride);
                    continue;
                }
                // an edge matrix: through this subgroup's slot of so, then the part inside
                uint e0 = gl_SubgroupID * TM * TN;
                MMS_STORE(acc[i * CN + j], so, e0, TM);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (uint e = lane; e < TM * TN; e += lanes) {
                    uint r = row + e % TM, t = tok + e / TM;
                    if (r < pc.rows && t < pc.n) y[y0 + t * pc.y_stride + r] = so[e0 + e];
                }
                subgroupBarrier(); // the slot is read before the next edge matrix overwrites it
            }
        }
    }
}
