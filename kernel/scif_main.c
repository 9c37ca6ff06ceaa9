// SPDX-License-Identifier: GPL-2.0
/*
 * openscif: SCIF endpoints, messaging and RMA for current kernels.
 * Module init/exit and parameters.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/log2.h>
#include <linux/nodemask.h>
#include <linux/numa.h>
#include "scif_ep.h"
#include "scif_remote.h"

static unsigned int nodes = 1;
module_param(nodes, uint, 0444);
MODULE_PARM_DESC(nodes, "number of emulated coprocessor nodes /dev/scif1..N (0-16, default 1)");

unsigned int scif_ring_size = 4096;
module_param_named(ring_size, scif_ring_size, uint, 0444);
MODULE_PARM_DESC(ring_size, "bytes of the receive ring of each connected endpoint (power of two, 4096-4194304, default 4096 as Intel's SCIF_ENDPT_QP_SIZE)");

/*
 * NUMA affinity of the emulated nodes: node_numa=A,B,... binds emulated
 * node 1 to host NUMA node A, node 2 to B, ...; -1 (and every node not
 * listed, and node 0) means none: memory comes from wherever the caller
 * runs.  Set once at load, read-only after (no lock).  A remote node's
 * affinity is its link's NIC node while it is up (scif_remote.h).
 */
static int node_numa[SCIF_MAX_EMU_NODES];
static unsigned int node_numa_count;
module_param_array(node_numa, int, &node_numa_count, 0444);
MODULE_PARM_DESC(node_numa, "host NUMA node of each emulated node 1..N, comma separated (-1: none, the default); its endpoints and receive rings are allocated there");

int scif_node_numa(u16 id)
{
	if (id >= SCIF_REMOTE_NODE_MIN)
		return scif_remote_node_numa(id);
	if (id == 0 || id > node_numa_count)
		return NUMA_NO_NODE;
	return node_numa[id - 1];
}

static int __init scif_numa_check(void)
{
	unsigned int i;

	if (node_numa_count > nodes) {
		pr_err("scif: node_numa has %u entries but nodes=%u\n",
		       node_numa_count, nodes);
		return -EINVAL;
	}
	for (i = 0; i < node_numa_count; i++) {
		int nid = node_numa[i];

		if (nid == NUMA_NO_NODE)
			continue;
		if (nid < 0 || nid >= MAX_NUMNODES || !node_online(nid) ||
		    !node_state(nid, N_MEMORY)) {
			pr_err("scif: node_numa: emulated node %u: NUMA node %d is not an online node with memory (online: %*pbl)\n",
			       i + 1, nid, nodemask_pr_args(&node_states[N_MEMORY]));
			return -EINVAL;
		}
	}
	return 0;
}

static int __init scif_init(void)
{
	struct dentry *dbg;
	int err;

	if (nodes > SCIF_MAX_EMU_NODES) {
		pr_err("scif: nodes=%u exceeds %u\n", nodes, SCIF_MAX_EMU_NODES);
		return -EINVAL;
	}
	if (scif_ring_size < 4096 || scif_ring_size > (4U << 20) ||
	    !is_power_of_2(scif_ring_size)) {
		pr_err("scif: ring_size=%u invalid\n", scif_ring_size);
		return -EINVAL;
	}
	err = scif_numa_check();
	if (err)
		return err;
	dbg = scif_debugfs_init();
	err = scif_rma_init(dbg);
	if (err)
		goto out_dbg;
	/* devices last: nothing can open an endpoint before this */
	err = scif_nodes_init(nodes);
	if (err)
		goto out_rma;
	err = scif_sysfs_init();
	if (err)
		goto out_nodes;
	pr_info("scif: openscif loaded, node 0 and %u emulated node(s)\n",
		nodes);
	return 0;

out_nodes:
	scif_nodes_exit();
out_rma:
	scif_rma_exit();
out_dbg:
	scif_debugfs_exit();
	return err;
}

static void __exit scif_exit(void)
{
	/*
	 * No file is open (module reference), so no endpoint can be created
	 * any more.  Endpoints may still be referenced by asynchronous RMAs
	 * queued before their file was closed: scif_rma_exit() drains them
	 * (and the registration cache's deferred frees) before the check.
	 */
	scif_sysfs_exit();
	scif_nodes_exit();
	scif_rma_exit();
	if (!list_empty(&scif_eps))
		pr_err("scif: endpoints leaked at exit\n");
	if (scif_accept_count)
		pr_err("scif: accept handles leaked at exit\n");
	scif_debugfs_exit();
}

module_init(scif_init);
module_exit(scif_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("openscif: SCIF endpoints, messaging and RMA");
MODULE_AUTHOR("openscif contributors");
/* Gives the module a srcversion, which tools/vmrun checks against the .ko. */
#ifndef SCIF_VERSION
#error "SCIF_VERSION is not set: build with make (after configure) or with dkms"
#endif
MODULE_VERSION(SCIF_VERSION);
