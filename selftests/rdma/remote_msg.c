// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * remote_msg: the node-loss behaviours between two hosts over scif_rdma.ko
 * (tools/vm/rdma-msg.test; not an area of run-suite): they only make sense
 * with the peer on another host.  The behaviours that also hold against an
 * emulated peer are in selftests/core/peer_test.c.  Run as
 *
 *   remote_msg server CLIENT_NODE     on one host (listens on node 0)
 *   remote_msg client SERVER_NODE     on the other
 *
 * Both run the same table of behaviours in the same order; behaviour k of
 * the client talks to behaviour k of the server on port BASE_PORT + k
 * (the client retries its first connect while that port refuses or the
 * node is down, so the two sides need no other synchronisation;
 * $REMOTE_MSG_RETRY seconds, 120 by default).  A behaviour that needs the
 * node lost creates $REMOTE_MSG_FLAG (a file) on the server; the test
 * script then unloads scif_rdma.ko on the server's host, loads it again,
 * waits until the client's node is up and removes the flag.
 */
#include <pthread.h>

#include "scif_test.h"

#define BASE_PORT 3000

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

/*
 * 1: a connect in progress when the node is lost: the server listens but
 * never accepts; once the client's request is pending it creates
 * $REMOTE_MSG_FLAG and the script unloads scif_rdma.ko on the server's
 * host.  The client's blocked connect must end with ENODEV; the server
 * waits until the script removed the flag (the node is back), and its
 * listener then holds no stale request.
 */
static int t_connect_enodev(void) {
    struct scif_portID dst = {(uint16_t)other, port_of(1)}, peer;
    int epd, i, nep;

    if (server_mode) {
        const char *flag = getenv("REMOTE_MSG_FLAG");
        int l = make_listener(0, port_of(1), 1, NULL);
        struct pollfd p = {.fd = l, .events = POLLIN};
        FILE *f;

        if (!flag)
            return test_skip("REMOTE_MSG_FLAG not set");
        CHECK(l >= 0, "listen on %u: %s", port_of(1), strerror(errno));
        CHECK(poll(&p, 1, retry_seconds * 1000) == 1, "no connect request within %d s",
              retry_seconds);
        f = fopen(flag, "w");
        CHECK(f && fclose(f) == 0, "create %s", flag);
        for (i = 0; i < retry_seconds * 10 && access(flag, F_OK) == 0; i++)
            sleep_ms(100);
        CHECK(access(flag, F_OK) != 0, "the node did not come back within %d s", retry_seconds);
        CHECK_OK(fcntl(l, F_SETFL, O_NONBLOCK));
        errno = 0;
        nep = -1;
        CHECK(scif_accept(l, &peer, &nep, 0) < 0,
              "accepted a request of the lost node (from %u:%u)", peer.node, peer.port);
        CHECK(errno == EAGAIN, "accept after the loss: %s", strerror(errno));
        return KSFT_PASS;
    }
    epd = scif_open();
    CHECK_OK(epd);
    /* refused until the server listens; then it blocks until the node is lost */
    for (i = 0; i < retry_seconds * 10; i++) {
        errno = 0;
        if (scif_connect(epd, &dst) >= 0 || errno != ECONNREFUSED)
            break;
        sleep_ms(100);
    }
    CHECK(errno == ENODEV, "blocked connect at the node loss: %s (expected ENODEV)",
          strerror(errno));
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
 * 2: node loss: the server's host unloads scif_rdma.ko while it has a
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
        epd = accept_one(2, 1, NULL, &peer);
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
    epd = client_conn(2);
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

/* 3: after the node came back, connections work again. */
static int t_back(void) {
    struct scif_portID peer;
    char c = 'b';
    int epd;

    if (server_mode) {
        epd = accept_one(3, 1, NULL, &peer);
        CHECK(epd >= 0, "accept");
        CHECK(peer.node == other, "peer node %u", peer.node);
        CHECK(recv_all(epd, &c, 1) == 0 && send_all(epd, &c, 1) == 0, "echo");
        return KSFT_PASS;
    }
    epd = client_conn(3);
    CHECK(epd >= 0, "connect after the node came back");
    CHECK(send_all(epd, &c, 1) == 0 && recv_all(epd, &c, 1) == 0 && c == 'b', "echo");
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"remote_connect_in_progress_enodev", t_connect_enodev, 600},
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
