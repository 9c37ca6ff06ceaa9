// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_ep.cpp - endpoints: create (with or without an SRQ), query,
 * modify, disconnect, reset, free, status, and dropping an EP's connection.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <cstring>

namespace daplscif {

bool ep_alive(Ia *ia, Ep *ep) {
    for (Ep *e : ia->eps)
        if (e == ep)
            return true;
    return false;
}

bool sp_alive(Ia *ia, Sp *sp) {
    for (Sp *s : ia->sps)
        if (s == sp)
            return true;
    return false;
}

void ep_flush(Ep *ep) {
    while (!ep->recvs.empty()) {
        RecvReq r = std::move(ep->recvs.front());
        ep->recvs.pop_front();
        post_dto(ep, ep->recv_evd, r.cookie, DAT_DTO_ERR_FLUSHED, 0, DAT_DTO_RECEIVE, true);
    }
    ep->unexpected.clear();
}

/*
 * An EP on an SRQ left the connected state: as with a transport's "last
 * receive consumed" notice, tell the consumer through the async EVD that
 * the EP takes no more receives from the SRQ (mu).
 */
void srq_ep_done(Ep *ep) {
    if (!ep->srq)
        return;
    post_async_error(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep, DAT_EP_OTHER_ERROR);
}

void ep_drop_conn(Ep *ep) {
    if (!ep->conn)
        return;
    rdma_drain(ep, true);
    ep->conn->dead = true;
    ep->conn->owner = nullptr;
    ep->conn.reset();
    ep->has_deadline = false;
    ep->ia->wake();
}

/* ---- EP --------------------------------------------------------------------- */

void default_attr(DAT_EP_ATTR *a) {
    std::memset(a, 0, sizeof(*a));
    a->service_type = DAT_SERVICE_TYPE_RC;
    a->max_message_size = kMaxMessage;
    a->max_rdma_size = kMaxRdma;
    a->qos = DAT_QOS_BEST_EFFORT;
    a->recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a->request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a->max_recv_dtos = 1024;
    a->max_request_dtos = 1024;
    a->max_recv_iov = 64;
    a->max_request_iov = 64;
    a->max_rdma_read_in = 64;
    a->max_rdma_read_out = 64;
    a->srq_soft_hw = DAT_HW_DEFAULT;
    a->max_rdma_read_iov = 64;
    a->max_rdma_write_iov = 64;
}

static bool attr_ok(const DAT_EP_ATTR *a) {
    return a->service_type == DAT_SERVICE_TYPE_RC && a->max_recv_dtos >= 0 &&
           a->max_request_dtos >= 0 && a->max_recv_iov >= 0 && a->max_recv_iov <= 64 &&
           a->max_request_iov >= 0 && a->max_request_iov <= 64 && a->max_rdma_read_iov <= 64 &&
           a->max_rdma_write_iov <= 64;
}

static void evd_use(Evd *e, bool restricted) {
    if (!e)
        return;
    e->users++;
    if (restricted && e->restrict_users++ == 0)
        e->q.set_restricted(true);
}

static void evd_unuse(Evd *e, bool restricted) {
    if (!e)
        return;
    e->users--;
    if (restricted && --e->restrict_users == 0)
        e->q.set_restricted(false);
}

static bool recv_restricted(const DAT_EP_ATTR &a) {
    return a.recv_completion_flags &
           (DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG);
}

static bool req_restricted(const DAT_EP_ATTR &a) {
    return a.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG;
}

static void ep_bind_refs(Ep *ep, int dir) {
    if (dir > 0) {
        evd_use(ep->recv_evd, recv_restricted(ep->attr));
        evd_use(ep->req_evd, req_restricted(ep->attr));
        evd_use(ep->conn_evd, false);
        if (ep->pz)
            ep->pz->users++;
        if (ep->srq)
            ep->srq->users++;
    } else {
        evd_unuse(ep->recv_evd, recv_restricted(ep->attr));
        evd_unuse(ep->req_evd, req_restricted(ep->attr));
        evd_unuse(ep->conn_evd, false);
        if (ep->pz)
            ep->pz->users--;
        if (ep->srq)
            ep->srq->users--;
    }
}

static DAT_RETURN ep_make(DAT_IA_HANDLE iah, DAT_PZ_HANDLE pzh, DAT_EVD_HANDLE rh,
                          DAT_EVD_HANDLE qh, DAT_EVD_HANDLE ch, DAT_SRQ_HANDLE sh,
                          const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(iah, &ia))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER);
    Pz *pz = nullptr;
    if (DAT_RETURN err = lookup_opt(pzh, &pz))
        return err;
    Evd *re = nullptr, *qe = nullptr, *ce = nullptr;
    if (DAT_RETURN err = lookup_opt(rh, &re, DAT_INVALID_HANDLE_EVD_RECV))
        return err;
    if (DAT_RETURN err = lookup_opt(qh, &qe))
        return err;
    if (DAT_RETURN err = lookup_opt(ch, &ce, DAT_INVALID_HANDLE_EVD_CONN))
        return err;
    Srq *srq = nullptr;
    if (DAT_RETURN err = lookup_opt(sh, &srq))
        return err;
    auto ep = std::make_unique<Ep>();
    if (attr) {
        if (!attr_ok(attr))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
        ep->attr = *attr;
    } else {
        default_attr(&ep->attr);
    }
    ep->pz = pz;
    ep->recv_evd = re;
    ep->req_evd = qe;
    ep->conn_evd = ce;
    ep->srq = srq;
    std::lock_guard<std::mutex> lk(ia->mu);
    obj_init(ep.get(), ia, DAT_HANDLE_TYPE_EP);
    ep_bind_refs(ep.get(), 1);
    ia->eps.push_back(ep.get());
    *out = ep.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE r, DAT_EVD_HANDLE q,
                             DAT_EVD_HANDLE c, const DAT_EP_ATTR *a, DAT_EP_HANDLE *out) {
    return ep_make(ia, pz, r, q, c, nullptr, a, out);
}

DAT_RETURN DAT_API ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE r,
                                      DAT_EVD_HANDLE q, DAT_EVD_HANDLE c, DAT_SRQ_HANDLE s,
                                      const DAT_EP_ATTR *a, DAT_EP_HANDLE *out) {
    if (!s)
        return dat_err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    return ep_make(ia, pz, r, q, c, s, a, out);
}

DAT_RETURN DAT_API ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK, DAT_EP_PARAM *p) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    std::memset(p, 0, sizeof(*p));
    p->ia_handle = ep->ia;
    p->ep_state = ep->state;
    p->local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ep->ia->addr);
    p->local_port_qual = ep->local_qual;
    p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ep->remote_addr);
    p->remote_port_qual = ep->remote_qual;
    p->pz_handle = ep->pz;
    p->recv_evd_handle = ep->recv_evd;
    p->request_evd_handle = ep->req_evd;
    p->connect_evd_handle = ep->conn_evd;
    p->srq_handle = ep->srq;
    p->ep_attr = ep->attr;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *p) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    const DAT_EP_PARAM_MASK allowed = DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                      DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                      DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_ALL;
    if (mask & ~allowed)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    if (ep->state != DAT_EP_STATE_UNCONNECTED &&
        ep->state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING &&
        ep->state != DAT_EP_STATE_RESERVED)
        return dat_err(DAT_INVALID_STATE);
    Ep n;
    n.pz = ep->pz;
    n.recv_evd = ep->recv_evd;
    n.req_evd = ep->req_evd;
    n.conn_evd = ep->conn_evd;
    n.attr = ep->attr;
    if (mask & DAT_EP_FIELD_PZ_HANDLE) {
        if (DAT_RETURN err = lookup_opt(p->pz_handle, &n.pz))
            return err;
    }
    struct {
        DAT_EP_PARAM_MASK bit;
        DAT_EVD_HANDLE h;
        Evd **dst;
    } evds[] = {
        {DAT_EP_FIELD_RECV_EVD_HANDLE, p->recv_evd_handle, &n.recv_evd},
        {DAT_EP_FIELD_REQUEST_EVD_HANDLE, p->request_evd_handle, &n.req_evd},
        {DAT_EP_FIELD_CONNECT_EVD_HANDLE, p->connect_evd_handle, &n.conn_evd},
    };
    for (auto &e : evds) {
        if (!(mask & e.bit))
            continue;
        if (DAT_RETURN err = lookup_opt(e.h, e.dst, 0 /* no subtype */))
            return err;
    }
    if (mask & DAT_EP_FIELD_EP_ATTR_ALL) {
        const DAT_EP_ATTR &s = p->ep_attr;
        DAT_EP_ATTR &d = n.attr;
#define TAKE(bit, f)                                                                               \
    if (mask & DAT_EP_FIELD_EP_ATTR_##bit)                                                         \
        d.f = s.f;
        TAKE(MAX_MESSAGE_SIZE, max_message_size)
        TAKE(MAX_RDMA_SIZE, max_rdma_size)
        TAKE(QOS, qos)
        TAKE(RECV_COMPLETION_FLAGS, recv_completion_flags)
        TAKE(REQUEST_COMPLETION_FLAGS, request_completion_flags)
        TAKE(MAX_RECV_DTOS, max_recv_dtos)
        TAKE(MAX_REQUEST_DTOS, max_request_dtos)
        TAKE(MAX_RECV_IOV, max_recv_iov)
        TAKE(MAX_REQUEST_IOV, max_request_iov)
        TAKE(MAX_RDMA_READ_IN, max_rdma_read_in)
        TAKE(MAX_RDMA_READ_OUT, max_rdma_read_out)
        TAKE(SRQ_SOFT_HW, srq_soft_hw)
        TAKE(MAX_RDMA_READ_IOV, max_rdma_read_iov)
        TAKE(MAX_RDMA_WRITE_IOV, max_rdma_write_iov)
#undef TAKE
        if (!attr_ok(&d))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    }
    ep_bind_refs(ep, -1);
    ep->pz = n.pz;
    ep->recv_evd = n.recv_evd;
    ep->req_evd = n.req_evd;
    ep->conn_evd = n.conn_evd;
    ep->attr = n.attr;
    ep_bind_refs(ep, 1);
    return DAT_SUCCESS;
}

DAT_RETURN ep_free_locked(Ep *ep) {
    Ia *ia = ep->ia;
    rdma_drain(ep, false); /* no completions for an EP that is gone */
    ep_drop_conn(ep);
    ep_bind_refs(ep, -1);
    if (ep->rsp && sp_alive(ia, ep->rsp))
        ep->rsp->ep = nullptr;
    for (Obj *o : ia->objs)
        if (o->type == DAT_HANDLE_TYPE_CR && static_cast<Cr *>(o)->ep == ep)
            static_cast<Cr *>(o)->ep = nullptr;
    ia->eps.remove(ep);
    obj_unlink(ep);
    delete ep;
    return DAT_SUCCESS;
}

/* Tell the peer we are going (best effort), outside Ia::mu. */
static void say_goodbye(const std::shared_ptr<Conn> &c) {
    if (!c)
        return;
    std::lock_guard<std::mutex> op(c->op_mu);
    send_msg(c->epd(), MSG_DISCONNECT, 0, 0, nullptr, 0);
}

DAT_RETURN DAT_API ep_free(DAT_EP_HANDLE h) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    Ia *ia = ep->ia;
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (ep->state == DAT_EP_STATE_CONNECTED && ep->conn)
            c = ep->conn;
    }
    say_goodbye(c);
    std::lock_guard<std::mutex> lk(ia->mu);
    return ep_free_locked(ep);
}

DAT_RETURN DAT_API ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    Ia *ia = ep->ia;
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        DSC_DBG("ep %p: disconnect in state %d", (void *)ep, (int)ep->state);
        switch (ep->state) {
        case DAT_EP_STATE_DISCONNECTED:
            return DAT_SUCCESS;
        case DAT_EP_STATE_CONNECTED:
            c = ep->conn;
            ep->state = DAT_EP_STATE_DISCONNECT_PENDING;
            break;
        case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
        case DAT_EP_STATE_DISCONNECT_PENDING:
        case DAT_EP_STATE_COMPLETION_PENDING:
            break;
        default:
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        }
    }
    say_goodbye(c);
    std::lock_guard<std::mutex> lk(ia->mu);
    if (ep->state == DAT_EP_STATE_DISCONNECTED)
        return DAT_SUCCESS; /* the peer was quicker */
    ep->state = DAT_EP_STATE_DISCONNECTED;
    bool was_connected = ep->conn != nullptr && c != nullptr;
    ep_drop_conn(ep);
    post_conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
    ep_flush(ep);
    if (was_connected)
        srq_ep_done(ep);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_reset(DAT_EP_HANDLE h) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    Ia *ia = ep->ia;
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        DSC_DBG("ep %p: reset in state %d", (void *)ep, (int)ep->state);
        if (ep->state == DAT_EP_STATE_CONNECTED)
            c = ep->conn;
    }
    say_goodbye(c);
    std::lock_guard<std::mutex> lk(ia->mu);
    ep_drop_conn(ep);
    ep_flush(ep);
    ep->peer_pdata.clear();
    ep->state = DAT_EP_STATE_UNCONNECTED;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *st, DAT_BOOLEAN *recv_idle,
                                 DAT_BOOLEAN *req_idle) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    if (st)
        *st = ep->state;
    if (recv_idle)
        *recv_idle = ep->recvs.empty() ? DAT_TRUE : DAT_FALSE;
    if (req_idle)
        *req_idle = ep->req_credit->load() == 0 ? DAT_TRUE : DAT_FALSE;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT *nbufs, DAT_COUNT *span) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    if (nbufs)
        *nbufs = (DAT_COUNT)ep->recvs.size();
    if (span)
        *span = DAT_VALUE_UNKNOWN;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft, DAT_COUNT) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    ep->attr.srq_soft_hw = soft;
    return DAT_SUCCESS;
}

} /* namespace daplscif */
