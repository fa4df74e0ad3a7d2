#version 450
// Decode mat-vec y[t][r] = sum_c W[r][c] * x[t][c] for Q4_0 and Q8_0 weights with the products
// in packed fp16 (devices with shaderFloat16), x prepared by x_f16_blocks.comp. The layout of
// the work is mul_mat_vec.comp's ("units": a thread per 32-element block, ROWS rows per
// workgroup, UNROLL blocks per pass, one shared-memory reduction); only the block's dot
// product differs.
//
// Why: on the H200 the fp32 units shader is bound by instructions, not bytes: its fp32 x
// (8 16-byte loads a block) and the nibble-to-fp32 conversions cost more than the weights'
// bytes (docs/performance.md).
// Here two codes become an f16vec2 with one mask-and-or ((w >> s) & 0x000F000F | 0x6400..: 1024
// + n in each half), one packed subtraction makes them the signed quant (exact), and one
// packed FMA multiplies them by a pair of x, so a 32-bit word of 8 nibbles costs ~19
// instructions instead of ~32, with 2 fp16->fp32 conversions instead of 8.
//
// x comes prepared by x_f16_blocks.comp: per 32-element block, 16 fp16 pairs of x * s (s a
// power of two putting max|x * s| in [8, 16)) in decode order, and 1/s.
//
// Numbers. x * s is rounded to fp16 (relative error 2^-11; values below 2^-14 of the block's
// largest lose bits: their share of the sum is below fp32 rounding of the rest). Products of
// a quant (|q| <= 8, Q8_0 <= 128) and x * s are rounded to fp16 and summed 4 to a lane (the 8
// elements of one word: at most 4 * 128 * 16, far from fp16's 65504), then converted and
// summed in fp32; the block's sum is scaled back by d / s. Error against the fp32 reference:
// ~2^-12 relative per product, random in sign, so the normalised squared error of a row is
// ~1e-7 (bound in tests/test_ops_matvec.c).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // threads, a power of two >= ROWS
layout(constant_id = 1) const uint TYPE = 2;        // GGML type id of W: Q4_0 or Q8_0
layout(constant_id = 2) const uint ROWS = 1;        // rows per workgroup
layout(constant_id = 3) const uint UNROLL = 1;      // blocks per thread per pass
layout(constant_id = 4) const uint W16 = 0;         // unused (the units shader's; same spec list)

layout(std430, binding = 0) readonly buffer W { uint wq[]; };    // [rows][row bytes] GGUF blocks
layout(std430, binding = 1) readonly buffer XQ { uvec4 xq4[]; }; // [n][cols/32][4]: 16 fp16 pairs of x * s a block,
layout(std430, binding = 1) readonly buffer XS { float xs[]; };   // then [n][cols/32] 1/s from word n * cols / 2
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;   // rows of W
    uint cols;   // columns of W, a multiple of 32
    uint n;      // tokens (= workgroups in z)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]: rows, more for a row range of a wider y
} pc;

#include "common/dequant.glsl"
#include "common/dequant_unit.glsl"

#include "common/mv_reduce.glsl"

const uint MAGIC = 0x64006400u; // fp16 1024.0 in both halves

// Block u of token tok's prepared x: its 16 pairs, and 1/s as the return value.
float load_x(uint tok, uint u, uint nu, out f16vec2 xp[16])
{
    uint b = tok * nu + u;
    for (uint q = 0u; q < 4u; q++) {
        uvec4 h = xq4[4u * b + q];
        xp[4u * q] = unpackFloat2x16(h.x);
        xp[4u * q + 1u] = unpackFloat2x16(h.y);
        xp[4u * q + 2u] = unpackFloat2x16(h.z);
        xp[4u * q + 3u] = unpackFloat2x16(h.w);
    }
    return xs[16u * pc.n * nu + b];
}

// The codes at bit s of each half of word w (a nibble for Q4_0, a byte for Q8_0, whose sign
// bit is flipped to bias it by 128) as signed quants: 1024 + code - zero, exact in fp16.
f16vec2 quant_pair(uint w, uint s, float16_t zero)
{
    uint v = TYPE == GGML_Q8_0 ? ((w >> s) & 0x00FF00FFu) ^ 0x00800080u : (w >> s) & 0x000F000Fu;
    return unpackFloat2x16(v | MAGIC) - f16vec2(zero);
}

// sum over a word's 4 element pairs of quant * x, the 4 products of a lane summed in fp16.
vec2 word_dot(f16vec2 q0, f16vec2 q1, f16vec2 q2, f16vec2 q3, f16vec2 x0, f16vec2 x1, f16vec2 x2, f16vec2 x3)
{
    f16vec2 a = q0 * x0;
    a = fma(q1, x1, a);
    a = fma(q2, x2, a);
    a = fma(q3, x3, a);
    return vec2(a);
}

// x . block u of the row at byte rb.
float block_dot(uint rb, uint u, f16vec2 xp[16])
{
    vec2 acc = vec2(0.0);
    if (TYPE == GGML_Q4_0) { // { f16 d; u8 qs[16] }: element j < 16 is byte j's low nibble, j + 16 its high one
        uint o = rb + 18u * u;
        uvec4 w = mv_load4(o + 2u);
        for (uint k = 0u; k < 4u; k++) {
            // word k holds elements 4k..4k+3 (low nibbles) and 16+4k..16+4k+3 (high)
            acc += word_dot(quant_pair(w[k], 0u, 1032.0hf), quant_pair(w[k], 8u, 1032.0hf),
                            quant_pair(w[k], 4u, 1032.0hf), quant_pair(w[k], 12u, 1032.0hf),
                            xp[2u * k], xp[2u * k + 1u], xp[8u + 2u * k], xp[8u + 2u * k + 1u]);
        }
        return dq_f16(o) * (acc.x + acc.y);
    } else { // Q8_0 { f16 d; i8 qs[32] }
        uint o = rb + 34u * u;
        uvec4 a = mv_load4(o + 2u), b = mv_load4(o + 18u);
        for (uint k = 0u; k < 4u; k++) {
            // word k of a: elements 4k..4k+3; of b: 16+4k..16+4k+3
            acc += word_dot(quant_pair(a[k], 0u, 1152.0hf), quant_pair(a[k], 8u, 1152.0hf),
                            quant_pair(b[k], 0u, 1152.0hf), quant_pair(b[k], 8u, 1152.0hf),
                            xp[2u * k], xp[2u * k + 1u], xp[8u + 2u * k], xp[8u + 2u * k + 1u]);
        }
        return dq_f16(o) * (acc.x + acc.y);
    }
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
    uint tok = gl_WorkGroupID.z;
    if (row0 >= pc.rows || tok >= pc.n) return; // uniform over the workgroup
    uint rb = dq_row_bytes(pc.cols), nu = pc.cols / 32u;
    uint rbase[ROWS];   // byte offset of each row, the last row standing in for rows past the end
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) {
        rbase[i] = min(row0 + i, pc.rows - 1u) * rb;
        acc[i] = 0.0;
    }

    for (uint u0 = tid; u0 < nu; u0 += UNROLL * WORKGROUP) {
        for (uint k = 0u; k < UNROLL; k++) {
            uint u = u0 + k * WORKGROUP;
            bool live = u < nu;
            u = min(u, nu - 1u);
            f16vec2 xp[16];
            float inv_s = load_x(tok, u, nu, xp);
            for (uint i = 0u; i < ROWS; i++) {
                float d = block_dot(rbase[i], u, xp) * inv_s;
                acc[i] += live ? d : 0.0;
            }
        }
    }

    mv_reduce_store(acc, tid, row0, tok);
}
