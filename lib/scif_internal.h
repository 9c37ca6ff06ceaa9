// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_internal.h - the logic of libscif, free of global state.
//
// Pure helpers (environment parsing, argument validation, ioctl argument
// packing, errno mapping) and the operations behind every exported call,
// each taking the Device to talk to.  scif_api.cpp binds them to the real
// system calls and to the C ABI; the unit tests bind them to a fake.
#ifndef LIBSCIF_SCIF_INTERNAL_H
#define LIBSCIF_SCIF_INTERNAL_H

#include "scif_device.h"

#include <scif.h>
#include <scif_ioctl.h>

#include <cerrno>
#include <climits>
#include <new>
#include <string>
#include <system_error>

namespace scif {

// ---- environment and device paths ---------------------------------------

// Name of the environment variable that selects the node a process acts as.
constexpr const char *kNodeEnv = "SCIF_NODE";
// Device of node 0; node N > 0 is kDevicePrefix followed by N.
constexpr const char *kDevicePrefix = "/dev/scif";
// Highest node id representable in struct scif_portID.
constexpr unsigned kMaxNodeId = 0xffff;

// Parses the value of SCIF_NODE.  NULL or "" select node 0.  Otherwise the
// value must be a decimal number (digits only) no larger than kMaxNodeId.
// Returns 0 and stores the node, or returns EINVAL.
int parse_node(const char *value, unsigned *node);

// "/dev/scif" for node 0, "/dev/scifN" for node N.
std::string device_path(unsigned node);

// errno of a failed open() of the device, as scif_open() reports it: a
// missing device or driver (ENOENT, ENODEV, ENXIO) is ENXIO.
int map_open_errno(int err);

// Outcome of SCIF_GET_VERSION: rc and err are the ioctl's result and errno,
// version the value it returned.  A driver without the ioctl (ENOTTY, or
// EINVAL from the Linux 5.9 driver) is accepted.  Returns 0 or the errno
// scif_open() fails with (ENXIO, ENOMEM).
int check_version(int rc, int err, int version);

// ---- argument validation and translation --------------------------------

constexpr int kProtMask = SCIF_PROT_READ | SCIF_PROT_WRITE;

// scif_register(): prot only READ/WRITE, map_flags only SCIF_MAP_FIXED
// (SCIF_MAP_KERNEL is for kernel clients).  0 or EINVAL.
int validate_register(int prot_flags, int map_flags);
// scif_mmap(): same rules as validate_register().  0 or EINVAL.
int validate_mmap(int prot_flags, int map_flags);
// PROT_* for mmap(2) from SCIF_PROT_* (validated).
int mmap_prot(int prot_flags);
// MAP_* for mmap(2) from SCIF_MAP_* (validated).
int mmap_flags(int map_flags);
// scif_poll() timeout (ms, negative = forever) as poll(2)'s int.
int poll_timeout(long timeout);

// ---- ioctl argument packing ----------------------------------------------

scifioctl_connect pack_connect(const scif_portID &dst);
scifioctl_accept pack_accept(int flags);
scifioctl_msg pack_msg(void *msg, int len, int flags);
scifioctl_reg pack_reg(void *addr, size_t len, off_t offset, int prot, int map_flags);
scifioctl_unreg pack_unreg(off_t offset, size_t len);
// Window to window (readfrom/writeto): addr is 0.
scifioctl_copy pack_copy(off_t loffset, size_t len, off_t roffset, int flags);
// User memory to window (vreadfrom/vwriteto): loffset is 0.
scifioctl_copy pack_vcopy(void *addr, size_t len, off_t roffset, int flags);
scifioctl_fence_mark pack_fence_mark(int flags, int *mark);
scifioctl_fence_signal pack_fence_signal(off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                                         int flags);
scifioctl_node_ids pack_node_ids(uint16_t *nodes, int len, uint16_t *self);

// ---- errno and descriptor helpers ----------------------------------------

// Keeps errno unchanged across a scope (for cleanup on error paths).
class ErrnoSaver {
  public:
    ErrnoSaver() : saved_(errno) {}
    ~ErrnoSaver() { errno = saved_; }
    ErrnoSaver(const ErrnoSaver &) = delete;
    ErrnoSaver &operator=(const ErrnoSaver &) = delete;

  private:
    int saved_;
};

// Owns a descriptor of a Device; closes it on destruction without touching
// errno, unless release()d.
class FdGuard {
  public:
    FdGuard(Device &dev, int fd) : dev_(dev), fd_(fd) {}
    ~FdGuard() { reset(); }
    FdGuard(const FdGuard &) = delete;
    FdGuard &operator=(const FdGuard &) = delete;

    int get() const { return fd_; }
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void reset() {
        if (fd_ >= 0) {
            ErrnoSaver keep;
            dev_.close(fd_);
            fd_ = -1;
        }
    }

  private:
    Device &dev_;
    int fd_;
};

// Sets errno to err and returns fail.
template <typename R> inline R fail_with(int err, R fail) {
    errno = err;
    return fail;
}

// The C ABI boundary: runs f, and turns any exception into errno and the
// call's failure value, so no exception ever leaves the library.
template <typename R, typename F> R call_c(R fail, F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        errno = ENOMEM;
    } catch (const std::system_error &e) {
        errno = e.code().category() == std::generic_category() && e.code().value() > 0
                    ? e.code().value()
                    : EIO;
    } catch (...) {
        errno = EIO;
    }
    return fail;
}

// ---- operations ----------------------------------------------------------
//
// One per exported call; same arguments and results as the C API, plus the
// Device.  Calls that open the device take the value of SCIF_NODE (may be
// NULL) as node_env.

namespace ops {

int open_endpoint(Device &dev, const char *node_env);
int close_endpoint(Device &dev, int epd);
int bind(Device &dev, int epd, uint16_t pn);
int listen(Device &dev, int epd, int backlog);
int connect(Device &dev, int epd, scif_portID *dst);
// Opens a new descriptor on the same device (node) as fd.  ENXIO when no
// device file matching fd can be found.
int reopen_same_device(Device &dev, int fd);
// Opens the new descriptor first (reopen_same_device), then ACCEPTREQ on
// the listener and ACCEPTREG of the handle on the new descriptor.
int accept(Device &dev, int epd, scif_portID *peer, int *newepd, int flags);
int send(Device &dev, int epd, void *msg, int len, int flags);
int recv(Device &dev, int epd, void *msg, int len, int flags);
off_t register_window(Device &dev, int epd, void *addr, size_t len, off_t offset, int prot_flags,
                      int map_flags);
int unregister_window(Device &dev, int epd, off_t offset, size_t len);
int readfrom(Device &dev, int epd, off_t loffset, size_t len, off_t roffset, int flags);
int writeto(Device &dev, int epd, off_t loffset, size_t len, off_t roffset, int flags);
int vreadfrom(Device &dev, int epd, void *addr, size_t len, off_t roffset, int flags);
int vwriteto(Device &dev, int epd, void *addr, size_t len, off_t roffset, int flags);
int fence_mark(Device &dev, int epd, int flags, int *mark);
int fence_wait(Device &dev, int epd, int mark);
int fence_signal(Device &dev, int epd, off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                 int flags);
void *mmap(Device &dev, void *addr, size_t len, int prot_flags, int map_flags, int epd,
           off_t offset);
int munmap(Device &dev, void *addr, size_t len);
int get_node_ids(Device &dev, const char *node_env, uint16_t *nodes, int len, uint16_t *self);
int poll(Device &dev, scif_pollepd *epds, unsigned int nepds, long timeout);

} // namespace ops

} // namespace scif

#endif // LIBSCIF_SCIF_INTERNAL_H
