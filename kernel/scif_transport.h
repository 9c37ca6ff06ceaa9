/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transport interface: everything that crosses from one SCIF node to
 * another goes through these operations.  Endpoint, connection and
 * messaging code never reach into another node directly.
 *
 * Loopback/emulation (scif_nodes.c) serves the nodes of this kernel: a
 * "peer" is the peer's struct scif_endpt.  The remote transport
 * (scif_remote.h, kernel/rdma/scif_rdma*.c) represents an endpoint on
 * another host by a local proxy endpoint of the remote node and implements
 * the same operations with messages.
 *
 * Dispatch: conn_request and conn_cancel go to the operations of the
 * node the connection is for (the destination); msg_send, notify and
 * disconnect to those of the peer endpoint's node (a proxy of a remote
 * endpoint belongs to a remote node, whose operations are the remote
 * transport's, see scif_remote.h); conn_answer to those of the
 * connector's node.  Optional operations may be NULL.  The core calls
 * them only through the scif_xprt_*() wrappers (scif_ep.h), which read
 * node->ops and call it inside an SRCU read section that
 * scif_remote_unregister() waits for.
 *
 * All operations are called in process context with no core lock held
 * unless stated otherwise.
 */
#ifndef SCIF_TRANSPORT_H
#define SCIF_TRANSPORT_H

#include <linux/types.h>

struct scif_endpt;
struct scif_node;

struct scif_transport_ops {
	const char *name;
	/*
	 * Deliver a connection request from @ep (state CONNECTING, bound) to
	 * port @port of node @dst_node.  Returns 0 once the request is queued
	 * at the listener (the answer arrives later: the listener's node
	 * completes or refuses @ep), -ENODEV if the node is not reachable,
	 * -ECONNREFUSED if nobody listens there or its backlog is full.
	 */
	int (*conn_request)(struct scif_endpt *ep, u16 dst_node, u16 port);
	/*
	 * Withdraw @ep's request if it is still queued (interrupted connect,
	 * close, node lost).  Returns true if withdrawn: a CONNECTING @ep is
	 * then BOUND again with conn_err = @err.  Returns false if a listener
	 * already took the request; its answer is then imminent.
	 */
	bool (*conn_cancel)(struct scif_endpt *ep, int err);
	/*
	 * Move up to @len bytes from user memory into the receive ring of
	 * @peer, the connected peer of @ep (the caller holds a reference and
	 * ep->send_mutex).  Returns bytes moved (0 if the ring is full) or
	 * -EFAULT if nothing could be copied.
	 */
	ssize_t (*msg_send)(struct scif_endpt *ep, struct scif_endpt *peer,
			    const void __user *buf, size_t len);
	/* Tell @peer that data arrived or room was freed: wake its waiters. */
	void (*notify)(struct scif_endpt *peer);
	/*
	 * The connection between @ep and @peer ended on @ep's side (close,
	 * node lost): mark @peer disconnected with @err and wake it.  Returns
	 * true if @peer still pointed at @ep (the caller then owns @peer's
	 * reference on @ep and must drop it).
	 */
	bool (*disconnect)(struct scif_endpt *ep, struct scif_endpt *peer,
			   int err);
	/*
	 * Optional.  A listener resolved connector @cep (whose request was
	 * queued by scif_conn_deliver()): connected (@err 0, cep->peer is
	 * the accepted endpoint) or refused with @err.  Called once per
	 * resolved request, after @cep's state changed, with ep->mutex of the
	 * listener or acceptor possibly held but no spinlock.
	 */
	void (*conn_answer)(struct scif_endpt *cep, int err);
	/*
	 * Optional.  Wait (interruptibly) until msg_send() to @peer may move
	 * bytes again or @ep is no longer connected; 0 or -ERESTARTSYS.
	 * Without it, scif_send() waits for room in @peer's ring.
	 */
	int (*send_wait)(struct scif_endpt *ep, struct scif_endpt *peer);
	/*
	 * Optional.  An RMA across nodes (docs/transport.md "RMA across
	 * hosts"): move @len bytes between the local pages @pages (the range
	 * starts at byte @first_off of pages[0]; the caller holds them pinned
	 * until this returns) and offset @roffset of the registered address
	 * space of the far endpoint that @peer stands for.  @op is
	 * SCIF_XPRT_RMA_READ (far window to the local pages) or
	 * SCIF_XPRT_RMA_WRITE; @flags the call's SCIF_RMA_* flags.  The far
	 * side checks the range against its own windows.  Returns 0 once
	 * every byte moved; -ENXIO (no window there), -EACCES (the window's
	 * protection forbids it), -ECONNRESET (connection or link ended),
	 * -EINTR (the caller was killed), -ENOMEM.  Without it an RMA to
	 * @peer's node fails with -ENXIO.
	 */
	int (*rma)(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		   u64 roffset, struct page **pages, unsigned int first_off,
		   size_t len, u32 flags);
	/*
	 * Optional.  A remote fence signal across nodes: write @val (8
	 * bytes) at offset @roffset (8-aligned) of the registered address
	 * space of the far endpoint @peer stands for, checked there as a
	 * write.  The caller has waited for the transfers the signal
	 * follows.  Returns 0 once written; -ENXIO, -EACCES, -ECONNRESET,
	 * -EINTR, -ENOMEM as rma.  Without it such a signal fails with
	 * -ENXIO.
	 */
	int (*signal)(struct scif_endpt *ep, struct scif_endpt *peer,
		      u64 roffset, u64 val);
	/*
	 * Optional.  A fence on the far endpoint's own transfers
	 * (SCIF_FENCE_INIT_PEER across nodes): @op SCIF_XPRT_FENCE_MARK
	 * stores in *@mark the far endpoint's SCIF_FENCE_INIT_SELF mark
	 * (its low 30 bits: every transfer it issued so far);
	 * SCIF_XPRT_FENCE_WAIT returns once the far endpoint completed the
	 * transfers of mark *@mark.  Returns 0, -ECONNRESET (connection or
	 * link ended), -EINTR (the caller was killed), -ENOMEM.  Without it
	 * such a fence fails with -ENXIO.
	 */
	int (*fence)(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		     int *mark);
	/*
	 * Optional, of the remote transport only.  Windows it holds through
	 * scif_remote_window_get() stopped being registered
	 * (scif_remote_window_gone()): revoke the far hosts' access to them.
	 * With @wait (scif_unregister(), no lock held) before returning,
	 * bounded: a far host that does not answer loses it anyway.  Without
	 * (an endpoint's release, which may run wherever its last reference
	 * goes, the transport's own receive path included) start it only.
	 */
	void (*windows_gone)(bool wait);
};

#define SCIF_XPRT_RMA_READ	1
#define SCIF_XPRT_RMA_WRITE	2
#define SCIF_XPRT_RMA_SIGNAL	3	/* on the wire only (scif_rdma) */
#define SCIF_XPRT_FENCE_MARK	1
#define SCIF_XPRT_FENCE_WAIT	2

extern const struct scif_transport_ops scif_loopback_ops;

#endif /* SCIF_TRANSPORT_H */
