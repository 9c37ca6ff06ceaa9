// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: direct reads and writes (scif_rdma.h steps 23-25,
 * docs/transport.md "Direct reads and writes").
 *
 * A read or write across hosts is otherwise a request and its answer: two
 * SENDs in a row, with an RDMA WRITE or READ by the owner between them
 * for more than a frame's worth.  Here the host owning a window, once it
 * served a read or write of it, gives the peer keys: chunks of the window
 * (at most ka->rma_pages pages, aligned in the window), registered for
 * remote read, write or both, as the window's prot and the owner's
 * direct_reads and direct_writes allow.  The peer's later reads and
 * writes inside those chunks are RDMA READs and WRITEs (one through a
 * bounce buffer for a small call, up to SRD_DIRECT_WRS per chunk straight
 * between the caller's pages and the window for a larger one;
 * scif_rdma_rma.c), served by the owner's device alone, as perftest's
 * are.
 * The owner revokes a key before the window's unregistration returns
 * (its endpoint's close revokes without waiting): REVOKE, the peer
 * answers once its RDMAs with that key completed, and only then is the MR
 * invalidated and the window let go.  Until then the peer's keepalive
 * says it is getting there each second one of its RDMAs completed (a busy
 * REVOKE_ACK, srd_ka_progress()), which gives the link's revocations
 * SRD_KEY_REVOKE_WAIT more, up to SRD_KEY_REVOKE_MAX.  A peer that does
 * not answer within that loses its link: the key is freed once the
 * link's QP is destroyed, as no device can touch the pages then.  Not
 * before: an MR's deregistration does not stop Soft-iWARP from sending
 * the answer to a READ it already took (the pages, freed, went out to the
 * peer: KASAN in a debug-kernel pair run).
 *
 * Owner side: struct srd_xkey, on srd_xkeys under srd_key_mutex.
 * Peer side: struct srd_rkey, in ka->keys_in under its xa_lock.
 * Order: srd_msg_mutex, srd_key_mutex, a peer's mutex, xa_lock.
 */

#include <linux/dma-mapping.h>

#include "scif_rdma.h"

/* how long an owner waits for a reader's REVOKE_ACK or its progress */
#define SRD_KEY_REVOKE_WAIT	(5 * HZ)
/* how long, most, however the reader shows progress */
#define SRD_KEY_REVOKE_MAX	(60 * HZ)
/* read keys per link in each direction, most */
#define SRD_KEYS_MAX		256

bool srd_direct_reads = true;
module_param_named(direct_reads, srd_direct_reads, bool, 0644);
MODULE_PARM_DESC(direct_reads,
		 "give peer hosts read keys for direct reads (default on)");
bool srd_direct_writes = true;
module_param_named(direct_writes, srd_direct_writes, bool, 0644);
MODULE_PARM_DESC(direct_writes,
		 "give peer hosts write keys for direct writes (default on)");

/*
 * reads and writes (or parts of one) this host did directly, our live
 * keys (sysfs)
 */
atomic_t srd_rma_direct_reads = ATOMIC_INIT(0);
atomic_t srd_rma_direct_writes = ATOMIC_INIT(0);
atomic_t srd_keys_live = ATOMIC_INIT(0);
/* revocations unanswered past SRD_KEY_REVOKE_WAIT, their link ended (sysfs) */
atomic_t srd_keys_unanswered = ATOMIC_INIT(0);

/* A key of ours: one chunk of a window, reachable by the peer host. */
struct srd_xkey {
	struct list_head link;		/* srd_xkeys */
	struct srd_peer *peer;
	struct srd_ka *ka;		/* an rma_users reference */
	u64 gen;
	u32 id;				/* unique among the link's */
	u32 lid;			/* the connection: our id */
	struct scif_remote_win rw;	/* the window, counted */
	unsigned long first;		/* the chunk's first page in it */
	struct srd_map m;		/* its pages, registered */
	unsigned int access;		/* SRD_KEY_READ, SRD_KEY_WRITE */
	bool revoking;			/* REVOKE sent (or not sendable) */
	bool unanswered;		/* past its deadline: link ended */
	unsigned long revoked_at;	/* REVOKE sent: the MAX counts */
	unsigned long deadline;		/* of the revocation */
};

/* A key the peer gave us (ka->keys_in). */
struct srd_rkey {
	u32 id;
	unsigned int access;		/* SRD_KEY_READ, SRD_KEY_WRITE */
	u64 serial;			/* the connection it is for */
	u64 roff, len;			/* in the far registered space */
	u64 iova;
	u32 rkey;
	unsigned int users;		/* reads in flight with it */
	bool revoked;			/* out of keys_in: last user frees */
	struct list_head busy;		/* ka->keys_busy while revoked, used */
};

static DEFINE_MUTEX(srd_key_mutex);
static LIST_HEAD(srd_xkeys);
static DECLARE_WAIT_QUEUE_HEAD(srd_key_wq);
/* revocations answered or links dead: srd_windows_gone() looks again */
static atomic_t srd_key_events = ATOMIC_INIT(0);
/*
 * Revoked keys taken off srd_xkeys (under srd_key_mutex) and not yet
 * freed: srd_keys_expire() counts them as left, so that no unregistration
 * returns while such a key's MR is still registered.
 */
static atomic_t srd_keys_dying = ATOMIC_INIT(0);
static void srd_key_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(srd_key_reaper, srd_key_reap);

/*
 * Send a frame of @type with @id in arg, @arg2, and @w (if not NULL) as
 * its payload: 0 or -errno.
 */
static int srd_key_send(struct srd_peer *peer, u64 gen, int type, u32 rid,
			u32 lid, u32 id, u32 arg2, const struct srd_rma_wire *w)
{
	struct srd_tx *tx = srd_tx_alloc(type, rid, lid, w ? sizeof(*w) : 0);
	struct srd_hdr *h;

	if (!tx)
		return -ENOMEM;
	h = (struct srd_hdr *)tx->buf;
	h->arg = cpu_to_be32(id);
	h->arg2 = cpu_to_be32(arg2);
	if (w)
		memcpy(h + 1, w, sizeof(*w));
	return srd_xmit(peer, gen, tx);
}

static void srd_xkey_free(struct srd_xkey *x)
{
	srd_unmap(x->ka, &x->m);	/* ib_dereg_mr() invalidates the key */
	scif_remote_window_put(&x->rw);
	srd_rma_unuse(x->ka);
	atomic_dec(&srd_keys_live);
	kfree(x);
}

/* ---- owner (step 23) ---- */

/* @x's chunk already has a live key on its connection.  srd_key_mutex. */
static bool srd_xkey_dup(struct srd_ka *ka, u32 lid, struct srd_xkey *x)
{
	struct srd_xkey *y;

	list_for_each_entry(y, &srd_xkeys, link)
		if (y->ka == ka && y->lid == lid && y->rw.win == x->rw.win &&
		    y->first == x->first && !y->revoking)
			return true;
	return false;
}

/*
 * The access a key of a window of @prot gives: reads if the window is
 * readable and direct_reads on, writes if writable and direct_writes on.
 */
static unsigned int srd_key_access(int prot)
{
	unsigned int access = 0;

	if ((prot & SCIF_ABI_PROT_READ) && READ_ONCE(srd_direct_reads))
		access |= SRD_KEY_READ;
	if ((prot & SCIF_ABI_PROT_WRITE) && READ_ONCE(srd_direct_writes))
		access |= SRD_KEY_WRITE;
	return access;
}

/*
 * Give the peer a key for the chunk of @ep's window holding offset @at
 * (connection @lid, the peer's @rid), unless it has one, the window
 * allows nothing srd_key_access() gives or the link has SRD_KEYS_MAX.
 * The end of that chunk in the registered space, or 0 if no window
 * holds @at.
 */
static u64 srd_key_expose_chunk(struct srd_peer *peer, struct srd_ka *ka,
				u64 gen, u32 lid, u32 rid,
				struct scif_endpt *ep, u64 at)
{
	struct srd_rma_wire w;
	struct srd_xkey *x;
	struct srd_conn *c;
	unsigned long page, npages;
	u64 start, end = 0;
	bool dup = false;

	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x)
		return 0;
	if (scif_remote_window_get(ep, at, &x->rw)) {
		kfree(x);
		return 0;
	}
	x->access = srd_key_access(x->rw.prot);
	page = (at - x->rw.offset) >> PAGE_SHIFT;
	x->first = page - page % ka->rma_pages;
	npages = min_t(unsigned long, ka->rma_pages,
		       x->rw.npages - x->first);
	start = x->rw.offset + ((u64)x->first << PAGE_SHIFT);
	end = start + (npages << PAGE_SHIFT);
	/* the common case, a chunk with a key: nothing mapped for nothing */
	mutex_lock(&srd_key_mutex);
	dup = srd_xkey_dup(ka, lid, x);
	mutex_unlock(&srd_key_mutex);
	if (dup || !x->access || READ_ONCE(ka->xkeys) >= SRD_KEYS_MAX)
		goto put;
	/*
	 * Mapped and registered outside the mutex: it waits for the CQ.  A
	 * write key's pages stay mapped both ways while the peer may write
	 * (a coherent device: nothing to sync, as for any user MR).
	 */
	if (srd_map(ka, &x->m, x->rw.pages + x->first, 0,
		    npages << PAGE_SHIFT, ka->rma_pages,
		    x->access & SRD_KEY_WRITE ? DMA_BIDIRECTIONAL :
						DMA_TO_DEVICE) ||
	    srd_reg(ka, &x->m,
		    (x->access & SRD_KEY_READ ? IB_ACCESS_REMOTE_READ : 0) |
		    (x->access & SRD_KEY_WRITE ? IB_ACCESS_LOCAL_WRITE |
						 IB_ACCESS_REMOTE_WRITE : 0)))
		goto unmap;
	/* the connection still live: its end revokes (srd_conn_free()) */
	mutex_lock(&srd_msg_mutex);
	c = xa_load(&peer->conns, lid);
	if (!c || c->gen != gen || c->state != SRDC_LIVE) {
		mutex_unlock(&srd_msg_mutex);
		goto unmap;
	}
	mutex_lock(&srd_key_mutex);
	/*
	 * Unregistered meanwhile: srd_windows_gone() ran or runs after we
	 * drop the mutex and must not miss it, nor must we give it out.  A
	 * parallel read of the same chunk may have given one meanwhile.
	 */
	if (scif_remote_window_gone(&x->rw) || ka->xkeys >= SRD_KEYS_MAX ||
	    READ_ONCE(ka->dead) || srd_xkey_dup(ka, lid, x)) {
		mutex_unlock(&srd_key_mutex);
		mutex_unlock(&srd_msg_mutex);
		goto unmap;
	}
	x->peer = peer;
	x->ka = ka;
	x->gen = gen;
	x->lid = lid;
	if (!++ka->xkey_next)
		++ka->xkey_next;
	x->id = ka->xkey_next;
	atomic_inc(&ka->rma_users);
	atomic_inc(&srd_keys_live);
	ka->xkeys++;
	list_add_tail(&x->link, &srd_xkeys);
	w.roff = cpu_to_be64(start);
	w.iova = cpu_to_be64(x->m.mr->iova);
	w.rkey = cpu_to_be32(x->m.mr->rkey);
	w.len = cpu_to_be32(npages << PAGE_SHIFT);
	/* not sent (link gone): srd_keys_link_dead() frees it */
	srd_key_send(peer, gen, SRD_F_RKEY, rid, lid, x->id, x->access - 1,
		     &w);
	mutex_unlock(&srd_key_mutex);
	mutex_unlock(&srd_msg_mutex);
	return end;
unmap:
	srd_unmap(ka, &x->m);
put:
	scif_remote_window_put(&x->rw);
	kfree(x);
	return end;
}

/*
 * After serving a read or write of [@off, @off + @len) (inline or by
 * RDMA) for connection @lid (the peer's @rid) of endpoint @ep: keys for
 * the chunks holding its first and its last byte (a request spans at
 * most two).  The RKEYs go before the request's RMA_DONE, so the peer
 * has them for its next call.  Best effort: any failure leaves the peer
 * on the other path.
 */
void srd_key_expose(struct srd_peer *peer, struct srd_ka *ka, u64 gen,
		    u32 lid, u32 rid, struct scif_endpt *ep, u64 off, u32 len)
{
	u64 end;

	if ((!READ_ONCE(srd_direct_reads) && !READ_ONCE(srd_direct_writes)) ||
	    !ka->rma_pages || !len)
		return;
	end = srd_key_expose_chunk(peer, ka, gen, lid, rid, ep, off);
	if (end && off + len > end)
		srd_key_expose_chunk(peer, ka, gen, lid, rid, ep,
				     off + len - 1);
}

/*
 * Revoke the read keys on srd_xkeys that @match (step 24): REVOKE sent,
 * the reader's REVOKE_ACK frees them (srd_key_rx_ack()); one that cannot
 * be sent (the link is gone) is due at once (srd_keys_expire()).
 * srd_key_mutex held.
 */
static void srd_keys_revoke(bool (*match)(struct srd_xkey *x, void *arg),
			    void *arg)
{
	struct srd_xkey *x;

	list_for_each_entry(x, &srd_xkeys, link) {
		if (x->revoking || !match(x, arg))
			continue;
		x->revoking = true;
		x->revoked_at = jiffies;
		x->deadline = jiffies + SRD_KEY_REVOKE_WAIT;
		if (srd_key_send(x->peer, x->gen, SRD_F_REVOKE, 0, 0, x->id, 0,
				 NULL))
			x->deadline = jiffies;
	}
}

static bool srd_xkey_window_gone(struct srd_xkey *x, void *arg)
{
	return scif_remote_window_gone(&x->rw);
}

/*
 * A revocation of @x went unanswered past its deadline (srd_key_mutex
 * held): end its link, if still the live one, so that its QP is destroyed
 * and srd_keys_link_dead() frees the key.  Freeing it here, the link up,
 * would leave the pages to any READ the peer's device already asked of
 * ours.
 */
static void srd_key_unanswered(struct srd_xkey *x)
{
	struct srd_peer *peer = x->peer;
	struct srd_xkey *y;

	list_for_each_entry(y, &srd_xkeys, link)
		if (y->ka == x->ka && y->revoking)
			y->unanswered = true;
	atomic_inc(&srd_keys_unanswered);
	mutex_lock(&peer->lock);
	if (peer->res.ka == x->ka && peer->state != SRD_DOWN)
		srd_link_fail(peer, "read key revocation unanswered",
			      -ETIMEDOUT);
	mutex_unlock(&peer->lock);
}

/*
 * End the links of revocations whose deadline passed (their keys go with
 * the link, srd_keys_link_dead()); true if revocations are left.
 */
static bool srd_keys_expire(void)
{
	struct srd_xkey *x;
	bool left;

	mutex_lock(&srd_key_mutex);
	left = atomic_read(&srd_keys_dying) > 0;
	list_for_each_entry(x, &srd_xkeys, link) {
		if (!x->revoking)
			continue;
		left = true;
		if (!x->unanswered && time_after_eq(jiffies, x->deadline))
			srd_key_unanswered(x);
	}
	mutex_unlock(&srd_key_mutex);
	return left;
}

/*
 * Revocations nobody waits for (a close, a connection's end) expire here;
 * a deadline may move (progress), so look again every second.
 */
static void srd_key_reap(struct work_struct *work)
{
	if (srd_keys_expire())
		schedule_delayed_work(&srd_key_reaper, HZ);
}

/*
 * The transport's windows_gone operation (step 24): revoke every read key
 * of a window no longer registered.  With @wait (scif_unregister(), whose
 * caller holds no lock) wait until no revocation is left: each answered
 * (freed by srd_key_rx_ack()), its link dead (srd_keys_link_dead()) or
 * SRD_KEY_REVOKE_WAIT passed (freed here), so that when the call
 * returns the far host can read none of the pages.  Without (an
 * endpoint's release, which may run in our own receive path, where the
 * answer could never arrive) the answers free them, or the reaper.
 */
void srd_windows_gone(bool wait)
{
	int seen;

	mutex_lock(&srd_key_mutex);
	srd_keys_revoke(srd_xkey_window_gone, NULL);
	mutex_unlock(&srd_key_mutex);
	if (!wait) {
		schedule_delayed_work(&srd_key_reaper, SRD_KEY_REVOKE_WAIT);
		return;
	}
	for (;;) {
		seen = atomic_read(&srd_key_events);
		if (!srd_keys_expire())
			break;
		wait_event_timeout(srd_key_wq,
				   atomic_read(&srd_key_events) != seen,
				   HZ / 10);
	}
}

/* Module exit, every link gone (so every key freed): stop the reaper. */
void srd_keys_exit(void)
{
	cancel_delayed_work_sync(&srd_key_reaper);
}

struct srd_conn_key {
	struct srd_peer *peer;
	u64 gen;
	u32 lid;
};

static bool srd_xkey_of_conn(struct srd_xkey *x, void *arg)
{
	struct srd_conn_key *ck = arg;

	return x->peer == ck->peer && x->gen == ck->gen && x->lid == ck->lid;
}

/*
 * Connection @lid of @peer's link @gen ended (srd_msg_mutex held): revoke
 * its read keys; their answers free them.
 */
void srd_keys_conn_gone(struct srd_peer *peer, u64 gen, u32 lid)
{
	struct srd_conn_key ck = { .peer = peer, .gen = gen, .lid = lid };

	mutex_lock(&srd_key_mutex);
	srd_keys_revoke(srd_xkey_of_conn, &ck);
	mutex_unlock(&srd_key_mutex);
	schedule_delayed_work(&srd_key_reaper, SRD_KEY_REVOKE_WAIT);
}

/*
 * @ka's link is dead (QP and CQ gone, srd_rma_link_dead()): free its read
 * keys of ours (waiters in srd_windows_gone() look again and find them
 * gone).  They hold rma_users references: before the wait for those.
 */
void srd_keys_link_dead(struct srd_ka *ka)
{
	struct srd_xkey *x, *n;
	LIST_HEAD(done);
	int dying = 0;

	mutex_lock(&srd_key_mutex);
	list_for_each_entry_safe(x, n, &srd_xkeys, link)
		if (x->ka == ka) {
			ka->xkeys--;
			list_move(&x->link, &done);
			dying++;
		}
	atomic_add(dying, &srd_keys_dying);
	mutex_unlock(&srd_key_mutex);
	list_for_each_entry_safe(x, n, &done, link)
		srd_xkey_free(x);
	atomic_sub(dying, &srd_keys_dying);
	atomic_inc(&srd_key_events);
	wake_up_all(&srd_key_wq);
}

/*
 * The peer's read keys of dead link @ka, once no reader is left (they
 * hold rma_users, srd_rma_link_dead() waited for them).
 */
void srd_keys_in_free(struct srd_ka *ka)
{
	struct srd_rkey *k;
	unsigned long i;

	xa_for_each(&ka->keys_in, i, k)
		kfree(k);
	xa_destroy(&ka->keys_in);
}

/*
 * The reader of link @ka answered a revocation or showed progress on one
 * (srd_key_mutex held): every revocation of that link still waiting gets
 * SRD_KEY_REVOKE_WAIT more, up to SRD_KEY_REVOKE_MAX after its REVOKE.
 */
static void srd_keys_progress(struct srd_ka *ka)
{
	unsigned long next = jiffies + SRD_KEY_REVOKE_WAIT, max;
	struct srd_xkey *y;

	list_for_each_entry(y, &srd_xkeys, link) {
		if (y->ka != ka || !y->revoking || y->unanswered)
			continue;
		max = y->revoked_at + SRD_KEY_REVOKE_MAX;
		y->deadline = time_before(next, max) ? next : max;
	}
}

/*
 * REVOKE_ACK @id from @peer's link @gen (srd_msg_mutex): @busy, the
 * reader's progress (srd_keys_progress()), else free that key.
 */
static void srd_key_rx_ack(struct srd_peer *peer, u64 gen, u32 id, bool busy)
{
	struct srd_xkey *x, *found = NULL;

	mutex_lock(&srd_key_mutex);
	list_for_each_entry(x, &srd_xkeys, link)
		if (x->peer == peer && x->gen == gen && x->id == id &&
		    x->revoking) {
			found = x;
			srd_keys_progress(x->ka);
			if (busy)
				break;
			x->ka->xkeys--;
			list_del(&x->link);
			atomic_inc(&srd_keys_dying);
			break;
		}
	mutex_unlock(&srd_key_mutex);
	if (!found) {
		srd_bad_frame(peer, "unexpected REVOKE_ACK",
			      sizeof(struct srd_hdr));
		return;
	}
	if (busy)
		return;
	srd_xkey_free(found);
	atomic_dec(&srd_keys_dying);
	atomic_inc(&srd_key_events);
	wake_up_all(&srd_key_wq);
}

/* ---- reader (steps 23-25) ---- */

/*
 * RKEY on connection @c (NULL if not live): a chunk of the far window
 * space at roff, len bytes, reachable at iova with rkey for @wire_access
 * (0 reads, 1 writes, 2 both).  Checked, then kept for the connection's
 * calls; a connection that ended meanwhile is no error (the owner
 * revokes it later).
 */
static void srd_key_rx_rkey(struct srd_peer *peer, u64 gen, struct srd_conn *c,
			    u32 id, u32 wire_access,
			    const struct srd_rma_wire *w)
{
	u64 roff = be64_to_cpu(w->roff), len = be32_to_cpu(w->len), end;
	struct srd_rkey *k;
	struct srd_ka *ka;
	const char *why = NULL;

	if (!id || !len || len > SCIF_RDMA_RMA_MAX ||
	    wire_access > SRD_KEY_READ_WRITE - 1 ||
	    check_add_overflow(roff, len, &end) || (s64)end < 0)
		why = "bad RKEY";
	if (why || !c)
		goto out;
	k = kzalloc(sizeof(*k), GFP_KERNEL_ACCOUNT);
	if (!k)
		return;	/* best effort: the reads go the other way */
	k->id = id;
	k->access = wire_access + 1;
	k->serial = c->serial;
	k->roff = roff;
	k->len = len;
	k->iova = be64_to_cpu(w->iova);
	k->rkey = be32_to_cpu(w->rkey);
	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->gen != gen || READ_ONCE(ka->dead)) {
		mutex_unlock(&peer->lock);
		kfree(k);
		return;
	}
	xa_lock(&ka->keys_in);
	if (ka->nkeys_in >= SRD_KEYS_MAX)
		why = "RKEY beyond the limit";
	else if (__xa_insert(&ka->keys_in, id, k, GFP_ATOMIC))
		why = "RKEY id in use";
	else
		ka->nkeys_in++;
	xa_unlock(&ka->keys_in);
	mutex_unlock(&peer->lock);
	if (why)
		kfree(k);
out:
	if (why)
		srd_bad_frame(peer, why, sizeof(struct srd_hdr) + sizeof(*w));
}

/*
 * REVOKE @id: the key leaves keys_in at once (no new read takes it); the
 * answer goes now if no read of ours uses it, else from the last one
 * (srd_key_put()).  An unknown id (a key we did not keep) is answered.
 */
static void srd_key_rx_revoke(struct srd_peer *peer, u64 gen, u32 id)
{
	struct srd_rkey *k = NULL;
	struct srd_ka *ka;
	bool answer = true;

	mutex_lock(&peer->lock);
	ka = peer->res.ka;
	if (!ka || peer->gen != gen) {
		mutex_unlock(&peer->lock);
		return;
	}
	xa_lock(&ka->keys_in);
	k = __xa_erase(&ka->keys_in, id);
	if (k) {
		ka->nkeys_in--;
		k->revoked = true;
		answer = !k->users;
		if (answer)
			kfree(k);
		else
			list_add_tail(&k->busy, &ka->keys_busy);
	}
	xa_unlock(&ka->keys_in);
	mutex_unlock(&peer->lock);
	if (answer)
		srd_key_send(peer, gen, SRD_F_REVOKE_ACK, 0, 0, id, 0, NULL);
}

/*
 * RKEY, REVOKE, REVOKE_ACK from @peer (steps 23-24); @c the live
 * connection an RKEY names, else NULL.  srd_msg_mutex held (CQ work).
 */
void srd_key_rx(struct srd_peer *peer, u64 gen, struct srd_conn *c,
		const struct srd_hdr *h, const u8 *payload)
{
	u32 id = be32_to_cpu(h->arg);

	if (h->type == SRD_F_RKEY)
		srd_key_rx_rkey(peer, gen, c, id, be32_to_cpu(h->arg2),
				(const struct srd_rma_wire *)payload);
	else if (h->dst || h->src ||
		 be32_to_cpu(h->arg2) > (h->type == SRD_F_REVOKE ?
					 0 : SRD_REVOKE_BUSY))
		srd_bad_frame(peer, "bad REVOKE", sizeof(*h));
	else if (h->type == SRD_F_REVOKE)
		srd_key_rx_revoke(peer, gen, id);
	else
		srd_key_rx_ack(peer, gen, id,
			       be32_to_cpu(h->arg2) == SRD_REVOKE_BUSY);
}

/*
 * A key of connection @serial for @access (SRD_KEY_READ or SRD_KEY_WRITE)
 * holding far offset @roff, with a new user (srd_key_put() drops it);
 * *@len is clipped to the bytes the key covers from there, *@iova is
 * where @roff is in its MR, *@rkey its key.  NULL if none holds @roff.
 */
struct srd_rkey *srd_key_get(struct srd_ka *ka, u64 serial,
			     unsigned int access, u64 roff, u32 *len,
			     u64 *iova, u32 *rkey)
{
	struct srd_rkey *k;
	unsigned long i;

	xa_lock(&ka->keys_in);
	xa_for_each(&ka->keys_in, i, k)
		if (k->serial == serial && (k->access & access) &&
		    roff >= k->roff && roff - k->roff < k->len) {
			k->users++;
			break;
		}
	xa_unlock(&ka->keys_in);
	if (!k)
		return NULL;
	*len = min_t(u64, *len, k->len - (roff - k->roff));
	*iova = k->iova + (roff - k->roff);
	*rkey = k->rkey;
	return k;
}

/* A call with key @k ended: the last one of a revoked key answers. */
void srd_key_put(struct srd_ka *ka, u64 gen, struct srd_rkey *k)
{
	u32 id = k->id;
	bool last;

	xa_lock(&ka->keys_in);
	last = !--k->users && k->revoked;
	if (last)
		list_del(&k->busy);
	xa_unlock(&ka->keys_in);
	if (last) {
		kfree(k);
		srd_key_send(ka->peer, gen, SRD_F_REVOKE_ACK, 0, 0, id,
			     SRD_REVOKE_DONE, NULL);
	}
}

/*
 * A revoked key of the peer's that RDMAs of ours still use, on link @ka:
 * true and its id in *@id, else false (srd_ka_progress(), step 24).
 */
bool srd_keys_busy(struct srd_ka *ka, u32 *id)
{
	struct srd_rkey *b;

	xa_lock(&ka->keys_in);
	b = list_first_entry_or_null(&ka->keys_busy, struct srd_rkey, busy);
	if (b)
		*id = b->id;
	xa_unlock(&ka->keys_in);
	return b;
}

/*
 * Post one RDMA @op of @len bytes between @dma and the far @raddr under
 * @rkey and wait for it (polling first: a small call).  0 or -ECONNRESET
 * (the RDMA failed, and so did the link), -ENOMEM.
 */
static int srd_direct_one(struct srd_ka *ka, enum ib_wr_opcode op, u64 dma,
			  u32 len, u64 raddr, u32 rkey)
{
	struct srd_rwr r = { .ka = ka };
	struct ib_sge sge = {
		.addr = dma,
		.length = len,
		.lkey = ka->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr.opcode = op,
		.wr.sg_list = &sge,
		.wr.num_sge = 1,
		.remote_addr = raddr,
		.rkey = rkey,
	};
	int ret;

	ret = srd_rwr_post(&r, &wr.wr);
	srd_rwr_poll_wait(&r);
	if (!ret && (r.status || READ_ONCE(ka->dead)))
		ret = -ECONNRESET;
	return ret;
}

/*
 * Step 25: a read (@write false) or write of @len bytes (at most
 * SCIF_RDMA_RMA_INLINE) at @roff of the far window space, for connection
 * @serial, between @pages from byte @off of pages[0] and a key covering
 * all of it, through a bounce buffer (one SGE of the local DMA key: no
 * scatter list of the caller's pages to build and map for so few bytes):
 * one RDMA READ, then copied; or copied, then one RDMA WRITE, and with
 * @ordered the source's last cache line in a second WRITE once the
 * first completed (SCIF_RMA_ORDERED: its bytes land last).  -ENOENT if no
 * key covers it (the caller goes the other way), else 0 or the call's
 * errno (-ECONNRESET: the RDMA failed, and so did the link; -EINTR;
 * -ENOMEM).  The caller holds an rma_users reference on @ka.
 */
int srd_direct_small(struct srd_ka *ka, u64 gen, u64 serial, u64 roff,
		     struct page **pages, unsigned int off, u32 len,
		     bool write, bool ordered)
{
	enum dma_data_direction dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	struct srd_rkey *k;
	u32 n = len, rkey, head = len;	/* the first WRITE's bytes */
	u64 dma, raddr;
	void *buf;
	int ret;

	/*
	 * On iWARP a READ's sink must be an MR (the response arrives as the
	 * peer's tagged writes), not this bounce buffer of the local DMA
	 * key: a small read goes inline there.
	 */
	if (!write && ka->iwarp)
		return -ENOENT;
	k = srd_key_get(ka, serial, write ? SRD_KEY_WRITE : SRD_KEY_READ,
			roff, &n, &raddr, &rkey);
	if (k && n < len) {
		srd_key_put(ka, gen, k);	/* it straddles keys */
		k = NULL;
	}
	if (!k)
		return -ENOENT;
	ret = -ENOMEM;
	buf = kmalloc(len, GFP_KERNEL_ACCOUNT);
	if (!buf)
		goto put;
	if (write)
		srd_from_pages(buf, pages, off, len);
	dma = ib_dma_map_single(ka->dev, buf, len, dir);
	if (ib_dma_mapping_error(ka->dev, dma))
		goto free;
	if (write && ordered) {
		/* the source's last cache line apart, as the local path has it */
		u32 last = ALIGN_DOWN(off + len - 1, SCIF_RMA_CACHELINE);

		head = last > off ? last - off : len;
	}
	if (head < len) {
		ret = srd_direct_one(ka, IB_WR_RDMA_WRITE, dma, head, raddr,
				     rkey);
		if (!ret)
			ret = srd_direct_one(ka, IB_WR_RDMA_WRITE, dma + head,
					     len - head, raddr + head, rkey);
	} else {
		ret = srd_direct_one(ka, write ? IB_WR_RDMA_WRITE :
						 IB_WR_RDMA_READ,
				     dma, len, raddr, rkey);
	}
	ib_dma_unmap_single(ka->dev, dma, len, dir);
	if (!ret && write) {
		atomic_inc(&srd_rma_direct_writes);
	} else if (!ret) {
		srd_to_pages(pages, off, buf, len);
		atomic_inc(&srd_rma_direct_reads);
	}
free:
	kfree(buf);
put:
	srd_key_put(ka, gen, k);
	return ret;
}
