// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Every errno of the registration, RMA and fence calls, each produced in
 * the situation the man pages name.
 */
#include <fcntl.h>
#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)

struct pair {
    int srv, cli;
    uint8_t *buf;
};

/* A connected pair, the server with a 4-page RW window at 0x100000. */
static int mkpair(struct pair *p, int snode, int cnode) {
    if (connect_pair(snode, cnode, &p->srv, &p->cli))
        return -1;
    p->buf = map_anon(16 * PAGE);
    if (!p->buf)
        return -1;
    if (scif_register(p->srv, p->buf, 4 * PAGE, 0x100000, RW, SCIF_MAP_FIXED) != 0x100000)
        return -1;
    return 0;
}

static int t_reg_einval(void) {
    struct pair p;

    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK_ERR(scif_register(p.cli, p.buf + 1, PAGE, 0, RW, 0), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE + 1, 0, RW, 0), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, 0, 0, RW, 0), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE, 0x1001, RW, SCIF_MAP_FIXED), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE, -PAGE, RW, SCIF_MAP_FIXED), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE, 0, 4, 0), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE, 0, RW, 0x1), EINVAL);
    CHECK_ERR(scif_register(p.cli, p.buf, PAGE, 0, RW, SCIF_MAP_KERNEL), EINVAL);
    return KSFT_PASS;
}

static int t_reg_offsets(void) {
    struct pair p;
    off_t a, b;

    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK_ERR(scif_register(p.srv, p.buf, PAGE, 0x101000, RW, SCIF_MAP_FIXED), EADDRINUSE);
    CHECK_ERR(scif_register(p.srv, p.buf, 2 * PAGE, 0x0ff000, RW, SCIF_MAP_FIXED), EADDRINUSE);
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x0ff000, RW, SCIF_MAP_FIXED) == 0x0ff000);
    a = scif_register(p.srv, p.buf, 2 * PAGE, 0, RW, 0);
    b = scif_register(p.srv, p.buf, 2 * PAGE, 0, RW, 0);
    CHECK(a >= 0 && b >= 0 && a % PAGE == 0 && b % PAGE == 0);
    CHECK(a + 2 * (off_t)PAGE <= b || b + 2 * (off_t)PAGE <= a);
    CHECK(scif_unregister(p.srv, a, 2 * PAGE) == 0);
    CHECK(scif_unregister(p.srv, b, 2 * PAGE) == 0);
    return KSFT_PASS;
}

static int t_reg_efault(void) {
    struct pair p;
    void *hole;

    CHECK(mkpair(&p, 0, 0) == 0);
    hole = map_anon(4 * PAGE);
    CHECK(hole && munmap(hole, 4 * PAGE) == 0);
    CHECK_ERR(scif_register(p.cli, hole, 4 * PAGE, 0, RW, 0), EFAULT);
    CHECK(dbg_counter("pinned_pages") >= 0);
    return KSFT_PASS;
}

static int t_reg_conn(void) {
    struct pair p;
    int e = ep_open(0);
    uint8_t *b = map_anon(PAGE);

    CHECK(e >= 0 && b);
    CHECK_ERR(scif_register(e, b, PAGE, 0, RW, 0), ENOTCONN);
    CHECK_ERR(scif_unregister(e, 0, PAGE), ENOTCONN);
    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK(scif_close(p.srv) == 0);
    CHECK_ERR(scif_register(p.cli, b, PAGE, 0, RW, 0), ECONNRESET);
    CHECK_ERR(scif_readfrom(p.cli, 0, 8, 0x100000, 0), ECONNRESET);
    CHECK_ERR(scif_vreadfrom(p.cli, b, 8, 0x100000, 0), ECONNRESET);
    return KSFT_PASS;
}

static int t_reg_memlock(void) {
    pid_t pid = fork();
    int st;

    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {16 * PAGE, 16 * PAGE};
        struct pair p;
        uint8_t *big = map_anon(64 * PAGE);

        if (setrlimit(RLIMIT_MEMLOCK, &rl) || setuid(65534) || !big || mkpair(&p, 0, 0))
            _exit(3);
        errno = 0;
        if (scif_register(p.cli, big, 64 * PAGE, 0, RW, 0) != -1 || errno != ENOMEM)
            _exit(1);
        if (scif_register(p.cli, big, 8 * PAGE, 0, RW, 0) < 0)
            _exit(2);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        diag("child status %#x (1: no ENOMEM past RLIMIT_MEMLOCK, 2: small register failed, 3: "
             "setup)",
             st);
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}

/*
 * Lengths far beyond every window fail with ENXIO before the kernel sizes
 * anything by them (a 2^40 byte range once made it try a 2 GiB page array,
 * warn and fail with ENOMEM).
 */
static int t_rma_huge(void) {
    struct pair p;
    uint8_t *u = map_anon(PAGE);
    const size_t huge = 1ULL << 40;

    CHECK(u && mkpair(&p, 0, 0) == 0);
    CHECK(scif_register(p.cli, p.buf + 8 * PAGE, 4 * PAGE, 0x10000, RW, SCIF_MAP_FIXED) == 0x10000);
    CHECK_ERR(scif_readfrom(p.cli, 0x10000, huge, 0x100000, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_writeto(p.cli, 0x10000, huge, 0x100000, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_readfrom(p.cli, 0x10000, huge, 0x100000, 0), ENXIO);
    CHECK_ERR(scif_vreadfrom(p.cli, u, huge, 0x100000, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vwriteto(p.cli, u, huge, 0x100000, SCIF_RMA_SYNC | SCIF_RMA_USECACHE), ENXIO);
    CHECK(scif_writeto(p.cli, 0x10000, 4 * PAGE, 0x100000, SCIF_RMA_SYNC) == 0);
    return KSFT_PASS;
}

/*
 * Pins kept by the registration cache (SCIF_RMA_USECACHE) are long-term
 * pins: without CAP_IPC_LOCK they must stay within RLIMIT_MEMLOCK, like
 * windows.  Over the limit the transfer still works, it just is not cached.
 */
static int t_cache_memlock(void) {
    int go[2], done[2], st;
    long long base, with;
    char c = 0;
    pid_t pid;

    CHECK(dbg_wait("pinned_pages", 0) == 0);
    base = dbg_counter("pinned_pages");
    CHECK(pipe(go) == 0 && pipe(done) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {16 * PAGE, 16 * PAGE};
        struct pair p;
        uint8_t *big = map_anon(64 * PAGE), *src = map_anon(64 * PAGE);

        /* As root: a 64 page window to write to (charged, allowed). */
        if (!big || !src || mkpair(&p, 0, 0) ||
            scif_register(p.srv, big, 64 * PAGE, 0x200000, RW, SCIF_MAP_FIXED) != 0x200000)
            _exit(3);
        if (setrlimit(RLIMIT_MEMLOCK, &rl) || setuid(65534))
            _exit(3);
        fill(src, 64 * PAGE, 5);
        if (scif_vwriteto(p.cli, src, 64 * PAGE, 0x200000, SCIF_RMA_SYNC | SCIF_RMA_USECACHE))
            _exit(1);
        if (memcmp(src, big, 64 * PAGE))
            _exit(2);
        if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(3);
        _exit(0);
    }
    close(done[1]);
    close(go[0]);
    CHECK(read(done[0], &c, 1) == 1);
    /* Windows: 4 (mkpair) + 64 pages; nothing cached past the limit. */
    with = dbg_counter("pinned_pages") - base;
    CHECK(write(go[1], &c, 1) == 1);
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        diag("child status %#x (1: transfer failed, 2: data, 3: setup)", st);
        return KSFT_FAIL;
    }
    if (with != 68) {
        diag("%lld pages pinned, want 68 (the cache pinned past RLIMIT_MEMLOCK)", with);
        return KSFT_FAIL;
    }
    CHECK(dbg_wait("pinned_pages", base) == base);
    return KSFT_PASS;
}

static int t_unreg(void) {
    struct pair p;

    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK_ERR(scif_unregister(p.srv, 0x100000, PAGE), EINVAL);
    CHECK_ERR(scif_unregister(p.srv, 0x101000, 3 * PAGE), EINVAL);
    CHECK_ERR(scif_unregister(p.srv, 0x100000, 5 * PAGE), ENXIO);
    CHECK_ERR(scif_unregister(p.srv, 0x900000, PAGE), ENXIO);
    CHECK_ERR(scif_unregister(p.srv, 0x100001, PAGE), EINVAL);
    CHECK(scif_unregister(p.srv, 0x100000, 4 * PAGE) == 0);
    CHECK_ERR(scif_unregister(p.srv, 0x100000, 4 * PAGE), ENXIO);
    /* Two adjacent windows go in one call. */
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x200000, RW, SCIF_MAP_FIXED) == 0x200000);
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x201000, RW, SCIF_MAP_FIXED) == 0x201000);
    CHECK(scif_unregister(p.srv, 0x200000, 2 * PAGE) == 0);
    return KSFT_PASS;
}

static int t_rma_enxio(void) {
    struct pair p;
    uint8_t *u = map_anon(8 * PAGE);

    CHECK(u && mkpair(&p, 0, 0) == 0);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 8, 0x900000, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 4 * PAGE + 1, 0x100000, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vwriteto(p.cli, u, 8, 0x0ffff8 + PAGE * 0, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 8, -8, SCIF_RMA_SYNC), ENXIO);
    /* Local offset outside local windows. */
    CHECK_ERR(scif_readfrom(p.cli, 0x500000, 8, 0x100000, SCIF_RMA_SYNC), ENXIO);
    /* Windows with a hole between them: no crossing. */
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x300000, RW, SCIF_MAP_FIXED) == 0x300000);
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x302000, RW, SCIF_MAP_FIXED) == 0x302000);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 2 * PAGE, 0x300000 + PAGE / 2, SCIF_RMA_SYNC), ENXIO);
    CHECK(scif_register(p.srv, p.buf + PAGE, PAGE, 0x301000, RW, SCIF_MAP_FIXED) == 0x301000);
    CHECK(scif_vreadfrom(p.cli, u, 2 * PAGE, 0x300000 + PAGE / 2, SCIF_RMA_SYNC) == 0);
    /* A window of the peer is not one of ours and vice versa. */
    CHECK_ERR(scif_vreadfrom(p.srv, u, 8, 0x100000, SCIF_RMA_SYNC), ENXIO);
    return KSFT_PASS;
}

static int t_rma_eacces(void) {
    struct pair p;
    uint8_t *u = map_anon(4 * PAGE), *l = map_anon(4 * PAGE);

    CHECK(u && l && mkpair(&p, 0, 0) == 0);
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x400000, SCIF_PROT_READ, SCIF_MAP_FIXED) == 0x400000);
    CHECK(scif_register(p.srv, p.buf, PAGE, 0x401000, SCIF_PROT_WRITE, SCIF_MAP_FIXED) == 0x401000);
    CHECK(scif_register(p.cli, l, PAGE, 0x10000, SCIF_PROT_READ, SCIF_MAP_FIXED) == 0x10000);
    CHECK_ERR(scif_vwriteto(p.cli, u, 8, 0x400000, SCIF_RMA_SYNC), EACCES);
    CHECK_ERR(scif_writeto(p.cli, 0x10000, 8, 0x400000, SCIF_RMA_SYNC), EACCES);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 8, 0x401000, SCIF_RMA_SYNC), EACCES);
    /* Local window read-only: cannot be the target of a readfrom. */
    CHECK_ERR(scif_readfrom(p.cli, 0x10000, 8, 0x400000, SCIF_RMA_SYNC), EACCES);
    /* Crossing from a readable into a write-only window. */
    CHECK_ERR(scif_vreadfrom(p.cli, u, 2 * PAGE, 0x400000, SCIF_RMA_SYNC), EACCES);
    CHECK(scif_vreadfrom(p.cli, u, 8, 0x400000, SCIF_RMA_SYNC) == 0);
    CHECK(scif_vwriteto(p.cli, u, 8, 0x401000, SCIF_RMA_SYNC) == 0);
    CHECK(scif_writeto(p.cli, 0x10000, 8, 0x401000, SCIF_RMA_SYNC) == 0);
    return KSFT_PASS;
}

static int t_rma_efault_einval(void) {
    struct pair p;
    void *hole = map_anon(4 * PAGE);
    uint8_t *u = map_anon(PAGE);
    struct scifioctl_copy c;

    CHECK(hole && u && munmap(hole, 4 * PAGE) == 0);
    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK_ERR(scif_vreadfrom(p.cli, hole, 8, 0x100000, SCIF_RMA_SYNC), EFAULT);
    CHECK_ERR(scif_vwriteto(p.cli, hole, 2 * PAGE, 0x100000, 0), EFAULT);
    CHECK_ERR(scif_vreadfrom(p.cli, (void *)0xffff800000000000ULL, 8, 0x100000, 0), EFAULT);
    /* Reading into read-only memory faults too. */
    CHECK(mprotect(u, PAGE, PROT_READ) == 0);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 8, 0x100000, SCIF_RMA_SYNC), EFAULT);
    CHECK_ERR(scif_vreadfrom(p.cli, u, 8, 0x100000, 0x10), EINVAL);
    CHECK_ERR(scif_readfrom(p.cli, 0, 8, 0x100000, 0x100), EINVAL);
    /* The ioctl argument itself is checked. */
    CHECK_ERR(ioctl(p.cli, SCIF_VREADFROM, (void *)8), EFAULT);
    memset(&c, 0, sizeof(c));
    c.len = 8;
    c.roffset = 0x100000;
    c.addr = (uintptr_t)hole;
    CHECK_ERR(ioctl(p.cli, SCIF_VREADFROM, &c), EFAULT);
    return KSFT_PASS;
}

static int t_rma_bad_epd(void) {
    uint8_t *u = map_anon(PAGE);
    int null_fd = open("/dev/null", O_RDWR), mark;
    int e = ep_open(0);

    CHECK(u && null_fd >= 0 && e >= 0);
    CHECK_ERR(scif_vreadfrom(-1, u, 8, 0, 0), EBADF);
    CHECK_ERR(scif_readfrom(12345, 0, 8, 0, 0), EBADF);
    CHECK_ERR(ioctl(null_fd, SCIF_VREADFROM, u), ENOTTY);
    CHECK_ERR(ioctl(null_fd, SCIF_REG, u), ENOTTY);
    CHECK_ERR(ioctl(e, _IOWR('s', 0x3f, struct scifioctl_copy), u), ENOTTY);
    CHECK_ERR(scif_vreadfrom(e, u, 8, 0, 0), ENOTCONN);
    CHECK_ERR(scif_writeto(e, 0, 8, 0, 0), ENOTCONN);
    CHECK_ERR(scif_fence_mark(e, SCIF_FENCE_INIT_SELF, &mark), ENOTCONN);
    CHECK_ERR(scif_fence_wait(e, 0), ENOTCONN);
    CHECK_ERR(scif_fence_signal(e, 0, 1, 0, 1, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL), ENOTCONN);
    return KSFT_PASS;
}

static int t_rma_enodev(void) {
    struct pair p;
    uint8_t *u = map_anon(PAGE);
    int mark, ret = KSFT_PASS;

    REQUIRE_NODE(1);
    if (access(DBG_DIR "/node_lost", W_OK))
        return test_skip("no node_lost control in debugfs");
    CHECK(u && mkpair(&p, 1, 0) == 0);
    CHECK(scif_vreadfrom(p.cli, u, 8, 0x100000, SCIF_RMA_SYNC) == 0);
    CHECK(dbg_write("node_lost", 1) == 0);
    errno = 0;
    if (scif_vreadfrom(p.cli, u, 8, 0x100000, SCIF_RMA_SYNC) != -1 || errno != ENODEV) {
        diag("vreadfrom after node loss: errno %d", errno);
        ret = KSFT_FAIL;
    }
    errno = 0;
    if (scif_fence_mark(p.cli, SCIF_FENCE_INIT_PEER, &mark) != -1 || errno != ENODEV) {
        diag("fence_mark after node loss: errno %d", errno);
        ret = KSFT_FAIL;
    }
    CHECK(dbg_write("node_online", 1) == 0);
    return ret;
}

static int t_fence_einval_enxio(void) {
    struct pair p;
    int mark;

    CHECK(mkpair(&p, 0, 0) == 0);
    CHECK(scif_register(p.cli, p.buf + 8 * PAGE, PAGE, 0x10000, RW, SCIF_MAP_FIXED) == 0x10000);
    CHECK_ERR(scif_fence_mark(p.cli, 0, &mark), EINVAL);
    CHECK_ERR(scif_fence_mark(p.cli, SCIF_FENCE_INIT_SELF | SCIF_FENCE_INIT_PEER, &mark), EINVAL);
    CHECK_ERR(scif_fence_mark(p.cli, SCIF_FENCE_INIT_SELF | 0x100, &mark), EINVAL);
    CHECK_ERR(scif_fence_wait(p.cli, -5), EINVAL);
    CHECK_ERR(scif_fence_signal(p.cli, 0x10000, 1, 0x100000, 1, SCIF_SIGNAL_LOCAL), EINVAL);
    CHECK_ERR(scif_fence_signal(p.cli, 0x10000, 1, 0x100000, 1, SCIF_FENCE_INIT_SELF), EINVAL);
    CHECK_ERR(scif_fence_signal(p.cli, 0x10000, 1, 0x100000, 1,
                                SCIF_FENCE_INIT_SELF | SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_LOCAL),
              EINVAL);
    CHECK_ERR(scif_fence_signal(p.cli, 0x10004, 1, 0, 0, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL),
              EINVAL);
    CHECK_ERR(
        scif_fence_signal(p.cli, 0, 0, 0x100004, 1, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_REMOTE),
        EINVAL);
    CHECK_ERR(scif_fence_signal(p.cli, 0x90000, 1, 0, 0, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL),
              ENXIO);
    CHECK_ERR(
        scif_fence_signal(p.cli, 0, 0, 0x900000, 1, SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_REMOTE),
        ENXIO);
    CHECK(scif_fence_signal(p.cli, 0x10008, 7, 0x100010, 9,
                            SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE) == 0);
    CHECK(*(volatile uint64_t *)(p.buf + 8 * PAGE + 8) == 7);
    CHECK(*(volatile uint64_t *)(p.buf + 0x10) == 9);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"scif_register: EINVAL for alignment, length, prot and flags", t_reg_einval, 0},
    {"scif_register: fixed offsets, EADDRINUSE, allocator", t_reg_offsets, 0},
    {"scif_register: EFAULT for unmapped memory", t_reg_efault, 0},
    {"register/RMA: ENOTCONN unconnected, ECONNRESET after peer close", t_reg_conn, 0},
    {"scif_register: ENOMEM past RLIMIT_MEMLOCK without CAP_IPC_LOCK", t_reg_memlock, 0},
    {"scif_register: USECACHE pins stay within RLIMIT_MEMLOCK", t_cache_memlock, 0},
    {"scif_unregister: EINVAL partial, ENXIO no window", t_unreg, 0},
    {"RMA: ENXIO outside windows and across holes", t_rma_enxio, 0},
    {"RMA: EACCES against window protections", t_rma_eacces, 0},
    {"RMA: ENXIO for lengths far beyond every window", t_rma_huge, 0},
    {"RMA: EFAULT bad user memory, EINVAL bad flags", t_rma_efault_einval, 0},
    {"RMA/fence: EBADF, ENOTTY, ENOTCONN for bad endpoints", t_rma_bad_epd, 0},
    {"RMA/fence: ENODEV after the peer's node is lost", t_rma_enodev, 0},
    {"fence: EINVAL flags/alignment, ENXIO outside windows", t_fence_einval_enxio, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
