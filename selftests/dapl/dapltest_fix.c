// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapltest_fix.c - an LD_PRELOAD shim that closes a use-after-free race in
 * Debian's dapltest (dapl2-utils 2.1.10), so that the dapltest runs of the
 * selftests judge the provider and not dapltest's own thread teardown.
 *
 * The race (dapltest's test/dapltest/common/dapl_thread.c, _memlist.c):
 * a test thread ends with DT_Thread_Destroy(), which decrements
 * pt_ptr->Thread_counter, then calls pthread_attr_destroy() on its Thread
 * and DT_MemListFree(), which locks pt_ptr->MemListLock, unlinks and frees
 * the Thread from pt_ptr's list and unlocks.  The master thread polls the
 * counter every 100 ms; once it drops it destroys pt_ptr's two mutexes and
 * frees pt_ptr.  A test thread preempted after its decrement then locks a
 * mutex in freed memory and writes pt_ptr's list head into it: glibc later
 * aborts with "malloc(): unsorted double linked list corrupted" (seen in
 * CI: dapltest -T S on node 1, after the -T T clients had passed).  Widen
 * the window (DAPLTEST_FIX_WIDEN_US below) and valgrind shows the freed
 * 4,248-byte Per_Test_Data touched by a dapltest thread, nothing of the
 * provider on the stack (docs/dapl.md, "dapltest's teardown race").
 *
 * The fix: a thread is "in teardown" from its pthread_attr_destroy() to
 * its next pthread_mutex_unlock() (DT_MemListFree's unlock: nothing in
 * between unlocks a mutex), and pthread_mutex_destroy() waits until no
 * other thread is in teardown (at most 10 s, so a dapltest that works
 * differently is slowed, never hung).  dapltest destroys a Per_Test_Data's
 * mutexes right before it frees it, so the free waits for the last
 * DT_MemListFree on it.  Only atomics here: the shim must not lock the
 * mutexes it intercepts.
 *
 * Environment, for selftests/dapl/dapltest_race_test:
 *   DAPLTEST_FIX_OFF=1        no waiting (dapltest as it is)
 *   DAPLTEST_FIX_WIDEN_US=N   every other pthread_attr_destroy() (the test
 *                             thread's, in a one-thread -T T test) sleeps
 *                             N us inside the window
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static atomic_int in_teardown; /* threads between the two calls */
static atomic_int attr_calls;
static _Thread_local int mine; /* this thread is in teardown */

static void *next_fn(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

static long env_long(const char *name) {
    const char *v = getenv(name);

    return v ? strtol(v, NULL, 10) : 0;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

int pthread_attr_destroy(pthread_attr_t *attr) {
    static int (*real)(pthread_attr_t *);
    long widen = env_long("DAPLTEST_FIX_WIDEN_US");

    if (!real)
        real = (int (*)(pthread_attr_t *))next_fn("pthread_attr_destroy");
    if (!mine) {
        mine = 1;
        atomic_fetch_add(&in_teardown, 1);
    }
    if (widen > 0 && atomic_fetch_add(&attr_calls, 1) % 2 == 0)
        sleep_us(widen);
    return real(attr);
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    static int (*real)(pthread_mutex_t *);
    int r;

    if (!real)
        real = (int (*)(pthread_mutex_t *))next_fn("pthread_mutex_unlock");
    r = real(m);
    if (mine) {
        mine = 0;
        atomic_fetch_sub(&in_teardown, 1);
    }
    return r;
}

int pthread_mutex_destroy(pthread_mutex_t *m) {
    static int (*real)(pthread_mutex_t *);
    int i;

    if (!real)
        real = (int (*)(pthread_mutex_t *))next_fn("pthread_mutex_destroy");
    if (!env_long("DAPLTEST_FIX_OFF"))
        for (i = 0; i < 10000 && atomic_load(&in_teardown) > mine; i++)
            sleep_us(1000);
    return real(m);
}
