#version 450
// Product of Q4_0, Q4_1, Q8_0, Q4_K or Q6_K weights stored as planes
// (runtime/model/weight_planes.h), read through 16-byte texel fetches:
// y[t][r] = sum_c W[r][c] * x[t][c], token t = workgroup z.
//
// For devices where a texel fetch is the cheap load: lavapipe turns every storage-buffer load
// into a loop over the SIMD lanes with a bounds check per lane, and a texel fetch into a plain
// gather (~15x the read bandwidth on a 2-core x86). Each thread owns ROWS whole rows and walks
// them block by block: no shared memory, no barrier, no reduction, any subgroup size. A
// block's x texels (8, or 64 for the K types) are fetched once for the ROWS rows; a 32-element
// block's codes are one texel (Q4_0, Q4_1) or two (Q8_0), its scale word one of the four in a
// scale texel; a K block is 9 (Q4_K) or 14 (Q6_K) texels. Every loop but the walk over the
// blocks is unrolled: llvmpipe turns a variable array index into a loop over the lanes.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 8; // threads
layout(constant_id = 1) const uint TYPE = 3;      // GGML type id of W: 2 (Q4_0), 3 (Q4_1), 8 (Q8_0), 12 (Q4_K) or 14 (Q6_K)
layout(constant_id = 2) const uint ROWS = 4;      // rows per thread

layout(binding = 0) uniform usamplerBuffer wt;   // the planes: [rows][blocks] code texels, then [rows][scale words / 4] scale
                                                 // texels (Q4_K, Q6_K: [rows][blocks] padded blocks)
layout(binding = 1) uniform usamplerBuffer xt;   // [n][cols / 4] texels of fp32 x bits
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;         // rows of W
    uint cols;         // columns of W, a multiple of the block (32, 256 for the K types)
    uint scale_texel;  // texel index of the scale plane (the K types: none, unused)
    uint y_stride;     // floats from y[t][0] to y[t + 1][0]
} pc;

#include "common/grid.glsl"

const uint Q4_0 = 2u, Q4_1 = 3u, Q4_K = 12u, Q6_K = 14u;
const uint K_TEXELS = TYPE == Q4_K ? 9u : 14u; // texels of a padded K block
const uint CODE_TEXELS = TYPE == 8u ? 2u : 1u; // per block

// Sum of code * x over a Q4 block: word w of the code texel holds elements 4w..4w+3 in its low
// nibbles (x texel w) and 16+4w.. in its high ones (x texel w + 4).
float dot_nibbles(uvec4 c, vec4 xs[8])
{
    float s = 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; w++) {
        uint q = c[w];
        vec4 lo = vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u);
        vec4 hi = vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u);
        s += dot(lo, xs[w]) + dot(hi, xs[w + 4u]);
    }
    return s;
}

// Sum of code * x over half a Q8_0 block: word w of the texel holds int8 elements 4w..4w+3 of
// the half, against x texels base + w.
float dot_bytes(uvec4 c, vec4 xs[8], uint base)
{
    float s = 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; w++) {
        int q = int(c[w]);
        vec4 b = vec4(bitfieldExtract(q, 0, 8), bitfieldExtract(q, 8, 8), bitfieldExtract(q, 16, 8), bitfieldExtract(q, 24, 8));
        s += dot(b, xs[base + w]);
    }
    return s;
}

// Byte j of scales[12] of a Q4_K block whose first texel is t0 (bytes 4..15: words 1..3).
uint q4k_scale_byte(uvec4 t0, uint j) { return (t0[1u + j / 4u] >> (8u * (j % 4u))) & 255u; }

// Sub-block sb's 6-bit scale and minimum of a Q4_K block (ggml_types.h).
uvec2 q4k_scale_min(uvec4 t0, uint sb)
{
    if (sb < 4u) return uvec2(q4k_scale_byte(t0, sb) & 63u, q4k_scale_byte(t0, sb + 4u) & 63u);
    uint a = q4k_scale_byte(t0, sb + 4u);
    return uvec2((a & 15u) | ((q4k_scale_byte(t0, sb - 4u) >> 6) << 4), (a >> 4) | ((q4k_scale_byte(t0, sb) >> 6) << 4));
}

// Sums of code * x over the four bytes of Q4_K nibble word q: its low nibbles against xl, its
// high ones against xh.
vec2 q4k_word(uint q, vec4 xl, vec4 xh)
{
    return vec2(dot(vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u), xl),
                dot(vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u), xh));
}

// The K types: a thread's ROWS rows, a block at a time, every array index a constant once the
// loops unroll (llvmpipe turns a variable index into a loop over the SIMD lanes).
//
// Q4_K (ggml_types.h: d, dmin, 12 bytes of 6-bit scales and minimums, 128 bytes of nibbles;
// 9 texels): chunk c (64 elements) is nibble texels 1 + 2c and 2 + 2c, low nibbles elements
// 64c + l, high ones 64c + 32 + l; a sub-block adds d*sc * sum(q x) - dmin*m * sum(x).
// Q6_K (ql[128], qh[64], int8 scales[16], fp16 d; 14 texels): half h holds elements 128h..;
// for l < 32, (ql[64h + l] low | qh[32h + l] bits 0-1) - 32 is element l, (ql[64h + 32 + l] low
// | bits 2-3) element l + 32, the high nibbles with bits 4-5 and 6-7 elements l + 64 and l + 96,
// with scales[8h + l / 16 + 0, 2, 4, 6].
void k_rows(uint row0, uint tok, out float acc[ROWS])
{
    uint blocks = pc.cols / 256u, x0 = tok * (pc.cols / 4u);
    int base[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; i++) {
        acc[i] = 0.0;
        base[i] = int(min(row0 + i, pc.rows - 1u) * blocks * K_TEXELS);
    }
    for (uint b = 0u; b < blocks; b++) {
        int xb = int(x0 + b * 64u), kb = int(b * K_TEXELS);
        if (TYPE == Q4_K) {
            uvec4 t0[ROWS];
            [[unroll]] for (uint i = 0u; i < ROWS; i++) t0[i] = texelFetch(wt, base[i] + kb);
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                vec4 xl[8], xh[8];
                vec2 xsum = vec2(0.0);
                [[unroll]] for (uint w = 0u; w < 8u; w++) {
                    xl[w] = uintBitsToFloat(texelFetch(xt, xb + int(16u * c + w)));
                    xh[w] = uintBitsToFloat(texelFetch(xt, xb + int(16u * c + 8u + w)));
                    xsum += vec2((xl[w].x + xl[w].y) + (xl[w].z + xl[w].w), (xh[w].x + xh[w].y) + (xh[w].z + xh[w].w));
                }
                [[unroll]] for (uint i = 0u; i < ROWS; i++) {
                    uvec4 q0 = texelFetch(wt, base[i] + kb + int(1u + 2u * c)), q1 = texelFetch(wt, base[i] + kb + int(2u + 2u * c));
                    vec2 s = vec2(0.0);
                    [[unroll]] for (uint w = 0u; w < 4u; w++)
                        s += q4k_word(q0[w], xl[w], xh[w]) + q4k_word(q1[w], xl[4u + w], xh[4u + w]);
                    vec2 dm = unpackHalf2x16(t0[i].x);
                    uvec2 lo = q4k_scale_min(t0[i], 2u * c), hi = q4k_scale_min(t0[i], 2u * c + 1u);
                    acc[i] += dm.x * (float(lo.x) * s.x + float(hi.x) * s.y) - dm.y * (float(lo.y) * xsum.x + float(hi.y) * xsum.y);
                }
            }
        } else {
            [[unroll]] for (uint h = 0u; h < 2u; h++) {
                [[unroll]] for (uint g = 0u; g < 2u; g++) { // l / 16: words 4g .. 4g + 3 of the half
                    vec4 xs[4][4]; // [k][w4]: elements l + 32k of word 4g + w4
                    vec4 xsum = vec4(0.0);
                    [[unroll]] for (uint k = 0u; k < 4u; k++)
                        [[unroll]] for (uint w4 = 0u; w4 < 4u; w4++) {
                            xs[k][w4] = uintBitsToFloat(texelFetch(xt, xb + int(32u * h + 8u * k + 4u * g + w4)));
                            xsum[k] += (xs[k][w4].x + xs[k][w4].y) + (xs[k][w4].z + xs[k][w4].w);
                        }
                    [[unroll]] for (uint i = 0u; i < ROWS; i++) {
                        int t = base[i] + kb;
                        // ql bytes 64h + 16g .. and 64h + 32 + 16g ..: texels 4h + g and 4h + 2 + g;
                        // qh bytes 32h + 16g ..: texel 8 + 2h + g
                        uvec4 a = texelFetch(wt, t + int(4u * h + g)), bq = texelFetch(wt, t + int(4u * h + 2u + g));
                        uvec4 qh = texelFetch(wt, t + int(8u + 2u * h + g)), sc = texelFetch(wt, t + 12);
                        float d = unpackHalf2x16(texelFetch(wt, t + 13).x).x;
                        vec4 s = vec4(0.0);
                        [[unroll]] for (uint w4 = 0u; w4 < 4u; w4++) {
                            uvec4 sh = uvec4(0u, 8u, 16u, 24u), hb = (uvec4(qh[w4]) >> sh) & 255u;
                            uvec4 la = uvec4(a[w4]) >> sh, lb = uvec4(bq[w4]) >> sh;
                            s.x += dot(vec4((la & 15u) | ((hb & 3u) << 4)), xs[0][w4]);
                            s.y += dot(vec4((lb & 15u) | (((hb >> 2) & 3u) << 4)), xs[1][w4]);
                            s.z += dot(vec4(((la >> 4) & 15u) | (((hb >> 4) & 3u) << 4)), xs[2][w4]);
                            s.w += dot(vec4(((lb >> 4) & 15u) | (((hb >> 6) & 3u) << 4)), xs[3][w4]);
                        }
                        [[unroll]] for (uint k = 0u; k < 4u; k++) {
                            uint si = 8u * h + g + 2u * k; // scales: texel 12
                            float scale = float(bitfieldExtract(int(sc[si / 4u]), int(8u * (si % 4u)), 8));
                            acc[i] += d * scale * (s[k] - 32.0 * xsum[k]);
                        }
                    }
                }
            }
        }
    }
}

void main()
{
    uint row0 = grid_invocation() * ROWS;
    if (row0 >= pc.rows) return;
    uint tok = gl_WorkGroupID.z;
    if (TYPE == Q4_K || TYPE == Q6_K) {
        float acc[ROWS];
        k_rows(row0, tok, acc);
        [[unroll]] for (uint i = 0u; i < ROWS; i++)
            if (row0 + i < pc.rows) y[tok * pc.y_stride + row0 + i] = acc[i];
        return;
    }
    uint blocks = pc.cols / 32u, scale_texels = (blocks + 3u) / 4u, x0 = tok * (pc.cols / 4u);
    int code[ROWS], scale[ROWS]; // first code texel and scale texel of each row (rows past the end repeat the last)
    float acc[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; i++) {
        uint r = min(row0 + i, pc.rows - 1u);
        code[i] = int(r * blocks * CODE_TEXELS);
        scale[i] = int(pc.scale_texel + r * scale_texels);
        acc[i] = 0.0;
    }
    for (uint b4 = 0u; b4 < blocks; b4 += 4u) {
        uvec4 sc[ROWS];
        [[unroll]] for (uint i = 0u; i < ROWS; i++) sc[i] = texelFetch(wt, scale[i] + int(b4 / 4u));
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            uint b = b4 + k;
            if (b >= blocks) break; // the row's last blocks
            vec4 xs[8];
            [[unroll]] for (uint j = 0u; j < 8u; j++) xs[j] = uintBitsToFloat(texelFetch(xt, int(x0 + b * 8u + j)));
            float xsum = 0.0;
            if (TYPE != 8u)
                [[unroll]] for (uint j = 0u; j < 8u; j++) xsum += (xs[j].x + xs[j].y) + (xs[j].z + xs[j].w);
            [[unroll]] for (uint i = 0u; i < ROWS; i++) {
                vec2 dm = unpackHalf2x16(sc[i][k]);
                int t = code[i] + int(b * CODE_TEXELS);
                if (TYPE == 8u) {
                    float s = dot_bytes(texelFetch(wt, t), xs, 0u) + dot_bytes(texelFetch(wt, t + 1), xs, 4u);
                    acc[i] += dm.x * s;
                } else {
                    float s = dot_nibbles(texelFetch(wt, t), xs);
                    acc[i] += TYPE == Q4_0 ? dm.x * (s - 8.0 * xsum) : dm.x * s + dm.y * xsum;
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < ROWS; i++)
        if (row0 + i < pc.rows) y[tok * pc.y_stride + row0 + i] = acc[i];
}
