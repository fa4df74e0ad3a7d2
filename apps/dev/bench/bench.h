/* Parts of oscar-bench that live in their own files (apps/dev/bench/), each a mode of the
 * benchmark with its own options; oscar-bench.c dispatches to them. */
#ifndef OSCAR_BENCH_H
#define OSCAR_BENCH_H

#include <stdio.h>

/* The usage of one mode ("attention", "decode", ...; NULL: all) on `out`. */
void bench_usage(FILE *out, const char *mode);
/* A flag that takes a value: 1 when f is one of `known` (NULL-terminated) and v is there; else
 * prints "unknown option" (pointing to --help) or "needs a value" and returns 0. */
int bench_flag_with_value(const char *prog, const char *f, const char *v, const char *const *known);

/* oscar-bench attention: decode attention over the paged cache per layer call
 * (bench_attention.c has the options). Returns the process exit code. */
int bench_attention(int argc, char **argv);

#endif
