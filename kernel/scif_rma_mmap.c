// SPDX-License-Identifier: GPL-2.0
/*
 * openscif mmap of a peer's registered window (scif_mmap(3)).
 *
 * mmap(fd, offset) maps the peer window(s) at that offset of the peer's
 * registered address space.  Pages are inserted as PFNs on fault while the
 * owner's win_lock is held, and every teardown of a window (unregister,
 * disconnect, release) first removes it from the owner's tree and then
 * zaps the PTEs through the mapper's address_space, before the pages are
 * unpinned.  After that a fault finds no window and raises SIGBUS.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/version.h>
#include "scif_rma_priv.h"

#define SCIF_PROT_READ		(1 << 0)
#define SCIF_PROT_WRITE		(1 << 1)

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

/* Zap the peer's mappings of [off, off + len) of our address space. */
void scif_rma_zap(struct scif_rma_ep *rma, u64 off, u64 len)
{
	mutex_lock(&rma->mmap_mutex);
	if (rma->peer_mapping)
		unmap_mapping_range(rma->peer_mapping, off, len, 1);
	mutex_unlock(&rma->mmap_mutex);
}

void scif_rma_mmap_release(struct scif_rma_ep *rma)
{
	mutex_lock(&rma->mmap_mutex);
	if (rma->peer_mapping)
		iput(rma->peer_mapping->host);
	rma->peer_mapping = NULL;
	mutex_unlock(&rma->mmap_mutex);
}

static void scif_vm_open(struct vm_area_struct *vma)
{
	scif_ep_get(vma->vm_private_data);
}

static void scif_vm_close(struct vm_area_struct *vma)
{
	scif_ep_put(vma->vm_private_data);
}

/* SCIF_PROT_* a window needs for the access @vma allows. */
static int scif_vma_prot(struct vm_area_struct *vma)
{
	return ((vma->vm_flags & VM_READ) ? SCIF_PROT_READ : 0) |
	       ((vma->vm_flags & VM_WRITE) ? SCIF_PROT_WRITE : 0);
}

static vm_fault_t scif_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	struct scif_endpt *peer;
	struct scif_rma_ep *owner;
	struct scif_window *w;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	int need = scif_vma_prot(vma);

	if (scif_ep_get_peer(vma->vm_private_data, &peer))
		return VM_FAULT_SIGBUS;
	owner = scif_ep_rma(peer);
	if (!owner)
		goto put;
	down_read(&owner->win_lock);
	w = owner->dead ? NULL : scif_window_lookup(owner, off);
	/*
	 * The window found now may not be the one checked at mmap time (it
	 * can be unregistered and another registered at the same offset):
	 * check its protection again.
	 */
	if (w && (w->prot & need) == need)
		ret = vmf_insert_pfn(vma, vmf->address,
				     page_to_pfn(w->pages[(off - w->offset) >>
							  PAGE_SHIFT]));
	up_read(&owner->win_lock);
put:
	scif_ep_put(peer);
	return ret;
}

static const struct vm_operations_struct scif_vm_ops = {
	.open = scif_vm_open,
	.close = scif_vm_close,
	.fault = scif_vm_fault,
};

int scif_rma_mmap(struct scif_endpt *ep, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start, cur, end;
	unsigned long clear = VM_MAYEXEC;
	struct scif_endpt *peer;
	struct scif_rma_ep *owner;
	struct scif_window *w;
	int prot = SCIF_PROT_READ | SCIF_PROT_WRITE;
	int err;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	if (off >= SCIF_RMA_OFF_LIMIT || len > SCIF_RMA_OFF_LIMIT - off)
		return -ENXIO;
	err = scif_ep_get_peer(ep, &peer);
	if (err)
		return err;
	owner = scif_ep_rma(peer);
	if (!owner) {
		err = -ECONNRESET;
		goto put;
	}
	end = off + len;
	down_read(&owner->win_lock);
	for (cur = off; cur < end; cur = w->offset + w->len) {
		w = owner->dead ? NULL : scif_window_lookup(owner, cur);
		if (!w) {
			err = -ENXIO;
			break;
		}
		prot &= w->prot;
	}
	if (!err && (prot & scif_vma_prot(vma)) != scif_vma_prot(vma))
		err = -EACCES;
	if (!err) {
		mutex_lock(&owner->mmap_mutex);
		if (!owner->peer_mapping) {
			owner->peer_mapping = vma->vm_file->f_mapping;
			ihold(owner->peer_mapping->host);
		}
		mutex_unlock(&owner->mmap_mutex);
	}
	up_read(&owner->win_lock);
	if (err)
		goto put;

	if (!(prot & SCIF_PROT_WRITE))
		clear |= VM_MAYWRITE;
	if (!(prot & SCIF_PROT_READ))
		clear |= VM_MAYREAD;
	scif_vma_flags(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP |
		       VM_DONTCOPY, clear);
	vma->vm_ops = &scif_vm_ops;
	vma->vm_private_data = ep;
	scif_ep_get(ep);
put:
	scif_ep_put(peer);
	return err;
}
