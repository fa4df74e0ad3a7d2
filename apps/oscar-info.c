/* oscar-info: lists the Vulkan devices OSCAR-VK can use with what each offers, then what a
 * context on the chosen device enables (after the OSCAR_DISABLE_* variables and what this build
 * compiled) and, with --bandwidth, measures the device's read bandwidth (the roofline every
 * benchmark quotes).
 *
 *   oscar-info [--device NAME|INDEX] [--bandwidth [MIB]] [--verbose]
 *
 * The bandwidth buffer is at most what one storage binding may cover on the device (128 MiB
 * on lavapipe): a larger --bandwidth is cut to that with a note, and the line printed names
 * the size actually measured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --bandwidth is a benchmark tool of the experimental interface */
#define OSCAR_EXPERIMENTAL
#include "oscar/experimental.h"
#include "common/app_common.h"
#include "common/app_io.h"
#include "oscar/oscar.h"

static const char *type_name(oscar_device_type t)
{
    switch (t) {
    case OSCAR_DEVICE_DISCRETE_GPU: return "discrete GPU";
    case OSCAR_DEVICE_INTEGRATED_GPU: return "integrated GPU";
    case OSCAR_DEVICE_VIRTUAL_GPU: return "virtual GPU";
    case OSCAR_DEVICE_CPU: return "CPU";
    default: return "other";
    }
}

static const char *scalar_name(oscar_scalar_type t)
{
    static const char *const names[] = { "?", "f16", "f32", "f64", "bf16", "e4m3", "e5m2", "s8", "s16", "s32",
                                          "s64", "u8", "u16", "u32", "u64" };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static const char *scope_name(oscar_scope s)
{
    switch (s) {
    case OSCAR_SCOPE_SUBGROUP: return "subgroup";
    case OSCAR_SCOPE_WORKGROUP: return "workgroup";
    case OSCAR_SCOPE_DEVICE: return "device";
    case OSCAR_SCOPE_QUEUE_FAMILY: return "queue family";
    default: return "other scope";
    }
}

/* Integer dot products and cooperative matrices: what the device has (listing) or what the
 * context enabled (selected). */
static void print_fast_paths(const oscar_device_info *d)
{
    if (d->integer_dot_product)
        printf("  integer dot     yes; 4x8 packed signed %saccelerated, mixed signedness %saccelerated\n",
               d->integer_dot_4x8_signed_accelerated ? "" : "not ", d->integer_dot_4x8_mixed_accelerated ? "" : "not ");
    else
        printf("  integer dot     no\n");
    if (!d->cooperative_matrix) {
        printf("  coopmat         no\n");
        return;
    }
    printf("  coopmat         yes, %u shapes (M x N x K: A x B + C -> result)\n", d->coopmat_shape_count);
    for (uint32_t i = 0; i < d->coopmat_shape_count; i++) {
        const oscar_coopmat_shape *s = &d->coopmat_shapes[i];
        printf("    %3u x %3u x %3u  %s x %s + %s -> %s, %s%s\n", s->m, s->n, s->k, scalar_name(s->a), scalar_name(s->b),
               scalar_name(s->c), scalar_name(s->result), scope_name(s->scope), s->saturating ? ", saturating" : "");
    }
}

static void print_device(const oscar_device_info *d)
{
    printf("device %u: %s\n", d->index, d->name);
    printf("  type            %s\n", type_name(d->type));
    printf("  vendor          %s (0x%04x), device 0x%04x\n", d->vendor_name, d->vendor_id, d->device_id);
    printf("  driver          %s %s\n", d->driver_name, d->driver_info);
    printf("  Vulkan          %u.%u.%u\n", d->api_version >> 22, (d->api_version >> 12) & 0x3FF, d->api_version & 0xFFF);
    printf("  subgroup size   %u (min %u, max %u%s)\n", d->subgroup_size, d->min_subgroup_size, d->max_subgroup_size,
           d->subgroup_size_control ? ", size control" : "");
    printf("  subgroup ops    basic %d, arithmetic %d, shuffle %d, ballot %d\n", d->subgroup_basic,
           d->subgroup_arithmetic, d->subgroup_shuffle, d->subgroup_ballot);
    printf("  shared memory   %u bytes per workgroup, %u invocations max\n", d->max_shared_memory, d->max_workgroup_invocations);
    printf("  storage binding %llu bytes max\n", (unsigned long long)d->max_storage_buffer_range);
    printf("  arithmetic      fp16 %d, int8 %d, int16 %d, int64 %d\n", d->float16_arithmetic, d->int8_arithmetic,
           d->int16_arithmetic, d->int64_arithmetic);
    printf("  storage         16-bit %d, 8-bit %d\n", d->storage_16bit, d->storage_8bit);
    print_fast_paths(d);
    printf("  timestamps      %d (%.3f ns per tick)\n", d->timestamps, d->timestamp_period_ns);
    printf("  memory budget   %s\n", d->memory_budget ? "VK_EXT_memory_budget" : "not reported (heap size used)");
    for (uint32_t h = 0; h < d->heap_count; h++)
        printf("  heap %u          %8.2f GiB%s, budget %.2f GiB, used %.2f GiB\n", h, d->heaps[h].size / 1073741824.0,
               d->heaps[h].device_local ? " device-local" : "", d->heaps[h].budget / 1073741824.0,
               d->heaps[h].usage / 1073741824.0);
}

static void print_help(FILE *f)
{
    fprintf(f, "usage: oscar-info [--device NAME|INDEX] [--bandwidth [MIB]] [--verbose]\n"
               "  lists the Vulkan devices; with --device, also the one a context selects\n"
               "  --device NAME|INDEX  a device by index or by part of its name (also OSCAR_DEVICE)\n"
               "  --bandwidth [MIB]    measure the read bandwidth over a buffer of MIB MiB (default 1024,\n"
               "                       cut to the device's storage-binding limit)\n"
               "  --verbose            error lines with status names and source locations (also OSCAR_LOG=1)\n");
}

int main(int argc, char **argv)
{
    const char *device = NULL;
    int bandwidth = 0;
    uint32_t mib = 1024;
    app_log_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "oscar-info: --device needs a value\n");
                return 2;
            }
            device = argv[++i];
        } else if (strcmp(argv[i], "--bandwidth") == 0) {
            bandwidth = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-' && !app_parse_u32("oscar-info", "--bandwidth", argv[++i], 1u << 16, &mib))
                return 2;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            app_set_verbose(1);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(stdout);
            return 0;
        } else {
            fprintf(stderr, "oscar-info: unknown argument '%s' (oscar-info --help lists them)\n", argv[i]);
            return 2;
        }
    }
    printf("OSCAR-VK %s\n", oscar_version_string());
    uint32_t n = 0;
    oscar_status st = oscar_list_devices(NULL, &n);
    if (st != OSCAR_OK) {
        app_fail("oscar-info", NULL, st);
        return 1;
    }
    oscar_device_info *infos = calloc(n ? n : 1, sizeof *infos);
    if (!infos || (st = oscar_list_devices(infos, &n)) != OSCAR_OK) {
        app_fail("oscar-info", NULL, infos ? st : OSCAR_ERROR_OUT_OF_HOST_MEMORY);
        free(infos);
        return 1;
    }
    for (uint32_t i = 0; i < n; i++) print_device(&infos[i]);
    free(infos);
    uint32_t built = oscar_built_kernels();
    printf("kernels built: scalar%s%s\n", (built & OSCAR_BUILT_INTEGER_DOT) ? ", integer dot" : "",
           (built & OSCAR_BUILT_COOPMAT) ? ", cooperative matrix" : "");

    oscar_context_params p = oscar_context_params_default();
    p.device = device;
    oscar_context *ctx;
    if ((st = oscar_context_create(&p, &ctx)) != OSCAR_OK) {
        app_fail("oscar-info", NULL, st);
        return bandwidth || device ? 1 : 0; /* the listing alone still succeeded */
    }
    oscar_device_info info;
    oscar_context_device_info(ctx, &info);
    printf("selected: device %u: %s; the context enabled (OSCAR_DISABLE_COOPMAT, _INTEGER_DOT, _F16 turn each off):\n",
           info.index, info.name);
    printf("  fp16 arithmetic %s\n", info.float16_arithmetic ? "yes" : "no");
    print_fast_paths(&info);
    int rc = 0;
    if (bandwidth) {
        /* one binding covers the buffer: ask for what fits, and say so, rather than let the
         * measurement shrink it behind the figure printed */
        uint64_t bytes = (uint64_t)mib << 20, limit = info.max_storage_buffer_range & ~(uint64_t)((1u << 20) - 1);
        if (limit && bytes > limit) {
            fprintf(stderr, "oscar-info: note: --bandwidth %u MiB cut to %llu MiB, the most one storage binding covers on "
                    "this device\n", mib, (unsigned long long)(limit >> 20));
            bytes = limit;
        }
        double gbps = 0;
        st = oscar_measure_read_bandwidth(ctx, bytes, 20, &gbps);
        if (st != OSCAR_OK) {
            app_fail("oscar-info", "bandwidth", st);
            rc = 1;
        } else {
            printf("read bandwidth: %.1f GB/s (%llu MiB buffer, best of 20)\n", gbps, (unsigned long long)(bytes >> 20));
        }
    }
    oscar_context_destroy(ctx);
    return rc;
}
