/* Status names, version, and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static _Thread_local char last_error[1024];

oscar_status ovk_error_set(oscar_status status, const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char msg[sizeof last_error - 160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(last_error, sizeof last_error, "%s (%s:%d)", msg, base, line);
    return status;
}

void ovk_error_clear(void) { last_error[0] = '\0'; }

OSCAR_API const char *oscar_last_error(void) { return last_error; }

OSCAR_API unsigned oscar_version_number(void) { return OSCAR_VERSION_NUMBER; }

#define OSCAR_STR2(x) #x
#define OSCAR_STR(x) OSCAR_STR2(x)
OSCAR_API const char *oscar_version_string(void)
{
    return OSCAR_STR(OSCAR_VERSION_MAJOR) "." OSCAR_STR(OSCAR_VERSION_MINOR) "." OSCAR_STR(OSCAR_VERSION_PATCH);
}

OSCAR_API const char *oscar_status_string(oscar_status status)
{
    switch (status) {
#define C(s) case s: return #s;
    C(OSCAR_OK)
    C(OSCAR_ERROR_INVALID_ARGUMENT) C(OSCAR_ERROR_INVALID_STATE) C(OSCAR_ERROR_UNSUPPORTED)
    C(OSCAR_ERROR_NO_LOADER) C(OSCAR_ERROR_NO_DEVICE) C(OSCAR_ERROR_DEVICE_NOT_FOUND)
    C(OSCAR_ERROR_MISSING_FEATURE)
    C(OSCAR_ERROR_VULKAN) C(OSCAR_ERROR_SHADER) C(OSCAR_ERROR_DEVICE_LOST)
    C(OSCAR_ERROR_IO) C(OSCAR_ERROR_BAD_FORMAT) C(OSCAR_ERROR_UNSUPPORTED_FORMAT) C(OSCAR_ERROR_MISMATCH)
    C(OSCAR_ERROR_OUT_OF_HOST_MEMORY) C(OSCAR_ERROR_OUT_OF_DEVICE_MEMORY) C(OSCAR_ERROR_OUT_OF_PAGES)
    C(OSCAR_ERROR_CONTEXT_FULL)
#undef C
    }
    return "OSCAR_ERROR_UNKNOWN";
}
