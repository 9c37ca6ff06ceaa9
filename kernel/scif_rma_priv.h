/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal data structures of the openscif RMA subsystem (scif_rma*.c).
 * Nothing here is visible to the endpoint core; the core only sees
 * scif_rma.h.
 */
#ifndef SCIF_RMA_PRIV_H
#define SCIF_RMA_PRIV_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "scif_rma.h"
#include "scif_remote.h"

/* Offsets handed out by the allocator start here (0 stays unused). */
#define SCIF_RMA_OFF_START	((u64)PAGE_SIZE)
/* Registered address space: [0, SCIF_RMA_OFF_LIMIT). */
#define SCIF_RMA_OFF_LIMIT	(1ULL << 52)

/* Fence marks: low 30 bits carry the sequence number, bit 30 the side. */
#define SCIF_MARK_SEQ_MASK	0x3fffffffU
#define SCIF_MARK_PEER		0x40000000U

/*
 * Asynchronous transfers of one endpoint running at once across hosts: four
 * calls of up to four requests each fill the 16 request slots of a link
 * (scif_rdma.h); locally one, for the DMA channel.
 */
#define SCIF_QUEUE_RUNNERS	4

/*
 * A registered window: npages pinned pages of one process, visible at
 * [offset, offset + len) of the owner's registered address space.
 *
 * Life time: kref.  The owner's window tree holds one reference while the
 * window is in the tree; every RMA and pending fence signal that uses the
 * window takes its own (so does a registration until it has written
 * out_offset back), and so does every peer mapping of it (struct
 * scif_mmap_ctx).  The last put unpins the pages and uncharges
 * RLIMIT_MEMLOCK of the registering mm (mmgrab()ed, so this is safe from
 * any process context, also after that process exited), so pages stay
 * valid while any user remains, even after unregistration.
 *
 * Unregistration (or the undo of a registration) of a window that peer
 * mappings still hold (nmaps > 0) only marks it unreg: it stays in the tree,
 * invisible to RMA, mmap, fence signals and unregistration (which all see
 * ENXIO there) but still reserving its offsets, until the last mapping
 * releases it and removes it from the tree.  When the owner endpoint is
 * released every window leaves the tree (node cleared); mapped ones live on,
 * detached, until their last mapping goes.
 *
 * offset, len, npages, prot, pages and mm are immutable after registration;
 * node, nmaps and unreg are protected by the owner's win_lock (only ever
 * changed with it held exclusive).
 */
struct scif_window {
	struct rb_node node;		/* cleared when not in the tree */
	struct kref ref;
	u64 offset;
	u64 len;
	unsigned long npages;
	int prot;			/* SCIF_PROT_* */
	bool dirty;			/* pages may have been written */
	bool unreg;			/* unregistered, lingers for nmaps */
	/*
	 * exposed: a remote transport holds it for a peer host's direct
	 * reads and writes (scif_remote_window_get()); set under win_lock,
	 * read under it exclusive.  gone: no longer registered (WRITE_ONCE under
	 * win_lock exclusive, read lockless by the transport, which is then
	 * told by scif_xprt_windows_gone() after win_lock is dropped).
	 */
	bool exposed;
	bool gone;
	unsigned int nmaps;		/* peer mappings holding the window */
	struct page **pages;
	struct mm_struct *mm;		/* mmgrab()ed; charged pinned_vm */
	unsigned long charged;		/* pages charged to mm->pinned_vm */
};

/*
 * One scif_mmap() of peer windows: the windows covering the mapped range
 * of the owner's registered address space at mmap time, in offset order, each with a window reference and an nmaps count.
 * Faults only ever look here, never in the owner's tree, so a mapping
 * always shows the windows it was made of, whatever is unregistered or
 * registered later and whether or not the owner is still connected or
 * alive.
 *
 * Life time: kref, one per VMA of the mapping (mmap, then vm_ops->open for
 * every VMA split off or copied, vm_ops->close for every VMA removed).
 * The last put drops nmaps of every window (removing from the owner's
 * tree those that were unregistered meanwhile), the window references and
 * the reference on the owner's RMA state.  Everything but ref is
 * immutable, so faults take no lock.
 */
struct scif_mmap_ctx {
	struct kref ref;
	struct scif_rma_ep *owner;	/* counted (scif_rma_ep_put) */
	unsigned int nwins;
	struct scif_window *wins[];	/* referenced, ascending offsets */
};

/*
 * A fence signal waiting for RMAs to complete: write val at page/off.
 * Lives on the pending list of the scif_rma_ep whose RMAs it watches,
 * protected by that structure's fence_lock; that list is sorted by seq
 * and holds at most SCIF_MAX_FENCE_SIGNALS (scif_fence.c) entries.
 */
struct scif_fence_sig {
	struct list_head link;
	u64 seq;			/* fires when completed >= seq */
	struct scif_window *win;	/* reference held */
	unsigned long pgidx;
	unsigned int pgoff;
	u64 val;
};

/* Registration cache of scif_v* calls (SCIF_RMA_USECACHE). */
struct scif_rcache_entry {
	struct list_head link;		/* on rma->rcache.entries */
	struct kref ref;
	struct mmu_interval_notifier mni;
	struct scif_rma_ep *rma;	/* valid while linked */
	struct mm_struct *mm;		/* mmgrab()ed by the notifier */
	unsigned long start;		/* page aligned user address */
	unsigned long npages;
	unsigned long charged;		/* pages charged to mm->pinned_vm */
	bool write;			/* pinned with FOLL_WRITE */
	bool valid;			/* cleared by the MMU notifier */
	bool linked;			/* on the entries list */
	struct page **pages;
	struct work_struct free_work;
};

/*
 * Per endpoint RMA state (ep->rma).
 *
 * Life time: kref.  The endpoint holds one reference until
 * scif_rma_ep_release(); every peer mapping of its windows (struct
 * scif_mmap_ctx) holds one, so that the mapping can still take win_lock to
 * end a lingering window's reservation.  After scif_rma_ep_release() the
 * structure is empty (no window in the tree, dead set) and only win_lock
 * is still used.
 *
 * win_lock (rw_semaphore) protects windows, nwindows, dead and the tree
 * related fields of every window in the tree (node, nmaps, unreg); RMA
 * lookups take it shared, registration, unregistration, mmap and the
 * release of a mapping exclusive.
 * fence_lock (spinlock) protects issued, inflight, ninflight, nasync, signals,
 * nsignals, disconnected, nqueued, queue, running and nbusy.
 * The rcache list and count are protected by a global spinlock of
 * scif_rma_cache.c (scif_rcache_lock).
 *
 * Lock order (outermost first), beside the core's (scif_ep.h); the RMA
 * code is never entered with a core spinlock held:
 *
 *   mm->mmap_lock            mmap() and the removal of a peer mapping
 *                            (vm_ops->close); faults take no RMA lock
 *   win_lock                 at most one endpoint's at a time
 *   fence_lock, scif_rcache_lock   leaves: nothing is taken inside them
 *                            and nothing sleeps under them
 *
 * scif_dma_rwsem (scif_rma_dma.c) is taken with no RMA lock held: a copy
 * holds it shared for its duration, only changing the channel (dmaengine's
 * own locks inside) takes it exclusive.  User memory is pinned
 * (pin_user_pages_fast, may take mmap_lock) with no RMA lock held.  The
 * last scif_ep_put() of an endpoint may run scif_rma_ep_release()
 * (win_lock) under core mutexes or in the RMA workqueue; a window's last
 * put (unpin, page locks, mmdrop) may run under win_lock or under the
 * mapper's mmap_lock (vm_ops->close), which the order above allows.
 */
struct scif_rma_ep {
	struct kref ref;
	struct scif_endpt *ep;		/* back pointer, not counted; NULL
					 * after scif_rma_ep_release() */

	struct rw_semaphore win_lock;
	struct rb_root windows;
	unsigned long nwindows;		/* in the tree, lingering included */
	u64 next_off;			/* allocation hint */
	bool dead;			/* disconnected: no new mmap */

	spinlock_t fence_lock;
	u64 issued;			/* sequence of the last RMA issued */
	struct list_head inflight;	/* struct scif_xfer, ascending seq */
	unsigned int ninflight;		/* entries on inflight */
	unsigned int nasync;		/* ... of them asynchronous (slot) */
	struct list_head signals;	/* struct scif_fence_sig, by seq */
	unsigned int nsignals;		/* entries on signals */
	wait_queue_head_t fence_wq;
	bool disconnected;

	/*
	 * Asynchronous transfers: nqueued counts those admitted (a slot taken
	 * before pinning, given back when freed; at most SCIF_MAX_INFLIGHT).
	 * queue holds those waiting for a runner: runner[i] works on the
	 * unbound scif_rma_wq while bit i of running is set (holding a
	 * reference on this structure), taking one transfer at a time.  A
	 * DMA endpoint has one runner, so at most one transfer on the DMA
	 * channel; an endpoint whose peer is on another host up to
	 * SCIF_QUEUE_RUNNERS, so that several RDMA transfers are on the link
	 * at once (each runner waits for its own).  nbusy: runners in a
	 * transfer.
	 */
	unsigned int nqueued;
	struct list_head queue;
	unsigned int running;
	unsigned int nbusy;
	struct scif_xfer_runner {
		struct work_struct work;
		struct scif_rma_ep *rma;
	} runner[SCIF_QUEUE_RUNNERS];

	struct {
		struct list_head entries;
		unsigned int count;
	} rcache;
};

/* A page vector: the range starts at byte first_off of pages[0]. */
struct scif_pgvec {
	struct page **pages;
	unsigned int first_off;
};

/*
 * One RMA.  Holds references on both endpoints, on every window it
 * touches, and on the user pages it pinned (or a cache entry), until it
 * completes.  Linked on the initiator's rma->inflight under fence_lock.
 * A transfer that completes before its ioctl returns (everything but an
 * asynchronous DMA transfer) lives in the ioctl's stack frame (onstack),
 * others are allocated and freed by their last user.
 */
struct scif_xfer {
	struct list_head qlink;		/* on rma->queue (async) */
	struct list_head link;
	u64 seq;
	struct scif_endpt *ep;		/* initiator, counted */
	struct scif_endpt *peer;	/* counted */
	struct scif_rma_ep *rma;	/* initiator's */
	struct scif_rma_ep *peer_rma;
	int flags;
	bool dma;			/* the DMA engine may move the data */
	int remote_op;			/* across hosts: SCIF_XPRT_RMA_*, or 0 */
	u64 roffset;			/* ... at this offset of the far side */
	bool slot;			/* holds one of rma->nqueued */
	size_t len;
	struct scif_pgvec src;
	struct scif_pgvec dst;
	struct page **src_alloc;	/* flat page arrays built for the xfer */
	struct page **dst_alloc;
	struct scif_window *wins[4];	/* small inline set, else wins_ext */
	struct scif_window **wins_ext;
	unsigned int nwins;
	unsigned int wins_cap;
	struct page **upages;		/* per call user pins */
	struct page *upages_inline[2];	/* upages of a range of <= 2 pages */
	bool onstack;			/* synchronous: the caller's frame */
	unsigned long nupages;
	bool upages_dirty;
	struct mm_struct *mm;		/* async: mmgrab()ed, charged */
	unsigned long charged;		/* upages charged to mm->pinned_vm */
	struct scif_rcache_entry *rce;	/* or a cache entry */
};

/*
 * The sequence up to which @rma's RMAs have all completed: the one before
 * its oldest RMA in flight, else the last issued.  Under rma->fence_lock.
 */
static inline u64 scif_completed(struct scif_rma_ep *rma)
{
	struct scif_xfer *x;

	x = list_first_entry_or_null(&rma->inflight, struct scif_xfer, link);
	return x ? x->seq - 1 : rma->issued;
}

/* Global counters (debugfs). */
extern atomic_long_t scif_rma_pinned_pages;
extern atomic_t scif_rma_inflight;
extern atomic_t scif_rma_nwindows;
extern atomic_t scif_rma_nmaps;
extern atomic_t scif_rma_queue_max;
extern atomic_t scif_rma_parallel_max;
extern atomic64_t scif_rma_transfers;	/* RMAs issued (sysfs) */
extern struct workqueue_struct *scif_rma_wq;

/* scif_rma.c */
void scif_window_put(struct scif_window *win);
struct scif_window *scif_window_lookup(struct scif_rma_ep *rma, u64 off);
void scif_window_unmapped(struct scif_rma_ep *rma, struct scif_window *win);
void scif_rma_ep_get(struct scif_rma_ep *rma);
void scif_rma_ep_put(struct scif_rma_ep *rma);
int scif_rma_gather(struct scif_rma_ep *rma, u64 off, size_t len, int prot,
		    struct scif_xfer *x, struct scif_pgvec *pv);
int scif_xfer_add_window(struct scif_xfer *x, struct scif_window *win);

/* scif_rma_xfer.c */
long scif_rma_copy_ioctl(struct scif_endpt *ep, unsigned int cmd,
			 void __user *uarg);
void scif_xfer_ep_init(struct scif_rma_ep *rma);
int scif_xfer_init(void);
void scif_xfer_exit(void);

/* scif_fence.c */
long scif_fence_mark_ioctl(struct scif_endpt *ep, void __user *uarg);
long scif_fence_wait_ioctl(struct scif_endpt *ep, int mark);
long scif_fence_signal_ioctl(struct scif_endpt *ep, void __user *uarg);
/* Write and free the signals on @list (taken off rma->signals; no lock). */
void scif_fence_fire(struct list_head *list);
void scif_fence_release(struct scif_rma_ep *rma);

/* scif_rma_dma.c: the data movers */
void scif_copy_cpu(struct scif_pgvec *dst, struct scif_pgvec *src,
		   size_t off, size_t len);
int scif_copy_dma(struct scif_pgvec *dst, struct scif_pgvec *src,
		  size_t off, size_t len);
bool scif_dma_available(void);
/* sysfs: the channel in use ("cpu" if none), and the mover counters */
ssize_t scif_dma_chan_show(char *buf);
void scif_dma_counters(u64 *dma_bytes, u64 *cpu_bytes, u64 *fallbacks);
int scif_dma_init(struct dentry *dbg);
void scif_dma_exit(void);

/* scif_rma_cache.c */
struct scif_rcache_entry *scif_rcache_get(struct scif_rma_ep *rma,
					  unsigned long start,
					  unsigned long npages, bool write);
void scif_rcache_put(struct scif_rcache_entry *e);
void scif_rcache_release(struct scif_rma_ep *rma);

/* RLIMIT_MEMLOCK accounting of long-term pins (windows, cache entries). */
int scif_charge(struct mm_struct *mm, unsigned long npages);

/* Pins: counted in scif_rma_pinned_pages. */
int scif_pin_user(unsigned long start, unsigned long npages,
		  unsigned int gup_flags, struct page **pages);
void scif_unpin_user(struct page **pages, unsigned long npages, bool dirty);

#endif /* SCIF_RMA_PRIV_H */
