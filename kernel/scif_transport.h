/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transport interface: everything that crosses from one SCIF node to
 * another goes through these operations.  Endpoint, connection and
 * messaging code never reach into another node directly.
 *
 * Loopback/emulation (scif_nodes.c) is the first implementation: all nodes
 * live in this kernel, so a "peer" is the peer's struct scif_endpt.  A
 * transport to real remote nodes would represent remote endpoints by local
 * proxy endpoints and implement the same operations with messages.
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
};

extern const struct scif_transport_ops scif_loopback_ops;

#endif /* SCIF_TRANSPORT_H */
