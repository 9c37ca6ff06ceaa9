// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Teardown races: closing, unregistering and killing with RMAs in flight.
 * The module's debugfs counters (pinned_pages, rma_inflight, windows) must
 * come back to zero.  Also: window lookup cost with 10,000 windows
 * (printed, never judged).
 */
#include <signal.h>
#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define BIG (16UL << 20)

/* A loopback pair with a BIG window on each side at offset 0. */
FIXTURE(tp) {
    int srv, cli;
    uint8_t *r, *l, *u;
};

FIXTURE_SETUP(tp) {
    CHECK(connect_pair(0, 0, &self->srv, &self->cli) == 0);
    self->r = rma_window(self->srv, BIG, 0, RW);
    self->l = rma_window(self->cli, BIG, 0, RW);
    self->u = map_anon(BIG);
    CHECK(self->r && self->l && self->u);
    memset(self->r, 1, BIG);
    memset(self->l, 2, BIG);
    return KSFT_PASS;
}

/* The behaviours close the endpoints themselves: that is what they test. */
FIXTURE_TEARDOWN(tp) {}

/* Queue many asynchronous transfers of every kind. */
static int flood(struct tp_fixture *t, int n) {
    int i;

    for (i = 0; i < n; i++) {
        int r, fl = i & 1 ? SCIF_RMA_USECPU : 0;

        switch (i % 4) {
        case 0:
            r = scif_readfrom(t->cli, 0, BIG, 0, fl);
            break;
        case 1:
            r = scif_writeto(t->cli, 0, BIG, 0, fl);
            break;
        case 2:
            r = scif_vreadfrom(t->cli, t->u, BIG, 0, fl | SCIF_RMA_USECACHE);
            break;
        default:
            r = scif_vwriteto(t->cli, t->u, BIG, 0, fl);
            break;
        }
        if (r)
            return -1;
    }
    return 0;
}

TEST_F(tp, close_inflight) {
    CHECK(flood(self, 16) == 0);
    CHECK(close(self->cli) == 0);
    CHECK(close(self->srv) == 0);
    return rma_counters_zero();
}

TEST_F(tp, peer_close_inflight) {
    int mark;

    CHECK(flood(self, 16) == 0);
    CHECK(close(self->srv) == 0);
    /* The initiator's fence now reports the reset (or completion). */
    if (scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &mark) == 0)
        CHECK(scif_fence_wait(self->cli, mark) == 0 || errno == ECONNRESET);
    else
        CHECK(errno == ECONNRESET);
    CHECK(close(self->cli) == 0);
    return rma_counters_zero();
}

TEST_F(tp, unreg_inflight) {
    int mark;

    CHECK(flood(self, 8) == 0);
    CHECK(scif_unregister(self->srv, 0, BIG) == 0);
    CHECK(scif_unregister(self->cli, 0, BIG) == 0);
    CHECK(scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &mark) == 0);
    CHECK(scif_fence_wait(self->cli, mark) == 0);
    CHECK_ERR(scif_vreadfrom(self->cli, self->u, 8, 0, SCIF_RMA_SYNC), ENXIO);
    CHECK(dbg_wait("windows", 0) == 0);
    CHECK(close(self->cli) == 0 && close(self->srv) == 0);
    return rma_counters_zero();
}

static int t_kill_inflight(void) {
    int i;

    for (i = 0; i < 4; i++) {
        pid_t pid = fork();
        int st;

        CHECK(pid >= 0);
        if (pid == 0) {
            struct tp_fixture t;

            memset(&t, 0, sizeof(t));
            if (tp_setup(&t, NULL) != KSFT_PASS)
                _exit(1);
            for (;;)
                if (flood(&t, 4))
                    _exit(2);
        }
        sleep_ms(300 + 200 * i);
        CHECK(kill(pid, SIGKILL) == 0);
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFSIGNALED(st));
    }
    return rma_counters_zero();
}

/* Concurrent register/unregister/RMA/close from several threads. */
struct chaos {
    struct tp_fixture *t;
    int idx;
};

static void *chaos_fn(void *arg) {
    struct chaos *c = (struct chaos *)arg;
    uint8_t *m = map_anon(64 * PAGE);
    int i;

    if (!m)
        return NULL;
    for (i = 0; i < 200; i++) {
        off_t o = scif_register(c->t->srv, m, 64 * PAGE, 0, RW, 0);

        if (o >= 0) {
            scif_vwriteto(c->t->cli, m, 64 * PAGE, o, i & 1 ? SCIF_RMA_USECPU : 0);
            scif_vreadfrom(c->t->cli, m, 32 * PAGE, o, SCIF_RMA_SYNC);
            scif_unregister(c->t->srv, o, 64 * PAGE);
        }
    }
    return NULL;
}

TEST_F(tp, chaos) {
    struct chaos c[3];
    pthread_t th[3];
    int i;

    for (i = 0; i < 3; i++) {
        c[i].t = self;
        c[i].idx = i;
        CHECK(pthread_create(&th[i], NULL, chaos_fn, &c[i]) == 0);
    }
    sleep_ms(500);
    close(self->srv); /* mid-flight: the threads start seeing errors */
    for (i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    close(self->cli);
    return rma_counters_zero();
}

static double time_rma(int cli, uint8_t *u, off_t off, int n) {
    double t0 = now_sec();
    int i;

    for (i = 0; i < n; i++)
        if (scif_vreadfrom(cli, u, PAGE, off, SCIF_RMA_SYNC | SCIF_RMA_USECPU))
            return -1;
    return (now_sec() - t0) / n;
}

static int t_many_windows(void) {
    const int nwin = 10000;
    struct tp_fixture t;
    uint8_t *m = map_anon(PAGE * 16);
    double one, many_first, many_last;
    int i;

    CHECK(m && connect_pair(0, 0, &t.srv, &t.cli) == 0);
    t.u = map_anon(PAGE);
    CHECK(t.u);
    CHECK(scif_register(t.srv, m, PAGE, 0x1000, RW, SCIF_MAP_FIXED) == 0x1000);
    one = time_rma(t.cli, t.u, 0x1000, 2000);
    for (i = 1; i < nwin; i++)
        CHECK(scif_register(t.srv, m + (i % 16) * PAGE, PAGE, 0x1000 + 2 * i * (off_t)PAGE, RW,
                            SCIF_MAP_FIXED) >= 0);
    CHECK(dbg_counter("windows") >= nwin);
    many_first = time_rma(t.cli, t.u, 0x1000, 2000);
    many_last = time_rma(t.cli, t.u, 0x1000 + 2 * (nwin - 1) * (off_t)PAGE, 2000);
    CHECK(one > 0 && many_first > 0 && many_last > 0);
    diag("4 KiB scif_vreadfrom: 1 window %.2f us, %d windows: %.2f us (first) %.2f us (last)",
         one * 1e6, nwin, many_first * 1e6, many_last * 1e6);
    close(t.cli);
    close(t.srv);
    return rma_counters_zero();
}

static const struct scif_test tests[] = {
    {"close both ends with transfers in flight", tp_close_inflight, 0},
    {"peer closes with transfers in flight", tp_peer_close_inflight, 0},
    {"unregister windows with transfers in flight", tp_unreg_inflight, 0},
    {"SIGKILL a process with transfers in flight", t_kill_inflight, 0},
    {"threads register/RMA/unregister while the peer closes", tp_chaos, 0},
    {"10,000 windows: lookup cost printed, counters return to zero", t_many_windows, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
