// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostile_hello: a user-space rdma_cm client that connects to a scif_rdma
 * listener with a crafted HELLO as the connect private data and reports
 * what the listener did (tools/vm/rdma-hostile.test).
 *
 *   hostile_hello [-t SECONDS] [-f] [-c PORT] [-C PORT] [-R PORT] [-K PORT]
 *                 [-I PORT] [-H PORT] ADDR PORT VARIANT SRC DST
 *
 * VARIANT is one of
 *   none        no private data
 *   short:N     the first N (1..11) bytes of a valid REQ HELLO
 *   good        a valid REQ HELLO from SRC to DST (the caller picks a SRC,
 *               DST or source address the listener must refuse)
 *   magic       wrong magic
 *   version     wrong version
 *   kind        kind ACC instead of REQ
 *   reserved    nonzero reserved field
 *   garbage     pseudo-random bytes of the longest private data rdma_cm
 *               takes for RDMA_PS_TCP over IB/RoCE (56)
 *
 * With -f, once ESTABLISHED it also sends malformed frames on the link
 * (FRAME_COUNT of them, one per defect of kernel/rdma/scif_rdma.c's step
 * 10 and 17), then a valid PING, and prints "frames sent N" first.  With
 * -c PORT it then connects to PORT on the listener's host (CONN_REQ,
 * waits for CONN_ACC) and sends DATA beyond the credit granted (step 14),
 * and prints "credit violation sent 1" (0 if it could not).  With -C PORT
 * it then opens a second connection (id 2) to PORT the same way and, the
 * listener's endpoint having sent nothing, sends a CREDIT whose tail is
 * beyond the bytes sent (step 15), and prints "credit beyond data sent 1"
 * (0 if it could not).  With -R PORT it then opens a third connection
 * (id 3) to PORT and sends RMA_REQs that break each rule of step 20,
 * more of them at once than an honest peer has outstanding, an RMA_REQ
 * one byte short and an RMA_DONE for a request never made (step 21),
 * and prints what was answered (rma_frames() below), inline requests
 * with a payload their op does not carry and RMA_DONEs with a payload
 * for a request never made or longer than any inline read included, and
 * read keys up to the reader's limit and beyond.
 * With -I PORT it opens connection 5 to PORT ("selftests/rdma/scif_nodes
 * reads": the listener's host then reads from us) and answers its two
 * RMA_REQs (an inline read of 8 bytes, a read of 64 KiB by RDMA) with
 * RMA_DONEs whose payload the request does not allow: 7 bytes for the
 * first, 8 for the second, and prints "rma inline answers sent N";
 * before the second answer (so that the read of 64 KiB is a request) it
 * sends a read key (RKEY, protocol version 4) for 4 KiB at offset 1 MiB
 * with an MR it never registered ("rma inline key sent 1"), so the
 * listener's next read there is an RDMA READ that fails; then it holds
 * the link as -K does ("rma inline peer disconnected" or "rma inline
 * held N s").
 * With -K PORT it
 * opens connection 4 to PORT (a window at BADKEY_ROFF: "selftests/rdma/
 * scif_nodes window") and asks to read it into an MR it never
 * registered: the listener's RDMA fails, and prints "rma badkey status
 * N" (-1: no answer, the link ended first).  It then keeps its side of
 * the link (no disconnect, though its own QP failed too) until the
 * listener ends the link, at most BADKEY_HOLD seconds, and prints "rma
 * badkey peer disconnected" or "rma badkey held N s": so only the
 * listener's own failed completion can end the link.
 * With -H PORT it opens connection 6 to PORT ("selftests/rdma/scif_nodes
 * hung") and is a hung target: it takes the RMA_REQs sent to it and
 * never answers them, printing "rma hung request N op O len L" for each
 * (line-buffered, so a script can follow it), while keeping the link
 * alive (PINGs with the credits of the receives it reposted); it stops
 * when the connection is closed (a CLOSE frame) or after HUNG_HOLD
 * seconds, and prints "rma hung requests N closed|held".  On SIGUSR1 it
 * answers every request it holds, late (an inline read of at most 8
 * bytes with status 0 and its data, anything else with ECONNRESET), and
 * prints "rma hung answered N": the listener's killed callers gave up on
 * those answers long before.  With -S as
 * well it posts only HUNG_STALL_RECV receives, fewer than the link's
 * credits, and never posts one again: the listener's next SEND then
 * waits for receiver-not-ready retries without end (RC), and so does
 * every later completion of its send queue, while our PINGs keep the
 * link alive.
 * With -V PORT it opens connection 7 to PORT ("selftests/rdma/scif_nodes
 * unreg") and is a reader that never answers the revocation of its read
 * key (revoke_unanswered() below: "rma revoke ..." lines); with -B as
 * well a slow reader, whose busy answers show progress for 12 s before
 * it answers.
 *
 * Prints one line "hostile_hello VARIANT SRC DST: RESULT" and exits with
 *   0  REJECTED (the line says the reject status)
 *   1  ESTABLISHED (the client then disconnects)
 *   3  no answer within the timeout (default 20 s)
 *   4  any other event (UNREACHABLE, CONNECT_ERROR, ...)
 *   2  bad usage or a local setup error (errno text printed)
 */
#include <errno.h>
#include <signal.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

/* the HELLO of kernel/rdma/scif_rdma.c (docs/transport.md), big-endian */
#define HELLO_MAGIC 0x53434946U
#define HELLO_VERSION 6
#define HELLO_REQ 1
#define HELLO_ACC 2
#define HELLO_LEN 12
/* IB CM REQ private data (92) minus rdma_cm's header (36) */
#define MAX_PRIVATE_DATA 56

static int timeout_ms = 20000;

/* the frame header of kernel/rdma/scif_rdma.c (struct srd_hdr) */
#define FRAME_MAGIC 0x5343464dU
#define FRAME_HDR 28
enum {
    F_PING = 1,
    F_CONN_REQ = 3,
    F_CONN_ACC = 4,
    F_DATA = 6,
    F_CREDIT = 7,
    F_CLOSE = 8,
    F_RMA_REQ = 9,
    F_RMA_DONE = 10,
    F_RKEY, /* keys: reads since protocol version 4, writes since 5 */
    F_REVOKE,
    F_REVOKE_ACK
};
/* struct srd_rma_wire: roff, iova (64 bits), rkey, len (32 bits) */
#define RMA_WIRE 24
#define RMA_MAX (256 * 4096) /* SCIF_RDMA_RMA_MAX with 4 KiB pages */
#define RMA_INLINE 8000      /* SCIF_RDMA_RMA_INLINE */
#define RMA_IREAD 4          /* the inline ops: read, */
#define RMA_IWRITE 5         /* write (the data after the wire) */
#define RMA_MARK 6           /* the peer fences: mark, */
#define RMA_WAIT 7           /* wait (the mark in the offset) */
#define RMA_REQS 16          /* SCIF_RDMA_RMA_REQS */
#define RMA_FLOOD (3 * RMA_REQS)
#define BADKEY_ROFF 0x100000 /* rdma-hostile.test's scif_nodes window */
#define FRAME_COUNT 10
#define BADKEY_HOLD 30    /* s -K keeps the link after its QP failed, most */
#define HUNG_HOLD 240     /* s -H stays a hung target, most */
#define RKEY_TABLE 256    /* read keys a reader keeps per link (SRD_KEYS_MAX) */
#define HUNG_STALL_RECV 4 /* receives -S posts, of the link's credits */

static void put16(uint8_t *p, unsigned int v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

static void hello_fill(uint8_t *h, unsigned int src, unsigned int dst) {
    put32(h, HELLO_MAGIC);
    h[4] = HELLO_VERSION;
    h[5] = HELLO_REQ;
    put16(h + 6, src);
    put16(h + 8, dst);
    put16(h + 10, 0);
}

/* the private data of @variant in @buf; its length, or -1 if unknown */
static int build(const char *variant, unsigned int src, unsigned int dst, uint8_t *buf) {
    char *end;
    long n;

    memset(buf, 0, MAX_PRIVATE_DATA);
    hello_fill(buf, src, dst);
    if (!strcmp(variant, "none"))
        return 0;
    if (!strncmp(variant, "short:", 6)) {
        errno = 0;
        n = strtol(variant + 6, &end, 10);
        if (errno || *end || n < 1 || n >= HELLO_LEN)
            return -1;
        return (int)n;
    }
    if (!strcmp(variant, "good"))
        return HELLO_LEN;
    if (!strcmp(variant, "magic")) {
        put32(buf, HELLO_MAGIC ^ 0x20000000U); /* "sCIF" */
        return HELLO_LEN;
    }
    if (!strcmp(variant, "version")) {
        buf[4] = HELLO_VERSION + 1;
        return HELLO_LEN;
    }
    if (!strcmp(variant, "kind")) {
        buf[5] = HELLO_ACC;
        return HELLO_LEN;
    }
    if (!strcmp(variant, "reserved")) {
        put16(buf + 10, 1);
        return HELLO_LEN;
    }
    if (!strcmp(variant, "garbage")) {
        uint32_t x = 0x9e3779b9U;

        for (int i = 0; i < MAX_PRIVATE_DATA; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            buf[i] = (uint8_t)x;
        }
        return MAX_PRIVATE_DATA;
    }
    return -1;
}

/*
 * The next event on @ch within timeout_ms: its type in *@type and its
 * status in *@status; 0, or -ETIMEDOUT, or -errno.
 */
static int next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type *type, int *status) {
    struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
    struct rdma_cm_event *ev;
    int ret;

    do
        ret = poll(&pfd, 1, timeout_ms);
    while (ret < 0 && errno == EINTR);
    if (ret < 0)
        return -errno;
    if (ret == 0)
        return -ETIMEDOUT;
    if (rdma_get_cm_event(ch, &ev))
        return -errno;
    *type = ev->event;
    *status = ev->status;
    rdma_ack_cm_event(ev);
    return 0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: hostile_hello [-t SECONDS] [-f] [-c PORT] [-C PORT] [-R PORT] "
            "[-K PORT] [-I PORT] [-H PORT [-S]] [-V PORT [-B]] ADDR PORT VARIANT SRC DST\n");
    return 2;
}

static int setup_error(const char *variant, const char *what, int err) {
    printf("hostile_hello %s: ERROR %s: %s\n", variant, what, strerror(err));
    return 2;
}

/* our connection id in the frames we send (1; 2 for -C) */
static uint32_t frame_src = 1;

static void frame_hdr(uint8_t *f, unsigned int type, unsigned int lcredits, uint32_t dst,
                      uint32_t len) {
    memset(f, 0, FRAME_HDR);
    put32(f, FRAME_MAGIC);
    f[4] = (uint8_t)type;
    put16(f + 6, lcredits);
    put32(f + 8, dst);
    put32(f + 12, frame_src);
    put32(f + 16, len);
}

/* Malformed frame @i (0..FRAME_COUNT-1) in @f; its length. */
static int bad_frame(int i, uint8_t *f) {
    frame_hdr(f, F_PING, 0, 0, 0);
    switch (i) {
    case 0: /* shorter than a header */
        return 8;
    case 1: /* wrong magic */
        put32(f, FRAME_MAGIC ^ 1);
        return FRAME_HDR;
    case 2: /* type 0 */
        f[4] = 0;
        return FRAME_HDR;
    case 3: /* unknown type */
        f[4] = 200;
        return FRAME_HDR;
    case 4: /* nonzero reserved byte */
        f[5] = 1;
        return FRAME_HDR;
    case 5: /* length field beyond the frame */
        frame_hdr(f, F_DATA, 0, 1, 100);
        return FRAME_HDR + 4;
    case 6: /* payload on a control frame */
        frame_hdr(f, F_CLOSE, 0, 1, 4);
        return FRAME_HDR + 4;
    case 7: /* more link credits than were used */
        frame_hdr(f, F_PING, 1000, 0, 0);
        return FRAME_HDR;
    case 8: /* DATA for a connection that does not exist */
        frame_hdr(f, F_DATA, 0, 999, 4);
        return FRAME_HDR + 4;
    default: /* CREDIT for a connection that does not exist */
        frame_hdr(f, F_CREDIT, 0, 12345, 0);
        return FRAME_HDR;
    }
}

/* Send @len bytes of @buf (in @mr) on @id's QP and wait for it: 0 or -1. */
static int send_frame(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf, int len) {
    struct ibv_sge sge = {(uintptr_t)buf, (uint32_t)len, mr->lkey};
    struct ibv_send_wr wr, *bad;
    struct ibv_wc wc;
    int i, n;

    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(id->qp, &wr, &bad))
        return -1;
    for (i = 0; i < timeout_ms; i++) {
        n = ibv_poll_cq(id->send_cq, 1, &wc);
        if (n < 0)
            return -1;
        if (n)
            return wc.status == IBV_WC_SUCCESS ? 0 : -1;
        usleep(1000);
    }
    return -1;
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * Wait for a CONN_ACC for our connection frame_src (other frames are skipped):
 * the peer's connection id, or 0.
 */
static uint32_t wait_conn_acc(struct rdma_cm_id *id) {
    static uint8_t rbuf[8192];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge;
    struct ibv_recv_wr wr, *bad;
    struct ibv_wc wc;
    uint32_t rid = 0;
    int frames, i, n;

    if (!mr)
        return 0;
    for (frames = 0; frames < 100 && !rid; frames++) {
        sge.addr = (uintptr_t)rbuf;
        sge.length = sizeof(rbuf);
        sge.lkey = mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_recv(id->qp, &wr, &bad))
            break;
        for (i = 0, n = 0; i < timeout_ms && !n; i++) {
            n = ibv_poll_cq(id->recv_cq, 1, &wc);
            if (!n)
                usleep(1000);
        }
        if (n != 1 || wc.status != IBV_WC_SUCCESS)
            break;
        if (wc.byte_len >= FRAME_HDR && rbuf[4] == F_CONN_ACC && get32(rbuf + 8) == frame_src)
            rid = get32(rbuf + 12);
    }
    ibv_dereg_mr(mr);
    return rid;
}

/*
 * -c PORT: connect to PORT of the listener's node 0 (a 4 KiB ring
 * accepts), then send DATA beyond the credit it granted (@credit 0), or
 * (-C, @credit 1) a CREDIT consuming 1 byte it never sent.  1 if sent.
 */
static int credit_violation(struct rdma_cm_id *id, unsigned int port, int credit) {
    static uint8_t buf[8192];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    uint32_t rid;
    int ret = 0;

    if (!mr)
        return 0;
    frame_hdr(buf, F_CONN_REQ, 0, 0, 0);
    put32(buf + 20, (5U + (unsigned int)credit) << 16 | port); /* from port 5 or 6 */
    put32(buf + 24, 4096);
    if (!send_frame(id, mr, buf, FRAME_HDR)) {
        rid = wait_conn_acc(id);
        if (rid && credit) {
            frame_hdr(buf, F_CREDIT, 0, rid, 0);
            put32(buf + 20, 1); /* the tail: 1 byte consumed of 0 sent */
            ret = !send_frame(id, mr, buf, FRAME_HDR);
        } else if (rid) {
            frame_hdr(buf, F_DATA, 0, rid, 5000);
            memset(buf + FRAME_HDR, 'v', 5000);
            ret = !send_frame(id, mr, buf, FRAME_HDR + 5000);
        }
    }
    ibv_dereg_mr(mr);
    return ret;
}

static void put64(uint8_t *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

/*
 * -R: receives posted all the time (RMA_RECV of them, so that the
 * listener's answers never wait for one), and a PING buffer: the
 * keepalive ends a link on which nothing arrives for 5 s.
 */
#define RMA_RECV 64
static uint8_t rma_rbuf[RMA_RECV][8192];
static uint8_t rma_ping[FRAME_HDR];
static struct ibv_mr *rma_rmr, *rma_pmr;
static unsigned int rma_unreported; /* receives reposted, for lcredits */
static uint32_t rma_wire_len;       /* of the last RMA_REQ wait_frame() took */
static uint8_t rma_wire[RMA_WIRE];  /* the wire of the last frame wait_frame() took */
static uint32_t rma_frame_peer;     /* the source id of the last frame wait_frame() took */
static int hung_stall;              /* -S: -H stalls the peer's send queue */
static int revoke_busy;             /* -B: -V shows progress, then answers */

static int rma_post_recv(struct rdma_cm_id *id, int i) {
    struct ibv_sge sge = {(uintptr_t)rma_rbuf[i], sizeof(rma_rbuf[i]), rma_rmr->lkey};
    struct ibv_recv_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t)i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(id->qp, &wr, &bad))
        return -1;
    rma_unreported++;
    return 0;
}

/*
 * Milliseconds of CLOCK_MONOTONIC.  The loops below keep time by it, not
 * by counting their 1 ms sleeps: on a loaded TCG guest each sleep takes
 * several milliseconds, and a PING every 1000 iterations came too late
 * for the peer's 5 s keepalive.
 */
static long long now_ms(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A PING, with the credits of the receives reposted meanwhile (step 11),
 * if a second passed since *@last: 0, or -1 if it could not be sent.
 */
static int ping_due(struct rdma_cm_id *id, long long *last) {
    if (now_ms() - *last < 1000)
        return 0;
    *last = now_ms();
    frame_hdr(rma_ping, F_PING, rma_unreported, 0, 0);
    rma_unreported = 0;
    return send_frame(id, rma_pmr, rma_ping, FRAME_HDR) ? -1 : 0;
}

/*
 * The next frame of @type (RMA_DONE, DATA, ...) for connection @dst (0:
 * a frame of the link, REVOKE or REVOKE_ACK) within timeout_ms (other
 * frames, e.g. PINGs, are skipped), sending a PING every second meanwhile: the frame's arg (for
 * RMA_DONE the request id) in *@rid and arg2 (the status) in *@status; 0, or -1 if none came.
 */
static int wait_frame_to(struct rdma_cm_id *id, int type, uint32_t dst, uint32_t *rid,
                         uint32_t *status) {
    long long end = now_ms() + timeout_ms, last = now_ms();
    struct ibv_wc wc;
    uint8_t *f;
    int n;

    while (now_ms() < end) {
        n = ibv_poll_cq(id->recv_cq, 1, &wc);
        if (n < 0 || (n && wc.status != IBV_WC_SUCCESS))
            return -1;
        if (!n) {
            if (ping_due(id, &last))
                return -1;
            usleep(1000);
            continue;
        }
        f = rma_rbuf[wc.wr_id];
        if (wc.byte_len >= FRAME_HDR && f[4] == type && get32(f + 8) == dst) {
            *rid = get32(f + 20);
            *status = get32(f + 24);
            rma_wire_len = wc.byte_len >= FRAME_HDR + RMA_WIRE ? get32(f + FRAME_HDR + 20) : 0;
            if (wc.byte_len >= FRAME_HDR + RMA_WIRE)
                memcpy(rma_wire, f + FRAME_HDR, RMA_WIRE);
            rma_frame_peer = get32(f + 12);
            return rma_post_recv(id, (int)wc.wr_id) ? -1 : 0;
        }
        if (rma_post_recv(id, (int)wc.wr_id))
            return -1;
    }
    return -1;
}

/* The same for a frame to our connection frame_src. */
static int wait_frame(struct rdma_cm_id *id, int type, uint32_t *rid, uint32_t *status) {
    return wait_frame_to(id, type, frame_src, rid, status);
}

/* An RMA_REQ (request @rid, @op) to connection @dst in @f; its length. */
static int rma_req(uint8_t *f, uint32_t dst, uint32_t rid, uint32_t op, uint64_t roff,
                   uint32_t len) {
    frame_hdr(f, F_RMA_REQ, 0, dst, RMA_WIRE);
    put32(f + 20, rid);
    put32(f + 24, op);
    put64(f + FRAME_HDR, roff);
    put64(f + FRAME_HDR + 8, 0x10000); /* an MR address and key never registered */
    put32(f + FRAME_HDR + 16, 0x1234);
    put32(f + FRAME_HDR + 20, len);
    return FRAME_HDR + RMA_WIRE;
}

/*
 * The same with @extra bytes of payload after the wire (0x69), and no MR
 * (address and key zero, as an inline request has) if @nomr; its length.
 */
static int rma_req_data(uint8_t *f, uint32_t dst, uint32_t rid, uint32_t op, uint64_t roff,
                        uint32_t len, uint32_t extra, int nomr) {
    int n = rma_req(f, dst, rid, op, roff, len);

    if (nomr) {
        put64(f + FRAME_HDR + 8, 0);
        put32(f + FRAME_HDR + 16, 0);
    }
    put32(f + 16, RMA_WIRE + extra);
    memset(f + n, 0x69, extra);
    return n + (int)extra;
}

/* the requests of -R; dst 0: none, 1: the live connection, 2: not live */
static const struct {
    const char *name;
    uint32_t op, len;
    uint64_t roff;
    int dst;
    uint32_t extra; /* payload bytes after the wire */
    int nomr;       /* MR address and key zero */
} rma_cases[] = {
    {"op", 8, 4096, 0, 0, 0, 0},                   /* not an op of step 20 */
    {"len0", 1, 0, 0, 0, 0, 0},                    /* nothing to move */
    {"toolong", 2, RMA_MAX + 1, 0, 0, 0, 0},       /* beyond SCIF_RDMA_RMA_MAX */
    {"siglen", 3, 4, 0, 0, 0, 0},                  /* a signal is 8 bytes */
    {"sigalign", 3, 8, 4, 0, 0, 0},                /* at an 8-aligned offset */
    {"wrap", 1, 8192, UINT64_MAX - 4095, 0, 0, 0}, /* offset + length wraps */
    {"negative", 1, 4096, 1ULL << 63, 0, 0, 0},    /* beyond any offset */
    {"deadconn", 1, 4096, 0, 2, 0, 0},             /* no such connection */
    {"nowindow", 1, 4096, 0, 1, 0, 0},             /* live, nothing registered */
    {"signowindow", 3, 8, 0, 1, 0, 0},             /* the same, a signal */
    /* inline (ops 4 and 5): the payload exactly what the op carries */
    {"datapayload", 1, 4096, 0, 1, 8, 0},           /* a read by RDMA with data */
    {"ireadpayload", RMA_IREAD, 100, 0, 1, 100, 1}, /* an inline read with data */
    {"iwriteshort", RMA_IWRITE, 100, 0, 1, 50, 1},  /* half the data */
    {"iwritelong", RMA_IWRITE, RMA_INLINE + 1, 0, 1, RMA_INLINE + 1, 1}, /* beyond N */
    {"ireadmr", RMA_IREAD, 100, 0, 1, 0, 0},                             /* an MR on an inline op */
    {"ireadnowindow", RMA_IREAD, 100, 0, 1, 0, 1},     /* live, nothing registered */
    {"iwritenowindow", RMA_IWRITE, 100, 0, 1, 100, 1}, /* the same, a write */
    /* peer fences (ops 6 and 7): length 4, no MR, the offset 0 or a mark */
    {"marklen", RMA_MARK, 8, 0, 1, 0, 1},           /* a mark is 4 bytes */
    {"markoff", RMA_MARK, 4, 8, 1, 0, 1},           /* at offset 0 */
    {"markmr", RMA_MARK, 4, 0, 1, 0, 0},            /* with no MR */
    {"waitmark", RMA_WAIT, 4, 1ULL << 30, 1, 0, 1}, /* a mark has 30 bits */
    {"mark", RMA_MARK, 4, 0, 1, 0, 1},              /* live: the endpoint's mark */
    {"wait", RMA_WAIT, 4, 0, 1, 0, 1},              /* nothing in flight: at once */
};
#define RMA_CASES (int)(sizeof(rma_cases) / sizeof(rma_cases[0]))

/*
 * -R, -K, -I, -H: register the receive and PING buffers, open connection @src
 * from port @from to @port on the listener's host (the CONN_REQ built in
 * @buf, of @mr), print whether it is live and post the receives.  0 with
 * the peer's connection id in *@conn (0 if refused), or -1 if a buffer
 * could not be registered ("rma setup failed").
 */
static int rma_conn_open(struct rdma_cm_id *id, uint32_t src, unsigned int from, unsigned int port,
                         struct ibv_mr *mr, uint8_t *buf, uint32_t *conn) {
    int i;

    frame_src = src;
    *conn = 0;
    rma_rmr = ibv_reg_mr(id->pd, rma_rbuf, sizeof(rma_rbuf), IBV_ACCESS_LOCAL_WRITE);
    rma_pmr = ibv_reg_mr(id->pd, rma_ping, sizeof(rma_ping), 0);
    if (!mr || !rma_rmr || !rma_pmr) {
        printf("rma setup failed\n");
        return -1;
    }
    /*
     * Receives first, the link's initial credits: the peer's PINGs must
     * not wait for receiver-not-ready retries while we wait for the
     * CONN_ACC, and wait_frame() pings meanwhile, so that the peer's
     * keepalive sees us however slowly the guest runs.
     */
    for (i = 0; i < (hung_stall ? HUNG_STALL_RECV : RMA_RECV); i++)
        if (rma_post_recv(id, i))
            break;
    rma_unreported = 0;
    frame_hdr(buf, F_CONN_REQ, 0, 0, 0);
    put32(buf + 20, from << 16 | port);
    put32(buf + 24, 4096);
    if (i == (hung_stall ? HUNG_STALL_RECV : RMA_RECV) && !send_frame(id, mr, buf, FRAME_HDR)) {
        uint32_t arg, arg2;

        if (!wait_frame(id, F_CONN_ACC, &arg, &arg2))
            *conn = rma_frame_peer;
    }
    printf("rma connection %s\n", *conn ? "live" : "refused");
    return 0;
}

/*
 * -R PORT: connect to PORT on the listener's host as connection 3 (from
 * port 7), then send each of rma_cases and print the status its RMA_DONE
 * carried ("rma NAME status N", -1: no answer); then RMA_FLOOD signals
 * at once on the live connection, more than an honest peer has
 * outstanding ("rma flood answered N enxio A ebusy B"); then an RMA_REQ
 * one byte short and an RMA_DONE for a request never made, neither
 * answered, and five malformed key frames ("rma unanswered sent 9");
 * then RKEY_TABLE + 2 valid RKEYs, the second repeating the first's id,
 * which fill the reader's key table and go one beyond ("rma keys sent
 * 258").
 */
static void rma_frames(struct rdma_cm_id *id, unsigned int port, int badkey) {
    static uint8_t buf[RMA_FLOOD][FRAME_HDR + RMA_WIRE], big[8192];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    struct ibv_mr *bmr = ibv_reg_mr(id->pd, big, sizeof(big), 0);
    struct ibv_send_wr wr[RMA_FLOOD], *bad;
    struct ibv_sge sge[RMA_FLOOD];
    uint32_t conn = 0, rid, status, dst;
    int i, n, got, enxio, ebusy, sent;
    struct ibv_wc wc;

    if (!bmr) {
        printf("rma setup failed\n");
        return;
    }
    if (rma_conn_open(id, badkey ? 4 : 3, badkey ? 8 : 7, port, mr, buf[0], &conn))
        return;
    if (badkey) {
        /* a read of the window at WIN_OFF, into an MR we never had */
        n = rma_req(buf[0], conn, 300, 1, BADKEY_ROFF, 4096);
        status = (uint32_t)-1;
        /* the server sends the window's offset once it registered it */
        if (wait_frame(id, F_DATA, &rid, &status))
            printf("rma badkey no offset from the server\n");
        else if (send_frame(id, mr, buf[0], n) || wait_frame(id, F_RMA_DONE, &rid, &status) ||
                 rid != 300)
            status = (uint32_t)-1;
        printf("rma badkey status %d\n", (int)status);
        goto out;
    }
    for (i = 0; i < RMA_CASES; i++) {
        dst = rma_cases[i].dst == 1 ? conn : rma_cases[i].dst == 2 ? 999 : 0;
        n = rma_req_data(big, dst, 100 + (uint32_t)i, rma_cases[i].op, rma_cases[i].roff,
                         rma_cases[i].len, rma_cases[i].extra, rma_cases[i].nomr);
        status = (uint32_t)-1;
        if (send_frame(id, bmr, big, n) || wait_frame(id, F_RMA_DONE, &rid, &status) ||
            rid != 100 + (uint32_t)i)
            status = (uint32_t)-1;
        printf("rma %s status %d\n", rma_cases[i].name, (int)status);
    }
    /* the flood: one chain of sends (each signalled: sq_sig_all) */
    memset(wr, 0, sizeof(wr));
    for (i = 0; i < RMA_FLOOD; i++) {
        sge[i].addr = (uintptr_t)buf[i];
        sge[i].length = (uint32_t)rma_req(buf[i], conn, 1000 + (uint32_t)i, 3, 0, 8);
        sge[i].lkey = mr->lkey;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].opcode = IBV_WR_SEND;
        wr[i].next = i + 1 < RMA_FLOOD ? &wr[i + 1] : NULL;
    }
    got = enxio = ebusy = 0;
    if (!ibv_post_send(id->qp, wr, &bad)) {
        for (i = 0; i < timeout_ms && got < RMA_FLOOD;) {
            n = ibv_poll_cq(id->send_cq, 1, &wc);
            if (n > 0)
                got++;
            else
                usleep(1000), i++;
        }
        got = 0;
        while (got < RMA_FLOOD && !wait_frame(id, F_RMA_DONE, &rid, &status)) {
            got++;
            enxio += status == ENXIO;
            ebusy += status == EBUSY;
        }
    }
    printf("rma flood answered %d enxio %d ebusy %d\n", got, enxio, ebusy);
    /*
     * One byte short of an RMA_REQ, an RMA_DONE for no request of its,
     * the same with the data of an inline read, an RMA_DONE longer than
     * any inline read's.
     */
    sent = 0;
    n = rma_req(buf[0], 0, 200, 1, 0, 4096);
    put32(buf[0] + 16, RMA_WIRE - 1);
    sent += !send_frame(id, mr, buf[0], n - 1);
    frame_hdr(buf[0], F_RMA_DONE, 0, 12345, 0);
    put32(buf[0] + 20, 77777);
    sent += !send_frame(id, mr, buf[0], FRAME_HDR);
    frame_hdr(big, F_RMA_DONE, 0, 12345, 100);
    put32(big + 20, 77778);
    sent += !send_frame(id, bmr, big, FRAME_HDR + 100);
    frame_hdr(big, F_RMA_DONE, 0, 12345, RMA_INLINE + 1);
    put32(big + 20, 77779);
    sent += !send_frame(id, bmr, big, FRAME_HDR + RMA_INLINE + 1);
    /*
     * Keys (versions 4, 5): an RKEY one byte short, one of id 0 on the
     * live connection, one giving access 3 (0 reads, 1 writes, 2 both),
     * a REVOKE naming a connection, a REVOKE_ACK for no revocation.
     */
    n = rma_req(big, conn, 0, 0, 0, 4096);
    frame_hdr(big, F_RKEY, 0, conn, RMA_WIRE - 1);
    put32(big + 20, 5);
    sent += !send_frame(id, bmr, big, n - 1);
    frame_hdr(big, F_RKEY, 0, conn, RMA_WIRE);
    put32(big + 20, 0);
    sent += !send_frame(id, bmr, big, n);
    frame_hdr(big, F_RKEY, 0, conn, RMA_WIRE);
    put32(big + 20, 8);
    put32(big + 24, 3);
    sent += !send_frame(id, bmr, big, n);
    frame_hdr(buf[0], F_REVOKE, 0, conn, 0);
    put32(buf[0] + 20, 6);
    sent += !send_frame(id, mr, buf[0], FRAME_HDR);
    frame_hdr(buf[0], F_REVOKE_ACK, 0, 0, 0);
    put32(buf[0] + 12, 0); /* link-level: no connection ids */
    put32(buf[0] + 20, 7);
    sent += !send_frame(id, mr, buf[0], FRAME_HDR);
    printf("rma unanswered sent %d\n", sent);
    /*
     * The reader's key table (step 23): a valid RKEY, the same id again,
     * then new ids up to SRD_KEYS_MAX kept and one more: the repeat and
     * the one beyond are counted, the rest kept until the link ends.
     */
    sent = 0;
    for (i = 0; i < RKEY_TABLE + 2; i++) {
        n = rma_req(big, conn, 0, 0, (uint64_t)i << 20, 4096);
        frame_hdr(big, F_RKEY, 0, conn, RMA_WIRE);
        put32(big + 20, 1000 + (uint32_t)(i ? i - 1 : 0));
        sent += !send_frame(id, bmr, big, n);
    }
    /* a PING, so that every frame was taken before we go */
    frame_hdr(buf[0], F_PING, 0, 0, 0);
    if (send_frame(id, mr, buf[0], FRAME_HDR))
        sent = -1;
    printf("rma keys sent %d\n", sent);
out:
    ibv_dereg_mr(rma_pmr);
    ibv_dereg_mr(rma_rmr);
    ibv_dereg_mr(bmr);
    ibv_dereg_mr(mr);
}

/*
 * -I PORT: connect to PORT on the listener's host as connection 5 (from
 * port 9), then answer the first two RMA_REQs it sends us with an
 * RMA_DONE of status 0 whose payload the request does not allow: an
 * inline read's one byte short, 8 bytes for a read by RDMA.  Prints the
 * requests ("rma inline request op O len L") and "rma inline answers
 * sent N".
 */
static void inline_answers(struct rdma_cm_id *id, unsigned int port) {
    static uint8_t buf[8192];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    uint32_t conn = 0, rid, op, plen;
    int i, n, sent = 0;

    if (rma_conn_open(id, 5, 9, port, mr, buf, &conn))
        return;
    for (i = 0; conn && i < 2; i++) {
        if (wait_frame(id, F_RMA_REQ, &rid, &op))
            break;
        printf("rma inline request op %u len %u\n", op, rma_wire_len);
        if (i == 1) {
            /* a read key (version 4) for 4 KiB at 1 MiB, never registered */
            n = rma_req(buf, conn, 0, 0, 1 << 20, 4096);
            frame_hdr(buf, F_RKEY, (unsigned int)rma_unreported, conn, RMA_WIRE);
            rma_unreported = 0;
            put32(buf + 20, 9);
            printf("rma inline key sent %d\n", !send_frame(id, mr, buf, n));
        }
        plen = op == RMA_IREAD && rma_wire_len ? rma_wire_len - 1 : 8;
        if (plen > RMA_INLINE)
            break;
        frame_hdr(buf, F_RMA_DONE, (unsigned int)rma_unreported, conn, plen);
        rma_unreported = 0;
        put32(buf + 20, rid);
        put32(buf + 24, 0);
        memset(buf + FRAME_HDR, 0x69, plen);
        if (send_frame(id, mr, buf, FRAME_HDR + (int)plen))
            break;
        sent++;
    }
    printf("rma inline answers sent %d\n", sent);
    ibv_dereg_mr(rma_pmr);
    ibv_dereg_mr(rma_rmr);
    ibv_dereg_mr(mr);
}

static volatile sig_atomic_t hung_answer; /* -H: SIGUSR1 came */

static void on_usr1(int sig) {
    (void)sig;
    hung_answer = 1;
}

/* A request -H holds: its id, op and length. */
struct held {
    uint32_t rid, op, len;
};

/* Answer the @n requests in @h late (see -H); the number answered. */
static int hung_answer_all(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf, uint32_t conn,
                           const struct held *h, int n) {
    int i, sent = 0;

    for (i = 0; i < n; i++) {
        uint32_t plen = h[i].op == RMA_IREAD && h[i].len <= 8 ? h[i].len : 0;

        frame_hdr(buf, F_RMA_DONE, (unsigned int)rma_unreported, conn, plen);
        rma_unreported = 0;
        put32(buf + 20, h[i].rid);
        put32(buf + 24, h[i].op == RMA_IREAD && h[i].len <= 8 ? 0 : ECONNRESET);
        memset(buf + FRAME_HDR, 0x48, plen);
        if (send_frame(id, mr, buf, FRAME_HDR + (int)plen))
            break;
        sent++;
    }
    return sent;
}

/*
 * -H PORT: connect to PORT on the listener's host as connection 6 (from
 * port 10) and never answer the RMA_REQs sent to it (a hung target),
 * keeping the link alive with a PING every second; until a CLOSE for the
 * connection or HUNG_HOLD seconds.  Prints each request and the count.
 * SIGUSR1: answer those held (late).
 */
static void hung_target(struct rdma_cm_id *id, unsigned int port) {
    static uint8_t buf[FRAME_HDR + 8];
    static struct held held[2 * RMA_REQS];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    uint32_t conn = 0;
    int n, reqs = 0, nheld = 0, closed = 0;
    long long end, last;
    struct ibv_wc wc;
    uint8_t *f;

    signal(SIGUSR1, on_usr1);
    if (rma_conn_open(id, 6, 10, port, mr, buf, &conn))
        return;
    end = now_ms() + HUNG_HOLD * 1000LL;
    last = now_ms();
    while (conn && !closed && now_ms() < end) {
        if (hung_answer) {
            hung_answer = 0;
            printf("rma hung answered %d\n", hung_answer_all(id, mr, buf, conn, held, nheld));
            nheld = 0;
        }
        n = ibv_poll_cq(id->recv_cq, 1, &wc);
        if (n < 0 || (n && wc.status != IBV_WC_SUCCESS)) {
            printf("rma hung link failed\n");
            break;
        }
        if (!n) {
            if (ping_due(id, &last)) {
                printf("rma hung link failed\n");
                break;
            }
            usleep(1000);
            continue;
        }
        f = rma_rbuf[wc.wr_id];
        if (wc.byte_len >= FRAME_HDR && get32(f + 8) == frame_src) {
            if (f[4] == F_RMA_REQ) {
                struct held r = {get32(f + 20), get32(f + 24),
                                 wc.byte_len >= FRAME_HDR + RMA_WIRE ? get32(f + FRAME_HDR + 20)
                                                                     : 0};

                printf("rma hung request %d op %u len %u\n", ++reqs, r.op, r.len);
                if (nheld < 2 * RMA_REQS)
                    held[nheld++] = r;
            }
            closed = f[4] == F_CLOSE;
        }
        /* -S: no receive is posted again, so the peer's next SEND waits */
        if (!hung_stall && rma_post_recv(id, (int)wc.wr_id))
            break;
    }
    printf("rma hung requests %d %s\n", reqs, closed ? "closed" : "held");
    ibv_dereg_mr(rma_pmr);
    ibv_dereg_mr(rma_rmr);
    ibv_dereg_mr(mr);
}

static uint64_t get64(const uint8_t *p) {
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* A REVOKE or REVOKE_ACK (@type) of key @kid in @f (no ids); its length. */
static int revoke_frame(uint8_t *f, int type, uint32_t kid) {
    frame_hdr(f, (unsigned int)type, rma_unreported, 0, 0);
    rma_unreported = 0;
    put32(f + 12, 0); /* a frame of the link: no source id either */
    put32(f + 20, kid);
    return FRAME_HDR;
}

/*
 * One RDMA READ (or, with @write, WRITE) of 8 bytes at @iova with @rkey
 * into (from) @dmr (its first 8 bytes): the status of its work
 * completion, or -1 if none came within timeout_ms.
 */
static int key_rdma(struct rdma_cm_id *id, struct ibv_mr *dmr, uint64_t iova, uint32_t rkey,
                    int write) {
    struct ibv_sge sge = {(uintptr_t)dmr->addr, 8, dmr->lkey};
    struct ibv_send_wr wr, *bad;
    long long end = now_ms() + timeout_ms;
    struct ibv_wc wc;
    int n;

    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = iova;
    wr.wr.rdma.rkey = rkey;
    if (ibv_post_send(id->qp, &wr, &bad))
        return -1;
    while (now_ms() < end) {
        n = ibv_poll_cq(id->send_cq, 1, &wc);
        if (n < 0)
            return -1;
        if (n)
            return (int)wc.status;
        usleep(1000);
    }
    return -1;
}

/*
 * -V PORT: connect to PORT on the listener's host as connection 7 (from
 * port 11; "selftests/rdma/scif_nodes unreg", a window at BADKEY_ROFF)
 * and be a reader that never answers a revocation (steps 23-24).  An
 * inline read of 8 bytes there brings a key before its answer
 * ("rma revoke key 1") that gives reads and writes, the window being
 * writable ("rma revoke key access 2", version 5), with which an RDMA READ
 * of 8 bytes reads the window's bytes ("rma revoke key read status 0
 * data ok"), and an RDMA WRITE of 8 bytes changes them, as an RDMA READ
 * then shows ("rma revoke key write status 0 data ok"); a REVOKE of a
 * key id the listener's host never
 * had is answered all the same ("rma revoke unknown answered 1"); a byte
 * on the connection makes the listener unregister the window, whose
 * REVOKE of our key we take and never answer ("rma revoke asked 1");
 * 5 s later the listener's host ends the link, so the byte its listener
 * sends once scif_unregister() returned never comes ("rma revoke
 * unregistered 0"; were it to come, 1, and an inline read there then
 * "rma revoke read status N"); and last an RDMA READ with the revoked key
 * fails ("rma revoke stale read status N", the work completion's status,
 * on a QP whose link is gone; -1 if none came or the post failed).
 * With -B it is a slow reader instead: it takes the REVOKE, sends a busy
 * REVOKE_ACK (arg2 1, "my reads with it are still in flight") every
 * REVOKE_BUSY_EVERY ms for REVOKE_BUSY_FOR ms, longer than the owner's
 * 5 s wait, then the REVOKE_ACK itself ("rma revoke busy sent N", "rma
 * revoke early 0": the listener's byte did not come before that answer);
 * the link stays up, so the listener's byte comes ("rma revoke
 * unregistered 1") and an inline read of the window answers ENXIO ("rma
 * revoke read status 6"); no stale read (it would end the link).
 */
#define REVOKE_BUSY_EVERY 2000
#define REVOKE_BUSY_FOR 12000

/*
 * -B: busy answers to the REVOKE of @kid for REVOKE_BUSY_FOR ms, then
 * the answer; 0, or -1 if a frame could not be sent.  *@early: the
 * listener's byte came before the answer.
 */
static int revoke_slowly(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf, uint32_t kid,
                         int *early) {
    int saved = timeout_ms, i, n, sent = 0;
    uint32_t rid, status;

    *early = 0;
    timeout_ms = REVOKE_BUSY_EVERY;
    for (i = 0; i < REVOKE_BUSY_FOR / REVOKE_BUSY_EVERY; i++) {
        /* PINGs meanwhile; the byte must not come yet */
        if (!wait_frame(id, F_DATA, &rid, &status))
            *early = 1;
        n = revoke_frame(buf, F_REVOKE_ACK, kid);
        put32(buf + 24, 1); /* busy */
        if (send_frame(id, mr, buf, n))
            break;
        sent++;
    }
    timeout_ms = saved;
    printf("rma revoke busy sent %d\n", sent);
    n = revoke_frame(buf, F_REVOKE_ACK, kid);
    return sent == i && !send_frame(id, mr, buf, n) ? 0 : -1;
}

static void revoke_unanswered(struct rdma_cm_id *id, unsigned int port) {
    static uint8_t buf[FRAME_HDR + RMA_WIRE], dst[8];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    struct ibv_mr *dmr = ibv_reg_mr(id->pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
    uint32_t conn = 0, rid, status, kid = 0, rkey = 0, unknown = 0x7777;
    uint64_t iova = 0;
    int n;

    if (!dmr) {
        printf("rma setup failed\n");
        return;
    }
    if (rma_conn_open(id, 7, 11, port, mr, buf, &conn))
        return;
    if (!conn)
        goto out;
    if (wait_frame(id, F_DATA, &rid, &status)) {
        printf("rma revoke no offset from the server\n");
        goto out;
    }
    /* the RKEY comes before the answer, which wait_frame() then finds */
    n = rma_req_data(buf, conn, 1, RMA_IREAD, BADKEY_ROFF, 8, 0, 1);
    if (send_frame(id, mr, buf, n) || wait_frame(id, F_RKEY, &kid, &status))
        kid = 0;
    iova = get64(rma_wire + 8);
    rkey = get32(rma_wire + 16);
    printf("rma revoke key %d\n", kid != 0);
    printf("rma revoke key access %u\n", status);
    if (!kid || wait_frame(id, F_RMA_DONE, &rid, &status) || status)
        goto out;
    /* the key works while the window is there: its bytes are 0x5a */
    memset(dst, 0, sizeof(dst));
    n = key_rdma(id, dmr, iova, rkey, 0);
    printf("rma revoke key read status %d data %s\n", n,
           dst[0] == 0x5a && dst[7] == 0x5a ? "ok" : "bad");
    memset(dst, 0xa5, sizeof(dst));
    n = key_rdma(id, dmr, iova, rkey, 1);
    memset(dst, 0, sizeof(dst));
    if (!n)
        n = key_rdma(id, dmr, iova, rkey, 0);
    printf("rma revoke key write status %d data %s\n", n,
           dst[0] == 0xa5 && dst[7] == 0xa5 ? "ok" : "bad");
    n = revoke_frame(buf, F_REVOKE, unknown);
    printf("rma revoke unknown answered %d\n",
           !send_frame(id, mr, buf, n) && !wait_frame_to(id, F_REVOKE_ACK, 0, &rid, &status) &&
               rid == unknown);
    frame_hdr(buf, F_DATA, rma_unreported, conn, 1);
    rma_unreported = 0;
    buf[FRAME_HDR] = 1;
    if (send_frame(id, mr, buf, FRAME_HDR + 1))
        goto out;
    printf("rma revoke asked %d\n", !wait_frame_to(id, F_REVOKE, 0, &rid, &status) && rid == kid);
    fflush(stdout);
    if (revoke_busy) {
        int early;

        if (revoke_slowly(id, mr, buf, kid, &early))
            goto out;
        printf("rma revoke early %d\n", early);
    }
    /* unanswered for 5 s, the listener's host ends the link: no byte */
    n = wait_frame(id, F_DATA, &rid, &status);
    printf("rma revoke unregistered %d\n", !n);
    if (!n) {
        n = rma_req_data(buf, conn, 2, RMA_IREAD, BADKEY_ROFF, 8, 0, 1);
        status = (uint32_t)-1;
        if (send_frame(id, mr, buf, n) || wait_frame(id, F_RMA_DONE, &rid, &status))
            status = (uint32_t)-1;
        printf("rma revoke read status %d\n", (int)status);
    }
    if (!revoke_busy)
        printf("rma revoke stale read status %d\n", key_rdma(id, dmr, iova, rkey, 0));
out:
    ibv_dereg_mr(dmr);
    ibv_dereg_mr(rma_pmr);
    ibv_dereg_mr(rma_rmr);
    ibv_dereg_mr(mr);
}

/* -f: the malformed frames, then a valid PING; frames sent, or -1. */
static int send_frames(struct rdma_cm_id *id) {
    static uint8_t buf[256];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
    int i, sent = 0;

    if (!mr)
        return -1;
    for (i = 0; i < FRAME_COUNT; i++) {
        if (send_frame(id, mr, buf, bad_frame(i, buf)))
            break;
        sent++;
    }
    frame_hdr(buf, F_PING, 0, 0, 0);
    if (sent == FRAME_COUNT && send_frame(id, mr, buf, FRAME_HDR))
        sent = -1;
    ibv_dereg_mr(mr);
    return sent;
}

int main(int argc, char **argv) {
    uint8_t data[MAX_PRIVATE_DATA];
    struct rdma_conn_param param;
    struct rdma_event_channel *ch;
    struct ibv_qp_init_attr attr;
    enum rdma_cm_event_type type;
    struct addrinfo hints, *ai;
    struct rdma_cm_id *id;
    const char *variant;
    char tag[64];
    unsigned long src, dst;
    char *end;
    int opt, len, status, ret, frames = 0, cport = 0, crport = 0, rport = 0, kport = 0, iport = 0;
    int hport = 0, vport = 0;

    while ((opt = getopt(argc, argv, "fSBc:C:R:K:I:H:V:t:")) != -1) {
        if (opt == 'f') {
            frames = 1;
            continue;
        }
        if (opt == 'B') {
            revoke_busy = 1;
            continue;
        }
        if (opt == 'S') {
            hung_stall = 1;
            continue;
        }
        if (opt == 'c') {
            cport = atoi(optarg);
            if (cport < 1 || cport > 65535)
                return usage();
            continue;
        }
        if (opt == 'K') {
            kport = atoi(optarg);
            if (kport < 1 || kport > 65535)
                return usage();
            continue;
        }
        if (opt == 'V') {
            vport = atoi(optarg);
            if (vport < 1 || vport > 65535)
                return usage();
            continue;
        }
        if (opt == 'H') {
            hport = atoi(optarg);
            if (hport < 1 || hport > 65535)
                return usage();
            setvbuf(stdout, NULL, _IOLBF, 0);
            continue;
        }
        if (opt == 'I') {
            iport = atoi(optarg);
            if (iport < 1 || iport > 65535)
                return usage();
            continue;
        }
        if (opt == 'R') {
            rport = atoi(optarg);
            if (rport < 1 || rport > 65535)
                return usage();
            continue;
        }
        if (opt == 'C') {
            crport = atoi(optarg);
            if (crport < 1 || crport > 65535)
                return usage();
            continue;
        }
        if (opt != 't')
            return usage();
        timeout_ms = atoi(optarg) * 1000;
        if (timeout_ms < 1000 || timeout_ms > 300000)
            return usage();
    }
    if (argc - optind != 5)
        return usage();
    variant = argv[optind + 2];
    src = strtoul(argv[optind + 3], &end, 10);
    if (*end || src > 0xffff)
        return usage();
    dst = strtoul(argv[optind + 4], &end, 10);
    if (*end || dst > 0xffff)
        return usage();
    len = build(variant, src, dst, data);
    if (len < 0 || strlen(variant) > 32)
        return usage();
    snprintf(tag, sizeof(tag), "%s %lu %lu", variant, src, dst);

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(argv[optind], argv[optind + 1], &hints, &ai))
        return usage();

    ch = rdma_create_event_channel();
    if (!ch)
        return setup_error(tag, "rdma_create_event_channel", errno);
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
        return setup_error(tag, "rdma_create_id", errno);
    if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000))
        return setup_error(tag, "rdma_resolve_addr", errno);
    freeaddrinfo(ai);
    ret = next_event(ch, &type, &status);
    if (ret)
        return setup_error(tag, "address", -ret);
    if (type != RDMA_CM_EVENT_ADDR_RESOLVED)
        return setup_error(tag, rdma_event_str(type), EHOSTUNREACH);
    if (rdma_resolve_route(id, 2000))
        return setup_error(tag, "rdma_resolve_route", errno);
    ret = next_event(ch, &type, &status);
    if (ret)
        return setup_error(tag, "route", -ret);
    if (type != RDMA_CM_EVENT_ROUTE_RESOLVED)
        return setup_error(tag, rdma_event_str(type), EHOSTUNREACH);

    /* a reliable connected QP on librdmacm's default PD and CQs */
    memset(&attr, 0, sizeof(attr));
    attr.cap.max_send_wr = RMA_FLOOD;
    attr.cap.max_recv_wr = RMA_RECV;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 1;
    if (rdma_create_qp(id, NULL, &attr))
        return setup_error(tag, "rdma_create_qp", errno);

    memset(&param, 0, sizeof(param));
    param.private_data = len ? data : NULL;
    param.private_data_len = (uint8_t)len;
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    /* -V reads by RDMA READ, -I's peer reads from us */
    param.initiator_depth = vport ? 1 : 0;
    param.responder_resources = iport ? 1 : 0;
    if (rdma_connect(id, &param))
        return setup_error(tag, "rdma_connect", errno);
    ret = next_event(ch, &type, &status);
    if (ret == -ETIMEDOUT) {
        printf("hostile_hello %s: TIMEOUT\n", tag);
        ret = 3;
    } else if (ret) {
        return setup_error(tag, "connect", -ret);
    } else if (type == RDMA_CM_EVENT_REJECTED) {
        printf("hostile_hello %s: REJECTED status %d\n", tag, status);
        ret = 0;
    } else if (type == RDMA_CM_EVENT_ESTABLISHED) {
        if (frames)
            printf("frames sent %d\n", send_frames(id));
        if (cport)
            printf("credit violation sent %d\n", credit_violation(id, (unsigned int)cport, 0));
        if (crport) {
            frame_src = 2;
            printf("credit beyond data sent %d\n", credit_violation(id, (unsigned int)crport, 1));
        }
        if (rport)
            rma_frames(id, (unsigned int)rport, 0);
        if (kport)
            rma_frames(id, (unsigned int)kport, 1);
        if (iport)
            inline_answers(id, (unsigned int)iport);
        if (hport)
            hung_target(id, (unsigned int)hport);
        if (vport)
            revoke_unanswered(id, (unsigned int)vport);
        printf("hostile_hello %s: ESTABLISHED\n", tag);
        if (kport || iport) {
            /*
             * Our QP failed too (the RDMA's error ends both ends of an
             * RC connection): keep the link until the listener ends it
             * for its own failed completion, so that our disconnect
             * cannot be what ended it (-I: its read with our key).
             */
            timeout_ms = BADKEY_HOLD * 1000;
            ret = next_event(ch, &type, &status);
            if (!ret && type == RDMA_CM_EVENT_DISCONNECTED) {
                printf("rma %s peer disconnected\n", kport ? "badkey" : "inline");
            } else {
                printf("rma %s held %d s\n", kport ? "badkey" : "inline", BADKEY_HOLD);
                kport = iport = 0;
            }
        }
        if (!kport && !iport) {
            rdma_disconnect(id);
            /* DISCONNECTED, or nothing within the timeout */
            next_event(ch, &type, &status);
        }
        ret = 1;
    } else {
        printf("hostile_hello %s: %s status %d\n", tag, rdma_event_str(type), status);
        ret = 4;
    }
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return ret;
}
