// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fork of a process that registered a window (docs/rma.md, "fork"): the
 * pinned pages stay the parent's, the child's copy of the range is private,
 * and neither side's data is corrupted by the other.
 */
#include <sys/wait.h>
#include "scif_test.h"

#define WOFF 0x200000L
#define WLEN (4 * PAGE)
#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)

/*
 * Server registers buf as a RW window at WOFF, filled with a pattern; *want
 * (if asked for) is a private copy of that pattern.
 */
static int setup(int *srv, int *cli, uint8_t **buf, uint8_t **want) {
    CHECK(connect_pair(0, peer_node(), srv, cli) == 0);
    *buf = map_anon(WLEN);
    CHECK(*buf);
    fill(*buf, WLEN, 1);
    CHECK(scif_register(*srv, *buf, WLEN, WOFF, RW, SCIF_MAP_FIXED) == WOFF);
    if (want) {
        *want = map_anon(WLEN);
        CHECK(*want);
        memcpy(*want, *buf, WLEN);
    }
    return 0;
}

/* Read the peer window through RMA and compare it with the expected bytes. */
static int window_holds(int cli, const uint8_t *want, const char *what) {
    uint8_t *got = map_anon(WLEN);
    long long d;

    CHECK(got);
    CHECK(scif_vreadfrom(cli, got, WLEN, WOFF, SCIF_RMA_SYNC) == 0);
    d = first_diff(got, want, WLEN);
    munmap(got, WLEN);
    CHECK(d < 0, "%s: window differs at byte %lld", what, d);
    return 0;
}

/*
 * The child overwrites its copy of the registered range: the window (and the
 * parent's memory) keep the parent's bytes.  Then the parent writes its
 * buffer and the peer writes through RMA: both land in the parent's pages.
 */
static int t_child_writes_private(void) {
    int srv, cli, st;
    uint8_t *buf, *want;
    pid_t pid;

    CHECK(setup(&srv, &cli, &buf, &want) == 0);

    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        memset(buf, 0xCC, WLEN);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(first_diff(buf, want, WLEN) < 0, "the child's writes reached the parent");
    if (window_holds(cli, want, "after the child wrote its copy"))
        return KSFT_FAIL;

    /* The parent's later writes are what the peer sees (no stale CoW copy). */
    fill(buf, WLEN, 2);
    memcpy(want, buf, WLEN);
    if (window_holds(cli, want, "after the parent wrote post-fork"))
        return KSFT_FAIL;

    /* RMA writes land in the parent's memory. */
    fill(want, WLEN, 3);
    CHECK(scif_vwriteto(cli, want, WLEN, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(buf, want, WLEN) < 0, "an RMA write missed the parent's pages");
    return 0;
}

/*
 * The child inherits the descriptors: its RMA through the inherited client
 * endpoint moves data between its own memory and the same peer window, and
 * the parent's data is intact afterwards.
 */
static int t_child_rma_inherited_endpoint(void) {
    int srv, cli, st;
    uint8_t *buf, *want;
    pid_t pid;

    CHECK(setup(&srv, &cli, &buf, &want) == 0);

    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        uint8_t *mine = map_anon(WLEN);

        if (!mine || scif_vreadfrom(cli, mine, WLEN, WOFF, SCIF_RMA_SYNC))
            _exit(2);
        _exit(first_diff(mine, want, WLEN) < 0 ? 0 : 3);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0,
          "child RMA through the inherited endpoint: status %d "
          "(2 = call failed, 3 = wrong data)",
          WEXITSTATUS(st));
    CHECK(first_diff(buf, want, WLEN) < 0, "the parent's window memory changed");
    return window_holds(cli, want, "after the child's RMA");
}

/* After both sides closed, every page pinned for the windows is released. */
static int t_counters_after_fork(void) {
    int srv, cli, st;
    uint8_t *buf;
    pid_t pid;

    CHECK(setup(&srv, &cli, &buf, NULL) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(0); /* exits holding copies of both descriptors */
    CHECK(waitpid(pid, &st, 0) == pid);
    scif_close(cli);
    scif_close(srv);
    CHECK(dbg_wait("windows", 0) == 0, "windows left registered");
    CHECK(dbg_wait("pinned_pages", 0) == 0, "pages left pinned");
    return 0;
}

static const struct scif_test tests[] = {
    {"fork: the child's writes stay private, the window keeps the parent's pages",
     t_child_writes_private, 0},
    {"fork: the child's RMA through an inherited endpoint works, parent intact",
     t_child_rma_inherited_endpoint, 0},
    {"fork: windows and pins return to zero after both sides close", t_counters_after_fork, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
