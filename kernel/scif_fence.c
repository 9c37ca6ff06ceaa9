// SPDX-License-Identifier: GPL-2.0
/*
 * openscif fences (SCIF_FENCE_MARK, SCIF_FENCE_WAIT, SCIF_FENCE_SIGNAL):
 * ordering points in the stream of RMAs of one endpoint (scif_rma_xfer.c).
 *
 * The protocol, step by step:
 *
 *  1. Every RMA takes the next sequence number of its initiator
 *     (rma->issued) and stays on the initiator's rma->inflight, in
 *     ascending sequence, until it completes, successfully or not.
 *
 *  2. An endpoint has "completed up to N" where N is the sequence just
 *     before its oldest RMA still in flight, or rma->issued when none is
 *     (scif_completed()).  RMAs may complete out of order; N only moves
 *     once all older ones are done.
 *
 *  3. SCIF_FENCE_MARK picks the watched endpoint: the caller itself
 *     (SCIF_FENCE_INIT_SELF) or its peer (SCIF_FENCE_INIT_PEER), and
 *     returns that endpoint's rma->issued: the mark covers every RMA it
 *     has issued so far.  The mark carries the low 30 bits of the
 *     sequence; bit 30 (SCIF_MARK_PEER) records the peer side.  A peer
 *     on another host is a proxy with no transfers of its own: there the
 *     far host takes the mark of its endpoint (the transport's fence
 *     operation, SCIF_XPRT_FENCE_MARK; scif_remote_fence_mark()).
 *
 *  4. SCIF_FENCE_WAIT rebuilds the 64-bit sequence from the mark (a mark
 *     older than the first RMA covers nothing) and sleeps on the caller's
 *     rma->fence_wq until the watched endpoint has completed up to it.
 *     A signal ends the wait (restartable); a lost connection ends it
 *     with the connection's error.  A peer mark of a peer on another
 *     host is waited for by the far host (SCIF_XPRT_FENCE_WAIT;
 *     scif_remote_fence_wait()), which answers once its endpoint
 *     completed the mark's RMAs.
 *
 *  5. Every completion of an RMA (scif_xfer_done()) wakes the fence_wq of
 *     both endpoints, so waiters on either side look again.
 *
 *  6. SCIF_FENCE_SIGNAL prepares one or two 64-bit writes: into the
 *     caller's window at loff (SCIF_SIGNAL_LOCAL) and into the peer's
 *     window at roff (SCIF_SIGNAL_REMOTE); each holds a reference on its
 *     window.  If the watched endpoint (as in step 3) has RMAs in flight,
 *     the writes are queued on its rma->signals with the sequence of its
 *     last issued RMA (at most SCIF_MAX_FENCE_SIGNALS per endpoint);
 *     otherwise they are done at once.  A remote signal to a node on
 *     another host, and any SCIF_FENCE_INIT_PEER signal with such a
 *     peer, is synchronous instead (scif_fence_signal_remote()): wait as
 *     a fence wait does (for INIT_PEER: a far mark, then a far wait),
 *     the transport writes the remote value, then the local one is
 *     written.
 *
 *  7. When an RMA completes, scif_xfer_done() takes the queued signals
 *     whose sequence is now completed and scif_fence_fire() writes them,
 *     after a write barrier so that the fenced data is visible before the
 *     value, and drops their window references.
 *
 *  8. When an endpoint's RMA state is released, signals still queued on
 *     it are written as well (scif_fence_release()).
 *
 * All fence state (issued, inflight, signals, nsignals) is under
 * rma->fence_lock, a leaf lock; values are written with no lock held.
 */
#include <linux/highmem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <scif_ioctl.h>
#include "scif_rma_priv.h"
#include "scif_ep.h"
#include "scif_remote.h"
#include "scif_transport.h"

/*
 * Fence signals that may wait on the RMAs of one endpoint (both sides'
 * SCIF_FENCE_SIGNAL calls that watch them); one call may add two.  A call
 * that would go over fails with ENOMEM, as an allocation failure would.
 */
#define SCIF_MAX_FENCE_SIGNALS	1024

static bool scif_fence_done(struct scif_rma_ep *rma, u64 seq)
{
	bool done;

	spin_lock(&rma->fence_lock);
	done = scif_completed(rma) >= seq;
	spin_unlock(&rma->fence_lock);
	return done;
}

/* Write and free the signals on @list (no lock held). */
void scif_fence_fire(struct list_head *list)
{
	struct scif_fence_sig *sig, *tmp;

	/* Data of the fenced transfers first, then the signal values. */
	smp_wmb();
	list_for_each_entry_safe(sig, tmp, list, link) {
		u8 *p = kmap_local_page(sig->win->pages[sig->pgidx]);

		WRITE_ONCE(*(u64 *)(p + sig->pgoff), sig->val);
		kunmap_local(p);
		list_del(&sig->link);
		scif_window_put(sig->win);
		kfree(sig);
	}
}

void scif_fence_release(struct scif_rma_ep *rma)
{
	LIST_HEAD(list);

	spin_lock(&rma->fence_lock);
	list_splice_init(&rma->signals, &list);
	rma->nsignals = 0;
	spin_unlock(&rma->fence_lock);
	scif_fence_fire(&list);
}

/* ---- the fence ioctls ---- */

/* Is @peer a proxy of an endpoint on another host (a remote node)? */
static bool scif_peer_remote(struct scif_endpt *peer)
{
	return scif_ep_node(peer) >= SCIF_REMOTE_NODE_MIN;
}

/*
 * The 64-bit sequence of @mark's low 30 bits on @t (<= issued).  A mark
 * further back than the first RMA (one never handed out, e.g. above the
 * last mark while fewer than 2^30 RMAs were issued) covers nothing: like
 * a mark whose RMAs are long done, it is complete at once instead of
 * waiting for a sequence that the wrap made huge.
 */
static u64 scif_mark_seq(struct scif_rma_ep *t, int mark)
{
	u64 back, seq;

	spin_lock(&t->fence_lock);
	back = (t->issued - (u64)mark) & SCIF_MARK_SEQ_MASK;
	seq = back > t->issued ? 0 : t->issued - back;
	spin_unlock(&t->fence_lock);
	return seq;
}

/* The endpoint whose transfers a mark/signal watches; counted if peer. */
static int scif_fence_target(struct scif_endpt *ep, bool peer_side,
			     struct scif_endpt **peer, struct scif_rma_ep **t)
{
	int err;

	*peer = NULL;
	if (!peer_side) {
		err = scif_ep_conn_state(ep);
		if (err)
			return err;
		*t = scif_ep_rma(ep);
		return 0;
	}
	err = scif_ep_get_peer(ep, peer);
	if (err)
		return err;
	*t = scif_ep_rma(*peer);
	if (!*t) {
		scif_ep_put(*peer);
		*peer = NULL;
		return -ECONNRESET;
	}
	return 0;
}

long scif_fence_mark_ioctl(struct scif_endpt *ep, void __user *uarg)
{
	struct scifioctl_fence_mark fm;
	struct scif_endpt *peer;
	struct scif_rma_ep *t;
	bool peer_side;
	int mark, err;

	if (copy_from_user(&fm, uarg, sizeof(fm)))
		return -EFAULT;
	if (fm.flags != SCIF_ABI_FENCE_INIT_SELF &&
	    fm.flags != SCIF_ABI_FENCE_INIT_PEER)
		return -EINVAL;
	peer_side = fm.flags == SCIF_ABI_FENCE_INIT_PEER;
	err = scif_fence_target(ep, peer_side, &peer, &t);
	if (err)
		return err;
	spin_lock(&t->fence_lock);
	mark = (int)(t->issued & SCIF_MARK_SEQ_MASK);
	spin_unlock(&t->fence_lock);
	if (peer_side) {
		/* across hosts the far host marks its endpoint's transfers */
		if (scif_peer_remote(peer))
			err = scif_xprt_fence(ep, peer, SCIF_XPRT_FENCE_MARK,
					      &mark);
		mark = (mark & SCIF_MARK_SEQ_MASK) | SCIF_MARK_PEER;
		scif_ep_put(peer);
		if (err)
			return err;
	}
	if (put_user(mark, (int __user *)u64_to_user_ptr(fm.mark)))
		return -EFAULT;
	return 0;
}

/*
 * Wait (interruptibly, on @ep's RMA state @rma) until @t completed up to
 * @seq: 0, -ERESTARTSYS, or the error of @ep's connection ending.
 */
static int scif_fence_wait_seq(struct scif_endpt *ep, struct scif_rma_ep *rma,
			       struct scif_rma_ep *t, u64 seq)
{
	if (wait_event_interruptible(rma->fence_wq,
				     scif_fence_done(t, seq) ||
				     READ_ONCE(rma->disconnected)))
		return -ERESTARTSYS;
	if (!scif_fence_done(t, seq))
		return scif_ep_conn_state(ep) ?: -ECONNRESET;
	return 0;
}

long scif_fence_wait_ioctl(struct scif_endpt *ep, int mark)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep), *t;
	struct scif_endpt *peer;
	int err;

	if (mark < 0)
		return -EINVAL;
	err = scif_fence_target(ep, mark & SCIF_MARK_PEER, &peer, &t);
	if (err)
		return err;
	if (peer && scif_peer_remote(peer)) {
		/* the far host waits for its endpoint's transfers */
		mark &= SCIF_MARK_SEQ_MASK;
		err = scif_xprt_fence(ep, peer, SCIF_XPRT_FENCE_WAIT, &mark);
	} else {
		/* Waiting again on the same mark is harmless: restartable. */
		err = scif_fence_wait_seq(ep, rma, t,
					  scif_mark_seq(t, mark));
	}
	if (peer)
		scif_ep_put(peer);
	return err;
}

static int scif_sig_new(struct scif_rma_ep *rma, s64 off, u64 val,
			struct scif_fence_sig **out)
{
	struct scif_fence_sig *sig;
	struct scif_window *w;
	int err = 0;

	if (off < 0)
		return -ENXIO;
	/*
	 * Charged to the caller's memory cgroup; at its limit this fails
	 * (ENOMEM) instead of invoking the cgroup's OOM killer.
	 */
	sig = kzalloc(sizeof(*sig), GFP_KERNEL_ACCOUNT | __GFP_NORETRY |
		      __GFP_NOWARN);
	if (!sig)
		return -ENOMEM;
	down_read(&rma->win_lock);
	w = scif_window_lookup(rma, off);
	if (!w)
		err = -ENXIO;
	else if (!(w->prot & SCIF_ABI_PROT_WRITE))
		err = -EACCES;
	else
		kref_get(&w->ref);
	up_read(&rma->win_lock);
	if (err) {
		kfree(sig);
		return err;
	}
	sig->win = w;
	sig->pgidx = (off - w->offset) >> PAGE_SHIFT;
	sig->pgoff = off & ~PAGE_MASK;
	sig->val = val;
	*out = sig;
	return 0;
}

static void scif_sig_free(struct scif_fence_sig *sig)
{
	if (sig) {
		scif_window_put(sig->win);
		kfree(sig);
	}
}

/*
 * A fence signal with a peer on another host (docs/transport.md), with
 * SCIF_SIGNAL_REMOTE or SCIF_FENCE_INIT_PEER: wait as scif_fence_wait()
 * does for every transfer issued so far by @t (SCIF_FENCE_INIT_SELF) or,
 * for SCIF_FENCE_INIT_PEER, by the far endpoint (the far host marks and
 * waits), then have the transport write the remote value (the far host
 * checks it as a write into its window), then the local one.  An error
 * writes neither; an interrupted wait restarts the call.
 */
static int scif_fence_signal_remote(struct scif_endpt *ep,
				    struct scif_endpt *peer,
				    struct scif_rma_ep *t,
				    const struct scifioctl_fence_signal *fs)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	bool remote = fs->flags & SCIF_ABI_SIGNAL_REMOTE;
	struct scif_fence_sig *lsig = NULL;
	LIST_HEAD(list);
	int err, mark;
	u64 seq;

	if (remote && fs->roff < 0)
		return -ENXIO;
	if (fs->flags & SCIF_ABI_SIGNAL_LOCAL) {
		err = scif_sig_new(rma, fs->loff, fs->lval, &lsig);
		if (err)
			return err;
		list_add_tail(&lsig->link, &list);
	}
	if (fs->flags & SCIF_ABI_FENCE_INIT_PEER) {
		err = scif_xprt_fence(ep, peer, SCIF_XPRT_FENCE_MARK, &mark);
		if (!err)
			err = scif_xprt_fence(ep, peer, SCIF_XPRT_FENCE_WAIT,
					      &mark);
	} else {
		spin_lock(&t->fence_lock);
		seq = t->issued;
		spin_unlock(&t->fence_lock);
		err = scif_fence_wait_seq(ep, rma, t, seq);
	}
	if (!err && remote)
		err = scif_xprt_signal(ep, peer, fs->roff, fs->rval);
	if (err) {
		scif_sig_free(lsig);
		return err;
	}
	scif_fence_fire(&list);
	return 0;
}

int scif_remote_signal(struct scif_endpt *ep, u64 off, u64 val)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	struct scif_fence_sig *sig;
	LIST_HEAD(list);
	int err;

	if (off & 7)
		return -EINVAL;
	if (!rma)
		return -ENXIO;
	err = scif_sig_new(rma, off, val, &sig);
	if (err)
		return err;
	list_add_tail(&sig->link, &list);
	scif_fence_fire(&list);
	return 0;
}
EXPORT_SYMBOL_GPL(scif_remote_signal);

int scif_remote_fence_mark(struct scif_endpt *ep)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	int mark;

	if (!rma || scif_ep_conn_state(ep))
		return -ECONNRESET;
	spin_lock(&rma->fence_lock);
	mark = (int)(rma->issued & SCIF_MARK_SEQ_MASK);
	spin_unlock(&rma->fence_lock);
	return mark;
}
EXPORT_SYMBOL_GPL(scif_remote_fence_mark);

int scif_remote_fence_wait(struct scif_endpt *ep, int mark, long timeout)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	u64 seq;

	if (!rma)
		return -ECONNRESET;
	seq = scif_mark_seq(rma, mark & SCIF_MARK_SEQ_MASK);
	wait_event_timeout(rma->fence_wq, scif_fence_done(rma, seq) ||
					  READ_ONCE(rma->disconnected),
			   timeout);
	if (scif_fence_done(rma, seq))
		return 0;
	return READ_ONCE(rma->disconnected) ? -ECONNRESET : -EAGAIN;
}
EXPORT_SYMBOL_GPL(scif_remote_fence_wait);

long scif_fence_signal_ioctl(struct scif_endpt *ep, void __user *uarg)
{
	struct scifioctl_fence_signal fs;
	struct scif_fence_sig *lsig = NULL, *rsig = NULL;
	struct scif_endpt *peer;
	struct scif_rma_ep *t, *rma = scif_ep_rma(ep);
	unsigned int n = 0;
	int init, err;
	LIST_HEAD(list);

	if (copy_from_user(&fs, uarg, sizeof(fs)))
		return -EFAULT;
	init = fs.flags & (SCIF_ABI_FENCE_INIT_SELF | SCIF_ABI_FENCE_INIT_PEER);
	if (fs.flags & ~(SCIF_ABI_FENCE_INIT_SELF | SCIF_ABI_FENCE_INIT_PEER |
			 SCIF_ABI_SIGNAL_LOCAL | SCIF_ABI_SIGNAL_REMOTE))
		return -EINVAL;
	if (init != SCIF_ABI_FENCE_INIT_SELF &&
	    init != SCIF_ABI_FENCE_INIT_PEER)
		return -EINVAL;
	if (!(fs.flags & (SCIF_ABI_SIGNAL_LOCAL | SCIF_ABI_SIGNAL_REMOTE)))
		return -EINVAL;
	if ((fs.flags & SCIF_ABI_SIGNAL_LOCAL) && (fs.loff & 7))
		return -EINVAL;
	if ((fs.flags & SCIF_ABI_SIGNAL_REMOTE) && (fs.roff & 7))
		return -EINVAL;

	/* Always hold the peer: remote signals need its windows. */
	err = scif_ep_get_peer(ep, &peer);
	if (err)
		return err;
	t = init == SCIF_ABI_FENCE_INIT_PEER ? scif_ep_rma(peer) : rma;
	if (!t || !scif_ep_rma(peer)) {
		err = -ECONNRESET;
		goto out;
	}
	if (scif_peer_remote(peer) &&
	    ((fs.flags & SCIF_ABI_SIGNAL_REMOTE) ||
	     init == SCIF_ABI_FENCE_INIT_PEER)) {
		err = scif_fence_signal_remote(ep, peer, t, &fs);
		goto out;
	}
	if (fs.flags & SCIF_ABI_SIGNAL_LOCAL) {
		err = scif_sig_new(rma, fs.loff, fs.lval, &lsig);
		if (err)
			goto out;
		list_add_tail(&lsig->link, &list);
		n++;
	}
	if (fs.flags & SCIF_ABI_SIGNAL_REMOTE) {
		err = scif_sig_new(scif_ep_rma(peer), fs.roff, fs.rval, &rsig);
		if (err)
			goto out;
		list_add_tail(&rsig->link, &list);
		n++;
	}

	spin_lock(&t->fence_lock);
	if (scif_completed(t) < t->issued) {
		if (t->nsignals + n > SCIF_MAX_FENCE_SIGNALS) {
			spin_unlock(&t->fence_lock);
			err = -ENOMEM;
			goto out;
		}
		if (lsig)
			lsig->seq = t->issued;
		if (rsig)
			rsig->seq = t->issued;
		/* issued never decreases: signals stays sorted by seq */
		list_splice_tail_init(&list, &t->signals);
		t->nsignals += n;
	}
	spin_unlock(&t->fence_lock);
	/* Nothing in flight: the values are due now. */
	scif_fence_fire(&list);
	scif_ep_put(peer);
	return 0;
out:
	/* Set-up failed: drop what was prepared without writing it. */
	scif_sig_free(lsig);
	scif_sig_free(rsig);
	scif_ep_put(peer);
	return err;
}
