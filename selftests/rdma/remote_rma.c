// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * remote_rma: RMA, fences and scif_mmap on an endpoint connected to a node
 * on another host, over scif_rdma.ko (tools/vm/rdma-rma.test; not an area
 * of run-suite).  Run as
 *
 *   remote_rma server CLIENT_NODE     on one host (listens on node 0)
 *   remote_rma client SERVER_NODE     on the other
 *
 * RMA across hosts (docs/transport.md "RMA across hosts"): the host that
 * owns a window moves the data by RDMA after checking the range against
 * its own windows.  These behaviours check the data on both sides (sizes
 * from 1 byte to 16 MiB, unaligned offsets, a range over two windows,
 * synchronous and asynchronous with fences), the errors (EACCES, ENXIO,
 * the peer closing meanwhile), and what stays local: registering, fence
 * marks and local signals; remote fence signals and scif_mmap give
 * ENXIO.
 *
 * Both sides run the same table in the same order; behaviour k of the
 * client talks to behaviour k of the server on port BASE_PORT + k (the
 * client retries its connect while that port refuses; $REMOTE_RMA_RETRY
 * seconds, 120 by default).  For each behaviour the server registers two
 * adjacent windows of HALF bytes at WIN_OFF (the second read-only in
 * behaviour 9) filled with srv_pat(), tells the client the offset, waits
 * for the client's expectation (a range [a, b) of the window space that
 * must now hold cli_pat(j + delta), the rest unchanged), checks it,
 * unregisters and acknowledges; then the client closes.
 */
#include <sys/mman.h>

#include "scif_test.h"

#define BASE_PORT 3200
/* each of the server's two windows; together they hold a 16 MiB range */
#define HALF ((8 << 20) + (64 << 10))
#define WIN_OFF 0x100000
/* behaviour 7: the client writes SIG_DATA bytes, then signals SIG_AT */
#define SIG_DATA (1 << 20)
#define SIG_AT (2 * HALF - 8)
#define SIG_VAL 0xabcdef0123456789ULL

/* What the server's windows hold at byte j of [0, 2 * HALF). */
static uint8_t srv_pat(size_t j) {
    return (uint8_t)(j * 7 + (j >> 9) + 1);
}

/* What the client's buffers hold at byte i. */
static uint8_t cli_pat(size_t i) {
    return (uint8_t)(i * 13 + (i >> 10) + 0x5a);
}

static int server_mode;
static int other;               /* the other host's node id */
static int retry_seconds = 120; /* $REMOTE_RMA_RETRY */

static uint16_t port_of(int k) {
    return (uint16_t)(BASE_PORT + k);
}

/* Server: accept one connection on port_of(@k), or -1. */
static int accept_one(int k) {
    int l = make_listener(0, port_of(k), 1, NULL), nep;
    struct scif_portID peer;

    if (l < 0) {
        diag("listen on %u: %s", port_of(k), strerror(errno));
        return -1;
    }
    struct pollfd p = {.fd = l, .events = POLLIN};

    if (poll(&p, 1, retry_seconds * 1000) != 1) {
        diag("no connection on %u within %d s", port_of(k), retry_seconds);
        close(l);
        return -1;
    }
    if (scif_accept(l, &peer, &nep, SCIF_ACCEPT_SYNC) < 0) {
        diag("accept: %s", strerror(errno));
        nep = -1;
    } else if (peer.node != other) {
        diag("peer node %u, expected %d", peer.node, other);
        close(nep);
        nep = -1;
    }
    close(l);
    return nep;
}

/* Client: an endpoint connected to behaviour @k's port, or -1. */
static int client_conn(int k) {
    struct scif_portID dst = {(uint16_t)other, port_of(k)};
    int epd = scif_open(), i;

    if (epd < 0)
        return -1;
    for (i = 0; i < retry_seconds * 10; i++) {
        if (scif_connect(epd, &dst) >= 0)
            return epd;
        if (errno != ECONNREFUSED && errno != ENODEV)
            break;
        sleep_ms(100);
    }
    diag("connect to %d:%u: %s", other, port_of(k), strerror(errno));
    close(epd);
    return -1;
}

/*
 * Server half of every behaviour: two adjacent windows of HALF bytes at
 * WIN_OFF holding srv_pat() (the second read-only if @ro2), the offset
 * sent, the client's expectation awaited and checked.  @close_early:
 * close right after the client's first byte (the peer goes away during
 * the client's transfers).
 */
static int serve_opt(int k, int ro2, int close_early, int sig) {
    uint8_t *buf = aligned_alloc(4096, 2 * HALF), done = 0;
    int64_t off = WIN_OFF, exp[3];
    size_t j, bad = 0, first = 0;
    int epd;

    CHECK(buf, "alloc");
    for (j = 0; j < 2 * HALF; j++)
        buf[j] = srv_pat(j);
    epd = accept_one(k);
    CHECK(epd >= 0, "accept");
    CHECK(scif_register(epd, buf, HALF, WIN_OFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                        SCIF_MAP_FIXED) == WIN_OFF,
          "register: %s", strerror(errno));
    CHECK(scif_register(epd, buf + HALF, HALF, WIN_OFF + HALF,
                        ro2 ? SCIF_PROT_READ : SCIF_PROT_READ | SCIF_PROT_WRITE,
                        SCIF_MAP_FIXED) == WIN_OFF + HALF,
          "register the second window: %s", strerror(errno));
    CHECK(send_all(epd, &off, sizeof(off)) == 0, "send offset");
    if (sig) {
        /* the client's remote signal lands after the data it follows */
        volatile uint64_t *v = (volatile uint64_t *)(buf + SIG_AT);

        for (j = 0; j < 200000 && *v != SIG_VAL; j++)
            sleep_ms(1);
        CHECK(*v == SIG_VAL, "no remote signal: %#llx", (unsigned long long)*v);
        for (j = 0; j < SIG_DATA; j++)
            CHECK(buf[j] == cli_pat(j), "byte %zu when the signal was seen: %#x", j, buf[j]);
        for (j = SIG_AT; j < SIG_AT + 8; j++)
            buf[j] = srv_pat(j);
    }
    if (close_early) {
        CHECK(recv_all(epd, &done, 1) == 0, "the client's start byte");
        close(epd);
        free(buf);
        return KSFT_PASS;
    }
    CHECK(recv_all(epd, exp, sizeof(exp)) == 0, "the client's expectation");
    CHECK(exp[0] >= 0 && exp[0] <= exp[1] && exp[1] <= 2 * HALF, "bad expectation");
    for (j = 0; j < 2 * HALF; j++) {
        uint8_t want =
            (int64_t)j >= exp[0] && (int64_t)j < exp[1] ? cli_pat(j + exp[2]) : srv_pat(j);

        if (buf[j] != want && !bad++)
            first = j;
    }
    CHECK(!bad, "%zu bytes of the server's windows wrong, the first at %zu: %#x", bad, first,
          buf[first]);
    CHECK_OK(scif_unregister(epd, WIN_OFF, 2 * HALF));
    CHECK(send_all(epd, &done, 1) == 0, "send the ack");
    close(epd);
    free(buf);
    return KSFT_PASS;
}

static int serve(int k) {
    return serve_opt(k, 0, 0, 0);
}

/* Client: connect for behaviour @k and learn the server's window offset. */
static int client_setup(int k, off_t *roff) {
    int64_t off = 0;
    int epd = client_conn(k);

    if (epd < 0)
        return -1;
    if (recv_all(epd, &off, sizeof(off)) != 0) {
        diag("recv offset");
        close(epd);
        return -1;
    }
    *roff = (off_t)off;
    return epd;
}

/*
 * Client: tell the server that [@a, @b) of its window space must hold
 * cli_pat(j + @delta), the rest srv_pat(j); await its check.
 */
static int client_done_exp(int epd, int64_t a, int64_t b, int64_t delta) {
    int64_t exp[3] = {a, b, delta};
    uint8_t d;

    CHECK(send_all(epd, exp, sizeof(exp)) == 0, "send the expectation");
    CHECK(recv_all(epd, &d, 1) == 0, "the server's ack");
    close(epd);
    return KSFT_PASS;
}

static int client_done(int epd) {
    return client_done_exp(epd, 0, 0, 0);
}

/* A local window on @epd at @loff of @len bytes of cli_pat(). */
static int local_window(int epd, off_t loff, size_t len, uint8_t **buf) {
    size_t i;

    *buf = aligned_alloc(4096, len);
    if (!*buf)
        return -1;
    for (i = 0; i < len; i++)
        (*buf)[i] = cli_pat(i);
    if (scif_register(epd, *buf, len, loff, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) !=
        loff) {
        diag("local register: %s", strerror(errno));
        free(*buf);
        return -1;
    }
    return 0;
}

/* 1: windows register and unregister on a remote-connected endpoint. */
static int t_register(void) {
    uint8_t *buf;
    off_t roff, got;
    int epd;

    if (server_mode)
        return serve(1);
    epd = client_setup(1, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(roff == WIN_OFF, "server's offset %lld", (long long)roff);
    CHECK(local_window(epd, 0, 65536, &buf) == 0, "register at 0");
    got = scif_register(epd, buf, 4096, 0, SCIF_PROT_READ, 0);
    CHECK(got >= 65536, "register anywhere: %lld (%s)", (long long)got, strerror(errno));
    CHECK_OK(scif_unregister(epd, got, 4096));
    CHECK_OK(scif_unregister(epd, 0, 65536));
    CHECK_ERR(scif_unregister(epd, 0, 65536), ENXIO);
    free(buf);
    return client_done(epd);
}

/* The transfers of behaviours 2-5: size, server offset, local offset. */
static const struct {
    size_t len;
    size_t roff; /* from WIN_OFF */
    size_t loff;
    int flags; /* 0: asynchronous, then a fence mark/wait */
} xfers[] = {
    {1, 0, 0, SCIF_RMA_SYNC},
    {4096, 4096, 4096, SCIF_RMA_SYNC},
    {4096, 8195, 13, 0},
    {1 << 20, 65536 + 5, 4099, SCIF_RMA_SYNC | SCIF_RMA_USECPU},
    {1 << 20, 2 << 20, 1, SCIF_RMA_ORDERED},
    /* over both windows */
    {16 << 20, 1, 4096 + 1, SCIF_RMA_SYNC},
    {HALF - 5, HALF / 2, 17, 0},
};
#define NXFERS (sizeof(xfers) / sizeof(xfers[0]))

/* 2: readfrom the far windows into a local one, every size and flag. */
static int t_readfrom(void) {
    uint8_t *buf;
    off_t roff;
    size_t i, j, len = 17 << 20;
    int epd;

    if (server_mode)
        return serve(2);
    epd = client_setup(2, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, len, &buf) == 0, "local window");
    for (i = 0; i < NXFERS; i++) {
        memset(buf, 0xee, len);
        CHECK_OK(
            scif_readfrom(epd, xfers[i].loff, xfers[i].len, roff + xfers[i].roff, xfers[i].flags));
        if (!(xfers[i].flags & SCIF_RMA_SYNC))
            CHECK_OK(fence_all(epd));
        for (j = 0; j < len; j++) {
            uint8_t want = j >= xfers[i].loff && j < xfers[i].loff + xfers[i].len
                               ? srv_pat(j - xfers[i].loff + xfers[i].roff)
                               : 0xee;

            CHECK(buf[j] == want, "transfer %zu (%zu bytes): local byte %zu is %#x, expected %#x",
                  i, xfers[i].len, j, buf[j], want);
        }
    }
    CHECK_OK(scif_unregister(epd, 0, len));
    free(buf);
    return client_done(epd);
}

/*
 * 3: writeto from a local window into the far ones.  Every transfer has
 * local offset = server offset + WSHIFT, and together they cover one
 * range from 0, so the server checks [0, end) holds cli_pat(j + WSHIFT).
 */
#define WSHIFT 4093 /* local offset - server offset, for every write */

static int t_writeto(void) {
    uint8_t *buf;
    off_t roff;
    size_t i, lo = SIZE_MAX, hi = 0, len = 17 << 20;
    int epd;

    if (server_mode)
        return serve(3);
    epd = client_setup(3, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, len, &buf) == 0, "local window");
    for (i = 0; i < NXFERS; i++) {
        size_t r = xfers[i].roff;

        if (r + xfers[i].len > 2 * HALF - WSHIFT)
            r = 2 * HALF - WSHIFT - xfers[i].len;
        CHECK_OK(scif_writeto(epd, r + WSHIFT, xfers[i].len, roff + r, xfers[i].flags));
        if (!(xfers[i].flags & SCIF_RMA_SYNC))
            CHECK_OK(fence_all(epd));
        lo = r < lo ? r : lo;
        hi = r + xfers[i].len > hi ? r + xfers[i].len : hi;
    }
    CHECK_OK(scif_unregister(epd, 0, len));
    free(buf);
    /* the transfers overlap to one range: [lo, hi) holds cli_pat(j + WSHIFT) */
    CHECK(lo == 0, "ranges: %zu", lo);
    return client_done_exp(epd, (int64_t)lo, (int64_t)hi, WSHIFT);
}

/* 4: vreadfrom into user memory (unaligned), every size. */
static int t_vreadfrom(void) {
    size_t len = (16 << 20) + 2, i, j;
    uint8_t *buf = malloc(len);
    off_t roff;
    int epd;

    if (server_mode) {
        free(buf);
        return serve(4);
    }
    CHECK(buf, "alloc");
    epd = client_setup(4, &roff);
    CHECK(epd >= 0, "connect");
    for (i = 0; i < NXFERS; i++) {
        size_t n = xfers[i].len;

        memset(buf, 0xee, len);
        CHECK_OK(scif_vreadfrom(epd, buf + 1, n, roff + xfers[i].roff, xfers[i].flags));
        if (!(xfers[i].flags & SCIF_RMA_SYNC))
            CHECK_OK(fence_all(epd));
        for (j = 0; j < len; j++) {
            uint8_t want = j >= 1 && j < n + 1 ? srv_pat(j - 1 + xfers[i].roff) : 0xee;

            CHECK(buf[j] == want, "transfer %zu: user byte %zu is %#x, expected %#x", i, j, buf[j],
                  want);
        }
    }
    free(buf);
    return client_done(epd);
}

/* 5: vwriteto from user memory (unaligned) into the far windows. */
#define VSHIFT 7 /* user offset - server offset, for every write */

static int t_vwriteto(void) {
    size_t len = 2 * HALF + 64, i, hi = 0;
    uint8_t *buf = malloc(len);
    off_t roff;
    int epd;

    if (server_mode) {
        free(buf);
        return serve(5);
    }
    CHECK(buf, "alloc");
    for (i = 0; i < len; i++)
        buf[i] = cli_pat(i);
    epd = client_setup(5, &roff);
    CHECK(epd >= 0, "connect");
    for (i = 0; i < NXFERS; i++) {
        size_t r = xfers[i].roff;

        CHECK_OK(scif_vwriteto(epd, buf + r + VSHIFT, xfers[i].len, roff + r, xfers[i].flags));
        if (!(xfers[i].flags & SCIF_RMA_SYNC))
            CHECK_OK(fence_all(epd));
        hi = r + xfers[i].len > hi ? r + xfers[i].len : hi;
    }
    free(buf);
    return client_done_exp(epd, 0, (int64_t)hi, VSHIFT);
}

/* 6: fence marks and waits over asynchronous transfers. */
static int t_fence_mark(void) {
    uint8_t *buf;
    off_t roff;
    int epd, mark = -1, i;
    size_t j;

    if (server_mode)
        return serve(6);
    epd = client_setup(6, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, 1 << 20, &buf) == 0, "local window");
    memset(buf, 0, 1 << 20);
    for (i = 0; i < 4; i++)
        CHECK_OK(scif_readfrom(epd, (off_t)i << 18, 1 << 18, roff + ((off_t)i << 18), 0));
    CHECK_OK(scif_fence_mark(epd, SCIF_FENCE_INIT_SELF, &mark));
    CHECK_OK(scif_fence_wait(epd, mark));
    for (j = 0; j < 1 << 20; j++)
        CHECK(buf[j] == srv_pat(j), "byte %zu after the fence: %#x", j, buf[j]);
    CHECK_OK(scif_fence_mark(epd, SCIF_FENCE_INIT_PEER, &mark));
    CHECK_OK(scif_fence_wait(epd, mark));
    CHECK_OK(scif_unregister(epd, 0, 1 << 20));
    free(buf);
    return client_done(epd);
}

/*
 * 7: fence_signal: a local signal after an asynchronous read is written
 * after its data; a remote one after an asynchronous write lands after
 * that write's data (the server watches), its local half too; a remote
 * signal into a hole is ENXIO, misaligned EINVAL, neither half written.
 */
static int t_fence_signal(void) {
    volatile uint64_t *w;
    uint8_t *buf, *sig;
    off_t roff;
    size_t j;
    int epd;

    if (server_mode)
        return serve_opt(7, 0, 0, 1);
    epd = client_setup(7, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, 4096, &sig) == 0, "local signal window");
    CHECK(local_window(epd, 1 << 20, 1 << 20, &buf) == 0, "local data window");
    memset(buf, 0, 1 << 20);
    w = (volatile uint64_t *)sig;
    w[1] = 0;
    CHECK_OK(scif_readfrom(epd, 1 << 20, 1 << 20, roff + 3, 0));
    CHECK_OK(scif_fence_signal(epd, 8, 0x1234, 0, 0, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL));
    for (j = 0; j < 100000 && w[1] != 0x1234; j++)
        sleep_ms(1);
    CHECK(w[1] == 0x1234, "local signal value %#llx", (unsigned long long)w[1]);
    for (j = 0; j < 1 << 20; j++)
        CHECK(buf[j] == srv_pat(j + 3), "byte %zu when the signal was seen: %#x", j, buf[j]);
    /* buf holds cli_pat(j) again: the server's [0, SIG_DATA) gets it */
    for (j = 0; j < SIG_DATA; j++)
        buf[j] = cli_pat(j);
    CHECK_OK(scif_writeto(epd, 1 << 20, SIG_DATA, roff, 0));
    CHECK_OK(scif_fence_signal(epd, 24, 0x5678, roff + SIG_AT, SIG_VAL,
                               SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE));
    for (j = 0; j < 100000 && w[3] != 0x5678; j++)
        sleep_ms(1);
    CHECK(w[3] == 0x5678, "local half of the remote signal: %#llx", (unsigned long long)w[3]);
    CHECK_ERR(scif_fence_signal(epd, 0, 0, roff + 2 * HALF, 0x99,
                                SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_REMOTE),
              ENXIO);
    CHECK_ERR(scif_fence_signal(epd, 16, 0x77, roff + 2 * HALF + 4096, 0x99,
                                SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE),
              ENXIO);
    CHECK_ERR(scif_fence_signal(epd, 16, 0x77, roff + 4, 0x99,
                                SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE),
              EINVAL);
    for (j = 0; j < 8; j++)
        CHECK(sig[16 + j] == cli_pat(16 + j), "local value written although the call failed");
    CHECK_OK(scif_unregister(epd, 0, 4096));
    CHECK_OK(scif_unregister(epd, 1 << 20, 1 << 20));
    free(buf);
    free(sig);
    return client_done_exp(epd, 0, SIG_DATA, 0);
}

/* 8: scif_mmap of the far window: ENXIO (no shared aperture). */
static int t_mmap(void) {
    off_t roff;
    void *p;
    int epd;

    if (server_mode)
        return serve(8);
    epd = client_setup(8, &roff);
    CHECK(epd >= 0, "connect");
    p = scif_mmap(NULL, 4096, SCIF_PROT_READ, 0, epd, roff);
    CHECK(p == SCIF_MMAP_FAILED && errno == ENXIO, "scif_mmap: %p (%s), expected ENXIO", p,
          strerror(errno));
    p = scif_mmap(NULL, 4096, SCIF_PROT_READ | SCIF_PROT_WRITE, 0, epd, roff);
    CHECK(p == SCIF_MMAP_FAILED && errno == ENXIO, "scif_mmap rw: %p (%s), expected ENXIO", p,
          strerror(errno));
    return client_done(epd);
}

/*
 * 9: the far host's checks: writing its read-only second window is
 * EACCES (reading it works), a range beyond its windows or over a hole is
 * ENXIO; nothing of a refused transfer is written on either side.
 */
static int t_errors(void) {
    uint8_t *buf, *u = malloc(8192);
    off_t roff;
    size_t j;
    int epd;

    if (server_mode) {
        free(u);
        return serve_opt(9, 1, 0, 0);
    }
    CHECK(u, "alloc");
    epd = client_setup(9, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, 65536, &buf) == 0, "local window");
    CHECK_ERR(scif_writeto(epd, 0, 4096, roff + HALF, SCIF_RMA_SYNC), EACCES);
    CHECK_ERR(scif_writeto(epd, 0, 8192, roff + HALF - 4096, SCIF_RMA_SYNC), EACCES);
    CHECK_ERR(scif_vwriteto(epd, buf, 100, roff + HALF + 5, SCIF_RMA_SYNC), EACCES);
    CHECK_OK(scif_readfrom(epd, 0, 4096, roff + HALF, SCIF_RMA_SYNC));
    for (j = 0; j < 4096; j++)
        CHECK(buf[j] == srv_pat(HALF + j), "read-only window byte %zu: %#x", j, buf[j]);
    memset(u, 0xee, 8192);
    CHECK_ERR(scif_readfrom(epd, 0, 4096, roff + 2 * HALF, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_readfrom(epd, 0, 8192, roff + 2 * HALF - 4096, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vreadfrom(epd, u, 8192, roff - 4096, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vreadfrom(epd, u, 1, 0x7ffffffffffff000LL, SCIF_RMA_SYNC), ENXIO);
    for (j = 0; j < 8192; j++)
        CHECK(u[j] == 0xee, "user byte %zu written by a refused transfer", j);
    CHECK_OK(scif_unregister(epd, 0, 65536));
    free(buf);
    free(u);
    return client_done(epd);
}

/*
 * 10: a transfer works; then the peer closes while transfers run: every
 * call returns (0 or ECONNRESET/ENXIO), a fence wait returns, and later
 * calls fail; no hang.
 */
static int t_peer_close(void) {
    size_t len = 4 << 20;
    uint8_t *buf;
    off_t roff;
    int epd, i, r, mark;
    char start = 's';

    if (server_mode)
        return serve_opt(10, 0, 1, 0);
    epd = client_setup(10, &roff);
    CHECK(epd >= 0, "connect");
    CHECK(local_window(epd, 0, len, &buf) == 0, "local window");
    /* before the server closes, a transfer works */
    CHECK_OK(scif_readfrom(epd, 0, len, roff, SCIF_RMA_SYNC));
    CHECK(buf[len - 1] == srv_pat(len - 1), "data before the close");
    CHECK(send_all(epd, &start, 1) == 0, "send the start byte");
    for (i = 0; i < 64; i++) {
        r = scif_readfrom(epd, 0, len, roff, i & 1 ? SCIF_RMA_SYNC : 0);
        if (r < 0) {
            CHECK(errno == ECONNRESET || errno == ENXIO, "transfer %d: %s", i, strerror(errno));
            break;
        }
    }
    r = scif_fence_mark(epd, SCIF_FENCE_INIT_SELF, &mark);
    if (r == 0)
        r = scif_fence_wait(epd, mark);
    CHECK(r == 0 || errno == ECONNRESET, "fence: %s", strerror(errno));
    for (i = 0; i < 600; i++) {
        r = scif_readfrom(epd, 0, 4096, roff, SCIF_RMA_SYNC);
        if (r < 0)
            break;
        sleep_ms(100);
    }
    CHECK(r < 0 && (errno == ECONNRESET || errno == ENXIO), "after the close: %d (%s)", r,
          strerror(errno));
    scif_unregister(epd, 0, len);
    close(epd);
    free(buf);
    return KSFT_PASS;
}

/* 11: nothing pinned, registered, mapped or in flight is left behind. */
static int t_counters(void) {
    return rma_counters_zero();
}

static const struct scif_test tests[] = {
    {"remote_register_unregister_local", t_register, 300},
    {"remote_readfrom_data", t_readfrom, 600},
    {"remote_writeto_data", t_writeto, 600},
    {"remote_vreadfrom_data", t_vreadfrom, 600},
    {"remote_vwriteto_data", t_vwriteto, 600},
    {"remote_fence_mark_wait_async", t_fence_mark, 300},
    {"remote_fence_signal_after_data", t_fence_signal, 300},
    {"remote_mmap_enxio", t_mmap, 300},
    {"remote_rma_eacces_enxio", t_errors, 300},
    {"remote_rma_peer_close", t_peer_close, 300},
    {"remote_rma_counters_zero", t_counters, 120},
};

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: %s server|client OTHER_NODE [behaviour...]\n", argv[0]);
        return 2;
    }
    server_mode = !strcmp(argv[1], "server");
    other = atoi(argv[2]);
    if (getenv("REMOTE_RMA_RETRY"))
        retry_seconds = atoi(getenv("REMOTE_RMA_RETRY"));
    argv[2] = argv[0];
    return run_tests(tests, sizeof(tests) / sizeof(tests[0]), argc - 2, argv + 2);
}
