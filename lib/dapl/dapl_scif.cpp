// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_scif.cpp - the SCIF DAT 2.0 provider: the handle registry, IA, PZ,
 * EVD, CNO, LMR, RMR and SRQ.  Connections, EPs and DTOs are in
 * dapl_conn.cpp; the registration and the DAT_PROVIDER table in
 * dapl_provider.cpp.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace daplscif {

/* ---- handle registry ------------------------------------------------- */

static std::mutex g_reg_mu; /* protects g_live */
static std::unordered_map<const Obj *, DAT_HANDLE_TYPE> g_live;

void reg_add(Obj *o) {
    std::lock_guard<std::mutex> lk(g_reg_mu);
    g_live[o] = o->type;
}

void reg_del(Obj *o) {
    std::lock_guard<std::mutex> lk(g_reg_mu);
    g_live.erase(o);
}

Obj *reg_find(DAT_HANDLE h, DAT_HANDLE_TYPE t) {
    if (!h)
        return nullptr;
    std::lock_guard<std::mutex> lk(g_reg_mu);
    auto it = g_live.find(static_cast<const Obj *>(h));
    if (it == g_live.end() || it->second != t)
        return nullptr;
    return static_cast<Obj *>(h);
}

DAT_RETURN lookup_sp(DAT_HANDLE h, DAT_HANDLE_TYPE t, Sp **out) {
    *out = static_cast<Sp *>(reg_find(h, t));
    if (*out)
        return DAT_SUCCESS;
    return dat_err(DAT_INVALID_HANDLE,
                   t == DAT_HANDLE_TYPE_PSP ? DAT_INVALID_HANDLE_PSP : DAT_INVALID_HANDLE_RSP);
}

static bool reg_any(DAT_HANDLE h, DAT_HANDLE_TYPE *t) {
    if (!h)
        return false;
    std::lock_guard<std::mutex> lk(g_reg_mu);
    auto it = g_live.find(static_cast<const Obj *>(h));
    if (it == g_live.end())
        return false;
    *t = it->second;
    return true;
}

void obj_init(Obj *o, Ia *ia, DAT_HANDLE_TYPE t) {
    o->prov = ia->provider;
    o->type = t;
    o->ia = ia;
    o->ctx.as_64 = 0;
    if (o != ia)
        ia->objs.push_back(o);
    reg_add(o);
}

void obj_unlink(Obj *o) {
    reg_del(o);
    if (o != o->ia)
        o->ia->objs.remove(o);
}

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
    bool trig = evd->q.push(ev, notify, std::move(credit));
    if (trig && evd->cno && evd->enabled)
        evd->cno->trigger(evd);
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

/* ---- the progress engine's wakeup ---------------------------------- */

void Ia::wake() {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof(one));
    (void)r;
}

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
        off_t off = scif_register(c->epd(), reinterpret_cast<void *>(base), end - base, 0, prot, 0);
        if (off == SCIF_REGISTER_FAILED)
            continue;
        m.win = off + (int64_t)(m.va - base);
        std::lock_guard<std::mutex> lk(ia->mu);
        c->wins[m.ctx] = {off, (size_t)(end - base)};
    }
}

/* ---- IA ------------------------------------------------------------------ */

static DAT_RETURN evd_create_locked(Ia *ia, DAT_COUNT qlen, Cno *cno, DAT_EVD_FLAGS flags,
                                    Evd **out);
static void evd_destroy(Evd *evd);

DAT_RETURN DAT_API ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                           DAT_IA_HANDLE *iap) {
    if (!iap || !async_evd)
        return dat_err(DAT_INVALID_PARAMETER);
    const DAT_PROVIDER *prov = find_provider(name ? name : "");
    if (!prov)
        return dat_err(DAT_PROVIDER_NOT_FOUND);
    Evd *given = nullptr;
    if (*async_evd != DAT_HANDLE_NULL && *async_evd != DAT_EVD_ASYNC_EXISTS) {
        if (DAT_RETURN err = lookup(*async_evd, &given, DAT_INVALID_HANDLE_EVD_ASYNC))
            return err;
    }
    uint16_t nodes[1], self = 0;
    if (scif_get_nodeIDs(nodes, 1, &self) < 0)
        return dat_err(DAT_PROVIDER_NOT_FOUND);
    /* Fail early when the device is missing (module not loaded). */
    scif_epd_t probe = scif_open();
    if (probe == SCIF_OPEN_FAILED)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    scif_close(probe);

    auto ia = std::make_unique<Ia>();
    ia->provider = prov;
    ia->node = self;
    node_to_sockaddr(self, &ia->addr);
    ia->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ia->wake_fd < 0)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    Ia *raw = ia.get();
    obj_init(raw, raw, DAT_HANDLE_TYPE_IA);
    {
        std::lock_guard<std::mutex> lk(raw->mu);
        if (given) {
            raw->async_evd = given;
        } else {
            Evd *e = nullptr;
            DAT_RETURN r =
                evd_create_locked(raw, qlen > 0 ? qlen : 8, nullptr, DAT_EVD_ASYNC_FLAG, &e);
            if (r != DAT_SUCCESS) {
                reg_del(raw);
                close(raw->wake_fd);
                return r;
            }
            raw->async_evd = e;
            raw->own_async = true;
        }
        raw->async_evd->users++;
    }
    try {
        raw->progress = std::thread([raw] { raw->run(); });
    } catch (...) {
        reg_del(raw);
        close(raw->wake_fd);
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    }
    *async_evd = raw->async_evd;
    *iap = ia.release();
    return DAT_SUCCESS;
}

/* Tear down one child object at IA close (mu held, progress stopped). */
static void free_child(Obj *o);

DAT_RETURN DAT_API ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    {
        std::lock_guard<std::mutex> lk(ia->mu);
        if (flags == DAT_CLOSE_GRACEFUL_FLAG) {
            for (Obj *o : ia->objs)
                if (!(ia->own_async && o == ia->async_evd))
                    return dat_err(DAT_INVALID_STATE);
        }
        ia->stop = true;
    }
    ia->wake();
    ia->progress.join();
    /* Abrupt: free children, connections first, EVDs and PZs last. */
    static const DAT_HANDLE_TYPE order[] = {
        DAT_HANDLE_TYPE_CR,  DAT_HANDLE_TYPE_EP,  DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_RSP,
        DAT_HANDLE_TYPE_RMR, DAT_HANDLE_TYPE_LMR, DAT_HANDLE_TYPE_SRQ, DAT_HANDLE_TYPE_EVD,
        DAT_HANDLE_TYPE_CNO, DAT_HANDLE_TYPE_PZ,
    };
    for (DAT_HANDLE_TYPE t : order) {
        for (;;) {
            Obj *victim = nullptr;
            {
                std::lock_guard<std::mutex> lk(ia->mu);
                for (Obj *o : ia->objs)
                    if (o->type == t) {
                        victim = o;
                        break;
                    }
                /* An EVD is only unlinked here (destroyed
                 * below, unlocked): left linked, the next pass
                 * would find it again after its delete. */
                if (victim)
                    free_child(victim);
            }
            if (!victim)
                break;
            if (t == DAT_HANDLE_TYPE_EVD)
                evd_destroy(static_cast<Evd *>(victim));
        }
    }
    reg_del(ia);
    close(ia->wake_fd);
    delete ia;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK amask,
                            DAT_IA_ATTR *a, DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *p) {
    Ia *ia;
    if (DAT_RETURN err = lookup(h, &ia))
        return err;
    if (async_evd)
        *async_evd = ia->async_evd;
    if (a && amask) {
        std::memset(a, 0, sizeof(*a));
        std::snprintf(a->adapter_name, sizeof(a->adapter_name), "scif node %u", ia->node);
        std::snprintf(a->vendor_name, sizeof(a->vendor_name), "openscif");
        a->hardware_version_major = 1;
        a->firmware_version_major = 1;
        a->ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ia->addr);
        a->max_eps = 1 << 16;
        a->max_dto_per_ep = 1 << 14;
        a->max_rdma_read_per_ep_in = 64;
        a->max_rdma_read_per_ep_out = 64;
        a->max_evds = 1 << 16;
        a->max_evd_qlen = 1 << 20;
        a->max_iov_segments_per_dto = 64;
        a->max_lmrs = 1 << 20;
        a->max_lmr_block_size = 0xffffffffu;
        a->max_lmr_virtual_address = ~0ull;
        a->max_pzs = 1 << 16;
        a->max_message_size = kMaxMessage;
        a->max_rdma_size = kMaxRdma;
        a->max_rmrs = 1 << 20;
        a->max_rmr_target_address = ~0ull;
        a->max_srqs = 1 << 12;
        a->max_ep_per_srq = 1 << 12;
        a->max_recv_per_srq = 1 << 14;
        a->max_iov_segments_per_rdma_read = 64;
        a->max_iov_segments_per_rdma_write = 64;
        a->max_rdma_read_in = 64;
        a->max_rdma_read_out = 64;
        a->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
        a->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
        a->zb_supported = DAT_FALSE;
        a->extension_supported = DAT_EXTENSION_NONE;
        a->extension_version = 0;
    }
    if (p && pmask) {
        std::memset(static_cast<void *>(p), 0, sizeof(*p));
        std::snprintf(p->provider_name, sizeof(p->provider_name), "%s", ia->provider->device_name);
        p->provider_version_major = 2;
        p->provider_version_minor = 0;
        p->dapl_version_major = 2;
        p->dapl_version_minor = 0;
        p->lmr_mem_types_supported = (DAT_MEM_TYPE)(DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR);
        p->iov_ownership_on_return = DAT_IOV_CONSUMER;
        p->dat_qos_supported = DAT_QOS_BEST_EFFORT;
        p->completion_flags_supported = (DAT_COMPLETION_FLAGS)(DAT_COMPLETION_SUPPRESS_FLAG |
                                                               DAT_COMPLETION_SOLICITED_WAIT_FLAG |
                                                               DAT_COMPLETION_UNSIGNALLED_FLAG |
                                                               DAT_COMPLETION_BARRIER_FENCE_FLAG |
                                                               DAT_COMPLETION_EVD_THRESHOLD_FLAG);
        p->is_thread_safe = DAT_FALSE;
        p->max_private_data_size = kMaxPrivateData;
        p->supports_multipath = DAT_FALSE;
        p->ep_creator = DAT_PSP_CREATES_EP_IFASKED;
        p->pz_support = DAT_PZ_UNIQUE;
        p->optimal_buffer_alignment = 4096;
        DAT_BOOLEAN *m = const_cast<DAT_BOOLEAN *>(&p->evd_stream_merging_supported[0][0]);
        for (int i = 0; i < 36; i++)
            m[i] = DAT_TRUE;
        p->srq_supported = DAT_TRUE;
        p->srq_watermarks_supported = 1;
        p->srq_ep_pz_difference_supported = DAT_FALSE;
        p->srq_info_supported = 1;
        p->ep_recv_info_supported = 1;
        p->lmr_sync_req = DAT_FALSE;
        p->dto_async_return_guaranteed = DAT_FALSE;
        p->rdma_write_for_rdma_read_req = DAT_FALSE;
        p->rdma_read_lmr_rmr_context_exposure = DAT_TRUE;
        p->rmr_scope_supported = DAT_RMR_SCOPE_EP;
        p->is_signal_safe = DAT_FALSE;
        p->ha_supported = DAT_FALSE;
        p->ha_loadbalancing = DAT_HA_LB_NONE;
        /*
         * The transfer unit consumers such as dtestsrq size their
         * buffers from (SCIF has no MTU: one page).
         */
        static const DAT_NAMED_ATTR specific[] = {
            {"DAT_IB_TRANSPORT_MTU", "4096"},
        };
        p->num_provider_specific_attr = 1;
        p->provider_specific_attr = const_cast<DAT_NAMED_ATTR *>(specific);
    }
    return DAT_SUCCESS;
}

/* ---- consumer context, handle type --------------------------------- */

DAT_RETURN DAT_API set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c) {
    DAT_HANDLE_TYPE t;
    if (!reg_any(h, &t))
        return dat_err(DAT_INVALID_HANDLE);
    static_cast<Obj *>(h)->ctx = c;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c) {
    DAT_HANDLE_TYPE t;
    if (!reg_any(h, &t))
        return dat_err(DAT_INVALID_HANDLE);
    if (!c)
        return dat_err(DAT_INVALID_PARAMETER);
    *c = static_cast<Obj *>(h)->ctx;
    return DAT_SUCCESS;
}

DAT_RETURN DAT_API get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t) {
    DAT_HANDLE_TYPE tt;
    if (!reg_any(h, &tt))
        return dat_err(DAT_INVALID_HANDLE);
    if (!t)
        return dat_err(DAT_INVALID_PARAMETER);
    *t = tt;
    return DAT_SUCCESS;
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

static void cno_destroy(Cno *c) {
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

static DAT_RETURN evd_create_locked(Ia *ia, DAT_COUNT qlen, Cno *cno, DAT_EVD_FLAGS flags,
                                    Evd **out) {
    if (qlen <= 0)
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
    evd_post(e, *ev);
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

static void evd_destroy(Evd *e) {
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
        scif_unregister(t.first->epd(), t.second.off, t.second.len);
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
static std::shared_ptr<Conn> rmr_unbind_locked(Rmr *r, uint32_t *old) {
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

/* ---- IA close helper ------------------------------------------------------ */

static void free_child(Obj *o) {
    Ia *ia = o->ia;
    switch (o->type) {
    case DAT_HANDLE_TYPE_CR:
        cr_free_locked(static_cast<Cr *>(o));
        break;
    case DAT_HANDLE_TYPE_EP:
        ep_free_locked(static_cast<Ep *>(o));
        break;
    case DAT_HANDLE_TYPE_PSP:
    case DAT_HANDLE_TYPE_RSP:
        sp_free_locked(static_cast<Sp *>(o));
        break;
    case DAT_HANDLE_TYPE_RMR: {
        Rmr *r = static_cast<Rmr *>(o);
        uint32_t id;
        rmr_unbind_locked(r, &id);
        obj_unlink(r);
        delete r;
        break;
    }
    case DAT_HANDLE_TYPE_LMR: {
        Lmr *l = static_cast<Lmr *>(o);
        ia->lmrs.erase(l->id);
        obj_unlink(l);
        delete l;
        break;
    }
    case DAT_HANDLE_TYPE_SRQ:
        obj_unlink(o);
        delete static_cast<Srq *>(o);
        break;
    case DAT_HANDLE_TYPE_CNO:
        obj_unlink(o);
        cno_destroy(static_cast<Cno *>(o));
        break;
    case DAT_HANDLE_TYPE_PZ:
        obj_unlink(o);
        delete static_cast<Pz *>(o);
        break;
    case DAT_HANDLE_TYPE_EVD:
        obj_unlink(o); /* destroyed by the caller, unlocked */
        break;
    default:
        obj_unlink(o);
        break;
    }
}

} /* namespace daplscif */
