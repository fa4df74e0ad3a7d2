#version 450
// fp32 -> int8 blocks for the integer dot products (layout and rounding: common/q8_layout.h).
// One invocation per block of 32 elements; rows are consecutive blocks, so any number of rows of
// n elements (n a multiple of 32) is n_rows * n / 32 blocks. Inputs must be finite.
#extension GL_GOOGLE_include_directive : require
#include "common/q8_layout.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 64;

#include "common/grid.glsl" // after the workgroup size, which it reads

layout(std430, binding = 0) readonly buffer X { float x[]; };      // [n_blocks * 32] fp32
layout(std430, binding = 1) writeonly buffer Q { uint codes[]; };  // [n_blocks * 8] 4 int8 per word
layout(std430, binding = 2) writeonly buffer S { float scales[]; }; // [n_blocks] fp32

layout(push_constant) uniform Push { q8_quantize_push pc; };

void main()
{
    uint b = grid_invocation();
    if (b >= pc.n_blocks) return;
    uint base = b * OSCAR_Q8_BLOCK;
    float amax = 0.0;
    for (uint i = 0; i < OSCAR_Q8_BLOCK; i++) amax = max(amax, abs(x[base + i]));
    float d = amax * OSCAR_Q8_INV_127;
    scales[b] = d;
    for (uint w = 0; w < OSCAR_Q8_WORDS; w++) {
        uint word = 0;
        for (uint j = 0; j < 4; j++) {
            // x / d may be off by a few ulp on some GPUs (Vulkan allows 2.5): a value within that of
            // a rounding tie can land on the other code; the tests allow exactly that
            int c = d > 0.0 ? clamp(int(roundEven(x[base + 4 * w + j] / d)), -127, 127) : 0;
            word |= uint(c & 0xFF) << (8 * j);
        }
        codes[b * OSCAR_Q8_WORDS + w] = word;
    }
}
