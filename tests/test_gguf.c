/* GGUF reader and writer.
 *
 *  1. Round trip: the writer emits every metadata type (scalars, strings, arrays of every
 *     element type, an array of string arrays) and tensors of every type; the reader gives
 *     them back exactly, through a file (mmap), a memory image and the streaming writer, which
 *     must all produce the same bytes. Alignment 32 (default) and 64.
 *  2. Typed getters: integer conversions in range, clear BAD_FORMAT otherwise.
 *  3. Truncation at every byte length of a valid image: an error (BAD_FORMAT) for every cut
 *     before the end of the last tensor's data, success after it; each cut is copied into an
 *     exactly-sized buffer so AddressSanitizer sees any read past the end.
 *  4. Hand-built corrupt files, one field at a time, each with the right status and a message
 *     naming the field.
 *  5. Random byte corruption: never a crash, only OK / BAD_FORMAT / UNSUPPORTED_FORMAT, and
 *     every accepted tensor lies inside the image.
 *  6. Optional: OSCAR_TEST_MODEL_GGUF=<path to SmolLM2-135M-Instruct.Q4_1.gguf> checks the
 *     real model (see docs/model-smollm2.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "test_util.h"

/* ---- a byte builder for hand-made files ------------------------------------------------------ */

typedef struct bb {
    uint8_t *p;
    size_t n, cap;
} bb;

static void bb_bytes(bb *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void bb_le(bb *b, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
    bb_bytes(b, t, (size_t)n);
}
static void bb_u32(bb *b, uint32_t v) { bb_le(b, v, 4); }
static void bb_u64(bb *b, uint64_t v) { bb_le(b, v, 8); }
static void bb_str(bb *b, const char *s) { bb_u64(b, strlen(s)); bb_bytes(b, s, strlen(s)); }
static void bb_pad(bb *b, size_t a) { while (b->n % a) bb_le(b, 0, 1); }
static void bb_header(bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b->n = 0;
    bb_bytes(b, "GGUF", 4);
    bb_u32(b, version);
    bb_u64(b, n_tensors);
    bb_u64(b, n_kv);
}
static void bb_kv_u32(bb *b, const char *key, uint32_t v) { bb_str(b, key); bb_u32(b, OSCAR_GGUF_TYPE_UINT32); bb_u32(b, v); }
static void bb_tensor(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset)
{
    bb_str(b, name);
    bb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) bb_u64(b, ne[i]);
    bb_u32(b, type);
    bb_u64(b, offset);
}

/* Opens an image from an exactly-sized heap copy (so ASan catches any overread). */
static oscar_status open_copy(const void *data, size_t n, ovk_gguf **g)
{
    void *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, data, n);
    oscar_status st = ovk_gguf_open_memory(copy, n, "test.gguf", g);
    if (st == OSCAR_OK) {
        /* touch every tensor byte while the copy is alive */
        unsigned sum = 0;
        for (uint64_t i = 0; i < (*g)->n_tensors; i++)
            for (uint64_t k = 0; k < (*g)->tensors[i].n_bytes; k++) sum += ((const uint8_t *)(*g)->tensors[i].data)[k];
        (void)sum;
        ovk_gguf_close(*g);
        *g = NULL;
    }
    free(copy);
    return st;
}

/* Expects `status` for the image in b and that the message mentions `needle`. */
#define EXPECT_BAD(b, status, needle)                                                                 \
    do {                                                                                               \
        ovk_gguf *g_ = NULL;                                                                         \
        ovk_error_clear();                                                                           \
        CHECK_STATUS(open_copy((b)->p, (b)->n, &g_), (status));                                        \
        CHECK_MSG(strstr(oscar_last_error(), (needle)) != NULL, "message '%s' lacks '%s'", oscar_last_error(), (needle)); \
        CHECK_MSG(strstr(oscar_last_error(), "test.gguf") != NULL, "message '%s' lacks the file name", oscar_last_error()); \
    } while (0)

/* ---- 1. round trip ---------------------------------------------------------------------------- */

enum { N_TENSOR_TYPES = 12 };
static const uint32_t tensor_types[N_TENSOR_TYPES] = {
    OSCAR_GGML_TYPE_F32, OSCAR_GGML_TYPE_F16, OSCAR_GGML_TYPE_BF16, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1,
    OSCAR_GGML_TYPE_Q5_0, OSCAR_GGML_TYPE_Q5_1, OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q5_K,
    OSCAR_GGML_TYPE_Q6_K, OSCAR_GGML_TYPE_Q2_K, /* Q2_K: no quantizer, raw bytes */
};

typedef struct fixture {
    uint8_t *data[N_TENSOR_TYPES + 2]; /* tensor bytes as given to the writer */
    uint64_t bytes[N_TENSOR_TYPES + 2];
    uint64_t ne[N_TENSOR_TYPES + 2][4];
    uint32_t n_dims[N_TENSOR_TYPES + 2], type[N_TENSOR_TYPES + 2];
    char name[N_TENSOR_TYPES + 2][64];
    int n;
} fixture;

static const uint8_t u8s[] = { 0, 1, 255 };
static const int8_t i8s[] = { -128, 0, 127 };
static const uint16_t u16s[] = { 0, 65535, 300 };
static const int16_t i16s[] = { -32768, 32767, -1 };
static const uint32_t u32s[] = { 0, 4000000000u, 7 };
static const int32_t i32s[] = { INT32_MIN, INT32_MAX, -5 };
static const uint64_t u64s[] = { 0, UINT64_MAX, 1ull << 40 };
static const int64_t i64s[] = { INT64_MIN, INT64_MAX, -3 };
static const float f32s[] = { -1.5f, 3.25e-20f, 1e30f };
static const double f64s[] = { -1.5, 1e-300, 3.141592653589793 };
static const uint8_t bools[] = { 1, 0, 1 };
static const char *const strs[] = { "", "hello", "\xc4\xa0t \xe2\x96\x81x" /* "Ġt ▁x" */, "a b" };
static const char *const list0[] = { "x", "yz" };
static const char *const list2[] = { "ab c", "", "de" };
static const char *const *const lists[] = { list0, NULL, list2 };
static const uint64_t list_counts[] = { 2, 0, 3 };

static void fill_writer(ovk_gguf_writer *w, fixture *fx, uint32_t alignment)
{
    if (alignment != 32) CHECK_OK(ovk_gguf_writer_set_alignment(w, alignment));
    CHECK_OK(ovk_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK_OK(ovk_gguf_writer_set_u8(w, "t.u8", 200));
    CHECK_OK(ovk_gguf_writer_set_i8(w, "t.i8", -100));
    CHECK_OK(ovk_gguf_writer_set_u16(w, "t.u16", 60000));
    CHECK_OK(ovk_gguf_writer_set_i16(w, "t.i16", -30000));
    CHECK_OK(ovk_gguf_writer_set_u32(w, "t.u32", 4000000000u));
    CHECK_OK(ovk_gguf_writer_set_i32(w, "t.i32", -2000000000));
    CHECK_OK(ovk_gguf_writer_set_u64(w, "t.u64", 0xFEDCBA9876543210ull));
    CHECK_OK(ovk_gguf_writer_set_i64(w, "t.i64", -0x123456789ABll));
    CHECK_OK(ovk_gguf_writer_set_f32(w, "t.f32", 0.1f));
    CHECK_OK(ovk_gguf_writer_set_f64(w, "t.f64", 0.1));
    CHECK_OK(ovk_gguf_writer_set_bool(w, "t.bool", 1));
    CHECK_OK(ovk_gguf_writer_set_bool(w, "t.bool0", 0));
    CHECK_OK(ovk_gguf_writer_set_str(w, "t.str", "placeholder"));
    CHECK_OK(ovk_gguf_writer_set_str(w, "t.str", "{% for m in messages %}\n\xe2\x96\x81{% endfor %}")); /* replaces */
    CHECK_OK(ovk_gguf_writer_set_str(w, "t.empty", ""));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.u8", OSCAR_GGUF_TYPE_UINT8, u8s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.i8", OSCAR_GGUF_TYPE_INT8, i8s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.u16", OSCAR_GGUF_TYPE_UINT16, u16s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.i16", OSCAR_GGUF_TYPE_INT16, i16s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.u32", OSCAR_GGUF_TYPE_UINT32, u32s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.i32", OSCAR_GGUF_TYPE_INT32, i32s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.u64", OSCAR_GGUF_TYPE_UINT64, u64s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.i64", OSCAR_GGUF_TYPE_INT64, i64s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.f32", OSCAR_GGUF_TYPE_FLOAT32, f32s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.f64", OSCAR_GGUF_TYPE_FLOAT64, f64s, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.bool", OSCAR_GGUF_TYPE_BOOL, bools, 3));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.str", OSCAR_GGUF_TYPE_STRING, strs, 4));
    CHECK_OK(ovk_gguf_writer_set_array(w, "a.empty", OSCAR_GGUF_TYPE_INT32, NULL, 0));
    CHECK_OK(ovk_gguf_writer_set_str_array_array(w, "a.nested", lists, list_counts, 3));

    /* tensors: every type, 2D, plus a 3D and a 4D F32 */
    fx->n = 0;
    for (int k = 0; k < N_TENSOR_TYPES + 2; k++) {
        uint32_t type = k < N_TENSOR_TYPES ? tensor_types[k] : OSCAR_GGML_TYPE_F32;
        const ovk_ggml_type_info *ti = ovk_ggml_type_get(type);
        uint64_t ne[4] = { ti->block_size == 256 ? 256 : 64, (uint64_t)(1 + k % 3), 1, 1 };
        uint32_t n_dims = 2;
        if (k == N_TENSOR_TYPES) { ne[0] = 5; ne[1] = 3; ne[2] = 2; n_dims = 3; }
        if (k == N_TENSOR_TYPES + 1) { ne[0] = 3; ne[1] = 1; ne[2] = 2; ne[3] = 2; n_dims = 4; }
        uint64_t row, rows = ne[1] * ne[2] * ne[3];
        CHECK_OK(ovk_ggml_row_size(type, ne[0], &row));
        fx->bytes[k] = row * rows;
        fx->data[k] = malloc((size_t)fx->bytes[k]);
        if (ti->has_quantize) {
            float *x = malloc((size_t)(ne[0] * rows) * sizeof(float));
            for (uint64_t i = 0; i < ne[0] * rows; i++) x[i] = test_rng_normal();
            for (uint64_t r = 0; r < rows; r++)
                CHECK_OK(ovk_ggml_quantize_row(type, x + r * ne[0], fx->data[k] + r * row, ne[0]));
            free(x);
        } else {
            for (uint64_t i = 0; i < fx->bytes[k]; i++) fx->data[k][i] = (uint8_t)test_rng_u32();
        }
        snprintf(fx->name[k], sizeof fx->name[k], "blk.%d.%s.weight", k, ti->name);
        memcpy(fx->ne[k], ne, sizeof ne);
        fx->n_dims[k] = n_dims;
        fx->type[k] = type;
        if (k % 2) CHECK_OK(ovk_gguf_writer_add_tensor(w, fx->name[k], type, n_dims, ne, fx->data[k]));
        else CHECK_OK(ovk_gguf_writer_add_tensor_ref(w, fx->name[k], type, n_dims, ne, fx->data[k]));
        fx->n++;
    }
}

static void fixture_free(fixture *fx)
{
    for (int k = 0; k < fx->n; k++) free(fx->data[k]);
}

static int str_is(ovk_gguf_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.ptr, want, (size_t)s.len) == 0;
}

/* Checks every key and tensor fill_writer wrote. */
static void check_contents(const ovk_gguf *g, const fixture *fx, uint32_t alignment)
{
    CHECK(g->version == 3);
    CHECK(g->alignment == alignment);
    CHECK(g->data_offset % alignment == 0);
    CHECK(g->n_kv == 29 + (alignment != 32));
    const ovk_gguf_kv *kv;
    const char *s = NULL;
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    float f = 0;
    int b = -1;
    CHECK_OK(ovk_gguf_get_str(g, "general.architecture", &s));
    CHECK(s && strcmp(s, "llama") == 0);
    CHECK((kv = ovk_gguf_find_key(g, "t.u8")) && kv->value.type == OSCAR_GGUF_TYPE_UINT8 && kv->value.u64 == 200);
    CHECK((kv = ovk_gguf_find_key(g, "t.i8")) && kv->value.type == OSCAR_GGUF_TYPE_INT8 && kv->value.i64 == -100);
    CHECK((kv = ovk_gguf_find_key(g, "t.u16")) && kv->value.type == OSCAR_GGUF_TYPE_UINT16 && kv->value.u64 == 60000);
    CHECK((kv = ovk_gguf_find_key(g, "t.i16")) && kv->value.type == OSCAR_GGUF_TYPE_INT16 && kv->value.i64 == -30000);
    CHECK((kv = ovk_gguf_find_key(g, "t.u32")) && kv->value.type == OSCAR_GGUF_TYPE_UINT32 && kv->value.u64 == 4000000000u);
    CHECK((kv = ovk_gguf_find_key(g, "t.i32")) && kv->value.type == OSCAR_GGUF_TYPE_INT32 && kv->value.i64 == -2000000000);
    CHECK((kv = ovk_gguf_find_key(g, "t.u64")) && kv->value.type == OSCAR_GGUF_TYPE_UINT64 && kv->value.u64 == 0xFEDCBA9876543210ull);
    CHECK((kv = ovk_gguf_find_key(g, "t.i64")) && kv->value.type == OSCAR_GGUF_TYPE_INT64 && kv->value.i64 == -0x123456789ABll);
    CHECK((kv = ovk_gguf_find_key(g, "t.f32")) && kv->value.type == OSCAR_GGUF_TYPE_FLOAT32 && kv->value.f64 == (double)0.1f);
    CHECK((kv = ovk_gguf_find_key(g, "t.f64")) && kv->value.type == OSCAR_GGUF_TYPE_FLOAT64 && kv->value.f64 == 0.1);
    CHECK_OK(ovk_gguf_get_bool(g, "t.bool", &b));
    CHECK(b == 1);
    CHECK_OK(ovk_gguf_get_bool(g, "t.bool0", &b));
    CHECK(b == 0);
    CHECK_OK(ovk_gguf_get_str(g, "t.str", &s));
    CHECK(s && strcmp(s, "{% for m in messages %}\n\xe2\x96\x81{% endfor %}") == 0);
    CHECK_OK(ovk_gguf_get_str(g, "t.empty", &s));
    CHECK(s && s[0] == '\0');
    CHECK_OK(ovk_gguf_get_u32(g, "t.u32", &u32));
    CHECK(u32 == 4000000000u);
    CHECK_OK(ovk_gguf_get_u32(g, "t.u8", &u32));
    CHECK(u32 == 200);
    CHECK_OK(ovk_gguf_get_i32(g, "t.i8", &i32));
    CHECK(i32 == -100);
    CHECK_OK(ovk_gguf_get_i32(g, "t.i32", &i32));
    CHECK(i32 == -2000000000);
    CHECK_OK(ovk_gguf_get_u64(g, "t.u64", &u64));
    CHECK(u64 == 0xFEDCBA9876543210ull);
    CHECK_OK(ovk_gguf_get_f32(g, "t.f32", &f));
    CHECK(f == 0.1f);
    CHECK_OK(ovk_gguf_get_f32(g, "t.f64", &f));
    CHECK(f == 0.1f);

    /* arrays: element values and types */
    const ovk_gguf_array *a = NULL;
    struct { const char *key; ovk_gguf_type type; double v[3]; } num[] = {
        { "a.u8", OSCAR_GGUF_TYPE_UINT8, { 0, 1, 255 } },
        { "a.i8", OSCAR_GGUF_TYPE_INT8, { -128, 0, 127 } },
        { "a.u16", OSCAR_GGUF_TYPE_UINT16, { 0, 65535, 300 } },
        { "a.i16", OSCAR_GGUF_TYPE_INT16, { -32768, 32767, -1 } },
        { "a.u32", OSCAR_GGUF_TYPE_UINT32, { 0, 4000000000.0, 7 } },
        { "a.i32", OSCAR_GGUF_TYPE_INT32, { INT32_MIN, INT32_MAX, -5 } },
        { "a.f32", OSCAR_GGUF_TYPE_FLOAT32, { -1.5, (double)3.25e-20f, 1e30f } },
        { "a.f64", OSCAR_GGUF_TYPE_FLOAT64, { -1.5, 1e-300, 3.141592653589793 } },
        { "a.bool", OSCAR_GGUF_TYPE_BOOL, { 1, 0, 1 } },
    };
    for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
        CHECK_OK(ovk_gguf_get_array(g, num[k].key, num[k].type, &a));
        if (!a) continue;
        CHECK_MSG(a->count == 3, "%s count %llu", num[k].key, (unsigned long long)a->count);
        for (uint64_t i = 0; i < 3 && i < a->count; i++)
            CHECK_MSG(ovk_gguf_array_number(a, i) == num[k].v[i], "%s[%llu] = %.17g", num[k].key, (unsigned long long)i,
                      ovk_gguf_array_number(a, i));
        a = NULL;
    }
    CHECK_OK(ovk_gguf_get_array(g, "a.u64", OSCAR_GGUF_TYPE_UINT64, &a));
    CHECK(a && a->count == 3 && ovk_gguf_array_int(a, 2) == (1ll << 40) && ovk_gguf_array_int(a, 1) == INT64_MAX);
    CHECK(a && a->data[8] == 0xFF && a->data[15] == 0xFF); /* raw little-endian elements */
    CHECK_OK(ovk_gguf_get_array(g, "a.i64", OSCAR_GGUF_TYPE_INT64, &a));
    CHECK(a && ovk_gguf_array_int(a, 0) == INT64_MIN && ovk_gguf_array_int(a, 1) == INT64_MAX && ovk_gguf_array_int(a, 2) == -3);
    CHECK_OK(ovk_gguf_get_array(g, "a.i32", -1, &a));
    CHECK(a && ovk_gguf_array_int(a, 2) == -5);
    CHECK_OK(ovk_gguf_get_array(g, "a.str", OSCAR_GGUF_TYPE_STRING, &a));
    CHECK(a && a->count == 4 && str_is(a->strs[0], "") && str_is(a->strs[1], "hello") &&
          str_is(a->strs[2], "\xc4\xa0t \xe2\x96\x81x") && str_is(a->strs[3], "a b"));
    CHECK_OK(ovk_gguf_get_array(g, "a.empty", OSCAR_GGUF_TYPE_INT32, &a));
    CHECK(a && a->count == 0);
    CHECK_OK(ovk_gguf_get_array(g, "a.nested", OSCAR_GGUF_TYPE_ARRAY, &a));
    CHECK(a && a->count == 3);
    if (a && a->count == 3) {
        for (int i = 0; i < 3; i++) CHECK(a->arrays[i].type == OSCAR_GGUF_TYPE_STRING && a->arrays[i].count == list_counts[i]);
        CHECK(a->arrays[0].count == 2 && str_is(a->arrays[0].strs[0], "x") && str_is(a->arrays[0].strs[1], "yz"));
        CHECK(a->arrays[2].count == 3 && str_is(a->arrays[2].strs[0], "ab c") && str_is(a->arrays[2].strs[1], "") &&
              str_is(a->arrays[2].strs[2], "de"));
    }
    /* key order is insertion order; the replaced key kept its place */
    CHECK(strcmp(g->kv[0].key, alignment != 32 ? "general.alignment" : "general.architecture") == 0);

    /* tensors */
    CHECK(g->n_tensors == (uint64_t)fx->n);
    for (int k = 0; k < fx->n && (uint64_t)k < g->n_tensors; k++) {
        const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, fx->name[k]);
        CHECK_MSG(t == &g->tensors[k], "tensor %s", fx->name[k]);
        if (!t) continue;
        CHECK(t->type == fx->type[k] && t->n_dims == fx->n_dims[k]);
        CHECK(memcmp(t->ne, fx->ne[k], sizeof t->ne) == 0);
        CHECK(t->n_elements == fx->ne[k][0] * fx->ne[k][1] * fx->ne[k][2] * fx->ne[k][3]);
        CHECK(t->n_bytes == fx->bytes[k]);
        CHECK(t->offset % alignment == 0);
        CHECK((const uint8_t *)t->data == g->base + g->data_offset + t->offset);
        CHECK_MSG(memcmp(t->data, fx->data[k], (size_t)t->n_bytes) == 0, "tensor %s data differs", t->name);
    }
    CHECK(ovk_gguf_find_tensor(g, "missing") == NULL);
    CHECK(ovk_gguf_find_key(g, "missing") == NULL);
}

static void test_round_trip(uint32_t alignment)
{
    ovk_gguf_writer *w = NULL;
    fixture fx;
    CHECK_OK(ovk_gguf_writer_create(&w));
    fill_writer(w, &fx, alignment);

    void *mem = NULL;
    size_t mem_n = 0;
    CHECK_OK(ovk_gguf_writer_write_memory(w, &mem, &mem_n));
    char path[64], path2[64];
    snprintf(path, sizeof path, "test_gguf_rt_%u.gguf", alignment);
    snprintf(path2, sizeof path2, "test_gguf_stream_%u.gguf", alignment);
    CHECK_OK(ovk_gguf_writer_write_file(w, path));
    CHECK(access(path, F_OK) == 0);
    CHECK(!test_tmp_leftover(path)); /* renamed into place */

    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open_memory(mem, mem_n, "mem", &g));
    if (g) check_contents(g, &fx, alignment);
    ovk_gguf_close(g);
    g = NULL;
    CHECK_OK(ovk_gguf_open(path, &g));
    if (g) {
        check_contents(g, &fx, alignment);
        CHECK(g->mapped == 1 && g->size == mem_n);
        CHECK(memcmp(g->base, mem, mem_n) == 0); /* file and memory images are identical */
        /* the last tensor's padding ends the file */
        const ovk_gguf_tensor *last = &g->tensors[g->n_tensors - 1];
        uint64_t end = g->data_offset + last->offset + last->n_bytes;
        CHECK(g->size == end + (alignment - end % alignment) % alignment);
        /* dequantizing from the mapping equals dequantizing the source bytes */
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const ovk_gguf_tensor *t = &g->tensors[i];
            const ovk_ggml_type_info *ti = ovk_ggml_type_get(t->type);
            if (!ti->has_dequantize) continue;
            float y1[256], y2[256];
            CHECK_OK(ovk_ggml_dequantize_row(t->type, t->data, y1, t->ne[0]));
            CHECK_OK(ovk_ggml_dequantize_row(t->type, fx.data[i], y2, t->ne[0]));
            CHECK(memcmp(y1, y2, (size_t)t->ne[0] * sizeof(float)) == 0);
        }

        /* copy_kv of every key + the tensors gives the same image again */
        ovk_gguf_writer *w2 = NULL;
        CHECK_OK(ovk_gguf_writer_create(&w2));
        if (alignment != 32) CHECK_OK(ovk_gguf_writer_set_alignment(w2, alignment));
        for (uint64_t i = 0; i < g->n_kv; i++) CHECK_OK(ovk_gguf_writer_copy_kv(w2, &g->kv[i]));
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const ovk_gguf_tensor *t = &g->tensors[i];
            CHECK_OK(ovk_gguf_writer_add_tensor_ref(w2, t->name, t->type, t->n_dims, t->ne, t->data));
        }
        void *mem2 = NULL;
        size_t mem2_n = 0;
        CHECK_OK(ovk_gguf_writer_write_memory(w2, &mem2, &mem2_n));
        CHECK(mem2_n == mem_n && mem2 && memcmp(mem2, mem, mem_n) == 0);
        free(mem2);
        ovk_gguf_writer_destroy(w2);
    }
    ovk_gguf_close(g);
    g = NULL;

    /* streaming: declare without data, then pass the data in order */
    ovk_gguf_writer *ws = NULL;
    CHECK_OK(ovk_gguf_writer_create(&ws)); /* alignment comes from copying general.alignment */
    CHECK_OK(ovk_gguf_open_memory(mem, mem_n, "mem", &g));
    if (g) {
        for (uint64_t i = 0; i < g->n_kv; i++) CHECK_OK(ovk_gguf_writer_copy_kv(ws, &g->kv[i]));
        for (int k = 0; k < fx.n; k++) CHECK_OK(ovk_gguf_writer_add_tensor(ws, fx.name[k], fx.type[k], fx.n_dims[k], fx.ne[k], NULL));
        CHECK_STATUS(ovk_gguf_writer_write_file(ws, path2), OSCAR_ERROR_INVALID_STATE); /* no data yet */
        CHECK_OK(ovk_gguf_writer_stream_begin(ws, path2));
        CHECK_STATUS(ovk_gguf_writer_set_u32(ws, "late", 1), OSCAR_ERROR_INVALID_STATE);
        for (int k = 0; k < fx.n; k++) CHECK_OK(ovk_gguf_writer_stream_tensor(ws, fx.data[k], fx.bytes[k]));
        CHECK_STATUS(ovk_gguf_writer_stream_tensor(ws, fx.data[0], fx.bytes[0]), OSCAR_ERROR_INVALID_STATE);
        /* the extra tensor aborted the stream: the partial file is gone, path2 not created */
        CHECK(access(path2, F_OK) != 0);
        CHECK_OK(ovk_gguf_writer_stream_begin(ws, path2));
        for (int k = 0; k < fx.n; k++) CHECK_OK(ovk_gguf_writer_stream_tensor(ws, fx.data[k], fx.bytes[k]));
        CHECK_OK(ovk_gguf_writer_stream_end(ws));
        size_t sn = 0;
        char *sp = test_read_file(path2, &sn);
        CHECK(sp && sn == mem_n && memcmp(sp, mem, mem_n) == 0);
        free(sp);
        /* a wrong size aborts */
        CHECK_OK(ovk_gguf_writer_stream_begin(ws, path2));
        CHECK_STATUS(ovk_gguf_writer_stream_tensor(ws, fx.data[0], fx.bytes[0] + 1), OSCAR_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovk_gguf_writer_stream_end(ws), OSCAR_ERROR_INVALID_STATE);
    }
    ovk_gguf_close(g);
    ovk_gguf_writer_destroy(ws);
    remove(path);
    remove(path2);
    free(mem);
    ovk_gguf_writer_destroy(w);
    fixture_free(&fx);
}

/* ---- 2. getters' type checks, writer argument checks ----------------------------------------- */

static void test_getters_and_writer_errors(void)
{
    ovk_gguf_writer *w = NULL;
    CHECK_OK(ovk_gguf_writer_create(&w));
    CHECK_OK(ovk_gguf_writer_set_i32(w, "neg", -1));
    CHECK_OK(ovk_gguf_writer_set_u64(w, "big", 1ull << 33));
    CHECK_OK(ovk_gguf_writer_set_str(w, "name", "x"));
    CHECK_OK(ovk_gguf_writer_set_u32(w, "llama.block_count", 30));
    CHECK_OK(ovk_gguf_writer_set_array(w, "toks", OSCAR_GGUF_TYPE_STRING, strs, 2));
    uint64_t ne[2] = { 32, 2 };
    float zeros[64] = { 0 };
    CHECK_OK(ovk_gguf_writer_add_tensor(w, "w", OSCAR_GGML_TYPE_F32, 2, ne, zeros));
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "w", OSCAR_GGML_TYPE_F32, 2, ne, zeros), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "w5", OSCAR_GGML_TYPE_F32, 5, ne, zeros), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "w0", OSCAR_GGML_TYPE_F32, 0, ne, zeros), OSCAR_ERROR_INVALID_ARGUMENT);
    uint64_t ne33[1] = { 33 };
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "q", OSCAR_GGML_TYPE_Q4_0, 1, ne33, zeros), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "u", 99, 1, ne, zeros), OSCAR_ERROR_INVALID_ARGUMENT);
    uint64_t huge[2] = { 1ull << 40, 1ull << 40 };
    CHECK_STATUS(ovk_gguf_writer_add_tensor(w, "h", OSCAR_GGML_TYPE_F32, 2, huge, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_set_alignment(w, 48), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_set_u32(w, "general.alignment", 0), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_set_u64(w, "general.alignment", 64), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_set_array(w, "arr", OSCAR_GGUF_TYPE_ARRAY, strs, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_gguf_writer_set_str(w, "s", NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    void *mem = NULL;
    size_t n = 0;
    CHECK_OK(ovk_gguf_writer_write_memory(w, &mem, &n));
    ovk_gguf_writer_destroy(w);
    CHECK_STATUS(ovk_gguf_writer_write_file(NULL, "x"), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_gguf_writer_destroy(NULL);

    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open_memory(mem, n, "getters.gguf", &g));
    if (g) {
        uint32_t u = 0;
        int32_t i = 0;
        uint64_t u64 = 0;
        float f = 0;
        const char *s = NULL;
        int b = 0;
        const ovk_gguf_array *a = NULL;
        CHECK_STATUS(ovk_gguf_get_u32(g, "neg", &u), OSCAR_ERROR_BAD_FORMAT);
        CHECK(strstr(oscar_last_error(), "'neg'") && strstr(oscar_last_error(), "out of range"));
        CHECK_OK(ovk_gguf_get_i32(g, "neg", &i));
        CHECK(i == -1);
        CHECK_STATUS(ovk_gguf_get_u64(g, "neg", &u64), OSCAR_ERROR_BAD_FORMAT);
        CHECK_STATUS(ovk_gguf_get_u32(g, "big", &u), OSCAR_ERROR_BAD_FORMAT);
        CHECK_STATUS(ovk_gguf_get_i32(g, "big", &i), OSCAR_ERROR_BAD_FORMAT);
        CHECK_OK(ovk_gguf_get_u64(g, "big", &u64));
        CHECK(u64 == 1ull << 33);
        CHECK_STATUS(ovk_gguf_get_u32(g, "name", &u), OSCAR_ERROR_BAD_FORMAT);
        CHECK(strstr(oscar_last_error(), "getters.gguf: key 'name' has type string, expected uint32") != NULL);
        CHECK_STATUS(ovk_gguf_get_f32(g, "llama.block_count", &f), OSCAR_ERROR_BAD_FORMAT);
        CHECK(strstr(oscar_last_error(), "'llama.block_count' has type uint32, expected float32") != NULL);
        CHECK_STATUS(ovk_gguf_get_str(g, "llama.block_count", &s), OSCAR_ERROR_BAD_FORMAT);
        CHECK_STATUS(ovk_gguf_get_bool(g, "name", &b), OSCAR_ERROR_BAD_FORMAT);
        CHECK_STATUS(ovk_gguf_get_array(g, "name", -1, &a), OSCAR_ERROR_BAD_FORMAT);
        CHECK_STATUS(ovk_gguf_get_array(g, "toks", OSCAR_GGUF_TYPE_INT32, &a), OSCAR_ERROR_BAD_FORMAT);
        CHECK(strstr(oscar_last_error(), "'toks' is an array of string, expected an array of int32") != NULL);
        CHECK_STATUS(ovk_gguf_get_u32(g, "llama.head_count", &u), OSCAR_ERROR_BAD_FORMAT);
        CHECK(strstr(oscar_last_error(), "missing key 'llama.head_count'") != NULL);
        CHECK_OK(ovk_gguf_get_u32(g, "llama.block_count", &u));
        CHECK(u == 30);
    }
    ovk_gguf_close(g);
    ovk_gguf_close(NULL);
    free(mem);

    /* files: missing, empty, a directory */
    g = NULL;
    CHECK_STATUS(ovk_gguf_open("/nonexistent/dir/model.gguf", &g), OSCAR_ERROR_IO);
    CHECK(g == NULL && strstr(oscar_last_error(), "/nonexistent/dir/model.gguf") != NULL);
    CHECK_STATUS(ovk_gguf_open(".", &g), OSCAR_ERROR_IO);
    FILE *f = fopen("test_gguf_empty.gguf", "wb");
    if (f) fclose(f);
    CHECK_STATUS(ovk_gguf_open("test_gguf_empty.gguf", &g), OSCAR_ERROR_BAD_FORMAT);
    CHECK(strstr(oscar_last_error(), "test_gguf_empty.gguf: not a GGUF file: it is empty (0 bytes)") != NULL);
    remove("test_gguf_empty.gguf");
}

/* ---- 3. truncation at every byte --------------------------------------------------------------- */

static void test_truncation(void)
{
    ovk_gguf_writer *w = NULL;
    CHECK_OK(ovk_gguf_writer_create(&w));
    CHECK_OK(ovk_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK_OK(ovk_gguf_writer_set_u8(w, "a", 1));
    CHECK_OK(ovk_gguf_writer_set_i16(w, "b", -2));
    CHECK_OK(ovk_gguf_writer_set_f64(w, "c", 2.5));
    CHECK_OK(ovk_gguf_writer_set_bool(w, "d", 1));
    CHECK_OK(ovk_gguf_writer_set_array(w, "e", OSCAR_GGUF_TYPE_STRING, strs, 4));
    CHECK_OK(ovk_gguf_writer_set_array(w, "f", OSCAR_GGUF_TYPE_FLOAT32, f32s, 3));
    CHECK_OK(ovk_gguf_writer_set_str_array_array(w, "g", lists, list_counts, 3));
    float x[512];
    for (int i = 0; i < 512; i++) x[i] = test_rng_normal();
    uint8_t q8[34 * 2], q4k[144];
    CHECK_OK(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q8_0, x, q8, 64));
    CHECK_OK(ovk_ggml_quantize_row(OSCAR_GGML_TYPE_Q4_K, x, q4k, 256));
    uint64_t ne_a[2] = { 3, 2 }, ne_b[1] = { 64 }, ne_c[1] = { 256 };
    CHECK_OK(ovk_gguf_writer_add_tensor(w, "t.f32", OSCAR_GGML_TYPE_F32, 2, ne_a, x));
    CHECK_OK(ovk_gguf_writer_add_tensor(w, "t.q8", OSCAR_GGML_TYPE_Q8_0, 1, ne_b, q8));
    CHECK_OK(ovk_gguf_writer_add_tensor(w, "t.q4k", OSCAR_GGML_TYPE_Q4_K, 1, ne_c, q4k));
    void *mem = NULL;
    size_t n = 0;
    CHECK_OK(ovk_gguf_writer_write_memory(w, &mem, &n));
    ovk_gguf_writer_destroy(w);

    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open_memory(mem, n, "full", &g));
    uint64_t data_end = 0;
    if (g) {
        const ovk_gguf_tensor *t = &g->tensors[g->n_tensors - 1];
        data_end = g->data_offset + t->offset + t->n_bytes;
    }
    ovk_gguf_close(g);
    CHECK(data_end > 0 && data_end <= n);
    int wrong = 0, ok_tail = 0;
    for (size_t len = 0; len < n; len++) {
        ovk_error_clear();
        oscar_status st = open_copy(mem, len, &g);
        oscar_status want = len < data_end ? OSCAR_ERROR_BAD_FORMAT : OSCAR_OK;
        if (st != want || (st && !strstr(oscar_last_error(), "test.gguf: "))) {
            if (wrong++ < 5) fprintf(stderr, "cut at %zu of %zu: status %d, want %d (%s)\n", len, n, st, want, oscar_last_error());
        }
        ok_tail += st == OSCAR_OK;
    }
    printf("truncation: %zu cuts of a %zu-byte image, %d accepted (trailing padding only)\n", n, n, ok_tail);
    CHECK_MSG(wrong == 0, "%d cuts gave the wrong status", wrong);
    CHECK(ok_tail == (int)(n - data_end));

    /* a few cuts through real files and mmap */
    const size_t cuts[] = { 1, 4, 23, 24, n / 2, (size_t)data_end - 1 };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        FILE *f = fopen("test_gguf_cut.gguf", "wb");
        if (!f) { CHECK(f != NULL); break; }
        fwrite(mem, 1, cuts[k], f);
        fclose(f);
        CHECK_STATUS(ovk_gguf_open("test_gguf_cut.gguf", &g), OSCAR_ERROR_BAD_FORMAT);
        CHECK(g == NULL);
    }
    remove("test_gguf_cut.gguf");

    /* 5. random corruption of the same image */
    uint8_t *c = malloc(n);
    int unexpected = 0, accepted = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(c, mem, n);
        int flips = 1 + (int)(test_rng_u32() % 4);
        for (int k = 0; k < flips; k++) {
            size_t pos = test_rng_u32() % (it % 2 ? n : (size_t)(data_end < 400 ? data_end : 400)); /* bias to the header */
            c[pos] = (uint8_t)(test_rng_u32() % 3 == 0 ? 0xFF : test_rng_u32());
        }
        oscar_status st = open_copy(c, n, &g);
        if (st != OSCAR_OK && st != OSCAR_ERROR_BAD_FORMAT && st != OSCAR_ERROR_UNSUPPORTED_FORMAT) unexpected++;
        accepted += st == OSCAR_OK;
    }
    printf("random corruption: 20000 images, %d accepted, %d unexpected statuses\n", accepted, unexpected);
    CHECK(unexpected == 0);
    free(c);
    free(mem);
}

/* ---- 4. corrupt fields ------------------------------------------------------------------------- */

static void test_corrupt_fields(void)
{
    bb b = { 0 };
    uint64_t ne2[2] = { 32, 2 };

    /* a valid minimal v2 and v3 file first: the corruptions below differ in one field */
    for (uint32_t v = 2; v <= 3; v++) {
        bb_header(&b, v, 1, 1);
        bb_kv_u32(&b, "k", 7);
        bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 0);
        bb_pad(&b, 32);
        for (int i = 0; i < 64; i++) bb_u32(&b, 0);
        ovk_gguf *g = NULL;
        CHECK_OK(open_copy(b.p, b.n, &g));
    }

    bb_header(&b, 3, 0, 0);
    b.p[3] = 'X';
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "not a GGUF file: it begins with bytes");
    bb_header(&b, 1, 0, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_UNSUPPORTED_FORMAT, "version 1");
    bb_header(&b, 99, 0, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_UNSUPPORTED_FORMAT, "version 99");
    bb_header(&b, 0, 0, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_UNSUPPORTED_FORMAT, "version 0");
    bb_header(&b, 0x03000000u, 0, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_UNSUPPORTED_FORMAT, "big-endian");

    /* counts that cannot fit in the file */
    bb_header(&b, 3, 1ull << 40, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "tensor count 1099511627776");
    bb_header(&b, 3, UINT64_MAX, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "tensor count");
    bb_header(&b, 3, 0, UINT64_MAX);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "metadata count");

    /* string lengths */
    bb_header(&b, 3, 0, 1);
    bb_u64(&b, 1ull << 62); /* key length */
    bb_bytes(&b, "abcdefgh", 8);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "metadata #0: key length 4611686018427387904 exceeds");
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "s");
    bb_u32(&b, OSCAR_GGUF_TYPE_STRING);
    bb_u64(&b, UINT64_MAX); /* value length */
    bb_bytes(&b, "xyz", 3);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "key 's': string value length");

    /* array counts: the byte size overflows, strings, nested arrays */
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "arr");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u32(&b, OSCAR_GGUF_TYPE_UINT32);
    bb_u64(&b, (1ull << 62) + 1); /* * 4 wraps to 4 */
    bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "key 'arr': array count 4611686018427387905");
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "arr");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u32(&b, OSCAR_GGUF_TYPE_STRING);
    bb_u64(&b, 1ull << 60);
    bb_str(&b, "a");
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "array count 1152921504606846976 of strings");
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "arr");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u64(&b, 1ull << 50);
    bb_u32(&b, OSCAR_GGUF_TYPE_UINT8);
    bb_u64(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "of arrays exceeds");
    /* a nested string array whose inner count is too large */
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "arr");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u64(&b, 2);
    bb_u32(&b, OSCAR_GGUF_TYPE_STRING);
    bb_u64(&b, 1);
    bb_str(&b, "ok");
    bb_u32(&b, OSCAR_GGUF_TYPE_STRING);
    bb_u64(&b, 1000);
    bb_str(&b, "x");
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "array count 1000 of strings");
    /* arrays nested too deep */
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "deep");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    for (int d = 0; d < 20; d++) { bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY); bb_u64(&b, 1); }
    bb_u32(&b, OSCAR_GGUF_TYPE_UINT8);
    bb_u64(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "nested deeper");
    /* unknown value type, unknown array element type */
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "t");
    bb_u32(&b, 13);
    bb_u64(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "key 't': unknown value type 13");
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "t");
    bb_u32(&b, OSCAR_GGUF_TYPE_ARRAY);
    bb_u32(&b, 77);
    bb_u64(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "unknown array element type 77");
    /* duplicate key, NUL in a key */
    bb_header(&b, 3, 0, 2);
    bb_kv_u32(&b, "k", 1);
    bb_kv_u32(&b, "k", 2);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "key 'k': duplicate key");
    bb_header(&b, 3, 0, 1);
    bb_u64(&b, 3);
    bb_bytes(&b, "a\0b", 3);
    bb_u32(&b, OSCAR_GGUF_TYPE_UINT8);
    bb_le(&b, 0, 1);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "NUL");
    /* general.alignment: wrong type, not a power of two, zero */
    bb_header(&b, 3, 0, 1);
    bb_str(&b, "general.alignment");
    bb_u32(&b, OSCAR_GGUF_TYPE_UINT64);
    bb_u64(&b, 64);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "key 'general.alignment': has type uint64, expected uint32");
    bb_header(&b, 3, 0, 1);
    bb_kv_u32(&b, "general.alignment", 48);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "alignment 48 is not a power of two");
    bb_header(&b, 3, 0, 1);
    bb_kv_u32(&b, "general.alignment", 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "alignment 0 is not a power of two");

    /* tensor infos */
    uint64_t ne5[5] = { 32, 1, 1, 1, 1 };
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "blk.0.w", 5, ne5, OSCAR_GGML_TYPE_F32, 0);
    bb_pad(&b, 32);
    for (int i = 0; i < 64; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "tensor 'blk.0.w': n_dims 5 not in 1..4");
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 0, ne5, OSCAR_GGML_TYPE_F32, 0);
    bb_u64(&b, 0);
    bb_pad(&b, 32);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "n_dims 0");
    uint64_t over[3] = { 1ull << 32, 1ull << 32, 2 };
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 3, over, OSCAR_GGML_TYPE_F32, 0);
    bb_pad(&b, 32);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "element count overflows");
    uint64_t over_bytes[1] = { 1ull << 62 }; /* 2^62 F32 elements: 2^64 bytes */
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 1, over_bytes, OSCAR_GGML_TYPE_F32, 0);
    bb_pad(&b, 32);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "byte size");
    uint64_t neg[2] = { 32, UINT64_MAX };
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 2, neg, OSCAR_GGML_TYPE_F32, 0);
    bb_pad(&b, 32);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "exceeds INT64_MAX");
    uint64_t zero_dim[2] = { 0, 5 }; /* zero elements is a valid, empty tensor */
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "empty", 2, zero_dim, OSCAR_GGML_TYPE_Q4_K, 0);
    bb_pad(&b, 32);
    {
        ovk_gguf *g = NULL;
        CHECK_OK(open_copy(b.p, b.n, &g));
    }
    /* data beyond the file: the message of the brief */
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "blk.3.attn_q.weight", 2, ne2, OSCAR_GGML_TYPE_F32, 128);
    bb_pad(&b, 32);
    size_t data_off = b.n;
    for (int i = 0; i < 64; i++) bb_u32(&b, 0);
    {
        char want[160];
        snprintf(want, sizeof want, "test.gguf: tensor 'blk.3.attn_q.weight': data offset %zu + size 256 beyond file size %zu",
                 data_off + 128, b.n);
        EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, want);
    }
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, UINT64_MAX - 31); /* aligned; start + size wraps */
    bb_pad(&b, 32);
    for (int i = 0; i < 64; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "beyond file size");
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 8);
    bb_pad(&b, 32);
    for (int i = 0; i < 80; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "tensor 'w': data offset 8 is not a multiple of the alignment 32");
    /* unknown tensor types: removed ids, IQ family, far out */
    const uint32_t unknown[] = { 4, 5, 16, 31, 99, 0xFFFFFFFFu };
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        bb_header(&b, 3, 1, 0);
        bb_tensor(&b, "w", 2, ne2, unknown[k], 0);
        bb_pad(&b, 32);
        for (int i = 0; i < 64; i++) bb_u32(&b, 0);
        EXPECT_BAD(&b, OSCAR_ERROR_UNSUPPORTED_FORMAT, "unknown tensor type");
    }
    uint64_t ne33[1] = { 33 };
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 1, ne33, OSCAR_GGML_TYPE_Q4_0, 0);
    bb_pad(&b, 32);
    for (int i = 0; i < 64; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "row length 33 is not a multiple of Q4_0's block size 32");
    /* duplicate tensor names */
    bb_header(&b, 3, 2, 0);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 0);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 256);
    bb_pad(&b, 32);
    for (int i = 0; i < 128; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "tensor 'w': duplicate tensor name");
    /* a file that ends right after the tensor infos (no data section) */
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "beyond file size");
    /* alignment 64 from the file is honoured: offset 32 is misaligned there */
    bb_header(&b, 3, 1, 1);
    bb_kv_u32(&b, "general.alignment", 64);
    bb_tensor(&b, "w", 2, ne2, OSCAR_GGML_TYPE_F32, 32);
    bb_pad(&b, 64);
    for (int i = 0; i < 128; i++) bb_u32(&b, 0);
    EXPECT_BAD(&b, OSCAR_ERROR_BAD_FORMAT, "alignment 64");
    free(b.p);
}

/* ---- 6. the real model, when available ------------------------------------------------------------ */

static void test_real_model(void)
{
    const char *path = getenv("OSCAR_TEST_MODEL_GGUF");
    if (!path || !*path) {
        printf("real model: OSCAR_TEST_MODEL_GGUF not set, skipped\n");
        return;
    }
    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open(path, &g));
    if (!g) return;
    const char *arch = NULL, *tok_model = NULL;
    uint32_t layers = 0, heads = 0, kv_heads = 0, embd = 0;
    const ovk_gguf_array *toks = NULL, *merges = NULL;
    CHECK_OK(ovk_gguf_get_str(g, "general.architecture", &arch));
    CHECK(arch && strcmp(arch, "llama") == 0);
    CHECK_OK(ovk_gguf_get_u32(g, "llama.block_count", &layers));
    CHECK_OK(ovk_gguf_get_u32(g, "llama.attention.head_count", &heads));
    CHECK_OK(ovk_gguf_get_u32(g, "llama.attention.head_count_kv", &kv_heads));
    CHECK_OK(ovk_gguf_get_u32(g, "llama.embedding_length", &embd));
    CHECK(layers == 30 && heads == 9 && kv_heads == 3 && embd == 576 && embd / heads == 64);
    CHECK_OK(ovk_gguf_get_str(g, "tokenizer.ggml.model", &tok_model));
    CHECK(tok_model && strcmp(tok_model, "gpt2") == 0);
    CHECK_OK(ovk_gguf_get_array(g, "tokenizer.ggml.tokens", OSCAR_GGUF_TYPE_STRING, &toks));
    CHECK_OK(ovk_gguf_get_array(g, "tokenizer.ggml.merges", OSCAR_GGUF_TYPE_STRING, &merges));
    CHECK(toks && toks->count == 49152 && merges && merges->count == 48900);
    CHECK(g->n_tensors == 272);
    const ovk_gguf_tensor *emb = ovk_gguf_find_tensor(g, "token_embd.weight");
    CHECK(emb && emb->type == OSCAR_GGML_TYPE_Q8_0 && emb->ne[0] == 576 && emb->ne[1] == 49152);
    const ovk_gguf_tensor *q = ovk_gguf_find_tensor(g, "blk.29.attn_q.weight");
    CHECK(q && q->type == OSCAR_GGML_TYPE_Q4_1 && q->ne[0] == 576 && q->ne[1] == 576);
    if (q) {
        float y[576];
        CHECK_OK(ovk_ggml_dequantize_row(q->type, q->data, y, 576));
        int finite = 1;
        for (int i = 0; i < 576; i++) finite &= isfinite(y[i]) && fabsf(y[i]) < 100.0f;
        CHECK(finite);
    }
    printf("real model: %s, %u layers, %u/%u heads, %llu tensors\n", path, layers, heads, kv_heads,
           (unsigned long long)g->n_tensors);
    ovk_gguf_close(g);
}

int main(void)
{
    test_rng_seed(777);
    test_round_trip(32);
    test_round_trip(64);
    test_getters_and_writer_errors();
    test_truncation();
    test_corrupt_fields();
    test_real_model();
    return test_finish();
}
