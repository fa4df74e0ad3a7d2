/* GGUF reader: maps the file read-only and validates every field before use (see gguf.h).
 *
 * Parsing is one forward pass through a bounds-checked cursor. Every count that sizes an
 * allocation is first checked against the bytes left in the file (each element needs at
 * least a known number of bytes), so a corrupted count can neither overflow nor allocate
 * more than a small multiple of the file size. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"

/* ---- value types ---------------------------------------------------------------------------- */

const char *ovk_gguf_type_name(uint32_t type)
{
    static const char *const names[] = { "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                         "bool", "string", "array", "uint64", "int64", "float64" };
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

size_t ovk_gguf_type_size(uint32_t type)
{
    switch (type) {
    case OSCAR_GGUF_TYPE_UINT8: case OSCAR_GGUF_TYPE_INT8: case OSCAR_GGUF_TYPE_BOOL: return 1;
    case OSCAR_GGUF_TYPE_UINT16: case OSCAR_GGUF_TYPE_INT16: return 2;
    case OSCAR_GGUF_TYPE_UINT32: case OSCAR_GGUF_TYPE_INT32: case OSCAR_GGUF_TYPE_FLOAT32: return 4;
    case OSCAR_GGUF_TYPE_UINT64: case OSCAR_GGUF_TYPE_INT64: case OSCAR_GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static uint64_t le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Decodes one fixed-size element at p into the value's numeric field. */
static void decode_scalar(ovk_gguf_type type, const uint8_t *p, ovk_gguf_value *v)
{
    size_t n = ovk_gguf_type_size(type);
    uint64_t raw = le(p, n);
    switch (type) {
    case OSCAR_GGUF_TYPE_INT8: v->i64 = (int8_t)raw; break;
    case OSCAR_GGUF_TYPE_INT16: v->i64 = (int16_t)raw; break;
    case OSCAR_GGUF_TYPE_INT32: v->i64 = (int32_t)raw; break;
    case OSCAR_GGUF_TYPE_INT64: v->i64 = (int64_t)raw; break;
    case OSCAR_GGUF_TYPE_BOOL: v->u64 = raw != 0; break;
    case OSCAR_GGUF_TYPE_FLOAT32: { float f; uint32_t u = (uint32_t)raw; memcpy(&f, &u, 4); v->f64 = f; } break;
    case OSCAR_GGUF_TYPE_FLOAT64: memcpy(&v->f64, &raw, 8); break;
    default: v->u64 = raw; break;
    }
}

static int is_int_type(uint32_t t)
{
    return t == OSCAR_GGUF_TYPE_UINT8 || t == OSCAR_GGUF_TYPE_INT8 || t == OSCAR_GGUF_TYPE_UINT16 ||
           t == OSCAR_GGUF_TYPE_INT16 || t == OSCAR_GGUF_TYPE_UINT32 || t == OSCAR_GGUF_TYPE_INT32 ||
           t == OSCAR_GGUF_TYPE_UINT64 || t == OSCAR_GGUF_TYPE_INT64;
}
static int is_signed_type(uint32_t t)
{
    return t == OSCAR_GGUF_TYPE_INT8 || t == OSCAR_GGUF_TYPE_INT16 || t == OSCAR_GGUF_TYPE_INT32 ||
           t == OSCAR_GGUF_TYPE_INT64;
}

/* ---- hash index over names (keys, tensor names) ------------------------------------------- */

struct ovk_gguf_index {
    uint64_t mask;                 /* slots - 1 (slots a power of two >= 2 * n) */
    uint64_t *slot;                /* [slots] entry index + 1, 0 = empty */
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void index_free(ovk_gguf_index *ix)
{
    if (!ix) return;
    free(ix->slot);
    free(ix);
}

static ovk_gguf_index *index_new(uint64_t n)
{
    ovk_gguf_index *ix = calloc(1, sizeof *ix);
    if (!ix) return NULL;
    uint64_t slots = 16;
    while (slots / 2 < n && slots < (1ull << 60)) slots *= 2; /* n is bounded by the file size */
    ix->mask = slots - 1;
    ix->slot = calloc((size_t)slots, sizeof *ix->slot);
    if (!ix->slot) { free(ix); return NULL; }
    return ix;
}

/* Looks a name up; names(ctx, i) gives entry i's name. Returns the entry index or UINT64_MAX;
 * with insert_at != UINT64_MAX, inserts that entry when absent. */
static uint64_t index_lookup(ovk_gguf_index *ix, const char *name, const char *(*names)(const void *, uint64_t),
                             const void *ctx, uint64_t insert_at)
{
    for (uint64_t h = hash_name(name) & ix->mask;; h = (h + 1) & ix->mask) {
        if (ix->slot[h] == 0) {
            if (insert_at != UINT64_MAX) ix->slot[h] = insert_at + 1;
            return UINT64_MAX;
        }
        if (strcmp(names(ctx, ix->slot[h] - 1), name) == 0) return ix->slot[h] - 1;
    }
}

static const char *kv_name(const void *g, uint64_t i) { return ((const ovk_gguf *)g)->kv[i].key; }
static const char *tensor_name(const void *g, uint64_t i) { return ((const ovk_gguf *)g)->tensors[i].name; }

/* ---- bounds-checked cursor ------------------------------------------------------------------ */

typedef struct cursor {
    const ovk_gguf *g;
    uint64_t pos;                  /* bytes from the file start */
    char where[320];               /* the item being read, e.g. "metadata 'general.name'" */
} cursor;

static uint64_t left(const cursor *c) { return c->g->size - c->pos; }

#define CUR_FAIL(c, status, ...) \
    cur_fail((c), (status), __FILE__, __LINE__, __VA_ARGS__)

static oscar_status cur_fail(const cursor *c, oscar_status st, const char *file, int line, const char *fmt, ...)
    OSCAR_PRINTF(5, 6);

static oscar_status cur_fail(const cursor *c, oscar_status st, const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ovk_error_set(st, file, line, "%s: %s: %s", c->g->path, c->where, msg);
}

/* Makes sure n more bytes exist; `field` names what is being read. */
static oscar_status need(const cursor *c, uint64_t n, const char *field)
{
    if (n > left(c))
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "%s truncated: needs %llu bytes at offset %llu, file size %llu",
                        field, (unsigned long long)n, (unsigned long long)c->pos, (unsigned long long)c->g->size);
    return OSCAR_OK;
}

static oscar_status rd_u32(cursor *c, uint32_t *v, const char *field)
{
    oscar_status st = need(c, 4, field);
    if (st) return st;
    *v = (uint32_t)le(c->g->base + c->pos, 4);
    c->pos += 4;
    return OSCAR_OK;
}

static oscar_status rd_u64(cursor *c, uint64_t *v, const char *field)
{
    oscar_status st = need(c, 8, field);
    if (st) return st;
    *v = le(c->g->base + c->pos, 8);
    c->pos += 8;
    return OSCAR_OK;
}

/* Reads a string (u64 length + bytes) as a view into the mapping. */
static oscar_status rd_str(cursor *c, ovk_gguf_str *s, const char *field)
{
    uint64_t len;
    oscar_status st = rd_u64(c, &len, field);
    if (st) return st;
    if (len > left(c))
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "%s length %llu exceeds the %llu bytes left in the file (offset %llu)",
                        field, (unsigned long long)len, (unsigned long long)left(c), (unsigned long long)c->pos);
    s->ptr = (const char *)c->g->base + c->pos;
    s->len = len;
    c->pos += len;
    return OSCAR_OK;
}

/* NUL-terminated copy of a string view (NULL when out of memory). */
static char *str_dup(ovk_gguf_str s)
{
    char *p = malloc((size_t)s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, (size_t)s.len);
    p[s.len] = '\0';
    return p;
}

/* Prints a name for messages: at most 200 bytes, non-printable bytes as '?'. */
static void printable(char *dst, size_t cap, const char *src, uint64_t len)
{
    size_t n = len < cap - 1 ? (size_t)len : cap - 1;
    for (size_t i = 0; i < n; i++) dst[i] = (src[i] >= 32 && src[i] < 127) ? src[i] : '?';
    dst[n] = '\0';
}

/* ---- metadata --------------------------------------------------------------------------------- */

static void array_free(ovk_gguf_array *a)
{
    if (a->arrays)
        for (uint64_t i = 0; i < a->count; i++) array_free(&a->arrays[i]);
    free(a->arrays);
    free(a->strs);
    a->arrays = NULL;
    a->strs = NULL;
}

/* Reads an array body: u32 element type, u64 count, the elements. `depth` counts enclosing
 * arrays (1 for a top-level array). */
static oscar_status rd_array(cursor *c, ovk_gguf_array *a, int depth)
{
    oscar_status st;
    uint32_t type;
    uint64_t count;
    if ((st = rd_u32(c, &type, "array element type"))) return st;
    if (type > OSCAR_GGUF_TYPE_FLOAT64)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "unknown array element type %u", type);
    if ((st = rd_u64(c, &count, "array count"))) return st;
    a->type = (ovk_gguf_type)type;
    size_t esize = ovk_gguf_type_size(type);
    if (esize) {
        if (count > left(c) / esize)
            return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "array count %llu of %s exceeds the %llu bytes left in the file",
                            (unsigned long long)count, ovk_gguf_type_name(type), (unsigned long long)left(c));
        a->count = count;
        a->data = c->g->base + c->pos;
        c->pos += count * esize;
        return OSCAR_OK;
    }
    if (type == OSCAR_GGUF_TYPE_STRING) {
        if (count > left(c) / 8) /* each string needs at least its 8-byte length */
            return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "array count %llu of strings exceeds the %llu bytes left in the file",
                            (unsigned long long)count, (unsigned long long)left(c));
        a->strs = calloc(count ? (size_t)count : 1, sizeof *a->strs);
        if (!a->strs) return CUR_FAIL(c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for %llu strings", (unsigned long long)count);
        a->count = count;
        for (uint64_t i = 0; i < count; i++)
            if ((st = rd_str(c, &a->strs[i], "array string"))) return st;
        return OSCAR_OK;
    }
    /* nested arrays */
    if (depth >= OSCAR_GGUF_MAX_ARRAY_DEPTH)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "arrays nested deeper than %d", OSCAR_GGUF_MAX_ARRAY_DEPTH);
    if (count > left(c) / 12) /* each nested array needs at least its type and count */
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "array count %llu of arrays exceeds the %llu bytes left in the file",
                        (unsigned long long)count, (unsigned long long)left(c));
    a->arrays = calloc(count ? (size_t)count : 1, sizeof *a->arrays);
    if (!a->arrays) return CUR_FAIL(c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for %llu arrays", (unsigned long long)count);
    a->count = count; /* set first, so a failure below frees the ones already read */
    for (uint64_t i = 0; i < count; i++)
        if ((st = rd_array(c, &a->arrays[i], depth + 1))) return st;
    return OSCAR_OK;
}

/* Reads a value of a known type. */
static oscar_status rd_value(cursor *c, uint32_t type, ovk_gguf_value *v)
{
    oscar_status st;
    if (type > OSCAR_GGUF_TYPE_FLOAT64)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "unknown value type %u", type);
    v->type = (ovk_gguf_type)type;
    size_t esize = ovk_gguf_type_size(type);
    if (esize) {
        if ((st = need(c, esize, "value"))) return st;
        decode_scalar(v->type, c->g->base + c->pos, v);
        c->pos += esize;
        return OSCAR_OK;
    }
    if (type == OSCAR_GGUF_TYPE_STRING) {
        if ((st = rd_str(c, &v->str, "string value"))) return st;
        v->cstr = str_dup(v->str);
        if (!v->cstr) return CUR_FAIL(c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for a string");
        return OSCAR_OK;
    }
    return rd_array(c, &v->arr, 1);
}

/* ---- the parser -------------------------------------------------------------------------------- */

static int has_nul(ovk_gguf_str s) { return memchr(s.ptr, 0, (size_t)s.len) != NULL; }

/* Reads the name of entry i of a section (a metadata key, a tensor name) into a NUL-terminated
 * copy *out, left NULL on failure. c->where names the entry by number while the name is read,
 * "<section> #i", and by the name from then on, "<entry> '<name>'" (at most 200 bytes shown).
 * field: what messages call the string ("key", "name"); it may hold no NUL byte. */
static oscar_status rd_name(cursor *c, uint64_t i, const char *section, const char *entry, const char *field, const char **out)
{
    oscar_status st;
    ovk_gguf_str s;
    char shown[201];
    snprintf(c->where, sizeof c->where, "%s #%llu", section, (unsigned long long)i);
    if ((st = rd_str(c, &s, field))) return st;
    if (has_nul(s)) return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "%s contains a NUL byte", field);
    printable(shown, sizeof shown, s.ptr, s.len);
    snprintf(c->where, sizeof c->where, "%s '%s'", entry, shown);
    *out = str_dup(s);
    if (!*out) return CUR_FAIL(c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for a %s", field);
    return OSCAR_OK;
}

static uint64_t align_up(uint64_t x, uint64_t a, int *overflow)
{
    uint64_t r = x % a;
    if (r == 0) return x;
    if (x > UINT64_MAX - (a - r)) { *overflow = 1; return 0; }
    return x + (a - r);
}

static oscar_status parse_header(cursor *c, ovk_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    oscar_status st;
    snprintf(c->where, sizeof c->where, "header");
    if (g->size == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: not a GGUF file: it is empty (0 bytes)", g->path);
    if ((st = need(c, 4, "magic"))) return st;
    if (memcmp(g->base, "GGUF", 4) != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: not a GGUF file: it begins with bytes %02x %02x %02x %02x, not "
                           "\"GGUF\"", g->path, g->base[0], g->base[1], g->base[2], g->base[3]);
    c->pos = 4;
    if ((st = rd_u32(c, &g->version, "version"))) return st;
    if (g->version == 1)
        return CUR_FAIL(c, OSCAR_ERROR_UNSUPPORTED_FORMAT, "GGUF version 1 is not supported (only 2 and 3)");
    if (g->version == 0x02000000u || g->version == 0x03000000u)
        return CUR_FAIL(c, OSCAR_ERROR_UNSUPPORTED_FORMAT, "big-endian GGUF is not supported");
    if (g->version != 2 && g->version != 3)
        return CUR_FAIL(c, OSCAR_ERROR_UNSUPPORTED_FORMAT, "unknown GGUF version %u (only 2 and 3)", g->version);
    if ((st = rd_u64(c, n_tensors, "tensor count"))) return st;
    if ((st = rd_u64(c, n_kv, "metadata count"))) return st;
    /* each key/value needs >= 13 bytes (length, type, 1-byte value); each tensor info >= 32 */
    if (*n_kv > left(c) / 13)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "metadata count %llu exceeds what the %llu bytes left can hold",
                        (unsigned long long)*n_kv, (unsigned long long)left(c));
    if (*n_tensors > left(c) / 32)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "tensor count %llu exceeds what the %llu bytes left can hold",
                        (unsigned long long)*n_tensors, (unsigned long long)left(c));
    return OSCAR_OK;
}

static oscar_status parse_metadata(cursor *c, ovk_gguf *g, uint64_t n_kv)
{
    oscar_status st;
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    g->key_index = index_new(n_kv);
    if (!g->kv || !g->key_index) return CUR_FAIL(c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for %llu keys", (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        ovk_gguf_kv *kv = &g->kv[i];
        if ((st = rd_name(c, i, "metadata", "key", "key", &kv->key))) return st;
        g->n_kv = i + 1; /* from here on close() frees this entry */
        uint32_t type;
        if ((st = rd_u32(c, &type, "value type"))) return st;
        if ((st = rd_value(c, type, &kv->value))) return st;
        if (index_lookup(g->key_index, kv->key, kv_name, g, i) != UINT64_MAX)
            return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "duplicate key");
    }
    g->alignment = OSCAR_GGUF_DEFAULT_ALIGNMENT;
    const ovk_gguf_kv *al = ovk_gguf_find_key(g, "general.alignment");
    if (al) {
        snprintf(c->where, sizeof c->where, "key 'general.alignment'");
        if (al->value.type != OSCAR_GGUF_TYPE_UINT32)
            return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "has type %s, expected uint32", ovk_gguf_type_name(al->value.type));
        uint64_t a = al->value.u64;
        if (a == 0 || (a & (a - 1)) != 0)
            return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "alignment %llu is not a power of two", (unsigned long long)a);
        g->alignment = (uint32_t)a;
    }
    return OSCAR_OK;
}

static oscar_status parse_tensor_info(cursor *c, ovk_gguf *g, uint64_t i)
{
    oscar_status st;
    ovk_gguf_tensor *t = &g->tensors[i];
    if ((st = rd_name(c, i, "tensor", "tensor", "name", &t->name))) return st;
    g->n_tensors = i + 1;
    if ((st = rd_u32(c, &t->n_dims, "n_dims"))) return st;
    if (t->n_dims < 1 || t->n_dims > OSCAR_GGUF_MAX_DIMS)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "n_dims %u not in 1..%u", t->n_dims, OSCAR_GGUF_MAX_DIMS);
    uint64_t n_el = 1;
    int overflow = 0;
    for (uint32_t d = 0; d < OSCAR_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims) {
            if ((st = rd_u64(c, &t->ne[d], "shape"))) return st;
            if (t->ne[d] > (uint64_t)INT64_MAX)
                return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "dimension %u = %llu exceeds INT64_MAX", d, (unsigned long long)t->ne[d]);
        }
        if (t->ne[d] != 0 && n_el > UINT64_MAX / t->ne[d]) overflow = 1;
        else n_el *= t->ne[d];
    }
    if (overflow)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "shape [%llu, %llu, %llu, %llu] element count overflows uint64",
                        (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                        (unsigned long long)t->ne[3]);
    t->n_elements = n_el;
    if ((st = rd_u32(c, &t->type, "type"))) return st;
    const ovk_ggml_type_info *ti = ovk_ggml_type_get(t->type);
    if (!ti) return CUR_FAIL(c, OSCAR_ERROR_UNSUPPORTED_FORMAT, "unknown tensor type %u", t->type);
    if (t->ne[0] % ti->block_size != 0)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "row length %llu is not a multiple of %s's block size %u",
                        (unsigned long long)t->ne[0], ti->name, ti->block_size);
    uint64_t blocks = n_el / ti->block_size;
    if (blocks > UINT64_MAX / ti->type_size)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "byte size of %llu %s elements overflows uint64",
                        (unsigned long long)n_el, ti->name);
    t->n_bytes = blocks * ti->type_size;
    if ((st = rd_u64(c, &t->offset, "data offset"))) return st;
    if (t->offset % g->alignment != 0)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "data offset %llu is not a multiple of the alignment %u",
                        (unsigned long long)t->offset, g->alignment);
    if (index_lookup(g->tensor_index, t->name, tensor_name, g, i) != UINT64_MAX)
        return CUR_FAIL(c, OSCAR_ERROR_BAD_FORMAT, "duplicate tensor name");
    return OSCAR_OK;
}

static oscar_status parse(ovk_gguf *g)
{
    oscar_status st;
    cursor c = { g, 0, "" };
    uint64_t n_tensors = 0, n_kv = 0; /* set by the reads below, which return on failure */
    if ((st = parse_header(&c, g, &n_tensors, &n_kv))) return st;
    if ((st = parse_metadata(&c, g, n_kv))) return st;
    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    g->tensor_index = index_new(n_tensors);
    if (!g->tensors || !g->tensor_index)
        return CUR_FAIL(&c, OSCAR_ERROR_OUT_OF_HOST_MEMORY, "no memory for %llu tensors", (unsigned long long)n_tensors);
    for (uint64_t i = 0; i < n_tensors; i++)
        if ((st = parse_tensor_info(&c, g, i))) return st;
    int overflow = 0;
    g->data_offset = align_up(c.pos, g->alignment, &overflow);
    for (uint64_t i = 0; i < n_tensors; i++) {
        ovk_gguf_tensor *t = &g->tensors[i];
        snprintf(c.where, sizeof c.where, "tensor '%.200s'", t->name);
        uint64_t start = g->data_offset + t->offset;
        if (overflow || start < t->offset || start + t->n_bytes < start || start + t->n_bytes > g->size)
            return CUR_FAIL(&c, OSCAR_ERROR_BAD_FORMAT, "data offset %llu + size %llu beyond file size %llu",
                            (unsigned long long)(overflow ? t->offset : start), (unsigned long long)t->n_bytes,
                            (unsigned long long)g->size);
        t->data = g->base + start;
    }
    return OSCAR_OK;
}

/* ---- open / close ------------------------------------------------------------------------------ */

static oscar_status gguf_new(const char *name, ovk_gguf **out)
{
    ovk_gguf *g = calloc(1, sizeof *g);
    if (!g) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "%s: no memory", name);
    size_t n = strlen(name);
    g->path = malloc(n + 1);
    if (!g->path) { free(g); OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "%s: no memory", name); }
    memcpy(g->path, name, n + 1);
    *out = g;
    return OSCAR_OK;
}

oscar_status ovk_gguf_open_memory(const void *data, size_t size, const char *name, ovk_gguf **out)
{
    oscar_status st;
    ovk_gguf *g = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gguf_open_memory: out is NULL");
    *out = NULL;
    if (!data && size) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gguf_open_memory: data is NULL");
    OSCAR_TRY(gguf_new(name ? name : "memory", &g));
    g->base = data ? data : (const uint8_t *)"";
    g->size = size;
    OSCAR_TRY(parse(g));
    *out = g;
    return OSCAR_OK;
fail:
    ovk_gguf_close(g);
    return st;
}

oscar_status ovk_gguf_open(const char *path, ovk_gguf **out)
{
    oscar_status st;
    ovk_gguf *g = NULL;
    int fd = -1;
    if (!out || !path) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_gguf_open: NULL argument");
    *out = NULL;
    OSCAR_TRY(gguf_new(path, &g));
    /* Only a regular file can be mapped. stat() first: opening a FIFO for reading blocks until
     * a writer appears, so a pipe given as a model must be refused before any open. O_NONBLOCK
     * keeps the open from blocking should the path be replaced by a pipe in between, and fstat
     * checks what was actually opened. */
    struct stat sb;
    if (stat(path, &sb) != 0) OSCAR_FAIL(OSCAR_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) OSCAR_FAIL(OSCAR_ERROR_IO, "%s is a folder, not a file", path);
    if (!S_ISREG(sb.st_mode)) OSCAR_FAIL(OSCAR_ERROR_IO, "%s is not a regular file (a pipe or a device cannot be read as GGUF)", path);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) OSCAR_FAIL(OSCAR_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0) OSCAR_FAIL(OSCAR_ERROR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) OSCAR_FAIL(OSCAR_ERROR_IO, "%s is not a regular file", path);
    if ((uint64_t)sb.st_size > SIZE_MAX) OSCAR_FAIL(OSCAR_ERROR_IO, "%s: file too large to map", path);
    g->size = (uint64_t)sb.st_size;
    if (g->size == 0) {
        g->base = (const uint8_t *)"";
    } else {
        void *p = mmap(NULL, (size_t)g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) OSCAR_FAIL(OSCAR_ERROR_IO, "%s: cannot map %llu bytes: %s", path, (unsigned long long)g->size, strerror(errno));
        g->base = p;
        g->mapped = 1;
    }
    close(fd);
    fd = -1;
    OSCAR_TRY(parse(g));
    *out = g;
    return OSCAR_OK;
fail:
    if (fd >= 0) close(fd);
    ovk_gguf_close(g);
    return st;
}

void ovk_gguf_close(ovk_gguf *g)
{
    if (!g) return;
    if (g->kv) {
        for (uint64_t i = 0; i < g->n_kv; i++) {
            free((char *)g->kv[i].key);
            free((char *)g->kv[i].value.cstr);
            if (g->kv[i].value.type == OSCAR_GGUF_TYPE_ARRAY) array_free(&g->kv[i].value.arr);
        }
        free(g->kv);
    }
    if (g->tensors) {
        for (uint64_t i = 0; i < g->n_tensors; i++) free((char *)g->tensors[i].name);
        free(g->tensors);
    }
    index_free(g->key_index);
    index_free(g->tensor_index);
    if (g->mapped) munmap((void *)g->base, (size_t)g->size);
    free(g->path);
    free(g);
}

/* ---- lookups ------------------------------------------------------------------------------------ */

const ovk_gguf_kv *ovk_gguf_find_key(const ovk_gguf *g, const char *key)
{
    if (!g || !key || !g->key_index) return NULL;
    uint64_t i = index_lookup(g->key_index, key, kv_name, g, UINT64_MAX);
    return i == UINT64_MAX ? NULL : &g->kv[i];
}

const ovk_gguf_tensor *ovk_gguf_find_tensor(const ovk_gguf *g, const char *name)
{
    if (!g || !name || !g->tensor_index) return NULL;
    uint64_t i = index_lookup(g->tensor_index, name, tensor_name, g, UINT64_MAX);
    return i == UINT64_MAX ? NULL : &g->tensors[i];
}

/* Finds a key for a getter; a missing key is BAD_FORMAT naming it. */
static oscar_status get_kv(const ovk_gguf *g, const char *key, const ovk_gguf_kv **kv)
{
    if (!g || !key) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "GGUF getter: NULL argument");
    *kv = ovk_gguf_find_key(g, key);
    if (!*kv) OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: missing key '%s'", g->path, key);
    return OSCAR_OK;
}

/* Finds a key whose value has exactly `type`; another type is BAD_FORMAT naming both. */
static oscar_status get_typed(const ovk_gguf *g, const char *key, ovk_gguf_type type, const ovk_gguf_kv **kv)
{
    oscar_status st = get_kv(g, key, kv);
    if (st) return st;
    if ((*kv)->value.type != type)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' has type %s, expected %s", g->path, key,
                           ovk_gguf_type_name((*kv)->value.type), ovk_gguf_type_name(type));
    return OSCAR_OK;
}

/* An integer value as a signed/unsigned pair within [lo, hi] (hi as uint64). */
static oscar_status get_int(const ovk_gguf *g, const char *key, const char *want, int64_t lo, uint64_t hi,
                            int *neg, uint64_t *mag)
{
    const ovk_gguf_kv *kv;
    oscar_status st = get_kv(g, key, &kv);
    if (st) return st;
    uint32_t t = kv->value.type;
    if (!is_int_type(t))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' has type %s, expected %s", g->path, key,
                           ovk_gguf_type_name(t), want);
    if (is_signed_type(t) && kv->value.i64 < 0) {
        if (kv->value.i64 < lo)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' value %lld out of range for %s", g->path, key,
                               (long long)kv->value.i64, want);
        *neg = 1;
        *mag = (uint64_t)kv->value.i64; /* two's complement bits; the caller casts back */
        return OSCAR_OK;
    }
    uint64_t v = kv->value.u64; /* for signed types the non-negative i64 has the same bits */
    if (v > hi)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' value %llu out of range for %s", g->path, key,
                           (unsigned long long)v, want);
    *neg = 0;
    *mag = v;
    return OSCAR_OK;
}

oscar_status ovk_gguf_get_u32(const ovk_gguf *g, const char *key, uint32_t *out)
{
    int neg = 0;
    uint64_t v = 0;
    oscar_status st = get_int(g, key, "uint32", 0, UINT32_MAX, &neg, &v);
    if (st == OSCAR_OK) *out = (uint32_t)v;
    return st;
}

oscar_status ovk_gguf_get_i32(const ovk_gguf *g, const char *key, int32_t *out)
{
    int neg = 0;
    uint64_t v = 0;
    oscar_status st = get_int(g, key, "int32", INT32_MIN, INT32_MAX, &neg, &v);
    if (st == OSCAR_OK) *out = neg ? (int32_t)(int64_t)v : (int32_t)v;
    return st;
}

oscar_status ovk_gguf_get_u64(const ovk_gguf *g, const char *key, uint64_t *out)
{
    int neg = 0;
    uint64_t v = 0;
    oscar_status st = get_int(g, key, "uint64", 0, UINT64_MAX, &neg, &v);
    if (st == OSCAR_OK) *out = v;
    return st;
}

oscar_status ovk_gguf_get_f32(const ovk_gguf *g, const char *key, float *out)
{
    const ovk_gguf_kv *kv;
    oscar_status st = get_kv(g, key, &kv);
    if (st) return st;
    uint32_t t = kv->value.type;
    if (t != OSCAR_GGUF_TYPE_FLOAT32 && t != OSCAR_GGUF_TYPE_FLOAT64)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' has type %s, expected float32", g->path, key,
                           ovk_gguf_type_name(t));
    *out = (float)kv->value.f64;
    return OSCAR_OK;
}

oscar_status ovk_gguf_get_bool(const ovk_gguf *g, const char *key, int *out)
{
    const ovk_gguf_kv *kv;
    oscar_status st = get_typed(g, key, OSCAR_GGUF_TYPE_BOOL, &kv);
    if (st) return st;
    *out = kv->value.u64 != 0;
    return OSCAR_OK;
}

oscar_status ovk_gguf_get_str(const ovk_gguf *g, const char *key, const char **out)
{
    const ovk_gguf_kv *kv;
    oscar_status st = get_typed(g, key, OSCAR_GGUF_TYPE_STRING, &kv);
    if (st) return st;
    *out = kv->value.cstr;
    return OSCAR_OK;
}

oscar_status ovk_gguf_get_array(const ovk_gguf *g, const char *key, int elem_type, const ovk_gguf_array **out)
{
    const ovk_gguf_kv *kv;
    oscar_status st = get_typed(g, key, OSCAR_GGUF_TYPE_ARRAY, &kv);
    if (st) return st;
    if (elem_type >= 0 && kv->value.arr.type != (ovk_gguf_type)elem_type)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: key '%s' is an array of %s, expected an array of %s", g->path,
                           key, ovk_gguf_type_name(kv->value.arr.type), ovk_gguf_type_name((uint32_t)elem_type));
    *out = &kv->value.arr;
    return OSCAR_OK;
}

int64_t ovk_gguf_array_int(const ovk_gguf_array *a, uint64_t i)
{
    size_t n = ovk_gguf_type_size(a->type);
    if (!n || i >= a->count) return 0;
    ovk_gguf_value v;
    decode_scalar(a->type, a->data + i * n, &v);
    switch (a->type) {
    case OSCAR_GGUF_TYPE_INT8: case OSCAR_GGUF_TYPE_INT16: case OSCAR_GGUF_TYPE_INT32: case OSCAR_GGUF_TYPE_INT64:
        return v.i64;
    case OSCAR_GGUF_TYPE_FLOAT32: case OSCAR_GGUF_TYPE_FLOAT64:
        if (!(v.f64 > -9.2e18 && v.f64 < 9.2e18)) return v.f64 > 0 ? INT64_MAX : v.f64 < 0 ? INT64_MIN : 0;
        return (int64_t)v.f64;
    default:
        return v.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.u64;
    }
}

double ovk_gguf_array_number(const ovk_gguf_array *a, uint64_t i)
{
    size_t n = ovk_gguf_type_size(a->type);
    if (!n || i >= a->count) return 0.0;
    ovk_gguf_value v;
    decode_scalar(a->type, a->data + i * n, &v);
    if (a->type == OSCAR_GGUF_TYPE_FLOAT32 || a->type == OSCAR_GGUF_TYPE_FLOAT64) return v.f64;
    if (is_signed_type(a->type)) return (double)v.i64;
    return (double)v.u64;
}
