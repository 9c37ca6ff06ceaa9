// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_test: a structured ioctl fuzzer.  Unlike the random-bytes fuzz of
 * ioctl_test, every call starts from a valid-looking argument of its ioctl
 * (a connected pair, registered windows on both sides, fence marks) and
 * mutates some of it: offsets at and around the window edges, at 2^63 and
 * just below, lengths 0, 1, page-1, page+1 and huge, flags and protections
 * with any bit, bad, read-only, unmapped and kernel pointers, closed and
 * foreign (non-SCIF) descriptors, and descriptors another thread closes
 * while the call runs (a "victim" thread connects, registers and closes
 * pairs in a loop).  mmap() of the device goes through the same mutations.
 *
 * Bounds (both apply; the first reached ends the run):
 *   SCIF_FUZZ_CALLS    total calls (default 300000; >= 1000000 for a long run)
 *   SCIF_FUZZ_SECONDS  wall time (default 60)
 *   SCIF_FUZZ_THREADS  fuzzing threads (default 4)
 *   SCIF_TEST_TIMEOUT  the runner's timeout of this program (run-suite sets
 *                      it; unset: none): the wall bound is cut to leave
 *                      120 s of it, and the hang guard fires 30 s before
 *                      it, so that a hang is diagnosed here, not cut off
 *                      there
 *   SCIF_FUZZ_SEED     seed (default: from the clock); always printed.  Each
 *                      thread's call sequence is a function of the seed and
 *                      its index, so a failing errno reproduces with the
 *                      printed seed (scheduling of the threads aside).
 *
 * Results: no crash or hang of the fuzzing process; every error is an errno
 * the call's man page lists (man/<call>.3, ERRORS, read at run time from the
 * source tree), or one ioctl(2) documents for the case at hand (EBADF for a
 * closed descriptor, ENOTTY for a non-SCIF one, EFAULT for an inaccessible
 * argument); the module's counters return to zero; the module still works
 * afterwards (connect, send/recv, RMA).  The VM run fails on any kernel splat.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <sys/mman.h>

#include "scif_test.h"

#define WOFF 0x100000L
#define WPAGES 8
#define WLEN (WPAGES * PAGE)
#define REBUILD_EVERY 2048 /* calls between rebuilding a thread's pair */
#define MAX_THREADS 32
#define MAX_REPORTS 20

enum call {
    C_BIND,
    C_LISTEN,
    C_CONNECT,
    C_ACCEPTREQ,
    C_ACCEPTREG,
    C_SEND,
    C_RECV,
    C_REG,
    C_UNREG,
    C_READFROM,
    C_WRITETO,
    C_VREADFROM,
    C_VWRITETO,
    C_NODEIDS,
    C_FENCE_MARK,
    C_FENCE_WAIT,
    C_FENCE_SIGNAL,
    C_VERSION,
    C_MMAP,
    C_NCALLS
};

static const struct {
    const char *name;
    unsigned long cmd;
    const char *man; /* man/<man>.3 lists its errnos; NULL: ioctl(2) only */
} calls[C_NCALLS] = {
    [C_BIND] = {"SCIF_BIND", SCIF_BIND, "scif_bind"},
    [C_LISTEN] = {"SCIF_LISTEN", SCIF_LISTEN, "scif_listen"},
    [C_CONNECT] = {"SCIF_CONNECT", SCIF_CONNECT, "scif_connect"},
    [C_ACCEPTREQ] = {"SCIF_ACCEPTREQ", SCIF_ACCEPTREQ, "scif_accept"},
    [C_ACCEPTREG] = {"SCIF_ACCEPTREG", SCIF_ACCEPTREG, "scif_accept"},
    [C_SEND] = {"SCIF_SEND", SCIF_SEND, "scif_send"},
    [C_RECV] = {"SCIF_RECV", SCIF_RECV, "scif_recv"},
    [C_REG] = {"SCIF_REG", SCIF_REG, "scif_register"},
    [C_UNREG] = {"SCIF_UNREG", SCIF_UNREG, "scif_unregister"},
    [C_READFROM] = {"SCIF_READFROM", SCIF_READFROM, "scif_readfrom"},
    [C_WRITETO] = {"SCIF_WRITETO", SCIF_WRITETO, "scif_writeto"},
    [C_VREADFROM] = {"SCIF_VREADFROM", SCIF_VREADFROM, "scif_vreadfrom"},
    [C_VWRITETO] = {"SCIF_VWRITETO", SCIF_VWRITETO, "scif_vwriteto"},
    [C_NODEIDS] = {"SCIF_GET_NODEIDS", SCIF_GET_NODEIDS, "scif_get_nodeIDs"},
    [C_FENCE_MARK] = {"SCIF_FENCE_MARK", SCIF_FENCE_MARK, "scif_fence_mark"},
    [C_FENCE_WAIT] = {"SCIF_FENCE_WAIT", SCIF_FENCE_WAIT, "scif_fence_wait"},
    [C_FENCE_SIGNAL] = {"SCIF_FENCE_SIGNAL", SCIF_FENCE_SIGNAL, "scif_fence_signal"},
    [C_VERSION] = {"SCIF_GET_VERSION", SCIF_GET_VERSION, NULL},
    [C_MMAP] = {"mmap", 0, "scif_mmap"},
};

/* The errno names man pages use. */
static const struct {
    const char *name;
    int value;
} errno_names[] = {
    {"EACCES", EACCES},         {"EADDRINUSE", EADDRINUSE}, {"EAGAIN", EAGAIN},
    {"EALREADY", EALREADY},     {"EBADF", EBADF},           {"ECONNREFUSED", ECONNREFUSED},
    {"ECONNRESET", ECONNRESET}, {"EFAULT", EFAULT},         {"EINPROGRESS", EINPROGRESS},
    {"EINTR", EINTR},           {"EINVAL", EINVAL},         {"EISCONN", EISCONN},
    {"EMFILE", EMFILE},         {"ENFILE", ENFILE},         {"ENODEV", ENODEV},
    {"ENOMEM", ENOMEM},         {"ENOSPC", ENOSPC},         {"ENOTCONN", ENOTCONN},
    {"ENOTTY", ENOTTY},         {"ENXIO", ENXIO},           {"EOPNOTSUPP", EOPNOTSUPP},
    {"EPERM", EPERM},           {"EBUSY", EBUSY},           {"EOVERFLOW", EOVERFLOW},
    {"ETIMEDOUT", ETIMEDOUT},   {"ENOBUFS", ENOBUFS},       {"E2BIG", E2BIG},
};

/* Documented errnos of each call: bit e set when errno e is listed (e < 256). */
static uint8_t documented[C_NCALLS][256 / 8];

static int doc_has(int c, int e) {
    return e > 0 && e < 256 && (documented[c][e / 8] & (1u << (e % 8)));
}

static void doc_add(int c, int e) {
    if (e > 0 && e < 256)
        documented[c][e / 8] |= (uint8_t)(1u << (e % 8));
}

/* Read the ERRORS section of man/<page>.3 into documented[c]; 0 or -1. */
static int load_man(int c, const char *mandir) {
    char path[512], line[512];
    int in = 0, found = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.3", mandir, calls[c].man);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, ".SH", 3)) {
            in = strstr(line, "ERRORS") != NULL;
            continue;
        }
        if (!in)
            continue;
        for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++) {
            const char *p = line, *n = errno_names[i].name;
            size_t l = strlen(n);

            while ((p = strstr(p, n))) {
                char after = p[l];
                char before = p == line ? ' ' : p[-1];

                if ((after < 'A' || after > 'Z') && (before < 'A' || before > 'Z')) {
                    doc_add(c, errno_names[i].value);
                    found = 1;
                }
                p += l;
            }
        }
    }
    fclose(f);
    return found ? 0 : -1;
}

static const char *man_dir(void) {
    static char dir[512];
    const char *src = getenv("SCIF_TEST_TOP_SRCDIR");
    const char *cands[] = {"man", "../man", "../../man"};

    if (src) {
        snprintf(dir, sizeof(dir), "%s/man", src);
        if (!access(dir, R_OK))
            return dir;
    }
    for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
        snprintf(dir, sizeof(dir), "%s/scif_register.3", cands[i]);
        if (!access(dir, R_OK)) {
            snprintf(dir, sizeof(dir), "%s", cands[i]);
            return dir;
        }
    }
    return NULL;
}

/* ---- shared state of one run ---- */

struct shared {
    uint64_t calls, errors, undocumented, successes;
    uint64_t per_call[C_NCALLS];
    int reports;
    struct { /* the call each thread is in, shown if it never returns */
        int call, kind;
        unsigned long arg;
        uint8_t bytes[48];
    } cur[MAX_THREADS];
};

static struct shared *sh;
static uint64_t max_calls;
static double deadline;
static int peer; /* node of the client side: 1, or 0 without a second node */
static volatile int victim_fds[2] = {-1, -1}; /* closed under the fuzzers' feet */
static volatile int stop;

/* Memory every thread points into. */
static uint8_t *ro_page;     /* PROT_READ */
static uint8_t *none_page;   /* PROT_NONE */
static uint8_t *gone_page;   /* unmapped */
static int foreign_fd = -1;  /* /dev/null */
static int closed_fd = 1000; /* never open */

enum fdkind { FD_SCIF, FD_RACY, FD_CLOSED, FD_FOREIGN };

struct thr {
    int idx;
    struct prng p;
    int srv, cli, fresh;
    uint8_t *sbuf, *cbuf, *arg; /* windows' memory; a page for arguments */
    int last_mark;
    pthread_t th;
};

static uint64_t rnd(struct thr *t) {
    return prng_next(&t->p);
}

static uint64_t pick(struct thr *t, const uint64_t *v, size_t n) {
    return v[rnd(t) % n];
}

/* An offset near something interesting. */
static int64_t mut_off(struct thr *t) {
    static const uint64_t v[] = {
        0,
        WOFF,
        WOFF + PAGE,
        WOFF + WLEN - PAGE,
        WOFF + WLEN,
        WOFF + WLEN - 1,
        WOFF - PAGE,
        WOFF + 1,
        WOFF + 2 * WLEN,
        1ULL << 63,
        (1ULL << 63) - PAGE,
        (1ULL << 63) - 1,
        (uint64_t)-PAGE,
        (uint64_t)-1,
        1ULL << 62,
        0x7ffffffff000ULL,
    };

    switch (rnd(t) % 4) {
    case 0:
        return (int64_t)(rnd(t) & ~(PAGE - 1));
    case 1:
        return (int64_t)(WOFF + (rnd(t) % (WPAGES + 2)) * PAGE);
    default:
        return (int64_t)pick(t, v, ARRAY_SIZE(v));
    }
}

static uint64_t mut_len(struct thr *t) {
    static const uint64_t v[] = {
        0,           1,          PAGE - 1,    PAGE,         PAGE + 1,        2 * PAGE,
        WLEN - PAGE, WLEN,       WLEN + PAGE, 2 * WLEN,     1ULL << 32,      (1ULL << 32) + PAGE,
        1ULL << 40,  1ULL << 62, 1ULL << 63,  (uint64_t)-1, (uint64_t)-PAGE,
    };

    if (rnd(t) % 4 == 0)
        return (rnd(t) % WPAGES + 1) * PAGE;
    return pick(t, v, ARRAY_SIZE(v));
}

/* A user address: mostly the thread's buffers, sometimes hostile. */
static uint64_t mut_addr(struct thr *t, uint8_t *buf) {
    switch (rnd(t) % 12) {
    case 0:
        return 0;
    case 1:
        return (uint64_t)(uintptr_t)none_page;
    case 2:
        return (uint64_t)(uintptr_t)gone_page;
    case 3:
        return (uint64_t)(uintptr_t)ro_page;
    case 4:
        return 0xffffffff81000000ULL; /* kernel text */
    case 5:
        return (uint64_t)(uintptr_t)buf + 1;
    case 6:
        return (uint64_t)(uintptr_t)buf + WLEN - PAGE;
    case 7:
        return rnd(t);
    default:
        return (uint64_t)(uintptr_t)buf + (rnd(t) % WPAGES) * PAGE;
    }
}

/* Flags: valid ones most of the time, else any bit. */
static uint32_t mut_flags(struct thr *t, uint32_t valid) {
    switch (rnd(t) % 4) {
    case 0:
        return (uint32_t)rnd(t);
    case 1:
        return 1u << (rnd(t) % 32);
    default:
        return (uint32_t)rnd(t) & valid;
    }
}

/* A descriptor, and what kind it is. */
static int mut_fd(struct thr *t, enum fdkind *k) {
    unsigned r = (unsigned)(rnd(t) % 16);

    *k = FD_SCIF;
    if (r < 6)
        return t->cli;
    if (r < 10)
        return t->srv;
    if (r < 11)
        return t->fresh;
    if (r < 13) {
        *k = FD_RACY;
        return victim_fds[r & 1];
    }
    if (r < 14) {
        *k = FD_CLOSED;
        return closed_fd;
    }
    if (r < 15) {
        *k = FD_FOREIGN;
        return foreign_fd;
    }
    return t->cli;
}

static int open_fresh(int node) {
    int fd = ep_open(node);

    /* A connect on it never waits for an accept. */
    if (fd >= 0)
        fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* (Re)build the thread's pair, windows and fresh endpoint: 0 or -1. */
static int build(struct thr *t) {
    if (t->srv >= 0)
        close(t->srv);
    if (t->cli >= 0)
        close(t->cli);
    if (t->fresh >= 0)
        close(t->fresh);
    t->srv = t->cli = t->fresh = -1;
    if (connect_pair(0, peer, &t->srv, &t->cli))
        return -1;
    if (scif_register(t->srv, t->sbuf, WLEN, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != WOFF ||
        scif_register(t->cli, t->cbuf, WLEN, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != WOFF) {
        diag("register: %s", strerror(errno));
        return -1;
    }
    t->fresh = open_fresh(rnd(t) % 2 ? peer : 0);
    return t->fresh < 0 ? -1 : 0;
}

/*
 * Fill the argument of call c at t->arg; returns the ioctl's argument (a
 * pointer into t->arg, or a bad one, or a plain integer).  *badarg is set
 * when the argument pointer itself is inaccessible (EFAULT is then ioctl(2)'s).
 */
static unsigned long make_arg(struct thr *t, int c, int *badarg) {
    uint8_t *a = t->arg;
    size_t size = _IOC_SIZE(calls[c].cmd);

    *badarg = 0;
    memset(a, 0, PAGE);
    /* Place it at the start of the page or ending at its end (next is unmapped). */
    if (rnd(t) % 4 == 0)
        a = t->arg + PAGE - size;
    switch (c) {
    case C_BIND: {
        uint32_t port = (uint32_t)pick(
            t, (const uint64_t[]){0, 1, 1023, 1024, 2050, 65535, 65536, 0xffffffffu}, 8);

        memcpy(a, &port, 4);
        break;
    }
    case C_LISTEN:
        return (unsigned long)pick(
            t, (const uint64_t[]){0, 1, 16, 1u << 20, (uint64_t)-1, 0x80000000u}, 6);
    case C_CONNECT: {
        struct scifioctl_connect *x = (void *)a;

        x->peer.node = (uint16_t)(rnd(t) % 3 ? (uint64_t)peer : rnd(t));
        x->peer.port = (uint16_t)(rnd(t) % 2 ? 2050 + rnd(t) % 16 : rnd(t));
        break;
    }
    case C_ACCEPTREQ: {
        struct scifioctl_accept *x = (void *)a;

        /* never SCIF_ACCEPT_SYNC: nobody may be connecting */
        x->flags = (int32_t)(mut_flags(t, 0) & ~1u);
        break;
    }
    case C_ACCEPTREG: {
        uint64_t h = rnd(t) % 2 ? rnd(t) : rnd(t) % 4;

        memcpy(a, &h, 8);
        break;
    }
    case C_SEND:
    case C_RECV: {
        struct scifioctl_msg *x = (void *)a;

        x->msg = mut_addr(t, c == C_SEND ? t->cbuf : t->sbuf);
        x->len = (int32_t)pick(
            t,
            (const uint64_t[]){0, 1, 64, PAGE - 1, PAGE, PAGE + 1, 65536, (uint64_t)-1, 0x7fffffff},
            9);
        /* never SCIF_SEND_BLOCK / SCIF_RECV_BLOCK: the peer may never act */
        x->flags = (int32_t)(mut_flags(t, 0) & ~1u);
        x->out_len = (int32_t)rnd(t);
        break;
    }
    case C_REG: {
        struct scifioctl_reg *x = (void *)a;

        x->addr = mut_addr(t, rnd(t) % 2 ? t->sbuf : t->cbuf);
        x->len = mut_len(t);
        x->offset = mut_off(t);
        x->prot = (int32_t)mut_flags(t, SCIF_PROT_READ | SCIF_PROT_WRITE);
        x->flags = (int32_t)mut_flags(t, SCIF_MAP_FIXED);
        x->out_offset = (int64_t)rnd(t);
        break;
    }
    case C_UNREG: {
        struct scifioctl_unreg *x = (void *)a;

        x->offset = mut_off(t);
        x->len = mut_len(t);
        break;
    }
    case C_READFROM:
    case C_WRITETO:
    case C_VREADFROM:
    case C_VWRITETO: {
        struct scifioctl_copy *x = (void *)a;

        x->loffset = mut_off(t);
        x->len = mut_len(t);
        x->roffset = mut_off(t);
        x->addr = mut_addr(t, rnd(t) % 2 ? t->cbuf : t->sbuf);
        x->flags = (int32_t)mut_flags(t, SCIF_RMA_USECPU | SCIF_RMA_USECACHE | SCIF_RMA_SYNC |
                                             SCIF_RMA_ORDERED);
        break;
    }
    case C_NODEIDS: {
        struct scifioctl_node_ids *x = (void *)a;

        x->nodes = mut_addr(t, t->cbuf);
        x->self = mut_addr(t, t->sbuf);
        x->len = (int32_t)pick(
            t, (const uint64_t[]){0, 1, 2, 64, 0x7fffffff, (uint64_t)-1, 1u << 20}, 7);
        break;
    }
    case C_FENCE_MARK: {
        struct scifioctl_fence_mark *x = (void *)a;

        x->flags = (int32_t)mut_flags(t, SCIF_FENCE_INIT_SELF | SCIF_FENCE_INIT_PEER);
        if (rnd(t) % 2)
            x->flags = rnd(t) % 2 ? SCIF_FENCE_INIT_SELF : SCIF_FENCE_INIT_PEER;
        x->mark = rnd(t) % 3 ? (uint64_t)(uintptr_t)&t->last_mark : mut_addr(t, t->cbuf);
        break;
    }
    case C_FENCE_WAIT:
        /* a mark from the last FENCE_MARK, or any int */
        return (unsigned long)(uint32_t)(rnd(t) % 2 ? (uint32_t)t->last_mark : (uint32_t)rnd(t));
    case C_FENCE_SIGNAL: {
        struct scifioctl_fence_signal *x = (void *)a;

        x->loff = mut_off(t);
        x->lval = rnd(t);
        x->roff = mut_off(t);
        x->rval = rnd(t);
        x->flags = (int32_t)mut_flags(t, SCIF_FENCE_INIT_SELF | SCIF_FENCE_INIT_PEER |
                                             SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE);
        break;
    }
    default:
        break;
    }
    /* Sometimes the argument pointer itself is bad. */
    switch (rnd(t) % 32) {
    case 0:
        *badarg = 1;
        return 0;
    case 1:
        *badarg = 1;
        return (unsigned long)none_page;
    case 2:
        *badarg = 1;
        return (unsigned long)ro_page; /* the kernel writes most arguments back */
    default:
        return (unsigned long)a;
    }
}

static void report(struct thr *t, int c, enum fdkind k, unsigned long arg, int ret, int e) {
    static const char *kinds[] = {"scif", "racy", "closed", "foreign"};
    int n = __atomic_fetch_add(&sh->reports, 1, __ATOMIC_RELAXED);
    char hex[3 * 48 + 1] = "";

    if (n >= MAX_REPORTS)
        return;
    if (c != C_MMAP && c != C_LISTEN && c != C_FENCE_WAIT && arg >= (unsigned long)t->arg &&
        arg < (unsigned long)t->arg + PAGE) {
        size_t sz = _IOC_SIZE(calls[c].cmd);

        for (size_t i = 0; i < sz && i < 48; i++)
            sprintf(hex + 3 * i, "%02x ", ((uint8_t *)arg)[i]);
    }
    diag("thread %d: %s on a %s fd: ret %d errno %d (%s) not in man/%s.3; arg %#lx [%s]", t->idx,
         calls[c].name, kinds[k], ret, e, strerror(e), calls[c].man ? calls[c].man : "-", arg, hex);
}

/* Is errno e acceptable for call c on a descriptor of kind k? */
static int acceptable(int c, enum fdkind k, int badarg, int e) {
    if (doc_has(c, e))
        return 1;
    if (e == EBADF && (k == FD_CLOSED || k == FD_RACY))
        return 1; /* ioctl(2), mmap(2): not an open descriptor */
    if (e == ENOTTY && (k == FD_FOREIGN || k == FD_RACY) && c != C_MMAP)
        return 1; /* ioctl(2): not a SCIF descriptor */
    if (e == ENODEV && k == FD_FOREIGN && c == C_MMAP)
        return 1; /* mmap(2): the file cannot be mapped */
    if (e == EFAULT && badarg)
        return 1; /* ioctl(2): argp inaccessible */
    /* mmap(2)'s own checks of length, offset and address space. */
    if (c == C_MMAP && (e == EINVAL || e == ENOMEM || e == EOVERFLOW))
        return 1;
    return 0;
}

static void one_call(struct thr *t) {
    int c = (int)(rnd(t) % C_NCALLS), fd, ret, e, badarg = 0;
    enum fdkind k;
    unsigned long arg = 0;

    fd = mut_fd(t, &k);
    if (c == C_CONNECT && k == FD_RACY)
        fd = t->fresh; /* a victim is blocking: it could wait for an accept */
    errno = 0;
    if (c == C_MMAP) {
        uint64_t len = mut_len(t);
        int64_t off = mut_off(t);
        int prot = (int)mut_flags(t, PROT_READ | PROT_WRITE) & (PROT_READ | PROT_WRITE | PROT_EXEC);
        void *p;

        if (len > (1ULL << 40))
            len = rnd(t) % 2 ? len : 1ULL << 40;
        sh->cur[t->idx].call = c;
        sh->cur[t->idx].kind = k;
        sh->cur[t->idx].arg = (unsigned long)len;
        memcpy(sh->cur[t->idx].bytes, &off, sizeof(off));
        p = mmap(NULL, (size_t)len, prot, MAP_SHARED, fd, (off_t)off);
        e = errno;
        ret = p == MAP_FAILED ? -1 : 0;
        if (p != MAP_FAILED)
            munmap(p, (size_t)len);
    } else {
        arg = make_arg(t, c, &badarg);
        sh->cur[t->idx].call = c;
        sh->cur[t->idx].kind = k;
        sh->cur[t->idx].arg = arg;
        if (arg >= (unsigned long)t->arg && arg < (unsigned long)t->arg + PAGE)
            memcpy(sh->cur[t->idx].bytes, (void *)arg, _IOC_SIZE(calls[c].cmd));
        ret = ioctl(fd, calls[c].cmd, arg);
        e = errno;
    }
    __atomic_fetch_add(&sh->per_call[c], 1, __ATOMIC_RELAXED);
    if (ret >= 0) {
        __atomic_fetch_add(&sh->successes, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
    if (!acceptable(c, k, badarg, e)) {
        __atomic_fetch_add(&sh->undocumented, 1, __ATOMIC_RELAXED);
        report(t, c, k, arg, ret, e);
    }
}

static void *fuzz_thread(void *arg) {
    struct thr *t = arg;
    uint64_t mine = 0;

    while (!stop) {
        uint64_t n = __atomic_fetch_add(&sh->calls, 1, __ATOMIC_RELAXED);

        if (n >= max_calls || now_sec() > deadline)
            break;
        if (mine++ % REBUILD_EVERY == REBUILD_EVERY - 1) {
            int tries = 0;

            /* Racing calls on reused descriptor numbers may spoil a connect. */
            while (build(t) && ++tries < 20)
                sleep_ms(10);
            if (tries == 20) {
                diag("thread %d: rebuilding its pair failed", t->idx);
                break;
            }
        }
        one_call(t);
    }
    return NULL;
}

/* Connects, registers and closes pairs while the fuzzers use them. */
static void *victim_thread(void *arg) {
    uint8_t *buf = map_anon(WLEN);
    struct prng p;

    prng_init(&p, (uintptr_t)arg);
    while (!stop && buf) {
        int s, c;

        /*
         * The fuzzers' calls on reused descriptor numbers may hit this
         * pair while it connects: then try again.
         */
        if (connect_pair(0, peer, &s, &c)) {
            sleep_ms(1);
            continue;
        }
        scif_register(s, buf, WLEN, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED);
        scif_register(c, buf, WLEN, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED);
        victim_fds[0] = s;
        victim_fds[1] = c;
        sleep_ms((long)(prng_next(&p) % 20));
        /* the numbers stay in victim_fds: later calls see closed (or reused) descriptors */
        if (prng_next(&p) % 2) {
            close(c);
            close(s);
        } else {
            close(s);
            close(c);
        }
        sleep_ms((long)(prng_next(&p) % 5));
    }
    return NULL;
}

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);

    return v && *v ? strtoull(v, NULL, 0) : def;
}

/*
 * WLEN bytes followed by GUARD inaccessible bytes: a mutated address plus a
 * mutated length runs into the guard (EFAULT), never into other memory of
 * the process (an RMA read would overwrite it: the kernel did as asked).
 */
#define GUARD (1UL << 22)
static uint8_t *guarded(void) {
    uint8_t *p = map_anon(WLEN + GUARD);

    if (p && mprotect(p + WLEN, GUARD, PROT_NONE))
        return NULL;
    return p;
}

/* The fuzzing process: exit status 0, or 1 when it could not set up. */
static int fuzz_main(uint64_t seed, int nthreads, double seconds) {
    static struct thr thr[MAX_THREADS];
    pthread_t victim;
    int i;

    ro_page = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    none_page = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gone_page = map_anon(PAGE);
    if (ro_page == MAP_FAILED || none_page == MAP_FAILED || !gone_page)
        return 1;
    munmap(gone_page, PAGE);
    foreign_fd = open("/dev/null", O_RDWR);
    if (foreign_fd < 0)
        return 1;
    deadline = now_sec() + seconds;
    for (i = 0; i < nthreads; i++) {
        struct thr *t = &thr[i];

        t->idx = i;
        prng_init(&t->p, seed * 1000003 + (uint64_t)i);
        t->srv = t->cli = t->fresh = -1;
        t->sbuf = guarded();
        t->cbuf = guarded();
        t->arg = map_anon(2 * PAGE);
        if (!t->sbuf || !t->cbuf || !t->arg)
            return 1;
        munmap(t->arg + PAGE, PAGE);
        if (build(t))
            return 1;
    }
    if (pthread_create(&victim, NULL, victim_thread, (void *)(uintptr_t)seed))
        return 1;
    for (i = 0; i < nthreads; i++)
        if (pthread_create(&thr[i].th, NULL, fuzz_thread, &thr[i]))
            return 1;
    for (i = 0; i < nthreads; i++)
        pthread_join(thr[i].th, NULL);
    stop = 1;
    /*
     * A fuzzing ACCEPTREQ on a reused descriptor number can take the
     * request the victim's connect_pair() polled for; connect_pair then
     * fails (ECONNABORTED) rather than wait in a blocking accept, as it
     * did once (a fuzzing thread's rebuild hung on PREEMPT_RT).  The
     * bound stays: a connect or accept of the victim's own may wait.
     */
    {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 20;
        if (pthread_timedjoin_np(victim, NULL, &ts))
            diag("the victim thread waits in a connect or accept whose peer a fuzzing call "
                 "took; exiting ends it");
    }
    /* Close everything here; the parent checks the counters. */
    for (i = 0; i < nthreads; i++) {
        close(thr[i].srv);
        close(thr[i].cli);
        close(thr[i].fresh);
    }
    return 0;
}

/* What each fuzzing thread is doing, and the kernel stacks of the process. */
static void show_hang(pid_t pid, int nthreads) {
    char cmd[128];

    for (int i = 0; i < nthreads; i++) {
        char hex[3 * 48 + 1] = "";

        for (int b = 0; b < 48; b++)
            sprintf(hex + 3 * b, "%02x ", sh->cur[i].bytes[b]);
        diag("thread %d in %s (fd kind %d) arg %#lx [%s]", i, calls[sh->cur[i].call].name,
             sh->cur[i].kind, sh->cur[i].arg, hex);
    }
    snprintf(cmd, sizeof(cmd),
             "for t in /proc/%d/task/*; do echo \"# $t\"; sed 's/^/#   /' $t/stack; done",
             (int)pid);
    fflush(stdout);
    if (system(cmd) < 0)
        diag("cannot show the stacks");
}

/* connect, send/recv and an RMA round trip on a fresh pair. */
static int module_works(void) {
    int srv, cli;
    uint8_t msg[64], got[64], *w, *l;

    CHECK(connect_pair(0, peer, &srv, &cli) == 0);
    fill(msg, sizeof(msg), 7);
    CHECK(send_all(cli, msg, sizeof(msg)) == 0);
    CHECK(recv_all(srv, got, sizeof(got)) == 0);
    CHECK(!memcmp(msg, got, sizeof(msg)), "message corrupted");
    w = map_anon(WLEN);
    l = map_anon(WLEN);
    CHECK(w && l);
    CHECK(scif_register(srv, w, WLEN, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) ==
          WOFF);
    fill(l, WLEN, 8);
    CHECK(scif_vwriteto(cli, l, WLEN, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(w, l, WLEN) < 0, "RMA write corrupted");
    memset(l, 0, WLEN);
    CHECK(scif_vreadfrom(cli, l, WLEN, WOFF, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(w, l, WLEN) < 0, "RMA read corrupted");
    close(cli);
    close(srv);
    munmap(w, WLEN);
    munmap(l, WLEN);
    return KSFT_PASS;
}

int main(void) {
    uint64_t seed = env_u64("SCIF_FUZZ_SEED", 0);
    int nthreads = (int)env_u64("SCIF_FUZZ_THREADS", 4);
    double seconds = (double)env_u64("SCIF_FUZZ_SECONDS", 60);
    double limit = (double)env_u64("SCIF_TEST_TIMEOUT", 0);
    const char *mandir = man_dir();
    int man_ok = mandir != NULL, st = 0, r;
    double t0, guard;
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (access("/dev/scif", R_OK | W_OK))
        return ksft_exit_skip_all("/dev/scif missing: scif module not loaded");
    if (!seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    max_calls = env_u64("SCIF_FUZZ_CALLS", 300000);
    if (nthreads < 1 || nthreads > MAX_THREADS)
        nthreads = 4;
    peer = max_node() >= 1 ? 1 : 0;
    for (int c = 0; c < C_NCALLS && man_ok; c++)
        if (calls[c].man && load_man(c, mandir))
            man_ok = 0;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return ksft_exit_skip_all("no shared memory");

    ksft_print_header();
    ksft_set_plan(4);
    /* the tail (the victim's join, the counters, module_works) and the guard fit the runner's */
    if (limit && limit < 240)
        limit = 240;
    if (limit && seconds > limit - 120) {
        diag("wall bound %.0f s cut to %.0f s (SCIF_TEST_TIMEOUT %.0f s)", seconds, limit - 120,
             limit);
        seconds = limit - 120;
    }
    diag("seed %llu (SCIF_FUZZ_SEED=%llu reproduces), %d threads, bounds %llu calls / %.0f s, "
         "client node %d",
         (unsigned long long)seed, (unsigned long long)seed, nthreads,
         (unsigned long long)max_calls, seconds, peer);

    /* The fuzzing runs in a child: a crash or a hang there is a result here. */
    t0 = now_sec();
    pid = fork();
    if (pid == 0)
        _exit(fuzz_main(seed, nthreads, seconds));
    /* only catches a hang: a call that never returns */
    guard = !limit || seconds + 240 < limit - 30 ? seconds + 240 : limit - 30;
    r = -1;
    while (pid > 0 && now_sec() - t0 < guard) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            r = 0;
            break;
        }
        sleep_ms(100);
    }
    if (pid > 0 && r) {
        diag("the fuzzing process hangs after %.0f s: killing it", now_sec() - t0);
        show_hang(pid, nthreads);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    if (sh->calls > max_calls)
        sh->calls = max_calls;
    diag("%llu calls (%llu succeeded, %llu failed) in %.1f s", (unsigned long long)sh->calls,
         (unsigned long long)sh->successes, (unsigned long long)sh->errors, now_sec() - t0);
    for (int c = 0; c < C_NCALLS; c++)
        diag("  %-18s %llu", calls[c].name, (unsigned long long)sh->per_call[c]);
    ksft_test_result(pid > 0 && r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                     "fuzz: no crash or hang");
    if (pid > 0 && r == 0 && WIFSIGNALED(st))
        diag("fuzzing process killed by signal %d", WTERMSIG(st));
    if (!man_ok)
        ksft_test_result_skip("man pages not found (SCIF_TEST_TOP_SRCDIR)",
                              "fuzz: every error is a documented errno");
    else
        ksft_test_result(sh->undocumented == 0, "fuzz: every error is a documented errno");
    diag("%llu errors not documented", (unsigned long long)sh->undocumented);
    ksft_test_result(all_counters_zero() == KSFT_PASS,
                     "fuzz: counters back to zero (endpoints, windows, pins, mappings, transfers)");
    ksft_test_result(module_works() == KSFT_PASS && all_counters_zero() == KSFT_PASS,
                     "fuzz: module still works after (connect, send/recv, RMA)");
    return ksft_exit();
}
