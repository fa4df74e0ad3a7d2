// SiLU, the gate of SwiGLU: silu(g) = g / (1 + exp(-g)). One definition for swiglu.comp and the
// planes product's GLU form, so the two round alike.
float silu(float g) { return g / (1.0 + exp(-g)); }
