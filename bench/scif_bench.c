// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_bench: SCIF messaging next to a UNIX-socket pair, in one run.
 *
 *   scif_bench [-T SECONDS] [-n MAX] [-r RUNS] [-s SIZE,SIZE,...] [-c CPU] [--csv FILE]
 *              [--numa local|remote|N]
 *   scif_bench --server [--port PORT] [-c CPU]           (on one host)
 *   scif_bench --peer NODE[:PORT] [-T ...] [-s ...] ...   (on the other)
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
 *
 * Across hosts (scif_rdma.ko), the two ends are two processes: --server
 * listens on node 0's PORT (default BENCH_PORT) and serves one connection
 * at a time, each opened by the --peer side for one run and starting with
 * a struct bench_cmd (echo 8-byte messages, or sink messages of a size and
 * answer one byte at the end, or quit); the --peer side measures as above
 * with the server in the other thread's place, and prints the same tables
 * with only the SCIF column of the remote path.
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
/* --peer: the remote server's node and port (remote_node < 0: not used). */
static int remote_node = -1;
static uint16_t remote_port;
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

/* Microseconds per 8-byte round trip; b NULL: a's other end echoes (--server). */
static double latency(struct chan *a, struct chan *b) {
    struct job j = {b, 8};
    uint64_t m = BENCH_MORE;
    double t0, t;
    pthread_t th;
    long i;

    if (b && pthread_create(&th, NULL, echo_side, &j))
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
    if (b)
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

/* MiB/s streaming messages of size bytes, a -> b (b NULL: a's other end sinks). */
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
    if (b && pthread_create(&th, NULL, sink_side, &j))
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
    if (b)
        pthread_join(th, NULL);
    munmap(buf, (size_t)size);
    return (double)i * size / t0 / (1 << 20);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

#define MAX_RUNS 15

/* ---- across hosts: --server and --peer ---- */

#define BENCH_PORT 3012
#define BENCH_MAGIC 0x6e626373U /* "scbn" */
#define MAX_SIZE (64 << 20)

/* What the --peer side asks for, first on each connection. */
struct bench_cmd {
    uint32_t magic; /* BENCH_MAGIC */
    uint32_t op;    /* enum bench_op */
    uint32_t size;  /* CMD_SINK: the message size, 8 .. MAX_SIZE */
    uint32_t zero;
};

enum bench_op { CMD_ECHO = 1, CMD_SINK, CMD_QUIT };

/* Connect to the --peer server and ask for op; retries ECONNREFUSED for 30 s. */
static void remote_open(struct chan *a, enum bench_op op, int size) {
    struct scif_portID dst = {(uint16_t)remote_node, remote_port};
    struct bench_cmd cmd = {BENCH_MAGIC, op, (uint32_t)size, 0};
    int tries;

    a->kind = K_SCIF;
    for (tries = 0;; tries++) {
        a->fd = scif_open();
        if (a->fd < 0)
            die("scif_open");
        if (scif_connect(a->fd, &dst) >= 0)
            break;
        if (errno != ECONNREFUSED || tries >= 300)
            die("scif_connect to the --peer server");
        scif_close(a->fd);
        usleep(100000);
    }
    xsend(a, &cmd, sizeof(cmd));
}

/* --server: serve one connection at a time until a CMD_QUIT. */
static int serve(uint16_t port) {
    struct scif_portID from;
    int lep, ep;

    lep = scif_open();
    if (lep < 0)
        die("scif_open");
    if (scif_bind(lep, port) < 0)
        die("scif_bind");
    if (scif_listen(lep, 16) < 0)
        die("scif_listen");
    printf("scif_bench: serving on port %u\n", port);
    fflush(stdout);
    for (;;) {
        struct bench_cmd cmd;
        struct chan c = {K_SCIF, -1};
        struct job j = {&c, 8};

        if (scif_accept(lep, &from, &ep, SCIF_ACCEPT_SYNC) < 0) {
            if (errno == EINTR)
                continue;
            die("scif_accept");
        }
        c.fd = ep;
        if (scif_recv(ep, &cmd, sizeof(cmd), SCIF_RECV_BLOCK) != (int)sizeof(cmd) ||
            cmd.magic != BENCH_MAGIC || cmd.zero ||
            (cmd.op == CMD_SINK && (cmd.size < 8 || cmd.size > MAX_SIZE))) {
            fprintf(stderr, "scif_bench: bad request from node %u port %u, ignored\n", from.node,
                    from.port);
            scif_close(ep);
            continue;
        }
        switch (cmd.op) {
        case CMD_ECHO:
            echo_side(&j);
            break;
        case CMD_SINK:
            j.size = (int)cmd.size;
            sink_side(&j);
            break;
        case CMD_QUIT:
            scif_close(ep);
            scif_close(lep);
            return 0;
        default:
            fprintf(stderr, "scif_bench: unknown request %u from node %u, ignored\n", cmd.op,
                    from.node);
        }
        scif_close(ep);
    }
}

/*
 * Removes --server, --port PORT and --peer NODE[:PORT] from argv (as
 * results_init() does for --csv); returns 1 for --server.
 */
static int remote_args(int *argc, char **argv, uint16_t *port) {
    int i, o = 1, server = 0, port_given = 0;
    char *end;
    long v;

    for (i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--server")) {
            server = 1;
        } else if (!strcmp(argv[i], "--port") || !strcmp(argv[i], "--peer")) {
            int is_peer = argv[i][2] == 'p' && argv[i][3] == 'e';
            char *arg = i + 1 < *argc ? argv[++i] : NULL;

            if (!arg)
                goto bad;
            if (is_peer) {
                v = strtol(arg, &end, 10);
                if (end == arg || v < 0 || v > 65535 || (*end && *end != ':'))
                    goto bad;
                remote_node = (int)v;
                if (*end == ':')
                    arg = end + 1;
                else
                    continue;
            }
            v = strtol(arg, &end, 10);
            if (end == arg || *end || v <= 0 || v > 65535)
                goto bad;
            *port = (uint16_t)v;
            port_given = 1;
        } else {
            argv[o++] = argv[i];
        }
    }
    argv[o] = NULL;
    *argc = o;
    if (server && remote_node >= 0) {
        fprintf(stderr, "scif_bench: --server and --peer exclude each other\n");
        exit(2);
    }
    if (port_given && !server && remote_node < 0)
        goto bad;
    return server;
bad:
    fprintf(stderr, "scif_bench: --peer NODE[:PORT], --port PORT (1 to 65535) with --server\n");
    exit(2);
}

/*
 * Path: 0 = SCIF node 0 <-> 0, 1 = SCIF node 0 <-> 1, 2 = UNIX socketpair,
 * 3 = the --peer server (b unused); op and size: what the server is to do.
 */
#define PATH_REMOTE 3
static void make_pair(int path, struct chan *a, struct chan *b, enum bench_op op, int size) {
    if (path == PATH_REMOTE) {
        remote_open(a, op, size);
        b->kind = K_SCIF;
        b->fd = -1;
    } else if (path == 2) {
        unix_pair(a, b);
    } else {
        scif_pair(0, path, a, b);
    }
}

static double median_latency(int path, int runs) {
    double v[MAX_RUNS];
    int r;

    for (r = 0; r < runs; r++) {
        struct chan a, b;

        make_pair(path, &a, &b, CMD_ECHO, 8);
        v[r] = latency(&a, b.fd >= 0 ? &b : NULL);
        chan_close(&a);
        if (b.fd >= 0)
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

        make_pair(path, &a, &b, CMD_SINK, size);
        v[r] = bandwidth(&a, b.fd >= 0 ? &b : NULL, size);
        chan_close(&a);
        if (b.fd >= 0)
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

/* --peer: the same tables, one SCIF path, no UNIX reference. */
static int remote_main(int runs, const int *sizes, int nsizes, int cpu, int online) {
    struct chan q;
    struct utsname u;
    char sbuf[32], path[64];
    double lat;
    int i;

    uname(&u);
    snprintf(path, sizeof(path), "SCIF node 0 - remote node %d", remote_node);
    printf("openscif messaging benchmark: SCIF endpoints across hosts, one run\n");
    printf("kernel %s, %ld CPUs, %d SCIF nodes online; this process and scif_bench --server\n",
           u.release, sysconf(_SC_NPROCESSORS_ONLN), online);
    printf("on node %d port %u; each figure is the median of %d runs of %.2f s; %s\n", remote_node,
           remote_port, runs, budget, cpu >= 0 ? "pinned to one CPU" : "placed by the scheduler");
    bench_numa_print(stdout);
    printf("\n");

    printf("8-byte message round trip (us, lower is better)\n");
    printf("  %-22s %12s %12s %10s\n", "path", "SCIF", "UNIX", "SCIF/UNIX");
    lat = median_latency(PATH_REMOTE, runs);
    results_add("latency", path, 8, lat, "us");
    snprintf(sbuf, sizeof(sbuf), "node 0 <-> node %d", remote_node);
    printf("  %-22s %12.2f %12s %10s\n", sbuf, lat, "-", "-");
    fflush(stdout);

    printf("\nstreaming bandwidth (MiB/s, higher is better)\n");
    printf("  %-10s %14s\n", "msg size", "SCIF remote");
    for (i = 0; i < nsizes; i++) {
        double bw = median_bw(PATH_REMOTE, sizes[i], runs);

        results_add("bandwidth", path, (size_t)sizes[i], bw, "MiB/s");
        printf("  %-10s %14.3f\n", size_str(sizes[i], sbuf, sizeof(sbuf)), bw);
        fflush(stdout);
    }
    remote_open(&q, CMD_QUIT, 0);
    chan_close(&q);
    return 0;
}

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [-T SECONDS] [-n MAX] [-r RUNS] [-s SIZE,...] [-c CPU] [--csv FILE]\n"
            "       %s --server [--port PORT] [-c CPU]\n"
            "       %s --peer NODE[:PORT] [-T SECONDS] [-n MAX] [-r RUNS] [-s SIZE,...] [-c CPU]\n"
            "  -T SECONDS  length of one run (default 0.5; at least %d messages)\n"
            "  -n MAX      at most MAX messages or round trips per run (default 1000000)\n"
            "  -r RUNS     runs per figure, the median is shown (default 3, max %d)\n"
            "  -s SIZES    message sizes in bytes, >= 8 (default 64,4096,65536,1048576)\n"
            "  -c CPU      run both threads on this CPU (default 0); \"any\": let the\n"
            "              scheduler place them (cross-CPU wake-ups; very noisy under TCG)\n"
            "  --csv FILE  also append the figures to FILE as CSV (or SCIF_BENCH_CSV=FILE)\n"
            "  --numa WHERE  buffers on a host NUMA node: local, remote or a node number;\n"
            "              threads on a CPU of it (or SCIF_BENCH_NUMA=WHERE)\n"
            "  --server    serve a --peer run from another host on node 0's PORT, until it ends\n"
            "  --port PORT the --server's port (default %d)\n"
            "  --peer NODE[:PORT]  measure against the --server on remote node NODE\n",
            prog, prog, prog, MIN_ITERS, MAX_RUNS, BENCH_PORT);
    exit(2);
}

int main(int argc, char **argv) {
    int sizes[16] = {64, 4096, 65536, 1 << 20}, nsizes = 4, runs = 3, opt, i, npaths, cpu = 0;
    uint16_t nodes[32], self = 0;
    struct utsname u;
    double lat[3];
    char sbuf[32], rbuf[32];
    int online, cpu_given = 0, server;
    uint16_t port = BENCH_PORT;

    results_init("scif_bench", &argc, argv);
    server = remote_args(&argc, argv, &port);
    remote_port = port;
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
                if (end == s || sizes[nsizes] < 8 || sizes[nsizes] > MAX_SIZE)
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
    if (server)
        return serve(port);
    if (remote_node >= 0)
        return remote_main(runs, sizes, nsizes, cpu, online);
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
