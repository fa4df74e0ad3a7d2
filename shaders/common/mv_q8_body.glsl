// Decode product of Q4_0, Q4_1, Q8_0, Q4_K, Q5_K or Q6_K weights with x quantized to int8
// blocks: y[r] = sum over blocks b of the block term of row r, W [rows][cols] in its raw GGUF
// blocks, x as common/q8_layout.h (codes and fp32 scales per 32 elements, made by
// quantize_q8.comp). The includer defines dot4(a, b), the dot product of the four signed bytes
// of two words (common/dot4_scalar.glsl or common/dot4_idot.glsl).
//
// Block terms, with the block's integer sums exact and the scales multiplied in fp32:
//   Q8_0  float(sum q * c) * (d * xd)
//   Q4_0  float(sum q * c - 8 * sum c) * (d * xd)         (q the nibble 0..15, value (q - 8) d)
//   Q4_1  float(sum q * c) * (d * xd) + float(sum c) * (m * xd)
//   Q4_K, Q5_K, per sub-block of 32 with 6-bit scale sc and min m (q 0..15, Q5_K 0..31):
//         float(sum q * c) * ((d * sc) * xd) - float(sum c) * ((dmin * m) * xd)
//   Q6_K, per half of the x block (16 elements, int8 scale sc; q 0..63, value (q - 32) d sc):
//         float(sum q * c - 32 * sum c) * ((d * sc) * xd), the two halves added
// c the x codes, xd the x block's scale; runtime/ref/matvec_q8_ref.c computes the same.
//
// Work: a workgroup owns GROUP_ROWS consecutive rows; its subgroups take ROWS of them at a time
// (subgroup g rows g * ROWS.., then g + gl_NumSubgroups ..), so any subgroup size works (a
// subgroup of 64 runs more passes, one of 4 leaves some rows to the next subgroup). A task is a
// block of a 32-element type, a 64-element chunk of a Q4_K/Q5_K block (its two sub-blocks share
// the quant bytes) or 32 elements of a Q6_K block. Lane l takes tasks l, l + S, l + 2 S, ...
// (S = gl_SubgroupSize), UNROLL tasks per pass: every weight and x load of a pass is issued
// before the first dot product (the index of a task past the row is clamped and its term
// dropped by a select), and the x codes of a task serve the ROWS rows. Each row's lane sums are
// added by subgroupAdd and written by one lane: no shared memory, no barrier. With SPLIT > 1
// (long rows) SPLIT subgroups share a row group, each taking every SPLIT-th pass, and their sums
// meet in shared memory (one barrier a round; the first subgroup adds them in order and writes).
// Needs subgroup arithmetic (ops.c runs this only where the device has it) and a workgroup that
// is a whole number of subgroups.
//
// Several tokens (batched decode): workgroup z takes TOKENS consecutive tokens. A pass loads its
// weights once, then for each token that token's x blocks, and keeps ROWS x TOKENS sums, so the
// weights are read once per TOKENS tokens; the terms of one token are those of a single-token
// product, summed in the same order.
#ifndef OSCAR_MV_Q8_BODY_GLSL
#define OSCAR_MV_Q8_BODY_GLSL
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;  // threads, a multiple of the subgroup size
layout(constant_id = 1) const uint TYPE = 2;         // GGML type id of W: Q4_0 .. Q6_K (above)
layout(constant_id = 2) const uint ROWS = 2;         // rows a subgroup sums at once
layout(constant_id = 3) const uint UNROLL = 2;       // tasks per lane per pass
layout(constant_id = 4) const uint GROUP_ROWS = 8;   // rows per workgroup, a multiple of ROWS
layout(constant_id = 5) const uint W16 = 0;          // 1: binding W starts on 16 bytes, wq4 may be used
layout(constant_id = 6) const uint TOKENS = 1;       // tokens per workgroup (workgroup z: a group of them)
layout(constant_id = 7) const uint BIAS = 0;         // 1: y = W x + b (b read from binding 4), as a separate add
layout(constant_id = 8) const uint SPLIT = 1;        // subgroups that share a row group, each over every SPLIT-th pass

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; }; // the same, 16 bytes at a time
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

#include "common/dequant.glsl" // the type ids, block sizes and dq_u16

const bool KQ = TYPE == GGML_Q4_K || TYPE == GGML_Q5_K;
const uint QWORDS = TYPE == GGML_Q8_0 ? 8u : 4u; // words of quants per block of a 32-element type
const uint TASK_X = KQ ? 2u : 1u;                // x blocks (32 elements) per task: a K-quant chunk is 64

// What a lane loads of one row for one task: the quants as words (Q8_0: 4 codes a word;
// Q4_0/Q4_1: byte j holds element j low and j + 16 high; Q4_K/Q5_K: byte l holds element l of
// the chunk's first sub-block low and of its second high; Q6_K: the 32 ql bytes holding the
// task's low four bits), the high bits (Q5_K: byte l bit 2c and 2c + 1 for chunk c; Q6_K: the
// 32 qh bytes, two bits for each of four x blocks) and the header (fp16 d in head.x, Q4_1 m in
// its high half; Q4_K/Q5_K: d | dmin << 16, then scales[12] in head.yzw; Q6_K: the two int8
// sub-block scales in head.y).
struct Task {
    uint q[8];
    uint qh[8];
    uvec4 head;
};

// n (4 or 8) words from byte o (even): words i .. i + n - 1 loaded, and word i + n where o is 2
// past a word (the data may end at o + 4n), each then shifted out of a word pair.
void load_words(uint o, uint n, inout uint q[8])
{
    uint i = o >> 2;
    bool high = (o & 2u) != 0u;
    uint v[9];
    for (uint k = 0u; k < n; k++) v[k] = wq[i + k];
    v[n] = high ? wq[i + n] : 0u;
    for (uint k = 0u; k < n; k++) q[k] = high ? (v[k] >> 16) | (v[k + 1u] << 16) : v[k];
}

// Task t of the row at byte rb: block t (32-element types), chunk t & 3 of block t >> 2
// (Q4_K/Q5_K) or x block t & 7 of block t >> 3 (Q6_K). Q4_0, Q8_0 and Q6_K blocks start on 2
// or 0 mod 4 (load_words). Q4_K/Q5_K blocks start on 16 bytes (144 and 176 are multiples of 16),
// so with W16 their pieces are 16-byte loads.
Task load_task(uint rb, uint t)
{
    Task w;
    w.head = uvec4(0u);
    for (uint k = 0u; k < 8u; k++) w.q[k] = w.qh[k] = 0u;
    if (KQ) {
        uint base = rb + (t >> 2) * dq_block_bytes(), qs = base + (TYPE == GGML_Q5_K ? 48u : 16u) + 32u * (t & 3u);
        if (W16 == 1u) {
            w.head = wq4[base >> 4];
            uvec4 a = wq4[qs >> 4], b = wq4[(qs >> 4) + 1u];
            w.q = uint[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
            if (TYPE == GGML_Q5_K) {
                uvec4 c = wq4[(base >> 4) + 1u], d = wq4[(base >> 4) + 2u];
                w.qh = uint[8](c.x, c.y, c.z, c.w, d.x, d.y, d.z, d.w);
            }
        } else {
            w.head = uvec4(wq[base >> 2], wq[(base >> 2) + 1u], wq[(base >> 2) + 2u], wq[(base >> 2) + 3u]);
            for (uint k = 0u; k < 8u; k++) w.q[k] = wq[(qs >> 2) + k];
            if (TYPE == GGML_Q5_K)
                for (uint k = 0u; k < 8u; k++) w.qh[k] = wq[(base >> 2) + 4u + k];
        }
        return w;
    }
    if (TYPE == GGML_Q6_K) {
        uint o = rb + (t >> 3) * dq_block_bytes(), h = (t >> 2) & 1u, j = t & 3u;
        load_words(o + 64u * h + 32u * (j & 1u), 8u, w.q);
        load_words(o + 128u + 32u * h, 8u, w.qh);
        w.head.x = dq_u16(o + 208u);
        w.head.y = dq_u16(o + 192u + 8u * h + 2u * j);
        return w;
    }
    uint o = rb + t * dq_block_bytes();
    if (TYPE == GGML_Q4_1) {
        w.head.x = wq[o >> 2];
        for (uint k = 0u; k < QWORDS; k++) w.q[k] = wq[(o >> 2) + 1u + k];
    } else {
        w.head.x = dq_u16(o);
        load_words(o + 2u, QWORDS, w.q);
    }
    return w;
}

// Byte i (0..11) of a K-quant block's scales, and sub-block s's 6-bit scale and min (ggml_types.h).
uint k_byte(uvec4 h, uint i) { return (h[1u + (i >> 2)] >> (8u * (i & 3u))) & 0xFFu; }
uvec2 k_scale_min(uvec4 h, uint s)
{
    if (s < 4u) return uvec2(k_byte(h, s) & 63u, k_byte(h, s + 4u) & 63u);
    return uvec2((k_byte(h, s + 4u) & 15u) | (k_byte(h, s - 4u) >> 6) << 4, (k_byte(h, s + 4u) >> 4) | (k_byte(h, s) >> 6) << 4);
}

// The task's term (see the top) for x codes c (two uvec4 a block), the sums of each uvec4's codes
// cs and the x scales xd; t the task index (for a K-quant chunk's or x block's number).
float task_term(Task w, uint t, uvec4 c[4], int cs[4], float xd[2])
{
    const uint M = 0x0F0F0F0Fu;
    int csum[2] = int[2](cs[0] + cs[1], cs[2] + cs[3]);
    if (TYPE == GGML_Q6_K) {
        uint j = t & 3u;
        int s0 = 0, s1 = 0;
        for (uint k = 0u; k < 4u; k++) {
            uint lo = ((j >= 2u ? w.q[k] >> 4 : w.q[k]) & M) | (((w.qh[k] >> (2u * j)) & 0x03030303u) << 4);
            uint hi = ((j >= 2u ? w.q[k + 4u] >> 4 : w.q[k + 4u]) & M) | (((w.qh[k + 4u] >> (2u * j)) & 0x03030303u) << 4);
            s0 += dot4(lo, c[0][k]);
            s1 += dot4(hi, c[1][k]);
        }
        float d = unpackHalf2x16(w.head.x).x;
        int sc0 = bitfieldExtract(int(w.head.y), 0, 8), sc1 = bitfieldExtract(int(w.head.y), 8, 8);
        return float(s0 - 32 * cs[0]) * ((d * float(sc0)) * xd[0]) + float(s1 - 32 * cs[1]) * ((d * float(sc1)) * xd[0]);
    }
    if (KQ) {
        uint ch = t & 3u;
        int s0 = 0, s1 = 0;
        for (uint k = 0u; k < 8u; k++) {
            uint lo = w.q[k] & M, hi = (w.q[k] >> 4) & M;
            if (TYPE == GGML_Q5_K) {
                lo |= ((w.qh[k] >> (2u * ch)) & 0x01010101u) << 4;
                hi |= ((w.qh[k] >> (2u * ch + 1u)) & 0x01010101u) << 4;
            }
            s0 += dot4(lo, c[k >> 2][k & 3u]);
            s1 += dot4(hi, c[2u + (k >> 2)][k & 3u]);
        }
        vec2 dm = unpackHalf2x16(w.head.x);
        uvec2 a = k_scale_min(w.head, 2u * ch), b = k_scale_min(w.head, 2u * ch + 1u);
        return (float(s0) * ((dm.x * float(a.x)) * xd[0]) - float(csum[0]) * ((dm.y * float(a.y)) * xd[0])) +
               (float(s1) * ((dm.x * float(b.x)) * xd[1]) - float(csum[1]) * ((dm.y * float(b.y)) * xd[1]));
    }
    int s = 0;
    if (TYPE == GGML_Q8_0) {
        for (uint k = 0u; k < 4u; k++) s += dot4(w.q[k], c[0][k]) + dot4(w.q[k + 4u], c[1][k]);
    } else {
        for (uint k = 0u; k < 4u; k++) s += dot4(w.q[k] & M, c[0][k]) + dot4((w.q[k] >> 4) & M, c[1][k]);
    }
    vec2 dm = unpackHalf2x16(w.head.x);
    if (TYPE == GGML_Q4_0) return float(s - 8 * csum[0]) * (dm.x * xd[0]);
    if (TYPE == GGML_Q4_1) return float(s) * (dm.x * xd[0]) + float(csum[0]) * (dm.y * xd[0]);
    return float(s) * (dm.x * xd[0]);
}

// Split rows: the sums of the parts of row group rg (SPLIT > 1), [rows a round][ROWS][TOKENS][SPLIT]
shared float sh_split[SPLIT > 1u ? WORKGROUP / 4u * ROWS * TOKENS : 1u];

// Row r's sum s for token t, with the bias, by one lane; rows from g1 on and tokens past n are not
// written.
void store_y(float s, uint r, uint g1, uint t)
{
    if (subgroupElect() && r < g1 && t < pc.n) y[t * pc.y_stride + r] = BIAS != 0u ? s + bias[r] : s;
}

void main()
{
    uint lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
    uint g0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * GROUP_ROWS;
    uint g1 = min(g0 + GROUP_ROWS, pc.rows);
    uint nt = pc.cols / (32u * TASK_X), nb = pc.cols / 32u, rb = dq_row_bytes(pc.cols);
    uint tok0 = gl_WorkGroupID.z * TOKENS;
    // with SPLIT > 1 (and a subgroup count it divides) SPLIT subgroups take one row group, part
    // `part` of them every SPLIT-th pass, and meet in shared memory; the rounds are then uniform
    // over the workgroup, for the barrier
    uint split = SPLIT > 1u && gl_NumSubgroups % SPLIT == 0u && gl_NumSubgroups <= WORKGROUP / 4u ? SPLIT : 1u;
    uint groups = gl_NumSubgroups / split, rg = gl_SubgroupID / split, part = gl_SubgroupID % split;
    uint rounds = (GROUP_ROWS + groups * ROWS - 1u) / (groups * ROWS);
    for (uint round = 0u; round < rounds; round++) {
        uint r0 = g0 + (round * groups + rg) * ROWS;
        if (split == 1u && r0 >= g1) break; // uniform in the subgroup
        uint rbase[ROWS]; // byte offset of each row, the last row standing in for rows past the end
        float acc[ROWS * TOKENS]; // [row][token]
        for (uint i = 0u; i < ROWS; i++) {
            rbase[i] = min(r0 + i, pc.rows - 1u) * rb;
            for (uint j = 0u; j < TOKENS; j++) acc[i * TOKENS + j] = 0.0;
        }
        for (uint t0 = lane + part * UNROLL * S; t0 < nt && r0 < g1; t0 += split * UNROLL * S) {
            Task w[UNROLL][ROWS];
            for (uint u = 0u; u < UNROLL; u++) // the pass's weights first, once for its tokens
                for (uint i = 0u; i < ROWS; i++) w[u][i] = load_task(rbase[i], min(t0 + u * S, nt - 1u));
            for (uint j = 0u; j < TOKENS; j++) {
                uint xb = min(tok0 + j, pc.n - 1u) * nb; // the token's first x block (a token past n repeats the last)
                uvec4 c[UNROLL][4]; // x codes of the task's TASK_X blocks, two uvec4 a block (fixed sizes:
                float xd[UNROLL][2]; // glslang's optimizer fails on arrays sized by TASK_X passed on)
                for (uint u = 0u; u < UNROLL; u++) { // every x load of the token before its terms
                    uint t = min(t0 + u * S, nt - 1u);
                    c[u][2] = c[u][3] = uvec4(0u);
                    xd[u][1] = 0.0;
                    for (uint k = 0u; k < TASK_X; k++) {
                        uint b = xb + t * TASK_X + k;
                        c[u][2u * k] = xc[2u * b];
                        c[u][2u * k + 1u] = xc[2u * b + 1u];
                        xd[u][k] = xs[b];
                    }
                }
                for (uint u = 0u; u < UNROLL; u++) {
                    uint t = min(t0 + u * S, nt - 1u);
                    bool live = t0 + u * S < nt;
                    int cs[4] = int[4](0, 0, 0, 0); // code sums of each uvec4 of x codes
                    for (uint k = 0u; k < 2u * TASK_X && TYPE != GGML_Q8_0; k++)
                        for (uint e = 0u; e < 4u; e++) cs[k] += dot4(c[u][k][e], 0x01010101u);
                    for (uint i = 0u; i < ROWS; i++) {
                        float v = task_term(w[u][i], t, c[u], cs, xd[u]);
                        acc[i * TOKENS + j] += live ? v : 0.0;
                    }
                }
            }
        }
        for (uint i = 0u; i < ROWS; i++)
            for (uint j = 0u; j < TOKENS; j++) {
                float s = subgroupAdd(acc[i * TOKENS + j]);
                if (split > 1u) {
                    if (subgroupElect()) sh_split[((rg * ROWS + i) * TOKENS + j) * split + part] = s;
                    continue;
                }
                store_y(s, r0 + i, g1, tok0 + j);
            }
        if (split == 1u) continue;
        barrier(); // the parts' sums are in sh_split
        if (part == 0u)
            for (uint i = 0u; i < ROWS; i++)
                for (uint j = 0u; j < TOKENS; j++) {
                    float s = 0.0;
                    for (uint q = 0u; q < split; q++) s += sh_split[((rg * ROWS + i) * TOKENS + j) * split + q];
                    store_y(s, r0 + i, g1, tok0 + j);
                }
        barrier(); // sh_split is read before the next round writes it
    }
}

#endif
