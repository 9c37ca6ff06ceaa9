// SPDX-License-Identifier: GPL-2.0
/*
 * Endpoint objects: allocation, reference counting, state, close, and the
 * core side of the RMA contract (scif_rma.h).
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include "scif_ep.h"
#include "scif_transport.h"

LIST_HEAD(scif_eps);
DEFINE_MUTEX(scif_eps_mutex);
struct scif_stats scif_stats;

static atomic_t scif_ep_next_id = ATOMIC_INIT(0);

const char *scif_ep_state_name(enum scif_ep_state s)
{
	switch (s) {
	case SCIFEP_UNBOUND:
		return "unbound";
	case SCIFEP_BOUND:
		return "bound";
	case SCIFEP_LISTENING:
		return "listening";
	case SCIFEP_CONNECTING:
		return "connecting";
	case SCIFEP_CONNECTED:
		return "connected";
	case SCIFEP_DISCONNECTED:
		return "disconnected";
	case SCIFEP_CLOSED:
		return "closed";
	}
	return "?";
}

struct scif_endpt *scif_ep_alloc(struct scif_node *node)
{
	struct scif_endpt *ep;
	int err;

	ep = kzalloc_node(sizeof(*ep), GFP_KERNEL_ACCOUNT,
			  scif_node_numa(node->id));
	if (!ep)
		return ERR_PTR(-ENOMEM);
	refcount_set(&ep->ref, 1);
	ep->node = node;
	ep->id = atomic_inc_return(&scif_ep_next_id);
	mutex_init(&ep->mutex);
	mutex_init(&ep->send_mutex);
	mutex_init(&ep->recv_mutex);
	spin_lock_init(&ep->lock);
	ep->state = SCIFEP_UNBOUND;
	INIT_LIST_HEAD(&ep->req_link);
	INIT_LIST_HEAD(&ep->pending);
	INIT_LIST_HEAD(&ep->accepted);
	INIT_LIST_HEAD(&ep->acc_link);
	INIT_LIST_HEAD(&ep->tmp_link);
	init_waitqueue_head(&ep->wq);

	err = scif_rma_ep_init(ep);
	if (err) {
		kfree(ep);
		return ERR_PTR(err);
	}

	mutex_lock(&scif_eps_mutex);
	list_add_tail(&ep->all_link, &scif_eps);
	mutex_unlock(&scif_eps_mutex);
	atomic64_inc(&scif_stats.eps_open);
	atomic64_inc(&scif_stats.eps_created);
	return ep;
}
EXPORT_SYMBOL_GPL(scif_ep_alloc);

static void scif_ep_free(struct scif_endpt *ep)
{
	might_sleep();
	scif_rma_ep_release(ep);

	mutex_lock(&scif_eps_mutex);
	list_del(&ep->all_link);
	mutex_unlock(&scif_eps_mutex);

	kvfree(ep->rx.buf);
	atomic64_dec(&scif_stats.eps_open);
	kfree(ep);
}

void scif_ep_get(struct scif_endpt *ep)
{
	refcount_inc(&ep->ref);
}
EXPORT_SYMBOL_GPL(scif_ep_get);

void scif_ep_put(struct scif_endpt *ep)
{
	if (ep && refcount_dec_and_test(&ep->ref))
		scif_ep_free(ep);
}
EXPORT_SYMBOL_GPL(scif_ep_put);

void scif_ep_wake(struct scif_endpt *ep)
{
	wake_up_all(&ep->wq);
}
EXPORT_SYMBOL_GPL(scif_ep_wake);

/* Allocate (first connection attempt) or reset the receive ring. */
int scif_ring_alloc(struct scif_endpt *ep)
{
	if (!ep->rx.buf) {
		ep->rx.buf = kvmalloc_node(scif_ring_size, GFP_KERNEL_ACCOUNT,
					   scif_node_numa(ep->node->id));
		if (!ep->rx.buf)
			return -ENOMEM;
		ep->rx.size = scif_ring_size;
	}
	ep->rx.head = 0;
	ep->rx.tail = 0;
	return 0;
}

void scif_ep_rma_disconnect_once(struct scif_endpt *ep)
{
	might_sleep();
	if (!test_and_set_bit(SCIF_EPF_RMA_DISC, &ep->flags))
		scif_rma_ep_disconnect(ep);
}

/*
 * End @ep's connection from @ep's side with @err (-ECONNRESET for a local
 * close, -ENODEV for node loss): @ep becomes DISCONNECTED, the peer is told
 * through the transport, and the RMA subsystem hears about both ends.
 * Process context, no core lock held.
 */
void scif_ep_end_conn(struct scif_endpt *ep, int err)
{
	struct scif_endpt *peer;
	bool ended = false;

	spin_lock(&ep->lock);
	peer = ep->peer;
	ep->peer = NULL;
	if (ep->state == SCIFEP_CONNECTED) {
		ep->state = SCIFEP_DISCONNECTED;
		ep->disc_err = err;
		ended = true;
	}
	spin_unlock(&ep->lock);
	scif_ep_wake(ep);

	if (peer) {
		if (scif_xprt_disconnect(ep, peer, err)) {
			atomic64_inc(&scif_stats.resets);
			scif_ep_rma_disconnect_once(peer);
			/* the peer's reference on us */
			scif_ep_put(ep);
		}
		scif_ep_put(peer);
	}
	if (ended || peer)
		scif_ep_rma_disconnect_once(ep);
}
EXPORT_SYMBOL_GPL(scif_ep_end_conn);

/*
 * The file holding @ep is released (or @ep is an accepted endpoint that was
 * never registered).  Ends whatever @ep was doing; the caller drops its
 * reference afterwards.
 */
void scif_ep_close(struct scif_endpt *ep)
{
	enum scif_ep_state old;

	mutex_lock(&ep->mutex);
	spin_lock(&ep->lock);
	old = ep->state;
	/*
	 * A connecting or listening endpoint becomes CLOSED at once, so that
	 * an acceptor or a connector racing with us gives up; a connected
	 * one is disconnected first so that the peer learns -ECONNRESET.
	 */
	if (old != SCIFEP_CONNECTED)
		ep->state = SCIFEP_CLOSED;
	spin_unlock(&ep->lock);

	switch (old) {
	case SCIFEP_LISTENING:
		scif_listener_shutdown(ep, -ECONNREFUSED);
		break;
	case SCIFEP_CONNECTING:
		scif_xprt_conn_cancel(ep, ep->peer_id.node, 0);
		break;
	case SCIFEP_CONNECTED:
		scif_ep_end_conn(ep, -ECONNRESET);
		spin_lock(&ep->lock);
		ep->state = SCIFEP_CLOSED;
		spin_unlock(&ep->lock);
		break;
	default:
		break;
	}
	scif_port_unbind(ep);
	mutex_unlock(&ep->mutex);

	/* accepted connections nobody registered die with their listener */
	if (old == SCIFEP_LISTENING)
		scif_accepted_cleanup(ep);
	scif_ep_wake(ep);
}

/* ---- core side of the RMA contract ---- */

int scif_ep_conn_state(struct scif_endpt *ep)
{
	int ret;

	spin_lock(&ep->lock);
	switch (ep->state) {
	case SCIFEP_CONNECTED:
		ret = 0;
		break;
	case SCIFEP_DISCONNECTED:
	case SCIFEP_CLOSED:
		ret = ep->disc_err ? ep->disc_err : -ENOTCONN;
		break;
	default:
		ret = -ENOTCONN;
		break;
	}
	spin_unlock(&ep->lock);
	return ret;
}

int scif_ep_get_peer(struct scif_endpt *ep, struct scif_endpt **peer)
{
	int ret;

	spin_lock(&ep->lock);
	if (ep->state == SCIFEP_CONNECTED && ep->peer) {
		scif_ep_get(ep->peer);
		*peer = ep->peer;
		spin_unlock(&ep->lock);
		return 0;
	}
	spin_unlock(&ep->lock);
	ret = scif_ep_conn_state(ep);
	return ret ? ret : -ENOTCONN;
}

struct scif_rma_ep *scif_ep_rma(struct scif_endpt *ep)
{
	return READ_ONCE(ep->rma);
}

void scif_ep_set_rma(struct scif_endpt *ep, struct scif_rma_ep *rma)
{
	WRITE_ONCE(ep->rma, rma);
}

u16 scif_ep_node(struct scif_endpt *ep)
{
	return ep->node->id;
}
