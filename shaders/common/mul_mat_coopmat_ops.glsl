// The matrix operations of common/mul_mat_coopmat_body.glsl, included after its shared tiles:
// matrices of TM x TN (accumulators, fp32), TM x TK (A: W rows from sw, row-major) and TK x TN
// (B: tokens from sx, column-major), loads at an offset in fp16 x4 units with stride SK, stores
// column-major at an offset and stride in floats.
//
// On cooperative matrices, or (MMC_EMULATE) in scalar code with the same offsets and strides: a
// lane holds the elements i = lane + e * gl_SubgroupSize of each accumulator (element i is row
// i % TM, column i / TM), an A or B "matrix" is its offset into the shared tile, read when
// multiplied (the tiles do not change between a load and its products). The emulation lets a
// device without cooperative matrices check the kernel's indexing; the host keeps
// TM * TN <= MMC_EMU_E * the smallest subgroup size.
#ifndef OSCAR_MUL_MAT_COOPMAT_OPS_GLSL
#define OSCAR_MUL_MAT_COOPMAT_OPS_GLSL

#ifndef MMC_EMULATE

#define MMC_UNROLL [[unroll]] // GL_EXT_control_flow_attributes
#define MMC_ACC coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define MMC_A coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define MMC_B coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>
#define MMC_ZERO MMC_ACC(0.0)
#define MMC_LOAD_A(m, off) coopMatLoad(m, sw, off, SK, gl_CooperativeMatrixLayoutRowMajor)
#define MMC_LOAD_B(m, off) coopMatLoad(m, sx, off, SK, gl_CooperativeMatrixLayoutColumnMajor)
#define MMC_MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#define MMC_STORE(c, buf, off, stride) coopMatStore(c, buf, off, stride, gl_CooperativeMatrixLayoutColumnMajor)

#else

#define MMC_UNROLL // unrolled, the emulation takes lavapipe minutes to compile
const uint MMC_EMU_E = MMC_EMU_ELEMS;
struct mmc_acc {
    float e[MMC_EMU_E]; // this lane's elements lane + e * gl_SubgroupSize of a TM x TN accumulator
};
#define MMC_ACC mmc_acc
#define MMC_A uint
#define MMC_B uint
#define MMC_ZERO mmc_zero()
#define MMC_LOAD_A(m, off) m = (off)
#define MMC_LOAD_B(m, off) m = (off)
#define MMC_MUL_ADD(a, b, c) mmc_mul_add(a, b, c)
#define MMC_STORE(c, buf, off, stride)                                                                    \
    for (uint e_ = 0u; e_ < MMC_EMU_E; e_++) {                                                            \
        uint i_ = gl_SubgroupInvocationID + e_ * gl_SubgroupSize;                                         \
        if (i_ < TM * TN) buf[(off) + (i_ / TM) * (stride) + i_ % TM] = c.e[e_];                          \
    }

mmc_acc mmc_zero()
{
    mmc_acc c;
    for (uint e = 0u; e < MMC_EMU_E; e++) c.e[e] = 0.0;
    return c;
}

// c + A B for A at offset a of sw (row-major, stride SK) and B at offset b of sx (column-major)
mmc_acc mmc_mul_add(uint a, uint b, mmc_acc c)
{
    for (uint e = 0u; e < MMC_EMU_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize, m = i % TM, n = i / TM;
        if (i >= TM * TN) break;
        for (uint k = 0u; k < TK; k++)
            c.e[e] += float(sw[a + m * SK + k / 4u][k % 4u]) * float(sx[b + n * SK + k / 4u][k % 4u]);
    }
    return c;
}

#endif
#endif
