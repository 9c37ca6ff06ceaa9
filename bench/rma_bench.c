// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rma_bench: SCIF RMA bandwidth next to the host's alternatives, measured
 * in the same run on the same machine.
 *
 * A child process owns the remote memory: it registers a 64 MiB window on
 * a SCIF endpoint (node 0 loopback, or SCIF_NODE for the child via
 * RMA_BENCH_PEER_NODE) and also serves as the target of process_vm_readv.
 * Loopback within a node is always a CPU copy (as in Intel's driver), so
 * the DMA columns need another node (RMA_BENCH_PEER_NODE=1).
 * The parent measures, for 4 KiB .. 64 MiB:
 *   scif_vreadfrom, scif_readfrom, scif_vwriteto (CPU: SCIF_RMA_USECPU,
 *   DMA: the module's dmaengine channel, "n/a" when it has none),
 *   process_vm_readv (CMA) from the child, memcpy within the parent,
 * and prints bandwidths with the ratio RMA / CMA.  Then registration cost
 * per page next to mlock/munlock of the same memory.
 *
 * usage: rma_bench [max_size_MiB]      (default 64)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <scif.h>

#define MiB (1UL << 20)
#define PORT 0

static size_t max_size = 64 * MiB;

static double now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "rma_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *map_buf(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        die("mmap");
    memset(p, 0x33, len);
    return p;
}

struct hello {
    uint16_t port;
    uint64_t addr;
};

/* The child: listen, accept, register, report, wait for the parent. */
static void child(int wfd, int rfd) {
    struct scif_portID peer;
    struct hello h;
    scif_epd_t l, e;
    uint8_t *buf = map_buf(max_size);
    char c;
    int p;

    l = scif_open();
    if (l < 0)
        die("child scif_open");
    p = scif_bind(l, PORT);
    if (p < 0 || scif_listen(l, 1) < 0)
        die("child bind/listen");
    h.port = (uint16_t)p;
    h.addr = (uintptr_t)buf;
    if (write(wfd, &h, sizeof(h)) != sizeof(h))
        die("child write");
    if (scif_accept(l, &peer, &e, SCIF_ACCEPT_SYNC) < 0)
        die("child accept");
    if (scif_register(e, buf, max_size, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) != 0)
        die("child register");
    if (write(wfd, "r", 1) != 1)
        die("child write");
    if (read(rfd, &c, 1) < 0)
        die("child read");
    scif_close(e);
    scif_close(l);
    _exit(0);
}

static int dma_channel_present(void) {
    char line[128];
    int present = 0;
    FILE *f = fopen("/sys/kernel/debug/scif/rma_dma", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "channel ", 8) && strncmp(line + 8, "none", 4))
            present = 1;
    fclose(f);
    return present;
}

enum kind { K_VREAD, K_READ, K_VWRITE, K_CMA, K_MEMCPY };

struct ctx {
    scif_epd_t ep;
    pid_t pid;
    uint64_t raddr;
    uint8_t *ubuf, *lbuf, *src;
};

static int one(struct ctx *c, enum kind k, size_t len, int flags) {
    struct iovec li, ri;

    switch (k) {
    case K_VREAD:
        return scif_vreadfrom(c->ep, c->ubuf, len, 0, flags);
    case K_READ:
        return scif_readfrom(c->ep, 0, len, 0, flags);
    case K_VWRITE:
        return scif_vwriteto(c->ep, c->ubuf, len, 0, flags);
    case K_CMA:
        li.iov_base = c->ubuf;
        li.iov_len = len;
        ri.iov_base = (void *)(uintptr_t)c->raddr;
        ri.iov_len = len;
        return process_vm_readv(c->pid, &li, 1, &ri, 1, 0) == (ssize_t)len ? 0 : -1;
    default:
        memcpy(c->ubuf, c->src, len);
        __asm__ __volatile__("" ::: "memory");
        return 0;
    }
}

/* MB/s of kind k at len: best of 3 rounds, each >= ~40 ms or 2 calls. */
static double bw(struct ctx *c, enum kind k, size_t len, int flags) {
    double best = 0;
    int round;

    if (one(c, k, len, flags)) /* warm up (and fault in) */
        return -1;
    for (round = 0; round < 3; round++) {
        double t0 = now(), t;
        long n = 0;

        do {
            if (one(c, k, len, flags))
                return -1;
            n++;
            t = now() - t0;
        } while (t < 0.04 || n < 2);
        if (n * len / t / 1e6 > best)
            best = n * len / t / 1e6;
    }
    return best;
}

static void print_bw(double v) {
    if (v < 0)
        printf(" %9s", "n/a");
    else
        printf(" %9.0f", v);
}

static void reg_cost(struct ctx *c) {
    const size_t len = 16 * MiB;
    const unsigned long pages = len / 4096;
    uint8_t *m = map_buf(len);
    double t0, reg, unreg, ml, mu;
    int i, n = 10;

    t0 = now();
    reg = unreg = 0;
    for (i = 0; i < n; i++) {
        double a = now(), b;
        off_t o = scif_register(c->ep, m, len, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, 0);

        if (o < 0)
            die("register");
        b = now();
        if (scif_unregister(c->ep, o, len))
            die("unregister");
        reg += b - a;
        unreg += now() - b;
    }
    (void)t0;
    ml = mu = 0;
    for (i = 0; i < n; i++) {
        double a = now(), b;

        if (mlock(m, len))
            die("mlock");
        b = now();
        if (munlock(m, len))
            die("munlock");
        ml += b - a;
        mu += now() - b;
    }
    printf("\nregistration cost per 4 KiB page (16 MiB region, %d rounds):\n", n);
    printf("  scif_register   %8.3f us/page    scif_unregister %8.3f us/page\n",
           reg / n / pages * 1e6, unreg / n / pages * 1e6);
    printf("  mlock           %8.3f us/page    munlock         %8.3f us/page\n",
           ml / n / pages * 1e6, mu / n / pages * 1e6);
    printf("  register / mlock ratio: %.2f\n", reg / ml);
    munmap(m, len);
}

int main(int argc, char **argv) {
    int to_parent[2], to_child[2], dma, st;
    struct scif_portID dst;
    struct hello h;
    struct ctx c;
    size_t len;
    char r;

    if (argc > 1)
        max_size = strtoul(argv[1], NULL, 0) * MiB;
    if (max_size < 4096)
        max_size = 4096;
    if (pipe(to_parent) || pipe(to_child))
        die("pipe");
    c.pid = fork();
    if (c.pid < 0)
        die("fork");
    if (c.pid == 0) {
        const char *node = getenv("RMA_BENCH_PEER_NODE");

        if (node)
            setenv("SCIF_NODE", node, 1);
        child(to_parent[1], to_child[0]);
    }
    if (read(to_parent[0], &h, sizeof(h)) != sizeof(h))
        die("hello");
    c.raddr = h.addr;
    c.ep = scif_open();
    if (c.ep < 0)
        die("scif_open");
    dst.node = getenv("RMA_BENCH_PEER_NODE") ? (uint16_t)atoi(getenv("RMA_BENCH_PEER_NODE")) : 0;
    dst.port = h.port;
    if (scif_connect(c.ep, &dst) < 0)
        die("scif_connect");
    if (read(to_parent[0], &r, 1) != 1)
        die("ready");
    c.ubuf = map_buf(max_size);
    c.lbuf = map_buf(max_size);
    c.src = map_buf(max_size);
    if (scif_register(c.ep, c.lbuf, max_size, 0, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != 0)
        die("register local");
    /* The module takes its DMA channel on first use: make one DMA call. */
    if (scif_readfrom(c.ep, 0, 4096, 0, SCIF_RMA_SYNC))
        die("scif_readfrom");
    dma = dma_channel_present();

    printf("rma_bench: peer node %u, DMA channel: %s\n", dst.node,
           dma > 0
               ? "yes"
               : (dma == 0 ? "none (DMA columns use the CPU fallback)" : "unknown (no debugfs)"));
    printf("bandwidth in MB/s (best of 3); ratio = RMA CPU / process_vm_readv\n\n");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s %7s %7s\n", "size", "vread", "vread",
           "vread", "read", "read", "vwrite", "vwrite", "CMA", "memcpy", "vread/", "read/",
           "vwrite/");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s %7s %7s\n", "", "CPU", "CPU+cache", "DMA",
           "CPU", "DMA", "CPU", "DMA", "readv", "", "CMA", "CMA", "CMA");
    for (len = 4096; len <= max_size; len *= 4) {
        double vr = bw(&c, K_VREAD, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        double vrc = bw(&c, K_VREAD, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU | SCIF_RMA_USECACHE);
        double vrd = dma > 0 ? bw(&c, K_VREAD, len, SCIF_RMA_SYNC) : -1;
        double rd = bw(&c, K_READ, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        double rdd = dma > 0 ? bw(&c, K_READ, len, SCIF_RMA_SYNC) : -1;
        double vw = bw(&c, K_VWRITE, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        double vwd = dma > 0 ? bw(&c, K_VWRITE, len, SCIF_RMA_SYNC) : -1;
        double cma = bw(&c, K_CMA, len, 0);
        double mc = bw(&c, K_MEMCPY, len, 0);

        if (len >= MiB)
            printf("%6zu MiB", len / MiB);
        else
            printf("%6zu KiB", len / 1024);
        print_bw(vr);
        print_bw(vrc);
        print_bw(vrd);
        print_bw(rd);
        print_bw(rdd);
        print_bw(vw);
        print_bw(vwd);
        print_bw(cma);
        print_bw(mc);
        printf(" %7.2f %7.2f %7.2f\n", vr / cma, rd / cma, vw / cma);
        if (len == max_size)
            break;
        if (len * 4 > max_size)
            len = max_size / 4;
    }
    reg_cost(&c);

    if (write(to_child[1], "q", 1) != 1)
        die("quit");
    scif_close(c.ep);
    waitpid(c.pid, &st, 0);
    return 0;
}
