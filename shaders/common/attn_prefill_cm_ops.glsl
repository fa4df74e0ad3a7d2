// The matrix operations of common/attn_prefill_cm_body.glsl, included after its shared arrays:
// 16 x 16 x 16 products, fp16 inputs and fp32 accumulators, subgroup scope.
//   APC_QA:             an A operand held in registers (a row block's 16 x 16 part of Q)
//   APC_QA_LOAD(qa, arr, off): qa from shared array arr (row-major, stride QS f16vec4)
//   APC_QK(acc, qa, b): acc += qa · Kᵀ[b..]      B from sk read column-major (a token's d
//                                                elements are contiguous: Kᵀ's columns)
//   APC_PV(acc, a, b):  acc += P[a..] · V[b..]   A from sp (row-major, stride PS f16vec4),
//                                                B from sv (row-major, stride QS f16vec4)
//   APC_STORE / APC_LOAD(acc, off, stride):      row-major, to and from ss (floats)
// Offsets a, b are in f16vec4 units of their arrays.
//
// On cooperative matrices, or (APC_EMULATE) in scalar code with the same offsets and strides: a
// lane holds the elements i = lane + e * gl_SubgroupSize of each accumulator (element i is row
// i / 16, column i % 16), every lane holds all 256 elements of an APC_QA, and the other A and B
// operands are read from shared memory when multiplied (the arrays do not change between a load
// and its product). The emulation lets a device without
// cooperative matrices check the kernel's indexing; it needs subgroups of 4 or more lanes.
#ifndef OSCAR_ATTN_PREFILL_CM_OPS_GLSL
#define OSCAR_ATTN_PREFILL_CM_OPS_GLSL

#ifndef APC_EMULATE

#define APC_UNROLL [[unroll]]
#define APC_ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define APC_ZERO APC_ACC(0.0)
#define APC_QA coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define APC_QA_LOAD(qa, arr, off) coopMatLoad(qa, arr, off, QS, gl_CooperativeMatrixLayoutRowMajor)
#define APC_QK(acc, qa, b)                                                                                \
    {                                                                                                     \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb_;                                  \
        coopMatLoad(mb_, sk, b, QS, gl_CooperativeMatrixLayoutColumnMajor);                               \
        acc = coopMatMulAdd(qa, mb_, acc);                                                                \
    }
#define APC_PV(acc, a, b)                                                                                 \
    {                                                                                                     \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma_;                                  \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb_;                                  \
        coopMatLoad(ma_, sp, a, PS, gl_CooperativeMatrixLayoutRowMajor);                                  \
        coopMatLoad(mb_, sv, b, QS, gl_CooperativeMatrixLayoutRowMajor);                                  \
        acc = coopMatMulAdd(ma_, mb_, acc);                                                               \
    }
#define APC_STORE(acc, off, stride) coopMatStore(acc, ss, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#define APC_LOAD(acc, off, stride) coopMatLoad(acc, ss, off, stride, gl_CooperativeMatrixLayoutRowMajor)

#else

const uint APC_ELEMS = 256u; // elements of an accumulator
#include "common/apc_emu_acc.glsl"
struct apc_qa {
    float16_t e[256]; // [16][16] row-major
};
#define APC_QA_LOAD(qa, arr, off)                                                                         \
    for (uint i_ = 0u; i_ < 256u; i_++) qa.e[i_] = arr[(off) + (i_ / 16u) * QS + i_ % 16u / 4u][i_ % 4u]

apc_acc apc_qk(apc_qa a, uint b, apc_acc c)
{
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, m = i / 16u, n = i % 16u;
        if (i >= APC_ELEMS) break;
        float s = c.e[e];
        for (uint k = 0u; k < 16u; k++) s += float(a.e[m * 16u + k]) * float(sk[b + n * QS + k / 4u][k % 4u]);
        c.e[e] = s;
    }
    return c;
}

apc_acc apc_pv(uint a, uint b, apc_acc c)
{
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, m = i / 16u, n = i % 16u;
        if (i >= APC_ELEMS) break;
        float s = c.e[e];
        for (uint k = 0u; k < 16u; k++) s += float(sp[a + m * PS + k / 4u][k % 4u]) * float(sv[b + k * QS + n / 4u][n % 4u]);
        c.e[e] = s;
    }
    return c;
}

#endif
#endif
