// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: /sys/kernel/debug/scif/
 *   endpoints    number of endpoints, then one line per endpoint (with
 *                its reference count)
 *   stats        counters
 *   nodes        node id and online state
 *   node_lost    write a node id (1..N) to simulate the loss of that node
 *   node_online  write a node id to bring a lost node back
 *   rings        one line per endpoint with a receive ring: endpoint id,
 *                node, NUMA node of the ring's first page (node_numa tests)
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/kstrtox.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include "scif_ep.h"
#include "scif_transport.h"

static struct dentry *scif_dbg;

static int scif_dbg_endpoints_show(struct seq_file *s, void *unused)
{
	struct scif_endpt *ep;
	unsigned int n = 0;

	mutex_lock(&scif_eps_mutex);
	list_for_each_entry(ep, &scif_eps, all_link)
		n++;
	seq_printf(s, "endpoints: %u\n", n);
	seq_puts(s, "id\tnode\tport\tstate\tpeer\trefs\n");
	list_for_each_entry(ep, &scif_eps, all_link) {
		enum scif_ep_state st;
		struct scif_port_id peer;
		u16 port;

		spin_lock(&ep->lock);
		st = ep->state;
		port = ep->port;
		peer = ep->peer_id;
		spin_unlock(&ep->lock);
		seq_printf(s, "%u\t%u\t%u\t%s", ep->id, ep->node->id, port,
			   scif_ep_state_name(st));
		if (st == SCIFEP_CONNECTED || st == SCIFEP_CONNECTING ||
		    st == SCIFEP_DISCONNECTED)
			seq_printf(s, "\t%u:%u", peer.node, peer.port);
		else
			seq_puts(s, "\t-");
		/* who holds a leaked endpoint: its references (tests print them) */
		seq_printf(s, "\t%u\n", refcount_read(&ep->ref));
	}
	mutex_unlock(&scif_eps_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_endpoints);

static int scif_dbg_rings_show(struct seq_file *s, void *unused)
{
	struct scif_endpt *ep;

	mutex_lock(&scif_eps_mutex);
	list_for_each_entry(ep, &scif_eps, all_link) {
		/*
		 * Set once (a word: NULL or the ring), freed only after the
		 * endpoint left this list; no ep->mutex here, which nests
		 * outside scif_eps_mutex.
		 */
		void *buf = READ_ONCE(ep->rx.buf);
		struct page *pg;

		if (!buf)
			continue;
		pg = is_vmalloc_addr(buf) ? vmalloc_to_page(buf) :
					    virt_to_page(buf);
		seq_printf(s, "%u\t%u\t%d\n", ep->id, ep->node->id,
			   page_to_nid(pg));
	}
	mutex_unlock(&scif_eps_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_rings);

static int scif_dbg_stats_show(struct seq_file *s, void *unused)
{
#define SCIF_STAT(name) \
	seq_printf(s, "%-16s %lld\n", #name, \
		   (long long)atomic64_read(&scif_stats.name))
	SCIF_STAT(eps_open);
	SCIF_STAT(eps_created);
	SCIF_STAT(connects);
	SCIF_STAT(accepts);
	SCIF_STAT(refused);
	SCIF_STAT(resets);
	SCIF_STAT(bytes_sent);
	SCIF_STAT(bytes_recv);
	SCIF_STAT(nodes_lost);
#undef SCIF_STAT
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_stats);

static int scif_dbg_nodes_show(struct seq_file *s, void *unused)
{
	unsigned int i;

	for (i = 0; i < scif_nr_nodes; i++)
		seq_printf(s, "%u\t%s\t%s\n", i,
			   READ_ONCE(scif_nodes[i].online) ? "online" : "lost",
			   scif_nodes[i].ops->name);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(scif_dbg_nodes);

static ssize_t scif_dbg_node_write(const char __user *ubuf, size_t len,
				   int (*fn)(u16 id))
{
	u16 id;
	int err;

	err = kstrtou16_from_user(ubuf, len, 0, &id);
	if (err)
		return err;
	err = fn(id);
	return err ? err : len;
}

static ssize_t scif_dbg_lost_write(struct file *f, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	return scif_dbg_node_write(ubuf, len, scif_node_set_lost);
}

static ssize_t scif_dbg_online_write(struct file *f, const char __user *ubuf,
				     size_t len, loff_t *ppos)
{
	return scif_dbg_node_write(ubuf, len, scif_node_set_online);
}

static const struct file_operations scif_dbg_lost_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = scif_dbg_lost_write,
	.llseek = noop_llseek,
};

static const struct file_operations scif_dbg_online_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = scif_dbg_online_write,
	.llseek = noop_llseek,
};

struct dentry *scif_debugfs_init(void)
{
	struct dentry *d = debugfs_create_dir("scif", NULL);

	if (IS_ERR_OR_NULL(d))
		return NULL;
	scif_dbg = d;
	debugfs_create_file("endpoints", 0444, d, NULL,
			    &scif_dbg_endpoints_fops);
	debugfs_create_file("stats", 0444, d, NULL, &scif_dbg_stats_fops);
	debugfs_create_file("nodes", 0444, d, NULL, &scif_dbg_nodes_fops);
	debugfs_create_file("rings", 0444, d, NULL, &scif_dbg_rings_fops);
	debugfs_create_file("node_lost", 0200, d, NULL, &scif_dbg_lost_fops);
	debugfs_create_file("node_online", 0200, d, NULL,
			    &scif_dbg_online_fops);
	return d;
}

void scif_debugfs_exit(void)
{
	debugfs_remove_recursive(scif_dbg);
	scif_dbg = NULL;
}
