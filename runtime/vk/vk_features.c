/* The optional arithmetic a device offers and the context enables (integer dot products, cooperative
 * matrices, fp16), and the choice of a kernel variant per device. Every optional feature only
 * speeds things up: a context without it runs the scalar kernels. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"

/* ---- what the device offers ----------------------------------------------------------------- */
static oscar_scalar_type scalar_type(VkComponentTypeKHR t)
{
    switch ((int)t) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return OSCAR_SCALAR_F16;
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return OSCAR_SCALAR_F32;
    case VK_COMPONENT_TYPE_FLOAT64_KHR: return OSCAR_SCALAR_F64;
    case VK_COMPONENT_TYPE_SINT8_KHR: return OSCAR_SCALAR_S8;
    case VK_COMPONENT_TYPE_SINT16_KHR: return OSCAR_SCALAR_S16;
    case VK_COMPONENT_TYPE_SINT32_KHR: return OSCAR_SCALAR_S32;
    case VK_COMPONENT_TYPE_SINT64_KHR: return OSCAR_SCALAR_S64;
    case VK_COMPONENT_TYPE_UINT8_KHR: return OSCAR_SCALAR_U8;
    case VK_COMPONENT_TYPE_UINT16_KHR: return OSCAR_SCALAR_U16;
    case VK_COMPONENT_TYPE_UINT32_KHR: return OSCAR_SCALAR_U32;
    case VK_COMPONENT_TYPE_UINT64_KHR: return OSCAR_SCALAR_U64;
    case OVK_COMPONENT_TYPE_BFLOAT16: return OSCAR_SCALAR_BF16;
    case OVK_COMPONENT_TYPE_FLOAT8_E4M3: return OSCAR_SCALAR_E4M3;
    case OVK_COMPONENT_TYPE_FLOAT8_E5M2: return OSCAR_SCALAR_E5M2;
    default: return OSCAR_SCALAR_OTHER;
    }
}

static oscar_scope scope_of(VkScopeKHR s)
{
    switch (s) {
    case VK_SCOPE_SUBGROUP_KHR: return OSCAR_SCOPE_SUBGROUP;
    case VK_SCOPE_WORKGROUP_KHR: return OSCAR_SCOPE_WORKGROUP;
    case VK_SCOPE_DEVICE_KHR: return OSCAR_SCOPE_DEVICE;
    case VK_SCOPE_QUEUE_FAMILY_KHR: return OSCAR_SCOPE_QUEUE_FAMILY;
    default: return OSCAR_SCOPE_OTHER;
    }
}

/* The shapes vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR lists, into info (first 48). */
static void coopmat_shapes(VkInstance instance, VkPhysicalDevice pd, oscar_device_info *info)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!get || get(pd, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkCooperativeMatrixPropertiesKHR *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    VkResult r = get(pd, &n, p);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
        for (uint32_t i = 0; i < n && info->coopmat_shape_count < OSCAR_MAX_COOPMAT_SHAPES; i++)
            info->coopmat_shapes[info->coopmat_shape_count++] = (oscar_coopmat_shape){
                .m = p[i].MSize, .n = p[i].NSize, .k = p[i].KSize, .a = scalar_type(p[i].AType),
                .b = scalar_type(p[i].BType), .c = scalar_type(p[i].CType), .result = scalar_type(p[i].ResultType),
                .scope = scope_of(p[i].scope), .saturating = p[i].saturatingAccumulation != VK_FALSE };
    }
    free(p);
}

void ovk_features_query(VkInstance instance, VkPhysicalDevice pd, oscar_device_info *info, ovk_device_caps *caps)
{
    memset(caps, 0, sizeof *caps);
    info->integer_dot_product = info->integer_dot_4x8_signed_accelerated = info->integer_dot_4x8_mixed_accelerated = 0;
    info->cooperative_matrix = 0;
    info->coopmat_shape_count = 0;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) return; /* such a device gets no context anyway */
    caps->has_idot_ext = ovk_device_has_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    caps->has_coopmat_ext = ovk_device_has_extension(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);

    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR };
    VkPhysicalDeviceShaderIntegerDotProductFeatures idf = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES };
    VkPhysicalDeviceVulkan12Features v12f = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceFeatures2 feats = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v12f };
    VkPhysicalDeviceCooperativeMatrixPropertiesKHR cmp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR };
    VkPhysicalDeviceShaderIntegerDotProductProperties idp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES };
    VkPhysicalDeviceProperties2 props2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 };
    if (caps->has_idot_ext) {
        idf.pNext = feats.pNext, feats.pNext = &idf;
        idp.pNext = props2.pNext, props2.pNext = &idp;
    }
    if (caps->has_coopmat_ext) {
        cmf.pNext = feats.pNext, feats.pNext = &cmf;
        cmp.pNext = props2.pNext, props2.pNext = &cmp;
    }
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    if (props2.pNext) vkGetPhysicalDeviceProperties2(pd, &props2);

    /* with the memory model enabled, Device scope (which the other kernels' barriers use) needs
     * the device-scope feature too: both or neither */
    caps->vulkan_memory_model = v12f.vulkanMemoryModel && v12f.vulkanMemoryModelDeviceScope;
    caps->shader_integer_dot_product = caps->has_idot_ext && idf.shaderIntegerDotProduct;
    info->integer_dot_product = caps->shader_integer_dot_product;
    if (info->integer_dot_product) {
        info->integer_dot_4x8_signed_accelerated = idp.integerDotProduct4x8BitPackedSignedAccelerated != VK_FALSE;
        info->integer_dot_4x8_mixed_accelerated = idp.integerDotProduct4x8BitPackedMixedSignednessAccelerated != VK_FALSE;
    }
    caps->cooperative_matrix = caps->has_coopmat_ext && cmf.cooperativeMatrix &&
                               (cmp.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    info->cooperative_matrix = caps->cooperative_matrix;
    if (caps->cooperative_matrix) coopmat_shapes(instance, pd, info);
}

/* ---- what the context enables --------------------------------------------------------------- */
/* The shape the cooperative-matrix kernels use: fp16 A and B, fp32 C and result, one subgroup. */
int ovk_coopmat_shape_f16_f32(const oscar_coopmat_shape *s)
{
    return s->a == OSCAR_SCALAR_F16 && s->b == OSCAR_SCALAR_F16 && s->c == OSCAR_SCALAR_F32 &&
           s->result == OSCAR_SCALAR_F32 && s->scope == OSCAR_SCOPE_SUBGROUP && !s->saturating;
}

int ovk_coopmat_has_f16_shape(const oscar_context *ctx, uint32_t m, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < ctx->info.coopmat_shape_count; i++) {
        const oscar_coopmat_shape *s = &ctx->info.coopmat_shapes[i];
        if (ovk_coopmat_shape_f16_f32(s) && s->m == m && s->n == n && s->k == k) return 1;
    }
    return 0;
}

uint32_t ovk_max_subgroup_size(const oscar_context *ctx)
{
    return ctx->info.max_subgroup_size > ctx->info.subgroup_size ? ctx->info.max_subgroup_size : ctx->info.subgroup_size;
}

void ovk_features_enable(oscar_context *ctx, const ovk_device_caps *caps, ovk_feature_chain *chain,
                         VkPhysicalDeviceVulkan12Features *f12, const char **exts, uint32_t *n_exts)
{
    const ovk_env *t = &ctx->env;
    oscar_device_info *info = &ctx->info;
    ovk_features *f = &ctx->features;
    uint32_t built = ovk_spirv_built();
    memset(f, 0, sizeof *f);

    if (t->disable_f16) {
        f12->shaderFloat16 = VK_FALSE;
        info->float16_arithmetic = 0;
    }
    if (info->float16_arithmetic) f->enabled |= OVK_NEEDS_F16;

    if (caps->shader_integer_dot_product && !t->disable_integer_dot && (built & OVK_NEEDS_IDOT)) {
        exts[(*n_exts)++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
        chain->idot = (VkPhysicalDeviceShaderIntegerDotProductFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES, .pNext = f12->pNext,
            .shaderIntegerDotProduct = VK_TRUE };
        f12->pNext = &chain->idot;
        f->enabled |= OVK_NEEDS_IDOT;
        if (info->integer_dot_4x8_signed_accelerated) f->preferred |= OVK_NEEDS_IDOT;
    } else {
        info->integer_dot_product = info->integer_dot_4x8_signed_accelerated = info->integer_dot_4x8_mixed_accelerated = 0;
    }

    int fp16_shape = 0;
    for (uint32_t i = 0; i < info->coopmat_shape_count; i++) fp16_shape |= ovk_coopmat_shape_f16_f32(&info->coopmat_shapes[i]);
    if (caps->cooperative_matrix && !t->disable_coopmat && (built & OVK_NEEDS_COOPMAT) && fp16_shape &&
        info->float16_arithmetic && info->storage_16bit && caps->vulkan_memory_model) {
        exts[(*n_exts)++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
        chain->coopmat = (VkPhysicalDeviceCooperativeMatrixFeaturesKHR){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .pNext = f12->pNext,
            .cooperativeMatrix = VK_TRUE };
        f12->pNext = &chain->coopmat;
        f12->vulkanMemoryModel = VK_TRUE; /* the coopmat shaders declare the VulkanMemoryModel capability */
        f12->vulkanMemoryModelDeviceScope = VK_TRUE;
        f->enabled |= OVK_NEEDS_COOPMAT;
    } else {
        info->cooperative_matrix = 0;
        info->coopmat_shape_count = 0;
    }
    f->preferred |= f->enabled & (OVK_NEEDS_F16 | OVK_NEEDS_COOPMAT);
}

/* ---- which variant runs ------------------------------------------------------------------- */
static int rank(uint32_t needs)
{
    return ((needs & OVK_NEEDS_COOPMAT) ? 4 : 0) + ((needs & OVK_NEEDS_IDOT) ? 2 : 0) + ((needs & OVK_NEEDS_F16) ? 1 : 0);
}

static int is_variant_of(const char *name, const char *op)
{
    size_t n = strlen(op);
    return strncmp(name, op, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/* Why a variant needing `needs` was passed over, in words. */
static const char *why_not(const oscar_context *ctx, uint32_t needs)
{
    uint32_t missing = needs & ~ctx->features.preferred;
    const ovk_env *t = &ctx->env;
    if (missing & OVK_NEEDS_COOPMAT)
        return t->disable_coopmat ? "OSCAR_DISABLE_COOPMAT=1" : "no fp16 cooperative matrices enabled";
    if (missing & OVK_NEEDS_IDOT) {
        if (t->disable_integer_dot) return "OSCAR_DISABLE_INTEGER_DOT=1";
        return (ctx->features.enabled & OVK_NEEDS_IDOT) ? "integer dot products not accelerated here"
                                                        : "no integer dot products";
    }
    if (missing & OVK_NEEDS_F16) return t->disable_f16 ? "OSCAR_DISABLE_F16=1" : "no fp16 arithmetic";
    return "";
}

static void log_choice(oscar_context *ctx, const char *op, const ovk_spirv_entry *best)
{
    ovk_features *f = &ctx->features;
    for (uint32_t i = 0; i < f->n_logged; i++)
        if (strcmp(f->logged[i], op) == 0) return;
    const ovk_spirv_entry *e = ovk_spirv_entries();
    for (; e->name && !is_variant_of(e->name, op); e++) {}
    if (f->n_logged < OVK_MAX_PICKS && e->name) f->logged[f->n_logged++] = e->name; /* a table string, lives on */
    char passed[512] = "";
    for (e = ovk_spirv_entries(); e->name; e++) {
        if (!is_variant_of(e->name, op) || e == best || (best && rank(e->needs) < rank(best->needs))) continue;
        size_t len = strlen(passed);
        snprintf(passed + len, sizeof passed - len, "; not %s: %s", e->name, why_not(ctx, e->needs));
    }
    fprintf(stderr, "oscar: kernel %s: %s%s\n", op, best ? best->name : "(none)", passed);
}

const char *ovk_pick_variant(oscar_context *ctx, const char *op)
{
    const ovk_spirv_entry *best = NULL;
    for (const ovk_spirv_entry *e = ovk_spirv_entries(); e->name; e++) {
        if (!is_variant_of(e->name, op) || (e->needs & ~ctx->features.preferred)) continue;
        if (!best || rank(e->needs) > rank(best->needs)) best = e;
    }
    if (ctx->env.pipeline_stats) log_choice(ctx, op, best);
    return best ? best->name : NULL;
}

int ovk_variant_usable(const oscar_context *ctx, const char *name)
{
    for (const ovk_spirv_entry *e = ovk_spirv_entries(); e->name; e++)
        if (strcmp(e->name, name) == 0) return (e->needs & ~ctx->features.enabled) == 0;
    return 0;
}

OSCAR_API uint32_t oscar_built_kernels(void)
{
    uint32_t built = ovk_spirv_built();
    return ((built & OVK_NEEDS_IDOT) ? OSCAR_BUILT_INTEGER_DOT : 0) | ((built & OVK_NEEDS_COOPMAT) ? OSCAR_BUILT_COOPMAT : 0);
}

/* ---- validation layers older than an extension -------------------------------------------- */
/* Debian 12's validation layer (1.3.239) predates VK_KHR_cooperative_matrix (headers 1.3.255):
 * it reports the extension's feature and property structures as unknown, the extension as
 * unsupported "by this layer", and cannot parse SPIR-V with its capability (6022), so it also
 * fails the checks it runs on such a module (its capabilities, its specialization). On a
 * device that has the extension all of it is valid. Those messages, and only those, are set
 * aside when such a layer runs: the ones naming the extension, its structures or capability
 * anywhere, and the parse-failure checks only while a cooperative-matrix shader's module and
 * pipeline are being made (ctx->creating_needs). Every other message still counts. */
int ovk_validation_message_predates_layer(const oscar_context *ctx, const char *message)
{
    static const char *const coopmat_marks[] = {
        "VkStructureType (1000506000)", "VkStructureType (1000506001)", "VkStructureType (1000506002)",
        "Invalid capability operand: 6022", "VK_KHR_cooperative_matrix", "SPV_KHR_cooperative_matrix",
    };
    static const char *const unparsed_module_checks[] = {
        "VUID-VkShaderModuleCreateInfo-pCode-01090", /* "Unhandled OpCapability" */
        "VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-06719", /* its spirv-opt fails too */
    };
    if (!ctx || !message || ctx->layer_version == 0 || ctx->layer_version >= VK_MAKE_API_VERSION(0, 1, 3, 255)) return 0;
    for (size_t i = 0; i < sizeof coopmat_marks / sizeof coopmat_marks[0]; i++)
        if (strstr(message, coopmat_marks[i])) return 1;
    if (ctx->creating_needs & OVK_NEEDS_COOPMAT)
        for (size_t i = 0; i < sizeof unparsed_module_checks / sizeof unparsed_module_checks[0]; i++)
            if (strstr(message, unparsed_module_checks[i])) return 1;
    return 0;
}
