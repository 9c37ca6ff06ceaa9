// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_mmap / scif_munmap of a peer's window: sharing, protection that can
 * only narrow, errors, and the life time of a mapping as Intel's SCIF
 * documents it: the pages stay mapped until munmap whatever the owner does
 * (unregister, close, exit, node loss); an unregistered window lingers,
 * offsets reserved, until its last mapping is gone.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/userfaultfd.h>
#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define WOFF 0x800000L

/* A pair; the server's 8 pages (a pattern) are two windows of 4 at WOFF. */
FIXTURE(mp) {
    int srv, cli;
    uint8_t *buf;
};

/* Server on snode, client on cnode, the windows registered with prot. */
FIXTURE_VARIANT(mp) {
    int snode, cnode, prot;
};

FIXTURE_VARIANT_ADD(mp, loopback){.snode = 0, .cnode = 0, .prot = RW};
FIXTURE_VARIANT_ADD(mp, node){.snode = 1, .cnode = 0, .prot = RW};
FIXTURE_VARIANT_ADD(mp, rdonly){.snode = 0, .cnode = 0, .prot = SCIF_PROT_READ};
FIXTURE_VARIANT_ADD(mp, wronly){.snode = 0, .cnode = 0, .prot = SCIF_PROT_WRITE};

FIXTURE_SETUP(mp) {
    if (!variant)
        variant = &mp_variant_loopback;
    if (variant->snode || variant->cnode)
        REQUIRE_NODE(1);
    CHECK(connect_pair(variant->snode, variant->cnode, &self->srv, &self->cli) == 0);
    self->buf = map_anon(8 * PAGE);
    CHECK(self->buf);
    fill(self->buf, 8 * PAGE, 11);
    CHECK(scif_register(self->srv, self->buf, 4 * PAGE, WOFF, variant->prot, SCIF_MAP_FIXED) ==
          WOFF);
    CHECK(scif_register(self->srv, self->buf + 4 * PAGE, 4 * PAGE, WOFF + 4 * PAGE, variant->prot,
                        SCIF_MAP_FIXED) == WOFF + 4 * (off_t)PAGE);
    return KSFT_PASS;
}

/* Nothing: the behaviours close and unmap what they check the release of. */
FIXTURE_TEARDOWN(mp) {}

TEST_F(mp, share) {
    uint8_t *p;

    /* Spans both windows. */
    p = scif_mmap(NULL, 8 * PAGE, RW, 0, self->cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(memcmp(p, self->buf, 8 * PAGE) == 0);
    memset(p + 100, 0xab, 5 * PAGE);
    CHECK(memcmp(p, self->buf, 8 * PAGE) == 0);
    self->buf[7 * PAGE + 5] = 0x17;
    CHECK(p[7 * PAGE + 5] == 0x17);
    CHECK(scif_munmap(p, 8 * PAGE) == 0);
    /* A part of a window at an offset inside it. */
    p = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF + 2 * PAGE);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(memcmp(p, self->buf + 2 * PAGE, PAGE) == 0);
    CHECK(scif_munmap(p, PAGE) == 0);
    return KSFT_PASS;
}

TEST_F_VARIANT(mp, share, loopback);
TEST_F_VARIANT(mp, share, node);

TEST_F(mp, prot) {
    uint8_t *p;

    CHECK_ERR(scif_mmap(NULL, PAGE, RW, 0, self->cli, WOFF), EACCES);
    p = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(p[3] == self->buf[3]);
    /* Cannot be widened later. */
    CHECK_ERR(mprotect(p, PAGE, PROT_READ | PROT_WRITE), EACCES);
    CHECK(scif_munmap(p, PAGE) == 0);
    return KSFT_PASS;
}
TEST_F_VARIANT(mp, prot, rdonly);

TEST_F(mp, errors) {
    int e = ep_open(0);
    void *r;

    CHECK(e >= 0);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, e, 0), ENOTCONN);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, 0x100000), ENXIO);
    CHECK_ERR(scif_mmap(NULL, 9 * PAGE, SCIF_PROT_READ, 0, self->cli, WOFF), ENXIO);
    /* Our own windows are not the peer's. */
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->srv, WOFF), ENXIO);
    r = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, self->cli, WOFF);
    CHECK(r == MAP_FAILED && errno == EINVAL);
    return KSFT_PASS;
}

static sigjmp_buf jb;

static void on_sigbus(int sig) {
    (void)sig;
    siglongjmp(jb, 1);
}

/* Touch p; 1 when that raised SIGBUS. */
static int touch_sigbus(volatile uint8_t *p) {
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

/*
 * The mapping p of len bytes still is the owner's buffer: every page reads
 * without SIGBUS and matches, and stores go both ways (when writable).
 */
static int same_pages(uint8_t *p, uint8_t *buf, size_t len, int writable) {
    size_t i;

    for (i = 0; i < len; i += PAGE)
        if (touch_sigbus(p + i)) {
            diag("SIGBUS at page %zu of the mapping", i / PAGE);
            return -1;
        }
    if (memcmp(p, buf, len)) {
        diag("mapping differs from the window's pages at byte %lld", first_diff(p, buf, len));
        return -1;
    }
    buf[len - 3] ^= 0x5a;
    if (p[len - 3] != buf[len - 3]) {
        diag("owner's store not seen through the mapping");
        return -1;
    }
    if (writable) {
        p[7] ^= 0xa5;
        if (buf[7] != p[7]) {
            diag("store through the mapping not seen by the owner");
            return -1;
        }
    }
    return 0;
}

/* Map the fixture's first window (read and write) and touch a page. */
static uint8_t *setup_mapped(struct mp_fixture *m) {
    uint8_t *p;

    p = scif_mmap(NULL, 4 * PAGE, RW, 0, m->cli, WOFF);
    if (p == SCIF_MMAP_FAILED) {
        diag("scif_mmap: %s", strerror(errno));
        return NULL;
    }
    if (p[1] != m->buf[1]) {
        diag("mapping does not show the window");
        return NULL;
    }
    return p;
}

/*
 * Unregistering a mapped window succeeds, the mapping keeps the window's
 * pages (the owner's buffer), and the window's offsets are no longer
 * registered: RMA, mmap and unregister there fail with ENXIO.
 */
TEST_F(mp, unreg_keeps) {
    uint8_t *p, *u = map_anon(4 * PAGE);

    CHECK(u);
    p = setup_mapped(self); /* one page faulted before, the others after */
    CHECK(p);
    CHECK(scif_unregister(self->srv, WOFF, 4 * PAGE) == 0);
    CHECK(same_pages(p, self->buf, 4 * PAGE, 1) == 0);
    CHECK_ERR(scif_vreadfrom(self->cli, u, PAGE, WOFF, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_vwriteto(self->cli, u, PAGE, WOFF + PAGE, SCIF_RMA_SYNC), ENXIO);
    /* a range that starts in the next, registered window and runs back is refused too */
    CHECK_ERR(scif_vreadfrom(self->cli, u, 2 * PAGE, WOFF + 3 * PAGE, SCIF_RMA_SYNC), ENXIO);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF), ENXIO);
    CHECK_ERR(scif_unregister(self->srv, WOFF, 4 * PAGE), ENXIO);
    CHECK_ERR(scif_unregister(self->srv, WOFF, 8 * PAGE), ENXIO);
    /* The other window is untouched. */
    CHECK(scif_vreadfrom(self->cli, u, PAGE, WOFF + 4 * PAGE, SCIF_RMA_SYNC) == 0);
    CHECK(memcmp(u, self->buf + 4 * PAGE, PAGE) == 0);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    CHECK(scif_unregister(self->srv, WOFF + 4 * PAGE, 4 * PAGE) == 0);
    return rma_counters_zero();
}

/*
 * An unregistered window that is still mapped keeps its offsets: no
 * registration can take them (and no fault of the old mapping can reach a
 * new window there) until the last mapping is gone.
 */
TEST_F(mp, unreg_reserved) {
    uint8_t *p, *q, *secret = map_anon(8 * PAGE);
    off_t o;

    CHECK(secret);
    memset(secret, 0x5a, 8 * PAGE);
    /* Two mappings of the first window: both must go. */
    p = scif_mmap(NULL, 4 * PAGE, RW, 0, self->cli, WOFF);
    q = scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF + 3 * PAGE);
    CHECK(p != SCIF_MMAP_FAILED && q != SCIF_MMAP_FAILED);
    CHECK(p[0] == self->buf[0]); /* only page 0 faulted before the unregister */
    CHECK(scif_unregister(self->srv, WOFF, 4 * PAGE) == 0);
    CHECK(dbg_wait("windows", 2) == 2 && dbg_wait("mappings", 2) == 2);
    CHECK_ERR(scif_register(self->srv, secret, 4 * PAGE, WOFF, SCIF_PROT_WRITE, SCIF_MAP_FIXED),
              EADDRINUSE);
    CHECK_ERR(scif_register(self->srv, secret, PAGE, WOFF + 2 * PAGE, RW, SCIF_MAP_FIXED),
              EADDRINUSE);
    CHECK_ERR(scif_register(self->srv, secret, 2 * PAGE, WOFF - PAGE, RW, SCIF_MAP_FIXED),
              EADDRINUSE);
    o = scif_register(self->srv, secret, 8 * PAGE, 0, RW, 0);
    CHECK(o >= 0);
    if (o < WOFF + 8 * (off_t)PAGE && o + 8 * (off_t)PAGE > WOFF) {
        diag("allocator placed a window at %#llx, over the reserved range", (long long)o);
        return KSFT_FAIL;
    }
    /* Pages first touched now still are the old window's. */
    CHECK(same_pages(p, self->buf, 4 * PAGE, 1) == 0);
    CHECK(memcmp(q, self->buf + 3 * PAGE, PAGE) == 0);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    CHECK_ERR(scif_register(self->srv, secret, 4 * PAGE, WOFF, RW, SCIF_MAP_FIXED), EADDRINUSE);
    CHECK(scif_munmap(q, PAGE) == 0);
    /* Last mapping gone: the window and its pins are released ... */
    CHECK(dbg_wait("windows", 2) == 2 && dbg_wait("mappings", 0) == 0);
    CHECK(dbg_wait("pinned_pages", 12) == 12);
    /* ... and the offsets can be registered again, with new pages. */
    CHECK(scif_register(self->srv, secret, 4 * PAGE, WOFF, RW, SCIF_MAP_FIXED) == WOFF);
    p = scif_mmap(NULL, 4 * PAGE, SCIF_PROT_READ, 0, self->cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(memcmp(p, secret, 4 * PAGE) == 0);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    CHECK(scif_close(self->srv) == 0 && scif_close(self->cli) == 0);
    return rma_counters_zero();
}

/*
 * A mapping split by mprotect, partly unmapped and partly moved by mremap
 * keeps its windows until its last part is unmapped.
 */
TEST_F(mp, split) {
    uint8_t *p, *to, *np;

    p = scif_mmap(NULL, 8 * PAGE, RW, 0, self->cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(p[0] == self->buf[0]);
    CHECK(mprotect(p + 2 * PAGE, 4 * PAGE, PROT_READ) == 0);
    CHECK(scif_unregister(self->srv, WOFF, 8 * PAGE) == 0);
    CHECK(scif_munmap(p, 2 * PAGE) == 0);
    CHECK(memcmp(p + 2 * PAGE, self->buf + 2 * PAGE, 6 * PAGE) == 0);
    CHECK(same_pages(p + 6 * PAGE, self->buf + 6 * PAGE, 2 * PAGE, 1) == 0);
    self->buf[3 * PAGE + 9] = 0x42;
    CHECK(p[3 * PAGE + 9] == 0x42);
    /* Move the middle part elsewhere. */
    to = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(to != MAP_FAILED);
    np = mremap(p + 2 * PAGE, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    CHECK(np == to);
    CHECK(scif_munmap(p + 6 * PAGE, 2 * PAGE) == 0);
    CHECK(same_pages(np, self->buf + 2 * PAGE, 4 * PAGE, 0) == 0);
    CHECK_ERR(scif_register(self->srv, self->buf, 8 * PAGE, WOFF, RW, SCIF_MAP_FIXED), EADDRINUSE);
    CHECK(dbg_wait("windows", 2) == 2 && dbg_wait("mappings", 1) == 1);
    CHECK(scif_munmap(np, 4 * PAGE) == 0);
    CHECK(rma_counters_zero() == KSFT_PASS);
    CHECK(scif_register(self->srv, self->buf, 8 * PAGE, WOFF, RW, SCIF_MAP_FIXED) == WOFF);
    return KSFT_PASS;
}

/*
 * The owner closes its endpoint: the mapping keeps working on the same
 * pages; its unmapped windows are released at once, the mapped one at
 * munmap.
 */
TEST_F(mp, owner_close) {
    uint8_t *p;

    p = setup_mapped(self);
    CHECK(p);
    CHECK(scif_close(self->srv) == 0);
    CHECK(dbg_wait("windows", 1) == 1);
    CHECK(same_pages(p, self->buf, 4 * PAGE, 1) == 0);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF), ECONNRESET);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    return rma_counters_zero();
}

/*
 * Closing the mapper's own descriptor keeps the mapping (it holds the
 * file, like any mmap) and so the connection, until munmap.
 */
TEST_F(mp, own_close) {
    uint8_t *p;

    p = setup_mapped(self);
    CHECK(p);
    CHECK(scif_close(self->cli) == 0);
    CHECK(same_pages(p, self->buf, 4 * PAGE, 1) == 0);
    CHECK(scif_vreadfrom(self->srv, self->buf, 8, 0, SCIF_RMA_SYNC) == -1 && errno == ENXIO);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    /* Now the endpoint is released and its peer sees the reset. */
    CHECK_ERR(scif_vreadfrom(self->srv, self->buf, 8, 0, SCIF_RMA_SYNC), ECONNRESET);
    return KSFT_PASS;
}

/*
 * The owner process dies: the mapping keeps the window's pages (nobody
 * else has them any more) until munmap, which releases pins, the memlock
 * charge of the dead process and the window.
 */
static int t_owner_death(void) {
    int srv, cli, pfd[2], st;
    uint8_t *p, *want = map_anon(4 * PAGE);
    pid_t pid;
    char c;

    CHECK(want && connect_pair(0, 0, &srv, &cli) == 0 && pipe(pfd) == 0);
    fill(want, 4 * PAGE, 23);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        uint8_t *b = map_anon(4 * PAGE);

        close(cli);
        if (!b)
            _exit(1);
        fill(b, 4 * PAGE, 23);
        if (scif_register(srv, b, 4 * PAGE, WOFF, RW, SCIF_MAP_FIXED) != WOFF)
            _exit(2);
        if (write(pfd[1], "r", 1) != 1)
            _exit(3);
        for (;;)
            pause();
    }
    close(srv);
    close(pfd[1]);
    CHECK(read(pfd[0], &c, 1) == 1);
    p = scif_mmap(NULL, 4 * PAGE, RW, 0, cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(p[5] == want[5]);
    CHECK(kill(pid, SIGKILL) == 0 && waitpid(pid, &st, 0) == pid);
    /* The owner's endpoint is gone with its process. */
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, cli, WOFF), ECONNRESET);
    if (touch_sigbus(p + 3 * PAGE) || memcmp(p, want, 4 * PAGE)) {
        diag("mapping lost the dead owner's window");
        return KSFT_FAIL;
    }
    memset(p, 0x3c, 4 * PAGE);
    CHECK(p[4 * PAGE - 1] == 0x3c);
    CHECK(dbg_wait("windows", 1) == 1 && dbg_wait("pinned_pages", 4) == 4);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    return rma_counters_zero();
}

/* The owner's node is lost: the mapping keeps working until munmap. */
TEST_F(mp, node_lost) {
    uint8_t *p;
    int ret = KSFT_PASS;

    if (access(DBG_DIR "/node_lost", W_OK))
        return test_skip("no node_lost control in debugfs");
    p = scif_mmap(NULL, 8 * PAGE, RW, 0, self->cli, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(p[0] == self->buf[0]);
    CHECK(dbg_write("node_lost", 1) == 0);
    if (same_pages(p, self->buf, 8 * PAGE, 1)) {
        diag("mapping lost with the owner's node");
        ret = KSFT_FAIL;
    }
    errno = 0;
    if (scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF) != SCIF_MMAP_FAILED ||
        errno != ENODEV) {
        diag("scif_mmap after node loss: errno %d", errno);
        ret = KSFT_FAIL;
    }
    CHECK(dbg_write("node_online", 1) == 0);
    CHECK(scif_munmap(p, 8 * PAGE) == 0);
    CHECK(scif_close(self->srv) == 0 && scif_close(self->cli) == 0);
    if (rma_counters_zero() != KSFT_PASS)
        ret = KSFT_FAIL;
    return ret;
}
TEST_F_VARIANT(mp, node_lost, node);

/*
 * A window registered SCIF_PROT_WRITE only cannot be mapped at all: the
 * CPU cannot map pages write-only (x86 reads through a PROT_WRITE mapping),
 * and reading it must stay refused as it is for scif_vreadfrom.
 */
TEST_F(mp, wronly) {
    uint8_t *u = map_anon(PAGE);

    CHECK(u);
    CHECK_ERR(scif_vreadfrom(self->cli, u, PAGE, WOFF, SCIF_RMA_SYNC), EACCES);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_WRITE, 0, self->cli, WOFF), EACCES);
    CHECK_ERR(scif_mmap(NULL, PAGE, RW, 0, self->cli, WOFF), EACCES);
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, self->cli, WOFF), EACCES);
    CHECK_ERR(scif_mmap(NULL, PAGE, 0, 0, self->cli, WOFF), EACCES);
    CHECK_ERR(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, self->cli, WOFF), EACCES);
    CHECK(scif_vwriteto(self->cli, u, PAGE, WOFF, SCIF_RMA_SYNC) == 0);
    return KSFT_PASS;
}
TEST_F_VARIANT(mp, wronly, wronly);

/*
 * scif_register() whose result cannot be written back removes the window
 * again; a peer that mapped and touched it in between must lose the
 * mapping (SIGBUS), not keep pages that are no longer pinned; another
 * thread that unregistered it in between must not make the undo free it
 * twice.  The write-back is held up with a userfaultfd write-protect fault
 * so that both can happen while the window exists.
 */
struct regfault {
    struct mp_fixture m;
    int unreg; /* 1: unregister it instead of mapping it */
    int uffd;
    void *wp_page; /* holds out_offset, write-protected */
    volatile uint8_t *map;
    int step; /* how far the helper thread got */
};

static void *regfault_helper(void *arg) {
    struct regfault *r = arg;
    struct uffd_msg msg;
    struct pollfd pfd = {.fd = r->uffd, .events = POLLIN};
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

static int reg_efault(int unreg) {
    struct regfault r = {.uffd = -1, .unreg = unreg};
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register ureg;
    struct uffdio_writeprotect wp;
    struct scifioctl_reg *reg;
    uint8_t *arg, *win = map_anon(PAGE);
    pthread_t th;
    int ret;

    memset(&r.m, 0, sizeof(r.m));
    CHECK(win && mp_setup(&r.m, NULL) == KSFT_PASS);
    memset(win, 0x77, PAGE);
    arg = map_anon(2 * PAGE);
    CHECK(arg);
    memset(arg, 0, 2 * PAGE);
    /* out_offset is the first field on the second, write-protected page. */
    reg = (struct scifioctl_reg *)(arg + 2 * PAGE - 32 - PAGE);
    CHECK(offsetof(struct scifioctl_reg, out_offset) == 32);
    reg->addr = (uintptr_t)win;
    reg->len = PAGE;
    reg->offset = WOFF + 8 * PAGE;
    reg->prot = RW;
    reg->flags = SCIF_MAP_FIXED;

    r.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (r.uffd < 0)
        return test_skip("userfaultfd: %s", strerror(errno));
    if (ioctl(r.uffd, UFFDIO_API, &api) || !(api.ioctls & (1ULL << _UFFDIO_REGISTER)))
        return test_skip("UFFDIO_API failed");
    r.wp_page = arg + PAGE;
    ureg.range.start = (uintptr_t)r.wp_page;
    ureg.range.len = PAGE;
    ureg.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(r.uffd, UFFDIO_REGISTER, &ureg))
        return test_skip("userfaultfd write-protect: %s", strerror(errno));
    wp.range = ureg.range;
    wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    CHECK(ioctl(r.uffd, UFFDIO_WRITEPROTECT, &wp) == 0);
    CHECK(pthread_create(&th, NULL, regfault_helper, &r) == 0);
    ret = ioctl(r.m.srv, SCIF_REG, reg);
    CHECK(pthread_join(th, NULL) == 0);
    if (r.step < 3) {
        diag("helper stopped at step %d (register returned %d)", r.step, ret);
        return KSFT_FAIL;
    }
    CHECK(ret == -1 && errno == EFAULT);
    /* The window is not registered any more ... */
    CHECK_ERR(scif_mmap(NULL, PAGE, SCIF_PROT_READ, 0, r.m.cli, WOFF + 8 * PAGE), ENXIO);
    CHECK_ERR(scif_vreadfrom(r.m.cli, arg, 8, WOFF + 8 * PAGE, SCIF_RMA_SYNC), ENXIO);
    if (!unreg) {
        /* ... but lingers for the mapping, which keeps its pages ... */
        if (touch_sigbus(r.map) || r.map[PAGE - 1] != 0x77) {
            diag("mapping of a window whose registration was undone lost its pages");
            return KSFT_FAIL;
        }
        CHECK_ERR(scif_register(r.m.srv, win, PAGE, WOFF + 8 * PAGE, RW, SCIF_MAP_FIXED),
                  EADDRINUSE);
        CHECK(scif_munmap((void *)r.map, PAGE) == 0);
    }
    /* ... until it is unmapped: the offset is free again. */
    CHECK(scif_register(r.m.srv, win, PAGE, WOFF + 8 * PAGE, RW, SCIF_MAP_FIXED) ==
          WOFF + 8 * (off_t)PAGE);
    CHECK(scif_unregister(r.m.srv, WOFF + 8 * PAGE, PAGE) == 0);
    /* The other windows are intact and the counters come back. */
    CHECK(scif_unregister(r.m.srv, WOFF, 8 * PAGE) == 0);
    CHECK(scif_close(r.m.srv) == 0 && scif_close(r.m.cli) == 0);
    CHECK(dbg_wait("windows", 0) == 0);
    return KSFT_PASS;
}

static int t_reg_efault_mapped(void) {
    return reg_efault(0);
}
static int t_reg_efault_unreg(void) {
    return reg_efault(1);
}

/* The mapping outlives everything; pages are released at munmap/exit. */
static int t_td_counters(void) {
    pid_t pid = fork();
    int st;

    CHECK(pid >= 0);
    if (pid == 0) {
        struct mp_fixture m;
        uint8_t *p;

        memset(&m, 0, sizeof(m));
        if (mp_setup(&m, NULL) != KSFT_PASS)
            _exit(1);
        p = scif_mmap(NULL, 8 * PAGE, RW, 0, m.cli, WOFF);
        if (p == SCIF_MMAP_FAILED)
            _exit(2);
        p[0] = 1;
        if (scif_unregister(m.srv, WOFF, 4 * PAGE))
            _exit(3);
        close(m.cli);
        close(m.srv);
        _exit(0); /* mapping torn down by exit */
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return rma_counters_zero();
}

/* Connect @cfd (an open, unbound node 0 endpoint) to a new listener; *srv accepted. */
static int connect_fd(int cfd, int *srv) {
    struct connect_job job = {.epd = cfd, .dst = {.node = 0}};
    struct scif_portID peer;
    struct pollfd pfd;
    pthread_t th;
    uint16_t port;
    int lep = make_listener(0, 0, 4, &port), r = -1;

    if (lep < 0)
        return -1;
    job.dst.port = port;
    if (pthread_create(&th, NULL, connect_thread, &job)) {
        close(lep);
        return -1;
    }
    pfd.fd = lep;
    pfd.events = POLLIN;
    if (poll(&pfd, 1, 60000) == 1)
        r = scif_accept(lep, &peer, srv, SCIF_ACCEPT_SYNC);
    close(lep);
    pthread_join(th, NULL);
    if (r < 0 || job.ret < 0) {
        diag("connect through the tmpfs node: accept %d, connect %d (%s)", r, job.ret,
             strerror(job.err));
        return -1;
    }
    return 0;
}

/* Does the kernel log from @kfd on mention @what?  Consumes what is there. */
static int kmsg_has(int kfd, const char *what) {
    char rec[2048];
    int found = 0;

    for (;;) {
        ssize_t n = read(kfd, rec, sizeof(rec) - 1);

        if (n < 0 && errno == EPIPE)
            continue; /* overwritten records */
        if (n <= 0)
            break;
        rec[n] = '\0';
        if (strstr(rec, what)) {
            diag("kernel: %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
            found = 1;
        }
    }
    return found;
}

/*
 * The device node lives on a tmpfs (as container runtimes populate /dev):
 * mapping a peer window through it must not leave the module holding the
 * node's inode, or umount of the tmpfs finds a busy inode (and the owner's
 * close later frees it on a dead super block).
 */
static int t_tmpfs_node(void) {
    char dir[] = "/tmp/scif-tmpfs-XXXXXX", node[64];
    unsigned int maj, mnr;
    int kfd, cfd, srv, bad = 0;
    uint8_t *buf = map_anon(4 * PAGE), *p;
    FILE *f;

    CHECK(buf);
    f = fopen("/sys/class/misc/scif/dev", "r");
    if (!f)
        return test_skip("no /sys/class/misc/scif/dev");
    if (fscanf(f, "%u:%u", &maj, &mnr) != 2) {
        fclose(f);
        return test_skip("cannot parse /sys/class/misc/scif/dev");
    }
    fclose(f);
    if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
        return test_skip("private mount namespace: %s", strerror(errno));
    CHECK(mkdtemp(dir));
    if (mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700")) {
        int e = errno;

        rmdir(dir);
        return test_skip("mount tmpfs: %s", strerror(e));
    }
    snprintf(node, sizeof(node), "%s/scif", dir);
    CHECK(mknod(node, S_IFCHR | 0600, makedev(maj, mnr)) == 0);
    kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
    if (kfd >= 0)
        lseek(kfd, 0, SEEK_END);

    cfd = open(node, O_RDWR | O_CLOEXEC);
    CHECK(cfd >= 0);
    CHECK(connect_fd(cfd, &srv) == 0);
    fill(buf, 4 * PAGE, 31);
    CHECK(scif_register(srv, buf, 4 * PAGE, WOFF, RW, SCIF_MAP_FIXED) == WOFF);
    p = scif_mmap(NULL, 4 * PAGE, RW, 0, cfd, WOFF);
    CHECK(p != SCIF_MMAP_FAILED);
    CHECK(same_pages(p, buf, 4 * PAGE, 1) == 0);
    CHECK(scif_munmap(p, 4 * PAGE) == 0);
    CHECK(close(cfd) == 0);
    CHECK(unlink(node) == 0);
    /* The window owner is still open, as the peer of a container would be. */
    CHECK(umount(dir) == 0);
    if (kfd >= 0 && kmsg_has(kfd, "Busy inodes")) {
        diag("umount of the tmpfs holding the device node found a busy inode");
        bad = 1;
    }
    CHECK(scif_close(srv) == 0);
    CHECK(rmdir(dir) == 0);
    if (rma_counters_zero() != KSFT_PASS)
        bad = 1;
    if (kfd >= 0) {
        if (kmsg_has(kfd, "Busy inodes") || kmsg_has(kfd, "BUG"))
            bad = 1;
        close(kfd);
    } else {
        diag("no /dev/kmsg: only the VM runner's log scan checks for busy inodes");
    }
    return bad ? KSFT_FAIL : KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"mapping shares memory with the peer window (loopback)", FIXTURE_FN(mp, share, loopback), 0},
    {"mapping shares memory with the peer window (node 1)", FIXTURE_FN(mp, share, node), 0},
    {"protection can only narrow: EACCES, mprotect refused", FIXTURE_FN(mp, prot, rdonly), 0},
    {"a write-only window cannot be mapped (EACCES), like scif_vreadfrom",
     FIXTURE_FN(mp, wronly, wronly), 0},
    {"ENOTCONN, ENXIO, EINVAL (MAP_PRIVATE)", mp_errors, 0},
    {"unregister keeps the mapping on the window's pages; RMA there gets ENXIO", mp_unreg_keeps, 0},
    {"a mapped unregistered window keeps its offsets until the last munmap", mp_unreg_reserved, 0},
    {"mprotect split, partial munmap, mremap keep the windows until the last part goes", mp_split,
     0},
    {"owner closes: the mapping keeps working until munmap", mp_owner_close, 0},
    {"closing the mapping descriptor keeps the mapping until munmap", mp_own_close, 0},
    {"owner process dies: the mapping keeps its pages, munmap releases them", t_owner_death, 0},
    {"owner's node lost: the mapping keeps working until munmap", FIXTURE_FN(mp, node_lost, node),
     0},
    {"exit with a live mapping: counters return to zero", t_td_counters, 0},
    {"register failing to write its offset back while mapped: the mapping keeps it",
     t_reg_efault_mapped, 0},
    {"register failing to write its offset back after an unregister", t_reg_efault_unreg, 0},
    {"device node on a tmpfs: umount after close and munmap leaves no busy inode", t_tmpfs_node, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
