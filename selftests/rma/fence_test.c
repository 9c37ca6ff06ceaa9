// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fences and ordering: a fence signal value is never visible before the
 * data of the transfers it fences; marks of either side wait for the
 * right transfers; SCIF_RMA_ORDERED publishes the last cache line last.
 */
#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define DATA (2UL << 20)
#define WOFF 0x1000000L

/* A connected pair; the server's window is DATA bytes then a flag page. */
FIXTURE(fence) {
    int srv, cli;
    uint8_t *win;  /* server memory: DATA bytes then a flag page */
    uint8_t *lwin; /* client window: flag page */
};

FIXTURE_VARIANT(fence) {
    int snode, cnode;
    int flags; /* of the transfers of signal_order */
};

FIXTURE_VARIANT_ADD(fence, cpu){.snode = 0, .cnode = 0, .flags = SCIF_RMA_USECPU};
FIXTURE_VARIANT_ADD(fence, loopback){.snode = 0, .cnode = 0, .flags = 0};
FIXTURE_VARIANT_ADD(fence, node){.snode = 1, .cnode = 0, .flags = 0};

FIXTURE_SETUP(fence) {
    int snode = variant ? variant->snode : 0, cnode = variant ? variant->cnode : 0;

    if (snode || cnode)
        REQUIRE_NODE(1);
    CHECK(connect_pair(snode, cnode, &self->srv, &self->cli) == 0);
    self->win = rma_window(self->srv, DATA + PAGE, WOFF, RW);
    self->lwin = rma_window(self->cli, PAGE, 0x2000, RW);
    CHECK(self->win && self->lwin);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(fence) {
    scif_close(self->cli);
    scif_close(self->srv);
}

/* All of buf equals v; else the first offset that does not. */
static long long not_all(const volatile uint8_t *buf, size_t len, uint8_t v) {
    size_t i;

    for (i = 0; i < len; i++)
        if (buf[i] != v)
            return (long long)i;
    return -1;
}

/*
 * Remote and local signals after asynchronous writes: whenever the signal
 * value is seen, all of the data must be there.
 */
TEST_F(fence, signal_order) {
    int cpu = variant->flags;
    uint8_t *src[2];
    int i;

    src[0] = map_anon(DATA);
    src[1] = map_anon(DATA);
    CHECK(src[0] && src[1]);
    for (i = 1; i <= 40; i++) {
        volatile uint64_t *rflag = (volatile uint64_t *)(self->win + DATA);
        volatile uint64_t *lflag = (volatile uint64_t *)(self->lwin + 8);
        uint8_t *s = src[i & 1];
        long long bad;

        memset(s, i, DATA);
        CHECK(scif_vwriteto(self->cli, s, DATA / 2, WOFF, cpu) == 0);
        CHECK(scif_vwriteto(self->cli, s + DATA / 2, DATA / 2, WOFF + DATA / 2, cpu) == 0);
        CHECK(scif_fence_signal(self->cli, 0x2008, i, WOFF + DATA, i,
                                SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE) ==
              0);
        while (*rflag != (uint64_t)i)
            ;
        bad = not_all(self->win, DATA, i);
        if (bad >= 0) {
            diag("iteration %d: remote signal visible, data byte %lld is %u", i, bad,
                 self->win[bad]);
            return KSFT_FAIL;
        }
        while (*lflag != (uint64_t)i)
            ;
    }
    return KSFT_PASS;
}

TEST_F_VARIANT(fence, signal_order, cpu);
TEST_F_VARIANT(fence, signal_order, loopback);
TEST_F_VARIANT(fence, signal_order, node);

/* A mark taken by the peer (INIT_PEER) covers transfers the client started. */
TEST_F(fence, mark_peer) {
    uint8_t *s = map_anon(DATA);
    int i, mark;

    CHECK(s);
    for (i = 1; i <= 10; i++) {
        long long bad;

        memset(s, i, DATA);
        CHECK(scif_vwriteto(self->cli, s, DATA, WOFF, 0) == 0);
        CHECK(scif_fence_mark(self->srv, SCIF_FENCE_INIT_PEER, &mark) == 0);
        CHECK(mark >= 0);
        CHECK(scif_fence_wait(self->srv, mark) == 0);
        bad = not_all(self->win, DATA, i);
        if (bad >= 0) {
            diag("iteration %d: peer fence passed, byte %lld is %u", i, bad, self->win[bad]);
            return KSFT_FAIL;
        }
        /* The signal on the server's side watches the client's RMAs. */
        CHECK(scif_fence_signal(self->srv, WOFF + DATA, i, 0, 0,
                                SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_LOCAL) == 0);
        while (*(volatile uint64_t *)(self->win + DATA) != (uint64_t)i)
            ;
    }
    return KSFT_PASS;
}

/* The last cache line of an ORDERED transfer lands after everything else. */
TEST_F(fence, ordered) {
    uint8_t *s = map_anon(DATA);
    int i;

    CHECK(s);
    for (i = 1; i <= 30; i++) {
        size_t len = DATA - (size_t)(i * 37) % 4096;
        volatile uint8_t *last = self->win + len - 1;
        long long bad;

        memset(s, i, len);
        CHECK(scif_vwriteto(self->cli, s, len, WOFF,
                            SCIF_RMA_ORDERED | (i & 1 ? SCIF_RMA_USECPU : 0)) == 0);
        while (*last != (uint8_t)i)
            ;
        bad = not_all(self->win, len, i);
        if (bad >= 0) {
            diag("iteration %d: last byte landed before byte %lld", i, bad);
            return KSFT_FAIL;
        }
    }
    return KSFT_PASS;
}

/* Marks are non-negative; waiting on an old mark returns at once. */
TEST_F(fence, marks) {
    int m1, m2;

    CHECK(scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &m1) == 0);
    CHECK(scif_vwriteto(self->cli, self->lwin, 64, WOFF, 0) == 0);
    CHECK(scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &m2) == 0);
    CHECK(m1 >= 0 && m2 >= 0 && m1 != m2);
    CHECK(scif_fence_wait(self->cli, m2) == 0);
    CHECK(scif_fence_wait(self->cli, m1) == 0);
    return KSFT_PASS;
}

/*
 * A mark that was never handed out (above the last one, or any value on an
 * endpoint that has issued nothing) covers no RMA: the wait returns at once,
 * for both sides' marks.  It used to wait forever: the sequence rebuilt from
 * the mark wrapped below zero.
 */
TEST_F(fence, mark_never_issued) {
    static const int marks[] = {1, 2, 1000, 0x3fffffff, 0x40000005, 0x7fffffff};
    size_t i;
    int m;

    for (i = 0; i < ARRAY_SIZE(marks); i++)
        CHECK(scif_fence_wait(self->cli, marks[i]) == 0);
    CHECK(scif_vwriteto(self->cli, self->lwin, 64, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &m) == 0);
    CHECK(scif_fence_wait(self->cli, m + 5) == 0);
    for (i = 0; i < ARRAY_SIZE(marks); i++)
        CHECK(scif_fence_wait(self->srv, marks[i]) == 0);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"signal never visible before its data (CPU)", FIXTURE_FN(fence, signal_order, cpu), 0},
    {"signal never visible before its data (loopback, default flags)",
     FIXTURE_FN(fence, signal_order, loopback), 0},
    {"signal never visible before its data (node 1 -> node 0, DMA when present)",
     FIXTURE_FN(fence, signal_order, node), 0},
    {"INIT_PEER mark and signal cover the peer's transfers", fence_mark_peer, 0},
    {"SCIF_RMA_ORDERED: last cache line lands last", fence_ordered, 0},
    {"marks are distinct and waiting on old marks returns", fence_marks, 0},
    {"waiting on a mark never handed out returns at once", fence_mark_never_issued, 30},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
