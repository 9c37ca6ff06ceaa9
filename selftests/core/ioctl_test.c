// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ioctl_test: the raw ioctl ABI as a binary built for the Linux 5.9 driver
 * uses it, and hostile arguments.  Numbers and layouts match the 5.9 uapi;
 * a connection made with raw ioctls only (ACCEPTREQ/ACCEPTREG) works; the
 * accept handle is opaque (not a kernel address); BIND takes a 4-byte
 * buffer; bad pointers give EFAULT, unknown numbers ENOTTY, forged handles
 * EINVAL, closed descriptors EBADF, non-SCIF descriptors ENOTTY.  Every one
 * must end with an errno; the VM run fails on any kernel splat.
 */
#include <grp.h>
#include <sys/mman.h>

#include <scif_ioctl.h>

#include "scif_test.h"

_Static_assert(SCIF_BIND == 0xC0087301, "SCIF_BIND");
_Static_assert(SCIF_LISTEN == 0x40047302, "SCIF_LISTEN");
_Static_assert(SCIF_CONNECT == 0xC0087303, "SCIF_CONNECT");
_Static_assert(SCIF_ACCEPTREQ == 0xC0107304, "SCIF_ACCEPTREQ");
_Static_assert(SCIF_ACCEPTREG == 0xC0087305, "SCIF_ACCEPTREG");
_Static_assert(SCIF_SEND == 0xC0187306, "SCIF_SEND");
_Static_assert(SCIF_RECV == 0xC0187307, "SCIF_RECV");
_Static_assert(SCIF_REG == 0xC0287308, "SCIF_REG");
_Static_assert(SCIF_UNREG == 0xC0107309, "SCIF_UNREG");
_Static_assert(SCIF_READFROM == 0xC028730A, "SCIF_READFROM");
_Static_assert(SCIF_VWRITETO == 0xC028730D, "SCIF_VWRITETO");
_Static_assert(SCIF_GET_NODEIDS == 0xC018730E, "SCIF_GET_NODEIDS");
_Static_assert(SCIF_FENCE_MARK == 0xC010730F, "SCIF_FENCE_MARK");
_Static_assert(SCIF_FENCE_WAIT == 0xC0047310, "SCIF_FENCE_WAIT");
_Static_assert(SCIF_FENCE_SIGNAL == 0xC0287311, "SCIF_FENCE_SIGNAL");

static int dev_open(void) {
    return open("/dev/scif", O_RDWR | O_CLOEXEC);
}

/* An address of an inaccessible page. */
static void *bad_page(void) {
    void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? (void *)16 : p;
}

static int t_version(void) {
    int fd = dev_open(), v = -1;

    CHECK_OK(fd);
    CHECK_OK(ioctl(fd, SCIF_GET_VERSION, &v));
    CHECK(v == SCIF_ABI_VERSION, "SCIF_GET_VERSION gave %d", v);
    CHECK_ERR(ioctl(fd, SCIF_GET_VERSION, bad_page()), EFAULT);
    return KSFT_PASS;
}

static int t_unknown(void) {
    int fd = dev_open();
    char buf[64] = {0};

    CHECK_OK(fd);
    CHECK_ERR(ioctl(fd, _IOWR('s', 99, __u64), buf), ENOTTY);
    CHECK_ERR(ioctl(fd, _IOWR('s', 0, __u64), buf), ENOTTY);
    CHECK_ERR(ioctl(fd, _IOWR('s', SCIF_IOCTL_EXT_BASE + 31, __u64), buf), ENOTTY);
    CHECK_ERR(ioctl(fd, _IOWR('x', 1, __u64), buf), ENOTTY);
    CHECK_ERR(ioctl(fd, 0, buf), ENOTTY);
    CHECK_ERR(ioctl(fd, 0xffffffffu, buf), ENOTTY);
    return KSFT_PASS;
}

static int t_bind_4byte(void) {
    int fd = dev_open();
    char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint32_t *port;

    CHECK_OK(fd);
    CHECK(two != MAP_FAILED, "mmap");
    CHECK_OK(munmap(two + 4096, 4096));
    /* A 4-byte port at the very end of a page: the next byte is unmapped. */
    port = (uint32_t *)(two + 4096 - 4);
    *port = 0;
    CHECK_OK(ioctl(fd, SCIF_BIND, port));
    CHECK(*port >= SCIF_PORT_RSVD && *port <= 65535, "BIND wrote port %u", *port);
    return KSFT_PASS;
}

static int t_bind_8byte(void) {
    int fd = dev_open();
    uint64_t port = 0xffffffff00000000ULL | 3000u;

    CHECK_OK(fd);
    /* The upper half of an 8-byte argument is ignored. */
    CHECK_OK(ioctl(fd, SCIF_BIND, &port));
    CHECK((port & 0xffffffffu) == 3000, "BIND 3000 left %#llx", (unsigned long long)port);
    return KSFT_PASS;
}

/*
 * MPSS libscif passes the address of a 16-bit port: the upper half of the
 * 4 bytes the driver reads is stack garbage.  As in the 5.9 driver only the
 * low 16 bits count, and the whole int is written back.
 */
static int t_bind_16bit(void) {
    int a = dev_open(), b = dev_open();
    uint32_t port = 0xdead0000u | 3001u;
    int32_t neg = -1; /* 0xffffffff: port 65535 */

    CHECK_OK(a);
    CHECK_OK(b);
    CHECK_OK(ioctl(a, SCIF_BIND, &port));
    CHECK(port == 3001, "BIND 0xdead0000|3001 wrote back %#x", port);
    CHECK_OK(ioctl(b, SCIF_BIND, &neg));
    CHECK(neg == 65535, "BIND 0xffffffff wrote back %#x", (unsigned)neg);
    return KSFT_PASS;
}

static int t_bad_pointers(void) {
    int fd = dev_open(), l = dev_open();
    void *bad = bad_page();
    uint64_t port = 0;

    CHECK_OK(fd);
    CHECK_OK(l);
    CHECK_ERR(ioctl(fd, SCIF_BIND, NULL), EFAULT);
    CHECK_ERR(ioctl(fd, SCIF_BIND, bad), EFAULT);
    CHECK_ERR(ioctl(fd, SCIF_CONNECT, NULL), EFAULT);
    CHECK_ERR(ioctl(fd, SCIF_CONNECT, bad), EFAULT);
    CHECK_ERR(ioctl(fd, SCIF_GET_NODEIDS, bad), EFAULT);
    CHECK_ERR(ioctl(fd, SCIF_ACCEPTREG, bad), EFAULT);
    CHECK_OK(ioctl(l, SCIF_BIND, &port));
    CHECK_OK(ioctl(l, SCIF_LISTEN, 4));
    CHECK_ERR(ioctl(l, SCIF_ACCEPTREQ, NULL), EFAULT);
    CHECK_ERR(ioctl(l, SCIF_ACCEPTREQ, bad), EFAULT);
    return KSFT_PASS;
}

static int t_nodeids_bad(void) {
    int fd = dev_open();
    struct scifioctl_node_ids ids;
    uint16_t nodes[8], self;

    CHECK_OK(fd);
    ids.nodes = (uintptr_t)bad_page();
    ids.self = (uintptr_t)&self;
    ids.len = 8;
    CHECK_ERR(ioctl(fd, SCIF_GET_NODEIDS, &ids), EFAULT);
    ids.nodes = (uintptr_t)nodes;
    ids.self = 0xffff800000000000ULL; /* a kernel address */
    CHECK_ERR(ioctl(fd, SCIF_GET_NODEIDS, &ids), EFAULT);
    ids.self = (uintptr_t)&self;
    ids.len = -5;
    CHECK_ERR(ioctl(fd, SCIF_GET_NODEIDS, &ids), EINVAL);
    ids.len = 8;
    CHECK_OK(ioctl(fd, SCIF_GET_NODEIDS, &ids));
    CHECK(ids.len >= 1 && self == 0, "len %d self %u", ids.len, self);
    return KSFT_PASS;
}

/* Set up a listener and a pending connect, all with raw ioctls. */
static int raw_pending(int *l, int *c, struct scifioctl_accept *acc) {
    uint64_t port = 0;
    struct scifioctl_connect conn;
    struct pollfd p;
    int r;

    *l = dev_open();
    *c = dev_open();
    CHECK_OK(*l);
    CHECK_OK(*c);
    CHECK_OK(ioctl(*l, SCIF_BIND, &port));
    CHECK_OK(ioctl(*l, SCIF_LISTEN, 4));
    CHECK_OK(fcntl(*c, F_SETFL, O_NONBLOCK));
    memset(&conn, 0, sizeof(conn));
    conn.peer.node = 0;
    conn.peer.port = (uint16_t)port;
    r = ioctl(*c, SCIF_CONNECT, &conn);
    CHECK(r == 0 || errno == EINPROGRESS, "raw connect: %s", strerror(errno));
    p.fd = *l;
    p.events = POLLIN;
    CHECK(poll(&p, 1, 30000) == 1, "no request pending");
    memset(acc, 0, sizeof(*acc));
    acc->flags = SCIF_ACCEPT_SYNC;
    CHECK_OK(ioctl(*l, SCIF_ACCEPTREQ, acc));
    return KSFT_PASS;
}

/* One message from the connector c arrives on the registered descriptor n. */
static int raw_roundtrip(int c, int n) {
    struct scifioctl_msg msg;
    char buf[8] = "handle!";
    struct pollfd p = {.fd = c, .events = POLLOUT};

    CHECK(poll(&p, 1, 30000) == 1 && (p.revents & POLLOUT), "connect completion %#x", p.revents);
    memset(&msg, 0, sizeof(msg));
    msg.msg = (uintptr_t)buf;
    msg.len = 8;
    msg.flags = SCIF_SEND_BLOCK;
    CHECK_OK(ioctl(c, SCIF_SEND, &msg));
    memset(buf, 0, sizeof(buf));
    msg.flags = SCIF_RECV_BLOCK;
    msg.out_len = 0;
    CHECK_OK(ioctl(n, SCIF_RECV, &msg));
    CHECK(msg.out_len == 8 && !strcmp(buf, "handle!"), "RECV out_len %d data %.8s", msg.out_len,
          buf);
    return KSFT_PASS;
}

static int t_raw_accept(void) {
    struct scifioctl_accept acc;
    int l, c, n;

    if (raw_pending(&l, &c, &acc) != KSFT_PASS)
        return KSFT_FAIL;
    CHECK(acc.peer.node == 0 && acc.peer.port >= SCIF_PORT_RSVD, "peer %u:%u", acc.peer.node,
          acc.peer.port);
    /* Opaque and never 0 (t_handle_random checks that it is random). */
    CHECK(acc.endpt != 0, "ACCEPTREQ handle 0");
    n = dev_open();
    CHECK_OK(n);
    CHECK_OK(ioctl(n, SCIF_ACCEPTREG, &acc.endpt));
    /* The handle is used up. */
    {
        int n2 = dev_open();
        uint64_t h = acc.endpt;

        CHECK_OK(n2);
        CHECK_ERR(ioctl(n2, SCIF_ACCEPTREG, &h), EINVAL);
    }
    return raw_roundtrip(c, n);
}

static int t_forged_handle(void) {
    struct scifioctl_accept acc;
    uint64_t forged[] = {0, 1, 0xdeadbeef, 0xffff888000000000ULL, ~0ULL};
    int l, c, n;
    size_t i;

    if (raw_pending(&l, &c, &acc) != KSFT_PASS)
        return KSFT_FAIL;
    n = dev_open();
    CHECK_OK(n);
    for (i = 0; i < ARRAY_SIZE(forged); i++) {
        uint64_t h = forged[i];

        if (h == acc.endpt)
            continue;
        CHECK_ERR(ioctl(n, SCIF_ACCEPTREG, &h), EINVAL);
        h = acc.endpt ^ 0x100;
        CHECK_ERR(ioctl(n, SCIF_ACCEPTREG, &h), EINVAL);
    }
    /* The genuine handle still works afterwards. */
    CHECK_OK(ioctl(n, SCIF_ACCEPTREG, &acc.endpt));
    return KSFT_PASS;
}

/*
 * Another user's process that learns a pending handle cannot register it:
 * it gets what a nonexistent handle gets, and the owner's accept goes on.
 */
static int t_stolen_handle(void) {
    struct scifioctl_accept acc;
    int l, c, n, st;
    pid_t pid;

    if (geteuid() != 0)
        return test_skip("needs root to run a child as another user");
    if (raw_pending(&l, &c, &acc) != KSFT_PASS)
        return KSFT_FAIL;
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (!pid) {
        uint64_t h = acc.endpt, wrong = acc.endpt ^ 1;
        int fd;

        if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
            _exit(2);
        fd = dev_open();
        if (fd < 0)
            _exit(3);
        /* A wrong guess and the stolen handle: the same EINVAL. */
        if (ioctl(fd, SCIF_ACCEPTREG, &wrong) != -1 || errno != EINVAL)
            _exit(4);
        if (ioctl(fd, SCIF_ACCEPTREG, &h) != -1)
            _exit(5);
        _exit(errno == EINVAL ? 0 : 6);
    }
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "child as uid 65534: status %#x (5: it registered the stolen handle)", st);
    n = dev_open();
    CHECK_OK(n);
    CHECK_OK(ioctl(n, SCIF_ACCEPTREG, &acc.endpt));
    return raw_roundtrip(c, n);
}

/* The acceptor may fork between ACCEPTREQ and ACCEPTREG (same user). */
static int t_handle_fork(void) {
    struct scifioctl_accept acc;
    int l, c, st;
    pid_t pid;

    if (raw_pending(&l, &c, &acc) != KSFT_PASS)
        return KSFT_FAIL;
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (!pid) {
        int n = dev_open();

        if (n < 0 || ioctl(n, SCIF_ACCEPTREG, &acc.endpt))
            _exit(1);
        _exit(raw_roundtrip(c, n) == KSFT_PASS ? 0 : 2);
    }
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
    return KSFT_PASS;
}

/*
 * Handles carry no index: among the handles of successive accepts no low
 * or high halves are equal or consecutive (a table index would be).
 */
static int t_handle_random(void) {
    enum { N = 12 };
    uint64_t h[N];
    int i, j;

    for (i = 0; i < N; i++) {
        struct scifioctl_accept acc;
        int l, c;

        if (raw_pending(&l, &c, &acc) != KSFT_PASS)
            return KSFT_FAIL;
        h[i] = acc.endpt;
        close(c);
        close(l);
    }
    for (i = 0; i < N; i++)
        for (j = 0; j < i; j++) {
            uint32_t lo = (uint32_t)h[i] - (uint32_t)h[j];
            uint32_t hi = (uint32_t)(h[i] >> 32) - (uint32_t)(h[j] >> 32);

            CHECK(lo > 1 && lo != UINT32_MAX && hi > 1 && hi != UINT32_MAX,
                  "handles %#llx and %#llx share or count a half", (unsigned long long)h[j],
                  (unsigned long long)h[i]);
        }
    return KSFT_PASS;
}

static int t_msg_bad(void) {
    struct scifioctl_accept acc;
    struct scifioctl_msg msg;
    int l, c, n;

    if (raw_pending(&l, &c, &acc) != KSFT_PASS)
        return KSFT_FAIL;
    n = dev_open();
    CHECK_OK(n);
    CHECK_OK(ioctl(n, SCIF_ACCEPTREG, &acc.endpt));
    CHECK_ERR(ioctl(n, SCIF_SEND, bad_page()), EFAULT);
    CHECK_ERR(ioctl(n, SCIF_RECV, NULL), EFAULT);
    memset(&msg, 0, sizeof(msg));
    msg.msg = (uintptr_t)bad_page();
    msg.len = 100;
    msg.flags = SCIF_SEND_BLOCK;
    CHECK_ERR(ioctl(n, SCIF_SEND, &msg), EFAULT);
    msg.msg = 0xffff888000000000ULL; /* kernel address */
    CHECK_ERR(ioctl(n, SCIF_SEND, &msg), EFAULT);
    msg.len = -1;
    CHECK_ERR(ioctl(n, SCIF_SEND, &msg), EINVAL);
    msg.len = 0x7fffffff;
    msg.msg = 0;
    msg.flags = 0;
    CHECK_ERR(ioctl(n, SCIF_SEND, &msg), EFAULT);
    msg.flags = 0x7fff;
    msg.len = 4;
    CHECK_ERR(ioctl(n, SCIF_RECV, &msg), EINVAL);
    return KSFT_PASS;
}

static int t_ebadf(void) {
    int fd = dev_open(), n;
    char buf[4];
    struct scif_portID dst = {0, 2000}, peer;
    uint16_t nodes[4], self;

    CHECK_OK(fd);
    CHECK_OK(close(fd));
    CHECK_ERR(scif_bind(fd, 0), EBADF);
    CHECK_ERR(scif_listen(fd, 1), EBADF);
    CHECK_ERR(scif_connect(fd, &dst), EBADF);
    CHECK_ERR(scif_accept(fd, &peer, &n, 0), EBADF);
    CHECK_ERR(scif_send(fd, buf, 4, 0), EBADF);
    CHECK_ERR(scif_recv(fd, buf, 4, 0), EBADF);
    CHECK_ERR(scif_bind(-1, 0), EBADF);
    CHECK_ERR(scif_send(12345, buf, 4, 0), EBADF);
    (void)nodes;
    (void)self;
    return KSFT_PASS;
}

static int t_enotty(void) {
    int fd = open("/dev/null", O_RDWR), pfd[2], n;
    char buf[4];
    struct scif_portID dst = {0, 2000}, peer;
    uint64_t port = 0;

    CHECK_OK(fd);
    CHECK_OK(pipe(pfd));
    CHECK_ERR(scif_bind(fd, 0), ENOTTY);
    CHECK_ERR(scif_listen(fd, 1), ENOTTY);
    CHECK_ERR(scif_connect(fd, &dst), ENOTTY);
    CHECK_ERR(scif_accept(pfd[0], &peer, &n, 0), ENOTTY);
    CHECK_ERR(scif_send(pfd[1], buf, 4, 0), ENOTTY);
    CHECK_ERR(scif_recv(pfd[0], buf, 4, 0), ENOTTY);
    CHECK_ERR(ioctl(fd, SCIF_BIND, &port), ENOTTY);
    return KSFT_PASS;
}

/* Syscall-level abuse of the device: read/write/lseek are not part of it. */
static int t_file_ops(void) {
    int fd = dev_open();
    char buf[16] = {0};

    CHECK_OK(fd);
    CHECK(read(fd, buf, sizeof(buf)) < 0, "read on /dev/scif succeeded");
    CHECK(write(fd, buf, sizeof(buf)) < 0, "write on /dev/scif succeeded");
    return KSFT_PASS;
}

/* Random ioctl arguments: the only requirement is an errno (or success), never a splat. */
static int t_fuzz(void) {
    static const unsigned long cmds[] = {
        SCIF_BIND, SCIF_LISTEN, SCIF_CONNECT,     SCIF_ACCEPTREQ,   SCIF_ACCEPTREG,
        SCIF_SEND, SCIF_RECV,   SCIF_GET_NODEIDS, SCIF_GET_VERSION,
    };
    unsigned char *page =
                      mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                  *base;
    struct prng p;
    int i, fd = -1, odd = 0;

    CHECK(page != MAP_FAILED, "mmap");
    CHECK_OK(munmap(page + 4096, 4096));
    prng_init(&p, 42);
    for (i = 0; i < 3000; i++) {
        unsigned long cmd = cmds[prng_next(&p) % ARRAY_SIZE(cmds)];
        uint64_t r = prng_next(&p);
        unsigned long arg;
        size_t k;
        int ret;

        if (fd < 0 || r % 16 == 0) {
            if (fd >= 0)
                close(fd);
            fd = dev_open();
            CHECK_OK(fd);
            /* Connects never wait for an accept. */
            CHECK_OK(fcntl(fd, F_SETFL, O_NONBLOCK));
        }
        for (k = 0; k < 4096; k += 8) {
            uint64_t v = prng_next(&p);

            /* Mostly small values, sometimes wild ones. */
            if (v % 3)
                v %= 70000;
            memcpy(page + k, &v, 8);
        }
        /*
         * The argument either starts the page or ends exactly at its end (the
         * next page is unmapped).  Blocking calls never get a blocking flag:
         * the test would wait forever (a connect may reach a listener that
         * an earlier random call set up).
         */
        base = page;
        if (r % 4 == 1)
            base = page + 4096 - _IOC_SIZE(cmd);
        if (cmd == SCIF_SEND || cmd == SCIF_RECV)
            ((struct scifioctl_msg *)base)->flags = 0;
        if (cmd == SCIF_ACCEPTREQ)
            ((struct scifioctl_accept *)base)->flags = 0;
        switch (r % 4) {
        case 0:
        case 1:
            arg = (unsigned long)base;
            break;
        case 2:
            arg = (unsigned long)(r >> 4);
            break;
        default:
            arg = (unsigned long)(r >> 8) % 70000;
            break;
        }
        errno = 0;
        ret = ioctl(fd, cmd, arg);
        if (ret < 0 && (errno == 0 || errno >= 512)) {
            diag("cmd %#lx arg %#lx: ret %d errno %d (kernel-internal errno leaked)", cmd, arg, ret,
                 errno);
            odd++;
        }
    }
    CHECK(!odd, "%d calls returned no or an internal errno", odd);
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"ioctl numbers match the Linux 5.9 uapi; SCIF_GET_VERSION", t_version, 0},
    {"unknown ioctl numbers: ENOTTY", t_unknown, 0},
    {"SCIF_BIND with a 4-byte buffer at the end of a page", t_bind_4byte, 0},
    {"SCIF_BIND with an 8-byte argument uses the low 4 bytes", t_bind_8byte, 0},
    {"SCIF_BIND uses the low 16 bits of the port (garbage upper half)", t_bind_16bit, 0},
    {"NULL and unmapped argument pointers: EFAULT", t_bad_pointers, 0},
    {"SCIF_GET_NODEIDS with bad inner pointers: EFAULT, bad len: EINVAL", t_nodeids_bad, 0},
    {"raw ioctl connection: ACCEPTREQ gives an opaque handle, ACCEPTREG uses it once", t_raw_accept,
     0},
    {"SCIF_ACCEPTREG with a forged handle: EINVAL", t_forged_handle, 0},
    {"SCIF_ACCEPTREG of a stolen handle by another user: EINVAL, owner unaffected", t_stolen_handle,
     0},
    {"SCIF_ACCEPTREG in a forked child of the acceptor", t_handle_fork, 0},
    {"accept handles are 64 random bits, no index", t_handle_random, 0},
    {"SCIF_SEND/RECV with bad argument or message pointers (EFAULT), lengths, flags (EINVAL)",
     t_msg_bad, 0},
    {"every call on a closed descriptor: EBADF", t_ebadf, 0},
    {"every call on a non-SCIF descriptor: ENOTTY", t_enotty, 0},
    {"read/write on the device fail", t_file_ops, 0},
    {"3000 random ioctls each end with a proper errno", t_fuzz, 300},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
