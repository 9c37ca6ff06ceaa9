// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs: /sys/kernel/scif/, the stable interface of scif_info(1)
 * (documented as ABI in docs/kernel.md; debugfs stays the unstable one).
 *
 *   dma_channel          the RMA DMA channel in use: its name, or "cpu"
 *   remote_nodes         ids of the remote nodes that are up, ascending,
 *                        separated by one space (an empty line: none)
 *   nodes/<id>/online    1 or 0, for each local node 0..N
 *   nodes/<id>/transport "loopback" (the transport's name)
 *   nodes/<id>/numa_node host NUMA node of its memory (node_numa), or -1
 *   remote/<id>/...      the same three files for each remote id 17..63:
 *                        online 1 while up; transport "rdma" (the remote
 *                        transport's name) or "none" when none is
 *                        registered; numa_node the NUMA node of the NIC of
 *                        its link while up, else -1
 *   stats/<counter>      one decimal counter per file (see scif_sysfs_stat)
 *
 * The module version and parameters are the kernel's own
 * /sys/module/scif/{version,parameters/}.  Every file is read-only and
 * readable by everyone (0444): /dev/scif* are 0666, anyone may already
 * list the nodes with scif_get_nodeIDs(), and the counters are global
 * sums that name no process, endpoint or address (as /proc/net/dev).
 *
 * Lifetime: created after the nodes (scif_sysfs_init(), last step of the
 * module's init) and removed first at exit; kobject_put() of a node
 * directory waits for readers (sysfs active references), so no show()
 * runs once scif_sysfs_exit() returned.  Readers take no lock: each value
 * is one READ_ONCE or atomic read, except dma_channel (scif_dma_rwsem).
 */
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include "scif_ep.h"
#include "scif_remote.h"
#include "scif_rma_priv.h"
#include "scif_transport.h"

static struct kobject *scif_kobj;
static struct kobject *scif_nodes_kobj;
static struct kobject *scif_remote_kobj;

struct scif_sysfs_node {
	struct kobject kobj;
	struct scif_node *node;
};

static struct scif_sysfs_node *scif_sysfs_nodes[SCIF_ALL_NODES];

/* ---- top level ---- */

static ssize_t dma_channel_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return scif_dma_chan_show(buf);
}
static struct kobj_attribute dma_channel_attr = __ATTR_RO(dma_channel);

static ssize_t remote_nodes_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	ssize_t n = 0;
	u16 id;

	for (id = SCIF_REMOTE_NODE_MIN; id <= SCIF_REMOTE_NODE_MAX; id++)
		if (scif_remote_node_is_up(id))
			n += sysfs_emit_at(buf, n, "%s%u", n ? " " : "", id);
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}
static struct kobj_attribute remote_nodes_attr = __ATTR_RO(remote_nodes);

static struct attribute *scif_top_attrs[] = {
	&dma_channel_attr.attr,
	&remote_nodes_attr.attr,
	NULL,
};

static const struct attribute_group scif_top_group = {
	.attrs = scif_top_attrs,
};

/* ---- stats/ ---- */

enum scif_stat_id {
	SCIF_ST_EPS_OPEN,
	SCIF_ST_EPS_CREATED,
	SCIF_ST_CONNECTS,
	SCIF_ST_ACCEPTS,
	SCIF_ST_REFUSED,
	SCIF_ST_RESETS,
	SCIF_ST_BYTES_SENT,
	SCIF_ST_BYTES_RECV,
	SCIF_ST_NODES_LOST,
	SCIF_ST_WINDOWS,
	SCIF_ST_MAPPINGS,
	SCIF_ST_PINNED_PAGES,
	SCIF_ST_RMA_INFLIGHT,
	SCIF_ST_RMA_TRANSFERS,
	SCIF_ST_RMA_BYTES_DMA,
	SCIF_ST_RMA_BYTES_CPU,
	SCIF_ST_DMA_FALLBACKS,
};

struct scif_stat_attr {
	struct kobj_attribute kattr;
	enum scif_stat_id id;
};

/* One counter: its value now. */
static u64 scif_sysfs_stat(enum scif_stat_id id)
{
	u64 dma, cpu, fallbacks;

	switch (id) {
	case SCIF_ST_EPS_OPEN:
		return atomic64_read(&scif_stats.eps_open);
	case SCIF_ST_EPS_CREATED:
		return atomic64_read(&scif_stats.eps_created);
	case SCIF_ST_CONNECTS:
		return atomic64_read(&scif_stats.connects);
	case SCIF_ST_ACCEPTS:
		return atomic64_read(&scif_stats.accepts);
	case SCIF_ST_REFUSED:
		return atomic64_read(&scif_stats.refused);
	case SCIF_ST_RESETS:
		return atomic64_read(&scif_stats.resets);
	case SCIF_ST_BYTES_SENT:
		return atomic64_read(&scif_stats.bytes_sent);
	case SCIF_ST_BYTES_RECV:
		return atomic64_read(&scif_stats.bytes_recv);
	case SCIF_ST_NODES_LOST:
		return atomic64_read(&scif_stats.nodes_lost);
	case SCIF_ST_WINDOWS:
		return atomic_read(&scif_rma_nwindows);
	case SCIF_ST_MAPPINGS:
		return atomic_read(&scif_rma_nmaps);
	case SCIF_ST_PINNED_PAGES:
		return atomic_long_read(&scif_rma_pinned_pages);
	case SCIF_ST_RMA_INFLIGHT:
		return atomic_read(&scif_rma_inflight);
	case SCIF_ST_RMA_TRANSFERS:
		return atomic64_read(&scif_rma_transfers);
	default:
		break;
	}
	scif_dma_counters(&dma, &cpu, &fallbacks);
	switch (id) {
	case SCIF_ST_RMA_BYTES_DMA:
		return dma;
	case SCIF_ST_RMA_BYTES_CPU:
		return cpu;
	case SCIF_ST_DMA_FALLBACKS:
		return fallbacks;
	default:
		return 0;
	}
}

static ssize_t scif_stat_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	struct scif_stat_attr *sa = container_of(attr, struct scif_stat_attr,
						 kattr);

	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)scif_sysfs_stat(sa->id));
}

#define SCIF_STAT_ATTR(n, i) \
	static struct scif_stat_attr scif_stat_##n = { \
		.kattr = __ATTR(n, 0444, scif_stat_show, NULL), \
		.id = (i), \
	}
SCIF_STAT_ATTR(eps_open, SCIF_ST_EPS_OPEN);
SCIF_STAT_ATTR(eps_created, SCIF_ST_EPS_CREATED);
SCIF_STAT_ATTR(connects, SCIF_ST_CONNECTS);
SCIF_STAT_ATTR(accepts, SCIF_ST_ACCEPTS);
SCIF_STAT_ATTR(refused, SCIF_ST_REFUSED);
SCIF_STAT_ATTR(resets, SCIF_ST_RESETS);
SCIF_STAT_ATTR(bytes_sent, SCIF_ST_BYTES_SENT);
SCIF_STAT_ATTR(bytes_recv, SCIF_ST_BYTES_RECV);
SCIF_STAT_ATTR(nodes_lost, SCIF_ST_NODES_LOST);
SCIF_STAT_ATTR(windows, SCIF_ST_WINDOWS);
SCIF_STAT_ATTR(mappings, SCIF_ST_MAPPINGS);
SCIF_STAT_ATTR(pinned_pages, SCIF_ST_PINNED_PAGES);
SCIF_STAT_ATTR(rma_inflight, SCIF_ST_RMA_INFLIGHT);
SCIF_STAT_ATTR(rma_transfers, SCIF_ST_RMA_TRANSFERS);
SCIF_STAT_ATTR(rma_bytes_dma, SCIF_ST_RMA_BYTES_DMA);
SCIF_STAT_ATTR(rma_bytes_cpu, SCIF_ST_RMA_BYTES_CPU);
SCIF_STAT_ATTR(dma_fallbacks, SCIF_ST_DMA_FALLBACKS);
#undef SCIF_STAT_ATTR

static struct attribute *scif_stat_attrs[] = {
	&scif_stat_eps_open.kattr.attr,
	&scif_stat_eps_created.kattr.attr,
	&scif_stat_connects.kattr.attr,
	&scif_stat_accepts.kattr.attr,
	&scif_stat_refused.kattr.attr,
	&scif_stat_resets.kattr.attr,
	&scif_stat_bytes_sent.kattr.attr,
	&scif_stat_bytes_recv.kattr.attr,
	&scif_stat_nodes_lost.kattr.attr,
	&scif_stat_windows.kattr.attr,
	&scif_stat_mappings.kattr.attr,
	&scif_stat_pinned_pages.kattr.attr,
	&scif_stat_rma_inflight.kattr.attr,
	&scif_stat_rma_transfers.kattr.attr,
	&scif_stat_rma_bytes_dma.kattr.attr,
	&scif_stat_rma_bytes_cpu.kattr.attr,
	&scif_stat_dma_fallbacks.kattr.attr,
	NULL,
};

static const struct attribute_group scif_stat_group = {
	.name = "stats",
	.attrs = scif_stat_attrs,
};

/* ---- nodes/<id>/, remote/<id>/ ---- */

static struct scif_node *scif_sysfs_to_node(struct kobject *kobj)
{
	return container_of(kobj, struct scif_sysfs_node, kobj)->node;
}

static ssize_t online_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(scif_sysfs_to_node(kobj)->online) ? 1 : 0);
}
static struct kobj_attribute online_attr = __ATTR_RO(online);

static ssize_t transport_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return scif_xprt_name_show(scif_sysfs_to_node(kobj), buf);
}
static struct kobj_attribute transport_attr = __ATTR_RO(transport);

static ssize_t numa_node_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  scif_node_numa(scif_sysfs_to_node(kobj)->id));
}
static struct kobj_attribute numa_node_attr = __ATTR_RO(numa_node);

static struct attribute *scif_node_attrs[] = {
	&online_attr.attr,
	&transport_attr.attr,
	&numa_node_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(scif_node);

static void scif_sysfs_node_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct scif_sysfs_node, kobj));
}

static const struct kobj_type scif_sysfs_node_ktype = {
	.release = scif_sysfs_node_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = scif_node_groups,
};

static int scif_sysfs_node_add(struct kobject *parent, struct scif_node *node)
{
	struct scif_sysfs_node *sn = kzalloc(sizeof(*sn), GFP_KERNEL);
	unsigned int id = node->id;
	int err;

	if (!sn)
		return -ENOMEM;
	sn->node = node;
	err = kobject_init_and_add(&sn->kobj, &scif_sysfs_node_ktype,
				   parent, "%u", id);
	if (err) {
		kobject_put(&sn->kobj);	/* frees sn */
		return err;
	}
	scif_sysfs_nodes[id] = sn;
	return 0;
}

void scif_sysfs_exit(void)
{
	unsigned int i;

	for (i = 0; i < SCIF_ALL_NODES; i++) {
		if (scif_sysfs_nodes[i])
			kobject_put(&scif_sysfs_nodes[i]->kobj);
		scif_sysfs_nodes[i] = NULL;
	}
	kobject_put(scif_remote_kobj);
	scif_remote_kobj = NULL;
	kobject_put(scif_nodes_kobj);
	scif_nodes_kobj = NULL;
	/* removes the groups with the directory */
	kobject_put(scif_kobj);
	scif_kobj = NULL;
}

int scif_sysfs_init(void)
{
	unsigned int i;
	int err;

	scif_kobj = kobject_create_and_add("scif", kernel_kobj);
	if (!scif_kobj)
		return -ENOMEM;
	err = sysfs_create_group(scif_kobj, &scif_top_group);
	if (err)
		goto fail;
	err = sysfs_create_group(scif_kobj, &scif_stat_group);
	if (err)
		goto fail;
	scif_nodes_kobj = kobject_create_and_add("nodes", scif_kobj);
	if (!scif_nodes_kobj) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < scif_nr_nodes; i++) {
		err = scif_sysfs_node_add(scif_nodes_kobj, &scif_nodes[i]);
		if (err)
			goto fail;
	}
	scif_remote_kobj = kobject_create_and_add("remote", scif_kobj);
	if (!scif_remote_kobj) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = SCIF_REMOTE_NODE_MIN; i <= SCIF_REMOTE_NODE_MAX; i++) {
		err = scif_sysfs_node_add(scif_remote_kobj, scif_remote_node(i));
		if (err)
			goto fail;
	}
	return 0;

fail:
	pr_err("scif: cannot create /sys/kernel/scif: %d\n", err);
	scif_sysfs_exit();
	return err;
}
