// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* results.c - CSV results of the benchmarks (see results.h). */
#include "results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static const char *bench_name = "bench";
static char tag[64];

static void close_results(void) {
    if (out && fclose(out))
        fprintf(stderr, "%s: writing the CSV results: %s\n", bench_name, strerror(errno));
    out = NULL;
}

void results_init(const char *bench, int *argc, char **argv) {
    const char *file = getenv("SCIF_BENCH_CSV");
    int i, j;

    bench_name = bench;
    for (i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--csv"))
            continue;
        if (i + 1 >= *argc) {
            fprintf(stderr, "%s: --csv needs a file name\n", bench);
            exit(2);
        }
        file = argv[i + 1];
        for (j = i; j + 2 <= *argc; j++)
            argv[j] = argv[j + 2];
        *argc -= 2;
        break;
    }
    if (!file || !*file)
        return;
    out = fopen(file, "a");
    if (!out) {
        fprintf(stderr, "%s: %s: %s\n", bench, file, strerror(errno));
        exit(2);
    }
    if (ftell(out) == 0)
        fprintf(out, "bench,metric,path,size,value,unit\n");
    fflush(out);
    atexit(close_results);
}

void results_set_tag(const char *t) {
    snprintf(tag, sizeof(tag), " [%s]", t);
}

void results_add(const char *metric, const char *path, size_t size, double value,
                 const char *unit) {
    if (!out || value < 0)
        return;
    fprintf(out, "%s,%s,%s%s,%zu,%.6g,%s\n", bench_name, metric, path, tag, size, value, unit);
    fflush(out);
}
