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

struct fx {
    int srv, cli;
    uint8_t *win;  /* server memory: DATA bytes then a flag page */
    uint8_t *lwin; /* client window: flag page */
};

static int setup(struct fx *f, int snode, int cnode) {
    if (connect_pair(snode, cnode, &f->srv, &f->cli))
        return -1;
    f->win = map_anon(DATA + PAGE);
    f->lwin = map_anon(PAGE);
    if (!f->win || !f->lwin)
        return -1;
    memset(f->win, 0, DATA + PAGE);
    memset(f->lwin, 0, PAGE);
    if (scif_register(f->srv, f->win, DATA + PAGE, WOFF, RW, SCIF_MAP_FIXED) != WOFF ||
        scif_register(f->cli, f->lwin, PAGE, 0x2000, RW, SCIF_MAP_FIXED) != 0x2000)
        return -1;
    return 0;
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
static int signal_order(int snode, int cnode, int cpu) {
    struct fx f;
    uint8_t *src[2];
    int i;

    if (snode || cnode)
        REQUIRE_NODE(1);
    CHECK(setup(&f, snode, cnode) == 0);
    src[0] = map_anon(DATA);
    src[1] = map_anon(DATA);
    CHECK(src[0] && src[1]);
    for (i = 1; i <= 40; i++) {
        volatile uint64_t *rflag = (volatile uint64_t *)(f.win + DATA);
        volatile uint64_t *lflag = (volatile uint64_t *)(f.lwin + 8);
        uint8_t *s = src[i & 1];
        long long bad;

        memset(s, i, DATA);
        CHECK(scif_vwriteto(f.cli, s, DATA / 2, WOFF, cpu) == 0);
        CHECK(scif_vwriteto(f.cli, s + DATA / 2, DATA / 2, WOFF + DATA / 2, cpu) == 0);
        CHECK(scif_fence_signal(f.cli, 0x2008, i, WOFF + DATA, i,
                                SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE) ==
              0);
        while (*rflag != (uint64_t)i)
            ;
        bad = not_all(f.win, DATA, i);
        if (bad >= 0) {
            diag("iteration %d: remote signal visible, data byte %lld is %u", i, bad, f.win[bad]);
            return KSFT_FAIL;
        }
        while (*lflag != (uint64_t)i)
            ;
    }
    return KSFT_PASS;
}

static int t_signal_cpu(void) {
    return signal_order(0, 0, SCIF_RMA_USECPU);
}
static int t_signal_dma(void) {
    return signal_order(0, 0, 0);
}
static int t_signal_node(void) {
    return signal_order(1, 0, 0);
}

/* A mark taken by the peer (INIT_PEER) covers transfers the client started. */
static int t_mark_peer(void) {
    struct fx f;
    uint8_t *s = map_anon(DATA);
    int i, mark;

    CHECK(s && setup(&f, 0, 0) == 0);
    for (i = 1; i <= 10; i++) {
        long long bad;

        memset(s, i, DATA);
        CHECK(scif_vwriteto(f.cli, s, DATA, WOFF, 0) == 0);
        CHECK(scif_fence_mark(f.srv, SCIF_FENCE_INIT_PEER, &mark) == 0);
        CHECK(mark >= 0);
        CHECK(scif_fence_wait(f.srv, mark) == 0);
        bad = not_all(f.win, DATA, i);
        if (bad >= 0) {
            diag("iteration %d: peer fence passed, byte %lld is %u", i, bad, f.win[bad]);
            return KSFT_FAIL;
        }
        /* The signal on the server's side watches the client's RMAs. */
        CHECK(scif_fence_signal(f.srv, WOFF + DATA, i, 0, 0,
                                SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_LOCAL) == 0);
        while (*(volatile uint64_t *)(f.win + DATA) != (uint64_t)i)
            ;
    }
    return KSFT_PASS;
}

/* The last cache line of an ORDERED transfer lands after everything else. */
static int t_ordered(void) {
    struct fx f;
    uint8_t *s = map_anon(DATA);
    int i;

    CHECK(s && setup(&f, 0, 0) == 0);
    for (i = 1; i <= 30; i++) {
        size_t len = DATA - (size_t)(i * 37) % 4096;
        volatile uint8_t *last = f.win + len - 1;
        long long bad;

        memset(s, i, len);
        CHECK(scif_vwriteto(f.cli, s, len, WOFF,
                            SCIF_RMA_ORDERED | (i & 1 ? SCIF_RMA_USECPU : 0)) == 0);
        while (*last != (uint8_t)i)
            ;
        bad = not_all(f.win, len, i);
        if (bad >= 0) {
            diag("iteration %d: last byte landed before byte %lld", i, bad);
            return KSFT_FAIL;
        }
    }
    return KSFT_PASS;
}

/* Marks are non-negative; waiting on an old mark returns at once. */
static int t_marks(void) {
    struct fx f;
    int m1, m2;

    CHECK(setup(&f, 0, 0) == 0);
    CHECK(scif_fence_mark(f.cli, SCIF_FENCE_INIT_SELF, &m1) == 0);
    CHECK(scif_vwriteto(f.cli, f.lwin, 64, WOFF, 0) == 0);
    CHECK(scif_fence_mark(f.cli, SCIF_FENCE_INIT_SELF, &m2) == 0);
    CHECK(m1 >= 0 && m2 >= 0 && m1 != m2);
    CHECK(scif_fence_wait(f.cli, m2) == 0);
    CHECK(scif_fence_wait(f.cli, m1) == 0);
    return KSFT_PASS;
}

/*
 * A mark that was never handed out (above the last one, or any value on an
 * endpoint that has issued nothing) covers no RMA: the wait returns at once,
 * for both sides' marks.  It used to wait forever: the sequence rebuilt from
 * the mark wrapped below zero.
 */
static int t_mark_never_issued(void) {
    static const int marks[] = {1, 2, 1000, 0x3fffffff, 0x40000005, 0x7fffffff};
    struct fx f;
    size_t i;
    int m;

    CHECK(setup(&f, 0, 0) == 0);
    for (i = 0; i < ARRAY_SIZE(marks); i++)
        CHECK(scif_fence_wait(f.cli, marks[i]) == 0);
    CHECK(scif_vwriteto(f.cli, f.lwin, 64, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(scif_fence_mark(f.cli, SCIF_FENCE_INIT_SELF, &m) == 0);
    CHECK(scif_fence_wait(f.cli, m + 5) == 0);
    for (i = 0; i < ARRAY_SIZE(marks); i++)
        CHECK(scif_fence_wait(f.srv, marks[i]) == 0);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"signal never visible before its data (CPU)", t_signal_cpu, 0},
    {"signal never visible before its data (loopback, default flags)", t_signal_dma, 0},
    {"signal never visible before its data (node 1 -> node 0, DMA when present)", t_signal_node, 0},
    {"INIT_PEER mark and signal cover the peer's transfers", t_mark_peer, 0},
    {"SCIF_RMA_ORDERED: last cache line lands last", t_ordered, 0},
    {"marks are distinct and waiting on old marks returns", t_marks, 0},
    {"waiting on a mark never handed out returns at once", t_mark_never_issued, 30},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
