// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_dto.cpp - data transfer operations: sends are framed messages;
 * RDMA goes straight to the peer's registered windows with the SCIF RMA
 * calls (from the local LMR's own window when it has one on the
 * connection: nothing pinned per call), so the peer's CPU is not
 * involved.  Posting, I/O vector checks and completions; the RDMA
 * workers that make the calls are in dapl_rdma.cpp.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <climits>
#include <cstring>

#include <unistd.h>

namespace daplscif {

/* The completion flags a request DTO may carry. */
constexpr DAT_COMPLETION_FLAGS kReqFlags =
    (DAT_COMPLETION_FLAGS)(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
                           DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG |
                           DAT_COMPLETION_EVD_THRESHOLD_FLAG);

/* ---- I/O vectors ---------------------------------------------------------- */

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

void complete_req(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS st, uint64_t len,
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

void deliver_send(Ep *ep, const uint8_t *data, uint64_t len, uint16_t mflags) {
    std::deque<RecvReq> *q = ep->srq ? &ep->srq->recvs : &ep->recvs;
    if (q->empty()) {
        ep->unexpected.push_back({std::vector<uint8_t>(data, data + len), mflags});
        return;
    }
    RecvReq r = std::move(q->front());
    q->pop_front();
    complete_recv(ep, r, data, len, mflags);
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
    bool lost;
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
        /*
         * dead: lost, reported when the DTOs on their way finish; flushed
         * at once, or after the RDMA DTOs still on their way (lost).
         */
        if (ep->state == DAT_EP_STATE_DISCONNECTED || !ep->conn ||
            (ep->conn->dead && !rdma_busy(ia, ep->conn.get()))) {
            post_dto(ep, ep->req_evd, cookie, DAT_DTO_ERR_FLUSHED, 0, DAT_DTO_SEND, true);
            return DAT_SUCCESS;
        }
        if (ep->req_credit->load() >= ep->attr.max_request_dtos)
            return dat_err(DAT_INSUFFICIENT_RESOURCES);
        ep->req_credit->fetch_add(1);
        c = ep->conn;
        c->dtos++;
        lost = c->dead;
    }
    /* Not before the RDMA DTOs posted before it (dapl_rdma.cpp, step 4). */
    rdma_wait_posted(ia, c.get());
    int r = -1;
    if (!lost) {
        std::lock_guard<std::mutex> op(c->op_mu);
        r = send_iov(c->epd(), segs,
                     (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) ? MSGF_SOLICITED : 0);
    }
    std::lock_guard<std::mutex> lk(ia->mu);
    complete_req(ep, cookie, r ? DAT_DTO_ERR_FLUSHED : DAT_DTO_SUCCESS, r ? 0 : iov_total(segs),
                 DAT_DTO_SEND, flags, true);
    conn_dto_done(ep, c);
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

/*
 * The local windows of an RDMA DTO's I/O vector on c (mu), one entry per
 * segment of check_local_iov: the SCIF offset of the segment in the window
 * its LMR has on c (mr_register), or -1 when it has none whose protection
 * allows the transfer (an RDMA read writes the window: SCIF_PROT_WRITE,
 * from DAT_MEM_PRIV_REMOTE_WRITE; a write reads it: SCIF_PROT_READ).  A
 * segment with a window moves by scif_readfrom/scif_writeto between the
 * two windows, as a verbs RDMA between two MRs; one without pins its
 * pages for the call (scif_vreadfrom/scif_vwriteto).
 */
static void local_windows(Ia *ia, const Conn &c, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                          bool is_read, std::vector<int64_t> *loffs) {
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    const DAT_MEM_PRIV_FLAGS need =
        is_read ? DAT_MEM_PRIV_REMOTE_WRITE_FLAG : DAT_MEM_PRIV_REMOTE_READ_FLAG;
    loffs->clear();
    for (DAT_COUNT i = 0; i < n; i++) {
        const DAT_LMR_TRIPLET &t = iov[i];
        if (!t.segment_length)
            continue; /* as check_iov_pz: no segment */
        int64_t off = -1;
        auto l = ia->lmrs.find(t.lmr_context);
        auto w = c.wins.find(t.lmr_context);
        if (l != ia->lmrs.end() && w != c.wins.end() && (l->second->priv & need)) {
            uint64_t base = l->second->va & ~(pg - 1);
            off = w->second.off + (int64_t)(t.virtual_address - base);
        }
        loffs->push_back(off);
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
    {
        std::unique_lock<std::mutex> lk(ia->mu);
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
        /* A job the EP had (rdma_job): given back if the post fails. */
        std::shared_ptr<RdmaJob> job = rdma_job(ep, (size_t)maxiov);
        struct GiveBack {
            std::shared_ptr<RdmaJob> &job;
            ~GiveBack() {
                if (job)
                    rdma_give_back(std::move(job));
            }
        } give_back{job};
        job->is_read = is_read;
        job->barrier = flags & DAT_COMPLETION_BARRIER_FENCE_FLAG;
        job->cookie = cookie;
        job->flags = flags;
        DAT_RETURN r = check_local_iov(
            ep, n, iov, is_read ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG : DAT_MEM_PRIV_NONE_FLAG,
            &job->segs);
        if (r != DAT_SUCCESS)
            return r;
        uint64_t local = iov_total(job->segs);
        const uint64_t len = job->len = is_read ? rt->segment_length : local;
        if ((is_read && local < rt->segment_length) || (!is_read && local > rt->segment_length) ||
            len > kMaxRdma)
            return dat_err(DAT_LENGTH_ERROR);
        if (ep->state == DAT_EP_STATE_DISCONNECTED || !ep->conn ||
            (ep->conn->dead && !rdma_busy(ia, ep->conn.get()))) {
            post_dto(ep, ep->req_evd, cookie, DAT_DTO_ERR_FLUSHED, 0, op, true);
            return DAT_SUCCESS;
        }
        const std::shared_ptr<Conn> c = ep->conn;
        if (c->dead) {
            /* lost, RDMA DTOs still on their way: flushed after them */
            if (ep->req_credit->load() >= ep->attr.max_request_dtos)
                return dat_err(DAT_INSUFFICIENT_RESOURCES);
            rdma_make_room(ia, c.get());
            ep->req_credit->fetch_add(1);
            c->dtos++;
            job->state = RdmaJob::kDone;
            job->st = DAT_DTO_ERR_FLUSHED;
            rdma_post(ia, c, std::move(job), lk);
            return DAT_SUCCESS;
        }
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
        local_windows(ia, *c, n, iov, is_read, &job->loffs);
        /*
         * The window offset comes from the peer: one whose transfer
         * would end past INT64_MAX is no window (the transfer gets a
         * remote access error).
         */
        int64_t roff;
        if (pm.win < 0 || __builtin_add_overflow(pm.win, rt->virtual_address - pm.va, &roff) ||
            roff > INT64_MAX - (int64_t)len)
            roff = -1;
        job->roff = roff;
        rdma_make_room(ia, c.get());
        ep->req_credit->fetch_add(1);
        c->dtos++;
        rdma_post(ia, c, std::move(job), lk);
    }
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

} /* namespace daplscif */
