// The last step of the mat-vec shaders (mul_mat_vec, mul_mat_vec_run8, mul_mat_vec_f16): each
// thread holds partial sums of the workgroup's ROWS rows; they are summed over the workgroup
// in shared memory (a tree, no subgroup-size assumption) and written to y.
//
// Needs, declared before it: WORKGROUP and ROWS (spec constants), y[] ([n][rows] fp32) and
// pc.rows.
#ifndef OSCAR_MV_REDUCE_GLSL
#define OSCAR_MV_REDUCE_GLSL

shared float red[WORKGROUP * ROWS]; // [ROWS][WORKGROUP] partial sums

// y[tok][row0 + i] = sum over the workgroup's threads of acc[i], for the rows that exist. All
// threads call it.
void mv_reduce_store(float acc[ROWS], uint tid, uint row0, uint tok)
{
    for (uint i = 0u; i < ROWS; i++) red[i * WORKGROUP + tid] = acc[i];
    barrier();
    for (uint s = WORKGROUP >> 1; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint i = 0u; i < ROWS; i++) red[i * WORKGROUP + tid] += red[i * WORKGROUP + tid + s];
        barrier();
    }
    if (tid < ROWS && row0 + tid < pc.rows) y[tok * pc.rows + row0 + tid] = red[tid * WORKGROUP];
}

#endif
