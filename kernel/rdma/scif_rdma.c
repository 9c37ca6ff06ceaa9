// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: SCIF nodes on other hosts over kernel RDMA (rdma_cm and
 * generic verbs only; InfiniBand, RoCE, iWARP or Soft-RoCE alike).
 *
 * This first slice brings remote nodes up and down; endpoints and
 * messaging across hosts come later (see docs/transport.md, "Status").
 *
 * Protocol, as the numbered steps of one link between node L and node H
 * (L < H, the ids of the cluster file; each host knows its own id, address
 * and port from /sys/kernel/scif_rdma/self and its peers from .../nodes):
 *
 *  1. Every host listens with rdma_cm (RDMA_PS_TCP) on its own address and
 *     port as soon as "self" is written.
 *  2. For each configured peer, only the lower id connects: L resolves
 *     H's address and route, creates a protection domain, one completion
 *     queue and one reliable connected QP, and connects (rdma_connect) with a
 *     HELLO as private data: magic SCIF_RDMA_MAGIC, version
 *     SCIF_RDMA_VERSION, kind REQ, src = L, dst = H, reserved zero (all
 *     big-endian).  H never connects to L, so there is no duplicate link
 *     to resolve.
 *  3. H's listener checks the request: private data at least one HELLO
 *     long; magic, version, kind and reserved field exact; dst equal to
 *     H's own id; src a configured peer with a lower id, whose configured
 *     address is the request's source address; no link to that peer in
 *     place already.  Anything else is rejected (rdma_reject) and counted
 *     and logged (rate-limited).
 *  4. H creates its PD, CQ and QP on the request's cm_id and accepts with
 *     a HELLO of kind ACC, src = H, dst = L.
 *  5. L checks the ACC HELLO in the ESTABLISHED event the same way; on a
 *     mismatch it disconnects (step 8).
 *  6. On ESTABLISHED each side marks the peer up: scif_remote_node_up()
 *     in scif.ko, so scif_get_nodeIDs() lists it.
 *  7. Keepalive: each side keeps SCIF_RDMA_NRECV receives posted on the
 *     QP (from step 2/4 on) and, while up, sends a PING (magic
 *     SCIF_RDMA_PING_MAGIC, reserved zero, a sequence number; big-endian)
 *     every SCIF_RDMA_KEEPALIVE.  A receive of anything else (length,
 *     magic, reserved) is counted, logged (rate-limited) and dropped.  A
 *     PING send or a receive completing in error, or nothing valid
 *     received for SCIF_RDMA_DEAD, ends the link as in step 8: so a peer
 *     that vanishes without a DREQ (powered off, link gone) goes down.
 *  8. DISCONNECTED, DEVICE_REMOVAL, ADDR/ROUTE/CONNECT errors, UNREACHABLE,
 *     REJECTED, the keepalive (step 7), the peer being deleted, or the
 *     module unloading end the link: the node is marked down, the QP, CQ,
 *     PD and cm_id are destroyed (in the link's work, never in the cm
 *     handler; the keepalive buffers after the CQ), and if the peer is
 *     still configured L tries again after a backoff that doubles from
 *     SCIF_RDMA_BACKOFF_MIN to SCIF_RDMA_BACKOFF_MAX; H waits for L.
 *  9. A listener lost through DEVICE_REMOVAL is re-created every
 *     SCIF_RDMA_BACKOFF_MAX until it binds again.
 *
 * Locking: srd_cfg_mutex protects srd_self and srd_peers (the list and
 * each peer's id/address/port); it is never held while destroying a
 * cm_id that may have events (the listener's handler takes it; only a
 * listener that failed to bind or listen is destroyed under it).  Each
 * peer's mutex protects its link state (res: cm_id, pd, cq, qp; state,
 * backoff, node_up, removed, and the keepalive state of the current
 * link, struct srd_ka); the rdma_cm handler of a peer's cm_id
 * holds it for the whole event, so once the link's work detached the
 * cm_id under it, no handler touches that cm_id's resources again, and the
 * work destroys them after dropping it.  The keepalive's completion
 * handlers (CQ work, IB_POLL_WORKQUEUE) and its work take the peer's
 * mutex too and act only on the peer's current link; nothing waits for
 * the CQ's work (ib_free_cq) or the keepalive work while holding it.
 * Order: srd_cfg_mutex, then a peer's mutex.
 */
#include <linux/module.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/inet.h>
#include <linux/ctype.h>
#include <linux/string.h>
#include <linux/atomic.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "../scif_remote.h"

#define SCIF_RDMA_MAGIC		0x53434946U	/* "SCIF" */
#define SCIF_RDMA_VERSION	1
#define SCIF_RDMA_HELLO_REQ	1
#define SCIF_RDMA_HELLO_ACC	2
#define SCIF_RDMA_BACKOFF_MIN	(HZ / 2)
#define SCIF_RDMA_BACKOFF_MAX	(8 * HZ)
#define SCIF_RDMA_TIMEOUT_MS	2000
#define SCIF_RDMA_QP_DEPTH	16
#define SCIF_RDMA_MAX_WRITE	128	/* longest accepted sysfs write */
#define SCIF_RDMA_KEEPALIVE	HZ	/* a PING this often while up */
#define SCIF_RDMA_DEAD		(5 * HZ) /* nothing received: link dead */
#define SCIF_RDMA_PING_MAGIC	0x50494e47U	/* "PING" */
#define SCIF_RDMA_NRECV		4	/* receives posted per link */
#define SCIF_RDMA_BUF		64	/* bytes of each keepalive buffer */

struct scif_rdma_hello {
	__be32 magic;
	u8 version;
	u8 kind;
	__be16 src;
	__be16 dst;
	__be16 reserved;
} __packed;

/* The keepalive frame (step 7). */
struct scif_rdma_ping {
	__be32 magic;
	__be32 reserved;
	__be64 seq;
} __packed;

struct srd_ka;

/* One keepalive buffer: SCIF_RDMA_BUF bytes, DMA-mapped on the device. */
struct srd_buf {
	struct ib_cqe cqe;
	struct srd_ka *ka;
	void *data;
	u64 dma;
	bool mapped;
};

/*
 * A link's keepalive (step 7).  It lives as long as the link's QP and CQ:
 * srd_destroy_link() frees it after ib_free_cq(), when no completion
 * handler runs or will run.  The handlers touch send_busy, seq and last_rx
 * only under peer->lock and only while this is the peer's current link
 * (peer->res.ka).
 */
struct srd_ka {
	struct srd_peer *peer;
	struct ib_device *dev;
	struct srd_buf recv[SCIF_RDMA_NRECV];
	struct srd_buf send;
	bool send_busy;			/* a PING posted, not completed */
	u64 seq;
	unsigned long last_rx;		/* jiffies of the last valid frame */
};

enum srd_state { SRD_DOWN, SRD_CONNECTING, SRD_UP };

static const char *const srd_state_name[] = {
	[SRD_DOWN] = "down",
	[SRD_CONNECTING] = "connecting",
	[SRD_UP] = "up",
};

/* The verbs resources of one link; all NULL/false when there is none. */
struct srd_link {
	struct rdma_cm_id *cm_id;	/* the link's cm_id, or NULL */
	struct ib_pd *pd;
	struct ib_cq *cq;
	bool qp;			/* cm_id has a QP */
	struct srd_ka *ka;		/* the QP's keepalive buffers */
};

/* One configured peer and its link (see the locking comment above). */
struct srd_peer {
	struct list_head link;		/* in srd_peers, srd_cfg_mutex */
	u16 id;
	__be32 addr;
	u16 port;

	struct mutex lock;		/* the fields below */
	struct srd_link res;
	enum srd_state state;
	bool node_up;			/* scif_remote_node_up() done */
	bool removed;			/* deleted: no new work or cm_id */
	unsigned long backoff;
	struct delayed_work work;	/* teardown and (re)connect */
	struct delayed_work ka_work;	/* keepalive: PING, dead check */
};

struct srd_self {
	bool set;
	u16 id;
	__be32 addr;
	u16 port;
};

static DEFINE_MUTEX(srd_cfg_mutex);
static struct srd_self srd_self;		/* srd_cfg_mutex */
static LIST_HEAD(srd_peers);			/* srd_cfg_mutex */
/* the listener; srd_cfg_mutex (its handler takes srd_cfg_mutex) */
static struct rdma_cm_id *srd_listen_id;
static struct delayed_work srd_listen_work;
static bool srd_exiting;			/* srd_cfg_mutex */
static atomic_t srd_rejected = ATOMIC_INIT(0);
static atomic_t srd_junk = ATOMIC_INIT(0);	/* bad keepalive frames */
static struct workqueue_struct *srd_wq;
static struct kobject *srd_kobj;

static bool srd_id_ok(unsigned int id)
{
	return id >= SCIF_REMOTE_NODE_MIN && id <= SCIF_REMOTE_NODE_MAX;
}

/* ---- keepalive (step 7) ---- */

static void srd_link_fail(struct srd_peer *peer, const char *why, int err);

static enum dma_data_direction srd_buf_dir(struct srd_ka *ka,
					   struct srd_buf *b)
{
	return b == &ka->send ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/* Unmap and free a detached link's keepalive (its CQ freed already). */
static void srd_ka_free(struct srd_ka *ka)
{
	struct srd_buf *b;
	int i;

	if (!ka)
		return;
	for (i = 0; i <= SCIF_RDMA_NRECV; i++) {
		b = i < SCIF_RDMA_NRECV ? &ka->recv[i] : &ka->send;
		if (b->mapped)
			ib_dma_unmap_single(ka->dev, b->dma, SCIF_RDMA_BUF,
					    srd_buf_dir(ka, b));
		kfree(b->data);
	}
	kfree(ka);
}

/* Post @b as a receive on the current link's QP (peer->lock held). */
static int srd_post_recv(struct srd_peer *peer, struct srd_buf *b)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = SCIF_RDMA_BUF,
		.lkey = peer->res.pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(b->ka->dev, b->dma, SCIF_RDMA_BUF,
				      DMA_FROM_DEVICE);
	return ib_post_recv(peer->res.cm_id->qp, &wr, NULL);
}

/* Send the next PING on the current link (peer->lock held). */
static int srd_ping(struct srd_peer *peer, struct srd_ka *ka)
{
	struct srd_buf *b = &ka->send;
	struct scif_rdma_ping *p = b->data;
	struct ib_sge sge = {
		.addr = b->dma,
		.length = sizeof(*p),
		.lkey = peer->res.pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	ib_dma_sync_single_for_cpu(ka->dev, b->dma, SCIF_RDMA_BUF,
				   DMA_TO_DEVICE);
	p->magic = cpu_to_be32(SCIF_RDMA_PING_MAGIC);
	p->reserved = 0;
	p->seq = cpu_to_be64(++ka->seq);
	ib_dma_sync_single_for_device(ka->dev, b->dma, SCIF_RDMA_BUF,
				      DMA_TO_DEVICE);
	ret = ib_post_send(peer->res.cm_id->qp, &wr, NULL);
	if (!ret)
		ka->send_busy = true;
	return ret;
}

/* Is @ka the keepalive of its peer's live link?  (peer->lock held) */
static bool srd_ka_live(struct srd_ka *ka)
{
	struct srd_peer *peer = ka->peer;

	return peer->res.ka == ka && !peer->removed &&
	       peer->state != SRD_DOWN;
}

/* A receive completed: a frame from the peer (untrusted), or a flush. */
static void srd_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_buf *b = container_of(wc->wr_cqe, struct srd_buf, cqe);
	struct srd_ka *ka = b->ka;
	struct srd_peer *peer = ka->peer;
	const struct scif_rdma_ping *p = b->data;
	int ret;

	mutex_lock(&peer->lock);
	if (!srd_ka_live(ka))
		goto out;	/* an old link's flush: its work frees @b */
	if (wc->status != IB_WC_SUCCESS) {
		srd_link_fail(peer, "keepalive receive", wc->status);
		goto out;
	}
	ib_dma_sync_single_for_cpu(ka->dev, b->dma, SCIF_RDMA_BUF,
				   DMA_FROM_DEVICE);
	if (wc->byte_len == sizeof(*p) &&
	    be32_to_cpu(p->magic) == SCIF_RDMA_PING_MAGIC && !p->reserved) {
		ka->last_rx = jiffies;
	} else {
		atomic_inc(&srd_junk);
		pr_info_ratelimited("scif_rdma: node %u: dropped a bad keepalive frame (%u bytes; %d so far)\n",
				    peer->id, wc->byte_len,
				    atomic_read(&srd_junk));
	}
	ret = srd_post_recv(peer, b);
	if (ret)
		srd_link_fail(peer, "keepalive repost", ret);
out:
	mutex_unlock(&peer->lock);
}

/* A PING's send completed (or was flushed). */
static void srd_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_buf *b = container_of(wc->wr_cqe, struct srd_buf, cqe);
	struct srd_ka *ka = b->ka;
	struct srd_peer *peer = ka->peer;

	mutex_lock(&peer->lock);
	if (srd_ka_live(ka)) {
		ka->send_busy = false;
		if (wc->status != IB_WC_SUCCESS)
			srd_link_fail(peer, "keepalive send", wc->status);
	}
	mutex_unlock(&peer->lock);
}

static int srd_buf_init(struct srd_ka *ka, struct srd_buf *b,
			void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	b->ka = ka;
	b->cqe.done = done;
	b->data = kzalloc(SCIF_RDMA_BUF, GFP_KERNEL_ACCOUNT);
	if (!b->data)
		return -ENOMEM;
	b->dma = ib_dma_map_single(ka->dev, b->data, SCIF_RDMA_BUF,
				   srd_buf_dir(ka, b));
	if (ib_dma_mapping_error(ka->dev, b->dma))
		return -ENOMEM;
	b->mapped = true;
	return 0;
}

/*
 * The keepalive of a new link (peer->lock held, its QP just created):
 * map the buffers and post the receives.  On failure what exists stays in
 * peer->res.ka for srd_destroy_link().
 */
static int srd_ka_create(struct srd_peer *peer, struct rdma_cm_id *id)
{
	struct srd_ka *ka;
	int i, ret;

	/* bounded: one per link, one link per configured peer */
	ka = kzalloc(sizeof(*ka), GFP_KERNEL_ACCOUNT);
	if (!ka)
		return -ENOMEM;
	ka->peer = peer;
	ka->dev = id->device;
	peer->res.ka = ka;
	ret = srd_buf_init(ka, &ka->send, srd_send_done);
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_buf_init(ka, &ka->recv[i], srd_recv_done);
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_post_recv(peer, &ka->recv[i]);
	return ret;
}

/*
 * Every SCIF_RDMA_KEEPALIVE while the link is up: end it if nothing valid
 * came for SCIF_RDMA_DEAD, else send a PING (unless one is in flight).
 */
static void srd_ka_work_fn(struct work_struct *work)
{
	struct srd_peer *peer = container_of(to_delayed_work(work),
					     struct srd_peer, ka_work);
	struct srd_ka *ka;
	int ret;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->removed || peer->state != SRD_UP)
		goto out;	/* ESTABLISHED starts it again */
	if (time_after(jiffies, ka->last_rx + SCIF_RDMA_DEAD)) {
		srd_link_fail(peer, "keepalive: nothing received",
			      -ETIMEDOUT);
		goto out;
	}
	if (!ka->send_busy) {
		ret = srd_ping(peer, ka);
		if (ret) {
			srd_link_fail(peer, "keepalive send", ret);
			goto out;
		}
	}
	queue_delayed_work(srd_wq, &peer->ka_work, SCIF_RDMA_KEEPALIVE);
out:
	mutex_unlock(&peer->lock);
}

/* ---- link resources ---- */

/* Called with peer->lock held, on the link's cm_id. */
static int srd_create_qp(struct srd_peer *peer, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	int ret;

	peer->res.pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(peer->res.pd)) {
		ret = PTR_ERR(peer->res.pd);
		peer->res.pd = NULL;
		return ret;
	}
	peer->res.cq = ib_alloc_cq(id->device, peer, 2 * SCIF_RDMA_QP_DEPTH, 0,
			       IB_POLL_WORKQUEUE);
	if (IS_ERR(peer->res.cq)) {
		ret = PTR_ERR(peer->res.cq);
		peer->res.cq = NULL;
		return ret;
	}
	attr.send_cq = peer->res.cq;
	attr.recv_cq = peer->res.cq;
	attr.cap.max_send_wr = SCIF_RDMA_QP_DEPTH;
	attr.cap.max_recv_wr = SCIF_RDMA_QP_DEPTH;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, peer->res.pd, &attr);
	if (ret)
		return ret;
	peer->res.qp = true;
	return srd_ka_create(peer, id);
}

/* Take the link's resources out of @peer (peer->lock held). */
static struct srd_link srd_link_detach(struct srd_peer *peer)
{
	struct srd_link res = peer->res;

	memset(&peer->res, 0, sizeof(peer->res));
	return res;
}

/* Destroy a detached link's resources; no lock held, not in its handler. */
static void srd_destroy_link(struct srd_link *res)
{
	if (res->cm_id)
		rdma_disconnect(res->cm_id);
	if (res->qp)
		rdma_destroy_qp(res->cm_id);
	if (res->cq)
		ib_free_cq(res->cq);	/* waits for its completion work */
	srd_ka_free(res->ka);
	if (res->pd)
		ib_dealloc_pd(res->pd);
	if (res->cm_id)
		rdma_destroy_id(res->cm_id);
}

static void srd_hello_fill(struct scif_rdma_hello *h, u8 kind, u16 src,
			   u16 dst)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(SCIF_RDMA_MAGIC);
	h->version = SCIF_RDMA_VERSION;
	h->kind = kind;
	h->src = cpu_to_be16(src);
	h->dst = cpu_to_be16(dst);
}

/* 0 if @data is a HELLO of @kind from @src to @dst, else -EPROTO. */
static int srd_hello_check(const void *data, u8 len, u8 kind, u16 *src,
			   u16 dst)
{
	const struct scif_rdma_hello *h = data;

	if (!data || len < sizeof(*h))
		return -EPROTO;
	if (be32_to_cpu(h->magic) != SCIF_RDMA_MAGIC ||
	    h->version != SCIF_RDMA_VERSION || h->kind != kind ||
	    h->reserved || be16_to_cpu(h->dst) != dst)
		return -EPROTO;
	*src = be16_to_cpu(h->src);
	return 0;
}

/*
 * The link failed or ended (peer->lock held): mark it for teardown and let
 * the work run now.  A stale event (not the link's cm_id) is ignored.
 */
static void srd_link_fail(struct srd_peer *peer, const char *why, int err)
{
	if (peer->state != SRD_DOWN)
		pr_info("scif_rdma: node %u: link ended (%s, %d)\n", peer->id,
			why, err);
	WRITE_ONCE(peer->state, SRD_DOWN);
	if (peer->node_up) {
		scif_remote_node_down(peer->id);
		peer->node_up = false;
	}
	if (!peer->removed)
		mod_delayed_work(srd_wq, &peer->work, 0);
}

/* ---- the cm handler of a peer's link ---- */

static int srd_peer_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct srd_peer *peer = id->context;
	struct rdma_conn_param param = {};
	struct scif_rdma_hello hello;
	u16 src, self_id;
	int ret;

	mutex_lock(&peer->lock);
	if (peer->res.cm_id != id || peer->removed)
		goto out;
	self_id = READ_ONCE(srd_self.id);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, SCIF_RDMA_TIMEOUT_MS);
		if (ret)
			srd_link_fail(peer, "resolve route", ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = srd_create_qp(peer, id);
		if (ret) {
			srd_link_fail(peer, "create QP", ret);
			break;
		}
		srd_hello_fill(&hello, SCIF_RDMA_HELLO_REQ, self_id, peer->id);
		param.private_data = &hello;
		param.private_data_len = sizeof(hello);
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		ret = rdma_connect_locked(id, &param);
		if (ret)
			srd_link_fail(peer, "connect", ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (self_id < peer->id &&
		    (srd_hello_check(ev->param.conn.private_data,
				     ev->param.conn.private_data_len,
				     SCIF_RDMA_HELLO_ACC, &src, self_id) ||
		     src != peer->id)) {
			atomic_inc(&srd_rejected);
			pr_info_ratelimited("scif_rdma: node %u: bad HELLO in the accept\n",
					    peer->id);
			srd_link_fail(peer, "bad accept", -EPROTO);
			break;
		}
		WRITE_ONCE(peer->state, SRD_UP);
		peer->backoff = SCIF_RDMA_BACKOFF_MIN;
		if (peer->res.ka) {
			peer->res.ka->last_rx = jiffies;
			mod_delayed_work(srd_wq, &peer->ka_work,
					 SCIF_RDMA_KEEPALIVE);
		}
		if (!peer->node_up && !scif_remote_node_up(peer->id))
			peer->node_up = true;
		break;
	case RDMA_CM_EVENT_REJECTED:
		srd_link_fail(peer, "rejected", ev->status);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		srd_link_fail(peer, "device removal", 0);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		srd_link_fail(peer, "disconnected", 0);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		srd_link_fail(peer, rdma_event_msg(ev->event), ev->status);
		break;
	default:
		break;
	}
out:
	mutex_unlock(&peer->lock);
	return 0;
}

/* ---- the listener ---- */

static struct srd_peer *srd_peer_find(u16 id)
{
	struct srd_peer *peer;

	list_for_each_entry(peer, &srd_peers, link)
		if (peer->id == id)
			return peer;
	return NULL;
}

/* A connect request on the listener: @id is the new cm_id (step 3, 4). */
static int srd_conn_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct sockaddr *sa = (struct sockaddr *)&id->route.addr.dst_addr;
	struct rdma_conn_param param = {};
	struct scif_rdma_hello hello;
	struct srd_peer *peer;
	const char *why;
	u16 src = 0;
	int ret;

	mutex_lock(&srd_cfg_mutex);
	why = "not configured";
	if (!srd_self.set || srd_exiting)
		goto reject;
	why = "bad HELLO";
	if (srd_hello_check(ev->param.conn.private_data,
			    ev->param.conn.private_data_len,
			    SCIF_RDMA_HELLO_REQ, &src, srd_self.id))
		goto reject;
	why = "unknown node";
	peer = srd_peer_find(src);
	if (!peer || src >= srd_self.id)
		goto reject;
	why = "wrong source address";
	if (sa->sa_family != AF_INET ||
	    ((struct sockaddr_in *)sa)->sin_addr.s_addr != peer->addr)
		goto reject;
	mutex_lock(&peer->lock);
	why = "link already in place";
	if (peer->res.cm_id || peer->removed) {
		mutex_unlock(&peer->lock);
		goto reject;
	}
	id->context = peer;
	id->event_handler = srd_peer_handler;
	peer->res.cm_id = id;
	WRITE_ONCE(peer->state, SRD_CONNECTING);
	ret = srd_create_qp(peer, id);
	if (!ret) {
		srd_hello_fill(&hello, SCIF_RDMA_HELLO_ACC, srd_self.id,
			       peer->id);
		param.private_data = &hello;
		param.private_data_len = sizeof(hello);
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		ret = rdma_accept(id, &param);
	}
	if (ret) {
		/* the link's work destroys @id with its resources */
		pr_info("scif_rdma: node %u: accept failed (%d)\n", peer->id,
			ret);
		srd_link_fail(peer, "accept", ret);
	}
	mutex_unlock(&peer->lock);
	mutex_unlock(&srd_cfg_mutex);
	return 0;

reject:
	mutex_unlock(&srd_cfg_mutex);
	atomic_inc(&srd_rejected);
	pr_info_ratelimited("scif_rdma: rejected a connect request from %pISc (node %u): %s\n",
			    sa, src, why);
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return 1;	/* rdma_cm destroys @id */
}

static int srd_listen_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return srd_conn_request(id, ev);
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		/* re-created by srd_listen_work (step 9) */
		pr_info("scif_rdma: listener's device removed\n");
		queue_delayed_work(srd_wq, &srd_listen_work, 0);
	}
	return 0;
}

/* Listen on self's address and port (srd_cfg_mutex held). */
static int srd_listen_start(void)
{
	struct sockaddr_in sin = {};
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(&init_net, srd_listen_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = srd_self.addr;
	sin.sin_port = htons(srd_self.port);
	ret = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!ret)
		ret = rdma_listen(id, 16);
	if (ret) {
		rdma_destroy_id(id);
		return ret;
	}
	srd_listen_id = id;
	return 0;
}

/* Take the listener away (srd_cfg_mutex held); destroy it without. */
static struct rdma_cm_id *srd_listen_detach(void)
{
	struct rdma_cm_id *id = srd_listen_id;

	srd_listen_id = NULL;
	return id;
}

static void srd_listen_work_fn(struct work_struct *work)
{
	struct rdma_cm_id *old;
	int ret;

	mutex_lock(&srd_cfg_mutex);
	old = srd_listen_detach();
	mutex_unlock(&srd_cfg_mutex);
	/* the handler of @old may be waiting for srd_cfg_mutex: not held */
	if (old)
		rdma_destroy_id(old);
	mutex_lock(&srd_cfg_mutex);
	if (srd_self.set && !srd_exiting && !srd_listen_id) {
		ret = srd_listen_start();
		if (ret)
			queue_delayed_work(srd_wq, &srd_listen_work,
					   SCIF_RDMA_BACKOFF_MAX);
	}
	mutex_unlock(&srd_cfg_mutex);
}

/* ---- a peer's work: teardown and (re)connect (step 2, 8) ---- */

/*
 * The work of a peer: a failed link (cm_id, state DOWN) is detached and
 * destroyed, and the work queued again after the backoff; without a link,
 * the lower id starts one (resolve the address; the handler goes on).
 */
static void srd_peer_work(struct work_struct *work)
{
	struct srd_peer *peer = container_of(to_delayed_work(work),
					     struct srd_peer, work);
	struct sockaddr_in sin = {};
	struct rdma_cm_id *id;
	struct srd_link res;
	bool active;
	int ret;

	mutex_lock(&peer->lock);
	if (peer->removed || (peer->res.cm_id && peer->state != SRD_DOWN)) {
		mutex_unlock(&peer->lock);
		return;
	}
	if (peer->res.cm_id) {
		/* a failed link: detach, then destroy without the lock */
		res = srd_link_detach(peer);
		queue_delayed_work(srd_wq, &peer->work, peer->backoff);
		peer->backoff = min(peer->backoff * 2, SCIF_RDMA_BACKOFF_MAX);
		mutex_unlock(&peer->lock);
		srd_destroy_link(&res);
		return;
	}
	mutex_unlock(&peer->lock);

	mutex_lock(&srd_cfg_mutex);
	/* the higher id waits for the lower one's request */
	active = srd_self.set && !srd_exiting && srd_self.id < peer->id;
	mutex_unlock(&srd_cfg_mutex);
	if (!active)
		return;

	id = rdma_create_id(&init_net, srd_peer_handler, peer, RDMA_PS_TCP,
			    IB_QPT_RC);
	mutex_lock(&peer->lock);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto retry;
	}
	if (peer->removed || peer->res.cm_id) {
		mutex_unlock(&peer->lock);
		rdma_destroy_id(id);
		return;
	}
	peer->res.cm_id = id;
	WRITE_ONCE(peer->state, SRD_CONNECTING);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = peer->addr;
	sin.sin_port = htons(peer->port);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				SCIF_RDMA_TIMEOUT_MS);
	if (!ret) {
		/* the handler goes on; on failure it queues this work */
		mutex_unlock(&peer->lock);
		return;
	}
	srd_link_fail(peer, "resolve address", ret);
	mutex_unlock(&peer->lock);
	return;

retry:
	pr_info_ratelimited("scif_rdma: node %u: cannot create a cm_id (%d)\n",
			    peer->id, ret);
	if (!peer->removed) {
		queue_delayed_work(srd_wq, &peer->work, peer->backoff);
		peer->backoff = min(peer->backoff * 2, SCIF_RDMA_BACKOFF_MAX);
	}
	mutex_unlock(&peer->lock);
}

/* Stop and free a peer taken off srd_peers (no lock held). */
static void srd_peer_free(struct srd_peer *peer)
{
	struct srd_link res;

	mutex_lock(&peer->lock);
	peer->removed = true;
	res = srd_link_detach(peer);
	WRITE_ONCE(peer->state, SRD_DOWN);
	if (peer->node_up) {
		scif_remote_node_down(peer->id);
		peer->node_up = false;
	}
	mutex_unlock(&peer->lock);
	/* after rdma_destroy_id() no handler of the cm_id runs or will run */
	srd_destroy_link(&res);
	cancel_delayed_work_sync(&peer->work);
	cancel_delayed_work_sync(&peer->ka_work);
	kfree(peer);
}

/* ---- configuration: /sys/kernel/scif_rdma/{self,nodes,rejected} ---- */

/* Split @s in place into at most @max blank-separated words. */
static int srd_split(char *s, char **tok, int max)
{
	int n = 0;

	s = strim(s);
	while (*s) {
		if (n == max)
			return -EINVAL;
		tok[n++] = s;
		while (*s && !isspace(*s))
			s++;
		if (*s) {
			*s++ = '\0';
			s = skip_spaces(s);
		}
	}
	return n;
}

/* "ID ADDR PORT": a remote id, an IPv4 dotted quad, a port 1..65535. */
static int srd_parse_node(char **tok, u16 *id, __be32 *addr, u16 *port)
{
	const char *end;
	u8 a[4];

	if (kstrtou16(tok[0], 10, id) || !srd_id_ok(*id))
		return -EINVAL;
	if (!in4_pton(tok[1], strlen(tok[1]), a, -1, &end) ||
	    *end != '\0')
		return -EINVAL;
	memcpy(addr, a, sizeof(*addr));
	if (kstrtou16(tok[2], 10, port) || !*port)
		return -EINVAL;
	return 0;
}

static int srd_copy_write(char *dst, const char *buf, size_t count)
{
	if (!count || count >= SCIF_RDMA_MAX_WRITE)
		return -EINVAL;
	memcpy(dst, buf, count);
	dst[count] = '\0';
	if (strlen(dst) != count)
		return -EINVAL;	/* NUL inside */
	return 0;
}

static ssize_t self_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	ssize_t len = 0;

	mutex_lock(&srd_cfg_mutex);
	if (srd_self.set)
		len = sysfs_emit(buf, "%u %pI4 %u\n", srd_self.id,
				 &srd_self.addr, srd_self.port);
	mutex_unlock(&srd_cfg_mutex);
	return len;
}

static ssize_t self_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	char line[SCIF_RDMA_MAX_WRITE], *tok[3];
	struct rdma_cm_id *old = NULL;
	__be32 addr;
	u16 id, port;
	int ret;

	ret = srd_copy_write(line, buf, count);
	if (ret)
		return ret;
	if (srd_split(line, tok, 3) != 3 ||
	    srd_parse_node(tok, &id, &addr, &port))
		return -EINVAL;

	mutex_lock(&srd_cfg_mutex);
	if (!list_empty(&srd_peers)) {
		ret = -EBUSY;	/* delete the peers first */
		goto out;
	}
	old = srd_listen_detach();
	srd_self.set = true;
	srd_self.id = id;
	srd_self.addr = addr;
	srd_self.port = port;
	mutex_unlock(&srd_cfg_mutex);
	if (old)
		rdma_destroy_id(old);
	cancel_delayed_work_sync(&srd_listen_work);
	mutex_lock(&srd_cfg_mutex);
	ret = srd_listen_id ? 0 : srd_listen_start();
	if (ret) {
		pr_info("scif_rdma: cannot listen on %pI4:%u: %d\n", &addr,
			port, ret);
		srd_self.set = false;
	}
out:
	mutex_unlock(&srd_cfg_mutex);
	return ret ? ret : count;
}

static ssize_t nodes_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct srd_peer *peer;
	ssize_t len = 0;

	mutex_lock(&srd_cfg_mutex);
	list_for_each_entry(peer, &srd_peers, link) {
		enum srd_state st = READ_ONCE(peer->state);

		len += sysfs_emit_at(buf, len, "%u %pI4 %u %s\n", peer->id,
				     &peer->addr, peer->port,
				     srd_state_name[st]);
	}
	mutex_unlock(&srd_cfg_mutex);
	return len;
}

static int srd_peer_add(char **tok)
{
	struct srd_peer *peer, *p;
	__be32 addr;
	u16 id, port;

	if (srd_parse_node(tok, &id, &addr, &port))
		return -EINVAL;
	peer = kzalloc(sizeof(*peer), GFP_KERNEL_ACCOUNT);
	if (!peer)
		return -ENOMEM;
	peer->id = id;
	peer->addr = addr;
	peer->port = port;
	mutex_init(&peer->lock);
	peer->backoff = SCIF_RDMA_BACKOFF_MIN;
	INIT_DELAYED_WORK(&peer->work, srd_peer_work);
	INIT_DELAYED_WORK(&peer->ka_work, srd_ka_work_fn);

	mutex_lock(&srd_cfg_mutex);
	if (!srd_self.set || id == srd_self.id) {
		mutex_unlock(&srd_cfg_mutex);
		kfree(peer);
		return -EINVAL;
	}
	list_for_each_entry(p, &srd_peers, link) {
		if (p->id == id) {
			mutex_unlock(&srd_cfg_mutex);
			kfree(peer);
			return -EEXIST;
		}
	}
	list_add_tail(&peer->link, &srd_peers);
	queue_delayed_work(srd_wq, &peer->work, 0);
	mutex_unlock(&srd_cfg_mutex);
	return 0;
}

static int srd_peer_del(char **tok)
{
	struct srd_peer *peer;
	u16 id;

	if (kstrtou16(tok[0], 10, &id) || !srd_id_ok(id))
		return -EINVAL;
	mutex_lock(&srd_cfg_mutex);
	peer = srd_peer_find(id);
	if (peer)
		list_del(&peer->link);
	mutex_unlock(&srd_cfg_mutex);
	if (!peer)
		return -ENOENT;
	srd_peer_free(peer);
	return 0;
}

static ssize_t nodes_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	char line[SCIF_RDMA_MAX_WRITE], *tok[4];
	int n, ret;

	ret = srd_copy_write(line, buf, count);
	if (ret)
		return ret;
	n = srd_split(line, tok, 4);
	if (n == 4 && !strcmp(tok[0], "add"))
		ret = srd_peer_add(tok + 1);
	else if (n == 2 && !strcmp(tok[0], "del"))
		ret = srd_peer_del(tok + 1);
	else
		ret = -EINVAL;
	return ret ? ret : count;
}

static ssize_t rejected_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&srd_rejected));
}

static struct kobj_attribute srd_self_attr = __ATTR(self, 0600, self_show,
						     self_store);
static struct kobj_attribute srd_nodes_attr = __ATTR(nodes, 0600,
						      nodes_show, nodes_store);
static struct kobj_attribute srd_rejected_attr = __ATTR_RO_MODE(rejected,
								0400);

static struct attribute *srd_attrs[] = {
	&srd_self_attr.attr,
	&srd_nodes_attr.attr,
	&srd_rejected_attr.attr,
	NULL,
};

static const struct attribute_group srd_group = {
	.attrs = srd_attrs,
};

/* ---- module ---- */

static int __init scif_rdma_init(void)
{
	int ret;

	INIT_DELAYED_WORK(&srd_listen_work, srd_listen_work_fn);
	srd_wq = alloc_workqueue("scif_rdma", WQ_UNBOUND, 0);
	if (!srd_wq)
		return -ENOMEM;
	srd_kobj = kobject_create_and_add("scif_rdma", kernel_kobj);
	if (!srd_kobj) {
		ret = -ENOMEM;
		goto out_wq;
	}
	ret = sysfs_create_group(srd_kobj, &srd_group);
	if (ret)
		goto out_kobj;
	pr_info("scif_rdma: loaded (remote node ids %u-%u)\n",
		SCIF_REMOTE_NODE_MIN, SCIF_REMOTE_NODE_MAX);
	return 0;

out_kobj:
	kobject_put(srd_kobj);
out_wq:
	destroy_workqueue(srd_wq);
	return ret;
}

static void __exit scif_rdma_exit(void)
{
	struct srd_peer *peer, *tmp;
	struct rdma_cm_id *listen;
	LIST_HEAD(gone);

	/* no write can start any more: the files go first */
	sysfs_remove_group(srd_kobj, &srd_group);
	kobject_put(srd_kobj);

	mutex_lock(&srd_cfg_mutex);
	srd_exiting = true;
	listen = srd_listen_detach();
	list_splice_init(&srd_peers, &gone);
	mutex_unlock(&srd_cfg_mutex);
	if (listen)
		rdma_destroy_id(listen);
	cancel_delayed_work_sync(&srd_listen_work);
	mutex_lock(&srd_cfg_mutex);
	listen = srd_listen_detach();	/* the work may have re-created it */
	mutex_unlock(&srd_cfg_mutex);
	if (listen)
		rdma_destroy_id(listen);
	list_for_each_entry_safe(peer, tmp, &gone, link) {
		list_del(&peer->link);
		srd_peer_free(peer);
	}
	destroy_workqueue(srd_wq);
	pr_info("scif_rdma: unloaded\n");
}

module_init(scif_rdma_init);
module_exit(scif_rdma_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("openscif: SCIF nodes on other hosts over kernel RDMA");
MODULE_AUTHOR("openscif contributors");
#ifndef SCIF_VERSION
#error "SCIF_VERSION is not set: build with make (after configure) or with dkms"
#endif
MODULE_VERSION(SCIF_VERSION);
