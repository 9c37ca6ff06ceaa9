// SPDX-License-Identifier: GPL-2.0
/*
 * openscif mmap of a peer's registered window (scif_mmap(3)).
 *
 * mmap(fd, offset) maps the peer window(s) at that offset of the peer's
 * registered address space.  The mapping takes a reference on each window
 * it covers (struct scif_mmap_ctx, see scif_rma_priv.h), and faults insert
 * the PFNs of those windows' pages, never looking the owner's windows up
 * again.  So, as Intel's SCIF documents, the pages stay mapped until the
 * mapper unmaps them, whatever the owner does meanwhile: unregister (the
 * window lingers, its offsets reserved, invisible to RMA), close, die, or
 * lose the connection.  Nothing is ever zapped from the outside.
 */
#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <scif_ioctl.h>
#include "scif_rma_priv.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
static void scif_vma_flags(struct vm_area_struct *vma, unsigned long set,
			   unsigned long clear)
{
	vm_flags_mod(vma, set, clear);
}
#else
static void scif_vma_flags(struct vm_area_struct *vma, unsigned long set,
			   unsigned long clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}
#endif

static void scif_mmap_ctx_free(struct kref *ref)
{
	struct scif_mmap_ctx *ctx = container_of(ref, struct scif_mmap_ctx,
						 ref);
	unsigned int i;

	for (i = 0; i < ctx->nwins; i++) {
		scif_window_unmapped(ctx->owner, ctx->wins[i]);
		scif_window_put(ctx->wins[i]);
	}
	scif_rma_ep_put(ctx->owner);
	kvfree(ctx);
	atomic_dec(&scif_rma_nmaps);
}

/*
 * A VMA of the mapping was split off or copied (partial munmap, mprotect,
 * mremap): it shares the context; the last VMA closed releases it.
 */
static void scif_vm_open(struct vm_area_struct *vma)
{
	struct scif_mmap_ctx *ctx = vma->vm_private_data;

	kref_get(&ctx->ref);
}

/* Under the mapper's mmap_lock: see the lock order in scif_rma_priv.h. */
static void scif_vm_close(struct vm_area_struct *vma)
{
	struct scif_mmap_ctx *ctx = vma->vm_private_data;

	kref_put(&ctx->ref, scif_mmap_ctx_free);
}

/* The window of @ctx containing @off (inside the mapping), or NULL. */
static struct scif_window *scif_mmap_window(struct scif_mmap_ctx *ctx,
					    u64 off)
{
	unsigned int lo = 0, hi = ctx->nwins;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		struct scif_window *w = ctx->wins[mid];

		if (off < w->offset)
			hi = mid;
		else if (off >= w->offset + w->len)
			lo = mid + 1;
		else
			return w;
	}
	return NULL;
}

static vm_fault_t scif_vm_fault(struct vm_fault *vmf)
{
	struct scif_mmap_ctx *ctx = vmf->vma->vm_private_data;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	struct scif_window *w = scif_mmap_window(ctx, off);

	/* Split or moved VMAs keep their offsets: always inside the ctx. */
	if (WARN_ON_ONCE(!w))
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(w->pages[(off - w->offset) >>
						   PAGE_SHIFT]));
}

static const struct vm_operations_struct scif_vm_ops = {
	.open = scif_vm_open,
	.close = scif_vm_close,
	.fault = scif_vm_fault,
};

/* SCIF_PROT_* a window needs for the access @vma allows. */
static int scif_vma_prot(struct vm_area_struct *vma)
{
	return ((vma->vm_flags & VM_READ) ? SCIF_ABI_PROT_READ : 0) |
	       ((vma->vm_flags & VM_WRITE) ? SCIF_ABI_PROT_WRITE : 0);
}

/*
 * Build the context of a mapping of [off, off + len) of @owner: references
 * on the windows covering the range, which must be contiguous registered
 * windows that allow @need.  Every mapping needs SCIF_PROT_READ: the CPU
 * cannot map pages write-only (x86 takes read faults on PROT_WRITE
 * mappings), so a write-only window would become readable.
 */
static noinline int scif_mmap_ctx_new(struct scif_rma_ep *owner, u64 off,
				       u64 len, int need,
				       struct scif_mmap_ctx **out)
{
	struct scif_mmap_ctx *ctx;
	struct scif_window *w;
	u64 cur, end = off + len;
	unsigned int n = 0, i;
	int prot = SCIF_ABI_PROT_READ | SCIF_ABI_PROT_WRITE;
	int err = 0;

	need |= SCIF_ABI_PROT_READ;
	down_write(&owner->win_lock);
	/* Count and check first: nothing is sized by @len before that. */
	for (cur = off; cur < end; cur = w->offset + w->len) {
		w = owner->dead ? NULL : scif_window_lookup(owner, cur);
		if (!w) {
			err = -ENXIO;
			goto out;
		}
		prot &= w->prot;
		n++;
	}
	if ((prot & need) != need) {
		err = -EACCES;
		goto out;
	}
	/* n <= len / PAGE_SIZE, and n windows are pinned already. */
	ctx = kvzalloc(struct_size(ctx, wins, n), GFP_KERNEL_ACCOUNT);
	if (!ctx) {
		err = -ENOMEM;
		goto out;
	}
	kref_init(&ctx->ref);
	ctx->owner = owner;
	scif_rma_ep_get(owner);
	ctx->nwins = n;
	for (i = 0, cur = off; i < n; i++, cur = w->offset + w->len) {
		w = scif_window_lookup(owner, cur);
		kref_get(&w->ref);
		w->nmaps++;
		ctx->wins[i] = w;
	}
	atomic_inc(&scif_rma_nmaps);
	*out = ctx;
out:
	up_write(&owner->win_lock);
	return err;
}
/* Noinline and listed for fail_function: selftests/rma/failfunc_test. */
ALLOW_ERROR_INJECTION(scif_mmap_ctx_new, ERRNO);

int scif_rma_mmap(struct scif_endpt *ep, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start;
	unsigned long clear = VM_MAYEXEC;
	struct scif_mmap_ctx *ctx;
	struct scif_endpt *peer;
	struct scif_rma_ep *owner;
	unsigned int i;
	int prot = SCIF_ABI_PROT_READ | SCIF_ABI_PROT_WRITE;
	int err;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	if (off >= SCIF_RMA_OFF_LIMIT || len > SCIF_RMA_OFF_LIMIT - off)
		return -ENXIO;
	err = scif_ep_get_peer(ep, &peer);
	if (err)
		return err;
	owner = scif_ep_rma(peer);
	if (owner)
		err = scif_mmap_ctx_new(owner, off, len, scif_vma_prot(vma),
					&ctx);
	else
		err = -ECONNRESET;
	scif_ep_put(peer);
	if (err)
		return err;

	/* Never more than the windows allow, also not through mprotect. */
	for (i = 0; i < ctx->nwins; i++)
		prot &= ctx->wins[i]->prot;
	if (!(prot & SCIF_ABI_PROT_WRITE))
		clear |= VM_MAYWRITE;
	scif_vma_flags(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP |
		       VM_DONTCOPY, clear);
	vma->vm_ops = &scif_vm_ops;
	vma->vm_private_data = ctx;
	return 0;
}
