/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The two-role peer fixture (peer.c, in libscif_selftest.la): behaviours
 * between this node and a "peer node" that may be an emulated node of this
 * kernel or a node on another host.
 *
 * A behaviour is a server half and a client half.  A program is a table of
 * them run by peer_main(), which takes, before the usual name filters:
 *
 *   --peer N        the peer node (else $SCIF_TEST_PEER_NODE, else 1);
 *   --role server   run only the server halves (the peer's host runs
 *                   --role client --peer THIS_NODE);
 *   --role client   run only the client halves, against the server halves
 *                   running on node N's host.
 *
 * Without --role the peer must be emulated here (/dev/scifN, or N = 0 for
 * loopback): each behaviour forks the server half acting as node N and the
 * client half acting as node 0, as connect_pair() does.  With --role, the
 * same binary runs on both hosts, each printing one TAP line per behaviour.
 * Behaviours with PEER_REMOTE_ONLY are skipped against an emulated peer.
 *
 * Per behaviour k (1-based table index) the halves first meet on a control
 * connection (port PEER_CTL_BASE + k of the server's node; the client
 * retries while it is refused or the node is down), the server tells the
 * client its behaviour number k (they must agree), use it to synchronise
 * (peer_sync, peer_tell, peer_hear) and, when both returned, exchange their
 * results: a half that passed fails when the other half failed, crashed or
 * gave no answer.  Every wait for the other half is bounded by
 * $SCIF_TEST_PEER_WAIT seconds (120 by default), so a missing half is a
 * FAIL, never a hang.  Data connections use peer_port(c, i), i < 8.
 */
#ifndef OPENSCIF_SELFTESTS_LIB_PEER_H
#define OPENSCIF_SELFTESTS_LIB_PEER_H

#include "scif_test.h"

#define PEER_CTL_BASE 2000
#define PEER_DATA_BASE 2200
/* behaviours a table may have: control ports stay below PEER_DATA_BASE */
#define PEER_MAX_TESTS (PEER_DATA_BASE - PEER_CTL_BASE - 1)

/* What a half knows. */
struct peer_ctx {
    int k;      /* behaviour number, 1-based */
    int server; /* 1 in the server half */
    int self;   /* node this half acts as */
    int other;  /* node of the other half */
    int remote; /* the other half runs on another host */
    int ctl;    /* the control connection */
    int wait_s; /* bound of every wait for the other half, seconds */
};

#define PEER_REMOTE_ONLY 1u

struct peer_test {
    const char *name;
    int (*server)(struct peer_ctx *c);
    int (*client)(struct peer_ctx *c);
    unsigned int timeout; /* seconds, 0: TEST_DEFAULT_TIMEOUT */
    unsigned int flags;   /* PEER_REMOTE_ONLY */
};

/* Parse the options, run the table (see above); returns the exit status. */
int peer_main(const struct peer_test *tests, size_t n, int argc, char **argv);

/* An endpoint acting as this half's node, or -1. */
int peer_open(const struct peer_ctx *c);

/* Data port @i (0..7) of behaviour c->k. */
uint16_t peer_port(const struct peer_ctx *c, int i);

/* A listener on peer_port(c, @i) with @backlog, or -1 with a diagnostic. */
int peer_listen(const struct peer_ctx *c, int i, int backlog);

/* Accept on @lst within the bound: the endpoint, or -1 with a diagnostic. */
int peer_accept(const struct peer_ctx *c, int lst, struct scif_portID *peer);

/* A new endpoint connected to the other node's peer_port(c, @i), or -1. */
int peer_conn(const struct peer_ctx *c, int i);

/* Barrier with the other half: 0, or -1 with a diagnostic. */
int peer_sync(struct peer_ctx *c);

/* Send an int to / receive one from the other half: 0, or -1. */
int peer_tell(struct peer_ctx *c, int v);
int peer_hear(struct peer_ctx *c, int *v);

/*
 * For behaviours that lose the node (PEER_REMOTE_ONLY): a new control
 * connection once it is back, met as at the start (the server listens on
 * its control port again, the client retries while refused or the node
 * is down).  Both halves call it before they return.  0, or -1.
 */
int peer_reconnect(struct peer_ctx *c);

#endif /* OPENSCIF_SELFTESTS_LIB_PEER_H */
