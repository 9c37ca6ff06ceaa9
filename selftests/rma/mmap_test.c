// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_mmap / scif_munmap of a peer's window: sharing, protection that can
 * only narrow, errors, and teardown (SIGBUS once the window is gone).
 */
#include <setjmp.h>
#include "rma_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define WOFF 0x800000L

struct mp {
	int srv, cli;
	uint8_t *buf;
};

static int setup(struct mp *m, int snode, int cnode, int prot)
{
	if (connect_pair(snode, cnode, &m->srv, &m->cli))
		return -1;
	m->buf = map_anon(8 * PAGE);
	if (!m->buf)
		return -1;
	fill(m->buf, 8 * PAGE, 11);
	if (scif_register(m->srv, m->buf, 4 * PAGE, WOFF, prot, SCIF_MAP_FIXED) != WOFF ||
	    scif_register(m->srv, m->buf + 4 * PAGE, 4 * PAGE, WOFF + 4 * PAGE, prot,
			  SCIF_MAP_FIXED) != WOFF + 4 * (off_t)PAGE)
		return -1;
	return 0;
}

static int share(int snode, int cnode)
{
	struct mp m;
	uint8_t *p;

	if (snode || cnode)
		REQUIRE_NODE(1);
	REQ(setup(&m, snode, cnode, RW) == 0);
	/* Spans both windows. */
	p = scif_mmap(NULL, 8 * PAGE, RW, 0, m.cli, WOFF);
	REQ(p != SCIF_MMAP_FAILED);
	REQ(memcmp(p, m.buf, 8 * PAGE) == 0);
	memset(p + 100, 0xab, 5 * PAGE);
	REQ(memcmp(p, m.buf, 8 * PAGE) == 0);
	m.buf[7 * PAGE + 5] = 0x17;
	REQ(p[7 * PAGE + 5] == 0x17);
	REQ(scif_munmap(p, 8 * PAGE) == 0);
	/* A part of a window at an offset inside it. */
	p = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, m.cli, WOFF + 2 * PAGE);
	REQ(p != SCIF_MMAP_FAILED);
	REQ(memcmp(p, m.buf + 2 * PAGE, PAGE) == 0);
	REQ(scif_munmap(p, PAGE) == 0);
	return KSFT_PASS;
}

static int t_share_loop(void) { return share(0, 0); }
static int t_share_node(void) { return share(1, 0); }

static int t_prot(void)
{
	struct mp m;
	uint8_t *p;

	REQ(setup(&m, 0, 0, SCIF_PROT_READ) == 0);
	CHECK_ERR(scif_mmap(NULL, PAGE, RW, 0, m.cli, WOFF), EACCES);
	p = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, m.cli, WOFF);
	REQ(p != SCIF_MMAP_FAILED);
	REQ(p[3] == m.buf[3]);
	/* Cannot be widened later. */
	CHECK_ERR(mprotect(p, PAGE, PROT_READ | PROT_WRITE), EACCES);
	REQ(scif_munmap(p, PAGE) == 0);
	return KSFT_PASS;
}

static int t_errors(void)
{
	struct mp m;
	int e = ep_open(0);
	void *r;

	REQ(e >= 0);
	CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, e, 0), ENOTCONN);
	REQ(setup(&m, 0, 0, RW) == 0);
	CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, m.cli, 0x100000), ENXIO);
	CHECK_ERR(scif_mmap(NULL, 9 * PAGE, SCIF_PROT_READ, 0, m.cli, WOFF), ENXIO);
	/* Our own windows are not the peer's. */
	CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, m.srv, WOFF), ENXIO);
	r = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, m.cli, WOFF);
	REQ(r == MAP_FAILED && errno == EINVAL);
	return KSFT_PASS;
}

static sigjmp_buf jb;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Touch p; 1 when that raised SIGBUS. */
static int touch_sigbus(volatile uint8_t *p)
{
	struct sigaction sa;
	int got;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jb, 1)) {
		got = 1;
	} else {
		(void)p[0];
		got = 0;
	}
	signal(SIGBUS, SIG_DFL);
	return got;
}

static int teardown(int how)
{
	struct mp m;
	uint8_t *p;

	REQ(setup(&m, 0, 0, RW) == 0);
	p = scif_mmap(NULL, 4 * PAGE, RW, 0, m.cli, WOFF);
	REQ(p != SCIF_MMAP_FAILED);
	REQ(p[1] == m.buf[1]);
	if (how == 0)
		REQ(scif_unregister(m.srv, WOFF, 4 * PAGE) == 0);
	else if (how == 1)
		REQ(scif_close(m.srv) == 0);
	else
		REQ(scif_close(m.cli) == 0);
	if (how == 2) {
		/*
		 * Like any mmap, the mapping holds the file: closing the
		 * descriptor keeps the endpoint (and the mapping) alive.
		 */
		if (touch_sigbus(p) || p[2] != m.buf[2]) {
			diag("mapping lost after closing its descriptor");
			return KSFT_FAIL;
		}
		REQ(scif_munmap(p, 4 * PAGE) == 0);
		/* Now the endpoint is released and its peer sees the reset. */
		CHECK_ERR(scif_vreadfrom(m.srv, m.buf, 8, 0, SCIF_RMA_SYNC), ECONNRESET);
		return KSFT_PASS;
	}
	if (!touch_sigbus(p)) {
		diag("mapping still readable after teardown %d", how);
		return KSFT_FAIL;
	}
	REQ(scif_munmap(p, 4 * PAGE) == 0);
	if (how == 0) {
		REQ(scif_unregister(m.srv, WOFF + 4 * PAGE, 4 * PAGE) == 0);
		REQ(dbg_wait("windows", 0) == 0);
	}
	return KSFT_PASS;
}

static int t_td_unreg(void) { return teardown(0); }
static int t_td_peer_close(void) { return teardown(1); }
static int t_td_own_close(void) { return teardown(2); }

/* The mapping outlives everything; pages are released at munmap/exit. */
static int t_td_counters(void)
{
	pid_t pid = fork();
	int st;

	REQ(pid >= 0);
	if (pid == 0) {
		struct mp m;
		uint8_t *p;

		if (setup(&m, 0, 0, RW))
			_exit(1);
		p = scif_mmap(NULL, 8 * PAGE, RW, 0, m.cli, WOFF);
		if (p == SCIF_MMAP_FAILED)
			_exit(2);
		p[0] = 1;
		close(m.cli);
		close(m.srv);
		_exit(0);	/* mapping torn down by exit */
	}
	REQ(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQ(dbg_wait("windows", 0) == 0);
	REQ(dbg_wait("pinned_pages", 0) == 0);
	return KSFT_PASS;
}

static const struct scif_test tests[] = {
	{ "mapping shares memory with the peer window (loopback)", t_share_loop, 0 },
	{ "mapping shares memory with the peer window (node 1)", t_share_node, 0 },
	{ "protection can only narrow: EACCES, mprotect refused", t_prot, 0 },
	{ "ENOTCONN, ENXIO, EINVAL (MAP_PRIVATE)", t_errors, 0 },
	{ "SIGBUS after the peer unregisters", t_td_unreg, 0 },
	{ "SIGBUS after the peer closes", t_td_peer_close, 0 },
	{ "closing the mapping descriptor keeps the mapping until munmap", t_td_own_close, 0 },
	{ "exit with a live mapping: counters return to zero", t_td_counters, 0 },
};

int main(int argc, char **argv)
{
	return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
