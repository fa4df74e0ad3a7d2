#version 450
// Build-time probe (cmake/shaders.cmake): can this glslc emit OpSDot on packed 4x8-bit
// integers through GL_EXT_spirv_intrinsics, and does spirv-val accept it for Vulkan 1.2?
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { uint v[]; };
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int probe_sdot(uint a, uint b, spirv_literal int packed_format);
void main() { v[2] = uint(probe_sdot(v[0], v[1], 0)); }
