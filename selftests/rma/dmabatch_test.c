// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DMA batches of physically contiguous runs (issue 11, DMA part).  The DMA
 * path merges pages that are physically contiguous on both sides into one
 * descriptor per overlap of a source run and a destination run.  Every
 * behaviour needs the software DMA engine (the [dma] pass of run-suite)
 * and node 1 (only transfers between nodes use DMA); the counters are the
 * engine's own (module parameter descs of scif_swdma) and scif's debugfs
 * rma_dma (descs, copies, fallbacks, resets, batches).
 *
 *  - huge page backed buffers: a transfer needs far fewer descriptors than
 *    it has pages;
 *  - data stays intact across run boundaries: huge pages against
 *    fragmented pages, unaligned offsets, lengths over several 256
 *    descriptor batches, and the bytes around the range untouched;
 *  - a submission failing mid-batch (including the last descriptor of a
 *    batch of long runs) falls back to the CPU with the data right and no
 *    batch left;
 *  - a channel that never completes a batch of long runs: timeout, reset,
 *    data by the CPU.
 */
#include "scif_test.h"

#define HUGE (2UL << 20)
#define WIN (16UL << 20)
#define ROFF 0x20000000L
/* len bytes, 2 MiB aligned, with huge pages when the kernel gives them. */
static uint8_t *huge_buf(size_t len) {
    uint8_t *p = map_anon_aligned(len, HUGE);

    if (!p)
        return NULL;
    (void)madvise(p, len, MADV_HUGEPAGE);
    memset(p, 0, len);
    return p;
}

/* kB of AnonHugePages of the mapping holding @addr (/proc/self/smaps), or -1. */
static long huge_kb(const void *addr) {
    char line[256];
    unsigned long lo, hi, a = (unsigned long)addr;
    int in = 0;
    long kb = -1, v;
    FILE *f = fopen("/proc/self/smaps", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1) {
            kb = v;
            break;
        }
    }
    fclose(f);
    return kb;
}

/*
 * The fixture: the RMA pair (server on node 1 with a WIN byte window at
 * ROFF, client on node 0), its buffers huge page backed or fragmented as
 * the variant says; the variant's seed is that of the data cases.
 */
FIXTURE(batch) {
    struct rma_pair p;
};

FIXTURE_VARIANT(batch) {
    int rhuge, uhuge;
    uint64_t seed;
};

FIXTURE_VARIANT_ADD(batch, huge_frag){.rhuge = 1, .uhuge = 0, .seed = 200};
FIXTURE_VARIANT_ADD(batch, frag_huge){.rhuge = 0, .uhuge = 1, .seed = 300};
FIXTURE_VARIANT_ADD(batch, huge_huge){.rhuge = 1, .uhuge = 1, .seed = 400};
FIXTURE_VARIANT_ADD(batch, frag_frag){.rhuge = 0, .uhuge = 0, .seed = 500};

FIXTURE_SETUP(batch) {
    uint8_t *r, *u;

    NEED_DMA();
    r = variant->rhuge ? huge_buf(WIN) : map_anon_fragmented(WIN);
    u = variant->uhuge ? huge_buf(WIN) : map_anon_fragmented(WIN);
    CHECK(r && u);
    CHECK(rma_pair_open(&self->p, r, u, WIN, ROFF) == 0);
    return KSFT_PASS;
}

FIXTURE_TEARDOWN(batch) {
    rma_pair_close(&self->p);
}

/* Both buffers of @p backed by huge pages, else a skip reason. */
static int need_huge(struct rma_pair *p) {
    long a = huge_kb(p->rbuf), b = huge_kb(p->ubuf);

    if (a < (long)(WIN / 2048) || b < (long)(WIN / 2048))
        return test_skip("no transparent huge pages (AnonHugePages %ld and %ld kB)", a, b);
    return KSFT_PASS;
}

/*
 * A transfer between huge page backed buffers needs far fewer descriptors
 * than it has pages (one per page before runs were merged): at most one
 * per 64 pages.
 */
TEST_F(batch, contig_descs) {
    const size_t len = 8UL << 20;
    struct rma_pair *p = &self->p;
    long long d0, d1, c0, c1;
    int r;

    r = need_huge(p);
    if (r != KSFT_PASS)
        return r;
    CHECK(dma_ready(p) == 0);
    fill(p->rbuf, len, 101);
    d0 = swdma_descs();
    c0 = dbg_dma_value("descs");
    CHECK(scif_vreadfrom(p->cli, p->ubuf, len, ROFF, SCIF_RMA_SYNC) == 0);
    d1 = swdma_descs();
    c1 = dbg_dma_value("descs");
    CHECK(memcmp(p->ubuf, p->rbuf, len) == 0);
    diag("%zu pages moved with %lld descriptors (scif counted %lld)", len / PAGE, d1 - d0, c1 - c0);
    if (d1 - d0 > (long long)(len / PAGE / 64)) {
        diag("more than one descriptor per 64 pages of physically contiguous memory");
        return KSFT_FAIL;
    }
    CHECK(d1 > d0);
    CHECK(c1 - c0 == d1 - d0);
    rma_pair_close(p);
    return rma_counters_zero();
}
TEST_F_VARIANT(batch, contig_descs, huge_huge);

/*
 * vreadfrom/vwriteto of [roff, roff + len) of the window against ubuf +
 * uoff, with the bytes around the range guarded; KSFT_PASS when exact.
 */
static int copy_check(struct rma_pair *p, size_t roff, size_t uoff, size_t len, int write,
                      uint64_t seed) {
    const size_t g = 4 * PAGE; /* guard on each side */
    uint8_t *src = write ? p->ubuf + uoff : p->rbuf + roff;
    uint8_t *dst = write ? p->rbuf + roff : p->ubuf + uoff;
    uint8_t *dbase = write ? p->rbuf : p->ubuf;
    size_t doff = write ? roff : uoff;
    size_t lo = doff > g ? doff - g : 0, hi = doff + len + g < WIN ? doff + len + g : WIN;
    long long d;
    int r;

    fill(src, len, seed);
    memset(dbase + lo, 0xa5, hi - lo);
    if (write)
        r = scif_vwriteto(p->cli, p->ubuf + uoff, len, ROFF + (off_t)roff, SCIF_RMA_SYNC);
    else
        r = scif_vreadfrom(p->cli, p->ubuf + uoff, len, ROFF + (off_t)roff, SCIF_RMA_SYNC);
    if (r) {
        diag("%s roff %zu uoff %zu len %zu: %s", write ? "vwriteto" : "vreadfrom", roff, uoff, len,
             strerror(errno));
        return KSFT_FAIL;
    }
    d = first_diff(dst, src, len);
    if (d >= 0) {
        diag("%s roff %zu uoff %zu len %zu: byte %lld differs", write ? "vwriteto" : "vreadfrom",
             roff, uoff, len, d);
        return KSFT_FAIL;
    }
    for (size_t i = lo; i < hi; i++) {
        if (i >= doff && i < doff + len)
            continue;
        if (dbase[i] != 0xa5) {
            diag("%s roff %zu uoff %zu len %zu: byte %zd outside the range written",
                 write ? "vwriteto" : "vreadfrom", roff, uoff, len, (ssize_t)(i - doff));
            return KSFT_FAIL;
        }
    }
    return KSFT_PASS;
}

/* Offsets and lengths: unaligned, across runs and across 256 descriptor batches. */
static const struct {
    size_t roff, uoff, len;
} cases[] = {
    {0, 0, 300 * PAGE},
    {1, 0, 300 * PAGE + 123},
    {PAGE - 1, 7, 600 * PAGE + 4095},
    {HUGE - 3 * PAGE - 5, 2 * PAGE + 65, 2 * HUGE + 777},
    {64, HUGE + 1, 4 * HUGE - 2 * PAGE},
    {3 * PAGE + 1000, 0, 257 * PAGE},
};

/* Data across run boundaries between the fixture's buffers (both WIN bytes). */
TEST_F(batch, cases) {
    struct rma_pair *p = &self->p;
    uint64_t seed = variant->seed;
    long long d0;
    size_t i;
    int w;

    CHECK(dma_ready(p) == 0);
    d0 = swdma_descs();
    for (i = 0; i < ARRAY_SIZE(cases); i++)
        for (w = 0; w < 2; w++)
            if (copy_check(p, cases[i].roff, cases[i].uoff, cases[i].len, w, seed + i * 2 + w) !=
                KSFT_PASS)
                return KSFT_FAIL;
    diag("%lld descriptors", swdma_descs() - d0);
    CHECK(swdma_descs() > d0); /* it was DMA */
    CHECK(dbg_dma_value("batches") == 0);
    rma_pair_close(p);
    return rma_counters_zero();
}

TEST_F_VARIANT(batch, cases, huge_frag);
TEST_F_VARIANT(batch, cases, frag_huge);
TEST_F_VARIANT(batch, cases, huge_huge);
TEST_F_VARIANT(batch, cases, frag_frag);

/*
 * The @n-th submission of a vreadfrom of @len bytes fails: the call
 * succeeds with the data right, one fallback counted, no batch left, and
 * no descriptor of the failed batch lands later.
 */
static int submit_fails(struct rma_pair *p, size_t len, int n) {
    long long fb, d0;
    uint8_t *copy = malloc(len);

    CHECK(copy);
    CHECK(dma_ready(p) == 0);
    fill(p->rbuf, len, 600 + n);
    memset(p->ubuf, 0, len);
    fb = dbg_dma_value("fallbacks");
    d0 = swdma_descs();
    CHECK(write_long(SWDMA_PARAM "fail_submit", n) == 0);
    CHECK(scif_vreadfrom(p->cli, p->ubuf, len, ROFF, SCIF_RMA_SYNC) == 0);
    if (read_long(SWDMA_PARAM "fail_submit") != 0) {
        diag("the transfer submitted fewer than %d descriptors", n);
        return KSFT_FAIL;
    }
    CHECK(memcmp(p->ubuf, p->rbuf, len) == 0);
    CHECK(dbg_dma_value("fallbacks") == fb + 1);
    CHECK(swdma_descs() >= d0 + n - 1); /* those before the failed one ran */
    memcpy(copy, p->ubuf, len);
    fill(p->rbuf, len, 700 + n);
    /* Another DMA transfer issues the channel again: nothing old may land. */
    CHECK(scif_vreadfrom(p->cli, p->ubuf + len, 16 * PAGE, ROFF + (off_t)len, SCIF_RMA_SYNC) == 0);
    if (memcmp(copy, p->ubuf, len)) {
        diag("a descriptor of the failed batch ran later, into byte %lld",
             first_diff(copy, p->ubuf, len));
        return KSFT_FAIL;
    }
    CHECK(dbg_dma_value("batches") == 0);
    free(copy);
    rma_pair_close(p);
    return rma_counters_zero();
}

TEST_F(batch, submit_fails_mid) {
    return submit_fails(&self->p, 2 * HUGE, 5);
}
TEST_F_VARIANT(batch, submit_fails_mid, frag_frag);

TEST_F(batch, submit_fails_first) {
    return submit_fails(&self->p, 2 * HUGE, 1);
}
TEST_F_VARIANT(batch, submit_fails_first, frag_frag);

/*
 * Huge pages: a 4 MiB copy takes a few descriptors (counted by a first
 * copy); the last of them, the batch's armed one, fails.
 */
TEST_F(batch, submit_fails_last) {
    struct rma_pair *p = &self->p;
    long long d0, n;
    int r;

    r = need_huge(p);
    if (r != KSFT_PASS)
        return r;
    CHECK(dma_ready(p) == 0);
    d0 = swdma_descs();
    CHECK(scif_vreadfrom(p->cli, p->ubuf, 2 * HUGE, ROFF, SCIF_RMA_SYNC) == 0);
    n = swdma_descs() - d0;
    rma_pair_close(p);
    if (n < 2)
        return test_skip("the huge pages are physically contiguous: %lld descriptor(s)", n);
    CHECK(rma_pair_open(p, p->rbuf, p->ubuf, WIN, ROFF) == 0);
    return submit_fails(p, 2 * HUGE, (int)n);
}
TEST_F_VARIANT(batch, submit_fails_last, huge_huge);

/*
 * A channel that never completes a batch of long runs: the call times out
 * (dma_timeout_ms), the channel is reset, the CPU moves the data.
 */
TEST_F(batch, stall_contig) {
    const size_t len = 4UL << 20;
    struct rma_pair *p = &self->p;
    long long resets, fb;
    int ret;

    CHECK(dma_ready(p) == 0);
    fill(p->rbuf, len, 800);
    memset(p->ubuf, 0, len);
    resets = dbg_dma_value("resets");
    fb = dbg_dma_value("fallbacks");
    CHECK(write_long(SCIF_PARAM "dma_timeout_ms", 1000) == 0);
    CHECK(write_long(SWDMA_PARAM "stall", 1) == 0);
    ret = scif_vreadfrom(p->cli, p->ubuf, len, ROFF, SCIF_RMA_SYNC);
    CHECK(faults_off() == 0);
    CHECK(write_long(SCIF_PARAM "dma_timeout_ms", 5000) == 0);
    CHECK(ret == 0);
    CHECK(memcmp(p->ubuf, p->rbuf, len) == 0);
    CHECK(dbg_dma_value("resets") > resets);
    CHECK(dbg_dma_value("fallbacks") > fb);
    CHECK(dbg_dma_value("batches") == 0);
    CHECK(dma_ready(p) == 0);
    rma_pair_close(p);
    return rma_counters_zero();
}
TEST_F_VARIANT(batch, stall_contig, huge_huge);

static const struct scif_test tests[] = {
    {"huge pages: far fewer descriptors than pages", FIXTURE_FN(batch, contig_descs, huge_huge), 0},
    {"data across runs: huge pages to fragmented pages", FIXTURE_FN(batch, cases, huge_frag), 0},
    {"data across runs: fragmented pages to huge pages", FIXTURE_FN(batch, cases, frag_huge), 0},
    {"data across runs: huge pages both sides, unaligned", FIXTURE_FN(batch, cases, huge_huge), 0},
    {"data across runs: fragmented pages both sides, batch bounds",
     FIXTURE_FN(batch, cases, frag_frag), 0},
    {"submit fails mid-batch of page runs: CPU fallback, nothing lands later",
     FIXTURE_FN(batch, submit_fails_mid, frag_frag), 0},
    {"first submit fails: CPU fallback", FIXTURE_FN(batch, submit_fails_first, frag_frag), 0},
    {"last submit of a batch of long runs fails: CPU fallback",
     FIXTURE_FN(batch, submit_fails_last, huge_huge), 0},
    {"stalled channel with long runs: timeout, reset, data by CPU",
     FIXTURE_FN(batch, stall_contig, huge_huge), 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
