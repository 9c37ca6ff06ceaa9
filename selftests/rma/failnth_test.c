// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocation failure, systematically: each call is driven with a slab
 * allocation failure injected at its 1st, 2nd, ... Nth allocation
 * (/proc/thread-self/fail-nth with failslab, as syzkaller does) until it
 * runs without one.  Every failing run must return ENOMEM (or an errno the
 * call documents), leave nothing half-done (the module's window, pin and
 * endpoint counters unchanged), and the endpoint must stay usable.
 *
 * Needs a kernel with CONFIG_FAULT_INJECTION_DEBUG_FS and CONFIG_FAILSLAB
 * (tools/build-debug-kernel); SKIPs elsewhere.  fail_page_alloc is not
 * used: a failed page allocation without __GFP_NOWARN prints a "page
 * allocation failure" report, which the VM runner counts as a splat.
 */
#include <fcntl.h>
#include "rma_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define FAILSLAB "/sys/kernel/debug/failslab"
#define MAX_NTH 4000

static int nth_fd = -1;

/* Open fail-nth and make failslab fail sleeping allocations quietly. */
static int failnth_setup(void) {
    if (access("/proc/thread-self/fail-nth", W_OK))
        return test_skip("no /proc/thread-self/fail-nth (kernel without "
                         "CONFIG_FAULT_INJECTION_DEBUG_FS: use tools/build-debug-kernel)");
    if (access(FAILSLAB "/ignore-gfp-wait", W_OK))
        return test_skip("no " FAILSLAB " (kernel without CONFIG_FAILSLAB)");
    if (access(DBG_DIR "/windows", R_OK))
        return test_skip("no " DBG_DIR "/windows (debugfs not mounted?)");
    /* Sleeping (GFP_KERNEL) allocations are what the module makes. */
    REQ(write_long(FAILSLAB "/ignore-gfp-wait", 0) == 0);
    /* No stack dump per injected failure (the runner fails on traces). */
    REQ(write_long(FAILSLAB "/verbose", 0) == 0);
    nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
    REQ(nth_fd >= 0);
    return KSFT_PASS;
}

/* Arm: the n-th slab allocation of this thread from now on fails. */
static void nth_arm(int n) {
    char b[16];
    int len = snprintf(b, sizeof(b), "%d", n);

    if (pwrite(nth_fd, b, (size_t)len, 0) != len)
        diag("fail-nth write %d: %s", n, strerror(errno));
}

/* Disarm; returns 1 if the failure was injected since nth_arm(). */
static int nth_disarm(void) {
    char b[16] = "";
    ssize_t r = pread(nth_fd, b, sizeof(b) - 1, 0);
    int injected = r > 0 && atoi(b) == 0;

    if (pwrite(nth_fd, "0", 1, 0) != 1)
        diag("fail-nth reset: %s", strerror(errno));
    return injected;
}

struct counters {
    long long windows, pinned, mappings, inflight;
};

static void counters_get(struct counters *c) {
    c->windows = dbg_counter("windows");
    c->pinned = dbg_counter("pinned_pages");
    c->mappings = dbg_counter("mappings");
    c->inflight = dbg_wait("rma_inflight", 0);
}

static int counters_same(const struct counters *a, const struct counters *b, int n) {
    if (a->windows == b->windows && a->pinned == b->pinned && a->mappings == b->mappings &&
        a->inflight == b->inflight)
        return 1;
    diag("fail-nth %d: counters windows %lld -> %lld, pinned_pages %lld -> %lld, "
         "mappings %lld -> %lld, rma_inflight %lld -> %lld",
         n, a->windows, b->windows, a->pinned, b->pinned, a->mappings, b->mappings, a->inflight,
         b->inflight);
    return 0;
}

/*
 * One call under test: do() returns 0 on success or -1 with errno; undo()
 * reverts a success (the call may succeed even with a failure injected
 * when it has a fallback).  ok_errno is a second errno the call may give.
 */
struct victim {
    int (*fn)(void *ctx);
    void (*undo)(void *ctx);
    void *ctx;
    int ok_errno;
};

static int drive(const struct victim *v, int *calls) {
    struct counters before, after;
    int n, r, e, injected;

    for (n = 1; n <= MAX_NTH; n++) {
        counters_get(&before);
        nth_arm(n);
        errno = 0;
        r = v->fn(v->ctx);
        e = errno;
        injected = nth_disarm();
        *calls = n;
        if (r == 0) {
            if (v->undo)
                v->undo(v->ctx);
            if (!injected)
                return KSFT_PASS;
            continue;
        }
        if (!injected) {
            diag("fail-nth %d: the call failed without an injected failure: %s", n, strerror(e));
            return KSFT_FAIL;
        }
        if (e != ENOMEM && e != v->ok_errno) {
            diag("fail-nth %d: errno %d (%s), expected ENOMEM", n, e, strerror(e));
            return KSFT_FAIL;
        }
        counters_get(&after);
        if (!counters_same(&before, &after, n))
            return KSFT_FAIL;
    }
    diag("still failing after %d injected failures", MAX_NTH);
    return KSFT_FAIL;
}

/* ---- the calls ---- */

struct rctx {
    int srv, cli;
    uint8_t *buf, *peer;
    off_t off;
};

static int mkpair(struct rctx *c, int snode, int cnode) {
    memset(c, 0, sizeof(*c));
    if (connect_pair(snode, cnode, &c->srv, &c->cli))
        return -1;
    c->buf = map_anon(16 * PAGE);
    c->peer = map_anon(16 * PAGE);
    if (!c->buf || !c->peer)
        return -1;
    fill(c->buf, 16 * PAGE, 1);
    fill(c->peer, 16 * PAGE, 2);
    /* The server's window the RMA calls target. */
    if (scif_register(c->srv, c->peer, 8 * PAGE, 0x200000, RW, SCIF_MAP_FIXED) != 0x200000)
        return -1;
    return 0;
}

static int do_register(void *p) {
    struct rctx *c = p;

    c->off = scif_register(c->cli, c->buf, 8 * PAGE, 0x100000, RW, SCIF_MAP_FIXED);
    return c->off < 0 ? -1 : 0;
}

static void undo_register(void *p) {
    struct rctx *c = p;

    if (scif_unregister(c->cli, c->off, 8 * PAGE))
        diag("unregister after success: %s", strerror(errno));
}

static int do_vreadfrom(void *p) {
    struct rctx *c = p;

    return scif_vreadfrom(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_vwriteto(void *p) {
    struct rctx *c = p;

    return scif_vwriteto(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_readfrom(void *p) {
    struct rctx *c = p;

    return scif_readfrom(c->cli, 0x100000, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_open_close(void *p) {
    int fd = ep_open(0);

    (void)p;
    if (fd < 0)
        return -1;
    return scif_close(fd);
}

static void *mapped;

static int do_mmap(void *p) {
    struct rctx *c = p;

    mapped = scif_mmap(NULL, 8 * PAGE, SCIF_PROT_READ, 0, c->cli, 0x200000);
    return mapped == SCIF_MMAP_FAILED ? -1 : 0;
}

/* Outside the injection: munmap itself may fail with ENOMEM (splitting). */
static void undo_mmap(void *p) {
    (void)p;
    if (scif_munmap(mapped, 8 * PAGE))
        diag("munmap after success: %s", strerror(errno));
}

static int do_send(void *p) {
    struct rctx *c = p;

    return scif_send(c->cli, c->buf, 100, SCIF_SEND_BLOCK) == 100 ? 0 : -1;
}

static void undo_send(void *p) {
    struct rctx *c = p;
    uint8_t b[100];

    if (recv_all(c->srv, b, sizeof(b)))
        diag("recv after send: %s", strerror(errno));
}

static int fence_mark;

static int do_fence_mark(void *p) {
    struct rctx *c = p;

    return scif_fence_mark(c->cli, SCIF_FENCE_INIT_SELF, &fence_mark);
}

static void undo_fence_mark(void *p) {
    struct rctx *c = p;

    if (scif_fence_wait(c->cli, fence_mark))
        diag("fence wait after mark: %s", strerror(errno));
}

/* The endpoint still moves data correctly after the failures. */
static int pair_usable(struct rctx *c) {
    uint8_t *want = map_anon(8 * PAGE);

    REQ(want);
    fill(c->buf, 8 * PAGE, 7);
    memcpy(want, c->buf, 8 * PAGE);
    REQ(scif_vwriteto(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC) == 0);
    REQ(first_diff(c->peer, want, 8 * PAGE) == -1);
    return KSFT_PASS;
}

static int run_victim(int (*fn)(void *), void (*undo)(void *), int with_reg, int ok_errno) {
    struct rctx c;
    struct victim v = {fn, undo, &c, ok_errno};
    int r, calls = 0;

    r = failnth_setup();
    if (r != KSFT_PASS)
        return r;
    REQ(mkpair(&c, 0, 1) == 0);
    if (with_reg)
        REQ(scif_register(c.cli, c.buf, 8 * PAGE, 0x100000, RW, SCIF_MAP_FIXED) == 0x100000);
    r = drive(&v, &calls);
    diag("%d runs, %d with a failure injected", calls, calls - 1);
    if (r != KSFT_PASS)
        return r;
    r = pair_usable(&c);
    scif_close(c.cli);
    scif_close(c.srv);
    if (r == KSFT_PASS)
        r = rma_counters_zero();
    return r;
}

static int t_open(void) {
    return run_victim(do_open_close, NULL, 0, 0);
}

static int t_register(void) {
    return run_victim(do_register, undo_register, 0, 0);
}

static int t_vreadfrom(void) {
    return run_victim(do_vreadfrom, NULL, 0, 0);
}

static int t_vwriteto(void) {
    return run_victim(do_vwriteto, NULL, 0, 0);
}

static int t_readfrom(void) {
    return run_victim(do_readfrom, NULL, 1, 0);
}

static int t_mmap(void) {
    return run_victim(do_mmap, undo_mmap, 0, 0);
}

static int t_send(void) {
    return run_victim(do_send, undo_send, 0, 0);
}

static int t_fence_mark(void) {
    return run_victim(do_fence_mark, undo_fence_mark, 0, 0);
}

static const struct scif_test tests[] = {
    {"fail-nth: scif_open/scif_close", t_open, 300},
    {"fail-nth: scif_register", t_register, 300},
    {"fail-nth: scif_vreadfrom", t_vreadfrom, 300},
    {"fail-nth: scif_vwriteto", t_vwriteto, 300},
    {"fail-nth: scif_readfrom", t_readfrom, 300},
    {"fail-nth: scif_mmap", t_mmap, 300},
    {"fail-nth: scif_send", t_send, 300},
    {"fail-nth: scif_fence_mark", t_fence_mark, 300},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
