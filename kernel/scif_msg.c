// SPDX-License-Identifier: GPL-2.0
/*
 * Messaging: a byte stream per direction.  Each endpoint owns the ring it
 * receives into; its peer's sender fills it through the transport.  Copies
 * to and from user memory run with only the send/recv mutex held, so a
 * fault never loses data: bytes leave a ring only once they reached user
 * memory, and enter it only once they were read from user memory.
 */
#include <linux/uaccess.h>
#include <linux/sched/signal.h>
#include "scif_ep.h"
#include "scif_transport.h"

/* Producer side; the caller serializes producers of @r. */
ssize_t scif_ring_write(struct scif_ring *r, const void __user *buf,
			size_t len)
{
	u32 head = r->head;
	size_t n = min_t(size_t, len, scif_ring_space(r)), done = 0;

	while (done < n) {
		u32 off = (head + done) & (r->size - 1);
		size_t chunk = min_t(size_t, n - done, r->size - off);
		unsigned long left;

		left = copy_from_user(r->buf + off, buf + done, chunk);
		done += chunk - left;
		if (left)
			break;
	}
	if (done)
		smp_store_release(&r->head, head + (u32)done);
	else if (n)
		return -EFAULT;
	return done;
}

/* Consumer side; the caller holds the endpoint's recv_mutex. */
static ssize_t scif_ring_read(struct scif_ring *r, void __user *buf,
			      size_t len)
{
	u32 tail = r->tail;
	size_t n = min_t(size_t, len, smp_load_acquire(&r->head) - tail);
	size_t done = 0;

	while (done < n) {
		u32 off = (tail + done) & (r->size - 1);
		size_t chunk = min_t(size_t, n - done, r->size - off);
		unsigned long left;

		left = copy_to_user(buf + done, r->buf + off, chunk);
		done += chunk - left;
		if (left)
			break;
	}
	if (done)
		smp_store_release(&r->tail, tail + (u32)done);
	else if (n)
		return -EFAULT;
	return done;
}

/* A snapshot of ep->state; takes ep->lock, so the caller must not hold it. */
static enum scif_ep_state scif_ep_state_read(struct scif_endpt *ep)
{
	enum scif_ep_state st;

	spin_lock(&ep->lock);
	st = ep->state;
	spin_unlock(&ep->lock);
	return st;
}

long scif_send(struct scif_endpt *ep, struct scifioctl_msg *m)
{
	const void __user *ubuf = u64_to_user_ptr(m->msg);
	bool block = m->flags & SCIF_ABI_SEND_BLOCK;
	struct scif_endpt *peer;
	size_t len, sent = 0;
	ssize_t n;
	long ret;

	m->out_len = 0;
	if (m->len < 0 || (m->flags & ~SCIF_ABI_SEND_BLOCK))
		return -EINVAL;
	len = m->len;
	ret = scif_ep_get_peer(ep, &peer);
	if (ret)
		return ret;
	if (!len)
		goto out_put;
	/*
	 * A blocking send keeps the mutex while it waits for room, so that
	 * its bytes stay contiguous in the stream; a non-blocking one does
	 * not wait for it.
	 */
	if (!block && !mutex_trylock(&ep->send_mutex)) {
		ret = -EAGAIN;
		goto out_put;
	}
	if (block && mutex_lock_interruptible(&ep->send_mutex)) {
		ret = -ERESTARTSYS;
		goto out_put;
	}
	for (;;) {
		if (READ_ONCE(ep->state) != SCIFEP_CONNECTED) {
			ret = scif_ep_conn_state(ep);
			break;
		}
		n = scif_xprt_msg_send(ep, peer, ubuf + sent, len - sent);
		if (n < 0) {
			ret = n;
			break;
		}
		if (n) {
			sent += n;
			scif_xprt_notify(peer);
		}
		if (sent == len || (n && !block))
			break;
		if (!block) {
			ret = -EAGAIN;
			break;
		}
		ret = scif_xprt_send_wait(ep, peer);
		if (ret)
			break;
	}
	mutex_unlock(&ep->send_mutex);
out_put:
	scif_ep_put(peer);
	atomic64_add(sent, &scif_stats.bytes_sent);
	m->out_len = sent;
	return sent ? 0 : ret;
}

/* Tell the peer that room was freed in our ring. */
static void scif_recv_notify(struct scif_endpt *ep)
{
	struct scif_endpt *peer;

	if (!scif_ep_get_peer(ep, &peer)) {
		scif_xprt_notify(peer);
		scif_ep_put(peer);
	}
}

long scif_recv(struct scif_endpt *ep, struct scifioctl_msg *m)
{
	void __user *ubuf = u64_to_user_ptr(m->msg);
	bool block = m->flags & SCIF_ABI_RECV_BLOCK;
	enum scif_ep_state st;
	size_t len, got = 0;
	ssize_t n;
	long ret = 0;

	m->out_len = 0;
	if (m->len < 0 || (m->flags & ~SCIF_ABI_RECV_BLOCK))
		return -EINVAL;
	len = m->len;
	st = scif_ep_state_read(ep);
	if (st != SCIFEP_CONNECTED && st != SCIFEP_DISCONNECTED)
		return -ENOTCONN;
	if (!len)
		return 0;
	if (!block && !mutex_trylock(&ep->recv_mutex))
		return -EAGAIN;
	if (block && mutex_lock_interruptible(&ep->recv_mutex))
		return -ERESTARTSYS;
	for (;;) {
		n = scif_ring_read(&ep->rx, ubuf + got, len - got);
		if (n < 0) {
			ret = n;
			break;
		}
		if (n) {
			got += n;
			scif_recv_notify(ep);
		}
		if (got == len || (n && !block))
			break;
		/* the ring is empty (or was, a moment ago) */
		if (scif_ep_state_read(ep) != SCIFEP_CONNECTED) {
			/* the lock above orders us after the peer's last data */
			if (scif_ring_used(&ep->rx))
				continue;
			ret = scif_ep_conn_state(ep);
			if (!ret)
				ret = -ECONNRESET;
			break;
		}
		if (!block) {
			ret = -EAGAIN;
			break;
		}
		ret = wait_event_interruptible(ep->wq,
				scif_ring_used(&ep->rx) ||
				READ_ONCE(ep->state) != SCIFEP_CONNECTED);
		if (ret)
			break;
	}
	mutex_unlock(&ep->recv_mutex);
	atomic64_add(got, &scif_stats.bytes_recv);
	m->out_len = got;
	return got ? 0 : ret;
}
