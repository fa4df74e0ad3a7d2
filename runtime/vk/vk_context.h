/* Internal view of the Vulkan context: instance, device, compute queue, memory, pipelines,
 * descriptor pools, and the helpers every GPU operation in the runtime is built from.
 * Device-level calls go through ctx->vk (a per-device volk table), so several contexts on
 * different devices can live in one process. */
#ifndef OSCAR_VK_CONTEXT_H
#define OSCAR_VK_CONTEXT_H

#include <stdio.h>
#include <volk.h>

#include "error.h"
#include "vk_env.h"
#include "oscar/oscar.h"
#include "vk_coopmat_khr.h"
#include "vk_variant.h"

/* Records a failing VkResult with the call's text and file:line, sets `st`, jumps to fail. */
#define OSCAR_VK(call)                                                                     \
    do {                                                                                   \
        VkResult vk_result_ = (call);                                                      \
        if (vk_result_ != VK_SUCCESS) {                                                    \
            st = ovk_error_set(ovk_status_from_vk(vk_result_), __FILE__, __LINE__,     \
                                 "%s failed: %s", #call, ovk_vk_result_string(vk_result_)); \
            goto fail;                                                                     \
        }                                                                                  \
    } while (0)

oscar_status ovk_status_from_vk(VkResult r);
const char *ovk_vk_result_string(VkResult r);

/* ---- buffers ------------------------------------------------------------------------------ */
typedef enum ovk_buffer_kind {
    OSCAR_BUFFER_DEVICE,   /* device-local storage buffer (transfer source and destination too) */
    OSCAR_BUFFER_STAGING,  /* host-visible, coherent: uploads */
    OSCAR_BUFFER_READBACK, /* host-visible, cached when possible: downloads */
} ovk_buffer_kind;

#define OVK_BUFFER_VIEWS 4 /* texel views a buffer keeps */

/* Bytes rounded up to whole 16-byte texels: every VkBuffer is made that long, so a texel view of
 * a buffer's rest covers its last bytes (ovk_buffer.size stays the size asked for). */
static inline VkDeviceSize ovk_texel_bytes(VkDeviceSize bytes) { return (bytes + 15) / 16 * 16; }

typedef struct ovk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;     /* bytes */
    void *mapped;          /* host pointer when the memory is host-visible, else NULL */
    int host_coherent;     /* mapped memory needs no flush/invalidate */
    uint32_t memory_type;  /* index into ctx->mem_props.memoryTypes of its memory */
    /* R32G32B32A32_UINT views of byte ranges [view_offset, + view_range), made on the first
     * dispatch that binds the range as a texel buffer (ovk_buffer_texel_view) and kept until
     * the buffer is destroyed: a dispatch's views must outlive its command buffer */
    VkBufferView views[OVK_BUFFER_VIEWS];
    VkDeviceSize view_offset[OVK_BUFFER_VIEWS], view_range[OVK_BUFFER_VIEWS];
} ovk_buffer;

/* ---- pipelines ---------------------------------------------------------------------------- */
#define OSCAR_MAX_BINDINGS 14 /* the decode attention kernels: 12 and their int8 output */
#define OSCAR_MAX_SPEC 20
#define OSCAR_MAX_PUSH 128

/* What a compute pipeline is made from. Every shader binds storage buffers at set 0,
 * bindings 0..n_buffers-1, takes push constants of push_size bytes, and reads its per-model
 * shape from specialization constants with ids 0..n_spec-1 (id 0 is always the workgroup
 * size in x: `layout(local_size_x_id = 0) in;`). */
typedef struct ovk_pipeline_desc {
    const char *shader;                 /* shaders/<shader>.comp */
    uint32_t n_buffers;
    uint32_t push_size;                 /* bytes, <= OSCAR_MAX_PUSH */
    uint32_t n_spec;
    uint32_t spec[OSCAR_MAX_SPEC];      /* values for constant_id 0..n_spec-1 */
    uint32_t required_subgroup_size;    /* 0: the driver's choice; else needs subgroup size control */
    uint32_t texel_bindings;            /* bit i: binding i is a uniform texel buffer of 16-byte
                                         * R32G32B32A32_UINT texels (needs ctx->texel_buffers), else
                                         * a storage buffer */
} ovk_pipeline_desc;

typedef struct ovk_pipeline {
    ovk_pipeline_desc desc;           /* the key; desc.shader points at `name` */
    char name[64];
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
    struct ovk_pipeline *next;        /* the context's list */
} ovk_pipeline;

/* ---- command streams ---------------------------------------------------------------------- */
/* A stream records into up to OSCAR_CMD_PARTS command buffers between begin and submit:
 * ovk_cmd_flush submits the part recorded so far (the GPU starts on it while the host records
 * the rest) and opens the next; each part has its fence, and waiting waits for all of them. */
#define OSCAR_CMD_PARTS 16
typedef struct ovk_cmd {
    VkCommandPool pool;
    VkCommandBuffer cb;                 /* the part being recorded: parts[part] */
    VkCommandBuffer parts[OSCAR_CMD_PARTS];
    uint32_t part;                      /* parts[0 .. part) were flushed since begin */
    VkFence fences[OSCAR_CMD_PARTS];    /* fences[i] signals when parts[i] is done */
    VkDescriptorPool *desc_pools;       /* [n_desc_pools] grown on demand, reset at begin */
    uint32_t n_desc_pools, cur_desc_pool;
    VkQueryPool queries;                /* timestamps, VK_NULL_HANDLE without support */
    uint32_t n_queries, max_queries;
    const char **prof_names;            /* [max_queries] with a profile: the shader each timestamp ends, or NULL */
    uint64_t *prof_ticks;               /* [max_queries] with a profile: the timestamps read back */
    int recording;                      /* between begin and submit */
    int pending;                        /* submitted, fences not yet waited on */
} ovk_cmd;

/* A buffer range bound to one storage-buffer binding. range 0 means "to the end". */
typedef struct ovk_binding {
    const ovk_buffer *buffer;
    VkDeviceSize offset, range;
} ovk_binding;

/* GPU time per shader name, kept when OSCAR_PROFILE=1 (vk_profile.c). */
#define OSCAR_PROFILE_MAX 64
typedef struct ovk_profile_entry {
    char name[48];
    double ns;
    uint64_t calls;
} ovk_profile_entry;
typedef struct ovk_profile {
    ovk_profile_entry entries[OSCAR_PROFILE_MAX];
    uint32_t n;
    double total_ns;
} ovk_profile;
void ovk_profile_add(ovk_profile *pr, const char *name, double ns);
/* Sorts the entries by time and prints them under the title. NULL or empty: nothing. */
void ovk_profile_print(ovk_profile *pr, const char *title, FILE *f);

/* ---- optional arithmetic and kernel variants (vk_features.c) ------------------------------- */
#define OVK_MAX_PICKS 32
typedef struct ovk_features {
    uint32_t enabled;   /* OVK_NEEDS_* bits enabled on the device: a variant needing them can run */
    uint32_t preferred; /* the bits ovk_pick_variant uses: enabled and worth it (integer dot: the
                         * driver says 4x8 packed signed dot products are accelerated) */
    const char *logged[OVK_MAX_PICKS]; /* ops whose choice was logged (table names) */
    uint32_t n_logged;
} ovk_features;

/* What a device offers beyond oscar_device_info, for enabling (filled by ovk_features_query). */
typedef struct ovk_device_caps {
    int has_idot_ext, has_coopmat_ext;
    int shader_integer_dot_product;   /* the feature bit */
    int cooperative_matrix;           /* the feature bit, in compute shaders */
    int vulkan_memory_model;          /* vulkanMemoryModel and vulkanMemoryModelDeviceScope */
} ovk_device_caps;

/* The structures chained into vkCreateDevice for what ovk_features_enable turned on; they live
 * in the caller's frame until the device exists. */
typedef struct ovk_feature_chain {
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat;
} ovk_feature_chain;

/* 1 when the device lists the extension. */
int ovk_device_has_extension(VkPhysicalDevice pd, const char *name);
/* Fills info's integer-dot and cooperative-matrix fields (what the device has) and caps for pd,
 * a device of `instance`. */
void ovk_features_query(VkInstance instance, VkPhysicalDevice pd, oscar_device_info *info, ovk_device_caps *caps);
/* Decides what the context enables, from ctx->env, ctx->info, caps and the kernels this build
 * holds: appends extension names to exts (room for 2 more), links the chain's structures into
 * f12's pNext, sets f12's shaderFloat16 / vulkanMemoryModel, fills ctx->features and clears in
 * ctx->info what stays off. Called before vkCreateDevice. */
void ovk_features_enable(oscar_context *ctx, const ovk_device_caps *caps, ovk_feature_chain *chain,
                         VkPhysicalDeviceVulkan12Features *f12, const char **exts, uint32_t *n_exts);
/* 1 for the shape the cooperative-matrix kernels run: fp16 A and B, fp32 C and result, subgroup scope. */
int ovk_coopmat_shape_f16_f32(const oscar_coopmat_shape *s);
/* 1 when the device lists that kind of shape at m x n x k. */
int ovk_coopmat_has_f16_shape(const oscar_context *ctx, uint32_t m, uint32_t n, uint32_t k);
/* The largest subgroup size the device may run (its default without subgroup size control):
 * workgroups sized in multiples of it keep every subgroup full. */
uint32_t ovk_max_subgroup_size(const oscar_context *ctx);
/* The variant of `op` to run on this context: the table row "op" or "op.<suffix>" whose needs
 * are all preferred, cooperative matrices before integer dot before fp16 before none; NULL when
 * no built variant fits. Logs the choice once per op with OSCAR_PIPELINE_STATS=1. */
const char *ovk_pick_variant(oscar_context *ctx, const char *op);
/* 1 when the table has `name` and the context enabled everything it needs (for running a
 * named variant, as the tests do with each). */
int ovk_variant_usable(const oscar_context *ctx, const char *name);
/* 1 when a validation message only reflects a layer older than an extension the context
 * enabled (the layer cannot know that extension's structures or SPIR-V). */
int ovk_validation_message_predates_layer(const oscar_context *ctx, const char *message);

/* ---- the context -------------------------------------------------------------------------- */
struct oscar_context {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    struct VolkDeviceTable vk;          /* device-level entry points */
    VkQueue queue;
    uint32_t queue_family, queue_index;
    int external;                       /* instance and device are an application's (oscar_vk_context_create): never destroyed here */
    VkPipelineCache pipeline_cache;
    char *pipeline_cache_path;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkPhysicalDeviceLimits limits;
    oscar_device_info info;             /* capabilities: what was found and enabled */
    ovk_pipeline *pipelines;          /* created on first use, kept until destroy */
    ovk_cmd cmd;                      /* the context's own stream for synchronous work */
    ovk_buffer staging;               /* reusable staging for upload/download */
    int validation, print_validation;
    int pipeline_stats;                 /* OSCAR_PIPELINE_STATS=1 and the device can: print each pipeline's statistics */
    ovk_features features;              /* optional arithmetic enabled, for ovk_pick_variant */
    uint32_t layer_version;             /* the validation layer's Vulkan version (0: none) */
    uint64_t validation_ignored;        /* messages ovk_validation_message_predates_layer set aside */
    uint32_t creating_needs;            /* OVK_NEEDS_* of the shader whose module and pipeline are being made */
    ovk_profile *profile;             /* OSCAR_PROFILE=1 and the device has timestamps: GPU time per shader */
    ovk_profile *host_profile;        /* OSCAR_PROFILE=1 or =host: host time per phase of a forward step */
    volatile uint64_t validation_messages;
    ovk_env env;                      /* the environment, read once at creation (vk_env.h) */
    int texel_buffers;                  /* R32G32B32A32_UINT uniform texel buffers work: every buffer
                                         * can be bound as one (ovk_pipeline_desc.texel_bindings) */
};

/* Context creation (vk_instance.c). ovk_loader_init opens the Vulkan loader once per process:
 * through app_gipa when given (no dlopen), else libvulkan.so.1 / OSCAR_VULKAN_LIBRARY; an
 * app_gipa other than the loader in use is INVALID_STATE. ovk_query_device fills `info` (and,
 * when given, the features to enable and caps) for a physical device. ovk_context_open
 * finishes a context whose device, physical, queue_family and queue_index are set. */
oscar_status ovk_loader_init(PFN_vkGetInstanceProcAddr app_gipa);
void ovk_query_device(VkInstance instance, VkPhysicalDevice pd, uint32_t index, oscar_device_info *info,
                      VkPhysicalDeviceVulkan11Features *f11, VkPhysicalDeviceVulkan12Features *f12,
                      VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *fsc, VkPhysicalDeviceFeatures *f10,
                      ovk_device_caps *caps);
oscar_status ovk_context_open(oscar_context *ctx, const char *pipeline_cache_path);

/* Buffers (vk_memory.c). Sizes are bytes. Synchronous uploads/downloads use the context's
 * staging buffer and stream; they must not be called while ctx->cmd is recording. */
oscar_status ovk_buffer_create(oscar_context *ctx, VkDeviceSize size, ovk_buffer_kind kind, ovk_buffer *out);
void ovk_buffer_destroy(oscar_context *ctx, ovk_buffer *buf);
/* The R32G32B32A32_UINT view of b's bytes [offset, offset + range), made once and kept in the
 * buffer (its view cache is bookkeeping, not contents: hence the const). offset must be a
 * multiple of minTexelBufferOffsetAlignment, range of 16. */
oscar_status ovk_buffer_texel_view(oscar_context *ctx, const ovk_buffer *b, VkDeviceSize offset, VkDeviceSize range,
                                   VkBufferView *out);
oscar_status ovk_buffer_upload(oscar_context *ctx, ovk_buffer *dst, VkDeviceSize offset, const void *src, size_t bytes);
oscar_status ovk_buffer_download(oscar_context *ctx, const ovk_buffer *src, VkDeviceSize offset, void *dst, size_t bytes);
/* Fills `bytes` bytes at `offset` with a repeated 32-bit word (both multiples of 4). */
oscar_status ovk_buffer_fill(oscar_context *ctx, ovk_buffer *dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t word);

/* Checks a binding points into a live buffer and holds at least `bytes` bytes; the message names
 * the op and the binding (`what`). */
oscar_status ovk_binding_check(const ovk_binding *b, uint64_t bytes, const char *op, const char *what);

/* Pipelines (vk_pipeline.c): returns the pipeline for desc, creating it on first use. */
oscar_status ovk_pipeline_get(oscar_context *ctx, const ovk_pipeline_desc *desc, ovk_pipeline **out);

/* Command streams (vk_command.c). */
oscar_status ovk_cmd_init(oscar_context *ctx, ovk_cmd *cmd);
void ovk_cmd_release(oscar_context *ctx, ovk_cmd *cmd);
/* Starts recording (waits for the previous submission of this stream to finish first). */
oscar_status ovk_cmd_begin(oscar_context *ctx, ovk_cmd *cmd);
/* Binds `bindings` (pipeline->desc.n_buffers of them) and dispatches groups[0..2]. */
oscar_status ovk_cmd_dispatch(oscar_context *ctx, ovk_cmd *cmd, const ovk_pipeline *p,
                                const ovk_binding *bindings, const void *push, const uint32_t groups[3]);
/* Makes every earlier shader/transfer write visible to later shader/transfer reads and writes. */
void ovk_cmd_barrier(oscar_context *ctx, ovk_cmd *cmd);
/* Makes earlier shader/transfer writes visible to the host after the submission's fence. */
void ovk_cmd_host_barrier(oscar_context *ctx, ovk_cmd *cmd);
void ovk_cmd_copy(oscar_context *ctx, ovk_cmd *cmd, const ovk_buffer *src, VkDeviceSize src_offset,
                    const ovk_buffer *dst, VkDeviceSize dst_offset, VkDeviceSize bytes);
/* Writes a timestamp after all earlier work; returns its index, or -1 without timestamp support. */
int ovk_cmd_timestamp(oscar_context *ctx, ovk_cmd *cmd);
/* Submits what was recorded since begin or the last flush and goes on recording into a new
 * command buffer, which starts with a barrier (so what follows sees the flushed work's writes).
 * The GPU can run the flushed part while the host records the rest. In the last part it only
 * records that barrier, so what follows a flush always sees what came before it. */
oscar_status ovk_cmd_flush(oscar_context *ctx, ovk_cmd *cmd);
/* Gives up a stream that is recording (after a failure): the current part is ended unsubmitted
 * and the flushed parts are waited on, so nothing of the stream still runs. */
void ovk_cmd_abort(oscar_context *ctx, ovk_cmd *cmd);
/* Ends recording and submits; ovk_cmd_wait blocks until the stream's work (every part) is done. */
oscar_status ovk_cmd_submit(oscar_context *ctx, ovk_cmd *cmd);
oscar_status ovk_cmd_wait(oscar_context *ctx, ovk_cmd *cmd);
static inline oscar_status ovk_cmd_submit_wait(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = ovk_cmd_submit(ctx, cmd);
    return st != OSCAR_OK ? st : ovk_cmd_wait(ctx, cmd);
}
/* A stream that records into a command buffer someone else allocated and submits (an
 * application's, oscar/vulkan.h): zero-initialised, it has no pool, fences or timestamps, only
 * the descriptor pools ovk_cmd_dispatch grows. ovk_cmd_adopt points it at cb and marks it
 * recording (the caller clears `recording` when done); ovk_cmd_reset_sets frees its descriptor
 * sets once the command buffers that used them have completed. ovk_cmd_release frees it. */
void ovk_cmd_adopt(ovk_cmd *cmd, VkCommandBuffer cb);
oscar_status ovk_cmd_reset_sets(oscar_context *ctx, ovk_cmd *cmd);
/* Nanoseconds between two timestamps of a finished stream. */
oscar_status ovk_cmd_elapsed_ns(oscar_context *ctx, ovk_cmd *cmd, int from, int to, double *ns);

/* Groups needed to cover n items with groups of `per_group`. */
static inline uint32_t ovk_div_up(uint64_t n, uint32_t per_group) { return (uint32_t)((n + per_group - 1) / per_group); }

#endif
