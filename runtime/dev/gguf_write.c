/* GGUF v3 writer (API in gguf.h). Each key's value is serialized when it is set, so writing
 * is a straight copy: header, keys, tensor infos, padding, then each tensor's data padded to
 * the alignment. The same emitter serves files (whole or streamed) and memory buffers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"

/* ---- growable byte buffer ------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;                    /* [cap] bytes, n used */
    size_t n, cap;
    int oom;                       /* 1 once an allocation failed (later puts do nothing) */
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->oom) return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2) { b->oom = 1; return; }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_le(buf *b, uint64_t v, size_t n)
{
    uint8_t t[8];
    for (size_t i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, n);
}

static void put_zeros(buf *b, uint64_t n)
{
    static const uint8_t zeros[256];
    for (; n > 0 && !b->oom; n -= n < 256 ? n : 256) put(b, zeros, n < 256 ? (size_t)n : 256);
}

static void put_str(buf *b, const char *s, uint64_t len)
{
    put_le(b, len, 8);
    put(b, s, (size_t)len);
}

/* ---- the writer ------------------------------------------------------------------------------- */

typedef struct wkv {
    char *key;                     /* NUL-terminated */
    buf value;                     /* u32 type + serialized value */
} wkv;

typedef struct wtensor {
    char *name;                    /* NUL-terminated */
    uint32_t type;                 /* ovk_ggml_type */
    uint32_t n_dims;               /* 1..4 */
    uint64_t ne[OSCAR_GGUF_MAX_DIMS]; /* elements per dimension, ne[0] contiguous */
    uint64_t n_bytes;              /* data bytes */
    uint64_t offset;               /* bytes from the data section start (set by layout()) */
    const void *data;              /* [n_bytes] borrowed or == owned; NULL = streamed */
    void *owned;                   /* our copy, or NULL */
} wtensor;

struct ovk_gguf_writer {
    uint32_t alignment;            /* bytes, power of two */
    wkv *kv;                       /* [n_kv] in insertion order */
    size_t n_kv, cap_kv;
    wtensor *tensors;              /* [n_tensors] in insertion order */
    size_t n_tensors, cap_tensors;
    /* streaming state */
    FILE *stream;                  /* open while streaming */
    char *stream_path, *stream_tmp;
    size_t stream_next;            /* index of the next tensor to stream */
    uint64_t stream_pos;           /* bytes written into the data section */
};

oscar_status ovk_gguf_writer_create(ovk_gguf_writer **out)
{
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gguf_writer_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for a GGUF writer");
    (*out)->alignment = OSCAR_GGUF_DEFAULT_ALIGNMENT;
    return OSCAR_OK;
}

static void stream_abort(ovk_gguf_writer *w)
{
    if (w->stream) {
        fclose(w->stream);
        remove(w->stream_tmp);
    }
    w->stream = NULL;
    free(w->stream_path);
    free(w->stream_tmp);
    w->stream_path = w->stream_tmp = NULL;
}

void ovk_gguf_writer_destroy(ovk_gguf_writer *w)
{
    if (!w) return;
    stream_abort(w);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].value.p);
    }
    free(w->kv);
    for (size_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].owned);
    }
    free(w->tensors);
    free(w);
}

static char *dup_cstr(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

/* Stores a serialized value under `key` (replacing an earlier value); takes ownership of v.
 * general.alignment, however it is set (set_u32, copy_kv), must be a uint32 power of two and
 * becomes the padding the writer uses, so the key and the layout always agree. */
static oscar_status set_value(ovk_gguf_writer *w, const char *key, buf *v)
{
    if (v->oom) {
        free(v->p);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for the value of key '%s'", key);
    }
    if (strcmp(key, "general.alignment") == 0) {
        uint32_t type = v->n >= 4 ? (uint32_t)(v->p[0] | v->p[1] << 8 | v->p[2] << 16 | (uint32_t)v->p[3] << 24) : 0;
        uint32_t a = v->n >= 8 ? (uint32_t)(v->p[4] | v->p[5] << 8 | v->p[6] << 16 | (uint32_t)v->p[7] << 24) : 0;
        if (type != OSCAR_GGUF_TYPE_UINT32 || a == 0 || (a & (a - 1)) != 0) {
            free(v->p);
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: general.alignment must be a uint32 power of two");
        }
        w->alignment = a;
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].value.p);
            w->kv[i].value = *v;
            return OSCAR_OK;
        }
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *p = realloc(w->kv, cap * sizeof *p);
        if (!p) { free(v->p); OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for key '%s'", key); }
        w->kv = p;
        w->cap_kv = cap;
    }
    char *k = dup_cstr(key);
    if (!k) { free(v->p); OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for key '%s'", key); }
    w->kv[w->n_kv].key = k;
    w->kv[w->n_kv].value = *v;
    w->n_kv++;
    return OSCAR_OK;
}

static oscar_status check_kv_args(const ovk_gguf_writer *w, const char *key)
{
    if (!w || !key) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL writer or key");
    if (w->stream) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: key '%s' set while streaming", key);
    return OSCAR_OK;
}

/* Serializes and stores one fixed-size scalar given as raw little-endian bits. */
static oscar_status set_scalar(ovk_gguf_writer *w, const char *key, ovk_gguf_type type, uint64_t bits)
{
    oscar_status st = check_kv_args(w, key);
    if (st) return st;
    buf v = { 0 };
    put_le(&v, type, 4);
    put_le(&v, bits, ovk_gguf_type_size(type));
    return set_value(w, key, &v);
}

oscar_status ovk_gguf_writer_set_u8(ovk_gguf_writer *w, const char *key, uint8_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_UINT8, v); }
oscar_status ovk_gguf_writer_set_i8(ovk_gguf_writer *w, const char *key, int8_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_INT8, (uint8_t)v); }
oscar_status ovk_gguf_writer_set_u16(ovk_gguf_writer *w, const char *key, uint16_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_UINT16, v); }
oscar_status ovk_gguf_writer_set_i16(ovk_gguf_writer *w, const char *key, int16_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_INT16, (uint16_t)v); }
oscar_status ovk_gguf_writer_set_u32(ovk_gguf_writer *w, const char *key, uint32_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_UINT32, v); }
oscar_status ovk_gguf_writer_set_i32(ovk_gguf_writer *w, const char *key, int32_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_INT32, (uint32_t)v); }
oscar_status ovk_gguf_writer_set_u64(ovk_gguf_writer *w, const char *key, uint64_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_UINT64, v); }
oscar_status ovk_gguf_writer_set_i64(ovk_gguf_writer *w, const char *key, int64_t v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_INT64, (uint64_t)v); }
oscar_status ovk_gguf_writer_set_bool(ovk_gguf_writer *w, const char *key, int v) { return set_scalar(w, key, OSCAR_GGUF_TYPE_BOOL, v != 0); }

oscar_status ovk_gguf_writer_set_f32(ovk_gguf_writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return set_scalar(w, key, OSCAR_GGUF_TYPE_FLOAT32, u);
}

oscar_status ovk_gguf_writer_set_f64(ovk_gguf_writer *w, const char *key, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return set_scalar(w, key, OSCAR_GGUF_TYPE_FLOAT64, u);
}

oscar_status ovk_gguf_writer_set_str(ovk_gguf_writer *w, const char *key, const char *s)
{
    oscar_status st = check_kv_args(w, key);
    if (st) return st;
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL string for key '%s'", key);
    buf v = { 0 };
    put_le(&v, OSCAR_GGUF_TYPE_STRING, 4);
    put_str(&v, s, strlen(s));
    return set_value(w, key, &v);
}

/* Serializes a host array of a fixed-size type as little-endian elements. */
static void put_host_elems(buf *b, ovk_gguf_type type, const void *elems, uint64_t count)
{
    const uint8_t *p = elems;
    size_t n = ovk_gguf_type_size(type);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t bits = 0;
        switch (n) {
        case 1: bits = p[i]; break;
        case 2: { uint16_t t; memcpy(&t, p + 2 * i, 2); bits = t; } break;
        case 4: { uint32_t t; memcpy(&t, p + 4 * i, 4); bits = t; } break;
        default: memcpy(&bits, p + 8 * i, 8); break;
        }
        if (type == OSCAR_GGUF_TYPE_BOOL) bits = bits != 0;
        put_le(b, bits, n);
    }
}

oscar_status ovk_gguf_writer_set_array(ovk_gguf_writer *w, const char *key, ovk_gguf_type elem_type,
                                         const void *elems, uint64_t count)
{
    oscar_status st = check_kv_args(w, key);
    if (st) return st;
    if ((uint32_t)elem_type > OSCAR_GGUF_TYPE_FLOAT64 || elem_type == OSCAR_GGUF_TYPE_ARRAY)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: key '%s': array element type %d not allowed here", key, (int)elem_type);
    if (count && !elems) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: key '%s': NULL elements", key);
    buf v = { 0 };
    put_le(&v, OSCAR_GGUF_TYPE_ARRAY, 4);
    put_le(&v, elem_type, 4);
    put_le(&v, count, 8);
    if (elem_type == OSCAR_GGUF_TYPE_STRING) {
        const char *const *s = elems;
        for (uint64_t i = 0; i < count; i++) {
            if (!s[i]) { free(v.p); OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: key '%s': string %llu is NULL", key, (unsigned long long)i); }
            put_str(&v, s[i], strlen(s[i]));
        }
    } else {
        put_host_elems(&v, elem_type, elems, count);
    }
    return set_value(w, key, &v);
}

oscar_status ovk_gguf_writer_set_str_array_array(ovk_gguf_writer *w, const char *key,
                                                   const char *const *const *lists, const uint64_t *counts, uint64_t n)
{
    oscar_status st = check_kv_args(w, key);
    if (st) return st;
    if (n && (!lists || !counts)) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: key '%s': NULL lists", key);
    buf v = { 0 };
    put_le(&v, OSCAR_GGUF_TYPE_ARRAY, 4);
    put_le(&v, OSCAR_GGUF_TYPE_ARRAY, 4);
    put_le(&v, n, 8);
    for (uint64_t i = 0; i < n; i++) {
        put_le(&v, OSCAR_GGUF_TYPE_STRING, 4);
        put_le(&v, counts[i], 8);
        for (uint64_t j = 0; j < counts[i]; j++) {
            if (!lists[i] || !lists[i][j]) {
                free(v.p);
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: key '%s': list %llu string %llu is NULL", key,
                                   (unsigned long long)i, (unsigned long long)j);
            }
            put_str(&v, lists[i][j], strlen(lists[i][j]));
        }
    }
    return set_value(w, key, &v);
}

/* Serializes an array read by the reader (recursively): element type, count, elements. */
static void put_read_array(buf *b, const ovk_gguf_array *a)
{
    put_le(b, a->type, 4);
    put_le(b, a->count, 8);
    size_t n = ovk_gguf_type_size(a->type);
    if (n) put(b, a->data, (size_t)(a->count * n)); /* already little-endian */
    else if (a->type == OSCAR_GGUF_TYPE_STRING)
        for (uint64_t i = 0; i < a->count; i++) put_str(b, a->strs[i].ptr, a->strs[i].len);
    else
        for (uint64_t i = 0; i < a->count; i++) put_read_array(b, &a->arrays[i]);
}

oscar_status ovk_gguf_writer_copy_kv(ovk_gguf_writer *w, const ovk_gguf_kv *kv)
{
    if (!kv) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL key/value");
    oscar_status st = check_kv_args(w, kv->key);
    if (st) return st;
    const ovk_gguf_value *val = &kv->value;
    buf v = { 0 };
    put_le(&v, val->type, 4);
    switch (val->type) {
    case OSCAR_GGUF_TYPE_STRING: put_str(&v, val->str.ptr, val->str.len); break;
    case OSCAR_GGUF_TYPE_ARRAY: put_read_array(&v, &val->arr); break;
    case OSCAR_GGUF_TYPE_FLOAT32: {
        float f = (float)val->f64;
        uint32_t u;
        memcpy(&u, &f, 4);
        put_le(&v, u, 4);
    } break;
    case OSCAR_GGUF_TYPE_FLOAT64: {
        uint64_t u;
        memcpy(&u, &val->f64, 8);
        put_le(&v, u, 8);
    } break;
    default: /* integers and bool: the low bytes of u64 (== i64 bits) */
        put_le(&v, val->u64, ovk_gguf_type_size(val->type));
        break;
    }
    return set_value(w, kv->key, &v);
}

oscar_status ovk_gguf_writer_set_alignment(ovk_gguf_writer *w, uint32_t alignment)
{
    if (!w) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL writer");
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: alignment %u is not a power of two", alignment);
    return ovk_gguf_writer_set_u32(w, "general.alignment", alignment); /* set_value adopts it */
}

/* ---- tensors ---------------------------------------------------------------------------------- */

static oscar_status add_tensor(ovk_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                               const uint64_t *ne, const void *data, int copy)
{
    if (!w || !name || !ne) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL writer, name or shape");
    if (w->stream) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: tensor '%s' added while streaming", name);
    if (n_dims < 1 || n_dims > OSCAR_GGUF_MAX_DIMS)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s': n_dims %u not in 1..4", name, n_dims);
    const ovk_ggml_type_info *ti = ovk_ggml_type_get(type);
    if (!ti) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s': unknown type %u", name, type);
    uint64_t rows = 1, row_bytes, n_bytes;
    for (uint32_t d = 1; d < n_dims; d++) {
        if (ne[d] > (uint64_t)INT64_MAX || (ne[d] && rows > UINT64_MAX / ne[d]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s': shape overflows", name);
        rows *= ne[d];
    }
    if (ne[0] > (uint64_t)INT64_MAX || ovk_ggml_row_size(type, ne[0], &row_bytes) != OSCAR_OK)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s': row length %llu invalid for %s", name,
                           (unsigned long long)ne[0], ti->name);
    if (row_bytes && rows > UINT64_MAX / row_bytes)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s': byte size overflows", name);
    n_bytes = rows * row_bytes;
    if (n_bytes > SIZE_MAX) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s' too large", name);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: duplicate tensor '%s'", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        wtensor *p = realloc(w->tensors, cap * sizeof *p);
        if (!p) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for tensor '%s'", name);
        w->tensors = p;
        w->cap_tensors = cap;
    }
    wtensor t = { 0 };
    t.name = dup_cstr(name);
    if (!t.name) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for tensor '%s'", name);
    t.type = type;
    t.n_dims = n_dims;
    for (uint32_t d = 0; d < OSCAR_GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    t.n_bytes = n_bytes;
    if (data && copy) {
        t.owned = malloc(n_bytes ? (size_t)n_bytes : 1);
        if (!t.owned) { free(t.name); OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for tensor '%s' data", name); }
        memcpy(t.owned, data, (size_t)n_bytes);
        t.data = t.owned;
    } else {
        t.data = data;
    }
    w->tensors[w->n_tensors++] = t;
    return OSCAR_OK;
}

oscar_status ovk_gguf_writer_add_tensor(ovk_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                          const uint64_t *ne, const void *data)
{
    return add_tensor(w, name, type, n_dims, ne, data, 1);
}

oscar_status ovk_gguf_writer_add_tensor_ref(ovk_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                              const uint64_t *ne, const void *data)
{
    return add_tensor(w, name, type, n_dims, ne, data, 0);
}

/* ---- emitting -------------------------------------------------------------------------------- */

static uint64_t pad_to(uint64_t x, uint64_t a) { return (a - x % a) % a; }

/* Assigns each tensor's offset and serializes header, keys and tensor infos plus the padding
 * that starts the data section into `b`. Returns the data section size in *data_bytes. */
static oscar_status emit_head(ovk_gguf_writer *w, buf *b, uint64_t *data_bytes)
{
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        w->tensors[i].offset = off;
        uint64_t n = w->tensors[i].n_bytes, p = pad_to(n, w->alignment);
        if (off > UINT64_MAX - n - p) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: data section overflows");
        off += n + p;
    }
    *data_bytes = off;
    put(b, "GGUF", 4);
    put_le(b, 3, 4);
    put_le(b, w->n_tensors, 8);
    put_le(b, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(b, w->kv[i].key, strlen(w->kv[i].key));
        put(b, w->kv[i].value.p, w->kv[i].value.n);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        put_str(b, t->name, strlen(t->name));
        put_le(b, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) put_le(b, t->ne[d], 8);
        put_le(b, t->type, 4);
        put_le(b, t->offset, 8);
    }
    put_zeros(b, pad_to(b->n, w->alignment));
    if (b->oom) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "GGUF writer: no memory for the header");
    return OSCAR_OK;
}

/* Writes n bytes to f; an I/O error names `path`. */
static oscar_status fwrite_all(FILE *f, const void *p, size_t n, const char *path)
{
    if (n && fwrite(p, 1, n, f) != n) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "%s: write failed: %s", path, strerror(errno));
    return OSCAR_OK;
}

static oscar_status fwrite_pad(FILE *f, uint64_t n, const char *path)
{
    static const uint8_t zeros[256];
    for (; n > 0; n -= n < 256 ? n : 256) {
        oscar_status st = fwrite_all(f, zeros, n < 256 ? (size_t)n : 256, path);
        if (st) return st;
    }
    return OSCAR_OK;
}

static oscar_status check_all_data(const ovk_gguf_writer *w)
{
    for (size_t i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].data)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: tensor '%s' has no data (declared for streaming)",
                               w->tensors[i].name);
    return OSCAR_OK;
}

oscar_status ovk_gguf_writer_write_memory(ovk_gguf_writer *w, void **out, size_t *size)
{
    oscar_status st;
    buf b = { 0 };
    uint64_t data_bytes;
    if (!w || !out || !size) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL argument");
    OSCAR_TRY(check_all_data(w));
    OSCAR_TRY(emit_head(w, &b, &data_bytes));
    for (size_t i = 0; i < w->n_tensors; i++) {
        put(&b, w->tensors[i].data, (size_t)w->tensors[i].n_bytes);
        put_zeros(&b, pad_to(w->tensors[i].n_bytes, w->alignment));
    }
    if (b.oom) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "GGUF writer: no memory for a %llu-byte image",
                          (unsigned long long)data_bytes);
    *out = b.p;
    *size = b.n;
    return OSCAR_OK;
fail:
    free(b.p);
    return st;
}

/* Creates the stream's file beside `path`: "<path>.<pid>.<n>.tmp", opened with O_EXCL so that
 * an existing file of that name (a user's, or a link planted there) is never truncated or
 * followed. It takes the permissions of the file it will replace, else 0666 less the umask.
 * An existing `path` that is not a regular file (a folder, a device such as /dev/null, a
 * pipe) is refused: the rename would replace it. */
static oscar_status create_tmp(ovk_gguf_writer *w, const char *path)
{
    struct stat sb;
    int have = stat(path, &sb) == 0;
    if (have && !S_ISREG(sb.st_mode))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "%s exists and is not a regular file", path);
    size_t cap = strlen(path) + 40;
    w->stream_tmp = malloc(cap);
    if (!w->stream_tmp) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for a path");
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(w->stream_tmp, cap, "%s.%ld.%u.tmp", path, (long)getpid(), k);
        int fd = open(w->stream_tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "%s: cannot create a file in its folder: %s", path, strerror(errno));
        if (have) fchmod(fd, sb.st_mode & 07777);
        w->stream = fdopen(fd, "wb");
        if (!w->stream) {
            close(fd);
            remove(w->stream_tmp);
            OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "%s: cannot write: %s", path, strerror(errno));
        }
        return OSCAR_OK;
    }
    OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "%s: cannot create a temporary file beside it", path);
}

/* Opens a temporary file beside `path` and writes the head; fills w->stream*. */
static oscar_status open_stream(ovk_gguf_writer *w, const char *path)
{
    oscar_status st;
    buf b = { 0 };
    uint64_t data_bytes;
    if (w->stream) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: already streaming to %s", w->stream_path);
    w->stream_path = dup_cstr(path);
    if (!w->stream_path) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for a path");
    OSCAR_TRY(emit_head(w, &b, &data_bytes));
    OSCAR_TRY(create_tmp(w, path));
    OSCAR_TRY(fwrite_all(w->stream, b.p, b.n, w->stream_tmp));
    w->stream_next = 0;
    w->stream_pos = 0;
    free(b.p);
    return OSCAR_OK;
fail:
    free(b.p);
    stream_abort(w);
    return st;
}

oscar_status ovk_gguf_writer_stream_begin(ovk_gguf_writer *w, const char *path)
{
    if (!w || !path) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL argument");
    return open_stream(w, path);
}

oscar_status ovk_gguf_writer_stream_tensor(ovk_gguf_writer *w, const void *data, uint64_t n_bytes)
{
    oscar_status st;
    if (!w) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL writer");
    if (!w->stream) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: not streaming");
    if (w->stream_next >= w->n_tensors)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "GGUF writer: %s: more tensors streamed than the %zu declared", w->stream_path,
                   w->n_tensors);
    const wtensor *t = &w->tensors[w->stream_next];
    if (n_bytes != t->n_bytes || (n_bytes && !data))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: tensor '%s' needs %llu bytes, got %llu", t->name,
                   (unsigned long long)t->n_bytes, (unsigned long long)n_bytes);
    OSCAR_TRY(fwrite_all(w->stream, data, (size_t)n_bytes, w->stream_tmp));
    OSCAR_TRY(fwrite_pad(w->stream, pad_to(n_bytes, w->alignment), w->stream_tmp));
    w->stream_next++;
    return OSCAR_OK;
fail:
    stream_abort(w);
    return st;
}

oscar_status ovk_gguf_writer_stream_end(ovk_gguf_writer *w)
{
    oscar_status st;
    if (!w) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL writer");
    if (!w->stream) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "GGUF writer: not streaming");
    if (w->stream_next != w->n_tensors)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "GGUF writer: %s: only %zu of %zu tensors streamed", w->stream_path,
                   w->stream_next, w->n_tensors);
    FILE *f = w->stream;
    w->stream = NULL;
    /* on disk before the rename, so that the name never points at a partly written file */
    int synced = fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0 || !synced) {
        remove(w->stream_tmp);
        OSCAR_FAIL(OSCAR_ERROR_IO, "%s: close failed: %s", w->stream_tmp, strerror(errno));
    }
    if (rename(w->stream_tmp, w->stream_path) != 0) {
        remove(w->stream_tmp);
        OSCAR_FAIL(OSCAR_ERROR_IO, "%s: cannot rename into place: %s", w->stream_path, strerror(errno));
    }
    stream_abort(w); /* frees the paths; nothing is open any more */
    return OSCAR_OK;
fail:
    stream_abort(w);
    return st;
}

oscar_status ovk_gguf_writer_write_file(ovk_gguf_writer *w, const char *path)
{
    oscar_status st;
    if (!w || !path) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF writer: NULL argument");
    if ((st = check_all_data(w))) return st;
    if ((st = open_stream(w, path))) return st;
    for (size_t i = 0; i < w->n_tensors; i++)
        if ((st = ovk_gguf_writer_stream_tensor(w, w->tensors[i].data, w->tensors[i].n_bytes))) return st;
    return ovk_gguf_writer_stream_end(w);
}
