// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placement.c - NUMA placement of the benchmarks' buffers and threads (placement.h). */
#define _GNU_SOURCE
#include "placement.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "results.h"

#ifdef HAVE_LIBNUMA
#include <numa.h>
#include <numaif.h>
#endif

static const char *bench_name = "bench";
static char where[64];  /* as given, for messages and the header */
static char origin[32]; /* "--numa " or "SCIF_BENCH_NUMA=" */
static int active;
static int thread_cpu = -1; /* first CPU of the threads' node */

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...) {
    va_list ap;

    fprintf(stderr, "%s: %s%s: ", bench_name, origin, where);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

int bench_numa_active(void) {
    return active;
}

int bench_numa_cpu(void) {
    return active ? thread_cpu : -1;
}

/* Takes WHERE from `--numa WHERE` or SCIF_BENCH_NUMA; 0 when neither. */
static int take_arg(int *argc, char **argv) {
    const char *v = getenv("SCIF_BENCH_NUMA");
    int i, j;

    snprintf(origin, sizeof(origin), "SCIF_BENCH_NUMA=");
    for (i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--numa"))
            continue;
        if (i + 1 >= *argc) {
            fprintf(stderr, "%s: --numa needs local, remote or a NUMA node number\n", bench_name);
            exit(2);
        }
        v = argv[i + 1];
        snprintf(origin, sizeof(origin), "--numa ");
        if (!*v)
            v = "''";
        for (j = i; j + 2 <= *argc; j++)
            argv[j] = argv[j + 2];
        *argc -= 2;
        break;
    }
    if (!v || !*v)
        return 0;
    snprintf(where, sizeof(where), "%s", v);
    return 1;
}

#ifdef HAVE_LIBNUMA

static int mem_node = -1;    /* the node the buffers are bound to */
static int thread_node = -1; /* the node whose CPUs the threads run on */
static int probe_node = -1;  /* where the probe page really landed */

static void __attribute__((noreturn)) fatal(const char *what) {
    fprintf(stderr, "%s: NUMA placement: %s: %s\n", bench_name, what, strerror(errno));
    exit(1);
}

/* The numa_node of SCIF node @id from sysfs, or -1. */
static int scif_numa_node(int id) {
    char path[80];
    FILE *f;
    int n = -1;

    if (id < 0)
        return -1;
    snprintf(path, sizeof(path), "/sys/kernel/scif/nodes/%d/numa_node", id);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (fscanf(f, "%d", &n) != 1)
        n = -1;
    fclose(f);
    return n;
}

static int node_has_memory(int n) {
    long long size;

    if (numa_available() < 0)
        return n == 0;
    if (n < 0 || n > numa_max_node())
        return 0;
    size = numa_node_size64(n, NULL);
    return size > 0;
}

/* The first CPU of node @n, or -1 when it has none. */
static int node_first_cpu(int n) {
    struct bitmask *cpus;
    unsigned i;
    int cpu = -1;

    if (numa_available() < 0)
        return n == 0 ? 0 : -1;
    cpus = numa_allocate_cpumask();
    if (!cpus)
        fatal("numa_allocate_cpumask");
    if (numa_node_to_cpus(n, cpus) == 0)
        for (i = 0; i < cpus->size; i++)
            if (numa_bitmask_isbitset(cpus, i)) {
                cpu = (int)i;
                break;
            }
    numa_free_cpumask(cpus);
    return cpu;
}

/* The node of the page at @p (touched), or -1 with errno. */
static int page_node(const void *p) {
    void *pages[1] = {(void *)((unsigned long)p & ~((unsigned long)getpagesize() - 1))};
    int status[1] = {-1};

    if (move_pages(0, 1, pages, NULL, status, 0))
        return -1;
    if (status[0] < 0) {
        errno = -status[0];
        return -1;
    }
    return status[0];
}

static int resolve(int scif_node, int *local) {
    int max = numa_available() < 0 ? 0 : numa_max_node();
    int cpu = sched_getcpu();
    char *end;
    long n;

    *local = scif_numa_node(scif_node);
    if (*local < 0 || !node_has_memory(*local))
        *local = numa_available() < 0 || cpu < 0 ? 0 : numa_node_of_cpu(cpu);
    if (*local < 0)
        *local = 0;
    if (!strcmp(where, "local"))
        return *local;
    if (!strcmp(where, "remote")) {
        for (n = 0; n <= max; n++)
            if (n != *local && node_has_memory((int)n))
                return (int)n;
        bad("no NUMA node with memory other than the local node %d (%s)", *local,
            max ? "see /sys/devices/system/node" : "this machine has one node");
    }
    errno = 0;
    n = strtol(where, &end, 10);
    if (!isdigit((unsigned char)where[0]) || *end || errno)
        bad("expected local, remote or a NUMA node number");
    if (n > max)
        bad("NUMA node %ld does not exist (the highest is %d)", n, max);
    if (!node_has_memory((int)n))
        bad("NUMA node %ld has no memory", n);
    return (int)n;
}

static void apply(void) {
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    char *probe;

    if (numa_available() < 0) {
        /* One node and no NUMA in the kernel: nothing to bind. */
        probe_node = 0;
        return;
    }
    if (mem_node >= (int)(8 * sizeof(mask)))
        bad("NUMA node %d is beyond this program's limit", mem_node);
    mask[mem_node / (8 * sizeof(unsigned long))] |= 1UL << (mem_node % (8 * sizeof(unsigned long)));
    if (set_mempolicy(MPOL_BIND, mask, 8 * sizeof(mask)))
        fatal("set_mempolicy(MPOL_BIND)");
    if (numa_run_on_node(thread_node))
        fatal("numa_run_on_node");
    probe = mmap(NULL, (size_t)getpagesize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    if (probe == MAP_FAILED)
        fatal("mmap");
    memset(probe, 1, (size_t)getpagesize());
    probe_node = page_node(probe);
    if (probe_node < 0)
        fatal("move_pages");
    munmap(probe, (size_t)getpagesize());
    if (probe_node != mem_node) {
        fprintf(stderr, "%s: NUMA placement: a page bound to node %d landed on node %d\n",
                bench_name, mem_node, probe_node);
        exit(1);
    }
}

void bench_numa_init(const char *bench, int *argc, char **argv, int scif_node) {
    char tag[48];
    int local;

    bench_name = bench;
    if (!take_arg(argc, argv))
        return;
    mem_node = resolve(scif_node, &local);
    thread_node = strcmp(where, "remote") ? mem_node : local;
    thread_cpu = node_first_cpu(thread_node);
    if (thread_cpu < 0) { /* a memory-only node: run on the local one */
        thread_node = local;
        thread_cpu = node_first_cpu(local);
    }
    active = 1;
    apply();
    snprintf(tag, sizeof(tag), "numa buffers %d threads %d", mem_node, thread_node);
    results_set_tag(tag);
}

void bench_numa_check(const void *p, size_t len, const char *what) {
    const char *b = p;
    size_t off[3] = {0, len / 2, len ? len - 1 : 0};
    int i, n;

    if (!active || !len || numa_available() < 0)
        return;
    for (i = 0; i < 3; i++) {
        n = page_node(b + off[i]);
        if (n < 0)
            fatal(what);
        if (n != mem_node) {
            fprintf(stderr, "%s: NUMA placement: %s: page at offset %zu is on node %d, not %d\n",
                    bench_name, what, off[i], n, mem_node);
            exit(1);
        }
    }
}

void bench_numa_print(FILE *f) {
    int cpu = sched_getcpu(); /* where this thread runs now, read back */

    if (!active) {
        fprintf(f, "NUMA placement: not requested (--numa local|remote|N)\n");
        return;
    }
    fprintf(f,
            "NUMA placement (%s%s): buffers on node %d (read back with move_pages), "
            "threads on node %d (CPU %d)\n",
            origin, where, probe_node,
            cpu >= 0 && numa_available() >= 0 ? numa_node_of_cpu(cpu) : thread_node, cpu);
    fflush(f);
}

#else /* !HAVE_LIBNUMA */

void bench_numa_init(const char *bench, int *argc, char **argv, int scif_node) {
    (void)scif_node;
    bench_name = bench;
    if (take_arg(argc, argv))
        bad("this build has no libnuma (install libnuma-dev and run configure again)");
}

void bench_numa_check(const void *p, size_t len, const char *what) {
    (void)p;
    (void)len;
    (void)what;
}

void bench_numa_print(FILE *f) {
    fprintf(f, "NUMA placement: not available (built without libnuma)\n");
}

#endif /* HAVE_LIBNUMA */
