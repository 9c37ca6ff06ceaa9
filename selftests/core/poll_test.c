// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * poll_test: the non-blocking paths.  Non-blocking connect (EINPROGRESS,
 * completion seen as POLLOUT, then the connection works), a refused
 * non-blocking connect, and the events of poll(2) on an endpoint descriptor
 * and of scif_poll(): POLLIN for a pending connection and for queued data,
 * POLLOUT for room to send, POLLHUP/POLLERR once the peer is gone.
 * Poll timeouts here only bound a wait for an event that must come.
 */
#include "scif_test.h"

#define WAIT_MS 30000

static short poll1(int fd, short events, int timeout) {
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, timeout);

    return r < 0 ? (short)-1 : p.revents;
}

static int nb_connect(int cnode, int snode) {
    struct scif_portID dst = {(uint16_t)snode, 0}, peer;
    uint16_t port;
    int l, c, n, r;
    short ev;
    char buf[6];

    if (cnode)
        REQUIRE_NODE(cnode);
    if (snode)
        REQUIRE_NODE(snode);
    l = make_listener(snode, 0, 4, &port);
    CHECK_OK(l);
    dst.port = port;
    c = ep_open(cnode);
    CHECK_OK(c);
    CHECK_OK(fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK));
    errno = 0;
    r = scif_connect(c, &dst);
    CHECK(r == -1 && errno == EINPROGRESS, "non-blocking connect: ret %d errno %d (%s)", r, errno,
          strerror(errno));
    /* Not connected yet: sending is refused. */
    CHECK(scif_send(c, "x", 1, 0) < 0, "send before the connection completed");
    ev = poll1(l, POLLIN, WAIT_MS);
    CHECK(ev & POLLIN, "listener revents %#x, expected POLLIN", ev);
    CHECK_OK(scif_accept(l, &peer, &n, 0));
    CHECK(peer.node == cnode, "peer node %u", peer.node);
    ev = poll1(c, POLLOUT, WAIT_MS);
    CHECK(ev > 0 && (ev & POLLOUT) && !(ev & (POLLERR | POLLHUP)),
          "connecting endpoint revents %#x, expected POLLOUT", ev);
    CHECK(scif_send(c, "hello", 6, SCIF_SEND_BLOCK) == 6, "send: %s", strerror(errno));
    CHECK(scif_recv(n, buf, 6, SCIF_RECV_BLOCK) == 6, "recv: %s", strerror(errno));
    CHECK(!strcmp(buf, "hello"), "data");
    return KSFT_PASS;
}

static int t_nb_connect_0_0(void) {
    return nb_connect(0, 0);
}
static int t_nb_connect_1_0(void) {
    return nb_connect(1, 0);
}
static int t_nb_connect_0_1(void) {
    return nb_connect(0, 1);
}

static int t_nb_connect_refused(void) {
    struct scif_portID dst = {0, 0};
    int c = scif_open(), r, b = scif_open();
    short ev;

    CHECK_OK(c);
    CHECK_OK(b);
    r = scif_bind(b, 0);
    CHECK_OK(r);
    dst.port = (uint16_t)r; /* bound, never listening */
    CHECK_OK(fcntl(c, F_SETFL, O_NONBLOCK));
    errno = 0;
    r = scif_connect(c, &dst);
    if (r == -1 && errno == EINPROGRESS) {
        ev = poll1(c, POLLOUT, WAIT_MS);
        CHECK(ev > 0 && (ev & (POLLERR | POLLHUP)), "refused connect revents %#x", ev);
    } else {
        CHECK(r == -1 && errno == ECONNREFUSED, "ret %d errno %s", r, strerror(errno));
    }
    return KSFT_PASS;
}

static int t_nb_accept(void) {
    uint16_t port;
    int l = make_listener(0, 0, 4, &port), n;
    struct scif_portID peer;

    CHECK_OK(l);
    CHECK_OK(fcntl(l, F_SETFL, O_NONBLOCK));
    /* O_NONBLOCK does not change the contract: without the flag, EAGAIN. */
    CHECK_ERR(scif_accept(l, &peer, &n, 0), EAGAIN);
    CHECK(poll1(l, POLLIN, 0) == 0, "idle listener has events");
    return KSFT_PASS;
}

static int t_poll_idle(void) {
    int s, c;
    short ev;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    ev = poll1(c, POLLIN | POLLOUT, 0);
    CHECK(ev == POLLOUT, "fresh connection revents %#x, expected POLLOUT only", ev);
    ev = poll1(s, POLLIN, 0);
    CHECK(ev == 0, "no data yet but revents %#x", ev);
    return KSFT_PASS;
}

static int t_poll_in(void) {
    int s, c;
    short ev;
    char buf[4];

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK(send_all(c, "abc", 4) == 0, "send");
    ev = poll1(s, POLLIN, WAIT_MS);
    CHECK(ev & POLLIN, "revents %#x after data, expected POLLIN", ev);
    CHECK(recv_all(s, buf, 4) == 0, "recv");
    ev = poll1(s, POLLIN, 0);
    CHECK(!(ev & POLLIN), "POLLIN still set after draining (%#x)", ev);
    return KSFT_PASS;
}

/* A blocked poll is woken by the data. */
static void *late_send(void *arg) {
    int epd = *(int *)arg;

    sleep_ms(300);
    scif_send(epd, "late", 4, SCIF_SEND_BLOCK);
    return NULL;
}

static int t_poll_wakeup(void) {
    int s, c;
    short ev;
    pthread_t th;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK(pthread_create(&th, NULL, late_send, &c) == 0, "pthread_create");
    ev = poll1(s, POLLIN, WAIT_MS);
    pthread_join(th, NULL);
    CHECK(ev & POLLIN, "blocked poll not woken by data: revents %#x", ev);
    return KSFT_PASS;
}

static int t_poll_out_full(void) {
    static char buf[1 << 20];
    int s, c, r, i;
    long queued = 0;
    short ev;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    /* Fill the ring without blocking. */
    for (i = 0; i < 256; i++) {
        r = scif_send(c, buf, sizeof(buf), 0);
        if (r <= 0)
            break;
        queued += r;
    }
    CHECK(i < 256, "256 MiB queued without the ring filling up");
    ev = poll1(c, POLLOUT, 0);
    CHECK(!(ev & POLLOUT), "ring full (%ld bytes queued) but POLLOUT set", queued);
    /* Draining makes room again. */
    while (queued > 0) {
        r = scif_recv(s, buf, sizeof(buf), 0);
        CHECK(r > 0, "drain: %d %s", r, strerror(errno));
        queued -= r;
    }
    ev = poll1(c, POLLOUT, WAIT_MS);
    CHECK(ev & POLLOUT, "after draining revents %#x", ev);
    return KSFT_PASS;
}

static int t_poll_hup(void) {
    int s, c;
    short ev;
    char buf[8];

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK(send_all(c, "bye", 4) == 0, "send");
    CHECK_OK(scif_close(c));
    ev = poll1(s, POLLIN, WAIT_MS);
    CHECK(ev & POLLIN, "queued data after peer close: revents %#x", ev);
    CHECK(ev & POLLHUP, "peer closed: revents %#x, expected POLLHUP", ev);
    CHECK(recv_all(s, buf, 4) == 0, "recv queued");
    ev = poll1(s, POLLIN | POLLOUT, 0);
    CHECK(ev & POLLHUP, "drained, peer gone: revents %#x", ev);
    CHECK(!(ev & POLLOUT), "POLLOUT on a dead connection (%#x)", ev);
    return KSFT_PASS;
}

static int t_scif_poll(void) {
    struct scif_pollepd pe[3];
    uint16_t port;
    int s, c, l = make_listener(0, 0, 4, &port), r;

    CHECK_OK(l);
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    pe[0].epd = s;
    pe[0].events = POLLIN;
    pe[1].epd = c;
    pe[1].events = POLLOUT;
    pe[2].epd = l;
    pe[2].events = POLLIN;
    r = scif_poll(pe, 3, 0);
    CHECK(r == 1, "scif_poll returned %d, expected 1 (POLLOUT on client)", r);
    CHECK(pe[0].revents == 0 && pe[1].revents == POLLOUT && pe[2].revents == 0,
          "revents %#x %#x %#x", pe[0].revents, pe[1].revents, pe[2].revents);
    CHECK(send_all(c, "x", 1) == 0, "send");
    r = scif_poll(pe, 3, WAIT_MS);
    CHECK(r == 2 && (pe[0].revents & POLLIN), "scif_poll returned %d, revents %#x", r,
          pe[0].revents);
    r = scif_poll(pe, 0, 10);
    CHECK(r == 0, "scif_poll over no endpoints returned %d", r);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"non-blocking connect node 0 -> 0: EINPROGRESS, then POLLOUT", t_nb_connect_0_0, 0},
    {"non-blocking connect node 1 -> 0: EINPROGRESS, then POLLOUT", t_nb_connect_1_0, 0},
    {"non-blocking connect node 0 -> 1: EINPROGRESS, then POLLOUT", t_nb_connect_0_1, 0},
    {"non-blocking connect to no listener is refused", t_nb_connect_refused, 0},
    {"accept on an O_NONBLOCK listener without requests: EAGAIN", t_nb_accept, 0},
    {"poll: fresh connection is POLLOUT, no POLLIN", t_poll_idle, 0},
    {"poll: POLLIN with queued data, cleared when drained", t_poll_in, 0},
    {"poll: a blocked poll wakes up when data arrives", t_poll_wakeup, 0},
    {"poll: no POLLOUT while the ring is full, back after draining", t_poll_out_full, 0},
    {"poll: POLLHUP once the peer closed", t_poll_hup, 0},
    {"scif_poll reports per-endpoint events", t_scif_poll, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
