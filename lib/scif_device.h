// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_device.h - the system-call surface libscif uses, behind an interface.
//
// Every call of libscif reaches the kernel only through a Device.  The real
// implementation forwards to the system calls; the unit tests substitute a
// fake that records arguments and scripts results, so the library's logic
// (argument packing, errno handling, descriptor life time) is tested without
// the kernel module.
//
// Convention: every method behaves like the system call of the same name,
// i.e. it returns -1 (MAP_FAILED for mmap) and sets errno on failure.
#ifndef LIBSCIF_SCIF_DEVICE_H
#define LIBSCIF_SCIF_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <poll.h>
#include <sys/stat.h>
#include <sys/types.h>

namespace scif {

class Device {
  public:
    Device() = default;
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    virtual ~Device() = default;

    virtual int open(const char *path, int flags) = 0;
    virtual int close(int fd) = 0;
    // arg is either a value (SCIF_LISTEN, SCIF_FENCE_WAIT) or a pointer
    // converted with ptr_arg().
    virtual int ioctl(int fd, unsigned long request, unsigned long arg) = 0;
    virtual int fstat(int fd, struct stat *st) = 0;
    virtual int stat(const char *path, struct stat *st) = 0;
    virtual void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) = 0;
    virtual int munmap(void *addr, size_t len) = 0;
    virtual int poll(struct pollfd *fds, nfds_t nfds, int timeout) = 0;
};

// A pointer as an ioctl argument.
template <typename T> inline unsigned long ptr_arg(T *p) {
    return static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(p));
}

// The process-wide Device that talks to the kernel.  It has no state.
Device &system_device();

} // namespace scif

#endif // LIBSCIF_SCIF_DEVICE_H
