#version 450
// Where a subgroup's lanes hold the elements of the 16 x 8 x 16 fp16 matrices of
// attn_decode_cm8: A (16 x 16 fp16), B (16 x 8 fp16) and the accumulator (16 x 8 fp32), each
// loaded row-major from a matrix whose element (r, c) holds its own index r * columns + c (exact
// in fp16), then every lane writes what each of its components holds. The order of a matrix's
// components over the lanes is the implementation's own (the specification leaves it open); the
// host reads it here once (runtime/kv/coopmat_fragments.c) to know whether a kernel that builds
// its operands in registers may run. One workgroup of one subgroup.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x_id = 0) in;

// [lanes][24]: per lane A's components (up to 8 used), B's (8), the accumulator's (8); -1 past a
// matrix's length; then [3] the three lengths
layout(std430, binding = 0) writeonly buffer Out { float out_[]; };

shared float16_t sa[256]; // A [16][16]
shared float16_t sb[128]; // B [16][8]
shared float sc[128];     // accumulator [16][8]

void main()
{
    uint l = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    for (uint i = l; i < 256u; i += wg) sa[i] = float16_t(i);
    for (uint i = l; i < 128u; i += wg) sb[i] = float16_t(i), sc[i] = float(i);
    barrier();
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseB> b;
    coopmat<float, gl_ScopeSubgroup, 16, 8, gl_MatrixUseAccumulator> c;
    coopMatLoad(a, sa, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, sb, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(c, sc, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
    uint o = l * 24u;
    for (uint i = 0u; i < 8u; i++) {
        out_[o + i] = i < uint(a.length()) ? float(a[i]) : -1.0;
        out_[o + 8u + i] = i < uint(b.length()) ? float(b[i]) : -1.0;
        out_[o + 16u + i] = i < uint(c.length()) ? float(c[i]) : -1.0;
    }
    if (l == 0u) out_[wg * 24u] = float(a.length()), out_[wg * 24u + 1u] = float(b.length()), out_[wg * 24u + 2u] = float(c.length());
}
