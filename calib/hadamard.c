/* Walsh–Hadamard matrix and the bit-reversal permutation of R = U·H·P (calib.h). The matrix's
 * elements come from the KV cache's construction (ovk_hadamard_entry), so the calibrator's H
 * and the runtime's mode int2-hadamard are one matrix. */
#include "calib.h"
#include "error.h"
#include "orthogonal.h"

/* Largest d the dense matrix helpers accept (16 MiB of float64 at 1024; 4096 is generous). */
#define HADAMARD_MAX_D 4096u

static int is_power_of_two(uint32_t d) { return d != 0 && (d & (d - 1)) == 0; }

static uint32_t log2_u32(uint32_t d)
{
    uint32_t b = 0;
    while ((1u << b) < d) b++;
    return b;
}

static oscar_status check_dim(uint32_t d, const char *what)
{
    if (!is_power_of_two(d) || d > HADAMARD_MAX_D)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT,
                           "%s: head_dim %u is not a power of two in 1..%u (the Walsh-Hadamard "
                           "matrix exists only for d = 2^k)", what, d, HADAMARD_MAX_D);
    return OSCAR_OK;
}

oscar_status ovk_hadamard_matrix(uint32_t d, double *H)
{
    oscar_status st = check_dim(d, "ovk_hadamard_matrix");
    if (st != OSCAR_OK) return st;
    if (!H) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_hadamard_matrix: H is NULL");
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) H[(size_t)i * d + j] = ovk_hadamard_entry(d, i, j);
    return OSCAR_OK;
}

oscar_status ovk_bit_reversal_permutation(uint32_t d, uint32_t *perm)
{
    oscar_status st = check_dim(d, "ovk_bit_reversal_permutation");
    if (st != OSCAR_OK) return st;
    if (!perm) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_bit_reversal_permutation: perm is NULL");
    uint32_t bits = log2_u32(d);
    for (uint32_t p = 0; p < d; p++) {
        uint32_t r = 0;
        for (uint32_t b = 0; b < bits; b++)
            if (p & (1u << b)) r |= 1u << (bits - 1 - b);
        perm[p] = r;
    }
    return OSCAR_OK;
}
