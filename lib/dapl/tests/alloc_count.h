// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * alloc_count.h - how many times the calling thread allocated with
 * operator new: the unit test binary replaces the global operator new
 * (alloc_count.cpp), so a test can check that a provider path it calls
 * allocates nothing (the spec's "avoid resource allocation" on a post),
 * or make one of its allocations fail.
 */
#ifndef DAPLSCIF_TESTS_ALLOC_COUNT_H
#define DAPLSCIF_TESTS_ALLOC_COUNT_H

#include <cstddef>

namespace alloc_count {

/* operator new calls made by this thread so far. */
size_t on_this_thread();
/* operator new calls made by every thread so far. */
size_t all_threads();

/*
 * The nth operator new this thread calls from now on fails (throws
 * std::bad_alloc; nothrow new returns null), the ones after it succeed
 * again; 0: none fails.  Whether it came: failed_yet().
 */
void fail_nth(size_t n);
bool failed_yet();

} /* namespace alloc_count */

#endif
