/* Parts of oscar-bench that live in their own files (apps/dev/bench/), each a mode of the
 * benchmark with its own options; oscar-bench.c dispatches to them. */
#ifndef OSCAR_BENCH_H
#define OSCAR_BENCH_H

#include <stdio.h>

/* The usage of one mode ("attention", "decode", ...; NULL: all) on `out`. */
void bench_usage(FILE *out, const char *mode);

/* oscar-bench attention: decode attention over the paged cache per layer call
 * (bench_attention.c has the options). Returns the process exit code. */
int bench_attention(int argc, char **argv);

#endif
