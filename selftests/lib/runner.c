// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The behaviour runner and the assertion reporting (see scif_test.h). */
#include "scif_test.h"

/* Write end of the pipe that carries a skip reason from child to parent. */
static int test_reason_fd = -1;

size_t run_tests_current;

void diag(const char *fmt, ...) {
    va_list ap;
    char buf[512];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("# %s\n", buf);
    fflush(stdout);
}

int test_skip(const char *fmt, ...) {
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

void check_failed(const char *file, int line, const char *expr, int err, const char *fmt, ...) {
    va_list ap;
    char msg[400];

    diag("%s:%d: check failed: %s (errno %d %s)", file, line, expr, err, strerror(err));
    /* fmt is " " followed by the caller's message, if it gave one. */
    if (fmt[0] == ' ' && fmt[1] == '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt + 1, ap);
    va_end(ap);
    diag("%s", msg);
}

/* Run one behaviour in a child; returns KSFT_PASS/FAIL/SKIP, reason in buf. */
static int run_one(const struct scif_test *t, char *reason, size_t rlen) {
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

int run_tests(const struct scif_test *tests, size_t n, int argc, char **argv) {
    int nodev = access(SCIF_TEST_DEVICE, F_OK) != 0;
    char reason[256];
    size_t i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    ksft_print_header();
    ksft_set_plan((unsigned int)n);
    if (nodev)
        diag("%s missing: %s", SCIF_TEST_DEVICE, SCIF_TEST_NODEV_REASON);
    for (i = 0; i < n; i++) {
        int selected = argc <= 1, a, r;

        if (nodev) {
            ksft_test_result_skip(SCIF_TEST_NODEV_REASON, "%s", tests[i].name);
            continue;
        }
        for (a = 1; a < argc; a++)
            if (strstr(tests[i].name, argv[a]))
                selected = 1;
        if (!selected) {
            ksft_test_result_skip("not selected on the command line", "%s", tests[i].name);
            continue;
        }
        run_tests_current = i;
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
