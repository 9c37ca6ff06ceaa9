// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: frames on a link: checked headers, link credits, the outbox,
 * receive check and dispatch, keepalive (scif_rdma.h steps 7, 10, 11).
 */

#include "scif_rdma.h"

/* ---- frames on a link: credits, outbox, keepalive (steps 7, 10, 11) ---- */

atomic_t srd_bad = ATOMIC_INIT(0);	/* bad frames received */
atomic_t srd_marks = ATOMIC_INIT(0);	/* iWARP marks queued (sysfs) */

/* Count and log (rate-limited) a bad frame from @peer. */
void srd_bad_frame(struct srd_peer *peer, const char *why, u32 len)
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

/* Unmap and free a detached link's buffers (its CQs freed already). */
void srd_ka_free(struct srd_ka *ka)
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
	/* the CQs are gone: nothing queues it again */
	cancel_work_sync(&ka->sent_work);
	list_for_each_entry_safe(tx, tmp, &ka->posted, link)
		srd_tx_free(ka, tx);
	xa_destroy(&ka->rma_reqs);
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
struct srd_tx *srd_tx_alloc(u8 type, u32 dst, u32 src, u32 payload)
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

/*
 * Post with bottom halves off (default on).  Soft-RoCE on 6.1 sends the
 * WRs of a kernel QP from a tasklet, which a post from process context
 * only schedules: ksoftirqd ran it, after a context switch.  Turning
 * bottom halves back on runs it at once in the poster, so the request
 * leaves as the post returns, as a user QP's does (its post runs the
 * sender in the caller).  An 8-byte read by read key between two TCG
 * guests: median 390 -> 339 us in 12 rounds, each lower
 * (docs/transport.md, "Posting with bottom halves off").  Any verbs
 * driver may be posted to from softirq, so this is safe on every one.
 * Off: plain ib_post_send(), to compare in one boot (rdma-rma-bench).
 */
static bool srd_post_bh = true;
module_param_named(post_bh, srd_post_bh, bool, 0644);
MODULE_PARM_DESC(post_bh,
		 "post work requests with bottom halves off, running Soft-RoCE's sender at once (default Y)");

/* Every send-queue post of the link, frames and RDMA WRs (post_bh). */
int srd_post_send(struct ib_qp *qp, const struct ib_send_wr *wr)
{
	int ret;

	if (!READ_ONCE(srd_post_bh))
		return ib_post_send(qp, wr, NULL);
	local_bh_disable();
	ret = ib_post_send(qp, wr, NULL);
	local_bh_enable();
	return ret;
}

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
	ret = srd_post_send(peer->res.cm_id->qp, &wr);
	if (ret) {
		list_del(&tx->link);
		srd_tx_free(ka, tx);
		return ret;
	}
	ka->rx_unrep = 0;
	ka->sq_busy++;
	ka->tx_credits--;
	ka->unmarked = 0;	/* any frame marks the stream */
	if (tx->mark)
		ka->mark_waiting = false;
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

/*
 * A posted frame completed (or was flushed): send CQ, softirq.  The
 * frame's bookkeeping needs peer->lock, so it waits on the link's sent
 * list for srd_sent_work(); the first one on the list queues the work.
 */
static void srd_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_tx *tx = container_of(wc->wr_cqe, struct srd_tx, cqe);
	struct srd_ka *ka = tx->ka;

	tx->wc_status = wc->status;
	if (wc->status == IB_WC_SUCCESS && !ka->iwarp)
		srd_ka_alive(ka);	/* the peer acknowledged it */
	if (llist_add(&tx->sent, &ka->sent))
		queue_work(srd_wq, &ka->sent_work);
}

/* Account sent frame @tx of live link @ka (peer->lock held): 0 or -EIO. */
static int srd_tx_sent(struct srd_peer *peer, struct srd_ka *ka,
		       struct srd_tx *tx)
{
	enum ib_wc_status status = tx->wc_status;

	list_del(&tx->link);
	ka->sq_busy--;
	if (tx->ping)
		ka->ping_busy = false;
	ka->out_bytes -= tx->payload;
	srd_tx_free(ka, tx);
	if (status != IB_WC_SUCCESS) {
		srd_link_fail(peer, "send", status);
		return -EIO;
	}
	return 0;
}

/*
 * The send CQ's process-context half: frames sent (in completion order)
 * and a failed RMA work request (srd_rwr_done()) on @ka, if it is still
 * the live link; an old link's frames are srd_ka_free()'s.
 */
static void srd_sent_work(struct work_struct *work)
{
	struct srd_ka *ka = container_of(work, struct srd_ka, sent_work);
	struct srd_peer *peer = ka->peer;
	struct llist_node *done;
	struct srd_tx *tx, *tmp;
	int err;

	done = llist_reverse_order(llist_del_all(&ka->sent));
	mutex_lock(&peer->lock);
	if (!srd_ka_live(ka))
		goto out;
	err = READ_ONCE(ka->rdma_err);
	if (err) {
		srd_link_fail(peer, "RDMA", err);
		goto out;
	}
	llist_for_each_entry_safe(tx, tmp, done, sent)
		if (srd_tx_sent(peer, ka, tx))
			goto out;
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
int srd_xmit(struct srd_peer *peer, u64 gen, struct srd_tx *tx)
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
	/* what an RMA op carries exactly: srd_rma_rx_req(), _rx_done() */
	if (h->type == SRD_F_RMA_REQ) {
		if (len < sizeof(struct srd_rma_wire))
			return "bad RMA_REQ length";
	} else if (h->type == SRD_F_RMA_DONE) {
		if (len > SCIF_RDMA_RMA_INLINE)
			return "bad RMA_DONE length";
	} else if (h->type == SRD_F_RKEY) {
		if (len != sizeof(struct srd_rma_wire))
			return "bad RKEY length";
	} else if (len && h->type != SRD_F_DATA) {
		return "payload on a control frame";
	}
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
	/*
	 * A flush is a consequence, not a cause: the QP went to error by a
	 * failed work request on the send CQ (srd_sent_work() ends the link
	 * in its name), a disconnect (the cm's event) or our teardown.  Were
	 * it to end the link here, this work could win the race with the
	 * send CQ and hide the cause.  Should nothing else end it, the next
	 * PING fails, or the keepalive does.
	 */
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		goto out;
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
		srd_ka_alive(ka);
		ka->tx_credits += be16_to_cpu(h->lcredits);
		deliver = h->type > SRD_F_LCREDIT;
		srd_link_early_frame(peer);
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
int srd_dev_numa(struct ib_device *dev)
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
int srd_ka_create(struct srd_peer *peer, struct rdma_cm_id *id)
{
	struct srd_ka *ka;
	int i, ret = 0;

	/* bounded: one per link, one link per configured peer */
	ka = kzalloc(sizeof(*ka), GFP_KERNEL_ACCOUNT);
	if (!ka)
		return -ENOMEM;
	ka->peer = peer;
	ka->dev = id->device;
	ka->iwarp = rdma_protocol_iwarp(id->device, id->port_num);
	INIT_LIST_HEAD(&ka->outbox);
	INIT_LIST_HEAD(&ka->posted);
	init_llist_head(&ka->sent);
	INIT_WORK(&ka->sent_work, srd_sent_work);
	ka->tx_credits = SCIF_RDMA_NRECV;
	srd_rma_ka_init(ka, peer->res.pd);
	peer->res.ka = ka;
	peer->gen++;
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_buf_init(ka, &ka->recv[i]);
	for (i = 0; !ret && i < SCIF_RDMA_NRECV; i++)
		ret = srd_post_recv(peer, &ka->recv[i]);
	return ret;
}

/*
 * An RDMA WRITE of @len bytes was just posted on live link @ka (iWARP,
 * peer->lock held).  The peer learns nothing of a WRITE (no completion
 * there), and on iWARP our completions prove nothing to us either, so
 * while we serve its large reads the peer's only sign of our life is our
 * frames; those posted by the keepalive land behind every WRITE queued
 * before them and, on a slow link, come later than SCIF_RDMA_DEAD.  So
 * every SCIF_RDMA_MARK bytes of WRITEs with no frame among them we queue
 * a PING after them: the peer then hears from us once per SCIF_RDMA_MARK
 * of the stream.  At most one waits unposted (the peer may hold back its
 * credits).
 */
void srd_ka_mark(struct srd_peer *peer, struct srd_ka *ka, u32 len)
{
	struct srd_tx *tx;

	ka->unmarked = min_t(u64, (u64)ka->unmarked + len, UINT_MAX);
	if (ka->unmarked < SCIF_RDMA_MARK || ka->mark_waiting)
		return;
	tx = srd_tx_alloc(SRD_F_PING, 0, 0, 0);
	if (!tx)
		return;	/* the next WRITE tries again */
	tx->mark = true;
	ka->mark_waiting = true;
	atomic_inc(&srd_marks);
	list_add_tail(&tx->link, &ka->outbox);
	srd_flush(peer);
}

/*
 * The keepalive's tick on live link @ka (peer->lock held): while revoked
 * keys of the peer's still have RDMAs of ours in flight, and one of our
 * RDMAs (with any key) completed since the last tick, tell the owner of
 * the progress: a busy REVOKE_ACK for one of them (step 24).  The owner's
 * device serves our RDMAs in order, so on a slow link the last of the
 * 16 MiB a link may have in flight, or a single 1 MiB part, can take
 * longer than its wait for the answer.
 */
static void srd_ka_progress(struct srd_peer *peer, struct srd_ka *ka)
{
	int done = atomic_read(&ka->rdma_done);
	struct srd_hdr *h;
	struct srd_tx *tx;
	u32 id;

	if (done == ka->rdma_done_seen)
		return;
	ka->rdma_done_seen = done;
	if (!srd_keys_busy(ka, &id))
		return;
	tx = srd_tx_alloc(SRD_F_REVOKE_ACK, 0, 0, 0);
	if (!tx)
		return;	/* the next tick tries again */
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(id);
	h->arg2 = cpu_to_be32(SRD_REVOKE_BUSY);
	list_add_tail(&tx->link, &ka->outbox);
	srd_flush(peer);
}

/*
 * Every SCIF_RDMA_KEEPALIVE while the link is up: end it if the peer gave
 * no sign of life for SCIF_RDMA_DEAD (srd_ka_alive()), else queue a PING
 * (unless one is pending).
 */
void srd_ka_work_fn(struct work_struct *work)
{
	struct srd_peer *peer = container_of(to_delayed_work(work),
					     struct srd_peer, ka_work);
	struct srd_ka *ka;
	struct srd_tx *tx;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->removed || peer->state != SRD_UP)
		goto out;	/* ESTABLISHED starts it again */
	if (time_after(jiffies, READ_ONCE(ka->last_alive) + SCIF_RDMA_DEAD)) {
		/* what the link was doing: a slow peer or a dead one? */
		pr_info("scif_rdma: node %u: silent for %u ms; frames posted %u, credits %u, outbox %s, RMA WRs posted %d, requests %d out, %d served\n",
			peer->id,
			jiffies_to_msecs(jiffies - READ_ONCE(ka->last_alive)),
			ka->sq_busy, ka->tx_credits,
			list_empty(&ka->outbox) ? "empty" : "waiting",
			atomic_read(&ka->rma_busy), atomic_read(&ka->rma_nreq),
			atomic_read(&ka->rma_jobs));
		srd_link_fail(peer, "keepalive: no sign of life",
			      -ETIMEDOUT);
		goto out;
	}
	srd_ka_progress(peer, ka);
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
