// SPDX-License-Identifier: GPL-2.0
/*
 * openscif data movers: CPU copy between pinned pages, and a Linux
 * dmaengine DMA_MEMCPY channel.
 *
 * Both movers copy a byte range between two page vectors and return only
 * when the data has landed (or, DMA only, with -EINTR when a signal ended
 * the wait: see scif_copy_dma()).  Every node lives on this host, so the
 * pages of both sides are directly reachable; a transport for remote hosts
 * would supply movers of its own with the same two calls.
 *
 * Module parameter dma_channel: "auto" (default: the first free memcpy
 * capable channel, taken exclusively on the first transfer that could use
 * it), "off" (CPU only), or a channel name such as "dma0chan0".  Writing it
 * at run time releases the channel held so far.  dma_timeout_ms: how long
 * a batch may take before the channel is reset.
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/error-injection.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include "scif_rma_priv.h"

/* Descriptors submitted before waiting for the batch (see below). */
#define SCIF_DMA_BATCH		256

/*
 * scif_dma_rwsem: shared by every DMA copy while it uses scif_dma.chan,
 * exclusive to change or drop the channel.  scif_dma_param, chan, next_try
 * and gen are protected by it; stalled is set under it shared (a flag) and
 * cleared under it exclusive.  scif_dma.lock (irq safe, a leaf) protects
 * the batches list (struct scif_dma_batch).
 */
static DECLARE_RWSEM(scif_dma_rwsem);
static char scif_dma_param[32] = "auto";
static unsigned int scif_dma_timeout_ms = 5000;
static void scif_dma_reset_work(struct work_struct *work);
static struct {
	struct dma_chan *chan;
	unsigned long next_try;		/* jiffies: next channel request */
	bool stalled;			/* a batch timed out: reset due */
	unsigned long gen;		/* channel drops so far */
	wait_queue_head_t reset_wq;	/* gen changed */
	struct work_struct reset;
	spinlock_t lock;
	struct list_head batches;
	atomic_t nbatches;
	atomic64_t dma_bytes;
	atomic64_t cpu_bytes;
	atomic64_t cpu_bounced;		/* of cpu_bytes: aliased, bounced */
	atomic64_t dma_fallbacks;
	atomic64_t resets;
	atomic64_t copies;		/* copies that used the channel */
	atomic64_t descs;		/* descriptors they submitted */
	atomic_t descs_last;		/* ... the last of them */
} scif_dma = {
	.reset_wq = __WAIT_QUEUE_HEAD_INITIALIZER(scif_dma.reset_wq),
	.reset = __WORK_INITIALIZER(scif_dma.reset, scif_dma_reset_work),
	.lock = __SPIN_LOCK_UNLOCKED(scif_dma.lock),
	.batches = LIST_HEAD_INIT(scif_dma.batches),
};

static void scif_dma_drop_chan(void);

static int scif_dma_param_set(const char *val, const struct kernel_param *kp)
{
	char buf[sizeof(scif_dma_param)];

	strscpy(buf, val, sizeof(buf));
	strim(buf);
	down_write(&scif_dma_rwsem);
	strscpy(scif_dma_param, strim(buf), sizeof(scif_dma_param));
	scif_dma_drop_chan();
	scif_dma.next_try = jiffies;
	up_write(&scif_dma_rwsem);
	return 0;
}

static int scif_dma_param_get(char *buffer, const struct kernel_param *kp)
{
	int n;

	down_read(&scif_dma_rwsem);
	n = scnprintf(buffer, PAGE_SIZE, "%s\n", scif_dma_param);
	up_read(&scif_dma_rwsem);
	return n;
}

static const struct kernel_param_ops scif_dma_param_ops = {
	.set = scif_dma_param_set,
	.get = scif_dma_param_get,
};
module_param_cb(dma_channel, &scif_dma_param_ops, NULL, 0644);
MODULE_PARM_DESC(dma_channel,
		 "RMA DMA channel: auto (default), off, or a channel name");
module_param_named(dma_timeout_ms, scif_dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "time a DMA batch may take before the channel is reset (ms)");

/* ---- CPU mover ---- */

/*
 * Bytes from byte offset @off of @pv that lie in physically contiguous
 * pages (a huge page, or adjacent small pages), at most @max.  On
 * HIGHMEM configurations only pages mapped one at a time are used, so a
 * run never leaves its page.
 */
static size_t scif_cpu_run(struct scif_pgvec *pv, size_t off, size_t max)
{
	struct page **p = &pv->pages[off >> PAGE_SHIFT];
	size_t run = PAGE_SIZE - (off & ~PAGE_MASK);
	unsigned long pfn = page_to_pfn(p[0]);

	if (IS_ENABLED(CONFIG_HIGHMEM))
		return min(run, max);
	while (run < max && page_to_pfn(*++p) == ++pfn)
		run += PAGE_SIZE;
	return min(run, max);
}

/*
 * Kernel addresses that fall in the same set of a small direct-mapped
 * translation cache: QEMU's TCG soft TLB is direct mapped, at least 64
 * entries of 4 KiB, so two addresses a multiple of 256 KiB apart (the
 * common case for two buffers the page allocator handed out in 2 MiB
 * blocks) evict each other on every alternating load and store of a
 * memcpy, which then runs about 10x slower (docs/rma.md).
 */
#define SCIF_ALIAS_SPAN		SZ_256K
#define SCIF_BOUNCE		256

static bool scif_alias(const void *a, const void *b)
{
	return !(((unsigned long)a ^ (unsigned long)b) &
		 (SCIF_ALIAS_SPAN - 1) & PAGE_MASK);
}

/*
 * Copy @len bytes in pieces of at most @max, so that the compiler inlines
 * each one as the plain string move it uses for short bounded copies (out
 * of line, x86 memcpy is "rep movsb" on ERMS CPUs, about 8x slower than
 * "rep movsq" under TCG).
 */
static __always_inline void scif_cpu_pieces(u8 *dst, const u8 *src,
					    size_t len, size_t max)
{
	size_t n;

	for (; len; len -= n, src += n, dst += n) {
		n = min(len, max);
		memcpy(dst, src, n);
	}
}

/*
 * The copy of an aliased run (see above): through a small stack buffer
 * that aliases neither side, so that each pass alternates between two
 * translations that can coexist.  Out of line: only this path pays for
 * the buffer (which the kernel may zero on entry).  Returns false when
 * the buffer itself aliases, and then copies directly.
 */
static noinline bool scif_cpu_bounce(u8 *dst, const u8 *src, size_t len)
{
	u8 bounce[SCIF_BOUNCE] __aligned(SCIF_RMA_CACHELINE);
	size_t n;

	if (scif_alias(bounce, src) || scif_alias(bounce, dst)) {
		scif_cpu_pieces(dst, src, len, PAGE_SIZE);
		return false;
	}
	for (; len; len -= n, src += n, dst += n) {
		n = min_t(size_t, len, SCIF_BOUNCE);
		memcpy(bounce, src, n);
		memcpy(dst, bounce, n);
	}
	return true;
}

/* Copy one contiguous run; returns whether it bounced. */
static bool scif_cpu_memcpy(u8 *dst, const u8 *src, size_t len)
{
	if (len >= SCIF_BOUNCE && scif_alias(dst, src))
		return scif_cpu_bounce(dst, src, len);
	scif_cpu_pieces(dst, src, len, PAGE_SIZE);
	return false;
}

/*
 * Copy whole physically contiguous runs of both sides at a time (up to
 * 1 MiB, then a reschedule point): one memcpy per run pair, one look at
 * each page only to find where a run ends (HIGHMEM: page by page under
 * kmap_local_page()).
 */
void scif_copy_cpu(struct scif_pgvec *dst, struct scif_pgvec *src,
		   size_t off, size_t len)
{
	size_t s = src->first_off + off, d = dst->first_off + off;
	size_t done = 0;

	atomic64_add(len, &scif_dma.cpu_bytes);
	while (len) {
		size_t chunk = scif_cpu_run(src, s, min_t(size_t, len, SZ_1M));
		u8 *sp, *dp;

		chunk = scif_cpu_run(dst, d, chunk);
		sp = kmap_local_page(src->pages[s >> PAGE_SHIFT]);
		dp = kmap_local_page(dst->pages[d >> PAGE_SHIFT]);
		if (scif_cpu_memcpy(dp + (d & ~PAGE_MASK),
				    sp + (s & ~PAGE_MASK), chunk))
			atomic64_add(chunk, &scif_dma.cpu_bounced);
		kunmap_local(dp);
		kunmap_local(sp);
		s += chunk;
		d += chunk;
		len -= chunk;
		done += chunk;
		if (done >= SZ_1M) {
			done = 0;
			cond_resched();
		}
	}
}

/* ---- dmaengine mover ---- */

static bool scif_dma_filter(struct dma_chan *chan, void *param)
{
	const char *name = param;

	return !strcmp(name, "auto") || !strcmp(name, dma_chan_name(chan));
}

/* Called with scif_dma_rwsem held shared; may upgrade to get a channel. */
static struct dma_chan *scif_dma_chan_get(void)
{
	dma_cap_mask_t mask;
	struct dma_chan *chan;

	if (READ_ONCE(scif_dma.stalled))
		return NULL;
	chan = READ_ONCE(scif_dma.chan);
	if (chan || !strcmp(scif_dma_param, "off") ||
	    time_before(jiffies, READ_ONCE(scif_dma.next_try)))
		return chan;
	up_read(&scif_dma_rwsem);
	down_write(&scif_dma_rwsem);
	if (!scif_dma.chan && !READ_ONCE(scif_dma.stalled) &&
	    strcmp(scif_dma_param, "off") &&
	    !time_before(jiffies, scif_dma.next_try)) {
		dma_cap_zero(mask);
		dma_cap_set(DMA_MEMCPY, mask);
		chan = dma_request_channel(mask, scif_dma_filter,
					   scif_dma_param);
		if (chan)
			pr_info("scif: RMA uses DMA channel %s\n",
				dma_chan_name(chan));
		scif_dma.chan = chan;
		scif_dma.next_try = jiffies + HZ / 10;
	}
	downgrade_write(&scif_dma_rwsem);
	return READ_ONCE(scif_dma.stalled) ? NULL : scif_dma.chan;
}

/* Is there a DMA channel to submit to now (requesting one if due)? */
bool scif_dma_available(void)
{
	bool have;

	if (READ_ONCE(scif_dma.stalled) ||
	    down_read_interruptible(&scif_dma_rwsem))
		return false;
	have = scif_dma_chan_get();
	up_read(&scif_dma_rwsem);
	return have;
}

/*
 * A copy moves its range in batches.  A batch walks both page vectors,
 * extends a run while the next page is physically the next one (huge pages
 * and other contiguous memory give long runs), maps each run once and cuts
 * one memcpy descriptor per piece where a source run and a destination run
 * overlap.  Only the batch's last descriptor carries a completion callback
 * and an interrupt, and the batch is started by one issue_pending: the
 * descriptors of one DMA_MEMCPY channel complete in cookie (submission)
 * order, so when the last one called back every one before it has run.
 * An engine that fails a descriptor is expected to abort the ones after it
 * and report that to the last one's callback (as ioatdma does); the
 * software test channel never fails a descriptor it accepted.
 *
 * Bounds: at most SCIF_DMA_BATCH descriptors per batch, and a mapping is
 * made only once its predecessor on the same side is used up by a
 * descriptor, so at most SCIF_DMA_BATCH + 2 mappings (SCIF_DMA_MAPS); a run
 * is at most SCIF_DMA_RUN_MAX bytes, and no longer than the device can map
 * at once (dma_max_mapping_size(): swiotlb bounce buffers limit it).
 */
#define SCIF_DMA_MAPS		(SCIF_DMA_BATCH + 2)
#define SCIF_DMA_RUN_MAX	(1UL << 30)

/* A mapped run of contiguous pages, each referenced (get_page). */
struct scif_dma_map {
	dma_addr_t addr;
	struct page *page;		/* the run's first page */
	size_t len;
	unsigned int npages;
	enum dma_data_direction dir;
};

/* What one descriptor copies: where a source run and a destination run overlap. */
struct scif_dma_piece {
	dma_addr_t s, d;
	size_t len;
};

/*
 * A batch owns its DMA mappings and a reference on every page they cover,
 * so nothing it maps can be unmapped or freed while the engine may still
 * access it, even when the copier gave up waiting (signal, timeout).
 *
 * Life time: kref, one for the copier until it stops waiting and one for
 * the descriptor with the callback (armed) until that callback ran.  The
 * last put (possibly from the engine's callback context) unmaps and frees
 * it.  A batch is on scif_dma.batches (scif_dma.lock) for its whole life:
 * when the channel is dropped (scif_dma_drop_chan(), no copier active) the
 * batches left there are those whose descriptors were stopped by
 * dmaengine_terminate_sync() and never call back, and are freed there.
 * The other fields are the copier's; the callback writes only failed and
 * done (read by the copier after done completed).
 */
struct scif_dma_batch {
	struct kref ref;
	struct list_head link;
	struct completion done;		/* the armed descriptor called back */
	bool failed;			/* ... reporting an error */
	bool armed;			/* a descriptor with the callback is in */
	struct device *dev;
	size_t run_max;			/* longest run mapped at once */
	unsigned int nmaps;		/* mapped runs in m[] */
	unsigned int npieces;		/* pieces cut in p[] */
	unsigned int nsubmitted;	/* descriptors submitted */
	struct scif_dma_map m[SCIF_DMA_MAPS];
	struct scif_dma_piece p[SCIF_DMA_BATCH];
};

static void scif_dma_batch_destroy(struct scif_dma_batch *b)
{
	unsigned int i, j;

	for (i = 0; i < b->nmaps; i++) {
		struct scif_dma_map *m = &b->m[i];

		dma_unmap_page(b->dev, m->addr, m->len, m->dir);
		for (j = 0; j < m->npages; j++)
			put_page(nth_page(m->page, j));
	}
	kvfree(b);
	atomic_dec(&scif_dma.nbatches);
}

static void scif_dma_batch_release(struct kref *ref)
{
	struct scif_dma_batch *b = container_of(ref, struct scif_dma_batch,
						ref);
	unsigned long fl;

	spin_lock_irqsave(&scif_dma.lock, fl);
	list_del(&b->link);
	spin_unlock_irqrestore(&scif_dma.lock, fl);
	scif_dma_batch_destroy(b);
}

static void scif_dma_batch_put(struct scif_dma_batch *b)
{
	kref_put(&b->ref, scif_dma_batch_release);
}

/* Callback of a batch's armed descriptor (any context, never sleeps). */
static void scif_dma_callback(void *arg, const struct dmaengine_result *res)
{
	struct scif_dma_batch *b = arg;

	if (res && res->result != DMA_TRANS_NOERROR)
		WRITE_ONCE(b->failed, true);
	complete(&b->done);
	scif_dma_batch_put(b);
}

/*
 * Bytes (at most @want and @b->run_max) from byte @pos of @v on physically
 * contiguous pages.
 */
static size_t scif_dma_run(const struct scif_dma_batch *b,
			   const struct scif_pgvec *v, size_t pos, size_t want)
{
	struct page **pg = &v->pages[pos >> PAGE_SHIFT];
	unsigned long pfn = page_to_pfn(pg[0]), i = 1;
	size_t run;

	want = min(want, b->run_max);
	run = min(want, PAGE_SIZE - (pos & ~PAGE_MASK));
	while (run < want && page_to_pfn(pg[i]) == pfn + i) {
		run += min(want - run, PAGE_SIZE);
		i++;
	}
	return run;
}

/*
 * Map the next run of batch b: @len bytes from byte @off of @page on, on
 * contiguous pages.  Noinline and listed for fail_function, like
 * scif_dma_queue_chunk(): the fallback after a failed mapping is tested by
 * selftests/rma/failnth_test.
 */
static noinline int scif_dma_map_chunk(struct scif_dma_batch *b,
				       struct page *page, size_t off,
				       size_t len,
				       enum dma_data_direction dir)
{
	struct scif_dma_map *m = &b->m[b->nmaps];
	unsigned int i;

	m->addr = dma_map_page(b->dev, page, off, len, dir);
	if (dma_mapping_error(b->dev, m->addr))
		return -ENOMEM;
	m->page = page;
	m->len = len;
	m->dir = dir;
	m->npages = DIV_ROUND_UP(off + len, PAGE_SIZE);
	for (i = 0; i < m->npages; i++)
		get_page(nth_page(page, i));
	b->nmaps++;
	return 0;
}
ALLOW_ERROR_INJECTION(scif_dma_map_chunk, ERRNO);

/*
 * Prepare and submit the memcpy descriptor of piece @p of batch @b, armed
 * (callback, interrupt, a batch reference) when @last: -ENOMEM when the
 * channel has no descriptor, -EIO when it refuses the submission (then it
 * never runs).
 */
static int scif_dma_prep_submit(struct dma_chan *chan,
				struct scif_dma_batch *b,
				const struct scif_dma_piece *p, bool last)
{
	struct dma_async_tx_descriptor *tx;
	dma_cookie_t cookie;

	tx = dmaengine_prep_dma_memcpy(chan, p->d, p->s, p->len,
				       DMA_CTRL_ACK |
				       (last ? DMA_PREP_INTERRUPT : 0));
	if (!tx)
		return -ENOMEM;
	if (last) {
		tx->callback_result = scif_dma_callback;
		tx->callback_param = b;
		kref_get(&b->ref);
	}
	cookie = dmaengine_submit(tx);
	if (dma_submit_error(cookie)) {
		if (last)
			scif_dma_batch_put(b);	/* the copier holds one */
		return -EIO;
	}
	b->armed |= last;
	b->nsubmitted++;
	return 0;
}

/* The same, as a fail_function point (selftests/rma/failnth_test). */
static noinline int scif_dma_queue_chunk(struct dma_chan *chan,
					 struct scif_dma_batch *b,
					 const struct scif_dma_piece *p,
					 bool last)
{
	return scif_dma_prep_submit(chan, b, p, last);
}
ALLOW_ERROR_INJECTION(scif_dma_queue_chunk, ERRNO);

/*
 * Map the run of @v from byte @pos on (at most @want bytes) as the next
 * mapping of @b: *addr and *left get its DMA address and length.
 */
static int scif_dma_next_run(struct scif_dma_batch *b, struct scif_pgvec *v,
			     size_t pos, size_t want,
			     enum dma_data_direction dir, dma_addr_t *addr,
			     size_t *left)
{
	size_t n = scif_dma_run(b, v, pos, want);
	int err;

	err = scif_dma_map_chunk(b, v->pages[pos >> PAGE_SHIFT],
				 pos & ~PAGE_MASK, n, dir);
	if (err)
		return err;
	*addr = b->m[b->nmaps - 1].addr;
	*left = n;
	return 0;
}

/*
 * Map the runs of one batch from byte @off on and cut its pieces (at most
 * SCIF_DMA_BATCH); nothing is submitted.  *moved gets the batch's length.
 * A failed mapping ends the batch with its error (what was mapped is
 * unmapped when the batch is freed).
 */
static int scif_dma_cut(struct scif_dma_batch *b, struct scif_pgvec *dst,
			struct scif_pgvec *src, size_t off, size_t len,
			size_t *moved)
{
	size_t s = src->first_off + off, d = dst->first_off + off;
	size_t sleft = 0, dleft = 0, done = 0, n;
	dma_addr_t sa = 0, da = 0;
	int err;

	while (done < len && b->npieces < SCIF_DMA_BATCH) {
		/* Two mappings at the most are made for one piece. */
		if (b->nmaps + 2 > SCIF_DMA_MAPS)
			break;
		if (!sleft) {
			err = scif_dma_next_run(b, src, s, len - done,
						DMA_TO_DEVICE, &sa, &sleft);
			if (err)
				return err;
		}
		if (!dleft) {
			err = scif_dma_next_run(b, dst, d, len - done,
						DMA_FROM_DEVICE, &da, &dleft);
			if (err)
				return err;
		}
		n = min3(len - done, sleft, dleft);
		b->p[b->npieces].s = sa;
		b->p[b->npieces].d = da;
		b->p[b->npieces].len = n;
		b->npieces++;
		sa += n;
		da += n;
		sleft -= n;
		dleft -= n;
		s += n;
		d += n;
		done += n;
	}
	*moved = done;
	return 0;
}

/*
 * Submit the pieces of batch @b, the last one armed, and issue them with
 * one issue_pending.  When a submission fails after others went in, those
 * have no callback: a copy of the piece before the failed one (bytes the
 * CPU redoes anyway) is submitted armed to wait for them; when even that
 * fails, -ETIMEDOUT asks for the channel reset, which stops and frees the
 * batch (it keeps a reference for that).  Returns the submission error or
 * 0; nothing is in flight when !b->armed and the result is not -ETIMEDOUT.
 */
static int scif_dma_submit(struct dma_chan *chan, struct scif_dma_batch *b)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < b->npieces; i++) {
		err = scif_dma_queue_chunk(chan, b, &b->p[i],
					   i + 1 == b->npieces);
		if (err)
			break;
	}
	if (err && i && scif_dma_prep_submit(chan, b, &b->p[i - 1], true)) {
		kref_get(&b->ref);	/* freed by the channel reset */
		err = -ETIMEDOUT;
	}
	if (b->nsubmitted)
		dma_async_issue_pending(chan);
	return err;
}

/*
 * One batch: returns 0 when its *moved bytes landed by DMA; -EIO or
 * -ENOMEM when they did not, but nothing of the batch is in flight any
 * more (the CPU may redo it); -ETIMEDOUT or -EINTR when descriptors may
 * still be in flight (the batch keeps its pages until they ran or the
 * channel is dropped).  *descs gets the descriptors submitted.
 */
static int scif_dma_batch(struct dma_chan *chan, struct scif_pgvec *dst,
			  struct scif_pgvec *src, size_t off, size_t len,
			  size_t *moved, unsigned int *descs)
{
	unsigned long tmo = msecs_to_jiffies(READ_ONCE(scif_dma_timeout_ms));
	struct scif_dma_batch *b;
	unsigned long fl;
	long left;
	int err;

	*moved = 0;
	*descs = 0;
	b = kvmalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	kref_init(&b->ref);
	init_completion(&b->done);
	b->failed = false;
	b->armed = false;
	b->dev = chan->device->dev;
	/* What the device can map at once (bounce buffers limit it). */
	b->run_max = clamp_t(size_t, dma_max_mapping_size(b->dev), PAGE_SIZE,
			     SCIF_DMA_RUN_MAX);
	b->nmaps = 0;
	b->npieces = 0;
	b->nsubmitted = 0;
	atomic_inc(&scif_dma.nbatches);
	spin_lock_irqsave(&scif_dma.lock, fl);
	list_add_tail(&b->link, &scif_dma.batches);
	spin_unlock_irqrestore(&scif_dma.lock, fl);

	err = scif_dma_cut(b, dst, src, off, len, moved);
	if (!err)
		err = scif_dma_submit(chan, b);
	*descs = b->nsubmitted;
	if (err == -ETIMEDOUT) {
		pr_err_ratelimited("scif: DMA batch cannot complete on %s, channel reset\n",
				   dma_chan_name(chan));
	} else if (b->armed) {
		left = wait_for_completion_interruptible_timeout(&b->done,
								 tmo ?: 1);
		if (left < 0) {
			err = -EINTR;
		} else if (!left) {
			pr_err_ratelimited("scif: DMA timeout on %s, channel reset\n",
					   dma_chan_name(chan));
			err = -ETIMEDOUT;
		} else if (!err && READ_ONCE(b->failed)) {
			err = -EIO;
		}
	}
	scif_dma_batch_put(b);
	return err;
}

/* Drop the channel (scif_dma_rwsem held exclusive: no copier active). */
static void scif_dma_drop_chan(void)
{
	struct scif_dma_batch *b, *tmp;
	unsigned long fl;
	LIST_HEAD(list);

	if (scif_dma.chan) {
		if (!list_empty(&scif_dma.batches) &&
		    dmaengine_terminate_sync(scif_dma.chan)) {
			/* Cannot stop it: keep the channel and its batches. */
			pr_err("scif: cannot stop DMA channel %s\n",
			       dma_chan_name(scif_dma.chan));
			return;
		}
		/* Stopped: what is left never calls back. */
		spin_lock_irqsave(&scif_dma.lock, fl);
		list_splice_init(&scif_dma.batches, &list);
		spin_unlock_irqrestore(&scif_dma.lock, fl);
		list_for_each_entry_safe(b, tmp, &list, link)
			scif_dma_batch_destroy(b);
		dma_release_channel(scif_dma.chan);
	}
	scif_dma.chan = NULL;
	WRITE_ONCE(scif_dma.stalled, false);
	scif_dma.gen++;
	wake_up_all(&scif_dma.reset_wq);
}

static void scif_dma_reset_work(struct work_struct *work)
{
	down_write(&scif_dma_rwsem);
	if (READ_ONCE(scif_dma.stalled)) {
		scif_dma_drop_chan();
		atomic64_inc(&scif_dma.resets);
		scif_dma.next_try = jiffies + HZ;
	}
	up_write(&scif_dma_rwsem);
}

/*
 * Copy bytes [off, off + len) with the DMA channel.  Returns 0 when all of
 * it was moved, by DMA or (after a failed batch, with nothing of it left in
 * flight) by the CPU; -ENODEV when there is no channel (nothing copied);
 * -EINTR when a signal ended the wait (the range is then undefined).
 *
 * A batch that times out marks the channel stalled: no new copy uses it,
 * and once no copier is left on it, it is stopped
 * (dmaengine_terminate_sync) and released; the timed-out copiers wait
 * (interruptibly) for that before they redo their batch with the CPU, so
 * a late DMA write can never land after the CPU copy.
 */
int scif_copy_dma(struct scif_pgvec *dst, struct scif_pgvec *src,
		  size_t off, size_t len)
{
	unsigned int n, descs = 0;
	struct dma_chan *chan;
	unsigned long gen;
	size_t moved;
	int err = 0;

	/* A stalled channel's reset may wait for other copiers: don't. */
	if (READ_ONCE(scif_dma.stalled))
		return -ENODEV;
	if (down_read_interruptible(&scif_dma_rwsem))
		return -EINTR;
	chan = scif_dma_chan_get();
	if (!chan) {
		up_read(&scif_dma_rwsem);
		return -ENODEV;
	}
	gen = scif_dma.gen;
	while (len) {
		err = scif_dma_batch(chan, dst, src, off, len, &moved, &n);
		descs += n;
		if (err)
			break;
		atomic64_add(moved, &scif_dma.dma_bytes);
		off += moved;
		len -= moved;
		cond_resched();
	}
	atomic64_inc(&scif_dma.copies);
	atomic64_add(descs, &scif_dma.descs);
	atomic_set(&scif_dma.descs_last, descs);
	if (err == -ETIMEDOUT) {
		WRITE_ONCE(scif_dma.stalled, true);	/* a flag: read lock ok */
		queue_work(system_unbound_wq, &scif_dma.reset);
	}
	up_read(&scif_dma_rwsem);
	if (err == -ETIMEDOUT &&
	    wait_event_interruptible(scif_dma.reset_wq,
				     READ_ONCE(scif_dma.gen) != gen))
		err = -EINTR;
	if (err == -EINTR)
		return err;
	if (err) {
		/* Nothing of the failed batch is in flight: redo the rest. */
		atomic64_inc(&scif_dma.dma_fallbacks);
		scif_copy_cpu(dst, src, off, len);
	}
	return 0;
}

static int scif_dbg_dma_show(struct seq_file *s, void *unused)
{
	down_read(&scif_dma_rwsem);
	seq_printf(s, "param %s\nchannel %s\n", scif_dma_param,
		   scif_dma.chan ? dma_chan_name(scif_dma.chan) : "none");
	up_read(&scif_dma_rwsem);
	seq_printf(s, "dma_bytes %lld\ncpu_bytes %lld\nfallbacks %lld\n",
		   (long long)atomic64_read(&scif_dma.dma_bytes),
		   (long long)atomic64_read(&scif_dma.cpu_bytes),
		   (long long)atomic64_read(&scif_dma.dma_fallbacks));
	seq_printf(s, "cpu_bounced %lld\n",
		   (long long)atomic64_read(&scif_dma.cpu_bounced));
	seq_printf(s, "resets %lld\nbatches %d\nqueue_max %d\n",
		   (long long)atomic64_read(&scif_dma.resets),
		   atomic_read(&scif_dma.nbatches),
		   atomic_read(&scif_rma_queue_max));
	seq_printf(s, "copies %lld\ndescs %lld\ndescs_last %d\n",
		   (long long)atomic64_read(&scif_dma.copies),
		   (long long)atomic64_read(&scif_dma.descs),
		   atomic_read(&scif_dma.descs_last));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_dma);

ssize_t scif_dma_chan_show(char *buf)
{
	ssize_t n;

	down_read(&scif_dma_rwsem);
	n = sysfs_emit(buf, "%s\n",
		       scif_dma.chan ? dma_chan_name(scif_dma.chan) : "cpu");
	up_read(&scif_dma_rwsem);
	return n;
}

void scif_dma_counters(u64 *dma_bytes, u64 *cpu_bytes, u64 *fallbacks)
{
	*dma_bytes = atomic64_read(&scif_dma.dma_bytes);
	*cpu_bytes = atomic64_read(&scif_dma.cpu_bytes);
	*fallbacks = atomic64_read(&scif_dma.dma_fallbacks);
}

int scif_dma_init(struct dentry *dbg)
{
	atomic64_set(&scif_dma.dma_bytes, 0);
	atomic64_set(&scif_dma.cpu_bytes, 0);
	atomic64_set(&scif_dma.cpu_bounced, 0);
	atomic64_set(&scif_dma.dma_fallbacks, 0);
	atomic64_set(&scif_dma.resets, 0);
	atomic64_set(&scif_dma.copies, 0);
	atomic64_set(&scif_dma.descs, 0);
	atomic_set(&scif_dma.descs_last, 0);
	atomic_set(&scif_dma.nbatches, 0);
	scif_dma.next_try = jiffies;
	if (dbg)
		debugfs_create_file("rma_dma", 0444, dbg, NULL,
				    &scif_dbg_dma_fops);
	return 0;
}

void scif_dma_exit(void)
{
	cancel_work_sync(&scif_dma.reset);
	down_write(&scif_dma_rwsem);
	scif_dma_drop_chan();
	up_write(&scif_dma_rwsem);
}
