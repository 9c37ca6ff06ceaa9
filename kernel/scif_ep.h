/* SPDX-License-Identifier: GPL-2.0 */
/*
 * openscif endpoint core: endpoints, nodes, connections and messaging.
 *
 * Lock order (outermost first); no lock of the same class is ever nested
 * except the one documented spin_lock_nested() below:
 *
 *   scif_nodes_mutex            node online/offline changes (node loss)
 *   ep->mutex                   control ioctls of one endpoint (bind, listen,
 *                               connect set-up, accept-register, close);
 *                               never held while sleeping for a peer, never
 *                               two of them at once
 *   ep->send_mutex / ep->recv_mutex
 *                               one sender / one receiver at a time per
 *                               endpoint; held across copy_{from,to}_user
 *   a remote transport's locks  (scif_rdma: srd_msg_mutex, then a link's
 *                               mutex) taken by its operations, which the
 *                               core calls with the mutexes above held but
 *                               no spinlock; under them the transport takes
 *                               ep->lock, queues connectors and drops
 *                               endpoint references
 *   scif_eps_mutex              global endpoint list (alloc, free, debugfs,
 *                               node loss); a last scif_ep_put() may take it
 *                               under any of the mutexes above
 *   node->ports (xa_lock)       port table of a node
 *   lep->lock                   listener state and its pending queue
 *   ep->lock (nested)           a connector's lock taken inside its
 *                               listener's lock while queueing a request
 *   scif_accept_lock            accept handles and listeners' accepted lists
 *   ep->wq's lock               wake-ups are issued under any of the above
 *
 * Reference counting: ep->ref counts the file (scif_file), the peer's
 * ep->peer pointer, a listener's pending queue entry (connector), a
 * connector's ep->conn_lep (listener), the accept handle table entry, and
 * any scif_ep_get()/scif_ep_get_peer() taken by RMA.  A reference held
 * through a wake-up is one's own: an acceptor that hands the queue's
 * reference on a connector to the accepted endpoint takes another for its
 * answer, since the woken connector may close and free at once.  The last
 * scif_ep_put() calls scif_rma_ep_release() and frees the endpoint; it may
 * sleep, so it is never called with a spinlock held.
 */
#ifndef SCIF_EP_H
#define SCIF_EP_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/refcount.h>
#include <linux/xarray.h>
#include <linux/uidgid.h>
#include <linux/atomic.h>
#include <linux/miscdevice.h>
#include <scif_ioctl.h>

#include "scif_rma.h"

#define SCIF_MAX_EMU_NODES	16
#define SCIF_MAX_NODES		(SCIF_MAX_EMU_NODES + 1)
#define SCIF_PORT_MAX		65535
#define SCIF_BACKLOG_MAX	65536

struct scif_transport_ops;

/* One SCIF node (0 = host, 1..N emulated, remote ids: scif_remote.h). */
struct scif_node {
	u16 id;
	/* true while reachable; written under scif_nodes_mutex, read lockless */
	bool online;
	/*
	 * port -> endpoint that owns the port (bound, listening or connected
	 * endpoint that was bound).  Entries hold no reference: an endpoint
	 * removes its entry in scif_ep_close() before its file reference is
	 * dropped.  Protected by its own xa_lock.
	 */
	struct xarray ports;
	u32 port_next;		/* auto-bind hint, under ports' xa_lock */
	const struct scif_transport_ops *ops;
	struct miscdevice misc;
	bool misc_registered;
	char name[16];
};

enum scif_ep_state {
	SCIFEP_UNBOUND,
	SCIFEP_BOUND,
	SCIFEP_LISTENING,
	SCIFEP_CONNECTING,
	SCIFEP_CONNECTED,
	SCIFEP_DISCONNECTED,	/* peer closed or node lost; rx may hold data */
	SCIFEP_CLOSED,		/* released, or replaced through ACCEPTREG */
};

/*
 * Receive ring of an endpoint: single producer (the peer's sender, holding
 * the peer's send_mutex), single consumer (this endpoint's receiver holding
 * recv_mutex).  head/tail are free-running; published with release stores.
 */
struct scif_ring {
	u8 *buf;
	u32 size;		/* power of two */
	u32 head;		/* bytes written, producer only */
	u32 tail;		/* bytes consumed, consumer only */
};

/* ep->flags bits */
#define SCIF_EPF_RMA_DISC	0	/* scif_rma_ep_disconnect() done */
#define SCIF_EPF_PORT_OWNED	1	/* ep->port is our entry in node->ports */
#define SCIF_EPF_USED		2	/* an ioctl changed it: not fresh */

struct scif_endpt {
	refcount_t ref;
	struct scif_node *node;		/* immutable */
	u32 id;				/* debugging id, immutable */
	unsigned long flags;		/* atomic bitops */

	struct mutex mutex;		/* see lock order above */
	struct mutex send_mutex;
	struct mutex recv_mutex;

	/* ---- protected by lock ---- */
	spinlock_t lock;
	enum scif_ep_state state;	/* also read with READ_ONCE in waits */
	u16 port;			/* local port, 0 if none */
	struct scif_port_id peer_id;	/* valid once connected */
	struct scif_endpt *peer;	/* counted; NULL unless CONNECTED */
	int disc_err;			/* -ECONNRESET/-ENODEV once ended */
	int conn_err;			/* failed non-blocking connect result */
	bool nb_connect;		/* in-flight connect is non-blocking */
	bool nb_unreported;		/* nb connect done, not yet reported */
	/* connector side: listener we are queued on (counted) */
	struct scif_endpt *conn_lep;
	struct list_head req_link;	/* in conn_lep->pending */
	/* listener side */
	int backlog;
	int nr_pending;
	struct list_head pending;	/* connectors, each counted */
	/*
	 * The files table of the last accept that waited (compared, never
	 * dereferenced), and a count of the closes that ended the waits:
	 * close(2) in that process wakes them with -EINTR (scif_fop_flush).
	 */
	fl_owner_t acc_files;
	unsigned int acc_flushes;

	/* ---- protected by scif_accept_lock ---- */
	struct list_head accepted;	/* listener: accepted, unregistered */
	struct list_head acc_link;	/* accepted ep: in listener's list */
	struct hlist_node acc_hnode;	/* accepted ep: in the handle table */
	u64 acc_handle;			/* random, never 0; immutable once set */
	kuid_t acc_uid;			/* euid of the ACCEPTREQ caller */
	bool acc_pending;		/* still in the handle table */

	/* receive ring, see struct scif_ring */
	struct scif_ring rx;

	wait_queue_head_t wq;		/* every waiter on this endpoint */

	struct list_head all_link;	/* scif_eps list, scif_eps_mutex */
	struct list_head tmp_link;	/* node loss work list */

	struct scif_rma_ep *rma;	/* owned by the RMA subsystem */
	/*
	 * Owned by the transport of a remote node (its proxies, its
	 * connectors), under that transport's lock; NULL otherwise.
	 */
	void *xprt;
};

/* Per open file of a node device. */
struct scif_file {
	/* the endpoint ioctls act on; changes once (ACCEPTREG), then stays */
	struct scif_endpt *ep;
	/* the endpoint created at open, kept until release once replaced */
	struct scif_endpt *orig;
	/* ours, not the device node's: file->f_mapping is its i_mapping */
	struct inode *inode;
};

struct scif_stats {
	atomic64_t eps_open;
	atomic64_t eps_created;
	atomic64_t connects;
	atomic64_t accepts;
	atomic64_t refused;
	atomic64_t resets;
	atomic64_t bytes_sent;
	atomic64_t bytes_recv;
	atomic64_t nodes_lost;
};

extern struct scif_stats scif_stats;
extern unsigned int scif_nr_nodes;	/* including node 0 */
extern unsigned int scif_ring_size;
extern struct scif_node scif_nodes[SCIF_MAX_NODES];
extern struct mutex scif_nodes_mutex;
extern struct mutex scif_eps_mutex;
extern struct list_head scif_eps;
extern spinlock_t scif_accept_lock;
extern unsigned long scif_accept_count;
extern const struct file_operations scif_fops;

/* scif_ep.c */
struct scif_endpt *scif_ep_alloc(struct scif_node *node);
void scif_ep_close(struct scif_endpt *ep);
void scif_ep_wake(struct scif_endpt *ep);
void scif_ep_end_conn(struct scif_endpt *ep, int err);
void scif_ep_rma_disconnect_once(struct scif_endpt *ep);
const char *scif_ep_state_name(enum scif_ep_state s);
int scif_ring_alloc(struct scif_endpt *ep);

static inline u32 scif_ring_used(const struct scif_ring *r)
{
	return smp_load_acquire(&r->head) - READ_ONCE(r->tail);
}

static inline u32 scif_ring_space(const struct scif_ring *r)
{
	return r->size - (READ_ONCE(r->head) - smp_load_acquire(&r->tail));
}

/* scif_ports.c */
int scif_port_bind(struct scif_endpt *ep, u16 pn);
void scif_port_unbind(struct scif_endpt *ep);
void scif_port_unbind_if(struct scif_endpt *ep, u16 port);

/* scif_conn.c */
int scif_listen(struct scif_endpt *ep, int backlog);
int scif_connect(struct scif_endpt *ep, struct scifioctl_connect *req,
		 bool nonblock);
int scif_accept_req(struct scif_endpt *lep, struct scifioctl_accept *acc);
int scif_accept_reg(struct scif_file *sf, u64 handle);
int scif_conn_deliver(struct scif_endpt *ep, struct scif_node *dst, u16 port);
bool scif_conn_withdraw(struct scif_endpt *ep, int err);
void scif_ep_node_lost(struct scif_endpt *ep, u16 id);
int scif_accept_drop(u64 handle);
void scif_listener_shutdown(struct scif_endpt *lep, int err);
void scif_accepted_cleanup(struct scif_endpt *lep);

/* scif_msg.c */
long scif_send(struct scif_endpt *ep, struct scifioctl_msg *msg);
long scif_recv(struct scif_endpt *ep, struct scifioctl_msg *msg);
ssize_t scif_ring_write(struct scif_ring *r, const void __user *buf,
			size_t len);

/* scif_nodes.c */
int scif_nodes_init(unsigned int nr_emu);
void scif_nodes_exit(void);
struct scif_node *scif_node_lookup(u16 id);
/* calls into a node's transport, safe against its module unloading */
ssize_t scif_xprt_name_show(struct scif_node *node, char *buf);
int scif_xprt_conn_request(struct scif_endpt *ep, u16 dst_node, u16 port);
bool scif_xprt_conn_cancel(struct scif_endpt *ep, u16 dst_node, int err);
/* tell the transport of connector @cep how its request was answered */
void scif_xprt_conn_answer(struct scif_endpt *cep, int err);
ssize_t scif_xprt_msg_send(struct scif_endpt *ep, struct scif_endpt *peer,
			   const void __user *buf, size_t len);
void scif_xprt_notify(struct scif_endpt *peer);
bool scif_xprt_disconnect(struct scif_endpt *ep, struct scif_endpt *peer,
			  int err);
int scif_xprt_send_wait(struct scif_endpt *ep, struct scif_endpt *peer);
struct page;
int scif_xprt_rma(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		  u64 roffset, struct page **pages, unsigned int first_off,
		  size_t len, u32 flags);
int scif_xprt_signal(struct scif_endpt *ep, struct scif_endpt *peer,
		     u64 roffset, u64 val);
void scif_xprt_windows_gone(bool wait);
int scif_xprt_fence(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		    int *mark);
int scif_node_set_lost(u16 id);
int scif_node_set_online(u16 id);
int scif_get_nodeids(struct scif_endpt *ep, struct scifioctl_node_ids *ids);

/* scif_fs.c */
struct inode *scif_fs_inode_new(void);
void scif_fs_inode_put(struct inode *inode);

/* scif_debugfs.c */
struct dentry *scif_debugfs_init(void);
void scif_debugfs_exit(void);

/* scif_main.c: host NUMA node of SCIF node @id, or NUMA_NO_NODE */
int scif_node_numa(u16 id);

/* scif_sysfs.c: /sys/kernel/scif (after scif_nodes_init(), removed first) */
int scif_sysfs_init(void);
void scif_sysfs_exit(void);

#endif /* SCIF_EP_H */
