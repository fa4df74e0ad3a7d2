#version 450
// fp32 -> fp16 (round to nearest even) and back, for the round-trip test of common/half.glsl
// against runtime/half.h. Inputs are raw fp32 bit patterns so no float op touches them first.
#include "common/half.glsl"

layout(local_size_x_id = 0) in;                 // spec 0: workgroup size

layout(std430, binding = 0) readonly buffer In { uint in_bits[]; };   // [n] fp32 bit patterns
layout(std430, binding = 1) writeonly buffer Half { uint half_bits[]; }; // [n] fp16 bits, one per word
layout(std430, binding = 2) writeonly buffer Back { uint back_bits[]; }; // [n] fp32 bits of the fp16 value

layout(push_constant) uniform Push { uint n; } pc;

void main()
{
    // 2-D grid so tiny workgroups can still cover n (x is limited to 65535 groups)
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n) return;
    uint h = f32_to_f16_bits(uintBitsToFloat(in_bits[i]));
    half_bits[i] = h;
    back_bits[i] = floatBitsToUint(f16_bits_to_f32(h));
}
