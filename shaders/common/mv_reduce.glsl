// The last step of the mat-vec shaders (mul_mat_vec, mul_mat_vec_run8, mul_mat_vec_f16,
// mul_mat_vec_lanes): each thread holds partial sums of the workgroup's ROWS rows; they are
// summed over the workgroup in shared memory (a tree, no subgroup-size assumption) and
// written to y.
//
// Needs, declared before it: WORKGROUP and ROWS (spec constants), y[] ([n][y_stride] fp32) and
// pc.rows, pc.n, pc.y_stride. A shader whose threads hold sums for several tokens defines MV_TOKENS (a
// constant, tokens per workgroup) before including it: acc is then [MV_TOKENS][ROWS].
#ifndef OSCAR_MV_REDUCE_GLSL
#define OSCAR_MV_REDUCE_GLSL

#ifdef MV_TOKENS
const uint MV_SUMS = MV_TOKENS * ROWS; // callers declare their sums with this name (glslang matches array types by it)
#else
#define MV_SUMS ROWS
#endif
shared float red[WORKGROUP * MV_SUMS]; // [MV_TOKENS][ROWS][WORKGROUP] partial sums

// y[tok0 + t][row0 + i] = sum over the workgroup's threads of acc[t * ROWS + i], for the rows
// and tokens that exist. All threads call it.
void mv_reduce_store(float acc[MV_SUMS], uint tid, uint row0, uint tok0)
{
    for (uint i = 0u; i < MV_SUMS; i++) red[i * WORKGROUP + tid] = acc[i];
    barrier();
    for (uint s = WORKGROUP >> 1; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint i = 0u; i < MV_SUMS; i++) red[i * WORKGROUP + tid] += red[i * WORKGROUP + tid + s];
        barrier();
    }
    for (uint i = tid; i < MV_SUMS; i += WORKGROUP) {
        uint t = i / ROWS, r = i % ROWS;
        if (row0 + r < pc.rows && tok0 + t < pc.n) y[(tok0 + t) * pc.y_stride + row0 + r] = red[i * WORKGROUP];
    }
}

#endif
