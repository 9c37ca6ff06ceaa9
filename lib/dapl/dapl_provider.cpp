// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_provider.cpp - the SCIF DAT 2.0 provider as the DAT registry sees
 * it: dat_provider_init/fini, the registered DAT_PROVIDER tables (one per
 * dat.conf entry naming this library) and the table itself, every slot
 * guarded so no C++ exception crosses the C boundary.  The entry points
 * are declared in dapl_provider.h and defined per object family.
 */
#include "dapl_provider.h"
#include "dapl_scif.h"

#include <list>
#include <mutex>
#include <string>

namespace daplscif {

/* ---- registered providers ------------------------------------------------- */

struct ProviderEntry {
    std::string name;
    DAT_PROVIDER prov;
};
static std::mutex g_prov_mu; /* protects g_provs */
static std::list<ProviderEntry> g_provs;

const DAT_PROVIDER *find_provider(const char *name) {
    std::lock_guard<std::mutex> lk(g_prov_mu);
    for (auto &p : g_provs)
        if (p.name == name)
            return &p.prov;
    return g_provs.empty() ? nullptr : &g_provs.front().prov;
}

/* ---- not implemented (listed in libdaplscif(7)) ----------------------- */

static DAT_RETURN DAT_API cr_handoff(DAT_CR_HANDLE, DAT_CONN_QUAL) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API csp_create(DAT_IA_HANDLE, DAT_COMM *, DAT_IA_ADDRESS_PTR, DAT_EVD_HANDLE,
                                     DAT_CSP_HANDLE *) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API csp_query(DAT_CSP_HANDLE, DAT_CSP_PARAM_MASK, DAT_CSP_PARAM *) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API csp_free(DAT_CSP_HANDLE) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API ep_common_connect(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_TIMEOUT,
                                            DAT_COUNT, const DAT_PVOID) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API ep_post_rdma_read_to_rmr(DAT_EP_HANDLE, const DAT_RMR_TRIPLET *,
                                                   DAT_DTO_COOKIE, const DAT_RMR_TRIPLET *,
                                                   DAT_COMPLETION_FLAGS) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API ia_ha_related(DAT_IA_HANDLE, const DAT_NAME_PTR, DAT_BOOLEAN *answer) {
    if (answer)
        *answer = DAT_FALSE;
    return dat_err(DAT_NOT_IMPLEMENTED);
}
static DAT_RETURN DAT_API handle_extendedop(DAT_HANDLE, DAT_EXTENDED_OP, va_list) {
    return dat_err(DAT_NOT_IMPLEMENTED);
}

/* ---- the table ------------------------------------------------------------- */

/*
 * Every entry point goes through Guard: no C++ exception crosses the C
 * boundary (an allocation failure becomes DAT_INSUFFICIENT_RESOURCES).
 */
template <typename F, F f> struct Guard;
template <typename... A, DAT_RETURN (*f)(A...)> struct Guard<DAT_RETURN (*)(A...), f> {
    static DAT_RETURN DAT_API call(A... a) noexcept {
        try {
            return f(a...);
        } catch (...) {
            return dat_err(DAT_INSUFFICIENT_RESOURCES);
        }
    }
};
#define G(fn) (Guard<decltype(&fn), &fn>::call)

/*
 * The table the registry dispatches through.  Designated initializers
 * (C++20, accepted by g++ and clang++ in C++17 as an extension) name every slot;
 * with -Wmissing-field-initializers made an error here, a slot left out
 * does not compile, and a slot out of order is an error in C++ anyway.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wc++20-extensions"
#pragma GCC diagnostic error "-Wmissing-field-initializers"
static const DAT_PROVIDER provider_template = {
    .device_name = "ofa-v2-scif",
    .extension = nullptr,
    .ia_open_func = G(ia_open),
    .ia_query_func = G(ia_query),
    .ia_close_func = G(ia_close),
    .set_consumer_context_func = G(set_consumer_context),
    .get_consumer_context_func = G(get_consumer_context),
    .get_handle_type_func = G(get_handle_type),
    .cno_create_func = G(cno_create),
    .cno_modify_agent_func = G(cno_modify_agent),
    .cno_query_func = G(cno_query),
    .cno_free_func = G(cno_free),
    .cno_wait_func = G(cno_wait),
    .cr_query_func = G(cr_query),
    .cr_accept_func = G(cr_accept),
    .cr_reject_func = G(cr_reject),
    .cr_handoff_func = G(cr_handoff),
    .evd_create_func = G(evd_create),
    .evd_query_func = G(evd_query),
    .evd_modify_cno_func = G(evd_modify_cno),
    .evd_enable_func = G(evd_enable),
    .evd_disable_func = G(evd_disable),
    .evd_wait_func = G(evd_wait),
    .evd_resize_func = G(evd_resize),
    .evd_post_se_func = G(evd_post_se),
    .evd_dequeue_func = G(evd_dequeue),
    .evd_free_func = G(evd_free),
    .ep_create_func = G(ep_create),
    .ep_query_func = G(ep_query),
    .ep_modify_func = G(ep_modify),
    .ep_connect_func = G(ep_connect),
    .ep_dup_connect_func = G(ep_dup_connect),
    .ep_disconnect_func = G(ep_disconnect),
    .ep_post_send_func = G(ep_post_send),
    .ep_post_recv_func = G(ep_post_recv),
    .ep_post_rdma_read_func = G(ep_post_rdma_read),
    .ep_post_rdma_write_func = G(ep_post_rdma_write),
    .ep_get_status_func = G(ep_get_status),
    .ep_free_func = G(ep_free),
    .lmr_create_func = G(lmr_create),
    .lmr_query_func = G(lmr_query),
    .lmr_free_func = G(lmr_free),
    .rmr_create_func = G(rmr_create),
    .rmr_query_func = G(rmr_query),
    .rmr_bind_func = G(rmr_bind),
    .rmr_free_func = G(rmr_free),
    .psp_create_func = G(psp_create),
    .psp_query_func = G(psp_query),
    .psp_free_func = G(psp_free),
    .rsp_create_func = G(rsp_create),
    .rsp_query_func = G(rsp_query),
    .rsp_free_func = G(rsp_free),
    .pz_create_func = G(pz_create),
    .pz_query_func = G(pz_query),
    .pz_free_func = G(pz_free),
    .psp_create_any_func = G(psp_create_any),
    .ep_reset_func = G(ep_reset),
    .evd_set_unwaitable_func = G(evd_set_unwaitable),
    .evd_clear_unwaitable_func = G(evd_clear_unwaitable),
    .lmr_sync_rdma_read_func = G(lmr_sync),
    .lmr_sync_rdma_write_func = G(lmr_sync),
    .ep_create_with_srq_func = G(ep_create_with_srq),
    .ep_recv_query_func = G(ep_recv_query),
    .ep_set_watermark_func = G(ep_set_watermark),
    .srq_create_func = G(srq_create),
    .srq_free_func = G(srq_free),
    .srq_post_recv_func = G(srq_post_recv),
    .srq_query_func = G(srq_query),
    .srq_resize_func = G(srq_resize),
    .srq_set_lw_func = G(srq_set_lw),
    .csp_create_func = G(csp_create),
    .csp_query_func = G(csp_query),
    .csp_free_func = G(csp_free),
    .ep_common_connect_func = G(ep_common_connect),
    .rmr_create_for_ep_func = G(rmr_create),
    .ep_post_send_with_invalidate_func = G(ep_post_send_inv),
    .ep_post_rdma_read_to_rmr_func = G(ep_post_rdma_read_to_rmr),
    .cno_fd_create_func = G(cno_fd_create),
    .cno_trigger_func = G(cno_trigger),
    .ia_ha_related_func = G(ia_ha_related),
    .handle_extendedop_func = G(handle_extendedop),
};
#pragma GCC diagnostic pop

/* ---- registry entry points --------------------------------------------- */

static void provider_init(const DAT_PROVIDER_INFO *info, const char *) {
    if (!info)
        return;
    std::lock_guard<std::mutex> lk(g_prov_mu);
    for (auto &p : g_provs)
        if (p.name == info->ia_name)
            return;
    g_provs.push_back({info->ia_name, provider_template});
    ProviderEntry &e = g_provs.back();
    e.prov.device_name = e.name.c_str();
    dat_registry_add_provider(&e.prov, info);
}

static void provider_fini(const DAT_PROVIDER_INFO *info) {
    if (!info)
        return;
    std::lock_guard<std::mutex> lk(g_prov_mu);
    for (auto it = g_provs.begin(); it != g_provs.end(); ++it) {
        if (it->name == info->ia_name) {
            dat_registry_remove_provider(&it->prov, info);
            g_provs.erase(it);
            return;
        }
    }
}

} /* namespace daplscif */

extern "C" {

__attribute__((visibility("default"))) void DAT_API dat_provider_init(const DAT_PROVIDER_INFO *info,
                                                                      const char *instance_data) {
    try {
        daplscif::provider_init(info, instance_data);
    } catch (...) {
    }
}

__attribute__((visibility("default"))) void DAT_API
dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    try {
        daplscif::provider_fini(info);
    } catch (...) {
    }
}

/* Looked up by the registry for dat_extension_op(): none supported. */
__attribute__((visibility("default"))) DAT_RETURN DAT_API dapl_extensions(DAT_HANDLE,
                                                                          DAT_EXTENDED_OP,
                                                                          va_list) {
    return daplscif::dat_err(DAT_NOT_IMPLEMENTED);
}

} /* extern "C" */
