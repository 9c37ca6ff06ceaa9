// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RMA data integrity: scif_readfrom, scif_writeto, scif_vreadfrom and
 * scif_vwriteto with random sizes, offsets and alignments, single and
 * multi-window ranges, synchronous and asynchronous (+ fence), CPU and DMA,
 * loopback and node 0 <-> node 1, several threads; every byte is checked.
 * Loopback within a node always moves data with the CPU (as Intel's
 * driver), so the DMA cases run between node 0 and node 1.
 */
#include "scif_test.h"

#define WIN (4UL << 20)  /* each side: two windows of WIN / 2 */
#define ROFF 0x10000000L /* peer's windows */
#define LOFF 0x20000000L /* local windows */
#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)

enum { OP_READFROM, OP_WRITETO, OP_VREADFROM, OP_VWRITETO, OP_N };
static const char *const op_name[OP_N] = {"readfrom", "writeto", "vreadfrom", "vwriteto"};

/* A connected pair with two contiguous windows per side (ranges may cross them). */
FIXTURE(side) {
    int srv, cli;
    uint8_t *rbuf; /* server memory behind the peer windows */
    uint8_t *lbuf; /* client memory behind the local windows */
    uint8_t *ubuf; /* client user memory for v* calls */
};

/* Server (windows at ROFF) on snode, client (windows at LOFF) on cnode. */
FIXTURE_VARIANT(side) {
    int snode, cnode;
};

FIXTURE_VARIANT_ADD(side, loopback){.snode = 0, .cnode = 0};
FIXTURE_VARIANT_ADD(side, node01){.snode = 0, .cnode = 1};
FIXTURE_VARIANT_ADD(side, node10){.snode = 1, .cnode = 0};

/* buf registered as two contiguous RW windows of WIN / 2 at off: 0 or -1. */
static int two_windows(int epd, uint8_t *buf, off_t off) {
    if (scif_register(epd, buf, WIN / 2, off, RW, SCIF_MAP_FIXED) != off ||
        scif_register(epd, buf + WIN / 2, WIN / 2, off + WIN / 2, RW, SCIF_MAP_FIXED) !=
            (off_t)(off + WIN / 2)) {
        diag("register: %s", strerror(errno));
        return -1;
    }
    return 0;
}

FIXTURE_SETUP(side) {
    int snode = variant ? variant->snode : 0, cnode = variant ? variant->cnode : 0;

    if (snode > 0 || cnode > 0)
        REQUIRE_NODE(1);
    CHECK(connect_pair(snode, cnode, &self->srv, &self->cli) == 0);
    self->rbuf = map_anon(WIN);
    self->lbuf = map_anon(WIN);
    self->ubuf = map_anon(WIN + PAGE);
    CHECK(self->rbuf && self->lbuf && self->ubuf);
    CHECK(two_windows(self->srv, self->rbuf, ROFF) == 0);
    CHECK(two_windows(self->cli, self->lbuf, LOFF) == 0);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(side) {
    scif_close(self->cli);
    scif_close(self->srv);
}

static size_t rand_len(struct prng *p) {
    switch (prng_next(p) % 5) {
    case 0:
        return 1 + prng_next(p) % 64;
    case 1:
        return 1 + prng_next(p) % PAGE;
    case 2:
        return 1 + prng_next(p) % (3 * PAGE);
    case 3:
        return 1 + prng_next(p) % (256 * 1024);
    default:
        return 1 + prng_next(p) % (WIN - 1);
    }
}

/* One random operation; returns KSFT_PASS or KSFT_FAIL. */
static int one_op(struct side_fixture *s, struct prng *p, int op, int flags, size_t len,
                  uint64_t seed) {
    size_t roff = prng_next(p) % (WIN - len + 1);
    size_t loff = prng_next(p) % (WIN - len + 1);
    size_t uoff = prng_next(p) % (PAGE + 1);
    uint8_t *src, *dst;
    int r, mark;

    if (uoff + len > WIN + PAGE)
        uoff = 0;
    switch (op) {
    case OP_READFROM:
        src = s->rbuf + roff;
        dst = s->lbuf + loff;
        break;
    case OP_WRITETO:
        src = s->lbuf + loff;
        dst = s->rbuf + roff;
        break;
    case OP_VREADFROM:
        src = s->rbuf + roff;
        dst = s->ubuf + uoff;
        break;
    default:
        src = s->ubuf + uoff;
        dst = s->rbuf + roff;
        break;
    }
    fill(src, len, seed);
    memset(dst, 0x5a, len);
    switch (op) {
    case OP_READFROM:
        r = scif_readfrom(s->cli, LOFF + loff, len, ROFF + roff, flags);
        break;
    case OP_WRITETO:
        r = scif_writeto(s->cli, LOFF + loff, len, ROFF + roff, flags);
        break;
    case OP_VREADFROM:
        r = scif_vreadfrom(s->cli, dst, len, ROFF + roff, flags);
        break;
    default:
        r = scif_vwriteto(s->cli, src, len, ROFF + roff, flags);
        break;
    }
    if (r) {
        diag("%s len %zu flags %#x: %s", op_name[op], len, flags, strerror(errno));
        return KSFT_FAIL;
    }
    if (!(flags & SCIF_RMA_SYNC)) {
        if (scif_fence_mark(s->cli, SCIF_FENCE_INIT_SELF, &mark) || scif_fence_wait(s->cli, mark)) {
            diag("fence: %s", strerror(errno));
            return KSFT_FAIL;
        }
    }
    if (memcmp(src, dst, len)) {
        diag("%s len %zu roff %zu loff %zu uoff %zu flags %#x: byte %lld differs", op_name[op], len,
             roff, loff, uoff, flags, first_diff(src, dst, len));
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}

/* Random calls on the fixture's pair; 300 of them on loopback, 150 between nodes. */
static int random_ops(struct side_fixture *s, const struct side_variant *v, int cpu) {
    int snode = v->snode, cnode = v->cnode, iters = snode || cnode ? 150 : 300;
    struct prng p;
    int i;

    prng_init(&p, 0x5c1f + snode * 7 + cnode * 13 + cpu);
    for (i = 0; i < iters; i++) {
        int op = (int)(prng_next(&p) % OP_N);
        int flags = (int)(prng_next(&p) % 16) & ~SCIF_RMA_USECPU;

        if (cpu)
            flags |= SCIF_RMA_USECPU;
        if (one_op(s, &p, op, flags, rand_len(&p), prng_next(&p)))
            return KSFT_FAIL;
    }
    return KSFT_PASS;
}

TEST_F(side, random_cpu) {
    return random_ops(self, variant, 1);
}
TEST_F_VARIANT(side, random_cpu, loopback);
TEST_F_VARIANT(side, random_cpu, node10);

TEST_F(side, random_default) {
    return random_ops(self, variant, 0);
}
TEST_F_VARIANT(side, random_default, loopback);
TEST_F_VARIANT(side, random_default, node01);

/* Every call at every alignment class of a small range, sync, both movers. */
TEST_F(side, alignments) {
    static const size_t lens[] = {1, 7, 63, 64, 65, 127, 4095, 4096, 4097, 8191, 12289};
    static const size_t offs[] = {0, 1, 8, 63, 64, 65, 4095};
    struct prng p;
    size_t a, b, c;
    int op, cpu;

    prng_init(&p, 42);
    for (op = 0; op < OP_N; op++)
        for (a = 0; a < ARRAY_SIZE(lens); a++)
            for (b = 0; b < ARRAY_SIZE(offs); b++)
                for (cpu = 0; cpu < 2; cpu++) {
                    size_t len = lens[a], o = offs[b];
                    int flags = SCIF_RMA_SYNC | (cpu ? SCIF_RMA_USECPU : 0);
                    uint8_t *src, *dst;
                    int r;

                    c = (o * 3 + 5) % 4096;
                    fill(self->rbuf + o, len, a * 100 + b);
                    fill(self->lbuf + c, len, a * 100 + b + 1);
                    fill(self->ubuf + c, len, a * 100 + b + 2);
                    switch (op) {
                    case OP_READFROM:
                        src = self->rbuf + o;
                        dst = self->lbuf + c;
                        memset(dst, 0, len);
                        r = scif_readfrom(self->cli, LOFF + c, len, ROFF + o, flags);
                        break;
                    case OP_WRITETO:
                        src = self->lbuf + c;
                        dst = self->rbuf + o;
                        memset(dst, 0, len);
                        r = scif_writeto(self->cli, LOFF + c, len, ROFF + o, flags);
                        break;
                    case OP_VREADFROM:
                        src = self->rbuf + o;
                        dst = self->ubuf + c;
                        memset(dst, 0, len);
                        r = scif_vreadfrom(self->cli, dst, len, ROFF + o, flags);
                        break;
                    default:
                        src = self->ubuf + c;
                        dst = self->rbuf + o;
                        memset(dst, 0, len);
                        r = scif_vwriteto(self->cli, src, len, ROFF + o, flags);
                        break;
                    }
                    CHECK(r == 0);
                    if (memcmp(src, dst, len)) {
                        diag("%s len %zu off %zu/%zu cpu %d: byte %lld", op_name[op], len, o, c,
                             cpu, first_diff(src, dst, len));
                        return KSFT_FAIL;
                    }
                }
    return KSFT_PASS;
}
TEST_F_VARIANT(side, alignments, node01);

/* 64 MiB in one call, each of the four calls, sync and async. */
static int t_large(void) {
    const size_t big = 64UL << 20;
    uint8_t *r = map_anon(big), *l = map_anon(big), *u = map_anon(big);
    int srv, cli, mark, i;

    REQUIRE_NODE(1);
    CHECK(r && l && u);
    CHECK(connect_pair(0, 1, &srv, &cli) == 0);
    CHECK(scif_register(srv, r, big, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) == 0);
    CHECK(scif_register(cli, l, big, 0, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) == 0);
    for (i = 0; i < 8; i++) {
        int op = i % 4, flags = i < 4 ? SCIF_RMA_SYNC : 0;
        uint8_t *src = op == OP_READFROM || op == OP_VREADFROM ? r : (op == OP_WRITETO ? l : u);
        uint8_t *dst = op == OP_READFROM ? l : (op == OP_VREADFROM ? u : r);

        fill(src, big, 1000 + i);
        memset(dst, 0, big);
        switch (op) {
        case OP_READFROM:
            CHECK(scif_readfrom(cli, 0, big, 0, flags) == 0);
            break;
        case OP_WRITETO:
            CHECK(scif_writeto(cli, 0, big, 0, flags) == 0);
            break;
        case OP_VREADFROM:
            CHECK(scif_vreadfrom(cli, u, big, 0, flags) == 0);
            break;
        default:
            CHECK(scif_vwriteto(cli, u, big, 0, flags) == 0);
            break;
        }
        CHECK(scif_fence_mark(cli, SCIF_FENCE_INIT_SELF, &mark) == 0);
        CHECK(scif_fence_wait(cli, mark) == 0);
        if (memcmp(src, dst, big)) {
            diag("64 MiB %s flags %#x: byte %lld", op_name[op], flags, first_diff(src, dst, big));
            return KSFT_FAIL;
        }
    }
    return KSFT_PASS;
}

/* Many asynchronous transfers in flight, then one fence. */
TEST_F(side, async_many) {
    int i, mark;

    fill(self->rbuf, WIN, 77);
    memset(self->ubuf, 0, WIN);
    for (i = 0; i < 64; i++) {
        size_t chunk = WIN / 64;

        CHECK(scif_vreadfrom(self->cli, self->ubuf + i * chunk, chunk, ROFF + i * chunk,
                             i & 1 ? SCIF_RMA_USECPU : 0) == 0);
    }
    CHECK(scif_fence_mark(self->cli, SCIF_FENCE_INIT_SELF, &mark) == 0);
    CHECK(scif_fence_wait(self->cli, mark) == 0);
    CHECK(memcmp(self->ubuf, self->rbuf, WIN) == 0);
    return KSFT_PASS;
}
TEST_F_VARIANT(side, async_many, node01);

struct thr {
    struct side_fixture *s;
    int idx;
    int ret;
};

/* Each thread owns a quarter of every buffer. */
static void *thr_fn(void *arg) {
    struct thr *t = (struct thr *)arg;
    struct side_fixture *s = t->s;
    size_t q = WIN / 4, base = t->idx * q;
    struct prng p;
    int i, mark;

    prng_init(&p, 900 + t->idx);
    t->ret = KSFT_PASS;
    for (i = 0; i < 60; i++) {
        size_t len = 1 + prng_next(&p) % (q - 1);
        size_t off = base + prng_next(&p) % (q - len + 1);
        int op = (int)(prng_next(&p) % OP_N);
        int flags = (int)(prng_next(&p) % 16);
        uint8_t *src, *dst;
        int r;

        src = op == OP_READFROM || op == OP_VREADFROM
                  ? s->rbuf + off
                  : (op == OP_WRITETO ? s->lbuf + off : s->ubuf + off);
        dst = op == OP_READFROM ? s->lbuf + off
                                : (op == OP_VREADFROM ? s->ubuf + off : s->rbuf + off);
        fill(src, len, prng_next(&p));
        memset(dst, 0, len);
        switch (op) {
        case OP_READFROM:
            r = scif_readfrom(s->cli, LOFF + off, len, ROFF + off, flags);
            break;
        case OP_WRITETO:
            r = scif_writeto(s->cli, LOFF + off, len, ROFF + off, flags);
            break;
        case OP_VREADFROM:
            r = scif_vreadfrom(s->cli, dst, len, ROFF + off, flags);
            break;
        default:
            r = scif_vwriteto(s->cli, src, len, ROFF + off, flags);
            break;
        }
        /* The fence covers every thread's transfers: enough for ours. */
        if (r || scif_fence_mark(s->cli, SCIF_FENCE_INIT_SELF, &mark) ||
            scif_fence_wait(s->cli, mark) || memcmp(src, dst, len)) {
            diag("thread %d %s len %zu flags %#x failed (%s)", t->idx, op_name[op], len, flags,
                 r ? strerror(errno) : "data");
            t->ret = KSFT_FAIL;
            return NULL;
        }
    }
    return NULL;
}

TEST_F(side, threads) {
    struct thr t[4];
    pthread_t th[4];
    int i, ret = KSFT_PASS;

    for (i = 0; i < 4; i++) {
        t[i].s = self;
        t[i].idx = i;
        CHECK(pthread_create(&th[i], NULL, thr_fn, &t[i]) == 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        if (t[i].ret)
            ret = KSFT_FAIL;
    }
    return ret;
}
TEST_F_VARIANT(side, threads, node01);

/* The DMA pass really moves data with the DMA engine. */
TEST_F(side, dma_used) {
    long long before;

    if (!swdma_loaded() && !getenv("SCIF_TEST_DMA"))
        return test_skip("no DMA engine (run with scif_swdma loaded)");
    fill(self->rbuf, WIN, 5);
    before = dbg_dma_value("dma_bytes");
    CHECK(before >= 0);
    CHECK(scif_vreadfrom(self->cli, self->ubuf, WIN, ROFF, SCIF_RMA_SYNC) == 0);
    CHECK(memcmp(self->ubuf, self->rbuf, WIN) == 0);
    if (dbg_dma_value("dma_bytes") < before + (long long)WIN - 128) {
        diag("dma_bytes %lld -> %lld", before, dbg_dma_value("dma_bytes"));
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}
TEST_F_VARIANT(side, dma_used, node01);

/* USECPU never touches the DMA engine. */
TEST_F(side, usecpu_is_cpu) {
    long long before;

    before = dbg_dma_value("dma_bytes");
    if (before < 0)
        return test_skip("debugfs rma_dma not available");
    CHECK(scif_vreadfrom(self->cli, self->ubuf, WIN, ROFF, SCIF_RMA_SYNC | SCIF_RMA_USECPU) == 0);
    CHECK(dbg_dma_value("dma_bytes") == before);
    return KSFT_PASS;
}
TEST_F_VARIANT(side, usecpu_is_cpu, node01);

/*
 * What the CPU moves is complete when the call returns, without a fence
 * or SCIF_RMA_SYNC (Intel's drivers copy in the calling thread, and
 * programs rely on it): loopback with any flags, SCIF_RMA_USECPU between
 * nodes, and everything between nodes when no DMA engine is loaded.
 */
static int cpu_done_on_return(struct side_fixture *self, int flags) {
    const size_t len = 1UL << 20;
    int round;

    for (round = 0; round < 20; round++) {
        int op = round % OP_N, r;
        uint8_t *src = op == OP_READFROM || op == OP_VREADFROM
                           ? self->rbuf
                           : (op == OP_WRITETO ? self->lbuf : self->ubuf);
        uint8_t *dst =
            op == OP_READFROM ? self->lbuf : (op == OP_VREADFROM ? self->ubuf : self->rbuf);

        fill(src, len, 2000 + round);
        memset(dst, 0, len);
        switch (op) {
        case OP_READFROM:
            r = scif_readfrom(self->cli, LOFF, len, ROFF, flags);
            break;
        case OP_WRITETO:
            r = scif_writeto(self->cli, LOFF, len, ROFF, flags);
            break;
        case OP_VREADFROM:
            r = scif_vreadfrom(self->cli, dst, len, ROFF, flags);
            break;
        default:
            r = scif_vwriteto(self->cli, src, len, ROFF, flags);
            break;
        }
        CHECK(r == 0);
        if (memcmp(src, dst, len)) {
            diag("round %d: %s of 1 MiB (flags %#x) returned before the data was there "
                 "(byte %lld)",
                 round, op_name[op], flags, first_diff(src, dst, len));
            return KSFT_FAIL;
        }
    }
    return KSFT_PASS;
}

TEST_F(side, done_default) {
    return cpu_done_on_return(self, 0);
}
TEST_F_VARIANT(side, done_default, loopback);

TEST_F(side, done_cpu) {
    return cpu_done_on_return(self, SCIF_RMA_USECPU);
}
TEST_F_VARIANT(side, done_cpu, loopback);
TEST_F_VARIANT(side, done_cpu, node01);

TEST_F(side, done_nodma) {
    if (swdma_loaded() || getenv("SCIF_TEST_DMA"))
        return test_skip("a DMA engine is loaded: node-to-node transfers are asynchronous");
    return cpu_done_on_return(self, 0);
}
TEST_F_VARIANT(side, done_nodma, node01);

/* USECACHE: a cached range sees the process's new pages after a remap. */
TEST_F(side, usecache_fresh) {
    int i;

    for (i = 0; i < 6; i++) {
        uint8_t *u = map_anon(16 * PAGE);

        CHECK(u);
        fill(self->rbuf, 16 * PAGE, 300 + i);
        CHECK(scif_vreadfrom(self->cli, u, 16 * PAGE, ROFF, SCIF_RMA_SYNC | SCIF_RMA_USECACHE) ==
              0);
        CHECK(memcmp(u, self->rbuf, 16 * PAGE) == 0);
        /* Replace the pages behind u: the cache must not use the old ones. */
        CHECK(madvise(u, 16 * PAGE, MADV_DONTNEED) == 0);
        fill(self->rbuf, 16 * PAGE, 400 + i);
        CHECK(scif_vreadfrom(self->cli, u, 16 * PAGE, ROFF, SCIF_RMA_SYNC | SCIF_RMA_USECACHE) ==
              0);
        CHECK(memcmp(u, self->rbuf, 16 * PAGE) == 0);
        /* Write path: a fresh mapping at the same address. */
        CHECK(munmap(u, 16 * PAGE) == 0);
        CHECK(mmap(u, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0) == u);
        fill(u, 16 * PAGE, 500 + i);
        CHECK(scif_vwriteto(self->cli, u, 16 * PAGE, ROFF, SCIF_RMA_SYNC | SCIF_RMA_USECACHE) == 0);
        CHECK(memcmp(u, self->rbuf, 16 * PAGE) == 0);
        CHECK(munmap(u, 16 * PAGE) == 0);
    }
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"all four calls, random sizes/offsets, loopback, CPU", FIXTURE_FN(side, random_cpu, loopback),
     0},
    {"all four calls, random sizes/offsets, loopback, default flags",
     FIXTURE_FN(side, random_default, loopback), 0},
    {"all four calls, node 0 client -> node 1 windows, CPU", FIXTURE_FN(side, random_cpu, node10),
     0},
    {"all four calls, node 1 client -> node 0 windows, DMA when present",
     FIXTURE_FN(side, random_default, node01), 0},
    {"alignment classes 1..12289 bytes, every call, CPU and DMA",
     FIXTURE_FN(side, alignments, node01), 0},
    {"64 MiB transfers, every call, sync and async", t_large, 300},
    {"64 asynchronous transfers then one fence", FIXTURE_FN(side, async_many, node01), 0},
    {"4 threads on one endpoint, random calls and flags", FIXTURE_FN(side, threads, node01), 0},
    {"DMA engine moves the data when loaded", FIXTURE_FN(side, dma_used, node01), 0},
    {"loopback RMA is complete when the call returns (no SYNC, no fence)",
     FIXTURE_FN(side, done_default, loopback), 0},
    {"loopback USECPU RMA is complete when the call returns", FIXTURE_FN(side, done_cpu, loopback),
     0},
    {"node 0 <-> 1 USECPU RMA is complete when the call returns",
     FIXTURE_FN(side, done_cpu, node01), 0},
    {"node 0 <-> 1 RMA without a DMA engine is complete when the call returns",
     FIXTURE_FN(side, done_nodma, node01), 0},
    {"SCIF_RMA_USECPU bypasses the DMA engine", FIXTURE_FN(side, usecpu_is_cpu, node01), 0},
    {"SCIF_RMA_USECACHE never serves stale pages", side_usecache_fresh, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
