// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dma_bench: RMA through the module's dmaengine channel next to what that
 * channel does for one large memcpy of the same size, measured in the same
 * run.  Meant for the software channel kernel/test/scif_swdma.ko (it
 * provides the reference figure through debugfs scif_swdma/memcpy_ns);
 * with another channel the reference and ratio columns are "n/a".
 *
 * A child process on node 1 registers a 64 MiB window; the parent on node
 * 0 (DMA is used only between nodes) registers one of its own.  Every
 * buffer is 2 MiB aligned and advised MADV_HUGEPAGE, so with transparent
 * huge pages the pages behind each side form long physically contiguous
 * runs.  For 64 KiB .. 64 MiB the parent measures, all SCIF_RMA_SYNC:
 *   scif_readfrom, scif_writeto (window to window),
 *   scif_vreadfrom, scif_vwriteto (with SCIF_RMA_USECACHE, so the figure
 *   is the copy, not the pinning of the user range on every call),
 * in MB/s (best of 3 rounds), the DMA descriptors per transfer (debugfs
 * scif/rma_dma: descs and copies counted around the timed calls), the
 * reference MB/s (and the CPU's memcpy of the same buffers in the kernel),
 * chan: the channel's own copy rate during the four calls' timed rounds
 * (scif_swdma's bytes_copied / copy_ns: where it is near ref and a call is
 * not, the call's time goes to overhead, not to the copy)
 * and the ratio of each call to the reference.  The goal is a ratio of
 * at least 0.8; the last column names the calls below it and by how much
 * (percent of the goal).
 *
 * usage: dma_bench [max_size_MiB]      (default 64, at most 64)
 * --csv FILE (anywhere; or SCIF_BENCH_CSV=FILE) also appends the figures
 * to FILE as CSV (results.h) for bench/plot.
 * --numa WHERE (anywhere; or SCIF_BENCH_NUMA=WHERE): every buffer (the
 * child's window too) on that host NUMA node, threads on its CPUs (placement.h;
 * "local" is SCIF node 1's NUMA node).
 * DMA_BENCH_NOHUGE=1 in the environment: small pages (MADV_NOHUGEPAGE).
 * Run as root in the VM with scif.ko nodes=2 and scif_swdma.ko loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <scif.h>

#include "placement.h"
#include "results.h"
#include "scif_test.h"

#define MiB (1UL << 20)
#define HUGE_ALIGN (2 * MiB)
#define GOAL 0.8
#define REF_FILE "/sys/kernel/debug/scif_swdma/memcpy_ns"

static size_t max_size = 64 * MiB;

static void die(const char *what) {
    fprintf(stderr, "dma_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* len bytes, 2 MiB aligned, advised for huge pages, filled with @c. */
static void *huge_buf(size_t len, int c) {
    void *p = map_anon_aligned(len, HUGE_ALIGN);

    if (!p)
        die("mmap");
    /* best effort */
    (void)madvise(p, len, getenv("DMA_BENCH_NOHUGE") ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
    memset(p, c, len);
    bench_numa_check(p, len, "a buffer");
    return p;
}

/*
 * The software channel's single memcpy of len bytes in MB/s (*cpu: the
 * same memcpy by the CPU in the kernel), or -1.
 */
static double ref_bw(size_t len, double *cpu) {
    unsigned long long bytes = 0, ns = 0, cns = 0;
    FILE *f = fopen(REF_FILE, "w");

    *cpu = -1;
    if (!f)
        return -1;
    if (fprintf(f, "%zu\n", len) < 0 || fclose(f))
        return -1;
    f = fopen(REF_FILE, "r");
    if (!f)
        return -1;
    if (fscanf(f, "bytes %llu ns %llu cpu_ns %llu", &bytes, &ns, &cns) != 3)
        bytes = 0;
    fclose(f);
    if (bytes != len || !ns || !cns)
        return -1;
    *cpu = len / (cns * 1e-9) / 1e6;
    return len / (ns * 1e-9) / 1e6;
}

enum kind { K_READ, K_WRITE, K_VREAD, K_VWRITE, K_NKINDS };
static const char *const kind_name[K_NKINDS] = {"readfrom", "writeto", "vreadfrom", "vwriteto"};

struct ctx {
    scif_epd_t ep;
    uint8_t *ubuf;
};

static int one(struct ctx *c, enum kind k, size_t len) {
    const int cflags = SCIF_RMA_SYNC | SCIF_RMA_USECACHE;

    switch (k) {
    case K_READ:
        return scif_readfrom(c->ep, 0, len, 0, SCIF_RMA_SYNC);
    case K_WRITE:
        return scif_writeto(c->ep, 0, len, 0, SCIF_RMA_SYNC);
    case K_VREAD:
        return scif_vreadfrom(c->ep, c->ubuf, len, 0, cflags);
    default:
        return scif_vwriteto(c->ep, c->ubuf, len, 0, cflags);
    }
}

struct result {
    double mbs;       /* best of 3 rounds */
    double descs;     /* DMA descriptors per transfer */
    double bytes, ns; /* copied by the channel in the rounds, and how long */
};

/* A counter of scif_swdma (module parameter), or -1. */
static double swdma_counter(const char *name) {
    char path[128];

    snprintf(path, sizeof(path), SWDMA_PARAM "%s", name);
    return (double)read_long(path);
}

/* Each round: calls for >= ~40 ms and >= 2 calls. */
static int measure(struct ctx *c, enum kind k, size_t len, struct result *r) {
    long long d0, d1, n0, n1;
    long calls = 0;
    int round;

    r->mbs = 0;
    if (one(c, k, len)) /* warm up: faults, cache entry, channel */
        return -1;
    d0 = dbg_dma_value("descs");
    n0 = dbg_dma_value("copies");
    r->bytes = -swdma_counter("bytes_copied");
    r->ns = -swdma_counter("copy_ns");
    for (round = 0; round < 3; round++) {
        double t0 = now_sec(), t;
        long n = 0;

        do {
            if (one(c, k, len))
                return -1;
            n++;
            t = now_sec() - t0;
        } while (t < 0.04 || n < 2);
        if (n * len / t / 1e6 > r->mbs)
            r->mbs = n * len / t / 1e6;
        calls += n;
    }
    d1 = dbg_dma_value("descs");
    n1 = dbg_dma_value("copies");
    r->bytes += swdma_counter("bytes_copied");
    r->ns += swdma_counter("copy_ns");
    r->descs = (d0 < 0 || d1 < 0 || n1 == n0) ? -1 : (double)(d1 - d0) / calls;
    return 0;
}

int main(int argc, char **argv) {
    int to_parent[2], to_child[2], st, k;
    struct scif_portID dst;
    struct window_hello h;
    struct ctx c;
    size_t len;
    char r;

    results_init("dma_bench", &argc, argv);
    bench_numa_init("dma_bench", &argc, argv, 1);
    if (argc > 1)
        max_size = strtoul(argv[1], NULL, 0) * MiB;
    if (max_size < 64 * 1024 || max_size > 64 * MiB)
        max_size = 64 * MiB;
    if (pipe(to_parent) || pipe(to_child))
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        setenv("SCIF_NODE", "1", 1);
        window_server("dma_bench", to_parent[1], to_child[0], huge_buf(max_size, 0x5a), max_size);
    }
    if (read(to_parent[0], &h, sizeof(h)) != sizeof(h))
        die("hello");
    c.ep = scif_open();
    if (c.ep < 0)
        die("scif_open");
    dst.node = 1;
    dst.port = h.port;
    if (scif_connect(c.ep, &dst) < 0)
        die("scif_connect");
    if (read(to_parent[0], &r, 1) != 1)
        die("ready");
    c.ubuf = huge_buf(max_size, 0x33);
    if (scif_register(c.ep, huge_buf(max_size, 0x44), max_size, 0, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != 0)
        die("register local");
    /* The module takes its DMA channel on first use. */
    if (scif_readfrom(c.ep, 0, 4096, 0, SCIF_RMA_SYNC))
        die("scif_readfrom");
    if (dbg_dma_channel() <= 0) {
        fprintf(stderr, "dma_bench: the module has no DMA channel (load scif_swdma.ko, "
                        "run as root with debugfs)\n");
        return 1;
    }

    printf("dma_bench: node 0 <-> node 1 through the DMA channel, SCIF_RMA_SYNC;\n"
           "v-calls with SCIF_RMA_USECACHE; MB/s best of 3; desc = DMA descriptors per\n"
           "transfer; ref = the channel's single memcpy of the same size (cpu = the same\n"
           "memcpy by the CPU in the kernel; chan = the channel's copy rate during the\n"
           "calls); ratio = call / ref\n"
           "(goal >= %.1f; 'below' lists the calls under it)\n",
           GOAL);
    bench_numa_print(stdout);
    printf("\n");
    printf("%9s", "size");
    for (k = 0; k < K_NKINDS; k++)
        printf(" %9s %6s", kind_name[k], "desc");
    printf(" %9s %9s %9s", "ref", "cpu", "chan");
    for (k = 0; k < K_NKINDS; k++)
        printf(" %6.6s", kind_name[k]);
    printf("  below\n");
    for (len = 64 * 1024; len <= max_size; len *= 4) {
        struct result res[K_NKINDS];
        double cpu, ref = ref_bw(len, &cpu), bytes, ns;
        char below[128] = "", path[64];

        for (k = 0; k < K_NKINDS; k++)
            if (measure(&c, (enum kind)k, len, &res[k]))
                die(kind_name[k]);
        if (len >= MiB)
            printf("%6zu MiB", len / MiB);
        else
            printf("%6zu KiB", len / 1024);
        for (k = 0; k < K_NKINDS; k++) {
            printf(" %9.0f %6.1f", res[k].mbs, res[k].descs);
            snprintf(path, sizeof(path), "scif_%s DMA", kind_name[k]);
            results_add("bandwidth", path, len, res[k].mbs, "MB/s");
        }
        results_add("bandwidth", "DMA channel memcpy (reference)", len, ref, "MB/s");
        results_add("bandwidth", "kernel CPU memcpy", len, ref < 0 ? -1 : cpu, "MB/s");
        bytes = ns = 0;
        for (k = 0; k < K_NKINDS; k++) {
            bytes += res[k].bytes;
            ns += res[k].ns;
        }
        if (ref < 0) {
            printf(" %9s %9s %9s", "n/a", "n/a", "n/a");
            for (k = 0; k < K_NKINDS; k++)
                printf(" %6s", "n/a");
            printf("\n");
        } else {
            printf(" %9.0f %9.0f", ref, cpu);
            if (bytes > 0 && ns > 0)
                printf(" %9.0f", bytes / ns * 1e3);
            else
                printf(" %9s", "n/a");
            for (k = 0; k < K_NKINDS; k++) {
                double q = res[k].mbs / ref;

                printf(" %6.2f", q);
                if (q < GOAL)
                    snprintf(below + strlen(below), sizeof(below) - strlen(below), " %s(-%.0f%%)",
                             kind_name[k], (1 - q / GOAL) * 100);
            }
            printf("  %s\n", below[0] ? below + 1 : "-");
        }
        if (len * 4 > max_size && len != max_size)
            len = max_size / 4;
    }

    if (write(to_child[1], "q", 1) != 1)
        die("quit");
    scif_close(c.ep);
    waitpid(pid, &st, 0);
    return 0;
}
