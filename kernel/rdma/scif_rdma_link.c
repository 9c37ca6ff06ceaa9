// SPDX-License-Identifier: GPL-2.0
/*
 * scif_rdma: configuration (sysfs), the rdma_cm listener, the lifecycle
 * of each peer's link, and the module (scif_rdma.h steps 1-9).
 */

#include "scif_rdma.h"

DEFINE_MUTEX(srd_cfg_mutex);
struct srd_self srd_self;		/* srd_cfg_mutex */
static LIST_HEAD(srd_peers);			/* srd_cfg_mutex */
/* the listener; srd_cfg_mutex (its handler takes srd_cfg_mutex) */
struct rdma_cm_id *srd_listen_id;
struct delayed_work srd_listen_work;
bool srd_exiting;			/* srd_cfg_mutex */
atomic_t srd_rejected = ATOMIC_INIT(0);
struct workqueue_struct *srd_wq;
/* senders to node id wait here for credits, outbox room or the end */
wait_queue_head_t srd_txwq[SCIF_ALL_NODES];
/* the node's link has SCIF_RDMA_OUTBOX bytes queued; its peer->lock */
bool srd_out_full[SCIF_ALL_NODES];
struct kobject *srd_kobj;

static const char *const srd_state_name[] = {
	[SRD_DOWN] = "down",
	[SRD_CONNECTING] = "connecting",
	[SRD_UP] = "up",
};

/* ---- link resources ---- */

/*
 * RDMA READs in flight per QP, each way: the device's limit, at most as
 * many as the link posts RMA work requests (several calls' direct reads
 * and the far host's RDMA READs of writes share them).
 */
static u8 srd_rd_atom(struct ib_device *dev)
{
	return min3(dev->attrs.max_qp_rd_atom, dev->attrs.max_qp_init_rd_atom,
		    SCIF_RDMA_RMA_SQ);
}

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
	/* receives need the peer's mutex: a work item */
	peer->res.cq = ib_alloc_cq(id->device, peer, SCIF_RDMA_NRECV, 0,
				   IB_POLL_WORKQUEUE);
	if (IS_ERR(peer->res.cq)) {
		ret = PTR_ERR(peer->res.cq);
		peer->res.cq = NULL;
		return ret;
	}
	/*
	 * Sends in softirq: an RMA caller polling for its READ sees it
	 * complete with no work item scheduled in between (srd_rwr_done());
	 * frames go on to srd_sent_work().
	 */
	peer->res.scq = ib_alloc_cq(id->device, peer,
				    SCIF_RDMA_SQ + SCIF_RDMA_RMA_SQ, 0,
				    IB_POLL_SOFTIRQ);
	if (IS_ERR(peer->res.scq)) {
		ret = PTR_ERR(peer->res.scq);
		peer->res.scq = NULL;
		return ret;
	}
	attr.send_cq = peer->res.scq;
	attr.recv_cq = peer->res.cq;
	/* frames, and RMA's registrations and RDMA operations (step 19) */
	attr.cap.max_send_wr = SCIF_RDMA_SQ + SCIF_RDMA_RMA_SQ;
	attr.cap.max_recv_wr = SCIF_RDMA_NRECV;
	/* our side of an RDMA READ or WRITE: SGE lists (srd_post_sg()) */
	attr.cap.max_send_sge = min_t(u32, id->device->attrs.max_send_sge,
				      SRD_RMA_SGES);
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, peer->res.pd, &attr);
	if (ret)
		return ret;
	peer->res.qp = true;
	ret = srd_ka_create(peer, id);
	if (peer->res.ka)
		peer->res.ka->max_sge = attr.cap.max_send_sge;
	return ret;
}

/* Take the link's resources out of @peer (peer->lock held). */
static struct srd_link srd_link_detach(struct srd_peer *peer)
{
	struct srd_link res = peer->res;

	memset(&peer->res, 0, sizeof(peer->res));
	return res;
}

/* Interrupt and reap a link's connector (srd_connector(), step 2). */
static void srd_connector_stop(struct task_struct *t)
{
	send_sig(SIGKILL, t, 1);
	kthread_stop(t);
	put_task_struct(t);
}

/* Destroy a detached link's resources; no lock held, not in its handler. */
void srd_destroy_link(struct srd_link *res)
{
	/* first: its rdma_connect() holds the cm_id */
	if (res->connector)
		srd_connector_stop(res->connector);
	if (res->cm_id)
		rdma_disconnect(res->cm_id);
	if (res->qp)
		rdma_destroy_qp(res->cm_id);
	if (res->cq)
		ib_free_cq(res->cq);	/* waits for its completion work */
	if (res->scq)
		ib_free_cq(res->scq);	/* and its softirq */
	/* no RDMA touches memory any more: RMA users end (step 22) */
	srd_rma_link_dead(res->ka);
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
void srd_link_fail(struct srd_peer *peer, const char *why, int err)
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

/*
 * The link is up (peer->lock held): the cm's ESTABLISHED, or on the
 * accepting side the first valid frame before it (srd_link_early_frame()).
 */
static void srd_link_established(struct srd_peer *peer)
{
	WRITE_ONCE(peer->state, SRD_UP);
	peer->backoff = SCIF_RDMA_BACKOFF_MIN;
	if (peer->res.ka) {
		srd_ka_alive(peer->res.ka);
		mod_delayed_work(srd_wq, &peer->ka_work, SCIF_RDMA_KEEPALIVE);
	}
	if (!peer->node_up &&
	    !scif_remote_node_up(peer->id,
				 srd_dev_numa(peer->res.cm_id->device)))
		peer->node_up = true;
}

/*
 * A valid frame came on a link still connecting (peer->lock held).  The
 * connecting side sends as soon as it has our accept, and our cm may see
 * its RTU later (under load a lost RTU waits for the cm's REP retry, many
 * seconds): a frame proves the peer got the accept, so on the accepting
 * side (the HELLO was checked with the request) the link is up now, as
 * IB_EVENT_COMM_EST makes it; the cm is told (rdma_notify()).  Otherwise
 * the frame's answer (a CONN_ACC) could not be sent.  The connecting
 * side waits for ESTABLISHED, which checks the accept's HELLO.
 */
void srd_link_early_frame(struct srd_peer *peer)
{
	if (peer->state != SRD_CONNECTING || !peer->res.cm_id ||
	    peer->id > READ_ONCE(srd_self.id))
		return;
	rdma_notify(peer->res.cm_id, IB_EVENT_COMM_EST);
	srd_link_established(peer);
}

/* The connect's or accept's parameters, @hello of @kind as private data. */
static void srd_conn_param(struct rdma_conn_param *param,
			   struct scif_rdma_hello *hello, u8 kind, u16 src,
			   u16 dst, struct ib_device *dev)
{
	srd_hello_fill(hello, kind, src, dst);
	memset(param, 0, sizeof(*param));
	param->private_data = hello;
	param->private_data_len = sizeof(*hello);
	param->retry_count = 7;
	param->rnr_retry_count = 7;
	/* RMA: the target RDMA-READs from the initiator (step 20) */
	param->responder_resources = srd_rd_atom(dev);
	param->initiator_depth = param->responder_resources;
}

/* ---- L's connect (step 2) ---- */

/*
 * The connect of L's link, in a thread of its own (res.connector), not in
 * the cm handler: over Soft-iWARP rdma_connect() is a blocking TCP
 * connect, which a host that never answers holds for the SYN retries
 * (over 2 minutes), and the handler holds the peer's mutex and the cm's
 * ordered work queue.  srd_destroy_link() ends the wait: a signal and
 * kthread_stop() interrupt it.
 */
static int srd_connector(void *data)
{
	struct srd_peer *peer = data;
	struct rdma_conn_param param;
	struct scif_rdma_hello hello;
	struct rdma_cm_id *id = NULL;
	int ret;

	/* before the check below: a teardown after it finds us signalled */
	allow_signal(SIGKILL);
	mutex_lock(&peer->lock);
	if (peer->res.connector == current)
		id = peer->res.cm_id;
	mutex_unlock(&peer->lock);
	if (!id || kthread_should_stop())
		return 0;
	srd_conn_param(&param, &hello, SCIF_RDMA_HELLO_REQ,
		       READ_ONCE(srd_self.id), peer->id, id->device);
	/* takes the cm_id's handler mutex: events wait for it */
	ret = rdma_connect(id, &param);
	if (ret) {
		mutex_lock(&peer->lock);
		if (peer->res.connector == current)
			srd_link_fail(peer, "connect", ret);
		mutex_unlock(&peer->lock);
	}
	return 0;
}

/* Start the connector of the link's cm_id (peer->lock held). */
static int srd_connector_start(struct srd_peer *peer)
{
	struct task_struct *t;

	t = kthread_create(srd_connector, peer, "scif_rdma_c%u", peer->id);
	if (IS_ERR(t))
		return PTR_ERR(t);
	/* srd_destroy_link() stops it, exited or not */
	get_task_struct(t);
	peer->res.connector = t;
	wake_up_process(t);
	return 0;
}

/* ---- the cm handler of a peer's link ---- */

static int srd_peer_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct srd_peer *peer = id->context;
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
		ret = srd_connector_start(peer);
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
		srd_link_established(peer);
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
	struct rdma_conn_param param;
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
		srd_conn_param(&param, &hello, SCIF_RDMA_HELLO_ACC,
			       srd_self.id, peer->id, id->device);
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

/* A read-only (0400) sysfs file srd_<name>_attr showing atomic_t @var. */
#define SRD_COUNTER_ATTR(name, var)					\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%d\n", atomic_read(&(var)));		\
}									\
static struct kobj_attribute srd_##name##_attr = __ATTR_RO_MODE(name, 0400)

SRD_COUNTER_ATTR(rejected, srd_rejected);
SRD_COUNTER_ATTR(bad_frames, srd_bad);
/* iWARP: PINGs queued among our RDMA WRITEs (srd_ka_mark()) */
SRD_COUNTER_ATTR(marks, srd_marks);
/* RMA across hosts, the inline path (steps 19-21) */
SRD_COUNTER_ATTR(rma_inline_sent, srd_rma_inline_sent);
SRD_COUNTER_ATTR(rma_inline_served, srd_rma_inline_served);
/* answers that came after their killed caller gave up (step 22) */
SRD_COUNTER_ATTR(rma_late, srd_rma_late);
/* requests with an MR a killed caller gave up on: link ended (step 22) */
SRD_COUNTER_ATTR(rma_unanswered, srd_rma_unanswered);
/* direct reads and writes (steps 23-25): done here, keys of ours live */
SRD_COUNTER_ATTR(rma_direct_reads, srd_rma_direct_reads);
SRD_COUNTER_ATTR(rma_direct_writes, srd_rma_direct_writes);
SRD_COUNTER_ATTR(rma_keys, srd_keys_live);
SRD_COUNTER_ATTR(keys_unanswered, srd_keys_unanswered);
/* small calls that found their completion polling (poll_us) */
SRD_COUNTER_ATTR(rma_polled, srd_rma_polled);
/* memory registrations posted (requests' MRs, read keys) */
SRD_COUNTER_ATTR(rma_regs, srd_rma_regs);
/* completions that woke RMA waiters (one per transfer, not per WR) */
SRD_COUNTER_ATTR(rma_wakeups, srd_rma_wakeups);

static ssize_t rma_inline_max_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", SCIF_RDMA_RMA_INLINE);
}

static struct kobj_attribute srd_self_attr = __ATTR(self, 0644, self_show,
						     self_store);
static struct kobj_attribute srd_nodes_attr = __ATTR(nodes, 0600,
						      nodes_show, nodes_store);

static struct kobj_attribute srd_links_attr = __ATTR_RO_MODE(links, 0400);
static struct kobj_attribute srd_inl_max_attr =
	__ATTR_RO_MODE(rma_inline_max, 0400);

static struct attribute *srd_attrs[] = {
	&srd_bad_frames_attr.attr,
	&srd_links_attr.attr,
	&srd_marks_attr.attr,
	&srd_rma_inline_sent_attr.attr,
	&srd_rma_inline_served_attr.attr,
	&srd_rma_late_attr.attr,
	&srd_rma_unanswered_attr.attr,
	&srd_inl_max_attr.attr,
	&srd_rma_direct_reads_attr.attr,
	&srd_rma_direct_writes_attr.attr,
	&srd_rma_keys_attr.attr,
	&srd_keys_unanswered_attr.attr,
	&srd_rma_polled_attr.attr,
	&srd_rma_regs_attr.attr,
	&srd_rma_wakeups_attr.attr,
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
	srd_rma_wq = alloc_workqueue("scif_rdma_rma", WQ_UNBOUND, 0);
	if (!srd_rma_wq) {
		destroy_workqueue(srd_wq);
		return -ENOMEM;
	}
	srd_fence_wq = alloc_workqueue("scif_rdma_fence", WQ_UNBOUND, 0);
	if (!srd_fence_wq) {
		ret = -ENOMEM;
		goto out_wq;
	}
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
	if (srd_fence_wq)
		destroy_workqueue(srd_fence_wq);
	destroy_workqueue(srd_rma_wq);
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
	srd_keys_exit();	/* every key went with its link */
	destroy_workqueue(srd_fence_wq);	/* empty: every link ended */
	destroy_workqueue(srd_rma_wq);
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
