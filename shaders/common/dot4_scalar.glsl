// dot4(a, b): the dot product of the four signed bytes of a and b, by scalar code (every
// device): the bytes are extracted and multiplied in 32-bit integers. The same integer as
// common/dot4_idot.glsl.
#ifndef OSCAR_DOT4_GLSL
#define OSCAR_DOT4_GLSL

int dot4(uint a, uint b)
{
    ivec4 va = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8), bitfieldExtract(int(a), 16, 8),
                     bitfieldExtract(int(a), 24, 8));
    ivec4 vb = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8), bitfieldExtract(int(b), 16, 8),
                     bitfieldExtract(int(b), 24, 8));
    return va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
}

#endif
