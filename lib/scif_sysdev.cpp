// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_sysdev.cpp - the Device that forwards to the real system calls.
#include "scif_device.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace scif {
namespace {

class SystemDevice final : public Device {
  public:
    int open(const char *path, int flags) override { return ::open(path, flags); }
    int close(int fd) override { return ::close(fd); }
    int ioctl(int fd, unsigned long request, unsigned long arg) override {
        return ::ioctl(fd, request, arg);
    }
    int fstat(int fd, struct stat *st) override { return ::fstat(fd, st); }
    int stat(const char *path, struct stat *st) override { return ::stat(path, st); }
    void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) override {
        return ::mmap(addr, len, prot, flags, fd, offset);
    }
    int munmap(void *addr, size_t len) override { return ::munmap(addr, len); }
    int poll(struct pollfd *fds, nfds_t nfds, int timeout) override {
        return ::poll(fds, nfds, timeout);
    }
};

} // namespace

Device &system_device() {
    // Stateless; a function-local static is initialised thread-safely.
    static SystemDevice dev;
    return dev;
}

} // namespace scif
