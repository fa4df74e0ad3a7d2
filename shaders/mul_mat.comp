#version 450
// Dequantizing matrix-matrix product (prefill): y[t][r] = sum_c W[r][c] * x[t][c] for the
// weight matrix W [rows][cols] in its raw GGUF block layout and n tokens at once.
//
// A workgroup computes a BM x BN tile (64 rows x WORKGROUP / 4 tokens: 64 x 64 at 256 threads).
// Per step of BK = 32 columns it dequantizes the W tile (runs of 8 elements, four threads on the
// four runs of a 32-element block) and copies the x tile into shared memory, both transposed
// ([k][row], [k][token]) so that a thread's 4 rows and 4 tokens of one k are two 16-byte reads;
// then each thread accumulates its 4 x 4 register tile in fp32, in column order: 16 FMAs per two
// shared-memory reads (a 4 x 2 tile reads 6 words for 8). Each step's global reads are issued
// before the FMAs of the step before and held in registers as read; they are dequantized and
// stored after those FMAs.
// No subgroup operation; any power-of-two WORKGROUP from 32 to 256.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 256; // threads: 32, 64, 128 or 256
layout(constant_id = 1) const uint TYPE = 0;        // GGML type id of W

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;   // rows of W (tiles of BM in workgroup x)
    uint cols;   // columns of W, a multiple of the block size (8 for F32/F16/BF16)
    uint n;      // tokens (tiles of BN in workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]: rows, more for a row range of a wider y
} pc;

#include "common/dequant.glsl"

const uint TM = 4u, TN = 4u;           // rows and tokens per thread
const uint BM = 64u, BK = 32u;         // rows per tile, columns per step
const uint BN = WORKGROUP / 4u;        // tokens per tile: (BM / TM) * (BN / TN) = WORKGROUP threads
const uint SW = BM + 4u;               // shared row stride of sw (a multiple of 4: aligned vec4 reads)
const uint SX = BN + 4u;               // of sx

// (runtime/ops.c's MUL_MAT_SHARED_BYTES computes these two sizes for its check)
shared vec4 sw[BK * SW / 4u]; // [BK][SW] floats: element (k, r) = W[row0 + r][k0 + k], dequantized
shared vec4 sx[BK * SX / 4u]; // [BK][SX] floats: element (k, j) = x[tok0 + j][k0 + k]

// Float i of a vec4 shared array (the tiles are written a float at a time, read a vec4 at a time).
#define SH_FLOAT(a, i) a[(i) >> 2][(i) & 3u]

const uint W_RUNS = BM * (BK / 8u) / WORKGROUP;  // runs of 8 weights a thread loads per step (>= 1)
const uint X_VECS = BN * (BK / 4u) / WORKGROUP;   // vec4s of x a thread loads per step (2)

// A step's tiles are read in two halves, so that the next step's global reads are in flight
// while the current step is multiplied: FETCH_STEP(K0) reads this thread's part of the step at
// column K0 into registers as stored: run t = tid + i * WORKGROUP of W (row t / 4, columns
// 8 (t % 4) ..) as the words dq_fetch8 reads (wr; its element, byte alignment and whether it
// lies inside the matrix in wa), vec4 t of x (token t / 8, columns 4 (t % 8) ..; zeros outside)
// in xx. STORE_STEP dequantizes the runs and writes both tiles, transposed. (Macros: the
// arrays' sizes are specialization constants, which function parameters do not take.)
#define FETCH_STEP(K0)                                                                                    \
    for (uint i = 0u; i < W_RUNS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), col = (K0) + (t % (BK / 8u)) * 8u;               \
        bool live = row0 + r < pc.rows && col < pc.cols;                                                  \
        uint row = min(row0 + r, pc.rows - 1u), c = min(col, pc.cols - 8u);                               \
        uint blk = row * rb + (c / be) * bb, raw[DQ_RAW];                                                 \
        dq_fetch8(blk, c % be, raw);                                                                      \
        for (uint k = 0u; k < DQ_RAW; k++) wr[i * DQ_RAW + k] = raw[k];                                   \
        wa[i] = (c % be) | ((blk & 3u) << 16) | (live ? 1u << 31 : 0u);                                   \
    }                                                                                                     \
    for (uint i = 0u; i < X_VECS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, j = t / (BK / 4u), col = (K0) + (t % (BK / 4u)) * 4u;               \
        bool live = tok0 + j < pc.n && col < pc.cols;                                                     \
        vec4 x = xv[(min(tok0 + j, pc.n - 1u) * pc.cols + min(col, pc.cols - 4u)) >> 2];                  \
        xx[i] = live ? x : vec4(0.0);                                                                     \
    }

#define STORE_STEP()                                                                                      \
    for (uint i = 0u; i < W_RUNS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, r = t / (BK / 8u), kr = (t % (BK / 8u)) * 8u, raw[DQ_RAW];          \
        for (uint k = 0u; k < DQ_RAW; k++) raw[k] = wr[i * DQ_RAW + k];                                   \
        float w[8];                                                                                       \
        dq_decode8(raw, wa[i] & 0xFFFFu, (wa[i] >> 16) & 3u, w);                                          \
        bool live = (wa[i] >> 31) != 0u;                                                                  \
        for (uint k = 0u; k < 8u; k++) SH_FLOAT(sw, (kr + k) * SW + r) = live ? w[k] : 0.0;               \
    }                                                                                                     \
    for (uint i = 0u; i < X_VECS; i++) {                                                                  \
        uint t = tid + i * WORKGROUP, j = t / (BK / 4u), kv = (t % (BK / 4u)) * 4u;                       \
        for (uint k = 0u; k < 4u; k++) SH_FLOAT(sx, (kv + k) * SX + j) = xx[i][k];                        \
    }

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    uint be = dq_block_elems(), bb = dq_block_bytes(), rb = dq_row_bytes(pc.cols);
    uint tr = tid % (BM / TM), tt = tid / (BM / TM); // this thread: rows 4 tr .. 4 tr + 3, tokens 4 tt .. 4 tt + 3
    float acc[TM * TN];                               // [TM][TN]
    for (uint i = 0u; i < TM * TN; i++) acc[i] = 0.0;

    uint wr[W_RUNS * DQ_RAW]; // this thread's runs of W and vec4s of x of the next step, as read
    uint wa[W_RUNS];
    vec4 xx[X_VECS];
    FETCH_STEP(0u)
    for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
        STORE_STEP() // dequantized, into the shared tiles, transposed
        barrier();
        FETCH_STEP(k0 + BK) // past the end: zeros
        for (uint k = 0u; k < BK; k++) {
            vec4 a = sw[(k * SW) / 4u + tr], b = sx[(k * SX) / 4u + tt]; // TM = TN = 4: one vec4 each
            for (uint i = 0u; i < TM; i++)
                for (uint j = 0u; j < TN; j++) acc[i * TN + j] += a[i] * b[j];
        }
        barrier();
    }
    for (uint j = 0u; j < TN; j++) {
        uint tok = tok0 + TN * tt + j;
        for (uint i = 0u; i < TM; i++) {
            uint row = row0 + TM * tr + i;
            if (row < pc.rows && tok < pc.n) y[tok * pc.y_stride + row] = acc[i * TN + j];
        }
    }
}
