// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Failures, systematically.
 *
 * Allocations: each call is driven with a slab allocation failure injected
 * at its 1st, 2nd, ... Nth allocation (/proc/thread-self/fail-nth with
 * failslab, as syzkaller does) until it runs without one.  Every failing
 * run must return ENOMEM (or an errno the call documents), leave nothing
 * half-done (the module's endpoint, window, pin, mapping and transfer
 * counters unchanged), and the endpoint must stay usable.
 *
 * The module's own functions that fail without an allocation failing (a
 * pin, a mapping context, a DMA mapping or descriptor) are marked
 * ALLOW_ERROR_INJECTION; fail_function makes their 1st, 2nd, ... Nth call
 * of this task fail the same way.  A failed pin or mapping context must
 * fail the call cleanly; a failed DMA mapping or descriptor must not fail
 * it at all (the CPU redoes what DMA did not move) and the data must be
 * right.
 *
 * Needs a kernel with CONFIG_FAULT_INJECTION_DEBUG_FS, CONFIG_FAILSLAB and
 * CONFIG_FAIL_FUNCTION (tools/build-debug-kernel); SKIPs elsewhere.
 * fail_page_alloc is not used: a failed page allocation without
 * __GFP_NOWARN prints a "page allocation failure" report, which the VM
 * runner counts as a splat.
 */
#include <fcntl.h>
#include <pthread.h>
#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define FAILSLAB "/sys/kernel/debug/failslab"
#define FAILFUNC "/sys/kernel/debug/fail_function"
#define MAX_NTH 4000

/* ---- injectors: what fails the n-th time ---- */

/*
 * arm(n) makes the n-th failure point of this thread from now on fail;
 * disarm() stops injecting and returns 1 if a failure was injected.
 */
struct injector {
    const char *what;
    void (*arm)(int n);
    int (*disarm)(void);
};

static int nth_fd = -1;

/* Open fail-nth and make failslab fail sleeping allocations quietly. */
static int failslab_setup(void) {
    if (access("/proc/thread-self/fail-nth", W_OK))
        return test_skip("no /proc/thread-self/fail-nth (kernel without "
                         "CONFIG_FAULT_INJECTION_DEBUG_FS: use tools/build-debug-kernel)");
    if (access(FAILSLAB "/ignore-gfp-wait", W_OK))
        return test_skip("no " FAILSLAB " (kernel without CONFIG_FAILSLAB)");
    if (access(DBG_DIR "/windows", R_OK))
        return test_skip("no " DBG_DIR "/windows (debugfs not mounted?)");
    /* Sleeping (GFP_KERNEL) allocations are what the module makes. */
    CHECK(write_long(FAILSLAB "/ignore-gfp-wait", 0) == 0);
    /* No stack dump per injected failure (the runner fails on traces). */
    CHECK(write_long(FAILSLAB "/verbose", 0) == 0);
    nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
    CHECK(nth_fd >= 0);
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

static const struct injector failslab = {"slab allocation", nth_arm, nth_disarm};

static char ff_func[64];

static int write_str(const char *path, const char *v) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t len = (ssize_t)strlen(v), r;

    if (fd < 0)
        return -1;
    r = write(fd, v, (size_t)len);
    close(fd);
    return r == len ? 0 : -1;
}

static int ff_write(const char *attr, long long v) {
    char path[160];

    snprintf(path, sizeof(path), FAILFUNC "/%s", attr);
    return write_long(path, v);
}

/* Does the kprobe on @func go through ftrace (kprobes/list says so)? */
static int kprobe_on_ftrace(const char *func) {
    char line[256];
    size_t len = strlen(func);
    int found = 0;
    FILE *f = fopen("/sys/kernel/debug/kprobes/list", "r");

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        char *p = strstr(line, func);

        if (p && p[len] == '+' && strstr(line, "[FTRACE]"))
            found = 1;
    }
    fclose(f);
    return found;
}

/*
 * Make fail_function inject @err (a negative errno) into @func of the
 * module, for this task only (task-filter and make-it-fail), quietly.
 * Needs the kprobe to go through ftrace: through int3 the handler runs as
 * an NMI, where in_task() is false (the task filter never lets it fail)
 * and should_fail()'s random number takes the entropy pool's lock, which
 * lockdep reports as "inconsistent {IN-NMI} usage".
 */
static int failfunc_setup(const char *func, int err) {
    char path[160], v[32];

    if (access(FAILFUNC "/inject", W_OK))
        return test_skip("no " FAILFUNC " (kernel without CONFIG_FAIL_FUNCTION: use "
                         "tools/build-debug-kernel)");
    if (access(DBG_DIR "/windows", R_OK))
        return test_skip("no " DBG_DIR "/windows (debugfs not mounted?)");
    write_str(FAILFUNC "/inject", "\n"); /* none left from a previous behaviour */
    if (write_str(FAILFUNC "/inject", func)) {
        diag("%s cannot be injected (%s): is it marked ALLOW_ERROR_INJECTION?", func,
             strerror(errno));
        return KSFT_FAIL;
    }
    if (!kprobe_on_ftrace(func)) {
        write_str(FAILFUNC "/inject", "\n");
        return test_skip("the kprobe on %s does not go through ftrace (kernel without "
                         "CONFIG_KPROBES_ON_FTRACE): fail_function would run as an NMI",
                         func);
    }
    snprintf(ff_func, sizeof(ff_func), "%s", func);
    snprintf(path, sizeof(path), FAILFUNC "/%s/retval", func);
    snprintf(v, sizeof(v), "%#lx", (unsigned long)(long)err);
    CHECK(write_str(path, v) == 0);
    CHECK(ff_write("times", 0) == 0);
    CHECK(ff_write("probability", 100) == 0);
    CHECK(ff_write("interval", 1) == 0);
    CHECK(ff_write("verbose", 0) == 0);
    CHECK(write_str(FAILFUNC "/task-filter", "Y") == 0);
    CHECK(write_str("/proc/thread-self/make-it-fail", "1") == 0);
    return KSFT_PASS;
}

static void failfunc_teardown(void) {
    ff_write("times", 0);
    write_str("/proc/thread-self/make-it-fail", "0");
    write_str(FAILFUNC "/inject", "\n");
}

/* Arm: the n-th call of the function by this task fails ("space" counts). */
static void ff_arm(int n) {
    if (ff_write("space", n) || ff_write("times", 1))
        diag("fail_function arm %d: %s", n, strerror(errno));
}

static int ff_disarm(void) {
    long long left = read_long(FAILFUNC "/times");

    if (ff_write("times", 0))
        diag("fail_function disarm: %s", strerror(errno));
    return left == 0;
}

static const struct injector failfunc = {"failed call", ff_arm, ff_disarm};

/* ---- what must not change when a call fails ---- */

struct counters {
    long long endpoints, windows, pinned, mappings, inflight; /* pinned: cache's too */
};

/* After the transfers in flight are done (async calls queue them). */
static void counters_get(struct counters *c) {
    c->inflight = dbg_wait("rma_inflight", 0);
    c->endpoints = dbg_endpoints();
    c->windows = dbg_counter("windows");
    c->pinned = dbg_counter("pinned_pages");
    c->mappings = dbg_counter("mappings");
}

/* Wait (up to ~20 s) for endpoints torn down asynchronously, then compare. */
static int counters_same(const struct counters *a, struct counters *b, int n) {
    int i;

    for (i = 0; i < 2000 && b->endpoints != a->endpoints; i++) {
        sleep_ms(10);
        counters_get(b);
    }
    if (!memcmp(a, b, sizeof(*a)))
        return 1;
    diag("failure %d: counters endpoints %lld -> %lld, windows %lld -> %lld, pinned_pages %lld -> "
         "%lld, mappings %lld -> %lld, rma_inflight %lld -> %lld",
         n, a->endpoints, b->endpoints, a->windows, b->windows, a->pinned, b->pinned, a->mappings,
         b->mappings, a->inflight, b->inflight);
    if (a->endpoints != b->endpoints)
        dbg_endpoints_dump();
    return 0;
}

/*
 * One call under test: fn() returns 0 on success or -1 with errno; undo()
 * reverts a success; prep() runs before each try, outside the injection
 * (e.g. starts the peer of an accept).  ok_errno is a second errno the
 * call may give.  A call with a fallback (must_succeed) must succeed even
 * with a failure injected, and check() (when set) must then find its data
 * right.
 */
struct victim {
    int (*fn)(void *ctx);
    void (*undo)(void *ctx);
    void *ctx;
    int ok_errno;
    void (*prep)(void *ctx);
    int (*after)(void *ctx); /* after each try, outside the injection: KSFT_* */
    int must_succeed;
    int (*check)(void *ctx);
};

static int drive(const struct injector *inj, const struct victim *v, int *calls) {
    struct counters before, after;
    int n, r, e, injected;

    for (n = 1; n <= MAX_NTH; n++) {
        counters_get(&before);
        if (v->prep)
            v->prep(v->ctx);
        inj->arm(n);
        errno = 0;
        r = v->fn(v->ctx);
        e = errno;
        injected = inj->disarm();
        *calls = n;
        if (v->after && v->after(v->ctx) != KSFT_PASS)
            return KSFT_FAIL;
        if (r == 0) {
            if (v->check && v->check(v->ctx) != KSFT_PASS) {
                diag("%s %d: wrong data after the call", inj->what, n);
                return KSFT_FAIL;
            }
            if (v->undo)
                v->undo(v->ctx);
            if (!injected)
                return KSFT_PASS;
            continue;
        }
        if (!injected) {
            diag("%s %d: the call failed without an injected failure: %s", inj->what, n,
                 strerror(e));
            return KSFT_FAIL;
        }
        if (v->must_succeed) {
            diag("%s %d: the call failed (%s) instead of falling back", inj->what, n, strerror(e));
            return KSFT_FAIL;
        }
        if (e != ENOMEM && e != v->ok_errno) {
            diag("%s %d: errno %d (%s), expected ENOMEM", inj->what, n, e, strerror(e));
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
    int lep, fd; /* listener and spare endpoint (endpoint calls) */
    uint16_t port;
    pthread_t th;         /* the peer of a connect or accept */
    int th_ret, th_errno; /* its result */
    volatile int th_done; /* set once th_ret/th_errno are final */
    int th_fd;            /* its endpoint */
    volatile int stop;    /* ends the acceptor */
};

static int mkpair(struct rctx *c, int snode, int cnode) {
    memset(c, 0, sizeof(*c));
    c->lep = c->fd = c->th_fd = -1;
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

static int do_unregister(void *p) {
    struct rctx *c = p;

    return scif_unregister(c->cli, 0x100000, 8 * PAGE);
}

static void undo_unregister(void *p) {
    struct rctx *c = p;

    if (scif_register(c->cli, c->buf, 8 * PAGE, 0x100000, RW, SCIF_MAP_FIXED) != 0x100000)
        diag("register after unregister: %s", strerror(errno));
}

static int do_vreadfrom(void *p) {
    struct rctx *c = p;

    return scif_vreadfrom(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_vreadfrom_cached(void *p) {
    struct rctx *c = p;

    return scif_vreadfrom(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC | SCIF_RMA_USECACHE);
}

static int do_vwriteto(void *p) {
    struct rctx *c = p;

    return scif_vwriteto(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_readfrom(void *p) {
    struct rctx *c = p;

    return scif_readfrom(c->cli, 0x100000, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

static int do_writeto(void *p) {
    struct rctx *c = p;

    return scif_writeto(c->cli, 0x100000, 8 * PAGE, 0x200000, SCIF_RMA_SYNC);
}

/* Asynchronous: drive() waits for rma_inflight 0 before it compares. */
static int do_vreadfrom_async(void *p) {
    struct rctx *c = p;

    return scif_vreadfrom(c->cli, c->buf, 8 * PAGE, 0x200000, 0);
}

static int do_vwriteto_async(void *p) {
    struct rctx *c = p;

    return scif_vwriteto(c->cli, c->buf, 8 * PAGE, 0x200000, 0);
}

static int do_readfrom_async(void *p) {
    struct rctx *c = p;

    return scif_readfrom(c->cli, 0x100000, 8 * PAGE, 0x200000, 0);
}

static int do_writeto_async(void *p) {
    struct rctx *c = p;

    return scif_writeto(c->cli, 0x100000, 8 * PAGE, 0x200000, 0);
}

static int do_open_close(void *p) {
    int fd = ep_open(0);

    (void)p;
    if (fd < 0)
        return -1;
    return scif_close(fd);
}

/* A fresh endpoint in c->fd, bound when @bind. */
static void spare_ep(struct rctx *c, int bind) {
    if (c->fd >= 0)
        scif_close(c->fd);
    c->fd = ep_open(0);
    if (c->fd < 0)
        diag("open: %s", strerror(errno));
    else if (bind && scif_bind(c->fd, 0) < 0)
        diag("bind: %s", strerror(errno));
}

static int do_bind(void *p) {
    struct rctx *c = p;

    return scif_bind(c->fd, 0) < 0 ? -1 : 0;
}

static void undo_bind(void *p) {
    spare_ep(p, 0);
}

static int do_listen(void *p) {
    struct rctx *c = p;

    return scif_listen(c->fd, 4);
}

static void undo_listen(void *p) {
    spare_ep(p, 1);
}

/*
 * Accepts (and closes) every connection to c->lep until c->stop.  Polls
 * rather than blocking in scif_accept(): closing the listener from another
 * thread does not end an ioctl in progress on it.
 */
static void *acceptor(void *arg) {
    struct rctx *c = arg;
    struct scif_portID peer;
    int nep;

    while (!c->stop) {
        struct scif_pollepd pe = {c->lep, SCIF_POLLIN, 0};

        if (scif_poll(&pe, 1, 50) == 1 && scif_accept(c->lep, &peer, &nep, 0) == 0)
            scif_close(nep);
    }
    return NULL;
}

static int do_connect(void *p) {
    struct rctx *c = p;
    struct scif_portID dst = {0, c->port};

    return scif_connect(c->fd, &dst) < 0 ? -1 : 0;
}

static void undo_connect(void *p) {
    spare_ep(p, 0);
}

/* The peer of an accept: connects c->th_fd to the listener. */
static void *connector(void *arg) {
    struct rctx *c = arg;
    struct scif_portID dst = {0, c->port};

    c->th_ret = scif_connect(c->th_fd, &dst);
    c->th_errno = errno;
    __atomic_store_n(&c->th_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void prep_accept(void *p) {
    struct rctx *c = p;
    struct scif_pollepd pe = {c->lep, SCIF_POLLIN, 0};

    c->th_done = 0;
    c->th_fd = ep_open(1);
    if (c->th_fd < 0 || pthread_create(&c->th, NULL, connector, c))
        diag("connector: %s", strerror(errno));
    /* The request is queued before the accept (up to ~20 s). */
    if (scif_poll(&pe, 1, 20000) != 1)
        diag("no connection request queued: %s", strerror(errno));
}

static int accepted = -1;

static int do_accept(void *p) {
    struct rctx *c = p;
    struct scif_portID peer;

    return scif_accept(c->lep, &peer, &accepted, SCIF_ACCEPT_SYNC);
}

/*
 * After each accept: a failure either left the request queued (libscif
 * opens the new descriptor before it takes one, so a failed open takes
 * nothing), and a later accept gets it, or refused it; the connector then
 * ends connected or with ECONNREFUSED, nothing else (up to ~20 s).
 */
static int after_accept(void *p) {
    struct rctx *c = p;
    struct scif_portID peer;
    int i, nep, r = KSFT_PASS;

    for (i = 0; i < 2000 && !__atomic_load_n(&c->th_done, __ATOMIC_ACQUIRE); i++) {
        if (scif_accept(c->lep, &peer, &nep, 0) == 0)
            scif_close(nep);
        else
            sleep_ms(10);
    }
    if (!__atomic_load_n(&c->th_done, __ATOMIC_ACQUIRE)) {
        diag("the connector neither connected nor was refused");
        return KSFT_FAIL; /* its thread is left: the behaviour's process ends */
    }
    pthread_join(c->th, NULL);
    if (c->th_ret < 0 && c->th_errno != ECONNREFUSED) {
        diag("the connector failed with %s, not ECONNREFUSED", strerror(c->th_errno));
        r = KSFT_FAIL;
    }
    scif_close(c->th_fd);
    c->th_fd = -1;
    return r;
}

static void undo_accept(void *p) {
    (void)p;
    scif_close(accepted);
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

/* A message waits in c->srv; a failed recv must leave all of it there. */
static int do_recv(void *p) {
    struct rctx *c = p;
    uint8_t b[100];

    if (scif_recv(c->srv, b, sizeof(b), SCIF_RECV_BLOCK) != (int)sizeof(b))
        return -1;
    if (memcmp(b, c->buf, sizeof(b))) {
        errno = EBADMSG; /* bytes lost or changed by a failed try */
        return -1;
    }
    return 0;
}

static void undo_recv(void *p) {
    struct rctx *c = p;

    if (send_all(c->cli, c->buf, 100))
        diag("send after recv: %s", strerror(errno));
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

static int do_fence_signal(void *p) {
    struct rctx *c = p;

    return scif_fence_signal(c->cli, 0x100000, 0x5ca1ab1e, 0, 0,
                             SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL);
}

/* The signal is written once the (no) earlier RMAs are done. */
static int check_fence_signal(void *p) {
    struct rctx *c = p;
    int i;

    for (i = 0; i < 2000 && *(volatile uint64_t *)c->buf != 0x5ca1ab1e; i++)
        sleep_ms(10);
    return *(volatile uint64_t *)c->buf == 0x5ca1ab1e ? KSFT_PASS : KSFT_FAIL;
}

static void undo_fence_signal(void *p) {
    struct rctx *c = p;

    memset(c->buf, 0, 8);
}

static int do_get_nodeids(void *p) {
    uint16_t nodes[8], self;

    (void)p;
    return scif_get_nodeIDs(nodes, 8, &self) > 0 ? 0 : -1;
}

/* The endpoint still moves data correctly after the failures. */
static int pair_usable(struct rctx *c) {
    uint8_t *want = map_anon(8 * PAGE);

    CHECK(want);
    fill(c->buf, 8 * PAGE, 7);
    memcpy(want, c->buf, 8 * PAGE);
    CHECK(scif_vwriteto(c->cli, c->buf, 8 * PAGE, 0x200000, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(c->peer, want, 8 * PAGE) == -1);
    munmap(want, 8 * PAGE);
    return KSFT_PASS;
}

enum {
    WITH_REG = 1,      /* the client registers c->buf at 0x100000 */
    WITH_MSG = 2,      /* a 100-byte message waits in c->srv */
    WITH_EP = 4,       /* a spare endpoint in c->fd */
    WITH_BOUND = 8,    /* ... bound */
    WITH_LISTENER = 16 /* a listener on node 0 (c->lep, c->port) */
};

static int run_with(const struct injector *inj, struct victim *v, int with, int *injected) {
    struct rctx c;
    int r, calls = 0, acc = 0, mark;
    pthread_t th;

    CHECK(mkpair(&c, 0, 1) == 0);
    v->ctx = &c;
    if (with & WITH_REG)
        CHECK(scif_register(c.cli, c.buf, 8 * PAGE, 0x100000, RW, SCIF_MAP_FIXED) == 0x100000);
    if (with & WITH_MSG)
        CHECK(send_all(c.cli, c.buf, 100) == 0);
    if (with & WITH_EP)
        spare_ep(&c, with & WITH_BOUND);
    if (with & WITH_LISTENER) {
        c.lep = make_listener(0, 0, 16, &c.port);
        CHECK(c.lep >= 0);
        /* The connect victim needs an acceptor; the accept victim is one. */
        if (v->fn == do_connect) {
            CHECK(pthread_create(&th, NULL, acceptor, &c) == 0);
            acc = 1;
        }
    }
    r = drive(inj, v, &calls);
    /*
     * The last (successful) run of an asynchronous call may still be moving
     * c.buf: wait for it before anything touches the buffers.
     */
    if (scif_fence_mark(c.cli, SCIF_FENCE_INIT_SELF, &mark) == 0 && scif_fence_wait(c.cli, mark))
        diag("fence wait after the runs: %s", strerror(errno));
    dbg_wait("rma_inflight", 0);
    diag("%d runs, %d with a %s injected", calls, calls - 1, inj->what);
    *injected = calls - 1;
    if (c.fd >= 0)
        scif_close(c.fd);
    if (acc) {
        c.stop = 1;
        pthread_join(th, NULL);
    }
    if (c.lep >= 0)
        scif_close(c.lep);
    if (r != KSFT_PASS)
        return r;
    r = pair_usable(&c);
    scif_close(c.cli);
    scif_close(c.srv);
    if (r == KSFT_PASS)
        r = all_counters_zero();
    return r;
}

static int run_victim(int (*fn)(void *), void (*undo)(void *), int with, int ok_errno) {
    struct victim v = {.fn = fn, .undo = undo, .ok_errno = ok_errno};
    int r = failslab_setup(), injected;

    if (r != KSFT_PASS)
        return r;
    if (fn == do_accept) {
        v.prep = prep_accept;
        v.after = after_accept;
    }
    if (fn == do_fence_signal)
        v.check = check_fence_signal;
    return run_with(&failslab, &v, with, &injected);
}

static int t_open(void) {
    return run_victim(do_open_close, NULL, 0, 0);
}

static int t_bind(void) {
    return run_victim(do_bind, undo_bind, WITH_EP, 0);
}

static int t_listen(void) {
    return run_victim(do_listen, undo_listen, WITH_EP | WITH_BOUND, 0);
}

static int t_connect(void) {
    return run_victim(do_connect, undo_connect, WITH_EP | WITH_LISTENER, 0);
}

static int t_accept(void) {
    return run_victim(do_accept, undo_accept, WITH_LISTENER, 0);
}

static int t_register(void) {
    return run_victim(do_register, undo_register, 0, 0);
}

static int t_unregister(void) {
    return run_victim(do_unregister, undo_unregister, WITH_REG, 0);
}

/* ---- the small synchronous path allocates nothing ---- */

/* 4 KiB or 8-page synchronous CPU calls of the pair (docs/rma.md "Transfers"). */
static int small_call(struct rctx *c, int which, size_t len) {
    const int f = SCIF_RMA_SYNC | SCIF_RMA_USECPU;

    switch (which) {
    case 0:
        return scif_vreadfrom(c->cli, c->buf, len, 0x200000, f);
    case 1:
        return scif_vwriteto(c->cli, c->buf, len, 0x200000, f);
    case 2:
        return scif_readfrom(c->cli, 0x100000, len, 0x200000, f);
    case 3:
        return scif_writeto(c->cli, 0x100000, len, 0x200000, f);
    default:
        return scif_vreadfrom(c->cli, c->buf, len, 0x200000, f | SCIF_RMA_USECACHE);
    }
}

/*
 * With this thread's next slab allocation armed to fail, every 4 KiB
 * synchronous CPU call succeeds and leaves the failure unused: the path
 * allocates nothing.  Control, first: an 8-page scif_vreadfrom (its page
 * array is allocated) does use it, so the probe sees allocations.
 */
static int t_no_alloc_4k(void) {
    static const char *const names[] = {"scif_vreadfrom", "scif_vwriteto", "scif_readfrom",
                                        "scif_writeto", "scif_vreadfrom USECACHE"};
    struct rctx c;
    int r = failslab_setup(), i, rep;

    if (r != KSFT_PASS)
        return r;
    CHECK(mkpair(&c, 0, 1) == 0);
    CHECK(scif_register(c.cli, c.buf, 8 * PAGE, 0x100000, RW, SCIF_MAP_FIXED) == 0x100000);
    CHECK(small_call(&c, 0, 8 * PAGE) == 0);
    nth_arm(1);
    r = small_call(&c, 0, 8 * PAGE);
    if (!nth_disarm() || r == 0) {
        diag("an 8-page scif_vreadfrom did not fail its armed allocation (returned %d)", r);
        return KSFT_FAIL;
    }
    for (i = 0; i < 5; i++) {
        /* Warm up: first uses may set things up (the cache entry, ...). */
        CHECK(small_call(&c, i, PAGE) == 0);
        for (rep = 0; rep < 20; rep++) {
            nth_arm(1);
            errno = 0;
            r = small_call(&c, i, PAGE);
            if (nth_disarm() || r) {
                diag("4 KiB %s: an allocation (returned %d, %s)", names[i], r, strerror(errno));
                return KSFT_FAIL;
            }
        }
    }
    CHECK(pattern_check(c.buf, PAGE, 2, 0) == -1);
    scif_close(c.cli);
    scif_close(c.srv);
    return KSFT_PASS;
}

static int t_vreadfrom(void) {
    return run_victim(do_vreadfrom, NULL, 0, 0);
}

static int t_vreadfrom_cached(void) {
    return run_victim(do_vreadfrom_cached, NULL, 0, 0);
}

static int t_vwriteto(void) {
    return run_victim(do_vwriteto, NULL, 0, 0);
}

static int t_readfrom(void) {
    return run_victim(do_readfrom, NULL, WITH_REG, 0);
}

static int t_writeto(void) {
    return run_victim(do_writeto, NULL, WITH_REG, 0);
}

static int t_vreadfrom_async(void) {
    return run_victim(do_vreadfrom_async, NULL, 0, 0);
}

static int t_vwriteto_async(void) {
    return run_victim(do_vwriteto_async, NULL, 0, 0);
}

static int t_readfrom_async(void) {
    return run_victim(do_readfrom_async, NULL, WITH_REG, 0);
}

static int t_writeto_async(void) {
    return run_victim(do_writeto_async, NULL, WITH_REG, 0);
}

static int t_mmap(void) {
    return run_victim(do_mmap, undo_mmap, 0, 0);
}

static int t_send(void) {
    return run_victim(do_send, undo_send, 0, 0);
}

static int t_recv(void) {
    return run_victim(do_recv, undo_recv, WITH_MSG, 0);
}

static int t_fence_mark(void) {
    return run_victim(do_fence_mark, undo_fence_mark, 0, 0);
}

static int t_fence_signal(void) {
    return run_victim(do_fence_signal, undo_fence_signal, WITH_REG, 0);
}

static int t_get_nodeids(void) {
    return run_victim(do_get_nodeids, NULL, 0, 0);
}

/* ---- the module's own failure points (fail_function) ---- */

/* The DMA fallback moved the right bytes (vwriteto of c->buf to the peer). */
static int check_written(void *p) {
    struct rctx *c = p;

    return first_diff(c->peer, c->buf, 8 * PAGE) == -1 ? KSFT_PASS : KSFT_FAIL;
}

/* New data for each try, so a try that moved nothing is seen. */
static unsigned int try_seed = 100;

static void prep_new_data(void *p) {
    struct rctx *c = p;

    fill(c->buf, 8 * PAGE, try_seed++);
}

static int run_func(const char *func, int err, int (*fn)(void *), void (*undo)(void *), int with,
                    int must_succeed) {
    struct victim v = {.fn = fn, .undo = undo, .must_succeed = must_succeed};
    long long fb0, fb1;
    int r, injected = 0;

    if (must_succeed && !swdma_loaded())
        return test_skip("%s runs only with a DMA channel (the [dma] pass)", func);
    r = failfunc_setup(func, err);
    if (r != KSFT_PASS)
        return r;
    if (must_succeed) {
        v.prep = prep_new_data;
        v.check = check_written;
    }
    fb0 = dbg_dma_value("fallbacks");
    r = run_with(&failfunc, &v, with, &injected);
    fb1 = dbg_dma_value("fallbacks");
    failfunc_teardown();
    if (r == KSFT_PASS && !injected) {
        diag("%s was never failed: the call does not reach it", func);
        r = KSFT_FAIL;
    }
    if (r == KSFT_PASS && must_succeed && fb1 <= fb0) {
        diag("no DMA fallback counted (%lld -> %lld): %s was never reached", fb0, fb1, func);
        r = KSFT_FAIL;
    }
    return r;
}

static int t_ff_pin_register(void) {
    return run_func("scif_pin_user", -ENOMEM, do_register, undo_register, 0, 0);
}

static int t_ff_pin_vreadfrom(void) {
    return run_func("scif_pin_user", -ENOMEM, do_vreadfrom, NULL, 0, 0);
}

static int t_ff_pin_vreadfrom_cached(void) {
    return run_func("scif_pin_user", -ENOMEM, do_vreadfrom_cached, NULL, 0, 0);
}

static int t_ff_pin_vwriteto_async(void) {
    return run_func("scif_pin_user", -ENOMEM, do_vwriteto_async, NULL, 0, 0);
}

static int t_ff_mmap_ctx(void) {
    return run_func("scif_mmap_ctx_new", -ENOMEM, do_mmap, undo_mmap, 0, 0);
}

static int t_ff_dma_map(void) {
    return run_func("scif_dma_map_chunk", -ENOMEM, do_vwriteto, NULL, 0, 1);
}

static int t_ff_dma_queue(void) {
    return run_func("scif_dma_queue_chunk", -EIO, do_vwriteto, NULL, 0, 1);
}

static int t_ff_dma_map_readfrom(void) {
    return run_func("scif_dma_map_chunk", -ENOMEM, do_writeto, NULL, WITH_REG, 1);
}

static const struct scif_test tests[] = {
    {"fail-nth: scif_open/scif_close", t_open, 300},
    {"fail-nth: scif_bind", t_bind, 300},
    {"fail-nth: scif_listen", t_listen, 300},
    {"fail-nth: scif_connect", t_connect, 300},
    {"fail-nth: scif_accept (the connector is refused)", t_accept, 300},
    {"fail-nth: scif_register", t_register, 300},
    {"fail-nth: scif_unregister", t_unregister, 300},
    {"fail-nth: scif_vreadfrom", t_vreadfrom, 300},
    {"fail-nth: scif_vreadfrom with the registration cache", t_vreadfrom_cached, 300},
    {"fail-nth: scif_vwriteto", t_vwriteto, 300},
    {"fail-nth: scif_readfrom", t_readfrom, 300},
    {"fail-nth: scif_writeto", t_writeto, 300},
    {"fail-nth: scif_vreadfrom, asynchronous", t_vreadfrom_async, 300},
    {"fail-nth: scif_vwriteto, asynchronous", t_vwriteto_async, 300},
    {"fail-nth: scif_readfrom, asynchronous", t_readfrom_async, 300},
    {"fail-nth: scif_writeto, asynchronous", t_writeto_async, 300},
    {"fail-nth: scif_mmap", t_mmap, 300},
    {"fail-nth: scif_send", t_send, 300},
    {"fail-nth: scif_recv (no byte lost)", t_recv, 300},
    {"fail-nth: scif_fence_mark", t_fence_mark, 300},
    {"fail-nth: scif_fence_signal", t_fence_signal, 300},
    {"fail-nth: scif_get_nodeIDs", t_get_nodeids, 300},
    {"fail-nth: 4 KiB synchronous CPU transfers allocate nothing", t_no_alloc_4k, 300},
    {"fail_function: scif_pin_user in scif_register", t_ff_pin_register, 300},
    {"fail_function: scif_pin_user in scif_vreadfrom", t_ff_pin_vreadfrom, 300},
    {"fail_function: scif_pin_user in scif_vreadfrom with the cache", t_ff_pin_vreadfrom_cached,
     300},
    {"fail_function: scif_pin_user in an asynchronous scif_vwriteto", t_ff_pin_vwriteto_async, 300},
    {"fail_function: scif_mmap_ctx_new in scif_mmap", t_ff_mmap_ctx, 300},
    {"fail_function: scif_dma_map_chunk falls back to the CPU", t_ff_dma_map, 300},
    {"fail_function: scif_dma_queue_chunk falls back to the CPU", t_ff_dma_queue, 300},
    {"fail_function: scif_dma_map_chunk in scif_writeto", t_ff_dma_map_readfrom, 300},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
