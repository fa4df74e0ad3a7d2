#version 450
// Product of Q4_0, Q4_1, Q8_0, Q4_K or Q6_K weights stored as planes
// (runtime/model/weight_planes.h), read through 16-byte texel fetches:
// y[t][r] = sum_c W[r][c] * x[t][c].
//
// For devices where a texel fetch is the cheap load: lavapipe turns every storage-buffer load
// into a loop over the SIMD lanes with a bounds check per lane, and a texel fetch into a plain
// gather (~15x the read bandwidth on a 2-core x86). Each thread owns ROWS whole rows of TOKENS
// tokens and walks the rows: no shared memory, no barrier, no reduction, any subgroup size.
// Every array is indexed only by counters of unrolled loops: llvmpipe turns a variable array
// index into a loop over the lanes. Two bodies, by TOKENS:
//   one_token (TOKENS = 1, decode): a pass covers a scale texel's 4 blocks or a K block,
//     unrolled; a block's x texels (8, or 64 for a K block) are fetched once for the ROWS rows.
//   token_group (TOKENS > 1, prefill): tokens TOKENS * workgroup z onwards (those past n read the
//     last token's x and are not written); a pass is one unit of 32 elements, whose 8 x texels
//     of each token are fetched once for the ROWS rows, and whose codes of each row are fetched
//     and turned into floats once for the TOKENS tokens. One unit a pass keeps the unrolled
//     code, and lavapipe's pipeline build, small; the unit's place in its block is then a
//     variable, used in addresses, shifts and selects (word()), never as an index.
// A 32-element block is one unit (its codes one texel, Q4_0 and Q4_1, or two, Q8_0; its scale
// word one of four in a scale texel); a K block eight (Q4_K: a sub-block, two of its 9 texels;
// Q6_K: elements 32k .. 32k + 31 of a half, from two ql and two qh texels of 14).
//
// GLU = 1 (SwiGLU's gate and up products in one dispatch): a thread's ROWS rows are ROWS / 2
// rows of the gate weight (wt) and the same rows of the up weight (wu), each summed as a row of
// its own product is, and it writes y[t][r] = silu(gate) * up for its ROWS / 2 rows, as
// swiglu.comp would from the two products' outputs (common/silu.glsl): bit for bit the same.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 8; // threads
layout(constant_id = 1) const uint TYPE = 3;      // GGML type id of W: 2 (Q4_0), 3 (Q4_1), 8 (Q8_0), 12 (Q4_K) or 14 (Q6_K)
layout(constant_id = 2) const uint ROWS = 4;      // rows per thread
layout(constant_id = 3) const uint TOKENS = 1;    // tokens per thread
layout(constant_id = 4) const uint GLU = 0;       // 1: rows of wt and wu, y = silu(wt x) * (wu x) (ROWS even)

layout(binding = 0) uniform usamplerBuffer wt;   // the planes: [rows][blocks] code texels, then [rows][scale words / 4] scale
                                                 // texels (Q4_K, Q6_K: [rows][blocks] padded blocks)
layout(binding = 1) uniform usamplerBuffer xt;   // [n][cols / 4] texels of fp32 x bits
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][y_stride] fp32, columns 0..rows-1 written
layout(binding = 3) uniform usamplerBuffer wu;   // GLU: the up weight's planes, as wt (else unread)

layout(push_constant) uniform Push {
    uint rows;         // rows of W (GLU: of each weight)
    uint cols;         // columns of W, a multiple of the block (32, 256 for the K types)
    uint scale_texel;  // texel index of the scale plane (the K types: none, unused)
    uint y_stride;     // floats from y[t][0] to y[t + 1][0]
    uint n;            // tokens
} pc;

#include "common/grid.glsl"

const uint Q4_0 = 2u, Q4_1 = 3u, Q8_0 = 8u, Q4_K = 12u, Q6_K = 14u;
const bool K_TYPE = TYPE == Q4_K || TYPE == Q6_K;
const uint K_TEXELS = TYPE == Q4_K ? 9u : 14u;   // texels of a padded K block
const uint CODE_TEXELS = TYPE == Q8_0 ? 2u : 1u; // per 32-element block
const uint OUT_ROWS = GLU != 0u ? ROWS / 2u : ROWS; // rows of y a thread writes

#include "common/silu.glsl"

// Row slot i (0..ROWS-1) of a thread whose first row of y is row0: its weight row (rows past the
// end repeat the last), and a texel of that slot's weight (GLU: slots OUT_ROWS.. read wu). i is
// a constant once the loops unroll, so the choice costs nothing.
uint slot_row(uint row0, uint i) { return min(row0 + (GLU != 0u ? i % OUT_ROWS : i), pc.rows - 1u); }
uvec4 slot_fetch(uint i, int t) { return GLU != 0u && i >= OUT_ROWS ? texelFetch(wu, t) : texelFetch(wt, t); }

// A row of y from its slot's sum g and, with GLU, the sum u of its up slot: g, or silu(g) * u.
float slot_out(float g, float u) { return GLU != 0u ? silu(g) * u : g; }

// Word k of texel v, k a constant or not (selects, no index).
uint word(uvec4 v, uint k) { return k < 2u ? (k == 0u ? v.x : v.y) : (k == 2u ? v.z : v.w); }

// Byte j of scales[12] of a Q4_K block whose first texel is t0 (bytes 4..15: words 1..3).
uint q4k_scale_byte(uvec4 t0, uint j) { return (word(t0, 1u + j / 4u) >> (8u * (j % 4u))) & 255u; }

// Sub-block sb's 6-bit scale and minimum of a Q4_K block (ggml_types.h).
// sb a constant or not (both halves computed, one selected).
uvec2 q4k_scale_min(uvec4 t0, uint sb)
{
    uint j = sb % 4u, a = q4k_scale_byte(t0, j + 8u);
    uvec2 lo = uvec2(q4k_scale_byte(t0, j) & 63u, q4k_scale_byte(t0, j + 4u) & 63u);
    uvec2 hi = uvec2((a & 15u) | ((q4k_scale_byte(t0, j) >> 6) << 4), (a >> 4) | ((q4k_scale_byte(t0, j + 4u) >> 6) << 4));
    return sb < 4u ? lo : hi;
}

// ---- one_token (TOKENS = 1) ----

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

// Sums of code * x over the four bytes of Q4_K nibble word q: its low nibbles against xl, its
// high ones against xh.
vec2 q4k_word(uint q, vec4 xl, vec4 xh)
{
    return vec2(dot(vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u), xl),
                dot(vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u), xh));
}

// one_token() for the K types: a thread's ROWS rows, a block at a time, every array index a constant once the
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
        base[i] = int(slot_row(row0, i) * blocks * K_TEXELS);
    }
    for (uint b = 0u; b < blocks; b++) {
        int xb = int(x0 + b * 64u), kb = int(b * K_TEXELS);
        if (TYPE == Q4_K) {
            uvec4 t0[ROWS];
            [[unroll]] for (uint i = 0u; i < ROWS; i++) t0[i] = slot_fetch(i, base[i] + kb);
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                vec4 xl[8], xh[8];
                vec2 xsum = vec2(0.0);
                [[unroll]] for (uint w = 0u; w < 8u; w++) {
                    xl[w] = uintBitsToFloat(texelFetch(xt, xb + int(16u * c + w)));
                    xh[w] = uintBitsToFloat(texelFetch(xt, xb + int(16u * c + 8u + w)));
                    xsum += vec2((xl[w].x + xl[w].y) + (xl[w].z + xl[w].w), (xh[w].x + xh[w].y) + (xh[w].z + xh[w].w));
                }
                [[unroll]] for (uint i = 0u; i < ROWS; i++) {
                    uvec4 q0 = slot_fetch(i, base[i] + kb + int(1u + 2u * c)), q1 = slot_fetch(i, base[i] + kb + int(2u + 2u * c));
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
                        uvec4 a = slot_fetch(i, t + int(4u * h + g)), bq = slot_fetch(i, t + int(4u * h + 2u + g));
                        uvec4 qh = slot_fetch(i, t + int(8u + 2u * h + g)), sc = slot_fetch(i, t + 12);
                        float d = unpackHalf2x16(slot_fetch(i, t + 13).x).x;
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

// TOKENS = 1 (decode): token = workgroup z; a pass of the walk over the blocks covers a scale
// texel's 4 blocks or a K block, unrolled, and shares its scale and code texels.
void one_token(uint row0)
{
    uint tok = gl_WorkGroupID.z;
    if (TYPE == Q4_K || TYPE == Q6_K) {
        float acc[ROWS];
        k_rows(row0, tok, acc);
        [[unroll]] for (uint i = 0u; i < OUT_ROWS; i++)
            if (row0 + i < pc.rows) y[tok * pc.y_stride + row0 + i] = slot_out(acc[i], acc[(i + OUT_ROWS) % ROWS]);
        return;
    }
    uint blocks = pc.cols / 32u, scale_texels = (blocks + 3u) / 4u, x0 = tok * (pc.cols / 4u);
    int code[ROWS], scale[ROWS]; // first code texel and scale texel of each row (rows past the end repeat the last)
    float acc[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; i++) {
        uint r = slot_row(row0, i);
        code[i] = int(r * blocks * CODE_TEXELS);
        scale[i] = int(pc.scale_texel + r * scale_texels);
        acc[i] = 0.0;
    }
    for (uint b4 = 0u; b4 < blocks; b4 += 4u) {
        uvec4 sc[ROWS];
        [[unroll]] for (uint i = 0u; i < ROWS; i++) sc[i] = slot_fetch(i, scale[i] + int(b4 / 4u));
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            uint b = b4 + k;
            if (b >= blocks) break; // the row's last blocks
            vec4 xs[8];
            [[unroll]] for (uint j = 0u; j < 8u; j++) xs[j] = uintBitsToFloat(texelFetch(xt, int(x0 + b * 8u + j)));
            float xsum = 0.0;
            if (TYPE != Q8_0)
                [[unroll]] for (uint j = 0u; j < 8u; j++) xsum += (xs[j].x + xs[j].y) + (xs[j].z + xs[j].w);
            [[unroll]] for (uint i = 0u; i < ROWS; i++) {
                vec2 dm = unpackHalf2x16(sc[i][k]);
                int t = code[i] + int(b * CODE_TEXELS);
                if (TYPE == Q8_0) {
                    float s = dot_bytes(slot_fetch(i, t), xs, 0u) + dot_bytes(slot_fetch(i, t + 1), xs, 4u);
                    acc[i] += dm.x * s;
                } else {
                    float s = dot_nibbles(slot_fetch(i, t), xs);
                    acc[i] += TYPE == Q4_0 ? dm.x * (s - 8.0 * xsum) : dm.x * s + dm.y * xsum;
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < OUT_ROWS; i++)
        if (row0 + i < pc.rows) y[tok * pc.y_stride + row0 + i] = slot_out(acc[i], acc[(i + OUT_ROWS) % ROWS]);
}

// ---- token_group (TOKENS > 1) ----

// The four bytes of word q shifted right by s, as integers.
uvec4 bytes_of(uint q, uint s) { return uvec4(q >> s, q >> (s + 8u), q >> (s + 16u), q >> (s + 24u)); }

// Codes against x texel j (0..7) of a unit whose code texels are ct (token_group()), as floats;
// u: the unit's place in its K block.
vec4 unit_codes(uvec4 ct[4], uint j, uint u)
{
    if (TYPE == Q8_0) { // texel j / 4, int8
        int q = int(ct[j / 4u][j % 4u]);
        return vec4(bitfieldExtract(q, 0, 8), bitfieldExtract(q, 8, 8), bitfieldExtract(q, 16, 8), bitfieldExtract(q, 24, 8));
    }
    if (TYPE == Q6_K) // ql texel j / 4: low nibbles for k = u % 4 < 2, high ones else, with bits 2k, 2k + 1 of qh texel 2 + j / 4
        return vec4((bytes_of(ct[j / 4u][j % 4u], 4u * (u % 4u / 2u)) & 15u) |
                    ((bytes_of(ct[2u + j / 4u][j % 4u], 2u * (u % 4u)) & 3u) << 4));
    if (TYPE == Q4_K) // texel j / 4: low nibbles for even sub-blocks, high ones for odd
        return vec4(bytes_of(ct[j / 4u][j % 4u], 4u * (u % 2u)) & 15u);
    // Q4_0, Q4_1: word j % 4 of the one texel, low nibbles (elements 4j ..) for j < 4, high ones
    // (16 + 4(j - 4) ..) for the rest
    return vec4(bytes_of(ct[0][j % 4u], 4u * (j / 4u)) & 15u);
}

// Unit v of a row is elements 32v .. 32v + 31, x texels 8v .. 8v + 7 of each token. Its code
// texels ct and scales: a 32-element block v's code texels, and word v % 4 of its row's scale
// texel v / 4 (d | m << 16); Q4_K sub-block u = v % 8 of block v / 8: nibbles (low for even u,
// high for odd) of texels 1 + u / 2 * 2 and the next, scale and minimum from the header texel;
// Q6_K u = 4h + k: elements 128h + 32k + l, l = 16g + 4j + c (x texel 4g + j), from
// ql[64h + 32(k % 2) + l] (texel 4h + 2(k % 2) + g), qh[32h + l] bits 2k, 2k + 1 (texel
// 8 + 2h + g) and scales[8h + g + 2k] (texel 12, d in texel 13).
void token_group(uint row0)
{
    const uint BLOCK_UNITS = K_TYPE ? 8u : 1u;
    uint tok0 = gl_WorkGroupID.z * TOKENS;
    uint units = pc.cols / 32u, blocks = units / BLOCK_UNITS, scale_texels = (blocks + 3u) / 4u;
    int xrow[TOKENS]; // first x texel of each token (tokens past the last repeat it)
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) xrow[t] = int(min(tok0 + t, pc.n - 1u) * (pc.cols / 4u));
    int code[ROWS], scale[ROWS]; // first texel of each row's codes (K types: blocks) and scales (rows past the end repeat the last)
    float acc[TOKENS * ROWS];    // [token][row]
    [[unroll]] for (uint i = 0u; i < ROWS; i++) {
        uint r = slot_row(row0, i);
        code[i] = int(r * blocks * (K_TYPE ? K_TEXELS : CODE_TEXELS));
        scale[i] = int(pc.scale_texel + r * scale_texels);
    }
    [[unroll]] for (uint k = 0u; k < TOKENS * ROWS; k++) acc[k] = 0.0;

    for (uint v = 0u; v < units; v++) {
        uint u = v % BLOCK_UNITS, b = v / BLOCK_UNITS;
        vec4 xs[TOKENS * 8];    // [token][x texel of the unit]
        float xsum[TOKENS * 2]; // [token][half] sums of x texels 0..3 and 4..7
        [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
            xsum[t * 2u] = xsum[t * 2u + 1u] = 0.0;
            [[unroll]] for (uint j = 0u; j < 8u; j++) {
                vec4 e = uintBitsToFloat(texelFetch(xt, xrow[t] + int(v * 8u + j)));
                xs[t * 8u + j] = e;
                if (TYPE != Q8_0) xsum[t * 2u + j / 4u] += (e.x + e.y) + (e.z + e.w);
            }
        }
        [[unroll]] for (uint i = 0u; i < ROWS; i++) {
            // weight c of x texel j = a[j / 4] * code c of unit_codes(ct, j, u) + o[j / 4]
            uvec4 ct[4]; // Q4_0/Q4_1 [0], Q8_0 [0..1], Q4_K [0..1], Q6_K ql [0..1], qh [2..3]
            vec2 a, o;   // scale and offset of x texels 0..3 and 4..7 (Q6_K: o = -32a)
            int kb = code[i] + int(b * (K_TYPE ? K_TEXELS : CODE_TEXELS));
            if (TYPE == Q4_K) {
                uvec4 t0 = slot_fetch(i, kb); // d, dmin, scales[12]
                [[unroll]] for (uint e = 0u; e < 2u; e++) ct[e] = slot_fetch(i, kb + int(1u + u / 2u * 2u + e));
                vec2 dm = unpackHalf2x16(t0.x);
                uvec2 sm = q4k_scale_min(t0, u);
                a = vec2(dm.x * float(sm.x));
                o = vec2(-(dm.y * float(sm.y)));
            } else if (TYPE == Q6_K) {
                uint h = u / 4u, k = u % 4u;
                uvec4 sc = slot_fetch(i, kb + 12);
                float d = unpackHalf2x16(slot_fetch(i, kb + 13).x).x;
                [[unroll]] for (uint g = 0u; g < 2u; g++) {
                    ct[g] = slot_fetch(i, kb + int(4u * h + 2u * (k % 2u) + g));
                    ct[2u + g] = slot_fetch(i, kb + int(8u + 2u * h + g));
                    uint si = 8u * h + g + 2u * k;
                    a[g] = d * float(bitfieldExtract(int(word(sc, si / 4u)), int(8u * (si % 4u)), 8));
                    o[g] = -32.0 * a[g];
                }
            } else {
                vec2 dm = unpackHalf2x16(word(slot_fetch(i, scale[i] + int(v / 4u)), v % 4u));
                a = vec2(dm.x);
                o = vec2(TYPE == Q4_1 ? dm.y : -8.0 * dm.x); // Q8_0: unused
                [[unroll]] for (uint e = 0u; e < CODE_TEXELS; e++) ct[e] = slot_fetch(i, kb + int(e));
            }
            float s[TOKENS * 2]; // [token][half] sums of code * x over x texels 0..3 and 4..7
            [[unroll]] for (uint k = 0u; k < TOKENS * 2u; k++) s[k] = 0.0;
            [[unroll]] for (uint j = 0u; j < 8u; j++) {
                vec4 c = unit_codes(ct, j, u);
                [[unroll]] for (uint t = 0u; t < TOKENS; t++) s[t * 2u + j / 4u] += dot(c, xs[t * 8u + j]);
            }
            [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
                if (TYPE == Q8_0) acc[t * ROWS + i] += a.x * (s[t * 2u] + s[t * 2u + 1u]);
                else if (TYPE == Q6_K) acc[t * ROWS + i] += (a.x * s[t * 2u] + o.x * xsum[t * 2u]) + (a.y * s[t * 2u + 1u] + o.y * xsum[t * 2u + 1u]);
                else acc[t * ROWS + i] += a.x * (s[t * 2u] + s[t * 2u + 1u]) + o.x * (xsum[t * 2u] + xsum[t * 2u + 1u]);
            }
        }
    }
    [[unroll]] for (uint t = 0u; t < TOKENS; t++)
        [[unroll]] for (uint i = 0u; i < OUT_ROWS; i++)
            if (tok0 + t < pc.n && row0 + i < pc.rows)
                y[(tok0 + t) * pc.y_stride + row0 + i] = slot_out(acc[t * ROWS + i], acc[t * ROWS + (i + OUT_ROWS) % ROWS]);
}

void main()
{
    uint row0 = grid_invocation() * OUT_ROWS;
    if (row0 >= pc.rows) return;
    if (TOKENS == 1u) one_token(row0);
    else token_group(row0);
}
