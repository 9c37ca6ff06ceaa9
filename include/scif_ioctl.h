/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * openscif ioctl ABI, shared by the kernel module and user space.
 *
 * Numbers and argument layouts are those of the Linux 4.4-5.9 SCIF uapi
 * (x86-64), so binaries built for that driver keep working.  Extensions use
 * numbers from SCIF_IOCTL_EXT_BASE upward and never change existing meaning.
 */
#ifndef OPENSCIF_SCIF_IOCTL_H
#define OPENSCIF_SCIF_IOCTL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

/* A SCIF address: node and port. */
struct scif_port_id {
	__u16 node;
	__u16 port;
};

/* SCIF_CONNECT: self is filled by the kernel, peer is the target. */
struct scifioctl_connect {
	struct scif_port_id self;
	struct scif_port_id peer;
};

/*
 * SCIF_ACCEPTREQ: endpt receives an opaque handle (never a kernel address)
 * that is passed to SCIF_ACCEPTREG on a freshly opened descriptor.
 */
struct scifioctl_accept {
	__s32 flags;
	struct scif_port_id peer;
	__u64 endpt;
};

/* SCIF_SEND / SCIF_RECV: msg is a user pointer; out_len is bytes moved. */
struct scifioctl_msg {
	__u64 msg;
	__s32 len;
	__s32 flags;
	__s32 out_len;
};

/* SCIF_REG */
struct scifioctl_reg {
	__u64 addr;
	__u64 len;
	__s64 offset;
	__s32 prot;
	__s32 flags;
	__s64 out_offset;
};

/* SCIF_UNREG */
struct scifioctl_unreg {
	__s64 offset;
	__u64 len;
};

/* SCIF_READFROM, SCIF_WRITETO, SCIF_VREADFROM, SCIF_VWRITETO */
struct scifioctl_copy {
	__s64 loffset;
	__u64 len;
	__s64 roffset;
	__u64 addr;
	__s32 flags;
};

/* SCIF_FENCE_MARK: mark is a user pointer to an int receiving the mark. */
struct scifioctl_fence_mark {
	__s32 flags;
	__u64 mark;
};

/* SCIF_FENCE_SIGNAL */
struct scifioctl_fence_signal {
	__s64 loff;
	__u64 lval;
	__s64 roff;
	__u64 rval;
	__s32 flags;
};

/*
 * SCIF_GET_NODEIDS: nodes and self are user pointers to u16.  len is the
 * capacity of nodes on input; on output the kernel writes the number of
 * online nodes into len (it may exceed the capacity; only len entries are
 * filled).
 */
struct scifioctl_node_ids {
	__u64 nodes;
	__u64 self;
	__s32 len;
};

/*
 * Flag and port values of the ABI.  These are the values scif.h gives the
 * names without the ABI_ infix (SCIF_ABI_PROT_READ is SCIF_PROT_READ, and
 * so on); scif.h stays self-contained for programs written against Intel's
 * header, and libscif checks at build time that both agree.  The kernel
 * module uses only these.
 */

/* scif_accept(3) flags */
#define SCIF_ABI_ACCEPT_SYNC		1
/* scif_send(3) / scif_recv(3) flags */
#define SCIF_ABI_SEND_BLOCK		1
#define SCIF_ABI_RECV_BLOCK		1

/* Ports below this need CAP_SYS_ADMIN to bind. */
#define SCIF_ABI_ADMIN_PORT_END		1024
/* Ports below this are never handed out by scif_bind(epd, 0). */
#define SCIF_ABI_PORT_RSVD		1088

/* scif_register(3) / scif_mmap(3) prot_flags */
#define SCIF_ABI_PROT_READ		(1 << 0)
#define SCIF_ABI_PROT_WRITE		(1 << 1)

/* scif_register(3) / scif_mmap(3) map_flags; MAP_KERNEL is EINVAL here */
#define SCIF_ABI_MAP_FIXED		0x10
#define SCIF_ABI_MAP_KERNEL		0x20

/* scif_fence_mark(3) / scif_fence_signal(3) flags */
#define SCIF_ABI_FENCE_INIT_SELF	(1 << 0)
#define SCIF_ABI_FENCE_INIT_PEER	(1 << 1)
#define SCIF_ABI_SIGNAL_LOCAL		(1 << 4)
#define SCIF_ABI_SIGNAL_REMOTE		(1 << 5)
/* Intel's RAS fence flags: kernel clients only, EINVAL here */
#define SCIF_ABI_FENCE_RAS_SELF		(1 << 2)
#define SCIF_ABI_FENCE_RAS_PEER		(1 << 3)

/* scif_readfrom(3) and the other RMA calls: rma_flags */
#define SCIF_ABI_RMA_USECPU		(1 << 0)
#define SCIF_ABI_RMA_USECACHE		(1 << 1)
#define SCIF_ABI_RMA_SYNC		(1 << 2)
#define SCIF_ABI_RMA_ORDERED		(1 << 3)

#define SCIF_BIND		_IOWR('s', 1, __u64)
#define SCIF_LISTEN		_IOW('s', 2, __s32)
#define SCIF_CONNECT		_IOWR('s', 3, struct scifioctl_connect)
#define SCIF_ACCEPTREQ		_IOWR('s', 4, struct scifioctl_accept)
#define SCIF_ACCEPTREG		_IOWR('s', 5, __u64)
#define SCIF_SEND		_IOWR('s', 6, struct scifioctl_msg)
#define SCIF_RECV		_IOWR('s', 7, struct scifioctl_msg)
#define SCIF_REG		_IOWR('s', 8, struct scifioctl_reg)
#define SCIF_UNREG		_IOWR('s', 9, struct scifioctl_unreg)
#define SCIF_READFROM		_IOWR('s', 10, struct scifioctl_copy)
#define SCIF_WRITETO		_IOWR('s', 11, struct scifioctl_copy)
#define SCIF_VREADFROM		_IOWR('s', 12, struct scifioctl_copy)
#define SCIF_VWRITETO		_IOWR('s', 13, struct scifioctl_copy)
#define SCIF_GET_NODEIDS	_IOWR('s', 14, struct scifioctl_node_ids)
#define SCIF_FENCE_MARK		_IOWR('s', 15, struct scifioctl_fence_mark)
#define SCIF_FENCE_WAIT		_IOWR('s', 16, __s32)
#define SCIF_FENCE_SIGNAL	_IOWR('s', 17, struct scifioctl_fence_signal)

/* openscif extensions */
#define SCIF_IOCTL_EXT_BASE	0x40

/* Version of this ABI; bumped only on incompatible change. */
#define SCIF_ABI_VERSION	1
/* SCIF_GET_VERSION: returns SCIF_ABI_VERSION in the int it points to. */
#define SCIF_GET_VERSION	_IOR('s', SCIF_IOCTL_EXT_BASE + 0, __s32)

#endif /* OPENSCIF_SCIF_IOCTL_H */
