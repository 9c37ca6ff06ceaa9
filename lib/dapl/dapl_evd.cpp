// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_evd.cpp - events: posting to an EVD (and triggering its CNO), the
 * CNO and EVD entry points.  The queue itself is dapl_evq.h.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace daplscif {

/* ---- events ----------------------------------------------------------- */

void Cno::trigger(Evd *evd) {
    std::lock_guard<std::mutex> lk(mu);
    triggered.push_back(evd);
    if (pipe_wr >= 0) {
        char b = 1;
        ssize_t r = write(pipe_wr, &b, 1);
        (void)r;
    }
    cv.notify_all();
}

void post_async_error(Ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE h, DAT_COUNT reason) {
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.event_number = num;
    ev.event_data.asynch_error_event_data.dat_handle = h;
    ev.event_data.asynch_error_event_data.reason = reason;
    evd_post(ia->async_evd, ev);
}

/*
 * evd dropped an event, its queue full: DAT_ASYNC_ERROR_EVD_OVERFLOW on
 * the IA's async EVD, naming evd, as Intel's provider reports it.  An
 * async EVD that overflows itself has nowhere to report to; what it
 * drops is only counted (EventQueue::dropped) and logged.
 */
static void post_overflow(Evd *evd) {
    Evd *async = evd->ia ? evd->ia->async_evd : nullptr;
    DSC_DBG("evd %p: full (qlen %d), events dropped, %s", (void *)evd, (int)evd->q.qlen(),
            async && async != evd ? "reported on the async EVD" : "nowhere to report it");
    if (async && async != evd)
        post_async_error(evd->ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd, DAT_EVD_OVERFLOW_ERROR);
}

void evd_post(Evd *evd, const DAT_EVENT &ev_in, bool notify, Credit credit) {
    if (!evd) {
        if (credit)
            credit->fetch_sub(1);
        return;
    }
    DAT_EVENT ev = ev_in;
    ev.evd_handle = evd;
    DSC_DBG("evd %p: event 0x%x%s", (void *)evd, (unsigned)ev.event_number,
            notify ? "" : " (unsignalled)");
    EventQueue::Pushed r = evd->q.push(ev, notify, std::move(credit));
    if (r.trigger && evd->cno && evd->enabled)
        evd->cno->trigger(evd);
    if (r.overflow)
        post_overflow(evd);
}

void post_conn_event(Ep *ep, DAT_EVENT_NUMBER num, const void *pdata, DAT_COUNT plen) {
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.event_number = num;
    ev.event_data.connect_event_data.ep_handle = ep;
    ev.event_data.connect_event_data.private_data_size = plen;
    ev.event_data.connect_event_data.private_data = const_cast<void *>(pdata);
    evd_post(ep->conn_evd, ev);
}

void post_dto(Ep *ep, Evd *evd, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS st, uint64_t len,
              DAT_DTOS op, bool notify, Credit credit) {
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_DTO_COMPLETION_EVENT;
    auto &d = ev.event_data.dto_completion_event_data;
    d.ep_handle = ep;
    d.user_cookie = cookie;
    d.status = st;
    d.transfered_length = (DAT_SEG_LENGTH)len;
    d.operation = op;
    d.rmr_context = 0;
    evd_post(evd, ev, notify, std::move(credit));
}

/* ---- CNO ------------------------------------------------------------------ */

static DAT_RETURN cno_make(Ia *ia, DAT_OS_WAIT_PROXY_AGENT agent, bool with_fd, DAT_FD *fd,
                           Cno **out) {
    auto c = std::make_unique<Cno>();
    c->agent = agent;
    if (with_fd) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
            return dat_err(DAT_INSUFFICIENT_RESOURCES);
        c->pipe_rd = p[0];
        c->pipe_wr = p[1];
        *fd = p[0];
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    obj_init(c.get(), ia, DAT_HANDLE_TYPE_CNO);
    *out = c.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER);
    Cno *c;
    DAT_RETURN r = cno_make(ia, agent, false, nullptr, &c);
    if (r == DAT_SUCCESS)
        *out = c;
    return r;
}

DAT_RETURN DAT_API cno_fd_create(DAT_IA_HANDLE h, DAT_FD *fd, DAT_CNO_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (!out || !fd)
        return dat_err(DAT_INVALID_PARAMETER);
    Cno *c;
    DAT_RETURN r = cno_make(ia, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr}, true, fd, &c);
    if (r == DAT_SUCCESS)
        *out = c;
    return r;
}

DAT_RETURN DAT_API cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) {
    Cno *c;
    if (DAT_RETURN err = lookup(h, &c))
        return err;
    std::lock_guard<std::mutex> lk(c->mu);
    c->agent = agent;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK, DAT_CNO_PARAM *p) {
    Cno *c;
    if (DAT_RETURN err = lookup(h, &c))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(c->mu);
    std::memset(p, 0, sizeof(*p));
    p->ia_handle = c->ia;
    if (c->pipe_rd >= 0) {
        p->proxy_type = DAT_PROXY_TYPE_FD;
        p->proxy.fd = c->pipe_rd;
    } else {
        p->proxy_type = c->agent.proxy_agent_func ? DAT_PROXY_TYPE_AGENT : DAT_PROXY_TYPE_NONE;
        p->proxy.agent = c->agent;
    }
    return DAT_SUCCESS;
}

void cno_destroy(Cno *c) {
    {
        std::unique_lock<std::mutex> lk(c->mu);
        c->dying = true;
        c->cv.notify_all();
        c->cv.wait(lk, [&] { return c->waiters == 0; });
    }
    if (c->pipe_rd >= 0)
        close(c->pipe_rd);
    if (c->pipe_wr >= 0)
        close(c->pipe_wr);
    delete c;
}

DAT_RETURN DAT_API cno_free(DAT_CNO_HANDLE h) {
    Cno *c;
    if (DAT_RETURN err = lookup(h, &c))
        return err;
    Ia *ia = c->ia;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        for (Obj *o : ia->objs)
            if (o->type == DAT_HANDLE_TYPE_EVD && static_cast<Evd *>(o)->cno == c)
                return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
        obj_unlink(c);
    }
    cno_destroy(c);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd) {
    Cno *c;
    if (DAT_RETURN err = lookup(h, &c))
        return err;
    if (!evd)
        return dat_err(DAT_INVALID_PARAMETER);
    std::unique_lock<std::mutex> lk(c->mu);
    c->waiters++;
    auto ready = [&] { return c->dying || !c->triggered.empty(); };
    if (timeout == DAT_TIMEOUT_INFINITE)
        c->cv.wait(lk, ready);
    else
        c->cv.wait_for(lk, std::chrono::microseconds(timeout), ready);
    c->waiters--;
    if (c->dying) {
        c->cv.notify_all();
        return dat_err(DAT_ABORT);
    }
    if (c->triggered.empty())
        return dat_err(DAT_TIMEOUT_EXPIRED);
    *evd = c->triggered.front();
    c->triggered.pop_front();
    if (c->pipe_rd >= 0) {
        char b;
        ssize_t r = read(c->pipe_rd, &b, 1);
        (void)r;
    }
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API cno_trigger(DAT_CNO_HANDLE h, DAT_EVD_HANDLE *evd) {
    Cno *c;
    if (DAT_RETURN err = lookup(h, &c))
        return err;
    std::lock_guard<std::mutex> lk(c->mu);
    if (c->triggered.empty())
        return dat_err(DAT_QUEUE_EMPTY);
    if (evd)
        *evd = c->triggered.front();
    c->triggered.pop_front();
    if (c->pipe_rd >= 0) {
        char b;
        ssize_t r = read(c->pipe_rd, &b, 1);
        (void)r;
    }
    return DAT_SUCCESS;
}

/* ---- EVD ------------------------------------------------------------------ */

DAT_RETURN evd_create_locked(Ia *ia, DAT_COUNT qlen, Cno *cno, DAT_EVD_FLAGS flags, Evd **out) {
    if (qlen <= 0 || qlen > kMaxEvdQlen)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto e = std::make_unique<Evd>(qlen);
    e->flags = flags;
    e->cno = cno;
    obj_init(e.get(), ia, DAT_HANDLE_TYPE_EVD);
    *out = e.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cnoh,
                              DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    Cno *cno = nullptr;
    if (cnoh) {
        if (DAT_RETURN err = lookup(cnoh, &cno))
            return err;
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    Evd *e;
    DAT_RETURN r = evd_create_locked(ia, qlen, cno, flags, &e);
    if (r == DAT_SUCCESS)
        *out = e;
    return r;
}

DAT_RETURN DAT_API evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK, DAT_EVD_PARAM *p) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(e->ia->mu);
    p->ia_handle = e->ia;
    p->evd_qlen = e->q.qlen();
    p->evd_state =
        (DAT_EVD_STATE)((e->enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
                        (e->q.unwaitable() ? DAT_EVD_STATE_UNWAITABLE : DAT_EVD_STATE_WAITABLE));
    p->cno_handle = e->cno;
    p->evd_flags = e->flags;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE ch) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    Cno *c = nullptr;
    if (ch) {
        if (DAT_RETURN err = lookup(ch, &c))
            return err;
    }
    std::lock_guard<std::mutex> lk(e->ia->mu);
    e->cno = c;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_enable(DAT_EVD_HANDLE h) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    std::lock_guard<std::mutex> lk(e->ia->mu);
    e->enabled = true;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_disable(DAT_EVD_HANDLE h) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    std::lock_guard<std::mutex> lk(e->ia->mu);
    e->enabled = false;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                            DAT_EVENT *ev, DAT_COUNT *nmore) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    if (!ev)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    DSC_DBG("evd %p: wait (timeout %u us, threshold %d)", (void *)e, (unsigned)timeout,
            (int)threshold);
    DAT_RETURN r = e->q.wait(timeout, threshold, ev, nmore);
    DSC_DBG("evd %p: wait returns 0x%x, event 0x%x", (void *)e, (unsigned)r,
            r == DAT_SUCCESS ? (unsigned)ev->event_number : 0u);
    return r;
}

DAT_RETURN DAT_API evd_set_unwaitable(DAT_EVD_HANDLE h) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    e->q.set_unwaitable(true);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_clear_unwaitable(DAT_EVD_HANDLE h) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    e->q.set_unwaitable(false);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    return e->q.resize(qlen);
}

DAT_RETURN DAT_API evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *ev) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    if (!ev || ev->event_number != DAT_SOFTWARE_EVENT)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    std::lock_guard<std::mutex> lk(e->ia->mu);
    /* The consumer's own events never overflow its queue (the DAT spec). */
    DAT_EVENT own = *ev;
    own.evd_handle = e;
    EventQueue::Pushed r = e->q.push_if_room(own);
    if (!r.queued)
        return dat_err(DAT_QUEUE_FULL);
    if (r.trigger && e->cno && e->enabled)
        e->cno->trigger(e);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *ev) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    if (!ev)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    return e->q.dequeue(ev);
}

void evd_destroy(Evd *e) {
    e->q.abort();
    delete e;
}

DAT_RETURN DAT_API evd_free(DAT_EVD_HANDLE h) {
    Evd *e;
    if (DAT_RETURN err = lookup(h, &e))
        return err;
    Ia *ia = e->ia;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        bool own = ia->own_async && ia->async_evd == e;
        if (e->users > (own ? 1 : 0) || own)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
        if (ia->async_evd == e) {
            ia->async_evd = nullptr;
        }
        obj_unlink(e);
    }
    evd_destroy(e);
    return DAT_SUCCESS;
}

} /* namespace daplscif */
