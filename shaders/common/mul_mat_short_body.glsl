// The body of the short-batch cooperative-matrix matmul (shaders/mul_mat_short.coopmat.comp
// describes it), shared with its scalar emulation (shaders/mul_mat_short_emu.f16.comp): the
// including shader enables the extensions, and defines MMC_EMULATE for the emulation;
// common/mul_mat_short_ops.glsl spells the matrix operations either way.
#include "common/mul_mat_coopmat.h"

layout(local_size_x_id = MMC_SPEC_WORKGROUP) in;
layout(constant_id = MMC_SPEC_WORKGROUP) const uint WORKGROUP = 128;
layout(constant_id = MMC_SPEC_TYPE) const uint TYPE = 2; // GGML type id of W: Q4_0
layout(constant_id = MMC_SPEC_TM) const uint TM = 16;    // the device's coopmat shape (fp16 x fp16 + fp32), TK = 16
layout(constant_id = MMC_SPEC_TN) const uint TN = 16;
layout(constant_id = MMC_SPEC_TK) const uint TK = 16;
layout(constant_id = MMC_SPEC_SG_M) const uint SG_M = 4;      // subgroups of a workgroup, each its own rows
layout(constant_id = MMC_SPEC_CM) const uint CM = 2;          // row matrices of a subgroup
layout(constant_id = MMC_SPEC_CN) const uint CN = 2;          // token matrices (the workgroup's tokens)
layout(constant_id = MMC_SPEC_SG_MIN) const uint SG_MIN = 32; // the smallest subgroup the device may run
layout(constant_id = MMC_SPEC_KS) const uint KS = 8;          // 32-column blocks a stage of x
layout(constant_id = MMC_SPEC_AHEAD) const uint AHEAD = 4;    // blocks read ahead of their use, dividing KS

layout(std430, binding = 0) readonly buffer W { uint wq[]; };  // [rows][cols / 32] Q4_0 blocks of 18 bytes
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };  // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [slices][n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of W (SG_M * CM * TM a workgroup, workgroup x)
    uint cols;     // columns of W, a multiple of 32
    uint n;        // tokens (CN * TN a workgroup, workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
    uint k_slice;  // columns of a slice (workgroup z), a multiple of the stage (32 KS)
    uint slice;    // floats from slice z's y to slice z + 1's (unsplit: 0)
} pc;

const uint STAGE = 32u * KS;      // columns of x a stage holds
const uint BN = CN * TN;          // tokens of a workgroup
const uint RM = CM * TM;          // rows a subgroup owns
const uint SXS = STAGE / 4u + 2u; // shared row stride of x in f16vec4 (rows spread over banks)
const uint SKW = 32u / 4u + 2u;   // shared row stride of a block of W in f16vec4 (80 bytes)
const uint TASKS = (RM * 2u + SG_MIN - 1u) / SG_MIN; // half blocks of a row a lane decodes a block, at most

shared f16vec4 xs[BN * SXS];      // [BN][SXS] fp16 x4: x[tok0 + t][stage column 4i ..]
shared f16vec4 sw[SG_M * RM * SKW]; // [subgroup][RM][SKW] fp16 x4: its rows' block, dequantized
shared float so[SG_M * TM * TN];  // [subgroup][TN][TM] fp32: an edge matrix on its way to y

#include "common/mul_mat_short_ops.glsl"

// The words of a half block (8 code bytes at the even byte offset q: two words, or three when q
// is not word-aligned) and of its scale d (at byte o).
uvec4 fetch_half(uint o, uint q)
{
    uint i = q >> 2;
    return uvec4(wq[o >> 2], wq[i], wq[i + 1u], (q & 2u) != 0u ? wq[i + 2u] : 0u);
}

// The nibbles at bit `shift` (0: low, 4: high) of the four bytes of c, minus 8, times d, in fp16:
// a product of two fp16 values rounded once, as the reference rounds (q - 8) * d from fp32;
// beyond the fp16 range clamped to +-65504, as mul_mat.coopmat.comp clamps.
f16vec4 nibbles(uint c, uint shift, f16vec2 d)
{
    uint p01 = ((c >> shift) & 0x000Fu) | ((c << (8u - shift)) & 0x000F0000u);         // bytes 0, 1
    uint p23 = ((c >> (16u + shift)) & 0x000Fu) | ((c >> (8u + shift)) & 0x000F0000u); // bytes 2, 3
    f16vec2 v01 = (unpackFloat2x16(p01 | 0x64006400u) - f16vec2(1032.0)) * d; // 1024 + q, less 1032
    f16vec2 v23 = (unpackFloat2x16(p23 | 0x64006400u) - f16vec2(1032.0)) * d;
    return clamp(f16vec4(v01, v23), f16vec4(-65504.0), f16vec4(65504.0));
}

void main()
{
    uint tid = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize;
    uint tok0 = gl_WorkGroupID.y * BN;
    uint tiles = min(CN, (pc.n - tok0 + TN - 1u) / TN); // token matrices holding tokens
    uint k_begin = gl_WorkGroupID.z * pc.k_slice, k_end = min(pc.cols, k_begin + pc.k_slice);
    uint y0 = gl_WorkGroupID.z * pc.slice;
    uint rb = pc.cols / 32u * 18u; // bytes of a row
    uint slot = gl_SubgroupID * RM * SKW;

    uint passes = (SG_M + gl_NumSubgroups - 1u) / gl_NumSubgroups; // the same for every subgroup
    MMS_ACC acc[CM * CN];
    MMS_A ma;
    MMS_B mb;
    uvec4 rs[AHEAD * TASKS]; // this lane's half blocks of the next AHEAD blocks, as read: block i of
                             // a group of AHEAD in rs[i * TASKS ..]

    for (uint pass = 0u; pass < passes; pass++) {
        uint g = gl_SubgroupID + pass * gl_NumSubgroups;
        uint row0 = gl_WorkGroupID.x * SG_M * RM + g * RM;
        bool own = g < SG_M && row0 < pc.rows; // uniform in the subgroup
        MMS_UNROLL for (uint i = 0u; i < CM * CN; i++)
            acc[i] = MMS_ZERO;

// Task t = lane + i * lanes of a block is half h = t % 2 of row t / 2 (of the subgroup's rows):
// its words for the block at column K0 (a multiple of 32) into rs from index R.
#define FETCH_BLOCK(K0, R)                                                                                \
        MMS_UNROLL for (uint i = 0u; i < TASKS; i++) {                                                    \
            uint t = lane + i * lanes, row = min(row0 + t / 2u, pc.rows - 1u);                            \
            uint o = row * rb + ((K0) / 32u) * 18u;                                                       \
            if (t < RM * 2u) rs[(R) + i] = fetch_half(o, o + 2u + 8u * (t % 2u));                         \
        }

// The block at column K0 from rs at index R: its weights into the subgroup's rows of sw (columns 8h
// .. 8h + 7 from the low nibbles of half h, 16 + 8h .. from the high ones), then its products
// with the stage's tokens.
#define BLOCK(K0, R)                                                                                      \
        MMS_UNROLL for (uint i = 0u; i < TASKS; i++) {                                                    \
            uint t = lane + i * lanes, row = row0 + t / 2u, h = t % 2u;                                   \
            if (t >= RM * 2u) continue;                                                                   \
            uint o = min(row, pc.rows - 1u) * rb + ((K0) / 32u) * 18u, q = o + 2u + 8u * h;               \
            uvec4 w = rs[(R) + i];                                                                        \
            uint dh = (w.x >> ((o & 2u) << 3)) & 0xFFFFu;                                                 \
            f16vec2 d = unpackFloat2x16(dh | (dh << 16));                                                 \
            uint c0 = (q & 2u) != 0u ? (w.y >> 16) | (w.z << 16) : w.y;                                   \
            uint c1 = (q & 2u) != 0u ? (w.z >> 16) | (w.w << 16) : w.z;                                   \
            bool live = row < pc.rows;                                                                    \
            uint at = slot + (t / 2u) * SKW + 2u * h;                                                     \
            sw[at] = live ? nibbles(c0, 0u, d) : f16vec4(0.0);                                            \
            sw[at + 1u] = live ? nibbles(c1, 0u, d) : f16vec4(0.0);                                       \
            sw[at + 4u] = live ? nibbles(c0, 4u, d) : f16vec4(0.0);                                       \
            sw[at + 5u] = live ? nibbles(c1, 4u, d) : f16vec4(0.0);                                       \
        }                                                                                                 \
        subgroupMemoryBarrierShared();                                                                    \
        subgroupBarrier();                                                                                \
        MMS_UNROLL for (uint kk = 0u; kk < 32u; kk += TK) {                                               \
            MMS_UNROLL for (uint j = 0u; j < CN; j++) {                                                   \
                if (j >= tiles) continue;                                                                 \
                MMS_LOAD_B(mb, j * TN * SXS + ((K0) - k0 + kk) / 4u);                                     \
                MMS_UNROLL for (uint m = 0u; m < CM; m++) {                                               \
                    MMS_LOAD_A(ma, slot + m * TM * SKW + kk / 4u);                                        \
                    acc[m * CN + j] = MMS_MUL_ADD(ma, mb, acc[m * CN + j]);                               \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        subgroupBarrier(); /* every lane has read sw before the next block overwrites it */

        if (own) {
            MMS_UNROLL for (uint a = 0u; a < AHEAD; a++) // (not i: the macros' own loops use i)
                if (k_begin + 32u * a < k_end) FETCH_BLOCK(k_begin + 32u * a, a * TASKS)
        }
        for (uint k0 = k_begin; k0 < k_end; k0 += STAGE) {
            // the stage's x in fp16 (zeros past the tokens and the columns), once the previous
            // stage's products have read theirs
            barrier();
            for (uint v = tid; v < BN * (STAGE / 4u); v += WORKGROUP) {
                uint t = v / (STAGE / 4u), c = k0 + (v % (STAGE / 4u)) * 4u;
                vec4 x = tok0 + t < pc.n && c < k_end ? xv[((tok0 + t) * pc.cols + c) >> 2] : vec4(0.0);
                xs[t * SXS + v % (STAGE / 4u)] = f16vec4(clamp(x, vec4(-65504.0), vec4(65504.0)));
            }
            barrier();
            if (!own) continue;
            // groups of AHEAD blocks (a stage holds whole groups): block i of a group from its set,
            // which then reads the block AHEAD blocks on
            for (uint kb = k0; kb < k0 + STAGE && kb < k_end; kb += 32u * AHEAD) {
                MMS_UNROLL for (uint a = 0u; a < AHEAD; a++) {
                    uint col = kb + 32u * a, set = a * TASKS;
                    if (col >= k_end) break; // uniform
                    BLOCK(col, set)
                    if (col + 32u * AHEAD < k_end) FETCH_BLOCK(col + 32u * AHEAD, set)
                }
            }
        }
#undef FETCH_BLOCK
#undef BLOCK
        if (!own) continue;
        // y[tok][row] is the accumulator (row, tok) stored column-major with stride y_stride
        MMS_UNROLL for (uint m = 0u; m < CM; m++) {
            MMS_UNROLL for (uint j = 0u; j < CN; j++) {
                uint row = row0 + m * TM, tok = tok0 + j * TN;
                if (row >= pc.rows || tok >= pc.n) continue;
                if (row + TM <= pc.rows && tok + TN <= pc.n) {
                    MMS_STORE(acc[m * CN + j], y, y0 + tok * pc.y_stride + row, pc.y_stride);
                    continue;
                }
                // an edge matrix: through this subgroup's slot of so, then the part inside
                uint e0 = gl_SubgroupID * TM * TN;
                MMS_STORE(acc[m * CN + j], so, e0, TM);
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
