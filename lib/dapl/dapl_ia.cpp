// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_ia.cpp - the handle registry (every live object, for the
 * DAT_INVALID_HANDLE checks), the IA: open, query, close (which frees every
 * child object), the consumer context and dat_get_handle_type.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

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

/* ---- the progress engine's wakeup ---------------------------------- */

void Ia::wake() {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof(one));
    (void)r;
}

/* ---- IA ------------------------------------------------------------------ */

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
    if (scif_ops().get_nodeIDs(nodes, 1, &self) < 0)
        return dat_err(DAT_PROVIDER_NOT_FOUND);
    /* Fail early when the device is missing (module not loaded). */
    scif_epd_t probe = scif_ops().open();
    if (probe == SCIF_OPEN_FAILED)
        return dat_err(DAT_INSUFFICIENT_RESOURCES);
    scif_ops().close(probe);

    auto ia = std::make_unique<Ia>();
    ia->provider = prov;
    ia->node = self;
    ia->host = cluster_host_id();
    node_to_name(self, ia->host, &ia->addr);
    ia->rdma.vcache = rma_cache_from_env(std::getenv("DAPLSCIF_RMA_CACHE"), pins_unlimited());
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
    /* Jobs not started yet are cancelled with their EPs below. */
    rdma_stop(ia);
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
        a->max_evd_qlen = kMaxEvdQlen;
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
