// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_test: a small DAT consumer, written against dat2/udat.h and linked
 * with -ldat, that moves data with RDMA write and RDMA read over SCIF.
 *
 * A server (a child process, on emulated node 1 when it exists, else node
 * 0) registers a buffer and sends its address and rmr_context to the
 * client in a message; the client RDMA-writes a pattern there, RDMA-reads
 * the server's second half back, and tells the server to check.  Sizes:
 * 1 byte to 1 MiB, unaligned offsets.  Then DTOs posted back to back, as
 * a pipeline: reads that the provider's workers run side by side, and
 * writes followed at once by a read of what they wrote (libdaplscif(7):
 * completions in post order, a read after the writes before it).
 */
#include <dat2/udat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksft.h"
#include "util.h"
#include "dapl_env.h"

#define IA_NAME "ofa-v2-scif"
#define QUAL 7400
#define SZ (4u << 20)
#define TO 10000000u

struct msg {
    uint64_t va;
    uint32_t rctx;
    uint32_t len;
};

struct end {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async, evd, cr;
    DAT_PZ_HANDLE pz;
    DAT_EP_HANDLE ep;
    unsigned char *buf;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
};

static int open_end(struct end *e) {
    DAT_REGION_DESCRIPTION d;
    DAT_VLEN rl;
    DAT_VADDR ra;

    e->async = DAT_HANDLE_NULL;
    if (dat_ia_open(IA_NAME, 8, &e->async, &e->ia) || dat_pz_create(e->ia, &e->pz) ||
        dat_evd_create(e->ia, 64, NULL, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG, &e->evd) ||
        dat_evd_create(e->ia, 8, NULL, DAT_EVD_CR_FLAG, &e->cr))
        return 0;
    e->buf = aligned_alloc(4096, SZ);
    if (!e->buf)
        return 0;
    memset(e->buf, 0, SZ);
    d.for_va = e->buf;
    if (dat_lmr_create(e->ia, DAT_MEM_TYPE_VIRTUAL, d, SZ, e->pz, DAT_MEM_PRIV_ALL_FLAG,
                       DAT_VA_TYPE_VA, &e->lmr, &e->lctx, &e->rctx, &rl, &ra))
        return 0;
    return dat_ep_create(e->ia, e->pz, e->evd, e->evd, e->evd, NULL, &e->ep) == DAT_SUCCESS;
}

/* The next event, which must be @num; if not, stderr says what came. */
static int wait_for(struct end *e, DAT_EVENT_NUMBER num, DAT_EVENT *ev) {
    DAT_COUNT n;
    DAT_RETURN r = dat_evd_wait(e->evd, TO, 1, ev, &n);

    if (r == DAT_SUCCESS && ev->event_number == num)
        return 1;
    fprintf(stderr, "pid %d: waiting for event %#x: %s%#x\n", (int)getpid(), (unsigned)num,
            r == DAT_SUCCESS ? "got event " : "dat_evd_wait returned ",
            r == DAT_SUCCESS ? (unsigned)ev->event_number : (unsigned)r);
    return 0;
}

static int dto(struct end *e, DAT_DTOS op, uint64_t cookie, uint32_t len) {
    DAT_EVENT ev;
    DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

    return wait_for(e, DAT_DTO_COMPLETION_EVENT, &ev) && d->status == DAT_DTO_SUCCESS &&
           d->operation == op && d->user_cookie.as_64 == cookie && d->transfered_length == len;
}

/*
 * A send and a receive on one EVD: their completions come from different
 * streams, so either may be queued first.
 */
static int send_and_recv(struct end *e, uint32_t len) {
    int sends = 0, recvs = 0;

    for (int i = 0; i < 2; i++) {
        DAT_EVENT ev;
        DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

        if (!wait_for(e, DAT_DTO_COMPLETION_EVENT, &ev) || d->status != DAT_DTO_SUCCESS ||
            d->transfered_length != len)
            return 0;
        sends += d->operation == DAT_DTO_SEND;
        recvs += d->operation == DAT_DTO_RECEIVE;
    }
    return sends == 1 && recvs == 1;
}

static DAT_LMR_TRIPLET lt(struct end *e, size_t off, uint32_t len) {
    DAT_LMR_TRIPLET t = {(DAT_VADDR)(uintptr_t)(e->buf + off), len, e->lctx};

    return t;
}

static const uint32_t sizes[] = {1, 63, 4096, 5000, 65536, 1u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* The pipeline: NREADS reads of PLEN bytes, NWRITES writes of WLEN. */
#define NREADS 16
#define PLEN 65541u
#define NWRITES 8
#define WLEN 65521u
#define WAT (3u << 19) /* in the server's first half, past the sizes' writes */

/* The next n completions: cookies first, first + 1, ... of op (or a read last). */
static int in_order(struct end *e, uint64_t first, int n, DAT_DTOS op, uint32_t len) {
    for (int i = 0; i < n; i++)
        if (!dto(e, op, first + (uint64_t)i, len))
            return 0;
    return 1;
}

/* NREADS reads of the server's second half posted back to back: data, order. */
static int pipelined_reads(struct end *c, const struct msg *m) {
    memset(c->buf + SZ / 2, 0, SZ / 2);
    for (int i = 0; i < NREADS; i++) {
        DAT_LMR_TRIPLET l = lt(c, SZ / 2 + (size_t)i * PLEN, PLEN);
        DAT_RMR_TRIPLET rt = {m->va + SZ / 2 + (uint64_t)i * PLEN, PLEN, m->rctx};
        DAT_DTO_COOKIE ck = {.as_64 = 300 + (uint64_t)i};
        if (dat_ep_post_rdma_read(c->ep, 1, &l, ck, &rt, 0) != DAT_SUCCESS)
            return 0;
    }
    if (!in_order(c, 300, NREADS, DAT_DTO_RDMA_READ, PLEN))
        return 0;
    for (size_t i = 0; i < (size_t)NREADS * PLEN; i++)
        if (c->buf[SZ / 2 + i] != pattern_byte(77, i))
            return 0;
    return 1;
}

/* NWRITES writes, then at once a read of their range: it returns them. */
static int read_after_writes(struct end *c, const struct msg *m) {
    /* every source first: the posts then follow each other closely */
    for (int i = 0; i < NWRITES; i++)
        for (size_t j = 0; j < WLEN; j++)
            c->buf[8192 + (size_t)i * WLEN + j] = pattern_byte(50 + (uint64_t)i, j);
    memset(c->buf + SZ / 2, 0, NWRITES * WLEN);
    for (int i = 0; i < NWRITES; i++) {
        DAT_LMR_TRIPLET l = lt(c, 8192 + (size_t)i * WLEN, WLEN);
        DAT_RMR_TRIPLET rt = {m->va + WAT + (uint64_t)i * WLEN, WLEN, m->rctx};
        DAT_DTO_COOKIE ck = {.as_64 = 400 + (uint64_t)i};
        if (dat_ep_post_rdma_write(c->ep, 1, &l, ck, &rt, 0) != DAT_SUCCESS)
            return 0;
    }
    DAT_LMR_TRIPLET l = lt(c, SZ / 2, NWRITES * WLEN);
    DAT_RMR_TRIPLET rt = {m->va + WAT, NWRITES * WLEN, m->rctx};
    DAT_DTO_COOKIE ck = {.as_64 = 400 + NWRITES};
    if (dat_ep_post_rdma_read(c->ep, 1, &l, ck, &rt, 0) != DAT_SUCCESS ||
        !in_order(c, 400, NWRITES, DAT_DTO_RDMA_WRITE, WLEN) ||
        !dto(c, DAT_DTO_RDMA_READ, 400 + NWRITES, NWRITES * WLEN))
        return 0;
    return memcmp(c->buf + SZ / 2, c->buf + 8192, NWRITES * WLEN) == 0;
}

/* The server: offer the buffer, then check each write when told. */
static int server(int ready) {
    struct end s;
    DAT_EVENT ev;
    DAT_PSP_HANDLE psp;
    DAT_DTO_COOKIE c = {.as_64 = 1};

    if (!open_end(&s) || dat_psp_create(s.ia, QUAL, s.cr, DAT_PSP_CONSUMER_FLAG, &psp))
        return 10;
    if (write(ready, "r", 1) != 1) /* listening: the client may connect */
        return 10;
    /* the second half holds what the client will read */
    for (size_t i = 0; i < SZ / 2; i++)
        s.buf[SZ / 2 + i] = pattern_byte(77, i);
    /* receive "check" messages away from where the client writes */
    DAT_LMR_TRIPLET r = lt(&s, SZ - 128, sizeof(struct msg));
    dat_ep_post_recv(s.ep, 1, &r, c, 0);
    DAT_COUNT n;
    if (dat_evd_wait(s.cr, TO, 1, &ev, &n) ||
        dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, NULL) ||
        !wait_for(&s, DAT_CONNECTION_EVENT_ESTABLISHED, &ev))
        return 11;
    struct msg *m = (struct msg *)(s.buf + SZ - 64);
    m->va = (uint64_t)(uintptr_t)s.buf;
    m->rctx = s.rctx;
    m->len = SZ;
    DAT_LMR_TRIPLET t = lt(&s, SZ - 64, sizeof(*m));
    if (dat_ep_post_send(s.ep, 1, &t, c, 0))
        return 12;
    int bad = 0;
    for (size_t k = 0; k < NSIZES; k++) {
        /*
         * The completion of our last send and the client's "check"
         * (sent after its RDMA write): two streams, any order.
         */
        if (!send_and_recv(&s, sizeof(*m)))
            return 13;
        for (size_t i = 0; i < sizes[k]; i++)
            bad += s.buf[3 + i] != pattern_byte((uint64_t)k, i);
        if (dat_ep_post_recv(s.ep, 1, &r, c, 0))
            return 14;
        t = lt(&s, SZ - 64, sizeof(*m));
        if (dat_ep_post_send(s.ep, 1, &t, c, 0))
            return 15;
    }
    if (!dto(&s, DAT_DTO_SEND, 1, sizeof(*m)))
        return 15;
    wait_for(&s, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
    dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG);
    return bad ? 16 : 0;
}

int main(int argc, char **argv) {
    struct end c;
    DAT_EVENT ev;
    DAT_IA_ATTR ia;
    DAT_PROVIDER_ATTR pa;
    int node = access("/dev/scif1", F_OK) == 0 ? 1 : 0;

    (void)argc;
    dapl_test_env(argv);
    ksft_print_header();
    if (!getenv("DAT_OVERRIDE"))
        return ksft_exit_skip_all("DAT_OVERRIDE not set");
    int pfd[2];
    char b;
    fflush(stdout);
    if (pipe(pfd))
        return ksft_exit_skip_all("pipe");
    pid_t pid = fork(); /* before any IA exists: no threads yet */
    if (pid == 0) {
        if (node)
            setenv("SCIF_NODE", "1", 1);
        close(pfd[0]);
        _exit(server(pfd[1]));
    }
    close(pfd[1]);
    if (!open_end(&c)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return ksft_exit_skip_all("cannot open the " IA_NAME " IA");
    }
    ksft_set_plan(2 * NSIZES + 4);
    DAT_DTO_COOKIE ck = {.as_64 = 1};
    DAT_LMR_TRIPLET r = lt(&c, 0, sizeof(struct msg));
    dat_ep_post_recv(c.ep, 1, &r, ck, 0);
    dat_ia_query(c.ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &ia, 0, &pa);
    struct sockaddr_in peer = *(struct sockaddr_in *)ia.ia_address_ptr;
    peer.sin_addr.s_addr = htonl(0x7f530000u | (unsigned)node);
    int ok = read(pfd[0], &b, 1) == 1 &&
             dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&peer, QUAL, TO, 0, NULL, DAT_QOS_BEST_EFFORT,
                            DAT_CONNECT_DEFAULT_FLAG) == DAT_SUCCESS &&
             wait_for(&c, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
    ok = ok && dto(&c, DAT_DTO_RECEIVE, 1, sizeof(struct msg));
    struct msg m;
    memcpy(&m, c.buf, sizeof(m));
    ksft_test_result(ok, "connected to node %d, got the server's rmr_context", node);
    for (size_t k = 0; k < NSIZES && ok; k++) {
        uint32_t len = sizes[k];
        for (size_t i = 0; i < len; i++)
            c.buf[4096 + 5 + i] = pattern_byte((uint64_t)k, i);
        DAT_LMR_TRIPLET l = lt(&c, 4096 + 5, len);
        DAT_RMR_TRIPLET rt = {m.va + 3, len, m.rctx};
        DAT_DTO_COOKIE wc = {.as_64 = 100 + k};
        int w = dat_ep_post_rdma_write(c.ep, 1, &l, wc, &rt, 0) == DAT_SUCCESS &&
                dto(&c, DAT_DTO_RDMA_WRITE, 100 + k, len);
        /* read len bytes of the server's second half into two segments */
        memset(c.buf + SZ / 2, 0, SZ / 2);
        uint32_t h1 = len / 2;
        DAT_LMR_TRIPLET two[2] = {lt(&c, SZ / 2 + 1, h1), lt(&c, SZ / 2 + 1 + h1 + 7, len - h1)};
        DAT_RMR_TRIPLET rr = {m.va + SZ / 2, len, m.rctx};
        DAT_DTO_COOKIE rc = {.as_64 = 200 + k};
        int rd = dat_ep_post_rdma_read(c.ep, 2, two, rc, &rr, 0) == DAT_SUCCESS &&
                 dto(&c, DAT_DTO_RDMA_READ, 200 + k, len);
        for (size_t i = 0; rd && i < len; i++) {
            size_t at = i < h1 ? SZ / 2 + 1 + i : SZ / 2 + 1 + h1 + 7 + (i - h1);
            rd = c.buf[at] == pattern_byte(77, i);
        }
        /* tell the server to check the write */
        DAT_LMR_TRIPLET s = lt(&c, 64, sizeof(struct msg));
        dat_ep_post_recv(c.ep, 1, &r, ck, 0);
        ok = dat_ep_post_send(c.ep, 1, &s, ck, 0) == DAT_SUCCESS &&
             send_and_recv(&c, sizeof(struct msg));
        ksft_test_result(w, "rdma_write %u bytes: completion", len);
        ksft_test_result(rd, "rdma_read %u bytes into 2 segments: data", len);
    }
    ksft_test_result(ok && pipelined_reads(&c, &m),
                     "%d reads of %u bytes posted back to back: completions in post order, data",
                     NREADS, PLEN);
    ksft_test_result(ok && read_after_writes(&c, &m),
                     "%d writes of %u bytes, then at once a read of them: it returns them", NWRITES,
                     WLEN);
    dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG);
    int st = 0;
    waitpid(pid, &st, 0);
    ksft_test_result(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                     "server saw every RDMA write land (exit %d)",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG);
    return ksft_exit();
}
