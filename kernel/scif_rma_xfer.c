// SPDX-License-Identifier: GPL-2.0
/*
 * openscif RMA transfers (SCIF_READFROM, SCIF_WRITETO, SCIF_VREADFROM,
 * SCIF_VWRITETO).  Fences, which watch these transfers, are in
 * scif_fence.c.
 *
 * A transfer is validated and its pages are collected (window pages and,
 * for the v* calls, pinned user pages) in the caller's context.  As in
 * Intel's driver, whatever the CPU moves (SCIF_RMA_USECPU, loopback within
 * a node, no DMA channel, short transfers) is copied right there and is
 * complete when the call returns; only a transfer the DMA engine or the
 * far host moves without SCIF_RMA_SYNC goes to a work item and completes
 * later.  Every transfer gets a sequence number from its initiator;
 * "completed up to N" is the sequence before the oldest transfer still in
 * flight, which is what fence marks compare against.
 */
#include <linux/bitops.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <scif_ioctl.h>
#include "scif_rma_priv.h"
#include "scif_ep.h"
#include "scif_remote.h"
#include "scif_transport.h"

#define SCIF_RMA_FLAGS	(SCIF_ABI_RMA_USECPU | SCIF_ABI_RMA_USECACHE | \
			 SCIF_ABI_RMA_SYNC | SCIF_ABI_RMA_ORDERED)

/*
 * Asynchronous transfers an endpoint may have queued; a further one waits
 * (interruptibly) for a slot before it pins anything.  A slot is taken
 * atomically with the check, so the bound holds for any number of threads.
 */
#define SCIF_MAX_INFLIGHT	64

/* Below this many bytes the CPU is used even when a DMA channel exists. */
#define SCIF_DMA_MIN		256

struct workqueue_struct *scif_rma_wq;
/* Most asynchronous transfers one endpoint ever had in flight (debugfs). */
atomic_t scif_rma_queue_max = ATOMIC_INIT(0);
/* Most of them it ever had running at once (debugfs rma_parallel_max). */
atomic_t scif_rma_parallel_max = ATOMIC_INIT(0);
atomic64_t scif_rma_transfers = ATOMIC64_INIT(0);

/* ---- transfer slots, under rma->fence_lock ---- */

/*
 * Take a slot for an asynchronous transfer if there is one; true also
 * when disconnected (no point waiting: the transfer then fails).
 */
static bool scif_slot_take(struct scif_xfer *x)
{
	struct scif_rma_ep *rma = x->rma;
	bool done;

	spin_lock(&rma->fence_lock);
	if (rma->nqueued < SCIF_MAX_INFLIGHT) {
		rma->nqueued++;
		x->slot = true;
	}
	done = x->slot || rma->disconnected;
	spin_unlock(&rma->fence_lock);
	return done;
}

/* ---- transfers ---- */

/*
 * The user pages of a v* call and their RLIMIT_MEMLOCK charge, released
 * once the data moved and before the transfer counts as complete: a fence
 * wait or SCIF_RMA_SYNC that returned finds them released (VmPin back).
 */
static void scif_xfer_release_user(struct scif_xfer *x)
{
	if (x->upages) {
		scif_unpin_user(x->upages, x->nupages, x->upages_dirty);
		if (x->upages != x->upages_inline)
			kvfree(x->upages);
		x->upages = NULL;
	}
	if (x->mm) {
		atomic64_sub(x->charged, &x->mm->pinned_vm);
		x->charged = 0;
	}
}

/* Drop the transfer's window references. */
static void scif_xfer_put_windows(struct scif_xfer *x)
{
	unsigned int i;

	for (i = 0; i < x->nwins; i++) {
		if (i < ARRAY_SIZE(x->wins))
			scif_window_put(x->wins[i]);
		else
			scif_window_put(x->wins_ext[i - ARRAY_SIZE(x->wins)]);
	}
	kvfree(x->wins_ext);
}

static void scif_xfer_free(struct scif_xfer *x)
{
	scif_xfer_put_windows(x);
	scif_xfer_release_user(x);
	if (x->mm)
		mmdrop(x->mm);
	if (x->slot) {
		spin_lock(&x->rma->fence_lock);
		x->rma->nqueued--;
		spin_unlock(&x->rma->fence_lock);
		wake_up_all(&x->rma->fence_wq);
	}
	if (x->rce)
		scif_rcache_put(x->rce);
	kvfree(x->src_alloc);
	kvfree(x->dst_alloc);
	scif_ep_put(x->peer);
	scif_ep_put(x->ep);
	if (!x->onstack)
		kfree(x);
}

/*
 * Copy bytes [a, b) of the transfer, by DMA when allowed and worth it.
 * Returns 0, or -EINTR when a signal ended a DMA wait.
 */
static int scif_xfer_copy(struct scif_xfer *x, size_t a, size_t b, bool dma)
{
	size_t head, mid;
	int err;

	if (b <= a)
		return 0;
	if (!dma || b - a < SCIF_DMA_MIN) {
		scif_copy_cpu(&x->dst, &x->src, a, b - a);
		return 0;
	}
	/* CPU for the head up to a destination cache line, and the tail. */
	head = (SCIF_RMA_CACHELINE -
		((x->dst.first_off + a) & (SCIF_RMA_CACHELINE - 1))) &
	       (SCIF_RMA_CACHELINE - 1);
	head = min(head, b - a);
	mid = ALIGN_DOWN(b - a - head, SCIF_RMA_CACHELINE);
	scif_copy_cpu(&x->dst, &x->src, a, head);
	err = mid ? scif_copy_dma(&x->dst, &x->src, a + head, mid) : 0;
	if (err == -ENODEV)
		scif_copy_cpu(&x->dst, &x->src, a + head, mid);
	else if (err)
		return err;
	scif_copy_cpu(&x->dst, &x->src, a + head + mid, b - a - head - mid);
	return 0;
}

/*
 * Copy bytes [a, b) in pieces of about SCIF_XFER_PIECE, ending on
 * destination cache lines (so the pieces move exactly what one call
 * would), and stop with -EINTR between two pieces once the calling
 * process got a fatal signal: a copy of a huge window in the caller must
 * not keep a killed process alive.  Work items never see such a signal.
 * A DMA wait ended by a signal also ends the copy (-EINTR).
 */
#define SCIF_XFER_PIECE		(4UL << 20)

static int scif_xfer_copy_pieces(struct scif_xfer *x, size_t a, size_t b,
				 bool dma)
{
	int err;

	while (b - a > SCIF_XFER_PIECE) {
		size_t e = ALIGN(x->dst.first_off + a + SCIF_XFER_PIECE,
				 SCIF_RMA_CACHELINE) - x->dst.first_off;

		if (e >= b)
			break;
		err = scif_xfer_copy(x, a, e, dma);
		if (err)
			return err;
		a = e;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	return scif_xfer_copy(x, a, b, dma);
}

static int scif_xfer_run(struct scif_xfer *x)
{
	bool dma = x->dma;
	size_t tail = x->len;
	int err;

	if (x->remote_op) {
		/* across hosts: the far host moves the data (transport) */
		struct scif_pgvec *pv = x->remote_op == SCIF_XPRT_RMA_READ ?
					&x->dst : &x->src;

		return scif_xprt_rma(x->ep, x->peer, x->remote_op, x->roffset,
				     pv->pages, pv->first_off, x->len,
				     x->flags);
	}

	if (x->flags & SCIF_ABI_RMA_ORDERED) {
		/* Start of the last (partial) cache line of the source. */
		size_t last = ALIGN_DOWN(x->src.first_off + x->len - 1,
					 SCIF_RMA_CACHELINE);

		tail = last > x->src.first_off ? last - x->src.first_off : 0;
	}
	err = scif_xfer_copy_pieces(x, 0, tail, dma);
	if (err)
		return err;
	if (tail < x->len) {
		/* Everything before is complete (DMA waited for); publish it. */
		wmb();
		scif_copy_cpu(&x->dst, &x->src, tail, x->len - tail);
	}
	return 0;
}

static void scif_xfer_done(struct scif_xfer *x)
{
	struct scif_rma_ep *rma = x->rma, *peer_rma = x->peer_rma;
	struct scif_fence_sig *sig, *tmp;
	LIST_HEAD(fire);
	u64 done;

	scif_xfer_release_user(x);
	spin_lock(&rma->fence_lock);
	list_del(&x->link);
	rma->ninflight--;
	if (x->slot)
		rma->nasync--;
	done = scif_completed(rma);
	/* signals is in ascending seq order: only the due ones are looked at */
	list_for_each_entry_safe(sig, tmp, &rma->signals, link) {
		if (sig->seq > done)
			break;
		list_move_tail(&sig->link, &fire);
		rma->nsignals--;
	}
	spin_unlock(&rma->fence_lock);
	scif_fence_fire(&fire);
	wake_up_all(&rma->fence_wq);
	wake_up_all(&peer_rma->fence_wq);
	scif_xfer_free(x);
	atomic_dec(&scif_rma_inflight);
}

/*
 * One of the endpoint's queue runners: queued transfers one after the
 * other while there are any.  A DMA endpoint has one runner, so that a
 * long queue has one transfer at a time on the DMA channel while other
 * endpoints' runners go on side by side; across hosts up to
 * SCIF_QUEUE_RUNNERS share the queue, so that asynchronous calls keep
 * several transfers on the link.  Holds a reference on rma while its bit
 * of running is set (the last transfer's free may drop the endpoint's).
 */
static void scif_xfer_queue_work(struct work_struct *work)
{
	struct scif_xfer_runner *r = container_of(work, struct scif_xfer_runner,
						  work);
	struct scif_rma_ep *rma = r->rma;
	bool busy = false;
	struct scif_xfer *x;
	int n, max;

	for (;;) {
		spin_lock(&rma->fence_lock);
		if (busy)
			rma->nbusy--;
		x = list_first_entry_or_null(&rma->queue, struct scif_xfer,
					     qlink);
		if (x)
			list_del(&x->qlink);
		else
			rma->running &= ~BIT(r - rma->runner);
		busy = x;
		n = busy ? ++rma->nbusy : 0;
		spin_unlock(&rma->fence_lock);
		if (!x)
			break;
		max = atomic_read(&scif_rma_parallel_max);
		while (n > max &&
		       !atomic_try_cmpxchg(&scif_rma_parallel_max, &max, n))
			;
		/* Kernel thread: no signal ends a DMA wait here. */
		scif_xfer_run(x);
		scif_xfer_done(x);
		cond_resched();
	}
	scif_rma_ep_put(rma);
}

void scif_xfer_ep_init(struct scif_rma_ep *rma)
{
	unsigned int i;

	INIT_LIST_HEAD(&rma->queue);
	for (i = 0; i < SCIF_QUEUE_RUNNERS; i++) {
		rma->runner[i].rma = rma;
		INIT_WORK(&rma->runner[i].work, scif_xfer_queue_work);
	}
}

/*
 * Hand an issued asynchronous transfer to its endpoint's runners, starting
 * one more if the endpoint may have more (a runner that finds the queue
 * already empty just ends).
 */
static void scif_xfer_queue(struct scif_xfer *x)
{
	struct scif_rma_ep *rma = x->rma;
	unsigned int max = x->remote_op ? SCIF_QUEUE_RUNNERS : 1;
	int i = -1;

	spin_lock(&rma->fence_lock);
	list_add_tail(&x->qlink, &rma->queue);
	if (hweight32(rma->running) < max) {
		i = ffz(rma->running);
		rma->running |= BIT(i);
	}
	spin_unlock(&rma->fence_lock);
	if (i >= 0) {
		scif_rma_ep_get(rma);
		queue_work(scif_rma_wq, &rma->runner[i].work);
	}
}

/*
 * Pin (or find in the cache) the user range of a v* call.  Pins that
 * outlive the call (asynchronous transfers) are long-term pins, charged
 * to RLIMIT_MEMLOCK like windows (ENOMEM past it without CAP_IPC_LOCK).
 */
static int scif_xfer_user(struct scif_xfer *x, u64 addr, size_t len,
			  bool write, bool async, struct scif_pgvec *pv)
{
	unsigned long start = addr & PAGE_MASK;
	unsigned int gup = write ? FOLL_WRITE : 0;
	unsigned long npages;
	int err;

	if (addr + len < addr || !access_ok(u64_to_user_ptr(addr), len))
		return -EFAULT;
	npages = ((addr & ~PAGE_MASK) + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	pv->first_off = addr & ~PAGE_MASK;

	if (x->flags & SCIF_ABI_RMA_USECACHE) {
		x->rce = scif_rcache_get(x->rma, start, npages, write);
		if (x->rce) {
			pv->pages = x->rce->pages +
				((start - x->rce->start) >> PAGE_SHIFT);
			return 0;
		}
	}
	/* len was checked against the peer's windows: bounded by real pins */
	if (async) {
		err = scif_charge(current->mm, npages);
		if (err)
			return err;
		x->mm = current->mm;
		mmgrab(x->mm);
		x->charged = npages;
		gup |= FOLL_LONGTERM;
	}
	if (npages <= ARRAY_SIZE(x->upages_inline))
		x->upages = x->upages_inline;
	else
		x->upages = kvmalloc_array(npages, sizeof(*x->upages),
					   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!x->upages)
		return -ENOMEM;
	err = scif_pin_user(start, npages, gup, x->upages);
	if (err) {
		if (x->upages != x->upages_inline)
			kvfree(x->upages);
		x->upages = NULL;
		return err == -ENOMEM ? err : -EFAULT;
	}
	x->nupages = npages;
	x->upages_dirty = write;
	pv->pages = x->upages;
	return 0;
}

/*
 * A transfer with a peer on another host: only the local side is gathered
 * here; the far host checks its own window range (scif_remote_rma_get()).
 */
static int scif_xfer_gather_remote(struct scif_xfer *x,
				   const struct scifioctl_copy *c,
				   unsigned int cmd, bool async)
{
	u64 end;
	int err;

	x->roffset = c->roffset;
	switch (cmd) {
	case SCIF_READFROM:
		x->remote_op = SCIF_XPRT_RMA_READ;
		err = scif_rma_gather(x->rma, c->loffset, c->len,
				      SCIF_ABI_PROT_WRITE, x, &x->dst);
		break;
	case SCIF_WRITETO:
		x->remote_op = SCIF_XPRT_RMA_WRITE;
		err = scif_rma_gather(x->rma, c->loffset, c->len,
				      SCIF_ABI_PROT_READ, x, &x->src);
		break;
	case SCIF_VREADFROM:
		x->remote_op = SCIF_XPRT_RMA_READ;
		err = scif_xfer_user(x, c->addr, c->len, true, async,
				     &x->dst);
		break;
	default: /* SCIF_VWRITETO */
		x->remote_op = SCIF_XPRT_RMA_WRITE;
		err = scif_xfer_user(x, c->addr, c->len, false, async,
				     &x->src);
		break;
	}
	/* roffset + len must not wrap (the far side checks it too) */
	if (!err && (check_add_overflow(c->roffset, c->len, &end) ||
		     end > SCIF_RMA_OFF_LIMIT))
		err = -ENXIO;
	return err;
}

/* A transfer between two nodes of this kernel: both sides gathered. */
static int scif_xfer_gather_local(struct scif_xfer *x,
				  const struct scifioctl_copy *c,
				  unsigned int cmd, bool async)
{
	int err;

	switch (cmd) {
	case SCIF_READFROM:
		err = scif_rma_gather(x->peer_rma, c->roffset, c->len,
				      SCIF_ABI_PROT_READ, x, &x->src);
		if (!err)
			err = scif_rma_gather(x->rma, c->loffset, c->len,
					      SCIF_ABI_PROT_WRITE, x, &x->dst);
		break;
	case SCIF_WRITETO:
		err = scif_rma_gather(x->peer_rma, c->roffset, c->len,
				      SCIF_ABI_PROT_WRITE, x, &x->dst);
		if (!err)
			err = scif_rma_gather(x->rma, c->loffset, c->len,
					      SCIF_ABI_PROT_READ, x, &x->src);
		break;
	case SCIF_VREADFROM:
		err = scif_rma_gather(x->peer_rma, c->roffset, c->len,
				      SCIF_ABI_PROT_READ, x, &x->src);
		if (!err)
			err = scif_xfer_user(x, c->addr, c->len, true, async,
					     &x->dst);
		break;
	default: /* SCIF_VWRITETO */
		err = scif_rma_gather(x->peer_rma, c->roffset, c->len,
				      SCIF_ABI_PROT_WRITE, x, &x->dst);
		if (!err)
			err = scif_xfer_user(x, c->addr, c->len, false, async,
					     &x->src);
		break;
	}
	return err;
}

long scif_rma_copy_ioctl(struct scif_endpt *ep, unsigned int cmd,
			 void __user *uarg)
{
	struct scifioctl_copy c;
	struct scif_endpt *peer;
	struct scif_xfer *x, xs;
	int err, n, max;
	bool async, dma, remote;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (c.flags & ~SCIF_RMA_FLAGS)
		return -EINVAL;
	err = scif_ep_get_peer(ep, &peer);
	if (err)
		return err;
	/*
	 * Across hosts the far host moves the data by RDMA (the transport's
	 * rma operation); USECPU means nothing there.  Without SYNC such a
	 * transfer is queued like a DMA transfer.
	 */
	remote = scif_ep_node(peer) >= SCIF_REMOTE_NODE_MIN;
	/* Loopback within a node is a CPU copy, as in Intel's driver. */
	dma = !remote && !(c.flags & SCIF_ABI_RMA_USECPU) &&
	      c.len >= SCIF_DMA_MIN &&
	      scif_ep_node(ep) != scif_ep_node(peer) && scif_dma_available();
	async = (dma || remote) && !(c.flags & SCIF_ABI_RMA_SYNC);
	/*
	 * A transfer that completes before the call returns lives on the
	 * stack: no allocation on the synchronous path (a small v* range uses
	 * the inline page array too).
	 */
	if (async) {
		x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
		if (!x) {
			scif_ep_put(peer);
			return -ENOMEM;
		}
	} else {
		x = &xs;
		memset(x, 0, sizeof(*x));
		x->onstack = true;
	}
	scif_ep_get(ep);
	x->ep = ep;
	x->peer = peer;
	x->rma = scif_ep_rma(ep);
	x->peer_rma = scif_ep_rma(peer);
	x->flags = c.flags;
	x->len = c.len;
	if (!x->rma || !x->peer_rma) {
		err = -ECONNRESET;
		goto fail;
	}
	if (!c.len || c.len > SCIF_RMA_OFF_LIMIT) {
		err = c.len ? -ENXIO : 0;
		goto fail;
	}
	x->dma = dma;
	/* Nothing done yet: a signal restarts the call (SA_RESTART). */
	if (async &&
	    wait_event_interruptible(x->rma->fence_wq, scif_slot_take(x))) {
		err = -ERESTARTSYS;
		goto fail;
	}

	err = remote ? scif_xfer_gather_remote(x, &c, cmd, async) :
		       scif_xfer_gather_local(x, &c, cmd, async);
	if (err)
		goto fail;

	spin_lock(&x->rma->fence_lock);
	if (x->rma->disconnected) {
		spin_unlock(&x->rma->fence_lock);
		err = -ECONNRESET;
		goto fail;
	}
	x->seq = ++x->rma->issued;
	list_add_tail(&x->link, &x->rma->inflight);
	x->rma->ninflight++;
	/*
	 * queue_max is the asynchronous queue's depth: a transfer the CPU
	 * copies in the caller (no slot) is in flight only for the call.
	 */
	if (x->slot)
		x->rma->nasync++;
	n = x->rma->nasync;
	spin_unlock(&x->rma->fence_lock);
	atomic_inc(&scif_rma_inflight);
	atomic64_inc(&scif_rma_transfers);
	max = atomic_read(&scif_rma_queue_max);
	while (n > max && !atomic_try_cmpxchg(&scif_rma_queue_max, &max, n))
		;

	if (async) {
		scif_xfer_queue(x);
		return 0;
	}
	/* Killed midway: the transfer ends (fences pass) with part copied. */
	err = scif_xfer_run(x);
	scif_xfer_done(x);
	return err;

fail:
	scif_xfer_free(x);
	return err;
}

/* ---- the target side of an RMA across hosts (scif_remote.h) ---- */

struct scif_remote_rma *scif_remote_rma_get(struct scif_endpt *ep, u64 off,
					    size_t len, bool write,
					    struct page ***pages,
					    unsigned int *first_off)
{
	struct scif_xfer *x;
	struct scif_pgvec pv;
	int err;

	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x)
		return ERR_PTR(-ENOMEM);
	x->rma = scif_ep_rma(ep);
	err = x->rma ? scif_rma_gather(x->rma, off, len,
				       write ? SCIF_ABI_PROT_WRITE :
					       SCIF_ABI_PROT_READ, x, &pv) :
		       -ENXIO;
	if (err) {
		scif_remote_rma_put((struct scif_remote_rma *)x);
		return ERR_PTR(err);
	}
	*pages = pv.pages;
	*first_off = pv.first_off;
	return (struct scif_remote_rma *)x;
}
EXPORT_SYMBOL_GPL(scif_remote_rma_get);

/* Drop the window references and the page array of a handle. */
void scif_remote_rma_put(struct scif_remote_rma *h)
{
	struct scif_xfer *x = (struct scif_xfer *)h;

	scif_xfer_put_windows(x);
	kvfree(x->src_alloc);
	kfree(x);
}
EXPORT_SYMBOL_GPL(scif_remote_rma_put);

/*
 * A window of @ep for a peer host's direct reads (scif_remote.h): the
 * registered window containing @off, readable, with a reference; marked
 * exposed, so that its unregistration calls scif_xprt_windows_gone().
 */
int scif_remote_window_get(struct scif_endpt *ep, u64 off,
			   struct scif_remote_win *rw)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	struct scif_window *w;
	int err = -ENXIO;

	if (!rma || (s64)off < 0)
		return -ENXIO;
	down_read(&rma->win_lock);
	w = rma->dead ? NULL : scif_window_lookup(rma, off);
	if (w && !(w->prot & (SCIF_ABI_PROT_READ | SCIF_ABI_PROT_WRITE))) {
		err = -EACCES;
	} else if (w) {
		kref_get(&w->ref);
		/* only ever set, and read under win_lock exclusive */
		WRITE_ONCE(w->exposed, true);
		rw->win = w;
		rw->offset = w->offset;
		rw->npages = w->npages;
		rw->pages = w->pages;
		rw->prot = w->prot;
		err = 0;
	}
	up_read(&rma->win_lock);
	return err;
}
EXPORT_SYMBOL_GPL(scif_remote_window_get);

bool scif_remote_window_gone(const struct scif_remote_win *rw)
{
	return READ_ONCE(((struct scif_window *)rw->win)->gone);
}
EXPORT_SYMBOL_GPL(scif_remote_window_gone);

void scif_remote_window_put(struct scif_remote_win *rw)
{
	scif_window_put(rw->win);
	rw->win = NULL;
}
EXPORT_SYMBOL_GPL(scif_remote_window_put);

int scif_xfer_init(void)
{
	/* One work item per endpoint with queued transfers (not ordered). */
	scif_rma_wq = alloc_workqueue("scif_rma", WQ_UNBOUND, WQ_MAX_ACTIVE);
	return scif_rma_wq ? 0 : -ENOMEM;
}

void scif_xfer_exit(void)
{
	destroy_workqueue(scif_rma_wq);
}
