// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_mem.cpp - memory: protection zones, LMRs (and the windows they get
 * on each connection), RMRs and their binding, SRQs.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace daplscif {

/* ---- regions ----------------------------------------------------------- */

std::vector<MrInfo> mr_snapshot(Ia *ia, Pz *pz) {
    std::vector<MrInfo> v;
    for (auto &kv : ia->lmrs) {
        Lmr *l = kv.second;
        MrInfo m{};
        m.ctx = l->id;
        m.priv = l->priv;
        m.va = l->va;
        m.len = l->len;
        m.win = -1;
        m.same_pz = l->pz == pz;
        v.push_back(m);
    }
    return v;
}

static int remote_prot(uint32_t priv) {
    int p = 0;
    if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
        p |= SCIF_PROT_READ;
    if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
        p |= SCIF_PROT_WRITE;
    return p;
}

void mr_register(const std::shared_ptr<Conn> &c, std::vector<MrInfo> *mrs, Ia *ia) {
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    for (MrInfo &m : *mrs) {
        int prot = remote_prot(m.priv);
        if (!m.same_pz || !prot || !m.len || m.va > UINT64_MAX - (pg - 1) ||
            m.len > UINT64_MAX - (pg - 1) - m.va)
            continue; /* its last page would end past 2^64 */
        uint64_t base = m.va & ~(pg - 1);
        uint64_t end = (m.va + m.len + pg - 1) & ~(pg - 1);
        off_t off =
            scif_ops().reg(c->epd(), reinterpret_cast<void *>(base), end - base, 0, prot, 0);
        if (off == SCIF_REGISTER_FAILED)
            continue;
        m.win = off + (int64_t)(m.va - base);
        std::lock_guard<std::mutex> lk(ia->mu);
        c->wins[m.ctx] = {off, (size_t)(end - base)};
    }
}

/* ---- PZ ------------------------------------------------------------------ */

DAT_RETURN DAT_API pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto pz = std::make_unique<Pz>();
    std::lock_guard<std::mutex> lk(ia->mu);
    obj_init(pz.get(), ia, DAT_HANDLE_TYPE_PZ);
    *out = pz.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *p) {
    Pz *pz;
    if (DAT_RETURN err = lookup(h, &pz))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    p->ia_handle = pz->ia;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API pz_free(DAT_PZ_HANDLE h) {
    Pz *pz;
    if (DAT_RETURN err = lookup(h, &pz))
        return err;
    {
        std::lock_guard<std::mutex> lk(pz->ia->mu);
        if (pz->users)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
        obj_unlink(pz);
    }
    delete pz;
    return DAT_SUCCESS;
}

/* ---- LMR ------------------------------------------------------------------ */

/* Offer a region to every connection of the PZ's EPs (no lock held). */
static void lmr_offer(Ia *ia, const MrInfo &proto) {
    std::vector<std::pair<std::shared_ptr<Conn>, bool>> conns;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        auto it = ia->lmrs.find(proto.ctx);
        if (it == ia->lmrs.end())
            return;
        for (Ep *ep : ia->eps)
            if (ep->conn && !ep->conn->dead)
                conns.emplace_back(ep->conn, ep->pz == it->second->pz);
    }
    for (auto &cp : conns) {
        std::vector<MrInfo> one{proto};
        one[0].same_pz = cp.second;
        std::lock_guard<std::mutex> op(cp.first->op_mu);
        mr_register(cp.first, &one, ia);
        send_msg(cp.first->epd(), MSG_MR_ADD, 0, 0, one.data(), sizeof(MrInfo));
    }
}

DAT_RETURN DAT_API lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION desc,
                              DAT_VLEN len, DAT_PZ_HANDLE pzh, DAT_MEM_PRIV_FLAGS priv,
                              DAT_VA_TYPE va_type, DAT_LMR_HANDLE *out, DAT_LMR_CONTEXT *lctx,
                              DAT_RMR_CONTEXT *rctx, DAT_VLEN *reg_len, DAT_VADDR *reg_addr) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    Pz *pz;
    if (DAT_RETURN err = lookup_in(ia, pzh, &pz))
        return err;
    if (va_type != DAT_VA_TYPE_VA)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
    if (priv & ~DAT_MEM_PRIV_ALL_FLAG)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    uint64_t va;
    if (type == DAT_MEM_TYPE_VIRTUAL) {
        va = reinterpret_cast<uint64_t>(desc.for_va);
    } else if (type == DAT_MEM_TYPE_LMR) {
        Lmr *base;
        if (DAT_RETURN err = lookup(desc.for_lmr_handle, &base))
            return err;
        va = base->va;
        if (len > base->len)
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    } else {
        return dat_err(DAT_NOT_IMPLEMENTED);
    }
    if (!len || (!va && type == DAT_MEM_TYPE_VIRTUAL) || len > UINT64_MAX - va)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    auto l = std::make_unique<Lmr>();
    l->pz = pz;
    l->mem_type = type;
    l->desc = desc;
    l->va = va;
    l->len = len;
    l->priv = priv;
    l->va_type = va_type;
    MrInfo proto{};
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        l->id = ia->next_id++;
        if (!ia->next_id)
            ia->next_id = 1;
        obj_init(l.get(), ia, DAT_HANDLE_TYPE_LMR);
        ia->lmrs[l->id] = l.get();
        pz->users++;
        proto.ctx = l->id;
        proto.priv = priv;
        proto.va = va;
        proto.len = len;
        proto.win = -1;
    }
    Lmr *raw = l.release();
    if (out)
        *out = raw;
    if (lctx)
        *lctx = raw->id;
    if (rctx)
        *rctx = raw->id;
    if (reg_len)
        *reg_len = len;
    if (reg_addr)
        *reg_addr = va;
    lmr_offer(ia, proto);
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK, DAT_LMR_PARAM *p) {
    Lmr *l;
    if (DAT_RETURN err = lookup(h, &l))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    p->ia_handle = l->ia;
    p->mem_type = l->mem_type;
    p->region_desc = l->desc;
    p->length = l->len;
    p->pz_handle = l->pz;
    p->mem_priv = l->priv;
    p->va_type = l->va_type;
    p->lmr_context = l->id;
    p->rmr_context = l->id;
    p->registered_size = l->len;
    p->registered_address = l->va;
    return DAT_SUCCESS;
}

/* Withdraw a region id from every connection that has it (no lock). */
static void mr_withdraw(Ia *ia, uint32_t id) {
    std::vector<std::pair<std::shared_ptr<Conn>, LocalWin>> todo;
    std::vector<std::shared_ptr<Conn>> all;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        for (Ep *ep : ia->eps) {
            if (!ep->conn || ep->conn->dead)
                continue;
            all.push_back(ep->conn);
            auto it = ep->conn->wins.find(id);
            if (it != ep->conn->wins.end()) {
                todo.emplace_back(ep->conn, it->second);
                ep->conn->wins.erase(it);
            }
        }
    }
    for (auto &c : all) {
        std::lock_guard<std::mutex> op(c->op_mu);
        send_msg(c->epd(), MSG_MR_DEL, 0, id, nullptr, 0);
    }
    for (auto &t : todo)
        scif_ops().unreg(t.first->epd(), t.second.off, t.second.len);
}

DAT_RETURN DAT_API lmr_free(DAT_LMR_HANDLE h) {
    Lmr *l;
    if (DAT_RETURN err = lookup(h, &l))
        return err;
    Ia *ia = l->ia;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (l->rmr_users)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE);
        ia->lmrs.erase(l->id);
        obj_unlink(l);
        l->pz->users--;
    }
    mr_withdraw(ia, l->id);
    delete l;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *, DAT_VLEN) {
    /* SCIF memory is cache coherent: nothing to do. */
    Ia *ia;
    return lookup(h, &ia);
}

/* ---- RMR ------------------------------------------------------------------ */

DAT_RETURN DAT_API rmr_create(DAT_PZ_HANDLE h, DAT_RMR_HANDLE *out) {
    Pz *pz;
    if (DAT_RETURN err = lookup(h, &pz))
        return err;
    if (!out)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto r = std::make_unique<Rmr>();
    r->pz = pz;
    std::lock_guard<std::mutex> lk(pz->ia->mu);
    obj_init(r.get(), pz->ia, DAT_HANDLE_TYPE_RMR);
    pz->users++;
    *out = r.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK, DAT_RMR_PARAM *p) {
    Rmr *r;
    if (DAT_RETURN err = lookup(h, &r))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(r->ia->mu);
    p->ia_handle = r->ia;
    p->pz_handle = r->pz;
    p->lmr_triplet = r->trip;
    p->mem_priv = r->priv;
    p->rmr_context = r->id;
    p->rmr_scope = DAT_RMR_SCOPE_EP;
    p->va_type = r->va_type;
    return DAT_SUCCESS;
}

/* Drop the current binding of an RMR (mu held); returns what to withdraw. */
std::shared_ptr<Conn> rmr_unbind_locked(Rmr *r, uint32_t *old) {
    *old = r->id;
    std::shared_ptr<Conn> c = r->conn.lock();
    if (r->lmr)
        r->lmr->rmr_users--;
    if (r->id)
        r->ia->lmrs.erase(r->id);
    r->bound = false;
    r->lmr = nullptr;
    r->id = 0;
    r->conn.reset();
    return c;
}

static void rmr_withdraw(const std::shared_ptr<Conn> &c, uint32_t id) {
    if (!c || !id)
        return;
    std::lock_guard<std::mutex> op(c->op_mu);
    send_msg(c->epd(), MSG_MR_DEL, 0, id, nullptr, 0);
}

DAT_RETURN DAT_API rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lh, const DAT_LMR_TRIPLET *trip,
                            DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE eph,
                            DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS cflags,
                            DAT_RMR_CONTEXT *ctx) {
    Rmr *r;
    if (DAT_RETURN err = lookup(h, &r))
        return err;
    Ep *ep;
    if (DAT_RETURN err = lookup(eph, &ep))
        return err;
    Ia *ia = r->ia;
    if (cflags & ~(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG |
                   DAT_COMPLETION_BARRIER_FENCE_FLAG))
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
    std::shared_ptr<Conn> old_conn, conn;
    uint32_t old_id = 0;
    MrInfo m{};
    Evd *evd;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if ((cflags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
            !(ep->attr.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
            return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
        if (ep->state != DAT_EP_STATE_CONNECTED || !ep->conn)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        if (ep->pz != r->pz)
            return dat_err(DAT_PROTECTION_VIOLATION);
        old_conn = rmr_unbind_locked(r, &old_id);
        evd = ep->req_evd;
        if (lh) {
            Lmr *l;
            if (DAT_RETURN err = lookup_in(ia, lh, &l))
                return err;
            if (!trip)
                return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
            if (l->pz != r->pz)
                return dat_err(DAT_PROTECTION_VIOLATION);
            if (!range_within(l->va, l->len, trip->virtual_address, trip->segment_length))
                return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
            /* An RMR cannot grant what its LMR does not. */
            uint32_t remote =
                priv & (DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
            if ((remote & l->priv) != remote)
                return dat_err(DAT_PRIVILEGES_VIOLATION);
            r->id = ia->next_id++;
            if (!ia->next_id)
                ia->next_id = 1;
            r->bound = true;
            r->lmr = l;
            l->rmr_users++;
            r->trip = *trip;
            r->priv = priv;
            r->va_type = va_type;
            r->conn = ep->conn;
            conn = ep->conn;
            m.ctx = r->id;
            m.priv = priv;
            m.va = trip->virtual_address;
            m.len = trip->segment_length;
            m.same_pz = 1;
            auto w = conn->wins.find(l->id);
            if (w != conn->wins.end()) {
                const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
                uint64_t base = l->va & ~(pg - 1);
                m.win = w->second.off + (int64_t)(trip->virtual_address - base);
            } else {
                m.win = -1;
            }
        }
    }
    rmr_withdraw(old_conn, old_id);
    if (conn) {
        std::lock_guard<std::mutex> op(conn->op_mu);
        send_msg(conn->epd(), MSG_MR_ADD, 0, 0, &m, sizeof(m));
    }
    if (ctx)
        *ctx = r->id;
    if (!(cflags & DAT_COMPLETION_SUPPRESS_FLAG)) {
        DAT_EVENT ev;
        std::memset(&ev, 0, sizeof(ev));
        ev.event_number = DAT_RMR_BIND_COMPLETION_EVENT;
        ev.event_data.rmr_completion_event_data.rmr_handle = r;
        ev.event_data.rmr_completion_event_data.user_cookie = cookie;
        ev.event_data.rmr_completion_event_data.status = DAT_RMR_BIND_SUCCESS;
        std::lock_guard<std::mutex> lk(ia->mu);
        evd_post(evd, ev, !(cflags & DAT_COMPLETION_UNSIGNALLED_FLAG));
    }
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API rmr_free(DAT_RMR_HANDLE h) {
    Rmr *r;
    if (DAT_RETURN err = lookup(h, &r))
        return err;
    std::shared_ptr<Conn> c;
    uint32_t id;
    {
        std::lock_guard<std::mutex> lk(r->ia->mu);
        c = rmr_unbind_locked(r, &id);
        obj_unlink(r);
        r->pz->users--;
    }
    rmr_withdraw(c, id);
    delete r;
    return DAT_SUCCESS;
}

/* ---- SRQ ------------------------------------------------------------------ */

DAT_RETURN DAT_API srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pzh, DAT_SRQ_ATTR *attr,
                              DAT_SRQ_HANDLE *out) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    Pz *pz;
    if (DAT_RETURN err = lookup_in(ia, pzh, &pz))
        return err;
    if (!attr || !out || attr->max_recv_dtos <= 0 || attr->max_recv_iov <= 0)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    auto s = std::make_unique<Srq>();
    s->pz = pz;
    s->attr = *attr;
    std::lock_guard<std::mutex> lk(ia->mu);
    obj_init(s.get(), ia, DAT_HANDLE_TYPE_SRQ);
    pz->users++;
    *out = s.release();
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API srq_free(DAT_SRQ_HANDLE h) {
    Srq *s;
    if (DAT_RETURN err = lookup(h, &s))
        return err;
    {
        std::lock_guard<std::mutex> lk(s->ia->mu);
        if (s->users)
            return dat_err(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
        obj_unlink(s);
        s->pz->users--;
    }
    delete s;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK, DAT_SRQ_PARAM *p) {
    Srq *s;
    if (DAT_RETURN err = lookup(h, &s))
        return err;
    if (!p)
        return dat_err(DAT_INVALID_PARAMETER);
    std::lock_guard<std::mutex> lk(s->ia->mu);
    p->ia_handle = s->ia;
    p->srq_state = DAT_SRQ_STATE_OPERATIONAL;
    p->pz_handle = s->pz;
    p->max_recv_dtos = s->attr.max_recv_dtos;
    p->max_recv_iov = s->attr.max_recv_iov;
    p->low_watermark = s->attr.low_watermark;
    p->available_dto_count = (DAT_COUNT)s->recvs.size();
    p->outstanding_dto_count = s->outstanding;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT n) {
    Srq *s;
    if (DAT_RETURN err = lookup(h, &s))
        return err;
    std::lock_guard<std::mutex> lk(s->ia->mu);
    if (n <= 0)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if ((size_t)n < s->recvs.size())
        return dat_err(DAT_INVALID_STATE);
    s->attr.max_recv_dtos = n;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT lw) {
    Srq *s;
    if (DAT_RETURN err = lookup(h, &s))
        return err;
    std::lock_guard<std::mutex> lk(s->ia->mu);
    if (lw < 0 || lw > s->attr.max_recv_dtos)
        return dat_err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    s->attr.low_watermark = lw;
    return DAT_SUCCESS;
}

} /* namespace daplscif */
