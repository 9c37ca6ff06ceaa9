// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Signals during long RMA calls: a synchronous copy of a huge range stops
 * when its process is killed, and a fence wait interrupted by a signal is
 * restarted under SA_RESTART (EINTR without it).
 *
 * The huge range costs little memory: one 64 MiB buffer of each side is
 * registered again and again at consecutive offsets, so one scif_readfrom()
 * of all of them copies many gigabytes on the CPU.  Nothing here depends on
 * how long that takes: only on the copy still running when the signal is
 * sent, which is checked.
 */
#include <sys/syscall.h>

#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define CHUNK (64L << 20)
#define NCHUNKS 64
#define TOTAL ((size_t)CHUNK * NCHUNKS)
#define SRC_OFF 0x100000000L
#define DST_OFF 0x1000000000L

/*
 * The fixture of the fence waits: a loopback pair whose client copies the
 * huge range (huge_open()); the variant says whether the handler restarts.
 */
FIXTURE(huge) {
    int srv, cli;
};

FIXTURE_VARIANT(huge) {
    int restart;
};

FIXTURE_VARIANT_ADD(huge, restart){.restart = 1};
FIXTURE_VARIANT_ADD(huge, eintr){.restart = 0};

/* The same buffer as @n consecutive windows of @ep from @off. */
static int reg_repeat(int ep, void *buf, off_t off, int n) {
    int i;

    for (i = 0; i < n; i++)
        if (scif_register(ep, buf, CHUNK, off + (off_t)i * CHUNK, RW, SCIF_MAP_FIXED) !=
            off + (off_t)i * CHUNK)
            return -1;
    return 0;
}

static int huge_open(struct huge_fixture *h) {
    void *src, *dst;

    if (connect_pair(0, 0, &h->srv, &h->cli))
        return -1;
    src = map_anon(CHUNK);
    dst = map_anon(CHUNK);
    if (!src || !dst)
        return -1;
    memset(src, 5, CHUNK);
    memset(dst, 0, CHUNK);
    if (reg_repeat(h->srv, src, SRC_OFF, NCHUNKS) || reg_repeat(h->cli, dst, DST_OFF, NCHUNKS))
        return -1;
    return 0;
}

FIXTURE_SETUP(huge) {
    self->srv = self->cli = -1;
    CHECK(huge_open(self) == 0);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(huge) {
    if (self->cli >= 0)
        scif_close(self->cli);
    if (self->srv >= 0)
        scif_close(self->srv);
}

static int huge_copy(struct huge_fixture *h) {
    return scif_readfrom(h->cli, DST_OFF, TOTAL, SRC_OFF, SCIF_RMA_USECPU | SCIF_RMA_SYNC);
}

/* Wait (bounded) until an RMA is in flight. */
static int wait_inflight(void) {
    int i;

    for (i = 0; i < 6000; i++) {
        if (dbg_counter("rma_inflight") > 0)
            return 0;
        sleep_ms(10);
    }
    return -1;
}

/*
 * SIGKILL during a synchronous copy of TOTAL bytes: the process dies
 * before the copy is done (the CPU mover's byte count has not grown by
 * TOTAL) and everything is released.
 */
static int t_kill_copy(void) {
    int ready[2], go[2], st;
    long long c0, c1;
    char b = 0;
    pid_t pid;

    CHECK(pipe(ready) == 0 && pipe(go) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (!pid) {
        struct huge_fixture h;

        if (huge_open(&h))
            _exit(2);
        if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) != 1)
            _exit(3);
        huge_copy(&h);
        _exit(4);
    }
    if (read(ready[0], &b, 1) != 1) {
        waitpid(pid, &st, 0);
        diag("set-up in the child failed: status %#x", st);
        return KSFT_FAIL;
    }
    c0 = dbg_dma_value("cpu_bytes");
    CHECK(c0 >= 0);
    CHECK(write(go[1], &b, 1) == 1);
    if (wait_inflight()) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        diag("the copy never showed up in rma_inflight");
        return KSFT_FAIL;
    }
    CHECK(kill(pid, SIGKILL) == 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    c1 = dbg_dma_value("cpu_bytes");
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    if (c1 - c0 >= (long long)TOTAL) {
        diag("killed process copied all %lld bytes before dying", c1 - c0);
        return KSFT_FAIL;
    }
    return rma_counters_zero();
}

static volatile sig_atomic_t got_signal;

static void on_usr1(int sig) {
    (void)sig;
    got_signal++;
}

struct waiter {
    pid_t tid;
    pthread_t th;
    volatile int stop;
    int sent;
};

/* /proc/self/task/TID/syscall starts with 16 (ioctl) while it blocks there. */
static int in_ioctl(pid_t tid) {
    char path[64], buf[32] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    return !strncmp(buf, "16 ", 3);
}

static void *copy_thread(void *arg) {
    huge_copy((struct huge_fixture *)arg);
    return NULL;
}

/* Once the main thread blocks in the fence wait, send it SIGUSR1. */
static void *kick_thread(void *arg) {
    struct waiter *w = (struct waiter *)arg;
    int i;

    for (i = 0; i < 60000 && !w->stop; i++) {
        if (in_ioctl(w->tid)) {
            w->sent = syscall(SYS_tgkill, getpid(), w->tid, SIGUSR1) == 0;
            return NULL;
        }
        sleep_ms(1);
    }
    return NULL;
}

TEST_F(huge, fence_wait) {
    struct sigaction sa;
    struct waiter w = {0};
    struct huge_fixture *h = self;
    int restart = variant->restart;
    pthread_t copier;
    int mark, r, e;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = restart ? SA_RESTART : 0;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pthread_create(&copier, NULL, copy_thread, h) == 0);
    CHECK(wait_inflight() == 0);
    CHECK(scif_fence_mark(h->cli, SCIF_FENCE_INIT_SELF, &mark) == 0);
    w.tid = (pid_t)syscall(SYS_gettid);
    CHECK(pthread_create(&w.th, NULL, kick_thread, &w) == 0);
    errno = 0;
    r = scif_fence_wait(h->cli, mark);
    e = errno;
    w.stop = 1;
    pthread_join(w.th, NULL);
    if (!w.sent || !got_signal) {
        pthread_join(copier, NULL);
        diag("the signal did not reach the fence wait (sent %d, handled %d)", w.sent,
             (int)got_signal);
        return KSFT_FAIL;
    }
    if (restart && r != 0) {
        diag("fence wait with SA_RESTART returned %d errno %d (%s), expected 0", r, e, strerror(e));
        pthread_join(copier, NULL);
        return KSFT_FAIL;
    }
    if (!restart && (r != -1 || e != EINTR)) {
        diag("fence wait without SA_RESTART returned %d errno %d (%s), expected EINTR", r, e,
             strerror(e));
        pthread_join(copier, NULL);
        return KSFT_FAIL;
    }
    pthread_join(copier, NULL);
    /* The mark is passed once the copy is done. */
    CHECK(scif_fence_wait(h->cli, mark) == 0);
    return KSFT_PASS;
}

TEST_F_VARIANT(huge, fence_wait, restart);
TEST_F_VARIANT(huge, fence_wait, eintr);

static const struct scif_test tests[] = {
    {"SIGKILL ends a synchronous copy of a huge range", t_kill_copy, 600},
    {"fence wait interrupted by an SA_RESTART handler is restarted",
     FIXTURE_FN(huge, fence_wait, restart), 600},
    {"fence wait interrupted by a handler without SA_RESTART: EINTR",
     FIXTURE_FN(huge, fence_wait, eintr), 600},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
