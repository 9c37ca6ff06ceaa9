/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The selftest library (libscif_selftest.la, built once in selftests/):
 * the behaviour runner, the assertion family, SCIF connection helpers and
 * debugfs counter readers.  Programs include "scif_test.h" (selftests/lib/
 * is on the include path).
 *
 * A test program is a table of behaviours.  run_tests() prints the TAP plan,
 * runs every behaviour in its own child process (own process group, its own
 * file descriptors, so a crash, a hang or a leaked endpoint of one behaviour
 * cannot hide or break another) and prints exactly one TAP line per
 * behaviour.  A behaviour returns KSFT_PASS, KSFT_FAIL or KSFT_SKIP (with
 * test_skip() giving the reason); a crash or a timeout is a failure.
 * Timeouts only guard against hangs, they never judge speed.  Without
 * /dev/scif every behaviour is reported "# SKIP scif module not loaded" and
 * the program exits with KSFT_SKIP (4).
 */
#ifndef OPENSCIF_SELFTESTS_LIB_SCIF_TEST_H
#define OPENSCIF_SELFTESTS_LIB_SCIF_TEST_H

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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <scif.h>
#include <scif_ioctl.h>

#include "ksft.h"
#include "util.h"

/* ---- the runner (runner.c) ---- */

/* One behaviour of a program's table (TEST_F gives fixture tests a fn). */
struct scif_test {
    const char *name;
    int (*fn)(void);
    unsigned int timeout; /* seconds; 0 means TEST_DEFAULT_TIMEOUT */
};

#define TEST_DEFAULT_TIMEOUT 120

/* The device whose absence makes every behaviour a skip. */
#define SCIF_TEST_DEVICE "/dev/scif"
#define SCIF_TEST_NODEV_REASON "scif module not loaded"

/* Diagnostic line, printed as a TAP comment. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record why a behaviour is skipped; use as "return test_skip(...)". */
int test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run the table.  With arguments, only behaviours whose name contains one of
 * them run (the others are reported as skipped), to ease debugging.  Returns
 * the exit status (KSFT_PASS, KSFT_FAIL, or KSFT_SKIP when all skipped).
 */
int run_tests(const struct scif_test *tests, size_t n, int argc, char **argv);

/* Index in the table of the behaviour being run (valid inside its fn). */
extern size_t run_tests_current;

/*
 * ---- fixtures ----
 *
 * A fixture is the state several behaviours start from (e.g. a connected
 * pair with registered windows), built by its setup in the behaviour's own
 * child process and torn down there after the behaviour:
 *
 *   FIXTURE(win) { int srv, cli; uint8_t *buf; };
 *   FIXTURE_VARIANT(win) { int snode, cnode; };          (optional)
 *   FIXTURE_VARIANT_ADD(win, loopback) { .snode = 0, .cnode = 0 };
 *   FIXTURE_SETUP(win) { CHECK(...); return KSFT_PASS; }
 *   FIXTURE_TEARDOWN(win) { close(self->cli); ... }
 *   TEST_F(win, reads) { CHECK(... self->buf ... variant->snode ...); return KSFT_PASS; }
 *   TEST_F_VARIANT(win, reads, loopback);
 *
 *   static const struct scif_test tests[] = {
 *       {"reads back what it wrote, loopback", FIXTURE_FN(win, reads, loopback), 0},
 *       {"...", win_other, 300},                  (TEST_F(win, other), no variant)
 *   };
 *
 * TEST_F(fx, t) defines the behaviour function fx_t (variant NULL);
 * TEST_F_VARIANT(fx, t, v) defines FIXTURE_FN(fx, t, v), the same with
 * variant v.  The table names every behaviour (its TAP name) and fixes the
 * order.  In setup, the test and teardown, self points to the zeroed
 * fixture and variant to the variant.  Setup returns KSFT_PASS, or
 * KSFT_FAIL / KSFT_SKIP (test_skip()), which is then the behaviour's result
 * without running it; teardown runs only after a setup that passed.
 */
#define FIXTURE(fx)                                                                                \
    struct fx##_variant;                                                                           \
    struct fx##_fixture

#define FIXTURE_VARIANT(fx) struct fx##_variant

#define FIXTURE_VARIANT_ADD(fx, v) static const struct fx##_variant fx##_variant_##v =

#define FIXTURE_SETUP(fx)                                                                          \
    static int fx##_setup(struct fx##_fixture *self __attribute__((unused)),                       \
                          const struct fx##_variant *variant __attribute__((unused)))

#define FIXTURE_TEARDOWN(fx)                                                                       \
    static void fx##_teardown(struct fx##_fixture *self __attribute__((unused)),                   \
                              const struct fx##_variant *variant __attribute__((unused)))

#define TEST_F(fx, t)                                                                              \
    static int fx##_test_##t(struct fx##_fixture *self, const struct fx##_variant *variant);       \
    static int __attribute__((unused)) fx##_run_##t(const struct fx##_variant *v) {                \
        struct fx##_fixture self;                                                                  \
        int r;                                                                                     \
                                                                                                   \
        memset(&self, 0, sizeof(self));                                                            \
        r = fx##_setup(&self, v);                                                                  \
        if (r != KSFT_PASS)                                                                        \
            return r;                                                                              \
        r = fx##_test_##t(&self, v);                                                               \
        fx##_teardown(&self, v);                                                                   \
        return r;                                                                                  \
    }                                                                                              \
    static int __attribute__((unused)) fx##_##t(void) {                                            \
        return fx##_run_##t(NULL);                                                                 \
    }                                                                                              \
    static int fx##_test_##t(struct fx##_fixture *self __attribute__((unused)),                    \
                             const struct fx##_variant *variant __attribute__((unused)))

/* The behaviour function of TEST_F(fx, t) with variant v. */
#define FIXTURE_FN(fx, t, v) fx##_##t##__##v

#define TEST_F_VARIANT(fx, t, v)                                                                   \
    static int FIXTURE_FN(fx, t, v)(void) {                                                        \
        return fx##_run_##t(&fx##_variant_##v);                                                    \
    }                                                                                              \
    struct fx##_variant

/* ---- the assertion family: CHECK, CHECK_OK, CHECK_ERR ---- */

void check_failed(const char *file, int line, const char *expr, int err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Fail the behaviour unless cond holds.  The diagnostic shows file:line, the
 * expression and errno, then the optional printf-style message.
 */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            check_failed(__FILE__, __LINE__, #cond, errno, " " __VA_ARGS__);                       \
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

/* ---- SCIF helpers (scif.c) ---- */

/* Open an endpoint acting as @node: node 0 via scif_open(), others via /dev/scifN. */
int ep_open(int node);

/* Number of emulated nodes the module was loaded with, or -1 if unknown. */
int module_nodes_param(void);

/* Highest online node id as seen from node 0, or -1 on error. */
int max_node(void);

/* Node of the peer in the node tests, or -1 when no emulated node. */
int peer_node(void);

/* Skip unless node @node exists. */
#define REQUIRE_NODE(node)                                                                         \
    do {                                                                                           \
        if (max_node() < (node))                                                                   \
            return test_skip("node %d not online (load scif with nodes=%d)", (node), (node));      \
    } while (0)

/* Bound, listening endpoint on @node; port 0 picks one.  Returns epd or -1. */
int make_listener(int node, uint16_t port, int backlog, uint16_t *bound);

/* scif_connect() in a thread: connect_thread(&job) fills ret, err, done. */
struct connect_job {
    int epd;
    struct scif_portID dst;
    int ret;
    int err;
    volatile int done; /* set (release) once ret/err are final */
};

void *connect_thread(void *arg);

/*
 * Connected pair: *client acts as @cnode, *server (the accepted endpoint)
 * acts as @snode.  Returns 0, or -1 with a diagnostic and errno set
 * (ECONNABORTED: another accept on the listener took the request).
 */
int connect_pair(int snode, int cnode, int *server, int *client);

/* Send/receive exactly len bytes with the blocking flags: 0 or -1. */
int send_all(int epd, const void *buf, int len);
int recv_all(int epd, void *buf, int len);

/*
 * @len bytes of anonymous memory registered on @epd at offset @off with
 * @prot (SCIF_MAP_FIXED): the memory, or NULL with a diagnostic.  For the
 * setup of the RMA fixtures.
 */
uint8_t *rma_window(int epd, size_t len, off_t off, int prot);

/*
 * The RMA pair of the fixtures: server on node 1 with a window of @len
 * bytes of @rbuf at @roff (read-write, SCIF_MAP_FIXED), client on node 0
 * with @ubuf for the v* calls.  rma_pair_open() maps a NULL buffer
 * (map_anon(@len)); it returns 0, or -1 with a diagnostic.
 * rma_pair_close() closes both endpoints once (it may be called again, by
 * a fixture's teardown after the behaviour closed the pair itself).
 */
struct rma_pair {
    int srv, cli;
    uint8_t *rbuf; /* server (node 1) memory behind the window at roff */
    uint8_t *ubuf; /* client (node 0) memory for the v* calls */
    off_t roff;
};

int rma_pair_open(struct rma_pair *p, uint8_t *rbuf, uint8_t *ubuf, size_t len, off_t roff);
void rma_pair_close(struct rma_pair *p);

/*
 * The remote side of a benchmark, run in a child process: a listener on a
 * port of its own (scif_open(), so SCIF_NODE picks the node), a struct
 * window_hello (that port, the address of @buf) written to @wfd, one
 * connection accepted, @len bytes of @buf registered read-write at offset
 * 0, "r" written to @wfd, then it reads commands from @rfd: "w" registers
 * WINDOW_SERVER_EXTRA more one-page windows (at offsets @len, @len + 4096,
 * ..., memory of its own) and answers "k"; any other byte or end of file
 * closes and exits 0.  On error: "@who: child ...: error" on stderr, exit
 * status 1.
 */
#define WINDOW_SERVER_EXTRA 9999
struct window_hello {
    uint16_t port;
    uint64_t addr;
};

void window_server(const char *who, int wfd, int rfd, void *buf, size_t len)
    __attribute__((noreturn));

/* scif_fence_mark(SCIF_FENCE_INIT_SELF) and its wait on @epd: 0 or -1. */
int fence_all(int epd);

/* ---- the software DMA engine of the [dma] pass (debugfs.c, scif.c) ---- */

#define SWDMA_PARAM "/sys/module/scif_swdma/parameters/"
#define SCIF_PARAM "/sys/module/scif/parameters/"

/* Turn off every fault of scif_swdma (fail_submit, stall, delay_ms): 0 or not 0. */
int faults_off(void);

/* Descriptors scif_swdma has run (its parameter descs), or -1. */
long long swdma_descs(void);

/*
 * Wait (bounded, ~5 s) until the DMA channel moves data again (after a
 * reset scif asks for a channel only a second later): 16 pages read by
 * @p's client from its window.  0, or -1 with a diagnostic.
 */
int dma_ready(struct rma_pair *p);

/*
 * Skip unless the software DMA engine is loaded and node 1 is online; then
 * no fault is injected and the engine counts descriptors.
 */
#define NEED_DMA()                                                                                 \
    do {                                                                                           \
        if (!swdma_loaded())                                                                       \
            return test_skip("needs the software DMA engine ([dma] pass)");                        \
        REQUIRE_NODE(1);                                                                           \
        CHECK(faults_off() == 0);                                                                  \
        CHECK(swdma_descs() >= 0);                                                                 \
    } while (0)

/* ---- debugfs and sysfs (debugfs.c) ---- */

#define DBG_DIR "/sys/kernel/debug/scif"

/* The integer in a (sysfs, debugfs) file, or -1. */
long long read_long(const char *path);

/* Write an integer to a (sysfs, debugfs) file: 0 or -1. */
int write_long(const char *path, long long v);

/* A debugfs counter of the module (pinned_pages, rma_inflight, windows), or -1. */
long long dbg_counter(const char *name);

/* Wait up to ~20 s for a counter to reach @want; returns its last value. */
long long dbg_wait(const char *name, long long want);

/* Write an integer to a debugfs control of the module (node_lost, ...). */
int dbg_write(const char *name, int v);

/* "key value" line of the rma_dma debugfs file, or -1. */
long long dbg_dma_value(const char *key);

/*
 * Has the module a DMA channel (a line "channel NAME" of the rma_dma
 * debugfs file, not "channel none")?  1 or 0; -1 without the file.  The
 * module takes its channel on the first transfer between nodes.
 */
int dbg_dma_channel(void);

/* Endpoints the module has (first line of debugfs endpoints), or -1. */
long long dbg_endpoints(void);
/* The debugfs endpoints table (states, peers, references) as diagnostics. */
void dbg_endpoints_dump(void);

/*
 * KSFT_PASS once every RMA counter (rma_inflight, windows, pinned_pages,
 * mappings) is back to zero (each waited for as dbg_wait() does), else
 * KSFT_FAIL with the values.
 */
int rma_counters_zero(void);

/*
 * KSFT_PASS once the module holds nothing: no endpoint (waited for up to
 * ~20 s), the RMA counters of rma_counters_zero() and no queued DMA batch;
 * else KSFT_FAIL with the values.  For the end of a program that closed
 * everything it opened (nothing else may run meanwhile).
 */
int all_counters_zero(void);

/* Is the software DMA engine module loaded (the [dma] pass)? */
int swdma_loaded(void);

#endif /* OPENSCIF_SELFTESTS_LIB_SCIF_TEST_H */
