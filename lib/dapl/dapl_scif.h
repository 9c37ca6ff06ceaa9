/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_scif.h - objects of the SCIF DAT 2.0 provider (libdaplscif).
 *
 * Every handle given to a consumer points to an object whose first word is
 * the DAT_PROVIDER table (the registry dispatches through it).  Objects
 * have no virtual functions so that word stays first.
 *
 * Locking: each IA has one mutex, Ia::mu, that protects the object graph of
 * the IA: the lists in Ia, every field of its child objects marked
 * "(mu)", and the fields of Conn marked "(mu)".  Blocking SCIF calls
 * (send, recv, register, RMA, connect) are never made with Ia::mu held;
 * Conn::op_mu serializes what a connection sends (messages, and the
 * registrations offered with them); RDMA runs on the RDMA workers
 * without it (RdmaEngine).  An EP letting go of its connection waits with
 * Ia::mu held for the RDMA calls running on it (rdma_drain), which end
 * without taking Ia::mu.
 * Lock order: Conn::op_mu, then Ia::mu, then RdmaEngine::mu, then an
 * EventQueue's own mutex (or a CNO's).
 */
#ifndef DAPL_SCIF_H
#define DAPL_SCIF_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <scif.h>

#include "dapl_evq.h"
#include "dapl_scif_ops.h"
#include "dapl_util.h"

namespace daplscif {

struct Ia;
struct Evd;
struct Ep;
struct Cr;
struct Sp;
struct Pz;
struct Srq;
struct Cno;

/* Common head of every object handed out as a DAT handle. */
struct Obj {
    const DAT_PROVIDER *prov; /* must stay the first member */
    DAT_HANDLE_TYPE type;
    Ia *ia;
    DAT_CONTEXT ctx; /* consumer context */
};

/* A SCIF endpoint that is closed when its last user lets go. */
struct ScifEp {
    explicit ScifEp(scif_epd_t e) : epd(e) {}
    ~ScifEp() {
        if (epd >= 0)
            scif_ops().close(epd);
    }
    ScifEp(const ScifEp &) = delete;
    ScifEp &operator=(const ScifEp &) = delete;
    scif_epd_t epd;
};

/* What the peer offered us: one region per context id. */
struct PeerMr {
    uint32_t priv;
    uint64_t va;
    uint64_t len;
    int64_t win;
    bool same_pz;
};

/* Our window for one of our regions, registered on one connection. */
struct LocalWin {
    off_t off;  /* window offset of the page holding the region start */
    size_t len; /* whole pages */
};

/*
 * An RDMA read or write posted on a connection and not yet completed
 * (dapl_rdma.cpp).  Everything it needs is taken at post time, so a
 * worker runs it with no lock held.  Jobs are kept by their EP and used
 * again (Ep::free_jobs): a post allocates only when more RDMA DTOs are on
 * their way on the EP than ever before, as the spec asks of
 * dat_ep_post_rdma_read (segs and loffs have room for the EP's limit).
 */
struct RdmaJob {
    Ep *ep; /* completes on it; the EP flushes its jobs before it lets go */
    bool is_read;
    bool barrier; /* DAT_COMPLETION_BARRIER_FENCE_FLAG */
    DAT_DTO_COOKIE cookie;
    DAT_COMPLETION_FLAGS flags;
    uint64_t len;
    int64_t roff;               /* the peer's window offset; -1: none */
    std::vector<Seg> segs;      /* the local I/O vector */
    std::vector<int64_t> loffs; /* per segment: its LMR's window offset, -1 none */
    enum State { kQueued, kRunning, kDone, kCancelled };
    State state = kQueued;                          /* (RdmaEngine::mu) */
    DAT_DTO_COMPLETION_STATUS st = DAT_DTO_SUCCESS; /* once kDone */
};

/* One SCIF connection (active or passive). */
struct Conn {
    explicit Conn(scif_epd_t e) : ep(std::make_shared<ScifEp>(e)) {}
    std::shared_ptr<ScifEp> ep;
    std::mutex op_mu; /* serializes what this connection sends */
    /* fields below: (mu) of the owning IA */
    Ep *owner = nullptr;          /* the EP using it, once accepted/connecting */
    Cr *cr = nullptr;             /* passive: the pending connection request */
    Sp *sp = nullptr;             /* passive: the service point it arrived on */
    bool dead = false;            /* reset, or we dropped it */
    bool got_req = false;         /* passive: CONN_REQ seen */
    bool knows_accepting = false; /* passive: CONN_REQ had MSGF_KNOWS_ACCEPTING */
    /*
     * A loss seen while the connection is busy only marks it dead and
     * records how it ended in lost_graceful; the events come once it is
     * idle.  Busy: dat_cr_accept is sending ACCEPT (passive; cr_accept
     * reports the loss after ESTABLISHED), or request DTOs are on their
     * way (dtos; the last to finish reports it, conn_dto_done).  So the
     * completion of a send the peer answered by disconnecting comes
     * before DISCONNECTED, as an RC send's ACK comes before the peer's
     * DREQ.
     */
    bool accepting = false;
    int dtos = 0;
    bool lost_graceful = false;
    std::map<uint32_t, PeerMr> peer;   /* regions the peer offered */
    std::map<uint32_t, LocalWin> wins; /* our regions' windows here */
    /*
     * (RdmaEngine::mu) RDMA DTOs posted and not yet completed, in post
     * order; how many of them a worker is running; how many were posted
     * and completed in all (a send waits for those before it).  A
     * vector, its room made before a post counts anything
     * (rdma_make_room), so that pushing never allocates nor throws.
     */
    std::vector<std::shared_ptr<RdmaJob>> jobs;
    int running = 0;
    uint64_t posted = 0, completed = 0;
    scif_portID peer_id{};
    /*
     * Progress thread only: the message being received.  It is read
     * without blocking, as it arrives, so a peer that stops half way
     * through a message never stalls the progress engine.
     */
    MsgHdr rhdr{};
    size_t rhdr_got = 0;  /* header bytes in rhdr */
    size_t rbody_got = 0; /* body bytes in rbuf */
    std::vector<uint8_t> rbuf;
    scif_epd_t epd() const { return ep->epd; }
};

struct Cno : Obj {
    std::mutex mu; /* protects the fields below */
    std::condition_variable cv;
    std::deque<Evd *> triggered;
    DAT_OS_WAIT_PROXY_AGENT agent{nullptr, nullptr};
    int pipe_rd = -1, pipe_wr = -1; /* dat_cno_fd_create */
    int waiters = 0;
    bool dying = false;
    void trigger(Evd *evd);
};

struct Evd : Obj {
    Evd(DAT_COUNT qlen) : q(qlen) {}
    EventQueue q;
    DAT_EVD_FLAGS flags = DAT_EVD_DEFAULT_FLAG;
    Cno *cno = nullptr;     /* (mu) */
    bool enabled = true;    /* (mu) */
    int users = 0;          /* (mu) EPs, SPs, IA async use */
    int restrict_users = 0; /* (mu) EPs needing threshold 1 */
};

struct Pz : Obj {
    int users = 0; /* (mu) LMRs, RMRs, EPs, SRQs */
};

struct Lmr : Obj {
    Pz *pz;
    DAT_MEM_TYPE mem_type;
    DAT_REGION_DESCRIPTION desc;
    uint64_t va;
    uint64_t len;
    DAT_MEM_PRIV_FLAGS priv;
    DAT_VA_TYPE va_type;
    uint32_t id;       /* lmr_context == rmr_context */
    int rmr_users = 0; /* (mu) RMRs bound to it */
};

struct Rmr : Obj {
    Pz *pz;
    bool bound = false;     /* (mu) */
    Lmr *lmr = nullptr;     /* (mu) */
    DAT_LMR_TRIPLET trip{}; /* (mu) */
    DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_NONE_FLAG;
    DAT_VA_TYPE va_type = DAT_VA_TYPE_VA;
    uint32_t id = 0;          /* (mu) current rmr_context, 0 when unbound */
    std::weak_ptr<Conn> conn; /* (mu) where it was offered */
};

/* A posted receive. */
struct RecvReq {
    std::vector<Seg> segs;
    DAT_DTO_COOKIE cookie;
    DAT_COMPLETION_FLAGS flags;
};

struct Srq : Obj {
    Pz *pz;
    DAT_SRQ_ATTR attr;
    std::deque<RecvReq> recvs; /* (mu) */
    int users = 0;             /* (mu) EPs */
    int outstanding = 0;       /* (mu) taken by a message, not yet done */
};

/* A message that arrived before a receive was posted. */
struct Unexpected {
    std::vector<uint8_t> data;
    uint16_t flags;
};

struct Ep : Obj {
    Pz *pz = nullptr;                               /* (mu) */
    Evd *recv_evd = nullptr;                        /* (mu) */
    Evd *req_evd = nullptr;                         /* (mu) */
    Evd *conn_evd = nullptr;                        /* (mu) */
    Srq *srq = nullptr;                             /* (mu) */
    DAT_EP_ATTR attr;                               /* (mu) */
    DAT_EP_STATE state = DAT_EP_STATE_UNCONNECTED;  /* (mu) */
    std::shared_ptr<Conn> conn;                     /* (mu) */
    std::deque<RecvReq> recvs;                      /* (mu) */
    std::deque<Unexpected> unexpected;              /* (mu) */
    std::vector<uint8_t> peer_pdata;                /* (mu) active side, valid until reset */
    sockaddr_in remote_addr{};                      /* (mu) */
    uint64_t remote_qual = 0;                       /* (mu) */
    uint64_t local_qual = 0;                        /* (mu) */
    bool has_deadline = false;                      /* (mu) */
    std::chrono::steady_clock::time_point deadline; /* (mu) */
    Credit req_credit = std::make_shared<std::atomic<int>>(0);
    /*
     * (mu) RDMA jobs of this EP not in use, and how many it has in all:
     * free_jobs has room for every one, so giving one back never
     * allocates.
     */
    std::vector<std::shared_ptr<RdmaJob>> free_jobs;
    size_t njobs = 0;
    Sp *rsp = nullptr;          /* (mu) RSP reserving this EP */
    bool provider_made = false; /* created by a PSP with PROVIDER flag */
};

/* Listening SCIF endpoint of a PSP or RSP. */
struct Sp : Obj {
    bool is_rsp = false;
    uint64_t qual = 0;
    Evd *evd = nullptr;
    DAT_PSP_FLAGS flags = DAT_PSP_CONSUMER_FLAG;
    Ep *ep = nullptr; /* RSP: the reserved EP */
    std::shared_ptr<ScifEp> lep;
    /*
     * (mu) The progress engine stops polling a listener whose accept
     * failed for good (node gone), and pauses one that ran out of
     * descriptors or memory until retry_at, instead of spinning on it.
     */
    bool listen_failed = false;
    bool backoff = false;
    std::chrono::steady_clock::time_point retry_at;
};

struct Cr : Obj {
    std::shared_ptr<Conn> conn; /* (mu) */
    Sp *sp = nullptr;           /* (mu) */
    Ep *ep = nullptr;           /* (mu) RSP or provider-created EP */
    std::vector<uint8_t> pdata;
    sockaddr_in remote_addr{};
    uint64_t remote_port_qual = 0;
};

/*
 * The IA's RDMA workers (dapl_rdma.cpp): threads that carry out posted
 * RDMA DTOs so that the post returns at once and several reads are on the
 * link side by side.  mu protects the fields below and the fields of Conn
 * and RdmaJob marked "(RdmaEngine::mu)".
 */
struct RdmaEngine {
    std::mutex mu;
    std::condition_variable work_cv;          /* a job may start, or stop */
    std::condition_variable idle_cv;          /* a job stopped running or completed */
    std::vector<std::shared_ptr<Conn>> conns; /* those with jobs (room: rdma_make_room) */
    std::vector<std::thread> workers;
    unsigned nworkers = 0; /* wanted (DAPLSCIF_RDMA_WORKERS); 0: run in the post */
    bool stop = false;
    unsigned waiting = 0;      /* workers waiting for a job (tests) */
    uint64_t idle_wakeups = 0; /* workers woken that found no job to start (tests) */
    /* set at dat_ia_open, then read only: v-calls with SCIF_RMA_USECACHE (DAPLSCIF_RMA_CACHE) */
    bool vcache = false;
};

struct Ia : Obj {
    std::mutex mu; /* see the header comment */
    const DAT_PROVIDER *provider;
    uint16_t node = 0;
    uint16_t host = 0; /* cluster id of this host, 0 if none (dapl_util.h) */
    sockaddr_in addr{};
    Evd *async_evd = nullptr;
    bool own_async = false;
    uint32_t next_id = 1;                     /* (mu) LMR/RMR context ids */
    std::list<Obj *> objs;                    /* (mu) every child object */
    std::map<uint32_t, Lmr *> lmrs;           /* (mu) by context */
    std::list<Ep *> eps;                      /* (mu) */
    std::list<Sp *> sps;                      /* (mu) */
    std::list<std::shared_ptr<Conn>> pending; /* (mu) passive, no EP yet */
    int wake_fd = -1;
    bool stop = false;               /* (mu) */
    uint64_t loops = 0;              /* (mu) poll sets built so far */
    std::condition_variable loop_cv; /* loops advanced (with mu) */
    std::thread progress;
    RdmaEngine rdma;

    void wake();
    void run(); /* the progress engine */
    /*
     * Wait until the progress engine has rebuilt its poll set after
     * `since` (an earlier value of loops): it then holds no reference
     * to endpoints unlinked before, so their descriptors are closed.
     */
    void sync_progress(uint64_t since);
};

/* ---- handle registry and objects (dapl_ia.cpp) -------------------------- */

/* Handle registry: every live object, for DAT_INVALID_HANDLE checks. */
void reg_add(Obj *o);
void reg_del(Obj *o);
Obj *reg_find(DAT_HANDLE h, DAT_HANDLE_TYPE t);

/*
 * The handle type of each object, and the DAT_INVALID_HANDLE subtype an
 * entry point returns for a bad handle of it (an EVD's depends on the
 * argument: EVD_REQUEST unless the caller says otherwise).  Sp serves two
 * handle types: lookup_sp.
 */
template <class T> struct HandleOf;
#define DAPL_HANDLE_OF(T, TYPE, SUB)                                                               \
    template <> struct HandleOf<T> {                                                               \
        static constexpr DAT_HANDLE_TYPE type = DAT_HANDLE_TYPE_##TYPE;                            \
        static constexpr unsigned bad = DAT_INVALID_HANDLE_##SUB;                                  \
    }
DAPL_HANDLE_OF(Ia, IA, IA);
DAPL_HANDLE_OF(Cno, CNO, CNO);
DAPL_HANDLE_OF(Evd, EVD, EVD_REQUEST);
DAPL_HANDLE_OF(Pz, PZ, PZ);
DAPL_HANDLE_OF(Lmr, LMR, LMR);
DAPL_HANDLE_OF(Rmr, RMR, RMR);
DAPL_HANDLE_OF(Srq, SRQ, SRQ);
DAPL_HANDLE_OF(Ep, EP, EP);
DAPL_HANDLE_OF(Cr, CR, CR);
#undef DAPL_HANDLE_OF

/*
 * The one handle check of the entry points: *out is h as a live T and the
 * result DAT_SUCCESS, or *out is nullptr and the result DAT_INVALID_HANDLE
 * with subtype `bad`.  Use:
 *     Ep *ep;
 *     if (DAT_RETURN err = lookup(h, &ep))
 *         return err;
 */
template <class T> DAT_RETURN lookup(DAT_HANDLE h, T **out, unsigned bad = HandleOf<T>::bad) {
    *out = static_cast<T *>(reg_find(h, HandleOf<T>::type));
    if (!*out)
        return dat_err(DAT_INVALID_HANDLE, bad);
    return DAT_SUCCESS;
}

/* The same for an optional handle: DAT_HANDLE_NULL gives nullptr. */
template <class T> DAT_RETURN lookup_opt(DAT_HANDLE h, T **out, unsigned bad = HandleOf<T>::bad) {
    if (!h) {
        *out = nullptr;
        return DAT_SUCCESS;
    }
    return lookup(h, out, bad);
}

/* The same for a handle that must also belong to `ia`. */
template <class T> DAT_RETURN lookup_in(Ia *ia, DAT_HANDLE h, T **out) {
    DAT_RETURN err = lookup(h, out);
    if (err == DAT_SUCCESS && (*out)->ia != ia)
        return dat_err(DAT_INVALID_HANDLE, HandleOf<T>::bad);
    return err;
}

/* A PSP or RSP handle (t): subtype DAT_INVALID_HANDLE_PSP or _RSP. */
DAT_RETURN lookup_sp(DAT_HANDLE h, DAT_HANDLE_TYPE t, Sp **out);

/* Initialize the common head and register the object with its IA (mu). */
void obj_init(Obj *o, Ia *ia, DAT_HANDLE_TYPE t);
void obj_unlink(Obj *o); /* (mu) */

/* ---- events (dapl_evd.cpp) ------------------------------------------------ */

/* Queue an event on an EVD and trigger its CNO when due (mu). */
void evd_post(Evd *evd, const DAT_EVENT &ev, bool notify = true, Credit credit = nullptr);
void post_conn_event(Ep *ep, DAT_EVENT_NUMBER num, const void *pdata = nullptr, DAT_COUNT plen = 0);
/* An asynchronous error event on the IA's async EVD (mu). */
void post_async_error(Ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE h, DAT_COUNT reason);
void post_dto(Ep *ep, Evd *evd, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS st, uint64_t len,
              DAT_DTOS op, bool notify, Credit credit = nullptr);
/* Create an EVD on an IA (mu); destroy one already unlinked (no lock). */
DAT_RETURN evd_create_locked(Ia *ia, DAT_COUNT qlen, Cno *cno, DAT_EVD_FLAGS flags, Evd **out);
void evd_destroy(Evd *e);
void cno_destroy(Cno *c); /* already unlinked */

/* ---- memory (dapl_mem.cpp) ------------------------------------------------ */

/* Our regions offered on a connection (mu): LMRs of the IA, same PZ marks. */
std::vector<MrInfo> mr_snapshot(Ia *ia, Pz *pz);
/* Register windows for offered regions (no lock held); fills win. */
void mr_register(const std::shared_ptr<Conn> &c, std::vector<MrInfo> *mrs, Ia *ia);
/* Drop the current binding of an RMR (mu held); returns what to withdraw. */
std::shared_ptr<Conn> rmr_unbind_locked(Rmr *r, uint32_t *old);

/* ---- EP (dapl_ep.cpp) ------------------------------------------------------ */

void default_attr(DAT_EP_ATTR *a);
/* Whether ep / sp is still a live object of ia (mu). */
bool ep_alive(Ia *ia, Ep *ep);
bool sp_alive(Ia *ia, Sp *sp);
void ep_flush(Ep *ep);     /* (mu) */
void ep_drop_conn(Ep *ep); /* (mu) */
/*
 * An EP on an SRQ left the connected state: tell the consumer through the
 * async EVD that the EP takes no more receives from the SRQ (mu).
 */
void srq_ep_done(Ep *ep);
/* Free an object of the connection side at IA close (mu). */
DAT_RETURN ep_free_locked(Ep *ep);

/* ---- connection management (dapl_cm.cpp) ---------------------------------- */

void conn_lost(Ia *ia, const std::shared_ptr<Conn> &c, bool graceful); /* (mu) */
void sp_free_locked(Sp *sp);                                           /* (mu) */
void cr_free_locked(Cr *cr);                                           /* (mu) */
/* A request DTO on c, taken by ep, finished: report a loss held back for it (mu). */
void conn_dto_done(Ep *ep, const std::shared_ptr<Conn> &c);

/* ---- DTOs (dapl_dto.cpp) -------------------------------------------------- */

/* Validate a local I/O vector for an EP (mu). */
DAT_RETURN check_local_iov(Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS need,
                           std::vector<Seg> *segs);
/* A SEND message arrived on ep: complete a receive or keep it (mu). */
void deliver_send(Ep *ep, const uint8_t *data, uint64_t len, uint16_t mflags);

/* Complete a request DTO on its EP's request EVD (mu). */
void complete_req(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS st, uint64_t len,
                  DAT_DTOS op, DAT_COMPLETION_FLAGS flags, bool counted);

/* ---- RDMA DTOs (dapl_rdma.cpp) ---------------------------------------------- */

/*
 * A job for an RDMA DTO on ep of at most maxiov segments (mu): one it had
 * before, else a new one, with room for maxiov segments (may throw
 * std::bad_alloc, before the post changed anything).
 */
std::shared_ptr<RdmaJob> rdma_job(Ep *ep, size_t maxiov);
/* A job no longer in use back to its EP (mu; never allocates). */
void rdma_give_back(std::shared_ptr<RdmaJob> j);
/*
 * Room for one more job on c (mu), so that rdma_post cannot fail: called
 * before the post counts the DTO (may throw std::bad_alloc).
 */
void rdma_make_room(Ia *ia, Conn *c);
/*
 * Hand a validated RDMA DTO on c to the workers (mu; counted in c->dtos
 * and the EP's credit already, rdma_make_room called).  With no workers (DAPLSCIF_RDMA_WORKERS=0,
 * or none could start) it runs in the caller, Ia::mu dropped meanwhile.
 */
void rdma_post(Ia *ia, const std::shared_ptr<Conn> &c, std::shared_ptr<RdmaJob> job,
               std::unique_lock<std::mutex> &lk);
/*
 * ep lets go of its connection (mu): jobs not started are cancelled, the
 * running ones waited for; then, in post order, each completes with its
 * status, a cancelled one flushed (report), or silently (!report: EP freed).
 */
void rdma_drain(Ep *ep, bool report);
/*
 * The peer ended c while its RDMA DTOs are on their way (mu): the jobs not
 * started become FLUSHED without their calls; they complete after the
 * running ones (at once when none runs), the last reporting the loss.
 */
void rdma_flush_queued(Ia *ia, const std::shared_ptr<Conn> &c);
/* Wait (no lock held) until every RDMA DTO posted on c so far completed. */
void rdma_wait_posted(Ia *ia, Conn *c);
/* Whether c has RDMA DTOs not yet completed (mu). */
bool rdma_busy(Ia *ia, Conn *c);
/* Stop and join the workers (no lock held; no jobs left to run). */
void rdma_stop(Ia *ia);

/* ---- wire protocol, sending side (dapl_wire.cpp) -------------------------- */

/* Send one framed message (takes no lock; caller holds op_mu). */
int send_msg(scif_epd_t epd, uint16_t type, uint16_t flags, uint64_t arg, const void *a,
             size_t alen, const void *b = nullptr, size_t blen = 0);
/* A SEND message gathered from an I/O vector (caller holds op_mu). */
int send_iov(scif_epd_t epd, const std::vector<Seg> &segs, uint16_t flags);
/* The body of CONN_REQ / CONN_ACCEPT / CONN_REJECT, and its parser. */
std::vector<uint8_t> conn_body(uint64_t qual, const void *pdata, DAT_COUNT plen,
                               const std::vector<MrInfo> &mrs);
bool parse_body(const std::vector<uint8_t> &v, size_t len, ConnBody *b, std::vector<uint8_t> *pdata,
                std::vector<MrInfo> *mrs);
/* Record the regions the peer offered on c (mu). */
void peer_add(Conn *c, const MrInfo *m, size_t n);

} /* namespace daplscif */

#endif /* DAPL_SCIF_H */
