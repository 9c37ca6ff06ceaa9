// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapltest_fix.c - an LD_PRELOAD shim that closes a use-after-free race in
 * Debian's dapltest (dapl2-utils 2.1.10), so that the dapltest runs of the
 * selftests judge the provider and not dapltest's own thread teardown.
 *
 * The race (dapltest's test/dapltest/common/dapl_thread.c, _memlist.c):
 * a test thread ends with DT_Thread_Destroy(), which locks
 * pt_ptr->Thread_counter_lock, decrements pt_ptr->Thread_counter and
 * unlocks, then calls pthread_attr_destroy() on its Thread and
 * DT_MemListFree(), which locks pt_ptr->MemListLock, unlinks and frees the
 * Thread from pt_ptr's list and unlocks.  The master thread polls the
 * counter every 100 ms; once it drops it destroys Thread_counter_lock and
 * MemListLock and frees pt_ptr.  A test thread preempted anywhere after
 * its unlock of Thread_counter_lock then locks a mutex in freed memory and
 * writes pt_ptr's list head into it: glibc later aborts with "malloc():
 * unsorted double linked list corrupted" (seen in CI twice: dapltest -T S
 * on node 1, after the -T T clients had passed).  Widen the window
 * (DAPLTEST_FIX_WIDEN_US below) and valgrind shows the freed 4,248-byte
 * Per_Test_Data touched by a dapltest thread, nothing of the provider on
 * the stack (docs/dapl.md, "dapltest's teardown race").
 *
 * The fix: every thread dapltest itself starts (a start routine in the
 * program, not in a library: the provider's threads never touch dapltest's
 * mutexes) records the mutex it unlocked last, before the unlock itself
 * (so no one can see the unlock without the record), until it unlocks
 * another one or exits.  pthread_mutex_destroy(m) waits until
 * no other thread's last unlock is m (at most 10 s, so a dapltest that
 * works differently is slowed, never hung).  A thread in the window has
 * Thread_counter_lock as its last unlock from the decrement until
 * DT_MemListFree's unlock of MemListLock (nothing in between unlocks a
 * mutex), and the master destroys Thread_counter_lock before it frees
 * pt_ptr, so the free waits for the last DT_MemListFree on it.  Only
 * atomics here: the shim must not lock the mutexes it intercepts.  (The
 * first version of this shim opened its window at pthread_attr_destroy()
 * and left the stretch from the unlock to it open: a later CI run met it.)
 *
 * Environment, for selftests/dapl/dapltest_race_test:
 *   DAPLTEST_FIX_OFF=1        no waiting (dapltest as it is)
 *   DAPLTEST_FIX_WIDEN_US=N   every other pthread_attr_destroy() (the test
 *                             thread's, in a one-thread -T T test) sleeps
 *                             N us before doing anything: a test thread
 *                             preempted between its unlock and the call
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* One slot per live thread that has unlocked a mutex; beyond that many
 * threads the extra ones go untracked (the race comes back, nothing worse). */
#define SLOTS 1024

static _Atomic(pthread_mutex_t *) last_unlock[SLOTS];
static atomic_int taken[SLOTS];
static _Thread_local int slot = -2; /* -1: none yet, -2: none to have */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static atomic_int attr_calls;

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

/* A thread's key destructor: it exits, its last unlock no longer counts. */
static void thread_exit(void *value) {
    int i = (int)(intptr_t)value - 1;

    atomic_store(&last_unlock[i], NULL);
    atomic_store(&taken[i], 0);
    slot = -2;
}

static void make_key(void) {
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

static int my_slot(void) {
    int i, zero;

    if (slot != -1)
        return slot;
    slot = -2;
    pthread_once(&key_once, make_key);
    if (exit_key == (pthread_key_t)-1)
        return slot;
    for (i = 0; i < SLOTS; i++) {
        zero = 0;
        if (atomic_compare_exchange_strong(&taken[i], &zero, 1)) {
            if (pthread_setspecific(exit_key, (void *)(intptr_t)(i + 1)) != 0) {
                atomic_store(&taken[i], 0);
                return slot;
            }
            slot = i;
            break;
        }
    }
    return slot;
}

/* The program's own code: its first loaded object's PT_LOAD segments. */
struct range {
    uintptr_t lo, hi;
};
static struct range prog[8];
static int nprog;

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
    int i;

    (void)size;
    (void)data;
    for (i = 0; i < info->dlpi_phnum && nprog < 8; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            prog[nprog].lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            prog[nprog].hi = prog[nprog].lo + info->dlpi_phdr[i].p_memsz;
            nprog++;
        }
    return 1; /* the first object is the program */
}

static pthread_once_t prog_once = PTHREAD_ONCE_INIT;

static void find_prog(void) {
    dl_iterate_phdr(first_object, NULL);
}

static int in_program(void *(*fn)(void *)) {
    uintptr_t a = (uintptr_t)fn;
    int i;

    pthread_once(&prog_once, find_prog);
    for (i = 0; i < nprog; i++)
        if (a >= prog[i].lo && a < prog[i].hi)
            return 1;
    return 0;
}

struct start {
    void *(*fn)(void *);
    void *arg;
};

/* A thread dapltest started: tracked from its first unlock on. */
static void *tracked_start(void *p) {
    struct start s = *(struct start *)p;

    free(p);
    slot = -1;
    return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    struct start *s;
    int r;

    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))next_fn(
            "pthread_create");
    if (!in_program(fn) || !(s = malloc(sizeof(*s))))
        return real(t, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    r = real(t, attr, tracked_start, s);
    if (r != 0)
        free(s);
    return r;
}

int pthread_attr_destroy(pthread_attr_t *attr) {
    static int (*real)(pthread_attr_t *);
    long widen = env_long("DAPLTEST_FIX_WIDEN_US");

    if (!real)
        real = (int (*)(pthread_attr_t *))next_fn("pthread_attr_destroy");
    if (widen > 0 && atomic_fetch_add(&attr_calls, 1) % 2 == 0)
        sleep_us(widen);
    return real(attr);
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    static int (*real)(pthread_mutex_t *);
    int i = my_slot();

    if (!real)
        real = (int (*)(pthread_mutex_t *))next_fn("pthread_mutex_unlock");
    if (i >= 0)
        atomic_store(&last_unlock[i], m);
    return real(m);
}

/* Does a thread other than this one have m as its last unlock? */
static int others_in_window(pthread_mutex_t *m) {
    int i;

    for (i = 0; i < SLOTS; i++)
        if (i != slot && atomic_load(&last_unlock[i]) == m)
            return 1;
    return 0;
}

int pthread_mutex_destroy(pthread_mutex_t *m) {
    static int (*real)(pthread_mutex_t *);
    int i;

    if (!real)
        real = (int (*)(pthread_mutex_t *))next_fn("pthread_mutex_destroy");
    if (!env_long("DAPLTEST_FIX_OFF")) {
        for (i = 0; i < 10000 && others_in_window(m); i++)
            sleep_us(1000);
        /* Said, so that a dapltest the shim does not fit shows up. */
        if (i == 10000)
            fprintf(stderr,
                    "dapltest_fix.so: pthread_mutex_destroy(%p) went on after 10 s "
                    "with another thread's last unlock on it\n",
                    (void *)m);
    }
    return real(m);
}
