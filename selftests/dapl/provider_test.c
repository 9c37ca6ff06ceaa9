// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * provider_test: behaviour of the SCIF DAT provider through the standard
 * DAT registry (dat2/udat.h, linked with -ldat): every return code of
 * dat_ep_post_rdma_read(3) in the situation it names, dat_evd_wait(3)
 * threshold/timeout/nmore/second waiter/unwaitable/abort, I/O vector fill
 * order, private data both ways, reject, unreachable, timeout, disconnect
 * and peer death with outstanding receives (flushed once each).
 *
 * Two IAs in one process talk over SCIF loopback; the peer-death case
 * forks a child with its own IA.  Needs DAT_OVERRIDE naming the provider
 * (dapl_env.h sets it up for the build tree).
 */
#include <dat2/udat.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <scif.h>

#include "ksft.h"
#include "dapl_env.h"

#define IA_NAME "ofa-v2-scif"
#define QUAL_BASE 7300
#define T5S 5000000u

static DAT_RETURN TYPE(DAT_RETURN r) {
    return DAT_GET_TYPE(r);
}

struct side {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async, conn, req, rcv, cr;
    DAT_PZ_HANDLE pz, pz2;
    DAT_EP_HANDLE ep;
    DAT_PSP_HANDLE psp;
    unsigned char *buf; /* 64 KiB, LMR with all privileges */
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    unsigned char *ro; /* 4 KiB, LMR with local access only */
    DAT_LMR_HANDLE lmr_ro;
    DAT_RMR_CONTEXT rctx_ro;
    unsigned char *other; /* 4 KiB, LMR in pz2 */
    DAT_LMR_HANDLE lmr_other;
    DAT_LMR_CONTEXT lctx_other;
};

#define BUF 65536

static int lmr(struct side *s, void *p, DAT_VLEN len, DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
               DAT_LMR_HANDLE *h, DAT_LMR_CONTEXT *l, DAT_RMR_CONTEXT *r) {
    DAT_REGION_DESCRIPTION d;
    DAT_VLEN rl;
    DAT_VADDR ra;

    d.for_va = p;
    return dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, d, len, pz, priv, DAT_VA_TYPE_VA, h, l, r,
                          &rl, &ra) == DAT_SUCCESS;
}

static int side_open(struct side *s, DAT_EP_ATTR *attr) {
    DAT_LMR_CONTEXT dummy;

    memset(s, 0, sizeof(*s));
    s->async = DAT_HANDLE_NULL;
    if (dat_ia_open(IA_NAME, 8, &s->async, &s->ia) != DAT_SUCCESS)
        return 0;
    if (dat_pz_create(s->ia, &s->pz) || dat_pz_create(s->ia, &s->pz2))
        return 0;
    if (dat_evd_create(s->ia, 16, NULL, DAT_EVD_CONNECTION_FLAG, &s->conn) ||
        dat_evd_create(s->ia, 64, NULL, DAT_EVD_DTO_FLAG, &s->req) ||
        dat_evd_create(s->ia, 64, NULL, DAT_EVD_DTO_FLAG, &s->rcv) ||
        dat_evd_create(s->ia, 16, NULL, DAT_EVD_CR_FLAG, &s->cr))
        return 0;
    s->buf = aligned_alloc(4096, BUF);
    s->ro = aligned_alloc(4096, 4096);
    s->other = aligned_alloc(4096, 4096);
    if (!s->buf || !s->ro || !s->other)
        return 0;
    memset(s->buf, 0, BUF);
    if (!lmr(s, s->buf, BUF, s->pz, DAT_MEM_PRIV_ALL_FLAG, &s->lmr, &s->lctx, &s->rctx) ||
        !lmr(s, s->ro, 4096, s->pz, DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
             &s->lmr_ro, &dummy, &s->rctx_ro) ||
        !lmr(s, s->other, 4096, s->pz2, DAT_MEM_PRIV_ALL_FLAG, &s->lmr_other, &s->lctx_other,
             &dummy))
        return 0;
    return dat_ep_create(s->ia, s->pz, s->rcv, s->req, s->conn, attr, &s->ep) == DAT_SUCCESS;
}

/* RC, 16 receives, 4 segments per send and receive. */
static void small_attr(DAT_EP_ATTR *a, DAT_COUNT max_request_dtos, DAT_COUNT max_rdma_iov) {
    memset(a, 0, sizeof(*a));
    a->service_type = DAT_SERVICE_TYPE_RC;
    a->max_recv_dtos = 16;
    a->max_request_dtos = max_request_dtos;
    a->max_recv_iov = 4;
    a->max_request_iov = 4;
    a->max_rdma_read_iov = max_rdma_iov;
    a->max_rdma_write_iov = max_rdma_iov;
}

static void side_close(struct side *s) {
    if (s->ia)
        dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG);
    free(s->buf);
    free(s->ro);
    free(s->other);
    memset(s, 0, sizeof(*s));
}

/* Wait for one event; returns its number (0 on timeout or error). */
static DAT_EVENT_NUMBER wait_ev(DAT_EVD_HANDLE evd, DAT_EVENT *ev) {
    DAT_COUNT nmore;

    if (dat_evd_wait(evd, T5S, 1, ev, &nmore) != DAT_SUCCESS)
        return 0;
    return ev->event_number;
}

static DAT_IA_ADDRESS_PTR ia_addr(struct side *s) {
    DAT_IA_ATTR a;
    DAT_PROVIDER_ATTR p;

    if (dat_ia_query(s->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &a, 0, &p))
        return NULL;
    return a.ia_address_ptr;
}

/*
 * Connect a (active) to b (passive, PSP on qual) with private data both
 * ways; checks them.  Returns 1 when both EPs are connected.
 */
static int connect_pair(struct side *a, struct side *b, DAT_CONN_QUAL qual, int check_pdata) {
    unsigned char req[48], acc[40];
    DAT_EVENT ev;
    DAT_CR_PARAM crp;
    int ok = 1;

    for (int i = 0; i < 48; i++)
        req[i] = (unsigned char)(i + 1);
    for (int i = 0; i < 40; i++)
        acc[i] = (unsigned char)(200 - i);
    if (dat_psp_create(b->ia, qual, b->cr, DAT_PSP_CONSUMER_FLAG, &b->psp))
        return 0;
    if (dat_ep_connect(a->ep, ia_addr(b), qual, T5S, 48, req, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG))
        return 0;
    if (wait_ev(b->cr, &ev) != DAT_CONNECTION_REQUEST_EVENT)
        return 0;
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    if (dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp))
        return 0;
    if (check_pdata)
        ok &= crp.private_data_size == 48 && !memcmp(crp.private_data, req, 48);
    if (dat_cr_accept(cr, b->ep, 40, acc))
        return 0;
    if (wait_ev(b->conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        return 0;
    if (wait_ev(a->conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        return 0;
    if (check_pdata)
        ok &= ev.event_data.connect_event_data.private_data_size == 40 &&
              !memcmp(ev.event_data.connect_event_data.private_data, acc, 40);
    return ok;
}

static DAT_LMR_TRIPLET trip(struct side *s, size_t off, DAT_SEG_LENGTH len) {
    DAT_LMR_TRIPLET t;

    t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + off);
    t.segment_length = len;
    t.lmr_context = s->lctx;
    return t;
}

static DAT_RMR_TRIPLET rtrip(struct side *s, size_t off, DAT_SEG_LENGTH len) {
    DAT_RMR_TRIPLET t;

    t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + off);
    t.segment_length = len;
    t.rmr_context = s->rctx;
    return t;
}

static DAT_DTO_COOKIE ck(uint64_t v) {
    DAT_DTO_COOKIE c;

    c.as_64 = v;
    return c;
}

/* ---- EVD wait rules ----------------------------------------------------- */

struct waiter {
    DAT_EVD_HANDLE evd;
    DAT_TIMEOUT to;
    DAT_RETURN r;
    DAT_EVENT ev;
    DAT_COUNT nmore;
};

static void *wait_thread(void *p) {
    struct waiter *w = p;

    w->r = dat_evd_wait(w->evd, w->to, 1, &w->ev, &w->nmore);
    return NULL;
}

static void post_sw(DAT_EVD_HANDLE evd, int n) {
    DAT_EVENT ev;

    memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_SOFTWARE_EVENT;
    ev.event_data.software_event_data.pointer = (void *)(uintptr_t)n;
    dat_evd_post_se(evd, &ev);
}

static void test_evd(struct side *s) {
    DAT_EVD_HANDLE e;
    DAT_EVENT ev;
    DAT_COUNT nmore = -1;
    pthread_t t;
    struct waiter w;

    dat_evd_create(s->ia, 4, NULL, DAT_EVD_SOFTWARE_FLAG, &e);
    ksft_test_result(TYPE(dat_evd_wait(e, 0, 0, &ev, &nmore)) == DAT_INVALID_PARAMETER &&
                         TYPE(dat_evd_wait(e, 0, 5, &ev, &nmore)) == DAT_INVALID_PARAMETER,
                     "evd_wait: threshold 0 or above qlen -> DAT_INVALID_PARAMETER");
    post_sw(e, 1);
    nmore = -1;
    DAT_RETURN r = dat_evd_wait(e, 20000, 2, &ev, &nmore);
    ksft_test_result(TYPE(r) == DAT_TIMEOUT_EXPIRED && nmore == 1,
                     "evd_wait: timeout below threshold -> DAT_TIMEOUT_EXPIRED, nmore %d", nmore);
    r = dat_evd_dequeue(e, &ev);
    ksft_test_result(r == DAT_SUCCESS && ev.event_data.software_event_data.pointer == (void *)1 &&
                         TYPE(dat_evd_dequeue(e, &ev)) == DAT_QUEUE_EMPTY,
                     "evd_wait: nothing dequeued on timeout; dequeue then empty");
    post_sw(e, 1);
    post_sw(e, 2);
    post_sw(e, 3);
    r = dat_evd_wait(e, 0, 2, &ev, &nmore);
    ksft_test_result(r == DAT_SUCCESS && nmore == 2 &&
                         ev.event_data.software_event_data.pointer == (void *)1,
                     "evd_wait: threshold met -> first event, nmore %d", nmore);
    dat_evd_dequeue(e, &ev);
    dat_evd_dequeue(e, &ev);

    w.evd = e;
    w.to = DAT_TIMEOUT_INFINITE;
    pthread_create(&t, NULL, wait_thread, &w);
    usleep(200000);
    DAT_RETURN r2 = dat_evd_wait(e, 0, 1, &ev, &nmore);
    DAT_RETURN r3 = dat_evd_dequeue(e, &ev);
    post_sw(e, 9);
    pthread_join(t, NULL);
    ksft_test_result(TYPE(r2) == DAT_INVALID_STATE && TYPE(r3) == DAT_INVALID_STATE &&
                         w.r == DAT_SUCCESS &&
                         w.ev.event_data.software_event_data.pointer == (void *)9,
                     "evd_wait: second waiter and dequeue under a waiter -> DAT_INVALID_STATE");

    dat_evd_set_unwaitable(e);
    r = dat_evd_wait(e, 0, 1, &ev, &nmore);
    dat_evd_clear_unwaitable(e);
    ksft_test_result(TYPE(r) == DAT_INVALID_STATE, "evd_wait: unwaitable EVD -> DAT_INVALID_STATE");

    pthread_create(&t, NULL, wait_thread, &w);
    usleep(200000);
    r = dat_evd_free(e);
    pthread_join(t, NULL);
    ksft_test_result(r == DAT_SUCCESS && TYPE(w.r) == DAT_ABORT,
                     "evd_free under a waiter -> waiter gets DAT_ABORT");
}

/* ---- posting errors and data movement ------------------------------------ */

static void test_unconnected(struct side *a) {
    DAT_LMR_TRIPLET l = trip(a, 0, 16);
    DAT_RMR_TRIPLET rt = rtrip(a, 0, 16);

    ksft_test_result(TYPE(dat_ep_post_rdma_read(a->ep, 1, &l, ck(1), &rt, 0)) ==
                             DAT_INVALID_STATE &&
                         TYPE(dat_ep_post_send(a->ep, 1, &l, ck(1), 0)) == DAT_INVALID_STATE,
                     "post on an unconnected EP -> DAT_INVALID_STATE");
    /* A PZ handle given as EP: dispatch reaches the provider, which must
     * refuse it. */
    ksft_test_result(TYPE(dat_ep_post_rdma_read(a->pz, 1, &l, ck(1), &rt, 0)) == DAT_INVALID_HANDLE,
                     "post on a handle that is no EP -> DAT_INVALID_HANDLE");
}

static void test_connected(struct side *a, struct side *b) {
    DAT_EVENT ev;
    DAT_LMR_TRIPLET l[3], s1;
    DAT_RMR_TRIPLET rt;
    DAT_RETURN r;

    /* I/O vector fill order on receive: 3 x 8 bytes, 12 byte message. */
    memset(b->buf, 0xee, 64);
    for (int i = 0; i < 3; i++)
        l[i] = trip(b, (size_t)i * 16, 8);
    dat_ep_post_recv(b->ep, 3, l, ck(0x77), DAT_COMPLETION_DEFAULT_FLAG);
    for (int i = 0; i < 12; i++)
        a->buf[1024 + i] = (unsigned char)(i + 1);
    s1 = trip(a, 1024, 12);
    r = dat_ep_post_send(a->ep, 1, &s1, ck(0x55), DAT_COMPLETION_DEFAULT_FLAG);
    int sok = r == DAT_SUCCESS && wait_ev(a->req, &ev) == DAT_DTO_COMPLETION_EVENT &&
              ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x55 &&
              ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
    int rok = wait_ev(b->rcv, &ev) == DAT_DTO_COMPLETION_EVENT &&
              ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x77 &&
              ev.event_data.dto_completion_event_data.transfered_length == 12 &&
              ev.event_data.dto_completion_event_data.operation == DAT_DTO_RECEIVE;
    int fill = !memcmp(b->buf, a->buf + 1024, 8) && !memcmp(b->buf + 16, a->buf + 1032, 4) &&
               b->buf[20] == 0xee && b->buf[23] == 0xee && b->buf[32] == 0xee && b->buf[39] == 0xee;
    ksft_test_result(sok && rok && fill,
                     "send/recv: cookies returned, receive IOV filled in order");

    /* RDMA read of 20 bytes into 3 x 8: full, full, 4, nothing else. */
    for (int i = 0; i < 20; i++)
        b->buf[4096 + i] = (unsigned char)(0x30 + i);
    memset(a->buf, 0xee, 64);
    for (int i = 0; i < 3; i++)
        l[i] = trip(a, (size_t)i * 16, 8);
    rt = rtrip(b, 4096, 20);
    r = dat_ep_post_rdma_read(a->ep, 3, l, ck(0x99), &rt, DAT_COMPLETION_DEFAULT_FLAG);
    int ok = r == DAT_SUCCESS && wait_ev(a->req, &ev) == DAT_DTO_COMPLETION_EVENT;
    DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    ok = ok && d->status == DAT_DTO_SUCCESS && d->user_cookie.as_64 == 0x99 &&
         d->operation == DAT_DTO_RDMA_READ && d->transfered_length == 20;
    fill = !memcmp(a->buf, b->buf + 4096, 8) && !memcmp(a->buf + 16, b->buf + 4104, 8) &&
           !memcmp(a->buf + 32, b->buf + 4112, 4) && a->buf[36] == 0xee && a->buf[8] == 0xee;
    ksft_test_result(ok && fill,
                     "rdma_read: completion with cookie, local IOV filled in order (status %d)",
                     r == DAT_SUCCESS ? (int)d->status : -1);

    /* RDMA write of 3000 bytes, then a send: the data is there first. */
    for (int i = 0; i < 3000; i++)
        a->buf[8192 + i] = (unsigned char)(i * 7);
    memset(b->buf + 12288, 0, 3000);
    s1 = trip(a, 8192, 3000);
    rt = rtrip(b, 12288, 3000);
    r = dat_ep_post_rdma_write(a->ep, 1, &s1, ck(0x42), &rt, DAT_COMPLETION_BARRIER_FENCE_FLAG);
    ok = r == DAT_SUCCESS && wait_ev(a->req, &ev) == DAT_DTO_COMPLETION_EVENT &&
         ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
         ev.event_data.dto_completion_event_data.transfered_length == 3000;
    ksft_test_result(ok && !memcmp(a->buf + 8192, b->buf + 12288, 3000),
                     "rdma_write (barrier fence): data at the peer, completion");

    /* Return codes of the seed. */
    l[0] = trip(a, 0, 8);
    rt = rtrip(b, 4096, 20);
    ksft_test_result(TYPE(dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0)) == DAT_LENGTH_ERROR,
                     "rdma_read: local IOV smaller than remote -> DAT_LENGTH_ERROR");
    l[0] = trip(a, BUF - 4, 8);
    rt = rtrip(b, 0, 8);
    ksft_test_result(TYPE(dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0)) ==
                         DAT_INVALID_PARAMETER,
                     "rdma_read: segment outside its LMR -> DAT_INVALID_PARAMETER");
    l[0].virtual_address = (DAT_VADDR)(uintptr_t)a->other;
    l[0].segment_length = 8;
    l[0].lmr_context = a->lctx_other;
    ksft_test_result(TYPE(dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0)) ==
                         DAT_PROTECTION_VIOLATION,
                     "rdma_read: LMR of another PZ -> DAT_PROTECTION_VIOLATION");
    l[0] = trip(a, 0, 8);
    rt.virtual_address = (DAT_VADDR)(uintptr_t)b->ro;
    rt.rmr_context = b->rctx_ro;
    DAT_RETURN r1 = dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0);
    l[0].lmr_context = 0xdeadbeef;
    rt = rtrip(b, 0, 8);
    DAT_RETURN r2 = dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0);
    ksft_test_result(TYPE(r1) == DAT_PRIVILEGES_VIOLATION && TYPE(r2) == DAT_PRIVILEGES_VIOLATION,
                     "rdma_read: no remote read right / invalid LMR -> DAT_PRIVILEGES_VIOLATION");
    l[0] = trip(a, 0, 8);
    ksft_test_result(
        TYPE(dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, DAT_COMPLETION_UNSIGNALLED_FLAG)) ==
            DAT_INVALID_PARAMETER,
        "rdma_read: unsignalled on an EP not created for it -> DAT_INVALID_PARAMETER");

    /* A local segment whose end wraps past 2^64 (issue 8, item 9). */
    l[0].virtual_address = UINT64_MAX - 7;
    l[0].segment_length = 16;
    l[0].lmr_context = a->lctx;
    rt = rtrip(b, 0, 16);
    r = dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0);
    ksft_test_result(
        TYPE(r) == DAT_INVALID_PARAMETER && TYPE(dat_evd_dequeue(a->req, &ev)) == DAT_QUEUE_EMPTY,
        "rdma_read: local segment wrapping past 2^64 -> DAT_INVALID_PARAMETER, no completion");
    r = dat_ep_post_send(a->ep, 1, l, ck(1), 0);
    ksft_test_result(TYPE(r) == DAT_INVALID_PARAMETER,
                     "send: local segment wrapping past 2^64 -> DAT_INVALID_PARAMETER");
    l[0] = trip(a, 0, 16);
    rt.virtual_address = UINT64_MAX - 7;
    r = dat_ep_post_rdma_read(a->ep, 1, l, ck(1), &rt, 0);
    ksft_test_result(
        TYPE(r) == DAT_INVALID_PARAMETER && TYPE(dat_evd_dequeue(a->req, &ev)) == DAT_QUEUE_EMPTY,
        "rdma_read: remote segment wrapping past 2^64 -> DAT_INVALID_PARAMETER, no completion");
    {
        DAT_LMR_HANDLE wl = DAT_HANDLE_NULL;
        DAT_LMR_CONTEXT wlc;
        DAT_RMR_CONTEXT wrc;

        int made = lmr(a, (void *)(uintptr_t)(UINT64_MAX - 4095), 8192, a->pz,
                       DAT_MEM_PRIV_ALL_FLAG, &wl, &wlc, &wrc);
        ksft_test_result(!made, "lmr_create: region wrapping past 2^64 -> refused");
        if (made)
            dat_lmr_free(wl);
    }

    /* Suppression: no event on success, the peer still receives. */
    l[1] = trip(b, 0, 64);
    dat_ep_post_recv(b->ep, 1, &l[1], ck(0x78), 0);
    s1 = trip(a, 1024, 12);
    r = dat_ep_post_send(a->ep, 1, &s1, ck(0x56), DAT_COMPLETION_SUPPRESS_FLAG);
    ok = r == DAT_SUCCESS && wait_ev(b->rcv, &ev) == DAT_DTO_COMPLETION_EVENT;
    ksft_test_result(ok && TYPE(dat_evd_dequeue(a->req, &ev)) == DAT_QUEUE_EMPTY,
                     "send with DAT_COMPLETION_SUPPRESS_FLAG: no completion event");
}

static void test_resources(struct side *a, struct side *b) {
    DAT_EVENT ev;
    DAT_LMR_TRIPLET s1 = trip(a, 0, 8), l;
    DAT_RETURN r[3];

    /* a's EP was created with max_request_dtos 2; 3 sends get through. */
    for (int i = 0; i < 3; i++) {
        l = trip(b, 256 + (size_t)i * 8, 8);
        dat_ep_post_recv(b->ep, 1, &l, ck(100 + i), 0);
    }
    for (int i = 0; i < 3; i++)
        r[i] = dat_ep_post_send(a->ep, 1, &s1, ck(10 + i), 0);
    ksft_test_result(r[0] == DAT_SUCCESS && r[1] == DAT_SUCCESS &&
                         TYPE(r[2]) == DAT_INSUFFICIENT_RESOURCES,
                     "third send with max_request_dtos 2 and no completion reaped -> "
                     "DAT_INSUFFICIENT_RESOURCES");
    wait_ev(a->req, &ev);
    wait_ev(a->req, &ev);
    ksft_test_result(dat_ep_post_send(a->ep, 1, &s1, ck(13), 0) == DAT_SUCCESS &&
                         wait_ev(a->req, &ev) == DAT_DTO_COMPLETION_EVENT,
                     "after reaping completions the send queue accepts again");
    for (int i = 0; i < 3; i++)
        wait_ev(b->rcv, &ev);
}

/* Disconnect with three receives outstanding on b. */
static void test_disconnect(struct side *a, struct side *b) {
    DAT_EVENT ev;
    DAT_LMR_TRIPLET l;
    int flushed = 0, extra = 0, got_disc;

    for (int i = 0; i < 3; i++) {
        l = trip(b, 512 + (size_t)i * 64, 64);
        dat_ep_post_recv(b->ep, 1, &l, ck(200 + i), 0);
    }
    dat_ep_disconnect(a->ep, DAT_CLOSE_GRACEFUL_FLAG);
    DAT_EVENT_NUMBER ea = wait_ev(a->conn, &ev);
    DAT_EVENT_NUMBER eb = wait_ev(b->conn, &ev);
    got_disc = ea == DAT_CONNECTION_EVENT_DISCONNECTED && eb == DAT_CONNECTION_EVENT_DISCONNECTED;
    if (!got_disc)
        ksft_print_msg("connection events 0x%x 0x%x\n", ea, eb);
    for (int i = 0; i < 3; i++)
        if (wait_ev(b->rcv, &ev) == DAT_DTO_COMPLETION_EVENT &&
            ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
            ev.event_data.dto_completion_event_data.user_cookie.as_64 == (uint64_t)(200 + i))
            flushed++;
    while (dat_evd_dequeue(b->rcv, &ev) == DAT_SUCCESS)
        extra++;
    ksft_test_result(
        got_disc && flushed == 3 && !extra,
        "disconnect: DISCONNECTED on both sides, 3 receives flushed once (%d, %d extra)", flushed,
        extra);
    l = trip(a, 0, 8);
    DAT_RETURN r = dat_ep_post_send(a->ep, 1, &l, ck(300), 0);
    ksft_test_result(r == DAT_SUCCESS && wait_ev(a->req, &ev) == DAT_DTO_COMPLETION_EVENT &&
                         ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
                         ev.event_data.dto_completion_event_data.user_cookie.as_64 == 300,
                     "post on a disconnected EP: flushed to the request EVD");
}

static void test_reject_unreachable_timeout(struct side *a, struct side *b) {
    DAT_EVENT ev;
    unsigned char pd[16] = "no thank you";
    struct sockaddr_in far;

    dat_ep_reset(a->ep);
    dat_psp_free(b->psp);
    dat_psp_create(b->ia, QUAL_BASE + 2, b->cr, DAT_PSP_CONSUMER_FLAG, &b->psp);
    dat_ep_connect(a->ep, ia_addr(b), QUAL_BASE + 2, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                   DAT_CONNECT_DEFAULT_FLAG);
    int ok = wait_ev(b->cr, &ev) == DAT_CONNECTION_REQUEST_EVENT &&
             dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 16, pd) == DAT_SUCCESS;
    ok = ok && wait_ev(a->conn, &ev) == DAT_CONNECTION_EVENT_PEER_REJECTED;
    ksft_test_result(ok && ev.event_data.connect_event_data.private_data_size == 16 &&
                         !memcmp(ev.event_data.connect_event_data.private_data, pd, 16),
                     "reject: PEER_REJECTED with the reject private data");

    dat_ep_reset(a->ep);
    dat_ep_connect(a->ep, ia_addr(b), QUAL_BASE + 40, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                   DAT_CONNECT_DEFAULT_FLAG);
    ksft_test_result(wait_ev(a->conn, &ev) == DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                     "connect to a qualifier nobody listens on -> NON_PEER_REJECTED");

    dat_ep_reset(a->ep);
    memset(&far, 0, sizeof(far));
    far.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", &far.sin_addr);
    dat_ep_connect(a->ep, (DAT_IA_ADDRESS_PTR)&far, QUAL_BASE, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                   DAT_CONNECT_DEFAULT_FLAG);
    ksft_test_result(wait_ev(a->conn, &ev) == DAT_CONNECTION_EVENT_UNREACHABLE,
                     "connect to an address that is no SCIF node -> UNREACHABLE");

    /* Nobody accepts: the connect times out. */
    dat_ep_reset(a->ep);
    dat_ep_connect(a->ep, ia_addr(b), QUAL_BASE + 2, 300000, 0, NULL, DAT_QOS_BEST_EFFORT,
                   DAT_CONNECT_DEFAULT_FLAG);
    ok = wait_ev(b->cr, &ev) == DAT_CONNECTION_REQUEST_EVENT;
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    ok = ok && wait_ev(a->conn, &ev) == DAT_CONNECTION_EVENT_TIMED_OUT;
    ksft_test_result(ok, "connect not accepted within its timeout -> TIMED_OUT");
    dat_cr_reject(cr, 0, NULL);
}

/*
 * Queued events that do not notify (issue 8, item 8): an unsignalled
 * request completion and a non-solicited receive on a solicited-wait EVD
 * are returned by dat_evd_wait once queued; they only do not wake a
 * blocked waiter.  Also the per-operation I/O vector limits (item 10).
 */
static void test_quiet_events_and_iov_limits(void) {
    struct side a, b;
    DAT_EP_ATTR aa, ba;
    DAT_EVENT ev;
    DAT_COUNT nmore = -1;
    DAT_RETURN r;

    small_attr(&aa, 16, 1);
    aa.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    ba = aa;
    ba.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    int opened = side_open(&a, &aa) * 2 + side_open(&b, &ba);
    if (opened != 3 || !connect_pair(&a, &b, QUAL_BASE + 21, 0)) {
        ksft_print_msg("quiet events: sides opened %d\n", opened);
        for (int i = 0; i < 5; i++)
            ksft_test_result_fail("quiet events / iov limits: setup");
        goto out;
    }

    DAT_LMR_TRIPLET s1 = trip(&a, 0, 8), rl = trip(&b, 0, 64);
    dat_ep_post_recv(b.ep, 1, &rl, ck(0x61), DAT_COMPLETION_DEFAULT_FLAG);
    r = dat_ep_post_send(a.ep, 1, &s1, ck(0x60), DAT_COMPLETION_UNSIGNALLED_FLAG);
    nmore = -1;
    DAT_RETURN w = dat_evd_wait(a.req, 0, 1, &ev, &nmore);
    ksft_test_result(r == DAT_SUCCESS && w == DAT_SUCCESS && nmore == 0 &&
                         ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x60,
                     "evd_wait(timeout 0) returns a queued unsignalled completion (0x%x)",
                     (unsigned)w);

    /* The receive is not solicited: it does not wake b's waiter, but a
     * wait finds it once it is queued. */
    w = DAT_SUCCESS + 1;
    for (int i = 0; i < 50 && w != DAT_SUCCESS; i++)
        w = dat_evd_wait(b.rcv, 100000, 1, &ev, &nmore);
    ksft_test_result(
        w == DAT_SUCCESS && ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x61,
        "evd_wait returns a queued non-solicited receive on a solicited-wait EVD (0x%x)",
        (unsigned)w);

    DAT_LMR_TRIPLET two[2] = {trip(&a, 0, 8), trip(&a, 16, 8)};
    DAT_RMR_TRIPLET rt = rtrip(&b, 4096, 16);
    r = dat_ep_post_rdma_read(a.ep, 2, two, ck(0x62), &rt, 0);
    ksft_test_result(TYPE(r) == DAT_INVALID_PARAMETER && DAT_GET_SUBTYPE(r) == DAT_INVALID_ARG2,
                     "rdma_read: 2 segments, max_rdma_read_iov 1, max_request_iov 4 -> "
                     "DAT_INVALID_PARAMETER (0x%x)",
                     (unsigned)r);
    r = dat_ep_post_rdma_write(a.ep, 2, two, ck(0x63), &rt, 0);
    ksft_test_result(TYPE(r) == DAT_INVALID_PARAMETER && DAT_GET_SUBTYPE(r) == DAT_INVALID_ARG2,
                     "rdma_write: 2 segments, max_rdma_write_iov 1, max_request_iov 4 -> "
                     "DAT_INVALID_PARAMETER (0x%x)",
                     (unsigned)r);
    rt.segment_length = 8;
    r = dat_ep_post_rdma_read(a.ep, 1, two, ck(0x64), &rt, 0);
    w = r == DAT_SUCCESS ? dat_evd_wait(a.req, T5S, 1, &ev, &nmore) : r;
    ksft_test_result(w == DAT_SUCCESS &&
                         ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS,
                     "rdma_read: 1 segment within max_rdma_read_iov 1 succeeds");
out:
    side_close(&a);
    side_close(&b);
}

/* ---- dat_evd_wait and signals (issue 8, item 10) -------------------------- */

static volatile sig_atomic_t sigs_seen;
static void on_usr1(int sig) {
    (void)sig;
    sigs_seen++;
}

struct sigwaiter {
    struct waiter w;
    volatile int done;
};

static void *sig_wait_thread(void *p) {
    struct sigwaiter *sw = p;

    wait_thread(&sw->w);
    __atomic_store_n(&sw->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * A signal caught by a handler installed without SA_RESTART ends a
 * blocked dat_evd_wait with DAT_INTERRUPTED_CALL.  The signal is sent
 * until the wait returned (one landing just before the waiter blocks
 * interrupts nothing, as for any system call); bounded.
 */
static void test_evd_wait_signal(struct side *s) {
    struct sigaction sa, old;
    struct sigwaiter sw;
    pthread_t t;
    DAT_EVD_HANDLE e;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGUSR1, &sa, &old);
    for (int timed = 0; timed < 2; timed++) {
        memset(&sw, 0, sizeof(sw));
        dat_evd_create(s->ia, 4, NULL, DAT_EVD_SOFTWARE_FLAG, &e);
        sw.w.evd = e;
        sw.w.to = timed ? 60000000u : DAT_TIMEOUT_INFINITE;
        pthread_create(&t, NULL, sig_wait_thread, &sw);
        for (int i = 0; i < 500 && !__atomic_load_n(&sw.done, __ATOMIC_SEQ_CST); i++) {
            pthread_kill(t, SIGUSR1);
            usleep(10000);
        }
        int ended = __atomic_load_n(&sw.done, __ATOMIC_SEQ_CST);
        if (!ended)
            post_sw(e, 1); /* do not leave it blocked */
        pthread_join(t, NULL);
        dat_evd_free(e);
        ksft_test_result(
            ended && TYPE(sw.w.r) == DAT_INTERRUPTED_CALL,
            "evd_wait (%s) ended by a signal without SA_RESTART -> DAT_INTERRUPTED_CALL (0x%x)",
            timed ? "60 s" : "infinite", (unsigned)sw.w.r);
    }
    sigaction(SIGUSR1, &old, NULL);
}

/* ---- passive side: connection event before DISCONNECTED (item 7) --------- */

struct acceptor {
    DAT_CR_HANDLE cr;
    DAT_EP_HANDLE ep;
    DAT_RETURN r;
};

static void *accept_thread(void *p) {
    struct acceptor *ac = p;

    ac->r = dat_cr_accept(ac->cr, ac->ep, 0, NULL);
    return NULL;
}

/* Accept the request of @cr_ev on @ep in a thread, held 400 ms after the send. */
static int accept_held(struct acceptor *ac, const DAT_EVENT *cr_ev, DAT_EP_HANDLE ep,
                       pthread_t *th) {
    ac->cr = cr_ev->event_data.cr_arrival_event_data.cr_handle;
    ac->ep = ep;
    setenv("DAPLSCIF_TEST_ACCEPT_DELAY_MS", "400", 1);
    return !pthread_create(th, NULL, accept_thread, ac);
}

/*
 * The peer disconnects right after dat_cr_accept sent ACCEPT, while the
 * accepting call has not posted its connection event yet (the test hook
 * DAPLSCIF_TEST_ACCEPT_DELAY_MS holds it for 400 ms after the send): the
 * passive connection EVD still gets ESTABLISHED first, then DISCONNECTED.
 */
static void test_accept_then_peer_disconnect(void) {
    struct side s, t;
    DAT_EVENT ev;
    const DAT_CONN_QUAL qual = QUAL_BASE + 22;
    struct acceptor ac;
    pthread_t th;
    int ok = 0, started = 0;
    DAT_EVENT_NUMBER e1 = 0, e2 = 0;

    memset(&t, 0, sizeof(t));
    if (!side_open(&s, NULL) || !side_open(&t, NULL) ||
        dat_psp_create(s.ia, qual, s.cr, DAT_PSP_CONSUMER_FLAG, &s.psp) ||
        dat_ep_connect(t.ep, ia_addr(&s), qual, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG) ||
        wait_ev(s.cr, &ev) != DAT_CONNECTION_REQUEST_EVENT)
        goto result;
    started = accept_held(&ac, &ev, s.ep, &th);
    if (!started)
        goto result;
    if (wait_ev(t.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        goto result;
    dat_ep_disconnect(t.ep, DAT_CLOSE_GRACEFUL_FLAG);
    pthread_join(th, NULL);
    started = 0;
    e1 = wait_ev(s.conn, &ev);
    e2 = wait_ev(s.conn, &ev);
    ok = ac.r == DAT_SUCCESS && e1 == DAT_CONNECTION_EVENT_ESTABLISHED &&
         e2 == DAT_CONNECTION_EVENT_DISCONNECTED;
result:
    if (started)
        pthread_join(th, NULL);
    unsetenv("DAPLSCIF_TEST_ACCEPT_DELAY_MS");
    ksft_test_result(ok,
                     "accept, peer disconnects at once: passive EVD gets ESTABLISHED then "
                     "DISCONNECTED (0x%x, 0x%x)",
                     e1, e2);
    side_close(&s);
    side_close(&t);
}

/*
 * Two connections on one passive connection EVD, as dtestcm's server has
 * them: the peer disconnects the first as soon as the second is
 * established on its side, while the second's dat_cr_accept has not
 * returned (the test hook holds it 400 ms after the send).  The passive
 * EVD still gives the second's ESTABLISHED before the first's
 * DISCONNECTED, as a CM's events come (the peer's RTU before its DREQ):
 * a consumer that counts ESTABLISHED events, then frees each EP on its
 * DISCONNECTED, would otherwise free one still connected and wait for
 * its DISCONNECTED forever.
 */
static void test_accept_after_other_disconnect(void) {
    const DAT_CONN_QUAL qual = QUAL_BASE + 23;
    DAT_EP_HANDLE s2 = DAT_HANDLE_NULL, t2 = DAT_HANDLE_NULL, first = DAT_HANDLE_NULL;
    DAT_EVENT_NUMBER e1 = 0, e2 = 0;
    int ok = 0, started = 0;
    struct acceptor ac;
    struct side s, t;
    DAT_EVENT ev;
    pthread_t th;

    memset(&t, 0, sizeof(t));
    if (!side_open(&s, NULL) || !side_open(&t, NULL) ||
        dat_ep_create(s.ia, s.pz, s.rcv, s.req, s.conn, NULL, &s2) ||
        dat_ep_create(t.ia, t.pz, t.rcv, t.req, t.conn, NULL, &t2) ||
        dat_psp_create(s.ia, qual, s.cr, DAT_PSP_CONSUMER_FLAG, &s.psp))
        goto result;
    /* the first connection, established on both sides */
    if (dat_ep_connect(t.ep, ia_addr(&s), qual, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG) ||
        wait_ev(s.cr, &ev) != DAT_CONNECTION_REQUEST_EVENT ||
        dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, NULL) ||
        wait_ev(s.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED ||
        wait_ev(t.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        goto result;
    /* the second, accepted slowly */
    if (dat_ep_connect(t2, ia_addr(&s), qual, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG) ||
        wait_ev(s.cr, &ev) != DAT_CONNECTION_REQUEST_EVENT)
        goto result;
    started = accept_held(&ac, &ev, s2, &th);
    if (!started || wait_ev(t.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        goto result;
    dat_ep_disconnect(t.ep, DAT_CLOSE_GRACEFUL_FLAG);
    pthread_join(th, NULL);
    started = 0;
    e1 = wait_ev(s.conn, &ev);
    first = ev.event_data.connect_event_data.ep_handle;
    e2 = wait_ev(s.conn, &ev);
    ok = ac.r == DAT_SUCCESS && e1 == DAT_CONNECTION_EVENT_ESTABLISHED && first == s2 &&
         e2 == DAT_CONNECTION_EVENT_DISCONNECTED &&
         ev.event_data.connect_event_data.ep_handle == s.ep;
result:
    if (started)
        pthread_join(th, NULL);
    unsetenv("DAPLSCIF_TEST_ACCEPT_DELAY_MS");
    ksft_test_result(ok,
                     "two connections on one passive EVD: the second's ESTABLISHED before the "
                     "first's DISCONNECTED (0x%x, 0x%x)",
                     e1, e2);
    side_close(&s);
    side_close(&t);
}

/* A peer process dies with receives outstanding here. */
static void test_peer_death(void) {
    struct side b;
    DAT_EVENT ev;
    int pfd[2];
    char c;

    if (!side_open(&b, NULL) || pipe(pfd)) {
        ksft_test_result_fail("peer death: setup");
        return;
    }
    dat_psp_create(b.ia, QUAL_BASE + 3, b.cr, DAT_PSP_CONSUMER_FLAG, &b.psp);
    pid_t pid = fork();
    if (pid == 0) {
        struct side a;
        DAT_IA_ATTR ia_attr;
        DAT_PROVIDER_ATTR pa;

        close(pfd[0]);
        if (!side_open(&a, NULL))
            _exit(1);
        dat_ia_query(b.ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &ia_attr, 0, &pa);
        dat_ep_connect(a.ep, ia_attr.ia_address_ptr, QUAL_BASE + 3, T5S, 0, NULL,
                       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
        if (wait_ev(a.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
            _exit(2);
        c = 1;
        if (write(pfd[1], &c, 1) != 1)
            _exit(3);
        pause();
        _exit(0);
    }
    close(pfd[1]);
    int ok = wait_ev(b.cr, &ev) == DAT_CONNECTION_REQUEST_EVENT &&
             dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, b.ep, 0, NULL) ==
                 DAT_SUCCESS &&
             wait_ev(b.conn, &ev) == DAT_CONNECTION_EVENT_ESTABLISHED;
    ok = ok && read(pfd[0], &c, 1) == 1;
    DAT_LMR_TRIPLET l[2] = {trip(&b, 0, 64), trip(&b, 64, 64)};
    dat_ep_post_recv(b.ep, 1, &l[0], ck(1), 0);
    dat_ep_post_recv(b.ep, 1, &l[1], ck(2), 0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ok = ok && wait_ev(b.conn, &ev) == DAT_CONNECTION_EVENT_BROKEN;
    int flushed = 0, extra = 0;
    for (int i = 0; i < 2; i++)
        if (wait_ev(b.rcv, &ev) == DAT_DTO_COMPLETION_EVENT &&
            ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED)
            flushed++;
    while (dat_evd_dequeue(b.rcv, &ev) == DAT_SUCCESS)
        extra++;
    ksft_test_result(ok && flushed == 2 && !extra,
                     "peer killed: BROKEN, 2 receives flushed once (%d, %d extra)", flushed, extra);
    close(pfd[0]);
    side_close(&b);
}

/*
 * A peer that connects at the SCIF level and sends only part of a message
 * header must not hold up the progress engine: a proper connection request
 * to the same PSP still arrives, the PSP can be freed (that waits for the
 * progress engine) and the IA closes.
 */
static void test_stalled_peer(void) {
    struct side s, t;
    DAT_EVENT ev;
    const DAT_CONN_QUAL qual = QUAL_BASE + 20;
    int ok = 0, raw_ok = 0;
    scif_epd_t raw = SCIF_OPEN_FAILED;

    if (!side_open(&s, NULL) || !side_open(&t, NULL) ||
        dat_psp_create(s.ia, qual, s.cr, DAT_PSP_CONSUMER_FLAG, &s.psp)) {
        ksft_test_result_fail("stalled peer: setup");
        goto out;
    }
    uint16_t self = 0, nodes[1];
    if (scif_get_nodeIDs(nodes, 1, &self) < 0)
        goto result;
    raw = scif_open();
    struct scif_portID dst = {self, (uint16_t)(1024 + qual)};
    /* 10 of the 24 header bytes ("DSC1" magic, type CONN_REQ, ...) */
    static const unsigned char part[10] = {0x31, 0x43, 0x53, 0x44, 1};
    raw_ok = raw != SCIF_OPEN_FAILED && scif_connect(raw, &dst) >= 0 &&
             scif_send(raw, (void *)part, sizeof(part), SCIF_SEND_BLOCK) == (int)sizeof(part);
    usleep(200000); /* let the progress engine read the fragment */
    if (dat_ep_connect(t.ep, ia_addr(&s), qual, T5S, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG) ||
        wait_ev(s.cr, &ev) != DAT_CONNECTION_REQUEST_EVENT)
        goto result;
    if (dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, NULL) ||
        wait_ev(t.conn, &ev) != DAT_CONNECTION_EVENT_ESTABLISHED)
        goto result;
    ok = dat_psp_free(s.psp) == DAT_SUCCESS;
    s.psp = DAT_HANDLE_NULL;
result:
    ksft_test_result(raw_ok && ok,
                     "a peer stalled inside a message header does not stall other connections");
out:
    if (raw != SCIF_OPEN_FAILED)
        scif_close(raw);
    side_close(&s);
    side_close(&t);
}

/*
 * Registering a large LMR on a connection is the registering side's own
 * work, not the peer's answer, so it does not count against the connect
 * timeout: on the active side the timeout starts when CONN_REQ leaves
 * (after dat_ep_connect registered its LMRs), and on the passive side
 * CONN_ACCEPTING, sent before dat_cr_accept registers, ends it.  Each
 * connect registers a fresh, never touched mapping of BIG_LMR bytes, so
 * the registration faults in and pins every page, as a consumer's large
 * malloc'ed buffer does (Debian's dtest: two of 412 MiB).  A first
 * connect (5 s timeout) measures this run's registration and the
 * request's trip; the second gives half that registration as its
 * timeout, which a registration counted against it outlasts.  Where the
 * registration is too fast to tell from the trip, SKIP.
 */
#define BIG_LMR (256u << 20)

static long long mono_us(void) {
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

struct big {
    unsigned char *p;
    DAT_LMR_HANDLE lmr;
};

/* A fresh mapping of BIG_LMR bytes as an LMR of @s with every right. */
static int big_get(struct side *s, struct big *m) {
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;

    m->lmr = DAT_HANDLE_NULL;
    m->p = mmap(NULL, BIG_LMR, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->p == MAP_FAILED) {
        m->p = NULL;
        return 0;
    }
    return lmr(s, m->p, BIG_LMR, s->pz, DAT_MEM_PRIV_ALL_FLAG, &m->lmr, &lc, &rc);
}

static void big_put(struct big *m) {
    if (m->lmr)
        dat_lmr_free(m->lmr);
    if (m->p)
        munmap(m->p, BIG_LMR);
    m->lmr = DAT_HANDLE_NULL;
    m->p = NULL;
}

/*
 * a connects to b's PSP @qual with @timeout (us), b accepts: the two
 * sides' connection events in *ea, *eb (0: none within 5 s), the time of
 * dat_ep_connect (a's registration) or of dat_cr_accept (b's) by
 * @passive in *reg, from dat_ep_connect's return to the CR event in *trip.
 */
static void big_connect(struct side *a, struct side *b, DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
                        int passive, long long *reg, long long *trip, DAT_EVENT_NUMBER *ea,
                        DAT_EVENT_NUMBER *eb) {
    DAT_EVENT ev;
    long long t0, t1, t2, t3;

    *ea = *eb = 0;
    *reg = *trip = 0;
    t0 = mono_us();
    if (dat_ep_connect(a->ep, ia_addr(b), qual, timeout, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG))
        return;
    t1 = mono_us();
    if (wait_ev(b->cr, &ev) != DAT_CONNECTION_REQUEST_EVENT)
        return;
    t2 = mono_us();
    if (dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, b->ep, 0, NULL))
        return;
    t3 = mono_us();
    *reg = passive ? t3 - t2 : t1 - t0;
    *trip = t2 - t1;
    *ea = wait_ev(a->conn, &ev);
    *eb = wait_ev(b->conn, &ev);
}

static void test_big_lmr_timeout(int passive) {
    const char *who = passive ? "passive" : "active";
    const DAT_CONN_QUAL qual = QUAL_BASE + 30 + passive;
    struct side a, b;
    struct big m = {NULL, DAT_HANDLE_NULL};
    DAT_EP_ATTR at;
    DAT_EVENT ev;
    long long reg, trip;
    DAT_EVENT_NUMBER ea, eb;

    memset(&b, 0, sizeof(b)); /* side_close(&b) after a failed side_open(&a) */
    small_attr(&at, 2, 4);
    if (!side_open(&a, &at) || !side_open(&b, &at) ||
        dat_psp_create(b.ia, qual, b.cr, DAT_PSP_CONSUMER_FLAG, &b.psp)) {
        ksft_test_result_fail("%s side's %u MiB LMR: setup", who, BIG_LMR >> 20);
        goto out;
    }
    struct side *owner = passive ? &b : &a;

    /* 1: measure, with a timeout no registration here comes near. */
    if (!big_get(owner, &m)) {
        ksft_test_result_fail("%s side's %u MiB LMR: mmap or lmr_create", who, BIG_LMR >> 20);
        goto out;
    }
    big_connect(&a, &b, qual, T5S, passive, &reg, &trip, &ea, &eb);
    if (ea != DAT_CONNECTION_EVENT_ESTABLISHED || eb != DAT_CONNECTION_EVENT_ESTABLISHED) {
        ksft_test_result_fail("%s side's %u MiB LMR: the measuring connect: events 0x%x 0x%x", who,
                              BIG_LMR >> 20, ea, eb);
        goto out;
    }
    dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG);
    ea = wait_ev(a.conn, &ev);
    eb = wait_ev(b.conn, &ev);
    big_put(&m);
    if (ea != DAT_CONNECTION_EVENT_DISCONNECTED || eb != DAT_CONNECTION_EVENT_DISCONNECTED ||
        dat_ep_reset(a.ep) || dat_ep_reset(b.ep) || !big_get(owner, &m)) {
        ksft_test_result_fail("%s side's %u MiB LMR: disconnect (0x%x 0x%x), reset, a new LMR", who,
                              BIG_LMR >> 20, ea, eb);
        goto out;
    }
    ksft_print_msg("%s side's %u MiB LMR: registration %lld us, CONN_REQ to CR event %lld us\n",
                   who, BIG_LMR >> 20, reg, trip);
    /* The timeout must leave the answer's trips (and a loud host) room. */
    if (reg / 2 < 8 * trip + 20000) {
        ksft_test_result_skip("registration too fast to tell from the trip",
                              "%s side's %u MiB LMR registration outlasting the connect timeout",
                              who, BIG_LMR >> 20);
        goto out;
    }

    /* 2: the timeout half the registration. */
    DAT_TIMEOUT timeout = (DAT_TIMEOUT)(reg / 2);
    big_connect(&a, &b, qual, timeout, passive, &reg, &trip, &ea, &eb);
    ksft_test_result(ea == DAT_CONNECTION_EVENT_ESTABLISHED &&
                         eb == DAT_CONNECTION_EVENT_ESTABLISHED,
                     "%s side's %u MiB LMR registering longer than the connect timeout "
                     "(%u us; this time %lld us): ESTABLISHED both sides (events 0x%x 0x%x)",
                     who, BIG_LMR >> 20, (unsigned)timeout, reg, ea, eb);
out:
    /* the LMR before its IA (whose abrupt close would free it), the mapping after */
    if (m.lmr)
        dat_lmr_free(m.lmr);
    m.lmr = DAT_HANDLE_NULL;
    side_close(&a);
    side_close(&b);
    big_put(&m);
}

int main(int argc, char **argv) {
    struct side a, b;
    DAT_EP_ATTR attr;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pa;

    (void)argc;
    dapl_test_env(argv);
    ksft_print_header();
    if (!getenv("DAT_OVERRIDE"))
        return ksft_exit_skip_all("DAT_OVERRIDE not set");
    small_attr(&attr, 2, 4);
    if (!side_open(&a, &attr) || !side_open(&b, NULL))
        return ksft_exit_skip_all("cannot open the " IA_NAME " IA");
    ksft_set_plan(47);

    int ok = dat_ia_query(a.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pa) ==
             DAT_SUCCESS;
    struct sockaddr_in *sin = (struct sockaddr_in *)ia_attr.ia_address_ptr;
    ok = ok && sin->sin_family == AF_INET &&
         (ntohl(sin->sin_addr.s_addr) & 0xffffff00u) == 0x7f530000u && pa.dapl_version_major == 2 &&
         pa.dapl_version_minor == 0 && pa.is_thread_safe == DAT_FALSE &&
         ia_attr.extension_supported == DAT_EXTENSION_NONE;
    ksft_test_result(ok, "ia_query: address 127.83.0.<node>, DAPL 2.0, not thread safe");

    test_evd(&a);
    test_evd_wait_signal(&a);
    test_unconnected(&a);

    /* threshold must be 1 on an EVD fed by unsignalled completions */
    DAT_EVD_HANDLE ue;
    DAT_EP_HANDLE uep;
    DAT_EP_ATTR uattr = attr;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    uattr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    dat_evd_create(a.ia, 8, NULL, DAT_EVD_DTO_FLAG, &ue);
    dat_ep_create(a.ia, a.pz, a.rcv, ue, a.conn, &uattr, &uep);
    ksft_test_result(TYPE(dat_evd_wait(ue, 0, 2, &ev, &nmore)) == DAT_INVALID_STATE &&
                         TYPE(dat_evd_wait(ue, 0, 1, &ev, &nmore)) == DAT_TIMEOUT_EXPIRED,
                     "evd_wait on an unsignalled stream: threshold 2 -> DAT_INVALID_STATE");
    dat_ep_free(uep);
    dat_evd_free(ue);

    ksft_test_result(connect_pair(&a, &b, QUAL_BASE, 1),
                     "connect/accept: private data delivered both ways");
    /* Two IAs with a connection and a listener, idle: no spinning. */
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    usleep(1000000);
    getrusage(RUSAGE_SELF, &r1);
    long cpu_us = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1000000L +
                  (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                  (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000L +
                  (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    ksft_test_result(cpu_us < 50000, "idle progress engines: %ld us CPU in 1 s (< 50 ms)", cpu_us);
    test_connected(&a, &b);
    test_resources(&a, &b);
    test_disconnect(&a, &b);
    test_reject_unreachable_timeout(&a, &b);
    side_close(&a);
    side_close(&b);
    test_quiet_events_and_iov_limits();
    test_accept_then_peer_disconnect();
    test_accept_after_other_disconnect();
    test_peer_death();
    test_stalled_peer();
    test_big_lmr_timeout(0);
    test_big_lmr_timeout(1);
    return ksft_exit();
}
