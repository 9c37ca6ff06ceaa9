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
#include "scif_rma_priv.h"

/* Descriptors submitted before waiting for the batch. */
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

/* One mapped chunk of a batch; the pages are referenced (get_page). */
struct scif_dma_map {
	dma_addr_t s, d;
	struct page *sp, *dp;
	u32 len;
};

/*
 * A batch of at most SCIF_DMA_BATCH descriptors.  It owns the DMA mappings
 * of its chunks and a reference on every page they touch, so nothing it
 * maps can be unmapped or freed while the engine may still access it, even
 * when the copier gave up waiting (signal, timeout).
 *
 * Life time: kref, one for the copier until it stops waiting and one per
 * submitted descriptor until its completion callback ran.  The last put
 * (possibly from the engine's callback context) unmaps and frees it.  A
 * batch is on scif_dma.batches (scif_dma.lock) for its whole life: when
 * the channel is dropped (scif_dma_drop_chan(), no copier active) the
 * batches left there are those whose descriptors were stopped by
 * dmaengine_terminate_sync() and never call back, and are freed there.
 */
struct scif_dma_batch {
	struct kref ref;
	struct list_head link;
	struct completion done;		/* every submitted descriptor ran */
	atomic_t pending;		/* submitted, not called back; +1 bias */
	bool failed;			/* a descriptor reported an error */
	struct device *dev;
	unsigned int n;			/* mapped chunks in m[] */
	struct scif_dma_map m[SCIF_DMA_BATCH];
};

static void scif_dma_batch_destroy(struct scif_dma_batch *b)
{
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		dma_unmap_page(b->dev, b->m[i].s, b->m[i].len, DMA_TO_DEVICE);
		dma_unmap_page(b->dev, b->m[i].d, b->m[i].len,
			       DMA_FROM_DEVICE);
		put_page(b->m[i].sp);
		put_page(b->m[i].dp);
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

/* Completion callback of every descriptor (any context, never sleeps). */
static void scif_dma_callback(void *arg, const struct dmaengine_result *res)
{
	struct scif_dma_batch *b = arg;

	if (res && res->result != DMA_TRANS_NOERROR)
		WRITE_ONCE(b->failed, true);
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
	scif_dma_batch_put(b);
}

/*
 * Map chunk i (len bytes from sp+so to dp+dof) of batch b.  Noinline and
 * listed for fail_function, like scif_dma_queue_chunk(): the fallback
 * after a failed mapping is tested by selftests/rma/failfunc_test.
 */
static noinline int scif_dma_map_chunk(struct scif_dma_batch *b, struct page *sp,
			      size_t so, struct page *dp, size_t dof,
			      size_t len)
{
	struct scif_dma_map *m = &b->m[b->n];

	m->s = dma_map_page(b->dev, sp, so, len, DMA_TO_DEVICE);
	if (dma_mapping_error(b->dev, m->s))
		return -ENOMEM;
	m->d = dma_map_page(b->dev, dp, dof, len, DMA_FROM_DEVICE);
	if (dma_mapping_error(b->dev, m->d)) {
		dma_unmap_page(b->dev, m->s, len, DMA_TO_DEVICE);
		return -ENOMEM;
	}
	get_page(sp);
	get_page(dp);
	m->sp = sp;
	m->dp = dp;
	m->len = len;
	b->n++;
	return 0;
}
ALLOW_ERROR_INJECTION(scif_dma_map_chunk, ERRNO);

/*
 * Prepare and submit the memcpy descriptor of mapped chunk @m of batch @b:
 * -ENOMEM when the channel has no descriptor, -EIO when it refuses the
 * submission (then its callback never runs and @b holds no reference for
 * it).
 */
static noinline int scif_dma_queue_chunk(struct dma_chan *chan,
					 struct scif_dma_batch *b,
					 struct scif_dma_map *m)
{
	struct dma_async_tx_descriptor *tx;
	dma_cookie_t cookie;

	tx = dmaengine_prep_dma_memcpy(chan, m->d, m->s, m->len,
				       DMA_CTRL_ACK | DMA_PREP_INTERRUPT);
	if (!tx)
		return -ENOMEM;
	tx->callback_result = scif_dma_callback;
	tx->callback_param = b;
	kref_get(&b->ref);
	atomic_inc(&b->pending);
	cookie = dmaengine_submit(tx);
	if (dma_submit_error(cookie)) {
		atomic_dec(&b->pending);
		kref_put(&b->ref, scif_dma_batch_release);
		return -EIO;
	}
	return 0;
}
ALLOW_ERROR_INJECTION(scif_dma_queue_chunk, ERRNO);

/*
 * Map, submit and issue one batch starting at byte *off (at most
 * SCIF_DMA_BATCH chunks); *moved gets its length.  Returns the error that
 * stopped mapping or submitting early (what was submitted is issued all
 * the same) or 0.
 */
static int scif_dma_submit(struct dma_chan *chan, struct scif_dma_batch *b,
			   struct scif_pgvec *dst, struct scif_pgvec *src,
			   size_t off, size_t len, size_t *moved)
{
	size_t s = src->first_off + off, d = dst->first_off + off;
	int err = 0;

	*moved = 0;
	while (len && b->n < SCIF_DMA_BATCH) {
		size_t so = s & ~PAGE_MASK, dof = d & ~PAGE_MASK;
		size_t chunk = min3(len, PAGE_SIZE - so, PAGE_SIZE - dof);
		struct scif_dma_map *m = &b->m[b->n];

		err = scif_dma_map_chunk(b, src->pages[s >> PAGE_SHIFT], so,
					 dst->pages[d >> PAGE_SHIFT], dof,
					 chunk);
		if (err)
			break;
		err = scif_dma_queue_chunk(chan, b, m);
		if (err)
			break;
		s += chunk;
		d += chunk;
		len -= chunk;
		*moved += chunk;
	}
	/* Whatever was submitted runs, and is waited for by the caller. */
	if (*moved)
		dma_async_issue_pending(chan);
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
	return err;
}

/*
 * One batch: returns 0 when its *moved bytes landed by DMA; -EIO or
 * -ENOMEM when it did not, but nothing of it is in flight any more (the
 * CPU may redo it); -ETIMEDOUT or -EINTR when descriptors may still be in
 * flight (the batch keeps its pages until they ran or the channel is
 * dropped).
 */
static int scif_dma_batch(struct dma_chan *chan, struct scif_pgvec *dst,
			  struct scif_pgvec *src, size_t off, size_t len,
			  size_t *moved)
{
	unsigned long tmo = msecs_to_jiffies(READ_ONCE(scif_dma_timeout_ms));
	struct scif_dma_batch *b;
	unsigned long fl;
	long left;
	int err;

	*moved = 0;
	b = kvmalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	kref_init(&b->ref);
	init_completion(&b->done);
	atomic_set(&b->pending, 1);
	b->failed = false;
	b->dev = chan->device->dev;
	b->n = 0;
	atomic_inc(&scif_dma.nbatches);
	spin_lock_irqsave(&scif_dma.lock, fl);
	list_add_tail(&b->link, &scif_dma.batches);
	spin_unlock_irqrestore(&scif_dma.lock, fl);

	err = scif_dma_submit(chan, b, dst, src, off, len, moved);
	left = wait_for_completion_interruptible_timeout(&b->done, tmo ?: 1);
	if (left < 0) {
		err = -EINTR;
	} else if (!left) {
		pr_err_ratelimited("scif: DMA timeout on %s, channel reset\n",
				   dma_chan_name(chan));
		err = -ETIMEDOUT;
	} else if (!err && READ_ONCE(b->failed)) {
		err = -EIO;
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
		err = scif_dma_batch(chan, dst, src, off, len, &moved);
		if (err)
			break;
		atomic64_add(moved, &scif_dma.dma_bytes);
		off += moved;
		len -= moved;
		cond_resched();
	}
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
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_dma);

int scif_dma_init(struct dentry *dbg)
{
	atomic64_set(&scif_dma.dma_bytes, 0);
	atomic64_set(&scif_dma.cpu_bytes, 0);
	atomic64_set(&scif_dma.cpu_bounced, 0);
	atomic64_set(&scif_dma.dma_fallbacks, 0);
	atomic64_set(&scif_dma.resets, 0);
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
