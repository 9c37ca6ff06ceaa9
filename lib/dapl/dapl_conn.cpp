// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_conn.cpp - endpoints, service points, connection requests, DTOs and
 * the progress engine of the SCIF DAT provider.
 *
 * A connection is one SCIF connection.  The active side connects to the
 * port derived from the connection qualifier and sends CONN_REQ (private
 * data and the regions it offers); the passive side's progress thread
 * accepts, reads CONN_REQ and raises a connection request event; accept
 * and reject answer with CONN_ACCEPT / CONN_REJECT.  Sends are framed
 * messages; RDMA goes straight to the peer's registered windows with the
 * SCIF RMA calls, so the peer's CPU is not involved.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <poll.h>
#include <unistd.h>

namespace daplscif {

constexpr DAT_COMPLETION_FLAGS kReqFlags =
    (DAT_COMPLETION_FLAGS)(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
                           DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG |
                           DAT_COMPLETION_EVD_THRESHOLD_FLAG);

/* ---- framing ------------------------------------------------------------- */

static int send_all(scif_epd_t epd, const void *p, size_t n) {
    auto *b = static_cast<const uint8_t *>(p);
    while (n) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int r = scif_send(epd, const_cast<uint8_t *>(b), chunk, SCIF_SEND_BLOCK);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = ECONNRESET;
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static MsgHdr make_hdr(uint16_t type, uint16_t flags, uint64_t arg, size_t len) {
    MsgHdr h{};
    h.magic = kMagic;
    h.type = type;
    h.flags = flags;
    h.len = (uint32_t)len;
    h.arg = arg;
    return h;
}

int send_msg(scif_epd_t epd, uint16_t type, uint16_t flags, uint64_t arg, const void *a,
             size_t alen, const void *b, size_t blen) {
    MsgHdr h = make_hdr(type, flags, arg, alen + blen);
    std::vector<uint8_t> buf(sizeof(h) + alen + blen);
    std::memcpy(buf.data(), &h, sizeof(h));
    if (alen)
        std::memcpy(buf.data() + sizeof(h), a, alen);
    if (blen)
        std::memcpy(buf.data() + sizeof(h) + alen, b, blen);
    int r = send_all(epd, buf.data(), buf.size());
    DSC_DBG("epd %d: sent type %u len %zu: %s", epd, type, alen + blen,
            r ? std::strerror(errno) : "ok");
    return r;
}

/* A SEND message gathered from an I/O vector. */
static int send_iov(scif_epd_t epd, const std::vector<Seg> &segs, uint16_t flags) {
    uint64_t total = iov_total(segs);
    MsgHdr h = make_hdr(MSG_SEND, flags, 0, total);
    DSC_DBG("epd %d: sending SEND len %llu", epd, (unsigned long long)total);
    if (total <= 65536) {
        std::vector<uint8_t> buf(sizeof(h) + total);
        std::memcpy(buf.data(), &h, sizeof(h));
        size_t off = sizeof(h);
        for (const Seg &s : segs) {
            std::memcpy(buf.data() + off, reinterpret_cast<const void *>(s.va), s.len);
            off += s.len;
        }
        return send_all(epd, buf.data(), buf.size());
    }
    if (send_all(epd, &h, sizeof(h)))
        return -1;
    for (const Seg &s : segs)
        if (s.len && send_all(epd, reinterpret_cast<const void *>(s.va), s.len))
            return -1;
    return 0;
}

/* ---- helpers ------------------------------------------------------------- */

DAT_RETURN check_local_iov(Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS need,
                           std::vector<Seg> *segs);

static DAT_RETURN check_iov_pz(Ia *ia, Pz *pz, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                               DAT_MEM_PRIV_FLAGS need, std::vector<Seg> *segs) {
    segs->clear();
    if (n < 0 || (n > 0 && !iov))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    for (DAT_COUNT i = 0; i < n; i++) {
        const DAT_LMR_TRIPLET &t = iov[i];
        if (!t.segment_length)
            continue;
        auto it = ia->lmrs.find(t.lmr_context);
        if (it == ia->lmrs.end())
            return dat_err(DAT_PRIVILEGES_VIOLATION);
        Lmr *l = it->second;
        if (l->pz != pz)
            return dat_err(DAT_PROTECTION_VIOLATION);
        if (!range_within(l->va, l->len, t.virtual_address, t.segment_length))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        if ((l->priv & need) != need)
            return dat_err(DAT_PRIVILEGES_VIOLATION);
        segs->push_back({t.virtual_address, t.segment_length});
    }
    return DAT_SUCCESS;
}

DAT_RETURN check_local_iov(Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS need,
                           std::vector<Seg> *segs) {
    return check_iov_pz(ep->ia, ep->pz, n, iov, need, segs);
}

static bool ep_alive(Ia *ia, Ep *ep) {
    for (Ep *e : ia->eps)
        if (e == ep)
            return true;
    return false;
}

static bool sp_alive(Ia *ia, Sp *sp) {
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
static void srq_ep_done(Ep *ep) {
    if (!ep->srq)
        return;
    DAT_EVENT ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_ASYNC_ERROR_EP_BROKEN;
    ev.event_data.asynch_error_event_data.dat_handle = ep;
    ev.event_data.asynch_error_event_data.reason = DAT_EP_OTHER_ERROR;
    evd_post(ep->ia->async_evd, ev);
}

void ep_drop_conn(Ep *ep) {
    if (!ep->conn)
        return;
    ep->conn->dead = true;
    ep->conn->owner = nullptr;
    ep->conn.reset();
    ep->has_deadline = false;
    ep->ia->wake();
}

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
    if (c->accepting) {
        /*
         * dat_cr_accept is still sending ACCEPT: the consumer must
         * see ESTABLISHED (or ACCEPT_COMPLETION_ERROR) first, so
         * cr_accept reports the loss once the send returned.
         */
        c->lost_graceful = graceful;
        return;
    }
    ep_conn_lost(ep, graceful);
}

/* Complete a request DTO (mu). */
static void complete_req(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS st, uint64_t len,
                         DAT_DTOS op, DAT_COMPLETION_FLAGS flags, bool counted) {
    Credit credit = counted ? ep->req_credit : nullptr;
    if (st == DAT_DTO_SUCCESS && (flags & DAT_COMPLETION_SUPPRESS_FLAG)) {
        if (credit)
            credit->fetch_sub(1);
        return;
    }
    bool notify = st != DAT_DTO_SUCCESS || !(flags & DAT_COMPLETION_UNSIGNALLED_FLAG);
    post_dto(ep, ep->req_evd, cookie, st, len, op, notify, credit);
}

static bool recv_notifies(Ep *ep, uint16_t mflags) {
    if (ep->attr.recv_completion_flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG)
        return mflags & MSGF_SOLICITED;
    return true;
}

/* Deliver one message into a posted receive (mu). */
static void complete_recv(Ep *ep, RecvReq &r, const uint8_t *data, uint64_t len, uint16_t mflags) {
    DAT_DTO_COMPLETION_STATUS st = DAT_DTO_SUCCESS;
    if (len > iov_total(r.segs)) {
        st = DAT_DTO_ERR_LOCAL_LENGTH;
        len = 0;
    } else {
        iov_scatter(r.segs, data, len);
    }
    if (st == DAT_DTO_SUCCESS && (r.flags & DAT_COMPLETION_SUPPRESS_FLAG))
        return;
    bool notify = recv_notifies(ep, mflags);
    if (st == DAT_DTO_SUCCESS && (r.flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
        notify = false;
    post_dto(ep, ep->recv_evd, r.cookie, st, len, DAT_DTO_RECEIVE, notify || st != DAT_DTO_SUCCESS);
}

static void deliver_send(Ep *ep, const uint8_t *data, uint64_t len, uint16_t mflags) {
    std::deque<RecvReq> *q = ep->srq ? &ep->srq->recvs : &ep->recvs;
    if (q->empty()) {
        ep->unexpected.push_back({std::vector<uint8_t>(data, data + len), mflags});
        return;
    }
    RecvReq r = std::move(q->front());
    q->pop_front();
    complete_recv(ep, r, data, len, mflags);
}

/* ---- CONN_REQ / ACCEPT / REJECT bodies ---------------------------------- */

static std::vector<uint8_t> conn_body(uint64_t qual, const void *pdata, DAT_COUNT plen,
                                      const std::vector<MrInfo> &mrs) {
    ConnBody b{};
    b.qual = qual;
    b.pdata_len = (uint32_t)plen;
    b.n_mr = (uint32_t)mrs.size();
    std::vector<uint8_t> v(sizeof(b) + plen + mrs.size() * sizeof(MrInfo));
    std::memcpy(v.data(), &b, sizeof(b));
    if (plen)
        std::memcpy(v.data() + sizeof(b), pdata, plen);
    if (!mrs.empty())
        std::memcpy(v.data() + sizeof(b) + plen, mrs.data(), mrs.size() * sizeof(MrInfo));
    return v;
}

static bool parse_body(const std::vector<uint8_t> &v, size_t len, ConnBody *b,
                       std::vector<uint8_t> *pdata, std::vector<MrInfo> *mrs) {
    if (len < sizeof(*b))
        return false;
    std::memcpy(b, v.data(), sizeof(*b));
    size_t need = sizeof(*b) + (size_t)b->pdata_len + (size_t)b->n_mr * sizeof(MrInfo);
    if (b->pdata_len > (uint32_t)kMaxPrivateData || need != len)
        return false;
    pdata->assign(v.begin() + sizeof(*b), v.begin() + sizeof(*b) + b->pdata_len);
    mrs->resize(b->n_mr);
    if (b->n_mr)
        std::memcpy(mrs->data(), v.data() + sizeof(*b) + b->pdata_len, b->n_mr * sizeof(MrInfo));
    return true;
}

static void peer_add(Conn *c, const MrInfo *m, size_t n) {
    for (size_t i = 0; i < n; i++)
        c->peer[m[i].ctx] = {m[i].priv, m[i].va, m[i].len, m[i].win, m[i].same_pz != 0};
}

/* ---- EP --------------------------------------------------------------------- */

static void default_attr(DAT_EP_ATTR *a) {
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
        node_to_sockaddr(node, &ep->remote_addr);
        ep->peer_pdata.clear();
        if (!reachable) {
            ep->state = DAT_EP_STATE_DISCONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_UNREACHABLE);
            return DAT_SUCCESS;
        }
        ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
    }
    scif_epd_t epd = scif_open();
    if (epd == SCIF_OPEN_FAILED) {
        std::lock_guard<std::mutex> lk(ia->mu);
        ep->state = DAT_EP_STATE_UNCONNECTED;
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    }
    auto c = std::make_shared<Conn>(epd);
    scif_portID dst{node, qual_to_port(qual)};
    int port = scif_connect(epd, &dst);
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
        if (timeout != DAT_TIMEOUT_INFINITE) {
            ep->has_deadline = true;
            ep->deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout);
        }
        mrs = mr_snapshot(ia, ep->pz);
    }
    int r;
    {
        std::lock_guard<std::mutex> op(c->op_mu);
        mr_register(c, &mrs, ia);
        std::vector<uint8_t> body = conn_body(qual, pdata, plen, mrs);
        r = send_msg(epd, MSG_CONN_REQ, 0, 0, body.data(), body.size());
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
    bool ok = sockaddr_to_node(addr, ep->ia->node, &node);
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
    scif_epd_t epd = scif_open();
    if (epd == SCIF_OPEN_FAILED)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    auto lep = std::make_shared<ScifEp>(epd);
    int p = scif_bind(epd, port);
    if (p < 0)
        return errno == EADDRINUSE || errno == EACCES ? dat_err(DAT_CONN_QUAL_IN_USE)
                                                      : dat_err(DAT_INSUFFICIENT_RESOURCES);
    if (scif_listen(epd, 64) < 0)
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
    uint16_t port;
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
 * posts the connection event, so a test can make the peer's disconnect
 * arrive inside that window.  Read at every accept; for tests only.
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
        obj_unlink(cr);
        delete cr;
    }
    int r;
    {
        std::lock_guard<std::mutex> op(c->op_mu);
        mr_register(c, &mrs, ia);
        std::vector<uint8_t> body = conn_body(0, pd.data(), plen, mrs);
        r = send_msg(c->epd(), MSG_CONN_ACCEPT, 0, 0, body.data(), body.size());
    }
    test_accept_delay();
    std::lock_guard<std::mutex> lk(ia->mu);
    c->accepting = false;
    DSC_DBG("ep %p epd %d: accepted (send %d, dead %d, ours %d)", (void *)ep, c->epd(), r,
            (int)c->dead, (int)(ep->conn == c));
    if (ep->conn == c) {
        if (r) {
            ep_drop_conn(ep);
            ep->state = DAT_EP_STATE_DISCONNECTED;
            post_conn_event(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
        } else {
            post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED);
            /* Lost while ACCEPT was on its way (see conn_lost). */
            if (c->dead)
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

/* ---- DTOs ----------------------------------------------------------------- */

DAT_RETURN DAT_API ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (flags & ~kReqFlags)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    Ia *ia = ep->ia;
    std::vector<Seg> segs;
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
            !(ep->attr.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
        if (ep->state != DAT_EP_STATE_CONNECTED && ep->state != DAT_EP_STATE_DISCONNECTED)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        if (n > ep->attr.max_request_iov)
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        DAT_RETURN r = check_local_iov(ep, n, iov, DAT_MEM_PRIV_NONE_FLAG, &segs);
        if (r != DAT_SUCCESS)
            return r;
        if (iov_total(segs) > kMaxMessage)
            return dat_err(DAT_LENGTH_ERROR);
        if (ep->state == DAT_EP_STATE_DISCONNECTED || !ep->conn) {
            post_dto(ep, ep->req_evd, cookie, DAT_DTO_ERR_FLUSHED, 0, DAT_DTO_SEND, true);
            return DAT_SUCCESS;
        }
        if (ep->req_credit->load() >= ep->attr.max_request_dtos)
            return dat_err(DAT_INSUFFICIENT_RESOURCES);
        ep->req_credit->fetch_add(1);
        c = ep->conn;
    }
    int r;
    {
        std::lock_guard<std::mutex> op(c->op_mu);
        r = send_iov(c->epd(), segs,
                     (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) ? MSGF_SOLICITED : 0);
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    complete_req(ep, cookie, r ? DAT_DTO_ERR_FLUSHED : DAT_DTO_SUCCESS, r ? 0 : iov_total(segs),
                 DAT_DTO_SEND, flags, true);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_post_send_inv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                    DAT_BOOLEAN inv, DAT_RMR_CONTEXT) {
    if (inv)
        return dat_err(DAT_NOT_IMPLEMENTED);
    return ep_post_send(h, n, iov, cookie, flags);
}

DAT_RETURN DAT_API ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (flags & ~kReqFlags)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    std::lock_guard<std::mutex> lk(ep->ia->mu);
    if ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
        !(ep->attr.recv_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    if (ep->srq)
        return dat_err(DAT_INVALID_STATE);
    if (n > ep->attr.max_recv_iov)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    RecvReq req;
    DAT_RETURN r = check_local_iov(ep, n, iov, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &req.segs);
    if (r != DAT_SUCCESS)
        return r;
    req.cookie = cookie;
    req.flags = flags;
    if (ep->state == DAT_EP_STATE_DISCONNECTED) {
        post_dto(ep, ep->recv_evd, cookie, DAT_DTO_ERR_FLUSHED, 0, DAT_DTO_RECEIVE, true);
        return DAT_SUCCESS;
    }
    if ((DAT_COUNT)ep->recvs.size() >= ep->attr.max_recv_dtos)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    if (!ep->unexpected.empty()) {
        Unexpected u = std::move(ep->unexpected.front());
        ep->unexpected.pop_front();
        complete_recv(ep, req, u.data.data(), u.data.size(), u.flags);
        return DAT_SUCCESS;
    }
    ep->recvs.push_back(std::move(req));
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                 DAT_DTO_COOKIE cookie) {
    Srq *s;
    if (DAT_RETURN err = lookup(h, &s))
        return err;
    Ia *ia = s->ia;
    std::lock_guard<std::mutex> lk(ia->mu);
    if (n > s->attr.max_recv_iov)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    RecvReq req;
    DAT_RETURN r = check_iov_pz(ia, s->pz, n, iov, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &req.segs);
    if (r != DAT_SUCCESS)
        return r;
    req.cookie = cookie;
    req.flags = DAT_COMPLETION_DEFAULT_FLAG;
    if ((DAT_COUNT)s->recvs.size() >= s->attr.max_recv_dtos)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    for (Ep *ep : ia->eps) {
        if (ep->srq == s && !ep->unexpected.empty()) {
            Unexpected u = std::move(ep->unexpected.front());
            ep->unexpected.pop_front();
            complete_recv(ep, req, u.data.data(), u.data.size(), u.flags);
            return DAT_SUCCESS;
        }
    }
    s->recvs.push_back(std::move(req));
    return DAT_SUCCESS;
}

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

static DAT_RETURN post_rdma(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rt,
                            DAT_COMPLETION_FLAGS flags, bool is_read) {
    Ep *ep;
    if (DAT_RETURN err = lookup(h, &ep))
        return err;
    if (flags & ~kReqFlags)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    if (!rt)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    Ia *ia = ep->ia;
    const DAT_DTOS op = is_read ? DAT_DTO_RDMA_READ : DAT_DTO_RDMA_WRITE;
    std::vector<Seg> segs;
    std::shared_ptr<Conn> c;
    uint64_t len;
    int64_t roff;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
            !(ep->attr.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
        if (ep->state != DAT_EP_STATE_CONNECTED && ep->state != DAT_EP_STATE_DISCONNECTED)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        /*
         * max_rdma_read_iov / max_rdma_write_iov bound the vector;
         * left 0 by the consumer (dtest does), max_request_iov does,
         * as the send queue's SGE limit does for the OFA providers.
         */
        DAT_COUNT maxiov = is_read ? ep->attr.max_rdma_read_iov : ep->attr.max_rdma_write_iov;
        if (!maxiov)
            maxiov = ep->attr.max_request_iov;
        if (n > maxiov)
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        DAT_RETURN r = check_local_iov(
            ep, n, iov, is_read ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG : DAT_MEM_PRIV_NONE_FLAG, &segs);
        if (r != DAT_SUCCESS)
            return r;
        uint64_t local = iov_total(segs);
        len = is_read ? rt->segment_length : local;
        if ((is_read && local < rt->segment_length) || (!is_read && local > rt->segment_length) ||
            len > kMaxRdma)
            return dat_err(DAT_LENGTH_ERROR);
        if (ep->state == DAT_EP_STATE_DISCONNECTED || !ep->conn) {
            post_dto(ep, ep->req_evd, cookie, DAT_DTO_ERR_FLUSHED, 0, op, true);
            return DAT_SUCCESS;
        }
        c = ep->conn;
        auto it = c->peer.find(rt->rmr_context);
        if (it == c->peer.end())
            return dat_err(DAT_PRIVILEGES_VIOLATION);
        const PeerMr &pm = it->second;
        if (!pm.same_pz)
            return dat_err(DAT_PROTECTION_VIOLATION);
        uint32_t need = is_read ? DAT_MEM_PRIV_REMOTE_READ_FLAG : DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
        if (!(pm.priv & need))
            return dat_err(DAT_PRIVILEGES_VIOLATION);
        if (len && !range_within(pm.va, pm.len, rt->virtual_address, len))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
        if (ep->req_credit->load() >= ep->attr.max_request_dtos)
            return dat_err(DAT_INSUFFICIENT_RESOURCES);
        ep->req_credit->fetch_add(1);
        /*
         * The window offset comes from the peer: one whose transfer
         * would end past INT64_MAX is no window (the transfer gets a
         * remote access error).
         */
        if (pm.win < 0 || __builtin_add_overflow(pm.win, rt->virtual_address - pm.va, &roff) ||
            roff > INT64_MAX - (int64_t)len)
            roff = -1;
    }
    DAT_DTO_COMPLETION_STATUS st = DAT_DTO_SUCCESS;
    if (roff < 0 && len) {
        st = DAT_DTO_ERR_REMOTE_ACCESS;
    } else {
        std::vector<Piece> plan;
        iov_plan(segs, len, &plan);
        std::lock_guard<std::mutex> opl(c->op_mu);
        for (const Piece &p : plan) {
            void *addr = reinterpret_cast<void *>(segs[p.seg].va + p.off);
            int r = is_read ? scif_vreadfrom(c->epd(), addr, p.len, roff, SCIF_RMA_SYNC)
                            : scif_vwriteto(c->epd(), addr, p.len, roff, SCIF_RMA_SYNC);
            if (r < 0) {
                st = rma_status(errno);
                break;
            }
            roff += (int64_t)p.len;
        }
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    complete_req(ep, cookie, st, st == DAT_DTO_SUCCESS ? len : 0, op, flags, true);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                     DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rt,
                                     DAT_COMPLETION_FLAGS flags) {
    return post_rdma(h, n, iov, cookie, rt, flags, true);
}

DAT_RETURN DAT_API ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                      DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rt,
                                      DAT_COMPLETION_FLAGS flags) {
    return post_rdma(h, n, iov, cookie, rt, flags, false);
}

/* ---- progress engine ------------------------------------------------------ */

void Ia::sync_progress(uint64_t since) {
    wake();
    std::unique_lock<std::mutex> lk(mu);
    loop_cv.wait(lk, [&] { return loops > since || stop; });
}

/* A passive connection sent CONN_REQ: raise the request event (mu). */
static void got_conn_req(Ia *ia, const std::shared_ptr<Conn> &c, size_t len) {
    ConnBody b;
    std::vector<uint8_t> pdata;
    std::vector<MrInfo> mrs;
    if (c->got_req || c->owner || !parse_body(c->rbuf, len, &b, &pdata, &mrs) || !c->sp ||
        !sp_alive(ia, c->sp)) {
        conn_lost(ia, c, false);
        return;
    }
    c->got_req = true;
    DSC_DBG("epd %d: connection request on sp %p (qual %llu), evd %p", c->epd(), (void *)c->sp,
            (unsigned long long)c->sp->qual, (void *)c->sp->evd);
    peer_add(c.get(), mrs.data(), mrs.size());
    Sp *sp = c->sp;
    auto cr = std::make_unique<Cr>();
    cr->conn = c;
    cr->sp = sp;
    cr->pdata = std::move(pdata);
    node_to_sockaddr(c->peer_id.node, &cr->remote_addr);
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
        got_conn_req(ia, c, h.len);
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
        int r = scif_recv(epd, p, chunk, 0);
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
        if (scif_accept(lep->epd, &peer, &ne, 0) < 0) {
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

void Ia::run() {
    struct Item {
        Sp *sp;
        std::shared_ptr<ScifEp> lep;
        std::shared_ptr<Conn> conn;
    };
    std::vector<pollfd> fds;
    std::vector<Item> items;
    for (;;) {
        fds.clear();
        items.clear();
        int timeout = -1;
        {
            std::lock_guard<std::mutex> lk(mu);
            loops++;
            loop_cv.notify_all();
            if (stop)
                return;
            fds.push_back({wake_fd, POLLIN, 0});
            items.push_back({nullptr, nullptr, nullptr});
            auto now = std::chrono::steady_clock::now();
            auto until = [&](std::chrono::steady_clock::time_point t) {
                long long ms =
                    std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
                if (ms < 0)
                    ms = 0;
                if (timeout < 0 || ms < timeout)
                    timeout = (int)ms;
            };
            for (Sp *sp : sps) {
                if (sp->listen_failed)
                    continue;
                if (sp->backoff) {
                    if (now < sp->retry_at) {
                        until(sp->retry_at);
                        continue;
                    }
                    sp->backoff = false;
                }
                fds.push_back({scif_get_fd(sp->lep->epd), POLLIN, 0});
                items.push_back({sp, sp->lep, nullptr});
            }
            for (auto &c : pending) {
                if (c->dead)
                    continue;
                fds.push_back({scif_get_fd(c->epd()), POLLIN, 0});
                items.push_back({nullptr, nullptr, c});
            }
            for (Ep *ep : eps) {
                if (!ep->conn || ep->conn->dead)
                    continue;
                fds.push_back({scif_get_fd(ep->conn->epd()), POLLIN, 0});
                items.push_back({nullptr, nullptr, ep->conn});
                if (ep->has_deadline)
                    until(ep->deadline);
            }
        }
        int n = poll(fds.data(), fds.size(), timeout);
        if (n < 0 && errno != EINTR)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (n > 0) {
            if (fds[0].revents & POLLIN) {
                uint64_t v;
                ssize_t r = read(wake_fd, &v, sizeof(v));
                (void)r;
            }
            for (size_t i = 1; i < fds.size(); i++) {
                if (!fds[i].revents)
                    continue;
                if (items[i].lep)
                    accept_all(this, items[i].sp, items[i].lep);
                else
                    conn_ready(this, items[i].conn);
            }
        }
        std::lock_guard<std::mutex> lk(mu);
        auto now = std::chrono::steady_clock::now();
        for (Ep *ep : eps) {
            if (!ep->has_deadline || ep->deadline > now ||
                ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
                continue;
            ep->state = DAT_EP_STATE_DISCONNECTED;
            ep_drop_conn(ep);
            post_conn_event(ep, DAT_CONNECTION_EVENT_TIMED_OUT);
        }
    }
}

} /* namespace daplscif */
