// SPDX-License-Identifier: GPL-2.0
/*
 * openscif data movers: CPU copy between pinned pages, and a Linux
 * dmaengine DMA_MEMCPY channel.
 *
 * Both movers copy a byte range between two page vectors and return only
 * when the data has landed.  Every node lives on this host, so the pages of
 * both sides are directly reachable; a transport for remote hosts would
 * supply movers of its own with the same two calls.
 *
 * Module parameter dma_channel: "auto" (default: any memcpy capable
 * channel), "off" (CPU only), or a channel name such as "dma0chan0".
 * Writing it at run time releases the channel held so far.
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "scif_rma_priv.h"

/* Descriptors submitted before waiting for the batch. */
#define SCIF_DMA_BATCH		256
#define SCIF_DMA_TIMEOUT	(30 * HZ)

/*
 * scif_dma_rwsem: shared by every DMA copy while it uses scif_dma.chan,
 * exclusive to change the channel.  scif_dma_param is protected by it too.
 */
static DECLARE_RWSEM(scif_dma_rwsem);
static char scif_dma_param[32] = "auto";
static struct {
	struct dma_chan *chan;
	unsigned long next_try;		/* jiffies: next channel request */
	atomic64_t dma_bytes;
	atomic64_t cpu_bytes;
	atomic64_t dma_fallbacks;
} scif_dma;

static int scif_dma_param_set(const char *val, const struct kernel_param *kp)
{
	char buf[sizeof(scif_dma_param)];

	strscpy(buf, val, sizeof(buf));
	strim(buf);
	down_write(&scif_dma_rwsem);
	strscpy(scif_dma_param, strim(buf), sizeof(scif_dma_param));
	if (scif_dma.chan)
		dma_release_channel(scif_dma.chan);
	scif_dma.chan = NULL;
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

/* ---- CPU mover ---- */

void scif_copy_cpu(struct scif_pgvec *dst, struct scif_pgvec *src,
		   size_t off, size_t len)
{
	size_t s = src->first_off + off, d = dst->first_off + off;
	unsigned int n = 0;

	atomic64_add(len, &scif_dma.cpu_bytes);
	while (len) {
		size_t so = s & ~PAGE_MASK, dof = d & ~PAGE_MASK;
		size_t chunk = min3(len, PAGE_SIZE - so, PAGE_SIZE - dof);
		u8 *sp = kmap_local_page(src->pages[s >> PAGE_SHIFT]);
		u8 *dp = kmap_local_page(dst->pages[d >> PAGE_SHIFT]);

		memcpy(dp + dof, sp + so, chunk);
		kunmap_local(dp);
		kunmap_local(sp);
		s += chunk;
		d += chunk;
		len -= chunk;
		if (!(++n & 255))
			cond_resched();
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

	chan = READ_ONCE(scif_dma.chan);
	if (chan || !strcmp(scif_dma_param, "off") ||
	    time_before(jiffies, READ_ONCE(scif_dma.next_try)))
		return chan;
	up_read(&scif_dma_rwsem);
	down_write(&scif_dma_rwsem);
	if (!scif_dma.chan && strcmp(scif_dma_param, "off")) {
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
	return scif_dma.chan;
}

/* Is there a DMA channel to submit to now (requesting one if due)? */
bool scif_dma_available(void)
{
	bool have;

	down_read(&scif_dma_rwsem);
	have = scif_dma_chan_get();
	up_read(&scif_dma_rwsem);
	return have;
}

struct scif_dma_map {
	dma_addr_t s, d;
	u32 len;
};

static void scif_dma_callback(void *arg)
{
	complete(arg);
}

static void scif_dma_unmap(struct device *dev, struct scif_dma_map *m, int n)
{
	while (n--) {
		dma_unmap_page(dev, m[n].s, m[n].len, DMA_TO_DEVICE);
		dma_unmap_page(dev, m[n].d, m[n].len, DMA_FROM_DEVICE);
	}
}

/*
 * One batch of at most SCIF_DMA_BATCH page chunks starting at byte *off.
 * Returns 0 when the chunks landed by DMA (advancing *off and *len), or an
 * error, in which case the caller copies the batch with the CPU.
 */
static int scif_dma_batch(struct dma_chan *chan, struct scif_dma_map *m,
			  struct scif_pgvec *dst, struct scif_pgvec *src,
			  size_t *off, size_t *len)
{
	struct device *dev = chan->device->dev;
	struct dma_async_tx_descriptor *tx;
	DECLARE_COMPLETION_ONSTACK(done);
	size_t s = src->first_off + *off, d = dst->first_off + *off;
	size_t left = *len, moved = 0;
	dma_cookie_t cookie = -EINVAL;
	int n = 0, err = 0;

	while (left && n < SCIF_DMA_BATCH) {
		size_t so = s & ~PAGE_MASK, dof = d & ~PAGE_MASK;
		size_t chunk = min3(left, PAGE_SIZE - so, PAGE_SIZE - dof);
		unsigned long fl = DMA_CTRL_ACK;

		m[n].len = chunk;
		m[n].s = dma_map_page(dev, src->pages[s >> PAGE_SHIFT], so,
				      chunk, DMA_TO_DEVICE);
		if (dma_mapping_error(dev, m[n].s)) {
			err = -ENOMEM;
			break;
		}
		m[n].d = dma_map_page(dev, dst->pages[d >> PAGE_SHIFT], dof,
				      chunk, DMA_FROM_DEVICE);
		if (dma_mapping_error(dev, m[n].d)) {
			dma_unmap_page(dev, m[n].s, chunk, DMA_TO_DEVICE);
			err = -ENOMEM;
			break;
		}
		n++;
		s += chunk;
		d += chunk;
		left -= chunk;
		moved += chunk;
		if (!left || n == SCIF_DMA_BATCH)
			fl |= DMA_PREP_INTERRUPT;
		tx = dmaengine_prep_dma_memcpy(chan, m[n - 1].d, m[n - 1].s,
					       chunk, fl);
		if (!tx) {
			err = -ENOMEM;
			break;
		}
		if (fl & DMA_PREP_INTERRUPT) {
			tx->callback = scif_dma_callback;
			tx->callback_param = &done;
		}
		cookie = dmaengine_submit(tx);
		if (dma_submit_error(cookie)) {
			err = -EIO;
			break;
		}
	}
	if (err) {
		/* Let what was submitted drain, then let the CPU redo it all. */
		if (!dma_submit_error(cookie)) {
			dma_async_issue_pending(chan);
			dma_sync_wait(chan, cookie);
		}
		scif_dma_unmap(dev, m, n);
		return err;
	}
	dma_async_issue_pending(chan);
	if (!wait_for_completion_timeout(&done, SCIF_DMA_TIMEOUT)) {
		pr_err_ratelimited("scif: DMA timeout on %s\n",
				   dma_chan_name(chan));
		dmaengine_terminate_sync(chan);
		err = -ETIMEDOUT;
	} else if (dmaengine_tx_status(chan, cookie, NULL) != DMA_COMPLETE) {
		err = -EIO;
	}
	scif_dma_unmap(dev, m, n);
	if (!err) {
		*off += moved;
		*len -= moved;
		atomic64_add(moved, &scif_dma.dma_bytes);
	}
	return err;
}

/*
 * Copy bytes [off, off + len) with the DMA channel.  Returns 0 when all of
 * it was moved by DMA, -ENODEV when there is no channel (nothing copied),
 * or 0 after completing failed batches with the CPU.
 */
int scif_copy_dma(struct scif_pgvec *dst, struct scif_pgvec *src,
		  size_t off, size_t len)
{
	struct scif_dma_map *m;
	struct dma_chan *chan;
	int err = 0;

	down_read(&scif_dma_rwsem);
	chan = scif_dma_chan_get();
	if (!chan) {
		up_read(&scif_dma_rwsem);
		return -ENODEV;
	}
	m = kmalloc_array(SCIF_DMA_BATCH, sizeof(*m), GFP_KERNEL);
	if (!m) {
		up_read(&scif_dma_rwsem);
		return -ENOMEM;
	}
	while (len) {
		size_t boff = off, blen = len;

		err = scif_dma_batch(chan, m, dst, src, &off, &len);
		if (err) {
			/* Redo this batch and the rest with the CPU. */
			atomic64_inc(&scif_dma.dma_fallbacks);
			scif_copy_cpu(dst, src, boff, blen);
			len = 0;
			err = 0;
		}
		cond_resched();
	}
	kfree(m);
	up_read(&scif_dma_rwsem);
	return err;
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
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_dma);

int scif_dma_init(struct dentry *dbg)
{
	atomic64_set(&scif_dma.dma_bytes, 0);
	atomic64_set(&scif_dma.cpu_bytes, 0);
	atomic64_set(&scif_dma.dma_fallbacks, 0);
	scif_dma.next_try = jiffies;
	if (dbg)
		debugfs_create_file("rma_dma", 0444, dbg, NULL,
				    &scif_dbg_dma_fops);
	return 0;
}

void scif_dma_exit(void)
{
	down_write(&scif_dma_rwsem);
	if (scif_dma.chan)
		dma_release_channel(scif_dma.chan);
	scif_dma.chan = NULL;
	up_write(&scif_dma_rwsem);
}
