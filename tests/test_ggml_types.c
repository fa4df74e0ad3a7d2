/* GGML type table and reference (de)quantizers.
 *
 *  1. The table: ids, block sizes and bytes per block as in ggml's ggml-common.h.
 *  2. A hand-built block per type decoded to values worked out by hand from the layout in
 *     ggml_types.h (the expected numbers are literals, not computed by the decoder).
 *  3. Exactness: values on each type's grid (integer codes times power-of-two scales) survive
 *     quantize -> dequantize bit for bit.
 *  4. Round-trip error on Gaussian rows with outliers, two bounds per type:
 *     per element |x - y| <= step/2 (step = the block's or sub-block's scale; Q4_0/Q5_0: <= |d|,
 *     since ggml's sign convention can clip the opposite extreme), plus a normalised squared
 *     error bound (sum (x-y)^2 / sum x^2) on N(0, s^2) rows, s = 1, 0.02, 30 / on rows with
 *     20x outliers every 97 elements:
 *       Q8_0 4e-5 / 1.6e-4   Q6_K 5e-4 / 1.6e-3   Q5_0 2.5e-3 / 9e-3   Q5_1 2e-3 / 3e-3
 *       Q5_K 2.1e-3 / 3e-3   Q4_0 1e-2 / 2.4e-2   Q4_1 8.5e-3 / 1.1e-2 Q4_K 8.5e-3 / 1.3e-2
 *       F16 7e-8             BF16 4e-6 / 4.5e-6
 *     (round-to-nearest with outward-rounded scales: a little worse than ggml's searched
 *     encoders, which is fine for test models and references).
 *  5. Bad arguments are refused with INVALID_ARGUMENT. */
#include <math.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "test_util.h"

#define MAXN 4096

/* ---- 1. the table ---------------------------------------------------------------------- */

static void test_table(void)
{
    struct { uint32_t id; const char *name; uint32_t bs, ts; } want[] = {
        { 0, "F32", 1, 4 },     { 1, "F16", 1, 2 },      { 2, "Q4_0", 32, 18 },   { 3, "Q4_1", 32, 20 },
        { 6, "Q5_0", 32, 22 },  { 7, "Q5_1", 32, 24 },   { 8, "Q8_0", 32, 34 },   { 12, "Q4_K", 256, 144 },
        { 13, "Q5_K", 256, 176 }, { 14, "Q6_K", 256, 210 }, { 30, "BF16", 1, 2 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ovk_ggml_type_info *t = ovk_ggml_type_get(want[i].id);
        CHECK_MSG(t != NULL, "type %u", want[i].id);
        if (!t) continue;
        CHECK_MSG(strcmp(t->name, want[i].name) == 0, "type %u name %s", want[i].id, t->name);
        CHECK_MSG(t->block_size == want[i].bs && t->type_size == want[i].ts, "type %s: %u/%u", t->name, t->block_size, t->type_size);
        CHECK(t->has_dequantize && t->has_quantize);
    }
    CHECK(ovk_ggml_type_get(4) == NULL);  /* removed Q4_2 */
    CHECK(ovk_ggml_type_get(5) == NULL);
    CHECK(ovk_ggml_type_get(16) == NULL); /* IQ2_XXS: not in the table */
    CHECK(ovk_ggml_type_get(31) == NULL);
    CHECK(ovk_ggml_type_get(1000) == NULL);
    CHECK(strcmp(ovk_ggml_type_name(99), "unknown") == 0);
    CHECK(ovk_ggml_type_get(OSCAR_GGML_TYPE_Q2_K) && !ovk_ggml_type_get(OSCAR_GGML_TYPE_Q2_K)->has_dequantize);

    uint64_t b = 0;
    CHECK_OK(ovk_ggml_row_size(OSCAR_GGML_TYPE_Q4_K, 512, &b));
    CHECK(b == 288);
    CHECK_OK(ovk_ggml_row_size(OSCAR_GGML_TYPE_Q4_1, 576, &b));
    CHECK(b == 360); /* SmolLM2's rows: 18 blocks x 20 bytes */
    CHECK_STATUS(ovk_ggml_row_size(OSCAR_GGML_TYPE_Q4_K, 100, &b), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_row_size(OSCAR_GGML_TYPE_F32, UINT64_MAX / 2, &b), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_row_size(77, 32, &b), OSCAR_ERROR_INVALID_ARGUMENT);
}

/* ---- 2. hand-built blocks -------------------------------------------------------------- */

static void expect(const char *what, const float *y, const float *want, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (y[i] != want[i]) {
            if (bad++ < 5) fprintf(stderr, "%s: y[%d] = %g, want %g\n", what, i, y[i], want[i]);
        }
    CHECK_MSG(bad == 0, "%s: %d wrong values", what, bad);
}

static void test_hand_blocks(void)
{
    float y[256], want[256];

    { /* F16 / BF16 / F32 */
        uint8_t h[] = { 0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00 }; /* 1, -2, 65504, 2^-24 */
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_F16, h, y, 4));
        CHECK(y[0] == 1.0f && y[1] == -2.0f && y[2] == 65504.0f && y[3] == ldexpf(1.0f, -24));
        uint8_t bf[] = { 0x80, 0x3F, 0x40, 0xC0, 0x49, 0x40 }; /* 1, -3, 3.140625 */
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_BF16, bf, y, 3));
        CHECK(y[0] == 1.0f && y[1] == -3.0f && y[2] == 3.140625f);
        float f[2] = { 1.5f, -0.25f };
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_F32, f, y, 2));
        CHECK(y[0] == 1.5f && y[1] == -0.25f);
    }
    { /* Q4_0: d = 0.5; y = d * (nibble - 8); low nibbles -> 0..15, high -> 16..31 */
        uint8_t b[18] = { 0x00, 0x38 };
        b[2 + 0] = 0x0F;  /* y[0] = 0.5*(15-8) = 3.5,  y[16] = 0.5*(0-8) = -4 */
        b[2 + 1] = 0x83;  /* y[1] = 0.5*(3-8) = -2.5,  y[17] = 0.5*(8-8) = 0 */
        b[2 + 15] = 0x7A; /* y[15] = 0.5*(10-8) = 1,   y[31] = 0.5*(7-8) = -0.5 */
        for (int i = 0; i < 32; i++) want[i] = -4.0f;
        want[0] = 3.5f; want[1] = -2.5f; want[17] = 0.0f; want[15] = 1.0f; want[31] = -0.5f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q4_0, b, y, 32));
        expect("Q4_0 hand block", y, want, 32);
    }
    { /* Q4_1: d = 1, m = -2; y = d * nibble + m */
        uint8_t b[20] = { 0x00, 0x3C, 0x00, 0xC0 };
        b[4 + 0] = 0x5F;  /* y[0] = 15 - 2 = 13, y[16] = 5 - 2 = 3 */
        b[4 + 9] = 0x10;  /* y[9] = -2,          y[25] = 1 - 2 = -1 */
        for (int i = 0; i < 32; i++) want[i] = -2.0f;
        want[0] = 13.0f; want[16] = 3.0f; want[25] = -1.0f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q4_1, b, y, 32));
        expect("Q4_1 hand block", y, want, 32);
    }
    { /* Q5_0: d = 1, qh bits 0 and 17 set; y = ((nibble | bit << 4) - 16) */
        uint8_t b[22] = { 0x00, 0x3C, 0x01, 0x00, 0x02, 0x00 };
        b[6 + 1] = 0xFF;  /* y[1] = 15 - 16 = -1, y[17] = (15 | 16) - 16 = 15 */
        for (int i = 0; i < 32; i++) want[i] = -16.0f;
        want[0] = 0.0f;   /* nibble 0 | 16 */
        want[1] = -1.0f; want[17] = 15.0f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q5_0, b, y, 32));
        expect("Q5_0 hand block", y, want, 32);
    }
    { /* Q5_1: d = 0.5, m = 1, same bits; y = d * q + m */
        uint8_t b[24] = { 0x00, 0x38, 0x00, 0x3C, 0x01, 0x00, 0x02, 0x00 };
        b[8 + 1] = 0xFF;  /* y[1] = 7.5 + 1 = 8.5, y[17] = 0.5 * 31 + 1 = 16.5 */
        for (int i = 0; i < 32; i++) want[i] = 1.0f;
        want[0] = 9.0f;   /* 0.5 * 16 + 1 */
        want[1] = 8.5f; want[17] = 16.5f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q5_1, b, y, 32));
        expect("Q5_1 hand block", y, want, 32);
    }
    { /* Q8_0: d = 0.25 */
        uint8_t b[34] = { 0x00, 0x34 };
        b[2 + 0] = 0x7F; b[2 + 1] = 0x81; b[2 + 5] = 0x04; b[2 + 31] = 0xFE;
        for (int i = 0; i < 32; i++) want[i] = 0.0f;
        want[0] = 31.75f; want[1] = -31.75f; want[5] = 1.0f; want[31] = -0.5f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q8_0, b, y, 32));
        expect("Q8_0 hand block", y, want, 32);
    }

    /* K-quant scales: d = 1, dmin = 0.5 and per sub-block (sc, m) =
     *   s0 (1,2)  s1 (3,0)  s2 (63,63)  s3 (0,5)  s4 (37,50)  s5 (16,1)  s6 (2,33)  s7 (60,15)
     * packed by hand (s >= 4 split into a low nibble in bytes 8..11 and 2 high bits on top of
     * bytes 0..3 (scale) / 4..7 (min)):
     *   37 = 0b10'0101, 50 = 0b11'0010, 16 = 0b01'0000, 1, 2, 33 = 0b10'0001, 60 = 0b11'1100, 15 */
    static const uint8_t kscales[12] = {
        0x81, /* 1  | 2<<6 (sc4 high) */
        0x43, /* 3  | 1<<6 (sc5 high) */
        0x3F, /* 63 | 0<<6 (sc6 high) */
        0xC0, /* 0  | 3<<6 (sc7 high) */
        0xC2, /* m0 2  | 3<<6 (m4 high) */
        0x00, /* m1 0  | 0<<6 (m5 high) */
        0xBF, /* m2 63 | 2<<6 (m6 high) */
        0x05, /* m3 5  | 0<<6 (m7 high) */
        0x25, /* sc4 low 5 | m4 low 2 << 4 */
        0x10, /* sc5 low 0 | m5 low 1 << 4 */
        0x12, /* sc6 low 2 | m6 low 1 << 4 */
        0xFC, /* sc7 low 12 | m7 low 15 << 4 */
    };
    /* y with every code 0 is -dmin*m per sub-block of 32 */
    static const float kzero[8] = { -1.0f, 0.0f, -31.5f, -2.5f, -25.0f, -0.5f, -16.5f, -7.5f };
    { /* Q4_K: chunk c of qs (32 bytes): low nibbles -> sub-block 2c, high -> 2c+1 */
        uint8_t b[144] = { 0x00, 0x3C, 0x00, 0x38 };
        memcpy(b + 4, kscales, 12);
        uint8_t *qs = b + 16;
        qs[0] = 0x21;   /* y[0]   = 1*1 - 1 = 0;          y[32]  = 3*2 - 0 = 6 */
        qs[31] = 0xF0;  /* y[31]  = 0 - 1 = -1;           y[63]  = 3*15 = 45 */
        qs[32] = 0x0F;  /* y[64]  = 63*15 - 31.5 = 913.5; y[96]  = 0 - 2.5 */
        qs[64] = 0x73;  /* y[128] = 37*3 - 25 = 86;       y[160] = 16*7 - 0.5 = 111.5 */
        qs[127] = 0xA9; /* y[223] = 2*9 - 16.5 = 1.5;     y[255] = 60*10 - 7.5 = 592.5 */
        for (int i = 0; i < 256; i++) want[i] = kzero[i / 32];
        want[0] = 0.0f; want[32] = 6.0f; want[63] = 45.0f; want[64] = 913.5f;
        want[128] = 86.0f; want[160] = 111.5f; want[223] = 1.5f; want[255] = 592.5f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q4_K, b, y, 256));
        expect("Q4_K hand block", y, want, 256);
    }
    { /* Q5_K: as Q4_K plus qh[l] bit 2c (low nibble of chunk c) and bit 2c+1 (high nibble) */
        uint8_t b[176] = { 0x00, 0x3C, 0x00, 0x38 };
        memcpy(b + 4, kscales, 12);
        uint8_t *qh = b + 16, *qs = b + 48;
        qs[0] = 0x21; qh[0] = 0x03; /* y[0] = 1*17 - 1 = 16;  y[32] = 3*18 = 54 */
        qh[5] = 0x80;               /* y[229] (chunk 3 high, s7) = 60*16 - 7.5 = 952.5 */
        qh[10] = 0x10;              /* y[138] (chunk 2 low, s4)  = 37*16 - 25 = 567 */
        qs[127] = 0xA9;             /* y[223] = 1.5, y[255] = 592.5 (no high bits) */
        for (int i = 0; i < 256; i++) want[i] = kzero[i / 32];
        want[0] = 16.0f; want[32] = 54.0f; want[229] = 952.5f; want[138] = 567.0f;
        want[223] = 1.5f; want[255] = 592.5f;
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q5_K, b, y, 256));
        expect("Q5_K hand block", y, want, 256);
    }
    { /* Q6_K: d = 0.5, int8 scales per 16 elements; code 0 -> q - 32 = -32 */
        static const int8_t sc[16] = { 1, -2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, -15, 127 };
        uint8_t b[210] = { 0 };
        uint8_t *ql = b, *qh = b + 128;
        memcpy(b + 192, sc, 16);
        b[208] = 0x00; b[209] = 0x38;
        ql[0] = 0xF5;
        qh[0] = 0x36;  /* bits 1:0 = 2, 3:2 = 1, 5:4 = 3, 7:6 = 0 */
        /* y[0]  = 0.5*1*((5 | 2<<4) - 32)  = 2.5
         * y[32] = 0.5*3*((0 | 1<<4) - 32) = -24
         * y[64] = 0.5*5*((15 | 3<<4) - 32) = 77.5
         * y[96] = 0.5*7*(0 - 32) = -112 (the default) */
        ql[64 + 31] = 0x3C;
        qh[32 + 31] = 0xC0;
        /* second half, l = 31:
         * y[159] = 0.5*sc[9]*((12 | 0) - 32)  = 5*-20 = -100
         * y[191] = 0.5*sc[11]*(0 - 32)        = -192 (default)
         * y[223] = 0.5*sc[13]*((3 | 0) - 32)  = 7*-29 = -203
         * y[255] = 0.5*sc[15]*((0 | 3<<4) - 32) = 63.5*16 = 1016 */
        for (int i = 0; i < 256; i++) want[i] = 0.5f * (float)sc[i / 16] * -32.0f;
        want[0] = 2.5f; want[32] = -24.0f; want[64] = 77.5f;
        want[159] = -100.0f; want[223] = -203.0f; want[255] = 1016.0f;
        CHECK(want[16] == 32.0f && want[224] == 240.0f); /* negative scales flip the sign */
        CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q6_K, b, y, 256));
        expect("Q6_K hand block", y, want, 256);
    }
}

/* ---- 3. exactness on representable values ---------------------------------------------------- */

static int irand(int lo, int hi) { return lo + (int)(test_rng_u32() % (uint32_t)(hi - lo + 1)); }

static void roundtrip_exact(const char *what, uint32_t type, const float *x, int n)
{
    static uint8_t q[MAXN * 2];
    static float y[MAXN];
    CHECK_OK(ovk_ggml_quantize_row(type, x, q, (uint64_t)n));
    CHECK_OK(ovk_ggml_dequantize_row(type, q, y, (uint64_t)n));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (y[i] != x[i] && bad++ < 5) fprintf(stderr, "%s: x[%d] = %.9g -> %.9g\n", what, i, x[i], y[i]);
    CHECK_MSG(bad == 0, "%s: %d values not exact", what, bad);
}

static void test_exact(void)
{
    static float x[MAXN];
    const int nb = 8; /* blocks of 32 */
    /* Q8_0: k * 2^-e, |k| <= 127, each block holds +-127 * 2^-e so d = 2^-e exactly */
    for (int b = 0; b < nb; b++) {
        float s = ldexpf(1.0f, -b - 2);
        for (int j = 0; j < 32; j++) x[32 * b + j] = (float)irand(-127, 127) * s;
        x[32 * b + (b % 32)] = (b & 1 ? -127.0f : 127.0f) * s;
    }
    roundtrip_exact("Q8_0 exact", OSCAR_GGML_TYPE_Q8_0, x, 32 * nb);
    /* Q4_0 / Q5_0: k * s, k in -8..7 (-16..15), the block's largest magnitude is -8s (-16s) */
    for (int b = 0; b < nb; b++) {
        float s = ldexpf(1.0f, b - 4);
        for (int j = 0; j < 32; j++) x[32 * b + j] = (float)irand(-7, 7) * s;
        x[32 * b + 3] = -8.0f * s;
    }
    roundtrip_exact("Q4_0 exact", OSCAR_GGML_TYPE_Q4_0, x, 32 * nb);
    for (int b = 0; b < nb; b++) {
        float s = ldexpf(1.0f, b - 4);
        for (int j = 0; j < 32; j++) x[32 * b + j] = (float)irand(-15, 15) * s;
        x[32 * b + 7] = -16.0f * s;
    }
    roundtrip_exact("Q5_0 exact", OSCAR_GGML_TYPE_Q5_0, x, 32 * nb);
    /* Q4_1 / Q5_1: m + k * s with m, s fp16-exact and the block spanning k = 0..15 (0..31) */
    for (int t = 0; t < 2; t++) {
        int nmax = t ? 31 : 15;
        for (int b = 0; b < nb; b++) {
            float s = ldexpf(1.0f, -b), m = (float)irand(-40, 40) * 0.125f;
            for (int j = 0; j < 32; j++) x[32 * b + j] = m + (float)irand(0, nmax) * s;
            x[32 * b + 1] = m;
            x[32 * b + 30] = m + (float)nmax * s;
        }
        roundtrip_exact(t ? "Q5_1 exact" : "Q4_1 exact", t ? OSCAR_GGML_TYPE_Q5_1 : OSCAR_GGML_TYPE_Q4_1, x, 32 * nb);
    }
    /* Q4_K / Q5_K: per sub-block s, x = (d*sc_s)*q - dmin*m_s with d = 2^-3, dmin = 2^-4,
     * integer sc_s <= 63, m_s <= 63; one sub-block has sc = 63 and m = 63 (so the encoder's
     * d and dmin come out exactly), each sub-block spans q = 0..nmax, one sub-block is all 0. */
    for (int t = 0; t < 2; t++) {
        int nmax = t ? 31 : 15;
        for (int b = 0; b < 2; b++) {
            for (int s = 0; s < 8; s++) {
                float d = 0.125f, dmin = 0.0625f;
                int sc = s == 0 ? 63 : irand(1, 63), m = s == 0 ? 63 : irand(0, 63);
                if (s == 5) sc = m = 0;
                for (int l = 0; l < 32; l++) {
                    int q = l == 0 ? 0 : l == 1 ? nmax : irand(0, nmax);
                    x[256 * b + 32 * s + l] = (d * (float)sc) * (float)q - dmin * (float)m;
                }
            }
        }
        roundtrip_exact(t ? "Q5_K exact" : "Q4_K exact", t ? OSCAR_GGML_TYPE_Q5_K : OSCAR_GGML_TYPE_Q4_K, x, 512);
    }
    /* Q6_K: per sub-block of 16, x = (d*sc_s)*q, q in -31..31 with |q| = 31 present, d = 2^-5,
     * one sub-block with sc = 127, one all zero */
    for (int b = 0; b < 2; b++) {
        for (int s = 0; s < 16; s++) {
            float d = 0.03125f;
            int sc = s == 2 ? 127 : s == 9 ? 0 : irand(1, 127);
            for (int l = 0; l < 16; l++) {
                int q = l == 4 ? (s & 1 ? 31 : -31) : irand(-31, 31);
                x[256 * b + 16 * s + l] = (d * (float)sc) * (float)q;
            }
        }
    }
    roundtrip_exact("Q6_K exact", OSCAR_GGML_TYPE_Q6_K, x, 512);
    /* F16 / BF16: values with few mantissa bits */
    for (int i = 0; i < 256; i++) x[i] = (float)irand(-1024, 1024) * ldexpf(1.0f, irand(-20, 4));
    roundtrip_exact("F16 exact", OSCAR_GGML_TYPE_F16, x, 256);
    for (int i = 0; i < 256; i++) x[i] = (float)irand(-128, 128) * ldexpf(1.0f, irand(-60, 60));
    roundtrip_exact("BF16 exact", OSCAR_GGML_TYPE_BF16, x, 256);
    roundtrip_exact("F32 exact", OSCAR_GGML_TYPE_F32, x, 256);

    /* BF16 rounds to nearest even: 1 + 2^-8 -> 1.0, 1 + 3*2^-8 -> 1 + 2^-6 */
    float h[2] = { 1.00390625f, 1.01171875f }, r[2];
    uint8_t bq[4];
    CHECK_OK(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_BF16, h, bq, 2));
    CHECK_OK(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_BF16, bq, r, 2));
    CHECK(r[0] == 1.0f && r[1] == 1.015625f);
}

/* ---- 4. round-trip error bounds ------------------------------------------------------------- */

static float f16at(const uint8_t *p) { return ovk_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* The quantization step that applies to element i (within its block) of a block type, read
 * from the block header per the layout in ggml_types.h. */
static float step_of(uint32_t type, const uint8_t *b, int i)
{
    switch (type) {
    case OSCAR_GGML_TYPE_Q4_0: case OSCAR_GGML_TYPE_Q5_0: case OSCAR_GGML_TYPE_Q8_0:
    case OSCAR_GGML_TYPE_Q4_1: case OSCAR_GGML_TYPE_Q5_1:
        return fabsf(f16at(b));
    case OSCAR_GGML_TYPE_Q4_K: case OSCAR_GGML_TYPE_Q5_K: {
        const uint8_t *s = b + 4;
        int j = i / 32;
        int sc = j < 4 ? (s[j] & 63) : ((s[j + 4] & 15) | (s[j - 4] >> 6) << 4);
        return f16at(b) * (float)sc;
    }
    case OSCAR_GGML_TYPE_Q6_K:
        return f16at(b + 208) * fabsf((float)(int8_t)b[192 + i / 16]);
    default: return 0.0f;
    }
}

static void roundtrip_bounds(const char *what, uint32_t type, double nse_bound, double nse_outlier_bound)
{
    static float x[MAXN], y[MAXN];
    static uint8_t q[MAXN * 2];
    const int n = MAXN;
    const ovk_ggml_type_info *t = ovk_ggml_type_get(type);
    double worst = 0.0;
    int bad = 0;
    double nse_max = 0.0, nse_outlier = 0.0;
    for (int trial = 0; trial < 4; trial++) {
        float scale = trial == 0 ? 1.0f : trial == 1 ? 0.02f : trial == 2 ? 30.0f : 1.0f;
        for (int i = 0; i < n; i++) x[i] = scale * test_rng_normal();
        if (trial == 3) { /* outliers, an all-equal block, an all-zero block, an all-positive block */
            for (int i = 0; i < n; i += 97) x[i] *= 20.0f;
            for (int i = 256; i < 512; i++) x[i] = 0.7f;
            for (int i = 512; i < 768; i++) x[i] = 0.0f;
            for (int i = 768; i < 1024; i++) x[i] = 2.0f + fabsf(x[i]);
            for (int i = 1024; i < 1280; i++) x[i] = -2.0f - fabsf(x[i]);
        }
        CHECK_OK(ovk_ggml_quantize_row(type, x, q, n));
        CHECK_OK(ovk_ggml_dequantize_row(type, q, y, n));
        double nse = test_nse(y, x, (size_t)n);
        if (trial < 3 && nse > nse_max) nse_max = nse;
        if (trial == 3) nse_outlier = nse;
        if (t->block_size == 1) continue;
        for (int i = 0; i < n; i++) {
            const uint8_t *blk = q + (size_t)(i / t->block_size) * t->type_size;
            float step = step_of(type, blk, i % (int)t->block_size);
            int sym0 = type == OSCAR_GGML_TYPE_Q4_0 || type == OSCAR_GGML_TYPE_Q5_0;
            double lim = (sym0 ? 1.0 : 0.5) * step * (1.0 + 1e-5) + 2e-6 * fabs(x[i]) + 1e-30;
            double err = fabs((double)x[i] - y[i]);
            if (err > lim && bad++ < 5) fprintf(stderr, "%s: x[%d] = %g -> %g, err %g > %g\n", what, i, x[i], y[i], err, lim);
            if (step > 0 && err / step > worst) worst = err / step;
        }
    }
    printf("%-5s NSE Gaussian %.3g (bound %.3g), with outliers %.3g (bound %.3g), worst |err|/step %.3f\n", what,
           nse_max, nse_bound, nse_outlier, nse_outlier_bound, worst);
    CHECK_MSG(bad == 0, "%s: %d elements beyond the step bound", what, bad);
    CHECK_MSG(nse_max < nse_bound, "%s: Gaussian NSE %g >= %g", what, nse_max, nse_bound);
    CHECK_MSG(nse_outlier < nse_outlier_bound, "%s: outlier NSE %g >= %g", what, nse_outlier, nse_outlier_bound);
}

static void test_bounds(void)
{
    /* bounds about 1.3x what this encoder measures (seed 12345); see the header comment */
    roundtrip_bounds("Q8_0", OSCAR_GGML_TYPE_Q8_0, 4e-5, 1.6e-4);
    roundtrip_bounds("Q6_K", OSCAR_GGML_TYPE_Q6_K, 5e-4, 1.6e-3);
    roundtrip_bounds("Q5_0", OSCAR_GGML_TYPE_Q5_0, 2.5e-3, 9e-3);
    roundtrip_bounds("Q5_1", OSCAR_GGML_TYPE_Q5_1, 2e-3, 3e-3);
    roundtrip_bounds("Q5_K", OSCAR_GGML_TYPE_Q5_K, 2.1e-3, 3e-3);
    roundtrip_bounds("Q4_0", OSCAR_GGML_TYPE_Q4_0, 1e-2, 2.4e-2);
    roundtrip_bounds("Q4_1", OSCAR_GGML_TYPE_Q4_1, 8.5e-3, 1.1e-2);
    roundtrip_bounds("Q4_K", OSCAR_GGML_TYPE_Q4_K, 8.5e-3, 1.3e-2);
    roundtrip_bounds("F16", OSCAR_GGML_TYPE_F16, 7e-8, 7e-8);
    roundtrip_bounds("BF16", OSCAR_GGML_TYPE_BF16, 4e-6, 4.5e-6);
}

/* ---- 5. bad arguments ----------------------------------------------------------------------- */

static void test_errors(void)
{
    float x[256] = { 0 }, y[256];
    uint8_t q[512];
    CHECK_STATUS(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q4_K, x, q, 100), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q8_0, q, y, 33), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_dequantize_row(OSCAR_GGML_TYPE_Q2_K, q, y, 256), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q3_K, x, q, 256), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_ggml_dequantize_row(4, q, y, 32), OSCAR_ERROR_INVALID_ARGUMENT);
    x[17] = NAN;
    CHECK_STATUS(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q8_0, x, q, 32), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "element 17") != NULL);
    x[17] = INFINITY;
    CHECK_STATUS(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q6_K, x, q, 256), OSCAR_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
    test_rng_seed(12345);
    test_table();
    test_hand_blocks();
    test_exact();
    test_bounds();
    test_errors();
    return test_finish();
}
