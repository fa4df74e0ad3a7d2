// The body of the cooperative-matrix matmul (shaders/mul_mat.coopmat.comp describes it), shared
// with its scalar emulation (shaders/mul_mat_emu.f16.comp): the including shader enables the
// extensions, and defines MMC_EMULATE for the emulation; common/mul_mat_coopmat_ops.glsl spells
// the matrix operations either way. Loops over the matrices are unrolled (MMC_UNROLL): an array
// of cooperative matrices indexed at run time would leave the registers.
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
#ifdef MMC_EMULATE
layout(constant_id = MMC_SPEC_F16_DECODE) const uint F16_DECODE = 0; // 1: Q4_0 runs in packed fp16
#elif defined(MMC_F16_DECODE)
const uint F16_DECODE = 1u; // mul_mat_decode.coopmat.comp
#endif

layout(std430, binding = 0) readonly buffer W { uint wq[]; };     // [rows][row bytes] GGUF blocks
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; };  // the same (bound on 16 bytes), 16 bytes a load
layout(std430, binding = 0) readonly buffer W2 { uvec2 wq2[]; };  // and 8
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };     // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };    // [slices][n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of W (tiles of BM in workgroup x)
    uint cols;     // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;        // tokens (tiles of BN in workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
    uint k_slice;  // columns of a slice (workgroup z), a multiple of BK; cols when unsplit
    uint slice;    // floats from slice z's y to slice z + 1's (unsplit: 0)
} pc;

#define DQ_W16 // the float types' runs and the K-quants' pieces 16 or 8 bytes a load
#include "common/dequant.glsl"

const uint BK = MMC_BK;
const uint BM = SG_M * CM * TM, BN = SG_N * CN * TN;
const uint WARPS = SG_M * SG_N;
const uint SK = BK / 4u + 2u; // shared row stride in f16vec4 (80 bytes: 16-byte aligned, rows spread over banks)

shared f16vec4 sw[BM * SK];          // [BM][SK] fp16 x4: W[row0 + r][k0 + 4i ..], dequantized
shared f16vec4 sx[BN * SK];          // [BN][SK] fp16 x4: x[tok0 + j][k0 + 4i ..]
shared float so[WARPS * TM * TN];    // [warp tile][TN][TM] fp32: an edge matrix on its way to y

#include "common/mul_mat_coopmat_ops.glsl"

const uint W_RUNS = (BM * (BK / 8u) + WORKGROUP - 1u) / WORKGROUP; // runs of 8 weights a thread loads per step
const uint X_VECS = (BN * (BK / 4u) + WORKGROUP - 1u) / WORKGROUP; // vec4s of x a thread loads per step

#if defined(MMC_EMULATE) || defined(MMC_F16_DECODE)
// Q4_0 in the short batches' build, in tiles of 32 tokens, reads a step's blocks as whole words,
// consecutive threads on consecutive words (a row's 18-byte block lies in Q4_RAW_WORDS words),
// and stages them in shared memory, where each thread then takes its run's words: fewer loads
// than a thread a run reading the words around its run, 8 rows a load apart. On the H200 it
// took 7-11% off at 24 and 32 tokens, and added 5% at 16 and 20-30% at 64 in tiles of 2 x 2
// matrices (forward-kernels.md, "Short batches").
const bool Q4_RAW = TYPE == GGML_Q4_0 && F16_DECODE != 0u && BN == MMC_Q4_RAW_TOKENS;
const uint Q4_RAW_WORDS = MMC_Q4_RAW_WORDS;                                    // words a row's block lies in
const uint RAW_LOADS = (BM * Q4_RAW_WORDS + WORKGROUP - 1u) / WORKGROUP;      // words a thread loads a step
// [BM][5] the step's W words of each row, from the word that holds its block's start (sized by
// Q4_RAW: declared whole for every build, it made the 16-token products 9% slower on the H200)
shared uint sraw[Q4_RAW ? BM * Q4_RAW_WORDS : 1u];

// Reads the Q4_RAW words of the step at column KR into wr[0 .. RAW_LOADS - 1]: word q = tid + m *
// WORKGROUP of the step is word q % 5 of row q / 5's block (rows past the matrix, and threads past
// the step, read its last row). Each of the 5 words holds bytes of the block, so none lies past a
// binding that holds W's bytes rounded up to words.
#define FETCH_W_RAW(KR, wr)                                                                               \
    if (Q4_RAW) {                                                                                         \
        MMC_UNROLL for (uint m = 0u; m < RAW_LOADS; m++) {                                                \
            uint q = tid + m * WORKGROUP, r = min(q / Q4_RAW_WORDS, BM - 1u);                             \
            uint row = min(row0 + r, pc.rows - 1u), c = min(KR, pc.cols - BK);                            \
            wr[m] = wq[((row * rb + (c / be) * bb) >> 2) + q % Q4_RAW_WORDS];                             \
        }                                                                                                 \
    }
#define IF_RUNS if (!Q4_RAW) // the runs' own reads where the words are not staged

// The staged words into sraw.
#define STORE_RAW(wr)                                                                                     \
    MMC_UNROLL for (uint m = 0u; m < RAW_LOADS; m++) {                                                    \
        uint q = tid + m * WORKGROUP;                                                                     \
        if (q < BM * Q4_RAW_WORDS) sraw[q] = wr[m];                                                       \
    }

// The runs of the step at column K0 from the words of their rows in sraw, as dq_fetch8 would have
// read them from memory, decoded in packed fp16 into sw.
#define DECODE_RAW(K0)                                                                                    \
    MMC_UNROLL for (uint i = 0u; i < W_RUNS; i++) {                                                       \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), e = (t % (BK / 8u)) * 8u;                        \
        if (r < BM) {                                                                                     \
            uint row = min(row0 + r, pc.rows - 1u), c = min(K0, pc.cols - BK);                            \
            uint blk = row * rb + (c / be) * bb, o = blk + 2u + (e & 15u);                                \
            uint w = r * Q4_RAW_WORDS, rel = (o >> 2) - (blk >> 2), raw[DQ_RAW];                          \
            MMC_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = 0u;                                    \
            raw[0] = sraw[w];                                                                             \
            raw[1] = sraw[w + rel];                                                                       \
            raw[2] = sraw[w + rel + 1u];                                                                  \
            raw[3] = (o & 2u) != 0u ? sraw[w + min(rel + 2u, Q4_RAW_WORDS - 1u)] : 0u;                    \
            f16vec4 h0, h1;                                                                               \
            q4_0_run_f16(raw, e, blk & 3u, h0, h1);                                                       \
            bool live = row0 + r < pc.rows;                                                               \
            sw[r * SK + e / 4u] = live ? h0 : f16vec4(0.0);                                               \
            sw[r * SK + e / 4u + 1u] = live ? h1 : f16vec4(0.0);                                          \
        }                                                                                                 \
    }
#else
#define FETCH_W_RAW(KR, wr)
#define IF_RUNS
#endif

// v in fp16, rounded to nearest, values beyond the fp16 range clamped to +-65504 (not infinite:
// an infinite input would turn a product with a zero into NaN).
f16vec4 to_f16(vec4 v) { return f16vec4(clamp(v, vec4(-65504.0), vec4(65504.0))); }

#if defined(MMC_EMULATE) || defined(MMC_F16_DECODE)
// The nibbles at bit `shift` (0: low, 4: high) of the four bytes of c, minus 8, times d, in fp16:
// a product of two fp16 values rounded once, which is the fp32 product (exact) rounded to fp16 as
// to_f16 rounds dq_decode8's value; beyond the fp16 range clamped to +-65504 as to_f16 clamps.
f16vec4 q4_0_nibbles(uint c, uint shift, f16vec2 d)
{
    uint p01 = ((c >> shift) & 0x000Fu) | ((c << (8u - shift)) & 0x000F0000u);         // bytes 0, 1
    uint p23 = ((c >> (16u + shift)) & 0x000Fu) | ((c >> (8u + shift)) & 0x000F0000u); // bytes 2, 3
    f16vec2 v01 = (unpackFloat2x16(p01 | 0x64006400u) - f16vec2(1032.0)) * d; // 1024 + q, less 1032
    f16vec2 v23 = (unpackFloat2x16(p23 | 0x64006400u) - f16vec2(1032.0)) * d;
    return clamp(f16vec4(v01, v23), f16vec4(-65504.0), f16vec4(65504.0));
}

// A Q4_0 run of 8 weights (element e of its block, from the words dq_fetch8 read at a block
// whose byte offset is a mod 4) in fp16 by packed fp16 arithmetic, the values dq_decode8 and
// to_f16 give: fewer instructions, which a short batch's products wait on.
void q4_0_run_f16(uint r[DQ_RAW], uint e, uint a, out f16vec4 h0, out f16vec4 h1)
{
    bool odd = (a & 2u) != 0u; // the block starts at a word's second half: d there, the codes aligned
    uint dh = odd ? r[0] >> 16 : r[0] & 0xFFFFu;
    f16vec2 d = unpackFloat2x16(dh | (dh << 16));
    uint c0 = odd ? r[1] : (r[1] >> 16) | (r[2] << 16); // the run's 8 code bytes (e & 15 ..)
    uint c1 = odd ? r[2] : (r[2] >> 16) | (r[3] << 16);
    uint shift = e >= 16u ? 4u : 0u; // y[j + 16] is byte j's high nibble
    h0 = q4_0_nibbles(c0, shift, d);
    h1 = q4_0_nibbles(c1, shift, d);
}
#endif

// A step's tiles are read in two halves, so that later steps' global reads are in flight during
// the current step's products: a step is read two steps before it is stored, into one of two
// register sets. FETCH_STEP(K0, wr, wa, xr) reads this thread's part of the step at column K0
// into the set (wr, wa, xr), as stored: run t = tid + i * WORKGROUP of W (row t / 4, columns
// 8 (t % 4) ..) as the words dq_fetch8 reads (wr, with its element, byte alignment and whether
// it lies inside the matrix in wa), vec4 t of x (token t / 8, columns 4 (t % 8) ..; zeros
// outside) in xr; with Q4_RAW, wr holds instead the words of the step after K0 (FETCH_W_RAW).
// STORE_STEP(wr, wa, xr) dequantizes a set, rounds it to fp16 and writes sw and sx. (Macros: the
// arrays' sizes are specialization constants, which function parameters do not take.)
#define FETCH_STEP(K0, wr, wa, xr)                                                                        \
    FETCH_W_RAW((K0) + BK, wr)                                                                            \
    IF_RUNS MMC_UNROLL for (uint i = 0u; i < W_RUNS; i++) {                                               \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), col = (K0) + (t % (BK / 8u)) * 8u;               \
        bool live = r < BM && row0 + r < pc.rows && col < pc.cols;                                        \
        uint row = min(row0 + r, pc.rows - 1u), c = min(col, pc.cols - 8u);                               \
        uint blk = row * rb + (c / be) * bb, raw[DQ_RAW];                                                 \
        dq_fetch8(blk, c % be, raw);                                                                      \
        MMC_UNROLL for (uint k = 0u; k < DQ_RAW; k++) wr[i * DQ_RAW + k] = raw[k];                        \
        wa[i] = (c % be) | ((blk & 3u) << 16) | (live ? 1u << 31 : 0u);                                   \
    }                                                                                                     \
    MMC_UNROLL for (uint i = 0u; i < X_VECS; i++) {                                                       \
        uint t = tid + i * WORKGROUP, j = t / (BK / 4u), col = (K0) + (t % (BK / 4u)) * 4u;               \
        bool live = j < BN && tok0 + j < pc.n && col < pc.cols;                                           \
        vec4 x = xv[(min(tok0 + j, pc.n - 1u) * pc.cols + min(col, pc.cols - 4u)) >> 2];                  \
        xr[i] = live ? x : vec4(0.0);                                                                     \
    }

// A set's x rounded to fp16 into sx.
#define STORE_X(xr)                                                                                       \
    MMC_UNROLL for (uint i = 0u; i < X_VECS; i++) {                                                       \
        uint t = tid + i * WORKGROUP, j = t / (BK / 4u);                                                  \
        if (j < BN) sx[j * SK + t % (BK / 4u)] = to_f16(xr[i]);                                           \
    }

// STORE_STEP in the short batches' build and the emulation: Q4_0 runs by packed fp16
// arithmetic where F16_DECODE says so. The prefill kernel keeps the plain form, whose SPIR-V
// has no trace of the other: the mere option of it made long batches 5-7% slower on the H200.
#if defined(MMC_EMULATE) || defined(MMC_F16_DECODE)
#define STORE_STEP(wr, wa, xr)                                                                            \
    MMC_UNROLL for (uint i = 0u; i < W_RUNS; i++) {                                                       \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), kq = (t % (BK / 8u)) * 2u, raw[DQ_RAW];          \
        MMC_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = wr[i * DQ_RAW + k];                        \
        f16vec4 h0, h1;                                                                                   \
        if (TYPE == GGML_Q4_0 && F16_DECODE != 0u) {                                                      \
            q4_0_run_f16(raw, wa[i] & 0xFFFFu, (wa[i] >> 16) & 3u, h0, h1);                               \
        } else {                                                                                          \
            float w[8];                                                                                   \
            dq_decode8(raw, wa[i] & 0xFFFFu, (wa[i] >> 16) & 3u, w);                                      \
            h0 = to_f16(vec4(w[0], w[1], w[2], w[3]));                                                    \
            h1 = to_f16(vec4(w[4], w[5], w[6], w[7]));                                                    \
        }                                                                                                 \
        bool live = (wa[i] >> 31) != 0u;                                                                  \
        if (r < BM) {                                                                                     \
            sw[r * SK + kq] = live ? h0 : f16vec4(0.0);                                                   \
            sw[r * SK + kq + 1u] = live ? h1 : f16vec4(0.0);                                              \
        }                                                                                                 \
    }                                                                                                     \
    STORE_X(xr)
#else
#define STORE_STEP(wr, wa, xr)                                                                            \
    MMC_UNROLL for (uint i = 0u; i < W_RUNS; i++) {                                                       \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), kq = (t % (BK / 8u)) * 2u, raw[DQ_RAW];          \
        MMC_UNROLL for (uint k = 0u; k < DQ_RAW; k++) raw[k] = wr[i * DQ_RAW + k];                        \
        float w[8];                                                                                       \
        dq_decode8(raw, wa[i] & 0xFFFFu, (wa[i] >> 16) & 3u, w);                                          \
        bool live = (wa[i] >> 31) != 0u;                                                                  \
        if (r < BM) {                                                                                     \
            sw[r * SK + kq] = live ? to_f16(vec4(w[0], w[1], w[2], w[3])) : f16vec4(0.0);                 \
            sw[r * SK + kq + 1u] = live ? to_f16(vec4(w[4], w[5], w[6], w[7])) : f16vec4(0.0);            \
        }                                                                                                 \
    }                                                                                                     \
    STORE_X(xr)
#endif

// The warp tile's products over the step in sw and sx (a subgroup without a tile skips them).
#define PRODUCTS_STEP()                                                                                   \
    if (own) {                                                                                            \
        MMC_UNROLL for (uint kk = 0u; kk < BK; kk += TK) {                                                \
            MMC_UNROLL for (uint i = 0u; i < CM; i++)                                                     \
                MMC_LOAD_A(ma[i], (wm + i * TM) * SK + kk / 4u);                                          \
            MMC_UNROLL for (uint j = 0u; j < CN; j++) {                                                   \
                MMC_LOAD_B(mb, (wn + j * TN) * SK + kk / 4u);                                             \
                MMC_UNROLL for (uint i = 0u; i < CM; i++) acc[i * CN + j] = MMC_MUL_ADD(ma[i], mb, acc[i * CN + j]); \
            }                                                                                             \
        }                                                                                                 \
    }

// One step from a register set: store it, read the step at column K_NEXT into the same set (past
// the slice: not stored; past the matrix: zeros), then the products. Q4_RAW: the step's W words
// are in sraw (stored the step before), decoded into sw before the barrier; the set's words,
// the next step's, go to sraw after it.
#if defined(MMC_EMULATE) || defined(MMC_F16_DECODE)
#define STEP(K_NEXT, wr, wa, xr)                                                                          \
    if (Q4_RAW) {                                                                                         \
        DECODE_RAW((K_NEXT) - 2u * BK)                                                                    \
        STORE_X(xr)                                                                                       \
        barrier();                                                                                        \
        STORE_RAW(wr)                                                                                     \
    } else {                                                                                              \
        STORE_STEP(wr, wa, xr)                                                                            \
        barrier();                                                                                        \
    }                                                                                                     \
    FETCH_STEP(K_NEXT, wr, wa, xr)                                                                        \
    PRODUCTS_STEP()                                                                                       \
    barrier();
#else
#define STEP(K_NEXT, wr, wa, xr)                                                                          \
    STORE_STEP(wr, wa, xr)                                                                                \
    barrier();                                                                                            \
    FETCH_STEP(K_NEXT, wr, wa, xr)                                                                        \
    PRODUCTS_STEP()                                                                                       \
    barrier();
#endif

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    // slice z sums columns k_begin..k_end-1 into its own y (split: partial sums the host adds up)
    uint k_begin = gl_WorkGroupID.z * pc.k_slice, k_end = min(pc.cols, k_begin + pc.k_slice);
    uint y0 = gl_WorkGroupID.z * pc.slice;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    uint passes = (WARPS + gl_NumSubgroups - 1u) / gl_NumSubgroups; // the same for every subgroup

    uint wr[W_RUNS * DQ_RAW], wr2[W_RUNS * DQ_RAW]; // this thread's runs of W and vec4s of x of the next
    uint wa[W_RUNS], wa2[W_RUNS];                      // two steps, as read: steps k, k + 2 BK, ... in the
    vec4 xr[X_VECS], xr2[X_VECS];                      // first set, k + BK, k + 3 BK, ... in the second
    MMC_ACC acc[CM * CN];
    MMC_A ma[CM];
    MMC_B mb;

    for (uint pass = 0u; pass < passes; pass++) {
        uint wt = gl_SubgroupID + pass * gl_NumSubgroups; // this subgroup's warp tile (none when >= WARPS)
        bool own = wt < WARPS;
        uint wm = (wt % SG_M) * CM * TM, wn = (wt / SG_M) * CN * TN; // its first row and token in the tile
        MMC_UNROLL for (uint i = 0u; i < CM * CN; i++)
            acc[i] = MMC_ZERO;
#if defined(MMC_EMULATE) || defined(MMC_F16_DECODE)
        if (Q4_RAW) { // the first step's words into sraw (the sets hold the words a step ahead of x)
            FETCH_W_RAW(k_begin, wr)
            STORE_RAW(wr)
            barrier();
        }
#endif
        FETCH_STEP(k_begin, wr, wa, xr)
        FETCH_STEP(k_begin + BK, wr2, wa2, xr2)
        // two steps a round, each step's reads two steps ahead of their use (a short batch's
        // products are too brief to cover a read's latency in one step); the sets alternate by
        // the round's halves rather than by a copy, which would wait for the reads it copies
        for (uint k0 = k_begin; k0 < k_end; k0 += 2u * BK) {
            STEP(k0 + 2u * BK, wr, wa, xr)
            if (k0 + BK >= k_end) break; // uniform
            STEP(k0 + 3u * BK, wr2, wa2, xr2)
        }
        if (own) {
            // y[tok][row] is the accumulator (row, tok) stored column-major with stride y_stride
            MMC_UNROLL for (uint i = 0u; i < CM; i++) {
                MMC_UNROLL for (uint j = 0u; j < CN; j++) {
                    uint row = row0 + wm + i * TM, tok = tok0 + wn + j * TN;
                    if (row >= pc.rows || tok >= pc.n) continue;
                    if (row + TM <= pc.rows && tok + TN <= pc.n) {
                        MMC_STORE(acc[i * CN + j], y, y0 + tok * pc.y_stride + row, pc.y_stride);
                        continue;
                    }
                    // an edge matrix: through this warp tile's slot of so, then the part inside
                    MMC_STORE(acc[i * CN + j], so, wt * TM * TN, TM);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) {
                        uint r = row + e % TM, t = tok + e / TM;
                        if (r < pc.rows && t < pc.n) y[y0 + t * pc.y_stride + r] = so[wt * TM * TN + e];
                    }
                    subgroupBarrier(); // the slot is read before the next edge matrix overwrites it
                }
            }
        }
    }
}
