/* Messages and files for the command-line programs (the apps and oscar-calib).
 *
 * Messages: every failure is one line "<prog>: <what>: <problem>". The library's last-error
 * text carries source locations " (gguf.c:495)" for its developers; a user sees the problem
 * only, and the status name and locations come back in verbose mode (--verbose, or OSCAR_LOG=1
 * in the environment, read once by app_log_init).
 *
 * Input files are checked with stat() before they are opened: opening a FIFO blocks until a
 * writer appears, and a device such as /dev/zero never ends, so only regular files are read,
 * opened with O_NONBLOCK and checked again with fstat (the path may change in between).
 *
 * Output files are written to a new temporary file beside the target ("<path>.<pid>.<n>.tmp",
 * created exclusively, so no existing file is truncated or followed), synced and renamed over
 * the target at the end: a failure or an interruption never leaves a half-written file under
 * the target's name, and an output that is one of the program's inputs is refused.
 */
#ifndef OSCAR_APP_IO_H
#define OSCAR_APP_IO_H

#include <stddef.h>
#include <stdio.h>

#include "oscar/oscar.h"

/* Largest text file read whole (perplexity texts, prompt files): 512 MiB. */
#define APP_MAX_TEXT_BYTES (512u << 20)

/* Reads OSCAR_LOG once: "1" (or any value but "0" and "") turns verbose messages on. */
void app_log_init(void);
/* --verbose: status names and source locations in error lines. */
void app_set_verbose(int on);
int app_verbose(void);

/* The last error of the library as a user reads it: without the " (file.c:123)" source
 * locations unless verbose. Copies into buf[cap] and returns buf. */
const char *app_error_text(char *buf, size_t cap);

/* Prints one line for a failed call: "<prog>: <subject>: <problem>", the subject left out
 * when the problem already starts with it (the library names the file), or when NULL; in
 * verbose mode " [OSCAR_ERROR_...]" follows. */
void app_fail(const char *prog, const char *subject, oscar_status st);

/* Checks that `path` is an existing regular file this user can read, without opening it.
 * what: "model", "rotation file", "text file" ... On failure prints one line naming the path
 * and the reason (strerror, "is a folder", "is not a regular file") and returns 0. */
int app_check_input(const char *prog, const char *path, const char *what);

/* Reads a whole regular file of at most max_bytes into a malloc'ed NUL-terminated buffer
 * (*len bytes without the NUL). Pipes and devices are refused before they are opened. On
 * failure prints one line ("cannot open X: No such file or directory", "X is larger than
 * 512 MiB", ...) and returns NULL. */
char *app_read_text(const char *prog, const char *path, const char *what, size_t max_bytes, size_t *len);

/* 1 when both paths name one existing file (same device and inode: through symlinks and hard
 * links too). */
int app_same_file(const char *a, const char *b);

/* An output file being written: f is the temporary file; app_out_commit renames it. */
typedef struct app_out {
    FILE *f;
    char *path;   /* the target */
    char *tmp;    /* the temporary file beside it */
} app_out;

/* Opens a temporary file beside `path` for writing. Refuses (one line, returns 0) a path that
 * names one of `inputs` (NULL-terminated list of the program's input files, may be NULL), an
 * existing path that is not a regular file, and a folder that takes no new file. */
int app_out_open(const char *prog, const char *path, const char *const *inputs, app_out *o);
/* Flushes, syncs and closes the temporary file and renames it over the target. Returns 1; on a
 * failure removes the temporary file, prints one line and returns 0. */
int app_out_commit(const char *prog, app_out *o);
/* Closes and removes the temporary file (the target is left as it was). Safe on a closed one. */
void app_out_abort(app_out *o);

#endif
