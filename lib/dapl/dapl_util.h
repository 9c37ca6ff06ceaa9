/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_util.h - pieces of the SCIF DAT provider that need no kernel:
 * IA addressing, connection qualifier to SCIF port mapping, I/O vector
 * filling, and the wire format spoken over a SCIF connection.
 */
#ifndef DAPL_UTIL_H
#define DAPL_UTIL_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

namespace daplscif {

/*
 * Addressing.  An IA on SCIF node N has the IPv4 address 127.83.0.N
 * (kNodeNet | N).  When connecting, 127.83.0.N names node N; every other
 * address that belongs to this host (127.0.0.0/8, ::1, the addresses of
 * its interfaces, 0.0.0.0) names the caller's own node.  Anything else is
 * unreachable.
 *
 * Hosts joined by scif_rdma.ko (docs/transport.md) give each host a cluster
 * id H (17..63, /sys/kernel/scif_rdma/self), under which the other hosts
 * reach its node 0.  On such a host node 0 is named 127.83.0.H (its IA
 * address and the address other IAs see for its endpoints), and a connect
 * to 127.83.0.H reaches node 0 there too; 127.83.0.0 still names node 0.
 * `host` below is H, or 0 on a host without a cluster id.
 */
constexpr uint32_t kNodeNet = 0x7f530000; /* 127.83.0.0/16 */
constexpr uint32_t kNodeMask = 0xffff0000;
constexpr unsigned kMaxNode = 255;

void node_to_sockaddr(uint16_t node, sockaddr_in *sin);

/* The address of node `node` as seen from this host (cluster id `host`). */
void node_to_name(uint16_t node, uint16_t host, sockaddr_in *sin);

/*
 * The cluster id in the text of /sys/kernel/scif_rdma/self ("ID ADDR PORT",
 * or empty when unset): ID, or 0 when there is none or it is out of range.
 */
uint16_t parse_cluster_self(const char *text);

/* This host's cluster id (0: none, or scif_rdma.ko not loaded). */
uint16_t cluster_host_id(const char *path = "/sys/kernel/scif_rdma/self");

/* Is this IPv4 address (host byte order) one of this host's own? */
bool ipv4_is_local_host(uint32_t addr);

/*
 * Map a connect target to a SCIF node.  Returns false when the address
 * cannot be reached over SCIF.  `is_local` may be injected for tests.
 */
bool sockaddr_to_node(const sockaddr *sa, uint16_t self, uint16_t *node,
                      bool (*is_local)(uint32_t) = ipv4_is_local_host, uint16_t host = 0);

/*
 * Connection qualifiers and SCIF ports: a PSP/RSP with qualifier Q listens
 * on port kQualPortBase + (Q mod kQualPortRange), i.e. ports 1024..65535,
 * which need no privilege.  psp_create_any returns port - kQualPortBase.
 */
constexpr uint32_t kQualPortBase = 1024;
constexpr uint32_t kQualPortRange = 65536 - kQualPortBase;

inline uint16_t qual_to_port(uint64_t qual) {
    return (uint16_t)(kQualPortBase + qual % kQualPortRange);
}
inline uint64_t port_to_qual(uint16_t port) {
    return port >= kQualPortBase ? port - kQualPortBase : port;
}

/* One segment of an I/O vector, already validated against its LMR. */
struct Seg {
    uint64_t va;
    uint32_t len;
};

uint64_t iov_total(const std::vector<Seg> &segs);

/*
 * Does [addr, addr + len) lie inside [base, base + blen)?  No sum is
 * formed, so an address or length near 2^64 cannot wrap past the check.
 * A region whose end would wrap (base + blen > 2^64) contains nothing.
 */
inline bool range_within(uint64_t base, uint64_t blen, uint64_t addr, uint64_t len) {
    if (blen > UINT64_MAX - base || addr < base)
        return false;
    uint64_t off = addr - base;
    return off <= blen && len <= blen - off;
}

/*
 * A piece of an I/O vector: segment index, offset in it, length.  Pieces
 * cover `len` bytes in I/O vector order: every segment before the last
 * piece is filled completely, at most one is filled partially, the rest
 * are untouched.  Returns false when the vector holds fewer than len bytes.
 */
struct Piece {
    size_t seg;
    uint64_t off;
    uint64_t len;
};
bool iov_plan(const std::vector<Seg> &segs, uint64_t len, std::vector<Piece> *out);

/* Copy len bytes of src into the vector, in order (see iov_plan). */
bool iov_scatter(const std::vector<Seg> &segs, const void *src, uint64_t len);

/*
 * The number of RDMA workers an IA runs (dapl_rdma.cpp) for the value of
 * DAPLSCIF_RDMA_WORKERS: unset or empty 4, else a decimal 0 .. 16 (0: each
 * RDMA DTO in its post call); anything else 4, with a debug message.
 */
constexpr unsigned kRdmaWorkersDefault = 4, kRdmaWorkersMax = 16;
unsigned rdma_workers_from_env(const char *v);

/*
 * Whether an IA's RDMA DTOs from memory with no window (an LMR without
 * remote rights, as dapltest's and most consumers' local buffers are)
 * pass SCIF_RMA_USECACHE to scif_vreadfrom/scif_vwriteto, so that the
 * module keeps those pages pinned between DTOs instead of pinning them
 * for each: for the value of DAPLSCIF_RMA_CACHE, "1" yes, "0" no, unset
 * or empty pins_unlimited (the module charges cached pins to
 * RLIMIT_MEMLOCK, where they would take the room the consumer's own
 * registrations need); anything else as unset, with a debug message.
 */
bool rma_cache_from_env(const char *v, bool pins_unlimited);

/*
 * Long-term pins of this process are not limited: RLIMIT_MEMLOCK is
 * infinite, or the process has CAP_IPC_LOCK (its effective set, in
 * /proc/self/status) in the initial user namespace (/proc/self/uid_map
 * the identity), where the module does not charge them.
 */
bool pins_unlimited();

/* ---- wire format over a SCIF connection ------------------------------ */

constexpr uint32_t kMagic = 0x44534331; /* "DSC1" */

enum MsgType : uint16_t {
    MSG_CONN_REQ = 1,    /* active -> passive: ConnBody, pdata, MrInfo[] */
    MSG_CONN_ACCEPT = 2, /* passive -> active: ConnBody, pdata, MrInfo[] */
    MSG_CONN_REJECT = 3, /* passive -> active: ConnBody, pdata */
    MSG_SEND = 4,        /* payload = the message */
    MSG_MR_ADD = 5,      /* MrInfo[] */
    MSG_MR_DEL = 6,      /* arg = context id */
    MSG_DISCONNECT = 7,  /* graceful close */
    /*
     * passive -> active, no body: the request is accepted and CONN_ACCEPT
     * follows once the accepting side's windows are registered, which
     * for a large LMR can take longer than the connect timeout.  Sent
     * only to a peer whose CONN_REQ has MSGF_KNOWS_ACCEPTING (a version
     * without it takes an unknown type for a broken protocol).
     */
    MSG_CONN_ACCEPTING = 8,
};

enum MsgFlags : uint16_t {
    MSGF_SOLICITED = 1,       /* SEND */
    MSGF_KNOWS_ACCEPTING = 2, /* CONN_REQ: the sender understands CONN_ACCEPTING */
};

struct MsgHdr {
    uint32_t magic;
    uint16_t type;
    uint16_t flags;
    uint32_t len; /* bytes following the header */
    uint32_t pad;
    uint64_t arg;
};
static_assert(sizeof(MsgHdr) == 24, "wire header");

struct ConnBody {
    uint64_t qual; /* CONN_REQ: the qualifier asked for */
    uint32_t pdata_len;
    uint32_t n_mr;
};
static_assert(sizeof(ConnBody) == 16, "wire conn body");

/* A memory region (LMR or bound RMR) offered to the peer. */
struct MrInfo {
    uint32_t ctx;  /* the rmr_context the peer will quote */
    uint32_t priv; /* DAT_MEM_PRIV_FLAGS */
    uint64_t va;   /* first byte of the region */
    uint64_t len;
    int64_t win;      /* SCIF offset of va in the sender's window, -1 none */
    uint32_t same_pz; /* region is in the connected EP's PZ */
    uint32_t pad;
};
static_assert(sizeof(MrInfo) == 40, "wire mr info");

/*
 * Limits.  The EP attributes max_message_size and max_rdma_size are
 * recorded but, as with the OFA providers, transfers are checked against
 * these IA limits (consumers commonly leave the EP fields 0).
 */
constexpr uint32_t kMaxMessage = 1u << 24;
constexpr uint32_t kMaxRdma = 0x7fffffffu;

/* Largest private data accepted by connect, accept and reject. */
constexpr int kMaxPrivateData = 256;

/*
 * Debug trace: with DAPLSCIF_DEBUG set (to anything but "0") in the
 * environment, the provider writes one line per connection step, message
 * and connection event to stderr, prefixed by "daplscif", the process and
 * thread ids and a monotonic time stamp.
 */
bool debug_enabled();
void debug_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define DSC_DBG(...)                                                                               \
    do {                                                                                           \
        if (::daplscif::debug_enabled())                                                           \
            ::daplscif::debug_log(__VA_ARGS__);                                                    \
    } while (0)

} /* namespace daplscif */

#endif /* DAPL_UTIL_H */
