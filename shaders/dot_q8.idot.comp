#version 450
// Int8 block dot products with VK_KHR_shader_integer_dot_product (common/dot_q8_body.glsl says
// what it computes): OpSDot on two words read as packed 4 x 8-bit signed vectors, reached
// through GL_EXT_spirv_intrinsics (Debian's glslang 11 has no GLSL spelling of it). Capabilities
// 6019 DotProduct and 6018 DotProductInput4x8BitPacked; operand 0 = PackedVectorFormat4x8Bit.
// Needs shaderIntegerDotProduct enabled; the same integers as dot_q8.comp, so the same result
// up to the order of fp32 additions.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_4x8_packed(uint a, uint b, spirv_literal int packed_vector_format);

int dot4(uint a, uint b) { return sdot_4x8_packed(a, b, 0); }

#include "common/dot_q8_body.glsl"
