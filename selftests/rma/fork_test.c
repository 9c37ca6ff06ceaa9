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
 * A pair, server on node 0, client on the peer node; the server registers
 * buf as a RW window at WOFF, filled with a pattern; want is a private copy
 * of that pattern.
 */
FIXTURE(fk) {
    int srv, cli;
    uint8_t *buf, *want;
};

FIXTURE_SETUP(fk) {
    CHECK(connect_pair(0, peer_node(), &self->srv, &self->cli) == 0);
    self->buf = rma_window(self->srv, WLEN, WOFF, RW);
    self->want = map_anon(WLEN);
    CHECK(self->buf && self->want);
    fill(self->buf, WLEN, 1);
    memcpy(self->want, self->buf, WLEN);
    return KSFT_PASS;
}

/* Nothing: the behaviours close what they check the closing of. */
FIXTURE_TEARDOWN(fk) {}

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
TEST_F(fk, child_writes_private) {
    int st;
    pid_t pid;

    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        memset(self->buf, 0xCC, WLEN);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(first_diff(self->buf, self->want, WLEN) < 0, "the child's writes reached the parent");
    if (window_holds(self->cli, self->want, "after the child wrote its copy"))
        return KSFT_FAIL;

    /* The parent's later writes are what the peer sees (no stale CoW copy). */
    fill(self->buf, WLEN, 2);
    memcpy(self->want, self->buf, WLEN);
    if (window_holds(self->cli, self->want, "after the parent wrote post-fork"))
        return KSFT_FAIL;

    /* RMA writes land in the parent's memory. */
    fill(self->want, WLEN, 3);
    CHECK(scif_vwriteto(self->cli, self->want, WLEN, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(self->buf, self->want, WLEN) < 0, "an RMA write missed the parent's pages");
    return 0;
}

/*
 * The child inherits the descriptors: its RMA through the inherited client
 * endpoint moves data between its own memory and the same peer window, and
 * the parent's data is intact afterwards.
 */
TEST_F(fk, child_rma_inherited_endpoint) {
    int st;
    pid_t pid;

    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        uint8_t *mine = map_anon(WLEN);

        if (!mine || scif_vreadfrom(self->cli, mine, WLEN, WOFF, SCIF_RMA_SYNC))
            _exit(2);
        _exit(first_diff(mine, self->want, WLEN) < 0 ? 0 : 3);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0,
          "child RMA through the inherited endpoint: status %d "
          "(2 = call failed, 3 = wrong data)",
          WEXITSTATUS(st));
    CHECK(first_diff(self->buf, self->want, WLEN) < 0, "the parent's window memory changed");
    return window_holds(self->cli, self->want, "after the child's RMA");
}

/* After both sides closed, every page pinned for the windows is released. */
TEST_F(fk, counters_after_fork) {
    int st;
    pid_t pid;

    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(0); /* exits holding copies of both descriptors */
    CHECK(waitpid(pid, &st, 0) == pid);
    scif_close(self->cli);
    scif_close(self->srv);
    CHECK(dbg_wait("windows", 0) == 0, "windows left registered");
    CHECK(dbg_wait("pinned_pages", 0) == 0, "pages left pinned");
    return 0;
}

static const struct scif_test tests[] = {
    {"fork: the child's writes stay private, the window keeps the parent's pages",
     fk_child_writes_private, 0},
    {"fork: the child's RMA through an inherited endpoint works, parent intact",
     fk_child_rma_inherited_endpoint, 0},
    {"fork: windows and pins return to zero after both sides close", fk_counters_after_fork, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
