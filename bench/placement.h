/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * placement.h - NUMA placement of a benchmark's buffers and threads.
 *
 * `--numa WHERE` (anywhere among the arguments) or SCIF_BENCH_NUMA=WHERE in
 * the environment asks for every buffer of the benchmark (its child
 * processes' too) to be allocated on one host NUMA node:
 *
 *   local   the NUMA node of the SCIF node the benchmark talks to
 *           (/sys/kernel/scif/nodes/<id>/numa_node), or, when that is -1
 *           or unreadable, the node of the CPU the benchmark started on;
 *   remote  the lowest-numbered other node with memory (fails on a
 *           machine with one node);
 *   N       NUMA node N, which must exist and have memory.
 *
 * The memory policy of the process becomes MPOL_BIND to that node; the
 * threads run on the CPUs of that node (for remote: of the local node, so
 * that the buffers are remote to them; for a node without CPUs: of the
 * local node).  Where the pages and threads really are is read back
 * (move_pages, sched_getcpu) and printed by bench_numa_print(); a buffer
 * found elsewhere is a fatal error (exit status 1).  A bad WHERE, a node
 * that does not exist or has no memory, or --numa in a build without
 * libnuma: a message naming the problem, exit status 2.
 */
#ifndef BENCH_PLACEMENT_H
#define BENCH_PLACEMENT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Removes `--numa WHERE` from argv (updating *argc), else reads
 * SCIF_BENCH_NUMA; without either does nothing.  Otherwise resolves WHERE
 * (scif_node: the SCIF node whose numa_node is "local"), sets the memory
 * policy and the CPU affinity (inherited by threads and children created
 * later) and checks a probe page; exits as above on any problem.
 */
void bench_numa_init(const char *bench, int *argc, char **argv, int scif_node);

/* Whether a placement was asked for. */
int bench_numa_active(void);

/* The first CPU of the threads' node (to pin one thread to), or -1. */
int bench_numa_cpu(void);

/*
 * Checks that the (touched) buffer [p, p + len) lies on the chosen node:
 * its first, middle and last pages; exits with status 1 naming @what when
 * one does not.  Does nothing without a placement.
 */
void bench_numa_check(const void *p, size_t len, const char *what);

/* Prints the placement line of a table header (and "not requested"). */
void bench_numa_print(FILE *f);

#endif /* BENCH_PLACEMENT_H */
