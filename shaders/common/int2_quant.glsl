// The INT2 quantizer of runtime/int2_quant.c in GLSL, bit-exact with it (the contract and the
// exact arithmetic are in runtime/int2_quant.h). One workgroup quantizes one row of
// HEAD_DIM values held in shared memory; any workgroup size works (smaller or larger than the
// row), and nothing depends on the subgroup size: every reduction goes through shared memory.
//
// The including shader defines, before the #include:
//   HEAD_DIM, GROUP   specialization constants (row length d <= KV_MAX_HEAD_DIM, a multiple
//                     of 16; group size G, a power of two dividing d)
//   WG                the workgroup size in x (gl_WorkGroupSize.x)
// and then, per row, in uniform control flow:
//   1. fills q_x[0..HEAD_DIM) and calls barrier()
//   2. calls int2_quantize_row(r): clip at ratio r, clamp, group min/scale (barriers inside)
//   3. reads int2_code_word(w) for w < HEAD_DIM/16 and q_param[g] for g < HEAD_DIM/GROUP
//   4. calls barrier() before refilling q_x for the next row.
// Every fp32 value that feeds a comparison or an fp16 rounding is `precise` so no mul+add is
// fused: Vulkan rounds fp32 add, sub and mul correctly, so the results equal the C reference's.
// NaN inputs have no defined result (the C reference's qsort has none either).
// Signed zeros: Vulkan lets a compiler turn `b < a ? b : a` into fmin and otherwise ignore the
// sign of zero (NVIDIA does), while the reference's min of {+0, -0} is its leftmost element and
// its fp16 min keeps that sign. So every value that is selected (sort, clamp, min, max) moves as
// uint bits and is compared as an integer key that orders like the float (f32_key), and the one
// subtraction whose zero sign reaches the output (max - min) gets it by the IEEE rule explicitly.
//
// Loop budget: lavapipe (llvmpipe) ends a shader invocation after about 65535 loop iterations
// in total, so each loop here runs about d / WG times per row (the sort 36 * d / (2 WG) at
// d = 256): a workgroup of WG >= 32 can quantize hundreds of rows, one of WG = 1 about ten.
#ifndef OSCAR_INT2_QUANT_GLSL
#define OSCAR_INT2_QUANT_GLSL

#include "common/half.glsl"
#include "common/kv_layout.h"

#define INT2_MAX_GROUPS (KV_MAX_HEAD_DIM / 16)

shared float q_x[KV_MAX_HEAD_DIM];      // [d] the row; clamped in place
shared uint q_mn[KV_MAX_HEAD_DIM];      // [d] fp32 bits, segmented min; q_mn[g*G] = min of group g
shared uint q_mx[KV_MAX_HEAD_DIM];      // [d] fp32 bits, segmented max
shared uint q_sort[KV_MAX_HEAD_DIM];    // [next pow2 >= d] bits of |x| sorted ascending (as uints:
                                        // non-negative floats order like their bit patterns)
shared vec4 q_thr[INT2_MAX_GROUPS];     // [d/G] code thresholds t0, t1, t2 and the scale sc
shared uint q_param[INT2_MAX_GROUPS];   // [d/G] fp16 scale (low half) | fp16 min (high half)

// Integer key of fp32 bits with the float's order (non-NaN): -0 and +0 both map to 0.
int f32_key(uint b)
{
    int m = int(b & 0x7FFFFFFFu);
    return (b & 0x80000000u) != 0u ? -m : m;
}

// Clip threshold tau of q_x at ratio r (int2_quant.h): |x| is sorted ascending in shared
// memory by a bitonic network (padded with +inf to a power of two), then
// tau = a[lo] + frac * (a[hi] - a[lo]) exactly as in C. The sorted values do not depend on the
// order ties are broken in, so they equal the reference's qsort result.
float int2_clip_threshold(float r)
{
    const uint n = HEAD_DIM;
    if (!(r < 1.0)) return uintBitsToFloat(0x7F800000u); // +inf: no clipping
    if (r < 0.0) r = 0.0;
    precise float pos = r * float(n - 1u);
    uint lo = uint(floor(pos));
    if (lo > n - 1u) lo = n - 1u;
    uint hi = lo + 1u < n ? lo + 1u : n - 1u;
    precise float frac = pos - float(lo);
    const uint n2 = 1u << uint(findMSB(2u * n - 1u)); // next power of two >= n
    for (uint e = gl_LocalInvocationID.x; e < n2; e += WG)
        q_sort[e] = e < n ? floatBitsToUint(q_x[e]) & 0x7FFFFFFFu : 0x7F800000u;
    barrier();
    for (uint k = 2u; k <= n2; k <<= 1u) {
        for (uint j = k >> 1u; j > 0u; j >>= 1u) {
            // comparator c joins i (bit j clear) and i + j; blocks of k alternate direction
            for (uint c = gl_LocalInvocationID.x; c < n2 / 2u; c += WG) {
                uint i = ((c & ~(j - 1u)) << 1u) | (c & (j - 1u));
                uint a = q_sort[i], b = q_sort[i + j];
                if ((a > b) == ((i & k) == 0u)) {
                    q_sort[i] = b;
                    q_sort[i + j] = a;
                }
            }
            barrier();
        }
    }
    float a_lo = uintBitsToFloat(q_sort[lo]), a_hi = uintBitsToFloat(q_sort[hi]);
    precise float diff = a_hi - a_lo;
    precise float step = frac * diff;
    precise float tau = a_lo + step;
    return tau;
}

// Clip, then per group: min/max (leftmost element wins ties, as the C loop's strict compares
// do, which decides the sign of a zero min), fp16 min and scale, code thresholds.
void int2_quantize_row(float r)
{
    const uint n = HEAD_DIM;
    float tau = int2_clip_threshold(r);
    for (uint e = gl_LocalInvocationID.x; e < n; e += WG) {
        uint vb = floatBitsToUint(q_x[e]), tb = floatBitsToUint(tau);
        int vk = f32_key(vb), tk = f32_key(tb); // tau >= 0: -tau has key -tk
        vb = vk > tk ? tb : (vk < -tk ? tb ^ 0x80000000u : vb);
        q_x[e] = uintBitsToFloat(vb);
        q_mn[e] = vb;
        q_mx[e] = vb;
    }
    barrier();
    // Segmented tree with doubling stride (G is a power of two): at stride s, element e = 2s*c
    // takes in e + s, so q_mn[e] covers the contiguous [e, e + 2s) of its group and the left
    // operand always holds the lower indices.
    for (uint s = 1u; s < GROUP; s <<= 1u) {
        for (uint c = gl_LocalInvocationID.x; c < n / (2u * s); c += WG) {
            uint e = 2u * s * c;
            uint a = q_mn[e], b = q_mn[e + s];
            q_mn[e] = f32_key(b) < f32_key(a) ? b : a;
            a = q_mx[e];
            b = q_mx[e + s];
            q_mx[e] = f32_key(b) > f32_key(a) ? b : a;
        }
        barrier();
    }
    for (uint g = gl_LocalInvocationID.x; g < n / GROUP; g += WG) {
        uint lo = q_mn[g * GROUP], hi = q_mx[g * GROUP]; // fp32 bits
        uint min_h = f32_to_f16_bits(uintBitsToFloat(lo));
        float mn = f16_bits_to_f32(min_h);
        precise float range = uintBitsToFloat(hi) - mn;
        precise float third = range * uintBitsToFloat(0x3EAAAAABu); // (1.0f / 3.0f) in fp32
        // a zero range is -0 only for (-0) - (+0); a nonzero range never underflows to zero
        uint third_bits = range == 0.0 ? (hi == 0x80000000u && min_h == 0u ? 0x80000000u : 0u) : floatBitsToUint(third);
        uint scale_h = f32_to_f16_bits(uintBitsToFloat(third_bits));
        float sc = f16_bits_to_f32(scale_h);
        precise float t0 = mn + 0.5 * sc;
        precise float t1 = mn + 1.5 * sc;
        precise float t2 = mn + 2.5 * sc;
        q_thr[g] = vec4(t0, t1, t2, sc);
        q_param[g] = scale_h | (min_h << 16);
    }
    barrier();
}

// Code of x on a group's grid t = (t0, t1, t2, scale) of q_thr: the nearest level, ties up;
// 0 when the scale is 0.
uint int2_code(float x, vec4 t)
{
    return t.w == 0.0 ? 0u : (x >= t.x ? 1u : 0u) + (x >= t.y ? 1u : 0u) + (x >= t.z ? 1u : 0u);
}

// Word w of the row's packed codes: element 16w + k at bits 2k..2k+1 (kv_layout.h).
uint int2_code_word(uint w)
{
    uint word = 0u;
    for (uint k = 0u; k < 16u; k++) {
        uint e = 16u * w + k;
        vec4 t = q_thr[e / GROUP];
        float x = q_x[e];
        uint c = int2_code(x, t);
        word |= c << (2u * k);
    }
    return word;
}

#endif
