// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: SCIF nodes on other hosts over kernel RDMA (rdma_cm and
 * generic verbs only; InfiniBand, RoCE, iWARP or Soft-RoCE alike).
 *
 * It brings remote nodes up and down and carries SCIF connections and
 * messages between endpoints of different hosts (docs/transport.md).
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
 *     in scif.ko, so scif_get_nodeIDs() lists it, with the NUMA node of
 *     the link's device (srd_dev_numa()) as the node's affinity.
 *  7. Frames and keepalive: each side keeps SCIF_RDMA_NRECV receives of
 *     SCIF_RDMA_BUF bytes posted on the QP (from step 2/4 on).  Every SEND
 *     is one frame: a struct srd_hdr (magic SCIF_RDMA_FRAME_MAGIC, type,
 *     reserved zero, link credits, destination and source connection
 *     ids, payload length, two arguments; big-endian), then the payload
 *     (DATA only).  While up, each side queues a PING every
 *     SCIF_RDMA_KEEPALIVE.  A send or receive completing in error, or
 *     nothing valid received for SCIF_RDMA_DEAD, ends the link as in
 *     step 8: so a peer that vanishes without a DREQ (powered off, link
 *     gone) goes down.
 *  8. DISCONNECTED, DEVICE_REMOVAL, ADDR/ROUTE/CONNECT errors, UNREACHABLE,
 *     REJECTED, the keepalive (step 7), the peer being deleted, or the
 *     module unloading end the link: the node is marked down, the QP, CQ,
 *     PD and cm_id are destroyed (in the link's work, never in the cm
 *     handler; the keepalive buffers after the CQ), and if the peer is
 *     still configured L tries again after a backoff that doubles from
 *     SCIF_RDMA_BACKOFF_MIN to SCIF_RDMA_BACKOFF_MAX; H waits for L.
 *  9. A listener lost through DEVICE_REMOVAL is re-created every
 *     SCIF_RDMA_BACKOFF_MAX until it binds again.
 * 10. Every received frame is checked before use: at least a header
 *     long, magic, reserved, a known type, the length field equal to the
 *     bytes received minus the header (at most SCIF_RDMA_BUF in all), no
 *     payload but on DATA, DATA not empty, returned link credits within
 *     what we used.  A bad frame is dropped, counted (sysfs bad_frames)
 *     and logged rate-limited; the link stays up.
 * 11. Link credits, so that a SEND never finds no posted receive: a side
 *     may have as many frames in flight as the peer posted receives
 *     (SCIF_RDMA_NRECV at first).  Each reposted receive is returned to
 *     the peer in the lcredits field of the next frame; when half of them
 *     are unreported and nothing else goes, an LCREDIT frame carries them.
 *     Every frame but LCREDIT needs two credits, so the last credit is
 *     always left for an LCREDIT and neither side can block the other.
 *     At most SCIF_RDMA_SQ sends are posted; frames wait in the link's
 *     outbox, DATA up to SCIF_RDMA_OUTBOX bytes (senders then wait).
 * 12. Connect: the connector's host gives the connection an id of its own
 *     (per link, 1..SCIF_RDMA_MAX_CONNS) and a proxy endpoint on the
 *     remote node (scif_remote.h), and sends CONN_REQ (src = its id, arg
 *     = connector's port << 16 | target port, arg2 = its ring size).  The
 *     target host checks the fields, gives the connection its own id and
 *     a proxy connector, and queues that at the listener of the target
 *     port on node 0 (scif_conn_deliver()).  Nobody listening, a full
 *     backlog, a listener closing or refusing: CONN_REJ (dst = the
 *     connector's id, arg = the positive errno: ECONNREFUSED, or ENODEV).
 * 13. The accept (conn_answer) sends CONN_ACC (dst, src = the ids, arg =
 *     the accepted endpoint's port, arg2 = its ring size).  The connector
 *     becomes connected to its proxy; a connector that gave up meanwhile
 *     (conn_cancel: interrupted, closed, node lost) answers with CLOSE.
 * 14. DATA (dst, src, payload): bytes of the byte stream, in order, into
 *     the receiving endpoint's ring.  A proxy's ring has no buffer: its
 *     head counts the bytes sent, its tail the bytes the far receiver
 *     consumed, so a sender never sends more than the ring the receiver
 *     granted (its size, minus what is unconsumed).  DATA beyond that
 *     credit is a protocol violation: the connection is reset (CLOSE sent,
 *     the local endpoint gets ECONNRESET) and the frame counted.
 * 15. CREDIT (dst, src, arg = the receiver's ring tail, free-running):
 *     sent when a receive consumed bytes; a tail going back or beyond the
 *     bytes sent is a violation as in step 14.
 * 16. CLOSE (dst, src): the connection ended on the sender's side (close,
 *     violation); sent after its DATA, so the receiver first reads what
 *     was queued, then gets ECONNRESET.  The receiver of a CLOSE for a
 *     live connection answers with CLOSE; the connection id is freed on
 *     both sides once each side sent and received one.
 * 17. Frames for a connection id not in the table, from a wrong source id
 *     or of a type the connection's state does not expect are counted as
 *     in step 10 and dropped.
 * 18. When a link ends (step 8) every connection over it ends once its CQ
 *     is drained: connected endpoints get ECONNRESET, connecting ones
 *     ENODEV, queued proxy connectors are withdrawn, blocked calls
 *     return, the proxies are freed.  A new link starts with no
 *     connections.
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
 * The link's frame state (struct srd_ka: outbox, credits) is under the
 * peer's mutex as well.  srd_msg_mutex protects the connections (struct
 * srd_conn, each peer's table, srd_peer_of[], the xprt field of the
 * endpoints involved); the receive handler drops the peer's mutex before
 * it takes srd_msg_mutex to deliver a frame.  The endpoint core's locks
 * (ep->lock, the endpoint mutexes via scif_ep_put()) may be taken under
 * srd_msg_mutex; the core calls the transport operations with no
 * spinlock held.
 * Order: srd_cfg_mutex, srd_msg_mutex, a peer's mutex.
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
#include <linux/xarray.h>
#include <linux/uaccess.h>
#include <linux/overflow.h>
#include <linux/numa.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "../scif_remote.h"
#include "../scif_ep.h"
#include "../scif_transport.h"

#define SCIF_RDMA_MAGIC		0x53434946U	/* "SCIF" */
#define SCIF_RDMA_VERSION	1
#define SCIF_RDMA_HELLO_REQ	1
#define SCIF_RDMA_HELLO_ACC	2
#define SCIF_RDMA_BACKOFF_MIN	(HZ / 2)
#define SCIF_RDMA_BACKOFF_MAX	(8 * HZ)
#define SCIF_RDMA_TIMEOUT_MS	2000
#define SCIF_RDMA_MAX_WRITE	128	/* longest accepted sysfs write */
#define SCIF_RDMA_KEEPALIVE	HZ	/* a PING this often while up */
#define SCIF_RDMA_DEAD		(5 * HZ) /* nothing received: link dead */
#define SCIF_RDMA_FRAME_MAGIC	0x5343464dU	/* "SCFM" */
#define SCIF_RDMA_NRECV		32	/* receives posted per link */
#define SCIF_RDMA_SQ		32	/* sends posted per link, at most */
#define SCIF_RDMA_BUF		8192	/* bytes of each receive buffer */
#define SCIF_RDMA_OUTBOX	(256 * 1024) /* DATA bytes queued per link */
#define SCIF_RDMA_RING_MAX	(4U << 20)   /* largest receive ring */
#define SCIF_RDMA_MAX_CONNS	16384	/* connections per link */

struct scif_rdma_hello {
	__be32 magic;
	u8 version;
	u8 kind;
	__be16 src;
	__be16 dst;
	__be16 reserved;
} __packed;

/*
 * Every frame on a link (steps 7, 10-16) starts with this header (all
 * big-endian).  The payload (DATA only) follows it in the same SEND.
 */
struct srd_hdr {
	__be32 magic;		/* SCIF_RDMA_FRAME_MAGIC */
	u8 type;		/* SRD_F_* */
	u8 reserved;		/* zero */
	__be16 lcredits;	/* link credits returned (step 11) */
	__be32 dst;		/* the receiver's connection id, 0 if none */
	__be32 src;		/* the sender's connection id, 0 if none */
	__be32 len;		/* payload bytes after the header */
	__be32 arg;		/* per type, see step 12-16 */
	__be32 arg2;
} __packed;

enum {
	SRD_F_PING = 1,
	SRD_F_LCREDIT,
	SRD_F_CONN_REQ,
	SRD_F_CONN_ACC,
	SRD_F_CONN_REJ,
	SRD_F_DATA,
	SRD_F_CREDIT,
	SRD_F_CLOSE,
	SRD_F_MAX = SRD_F_CLOSE,
};

#define SRD_PAYLOAD_MAX	(SCIF_RDMA_BUF - sizeof(struct srd_hdr))

struct srd_ka;

/* One receive buffer: SCIF_RDMA_BUF bytes, DMA-mapped on the device. */
struct srd_buf {
	struct ib_cqe cqe;
	struct srd_ka *ka;
	void *data;
	u64 dma;
	bool mapped;
};

/*
 * One frame to send: queued on the link's outbox, then posted (mapped
 * while posted).  Allocated per frame, bounded by the outbox limit (DATA)
 * and by the connections (control frames: a few per connection).
 */
struct srd_tx {
	struct list_head link;		/* outbox or posted, peer->lock */
	struct ib_cqe cqe;
	struct srd_ka *ka;
	u64 dma;
	bool mapped;
	bool ping;
	u32 len;			/* header + payload */
	u32 payload;
	u8 buf[];			/* struct srd_hdr, then payload */
};

/*
 * A link's messaging state (steps 7, 10, 11).  It lives as long as the
 * link's QP and CQ: srd_destroy_link() frees it after ib_free_cq(), when no
 * completion handler runs or will run.  The handlers touch it only under
 * peer->lock and only while this is the peer's current link (peer->res.ka);
 * so do senders (srd_xmit()).
 */
struct srd_ka {
	struct srd_peer *peer;
	struct ib_device *dev;
	struct srd_buf recv[SCIF_RDMA_NRECV];
	struct list_head outbox;	/* srd_tx, not posted yet */
	struct list_head posted;	/* srd_tx, posted, not completed */
	unsigned int out_bytes;		/* DATA payload queued or posted */
	unsigned int sq_busy;		/* sends posted */
	unsigned int tx_credits;	/* the peer's receives we may use */
	unsigned int rx_unrep;		/* our reposted receives, unreported */
	bool ping_busy;			/* a PING queued or posted */
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
	u64 gen;			/* link generation, +1 per new link */

	/* connections over the link: struct srd_conn, srd_msg_mutex */
	struct xarray conns;
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
static struct workqueue_struct *srd_wq;
/* senders to node id wait here for credits, outbox room or the end */
static wait_queue_head_t srd_txwq[SCIF_ALL_NODES];
/* the node's link has SCIF_RDMA_OUTBOX bytes queued; its peer->lock */
static bool srd_out_full[SCIF_ALL_NODES];
static struct kobject *srd_kobj;

static bool srd_id_ok(unsigned int id)
{
	return id >= SCIF_REMOTE_NODE_MIN && id <= SCIF_REMOTE_NODE_MAX;
}

/* ---- frames on a link: credits, outbox, keepalive (steps 7, 10, 11) ---- */

static void srd_link_fail(struct srd_peer *peer, const char *why, int err);
static void srd_msg_recv(struct srd_peer *peer, u64 gen,
			 const struct srd_hdr *h, const u8 *payload, u32 len);

static atomic_t srd_bad = ATOMIC_INIT(0);	/* bad frames received */

/* Count and log (rate-limited) a bad frame from @peer. */
static void srd_bad_frame(struct srd_peer *peer, const char *why, u32 len)
{
	atomic_inc(&srd_bad);
	pr_info_ratelimited("scif_rdma: node %u: dropped a bad frame (%s, %u bytes; %d so far)\n",
			    peer->id, why, len, atomic_read(&srd_bad));
}

static void srd_tx_free(struct srd_ka *ka, struct srd_tx *tx)
{
	if (tx->mapped)
		ib_dma_unmap_single(ka->dev, tx->dma, tx->len, DMA_TO_DEVICE);
	kfree(tx);
}

/* Unmap and free a detached link's buffers (its CQ freed already). */
static void srd_ka_free(struct srd_ka *ka)
{
	struct srd_tx *tx, *tmp;
	struct srd_buf *b;
	int i;

	if (!ka)
		return;
	for (i = 0; i < SCIF_RDMA_NRECV; i++) {
		b = &ka->recv[i];
		if (b->mapped)
			ib_dma_unmap_single(ka->dev, b->dma, SCIF_RDMA_BUF,
					    DMA_FROM_DEVICE);
		kfree(b->data);
	}
	list_for_each_entry_safe(tx, tmp, &ka->outbox, link)
		srd_tx_free(ka, tx);
	list_for_each_entry_safe(tx, tmp, &ka->posted, link)
		srd_tx_free(ka, tx);
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

/* Is @ka the messaging state of its peer's live link?  (peer->lock held) */
static bool srd_ka_live(struct srd_ka *ka)
{
	struct srd_peer *peer = ka->peer;

	return peer->res.ka == ka && !peer->removed &&
	       peer->state != SRD_DOWN;
}

/* A frame with @payload bytes of room after the header, or NULL. */
static struct srd_tx *srd_tx_alloc(u8 type, u32 dst, u32 src, u32 payload)
{
	struct srd_tx *tx;
	struct srd_hdr *h;

	tx = kzalloc(struct_size(tx, buf, sizeof(*h) + payload),
		     GFP_KERNEL_ACCOUNT);
	if (!tx)
		return NULL;
	tx->len = sizeof(*h) + payload;
	tx->payload = type == SRD_F_DATA ? payload : 0;
	h = (struct srd_hdr *)tx->buf;
	h->magic = cpu_to_be32(SCIF_RDMA_FRAME_MAGIC);
	h->type = type;
	h->dst = cpu_to_be32(dst);
	h->src = cpu_to_be32(src);
	h->len = cpu_to_be32(payload);
	return tx;
}

static void srd_send_done(struct ib_cq *cq, struct ib_wc *wc);

/* Post @tx on the current link (peer->lock held); @tx is then the link's. */
static int srd_post_tx(struct srd_peer *peer, struct srd_ka *ka,
		       struct srd_tx *tx)
{
	struct srd_hdr *h = (struct srd_hdr *)tx->buf;
	struct ib_sge sge = {
		.length = tx->len,
		.lkey = peer->res.pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &tx->cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	h->lcredits = cpu_to_be16(ka->rx_unrep);
	tx->ka = ka;
	tx->cqe.done = srd_send_done;
	tx->dma = ib_dma_map_single(ka->dev, tx->buf, tx->len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(ka->dev, tx->dma)) {
		srd_tx_free(ka, tx);
		return -ENOMEM;
	}
	tx->mapped = true;
	sge.addr = tx->dma;
	list_add_tail(&tx->link, &ka->posted);
	ret = ib_post_send(peer->res.cm_id->qp, &wr, NULL);
	if (ret) {
		list_del(&tx->link);
		srd_tx_free(ka, tx);
		return ret;
	}
	ka->rx_unrep = 0;
	ka->sq_busy++;
	ka->tx_credits--;
	return 0;
}

/*
 * Post what the outbox holds as far as the send queue and the link credits
 * allow (step 11: every frame but LCREDIT leaves one credit), then an
 * LCREDIT if half of our receives are unreported (peer->lock held, link
 * live).
 */
static void srd_flush(struct srd_peer *peer)
{
	struct srd_ka *ka = peer->res.ka;
	struct srd_tx *tx;
	int ret;

	while (ka->sq_busy < SCIF_RDMA_SQ && ka->tx_credits >= 2) {
		tx = list_first_entry_or_null(&ka->outbox, struct srd_tx, link);
		if (!tx)
			break;
		list_del(&tx->link);
		ret = srd_post_tx(peer, ka, tx);
		if (ret) {
			srd_link_fail(peer, "post send", ret);
			return;
		}
	}
	if (ka->rx_unrep >= SCIF_RDMA_NRECV / 2 && ka->tx_credits >= 1 &&
	    ka->sq_busy < SCIF_RDMA_SQ) {
		tx = srd_tx_alloc(SRD_F_LCREDIT, 0, 0, 0);
		if (!tx)
			return;	/* the next frame carries them */
		ret = srd_post_tx(peer, ka, tx);
		if (ret)
			srd_link_fail(peer, "post send", ret);
	}
}

/* A posted frame completed (or was flushed). */
static void srd_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_tx *tx = container_of(wc->wr_cqe, struct srd_tx, cqe);
	struct srd_ka *ka = tx->ka;
	struct srd_peer *peer = ka->peer;

	mutex_lock(&peer->lock);
	if (!srd_ka_live(ka))
		goto out;	/* an old link's: srd_ka_free() frees @tx */
	list_del(&tx->link);
	ka->sq_busy--;
	if (tx->ping)
		ka->ping_busy = false;
	ka->out_bytes -= tx->payload;
	srd_tx_free(ka, tx);
	if (wc->status != IB_WC_SUCCESS) {
		srd_link_fail(peer, "send", wc->status);
		goto out;
	}
	if (ka->out_bytes < SCIF_RDMA_OUTBOX && srd_out_full[peer->id]) {
		WRITE_ONCE(srd_out_full[peer->id], false);
		wake_up_all(&srd_txwq[peer->id]);
	}
	srd_flush(peer);
out:
	mutex_unlock(&peer->lock);
}

/*
 * Queue @tx on @peer's link of generation @gen and post what can be
 * posted.  Takes @tx in every case; -ECONNRESET if that link is gone.
 */
static int srd_xmit(struct srd_peer *peer, u64 gen, struct srd_tx *tx)
{
	struct srd_ka *ka;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || !srd_ka_live(ka) || peer->state != SRD_UP ||
	    peer->gen != gen) {
		mutex_unlock(&peer->lock);
		kfree(tx);
		return -ECONNRESET;
	}
	list_add_tail(&tx->link, &ka->outbox);
	ka->out_bytes += tx->payload;
	if (ka->out_bytes >= SCIF_RDMA_OUTBOX)
		WRITE_ONCE(srd_out_full[peer->id], true);
	srd_flush(peer);
	mutex_unlock(&peer->lock);
	return 0;
}

/*
 * Check a received frame's header (step 10); returns why it is bad, or
 * NULL.  @blen: bytes received.
 */
static const char *srd_hdr_check(struct srd_ka *ka, const struct srd_hdr *h,
				 u32 blen)
{
	u32 len;

	if (blen < sizeof(*h))
		return "short";
	if (be32_to_cpu(h->magic) != SCIF_RDMA_FRAME_MAGIC || h->reserved)
		return "bad magic";
	if (!h->type || h->type > SRD_F_MAX)
		return "bad type";
	len = be32_to_cpu(h->len);
	if (len != blen - sizeof(*h))
		return "bad length";
	if (len && h->type != SRD_F_DATA)
		return "payload on a control frame";
	if (h->type == SRD_F_DATA && !len)
		return "empty DATA";
	if (be16_to_cpu(h->lcredits) > SCIF_RDMA_NRECV - ka->tx_credits)
		return "too many link credits";
	return NULL;
}

/* A receive completed: a frame from the peer (untrusted), or a flush. */
static void srd_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_buf *b = container_of(wc->wr_cqe, struct srd_buf, cqe);
	struct srd_ka *ka = b->ka;
	struct srd_peer *peer = ka->peer;
	const struct srd_hdr *h = b->data;
	const char *why;
	bool deliver = false;
	u64 gen;
	int ret;

	mutex_lock(&peer->lock);
	if (!srd_ka_live(ka))
		goto out;	/* an old link's flush: its work frees @b */
	if (wc->status != IB_WC_SUCCESS) {
		srd_link_fail(peer, "receive", wc->status);
		goto out;
	}
	ib_dma_sync_single_for_cpu(ka->dev, b->dma, SCIF_RDMA_BUF,
				   DMA_FROM_DEVICE);
	why = srd_hdr_check(ka, h, wc->byte_len);
	if (why) {
		srd_bad_frame(peer, why, wc->byte_len);
	} else {
		ka->last_rx = jiffies;
		ka->tx_credits += be16_to_cpu(h->lcredits);
		deliver = h->type > SRD_F_LCREDIT;
	}
	gen = peer->gen;
	mutex_unlock(&peer->lock);

	/* the link's messages in order: this CQ's work is single-threaded */
	if (deliver)
		srd_msg_recv(peer, gen, h, (const u8 *)(h + 1),
			     be32_to_cpu(h->len));

	mutex_lock(&peer->lock);
	if (!srd_ka_live(ka))
		goto out;
	ret = srd_post_recv(peer, b);
	if (ret) {
		srd_link_fail(peer, "repost receive", ret);
		goto out;
	}
	ka->rx_unrep++;
	srd_flush(peer);
out:
	mutex_unlock(&peer->lock);
}

static int srd_buf_init(struct srd_ka *ka, struct srd_buf *b)
{
	b->ka = ka;
	b->cqe.done = srd_recv_done;
	b->data = kzalloc(SCIF_RDMA_BUF, GFP_KERNEL_ACCOUNT);
	if (!b->data)
		return -ENOMEM;
	b->dma = ib_dma_map_single(ka->dev, b->data, SCIF_RDMA_BUF,
				   DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(ka->dev, b->dma))
		return -ENOMEM;
	b->mapped = true;
	return 0;
}

/*
 * The host NUMA node of @dev (the NIC a link runs on): that of its DMA
 * device, else of its parent device (a software device such as rxe has
 * neither on a node), else NUMA_NO_NODE.
 */
static int srd_dev_numa(struct ib_device *dev)
{
	int nid = NUMA_NO_NODE;

	if (dev->dma_device)
		nid = dev_to_node(dev->dma_device);
	if (nid == NUMA_NO_NODE && dev->dev.parent)
		nid = dev_to_node(dev->dev.parent);
	return nid;
}

/*
 * The messaging state of a new link (peer->lock held, its QP just
 * created): map the buffers and post the receives.  On failure what exists
 * stays in peer->res.ka for srd_destroy_link().
 */
static int srd_ka_create(struct srd_peer *peer, struct rdma_cm_id *id)
{
	struct srd_ka *ka;
	int i, ret = 0;

	/* bounded: one per link, one link per configured peer */
	ka = kzalloc(sizeof(*ka), GFP_KERNEL_ACCOUNT);
	if (!ka)
		return -ENOMEM;
	ka->peer = peer;
	ka->dev = id->device;
	INIT_LIST_HEAD(&ka->outbox);
	INIT_LIST_HEAD(&ka->posted);
	ka->tx_credits = SCIF_RDMA_NRECV;
	peer->res.ka = ka;
	peer->gen++;
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_buf_init(ka, &ka->recv[i]);
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_post_recv(peer, &ka->recv[i]);
	return ret;
}

/*
 * Every SCIF_RDMA_KEEPALIVE while the link is up: end it if nothing valid
 * came for SCIF_RDMA_DEAD, else queue a PING (unless one is pending).
 */
static void srd_ka_work_fn(struct work_struct *work)
{
	struct srd_peer *peer = container_of(to_delayed_work(work),
					     struct srd_peer, ka_work);
	struct srd_ka *ka;
	struct srd_tx *tx;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->removed || peer->state != SRD_UP)
		goto out;	/* ESTABLISHED starts it again */
	if (time_after(jiffies, ka->last_rx + SCIF_RDMA_DEAD)) {
		srd_link_fail(peer, "keepalive: nothing received",
			      -ETIMEDOUT);
		goto out;
	}
	if (!ka->ping_busy) {
		tx = srd_tx_alloc(SRD_F_PING, 0, 0, 0);
		if (tx) {
			tx->ping = true;
			ka->ping_busy = true;
			list_add_tail(&tx->link, &ka->outbox);
			srd_flush(peer);
		}
	}
	if (peer->state == SRD_UP)
		queue_delayed_work(srd_wq, &peer->ka_work,
				   SCIF_RDMA_KEEPALIVE);
out:
	mutex_unlock(&peer->lock);
}

/* ---- connections across the link (steps 12-17) ---- */

enum srd_conn_state {
	SRDC_CONNECTING,	/* ours: CONN_REQ sent, connector waits */
	SRDC_CANCELLED,		/* ours: the connector gave up; await answer */
	SRDC_QUEUED,		/* theirs: proxy connector at our listener */
	SRDC_LIVE,		/* connected */
	SRDC_CLOSING,		/* CLOSE sent, awaiting the peer's CLOSE */
};

/*
 * One connection over a peer's link, in peer->conns under its local id.
 * Everything here, peer->conns, srd_peer_of[] and the xprt field of the
 * endpoints involved are protected by srd_msg_mutex (order: srd_cfg_mutex,
 * srd_msg_mutex, a peer's lock; ep->lock inside any of them).
 */
struct srd_conn {
	u32 lid;			/* our id, the key in peer->conns */
	u32 rid;			/* the peer's id, 0 until known */
	u64 gen;			/* the link generation it runs on */
	enum srd_conn_state state;
	struct scif_endpt *ep;		/* CONNECTING: the connector (counted) */
	struct scif_endpt *proxy;	/* the far endpoint's proxy (counted) */
	u32 credit_sent;		/* our endpoint's rx tail last credited */
};

static DEFINE_MUTEX(srd_msg_mutex);
/* configured peers by node id, srd_msg_mutex */
static struct srd_peer *srd_peer_of[SCIF_ALL_NODES];

static int srd_send_ctl(struct srd_peer *peer, struct srd_conn *c, u8 type,
			u32 dst, u32 arg, u32 arg2)
{
	struct srd_tx *tx = srd_tx_alloc(type, dst, c ? c->lid : 0, 0);
	struct srd_hdr *h;

	if (!tx)
		return -ENOMEM;
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(arg);
	h->arg2 = cpu_to_be32(arg2);
	return srd_xmit(peer, c ? c->gen : READ_ONCE(peer->gen), tx);
}

/* Drop @c from its peer's table and free it (srd_msg_mutex held). */
static void srd_conn_free(struct srd_peer *peer, struct srd_conn *c)
{
	xa_erase(&peer->conns, c->lid);
	if (c->proxy && c->proxy->xprt == c)
		c->proxy->xprt = NULL;
	scif_ep_put(c->proxy);
	scif_ep_put(c->ep);
	kfree(c);
}

/* Resolve the waiting connector of @c as refused with @err. */
static void srd_conn_refuse(struct srd_conn *c, int err)
{
	struct scif_endpt *ep = c->ep;

	spin_lock(&ep->lock);
	if (ep->state == SCIFEP_CONNECTING && ep->xprt == c) {
		ep->state = SCIFEP_BOUND;
		ep->conn_err = err;
	}
	ep->xprt = NULL;
	spin_unlock(&ep->lock);
	scif_ep_wake(ep);
}

/*
 * End the live connection @c from the far side (CLOSE received, protocol
 * violation, link lost): its local endpoint gets @err after its queued
 * data.  srd_msg_mutex held.
 */
static void srd_conn_end(struct srd_peer *peer, struct srd_conn *c, int err)
{
	scif_ep_end_conn(c->proxy, err);
	wake_up_all(&srd_txwq[peer->id]);
}

/* The local endpoint the proxy @p is connected to, counted, or NULL. */
static struct scif_endpt *srd_proxy_peer(struct scif_endpt *p)
{
	struct scif_endpt *ep;

	spin_lock(&p->lock);
	ep = p->peer;
	if (ep)
		scif_ep_get(ep);
	spin_unlock(&p->lock);
	return ep;
}

/* A protocol violation on live @c: reset it, tell the peer (step 17). */
static void srd_conn_violation(struct srd_peer *peer, struct srd_conn *c,
			       const char *why, u32 len)
{
	srd_bad_frame(peer, why, len);
	srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0);
	c->state = SRDC_CLOSING;
	srd_conn_end(peer, c, -ECONNRESET);
}

/* CONN_REQ (step 12): a connector on the peer wants one of our ports. */
static void srd_rx_conn_req(struct srd_peer *peer, u64 gen,
			    const struct srd_hdr *h)
{
	u32 src = be32_to_cpu(h->src), arg = be32_to_cpu(h->arg);
	u32 ring = be32_to_cpu(h->arg2);
	struct scif_node *dst = scif_node_lookup(0);
	struct scif_endpt *p;
	struct srd_conn *c;
	int ret;

	if (!src || h->dst || !(arg >> 16) || !(arg & 0xffff) || !ring ||
	    ring > SCIF_RDMA_RING_MAX) {
		srd_bad_frame(peer, "bad CONN_REQ", sizeof(*h));
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		goto refuse;
	p = scif_ep_alloc(scif_remote_node(peer->id));
	if (IS_ERR(p)) {
		kfree(c);
		goto refuse;
	}
	c->proxy = p;
	c->rid = src;
	c->gen = gen;
	c->state = SRDC_QUEUED;
	if (xa_alloc(&peer->conns, &c->lid, c,
		     XA_LIMIT(1, SCIF_RDMA_MAX_CONNS), GFP_KERNEL_ACCOUNT)) {
		scif_ep_put(p);
		kfree(c);
		goto refuse;
	}
	p->port = arg >> 16;
	p->peer_id.node = 0;
	p->peer_id.port = arg & 0xffff;
	p->rx.size = ring;
	p->state = SCIFEP_CONNECTING;
	p->xprt = c;
	ret = scif_conn_deliver(p, dst, arg & 0xffff);
	if (ret) {
		srd_send_ctl(peer, c, SRD_F_CONN_REJ, src, -ret, 0);
		srd_conn_free(peer, c);
	}
	return;
refuse:
	srd_send_ctl(peer, NULL, SRD_F_CONN_REJ, src, ECONNREFUSED, 0);
}

/* CONN_ACC (step 13): our connector is connected. */
static void srd_rx_conn_acc(struct srd_peer *peer, struct srd_conn *c,
			    const struct srd_hdr *h)
{
	u32 src = be32_to_cpu(h->src), port = be32_to_cpu(h->arg);
	u32 ring = be32_to_cpu(h->arg2);
	struct scif_endpt *ep = c->ep, *p = c->proxy;
	bool ok = false;

	if (!src || !port || port > SCIF_PORT_MAX || !ring ||
	    ring > SCIF_RDMA_RING_MAX) {
		srd_bad_frame(peer, "bad CONN_ACC", sizeof(*h));
		if (c->state == SRDC_CONNECTING)
			srd_conn_refuse(c, -ECONNREFUSED);
		srd_conn_free(peer, c);
		return;
	}
	c->rid = src;
	if (c->state == SRDC_CONNECTING) {
		p->port = port;
		p->rx.size = ring;
		spin_lock(&ep->lock);
		if (ep->state == SCIFEP_CONNECTING && ep->xprt == c) {
			ok = true;
			p->peer_id.node = ep->node->id;
			p->peer_id.port = ep->port;
			scif_ep_get(ep);
			p->peer = ep;
			p->state = SCIFEP_CONNECTED;
			p->xprt = c;
			scif_ep_get(p);
			ep->peer = p;
			ep->peer_id.node = peer->id;
			ep->peer_id.port = port;
			ep->state = SCIFEP_CONNECTED;
			ep->nb_unreported = ep->nb_connect;
			c->credit_sent = ep->rx.tail;
		}
		ep->xprt = NULL;
		spin_unlock(&ep->lock);
		scif_ep_wake(ep);
	}
	if (ok) {
		c->state = SRDC_LIVE;
		scif_ep_put(c->ep);
		c->ep = NULL;
		return;
	}
	/* cancelled meanwhile: end it at once */
	srd_send_ctl(peer, c, SRD_F_CLOSE, src, 0, 0);
	c->state = SRDC_CLOSING;
}

/* DATA (step 14): bytes for our endpoint, within the credit we gave. */
static void srd_rx_data(struct srd_peer *peer, struct srd_conn *c,
			const u8 *payload, u32 len)
{
	struct scif_endpt *ep = srd_proxy_peer(c->proxy);
	struct scif_ring *r;
	u32 head, off, chunk;

	if (!ep)
		return;		/* ended here, our CLOSE is on its way */
	r = &ep->rx;
	if (len > scif_ring_space(r)) {
		scif_ep_put(ep);
		srd_conn_violation(peer, c, "DATA beyond credit", len);
		return;
	}
	head = r->head;
	off = head & (r->size - 1);
	chunk = min(len, r->size - off);
	memcpy(r->buf + off, payload, chunk);
	memcpy(r->buf, payload + chunk, len - chunk);
	/* publish the bytes before the head: pairs with scif_ring_used() */
	smp_store_release(&r->head, head + len);
	scif_ep_wake(ep);
	scif_ep_put(ep);
}

/* CREDIT (step 15): the far receiver consumed up to arg. */
static void srd_rx_credit(struct srd_peer *peer, struct srd_conn *c,
			  const struct srd_hdr *h)
{
	struct scif_ring *r = &c->proxy->rx;
	u32 tail = be32_to_cpu(h->arg), old = READ_ONCE(r->tail);
	struct scif_endpt *ep;

	if (tail - old > READ_ONCE(r->head) - old) {
		srd_conn_violation(peer, c, "CREDIT beyond the data sent",
				   sizeof(*h));
		return;
	}
	/* pairs with the acquire of the tail in scif_ring_space() */
	smp_store_release(&r->tail, tail);
	wake_up_all(&srd_txwq[peer->id]);
	ep = srd_proxy_peer(c->proxy);
	if (ep) {
		scif_ep_wake(ep);	/* poll: EPOLLOUT */
		scif_ep_put(ep);
	}
}

/* A frame for the connection layer (step 12-16), srd_msg_mutex taken. */
static void srd_msg_recv(struct srd_peer *peer, u64 gen,
			 const struct srd_hdr *h, const u8 *payload, u32 len)
{
	u32 dst = be32_to_cpu(h->dst), src = be32_to_cpu(h->src);
	struct srd_conn *c;

	mutex_lock(&srd_msg_mutex);
	if (h->type == SRD_F_CONN_REQ) {
		srd_rx_conn_req(peer, gen, h);
		goto out;
	}
	c = dst ? xa_load(&peer->conns, dst) : NULL;
	if (!c || c->gen != gen) {
		srd_bad_frame(peer, "unknown connection", len);
		goto out;
	}
	if (c->state != SRDC_CONNECTING && c->state != SRDC_CANCELLED &&
	    c->rid != src) {
		srd_bad_frame(peer, "wrong source connection", len);
		goto out;
	}
	switch (h->type) {
	case SRD_F_CONN_ACC:
		if (c->state == SRDC_CONNECTING || c->state == SRDC_CANCELLED)
			srd_rx_conn_acc(peer, c, h);
		else
			srd_bad_frame(peer, "unexpected CONN_ACC", len);
		break;
	case SRD_F_CONN_REJ:
		if (c->state == SRDC_CONNECTING) {
			srd_conn_refuse(c, be32_to_cpu(h->arg) == ENODEV ?
					   -ENODEV : -ECONNREFUSED);
			srd_conn_free(peer, c);
		} else if (c->state == SRDC_CANCELLED) {
			srd_conn_free(peer, c);
		} else {
			srd_bad_frame(peer, "unexpected CONN_REJ", len);
		}
		break;
	case SRD_F_DATA:
		if (c->state == SRDC_LIVE)
			srd_rx_data(peer, c, payload, len);
		else if (c->state != SRDC_CLOSING)
			srd_bad_frame(peer, "DATA on no connection", len);
		break;
	case SRD_F_CREDIT:
		if (c->state == SRDC_LIVE)
			srd_rx_credit(peer, c, h);
		else if (c->state != SRDC_CLOSING)
			srd_bad_frame(peer, "CREDIT on no connection", len);
		break;
	case SRD_F_CLOSE:
		if (c->state == SRDC_LIVE) {
			srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0);
			srd_conn_end(peer, c, -ECONNRESET);
			srd_conn_free(peer, c);
		} else if (c->state == SRDC_CLOSING) {
			srd_conn_free(peer, c);
		} else {
			srd_bad_frame(peer, "unexpected CLOSE", len);
		}
		break;
	}
out:
	mutex_unlock(&srd_msg_mutex);
}

/*
 * The link of generation @gen (any if @all) is gone: end its connections
 * (step 18).  No lock held.
 */
static void srd_msg_link_down(struct srd_peer *peer, u64 gen, bool all)
{
	struct srd_conn *c;
	unsigned long i;

	mutex_lock(&srd_msg_mutex);
	xa_for_each(&peer->conns, i, c) {
		if (!all && c->gen != gen)
			continue;
		switch (c->state) {
		case SRDC_CONNECTING:
			srd_conn_refuse(c, -ENODEV);
			break;
		case SRDC_QUEUED:
			if (!scif_conn_withdraw(c->proxy, -ENODEV))
				srd_conn_end(peer, c, -ECONNRESET);
			break;
		case SRDC_LIVE:
			srd_conn_end(peer, c, -ECONNRESET);
			break;
		default:
			break;
		}
		srd_conn_free(peer, c);
	}
	WRITE_ONCE(srd_out_full[peer->id], false);
	wake_up_all(&srd_txwq[peer->id]);
	mutex_unlock(&srd_msg_mutex);
}

/* ---- the transport operations of remote nodes (scif_transport.h) ---- */

/* The up peer serving node @id (srd_msg_mutex held), or NULL. */
static struct srd_peer *srd_up_peer(u16 id)
{
	struct srd_peer *peer = id < SCIF_ALL_NODES ? srd_peer_of[id] : NULL;

	if (!peer || READ_ONCE(peer->state) != SRD_UP)
		return NULL;
	return peer;
}

static int srd_op_conn_request(struct scif_endpt *ep, u16 dst_node,
			       u16 port)
{
	struct srd_peer *peer;
	struct scif_endpt *p;
	struct srd_conn *c;
	int ret = -ENODEV;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	p = scif_ep_alloc(scif_remote_node(dst_node));
	if (IS_ERR(p)) {
		kfree(c);
		return PTR_ERR(p);
	}
	c->proxy = p;
	mutex_lock(&srd_msg_mutex);
	peer = srd_up_peer(dst_node);
	if (!peer)
		goto fail;
	c->gen = READ_ONCE(peer->gen);
	c->state = SRDC_CONNECTING;
	ret = xa_alloc(&peer->conns, &c->lid, c,
		       XA_LIMIT(1, SCIF_RDMA_MAX_CONNS), GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto fail;
	}
	scif_ep_get(ep);
	c->ep = ep;
	spin_lock(&ep->lock);
	ep->xprt = c;
	spin_unlock(&ep->lock);
	ret = srd_send_ctl(peer, c, SRD_F_CONN_REQ, 0,
			   (u32)ep->port << 16 | port, ep->rx.size);
	if (ret) {
		spin_lock(&ep->lock);
		ep->xprt = NULL;
		spin_unlock(&ep->lock);
		srd_conn_free(peer, c);
		mutex_unlock(&srd_msg_mutex);
		return -ENODEV;
	}
	mutex_unlock(&srd_msg_mutex);
	return 0;
fail:
	mutex_unlock(&srd_msg_mutex);
	scif_ep_put(p);
	kfree(c);
	return ret;
}

static bool srd_conn_cancel(struct scif_endpt *ep, int err)
{
	struct srd_conn *c;
	bool done = false;

	mutex_lock(&srd_msg_mutex);
	c = ep->xprt;
	if (c && c->state == SRDC_CONNECTING && c->ep == ep) {
		/* the answer still comes: CONN_ACC then gets a CLOSE */
		srd_conn_refuse(c, err);
		c->state = SRDC_CANCELLED;
		c->ep = NULL;
		scif_ep_put(ep);
		done = true;
	}
	mutex_unlock(&srd_msg_mutex);
	return done;
}

static ssize_t srd_msg_send(struct scif_endpt *ep, struct scif_endpt *p,
			    const void __user *buf, size_t len)
{
	struct srd_peer *peer;
	struct srd_conn *c;
	struct srd_tx *tx;
	u32 n, space = scif_ring_space(&p->rx);
	unsigned long left;
	int ret;

	if (!space || READ_ONCE(srd_out_full[p->node->id]))
		return 0;
	n = min_t(size_t, min_t(size_t, len, space), SRD_PAYLOAD_MAX);
	tx = srd_tx_alloc(SRD_F_DATA, 0, 0, n);
	if (!tx)
		return -ENOMEM;
	left = copy_from_user(tx->buf + sizeof(struct srd_hdr), buf, n);
	if (left == n) {
		kfree(tx);
		return -EFAULT;
	}
	if (left) {
		n -= left;
		tx->len -= left;
		tx->payload = n;
		((struct srd_hdr *)tx->buf)->len = cpu_to_be32(n);
	}
	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || c->state != SRDC_LIVE || !peer) {
		mutex_unlock(&srd_msg_mutex);
		kfree(tx);
		return -ECONNRESET;
	}
	((struct srd_hdr *)tx->buf)->dst = cpu_to_be32(c->rid);
	((struct srd_hdr *)tx->buf)->src = cpu_to_be32(c->lid);
	/* we are the one producer of p->rx (ep->send_mutex) */
	smp_store_release(&p->rx.head, p->rx.head + n);
	ret = srd_xmit(peer, c->gen, tx);
	mutex_unlock(&srd_msg_mutex);
	return ret ? ret : n;
}

/* Room freed in our endpoint's ring: credit the far sender (step 15). */
static void srd_notify(struct scif_endpt *p)
{
	struct srd_peer *peer;
	struct scif_endpt *ep;
	struct srd_conn *c;
	u32 tail;

	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || c->state != SRDC_LIVE || !peer)
		goto out;
	ep = srd_proxy_peer(p);
	if (!ep)
		goto out;
	/* pairs with the release of the tail in scif_recv (ring read) */
	tail = smp_load_acquire(&ep->rx.tail);
	scif_ep_put(ep);
	if (tail != c->credit_sent &&
	    !srd_send_ctl(peer, c, SRD_F_CREDIT, c->rid, tail, 0))
		c->credit_sent = tail;
out:
	mutex_unlock(&srd_msg_mutex);
}

/* Our endpoint @ep ended the connection to proxy @p (step 16). */
static bool srd_disconnect(struct scif_endpt *ep, struct scif_endpt *p,
			   int err)
{
	struct srd_peer *peer;
	struct srd_conn *c;
	bool was = false;

	mutex_lock(&srd_msg_mutex);
	spin_lock(&p->lock);
	if (p->peer == ep) {
		p->peer = NULL;
		was = true;
		if (p->state == SCIFEP_CONNECTED) {
			p->state = SCIFEP_DISCONNECTED;
			p->disc_err = err;
		}
	}
	spin_unlock(&p->lock);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (c && peer && c->state == SRDC_LIVE) {
		c->state = SRDC_CLOSING;
		if (srd_send_ctl(peer, c, SRD_F_CLOSE, c->rid, 0, 0))
			srd_conn_free(peer, c);	/* the link is gone */
	}
	wake_up_all(&srd_txwq[p->node->id]);
	mutex_unlock(&srd_msg_mutex);
	return was;
}

/* Our listener answered the peer's connector (proxy @p): step 12. */
static void srd_conn_answer(struct scif_endpt *p, int err)
{
	struct scif_endpt *nep = NULL;
	struct srd_peer *peer;
	struct srd_conn *c;
	u32 ring = 0;

	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || !peer || c->state != SRDC_QUEUED)
		goto out;
	if (!err) {
		spin_lock(&p->lock);
		nep = p->peer;
		if (nep)
			ring = nep->rx.size;
		spin_unlock(&p->lock);
	}
	if (nep) {
		c->state = SRDC_LIVE;
		srd_send_ctl(peer, c, SRD_F_CONN_ACC, c->rid, p->peer_id.port,
			     ring);
	} else {
		srd_send_ctl(peer, c, SRD_F_CONN_REJ, c->rid,
			     err ? -err : ECONNREFUSED, 0);
		srd_conn_free(peer, c);
	}
out:
	mutex_unlock(&srd_msg_mutex);
}

static bool srd_can_send(struct scif_endpt *ep, struct scif_endpt *p)
{
	return READ_ONCE(ep->state) != SCIFEP_CONNECTED ||
	       READ_ONCE(p->state) != SCIFEP_CONNECTED ||
	       (scif_ring_space(&p->rx) &&
		!READ_ONCE(srd_out_full[p->node->id]));
}

static int srd_send_wait(struct scif_endpt *ep, struct scif_endpt *p)
{
	return wait_event_interruptible(srd_txwq[p->node->id],
					srd_can_send(ep, p));
}

static const struct scif_transport_ops srd_ops = {
	.name = "rdma",
	.conn_request = srd_op_conn_request,
	.conn_cancel = srd_conn_cancel,
	.msg_send = srd_msg_send,
	.notify = srd_notify,
	.disconnect = srd_disconnect,
	.conn_answer = srd_conn_answer,
	.send_wait = srd_send_wait,
};

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
	peer->res.cq = ib_alloc_cq(id->device, peer,
				   SCIF_RDMA_SQ + SCIF_RDMA_NRECV, 0,
				   IB_POLL_WORKQUEUE);
	if (IS_ERR(peer->res.cq)) {
		ret = PTR_ERR(peer->res.cq);
		peer->res.cq = NULL;
		return ret;
	}
	attr.send_cq = peer->res.cq;
	attr.recv_cq = peer->res.cq;
	attr.cap.max_send_wr = SCIF_RDMA_SQ;
	attr.cap.max_recv_wr = SCIF_RDMA_NRECV;
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
		if (!peer->node_up &&
		    !scif_remote_node_up(peer->id, srd_dev_numa(id->device)))
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
	u64 gen;
	int ret;

	mutex_lock(&peer->lock);
	if (peer->removed || (peer->res.cm_id && peer->state != SRD_DOWN)) {
		mutex_unlock(&peer->lock);
		return;
	}
	if (peer->res.cm_id) {
		/* a failed link: detach, then destroy without the lock */
		gen = peer->gen;
		res = srd_link_detach(peer);
		queue_delayed_work(srd_wq, &peer->work, peer->backoff);
		peer->backoff = min(peer->backoff * 2, SCIF_RDMA_BACKOFF_MAX);
		mutex_unlock(&peer->lock);
		srd_destroy_link(&res);
		/* its CQ is drained: no frame of it arrives any more */
		srd_msg_link_down(peer, gen, false);
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
	/* every connection ends; no operation finds the peer any more */
	srd_msg_link_down(peer, 0, true);
	mutex_lock(&srd_msg_mutex);
	srd_peer_of[peer->id] = NULL;
	mutex_unlock(&srd_msg_mutex);
	xa_destroy(&peer->conns);
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
	xa_init_flags(&peer->conns, XA_FLAGS_ALLOC1);

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
	mutex_lock(&srd_msg_mutex);
	srd_peer_of[id] = peer;
	mutex_unlock(&srd_msg_mutex);
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

/* Each up link's frame state and connections (for debugging; 0400). */
static ssize_t links_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct srd_peer *peer;
	struct srd_conn *c;
	unsigned long i;
	ssize_t len = 0;

	mutex_lock(&srd_cfg_mutex);
	mutex_lock(&srd_msg_mutex);
	list_for_each_entry(peer, &srd_peers, link) {
		if (len > PAGE_SIZE - 128)
			break;	/* the rest does not fit */
		mutex_lock(&peer->lock);
		if (peer->res.ka)
			len += sysfs_emit_at(buf, len,
					     "node %u credits %u unrep %u posted %u out %u%s\n",
					     peer->id, peer->res.ka->tx_credits,
					     peer->res.ka->rx_unrep,
					     peer->res.ka->sq_busy,
					     peer->res.ka->out_bytes,
					     list_empty(&peer->res.ka->outbox) ?
					     "" : " queued");
		mutex_unlock(&peer->lock);
		xa_for_each(&peer->conns, i, c) {
			if (len > PAGE_SIZE - 128)
				break;
			len += sysfs_emit_at(buf, len,
					     " conn %u-%u state %d head %u tail %u credited %u\n",
					     c->lid, c->rid, c->state,
					     c->proxy->rx.head, c->proxy->rx.tail,
					     c->credit_sent);
		}
	}
	mutex_unlock(&srd_msg_mutex);
	mutex_unlock(&srd_cfg_mutex);
	return len;
}

static ssize_t bad_frames_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&srd_bad));
}

static struct kobj_attribute srd_self_attr = __ATTR(self, 0600, self_show,
						     self_store);
static struct kobj_attribute srd_nodes_attr = __ATTR(nodes, 0600,
						      nodes_show, nodes_store);
static struct kobj_attribute srd_rejected_attr = __ATTR_RO_MODE(rejected,
								0400);

static struct kobj_attribute srd_bad_attr = __ATTR_RO_MODE(bad_frames,
							   0400);
static struct kobj_attribute srd_links_attr = __ATTR_RO_MODE(links, 0400);

static struct attribute *srd_attrs[] = {
	&srd_bad_attr.attr,
	&srd_links_attr.attr,
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
	int i, ret;

	INIT_DELAYED_WORK(&srd_listen_work, srd_listen_work_fn);
	for (i = 0; i < SCIF_ALL_NODES; i++)
		init_waitqueue_head(&srd_txwq[i]);
	srd_wq = alloc_workqueue("scif_rdma", WQ_UNBOUND, 0);
	if (!srd_wq)
		return -ENOMEM;
	ret = scif_remote_register(&srd_ops);
	if (ret)
		goto out_wq;
	srd_kobj = kobject_create_and_add("scif_rdma", kernel_kobj);
	if (!srd_kobj) {
		ret = -ENOMEM;
		goto out_reg;
	}
	ret = sysfs_create_group(srd_kobj, &srd_group);
	if (ret)
		goto out_kobj;
	pr_info("scif_rdma: loaded (remote node ids %u-%u)\n",
		SCIF_REMOTE_NODE_MIN, SCIF_REMOTE_NODE_MAX);
	return 0;

out_kobj:
	kobject_put(srd_kobj);
out_reg:
	scif_remote_unregister(&srd_ops);
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
	/* every connection has ended with its peer */
	scif_remote_unregister(&srd_ops);
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
