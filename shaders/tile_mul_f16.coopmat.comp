#version 450
// C = A * B by cooperative matrices: A [m][k] and B [k][n] fp16, C [m][n] fp32, all row-major,
// products accumulated in fp32 by the device's matrix units. The tile shape TM x TN x TK comes
// from specialization constants and must be one the device lists for fp16 x fp16 + fp32 -> fp32
// at subgroup scope (runtime/kv/tile_mul.c checks); m, n, k are multiples of TM, TN, TK.
//
// A subgroup computes whole output tiles, walking k in steps of TK. Tiles go round-robin over
// every subgroup of the grid (tile = workgroup * gl_NumSubgroups + gl_SubgroupID, stepping by all
// of them), so the result does not depend on how many subgroups a workgroup holds: the host
// assumes no subgroup size. It makes the workgroup a multiple of the largest subgroup size the
// device may use, so every subgroup is full, as the cooperative operations need.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/tile_layout.h"

layout(local_size_x_id = TILE_SPEC_WORKGROUP) in;
layout(constant_id = TILE_SPEC_WORKGROUP) const uint WORKGROUP = 128;
layout(constant_id = TILE_SPEC_M) const uint TM = 16;
layout(constant_id = TILE_SPEC_N) const uint TN = 16;
layout(constant_id = TILE_SPEC_K) const uint TK = 16;

layout(std430, binding = 0) readonly buffer A { float16_t a[]; }; // [m][k] fp16
layout(std430, binding = 1) readonly buffer B { float16_t b[]; }; // [k][n] fp16
layout(std430, binding = 2) writeonly buffer C { float c[]; };    // [m][n] fp32

layout(push_constant) uniform Push { tile_mul_push pc; };

void main()
{
    uint tiles_n = pc.n / TN, n_tiles = (pc.m / TM) * tiles_n;
    uint step = gl_NumWorkGroups.x * gl_NumSubgroups;
    // t depends on the subgroup only, so the loop is uniform within each subgroup
    for (uint t = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID; t < n_tiles; t += step) {
        uint row = (t / tiles_n) * TM, col = (t % tiles_n) * TN;
        coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> acc =
            coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
        for (uint kk = 0; kk < pc.k; kk += TK) {
            coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ma;
            coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> mb;
            coopMatLoad(ma, a, row * pc.k + kk, pc.k, gl_CooperativeMatrixLayoutRowMajor);
            coopMatLoad(mb, b, kk * pc.n + col, pc.n, gl_CooperativeMatrixLayoutRowMajor);
            acc = coopMatMulAdd(ma, mb, acc);
        }
        coopMatStore(acc, c, row * pc.n + col, pc.n, gl_CooperativeMatrixLayoutRowMajor);
    }
}
