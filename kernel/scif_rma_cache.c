// SPDX-License-Identifier: GPL-2.0
/*
 * openscif registration cache for scif_vreadfrom / scif_vwriteto with
 * SCIF_RMA_USECACHE.
 *
 * An entry keeps a user range pinned after the transfer so that the next
 * transfer on (part of) the same range skips pinning.  Each entry carries
 * an MMU interval notifier over its range: any unmap, remap, COW or other
 * change of the range invalidates it, so a cached page is never one the
 * process no longer sees at that address.  The entry is pinned only after
 * the notifier is armed and is discarded if an invalidation raced with
 * the pinning.
 */
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include "scif_rma_priv.h"

/* Entries kept per endpoint; the least recently used is dropped first. */
#define SCIF_RCACHE_MAX		64

/*
 * Protects every endpoint's rcache list and count and each entry's linked
 * and valid flags.  Global, so that the notifier of an entry that is no
 * longer linked never needs its (possibly released) endpoint.
 */
static DEFINE_SPINLOCK(scif_rcache_lock);

static void scif_rcache_free_work(struct work_struct *work)
{
	struct scif_rcache_entry *e =
		container_of(work, struct scif_rcache_entry, free_work);

	if (e->pages) {
		scif_unpin_user(e->pages, e->npages, e->write);
		kvfree(e->pages);
	}
	/* the notifier keeps e->mm until it is removed */
	atomic64_sub(e->charged, &e->mm->pinned_vm);
	mmu_interval_notifier_remove(&e->mni);
	kfree(e);
}

/* Freeing may be triggered from the notifier: defer it to process context. */
static void scif_rcache_release_ref(struct kref *ref)
{
	struct scif_rcache_entry *e =
		container_of(ref, struct scif_rcache_entry, ref);

	queue_work(scif_rma_wq, &e->free_work);
}

void scif_rcache_put(struct scif_rcache_entry *e)
{
	kref_put(&e->ref, scif_rcache_release_ref);
}

static bool scif_rcache_invalidate(struct mmu_interval_notifier *mni,
				   const struct mmu_notifier_range *range,
				   unsigned long cur_seq)
{
	struct scif_rcache_entry *e =
		container_of(mni, struct scif_rcache_entry, mni);
	bool drop = false;

	spin_lock(&scif_rcache_lock);
	mmu_interval_set_seq(mni, cur_seq);
	WRITE_ONCE(e->valid, false);
	if (e->linked) {
		list_del(&e->link);
		e->linked = false;
		e->rma->rcache.count--;
		drop = true;
	}
	spin_unlock(&scif_rcache_lock);
	if (drop)
		scif_rcache_put(e);
	return true;
}

static const struct mmu_interval_notifier_ops scif_rcache_ops = {
	.invalidate = scif_rcache_invalidate,
};

struct scif_rcache_entry *scif_rcache_get(struct scif_rma_ep *rma,
					  unsigned long start,
					  unsigned long npages, bool write)
{
	struct scif_rcache_entry *e, *victim = NULL;
	struct mm_struct *mm = current->mm;
	unsigned long seq;

	spin_lock(&scif_rcache_lock);
	list_for_each_entry(e, &rma->rcache.entries, link) {
		if (e->mm == mm && e->valid && start >= e->start &&
		    start + (npages << PAGE_SHIFT) <=
		    e->start + (e->npages << PAGE_SHIFT) &&
		    (e->write || !write)) {
			kref_get(&e->ref);
			list_move(&e->link, &rma->rcache.entries);
			spin_unlock(&scif_rcache_lock);
			return e;
		}
	}
	spin_unlock(&scif_rcache_lock);

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return NULL;
	/*
	 * A cached range stays pinned after the transfer: charge it like a
	 * window.  Past RLIMIT_MEMLOCK it is simply not cached (the caller
	 * pins it for this transfer only).
	 */
	if (scif_charge(mm, npages)) {
		kfree(e);
		return NULL;
	}
	e->charged = npages;
	e->mm = mm;
	e->pages = kvmalloc_array(npages, sizeof(*e->pages),
				  GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!e->pages)
		goto free;
	e->rma = rma;
	e->start = start;
	e->npages = npages;
	e->write = write;
	kref_init(&e->ref);
	INIT_WORK(&e->free_work, scif_rcache_free_work);
	if (mmu_interval_notifier_insert(&e->mni, mm, start,
					 npages << PAGE_SHIFT,
					 &scif_rcache_ops))
		goto free;
	seq = mmu_interval_read_begin(&e->mni);
	if (scif_pin_user(start, npages,
			  FOLL_LONGTERM | (write ? FOLL_WRITE : 0), e->pages)) {
		kvfree(e->pages);
		e->pages = NULL;
		goto remove;
	}

	spin_lock(&scif_rcache_lock);
	if (mmu_interval_read_retry(&e->mni, seq)) {
		spin_unlock(&scif_rcache_lock);
		goto remove;	/* changed while pinning: do not cache */
	}
	e->valid = true;
	e->linked = true;
	kref_get(&e->ref);	/* the cache's reference */
	list_add(&e->link, &rma->rcache.entries);
	if (++rma->rcache.count > SCIF_RCACHE_MAX) {
		victim = list_last_entry(&rma->rcache.entries,
					 struct scif_rcache_entry, link);
		list_del(&victim->link);
		victim->linked = false;
		rma->rcache.count--;
	}
	spin_unlock(&scif_rcache_lock);
	if (victim)
		scif_rcache_put(victim);
	return e;

remove:
	/* Not linked anywhere: free synchronously (unpins if pinned). */
	scif_rcache_free_work(&e->free_work);
	return NULL;
free:
	atomic64_sub(e->charged, &mm->pinned_vm);
	kvfree(e->pages);
	kfree(e);
	return NULL;
}

void scif_rcache_release(struct scif_rma_ep *rma)
{
	struct scif_rcache_entry *e, *tmp;
	LIST_HEAD(list);

	spin_lock(&scif_rcache_lock);
	list_for_each_entry_safe(e, tmp, &rma->rcache.entries, link) {
		e->linked = false;
		list_move(&e->link, &list);
	}
	rma->rcache.count = 0;
	spin_unlock(&scif_rcache_lock);
	list_for_each_entry_safe(e, tmp, &list, link) {
		list_del(&e->link);
		scif_rcache_put(e);
	}
}
