// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// fake_device.h - a scriptable Device for the unit tests of libscif.
//
// Records every call, hands out descriptors from 100 upward, tracks which
// are open (to catch leaks), and lets each test script the results of
// ioctl, open, stat, fstat, mmap and poll.  Unscripted open, close, ioctl
// (SCIF_GET_VERSION answers SCIF_ABI_VERSION), munmap and poll succeed;
// unscripted stat, fstat and mmap fail.
#ifndef LIBSCIF_TESTS_FAKE_DEVICE_H
#define LIBSCIF_TESTS_FAKE_DEVICE_H

#include "scif_device.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace scif_test {

struct Call {
    std::string op; // "open", "close", "ioctl", "fstat", "stat", "mmap", "munmap", "poll"
    int fd = -1;
    std::string path;
    int flags = 0;
    unsigned long request = 0;
    unsigned long arg = 0;
    void *addr = nullptr;
    size_t len = 0;
    int prot = 0;
    off_t offset = 0;
    int timeout = 0;
};

class FakeDevice : public scif::Device {
  public:
    // Each returns like the system call (set errno yourself on failure,
    // or use fail()).
    std::function<int(int fd, unsigned long request, unsigned long arg)> on_ioctl;
    std::function<int(const char *path, int flags)> on_open;
    std::function<int(int fd, struct stat *st)> on_fstat;
    std::function<int(const char *path, struct stat *st)> on_stat;
    std::function<void *(void *addr, size_t len, int prot, int flags, int fd, off_t offset)>
        on_mmap;
    std::function<int(struct pollfd *fds, nfds_t nfds, int timeout)> on_poll;
    // errno that close() leaves behind even on success, to prove that the
    // library preserves the errno of the real failure across cleanup.
    int close_clobbers_errno = EIO;

    std::vector<Call> calls;
    std::set<int> open_fds;

    int open(const char *path, int flags) override;
    int close(int fd) override;
    int ioctl(int fd, unsigned long request, unsigned long arg) override;
    int fstat(int fd, struct stat *st) override;
    int stat(const char *path, struct stat *st) override;
    void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) override;
    int munmap(void *addr, size_t len) override;
    int poll(struct pollfd *fds, nfds_t nfds, int timeout) override;

    // Calls of one kind, in order.
    std::vector<Call> of(const std::string &op) const;
    // The ioctl requests issued, in order.
    std::vector<unsigned long> requests() const;

  private:
    int next_fd_ = 100;
};

// Sets errno and returns -1.
inline int fail(int err) {
    errno = err;
    return -1;
}

// Reinterprets an ioctl argument as the structure it points to.
template <typename T> inline T *arg_as(unsigned long arg) {
    return reinterpret_cast<T *>(arg);
}

} // namespace scif_test

#endif // LIBSCIF_TESTS_FAKE_DEVICE_H
