// The RMS norm of one row, shared by rms_norm.comp and the norm epilogue of the int8 products
// (common/mv_q8_body.glsl), so that both give the same bits: the sum of squares of the row is
// formed as NRM_THREADS threads form it (thread t: elements t, t + NRM_THREADS, ... UNROLL at a
// time, then two levels in shared memory), whatever the size of the workgroup that runs it
// (each of its threads plays the threads t, t + WG, ...). Every multiply and add of the sum is
// `precise`, so no compiler fuses them differently in the two kernels.
//
// The includer defines, before including it:
//   NRM_THREADS       the threads the sum is formed for (a power of two)
//   nrm_elem(i)       element i of the row (with the residual added where there is one)
//   nrm_red, nrm_part shared float arrays of NRM_THREADS and NRM_PARTS floats
// and, for nrm_write_q8, nrm_weight(i) (the norm's weight), nrm_store(i, a, y) (stores element i's
// sum a where the residual is written back, and its result y) and common/q8_quantize.glsl with
// Q8_WORDS_BY_THREADS.
#ifndef OSCAR_RMS_NORM_ROW_GLSL
#define OSCAR_RMS_NORM_ROW_GLSL

const uint NRM_UNROLL = 8u;
const uint NRM_PARTS = NRM_THREADS < 32u ? NRM_THREADS : 32u; // first-level sums

// The row's sum of squares over dim elements, in every thread; every thread calls it (it holds
// two barriers).
float nrm_sum_sq(uint dim)
{
    const uint wg = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x;
    for (uint t = tid; t < NRM_THREADS; t += wg) {
        precise float s = 0.0;
        for (uint i0 = t; i0 < dim; i0 += NRM_UNROLL * NRM_THREADS) {
            float v[NRM_UNROLL];
            [[unroll]] for (uint u = 0u; u < NRM_UNROLL; u++) {
                uint i = i0 + u * NRM_THREADS;
                float a = nrm_elem(min(i, dim - 1u)); // past the row: a valid element, not counted
                v[u] = i < dim ? a : 0.0;
            }
            [[unroll]] for (uint u = 0u; u < NRM_UNROLL; u++) s += v[u] * v[u];
        }
        nrm_red[t] = s;
    }
    // two levels, two barriers: NRM_PARTS threads each sum NRM_THREADS / NRM_PARTS values, then
    // every thread sums the partial sums in the same order
    barrier();
    for (uint k = tid; k < NRM_PARTS; k += wg) {
        precise float p = 0.0;
        for (uint j = k; j < NRM_THREADS; j += NRM_PARTS) p += nrm_red[j];
        nrm_part[k] = p;
    }
    barrier();
    precise float ss = 0.0;
    for (uint k = 0u; k < NRM_PARTS; k++) ss += nrm_part[k];
    return ss;
}

// The norm's scale for a row of dim elements whose sum of squares is ss.
float nrm_scale(float ss, uint dim, float eps) { return 1.0 / sqrt(ss / float(dim) + eps); }

#ifdef Q8_WORDS_BY_THREADS
// y = (a * scale) * w for the row of dim elements (a = nrm_elem), stored by nrm_store, and y's
// int8 blocks from word word0 of q8_codes on (q8_store_word): a word of 4 elements a thread,
// loads before stores (y may alias x). Every thread calls it (it holds barriers).
void nrm_write_q8(uint dim, float scale, uint word0)
{
    const uint wg = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x, words = dim / 4u;
    for (uint w0 = 0u; w0 < words; w0 += wg) {
        uint wd = w0 + tid, i = 4u * wd;
        bool live = wd < words;
        vec4 a = vec4(0.0), g = vec4(0.0);
        if (live) {
            [[unroll]] for (uint u = 0u; u < 4u; u++) {
                a[u] = nrm_elem(i + u);
                g[u] = nrm_weight(i + u);
            }
        }
        vec4 v;
        [[unroll]] for (uint u = 0u; u < 4u; u++) v[u] = (a[u] * scale) * g[u];
        if (live)
            [[unroll]] for (uint u = 0u; u < 4u; u++) nrm_store(i + u, a[u], v[u]);
        q8_store_word(tid, live, word0 + wd, v);
    }
}
#endif

#endif
