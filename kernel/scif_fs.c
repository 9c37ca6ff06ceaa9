// SPDX-License-Identifier: GPL-2.0
/*
 * One address_space per open SCIF file.
 *
 * The device node's inode belongs to whatever file system holds the node
 * (devtmpfs, or a tmpfs a container runtime populated), so the module must
 * neither keep references to it nor let its mappings live in that inode's
 * address_space.  Every open file gets an anonymous inode of a private
 * pseudo file system instead, and file->f_mapping points to its
 * address_space (as DRM does per device): the VMAs of scif_mmap() link
 * there.  The file system is mounted while any such inode exists
 * (simple_pin_fs), so it holds a module reference only while files are
 * open, as the files themselves do.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include "scif_ep.h"

#define SCIF_FS_MAGIC	0x53434946	/* "SCIF" */

/* Protected by simple_pin_fs()'s own lock. */
static struct vfsmount *scif_fs_mnt;
static int scif_fs_cnt;

static int scif_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, SCIF_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type scif_fs_type = {
	.name = "scif",
	.owner = THIS_MODULE,
	.init_fs_context = scif_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* A new inode for an open file; release it with scif_fs_inode_put(). */
struct inode *scif_fs_inode_new(void)
{
	struct inode *inode;
	int err;

	err = simple_pin_fs(&scif_fs_type, &scif_fs_mnt, &scif_fs_cnt);
	if (err)
		return ERR_PTR(err);
	inode = alloc_anon_inode(scif_fs_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&scif_fs_mnt, &scif_fs_cnt);
	return inode;
}

void scif_fs_inode_put(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&scif_fs_mnt, &scif_fs_cnt);
}
