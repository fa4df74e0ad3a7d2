#version 450
// Dequantizing matrix-vector product (decode) for the block types, W and x staged through
// shared memory: y[t][r] = sum_c W[r][c] * x[t][c], as mul_mat_vec.comp (same units, same
// decoding: common/dequant_unit.glsl), with the memory traffic reshaped.
//
// mul_mat_vec.comp reads each unit's x (128 bytes) per thread from memory, so that a warp-wide
// vec4 load of x touches 32 cache lines, and a unit's weights as 4-byte loads 18..34 bytes
// apart between threads: on NVIDIA the L1 wavefronts, not DRAM, set its speed. Here a pass of
// a workgroup covers WORKGROUP units (WORKGROUP * 32 columns) of ROWS rows:
//   1. W: the ROWS row pieces (whole blocks, contiguous in memory) are copied to shared
//      memory with 16-byte loads, adjacent threads at adjacent addresses (fully coalesced,
//      ROWS * bytes / (16 * WORKGROUP) independent loads per thread in flight);
//   2. x: the pass's columns are copied with coalesced vec4 loads into one 36-float slot per
//      unit (the unit's lo then hi piece, 4 floats of padding so that 8 threads reading
//      slots t..t+7 hit different banks);
//   3. thread t decodes unit mv_staged_unit(t) of every row from shared memory (the decoding
//      functions read `wq`, which is the shared copy here), x from its slot once for all rows.
// For Q4_0 and Q8_0 (18 / 34 bytes: 4.5 / 8.5 words) a warp takes every other unit, so the 32
// units' words start 9 / 17 words apart: distinct banks.
// Needs (host checks, else it records mul_mat_vec.comp): the binding and every row on 16
// bytes, WORKGROUP >= 64 (a pass is whole blocks of a multiple of 16 bytes), the shared
// arrays within the device limit. One shared-memory tree reduction at the end (no
// subgroup-size assumption). Rows are spread over workgroups x and y (x < 65536).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 64; // threads, a power of two in 64..256, >= ROWS
layout(constant_id = 1) const uint TYPE = 2;       // GGML type id of W (a block type)
layout(constant_id = 2) const uint ROWS = 4;       // rows per workgroup

// GGML type ids as dequant.glsl numbers them (needed here for the shared-array sizes)
const bool MV_KTYPE = TYPE == 12u || TYPE == 13u || TYPE == 14u;                  // Q4_K, Q5_K, Q6_K
const uint MV_BLOCK_BYTES = TYPE == 2u ? 18u : TYPE == 3u ? 20u : TYPE == 8u ? 34u
                          : TYPE == 12u ? 144u : TYPE == 13u ? 176u : 210u;
const uint MV_PASS_BYTES = (MV_KTYPE ? WORKGROUP / 8u : WORKGROUP) * MV_BLOCK_BYTES; // one row
const uint MV_PASS_Q = MV_PASS_BYTES / 16u;  // 16-byte pieces of one row per pass
const uint MV_STAGE_Q = ROWS * MV_PASS_Q;    // ... of all ROWS rows

layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; }; // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };    // [n][cols] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][rows] fp32

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of the block size
    uint n;      // tokens (= workgroups in z)
} pc;

shared uint wq[MV_STAGE_Q * 4u];    // [ROWS][pass bytes / 4] this pass's blocks of each row
shared vec4 xs[WORKGROUP * 9u];     // [slot][9]: a unit's x, lo piece, hi piece, padding
shared float red[WORKGROUP * ROWS]; // [ROWS][WORKGROUP] partial sums

#include "common/dequant.glsl"
#include "common/dequant_unit.glsl"

// Unit (of the pass) that thread / slot t takes, and its inverse: for Q4_0 and Q8_0 lanes of
// 32 take the even or the odd units of 64 (bank-conflict-free word reads).
bool mv_interleave() { return TYPE == GGML_Q4_0 || TYPE == GGML_Q8_0; }
uint mv_staged_unit(uint t)
{
    return mv_interleave() ? (t & ~63u) | ((t & 31u) << 1) | ((t >> 5) & 1u) : t;
}
uint mv_staged_slot(uint u)
{
    return mv_interleave() ? (u & ~63u) | ((u & 1u) << 5) | ((u & 63u) >> 1) : u;
}

// Where column c of a pass (a multiple of 4) goes: its unit's slot times 9 plus its vec4 in
// the unit (0..3 lo piece, 4..7 hi piece; the inverse of mv_unit_x / mv_unit_gap).
uint mv_x_index(uint c)
{
    uint u, q;
    if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        uint r = c & 63u; // 64 columns: sub-blocks 2k (lo pieces) and 2k + 1 (hi pieces)
        u = ((c >> 8) << 3) + 2u * ((c >> 6) & 3u) + ((r >> 4) & 1u);
        q = (r >> 5) * 16u + (r & 15u);
    } else if (TYPE == GGML_Q6_K) {
        uint r = c & 127u; // 128 columns: lo pieces 0..63, hi pieces 64..127
        u = ((c >> 8) << 3) + 4u * ((c >> 7) & 1u) + ((r >> 4) & 3u);
        q = (r >> 6) * 16u + (r & 15u);
    } else {
        u = c >> 5;
        q = c & 31u;
    }
    return mv_staged_slot(u) * 9u + (q >> 2);
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint rq = dq_row_bytes(pc.cols) >> 4, nu = pc.cols >> 5, xb = (tok * pc.cols) >> 2;
    uint last = uint(wq4.length()) - 1u;
    uint rbase[ROWS]; // 16-byte index of each row, the last row standing in for rows past the end
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) {
        rbase[i] = min(row0 + i, pc.rows - 1u) * rq;
        acc[i] = 0.0;
    }
    uint lu = mv_staged_unit(tid);

    for (uint p = 0u; p < nu; p += WORKGROUP) {
        uint pq = (p / WORKGROUP) * MV_PASS_Q; // 16-byte index of the pass in a row
        barrier(); // the previous pass's reads of wq and xs are done
        // 1. W: whole passes of every row (past the row's end: the next row's bytes or the
        // buffer's last piece, decoded into units whose sums are dropped)
        for (uint k = 0u; k < (MV_STAGE_Q + WORKGROUP - 1u) / WORKGROUP; k++) {
            uint q = tid + k * WORKGROUP;
            if (q < MV_STAGE_Q) {
                uint i = q / MV_PASS_Q, o = q - i * MV_PASS_Q;
                uvec4 v = wq4[min(rbase[i] + pq + o, last)];
                wq[4u * q] = v.x;
                wq[4u * q + 1u] = v.y;
                wq[4u * q + 2u] = v.z;
                wq[4u * q + 3u] = v.w;
            }
        }
        // 2. x: the pass's WORKGROUP * 32 columns, zero past the row
        for (uint k = 0u; k < 8u; k++) {
            uint j = tid + k * WORKGROUP, c = 32u * p + 4u * j;
            xs[mv_x_index(4u * j)] = c < pc.cols ? xv[xb + (c >> 2)] : vec4(0.0);
        }
        barrier();
        // 3. thread tid: unit lu of every row
        vec4 xl[4], xh[4];
        for (uint k = 0u; k < 4u; k++) {
            xl[k] = xs[9u * tid + k].xzyw;
            xh[k] = xs[9u * tid + 4u + k].xzyw;
        }
        float sl = 0.0, sh = 0.0;
        if (TYPE == GGML_Q4_1 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
            vec4 a = xl[0] + xl[1] + xl[2] + xl[3], b = xh[0] + xh[1] + xh[2] + xh[3];
            sl = (a.x + a.y) + (a.z + a.w);
            sh = (b.x + b.y) + (b.z + b.w);
        }
        bool live = p + lu < nu;
        for (uint i = 0u; i < ROWS; i++) {
            float d = mv_unit_dot(i * MV_PASS_BYTES, lu, xl, xh, sl, sh);
            acc[i] += live ? d : 0.0;
        }
    }

    for (uint i = 0u; i < ROWS; i++) red[i * WORKGROUP + tid] = acc[i];
    barrier();
    for (uint s = WORKGROUP >> 1; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint i = 0u; i < ROWS; i++) red[i * WORKGROUP + tid] += red[i * WORKGROUP + tid + s];
        barrier();
    }
    if (tid < ROWS && row0 + tid < pc.rows) y[tok * pc.rows + row0 + tid] = red[tid * WORKGROUP];
}
