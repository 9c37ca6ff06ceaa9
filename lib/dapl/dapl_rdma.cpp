// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_rdma.cpp - carrying out RDMA DTOs: the IA's RDMA workers.
 *
 * dat_ep_post_rdma_read/write validate the DTO (dapl_dto.cpp) and hand it
 * here; the post returns at once, as a verbs post does, and a worker
 * thread makes the SCIF RMA calls.  So a consumer that keeps a pipeline of
 * DTOs (dapltest -T P, an MPI) has several RDMA reads on the link at once,
 * where a post that waited for each had one.
 *
 * Order, as on an RC queue pair:
 *   1. Completions come in post order on each connection: a job that
 *      finished waits for those before it.
 *   2. An RDMA read starts while only reads (none with the barrier fence
 *      flag) are unfinished before it: reads run side by side, as many
 *      as kRdmaSideBySide bytes of them (one alone whatever its size).
 *   3. Anything else (a write, a read with DAT_COMPLETION_BARRIER_FENCE_FLAG)
 *      starts once everything before it finished, and nothing after it
 *      starts before it finished: writes land in post order, a read after
 *      a write sees its data, a write after a read does not overtake it.
 *   4. A send waits until every RDMA DTO posted before it completed
 *      (rdma_wait_posted), so a peer that sees the message sees the data
 *      of the writes before it.
 *   5. An EP letting go of its connection (disconnect, reset, loss, free)
 *      cancels the jobs not started and waits for the running ones, whose
 *      SCIF calls end on their own (the kernel's RMA never waits forever);
 *      no job touches the EP or the consumer's memory after that.
 *   6. The peer ending the connection (its DISCONNECT, its endpoint gone)
 *      while jobs run flushes the jobs not started at once
 *      (rdma_flush_queued); they complete FLUSHED after the running ones,
 *      and the last completion reports the loss (conn_dto_done).
 *
 * Memory: a job goes back to its EP once completed (rdma_give_back) and the
 * next post takes it again (rdma_job); the connection's job list and the
 * engine's connection list are vectors whose room the post makes before
 * it counts the DTO (rdma_make_room).  So a post allocates nothing once
 * the EP has had as many DTOs on their way before, and one that cannot
 * allocate fails with DAT_INSUFFICIENT_RESOURCES having changed nothing;
 * the workers allocate nothing (an exception there would end the
 * process).
 *
 * DAPLSCIF_RDMA_WORKERS (0 .. 16, default 4, the module's four transfers
 * in flight per endpoint across hosts) sets the number of workers; 0 runs
 * each DTO inside its post call, as before there were workers.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace daplscif {

/*
 * Bytes of reads running side by side on a connection, most: the module's
 * chunk of a window (1 MiB), which one call moves with several RDMA
 * operations in flight.  So 64 KiB reads run four at a time (the default
 * workers), 512 KiB ones two, 1 MiB ones one.
 */
constexpr uint64_t kRdmaSideBySide = 1 << 20;

/* ---- running one job (no lock held) -------------------------------------- */

/* The DTO status of an errno from a SCIF RMA call (libdaplscif(7)). */
static DAT_DTO_COMPLETION_STATUS rma_status(int e) {
    switch (e) {
    case ECONNRESET:
    case ENOTCONN:
        return DAT_DTO_ERR_FLUSHED;
    case EACCES:
    case ENXIO:
        return DAT_DTO_ERR_REMOTE_ACCESS;
    case EFAULT:
        return DAT_DTO_ERR_LOCAL_PROTECTION;
    default:
        return DAT_DTO_ERR_TRANSPORT;
    }
}

/*
 * The SCIF calls of one job, segment by segment until j.len bytes moved
 * (as iov_plan cuts them; no plan built, so a worker allocates nothing): a
 * segment with a window moves by scif_readfrom/scif_writeto between the
 * two windows, one without by scif_vreadfrom/scif_vwriteto (local_windows
 * in dapl_dto.cpp), with SCIF_RMA_USECACHE if vcache: an LMR's pages are
 * the consumer's registered memory, which the next DTOs use again, and
 * the module drops a cached range the process unmaps or remaps.
 */
static DAT_DTO_COMPLETION_STATUS rdma_run(scif_epd_t epd, const RdmaJob &j, bool vcache) {
    const int vflags = SCIF_RMA_SYNC | (vcache ? SCIF_RMA_USECACHE : 0);
    if (j.roff < 0 && j.len)
        return DAT_DTO_ERR_REMOTE_ACCESS;
    const ScifOps &o = scif_ops();
    int64_t roff = j.roff;
    uint64_t left = j.len;
    for (size_t i = 0; i < j.segs.size() && left; i++) {
        const size_t len = (size_t)std::min<uint64_t>(j.segs[i].len, left);
        if (!len)
            continue;
        int r;
        if (j.loffs[i] >= 0) {
            r = j.is_read ? o.readfrom(epd, j.loffs[i], len, roff, SCIF_RMA_SYNC)
                          : o.writeto(epd, j.loffs[i], len, roff, SCIF_RMA_SYNC);
        } else {
            void *addr = reinterpret_cast<void *>(j.segs[i].va);
            r = j.is_read ? o.vreadfrom(epd, addr, len, roff, vflags)
                          : o.vwriteto(epd, addr, len, roff, vflags);
        }
        if (r < 0)
            return rma_status(errno);
        roff += (int64_t)len;
        left -= len;
    }
    return DAT_DTO_SUCCESS;
}

static void complete_job(const RdmaJob &j, DAT_DTO_COMPLETION_STATUS st) {
    complete_req(j.ep, j.cookie, st, st == DAT_DTO_SUCCESS ? j.len : 0,
                 j.is_read ? DAT_DTO_RDMA_READ : DAT_DTO_RDMA_WRITE, j.flags, true);
}

/* Room in v for one more element, growing it geometrically (may throw). */
template <typename T> static void room_for_one(std::vector<T> *v) {
    if (v->size() == v->capacity())
        v->reserve(std::max<size_t>(8, 2 * v->size()));
}

/* A completed job back to its EP (Ia::mu; free_jobs has room for it). */
void rdma_give_back(std::shared_ptr<RdmaJob> j) {
    Ep *ep = j->ep;
    ep->free_jobs.push_back(std::move(j));
}

/* ---- scheduling (RdmaEngine::mu) ------------------------------------------ */

/*
 * The first job of c that may start now (steps 2 and 3), or nullptr.  A
 * read joins running reads only while their bytes and its own stay within
 * kRdmaSideBySide: a call that large keeps the link busy by itself (the
 * module has several RDMA operations of one call in flight), and more of
 * them side by side only compete for it.
 */
static RdmaJob *startable(Conn &c) {
    bool unfinished = false, only_reads = true;
    uint64_t bytes = 0;
    for (const std::shared_ptr<RdmaJob> &j : c.jobs) {
        switch (j->state) {
        case RdmaJob::kDone:
        case RdmaJob::kCancelled:
            continue;
        case RdmaJob::kRunning:
            unfinished = true;
            only_reads = only_reads && j->is_read && !j->barrier;
            bytes += j->len;
            continue;
        case RdmaJob::kQueued:
            if (!unfinished || (only_reads && j->is_read && !j->barrier &&
                                j->len <= kRdmaSideBySide - std::min(bytes, kRdmaSideBySide)))
                return j.get();
            return nullptr;
        }
    }
    return nullptr;
}

/* A job to run, its connection moved to the back (round robin), or nullptr. */
static RdmaJob *pick(RdmaEngine &e, std::shared_ptr<Conn> *conn) {
    for (auto it = e.conns.begin(); it != e.conns.end(); ++it) {
        if (RdmaJob *j = startable(**it)) {
            *conn = *it;
            std::rotate(it, it + 1, e.conns.end());
            return j;
        }
    }
    return nullptr;
}

/* Whether any connection has a job that may start now. */
static bool any_startable(RdmaEngine &e) {
    for (const std::shared_ptr<Conn> &c : e.conns)
        if (startable(*c))
            return true;
    return false;
}

/* c has no jobs left: off the engine's list. */
static void conn_idle(RdmaEngine &e, const Conn *c) {
    e.conns.erase(std::remove_if(e.conns.begin(), e.conns.end(),
                                 [c](const std::shared_ptr<Conn> &x) { return x.get() == c; }),
                  e.conns.end());
}

/*
 * Complete the finished jobs at c's head one by one, in post order (step
 * 1), each taken off under RdmaEngine::mu and given back to its EP after
 * its completion.  Ia::mu is held throughout, so no other completer
 * reorders them; one at a time, so that allocating nothing, and a
 * completion that ends the connection (conn_dto_done, which may drain
 * c) finds no job of c taken and not completed.
 */
static void complete_head(Ia *ia, const std::shared_ptr<Conn> &c) {
    RdmaEngine &e = ia->rdma;
    for (;;) {
        std::shared_ptr<RdmaJob> j;
        {
            std::lock_guard<std::mutex> el(e.mu);
            if (c->jobs.empty() || c->jobs.front()->state != RdmaJob::kDone)
                return;
            j = std::move(c->jobs.front());
            c->jobs.erase(c->jobs.begin());
            c->completed++;
            if (c->jobs.empty())
                conn_idle(e, c.get());
            e.idle_cv.notify_all();
        }
        complete_job(*j, j->st);
        conn_dto_done(j->ep, c);
        rdma_give_back(std::move(j));
    }
}

/* ---- the workers ------------------------------------------------------------ */

/* Complete what finished at c's head (takes Ia::mu). */
static void complete_finished(Ia *ia, const std::shared_ptr<Conn> &c) {
    std::lock_guard<std::mutex> lk(ia->mu);
    complete_head(ia, c);
}

/*
 * Wake-ups: a worker is woken only for a job that may start, one worker
 * per job.  A post wakes one when its own job may start at once; a worker
 * that takes a job wakes one more when another may start too (reads side
 * by side), which passes it on; a worker that finished a job completes it
 * and then looks for the next itself, which is what a job held back
 * behind it waits for.  So a chain of writes runs on one worker with no
 * wake-up at all, where waking every idle worker at each post and each
 * completion had them take the CPU that Soft-RoCE's sender needs on a
 * one-vCPU host, only to find nothing to start (idle_wakeups).
 */
static void worker(Ia *ia) {
    RdmaEngine &e = ia->rdma;
    std::unique_lock<std::mutex> lk(e.mu);
    bool woken = false;
    while (!e.stop) {
        std::shared_ptr<Conn> c;
        RdmaJob *j = pick(e, &c);
        if (!j) {
            if (woken)
                e.idle_wakeups++;
            e.waiting++;
            e.work_cv.wait(lk);
            e.waiting--;
            woken = true;
            continue;
        }
        woken = false;
        j->state = RdmaJob::kRunning;
        c->running++;
        if (any_startable(e))
            e.work_cv.notify_one();
        lk.unlock();
        DAT_DTO_COMPLETION_STATUS st = rdma_run(c->epd(), *j, ia->rdma.vcache);
        lk.lock();
        j->st = st;
        j->state = RdmaJob::kDone;
        c->running--;
        e.idle_cv.notify_all();
        lk.unlock();
        complete_finished(ia, c);
        lk.lock();
    }
}

/* Start the workers once (mu); false when none could start. */
static bool workers_up(Ia *ia) {
    RdmaEngine &e = ia->rdma;
    if (!e.workers.empty())
        return true;
    e.nworkers = rdma_workers_from_env(std::getenv("DAPLSCIF_RDMA_WORKERS"));
    for (unsigned i = 0; i < e.nworkers; i++) {
        try {
            e.workers.emplace_back(worker, ia);
        } catch (...) {
            break; /* fewer workers, or none: see rdma_post */
        }
    }
    return !e.workers.empty();
}

/* ---- entry points (dapl_scif.h) -------------------------------------------- */

std::shared_ptr<RdmaJob> rdma_job(Ep *ep, size_t maxiov) {
    std::shared_ptr<RdmaJob> j;
    if (ep->free_jobs.empty()) {
        j = std::make_shared<RdmaJob>();
        j->segs.reserve(maxiov);
        j->loffs.reserve(maxiov);
        if (ep->free_jobs.capacity() <= ep->njobs) /* room to give every job back */
            ep->free_jobs.reserve(std::max<size_t>(8, 2 * ep->njobs));
        ep->njobs++;
    } else {
        j = std::move(ep->free_jobs.back());
        ep->free_jobs.pop_back();
        std::vector<Seg> segs = std::move(j->segs);
        std::vector<int64_t> loffs = std::move(j->loffs);
        *j = RdmaJob{};
        j->segs = std::move(segs); /* cleared by the post; their room kept */
        j->loffs = std::move(loffs);
        if (j->segs.capacity() < maxiov) { /* the EP's limit was raised */
            j->segs.reserve(maxiov);
            j->loffs.reserve(maxiov);
        }
    }
    j->ep = ep;
    return j;
}

void rdma_make_room(Ia *ia, Conn *c) {
    RdmaEngine &e = ia->rdma;
    std::lock_guard<std::mutex> el(e.mu);
    room_for_one(&c->jobs);
    room_for_one(&e.conns);
}

void rdma_post(Ia *ia, const std::shared_ptr<Conn> &c, std::shared_ptr<RdmaJob> job,
               std::unique_lock<std::mutex> &lk) {
    RdmaEngine &e = ia->rdma;
    if (workers_up(ia)) {
        std::lock_guard<std::mutex> el(e.mu);
        if (c->jobs.empty())
            e.conns.push_back(c);
        const RdmaJob *mine = job.get();
        c->jobs.push_back(std::move(job));
        c->posted++;
        /* one held back starts when what holds it finishes (worker) */
        if (startable(*c) == mine)
            e.work_cv.notify_one();
        return;
    }
    /* No workers: in the caller, Ia::mu dropped for the SCIF calls. */
    DAT_DTO_COMPLETION_STATUS st = job->st;
    if (job->state != RdmaJob::kDone) {
        lk.unlock();
        st = rdma_run(c->epd(), *job, ia->rdma.vcache);
        lk.lock();
    }
    complete_job(*job, st);
    conn_dto_done(job->ep, c);
    rdma_give_back(std::move(job));
}

void rdma_drain(Ep *ep, bool report) {
    const std::shared_ptr<Conn> c = ep->conn;
    if (!c)
        return;
    RdmaEngine &e = ep->ia->rdma;
    std::vector<std::shared_ptr<RdmaJob>> jobs;
    {
        std::unique_lock<std::mutex> el(e.mu);
        if (c->jobs.empty())
            return;
        for (std::shared_ptr<RdmaJob> &j : c->jobs)
            if (j->state == RdmaJob::kQueued)
                j->state = RdmaJob::kCancelled;
        /* Workers finish a job without Ia::mu: this wait ends. */
        e.idle_cv.wait(el, [&] { return c->running == 0; });
        jobs.swap(c->jobs); /* allocates nothing: c's room goes with them */
        c->completed += jobs.size();
        conn_idle(e, c.get());
        e.idle_cv.notify_all();
    }
    for (const std::shared_ptr<RdmaJob> &j : jobs) {
        c->dtos--; /* the EP is letting go: no loss to report for it */
        if (report)
            complete_job(*j, j->state == RdmaJob::kDone ? j->st : DAT_DTO_ERR_FLUSHED);
        else
            ep->req_credit->fetch_sub(1);
        rdma_give_back(j);
    }
}

void rdma_flush_queued(Ia *ia, const std::shared_ptr<Conn> &c) {
    RdmaEngine &e = ia->rdma;
    {
        std::lock_guard<std::mutex> el(e.mu);
        for (std::shared_ptr<RdmaJob> &j : c->jobs) {
            if (j->state == RdmaJob::kQueued) {
                j->state = RdmaJob::kDone;
                j->st = DAT_DTO_ERR_FLUSHED;
            }
        }
        /* With one running, its worker completes the rest after it. */
        if (c->running != 0)
            return;
    }
    complete_head(ia, c);
}

void rdma_wait_posted(Ia *ia, Conn *c) {
    RdmaEngine &e = ia->rdma;
    std::unique_lock<std::mutex> el(e.mu);
    const uint64_t upto = c->posted;
    e.idle_cv.wait(el, [&] { return c->completed >= upto; });
}

bool rdma_busy(Ia *ia, Conn *c) {
    std::lock_guard<std::mutex> el(ia->rdma.mu);
    return !c->jobs.empty();
}

void rdma_stop(Ia *ia) {
    RdmaEngine &e = ia->rdma;
    {
        std::lock_guard<std::mutex> el(e.mu);
        e.stop = true;
        e.work_cv.notify_all();
    }
    for (std::thread &t : e.workers)
        t.join();
    e.workers.clear();
}

} /* namespace daplscif */
