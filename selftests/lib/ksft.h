/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Minimal kselftest-style TAP output for openscif selftests.
 *
 * Each test program prints a TAP 13 stream: "TAP version 13", a plan
 * "1..N", then one "ok N - name", "not ok N - name" or
 * "ok N - name # SKIP reason" line per behaviour.  The exit status is 0 when
 * nothing failed, 1 when something failed, 4 when everything was skipped
 * (the kselftest convention).
 */
#ifndef OPENSCIF_KSFT_H
#define OPENSCIF_KSFT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

struct ksft_counts {
    unsigned int num;
    unsigned int pass;
    unsigned int fail;
    unsigned int skip;
};

static struct ksft_counts ksft_cnt;

static inline void ksft_print_header(void) {
    printf("TAP version 13\n");
    fflush(stdout);
}

static inline void ksft_set_plan(unsigned int plan) {
    printf("1..%u\n", plan);
    fflush(stdout);
}

static inline void ksft_print_msg(const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static inline void ksft_vresult(const char *status, const char *directive, const char *fmt,
                                va_list ap) {
    printf("%s %u - ", status, ++ksft_cnt.num);
    vprintf(fmt, ap);
    if (directive)
        printf(" # %s", directive);
    printf("\n");
    fflush(stdout);
}

static inline void ksft_test_result_pass(const char *fmt, ...) {
    va_list ap;

    ksft_cnt.pass++;
    va_start(ap, fmt);
    ksft_vresult("ok", NULL, fmt, ap);
    va_end(ap);
}

static inline void ksft_test_result_fail(const char *fmt, ...) {
    va_list ap;

    ksft_cnt.fail++;
    va_start(ap, fmt);
    ksft_vresult("not ok", NULL, fmt, ap);
    va_end(ap);
}

/* Pass when cond is true, else fail. */
static inline void ksft_test_result(int cond, const char *fmt, ...) {
    va_list ap;

    if (cond)
        ksft_cnt.pass++;
    else
        ksft_cnt.fail++;
    va_start(ap, fmt);
    ksft_vresult(cond ? "ok" : "not ok", NULL, fmt, ap);
    va_end(ap);
}

/* A skipped test: "ok N - name # SKIP reason". */
static inline void ksft_test_result_skip(const char *reason, const char *fmt, ...) {
    va_list ap;
    char dir[256];

    ksft_cnt.skip++;
    snprintf(dir, sizeof(dir), "SKIP %s", reason);
    va_start(ap, fmt);
    ksft_vresult("ok", dir, fmt, ap);
    va_end(ap);
}

/* A not yet implemented test: "not ok N - name # TODO reason". */
static inline void ksft_test_result_todo(const char *reason, const char *fmt, ...) {
    va_list ap;
    char dir[256];

    snprintf(dir, sizeof(dir), "TODO %s", reason);
    va_start(ap, fmt);
    ksft_vresult("not ok", dir, fmt, ap);
    va_end(ap);
}

/* Skip the whole program: plan 1..0 with a reason. */
static inline int ksft_exit_skip_all(const char *reason) {
    printf("1..0 # SKIP %s\n", reason);
    fflush(stdout);
    return KSFT_SKIP;
}

static inline int ksft_exit(void) {
    ksft_print_msg("totals: pass:%u fail:%u skip:%u\n", ksft_cnt.pass, ksft_cnt.fail,
                   ksft_cnt.skip);
    if (ksft_cnt.fail)
        return KSFT_FAIL;
    if (ksft_cnt.skip && !ksft_cnt.pass)
        return KSFT_SKIP;
    return KSFT_PASS;
}

#endif /* OPENSCIF_KSFT_H */
