// SPDX-License-Identifier: GPL-2.0
/*
 * Placeholder RMA subsystem: registration, RMA, fences and mmap are not
 * implemented yet and answer ENOSYS.  Replaced by the real scif_rma*.c.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include "scif_rma.h"

int scif_rma_init(struct dentry *dbg)
{
	return 0;
}

void scif_rma_exit(void)
{
}

int scif_rma_ep_init(struct scif_endpt *ep)
{
	return 0;
}

void scif_rma_ep_disconnect(struct scif_endpt *ep)
{
}

void scif_rma_ep_release(struct scif_endpt *ep)
{
}

long scif_rma_ioctl(struct scif_endpt *ep, unsigned int cmd, unsigned long arg)
{
	return -ENOSYS;
}

int scif_rma_mmap(struct scif_endpt *ep, struct vm_area_struct *vma)
{
	return -ENOSYS;
}
