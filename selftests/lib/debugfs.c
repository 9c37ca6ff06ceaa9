// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* debugfs and sysfs readers of the selftests (see scif_test.h). */
#include "scif_test.h"

/* The integer in a (sysfs, debugfs) file, or -1. */
long long read_long(const char *path) {
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
int write_long(const char *path, long long v) {
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
long long dbg_counter(const char *name) {
    char path[128];

    snprintf(path, sizeof(path), DBG_DIR "/%s", name);
    return read_long(path);
}

/* Wait up to ~20 s for a counter to reach @want; returns its last value. */
long long dbg_wait(const char *name, long long want) {
    long long v = dbg_counter(name);
    int i;

    for (i = 0; i < 2000 && v != want && v >= 0; i++) {
        sleep_ms(10);
        v = dbg_counter(name);
    }
    return v;
}

/* Write an integer to a debugfs control of the module (node_lost, ...). */
int dbg_write(const char *name, int v) {
    char path[128];

    snprintf(path, sizeof(path), DBG_DIR "/%s", name);
    return write_long(path, v);
}

/*
 * KSFT_PASS once every RMA counter (rma_inflight, windows, pinned_pages,
 * mappings) is back to zero (each waited for as dbg_wait() does), else
 * KSFT_FAIL with the values.
 */
int rma_counters_zero(void) {
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

/* Endpoints the module has (first line of debugfs endpoints), or -1. */
long long dbg_endpoints(void) {
    long long n = -1;
    FILE *f = fopen(DBG_DIR "/endpoints", "r");

    if (!f)
        return -1;
    if (fscanf(f, "endpoints: %lld", &n) != 1)
        n = -1;
    fclose(f);
    return n;
}

/* Each line of the debugfs endpoints table as a diagnostic. */
void dbg_endpoints_dump(void) {
    char line[160];
    FILE *f = fopen(DBG_DIR "/endpoints", "r");

    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        diag("  %s", line);
    }
    fclose(f);
}

/*
 * KSFT_PASS once the module holds nothing: no endpoint (waited for up to
 * ~20 s), the RMA counters of rma_counters_zero() and no queued DMA batch;
 * else KSFT_FAIL with the values.  For the end of a program that closed
 * everything it opened (nothing else may run meanwhile).
 */
int all_counters_zero(void) {
    long long ep = dbg_endpoints(), b;
    int i;

    for (i = 0; i < 2000 && ep > 0; i++) {
        sleep_ms(10);
        ep = dbg_endpoints();
    }
    if (ep != 0) {
        diag("endpoints left: %lld", ep);
        dbg_endpoints_dump();
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
long long dbg_dma_value(const char *key) {
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

int dbg_dma_channel(void) {
    char line[128];
    int present = 0;
    FILE *f = fopen(DBG_DIR "/rma_dma", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "channel ", 8) && strncmp(line + 8, "none", 4))
            present = 1;
    fclose(f);
    return present;
}

/* Is the software DMA engine module loaded (the [dma] pass)? */
int swdma_loaded(void) {
    return access("/sys/module/scif_swdma", F_OK) == 0;
}

int faults_off(void) {
    return write_long(SWDMA_PARAM "fail_submit", 0) | write_long(SWDMA_PARAM "stall", 0) |
           write_long(SWDMA_PARAM "delay_ms", 0);
}

long long swdma_descs(void) {
    return read_long(SWDMA_PARAM "descs");
}
