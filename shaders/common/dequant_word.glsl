// Dot products of x with one 32-bit word of a unit (common/dequant_unit.glsl) of a GGUF
// quantized row, for the "lanes" mat-vec (mul_mat_vec_lanes.comp), which gives each unit's
// four words to four adjacent threads: a subgroup then reads W in runs of whole words and x
// in runs of 16-byte vectors, where a thread per unit (mul_mat_vec.comp) reads x 128 bytes
// apart from its neighbours (a cache line per thread and load on NVIDIA).
//
// Word k (0..3) of unit u covers the unit's lo elements mv_unit_x(u) + 4k .. + 3 and hi
// elements mv_unit_gap() further (for every quant type here), so its x is two vec4s, permuted
// to element order 0, 2, 1, 3 as for the unit dot. Same formulas as mv_unit_dot, split by word:
// the scale products are taken per word and the words' sums added in the workgroup reduction.
//
// Needs common/dequant.glsl and common/dequant_unit.glsl first.
#ifndef OSCAR_DEQUANT_WORD_GLSL
#define OSCAR_DEQUANT_WORD_GLSL

// The word at byte offset o (even; when o is 2 mod 4 the word after it is read, clamped to the
// buffer). Without a branch, so that neighbouring threads of different alignment do not diverge.
uint mv_load1(uint o)
{
    uint i = o >> 2;
    uint a = wq[i];
    if (!mv_aligned()) {
        uint b = wq[min(i + 1u, uint(wq.length()) - 1u)];
        a = (o & 2u) != 0u ? (a >> 16) | (b << 16) : a;
    }
    return a;
}

// Whether the type has a min term (the word's dot needs the sums of its x).
bool mv_word_has_min() { return TYPE == GGML_Q4_1 || TYPE == GGML_Q4_K || TYPE == GGML_Q5_K; }

// Word k of unit u of the row at byte rb, decoded: the quants of its lo and hi elements (in
// the permuted order, zero point removed: exact small integers) in lo and hi, and the
// coefficients c with which x . word = c.x * (lo . xl) + c.y * (hi . xh) + c.z * sl + c.w * sh
// (xl, xh: the word's lo and hi x; sl, sh: their sums; c.z = c.w = 0 for the types without a
// min). Split from the dot so that a product over several tokens decodes once.
void mv_word_decode(uint rb, uint u, uint k, out vec4 lo, out vec4 hi, out vec4 c)
{
    if (TYPE == GGML_Q4_0) { // { f16 d; u8 qs[16] }, 18 bytes
        uint o = rb + 18u * u;
        uint w = mv_load1(o + 2u + 4u * k);
        lo = mv_fields(w, 0u, 0u, 0u) - 1032.0;
        hi = mv_fields(w, 4u, 0u, 0u) - 1032.0;
        float d = dq_f16(o);
        c = vec4(d, d, 0.0, 0.0);
    } else if (TYPE == GGML_Q4_1) { // { f16 d, m; u8 qs[16] }, 20 bytes
        uint o = rb + 20u * u;
        vec2 dm = unpackHalf2x16(wq[o >> 2]);
        uint w = wq[(o >> 2) + 1u + k];
        lo = mv_fields(w, 0u, 0u, 0u) - 1024.0;
        hi = mv_fields(w, 4u, 0u, 0u) - 1024.0;
        c = vec4(dm.x, dm.x, dm.y, dm.y);
    } else if (TYPE == GGML_Q8_0) { // { f16 d; i8 qs[32] }, 34 bytes; bytes biased by 128 via xor
        uint o = rb + 34u * u;
        uint a = mv_load1(o + 2u + 4u * k), b = mv_load1(o + 18u + 4u * k);
        lo = vec4(unpackHalf2x16((a & 0x00FF00FFu) ^ 0x64806480u), unpackHalf2x16(((a >> 8) & 0x00FF00FFu) ^ 0x64806480u)) - 1152.0;
        hi = vec4(unpackHalf2x16((b & 0x00FF00FFu) ^ 0x64806480u), unpackHalf2x16(((b >> 8) & 0x00FF00FFu) ^ 0x64806480u)) - 1152.0;
        float d = dq_f16(o);
        c = vec4(d, d, 0.0, 0.0);
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {
        uint p = u & 7u, cc = p >> 1, i, sc0, m0, sc1, m1;
        vec2 dm;
        mv_k_header(rb, u, i, dm, sc0, m0, sc1, m1);
        uint w = wq[i + (TYPE == GGML_Q5_K ? 12u : 4u) + 4u * p + k];
        if (TYPE == GGML_Q4_K) {
            lo = mv_fields(w, 0u, 0u, 0u) - 1024.0;
            hi = mv_fields(w, 4u, 0u, 0u) - 1024.0;
        } else { // fifth bit: bit 2c (low) / 2c+1 (high) of the qh byte
            uint hb = wq[i + 4u + 4u * (p & 1u) + k] >> (2u * cc);
            lo = mv_fields(w, 0u, (hb << 4u) & 0x00100010u, (hb >> 4u) & 0x00100010u) - 1024.0;
            hi = mv_fields(w, 4u, (hb << 3u) & 0x00100010u, (hb >> 5u) & 0x00100010u) - 1024.0;
        }
        c = vec4(dm.x * float(sc0), dm.x * float(sc1), -dm.y * float(m0), -dm.y * float(m1));
    } else { // GGML_Q6_K
        uint p = u & 7u, h = p >> 2, g = (p >> 1) & 1u;
        uint o = rb + 210u * (u >> 3);
        uint w = mv_load1(o + 16u * p + 4u * k);
        uint hb = mv_load1(o + 128u + 32u * h + 16u * (p & 1u) + 4u * k) >> (2u * g);
        uint sb = o + 192u + 8u * h + (p & 1u) + 2u * g;
        float d = dq_f16(o + 208u);
        lo = mv_fields(w, 0u, (hb << 4u) & 0x00300030u, (hb >> 4u) & 0x00300030u) - 1056.0;
        hi = mv_fields(w, 4u, hb & 0x00300030u, (hb >> 8u) & 0x00300030u) - 1056.0;
        c = vec4(d * float(bitfieldExtract(int(dq_u8(sb)), 0, 8)), d * float(bitfieldExtract(int(dq_u8(sb + 4u)), 0, 8)),
                 0.0, 0.0);
    }
}

// x . (word k of unit u) from its decoded form.
float mv_word_apply(vec4 lo, vec4 hi, vec4 c, vec4 xl, vec4 xh, float sl, float sh)
{
    float s = c.x * dot(lo, xl) + c.y * dot(hi, xh);
    if (mv_word_has_min()) s += c.z * sl + c.w * sh;
    return s;
}

// x . (word k of unit u of the row at byte rb). xl, xh: the word's lo and hi x (permuted);
// sl, sh: their sums (used by the types with a min). The value of mv_word_apply of
// mv_word_decode; Q4_0 and Q4_1, whose single-token product runs this shader by default, are
// written out: the H200 runs that form 10% faster (Q4_0 14336 x 4096: 24.2 us against 26.9
// for apply(decode), and 26.4-26.7 with the loads of x or of the scale moved first). Q4_1
// dots the fields as decoded (1024 + quant) and takes the offset out of the sums of x it has
// anyway: 8 subtractions fewer a word, 23.3 -> 20.7 us at 14336 x 4096 (the product is bound
// by its own work, not by its bytes: docs/performance.md). The dot then
// carries ~1024 x per term where the quant's is ~8 x, so fp32 rounds it at ~2^-17 of its size
// (normalised squared error ~3e-10 against the reference). Q4_0, which would have to sum its
// x for it, measured slower that way (25.5 against 23.8 us) and keeps the subtractions.
float mv_word_dot(uint rb, uint u, uint k, vec4 xl, vec4 xh, float sl, float sh)
{
    if (TYPE == GGML_Q4_0) {
        uint o = rb + 18u * u;
        uint w = mv_load1(o + 2u + 4u * k);
        return dq_f16(o) * (dot(mv_fields(w, 0u, 0u, 0u) - 1032.0, xl) + dot(mv_fields(w, 4u, 0u, 0u) - 1032.0, xh));
    } else if (TYPE == GGML_Q4_1) {
        uint o = rb + 20u * u;
        vec2 dm = unpackHalf2x16(wq[o >> 2]);
        uint w = wq[(o >> 2) + 1u + k];
        float xs = sl + sh;
        return dm.x * (dot(mv_fields(w, 0u, 0u, 0u), xl) + dot(mv_fields(w, 4u, 0u, 0u), xh) - 1024.0 * xs) + dm.y * xs;
    }
    vec4 lo, hi, c;
    mv_word_decode(rb, u, k, lo, hi, c);
    return mv_word_apply(lo, hi, c, xl, xh, sl, sh);
}

#endif
