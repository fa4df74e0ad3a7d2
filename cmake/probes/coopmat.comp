#version 450
// Build-time probe (cmake/shaders.cmake): can this glslangValidator compile
// GL_KHR_cooperative_matrix with sizes from specialization constants, and does the
// spirv-val beside it accept the result for Vulkan 1.2?
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TM = 16;
layout(constant_id = 2) const uint TN = 16;
layout(constant_id = 3) const uint TK = 16;
layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) writeonly buffer C { float c[]; };
void main()
{
    coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> mb;
    coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> mc =
        coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
    coopMatLoad(ma, a, 0, TK, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, a, 0, TN, gl_CooperativeMatrixLayoutRowMajor);
    mc = coopMatMulAdd(ma, mb, mc);
    coopMatStore(mc, c, 0, TN, gl_CooperativeMatrixLayoutRowMajor);
}
