// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Unit tests of scif_accept(): a new descriptor on the listener's own
// device, ACCEPTREQ on the listener, ACCEPTREG of the handle on the new
// descriptor, and cleanup.
#include "scif_internal.h"
#include "fake_device.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/sysmacros.h>

#include <map>

using namespace scif;
using scif_test::arg_as;
using scif_test::fail;
using scif_test::FakeDevice;

namespace {

constexpr int kListener = 7;
constexpr __u64 kHandle = 0xabcdef0123ULL;

// A fake with device files: each path is a character device with an rdev;
// a descriptor opened from a path is that device.  The listener acts as
// node listener_node on device listener_rdev.
struct AcceptFixture : ::testing::Test {
    FakeDevice dev;
    std::map<std::string, dev_t> files{{"/dev/scif", makedev(10, 60)},
                                       {"/dev/scif1", makedev(10, 61)},
                                       {"/dev/scif2", makedev(10, 62)}};
    std::map<int, dev_t> fds;
    uint16_t listener_node = 1;
    bool nodeids_works = true;
    int acceptreg_errno = 0;
    std::vector<int> acceptreg_fds;

    void SetUp() override {
        fds[kListener] = files["/dev/scif1"];
        // /proc/self/fd/<listener> is the listener's own device inode.
        files["/proc/self/fd/" + std::to_string(kListener)] = fds[kListener];
        dev.on_stat = [this](const char *path, struct stat *st) {
            auto it = files.find(path);
            if (it == files.end())
                return fail(ENOENT);
            *st = {};
            st->st_mode = S_IFCHR | 0666;
            st->st_rdev = it->second;
            return 0;
        };
        dev.on_fstat = [this](int fd, struct stat *st) {
            auto it = fds.find(fd);
            if (it == fds.end())
                return fail(EBADF);
            *st = {};
            st->st_mode = S_IFCHR | 0666;
            st->st_rdev = it->second;
            return 0;
        };
        dev.on_open = [this](const char *path, int) {
            auto it = files.find(path);
            if (it == files.end())
                return fail(ENOENT);
            static int next = 200;
            int fd = next++;
            fds[fd] = it->second;
            return fd;
        };
        dev.on_ioctl = [this](int fd, unsigned long req, unsigned long arg) {
            switch (req) {
            case SCIF_ACCEPTREQ: {
                EXPECT_EQ(fd, kListener);
                auto *a = arg_as<scifioctl_accept>(arg);
                a->peer.node = 2;
                a->peer.port = 3333;
                a->endpt = kHandle;
                return 0;
            }
            case SCIF_GET_NODEIDS: {
                if (!nodeids_works)
                    return fail(ENOTTY);
                auto *n = arg_as<scifioctl_node_ids>(arg);
                *reinterpret_cast<uint16_t *>(static_cast<std::uintptr_t>(n->self)) = listener_node;
                n->len = 3;
                return 0;
            }
            case SCIF_ACCEPTREG:
                acceptreg_fds.push_back(fd);
                EXPECT_EQ(*arg_as<__u64>(arg), kHandle);
                return acceptreg_errno ? fail(acceptreg_errno) : 0;
            default:
                ADD_FAILURE() << "unexpected ioctl " << std::hex << req;
                return fail(ENOTTY);
            }
        };
    }
};

} // namespace

TEST_F(AcceptFixture, RegistersTheHandleOnANewDescriptorOfTheListenersNode) {
    scif_portID peer{};
    int newepd = -1;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, SCIF_ACCEPT_SYNC), 0);
    EXPECT_EQ(peer.node, 2);
    EXPECT_EQ(peer.port, 3333);
    ASSERT_GE(newepd, 0);
    EXPECT_EQ(fds[newepd], files["/dev/scif1"]);
    ASSERT_EQ(acceptreg_fds.size(), 1u);
    EXPECT_EQ(acceptreg_fds[0], newepd);
    auto opens = dev.of("open");
    ASSERT_EQ(opens.size(), 1u);
    EXPECT_EQ(opens[0].path, "/dev/scif1");
    EXPECT_EQ(opens[0].flags, O_RDWR | O_CLOEXEC);
    EXPECT_EQ(dev.open_fds.size(), 1u);
}

TEST_F(AcceptFixture, PassesTheFlagsToAcceptreq) {
    int seen_flags = -1;
    auto inner = dev.on_ioctl;
    dev.on_ioctl = [&](int fd, unsigned long req, unsigned long arg) {
        if (req == SCIF_ACCEPTREQ)
            seen_flags = arg_as<scifioctl_accept>(arg)->flags;
        return inner(fd, req, arg);
    };
    scif_portID peer;
    int newepd;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), 0);
    EXPECT_EQ(seen_flags, 0);
}

TEST_F(AcceptFixture, NodeZeroListenerUsesDevScif) {
    fds[kListener] = files["/dev/scif"];
    files["/proc/self/fd/" + std::to_string(kListener)] = fds[kListener];
    listener_node = 0;
    scif_portID peer;
    int newepd;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), 0);
    EXPECT_EQ(dev.of("open").at(0).path, "/dev/scif");
}

TEST_F(AcceptFixture, FallsBackToProcWhenNodeIdsFail) {
    nodeids_works = false;
    scif_portID peer;
    int newepd;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), 0);
    EXPECT_EQ(dev.of("open").at(0).path, "/proc/self/fd/" + std::to_string(kListener));
    EXPECT_EQ(fds[newepd], fds[kListener]);
}

TEST_F(AcceptFixture, IgnoresANodeDeviceFileOfAnotherDevice) {
    files["/dev/scif1"] = makedev(10, 99); // renamed or replaced device file
    scif_portID peer;
    int newepd;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), 0);
    auto opens = dev.of("open");
    ASSERT_EQ(opens.size(), 1u);
    EXPECT_EQ(opens[0].path, "/proc/self/fd/" + std::to_string(kListener));
}

TEST_F(AcceptFixture, OpensTheNewDescriptorBeforeTakingARequest) {
    scif_portID peer;
    int newepd;
    ASSERT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), 0);
    size_t open_at = 0, acceptreq_at = 0;
    for (size_t i = 0; i < dev.calls.size(); ++i) {
        if (dev.calls[i].op == "open")
            open_at = i + 1;
        if (dev.calls[i].op == "ioctl" && dev.calls[i].request == SCIF_ACCEPTREQ)
            acceptreq_at = i + 1;
    }
    ASSERT_NE(open_at, 0u);
    ASSERT_NE(acceptreq_at, 0u);
    EXPECT_LT(open_at, acceptreq_at);
}

TEST_F(AcceptFixture, NoMatchingDeviceIsEnxioAndNoRequestTaken) {
    files.clear();
    scif_portID peer;
    int newepd = -1;
    EXPECT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, ENXIO);
    EXPECT_EQ(newepd, -1);
    for (unsigned long req : dev.requests())
        EXPECT_NE(req, SCIF_ACCEPTREQ);
    EXPECT_TRUE(acceptreg_fds.empty());
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST_F(AcceptFixture, ReopenedFileOfAnotherDeviceIsClosed) {
    // stat() sees the right device, but what open() returns is another one.
    dev.on_open = [this](const char *, int) {
        fds[300] = makedev(1, 3);
        return 300;
    };
    scif_portID peer;
    int newepd = -1;
    EXPECT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, ENXIO);
    EXPECT_TRUE(dev.open_fds.empty());
    EXPECT_TRUE(acceptreg_fds.empty());
}

TEST_F(AcceptFixture, NothingPendingIsEagainAndClosesTheSpareDescriptor) {
    auto inner = dev.on_ioctl;
    dev.on_ioctl = [inner](int fd, unsigned long req, unsigned long arg) {
        if (req == SCIF_ACCEPTREQ)
            return fail(EAGAIN);
        EXPECT_NE(req, SCIF_ACCEPTREG);
        return inner(fd, req, arg);
    };
    scif_portID peer;
    int newepd = -1;
    EXPECT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_EQ(newepd, -1);
    EXPECT_TRUE(dev.open_fds.empty());
}

TEST_F(AcceptFixture, AcceptregFailureClosesTheNewDescriptorAndKeepsErrno) {
    acceptreg_errno = ECONNRESET;
    scif_portID peer{};
    int newepd = -1;
    EXPECT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    EXPECT_EQ(newepd, -1);
    EXPECT_EQ(peer.port, 0);
    ASSERT_EQ(acceptreg_fds.size(), 1u);
    EXPECT_TRUE(dev.open_fds.empty());
    ASSERT_EQ(dev.of("close").size(), 1u);
    EXPECT_EQ(dev.of("close")[0].fd, acceptreg_fds[0]);
}

TEST_F(AcceptFixture, DescriptorExhaustionIsReportedAndNoRequestTaken) {
    dev.on_open = [](const char *, int) { return fail(EMFILE); };
    scif_portID peer;
    int newepd;
    EXPECT_EQ(ops::accept(dev, kListener, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, EMFILE);
    for (unsigned long req : dev.requests())
        EXPECT_NE(req, SCIF_ACCEPTREQ);
    EXPECT_TRUE(acceptreg_fds.empty());
}

TEST_F(AcceptFixture, NullArgumentsAreEinvalWithoutIoctl) {
    scif_portID peer;
    int newepd;
    EXPECT_EQ(ops::accept(dev, kListener, nullptr, &newepd, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(ops::accept(dev, kListener, &peer, nullptr, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(dev.calls.empty());
}

TEST(ReopenSameDevice, BadDescriptorIsEbadf) {
    FakeDevice dev;
    EXPECT_EQ(ops::reopen_same_device(dev, 42), -1);
    EXPECT_EQ(errno, EBADF);
}

TEST(ReopenSameDevice, NonCharacterDeviceIsEnotty) {
    FakeDevice dev;
    dev.on_fstat = [](int, struct stat *st) {
        *st = {};
        st->st_mode = S_IFREG | 0644;
        return 0;
    };
    EXPECT_EQ(ops::reopen_same_device(dev, 42), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_TRUE(dev.of("open").empty());
}
