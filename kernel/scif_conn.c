// SPDX-License-Identifier: GPL-2.0
/*
 * Connection set-up: listen and backlog, connect (blocking and
 * non-blocking), accept (request + register with an opaque handle), and
 * connection teardown on the listener side.
 */
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <linux/random.h>
#include <linux/err.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include "scif_ep.h"
#include "scif_remote.h"
#include "scif_transport.h"

/*
 * Accepted endpoints waiting for SCIF_ACCEPTREG (each counted), hashed by
 * their handle: 64 random bits, nothing derived from an index or address.
 * scif_accept_lock protects the table, every listener's accepted list and
 * the acc_* fields of the endpoints on them.
 */
static DEFINE_HASHTABLE(scif_accept_ht, 8);
DEFINE_SPINLOCK(scif_accept_lock);
unsigned long scif_accept_count;	/* entries, under scif_accept_lock */

/* The pending accept with @handle, or NULL.  scif_accept_lock held. */
static struct scif_endpt *scif_accept_find(u64 handle)
{
	struct scif_endpt *nep;

	hash_for_each_possible(scif_accept_ht, nep, acc_hnode, handle)
		if (nep->acc_handle == handle)
			return nep;
	return NULL;
}

/* Remove @nep from the table and its listener's list.  Lock held. */
static void scif_accept_unlink(struct scif_endpt *nep)
{
	hash_del(&nep->acc_hnode);
	list_del_init(&nep->acc_link);
	nep->acc_pending = false;
	scif_accept_count--;
}

int scif_listen(struct scif_endpt *ep, int backlog)
{
	int ret = 0;

	backlog = clamp(backlog, 1, SCIF_BACKLOG_MAX);
	mutex_lock(&ep->mutex);
	spin_lock(&ep->lock);
	switch (ep->state) {
	case SCIFEP_BOUND:
	case SCIFEP_LISTENING:
		ep->state = SCIFEP_LISTENING;
		ep->backlog = backlog;
		ep->conn_err = 0;
		break;
	case SCIFEP_CONNECTING:
	case SCIFEP_CONNECTED:
	case SCIFEP_DISCONNECTED:
		ret = -EISCONN;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	spin_unlock(&ep->lock);
	set_bit(SCIF_EPF_USED, &ep->flags);
	mutex_unlock(&ep->mutex);
	return ret;
}

/*
 * Queue connector @ep (CONNECTING) at the listener on @port of local node
 * @dst.  Used by transports once a request reached its destination node.
 */
int scif_conn_deliver(struct scif_endpt *ep, struct scif_node *dst, u16 port)
{
	struct scif_endpt *lep;
	int ret = -ECONNREFUSED;

	xa_lock(&dst->ports);
	lep = xa_load(&dst->ports, port);
	if (lep) {
		spin_lock(&lep->lock);
		if (lep->state == SCIFEP_LISTENING &&
		    lep->nr_pending < lep->backlog) {
			spin_lock_nested(&ep->lock, SINGLE_DEPTH_NESTING);
			if (ep->state == SCIFEP_CONNECTING && !ep->conn_lep) {
				refcount_inc(&ep->ref);
				refcount_inc(&lep->ref);
				ep->conn_lep = lep;
				list_add_tail(&ep->req_link, &lep->pending);
				lep->nr_pending++;
				ret = 0;
			}
			spin_unlock(&ep->lock);
			if (!ret)
				scif_ep_wake(lep);
		}
		spin_unlock(&lep->lock);
	}
	xa_unlock(&dst->ports);
	return ret;
}
EXPORT_SYMBOL_GPL(scif_conn_deliver);


/*
 * Resolve connector @cep whose request the listener @lep took off its queue
 * (the caller owns the queue's reference on @cep): connected to @nep, or
 * refused with @err when @nep is NULL.  Returns true if @cep was still
 * waiting for this answer.
 */
static bool scif_conn_resolve(struct scif_endpt *cep, struct scif_endpt *lep,
			      struct scif_endpt *nep, int err)
{
	bool waiting = false, drop_lep = false;

	spin_lock(&cep->lock);
	if (cep->conn_lep == lep) {
		cep->conn_lep = NULL;
		drop_lep = true;
		if (cep->state == SCIFEP_CONNECTING)
			waiting = true;
	}
	if (waiting && nep) {
		scif_ep_get(nep);
		cep->peer = nep;
		cep->peer_id.node = nep->node->id;
		cep->peer_id.port = nep->port;
		cep->state = SCIFEP_CONNECTED;
		cep->nb_unreported = cep->nb_connect;
	} else if (waiting) {
		cep->state = SCIFEP_BOUND;
		cep->conn_err = err;
	}
	spin_unlock(&cep->lock);
	scif_ep_wake(cep);
	if (drop_lep)
		scif_ep_put(lep);
	return waiting;
}

bool scif_conn_withdraw(struct scif_endpt *ep, int err)
{
	struct scif_endpt *lep;
	bool withdrawn = false;

	spin_lock(&ep->lock);
	lep = ep->conn_lep;
	if (lep)
		scif_ep_get(lep);
	spin_unlock(&ep->lock);
	if (!lep)
		return false;

	spin_lock(&lep->lock);
	if (!list_empty(&ep->req_link)) {
		list_del_init(&ep->req_link);
		lep->nr_pending--;
		withdrawn = true;
	}
	spin_unlock(&lep->lock);

	if (withdrawn) {
		scif_conn_resolve(ep, lep, NULL, err);
		/* the queue's reference on us */
		scif_ep_put(ep);
	}
	scif_ep_put(lep);
	return withdrawn;
}
EXPORT_SYMBOL_GPL(scif_conn_withdraw);

static int scif_connect_result(struct scif_endpt *ep)
{
	int ret;

	spin_lock(&ep->lock);
	switch (ep->state) {
	case SCIFEP_CONNECTED:
	case SCIFEP_DISCONNECTED:
		ep->nb_unreported = false;
		ret = 0;
		break;
	case SCIFEP_BOUND:
		ret = ep->conn_err ? ep->conn_err : -ECONNREFUSED;
		ep->conn_err = 0;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	spin_unlock(&ep->lock);
	return ret;
}

int scif_connect(struct scif_endpt *ep, struct scifioctl_connect *req,
		 bool nonblock)
{
	struct scif_node *dst;
	enum scif_ep_state state;
	int ret;

	mutex_lock(&ep->mutex);
	set_bit(SCIF_EPF_USED, &ep->flags);
	spin_lock(&ep->lock);
	state = ep->state;
	ret = 0;
	switch (state) {
	case SCIFEP_LISTENING:
		ret = -EOPNOTSUPP;
		break;
	case SCIFEP_CONNECTING:
		ret = -EALREADY;
		break;
	case SCIFEP_CONNECTED:
		if (ep->nb_unreported) {
			/* first CONNECT after a non-blocking one completed */
			ep->nb_unreported = false;
			req->self.node = ep->node->id;
			req->self.port = ep->port;
			ret = 1;
		} else {
			ret = -EISCONN;
		}
		break;
	case SCIFEP_DISCONNECTED:
		ret = -EISCONN;
		break;
	case SCIFEP_CLOSED:
		ret = -EINVAL;
		break;
	case SCIFEP_UNBOUND:
	case SCIFEP_BOUND:
		if (ep->conn_err) {
			/* report a failed non-blocking connect once */
			ret = ep->conn_err;
			ep->conn_err = 0;
		}
		break;
	}
	spin_unlock(&ep->lock);
	if (ret)
		goto out_unlock;

	if (!req->peer.port) {
		ret = -EINVAL;
		goto out_unlock;
	}
	dst = scif_node_lookup(req->peer.node);
	if (!dst || !READ_ONCE(dst->online) || !READ_ONCE(ep->node->online)) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (state == SCIFEP_UNBOUND) {
		ret = scif_port_bind(ep, 0);
		if (ret < 0)
			goto out_unlock;
	}
	ret = scif_ring_alloc(ep);
	if (ret)
		goto out_unlock;

	spin_lock(&ep->lock);
	ep->state = SCIFEP_CONNECTING;
	ep->peer_id = req->peer;
	ep->nb_connect = nonblock;
	ep->nb_unreported = false;
	ep->conn_err = 0;
	spin_unlock(&ep->lock);
	req->self.node = ep->node->id;
	req->self.port = ep->port;
	atomic64_inc(&scif_stats.connects);

	ret = scif_xprt_conn_request(ep, req->peer.node, req->peer.port);
	if (ret) {
		spin_lock(&ep->lock);
		if (ep->state == SCIFEP_CONNECTING)
			ep->state = SCIFEP_BOUND;
		spin_unlock(&ep->lock);
		if (ret == -ECONNREFUSED)
			atomic64_inc(&scif_stats.refused);
		goto out_unlock;
	}
	if (nonblock) {
		ret = -EINPROGRESS;
		goto out_unlock;
	}
	mutex_unlock(&ep->mutex);

	ret = wait_event_interruptible(ep->wq,
				       READ_ONCE(ep->state) != SCIFEP_CONNECTING);
	if (ret) {
		if (scif_xprt_conn_cancel(ep, req->peer.node, 0))
			return -ERESTARTSYS;
		/* a listener already took the request: its answer is close */
		wait_event(ep->wq, READ_ONCE(ep->state) != SCIFEP_CONNECTING);
	}
	return scif_connect_result(ep);

out_unlock:
	mutex_unlock(&ep->mutex);
	return ret > 0 ? 0 : ret;
}

/* ---- listener side ---- */

/* Refuse every queued connector of @lep with @err. */
void scif_listener_shutdown(struct scif_endpt *lep, int err)
{
	struct scif_endpt *cep;

	for (;;) {
		spin_lock(&lep->lock);
		cep = list_first_entry_or_null(&lep->pending,
					       struct scif_endpt, req_link);
		if (cep) {
			list_del_init(&cep->req_link);
			lep->nr_pending--;
		}
		spin_unlock(&lep->lock);
		if (!cep)
			break;
		if (scif_conn_resolve(cep, lep, NULL, err)) {
			atomic64_inc(&scif_stats.refused);
			scif_xprt_conn_answer(cep, err);
		}
		scif_ep_put(cep);
	}
}

/* Close the accepted endpoints of @lep that were never registered. */
void scif_accepted_cleanup(struct scif_endpt *lep)
{
	struct scif_endpt *nep;

	for (;;) {
		spin_lock(&scif_accept_lock);
		nep = list_first_entry_or_null(&lep->accepted,
					       struct scif_endpt, acc_link);
		if (nep)
			scif_accept_unlink(nep);
		spin_unlock(&scif_accept_lock);
		if (!nep)
			break;
		scif_ep_close(nep);
		scif_ep_put(nep);
	}
}

/*
 * Take the pending accept with @handle off the table.  With @node (an
 * ACCEPTREG) it must be of that node and have been accepted by a process
 * with the caller's effective uid; a handle that does not match is left
 * alone, exactly as if it did not exist.
 */
static struct scif_endpt *scif_accept_take(u64 handle, struct scif_node *node)
{
	struct scif_endpt *nep;

	spin_lock(&scif_accept_lock);
	nep = handle ? scif_accept_find(handle) : NULL;
	if (nep && node &&
	    (nep->node != node || !uid_eq(nep->acc_uid, current_euid())))
		nep = NULL;
	if (nep)
		scif_accept_unlink(nep);
	spin_unlock(&scif_accept_lock);
	return nep;
}

/* Undo an accept whose result could not reach user space. */
int scif_accept_drop(u64 handle)
{
	struct scif_endpt *nep = scif_accept_take(handle, NULL);

	if (!nep)
		return -EINVAL;
	scif_ep_close(nep);
	scif_ep_put(nep);
	return 0;
}

int scif_accept_req(struct scif_endpt *lep, struct scifioctl_accept *acc)
{
	struct scif_endpt *cep, *nep;
	unsigned int flushes = 0;
	bool waited = false;
	u64 handle;
	int ret;

	if (acc->flags & ~SCIF_ABI_ACCEPT_SYNC)
		return -EINVAL;
	for (;;) {
		spin_lock(&lep->lock);
		if (lep->state != SCIFEP_LISTENING) {
			spin_unlock(&lep->lock);
			return -EINVAL;
		}
		if (!waited) {
			/* a close in this process from now on ends the wait */
			lep->acc_files = current->files;
			flushes = lep->acc_flushes;
			waited = true;
		} else if (lep->acc_flushes != flushes) {
			spin_unlock(&lep->lock);
			return -EINTR;
		}
		cep = list_first_entry_or_null(&lep->pending,
					       struct scif_endpt, req_link);
		if (cep) {
			list_del_init(&cep->req_link);
			lep->nr_pending--;
		}
		spin_unlock(&lep->lock);
		if (cep)
			break;
		if (!READ_ONCE(lep->node->online))
			return -ENODEV;
		if (!(acc->flags & SCIF_ABI_ACCEPT_SYNC))
			return -EAGAIN;
		ret = wait_event_interruptible(lep->wq,
			!list_empty_careful(&lep->pending) ||
			READ_ONCE(lep->state) != SCIFEP_LISTENING ||
			!READ_ONCE(lep->node->online) ||
			READ_ONCE(lep->acc_flushes) != flushes);
		if (ret)
			return ret;
	}

	/* we own the queue's reference on cep now */
	nep = scif_ep_alloc(lep->node);
	if (IS_ERR(nep)) {
		ret = PTR_ERR(nep);
		goto refuse;
	}
	ret = scif_ring_alloc(nep);
	if (ret)
		goto refuse_nep;
	nep->acc_uid = current_euid();
	set_bit(SCIF_EPF_USED, &nep->flags);
	nep->port = lep->port;
	nep->peer_id.node = cep->node->id;
	nep->peer_id.port = cep->port;
	nep->state = SCIFEP_CONNECTED;
	nep->peer = cep;		/* takes over the queue's reference */

	/*
	 * Our own reference for the wake-up and the answer: the connector
	 * sees itself connected as soon as resolve drops its lock, and may
	 * close at once; its close drops nep's reference (lb_disconnect) and
	 * then its last one, before we wake or answer it.
	 */
	scif_ep_get(cep);
	if (scif_conn_resolve(cep, lep, nep, 0)) {
		scif_xprt_conn_answer(cep, 0);
	} else {
		/* the connector gave up (closed, node lost) meanwhile */
		spin_lock(&nep->lock);
		nep->peer = NULL;
		nep->state = SCIFEP_DISCONNECTED;
		nep->disc_err = -ECONNRESET;
		spin_unlock(&nep->lock);
		scif_ep_put(cep);
		scif_ep_rma_disconnect_once(nep);
	}
	scif_ep_put(cep);

	/* publish the handle; listener close cleans it up if never used */
	spin_lock(&scif_accept_lock);
	do {
		handle = get_random_u64();
	} while (!handle || scif_accept_find(handle));
	nep->acc_handle = handle;
	hash_add(scif_accept_ht, &nep->acc_hnode, handle);
	nep->acc_pending = true;
	list_add_tail(&nep->acc_link, &lep->accepted);
	scif_accept_count++;
	spin_unlock(&scif_accept_lock);

	atomic64_inc(&scif_stats.accepts);
	acc->peer = nep->peer_id;
	acc->endpt = handle;
	return 0;

refuse_nep:
	scif_ep_put(nep);
refuse:
	if (scif_conn_resolve(cep, lep, NULL, -ECONNREFUSED)) {
		atomic64_inc(&scif_stats.refused);
		scif_xprt_conn_answer(cep, -ECONNREFUSED);
	}
	scif_ep_put(cep);
	return ret;
}

int scif_accept_reg(struct scif_file *sf, u64 handle)
{
	struct scif_endpt *fresh = READ_ONCE(sf->ep), *nep;
	int ret = 0;

	mutex_lock(&fresh->mutex);
	if (sf->orig || fresh->state != SCIFEP_UNBOUND ||
	    test_bit(SCIF_EPF_USED, &fresh->flags)) {
		ret = -EINVAL;
		goto out;
	}
	nep = scif_accept_take(handle, fresh->node);
	if (!nep) {
		ret = -EINVAL;
		goto out;
	}
	spin_lock(&fresh->lock);
	fresh->state = SCIFEP_CLOSED;
	spin_unlock(&fresh->lock);
	sf->orig = fresh;
	/* the handle table's reference on nep now belongs to the file */
	WRITE_ONCE(sf->ep, nep);
	scif_ep_wake(fresh);
out:
	mutex_unlock(&fresh->mutex);
	return ret;
}

/* Node @id was lost: end whatever of @ep depends on it with -ENODEV. */
void scif_ep_node_lost(struct scif_endpt *ep, u16 id)
{
	enum scif_ep_state st;
	bool local = ep->node->id == id, involved;

	spin_lock(&ep->lock);
	st = ep->state;
	involved = local || ep->peer_id.node == id;
	spin_unlock(&ep->lock);

	switch (st) {
	case SCIFEP_CONNECTED:
		if (involved)
			scif_ep_end_conn(ep, -ENODEV);
		break;
	case SCIFEP_CONNECTING:
		if (involved)
			scif_xprt_conn_cancel(ep, ep->peer_id.node, -ENODEV);
		break;
	case SCIFEP_LISTENING:
		if (local) {
			scif_listener_shutdown(ep, -ENODEV);
			scif_ep_wake(ep);
		}
		break;
	default:
		break;
	}
}
