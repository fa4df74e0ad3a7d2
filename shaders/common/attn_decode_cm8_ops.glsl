// The matrix operations of common/attn_decode_cm_body.glsl with the query heads along N = 8
// (APC_HEADS8: devices that list 16 x 8 x 16 fp16 products with fp32 sums, GQA <= 8): the same
// macros, offsets and strides as common/attn_prefill_cm_ops.glsl, each product transposed, so
// that the body's shared-memory layouts are unchanged while its registers hold half as much:
//   APC_QA:             a B operand held in registers: Qᵀ's 16 x 8 block (d rows, heads)
//   APC_QA_LOAD(qa, arr, off): from arr's [head][d] rows, read column-major (stride QS)
//   APC_QK(acc, qa, b): accᵀ += K[b..] · Qᵀ  (16 tokens x 8 heads) with K, row-major from sk,
//                                            as A: the scores S = Q · Kᵀ, transposed
//   APC_PV(acc, a, b):  accᵀ += Vᵀ[b..] · Pᵀ[a..] (16 d-columns x 8 heads): Vᵀ read
//                                            column-major from sv (stride QS) as A, Pᵀ
//                                            column-major from sp (stride PS) as B
//   APC_STORE / APC_LOAD(acc, off, stride):  the transposed accumulator column-major to and from
//                                            ss: element (head h, column c) at off + h * stride + c,
//                                            where the 16 x 16 form keeps it row-major
// Offsets a, b are in f16vec4 units of their arrays. Emulation (APC_EMULATE): a lane holds the
// elements i = lane + e * gl_SubgroupSize of each accumulator (element i is head i / 16,
// column i % 16), every lane all 128 elements of an APC_QA.
#ifndef OSCAR_ATTN_DECODE_CM8_OPS_GLSL
#define OSCAR_ATTN_DECODE_CM8_OPS_GLSL

#ifndef APC_EMULATE

#define APC_UNROLL [[unroll]]
#define APC_ACC coopmat<float, gl_ScopeSubgroup, 16, 8, gl_MatrixUseAccumulator>
#define APC_ZERO APC_ACC(0.0)
#define APC_QA coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseB>
#define APC_QA_LOAD(qa, arr, off) coopMatLoad(qa, arr, off, QS, gl_CooperativeMatrixLayoutColumnMajor)
#define APC_QK(acc, qa, b)                                                                                \
    {                                                                                                     \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma_;                                  \
        coopMatLoad(ma_, sk, b, QS, gl_CooperativeMatrixLayoutRowMajor);                                  \
        acc = coopMatMulAdd(ma_, qa, acc);                                                                \
    }
#define APC_PV(acc, a, b)                                                                                 \
    {                                                                                                     \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma_;                                  \
        coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseB> mb_;                                   \
        coopMatLoad(ma_, sv, b, QS, gl_CooperativeMatrixLayoutColumnMajor);                               \
        coopMatLoad(mb_, sp, a, PS, gl_CooperativeMatrixLayoutColumnMajor);                               \
        acc = coopMatMulAdd(ma_, mb_, acc);                                                               \
    }
#define APC_STORE(acc, off, stride) coopMatStore(acc, ss, off, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define APC_LOAD(acc, off, stride) coopMatLoad(acc, ss, off, stride, gl_CooperativeMatrixLayoutColumnMajor)

#else

const uint APC_ELEMS = 128u; // elements of an accumulator
#include "common/apc_emu_acc.glsl"
struct apc_qa {
    float16_t e[128]; // [8 heads][16] of q
};
#define APC_QA_LOAD(qa, arr, off)                                                                         \
    for (uint i_ = 0u; i_ < 128u; i_++) qa.e[i_] = arr[(off) + (i_ / 16u) * QS + i_ % 16u / 4u][i_ % 4u]

// element (h, t): head h's score of token t, sum over 16 d of K[t][k] q[h][k]
apc_acc apc_qk(apc_qa a, uint b, apc_acc c)
{
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, h = i / 16u, t = i % 16u;
        if (i >= APC_ELEMS) break;
        float s = c.e[e];
        for (uint k = 0u; k < 16u; k++) s += float(sk[b + t * QS + k / 4u][k % 4u]) * float(a.e[h * 16u + k]);
        c.e[e] = s;
    }
    return c;
}

// element (h, n): head h's column n, sum over 16 tokens of V[t][n] P[h][t]
apc_acc apc_pv(uint a, uint b, apc_acc c)
{
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, h = i / 16u, n = i % 16u;
        if (i >= APC_ELEMS) break;
        float s = c.e[e];
        for (uint k = 0u; k < 16u; k++) s += float(sv[b + k * QS + n / 4u][n % 4u]) * float(sp[a + h * PS + k / 4u][k % 4u]);
        c.e[e] = s;
    }
    return c;
}

#endif
#endif
