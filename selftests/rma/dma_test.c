// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The DMA path under load and under faults (issue 8, items 3 and 4).
 * Every behaviour needs the software DMA engine (the [dma] pass of
 * run-suite) and node 1: only DMA between nodes without SCIF_RMA_SYNC is
 * asynchronous.  The engine's faults are module parameters of scif_swdma
 * (fail_submit, stall, delay_ms, parked); every behaviour turns them off
 * on entry and on success.  The stall test shortens scif's batch timeout
 * (dma_timeout_ms).
 *
 *  - asynchronous v* pins are long-term pins charged to RLIMIT_MEMLOCK;
 *  - no more than 64 asynchronous transfers per endpoint, whatever the
 *    number of threads;
 *  - one endpoint's long queue does not hold back another's transfer;
 *  - a submit failing mid-batch: the descriptors already submitted run and
 *    are waited for before the CPU redoes the batch, none runs later;
 *  - a channel that never completes: callers sleep interruptibly (never
 *    in D state), time out, the channel is reset, the data is right;
 *  - a signal ends a DMA wait with EINTR; the late completion only ever
 *    writes pages the batch still holds.
 */
#include <linux/userfaultfd.h>
#include <sys/syscall.h>

#include "scif_test.h"

#define WIN (1UL << 20)
#define ROFF 0x10000000L
#define write_param write_long
#define read_param read_long

/*
 * The fixture: the RMA pair of the library, server on node 1 with a WIN
 * byte window at ROFF, client on node 0, once the DMA engine is there.
 */
FIXTURE(dma) {
    struct rma_pair p;
};

FIXTURE_SETUP(dma) {
    uint8_t *r, *u;

    NEED_DMA();
    /*
     * Fragmented pages: a DMA transfer takes one descriptor per physically
     * contiguous run, and submit_fails and eintr_late need several.
     */
    r = map_anon_fragmented(WIN);
    u = map_anon_fragmented(WIN);
    CHECK(r && u);
    CHECK(rma_pair_open(&self->p, r, u, WIN, ROFF) == 0);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(dma) {
    rma_pair_close(&self->p);
}

/* Another pair like the fixture's, for the behaviours that need several. */
static int open_pair(struct rma_pair *p) {
    return rma_pair_open(p, NULL, NULL, WIN, ROFF);
}

/* VmPin of this process in pages, or -1. */
static long vmpin_pages(void) {
    char line[128];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / (long)(PAGE / 1024);
}

/* Wait (bounded) for a parameter or counter reader to reach at least @want. */
static long wait_at_least(long (*get)(void), long want) {
    long v = get();
    int i;

    for (i = 0; i < 2000 && v < want; i++) {
        sleep_ms(5);
        v = get();
    }
    return v;
}

/* Wait (bounded) for a reader to get below @want. */
static long wait_below(long (*get)(void), long want) {
    long v = get();
    int i;

    for (i = 0; i < 2000 && v >= want; i++) {
        sleep_ms(10);
        v = get();
    }
    return v;
}

static long swdma_copied(void) {
    return read_param(SWDMA_PARAM "bytes_copied");
}
static long parked(void) {
    return read_param(SWDMA_PARAM "parked");
}
static long batches(void) {
    return (long)dbg_dma_value("batches");
}

/*
 * Item 3: pins of an asynchronous v* call outlive the call, so they are
 * long-term pins charged to RLIMIT_MEMLOCK like windows (ENOMEM past it
 * without CAP_IPC_LOCK); synchronous calls pin short-term, uncharged.
 */
static int t_async_memlock(void) {
    struct rma_pair p;
    pid_t pid;
    int st;

    NEED_DMA();
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit rl;
        long base;

        if (open_pair(&p) || dma_ready(&p))
            _exit(10);
        base = vmpin_pages();
        if (base < 0)
            _exit(10);
        rl.rlim_cur = rl.rlim_max = (base + 16) * PAGE;
        if (setrlimit(RLIMIT_MEMLOCK, &rl) || setuid(65534))
            _exit(10);
        fill(p.rbuf, WIN, 71);
        /* Within the limit: queued, charged until complete. */
        if (scif_vreadfrom(p.cli, p.ubuf, 8 * PAGE, ROFF, 0) || fence_all(p.cli))
            _exit(1);
        if (memcmp(p.ubuf, p.rbuf, 8 * PAGE))
            _exit(2);
        if (vmpin_pages() != base)
            _exit(3);
        errno = 0;
        if (scif_vreadfrom(p.cli, p.ubuf, 32 * PAGE, ROFF, 0) != -1 || errno != ENOMEM)
            _exit(4);
        if (scif_vwriteto(p.cli, p.ubuf, 32 * PAGE, ROFF, 0) != -1 || errno != ENOMEM)
            _exit(5);
        /* Synchronous: short-term pins, not charged. */
        memset(p.ubuf, 0, 32 * PAGE);
        if (scif_vreadfrom(p.cli, p.ubuf, 32 * PAGE, ROFF, SCIF_RMA_SYNC) ||
            memcmp(p.ubuf, p.rbuf, 32 * PAGE))
            _exit(6);
        if (vmpin_pages() != base)
            _exit(3);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        diag("child status %#x (1: small async failed, 2: data, 3: VmPin not back, "
             "4/5: no ENOMEM past RLIMIT_MEMLOCK, 6: sync failed, 10: setup)",
             st);
        return KSFT_FAIL;
    }
    return rma_counters_zero();
}

/* Name of the kernel function thread @tid sleeps in, or "". */
static void thread_wchan(pid_t tid, char *buf, size_t len) {
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)tid);
    buf[0] = 0;
    f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(buf, (int)len, f))
        buf[0] = 0;
    fclose(f);
}

struct uffd_job {
    struct rma_pair *p;
    uint8_t *dst;
    pid_t tid;
    int ret, err, done;
};

static void *uffd_thread(void *arg) {
    struct uffd_job *j = arg;

    __atomic_store_n(&j->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    j->ret = scif_vreadfrom(j->p->cli, j->dst, PAGE, ROFF, 0);
    j->err = errno;
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Resolve pending userfaults of [base, base + 2 pages); count them. */
static int uffd_serve(int uffd, uint8_t *base, int resolve, int *faults, int *which) {
    struct uffd_msg msg;

    while (read(uffd, &msg, sizeof(msg)) == sizeof(msg)) {
        if (msg.event != UFFD_EVENT_PAGEFAULT)
            continue;
        which[(*faults)++ & 1] = (int)((msg.arg.pagefault.address - (uintptr_t)base) / PAGE);
    }
    if (errno != EAGAIN)
        return -1;
    if (resolve) {
        struct uffdio_zeropage z = {
            .range = {.start = (uintptr_t)base, .len = 2 * PAGE},
        };

        /* EEXIST for pages already there; both faults are woken. */
        if (ioctl(uffd, UFFDIO_ZEROPAGE, &z) && errno != EEXIST)
            return -1;
    }
    return 0;
}

/*
 * Item 3: the per-endpoint bound of 64 is taken atomically with its check.
 * 63 transfers are queued on a stalled engine; two threads then start one
 * each, into memory whose first touch blocks (userfaultfd) while it is
 * pinned.  Only one may get past the bound: the other must wait for a slot
 * before pinning.  (The check once was separate from the count, so both
 * passed it and the endpoint got 65.)  Where a long-term pin cannot wait
 * for a userfault (6.1), the pin fails with EFAULT instead of blocking, so
 * the slot is given back and the second thread fails the same way; the
 * count must not pass 64 either way.
 */
TEST_F(dma, bound_atomic) {
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffd_job j[2];
    pthread_t th[2];
    struct rma_pair *p = &self->p, kick;
    uint8_t *u;
    int uffd, i, faults = 0, which[2] = {-1, -1}, decided = 0;
    long long max;

    CHECK(open_pair(&kick) == 0);
    CHECK(dma_ready(p) == 0);
    CHECK(dbg_wait("rma_inflight", 0) == 0);
    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (uffd < 0)
        return test_skip("userfaultfd: %s", strerror(errno));
    CHECK(ioctl(uffd, UFFDIO_API, &api) == 0);
    u = map_anon(2 * PAGE);
    CHECK(u);
    reg.range.start = (uintptr_t)u;
    reg.range.len = 2 * PAGE;
    CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0);
    fill(p->rbuf, PAGE, 81);

    CHECK(write_param(SWDMA_PARAM "stall", 1) == 0);
    for (i = 0; i < 63; i++)
        CHECK(scif_vreadfrom(p->cli, p->ubuf + i * PAGE, PAGE, ROFF, 0) == 0);
    CHECK(dbg_counter("rma_inflight") == 63);
    for (i = 0; i < 2; i++) {
        j[i] = (struct uffd_job){.p = p, .dst = u + i * PAGE};
        CHECK(pthread_create(&th[i], NULL, uffd_thread, &j[i]) == 0);
    }
    /*
     * Wait until both got past the bound (two faults), or one did and the
     * other sleeps in the ioctl itself, waiting for a slot, or a pin
     * failed without blocking.
     */
    for (i = 0; i < 2000 && !decided; i++) {
        CHECK(uffd_serve(uffd, u, 0, &faults, which) == 0);
        if (faults >= 2 || __atomic_load_n(&j[0].done, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&j[1].done, __ATOMIC_ACQUIRE)) {
            decided = 1;
        } else if (faults == 1) {
            char w[64];
            pid_t other = __atomic_load_n(&j[!which[0]].tid, __ATOMIC_ACQUIRE);

            thread_wchan(other, w, sizeof(w));
            decided = other && strstr(w, "scif_rma_copy_ioctl") != NULL;
        }
        if (!decided)
            sleep_ms(5);
    }
    if (!decided) {
        char w0[64], w1[64];

        thread_wchan(j[0].tid, w0, sizeof(w0));
        thread_wchan(j[1].tid, w1, sizeof(w1));
        diag("undecided: %d faults, threads in \"%s\" and \"%s\" (done %d %d, ret %d %d, "
             "errno %d %d)",
             faults, w0, w1, j[0].done, j[1].done, j[0].ret, j[1].ret, j[0].err, j[1].err);
        write_param(SWDMA_PARAM "stall", 0);
        return KSFT_FAIL;
    }
    /* Let everything finish: resume the engine, serve every fault. */
    CHECK(write_param(SWDMA_PARAM "stall", 0) == 0);
    CHECK(uffd_serve(uffd, u, 1, &faults, which) == 0);
    CHECK(scif_vreadfrom(kick.cli, kick.ubuf, 16 * PAGE, ROFF, SCIF_RMA_SYNC) == 0);
    for (i = 0; i < 4000 && !(__atomic_load_n(&j[0].done, __ATOMIC_ACQUIRE) &&
                              __atomic_load_n(&j[1].done, __ATOMIC_ACQUIRE));
         i++) {
        CHECK(uffd_serve(uffd, u, 1, &faults, which) == 0);
        sleep_ms(5);
    }
    CHECK(fence_all(p->cli) == 0);
    for (i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (j[i].ret)
            diag("thread %d: %s", i, strerror(j[i].err));
        CHECK(j[i].ret == 0 || j[i].err == EFAULT);
        CHECK(j[i].ret || memcmp(u + i * PAGE, p->rbuf, PAGE) == 0);
    }
    max = dbg_dma_value("queue_max");
    if (max > 64) {
        diag("the endpoint had %lld asynchronous transfers in flight (bound 64)", max);
        return KSFT_FAIL;
    }
    rma_pair_close(p);
    rma_pair_close(&kick);
    return rma_counters_zero();
}

/*
 * queue_max is the depth of an endpoint's asynchronous queue: a transfer
 * the CPU copies within its call (SCIF_RMA_USECPU, or any transfer while
 * the channel is away) takes no slot and is not counted.  It once was, so
 * a full queue of 64 and one such call read 65, and "16 threads never get
 * past 64" failed whenever the channel came back mid-test.
 */
TEST_F(dma, queue_max_async) {
    struct rma_pair *p = &self->p, kick;
    uint8_t *c;
    long long max;
    int i;

    CHECK(open_pair(&kick) == 0);
    CHECK(dma_ready(p) == 0);
    CHECK(dbg_wait("rma_inflight", 0) == 0);
    c = map_anon(PAGE);
    CHECK(c);
    fill(p->rbuf, 64 * PAGE, 93);
    CHECK(write_param(SWDMA_PARAM "stall", 1) == 0);
    for (i = 0; i < 64; i++)
        CHECK(scif_vreadfrom(p->cli, p->ubuf + i * PAGE, PAGE, ROFF + i * PAGE, 0) == 0);
    CHECK(dbg_counter("rma_inflight") == 64);
    /* Beside the full queue, a transfer the CPU moves in the call. */
    CHECK(scif_vreadfrom(p->cli, c, PAGE, ROFF, SCIF_RMA_USECPU) == 0);
    CHECK(memcmp(c, p->rbuf, PAGE) == 0);
    CHECK(write_param(SWDMA_PARAM "stall", 0) == 0);
    CHECK(scif_vreadfrom(kick.cli, kick.ubuf, 16 * PAGE, ROFF, SCIF_RMA_SYNC) == 0);
    CHECK(fence_all(p->cli) == 0);
    CHECK(memcmp(p->ubuf, p->rbuf, 64 * PAGE) == 0);
    max = dbg_dma_value("queue_max");
    CHECK(max >= 0 && max <= 64, "queue_max %lld: synchronous transfers counted as queued", max);
    rma_pair_close(p);
    rma_pair_close(&kick);
    return rma_counters_zero();
}

/* Item 3: the per-endpoint bound holds under many threads. */
#define BOUND_THREADS 16
#define BOUND_ROUNDS 8
#define BOUND_LEN (16 * PAGE)

struct bound_job {
    struct rma_pair *p;
    int idx;
    int ret;
};

static void *bound_thread(void *arg) {
    struct bound_job *j = arg;
    size_t off = (size_t)j->idx * BOUND_LEN;
    int i;

    for (i = 0; i < BOUND_ROUNDS; i++)
        if (scif_vreadfrom(j->p->cli, j->p->ubuf + off, BOUND_LEN, ROFF + off, 0)) {
            j->ret = errno;
            return NULL;
        }
    return NULL;
}

TEST_F(dma, bound_threads) {
    struct bound_job jobs[BOUND_THREADS];
    pthread_t th[BOUND_THREADS];
    struct rma_pair *p = &self->p;
    long long max;
    int i, ret = KSFT_PASS;

    CHECK(dma_ready(p) == 0);
    fill(p->rbuf, WIN, 72);
    memset(p->ubuf, 0, WIN);
    /* Slow descriptors, so that the queue fills and threads wait. */
    CHECK(write_param(SWDMA_PARAM "delay_ms", 1) == 0);
    for (i = 0; i < BOUND_THREADS; i++) {
        jobs[i] = (struct bound_job){.p = p, .idx = i};
        CHECK(pthread_create(&th[i], NULL, bound_thread, &jobs[i]) == 0);
    }
    for (i = 0; i < BOUND_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].ret) {
            diag("thread %d: %s", i, strerror(jobs[i].ret));
            ret = KSFT_FAIL;
        }
    }
    CHECK(fence_all(p->cli) == 0);
    CHECK(faults_off() == 0);
    CHECK(memcmp(p->ubuf, p->rbuf, BOUND_THREADS * BOUND_LEN) == 0);
    max = dbg_dma_value("queue_max");
    if (max < 0 || max > 64) {
        diag("an endpoint had %lld asynchronous transfers in flight (bound 64)", max);
        return KSFT_FAIL;
    }
    return ret;
}

/*
 * Item 3: another endpoint's asynchronous transfer is not queued behind
 * a full queue of other endpoints (4 endpoints x 64 transfers once filled
 * the shared workqueue, and it waited for all of them): when it is done,
 * most of theirs still are not.  (Order of events, not time.)
 */
#define FAIR_EPS 4
#define FAIR_LEN (4 * PAGE)

static int t_fair(void) {
    struct rma_pair a[FAIR_EPS], b;
    long long left;
    int i, k;

    NEED_DMA();
    for (k = 0; k < FAIR_EPS; k++)
        CHECK(open_pair(&a[k]) == 0);
    CHECK(open_pair(&b) == 0);
    CHECK(dma_ready(&b) == 0);
    CHECK(dbg_wait("rma_inflight", 0) == 0);
    fill(b.rbuf, FAIR_LEN, 74);
    memset(b.ubuf, 0, FAIR_LEN);
    CHECK(write_param(SWDMA_PARAM "delay_ms", 1) == 0);
    for (k = 0; k < FAIR_EPS; k++)
        for (i = 0; i < 64; i++)
            CHECK(scif_vreadfrom(a[k].cli, a[k].ubuf + (i % 16) * FAIR_LEN, FAIR_LEN, ROFF, 0) ==
                  0);
    CHECK(scif_vreadfrom(b.cli, b.ubuf, FAIR_LEN, ROFF, 0) == 0);
    CHECK(fence_all(b.cli) == 0);
    left = dbg_counter("rma_inflight");
    CHECK(write_param(SWDMA_PARAM "delay_ms", 0) == 0);
    for (k = 0; k < FAIR_EPS; k++)
        CHECK(fence_all(a[k].cli) == 0);
    CHECK(memcmp(b.ubuf, b.rbuf, FAIR_LEN) == 0);
    if (left < FAIR_EPS * 64 / 2) {
        diag("only %lld of the other endpoints' %d transfers were still queued when "
             "this one completed",
             left, FAIR_EPS * 64);
        return KSFT_FAIL;
    }
    for (k = 0; k < FAIR_EPS; k++)
        rma_pair_close(&a[k]);
    rma_pair_close(&b);
    return rma_counters_zero();
}

/*
 * Item 4: the third submit of a batch fails.  The two descriptors already
 * submitted are issued and waited for before the CPU redoes the batch;
 * none of them runs later (a later transfer once ran them into the first
 * transfer's pages, after those were unmapped).
 */
TEST_F(dma, submit_fails) {
    const size_t len = 64 * PAGE;
    struct rma_pair *p = &self->p;
    long long fb;
    uint8_t *copy = malloc(len);

    CHECK(copy);
    CHECK(dma_ready(p) == 0);
    fill(p->rbuf, len, 75);
    memset(p->ubuf, 0, len);
    fb = dbg_dma_value("fallbacks");
    CHECK(write_param(SWDMA_PARAM "fail_submit", 3) == 0);
    CHECK(scif_vreadfrom(p->cli, p->ubuf, len, ROFF, SCIF_RMA_SYNC) == 0);
    if (read_param(SWDMA_PARAM "fail_submit") != 0) {
        long long n = dbg_dma_value("descs_last");

        CHECK(write_param(SWDMA_PARAM "fail_submit", 0) == 0);
        return test_skip("the transfer took %lld descriptor(s), fewer than 3 (physically "
                         "contiguous pages)",
                         n);
    }
    CHECK(memcmp(p->ubuf, p->rbuf, len) == 0);
    CHECK(dbg_dma_value("fallbacks") == fb + 1);
    memcpy(copy, p->ubuf, len);
    /* New source data, and a DMA transfer elsewhere that issues the channel. */
    fill(p->rbuf, len, 76);
    CHECK(scif_vreadfrom(p->cli, p->ubuf + len, len, ROFF + len, SCIF_RMA_SYNC) == 0);
    CHECK(memcmp(p->ubuf + len, p->rbuf + len, len) == 0);
    if (memcmp(copy, p->ubuf, len)) {
        diag("the failed batch's descriptors ran later, into byte %lld",
             first_diff(copy, p->ubuf, len));
        return KSFT_FAIL;
    }
    CHECK(batches() == 0);
    rma_pair_close(p);
    return rma_counters_zero();
}

/* State letter of thread @tid of this process ('R', 'S', 'D', ...). */
static char thread_state(pid_t tid) {
    char path[64], buf[256], *p;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    f = fopen(path, "r");
    if (!f)
        return '?';
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

struct stall_job {
    struct rma_pair *p;
    pid_t tid;
    int ret, err;
};

static void *stall_thread(void *arg) {
    struct stall_job *j = arg;

    __atomic_store_n(&j->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    j->ret = scif_vreadfrom(j->p->cli, j->p->ubuf, 64 * PAGE, ROFF, SCIF_RMA_SYNC);
    j->err = errno;
    return NULL;
}

/*
 * Item 4: a channel that never completes.  Two endpoints' synchronous
 * transfers wait on it: both sleep interruptibly (not in D state), time
 * out, the channel is stopped and reset once neither uses it, and both
 * complete with the CPU, data intact.
 */
static int t_stall(void) {
    struct stall_job j[2];
    pthread_t th[2];
    struct rma_pair p[2];
    long long resets;
    int i, ret = KSFT_PASS;

    NEED_DMA();
    CHECK(open_pair(&p[0]) == 0 && open_pair(&p[1]) == 0);
    CHECK(dma_ready(&p[0]) == 0);
    resets = dbg_dma_value("resets");
    CHECK(resets >= 0);
    for (i = 0; i < 2; i++) {
        fill(p[i].rbuf, 64 * PAGE, 77 + i);
        memset(p[i].ubuf, 0, 64 * PAGE);
    }
    /* Shorter than the default 5 s (any value works). */
    if (write_param(SCIF_PARAM "dma_timeout_ms", 3000))
        diag("cannot set dma_timeout_ms: %s", strerror(errno));
    CHECK(write_param(SWDMA_PARAM "stall", 1) == 0);
    for (i = 0; i < 2; i++) {
        j[i] = (struct stall_job){.p = &p[i]};
        CHECK(pthread_create(&th[i], NULL, stall_thread, &j[i]) == 0);
    }
    /*
     * Both have a batch with descriptors parked: they are waiting for them
     * now (a batch has as few as one descriptor per physically contiguous
     * run, so count batches, not descriptors).
     */
    CHECK(wait_at_least(batches, 2) >= 2);
    CHECK(wait_at_least(parked, 2) >= 2);
    for (i = 0; i < 2; i++) {
        char st = thread_state(__atomic_load_n(&j[i].tid, __ATOMIC_ACQUIRE));

        if (st == 'D') {
            diag("thread %d waits for the DMA engine in D state", i);
            ret = KSFT_FAIL;
        }
    }
    for (i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (j[i].ret) {
            diag("thread %d: %s", i, strerror(j[i].err));
            ret = KSFT_FAIL;
        } else if (memcmp(p[i].ubuf, p[i].rbuf, 64 * PAGE)) {
            diag("thread %d: data differs at %lld", i, first_diff(p[i].ubuf, p[i].rbuf, 64 * PAGE));
            ret = KSFT_FAIL;
        }
    }
    CHECK(faults_off() == 0);
    write_param(SCIF_PARAM "dma_timeout_ms", 5000);
    CHECK(dbg_dma_value("resets") > resets);
    CHECK(dbg_dma_value("batches") == 0);
    CHECK(parked() == 0);
    if (ret != KSFT_PASS)
        return ret;
    CHECK(dma_ready(&p[0]) == 0);
    rma_pair_close(&p[0]);
    rma_pair_close(&p[1]);
    return rma_counters_zero();
}

static void on_usr1(int sig) {
    (void)sig;
}

/*
 * Item 4: a signal ends the wait for a slow channel with EINTR.  The
 * batch still holds its pages: when it completes late, it writes nothing
 * the process got back (the buffer is unmapped and the memory reused
 * meanwhile), and everything is released after.
 */
TEST_F(dma, eintr_late) {
    const size_t len = 64 * PAGE;
    struct sigaction sa = {.sa_handler = on_usr1};
    struct stall_job j;
    pthread_t th;
    struct rma_pair *p = &self->p;
    uint8_t *fresh, *pat = malloc(len);
    long copied;

    CHECK(pat);
    CHECK(dma_ready(p) == 0);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0); /* no SA_RESTART */
    fill(p->rbuf, len, 79);
    CHECK(write_param(SWDMA_PARAM "delay_ms", 20) == 0);
    copied = swdma_copied();
    j = (struct stall_job){.p = p};
    CHECK(pthread_create(&th, NULL, stall_thread, &j) == 0);
    /* Its first descriptor ran: the transfer is in its DMA wait now. */
    CHECK(wait_at_least(swdma_copied, copied + 1) > copied);
    CHECK(pthread_kill(th, SIGUSR1) == 0);
    pthread_join(th, NULL);
    if (j.ret == 0 && dbg_dma_value("descs_last") < 2) {
        CHECK(write_param(SWDMA_PARAM "delay_ms", 0) == 0);
        return test_skip("the transfer took one descriptor (physically contiguous pages): "
                         "no DMA wait left to interrupt");
    }
    if (j.ret != -1 || j.err != EINTR) {
        diag("interrupted DMA wait returned %d errno %d, expected -1 EINTR", j.ret, j.err);
        CHECK(write_param(SWDMA_PARAM "delay_ms", 0) == 0);
        return KSFT_FAIL;
    }
    /* Give the memory back, take new memory, fill it. */
    CHECK(munmap(p->ubuf, WIN) == 0);
    fresh = map_anon(WIN);
    CHECK(fresh);
    fill(pat, len, 80);
    memcpy(fresh, pat, len);
    /* The late completion frees the batch. */
    CHECK(wait_below(batches, 1) == 0);
    CHECK(memcmp(fresh, pat, len) == 0);
    CHECK(faults_off() == 0);
    rma_pair_close(p);
    return rma_counters_zero();
}

static const struct scif_test tests[] = {
    {"async v* pins are charged to RLIMIT_MEMLOCK (ENOMEM past it)", t_async_memlock, 0},
    {"the 64 async transfers bound is taken atomically with its check", dma_bound_atomic, 0},
    {"16 threads never get past 64 async transfers per endpoint", dma_bound_threads, 0},
    {"queue_max counts asynchronous transfers only, not CPU copies beside them",
     dma_queue_max_async, 0},
    {"an endpoint's long queue does not hold back another endpoint", t_fair, 0},
    {"submit fails mid-batch: submitted descriptors drain, none runs later", dma_submit_fails, 0},
    {"stalled channel: interruptible waits, reset, data by CPU", t_stall, 200},
    {"a signal ends a DMA wait (EINTR); late completion writes only held pages", dma_eintr_late, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
