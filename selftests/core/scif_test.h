/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by the core selftests (the C programs in selftests/core/).
 *
 * Each test program is a table of behaviours.  run_tests() prints the TAP
 * plan, runs every behaviour in its own child process (own process group,
 * its own file descriptors, so a crash, a hang or a leaked endpoint of one
 * behaviour cannot hide or break another) and prints exactly one TAP line
 * per behaviour.  A behaviour returns KSFT_PASS, KSFT_FAIL or KSFT_SKIP (with
 * test_skip() giving the reason); a crash or a timeout is a failure.
 * Timeouts only guard against hangs, they never judge speed.
 */
#ifndef OPENSCIF_SELFTESTS_CORE_SCIF_TEST_H
#define OPENSCIF_SELFTESTS_CORE_SCIF_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <scif.h>

#include "../lib/ksft.h"

struct scif_test {
    const char *name;
    int (*fn)(void);
    unsigned int timeout; /* seconds; 0 means TEST_DEFAULT_TIMEOUT */
};

#define TEST_DEFAULT_TIMEOUT 120
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Write end of the pipe that carries a skip reason from child to parent. */
static int test_reason_fd = -1;

/* Diagnostic line, printed as a TAP comment. */
static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...) {
    va_list ap;
    char buf[512];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("# %s\n", buf);
    fflush(stdout);
}

/* Record why a behaviour is skipped; use as "return test_skip(...)". */
static inline int test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_skip(const char *fmt, ...) {
    va_list ap;
    char buf[200];
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n >= (int)sizeof(buf))
        n = sizeof(buf) - 1;
    if (test_reason_fd >= 0 && write(test_reason_fd, buf, n) < 0)
        diag("cannot report skip reason: %s", strerror(errno));
    return KSFT_SKIP;
}

/* Fail the behaviour with a diagnostic unless cond holds. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            diag("%s:%d: check failed: %s", __FILE__, __LINE__, #cond);                            \
            diag(__VA_ARGS__);                                                                     \
            return KSFT_FAIL;                                                                      \
        }                                                                                          \
    } while (0)

/* A call that must succeed (return >= 0). */
#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        errno = 0;                                                                                 \
        long check_ok_ret_ = (long)(call);                                                         \
        if (check_ok_ret_ < 0) {                                                                   \
            diag("%s:%d: %s returned %ld, errno %d (%s)", __FILE__, __LINE__, #call,               \
                 check_ok_ret_, errno, strerror(errno));                                           \
            return KSFT_FAIL;                                                                      \
        }                                                                                          \
    } while (0)

/* A call that must fail with -1 and errno == err. */
#define CHECK_ERR(call, err)                                                                       \
    do {                                                                                           \
        errno = 0;                                                                                 \
        long check_err_ret_ = (long)(call);                                                        \
        int check_err_errno_ = errno;                                                              \
        if (check_err_ret_ != -1 || check_err_errno_ != (err)) {                                   \
            diag("%s:%d: %s returned %ld errno %d (%s), expected -1 errno %d (%s)", __FILE__,      \
                 __LINE__, #call, check_err_ret_, check_err_errno_, strerror(check_err_errno_),    \
                 (err), strerror(err));                                                            \
            return KSFT_FAIL;                                                                      \
        }                                                                                          \
    } while (0)

static inline double now_sec(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* Run one behaviour in a child; returns KSFT_PASS/FAIL/SKIP, reason in buf. */
static inline int run_one(const struct scif_test *t, char *reason, size_t rlen) {
    unsigned int timeout = t->timeout ? t->timeout : TEST_DEFAULT_TIMEOUT;
    const char *scale = getenv("SCIF_TEST_TIMEOUT_SCALE");
    int pfd[2], status = 0, result;
    double deadline;
    sigset_t set, old;
    pid_t pid;
    ssize_t n;

    if (scale && atoi(scale) > 0)
        timeout *= atoi(scale);
    reason[0] = '\0';
    if (pipe(pfd)) {
        snprintf(reason, rlen, "pipe: %s", strerror(errno));
        return KSFT_FAIL;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        snprintf(reason, rlen, "fork: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[0]);
        close(pfd[1]);
        return KSFT_FAIL;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        setpgid(0, 0);
        close(pfd[0]);
        test_reason_fd = pfd[1];
        result = t->fn();
        fflush(stdout);
        _exit(result);
    }
    setpgid(pid, pid);
    close(pfd[1]);
    deadline = now_sec() + timeout;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        double left = deadline - now_sec();
        struct timespec ts;

        if (w == pid)
            break;
        if (left <= 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(reason, rlen, "timed out after %u s", timeout);
            status = -1;
            break;
        }
        ts.tv_sec = left > 1 ? 1 : 0;
        ts.tv_nsec = left > 1 ? 0 : (long)(left * 1e9);
        sigtimedwait(&set, NULL, &ts);
    }
    /* Reap anything the behaviour left behind in its process group. */
    kill(-pid, SIGKILL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (status == -1) {
        close(pfd[0]);
        return KSFT_FAIL;
    }
    if (WIFSIGNALED(status)) {
        close(pfd[0]);
        snprintf(reason, rlen, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
        return KSFT_FAIL;
    }
    result = WEXITSTATUS(status);
    n = read(pfd[0], reason, rlen - 1);
    reason[n > 0 ? n : 0] = '\0';
    close(pfd[0]);
    if (result != KSFT_PASS && result != KSFT_SKIP) {
        if (!reason[0])
            snprintf(reason, rlen, "exit status %d", result);
        return KSFT_FAIL;
    }
    return result;
}

/*
 * Run the table.  With arguments, only behaviours whose name contains one of
 * them run (the others are reported as skipped), to ease debugging.
 */
static inline int run_tests(const struct scif_test *tests, size_t n, int argc, char **argv) {
    char reason[256];
    size_t i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    ksft_print_header();
    ksft_set_plan((unsigned int)n);
    for (i = 0; i < n; i++) {
        int selected = argc <= 1, a, r;

        for (a = 1; a < argc; a++)
            if (strstr(tests[i].name, argv[a]))
                selected = 1;
        if (!selected) {
            ksft_test_result_skip("not selected on the command line", "%s", tests[i].name);
            continue;
        }
        r = run_one(&tests[i], reason, sizeof(reason));
        if (r == KSFT_PASS) {
            ksft_test_result_pass("%s", tests[i].name);
        } else if (r == KSFT_SKIP) {
            ksft_test_result_skip(reason[0] ? reason : "precondition missing", "%s", tests[i].name);
        } else {
            if (reason[0])
                diag("%s: %s", tests[i].name, reason);
            ksft_test_result_fail("%s", tests[i].name);
        }
    }
    return ksft_exit();
}

/* ---- SCIF helpers ---- */

/* Open an endpoint acting as @node: node 0 via scif_open(), others via /dev/scifN. */
static inline int ep_open(int node) {
    char path[32];

    if (node == 0)
        return scif_open();
    snprintf(path, sizeof(path), "/dev/scif%d", node);
    return open(path, O_RDWR | O_CLOEXEC);
}

/* Number of emulated nodes the module was loaded with, or -1 if unknown. */
static inline int module_nodes_param(void) {
    FILE *f = fopen("/sys/module/scif/parameters/nodes", "r");
    int n = -1;

    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

/* Highest online node id as seen from node 0, or -1 on error. */
static inline int max_node(void) {
    uint16_t nodes[64], self = 0xffff;
    int n, i, max = -1;

    n = scif_get_nodeIDs(nodes, 64, &self);
    for (i = 0; i < n && i < 64; i++)
        if (nodes[i] > max)
            max = nodes[i];
    return max;
}

/* Skip unless node @node exists. */
#define REQUIRE_NODE(node)                                                                         \
    do {                                                                                           \
        if (max_node() < (node))                                                                   \
            return test_skip("node %d not online (load scif with nodes=%d)", (node), (node));      \
    } while (0)

/* Bound, listening endpoint on @node; port 0 picks one.  Returns epd or -1. */
static inline int make_listener(int node, uint16_t port, int backlog, uint16_t *bound) {
    int epd = ep_open(node), p;

    if (epd < 0)
        return -1;
    p = scif_bind(epd, port);
    if (p < 0 || scif_listen(epd, backlog) < 0) {
        int e = errno;

        close(epd);
        errno = e;
        return -1;
    }
    if (bound)
        *bound = (uint16_t)p;
    return epd;
}

struct connect_job {
    int epd;
    struct scif_portID dst;
    int ret;
    int err;
    volatile int done; /* set (release) once ret/err are final */
};

static inline void *connect_thread(void *arg) {
    struct connect_job *j = (struct connect_job *)arg;

    errno = 0;
    j->ret = scif_connect(j->epd, &j->dst);
    j->err = errno;
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/*
 * Connected pair: *client acts as @cnode, *server (the accepted endpoint)
 * acts as @snode.  Returns 0, or -1 with a diagnostic.
 */
static inline int connect_pair(int snode, int cnode, int *server, int *client) {
    struct connect_job job;
    struct scif_portID peer;
    uint16_t port;
    pthread_t th;
    int lep, r;

    lep = make_listener(snode, 0, 16, &port);
    if (lep < 0) {
        diag("listener on node %d: %s", snode, strerror(errno));
        return -1;
    }
    job.epd = ep_open(cnode);
    if (job.epd < 0) {
        diag("open as node %d: %s", cnode, strerror(errno));
        close(lep);
        return -1;
    }
    job.dst.node = (uint16_t)snode;
    job.dst.port = port;
    job.done = 0;
    if (pthread_create(&th, NULL, connect_thread, &job)) {
        close(lep);
        close(job.epd);
        return -1;
    }
    /*
     * Wait for the request without blocking in accept: if the connect fails
     * (e.g. ENODEV) no request ever arrives and a blocking accept would hang
     * the test.  The 60 s bound only catches a hang; it is no timing check.
     */
    r = -1;
    errno = ETIMEDOUT;
    for (int waited = 0; waited < 600; waited++) {
        struct pollfd pfd = {.fd = lep, .events = POLLIN};

        if (poll(&pfd, 1, 100) > 0) {
            r = scif_accept(lep, &peer, server, SCIF_ACCEPT_SYNC);
            break;
        }
        if (__atomic_load_n(&job.done, __ATOMIC_ACQUIRE) && job.ret < 0) {
            errno = ECONNABORTED;
            break;
        }
    }
    if (r < 0)
        diag("accept on node %d: %s", snode, strerror(errno));
    close(lep); /* a connector still waiting gets ECONNREFUSED, so join returns */
    pthread_join(th, NULL);
    if (job.ret < 0)
        diag("connect %d -> %d:%u: %s", cnode, snode, port, strerror(job.err));
    if (r < 0 || job.ret < 0) {
        if (r >= 0)
            close(*server);
        close(job.epd);
        return -1;
    }
    if (peer.node != cnode) {
        diag("accept reported peer node %u, expected %d", peer.node, cnode);
        close(*server);
        close(job.epd);
        return -1;
    }
    *client = job.epd;
    return 0;
}

/* Send/receive exactly len bytes with the blocking flags. */
static inline int send_all(int epd, const void *buf, int len) {
    int r = scif_send(epd, (void *)buf, len, SCIF_SEND_BLOCK);

    return r == len ? 0 : -1;
}

static inline int recv_all(int epd, void *buf, int len) {
    int r = scif_recv(epd, buf, len, SCIF_RECV_BLOCK);

    return r == len ? 0 : -1;
}

/* Deterministic byte stream: xorshift64* seeded per stream. */
struct prng {
    uint64_t s;
};

static inline uint64_t prng_next(struct prng *p) {
    p->s ^= p->s >> 12;
    p->s ^= p->s << 25;
    p->s ^= p->s >> 27;
    return p->s * 2685821657736338717ULL;
}

static inline void prng_init(struct prng *p, uint64_t seed) {
    p->s = seed * 0x9E3779B97F4A7C15ULL + 1;
    if (!p->s)
        p->s = 1;
}

#endif /* OPENSCIF_SELFTESTS_CORE_SCIF_TEST_H */
