// Rotary position embedding of one pair, shared by rope.comp and the KV cache's kernels that
// apply it on load (kv_append.comp to K, rotate_rows.comp to q), so the fused and the separate
// paths give the same bits: every step is `precise` (no multiply-add is fused), and sin/cos see
// the same reduced angle. Pair i (< n_rot/2) turns by theta = pos * inv_freq[i]:
//   y0 = x0 cos(theta) - x1 sin(theta),  y1 = x0 sin(theta) + x1 cos(theta)
// theta is reduced to [-pi, pi] (two-constant Cody-Waite) before sin/cos, whose accuracy Vulkan
// only bounds in that range.
#ifndef OSCAR_ROPE_GLSL
#define OSCAR_ROPE_GLSL

vec2 rope_pair(float x0, float x1, int pos, float inv_freq)
{
    precise float theta = float(pos) * inv_freq;
    precise float k = round(theta * 0.15915494309189535);
    precise float r = (theta - k * 6.28125) - k * 0.0019353071795864769; // 6.28125 + lo = 2 pi
    float c = cos(r), s = sin(r);
    precise float y0 = x0 * c - x1 * s;
    precise float y1 = x0 * s + x1 * c;
    return vec2(y0, y1);
}

// Element i of a head row after RoPE needs pair `pair` = (i0, i1); false for the elements
// n_rot.. that pass through. neox: pairs (i, i + n_rot/2), else adjacent (2i, 2i + 1).
bool rope_pair_of(uint i, uint n_rot, bool neox, out uint pair, out uint i0, out uint i1)
{
    uint half_rot = n_rot >> 1;
    pair = neox ? i % max(half_rot, 1u) : i >> 1;
    i0 = neox ? pair : 2u * pair;
    i1 = neox ? pair + half_rot : 2u * pair + 1u;
    return i < n_rot;
}

#endif
