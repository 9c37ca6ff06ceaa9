// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Unit tests of the EVD event queue: the dat_evd_wait(3)/dat_evd_dequeue(3)
// rules (threshold, timeout, nmore, single waiter, unwaitable, abort).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include <pthread.h>

#include "dapl_evq.h"

using namespace daplscif;
using namespace std::chrono;

static DAT_EVENT ev(int n) {
    DAT_EVENT e{};
    std::memset(&e, 0, sizeof(e));
    e.event_number = DAT_SOFTWARE_EVENT;
    e.event_data.software_event_data.pointer = reinterpret_cast<void *>((uintptr_t)n);
    return e;
}

static int num(const DAT_EVENT &e) {
    return (int)(uintptr_t)e.event_data.software_event_data.pointer;
}

TEST(EventQueue, ThresholdBounds) {
    EventQueue q(4);
    DAT_EVENT e{};
    DAT_COUNT nmore;
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 0, &e, &nmore)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, -1, &e, &nmore)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 5, &e, &nmore)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 4, &e, &nmore)), DAT_TIMEOUT_EXPIRED);
}

TEST(EventQueue, TimeoutKeepsEventsAndReportsNmore) {
    EventQueue q(8);
    q.push(ev(1), true);
    q.push(ev(2), true);
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    auto t0 = steady_clock::now();
    EXPECT_EQ(DAT_GET_TYPE(q.wait(20000, 3, &e, &nmore)), DAT_TIMEOUT_EXPIRED);
    EXPECT_GE(steady_clock::now() - t0, microseconds(20000));
    EXPECT_EQ(nmore, 2);
    EXPECT_EQ(q.count(), 2); /* nothing dequeued */
    ASSERT_EQ(q.wait(0, 2, &e, &nmore), DAT_SUCCESS);
    EXPECT_EQ(num(e), 1);
    EXPECT_EQ(nmore, 1); /* at least threshold - 1 */
}

TEST(EventQueue, OrderWithinStream) {
    EventQueue q(16);
    for (int i = 0; i < 10; i++)
        q.push(ev(i), true);
    DAT_EVENT e{};
    for (int i = 0; i < 10; i++) {
        ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
        EXPECT_EQ(num(e), i);
    }
    EXPECT_EQ(DAT_GET_TYPE(q.dequeue(&e)), DAT_QUEUE_EMPTY);
}

TEST(EventQueue, WaiterWakesAtThreshold) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(DAT_TIMEOUT_INFINITE, 3, &e, &nmore); });
    for (int i = 0; i < 3; i++) {
        std::this_thread::sleep_for(milliseconds(10));
        q.push(ev(i), true);
    }
    t.join();
    EXPECT_EQ(r, DAT_SUCCESS);
    EXPECT_EQ(num(e), 0);
    EXPECT_EQ(nmore, 2);
}

TEST(EventQueue, SecondWaiterAndDequeueRejected) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore;
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(DAT_TIMEOUT_INFINITE, 1, &e, &nmore); });
    while (!q.has_waiter())
        std::this_thread::sleep_for(milliseconds(1));
    DAT_EVENT e2{};
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 1, &e2, &nmore)), DAT_INVALID_STATE);
    EXPECT_EQ(DAT_GET_TYPE(q.dequeue(&e2)), DAT_INVALID_STATE);
    q.push(ev(7), true);
    t.join();
    EXPECT_EQ(r, DAT_SUCCESS);
    EXPECT_EQ(num(e), 7);
}

TEST(EventQueue, AbortWakesWaiter) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore;
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(DAT_TIMEOUT_INFINITE, 1, &e, &nmore); });
    while (!q.has_waiter())
        std::this_thread::sleep_for(milliseconds(1));
    q.abort(); /* returns only after the waiter left */
    EXPECT_FALSE(q.has_waiter());
    t.join();
    EXPECT_EQ(DAT_GET_TYPE(r), DAT_ABORT);
}

TEST(EventQueue, Unwaitable) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore;
    q.set_unwaitable(true);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 1, &e, &nmore)), DAT_INVALID_STATE);
    q.push(ev(1), true);
    EXPECT_EQ(q.dequeue(&e), DAT_SUCCESS); /* dequeue still works */
    q.set_unwaitable(false);
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(DAT_TIMEOUT_INFINITE, 1, &e, &nmore); });
    while (!q.has_waiter())
        std::this_thread::sleep_for(milliseconds(1));
    q.set_unwaitable(true); /* kicks the blocked waiter out */
    t.join();
    EXPECT_EQ(DAT_GET_TYPE(r), DAT_INVALID_STATE);
}

TEST(EventQueue, RestrictedThresholdIsOne) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore;
    q.set_restricted(true);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 2, &e, &nmore)), DAT_INVALID_STATE);
    EXPECT_EQ(DAT_GET_TYPE(q.wait(0, 1, &e, &nmore)), DAT_TIMEOUT_EXPIRED);
}

TEST(EventQueue, QueuedUnsignalledEventIsReturned) {
    /* Notification decides wake-ups, not whether an event is returned. */
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    q.push(ev(1), false);
    ASSERT_EQ(q.wait(0, 1, &e, &nmore), DAT_SUCCESS);
    EXPECT_EQ(num(e), 1);
    EXPECT_EQ(nmore, 0);
    q.push(ev(2), false);
    q.push(ev(3), false);
    ASSERT_EQ(q.wait(10000, 2, &e, &nmore), DAT_SUCCESS);
    EXPECT_EQ(num(e), 2);
    EXPECT_EQ(nmore, 1);
}

TEST(EventQueue, UnsignalledEventsDoNotWake) {
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(DAT_TIMEOUT_INFINITE, 1, &e, &nmore); });
    while (!q.has_waiter())
        std::this_thread::sleep_for(milliseconds(1));
    q.push(ev(1), false);
    std::this_thread::sleep_for(milliseconds(20));
    EXPECT_TRUE(q.has_waiter()); /* still blocked */
    q.push(ev(2), true);
    t.join();
    ASSERT_EQ(r, DAT_SUCCESS);
    EXPECT_EQ(num(e), 1); /* queue order is kept */
    EXPECT_EQ(nmore, 1);
    ASSERT_EQ(q.wait(0, 1, &e, &nmore), DAT_SUCCESS);
    EXPECT_EQ(num(e), 2);
}

TEST(EventQueue, TimeoutReturnsEventWhenThresholdReached) {
    /* A blocked waiter that was never woken still gets the events at
     * its timeout: TIMEOUT_EXPIRED only when fewer than threshold. */
    EventQueue q(8);
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    DAT_RETURN r = 0;
    std::thread t([&] { r = q.wait(50000, 1, &e, &nmore); });
    while (!q.has_waiter())
        std::this_thread::sleep_for(milliseconds(1));
    q.push(ev(4), false);
    t.join();
    ASSERT_EQ(r, DAT_SUCCESS);
    EXPECT_EQ(num(e), 4);
}

static volatile sig_atomic_t g_sigs;
static void on_sig(int) {
    g_sigs = g_sigs + 1;
}

static void handle_usr1(int flags, struct sigaction *old) {
    struct sigaction sa {};
    sa.sa_handler = on_sig;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, old), 0);
}

/* A thread blocked in q.wait(timeout, 1): started, and blocked on return. */
struct BlockedWaiter {
    BlockedWaiter(EventQueue &q, DAT_TIMEOUT timeout) : q_(q) {
        t_ = std::thread([this, timeout] {
            r = q_.wait(timeout, 1, &e, &nmore);
            done = true;
        });
        while (!q_.has_waiter())
            std::this_thread::sleep_for(milliseconds(1));
    }
    ~BlockedWaiter() {
        if (!t_.joinable())
            return;
        if (!done)
            q_.abort(); /* do not leave the thread blocked */
        t_.join();
    }
    void signal() {
        pthread_kill(t_.native_handle(), SIGUSR1);
        std::this_thread::sleep_for(milliseconds(10));
    }
    /*
     * Signal the waiter until its wait returned (a signal that lands
     * just before it blocks is handled without interrupting anything,
     * as for any blocking system call); bounded.
     */
    bool signal_until_done() {
        for (int i = 0; i < 500 && !done; i++)
            signal();
        return done;
    }
    void join() { t_.join(); }

    EventQueue &q_;
    std::thread t_;
    DAT_RETURN r = 0;
    DAT_EVENT e{};
    DAT_COUNT nmore = -1;
    std::atomic<bool> done{false};
};

TEST(EventQueue, SignalWithoutRestartInterruptsWait) {
    for (DAT_TIMEOUT to : {DAT_TIMEOUT_INFINITE, (DAT_TIMEOUT)60000000}) {
        struct sigaction old;
        handle_usr1(0, &old);
        EventQueue q(8);
        {
            BlockedWaiter w(q, to);
            EXPECT_TRUE(w.signal_until_done()) << "timeout " << to;
            w.join();
            EXPECT_EQ(DAT_GET_TYPE(w.r), DAT_INTERRUPTED_CALL) << "timeout " << to;
            EXPECT_EQ(w.nmore, 0);
        }
        sigaction(SIGUSR1, &old, nullptr);
        EXPECT_FALSE(q.has_waiter());
    }
}

TEST(EventQueue, SignalWithRestartEndsTimedWait) {
    /* As poll(2) or nanosleep(2): a timed wait is never resumed. */
    struct sigaction old;
    handle_usr1(SA_RESTART, &old);
    EventQueue q(8);
    {
        BlockedWaiter w(q, 60000000);
        EXPECT_TRUE(w.signal_until_done());
        w.join();
        EXPECT_EQ(DAT_GET_TYPE(w.r), DAT_INTERRUPTED_CALL);
    }
    sigaction(SIGUSR1, &old, nullptr);
}

TEST(EventQueue, SignalWithRestartResumesUntimedWait) {
    struct sigaction old;
    handle_usr1(SA_RESTART, &old);
    EventQueue q(8);
    {
        BlockedWaiter w(q, DAT_TIMEOUT_INFINITE);
        g_sigs = 0;
        for (int i = 0; i < 5; i++)
            w.signal();
        EXPECT_GT(g_sigs, 0);
        EXPECT_FALSE(w.done);
        q.push(ev(5), true);
        w.join();
        ASSERT_EQ(w.r, DAT_SUCCESS);
        EXPECT_EQ(num(w.e), 5);
    }
    sigaction(SIGUSR1, &old, nullptr);
}

TEST(EventQueue, CreditsReturnOnDequeueAndDestruction) {
    auto credit = std::make_shared<std::atomic<int>>(3);
    {
        EventQueue q(8);
        q.push(ev(1), true, credit);
        q.push(ev(2), true, credit);
        q.push(ev(3), true, credit);
        DAT_EVENT e;
        ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
        EXPECT_EQ(credit->load(), 2);
    }
    EXPECT_EQ(credit->load(), 0);
}

TEST(EventQueue, Resize) {
    EventQueue q(2);
    q.push(ev(1), true);
    q.push(ev(2), true);
    EXPECT_EQ(DAT_GET_TYPE(q.resize(1)), DAT_INVALID_STATE);
    EXPECT_EQ(q.resize(4), DAT_SUCCESS);
    EXPECT_EQ(q.qlen(), 4);
}

/*
 * The queue is a ring that grows only past its high water mark: events
 * stay in order and keep their credits across a wrap and a growth made
 * while wrapped, and credits of what is left return at destruction.
 */
TEST(EventQueue, OrderAndCreditsAcrossWrapAndGrowth) {
    auto credit = std::make_shared<std::atomic<int>>(0);
    {
        EventQueue q(1000);
        int next_in = 0, next_out = 0;
        DAT_EVENT e{};
        for (int round = 0; round < 6; round++) {
            /* 5 more in than out each round, 16 .. 32 queued: wraps and grows */
            for (int i = 0; i < 12 + round; i++) {
                credit->fetch_add(1);
                q.push(ev(next_in++), true, credit);
            }
            for (int i = 0; i < 7 + round; i++) {
                ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
                EXPECT_EQ(num(e), next_out++);
            }
            EXPECT_EQ(q.count(), next_in - next_out);
            EXPECT_EQ(credit->load(), next_in - next_out);
        }
        ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
        EXPECT_EQ(num(e), next_out++);
    }
    EXPECT_EQ(credit->load(), 0);
}

/*
 * A full queue drops what the provider pushes, returns its credit, and
 * reports the overflow once until the consumer takes an event.
 */
TEST(EventQueue, FullQueueDropsAndReportsOnceUntilAnEventIsTaken) {
    auto credit = std::make_shared<std::atomic<int>>(4);
    EventQueue q(2);
    EXPECT_TRUE(q.push(ev(1), true, credit).queued);
    EXPECT_TRUE(q.push(ev(2), true, credit).queued);
    EventQueue::Pushed r = q.push(ev(3), true, credit);
    EXPECT_FALSE(r.queued);
    EXPECT_FALSE(r.trigger);
    EXPECT_TRUE(r.overflow);
    EXPECT_EQ(credit->load(), 3) << "a dropped event keeps its credit";
    r = q.push(ev(4), true, credit);
    EXPECT_FALSE(r.queued);
    EXPECT_FALSE(r.overflow) << "reported twice";
    EXPECT_EQ(credit->load(), 2);
    EXPECT_EQ(q.count(), 2);
    DAT_EVENT e;
    ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
    EXPECT_EQ(num(e), 1);
    EXPECT_TRUE(q.push(ev(5), true).queued);
    r = q.push(ev(6), true);
    EXPECT_FALSE(r.queued);
    EXPECT_TRUE(r.overflow) << "an overflow after the consumer took one is new";
    EXPECT_EQ(q.dropped(), 3u);
    ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
    EXPECT_EQ(num(e), 2);
    ASSERT_EQ(q.dequeue(&e), DAT_SUCCESS);
    EXPECT_EQ(num(e), 5);
}

/* dat_evd_post_se's push: refused on a full queue, and that is no overflow. */
TEST(EventQueue, PushIfRoomRefusesWithoutOverflow) {
    EventQueue q(1);
    EXPECT_TRUE(q.push_if_room(ev(1)).queued);
    EventQueue::Pushed r = q.push_if_room(ev(2));
    EXPECT_FALSE(r.queued);
    EXPECT_FALSE(r.overflow);
    EXPECT_EQ(q.dropped(), 0u);
    EXPECT_TRUE(q.push(ev(3), true).overflow) << "the refusal counted as an overflow";
}
