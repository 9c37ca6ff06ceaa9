// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Time, memory, byte pattern and random stream helpers (see util.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "util.h"

double now_sec(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

void *map_anon(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

void *map_anon_aligned(size_t len, size_t align) {
    uint8_t *p = map_anon(len + align);

    if (!p)
        return NULL;
    return (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
}

void *map_anon_fragmented(size_t len) {
    uint8_t *p = map_anon(len);
    size_t i;

    if (!p)
        return NULL;
    (void)madvise(p, len, MADV_NOHUGEPAGE);
    /* Even pages, then odd ones: neighbours come from apart allocations. */
    for (i = 0; i + 4096 <= len; i += 2 * 4096)
        p[i] = 1;
    for (i = 4096; i + 4096 <= len; i += 2 * 4096)
        p[i] = 1;
    return p;
}

/* Word @word of the stream seeded @seed (a splitmix64 step). */
static uint64_t pattern_word(uint64_t seed, uint64_t word) {
    uint64_t z = seed + word * 0x9E3779B97F4A7C15ULL;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint8_t pattern_byte(uint64_t seed, uint64_t pos) {
    return (uint8_t)(pattern_word(seed, pos / 8) >> (8 * (pos % 8)));
}

void pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off) {
    uint8_t *b = buf;
    size_t i = 0;

    while (i < len) {
        uint64_t pos = off + i;
        uint64_t v = pattern_word(seed, pos / 8);
        unsigned int k = (unsigned int)(pos % 8);

        for (; k < 8 && i < len; k++, i++)
            b[i] = (uint8_t)(v >> (8 * k));
    }
}

long long pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t off) {
    const uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; i++)
        if (b[i] != pattern_byte(seed, off + i))
            return (long long)i;
    return -1;
}

long long first_diff(const void *a, const void *b, size_t len) {
    const uint8_t *x = a, *y = b;
    size_t i;

    if (!memcmp(a, b, len))
        return -1;
    for (i = 0; i < len; i++)
        if (x[i] != y[i])
            return (long long)i;
    return -1;
}

void prng_init(struct prng *p, uint64_t seed) {
    p->s = seed * 0x9E3779B97F4A7C15ULL + 1;
    if (!p->s)
        p->s = 1;
}

uint64_t prng_next(struct prng *p) {
    p->s ^= p->s >> 12;
    p->s ^= p->s << 25;
    p->s ^= p->s >> 27;
    return p->s * 2685821657736338717ULL;
}
