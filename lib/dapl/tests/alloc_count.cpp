// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * alloc_count.cpp - the unit test binary's operator new and delete: malloc
 * and free, each new counted for the thread that calls it, the one
 * fail_nth names failing (alloc_count.h).
 * The replacements are process-wide, the provider's libraries included.
 */
#include "alloc_count.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<size_t> all_news;
thread_local size_t news;
thread_local size_t fail_at; /* the value of news that fails; 0: none */
thread_local bool failed;

/* Count one new on this thread: whether it is the one to fail. */
bool count_one() {
    all_news.fetch_add(1, std::memory_order_relaxed);
    news++;
    if (fail_at && news == fail_at) {
        fail_at = 0;
        failed = true;
        return true;
    }
    return false;
}
} /* namespace */

size_t alloc_count::on_this_thread() {
    return news;
}

size_t alloc_count::all_threads() {
    return all_news.load();
}

void alloc_count::fail_nth(size_t n) {
    fail_at = n ? news + n : 0;
    failed = false;
}

bool alloc_count::failed_yet() {
    return failed;
}

void *operator new(size_t n) {
    if (!count_one())
        if (void *p = std::malloc(n ? n : 1))
            return p;
    throw std::bad_alloc();
}

void *operator new[](size_t n) {
    return operator new(n);
}

void *operator new(size_t n, const std::nothrow_t &) noexcept {
    return count_one() ? nullptr : std::malloc(n ? n : 1);
}

void *operator new[](size_t n, const std::nothrow_t &t) noexcept {
    return operator new(n, t);
}

void operator delete(void *p) noexcept {
    std::free(p);
}

void operator delete[](void *p) noexcept {
    std::free(p);
}

void operator delete(void *p, size_t) noexcept {
    std::free(p);
}

void operator delete[](void *p, size_t) noexcept {
    std::free(p);
}
