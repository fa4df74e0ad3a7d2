// Product of Q4_0 weights with several tokens of int8-quantized x, a thread a row: y[t][r] = sum
// over blocks b of float(sum_e (q_e - 8) c_e) * (d * xd), W [rows][cols] in its raw GGUF blocks,
// x as common/q8_layout.h ([n][cols] quantized as one vector, made by quantize_q8.comp). The
// includer defines dot4(a, b), the dot product of the four signed bytes of two words
// (common/dot4_scalar.glsl or common/dot4_idot.glsl). The integer of each block is the one
// mul_mat_vec_q8 computes (sum q c - 8 sum c); only the order of the fp32 sums differs.
//
// For decode steps of a few sequences. mul_mat_vec_q8 gives each lane a block of a row, so each
// lane loads its own x block again for every token; here a workgroup owns ROWS rows and thread t
// takes row t % ROWS and slice t / ROWS of the row's blocks (WORKGROUP / ROWS slices, each a
// contiguous range of blocks). The threads of a slice load the same x words, which the hardware
// serves once, and each thread walks its row's blocks in order, turning a block's nibbles into
// signed bytes once for all the workgroup's TOKENS tokens (workgroup z: tokens TOKENS z ..; those
// past n read the last token's x and are not written). At the end the slices' sums go through
// shared memory and are added in slice order. No subgroup operation: any subgroup size.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 256; // threads, a multiple of ROWS
layout(constant_id = 1) const uint TYPE = 2;        // GGML type id of W: Q4_0
layout(constant_id = 2) const uint ROWS = 32;       // rows per workgroup
layout(constant_id = 3) const uint TOKENS = 8;      // tokens per workgroup (workgroup z: a group of them)
layout(constant_id = 4) const uint UNROLL = 2;      // blocks a thread loads at once
layout(constant_id = 5) const uint BIAS = 0;        // 1: y = W x + b (b read from binding 4), as a separate add

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks (rows start 2-byte aligned)
layout(std430, binding = 1) readonly buffer XC { uvec4 xc[]; };  // [n][cols / 32][2] x codes, 16 int8 a uvec4
layout(std430, binding = 2) readonly buffer XS { float xs[]; };  // [n][cols / 32] x scales
layout(std430, binding = 3) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written
layout(std430, binding = 4) readonly buffer B { float bias[]; }; // [rows] fp32 (read with BIAS)

layout(push_constant) uniform Push {
    uint rows;     // rows of W
    uint cols;     // columns of W, a multiple of 32
    uint n;        // tokens
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
} pc;

#include "common/dequant.glsl" // dq_block_bytes, dq_row_bytes

const uint SLICES = WORKGROUP / ROWS;
shared float red[WORKGROUP * TOKENS]; // [slice][row][token] each slice's sums

// Block b of the row at byte rb (2-byte aligned): its fp16 scale d and its 32 codes as signed
// bytes q - 8, words 0..3 elements 0..15 (the low nibbles), words 4..7 elements 16..31. Five
// words cover the 18 bytes at either alignment. Per byte v in 0..15, ((v | 0x80) - 8) ^ 0x80 is
// v - 8 in two's complement with no borrow between bytes.
void load_block(uint rb, uint b, out uint q[8], out float d)
{
    const uint M = 0x0F0F0F0Fu, H = 0x80808080u;
    uint o = rb + b * 18u, i = o >> 2;
    bool odd = (o & 2u) != 0u; // the block starts 2 bytes into a word: its codes are whole words
    uint v[5];
    for (uint k = 0u; k < 5u; k++) v[k] = wq[i + k];
    d = unpackHalf2x16(odd ? v[0] >> 16 : v[0] & 0xFFFFu).x;
    for (uint k = 0u; k < 4u; k++) {
        uint c = odd ? v[k + 1u] : (v[k] >> 16) | (v[k + 1u] << 16);
        q[k] = (((c & M) | H) - 0x08080808u) ^ H;
        q[k + 4u] = ((((c >> 4) & M) | H) - 0x08080808u) ^ H;
    }
}

void main()
{
    uint t = gl_LocalInvocationID.x, rl = t % ROWS, sl = t / ROWS;
    uint r0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint row = min(r0 + rl, pc.rows - 1u); // rows past the end stand in with the last row, unwritten
    uint nb = pc.cols / 32u, rb = row * dq_row_bytes(pc.cols);
    uint b0 = sl * nb / SLICES, b1 = (sl + 1u) * nb / SLICES; // this slice's blocks
    uint tok0 = gl_WorkGroupID.z * TOKENS;
    float acc[TOKENS];
    for (uint j = 0u; j < TOKENS; j++) acc[j] = 0.0;
    for (uint b = b0; b < b1; b += UNROLL) {
        uint q[UNROLL][8];
        float d[UNROLL];
        for (uint u = 0u; u < UNROLL; u++) load_block(rb, min(b + u, b1 - 1u), q[u], d[u]); // past b1: unused
        for (uint u = 0u; u < UNROLL; u++) {
            if (b + u >= b1) break; // uniform over the slice
            for (uint j = 0u; j < TOKENS; j++) {
                uint xb = min(tok0 + j, pc.n - 1u) * nb + b + u;
                uvec4 c0 = xc[2u * xb], c1 = xc[2u * xb + 1u];
                int s = dot4(q[u][0], c0.x) + dot4(q[u][1], c0.y) + dot4(q[u][2], c0.z) + dot4(q[u][3], c0.w) +
                        dot4(q[u][4], c1.x) + dot4(q[u][5], c1.y) + dot4(q[u][6], c1.z) + dot4(q[u][7], c1.w);
                acc[j] += float(s) * (d[u] * xs[xb]);
            }
        }
    }
    for (uint j = 0u; j < TOKENS; j++) red[(sl * ROWS + rl) * TOKENS + j] = acc[j];
    barrier();
    for (uint i = t; i < ROWS * TOKENS; i += WORKGROUP) {
        uint r = i / TOKENS, j = i % TOKENS;
        float s = 0.0;
        for (uint k = 0u; k < SLICES; k++) s += red[(k * ROWS + r) * TOKENS + j];
        if (r0 + r < pc.rows && tok0 + j < pc.n)
            y[(tok0 + j) * pc.y_stride + r0 + r] = BIAS != 0u ? s + bias[r0 + r] : s;
    }
}
