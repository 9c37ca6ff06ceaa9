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
 * and the kernel copy reference: the kernel copying between two pinned
 * buffers of the parent with memcpy between kmapped pages, timed in the
 * kernel (test-only module kernel/test/scif_copyref.ko; "n/a" without it).
 * It prints bandwidths with the ratio RMA / CMA, then every RMA figure as a
 * ratio to the kernel copy reference, then the latency of a 4 KiB
 * synchronous scif_vreadfrom next to a 4 KiB process_vm_readv (median and
 * 99th percentile), then registration cost per page next to the kernel
 * pinning the same pages (scif_copyref.ko) and mlock/munlock, then the
 * cost of RMA with 10,000 windows registered on each endpoint next to one.
 *
 * usage: rma_bench [max_size_MiB]      (default 64)
 *        rma_bench --server [PORT]                              (one host)
 *        rma_bench --peer NODE[:PORT] [-s SIZE,...] [-n ITERS] [-T SECONDS]
 * Across hosts (scif_rdma.ko): --server accepts one connection at a time,
 * registers a window of the size the client asks for (up to 64 MiB) at
 * offset 0 and holds it until that client is done, then exits (a client
 * that dies only ends its own connection); --peer NODE --quit ends it
 * without measuring.  --peer connects, registers a local window of the
 * largest size too, and measures per size the bandwidth (MiB/s, as
 * perftest's "MB/sec") of synchronous scif_vreadfrom, scif_vwriteto,
 * scif_readfrom and scif_writeto, then of the same calls asynchronous (no
 * SCIF_RMA_SYNC, back to back, one fence at the end: several in flight,
 * as perftest keeps them), then the latency of an 8-byte synchronous
 * scif_vreadfrom (mean and median, us).  Iterations are
 * bounded: -n ITERS per size and call (default about 16 MiB per size,
 * 20 .. 2000 calls; latency: 2000 calls, or ITERS when fewer), and each
 * measurement stops after -T SECONDS (default 5; latency: twice that) once
 * it has made 3 calls: a Soft-RoCE round trip under TCG takes tens of ms.
 * --csv FILE (anywhere; or SCIF_BENCH_CSV=FILE) also appends the figures
 * to FILE as CSV (results.h) for bench/plot.
 * --numa WHERE (anywhere; or SCIF_BENCH_NUMA=WHERE): every buffer (the
 * child's window too) on that host NUMA node, threads on its CPUs (placement.h;
 * "local" is the peer SCIF node's NUMA node).
 * RMA_BENCH_THP=1 in the environment backs every buffer (windows too) with
 * transparent huge pages (madvise MADV_HUGEPAGE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include "placement.h"
#include "results.h"
#include "scif_test.h"

#define MiB (1UL << 20)

static size_t max_size = 64 * MiB;

static void die(const char *what) {
    fprintf(stderr, "rma_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *map_buf(size_t len) {
    void *p = map_anon(len);

    if (!p)
        die("mmap");
    /* RMA_BENCH_THP=1: back every buffer and window with huge pages. */
    if (getenv("RMA_BENCH_THP") && madvise(p, len, MADV_HUGEPAGE))
        die("madvise");
    memset(p, 0x33, len);
    bench_numa_check(p, len, "a buffer");
    return p;
}

enum kind { K_VREAD, K_READ, K_VWRITE, K_CMA, K_MEMCPY };

#define COPYREF "/sys/kernel/debug/scif_copyref/copy"

/*
 * One scif_copyref.ko run: "src dst len reps mode" written, the measured
 * nanoseconds read back; -1 without the module or on error.
 */
static double copyref_ns(const void *src, void *dst, size_t len, unsigned long reps, int mode) {
    char cmd[96], out[32];
    ssize_t n;
    int fd = open(COPYREF, O_RDWR);

    if (fd < 0)
        return -1;
    snprintf(cmd, sizeof(cmd), "%lx %lx %zu %lu %d", (unsigned long)(uintptr_t)src,
             (unsigned long)(uintptr_t)dst, len, reps, mode);
    if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd) ||
        (n = pread(fd, out, sizeof(out) - 1, 0)) <= 0) {
        close(fd);
        return -1;
    }
    close(fd);
    out[n] = '\0';
    return (double)strtoull(out, NULL, 10);
}

/*
 * MB/s of the kernel copying len bytes from src to dst (both pinned by
 * scif_copyref.ko for the measurement), best of 3; -1 without the module.
 * mode 0: memcpy page by page; 1: aliased page pairs through a bounce
 * buffer, as scif.ko does (docs/rma.md).
 */
static double kcopy_bw(const void *src, void *dst, size_t len, int mode) {
    unsigned long reps = (64 * MiB) / len;
    double best = -1;
    int round;

    if (reps < 2)
        reps = 2;
    if (reps > 10000)
        reps = 10000;
    for (round = 0; round < 3; round++) {
        double ns = copyref_ns(src, dst, len, reps, mode);

        if (ns > 0 && reps * len / (ns * 1e-9) / 1e6 > best)
            best = reps * len / (ns * 1e-9) / 1e6;
    }
    return best;
}

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
        double t0 = now_sec(), t;
        long n = 0;

        do {
            if (one(c, k, len, flags))
                return -1;
            n++;
            t = now_sec() - t0;
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

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Median and 99th percentile (us) of n single 4 KiB calls of kind k. */
#define LAT_N 2000
static int lat4k(struct ctx *c, enum kind k, int flags, double *med, double *p99) {
    static double t[LAT_N];
    int i;

    if (one(c, k, 4096, flags))
        return -1;
    for (i = 0; i < LAT_N; i++) {
        double a = now_sec();

        if (one(c, k, 4096, flags))
            return -1;
        t[i] = (now_sec() - a) * 1e6;
    }
    qsort(t, LAT_N, sizeof(t[0]), cmp_double);
    *med = t[LAT_N / 2];
    *p99 = t[LAT_N * 99 / 100];
    return 0;
}

static void lat_table(struct ctx *c) {
    static const struct {
        const char *name;
        enum kind k;
        int flags;
    } rows[] = {
        {"scif_vreadfrom SYNC|USECPU", K_VREAD, SCIF_RMA_SYNC | SCIF_RMA_USECPU},
        {"scif_vreadfrom SYNC|USECPU|USECACHE", K_VREAD,
         SCIF_RMA_SYNC | SCIF_RMA_USECPU | SCIF_RMA_USECACHE},
        {"scif_readfrom SYNC|USECPU", K_READ, SCIF_RMA_SYNC | SCIF_RMA_USECPU},
        {"process_vm_readv", K_CMA, 0},
    };
    double med[4], p99[4];
    unsigned i;

    printf("\n4 KiB latency in us (%d calls each; ratio = median / process_vm_readv's):\n", LAT_N);
    printf("  %-36s %9s %9s %7s\n", "call", "median", "p99", "ratio");
    for (i = 0; i < 4; i++)
        if (lat4k(c, rows[i].k, rows[i].flags, &med[i], &p99[i]))
            med[i] = p99[i] = -1;
    for (i = 0; i < 4; i++) {
        results_add("latency", rows[i].name, 4096, med[i], "us");
        printf("  %-36s %9.2f %9.2f", rows[i].name, med[i], p99[i]);
        if (med[i] > 0 && med[3] > 0)
            printf(" %7.2f\n", med[i] / med[3]);
        else
            printf(" %7s\n", "n/a");
    }
}

static void print_size(size_t len) {
    if (len >= MiB)
        printf("%6zu MiB", len / MiB);
    else
        printf("%6zu KiB", len / 1024);
}

/* a / b, or n/a when either is missing. */
static void print_ratio(double a, double b) {
    if (a < 0 || b <= 0)
        printf(" %9s", "n/a");
    else
        printf(" %9.2f", a / b);
}

/* Keep the smaller of *best (negative: none yet) and v. */
static void keep_min(double *best, double v) {
    if (v >= 0 && (*best < 0 || v < *best))
        *best = v;
}

/*
 * Registration next to pinning the same pages in the kernel and to mlock,
 * interleaved round by round and the best round of each kept, so that a
 * busy moment of the machine does not land on one of them only.
 */
static void reg_cost(struct ctx *c) {
    const size_t len = 16 * MiB;
    const unsigned long pages = len / 4096;
    uint8_t *m = map_buf(len);
    double reg = -1, unreg = -1, ml = -1, mu = -1, pin = -1, a, b;
    int i, n = 10;

    for (i = 0; i < n; i++) {
        off_t o;

        a = now_sec();
        o = scif_register(c->ep, m, len, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, 0);
        if (o < 0)
            die("register");
        b = now_sec();
        if (scif_unregister(c->ep, o, len))
            die("unregister");
        keep_min(&reg, b - a);
        keep_min(&unreg, now_sec() - b);
        a = copyref_ns(m, m, len, 1, 2);
        keep_min(&pin, a > 0 ? a * 1e-9 : -1);
        a = now_sec();
        if (mlock(m, len))
            die("mlock");
        b = now_sec();
        if (munlock(m, len))
            die("munlock");
        keep_min(&ml, b - a);
        keep_min(&mu, now_sec() - b);
    }
    printf("\nregistration cost per 4 KiB page (16 MiB region, best of %d interleaved rounds;\n"
           "goal: register <= 1.20x pin):\n",
           n);
    printf("  scif_register   %8.3f us/page    scif_unregister %8.3f us/page\n", reg / pages * 1e6,
           unreg / pages * 1e6);
    if (pin > 0)
        printf("  pin (kernel)    %8.3f us/page    (pin_user_pages_fast, FOLL_LONGTERM|FOLL_WRITE, "
               "scif_copyref.ko)\n",
               pin / pages * 1e6);
    else
        printf("  pin (kernel)         n/a          (load kernel/test/scif_copyref.ko)\n");
    printf("  mlock           %8.3f us/page    munlock         %8.3f us/page\n", ml / pages * 1e6,
           mu / pages * 1e6);
    if (pin > 0)
        printf("  register / pin ratio: %.2f\n", reg / pin);
    printf("  register / mlock ratio: %.2f\n", reg / ml);
    munmap(m, len);
}

/*
 * RMA with many windows: the 4 KiB latency (best of 3 medians) and the
 * 1 MiB bandwidth of window calls with the one window each endpoint has,
 * then again once both endpoints hold NWIN windows (the child registers
 * its extra ones on request, see window_server()).  Window lookup is an
 * rbtree walk, so the goal is a cost ratio <= 1.20.
 */
#define NWIN (WINDOW_SERVER_EXTRA + 1)
static double lat_best(struct ctx *c, enum kind k, int flags) {
    double best = -1, med, p99;
    int i;

    for (i = 0; i < 3; i++)
        if (!lat4k(c, k, flags, &med, &p99) && (best < 0 || med < best))
            best = med;
    return best;
}

static void window_count(struct ctx *c, int wfd, int rfd) {
    static const struct {
        const char *name;
        enum kind k;
        size_t len;
    } rows[] = {
        {"scif_readfrom 4 KiB median (us)", K_READ, 4096},
        {"scif_vreadfrom 4 KiB median (us)", K_VREAD, 4096},
        {"scif_readfrom 1 MiB (MB/s)", K_READ, MiB},
        {"scif_vwriteto 1 MiB (MB/s)", K_VWRITE, MiB},
    };
    const int flags = SCIF_RMA_SYNC | SCIF_RMA_USECPU;
    const size_t extra = (size_t)(NWIN - 1) * 4096;
    double v[4][2];
    uint8_t *m;
    unsigned i;
    int pass;
    char k;

    if (max_size < MiB)
        return;
    m = map_buf(extra);
    for (pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (i = 0; i < NWIN - 1; i++)
                if (scif_register(c->ep, m + (size_t)i * 4096, 4096,
                                  (off_t)(max_size + (size_t)i * 4096),
                                  SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) < 0)
                    die("register a small window");
            if (write(wfd, "w", 1) != 1 || read(rfd, &k, 1) != 1 || k != 'k')
                die("the child's windows");
        }
        for (i = 0; i < 4; i++)
            v[i][pass] = rows[i].len == 4096 ? lat_best(c, rows[i].k, flags)
                                             : bw(c, rows[i].k, rows[i].len, flags);
    }
    printf("\nRMA with %d windows on each endpoint next to one (CPU, SYNC; goal: cost ratio <= "
           "1.20):\n",
           NWIN);
    printf("  %-36s %9s %9s %7s\n", "measure", "1 window", "windows", "cost");
    for (i = 0; i < 4; i++) {
        double one = v[i][0], many = v[i][1];

        printf("  %-36s %9.2f %9.2f", rows[i].name, one, many);
        if (one > 0 && many > 0)
            printf(" %7.2f\n", rows[i].len == 4096 ? many / one : one / many);
        else
            printf(" %7s\n", "n/a");
    }
    for (i = 0; i < NWIN - 1; i++)
        if (scif_unregister(c->ep, (off_t)(max_size + (size_t)i * 4096), 4096))
            die("unregister a small window");
    munmap(m, extra);
}

/* The paths of the bandwidth table's columns, as results_add() names them. */
static const char *const bw_path[11] = {
    "scif_vreadfrom CPU", "scif_vreadfrom CPU+cache", "scif_vreadfrom DMA",
    "scif_readfrom CPU",  "scif_readfrom DMA",        "scif_vwriteto CPU",
    "scif_vwriteto DMA",  "CMA (process_vm_readv)",   "memcpy",
    "kernel copy",        "kernel copy (bounce)",
};

/* ---- across hosts: --server and --peer ---- */

#define REMOTE_PORT 3013
#define REMOTE_MAGIC 0x616d7273U /* "srma" */
#define REMOTE_MAX (64 * MiB)

/* The --peer side's request, first on each connection; the server answers one byte. */
struct remote_req {
    uint32_t magic; /* REMOTE_MAGIC */
    uint32_t quit;  /* 1: the server is to exit (no window) */
    uint64_t len;   /* the window: a multiple of 4096, 4096 .. REMOTE_MAX */
};

static int xrecv(scif_epd_t ep, void *p, int len) {
    return scif_recv(ep, p, len, SCIF_RECV_BLOCK) == len ? 0 : -1;
}

/* --server: one connection at a time until a quit request. */
static int remote_serve(uint16_t port) {
    struct scif_portID from;
    scif_epd_t lep, ep;

    lep = scif_open();
    if (lep < 0)
        die("scif_open");
    if (scif_bind(lep, port) < 0)
        die("scif_bind");
    if (scif_listen(lep, 4) < 0)
        die("scif_listen");
    printf("rma_bench: serving on port %u\n", port);
    fflush(stdout);
    for (;;) {
        struct remote_req q;
        uint8_t *buf;
        char k = 'k';

        if (scif_accept(lep, &from, &ep, SCIF_ACCEPT_SYNC) < 0) {
            if (errno == EINTR)
                continue;
            die("scif_accept");
        }
        if (xrecv(ep, &q, sizeof(q)) || q.magic != REMOTE_MAGIC || q.quit > 1 ||
            (!q.quit && (q.len < 4096 || q.len > REMOTE_MAX || q.len % 4096))) {
            fprintf(stderr, "rma_bench: bad request from node %u, ignored\n", from.node);
            scif_close(ep);
            continue;
        }
        if (q.quit) {
            scif_close(ep);
            scif_close(lep);
            return 0;
        }
        buf = map_buf(q.len);
        if (scif_register(ep, buf, q.len, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) != 0)
            die("scif_register (server window)");
        if (scif_send(ep, &k, 1, SCIF_SEND_BLOCK) != 1)
            die("scif_send");
        /*
         * The client's "done" byte ('q': this server is done too), or its
         * close (recv fails: serve the next one): the window goes.
         */
        if (scif_recv(ep, &k, 1, SCIF_RECV_BLOCK) != 1)
            k = 0;
        scif_close(ep);
        munmap(buf, q.len);
        if (k == 'q') {
            scif_close(lep);
            return 0;
        }
    }
}

/* Connect to the --server, retrying a refused connection for 30 s. */
static scif_epd_t remote_connect(struct scif_portID *dst) {
    int tries;

    for (tries = 0;; tries++) {
        scif_epd_t ep = scif_open();

        if (ep < 0)
            die("scif_open");
        if (scif_connect(ep, dst) >= 0)
            return ep;
        if (errno != ECONNREFUSED || tries >= 300)
            die("scif_connect to the --server");
        scif_close(ep);
        usleep(100000);
    }
}

enum rkind { R_VREAD, R_VWRITE, R_READ, R_WRITE };
static const char *const rkind_name[4] = {"scif_vreadfrom", "scif_vwriteto", "scif_readfrom",
                                          "scif_writeto"};

/* One call of kind k at len with flags f. */
static int rone(scif_epd_t ep, uint8_t *buf, enum rkind k, size_t len, int f) {
    switch (k) {
    case R_VREAD:
        return scif_vreadfrom(ep, buf, len, 0, f);
    case R_VWRITE:
        return scif_vwriteto(ep, buf, len, 0, f);
    case R_READ:
        return scif_readfrom(ep, 0, len, 0, f);
    default:
        return scif_writeto(ep, 0, len, 0, f);
    }
}

/* Each measurement: at most -n calls and, past 3 calls, at most -T seconds. */
static double remote_secs = 5;

/*
 * MiB/s of up to n calls of kind k at len (after one warm-up call), fewer
 * when remote_secs run out; *done: the calls made.  Synchronous calls one
 * after the other, or (async) calls without SCIF_RMA_SYNC issued back to
 * back, as many in flight as the module admits, and one fence mark and
 * wait at the end, inside the time: perftest's ib_read_bw keeps several
 * READs in flight the same way.  -1 on error.
 */
static double rbw(scif_epd_t ep, uint8_t *buf, enum rkind k, size_t len, long n, int async,
                  long *done) {
    const int f = async ? 0 : SCIF_RMA_SYNC;
    double t0, t = 0;
    int mark;
    long i;

    if (rone(ep, buf, k, len, SCIF_RMA_SYNC))
        return -1;
    t0 = now_sec();
    for (i = 0; i < n && (i < 3 || t < remote_secs); i++) {
        if (rone(ep, buf, k, len, f))
            return -1;
        t = now_sec() - t0;
    }
    if (async) {
        if (scif_fence_mark(ep, SCIF_FENCE_INIT_SELF, &mark) || scif_fence_wait(ep, mark))
            return -1;
        t = now_sec() - t0;
    }
    *done = i;
    return t > 0 ? (double)i * len / t / MiB : -1;
}

/* Parses "8,4096,..." into sizes[] (at most max); returns the count, 0 on error. */
static int parse_sizes(const char *arg, size_t *sizes, int max) {
    int n = 0;

    while (*arg) {
        char *end;
        unsigned long long v = strtoull(arg, &end, 10);

        if (end == arg || v < 1 || v > REMOTE_MAX || n == max || (*end && *end != ',') ||
            (*end == ',' && !end[1]))
            return 0;
        sizes[n++] = (size_t)v;
        arg = *end ? end + 1 : end;
    }
    return n;
}

static void remote_usage(void) {
    fprintf(stderr, "usage: rma_bench [max_MiB] [--csv FILE] [--numa WHERE]\n"
                    "       rma_bench --server [PORT]\n"
                    "       rma_bench --peer NODE[:PORT] [-s SIZE,...] [-n ITERS] [-T SECONDS]\n"
                    "                 [--quit] [--csv FILE]\n"
                    "  sizes 1 .. 67108864 bytes (default 8,4096,65536,262144,1048576,4194304);\n"
                    "  ITERS 1 .. 1000000 (default about 16 MiB per size, 20 .. 2000 calls;\n"
                    "  latency: 2000 calls); SECONDS 0.1 .. 3600 (default 5; latency: twice)\n");
    exit(2);
}

/* --peer: the bandwidth table and the 8-byte latency; 0, or 1 on a failed call. */
static int remote_peer(struct scif_portID *dst, const size_t *sizes, int nsizes, long iters) {
    const int lat_n = iters > 0 && iters < LAT_N ? (int)iters : LAT_N;
    struct remote_req q = {REMOTE_MAGIC, 0, 0};
    static double t[LAT_N];
    size_t win = 4096;
    double sum = 0;
    scif_epd_t ep;
    uint8_t *buf;
    int i, k, async, fails = 0, lat_failed = 0;
    long done[4] = {0, 0, 0, 0};
    double lt0;
    char a;

    for (i = 0; i < nsizes; i++)
        if (sizes[i] > win)
            win = sizes[i];
    win = (win + 4095) & ~(size_t)4095;
    q.len = win;
    ep = remote_connect(dst);
    if (scif_send(ep, &q, sizeof(q), SCIF_SEND_BLOCK) != (int)sizeof(q) || xrecv(ep, &a, 1) ||
        a != 'k')
        die("the server's window");
    buf = map_buf(win);
    if (scif_register(ep, buf, win, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) != 0)
        die("scif_register (local window)");
    printf("rma_bench: across hosts, node %u port %u, windows of %zu bytes\n", dst->node, dst->port,
           win);
    for (async = 0; async < 2; async++) {
        printf(async ? "\nbandwidth in MiB/s, asynchronous calls (no SCIF_RMA_SYNC) back to back, "
                       "one fence at the end:\n"
                     : "bandwidth in MiB/s (perftest's \"MB/sec\"), synchronous calls, one at a "
                       "time:\n");
        printf("(calls: of each column, at most %.0f s each)\n", remote_secs);
        printf("%10s %14s %14s %14s %14s %s\n", "bytes", rkind_name[0], rkind_name[1],
               rkind_name[2], rkind_name[3], "calls");
        for (i = 0; i < nsizes; i++) {
            size_t len = sizes[i];
            long n = iters;

            if (n <= 0) {
                n = (long)(16 * MiB / len);
                n = n > 2000 ? 2000 : n < 20 ? 20 : n;
            }
            printf("%10zu", len);
            for (k = 0; k < 4; k++) {
                double v = rbw(ep, buf, (enum rkind)k, len, n, async, &done[k]);
                char path[48];

                if (v < 0) {
                    fails = 1;
                    printf(" %14s", "failed");
                    fprintf(stderr, "rma_bench: %s%s %zu: %s\n", rkind_name[k],
                            async ? " async" : "", len, strerror(errno));
                    continue;
                }
                printf(" %14.4g", v);
                snprintf(path, sizeof(path), "%s remote%s", rkind_name[k], async ? " async" : "");
                results_add("bandwidth", path, len, v, "MiB/s");
            }
            printf(" %ld/%ld/%ld/%ld\n", done[0], done[1], done[2], done[3]);
            fflush(stdout);
        }
    }
    lt0 = now_sec();
    for (i = 0; i < lat_n + 1; i++) {
        double a0 = now_sec();

        if (scif_vreadfrom(ep, buf, 8, 0, SCIF_RMA_SYNC)) {
            fprintf(stderr, "rma_bench: scif_vreadfrom 8: %s\n", strerror(errno));
            fails = lat_failed = 1;
            break;
        }
        if (i) /* the first call warms up */
            t[i - 1] = (now_sec() - a0) * 1e6;
        if (i >= 3 && now_sec() - lt0 > 2 * remote_secs) {
            i++;
            break;
        }
    }
    if (!lat_failed) {
        int m = i - 1;

        for (i = 0; i < m; i++)
            sum += t[i];
        qsort(t, (size_t)m, sizeof(t[0]), cmp_double);
        printf("8-byte scif_vreadfrom latency (%d calls): mean %.2f us, median %.2f us\n", m,
               sum / m, t[m / 2]);
        results_add("latency", "scif_vreadfrom remote mean", 8, sum / m, "us");
        results_add("latency", "scif_vreadfrom remote median", 8, t[m / 2], "us");
    }
    a = 'q';
    (void)scif_send(ep, &a, 1, SCIF_SEND_BLOCK);
    scif_close(ep);
    munmap(buf, win);
    return fails;
}

/* Ends the --server (a request with quit set). */
static void remote_quit(struct scif_portID *dst) {
    struct remote_req q = {REMOTE_MAGIC, 1, 0};
    scif_epd_t ep = remote_connect(dst);

    if (scif_send(ep, &q, sizeof(q), SCIF_SEND_BLOCK) != (int)sizeof(q))
        die("scif_send (quit)");
    scif_close(ep);
}

/* 16-bit number 1..65535 (port) or 0..65535 (node) from s up to end-of-string or ':'. */
static long parse_u16(const char *s, char **end, long min) {
    long v = strtol(s, end, 10);

    return *end == s || v < min || v > 65535 ? -1 : v;
}

/*
 * The cross-host mode, when argv names --server or --peer: runs it and
 * exits; otherwise returns (the single-host mode).
 */
static void remote_main(int argc, char **argv) {
    size_t sizes[32] = {8, 4096, 65536, 262144, 1048576, 4194304};
    struct scif_portID dst = {0, REMOTE_PORT};
    int i, nsizes = 6, server = 0, peer = 0, quit = 0, secs_given = 0;
    long iters = 0, v;
    char *end;

    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--server") || !strcmp(argv[i], "--peer"))
            break;
    if (i == argc)
        return;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];

        if (!strcmp(arg, "--server")) {
            server = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') {
                v = parse_u16(argv[++i], &end, 1);
                if (v < 0 || *end)
                    remote_usage();
                dst.port = (uint16_t)v;
            }
        } else if (!strcmp(arg, "--peer") && i + 1 < argc) {
            peer = 1;
            v = parse_u16(argv[++i], &end, 0);
            if (v < 0 || (*end && *end != ':'))
                remote_usage();
            dst.node = (uint16_t)v;
            if (*end == ':') {
                v = parse_u16(end + 1, &end, 1);
                if (v < 0 || *end)
                    remote_usage();
                dst.port = (uint16_t)v;
            }
        } else if (!strcmp(arg, "-s") && i + 1 < argc) {
            nsizes = parse_sizes(argv[++i], sizes, 32);
            if (!nsizes)
                remote_usage();
        } else if (!strcmp(arg, "-n") && i + 1 < argc) {
            iters = strtol(argv[++i], &end, 10);
            if (*end || iters < 1 || iters > 1000000)
                remote_usage();
        } else if (!strcmp(arg, "-T") && i + 1 < argc) {
            remote_secs = strtod(argv[++i], &end);
            if (*end || !(remote_secs >= 0.1 && remote_secs <= 3600))
                remote_usage();
            secs_given = 1;
        } else if (!strcmp(arg, "--quit")) {
            quit = 1;
        } else {
            remote_usage();
        }
    }
    if (server == peer || (server && (quit || iters || nsizes != 6 || secs_given)))
        remote_usage();
    if (getenv("RMA_BENCH_PARSE_ONLY")) { /* the option-parsing test */
        printf("%s node %u port %u sizes", server ? "server" : "peer", dst.node, dst.port);
        for (i = 0; i < nsizes; i++)
            printf(" %zu", sizes[i]);
        printf(" iters %ld secs %g quit %d\n", iters, remote_secs, quit);
        exit(0);
    }
    if (server)
        exit(remote_serve(dst.port));
    if (quit) {
        remote_quit(&dst);
        exit(0);
    }
    exit(remote_peer(&dst, sizes, nsizes, iters));
}

int main(int argc, char **argv) {
    int to_parent[2], to_child[2], dma, st;
    struct scif_portID dst;
    struct window_hello h;
    struct ctx c;
    struct {
        size_t len;
        double v[12];
    } rows[16];
    unsigned i, j, nrows;
    size_t len;
    char r;

    results_init("rma_bench", &argc, argv);
    remote_main(argc, argv);
    bench_numa_init("rma_bench", &argc, argv,
                    getenv("RMA_BENCH_PEER_NODE") ? atoi(getenv("RMA_BENCH_PEER_NODE")) : 0);
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
        window_server("rma_bench", to_parent[1], to_child[0], map_buf(max_size), max_size);
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
    dma = dbg_dma_channel();

    printf("rma_bench: peer node %u, DMA channel: %s\n", dst.node,
           dma > 0
               ? "yes"
               : (dma == 0 ? "none (DMA columns use the CPU fallback)" : "unknown (no debugfs)"));
    bench_numa_print(stdout);
    printf("bandwidth in MB/s (best of 3); ratio = RMA CPU / process_vm_readv;\n"
           "kcopy = kernel copy reference, memcpy between pinned pages, plain and with\n"
           "aliased pages bounced (%s)\n\n",
           access(COPYREF, W_OK) ? "n/a: load kernel/test/scif_copyref.ko" : "scif_copyref.ko");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s %7s %7s\n", "size", "vread",
           "vread", "vread", "read", "read", "vwrite", "vwrite", "CMA", "memcpy", "kcopy", "kcopy",
           "vread/", "read/", "vwrite/");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s %7s %7s\n", "", "CPU", "CPU+cache",
           "DMA", "CPU", "DMA", "CPU", "DMA", "readv", "", "plain", "bounce", "CMA", "CMA", "CMA");
    nrows = 0;
    for (len = 4096; len <= max_size; len *= 4) {
        double *r = rows[nrows].v;

        rows[nrows].len = len;
        r[0] = bw(&c, K_VREAD, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        r[1] = bw(&c, K_VREAD, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU | SCIF_RMA_USECACHE);
        r[2] = dma > 0 ? bw(&c, K_VREAD, len, SCIF_RMA_SYNC) : -1;
        r[3] = bw(&c, K_READ, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        r[4] = dma > 0 ? bw(&c, K_READ, len, SCIF_RMA_SYNC) : -1;
        r[5] = bw(&c, K_VWRITE, len, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
        r[6] = dma > 0 ? bw(&c, K_VWRITE, len, SCIF_RMA_SYNC) : -1;
        r[7] = bw(&c, K_CMA, len, 0);
        r[8] = bw(&c, K_MEMCPY, len, 0);
        r[9] = kcopy_bw(c.src, c.ubuf, len, 0);
        r[10] = kcopy_bw(c.src, c.ubuf, len, 1);
        r[11] = r[10] > r[9] ? r[10] : r[9];

        print_size(len);
        for (i = 0; i < 11; i++) {
            print_bw(r[i]);
            results_add("bandwidth", bw_path[i], len, r[i], "MB/s");
        }
        printf(" %7.2f %7.2f %7.2f\n", r[0] / r[7], r[3] / r[7], r[5] / r[7]);
        nrows++;
        if (len == max_size)
            break;
        if (len * 4 > max_size)
            len = max_size / 4;
    }
    printf(
        "\nratio to the kernel copy reference (RMA MB/s / the better kcopy; goal >= 0.80 from 1 "
        "MiB),\n"
        "and read/vread (scif_readfrom CPU / scif_vreadfrom CPU; goal >= 0.90 from 64 KiB):\n\n");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "size", "vread", "vread", "vread", "read",
           "read", "vwrite", "vwrite", "read/");
    printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "CPU", "CPU+cache", "DMA", "CPU", "DMA",
           "CPU", "DMA", "vread");
    for (j = 0; j < nrows; j++) {
        double *r = rows[j].v;

        print_size(rows[j].len);
        for (i = 0; i < 7; i++)
            print_ratio(r[i], r[11]);
        print_ratio(r[3], r[0]);
        printf("\n");
    }
    lat_table(&c);
    reg_cost(&c);
    window_count(&c, to_child[1], to_parent[0]);

    if (write(to_child[1], "q", 1) != 1)
        die("quit");
    scif_close(c.ep);
    waitpid(c.pid, &st, 0);
    return 0;
}
