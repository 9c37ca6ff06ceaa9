/* SPDX-License-Identifier: GPL-2.0 */
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
 *     to resolve.  The connect runs in a thread of the link's own
 *     (srd_connector()), which the link's teardown interrupts: over
 *     Soft-iWARP it is a blocking TCP connect, minutes long when H's host
 *     never answers.
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
 *     the link's device (srd_dev_numa()) as the node's affinity.  H also
 *     does on the first valid frame that comes before its ESTABLISHED
 *     (L sends once it has the accept; H's cm may get L's RTU much
 *     later), and tells its cm (rdma_notify(), IB_EVENT_COMM_EST).
 *  7. Frames and keepalive: each side keeps SCIF_RDMA_NRECV receives of
 *     SCIF_RDMA_BUF bytes posted on the QP (from step 2/4 on).  Every SEND
 *     is one frame: a struct srd_hdr (magic SCIF_RDMA_FRAME_MAGIC, type,
 *     reserved zero, link credits, destination and source connection ids,
 *     payload length, two arguments; big-endian), then the payload (DATA,
 *     RMA_REQ, an inline read's RMA_DONE).  While up, each side queues a
 *     PING every SCIF_RDMA_KEEPALIVE.  A send or receive completing in
 *     error, or no sign of the peer's life for SCIF_RDMA_DEAD (no valid
 *     frame received, no send or RDMA READ/WRITE of ours acknowledged,
 *     on iWARP no RDMA READ answered: srd_ka_alive()), ends the link as
 *     in step 8: so a peer that vanishes without a DREQ (powered off,
 *     link gone) goes down.  On iWARP, where the peer's frames are all
 *     we hear of it while it writes to us, a side queues a PING after
 *     every SCIF_RDMA_MARK bytes of RDMA WRITEs posted with no frame
 *     among them (srd_ka_mark(); at most one unposted), and no RDMA READ
 *     or WRITE is longer than SCIF_RDMA_MARK (srd_post_sg()): the peer's
 *     frames wait behind its whole answer to a READ, and a mark behind
 *     the whole WRITE it follows.
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
 *     payload but on DATA, RMA_REQ (at least a struct srd_rma_wire) and
 *     RMA_DONE (at most SCIF_RDMA_RMA_INLINE), DATA not empty, returned
 *     link credits within what we used.  A bad frame is dropped, counted
 *     (sysfs bad_frames) and logged rate-limited; the link stays up.
 *     That an RMA frame's payload is exactly what its op carries is
 *     checked in steps 20 and 21.
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
 *     (per link, 1..SCIF_RDMA_MAX_CONNS, the one after the last given out:
 *     ids go round, so a frame on its way for an ended connection meets
 *     no new one under the same ids) and a proxy endpoint on the
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
 *     violation); sent after its DATA and RMA_REQs, and nothing of the
 *     connection follows it (an RMA call going on after its endpoint's
 *     close sends no further request, step 19), so the receiver first
 *     reads what was queued, then gets ECONNRESET.  The receiver of a
 *     CLOSE for a live connection answers with CLOSE; the connection id
 *     is freed on both sides once each side sent and received one.
 * 17. Frames for a connection id not in the table, from a wrong source id
 *     or of a type the connection's state does not expect are counted as
 *     in step 10 and dropped (an RMA_REQ is answered too, step 20).
 * 18. When a link ends (step 8) every connection over it ends once its CQ
 *     is drained: connected endpoints get ECONNRESET, connecting ones
 *     ENODEV, queued proxy connectors are withdrawn, blocked calls
 *     return, the proxies are freed.  A new link starts with no
 *     connections.
 * 19. RMA (scif_rdma_rma.c, docs/transport.md "RMA across hosts") is
 *     target-driven: the host owning the window does the RDMA, so no key of
 *     a window leaves its host (but for reads, steps 23-25).  The
 *     initiator (the transport's rma operation) cuts the range in
 *     requests of at most ka->rma_pages pages (SCIF_RDMA_RMA_PAGES or
 *     what the device registers, minus one); for
 *     each it takes one of SCIF_RDMA_RMA_REQS request slots of the link,
 *     DMA-maps its local pages, registers them in an MR of its own
 *     (IB_WR_REG_MR; REMOTE_WRITE for a read, REMOTE_READ for a write,
 *     nothing else) and waits for that to complete.  A call of at most
 *     SCIF_RDMA_RMA_INLINE bytes instead is one inline request (ops 4 and
 *     5, step 20): no MR, no DMA mapping, no RDMA on either side; its data
 *     travels in the RMA_REQ (a write: copied from the local pages into the
 *     frame) or in the RMA_DONE (a read, step 21); so is the last part
 *     of a larger call when it is at most that long, which only a tail
 *     after a direct part (step 25) can be.  A call keeps up to
 *     SRD_RMA_PIPE requests in flight (steps 20-21 for each), started and
 *     reaped in order; it waits for a slot only when none of its own is out
 *     (else it reaps its oldest first), so calls sharing the slots never
 *     deadlock.  With SCIF_RMA_ORDERED the last request (the last bytes) is
 *     sent only after every earlier one was answered.  A request is sent
 *     only while its connection is live, checked under srd_msg_mutex as
 *     the CLOSE is sent (step 16): a call that goes on after its
 *     endpoint's close (an asynchronous one) ends with ECONNRESET at its
 *     next request.  The target serves requests in parallel work items
 *     (srd_rma_wq), bounded per link by SCIF_RDMA_RMA_REQS and
 *     SCIF_RDMA_RMA_SQ.
 * 20. It sends RMA_REQ (dst, src = the connection ids, arg = a request id
 *     unique among its outstanding ones, arg2 = the op: 1 the initiator
 *     reads, 2 it writes; payload struct srd_rma_wire: remote offset, MR
 *     address, key, length; op 3 is a remote fence signal: length 8,
 *     an 8-aligned offset, the value in the address field, no MR; op 4
 *     (SRD_RMA_IREAD) an inline read and op 5 (SRD_RMA_IWRITE) an inline
 *     write, 0 < length <= SCIF_RDMA_RMA_INLINE, address and key zero,
 *     op 5's payload the wire followed by exactly length bytes, every
 *     other op's exactly the wire; op 6 (SRD_RMA_MARK) and op 7
 *     (SRD_RMA_WAIT) are a peer fence, SCIF_FENCE_INIT_PEER: length 4,
 *     address and key zero, op 6's offset 0, op 7's the mark, at most
 *     SRD_MARK_MAX).  The target checks op, 0 < length <=
 *     SCIF_RDMA_RMA_MAX, those rules of each op (any broken: counted as
 *     in step 10 and answered EINVAL), offset + length not wrapping
 *     (ENXIO), the connection live and from that source, at most
 *     SCIF_RDMA_RMA_REQS in service (EBUSY); gathers its endpoint's
 *     window pages with the protection the op needs
 *     (scif_remote_rma_get(): references held until done; ENXIO,
 *     EACCES), and in a work item DMA-maps them and posts RDMA WRITEs
 *     (initiator reads) or RDMA READs (initiator writes) to the
 *     initiator's MR, its own side SGE lists of the PD's local DMA key
 *     (srd_post_sg(): nothing registered, as nothing remote reaches
 *     these pages; SRD_RMA_SGES entries per WR); an inline op it serves
 *     in the work item with the CPU (kmap_local_page(), page by page):
 *     a write's data from the request into the window pages, a read's
 *     from the window pages into its RMA_DONE; a signal it
 *     writes with one 8-byte store after the checks of a local fence
 *     signal (scif_remote_signal(): ENXIO, EACCES); a peer fence mark it
 *     answers with its endpoint's own mark (scif_remote_fence_mark(), the
 *     transfers that endpoint issued so far); a peer fence wait it serves
 *     on srd_fence_wq (so that waits never hold up the work items the
 *     transfers they wait for may need) by waiting until its endpoint
 *     completed that mark's transfers, the connection ended (ECONNRESET)
 *     or the link died (scif_remote_fence_wait(), looking every
 *     SRD_FENCE_POLL).  Every
 *     RMA_REQ is answered by one RMA_DONE, also when refused at once,
 *     and only after the data moved (RDMA completed, or copied): so a
 *     fence signal or the last request of an SCIF_RMA_ORDERED call, sent
 *     only after the RMA_DONEs before it, is never visible before their
 *     data, inline or not.
 *     RMA work requests have their own budget of the send queue,
 *     SCIF_RDMA_RMA_SQ (the QP has SCIF_RDMA_SQ + SCIF_RDMA_RMA_SQ).
 * 21. RMA_DONE (dst, src = the ids, arg = the request id, arg2 = 0 or a
 *     positive errno: ENXIO, EACCES, ENOMEM, EINVAL, EBUSY, ECONNRESET
 *     (a completion error: the link then resets)) once the RDMA completed
 *     or failed and the target unmapped its pages and dropped its window
 *     references.  The answer to an inline read of status 0 carries the
 *     data: a payload of exactly the request's length, and the answer to
 *     a peer fence mark of status 0 the mark (4 bytes, big-endian); every
 *     other RMA_DONE none.  It is matched by request id and the initiator's
 *     connection id, not by connection state (the connection may have
 *     closed meanwhile); unknown ids are counted as in step 10.  A
 *     payload not as the request allows is counted as in step 10 and the
 *     request fails (ECONNRESET), nothing copied; else the initiator
 *     copies an inline read's data into its local pages (under the
 *     request table's lock, so the waiter still holds them), or
 *     deregisters its MR (which invalidates it) and unmaps; any status
 *     but ENXIO, EACCES, ENOMEM reads as ECONNRESET.
 * 22. When a link ends, srd_destroy_link() destroys QP and CQ, then marks
 *     the link dead: every RMA waiter on either side wakes, deregisters
 *     and unmaps (the call gets ECONNRESET), and the PD is freed only
 *     after the last (ka->rma_users).  A killed initiator issues no
 *     further request, but keeps waiting for the RMA_DONEs of those it
 *     sent (or the link's end) for up to SRD_RMA_KILL_WAIT in all before
 *     it deregisters their MRs, since deregistering under the target's RDMA
 *     fails that RDMA with a remote access error, which resets the link
 *     and every connection over it; the call returns EINTR.  A request
 *     it gave up on leaves a tombstone under its id (at most
 *     SRD_RMA_TOMBS per link; past that the id just goes): its late
 *     RMA_DONE (say a peer fence wait's) takes the tombstone away and is
 *     counted in rma_late, not as a bad frame; that is for inline
 *     requests (no MR).  A request with an MR still unanswered at the
 *     bound ends the link instead (srd_req_unanswered()), and its MR and
 *     pages go only once the QP is destroyed: deregistering does not stop
 *     an RDMA READ answer the device already took (Soft-iWARP).  The same
 *     bound holds for a killed caller whose own work
 *     request (IB_WR_REG_MR) has not completed: a peer can stall our send
 *     queue (completions come in order, after its acknowledgements), so
 *     after SRD_RMA_KILL_WAIT the caller ends the link, which flushes it.
 * 23. Keys (scif_rdma_key.c): an exception to step 19.  Once the owner
 *     of a window served a read or write of it (ops 1, 2, 4, 5) with
 *     status 0, it registers the chunks of that window holding the
 *     range's first and last byte (ka->rma_pages pages each, aligned in
 *     the window; one chunk per connection once) for remote read if the
 *     window has SCIF_PROT_READ and the module parameter direct_reads is
 *     on, for remote write if it has SCIF_PROT_WRITE and direct_writes is
 *     on (no key if neither), and sends RKEY (dst, src = the connection
 *     ids, arg = a key id unique among the link's, arg2 = what it gives:
 *     0 reads, 1 writes, 2 both; payload a struct srd_rma_wire: the
 *     chunk's offset in its registered space, MR address, key, length)
 *     before the request's RMA_DONE.  At most SRD_KEYS_MAX keys per link
 *     in each direction.  The peer checks the fields (id nonzero and
 *     unused, arg2 at most 2, 0 < length <= SCIF_RDMA_RMA_MAX, no wrap;
 *     anything else is counted as in step 10) and keeps the key for that
 *     connection (srd_conn.serial) while it is live.
 * 24. The owner revokes a key when its window stops being registered
 *     (scif_unregister(), its endpoint's close: scif.ko calls the
 *     transport's windows_gone, which waits) or its connection ends:
 *     REVOKE (arg = the id, dst, src, arg2 zero).  The peer takes the
 *     key out at once (no new call uses it), and answers REVOKE_ACK (arg =
 *     the id) once no RDMA of its own with it is in flight; an unknown id
 *     is answered too.  The owner then invalidates the MR (ib_dereg_mr())
 *     and lets the window go.  So when scif_unregister() returns, the far
 *     host can no longer read or write the window, and a call it starts
 *     after a message sent after the unregistration finds no key (the
 *     REVOKE came first on the link) and gets ENXIO from step 20.  A peer
 *     that does not answer within SRD_KEY_REVOKE_WAIT loses its link
 *     (srd_key_unanswered()).  While revoked keys still have RDMAs of the
 *     peer in flight, its keepalive tick sends a REVOKE_ACK with arg2
 *     SRD_REVOKE_BUSY for one of them whenever an RDMA READ or WRITE of
 *     its (with any key) completed since the last tick
 *     (srd_ka_progress()): progress, which moves the deadline of every
 *     revocation of the link SRD_KEY_REVOKE_WAIT ahead, never past
 *     SRD_KEY_REVOKE_MAX after the REVOKE (a slow link may take longer
 *     than the wait to serve a reader's 16 MiB in flight; a peer that
 *     only claims progress is bounded).  The key is freed once the QP is destroyed,
 *     as a device may still answer a READ it took with a deregistered MR
 *     (Soft-iWARP does).  A REVOKE_ACK for no revocation is counted as
 *     in step 10.
 * 25. A read (scif_readfrom(), scif_vreadfrom()) of at most
 *     SCIF_RDMA_RMA_INLINE bytes that lies inside one read key of its
 *     connection is one RDMA READ of the owner's MR into a bounce buffer
 *     of the reader (the PD's local DMA key), copied into the caller's
 *     pages once it completed: no frame, no work on the owner's CPU; a
 *     write (scif_writeto(), scif_vwriteto()) inside one write key is the
 *     caller's bytes copied into a bounce buffer and one RDMA WRITE (with
 *     SCIF_RMA_ORDERED, the source's last cache line in a second WRITE
 *     once the first completed).  A larger call is cut as in step 19, but
 *     a request that would start inside a key of its connection for its
 *     direction is instead RDMA READs or WRITEs of the owner's MR (up to
 *     the key's end at most; SRD_DIRECT_WRS of them at once, of at least
 *     SRD_DIRECT_WR_MIN bytes each, more where the SGE limit cuts them),
 *     straight between the caller's pages (SGE lists of the local DMA key,
 *     as in step 20: no registration) and the window, in the call's
 *     pipeline like a request.  On iWARP a small read goes by steps 19-21
 *     instead: a READ's sink there must be an MR, not the bounce buffer
 *     (a large read's sink is one, srd_map_local()), and Soft-iWARP's
 *     siw_try_1seg() corrupts a READ response of at most 32 bytes that
 *     crosses a page of its MR, which a small direct read may be.  A
 *     direct WRITE's completion comes once the owner's device
 *     acknowledged it, and the owner sees its data before any frame sent
 *     after it on the link (RC ordering), so a fence signal or message
 *     after a write still follows its data.  A failed
 *     RDMA ends the link (step 8; the call gets ECONNRESET), as any does.
 *     Any other call, and any part of one that starts outside every key,
 *     goes by steps 19-22.
 *
 * Locking: srd_cfg_mutex protects srd_self and srd_peers (the list and
 * each peer's id/address/port); it is never held while destroying a
 * cm_id that may have events (the listener's handler takes it; only a
 * listener that failed to bind or listen is destroyed under it).  Each
 * peer's mutex protects its link state (res: cm_id, pd, cqs, qp; state,
 * backoff, node_up, removed, and the keepalive state of the current
 * link, struct srd_ka); the rdma_cm handler of a peer's cm_id
 * holds it for the whole event, so once the link's work detached the
 * cm_id under it, no handler touches that cm_id's resources again, and the
 * work destroys them after dropping it.  L's rdma_connect() is called
 * without it, in the link's connector thread (step 2), which takes it
 * only to check that it is still the link's connector; the teardown
 * stops that thread first, with no lock held.  The receive completions
 * (receive CQ, IB_POLL_WORKQUEUE), the frames' send completions (handed
 * by the send CQ, IB_POLL_SOFTIRQ, to ka->sent_work) and the keepalive
 * work take the peer's mutex too and act only on the peer's current
 * link; nothing waits for the CQs (ib_free_cq), sent_work or the
 * keepalive work while holding it.  The RDMA completions (send CQ)
 * take no lock (struct srd_ka).
 * The link's frame state (struct srd_ka: outbox, credits) is under the
 * peer's mutex as well.  srd_msg_mutex protects the connections (struct
 * srd_conn, each peer's table, srd_peer_of[], the xprt field of the
 * endpoints involved); the receive handler drops the peer's mutex before
 * it takes srd_msg_mutex to deliver a frame.  The endpoint core's locks
 * (ep->lock, the endpoint mutexes via scif_ep_put()) may be taken under
 * srd_msg_mutex; the core calls the transport operations with no
 * spinlock held.
 * RMA (steps 19-22): a link's RMA work requests are posted under the
 * peer's mutex, counted in atomics (rma_busy, srd_rwr.pending), its
 * request table under the table's xa_lock (taken
 * inside the peer's mutex by the RMA_DONE handler); RMA waiters sleep on
 * ka->rma_wq with no lock held.
 * Keys (steps 23-25): the owner's keys (struct srd_xkey, every link's)
 * and each link's xkeys count under srd_key_mutex, never held while
 * waiting for a completion or an answer; the peer's keys (ka->keys_in)
 * under that xarray's xa_lock, taken inside the peer's mutex.
 * Order: srd_cfg_mutex, srd_msg_mutex, srd_key_mutex, a peer's mutex,
 * xa_lock.
 */

#ifndef SCIF_RDMA_H
#define SCIF_RDMA_H

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
#include <linux/llist.h>
#include <linux/xarray.h>
#include <linux/uaccess.h>
#include <linux/overflow.h>
#include <linux/numa.h>
#include <linux/kthread.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "../scif_remote.h"
#include "../scif_ep.h"
#include "../scif_transport.h"

#define SCIF_RDMA_MAGIC		0x53434946U	/* "SCIF" */
/*
 * 2: inline RMA (ops 4 and 5 of step 20, RMA_DONE with data, step 21);
 * 3: peer fences (ops 6 and 7); 4: read keys (steps 23-25); 5: write keys
 * (an RKEY's arg2, step 23); 6: REVOKE_ACK with arg2 1, a revocation's
 * progress (step 24).  HELLO checks
 * it exactly, so a module of an older version never links with it.
 */
#define SCIF_RDMA_VERSION	6
#define SCIF_RDMA_HELLO_REQ	1
#define SCIF_RDMA_HELLO_ACC	2
#define SCIF_RDMA_BACKOFF_MIN	(HZ / 2)
#define SCIF_RDMA_BACKOFF_MAX	(8 * HZ)
#define SCIF_RDMA_TIMEOUT_MS	2000
#define SCIF_RDMA_MAX_WRITE	128	/* longest accepted sysfs write */
#define SCIF_RDMA_KEEPALIVE	HZ	/* a PING this often while up */
#define SCIF_RDMA_DEAD		(5 * HZ) /* no sign of life: link dead */
#define SCIF_RDMA_MARK		(256 * 1024) /* iWARP: per mark; longest WR */
#define SCIF_RDMA_FRAME_MAGIC	0x5343464dU	/* "SCFM" */
/*
 * The link window: at most NRECV frames of BUF bytes (1 MiB) in flight per
 * link round trip, and senders wait beyond OUTBOX bytes of DATA queued or
 * unacknowledged; with a large ring_size, streaming across hosts is bound
 * by NRECV * BUF per round trip (docs/transport.md, "Benchmark").
 */
#define SCIF_RDMA_NRECV		128	/* receives posted per link */
#define SCIF_RDMA_SQ		128	/* sends posted per link, at most */
#define SCIF_RDMA_BUF		8192	/* bytes of each receive buffer */
#define SCIF_RDMA_OUTBOX	(1024 * 1024) /* DATA bytes queued per link */
#define SCIF_RDMA_RING_MAX	(4U << 20)   /* largest receive ring */
#define SCIF_RDMA_MAX_CONNS	16384	/* connections per link */
#define SCIF_RDMA_RMA_SQ	16	/* RMA work requests posted per link */
#define SCIF_RDMA_RMA_PAGES	256	/* pages one RMA request covers, most */
#define SCIF_RDMA_RMA_MAX	(SCIF_RDMA_RMA_PAGES * PAGE_SIZE) /* bytes */
#define SCIF_RDMA_RMA_REQS	16	/* RMA requests outstanding per link */
/*
 * A call of at most this many bytes goes inline (steps 19-21): the data
 * travels in the RMA_REQ (a write) or the RMA_DONE (a read), no MR and no
 * RDMA on either side.  At most SCIF_RDMA_BUF minus the header and the
 * srd_rma_wire (8140 bytes); docs/transport.md has the measurement.
 */
#define SCIF_RDMA_RMA_INLINE	8000
/* requests of one RMA call in flight, most (of the link's RMA_REQS) */
#define SRD_RMA_PIPE		4
/* a direct read's RDMA READs in flight (step 25), most; their size, least */
#define SRD_DIRECT_WRS		4
#define SRD_DIRECT_WR_MIN	(16 * 1024)
/*
 * SGEs per RMA work request, most: our side of an RDMA READ or WRITE is a
 * list of the PD's local DMA key (srd_post_sg()), a 64 KiB READ of
 * scattered pages one WR
 */
#define SRD_RMA_SGES		16
/* how long a killed initiator waits for its request's RMA_DONE, most */
#define SRD_RMA_KILL_WAIT	(5 * HZ)
/* a peer fence wait (op 7) looks whether its link died this often */
#define SRD_FENCE_POLL		(HZ / 10)
/* the largest fence mark (its low 30 bits, as scif_fence_mark() returns) */
#define SRD_MARK_MAX		0x3fffffffU

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
	SRD_F_RMA_REQ,
	SRD_F_RMA_DONE,
	SRD_F_RKEY,		/* a key: step 23 */
	SRD_F_REVOKE,		/* step 24 */
	SRD_F_REVOKE_ACK,
	SRD_F_MAX = SRD_F_REVOKE_ACK,
};

/* a REVOKE_ACK's arg2: the key is let go, or reads still use it (24) */
enum {
	SRD_REVOKE_DONE,
	SRD_REVOKE_BUSY,
};

/*
 * What a key gives (step 23); on the wire, in an RKEY's arg2, minus one:
 * 0 reads, 1 writes, 2 both.
 */
enum {
	SRD_KEY_READ = 1,
	SRD_KEY_WRITE = 2,
	SRD_KEY_READ_WRITE = SRD_KEY_READ | SRD_KEY_WRITE,
};

/* The ops of an RMA_REQ (step 20, arg2): SCIF_XPRT_RMA_*, then these. */
enum {
	SRD_RMA_IREAD = 4,	/* inline read: the data comes in RMA_DONE */
	SRD_RMA_IWRITE,		/* inline write: the data follows the wire */
	SRD_RMA_MARK,		/* peer fence mark: the mark comes in RMA_DONE */
	SRD_RMA_WAIT,		/* peer fence wait for the mark in roff */
};

/*
 * The payload of an RMA_REQ (step 20; arg = request id, arg2 = op), for
 * SRD_RMA_IWRITE followed by the len bytes to write.
 */
struct srd_rma_wire {
	__be64 roff;		/* offset in the target's registered space */
	__be64 iova;		/* the initiator's MR: address, */
	__be32 rkey;		/* key */
	__be32 len;		/* and bytes (1..SCIF_RDMA_RMA_MAX) */
} __packed;

#define SRD_PAYLOAD_MAX	(SCIF_RDMA_BUF - sizeof(struct srd_hdr))
/* an inline write of SCIF_RDMA_RMA_INLINE bytes fits one frame */
static_assert(sizeof(struct srd_hdr) + sizeof(struct srd_rma_wire) +
	      SCIF_RDMA_RMA_INLINE <= SCIF_RDMA_BUF);

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
	struct llist_node sent;		/* completed: in ka->sent */
	enum ib_wc_status wc_status;	/* its completion's, for ka->sent */
	struct srd_ka *ka;
	u64 dma;
	bool mapped;
	bool ping;
	bool mark;			/* an iWARP mark (srd_ka_mark()) */
	u32 len;			/* header + payload */
	u32 payload;
	u8 buf[];			/* struct srd_hdr, then payload */
};

/*
 * A link's messaging state (steps 7, 10, 11).  It lives as long as the
 * link's QP and CQs: srd_destroy_link() frees it after ib_free_cq() of
 * both, when no completion handler runs or will run, and after sent_work.
 * The receive handlers and sent_work touch it only under peer->lock and
 * only while this is the peer's current link (peer->res.ka); so do
 * senders (srd_xmit()).  The send CQ's handlers run in softirq and take
 * no mutex: a frame's completion goes on the sent list (lock-free) for
 * sent_work, an RDMA work request's only touches atomics, its own struct
 * srd_rwr and rma_wq, and leaves a failure in rdma_err for sent_work,
 * which ends the link; a successful one of either stamps last_alive
 * (WRITE_ONCE; the keepalive work reads it with READ_ONCE).
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
	/*
	 * iWARP: bytes of RDMA WRITEs posted since our last frame, and
	 * whether a mark (srd_ka_mark()) waits in the outbox.
	 */
	unsigned int unmarked;
	bool mark_waiting;
	/*
	 * jiffies of the peer's last sign of life (srd_ka_alive()): a valid
	 * frame received, or a send or RDMA READ/WRITE of ours that the peer
	 * acknowledged.
	 */
	unsigned long last_alive;
	/*
	 * RDMA READs and WRITEs of ours completed (srd_rwr_done()), and the
	 * count the keepalive saw last (peer->lock): a revocation's progress
	 * (srd_ka_progress()).
	 */
	atomic_t rdma_done;
	int rdma_done_seen;
	struct llist_head sent;		/* srd_tx completed, newest first */
	int rdma_err;			/* an RMA WR's failure, or 0 */
	struct work_struct sent_work;	/* srd_sent_work() */

	/*
	 * RMA (scif_rdma_rma.c, steps 19-22).  rma_users counts the threads
	 * and work items using this link's PD or device for an RMA;
	 * srd_destroy_link() sets dead once the QP and CQ are gone (no RDMA
	 * touches memory, no completion runs), wakes rma_wq and waits for
	 * rma_users to drop to zero before freeing this and the PD.
	 * rma_busy (RMA WRs posted) is raised under peer->lock, lowered
	 * by their completions (softirq), atomic; rma_reqs (our
	 * requests by id, and tombstones: xa_mk_value(connection id) in
	 * place of a request whose killed caller gave up on its RMA_DONE,
	 * rma_tombs of them, at most SRD_RMA_TOMBS) under its xa_lock;
	 * rma_nreq (our requests outstanding, at most SCIF_RDMA_RMA_REQS:
	 * taken in a wait condition, so no lock) and rma_jobs (the peer's
	 * requests being served) atomic.  rma_wq is woken where a wait can
	 * end: a request answered, an srd_rwr's last WR completed, rma_busy
	 * below SCIF_RDMA_RMA_SQ or rma_nreq below SCIF_RDMA_RMA_REQS again
	 * (a wait for room or a slot sleeps only at the limit), rma_users
	 * at zero, dead set.
	 */
	struct ib_pd *pd;
	unsigned int rma_pages;		/* pages per MR, 0: no RMA */
	unsigned int max_sge;		/* SGEs per send WR (the QP's) */
	bool iwarp;			/* READ sinks need an MR: iWARP */
	wait_queue_head_t rma_wq;
	atomic_t rma_users;
	bool dead;
	atomic_t rma_busy;
	atomic_t rma_nreq;
	struct xarray rma_reqs;
	unsigned int rma_tombs;
	u32 rma_next;
	atomic_t rma_jobs;

	/*
	 * Direct reads (scif_rdma_key.c, steps 23-25).  keys_in: the read
	 * keys the peer gave us (struct srd_rkey by its id), under its
	 * xa_lock, nkeys_in their number; keys_busy the ones revoked while
	 * reads of ours still use them (struct srd_rkey.busy), under the
	 * same lock; xkeys (read keys of ours this link carries) and
	 * xkey_next under srd_key_mutex.
	 */
	struct xarray keys_in;
	struct list_head keys_busy;
	unsigned int nkeys_in;
	unsigned int xkeys;
	u32 xkey_next;
};

enum srd_state { SRD_DOWN, SRD_CONNECTING, SRD_UP };

/* The verbs resources of one link; all NULL/false when there is none. */
struct srd_link {
	struct rdma_cm_id *cm_id;	/* the link's cm_id, or NULL */
	struct ib_pd *pd;
	struct ib_cq *cq;		/* receives: IB_POLL_WORKQUEUE */
	struct ib_cq *scq;		/* sends and RDMA: IB_POLL_SOFTIRQ */
	bool qp;			/* cm_id has a QP */
	struct srd_ka *ka;		/* the QP's keepalive buffers */
	struct task_struct *connector;	/* L: its rdma_connect(), counted */
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
	/*
	 * the next id to try in conns (srd_msg_mutex): ids go round, so a
	 * frame still on its way for an ended connection finds no other
	 */
	u32 conn_next;
};

struct srd_self {
	bool set;
	u16 id;
	__be32 addr;
	u16 port;
};

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
	u64 serial;			/* unique per connection, ever */
};

/* scif_rdma_link.c: configuration, listener, links, module */
extern struct mutex srd_cfg_mutex;
extern struct srd_self srd_self;
extern struct rdma_cm_id *srd_listen_id;
extern struct delayed_work srd_listen_work;
extern bool srd_exiting;
extern atomic_t srd_rejected;
extern struct workqueue_struct *srd_wq;
extern wait_queue_head_t srd_txwq[SCIF_ALL_NODES];
extern bool srd_out_full[SCIF_ALL_NODES];
extern struct kobject *srd_kobj;
void srd_link_fail(struct srd_peer *peer, const char *why, int err);
void srd_link_early_frame(struct srd_peer *peer);
void srd_destroy_link(struct srd_link *res);

/* scif_rdma_frame.c: frames, link credits, outbox, keepalive */
extern atomic_t srd_bad;
extern atomic_t srd_marks;
void srd_bad_frame(struct srd_peer *peer, const char *why, u32 len);
struct srd_tx *srd_tx_alloc(u8 type, u32 dst, u32 src, u32 payload);
int srd_xmit(struct srd_peer *peer, u64 gen, struct srd_tx *tx);
int srd_post_send(struct ib_qp *qp, const struct ib_send_wr *wr);
void srd_ka_free(struct srd_ka *ka);
int srd_dev_numa(struct ib_device *dev);
int srd_ka_create(struct srd_peer *peer, struct rdma_cm_id *id);
void srd_ka_work_fn(struct work_struct *work);
void srd_ka_mark(struct srd_peer *peer, struct srd_ka *ka, u32 len);

/* scif_rdma_conn.c: connections and the transport operations */
extern struct mutex srd_msg_mutex;
extern struct srd_peer *srd_peer_of[SCIF_ALL_NODES];
extern const struct scif_transport_ops srd_ops;
void srd_msg_recv(struct srd_peer *peer, u64 gen, const struct srd_hdr *h,
		  const u8 *payload, u32 len);
void srd_msg_link_down(struct srd_peer *peer, u64 gen, bool all);
struct scif_endpt *srd_proxy_peer(struct scif_endpt *p);
bool srd_conn_live(struct srd_peer *peer, u64 gen, u32 lid, u64 serial);

/* scif_rdma_rma.c: RMA across hosts (steps 19-22) */
struct srd_conn;
extern struct workqueue_struct *srd_rma_wq, *srd_fence_wq;
void srd_rma_ka_init(struct srd_ka *ka, struct ib_pd *pd);
void srd_rma_link_dead(struct srd_ka *ka);
void srd_rma_rx_req(struct srd_peer *peer, u64 gen, struct srd_conn *c,
		    bool known, const struct srd_hdr *h, const u8 *payload);
void srd_rma_rx_done(struct srd_peer *peer, u64 gen, const struct srd_hdr *h);
extern atomic_t srd_rma_inline_sent, srd_rma_inline_served, srd_rma_late;
extern atomic_t srd_rma_regs, srd_rma_wakeups, srd_rma_unanswered;
/* tombstones of requests given up on, per link (step 22) */
#define SRD_RMA_TOMBS		(4 * SCIF_RDMA_RMA_REQS)

/*
 * Work requests of one RMA step on the link's send queue: pending counts
 * those posted and not completed (raised before each is posted, lowered
 * with release by its completion in softirq, the handler's last touch of
 * the struct; its owner reads it with acquire), plus one while its owner
 * posts several (srd_post_sg()); status is the first completion error.
 */
struct srd_rwr {
	struct ib_cqe cqe;
	struct srd_ka *ka;
	atomic_t pending;
	int status;
};

/* Local pages DMA-mapped and described by a fast-registration MR. */
struct srd_map {
	struct sg_table sgt;
	u32 len;			/* bytes mapped */
	int nents;
	bool sgt_alloc;
	enum dma_data_direction dir;
	struct ib_mr *mr;
};

struct srd_ka *srd_rma_use(struct srd_peer *peer, u64 gen);
void srd_rma_unuse(struct srd_ka *ka);
int srd_rwr_post(struct srd_rwr *r, struct ib_send_wr *wr);
void srd_rwr_wait(struct srd_rwr *r);
void srd_rwr_poll_wait(struct srd_rwr *r);
/* a small call's caller polls before it sleeps (scif_rdma_rma.c) */
#define SRD_POLL_US_MAX		10000
extern atomic_t srd_rma_polled;
bool srd_poll(bool (*done)(const void *arg), const void *arg);
int srd_map(struct srd_ka *ka, struct srd_map *m, struct page **pages,
	    unsigned int off, u32 len, unsigned int maxpg,
	    enum dma_data_direction dir);
int srd_reg(struct srd_ka *ka, struct srd_map *m, int access);
void srd_unmap(struct srd_ka *ka, struct srd_map *m);
void srd_to_pages(struct page **pages, unsigned int off, const u8 *buf,
		  u32 len);
void srd_from_pages(u8 *buf, struct page **pages, unsigned int off, u32 len);

/* scif_rdma_key.c: direct reads and writes (steps 23-25) */
extern bool srd_direct_reads, srd_direct_writes;
extern atomic_t srd_rma_direct_reads, srd_rma_direct_writes, srd_keys_live;
extern atomic_t srd_keys_unanswered;
void srd_key_expose(struct srd_peer *peer, struct srd_ka *ka, u64 gen,
		    u32 lid, u32 rid, struct scif_endpt *ep, u64 off, u32 len);
void srd_windows_gone(bool wait);
void srd_keys_exit(void);
void srd_keys_link_dead(struct srd_ka *ka);
void srd_keys_in_free(struct srd_ka *ka);
bool srd_keys_busy(struct srd_ka *ka, u32 *id);
void srd_keys_conn_gone(struct srd_peer *peer, u64 gen, u32 lid);
void srd_key_rx(struct srd_peer *peer, u64 gen, struct srd_conn *c,
		const struct srd_hdr *h, const u8 *payload);
struct srd_rkey;
struct srd_rkey *srd_key_get(struct srd_ka *ka, u64 serial,
			     unsigned int access, u64 roff, u32 *len,
			     u64 *iova, u32 *rkey);
void srd_key_put(struct srd_ka *ka, u64 gen, struct srd_rkey *k);
int srd_direct_small(struct srd_ka *ka, u64 gen, u64 serial, u64 roff,
		     struct page **pages, unsigned int off, u32 len,
		     bool write, bool ordered);
int srd_rma(struct scif_endpt *ep, struct scif_endpt *p, int op, u64 roff,
	    struct page **pages, unsigned int first_off, size_t len,
	    u32 flags);
int srd_signal(struct scif_endpt *ep, struct scif_endpt *p, u64 roff,
	       u64 val);
int srd_fence(struct scif_endpt *ep, struct scif_endpt *p, int op, int *mark);

/*
 * The peer showed it is alive (step 7).  Not only frames count: frames
 * queue behind the RDMA work requests posted before them on the peer's
 * send queue, so while the peer serves our large reads no frame of its
 * may arrive for longer than SCIF_RDMA_DEAD on a slow link, but it still
 * acknowledges our PINGs.  On InfiniBand and RoCE a send or RDMA WRITE
 * completes once the peer acknowledged it; on iWARP it may complete once
 * handed to TCP (Soft-iWARP does), which proves nothing, so there only
 * an RDMA READ, answered by the peer, counts besides frames, and a side
 * posting RDMA WRITEs puts a frame among them every SCIF_RDMA_MARK bytes
 * (srd_ka_mark()).  A local operation (IB_WR_REG_MR) never counts.
 */
static inline void srd_ka_alive(struct srd_ka *ka)
{
	WRITE_ONCE(ka->last_alive, jiffies);
}

static inline bool srd_id_ok(unsigned int id)
{
	return id >= SCIF_REMOTE_NODE_MIN && id <= SCIF_REMOTE_NODE_MAX;
}

#endif /* SCIF_RDMA_H */
