// SPDX-License-Identifier: GPL-2.0
/*
 * openscif RMA subsystem: per endpoint state, registered windows
 * (SCIF_REG / SCIF_UNREG), window lookup, ioctl dispatch and counters.
 *
 * The registered address space of an endpoint is an rbtree of
 * non-overlapping windows keyed by offset, so finding the window of an
 * offset costs O(log n) whatever the number of windows.
 */
#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/error-injection.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/backing-dev.h>
#include <scif_ioctl.h>
#include "scif_ep.h"
#include "scif_rma_priv.h"

atomic_long_t scif_rma_pinned_pages = ATOMIC_LONG_INIT(0);
atomic_t scif_rma_inflight = ATOMIC_INIT(0);
atomic_t scif_rma_nwindows = ATOMIC_INIT(0);
atomic_t scif_rma_nmaps = ATOMIC_INIT(0);

/* Unpin in batches, rescheduling in between: windows may be huge. */
#define SCIF_UNPIN_BATCH	512

static void scif_unpin_pages(struct page **pages, unsigned long npages,
			     bool dirty)
{
	unsigned long done, n;

	for (done = 0; done < npages; done += n) {
		n = min_t(unsigned long, npages - done, SCIF_UNPIN_BATCH);
		unpin_user_pages_dirty_lock(pages + done, n, dirty);
		cond_resched();
	}
}

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
/*
 * Before 6.5 GUP lets FOLL_LONGTERM | FOLL_WRITE pin page cache pages of
 * shared writable file mappings whose file system tracks dirty pages (ext4,
 * xfs, ...), which then may be written behind the file system's back; 6.5
 * and later refuse them with EFAULT.  Refuse them here the same way, but
 * after pinning with the lockless fast path, by the pinned pages: a page
 * is refused when it belongs to a file whose mapping can write back
 * (shmem, tmpfs, hugetlbfs and anonymous memory cannot).  A pinned page's
 * mapping stays put until truncation, which only clears it.  Testing the
 * VMAs instead needs the mmap_lock held across the pin and so GUP's slow
 * path, a page-table walk per page: about twice the cost of the pin itself
 * on 6.1 (docs/rma.md, "Benchmark").
 */
static bool scif_pages_longterm_writable(struct page **pages,
					 unsigned long npages)
{
	struct address_space *mapping;
	unsigned long i;

	for (i = 0; i < npages; i++) {
		struct folio *folio = page_folio(pages[i]);

		if (folio_test_anon(folio))
			continue;
		mapping = folio_mapping(folio);
		if (mapping && mapping_can_writeback(mapping))
			return false;
	}
	return true;
}
#else
static bool scif_pages_longterm_writable(struct page **pages,
					 unsigned long npages)
{
	return true;	/* GUP refuses them itself */
}
#endif

int scif_pin_user(unsigned long start, unsigned long npages,
		  unsigned int gup_flags, struct page **pages)
{
	unsigned long done = 0;
	int ret;

	while (done < npages) {
		int chunk = min_t(unsigned long, npages - done, INT_MAX / 2);

		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT), chunk,
					  gup_flags, pages + done);
		if (ret <= 0)
			goto unpin;
		done += ret;
	}
	if ((gup_flags & (FOLL_LONGTERM | FOLL_WRITE)) ==
	    (FOLL_LONGTERM | FOLL_WRITE) &&
	    !scif_pages_longterm_writable(pages, npages)) {
		ret = -EFAULT;
		goto unpin;
	}
	atomic_long_add(npages, &scif_rma_pinned_pages);
	return 0;

unpin:
	if (done)
		scif_unpin_pages(pages, done, false);
	return ret ? ret : -EFAULT;
}
/* A pin can fail without an allocation failing (selftests/rma/failfunc_test). */
ALLOW_ERROR_INJECTION(scif_pin_user, ERRNO);

void scif_unpin_user(struct page **pages, unsigned long npages, bool dirty)
{
	scif_unpin_pages(pages, npages, dirty);
	atomic_long_sub(npages, &scif_rma_pinned_pages);
}

/* ---- windows ---- */

static void scif_window_free(struct kref *ref)
{
	struct scif_window *win = container_of(ref, struct scif_window, ref);

	scif_unpin_user(win->pages, win->npages, win->dirty);
	if (win->mm) {
		atomic64_sub(win->charged, &win->mm->pinned_vm);
		mmdrop(win->mm);
	}
	kvfree(win->pages);
	kfree(win);
	atomic_dec(&scif_rma_nwindows);
}

void scif_window_put(struct scif_window *win)
{
	kref_put(&win->ref, scif_window_free);
}

/* The window of the tree containing @off, or NULL.  Caller holds win_lock. */
static struct scif_window *scif_window_find(struct scif_rma_ep *rma, u64 off)
{
	struct rb_node *n = rma->windows.rb_node;

	while (n) {
		struct scif_window *w = rb_entry(n, struct scif_window, node);

		if (off < w->offset)
			n = n->rb_left;
		else if (off >= w->offset + w->len)
			n = n->rb_right;
		else
			return w;
	}
	return NULL;
}

/*
 * The registered window containing @off, or NULL: an unregistered window
 * that only lingers for peer mappings is not registered.  Caller holds
 * win_lock.
 */
struct scif_window *scif_window_lookup(struct scif_rma_ep *rma, u64 off)
{
	struct scif_window *w = scif_window_find(rma, off);

	return w && !w->unreg ? w : NULL;
}

/*
 * @w stops being registered: a transport exposing it must revoke that
 * (scif_xprt_windows_gone() once win_lock is dropped).  Returns true if
 * it must be told.  win_lock held exclusive.
 */
static bool scif_window_gone(struct scif_window *w)
{
	if (w->gone)
		return false;
	WRITE_ONCE(w->gone, true);
	return w->exposed;
}

/* Take @w out of the tree and drop the tree's reference.  win_lock held. */
static bool scif_window_erase(struct scif_rma_ep *rma, struct scif_window *w)
{
	bool tell = scif_window_gone(w);

	rb_erase(&w->node, &rma->windows);
	RB_CLEAR_NODE(&w->node);
	rma->nwindows--;
	scif_window_put(w);
	return tell;
}

/*
 * Unregister @w (in the tree, registered): gone at once unless peer
 * mappings hold it, else it lingers, reserving its offsets, until the last
 * of them is removed.  Returns true if a transport must be told
 * (scif_window_gone()).  win_lock held exclusive.
 */
static bool scif_window_unregister(struct scif_rma_ep *rma,
				   struct scif_window *w)
{
	if (!w->nmaps)
		return scif_window_erase(rma, w);
	w->unreg = true;
	return scif_window_gone(w);
}

/*
 * A peer mapping of @win (a window of @rma, now or before rma's release)
 * is gone: the last one ends the reservation of an unregistered window.
 * The caller still holds its own window reference.
 */
void scif_window_unmapped(struct scif_rma_ep *rma, struct scif_window *win)
{
	down_write(&rma->win_lock);
	if (!--win->nmaps && win->unreg && !RB_EMPTY_NODE(&win->node))
		scif_window_erase(rma, win);
	up_write(&rma->win_lock);
}

/* The lowest window ending after @off, or NULL.  Caller holds win_lock. */
static struct scif_window *scif_window_first_after(struct scif_rma_ep *rma,
						   u64 off)
{
	struct rb_node *n = rma->windows.rb_node;
	struct scif_window *best = NULL;

	while (n) {
		struct scif_window *w = rb_entry(n, struct scif_window, node);

		if (w->offset + w->len > off) {
			best = w;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

static bool scif_range_free(struct scif_rma_ep *rma, u64 off, u64 len)
{
	struct scif_window *w = scif_window_first_after(rma, off);

	return !w || w->offset >= off + len;
}

static void scif_window_insert(struct scif_rma_ep *rma, struct scif_window *win)
{
	struct rb_node **p = &rma->windows.rb_node, *parent = NULL;

	while (*p) {
		struct scif_window *w = rb_entry(*p, struct scif_window, node);

		parent = *p;
		p = win->offset < w->offset ? &(*p)->rb_left : &(*p)->rb_right;
	}
	rb_link_node(&win->node, parent, p);
	rb_insert_color(&win->node, &rma->windows);
	rma->nwindows++;
	if (win->offset + win->len > rma->next_off)
		rma->next_off = win->offset + win->len;
}

/*
 * Pick an offset for @len bytes: after the highest window when there is
 * room (O(log n)), else the first gap (O(n), only once the top of the
 * address space was reached).
 */
static int scif_alloc_offset(struct scif_rma_ep *rma, u64 len, u64 *out)
{
	struct rb_node *n;
	u64 cur = SCIF_RMA_OFF_START;

	if (rma->next_off < SCIF_RMA_OFF_START)
		rma->next_off = SCIF_RMA_OFF_START;
	if (len <= SCIF_RMA_OFF_LIMIT - rma->next_off) {
		*out = rma->next_off;
		return 0;
	}
	for (n = rb_first(&rma->windows); n; n = rb_next(n)) {
		struct scif_window *w = rb_entry(n, struct scif_window, node);

		if (w->offset >= cur && w->offset - cur >= len)
			break;
		cur = max(cur, w->offset + w->len);
	}
	if (len > SCIF_RMA_OFF_LIMIT - cur)
		return -ENOMEM;
	*out = cur;
	return 0;
}

/*
 * Charge @npages long-term pinned pages to @mm->pinned_vm, failing with
 * ENOMEM past RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK.  Process
 * context of the pinning task.
 */
int scif_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 now = atomic64_add_return(npages, &mm->pinned_vm);

	if (now > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static long scif_rma_register(struct scif_endpt *ep, struct scif_rma_ep *rma,
			      void __user *uarg)
{
	struct scifioctl_reg reg;
	struct scif_window *win;
	unsigned int gup;
	u64 off;
	int err;

	if (copy_from_user(&reg, uarg, sizeof(reg)))
		return -EFAULT;
	if (reg.flags & ~SCIF_ABI_MAP_FIXED)
		return -EINVAL;	/* includes SCIF_MAP_KERNEL from user space */
	if (reg.prot & ~(SCIF_ABI_PROT_READ | SCIF_ABI_PROT_WRITE))
		return -EINVAL;
	if (!reg.len || !PAGE_ALIGNED(reg.len) || !PAGE_ALIGNED(reg.addr))
		return -EINVAL;
	if (reg.len > SCIF_RMA_OFF_LIMIT || reg.addr + reg.len < reg.addr)
		return -EINVAL;
	if (reg.flags & SCIF_ABI_MAP_FIXED) {
		if (reg.offset < 0 || !PAGE_ALIGNED(reg.offset) ||
		    reg.len > SCIF_RMA_OFF_LIMIT - (u64)reg.offset)
			return -EINVAL;
	}
	if (!access_ok(u64_to_user_ptr(reg.addr), reg.len))
		return -EFAULT;
	err = scif_ep_conn_state(ep);
	if (err)
		return err;

	win = kzalloc(sizeof(*win), GFP_KERNEL_ACCOUNT);
	if (!win)
		return -ENOMEM;
	kref_init(&win->ref);
	RB_CLEAR_NODE(&win->node);
	win->len = reg.len;
	win->npages = reg.len >> PAGE_SHIFT;
	win->prot = reg.prot;
	win->dirty = reg.prot & SCIF_ABI_PROT_WRITE;
	/*
	 * Charge RLIMIT_MEMLOCK before anything is sized by reg.len, so that
	 * an over-limit request cannot make us allocate a huge page array.
	 */
	err = scif_charge(current->mm, win->npages);
	if (err)
		goto free_win;
	win->mm = current->mm;
	mmgrab(win->mm);
	win->charged = win->npages;
	win->pages = kvmalloc_array(win->npages, sizeof(*win->pages),
				    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!win->pages) {
		err = -ENOMEM;
		goto uncharge;
	}

	/*
	 * Pin writable when the memory allows it even for read-only windows:
	 * a read-only long-term pin of never written anonymous memory could
	 * pin the shared zero page and go stale on the first write.
	 */
	gup = FOLL_LONGTERM | FOLL_WRITE;
	err = scif_pin_user(reg.addr, win->npages, gup, win->pages);
	if (err == -EFAULT && !(reg.prot & SCIF_ABI_PROT_WRITE))
		err = scif_pin_user(reg.addr, win->npages, FOLL_LONGTERM,
				    win->pages);
	if (err)
		goto free_pages;
	atomic_inc(&scif_rma_nwindows);

	down_write(&rma->win_lock);
	if (rma->dead) {
		err = -ECONNRESET;
	} else if (reg.flags & SCIF_ABI_MAP_FIXED) {
		off = reg.offset;
		if (!scif_range_free(rma, off, reg.len))
			err = -EADDRINUSE;
	} else {
		err = scif_alloc_offset(rma, reg.len, &off);
	}
	if (!err) {
		win->offset = off;
		scif_window_insert(rma, win);
		/* ours until out_offset is written: see below */
		kref_get(&win->ref);
	}
	up_write(&rma->win_lock);
	if (err) {
		scif_window_put(win);
		return err;
	}

	if (put_user((s64)off, (s64 __user *)(uarg +
		     offsetof(struct scifioctl_reg, out_offset)))) {
		/*
		 * Undo, as an unregistration.  The window was visible
		 * meanwhile: another thread may have unregistered it already
		 * (hence our own reference), and the peer may have mapped it,
		 * in which case it lingers until the peer unmaps it.
		 */
		bool tell = false;

		down_write(&rma->win_lock);
		if (!RB_EMPTY_NODE(&win->node) && !win->unreg)
			tell = scif_window_unregister(rma, win);
		up_write(&rma->win_lock);
		if (tell)
			scif_xprt_windows_gone(true);
		scif_window_put(win);
		return -EFAULT;
	}
	scif_window_put(win);
	return 0;

free_pages:
	kvfree(win->pages);
uncharge:
	atomic64_sub(win->charged, &win->mm->pinned_vm);
	mmdrop(win->mm);
free_win:
	kfree(win);
	return err;
}

static long scif_rma_unregister(struct scif_endpt *ep, struct scif_rma_ep *rma,
				void __user *uarg)
{
	struct scifioctl_unreg ur;
	struct scif_window *w, *first;
	struct rb_node *n;
	bool tell = false;
	u64 off, end;
	int err;

	if (copy_from_user(&ur, uarg, sizeof(ur)))
		return -EFAULT;
	if (ur.offset < 0 || !PAGE_ALIGNED(ur.offset) || !ur.len ||
	    !PAGE_ALIGNED(ur.len) || ur.len > SCIF_RMA_OFF_LIMIT)
		return -EINVAL;
	err = scif_ep_conn_state(ep);
	if (err)
		return err;
	off = ur.offset;
	end = off + ur.len;

	down_write(&rma->win_lock);
	first = scif_window_lookup(rma, off);
	if (!first) {
		err = -ENXIO;
		goto out;
	}
	if (first->offset != off) {
		err = -EINVAL;
		goto out;
	}
	/* Validate: whole windows, no hole, exactly covering [off, end). */
	for (n = &first->node, w = first; ; ) {
		if (w->offset + w->len > end) {
			err = -EINVAL;
			goto out;
		}
		if (w->offset + w->len == end)
			break;
		n = rb_next(n);
		/* the next window must follow at once and be registered */
		if (!n || rb_entry(n, struct scif_window, node)->offset !=
		    w->offset + w->len ||
		    rb_entry(n, struct scif_window, node)->unreg) {
			err = -ENXIO;
			goto out;
		}
		w = rb_entry(n, struct scif_window, node);
	}
	/* Remove them (peer mappings keep theirs, see scif_window). */
	n = &first->node;
	while (n) {
		struct rb_node *next = rb_next(n);

		w = rb_entry(n, struct scif_window, node);
		if (w->offset >= end)
			break;
		tell |= scif_window_unregister(rma, w);
		n = next;
	}
out:
	up_write(&rma->win_lock);
	/* a peer host reading them directly loses them before we return */
	if (tell)
		scif_xprt_windows_gone(true);
	return err;
}

/*
 * Collect the pages of [off, off + len) of @rma's registered address space
 * into @pv, requiring @prot on every window and contiguity across windows.
 * References on the windows are added to @x.  When the range spans several
 * windows, a page array is built and recorded in @x for kvfree().
 */
int scif_rma_gather(struct scif_rma_ep *rma, u64 off, size_t len, int prot,
		    struct scif_xfer *x, struct scif_pgvec *pv)
{
	struct scif_window *w, *first;
	struct page **arr = NULL;
	unsigned long npages, idx, filled = 0;
	u64 cur = off, end = off + len;
	int err = 0;

	if ((s64)off < 0 || end < off)
		return -ENXIO;

	down_read(&rma->win_lock);
	first = scif_window_lookup(rma, off);
	if (!first) {
		err = -ENXIO;
		goto out;
	}
	pv->first_off = off & ~PAGE_MASK;
	if (end <= first->offset + first->len) {
		/* Fast path: one window, point into its page array. */
		if ((first->prot & prot) != prot) {
			err = -EACCES;
			goto out;
		}
		err = scif_xfer_add_window(x, first);
		if (!err)
			pv->pages = &first->pages[(off - first->offset) >>
						  PAGE_SHIFT];
		goto out;
	}
	/*
	 * Check that windows cover the whole range before anything is sized
	 * by @len: a length far beyond the registered space must fail with
	 * ENXIO, not make us allocate (and warn about) a huge array.
	 */
	for (w = first; ; ) {
		if ((w->prot & prot) != prot) {
			err = -EACCES;
			goto out;
		}
		cur = w->offset + w->len;
		if (cur >= end)
			break;
		/* Windows are disjoint: the next one must start at cur. */
		w = scif_window_lookup(rma, cur);
		if (!w) {
			err = -ENXIO;
			goto out;
		}
	}
	/* Bounded by pages already pinned in those windows. */
	npages = ((off & ~PAGE_MASK) + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	arr = kvmalloc_array(npages, sizeof(*arr),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!arr) {
		err = -ENOMEM;
		goto out;
	}
	for (w = first, cur = off; ; ) {
		err = scif_xfer_add_window(x, w);
		if (err)
			break;
		idx = ((cur & PAGE_MASK) - w->offset) >> PAGE_SHIFT;
		while (idx < w->npages && filled < npages)
			arr[filled++] = w->pages[idx++];
		cur = w->offset + w->len;
		if (cur >= end)
			break;
		w = scif_window_lookup(rma, cur);
	}
	if (err) {
		kvfree(arr);
		goto out;
	}
	pv->pages = arr;
	if (!x->src_alloc)
		x->src_alloc = arr;
	else
		x->dst_alloc = arr;
out:
	up_read(&rma->win_lock);
	return err;
}

int scif_xfer_add_window(struct scif_xfer *x, struct scif_window *win)
{
	if (x->nwins < ARRAY_SIZE(x->wins)) {
		x->wins[x->nwins++] = win;
		kref_get(&win->ref);
		return 0;
	}
	if (x->nwins - ARRAY_SIZE(x->wins) >= x->wins_cap) {
		unsigned int cap = max(16U, x->wins_cap * 2);
		struct scif_window **n;

		n = kvmalloc_array(cap, sizeof(*n), GFP_KERNEL_ACCOUNT);
		if (!n)
			return -ENOMEM;
		if (x->wins_ext)
			memcpy(n, x->wins_ext, x->wins_cap * sizeof(*n));
		kvfree(x->wins_ext);
		x->wins_ext = n;
		x->wins_cap = cap;
	}
	x->wins_ext[x->nwins - ARRAY_SIZE(x->wins)] = win;
	x->nwins++;
	kref_get(&win->ref);
	return 0;
}

/* ---- endpoint life cycle ---- */

int scif_rma_ep_init(struct scif_endpt *ep)
{
	struct scif_rma_ep *rma = kzalloc(sizeof(*rma), GFP_KERNEL_ACCOUNT);

	if (!rma)
		return -ENOMEM;
	kref_init(&rma->ref);
	rma->ep = ep;
	init_rwsem(&rma->win_lock);
	rma->windows = RB_ROOT;
	rma->next_off = SCIF_RMA_OFF_START;
	spin_lock_init(&rma->fence_lock);
	INIT_LIST_HEAD(&rma->inflight);
	INIT_LIST_HEAD(&rma->signals);
	init_waitqueue_head(&rma->fence_wq);
	INIT_LIST_HEAD(&rma->rcache.entries);
	scif_xfer_ep_init(rma);
	scif_ep_set_rma(ep, rma);
	return 0;
}

void scif_rma_ep_disconnect(struct scif_endpt *ep)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);

	if (!rma)
		return;
	spin_lock(&rma->fence_lock);
	rma->disconnected = true;
	spin_unlock(&rma->fence_lock);
	wake_up_all(&rma->fence_wq);

	/*
	 * The peer cannot map our windows any more; its existing mappings
	 * keep the windows they hold (scif_mmap_ctx) until it unmaps them.
	 */
	down_write(&rma->win_lock);
	rma->dead = true;
	up_write(&rma->win_lock);
}

static void scif_rma_ep_free(struct kref *ref)
{
	kfree(container_of(ref, struct scif_rma_ep, ref));
}

void scif_rma_ep_get(struct scif_rma_ep *rma)
{
	kref_get(&rma->ref);
}

void scif_rma_ep_put(struct scif_rma_ep *rma)
{
	kref_put(&rma->ref, scif_rma_ep_free);
}

void scif_rma_ep_release(struct scif_endpt *ep)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	struct rb_node *n;
	bool tell = false;

	if (!rma)
		return;
	down_write(&rma->win_lock);
	rma->dead = true;
	/*
	 * Every window leaves the tree; those the peer still maps live on,
	 * detached, with the mappings' references (their pages stay pinned
	 * and charged until the peer unmaps them).
	 */
	n = rb_first(&rma->windows);
	while (n) {
		struct rb_node *next = rb_next(n);

		tell |= scif_window_erase(rma,
					  rb_entry(n, struct scif_window, node));
		n = next;
	}
	up_write(&rma->win_lock);
	/* the last reference may go in a transport's receive path: no wait */
	if (tell)
		scif_xprt_windows_gone(false);

	scif_fence_release(rma);
	scif_rcache_release(rma);
	scif_ep_set_rma(ep, NULL);
	rma->ep = NULL;
	/* peer mappings may keep the (empty) structure for its win_lock */
	scif_rma_ep_put(rma);
}

long scif_rma_ioctl(struct scif_endpt *ep, unsigned int cmd, unsigned long arg)
{
	struct scif_rma_ep *rma = scif_ep_rma(ep);
	void __user *uarg = (void __user *)arg;

	if (!rma)
		return -EINVAL;
	switch (cmd) {
	case SCIF_REG:
		return scif_rma_register(ep, rma, uarg);
	case SCIF_UNREG:
		return scif_rma_unregister(ep, rma, uarg);
	case SCIF_READFROM:
	case SCIF_WRITETO:
	case SCIF_VREADFROM:
	case SCIF_VWRITETO:
		return scif_rma_copy_ioctl(ep, cmd, uarg);
	case SCIF_FENCE_MARK:
		return scif_fence_mark_ioctl(ep, uarg);
	case SCIF_FENCE_WAIT:
		return scif_fence_wait_ioctl(ep, (int)arg);
	case SCIF_FENCE_SIGNAL:
		return scif_fence_signal_ioctl(ep, uarg);
	}
	return -ENOTTY;
}

/* ---- module ---- */

static int scif_dbg_pinned_get(void *data, u64 *val)
{
	*val = atomic_long_read(&scif_rma_pinned_pages);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(scif_dbg_pinned_fops, scif_dbg_pinned_get, NULL,
			 "%llu\n");

int scif_rma_init(struct dentry *dbg)
{
	int err;

	err = scif_xfer_init();
	if (err)
		return err;
	err = scif_dma_init(dbg);
	if (err) {
		scif_xfer_exit();
		return err;
	}
	if (dbg) {
		debugfs_create_file_unsafe("pinned_pages", 0444, dbg, NULL,
					   &scif_dbg_pinned_fops);
		debugfs_create_atomic_t("rma_inflight", 0444, dbg,
					&scif_rma_inflight);
		debugfs_create_atomic_t("rma_parallel_max", 0444, dbg,
					&scif_rma_parallel_max);
		debugfs_create_atomic_t("windows", 0444, dbg,
					&scif_rma_nwindows);
		debugfs_create_atomic_t("mappings", 0444, dbg,
					&scif_rma_nmaps);
	}
	return 0;
}

void scif_rma_exit(void)
{
	scif_xfer_exit();
	scif_dma_exit();
}
