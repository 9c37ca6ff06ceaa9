// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * soak_test: many processes and threads doing random SCIF work across the
 * emulated nodes while the supervisor kills them with SIGKILL.
 *
 * A worker process connects a pair (server and client each on node 0 or 1
 * at random), registers a window on each side and runs two threads, each
 * on its own slice of both windows, doing random operations: the four RMA
 * calls (synchronous, or asynchronous then a fence mark and wait; CPU,
 * DMA when the software DMA engine is loaded, the registration cache),
 * fence signals, scif_mmap of the peer window, messages, an extra window
 * registered and unregistered, and a forked child reading through the
 * inherited endpoint (sometimes killed at once).  Every byte moved is
 * compared with the pattern it was written with.  The supervisor keeps
 * SCIF_SOAK_WORKERS workers alive and kills one with SIGKILL every few
 * tens of milliseconds, so transfers, registrations, mappings and closes
 * are cut at random points.
 *
 * Bounds (both apply): SCIF_SOAK_SECONDS (default 60) and SCIF_SOAK_ROUNDS
 * (worker processes started, default 100000).  SCIF_SOAK_SEED reproduces a
 * run's choices (printed).  The default keeps make check short; the figures
 * of a long run are in README.md (Reliability).
 *
 * Results: workers ran and moved data, no bad byte, no unexpected errno
 * (every call of a live worker on its own connection must succeed), every
 * worker ended by exit 0 or the supervisor's SIGKILL (no crash, no hang),
 * and every counter back to zero at the end (endpoints, windows, pinned
 * pages (registration cache included), mappings, queued transfers and DMA
 * batches).  The VM run fails on any kernel splat.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "scif_test.h"

#define NTHREADS 2
#define SLICE (16 * PAGE)        /* per thread, in each window */
#define WSIZE (NTHREADS * SLICE) /* each side's window */
#define WOFF 0x400000L           /* server window */
#define LOFF 0x800000L           /* client window */
#define XOFF 0xc00000L           /* extra windows, one slot per thread */
#define MAX_WORKERS 16
#define MAX_REPORTS 20

struct stats {
    uint64_t bytes, ops, kills, bad, unexpected, forks, started, exited, crashed, reports;
    uint64_t per_op[16];
};

static struct stats *st;
static int nodes = 1; /* emulated nodes usable (1 or 2) */
static int dma;       /* SCIF_TEST_DMA: the software DMA engine is loaded */

static void add(uint64_t *c, uint64_t n) {
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static void bad_call(const char *what, int e) {
    add(&st->unexpected, 1);
    if (__atomic_fetch_add(&st->reports, 1, __ATOMIC_RELAXED) < MAX_REPORTS)
        diag("pid %d: %s failed: errno %d (%s)", getpid(), what, e, strerror(e));
}

static void bad_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t len) {
    long long d = first_diff(got, want, len);
    uint64_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += got[i] != want[i];
    add(&st->bad, n);
    if (__atomic_fetch_add(&st->reports, 1, __ATOMIC_RELAXED) < MAX_REPORTS)
        diag("pid %d: %s: %llu bad bytes of %zu, first at %lld", getpid(), what,
             (unsigned long long)n, len, d);
}

/* Compare and count; 0 when equal. */
static int verify(const char *what, const uint8_t *got, const uint8_t *want, size_t len) {
    if (!memcmp(got, want, len))
        return 0;
    bad_bytes(what, got, want, len);
    return -1;
}

struct worker {
    int srv, cli;
    uint8_t *sbuf, *cbuf; /* server and client windows */
    pthread_mutex_t msg_lock;
};

struct wthread {
    struct worker *w;
    int idx;
    struct prng p;
    uint8_t *priv, *want; /* SLICE bytes each */
    uint8_t *xbuf;        /* extra window memory */
    uint64_t ops;
};

static uint64_t rnd(struct wthread *t) {
    return prng_next(&t->p);
}

/* RMA flags: sync or async, CPU or DMA (when there is an engine), cache. */
static int rma_flags(struct wthread *t, int cache_ok) {
    int f = rnd(t) % 3 ? SCIF_RMA_SYNC : 0;

    if (!dma || rnd(t) % 2)
        f |= SCIF_RMA_USECPU;
    if (cache_ok && rnd(t) % 2)
        f |= SCIF_RMA_USECACHE;
    if (rnd(t) % 8 == 0)
        f |= SCIF_RMA_ORDERED;
    return f;
}

/* After an asynchronous RMA: mark and wait (self side). */
static int settle(struct wthread *t, int flags) {
    int m;

    if (flags & SCIF_RMA_SYNC)
        return 0;
    if (scif_fence_mark(t->w->cli, SCIF_FENCE_INIT_SELF, &m)) {
        bad_call("scif_fence_mark", errno);
        return -1;
    }
    if (scif_fence_wait(t->w->cli, m)) {
        bad_call("scif_fence_wait", errno);
        return -1;
    }
    return 0;
}

/* A random range [*off, *off + *len) inside a slice, leaving the last 8 bytes for signals. */
static void range(struct wthread *t, size_t *off, size_t *len) {
    size_t room = SLICE - 8;

    if (rnd(t) % 2) { /* page aligned */
        *off = (rnd(t) % (SLICE / PAGE - 1)) * PAGE;
        *len = (rnd(t) % ((room - *off) / PAGE) + 1) * PAGE;
        if (*off + *len > room)
            *len = room - *off;
    } else {
        *off = rnd(t) % (room - 1);
        *len = rnd(t) % (room - *off) + 1;
    }
}

enum op { O_VWRITE, O_VREAD, O_WRITE, O_READ, O_SIGNAL, O_MMAP, O_MSG, O_REG, O_FORK, O_NOPS };

static int op_rma(struct wthread *t, enum op op) {
    struct worker *w = t->w;
    size_t off, len, loff;
    size_t base = (size_t)t->idx * SLICE;
    uint8_t *srv = w->sbuf + base, *cli = w->cbuf + base;
    int flags, r;

    range(t, &off, &len);
    loff = rnd(t) % 2 ? off : (size_t)(rnd(t) % (SLICE - 8 - len + 1));
    flags = rma_flags(t, op == O_VWRITE || op == O_VREAD);
    fill(t->want, len, rnd(t));
    switch (op) {
    case O_VWRITE:
        memcpy(t->priv, t->want, len);
        r = scif_vwriteto(w->cli, t->priv, len, WOFF + base + off, flags);
        break;
    case O_VREAD:
        memcpy(srv + off, t->want, len);
        memset(t->priv, 0, len);
        r = scif_vreadfrom(w->cli, t->priv, len, WOFF + base + off, flags);
        break;
    case O_WRITE:
        memcpy(cli + loff, t->want, len);
        r = scif_writeto(w->cli, LOFF + base + loff, len, WOFF + base + off, flags);
        break;
    default: /* O_READ */
        memcpy(srv + off, t->want, len);
        r = scif_readfrom(w->cli, LOFF + base + loff, len, WOFF + base + off, flags);
        break;
    }
    if (r) {
        bad_call(op == O_VWRITE  ? "scif_vwriteto"
                 : op == O_VREAD ? "scif_vreadfrom"
                 : op == O_WRITE ? "scif_writeto"
                                 : "scif_readfrom",
                 errno);
        return -1;
    }
    if (settle(t, flags))
        return -1;
    add(&st->bytes, len);
    switch (op) {
    case O_VWRITE:
    case O_WRITE:
        return verify("RMA write", srv + off, t->want, len);
    case O_VREAD:
        return verify("scif_vreadfrom", t->priv, t->want, len);
    default:
        return verify("scif_readfrom", cli + loff, t->want, len);
    }
}

/* Asynchronous write, then a remote fence signal: the value implies the data. */
static int op_signal(struct wthread *t) {
    struct worker *w = t->w;
    size_t base = (size_t)t->idx * SLICE, off, len;
    volatile uint64_t *flag = (volatile uint64_t *)(w->sbuf + base + SLICE - 8);
    uint64_t val = rnd(t) | 1;
    int i;

    range(t, &off, &len);
    fill(t->priv, len, rnd(t));
    *flag = 0;
    if (scif_vwriteto(w->cli, t->priv, len, WOFF + base + off, rma_flags(t, 1) & ~SCIF_RMA_SYNC)) {
        bad_call("scif_vwriteto (async)", errno);
        return -1;
    }
    if (scif_fence_signal(w->cli, 0, 0, WOFF + base + SLICE - 8, val,
                          SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_REMOTE)) {
        bad_call("scif_fence_signal", errno);
        return -1;
    }
    /* Bounded: a lost signal fails the check below rather than hanging. */
    for (i = 0; i < 20000 && *flag != val; i++)
        sleep_ms(1);
    if (*flag != val) {
        bad_call("fence signal never arrived", ETIMEDOUT);
        return -1;
    }
    add(&st->bytes, len);
    return verify("data before its fence signal", w->sbuf + base + off, t->priv, len);
}

/* scif_mmap of the thread's slice of the peer window: reads and writes. */
static int op_mmap(struct wthread *t) {
    struct worker *w = t->w;
    size_t base = (size_t)t->idx * SLICE;
    size_t pg = rnd(t) % (SLICE / PAGE - 1), n = rnd(t) % (SLICE / PAGE - 1 - pg) + 1;
    uint8_t *m, *srv = w->sbuf + base + pg * PAGE;
    int r;

    m = scif_mmap(NULL, n * PAGE, SCIF_PROT_READ | SCIF_PROT_WRITE, 0, w->cli,
                  WOFF + base + pg * PAGE);
    if (m == MAP_FAILED || !m) {
        bad_call("scif_mmap", errno);
        return -1;
    }
    fill(t->want, n * PAGE, rnd(t));
    memcpy(srv, t->want, n * PAGE);
    r = verify("read through scif_mmap", m, t->want, n * PAGE);
    fill(t->want, n * PAGE, rnd(t));
    memcpy(m, t->want, n * PAGE);
    r |= verify("write through scif_mmap", srv, t->want, n * PAGE);
    if (scif_munmap(m, n * PAGE))
        bad_call("scif_munmap", errno);
    add(&st->bytes, 2 * n * PAGE);
    return r;
}

/* A message each way (one thread of the worker at a time). */
static int op_msg(struct wthread *t) {
    struct worker *w = t->w;
    int len = (int)(rnd(t) % 1024) + 1, r = 0, dir;

    pthread_mutex_lock(&w->msg_lock);
    for (dir = 0; dir < 2 && !r; dir++) {
        int from = dir ? w->srv : w->cli, to = dir ? w->cli : w->srv;

        fill(t->want, (size_t)len, rnd(t));
        if (send_all(from, t->want, len) || recv_all(to, t->priv, len)) {
            bad_call("scif_send/scif_recv", errno);
            r = -1;
            break;
        }
        add(&st->bytes, (uint64_t)len);
        r = verify("message", t->priv, t->want, (size_t)len);
    }
    pthread_mutex_unlock(&w->msg_lock);
    return r;
}

/* Register an extra window, read it through RMA, unregister it. */
static int op_reg(struct wthread *t) {
    struct worker *w = t->w;
    size_t n = rnd(t) % 4 + 1;
    off_t off = XOFF + (off_t)t->idx * 8 * PAGE;
    int r;

    fill(t->xbuf, n * PAGE, rnd(t));
    if (scif_register(w->srv, t->xbuf, n * PAGE, off, SCIF_PROT_READ, SCIF_MAP_FIXED) != off) {
        bad_call("scif_register", errno);
        return -1;
    }
    memset(t->priv, 0, n * PAGE);
    if (scif_vreadfrom(w->cli, t->priv, n * PAGE, off, rma_flags(t, 1) | SCIF_RMA_SYNC)) {
        bad_call("scif_vreadfrom (extra window)", errno);
        r = -1;
    } else {
        add(&st->bytes, n * PAGE);
        r = verify("extra window", t->priv, t->xbuf, n * PAGE);
    }
    if (scif_unregister(w->srv, off, n * PAGE)) {
        bad_call("scif_unregister", errno);
        r = -1;
    }
    return r;
}

/* A child reads the slice through the inherited client endpoint; sometimes killed. */
static int op_fork(struct wthread *t) {
    struct worker *w = t->w;
    size_t base = (size_t)t->idx * SLICE;
    int status, kill_it = rnd(t) % 3 == 0;
    pid_t pid;

    fill(w->sbuf + base, SLICE - 8, rnd(t));
    memcpy(t->want, w->sbuf + base, SLICE - 8);
    pid = fork();
    if (pid < 0) {
        bad_call("fork", errno);
        return -1;
    }
    if (pid == 0) {
        if (scif_vreadfrom(w->cli, t->priv, SLICE - 8, WOFF + base, SCIF_RMA_SYNC))
            _exit(2);
        _exit(memcmp(t->priv, t->want, SLICE - 8) ? 3 : 0);
    }
    add(&st->forks, 1);
    if (kill_it) {
        sleep_ms((long)(rnd(t) % 3));
        kill(pid, SIGKILL);
    }
    if (waitpid(pid, &status, 0) != pid) {
        bad_call("waitpid", errno);
        return -1;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && kill_it) {
        add(&st->kills, 1);
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
            add(&st->bad, 1), diag("forked child read wrong bytes");
        else
            bad_call("forked child's scif_vreadfrom", WIFEXITED(status) ? EIO : EINTR);
        return -1;
    }
    add(&st->bytes, SLICE - 8);
    return 0;
}

static void *worker_thread(void *arg) {
    struct wthread *t = arg;

    while (t->ops--) {
        enum op op = (enum op)(rnd(t) % O_NOPS);

        switch (op) {
        case O_SIGNAL:
            op_signal(t);
            break;
        case O_MMAP:
            op_mmap(t);
            break;
        case O_MSG:
            op_msg(t);
            break;
        case O_REG:
            op_reg(t);
            break;
        case O_FORK:
            if (rnd(t) % 4) /* rarer: forks are slow */
                op_rma(t, O_VREAD);
            else
                op_fork(t);
            break;
        default:
            op_rma(t, op);
            break;
        }
        add(&st->ops, 1);
        add(&st->per_op[op], 1);
    }
    return NULL;
}

/* One worker process: exit 0 when it finished its operations. */
static int worker(uint64_t seed) {
    struct worker w = {.srv = -1, .cli = -1};
    struct wthread t[NTHREADS];
    pthread_t th[NTHREADS];
    struct prng p;
    int snode, cnode, i;

    prng_init(&p, seed);
    snode = (int)(prng_next(&p) % (uint64_t)nodes);
    cnode = (int)(prng_next(&p) % (uint64_t)nodes);
    pthread_mutex_init(&w.msg_lock, NULL);
    w.sbuf = map_anon(WSIZE);
    w.cbuf = map_anon(WSIZE);
    if (!w.sbuf || !w.cbuf)
        return 10;
    if (connect_pair(snode, cnode, &w.srv, &w.cli)) {
        bad_call("connect", errno);
        return 0;
    }
    if (scif_register(w.srv, w.sbuf, WSIZE, WOFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != WOFF ||
        scif_register(w.cli, w.cbuf, WSIZE, LOFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != LOFF) {
        bad_call("scif_register", errno);
        return 0;
    }
    for (i = 0; i < NTHREADS; i++) {
        t[i].w = &w;
        t[i].idx = i;
        prng_init(&t[i].p, seed * 31 + (uint64_t)i + 1);
        t[i].priv = map_anon(SLICE);
        t[i].want = map_anon(SLICE);
        t[i].xbuf = map_anon(4 * PAGE);
        t[i].ops = 20 + prng_next(&p) % 200;
        if (!t[i].priv || !t[i].want || !t[i].xbuf)
            return 10;
        if (pthread_create(&th[i], NULL, worker_thread, &t[i]))
            return 11;
    }
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    /* Close in a random order (or leave it to exit). */
    switch (prng_next(&p) % 3) {
    case 0:
        scif_close(w.cli);
        scif_close(w.srv);
        break;
    case 1:
        scif_close(w.srv);
        scif_close(w.cli);
        break;
    default:
        break;
    }
    return 0;
}

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);

    return v && *v ? strtoull(v, NULL, 0) : def;
}

int main(void) {
    double seconds = (double)env_u64("SCIF_SOAK_SECONDS", 60), t0, end;
    uint64_t rounds = env_u64("SCIF_SOAK_ROUNDS", 100000);
    uint64_t seed = env_u64("SCIF_SOAK_SEED", 0);
    int nworkers = (int)env_u64("SCIF_SOAK_WORKERS", 4), n = 0, i, hung = 0;
    pid_t pids[MAX_WORKERS] = {0};
    struct prng p;
    const char *d = getenv("SCIF_TEST_DMA");

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (access("/dev/scif", R_OK | W_OK))
        return ksft_exit_skip_all("/dev/scif missing: scif module not loaded");
    if (access(DBG_DIR "/windows", R_OK))
        return ksft_exit_skip_all("no " DBG_DIR " (debugfs not mounted?)");
    dma = d && !strcmp(d, "1") && swdma_loaded();
    if (nworkers < 1 || nworkers > MAX_WORKERS)
        nworkers = 4;
    if (!seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    nodes = max_node() >= 1 ? 2 : 1;
    st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        return ksft_exit_skip_all("no shared memory");
    prng_init(&p, seed);

    ksft_print_header();
    ksft_set_plan(5);
    diag("seed %llu (SCIF_SOAK_SEED), %d workers x %d threads, %d node(s), %s, bounds %.0f s / "
         "%llu workers started",
         (unsigned long long)seed, nworkers, NTHREADS, nodes, dma ? "CPU and DMA" : "CPU only",
         seconds, (unsigned long long)rounds);

    t0 = now_sec();
    end = t0 + seconds;
    for (;;) {
        int status;
        pid_t pid;

        /* Reap. */
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            for (i = 0; i < nworkers; i++)
                if (pids[i] == pid)
                    pids[i] = 0;
            n--;
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
                add(&st->kills, 1);
            } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                add(&st->exited, 1);
            } else {
                add(&st->crashed, 1);
                diag("worker %d ended with status %#x", (int)pid, status);
            }
        }
        if (now_sec() >= end || st->started >= rounds) {
            if (!n)
                break;
            if (now_sec() > end + 300) { /* a worker never finishes: a hang */
                hung = 1;
                for (i = 0; i < nworkers; i++)
                    if (pids[i])
                        kill(pids[i], SIGKILL);
            }
            sleep_ms(10);
            continue;
        }
        /* Keep nworkers alive. */
        for (i = 0; i < nworkers; i++) {
            uint64_t s;

            if (pids[i])
                continue;
            s = prng_next(&p);
            fflush(stdout);
            pid = fork();
            if (pid == 0)
                _exit(worker(s));
            if (pid > 0) {
                pids[i] = pid;
                n++;
                add(&st->started, 1);
            }
        }
        /* Kill one at a random point of its work. */
        sleep_ms((long)(prng_next(&p) % 60) + 5);
        if (prng_next(&p) % 2) {
            i = (int)(prng_next(&p) % (uint64_t)nworkers);
            if (pids[i])
                kill(pids[i], SIGKILL);
        }
    }

    diag("%.0f s: %llu workers started, %llu exited, %llu killed (with forked children), %llu "
         "crashed; %llu forks",
         now_sec() - t0, (unsigned long long)st->started, (unsigned long long)st->exited,
         (unsigned long long)st->kills, (unsigned long long)st->crashed,
         (unsigned long long)st->forks);
    diag("moved %llu bytes (%.2f GiB) in %llu operations; %llu bad bytes, %llu unexpected errnos",
         (unsigned long long)st->bytes, st->bytes / 1073741824.0, (unsigned long long)st->ops,
         (unsigned long long)st->bad, (unsigned long long)st->unexpected);
    {
        static const char *names[O_NOPS] = {"vwriteto", "vreadfrom",    "writeto",
                                            "readfrom", "fence signal", "mmap",
                                            "messages", "register",     "fork/vreadfrom"};

        for (i = 0; i < O_NOPS; i++)
            diag("  %-15s %llu", names[i], (unsigned long long)st->per_op[i]);
    }
    ksft_test_result(st->ops > 0 && st->bytes > 0, "soak: workers ran and moved data");
    ksft_test_result(st->bad == 0, "soak: no bad bytes");
    ksft_test_result(st->unexpected == 0, "soak: no unexpected errno");
    ksft_test_result(!hung && st->crashed == 0,
                     "soak: every worker exited or was killed (no crash, no hang)");
    ksft_test_result(all_counters_zero() == KSFT_PASS,
                     "soak: counters back to zero (endpoints, windows, pins, mappings, transfers)");
    return ksft_exit();
}
