/* IEEE fp16 <-> fp32 conversion, round-to-nearest-even, bit-exact with shaders/common/half.glsl.
 * The shaders convert with integer arithmetic too, because Vulkan leaves the rounding of
 * fp32 -> fp16 conversions implementation-defined; doing it by hand makes the GPU's stored
 * scales, mins and fp16 windows equal to the C reference bit for bit. */
#ifndef OSCAR_HALF_H
#define OSCAR_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ovk_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float ovk_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* fp32 -> fp16 bits, round to nearest even; overflow -> inf, NaN -> quiet NaN. */
static inline uint16_t ovk_f32_to_f16(float f)
{
    uint32_t x = ovk_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
    if (abs >= 0x477FF000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7C00u);
    if (abs < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        if (abs < 0x33000000u) return (uint16_t)sign; /* below 2^-25: rounds to zero */
        uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - (abs >> 23); /* 14..24 */
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((abs >> 13) - (112u << 10)); /* rebias exponent 127 -> 15 */
    uint32_t rem = abs & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

/* fp16 bits -> fp32 (exact). */
static inline float ovk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) x = sign;
        else { /* subnormal: value = mant * 2^-24 */
            float v = (float)mant * (1.0f / 16777216.0f);
            x = ovk_f32_bits(v) | sign;
        }
    } else if (exp == 31) {
        x = sign | 0x7F800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    return ovk_bits_f32(x);
}

/* Rounds a float to the nearest fp16 value and back. */
static inline float ovk_round_f16(float f) { return ovk_f16_to_f32(ovk_f32_to_f16(f)); }

#endif
