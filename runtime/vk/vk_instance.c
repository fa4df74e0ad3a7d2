/* The Vulkan loader, instance, validation, device listing and choice, capabilities, and the
 * context's lifetime. */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"

/* ---- loader ------------------------------------------------------------------------------ */
/* One loader per process: the first context decides, either an application's
 * vkGetInstanceProcAddr (oscar_vk_context_create) or the library opened with dlopen. */
static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static int loader_tried;
static PFN_vkGetInstanceProcAddr loader_gipa;
static oscar_status loader_status = OSCAR_ERROR_NO_LOADER;
static char loader_error[512];

/* Loads the Vulkan loader library: OSCAR_VULKAN_LIBRARY names another path (used to test a
 * machine without one, and to point at a carried loader). */
static void load_loader(void)
{
    const char *path = getenv("OSCAR_VULKAN_LIBRARY");
    if (!path || !*path) path = "libvulkan.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(loader_error, sizeof loader_error, "no Vulkan loader: cannot load %s (%s)", path, dlerror());
        return;
    }
    PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    if (!gipa) {
        snprintf(loader_error, sizeof loader_error, "no Vulkan loader: %s has no vkGetInstanceProcAddr", path);
        return;
    }
    volkInitializeCustom(gipa);
    loader_gipa = gipa;
    loader_status = OSCAR_OK;
}

/* 1 when two vkGetInstanceProcAddr lead to the same loader. The pointers themselves may differ
 * for one loader (a non-PIE program's canonical PLT entry against the library's own symbol),
 * the global commands they return do not. */
static int same_loader(PFN_vkGetInstanceProcAddr a, PFN_vkGetInstanceProcAddr b)
{
    if (a == b) return 1;
    PFN_vkVoidFunction fa = a(VK_NULL_HANDLE, "vkCreateInstance"), fb = b(VK_NULL_HANDLE, "vkCreateInstance");
    return fa && fa == fb;
}

oscar_status ovk_loader_init(PFN_vkGetInstanceProcAddr app_gipa)
{
    oscar_status st = OSCAR_OK;
    pthread_mutex_lock(&loader_lock);
    if (app_gipa && (!loader_tried || loader_status != OSCAR_OK)) {
        volkInitializeCustom(app_gipa);
        loader_gipa = app_gipa;
        loader_status = OSCAR_OK;
    } else if (!loader_tried) {
        load_loader();
    }
    loader_tried = 1;
    if (loader_status != OSCAR_OK)
        st = ovk_error_set(loader_status, __FILE__, __LINE__, "%s", loader_error);
    else if (app_gipa && !same_loader(app_gipa, loader_gipa))
        st = ovk_error_set(OSCAR_ERROR_INVALID_STATE, __FILE__, __LINE__,
                           "oscar_vk_device: get_instance_proc_addr leads to another Vulkan loader than the one "
                           "this process already uses (an earlier context's); a process uses one loader");
    pthread_mutex_unlock(&loader_lock);
    return st;
}

/* ---- VkResult -> status ------------------------------------------------------------------- */
const char *ovk_vk_result_string(VkResult r)
{
    switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
    R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY) R(VK_ERROR_INITIALIZATION_FAILED)
    R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT)
    R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER)
    R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL)
    R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_INVALID_SHADER_NV) R(VK_ERROR_UNKNOWN)
#undef R
    default: return "VK_ERROR_(other)";
    }
}

oscar_status ovk_status_from_vk(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return OSCAR_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY: return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return OSCAR_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_DEVICE_LOST: return OSCAR_ERROR_DEVICE_LOST;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT: return OSCAR_ERROR_MISSING_FEATURE;
    case VK_ERROR_INCOMPATIBLE_DRIVER: return OSCAR_ERROR_NO_DEVICE;
    default: return OSCAR_ERROR_VULKAN;
    }
}

/* ---- validation messages ------------------------------------------------------------------ */
static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                       VkDebugUtilsMessageTypeFlagsEXT type,
                                                       const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                       void *user)
{
    oscar_context *ctx = user;
    if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        if (ovk_validation_message_predates_layer(ctx, data ? data->pMessage : NULL)) {
            /* counted apart and not printed: the layer cannot judge what it does not know, and
             * an app's stderr stays one line per problem; OSCAR_PIPELINE_STATS=1 shows them */
            __atomic_add_fetch(&ctx->validation_ignored, 1, __ATOMIC_RELAXED);
            if (ctx->print_validation && ctx->env.pipeline_stats)
                fprintf(stderr, "oscar: validation message not counted (the layer, %u.%u.%u, predates an extension "
                                "the device has): %.200s\n", VK_API_VERSION_MAJOR(ctx->layer_version),
                        VK_API_VERSION_MINOR(ctx->layer_version), VK_API_VERSION_PATCH(ctx->layer_version), data->pMessage);
            return VK_FALSE;
        }
        __atomic_add_fetch(&ctx->validation_messages, 1, __ATOMIC_RELAXED);
        if (ctx->print_validation)
            fprintf(stderr, "oscar: validation %s: %s\n",
                    (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning",
                    data && data->pMessage ? data->pMessage : "(no message)");
    }
    (void)type;
    return VK_FALSE;
}

/* The Vulkan version a layer was built for (its specVersion), or 0 when it is not installed. */
static uint32_t instance_layer_version(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkLayerProperties *props = calloc(n, sizeof *props);
    uint32_t found = 0;
    if (props && vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (strcmp(props[i].layerName, name) == 0) found = props[i].specVersion ? props[i].specVersion : 1;
    free(props);
    return found;
}

static int instance_has_extension(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    int found = 0;
    if (props && vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

/* Creates an instance for Vulkan 1.2; with validation, the Khronos layer and a messenger
 * reporting to ctx (ctx may be NULL when only listing devices). */
static oscar_status create_instance(oscar_context *ctx, int validation, VkInstance *out,
                                    VkDebugUtilsMessengerEXT *messenger)
{
    oscar_status st = OSCAR_OK;
    *out = VK_NULL_HANDLE;
    if (messenger) *messenger = VK_NULL_HANDLE;
    if ((st = ovk_loader_init(NULL)) != OSCAR_OK) return st;
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_NO_DEVICE, "the Vulkan loader is older than 1.1");

    const char *layers[1], *exts[2];
    uint32_t n_layers = 0, n_exts = 0;
    if (validation) {
        uint32_t layer_version = instance_layer_version("VK_LAYER_KHRONOS_validation");
        if (ctx) ctx->layer_version = layer_version;
        if (!layer_version)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE,
                               "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                               "(Debian: apt-get install vulkan-validationlayers)");
        layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
        if (instance_has_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
            exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "oscar-vk",
        .applicationVersion = OSCAR_VERSION_NUMBER,
        .pEngineName = "oscar-vk",
        .engineVersion = OSCAR_VERSION_NUMBER,
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug_message,
        .pUserData = ctx,
    };
    int with_messenger = ctx && n_exts > 0;
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = with_messenger ? &dbg : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    VkInstance instance = VK_NULL_HANDLE;
    OSCAR_VK(vkCreateInstance(&ci, NULL, &instance));
    volkLoadInstanceOnly(instance);
    if (with_messenger && messenger)
        OSCAR_VK(vkCreateDebugUtilsMessengerEXT(instance, &dbg, NULL, messenger));
    *out = instance;
    return OSCAR_OK;
fail:
    if (st == OSCAR_ERROR_NO_DEVICE || st == OSCAR_ERROR_VULKAN)
        st = ovk_error_set(OSCAR_ERROR_NO_DEVICE, __FILE__, __LINE__,
                             "no Vulkan driver could be started (vkCreateInstance failed: is a driver such as "
                             "mesa-vulkan-drivers installed?)");
    if (instance) vkDestroyInstance(instance, NULL);
    return st;
}

/* ---- capabilities ------------------------------------------------------------------------- */
int ovk_device_has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    int found = 0;
    if (props && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";
    default: return "unknown";
    }
}

static uint32_t find_compute_queue_family(VkPhysicalDevice pd, uint32_t *timestamp_bits)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties props[32];
    if (n > 32) n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, props);
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (!(props[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        /* a compute family that also does graphics is the main queue on most drivers */
        if (best == UINT32_MAX || (props[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) best = i;
    }
    if (best != UINT32_MAX && timestamp_bits) *timestamp_bits = props[best].timestampValidBits;
    return best;
}

/* Fills `info` (and, when given, the feature structs to enable and the optional arithmetic's
 * capabilities) for a physical device of `instance`. */
void ovk_query_device(VkInstance instance, VkPhysicalDevice pd, uint32_t index, oscar_device_info *info,
                      VkPhysicalDeviceVulkan11Features *f11, VkPhysicalDeviceVulkan12Features *f12,
                      VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *fsc, VkPhysicalDeviceFeatures *f10,
                      ovk_device_caps *caps)
{
    memset(info, 0, sizeof *info);
    info->index = index;

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    int v12 = props.apiVersion >= VK_API_VERSION_1_2;
    int has_sc = props.apiVersion >= VK_API_VERSION_1_3 || ovk_device_has_extension(pd, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);

    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sc_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT };
    VkPhysicalDeviceDriverProperties driver = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                                .pNext = has_sc ? &sc_props : NULL };
    VkPhysicalDeviceSubgroupProperties sg = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = v12 ? (void *)&driver : (has_sc ? (void *)&sc_props : NULL) };
    VkPhysicalDeviceProperties2 props2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg };
    vkGetPhysicalDeviceProperties2(pd, &props2);

    snprintf(info->name, sizeof info->name, "%s", props.deviceName);
    info->type = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? OSCAR_DEVICE_DISCRETE_GPU
                 : props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? OSCAR_DEVICE_INTEGRATED_GPU
                 : props.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU    ? OSCAR_DEVICE_VIRTUAL_GPU
                 : props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU            ? OSCAR_DEVICE_CPU
                                                                              : OSCAR_DEVICE_OTHER;
    info->vendor_id = props.vendorID;
    info->device_id = props.deviceID;
    snprintf(info->vendor_name, sizeof info->vendor_name, "%s", vendor_name(props.vendorID));
    if (v12) {
        snprintf(info->driver_name, sizeof info->driver_name, "%s", driver.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", driver.driverInfo);
    }
    info->api_version = props.apiVersion;
    info->driver_version = props.driverVersion;
    info->subgroup_size = sg.subgroupSize;
    info->min_subgroup_size = info->max_subgroup_size = sg.subgroupSize;
    info->max_shared_memory = props.limits.maxComputeSharedMemorySize;
    info->max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    info->max_storage_buffer_range = props.limits.maxStorageBufferRange;
    int compute_stage = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    info->subgroup_basic = compute_stage && (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    info->subgroup_arithmetic = compute_stage && (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    info->subgroup_shuffle = compute_stage && (sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    info->subgroup_ballot = compute_stage && (sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);

    /* features */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT };
    VkPhysicalDeviceVulkan12Features v12f = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                              .pNext = has_sc ? &sc : NULL };
    VkPhysicalDeviceVulkan11Features v11f = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                              .pNext = &v12f };
    VkPhysicalDeviceFeatures2 feats = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = v12 ? (void *)&v11f : NULL };
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    if (v12) {
        info->float16_arithmetic = v12f.shaderFloat16;
        info->int8_arithmetic = v12f.shaderInt8;
        info->storage_8bit = v12f.storageBuffer8BitAccess;
        info->storage_16bit = v11f.storageBuffer16BitAccess;
    }
    info->int16_arithmetic = feats.features.shaderInt16;
    info->int64_arithmetic = feats.features.shaderInt64;
    if (has_sc && sc.subgroupSizeControl) {
        info->subgroup_size_control = 1;
        info->compute_full_subgroups = sc.computeFullSubgroups;
        if (sc_props.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) {
            info->min_subgroup_size = sc_props.minSubgroupSize;
            info->max_subgroup_size = sc_props.maxSubgroupSize;
        } else {
            info->subgroup_size_control = 0;
        }
    }
    uint32_t ts_bits = 0;
    find_compute_queue_family(pd, &ts_bits);
    info->timestamps = ts_bits > 0 && props.limits.timestampPeriod > 0;
    info->timestamp_period_ns = props.limits.timestampPeriod;
    info->memory_budget = ovk_device_has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    ovk_device_caps caps_here;
    ovk_features_query(instance, pd, info, caps ? caps : &caps_here);

    /* memory heaps and budget */
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT };
    VkPhysicalDeviceMemoryProperties2 mem = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                              .pNext = info->memory_budget ? &budget : NULL };
    vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
    info->heap_count = mem.memoryProperties.memoryHeapCount < OSCAR_MAX_HEAPS ? mem.memoryProperties.memoryHeapCount : OSCAR_MAX_HEAPS;
    for (uint32_t i = 0; i < info->heap_count; i++) {
        info->heaps[i].size = mem.memoryProperties.memoryHeaps[i].size;
        info->heaps[i].device_local = (mem.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
        info->heaps[i].budget = info->memory_budget ? budget.heapBudget[i] : info->heaps[i].size;
        info->heaps[i].usage = info->memory_budget ? budget.heapUsage[i] : 0;
    }

    /* What to enable: everything optional that is present (each has a fallback). */
    if (f10) {
        memset(f10, 0, sizeof *f10);
        f10->shaderInt16 = feats.features.shaderInt16;
        f10->shaderInt64 = feats.features.shaderInt64;
    }
    if (f11 && v12) {
        f11->storageBuffer16BitAccess = v11f.storageBuffer16BitAccess;
    }
    if (f12 && v12) {
        f12->shaderFloat16 = v12f.shaderFloat16;
        f12->shaderInt8 = v12f.shaderInt8;
        f12->storageBuffer8BitAccess = v12f.storageBuffer8BitAccess;
    }
    if (fsc) {
        fsc->subgroupSizeControl = info->subgroup_size_control;
        fsc->computeFullSubgroups = info->compute_full_subgroups;
    }
}

static oscar_status enumerate(VkInstance instance, VkPhysicalDevice **out, uint32_t *count)
{
    oscar_status st = OSCAR_OK;
    uint32_t n = 0;
    *out = NULL;
    OSCAR_VK(vkEnumeratePhysicalDevices(instance, &n, NULL));
    if (n == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_NO_DEVICE, "the Vulkan loader found no device");
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    if (!pds) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(pds);
        OSCAR_RETURN_ERROR(ovk_status_from_vk(r), "vkEnumeratePhysicalDevices failed: %s", ovk_vk_result_string(r));
    }
    *out = pds;
    *count = n;
    return OSCAR_OK;
fail:
    return st;
}

OSCAR_API oscar_status oscar_list_devices(oscar_device_info *out, uint32_t *count)
{
    if (!count) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_list_devices: count is NULL");
    VkInstance instance;
    oscar_status st = create_instance(NULL, 0, &instance, NULL);
    if (st != OSCAR_OK) return st;
    VkPhysicalDevice *pds = NULL;
    uint32_t n = 0;
    st = enumerate(instance, &pds, &n);
    if (st == OSCAR_OK) {
        for (uint32_t i = 0; out && i < n && i < *count; i++)
            ovk_query_device(instance, pds[i], i, &out[i], NULL, NULL, NULL, NULL, NULL);
        *count = n;
    }
    free(pds);
    vkDestroyInstance(instance, NULL);
    return st;
}

/* ---- device choice ------------------------------------------------------------------------ */
static int type_rank(oscar_device_type t)
{
    switch (t) {
    case OSCAR_DEVICE_DISCRETE_GPU: return 4;
    case OSCAR_DEVICE_INTEGRATED_GPU: return 3;
    case OSCAR_DEVICE_VIRTUAL_GPU: return 2;
    case OSCAR_DEVICE_CPU: return 1;
    default: return 0;
    }
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

/* Picks a device: by index or name substring when `want` is set, else the best type. */
static oscar_status choose_device(const oscar_device_info *infos, uint32_t n, const char *want, uint32_t *chosen)
{
    if (want && *want) {
        char *end;
        unsigned long idx = strtoul(want, &end, 10);
        if (*end == '\0' && end != want) {
            if (idx < n) { *chosen = (uint32_t)idx; return OSCAR_OK; }
        } else {
            for (uint32_t i = 0; i < n; i++)
                if (contains_nocase(infos[i].name, want)) { *chosen = i; return OSCAR_OK; }
        }
        char list[1024] = "";
        for (uint32_t i = 0; i < n; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%u: %s", i ? ", " : "", i, infos[i].name);
        }
        OSCAR_RETURN_ERROR(OSCAR_ERROR_DEVICE_NOT_FOUND, "no Vulkan device matches '%s'; devices: %s", want, list);
    }
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (type_rank(infos[i].type) > type_rank(infos[best].type)) best = i;
    *chosen = best;
    return OSCAR_OK;
}

/* ---- context ------------------------------------------------------------------------------ */
OSCAR_API oscar_context_params oscar_context_params_default(void)
{
    oscar_context_params p = { .device = NULL, .validation = 0, .print_validation_messages = 1,
                               .pipeline_cache_path = NULL };
    return p;
}

static oscar_status load_pipeline_cache(oscar_context *ctx, const char *path)
{
    oscar_status st = OSCAR_OK;
    void *data = NULL;
    size_t size = 0;
    if (path) {
        ctx->pipeline_cache_path = strdup(path);
        FILE *f = fopen(path, "rb");
        if (f) { /* a missing or unreadable cache is not an error: it is rebuilt */
            if (fseek(f, 0, SEEK_END) == 0) {
                long len = ftell(f);
                if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)len)) &&
                    fread(data, 1, (size_t)len, f) == (size_t)len)
                    size = (size_t)len;
            }
            fclose(f);
        }
    }
    VkPipelineCacheCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                     .initialDataSize = size, .pInitialData = size ? data : NULL };
    VkResult r = ctx->vk.vkCreatePipelineCache(ctx->device, &ci, NULL, &ctx->pipeline_cache);
    if (r != VK_SUCCESS && size) { /* stale or foreign data: start empty */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = ctx->vk.vkCreatePipelineCache(ctx->device, &ci, NULL, &ctx->pipeline_cache);
    }
    OSCAR_VK(r);
fail:
    free(data);
    return st;
}

static void save_pipeline_cache(oscar_context *ctx)
{
    if (!ctx->pipeline_cache || !ctx->pipeline_cache_path) return;
    size_t size = 0;
    if (ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, NULL) != VK_SUCCESS || !size) return;
    void *data = malloc(size);
    if (data && ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, data) == VK_SUCCESS) {
        FILE *f = fopen(ctx->pipeline_cache_path, "wb");
        if (f) {
            fwrite(data, 1, size, f);
            fclose(f);
        }
    }
    free(data);
}

/* The part of a context's creation that follows vkCreateDevice (ctx->device, physical,
 * queue_family and queue_index set): device entry points, queue, memory properties, limits,
 * pipeline cache, profiles, the context's own stream. Shared with oscar_vk_context_create. */
oscar_status ovk_context_open(oscar_context *ctx, const char *pipeline_cache_path)
{
    oscar_status st = OSCAR_OK;
    volkLoadDeviceTable(&ctx->vk, ctx->device);
    ctx->vk.vkGetDeviceQueue(ctx->device, ctx->queue_family, ctx->queue_index, &ctx->queue);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->mem_props);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(ctx->physical, &props);
    ctx->limits = props.limits;
    VkFormatProperties texel;
    vkGetPhysicalDeviceFormatProperties(ctx->physical, VK_FORMAT_R32G32B32A32_UINT, &texel);
    ctx->texel_buffers = (texel.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;

    OSCAR_TRY(load_pipeline_cache(ctx, pipeline_cache_path));
    /* OSCAR_PROFILE=1: GPU time per shader and host time per step phase; =host: the host's only
     * (no timestamp after each dispatch, so the GPU runs as it does unprofiled) */
    if (ctx->env.profile) {
        int host_only = ctx->env.profile == 2;
        if ((!host_only && ctx->info.timestamps && !(ctx->profile = calloc(1, sizeof *ctx->profile))) ||
            !(ctx->host_profile = calloc(1, sizeof *ctx->host_profile)))
            OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    OSCAR_TRY(ovk_cmd_init(ctx, &ctx->cmd));
fail:
    return st;
}

OSCAR_API oscar_status oscar_context_create(const oscar_context_params *params, oscar_context **out)
{
    oscar_status st = OSCAR_OK;
    oscar_context_params p = params ? *params : oscar_context_params_default();
    VkPhysicalDevice *pds = NULL;
    oscar_device_info *infos = NULL;
    oscar_context *ctx = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_context_create: out is NULL");
    *out = NULL;

    ctx = calloc(1, sizeof *ctx);
    if (!ctx) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    ovk_env_read(&ctx->env);
    ctx->validation = p.validation || ctx->env.validation;
    ctx->print_validation = p.print_validation_messages;
    OSCAR_TRY(create_instance(ctx, ctx->validation, &ctx->instance, &ctx->messenger));

    uint32_t n = 0;
    OSCAR_TRY(enumerate(ctx->instance, &pds, &n));
    infos = calloc(n, sizeof *infos);
    if (!infos) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < n; i++) ovk_query_device(ctx->instance, pds[i], i, &infos[i], NULL, NULL, NULL, NULL, NULL);
    const char *want = ctx->env.device ? ctx->env.device : p.device;
    uint32_t chosen = 0;
    OSCAR_TRY(choose_device(infos, n, want, &chosen));
    ctx->physical = pds[chosen];

    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT fsc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12 };
    VkPhysicalDeviceFeatures f10;
    ovk_device_caps caps;
    ovk_query_device(ctx->instance, ctx->physical, chosen, &ctx->info, &f11, &f12, &fsc, &f10, &caps);
    if (ctx->info.api_version < VK_API_VERSION_1_2)
        OSCAR_FAIL(OSCAR_ERROR_MISSING_FEATURE, "device '%s' supports Vulkan %u.%u; OSCAR-VK needs 1.2",
                   ctx->info.name, VK_API_VERSION_MAJOR(ctx->info.api_version), VK_API_VERSION_MINOR(ctx->info.api_version));

    uint32_t ts_bits = 0;
    ctx->queue_family = find_compute_queue_family(ctx->physical, &ts_bits);
    if (ctx->queue_family == UINT32_MAX)
        OSCAR_FAIL(OSCAR_ERROR_MISSING_FEATURE, "device '%s' has no compute queue", ctx->info.name);

    const char *dev_exts[5];
    uint32_t n_dev_exts = 0;
    /* compiler statistics of each pipeline (registers, spills, ...) on request, for tuning */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fpe = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, .pNext = f12.pNext,
        .pipelineExecutableInfo = VK_TRUE };
    if (ctx->env.pipeline_stats && ovk_device_has_extension(ctx->physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
        dev_exts[n_dev_exts++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        f12.pNext = &fpe;
        ctx->pipeline_stats = 1;
    }
    if (ctx->info.memory_budget) dev_exts[n_dev_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    int sc_ext = ctx->info.subgroup_size_control && ctx->info.api_version < VK_API_VERSION_1_3;
    if (sc_ext) dev_exts[n_dev_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    if (ctx->info.subgroup_size_control) {
        fsc.pNext = f12.pNext;
        f12.pNext = &fsc;
    }
    ovk_feature_chain chain; /* integer dot products, cooperative matrices: what the device has and the build uses */
    ovk_features_enable(ctx, &caps, &chain, &f12, dev_exts, &n_dev_exts);

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                    .queueFamilyIndex = ctx->queue_family, .queueCount = 1,
                                    .pQueuePriorities = &priority };
    VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f11,
                               .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
                               .enabledExtensionCount = n_dev_exts, .ppEnabledExtensionNames = dev_exts,
                               .pEnabledFeatures = &f10 };
    OSCAR_VK(vkCreateDevice(ctx->physical, &dci, NULL, &ctx->device));
    OSCAR_TRY(ovk_context_open(ctx, p.pipeline_cache_path));

    free(pds);
    free(infos);
    *out = ctx;
    return OSCAR_OK;
fail:
    free(pds);
    free(infos);
    oscar_context_destroy(ctx);
    return st;
}

OSCAR_API void oscar_context_destroy(oscar_context *ctx)
{
    if (!ctx) return;
    if (ctx->device) {
        /* an application's device may be busy with its own work: wait for ours only */
        if (!ctx->external) ctx->vk.vkDeviceWaitIdle(ctx->device);
        ovk_cmd_release(ctx, &ctx->cmd);
        ovk_profile_print(ctx->profile, "GPU time per shader (a timestamp after every dispatch serializes them)", stderr);
        ovk_profile_print(ctx->host_profile, "host time per phase of a forward step (submit+wait includes the GPU's)", stderr);
        ovk_buffer_destroy(ctx, &ctx->staging);
        for (ovk_pipeline *p = ctx->pipelines, *next; p; p = next) {
            next = p->next;
            ctx->vk.vkDestroyPipeline(ctx->device, p->pipeline, NULL);
            ctx->vk.vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
            ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, p->set_layout, NULL);
            free(p);
        }
        save_pipeline_cache(ctx);
        if (ctx->pipeline_cache) ctx->vk.vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, NULL);
        if (!ctx->external) ctx->vk.vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->messenger) vkDestroyDebugUtilsMessengerEXT(ctx->instance, ctx->messenger, NULL);
    if (ctx->instance && !ctx->external) vkDestroyInstance(ctx->instance, NULL);
    free(ctx->pipeline_cache_path);
    free(ctx->profile);
    free(ctx->host_profile);
    free(ctx);
}

OSCAR_API oscar_status oscar_context_device_info(oscar_context *ctx, oscar_device_info *out)
{
    if (!ctx || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_context_device_info: NULL argument");
    *out = ctx->info;
    if (ctx->info.memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT };
        VkPhysicalDeviceMemoryProperties2 mem = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &budget };
        vkGetPhysicalDeviceMemoryProperties2(ctx->physical, &mem);
        for (uint32_t i = 0; i < out->heap_count; i++) {
            out->heaps[i].budget = budget.heapBudget[i];
            out->heaps[i].usage = budget.heapUsage[i];
        }
    }
    return OSCAR_OK;
}

OSCAR_API uint64_t oscar_context_validation_messages(const oscar_context *ctx)
{
    return ctx ? __atomic_load_n(&ctx->validation_messages, __ATOMIC_RELAXED) : 0;
}
