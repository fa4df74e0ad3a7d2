/* OSCAR-VK on the application's own Vulkan device: the only header with Vulkan types.
 *
 * For an engine that runs its own matrix products on the GPU (a ggml-vulkan application, a game
 * engine, a desktop app with its own VkDevice): the KV cache lives on the application's device,
 * appends K/V from the application's VkBuffers and writes attention into them, recorded into a
 * command buffer the application gives. Nothing goes through host memory. The rest of the API
 * (oscar.h, kv.h, model.h) stays Vulkan-free; include this header after Vulkan's (or volk's).
 *
 * Ownership. The application creates the VkInstance, VkPhysicalDevice choice, VkDevice and
 * queue, keeps them, and destroys them after oscar_context_destroy. The library creates its own
 * objects on that device (buffers and memory for the page pools, pipelines, descriptor pools, a
 * command pool of the given queue family, fences) and destroys them with the cache / context.
 * It never calls vkDeviceWaitIdle on the application's device and never creates a second
 * instance or loads a second Vulkan loader when get_instance_proc_addr is given.
 *
 * Queue. The library submits work of its own to queue (queue_family, queue_index) only inside
 * these calls: oscar_kv_cache_create (zeroing and uploading its tables), oscar_kv_seq_fork
 * (copying partial pages), oscar_kv_step_end when the step's flush was not recorded with
 * oscar_vk_kv_flush, and the host-pointer calls of kv.h. Each waits for its own fence before it
 * returns. Vulkan requires access to a VkQueue to be externally synchronized: the application
 * must not submit to that queue from another thread during those calls.
 *
 * Life of a step on the application's buffers (compare kv.h):
 *   oscar_kv_step_begin(cache, n_seqs, seqs, n_new)        host: plan pages, stage tables
 *   for each layer:                                        the application records into cb:
 *       (its q, k, v projections, RoPE)
 *       oscar_vk_kv_append(cache, cb, layer, &k, &v)
 *       oscar_vk_kv_attention(cache, cb, layer, &q, &out)
 *       (its output projection reading out)
 *   oscar_vk_kv_flush(cache, cb)                           optional: quantize in cb (all layers)
 *   oscar_kv_step_end(cache)                               host: commit the step
 *   (the application submits cb)
 * The commands may be spread over several command buffers, recorded in that order and executed
 * in that order on queues of the context's queue family (one queue, or semaphores between them).
 * Two rules of timing:
 *   - Before the next oscar_kv_step_begin (and before oscar_kv_seq_fork, oscar_kv_cache_destroy,
 *     oscar_context_destroy), every command buffer holding this step's commands has completed
 *     execution (the application waited on its fence): the library reuses its staging memory and
 *     descriptor sets from step to step.
 *   - Without oscar_vk_kv_flush, oscar_kv_step_end submits the quantization of the tokens that
 *     leave the recent window itself (once a sequence is longer than sink + recent tokens, about
 *     one step in flush_tokens has some), so the step's command buffers must have completed
 *     before oscar_kv_step_end too.
 *
 * Barriers. The library's commands read and write the application's buffers in compute shaders
 * only (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT): k, v and q with VK_ACCESS_SHADER_READ_BIT, out
 * with VK_ACCESS_SHADER_WRITE_BIT. Each call records, first, a memory barrier from
 * COMPUTE_SHADER | TRANSFER stages (SHADER_WRITE | TRANSFER_WRITE access) to COMPUTE_SHADER |
 * TRANSFER stages (SHADER_READ | SHADER_WRITE | TRANSFER_READ | TRANSFER_WRITE), whose first
 * scope is every command earlier in submission order on the queue; its own commands are ordered
 * among themselves. So:
 *   before a call: writes of k, v, q by compute shaders or transfer commands (vkCmdCopyBuffer,
 *     vkCmdFillBuffer, vkCmdUpdateBuffer) need no barrier of the caller's; writes at any other
 *     stage (graphics, host after submission), and any earlier read of out at a stage other than
 *     compute or transfer, need the caller's barrier with dstStageMask COMPUTE_SHADER and
 *     dstAccessMask SHADER_READ (k, v, q) / SHADER_WRITE (out).
 *   after a call: before the application reads out, or writes k, v or q again, it records a
 *     barrier with srcStageMask VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, srcAccessMask
 *     VK_ACCESS_SHADER_WRITE_BIT (for out; an execution dependency suffices for k, v, q) and its
 *     own stage and access as the destination. A VkMemoryBarrier or VkBufferMemoryBarrier over
 *     the ranges given here both do.
 * The library's own buffers need nothing of the caller: every call starts with the barrier above.
 * Recorded calls are not timed: oscar_kv_stats.last_gpu_ms keeps the last host-pointer call's.
 *
 * Buffers. An oscar_vk_buffer is a range of a VkBuffer created on the context's device with
 * VK_BUFFER_USAGE_STORAGE_BUFFER_BIT and bound to memory, in VK_SHARING_MODE_EXCLUSIVE owned by
 * the context's queue family (or CONCURRENT including it). Layouts, with T = the step's new
 * tokens in the order of kv.h (all new tokens of seqs[0], then of seqs[1], ...):
 *   k, v : [T][n_kv_head][head_dim], OSCAR_VK_F32 (4-byte floats) or OSCAR_VK_F16 (IEEE
 *          binary16, 2 bytes), post-RoPE, in the model's basis (the cache rotates them).
 *   q    : [T][n_head][head_dim] OSCAR_VK_F32, post-RoPE, in the model's basis.
 *   out  : [T][n_head][head_dim] OSCAR_VK_F32, written (every element of the T rows).
 * Rows are packed: element (t, h, i) is at offset + ((t * heads + h) * head_dim + i) * element
 * size, head_dim contiguous, no padding between heads or tokens. offset must be a multiple of
 * the device's minStorageBufferOffsetAlignment (and of 4), size at least the layout's bytes
 * (which must not exceed maxStorageBufferRange: the library binds exactly those bytes). out must
 * not overlap q; it may reuse the memory of the layer's k or v, which the append has read by
 * then. A bad range is OSCAR_ERROR_INVALID_ARGUMENT with one line naming the argument, before
 * anything is recorded.
 */
#ifndef OSCAR_VULKAN_H
#define OSCAR_VULKAN_H

#include <vulkan/vulkan_core.h>

#include "oscar/oscar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- a context on the application's device ----------------------------------------------- */
typedef struct oscar_vk_device {
    /* The application's loader entry point. NULL: the library opens libvulkan.so.1 itself (or
     * OSCAR_VULKAN_LIBRARY). Given: the library loads every entry point through it and opens no
     * loader; a process uses one loader, so a second context must give the same function. */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    VkInstance instance;
    /* VkApplicationInfo.apiVersion the instance was created with: at least VK_API_VERSION_1_2. */
    uint32_t api_version;
    VkPhysicalDevice physical_device;   /* Vulkan 1.2 or later */
    VkDevice device;                    /* created from physical_device with at least one queue of queue_family */
    uint32_t queue_family;              /* a family with VK_QUEUE_COMPUTE_BIT */
    uint32_t queue_index;               /* the queue of that family the library submits to */
    /* What the application enabled at vkCreateDevice, which the library cannot query from a
     * VkDevice: the feature chain (VkDeviceCreateInfo.pNext as it was, whatever structure comes
     * first, or a VkPhysicalDeviceFeatures2 wrapping pEnabledFeatures in front of it; NULL: none
     * enabled) and the enabled device extensions. From the chain the library reads
     * VkPhysicalDeviceFeatures2, VkPhysicalDeviceVulkan11Features, ...Vulkan12Features,
     * ...Vulkan13Features, ...16BitStorageFeatures, ...8BitStorageFeatures,
     * ...ShaderFloat16Int8Features, ...VulkanMemoryModelFeatures, ...SubgroupSizeControlFeatures,
     * ...ShaderIntegerDotProductFeatures and ...CooperativeMatrixFeaturesKHR (VkPhysicalDevice...)
     * and skips other structures. Only what is enabled here is used; the pointers are read during
     * creation only. */
    const VkPhysicalDeviceFeatures2 *enabled_features;
    uint32_t enabled_extension_count;
    const char *const *enabled_extensions;
} oscar_vk_device;

/* Checks a device description against what the library needs, without creating anything.
 * Required: api_version and the device's version at least 1.2, a compute queue family, and
 * subgroup arithmetic and shuffle operations in compute shaders (device properties: the decode
 * attention kernel). Optional (each only turns on a faster kernel): shaderFloat16 (fp16
 * attention and products), storageBuffer16BitAccess, subgroupSizeControl with
 * computeFullSubgroups (and VK_EXT_subgroup_size_control below 1.3),
 * VK_KHR_shader_integer_dot_product with shaderIntegerDotProduct, VK_KHR_cooperative_matrix with
 * cooperativeMatrix and vulkanMemoryModel + vulkanMemoryModelDeviceScope, VK_EXT_memory_budget.
 * Writes a NUL-terminated report into report[report_size] (may be NULL): one line per optional
 * feature the physical device offers but the description does not enable, "name: effect".
 * Returns OSCAR_OK, or OSCAR_ERROR_MISSING_FEATURE / OSCAR_ERROR_INVALID_ARGUMENT with
 * oscar_last_error() naming the first missing requirement. */
OSCAR_API oscar_status oscar_vk_check_device(const oscar_vk_device *device, char *report, size_t report_size);

/* Creates a context on the application's device (oscar_vk_check_device first). params may be
 * NULL; its device and validation fields are ignored (the application chose the device and its
 * instance's layers; validation messages go to the application's messengers, and
 * oscar_context_validation_messages counts none), pipeline_cache_path is honoured. The context
 * is used as any other: oscar_kv_cache_create, oscar_context_device_info (which reports what the
 * application enabled), the model level. oscar_context_destroy releases only the library's
 * objects and waits only for the library's own submissions; the application destroys its
 * device and instance afterwards. */
OSCAR_API oscar_status oscar_vk_context_create(const oscar_vk_device *device, const oscar_context_params *params,
                                              oscar_context **out);

/* ---- the KV cache on the application's buffers ------------------------------------------ */
typedef enum oscar_vk_type {
    OSCAR_VK_F32 = 0, /* 4-byte IEEE binary32 */
    OSCAR_VK_F16 = 1, /* 2-byte IEEE binary16 (k and v only) */
} oscar_vk_type;

/* A range of an application's VkBuffer holding one tensor (layouts above). */
typedef struct oscar_vk_buffer {
    VkBuffer buffer;
    VkDeviceSize offset; /* bytes from the start of buffer: a multiple of minStorageBufferOffsetAlignment */
    VkDeviceSize size;   /* bytes the library may access from offset: at least the tensor's bytes */
    oscar_vk_type type;
} oscar_vk_buffer;

/* Records into cb (recording, primary or secondary, allocated from a pool of the context's queue
 * family) the append of this step's new tokens' K and V for `layer`: k, v [T][n_kv_head][head_dim]
 * (F32 or F16, both the same type). The cache must come from a context of oscar_vk_context_create
 * and a step must be open (oscar_kv_step_begin). The commands bind a compute pipeline, descriptor
 * sets and push constants: the application's bindings at the compute bind point are undefined
 * after the call (set them again before its next dispatch). */
OSCAR_API oscar_status oscar_vk_kv_append(oscar_kv_cache *cache, VkCommandBuffer cb, uint32_t layer,
                                         const oscar_vk_buffer *k, const oscar_vk_buffer *v);

/* Records into cb the attention of this step's new tokens for `layer` (after the layer's
 * append): q [T][n_head][head_dim] F32 in, out [T][n_head][head_dim] F32 written, in the model's
 * basis (the same values oscar_kv_attention returns). Bindings as oscar_vk_kv_append. */
OSCAR_API oscar_status oscar_vk_kv_attention(oscar_kv_cache *cache, VkCommandBuffer cb, uint32_t layer,
                                            const oscar_vk_buffer *q, const oscar_vk_buffer *out);

/* Records into cb the quantization of the tokens that leave the recent window in this step, for
 * every layer (after the step's last append and attention; nothing is recorded when no token
 * leaves this step). oscar_kv_step_end then only commits the step and submits nothing. */
OSCAR_API oscar_status oscar_vk_kv_flush(oscar_kv_cache *cache, VkCommandBuffer cb);

#ifdef __cplusplus
}
#endif
#endif
