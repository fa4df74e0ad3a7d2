// The input rows of kv_append.comp and kv_append_texel.comp: element i of a K or V row, fp32 or
// fp16 (INPUT_F16), after RoPE on load for K rows (ROPE, common/rope.glsl). Include after the
// bindings k_in, v_in, pos, inv_freq and the push constants pc (pc.n_rot).
#ifndef OSCAR_KV_APPEND_INPUT_GLSL
#define OSCAR_KV_APPEND_INPUT_GLSL

uint in_word(uint kind, uint i) { return kind == 0u ? k_in[i] : v_in[i]; }

// Element i of the input row whose first element (fp32) / word (fp16) is at `base`.
float in_elem(uint kind, uint base, uint i)
{
    if (INPUT_F16 != 0u) {
        vec2 f = unpackHalf2x16(in_word(kind, base + i / 2u));
        return (i & 1u) == 0u ? f.x : f.y;
    }
    return uintBitsToFloat(in_word(kind, base + i));
}

// Element i of the input row at `base` after RoPE at position p (K rows with ROPE; else as read).
float roped_elem(uint kind, uint base, uint i, int p)
{
    uint pair, i0, i1;
    if (ROPE == KV_ROPE_NONE || kind != 0u || !rope_pair_of(i, pc.n_rot, ROPE == KV_ROPE_NEOX, pair, i0, i1))
        return in_elem(kind, base, i);
    vec2 y = rope_pair(in_elem(kind, base, i0), in_elem(kind, base, i1), p, inv_freq[pair]);
    return i == i0 ? y.x : y.y;
}

#endif
