// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_progress.cpp - the progress engine: one thread per IA polls the
 * listening and connected SCIF endpoints, accepts connections, reads
 * framed messages without blocking and dispatches them, and runs the
 * connect deadlines.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <climits>
#include <cstring>

#include <poll.h>
#include <unistd.h>

namespace daplscif {

/* ---- progress engine ------------------------------------------------------ */

void Ia::sync_progress(uint64_t since) {
    wake();
    std::unique_lock<std::mutex> lk(mu);
    loop_cv.wait(lk, [&] { return loops > since || stop; });
}

/* A passive connection sent CONN_REQ: raise the request event (mu). */
static void got_conn_req(Ia *ia, const std::shared_ptr<Conn> &c, const MsgHdr &h) {
    ConnBody b;
    std::vector<uint8_t> pdata;
    std::vector<MrInfo> mrs;
    if (c->got_req || c->owner || !parse_body(c->rbuf, h.len, &b, &pdata, &mrs) || !c->sp ||
        !sp_alive(ia, c->sp)) {
        conn_lost(ia, c, false);
        return;
    }
    c->got_req = true;
    c->knows_accepting = (h.flags & MSGF_KNOWS_ACCEPTING) != 0;
    DSC_DBG("epd %d: connection request on sp %p (qual %llu), evd %p", c->epd(), (void *)c->sp,
            (unsigned long long)c->sp->qual, (void *)c->sp->evd);
    peer_add(c.get(), mrs.data(), mrs.size());
    Sp *sp = c->sp;
    auto cr = std::make_unique<Cr>();
    cr->conn = c;
    cr->sp = sp;
    cr->pdata = std::move(pdata);
    node_to_name(c->peer_id.node, ia->host, &cr->remote_addr);
    cr->remote_port_qual = port_to_qual(c->peer_id.port);
    if (sp->is_rsp && sp->ep && ep_alive(ia, sp->ep)) {
        cr->ep = sp->ep;
        sp->ep->state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
    } else if (sp->flags == DAT_PSP_PROVIDER_FLAG) {
        auto ep = std::make_unique<Ep>();
        default_attr(&ep->attr);
        ep->provider_made = true;
        ep->state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
        obj_init(ep.get(), ia, DAT_HANDLE_TYPE_EP);
        ia->eps.push_back(ep.get());
        cr->ep = ep.release();
    }
    obj_init(cr.get(), ia, DAT_HANDLE_TYPE_CR);
    c->cr = cr.get();
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_CONNECTION_REQUEST_EVENT;
    auto &d = ev.event_data.cr_arrival_event_data;
    if (sp->is_rsp)
        d.sp_handle.rsp_handle = sp;
    else
        d.sp_handle.psp_handle = sp;
    d.local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ia->addr);
    d.conn_qual = sp->qual;
    d.cr_handle = cr.release();
    d.truncate_flag = DAT_FALSE;
    evd_post(sp->evd, ev);
}

static void handle_msg(Ia *ia, const std::shared_ptr<Conn> &c, const MsgHdr &h) {
    std::lock_guard<std::mutex> lk(ia->mu);
    if (c->dead)
        return;
    Ep *ep = c->owner;
    DSC_DBG("epd %d: got type %u len %u, ep %p state %d", c->epd(), h.type, h.len, (void *)ep,
            ep ? (int)ep->state : -1);
    switch (h.type) {
    case MSG_CONN_REQ:
        got_conn_req(ia, c, h);
        break;
    case MSG_CONN_ACCEPTING:
        /*
         * The peer accepted and is registering its windows: the connect
         * timeout, a bound on the wait for the peer's answer, is over.
         * A peer that dies meanwhile still ends the connect.
         */
        if (!ep || ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING || h.len) {
            conn_lost(ia, c, false);
            break;
        }
        ep->has_deadline = false;
        break;
    case MSG_CONN_ACCEPT:
    case MSG_CONN_REJECT: {
        ConnBody b;
        std::vector<uint8_t> pdata;
        std::vector<MrInfo> mrs;
        if (!ep || ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
            !parse_body(c->rbuf, h.len, &b, &pdata, &mrs)) {
            conn_lost(ia, c, false);
            break;
        }
        ep->peer_pdata = std::move(pdata);
        ep->has_deadline = false;
        const void *pd = ep->peer_pdata.empty() ? nullptr : ep->peer_pdata.data();
        DAT_COUNT pl = (DAT_COUNT)ep->peer_pdata.size();
        if (h.type == MSG_CONN_ACCEPT) {
            peer_add(c.get(), mrs.data(), mrs.size());
            ep->state = DAT_EP_STATE_CONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, pd, pl);
        } else {
            ep->state = DAT_EP_STATE_DISCONNECTED;
            c->dead = true;
            ep_drop_conn(ep);
            post_conn_event(ep, DAT_CONNECTION_EVENT_PEER_REJECTED, pd, pl);
        }
        break;
    }
    case MSG_SEND:
        if (ep &&
            (ep->state == DAT_EP_STATE_CONNECTED || ep->state == DAT_EP_STATE_DISCONNECT_PENDING))
            deliver_send(ep, c->rbuf.data(), h.len, h.flags);
        break;
    case MSG_MR_ADD:
        if (h.len % sizeof(MrInfo) == 0) {
            std::vector<MrInfo> m(h.len / sizeof(MrInfo));
            if (!m.empty())
                std::memcpy(m.data(), c->rbuf.data(), h.len);
            peer_add(c.get(), m.data(), m.size());
        }
        break;
    case MSG_MR_DEL:
        c->peer.erase((uint32_t)h.arg);
        break;
    case MSG_DISCONNECT:
        conn_lost(ia, c, true);
        break;
    default:
        conn_lost(ia, c, false);
        break;
    }
}

/*
 * Receive without blocking into [p, p + n): bytes read, 0 when nothing is
 * there now, -1 when the connection is gone (errno set).
 */
static ssize_t recv_some(scif_epd_t epd, void *p, size_t n) {
    for (;;) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int r = scif_ops().recv(epd, p, chunk, 0);
        if (r > 0)
            return r;
        if (r == 0) {
            errno = ECONNRESET;
            return -1;
        }
        if (errno == EINTR)
            continue;
        return errno == EAGAIN ? 0 : -1;
    }
}

/* Largest message body accepted from a peer. */
constexpr uint32_t kMaxBody = kMaxMessage + (1u << 20);

/*
 * Read and handle what a connection has for us (no lock held).  Reads
 * never block: what has arrived of a message stays in the Conn until the
 * rest comes, so one slow or stopped peer cannot hold up the others, and
 * IA close (which joins this thread) cannot hang on a peer.
 */
static void conn_ready(Ia *ia, const std::shared_ptr<Conn> &c) {
    scif_epd_t epd = c->epd();
    for (int k = 0; k < 64; k++) {
        ssize_t r;
        bool bad = false;
        if (c->rhdr_got < sizeof(MsgHdr)) {
            r = recv_some(epd, reinterpret_cast<uint8_t *>(&c->rhdr) + c->rhdr_got,
                          sizeof(MsgHdr) - c->rhdr_got);
            if (r == 0)
                return;
            bad = r < 0;
            if (!bad) {
                c->rhdr_got += (size_t)r;
                if (c->rhdr_got < sizeof(MsgHdr))
                    return;
                bad = c->rhdr.magic != kMagic || c->rhdr.len > kMaxBody;
                if (bad)
                    errno = EPROTO;
                else
                    c->rbuf.resize(c->rhdr.len);
                c->rbody_got = 0;
            }
        }
        if (!bad && c->rbody_got < c->rhdr.len) {
            r = recv_some(epd, c->rbuf.data() + c->rbody_got, c->rhdr.len - c->rbody_got);
            if (r == 0)
                return;
            bad = r < 0;
            if (!bad) {
                c->rbody_got += (size_t)r;
                if (c->rbody_got < c->rhdr.len)
                    return;
            }
        }
        if (bad) {
            DSC_DBG("epd %d: receive failed: %s", epd, std::strerror(errno));
            std::lock_guard<std::mutex> lk(ia->mu);
            conn_lost(ia, c, false);
            return;
        }
        MsgHdr h = c->rhdr;
        c->rhdr_got = 0;
        c->rbody_got = 0;
        handle_msg(ia, c, h);
        std::lock_guard<std::mutex> lk(ia->mu);
        if (c->dead)
            return;
    }
}

static void accept_all(Ia *ia, Sp *sp, const std::shared_ptr<ScifEp> &lep) {
    for (;;) {
        scif_portID peer{};
        scif_epd_t ne = SCIF_OPEN_FAILED;
        if (scif_ops().accept(lep->epd, &peer, &ne, 0) < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK)
                return;
            DSC_DBG("sp %p: accept failed: %s", (void *)sp, std::strerror(e));
            std::lock_guard<std::mutex> lk(ia->mu);
            if (!sp_alive(ia, sp) || sp->lep != lep)
                return;
            if (e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS) {
                /* The request stays queued: retry later. */
                sp->backoff = true;
                sp->retry_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
            } else {
                sp->listen_failed = true;
            }
            return;
        }
        auto c = std::make_shared<Conn>(ne);
        c->peer_id = peer;
        DSC_DBG("sp %p: accepted epd %d from %u:%u", (void *)sp, ne, peer.node, peer.port);
        std::lock_guard<std::mutex> lk(ia->mu);
        if (!sp_alive(ia, sp) || sp->lep != lep)
            return; /* c closes the endpoint */
        c->sp = sp;
        ia->pending.push_back(c);
    }
}

/* One entry of the poll set: a listener (sp, lep) or a connection (conn). */
struct PollItem {
    Sp *sp;
    std::shared_ptr<ScifEp> lep;
    std::shared_ptr<Conn> conn;
};

/*
 * Build the poll set (mu): the wake descriptor first, then the listeners
 * that have not failed and are not backing off, the passive connections
 * without an EP yet and the connections of EPs.  Returns the poll timeout
 * in ms, -1 for none: until the earliest end of a listener's backoff or of
 * an EP's connect deadline.
 */
static int build_poll_set(Ia *ia, std::vector<pollfd> *fds, std::vector<PollItem> *items) {
    int timeout = -1;
    fds->clear();
    items->clear();
    fds->push_back({ia->wake_fd, POLLIN, 0});
    items->push_back({nullptr, nullptr, nullptr});
    auto now = std::chrono::steady_clock::now();
    auto until = [&](std::chrono::steady_clock::time_point t) {
        long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
        if (ms < 0)
            ms = 0;
        if (timeout < 0 || ms < timeout)
            timeout = (int)ms;
    };
    for (Sp *sp : ia->sps) {
        if (sp->listen_failed)
            continue;
        if (sp->backoff) {
            if (now < sp->retry_at) {
                until(sp->retry_at);
                continue;
            }
            sp->backoff = false;
        }
        fds->push_back({scif_ops().get_fd(sp->lep->epd), POLLIN, 0});
        items->push_back({sp, sp->lep, nullptr});
    }
    for (auto &c : ia->pending) {
        if (c->dead)
            continue;
        fds->push_back({scif_ops().get_fd(c->epd()), POLLIN, 0});
        items->push_back({nullptr, nullptr, c});
    }
    for (Ep *ep : ia->eps) {
        if (!ep->conn || ep->conn->dead)
            continue;
        fds->push_back({scif_ops().get_fd(ep->conn->epd()), POLLIN, 0});
        items->push_back({nullptr, nullptr, ep->conn});
        if (ep->has_deadline)
            until(ep->deadline);
    }
    return timeout;
}

/* Handle what poll reported ready (no lock held). */
static void dispatch(Ia *ia, const std::vector<pollfd> &fds, const std::vector<PollItem> &items) {
    if (fds[0].revents & POLLIN) {
        uint64_t v;
        ssize_t r = read(ia->wake_fd, &v, sizeof(v));
        (void)r;
    }
    for (size_t i = 1; i < fds.size(); i++) {
        if (!fds[i].revents)
            continue;
        if (items[i].lep)
            accept_all(ia, items[i].sp, items[i].lep);
        else
            conn_ready(ia, items[i].conn);
    }
}

/* Time out the active connects past their deadline (mu). */
static void expire_deadlines(Ia *ia) {
    auto now = std::chrono::steady_clock::now();
    for (Ep *ep : ia->eps) {
        if (!ep->has_deadline || ep->deadline > now ||
            ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
            continue;
        ep->state = DAT_EP_STATE_DISCONNECTED;
        ep_drop_conn(ep);
        post_conn_event(ep, DAT_CONNECTION_EVENT_TIMED_OUT);
    }
}

void Ia::run() {
    std::vector<pollfd> fds;
    std::vector<PollItem> items;
    for (;;) {
        int timeout;
        {
            std::lock_guard<std::mutex> lk(mu);
            loops++;
            loop_cv.notify_all();
            if (stop)
                return;
            timeout = build_poll_set(this, &fds, &items);
        }
        int n = poll(fds.data(), fds.size(), timeout);
        if (n < 0 && errno != EINTR)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (n > 0)
            dispatch(this, fds, items);
        std::lock_guard<std::mutex> lk(mu);
        expire_deadlines(this);
    }
}

} /* namespace daplscif */
