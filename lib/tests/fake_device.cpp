// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "fake_device.h"

#include <cerrno>
#include <scif_ioctl.h>
#include <sys/mman.h>

namespace scif_test {

int FakeDevice::open(const char *path, int flags) {
    Call c;
    c.op = "open";
    c.path = path;
    c.flags = flags;
    calls.push_back(c);
    int fd = on_open ? on_open(path, flags) : next_fd_++;
    if (fd >= 0)
        open_fds.insert(fd);
    return fd;
}

int FakeDevice::close(int fd) {
    Call c;
    c.op = "close";
    c.fd = fd;
    calls.push_back(c);
    if (open_fds.erase(fd) == 0)
        return fail(EBADF);
    errno = close_clobbers_errno;
    return 0;
}

int FakeDevice::ioctl(int fd, unsigned long request, unsigned long arg) {
    Call c;
    c.op = "ioctl";
    c.fd = fd;
    c.request = request;
    c.arg = arg;
    calls.push_back(c);
    if (on_ioctl)
        return on_ioctl(fd, request, arg);
    // A current driver: answers SCIF_GET_VERSION, accepts everything else.
    if (request == SCIF_GET_VERSION)
        *reinterpret_cast<int *>(arg) = SCIF_ABI_VERSION;
    return 0;
}

int FakeDevice::fstat(int fd, struct stat *st) {
    Call c;
    c.op = "fstat";
    c.fd = fd;
    calls.push_back(c);
    return on_fstat ? on_fstat(fd, st) : fail(EBADF);
}

int FakeDevice::stat(const char *path, struct stat *st) {
    Call c;
    c.op = "stat";
    c.path = path;
    calls.push_back(c);
    return on_stat ? on_stat(path, st) : fail(ENOENT);
}

void *FakeDevice::mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) {
    Call c;
    c.op = "mmap";
    c.addr = addr;
    c.len = len;
    c.prot = prot;
    c.flags = flags;
    c.fd = fd;
    c.offset = offset;
    calls.push_back(c);
    return on_mmap ? on_mmap(addr, len, prot, flags, fd, offset) : MAP_FAILED;
}

int FakeDevice::munmap(void *addr, size_t len) {
    Call c;
    c.op = "munmap";
    c.addr = addr;
    c.len = len;
    calls.push_back(c);
    return 0;
}

int FakeDevice::poll(struct pollfd *fds, nfds_t nfds, int timeout) {
    Call c;
    c.op = "poll";
    c.addr = fds;
    c.len = nfds;
    c.timeout = timeout;
    calls.push_back(c);
    return on_poll ? on_poll(fds, nfds, timeout) : 0;
}

std::vector<Call> FakeDevice::of(const std::string &op) const {
    std::vector<Call> out;
    for (const Call &c : calls)
        if (c.op == op)
            out.push_back(c);
    return out;
}

std::vector<unsigned long> FakeDevice::requests() const {
    std::vector<unsigned long> out;
    for (const Call &c : calls)
        if (c.op == "ioctl")
            out.push_back(c.request);
    return out;
}

} // namespace scif_test
