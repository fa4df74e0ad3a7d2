/* OSCAR-VK public API: a Vulkan compute runtime for LLM attention over a 2-bit KV cache.
 *
 * Conventions (as in sqlite and zstd):
 *  - Opaque handles, created and destroyed in pairs; destroying NULL is a no-op.
 *  - Every call that can fail returns an oscar_status (OSCAR_OK = 0). The values are stable
 *    and grouped in bands of 100; oscar_status_string() names a status, and
 *    oscar_last_error() gives the detail of the last failure on the calling thread
 *    (which field of which file, which Vulkan call at which line).
 *  - oscar_*_params_default() fills every params struct with its defaults.
 *  - No Vulkan type crosses this API and nothing in the library exits or aborts the process.
 *
 * The KV-cache level is in oscar/kv.h, the model level in oscar/model.h; both are included here.
 */
#ifndef OSCAR_OSCAR_H
#define OSCAR_OSCAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(OSCAR_BUILDING_LIBRARY) || defined(__GNUC__)
#define OSCAR_API __attribute__((visibility("default")))
#else
#define OSCAR_API
#endif

#define OSCAR_VERSION_MAJOR 0
#define OSCAR_VERSION_MINOR 1
#define OSCAR_VERSION_PATCH 0
#define OSCAR_VERSION_NUMBER (OSCAR_VERSION_MAJOR * 10000 + OSCAR_VERSION_MINOR * 100 + OSCAR_VERSION_PATCH)

/* Returns OSCAR_VERSION_NUMBER of the library actually linked, and its text form. */
OSCAR_API unsigned oscar_version_number(void);
OSCAR_API const char *oscar_version_string(void);

/* ---- status codes ------------------------------------------------------------------------ */
typedef enum oscar_status {
    OSCAR_OK = 0,
    /* 100s: the caller's usage */
    OSCAR_ERROR_INVALID_ARGUMENT = 100, /* a NULL handle, a bad flag, a shape out of range */
    OSCAR_ERROR_INVALID_STATE = 101,    /* e.g. appending to a freed sequence */
    OSCAR_ERROR_UNSUPPORTED = 102,      /* a valid request this build does not implement */
    /* 200s: no Vulkan loader, no device, a missing feature */
    OSCAR_ERROR_NO_LOADER = 200,        /* libvulkan.so.1 could not be loaded */
    OSCAR_ERROR_NO_DEVICE = 201,        /* the loader found no Vulkan device */
    OSCAR_ERROR_DEVICE_NOT_FOUND = 202, /* OSCAR_DEVICE / params named no existing device */
    OSCAR_ERROR_MISSING_FEATURE = 203,  /* the device lacks a feature this needs */
    /* 300s: Vulkan and shaders */
    OSCAR_ERROR_VULKAN = 300,           /* a Vulkan call failed; oscar_last_error() names it */
    OSCAR_ERROR_SHADER = 301,           /* a shader is missing or its pipeline failed */
    OSCAR_ERROR_DEVICE_LOST = 302,
    /* 400s: files */
    OSCAR_ERROR_IO = 400,               /* cannot open, read or write a file */
    OSCAR_ERROR_BAD_FORMAT = 401,       /* truncated, corrupted or malformed file */
    OSCAR_ERROR_UNSUPPORTED_FORMAT = 402, /* well-formed, but a version/type we do not read */
    OSCAR_ERROR_MISMATCH = 403,         /* e.g. a rotation made for another model */
    /* 500s: memory and capacity */
    OSCAR_ERROR_OUT_OF_HOST_MEMORY = 500,
    OSCAR_ERROR_OUT_OF_DEVICE_MEMORY = 501,
    OSCAR_ERROR_OUT_OF_PAGES = 502,     /* the KV cache has no free page left */
    OSCAR_ERROR_CONTEXT_FULL = 503,     /* more tokens than a sequence or model allows */
} oscar_status;

/* Returns a short constant name for a status ("OSCAR_ERROR_OUT_OF_PAGES"); never NULL. */
OSCAR_API const char *oscar_status_string(oscar_status status);

/* Returns the detailed message of the last failure on this thread ("" when none). The text
 * stays valid until the next failing call on the same thread. */
OSCAR_API const char *oscar_last_error(void);

/* ---- devices ----------------------------------------------------------------------------- */
#define OSCAR_MAX_HEAPS 16

typedef enum oscar_device_type {
    OSCAR_DEVICE_OTHER = 0,
    OSCAR_DEVICE_INTEGRATED_GPU = 1,
    OSCAR_DEVICE_DISCRETE_GPU = 2,
    OSCAR_DEVICE_VIRTUAL_GPU = 3,
    OSCAR_DEVICE_CPU = 4,
} oscar_device_type;

/* Element types and scopes of the cooperative-matrix shapes a device offers. */
typedef enum oscar_scalar_type {
    OSCAR_SCALAR_OTHER = 0, /* a type this version does not name */
    OSCAR_SCALAR_F16, OSCAR_SCALAR_F32, OSCAR_SCALAR_F64, OSCAR_SCALAR_BF16,
    OSCAR_SCALAR_E4M3, OSCAR_SCALAR_E5M2, /* 8-bit floats */
    OSCAR_SCALAR_S8, OSCAR_SCALAR_S16, OSCAR_SCALAR_S32, OSCAR_SCALAR_S64,
    OSCAR_SCALAR_U8, OSCAR_SCALAR_U16, OSCAR_SCALAR_U32, OSCAR_SCALAR_U64,
} oscar_scalar_type;

typedef enum oscar_scope {
    OSCAR_SCOPE_OTHER = 0,
    OSCAR_SCOPE_SUBGROUP, OSCAR_SCOPE_WORKGROUP, OSCAR_SCOPE_DEVICE, OSCAR_SCOPE_QUEUE_FAMILY,
} oscar_scope;

/* One cooperative-matrix multiply the device runs: Result (m x n) = A (m x k) * B (k x n) + C (m x n). */
typedef struct oscar_coopmat_shape {
    uint32_t m, n, k;
    oscar_scalar_type a, b, c, result;
    oscar_scope scope;             /* the invocations that share one matrix */
    int saturating;                /* integer accumulation saturates */
} oscar_coopmat_shape;

#define OSCAR_MAX_COOPMAT_SHAPES 48

/* What the runtime found and enabled on a device. Every optional feature has a fallback:
 * the kernels store fp16 data as packed uint words and read them with unpackHalf2x16, so
 * none of the *_storage or float16 features is required; they are reported and used when
 * present. */
typedef struct oscar_device_info {
    uint32_t index;                /* position in the loader's enumeration */
    char name[256];
    oscar_device_type type;
    uint32_t vendor_id, device_id;
    char vendor_name[32];          /* "NVIDIA", "AMD", "Intel", "Mesa" ... */
    char driver_name[256], driver_info[256];
    uint32_t api_version;          /* packed Vulkan version: major<<22 | minor<<12 | patch */
    uint32_t driver_version;       /* vendor-specific packing; driver_info is the readable one */
    uint32_t subgroup_size;        /* the default subgroup size */
    uint32_t min_subgroup_size, max_subgroup_size; /* with subgroup size control; else = default */
    uint32_t max_shared_memory;    /* bytes of shared memory per workgroup */
    uint32_t max_workgroup_invocations;
    uint64_t max_storage_buffer_range; /* bytes one storage-buffer binding may cover */
    /* features: 1 when present and enabled */
    int float16_arithmetic, int8_arithmetic, int16_arithmetic, int64_arithmetic;
    int storage_16bit, storage_8bit;
    int subgroup_basic, subgroup_arithmetic, subgroup_shuffle, subgroup_ballot;
    int subgroup_size_control, compute_full_subgroups;
    /* Integer dot products (VK_KHR_shader_integer_dot_product) and whether the driver says its
     * packed 4 x 8-bit forms (signed x signed, signed x unsigned) run faster than the same
     * arithmetic spelled out; cooperative matrices (VK_KHR_cooperative_matrix in compute
     * shaders, with the shapes the driver lists). oscar_list_devices reports what the device
     * has; oscar_context_device_info what the context enabled: 0 (and no shapes) where an
     * OSCAR_DISABLE_* variable turned it off, this build compiled no kernel for it
     * (oscar_built_kernels), or it lacks a feature it needs (fp16 arithmetic and the Vulkan
     * memory model for cooperative matrices). OSCAR_DISABLE_F16=1 likewise clears
     * float16_arithmetic in the context. */
    int integer_dot_product;
    int integer_dot_4x8_signed_accelerated, integer_dot_4x8_mixed_accelerated;
    int cooperative_matrix;
    uint32_t coopmat_shape_count;  /* entries of coopmat_shapes (the driver's first 48) */
    oscar_coopmat_shape coopmat_shapes[OSCAR_MAX_COOPMAT_SHAPES];
    int timestamps;                /* timestamp queries on the compute queue */
    double timestamp_period_ns;    /* nanoseconds per timestamp tick */
    int memory_budget;             /* VK_EXT_memory_budget present */
    uint32_t heap_count;
    struct {
        uint64_t size;             /* bytes */
        uint64_t budget;           /* bytes this process may use now (= size without budget ext.) */
        uint64_t usage;            /* bytes this process uses now (0 without budget ext.) */
        int device_local;
    } heaps[OSCAR_MAX_HEAPS];
} oscar_device_info;

/* Kinds of kernel variant a build can lack, depending on the shader compilers it found
 * (cmake/shaders.cmake): integer-dot kernels need a glslc with GL_EXT_spirv_intrinsics,
 * cooperative-matrix kernels glslang 13 (scripts/setup.sh installs both). */
#define OSCAR_BUILT_INTEGER_DOT 1u
#define OSCAR_BUILT_COOPMAT 2u
/* Returns the OSCAR_BUILT_* bits of the kernels this library holds; the scalar kernels are
 * always there. */
OSCAR_API uint32_t oscar_built_kernels(void);

/* Fills up to *count entries of `out` with the devices the Vulkan loader sees and sets *count
 * to the number that exist (call with out = NULL to count). Needs no context. */
OSCAR_API oscar_status oscar_list_devices(oscar_device_info *out, uint32_t *count);

/* ---- context ----------------------------------------------------------------------------- */
typedef struct oscar_context oscar_context;

typedef struct oscar_context_params {
    /* Device choice: NULL picks the best (discrete > integrated > virtual > CPU). Otherwise an
     * index ("1") or a case-insensitive substring of the device name ("llvmpipe", "H200").
     * The environment variable OSCAR_DEVICE overrides this. */
    const char *device;
    /* 1: enable VK_LAYER_KHRONOS_validation and count its warnings and errors (also turned on
     * by OSCAR_VALIDATION=1 in the environment). */
    int validation;
    /* 1: print validation messages to stderr as they arrive (default 1). */
    int print_validation_messages;
    /* Path of a pipeline-cache file to load at creation and save at destruction, or NULL. */
    const char *pipeline_cache_path;
} oscar_context_params;

OSCAR_API oscar_context_params oscar_context_params_default(void);

/* Creates a context: instance, device, compute queue, memory, pipelines and descriptor pools.
 * On failure *out is NULL and the status says why (NO_LOADER, NO_DEVICE, DEVICE_NOT_FOUND,
 * MISSING_FEATURE, VULKAN). */
OSCAR_API oscar_status oscar_context_create(const oscar_context_params *params, oscar_context **out);
/* Waits for the device to be idle and releases everything the context owns. NULL is a no-op. */
OSCAR_API void oscar_context_destroy(oscar_context *ctx);

/* The device the context runs on, with memory budgets read now. */
OSCAR_API oscar_status oscar_context_device_info(oscar_context *ctx, oscar_device_info *out);

/* Number of validation-layer warnings and errors seen since the context was created. */
OSCAR_API uint64_t oscar_context_validation_messages(const oscar_context *ctx);

#ifdef __cplusplus
}
#endif
#endif

/* The KV-cache level and the model level. When oscar/kv.h is the first header included, it
 * includes this file before its own declarations; model.h (which needs them) is then left to
 * the includer (include oscar/oscar.h or oscar/model.h). */
#ifndef OSCAR_KV_H
#include "oscar/kv.h"
#include "oscar/model.h"
#endif
