// The matrix operations of common/mul_mat_short_body.glsl, included after its buffers and shared
// arrays: accumulators TM x TN fp32, A TM x TK (W rows from the subgroup's slot of sw, row-major,
// stride SK in fp16 x4), B TK x TN (tokens of xh, column-major, stride pc.x_stride in fp16 x4);
// accumulators go to and come from sr (fp32, column-major) at an offset and stride in floats.
//
// On cooperative matrices, or (MMS_EMULATE) in scalar code with the same offsets and strides: a
// lane holds elements i = lane + e * gl_SubgroupSize of each accumulator (row i % TM, column
// i / TM); an A or B "matrix" is its offset, read when multiplied (the slot does not change
// between a load and its products, xh never). The host keeps TM * TN <= MMS_EMU_E * the smallest
// subgroup size.
#ifndef OSCAR_MUL_MAT_SHORT_OPS_GLSL
#define OSCAR_MUL_MAT_SHORT_OPS_GLSL

#ifndef MMS_EMULATE

#define MMS_UNROLL [[unroll]] // GL_EXT_control_flow_attributes
#define MMS_ACC coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define MMS_A coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define MMS_B coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>
#define MMS_ZERO MMS_ACC(0.0)
#define MMS_LOAD_A(m, off) coopMatLoad(m, sw, off, SK, gl_CooperativeMatrixLayoutRowMajor)
#define MMS_LOAD_B(m, off) coopMatLoad(m, xh, off, pc.x_stride, gl_CooperativeMatrixLayoutColumnMajor)
#define MMS_MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#define MMS_STORE_SR(c, off, stride) coopMatStore(c, sr, off, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define MMS_ADD_SR(c, off, stride)                                                                        \
    {                                                                                                     \
        MMS_ACC p_;                                                                                       \
        coopMatLoad(p_, sr, off, stride, gl_CooperativeMatrixLayoutColumnMajor);                          \
        c = c + p_;                                                                                       \
    }

#else

#define MMS_UNROLL // unrolled, the emulation takes lavapipe minutes to compile
const uint MMS_EMU_E = MMS_EMU_ELEMS;
struct mms_acc {
    float e[MMS_EMU_E]; // this lane's elements lane + e * gl_SubgroupSize of a TM x TN accumulator
};
#define MMS_ACC mms_acc
#define MMS_A uint
#define MMS_B uint
#define MMS_ZERO mms_zero()
#define MMS_LOAD_A(m, off) m = (off)
#define MMS_LOAD_B(m, off) m = (off)
#define MMS_MUL_ADD(a, b, c) mms_mul_add(a, b, c)
#define MMS_STORE_SR(c, off, stride)                                                                      \
    for (uint e_ = 0u; e_ < MMS_EMU_E; e_++) {                                                            \
        uint i_ = gl_SubgroupInvocationID + e_ * gl_SubgroupSize;                                         \
        if (i_ < TM * TN) sr[(off) + (i_ / TM) * (stride) + i_ % TM] = c.e[e_];                           \
    }
#define MMS_ADD_SR(c, off, stride)                                                                        \
    for (uint e_ = 0u; e_ < MMS_EMU_E; e_++) {                                                            \
        uint i_ = gl_SubgroupInvocationID + e_ * gl_SubgroupSize;                                         \
        if (i_ < TM * TN) c.e[e_] += sr[(off) + (i_ / TM) * (stride) + i_ % TM];                          \
    }

mms_acc mms_zero()
{
    mms_acc c;
    for (uint e = 0u; e < MMS_EMU_E; e++) c.e[e] = 0.0;
    return c;
}

// c + A B for A at offset a of sw (row-major, stride SK) and B at offset b of xh (column-major,
// stride pc.x_stride)
mms_acc mms_mul_add(uint a, uint b, mms_acc c)
{
    for (uint e = 0u; e < MMS_EMU_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, m = i % TM, n = i / TM;
        if (i >= TM * TN) break;
        for (uint k = 0u; k < TK; k++)
            c.e[e] += float(sw[a + m * SK + k / 4u][k % 4u]) * float(xh[b + n * pc.x_stride + k / 4u][k % 4u]);
    }
    return c;
}

#endif
#endif
