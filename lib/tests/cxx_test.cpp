// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Unit tests of include/scif.hpp: the C++ classes over the real scif_*
// functions (scif_api.cpp compiled into this program) talking to a fake
// device.  Ownership moves, destructors release exactly once and keep
// errno, failures throw std::system_error with the errno of the call, and
// the loops of send_all/recv_all/get_node_ids.
#include <scif.hpp>
#include <scif_ioctl.h>

#include "fake_system_device.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <sys/mman.h>
#include <string>
#include <type_traits>

using scif_test::arg_as;
using scif_test::fail;
using scif_test::FakeSystemDevice;

static_assert(!std::is_copy_constructible_v<scif::Endpoint>);
static_assert(!std::is_copy_assignable_v<scif::Endpoint>);
static_assert(std::is_nothrow_move_constructible_v<scif::Endpoint>);
static_assert(std::is_nothrow_move_assignable_v<scif::Endpoint>);
static_assert(!std::is_copy_constructible_v<scif::Window>);
static_assert(std::is_nothrow_move_constructible_v<scif::Window>);
static_assert(std::is_nothrow_move_assignable_v<scif::Window>);
static_assert(!std::is_copy_constructible_v<scif::Mapping>);
static_assert(std::is_nothrow_move_constructible_v<scif::Mapping>);
static_assert(std::is_nothrow_move_assignable_v<scif::Mapping>);
// Buffers: writable from mutable containers only.
static_assert(std::is_convertible_v<std::vector<int> &, scif::buffer>);
static_assert(!std::is_convertible_v<const std::vector<int> &, scif::buffer>);
static_assert(std::is_convertible_v<const std::vector<int> &, scif::const_buffer>);
static_assert(std::is_convertible_v<const std::string &, scif::const_buffer>);

namespace {

// A fake whose ioctls are scripted per request; unscripted requests succeed
// (SCIF_GET_VERSION answers the current ABI).
struct CxxFixture : ::testing::Test {
    FakeSystemDevice sys;
    scif_test::FakeDevice &dev = sys.dev;
    std::map<unsigned long, std::function<int(int, unsigned long)>> script;

    void SetUp() override {
        unsetenv("SCIF_NODE");
        dev.on_ioctl = [this](int fd, unsigned long request, unsigned long arg) {
            auto it = script.find(request);
            if (it != script.end())
                return it->second(fd, arg);
            if (request == SCIF_GET_VERSION)
                *arg_as<int>(arg) = SCIF_ABI_VERSION;
            return 0;
        };
    }

    size_t count(unsigned long request) const {
        size_t n = 0;
        for (auto r : dev.requests())
            n += r == request;
        return n;
    }
    size_t closes_of(int fd) const {
        size_t n = 0;
        for (const auto &c : dev.of("close"))
            n += c.fd == fd;
        return n;
    }
};

// Runs f, which must throw std::system_error; returns it.
template <typename F> std::system_error thrown(F &&f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e;
    }
    ADD_FAILURE() << "no std::system_error thrown";
    return std::system_error(0, std::generic_category());
}

} // namespace

// ---- Endpoint ownership ----

TEST_F(CxxFixture, OpenAndDestructorCloseOnce) {
    int fd;
    {
        scif::Endpoint ep = scif::Endpoint::open();
        ASSERT_TRUE(ep);
        fd = ep.get();
        EXPECT_EQ(dev.open_fds.count(fd), 1u);
    }
    EXPECT_TRUE(dev.open_fds.empty());
    EXPECT_EQ(closes_of(fd), 1u);
}

TEST_F(CxxFixture, OpenFailureThrowsTheErrno) {
    dev.on_open = [](const char *, int) { return fail(EMFILE); };
    auto e = thrown([] { scif::Endpoint::open(); });
    EXPECT_EQ(e.code().value(), EMFILE);
    EXPECT_EQ(e.code().category(), std::generic_category());
    EXPECT_NE(std::string(e.what()).find("scif_open"), std::string::npos) << e.what();
}

TEST_F(CxxFixture, MoveConstructTransfersOwnership) {
    scif::Endpoint a = scif::Endpoint::open();
    int fd = a.get();
    scif::Endpoint b(std::move(a));
    EXPECT_FALSE(a); // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(b.get(), fd);
    { scif::Endpoint c(std::move(b)); }
    EXPECT_EQ(closes_of(fd), 1u);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST_F(CxxFixture, MoveAssignClosesTheOldEndpoint) {
    scif::Endpoint a = scif::Endpoint::open();
    scif::Endpoint b = scif::Endpoint::open();
    int fa = a.get(), fb = b.get();
    b = std::move(a);
    EXPECT_EQ(closes_of(fb), 1u);
    EXPECT_EQ(closes_of(fa), 0u);
    EXPECT_EQ(b.get(), fa);
    b = scif::Endpoint();
    EXPECT_EQ(closes_of(fa), 1u);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST_F(CxxFixture, DestructorKeepsErrno) {
    dev.close_clobbers_errno = EIO;
    {
        scif::Endpoint ep = scif::Endpoint::open();
        errno = EDOM;
    }
    EXPECT_EQ(errno, EDOM);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST_F(CxxFixture, ReleaseGivesUpOwnership) {
    scif_epd_t raw;
    {
        scif::Endpoint ep = scif::Endpoint::open();
        raw = ep.release();
        EXPECT_FALSE(ep);
    }
    EXPECT_EQ(dev.open_fds.count(raw), 1u);
    EXPECT_EQ(scif_close(raw), 0);
}

TEST_F(CxxFixture, CloseReportsItsErrorAndEmpties) {
    scif::Endpoint ep(12345); // adopted, but not open in the fake: EBADF
    auto e = thrown([&] { ep.close(); });
    EXPECT_EQ(e.code(), std::errc::bad_file_descriptor);
    EXPECT_FALSE(ep);
    EXPECT_EQ(closes_of(12345), 1u); // not again by the destructor
}

// ---- connections and messages ----

TEST_F(CxxFixture, BindReturnsThePortAndThrowsItsErrno) {
    scif::Endpoint ep = scif::Endpoint::open();
    script[SCIF_BIND] = [](int, unsigned long arg) {
        if (*arg_as<__u64>(arg) == 0)
            *arg_as<__u64>(arg) = 2049;
        return 0;
    };
    EXPECT_EQ(ep.bind(), 2049);
    EXPECT_EQ(ep.bind(700), 700);
    script[SCIF_BIND] = [](int, unsigned long) { return fail(EADDRINUSE); };
    auto e = thrown([&] { ep.bind(700); });
    EXPECT_EQ(e.code(), std::errc::address_in_use);
    EXPECT_NE(std::string(e.what()).find("scif_bind"), std::string::npos);
}

TEST_F(CxxFixture, ConnectPassesThePeerAndThrowsItsErrno) {
    scif::Endpoint ep = scif::Endpoint::open();
    scifioctl_connect seen{};
    script[SCIF_CONNECT] = [&](int, unsigned long arg) {
        seen = *arg_as<scifioctl_connect>(arg);
        arg_as<scifioctl_connect>(arg)->self.port = 3000;
        return 0;
    };
    EXPECT_EQ(ep.connect({1, 2000}), 3000);
    EXPECT_EQ(seen.peer.node, 1);
    EXPECT_EQ(seen.peer.port, 2000);
    script[SCIF_CONNECT] = [](int, unsigned long) { return fail(ECONNREFUSED); };
    EXPECT_EQ(thrown([&] { ep.connect({1, 2000}); }).code(), std::errc::connection_refused);
}

TEST_F(CxxFixture, ListenThrowsItsErrno) {
    scif::Endpoint ep = scif::Endpoint::open();
    ep.listen(4);
    script[SCIF_LISTEN] = [](int, unsigned long) { return fail(EISCONN); };
    EXPECT_EQ(thrown([&] { ep.listen(4); }).code().value(), EISCONN);
}

TEST_F(CxxFixture, SendAllLoopsOverPartialSendsWithBlock) {
    scif::Endpoint ep = scif::Endpoint::open();
    std::string got;
    std::vector<int> flags;
    script[SCIF_SEND] = [&](int, unsigned long arg) {
        auto *m = arg_as<scifioctl_msg>(arg);
        int n = m->len < 3 ? m->len : 3;
        got.append(reinterpret_cast<const char *>(m->msg), static_cast<size_t>(n));
        flags.push_back(m->flags);
        m->out_len = n;
        return 0;
    };
    const std::string msg = "hello world";
    ep.send_all(msg);
    EXPECT_EQ(got, msg);
    EXPECT_EQ(flags.size(), 4u);
    for (int f : flags)
        EXPECT_EQ(f, SCIF_SEND_BLOCK);
}

TEST_F(CxxFixture, SendSomeIsOneNonBlockingCall) {
    scif::Endpoint ep = scif::Endpoint::open();
    int flags = -1;
    script[SCIF_SEND] = [&](int, unsigned long arg) {
        flags = arg_as<scifioctl_msg>(arg)->flags;
        arg_as<scifioctl_msg>(arg)->out_len = 0;
        return 0;
    };
    std::array<char, 8> buf{};
    EXPECT_EQ(ep.send_some(buf), 0u);
    EXPECT_EQ(flags, 0);
    EXPECT_EQ(count(SCIF_SEND), 1u);
}

TEST_F(CxxFixture, SendAllOfAnEndedConnectionIsEconnreset) {
    scif::Endpoint ep = scif::Endpoint::open();
    script[SCIF_SEND] = [](int, unsigned long arg) {
        arg_as<scifioctl_msg>(arg)->out_len = 0;
        return 0;
    };
    EXPECT_EQ(thrown([&] { ep.send_all(scif::const_buffer("x", 1)); }).code(),
              std::errc::connection_reset);
    script[SCIF_SEND] = [](int, unsigned long) { return fail(ENOTCONN); };
    EXPECT_EQ(thrown([&] { ep.send_all(scif::const_buffer("x", 1)); }).code(),
              std::errc::not_connected);
}

TEST_F(CxxFixture, RecvAllFillsTheBuffer) {
    scif::Endpoint ep = scif::Endpoint::open();
    const std::string src = "0123456789";
    size_t pos = 0;
    script[SCIF_RECV] = [&](int, unsigned long arg) {
        auto *m = arg_as<scifioctl_msg>(arg);
        EXPECT_EQ(m->flags, SCIF_RECV_BLOCK);
        int n = m->len < 4 ? m->len : 4;
        std::memcpy(reinterpret_cast<void *>(m->msg), src.data() + pos, static_cast<size_t>(n));
        pos += static_cast<size_t>(n);
        m->out_len = n;
        return 0;
    };
    std::vector<char> buf(src.size());
    ep.recv_all(buf);
    EXPECT_EQ(std::string(buf.begin(), buf.end()), src);
    EXPECT_EQ(count(SCIF_RECV), 3u);
}

TEST_F(CxxFixture, RecvSomeReturnsWhatCame) {
    scif::Endpoint ep = scif::Endpoint::open();
    script[SCIF_RECV] = [](int, unsigned long arg) {
        arg_as<scifioctl_msg>(arg)->out_len = 2;
        return 0;
    };
    char buf[8];
    EXPECT_EQ(ep.recv_some(buf), 2u);
    script[SCIF_RECV] = [](int, unsigned long) { return fail(EAGAIN); };
    EXPECT_EQ(thrown([&] { ep.recv_some(buf); }).code().value(), EAGAIN);
}

// The fake's device files are all one character device, so accept's
// reopen of the listener's device finds it.
struct AcceptCxx : CxxFixture {
    void SetUp() override {
        CxxFixture::SetUp();
        auto chr = [](struct stat *st) {
            *st = {};
            st->st_mode = S_IFCHR | 0666;
            st->st_rdev = 42;
            return 0;
        };
        dev.on_stat = [chr](const char *, struct stat *st) { return chr(st); };
        dev.on_fstat = [chr](int, struct stat *st) { return chr(st); };
    }
};

TEST_F(AcceptCxx, AcceptReturnsAnOwnedEndpointAndThePeer) {
    scif::Endpoint l = scif::Endpoint::open();
    int acc_flags = -1;
    script[SCIF_ACCEPTREQ] = [&](int, unsigned long arg) {
        auto *a = arg_as<scifioctl_accept>(arg);
        acc_flags = a->flags;
        a->peer.node = 1;
        a->peer.port = 1025;
        return 0;
    };
    scif::PortId peer;
    int nfd;
    {
        scif::Endpoint c = l.accept(&peer);
        ASSERT_TRUE(c);
        nfd = c.get();
        EXPECT_NE(nfd, l.get());
        EXPECT_EQ(acc_flags, SCIF_ACCEPT_SYNC);
        EXPECT_EQ(peer.node, 1);
        EXPECT_EQ(peer.port, 1025);
    }
    EXPECT_EQ(closes_of(nfd), 1u);
    EXPECT_EQ(dev.open_fds.size(), 1u); // the listener only
}

TEST_F(AcceptCxx, TryAcceptIsEmptyOnEagainAndThrowsOtherwise) {
    scif::Endpoint l = scif::Endpoint::open();
    script[SCIF_ACCEPTREQ] = [](int, unsigned long) { return fail(EAGAIN); };
    scif::Endpoint c = l.try_accept();
    EXPECT_FALSE(c);
    script[SCIF_ACCEPTREQ] = [](int, unsigned long) { return fail(EINVAL); };
    EXPECT_EQ(thrown([&] { l.try_accept(); }).code(), std::errc::invalid_argument);
    EXPECT_EQ(dev.open_fds.size(), 1u); // no descriptor leaked
}

TEST_F(CxxFixture, PollReturnsTheRevents) {
    scif::Endpoint ep = scif::Endpoint::open();
    dev.on_poll = [](struct pollfd *fds, nfds_t n, int) {
        EXPECT_EQ(n, 1u);
        fds[0].revents = POLLIN;
        return 1;
    };
    EXPECT_EQ(ep.poll(POLLIN, 100), POLLIN);
    dev.on_poll = [](struct pollfd *, nfds_t, int) { return fail(EINTR); };
    EXPECT_EQ(thrown([&] { ep.poll(POLLIN, -1); }).code().value(), EINTR);
}

// ---- windows, RMA, fences, mappings ----

TEST_F(CxxFixture, WindowUnregistersOnceWhenDestroyed) {
    scif::Endpoint ep = scif::Endpoint::open();
    std::vector<scifioctl_unreg> unregs;
    scifioctl_reg reg{};
    script[SCIF_REG] = [&](int, unsigned long arg) {
        reg = *arg_as<scifioctl_reg>(arg);
        arg_as<scifioctl_reg>(arg)->out_offset = 0x20000;
        return 0;
    };
    script[SCIF_UNREG] = [&](int, unsigned long arg) {
        unregs.push_back(*arg_as<scifioctl_unreg>(arg));
        return 0;
    };
    alignas(4096) static char mem[8192];
    {
        scif::Window w = ep.register_window({mem, sizeof mem}, SCIF_PROT_READ);
        EXPECT_EQ(reg.addr, reinterpret_cast<__u64>(mem));
        EXPECT_EQ(reg.len, sizeof mem);
        EXPECT_EQ(reg.prot, SCIF_PROT_READ);
        EXPECT_EQ(w.offset(), 0x20000);
        EXPECT_EQ(w.size(), sizeof mem);
        scif::Window moved(std::move(w));
        EXPECT_FALSE(w); // NOLINT(bugprone-use-after-move)
        scif::Window other;
        other = std::move(moved);
        EXPECT_TRUE(unregs.empty());
    }
    ASSERT_EQ(unregs.size(), 1u);
    EXPECT_EQ(unregs[0].offset, 0x20000);
    EXPECT_EQ(unregs[0].len, sizeof mem);
}

TEST_F(CxxFixture, RegisterAndUnregisterThrowTheErrno) {
    scif::Endpoint ep = scif::Endpoint::open();
    alignas(4096) static char mem[4096];
    script[SCIF_REG] = [](int, unsigned long) { return fail(ENOMEM); };
    EXPECT_EQ(thrown([&] { ep.register_window({mem, sizeof mem}); }).code().value(), ENOMEM);
    script.erase(SCIF_REG);
    scif::Window w = ep.register_window({mem, sizeof mem});
    script[SCIF_UNREG] = [](int, unsigned long) { return fail(EBUSY); };
    EXPECT_EQ(thrown([&] { w.unregister(); }).code().value(), EBUSY);
    EXPECT_FALSE(w);
    EXPECT_EQ(count(SCIF_UNREG), 1u);
}

TEST_F(CxxFixture, RmaCallsPassFlagsAndThrowTheErrno) {
    scif::Endpoint ep = scif::Endpoint::open();
    std::vector<scifioctl_copy> copies;
    auto rec = [&](int, unsigned long arg) {
        copies.push_back(*arg_as<scifioctl_copy>(arg));
        return 0;
    };
    script[SCIF_READFROM] = rec;
    script[SCIF_WRITETO] = rec;
    script[SCIF_VREADFROM] = rec;
    script[SCIF_VWRITETO] = rec;
    std::vector<uint64_t> buf(512);
    ep.readfrom(0x1000, 4096, 0x2000, SCIF_RMA_SYNC);
    ep.writeto(0x1000, 4096, 0x3000);
    ep.vreadfrom(buf, 0x4000, SCIF_RMA_USECPU);
    const std::vector<uint64_t> &cbuf = buf;
    ep.vwriteto(cbuf, 0x5000, SCIF_RMA_ORDERED);
    ASSERT_EQ(copies.size(), 4u);
    EXPECT_EQ(copies[0].loffset, 0x1000);
    EXPECT_EQ(copies[0].roffset, 0x2000);
    EXPECT_EQ(copies[0].flags, SCIF_RMA_SYNC);
    EXPECT_EQ(copies[1].flags, 0);
    EXPECT_EQ(copies[2].addr, reinterpret_cast<__u64>(buf.data()));
    EXPECT_EQ(copies[2].len, 4096u);
    EXPECT_EQ(copies[2].flags, SCIF_RMA_USECPU);
    EXPECT_EQ(copies[3].roffset, 0x5000);
    EXPECT_EQ(copies[3].flags, SCIF_RMA_ORDERED);
    script[SCIF_WRITETO] = [](int, unsigned long) { return fail(ENXIO); };
    auto e = thrown([&] { ep.writeto(0, 4096, 0); });
    EXPECT_EQ(e.code().value(), ENXIO);
    EXPECT_NE(std::string(e.what()).find("scif_writeto"), std::string::npos);
}

TEST_F(CxxFixture, FenceMarksThenWaitsForThatMark) {
    scif::Endpoint ep = scif::Endpoint::open();
    int mark_flags = -1;
    script[SCIF_FENCE_MARK] = [&](int, unsigned long arg) {
        auto *m = arg_as<scifioctl_fence_mark>(arg);
        mark_flags = m->flags;
        *reinterpret_cast<int *>(m->mark) = 77;
        return 0;
    };
    long waited = -1;
    script[SCIF_FENCE_WAIT] = [&](int, unsigned long arg) {
        waited = static_cast<long>(arg);
        return 0;
    };
    ep.fence(SCIF_FENCE_INIT_PEER);
    EXPECT_EQ(mark_flags, SCIF_FENCE_INIT_PEER);
    EXPECT_EQ(waited, 77);
    script[SCIF_FENCE_WAIT] = [](int, unsigned long) { return fail(EINVAL); };
    EXPECT_EQ(thrown([&] { ep.fence_wait(5); }).code(), std::errc::invalid_argument);
    scifioctl_fence_signal sig{};
    script[SCIF_FENCE_SIGNAL] = [&](int, unsigned long arg) {
        sig = *arg_as<scifioctl_fence_signal>(arg);
        return 0;
    };
    ep.fence_signal(0x1000, 1, 0x2000, 2, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_REMOTE);
    EXPECT_EQ(sig.roff, 0x2000);
    EXPECT_EQ(sig.rval, 2u);
    EXPECT_EQ(sig.flags, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_REMOTE);
}

TEST_F(CxxFixture, MappingUnmapsOnceWhenDestroyed) {
    scif::Endpoint ep = scif::Endpoint::open();
    alignas(4096) static char page[4096];
    dev.on_mmap = [](void *, size_t, int, int, int, off_t) -> void * { return page; };
    {
        scif::Mapping m = ep.map(0x1000, sizeof page);
        EXPECT_EQ(m.data(), page);
        EXPECT_EQ(m.size(), sizeof page);
        scif::Mapping n(std::move(m));
        EXPECT_FALSE(m); // NOLINT(bugprone-use-after-move)
        EXPECT_TRUE(dev.of("munmap").empty());
    }
    auto unmaps = dev.of("munmap");
    ASSERT_EQ(unmaps.size(), 1u);
    EXPECT_EQ(unmaps[0].addr, page);
    EXPECT_EQ(unmaps[0].len, sizeof page);
    dev.on_mmap = [](void *, size_t, int, int, int, off_t) -> void * {
        errno = ENOMEM;
        return MAP_FAILED;
    };
    EXPECT_EQ(thrown([&] { ep.map(0, 4096); }).code().value(), ENOMEM);
}

TEST_F(CxxFixture, GetNodeIdsGrowsToTheNodesOnline) {
    script[SCIF_GET_NODEIDS] = [](int, unsigned long arg) {
        auto *ids = arg_as<scifioctl_node_ids>(arg);
        constexpr int online = 20;
        auto *nodes = reinterpret_cast<uint16_t *>(ids->nodes);
        for (int i = 0; i < online && i < ids->len; ++i)
            nodes[i] = static_cast<uint16_t>(i);
        *reinterpret_cast<uint16_t *>(ids->self) = 3;
        ids->len = online;
        return 0;
    };
    scif::NodeIds ids = scif::get_node_ids();
    ASSERT_EQ(ids.nodes.size(), 20u);
    EXPECT_EQ(ids.nodes[19], 19);
    EXPECT_EQ(ids.self, 3);
    script[SCIF_GET_NODEIDS] = [](int, unsigned long) { return fail(ENODEV); };
    EXPECT_EQ(thrown([] { scif::get_node_ids(); }).code().value(), ENODEV);
}

TEST_F(CxxFixture, GetNodeIdsRetriesABoundedNumberOfTimes) {
    // A count that keeps growing (nodes coming up at every call).
    script[SCIF_GET_NODEIDS] = [](int, unsigned long arg) {
        auto *ids = arg_as<scifioctl_node_ids>(arg);
        auto *nodes = reinterpret_cast<uint16_t *>(ids->nodes);
        for (int i = 0; i < ids->len; ++i)
            nodes[i] = static_cast<uint16_t>(i);
        ids->len += 1;
        return 0;
    };
    scif::NodeIds ids = scif::get_node_ids();
    EXPECT_EQ(count(SCIF_GET_NODEIDS), 4u);
    EXPECT_EQ(ids.nodes.size(), 19u); // the room of the last call, filled
    EXPECT_EQ(ids.nodes.back(), 18);
}
