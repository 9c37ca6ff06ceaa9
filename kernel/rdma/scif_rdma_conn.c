// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: SCIF connections and messages across a link and the
 * transport operations of remote nodes (scif_rdma.h steps 12-18).
 */

#include "scif_rdma.h"

/* ---- connections across the link (steps 12-17) ---- */

DEFINE_MUTEX(srd_msg_mutex);
/* configured peers by node id, srd_msg_mutex */
struct srd_peer *srd_peer_of[SCIF_ALL_NODES];

static int srd_send_ctl(struct srd_peer *peer, struct srd_conn *c, u8 type,
			u32 dst, u32 arg, u32 arg2)
{
	struct srd_tx *tx = srd_tx_alloc(type, dst, c ? c->lid : 0, 0);
	struct srd_hdr *h;

	if (!tx)
		return -ENOMEM;
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(arg);
	h->arg2 = cpu_to_be32(arg2);
	return srd_xmit(peer, c ? c->gen : READ_ONCE(peer->gen), tx);
}

/* connection serials (srd_conn.serial): a read key names one */
static atomic64_t srd_conn_serial = ATOMIC64_INIT(0);

/*
 * Put @c in its peer's table under a new id, the one after the last
 * given out: an id is used again only once all others were, so a frame
 * still on its way for an ended connection (an RMA request of a call
 * that outlived its close, say) meets no new connection under the same
 * ids.  0 (or 1: the ids went round) or -EBUSY, -ENOMEM.  srd_msg_mutex
 * held.
 */
static int srd_conn_alloc_id(struct srd_peer *peer, struct srd_conn *c)
{
	lockdep_assert_held(&srd_msg_mutex);
	return xa_alloc_cyclic(&peer->conns, &c->lid, c,
			       XA_LIMIT(1, SCIF_RDMA_MAX_CONNS),
			       &peer->conn_next, GFP_KERNEL_ACCOUNT);
}

/*
 * Whether connection @lid of @peer is still the live one of serial
 * @serial on the link of generation @gen: what a frame sent for it after
 * the connection was looked up must check, under srd_msg_mutex, so that
 * nothing follows the connection's CLOSE (srd_disconnect() sends it under
 * that mutex).
 */
bool srd_conn_live(struct srd_peer *peer, u64 gen, u32 lid, u64 serial)
{
	struct srd_conn *c;

	lockdep_assert_held(&srd_msg_mutex);
	c = xa_load(&peer->conns, lid);
	return c && c->serial == serial && c->gen == gen &&
	       c->state == SRDC_LIVE;
}

/* Drop @c from its peer's table and free it (srd_msg_mutex held). */
static void srd_conn_free(struct srd_peer *peer, struct srd_conn *c)
{
	/* the far host may read our windows of it no more (step 24) */
	srd_keys_conn_gone(peer, c->gen, c->lid);
	xa_erase(&peer->conns, c->lid);
	if (c->proxy && c->proxy->xprt == c)
		c->proxy->xprt = NULL;
	scif_ep_put(c->proxy);
	scif_ep_put(c->ep);
	kfree(c);
}

/* Resolve the waiting connector of @c as refused with @err. */
static void srd_conn_refuse(struct srd_conn *c, int err)
{
	struct scif_endpt *ep = c->ep;

	spin_lock(&ep->lock);
	if (ep->state == SCIFEP_CONNECTING && ep->xprt == c) {
		ep->state = SCIFEP_BOUND;
		ep->conn_err = err;
	}
	ep->xprt = NULL;
	spin_unlock(&ep->lock);
	scif_ep_wake(ep);
}

/*
 * End the live connection @c from the far side (CLOSE received, protocol
 * violation, link lost): its local endpoint gets @err after its queued
 * data.  srd_msg_mutex held.
 */
static void srd_conn_end(struct srd_peer *peer, struct srd_conn *c, int err)
{
	scif_ep_end_conn(c->proxy, err);
	wake_up_all(&srd_txwq[peer->id]);
}

/* The local endpoint the proxy @p is connected to, counted, or NULL. */
struct scif_endpt *srd_proxy_peer(struct scif_endpt *p)
{
	struct scif_endpt *ep;

	spin_lock(&p->lock);
	ep = p->peer;
	if (ep)
		scif_ep_get(ep);
	spin_unlock(&p->lock);
	return ep;
}

/* A protocol violation on live @c: reset it, tell the peer (step 17). */
static void srd_conn_violation(struct srd_peer *peer, struct srd_conn *c,
			       const char *why, u32 len)
{
	srd_bad_frame(peer, why, len);
	srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0);
	c->state = SRDC_CLOSING;
	srd_conn_end(peer, c, -ECONNRESET);
}

/* CONN_REQ (step 12): a connector on the peer wants one of our ports. */
static void srd_rx_conn_req(struct srd_peer *peer, u64 gen,
			    const struct srd_hdr *h)
{
	u32 src = be32_to_cpu(h->src), arg = be32_to_cpu(h->arg);
	u32 ring = be32_to_cpu(h->arg2);
	struct scif_node *dst = scif_node_lookup(0);
	struct scif_endpt *p;
	struct srd_conn *c;
	int ret;

	if (!src || h->dst || !(arg >> 16) || !(arg & 0xffff) || !ring ||
	    ring > SCIF_RDMA_RING_MAX) {
		srd_bad_frame(peer, "bad CONN_REQ", sizeof(*h));
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		goto refuse;
	c->serial = atomic64_inc_return(&srd_conn_serial);
	p = scif_ep_alloc(scif_remote_node(peer->id));
	if (IS_ERR(p)) {
		kfree(c);
		goto refuse;
	}
	c->proxy = p;
	c->rid = src;
	c->gen = gen;
	c->state = SRDC_QUEUED;
	if (srd_conn_alloc_id(peer, c) < 0) {
		scif_ep_put(p);
		kfree(c);
		goto refuse;
	}
	p->port = arg >> 16;
	p->peer_id.node = 0;
	p->peer_id.port = arg & 0xffff;
	p->rx.size = ring;
	p->state = SCIFEP_CONNECTING;
	p->xprt = c;
	ret = scif_conn_deliver(p, dst, arg & 0xffff);
	if (ret) {
		srd_send_ctl(peer, c, SRD_F_CONN_REJ, src, -ret, 0);
		srd_conn_free(peer, c);
	}
	return;
refuse:
	srd_send_ctl(peer, NULL, SRD_F_CONN_REJ, src, ECONNREFUSED, 0);
}

/* CONN_ACC (step 13): our connector is connected. */
static void srd_rx_conn_acc(struct srd_peer *peer, struct srd_conn *c,
			    const struct srd_hdr *h)
{
	u32 src = be32_to_cpu(h->src), port = be32_to_cpu(h->arg);
	u32 ring = be32_to_cpu(h->arg2);
	struct scif_endpt *ep = c->ep, *p = c->proxy;
	bool ok = false;

	if (!src || !port || port > SCIF_PORT_MAX || !ring ||
	    ring > SCIF_RDMA_RING_MAX) {
		srd_bad_frame(peer, "bad CONN_ACC", sizeof(*h));
		if (c->state == SRDC_CONNECTING)
			srd_conn_refuse(c, -ECONNREFUSED);
		srd_conn_free(peer, c);
		return;
	}
	c->rid = src;
	if (c->state == SRDC_CONNECTING) {
		p->port = port;
		p->rx.size = ring;
		spin_lock(&ep->lock);
		if (ep->state == SCIFEP_CONNECTING && ep->xprt == c) {
			ok = true;
			p->peer_id.node = ep->node->id;
			p->peer_id.port = ep->port;
			scif_ep_get(ep);
			p->peer = ep;
			p->state = SCIFEP_CONNECTED;
			p->xprt = c;
			scif_ep_get(p);
			ep->peer = p;
			ep->peer_id.node = peer->id;
			ep->peer_id.port = port;
			ep->state = SCIFEP_CONNECTED;
			ep->nb_unreported = ep->nb_connect;
			c->credit_sent = ep->rx.tail;
		}
		ep->xprt = NULL;
		spin_unlock(&ep->lock);
		scif_ep_wake(ep);
	}
	if (ok) {
		c->state = SRDC_LIVE;
		scif_ep_put(c->ep);
		c->ep = NULL;
		return;
	}
	/* cancelled meanwhile: end it at once */
	srd_send_ctl(peer, c, SRD_F_CLOSE, src, 0, 0);
	c->state = SRDC_CLOSING;
}

/* DATA (step 14): bytes for our endpoint, within the credit we gave. */
static void srd_rx_data(struct srd_peer *peer, struct srd_conn *c,
			const u8 *payload, u32 len)
{
	struct scif_endpt *ep = srd_proxy_peer(c->proxy);
	struct scif_ring *r;
	u32 head, off, chunk;

	if (!ep)
		return;		/* ended here, our CLOSE is on its way */
	r = &ep->rx;
	if (len > scif_ring_space(r)) {
		scif_ep_put(ep);
		srd_conn_violation(peer, c, "DATA beyond credit", len);
		return;
	}
	head = r->head;
	off = head & (r->size - 1);
	chunk = min(len, r->size - off);
	memcpy(r->buf + off, payload, chunk);
	memcpy(r->buf, payload + chunk, len - chunk);
	/* publish the bytes before the head: pairs with scif_ring_used() */
	smp_store_release(&r->head, head + len);
	scif_ep_wake(ep);
	scif_ep_put(ep);
}

/* CREDIT (step 15): the far receiver consumed up to arg. */
static void srd_rx_credit(struct srd_peer *peer, struct srd_conn *c,
			  const struct srd_hdr *h)
{
	struct scif_ring *r = &c->proxy->rx;
	u32 tail = be32_to_cpu(h->arg), old = READ_ONCE(r->tail);
	struct scif_endpt *ep;

	if (tail - old > READ_ONCE(r->head) - old) {
		srd_conn_violation(peer, c, "CREDIT beyond the data sent",
				   sizeof(*h));
		return;
	}
	/* pairs with the acquire of the tail in scif_ring_space() */
	smp_store_release(&r->tail, tail);
	wake_up_all(&srd_txwq[peer->id]);
	ep = srd_proxy_peer(c->proxy);
	if (ep) {
		scif_ep_wake(ep);	/* poll: EPOLLOUT */
		scif_ep_put(ep);
	}
}

/* A frame for the connection layer (step 12-16), srd_msg_mutex taken. */
void srd_msg_recv(struct srd_peer *peer, u64 gen,
			 const struct srd_hdr *h, const u8 *payload, u32 len)
{
	u32 dst = be32_to_cpu(h->dst), src = be32_to_cpu(h->src);
	struct srd_conn *c;
	bool known;

	mutex_lock(&srd_msg_mutex);
	if (h->type == SRD_F_CONN_REQ) {
		srd_rx_conn_req(peer, gen, h);
		goto out;
	}
	if (h->type == SRD_F_RMA_DONE) {
		/* matched by request id: it may outlive its connection */
		srd_rma_rx_done(peer, gen, h);
		goto out;
	}
	c = dst ? xa_load(&peer->conns, dst) : NULL;
	if (h->type >= SRD_F_RKEY) {
		/* read keys, steps 23-24 */
		srd_key_rx(peer, gen,
			   c && c->gen == gen && c->rid == src &&
			   c->state == SRDC_LIVE ? c : NULL, h, payload);
		goto out;
	}
	if (h->type == SRD_F_RMA_REQ) {
		/* every request is answered (step 20) */
		known = c && c->gen == gen && c->rid == src;
		srd_rma_rx_req(peer, gen,
			       known && c->state == SRDC_LIVE ? c : NULL, known,
			       h, payload);
		goto out;
	}
	if (!c || c->gen != gen) {
		srd_bad_frame(peer, "unknown connection", len);
		goto out;
	}
	if (c->state != SRDC_CONNECTING && c->state != SRDC_CANCELLED &&
	    c->rid != src) {
		srd_bad_frame(peer, "wrong source connection", len);
		goto out;
	}
	switch (h->type) {
	case SRD_F_CONN_ACC:
		if (c->state == SRDC_CONNECTING || c->state == SRDC_CANCELLED)
			srd_rx_conn_acc(peer, c, h);
		else
			srd_bad_frame(peer, "unexpected CONN_ACC", len);
		break;
	case SRD_F_CONN_REJ:
		if (c->state == SRDC_CONNECTING) {
			srd_conn_refuse(c, be32_to_cpu(h->arg) == ENODEV ?
					   -ENODEV : -ECONNREFUSED);
			srd_conn_free(peer, c);
		} else if (c->state == SRDC_CANCELLED) {
			srd_conn_free(peer, c);
		} else {
			srd_bad_frame(peer, "unexpected CONN_REJ", len);
		}
		break;
	case SRD_F_DATA:
		if (c->state == SRDC_LIVE)
			srd_rx_data(peer, c, payload, len);
		else if (c->state != SRDC_CLOSING)
			srd_bad_frame(peer, "DATA on no connection", len);
		break;
	case SRD_F_CREDIT:
		if (c->state == SRDC_LIVE)
			srd_rx_credit(peer, c, h);
		else if (c->state != SRDC_CLOSING)
			srd_bad_frame(peer, "CREDIT on no connection", len);
		break;
	case SRD_F_CLOSE:
		if (c->state == SRDC_LIVE) {
			srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0);
			srd_conn_end(peer, c, -ECONNRESET);
			srd_conn_free(peer, c);
		} else if (c->state == SRDC_CLOSING) {
			srd_conn_free(peer, c);
		} else {
			srd_bad_frame(peer, "unexpected CLOSE", len);
		}
		break;
	}
out:
	mutex_unlock(&srd_msg_mutex);
}

/*
 * The link of generation @gen (any if @all) is gone: end its connections
 * (step 18).  No lock held.
 */
void srd_msg_link_down(struct srd_peer *peer, u64 gen, bool all)
{
	struct srd_conn *c;
	unsigned long i;

	mutex_lock(&srd_msg_mutex);
	xa_for_each(&peer->conns, i, c) {
		if (!all && c->gen != gen)
			continue;
		switch (c->state) {
		case SRDC_CONNECTING:
			srd_conn_refuse(c, -ENODEV);
			break;
		case SRDC_QUEUED:
			if (!scif_conn_withdraw(c->proxy, -ENODEV))
				srd_conn_end(peer, c, -ECONNRESET);
			break;
		case SRDC_LIVE:
			srd_conn_end(peer, c, -ECONNRESET);
			break;
		default:
			break;
		}
		srd_conn_free(peer, c);
	}
	WRITE_ONCE(srd_out_full[peer->id], false);
	wake_up_all(&srd_txwq[peer->id]);
	mutex_unlock(&srd_msg_mutex);
}

/* ---- the transport operations of remote nodes (scif_transport.h) ---- */

/* The up peer serving node @id (srd_msg_mutex held), or NULL. */
static struct srd_peer *srd_up_peer(u16 id)
{
	struct srd_peer *peer = id < SCIF_ALL_NODES ? srd_peer_of[id] : NULL;

	if (!peer || READ_ONCE(peer->state) != SRD_UP)
		return NULL;
	return peer;
}

static int srd_op_conn_request(struct scif_endpt *ep, u16 dst_node,
			       u16 port)
{
	struct srd_peer *peer;
	struct scif_endpt *p;
	struct srd_conn *c;
	int ret = -ENODEV;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	c->serial = atomic64_inc_return(&srd_conn_serial);
	p = scif_ep_alloc(scif_remote_node(dst_node));
	if (IS_ERR(p)) {
		kfree(c);
		return PTR_ERR(p);
	}
	c->proxy = p;
	mutex_lock(&srd_msg_mutex);
	peer = srd_up_peer(dst_node);
	if (!peer)
		goto fail;
	c->gen = READ_ONCE(peer->gen);
	c->state = SRDC_CONNECTING;
	ret = srd_conn_alloc_id(peer, c);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto fail;
	}
	scif_ep_get(ep);
	c->ep = ep;
	spin_lock(&ep->lock);
	ep->xprt = c;
	spin_unlock(&ep->lock);
	ret = srd_send_ctl(peer, c, SRD_F_CONN_REQ, 0,
			   (u32)ep->port << 16 | port, ep->rx.size);
	if (ret) {
		spin_lock(&ep->lock);
		ep->xprt = NULL;
		spin_unlock(&ep->lock);
		srd_conn_free(peer, c);
		mutex_unlock(&srd_msg_mutex);
		return -ENODEV;
	}
	mutex_unlock(&srd_msg_mutex);
	return 0;
fail:
	mutex_unlock(&srd_msg_mutex);
	scif_ep_put(p);
	kfree(c);
	return ret;
}

static bool srd_conn_cancel(struct scif_endpt *ep, int err)
{
	struct srd_conn *c;
	bool done = false;

	mutex_lock(&srd_msg_mutex);
	c = ep->xprt;
	if (c && c->state == SRDC_CONNECTING && c->ep == ep) {
		/* the answer still comes: CONN_ACC then gets a CLOSE */
		srd_conn_refuse(c, err);
		c->state = SRDC_CANCELLED;
		c->ep = NULL;
		scif_ep_put(ep);
		done = true;
	}
	mutex_unlock(&srd_msg_mutex);
	return done;
}

static ssize_t srd_msg_send(struct scif_endpt *ep, struct scif_endpt *p,
			    const void __user *buf, size_t len)
{
	struct srd_peer *peer;
	struct srd_conn *c;
	struct srd_tx *tx;
	u32 n, space = scif_ring_space(&p->rx);
	unsigned long left;
	int ret;

	if (!space || READ_ONCE(srd_out_full[p->node->id]))
		return 0;
	n = min_t(size_t, min_t(size_t, len, space), SRD_PAYLOAD_MAX);
	tx = srd_tx_alloc(SRD_F_DATA, 0, 0, n);
	if (!tx)
		return -ENOMEM;
	left = copy_from_user(tx->buf + sizeof(struct srd_hdr), buf, n);
	if (left == n) {
		kfree(tx);
		return -EFAULT;
	}
	if (left) {
		n -= left;
		tx->len -= left;
		tx->payload = n;
		((struct srd_hdr *)tx->buf)->len = cpu_to_be32(n);
	}
	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || c->state != SRDC_LIVE || !peer) {
		mutex_unlock(&srd_msg_mutex);
		kfree(tx);
		return -ECONNRESET;
	}
	((struct srd_hdr *)tx->buf)->dst = cpu_to_be32(c->rid);
	((struct srd_hdr *)tx->buf)->src = cpu_to_be32(c->lid);
	/* we are the one producer of p->rx (ep->send_mutex) */
	smp_store_release(&p->rx.head, p->rx.head + n);
	ret = srd_xmit(peer, c->gen, tx);
	mutex_unlock(&srd_msg_mutex);
	/* not "ret ? ret : n": that is a u32, and -ECONNRESET would be too */
	if (ret)
		return ret;
	return n;
}

/* Room freed in our endpoint's ring: credit the far sender (step 15). */
static void srd_notify(struct scif_endpt *p)
{
	struct srd_peer *peer;
	struct scif_endpt *ep;
	struct srd_conn *c;
	u32 tail;

	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || c->state != SRDC_LIVE || !peer)
		goto out;
	ep = srd_proxy_peer(p);
	if (!ep)
		goto out;
	/* pairs with the release of the tail in scif_recv (ring read) */
	tail = smp_load_acquire(&ep->rx.tail);
	scif_ep_put(ep);
	if (tail != c->credit_sent &&
	    !srd_send_ctl(peer, c, SRD_F_CREDIT, c->rid, tail, 0))
		c->credit_sent = tail;
out:
	mutex_unlock(&srd_msg_mutex);
}

/* Our endpoint @ep ended the connection to proxy @p (step 16). */
static bool srd_disconnect(struct scif_endpt *ep, struct scif_endpt *p,
			   int err)
{
	struct srd_peer *peer;
	struct srd_conn *c;
	bool was = false;

	mutex_lock(&srd_msg_mutex);
	spin_lock(&p->lock);
	if (p->peer == ep) {
		p->peer = NULL;
		was = true;
		if (p->state == SCIFEP_CONNECTED) {
			p->state = SCIFEP_DISCONNECTED;
			p->disc_err = err;
		}
	}
	spin_unlock(&p->lock);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (c && peer && c->state == SRDC_LIVE) {
		c->state = SRDC_CLOSING;
		if (srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0))
			srd_conn_free(peer, c);	/* the link is gone */
	}
	wake_up_all(&srd_txwq[p->node->id]);
	mutex_unlock(&srd_msg_mutex);
	return was;
}

/* Our listener answered the peer's connector (proxy @p): step 12. */
static void srd_conn_answer(struct scif_endpt *p, int err)
{
	struct scif_endpt *nep = NULL;
	struct srd_peer *peer;
	struct srd_conn *c;
	u32 ring = 0;

	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || !peer || c->state != SRDC_QUEUED)
		goto out;
	if (!err) {
		spin_lock(&p->lock);
		nep = p->peer;
		if (nep)
			ring = nep->rx.size;
		spin_unlock(&p->lock);
	}
	if (nep) {
		c->state = SRDC_LIVE;
		srd_send_ctl(peer, c, SRD_F_CONN_ACC, c->rid, p->peer_id.port,
			     ring);
	} else {
		srd_send_ctl(peer, c, SRD_F_CONN_REJ, c->rid,
			     err ? -err : ECONNREFUSED, 0);
		srd_conn_free(peer, c);
	}
out:
	mutex_unlock(&srd_msg_mutex);
}

static bool srd_can_send(struct scif_endpt *ep, struct scif_endpt *p)
{
	return READ_ONCE(ep->state) != SCIFEP_CONNECTED ||
	       READ_ONCE(p->state) != SCIFEP_CONNECTED ||
	       (scif_ring_space(&p->rx) &&
		!READ_ONCE(srd_out_full[p->node->id]));
}

static int srd_send_wait(struct scif_endpt *ep, struct scif_endpt *p)
{
	return wait_event_interruptible(srd_txwq[p->node->id],
					srd_can_send(ep, p));
}

const struct scif_transport_ops srd_ops = {
	.name = "rdma",
	.conn_request = srd_op_conn_request,
	.conn_cancel = srd_conn_cancel,
	.msg_send = srd_msg_send,
	.notify = srd_notify,
	.disconnect = srd_disconnect,
	.conn_answer = srd_conn_answer,
	.send_wait = srd_send_wait,
	.rma = srd_rma,
	.signal = srd_signal,
	.fence = srd_fence,
	.windows_gone = srd_windows_gone,
};
