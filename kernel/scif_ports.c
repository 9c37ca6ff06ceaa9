// SPDX-License-Identifier: GPL-2.0
/*
 * Per-node port space.  node->ports maps a port to the endpoint that owns
 * it; SCIF_BIND with port 0, and connect on an unbound endpoint, pick a free
 * port from SCIF_PORT_RSVD upward (cyclically, so a port just released is
 * not handed out again at once).
 */
#include <linux/capability.h>
#include "scif_ep.h"

/* Bind @ep to @pn (0: any free port).  ep->mutex held.  Returns the port. */
int scif_port_bind(struct scif_endpt *ep, u16 pn)
{
	struct scif_node *node = ep->node;
	enum scif_ep_state st;
	u32 port;
	int err;

	lockdep_assert_held(&ep->mutex);
	set_bit(SCIF_EPF_USED, &ep->flags);
	spin_lock(&ep->lock);
	st = ep->state;
	spin_unlock(&ep->lock);
	switch (st) {
	case SCIFEP_UNBOUND:
		break;
	case SCIFEP_BOUND:
	case SCIFEP_CLOSED:
		return -EINVAL;
	default:
		return -EISCONN;
	}
	if (pn && pn < SCIF_ABI_ADMIN_PORT_END && !capable(CAP_SYS_ADMIN))
		return -EACCES;

	if (pn) {
		port = pn;
		err = xa_insert(&node->ports, port, ep, GFP_KERNEL_ACCOUNT);
		if (err == -EBUSY)
			return -EADDRINUSE;
	} else {
		xa_lock(&node->ports);
		if (node->port_next < SCIF_ABI_PORT_RSVD)
			node->port_next = SCIF_ABI_PORT_RSVD;
		err = __xa_alloc_cyclic(&node->ports, &port, ep,
					XA_LIMIT(SCIF_ABI_PORT_RSVD,
						 SCIF_PORT_MAX),
					&node->port_next, GFP_KERNEL_ACCOUNT);
		xa_unlock(&node->ports);
		if (err == -EBUSY)
			return -ENOSPC;
		if (err > 0)
			err = 0;	/* wrapped around */
	}
	if (err)
		return err;

	spin_lock(&ep->lock);
	ep->port = port;
	ep->state = SCIFEP_BOUND;
	spin_unlock(&ep->lock);
	set_bit(SCIF_EPF_PORT_OWNED, &ep->flags);
	return port;
}

/* Give up the port @ep owns, if any.  ep->mutex held. */
void scif_port_unbind(struct scif_endpt *ep)
{
	if (test_and_clear_bit(SCIF_EPF_PORT_OWNED, &ep->flags))
		xa_erase(&ep->node->ports, ep->port);
}

/* Undo a bind whose result could not be written back to user space. */
void scif_port_unbind_if(struct scif_endpt *ep, u16 port)
{
	mutex_lock(&ep->mutex);
	spin_lock(&ep->lock);
	if (ep->state == SCIFEP_BOUND && ep->port == port) {
		ep->state = SCIFEP_UNBOUND;
		ep->port = 0;
	} else {
		port = 0;
	}
	spin_unlock(&ep->lock);
	if (port && test_and_clear_bit(SCIF_EPF_PORT_OWNED, &ep->flags))
		xa_erase(&ep->node->ports, port);
	mutex_unlock(&ep->mutex);
}
