// INT2 codes as fp32 numbers without a conversion instruction: or-ing code c into the mantissa
// of 1.0 gives x = 1 + c/4, so q·c = 4 (q·x - qsum) and scale * c + min = 4 scale * x +
// (min - 4 scale). Shared by the decode-attention kernels (attn_decode_decl.glsl,
// attn_decode_rows.comp).
#ifndef OSCAR_INT2_CODE_X_GLSL
#define OSCAR_INT2_CODE_X_GLSL

// Element e (0..15) of code word w as x = 1 + c/4.
float code_x(uint w, uint e)
{
    uint b = 2u * e <= 21u ? w << (21u - 2u * e) : w >> (2u * e - 21u);
    return uintBitsToFloat((b & 0x00600000u) | 0x3F800000u);
}

vec4 code_x4(uint w, uint e0)
{
    return vec4(code_x(w, e0), code_x(w, e0 + 1u), code_x(w, e0 + 2u), code_x(w, e0 + 3u));
}

#endif
