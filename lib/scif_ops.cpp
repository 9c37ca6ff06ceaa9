// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_ops.cpp - the operations behind the calls of scif.h, over a Device.
//
// Each operation is a thin layer over one ioctl (or mmap/poll) of the SCIF
// device; the kernel module decides and reports errors.  The library only
// rejects what it must translate itself (mmap flags) or what can never be
// valid from user space (SCIF_MAP_KERNEL), with the errno the kernel uses.
#include "scif_internal.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cstddef>

namespace scif {

// The ioctl ABI (x86-64 layouts of the Linux 5.9 uapi).
static_assert(sizeof(scifioctl_connect) == 8, "scifioctl_connect layout");
static_assert(sizeof(scifioctl_accept) == 16, "scifioctl_accept layout");
static_assert(sizeof(scifioctl_msg) == 24, "scifioctl_msg layout");
static_assert(sizeof(scifioctl_reg) == 40, "scifioctl_reg layout");
static_assert(sizeof(scifioctl_unreg) == 16, "scifioctl_unreg layout");
static_assert(sizeof(scifioctl_copy) == 40, "scifioctl_copy layout");
static_assert(sizeof(scifioctl_fence_mark) == 16, "scifioctl_fence_mark layout");
static_assert(sizeof(scifioctl_fence_signal) == 40, "scifioctl_fence_signal layout");
static_assert(sizeof(scifioctl_node_ids) == 24, "scifioctl_node_ids layout");

// scif_poll() hands its array to poll(2) unchanged.
static_assert(sizeof(scif_pollepd) == sizeof(pollfd), "scif_pollepd is a pollfd");
static_assert(offsetof(scif_pollepd, epd) == offsetof(pollfd, fd), "scif_pollepd.epd");
static_assert(offsetof(scif_pollepd, events) == offsetof(pollfd, events), "scif_pollepd.events");
static_assert(offsetof(scif_pollepd, revents) == offsetof(pollfd, revents), "scif_pollepd.revents");

// scif.h keeps its own copy of every flag and port value so that programs
// written for Intel's header need nothing else; the kernel module uses the
// uapi values of scif_ioctl.h.  Both must agree (as rdma-core checks its
// verbs.h against the kernel headers).
#define SCIF_ABI_SAME(name) static_assert(SCIF_##name == SCIF_ABI_##name, "scif.h SCIF_" #name)
SCIF_ABI_SAME(ACCEPT_SYNC);
SCIF_ABI_SAME(SEND_BLOCK);
SCIF_ABI_SAME(RECV_BLOCK);
SCIF_ABI_SAME(ADMIN_PORT_END);
SCIF_ABI_SAME(PORT_RSVD);
SCIF_ABI_SAME(PROT_READ);
SCIF_ABI_SAME(PROT_WRITE);
SCIF_ABI_SAME(MAP_FIXED);
SCIF_ABI_SAME(MAP_KERNEL);
SCIF_ABI_SAME(FENCE_INIT_SELF);
SCIF_ABI_SAME(FENCE_INIT_PEER);
SCIF_ABI_SAME(SIGNAL_LOCAL);
SCIF_ABI_SAME(SIGNAL_REMOTE);
SCIF_ABI_SAME(FENCE_RAS_SELF);
SCIF_ABI_SAME(FENCE_RAS_PEER);
SCIF_ABI_SAME(RMA_USECPU);
SCIF_ABI_SAME(RMA_USECACHE);
SCIF_ABI_SAME(RMA_SYNC);
SCIF_ABI_SAME(RMA_ORDERED);
#undef SCIF_ABI_SAME

// The SCIF protection bits are defined independently of PROT_*; mmap_prot()
// translates them, these only document that the translation is the identity
// on Linux.
static_assert(SCIF_PROT_READ == PROT_READ && SCIF_PROT_WRITE == PROT_WRITE, "prot values");

namespace ops {

namespace {
constexpr int kOpenFlags = O_RDWR | O_CLOEXEC;

bool is_resource_errno(int err) {
    return err == EMFILE || err == ENFILE || err == ENOMEM;
}
} // namespace

int open_endpoint(Device &dev, const char *node_env) {
    unsigned node = 0;
    int err = parse_node(node_env, &node);
    if (err != 0)
        return fail_with(err, -1);
    const std::string path = device_path(node);
    int fd = dev.open(path.c_str(), kOpenFlags);
    if (fd < 0)
        return fail_with(map_open_errno(errno), -1);
    FdGuard guard(dev, fd);
    int version = 0;
    int rc = dev.ioctl(fd, SCIF_GET_VERSION, ptr_arg(&version));
    err = check_version(rc, rc < 0 ? errno : 0, version);
    if (err != 0)
        return fail_with(err, -1);
    return guard.release();
}

int close_endpoint(Device &dev, int epd) {
    return dev.close(epd);
}

int bind(Device &dev, int epd, uint16_t pn) {
    // 8 bytes as declared by the ioctl number; the kernel uses the low 4.
    __u64 port = pn;
    if (dev.ioctl(epd, SCIF_BIND, ptr_arg(&port)) < 0)
        return -1;
    return static_cast<int>(static_cast<uint32_t>(port));
}

int listen(Device &dev, int epd, int backlog) {
    return dev.ioctl(epd, SCIF_LISTEN, static_cast<unsigned long>(backlog));
}

int connect(Device &dev, int epd, scif_portID *dst) {
    if (dst == nullptr)
        return fail_with(EINVAL, -1);
    scifioctl_connect req = pack_connect(*dst);
    if (dev.ioctl(epd, SCIF_CONNECT, ptr_arg(&req)) < 0)
        return -1;
    return req.self.port;
}

int reopen_same_device(Device &dev, int fd) {
    struct stat want {};
    if (dev.fstat(fd, &want) < 0)
        return -1;
    if (!S_ISCHR(want.st_mode))
        return fail_with(ENOTTY, -1);

    // First the device file of the endpoint's node, then the descriptor's
    // own inode through /proc; each is used only if it is the very same
    // character device as fd.
    std::string candidates[2];
    int n = 0;
    uint16_t self = 0, first = 0;
    scifioctl_node_ids ids = pack_node_ids(&first, 1, &self);
    if (dev.ioctl(fd, SCIF_GET_NODEIDS, ptr_arg(&ids)) >= 0)
        candidates[n++] = device_path(self);
    candidates[n++] = "/proc/self/fd/" + std::to_string(fd);

    for (int i = 0; i < n; ++i) {
        const char *path = candidates[i].c_str();
        struct stat st {};
        if (dev.stat(path, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != want.st_rdev)
            continue;
        int nfd = dev.open(path, kOpenFlags);
        if (nfd < 0) {
            if (is_resource_errno(errno))
                return -1;
            continue;
        }
        FdGuard guard(dev, nfd);
        // The path could have been replaced between stat() and open().
        if (dev.fstat(nfd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == want.st_rdev)
            return guard.release();
    }
    return fail_with(ENXIO, -1);
}

int accept(Device &dev, int epd, scif_portID *peer, int *newepd, int flags) {
    if (peer == nullptr || newepd == nullptr)
        return fail_with(EINVAL, -1);
    // The descriptor for the new endpoint is opened before a request is
    // taken: if that fails (EMFILE, ...), the request stays queued for a
    // later call instead of being taken with nowhere to put it.
    int nfd = reopen_same_device(dev, epd);
    if (nfd < 0)
        return -1;
    FdGuard guard(dev, nfd);
    scifioctl_accept req = pack_accept(flags);
    if (dev.ioctl(epd, SCIF_ACCEPTREQ, ptr_arg(&req)) < 0)
        return -1;
    __u64 handle = req.endpt;
    if (dev.ioctl(nfd, SCIF_ACCEPTREG, ptr_arg(&handle)) < 0)
        return -1;
    peer->node = req.peer.node;
    peer->port = req.peer.port;
    *newepd = guard.release();
    return 0;
}

int send(Device &dev, int epd, void *msg, int len, int flags) {
    scifioctl_msg req = pack_msg(msg, len, flags);
    if (dev.ioctl(epd, SCIF_SEND, ptr_arg(&req)) < 0)
        return -1;
    return req.out_len;
}

int recv(Device &dev, int epd, void *msg, int len, int flags) {
    scifioctl_msg req = pack_msg(msg, len, flags);
    if (dev.ioctl(epd, SCIF_RECV, ptr_arg(&req)) < 0)
        return -1;
    return req.out_len;
}

off_t register_window(Device &dev, int epd, void *addr, size_t len, off_t offset, int prot_flags,
                      int map_flags) {
    int err = validate_register(prot_flags, map_flags);
    if (err != 0)
        return fail_with(err, SCIF_REGISTER_FAILED);
    scifioctl_reg req = pack_reg(addr, len, offset, prot_flags, map_flags);
    if (dev.ioctl(epd, SCIF_REG, ptr_arg(&req)) < 0)
        return SCIF_REGISTER_FAILED;
    return static_cast<off_t>(req.out_offset);
}

int unregister_window(Device &dev, int epd, off_t offset, size_t len) {
    scifioctl_unreg req = pack_unreg(offset, len);
    return dev.ioctl(epd, SCIF_UNREG, ptr_arg(&req)) < 0 ? -1 : 0;
}

namespace {
int copy(Device &dev, int epd, unsigned long request, scifioctl_copy req) {
    return dev.ioctl(epd, request, ptr_arg(&req)) < 0 ? -1 : 0;
}
} // namespace

int readfrom(Device &dev, int epd, off_t loffset, size_t len, off_t roffset, int flags) {
    return copy(dev, epd, SCIF_READFROM, pack_copy(loffset, len, roffset, flags));
}

int writeto(Device &dev, int epd, off_t loffset, size_t len, off_t roffset, int flags) {
    return copy(dev, epd, SCIF_WRITETO, pack_copy(loffset, len, roffset, flags));
}

int vreadfrom(Device &dev, int epd, void *addr, size_t len, off_t roffset, int flags) {
    return copy(dev, epd, SCIF_VREADFROM, pack_vcopy(addr, len, roffset, flags));
}

int vwriteto(Device &dev, int epd, void *addr, size_t len, off_t roffset, int flags) {
    return copy(dev, epd, SCIF_VWRITETO, pack_vcopy(addr, len, roffset, flags));
}

int fence_mark(Device &dev, int epd, int flags, int *mark) {
    scifioctl_fence_mark req = pack_fence_mark(flags, mark);
    return dev.ioctl(epd, SCIF_FENCE_MARK, ptr_arg(&req)) < 0 ? -1 : 0;
}

int fence_wait(Device &dev, int epd, int mark) {
    // By value, as a 32-bit int sign-extended like any int ioctl argument.
    return dev.ioctl(epd, SCIF_FENCE_WAIT, static_cast<unsigned long>(mark)) < 0 ? -1 : 0;
}

int fence_signal(Device &dev, int epd, off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                 int flags) {
    scifioctl_fence_signal req = pack_fence_signal(loff, lval, roff, rval, flags);
    return dev.ioctl(epd, SCIF_FENCE_SIGNAL, ptr_arg(&req)) < 0 ? -1 : 0;
}

void *mmap(Device &dev, void *addr, size_t len, int prot_flags, int map_flags, int epd,
           off_t offset) {
    int err = validate_mmap(prot_flags, map_flags);
    if (err != 0)
        return fail_with(err, SCIF_MMAP_FAILED);
    void *p =
        dev.mmap(addr, len, mmap_prot(prot_flags), MAP_SHARED | mmap_flags(map_flags), epd, offset);
    return p == MAP_FAILED ? SCIF_MMAP_FAILED : p;
}

int munmap(Device &dev, void *addr, size_t len) {
    return dev.munmap(addr, len);
}

int get_node_ids(Device &dev, const char *node_env, uint16_t *nodes, int len, uint16_t *self) {
    if (len < 0)
        return fail_with(EINVAL, -1);
    int fd = open_endpoint(dev, node_env);
    if (fd < 0)
        return -1;
    FdGuard guard(dev, fd);
    scifioctl_node_ids req = pack_node_ids(nodes, len, self);
    if (dev.ioctl(fd, SCIF_GET_NODEIDS, ptr_arg(&req)) < 0)
        return -1;
    return req.len;
}

int poll(Device &dev, scif_pollepd *epds, unsigned int nepds, long timeout) {
    return dev.poll(reinterpret_cast<pollfd *>(epds), static_cast<nfds_t>(nepds),
                    poll_timeout(timeout));
}

} // namespace ops
} // namespace scif
