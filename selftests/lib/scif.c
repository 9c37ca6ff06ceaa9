// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* SCIF connection helpers of the selftests (see scif_test.h). */
#include "scif_test.h"

/* Open an endpoint acting as @node: node 0 via scif_open(), others via /dev/scifN. */
int ep_open(int node) {
    char path[32];

    if (node == 0)
        return scif_open();
    snprintf(path, sizeof(path), "/dev/scif%d", node);
    return open(path, O_RDWR | O_CLOEXEC);
}

/* Number of emulated nodes the module was loaded with, or -1 if unknown. */
int module_nodes_param(void) {
    long long n = read_long("/sys/module/scif/parameters/nodes");

    return n >= 0 && n <= 1024 ? (int)n : -1;
}

/* Highest online node id as seen from node 0, or -1 on error. */
int max_node(void) {
    uint16_t nodes[64], self = 0xffff;
    int n, i, max = -1;

    n = scif_get_nodeIDs(nodes, 64, &self);
    for (i = 0; i < n && i < 64; i++)
        if (nodes[i] > max)
            max = nodes[i];
    return max;
}

/* Bound, listening endpoint on @node; port 0 picks one.  Returns epd or -1. */
int make_listener(int node, uint16_t port, int backlog, uint16_t *bound) {
    int epd = ep_open(node), p;

    if (epd < 0)
        return -1;
    p = scif_bind(epd, port);
    if (p < 0 || scif_listen(epd, backlog) < 0) {
        int e = errno;

        close(epd);
        errno = e;
        return -1;
    }
    if (bound)
        *bound = (uint16_t)p;
    return epd;
}

void *connect_thread(void *arg) {
    struct connect_job *j = (struct connect_job *)arg;

    errno = 0;
    j->ret = scif_connect(j->epd, &j->dst);
    j->err = errno;
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/*
 * Connected pair: *client acts as @cnode, *server (the accepted endpoint)
 * acts as @snode.  Returns 0, or -1 with a diagnostic and errno set
 * (ECONNABORTED: the request went to another accept, see below).
 */
int connect_pair(int snode, int cnode, int *server, int *client) {
    struct connect_job job;
    struct scif_portID peer;
    uint16_t port;
    pthread_t th;
    int lep, r, err;

    lep = make_listener(snode, 0, 16, &port);
    if (lep < 0) {
        diag("listener on node %d: %s", snode, strerror(errno));
        return -1;
    }
    job.epd = ep_open(cnode);
    if (job.epd < 0) {
        diag("open as node %d: %s", cnode, strerror(errno));
        close(lep);
        return -1;
    }
    job.dst.node = (uint16_t)snode;
    job.dst.port = port;
    job.done = 0;
    if (pthread_create(&th, NULL, connect_thread, &job)) {
        close(lep);
        close(job.epd);
        return -1;
    }
    /*
     * Wait for the request without blocking in accept: if the connect fails
     * (e.g. ENODEV) no request ever arrives and a blocking accept would hang
     * the test.  The 60 s bound only catches a hang; it is no timing check.
     */
    /*
     * Nor in accept once the request is there: another accept on the
     * listener (a fuzzer's call on a reused descriptor number) may take
     * it between the poll and ours, and a SCIF_ACCEPT_SYNC accept would
     * then wait for good.  Ours does not wait (EAGAIN: gone, poll again);
     * a connect that ended while we have no request was answered
     * elsewhere, or failed: ECONNABORTED.
     */
    r = -1;
    err = ETIMEDOUT;
    for (int waited = 0; waited < 600; waited++) {
        struct pollfd pfd = {.fd = lep, .events = POLLIN};

        if (poll(&pfd, 1, 100) > 0) {
            r = scif_accept(lep, &peer, server, 0);
            err = errno;
            if (r >= 0 || err != EAGAIN)
                break;
        }
        if (__atomic_load_n(&job.done, __ATOMIC_ACQUIRE)) {
            err = ECONNABORTED;
            break;
        }
    }
    if (r < 0)
        diag("accept on node %d: %s", snode, strerror(err));
    close(lep); /* a connector still waiting gets ECONNREFUSED, so join returns */
    pthread_join(th, NULL);
    if (job.ret < 0)
        diag("connect %d -> %d:%u: %s", cnode, snode, port, strerror(job.err));
    if (r < 0 || job.ret < 0) {
        if (r >= 0)
            close(*server);
        close(job.epd);
        errno = r < 0 ? err : job.err;
        return -1;
    }
    if (peer.node != cnode) {
        diag("accept reported peer node %u, expected %d", peer.node, cnode);
        close(*server);
        close(job.epd);
        return -1;
    }
    *client = job.epd;
    return 0;
}

/* Send/receive exactly len bytes with the blocking flags. */
int send_all(int epd, const void *buf, int len) {
    int r = scif_send(epd, (void *)buf, len, SCIF_SEND_BLOCK);

    return r == len ? 0 : -1;
}

int recv_all(int epd, void *buf, int len) {
    int r = scif_recv(epd, buf, len, SCIF_RECV_BLOCK);

    return r == len ? 0 : -1;
}

int peer_node(void) {
    return max_node() >= 1 ? 1 : -1;
}

uint8_t *rma_window(int epd, size_t len, off_t off, int prot) {
    uint8_t *buf = map_anon(len);
    off_t r;

    if (!buf) {
        diag("map %zu bytes: %s", len, strerror(errno));
        return NULL;
    }
    r = scif_register(epd, buf, len, off, prot, SCIF_MAP_FIXED);
    if (r != off) {
        diag("register %zu bytes at %#llx: %s", len, (long long)off, strerror(errno));
        munmap(buf, len);
        return NULL;
    }
    return buf;
}

int rma_pair_open(struct rma_pair *p, uint8_t *rbuf, uint8_t *ubuf, size_t len, off_t roff) {
    p->srv = p->cli = -1;
    p->rbuf = rbuf ? rbuf : map_anon(len);
    p->ubuf = ubuf ? ubuf : map_anon(len);
    p->roff = roff;
    if (!p->rbuf || !p->ubuf) {
        diag("map %zu bytes: %s", len, strerror(errno));
        return -1;
    }
    if (connect_pair(1, 0, &p->srv, &p->cli))
        return -1;
    if (scif_register(p->srv, p->rbuf, len, roff, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != roff) {
        diag("register: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void rma_pair_close(struct rma_pair *p) {
    if (p->cli >= 0)
        scif_close(p->cli);
    if (p->srv >= 0)
        scif_close(p->srv);
    p->cli = p->srv = -1;
}

int fence_all(int epd) {
    int mark;

    if (scif_fence_mark(epd, SCIF_FENCE_INIT_SELF, &mark))
        return -1;
    return scif_fence_wait(epd, mark);
}

int dma_ready(struct rma_pair *p) {
    int i;

    for (i = 0; i < 100; i++) {
        long long before = dbg_dma_value("dma_bytes");

        if (scif_vreadfrom(p->cli, p->ubuf, 16 * PAGE, p->roff, SCIF_RMA_SYNC))
            return -1;
        if (dbg_dma_value("dma_bytes") > before)
            return 0;
        sleep_ms(50);
    }
    diag("the DMA channel did not come back");
    return -1;
}

static void __attribute__((noreturn)) child_die(const char *who, const char *what) {
    fprintf(stderr, "%s: child %s: %s\n", who, what, strerror(errno));
    exit(1);
}

void window_server(const char *who, int wfd, int rfd, void *buf, size_t len) {
    struct scif_portID peer;
    struct window_hello h;
    scif_epd_t l, e;
    char c;
    int p;

    l = scif_open();
    if (l < 0)
        child_die(who, "scif_open");
    p = scif_bind(l, 0);
    if (p < 0 || scif_listen(l, 1) < 0)
        child_die(who, "bind/listen");
    memset(&h, 0, sizeof(h));
    h.port = (uint16_t)p;
    h.addr = (uintptr_t)buf;
    if (write(wfd, &h, sizeof(h)) != sizeof(h))
        child_die(who, "write");
    if (scif_accept(l, &peer, &e, SCIF_ACCEPT_SYNC) < 0)
        child_die(who, "accept");
    if (scif_register(e, buf, len, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) != 0)
        child_die(who, "register");
    if (write(wfd, "r", 1) != 1)
        child_die(who, "write");
    while (read(rfd, &c, 1) == 1 && c == 'w') {
        size_t extra = (size_t)WINDOW_SERVER_EXTRA * 4096, i;
        uint8_t *m = map_anon(extra);

        if (!m)
            child_die(who, "mmap");
        memset(m, 0x5a, extra);
        for (i = 0; i < WINDOW_SERVER_EXTRA; i++)
            if (scif_register(e, m + i * 4096, 4096, (off_t)(len + i * 4096),
                              SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) < 0)
                child_die(who, "register a small window");
        if (write(wfd, "k", 1) != 1)
            child_die(who, "write");
    }
    scif_close(e);
    scif_close(l);
    _exit(0);
}
