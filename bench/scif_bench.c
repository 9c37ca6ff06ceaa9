// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_bench: SCIF messaging next to a UNIX-socket pair, in one run.
 *
 *   scif_bench [-T SECONDS] [-n MAX] [-r RUNS] [-s SIZE,SIZE,...] [-c CPU] [--csv FILE]
 *              [--numa local|remote|N]
 *
 * Measures, between two threads of this process,
 *   - the round-trip latency of an 8-byte message (ping-pong), and
 *   - the streaming bandwidth for several message sizes,
 * over a SCIF connection on node 0 loopback, a SCIF connection between node
 * 0 and node 1 (when the module has emulated nodes), and a UNIX stream
 * socketpair doing exactly the same, and prints a table with the SCIF/UNIX
 * ratio.  Each figure is the median of RUNS runs, each run lasting about
 * SECONDS.  Both threads run on one CPU (-c) unless told otherwise: the
 * figures then compare the two paths' own costs rather than cross-CPU
 * wake-up latency, which under emulation swings by orders of magnitude.
 * Absolute numbers depend on the machine (and mean little under TCG
 * emulation); the ratio is what compares.  Uses <scif.h>, -lscif and the
 * selftest library's helpers (timing, connected pairs, the byte pattern).
 * With --csv FILE (or SCIF_BENCH_CSV=FILE) the figures are also appended
 * to FILE as CSV (results.h) for bench/plot.  With --numa WHERE (or
 * SCIF_BENCH_NUMA=WHERE) the buffers lie on that host NUMA node and, unless
 * -c says otherwise, the threads run on a CPU chosen by placement.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include <scif.h>

#include "scif_test.h"
#include "placement.h"
#include "results.h"

enum kind { K_SCIF, K_UNIX };

struct chan {
    enum kind kind;
    int fd;
};

static void die(const char *what) {
    fprintf(stderr, "scif_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Move exactly len bytes. */
static void xsend(const struct chan *c, const void *buf, int len) {
    const char *p = buf;

    if (c->kind == K_SCIF) {
        if (scif_send(c->fd, (void *)p, len, SCIF_SEND_BLOCK) != len)
            die("scif_send");
        return;
    }
    while (len > 0) {
        ssize_t n = write(c->fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("write");
        p += n;
        len -= n;
    }
}

static void xrecv(const struct chan *c, void *buf, int len) {
    char *p = buf;

    if (c->kind == K_SCIF) {
        if (scif_recv(c->fd, p, len, SCIF_RECV_BLOCK) != len)
            die("scif_recv");
        return;
    }
    while (len > 0) {
        ssize_t n = read(c->fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("read");
        p += n;
        len -= n;
    }
}

/* ---- connections ---- */

/* A SCIF connection: a acts as node an, b as node bn (connect_pair()). */
static void scif_pair(int an, int bn, struct chan *a, struct chan *b) {
    a->kind = b->kind = K_SCIF;
    if (connect_pair(an, bn, &a->fd, &b->fd))
        die("connect_pair");
}

static void unix_pair(struct chan *a, struct chan *b) {
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        die("socketpair");
    a->kind = b->kind = K_UNIX;
    a->fd = sv[0];
    b->fd = sv[1];
}

static void chan_close(struct chan *c) {
    if (c->kind == K_SCIF)
        scif_close(c->fd);
    else
        close(c->fd);
}

/* ---- measurements ---- */

/*
 * Message buffers are fresh anonymous mappings, not malloc()ed: heap pages
 * touched before --numa set the memory policy would stay where they are.
 */
static char *map_buf(int size) {
    char *p = map_anon((size_t)size);

    if (!p)
        die("mmap");
    return p;
}

/*
 * Each run goes on for a time budget (at least MIN_ITERS iterations) rather
 * than a fixed count, so that the benchmark takes the same time on a fast
 * machine and under emulation.  The first 8 bytes of every message say
 * whether another one follows.
 */
#define MIN_ITERS 20
#define BENCH_MORE 0x6d6f7265ULL /* "more" */
#define BENCH_STOP 0x73746f70ULL /* "stop" */

static double budget = 0.5; /* seconds per run */
static long max_iters = 1000000;

struct job {
    struct chan *c;
    int size;
};

static void *echo_side(void *arg) {
    struct job *j = arg;
    uint64_t m;

    for (;;) {
        xrecv(j->c, &m, 8);
        if (m == BENCH_STOP)
            break;
        xsend(j->c, &m, 8);
    }
    return NULL;
}

/* Microseconds per 8-byte round trip. */
static double latency(struct chan *a, struct chan *b) {
    struct job j = {b, 8};
    uint64_t m = BENCH_MORE;
    double t0, t;
    pthread_t th;
    long i;

    if (pthread_create(&th, NULL, echo_side, &j))
        die("pthread_create");
    for (i = 0; i < 20; i++) { /* warm up */
        xsend(a, &m, 8);
        xrecv(a, &m, 8);
    }
    t0 = now_sec();
    for (i = 0;; i++) {
        t = now_sec() - t0;
        if (i >= max_iters || (i >= MIN_ITERS && t >= budget))
            break;
        xsend(a, &m, 8);
        xrecv(a, &m, 8);
    }
    m = BENCH_STOP;
    xsend(a, &m, 8);
    pthread_join(th, NULL);
    return t / i * 1e6;
}

static void *sink_side(void *arg) {
    struct job *j = arg;
    char *buf = map_buf(j->size);
    uint64_t m;

    do {
        xrecv(j->c, buf, j->size);
        memcpy(&m, buf, 8);
    } while (m == BENCH_MORE);
    xsend(j->c, "k", 1); /* everything arrived */
    bench_numa_check(buf, (size_t)j->size, "the receiving buffer");
    munmap(buf, (size_t)j->size);
    return NULL;
}

/* MiB/s streaming messages of size bytes, a -> b. */
static double bandwidth(struct chan *a, struct chan *b, int size) {
    struct job j = {b, size};
    char *buf = map_buf(size), ack;
    uint64_t m = BENCH_MORE;
    pthread_t th;
    double t0;
    long i;

    pattern_fill(buf, (size_t)size, 0x3c, 0);
    bench_numa_check(buf, (size_t)size, "the sending buffer");
    memcpy(buf, &m, 8);
    if (pthread_create(&th, NULL, sink_side, &j))
        die("pthread_create");
    t0 = now_sec();
    for (i = 1;; i++) {
        if (i >= max_iters || (i >= MIN_ITERS && now_sec() - t0 >= budget)) {
            m = BENCH_STOP;
            memcpy(buf, &m, 8);
        }
        xsend(a, buf, size);
        if (m == BENCH_STOP)
            break;
    }
    xrecv(a, &ack, 1);
    t0 = now_sec() - t0;
    pthread_join(th, NULL);
    munmap(buf, (size_t)size);
    return (double)i * size / t0 / (1 << 20);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

#define MAX_RUNS 15

/* Path: 0 = SCIF node 0 <-> 0, 1 = SCIF node 0 <-> 1, 2 = UNIX socketpair. */
static void make_pair(int path, struct chan *a, struct chan *b) {
    if (path == 2)
        unix_pair(a, b);
    else
        scif_pair(0, path, a, b);
}

static double median_latency(int path, int runs) {
    double v[MAX_RUNS];
    int r;

    for (r = 0; r < runs; r++) {
        struct chan a, b;

        make_pair(path, &a, &b);
        v[r] = latency(&a, &b);
        chan_close(&a);
        chan_close(&b);
    }
    qsort(v, runs, sizeof(v[0]), cmp_double);
    return v[runs / 2];
}

static double median_bw(int path, int size, int runs) {
    double v[MAX_RUNS];
    int r;

    for (r = 0; r < runs; r++) {
        struct chan a, b;

        make_pair(path, &a, &b);
        v[r] = bandwidth(&a, &b, size);
        chan_close(&a);
        chan_close(&b);
    }
    qsort(v, runs, sizeof(v[0]), cmp_double);
    return v[runs / 2];
}

static const char *size_str(int size, char *buf, size_t len) {
    if (size >= (1 << 20) && !(size % (1 << 20)))
        snprintf(buf, len, "%d MiB", size >> 20);
    else if (size >= 1024 && !(size % 1024))
        snprintf(buf, len, "%d KiB", size >> 10);
    else
        snprintf(buf, len, "%d B", size);
    return buf;
}

/* The module's per-endpoint queue size, as text ("unknown" if unreadable). */
static const char *ring_size(char *buf, size_t len) {
    FILE *f = fopen("/sys/module/scif/parameters/ring_size", "r");
    int v = 0;

    if (!f || fscanf(f, "%d", &v) != 1 || v <= 0)
        snprintf(buf, len, "unknown");
    else
        size_str(v, buf, len);
    if (f)
        fclose(f);
    return buf;
}

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [-T SECONDS] [-n MAX] [-r RUNS] [-s SIZE,...] [-c CPU] [--csv FILE]\n"
            "  -T SECONDS  length of one run (default 0.5; at least %d messages)\n"
            "  -n MAX      at most MAX messages or round trips per run (default 1000000)\n"
            "  -r RUNS     runs per figure, the median is shown (default 3, max %d)\n"
            "  -s SIZES    message sizes in bytes, >= 8 (default 64,4096,65536,1048576)\n"
            "  -c CPU      run both threads on this CPU (default 0); \"any\": let the\n"
            "              scheduler place them (cross-CPU wake-ups; very noisy under TCG)\n"
            "  --csv FILE  also append the figures to FILE as CSV (or SCIF_BENCH_CSV=FILE)\n"
            "  --numa WHERE  buffers on a host NUMA node: local, remote or a node number;\n"
            "              threads on a CPU of it (or SCIF_BENCH_NUMA=WHERE)\n",
            prog, MIN_ITERS, MAX_RUNS);
    exit(2);
}

int main(int argc, char **argv) {
    int sizes[16] = {64, 4096, 65536, 1 << 20}, nsizes = 4, runs = 3, opt, i, npaths, cpu = 0;
    uint16_t nodes[32], self = 0;
    struct utsname u;
    double lat[3];
    char sbuf[32], rbuf[32];
    int online, cpu_given = 0;

    results_init("scif_bench", &argc, argv);
    /* "local": node 1's NUMA node (the emulated peer), else this CPU's. */
    bench_numa_init("scif_bench", &argc, argv, 1);
    while ((opt = getopt(argc, argv, "T:n:r:s:c:h")) != -1) {
        switch (opt) {
        case 'T':
            budget = atof(optarg);
            break;
        case 'n':
            max_iters = atol(optarg);
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 'c':
            cpu = strcmp(optarg, "any") ? atoi(optarg) : -1;
            cpu_given = 1;
            break;
        case 's': {
            char *s = optarg, *end;

            for (nsizes = 0; *s && nsizes < 16; nsizes++) {
                sizes[nsizes] = (int)strtol(s, &end, 0);
                if (end == s || sizes[nsizes] < 8 || sizes[nsizes] > (64 << 20))
                    usage(argv[0]);
                s = *end == ',' ? end + 1 : end;
            }
            break;
        }
        default:
            usage(argv[0]);
        }
    }
    if (budget <= 0 || max_iters < MIN_ITERS || runs <= 0 || runs > MAX_RUNS || !nsizes)
        usage(argv[0]);
    if (!cpu_given && bench_numa_active())
        cpu = bench_numa_cpu();
    if (cpu >= 0) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        /* Threads created later inherit the affinity. */
        if (sched_setaffinity(0, sizeof(set), &set))
            die("sched_setaffinity");
    }

    online = scif_get_nodeIDs(nodes, 32, &self);
    if (online < 0)
        die("scif_get_nodeIDs (is the scif module loaded?)");
    npaths = online > 1 ? 2 : 1;
    uname(&u);
    printf("openscif messaging benchmark: SCIF endpoints vs a UNIX-socket pair, one run\n");
    printf("kernel %s, %ld CPUs, %d SCIF nodes online; two threads of one process;\n", u.release,
           sysconf(_SC_NPROCESSORS_ONLN), online);
    printf("each figure is the median of %d runs of %.2f s; threads %s\n", runs, budget,
           cpu >= 0 ? "pinned to one CPU" : "placed by the scheduler");
    printf("per-endpoint queue (module parameter ring_size): %s\n", ring_size(rbuf, sizeof(rbuf)));
    bench_numa_print(stdout);
    printf("\n");

    printf("8-byte message round trip (us, lower is better)\n");
    printf("  %-22s %12s %12s %10s\n", "path", "SCIF", "UNIX", "SCIF/UNIX");
    lat[2] = median_latency(2, runs);
    results_add("latency", "UNIX socket pair", 8, lat[2], "us");
    for (i = 0; i < npaths; i++) {
        lat[i] = median_latency(i, runs);
        results_add("latency", i ? "SCIF node 0 - node 1" : "SCIF node 0 loopback", 8, lat[i],
                    "us");
        printf("  %-22s %12.2f %12.2f %10.2f\n", i ? "node 0 <-> node 1" : "node 0 <-> node 0",
               lat[i], lat[2], lat[i] / lat[2]);
    }
    if (npaths < 2)
        printf("  (node 0 <-> node 1 not measured: load scif with nodes=1 or more)\n");

    printf("\nstreaming bandwidth (MiB/s, higher is better)\n");
    printf("  %-10s %14s %14s %12s %12s %12s\n", "msg size", "SCIF 0<->0", "SCIF 0<->1", "UNIX",
           "0<->0/UNIX", "0<->1/UNIX");
    for (i = 0; i < nsizes; i++) {
        double bw[3];
        int p;

        bw[2] = median_bw(2, sizes[i], runs);
        results_add("bandwidth", "UNIX socket pair", (size_t)sizes[i], bw[2], "MiB/s");
        for (p = 0; p < npaths; p++) {
            bw[p] = median_bw(p, sizes[i], runs);
            results_add("bandwidth", p ? "SCIF node 0 - node 1" : "SCIF node 0 loopback",
                        (size_t)sizes[i], bw[p], "MiB/s");
        }
        printf("  %-10s %14.1f", size_str(sizes[i], sbuf, sizeof(sbuf)), bw[0]);
        if (npaths > 1)
            printf(" %14.1f", bw[1]);
        else
            printf(" %14s", "-");
        printf(" %12.1f %12.2f", bw[2], bw[0] / bw[2]);
        if (npaths > 1)
            printf(" %12.2f\n", bw[1] / bw[2]);
        else
            printf(" %12s\n", "-");
        fflush(stdout);
    }
    return 0;
}
