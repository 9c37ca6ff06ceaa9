// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * conn_test.cpp - the provider's connection paths on a fake SCIF
 * (fake_scif.h): the test plays the peer by hand with the wire protocol,
 * so partial messages, accept, reject and a lost peer are checked without
 * a kernel; and which SCIF RMA call an RDMA DTO on an accepted connection
 * makes (RdmaPathTest).  Waits are bounded (kWait); nothing asserts on
 * time.
 */
#include "dapl_provider.h"
#include "dapl_scif.h"
#include "alloc_count.h"
#include "fake_scif.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <iterator>
#include <string>
#include <vector>

#include <poll.h>

#include <gtest/gtest.h>

using namespace daplscif;

extern "C" void DAT_API dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance);
extern "C" void DAT_API dat_provider_fini(const DAT_PROVIDER_INFO *info);

namespace {

constexpr DAT_TIMEOUT kWait = 10 * 1000 * 1000; /* us: a bound, never a result */
constexpr int kWaitMs = 10 * 1000;

const ScifOps &peer() {
    return fake_scif::ops();
}

/* A framed message as the provider frames it. */
std::vector<uint8_t> frame(uint16_t type, const std::vector<uint8_t> &body, uint16_t flags = 0) {
    MsgHdr h{};
    h.magic = kMagic;
    h.type = type;
    h.flags = flags;
    h.len = (uint32_t)body.size();
    std::vector<uint8_t> v(sizeof(h) + body.size());
    std::memcpy(v.data(), &h, sizeof(h));
    if (!body.empty())
        std::memcpy(v.data() + sizeof(h), body.data(), body.size());
    return v;
}

void peer_send(scif_epd_t e, const uint8_t *p, size_t n) {
    ASSERT_EQ(peer().send(e, const_cast<uint8_t *>(p), (int)n, SCIF_SEND_BLOCK), (int)n);
}

bool peer_readable(scif_epd_t e) {
    pollfd p{peer().get_fd(e), POLLIN, 0};
    return poll(&p, 1, kWaitMs) == 1;
}

/* Read one framed message from the provider; false if none came. */
bool peer_recv(scif_epd_t e, MsgHdr *h, std::vector<uint8_t> *body) {
    if (!peer_readable(e))
        return false;
    if (peer().recv(e, h, sizeof(*h), SCIF_RECV_BLOCK) != (int)sizeof(*h) || h->magic != kMagic)
        return false;
    body->resize(h->len);
    return h->len == 0 || peer().recv(e, body->data(), (int)h->len, SCIF_RECV_BLOCK) == (int)h->len;
}

/* A framed message that is already there (no wait). */
bool peer_recv_now(scif_epd_t e, MsgHdr *h, std::vector<uint8_t> *body) {
    pollfd p{peer().get_fd(e), POLLIN, 0};
    if (poll(&p, 1, 0) != 1)
        return false;
    if (peer().recv(e, h, sizeof(*h), SCIF_RECV_BLOCK) != (int)sizeof(*h))
        return false;
    body->resize(h->len);
    return h->len == 0 || peer().recv(e, body->data(), (int)h->len, SCIF_RECV_BLOCK) == (int)h->len;
}

std::string pdata_of(const std::vector<uint8_t> &body, size_t len) {
    ConnBody b;
    std::vector<uint8_t> pd;
    std::vector<MrInfo> mrs;
    if (!parse_body(body, len, &b, &pd, &mrs))
        return "<bad body>";
    return std::string(pd.begin(), pd.end());
}

/*
 * The provider's SCIF: the fake one, with a hook that runs once, in place,
 * after the provider's next send (armed by a test; the peer's own sends go
 * through peer() and never fire it).
 */
std::function<void()> send_hook;

int hooked_send(scif_epd_t epd, void *msg, int len, int flags) {
    int r = fake_scif::ops().send(epd, msg, len, flags);
    if (send_hook) {
        std::function<void()> h = std::move(send_hook);
        send_hook = nullptr;
        h();
    }
    return r;
}

const ScifOps &provider_ops() {
    static const ScifOps ops = [] {
        ScifOps o = fake_scif::ops();
        o.send = hooked_send;
        return o;
    }();
    return ops;
}

/* Wait until the progress engine went round twice: what was there, it read. */
void settle(DAT_IA_HANDLE h) {
    Ia *ia = static_cast<Ia *>(h);
    for (int i = 0; i < 2; i++) {
        uint64_t since;
        {
            std::lock_guard<std::mutex> lk(ia->mu);
            since = ia->loops;
        }
        ia->sync_progress(since);
    }
}

class ConnTest : public ::testing::Test {
  protected:
    /* The provider's SCIF calls, installed before the IA opens. */
    virtual const ScifOps &table() { return provider_ops(); }

    void SetUp() override {
        send_hook = nullptr;
        set_scif_ops(&table());
        std::memset(&info_, 0, sizeof(info_));
        std::strcpy(info_.ia_name, "ofa-v2-scif");
        info_.dapl_version_major = 2;
        dat_provider_init(&info_, "");
        DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
        ASSERT_EQ(ia_open((DAT_NAME_PTR) "ofa-v2-scif", 8, &async, &ia_), DAT_SUCCESS);
        ASSERT_EQ(evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd_), DAT_SUCCESS);
        ASSERT_EQ(evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd_),
                  DAT_SUCCESS);
        ASSERT_EQ(evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd_), DAT_SUCCESS);
        ASSERT_EQ(pz_create(ia_, &pz_), DAT_SUCCESS);
        ASSERT_EQ(ep_create(ia_, pz_, dto_evd_, dto_evd_, conn_evd_, nullptr, &ep_), DAT_SUCCESS);
    }

    void TearDown() override {
        if (peer_ >= 0)
            peer().close(peer_);
        if (listener_ >= 0)
            peer().close(listener_);
        if (ia_) {
            EXPECT_EQ(ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        }
        dat_provider_fini(&info_);
        EXPECT_EQ(fake_scif::open_count(), 0) << "SCIF endpoints leaked";
        set_scif_ops(nullptr);
    }

    /* Listen on kQual and connect the peer to it: the pending connection. */
    void peer_connects() {
        ASSERT_EQ(psp_create(ia_, kQual, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_), DAT_SUCCESS);
        peer_ = peer().open();
        ASSERT_GE(peer_, 0);
        scif_portID dst{0, qual_to_port(kQual)};
        ASSERT_GE(peer().connect(peer_, &dst), 0);
    }

    /*
     * ep_ connects (timeout in us, private data) to a listener the peer
     * made on q; the peer accepts and reads the request into *h, *body.
     */
    void connect_to_peer(DAT_CONN_QUAL q, DAT_TIMEOUT timeout, MsgHdr *h,
                         std::vector<uint8_t> *body, DAT_COUNT plen = 0,
                         const char *pdata = nullptr) {
        listener_ = peer().open();
        ASSERT_GE(listener_, 0);
        ASSERT_EQ(peer().bind(listener_, qual_to_port(q)), qual_to_port(q));
        ASSERT_EQ(peer().listen(listener_, 1), 0);
        sockaddr_in sa{};
        node_to_sockaddr(0, &sa);
        ASSERT_EQ(ep_connect(ep_, (DAT_IA_ADDRESS_PTR)&sa, q, timeout, plen, (DAT_PVOID)pdata,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
                  DAT_SUCCESS);
        ASSERT_TRUE(peer_readable(listener_));
        scif_portID from;
        ASSERT_EQ(peer().accept(listener_, &from, &peer_, 0), 0);
        ASSERT_TRUE(peer_recv(peer_, h, body));
        ASSERT_EQ(h->type, MSG_CONN_REQ);
    }

    /* The connection request event; its CR in *cr. */
    void expect_cr(DAT_CR_HANDLE *cr) {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        ASSERT_EQ(evd_wait(cr_evd_, kWait, 1, &ev, &nmore), DAT_SUCCESS);
        ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
        *cr = ev.event_data.cr_arrival_event_data.cr_handle;
    }

    /*
     * The peer connects and sends a whole CONN_REQ offering mrs, with
     * flags (MSGF_KNOWS_ACCEPTING: a peer of this version): the CR in *cr.
     */
    void peer_requests(DAT_CR_HANDLE *cr, const std::vector<MrInfo> &mrs = {}, uint16_t flags = 0) {
        peer_connects();
        std::vector<uint8_t> req = frame(MSG_CONN_REQ, conn_body(kQual, nullptr, 0, mrs), flags);
        peer_send(peer_, req.data(), req.size());
        expect_cr(cr);
    }

    /* Accept cr with ep; the peer reads the ACCEPT. */
    void accept_with(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep) {
        ASSERT_EQ(cr_accept(cr, ep, 0, nullptr), DAT_SUCCESS);
        MsgHdr h;
        std::vector<uint8_t> body;
        ASSERT_TRUE(peer_recv(peer_, &h, &body));
        ASSERT_EQ(h.type, MSG_CONN_ACCEPT);
    }

    DAT_EVENT_NUMBER next_conn_event() {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        if (evd_wait(conn_evd_, kWait, 1, &ev, &nmore) != DAT_SUCCESS)
            return (DAT_EVENT_NUMBER)0;
        return ev.event_number;
    }

    DAT_EP_STATE ep_state() {
        DAT_EP_STATE st;
        EXPECT_EQ(ep_get_status(ep_, &st, nullptr, nullptr), DAT_SUCCESS);
        return st;
    }

    static constexpr DAT_CONN_QUAL kQual = 4711;
    DAT_PROVIDER_INFO info_;
    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL, conn_evd_ = DAT_HANDLE_NULL,
                   dto_evd_ = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep_ = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
    scif_epd_t peer_ = -1, listener_ = -1;
};

/* A CONN_REQ that arrives in pieces raises one request, only when whole. */
/* dat_evd_post_se on a full queue: DAT_QUEUE_FULL, nothing queued. */
TEST_F(ConnTest, PostSeOnAFullQueueIsQueueFull) {
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    ASSERT_EQ(evd_create(ia_, 2, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e), DAT_SUCCESS);
    DAT_EVENT ev{};
    ev.event_number = DAT_SOFTWARE_EVENT;
    for (uintptr_t i = 1; i <= 2; i++) {
        ev.event_data.software_event_data.pointer = reinterpret_cast<void *>(i);
        ASSERT_EQ(evd_post_se(e, &ev), DAT_SUCCESS);
    }
    ev.event_data.software_event_data.pointer = reinterpret_cast<void *>(uintptr_t{3});
    EXPECT_EQ(DAT_GET_TYPE(evd_post_se(e, &ev)), DAT_QUEUE_FULL);
    DAT_EVENT out{};
    ASSERT_EQ(evd_dequeue(e, &out), DAT_SUCCESS);
    EXPECT_EQ(out.event_data.software_event_data.pointer, reinterpret_cast<void *>(uintptr_t{1}));
    EXPECT_EQ(evd_post_se(e, &ev), DAT_SUCCESS); /* room again */
    ASSERT_EQ(evd_dequeue(e, &out), DAT_SUCCESS);
    EXPECT_EQ(out.event_data.software_event_data.pointer, reinterpret_cast<void *>(uintptr_t{2}));
    ASSERT_EQ(evd_dequeue(e, &out), DAT_SUCCESS);
    EXPECT_EQ(out.event_data.software_event_data.pointer, reinterpret_cast<void *>(uintptr_t{3}));
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(e, &out)), DAT_QUEUE_EMPTY);
    EXPECT_EQ(evd_free(e), DAT_SUCCESS);
}

/* An EVD's qlen past the IA's max_evd_qlen: refused at create and resize. */
TEST_F(ConnTest, EvdQlenPastTheIaLimitIsRefused) {
    DAT_IA_ATTR attr{};
    ASSERT_EQ(ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &attr, 0, nullptr), DAT_SUCCESS);
    const DAT_COUNT max = attr.max_evd_qlen;
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(evd_create(ia_, max + 1, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e)),
              DAT_INVALID_PARAMETER);
    ASSERT_EQ(evd_create(ia_, max, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(evd_resize(e, max + 1)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(evd_resize(e, 4), DAT_SUCCESS);
    EXPECT_EQ(evd_free(e), DAT_SUCCESS);
    /* The async EVD that dat_ia_open makes: the same limit. */
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia2 = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(ia_open((DAT_NAME_PTR) "ofa-v2-scif", max + 1, &async, &ia2)),
              DAT_INVALID_PARAMETER);
    EXPECT_EQ(ia2, DAT_HANDLE_NULL);
}

TEST_F(ConnTest, PartialConnReqThenReject) {
    peer_connects();
    std::vector<uint8_t> req = frame(MSG_CONN_REQ, conn_body(kQual, "hello", 5, {}));
    size_t cut[] = {5, sizeof(MsgHdr) + 3}; /* inside the header, inside the body */
    size_t at = 0;
    for (size_t c : cut) {
        peer_send(peer_, req.data() + at, c - at);
        at = c;
        settle(ia_);
        DAT_EVENT ev;
        EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(cr_evd_, &ev)), DAT_QUEUE_EMPTY)
            << "request raised from " << at << " of " << req.size() << " bytes";
    }
    peer_send(peer_, req.data() + at, req.size() - at);
    DAT_CR_HANDLE cr;
    expect_cr(&cr);
    DAT_CR_PARAM p;
    ASSERT_EQ(cr_query(cr, DAT_CR_FIELD_ALL, &p), DAT_SUCCESS);
    ASSERT_EQ(p.private_data_size, 5);
    EXPECT_EQ(std::memcmp(p.private_data, "hello", 5), 0);

    ASSERT_EQ(cr_reject(cr, 3, (DAT_PVOID) "no!"), DAT_SUCCESS);
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_TRUE(peer_recv(peer_, &h, &body));
    EXPECT_EQ(h.type, MSG_CONN_REJECT);
    EXPECT_EQ(pdata_of(body, h.len), "no!");
}

/* Accept: ACCEPT goes out, the EP is connected; the peer vanishing breaks it. */
TEST_F(ConnTest, AcceptThenPeerVanishes) {
    DAT_CR_HANDLE cr;
    peer_requests(&cr);
    ASSERT_EQ(cr_accept(cr, ep_, 2, (DAT_PVOID) "ok"), DAT_SUCCESS);
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_TRUE(peer_recv(peer_, &h, &body));
    EXPECT_EQ(h.type, MSG_CONN_ACCEPT);
    EXPECT_EQ(pdata_of(body, h.len), "ok");
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_CONNECTED);

    peer().close(peer_);
    peer_ = -1;
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_BROKEN);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_DISCONNECTED);
}

/* A peer that says DISCONNECT first ends the connection gracefully. */
TEST_F(ConnTest, AcceptThenPeerDisconnects) {
    DAT_CR_HANDLE cr;
    peer_requests(&cr);
    ASSERT_EQ(cr_accept(cr, ep_, 0, nullptr), DAT_SUCCESS);
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_ESTABLISHED);
    std::vector<uint8_t> bye = frame(MSG_DISCONNECT, {});
    peer_send(peer_, bye.data(), bye.size());
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_DISCONNECTED);
}

/*
 * ESTABLISHED is on the EVD before ACCEPT leaves: whatever the peer does
 * once it has the accept (dtestcm's client disconnects its other
 * connections) comes after it on an EVD that takes both.
 */
TEST_F(ConnTest, EstablishedBeforeAcceptLeaves) {
    DAT_CR_HANDLE cr;
    peer_requests(&cr);
    DAT_EVENT_NUMBER seen = (DAT_EVENT_NUMBER)0;
    send_hook = [this, &seen] {
        DAT_EVENT ev;
        if (evd_dequeue(conn_evd_, &ev) == DAT_SUCCESS)
            seen = ev.event_number;
    };
    ASSERT_EQ(cr_accept(cr, ep_, 0, nullptr), DAT_SUCCESS);
    EXPECT_EQ(seen, DAT_CONNECTION_EVENT_ESTABLISHED) << "no ESTABLISHED when ACCEPT left";
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_TRUE(peer_recv(peer_, &h, &body));
    EXPECT_EQ(h.type, MSG_CONN_ACCEPT);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_CONNECTED);
}

/*
 * A send the peer answers by disconnecting: its completion comes before
 * DISCONNECTED on an EVD that takes both (dapl/rdma_test's server once
 * saw DISCONNECTED first and took it for its send's completion).  The
 * peer reads the send and says DISCONNECT, and the progress engine has
 * read that, before the provider's send call returns.  A send posted
 * meanwhile, after the peer's DISCONNECT arrived, is flushed.
 */
class DtoThenLossTest : public ConnTest {
  protected:
    /* An EP whose DTO and connection events share one EVD, accepted. */
    void connect_shared_evd() {
        ASSERT_EQ(evd_create(ia_, 8, DAT_HANDLE_NULL,
                             (DAT_EVD_FLAGS)(DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG), &both_),
                  DAT_SUCCESS);
        ASSERT_EQ(ep_create(ia_, pz_, both_, both_, both_, nullptr, &ep2_), DAT_SUCCESS);
        DAT_CR_HANDLE cr;
        peer_requests(&cr);
        accept_with(cr, ep2_);
        ASSERT_EQ(next_event().event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    }

    /*
     * Connect, then post send 42, which the peer reads and answers by
     * disconnecting, seen by the engine before the send call returns
     * (and send 43 posted then too, if @post_again).
     */
    void send_answered_by_disconnect(bool post_again) {
        connect_shared_evd();
        peer_answers_with_disconnect(post_again);
        DAT_DTO_COOKIE c{.as_64 = 42};
        ASSERT_EQ(ep_post_send(ep2_, 0, nullptr, c, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    }

    /* Armed before a send: the peer reads it, disconnects, the engine sees it. */
    void peer_answers_with_disconnect(bool post_again) {
        send_hook = [this, post_again] {
            MsgHdr h;
            std::vector<uint8_t> body;
            ASSERT_TRUE(peer_recv(peer_, &h, &body));
            EXPECT_EQ(h.type, MSG_SEND);
            std::vector<uint8_t> bye = frame(MSG_DISCONNECT, {});
            peer_send(peer_, bye.data(), bye.size());
            settle(ia_);
            if (post_again) {
                DAT_DTO_COOKIE c{.as_64 = 43};
                EXPECT_EQ(ep_post_send(ep2_, 0, nullptr, c, DAT_COMPLETION_DEFAULT_FLAG),
                          DAT_SUCCESS);
            }
        };
    }

    DAT_EVENT next_event() {
        DAT_EVENT ev{};
        DAT_COUNT nmore;
        if (evd_wait(both_, kWait, 1, &ev, &nmore) != DAT_SUCCESS)
            ev.event_number = (DAT_EVENT_NUMBER)0;
        return ev;
    }

    /* The next event is the completion of a send with this cookie and status. */
    void expect_send(uint64_t cookie, DAT_DTO_COMPLETION_STATUS st) {
        DAT_EVENT ev = next_event();
        ASSERT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT)
            << "event " << std::hex << ev.event_number;
        const DAT_DTO_COMPLETION_EVENT_DATA &d = ev.event_data.dto_completion_event_data;
        EXPECT_EQ(d.operation, DAT_DTO_SEND);
        EXPECT_EQ(d.user_cookie.as_64, cookie);
        EXPECT_EQ(d.status, st);
    }

    DAT_EVD_HANDLE both_ = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep2_ = DAT_HANDLE_NULL;
};

TEST_F(DtoThenLossTest, SendCompletesBeforeThePeersDisconnect) {
    send_answered_by_disconnect(false);
    expect_send(42, DAT_DTO_SUCCESS);
    EXPECT_EQ(next_event().event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    DAT_EP_STATE st;
    ASSERT_EQ(ep_get_status(ep2_, &st, nullptr, nullptr), DAT_SUCCESS);
    EXPECT_EQ(st, DAT_EP_STATE_DISCONNECTED);
}

TEST_F(DtoThenLossTest, SendAfterThePeersDisconnectIsFlushed) {
    send_answered_by_disconnect(true);
    expect_send(43, DAT_DTO_ERR_FLUSHED);
    expect_send(42, DAT_DTO_SUCCESS);
    EXPECT_EQ(next_event().event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    MsgHdr h;
    std::vector<uint8_t> body;
    EXPECT_FALSE(peer_recv_now(peer_, &h, &body)) << "the second send went out";
}

/*
 * RDMA DTOs: the fake's registration hands out window offsets and its RMA
 * calls are recorded (and move nothing), so a test sees which call an
 * RDMA read or write makes and with which offsets.  The provider makes
 * them on its RDMA workers (dapl_rdma.cpp); a test that holds calls in
 * progress to see their order arms the gate.
 */
struct RmaCall {
    char kind;      /* 'r' readfrom, 'w' writeto, 'R' vreadfrom, 'W' vwriteto */
    uint64_t local; /* the local window offset, or the address */
    size_t len;
    off_t roff;
    int flags = 0; /* the call's rma_flags (not compared) */
    bool operator==(const RmaCall &o) const {
        return kind == o.kind && local == o.local && len == o.len && roff == o.roff;
    }
};

std::ostream &operator<<(std::ostream &os, const RmaCall &c) {
    return os << c.kind << "(0x" << std::hex << c.local << ", " << std::dec << c.len << ", 0x"
              << std::hex << c.roff << std::dec << ")";
}

struct RegCall {
    uint64_t addr;
    size_t len;
    int prot;
};

std::vector<RmaCall> rma_calls; /* (gate.mu) */
std::vector<RegCall> reg_calls;
int rma_errno; /* nonzero: every RMA call fails with it (after being recorded) */

/*
 * While armed, an RMA call logs its start ("+" and its remote offset),
 * waits until the test opens it by that offset (at most kWaitMs, then it
 * goes on and logs "timeout"), and logs its end ("-").
 */
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool armed = false;
    std::set<off_t> open;
    std::vector<std::string> log;
    int inside = 0, most = 0;

    void pass(off_t roff) {
        std::unique_lock<std::mutex> lk(mu);
        if (!armed)
            return;
        log.push_back("+" + std::to_string(roff));
        inside++;
        most = std::max(most, inside);
        cv.notify_all();
        if (!cv.wait_for(lk, std::chrono::milliseconds(kWaitMs),
                         [&] { return open.count(roff) > 0; }))
            log.push_back("timeout");
        inside--;
        log.push_back("-" + std::to_string(roff));
        cv.notify_all();
    }
    void release(off_t roff) {
        std::lock_guard<std::mutex> lk(mu);
        open.insert(roff);
        cv.notify_all();
    }
    /* Wait (bounded) until n calls are inside at once. */
    bool wait_inside(int n) {
        std::unique_lock<std::mutex> lk(mu);
        return cv.wait_for(lk, std::chrono::milliseconds(kWaitMs), [&] { return inside >= n; });
    }
    std::vector<std::string> seen() {
        std::lock_guard<std::mutex> lk(mu);
        return log;
    }
} gate;

int rma_call(const RmaCall &c) {
    {
        std::lock_guard<std::mutex> lk(gate.mu);
        rma_calls.push_back(c);
    }
    gate.pass(c.roff);
    if (!rma_errno)
        return 0;
    errno = rma_errno;
    return -1;
}
constexpr off_t kWinStep = 1 << 24; /* window offsets the fake hands out */

int reg_delay_ms;              /* each registration takes this long (a large LMR's pinning) */
std::atomic<int> regs_done{0}; /* registrations that returned */

off_t rec_reg(scif_epd_t, void *addr, size_t len, off_t, int prot, int) {
    if (reg_delay_ms)
        std::this_thread::sleep_for(std::chrono::milliseconds(reg_delay_ms));
    reg_calls.push_back({reinterpret_cast<uint64_t>(addr), len, prot});
    regs_done++;
    return kWinStep * (off_t)reg_calls.size();
}
int rec_unreg(scif_epd_t, off_t, size_t) {
    return 0;
}
int rec_vreadfrom(scif_epd_t, void *addr, size_t len, off_t roff, int flags) {
    return rma_call({'R', reinterpret_cast<uint64_t>(addr), len, roff, flags});
}
int rec_vwriteto(scif_epd_t, void *addr, size_t len, off_t roff, int flags) {
    return rma_call({'W', reinterpret_cast<uint64_t>(addr), len, roff, flags});
}
int rec_readfrom(scif_epd_t, off_t loff, size_t len, off_t roff, int flags) {
    return rma_call({'r', (uint64_t)loff, len, roff, flags});
}
int rec_writeto(scif_epd_t, off_t loff, size_t len, off_t roff, int flags) {
    return rma_call({'w', (uint64_t)loff, len, roff, flags});
}

class RdmaPathTest : public ConnTest {
  protected:
    const ScifOps &table() override {
        static const ScifOps ops = [] {
            ScifOps o = provider_ops();
            o.reg = rec_reg;
            o.unreg = rec_unreg;
            o.vreadfrom = rec_vreadfrom;
            o.vwriteto = rec_vwriteto;
            o.readfrom = rec_readfrom;
            o.writeto = rec_writeto;
            return o;
        }();
        return ops;
    }

    void SetUp() override {
        rma_calls.clear();
        reg_calls.clear();
        rma_errno = 0;
        reg_delay_ms = 0;
        regs_done = 0;
        {
            std::lock_guard<std::mutex> lk(gate.mu);
            gate.armed = false;
            gate.open.clear();
            gate.log.clear();
            gate.inside = gate.most = 0;
        }
        ConnTest::SetUp();
    }

    void TearDown() override {
        {
            /* nothing the IA's close waits for stays held */
            std::lock_guard<std::mutex> lk(gate.mu);
            gate.armed = false;
            for (off_t o = 0; o < 16; o++)
                gate.open.insert(kPeerWin + o * 4096);
            gate.cv.notify_all();
        }
        ConnTest::TearDown();
    }

    /* An LMR over [buf_ + off, + len) with priv: its context. */
    DAT_LMR_CONTEXT lmr(size_t off, DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv) {
        DAT_REGION_DESCRIPTION r;
        r.for_va = buf_ + off;
        DAT_LMR_HANDLE h;
        DAT_LMR_CONTEXT lc = 0;
        DAT_RMR_CONTEXT rc;
        DAT_VLEN rl;
        DAT_VADDR ra;
        EXPECT_EQ(lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, r, len, pz_, priv, DAT_VA_TYPE_VA, &h, &lc,
                             &rc, &rl, &ra),
                  DAT_SUCCESS);
        return lc;
    }

    /* The peer requests, offering kPeerCtx; ep_ accepts: connected. */
    void accept_peer() {
        MrInfo m{};
        m.ctx = kPeerCtx;
        m.priv = DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
        m.va = kPeerVa;
        m.len = 1 << 20;
        m.win = kPeerWin;
        m.same_pz = 1;
        DAT_CR_HANDLE cr;
        peer_requests(&cr, {m});
        accept_with(cr, ep_);
        ASSERT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_ESTABLISHED);
    }

    /* Post an RDMA read or write of iov against the peer's region at +roff. */
    DAT_RETURN post(bool read, std::vector<DAT_LMR_TRIPLET> iov, uint64_t roff, DAT_VLEN len,
                    uint64_t cookie = 9, DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG) {
        DAT_RMR_TRIPLET rt{kPeerVa + roff, (DAT_SEG_LENGTH)len, kPeerCtx};
        DAT_DTO_COOKIE c{.as_64 = cookie};
        return read ? ep_post_rdma_read(ep_, (DAT_COUNT)iov.size(), iov.data(), c, &rt, flags)
                    : ep_post_rdma_write(ep_, (DAT_COUNT)iov.size(), iov.data(), c, &rt, flags);
    }

    /* The next DTO completion: cookie and status; cookie 0 when none came. */
    std::pair<uint64_t, DAT_DTO_COMPLETION_STATUS> completion() {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        if (evd_wait(dto_evd_, kWait, 1, &ev, &nmore) != DAT_SUCCESS ||
            ev.event_number != DAT_DTO_COMPLETION_EVENT)
            return {0, DAT_DTO_FAILURE};
        return {ev.event_data.dto_completion_event_data.user_cookie.as_64,
                ev.event_data.dto_completion_event_data.status};
    }

    /* Post an RDMA read or write of iov against the peer's region at +roff; its status. */
    DAT_DTO_COMPLETION_STATUS rdma(bool read, std::vector<DAT_LMR_TRIPLET> iov, uint64_t roff,
                                   DAT_VLEN len) {
        EXPECT_EQ(post(read, iov, roff, len), DAT_SUCCESS);
        DAT_EVENT ev;
        DAT_COUNT nmore;
        if (evd_wait(dto_evd_, kWait, 1, &ev, &nmore) != DAT_SUCCESS ||
            ev.event_number != DAT_DTO_COMPLETION_EVENT)
            return DAT_DTO_FAILURE;
        EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 9u);
        return ev.event_data.dto_completion_event_data.status;
    }

    uint64_t va(size_t off) { return reinterpret_cast<uint64_t>(buf_ + off); }
    DAT_LMR_TRIPLET t(DAT_LMR_CONTEXT l, size_t off, DAT_SEG_LENGTH len) {
        return {va(off), len, l};
    }

    static constexpr uint32_t kPeerCtx = 7;
    static constexpr uint64_t kPeerVa = 0x5000000;
    static constexpr int64_t kPeerWin = 0x200000;
    alignas(4096) uint8_t buf_[4 * 4096];
};

/*
 * An LMR the peer may write (every dapltest buffer): registered as a
 * window when the connection is accepted; an RDMA read into it is a
 * scif_readfrom between that window and the peer's, nothing pinned for
 * the call.
 */
TEST_F(RdmaPathTest, ReadIntoAnLmrWithAWindowIsReadfrom) {
    DAT_LMR_CONTEXT l = lmr(100, 8192, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    ASSERT_EQ(reg_calls.size(), 1u);
    EXPECT_EQ(reg_calls[0].addr, va(0));
    EXPECT_EQ(reg_calls[0].len, 3 * 4096u);
    EXPECT_EQ(reg_calls[0].prot, SCIF_PROT_READ | SCIF_PROT_WRITE);
    EXPECT_EQ(rdma(true, {t(l, 150, 1000)}, 64, 1000), DAT_DTO_SUCCESS);
    std::vector<RmaCall> want{{'r', kWinStep + 150, 1000, kPeerWin + 64}};
    EXPECT_EQ(rma_calls, want);
}

TEST_F(RdmaPathTest, WriteFromAnLmrWithAWindowIsWriteto) {
    DAT_LMR_CONTEXT l = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    EXPECT_EQ(rdma(false, {t(l, 8, 100)}, 4096, 100), DAT_DTO_SUCCESS);
    std::vector<RmaCall> want{{'w', kWinStep + 8, 100, kPeerWin + 4096}};
    EXPECT_EQ(rma_calls, want);
}

/*
 * An LMR with no remote privileges has no window; one the peer may only
 * read has a read-only window, which an RDMA read cannot write into:
 * both move by the calls that pin the local pages.
 */
TEST_F(RdmaPathTest, NoWindowOrTheWrongProtectionPinsInstead) {
    DAT_LMR_CONTEXT local =
        lmr(0, 4096,
            (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
    DAT_LMR_CONTEXT ro =
        lmr(8192, 4096,
            (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG));
    accept_peer();
    ASSERT_EQ(reg_calls.size(), 1u) << "a window for the LMR without remote privileges";
    EXPECT_EQ(reg_calls[0].prot, SCIF_PROT_READ);
    EXPECT_EQ(rdma(true, {t(local, 0, 512)}, 0, 512), DAT_DTO_SUCCESS);
    EXPECT_EQ(rdma(true, {t(ro, 8192, 512)}, 512, 512), DAT_DTO_SUCCESS);
    EXPECT_EQ(rdma(false, {t(ro, 8192, 256)}, 1024, 256), DAT_DTO_SUCCESS);
    std::vector<RmaCall> want{{'R', va(0), 512, kPeerWin},
                              {'R', va(8192), 512, kPeerWin + 512},
                              {'w', kWinStep, 256, kPeerWin + 1024}};
    EXPECT_EQ(rma_calls, want);
}

/* Each segment of an I/O vector by its own LMR's means, the remote offset running on. */
TEST_F(RdmaPathTest, SegmentsOfAVectorEachByTheirLmr) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_LMR_CONTEXT local = lmr(8192, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
    accept_peer();
    EXPECT_EQ(rdma(true, {t(win, 16, 300), t(local, 8192, 200), t(win, 1024, 100)}, 0, 600),
              DAT_DTO_SUCCESS);
    std::vector<RmaCall> want{{'r', kWinStep + 16, 300, kPeerWin},
                              {'R', va(8192), 200, kPeerWin + 300},
                              {'r', kWinStep + 1024, 100, kPeerWin + 500}};
    EXPECT_EQ(rma_calls, want);
}

/*
 * A failed RMA call completes the DTO with the status libdaplscif(7)
 * gives for its errno, by either call: ECONNRESET, ENOTCONN flushed;
 * EACCES, ENXIO a remote access error; EFAULT a local protection error;
 * anything else a transport error.
 */
TEST_F(RdmaPathTest, AFailedCallCompletesWithItsStatus) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_LMR_CONTEXT local = lmr(8192, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
    accept_peer();
    const struct {
        int e;
        DAT_DTO_COMPLETION_STATUS st;
    } cases[] = {
        {ECONNRESET, DAT_DTO_ERR_FLUSHED},      {ENOTCONN, DAT_DTO_ERR_FLUSHED},
        {EACCES, DAT_DTO_ERR_REMOTE_ACCESS},    {ENXIO, DAT_DTO_ERR_REMOTE_ACCESS},
        {EFAULT, DAT_DTO_ERR_LOCAL_PROTECTION}, {EIO, DAT_DTO_ERR_TRANSPORT},
    };
    for (const auto &k : cases) {
        rma_errno = k.e;
        EXPECT_EQ(rdma(true, {t(win, 0, 64)}, 0, 64), k.st) << "readfrom, errno " << k.e;
        EXPECT_EQ(rdma(false, {t(win, 0, 64)}, 0, 64), k.st) << "writeto, errno " << k.e;
        EXPECT_EQ(rdma(true, {t(local, 8192, 64)}, 0, 64), k.st) << "vreadfrom, errno " << k.e;
    }
    rma_errno = 0;
    EXPECT_EQ(rdma(true, {t(win, 0, 64)}, 0, 64), DAT_DTO_SUCCESS) << "the EP after the failures";
    EXPECT_EQ(rma_calls.size(), 3 * std::size(cases) + 1);
}

/*
 * DAPLSCIF_RMA_CACHE, read at dat_ia_open: the IA of each case opens with
 * the variable set to it.  "1": an RDMA read or write from an LMR without
 * remote rights (no window: scif_vreadfrom/scif_vwriteto) asks the module
 * to keep its pinned pages (SCIF_RMA_USECACHE), so that the next DTO from
 * that memory pins nothing; "0": it pins them for each call.  Calls
 * between two windows carry SCIF_RMA_SYNC alone either way.
 */
class RmaCacheTest : public RdmaPathTest, public ::testing::WithParamInterface<const char *> {
  protected:
    void SetUp() override {
        setenv("DAPLSCIF_RMA_CACHE", GetParam(), 1);
        RdmaPathTest::SetUp();
    }
    void TearDown() override {
        RdmaPathTest::TearDown();
        unsetenv("DAPLSCIF_RMA_CACHE");
    }
};

TEST_P(RmaCacheTest, CallsWithoutAWindowAskForTheCacheAsSet) {
    const bool on = std::string(GetParam()) == "1";
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_LMR_CONTEXT local = lmr(8192, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
    accept_peer();
    EXPECT_EQ(rdma(true, {t(local, 8192, 64)}, 0, 64), DAT_DTO_SUCCESS);
    EXPECT_EQ(rdma(false, {t(local, 8192, 64)}, 0, 64), DAT_DTO_SUCCESS);
    EXPECT_EQ(rdma(true, {t(win, 0, 64)}, 0, 64), DAT_DTO_SUCCESS);
    EXPECT_EQ(rdma(false, {t(win, 0, 64)}, 0, 64), DAT_DTO_SUCCESS);
    ASSERT_EQ(rma_calls.size(), 4u);
    const int v = SCIF_RMA_SYNC | (on ? SCIF_RMA_USECACHE : 0);
    EXPECT_EQ(rma_calls[0].kind, 'R');
    EXPECT_EQ(rma_calls[0].flags, v) << "vreadfrom";
    EXPECT_EQ(rma_calls[1].kind, 'W');
    EXPECT_EQ(rma_calls[1].flags, v) << "vwriteto";
    EXPECT_EQ(rma_calls[2].kind, 'r');
    EXPECT_EQ(rma_calls[2].flags, SCIF_RMA_SYNC) << "readfrom";
    EXPECT_EQ(rma_calls[3].kind, 'w');
    EXPECT_EQ(rma_calls[3].flags, SCIF_RMA_SYNC) << "writeto";
}

INSTANTIATE_TEST_SUITE_P(Env, RmaCacheTest, ::testing::Values("1", "0"));

/*
 * dapl_rdma.cpp's order: the post returns at once; reads run side by side,
 * and their completions come in post order whatever order their calls end
 * in.
 */
TEST_F(RdmaPathTest, ReadsRunSideBySideAndCompleteInPostOrder) {
    DAT_LMR_CONTEXT win = lmr(0, 4 * 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    for (uint64_t i = 0; i < 3; i++)
        ASSERT_EQ(post(true, {t(win, i * 4096, 4096)}, i * 4096, 4096, i + 1), DAT_SUCCESS);
    EXPECT_TRUE(gate.wait_inside(3)) << "the three reads were not in progress at once";
    for (off_t i = 2; i >= 0; i--)
        gate.release(kPeerWin + i * 4096);
    for (uint64_t i = 1; i <= 3; i++)
        EXPECT_EQ(completion(), std::make_pair(i, DAT_DTO_SUCCESS));
    EXPECT_EQ(gate.most, 3);
}

/*
 * The spec asks a post to avoid allocating: once the EP has had three RDMA
 * DTOs on their way at once, three more (reads and writes of a
 * two-segment vector, one segment by its window, one pinned) post without
 * one operator new on the posting thread, round after round, and the
 * workers carry them out and complete them without one either.
 */
TEST_F(RdmaPathTest, APostAllocatesNothingOnceTheEpHadAsManyOnTheirWay) {
    DAT_LMR_CONTEXT win = lmr(0, 3 * 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_LMR_CONTEXT local = lmr(12288, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
    accept_peer();
    gate.armed = true; /* three on their way at once: the EP's three jobs */
    for (uint64_t i = 0; i < 3; i++)
        ASSERT_EQ(post(true, {t(win, i * 4096, 4096)}, i * 4096, 4096, i + 1), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(3));
    {
        std::lock_guard<std::mutex> lk(gate.mu);
        gate.armed = false;
    }
    for (off_t i = 0; i < 3; i++)
        gate.release(kPeerWin + i * 4096);
    for (uint64_t i = 1; i <= 3; i++)
        ASSERT_EQ(completion(), std::make_pair(i, DAT_DTO_SUCCESS));

    DAT_LMR_TRIPLET iov[2] = {t(win, 100, 100), t(local, 12288, 100)};
    DAT_RMR_TRIPLET rt{kPeerVa + 4096, 200, kPeerCtx};
    {
        std::lock_guard<std::mutex> lk(gate.mu);
        rma_calls.reserve(rma_calls.size() + 64); /* the fake's record, on the workers */
    }
    for (uint64_t round = 1; round <= 3; round++) {
        size_t news = 0;
        const size_t all_before = alloc_count::all_threads();
        const size_t mine_before = alloc_count::on_this_thread();
        for (uint64_t i = 0; i < 3; i++) {
            DAT_DTO_COOKIE c{.as_64 = round * 10 + i};
            const size_t before = alloc_count::on_this_thread();
            DAT_RETURN r =
                i == 1 ? ep_post_rdma_write(ep_, 2, iov, c, &rt, DAT_COMPLETION_DEFAULT_FLAG)
                       : ep_post_rdma_read(ep_, 2, iov, c, &rt, DAT_COMPLETION_DEFAULT_FLAG);
            news += alloc_count::on_this_thread() - before;
            EXPECT_EQ(r, DAT_SUCCESS);
        }
        for (uint64_t i = 0; i < 3; i++)
            EXPECT_EQ(completion(), std::make_pair(round * 10 + i, DAT_DTO_SUCCESS));
        const size_t others = (alloc_count::all_threads() - all_before) -
                              (alloc_count::on_this_thread() - mine_before);
        EXPECT_EQ(news, 0u) << "operator new calls in round " << round << "'s three posts";
        /* the workers' (the progress thread has nothing to do meanwhile) */
        EXPECT_EQ(others, 0u) << "operator new calls of other threads in round " << round;
    }
}

/*
 * A post that cannot allocate (its nth operator new failing, for every n
 * until one posts) returns DAT_INSUFFICIENT_RESOURCES having changed
 * nothing: no completion comes for it, and once the posts that went
 * through completed the EP has its whole credit back and the connection
 * no DTO on its way (a leaked count would hold back the loss report).
 * Twice: with the connection idle (the post's connection joins the
 * workers' list), and with a read held in progress, so that the post
 * needs a new job.
 */
TEST_F(RdmaPathTest, APostThatCannotAllocateChangesNothing) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_LMR_CONTEXT local = lmr(8192, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
    accept_peer();
    DAT_LMR_TRIPLET iov[2] = {t(win, 0, 64), t(local, 8192, 64)};
    DAT_RMR_TRIPLET at0{kPeerVa, 128, kPeerCtx}, at1{kPeerVa + 4096, 128, kPeerCtx};
    int failed = 0;
    std::vector<uint64_t> went; /* cookies of the posts that went through */
    /* Post reads at rt with the nth allocation failing, n = 1, 2, ..., until one
     * needs fewer; through the provider's table, as a consumer calls it (its guard). */
    auto failnth = [&](const DAT_RMR_TRIPLET &rt, uint64_t cookie) {
        for (size_t n = 1; n <= 64; n++) {
            DAT_DTO_COOKIE c{.as_64 = cookie + n};
            alloc_count::fail_nth(n);
            DAT_RETURN r = reinterpret_cast<Obj *>(ep_)->prov->ep_post_rdma_read_func(
                ep_, 2, iov, c, &rt, DAT_COMPLETION_DEFAULT_FLAG);
            const bool hit = alloc_count::failed_yet();
            alloc_count::fail_nth(0);
            if (r == DAT_SUCCESS) {
                went.push_back(c.as_64); /* the failure (if any) was not the post's */
            } else {
                EXPECT_EQ(DAT_GET_TYPE(r), DAT_INSUFFICIENT_RESOURCES) << "allocation " << n;
                failed++;
            }
            if (!hit)
                return; /* the post needed fewer than n */
        }
        ADD_FAILURE() << "posts still allocating after 64";
    };
    ASSERT_EQ(rdma(true, {t(win, 0, 64), t(local, 8192, 64)}, 0, 128), DAT_DTO_SUCCESS);
    failnth(at0, 100);
    for (uint64_t c : went)
        EXPECT_EQ(completion(), std::make_pair(c, DAT_DTO_SUCCESS));
    went.clear();

    gate.armed = true;
    gate.release(kPeerWin + 4096); /* the held read's followers: both their calls pass */
    gate.release(kPeerWin + 4096 + 64);
    ASSERT_EQ(post(true, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    failnth(at1, 200);
    gate.release(kPeerWin);
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    for (uint64_t c : went)
        EXPECT_EQ(completion(), std::make_pair(c, DAT_DTO_SUCCESS));
    EXPECT_GT(failed, 0) << "no allocation of a post failed it";

    Ep *e = reinterpret_cast<Ep *>(ep_);
    {
        std::lock_guard<std::mutex> lk(e->ia->mu);
        EXPECT_EQ(e->req_credit->load(), 0) << "credit the failed posts kept";
        ASSERT_TRUE(e->conn);
        EXPECT_EQ(e->conn->dtos, 0) << "DTOs counted on their way by the failed posts";
    }
    DAT_EVENT ev;
    DAT_COUNT nmore;
    EXPECT_NE(evd_wait(dto_evd_, 0, 1, &ev, &nmore), DAT_SUCCESS)
        << "a completion for a failed post";
}

/*
 * Reads join running ones while they all stay within 1 MiB: two of 512 KiB
 * side by side, a third (or one of 1 MiB) after them.
 */
TEST_F(RdmaPathTest, LargeReadsDoNotRunSideBySide) {
    constexpr size_t kHalf = 512 * 1024;
    std::vector<uint8_t> mem(2 * kHalf + 4096);
    uint8_t *base = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(mem.data()) + 4095) &
                                                ~uintptr_t{4095});
    DAT_REGION_DESCRIPTION r;
    r.for_va = base;
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc = 0;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rl;
    DAT_VADDR ra;
    ASSERT_EQ(lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, r, 2 * kHalf, pz_, DAT_MEM_PRIV_ALL_FLAG,
                         DAT_VA_TYPE_VA, &h, &lc, &rc, &rl, &ra),
              DAT_SUCCESS);
    accept_peer();
    gate.armed = true;
    /* told apart by their remote offsets, a page apart; the last almost 1 MiB */
    const DAT_SEG_LENGTH lens[] = {kHalf, kHalf, kHalf, 2 * kHalf - 3 * 4096};
    for (uint64_t i = 0; i < 4; i++) {
        DAT_LMR_TRIPLET l{reinterpret_cast<uint64_t>(base), lens[i], lc};
        ASSERT_EQ(post(true, {l}, i * 4096, lens[i], i + 1), DAT_SUCCESS);
    }
    ASSERT_TRUE(gate.wait_inside(2));
    gate.release(kPeerWin);
    gate.release(kPeerWin + 4096);
    ASSERT_TRUE(gate.wait_inside(1)) << "the third read never started";
    gate.release(kPeerWin + 2 * 4096);
    gate.release(kPeerWin + 3 * 4096);
    for (uint64_t i = 1; i <= 4; i++)
        EXPECT_EQ(completion(), std::make_pair(i, DAT_DTO_SUCCESS));
    EXPECT_EQ(gate.most, 2);
    std::vector<std::string> log = gate.seen();
    auto pos = [&](off_t o, char c) {
        return std::find(log.begin(), log.end(), c + std::to_string(kPeerWin + o)) - log.begin();
    };
    EXPECT_GT(pos(2 * 4096, '+'), std::min(pos(0, '-'), pos(4096, '-')))
        << "the third read beside the first two";
    EXPECT_GT(pos(3 * 4096, '+'), pos(2 * 4096, '-')) << "the 1 MiB read beside another";
}

/*
 * A write starts once everything before it finished, and nothing after it
 * starts before it finished; a read with the barrier fence flag waits as a
 * write does.
 */
TEST_F(RdmaPathTest, AWriteOrAFencedReadWaitsAndHoldsBackWhatFollows) {
    DAT_LMR_CONTEXT win = lmr(0, 4 * 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(true, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_EQ(post(false, {t(win, 4096, 64)}, 4096, 64, 2), DAT_SUCCESS);
    ASSERT_EQ(post(true, {t(win, 8192, 64)}, 8192, 64, 3), DAT_SUCCESS);
    ASSERT_EQ(post(true, {t(win, 12288, 64)}, 12288, 64, 4, DAT_COMPLETION_BARRIER_FENCE_FLAG),
              DAT_SUCCESS);
    for (off_t i = 0; i < 4; i++) {
        ASSERT_TRUE(gate.wait_inside(1)) << "DTO " << i + 1 << " never started";
        gate.release(kPeerWin + i * 4096);
    }
    for (uint64_t i = 1; i <= 4; i++)
        EXPECT_EQ(completion(), std::make_pair(i, DAT_DTO_SUCCESS));
    std::vector<std::string> want;
    for (int i = 0; i < 4; i++) {
        want.push_back("+" + std::to_string(kPeerWin + i * 4096));
        want.push_back("-" + std::to_string(kPeerWin + i * 4096));
    }
    EXPECT_EQ(gate.seen(), want);
}

/*
 * A worker is woken only for a job that may start: writes posted behind a
 * running write wake none, and the worker of each write takes the next
 * itself once it completed it (dapl_rdma.cpp, "Wake-ups").
 */
TEST_F(RdmaPathTest, WritesHeldBackWakeNoWorker) {
    constexpr uint64_t kWrites = 12;
    DAT_LMR_CONTEXT win = lmr(0, 4 * 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    /* the workers started (four, whatever the environment says), then all waiting */
    setenv("DAPLSCIF_RDMA_WORKERS", "4", 1);
    DAT_RETURN r = post(false, {t(win, 0, 64)}, 0, 64, 100);
    unsetenv("DAPLSCIF_RDMA_WORKERS");
    ASSERT_EQ(r, DAT_SUCCESS);
    ASSERT_EQ(completion(), std::make_pair(uint64_t(100), DAT_DTO_SUCCESS));
    RdmaEngine &e = static_cast<Ia *>(ia_)->rdma;
    std::unique_lock<std::mutex> lk(e.mu);
    for (int i = 0; i < 500 && e.waiting < e.nworkers; i++) {
        lk.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        lk.lock();
    }
    ASSERT_EQ(e.nworkers, 4u);
    ASSERT_EQ(e.waiting, e.nworkers) << "the workers did not all go idle";
    const uint64_t before = e.idle_wakeups;
    lk.unlock();
    gate.armed = true;
    for (uint64_t i = 0; i < kWrites; i++)
        ASSERT_EQ(post(false, {t(win, (i % 4) * 4096, 64)}, i * 4096, 64, i + 1), DAT_SUCCESS);
    for (uint64_t i = 0; i < kWrites; i++) {
        ASSERT_TRUE(gate.wait_inside(1)) << "write " << i + 1 << " never started";
        gate.release(kPeerWin + (int64_t)i * 4096);
        EXPECT_EQ(completion(), std::make_pair(i + 1, DAT_DTO_SUCCESS));
    }
    lk.lock();
    /*
     * None is woken; glibc's pthread_cond_signal may wake more than one
     * waiter, rarely: a little room for that (waking the idle workers at
     * each post and completion makes it about 4 per write).
     */
    EXPECT_LE(e.idle_wakeups - before, 2u) << "workers woken with nothing to start";
}

/* A send leaves after the RDMA DTOs posted before it completed. */
TEST_F(RdmaPathTest, ASendWaitsForTheRdmaBeforeIt) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    DAT_LMR_TRIPLET s = t(win, 64, 8);
    std::thread sender([&] {
        EXPECT_EQ(ep_post_send(ep_, 1, &s, DAT_DTO_COOKIE{.as_64 = 2}, DAT_COMPLETION_DEFAULT_FLAG),
                  DAT_SUCCESS);
    });
    MsgHdr h;
    std::vector<uint8_t> body;
    pollfd p{peer().get_fd(peer_), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 200), 0) << "the send left while the write was in progress";
    gate.release(kPeerWin);
    ASSERT_TRUE(peer_recv(peer_, &h, &body));
    EXPECT_EQ(h.type, MSG_SEND);
    sender.join();
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{2}, DAT_DTO_SUCCESS));
}

/*
 * A disconnect waits for the DTO in progress, which completes with its
 * status; the one not started is flushed without its call being made.
 */
TEST_F(RdmaPathTest, DisconnectWaitsForTheRunningAndFlushesTheRest) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_EQ(post(true, {t(win, 64, 64)}, 4096, 64, 2), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    std::atomic<bool> returned{false};
    std::thread closer([&] {
        EXPECT_EQ(ep_disconnect(ep_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(returned) << "ep_disconnect returned with the write in progress";
    gate.release(kPeerWin);
    closer.join();
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{2}, DAT_DTO_ERR_FLUSHED));
    std::lock_guard<std::mutex> lk(gate.mu);
    EXPECT_EQ(rma_calls.size(), 1u) << "the flushed read was carried out";
}

/*
 * A DTO posted after the connection was lost, while an RDMA DTO is still
 * on its way, is flushed after it, not before (post order); the loss is
 * reported once both completed.
 */
TEST_F(RdmaPathTest, APostAfterTheLossIsFlushedAfterTheRdmaOnItsWay) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(true, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    peer().close(peer_);
    peer_ = -1;
    settle(ia_); /* the progress thread saw the loss */
    ASSERT_EQ(post(false, {t(win, 64, 64)}, 4096, 64, 2), DAT_SUCCESS);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(dto_evd_, &ev)), DAT_QUEUE_EMPTY)
        << "a completion before the read's";
    gate.release(kPeerWin);
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{2}, DAT_DTO_ERR_FLUSHED));
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_BROKEN);
    std::lock_guard<std::mutex> lk(gate.mu);
    EXPECT_EQ(rma_calls.size(), 1u) << "the flushed write was carried out";
}

/*
 * The peer ending the connection (a DISCONNECT, or its endpoint closed)
 * while one RDMA DTO runs and more wait behind it: the running one
 * completes with its status, the waiting ones are flushed without their
 * calls being made (an RC queue pair in error flushes what it had not
 * started), then the loss is reported.
 */
class PeerEndsTest : public RdmaPathTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PeerEndsTest, WhatHadNotStartedIsFlushed) {
    const bool graceful = GetParam();
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_EQ(post(true, {t(win, 64, 64)}, 4096, 64, 2), DAT_SUCCESS);
    ASSERT_EQ(post(false, {t(win, 128, 64)}, 8192, 64, 3), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    if (graceful) {
        std::vector<uint8_t> bye = frame(MSG_DISCONNECT, {});
        peer_send(peer_, bye.data(), bye.size());
    } else {
        peer().close(peer_);
        peer_ = -1;
    }
    settle(ia_); /* the progress thread saw the end */
    gate.release(kPeerWin);
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{2}, DAT_DTO_ERR_FLUSHED));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{3}, DAT_DTO_ERR_FLUSHED));
    EXPECT_EQ(next_conn_event(),
              graceful ? DAT_CONNECTION_EVENT_DISCONNECTED : DAT_CONNECTION_EVENT_BROKEN);
    std::lock_guard<std::mutex> lk(gate.mu);
    EXPECT_EQ(rma_calls.size(), 1u) << "a DTO behind the end was carried out";
}

INSTANTIATE_TEST_SUITE_P(DisconnectOrClose, PeerEndsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &i) {
                             return std::string(i.param ? "PeerDisconnects" : "PeerCloses");
                         });

/*
 * A send posted after the peer's DISCONNECT, while an RDMA write is still
 * on its way: it completes FLUSHED after the write (post order), nothing
 * reaches the peer (whose endpoint is still open), and the loss comes
 * last.
 */
TEST_F(RdmaPathTest, ASendAfterThePeerEndedIsFlushedAfterTheRdma) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    std::vector<uint8_t> bye = frame(MSG_DISCONNECT, {});
    peer_send(peer_, bye.data(), bye.size());
    settle(ia_);
    DAT_LMR_TRIPLET s = t(win, 64, 8);
    std::thread sender([&] {
        EXPECT_EQ(ep_post_send(ep_, 1, &s, DAT_DTO_COOKIE{.as_64 = 2}, DAT_COMPLETION_DEFAULT_FLAG),
                  DAT_SUCCESS);
    });
    DAT_EVENT ev;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(dto_evd_, &ev)), DAT_QUEUE_EMPTY)
        << "a completion before the write's";
    gate.release(kPeerWin);
    sender.join();
    EXPECT_EQ(completion(), std::make_pair(uint64_t{1}, DAT_DTO_SUCCESS));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{2}, DAT_DTO_ERR_FLUSHED));
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_DISCONNECTED);
    MsgHdr h;
    std::vector<uint8_t> body;
    while (peer_recv_now(peer_, &h, &body))
        EXPECT_NE(h.type, MSG_SEND) << "the flushed send reached the peer";
}

/* Freeing the EP waits the same way and leaves no completion behind. */
TEST_F(RdmaPathTest, FreeingTheEpWaitsAndCompletesNothing) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    gate.armed = true;
    ASSERT_EQ(post(true, {t(win, 0, 64)}, 0, 64, 1), DAT_SUCCESS);
    ASSERT_EQ(post(false, {t(win, 64, 64)}, 4096, 64, 2), DAT_SUCCESS);
    ASSERT_TRUE(gate.wait_inside(1));
    std::thread freer([&] { EXPECT_EQ(ep_free(ep_), DAT_SUCCESS); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.release(kPeerWin);
    freer.join();
    ep_ = DAT_HANDLE_NULL;
    settle(ia_);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(dto_evd_, &ev)), DAT_QUEUE_EMPTY);
    EXPECT_EQ(gate.seen(), (std::vector<std::string>{"+" + std::to_string(kPeerWin),
                                                     "-" + std::to_string(kPeerWin)}));
}

/* DAPLSCIF_RDMA_WORKERS=0: the DTO is carried out in its post call. */
TEST_F(RdmaPathTest, NoWorkersRunsTheDtoInThePost) {
    setenv("DAPLSCIF_RDMA_WORKERS", "0", 1);
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    ASSERT_EQ(post(true, {t(win, 0, 64)}, 0, 64, 5), DAT_SUCCESS);
    unsetenv("DAPLSCIF_RDMA_WORKERS");
    DAT_EVENT ev;
    ASSERT_EQ(evd_dequeue(dto_evd_, &ev), DAT_SUCCESS) << "no completion when the post returned";
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 5u);
    EXPECT_TRUE(static_cast<Ia *>(ia_)->rdma.workers.empty());
}

/*
 * More completions than the request EVD's qlen (8, the EP allowing 1024
 * DTOs): the queue keeps the first 8, the rest are dropped, their
 * credits returned, and the async EVD gets one
 * DAT_ASYNC_ERROR_EVD_OVERFLOW naming the EVD (Intel's provider reports
 * it there too); once the consumer took events, the EVD queues again,
 * and a new overflow is reported anew.
 */
TEST_F(RdmaPathTest, CompletionsPastTheEvdQlenAreDroppedAndReportedOnTheAsyncEvd) {
    DAT_LMR_CONTEXT win = lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    accept_peer();
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(ia_query(ia_, &async, 0, nullptr, 0, nullptr), DAT_SUCCESS);
    Evd *evd = static_cast<Evd *>(dto_evd_);
    /* Bounded: until all n were completed, queued or dropped. */
    auto all_done = [&](uint64_t n) {
        for (int ms = 0; ms < kWaitMs && (uint64_t)evd->q.count() + evd->q.dropped() < n; ms++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return (uint64_t)evd->q.count() + evd->q.dropped() == n;
    };
    Ep *ep = static_cast<Ep *>(ep_);
    for (uint64_t i = 1; i <= 11; i++)
        ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, i), DAT_SUCCESS);
    ASSERT_TRUE(all_done(11)) << evd->q.count() << " queued, " << evd->q.dropped() << " dropped";
    EXPECT_EQ(evd->q.count(), 8);
    EXPECT_EQ(ep->req_credit->load(), 8) << "credits of dropped completions kept";

    DAT_EVENT ev;
    DAT_COUNT nmore = -1;
    ASSERT_EQ(evd_wait(async, 0, 1, &ev, &nmore), DAT_SUCCESS) << "no overflow reported";
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, dto_evd_);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.reason, DAT_EVD_OVERFLOW_ERROR);
    EXPECT_EQ(nmore, 0) << "one report per overflow, not one per dropped event";

    for (uint64_t i = 1; i <= 8; i++)
        EXPECT_EQ(completion(), std::make_pair(i, DAT_DTO_SUCCESS));
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(dto_evd_, &ev)), DAT_QUEUE_EMPTY);
    EXPECT_EQ(ep->req_credit->load(), 0);

    /* Room again: queued; full again: reported again. */
    for (uint64_t i = 20; i < 29; i++)
        ASSERT_EQ(post(false, {t(win, 0, 64)}, 0, 64, i), DAT_SUCCESS);
    ASSERT_TRUE(all_done(8 + 3 + 1));
    EXPECT_EQ(completion(), std::make_pair(uint64_t{20}, DAT_DTO_SUCCESS));
    ASSERT_EQ(evd_dequeue(async, &ev), DAT_SUCCESS) << "the second overflow was not reported";
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
    EXPECT_EQ(static_cast<Evd *>(dto_evd_)->q.dropped(), 4u);
}

/*
 * Active side: registering our LMRs as windows of the connection is ours,
 * not the peer's answer, so it is not part of the connect timeout (the
 * timeout starts when CONN_REQ leaves).  Before, a registration longer
 * than the timeout timed the connect out before the request was sent.
 */
TEST_F(RdmaPathTest, RegisteringAtConnectIsNotPartOfTheConnectTimeout) {
    lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    reg_delay_ms = 1500;
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(connect_to_peer(816, 500 * 1000, &h, &body));
    ASSERT_EQ(regs_done, 1);
    EXPECT_TRUE(h.flags & MSGF_KNOWS_ACCEPTING);
    std::vector<uint8_t> acc = frame(MSG_CONN_ACCEPT, conn_body(0, nullptr, 0, {}));
    peer_send(peer_, acc.data(), acc.size());
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_CONNECTED);
}

/*
 * Passive side: dat_cr_accept tells a peer of this version that it is
 * accepted (CONN_ACCEPTING) before it registers its LMRs, then sends
 * CONN_ACCEPT; an older peer (no MSGF_KNOWS_ACCEPTING) gets CONN_ACCEPT
 * alone, as before.
 */
TEST_F(RdmaPathTest, AcceptTellsThePeerBeforeRegistering) {
    lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    reg_delay_ms = 1000;
    DAT_CR_HANDLE cr;
    peer_requests(&cr, {}, MSGF_KNOWS_ACCEPTING);
    DAT_RETURN ret = DAT_INTERNAL_ERROR;
    std::thread t([&] { ret = cr_accept(cr, ep_, 0, nullptr); });
    MsgHdr h;
    std::vector<uint8_t> body;
    bool got = peer_recv(peer_, &h, &body);
    int regs_then = regs_done;
    t.join();
    ASSERT_TRUE(got);
    EXPECT_EQ(h.type, MSG_CONN_ACCEPTING);
    EXPECT_EQ(h.len, 0u);
    EXPECT_EQ(regs_then, 0) << "CONN_ACCEPTING came after the registration";
    EXPECT_EQ(ret, DAT_SUCCESS);
    ASSERT_TRUE(peer_recv(peer_, &h, &body));
    EXPECT_EQ(h.type, MSG_CONN_ACCEPT);
    EXPECT_EQ(regs_done, 1);
}

TEST_F(RdmaPathTest, AnOlderPeerGetsNoAccepting) {
    lmr(0, 4096, DAT_MEM_PRIV_ALL_FLAG);
    DAT_CR_HANDLE cr;
    peer_requests(&cr);
    accept_with(cr, ep_); /* the first message is CONN_ACCEPT */
    EXPECT_EQ(regs_done, 1);
}

/*
 * Active side: CONN_ACCEPTING (the peer accepted and registers its
 * windows) ends the connect timeout; CONN_ACCEPT later establishes.
 * Before, the unknown message broke the connection.
 */
TEST_F(ConnTest, AcceptingEndsTheConnectTimeout) {
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(connect_to_peer(817, 200 * 1000, &h, &body));
    std::vector<uint8_t> m = frame(MSG_CONN_ACCEPTING, {});
    peer_send(peer_, m.data(), m.size());
    settle(ia_);
    std::this_thread::sleep_for(std::chrono::milliseconds(600)); /* past the timeout */
    settle(ia_);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(evd_dequeue(conn_evd_, &ev)), DAT_QUEUE_EMPTY)
        << "event " << std::hex << ev.event_number;
    EXPECT_EQ(ep_state(), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
    std::vector<uint8_t> acc = frame(MSG_CONN_ACCEPT, conn_body(0, nullptr, 0, {}));
    peer_send(peer_, acc.data(), acc.size());
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_CONNECTED);
}

/* CONN_ACCEPTING with a body is a broken protocol: the connect fails. */
TEST_F(ConnTest, AcceptingWithABodyBreaksTheConnect) {
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(connect_to_peer(818, kWait, &h, &body));
    std::vector<uint8_t> m = frame(MSG_CONN_ACCEPTING, {1, 2, 3, 4});
    peer_send(peer_, m.data(), m.size());
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_DISCONNECTED);
}

/* Active side: CONN_REQ carries the qualifier and private data; REJECT ends it. */
TEST_F(ConnTest, ConnectRejectedByPeer) {
    MsgHdr h;
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(connect_to_peer(815, kWait, &h, &body, 2, "hi"));
    ConnBody b;
    std::vector<uint8_t> pd;
    std::vector<MrInfo> mrs;
    ASSERT_TRUE(parse_body(body, h.len, &b, &pd, &mrs));
    EXPECT_EQ(b.qual, 815u);
    EXPECT_EQ(std::string(pd.begin(), pd.end()), "hi");
    EXPECT_EQ(ep_state(), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);

    std::vector<uint8_t> rej = frame(MSG_CONN_REJECT, conn_body(0, "busy", 4, {}));
    peer_send(peer_, rej.data(), rej.size());
    EXPECT_EQ(next_conn_event(), DAT_CONNECTION_EVENT_PEER_REJECTED);
    EXPECT_EQ(ep_state(), DAT_EP_STATE_DISCONNECTED);
}

} /* namespace */
