// The last step of the mat-vec shaders (mul_mat_vec, mul_mat_vec_run8, mul_mat_vec_f16,
// mul_mat_vec_lanes): each thread holds partial sums of the workgroup's ROWS rows; they are
// summed over the workgroup in shared memory (a tree, no subgroup-size assumption) and
// written to y.
//
// Needs, declared before it: WORKGROUP and ROWS (spec constants), y[] ([n][rows] fp32) and
// pc.rows, pc.n. A shader whose threads hold sums for several tokens defines MV_TOKENS (a
// constant, tokens per workgroup) before including it: acc is then [MV_TOKENS][ROWS].
//
// A shader that defines MV_FUSE (units, run8, lanes) also takes the RMS norms of a decode
// step into its products, so that a layer needs no norm dispatch and no barrier for it
// (one token; spec constant 6, FUSE; pc.eps and pc.n_part after pc.n):
//   MV_FUSE_RESIDUAL: y is the residual stream x [rows]: y[r] += (W x_in)[r] (the same fp32
//     add as the add kernel), then xg[r] = y[r] * g[r] (g: the next norm's weight) and
//     ss[group] = the sum of y[r]^2 over the workgroup's rows (group = row0 / ROWS);
//   MV_FUSE_NORM: x_in is such an xg and ss holds pc.n_part such partial sums: the products
//     are scaled by 1 / sqrt(sum ss / cols + eps), which makes them W · rms_norm(x) * g.
// The norm's scale is applied after the sum instead of before the product, and its sum of
// squares is added in another order: equal to rms_norm followed by the product up to fp32
// rounding, not bit for bit.
#ifndef OSCAR_MV_REDUCE_GLSL
#define OSCAR_MV_REDUCE_GLSL

#ifdef MV_TOKENS
const uint MV_SUMS = MV_TOKENS * ROWS; // callers declare their sums with this name (glslang matches array types by it)
#else
#define MV_SUMS ROWS
#endif

#ifdef MV_FUSE
#define MV_FUSE_RESIDUAL 1u
#define MV_FUSE_NORM 2u
layout(constant_id = 6) const uint FUSE = 0;                         // 0, MV_FUSE_RESIDUAL or MV_FUSE_NORM
layout(std430, binding = 3) buffer SS { float ss[]; };                // [n_part] partial sums of squares
layout(std430, binding = 4) readonly buffer G { float g_next[]; };    // [rows] RESIDUAL: the next norm's weight
layout(std430, binding = 5) writeonly buffer XG { float xg[]; };      // [rows] RESIDUAL: y * g_next
const uint MV_SLOTS = MV_SUMS + 1u;                                   // the sums, then NORM's sum of squares
#else
#define MV_SLOTS MV_SUMS
#endif
shared float red[WORKGROUP * MV_SLOTS]; // [MV_SLOTS][WORKGROUP] partial sums

// y[tok0 + t][row0 + i] = sum over the workgroup's threads of acc[t * ROWS + i], for the rows
// and tokens that exist. All threads call it.
void mv_reduce_store(float acc[MV_SUMS], uint tid, uint row0, uint tok0)
{
    for (uint i = 0u; i < MV_SUMS; i++) red[i * WORKGROUP + tid] = acc[i];
#ifdef MV_FUSE
    if (FUSE == MV_FUSE_NORM) {
        float s = 0.0;
        for (uint i = tid; i < pc.n_part; i += WORKGROUP) s += ss[i];
        red[MV_SUMS * WORKGROUP + tid] = s;
    }
    uint slots = FUSE == MV_FUSE_NORM ? MV_SLOTS : MV_SUMS;
#else
    uint slots = MV_SUMS;
#endif
    barrier();
    for (uint s = WORKGROUP >> 1; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint i = 0u; i < slots; i++) red[i * WORKGROUP + tid] += red[i * WORKGROUP + tid + s];
        barrier();
    }
    float scale = 1.0;
#ifdef MV_FUSE
    if (FUSE == MV_FUSE_RESIDUAL) {
        if (tid == 0u) {
            float s = 0.0;
            for (uint i = 0u; i < ROWS; i++) {
                uint r = row0 + i;
                if (r < pc.rows) {
                    float v = y[r] + red[i * WORKGROUP];
                    y[r] = v;
                    xg[r] = v * g_next[r];
                    s += v * v;
                }
            }
            ss[row0 / ROWS] = s;
        }
        return;
    }
    if (FUSE == MV_FUSE_NORM) scale = 1.0 / sqrt(red[MV_SUMS * WORKGROUP] / float(pc.cols) + pc.eps);
#endif
    for (uint i = tid; i < MV_SUMS; i += WORKGROUP) {
        uint t = i / ROWS, r = i % ROWS;
        if (row0 + r < pc.rows && tok0 + t < pc.n) y[(tok0 + t) * pc.rows + row0 + r] = red[i * WORKGROUP] * scale;
    }
}

#endif
