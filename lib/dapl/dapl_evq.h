/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_evq.h - the event queue behind a DAT Event Dispatcher (EVD).
 *
 * Implements the waiting rules of dat_evd_wait(3) and dat_evd_dequeue(3):
 * threshold checks, microsecond timeouts, nmore snapshots, one waiter at a
 * time, unwaitable EVDs, DAT_ABORT for a waiter when the EVD is destroyed,
 * notification suppression (events queued without waking a waiter), and
 * overflow: a full queue drops what the provider posts (push()).
 * The queue needs nothing from SCIF, so it is unit tested natively.
 *
 * Waiting: a wait that finds `threshold` events queued returns the first
 * at once, whether those events notify or not (notification decides only
 * whether a blocked waiter is woken).  A blocked waiter wakes when a
 * notifying event is queued and the count reaches the threshold; at its
 * timeout it returns the first event if `threshold` are queued by then,
 * else DAT_TIMEOUT_EXPIRED.  The waiter sleeps in futex(2), so a caught
 * signal ends the wait with DAT_INTERRUPTED_CALL as it ends a blocking
 * system call: an untimed wait is resumed when the handler was installed
 * with SA_RESTART, a timed wait is never resumed (like poll(2)).
 */
#ifndef DAPL_EVQ_H
#define DAPL_EVQ_H

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <vector>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dat2/udat.h>

namespace daplscif {

/* A DAT error return of the given type (and optional subtype). */
constexpr DAT_RETURN dat_err(DAT_RETURN type, unsigned sub = 0) {
    return (DAT_RETURN)(DAT_CLASS_ERROR | (unsigned)type | sub);
}

/*
 * A credit returned when a queued event is consumed (dequeued, or dropped
 * with the queue): the owner of the counter (an EP's request queue) counts
 * its outstanding DTOs with it.
 */
using Credit = std::shared_ptr<std::atomic<int>>;

/* The IA's max_evd_qlen: an EVD is created or resized within it. */
constexpr DAT_COUNT kMaxEvdQlen = 1 << 20;

class EventQueue {
  public:
    explicit EventQueue(DAT_COUNT qlen) : qlen_(qlen) {}
    ~EventQueue() {
        while (n_)
            pop(nullptr);
    }
    EventQueue(const EventQueue &) = delete;
    EventQueue &operator=(const EventQueue &) = delete;

    /* What push() did with an event. */
    struct Pushed {
        bool queued = false;   /* false: the queue was full, the event dropped */
        bool trigger = false;  /* queued, notifies, nobody waiting: trigger the CNO */
        bool overflow = false; /* dropped, the first since the consumer last took one */
    };

    /*
     * Queue an event.  A notifying event wakes a waiter whose threshold
     * is reached.  A queue holding qlen events drops the event (its
     * credit returns at once): the consumer sized the EVD for fewer
     * events than its EPs and SPs may produce, which the DAT spec makes
     * an overflow, reported once (overflow) until the consumer takes an
     * event off the queue, so that a flood does not fill the async EVD
     * with reports too.
     */
    Pushed push(const DAT_EVENT &ev, bool notify, Credit credit = nullptr) {
        return push_locked(ev, notify, std::move(credit), true);
    }

    /*
     * dat_evd_post_se: the consumer's own event is refused (queued false)
     * when the queue is full; that is no overflow.
     */
    Pushed push_if_room(const DAT_EVENT &ev) { return push_locked(ev, true, nullptr, false); }

    /* Events dropped because the queue was full, in all. */
    uint64_t dropped() {
        std::lock_guard<std::mutex> lk(mu_);
        return dropped_;
    }

    DAT_RETURN dequeue(DAT_EVENT *out) {
        std::lock_guard<std::mutex> lk(mu_);
        if (waiter_)
            return dat_err(DAT_INVALID_STATE);
        if (!n_)
            return dat_err(DAT_QUEUE_EMPTY);
        pop(out);
        return DAT_SUCCESS;
    }

    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out, DAT_COUNT *nmore) {
        std::unique_lock<std::mutex> lk(mu_);
        if (threshold <= 0 || threshold > qlen_)
            return dat_err(DAT_INVALID_PARAMETER);
        if (restricted_ && threshold != 1)
            return dat_err(DAT_INVALID_STATE);
        if (unwaitable_ || waiter_)
            return dat_err(DAT_INVALID_STATE);
        if (aborted_)
            return dat_err(DAT_ABORT);
        auto enough = [&] { return (DAT_COUNT)n_ >= threshold; };
        bool interrupted = false;
        if (!enough() && timeout_us != 0) {
            waiter_ = true;
            timespec deadline{};
            clock_gettime(CLOCK_MONOTONIC, &deadline);
            deadline.tv_sec += timeout_us / 1000000;
            deadline.tv_nsec += (long)(timeout_us % 1000000) * 1000;
            if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
            }
            const bool infinite = timeout_us == DAT_TIMEOUT_INFINITE;
            while (!aborted_ && !unwaitable_ && !(enough() && notify_count_ > 0)) {
                uint32_t seen = seq_.load();
                lk.unlock();
                int e = futex_wait(seen, infinite ? nullptr : &deadline);
                lk.lock();
                if (e == ETIMEDOUT)
                    break;
                if (e == EINTR) {
                    interrupted = true;
                    break;
                }
            }
            waiter_ = false;
            idle_cv_.notify_all();
        }
        if (aborted_)
            return dat_err(DAT_ABORT);
        if (unwaitable_)
            return dat_err(DAT_INVALID_STATE);
        if (!enough()) {
            if (nmore)
                *nmore = (DAT_COUNT)n_;
            return dat_err(interrupted ? DAT_INTERRUPTED_CALL : DAT_TIMEOUT_EXPIRED);
        }
        pop(out);
        if (nmore)
            *nmore = (DAT_COUNT)n_;
        return DAT_SUCCESS;
    }

    /* Destroy: a blocked waiter returns DAT_ABORT; wait until it left. */
    void abort() {
        std::unique_lock<std::mutex> lk(mu_);
        aborted_ = true;
        kick();
        idle_cv_.wait(lk, [&] { return !waiter_; });
    }

    void set_unwaitable(bool on) {
        std::lock_guard<std::mutex> lk(mu_);
        unwaitable_ = on;
        kick();
    }

    /* EVD fed by unsignalled / solicited completions: threshold 1 only. */
    void set_restricted(bool on) {
        std::lock_guard<std::mutex> lk(mu_);
        restricted_ = on;
    }

    DAT_RETURN resize(DAT_COUNT qlen) {
        std::lock_guard<std::mutex> lk(mu_);
        if (qlen <= 0 || qlen > kMaxEvdQlen)
            return dat_err(DAT_INVALID_PARAMETER);
        if ((DAT_COUNT)n_ > qlen)
            return dat_err(DAT_INVALID_STATE);
        qlen_ = qlen;
        return DAT_SUCCESS;
    }

    DAT_COUNT count() {
        std::lock_guard<std::mutex> lk(mu_);
        return (DAT_COUNT)n_;
    }
    DAT_COUNT qlen() {
        std::lock_guard<std::mutex> lk(mu_);
        return qlen_;
    }
    bool unwaitable() {
        std::lock_guard<std::mutex> lk(mu_);
        return unwaitable_;
    }
    bool has_waiter() {
        std::lock_guard<std::mutex> lk(mu_);
        return waiter_;
    }

  private:
    Pushed push_locked(const DAT_EVENT &ev, bool notify, Credit credit, bool overflow) {
        std::lock_guard<std::mutex> lk(mu_);
        Pushed r;
        if ((DAT_COUNT)n_ >= qlen_) {
            if (!overflow)
                return r;
            if (credit)
                credit->fetch_sub(1);
            dropped_++;
            r.overflow = !overflowed_;
            overflowed_ = true;
            return r;
        }
        if (n_ == ring_.size())
            grow();
        ring_[(head_ + n_) % ring_.size()] = {ev, notify, std::move(credit)};
        n_++;
        if (notify)
            notify_count_++;
        kick();
        r.queued = true;
        r.trigger = notify && !waiter_;
        return r;
    }

    struct Entry {
        DAT_EVENT ev;
        bool notify;
        Credit credit;
    };

    /* Wake the waiter (mu_ held): it rechecks its condition. */
    void kick() {
        seq_.fetch_add(1);
        if (waiter_)
            syscall(SYS_futex, &seq_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
    }

    /*
     * Sleep while seq_ == seen, until the absolute CLOCK_MONOTONIC
     * deadline (nullptr: none).  Returns 0 (woken, or seq_ moved on),
     * ETIMEDOUT or EINTR.
     */
    int futex_wait(uint32_t seen, const timespec *deadline) {
        long r = syscall(SYS_futex, &seq_, FUTEX_WAIT_BITSET_PRIVATE, seen, deadline, nullptr,
                         FUTEX_BITSET_MATCH_ANY);
        if (r == 0 || errno == EAGAIN)
            return 0;
        return errno == ETIMEDOUT || errno == EINTR ? errno : 0;
    }

    static void release(Entry &e) {
        if (e.credit)
            e.credit->fetch_sub(1);
        e.credit.reset();
    }

    /* out: the consumer takes the event (and so may overflow again). */
    void pop(DAT_EVENT *out) {
        Entry &e = ring_[head_];
        if (out) {
            *out = e.ev;
            overflowed_ = false;
        }
        if (e.notify)
            notify_count_--;
        release(e);
        head_ = (head_ + 1) % ring_.size();
        n_--;
    }
    /*
     * Twice the room, the events moved over in order (mu_ held; may throw
     * std::bad_alloc, the queue unchanged).  Only when more events are
     * queued than ever before: a queue that stays within its high water
     * mark queues without allocating.
     */
    void grow() {
        std::vector<Entry> bigger(std::max<size_t>(16, 2 * ring_.size()));
        for (size_t i = 0; i < n_; i++)
            bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
        ring_.swap(bigger);
        head_ = 0;
    }

    std::mutex mu_; /* protects every member below */
    /*
     * Futex word of the waiter: moves on at every change it may wait
     * for (an event, abort, unwaitable).  Changed with mu_ held, read
     * by the futex without it.
     */
    std::atomic<uint32_t> seq_{0};
    std::condition_variable idle_cv_; /* the waiter left */
    std::vector<Entry> ring_;         /* n_ events from head_ on, wrapping */
    size_t head_ = 0, n_ = 0;
    DAT_COUNT qlen_;
    DAT_COUNT notify_count_ = 0; /* notifying events queued */
    bool waiter_ = false;
    bool unwaitable_ = false;
    bool aborted_ = false;
    bool restricted_ = false;
    bool overflowed_ = false; /* dropped one since the consumer last took one */
    uint64_t dropped_ = 0;
};

} /* namespace daplscif */

#endif /* DAPL_EVQ_H */
