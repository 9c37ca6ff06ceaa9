// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_bench: SCIF messaging next to a UNIX-socket pair, in one run.
 *
 *   scif_bench [-n ITERS] [-t MIB] [-r RUNS] [-s SIZE,SIZE,...]
 *
 * Measures, between two threads of this process,
 *   - the round-trip latency of an 8-byte message (ping-pong), and
 *   - the streaming bandwidth for several message sizes,
 * over a SCIF connection on node 0 loopback, a SCIF connection between node
 * 0 and node 1 (when the module has emulated nodes), and a UNIX stream
 * socketpair doing exactly the same, and prints a table with the SCIF/UNIX
 * ratio.  Each figure is the median of RUNS runs.  Absolute numbers depend on
 * the machine (and mean little under TCG emulation); the ratio is what
 * compares.  Uses only <scif.h> and -lscif.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include <scif.h>

enum kind { K_SCIF, K_UNIX };

struct chan {
    enum kind kind;
    int fd;
};

static void die(const char *what)
{
    fprintf(stderr, "scif_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Move exactly len bytes. */
static void xsend(const struct chan *c, const void *buf, int len)
{
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

static void xrecv(const struct chan *c, void *buf, int len)
{
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

static int ep_open(int node)
{
    char path[32];

    if (node == 0)
        return scif_open();
    snprintf(path, sizeof(path), "/dev/scif%d", node);
    return open(path, O_RDWR | O_CLOEXEC);
}

struct conn_job {
    int epd;
    struct scif_portID dst;
    int ret;
};

static void *do_connect(void *arg)
{
    struct conn_job *j = arg;

    j->ret = scif_connect(j->epd, &j->dst);
    return NULL;
}

/* A SCIF connection: a acts as node an, b as node bn. */
static void scif_pair(int an, int bn, struct chan *a, struct chan *b)
{
    struct scif_portID peer;
    struct conn_job job;
    pthread_t th;
    int l, port;

    l = ep_open(an);
    if (l < 0)
        die("open listener");
    port = scif_bind(l, 0);
    if (port < 0 || scif_listen(l, 1) < 0)
        die("bind/listen");
    job.epd = ep_open(bn);
    if (job.epd < 0)
        die("open");
    job.dst.node = (uint16_t)an;
    job.dst.port = (uint16_t)port;
    if (pthread_create(&th, NULL, do_connect, &job))
        die("pthread_create");
    a->kind = b->kind = K_SCIF;
    if (scif_accept(l, &peer, &a->fd, SCIF_ACCEPT_SYNC) < 0)
        die("scif_accept");
    pthread_join(th, NULL);
    if (job.ret < 0)
        die("scif_connect");
    b->fd = job.epd;
    scif_close(l);
}

static void unix_pair(struct chan *a, struct chan *b)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        die("socketpair");
    a->kind = b->kind = K_UNIX;
    a->fd = sv[0];
    b->fd = sv[1];
}

static void chan_close(struct chan *c)
{
    if (c->kind == K_SCIF)
        scif_close(c->fd);
    else
        close(c->fd);
}

/* ---- measurements ---- */

struct job {
    struct chan *c;
    long iters; /* latency: round trips; bandwidth: messages */
    int size;
    long total;
};

static void *echo_side(void *arg)
{
    struct job *j = arg;
    char buf[8];
    long i;

    for (i = 0; i < j->iters; i++) {
        xrecv(j->c, buf, 8);
        xsend(j->c, buf, 8);
    }
    return NULL;
}

/* Microseconds per 8-byte round trip. */
static double latency(struct chan *a, struct chan *b, long iters)
{
    struct job j = {b, iters + 100, 8, 0};
    char buf[8] = "pingpong";
    pthread_t th;
    double t0 = 0;
    long i;

    if (pthread_create(&th, NULL, echo_side, &j))
        die("pthread_create");
    for (i = 0; i < iters + 100; i++) {
        if (i == 100)
            t0 = now(); /* the first 100 warm up */
        xsend(a, buf, 8);
        xrecv(a, buf, 8);
    }
    t0 = now() - t0;
    pthread_join(th, NULL);
    return t0 / iters * 1e6;
}

static void *sink_side(void *arg)
{
    struct job *j = arg;
    char *buf = malloc(j->size);
    long i;

    if (!buf)
        die("malloc");
    for (i = 0; i < j->iters; i++)
        xrecv(j->c, buf, j->size);
    xsend(j->c, "k", 1); /* everything arrived */
    free(buf);
    return NULL;
}

/* MiB/s streaming total bytes in messages of size bytes, a -> b. */
static double bandwidth(struct chan *a, struct chan *b, int size, long total)
{
    long iters = total / size, i;
    struct job j = {b, iters, size, total};
    char *buf = malloc(size), ack;
    pthread_t th;
    double t;

    if (!buf)
        die("malloc");
    memset(buf, 0x3c, size);
    if (pthread_create(&th, NULL, sink_side, &j))
        die("pthread_create");
    t = now();
    for (i = 0; i < iters; i++)
        xsend(a, buf, size);
    xrecv(a, &ack, 1);
    t = now() - t;
    pthread_join(th, NULL);
    free(buf);
    return (double)iters * size / t / (1 << 20);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

#define MAX_RUNS 15

/* Path: 0 = SCIF node 0 <-> 0, 1 = SCIF node 0 <-> 1, 2 = UNIX socketpair. */
static void make_pair(int path, struct chan *a, struct chan *b)
{
    if (path == 2)
        unix_pair(a, b);
    else
        scif_pair(0, path, a, b);
}

static double median_latency(int path, long iters, int runs)
{
    double v[MAX_RUNS];
    int r;

    for (r = 0; r < runs; r++) {
        struct chan a, b;

        make_pair(path, &a, &b);
        v[r] = latency(&a, &b, iters);
        chan_close(&a);
        chan_close(&b);
    }
    qsort(v, runs, sizeof(v[0]), cmp_double);
    return v[runs / 2];
}

static double median_bw(int path, int size, long total, int runs)
{
    double v[MAX_RUNS];
    int r;

    for (r = 0; r < runs; r++) {
        struct chan a, b;

        make_pair(path, &a, &b);
        v[r] = bandwidth(&a, &b, size, total);
        chan_close(&a);
        chan_close(&b);
    }
    qsort(v, runs, sizeof(v[0]), cmp_double);
    return v[runs / 2];
}

static const char *size_str(int size, char *buf, size_t len)
{
    if (size >= (1 << 20) && !(size % (1 << 20)))
        snprintf(buf, len, "%d MiB", size >> 20);
    else if (size >= 1024 && !(size % 1024))
        snprintf(buf, len, "%d KiB", size >> 10);
    else
        snprintf(buf, len, "%d B", size);
    return buf;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-n ITERS] [-t MIB] [-r RUNS] [-s SIZE,...]\n"
            "  -n ITERS  round trips per latency run (default 5000)\n"
            "  -t MIB    bytes streamed per bandwidth run, in MiB (default 64;\n"
            "            at most 50000 messages per run)\n"
            "  -r RUNS   runs per figure, the median is shown (default 3, max %d)\n"
            "  -s SIZES  message sizes in bytes (default 64,4096,65536,1048576)\n",
            prog, MAX_RUNS);
    exit(2);
}

int main(int argc, char **argv)
{
    int sizes[16] = {64, 4096, 65536, 1 << 20}, nsizes = 4, runs = 3, opt, i, npaths;
    long iters = 5000, total_mib = 64;
    uint16_t nodes[32], self = 0;
    struct utsname u;
    double lat[3];
    char sbuf[32];
    int online;

    while ((opt = getopt(argc, argv, "n:t:r:s:h")) != -1) {
        switch (opt) {
        case 'n':
            iters = atol(optarg);
            break;
        case 't':
            total_mib = atol(optarg);
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 's': {
            char *s = optarg, *end;

            for (nsizes = 0; *s && nsizes < 16; nsizes++) {
                sizes[nsizes] = (int)strtol(s, &end, 0);
                if (end == s || sizes[nsizes] <= 0 || sizes[nsizes] > (64 << 20))
                    usage(argv[0]);
                s = *end == ',' ? end + 1 : end;
            }
            break;
        }
        default:
            usage(argv[0]);
        }
    }
    if (iters <= 0 || total_mib <= 0 || runs <= 0 || runs > MAX_RUNS || !nsizes)
        usage(argv[0]);

    online = scif_get_nodeIDs(nodes, 32, &self);
    if (online < 0)
        die("scif_get_nodeIDs (is the scif module loaded?)");
    npaths = online > 1 ? 2 : 1;
    uname(&u);
    printf("openscif messaging benchmark: SCIF endpoints vs a UNIX-socket pair, one run\n");
    printf("kernel %s, %ld CPUs, %d SCIF nodes online; two threads of one process;\n", u.release,
           sysconf(_SC_NPROCESSORS_ONLN), online);
    printf("each figure is the median of %d runs\n\n", runs);

    printf("8-byte message round trip (us, lower is better), %ld round trips per run\n", iters);
    printf("  %-22s %12s %12s %10s\n", "path", "SCIF", "UNIX", "SCIF/UNIX");
    lat[2] = median_latency(2, iters, runs);
    for (i = 0; i < npaths; i++) {
        lat[i] = median_latency(i, iters, runs);
        printf("  %-22s %12.2f %12.2f %10.2f\n", i ? "node 0 <-> node 1" : "node 0 <-> node 0",
               lat[i], lat[2], lat[i] / lat[2]);
    }
    if (npaths < 2)
        printf("  (node 0 <-> node 1 not measured: load scif with nodes=1 or more)\n");

    printf("\nstreaming bandwidth (MiB/s, higher is better), up to %ld MiB per run\n", total_mib);
    printf("  %-10s %14s %14s %12s %12s %12s\n", "msg size", "SCIF 0<->0", "SCIF 0<->1", "UNIX",
           "0<->0/UNIX", "0<->1/UNIX");
    for (i = 0; i < nsizes; i++) {
        long total = total_mib << 20;
        double bw[3];
        int p;

        if (total / sizes[i] > 50000)
            total = 50000L * sizes[i];
        if (total < sizes[i])
            total = sizes[i];
        bw[2] = median_bw(2, sizes[i], total, runs);
        for (p = 0; p < npaths; p++)
            bw[p] = median_bw(p, sizes[i], total, runs);
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
