/* oscar-embed: the KV cache on an application's own Vulkan device and buffers.
 *
 * A toy two-layer attention run the way an engine with its own GPU matrix products would run
 * it: this program creates its own VkInstance and VkDevice (linking the Vulkan loader, whose
 * vkGetInstanceProcAddr it hands to the library), its own buffers, uploads q, k and v itself,
 * and records the cache's append, attention and flush into its own command buffer
 * (include/oscar/vulkan.h). Nothing goes through the library's host-pointer calls.
 *
 * Two sequences: a prefill of 12 and 7 tokens, then one token each per step; the fp16 windows
 * are small (4 sink, 8 recent tokens) so tokens move into INT2 pages as the steps go. Inputs are
 * multiples of 1/64 in [-4, 4) with a few 4x outliers: exact in fp32 and fp16.
 *
 *   oscar-embed [--mode fp16|int2|int2-hadamard] [--steps N] [--f16-kv] [--flush-in-step-end]
 *               [--validation] [--sync-validation] [--dump FILE]
 *
 * --f16-kv uploads K and V as fp16; --flush-in-step-end leaves the quantization to
 * oscar_kv_step_end (after this program's fence) instead of recording it with oscar_vk_kv_flush;
 * --validation enables VK_LAYER_KHRONOS_validation (as OSCAR_VALIDATION=1 does), and
 * --sync-validation its synchronization checks too; any warning or error fails the run (exit 1).
 * --dump writes the configuration, every step's inputs and outputs (tests/test_vk_embed.c
 * replays them through the host-pointer API and compares bit for bit):
 *   "OSCAREMB", u32 [14] = { 1, mode, n_layer, n_head, n_kv_head, head_dim, page_tokens, sink,
 *   recent, flush, max_context, max_step_tokens, n_seqs, n_steps }, then per step u32 n_new[n_seqs] and per layer
 *   float32 k[T][n_kv_head][head_dim], v (same), q[T][n_head][head_dim], out (same).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "oscar/oscar.h"
#include "oscar/vulkan.h"

#define N_LAYER 2u
#define N_HEAD 4u
#define N_KV_HEAD 2u
#define HEAD_DIM 64u
#define N_SEQS 2u
#define MAX_STEP_TOKENS 32u

static const char *prog = "oscar-embed";

/* ---- the application's Vulkan objects --------------------------------------------------------- */
typedef struct app_vk {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    VkPhysicalDeviceProperties props;
    /* what vkCreateDevice enabled, kept for oscar_vk_device */
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT fsc;
    const char *exts[1];
    uint32_t n_exts;
    unsigned messages; /* validation warnings and errors */
} app_vk;

typedef struct app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped; /* host-visible buffers only */
} app_buffer;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    app_vk *vk = user;
    (void)type;
    if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        vk->messages++;
        fprintf(stderr, "%s: validation: %s\n", prog, data && data->pMessage ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static int vk_ok(VkResult r, const char *what)
{
    if (r != VK_SUCCESS) fprintf(stderr, "%s: %s failed (VkResult %d)\n", prog, what, (int)r);
    return r == VK_SUCCESS;
}

static int has_device_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    int found = 0;
    if (p && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

/* Instance (Vulkan 1.2, the validation layer on request), the first Vulkan 1.2 device with a
 * compute queue (discrete GPUs first), and a device with the optional features the library can
 * use where the device has them: shaderFloat16, storageBuffer16BitAccess, subgroup size control. */
static int app_vk_create(app_vk *vk, int validation, int sync_validation)
{
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = prog,
                              .apiVersion = VK_API_VERSION_1_2 };
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *exts[2] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME };
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = { .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                         .enabledValidationFeatureCount = 1, .pEnabledValidationFeatures = &sync };
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, .pNext = sync_validation ? &features : NULL,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message, .pUserData = vk };
    VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = validation ? &dbg : NULL,
                                 .pApplicationInfo = &app, .enabledLayerCount = validation ? 1 : 0,
                                 .ppEnabledLayerNames = &layer,
                                 .enabledExtensionCount = validation ? (sync_validation ? 2 : 1) : 0,
                                 .ppEnabledExtensionNames = exts };
    if (!vk_ok(vkCreateInstance(&ici, NULL, &vk->instance), "vkCreateInstance (with --validation: is "
                                                             "vulkan-validationlayers installed?)"))
        return 0;
    if (validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkCreateDebugUtilsMessengerEXT");
        dbg.pNext = NULL;
        if (!create_messenger || !vk_ok(create_messenger(vk->instance, &dbg, NULL, &vk->messenger), "the debug messenger"))
            return 0;
    }

    VkPhysicalDevice pds[16];
    uint32_t n = 16, best_rank = 0;
    VkResult r = vkEnumeratePhysicalDevices(vk->instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_ok(r, "vkEnumeratePhysicalDevices");
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        VkQueueFamilyProperties qf[16];
        uint32_t nq = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(pds[i], &nq, qf);
        uint32_t family = UINT32_MAX;
        for (uint32_t f = 0; f < nq && family == UINT32_MAX; f++)
            if (qf[f].queueFlags & VK_QUEUE_COMPUTE_BIT) family = f;
        uint32_t rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 3 : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 2;
        if (p.apiVersion >= VK_API_VERSION_1_2 && family != UINT32_MAX && rank > best_rank) {
            best_rank = rank;
            vk->physical = pds[i];
            vk->family = family;
            vk->props = p;
        }
    }
    if (!vk->physical) {
        fprintf(stderr, "%s: no Vulkan 1.2 device with a compute queue\n", prog);
        return 0;
    }

    /* what the device offers, then the same chain with only the features this program wants */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT };
    VkPhysicalDeviceVulkan12Features has12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &sc };
    VkPhysicalDeviceVulkan11Features has11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &has12 };
    VkPhysicalDeviceFeatures2 has = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &has11 };
    vkGetPhysicalDeviceFeatures2(vk->physical, &has);
    int size_control = has_device_extension(vk->physical, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) && sc.subgroupSizeControl;
    vk->fsc = (VkPhysicalDeviceSubgroupSizeControlFeaturesEXT){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
        .subgroupSizeControl = size_control ? VK_TRUE : VK_FALSE,
        .computeFullSubgroups = size_control ? sc.computeFullSubgroups : VK_FALSE };
    vk->f12 = (VkPhysicalDeviceVulkan12Features){ .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                  .pNext = size_control ? &vk->fsc : NULL, .shaderFloat16 = has12.shaderFloat16 };
    vk->f11 = (VkPhysicalDeviceVulkan11Features){ .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                  .pNext = &vk->f12, .storageBuffer16BitAccess = has11.storageBuffer16BitAccess };
    vk->f2 = (VkPhysicalDeviceFeatures2){ .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &vk->f11 };
    if (size_control) vk->exts[vk->n_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = vk->family,
                                    .queueCount = 1, .pQueuePriorities = &priority };
    VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &vk->f2, .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &qci, .enabledExtensionCount = vk->n_exts,
                               .ppEnabledExtensionNames = vk->exts };
    if (!vk_ok(vkCreateDevice(vk->physical, &dci, NULL, &vk->device), "vkCreateDevice")) return 0;
    vkGetDeviceQueue(vk->device, vk->family, 0, &vk->queue);
    VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = vk->family };
    VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1 };
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if (!vk_ok(vkCreateCommandPool(vk->device, &pci, NULL, &vk->pool), "vkCreateCommandPool")) return 0;
    cai.commandPool = vk->pool;
    return vk_ok(vkAllocateCommandBuffers(vk->device, &cai, &vk->cb), "vkAllocateCommandBuffers") &&
           vk_ok(vkCreateFence(vk->device, &fci, NULL, &vk->fence), "vkCreateFence");
}

static void app_vk_destroy(app_vk *vk)
{
    if (vk->device) {
        if (vk->fence) vkDestroyFence(vk->device, vk->fence, NULL);
        if (vk->pool) vkDestroyCommandPool(vk->device, vk->pool, NULL);
        vkDestroyDevice(vk->device, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance) vkDestroyInstance(vk->instance, NULL);
}

/* A buffer with memory of the wanted properties (host-visible ones stay mapped). */
static int app_buffer_create(app_vk *vk, VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                             app_buffer *b)
{
    VkBufferCreateInfo bci = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE };
    if (!vk_ok(vkCreateBuffer(vk->device, &bci, NULL, &b->buffer), "vkCreateBuffer")) return 0;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, b->buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(vk->physical, &mp);
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) {
        fprintf(stderr, "%s: no memory type with properties 0x%x\n", prog, (unsigned)want);
        return 0;
    }
    VkMemoryAllocateInfo mai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                 .memoryTypeIndex = type };
    if (!vk_ok(vkAllocateMemory(vk->device, &mai, NULL, &b->memory), "vkAllocateMemory") ||
        !vk_ok(vkBindBufferMemory(vk->device, b->buffer, b->memory, 0), "vkBindBufferMemory"))
        return 0;
    if (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        return vk_ok(vkMapMemory(vk->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
    return 1;
}

static void app_buffer_destroy(app_vk *vk, app_buffer *b)
{
    if (b->buffer) vkDestroyBuffer(vk->device, b->buffer, NULL);
    if (b->memory) vkFreeMemory(vk->device, b->memory, NULL);
}

/* ---- the toy model's data ------------------------------------------------------------------- */
static uint64_t rng = 0x9E3779B97F4A7C15ull;

/* A multiple of 1/64 in [-4, 4), one in 32 of them times 4: exact in fp16 and fp32. */
static float toy_value(void)
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    uint32_t r = (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
    float x = (float)((int)(r & 511) - 256) / 64.0f;
    return (r >> 9) % 32 == 0 ? 4.0f * x : x;
}

/* IEEE binary16 of a float that is exactly representable in it (normal or zero). */
static uint16_t to_half(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xFF, man = u & 0x7FFFFFu;
    if (exp == 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((exp - 112) << 10) | (man >> 13));
}

/* ---- one run ------------------------------------------------------------------------------- */
typedef struct options {
    oscar_kv_mode mode;
    uint32_t steps;
    int f16_kv, flush_in_step_end, validation, sync_validation;
    const char *dump;
} options;

/* Byte offsets of layer l's tensors in the device buffer (and in the staging and readback
 * buffers, which mirror it), each aligned for binding: k, v [MAX_STEP_TOKENS][N_KV_HEAD][HEAD_DIM]
 * fp32 (fp16 with --f16-kv, in the first half), q, out [MAX_STEP_TOKENS][N_HEAD][HEAD_DIM] fp32. */
typedef struct layout {
    VkDeviceSize k[N_LAYER], v[N_LAYER], q[N_LAYER], out[N_LAYER], bytes;
} layout;

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

static layout make_layout(VkDeviceSize align)
{
    layout L;
    VkDeviceSize kv = (VkDeviceSize)MAX_STEP_TOKENS * N_KV_HEAD * HEAD_DIM * 4, qo = (VkDeviceSize)MAX_STEP_TOKENS * N_HEAD * HEAD_DIM * 4;
    VkDeviceSize at = 0;
    for (uint32_t l = 0; l < N_LAYER; l++) {
        L.k[l] = at, at = align_up(at + kv, align);
        L.v[l] = at, at = align_up(at + kv, align);
        L.q[l] = at, at = align_up(at + qo, align);
        L.out[l] = at, at = align_up(at + qo, align);
    }
    L.bytes = at;
    return L;
}

static int check(oscar_status st, const char *what)
{
    if (st != OSCAR_OK) fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, oscar_last_error(), oscar_status_string(st));
    return st == OSCAR_OK;
}

/* Records one step: upload of this step's inputs (staging -> device), each layer's append and
 * attention on the device buffer, the flush, and the outputs' copy into the readback buffer. */
static int record_step(app_vk *vk, oscar_kv_cache *cache, const options *o, const layout *L, uint32_t T, app_buffer *dev,
                       app_buffer *staging, app_buffer *readback)
{
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    if (!vk_ok(vkBeginCommandBuffer(vk->cb, &bi), "vkBeginCommandBuffer")) return 0;
    /* the staging buffer mirrors the device buffer's layout: one copy uploads every input */
    VkBufferCopy up = { 0, 0, L->bytes };
    vkCmdCopyBuffer(vk->cb, staging->buffer, dev->buffer, 1, &up);
    /* No barrier here: the library's first command is a barrier from transfer and compute
     * writes (oscar/vulkan.h), which covers this copy. */
    oscar_vk_type kv_type = o->f16_kv ? OSCAR_VK_F16 : OSCAR_VK_F32;
    VkDeviceSize kv_bytes = (VkDeviceSize)T * N_KV_HEAD * HEAD_DIM * (o->f16_kv ? 2 : 4);
    VkDeviceSize qo_bytes = (VkDeviceSize)T * N_HEAD * HEAD_DIM * 4;
    for (uint32_t l = 0; l < N_LAYER; l++) {
        oscar_vk_buffer k = { dev->buffer, L->k[l], kv_bytes, kv_type }, v = { dev->buffer, L->v[l], kv_bytes, kv_type };
        oscar_vk_buffer q = { dev->buffer, L->q[l], qo_bytes, OSCAR_VK_F32 }, out = { dev->buffer, L->out[l], qo_bytes, OSCAR_VK_F32 };
        if (!check(oscar_vk_kv_append(cache, vk->cb, l, &k, &v), "oscar_vk_kv_append") ||
            !check(oscar_vk_kv_attention(cache, vk->cb, l, &q, &out), "oscar_vk_kv_attention"))
            return 0;
    }
    if (!o->flush_in_step_end && !check(oscar_vk_kv_flush(cache, vk->cb), "oscar_vk_kv_flush")) return 0;
    /* out was written by compute shaders: a barrier before this program's transfer reads it */
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT };
    vkCmdPipelineBarrier(vk->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkBufferCopy down[N_LAYER];
    for (uint32_t l = 0; l < N_LAYER; l++) down[l] = (VkBufferCopy){ L->out[l], L->out[l], qo_bytes };
    vkCmdCopyBuffer(vk->cb, dev->buffer, readback->buffer, N_LAYER, down);
    VkMemoryBarrier host = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_HOST_READ_BIT };
    vkCmdPipelineBarrier(vk->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, NULL, 0, NULL);
    return vk_ok(vkEndCommandBuffer(vk->cb), "vkEndCommandBuffer");
}

static int submit_wait(app_vk *vk)
{
    VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &vk->cb };
    return vk_ok(vkQueueSubmit(vk->queue, 1, &si, vk->fence), "vkQueueSubmit") &&
           vk_ok(vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences") &&
           vk_ok(vkResetFences(vk->device, 1, &vk->fence), "vkResetFences");
}

/* Fills step inputs in the staging buffer (k, v as fp32 or fp16) and appends them to the dump. */
static int fill_inputs(const options *o, const layout *L, uint32_t T, app_buffer *staging, FILE *dump)
{
    float row[N_HEAD * HEAD_DIM];
    for (uint32_t l = 0; l < N_LAYER; l++) {
        VkDeviceSize at[3] = { L->k[l], L->v[l], L->q[l] };
        uint32_t heads[3] = { N_KV_HEAD, N_KV_HEAD, N_HEAD };
        for (int t = 0; t < 3; t++) {
            char *dst = (char *)staging->mapped + at[t];
            int half = o->f16_kv && t < 2;
            for (uint32_t r = 0; r < T; r++) {
                uint32_t n = heads[t] * HEAD_DIM;
                for (uint32_t i = 0; i < n; i++) row[i] = toy_value();
                for (uint32_t i = 0; i < n; i++) {
                    if (half) {
                        uint16_t h = to_half(row[i]);
                        memcpy(dst + ((size_t)r * n + i) * 2, &h, 2);
                    } else {
                        memcpy(dst + ((size_t)r * n + i) * 4, &row[i], 4);
                    }
                }
                if (dump && fwrite(row, 4, n, dump) != n) return 0;
            }
        }
        if (dump) { /* out's place, filled after the step (fseek back) */
            static const float zeros[N_HEAD * HEAD_DIM];
            for (uint32_t r = 0; r < T; r++)
                if (fwrite(zeros, 4, N_HEAD * HEAD_DIM, dump) != N_HEAD * HEAD_DIM) return 0;
        }
    }
    return 1;
}

/* Writes the step's outputs into their places in the dump (after each layer's inputs). */
static int dump_outputs(const layout *L, uint32_t T, const app_buffer *readback, FILE *dump, long step_start)
{
    long kv = (long)T * N_KV_HEAD * HEAD_DIM * 4, qo = (long)T * N_HEAD * HEAD_DIM * 4;
    for (uint32_t l = 0; l < N_LAYER; l++) {
        long at = step_start + (long)l * (2 * kv + 2 * qo) + 2 * kv + qo;
        if (fseek(dump, at, SEEK_SET) != 0 || fwrite((const char *)readback->mapped + L->out[l], 1, (size_t)qo, dump) != (size_t)qo)
            return 0;
    }
    return fseek(dump, 0, SEEK_END) == 0;
}

static int run(app_vk *vk, const options *o)
{
    int ok = 0;
    oscar_context *ctx = NULL;
    oscar_kv_cache *cache = NULL;
    /* dev: device-local, the tensors the library reads and writes (layout above); staging:
     * host-visible, this program's upload of the step's inputs; readback: host-visible, the
     * step's outputs copied back. All three are L.bytes long. */
    app_buffer dev = { 0 }, staging = { 0 }, readback = { 0 };
    FILE *dump = NULL;

    /* the library on this program's device: what it enabled, through its own loader */
    oscar_vk_device d = { .get_instance_proc_addr = vkGetInstanceProcAddr, .instance = vk->instance,
                          .api_version = VK_API_VERSION_1_2, .physical_device = vk->physical, .device = vk->device,
                          .queue_family = vk->family, .queue_index = 0, .enabled_features = &vk->f2,
                          .enabled_extension_count = vk->n_exts, .enabled_extensions = vk->exts };
    char report[1024];
    if (!check(oscar_vk_check_device(&d, report, sizeof report), "oscar_vk_check_device")) goto done;
    if (report[0]) fprintf(stderr, "%s: optional features left off:\n%s", prog, report);
    if (!check(oscar_vk_context_create(&d, NULL, &ctx), "oscar_vk_context_create")) goto done;

    oscar_kv_params kp = oscar_kv_params_default();
    kp.mode = o->mode;
    kp.n_layer = N_LAYER, kp.n_head = N_HEAD, kp.n_kv_head = N_KV_HEAD, kp.head_dim = HEAD_DIM;
    kp.page_tokens = 16, kp.sink_tokens = 4, kp.recent_tokens = 8, kp.flush_tokens = 4;
    kp.max_sequences = N_SEQS, kp.max_context = 256, kp.max_step_tokens = MAX_STEP_TOKENS;
    if (!check(oscar_kv_cache_create(ctx, &kp, &cache), "oscar_kv_cache_create")) goto done;
    int32_t seqs[N_SEQS];
    for (uint32_t s = 0; s < N_SEQS; s++)
        if (!check(oscar_kv_seq_add(cache, &seqs[s]), "oscar_kv_seq_add")) goto done;

    layout L = make_layout(vk->props.limits.minStorageBufferOffsetAlignment);
    VkBufferUsageFlags usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (!app_buffer_create(vk, L.bytes, usage | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &dev) ||
        !app_buffer_create(vk, L.bytes, usage, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &staging) ||
        !app_buffer_create(vk, L.bytes, usage, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &readback))
        goto done;

    if (o->dump) {
        if (!(dump = fopen(o->dump, "wb+"))) {
            fprintf(stderr, "%s: --dump: cannot write %s\n", prog, o->dump);
            goto done;
        }
        uint32_t h[14] = { 1, (uint32_t)o->mode, N_LAYER, N_HEAD, N_KV_HEAD, HEAD_DIM, kp.page_tokens, kp.sink_tokens,
                           kp.recent_tokens, kp.flush_tokens, kp.max_context, kp.max_step_tokens, N_SEQS, o->steps };
        if (fwrite("OSCAREMB", 1, 8, dump) != 8 || fwrite(h, 4, 14, dump) != 14) goto done;
    }
    double checksum = 0;
    for (uint32_t step = 0; step < o->steps; step++) {
        uint32_t n_new[N_SEQS] = { step ? 1u : 12u, step ? 1u : 7u }, T = n_new[0] + n_new[1];
        if (dump && fwrite(n_new, 4, N_SEQS, dump) != N_SEQS) goto done;
        long step_start = dump ? ftell(dump) : 0;
        if (!fill_inputs(o, &L, T, &staging, dump)) goto done;
        if (!check(oscar_kv_step_begin(cache, N_SEQS, seqs, n_new), "oscar_kv_step_begin")) goto done;
        if (!record_step(vk, cache, o, &L, T, &dev, &staging, &readback)) goto done;
        if (o->flush_in_step_end) { /* the library's own flush reads what this step appended: run it first */
            if (!submit_wait(vk) || !check(oscar_kv_step_end(cache), "oscar_kv_step_end")) goto done;
        } else { /* the flush is in the command buffer: step_end only commits */
            if (!check(oscar_kv_step_end(cache), "oscar_kv_step_end") || !submit_wait(vk)) goto done;
        }
        for (uint32_t l = 0; l < N_LAYER; l++)
            for (uint32_t i = 0; i < T * N_HEAD * HEAD_DIM; i++) checksum += ((const float *)((const char *)readback.mapped + L.out[l]))[i];
        if (dump && !dump_outputs(&L, T, &readback, dump, step_start)) goto done;
    }
    oscar_kv_stats stats;
    if (!check(oscar_kv_get_stats(cache, &stats), "oscar_kv_get_stats")) goto done;
    printf("%s: %u steps of %u layers, mode %s, %llu INT2 and %llu fp16 tokens cached, output sum %.6f\n", prog, o->steps,
           N_LAYER, oscar_kv_mode_name(o->mode), (unsigned long long)stats.int2_tokens, (unsigned long long)stats.f16_tokens,
           checksum);
    ok = 1;
done:
    if (dump && fclose(dump) != 0) ok = 0;
    /* the library's objects first, then this program's buffers and device */
    oscar_kv_cache_destroy(cache);
    oscar_context_destroy(ctx);
    app_buffer_destroy(vk, &dev);
    app_buffer_destroy(vk, &staging);
    app_buffer_destroy(vk, &readback);
    return ok;
}

static int parse(int argc, char **argv, options *o)
{
    const char *env = getenv("OSCAR_VALIDATION");
    *o = (options){ .mode = OSCAR_KV_INT2, .steps = 24, .validation = env && strcmp(env, "1") == 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--f16-kv") == 0) o->f16_kv = 1;
        else if (strcmp(a, "--flush-in-step-end") == 0) o->flush_in_step_end = 1;
        else if (strcmp(a, "--validation") == 0) o->validation = 1;
        else if (strcmp(a, "--sync-validation") == 0) o->validation = o->sync_validation = 1;
        else if ((strcmp(a, "--mode") == 0 || strcmp(a, "--steps") == 0 || strcmp(a, "--dump") == 0) && !val) {
            fprintf(stderr, "%s: %s needs a value\n", prog, a);
            return 0;
        } else if (strcmp(a, "--mode") == 0) {
            i++;
            if (strcmp(val, "fp16") == 0) o->mode = OSCAR_KV_FP16;
            else if (strcmp(val, "int2") == 0) o->mode = OSCAR_KV_INT2;
            else if (strcmp(val, "int2-hadamard") == 0) o->mode = OSCAR_KV_INT2_HADAMARD;
            else {
                fprintf(stderr, "%s: --mode: '%s' is not fp16, int2 or int2-hadamard\n", prog, val);
                return 0;
            }
        } else if (strcmp(a, "--steps") == 0) {
            char *end;
            unsigned long n = strtoul(val, &end, 10);
            i++;
            if (*end || n < 1 || n > 200) {
                fprintf(stderr, "%s: --steps: '%s' is not a number from 1 to 200\n", prog, val);
                return 0;
            }
            o->steps = (uint32_t)n;
        } else if (strcmp(a, "--dump") == 0) {
            o->dump = argv[++i];
        } else {
            fprintf(stderr, "%s: unknown option '%s' (options: --mode M, --steps N, --f16-kv, --flush-in-step-end, "
                            "--validation, --sync-validation, --dump FILE)\n", prog, a);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, &o)) return 2;
    app_vk vk = { 0 };
    int ok = app_vk_create(&vk, o.validation, o.sync_validation) && run(&vk, &o);
    unsigned messages = vk.messages;
    app_vk_destroy(&vk);
    if (messages) fprintf(stderr, "%s: %u validation messages\n", prog, messages);
    return ok && messages == 0 ? 0 : 1;
}
