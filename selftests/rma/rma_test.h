/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers of the RMA selftests (selftests/rma/).  Builds on the behaviour
 * runner and connection helpers of selftests/core/scif_test.h (each
 * behaviour runs in its own child process with a hang guard).
 */
#ifndef OPENSCIF_SELFTESTS_RMA_TEST_H
#define OPENSCIF_SELFTESTS_RMA_TEST_H

#include <sys/mman.h>
#include <sys/resource.h>
#include <scif_ioctl.h>

#include "../core/scif_test.h"

#define PAGE 4096UL
#define DBG_DIR "/sys/kernel/debug/scif"

/* Fail the behaviour unless cond holds (errno is shown). */
#define REQ(cond)                                                                                  \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            diag("%s:%d: check failed: %s (errno %d %s)", __FILE__, __LINE__, #cond, errno,        \
                 strerror(errno));                                                                 \
            return KSFT_FAIL;                                                                      \
        }                                                                                          \
    } while (0)

/* Anonymous, page aligned memory; NULL on failure. */
static inline void *map_anon(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

/* Deterministic fill: byte i of a buffer seeded s. */
static inline void fill(void *buf, size_t len, uint64_t seed) {
    struct prng p;
    uint8_t *b = (uint8_t *)buf;
    size_t i = 0;

    prng_init(&p, seed);
    for (; i + 8 <= len; i += 8) {
        uint64_t v = prng_next(&p);

        memcpy(b + i, &v, 8);
    }
    for (; i < len; i++)
        b[i] = (uint8_t)prng_next(&p);
}

/* First differing byte of two buffers, or -1. */
static inline long long first_diff(const void *a, const void *b, size_t len) {
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    size_t i;

    if (!memcmp(a, b, len))
        return -1;
    for (i = 0; i < len; i++)
        if (x[i] != y[i])
            return (long long)i;
    return -1;
}

/* The integer in a (sysfs, debugfs) file, or -1. */
static inline long long read_long(const char *path) {
    long long v = -1;
    FILE *f = fopen(path, "r");

    if (!f)
        return -1;
    if (fscanf(f, "%lld", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

/* Write an integer to a (sysfs, debugfs) file: 0 or -1. */
static inline int write_long(const char *path, long long v) {
    FILE *f = fopen(path, "w");
    int r;

    if (!f)
        return -1;
    r = fprintf(f, "%lld\n", v) > 0 ? 0 : -1;
    if (fclose(f))
        r = -1;
    return r;
}

/* A debugfs counter of the module (pinned_pages, rma_inflight, windows). */
static inline long long dbg_counter(const char *name) {
    char path[128];

    snprintf(path, sizeof(path), DBG_DIR "/%s", name);
    return read_long(path);
}

/* Wait up to ~20 s for a counter to reach @want; returns its last value. */
static inline long long dbg_wait(const char *name, long long want) {
    long long v = dbg_counter(name);
    int i;

    for (i = 0; i < 2000 && v != want && v >= 0; i++) {
        sleep_ms(10);
        v = dbg_counter(name);
    }
    return v;
}

/* Write an integer to a debugfs control of the module (node_lost, ...). */
static inline int dbg_write(const char *name, int v) {
    char path[128];

    snprintf(path, sizeof(path), DBG_DIR "/%s", name);
    return write_long(path, v);
}

/*
 * KSFT_PASS once every RMA counter (rma_inflight, windows, pinned_pages,
 * mappings) is back to zero (each waited for as dbg_wait() does), else
 * KSFT_FAIL with the values.
 */
static inline int rma_counters_zero(void) {
    long long a = dbg_wait("rma_inflight", 0);
    long long b = dbg_wait("windows", 0);
    long long c = dbg_wait("pinned_pages", 0);
    long long d = dbg_wait("mappings", 0);

    if (a || b || c || d) {
        diag("counters: rma_inflight %lld windows %lld pinned_pages %lld mappings %lld", a, b, c,
             d);
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}

/* "key value" line of the rma_dma debugfs file, or -1. */
static inline long long dbg_dma_value(const char *key);

/* Endpoints the module has (first line of debugfs endpoints), or -1. */
static inline long long dbg_endpoints(void) {
    long long n = -1;
    FILE *f = fopen(DBG_DIR "/endpoints", "r");

    if (!f)
        return -1;
    if (fscanf(f, "endpoints: %lld", &n) != 1)
        n = -1;
    fclose(f);
    return n;
}

/*
 * KSFT_PASS once the module holds nothing: no endpoint (waited for up to
 * ~20 s), the RMA counters of rma_counters_zero() and no queued DMA batch;
 * else KSFT_FAIL with the values.  For the end of a program that closed
 * everything it opened (nothing else may run meanwhile).
 */
static inline int all_counters_zero(void) {
    long long ep = dbg_endpoints(), b;
    int i;

    for (i = 0; i < 2000 && ep > 0; i++) {
        sleep_ms(10);
        ep = dbg_endpoints();
    }
    if (ep != 0) {
        diag("endpoints left: %lld", ep);
        return KSFT_FAIL;
    }
    if (rma_counters_zero() != KSFT_PASS)
        return KSFT_FAIL;
    b = dbg_dma_value("batches");
    if (b > 0) {
        diag("DMA batches still queued: %lld", b);
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}

/* "key value" line of the rma_dma debugfs file, or -1. */
static inline long long dbg_dma_value(const char *key) {
    char line[128], k[64];
    long long v = -1, x;
    FILE *f = fopen(DBG_DIR "/rma_dma", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%63s %lld", k, &x) == 2 && !strcmp(k, key))
            v = x;
    fclose(f);
    return v;
}

/* Is the software DMA engine module loaded (the [dma] pass)? */
static inline int swdma_loaded(void) {
    return access("/sys/module/scif_swdma", F_OK) == 0;
}

/* Node of the peer in the node tests, or -1 when no emulated node. */
static inline int peer_node(void) {
    return max_node() >= 1 ? 1 : -1;
}

#endif /* OPENSCIF_SELFTESTS_RMA_TEST_H */
