/* The cooperative-matrix tile multiply's push constants, shared by C (runtime/kv/tile_mul.c) and
 * GLSL (shaders/tile_mul_f16.coopmat.comp); C checks the size with static_assert. */
#ifndef OSCAR_TILE_LAYOUT_H
#define OSCAR_TILE_LAYOUT_H

#ifdef GL_core_profile
#define TM_U32 uint
#else
#include <stdint.h>
#define TM_U32 uint32_t
#endif

/* specialization-constant ids: 0 the workgroup size, then the tile shape */
#define TILE_SPEC_WORKGROUP 0
#define TILE_SPEC_M 1
#define TILE_SPEC_N 2
#define TILE_SPEC_K 3

struct tile_mul_push {
    TM_U32 m, n, k; /* C is m x n, A m x k, B k x n; multiples of the tile's M, N, K */
};

#endif
