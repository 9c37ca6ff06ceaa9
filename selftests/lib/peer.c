// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The two-role peer fixture (see peer.h). */
#include "peer.h"

static const struct peer_test *peer_tests;
static int peer_role;    /* 0: both halves here, 1: server, 2: client */
static int peer_node_id; /* --peer */
static int peer_wait = 120;

static int self_node(void) {
    uint16_t nodes[64], self = 0;

    return scif_get_nodeIDs(nodes, 64, &self) < 0 ? -1 : self;
}

int peer_open(const struct peer_ctx *c) {
    return c->remote ? scif_open() : ep_open(c->self);
}

uint16_t peer_port(const struct peer_ctx *c, int i) {
    return (uint16_t)(PEER_DATA_BASE + 8 * c->k + i);
}

static int listen_on(const struct peer_ctx *c, uint16_t port, int backlog) {
    int l = peer_open(c);

    if (l < 0 || scif_bind(l, port) < 0 || scif_listen(l, backlog) < 0) {
        diag("listen on node %d port %u: %s", c->self, port, strerror(errno));
        if (l >= 0)
            close(l);
        return -1;
    }
    return l;
}

int peer_listen(const struct peer_ctx *c, int i, int backlog) {
    return listen_on(c, peer_port(c, i), backlog);
}

/* Wait up to the bound for @events on @epd: 1, or 0 with a diagnostic. */
static int wait_for(const struct peer_ctx *c, int epd, short events, const char *what) {
    struct pollfd p = {.fd = epd, .events = events};
    int r = poll(&p, 1, c->wait_s * 1000);

    if (r == 1)
        return 1;
    diag("%s: %s after %d s", what, r ? strerror(errno) : "nothing", c->wait_s);
    return 0;
}

int peer_accept(const struct peer_ctx *c, int lst, struct scif_portID *peer) {
    int nep;

    if (!wait_for(c, lst, POLLIN, "accept"))
        return -1;
    if (scif_accept(lst, peer, &nep, SCIF_ACCEPT_SYNC) < 0) {
        diag("accept: %s", strerror(errno));
        return -1;
    }
    return nep;
}

/* Connect @epd to @port of the other node, retrying while refused or down. */
static int connect_retry(const struct peer_ctx *c, int epd, uint16_t port) {
    struct scif_portID dst = {(uint16_t)c->other, port};
    int i;

    for (i = 0; i < c->wait_s * 10; i++) {
        if (scif_connect(epd, &dst) >= 0)
            return 0;
        if (errno != ECONNREFUSED && errno != ENODEV)
            break;
        sleep_ms(100);
    }
    diag("connect to %d:%u: %s", c->other, port, strerror(errno));
    return -1;
}

int peer_conn(const struct peer_ctx *c, int i) {
    struct scif_portID dst = {(uint16_t)c->other, peer_port(c, i)};
    int epd = peer_open(c);

    if (epd < 0 || scif_connect(epd, &dst) < 0) {
        int e = errno;

        diag("connect to %d:%u: %s", c->other, dst.port, strerror(e));
        if (epd >= 0)
            close(epd);
        errno = e;
        return -1;
    }
    return epd;
}

int peer_tell(struct peer_ctx *c, int v) {
    if (scif_send(c->ctl, &v, sizeof(v), SCIF_SEND_BLOCK) != sizeof(v)) {
        diag("control send: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int peer_hear(struct peer_ctx *c, int *v) {
    if (!wait_for(c, c->ctl, POLLIN, "control recv")) {
        int r = scif_recv(c->ctl, v, sizeof(*v), 0);

        if (r > 0)
            diag("control recv: poll saw nothing, yet %d bytes were there", r);
        return -1;
    }
    if (scif_recv(c->ctl, v, sizeof(*v), SCIF_RECV_BLOCK) != sizeof(*v)) {
        diag("control recv: %s (the other half is gone)", strerror(errno));
        return -1;
    }
    return 0;
}

int peer_sync(struct peer_ctx *c) {
    int v;

    if (peer_tell(c, 0x5c) || peer_hear(c, &v))
        return -1;
    if (v != 0x5c) {
        diag("control: got %#x, expected the sync %#x", v, 0x5c);
        return -1;
    }
    return 0;
}

/* Open the control connection of behaviour c->k and agree on k. */
static int meet(struct peer_ctx *c) {
    int theirs;

    if (c->server) {
        struct scif_portID from;
        int l = listen_on(c, PEER_CTL_BASE + c->k, 1);

        if (l < 0)
            return KSFT_FAIL;
        if (!wait_for(c, l, POLLIN, "no client half"))
            return KSFT_FAIL;
        if (scif_accept(l, &from, &c->ctl, SCIF_ACCEPT_SYNC) < 0) {
            diag("accept the control connection: %s", strerror(errno));
            return KSFT_FAIL;
        }
        close(l);
        if (c->remote)
            c->other = from.node;
        CHECK(from.node == c->other, "control connection from node %u, expected %d", from.node,
              c->other);
        /* the acceptor speaks first (see the hello below) */
        if (peer_tell(c, c->k))
            return KSFT_FAIL;
    } else {
        c->ctl = peer_open(c);
        CHECK(c->ctl >= 0, "open: %s", strerror(errno));
        if (connect_retry(c, c->ctl, PEER_CTL_BASE + c->k))
            return KSFT_FAIL;
        /* the hello: the server's behaviour number, the halves must agree */
        if (peer_hear(c, &theirs))
            return KSFT_FAIL;
        CHECK(theirs == c->k, "the server runs behaviour %d, this client %d", theirs, c->k);
    }
    return KSFT_PASS;
}

int peer_reconnect(struct peer_ctx *c) {
    if (c->ctl >= 0)
        close(c->ctl);
    c->ctl = -1;
    if (meet(c) != KSFT_PASS) {
        diag("no new control connection");
        return -1;
    }
    return 0;
}

/* One half of behaviour c->k: meet, run, exchange the results. */
static int run_half(struct peer_ctx *c) {
    const struct peer_test *t = &peer_tests[c->k - 1];
    const char *me = c->server ? "server" : "client";
    int r, theirs;

    if (meet(c) != KSFT_PASS)
        return KSFT_FAIL;
    r = c->server ? t->server(c) : t->client(c);
    if (r != KSFT_PASS && r != KSFT_SKIP)
        r = KSFT_FAIL;
    /* a failed half does not wait: its exit closes what the other may block on */
    if (peer_tell(c, r) || r == KSFT_FAIL)
        return KSFT_FAIL;
    if (peer_hear(c, &theirs)) {
        diag("%s half: no result from the other half", me);
        return KSFT_FAIL;
    }
    if (theirs == KSFT_FAIL) {
        diag("%s half passed, the other half failed", me);
        return KSFT_FAIL;
    }
    /* both halves here share the reason's pipe: the other half wrote it */
    if (theirs == KSFT_SKIP && r == KSFT_PASS)
        return c->remote ? test_skip("the other half skipped") : KSFT_SKIP;
    return r;
}

static pid_t fork_half(struct peer_ctx *c) {
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int r = run_half(c);

        fflush(stdout);
        _exit(r);
    }
    return pid;
}

static int half_status(pid_t pid, const char *who) {
    int st;

    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return KSFT_FAIL;
    if (WIFSIGNALED(st)) {
        diag("%s half killed by signal %d", who, WTERMSIG(st));
        return KSFT_FAIL;
    }
    return WEXITSTATUS(st);
}

/* The runner's behaviour function: which one is run_tests_current. */
static int peer_one(void) {
    const struct peer_test *t = &peer_tests[run_tests_current];
    struct peer_ctx c = {.k = (int)run_tests_current + 1, .ctl = -1, .wait_s = peer_wait};
    int rs, rc;
    pid_t srv, cli;
    char dev[32];

    if (peer_role) {
        c.remote = 1;
        c.server = peer_role == 1;
        c.self = self_node();
        c.other = c.server ? -1 : peer_node_id;
        return run_half(&c);
    }
    if (t->flags & PEER_REMOTE_ONLY)
        return test_skip("needs the peer node on another host (--role)");
    snprintf(dev, sizeof(dev), "/dev/scif%d", peer_node_id);
    if (peer_node_id != 0 && access(dev, F_OK))
        return test_skip("peer node %d is not emulated here: run --role server on its host, "
                         "--role client --peer %d here",
                         peer_node_id, peer_node_id);
    c.server = 1;
    c.self = peer_node_id;
    c.other = 0;
    srv = fork_half(&c);
    c.server = 0;
    c.self = 0;
    c.other = peer_node_id;
    cli = fork_half(&c);
    rs = half_status(srv, "server");
    rc = half_status(cli, "client");
    if (rs == KSFT_FAIL || rc == KSFT_FAIL)
        return KSFT_FAIL;
    return rs == KSFT_SKIP || rc == KSFT_SKIP ? KSFT_SKIP : KSFT_PASS;
}

int peer_main(const struct peer_test *tests, size_t n, int argc, char **argv) {
    struct scif_test *table = calloc(n, sizeof(*table));
    const char *env = getenv("SCIF_TEST_PEER_NODE");
    size_t i;
    int a = 1;

    peer_tests = tests;
    peer_node_id = env ? atoi(env) : 1;
    if (getenv("SCIF_TEST_PEER_WAIT") && atoi(getenv("SCIF_TEST_PEER_WAIT")) > 0)
        peer_wait = atoi(getenv("SCIF_TEST_PEER_WAIT"));
    while (a + 1 < argc && (!strcmp(argv[a], "--peer") || !strcmp(argv[a], "--role"))) {
        if (!strcmp(argv[a], "--peer")) {
            peer_node_id = atoi(argv[a + 1]);
        } else if (!strcmp(argv[a + 1], "server")) {
            peer_role = 1;
        } else if (!strcmp(argv[a + 1], "client")) {
            peer_role = 2;
        } else {
            fprintf(stderr, "%s: --role server|client\n", argv[0]);
            return 2;
        }
        a += 2;
    }
    if (!table || n > PEER_MAX_TESTS || peer_node_id < 0 || peer_node_id > 0xfffe) {
        fprintf(stderr, "usage: %s [--peer NODE] [--role server|client] [behaviour...]\n", argv[0]);
        return 2;
    }
    for (i = 0; i < n; i++) {
        table[i].name = tests[i].name;
        table[i].fn = peer_one;
        table[i].timeout = tests[i].timeout;
    }
    argv[a - 1] = argv[0];
    return run_tests(table, n, argc - (a - 1), argv + (a - 1));
}
