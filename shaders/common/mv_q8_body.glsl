// Decode product of a 32-element block type (Q4_0, Q4_1, Q8_0) with x quantized to int8
// blocks: y[r] = sum over blocks b of the block term of row r, W [rows][cols] in its raw GGUF
// blocks, x as common/q8_layout.h (codes and fp32 scales per 32 elements, made by
// quantize_q8.comp). The includer defines dot4(a, b), the dot product of the four signed bytes
// of two words (common/dot4_scalar.glsl or common/dot4_idot.glsl).
//
// Block terms, with the block's integer sums exact and the scales multiplied in fp32:
//   Q8_0  float(sum q * c) * (d * xd)
//   Q4_0  float(sum q * c - 8 * sum c) * (d * xd)         (q the nibble 0..15, value (q - 8) d)
//   Q4_1  float(sum q * c) * (d * xd) + float(sum c) * (m * xd)
// c the x codes, xd the x block's scale; runtime/ref/matvec_q8_ref.c computes the same.
//
// Work: a workgroup owns GROUP_ROWS consecutive rows; its subgroups take ROWS of them at a time
// (subgroup g rows g * ROWS.., then g + gl_NumSubgroups ..), so any subgroup size works (a
// subgroup of 64 runs more passes, one of 4 leaves some rows to the next subgroup). Lane l takes
// blocks l, l + S, l + 2 S, ... (S = gl_SubgroupSize), UNROLL blocks per pass: every weight and x
// load of a pass is issued before the first dot product (the index of a block past the row is
// clamped and its term dropped by a select), and the x codes of a block serve the ROWS rows.
// Each row's lane sums are added by subgroupAdd and written by one lane: no shared memory, no
// barrier. Needs subgroup arithmetic (ops.c runs this only where the device has it) and a
// workgroup that is a whole number of subgroups.
#ifndef OSCAR_MV_Q8_BODY_GLSL
#define OSCAR_MV_Q8_BODY_GLSL
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;  // threads, a multiple of the subgroup size
layout(constant_id = 1) const uint TYPE = 2;         // GGML type id of W: Q4_0, Q4_1 or Q8_0
layout(constant_id = 2) const uint ROWS = 2;         // rows a subgroup sums at once
layout(constant_id = 3) const uint UNROLL = 2;       // blocks per lane per pass
layout(constant_id = 4) const uint GROUP_ROWS = 8;   // rows per workgroup, a multiple of ROWS

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer XC { uvec4 xc[]; };  // [cols / 32][2] x codes, 16 int8 a uvec4
layout(std430, binding = 2) readonly buffer XS { float xs[]; };  // [cols / 32] x scales
layout(std430, binding = 3) writeonly buffer Y { float y[]; };   // [rows] fp32

layout(push_constant) uniform Push {
    uint rows; // rows of W
    uint cols; // columns of W, a multiple of 32
} pc;

const uint GGML_Q4_0 = 2u;
const uint GGML_Q4_1 = 3u;
const uint GGML_Q8_0 = 8u;
const uint BLOCK_BYTES = TYPE == GGML_Q8_0 ? 34u : TYPE == GGML_Q4_1 ? 20u : 18u;
const uint QWORDS = TYPE == GGML_Q8_0 ? 8u : 4u; // words of quants per block

// The block at byte o (even; 4-aligned for Q4_1): its quants as words (Q8_0: 4 codes a word;
// Q4_0/Q4_1: byte j holds element j low and j + 16 high) and its fp16 header (Q4_1: d | m << 16).
// Q4_0 and Q8_0 blocks start on 2 or 0 mod 4: the words i .. i + QWORDS are loaded and the
// quants shifted out of word pairs where the header ends mid-word.
void load_block(uint o, out uint q[8], out uint head)
{
    uint i = o >> 2;
    uint w[9];
    for (uint k = 0u; k <= QWORDS; k++) w[k] = wq[i + k];
    if (TYPE == GGML_Q4_1) {
        head = w[0];
        for (uint k = 0u; k < QWORDS; k++) q[k] = w[k + 1u];
    } else {
        bool high = (o & 2u) != 0u; // header in the word's high half, quants word-aligned after it
        head = high ? w[0] >> 16 : w[0] & 0xFFFFu;
        for (uint k = 0u; k < QWORDS; k++) q[k] = high ? w[k + 1u] : (w[k] >> 16) | (w[k + 1u] << 16);
    }
    for (uint k = QWORDS; k < 8u; k++) q[k] = 0u;
}

// The block term (see the top) for quants q, header head, x codes c and their sum, x scale xd.
float block_term(uint q[8], uint head, uvec4 c[2], int csum, float xd)
{
    int s = 0;
    if (TYPE == GGML_Q8_0) {
        for (uint k = 0u; k < 4u; k++) s += dot4(q[k], c[0][k]) + dot4(q[k + 4u], c[1][k]);
    } else {
        for (uint k = 0u; k < 4u; k++)
            s += dot4(q[k] & 0x0F0F0F0Fu, c[0][k]) + dot4((q[k] >> 4) & 0x0F0F0F0Fu, c[1][k]);
    }
    vec2 dm = unpackHalf2x16(head);
    if (TYPE == GGML_Q4_0) return float(s - 8 * csum) * (dm.x * xd);
    if (TYPE == GGML_Q4_1) return float(s) * (dm.x * xd) + float(csum) * (dm.y * xd);
    return float(s) * (dm.x * xd);
}

void main()
{
    uint lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
    uint g0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * GROUP_ROWS;
    uint g1 = min(g0 + GROUP_ROWS, pc.rows);
    uint nb = pc.cols / 32u, rb = nb * BLOCK_BYTES;
    for (uint r0 = g0 + gl_SubgroupID * ROWS; r0 < g1; r0 += gl_NumSubgroups * ROWS) { // uniform in the subgroup
        uint rbase[ROWS]; // byte offset of each row, the last row standing in for rows past the end
        float acc[ROWS];
        for (uint i = 0u; i < ROWS; i++) {
            rbase[i] = min(r0 + i, pc.rows - 1u) * rb;
            acc[i] = 0.0;
        }
        for (uint b0 = lane; b0 < nb; b0 += UNROLL * S) {
            uvec4 c[UNROLL][2];
            float xd[UNROLL];
            uint q[UNROLL][ROWS][8], head[UNROLL][ROWS];
            for (uint u = 0u; u < UNROLL; u++) { // every load of the pass first
                uint b = min(b0 + u * S, nb - 1u);
                c[u][0] = xc[2u * b];
                c[u][1] = xc[2u * b + 1u];
                xd[u] = xs[b];
                for (uint i = 0u; i < ROWS; i++) load_block(rbase[i] + b * BLOCK_BYTES, q[u][i], head[u][i]);
            }
            for (uint u = 0u; u < UNROLL; u++) {
                bool live = b0 + u * S < nb;
                int csum = 0;
                if (TYPE != GGML_Q8_0)
                    for (uint k = 0u; k < 4u; k++) csum += dot4(c[u][0][k], 0x01010101u) + dot4(c[u][1][k], 0x01010101u);
                for (uint i = 0u; i < ROWS; i++) {
                    float t = block_term(q[u][i], head[u][i], c[u], csum, xd[u]);
                    acc[i] += live ? t : 0.0;
                }
            }
        }
        for (uint i = 0u; i < ROWS; i++) {
            float s = subgroupAdd(acc[i]);
            if (subgroupElect() && r0 + i < g1) y[r0 + i] = s;
        }
    }
}

#endif
