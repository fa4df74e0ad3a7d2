/* GGUF files: a validating reader over a read-only mapping, and a writer (gguf_write.c).
 *
 * File layout (GGUF v2/v3, all integers little-endian):
 *   "GGUF"  u32 version  u64 n_tensors  u64 n_kv
 *   n_kv x      { string key; u32 value_type; value }
 *   n_tensors x { string name; u32 n_dims; u64 ne[n_dims]; u32 ggml_type; u64 offset }
 *   padding to `alignment` (key general.alignment, u32, default 32)
 *   data section: tensor i at data_offset + offset_i (offset_i a multiple of alignment)
 * where string = { u64 len; len bytes, no NUL } and an array value is
 *   { u32 elem_type; u64 count; count elements } (elements may be strings or arrays).
 *
 * The reader checks every length, count, shape and offset against the file with overflow-
 * checked arithmetic before using it: a truncated or corrupted file is OSCAR_ERROR_BAD_FORMAT
 * (a version or tensor type it does not know is OSCAR_ERROR_UNSUPPORTED_FORMAT) with a
 * one-line message naming the file and the field, never an out-of-bounds read. After a
 * successful open every pointer in the structures below stays valid until ovk_gguf_close().
 */
#ifndef OSCAR_GGUF_H
#define OSCAR_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "ggml_types.h"
#include "oscar/oscar.h"

/* Metadata value types (the GGUF spec's gguf_metadata_value_type). */
typedef enum ovk_gguf_type {
    OSCAR_GGUF_TYPE_UINT8 = 0,
    OSCAR_GGUF_TYPE_INT8 = 1,
    OSCAR_GGUF_TYPE_UINT16 = 2,
    OSCAR_GGUF_TYPE_INT16 = 3,
    OSCAR_GGUF_TYPE_UINT32 = 4,
    OSCAR_GGUF_TYPE_INT32 = 5,
    OSCAR_GGUF_TYPE_FLOAT32 = 6,
    OSCAR_GGUF_TYPE_BOOL = 7,
    OSCAR_GGUF_TYPE_STRING = 8,
    OSCAR_GGUF_TYPE_ARRAY = 9,
    OSCAR_GGUF_TYPE_UINT64 = 10,
    OSCAR_GGUF_TYPE_INT64 = 11,
    OSCAR_GGUF_TYPE_FLOAT64 = 12,
} ovk_gguf_type;

#define OSCAR_GGUF_DEFAULT_ALIGNMENT 32u
#define OSCAR_GGUF_MAX_DIMS 4u
/* Deepest nesting of arrays the reader accepts (an array of arrays is depth 2). */
#define OSCAR_GGUF_MAX_ARRAY_DEPTH 8

/* Returns "uint32", "string", ... or "unknown". */
const char *ovk_gguf_type_name(uint32_t type);
/* Bytes of one element of a fixed-size type (0 for STRING, ARRAY and unknown types). */
size_t ovk_gguf_type_size(uint32_t type);

/* A string inside the file: `len` bytes at `ptr` (in the mapping), NOT NUL-terminated. */
typedef struct ovk_gguf_str {
    const char *ptr;
    uint64_t len;                  /* bytes */
} ovk_gguf_str;

typedef struct ovk_gguf_array {
    ovk_gguf_type type;          /* element type */
    uint64_t count;                /* elements */
    const uint8_t *data;           /* fixed-size types: [count] elements, little-endian, unaligned
                                    * (read them with the ovk_gguf_array_* accessors) */
    ovk_gguf_str *strs;          /* type STRING: [count] */
    struct ovk_gguf_array *arrays; /* type ARRAY: [count] nested arrays */
} ovk_gguf_array;

typedef struct ovk_gguf_value {
    ovk_gguf_type type;
    union {
        uint64_t u64;              /* UINT8, UINT16, UINT32, UINT64; BOOL as 0/1 */
        int64_t i64;               /* INT8, INT16, INT32, INT64 */
        double f64;                /* FLOAT32 (exact), FLOAT64 */
    };
    ovk_gguf_str str;            /* STRING: bytes in the mapping */
    const char *cstr;              /* STRING: NUL-terminated copy (stops at an embedded NUL) */
    ovk_gguf_array arr;          /* ARRAY */
} ovk_gguf_value;

typedef struct ovk_gguf_kv {
    const char *key;               /* NUL-terminated copy */
    ovk_gguf_value value;
} ovk_gguf_kv;

typedef struct ovk_gguf_tensor {
    const char *name;              /* NUL-terminated copy */
    uint32_t n_dims;               /* 1..4 */
    uint64_t ne[OSCAR_GGUF_MAX_DIMS]; /* elements per dimension, ne[0] contiguous (the row);
                                    * dimensions >= n_dims are 1. Each <= INT64_MAX. */
    uint32_t type;                 /* ovk_ggml_type */
    uint64_t offset;               /* bytes from the data section start, multiple of alignment */
    uint64_t n_elements;           /* product of ne */
    uint64_t n_bytes;              /* n_elements / block_size * type_size */
    const void *data;              /* n_bytes at base + data_offset + offset (in the mapping) */
} ovk_gguf_tensor;

typedef struct ovk_gguf_index ovk_gguf_index; /* private hash index */

typedef struct ovk_gguf {
    char *path;                    /* as opened; prefixes every error message */
    uint32_t version;              /* 2 or 3 */
    uint32_t alignment;            /* bytes: general.alignment or 32, a power of two */
    uint64_t n_kv;
    ovk_gguf_kv *kv;             /* [n_kv] in file order */
    uint64_t n_tensors;
    ovk_gguf_tensor *tensors;    /* [n_tensors] in file order */
    uint64_t data_offset;          /* bytes from the file start to the data section */
    const uint8_t *base;           /* the whole file: [size] bytes, read-only */
    uint64_t size;                 /* bytes */
    int mapped;                    /* 1: base is our mmap (unmapped by close) */
    ovk_gguf_index *key_index, *tensor_index;
} ovk_gguf;

/* Maps `path` read-only and parses it. On success *out owns the mapping; on failure *out is
 * NULL and the status says why (IO, BAD_FORMAT, UNSUPPORTED_FORMAT, OUT_OF_HOST_MEMORY). */
oscar_status ovk_gguf_open(const char *path, ovk_gguf **out);

/* Parses a GGUF image already in memory. `data` is borrowed: it must outlive *out. `name`
 * labels error messages (e.g. "memory"). */
oscar_status ovk_gguf_open_memory(const void *data, size_t size, const char *name, ovk_gguf **out);

/* Unmaps and frees everything. NULL is a no-op. */
void ovk_gguf_close(ovk_gguf *g);

/* Lookups: NULL when absent. */
const ovk_gguf_kv *ovk_gguf_find_key(const ovk_gguf *g, const char *key);
const ovk_gguf_tensor *ovk_gguf_find_tensor(const ovk_gguf *g, const char *name);

/* Typed getters. A missing key or a value of the wrong type (or out of the target's range) is
 * OSCAR_ERROR_BAD_FORMAT with a message naming the file, the key and both types.
 *   u32/i32/u64: any integer type whose value fits.   f32: FLOAT32 or FLOAT64.
 *   bool: BOOL.   str: STRING (*out is the NUL-terminated copy, owned by g).
 *   array: ARRAY; elem_type >= 0 also requires that element type (-1: any). */
oscar_status ovk_gguf_get_u32(const ovk_gguf *g, const char *key, uint32_t *out);
oscar_status ovk_gguf_get_i32(const ovk_gguf *g, const char *key, int32_t *out);
oscar_status ovk_gguf_get_u64(const ovk_gguf *g, const char *key, uint64_t *out);
oscar_status ovk_gguf_get_f32(const ovk_gguf *g, const char *key, float *out);
oscar_status ovk_gguf_get_bool(const ovk_gguf *g, const char *key, int *out);
oscar_status ovk_gguf_get_str(const ovk_gguf *g, const char *key, const char **out);
oscar_status ovk_gguf_get_array(const ovk_gguf *g, const char *key, int elem_type, const ovk_gguf_array **out);

/* Element i (< count) of a numeric or BOOL array, converted: as int64 (floats truncate,
 * UINT64 above INT64_MAX saturates) or as double. 0 for a STRING/ARRAY array. */
int64_t ovk_gguf_array_int(const ovk_gguf_array *a, uint64_t i);
double ovk_gguf_array_number(const ovk_gguf_array *a, uint64_t i);

/* ---- writer (gguf_write.c) ----------------------------------------------------------------- */

/* Collects metadata and tensors and writes a GGUF v3 file: keys in insertion order, tensors in
 * insertion order, each tensor's data padded to the alignment. Setting a key twice replaces
 * the value in place. */
typedef struct ovk_gguf_writer ovk_gguf_writer;

oscar_status ovk_gguf_writer_create(ovk_gguf_writer **out);
void ovk_gguf_writer_destroy(ovk_gguf_writer *w);

/* Sets the data alignment (a power of two, default 32) and records it as general.alignment.
 * Setting or copying the general.alignment key directly has the same effect (it must then be
 * a uint32 power of two). Call before writing. */
oscar_status ovk_gguf_writer_set_alignment(ovk_gguf_writer *w, uint32_t alignment);

oscar_status ovk_gguf_writer_set_u8(ovk_gguf_writer *w, const char *key, uint8_t v);
oscar_status ovk_gguf_writer_set_i8(ovk_gguf_writer *w, const char *key, int8_t v);
oscar_status ovk_gguf_writer_set_u16(ovk_gguf_writer *w, const char *key, uint16_t v);
oscar_status ovk_gguf_writer_set_i16(ovk_gguf_writer *w, const char *key, int16_t v);
oscar_status ovk_gguf_writer_set_u32(ovk_gguf_writer *w, const char *key, uint32_t v);
oscar_status ovk_gguf_writer_set_i32(ovk_gguf_writer *w, const char *key, int32_t v);
oscar_status ovk_gguf_writer_set_u64(ovk_gguf_writer *w, const char *key, uint64_t v);
oscar_status ovk_gguf_writer_set_i64(ovk_gguf_writer *w, const char *key, int64_t v);
oscar_status ovk_gguf_writer_set_f32(ovk_gguf_writer *w, const char *key, float v);
oscar_status ovk_gguf_writer_set_f64(ovk_gguf_writer *w, const char *key, double v);
oscar_status ovk_gguf_writer_set_bool(ovk_gguf_writer *w, const char *key, int v);
oscar_status ovk_gguf_writer_set_str(ovk_gguf_writer *w, const char *key, const char *v);

/* An array of a fixed-size type from a host array (uint8_t[], ..., float[], double[]; BOOL
 * from uint8_t[] of 0/1), or of STRING from `const char *const[count]`. */
oscar_status ovk_gguf_writer_set_array(ovk_gguf_writer *w, const char *key, ovk_gguf_type elem_type,
                                         const void *elems, uint64_t count);
/* An array of n string arrays: list i has counts[i] strings lists[i][0..counts[i]). */
oscar_status ovk_gguf_writer_set_str_array_array(ovk_gguf_writer *w, const char *key,
                                                   const char *const *const *lists, const uint64_t *counts, uint64_t n);
/* Copies a key and value read by ovk_gguf_open (any type, nested arrays included). */
oscar_status ovk_gguf_writer_copy_kv(ovk_gguf_writer *w, const ovk_gguf_kv *kv);

/* Declares a tensor (ne[0] a multiple of the type's block size, 1 <= n_dims <= 4). `data`
 * holds its ovk_ggml_row_size(type, ne[0]) * ne[1] * ... bytes and is copied; NULL
 * declares it for streaming (ovk_gguf_writer_stream_*). The _ref form borrows `data`,
 * which must stay valid until the file is written. */
oscar_status ovk_gguf_writer_add_tensor(ovk_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                          const uint64_t *ne, const void *data);
oscar_status ovk_gguf_writer_add_tensor_ref(ovk_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                              const uint64_t *ne, const void *data);

/* Writes everything (every tensor must have data) to `path`, through a new temporary file
 * beside it ("<path>.<pid>.<n>.tmp", created exclusively: no existing file is touched) synced
 * and renamed into place on success, so a failed write leaves no partial file and the old file
 * stays whole until the new one replaces it. An existing `path` that is not a regular file is
 * refused (IO). */
oscar_status ovk_gguf_writer_write_file(ovk_gguf_writer *w, const char *path);
/* Writes everything into a malloc'ed buffer (*out, *size; the caller frees it). */
oscar_status ovk_gguf_writer_write_memory(ovk_gguf_writer *w, void **out, size_t *size);

/* Streaming: writes header, metadata and tensor infos to the temporary file; then the caller
 * passes every tensor's data in declaration order (n_bytes exactly); stream_end pads, syncs,
 * closes and renames into place. A writer that fails mid-stream removes the partial file. */
oscar_status ovk_gguf_writer_stream_begin(ovk_gguf_writer *w, const char *path);
oscar_status ovk_gguf_writer_stream_tensor(ovk_gguf_writer *w, const void *data, uint64_t n_bytes);
oscar_status ovk_gguf_writer_stream_end(ovk_gguf_writer *w);

#endif
