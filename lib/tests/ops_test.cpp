// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Unit tests of the operations behind each call of scif.h, against a fake
// device: which request is issued with which argument, what is returned,
// which errno survives, and that no descriptor leaks.
#include "scif_internal.h"
#include "fake_device.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>

using namespace scif;
using scif_test::arg_as;
using scif_test::fail;
using scif_test::FakeDevice;

namespace {
constexpr int kEpd = 7;
} // namespace

// ---- scif_open ----

TEST(Open, DefaultsToDevScifReadWriteCloexec) {
    FakeDevice dev;
    int fd = ops::open_endpoint(dev, nullptr);
    ASSERT_GE(fd, 0);
    auto opens = dev.of("open");
    ASSERT_EQ(opens.size(), 1u);
    EXPECT_EQ(opens[0].path, "/dev/scif");
    EXPECT_EQ(opens[0].flags, O_RDWR | O_CLOEXEC);
    EXPECT_EQ(dev.open_fds.count(fd), 1u);
}

TEST(Open, ScifNodeSelectsTheNodeDevice) {
    FakeDevice dev;
    ASSERT_GE(ops::open_endpoint(dev, "2"), 0);
    EXPECT_EQ(dev.of("open").at(0).path, "/dev/scif2");
}

TEST(Open, ScifNodeZeroIsDevScif) {
    FakeDevice dev;
    ASSERT_GE(ops::open_endpoint(dev, "0"), 0);
    EXPECT_EQ(dev.of("open").at(0).path, "/dev/scif");
}

TEST(Open, InvalidScifNodeIsEinvalWithoutOpening) {
    FakeDevice dev;
    errno = 0;
    EXPECT_EQ(ops::open_endpoint(dev, "one"), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(Open, MissingDeviceIsEnxio) {
    for (int err : {ENOENT, ENODEV, ENXIO}) {
        FakeDevice dev;
        dev.on_open = [err](const char *, int) { return fail(err); };
        errno = 0;
        EXPECT_EQ(ops::open_endpoint(dev, nullptr), -1);
        EXPECT_EQ(errno, ENXIO) << "open failed with " << err;
    }
}

TEST(Open, DescriptorExhaustionPassesThrough) {
    FakeDevice dev;
    dev.on_open = [](const char *, int) { return fail(EMFILE); };
    EXPECT_EQ(ops::open_endpoint(dev, nullptr), -1);
    EXPECT_EQ(errno, EMFILE);
}

TEST(Open, AsksTheDriverForItsVersion) {
    FakeDevice dev;
    int fd = ops::open_endpoint(dev, nullptr);
    ASSERT_GE(fd, 0);
    auto ioctls = dev.of("ioctl");
    ASSERT_EQ(ioctls.size(), 1u);
    EXPECT_EQ(ioctls[0].fd, fd);
    EXPECT_EQ(ioctls[0].request, SCIF_GET_VERSION);
}

TEST(Open, VersionMismatchIsEnxioAndClosesTheDevice) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_GET_VERSION);
        *arg_as<int>(arg) = SCIF_ABI_VERSION + 1;
        return 0;
    };
    errno = 0;
    EXPECT_EQ(ops::open_endpoint(dev, nullptr), -1);
    EXPECT_EQ(errno, ENXIO);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST(Open, DriverWithoutVersionIoctlIsAccepted) {
    for (int err : {ENOTTY, EINVAL}) {
        FakeDevice dev;
        dev.on_ioctl = [err](int, unsigned long, unsigned long) { return fail(err); };
        int fd = ops::open_endpoint(dev, nullptr);
        EXPECT_GE(fd, 0) << "GET_VERSION failed with " << err;
        EXPECT_EQ(dev.open_fds.count(fd), 1u);
    }
}

TEST(Open, MatchingVersionIsAccepted) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long arg) {
        *arg_as<int>(arg) = SCIF_ABI_VERSION;
        return 0;
    };
    EXPECT_GE(ops::open_endpoint(dev, nullptr), 0);
}

// ---- scif_close ----

TEST(Close, ClosesTheDescriptor) {
    FakeDevice dev;
    int fd = dev.open("/dev/scif", 0);
    EXPECT_EQ(ops::close_endpoint(dev, fd), 0);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST(Close, BadDescriptorIsEbadf) {
    FakeDevice dev;
    EXPECT_EQ(ops::close_endpoint(dev, 55), -1);
    EXPECT_EQ(errno, EBADF);
}

// ---- scif_bind ----

TEST(Bind, PassesThePortInAnEightByteBuffer) {
    FakeDevice dev;
    dev.on_ioctl = [](int fd, unsigned long req, unsigned long arg) {
        EXPECT_EQ(fd, kEpd);
        EXPECT_EQ(req, SCIF_BIND);
        EXPECT_EQ(_IOC_SIZE(req), 8u);
        EXPECT_EQ(*arg_as<__u64>(arg), 2000u);
        return 0;
    };
    EXPECT_EQ(ops::bind(dev, kEpd, 2000), 2000);
}

TEST(Bind, ReturnsThePortTheKernelWroteIntoTheLowFourBytes) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long arg) {
        *arg_as<int32_t>(arg) = 1100; // auto-assigned, 4-byte write
        return 0;
    };
    EXPECT_EQ(ops::bind(dev, kEpd, 0), 1100);
}

TEST(Bind, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(EADDRINUSE); };
    EXPECT_EQ(ops::bind(dev, kEpd, 3000), -1);
    EXPECT_EQ(errno, EADDRINUSE);
}

// ---- scif_listen ----

TEST(Listen, PassesBacklogByValue) {
    FakeDevice dev;
    EXPECT_EQ(ops::listen(dev, kEpd, 16), 0);
    auto c = dev.of("ioctl").at(0);
    EXPECT_EQ(c.request, SCIF_LISTEN);
    EXPECT_EQ(static_cast<int>(c.arg), 16);
}

TEST(Listen, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(EINVAL); };
    EXPECT_EQ(ops::listen(dev, kEpd, 1), -1);
    EXPECT_EQ(errno, EINVAL);
}

// ---- scif_connect ----

TEST(Connect, SendsThePeerAndReturnsTheLocalPort) {
    FakeDevice dev;
    dev.on_ioctl = [](int fd, unsigned long req, unsigned long arg) {
        EXPECT_EQ(fd, kEpd);
        EXPECT_EQ(req, SCIF_CONNECT);
        auto *c = arg_as<scifioctl_connect>(arg);
        EXPECT_EQ(c->peer.node, 1);
        EXPECT_EQ(c->peer.port, 2000);
        c->self.node = 0;
        c->self.port = 1090;
        return 0;
    };
    scif_portID dst{1, 2000};
    EXPECT_EQ(ops::connect(dev, kEpd, &dst), 1090);
}

TEST(Connect, NullDestinationIsEinvalWithoutIoctl) {
    FakeDevice dev;
    EXPECT_EQ(ops::connect(dev, kEpd, nullptr), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(Connect, NonBlockingInProgressPassesThrough) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(EINPROGRESS); };
    scif_portID dst{0, 2000};
    EXPECT_EQ(ops::connect(dev, kEpd, &dst), -1);
    EXPECT_EQ(errno, EINPROGRESS);
}

// ---- scif_send / scif_recv ----

TEST(Send, PacksTheMessageAndReturnsBytesMoved) {
    FakeDevice dev;
    char buf[100] = {};
    dev.on_ioctl = [&buf](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_SEND);
        auto *m = arg_as<scifioctl_msg>(arg);
        EXPECT_EQ(m->msg, reinterpret_cast<std::uintptr_t>(buf));
        EXPECT_EQ(m->len, 100);
        EXPECT_EQ(m->flags, SCIF_SEND_BLOCK);
        m->out_len = 64;
        return 0;
    };
    EXPECT_EQ(ops::send(dev, kEpd, buf, 100, SCIF_SEND_BLOCK), 64);
}

TEST(Send, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(ECONNRESET); };
    char c = 0;
    EXPECT_EQ(ops::send(dev, kEpd, &c, 1, 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
}

TEST(Recv, PacksTheMessageAndReturnsBytesMoved) {
    FakeDevice dev;
    char buf[8];
    dev.on_ioctl = [&buf](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_RECV);
        auto *m = arg_as<scifioctl_msg>(arg);
        EXPECT_EQ(m->msg, reinterpret_cast<std::uintptr_t>(buf));
        EXPECT_EQ(m->len, 8);
        EXPECT_EQ(m->flags, 0);
        m->out_len = 3;
        return 0;
    };
    EXPECT_EQ(ops::recv(dev, kEpd, buf, 8, 0), 3);
}

TEST(Recv, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(ENOTCONN); };
    char c;
    EXPECT_EQ(ops::recv(dev, kEpd, &c, 1, SCIF_RECV_BLOCK), -1);
    EXPECT_EQ(errno, ENOTCONN);
}

// ---- scif_register / scif_unregister ----

TEST(Register, PacksAndReturnsTheWindowOffset) {
    FakeDevice dev;
    alignas(4096) static char page[4096];
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_REG);
        auto *r = arg_as<scifioctl_reg>(arg);
        EXPECT_EQ(r->addr, reinterpret_cast<std::uintptr_t>(page));
        EXPECT_EQ(r->len, 4096u);
        EXPECT_EQ(r->offset, 0x20000);
        EXPECT_EQ(r->prot, SCIF_PROT_READ | SCIF_PROT_WRITE);
        EXPECT_EQ(r->flags, SCIF_MAP_FIXED);
        r->out_offset = 0x20000;
        return 0;
    };
    EXPECT_EQ(ops::register_window(dev, kEpd, page, 4096, 0x20000, SCIF_PROT_READ | SCIF_PROT_WRITE,
                                   SCIF_MAP_FIXED),
              0x20000);
}

TEST(Register, MapKernelIsEinvalWithoutIoctl) {
    FakeDevice dev;
    char c;
    EXPECT_EQ(ops::register_window(dev, kEpd, &c, 4096, 0, SCIF_PROT_READ, SCIF_MAP_KERNEL),
              SCIF_REGISTER_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(Register, BadProtIsEinvalWithoutIoctl) {
    FakeDevice dev;
    char c;
    EXPECT_EQ(ops::register_window(dev, kEpd, &c, 4096, 0, 0x4, 0), SCIF_REGISTER_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(Register, KernelErrorPassesThrough) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(ENOSYS); };
    char c;
    EXPECT_EQ(ops::register_window(dev, kEpd, &c, 4096, 0, SCIF_PROT_READ, 0),
              SCIF_REGISTER_FAILED);
    EXPECT_EQ(errno, ENOSYS);
}

TEST(Unregister, Packs) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_UNREG);
        auto *u = arg_as<scifioctl_unreg>(arg);
        EXPECT_EQ(u->offset, 0x3000);
        EXPECT_EQ(u->len, 8192u);
        return 0;
    };
    EXPECT_EQ(ops::unregister_window(dev, kEpd, 0x3000, 8192), 0);
}

TEST(Unregister, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(ENXIO); };
    EXPECT_EQ(ops::unregister_window(dev, kEpd, 0, 4096), -1);
    EXPECT_EQ(errno, ENXIO);
}

// ---- RMA ----

namespace {
// Runs one RMA operation against a device that captures its copy argument.
template <typename F> scifioctl_copy captured_copy(unsigned long want_req, F op) {
    FakeDevice dev;
    scifioctl_copy seen{};
    dev.on_ioctl = [&](int fd, unsigned long req, unsigned long arg) {
        EXPECT_EQ(fd, kEpd);
        EXPECT_EQ(req, want_req);
        seen = *arg_as<scifioctl_copy>(arg);
        return 0;
    };
    EXPECT_EQ(op(dev), 0);
    EXPECT_EQ(dev.of("ioctl").size(), 1u);
    return seen;
}
} // namespace

TEST(Rma, ReadfromPacksOffsets) {
    scifioctl_copy c = captured_copy(SCIF_READFROM, [](Device &d) {
        return ops::readfrom(d, kEpd, 0x1000, 300, 0x5000, SCIF_RMA_SYNC);
    });
    EXPECT_EQ(c.loffset, 0x1000);
    EXPECT_EQ(c.len, 300u);
    EXPECT_EQ(c.roffset, 0x5000);
    EXPECT_EQ(c.addr, 0u);
    EXPECT_EQ(c.flags, SCIF_RMA_SYNC);
}

TEST(Rma, WritetoPacksOffsets) {
    scifioctl_copy c = captured_copy(SCIF_WRITETO, [](Device &d) {
        return ops::writeto(d, kEpd, 0x2000, 64, 0x6000, SCIF_RMA_ORDERED);
    });
    EXPECT_EQ(c.loffset, 0x2000);
    EXPECT_EQ(c.len, 64u);
    EXPECT_EQ(c.roffset, 0x6000);
    EXPECT_EQ(c.flags, SCIF_RMA_ORDERED);
}

TEST(Rma, VreadfromPacksAddress) {
    static char buf[16];
    scifioctl_copy c = captured_copy(SCIF_VREADFROM, [](Device &d) {
        return ops::vreadfrom(d, kEpd, buf, 16, 0x7000, SCIF_RMA_USECPU);
    });
    EXPECT_EQ(c.addr, reinterpret_cast<std::uintptr_t>(buf));
    EXPECT_EQ(c.loffset, 0);
    EXPECT_EQ(c.len, 16u);
    EXPECT_EQ(c.roffset, 0x7000);
    EXPECT_EQ(c.flags, SCIF_RMA_USECPU);
}

TEST(Rma, VwritetoPacksAddress) {
    static char buf[16];
    scifioctl_copy c = captured_copy(SCIF_VWRITETO, [](Device &d) {
        return ops::vwriteto(d, kEpd, buf, 16, 0x8000, SCIF_RMA_USECACHE);
    });
    EXPECT_EQ(c.addr, reinterpret_cast<std::uintptr_t>(buf));
    EXPECT_EQ(c.roffset, 0x8000);
    EXPECT_EQ(c.flags, SCIF_RMA_USECACHE);
}

TEST(Rma, FailureKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(ENXIO); };
    EXPECT_EQ(ops::readfrom(dev, kEpd, 0, 1, 0, 0), -1);
    EXPECT_EQ(errno, ENXIO);
    EXPECT_EQ(ops::vwriteto(dev, kEpd, nullptr, 1, 0, 0), -1);
    EXPECT_EQ(errno, ENXIO);
}

// ---- fences ----

TEST(Fence, MarkPassesThePointerTheKernelWritesTo) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_FENCE_MARK);
        auto *m = arg_as<scifioctl_fence_mark>(arg);
        EXPECT_EQ(m->flags, SCIF_FENCE_INIT_SELF);
        *reinterpret_cast<int *>(static_cast<std::uintptr_t>(m->mark)) = 77;
        return 0;
    };
    int mark = 0;
    EXPECT_EQ(ops::fence_mark(dev, kEpd, SCIF_FENCE_INIT_SELF, &mark), 0);
    EXPECT_EQ(mark, 77);
}

TEST(Fence, WaitPassesTheMarkByValue) {
    FakeDevice dev;
    EXPECT_EQ(ops::fence_wait(dev, kEpd, 77), 0);
    auto c = dev.of("ioctl").at(0);
    EXPECT_EQ(c.request, SCIF_FENCE_WAIT);
    EXPECT_EQ(static_cast<int>(c.arg), 77);
}

TEST(Fence, WaitInterruptedKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long, unsigned long) { return fail(EINTR); };
    EXPECT_EQ(ops::fence_wait(dev, kEpd, 1), -1);
    EXPECT_EQ(errno, EINTR);
}

TEST(Fence, SignalPacks) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        EXPECT_EQ(req, SCIF_FENCE_SIGNAL);
        auto *s = arg_as<scifioctl_fence_signal>(arg);
        EXPECT_EQ(s->loff, 0x100);
        EXPECT_EQ(s->lval, 5u);
        EXPECT_EQ(s->roff, 0x208);
        EXPECT_EQ(s->rval, 6u);
        EXPECT_EQ(s->flags, SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_REMOTE);
        return 0;
    };
    EXPECT_EQ(
        ops::fence_signal(dev, kEpd, 0x100, 5, 0x208, 6, SCIF_FENCE_INIT_PEER | SCIF_SIGNAL_REMOTE),
        0);
}

// ---- scif_mmap / scif_munmap ----

TEST(Mmap, IsASharedMappingOfTheEndpoint) {
    FakeDevice dev;
    static char where[1];
    dev.on_mmap = [](void *, size_t, int, int, int, off_t) -> void * { return where; };
    void *p = ops::mmap(dev, nullptr, 8192, SCIF_PROT_READ, 0, kEpd, 0x4000);
    EXPECT_EQ(p, static_cast<void *>(where));
    auto c = dev.of("mmap").at(0);
    EXPECT_EQ(c.addr, nullptr);
    EXPECT_EQ(c.len, 8192u);
    EXPECT_EQ(c.prot, PROT_READ);
    EXPECT_EQ(c.flags, MAP_SHARED);
    EXPECT_EQ(c.fd, kEpd);
    EXPECT_EQ(c.offset, 0x4000);
}

TEST(Mmap, MapFixedAddsMapFixed) {
    FakeDevice dev;
    static char where[1];
    dev.on_mmap = [](void *, size_t, int, int, int, off_t) -> void * { return where; };
    ops::mmap(dev, where, 4096, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED, kEpd, 0);
    auto c = dev.of("mmap").at(0);
    EXPECT_EQ(c.addr, static_cast<void *>(where));
    EXPECT_EQ(c.flags, MAP_SHARED | MAP_FIXED);
    EXPECT_EQ(c.prot, PROT_READ | PROT_WRITE);
}

TEST(Mmap, InvalidFlagsAreEinvalWithoutMapping) {
    FakeDevice dev;
    EXPECT_EQ(ops::mmap(dev, nullptr, 4096, SCIF_PROT_READ, SCIF_MAP_KERNEL, kEpd, 0),
              SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(ops::mmap(dev, nullptr, 4096, SCIF_PROT_READ, 0x1, kEpd, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(ops::mmap(dev, nullptr, 4096, 0x10, 0, kEpd, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(Mmap, FailureIsScifMmapFailedWithErrno) {
    FakeDevice dev;
    dev.on_mmap = [](void *, size_t, int, int, int, off_t) -> void * {
        errno = EACCES;
        return MAP_FAILED;
    };
    EXPECT_EQ(ops::mmap(dev, nullptr, 4096, SCIF_PROT_WRITE, 0, kEpd, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EACCES);
}

TEST(Munmap, PassesThrough) {
    FakeDevice dev;
    static char where[1];
    EXPECT_EQ(ops::munmap(dev, where, 4096), 0);
    auto c = dev.of("munmap").at(0);
    EXPECT_EQ(c.addr, static_cast<void *>(where));
    EXPECT_EQ(c.len, 4096u);
}

// ---- scif_get_nodeIDs ----

TEST(GetNodeIds, ReturnsOnlineCountAndFillsTheCallersArrays) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long arg) {
        if (req == SCIF_GET_VERSION)
            return fail(ENOTTY);
        EXPECT_EQ(req, SCIF_GET_NODEIDS);
        auto *n = arg_as<scifioctl_node_ids>(arg);
        EXPECT_EQ(n->len, 2);
        auto *nodes = reinterpret_cast<uint16_t *>(static_cast<std::uintptr_t>(n->nodes));
        nodes[0] = 0;
        nodes[1] = 1;
        *reinterpret_cast<uint16_t *>(static_cast<std::uintptr_t>(n->self)) = 1;
        n->len = 3; // more online than the capacity
        return 0;
    };
    uint16_t nodes[2] = {9, 9}, self = 9;
    EXPECT_EQ(ops::get_node_ids(dev, "1", nodes, 2, &self), 3);
    EXPECT_EQ(nodes[0], 0);
    EXPECT_EQ(nodes[1], 1);
    EXPECT_EQ(self, 1);
    EXPECT_EQ(dev.of("open").at(0).path, "/dev/scif1");
    EXPECT_TRUE(dev.open_fds.empty()) << "the temporary endpoint leaked";
}

TEST(GetNodeIds, FailureClosesTheTemporaryEndpointAndKeepsErrno) {
    FakeDevice dev;
    dev.on_ioctl = [](int, unsigned long req, unsigned long) {
        return req == SCIF_GET_VERSION ? fail(ENOTTY) : fail(EFAULT);
    };
    uint16_t self;
    EXPECT_EQ(ops::get_node_ids(dev, nullptr, nullptr, 4, &self), -1);
    EXPECT_EQ(errno, EFAULT);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST(GetNodeIds, NegativeLengthIsEinval) {
    FakeDevice dev;
    uint16_t nodes[1], self;
    EXPECT_EQ(ops::get_node_ids(dev, nullptr, nodes, -1, &self), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(GetNodeIds, NoDriverIsEnxio) {
    FakeDevice dev;
    dev.on_open = [](const char *, int) { return fail(ENOENT); };
    uint16_t nodes[1], self;
    EXPECT_EQ(ops::get_node_ids(dev, nullptr, nodes, 1, &self), -1);
    EXPECT_EQ(errno, ENXIO);
}

// ---- scif_poll ----

TEST(Poll, HandsTheArrayToPollUnchanged) {
    FakeDevice dev;
    scif_pollepd epds[2] = {{3, POLLIN, 0}, {4, POLLOUT, 0}};
    dev.on_poll = [](pollfd *fds, nfds_t n, int) {
        EXPECT_EQ(n, 2u);
        EXPECT_EQ(fds[0].fd, 3);
        EXPECT_EQ(fds[0].events, POLLIN);
        EXPECT_EQ(fds[1].fd, 4);
        fds[1].revents = POLLOUT;
        return 1;
    };
    EXPECT_EQ(ops::poll(dev, epds, 2, 250), 1);
    EXPECT_EQ(epds[1].revents, POLLOUT);
    EXPECT_EQ(dev.of("poll").at(0).addr, static_cast<void *>(epds));
    EXPECT_EQ(dev.of("poll").at(0).timeout, 250);
}

TEST(Poll, TimeoutIsClamped) {
    FakeDevice dev;
    ops::poll(dev, nullptr, 0, LONG_MAX);
    ops::poll(dev, nullptr, 0, -5);
    EXPECT_EQ(dev.of("poll").at(0).timeout, INT_MAX);
    EXPECT_EQ(dev.of("poll").at(1).timeout, -1);
}
