// One block of OSCAR_Q8_BLOCK fp32 values to int8 codes and its scale (layout and rounding:
// common/q8_layout.h), for the kernels that prepare x for the integer dot products: the
// includer declares the buffers q8_codes (uint, 4 codes per word) and q8_scales (float) and
// enables GL_EXT_control_flow_attributes: every loop is unrolled, so the block stays in
// registers (an array indexed by a loop variable goes to local memory on some GPUs, a memory
// latency per element).
#ifndef OSCAR_Q8_QUANTIZE_GLSL
#define OSCAR_Q8_QUANTIZE_GLSL

// The scale of a block whose largest magnitude is amax.
float q8_scale(float amax) { return amax * OSCAR_Q8_INV_127; }

// One word of codes: the 4 values v of a block of scale d, element j in byte j.
uint q8_pack_word(vec4 v, float d)
{
    uint word = 0u;
    [[unroll]] for (uint j = 0u; j < 4u; j++) {
        // v / d may be off by a few ulp on some GPUs (Vulkan allows 2.5): a value within that of
        // a rounding tie can land on the other code; the tests allow exactly that
        int c = d > 0.0 ? clamp(int(roundEven(v[j] / d)), -127, 127) : 0;
        word |= uint(c & 0xFF) << (8u * j);
    }
    return word;
}

// Block b (codes words b * OSCAR_Q8_WORDS.., scale b) <- v. Values must be finite.
void q8_store_block(uint b, float v[OSCAR_Q8_BLOCK])
{
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < OSCAR_Q8_BLOCK; i++) amax = max(amax, abs(v[i]));
    float d = q8_scale(amax);
    q8_scales[b] = d;
    [[unroll]] for (uint w = 0u; w < OSCAR_Q8_WORDS; w++)
        q8_codes[b * OSCAR_Q8_WORDS + w] = q8_pack_word(vec4(v[4u * w], v[4u * w + 1u], v[4u * w + 2u], v[4u * w + 3u]), d);
}

#ifdef Q8_WORDS_BY_THREADS
// Words prepared by consecutive threads of a workgroup, a word of 4 values each, so that the
// row's loads and stores coalesce (a thread per block of 32 makes each of its loads touch 32
// cache lines across a subgroup: 3x slower on the H100). The 8 threads of a block share their
// largest magnitudes through the includer's shared float q8_amax[WORKGROUP] (WORKGROUP a
// multiple of 8, every pass starting at a word that is a multiple of 8). Every thread of the
// workgroup calls it (it holds barriers); a `live` one stores word `word` of codes (0-based over
// the whole q8_codes) from its values v, the block's first one the scale too.
void q8_store_word(uint tid, bool live, uint word, vec4 v)
{
    q8_amax[tid] = live ? max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))) : 0.0;
    barrier();
    uint t0 = tid & ~7u;
    float amax = 0.0;
    [[unroll]] for (uint j = 0u; j < 8u; j++) amax = max(amax, q8_amax[t0 + j]);
    float d = q8_scale(amax);
    if (live) {
        q8_codes[word] = q8_pack_word(v, d);
        if ((word & 7u) == 0u) q8_scales[word / OSCAR_Q8_WORDS] = d;
    }
    barrier(); // q8_amax is read before the next pass writes it
}
#endif

#endif
