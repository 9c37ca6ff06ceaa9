// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: RMA across hosts (scif_rdma.h steps 19-22, 25).
 *
 * Target-driven: the host that owns a window does the RDMA, so no key of
 * a window leaves its host but a key of a chunk it already served (remote
 * read and write as the window allows, revoked before the window goes)
 * and every access is checked against the owner's own windows by scif.ko
 * (scif_remote_rma_get(), scif_remote_window_get()).  The initiator
 * registers only its own local pages for each request in flight (a
 * fast-registration MR, remote access limited to what the operation
 * needs) and deregisters them once the target answered; up to SRD_RMA_PIPE
 * requests of one call are in flight at once.  A call of at most
 * SCIF_RDMA_RMA_INLINE bytes is one inline request instead: its data
 * travels in the frames (the RMA_REQ of a write, the RMA_DONE of a read),
 * copied by the CPU on both sides, with no MR and no RDMA.  A read or
 * write inside a chunk the owner gave a key for is RDMA READs or WRITEs
 * by the caller instead (scif_rdma_key.c; srd_direct_small(): one, for a
 * small call; srd_req_direct() for a part of a larger one).
 */

#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/highmem.h>

#include "scif_rdma.h"

struct workqueue_struct *srd_rma_wq;
/* peer fence waits (op 7), apart: they may last as long as transfers */
struct workqueue_struct *srd_fence_wq;
/* inline requests this host sent, and served with their data (sysfs) */
atomic_t srd_rma_inline_sent = ATOMIC_INIT(0);
atomic_t srd_rma_inline_served = ATOMIC_INIT(0);
/* RMA_DONEs that came after their killed caller gave up (sysfs) */
atomic_t srd_rma_late = ATOMIC_INIT(0);
/* requests with an MR unanswered at a killed caller's deadline (sysfs) */
atomic_t srd_rma_unanswered = ATOMIC_INIT(0);
/* IB_WR_REG_MR posted by this host (sysfs): what the peer reaches */
atomic_t srd_rma_regs = ATOMIC_INIT(0);
/* RMA completions that woke the link's RMA waiters (srd_rwr_done()) */
atomic_t srd_rma_wakeups = ATOMIC_INIT(0);

static_assert(SRD_RMA_PIPE >= 1 && SRD_RMA_PIPE <= SCIF_RDMA_RMA_REQS);

/*
 * One request of ours waiting for its RMA_DONE (in ka->rma_reqs), with
 * the local pages it exposes.
 */
struct srd_req {
	u32 id;
	u32 lid;			/* our connection id */
	bool done;
	bool inl;			/* an inline request: polled for */
	int status;			/* the target's errno; a direct part's */
	struct srd_map m;
	/*
	 * An inline read or a peer fence mark: the RMA_DONE's data goes to
	 * len bytes of pages, or of ans if set (a mark's).
	 */
	bool iread;
	struct page **pages;		/* from byte off of pages[0] */
	unsigned int off;
	u32 len;
	u8 *ans;
	/* a direct part (step 25): its RDMA READs or WRITEs with this key */
	struct srd_rkey *key;
	bool write;
	u64 gen;
	struct srd_rwr r;
};

/* One request of the peer's being served (a work item on srd_rma_wq). */
struct srd_job {
	struct work_struct work;
	struct srd_peer *peer;
	struct srd_ka *ka;		/* an rma_users reference */
	u64 gen;
	u32 lid, rid, id;
	int op;				/* SCIF_XPRT_RMA_*, SRD_RMA_I* */
	u64 roff, iova;
	u32 rkey, len;
	struct scif_endpt *ep;		/* our endpoint, counted, or NULL */
	int status;			/* positive errno, decided at receive */
	u8 data[];			/* SRD_RMA_IWRITE: the len bytes */
};

/* Copy @len bytes of @buf to @pages from byte @off of pages[0]. */
void srd_to_pages(struct page **pages, unsigned int off, const u8 *buf,
		  u32 len)
{
	u32 n;

	pages += off >> PAGE_SHIFT;
	off &= ~PAGE_MASK;
	for (; len; len -= n, buf += n, off = 0, pages++) {
		n = min_t(u32, len, PAGE_SIZE - off);
		memcpy_to_page(*pages, off, buf, n);
	}
}

/* Copy @len bytes of @pages from byte @off of pages[0] to @buf. */
void srd_from_pages(u8 *buf, struct page **pages, unsigned int off, u32 len)
{
	u32 n;

	pages += off >> PAGE_SHIFT;
	off &= ~PAGE_MASK;
	for (; len; len -= n, buf += n, off = 0, pages++) {
		n = min_t(u32, len, PAGE_SIZE - off);
		memcpy_from_page(buf, *pages, off, n);
	}
}

void srd_rma_ka_init(struct srd_ka *ka, struct ib_pd *pd)
{
	u32 max = ka->dev->attrs.max_fast_reg_page_list_len;

	ka->pd = pd;
	/* the target's range may straddle one more page than ours */
	ka->rma_pages = max > 1 ? min_t(u32, max - 1, SCIF_RDMA_RMA_PAGES) : 0;
	init_waitqueue_head(&ka->rma_wq);
	atomic_set(&ka->rma_users, 0);
	atomic_set(&ka->rma_busy, 0);
	atomic_set(&ka->rma_jobs, 0);
	atomic_set(&ka->rma_nreq, 0);
	xa_init_flags(&ka->rma_reqs, XA_FLAGS_ALLOC1);
	ka->rma_tombs = 0;
	xa_init(&ka->keys_in);
	INIT_LIST_HEAD(&ka->keys_busy);
	ka->nkeys_in = 0;
	ka->xkeys = 0;
}

/*
 * The link of @ka is destroyed up to its CQ (srd_destroy_link()): no RDMA
 * touches memory and no completion handler runs any more.  Wake every RMA
 * user and wait until they have released their MRs and mappings (they
 * return at once on dead), so that the PD and device may go.
 */
void srd_rma_link_dead(struct srd_ka *ka)
{
	if (!ka)
		return;
	WRITE_ONCE(ka->dead, true);
	wake_up_all(&ka->rma_wq);
	srd_keys_link_dead(ka);
	wait_event(ka->rma_wq, !atomic_read(&ka->rma_users));
	srd_keys_in_free(ka);
}

/* Take an rma_users reference on @peer's link of generation @gen. */
struct srd_ka *srd_rma_use(struct srd_peer *peer, u64 gen)
{
	struct srd_ka *ka;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->gen != gen || peer->state != SRD_UP || peer->removed ||
	    READ_ONCE(ka->dead) || !ka->rma_pages)
		ka = NULL;
	else
		atomic_inc(&ka->rma_users);
	mutex_unlock(&peer->lock);
	return ka;
}

void srd_rma_unuse(struct srd_ka *ka)
{
	if (atomic_dec_and_test(&ka->rma_users))
		wake_up_all(&ka->rma_wq);
}

/*
 * A registration or RDMA operation completed: send CQ, softirq, so that
 * a caller polling for it (srd_poll()) sees it without a work item being
 * scheduled first.  No mutex here: a failure is left in rdma_err for
 * srd_sent_work(), which ends the link (completions of one CQ run one at
 * a time, so the first failure is the one kept).
 */
static void srd_rwr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct srd_rwr *r = container_of(wc->wr_cqe, struct srd_rwr, cqe);
	struct srd_ka *ka = r->ka;
	int busy, left;

	if (wc->status == IB_WC_SUCCESS) {
		/* answered by the peer's device; not a registration */
		if (wc->opcode == IB_WC_RDMA_READ ||
		    (wc->opcode == IB_WC_RDMA_WRITE && !ka->iwarp))
			srd_ka_alive(ka);
		/* a revocation's progress (srd_ka_progress()) */
		if (wc->opcode == IB_WC_RDMA_READ ||
		    wc->opcode == IB_WC_RDMA_WRITE)
			atomic_inc(&ka->rdma_done);
	} else {
		if (!r->status)
			r->status = wc->status;
		if (!READ_ONCE(ka->rdma_err)) {
			WRITE_ONCE(ka->rdma_err, wc->status);
			queue_work(srd_wq, &ka->sent_work);
		}
	}
	busy = atomic_dec_return(&ka->rma_busy);
	/*
	 * The last touch of @r, after its status: its owner reads pending
	 * without a lock (srd_rwr_idle(), polled or woken by any wake-up of
	 * rma_wq) and, at 0, returns, and @r (on its stack) goes.  @ka stays
	 * until the CQ is freed.
	 */
	left = atomic_dec_return_release(&r->pending);
	/*
	 * Only what a completion can end is woken: @r's owner once its last
	 * WR is done, a poster waiting for room (srd_rwr_post()) once the
	 * send queue's RMA budget is no longer full.  Not at every WR: with
	 * several transfers out, each of their callers would wake at every
	 * completion of another's, to sleep again, on the CPU the device's
	 * own work needs (Soft-RoCE's).
	 */
	if (!left || busy == SCIF_RDMA_RMA_SQ - 1) {
		atomic_inc(&srd_rma_wakeups);
		wake_up_all(&ka->rma_wq);
	}
}

static bool srd_rwr_idle(const struct srd_rwr *r)
{
	/* acquire: the status and data the completions wrote before */
	return !atomic_read_acquire(&r->pending) || READ_ONCE(r->ka->dead);
}

/*
 * How long the caller of a small call (one RDMA READ by read key, one
 * inline request) polls for its completion before it sleeps, in us.  A
 * small call's round trip on a NIC is a few us, about what going to
 * sleep and being woken by the CQ's work costs; ib_read_lat busy-polls
 * all of it, and Intel's driver spun on its DMA.  The default covers a
 * round trip of Soft-RoCE between two TCG guests (about 0.4 ms; there
 * polling took 3-30% off the median, docs/transport.md); a call whose
 * completion comes sooner stops polling sooner.  0: sleep at once.
 */
static unsigned int srd_poll_us = 1000;

static int srd_poll_us_set(const char *val, const struct kernel_param *kp)
{
	unsigned int us;
	int ret = kstrtouint(val, 0, &us);

	if (ret)
		return ret;
	if (us > SRD_POLL_US_MAX)
		return -ERANGE;
	WRITE_ONCE(srd_poll_us, us);
	return 0;
}

static const struct kernel_param_ops srd_poll_us_ops = {
	.set = srd_poll_us_set,
	.get = param_get_uint,
};

module_param_cb(poll_us, &srd_poll_us_ops, &srd_poll_us, 0644);
MODULE_PARM_DESC(poll_us,
		 "us a small RMA call polls for its completion before sleeping (0-"
		 __stringify(SRD_POLL_US_MAX) ", default 1000)");

/* small calls whose completion their caller found polling (sysfs) */
atomic_t srd_rma_polled = ATOMIC_INIT(0);

/*
 * Poll @done(@arg) for up to poll_us: true if it held (the caller then
 * need not sleep), false when the time is up or a signal is pending.
 * The completion runs in the CQ's work, perhaps on this CPU: when
 * something else wants the CPU the caller yields it, still runnable.
 */
bool srd_poll(bool (*done)(const void *arg), const void *arg)
{
	unsigned int us = READ_ONCE(srd_poll_us);
	u64 end;

	if (!us)
		return false;
	end = ktime_get_ns() + (u64)us * NSEC_PER_USEC;
	while (!done(arg)) {
		if (ktime_get_ns() > end || signal_pending(current))
			return false;
		if (need_resched())
			cond_resched();
		else
			cpu_relax();
	}
	/* what the completion wrote before it said so */
	smp_rmb();
	atomic_inc(&srd_rma_polled);
	return true;
}

static bool srd_rwr_polled(const void *arg)
{
	return srd_rwr_idle(arg);
}

/* Poll for @r's WRs (one small READ), then wait as srd_rwr_wait(). */
void srd_rwr_poll_wait(struct srd_rwr *r)
{
	if (!srd_poll(srd_rwr_polled, r))
		srd_rwr_wait(r);
}

/* The bytes @wr moves: its SGEs' lengths (each at most a WR's). */
static u32 srd_wr_len(const struct ib_send_wr *wr)
{
	u64 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return min_t(u64, len, U32_MAX);
}

/*
 * Post @wr (signalled, one WR) on @ka's live link within the RMA budget of
 * the send queue (SCIF_RDMA_RMA_SQ; frames have their own SCIF_RDMA_SQ),
 * waiting for room.  -ECONNRESET if the link is gone.
 */
int srd_rwr_post(struct srd_rwr *r, struct ib_send_wr *wr)
{
	struct srd_ka *ka = r->ka;
	struct srd_peer *peer = ka->peer;
	int ret;

	for (;;) {
		mutex_lock(&peer->lock);
		if (READ_ONCE(ka->dead) || peer->res.ka != ka ||
		    peer->state != SRD_UP) {
			mutex_unlock(&peer->lock);
			return -ECONNRESET;
		}
		/* only posters raise it, all under peer->lock */
		if (atomic_read(&ka->rma_busy) < SCIF_RDMA_RMA_SQ)
			break;
		mutex_unlock(&peer->lock);
		/* nothing posted yet: a killed caller just goes */
		if (wait_event_killable(ka->rma_wq,
					atomic_read(&ka->rma_busy) <
						SCIF_RDMA_RMA_SQ ||
					READ_ONCE(ka->dead)))
			return -EINTR;
	}
	r->cqe.done = srd_rwr_done;
	wr->wr_cqe = &r->cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	wr->next = NULL;
	/* counted first: the completion may run before the post returns */
	atomic_inc(&ka->rma_busy);
	atomic_inc(&r->pending);
	ret = srd_post_send(peer->res.cm_id->qp, wr);
	if (ret) {
		atomic_dec(&r->pending);
		atomic_dec(&ka->rma_busy);
		srd_link_fail(peer, "post RDMA", ret);
	} else if (ka->iwarp && wr->opcode == IB_WR_RDMA_WRITE) {
		srd_ka_mark(peer, ka, srd_wr_len(wr));
	}
	mutex_unlock(&peer->lock);
	return ret ? -ECONNRESET : 0;
}

/*
 * Wait until every WR of @r completed or the link is dead.  The WRs use
 * our MR and pages until they complete, so a killed caller keeps waiting,
 * but only for SRD_RMA_KILL_WAIT: a peer can stall our send queue (its
 * RC acknowledgements, hence our completions, come in order), and then
 * ending the link is what flushes the WRs (step 22).
 */
void srd_rwr_wait(struct srd_rwr *r)
{
	struct srd_ka *ka = r->ka;
	struct srd_peer *peer = ka->peer;

	if (!wait_event_killable(ka->rma_wq, srd_rwr_idle(r)))
		return;
	if (!wait_event_timeout(ka->rma_wq, srd_rwr_idle(r),
				SRD_RMA_KILL_WAIT)) {
		mutex_lock(&peer->lock);
		if (peer->res.ka == ka && peer->state != SRD_DOWN)
			srd_link_fail(peer, "RMA work request stalled",
				      -ETIMEDOUT);
		mutex_unlock(&peer->lock);
	}
	wait_event(ka->rma_wq, srd_rwr_idle(r));
}

void srd_unmap(struct srd_ka *ka, struct srd_map *m)
{
	if (m->mr)
		ib_dereg_mr(m->mr);	/* invalidates it */
	if (m->nents)
		ib_dma_unmap_sg(ka->dev, m->sgt.sgl, m->sgt.orig_nents, m->dir);
	if (m->sgt_alloc)
		sg_free_table(&m->sgt);
}

/*
 * DMA-map @len bytes of @pages from byte @off of pages[0], at most @maxpg
 * pages: what a work request of ours addresses with the PD's local DMA
 * key (srd_post_sg()), with no registration.
 */
static int srd_map_sg(struct srd_ka *ka, struct srd_map *m,
		      struct page **pages, unsigned int off, u32 len,
		      unsigned int maxpg, enum dma_data_direction dir)
{
	unsigned int npages = DIV_ROUND_UP(off + len, PAGE_SIZE);
	int ret, n;

	if (npages > maxpg)
		return -EINVAL;
	m->dir = dir;
	m->len = len;
	ret = sg_alloc_table_from_pages(&m->sgt, pages, npages, off, len,
					GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	m->sgt_alloc = true;
	n = ib_dma_map_sg(ka->dev, m->sgt.sgl, m->sgt.orig_nents, dir);
	if (n <= 0)
		return -ENOMEM;
	m->nents = n;
	return 0;
}

/*
 * DMA-map as srd_map_sg() and describe the pages by a new MR of @ka's PD
 * (not registered yet): for what the peer reaches by its key.
 */
int srd_map(struct srd_ka *ka, struct srd_map *m, struct page **pages,
	    unsigned int off, u32 len, unsigned int maxpg,
	    enum dma_data_direction dir)
{
	unsigned int devmax = ka->dev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *mr;
	int ret, n;

	ret = srd_map_sg(ka, m, pages, off, len, maxpg, dir);
	if (ret)
		return ret;
	n = m->nents;
	/*
	 * One page entry more than a request uses: Soft-RoCE (rxe_mr_copy()
	 * in 6.1) reads the next map's pointer after a copy that ends on the
	 * last entry of a full map of 256, past the array of an MR of
	 * exactly 256 pages (a KASAN report on the debug kernel).
	 */
	mr = ib_alloc_mr(ka->pd, IB_MR_TYPE_MEM_REG,
			 min(maxpg + 1, devmax));
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	m->mr = mr;
	if (ib_map_mr_sg(mr, m->sgt.sgl, n, NULL, PAGE_SIZE) != n)
		return -EINVAL;
	return 0;
}

/*
 * Post RDMA @op WRs (READ or WRITE) between all of @m's pages and the
 * peer's @raddr under @rkey, each WR at most @piece bytes and
 * ka->max_sge entries of the PD's local DMA key: no MR to register and
 * invalidate, as nothing remote reaches these pages.  0 or the first
 * error; *@posted WRs are out either way.  @r's pending holds one more
 * while they are posted, so that a WR completing before the next is out
 * is not taken for the last one: the owner is woken once, by the last.
 *
 * On iWARP a WR is at most SCIF_RDMA_MARK bytes.  A READ's completion is
 * the one sign of the peer's life while the peer answers it (its frames
 * wait in its TCP stream behind the whole answer, srd_ka_alive()), so on
 * a slow link a READ of a MiB would let SCIF_RDMA_DEAD pass with nothing
 * heard and end the link; and a mark after a WRITE (srd_ka_mark()) comes
 * only after the whole WRITE, however long.
 */
static int srd_post_sg(struct srd_rwr *r, struct srd_map *m, u32 piece,
		       enum ib_wr_opcode op, u64 raddr, u32 rkey,
		       unsigned int *posted)
{
	struct srd_ka *ka = r->ka;
	struct ib_sge sge[SRD_RMA_SGES];
	struct ib_rdma_wr wr = {
		.wr.opcode = op,
		.wr.sg_list = sge,
		.rkey = rkey,
	};
	unsigned int nsge = clamp_t(unsigned int, ka->max_sge, 1,
				    SRD_RMA_SGES);
	struct scatterlist *sg = m->sgt.sgl;
	u32 at = 0, segoff = 0, wlen, take;
	int left = m->nents, ret = 0;

	if (ka->iwarp)
		piece = min_t(u32, piece, SCIF_RDMA_MARK);
	*posted = 0;
	atomic_inc(&r->pending);	/* the bias: none is last while posting */
	while (at < m->len && !ret) {
		wr.wr.num_sge = 0;
		wlen = 0;
		if (m->mr) {
			/* an iWARP READ sink (srd_map_local()): by its MR */
			wlen = min(piece, m->len - at);
			sge[0].addr = m->mr->iova + at;
			sge[0].length = wlen;
			sge[0].lkey = m->mr->lkey;
			wr.wr.num_sge = 1;
		}
		while (!m->mr && left && wlen < piece &&
		       wr.wr.num_sge < nsge) {
			take = min3(sg_dma_len(sg) - segoff, piece - wlen,
				    m->len - at - wlen);
			sge[wr.wr.num_sge].addr = sg_dma_address(sg) + segoff;
			sge[wr.wr.num_sge].length = take;
			sge[wr.wr.num_sge].lkey = ka->pd->local_dma_lkey;
			wr.wr.num_sge++;
			wlen += take;
			segoff += take;
			if (segoff == sg_dma_len(sg)) {
				sg = sg_next(sg);
				left--;
				segoff = 0;
			}
		}
		if (!wlen) {
			ret = -EINVAL;	/* no piece, or a short mapping */
			break;
		}
		wr.remote_addr = raddr + at;
		ret = srd_rwr_post(r, &wr.wr);
		if (!ret)
			(*posted)++;
		at += wlen;
	}
	/*
	 * At 0 every WR already completed, and nobody waits for @r yet.
	 * Acquire: it reads what their release wrote, as srd_rwr_idle().
	 */
	atomic_dec_return_acquire(&r->pending);
	return ret;
}

/*
 * Map the local side of an RDMA READ (@read: its sink) or WRITE of ours:
 * SGE lists (srd_map_sg()).  But an iWARP READ's response lands as the
 * peer's tagged writes, so there the sink is an MR registered for remote
 * write too, as rdma_rw has it (rdma_rw_io_needs_mr()).
 */
static int srd_map_local(struct srd_ka *ka, struct srd_map *m,
			 struct page **pages, unsigned int off, u32 len,
			 unsigned int maxpg, bool read)
{
	int ret;

	if (!read || !ka->iwarp)
		return srd_map_sg(ka, m, pages, off, len, maxpg,
				  read ? DMA_FROM_DEVICE : DMA_TO_DEVICE);
	ret = srd_map(ka, m, pages, off, len, maxpg, DMA_FROM_DEVICE);
	if (!ret)
		ret = srd_reg(ka, m, IB_ACCESS_LOCAL_WRITE |
				     IB_ACCESS_REMOTE_WRITE);
	return ret;
}

/* Register @m's MR with @access (a REG_MR WR) and wait for it. */
int srd_reg(struct srd_ka *ka, struct srd_map *m, int access)
{
	struct srd_rwr r = { .ka = ka };
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = m->mr,
		.key = m->mr->rkey,
		.access = access,
	};
	int ret;

	ret = srd_rwr_post(&r, &wr.wr);
	if (!ret)
		atomic_inc(&srd_rma_regs);
	srd_rwr_wait(&r);
	if (!ret && (r.status || READ_ONCE(ka->dead)))
		ret = -ECONNRESET;
	return ret;
}

/* ---- target: the peer's requests (step 20) ---- */

/*
 * Answer request @id with RMA_DONE: @tx (an inline read's, the data in
 * it) or, if NULL, one without payload.
 */
static void srd_rma_answer(struct srd_peer *peer, u64 gen, u32 rid, u32 lid,
			   u32 id, int status, struct srd_tx *tx)
{
	struct srd_hdr *h;

	if (!tx)
		tx = srd_tx_alloc(SRD_F_RMA_DONE, rid, lid, 0);
	if (!tx)
		return;	/* the initiator waits until the link ends */
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(id);
	h->arg2 = cpu_to_be32(status);
	srd_xmit(peer, gen, tx);
}

/*
 * Serve inline request @j with the window's @pages (the range from byte
 * @off of pages[0]): a write's data into them, or a read's into a new
 * RMA_DONE in *@tx.  0 or -ENOMEM.
 */
static int srd_job_inline(struct srd_job *j, struct page **pages,
			  unsigned int off, struct srd_tx **tx)
{
	if (j->op == SRD_RMA_IWRITE) {
		srd_to_pages(pages, off, j->data, j->len);
		return 0;
	}
	*tx = srd_tx_alloc(SRD_F_RMA_DONE, j->rid, j->lid, j->len);
	if (!*tx)
		return -ENOMEM;
	srd_from_pages((*tx)->buf + sizeof(struct srd_hdr), pages, off,
		       j->len);
	return 0;
}

/*
 * Serve peer fence @j (ops 6 and 7, SCIF_FENCE_INIT_PEER of the far
 * side): a mark of our endpoint's own transfers, in a new RMA_DONE in
 * *@tx; or a wait until our endpoint completed them up to the mark,
 * looking every SRD_FENCE_POLL whether the link died (srd_rma_link_dead()
 * waits for this job's rma_users reference).  0 or -errno.
 */
static int srd_job_fence(struct srd_job *j, struct srd_tx **tx)
{
	__be32 *p;
	int ret;

	if (j->op == SRD_RMA_MARK) {
		ret = scif_remote_fence_mark(j->ep);
		if (ret < 0)
			return ret;
		*tx = srd_tx_alloc(SRD_F_RMA_DONE, j->rid, j->lid, sizeof(*p));
		if (!*tx)
			return -ENOMEM;
		p = (__be32 *)((*tx)->buf + sizeof(struct srd_hdr));
		*p = cpu_to_be32(ret);
		return 0;
	}
	do {
		ret = scif_remote_fence_wait(j->ep, (int)j->roff,
					     SRD_FENCE_POLL);
	} while (ret == -EAGAIN && !READ_ONCE(j->ka->dead));
	return ret == -EAGAIN ? -ECONNRESET : ret;
}

static void srd_job_fn(struct work_struct *work)
{
	struct srd_job *j = container_of(work, struct srd_job, work);
	struct srd_ka *ka = j->ka;
	struct srd_rwr r = { .ka = ka };
	struct srd_map m = {};
	struct srd_tx *tx = NULL;
	struct scif_remote_rma *h;
	struct page **pages;
	unsigned int off, posted;
	bool inl = j->op == SRD_RMA_IREAD || j->op == SRD_RMA_IWRITE;
	bool rd = j->op == SCIF_XPRT_RMA_READ || j->op == SRD_RMA_IREAD;
	int ret;

	if (j->op == SRD_RMA_MARK || j->op == SRD_RMA_WAIT) {
		ret = srd_job_fence(j, &tx);
		goto answer;
	}
	if (j->op == SCIF_XPRT_RMA_SIGNAL) {
		/* the value travels in the iova field (step 20) */
		ret = scif_remote_signal(j->ep, j->roff, j->iova);
		goto answer;
	}
	h = scif_remote_rma_get(j->ep, j->roff, j->len, !rd, &pages, &off);
	if (IS_ERR(h)) {
		ret = PTR_ERR(h);
		goto answer;
	}
	if (inl) {
		/* copied before the RMA_DONE goes: no fence sees it earlier */
		ret = srd_job_inline(j, pages, off, &tx);
		scif_remote_rma_put(h);
		if (!ret)
			atomic_inc(&srd_rma_inline_served);
		/* its next calls there may go direct (step 23) */
		if (!ret)
			srd_key_expose(j->peer, ka, j->gen, j->lid, j->rid, j->ep,
				       j->roff, j->len);
		goto answer;
	}
	/*
	 * Initiator reads: we RDMA WRITE from our pages; writes: RDMA READ.
	 * Our side is SGE lists of the local DMA key (no registration).
	 */
	ret = srd_map_local(ka, &m, pages, off, j->len, ka->rma_pages + 1,
			    !rd);
	if (!ret) {
		ret = srd_post_sg(&r, &m, j->len,
				  rd ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ,
				  j->iova, j->rkey, &posted);
		srd_rwr_wait(&r);
		if (!ret && (r.status || READ_ONCE(ka->dead)))
			ret = -ECONNRESET;
	}
	srd_unmap(ka, &m);
	scif_remote_rma_put(h);
	/* its next calls there may go direct (step 23) */
	if (!ret)
		srd_key_expose(j->peer, ka, j->gen, j->lid, j->rid, j->ep,
			       j->roff, j->len);
answer:
	if (ret != -ENXIO && ret != -EACCES && ret != -ENOMEM)
		ret = ret ? -ECONNRESET : 0;
	atomic_dec(&ka->rma_jobs);
	srd_rma_answer(j->peer, j->gen, j->rid, j->lid, j->id, -ret, tx);
	scif_ep_put(j->ep);
	srd_rma_unuse(ka);
	kfree(j);
}

/*
 * RMA_REQ from the peer on connection @c (NULL if it is not live; @known
 * if its ids are a connection of ours in any state): check every field,
 * then serve it in a work item; anything else is answered at once.  The
 * frame's payload (h->len bytes, step 10: at least a srd_rma_wire) must
 * be exactly what the op carries.  srd_msg_mutex held (CQ work).
 */
void srd_rma_rx_req(struct srd_peer *peer, u64 gen, struct srd_conn *c,
		    bool known, const struct srd_hdr *h, const u8 *payload)
{
	const struct srd_rma_wire *w = (const struct srd_rma_wire *)payload;
	u32 rid = be32_to_cpu(h->src), id = be32_to_cpu(h->arg);
	u32 op = be32_to_cpu(h->arg2), len = be32_to_cpu(w->len);
	u32 plen = be32_to_cpu(h->len);
	u64 roff = be64_to_cpu(w->roff), end;
	bool inl = op == SRD_RMA_IREAD || op == SRD_RMA_IWRITE;
	bool fence = op == SRD_RMA_MARK || op == SRD_RMA_WAIT;
	u32 data = op == SRD_RMA_IWRITE ? len : 0;	/* bytes after *w */
	struct srd_job *j;
	struct srd_ka *ka;
	int status = ECONNRESET;

	if (op < SCIF_XPRT_RMA_READ || op > SRD_RMA_WAIT || !len ||
	    len > SCIF_RDMA_RMA_MAX || !rid ||
	    (op == SCIF_XPRT_RMA_SIGNAL && (len != 8 || roff & 7)) ||
	    (inl && (len > SCIF_RDMA_RMA_INLINE || w->iova || w->rkey)) ||
	    (fence && (len != 4 || w->iova || w->rkey ||
		       roff > (op == SRD_RMA_WAIT ? SRD_MARK_MAX : 0))) ||
	    (u64)plen != sizeof(*w) + (u64)data) {
		srd_bad_frame(peer, "bad RMA_REQ", sizeof(*h) + plen);
		status = EINVAL;
		goto answer;
	}
	if (check_add_overflow(roff, (u64)len, &end) || (s64)end < 0) {
		status = ENXIO;
		goto answer;
	}
	if (!c) {
		/*
		 * A connection we do not have, counted (step 17): an honest
		 * peer sends nothing after its CLOSE, and its id is free here
		 * only once that came.  One that is ending is no fault.
		 */
		if (!known)
			srd_bad_frame(peer, "RMA_REQ for no connection",
				      sizeof(*h) + plen);
		goto answer;
	}
	ka = srd_rma_use(peer, gen);
	if (!ka)
		return;	/* the link ended: so does the request */
	/* an honest peer has at most SCIF_RDMA_RMA_REQS outstanding */
	if (atomic_inc_return(&ka->rma_jobs) > SCIF_RDMA_RMA_REQS) {
		status = EBUSY;
		goto drop;
	}
	/* data: at most SCIF_RDMA_RMA_INLINE, for one of RMA_REQS jobs */
	j = kzalloc(struct_size(j, data, data), GFP_KERNEL_ACCOUNT);
	if (!j) {
		status = ENOMEM;
		goto drop;
	}
	memcpy(j->data, w + 1, data);
	j->ep = srd_proxy_peer(c->proxy);
	if (!j->ep) {
		kfree(j);
		goto drop;
	}
	INIT_WORK(&j->work, srd_job_fn);
	j->peer = peer;
	j->ka = ka;
	j->gen = gen;
	j->lid = c->lid;
	j->rid = rid;
	j->id = id;
	j->op = op;
	j->roff = roff;
	j->iova = be64_to_cpu(w->iova);
	j->rkey = be32_to_cpu(w->rkey);
	j->len = len;
	queue_work(op == SRD_RMA_WAIT ? srd_fence_wq : srd_rma_wq, &j->work);
	return;
drop:
	atomic_dec(&ka->rma_jobs);
	srd_rma_unuse(ka);
answer:
	srd_rma_answer(peer, gen, rid, c ? c->lid : 0, id, status, NULL);
}

/*
 * RMA_DONE (step 21): the answer to one of our requests, its payload
 * (h->len bytes after @h, step 10: at most SCIF_RDMA_RMA_INLINE) the data
 * of an inline read that succeeded, exactly its length; nothing else
 * carries any.  The data is copied under the table's lock: the waiter
 * (and the pages it holds) is there until it took the request out.
 */
void srd_rma_rx_done(struct srd_peer *peer, u64 gen, const struct srd_hdr *h)
{
	u32 id = be32_to_cpu(h->arg), status = be32_to_cpu(h->arg2);
	u32 dst = be32_to_cpu(h->dst), plen = be32_to_cpu(h->len);
	const char *why = "unexpected RMA_DONE";
	struct srd_req *req;
	struct srd_ka *ka;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (ka && peer->gen == gen) {
		xa_lock(&ka->rma_reqs);
		req = xa_load(&ka->rma_reqs, id);
		if (xa_is_value(req)) {
			/* its caller was killed and gave up: late, not bad */
			if (xa_to_value(req) == dst) {
				why = NULL;
				__xa_erase(&ka->rma_reqs, id);
				ka->rma_tombs--;
				atomic_inc(&srd_rma_late);
			}
		} else if (req && req->lid == dst && !req->done) {
			why = NULL;
			if (plen != (req->iread && !status ? req->len : 0)) {
				why = "bad RMA_DONE payload";
				status = ECONNRESET;	/* the request fails */
			} else if (plen && req->ans) {
				memcpy(req->ans, h + 1, plen);
			} else if (plen) {
				srd_to_pages(req->pages, req->off,
					     (const u8 *)(h + 1), plen);
			}
			req->status = status;
			WRITE_ONCE(req->done, true);
			wake_up_all(&ka->rma_wq);
		}
		xa_unlock(&ka->rma_reqs);
	}
	mutex_unlock(&peer->lock);
	if (why)
		srd_bad_frame(peer, why, sizeof(*h) + plen);
}

/* ---- initiator (step 19, 21) ---- */

/* The errno an initiator reports for a target's status. */
static int srd_rma_errno(u32 status)
{
	switch (status) {
	case 0:
		return 0;
	case ENXIO:
	case EACCES:
	case ENOMEM:
		return -status;
	default:
		return -ECONNRESET;
	}
}

/*
 * Take one of the link's request slots: true if taken.  Lock-free: it is
 * the condition of wait_event_killable(), evaluated after the task state
 * is set, where a mutex must not be taken (a debug kernel warns, and a
 * mutex that sleeps there leaves the task running: the wait spins).
 */
static bool srd_req_tryslot(struct srd_ka *ka)
{
	return atomic_add_unless(&ka->rma_nreq, 1, SCIF_RDMA_RMA_REQS);
}

static void srd_req_unslot(struct srd_ka *ka)
{
	/* only a wait for a slot ends here, and only when all were taken */
	if (atomic_dec_return(&ka->rma_nreq) == SCIF_RDMA_RMA_REQS - 1)
		wake_up_all(&ka->rma_wq);
}

/*
 * Start request @req of connection @lid (serial @serial), a slot of the
 * link taken: at most ka->rma_pages pages of ours; or, for
 * SCIF_XPRT_RMA_SIGNAL (@pages NULL), 8 bytes of value @off; or, for
 * SRD_RMA_IREAD/IWRITE, at most SCIF_RDMA_RMA_INLINE bytes of @pages, no
 * MR (a write's data copied into the RMA_REQ now, a read's copied from
 * the RMA_DONE by srd_rma_rx_done()); or, for
 * SRD_RMA_MARK/WAIT (@pages NULL, @off 0, @len 4), a peer fence, a
 * mark's answer into @ans.  Map and register the pages, send RMA_REQ
 * unless the connection ended meanwhile (-ECONNRESET: its ids may be a
 * new connection's by the time the far host reads the request).  0 if the
 * request is out (srd_req_wait() then ends it), else everything is
 * released, the slot included.
 */
static int srd_req_start(struct srd_ka *ka, u64 gen, u32 lid, u32 rid,
			 u64 serial, int op, u64 roff, struct page **pages,
			 u64 off, u32 len, u8 *ans, struct srd_req *req)
{
	struct srd_peer *peer = ka->peer;
	bool rd = op == SCIF_XPRT_RMA_READ;
	bool inl = op == SRD_RMA_IREAD || op == SRD_RMA_IWRITE;
	u32 data = op == SRD_RMA_IWRITE ? len : 0;
	struct srd_map *m = &req->m;
	bool mr = pages && !inl;
	struct srd_rma_wire *w;
	struct srd_tx *tx;
	struct srd_hdr *h;
	int ret;

	memset(req, 0, sizeof(*req));
	req->lid = lid;
	req->inl = inl;
	if (op == SRD_RMA_IREAD || op == SRD_RMA_MARK) {
		/* set before the request is in the table (xa_alloc) */
		req->iread = true;
		req->pages = pages;
		req->ans = ans;
		req->off = off;
		req->len = len;
	}
	if (READ_ONCE(ka->dead)) {
		ret = -ECONNRESET;
		goto out;
	}
	if (mr) {
		ret = srd_map(ka, m, pages, off, len, ka->rma_pages,
			      rd ? DMA_FROM_DEVICE : DMA_TO_DEVICE);
		if (!ret)
			ret = srd_reg(ka, m, rd ? IB_ACCESS_LOCAL_WRITE |
							 IB_ACCESS_REMOTE_WRITE :
						  IB_ACCESS_REMOTE_READ);
		if (ret)
			goto out;
	}
	if (fatal_signal_pending(current)) {
		ret = -EINTR;	/* killed meanwhile: the request never leaves */
		goto out;
	}
	ret = xa_alloc_cyclic(&ka->rma_reqs, &req->id, req, xa_limit_32b,
			      &ka->rma_next, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	tx = srd_tx_alloc(SRD_F_RMA_REQ, rid, lid, sizeof(*w) + data);
	if (!tx)
		goto erase;
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(req->id);
	h->arg2 = cpu_to_be32(op);
	w = (struct srd_rma_wire *)(h + 1);
	w->roff = cpu_to_be64(roff);
	/* a signal's value in iova; an inline request has no MR: zero */
	w->iova = cpu_to_be64(mr ? m->mr->iova : inl ? 0 : off);
	w->rkey = cpu_to_be32(mr ? m->mr->rkey : 0);
	w->len = cpu_to_be32(len);
	if (data)
		srd_from_pages((u8 *)(w + 1), pages, off, data);
	/*
	 * A call goes on after its endpoint's close (an asynchronous one in
	 * a queue runner): once the CLOSE is out, nothing more of it may be.
	 */
	mutex_lock(&srd_msg_mutex);
	if (srd_conn_live(peer, gen, lid, serial)) {
		ret = srd_xmit(peer, gen, tx);
	} else {
		kfree(tx);
		ret = -ECONNRESET;
	}
	mutex_unlock(&srd_msg_mutex);
	if (!ret) {
		if (inl)
			atomic_inc(&srd_rma_inline_sent);
		return 0;
	}
erase:
	xa_erase(&ka->rma_reqs, req->id);
out:
	srd_unmap(ka, m);
	srd_req_unslot(ka);
	return ret;
}

/*
 * Start direct part @req of a read (@write false) or write, a slot of the
 * link taken (step 25): if a key of connection @serial for that holds far
 * offset @roff, RDMA READs or WRITEs of up to *@len bytes (clipped to the
 * key) between @pages from byte @off of pages[0] (srd_post_sg(): no
 * registration) and the window.  -ENOENT if no key holds @roff (the slot
 * still taken: the caller sends a request instead); 0 if RDMAs are out
 * (srd_req_wait() then ends it, and reports a failure to post the rest),
 * with the bytes they move in *@len; else everything is released, the
 * slot included.
 */
static int srd_req_direct(struct srd_ka *ka, u64 gen, u64 serial, u64 roff,
			  struct page **pages, unsigned int off, u32 *len,
			  bool write, struct srd_req *req)
{
	unsigned int posted = 0;
	u32 rkey, nwr;
	u64 raddr;
	int ret;

	memset(req, 0, sizeof(*req));
	req->key = srd_key_get(ka, serial, write ? SRD_KEY_WRITE : SRD_KEY_READ,
			       roff, len, &raddr, &rkey);
	if (!req->key)
		return -ENOENT;
	req->r.ka = ka;
	req->gen = gen;
	req->write = write;
	ret = srd_map_local(ka, &req->m, pages, off, *len, ka->rma_pages,
			    !write);
	if (!ret && fatal_signal_pending(current))
		ret = -EINTR;
	/*
	 * Up to SRD_DIRECT_WRS RDMAs of at least SRD_DIRECT_WR_MIN bytes
	 * (more if the SGE limit cuts them), all in flight at once, as
	 * perftest keeps several: the owner's device can serve one while
	 * the next is on its way.
	 */
	nwr = min_t(u32, SRD_DIRECT_WRS, DIV_ROUND_UP(*len, SRD_DIRECT_WR_MIN));
	if (!ret)
		ret = srd_post_sg(&req->r, &req->m, DIV_ROUND_UP(*len, nwr),
				  write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ,
				  raddr, rkey, &posted);
	req->status = ret;	/* RDMAs out: srd_req_direct_end() says it */
	if (!ret || posted)
		return 0;
	srd_unmap(ka, &req->m);
	srd_key_put(ka, gen, req->key);
	srd_req_unslot(ka);
	return ret;
}

/*
 * End direct part @req: wait for its RDMAs (a killed caller only for
 * SRD_RMA_KILL_WAIT, then the link ends, srd_rwr_wait()), unmap, let the
 * key and the slot go.  A failed RDMA ended the link: -ECONNRESET; one
 * not posted: the error of its posting.
 */
static int srd_req_direct_end(struct srd_ka *ka, struct srd_req *req)
{
	int ret = req->status;

	srd_rwr_wait(&req->r);
	if (!ret && (req->r.status || READ_ONCE(ka->dead)))
		ret = -ECONNRESET;
	srd_unmap(ka, &req->m);
	srd_key_put(ka, req->gen, req->key);
	srd_req_unslot(ka);
	if (!ret)
		atomic_inc(req->write ? &srd_rma_direct_writes :
					&srd_rma_direct_reads);
	return ret;
}

/*
 * Take @req out of the link's table.  A request still unanswered on a
 * live link (its caller killed, step 22) leaves a tombstone, so that the
 * target's late RMA_DONE is known for what it is; past SRD_RMA_TOMBS of
 * them the id just goes (that answer then counts as a bad frame).
 */
static void srd_req_forget(struct srd_ka *ka, struct srd_req *req)
{
	xa_lock(&ka->rma_reqs);
	if (!req->done && !READ_ONCE(ka->dead) &&
	    ka->rma_tombs < SRD_RMA_TOMBS) {
		/* in place of an entry: no allocation, cannot fail */
		__xa_store(&ka->rma_reqs, req->id, xa_mk_value(req->lid),
			   GFP_NOWAIT);
		ka->rma_tombs++;
	} else {
		__xa_erase(&ka->rma_reqs, req->id);
	}
	xa_unlock(&ka->rma_reqs);
}

static bool srd_req_polled(const void *arg)
{
	return READ_ONCE(((const struct srd_req *)arg)->done);
}

/*
 * Request @req, with an MR, is still unanswered at its killed caller's
 * deadline: the target may be moving data through the MR right now, and
 * deregistering it does not stop an RDMA READ answer the device already
 * took (Soft-iWARP's siw_dereg_mr() waits for no reader), so the pages,
 * given back, could still go to the far host.  End the link and wait for
 * its QP to be destroyed (ka->dead) or the answer to come (step 22).
 */
static void srd_req_unanswered(struct srd_ka *ka, struct srd_req *req)
{
	struct srd_peer *peer = ka->peer;

	mutex_lock(&peer->lock);
	if (peer->res.ka == ka && peer->state != SRD_DOWN &&
	    !READ_ONCE(req->done)) {
		atomic_inc(&srd_rma_unanswered);
		srd_link_fail(peer, "RMA request unanswered", -ETIMEDOUT);
	}
	mutex_unlock(&peer->lock);
	wait_event(ka->rma_wq, READ_ONCE(req->done) || READ_ONCE(ka->dead));
}

/*
 * Wait for the RMA_DONE of @req (started) and end it: deregister, unmap,
 * give its slot back; 0 or the call's errno.  Killed, it keeps waiting
 * until *@deadline (set by the first killed wait of the call, 0 before):
 * deregistering the MR while the target still moves data into or out of
 * it would fail that RDMA with a remote access error, which resets the
 * whole link; the target answers every request, so only a hung one is
 * still out then: one with an MR ends the link (srd_req_unanswered()),
 * an inline one leaves a tombstone (srd_req_forget()).
 */
static int srd_req_wait(struct srd_ka *ka, struct srd_req *req,
			unsigned long *deadline)
{
	long left;
	int ret;

	if (req->key)
		return srd_req_direct_end(ka, req);
	/* a small call: its RMA_DONE may be a few us away (srd_poll()) */
	if (req->inl)
		srd_poll(srd_req_polled, req);
	if (wait_event_killable(ka->rma_wq, READ_ONCE(req->done) ||
					    READ_ONCE(ka->dead))) {
		if (!*deadline)
			*deadline = jiffies + SRD_RMA_KILL_WAIT;
		/* read jiffies once: a wrapped difference would wait forever */
		left = (long)(*deadline - jiffies);
		if (left > 0)
			wait_event_timeout(ka->rma_wq, READ_ONCE(req->done) ||
						       READ_ONCE(ka->dead),
					   left);
		/* an inline request has no MR: a tombstone is enough */
		if (req->m.mr && !READ_ONCE(req->done) &&
		    !READ_ONCE(ka->dead))
			srd_req_unanswered(ka, req);
		ret = -EINTR;
	} else {
		ret = READ_ONCE(req->done) ? 0 : -ECONNRESET;
	}
	srd_req_forget(ka, req);
	/* the DONE handler let go of req under the xa_lock */
	if (!ret)
		ret = srd_rma_errno(req->status);
	srd_unmap(ka, &req->m);
	srd_req_unslot(ka);
	return ret;
}

/*
 * The link and connection ids of proxy @p's live connection, with an
 * rma_users reference on the link; NULL if there is none.
 */
static struct srd_ka *srd_rma_conn(struct scif_endpt *p, u64 *gen, u32 *lid,
				   u32 *rid, u64 *serial)
{
	struct srd_peer *peer;
	struct srd_conn *c;

	mutex_lock(&srd_msg_mutex);
	c = p->xprt;
	peer = srd_peer_of[p->node->id];
	if (!c || c->state != SRDC_LIVE || !peer) {
		mutex_unlock(&srd_msg_mutex);
		return NULL;
	}
	*lid = c->lid;
	*rid = c->rid;
	*gen = c->gen;
	*serial = c->serial;
	mutex_unlock(&srd_msg_mutex);
	return srd_rma_use(peer, *gen);
}

/*
 * One request with no pages to proxy @p's far endpoint (a signal or a
 * peer fence: srd_req_start()), sent and answered; 0 or the errno.
 */
static int srd_req_one(struct scif_endpt *p, int op, u64 roff, u64 off,
		       u32 len, u8 *ans)
{
	unsigned long deadline = 0;
	struct srd_req req;
	struct srd_ka *ka;
	u32 lid, rid;
	u64 gen, serial;
	int ret;

	ka = srd_rma_conn(p, &gen, &lid, &rid, &serial);
	if (!ka)
		return -ECONNRESET;
	if (wait_event_killable(ka->rma_wq, srd_req_tryslot(ka) ||
					    READ_ONCE(ka->dead))) {
		ret = -EINTR;
	} else if (READ_ONCE(ka->dead)) {
		ret = -ECONNRESET;	/* a slot taken or not: the link is gone */
	} else {
		ret = srd_req_start(ka, gen, lid, rid, serial, op, roff, NULL,
				    off, len, ans, &req);
		if (!ret)
			ret = srd_req_wait(ka, &req, &deadline);
	}
	srd_rma_unuse(ka);
	return ret;
}

/* The transport's signal operation (scif_transport.h). */
int srd_signal(struct scif_endpt *ep, struct scif_endpt *p, u64 roff,
	       u64 val)
{
	return srd_req_one(p, SCIF_XPRT_RMA_SIGNAL, roff, val, 8, NULL);
}

/*
 * The transport's fence operation (scif_transport.h): a peer fence mark
 * (op 6, the far endpoint's mark comes back) or wait (op 7), step 20.
 */
int srd_fence(struct scif_endpt *ep, struct scif_endpt *p, int op, int *mark)
{
	__be32 ans = 0;
	int ret;

	if (op == SCIF_XPRT_FENCE_WAIT)
		return srd_req_one(p, SRD_RMA_WAIT, (u32)*mark & SRD_MARK_MAX,
				   0, sizeof(ans), NULL);
	ret = srd_req_one(p, SRD_RMA_MARK, 0, 0, sizeof(ans), (u8 *)&ans);
	if (!ret)
		*mark = (int)(be32_to_cpu(ans) & SRD_MARK_MAX);
	return ret;
}

/*
 * The transport's rma operation (scif_transport.h): up to SRD_RMA_PIPE
 * requests of the call in flight, started in order and reaped in order;
 * the first error (in the order of the range) is the call's, and every
 * request started is waited for and released whatever happens.  A call
 * with requests out never blocks for a slot of the link (it reaps its
 * oldest instead), so calls sharing the link's slots cannot deadlock.
 * SCIF_RMA_ORDERED: the last request, which carries the last bytes, is
 * sent only once every earlier one completed.  A call of at most
 * SCIF_RDMA_RMA_INLINE bytes is one inline request (SRD_RMA_IREAD or
 * SRD_RMA_IWRITE), or one RDMA READ or WRITE with a key.  A part of a
 * larger call that starts inside a key for its direction is a direct
 * part (RDMA READs or WRITEs) up to the key's end at most, in the
 * pipeline like a request.  A request of at most SCIF_RDMA_RMA_INLINE
 * bytes is inline too: only the tail after a direct part can be one (a
 * request starting at a page runs to its chunk's end, a call's first
 * one is the call's), and by an MR the far host's READ of a few bytes
 * crossing a page of it is what Soft-iWARP's siw_try_1seg() corrupts.
 */
int srd_rma(struct scif_endpt *ep, struct scif_endpt *p, int op, u64 roff,
	    struct page **pages, unsigned int first_off, size_t len,
	    u32 flags)
{
	bool ordered = flags & SCIF_ABI_RMA_ORDERED;
	bool inl = len <= SCIF_RDMA_RMA_INLINE;
	int iop = op == SCIF_XPRT_RMA_READ ? SRD_RMA_IREAD : SRD_RMA_IWRITE;
	struct srd_req req[SRD_RMA_PIPE];
	unsigned int head = 0, tail = 0;	/* requests started, reaped */
	unsigned long deadline = 0;
	int ret, err = 0, serr = 0;	/* a request's error, not starting */
	struct srd_ka *ka;
	size_t done = 0;	/* bytes in the requests started */
	u32 lid, rid;
	u64 gen, serial;

	ka = srd_rma_conn(p, &gen, &lid, &rid, &serial);
	if (!ka)
		return -ECONNRESET;
	if (inl) {
		/* one RDMA READ or WRITE if a key covers it (step 25) */
		ret = srd_direct_small(ka, gen, serial, roff, pages, first_off,
				       len, op == SCIF_XPRT_RMA_WRITE, ordered);
		if (ret != -ENOENT) {
			srd_rma_unuse(ka);
			return ret;
		}
	}
	while (tail != head || (done < len && !err && !serr)) {
		size_t pos = first_off + done;
		unsigned int off = pos & ~PAGE_MASK;
		/* an inline request needs no MR: the whole call at once */
		u32 n = inl ? len :
			min_t(size_t, len - done,
			      (size_t)ka->rma_pages * PAGE_SIZE - off);
		bool start = done < len && !err && !serr &&
			     head - tail < SRD_RMA_PIPE &&
			     !(ordered && done + n == len && tail != head);

		if (start && done && fatal_signal_pending(current)) {
			serr = -EINTR;	/* killed: start nothing more */
			continue;	/* then reap what is out, if any */
		}
		if (start && tail == head) {
			/* nothing of ours out: wait for a slot of the link */
			if (wait_event_killable(ka->rma_wq,
						srd_req_tryslot(ka) ||
						READ_ONCE(ka->dead))) {
				serr = -EINTR;
				continue;
			}
			if (READ_ONCE(ka->dead)) {
				serr = -ECONNRESET;
				continue;	/* a slot it may hold dies too */
			}
		} else if (start && !srd_req_tryslot(ka)) {
			start = false;	/* the link is busy: reap ours */
		}
		if (start) {
			serr = -ENOENT;
			/* inside a key: RDMA READs or WRITEs (step 25) */
			if (!inl)
				serr = srd_req_direct(ka, gen, serial,
						      roff + done,
						      pages + (pos >> PAGE_SHIFT),
						      off, &n,
						      op == SCIF_XPRT_RMA_WRITE,
						      &req[head % SRD_RMA_PIPE]);
			if (serr == -ENOENT)
				serr = srd_req_start(ka, gen, lid, rid, serial,
						     n <= SCIF_RDMA_RMA_INLINE ?
						     iop : op, roff + done,
						     pages + (pos >> PAGE_SHIFT),
						     off, n, NULL,
						     &req[head % SRD_RMA_PIPE]);
			if (!serr) {
				head++;
				done += n;
			}
			continue;
		}
		ret = srd_req_wait(ka, &req[tail % SRD_RMA_PIPE], &deadline);
		tail++;
		if (ret && !err)
			err = ret;
	}
	srd_rma_unuse(ka);
	/* the earlier requests' errors first: they precede a failed start */
	return err ?: serr;
}
