/* Messages and files for the command-line programs: see app_io.h. */
#include "common/app_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- messages -------------------------------------------------------------------------------- */

static int verbose;

void app_log_init(void)
{
    const char *v = getenv("OSCAR_LOG");
    if (v && *v && strcmp(v, "0") != 0) verbose = 1;
}

void app_set_verbose(int on) { verbose = on; }
int app_verbose(void) { return verbose; }

/* Length of a source location " (name.c:123)" starting at s, or 0 when s does not start one. */
static size_t location_at(const char *s)
{
    if (s[0] != ' ' || s[1] != '(') return 0;
    size_t i = 2;
    while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')
        i++;
    if (i == 2 || strncmp(s + i, ".c:", 3) != 0) return 0;
    i += 3;
    size_t digits = i;
    while (s[i] >= '0' && s[i] <= '9') i++;
    return i > digits && s[i] == ')' ? i + 1 : 0;
}

const char *app_error_text(char *buf, size_t cap)
{
    const char *e = oscar_last_error();
    size_t n = 0;
    if (!cap) return buf;
    for (size_t i = 0; e[i] && n + 1 < cap;) {
        size_t skip = verbose ? 0 : location_at(e + i);
        if (skip) {
            i += skip;
            continue;
        }
        buf[n++] = e[i++];
    }
    buf[n] = 0;
    return buf;
}

void app_fail(const char *prog, const char *subject, oscar_status st)
{
    char msg[1100];
    app_error_text(msg, sizeof msg);
    if (!msg[0]) snprintf(msg, sizeof msg, "%s", oscar_status_string(st));
    size_t n = subject ? strlen(subject) : 0;
    int named = subject && strncmp(msg, subject, n) == 0 && (msg[n] == ':' || msg[n] == ' ');
    if (subject && !named) fprintf(stderr, "%s: %s: %s", prog, subject, msg);
    else fprintf(stderr, "%s: %s", prog, msg);
    if (verbose) fprintf(stderr, " [%s]", oscar_status_string(st));
    fputc('\n', stderr);
}

/* ---- inputs ---------------------------------------------------------------------------------- */

/* Checks a stat result for an input: one line and 0 when it is no readable regular file. */
static int check_stat(const char *prog, const char *path, const char *what, const struct stat *sb)
{
    if (S_ISDIR(sb->st_mode)) {
        fprintf(stderr, "%s: %s %s is a folder, not a file\n", prog, what, path);
        return 0;
    }
    if (!S_ISREG(sb->st_mode)) {
        fprintf(stderr, "%s: %s %s is not a regular file (a pipe or a device cannot be read here)\n", prog, what, path);
        return 0;
    }
    return 1;
}

int app_check_input(const char *prog, const char *path, const char *what)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "%s: cannot open %s %s: %s\n", prog, what, path, strerror(errno));
        return 0;
    }
    if (!check_stat(prog, path, what, &sb)) return 0;
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: cannot read %s %s: %s\n", prog, what, path, strerror(errno));
        return 0;
    }
    return 1;
}

char *app_read_text(const char *prog, const char *path, const char *what, size_t max_bytes, size_t *len)
{
    struct stat sb;
    if (!app_check_input(prog, path, what)) return NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot open %s %s: %s\n", prog, what, path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &sb) != 0 || !check_stat(prog, path, what, &sb)) {
        close(fd);
        return NULL;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        fprintf(stderr, "%s: %s %s is larger than %zu MiB\n", prog, what, path, max_bytes >> 20);
        close(fd);
        return NULL;
    }
    /* read up to one byte past the limit: a file that grows while it is read is caught too */
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n > max_bytes) {
            fprintf(stderr, "%s: %s %s is larger than %zu MiB\n", prog, what, path, max_bytes >> 20);
            goto fail;
        }
        if (n + 65536 + 1 > cap) {
            size_t want = cap ? 2 * cap : (size_t)sb.st_size + 65536 + 1;
            if (want > max_bytes + 65536 + 2) want = max_bytes + 65536 + 2;
            char *b = realloc(buf, want);
            if (!b) {
                fprintf(stderr, "%s: %s %s: out of host memory\n", prog, what, path);
                goto fail;
            }
            buf = b, cap = want;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n < 65536 ? cap - 1 - n : 65536);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fprintf(stderr, "%s: cannot read %s %s: %s\n", prog, what, path, strerror(errno));
            goto fail;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

int app_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- outputs --------------------------------------------------------------------------------- */

int app_out_open(const char *prog, const char *path, const char *const *inputs, app_out *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; inputs && inputs[i]; i++)
        if (app_same_file(path, inputs[i])) {
            fprintf(stderr, "%s: %s is also an input (%s): writing it would replace it\n", prog, path, inputs[i]);
            return 0;
        }
    struct stat sb;
    int have = stat(path, &sb) == 0;
    if (have && !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "%s: cannot write %s: it exists and is not a regular file\n", prog, path);
        return 0;
    }
    size_t cap = strlen(path) + 40;
    o->path = strdup(path);
    o->tmp = malloc(cap);
    if (!o->path || !o->tmp) {
        fprintf(stderr, "%s: out of host memory\n", prog);
        app_out_abort(o);
        return 0;
    }
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(o->tmp, cap, "%s.%ld.%u.tmp", path, (long)getpid(), k);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
            break;
        }
        if (have) fchmod(fd, sb.st_mode & 07777); /* the replaced file's permissions */
        o->f = fdopen(fd, "w");
        if (!o->f) {
            close(fd);
            unlink(o->tmp);
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
            break;
        }
        return 1;
    }
    free(o->path), free(o->tmp);
    memset(o, 0, sizeof *o);
    return 0;
}

int app_out_commit(const char *prog, app_out *o)
{
    if (!o->f) return 0;
    FILE *f = o->f;
    o->f = NULL;
    int ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
    int err = errno;
    if (fclose(f) != 0 && ok) ok = 0, err = errno;
    if (ok && rename(o->tmp, o->path) != 0) ok = 0, err = errno;
    if (!ok) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->path, strerror(err));
        unlink(o->tmp);
    }
    free(o->path), free(o->tmp);
    o->path = o->tmp = NULL;
    return ok;
}

void app_out_abort(app_out *o)
{
    if (o->f) {
        fclose(o->f);
        unlink(o->tmp);
    }
    free(o->path), free(o->tmp);
    memset(o, 0, sizeof *o);
}
