// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_cm.cpp - connection management.  A connection is one SCIF
 * connection.  The active side connects to the port derived from the
 * connection qualifier and sends CONN_REQ (private data and the regions it
 * offers); the passive side's progress thread accepts, reads CONN_REQ and
 * raises a connection request event; accept and reject answer with
 * CONN_ACCEPT / CONN_REJECT.  Here: ep_connect, ep_dup_connect, PSP/RSP,
 * CR accept/reject, and a lost connection (ep_disconnect is in dapl_ep.cpp).
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace daplscif {

/* The connection of ep ended: the events its state calls for (mu). */
static void ep_conn_lost(Ep *ep, bool graceful) {
    switch (ep->state) {
    case DAT_EP_STATE_DISCONNECT_PENDING:
        /*
         * We asked for the disconnect and already told the peer: the
         * peer closing its end now (typically because it read our
         * DISCONNECT) completes that disconnect.  The consumer waits
         * for DISCONNECTED, never BROKEN (dapltest's server gave up
         * on a BROKEN here and left every later client hanging).
         */
        graceful = true;
        [[fallthrough]];
    case DAT_EP_STATE_CONNECTED:
        ep->state = DAT_EP_STATE_DISCONNECTED;
        post_conn_event(ep,
                        graceful ? DAT_CONNECTION_EVENT_DISCONNECTED : DAT_CONNECTION_EVENT_BROKEN);
        ep_flush(ep);
        srq_ep_done(ep);
        break;
    case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
        ep->state = DAT_EP_STATE_DISCONNECTED;
        post_conn_event(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
        break;
    default:
        break;
    }
    ep_drop_conn(ep);
}

void conn_lost(Ia *ia, const std::shared_ptr<Conn> &c, bool graceful) {
    if (c->dead)
        return;
    c->dead = true;
    ia->pending.remove(c);
    Ep *ep = c->owner;
    DSC_DBG("epd %d: connection lost (%s), ep %p state %d%s", c->epd(),
            graceful ? "graceful" : "broken", (void *)ep, ep ? (int)ep->state : -1,
            c->accepting ? ", accept pending" : "");
    if (!ep || ep->conn != c)
        return;
    if (c->accepting || c->dtos) {
        /*
         * dat_cr_accept is still sending ACCEPT: the consumer must
         * see ESTABLISHED (or ACCEPT_COMPLETION_ERROR) first, so
         * cr_accept reports the loss once the send returned.  A
         * request DTO on its way (the send the peer may be answering
         * with this very disconnect): its completion comes first, and
         * the last one reports the loss (conn_dto_done).
         */
        c->lost_graceful = graceful;
        /* RDMA DTOs not started yet are flushed, not carried out */
        if (c->dtos)
            rdma_flush_queued(ia, c);
        return;
    }
    ep_conn_lost(ep, graceful);
}

void conn_dto_done(Ep *ep, const std::shared_ptr<Conn> &c) {
    if (--c->dtos == 0 && c->dead && !c->accepting && ep->conn == c)
        ep_conn_lost(ep, c->lost_graceful);
}

/* ---- active connect ------------------------------------------------------ */

static DAT_EVENT_NUMBER connect_errno_event(int e) {
    switch (e) {
    case ETIMEDOUT:
        return DAT_CONNECTION_EVENT_TIMED_OUT;
    case ENODEV:
    case ENXIO:
    case EHOSTUNREACH:
    case ENETUNREACH:
        return DAT_CONNECTION_EVENT_UNREACHABLE;
    default:
        return DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
    }
}

static DAT_RETURN do_connect(Ep *ep, uint16_t node, bool reachable, DAT_CONN_QUAL qual,
                             DAT_TIMEOUT timeout, DAT_COUNT plen, const void *pdata) {
    Ia *ia = ep->ia;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (ep->state != DAT_EP_STATE_UNCONNECTED)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        if (!ep->conn_evd || !ep->pz)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        ep->remote_qual = qual;
        node_to_name(node, ia->host, &ep->remote_addr);
        ep->peer_pdata.clear();
        if (!reachable) {
            ep->state = DAT_EP_STATE_DISCONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_UNREACHABLE);
            return DAT_SUCCESS;
        }
        ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
    }
    scif_epd_t epd = scif_ops().open();
    if (epd == SCIF_OPEN_FAILED) {
        std::lock_guard<std::mutex> lk(ia->mu);
        ep->state = DAT_EP_STATE_UNCONNECTED;
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    }
    auto c = std::make_shared<Conn>(epd);
    scif_portID dst{node, qual_to_port(qual)};
    int port = scif_ops().connect(epd, &dst);
    DSC_DBG("ep %p epd %d: connect to %u:%u: %d (%s)", (void *)ep, epd, dst.node, dst.port, port,
            port < 0 ? std::strerror(errno) : "ok");
    if (port < 0) {
        int e = errno;
        std::lock_guard<std::mutex> lk(ia->mu);
        if (ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING) {
            ep->state = DAT_EP_STATE_DISCONNECTED;
            post_conn_event(ep, connect_errno_event(e));
        }
        return DAT_SUCCESS;
    }
    c->peer_id = dst;
    std::vector<MrInfo> mrs;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
            return DAT_SUCCESS; /* disconnected meanwhile */
        ep->local_qual = port_to_qual((uint16_t)port);
        c->owner = ep;
        ep->conn = c;
        mrs = mr_snapshot(ia, ep->pz);
    }
    int r;
    {
        std::lock_guard<std::mutex> op(c->op_mu);
        mr_register(c, &mrs, ia);
        /*
         * The timeout bounds the wait for the peer's answer, as a CM's
         * does, so it starts once our windows are registered: pinning a
         * large LMR is ours and can take longer than the timeout.  The
         * answer cannot come before the request leaves.
         */
        if (timeout != DAT_TIMEOUT_INFINITE) {
            std::lock_guard<std::mutex> lk(ia->mu);
            if (ep->conn == c && ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING) {
                ep->has_deadline = true;
                ep->deadline =
                    std::chrono::steady_clock::now() + std::chrono::microseconds(timeout);
            }
        }
        std::vector<uint8_t> body = conn_body(qual, pdata, plen, mrs);
        r = send_msg(epd, MSG_CONN_REQ, MSGF_KNOWS_ACCEPTING, 0, body.data(), body.size());
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    if (r)
        conn_lost(ia, c, false);
    ia->wake();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                              DAT_TIMEOUT timeout, DAT_COUNT plen, const DAT_PVOID pdata, DAT_QOS,
                              DAT_CONNECT_FLAGS) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (!addr)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (plen < 0 || plen > kMaxPrivateData || (plen && !pdata))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    uint16_t node = 0;
    bool ok = sockaddr_to_node(addr, ep->ia->node, &node, ipv4_is_local_host, ep->ia->host);
    return do_connect(ep, node, ok, qual, timeout, plen, pdata);
}

DAT_RETURN DAT_API ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
                                  DAT_COUNT plen, const DAT_PVOID pdata, DAT_QOS) {
    Ep *ep, *d;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (DAT_RETURN err = lookup(dup, &d))
        return err;
    if (plen < 0 || plen > kMaxPrivateData || (plen && !pdata))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    uint16_t node;
    uint64_t qual;
    {
        std::lock_guard<std::mutex> lk(d->ia->mu);
        if (d->state != DAT_EP_STATE_CONNECTED)
            return dat_err(DAT_INVALID_STATE);
        node = (uint16_t)(ntohl(d->remote_addr.sin_addr.s_addr) & ~kNodeMask);
        qual = d->remote_qual;
    }
    return do_connect(ep, node, true, qual, timeout, plen, pdata);
}

/* ---- PSP / RSP ------------------------------------------------------------ */

static DAT_RETURN sp_listen(uint16_t port, std::shared_ptr<ScifEp> *out, uint16_t *bound) {
    scif_epd_t epd = scif_ops().open();
    if (epd == SCIF_OPEN_FAILED)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    auto lep = std::make_shared<ScifEp>(epd);
    int p = scif_ops().bind(epd, port);
    if (p < 0)
        return errno == EADDRINUSE || errno == EACCES ? dat_err(DAT_CONN_QUAL_IN_USE)
                                                      : dat_err(DAT_INSUFFICIENT_RESOURCES);
    if (scif_ops().listen(epd, 64) < 0)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    *bound = (uint16_t)p;
    *out = std::move(lep);
    return DAT_SUCCESS;
}

static DAT_RETURN sp_make(Ia *ia, bool any, DAT_CONN_QUAL qual, DAT_EVD_HANDLE eh,
                          DAT_PSP_FLAGS flags, Ep *rsp_ep, DAT_HANDLE *out,
                          DAT_CONN_QUAL *qual_out) {
    Evd *evd;
    if (DAT_RETURN err = lookup(eh, &evd, DAT_INVALID_HANDLE_EVD_CR))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER);
    if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    auto sp = std::make_unique<Sp>();
    uint16_t port = 0;
    DAT_RETURN r = sp_listen(any ? 0 : qual_to_port(qual), &sp->lep, &port);
    if (r != DAT_SUCCESS)
        return r;
    sp->is_rsp = rsp_ep != nullptr;
    sp->qual = any ? port_to_qual(port) : qual;
    sp->evd = evd;
    sp->flags = flags;
    sp->ep = rsp_ep;
    std::lock_guard<std::mutex> lk(ia->mu);
    if (rsp_ep) {
        if (rsp_ep->state != DAT_EP_STATE_UNCONNECTED)
            return dat_err(DAT_INVALID_STATE);
        rsp_ep->state = DAT_EP_STATE_RESERVED;
        rsp_ep->rsp = sp.get();
    }
    obj_init(sp.get(), ia, rsp_ep ? DAT_HANDLE_TYPE_RSP : DAT_HANDLE_TYPE_PSP);
    evd->users++;
    ia->sps.push_back(sp.get());
    if (qual_out)
        *qual_out = sp->qual;
    *out = sp.release();
    ia->wake();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                              DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    return sp_make(ia, false, qual, evd, flags, nullptr, out, nullptr);
}

DAT_RETURN DAT_API psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
                                  DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (!qual)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    return sp_make(ia, true, 0, evd, flags, nullptr, out, qual);
}

DAT_RETURN DAT_API rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE eph,
                              DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    Ep *ep;
    if (DAT_RETURN err = lookup(eph, &ep))
        return err;
    return sp_make(ia, false, qual, evd, DAT_PSP_CONSUMER_FLAG, ep, out, nullptr);
}

void sp_free_locked(Sp *sp) {
    Ia *ia = sp->ia;
    ia->sps.remove(sp);
    sp->evd->users--;
    if (sp->ep && ep_alive(ia, sp->ep)) {
        if (sp->ep->state == DAT_EP_STATE_RESERVED)
            sp->ep->state = DAT_EP_STATE_UNCONNECTED;
        sp->ep->rsp = nullptr;
    }
    for (auto it = ia->pending.begin(); it != ia->pending.end();) {
        if ((*it)->sp == sp) {
            (*it)->sp = nullptr;
            if (!(*it)->cr) {
                (*it)->dead = true;
                it = ia->pending.erase(it);
                continue;
            }
        }
        ++it;
    }
    obj_unlink(sp);
    delete sp;
    ia->wake();
}

static DAT_RETURN sp_free(DAT_HANDLE h, DAT_HANDLE_TYPE t) {
    Sp *sp;
    if (DAT_RETURN err = lookup_sp(h, t, &sp))
        return err;
    Ia *ia = sp->ia;
    uint64_t since;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        sp_free_locked(sp);
        since = ia->loops;
    }
    /* The port must be free when we return: a new PSP may want it. */
    ia->sync_progress(since);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API psp_free(DAT_PSP_HANDLE h) {
    return sp_free(h, DAT_HANDLE_TYPE_PSP);
}

DAT_RETURN DAT_API rsp_free(DAT_RSP_HANDLE h) {
    return sp_free(h, DAT_HANDLE_TYPE_RSP);
}

DAT_RETURN DAT_API psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK, DAT_PSP_PARAM *p) {
    Sp *sp;
    if (DAT_RETURN err = lookup_sp(h, DAT_HANDLE_TYPE_PSP, &sp))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    p->ia_handle = sp->ia;
    p->conn_qual = sp->qual;
    p->evd_handle = sp->evd;
    p->psp_flags = sp->flags;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK, DAT_RSP_PARAM *p) {
    Sp *sp;
    if (DAT_RETURN err = lookup_sp(h, DAT_HANDLE_TYPE_RSP, &sp))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(sp->ia->mu);
    p->ia_handle = sp->ia;
    p->conn_qual = sp->qual;
    p->evd_handle = sp->evd;
    p->ep_handle = sp->ep;
    return DAT_SUCCESS;
}

/* ---- CR ------------------------------------------------------------------- */

void cr_free_locked(Cr *cr) {
    Ia *ia = cr->ia;
    if (cr->conn) {
        cr->conn->cr = nullptr;
        if (!cr->conn->owner) {
            cr->conn->dead = true;
            ia->pending.remove(cr->conn);
        }
        cr->conn.reset();
    }
    obj_unlink(cr);
    delete cr;
    ia->wake();
}

DAT_RETURN DAT_API cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK, DAT_CR_PARAM *p) {
    Cr *cr;
    if (DAT_RETURN err = lookup(h, &cr))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(cr->ia->mu);
    p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&cr->remote_addr);
    p->remote_port_qual = cr->remote_port_qual;
    p->private_data_size = (DAT_COUNT)cr->pdata.size();
    p->private_data = cr->pdata.empty() ? nullptr : cr->pdata.data();
    p->local_ep_handle = cr->ep;
    return DAT_SUCCESS;
}

/*
 * Test hook: DAPLSCIF_TEST_ACCEPT_DELAY_MS=<n> (1..10000) makes
 * dat_cr_accept sleep n ms after the ACCEPT message is sent, before it
 * reports a loss seen meanwhile and returns, so a test can make the
 * peer's disconnect arrive inside that window.  Read at every accept; for tests only.
 */
static void test_accept_delay() {
    const char *v = std::getenv("DAPLSCIF_TEST_ACCEPT_DELAY_MS");
    if (!v || !*v)
        return;
    char *end = nullptr;
    unsigned long ms = std::strtoul(v, &end, 10);
    if (*end || !ms || ms > 10000)
        return;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

DAT_RETURN DAT_API cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE eph, DAT_COUNT plen,
                             const DAT_PVOID pdata) {
    Cr *cr;
    if (DAT_RETURN err = lookup(h, &cr))
        return err;
    if (plen < 0 || plen > kMaxPrivateData || (plen && !pdata))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    Ia *ia = cr->ia;
    Ep *ep = nullptr;
    if (eph) {
        if (DAT_RETURN err = lookup_in(ia, eph, &ep))
            return err;
    }
    std::shared_ptr<Conn> c;
    std::vector<MrInfo> mrs;
    bool tell_accepting = false;
    /* Copy first: consumers often answer with the CR's own buffer. */
    std::vector<uint8_t> pd(static_cast<const uint8_t *>(pdata),
                            static_cast<const uint8_t *>(pdata) + plen);
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (!ep)
            ep = cr->ep;
        if (!ep)
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        if (ep->state != DAT_EP_STATE_UNCONNECTED && ep->state != DAT_EP_STATE_RESERVED &&
            ep->state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        if (!ep->conn_evd || !ep->pz)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        c = cr->conn;
        cr->conn.reset();
        ep->remote_addr = cr->remote_addr;
        ep->remote_qual = cr->remote_port_qual;
        ep->peer_pdata.clear();
        if (ep->rsp && sp_alive(ia, ep->rsp))
            ep->rsp->ep = nullptr;
        ep->rsp = nullptr;
        for (Sp *s : ia->sps)
            if (s == cr->sp)
                ep->local_qual = s->qual;
        if (!c || c->dead) {
            ep->state = DAT_EP_STATE_UNCONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
            obj_unlink(cr);
            delete cr;
            return DAT_SUCCESS;
        }
        c->cr = nullptr;
        c->owner = ep;
        ia->pending.remove(c);
        ep->conn = c;
        /* Connected before ACCEPT leaves: the peer may answer at once. */
        ep->state = DAT_EP_STATE_CONNECTED;
        c->accepting = true;
        mrs = mr_snapshot(ia, ep->pz);
        tell_accepting = c->knows_accepting && !mrs.empty();
        obj_unlink(cr);
        delete cr;
    }
    int r;
    bool est;
    {
        std::lock_guard<std::mutex> op(c->op_mu);
        /*
         * Registering our windows may outlast the peer's connect
         * timeout: tell it first that it is accepted.  A failed send
         * shows again at ACCEPT's.
         */
        if (tell_accepting)
            (void)send_msg(c->epd(), MSG_CONN_ACCEPTING, 0, 0, nullptr, 0);
        mr_register(c, &mrs, ia);
        std::vector<uint8_t> body = conn_body(0, pd.data(), plen, mrs);
        {
            /*
             * ESTABLISHED before ACCEPT leaves: whatever the peer does
             * once it has it (disconnect another connection of this
             * EVD, say) the progress thread sees after, so the EVD
             * has the events in that order, as a CM's are (the peer's
             * RTU comes before its DREQs; dtestcm's server counts
             * ESTABLISHED events, then frees each EP on its
             * DISCONNECTED).  op_mu keeps a DTO the consumer posts on
             * seeing it behind ACCEPT.
             */
            std::lock_guard<std::mutex> lk(ia->mu);
            est = ep->conn == c && !c->dead;
            if (est)
                post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        r = send_msg(c->epd(), MSG_CONN_ACCEPT, 0, 0, body.data(), body.size());
    }
    test_accept_delay();
    std::lock_guard<std::mutex> lk(ia->mu);
    c->accepting = false;
    DSC_DBG("ep %p epd %d: accepted (send %d, dead %d, ours %d, established first %d)", (void *)ep,
            c->epd(), r, (int)c->dead, (int)(ep->conn == c), (int)est);
    if (ep->conn == c) {
        if (r && !est) {
            ep_drop_conn(ep);
            ep->state = DAT_EP_STATE_DISCONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
        } else {
            if (r && !c->dead) {
                /* established, then ACCEPT could not leave: broken */
                c->dead = true;
                c->lost_graceful = false;
            }
            if (!est)
                post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED);
            /* Lost while ACCEPT was on its way (see conn_lost). */
            if (c->dead && !c->dtos)
                ep_conn_lost(ep, c->lost_graceful);
        }
    }
    ia->wake();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API cr_reject(DAT_CR_HANDLE h, DAT_COUNT plen, const DAT_PVOID pdata) {
    Cr *cr;
    if (DAT_RETURN err = lookup(h, &cr))
        return err;
    if (plen < 0 || plen > kMaxPrivateData || (plen && !pdata))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    Ia *ia = cr->ia;
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        c = cr->conn;
        if (cr->ep && cr->ep->state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
            cr->ep->state = cr->ep->rsp ? DAT_EP_STATE_RESERVED : DAT_EP_STATE_UNCONNECTED;
    }
    if (c && !c->dead) {
        std::vector<uint8_t> body = conn_body(0, pdata, plen, {});
        std::lock_guard<std::mutex> op(c->op_mu);
        send_msg(c->epd(), MSG_CONN_REJECT, 0, 0, body.data(), body.size());
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    cr_free_locked(cr);
    return DAT_SUCCESS;
}

} /* namespace daplscif */
