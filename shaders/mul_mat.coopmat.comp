#version 450
// Dequantizing matrix-matrix product (prefill) on cooperative matrices: y[t][r] = sum_c W[r][c] *
// x[t][c], the interface of mul_mat.comp (W [rows][cols] in its raw GGUF blocks, x [n][cols] fp32,
// y [n][y_stride] fp32). Inputs are rounded to fp16 (W after dequantization in fp32, x as read;
// beyond the fp16 range clamped to +-65504), products accumulated in fp32 by the device's matrix
// units (ovk_ref_mul_mat_f16 in runtime/ref/ops_ref.c is the rounding-faithful reference).
//
// A workgroup computes a BM x BN tile (rows x tokens). Per step of BK = 32 columns its threads
// dequantize the W tile (runs of 8 elements, as mul_mat.comp) and convert the x tile, both to
// fp16 in shared memory, k contiguous: sw [BM][SK], sx [BN][SK]. Workgroup z sums only its
// slice of the columns (a short batch's split) into its own part of y; mul_mat_slices adds the
// parts up. The tile is cut into WARPS =
// SG_M x SG_N warp tiles of CM x CN matrices of TM x TN; a subgroup owns one warp tile and keeps
// its CM * CN accumulators across the steps. The next step's global reads are issued before the
// current step's matrix products and held in registers as read; they are dequantized, rounded
// and stored after the products.
//
// No subgroup size is assumed: the host sizes the workgroup as SG_M * SG_N times the largest
// subgroup size the device may use, so subgroups are full; where the device runs fewer, larger
// subgroups, each takes several warp tiles one pass after another (every pass re-reads the
// tiles), and where it runs more, the extra ones only load.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/mul_mat_coopmat_body.glsl"
