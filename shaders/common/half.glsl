// fp32 -> fp16 bits with round-to-nearest-even by integer arithmetic: bit-exact with
// runtime/half.h (Vulkan leaves the rounding of float->half conversions to the driver).
// fp16 -> fp32 uses unpackHalf2x16, which is exact.
#ifndef OSCAR_HALF_GLSL
#define OSCAR_HALF_GLSL

uint f32_to_f16_bits(float f)
{
    uint x = floatBitsToUint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return sign | 0x7C00u | (a > 0x7F800000u ? 0x200u : 0u);
    if (a >= 0x477FF000u) return sign | 0x7C00u;
    if (a < 0x38800000u) {
        if (a < 0x33000000u) return sign;
        uint mant = (a & 0x7FFFFFu) | 0x800000u;
        uint shift = 126u - (a >> 23);
        uint h = mant >> shift;
        uint rem = mant & ((1u << shift) - 1u);
        uint halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u) != 0u)) h++;
        return sign | h;
    }
    uint h = (a >> 13) - (112u << 10);
    uint rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
    return sign | h;
}

// Two floats -> one word of two fp16 (lo = first), like packHalf2x16 but with exact rounding.
uint pack_half2(float lo, float hi) { return f32_to_f16_bits(lo) | (f32_to_f16_bits(hi) << 16); }

float f16_bits_to_f32(uint h) { return unpackHalf2x16(h & 0xFFFFu).x; }

float round_f16(float f) { return f16_bits_to_f32(f32_to_f16_bits(f)); }

#endif
