// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Tests of the exported C functions of libscif.so through the real system
// calls, limited to behaviour that needs no SCIF kernel module (argument
// checks, missing device, non-SCIF descriptors, poll).  Behaviour that needs
// the module is covered by the selftests in the VM.
#include <scif.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

// Sets SCIF_NODE for one test, restoring the previous value afterwards.
class ScopedNodeEnv {
  public:
    explicit ScopedNodeEnv(const char *value) {
        const char *old = std::getenv("SCIF_NODE");
        had_ = old != nullptr;
        if (had_)
            old_ = old;
        setenv("SCIF_NODE", value, 1);
    }
    ~ScopedNodeEnv() {
        if (had_)
            setenv("SCIF_NODE", old_.c_str(), 1);
        else
            unsetenv("SCIF_NODE");
    }

  private:
    bool had_ = false;
    std::string old_;
};

// A node id that no openscif module creates (at most 16 nodes).
constexpr const char *kAbsentNode = "65535";

} // namespace

TEST(Api, OpenWithInvalidScifNodeIsEinval) {
    ScopedNodeEnv env("node1");
    errno = 0;
    EXPECT_EQ(scif_open(), SCIF_OPEN_FAILED);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, OpenOfAnAbsentNodeIsEnxio) {
    ScopedNodeEnv env(kAbsentNode);
    errno = 0;
    EXPECT_EQ(scif_open(), SCIF_OPEN_FAILED);
    EXPECT_EQ(errno, ENXIO);
}

TEST(Api, ScifNodeIsReadAtEveryCall) {
    {
        ScopedNodeEnv env(kAbsentNode);
        EXPECT_EQ(scif_open(), SCIF_OPEN_FAILED);
        EXPECT_EQ(errno, ENXIO);
    }
    ScopedNodeEnv env("bad");
    EXPECT_EQ(scif_open(), SCIF_OPEN_FAILED);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, GetNodeIdsWithoutDriverIsEnxio) {
    ScopedNodeEnv env(kAbsentNode);
    uint16_t nodes[4], self;
    EXPECT_EQ(scif_get_nodeIDs(nodes, 4, &self), -1);
    EXPECT_EQ(errno, ENXIO);
}

TEST(Api, CloseOfABadDescriptorIsEbadf) {
    EXPECT_EQ(scif_close(-1), -1);
    EXPECT_EQ(errno, EBADF);
}

TEST(Api, CallsOnANonScifDescriptorAreEnotty) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char buf[4] = {};
    scif_portID dst{0, 2000};
    EXPECT_EQ(scif_bind(fd, 2000), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(scif_listen(fd, 1), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(scif_connect(fd, &dst), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(scif_send(fd, buf, 4, 0), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(scif_recv(fd, buf, 4, 0), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(scif_fence_wait(fd, 0), -1);
    EXPECT_EQ(errno, ENOTTY);
    close(fd);
}

TEST(Api, AcceptOnANonScifDescriptorLeaksNothing) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    scif_portID peer;
    scif_epd_t newepd = -1;
    EXPECT_EQ(scif_accept(fd, &peer, &newepd, 0), -1);
    EXPECT_EQ(errno, ENOTTY);
    EXPECT_EQ(newepd, -1);
    // The next descriptor is the one right after fd: nothing was left open.
    int next = open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(next, fd + 1);
    close(next);
    close(fd);
}

TEST(Api, AcceptWithNullArgumentsIsEinval) {
    scif_epd_t newepd;
    EXPECT_EQ(scif_accept(0, nullptr, &newepd, 0), -1);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, ConnectWithNullDestinationIsEinval) {
    EXPECT_EQ(scif_connect(0, nullptr), -1);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, RegisterRejectsMapKernel) {
    EXPECT_EQ(scif_register(0, nullptr, 4096, 0, SCIF_PROT_READ, SCIF_MAP_KERNEL),
              SCIF_REGISTER_FAILED);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, MmapRejectsMapKernelAndUnknownProt) {
    EXPECT_EQ(scif_mmap(nullptr, 4096, SCIF_PROT_READ, SCIF_MAP_KERNEL, 0, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(scif_mmap(nullptr, 4096, 0x4, 0, 0, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Api, MmapOfABadDescriptorIsEbadf) {
    EXPECT_EQ(scif_mmap(nullptr, 4096, SCIF_PROT_READ, 0, -1, 0), SCIF_MMAP_FAILED);
    EXPECT_EQ(errno, EBADF);
}

TEST(Api, GetFdReturnsTheEndpoint) {
    EXPECT_EQ(scif_get_fd(5), 5);
    EXPECT_EQ(scif_get_fd(1234), 1234);
}

TEST(Api, PollReportsReadiness) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    scif_pollepd epd{p[0], POLLIN, 0};
    EXPECT_EQ(scif_poll(&epd, 1, 0), 0);
    ASSERT_EQ(write(p[1], "x", 1), 1);
    EXPECT_EQ(scif_poll(&epd, 1, -1), 1);
    EXPECT_EQ(epd.revents, POLLIN);
    close(p[0]);
    close(p[1]);
}

TEST(Api, PollOfABadDescriptorIsPollnval) {
    scif_pollepd epd{-2, POLLIN, 0};
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    close(fd); // fd is now closed
    epd.epd = fd;
    EXPECT_EQ(scif_poll(&epd, 1, 0), 1);
    EXPECT_EQ(epd.revents, POLLNVAL);
}

TEST(Api, ConcurrentCallsKeepTheirOwnErrno) {
    // errno is per thread and the library holds no shared state: threads
    // failing differently at the same time each see their own error.
    std::vector<std::thread> threads;
    std::vector<int> errs(8, 0);
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([t, &errs] {
            int err = 0;
            for (int i = 0; i < 2000 && err == 0; ++i) {
                if (t % 2) {
                    if (scif_close(-1) != -1 || errno != EBADF)
                        err = errno ? errno : -1;
                } else {
                    if (scif_mmap(nullptr, 1, 0x4, 0, -1, 0) != SCIF_MMAP_FAILED || errno != EINVAL)
                        err = errno ? errno : -1;
                }
            }
            errs[t] = err;
        });
    }
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < 8; ++t)
        EXPECT_EQ(errs[t], 0) << "thread " << t;
}
