// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * remote_msg: endpoints and messaging between two hosts over scif_rdma.ko
 * (tools/vm/rdma-msg.test; not an area of run-suite).  Run as
 *
 *   remote_msg server CLIENT_NODE     on one host (listens on node 0)
 *   remote_msg client SERVER_NODE     on the other
 *
 * Both run the same table of behaviours in the same order; behaviour k of
 * the client talks to behaviour k of the server on port BASE_PORT + k
 * (the client retries its first connect while that port refuses, so the
 * two sides need no other synchronisation; $REMOTE_MSG_RETRY seconds, 120
 * by default).  The "nodeloss" behaviour
 * creates $REMOTE_MSG_FLAG (a file) on the server once its connection is
 * up; the test script then unloads scif_rdma.ko on the server's host, and
 * loads it again.
 */
#include <pthread.h>

#include "scif_test.h"

#define BASE_PORT 3000
#define MANY 1000

static int server_mode;
static int other;               /* the other host's node id */
static int retry_seconds = 120; /* $REMOTE_MSG_RETRY */

/* The port of behaviour @k. */
static uint16_t port_of(int k) {
    return (uint16_t)(BASE_PORT + k);
}

/* Server: a listener on port_of(@k) accepting one connection. */
static int accept_one(int k, int backlog, int *lst, struct scif_portID *peer) {
    int l = make_listener(0, port_of(k), backlog, NULL), nep;

    if (l < 0) {
        diag("listen on %u: %s", port_of(k), strerror(errno));
        return -1;
    }
    struct pollfd p = {.fd = l, .events = POLLIN};

    /* the client gives up after retry_seconds: so do we */
    if (poll(&p, 1, retry_seconds * 1000) != 1) {
        diag("no connection on %u within %d s", port_of(k), retry_seconds);
        close(l);
        return -1;
    }
    if (scif_accept(l, peer, &nep, SCIF_ACCEPT_SYNC) < 0) {
        diag("accept: %s", strerror(errno));
        close(l);
        return -1;
    }
    if (lst)
        *lst = l;
    else
        close(l);
    return nep;
}

/*
 * Client: connect @epd (fresh) to behaviour @k's port, retrying while the
 * server's behaviour has not started listening.  0 or -1 (errno kept).
 */
static int connect_retry(int epd, int k) {
    struct scif_portID dst = {(uint16_t)other, port_of(k)};
    int i;

    for (i = 0; i < retry_seconds * 10; i++) {
        if (scif_connect(epd, &dst) >= 0)
            return 0;
        if (errno != ECONNREFUSED && errno != ENODEV)
            return -1;
        sleep_ms(100);
    }
    return -1;
}

/* Client: a new endpoint connected to behaviour @k, or -1. */
static int client_conn(int k) {
    int epd = scif_open();

    if (epd < 0)
        return -1;
    if (connect_retry(epd, k) < 0) {
        int e = errno;

        diag("connect to %d:%u: %s", other, port_of(k), strerror(e));
        close(epd);
        errno = e;
        return -1;
    }
    return epd;
}

/* 1: accept gives the connector's node and port; connect reaches it. */
static int t_connect_accept(void) {
    struct scif_portID peer;
    uint16_t got;

    if (server_mode) {
        int nep = accept_one(1, 1, NULL, &peer);

        CHECK(nep >= 0, "accept");
        CHECK(peer.node == other, "peer node %u, expected %d", peer.node, other);
        CHECK(recv_all(nep, &got, 2) == 0, "recv");
        CHECK(got == peer.port, "peer port %u, the client says %u", peer.port, got);
        CHECK(send_all(nep, &got, 2) == 0, "send");
        return KSFT_PASS;
    }
    int epd = scif_open(), port;

    CHECK_OK(epd);
    port = scif_bind(epd, 0);
    CHECK_OK(port);
    CHECK(connect_retry(epd, 1) == 0, "connect: %s", strerror(errno));
    got = (uint16_t)port;
    CHECK(send_all(epd, &got, 2) == 0, "send");
    got = 0;
    CHECK(recv_all(epd, &got, 2) == 0, "recv");
    CHECK(got == port, "echo %u, expected %d", got, port);
    return KSFT_PASS;
}

/* 2: nobody listens: ECONNREFUSED, and the endpoint can connect again. */
static int t_refused(void) {
    if (server_mode) {
        struct scif_portID peer;
        char c;
        int nep = accept_one(2, 1, NULL, &peer);

        CHECK(nep >= 0, "accept");
        CHECK(recv_all(nep, &c, 1) == 0 && send_all(nep, &c, 1) == 0, "echo");
        return KSFT_PASS;
    }
    struct scif_portID dst = {(uint16_t)other, 60999};
    int epd = scif_open();
    char c = 'x';

    CHECK_OK(epd);
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    CHECK(connect_retry(epd, 2) == 0, "connect after ECONNREFUSED: %s", strerror(errno));
    CHECK(send_all(epd, &c, 1) == 0 && recv_all(epd, &c, 1) == 0 && c == 'x', "echo");
    return KSFT_PASS;
}

/*
 * 3: 1 B .. 4 MiB each way, pattern checked (sizes beyond the ring): the
 * client sends, the server receives, then the server sends its own
 * pattern back.
 */
static int t_sizes(void) {
    static const int sizes[] = {1, 2, 63, 4095, 4096, 4097, 8191, 65536, 1000003, 4 << 20};
    struct scif_portID peer;
    int epd;
    unsigned int i, pass;
    char *buf = malloc(4 << 20);

    CHECK(buf, "malloc");
    epd = server_mode ? accept_one(3, 1, NULL, &peer) : client_conn(3);
    CHECK(epd >= 0, "connection");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int n = sizes[i];

        for (pass = 0; pass < 2; pass++) {
            /* pass 0: client -> server, pass 1: server -> client */
            uint64_t seed = (uint64_t)n * 2 + pass;
            long long bad;

            if (pass == (unsigned int)server_mode) {
                pattern_fill(buf, n, seed, 0);
                CHECK(send_all(epd, buf, n) == 0, "send %d: %s", n, strerror(errno));
                continue;
            }
            memset(buf, 0, n);
            CHECK(recv_all(epd, buf, n) == 0, "recv %d: %s", n, strerror(errno));
            bad = pattern_check(buf, n, seed, 0);
            CHECK(bad < 0, "%d bytes: first bad byte at %lld", n, bad);
        }
    }
    free(buf);
    return KSFT_PASS;
}

/*
 * 4: non-blocking: recv with nothing queued and send into a full window
 * give EAGAIN; what was accepted arrives (count told on a second
 * connection).
 */
static int t_nonblock(void) {
    struct scif_portID peer;
    int data, ctl, total = 0, r, i, eagain = 0;
    char *buf = malloc(1 << 20);

    CHECK(buf, "malloc");
    if (server_mode) {
        int l;

        data = accept_one(4, 2, &l, &peer);
        CHECK(data >= 0, "accept data");
        CHECK(scif_accept(l, &peer, &ctl, SCIF_ACCEPT_SYNC) == 0, "accept ctl: %s",
              strerror(errno));
        CHECK(recv_all(ctl, &total, 4) == 0, "recv count");
        CHECK(total > 0 && total <= (1 << 20), "count %d", total);
        CHECK(recv_all(data, buf, total) == 0, "recv %d", total);
        CHECK(pattern_check(buf, total, 4, 0) < 0, "pattern");
        CHECK(send_all(ctl, &total, 4) == 0, "ack");
        return KSFT_PASS;
    }
    data = client_conn(4);
    CHECK(data >= 0, "connect data");
    ctl = client_conn(4);
    CHECK(ctl >= 0, "connect ctl");
    CHECK_ERR(scif_recv(data, buf, 1, 0), EAGAIN);
    pattern_fill(buf, 1 << 20, 4, 0);
    for (i = 0; i < 100000 && !eagain; i++) {
        r = scif_send(data, buf + total, 4096, 0);
        if (r < 0) {
            CHECK(errno == EAGAIN, "send: %s", strerror(errno));
            eagain = 1;
        } else {
            total += r;
            CHECK(total <= (1 << 20) - 4096, "%d bytes accepted without EAGAIN", total);
        }
    }
    CHECK(eagain, "no EAGAIN");
    CHECK(total > 0, "nothing accepted before EAGAIN");
    CHECK(send_all(ctl, &total, 4) == 0, "send count");
    r = 0;
    CHECK(recv_all(ctl, &r, 4) == 0 && r == total, "ack %d of %d", r, total);
    return KSFT_PASS;
}

/* 5: poll: POLLOUT at once, POLLIN only once data came. */
static int t_poll(void) {
    struct scif_portID peer;
    struct pollfd p;
    char c = 'p';
    int epd;

    if (server_mode) {
        epd = accept_one(5, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(recv_all(epd, &c, 1) == 0, "recv go");
        CHECK(send_all(epd, &c, 1) == 0, "send");
        CHECK(recv_all(epd, &c, 1) == 0, "recv done");
        return KSFT_PASS;
    }
    epd = client_conn(5);
    CHECK(epd >= 0, "connect");
    p.fd = epd;
    p.events = POLLOUT;
    CHECK(poll(&p, 1, 30000) == 1 && (p.revents & POLLOUT), "POLLOUT: revents %#x", p.revents);
    p.events = POLLIN;
    CHECK(poll(&p, 1, 0) == 0, "POLLIN before data: revents %#x", p.revents);
    CHECK(send_all(epd, &c, 1) == 0, "send go");
    CHECK(poll(&p, 1, 60000) == 1 && (p.revents & POLLIN), "POLLIN: revents %#x", p.revents);
    CHECK(recv_all(epd, &c, 1) == 0 && c == 'p', "recv");
    CHECK(send_all(epd, &c, 1) == 0, "send done");
    return KSFT_PASS;
}

/* 6: the peer closes: queued data first, then ECONNRESET and POLLHUP. */
static int t_peer_close(void) {
    struct scif_portID peer;
    struct pollfd p;
    char buf[3000];
    int epd;

    pattern_fill(buf, sizeof(buf), 6, 0);
    if (server_mode) {
        epd = accept_one(6, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(send_all(epd, buf, sizeof(buf)) == 0, "send");
        CHECK_OK(scif_close(epd));
        return KSFT_PASS;
    }
    epd = client_conn(6);
    CHECK(epd >= 0, "connect");
    memset(buf, 0, sizeof(buf));
    CHECK(recv_all(epd, buf, sizeof(buf)) == 0, "recv the queued data: %s", strerror(errno));
    CHECK(pattern_check(buf, sizeof(buf), 6, 0) < 0, "pattern");
    CHECK_ERR(scif_recv(epd, buf, 1, SCIF_RECV_BLOCK), ECONNRESET);
    CHECK_ERR(scif_send(epd, buf, 1, SCIF_SEND_BLOCK), ECONNRESET);
    p.fd = epd;
    p.events = POLLIN;
    CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLHUP), "revents %#x", p.revents);
    return KSFT_PASS;
}

/* 7: a non-blocking connect completes (POLLOUT), then works. */
static int t_nb_connect(void) {
    struct scif_portID peer, dst = {(uint16_t)other, port_of(7)};
    struct pollfd p = {.fd = -1};
    char c = 'n';
    int epd = -1, r, i;

    if (server_mode) {
        epd = accept_one(7, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(recv_all(epd, &c, 1) == 0 && send_all(epd, &c, 1) == 0, "echo");
        return KSFT_PASS;
    }
    for (i = 0; i < retry_seconds * 10; i++) {
        epd = scif_open();
        CHECK_OK(epd);
        CHECK_OK(fcntl(epd, F_SETFL, O_NONBLOCK));
        r = scif_connect(epd, &dst);
        CHECK(r >= 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
        p.fd = epd;
        p.events = POLLOUT;
        CHECK(poll(&p, 1, 60000) == 1, "connect never completed");
        if (p.revents & POLLOUT)
            break;
        /* refused: the server's behaviour is not listening yet */
        CHECK(p.revents & POLLERR, "revents %#x", p.revents);
        CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
        close(epd);
        sleep_ms(100);
    }
    CHECK(p.revents & POLLOUT, "never connected");
    CHECK_OK(scif_connect(epd, &dst)); /* reports the completed connect */
    CHECK(scif_send(epd, &c, 1, SCIF_SEND_BLOCK) == 1, "send");
    CHECK(scif_recv(epd, &c, 1, SCIF_RECV_BLOCK) == 1 && c == 'n', "recv");
    return KSFT_PASS;
}

/* 8: MANY endpoints connected at once over the one link. */
static int t_many(void) {
    static int eps[MANY];
    struct rlimit rl = {MANY + 64, MANY + 64};
    struct scif_portID peer;
    int i, v;

    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    if (server_mode) {
        int l;

        eps[0] = accept_one(8, MANY, &l, &peer);
        CHECK(eps[0] >= 0, "accept 0");
        for (i = 1; i < MANY; i++)
            CHECK(scif_accept(l, &peer, &eps[i], SCIF_ACCEPT_SYNC) == 0, "accept %d: %s", i,
                  strerror(errno));
        for (i = 0; i < MANY; i++) {
            CHECK(recv_all(eps[i], &v, 4) == 0, "recv %d", i);
            v += 1;
            CHECK(send_all(eps[i], &v, 4) == 0, "send %d", i);
        }
        return KSFT_PASS;
    }
    for (i = 0; i < MANY; i++) {
        eps[i] = i ? scif_open() : client_conn(8);
        CHECK(eps[i] >= 0, "endpoint %d: %s", i, strerror(errno));
        if (i) {
            struct scif_portID dst = {(uint16_t)other, port_of(8)};

            CHECK(scif_connect(eps[i], &dst) >= 0, "connect %d: %s", i, strerror(errno));
        }
    }
    for (i = 0; i < MANY; i++)
        CHECK(send_all(eps[i], &i, 4) == 0, "send %d", i);
    for (i = 0; i < MANY; i++) {
        CHECK(recv_all(eps[i], &v, 4) == 0, "recv %d", i);
        CHECK(v == i + 1, "connection %d answered %d", i, v);
    }
    return KSFT_PASS;
}

/* t_nodeloss's sender: one blocking send far larger than the peer takes. */
struct nodeloss_send {
    int epd;
    size_t len;
    int ret, err;
};

static void *nodeloss_sender(void *arg) {
    struct nodeloss_send *s = arg;
    void *buf = calloc(1, s->len);

    s->ret = buf ? scif_send(s->epd, buf, (int)s->len, SCIF_SEND_BLOCK) : -1;
    s->err = buf ? errno : ENOMEM;
    free(buf);
    return NULL;
}

/*
 * 9: node loss: the server's host unloads scif_rdma.ko while it has a
 * sender blocked in the transport's wait (its peer reads nothing, so the
 * credit runs out) and a receiver blocked in recv; the client waits in
 * poll for the hang-up.  The unload must end both server calls (the
 * receiver with ECONNRESET, the sender with ECONNRESET or the short count
 * it moved), leave no thread in the module's text, and the client sees
 * POLLHUP, then the bytes that arrived, then ECONNRESET.
 */
static int t_nodeloss(void) {
    struct scif_portID peer;
    struct pollfd p;
    char c, buf[4096];
    int epd, r;

    if (server_mode) {
        const char *flag = getenv("REMOTE_MSG_FLAG");
        struct nodeloss_send snd = {.len = 16u << 20};
        pthread_t th;
        FILE *f;

        if (!flag)
            return test_skip("REMOTE_MSG_FLAG not set");
        epd = accept_one(9, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(recv_all(epd, &c, 1) == 0, "recv");
        snd.epd = epd;
        CHECK(pthread_create(&th, NULL, nodeloss_sender, &snd) == 0, "pthread_create");
        /* ordering only: let the sender use up the credit and block */
        sleep(2);
        f = fopen(flag, "w");
        CHECK(f && fclose(f) == 0, "create %s", flag);
        CHECK_ERR(scif_recv(epd, &c, 1, SCIF_RECV_BLOCK), ECONNRESET);
        pthread_join(th, NULL);
        CHECK((snd.ret == -1 && snd.err == ECONNRESET) ||
                  (snd.ret >= 0 && (size_t)snd.ret < snd.len),
              "blocked send at unload returned %d (%s)", snd.ret, strerror(snd.err));
        return KSFT_PASS;
    }
    epd = client_conn(9);
    CHECK(epd >= 0, "connect");
    c = 'l';
    CHECK(send_all(epd, &c, 1) == 0, "send");
    p = (struct pollfd){.fd = epd, .events = 0};
    CHECK(poll(&p, 1, -1) == 1 && (p.revents & POLLHUP), "revents %#x", p.revents);
    do
        r = scif_recv(epd, buf, sizeof(buf), 0);
    while (r > 0);
    CHECK(r == -1 && errno == ECONNRESET, "recv after the hang-up: %d (%s)", r, strerror(errno));
    return KSFT_PASS;
}

/* 10: after the node came back, connections work again. */
static int t_back(void) {
    struct scif_portID peer;
    char c = 'b';
    int epd;

    if (server_mode) {
        epd = accept_one(10, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(peer.node == other, "peer node %u", peer.node);
        CHECK(recv_all(epd, &c, 1) == 0 && send_all(epd, &c, 1) == 0, "echo");
        return KSFT_PASS;
    }
    epd = client_conn(10);
    CHECK(epd >= 0, "connect after the node came back");
    CHECK(send_all(epd, &c, 1) == 0 && recv_all(epd, &c, 1) == 0 && c == 'b', "echo");
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"remote_connect_accept_peer_ids", t_connect_accept, 300},
    {"remote_econnrefused", t_refused, 300},
    {"remote_sizes_1B_to_4MiB_both_ways", t_sizes, 900},
    {"remote_nonblocking_eagain", t_nonblock, 300},
    {"remote_poll", t_poll, 300},
    {"remote_peer_close_drain_econnreset", t_peer_close, 300},
    {"remote_nonblocking_connect", t_nb_connect, 300},
    {"remote_1000_endpoints", t_many, 900},
    {"remote_node_loss_econnreset", t_nodeloss, 300},
    {"remote_connect_after_node_back", t_back, 300},
};

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: %s server|client OTHER_NODE [behaviour...]\n", argv[0]);
        return 2;
    }
    server_mode = !strcmp(argv[1], "server");
    other = atoi(argv[2]);
    if (getenv("REMOTE_MSG_RETRY"))
        retry_seconds = atoi(getenv("REMOTE_MSG_RETRY"));
    argv[2] = argv[0];
    return run_tests(tests, sizeof(tests) / sizeof(tests[0]), argc - 2, argv + 2);
}
