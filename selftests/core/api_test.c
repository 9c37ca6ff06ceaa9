// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * api_test: every endpoint call of libscif and each errno it documents
 * (scif_open, scif_close, scif_get_fd, scif_get_nodeIDs, scif_bind,
 * scif_listen, scif_connect, scif_accept), node 0 loopback and the emulated
 * nodes.  Expects the module loaded with nodes >= 2; behaviours that need a
 * missing node are skipped with the reason.
 */
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "scif_test.h"

/* A port in the unprivileged, non-auto range, different per process. */
static uint16_t some_port(void) {
    return (uint16_t)(SCIF_ADMIN_PORT_END + 1 + (getpid() * 7919u) % 20000u);
}

static int t_open_close(void) {
    int epd = scif_open();

    CHECK(epd >= 0, "scif_open: %s", strerror(errno));
    CHECK(fcntl(epd, F_GETFD) & FD_CLOEXEC, "endpoint descriptor is not close-on-exec");
    CHECK_OK(scif_close(epd));
    CHECK_ERR(fcntl(epd, F_GETFD), EBADF);
    return KSFT_PASS;
}

static int t_close_ebadf(void) {
    int epd = scif_open();

    CHECK_OK(epd);
    CHECK_OK(scif_close(epd));
    CHECK_ERR(scif_close(epd), EBADF);
    CHECK_ERR(scif_close(-1), EBADF);
    return KSFT_PASS;
}

static int t_open_emfile(void) {
    struct rlimit rl = {8, 8};
    int i, epd = -1;

    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    for (i = 0; i < 16; i++) {
        epd = scif_open();
        if (epd < 0)
            break;
    }
    CHECK(epd < 0 && errno == EMFILE, "scif_open past RLIMIT_NOFILE: ret %d errno %d (%s)", epd,
          errno, strerror(errno));
    return KSFT_PASS;
}

static int t_get_fd(void) {
    int epd = scif_open(), fd;
    struct pollfd p;

    CHECK_OK(epd);
    fd = scif_get_fd(epd);
    CHECK(fd >= 0, "scif_get_fd returned %d", fd);
    p.fd = fd;
    p.events = POLLIN;
    /* An unconnected endpoint is pollable and has nothing to read. */
    CHECK_OK(poll(&p, 1, 0));
    CHECK(!(p.revents & POLLNVAL), "poll on scif_get_fd() result: POLLNVAL");
    return KSFT_PASS;
}

static int t_node_ids(void) {
    uint16_t nodes[32], self = 0xffff;
    int n, i, param = module_nodes_param(), seen[32] = {0};

    n = scif_get_nodeIDs(nodes, 32, &self);
    CHECK(n >= 1, "scif_get_nodeIDs returned %d: %s", n, strerror(errno));
    CHECK(self == 0, "self is %u as node 0", self);
    if (param >= 0)
        CHECK(n == param + 1, "%d nodes online, module has nodes=%d", n, param);
    for (i = 0; i < n && i < 32; i++) {
        CHECK(nodes[i] < 32, "node id %u out of range", nodes[i]);
        CHECK(!seen[nodes[i]], "node %u listed twice", nodes[i]);
        seen[nodes[i]] = 1;
    }
    for (i = 0; i < n; i++)
        CHECK(seen[i], "node %d missing from the list", i);
    return KSFT_PASS;
}

static int t_node_ids_small(void) {
    uint16_t nodes[4] = {0xaaaa, 0xaaaa, 0xaaaa, 0xaaaa}, self = 0xffff;
    int n;

    REQUIRE_NODE(1);
    n = scif_get_nodeIDs(nodes, 1, &self);
    CHECK(n >= 2, "len 1: returned %d, expected the count of online nodes (>= 2)", n);
    CHECK(nodes[0] != 0xaaaa, "first entry not filled");
    CHECK(nodes[1] == 0xaaaa && nodes[2] == 0xaaaa, "wrote past the capacity of 1");
    CHECK(self == 0, "self %u", self);
    n = scif_get_nodeIDs(nodes, 0, &self);
    CHECK(n >= 2, "len 0: returned %d", n);
    return KSFT_PASS;
}

static int t_node_ids_errors(void) {
    uint16_t nodes[4], self;

    CHECK_ERR(scif_get_nodeIDs((uint16_t *)8, 4, &self), EFAULT);
    CHECK_ERR(scif_get_nodeIDs(nodes, 4, (uint16_t *)8), EFAULT);
    CHECK_ERR(scif_get_nodeIDs(nodes, -1, &self), EINVAL);
    return KSFT_PASS;
}

static int t_node_env(void) {
    uint16_t nodes[32], self = 0xffff;
    int n, epd;

    REQUIRE_NODE(1);
    CHECK_OK(setenv("SCIF_NODE", "1", 1));
    epd = scif_open();
    CHECK(epd >= 0, "scif_open with SCIF_NODE=1: %s", strerror(errno));
    n = scif_get_nodeIDs(nodes, 32, &self);
    CHECK(n >= 2, "scif_get_nodeIDs as node 1 returned %d", n);
    CHECK(self == 1, "SCIF_NODE=1: self is %u", self);
    scif_close(epd);
    CHECK_OK(setenv("SCIF_NODE", "99", 1));
    CHECK_ERR(scif_open(), ENXIO);
    return KSFT_PASS;
}

static int t_bind_auto(void) {
    int a = scif_open(), b = scif_open(), pa, pb;

    CHECK_OK(a);
    CHECK_OK(b);
    pa = scif_bind(a, 0);
    pb = scif_bind(b, 0);
    CHECK(pa >= SCIF_PORT_RSVD && pa <= 65535, "auto port %d", pa);
    CHECK(pb >= SCIF_PORT_RSVD && pb <= 65535, "auto port %d", pb);
    CHECK(pa != pb, "two endpoints got the same auto port %d", pa);
    return KSFT_PASS;
}

static int t_bind_fixed(void) {
    int epd = scif_open();
    uint16_t port = some_port();

    CHECK_OK(epd);
    CHECK(scif_bind(epd, port) == port, "bind %u did not return the port", port);
    return KSFT_PASS;
}

static int t_bind_twice(void) {
    int epd = scif_open();

    CHECK_OK(epd);
    CHECK_OK(scif_bind(epd, 0));
    CHECK_ERR(scif_bind(epd, 0), EINVAL);
    CHECK_ERR(scif_bind(epd, some_port()), EINVAL);
    return KSFT_PASS;
}

static int t_bind_inuse(void) {
    int a = scif_open(), b = scif_open();
    uint16_t port = some_port();

    CHECK_OK(a);
    CHECK_OK(b);
    CHECK_OK(scif_bind(a, port));
    CHECK_ERR(scif_bind(b, port), EADDRINUSE);
    /* Closing the owner frees the port. */
    CHECK_OK(scif_close(a));
    CHECK(scif_bind(b, port) == port, "port %u not free after close", port);
    return KSFT_PASS;
}

static int t_bind_per_node(void) {
    int a = ep_open(0), b, c;
    uint16_t port = some_port();

    REQUIRE_NODE(1);
    b = ep_open(1);
    CHECK_OK(a);
    CHECK_OK(b);
    CHECK(scif_bind(a, port) == port, "bind on node 0");
    CHECK(scif_bind(b, port) == port, "same port on node 1: %s", strerror(errno));
    c = ep_open(1);
    CHECK_OK(c);
    CHECK_ERR(scif_bind(c, port), EADDRINUSE);
    return KSFT_PASS;
}

static int t_bind_admin_root(void) {
    int epd = scif_open();
    uint16_t port = (uint16_t)(100 + getpid() % 800);

    CHECK_OK(epd);
    if (geteuid() != 0)
        return test_skip("needs root (CAP_SYS_ADMIN)");
    CHECK(scif_bind(epd, port) == port, "root binding privileged port %u: %s", port,
          strerror(errno));
    return KSFT_PASS;
}

static int t_bind_admin_eacces(void) {
    int epd;

    if (geteuid() == 0) {
        /* Become nobody: no capabilities left. */
        CHECK_OK(setgroups(0, NULL));
        CHECK_OK(setgid(65534));
        CHECK_OK(setuid(65534));
    }
    epd = scif_open();
    CHECK(epd >= 0, "scif_open as uid %d: %s", (int)getuid(), strerror(errno));
    CHECK_ERR(scif_bind(epd, 1023), EACCES);
    CHECK_ERR(scif_bind(epd, 1), EACCES);
    /* An unprivileged port still works for the same process. */
    CHECK(scif_bind(epd, some_port()) > 0, "unprivileged bind: %s", strerror(errno));
    return KSFT_PASS;
}

static int t_bind_connected(void) {
    int s, c;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK_ERR(scif_bind(c, 0), EISCONN);
    CHECK_ERR(scif_bind(s, some_port()), EISCONN);
    return KSFT_PASS;
}

static int t_listen_unbound(void) {
    int epd = scif_open();

    CHECK_OK(epd);
    CHECK_ERR(scif_listen(epd, 4), EINVAL);
    return KSFT_PASS;
}

static int t_listen_connected(void) {
    int s, c;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK_ERR(scif_listen(c, 4), EISCONN);
    CHECK_ERR(scif_listen(s, 4), EISCONN);
    return KSFT_PASS;
}

static int t_connect_refused(void) {
    int epd = scif_open(), l;
    struct scif_portID dst = {0, some_port()};

    CHECK_OK(epd);
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    /* Bound but not listening is refused too. */
    l = scif_open();
    CHECK_OK(l);
    CHECK(scif_bind(l, dst.port) == dst.port, "bind");
    CHECK_ERR(scif_connect(epd, &dst), ECONNREFUSED);
    return KSFT_PASS;
}

static int t_connect_enodev(void) {
    int epd = scif_open(), max = max_node();
    struct scif_portID dst = {0, some_port()};

    CHECK_OK(epd);
    CHECK(max >= 0, "no node list");
    dst.node = (uint16_t)(max < 9 ? 9 : max + 1);
    CHECK_ERR(scif_connect(epd, &dst), ENODEV);
    dst.node = 0xffff;
    CHECK_ERR(scif_connect(epd, &dst), ENODEV);
    return KSFT_PASS;
}

static int t_connect_port0(void) {
    int epd = scif_open();
    struct scif_portID dst = {0, 0};

    CHECK_OK(epd);
    CHECK_ERR(scif_connect(epd, &dst), EINVAL);
    return KSFT_PASS;
}

static int t_connect_isconn(void) {
    int s, c;
    struct scif_portID dst = {0, some_port()};
    uint16_t port;
    int l = make_listener(0, 0, 4, &port);

    CHECK_OK(l);
    dst.port = port;
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK_ERR(scif_connect(c, &dst), EISCONN);
    CHECK_ERR(scif_connect(s, &dst), EISCONN);
    return KSFT_PASS;
}

static int t_connect_listener(void) {
    uint16_t port, p2;
    int l = make_listener(0, 0, 4, &port), l2 = make_listener(0, 0, 4, &p2);
    struct scif_portID dst = {0, 0};

    CHECK_OK(l);
    CHECK_OK(l2);
    dst.port = p2;
    CHECK_ERR(scif_connect(l, &dst), EOPNOTSUPP);
    return KSFT_PASS;
}

/* Connect from @cnode to a listener on @snode; checks ports and peer ids. */
static int connect_nodes(int snode, int cnode) {
    struct connect_job job;
    struct scif_portID peer;
    uint16_t port;
    pthread_t th;
    int l, n, r;
    char buf[8] = "ping";

    if (snode)
        REQUIRE_NODE(snode);
    if (cnode)
        REQUIRE_NODE(cnode);
    l = make_listener(snode, 0, 4, &port);
    CHECK(l >= 0, "listener on node %d: %s", snode, strerror(errno));
    job.epd = ep_open(cnode);
    CHECK_OK(job.epd);
    job.dst.node = (uint16_t)snode;
    job.dst.port = port;
    CHECK(pthread_create(&th, NULL, connect_thread, &job) == 0, "pthread_create");
    r = scif_accept(l, &peer, &n, SCIF_ACCEPT_SYNC);
    pthread_join(th, NULL);
    CHECK(r == 0, "accept: %s", strerror(errno));
    /* An unbound endpoint is bound by connect; the port is returned. */
    CHECK(job.ret >= SCIF_PORT_RSVD, "connect returned %d (%s)", job.ret, strerror(job.err));
    CHECK(peer.node == cnode, "peer node %u, expected %d", peer.node, cnode);
    CHECK(peer.port == job.ret, "peer port %u, connect returned %d", peer.port, job.ret);
    CHECK(n >= 0 && n != l, "accepted descriptor %d", n);
    CHECK(send_all(job.epd, buf, 4) == 0, "send: %s", strerror(errno));
    memset(buf, 0, sizeof(buf));
    CHECK(recv_all(n, buf, 4) == 0, "recv: %s", strerror(errno));
    CHECK(!memcmp(buf, "ping", 4), "data garbled");
    CHECK(send_all(n, "pong", 4) == 0, "send back: %s", strerror(errno));
    CHECK(recv_all(job.epd, buf, 4) == 0, "recv back: %s", strerror(errno));
    CHECK(!memcmp(buf, "pong", 4), "data garbled");
    return KSFT_PASS;
}

static int t_conn_0_0(void) {
    return connect_nodes(0, 0);
}
static int t_conn_1_0(void) {
    return connect_nodes(0, 1);
}
static int t_conn_0_1(void) {
    return connect_nodes(1, 0);
}
static int t_conn_1_2(void) {
    return connect_nodes(2, 1);
}
static int t_conn_1_1(void) {
    return connect_nodes(1, 1);
}

/* Connecting from a bound endpoint keeps its port. */
static int t_connect_bound(void) {
    struct connect_job job;
    struct scif_portID peer;
    uint16_t port, mine = some_port();
    pthread_t th;
    int l = make_listener(0, 0, 4, &port), n;

    CHECK_OK(l);
    job.epd = scif_open();
    CHECK_OK(job.epd);
    CHECK(scif_bind(job.epd, mine) == mine, "bind");
    job.dst.node = 0;
    job.dst.port = port;
    CHECK(pthread_create(&th, NULL, connect_thread, &job) == 0, "pthread_create");
    CHECK_OK(scif_accept(l, &peer, &n, SCIF_ACCEPT_SYNC));
    pthread_join(th, NULL);
    CHECK(job.ret == mine, "connect returned %d, bound to %u", job.ret, mine);
    CHECK(peer.port == mine, "peer port %u", peer.port);
    return KSFT_PASS;
}

static int t_accept_eagain(void) {
    uint16_t port;
    int l = make_listener(0, 0, 4, &port), n = -1;
    struct scif_portID peer;

    CHECK_OK(l);
    CHECK_ERR(scif_accept(l, &peer, &n, 0), EAGAIN);
    return KSFT_PASS;
}

static int t_accept_einval(void) {
    int a = scif_open(), n;
    struct scif_portID peer;

    CHECK_OK(a);
    CHECK_ERR(scif_accept(a, &peer, &n, 0), EINVAL);
    CHECK_OK(scif_bind(a, 0));
    CHECK_ERR(scif_accept(a, &peer, &n, 0), EINVAL);
    CHECK_ERR(scif_accept(a, &peer, &n, SCIF_ACCEPT_SYNC), EINVAL);
    return KSFT_PASS;
}

static int t_accept_badflags(void) {
    uint16_t port;
    int l = make_listener(0, 0, 4, &port), n;
    struct scif_portID peer;

    CHECK_OK(l);
    CHECK_ERR(scif_accept(l, &peer, &n, 0x100), EINVAL);
    return KSFT_PASS;
}

/* Pending requests beyond the backlog are refused; those within it are accepted. */
static int t_backlog(void) {
    uint16_t port;
    int l = make_listener(0, 0, 1, &port), a, b, n, r;
    struct scif_portID dst = {0, 0}, peer;
    struct pollfd p;

    CHECK_OK(l);
    dst.port = port;
    a = scif_open();
    b = scif_open();
    CHECK_OK(a);
    CHECK_OK(b);
    CHECK_OK(fcntl(a, F_SETFL, O_NONBLOCK));
    CHECK_OK(fcntl(b, F_SETFL, O_NONBLOCK));
    r = scif_connect(a, &dst);
    CHECK(r >= 0 || errno == EINPROGRESS, "first connect: %s", strerror(errno));
    /* Wait until the first request is pending at the listener. */
    p.fd = l;
    p.events = POLLIN;
    CHECK(poll(&p, 1, 30000) == 1 && (p.revents & POLLIN), "listener never saw the request");
    errno = 0;
    r = scif_connect(b, &dst);
    if (r < 0 && errno == EINPROGRESS) {
        p.fd = b;
        p.events = POLLOUT;
        CHECK(poll(&p, 1, 30000) == 1, "second connect never completed");
        CHECK(p.revents & (POLLERR | POLLHUP), "second connect completed, revents %#x", p.revents);
    } else {
        CHECK(r < 0 && errno == ECONNREFUSED, "second connect: ret %d errno %s", r,
              strerror(errno));
    }
    CHECK_OK(scif_accept(l, &peer, &n, SCIF_ACCEPT_SYNC));
    CHECK_ERR(scif_accept(l, &peer, &n, 0), EAGAIN);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"scif_open returns a close-on-exec descriptor, scif_close closes it", t_open_close, 0},
    {"scif_close on a closed descriptor: EBADF", t_close_ebadf, 0},
    {"scif_open beyond RLIMIT_NOFILE: EMFILE", t_open_emfile, 0},
    {"scif_get_fd returns a pollable descriptor", t_get_fd, 0},
    {"scif_get_nodeIDs lists every online node, self is 0", t_node_ids, 0},
    {"scif_get_nodeIDs with a small buffer returns the count, fills only len", t_node_ids_small, 0},
    {"scif_get_nodeIDs bad pointers: EFAULT, negative len: EINVAL", t_node_ids_errors, 0},
    {"SCIF_NODE=1 makes scif_open act as node 1, unknown node: ENXIO", t_node_env, 0},
    {"scif_bind port 0 picks distinct ports >= SCIF_PORT_RSVD", t_bind_auto, 0},
    {"scif_bind a fixed port returns it", t_bind_fixed, 0},
    {"scif_bind twice: EINVAL", t_bind_twice, 0},
    {"scif_bind a taken port: EADDRINUSE, free again after close", t_bind_inuse, 0},
    {"each node has its own port space", t_bind_per_node, 0},
    {"scif_bind below SCIF_ADMIN_PORT_END as root succeeds", t_bind_admin_root, 0},
    {"scif_bind below SCIF_ADMIN_PORT_END without CAP_SYS_ADMIN: EACCES", t_bind_admin_eacces, 0},
    {"scif_bind on a connected endpoint: EISCONN", t_bind_connected, 0},
    {"scif_listen unbound: EINVAL", t_listen_unbound, 0},
    {"scif_listen connected: EISCONN", t_listen_connected, 0},
    {"scif_connect to no listener: ECONNREFUSED", t_connect_refused, 0},
    {"scif_connect to an absent node: ENODEV", t_connect_enodev, 0},
    {"scif_connect to port 0: EINVAL", t_connect_port0, 0},
    {"scif_connect when connected: EISCONN", t_connect_isconn, 0},
    {"scif_connect on a listening endpoint: EOPNOTSUPP", t_connect_listener, 0},
    {"scif_connect from a bound endpoint keeps its port", t_connect_bound, 0},
    {"connect node 0 -> node 0 (loopback), accept reports the peer", t_conn_0_0, 0},
    {"connect node 1 -> node 0", t_conn_1_0, 0},
    {"connect node 0 -> node 1", t_conn_0_1, 0},
    {"connect node 1 -> node 1", t_conn_1_1, 0},
    {"connect node 1 -> node 2", t_conn_1_2, 0},
    {"scif_accept without SCIF_ACCEPT_SYNC and nothing pending: EAGAIN", t_accept_eagain, 0},
    {"scif_accept on an endpoint that is not listening: EINVAL", t_accept_einval, 0},
    {"scif_accept with unknown flags: EINVAL", t_accept_badflags, 0},
    {"requests beyond the listen backlog are refused", t_backlog, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
