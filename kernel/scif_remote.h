/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Remote nodes: SCIF nodes on other hosts, brought up and down by a
 * transport module (kernel/rdma/scif_rdma.ko) through the functions below,
 * exported by scif.ko.  scif.ko itself knows no fabric.
 *
 * Node ids: 0 is this host, 1..SCIF_MAX_EMU_NODES the emulated nodes of
 * this kernel; remote nodes use SCIF_REMOTE_NODE_MIN..SCIF_REMOTE_NODE_MAX,
 * so a remote id never collides with a local one.  A host's remote id is
 * the name the other hosts give it; locally it stays node 0.
 *
 * Locking: the up/down state of each remote id is one bit of a bitmap set
 * and cleared atomically (no lock); readers (SCIF_GET_NODEIDS, connect)
 * read it lockless.  The transport serialises up/down of one id itself.
 *
 * Endpoints: each remote id has a struct scif_node (no device file) whose
 * operations are those of the registered remote transport
 * (scif_remote_register()).  An endpoint on another host is represented
 * here by a local proxy endpoint on that node, connected to the local
 * endpoint like any peer; the transport moves what crosses.  A node that
 * is up is listed by scif_get_nodeIDs() and can be connected to; a remote
 * id that is not up (or without a transport) gives ENODEV as any unknown
 * node.
 */
#ifndef SCIF_REMOTE_H
#define SCIF_REMOTE_H

#include <linux/types.h>

struct scif_transport_ops;
struct scif_node;

#define SCIF_REMOTE_NODE_MIN	17	/* SCIF_MAX_EMU_NODES + 1 */
#define SCIF_REMOTE_NODE_MAX	63
#define SCIF_ALL_NODES		(SCIF_REMOTE_NODE_MAX + 1)
/*
 * SCIF_RMA_ORDERED: the source's last (partial) cache line of this size
 * is written last, locally and by a transport.
 */
#define SCIF_RMA_CACHELINE	64

/*
 * Mark remote node @id reachable / unreachable.  Return 0, -EINVAL for an
 * id outside the remote range, -EEXIST (up) if it is already up, -ENOENT
 * (down) if it was not up.  Any context.  @numa_node is the host NUMA node
 * of the device the link runs on (its NIC), NUMA_NO_NODE if unknown; it is
 * the node's NUMA affinity while it is up (scif_remote_node_numa()).
 */
int scif_remote_node_up(u16 id, int numa_node);
int scif_remote_node_down(u16 id);
/* true if @id is a remote node that is up */
bool scif_remote_node_is_up(u16 id);
/*
 * The NUMA node given to scif_remote_node_up() for @id while it is up,
 * else NUMA_NO_NODE.  Written before the up bit is set and reset after it
 * is cleared (both atomics order it), read lockless.
 */
int scif_remote_node_numa(u16 id);

/*
 * The remote transport: one at a time.  register returns -EBUSY if one is
 * registered.  The transport must have ended every endpoint of its nodes
 * and marked them down before unregistering.  unregister sleeps until no
 * thread is left in (or can still enter) @ops (SRCU, scif_nodes.c), so a
 * module may be freed once it returned; a blocking operation (send_wait)
 * must therefore return once its connection ended.
 */
int scif_remote_register(const struct scif_transport_ops *ops);
void scif_remote_unregister(const struct scif_transport_ops *ops);
/* The node struct of remote id @id (proxies live on it), or NULL. */
struct scif_node *scif_remote_node(u16 id);

/*
 * The target side of an RMA across hosts (docs/transport.md): the pages of
 * [@off, @off + @len) of the registered address space of local endpoint
 * @ep (the caller holds a reference), checked against @ep's windows as a
 * local RMA is: @write needs SCIF_PROT_WRITE, else SCIF_PROT_READ.  On
 * success returns a handle holding a reference on every window involved
 * (so the pages stay pinned even if unregistered meanwhile) and stores
 * the page vector (the range starts at byte *@first_off of (*@pages)[0]).
 * Errors (ERR_PTR): -ENXIO (a hole, or @ep has no RMA state any more),
 * -EACCES (protection), -ENOMEM.  Release with scif_remote_rma_put().
 * Process context.
 */
struct scif_remote_rma;
struct page;
struct scif_endpt;
struct scif_remote_rma *scif_remote_rma_get(struct scif_endpt *ep, u64 off,
					    size_t len, bool write,
					    struct page ***pages,
					    unsigned int *first_off);
void scif_remote_rma_put(struct scif_remote_rma *h);
/*
 * Direct reads and writes by a peer host (docs/transport.md "Direct
 * reads"): the transport exposes a window's pages to the far host for
 * RDMA READ and WRITE, as far as the window's prot allows, and must
 * revoke that before the window's unregistration returns.
 * scif_remote_window_get() takes the registered window of @ep containing
 * @off, which must allow reads or writes: 0 (a reference held, its fields
 * in @rw; the pages stay pinned, and marked dirty when unpinned if the
 * window is writable, until scif_remote_window_put()), -ENXIO (none, or
 * @ep has no RMA state any more), -EACCES.  Once such a window is no
 * longer registered (unregistered, its endpoint closed)
 * scif_remote_window_gone() is true and the core calls the remote
 * transport's windows_gone operation (scif_transport.h): waiting, before
 * scif_unregister() returns; not waiting, from an endpoint's release.
 * Process context.
 */
struct scif_remote_win {
	void *win;			/* the core's window, counted */
	u64 offset;			/* its registered offset */
	unsigned long npages;
	struct page **pages;
	int prot;			/* SCIF_ABI_PROT_READ, _WRITE */
};
int scif_remote_window_get(struct scif_endpt *ep, u64 off,
			   struct scif_remote_win *rw);
bool scif_remote_window_gone(const struct scif_remote_win *rw);
void scif_remote_window_put(struct scif_remote_win *rw);
/*
 * The target side of a remote fence signal: write @val at @off (8-aligned)
 * of @ep's registered address space, checked as a fence signal into a
 * local window is (ENXIO, EACCES); 0 or -errno.  Process context.
 */
int scif_remote_signal(struct scif_endpt *ep, u64 off, u64 val);
/*
 * The far side of an SCIF_FENCE_INIT_PEER fence across hosts, on @ep (the
 * endpoint whose own transfers the far peer fences): the mark of every
 * transfer @ep issued so far (0..2^30-1, as scif_fence_mark() with
 * SCIF_FENCE_INIT_SELF) or -ECONNRESET; and a wait of at most @timeout
 * jiffies until @ep completed the transfers of @mark: 0, -EAGAIN (not
 * yet), -ECONNRESET (@ep's connection ended).  Process context.
 */
int scif_remote_fence_mark(struct scif_endpt *ep);
int scif_remote_fence_wait(struct scif_endpt *ep, int mark, long timeout);

#endif /* SCIF_REMOTE_H */
