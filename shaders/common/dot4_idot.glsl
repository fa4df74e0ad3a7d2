// dot4(a, b): the dot product of the four signed bytes of a and b by OpSDot
// (VK_KHR_shader_integer_dot_product), reached through GL_EXT_spirv_intrinsics (Debian's
// glslang 11 has no GLSL spelling of it). Capabilities 6019 DotProduct and 6018
// DotProductInput4x8BitPacked; operand 0 = PackedVectorFormat4x8Bit. Needs
// shaderIntegerDotProduct enabled; the same integer as common/dot4_scalar.glsl.
#ifndef OSCAR_DOT4_GLSL
#define OSCAR_DOT4_GLSL
#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_4x8_packed(uint a, uint b, spirv_literal int packed_vector_format);

int dot4(uint a, uint b) { return sdot_4x8_packed(a, b, 0); }

#endif
