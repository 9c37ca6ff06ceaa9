// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_util.cpp - pure helpers of libscif: environment parsing, device
// paths, errno mapping, argument validation and ioctl argument packing.
#include "scif_internal.h"

#include <sys/mman.h>

namespace scif {

int parse_node(const char *value, unsigned *node) {
    if (value == nullptr || *value == '\0') {
        *node = 0;
        return 0;
    }
    unsigned long n = 0;
    for (const char *p = value; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9')
            return EINVAL;
        n = n * 10 + static_cast<unsigned long>(*p - '0');
        if (n > kMaxNodeId)
            return EINVAL;
    }
    *node = static_cast<unsigned>(n);
    return 0;
}

std::string device_path(unsigned node) {
    std::string path(kDevicePrefix);
    if (node != 0)
        path += std::to_string(node);
    return path;
}

int map_open_errno(int err) {
    switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
        return ENXIO;
    default:
        return err;
    }
}

int check_version(int rc, int err, int version) {
    if (rc >= 0)
        return version == SCIF_ABI_VERSION ? 0 : ENXIO;
    switch (err) {
    case ENOTTY: // a driver without the openscif extension
    case EINVAL: // the Linux 5.9 driver answers unknown ioctls with EINVAL
        return 0;
    case ENOMEM:
        return ENOMEM;
    default:
        return ENXIO;
    }
}

int validate_register(int prot_flags, int map_flags) {
    if ((prot_flags & ~kProtMask) != 0)
        return EINVAL;
    if ((map_flags & ~SCIF_MAP_FIXED) != 0)
        return EINVAL;
    return 0;
}

int validate_mmap(int prot_flags, int map_flags) {
    return validate_register(prot_flags, map_flags);
}

int mmap_prot(int prot_flags) {
    int prot = PROT_NONE;
    if (prot_flags & SCIF_PROT_READ)
        prot |= PROT_READ;
    if (prot_flags & SCIF_PROT_WRITE)
        prot |= PROT_WRITE;
    return prot;
}

int mmap_flags(int map_flags) {
    return (map_flags & SCIF_MAP_FIXED) ? MAP_FIXED : 0;
}

int poll_timeout(long timeout) {
    if (timeout < 0)
        return -1;
    if (timeout > INT_MAX)
        return INT_MAX;
    return static_cast<int>(timeout);
}

namespace {
template <typename T> inline __u64 user_ptr(T *p) {
    return static_cast<__u64>(reinterpret_cast<std::uintptr_t>(p));
}
} // namespace

scifioctl_connect pack_connect(const scif_portID &dst) {
    scifioctl_connect c{};
    c.peer.node = dst.node;
    c.peer.port = dst.port;
    return c;
}

scifioctl_accept pack_accept(int flags) {
    scifioctl_accept a{};
    a.flags = flags;
    return a;
}

scifioctl_msg pack_msg(void *msg, int len, int flags) {
    scifioctl_msg m{};
    m.msg = user_ptr(msg);
    m.len = len;
    m.flags = flags;
    return m;
}

scifioctl_reg pack_reg(void *addr, size_t len, off_t offset, int prot, int map_flags) {
    scifioctl_reg r{};
    r.addr = user_ptr(addr);
    r.len = len;
    r.offset = offset;
    r.prot = prot;
    r.flags = map_flags;
    return r;
}

scifioctl_unreg pack_unreg(off_t offset, size_t len) {
    scifioctl_unreg u{};
    u.offset = offset;
    u.len = len;
    return u;
}

scifioctl_copy pack_copy(off_t loffset, size_t len, off_t roffset, int flags) {
    scifioctl_copy c{};
    c.loffset = loffset;
    c.len = len;
    c.roffset = roffset;
    c.flags = flags;
    return c;
}

scifioctl_copy pack_vcopy(void *addr, size_t len, off_t roffset, int flags) {
    scifioctl_copy c{};
    c.addr = user_ptr(addr);
    c.len = len;
    c.roffset = roffset;
    c.flags = flags;
    return c;
}

scifioctl_fence_mark pack_fence_mark(int flags, int *mark) {
    scifioctl_fence_mark m{};
    m.flags = flags;
    m.mark = user_ptr(mark);
    return m;
}

scifioctl_fence_signal pack_fence_signal(off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                                         int flags) {
    scifioctl_fence_signal s{};
    s.loff = loff;
    s.lval = lval;
    s.roff = roff;
    s.rval = rval;
    s.flags = flags;
    return s;
}

scifioctl_node_ids pack_node_ids(uint16_t *nodes, int len, uint16_t *self) {
    scifioctl_node_ids n{};
    n.nodes = user_ptr(nodes);
    n.self = user_ptr(self);
    n.len = len;
    return n;
}

} // namespace scif
