// SPDX-License-Identifier: GPL-2.0
/*
 * scif_copyref: test-only copy reference for bench/rma_bench.  Never load
 * it in production.
 *
 * Times the kernel copying between two pinned user buffers of the caller
 * with the plain primitive of a CPU copy between pinned pages: memcpy
 * between kmap_local_page()d pages, page by page.  The benchmark prints
 * every RMA figure as a ratio to it, so that RMA is compared with what
 * the kernel itself can move on the same machine in the same run.  In
 * mode 1 a page pair whose kernel addresses are a multiple of 256 KiB
 * apart goes through a 256-byte stack buffer, as scif.ko's CPU mover does
 * (docs/rma.md: TCG's direct-mapped soft TLB makes such pairs about 10x
 * slower to copy directly).  Mode 2 times pinning instead of copying:
 * DST pinned long term and writable with pin_user_pages_fast(), as
 * scif_register() pins a window, then unpinned, REPS times; only the pins
 * are timed (the page array's allocation included, as in a registration).
 *
 * Interface: debugfs scif_copyref/copy, root only (0600).  Write
 * "SRC DST LEN REPS [MODE]" (SRC and DST user addresses, hexadecimal with
 * or without 0x; LEN bytes, 1 .. 256 MiB; REPS 1 .. 10000; MODE 0, the
 * default, 1 or 2): in modes 0 and 1 both ranges are
 * pinned (DST writable), copied REPS times and unpinned; the write returns
 * the number of bytes written, or EINVAL (malformed or out of bounds),
 * EFAULT (a range not mapped as needed), ENOMEM, EINTR (fatal signal
 * between two repetitions).  Read: the nanoseconds the copies of the last
 * successful write took (mode 2: the pins), in decimal, or 0 if there was
 * none.
 */
#include <linux/debugfs.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#define COPYREF_MAX_LEN		SZ_256M
#define COPYREF_MAX_REPS	10000

static struct dentry *copyref_dir;
/* copyref_lock serializes measurements and protects copyref_last_ns. */
static DEFINE_MUTEX(copyref_lock);
static u64 copyref_last_ns;

/* Pin @n pages from @start into a new array; NULL on failure (*err). */
static struct page **copyref_pin(unsigned long start, unsigned long n,
				 unsigned int gup, int *err)
{
	struct page **pages;
	unsigned long done = 0;
	long ret;

	pages = kvmalloc_array(n, sizeof(*pages),
			       GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!pages) {
		*err = -ENOMEM;
		return NULL;
	}
	while (done < n) {
		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					  min_t(unsigned long, n - done, SZ_64K),
					  gup, pages + done);
		if (ret <= 0) {
			unpin_user_pages(pages, done);
			kvfree(pages);
			*err = ret ? (int)ret : -EFAULT;
			return NULL;
		}
		done += ret;
	}
	return pages;
}

static void copyref_unpin(struct page **pages, unsigned long n, bool dirty)
{
	unpin_user_pages_dirty_lock(pages, n, dirty);
	kvfree(pages);
}

#define COPYREF_SPAN		SZ_256K
#define COPYREF_BOUNCE		256

static bool copyref_alias(const void *a, const void *b)
{
	return !(((unsigned long)a ^ (unsigned long)b) & (COPYREF_SPAN - 1) &
		 PAGE_MASK);
}

static noinline void copyref_bounce(u8 *dst, const u8 *src, size_t len)
{
	u8 bounce[COPYREF_BOUNCE] __aligned(64);
	size_t n;

	if (copyref_alias(bounce, src) || copyref_alias(bounce, dst)) {
		memcpy(dst, src, len);
		return;
	}
	for (; len; len -= n, src += n, dst += n) {
		n = min_t(size_t, len, COPYREF_BOUNCE);
		memcpy(bounce, src, n);
		memcpy(dst, bounce, n);
	}
}

static void copyref_copy(struct page **dst, unsigned long doff,
			 struct page **src, unsigned long soff, size_t len,
			 bool bounce)
{
	size_t s = soff, d = doff;

	while (len) {
		size_t so = s & ~PAGE_MASK, dof = d & ~PAGE_MASK;
		size_t chunk = min3(len, PAGE_SIZE - so, PAGE_SIZE - dof);
		u8 *sp = kmap_local_page(src[s >> PAGE_SHIFT]);
		u8 *dp = kmap_local_page(dst[d >> PAGE_SHIFT]);

		if (bounce && chunk >= COPYREF_BOUNCE &&
		    copyref_alias(dp + dof, sp + so))
			copyref_bounce(dp + dof, sp + so, chunk);
		else
			memcpy(dp + dof, sp + so, chunk);
		kunmap_local(dp);
		kunmap_local(sp);
		s += chunk;
		d += chunk;
		len -= chunk;
	}
}

/* Mode 2: time @reps long-term writable pins of @n pages at @start. */
static int copyref_pin_time(unsigned long start, unsigned long n,
			    unsigned int reps, u64 *ns)
{
	struct page **pages;
	unsigned int i;
	int err = 0;
	u64 t0;

	for (i = 0; i < reps; i++) {
		if (fatal_signal_pending(current))
			return -EINTR;
		t0 = ktime_get_ns();
		pages = copyref_pin(start, n, FOLL_LONGTERM | FOLL_WRITE, &err);
		if (!pages)
			return err;
		*ns += ktime_get_ns() - t0;
		copyref_unpin(pages, n, false);
		cond_resched();
	}
	return 0;
}

static int copyref_run(u64 src, u64 dst, u64 len, unsigned int reps,
		       unsigned int mode)
{
	unsigned long sn, dn, send, dend;
	struct page **sp, **dp;
	unsigned int i;
	u64 t0, ns = 0;
	int err = 0;

	if (!len || len > COPYREF_MAX_LEN || !reps ||
	    reps > COPYREF_MAX_REPS || mode > 2)
		return -EINVAL;
	if (check_add_overflow(src, len, &send) ||
	    check_add_overflow(dst, len, &dend) ||
	    !access_ok(u64_to_user_ptr(src), len) ||
	    !access_ok(u64_to_user_ptr(dst), len))
		return -EFAULT;
	sn = (PAGE_ALIGN(send) - (src & PAGE_MASK)) >> PAGE_SHIFT;
	dn = (PAGE_ALIGN(dend) - (dst & PAGE_MASK)) >> PAGE_SHIFT;
	if (mode == 2) {
		err = copyref_pin_time(dst & PAGE_MASK, dn, reps, &ns);
		if (!err)
			copyref_last_ns = ns;
		return err;
	}
	sp = copyref_pin(src & PAGE_MASK, sn, 0, &err);
	if (!sp)
		return err;
	dp = copyref_pin(dst & PAGE_MASK, dn, FOLL_WRITE, &err);
	if (!dp) {
		copyref_unpin(sp, sn, false);
		return err;
	}
	for (i = 0; i < reps; i++) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		t0 = ktime_get_ns();
		copyref_copy(dp, dst & ~PAGE_MASK, sp, src & ~PAGE_MASK, len,
			     mode);
		ns += ktime_get_ns() - t0;
		cond_resched();
	}
	copyref_unpin(dp, dn, true);
	copyref_unpin(sp, sn, false);
	if (!err)
		copyref_last_ns = ns;
	return err;
}

static ssize_t copyref_write(struct file *f, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char buf[96];
	u64 src, dst, len;
	unsigned int reps, mode = 0;
	char extra;
	int err, n;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	n = sscanf(buf, "%llx %llx %llu %u %u %c", &src, &dst, &len, &reps,
		   &mode, &extra);
	if (n != 4 && n != 5)
		return -EINVAL;
	if (mutex_lock_killable(&copyref_lock))
		return -EINTR;
	err = copyref_run(src, dst, len, reps, mode);
	mutex_unlock(&copyref_lock);
	return err ? err : count;
}

static ssize_t copyref_read(struct file *f, char __user *ubuf, size_t count,
			    loff_t *ppos)
{
	char buf[32];
	int n;

	if (mutex_lock_killable(&copyref_lock))
		return -EINTR;
	n = scnprintf(buf, sizeof(buf), "%llu\n", copyref_last_ns);
	mutex_unlock(&copyref_lock);
	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static const struct file_operations copyref_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = copyref_read,
	.write = copyref_write,
	.llseek = default_llseek,
};

static int __init copyref_init(void)
{
	copyref_dir = debugfs_create_dir("scif_copyref", NULL);
	debugfs_create_file("copy", 0600, copyref_dir, NULL, &copyref_fops);
	return 0;
}

static void __exit copyref_exit(void)
{
	debugfs_remove_recursive(copyref_dir);
}

module_init(copyref_init);
module_exit(copyref_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("openscif test-only kernel copy reference for rma_bench");
