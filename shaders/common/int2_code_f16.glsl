// INT2 codes as exact fp16 numbers, two at a time (elements e and e + 8 of a code word, the two
// halves of a 32-bit word). The two bits of each half, masked in place and or-ed into 1024.0,
// give 1024 + c·4^k exactly (k = e, or e - 5 once the word is shifted by 10, so that c·4^k stays
// within fp16's 10 mantissa bits); an fma by 4^-k less 4^-k·1024 leaves c. With e a constant
// (unrolled loops) a word costs one shift, and a pair a mask-or and an fma, where a shift by
// 2e, a mask-or and a subtraction would take three; callers with a variable offset shift the
// word once and pass a constant e. Shared by the decode-attention kernels (attn_decode_decl.glsl
// with ATTN_F16, attn_decode_cm_body.glsl). Needs GL_EXT_shader_explicit_arithmetic_types_float16.
#ifndef OSCAR_INT2_CODE_F16_GLSL
#define OSCAR_INT2_CODE_F16_GLSL

// Elements (e, e + 8) of code word w (e < 8) as exact fp16 codes c.
f16vec2 code_pair(uint w, uint e)
{
    uint k = e < 5u ? e : e - 5u, s = e < 5u ? w : w >> 10u;
    float16_t f = float16_t(1.0 / float(1u << (2u * k)));
    return fma(unpackFloat2x16((s & (0x00030003u << (2u * k))) | 0x64006400u), f16vec2(f), f16vec2(-1024.0hf * f));
}

#endif
