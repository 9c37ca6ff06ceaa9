// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * remote_msg: the node-loss behaviours between two hosts over scif_rdma.ko
 * (tools/vm/rdma-msg.test; not an area of run-suite): they only make sense
 * with the peer on another host (PEER_REMOTE_ONLY).  The behaviours that
 * also hold against an emulated peer are in selftests/core/peer_test.c.
 * Server and client halves of the peer fixture (lib/peer.h), run as
 *
 *   remote_msg --role server              on one host
 *   remote_msg --role client --peer N     on the other (N: the first's node)
 *
 * A behaviour that needs the node lost creates $REMOTE_MSG_FLAG (a file)
 * on the server; the test script then unloads scif_rdma.ko on the
 * server's host, loads it again, waits until the client's node is up and
 * removes the flag.  The loss ends the control connection too: both
 * halves meet again on a new one (peer_reconnect) before they return.
 */
#include <pthread.h>

#include "peer.h"

/*
 * Whether the server has $REMOTE_MSG_FLAG, the server telling the client:
 * 1 or 0 (both halves then skip), or -1.
 */
static int flag_set(struct peer_ctx *c) {
    int v = getenv("REMOTE_MSG_FLAG") != NULL;

    if (c->server)
        return peer_tell(c, v) ? -1 : v;
    if (peer_hear(c, &v))
        return -1;
    if (!v)
        diag("the server has no REMOTE_MSG_FLAG");
    return v;
}

/* Server: wait until the script removed @flag (the node is back): 0 or -1. */
static int node_back(const struct peer_ctx *c, const char *flag) {
    int i;

    for (i = 0; i < c->wait_s * 10 && access(flag, F_OK) == 0; i++)
        sleep_ms(100);
    if (access(flag, F_OK) == 0) {
        diag("the node did not come back within %d s", c->wait_s);
        return -1;
    }
    return 0;
}

/* Server: create @flag (the script then unloads scif_rdma.ko here): 0 or -1. */
static int lose_node(const char *flag) {
    FILE *f = fopen(flag, "w");

    if (!f || fclose(f)) {
        diag("create %s: %s", flag, strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * A connect in progress when the node is lost: the server listens but
 * never accepts; once the client's request is pending it has the node
 * lost.  The client's blocked connect must end with ENODEV; the server
 * waits until the node is back, and its listener then holds no stale
 * request.
 */
static int enodev_srv(struct peer_ctx *c) {
    const char *flag = getenv("REMOTE_MSG_FLAG");
    int l, nep = -1;
    struct scif_portID peer;
    struct pollfd p;

    if (flag_set(c) <= 0)
        return test_skip("REMOTE_MSG_FLAG not set");
    l = peer_listen(c, 0, 1);
    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    p = (struct pollfd){.fd = l, .events = POLLIN};
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1, "no connect request within %d s", c->wait_s);
    CHECK(lose_node(flag) == 0);
    CHECK(node_back(c, flag) == 0);
    CHECK_OK(fcntl(l, F_SETFL, O_NONBLOCK));
    errno = 0;
    CHECK(scif_accept(l, &peer, &nep, 0) < 0, "accepted a request of the lost node (from %u:%u)",
          peer.node, peer.port);
    CHECK(errno == EAGAIN, "accept after the loss: %s", strerror(errno));
    CHECK(peer_reconnect(c) == 0);
    return KSFT_PASS;
}

static int enodev_cli(struct peer_ctx *c) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, 0)};
    int epd = peer_open(c), r;

    CHECK_OK(epd);
    r = flag_set(c);
    CHECK(r >= 0);
    if (!r)
        return test_skip("the server has no REMOTE_MSG_FLAG");
    CHECK(peer_sync(c) == 0); /* the server listens */
    /* blocks until the node is lost: the server never accepts */
    errno = 0;
    r = scif_connect(epd, &dst);
    CHECK(r < 0 && errno == ENODEV, "blocked connect at the node loss: %d (%s), expected ENODEV", r,
          strerror(errno));
    CHECK(peer_reconnect(c) == 0);
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
 * Node loss: the server's host unloads scif_rdma.ko while it has a sender
 * blocked in the transport's wait (its peer reads nothing, so the credit
 * runs out) and a receiver blocked in recv; the client waits in poll for
 * the hang-up.  The unload must end both server calls (the receiver with
 * ECONNRESET, the sender with ECONNRESET or the short count it moved),
 * leave no thread in the module's text, and the client sees POLLHUP, then
 * the bytes that arrived, then ECONNRESET.
 */
static int nodeloss_srv(struct peer_ctx *c) {
    const char *flag = getenv("REMOTE_MSG_FLAG");
    struct nodeloss_send snd = {.len = 16u << 20};
    struct scif_portID peer;
    int l, epd;
    pthread_t th;
    char ch;

    if (flag_set(c) <= 0)
        return test_skip("REMOTE_MSG_FLAG not set");
    l = peer_listen(c, 0, 1);
    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    epd = peer_accept(c, l, &peer);
    CHECK(epd >= 0, "accept");
    close(l);
    CHECK(recv_all(epd, &ch, 1) == 0, "recv");
    snd.epd = epd;
    CHECK(pthread_create(&th, NULL, nodeloss_sender, &snd) == 0, "pthread_create");
    /* ordering only: let the sender use up the credit and block */
    sleep(2);
    CHECK(lose_node(flag) == 0);
    CHECK_ERR(scif_recv(epd, &ch, 1, SCIF_RECV_BLOCK), ECONNRESET);
    pthread_join(th, NULL);
    CHECK((snd.ret == -1 && snd.err == ECONNRESET) || (snd.ret >= 0 && (size_t)snd.ret < snd.len),
          "blocked send at unload returned %d (%s)", snd.ret, strerror(snd.err));
    CHECK(node_back(c, flag) == 0);
    CHECK(peer_reconnect(c) == 0);
    return KSFT_PASS;
}

static int nodeloss_cli(struct peer_ctx *c) {
    char ch = 'l', buf[4096];
    struct pollfd p;
    int epd, r;

    r = flag_set(c);
    CHECK(r >= 0);
    if (!r)
        return test_skip("the server has no REMOTE_MSG_FLAG");
    CHECK(peer_sync(c) == 0);
    epd = peer_conn(c, 0);
    CHECK(epd >= 0, "connect");
    CHECK(send_all(epd, &ch, 1) == 0, "send");
    p = (struct pollfd){.fd = epd, .events = 0};
    CHECK(poll(&p, 1, c->wait_s * 1000) == 1 && (p.revents & POLLHUP), "revents %#x", p.revents);
    do
        r = scif_recv(epd, buf, sizeof(buf), 0);
    while (r > 0);
    CHECK(r == -1 && errno == ECONNRESET, "recv after the hang-up: %d (%s)", r, strerror(errno));
    CHECK(peer_reconnect(c) == 0);
    return KSFT_PASS;
}

/* After the node came back, connections work again. */
static int back_srv(struct peer_ctx *c) {
    struct scif_portID peer;
    int l = peer_listen(c, 0, 1), epd;
    char ch;

    CHECK(l >= 0);
    CHECK(peer_sync(c) == 0);
    epd = peer_accept(c, l, &peer);
    CHECK(epd >= 0, "accept");
    CHECK(peer.node == c->other, "peer node %u", peer.node);
    CHECK(recv_all(epd, &ch, 1) == 0 && send_all(epd, &ch, 1) == 0, "echo");
    return KSFT_PASS;
}

static int back_cli(struct peer_ctx *c) {
    char ch = 'b';
    int epd;

    CHECK(peer_sync(c) == 0);
    epd = peer_conn(c, 0);
    CHECK(epd >= 0, "connect after the node came back");
    CHECK(send_all(epd, &ch, 1) == 0 && recv_all(epd, &ch, 1) == 0 && ch == 'b', "echo");
    return KSFT_PASS;
}

static const struct peer_test tests[] = {
    {"remote: a connect in progress at the node loss ends with ENODEV", enodev_srv, enodev_cli, 600,
     PEER_REMOTE_ONLY},
    {"remote: node loss wakes blocked recv and send, the peer sees POLLHUP, ECONNRESET",
     nodeloss_srv, nodeloss_cli, 600, PEER_REMOTE_ONLY},
    {"remote: connect after the node came back", back_srv, back_cli, 300, PEER_REMOTE_ONLY},
};

int main(int argc, char **argv) {
    return peer_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
