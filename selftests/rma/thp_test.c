// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RMA on transparent-huge-page backed memory: windows and user buffers
 * made of 2 MiB huge pages, which the CPU mover copies as whole
 * physically contiguous runs.  Every byte is checked, for all four calls,
 * at offsets and lengths that start, end and cross huge page and small
 * page boundaries, between two huge-page windows, a huge-page and a
 * small-page window, and node 0 <-> node 1.  Also: two huge pages are 2 MiB
 * aligned, so equal offsets into them alias in a small direct-mapped TLB
 * (docs/rma.md), and the CPU mover then copies through its bounce buffer
 * (debugfs rma_dma cpu_bounced), which must move the same bytes.
 */
#include "scif_test.h"

#define HUGE (2UL << 20)
#define LEN (8UL << 20) /* each buffer: four huge pages */
#define ROFF 0x10000000L
#define LOFF 0x20000000L

/* LEN bytes on 2 MiB boundaries, THP asked for (or not); NULL on failure. */
static uint8_t *map_thp(int huge) {
    uint8_t *p = map_anon(LEN + HUGE);

    if (!p)
        return NULL;
    p = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
    /* EINVAL: a kernel without THP (PREEMPT_RT 6.1); setup() then skips. */
    if (madvise(p, LEN, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) && errno != EINVAL)
        return NULL;
    memset(p, 0x5a, LEN);
    return p;
}

/* kB of AnonHugePages in the mapping containing p, or -1. */
static long thp_kb(const void *p) {
    char line[256];
    unsigned long a, b;
    long kb = -1;
    int in = 0;
    FILE *f = fopen("/proc/self/smaps", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
            continue;
        }
        if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

struct pair {
    int srv, cli;
    uint8_t *rbuf, *lbuf, *ubuf;
};

/* Windows on rbuf (peer) and lbuf (local); skip reason in *why. */
static int setup(struct pair *s, int snode, int cnode, int lhuge, const char **why) {
    *why = NULL;
    if (connect_pair(snode, cnode, &s->srv, &s->cli))
        return -1;
    s->rbuf = map_thp(1);
    s->lbuf = map_thp(lhuge);
    s->ubuf = map_thp(1);
    if (!s->rbuf || !s->lbuf || !s->ubuf)
        return -1;
    if (thp_kb(s->rbuf) < (long)(HUGE >> 10) || thp_kb(s->ubuf) < (long)(HUGE >> 10) ||
        (lhuge && thp_kb(s->lbuf) < (long)(HUGE >> 10))) {
        *why = "no transparent huge pages here (not in this kernel, disabled, or none free)";
        return 0;
    }
    if (scif_register(s->srv, s->rbuf, LEN, ROFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != ROFF ||
        scif_register(s->cli, s->lbuf, LEN, LOFF, SCIF_PROT_READ | SCIF_PROT_WRITE,
                      SCIF_MAP_FIXED) != LOFF) {
        diag("register: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* One transfer of len bytes at roff/loff with every byte checked. */
static int one(struct pair *s, int op, size_t roff, size_t loff, size_t len, int flags,
               uint64_t seed) {
    uint8_t *src, *dst;
    int rc;

    switch (op) {
    case 0: /* readfrom: peer window -> local window */
        src = s->rbuf + roff, dst = s->lbuf + loff;
        break;
    case 1: /* writeto: local window -> peer window */
        src = s->lbuf + loff, dst = s->rbuf + roff;
        break;
    case 2: /* vreadfrom: peer window -> user buffer */
        src = s->rbuf + roff, dst = s->ubuf + loff;
        break;
    default: /* vwriteto: user buffer -> peer window */
        src = s->ubuf + loff, dst = s->rbuf + roff;
        break;
    }
    fill(src, len, seed);
    memset(dst, 0xa5, len);
    switch (op) {
    case 0:
        rc = scif_readfrom(s->cli, LOFF + loff, len, ROFF + roff, flags);
        break;
    case 1:
        rc = scif_writeto(s->cli, LOFF + loff, len, ROFF + roff, flags);
        break;
    case 2:
        rc = scif_vreadfrom(s->cli, s->ubuf + loff, len, ROFF + roff, flags);
        break;
    default:
        rc = scif_vwriteto(s->cli, s->ubuf + loff, len, ROFF + roff, flags);
        break;
    }
    if (rc) {
        diag("op %d roff %zu loff %zu len %zu: %s", op, roff, loff, len, strerror(errno));
        return -1;
    }
    if (first_diff(src, dst, len) >= 0) {
        diag("op %d roff %zu loff %zu len %zu: byte %lld differs", op, roff, loff, len,
             first_diff(src, dst, len));
        return -1;
    }
    return 0;
}

/* Offsets and lengths around page and huge page boundaries. */
static int sweep(int snode, int cnode, int lhuge, int flags) {
    static const size_t offs[] = {0, 1, 63, PAGE - 1, PAGE, HUGE - PAGE - 7, HUGE - 1, HUGE + 64};
    static const size_t lens[] = {1, 255, 256, PAGE + 1, HUGE, HUGE + 3 * PAGE + 5, 3 * HUGE + 1};
    const char *why;
    struct pair s;
    unsigned i, j, op;
    uint64_t seed = 1;

    CHECK(setup(&s, snode, cnode, lhuge, &why) == 0);
    if (why)
        return test_skip("%s", why);
    for (op = 0; op < 4; op++)
        for (i = 0; i < ARRAY_SIZE(offs); i++)
            for (j = 0; j < ARRAY_SIZE(lens); j++) {
                size_t ro = offs[i], lo = offs[(i + j + op) % ARRAY_SIZE(offs)];

                if (ro + lens[j] > LEN || lo + lens[j] > LEN)
                    continue;
                CHECK(one(&s, op, ro, lo, lens[j], flags, seed++) == 0);
            }
    return KSFT_PASS;
}

static int t_loop_huge(void) {
    return sweep(0, 0, 1, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
}
static int t_loop_mixed(void) {
    return sweep(0, 0, 0, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
}
static int t_node_cpu(void) {
    REQUIRE_NODE(1);
    return sweep(1, 0, 1, SCIF_RMA_SYNC | SCIF_RMA_USECPU);
}
static int t_node_default(void) {
    REQUIRE_NODE(1);
    return sweep(0, 1, 1, SCIF_RMA_SYNC);
}

/*
 * Equal offsets into two huge pages alias: the copy goes through the
 * bounce buffer (cpu_bounced grows by the run) and is byte exact, also
 * at odd offsets and lengths.
 */
static int t_bounce(void) {
    static const size_t lens[] = {256, 257, PAGE, 5 * PAGE + 77, HUGE - 100 - PAGE};
    const char *why;
    struct pair s;
    long long b0, b1;
    unsigned i;

    CHECK(setup(&s, 0, 0, 1, &why) == 0);
    if (why)
        return test_skip("%s", why);
    b0 = dbg_dma_value("cpu_bounced");
    if (b0 < 0 && access(DBG_DIR "/rma_dma", R_OK))
        return test_skip("debugfs rma_dma not available");
    CHECK(b0 >= 0);
    /*
     * Each length twice, one page apart: the kernel's bounce buffer (on
     * its stack) may itself alias one of the two starts, never both.
     */
    for (i = 0; i < 2 * ARRAY_SIZE(lens); i++) {
        size_t off = HUGE + (i & 1) * PAGE + 3 * (i / 2);

        CHECK(one(&s, 0, off, off, lens[i / 2], SCIF_RMA_SYNC | SCIF_RMA_USECPU, 900 + i) == 0);
    }
    b1 = dbg_dma_value("cpu_bounced");
    diag("cpu_bounced grew by %lld", b1 - b0);
    CHECK(b1 - b0 >= (long long)(HUGE - 100 - PAGE));
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"THP windows, all four calls, page and huge page boundaries, loopback CPU", t_loop_huge, 0},
    {"THP peer window and user buffer, small-page local window, loopback CPU", t_loop_mixed, 0},
    {"THP windows, node 1 client -> node 0 windows, CPU", t_node_cpu, 0},
    {"THP windows, node 0 client -> node 1 windows, DMA when present", t_node_default, 0},
    {"aliased huge pages are copied through the bounce buffer, byte exact", t_bounce, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
