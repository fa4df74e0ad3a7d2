/* Compute pipelines from the embedded SPIR-V, specialised by constants, created once per
 * (shader, constants, subgroup size) and kept by the context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"

static int same_desc(const ovk_pipeline_desc *a, const ovk_pipeline_desc *b)
{
    return strcmp(a->shader, b->shader) == 0 && a->n_buffers == b->n_buffers && a->push_size == b->push_size &&
           a->n_spec == b->n_spec && a->required_subgroup_size == b->required_subgroup_size &&
           a->texel_bindings == b->texel_bindings &&
           memcmp(a->spec, b->spec, a->n_spec * sizeof a->spec[0]) == 0;
}

/* OSCAR_SHADER_DIR (a development aid: try a shader variant without rebuilding): the SPIR-V of
 * `name` from DIR/name.spv when that file exists, in *buf (the caller frees it); NULL
 * otherwise, and the embedded code is used. */
static const uint32_t *spirv_override(const oscar_context *ctx, const char *name, size_t *size_bytes, uint32_t **buf)
{
    const char *dir = ctx->env.shader_dir;
    *buf = NULL;
    if (!dir) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.spv", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && n % 4 == 0 && fseek(f, 0, SEEK_SET) == 0 && (*buf = malloc((size_t)n)) &&
        fread(*buf, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        fprintf(stderr, "oscar: shader '%s' from %s\n", name, path);
        *size_bytes = (size_t)n;
        return *buf;
    }
    fclose(f);
    free(*buf);
    *buf = NULL;
    return NULL;
}

/* One line per executable of the pipeline on stderr: its name, spec constants and the
 * driver's statistics (register count, spills, ... whatever the driver reports). */
static void print_stats(oscar_context *ctx, const ovk_pipeline *p)
{
    VkPipelineInfoKHR pi = { .sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = p->pipeline };
    VkPipelineExecutablePropertiesKHR execs[4];
    uint32_t n_exec = 4;
    for (uint32_t i = 0; i < n_exec; i++) execs[i] = (VkPipelineExecutablePropertiesKHR){ .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR };
    if (ctx->vk.vkGetPipelineExecutablePropertiesKHR(ctx->device, &pi, &n_exec, execs) < 0) return;
    for (uint32_t e = 0; e < n_exec; e++) {
        fprintf(stderr, "pipeline %s spec", p->name);
        for (uint32_t i = 0; i < p->desc.n_spec; i++) fprintf(stderr, "%s%u", i ? "," : " ", p->desc.spec[i]);
        VkPipelineExecutableInfoKHR ei = { .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = p->pipeline, .executableIndex = e };
        VkPipelineExecutableStatisticKHR st[32];
        uint32_t n = 32;
        for (uint32_t i = 0; i < n; i++) st[i] = (VkPipelineExecutableStatisticKHR){ .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR };
        if (ctx->vk.vkGetPipelineExecutableStatisticsKHR(ctx->device, &ei, &n, st) < 0) n = 0;
        fprintf(stderr, " (subgroup %u):", execs[e].subgroupSize);
        for (uint32_t i = 0; i < n; i++) {
            fprintf(stderr, " %s=", st[i].name);
            switch (st[i].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(stderr, "%u", st[i].value.b32); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(stderr, "%lld", (long long)st[i].value.i64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: fprintf(stderr, "%llu", (unsigned long long)st[i].value.u64); break;
            default: fprintf(stderr, "%g", st[i].value.f64); break;
            }
        }
        fprintf(stderr, "\n");
    }
}

oscar_status ovk_pipeline_get(oscar_context *ctx, const ovk_pipeline_desc *desc, ovk_pipeline **out)
{
    oscar_status st = OSCAR_OK;
    VkShaderModule module = VK_NULL_HANDLE;
    ovk_pipeline *p = NULL;
    for (ovk_pipeline *q = ctx->pipelines; q; q = q->next)
        if (same_desc(&q->desc, desc)) { *out = q; return OSCAR_OK; }

    if (desc->n_buffers > OSCAR_MAX_BINDINGS || desc->push_size > OSCAR_MAX_PUSH || desc->n_spec > OSCAR_MAX_SPEC ||
        (desc->push_size & 3) || strlen(desc->shader) >= sizeof p->name)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "pipeline '%s': too many bindings, push bytes or constants",
                           desc->shader);
    if (desc->texel_bindings >> desc->n_buffers)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "pipeline '%s': texel-buffer bindings %#x past its %u bindings",
                           desc->shader, desc->texel_bindings, desc->n_buffers);
    if (desc->texel_bindings && !ctx->texel_buffers)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "pipeline '%s' needs R32G32B32A32_UINT uniform texel buffers",
                           desc->shader);
    if (desc->push_size > ctx->limits.maxPushConstantsSize)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "pipeline '%s' needs %u push-constant bytes, device allows %u",
                           desc->shader, desc->push_size, ctx->limits.maxPushConstantsSize);
    if (desc->n_spec > 0 && desc->spec[0] == 0) /* constant 0 is every shader's workgroup size */
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "pipeline '%s': workgroup size 0", desc->shader);
    if (desc->n_spec > 0 && desc->spec[0] > ctx->limits.maxComputeWorkGroupSize[0])
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "pipeline '%s': workgroup size %u exceeds the device's %u",
                           desc->shader, desc->spec[0], ctx->limits.maxComputeWorkGroupSize[0]);
    if (desc->required_subgroup_size &&
        (!ctx->info.subgroup_size_control || desc->required_subgroup_size < ctx->info.min_subgroup_size ||
         desc->required_subgroup_size > ctx->info.max_subgroup_size))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "pipeline '%s': subgroup size %u not available (device: %u..%u%s)",
                           desc->shader, desc->required_subgroup_size, ctx->info.min_subgroup_size,
                           ctx->info.max_subgroup_size, ctx->info.subgroup_size_control ? "" : ", no size control");

    size_t code_size = 0;
    uint32_t *code_buf;
    const uint32_t *code = spirv_override(ctx, desc->shader, &code_size, &code_buf);
    if (!code) code = ovk_spirv_find(desc->shader, &code_size);
    if (!code) OSCAR_RETURN_ERROR(OSCAR_ERROR_SHADER, "no embedded shader named '%s'", desc->shader);

    p = calloc(1, sizeof *p);
    if (!p) {
        free(code_buf);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    p->desc = *desc;
    strcpy(p->name, desc->shader);
    p->desc.shader = p->name;

    VkShaderModuleCreateInfo smci = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = code_size, .pCode = code };
    ctx->creating_needs = ovk_spirv_needs(desc->shader); /* for the validation callback, until the pipeline exists */
    VkResult made = ctx->vk.vkCreateShaderModule(ctx->device, &smci, NULL, &module);
    free(code_buf);
    OSCAR_VK(made);

    VkDescriptorSetLayoutBinding bindings[OSCAR_MAX_BINDINGS];
    for (uint32_t i = 0; i < desc->n_buffers; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){ .binding = i,
                                                      .descriptorType = (desc->texel_bindings >> i) & 1
                                                                            ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                                            : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                      .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
    VkDescriptorSetLayoutCreateInfo dslci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                              .bindingCount = desc->n_buffers, .pBindings = bindings };
    OSCAR_VK(ctx->vk.vkCreateDescriptorSetLayout(ctx->device, &dslci, NULL, &p->set_layout));
    VkPushConstantRange push = { .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = desc->push_size };
    VkPipelineLayoutCreateInfo plci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                        .pSetLayouts = &p->set_layout, .pushConstantRangeCount = desc->push_size ? 1 : 0,
                                        .pPushConstantRanges = &push };
    OSCAR_VK(ctx->vk.vkCreatePipelineLayout(ctx->device, &plci, NULL, &p->layout));

    VkSpecializationMapEntry entries[OSCAR_MAX_SPEC];
    for (uint32_t i = 0; i < desc->n_spec; i++)
        entries[i] = (VkSpecializationMapEntry){ .constantID = i, .offset = i * 4, .size = 4 };
    VkSpecializationInfo spec = { .mapEntryCount = desc->n_spec, .pMapEntries = entries,
                                  .dataSize = desc->n_spec * 4, .pData = p->desc.spec };
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT sgsize = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT,
        .requiredSubgroupSize = desc->required_subgroup_size };
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                   .pNext = desc->required_subgroup_size ? &sgsize : NULL,
                   .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = "main",
                   .pSpecializationInfo = desc->n_spec ? &spec : NULL },
        .layout = p->layout,
    };
    if (ctx->pipeline_stats) cpci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    OSCAR_VK(ctx->vk.vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &cpci, NULL, &p->pipeline));
    ctx->creating_needs = 0;
    ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    if (ctx->pipeline_stats) print_stats(ctx, p);
    p->next = ctx->pipelines;
    ctx->pipelines = p;
    *out = p;
    return OSCAR_OK;
fail:
    ctx->creating_needs = 0;
    if (st == OSCAR_ERROR_VULKAN) st = OSCAR_ERROR_SHADER;
    if (module) ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    if (p) {
        if (p->layout) ctx->vk.vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
        if (p->set_layout) ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, p->set_layout, NULL);
        free(p);
    }
    return st;
}
