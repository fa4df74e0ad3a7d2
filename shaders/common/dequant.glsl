// GGML weight blocks read straight from their GGUF byte layout (runtime/ggml_types.h spells
// the layouts out; this file follows them formula for formula, in the same fp32 order, so a
// dequantized value equals the C reference's bit for bit).
//
// The including shader declares, before including this file:
//   layout(constant_id = 1) const uint TYPE = ...;              // a GGML type id below
//   layout(std430, binding = N) readonly buffer W { uint wq[]; }; // the raw blocks, as words
//
// Blocks need not be 4-byte aligned (Q4_0 is 18 bytes, Q6_K 210), but every block size is
// even and every fp16 field sits at an even offset, so 16- and 32-bit fields are read from at
// most two words with shifts. Byte offsets are uint: one binding holds < 4 GiB.
//
// The unit of work is a run of 8 consecutive elements of a row starting at an element index
// that is a multiple of 8. For the plain float types a "block" is such a run (8 elements).
#ifndef OSCAR_DEQUANT_GLSL
#define OSCAR_DEQUANT_GLSL

const uint GGML_F32 = 0u;
const uint GGML_F16 = 1u;
const uint GGML_Q4_0 = 2u;
const uint GGML_Q4_1 = 3u;
const uint GGML_Q8_0 = 8u;
const uint GGML_Q4_K = 12u;
const uint GGML_Q5_K = 13u;
const uint GGML_Q6_K = 14u;
const uint GGML_BF16 = 30u;

// Elements per block (8 for the float types, see above) and bytes per block. Folded to
// constants once TYPE is specialised.
uint dq_block_elems()
{
    if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K || TYPE == GGML_Q6_K) return 256u;
    if (TYPE == GGML_Q4_0 || TYPE == GGML_Q4_1 || TYPE == GGML_Q8_0) return 32u;
    return 8u;
}

uint dq_block_bytes()
{
    switch (TYPE) {
    case GGML_F32: return 32u;
    case GGML_Q4_0: return 18u;
    case GGML_Q4_1: return 20u;
    case GGML_Q8_0: return 34u;
    case GGML_Q4_K: return 144u;
    case GGML_Q5_K: return 176u;
    case GGML_Q6_K: return 210u;
    default: return 16u; // F16, BF16
    }
}

// Bytes of one row of `cols` elements (cols a multiple of dq_block_elems()).
uint dq_row_bytes(uint cols) { return (cols / dq_block_elems()) * dq_block_bytes(); }

uint dq_u8(uint o) { return (wq[o >> 2] >> ((o & 3u) << 3)) & 0xFFu; }
uint dq_u16(uint o) { return (wq[o >> 2] >> ((o & 2u) << 3)) & 0xFFFFu; }           // o even
float dq_f16(uint o) { return unpackHalf2x16(dq_u16(o)).x; }                         // o even
uint dq_u32(uint o)                                                                   // o even
{
    uint i = o >> 2;
    if ((o & 2u) == 0u) return wq[i];
    return (wq[i] >> 16) | (wq[i + 1u] << 16);
}

// 4-bit field k (0..7) of the 8 bytes lo|hi at nibble `shift` (0 or 4) of each byte.
uint dq_nib(uint lo, uint hi, uint k, uint shift)
{
    uint w = k < 4u ? lo : hi;
    return (w >> (((k & 3u) << 3) + shift)) & 15u;
}

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block whose 12 scale
// bytes start at byte `sb`.
void dq_k_scale_min(uint sb, uint s, out uint sc, out uint m)
{
    if (s < 4u) {
        sc = dq_u8(sb + s) & 63u;
        m = dq_u8(sb + s + 4u) & 63u;
    } else {
        uint a = dq_u8(sb + s + 4u);
        sc = (a & 15u) | ((dq_u8(sb + s - 4u) >> 6) << 4);
        m = (a >> 4) | ((dq_u8(sb + s) >> 6) << 4);
    }
}

// Dequantizes elements e..e+7 (e a multiple of 8, < dq_block_elems()) of the block that
// starts at byte `blk`.
void dequant8(uint blk, uint e, out float v[8])
{
    if (TYPE == GGML_F32) {
        uint i = (blk >> 2) + e;
        for (uint k = 0u; k < 8u; k++) v[k] = uintBitsToFloat(wq[i + k]);
    } else if (TYPE == GGML_F16) {
        uint i = (blk >> 2) + (e >> 1);
        for (uint k = 0u; k < 4u; k++) {
            vec2 f = unpackHalf2x16(wq[i + k]);
            v[2u * k] = f.x;
            v[2u * k + 1u] = f.y;
        }
    } else if (TYPE == GGML_BF16) {
        uint i = (blk >> 2) + (e >> 1);
        for (uint k = 0u; k < 4u; k++) {
            uint w = wq[i + k];
            v[2u * k] = uintBitsToFloat(w << 16);
            v[2u * k + 1u] = uintBitsToFloat(w & 0xFFFF0000u);
        }
    } else if (TYPE == GGML_Q4_0 || TYPE == GGML_Q4_1) {
        // y[j] = low nibble of qs[j], y[j+16] = high nibble of qs[j]
        uint qs = blk + (TYPE == GGML_Q4_0 ? 2u : 4u) + (e & 15u);
        uint lo = dq_u32(qs), hi = dq_u32(qs + 4u), shift = e >= 16u ? 4u : 0u;
        float d = dq_f16(blk);
        if (TYPE == GGML_Q4_0) {
            for (uint k = 0u; k < 8u; k++) v[k] = d * float(int(dq_nib(lo, hi, k, shift)) - 8);
        } else {
            float m = dq_f16(blk + 2u);
            for (uint k = 0u; k < 8u; k++) {
                precise float p = d * float(dq_nib(lo, hi, k, shift));
                v[k] = p + m;
            }
        }
    } else if (TYPE == GGML_Q8_0) {
        uint lo = dq_u32(blk + 2u + e), hi = dq_u32(blk + 6u + e);
        float d = dq_f16(blk);
        for (uint k = 0u; k < 8u; k++)
            v[k] = d * float(bitfieldExtract(int(k < 4u ? lo : hi), int((k & 3u) << 3), 8));
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        // chunk c of 64: y[64c + l] = low nibble of qs[32c + l] (sub-block 2c),
        //                y[64c + 32 + l] = high nibble (sub-block 2c+1)
        uint c = e >> 6, upper = (e >> 5) & 1u, l0 = e & 31u;
        uint qs = blk + (TYPE == GGML_Q5_K ? 48u : 16u) + 32u * c + l0;
        uint lo = dq_u32(qs), hi = dq_u32(qs + 4u), shift = upper * 4u;
        uint sc, m;
        dq_k_scale_min(blk + 4u, 2u * c + upper, sc, m);
        precise float dl = dq_f16(blk) * float(sc);
        precise float ml = dq_f16(blk + 2u) * float(m);
        uint hlo = 0u, hhi = 0u, hbit = 2u * c + upper;
        if (TYPE == GGML_Q5_K) {
            hlo = dq_u32(blk + 16u + l0);
            hhi = dq_u32(blk + 20u + l0);
        }
        for (uint k = 0u; k < 8u; k++) {
            uint q = dq_nib(lo, hi, k, shift);
            if (TYPE == GGML_Q5_K) q += ((((k < 4u ? hlo : hhi) >> (((k & 3u) << 3) + hbit)) & 1u) << 4);
            precise float p = dl * float(q);
            v[k] = p - ml;
        }
    } else if (TYPE == GGML_Q6_K) {
        // half h of 128, quarter g of 32 within it, l0 in 0..31:
        //   ql byte 64h + 32(g&1) + l, nibble g>>1; qh byte 128 + 32h + l, bits 2g;
        //   scale byte 192 + 8h + l/16 + 2g
        uint h = e >> 7, g = (e >> 5) & 3u, l0 = e & 31u;
        uint ql = blk + 64u * h + 32u * (g & 1u) + l0;
        uint lo = dq_u32(ql), hi = dq_u32(ql + 4u), shift = (g >> 1) * 4u;
        uint qh = blk + 128u + 32u * h + l0;
        uint hlo = dq_u32(qh), hhi = dq_u32(qh + 4u);
        int sc = bitfieldExtract(int(dq_u8(blk + 192u + 8u * h + (l0 >> 4) + 2u * g)), 0, 8);
        precise float ds = dq_f16(blk + 208u) * float(sc);
        for (uint k = 0u; k < 8u; k++) {
            uint q = dq_nib(lo, hi, k, shift) | ((((k < 4u ? hlo : hhi) >> (((k & 3u) << 3) + 2u * g)) & 3u) << 4);
            v[k] = ds * float(int(q) - 32);
        }
    } else {
        for (uint k = 0u; k < 8u; k++) v[k] = 0.0;
    }
}

#endif
