#version 450
// Int8 block dot products, scalar: every device (common/dot_q8_body.glsl says what it computes).
// The four signed bytes of each word are extracted and multiplied in 32-bit integers.
#extension GL_GOOGLE_include_directive : require

int dot4(uint a, uint b)
{
    ivec4 va = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8), bitfieldExtract(int(a), 16, 8),
                     bitfieldExtract(int(a), 24, 8));
    ivec4 vb = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8), bitfieldExtract(int(b), 16, 8),
                     bitfieldExtract(int(b), 24, 8));
    return va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
}

#include "common/dot_q8_body.glsl"
