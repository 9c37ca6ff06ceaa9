// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * peer_test: endpoints and messaging between node 0 and the peer node, as
 * server and client halves of the peer fixture (lib/peer.h).  In the core
 * area the peer is emulated node 1; tools/vm/rdma-msg.test runs the same
 * binary as "--role server" on one host and "--role client --peer N" on
 * the other.  The node-loss behaviours stay in selftests/rdma/remote_msg.c.
 */
#include "peer.h"

#define MANY 1000

/* Echo one int from the client on a connection: server half. */
static int echo_int(int epd) {
    int v;

    CHECK(recv_all(epd, &v, 4) == 0, "recv: %s", strerror(errno));
    CHECK(send_all(epd, &v, 4) == 0, "send: %s", strerror(errno));
    return KSFT_PASS;
}

/* accept gives the connector's node and port; connect reaches the listener. */
static int connect_ids_srv(struct peer_ctx *c) {
    struct scif_portID peer;
    int l = peer_listen(c, 0, 1), n;
    uint16_t got;

    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    n = peer_accept(c, l, &peer);
    CHECK(n >= 0);
    CHECK(peer.node == c->other, "peer node %u, expected %d", peer.node, c->other);
    CHECK(recv_all(n, &got, 2) == 0, "recv");
    CHECK(got == peer.port, "accept says port %u, the client bound %u", peer.port, got);
    CHECK(send_all(n, &got, 2) == 0, "send");
    return KSFT_PASS;
}

static int connect_ids_cli(struct peer_ctx *c) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, 0)};
    int epd = peer_open(c), port, r;
    uint16_t got;

    CHECK_OK(epd);
    port = scif_bind(epd, 0);
    CHECK_OK(port);
    CHECK(peer_sync(c) == 0);
    r = scif_connect(epd, &dst);
    CHECK(r >= 0, "connect: %s", strerror(errno));
    CHECK(r == port, "connect returned port %d, bound %d", r, port);
    got = (uint16_t)port;
    CHECK(send_all(epd, &got, 2) == 0, "send");
    got = 0;
    CHECK(recv_all(epd, &got, 2) == 0 && got == port, "echo %u, expected %d", got, port);
    return KSFT_PASS;
}

/*
 * Nobody listens: ECONNREFUSED, twice; the endpoint can connect afterwards.
 * The server listens only once the client was refused.
 */
static int refused_srv(struct peer_ctx *c) {
    struct scif_portID peer;
    int l, n;

    CHECK(peer_sync(c) == 0); /* the client was refused */
    l = peer_listen(c, 0, 1);
    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0); /* listening */
    n = peer_accept(c, l, &peer);
    CHECK(n >= 0);
    return echo_int(n);
}

static int refused_cli(struct peer_ctx *c) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, 0)};
    int epd = peer_open(c), v = 77;

    CHECK_OK(epd);
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    CHECK(peer_sync(c) == 0);
    CHECK(peer_sync(c) == 0);
    CHECK(scif_connect(epd, &dst) >= 0, "connect after ECONNREFUSED: %s", strerror(errno));
    CHECK(send_all(epd, &v, 4) == 0 && recv_all(epd, &v, 4) == 0 && v == 77, "echo");
    return KSFT_PASS;
}

/* A request beyond the listen backlog is refused; the one within it is accepted. */
static int backlog_srv(struct peer_ctx *c) {
    struct scif_portID peer;
    int l = peer_listen(c, 0, 1), n;

    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    CHECK(peer_sync(c) == 0); /* the first request is sent */
    {
        struct pollfd p = {.fd = l, .events = POLLIN};

        CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLIN),
              "the first request never arrived");
    }
    CHECK(peer_sync(c) == 0); /* it is pending: the client sends the second */
    CHECK(peer_sync(c) == 0); /* the second was refused */
    CHECK_OK(scif_accept(l, &peer, &n, SCIF_ACCEPT_SYNC));
    CHECK(peer.node == c->other, "peer node %u", peer.node);
    CHECK_ERR(scif_accept(l, &peer, &n, 0), EAGAIN);
    return KSFT_PASS;
}

static int backlog_cli(struct peer_ctx *c) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, 0)};
    int a = peer_open(c), b = peer_open(c), r;
    struct pollfd p;

    CHECK_OK(a);
    CHECK_OK(b);
    CHECK_OK(fcntl(a, F_SETFL, O_NONBLOCK));
    CHECK_OK(fcntl(b, F_SETFL, O_NONBLOCK));
    CHECK(peer_sync(c) == 0);
    r = scif_connect(a, &dst);
    CHECK(r >= 0 || errno == EINPROGRESS, "first connect: %s", strerror(errno));
    CHECK(peer_sync(c) == 0);
    CHECK(peer_sync(c) == 0);
    errno = 0;
    r = scif_connect(b, &dst);
    if (r < 0 && errno == EINPROGRESS) {
        p = (struct pollfd){.fd = b, .events = POLLOUT};
        CHECK(poll(&p, 1, c->wait_s * 1000) == 1, "second connect never completed");
        CHECK(p.revents & (POLLERR | POLLHUP), "second connect completed: revents %#x", p.revents);
        CHECK_ERR(scif_connect(b, &dst), ECONNREFUSED);
    } else {
        CHECK(r < 0 && errno == ECONNREFUSED, "second connect: ret %d errno %s", r,
              strerror(errno));
    }
    CHECK(peer_sync(c) == 0);
    p = (struct pollfd){.fd = a, .events = POLLOUT};
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLOUT), "first connect: revents %#x",
          p.revents);
    CHECK_OK(scif_connect(a, &dst));
    return KSFT_PASS;
}

/* 1 B .. 4 MiB each way, pattern checked: the client sends, then the server. */
static int sizes(struct peer_ctx *c, int epd) {
    static const int sz[] = {1, 2, 63, 4095, 4096, 4097, 8191, 65536, 1000003, 4 << 20};
    char *buf = malloc(4 << 20);
    unsigned int i, pass;

    CHECK(buf, "malloc");
    for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
        for (pass = 0; pass < 2; pass++) {
            uint64_t seed = (uint64_t)sz[i] * 2 + pass;
            long long bad;

            if (pass == (unsigned int)c->server) {
                pattern_fill(buf, sz[i], seed, 0);
                CHECK(send_all(epd, buf, sz[i]) == 0, "send %d: %s", sz[i], strerror(errno));
                continue;
            }
            memset(buf, 0, sz[i]);
            CHECK(recv_all(epd, buf, sz[i]) == 0, "recv %d: %s", sz[i], strerror(errno));
            bad = pattern_check(buf, sz[i], seed, 0);
            CHECK(bad < 0, "%d bytes: first bad byte at %lld", sz[i], bad);
        }
    }
    free(buf);
    return KSFT_PASS;
}

/* Server half of the behaviours on one connection: listen, sync, accept. */
static int one_conn_srv(struct peer_ctx *c) {
    struct scif_portID peer;
    int l = peer_listen(c, 0, 1), n;

    if (l < 0 || peer_sync(c))
        return -1;
    n = peer_accept(c, l, &peer);
    close(l);
    return n;
}

static int one_conn_cli(struct peer_ctx *c) {
    if (peer_sync(c))
        return -1;
    return peer_conn(c, 0);
}

static int sizes_srv(struct peer_ctx *c) {
    int n = one_conn_srv(c);

    CHECK(n >= 0);
    return sizes(c, n);
}

static int sizes_cli(struct peer_ctx *c) {
    int n = one_conn_cli(c);

    CHECK(n >= 0);
    return sizes(c, n);
}

/* Non-blocking: recv with nothing queued and send into a full ring: EAGAIN. */
static int nonblock_srv(struct peer_ctx *c) {
    char *buf = malloc(1 << 20);
    int n = one_conn_srv(c), total;

    CHECK(buf && n >= 0);
    CHECK(peer_hear(c, &total) == 0);
    CHECK(total > 0 && total <= (1 << 20), "count %d", total);
    CHECK(recv_all(n, buf, total) == 0, "recv %d: %s", total, strerror(errno));
    CHECK(pattern_check(buf, total, 4, 0) < 0, "pattern");
    return KSFT_PASS;
}

static int nonblock_cli(struct peer_ctx *c) {
    char *buf = malloc(1 << 20);
    int n = one_conn_cli(c), total = 0, r, i, eagain = 0;

    CHECK(buf && n >= 0);
    CHECK_ERR(scif_recv(n, buf, 1, 0), EAGAIN);
    pattern_fill(buf, 1 << 20, 4, 0);
    for (i = 0; i < 100000 && !eagain; i++) {
        r = scif_send(n, buf + total, 4096, 0);
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
    CHECK(peer_tell(c, total) == 0);
    return KSFT_PASS;
}

/* Zero-length send/recv return 0; negative lengths and unknown flags: EINVAL. */
static int zero_srv(struct peer_ctx *c) {
    int n = one_conn_srv(c);
    char b[4];

    CHECK(n >= 0);
    CHECK(scif_recv(n, b, 0, SCIF_RECV_BLOCK) == 0, "blocking recv of 0 bytes");
    CHECK_ERR(scif_recv(n, b, -1, 0), EINVAL);
    CHECK_ERR(scif_recv(n, b, 1, 0x40), EINVAL);
    CHECK(recv_all(n, b, 1) == 0 && b[0] == 'z', "the byte after the errors");
    return KSFT_PASS;
}

static int zero_cli(struct peer_ctx *c) {
    int n = one_conn_cli(c);
    char b[4] = "z";

    CHECK(n >= 0);
    CHECK(scif_send(n, b, 0, 0) == 0, "send 0 bytes");
    CHECK(scif_send(n, b, 0, SCIF_SEND_BLOCK) == 0, "blocking send 0 bytes");
    CHECK_ERR(scif_send(n, b, -1, 0), EINVAL);
    CHECK_ERR(scif_send(n, b, 1, 0x40), EINVAL);
    CHECK(send_all(n, b, 1) == 0, "send");
    return KSFT_PASS;
}

/* poll: POLLOUT at once, no POLLIN before data, POLLIN once it came. */
static int poll_srv(struct peer_ctx *c) {
    int n = one_conn_srv(c);
    char ch;

    CHECK(n >= 0);
    CHECK(recv_all(n, &ch, 1) == 0, "recv go");
    CHECK(send_all(n, &ch, 1) == 0, "send");
    return KSFT_PASS;
}

static int poll_cli(struct peer_ctx *c) {
    int n = one_conn_cli(c);
    struct pollfd p = {.fd = n, .events = POLLOUT};
    char ch = 'p';

    CHECK(n >= 0);
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLOUT), "POLLOUT: revents %#x",
          p.revents);
    p.events = POLLIN;
    CHECK(poll(&p, 1, 0) == 0, "POLLIN before data: revents %#x", p.revents);
    CHECK(send_all(n, &ch, 1) == 0, "send go");
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLIN), "POLLIN: revents %#x",
          p.revents);
    CHECK(recv_all(n, &ch, 1) == 0 && ch == 'p', "recv");
    return KSFT_PASS;
}

/* The peer closes: queued data is read first, then ECONNRESET and POLLHUP. */
static int close_srv(struct peer_ctx *c) {
    int n = one_conn_srv(c);
    char buf[3000];

    CHECK(n >= 0);
    pattern_fill(buf, sizeof(buf), 6, 0);
    CHECK(send_all(n, buf, sizeof(buf)) == 0, "send");
    CHECK_OK(scif_close(n));
    CHECK(peer_sync(c) == 0);
    return KSFT_PASS;
}

static int close_cli(struct peer_ctx *c) {
    int n = one_conn_cli(c);
    struct pollfd p = {.fd = n, .events = POLLIN};
    char buf[3000];

    CHECK(n >= 0);
    CHECK(peer_sync(c) == 0); /* closed */
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLHUP), "revents %#x", p.revents);
    CHECK(recv_all(n, buf, sizeof(buf)) == 0, "recv the queued data: %s", strerror(errno));
    CHECK(pattern_check(buf, sizeof(buf), 6, 0) < 0, "pattern");
    CHECK_ERR(scif_recv(n, buf, 1, SCIF_RECV_BLOCK), ECONNRESET);
    CHECK_ERR(scif_recv(n, buf, 1, 0), ECONNRESET);
    CHECK_ERR(scif_send(n, buf, 1, SCIF_SEND_BLOCK), ECONNRESET);
    return KSFT_PASS;
}

/* A non-blocking connect: EINPROGRESS or done, then POLLOUT, then it works. */
static int nbconn_srv(struct peer_ctx *c) {
    int n = one_conn_srv(c);

    CHECK(n >= 0);
    return echo_int(n);
}

static int nbconn_cli(struct peer_ctx *c) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, 0)};
    int epd = peer_open(c), r, v = 7;
    struct pollfd p = {.fd = epd, .events = POLLOUT};

    CHECK_OK(epd);
    CHECK_OK(fcntl(epd, F_SETFL, O_NONBLOCK));
    CHECK(peer_sync(c) == 0);
    r = scif_connect(epd, &dst);
    CHECK(r >= 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLOUT), "revents %#x", p.revents);
    CHECK_OK(scif_connect(epd, &dst)); /* reports the completed connect */
    CHECK(scif_send(epd, &v, 4, SCIF_SEND_BLOCK) == 4, "send");
    CHECK(scif_recv(epd, &v, 4, SCIF_RECV_BLOCK) == 4 && v == 7, "recv");
    return KSFT_PASS;
}

/* The other side closes while this one blocks: the call ends with ECONNRESET. */
static int blocked_srv(struct peer_ctx *c, int send) {
    static char big[1 << 20];
    long long total = 0;
    int n = one_conn_srv(c), r;

    CHECK(n >= 0);
    CHECK(peer_tell(c, 1) == 0);
    if (!send) {
        r = scif_recv(n, big, 100, SCIF_RECV_BLOCK);
        CHECK(r == -1 && errno == ECONNRESET, "blocked recv returned %d (%s)", r, strerror(errno));
        return KSFT_PASS;
    }
    do {
        r = scif_send(n, big, sizeof(big), SCIF_SEND_BLOCK);
        total += r > 0 ? r : 0;
    } while (r > 0 && total < (1LL << 34));
    CHECK(r == -1 && errno == ECONNRESET, "blocked send returned %d (%s) after %lld bytes", r,
          strerror(errno), total);
    return KSFT_PASS;
}

static int blocked_cli(struct peer_ctx *c, int send) {
    static char buf[1 << 16];
    int n = one_conn_cli(c), v;

    CHECK(n >= 0);
    CHECK(peer_hear(c, &v) == 0);
    if (send)
        CHECK(recv_all(n, buf, sizeof(buf)) == 0, "recv: %s", strerror(errno));
    sleep_ms(200); /* ordering only: let the other side block */
    CHECK_OK(scif_close(n));
    return KSFT_PASS;
}

static int brecv_srv(struct peer_ctx *c) {
    return blocked_srv(c, 0);
}
static int brecv_cli(struct peer_ctx *c) {
    return blocked_cli(c, 0);
}
static int bsend_srv(struct peer_ctx *c) {
    return blocked_srv(c, 1);
}
static int bsend_cli(struct peer_ctx *c) {
    return blocked_cli(c, 1);
}

/*
 * The client's process is killed in the middle of a stream: the server
 * reads what was queued, then gets ECONNRESET.
 */
static int death_srv(struct peer_ctx *c) {
    static char buf[1 << 16];
    int n = one_conn_srv(c), r, v;
    long got = 0;

    CHECK(n >= 0);
    while (got < (1 << 20)) {
        r = scif_recv(n, buf, sizeof(buf), SCIF_RECV_BLOCK);
        CHECK(r == (int)sizeof(buf), "recv from the live sender: %d (%s)", r, strerror(errno));
        got += r;
    }
    CHECK(peer_tell(c, 1) == 0);
    CHECK(peer_hear(c, &v) == 0); /* killed */
    {
        struct pollfd p = {.fd = n, .events = POLLIN};

        CHECK(poll(&p, 1, c->wait_s * 1000) == 1, "no hang-up");
    }
    do
        r = scif_recv(n, buf, sizeof(buf), 0);
    while (r > 0);
    CHECK(r == -1 && errno == ECONNRESET, "after the sender died: recv %d (%s)", r,
          strerror(errno));
    CHECK_ERR(scif_send(n, buf, 1, SCIF_SEND_BLOCK), ECONNRESET);
    return KSFT_PASS;
}

static int death_cli(struct peer_ctx *c) {
    static char buf[1 << 16];
    int v, st;
    pid_t pid;

    CHECK(peer_sync(c) == 0);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        int n = peer_conn(c, 0);

        if (n < 0)
            _exit(1);
        memset(buf, 0x5a, sizeof(buf));
        for (;;)
            if (scif_send(n, buf, sizeof(buf), SCIF_SEND_BLOCK) < 0)
                _exit(2);
    }
    CHECK(peer_hear(c, &v) == 0);
    CHECK_OK(kill(pid, SIGKILL));
    CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "sender status %#x", st);
    CHECK(peer_tell(c, 2) == 0);
    return KSFT_PASS;
}

/* MANY endpoints connected at once, each carries its own data. */
static int many_srv(struct peer_ctx *c) {
    static int eps[MANY];
    struct rlimit rl = {MANY + 64, MANY + 64};
    struct scif_portID peer;
    int l, i, v;

    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    l = peer_listen(c, 0, MANY);
    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    for (i = 0; i < MANY; i++) {
        eps[i] = peer_accept(c, l, &peer);
        CHECK(eps[i] >= 0, "accept %d", i);
    }
    for (i = 0; i < MANY; i++) {
        CHECK(recv_all(eps[i], &v, 4) == 0, "recv %d", i);
        v += 1;
        CHECK(send_all(eps[i], &v, 4) == 0, "send %d", i);
    }
    return KSFT_PASS;
}

static int many_cli(struct peer_ctx *c) {
    static int eps[MANY];
    struct rlimit rl = {MANY + 64, MANY + 64};
    int i, v;

    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    CHECK(peer_sync(c) == 0);
    for (i = 0; i < MANY; i++) {
        eps[i] = peer_conn(c, 0);
        CHECK(eps[i] >= 0, "endpoint %d", i);
    }
    for (i = 0; i < MANY; i++)
        CHECK(send_all(eps[i], &i, 4) == 0, "send %d", i);
    for (i = 0; i < MANY; i++) {
        CHECK(recv_all(eps[i], &v, 4) == 0, "recv %d", i);
        CHECK(v == i + 1, "connection %d answered %d", i, v);
    }
    return KSFT_PASS;
}

static const struct peer_test tests[] = {
    {"peer: connect/accept report each other's node and port", connect_ids_srv, connect_ids_cli,
     300, 0},
    {"peer: connect to no listener: ECONNREFUSED, then the endpoint connects", refused_srv,
     refused_cli, 300, 0},
    {"peer: a request beyond the listen backlog is refused", backlog_srv, backlog_cli, 300, 0},
    {"peer: 1 B .. 4 MiB each way, pattern checked", sizes_srv, sizes_cli, 900, 0},
    {"peer: non-blocking recv and send into a full ring: EAGAIN", nonblock_srv, nonblock_cli, 300,
     0},
    {"peer: 0-byte send/recv return 0, bad length or flags: EINVAL", zero_srv, zero_cli, 300, 0},
    {"peer: poll POLLOUT at once, POLLIN once data came", poll_srv, poll_cli, 300, 0},
    {"peer: peer close: POLLHUP, queued data, then ECONNRESET", close_srv, close_cli, 300, 0},
    {"peer: non-blocking connect completes with POLLOUT", nbconn_srv, nbconn_cli, 300, 0},
    {"peer: peer close wakes a blocked recv with ECONNRESET", brecv_srv, brecv_cli, 300, 0},
    {"peer: peer close wakes a blocked send with ECONNRESET", bsend_srv, bsend_cli, 300, 0},
    {"peer: sender killed mid-stream: drain, then ECONNRESET", death_srv, death_cli, 300, 0},
    {"peer: 1000 endpoints connected at once", many_srv, many_cli, 900, 0},
};

int main(int argc, char **argv) {
    return peer_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
