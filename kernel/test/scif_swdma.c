// SPDX-License-Identifier: GPL-2.0
/*
 * scif_swdma: a test-only software dmaengine provider with one DMA_MEMCPY
 * channel.  It lets the openscif RMA DMA path run on machines (and VMs)
 * without memcpy-capable DMA hardware.  Descriptors are queued on submit,
 * started by issue_pending and executed in order by a work item, which
 * completes cookies and runs client callbacks like a real engine would.
 *
 * Not for production: "DMA" addresses are resolved back to kernel virtual
 * addresses, which only works with direct (non-IOMMU) DMA mapping.
 *
 * Fault injection (module parameters, writable at run time):
 *   fail_submit=N  the Nth tx_submit from now fails (-EIO), once;
 *   stall=1        descriptors issued from now on are parked: not run, not
 *                  completed; once stall is 0 again, the next issue_pending
 *                  resumes them in order (terminate_all drops them);
 *   delay_ms=N     each descriptor runs (and completes) N ms late.
 * parked (read only) counts the parked descriptors; descs (read only) the
 * descriptors run so far, bytes_copied their bytes and copy_ns the time
 * spent copying them (so a benchmark can tell the copy from the overhead).
 *
 * Reference figure: writing N (bytes, 1 .. 64 MiB) to the root-only
 * debugfs file scif_swdma/memcpy_ns measures this channel doing one large
 * memcpy of N bytes between two physically contiguous kernel buffers
 * (swdma_copy(), as for every descriptor)
 * (chains of 4 MiB blocks, allocated for the measurement and freed after
 * it): one descriptor per block submitted straight to the channel, one
 * issue_pending, one callback waited for; and, for comparison, the CPU
 * doing the same memcpy in the writer.  After one untimed CPU pass (caches,
 * TLB), the fastest of three passes of each counts.  Reading the file
 * gives "bytes N ns T cpu_ns C" of the last measurement.  EBUSY while a
 * fault (stall, fail_submit, delay_ms) is set.
 */
#include <linux/debugfs.h>
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/delay.h>
#include <linux/dmaengine.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/workqueue.h>

struct swdma_desc {
	struct dma_async_tx_descriptor tx;
	struct list_head link;
	dma_addr_t src, dst;
	size_t len;
};

/*
 * lock protects submitted, issued, parked, nparked, fail_submit and the
 * channel's cookie fields; the work item is the only consumer of issued.
 */
struct swdma {
	struct dma_device dd;
	struct dma_chan chan;
	struct platform_device *pdev;
	spinlock_t lock;
	struct list_head submitted;
	struct list_head issued;
	struct list_head parked;
	unsigned int nparked;
	struct work_struct work;
	atomic64_t copied;
	atomic64_t descs;
	atomic64_t copy_ns;	/* time spent copying descriptors */
};

static struct swdma *swdma;

static int fail_submit;
module_param(fail_submit, int, 0644);
MODULE_PARM_DESC(fail_submit, "fault: the Nth submit from now fails (0: off)");
static bool stall;
module_param(stall, bool, 0644);
MODULE_PARM_DESC(stall, "fault: issued descriptors never complete");
static unsigned int delay_ms;
module_param(delay_ms, uint, 0644);
MODULE_PARM_DESC(delay_ms, "fault: every descriptor completes this late");

static int swdma_parked_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%u\n",
			 swdma ? READ_ONCE(swdma->nparked) : 0);
}

static const struct kernel_param_ops swdma_parked_ops = {
	.get = swdma_parked_get,
};
module_param_cb(parked, &swdma_parked_ops, NULL, 0444);
MODULE_PARM_DESC(parked, "descriptors parked by stall");

/*
 * The channel's counters, read-only parameters: one getter, the counter's
 * offset in struct swdma as the parameter's argument.
 */
static int swdma_counter_get(char *buf, const struct kernel_param *kp)
{
	u64 v = 0;

	if (swdma)
		v = atomic64_read((atomic64_t *)((char *)swdma +
						 (uintptr_t)kp->arg));
	return scnprintf(buf, PAGE_SIZE, "%llu\n", v);
}

static const struct kernel_param_ops swdma_counter_ops = {
	.get = swdma_counter_get,
};

#define SWDMA_COUNTER(name, field, desc)				\
	module_param_cb(name, &swdma_counter_ops,			\
			(void *)offsetof(struct swdma, field), 0444);	\
	MODULE_PARM_DESC(name, desc)

SWDMA_COUNTER(bytes_copied, copied, "bytes copied by the software channel");
SWDMA_COUNTER(descs, descs, "descriptors run by the software channel");
SWDMA_COUNTER(copy_ns, copy_ns,
	      "nanoseconds the channel spent copying descriptors");

/* ---- the copy ---- */

/*
 * How the channel copies: page by page, in pieces the compiler inlines as
 * "rep movsq" (an out-of-line x86 memcpy is "rep movsb", about 8x slower
 * under TCG), and a page pair whose kernel addresses are a multiple of
 * 256 KiB apart through a 256-byte stack buffer: QEMU's TCG soft TLB is
 * direct mapped and such pairs evict each other on every access (docs/
 * rma.md).  scif.ko's CPU mover copies the same way.  The transfers and
 * the reference figure below both copy with it, so their ratio measures
 * the per-transfer overhead and not where the emulator's TLB sets fall.
 */
#define SWDMA_ALIAS_SPAN	SZ_256K
#define SWDMA_BOUNCE		256

static bool swdma_alias(const void *a, const void *b)
{
	return !(((unsigned long)a ^ (unsigned long)b) &
		 (SWDMA_ALIAS_SPAN - 1) & PAGE_MASK);
}

static __always_inline void swdma_pieces(u8 *dst, const u8 *src, size_t len,
					 size_t max)
{
	size_t n;

	for (; len; len -= n, src += n, dst += n) {
		n = min(len, max);
		memcpy(dst, src, n);
	}
}

static noinline void swdma_copy(void *dstv, const void *srcv, size_t len)
{
	u8 bounce[SWDMA_BOUNCE] __aligned(64);
	const u8 *src = srcv;
	u8 *dst = dstv;
	size_t n;

	for (; len; len -= n, src += n, dst += n) {
		n = min_t(size_t, len, PAGE_SIZE - offset_in_page(src));
		if (n >= SWDMA_BOUNCE && swdma_alias(dst, src) &&
		    !swdma_alias(bounce, src) && !swdma_alias(bounce, dst)) {
			size_t k, m;

			for (k = 0; k < n; k += m) {
				m = min_t(size_t, n - k, SWDMA_BOUNCE);
				memcpy(bounce, src + k, m);
				memcpy(dst + k, bounce, m);
			}
		} else {
			swdma_pieces(dst, src, n, PAGE_SIZE);
		}
	}
}

/* ---- reference figure: one large memcpy (debugfs memcpy_ns) ---- */

#define SWDMA_REF_MAX		(64UL << 20)
#define SWDMA_REF_ORDER		10	/* 4 MiB blocks: a valid order on 6.1 and 6.12 */
#define SWDMA_REF_BLOCK		(PAGE_SIZE << SWDMA_REF_ORDER)
#define SWDMA_REF_BLOCKS	(SWDMA_REF_MAX / SWDMA_REF_BLOCK)
#define SWDMA_REF_PASSES	3

/* swdma_ref_lock serializes measurements and protects their result. */
static DEFINE_MUTEX(swdma_ref_lock);
static u64 swdma_ref_bytes, swdma_ref_ns, swdma_ref_cpu_ns;
static struct dentry *swdma_dbg;

static struct dma_async_tx_descriptor *
swdma_prep_memcpy(struct dma_chan *c, dma_addr_t dst, dma_addr_t src,
		  size_t len, unsigned long flags);
static void swdma_issue_pending(struct dma_chan *c);

/* memcpy of @len bytes from the blocks @s to the blocks @d by the CPU. */
static void swdma_ref_cpu(struct page **d, struct page **s, size_t len)
{
	unsigned int i;

	for (i = 0; len; i++) {
		size_t n = min(len, SWDMA_REF_BLOCK);

		swdma_copy(page_address(d[i]), page_address(s[i]), n);
		len -= n;
		cond_resched();
	}
}

static void swdma_ref_done(void *arg)
{
	complete(arg);
}

/*
 * The same through the channel: one descriptor per block, the last with a
 * callback, one issue_pending, waiting for the callback.  The blocks are
 * mapped 1:1 (swdma's own device, direct mapping).
 */
static int swdma_ref_chan(struct page **d, struct page **s, size_t len)
{
	struct device *dev = &swdma->pdev->dev;
	DECLARE_COMPLETION_ONSTACK(done);
	struct dma_async_tx_descriptor *tx;
	unsigned int i;

	for (i = 0; len; i++) {
		size_t n = min(len, SWDMA_REF_BLOCK);

		tx = swdma_prep_memcpy(&swdma->chan,
				       phys_to_dma(dev, page_to_phys(d[i])),
				       phys_to_dma(dev, page_to_phys(s[i])), n,
				       DMA_CTRL_ACK);
		if (!tx)
			break;
		len -= n;
		if (!len) {
			tx->callback = swdma_ref_done;
			tx->callback_param = &done;
		}
		if (dma_submit_error(dmaengine_submit(tx)))
			break;
	}
	swdma_issue_pending(&swdma->chan);
	if (len)
		return -ENOMEM;	/* submitted ones run: flush_work waits */
	wait_for_completion(&done);
	return 0;
}

static int swdma_ref_measure(size_t len)
{
	struct page *s[SWDMA_REF_BLOCKS] = {}, *d[SWDMA_REF_BLOCKS] = {};
	unsigned int i, n = DIV_ROUND_UP(len, SWDMA_REF_BLOCK);
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN;
	unsigned int order = min_t(unsigned int, get_order(len),
				   SWDMA_REF_ORDER);
	u64 t0, best = U64_MAX, cpu = U64_MAX;
	int err = -ENOMEM;

	for (i = 0; i < n; i++) {
		s[i] = alloc_pages(gfp, order);
		d[i] = alloc_pages(gfp, order);
		if (!s[i] || !d[i])
			goto out;
	}
	for (i = 0; i < n; i++)
		memset(page_address(s[i]), i + 1, PAGE_SIZE << order);
	swdma_ref_cpu(d, s, len);	/* warm up */
	for (i = 0; i < SWDMA_REF_PASSES; i++) {
		t0 = ktime_get_ns();
		swdma_ref_cpu(d, s, len);
		cpu = min(cpu, ktime_get_ns() - t0);
		t0 = ktime_get_ns();
		err = swdma_ref_chan(d, s, len);
		if (err) {
			flush_work(&swdma->work);
			goto out;
		}
		best = min(best, ktime_get_ns() - t0);
	}
	swdma_ref_bytes = len;
	swdma_ref_ns = best;
	swdma_ref_cpu_ns = cpu;
out:
	for (i = 0; i < n; i++) {
		if (s[i])
			__free_pages(s[i], order);
		if (d[i])
			__free_pages(d[i], order);
	}
	return err;
}

static ssize_t swdma_ref_write(struct file *f, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	u64 len;
	int err;

	err = kstrtou64_from_user(ubuf, count, 0, &len);
	if (err)
		return err;
	if (!len || len > SWDMA_REF_MAX)
		return -EINVAL;
	if (mutex_lock_interruptible(&swdma_ref_lock))
		return -EINTR;
	/* A fault would park or fail the descriptors waited for. */
	if (!swdma || READ_ONCE(stall) || READ_ONCE(fail_submit) ||
	    READ_ONCE(delay_ms))
		err = -EBUSY;
	else
		err = swdma_ref_measure(len);
	mutex_unlock(&swdma_ref_lock);
	return err ? err : count;
}

static int swdma_ref_show(struct seq_file *m, void *unused)
{
	if (mutex_lock_interruptible(&swdma_ref_lock))
		return -EINTR;
	seq_printf(m, "bytes %llu ns %llu cpu_ns %llu\n", swdma_ref_bytes,
		   swdma_ref_ns, swdma_ref_cpu_ns);
	mutex_unlock(&swdma_ref_lock);
	return 0;
}

static int swdma_ref_open(struct inode *inode, struct file *f)
{
	return single_open(f, swdma_ref_show, NULL);
}

static const struct file_operations swdma_ref_fops = {
	.owner = THIS_MODULE,
	.open = swdma_ref_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = swdma_ref_write,
};

static struct swdma *to_swdma(struct dma_chan *c)
{
	return container_of(c, struct swdma, chan);
}

static dma_cookie_t swdma_submit(struct dma_async_tx_descriptor *tx)
{
	struct swdma_desc *d = container_of(tx, struct swdma_desc, tx);
	struct swdma *s = to_swdma(tx->chan);
	struct dma_chan *c = tx->chan;
	dma_cookie_t cookie;
	unsigned long fl;

	spin_lock_irqsave(&s->lock, fl);
	if (fail_submit > 0 && !--fail_submit) {
		spin_unlock_irqrestore(&s->lock, fl);
		kfree(d);
		return -EIO;
	}
	cookie = c->cookie + 1;
	if (cookie < DMA_MIN_COOKIE)
		cookie = DMA_MIN_COOKIE;
	c->cookie = cookie;
	tx->cookie = cookie;
	list_add_tail(&d->link, &s->submitted);
	spin_unlock_irqrestore(&s->lock, fl);
	return cookie;
}

static struct dma_async_tx_descriptor *
swdma_prep_memcpy(struct dma_chan *c, dma_addr_t dst, dma_addr_t src,
		  size_t len, unsigned long flags)
{
	struct swdma_desc *d = kzalloc(sizeof(*d), GFP_NOWAIT);

	if (!d)
		return NULL;
	dma_async_tx_descriptor_init(&d->tx, c);
	d->tx.flags = flags;
	d->tx.tx_submit = swdma_submit;
	d->src = src;
	d->dst = dst;
	d->len = len;
	return &d->tx;
}

static void swdma_work(struct work_struct *w)
{
	struct swdma *s = container_of(w, struct swdma, work);
	struct device *dev = &s->pdev->dev;
	struct dmaengine_result res = { .result = DMA_TRANS_NOERROR };
	struct swdma_desc *d;
	unsigned long fl;
	u64 t0;

	for (;;) {
		spin_lock_irqsave(&s->lock, fl);
		d = list_first_entry_or_null(&s->issued, struct swdma_desc,
					     link);
		if (d && READ_ONCE(stall)) {
			list_move_tail(&d->link, &s->parked);
			s->nparked++;
			spin_unlock_irqrestore(&s->lock, fl);
			continue;
		}
		if (d)
			list_del(&d->link);
		spin_unlock_irqrestore(&s->lock, fl);
		if (!d)
			break;
		if (READ_ONCE(delay_ms))
			msleep(READ_ONCE(delay_ms));
		t0 = ktime_get_ns();
		swdma_copy(phys_to_virt(dma_to_phys(dev, d->dst)),
			   phys_to_virt(dma_to_phys(dev, d->src)), d->len);
		atomic64_add(ktime_get_ns() - t0, &s->copy_ns);
		atomic64_add(d->len, &s->copied);
		atomic64_inc(&s->descs);

		spin_lock_irqsave(&s->lock, fl);
		s->chan.completed_cookie = d->tx.cookie;
		spin_unlock_irqrestore(&s->lock, fl);
		if (d->tx.callback_result)
			d->tx.callback_result(d->tx.callback_param, &res);
		else if (d->tx.callback)
			d->tx.callback(d->tx.callback_param);
		kfree(d);
		cond_resched();
	}
}

static void swdma_issue_pending(struct dma_chan *c)
{
	struct swdma *s = to_swdma(c);
	unsigned long fl;

	spin_lock_irqsave(&s->lock, fl);
	if (!READ_ONCE(stall)) {
		/* Parked ones were issued first: they go first. */
		list_splice_init(&s->parked, &s->issued);
		s->nparked = 0;
	}
	list_splice_tail_init(&s->submitted, &s->issued);
	spin_unlock_irqrestore(&s->lock, fl);
	queue_work(system_unbound_wq, &s->work);
}

static enum dma_status swdma_tx_status(struct dma_chan *c, dma_cookie_t cookie,
				       struct dma_tx_state *st)
{
	struct swdma *s = to_swdma(c);
	dma_cookie_t used, done;
	unsigned long fl;

	spin_lock_irqsave(&s->lock, fl);
	used = c->cookie;
	done = c->completed_cookie;
	spin_unlock_irqrestore(&s->lock, fl);
	dma_set_tx_state(st, done, used, 0);
	return dma_async_is_complete(cookie, done, used);
}

static int swdma_alloc_chan(struct dma_chan *c)
{
	c->cookie = DMA_MIN_COOKIE;
	c->completed_cookie = DMA_MIN_COOKIE;
	return 1;
}

/* Drop every descriptor not yet run (no callbacks: they were aborted). */
static int swdma_terminate_all(struct dma_chan *c)
{
	struct swdma *s = to_swdma(c);
	struct swdma_desc *d, *tmp;
	unsigned long fl;
	LIST_HEAD(list);

	spin_lock_irqsave(&s->lock, fl);
	list_splice_init(&s->submitted, &list);
	list_splice_init(&s->issued, &list);
	list_splice_init(&s->parked, &list);
	s->nparked = 0;
	spin_unlock_irqrestore(&s->lock, fl);
	list_for_each_entry_safe(d, tmp, &list, link)
		kfree(d);
	return 0;
}

static void swdma_drain(struct swdma *s)
{
	swdma_terminate_all(&s->chan);
	flush_work(&s->work);
}

static void swdma_free_chan(struct dma_chan *c)
{
	swdma_drain(to_swdma(c));
}

static void swdma_synchronize(struct dma_chan *c)
{
	flush_work(&to_swdma(c)->work);
}

static void swdma_release(struct dma_device *dd)
{
	/* Freed by module exit after unregistering. */
}

/* Bound to our own platform device: dmaengine needs dev->driver->owner. */
static int swdma_probe(struct platform_device *pdev)
{
	struct swdma *s;
	int err;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	spin_lock_init(&s->lock);
	INIT_LIST_HEAD(&s->submitted);
	INIT_LIST_HEAD(&s->issued);
	INIT_LIST_HEAD(&s->parked);
	INIT_WORK(&s->work, swdma_work);
	s->pdev = pdev;
	err = dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		goto free;

	dma_cap_set(DMA_MEMCPY, s->dd.cap_mask);
	s->dd.dev = &pdev->dev;
	s->dd.device_alloc_chan_resources = swdma_alloc_chan;
	s->dd.device_free_chan_resources = swdma_free_chan;
	s->dd.device_prep_dma_memcpy = swdma_prep_memcpy;
	s->dd.device_issue_pending = swdma_issue_pending;
	s->dd.device_tx_status = swdma_tx_status;
	s->dd.device_terminate_all = swdma_terminate_all;
	s->dd.device_synchronize = swdma_synchronize;
	s->dd.device_release = swdma_release;
	s->dd.copy_align = DMAENGINE_ALIGN_1_BYTE;
	INIT_LIST_HEAD(&s->dd.channels);
	s->chan.device = &s->dd;
	list_add_tail(&s->chan.device_node, &s->dd.channels);

	err = dma_async_device_register(&s->dd);
	if (err)
		goto free;
	platform_set_drvdata(pdev, s);
	swdma = s;
	dev_info(&pdev->dev, "software memcpy channel %s\n",
		 dma_chan_name(&s->chan));
	return 0;
free:
	kfree(s);
	return err;
}

static void swdma_teardown(struct platform_device *pdev)
{
	struct swdma *s = platform_get_drvdata(pdev);

	dma_async_device_unregister(&s->dd);
	swdma_drain(s);
	swdma = NULL;
	kfree(s);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static void swdma_remove(struct platform_device *pdev)
{
	swdma_teardown(pdev);
}
#else
static int swdma_remove(struct platform_device *pdev)
{
	swdma_teardown(pdev);
	return 0;
}
#endif

static struct platform_driver swdma_driver = {
	.probe = swdma_probe,
	.remove = swdma_remove,
	.driver = { .name = "scif_swdma" },
};

static struct platform_device *swdma_pdev;

static int __init swdma_init(void)
{
	int err = platform_driver_register(&swdma_driver);

	if (err)
		return err;
	swdma_pdev = platform_device_register_simple("scif_swdma", -1, NULL, 0);
	if (IS_ERR(swdma_pdev)) {
		platform_driver_unregister(&swdma_driver);
		return PTR_ERR(swdma_pdev);
	}
	if (!swdma) {
		platform_device_unregister(swdma_pdev);
		platform_driver_unregister(&swdma_driver);
		return -ENODEV;
	}
	swdma_dbg = debugfs_create_dir("scif_swdma", NULL);
	debugfs_create_file("memcpy_ns", 0600, swdma_dbg, NULL,
			    &swdma_ref_fops);
	return 0;
}

static void __exit swdma_exit(void)
{
	debugfs_remove_recursive(swdma_dbg);
	platform_device_unregister(swdma_pdev);
	platform_driver_unregister(&swdma_driver);
}

module_init(swdma_init);
module_exit(swdma_exit);
MODULE_DESCRIPTION("openscif test: software dmaengine DMA_MEMCPY channel");
MODULE_LICENSE("GPL");
#ifndef SCIF_VERSION
#error "SCIF_VERSION is not set: build with make (after configure) or with dkms"
#endif
MODULE_VERSION(SCIF_VERSION);
