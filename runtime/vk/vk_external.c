/* A context on an application's own Vulkan device (include/oscar/vulkan.h): what the device
 * must have, what the application enabled (read from the feature chain and extension list it
 * passed to vkCreateDevice, since a VkDevice cannot be asked), and the context that uses exactly
 * that and owns neither the instance nor the device. */
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"
#include "oscar/vulkan.h"

/* What the application enabled at vkCreateDevice, from its feature chain and extension list. */
typedef struct ext_enabled {
    int f16, int8, int16, int64, storage16, storage8;
    int size_control, full_subgroups;
    int idot, coopmat, memory_model; /* memory_model: vulkanMemoryModel and its device scope */
    int ext_size_control, ext_idot, ext_coopmat, ext_budget;
} ext_enabled;

static int has_name(const oscar_vk_device *d, const char *name)
{
    for (uint32_t i = 0; i < d->enabled_extension_count; i++)
        if (d->enabled_extensions[i] && strcmp(d->enabled_extensions[i], name) == 0) return 1;
    return 0;
}

/* Reads the structures the library knows from the chain and skips the others. */
static void read_enabled(const oscar_vk_device *d, ext_enabled *e)
{
    memset(e, 0, sizeof *e);
    for (const VkBaseInStructure *s = (const VkBaseInStructure *)d->enabled_features; s; s = s->pNext) {
        switch ((int)s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: {
            const VkPhysicalDeviceFeatures2 *f = (const void *)s;
            e->int16 |= f->features.shaderInt16;
            e->int64 |= f->features.shaderInt64;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
            e->storage16 |= ((const VkPhysicalDeviceVulkan11Features *)(const void *)s)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *f = (const void *)s;
            e->f16 |= f->shaderFloat16;
            e->int8 |= f->shaderInt8;
            e->storage8 |= f->storageBuffer8BitAccess;
            e->memory_model |= f->vulkanMemoryModel && f->vulkanMemoryModelDeviceScope;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
            const VkPhysicalDeviceVulkan13Features *f = (const void *)s;
            e->size_control |= f->subgroupSizeControl;
            e->full_subgroups |= f->computeFullSubgroups;
            e->idot |= f->shaderIntegerDotProduct;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
            e->storage16 |= ((const VkPhysicalDevice16BitStorageFeatures *)(const void *)s)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
            e->storage8 |= ((const VkPhysicalDevice8BitStorageFeatures *)(const void *)s)->storageBuffer8BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
            const VkPhysicalDeviceShaderFloat16Int8Features *f = (const void *)s;
            e->f16 |= f->shaderFloat16;
            e->int8 |= f->shaderInt8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES: {
            const VkPhysicalDeviceVulkanMemoryModelFeatures *f = (const void *)s;
            e->memory_model |= f->vulkanMemoryModel && f->vulkanMemoryModelDeviceScope;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES: {
            const VkPhysicalDeviceSubgroupSizeControlFeatures *f = (const void *)s;
            e->size_control |= f->subgroupSizeControl;
            e->full_subgroups |= f->computeFullSubgroups;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES:
            e->idot |= ((const VkPhysicalDeviceShaderIntegerDotProductFeatures *)(const void *)s)->shaderIntegerDotProduct;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR:
            e->coopmat |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesKHR *)(const void *)s)->cooperativeMatrix;
            break;
        default:
            break;
        }
    }
    e->ext_size_control = has_name(d, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    e->ext_idot = has_name(d, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    e->ext_coopmat = has_name(d, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    e->ext_budget = has_name(d, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
}

/* The queue family's properties (count, flags, timestamp bits); 0 when the index is out of range. */
static int queue_family_props(VkPhysicalDevice pd, uint32_t family, VkQueueFamilyProperties *out)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    if (family >= n) return 0;
    VkQueueFamilyProperties *props = calloc(n, sizeof *props);
    if (!props) return 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, props);
    *out = props[family];
    free(props);
    return 1;
}

/* The physical device's position in the instance's enumeration (0 when not found). */
static uint32_t device_index(VkInstance instance, VkPhysicalDevice pd)
{
    uint32_t n = 0, index = 0;
    if (vkEnumeratePhysicalDevices(instance, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    VkResult r = pds ? vkEnumeratePhysicalDevices(instance, &n, pds) : VK_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++)
        if (pds[i] == pd) index = i;
    free(pds);
    return index;
}

/* Checks the description and fills `info` and `caps` with what the physical device has
 * (ovk_query_device), `en` with what the application enabled. Loads the instance's entry points. */
static oscar_status describe(const oscar_vk_device *d, oscar_device_info *info, ovk_device_caps *caps, ext_enabled *en)
{
    oscar_status st = OSCAR_OK;
    if (!d || !d->instance || !d->physical_device || !d->device)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_device: instance, physical_device and device must be set");
    if (d->enabled_extension_count && !d->enabled_extensions)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_device: enabled_extensions is NULL but its count is %u",
                           d->enabled_extension_count);
    if (d->api_version < VK_API_VERSION_1_2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "oscar_vk_device: api_version is %u.%u; OSCAR-VK needs an instance "
                           "created with VkApplicationInfo.apiVersion 1.2 or later",
                           VK_API_VERSION_MAJOR(d->api_version), VK_API_VERSION_MINOR(d->api_version));
    OSCAR_TRY(ovk_loader_init(d->get_instance_proc_addr));
    volkLoadInstanceOnly(d->instance);
    ovk_query_device(d->instance, d->physical_device, device_index(d->instance, d->physical_device), info, NULL, NULL,
                     NULL, NULL, caps);
    if (info->api_version < VK_API_VERSION_1_2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "device '%s' supports Vulkan %u.%u; OSCAR-VK needs 1.2", info->name,
                           VK_API_VERSION_MAJOR(info->api_version), VK_API_VERSION_MINOR(info->api_version));
    VkQueueFamilyProperties qf;
    if (!queue_family_props(d->physical_device, d->queue_family, &qf))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_device: queue_family %u does not exist on '%s'",
                           d->queue_family, info->name);
    if (!(qf.queueFlags & VK_QUEUE_COMPUTE_BIT))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "oscar_vk_device: queue_family %u of '%s' has no compute",
                           d->queue_family, info->name);
    if (d->queue_index >= qf.queueCount)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_device: queue_index %u, but queue_family %u has %u queues",
                           d->queue_index, d->queue_family, qf.queueCount);
    if (!info->subgroup_arithmetic || !info->subgroup_shuffle)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "device '%s' lacks subgroup arithmetic or shuffle operations in "
                           "compute shaders, which decode attention needs", info->name);
    info->timestamps = qf.timestampValidBits > 0 && info->timestamp_period_ns > 0;
    /* the device runs at the lower of its version and the instance's */
    if (d->api_version < info->api_version) info->api_version = d->api_version;
    read_enabled(d, en);
fail:
    return st;
}

/* Appends "name: effect\n" to report when the device has a feature the application left off. */
static void report_off(char *report, size_t size, int has, int enabled, const char *name, const char *effect)
{
    size_t len = strlen(report);
    if (has && !enabled && len < size) snprintf(report + len, size - len, "%s: %s\n", name, effect);
}

OSCAR_API oscar_status oscar_vk_check_device(const oscar_vk_device *d, char *report, size_t size)
{
    oscar_device_info info;
    ovk_device_caps caps;
    ext_enabled en;
    if (report && size) report[0] = '\0';
    oscar_status st = describe(d, &info, &caps, &en);
    if (st != OSCAR_OK || !report || !size) return st;
    int v13 = info.api_version >= VK_API_VERSION_1_3;
    report_off(report, size, info.float16_arithmetic, en.f16, "shaderFloat16", "packed-fp16 attention and products stay fp32");
    report_off(report, size, info.storage_16bit, en.storage16, "storageBuffer16BitAccess",
               "cooperative-matrix products stay off");
    report_off(report, size, info.subgroup_size_control, en.size_control && (v13 || en.ext_size_control),
               v13 ? "subgroupSizeControl" : "subgroupSizeControl with VK_EXT_subgroup_size_control",
               "kernels run at the driver's default subgroup size");
    report_off(report, size, caps.shader_integer_dot_product, en.idot && en.ext_idot,
               "VK_KHR_shader_integer_dot_product with shaderIntegerDotProduct", "int8 dot products run as scalar code");
    report_off(report, size, caps.cooperative_matrix, en.coopmat && en.ext_coopmat,
               "VK_KHR_cooperative_matrix with cooperativeMatrix", "cooperative-matrix products stay off");
    report_off(report, size, caps.cooperative_matrix && caps.vulkan_memory_model, en.memory_model,
               "vulkanMemoryModel with vulkanMemoryModelDeviceScope", "cooperative-matrix products stay off");
    report_off(report, size, info.memory_budget, en.ext_budget, "VK_EXT_memory_budget",
               "oscar_context_device_info reports heap sizes, not budgets");
    return OSCAR_OK;
}

/* Keeps in info and caps only what the application enabled. */
static void restrict_to_enabled(oscar_device_info *info, ovk_device_caps *caps, const ext_enabled *en)
{
    int v13 = info->api_version >= VK_API_VERSION_1_3;
    info->float16_arithmetic &= en->f16;
    info->int8_arithmetic &= en->int8;
    info->int16_arithmetic &= en->int16;
    info->int64_arithmetic &= en->int64;
    info->storage_16bit &= en->storage16;
    info->storage_8bit &= en->storage8;
    if (!(info->subgroup_size_control && en->size_control && (v13 || en->ext_size_control))) {
        info->subgroup_size_control = info->compute_full_subgroups = 0;
        info->min_subgroup_size = info->max_subgroup_size = info->subgroup_size;
    }
    info->compute_full_subgroups &= en->full_subgroups;
    info->memory_budget &= en->ext_budget;
    caps->shader_integer_dot_product &= en->idot && en->ext_idot;
    caps->cooperative_matrix &= en->coopmat && en->ext_coopmat;
    caps->vulkan_memory_model &= en->memory_model;
}

OSCAR_API oscar_status oscar_vk_context_create(const oscar_vk_device *d, const oscar_context_params *params,
                                              oscar_context **out)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_context_create: out is NULL");
    *out = NULL;
    ctx = calloc(1, sizeof *ctx);
    if (!ctx) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    ctx->external = 1;
    ovk_env_read(&ctx->env);
    ovk_device_caps caps;
    ext_enabled en;
    OSCAR_TRY(describe(d, &ctx->info, &caps, &en));
    restrict_to_enabled(&ctx->info, &caps, &en);
    /* the variants the enabled features allow (and the environment's OSCAR_DISABLE_*); the
     * structures and names it would chain into a vkCreateDevice are not used */
    ovk_feature_chain unused_chain;
    VkPhysicalDeviceVulkan12Features unused_f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    const char *unused_exts[2];
    uint32_t n_unused = 0;
    ovk_features_enable(ctx, &caps, &unused_chain, &unused_f12, unused_exts, &n_unused);
    ctx->instance = d->instance;
    ctx->physical = d->physical_device;
    ctx->device = d->device;
    ctx->queue_family = d->queue_family;
    ctx->queue_index = d->queue_index;
    ctx->print_validation = 1;
    OSCAR_TRY(ovk_context_open(ctx, params ? params->pipeline_cache_path : NULL));
    *out = ctx;
    return OSCAR_OK;
fail:
    oscar_context_destroy(ctx);
    return st;
}
