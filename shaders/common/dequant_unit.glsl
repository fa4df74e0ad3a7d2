// Dot products of x with one "unit" of a GGUF weight row, read in whole 32-bit words: the
// decode mat-vec (mul_mat_vec.comp) gives each thread units, so that adjacent threads read
// adjacent words and no element is converted from an integer one at a time.
//
// Needs common/dequant.glsl first (TYPE, wq[], dq_f16, dq_u8, the GGML_* ids); with MV_WQ4
// defined also a uint W16 (1: use wq4) and a uvec4 view wq4[] of the same binding as wq[].
//
// A unit is 16 bytes of the type's main quant array plus the block header they need:
//   F32  4 elements, F16/BF16 8 elements (the unit is 16 bytes of the row);
//   Q4_0, Q4_1, Q8_0: one block of 32 (Q8_0's quants are 32 bytes: two 16-byte halves);
//   Q4_K, Q5_K, Q6_K: 1/8 of a 256-block, 16 bytes of qs/ql = 16 elements of each of two
//   sub-blocks. For the quant types the unit's elements are two pieces of 16 consecutive
//   elements, at mv_unit_x(u) ("lo") and mv_unit_x(u) + mv_unit_gap() ("hi").
//
// Nibbles (and bytes) become floats through fp16 bit patterns: (v & 0x000F000F) | 0x6400..
// holds 1024 + v in both halves, exact in fp16 and in the fp32 unpackHalf2x16 returns; the
// offset (1024 plus the type's zero point) is subtracted exactly in fp32. One word gives
// the fields of bytes 0 and 2, the same word shifted by 8 those of bytes 1 and 3, so a vec4
// of decoded values comes in element order 0, 2, 1, 3: the caller permutes x to match
// (mv_perm). The product with the block scale is taken per sub-block, so the fp32 rounding
// differs from the element-wise C reference only at the level of summation order.
#ifndef OSCAR_DEQUANT_UNIT_GLSL
#define OSCAR_DEQUANT_UNIT_GLSL

const uint MV_LOW4 = 0x000F000Fu;  // the low nibble of bytes 0 and 2
const uint MV_MAGIC = 0x64006400u; // fp16 1024.0 in both halves

// Elements per unit.
uint mv_unit_elems()
{
    if (TYPE == GGML_F32) return 4u;
    if (TYPE == GGML_F16 || TYPE == GGML_BF16) return 8u;
    return 32u;
}

// Element (column) of the unit's first element; its "hi" piece starts mv_unit_gap() later.
uint mv_unit_x(uint u)
{
    if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) return ((u >> 3) << 8) + 64u * ((u & 7u) >> 1) + 16u * (u & 1u);
    if (TYPE == GGML_Q6_K) return ((u >> 3) << 8) + 16u * (u & 7u) + 64u * ((u & 7u) >> 2);
    return u * mv_unit_elems();
}

uint mv_unit_gap()
{
    if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) return 32u;
    if (TYPE == GGML_Q6_K) return 64u;
    return 16u;
}

// Whether the quant decoding hands out values in element order 0, 2, 1, 3 (see above).
bool mv_perm() { return TYPE != GGML_F32 && TYPE != GGML_F16 && TYPE != GGML_BF16; }

// Whether every block (so every unit) starts on a word: block bytes a multiple of 4.
bool mv_aligned() { return TYPE != GGML_Q4_0 && TYPE != GGML_Q8_0 && TYPE != GGML_Q6_K; }

// The 16 bytes at byte offset o (even; o + 16 rounded up to a word lies inside wq) as words.
// Without a branch: an unaligned type always reads the fifth word (clamped to the buffer) and
// selects, so that the loads of several units can be in flight together.
uvec4 mv_load4(uint o)
{
#ifdef MV_WQ4
    // every unit of these types starts on 16 bytes when the binding does (W16): one 16-byte load
    if (W16 != 0u && (TYPE == GGML_F32 || TYPE == GGML_F16 || TYPE == GGML_BF16 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K))
        return wq4[o >> 4];
#endif
    uint i = o >> 2;
    uvec4 w = uvec4(wq[i], wq[i + 1u], wq[i + 2u], wq[i + 3u]);
    if (!mv_aligned()) {
        uint e = wq[min(i + 4u, uint(wq.length()) - 1u)];
        w = mix(w, (w >> 16) | (uvec4(w.yzw, e) << 16), bvec4((o & 2u) != 0u));
    }
    return w;
}

// Fields of bytes 0, 2, 1, 3 of w: the nibble at bit s of each byte, OR'd with `high` (bits
// 4..5 of each half, already in place), as fp16 1024 + field.
vec4 mv_fields(uint w, uint s, uint hi02, uint hi13)
{
    return vec4(unpackHalf2x16(((w >> s) & MV_LOW4) | hi02 | MV_MAGIC),
                unpackHalf2x16(((w >> (s + 8u)) & MV_LOW4) | hi13 | MV_MAGIC));
}

// Sum of x[k] . (field - zero) over the 4 words w[k] of nibbles at bit s of each byte;
// zero = 1024 + the type's zero point.
float mv_dot_nib(uvec4 w, uint s, vec4 x[4], float zero)
{
    float a = 0.0;
    for (uint k = 0u; k < 4u; k++) a += dot(mv_fields(w[k], s, 0u, 0u) - zero, x[k]);
    return a;
}

// As mv_dot_nib with a fifth (Q5_K: mask 0x00100010) or fifth and sixth (Q6_K: 0x00300030)
// bit per field from hb[k], whose bits for bytes 0/2 sit at lsh02 (left shift to bit 4) and
// for bytes 1/3 at rsh13 (right shift to bit 4).
float mv_dot_nib_hi(uvec4 w, uint s, uvec4 hb, uint lsh02, uint rsh13, uint mask, vec4 x[4], float zero)
{
    float a = 0.0;
    for (uint k = 0u; k < 4u; k++)
        a += dot(mv_fields(w[k], s, (hb[k] << lsh02) & mask, (hb[k] >> rsh13) & mask) - zero, x[k]);
    return a;
}

// The 6-bit scale and min of sub-block s (0..7) of a K-block from its three scale words.
void mv_k_scale_min(uvec3 sw, uint s, out uint sc, out uint m)
{
    uint j = 8u * (s & 3u);
    if (s < 4u) {
        sc = (sw.x >> j) & 63u;
        m = (sw.y >> j) & 63u;
    } else {
        sc = ((sw.z >> j) & 15u) | (((sw.x >> (j + 6u)) & 3u) << 4);
        m = ((sw.z >> (j + 4u)) & 15u) | (((sw.y >> (j + 6u)) & 3u) << 4);
    }
}

// The Q4_K / Q5_K block of unit u of the row at byte rb: the word index i where it starts,
// its d and dmin, and the 6-bit scales and mins of the unit's two sub-blocks (2c, 2c + 1 for
// unit part c = (u & 7) / 2).
void mv_k_header(uint rb, uint u, out uint i, out vec2 dm, out uint sc0, out uint m0, out uint sc1, out uint m1)
{
    uint c = (u & 7u) >> 1;
    i = (rb + (TYPE == GGML_Q5_K ? 176u : 144u) * (u >> 3)) >> 2;
    dm = unpackHalf2x16(wq[i]);
    uvec3 sw = uvec3(wq[i + 1u], wq[i + 2u], wq[i + 3u]);
    mv_k_scale_min(sw, 2u * c, sc0, m0);
    mv_k_scale_min(sw, 2u * c + 1u, sc1, m1);
}

// x . (unit u of the row at byte rb). xl, xh: the unit's lo and hi pieces (permuted when
// mv_perm(); the float types use xl[0..1] in order); sl, sh: their sums.
float mv_unit_dot(uint rb, uint u, vec4 xl[4], vec4 xh[4], float sl, float sh)
{
    if (TYPE == GGML_F32) {
        return dot(uintBitsToFloat(mv_load4(rb + 16u * u)), xl[0]);
    } else if (TYPE == GGML_F16 || TYPE == GGML_BF16) {
        uvec4 w = mv_load4(rb + 16u * u);
        if (TYPE == GGML_F16)
            return dot(vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)), xl[0]) +
                   dot(vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)), xl[1]);
        uvec4 lo = w << 16, hi = w & 0xFFFF0000u;
        return dot(uintBitsToFloat(uvec4(lo.x, hi.x, lo.y, hi.y)), xl[0]) +
               dot(uintBitsToFloat(uvec4(lo.z, hi.z, lo.w, hi.w)), xl[1]);
    } else if (TYPE == GGML_Q4_0) { // { f16 d; u8 qs[16] }, 18 bytes
        uint o = rb + 18u * u;
        uvec4 w = mv_load4(o + 2u);
        return dq_f16(o) * (mv_dot_nib(w, 0u, xl, 1032.0) + mv_dot_nib(w, 4u, xh, 1032.0));
    } else if (TYPE == GGML_Q4_1) { // { f16 d, m; u8 qs[16] }, 20 bytes
        uint o = rb + 20u * u;
        vec2 dm = unpackHalf2x16(wq[o >> 2]);
        uvec4 w = mv_load4(o + 4u);
        return dm.x * (mv_dot_nib(w, 0u, xl, 1024.0) + mv_dot_nib(w, 4u, xh, 1024.0)) + dm.y * (sl + sh);
    } else if (TYPE == GGML_Q8_0) { // { f16 d; i8 qs[32] }, 34 bytes; bytes biased by 128 via xor
        uint o = rb + 34u * u;
        uvec4 a = mv_load4(o + 2u), b = mv_load4(o + 18u);
        float s = 0.0;
        for (uint k = 0u; k < 4u; k++) {
            s += dot(vec4(unpackHalf2x16((a[k] & 0x00FF00FFu) ^ 0x64806480u),
                          unpackHalf2x16(((a[k] >> 8) & 0x00FF00FFu) ^ 0x64806480u)) - 1152.0, xl[k]);
            s += dot(vec4(unpackHalf2x16((b[k] & 0x00FF00FFu) ^ 0x64806480u),
                          unpackHalf2x16(((b[k] >> 8) & 0x00FF00FFu) ^ 0x64806480u)) - 1152.0, xh[k]);
        }
        return dq_f16(o) * s;
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        // { f16 d, dmin; u8 scales[12]; (Q5_K: u8 qh[32];) u8 qs[128] }; unit part p: qs bytes
        // 32c + 16(p&1) .. +15 (c = p/2), low nibbles in sub-block 2c, high in 2c+1
        uint p = u & 7u, c = p >> 1, i, sc0, m0, sc1, m1;
        vec2 dm;
        mv_k_header(rb, u, i, dm, sc0, m0, sc1, m1);
        uint o = 4u * i;
        uvec4 w = mv_load4(o + (TYPE == GGML_Q5_K ? 48u : 16u) + 16u * p);
        float a0, a1;
        if (TYPE == GGML_Q4_K) {
            a0 = mv_dot_nib(w, 0u, xl, 1024.0);
            a1 = mv_dot_nib(w, 4u, xh, 1024.0);
        } else { // fifth bit: bit 2c (low) / 2c+1 (high) of qh byte 16(p&1) + l
            uvec4 hb = mv_load4(o + 16u + 16u * (p & 1u)) >> (2u * c);
            a0 = mv_dot_nib_hi(w, 0u, hb, 4u, 4u, 0x00100010u, xl, 1024.0);
            a1 = mv_dot_nib_hi(w, 4u, hb, 3u, 5u, 0x00100010u, xh, 1024.0);
        }
        return dm.x * (float(sc0) * a0 + float(sc1) * a1) - dm.y * (float(m0) * sl + float(m1) * sh);
    } else if (TYPE == GGML_Q6_K) {
        // { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }, 210 bytes; unit part p = 4h + 2g + q:
        // ql bytes 16p .. +15 (low nibbles: quarter g, high: g + 2 of half h), qh bytes
        // 32h + 16q .. +15 (bits 2g, 2g + 4), scales 8h + q + 2g and + 4
        uint p = u & 7u, h = p >> 2, g = (p >> 1) & 1u;
        uint o = rb + 210u * (u >> 3);
        uvec4 w = mv_load4(o + 16u * p);
        uvec4 hb = mv_load4(o + 128u + 32u * h + 16u * (p & 1u)) >> (2u * g);
        uint sb = o + 192u + 8u * h + (p & 1u) + 2u * g;
        float sc0 = float(bitfieldExtract(int(dq_u8(sb)), 0, 8)), sc1 = float(bitfieldExtract(int(dq_u8(sb + 4u)), 0, 8));
        float a0 = mv_dot_nib_hi(w, 0u, hb, 4u, 4u, 0x00300030u, xl, 1056.0);
        float a1 = mv_dot_nib_hi(w, 4u, hb, 0u, 8u, 0x00300030u, xh, 1056.0);
        return dq_f16(o + 208u) * (sc0 * a0 + sc1 * a1);
    }
    return 0.0;
}

#endif
