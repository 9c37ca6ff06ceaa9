// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_mmap / scif_munmap of a peer's window: sharing, protection that can
 * only narrow, errors, and teardown (SIGBUS once the window is gone).
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
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

/*
 * A mapping made over a readable window must not read a write-only window
 * registered later at the same offset: faults check the window they find.
 */
static int t_reprotect(void)
{
	struct mp m;
	uint8_t *p, *secret = map_anon(4 * PAGE);

	REQ(secret && setup(&m, 0, 0, RW) == 0);
	memset(secret, 0x5a, 4 * PAGE);
	p = scif_mmap(NULL, 4 * PAGE, SCIF_PROT_READ, 0, m.cli, WOFF);
	REQ(p != SCIF_MMAP_FAILED);
	REQ(p[1] == m.buf[1]);
	REQ(scif_unregister(m.srv, WOFF, 4 * PAGE) == 0);
	REQ(scif_register(m.srv, secret, 4 * PAGE, WOFF, SCIF_PROT_WRITE, SCIF_MAP_FIXED) == WOFF);
	if (!touch_sigbus(p)) {
		diag("read a write-only window through an old mapping (byte %#x)", p[0]);
		return KSFT_FAIL;
	}
	REQ(scif_munmap(p, 4 * PAGE) == 0);
	return KSFT_PASS;
}

/*
 * scif_register() whose result cannot be written back removes the window
 * again; a peer that mapped and touched it in between must lose the
 * mapping (SIGBUS), not keep pages that are no longer pinned; another
 * thread that unregistered it in between must not make the undo free it
 * twice.  The write-back is held up with a userfaultfd write-protect fault
 * so that both can happen while the window exists.
 */
struct regfault {
	struct mp m;
	int unreg;		/* 1: unregister it instead of mapping it */
	int uffd;
	void *wp_page;		/* holds out_offset, write-protected */
	volatile uint8_t *map;
	int step;		/* how far the helper thread got */
};

static void *regfault_helper(void *arg)
{
	struct regfault *r = arg;
	struct uffd_msg msg;
	struct pollfd pfd = { .fd = r->uffd, .events = POLLIN };
	uint8_t *p;

	if (poll(&pfd, 1, 20000) != 1 || read(r->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		goto out;
	r->step = 1;
	/* scif_register() is stuck writing out_offset: the window exists. */
	if (r->unreg) {
		if (scif_unregister(r->m.srv, WOFF + 8 * PAGE, PAGE) == 0)
			r->step = 3;
		goto out;
	}
	p = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, r->m.cli, WOFF + 8 * PAGE);
	if (p == SCIF_MMAP_FAILED)
		goto out;
	r->step = 2;
	if (p[0] != 0x77)
		goto out;
	r->map = p;
	r->step = 3;
out:
	/* Make the write-back fail: drop the page, wake the faulting write. */
	munmap(r->wp_page, PAGE);
	close(r->uffd);
	return NULL;
}

static int reg_efault(int unreg)
{
	struct regfault r = { .uffd = -1, .unreg = unreg };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register ureg;
	struct uffdio_writeprotect wp;
	struct scifioctl_reg *reg;
	uint8_t *arg, *win = map_anon(PAGE);
	pthread_t th;
	int ret;

	REQ(win && setup(&r.m, 0, 0, RW) == 0);
	memset(win, 0x77, PAGE);
	arg = map_anon(2 * PAGE);
	REQ(arg);
	memset(arg, 0, 2 * PAGE);
	/* out_offset is the first field on the second, write-protected page. */
	reg = (struct scifioctl_reg *)(arg + 2 * PAGE - 32 - PAGE);
	REQ(offsetof(struct scifioctl_reg, out_offset) == 32);
	reg->addr = (uintptr_t)win;
	reg->len = PAGE;
	reg->offset = WOFF + 8 * PAGE;
	reg->prot = RW;
	reg->flags = SCIF_MAP_FIXED;

	r.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (r.uffd < 0)
		return test_skip("userfaultfd: %s", strerror(errno));
	if (ioctl(r.uffd, UFFDIO_API, &api) ||
	    !(api.ioctls & (1ULL << _UFFDIO_REGISTER)))
		return test_skip("UFFDIO_API failed");
	r.wp_page = arg + PAGE;
	ureg.range.start = (uintptr_t)r.wp_page;
	ureg.range.len = PAGE;
	ureg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(r.uffd, UFFDIO_REGISTER, &ureg))
		return test_skip("userfaultfd write-protect: %s", strerror(errno));
	wp.range = ureg.range;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	REQ(ioctl(r.uffd, UFFDIO_WRITEPROTECT, &wp) == 0);
	REQ(pthread_create(&th, NULL, regfault_helper, &r) == 0);
	ret = ioctl(r.m.srv, SCIF_REG, reg);
	REQ(pthread_join(th, NULL) == 0);
	if (r.step < 3) {
		diag("helper stopped at step %d (register returned %d)", r.step, ret);
		return KSFT_FAIL;
	}
	REQ(ret == -1 && errno == EFAULT);
	/* The window is gone again ... */
	CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, r.m.cli, WOFF + 8 * PAGE), ENXIO);
	/* ... and so is the mapping of it. */
	if (!unreg && !touch_sigbus(r.map)) {
		diag("mapping of a window that failed to register is still readable");
		return KSFT_FAIL;
	}
	/* The other windows are intact and the counters come back. */
	REQ(scif_unregister(r.m.srv, WOFF, 8 * PAGE) == 0);
	REQ(scif_close(r.m.srv) == 0 && scif_close(r.m.cli) == 0);
	REQ(dbg_wait("windows", 0) == 0);
	return KSFT_PASS;
}

static int t_reg_efault_mapped(void) { return reg_efault(0); }
static int t_reg_efault_unreg(void) { return reg_efault(1); }

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
	{ "a later write-only window is not readable through an old mapping", t_reprotect, 0 },
	{ "SIGBUS after a register that failed to write its offset back", t_reg_efault_mapped, 0 },
	{ "register failing to write its offset back after an unregister", t_reg_efault_unreg, 0 },
};

int main(int argc, char **argv)
{
	return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
