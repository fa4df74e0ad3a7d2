/* Internal error plumbing: every failure records a message with file:line on the calling
 * thread (read back with oscar_last_error()) and returns a status through one `goto fail`. */
#ifndef OSCAR_ERROR_H
#define OSCAR_ERROR_H

#include "oscar/oscar.h"

#if defined(__GNUC__)
#define OSCAR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OSCAR_PRINTF(a, b)
#endif

/* Records "file:line: message" as this thread's last error and returns `status`. */
oscar_status ovk_error_set(oscar_status status, const char *file, int line, const char *fmt, ...)
    OSCAR_PRINTF(4, 5);
/* Clears this thread's last error. */
void ovk_error_clear(void);

/* Sets the error and returns from the current function. */
#define OSCAR_RETURN_ERROR(status, ...) return ovk_error_set((status), __FILE__, __LINE__, __VA_ARGS__)

/* Sets the error, stores the status in the local `st` and jumps to `fail`. */
#define OSCAR_FAIL(status, ...)                                              \
    do {                                                                     \
        st = ovk_error_set((status), __FILE__, __LINE__, __VA_ARGS__);    \
        goto fail;                                                           \
    } while (0)

/* Evaluates an oscar_status expression into `st`; on failure jumps to `fail` (the callee has
 * already recorded the detail). */
#define OSCAR_TRY(expr)                                                      \
    do {                                                                     \
        st = (expr);                                                         \
        if (st != OSCAR_OK) goto fail;                                       \
    } while (0)

#endif
