// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_util.cpp - addressing, qualifier mapping and I/O vector filling for
 * the SCIF DAT provider.
 */
#include "dapl_util.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace daplscif {

bool debug_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("DAPLSCIF_DEBUG");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

void debug_log(const char *fmt, ...) {
    char line[512];
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int n = std::snprintf(line, sizeof(line), "daplscif %d/%ld %ld.%06ld: ", (int)getpid(),
                          (long)syscall(SYS_gettid), (long)ts.tv_sec, ts.tv_nsec / 1000);
    if (n < 0 || (size_t)n >= sizeof(line))
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = std::vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = std::strlen(line);
    line[len++] = '\n';
    /* One write per line: lines of concurrent threads stay whole. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

unsigned rdma_workers_from_env(const char *v) {
    if (!v || !*v)
        return kRdmaWorkersDefault;
    char *end = nullptr;
    errno = 0;
    unsigned long n = std::strtoul(v, &end, 10);
    if (errno || *end || *v < '0' || *v > '9' || n > kRdmaWorkersMax) {
        DSC_DBG("DAPLSCIF_RDMA_WORKERS=%s: not 0 .. %u, %u workers", v, kRdmaWorkersMax,
                kRdmaWorkersDefault);
        return kRdmaWorkersDefault;
    }
    return (unsigned)n;
}

bool rma_cache_from_env(const char *v, bool pins_unlimited) {
    if (!v || !*v)
        return pins_unlimited;
    if (!std::strcmp(v, "0") || !std::strcmp(v, "1"))
        return *v == '1';
    DSC_DBG("DAPLSCIF_RMA_CACHE=%s: not 0 or 1, %s", v, pins_unlimited ? "on" : "off");
    return pins_unlimited;
}

/* The CapEff mask of /proc/self/status has CAP_IPC_LOCK (bit 14). */
static bool cap_ipc_lock() {
    FILE *f = std::fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    bool has = false;
    while (std::fgets(line, sizeof(line), f)) {
        unsigned long long eff;
        if (std::sscanf(line, "CapEff: %llx", &eff) == 1) {
            has = (eff >> 14) & 1;
            break;
        }
    }
    std::fclose(f);
    return has;
}

/* /proc/self/uid_map maps every uid to itself: the initial user namespace. */
static bool initial_userns() {
    FILE *f = std::fopen("/proc/self/uid_map", "re");
    if (!f)
        return false;
    unsigned long inside, outside, count;
    int n = std::fscanf(f, "%lu %lu %lu", &inside, &outside, &count);
    std::fclose(f);
    return n == 3 && inside == 0 && outside == 0 && count == 4294967295UL;
}

bool pins_unlimited() {
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY)
        return true;
    return cap_ipc_lock() && initial_userns();
}

void node_to_sockaddr(uint16_t node, sockaddr_in *sin) {
    std::memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(kNodeNet | node);
}

void node_to_name(uint16_t node, uint16_t host, sockaddr_in *sin) {
    node_to_sockaddr(node == 0 && host ? host : node, sin);
}

uint16_t parse_cluster_self(const char *text) {
    if (!text)
        return 0;
    while (*text == ' ' || *text == '\t')
        text++;
    unsigned long id = 0;
    int digits = 0;
    for (; *text >= '0' && *text <= '9' && digits < 4; text++, digits++)
        id = id * 10 + (unsigned long)(*text - '0');
    if (!digits || (*text && *text != ' ' && *text != '\t' && *text != '\n'))
        return 0;
    /* Remote ids are 17..63; anything else is no cluster id we can use. */
    return id >= 17 && id <= kMaxNode ? (uint16_t)id : 0;
}

uint16_t cluster_host_id(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return parse_cluster_self(buf);
}

bool ipv4_is_local_host(uint32_t addr) {
    if ((addr >> 24) == 127 || addr == INADDR_ANY)
        return true;
    ifaddrs *ifa = nullptr;
    if (getifaddrs(&ifa) != 0)
        return false;
    bool found = false;
    for (ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        auto *sin = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
        found = ntohl(sin->sin_addr.s_addr) == addr;
    }
    freeifaddrs(ifa);
    return found;
}

static bool ipv4_to_node(uint32_t a, uint16_t self, uint16_t *node, bool (*is_local)(uint32_t),
                         uint16_t host) {
    if ((a & kNodeMask) == kNodeNet) {
        uint32_t n = a & ~kNodeMask;
        if (n > kMaxNode)
            return false;
        *node = host && n == host ? 0 : (uint16_t)n;
        return true;
    }
    if (is_local(a)) {
        *node = self;
        return true;
    }
    return false;
}

bool sockaddr_to_node(const sockaddr *sa, uint16_t self, uint16_t *node, bool (*is_local)(uint32_t),
                      uint16_t host) {
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        auto *sin = reinterpret_cast<const sockaddr_in *>(sa);
        return ipv4_to_node(ntohl(sin->sin_addr.s_addr), self, node, is_local, host);
    }
    if (sa->sa_family == AF_INET6) {
        auto *s6 = reinterpret_cast<const sockaddr_in6 *>(sa);
        if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr)) {
            *node = self;
            return true;
        }
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            uint32_t a;
            std::memcpy(&a, &s6->sin6_addr.s6_addr[12], 4);
            return ipv4_to_node(ntohl(a), self, node, is_local, host);
        }
    }
    return false;
}

uint64_t iov_total(const std::vector<Seg> &segs) {
    uint64_t t = 0;
    for (const Seg &s : segs)
        t += s.len;
    return t;
}

bool iov_plan(const std::vector<Seg> &segs, uint64_t len, std::vector<Piece> *out) {
    out->clear();
    uint64_t left = len;
    for (size_t i = 0; i < segs.size() && left; i++) {
        uint64_t n = segs[i].len < left ? segs[i].len : left;
        if (n)
            out->push_back({i, 0, n});
        left -= n;
    }
    return left == 0;
}

bool iov_scatter(const std::vector<Seg> &segs, const void *src, uint64_t len) {
    std::vector<Piece> plan;
    if (!iov_plan(segs, len, &plan))
        return false;
    auto *p = static_cast<const uint8_t *>(src);
    for (const Piece &pc : plan) {
        std::memcpy(reinterpret_cast<void *>(segs[pc.seg].va + pc.off), p, pc.len);
        p += pc.len;
    }
    return true;
}

} /* namespace daplscif */
