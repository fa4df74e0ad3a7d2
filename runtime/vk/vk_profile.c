/* GPU time per shader (OSCAR_PROFILE=1): with a profile, every dispatch of a command stream is
 * followed by a timestamp (vk_command.c), and the time between a dispatch's timestamp and the
 * one before it (a dispatch's, or the start of the stream or of one of its parts, which belong to
 * no shader) is added to its shader's total when the stream's fence is waited on. A
 * timestamp after every dispatch waits for it to finish, so dispatches that would overlap run
 * one after another: the totals say where a step's time goes, not how fast it runs unprofiled.
 * The table goes to stderr when the context is destroyed. The same tables keep the host's time
 * per phase of a forward step (model_gpu.c), OSCAR_PROFILE=1 or =host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"

void ovk_profile_add(ovk_profile *pr, const char *name, double ns)
{
    uint32_t i = 0;
    while (i < pr->n && strcmp(pr->entries[i].name, name) != 0) i++;
    if (i == pr->n) {
        if (pr->n == OSCAR_PROFILE_MAX) return; /* more shaders than slots: the rest are not counted */
        snprintf(pr->entries[i].name, sizeof pr->entries[i].name, "%s", name);
        pr->n++;
    }
    pr->entries[i].ns += ns;
    pr->entries[i].calls++;
    pr->total_ns += ns;
}

static int by_time(const void *a, const void *b)
{
    double x = ((const ovk_profile_entry *)a)->ns, y = ((const ovk_profile_entry *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

void ovk_profile_print(ovk_profile *pr, const char *title, FILE *f)
{
    if (!pr || pr->n == 0) return;
    qsort(pr->entries, pr->n, sizeof pr->entries[0], by_time);
    fprintf(f, "OSCAR_PROFILE: %s\n", title);
    fprintf(f, "%-22s %10s %12s %10s %7s\n", "name", "calls", "total ms", "us/call", "share");
    for (uint32_t i = 0; i < pr->n; i++) {
        const ovk_profile_entry *e = &pr->entries[i];
        fprintf(f, "%-22s %10llu %12.3f %10.2f %6.1f%%\n", e->name, (unsigned long long)e->calls, e->ns * 1e-6,
                e->ns * 1e-3 / (double)e->calls, 100.0 * e->ns / pr->total_ns);
    }
    fprintf(f, "%-22s %10s %12.3f\n", "total", "", pr->total_ns * 1e-6);
}
