// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Resource limits of the RMA calls: the per-endpoint bound of pending fence
 * signals (ENOMEM, scif_fence_signal(3)) and the charging of what a caller
 * makes the kernel allocate to its memory cgroup, so that a flood fails
 * with ENOMEM at the cgroup's limit.
 *
 * Fence signals only wait while an RMA of the endpoint is in flight; one
 * long synchronous CPU copy between two large windows, run by a second
 * thread, keeps one in flight while the test issues signals.  The tests do
 * not depend on how long the copy takes: a copy that ends before the
 * outcome is known just starts another round (a bounded number of them).
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define BIG (64UL << 20)
#define SRC_OFF 0x10000000L
#define DST_OFF 0x20000000L
/* The documented bound of pending signals per endpoint (scif_fence_signal.3). */
#define MAX_SIGNALS 1024
#define ROUNDS 20
#define CG_ROOT "/sys/fs/cgroup"

struct copier {
    int ep;
    pthread_t th;
    int ret;
    volatile int done;
};

/* A loopback pair: the server's BIG source window, the client's BIG destination. */
FIXTURE(lx) {
    int srv, cli;
    uint8_t *src, *dst;
};

FIXTURE_SETUP(lx) {
    CHECK(connect_pair(0, 0, &self->srv, &self->cli) == 0);
    self->src = rma_window(self->srv, BIG, SRC_OFF, RW);
    self->dst = rma_window(self->cli, BIG, DST_OFF, RW);
    CHECK(self->src && self->dst);
    memset(self->src, 1, BIG);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(lx) {
    scif_close(self->cli);
    scif_close(self->srv);
}

static void *copy_thread(void *arg) {
    struct copier *c = (struct copier *)arg;

    c->ret = scif_readfrom(c->ep, DST_OFF, BIG, SRC_OFF, SCIF_RMA_USECPU | SCIF_RMA_SYNC);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Start one copy and wait until it is in flight (or already over). */
static int copy_start(struct copier *c, int ep) {
    int i;

    c->ep = ep;
    c->done = 0;
    if (pthread_create(&c->th, NULL, copy_thread, c))
        return -1;
    for (i = 0; i < 100000; i++) {
        if (dbg_counter("rma_inflight") > 0 || __atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
            break;
        sched_yield();
    }
    return 0;
}

static int copy_over(struct copier *c) {
    return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

/*
 * Issue local signals until one fails or the copy is over.  Returns the
 * number that succeeded while the copy was in flight, *err the errno of
 * the failure (0 if none).  Touches no new memory.
 */
static long flood(struct lx_fixture *f, struct copier *c, long limit, int *err) {
    long n = 0;

    *err = 0;
    while (n < limit && !copy_over(c)) {
        if (scif_fence_signal(f->cli, DST_OFF, (uint64_t)n, 0, 0,
                              SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL)) {
            *err = errno;
            break;
        }
        n++;
    }
    return n;
}

/* More signals than the bound, while an RMA is in flight: ENOMEM. */
TEST_F(lx, signal_bound) {
    struct copier c;
    int round, err;
    long n;

    for (round = 0; round < ROUNDS; round++) {
        CHECK(copy_start(&c, self->cli) == 0);
        n = flood(self, &c, 4L * MAX_SIGNALS, &err);
        pthread_join(c.th, NULL);
        CHECK(c.ret == 0);
        if (err) {
            if (err != ENOMEM) {
                diag("signal %ld failed with errno %d (%s), expected ENOMEM", n, err,
                     strerror(err));
                return KSFT_FAIL;
            }
            if (n > MAX_SIGNALS) {
                diag("%ld signals pending before ENOMEM, bound is %d", n, MAX_SIGNALS);
                return KSFT_FAIL;
            }
            diag("ENOMEM after %ld signals (round %d)", n, round);
            return KSFT_PASS;
        }
        if (n >= 4L * MAX_SIGNALS) {
            diag("%ld signals pending on one endpoint, no error (bound %d)", n, MAX_SIGNALS);
            return KSFT_FAIL;
        }
    }
    diag("no copy stayed in flight long enough for %d signals in %d rounds", MAX_SIGNALS, ROUNDS);
    return KSFT_FAIL;
}

static int write_fd(int fd, const char *s) {
    return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

static int write_str(const char *path, const char *s) {
    int fd = open(path, O_WRONLY), r;

    if (fd < 0)
        return -1;
    r = write_fd(fd, s);
    close(fd);
    return r;
}

/*
 * A memory cgroup (v2) with the memory controller, mounting cgroup2 on
 * /sys/fs/cgroup if nothing is mounted there.  Returns 0 and its path, or
 * KSFT_SKIP with the reason recorded.
 */
static int memcg_make(char *path, size_t len) {
    char ctl[160];

    if (access(CG_ROOT "/cgroup.controllers", F_OK) && mount("none", CG_ROOT, "cgroup2", 0, NULL))
        return test_skip("cannot mount cgroup2 on " CG_ROOT ": %s", strerror(errno));
    if (write_str(CG_ROOT "/cgroup.subtree_control", "+memory"))
        return test_skip("cannot enable the memory controller: %s", strerror(errno));
    snprintf(path, len, CG_ROOT "/scif_limits_%d", (int)getpid());
    if (mkdir(path, 0755) && errno != EEXIST)
        return test_skip("mkdir %s: %s", path, strerror(errno));
    snprintf(ctl, sizeof(ctl), "%s/memory.max", path);
    if (access(ctl, F_OK))
        return test_skip("no memory.max in %s", path);
    return 0;
}

/*
 * The same flood from a process in a memory cgroup whose limit leaves room
 * for a small part of the bound: the signals are charged to it, so the
 * flood fails with ENOMEM well before the bound (uncharged, it would only
 * stop there).
 */
TEST_F(lx, signal_memcg) {
    char cg[128], procs[160], max[160], pid[32];
    volatile char stack[64 << 10];
    int round, err, r, join, leave;
    struct copier c;
    long n;

    r = memcg_make(cg, sizeof(cg));
    if (r)
        return r;
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
    snprintf(max, sizeof(max), "%s/memory.max", cg);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    /* 16 KiB: room for about 256 signals, a quarter of the bound. */
    CHECK(write_str(max, "16384") == 0);
    /* Inside the cgroup nothing may be opened: struct file is charged. */
    join = open(procs, O_WRONLY);
    leave = open(CG_ROOT "/cgroup.procs", O_WRONLY);
    CHECK(join >= 0 && leave >= 0);
    /* No page of the flood's stack may need charging in the cgroup. */
    memset((void *)stack, 0, sizeof(stack));
    for (round = 0; round < ROUNDS; round++) {
        CHECK(copy_start(&c, self->cli) == 0);
        /* Only what the flood makes the kernel allocate is charged here. */
        if (write_fd(join, pid)) {
            diag("cannot join %s: %s", cg, strerror(errno));
            pthread_join(c.th, NULL);
            return KSFT_FAIL;
        }
        n = flood(self, &c, 4L * MAX_SIGNALS, &err);
        r = write_fd(leave, pid);
        pthread_join(c.th, NULL);
        CHECK(r == 0);
        CHECK(c.ret == 0);
        if (err) {
            rmdir(cg);
            if (err != ENOMEM) {
                diag("signal %ld failed with errno %d (%s), expected ENOMEM", n, err,
                     strerror(err));
                return KSFT_FAIL;
            }
            if (n >= MAX_SIGNALS / 2) {
                diag("%ld signals before ENOMEM in a 16 KiB cgroup: not charged", n);
                return KSFT_FAIL;
            }
            diag("ENOMEM after %ld signals (round %d)", n, round);
            return KSFT_PASS;
        }
        if (n >= 4L * MAX_SIGNALS) {
            rmdir(cg);
            diag("%ld signals pending in a 16 KiB cgroup, no error", n);
            return KSFT_FAIL;
        }
    }
    rmdir(cg);
    diag("no copy stayed in flight long enough in %d rounds", ROUNDS);
    return KSFT_FAIL;
}

static const struct scif_test tests[] = {
    {"fence signals beyond the per-endpoint bound fail with ENOMEM", lx_signal_bound, 0},
    {"fence signal flood in a memory cgroup fails with ENOMEM at its limit", lx_signal_memcg, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
