/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_provider.h - the entry points of the SCIF DAT 2.0 provider: every
 * function the DAT_PROVIDER table (dapl_provider.cpp) points to, declared
 * once here and defined in the file of its object family.  The registry
 * calls them through the table only; the arguments are as in the DAT 2.0
 * specification (dat2/udat_redirection.h).
 */
#ifndef DAPL_PROVIDER_H
#define DAPL_PROVIDER_H

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

namespace daplscif {

/* ---- registration (dapl_provider.cpp) ------------------------------------ */

/*
 * The registered table whose ia_name is `name`, or the first one when none
 * matches; nullptr when no provider is registered.
 */
const DAT_PROVIDER *find_provider(const char *name);

/* ---- IA and handles (dapl_ia.cpp) ----------------------------------------- */

DAT_RETURN DAT_API ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                           DAT_IA_HANDLE *iap);
DAT_RETURN DAT_API ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags);
DAT_RETURN DAT_API ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK amask,
                            DAT_IA_ATTR *a, DAT_PROVIDER_ATTR_MASK pmask, DAT_PROVIDER_ATTR *p);
DAT_RETURN DAT_API set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c);
DAT_RETURN DAT_API get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c);
DAT_RETURN DAT_API get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t);

/* ---- CNO (dapl_evd.cpp) --------------------------------------------------- */

DAT_RETURN DAT_API cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *out);
DAT_RETURN DAT_API cno_fd_create(DAT_IA_HANDLE h, DAT_FD *fd, DAT_CNO_HANDLE *out);
DAT_RETURN DAT_API cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent);
DAT_RETURN DAT_API cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *p);
DAT_RETURN DAT_API cno_free(DAT_CNO_HANDLE h);
DAT_RETURN DAT_API cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd);
DAT_RETURN DAT_API cno_trigger(DAT_CNO_HANDLE h, DAT_EVD_HANDLE *evd);

/* ---- EVD (dapl_evd.cpp) --------------------------------------------------- */

DAT_RETURN DAT_API evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cnoh,
                              DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *out);
DAT_RETURN DAT_API evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *p);
DAT_RETURN DAT_API evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE ch);
DAT_RETURN DAT_API evd_enable(DAT_EVD_HANDLE h);
DAT_RETURN DAT_API evd_disable(DAT_EVD_HANDLE h);
DAT_RETURN DAT_API evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                            DAT_EVENT *ev, DAT_COUNT *nmore);
DAT_RETURN DAT_API evd_set_unwaitable(DAT_EVD_HANDLE h);
DAT_RETURN DAT_API evd_clear_unwaitable(DAT_EVD_HANDLE h);
DAT_RETURN DAT_API evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen);
DAT_RETURN DAT_API evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *ev);
DAT_RETURN DAT_API evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *ev);
DAT_RETURN DAT_API evd_free(DAT_EVD_HANDLE h);

/* ---- memory: PZ, LMR, RMR, SRQ (dapl_mem.cpp) ----------------------------- */

DAT_RETURN DAT_API pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out);
DAT_RETURN DAT_API pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *p);
DAT_RETURN DAT_API pz_free(DAT_PZ_HANDLE h);
DAT_RETURN DAT_API lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION desc,
                              DAT_VLEN len, DAT_PZ_HANDLE pzh, DAT_MEM_PRIV_FLAGS priv,
                              DAT_VA_TYPE va_type, DAT_LMR_HANDLE *out, DAT_LMR_CONTEXT *lctx,
                              DAT_RMR_CONTEXT *rctx, DAT_VLEN *reg_len, DAT_VADDR *reg_addr);
DAT_RETURN DAT_API lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *p);
DAT_RETURN DAT_API lmr_free(DAT_LMR_HANDLE h);
/* Both lmr_sync_rdma_read and lmr_sync_rdma_write: memory is coherent. */
DAT_RETURN DAT_API lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *iov, DAT_VLEN n);
/* Also rmr_create_for_ep: RMRs are EP scoped already. */
DAT_RETURN DAT_API rmr_create(DAT_PZ_HANDLE h, DAT_RMR_HANDLE *out);
DAT_RETURN DAT_API rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *p);
DAT_RETURN DAT_API rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lh, const DAT_LMR_TRIPLET *trip,
                            DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE eph,
                            DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS cflags,
                            DAT_RMR_CONTEXT *ctx);
DAT_RETURN DAT_API rmr_free(DAT_RMR_HANDLE h);
DAT_RETURN DAT_API srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pzh, DAT_SRQ_ATTR *attr,
                              DAT_SRQ_HANDLE *out);
DAT_RETURN DAT_API srq_free(DAT_SRQ_HANDLE h);
DAT_RETURN DAT_API srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *p);
DAT_RETURN DAT_API srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT n);
DAT_RETURN DAT_API srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT lw);

/* ---- EP (dapl_ep.cpp) ----------------------------------------------------- */

DAT_RETURN DAT_API ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
                             DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd,
                             const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out);
DAT_RETURN DAT_API ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
                                      DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd,
                                      DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr,
                                      DAT_EP_HANDLE *out);
DAT_RETURN DAT_API ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *p);
DAT_RETURN DAT_API ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *p);
DAT_RETURN DAT_API ep_free(DAT_EP_HANDLE h);
DAT_RETURN DAT_API ep_reset(DAT_EP_HANDLE h);
DAT_RETURN DAT_API ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *st, DAT_BOOLEAN *recv_idle,
                                 DAT_BOOLEAN *req_idle);
DAT_RETURN DAT_API ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT *nbufs, DAT_COUNT *span);
DAT_RETURN DAT_API ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft, DAT_COUNT hard);
DAT_RETURN DAT_API ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags);

/* ---- connection management: EP connect, PSP, RSP, CR (dapl_cm.cpp) -------- */

DAT_RETURN DAT_API ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                              DAT_TIMEOUT timeout, DAT_COUNT plen, const DAT_PVOID pdata,
                              DAT_QOS qos, DAT_CONNECT_FLAGS flags);
DAT_RETURN DAT_API ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
                                  DAT_COUNT plen, const DAT_PVOID pdata, DAT_QOS qos);
DAT_RETURN DAT_API psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                              DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out);
DAT_RETURN DAT_API psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
                                  DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out);
DAT_RETURN DAT_API psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *p);
DAT_RETURN DAT_API psp_free(DAT_PSP_HANDLE h);
DAT_RETURN DAT_API rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE eph,
                              DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *out);
DAT_RETURN DAT_API rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *p);
DAT_RETURN DAT_API rsp_free(DAT_RSP_HANDLE h);
DAT_RETURN DAT_API cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *p);
DAT_RETURN DAT_API cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE eph, DAT_COUNT plen,
                             const DAT_PVOID pdata);
DAT_RETURN DAT_API cr_reject(DAT_CR_HANDLE h, DAT_COUNT plen, const DAT_PVOID pdata);

/* ---- DTOs (dapl_dto.cpp) -------------------------------------------------- */

DAT_RETURN DAT_API ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
DAT_RETURN DAT_API ep_post_send_inv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                    DAT_BOOLEAN inv, DAT_RMR_CONTEXT rmr);
DAT_RETURN DAT_API ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
DAT_RETURN DAT_API srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                 DAT_DTO_COOKIE cookie);
DAT_RETURN DAT_API ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                     DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rt,
                                     DAT_COMPLETION_FLAGS flags);
DAT_RETURN DAT_API ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                      DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rt,
                                      DAT_COMPLETION_FLAGS flags);

} /* namespace daplscif */

#endif /* DAPL_PROVIDER_H */
