// The matrix operations of common/mul_mat_short_body.glsl, included after its shared arrays:
// accumulators TM x TN (fp32), A matrices TM x TK (W rows from sw, row-major, stride SKW), B
// matrices TK x TN (tokens from xs, column-major, stride SXS), loads at an offset in fp16 x4
// units, stores column-major at an offset and stride in floats.
//
// On cooperative matrices, or (MMC_EMULATE) in scalar code with the same offsets and strides: a
// lane holds the elements i = lane + e * gl_SubgroupSize of each accumulator (element i is row
// i % TM, column i / TM); an A or B "matrix" is its offset into its shared array, read when
// multiplied (neither changes between a load and its products). The host keeps TM * TN <=
// MMC_EMU_ELEMS * the smallest subgroup size.
#ifndef OSCAR_MUL_MAT_SHORT_OPS_GLSL
#define OSCAR_MUL_MAT_SHORT_OPS_GLSL

#ifndef MMC_EMULATE

#define MMS_UNROLL [[unroll]] // GL_EXT_control_flow_attributes: arrays of matrices stay in registers
#define MMS_ACC coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define MMS_A coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define MMS_B coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>
#define MMS_ZERO MMS_ACC(0.0)
#define MMS_LOAD_A(m, off) coopMatLoad(m, sw, off, SKW, gl_CooperativeMatrixLayoutRowMajor)
#define MMS_LOAD_B(m, off) coopMatLoad(m, xs, off, SXS, gl_CooperativeMatrixLayoutColumnMajor)
#define MMS_MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#define MMS_STORE(c, buf, off, stride) coopMatStore(c, buf, off, stride, gl_CooperativeMatrixLayoutColumnMajor)

#else

#define MMS_UNROLL // unrolled, the emulation takes lavapipe minutes to compile
const uint MMS_EMU_E = MMC_EMU_ELEMS;
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
#define MMS_STORE(c, buf, off, stride)                                                                    \
    for (uint e_ = 0u; e_ < MMS_EMU_E; e_++) {                                                            \
        uint i_ = gl_SubgroupInvocationID + e_ * gl_SubgroupSize;                                         \
        if (i_ < TM * TN) buf[(off) + (i_ / TM) * (stride) + i_ % TM] = c.e[e_];                          \
    }

mms_acc mms_zero()
{
    mms_acc c;
    for (uint e = 0u; e < MMS_EMU_E; e++) c.e[e] = 0.0;
    return c;
}

// c + A B for A at offset a of sw (row-major, stride SKW) and B at offset b of xs (column-major,
// stride SXS)
mms_acc mms_mul_add(uint a, uint b, mms_acc c)
{
    for (uint e = 0u; e < MMS_EMU_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, m = i % TM, n = i / TM;
        if (i >= TM * TN) break;
        for (uint k = 0u; k < TK; k++)
            c.e[e] += float(sw[a + m * SKW + k / 4u][k % 4u]) * float(xs[b + n * SXS + k / 4u][k % 4u]);
    }
    return c;
}

#endif
#endif
