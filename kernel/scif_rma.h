/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Contract between the endpoint core (scif_ep*.c, scif_fops.c, ...) and the
 * RMA subsystem (scif_rma*.c: registered windows, RMA copies, fences, mmap).
 *
 * The core owns struct scif_endpt, its life time and its connection state.
 * The RMA subsystem owns everything behind ep->rma.  The two only meet
 * through the functions below.
 */
#ifndef SCIF_RMA_H
#define SCIF_RMA_H

#include <linux/fs.h>
#include <linux/mm_types.h>

struct scif_endpt;
struct scif_rma_ep;
struct dentry;

/* ---- provided by the RMA subsystem, called by the core ---- */

/* Module load / unload; @dbg is the module's debugfs directory (may be NULL). */
int scif_rma_init(struct dentry *dbg);
void scif_rma_exit(void);

/* A new endpoint was created (open of the device). Sets ep->rma. */
int scif_rma_ep_init(struct scif_endpt *ep);

/*
 * The connection of @ep ended: local close, peer close or node lost.
 * Called once per endpoint, for both ends, in process context, with no core
 * lock held.  Must fail waiters, new RMAs and new mappings of our windows
 * (existing peer mappings keep working until unmapped), and must not sleep
 * for long.
 */
void scif_rma_ep_disconnect(struct scif_endpt *ep);

/*
 * The last reference to @ep is gone (its file was released and nobody holds
 * a scif_ep_get_peer() reference any more).  Unregisters all its windows
 * (unpinning every page, uncharging RLIMIT_MEMLOCK without needing the
 * process's mm to be alive; windows the peer still maps do so when the peer
 * unmaps them) and drops ep->rma.  Called in process context
 * (it may sleep), after scif_rma_ep_disconnect() if @ep was ever connected.
 * In-flight RMAs hold references of their own, so none is running here.
 */
void scif_rma_ep_release(struct scif_endpt *ep);

/* SCIF_REG .. SCIF_VWRITETO and SCIF_FENCE_*; arg is the user pointer. */
long scif_rma_ioctl(struct scif_endpt *ep, unsigned int cmd, unsigned long arg);

/* mmap() of the device: map the peer's window at vma->vm_pgoff << PAGE_SHIFT. */
int scif_rma_mmap(struct scif_endpt *ep, struct vm_area_struct *vma);

/* ---- provided by the core, used by the RMA subsystem ---- */

/*
 * Connection state of @ep: 0 when connected, else -ENOTCONN (never
 * connected / not yet), -ECONNRESET (peer closed) or -ENODEV (peer node lost).
 */
int scif_ep_conn_state(struct scif_endpt *ep);

/*
 * On success stores a counted reference to the connected peer endpoint in
 * *peer and returns 0; else returns scif_ep_conn_state()'s error.  Drop the
 * reference with scif_ep_put().  The peer's struct (and peer->rma) stays
 * valid while the reference is held, even after the peer's file is closed;
 * scif_rma_ep_release(peer) is only called once the last reference is gone.
 */
int scif_ep_get_peer(struct scif_endpt *ep, struct scif_endpt **peer);
/* Drop a reference; may sleep (the last put runs scif_rma_ep_release()). */
void scif_ep_put(struct scif_endpt *ep);
/* Take another reference on an endpoint the caller already holds. */
void scif_ep_get(struct scif_endpt *ep);

/* The endpoint's RMA state, and its local node id. */
struct scif_rma_ep *scif_ep_rma(struct scif_endpt *ep);
u16 scif_ep_node(struct scif_endpt *ep);

/*
 * Store the RMA state of @ep (called by scif_rma_ep_init(), and with NULL by
 * scif_rma_ep_release()); scif_ep_rma() returns what was stored last.
 */
void scif_ep_set_rma(struct scif_endpt *ep, struct scif_rma_ep *rma);

#endif /* SCIF_RMA_H */
