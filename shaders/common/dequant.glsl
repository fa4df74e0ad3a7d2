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
//
// An includer whose binding starts on 16 bytes and whose rows are whole blocks may define
// DQ_W16 and declare the same binding as `uvec4 wq4[]` and `uvec2 wq2[]` too: dq_fetch8 then
// reads the float types' runs and the K-quants' (16-byte aligned blocks) pieces 16 or 8 bytes a
// load, a quarter to a third as many loads, each across fewer of a subgroup's cache lines.
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

// A run of 8 elements is read in two halves, so that a kernel can issue the reads of its next
// run before working on the current one: dq_fetch8 only reads the words the run needs (r,
// below), dq_decode8 turns them into the values with no further memory access. dequant8 is the
// two in a row.
const uint DQ_RAW = 8u; // words a run's fetch keeps

// The word at index i where `need` holds, else 0 (the third word under 8 bytes at an even
// offset, which lies past the buffer's end when the 8 bytes are word-aligned).
uint dq_word_if(uint i, bool need) { return need ? wq[i] : 0u; }

// The 32 bits at byte 2 of w0 (odd) or byte 0 (even), continued in w1: what dq_u32 reads at an
// even offset o from the words o >> 2 and o >> 2 + 1.
uint dq_take32(uint w0, uint w1, bool odd) { return odd ? (w0 >> 16) | (w1 << 16) : w0; }

// The fp16 at byte 2 (odd) or 0 of w, in fp32.
float dq_half(uint w, bool odd) { return unpackHalf2x16(odd ? w >> 16 : w).x; }

// Byte j (0..11) of the 12 bytes w.x | w.y | w.z.
uint dq_byte12(uvec3 w, uint j)
{
    uint x = j < 4u ? w.x : (j < 8u ? w.y : w.z);
    return (x >> ((j & 3u) << 3)) & 0xFFu;
}

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block whose 12 scale bytes are
// w.
void dq_k_scale_min(uvec3 w, uint s, out uint sc, out uint m)
{
    if (s < 4u) {
        sc = dq_byte12(w, s) & 63u;
        m = dq_byte12(w, s + 4u) & 63u;
    } else {
        uint a = dq_byte12(w, s + 4u);
        sc = (a & 15u) | ((dq_byte12(w, s - 4u) >> 6) << 4);
        m = (a >> 4) | ((dq_byte12(w, s) >> 6) << 4);
    }
}

// The words of elements e..e+7 (e a multiple of 8, < dq_block_elems()) of the block that starts
// at byte `blk`, per type (words past those listed are 0):
//   F32 r[0..7] the values; F16, BF16 r[0..3] the values in pairs;
//   Q4_0, Q8_0 r[0] the word holding d, r[1..3] from the word holding the run's first code byte;
//   Q4_1 r[0] d | m, r[1..2] the codes (the block is word-aligned: 20 bytes);
//   Q4_K, Q5_K r[0] d | dmin, r[1..3] the 12 scale bytes, r[4..5] the codes, Q5_K r[6..7] the
//     high bits (word-aligned: 144 and 176 bytes);
//   Q6_K r[0..2] from the word holding the first ql byte, r[3..5] from the first qh byte's,
//     r[6] the word holding the scale byte, r[7] the one holding d.
void dq_fetch8(uint blk, uint e, out uint r[DQ_RAW])
{
    for (uint k = 0u; k < DQ_RAW; k++) r[k] = 0u;
    uint b = blk >> 2;
#ifdef DQ_W16
    if (TYPE == GGML_F32) { // 8 words from a multiple of 8
        uvec4 lo = wq4[(b + e) >> 2], hi = wq4[((b + e) >> 2) + 1u];
        r = uint[DQ_RAW](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
        return;
    }
    if (TYPE == GGML_F16 || TYPE == GGML_BF16) { // 4 words from a multiple of 4
        uvec4 v = wq4[(b + (e >> 1)) >> 2];
        r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
        return;
    }
    if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) { // the header on 16 bytes, the codes on 8
        uint i = (blk + (TYPE == GGML_Q5_K ? 48u : 16u) + 32u * (e >> 6) + (e & 31u)) >> 2;
        uvec4 h = wq4[b >> 2];
        uvec2 c = wq2[i >> 1];
        r[0] = h.x, r[1] = h.y, r[2] = h.z, r[3] = h.w, r[4] = c.x, r[5] = c.y;
        if (TYPE == GGML_Q5_K) {
            uvec2 q = wq2[(b + 4u + ((e & 31u) >> 2)) >> 1];
            r[6] = q.x, r[7] = q.y;
        }
        return;
    }
#endif
    if (TYPE == GGML_F32) {
        for (uint k = 0u; k < 8u; k++) r[k] = wq[b + e + k];
    } else if (TYPE == GGML_F16 || TYPE == GGML_BF16) {
        for (uint k = 0u; k < 4u; k++) r[k] = wq[b + (e >> 1) + k];
    } else if (TYPE == GGML_Q4_0 || TYPE == GGML_Q8_0) {
        uint o = blk + 2u + (TYPE == GGML_Q4_0 ? e & 15u : e); // y[j] and y[j+16] share Q4_0's byte j
        r[0] = wq[b];
        r[1] = wq[o >> 2];
        r[2] = wq[(o >> 2) + 1u];
        r[3] = dq_word_if((o >> 2) + 2u, (o & 2u) != 0u);
    } else if (TYPE == GGML_Q4_1) {
        uint i = (blk + 4u + (e & 15u)) >> 2;
        r[0] = wq[b];
        r[1] = wq[i];
        r[2] = wq[i + 1u];
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        // chunk c of 64: y[64c + l] = low nibble of qs[32c + l] (sub-block 2c),
        //                y[64c + 32 + l] = high nibble (sub-block 2c+1)
        uint i = (blk + (TYPE == GGML_Q5_K ? 48u : 16u) + 32u * (e >> 6) + (e & 31u)) >> 2;
        for (uint k = 0u; k < 4u; k++) r[k] = wq[b + k];
        r[4] = wq[i];
        r[5] = wq[i + 1u];
        if (TYPE == GGML_Q5_K) {
            r[6] = wq[b + 4u + ((e & 31u) >> 2)];
            r[7] = wq[b + 5u + ((e & 31u) >> 2)];
        }
    } else if (TYPE == GGML_Q6_K) {
        // half h of 128, quarter g of 32 within it, l0 in 0..31:
        //   ql byte 64h + 32(g&1) + l, nibble g>>1; qh byte 128 + 32h + l, bits 2g;
        //   scale byte 192 + 8h + l/16 + 2g
        uint h = e >> 7, g = (e >> 5) & 3u, l0 = e & 31u;
        uint ql = blk + 64u * h + 32u * (g & 1u) + l0, qh = blk + 128u + 32u * h + l0;
        bool odd = (blk & 2u) != 0u;
        r[0] = wq[ql >> 2];
        r[1] = wq[(ql >> 2) + 1u];
        r[2] = dq_word_if((ql >> 2) + 2u, odd);
        r[3] = wq[qh >> 2];
        r[4] = wq[(qh >> 2) + 1u];
        r[5] = dq_word_if((qh >> 2) + 2u, odd);
        r[6] = wq[(blk + 192u + 8u * h + (l0 >> 4) + 2u * g) >> 2];
        r[7] = wq[(blk + 208u) >> 2];
    }
}

// Elements e..e+7 of the block at byte offset blk, from the words dq_fetch8(blk, e) read; a is
// blk & 3. The same formulas in the same fp32 order as the C reference.
void dq_decode8(uint r[DQ_RAW], uint e, uint a, out float v[8])
{
    bool odd = (a & 2u) != 0u; // blk % 4 == 2: fields at even offsets of the block sit at odd halves
    if (TYPE == GGML_F32) {
        for (uint k = 0u; k < 8u; k++) v[k] = uintBitsToFloat(r[k]);
    } else if (TYPE == GGML_F16) {
        for (uint k = 0u; k < 4u; k++) {
            vec2 f = unpackHalf2x16(r[k]);
            v[2u * k] = f.x;
            v[2u * k + 1u] = f.y;
        }
    } else if (TYPE == GGML_BF16) {
        for (uint k = 0u; k < 4u; k++) {
            v[2u * k] = uintBitsToFloat(r[k] << 16);
            v[2u * k + 1u] = uintBitsToFloat(r[k] & 0xFFFF0000u);
        }
    } else if (TYPE == GGML_Q4_0 || TYPE == GGML_Q4_1) {
        // y[j] = low nibble of qs[j], y[j+16] = high nibble of qs[j]
        uint shift = e >= 16u ? 4u : 0u;
        if (TYPE == GGML_Q4_0) {
            uint lo = dq_take32(r[1], r[2], !odd), hi = dq_take32(r[2], r[3], !odd); // codes at blk + 2
            float d = dq_half(r[0], odd);
            for (uint k = 0u; k < 8u; k++) v[k] = d * float(int(dq_nib(lo, hi, k, shift)) - 8);
        } else {
            vec2 dm = unpackHalf2x16(r[0]);
            for (uint k = 0u; k < 8u; k++) {
                precise float p = dm.x * float(dq_nib(r[1], r[2], k, shift));
                v[k] = p + dm.y;
            }
        }
    } else if (TYPE == GGML_Q8_0) {
        uint lo = dq_take32(r[1], r[2], !odd), hi = dq_take32(r[2], r[3], !odd);
        float d = dq_half(r[0], odd);
        for (uint k = 0u; k < 8u; k++)
            v[k] = d * float(bitfieldExtract(int(k < 4u ? lo : hi), int((k & 3u) << 3), 8));
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        uint c = e >> 6, upper = (e >> 5) & 1u, shift = upper * 4u, hbit = 2u * c + upper;
        uint sc, m;
        dq_k_scale_min(uvec3(r[1], r[2], r[3]), 2u * c + upper, sc, m);
        vec2 dm = unpackHalf2x16(r[0]);
        precise float dl = dm.x * float(sc);
        precise float ml = dm.y * float(m);
        for (uint k = 0u; k < 8u; k++) {
            uint q = dq_nib(r[4], r[5], k, shift);
            if (TYPE == GGML_Q5_K) q += ((((k < 4u ? r[6] : r[7]) >> (((k & 3u) << 3) + hbit)) & 1u) << 4);
            precise float p = dl * float(q);
            v[k] = p - ml;
        }
    } else if (TYPE == GGML_Q6_K) {
        uint g = (e >> 5) & 3u, l0 = e & 31u, shift = (g >> 1) * 4u;
        uint lo = dq_take32(r[0], r[1], odd), hi = dq_take32(r[1], r[2], odd);
        uint hlo = dq_take32(r[3], r[4], odd), hhi = dq_take32(r[4], r[5], odd);
        uint sb = a + (l0 >> 4) + 2u * g; // the scale byte's offset, mod 4 (192 + 8h is a multiple of 4)
        int sc = bitfieldExtract(int(r[6] >> ((sb & 3u) << 3)), 0, 8);
        precise float ds = dq_half(r[7], odd) * float(sc);
        for (uint k = 0u; k < 8u; k++) {
            uint q = dq_nib(lo, hi, k, shift) | ((((k < 4u ? hlo : hhi) >> (((k & 3u) << 3) + 2u * g)) & 3u) << 4);
            v[k] = ds * float(int(q) - 32);
        }
    } else {
        for (uint k = 0u; k < 8u; k++) v[k] = 0.0;
    }
}

// Dequantizes elements e..e+7 (e a multiple of 8, < dq_block_elems()) of the block that
// starts at byte `blk`.
void dequant8(uint blk, uint e, out float v[8])
{
    uint r[DQ_RAW];
    dq_fetch8(blk, e, r);
    dq_decode8(r, e, blk & 3u, v);
}

#endif
