/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers of the selftest library that need no SCIF device: time, memory,
 * the one byte-pattern generator and a random stream for decisions.  Shared
 * by the selftests (selftests/), the DAT tests and the benchmarks (bench/);
 * the code is in util.c of libscif_selftest.la.
 */
#ifndef OPENSCIF_SELFTESTS_LIB_UTIL_H
#define OPENSCIF_SELFTESTS_LIB_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define PAGE 4096UL

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* CLOCK_MONOTONIC in seconds. */
double now_sec(void);

/* Sleep @ms milliseconds (restarted after a signal). */
void sleep_ms(long ms);

/* Anonymous, private, page aligned read-write memory; NULL on failure. */
void *map_anon(size_t len);

/*
 * @len bytes of map_anon() memory starting at a multiple of @align (a power
 * of two), inside a mapping of @len + @align bytes that stays mapped for
 * the process's life; NULL on failure.  For buffers meant for huge pages.
 */
void *map_anon_aligned(size_t len, size_t align);
/*
 * len bytes on small pages, the even ones faulted in first and then the odd
 * ones, so that physically contiguous neighbours (one DMA descriptor for
 * several pages) are the exception; NULL on failure.
 */
void *map_anon_fragmented(size_t len);

/*
 * The byte pattern: byte @pos of the stream seeded @seed.  Any offset and
 * any chunking give the same bytes, so a sender and a receiver (or a writer
 * and a later reader) agree without sharing state.
 */
uint8_t pattern_byte(uint64_t seed, uint64_t pos);

/* Bytes [@off, @off + @len) of the stream seeded @seed into @buf. */
void pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off);

/* First byte of @buf that differs from pattern_fill()'s, or -1. */
long long pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t off);

/* pattern_fill() from offset 0: the deterministic fill of the tests. */
static inline void fill(void *buf, size_t len, uint64_t seed) {
    pattern_fill(buf, len, seed, 0);
}

/* First differing byte of two buffers, or -1. */
long long first_diff(const void *a, const void *b, size_t len);

/* Random stream for decisions (sizes, operations, delays): xorshift64*. */
struct prng {
    uint64_t s;
};

void prng_init(struct prng *p, uint64_t seed);
uint64_t prng_next(struct prng *p);

#endif /* OPENSCIF_SELFTESTS_LIB_UTIL_H */
