/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * results.h - machine-readable benchmark results for bench/plot.
 *
 * A benchmark run with `--csv FILE` (anywhere among its arguments) or with
 * SCIF_BENCH_CSV=FILE in the environment appends one CSV row per figure it
 * prints to FILE, after a header line when the file is empty:
 *
 *   bench,metric,path,size,value,unit
 *   rma_bench,bandwidth,scif_vreadfrom CPU,65536,2345.6,MB/s
 *
 * metric is "bandwidth" or "latency"; path names the transfer (a SCIF call
 * and its engine, CMA, memcpy, the kernel reference, ...; never a comma);
 * size is the transfer size in bytes; value a number in unit.  A run with
 * --numa adds its placement to the path: "memcpy [numa buffers 1 threads 0]".  Figures a
 * run could not measure are left out.  Several benchmarks may append to
 * one file.
 */
#ifndef BENCH_RESULTS_H
#define BENCH_RESULTS_H

#include <stddef.h>

/*
 * Removes `--csv FILE` from argv (updating *argc) and opens FILE, else the
 * file SCIF_BENCH_CSV names, for appending; without either, results_add()
 * does nothing.  Exits with a message (status 2) when `--csv` lacks its
 * argument or the file cannot be opened.
 */
void results_init(const char *bench, int *argc, char **argv);

/*
 * Appends " [TAG]" to the path of every later row (the NUMA placement of a
 * run with --numa, placement.h), so that runs placed differently plot as
 * separate curves.
 */
void results_set_tag(const char *tag);

/* Appends a row; a negative value (not measured) is skipped. */
void results_add(const char *metric, const char *path, size_t size, double value, const char *unit);

#endif /* BENCH_RESULTS_H */
