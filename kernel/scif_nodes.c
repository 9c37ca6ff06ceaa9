// SPDX-License-Identifier: GPL-2.0
/*
 * Nodes and the loopback/emulation transport.  Node 0 is the host; nodes
 * 1..N are emulated in this kernel.  Every node reaches every other node
 * through scif_loopback_ops; node loss is simulated through debugfs.
 * Remote nodes (other hosts) are an up/down bit and a node struct each,
 * served by the transport module registered through scif_remote.h.
 */
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/nodemask.h>
#include <linux/numa.h>
#include <linux/sysfs.h>
#include <linux/srcu.h>
#include "scif_ep.h"
#include "scif_transport.h"
#include "scif_remote.h"

static_assert(SCIF_REMOTE_NODE_MIN == SCIF_MAX_NODES);

struct scif_node scif_nodes[SCIF_MAX_NODES];
unsigned int scif_nr_nodes;
DEFINE_MUTEX(scif_nodes_mutex);

/*
 * The remote nodes' structs; ops is set (under scif_nodes_mutex) while a
 * remote transport is registered, online mirrors the up bit below.
 */
static const struct scif_transport_ops scif_remote_dead_ops;
static struct scif_node scif_rnodes[SCIF_REMOTE_NODE_MAX -
				    SCIF_REMOTE_NODE_MIN + 1];

static bool scif_remote_id_ok(u16 id)
{
	return id >= SCIF_REMOTE_NODE_MIN && id <= SCIF_REMOTE_NODE_MAX;
}

struct scif_node *scif_remote_node(u16 id)
{
	if (!scif_remote_id_ok(id))
		return NULL;
	return &scif_rnodes[id - SCIF_REMOTE_NODE_MIN];
}
EXPORT_SYMBOL_GPL(scif_remote_node);

/* A local node, or a remote one while a transport is registered. */
struct scif_node *scif_node_lookup(u16 id)
{
	struct scif_node *node;

	if (id < scif_nr_nodes)
		return &scif_nodes[id];
	node = scif_remote_node(id);
	if (node && READ_ONCE(node->ops) != &scif_remote_dead_ops)
		return node;
	return NULL;
}
EXPORT_SYMBOL_GPL(scif_node_lookup);

/*
 * Calling a node's transport.  A remote node's operations belong to a
 * module that may be unloading: each call below reads node->ops and runs
 * it inside one read section of scif_xprt_srcu, and
 * scif_remote_unregister() switches the nodes to the dead operations and
 * then waits for every section (synchronize_srcu), so no thread is left in
 * (or about to enter) the module's text once it returns.  A section never
 * spans a wait that only a local event ends: send_wait is bounded by the
 * transport, which ends every connection (waking its waiters) before it
 * unregisters.
 */
DEFINE_STATIC_SRCU(scif_xprt_srcu);

/* The operations serving connections to node @id (loopback if none). */
static const struct scif_transport_ops *scif_node_ops(u16 id)
{
	struct scif_node *node = scif_node_lookup(id);

	return node ? READ_ONCE(node->ops) : &scif_loopback_ops;
}

/* sysfs: "<name of @node's transport>\n" into @buf (name in its module) */
ssize_t scif_xprt_name_show(struct scif_node *node, char *buf)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	ssize_t n = sysfs_emit(buf, "%s\n", READ_ONCE(node->ops)->name);

	srcu_read_unlock(&scif_xprt_srcu, idx);
	return n;
}

int scif_xprt_conn_request(struct scif_endpt *ep, u16 dst_node, u16 port)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	int ret = scif_node_ops(dst_node)->conn_request(ep, dst_node, port);

	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

bool scif_xprt_conn_cancel(struct scif_endpt *ep, u16 dst_node, int err)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	bool ret = scif_node_ops(dst_node)->conn_cancel(ep, err);

	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

void scif_xprt_conn_answer(struct scif_endpt *cep, int err)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	const struct scif_transport_ops *ops = READ_ONCE(cep->node->ops);

	if (ops->conn_answer)
		ops->conn_answer(cep, err);
	srcu_read_unlock(&scif_xprt_srcu, idx);
}

ssize_t scif_xprt_msg_send(struct scif_endpt *ep, struct scif_endpt *peer,
			   const void __user *buf, size_t len)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	ssize_t n = READ_ONCE(peer->node->ops)->msg_send(ep, peer, buf, len);

	srcu_read_unlock(&scif_xprt_srcu, idx);
	return n;
}

void scif_xprt_notify(struct scif_endpt *peer)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);

	READ_ONCE(peer->node->ops)->notify(peer);
	srcu_read_unlock(&scif_xprt_srcu, idx);
}

bool scif_xprt_disconnect(struct scif_endpt *ep, struct scif_endpt *peer,
			  int err)
{
	int idx = srcu_read_lock(&scif_xprt_srcu);
	bool ret = READ_ONCE(peer->node->ops)->disconnect(ep, peer, err);

	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

int scif_xprt_send_wait(struct scif_endpt *ep, struct scif_endpt *peer)
{
	const struct scif_transport_ops *ops;
	int idx, ret = 1;

	idx = srcu_read_lock(&scif_xprt_srcu);
	ops = READ_ONCE(peer->node->ops);
	if (ops->send_wait)
		ret = ops->send_wait(ep, peer);
	srcu_read_unlock(&scif_xprt_srcu, idx);
	if (ret <= 0)
		return ret;
	/* no transport-aware wait: room in the peer's ring */
	return wait_event_interruptible(ep->wq,
			scif_ring_space(&peer->rx) ||
			READ_ONCE(ep->state) != SCIFEP_CONNECTED);
}

int scif_xprt_rma(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		  u64 roffset, struct page **pages, unsigned int first_off,
		  size_t len, u32 flags)
{
	const struct scif_transport_ops *ops;
	int idx, ret = -ENXIO;

	idx = srcu_read_lock(&scif_xprt_srcu);
	ops = READ_ONCE(peer->node->ops);
	if (ops->rma)
		ret = ops->rma(ep, peer, op, roffset, pages, first_off, len,
			       flags);
	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

int scif_xprt_signal(struct scif_endpt *ep, struct scif_endpt *peer,
		     u64 roffset, u64 val)
{
	const struct scif_transport_ops *ops;
	int idx, ret = -ENXIO;

	idx = srcu_read_lock(&scif_xprt_srcu);
	ops = READ_ONCE(peer->node->ops);
	if (ops->signal)
		ret = ops->signal(ep, peer, roffset, val);
	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

int scif_xprt_fence(struct scif_endpt *ep, struct scif_endpt *peer, int op,
		    int *mark)
{
	const struct scif_transport_ops *ops;
	int idx, ret = -ENXIO;

	idx = srcu_read_lock(&scif_xprt_srcu);
	ops = READ_ONCE(peer->node->ops);
	if (ops->fence)
		ret = ops->fence(ep, peer, op, mark);
	srcu_read_unlock(&scif_xprt_srcu, idx);
	return ret;
}

/* Windows a remote transport exposes went away (scif_transport.h). */
void scif_xprt_windows_gone(bool wait)
{
	const struct scif_transport_ops *ops;
	int idx;

	idx = srcu_read_lock(&scif_xprt_srcu);
	ops = READ_ONCE(scif_rnodes[0].ops);
	if (ops->windows_gone)
		ops->windows_gone(wait);
	srcu_read_unlock(&scif_xprt_srcu, idx);
}

/* ---- loopback transport ---- */

static int lb_conn_request(struct scif_endpt *ep, u16 dst_node, u16 port)
{
	struct scif_node *dst = scif_node_lookup(dst_node);

	if (!dst || !READ_ONCE(dst->online))
		return -ENODEV;
	return scif_conn_deliver(ep, dst, port);
}

static bool lb_conn_cancel(struct scif_endpt *ep, int err)
{
	return scif_conn_withdraw(ep, err);
}

static ssize_t lb_msg_send(struct scif_endpt *ep, struct scif_endpt *peer,
			   const void __user *buf, size_t len)
{
	return scif_ring_write(&peer->rx, buf, len);
}

static void lb_notify(struct scif_endpt *peer)
{
	scif_ep_wake(peer);
}

static bool lb_disconnect(struct scif_endpt *ep, struct scif_endpt *peer,
			  int err)
{
	bool was = false;

	spin_lock(&peer->lock);
	if (peer->peer == ep) {
		peer->peer = NULL;
		was = true;
		if (peer->state == SCIFEP_CONNECTED) {
			peer->state = SCIFEP_DISCONNECTED;
			peer->disc_err = err;
		}
	}
	spin_unlock(&peer->lock);
	scif_ep_wake(peer);
	return was;
}

const struct scif_transport_ops scif_loopback_ops = {
	.name = "loopback",
	.conn_request = lb_conn_request,
	.conn_cancel = lb_conn_cancel,
	.msg_send = lb_msg_send,
	.notify = lb_notify,
	.disconnect = lb_disconnect,
};

/* ---- remote nodes (scif_remote.h) ---- */

/*
 * The operations of remote nodes while no transport is registered: a
 * thread that read a node's ops just before the transport went away finds
 * these (never the unloaded module's).
 */
static int dead_conn_request(struct scif_endpt *ep, u16 dst_node, u16 port)
{
	return -ENODEV;
}

static ssize_t dead_msg_send(struct scif_endpt *ep, struct scif_endpt *peer,
			     const void __user *buf, size_t len)
{
	return -ECONNRESET;
}

static const struct scif_transport_ops scif_remote_dead_ops = {
	.name = "none",
	.conn_request = dead_conn_request,
	.conn_cancel = lb_conn_cancel,
	.msg_send = dead_msg_send,
	.notify = lb_notify,
	.disconnect = lb_disconnect,
};

/* Bit @id set while remote node @id is up; atomic bitops, no lock. */
static DECLARE_BITMAP(scif_remote_up, SCIF_ALL_NODES);
/* NUMA affinity of each remote node while up (scif_remote_node_numa()) */
static int scif_remote_numa[ARRAY_SIZE(scif_rnodes)];

int scif_remote_register(const struct scif_transport_ops *ops)
{
	unsigned int i;
	int ret = 0;

	mutex_lock(&scif_nodes_mutex);
	if (scif_rnodes[0].ops != &scif_remote_dead_ops) {
		ret = -EBUSY;
	} else {
		for (i = 0; i < ARRAY_SIZE(scif_rnodes); i++)
			WRITE_ONCE(scif_rnodes[i].ops, ops);
	}
	mutex_unlock(&scif_nodes_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(scif_remote_register);

void scif_remote_unregister(const struct scif_transport_ops *ops)
{
	unsigned int i;

	mutex_lock(&scif_nodes_mutex);
	for (i = 0; i < ARRAY_SIZE(scif_rnodes); i++)
		if (scif_rnodes[i].ops == ops)
			WRITE_ONCE(scif_rnodes[i].ops, &scif_remote_dead_ops);
	mutex_unlock(&scif_nodes_mutex);
	/* no caller is left in @ops' module, none can enter it any more */
	synchronize_srcu(&scif_xprt_srcu);
}
EXPORT_SYMBOL_GPL(scif_remote_unregister);

int scif_remote_node_up(u16 id, int numa_node)
{
	if (!scif_remote_id_ok(id))
		return -EINVAL;
	if (test_bit(id, scif_remote_up))
		return -EEXIST;
	if (numa_node < 0 || numa_node >= MAX_NUMNODES ||
	    !node_online(numa_node))
		numa_node = NUMA_NO_NODE;
	/* the transport serialises up/down of one id: no one else writes */
	WRITE_ONCE(scif_remote_numa[id - SCIF_REMOTE_NODE_MIN], numa_node);
	if (test_and_set_bit(id, scif_remote_up))
		return -EEXIST;
	WRITE_ONCE(scif_remote_node(id)->online, true);
	pr_info("scif: remote node %u up (NUMA node %d)\n", id, numa_node);
	return 0;
}
EXPORT_SYMBOL_GPL(scif_remote_node_up);

int scif_remote_node_down(u16 id)
{
	if (!scif_remote_id_ok(id))
		return -EINVAL;
	if (!test_and_clear_bit(id, scif_remote_up))
		return -ENOENT;
	WRITE_ONCE(scif_remote_node(id)->online, false);
	WRITE_ONCE(scif_remote_numa[id - SCIF_REMOTE_NODE_MIN], NUMA_NO_NODE);
	atomic64_inc(&scif_stats.nodes_lost);
	pr_info("scif: remote node %u down\n", id);
	return 0;
}
EXPORT_SYMBOL_GPL(scif_remote_node_down);

bool scif_remote_node_is_up(u16 id)
{
	return scif_remote_id_ok(id) && test_bit(id, scif_remote_up);
}
EXPORT_SYMBOL_GPL(scif_remote_node_is_up);

int scif_remote_node_numa(u16 id)
{
	if (!scif_remote_node_is_up(id))
		return NUMA_NO_NODE;
	return READ_ONCE(scif_remote_numa[id - SCIF_REMOTE_NODE_MIN]);
}

/* ---- node set-up ---- */

int scif_nodes_init(unsigned int nr_emu)
{
	unsigned int i;
	int err;

	scif_nr_nodes = nr_emu + 1;
	for (i = 0; i < ARRAY_SIZE(scif_rnodes); i++) {
		struct scif_node *node = &scif_rnodes[i];

		node->id = SCIF_REMOTE_NODE_MIN + i;
		scif_remote_numa[i] = NUMA_NO_NODE;
		node->ops = &scif_remote_dead_ops;
		xa_init_flags(&node->ports, XA_FLAGS_ALLOC);
		snprintf(node->name, sizeof(node->name), "remote%u", node->id);
	}
	for (i = 0; i < scif_nr_nodes; i++) {
		struct scif_node *node = &scif_nodes[i];

		node->id = i;
		node->online = true;
		node->ops = &scif_loopback_ops;
		xa_init_flags(&node->ports, XA_FLAGS_ALLOC);
		if (i)
			snprintf(node->name, sizeof(node->name), "scif%u", i);
		else
			snprintf(node->name, sizeof(node->name), "scif");
		node->misc.minor = MISC_DYNAMIC_MINOR;
		node->misc.name = node->name;
		node->misc.fops = &scif_fops;
		node->misc.mode = 0666;
	}
	for (i = 0; i < scif_nr_nodes; i++) {
		err = misc_register(&scif_nodes[i].misc);
		if (err) {
			pr_err("scif: cannot register /dev/%s: %d\n",
			       scif_nodes[i].name, err);
			scif_nodes_exit();
			return err;
		}
		scif_nodes[i].misc_registered = true;
	}
	return 0;
}

void scif_nodes_exit(void)
{
	unsigned int i;

	for (i = 0; i < scif_nr_nodes; i++) {
		struct scif_node *node = &scif_nodes[i];

		if (node->misc_registered)
			misc_deregister(&node->misc);
		node->misc_registered = false;
		if (!xa_empty(&node->ports))
			pr_err("scif: node %u: ports still bound at exit\n", i);
		xa_destroy(&node->ports);
	}
}

/* Simulate the loss of node @id: every connection touching it ends. */
int scif_node_set_lost(u16 id)
{
	struct scif_node *node = scif_node_lookup(id);
	struct scif_endpt *ep, *tmp;
	LIST_HEAD(work);

	if (!node || !id)
		return -EINVAL;
	mutex_lock(&scif_nodes_mutex);
	if (!node->online) {
		mutex_unlock(&scif_nodes_mutex);
		return 0;
	}
	WRITE_ONCE(node->online, false);
	atomic64_inc(&scif_stats.nodes_lost);

	mutex_lock(&scif_eps_mutex);
	list_for_each_entry(ep, &scif_eps, all_link) {
		if (refcount_inc_not_zero(&ep->ref))
			list_add_tail(&ep->tmp_link, &work);
	}
	mutex_unlock(&scif_eps_mutex);

	list_for_each_entry_safe(ep, tmp, &work, tmp_link) {
		list_del_init(&ep->tmp_link);
		scif_ep_node_lost(ep, id);
		scif_ep_put(ep);
	}
	mutex_unlock(&scif_nodes_mutex);
	return 0;
}

int scif_node_set_online(u16 id)
{
	struct scif_node *node = scif_node_lookup(id);

	if (!node)
		return -EINVAL;
	mutex_lock(&scif_nodes_mutex);
	WRITE_ONCE(node->online, true);
	mutex_unlock(&scif_nodes_mutex);
	return 0;
}

/*
 * SCIF_GET_NODEIDS: fill at most ids->len online node ids (ascending: the
 * local ones, then the remote ones that are up), write the caller's node
 * to ids->self and the number of online nodes to ids->len.
 */
int scif_get_nodeids(struct scif_endpt *ep, struct scifioctl_node_ids *ids)
{
	u16 list[SCIF_ALL_NODES];
	unsigned int i, count = 0, fill;
	u16 self = ep->node->id;

	if (ids->len < 0)
		return -EINVAL;
	for (i = 0; i < scif_nr_nodes; i++)
		if (READ_ONCE(scif_nodes[i].online))
			list[count++] = i;
	for_each_set_bit(i, scif_remote_up, SCIF_ALL_NODES)
		list[count++] = i;
	fill = min_t(unsigned int, count, ids->len);
	if (fill && copy_to_user(u64_to_user_ptr(ids->nodes), list,
				 fill * sizeof(list[0])))
		return -EFAULT;
	if (put_user(self, (u16 __user *)u64_to_user_ptr(ids->self)))
		return -EFAULT;
	ids->len = count;
	return 0;
}
