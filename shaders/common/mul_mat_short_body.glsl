// The body of the short-batch cooperative-matrix product (shaders/mul_mat_short.coopmat.comp
// describes it), shared with its scalar emulation (shaders/mul_mat_short_emu.f16.comp): the
// including shader enables the extensions, and defines MMS_EMULATE for the emulation;
// common/mul_mat_short_ops.glsl spells the matrix operations either way.
#include "common/mul_mat_short.h"

layout(local_size_x_id = MMS_SPEC_WORKGROUP) in;
layout(constant_id = MMS_SPEC_WORKGROUP) const uint WORKGROUP = 64;
layout(constant_id = MMS_SPEC_TYPE) const uint TYPE = 0; // GGML type id of W
layout(constant_id = MMS_SPEC_TM) const uint TM = 16;    // the device's coopmat shape
layout(constant_id = MMS_SPEC_TN) const uint TN = 16;    // divides MMS_TOKEN_PAD
layout(constant_id = MMS_SPEC_TK) const uint TK = 16;    // divides BK, a multiple of 4
layout(constant_id = MMS_SPEC_CM) const uint CM = 2;     // matrices along rows a subgroup owns
layout(constant_id = MMS_SPEC_CN) const uint CN = 2;     // along tokens
layout(constant_id = MMS_SPEC_SG_R) const uint SG_R = 2; // subgroups along rows
layout(constant_id = MMS_SPEC_SG_K) const uint SG_K = 1; // along columns
layout(constant_id = MMS_SPEC_RUNS) const uint RUNS = 4; // >= CM * TM * BK / 8 / the subgroup size

layout(std430, binding = 0) readonly buffer W { uint wq[]; };      // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer XH { f16vec4 xh[]; };  // [tokens, padded][x_stride] fp16 x4, zeros past x
layout(std430, binding = 2) writeonly buffer Y { float y[]; };     // [slices][n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of W (tiles of BM in workgroup x)
    uint cols;     // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;        // tokens (tiles of RN in workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
    uint k_slice;  // columns of a slice (workgroup z), a multiple of BK; cols rounded up when unsplit
    uint slice;    // floats from slice z's y to slice z + 1's (unsplit: 0)
    uint x_stride; // fp16 x4 from xh[t][0] to xh[t + 1][0]: cols rounded up to BK, over 4
} pc;

#include "common/dequant.glsl"

#ifndef MMS_AHEAD
#define MMS_AHEAD 2u
#endif
const uint AHEAD = MMS_AHEAD; // steps a subgroup's reads run ahead of their use
const uint BK = MMS_BK;
const uint KT = BK / TK;               // matrix products along k per step
const uint RM = CM * TM, RN = CN * TN; // rows and tokens of a subgroup's tile
const uint TASKS = SG_R * SG_K, BM = SG_R * RM;
const uint SK = BK / 4u + 2u; // slot row stride in f16vec4 (80 bytes: 16-byte aligned, rows spread over banks)
const uint RUNS_STEP = RM * (BK / 8u); // runs of 8 weights in a subgroup's step

shared f16vec4 sw[TASKS * RM * SK]; // [subgroup][RM][SK] fp16 x4: its step of W, dequantized
shared float sr[SG_R * RM * RN];    // [row group][RN][RM] fp32: partial sums, then the tile on its way to y

#include "common/mul_mat_short_ops.glsl"

// v in fp16, rounded to nearest, values beyond the fp16 range clamped to +-65504 (as x16 is)
f16vec4 to_f16(vec4 v) { return f16vec4(clamp(v, vec4(-65504.0), vec4(65504.0))); }

// Reads of step K0 into register set s: run t = lane + i * S of W (row t / 4 of the tile, columns
// K0 + 8 (t % 4) ..) as the words dq_fetch8 reads (zeros outside the matrix or the part).
// FETCH_B loads the step's x matrices (not past the part: xh ends at the padded columns).
#define FETCH_W(s, K0)                                                                                    \
    MMS_UNROLL for (uint i = 0u; i < RUNS; i++) {                                                         \
        uint t = lane + i * gl_SubgroupSize, r = t / (BK / 8u), col = (K0) + (t % (BK / 8u)) * 8u, raw[DQ_RAW]; \
        MMS_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = 0u;                                         \
        if (t < RUNS_STEP && row0 + r < pc.rows && col < k_hi)                                            \
            dq_fetch8((row0 + r) * rb + (col / be) * bb, col % be, raw);                                  \
        MMS_UNROLL for (uint k = 0u; k < DQ_RAW; k++) wr[((s) * RUNS + i) * DQ_RAW + k] = raw[k];          \
    }
#define FETCH_B(s, K0)                                                                                    \
    if ((K0) < k_hi) {                                                                                    \
        MMS_UNROLL for (uint kk = 0u; kk < KT; kk++)                                                      \
            MMS_UNROLL for (uint j = 0u; j < CN; j++)                                                     \
                if (tok0 + j * TN < pc.n)                                                                 \
                    MMS_LOAD_B(mb[((s) * KT + kk) * CN + j], (tok0 + j * TN) * pc.x_stride + ((K0) + kk * TK) / 4u); \
    }

// Dequantizes set s (step K0) into the subgroup's slot, rounded to fp16.
#define STORE_W(s, K0)                                                                                    \
    MMS_UNROLL for (uint i = 0u; i < RUNS; i++) {                                                         \
        uint t = lane + i * gl_SubgroupSize, r = t / (BK / 8u), kq = (t % (BK / 8u)) * 2u;                \
        uint col = (K0) + (t % (BK / 8u)) * 8u, raw[DQ_RAW];                                              \
        if (t < RUNS_STEP) {                                                                              \
            MMS_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = wr[((s) * RUNS + i) * DQ_RAW + k];      \
            float w[8];                                                                                   \
            dq_decode8(raw, col % be, ((row0 + r) * rb + (col / be) * bb) & 3u, w);                       \
            bool live = row0 + r < pc.rows && col < k_hi;                                                 \
            sw[slot + r * SK + kq] = live ? to_f16(vec4(w[0], w[1], w[2], w[3])) : f16vec4(0.0);          \
            sw[slot + r * SK + kq + 1u] = live ? to_f16(vec4(w[4], w[5], w[6], w[7])) : f16vec4(0.0);     \
        }                                                                                                 \
    }

// The tile's products over the step in the slot and set s.
#define PRODUCTS(s)                                                                                       \
    MMS_UNROLL for (uint kk = 0u; kk < KT; kk++) {                                                        \
        MMS_UNROLL for (uint i = 0u; i < CM; i++)                                                         \
            MMS_LOAD_A(ma[i], slot + i * TM * SK + kk * (TK / 4u));                                       \
        MMS_UNROLL for (uint j = 0u; j < CN; j++)                                                         \
            if (tok0 + j * TN < pc.n) {                                                                   \
                MMS_UNROLL for (uint i = 0u; i < CM; i++)                                                 \
                    acc[i * CN + j] = MMS_MUL_ADD(ma[i], mb[((s) * KT + kk) * CN + j], acc[i * CN + j]);  \
            }                                                                                             \
    }

void main()
{
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    bool own = sg < TASKS; // subgroups past the tasks (smaller than the largest size) only join the barriers
    uint rg = sg % SG_R, kp = sg / SG_R;
    uint row0 = gl_WorkGroupID.x * BM + rg * RM, tok0 = gl_WorkGroupID.y * RN;
    uint slot = sg * RM * SK;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    // slice z's columns, then this subgroup's part of them in whole steps
    uint z_lo = gl_WorkGroupID.z * pc.k_slice, z_hi = min(pc.cols, z_lo + pc.k_slice);
    uint part = ((z_hi - z_lo + BK - 1u) / BK + SG_K - 1u) / SG_K * BK;
    uint k_lo = min(z_hi, z_lo + kp * part), k_hi = min(z_hi, k_lo + part);
    uint y0 = gl_WorkGroupID.z * pc.slice;

    uint wr[AHEAD * RUNS * DQ_RAW]; // this lane's runs of W for the next AHEAD steps, as read
    MMS_B mb[AHEAD * KT * CN];      // the x matrices of the next AHEAD steps
    MMS_A ma[CM];
    MMS_ACC acc[CM * CN];
    MMS_UNROLL for (uint i = 0u; i < CM * CN; i++)
        acc[i] = MMS_ZERO;

    if (own) {
        MMS_UNROLL for (uint s = 0u; s < AHEAD; s++) {
            FETCH_W(s, k_lo + s * BK)
            FETCH_B(s, k_lo + s * BK)
        }
        // AHEAD steps a round, set s serving steps s, s + AHEAD, ...: a step's reads are issued
        // AHEAD steps before its products (W as soon as the slot holds the step it read; x after
        // the products that use the set). Only this subgroup uses its slot: no workgroup barrier.
        for (uint k0 = k_lo; k0 < k_hi; k0 += AHEAD * BK) {
            MMS_UNROLL for (uint s = 0u; s < AHEAD; s++) {
                uint k = k0 + s * BK;
                if (k >= k_hi) break; // uniform in the subgroup
                STORE_W(s, k)
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                FETCH_W(s, k + AHEAD * BK)
                PRODUCTS(s)
                FETCH_B(s, k + AHEAD * BK)
                subgroupBarrier(); // the slot is read before the next step overwrites it
            }
        }
    }

    // the column parts' sums into part 0's, one part at a time through the row group's region of sr
    uint region = rg * RM * RN;
    for (uint p = SG_K - 1u; p > 0u; p--) {
        if (own && kp == p)
            MMS_UNROLL for (uint i = 0u; i < CM; i++)
                MMS_UNROLL for (uint j = 0u; j < CN; j++)
                    MMS_STORE_SR(acc[i * CN + j], region + j * TN * RM + i * TM, RM);
        barrier();
        if (own && kp == p - 1u)
            MMS_UNROLL for (uint i = 0u; i < CM; i++)
                MMS_UNROLL for (uint j = 0u; j < CN; j++)
                    MMS_ADD_SR(acc[i * CN + j], region + j * TN * RM + i * TM, RM);
        barrier();
    }
    if (!own || kp != 0u) return;
    // the tile through the region, then its elements inside y: y[tok][row], rows contiguous
    MMS_UNROLL for (uint i = 0u; i < CM; i++)
        MMS_UNROLL for (uint j = 0u; j < CN; j++)
            MMS_STORE_SR(acc[i * CN + j], region + j * TN * RM + i * TM, RM);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = lane; e < RM * RN; e += gl_SubgroupSize) {
        uint r = row0 + e % RM, t = tok0 + e / RM;
        if (r < pc.rows && t < pc.n) y[y0 + t * pc.y_stride + r] = sr[region + e];
    }
}
