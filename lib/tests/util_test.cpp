// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Unit tests of the pure helpers: SCIF_NODE parsing, device paths, errno
// mapping, argument validation, ioctl ABI numbers and layouts, packing,
// and the errno/descriptor/exception helpers.
#include "scif_internal.h"
#include "fake_device.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <sys/mman.h>

using namespace scif;

namespace {

int parsed(const char *value, int *err) {
    unsigned node = 12345;
    *err = parse_node(value, &node);
    return static_cast<int>(node);
}

} // namespace

TEST(ParseNode, UnsetMeansNodeZero) {
    int err;
    EXPECT_EQ(parsed(nullptr, &err), 0);
    EXPECT_EQ(err, 0);
}

TEST(ParseNode, EmptyMeansNodeZero) {
    int err;
    EXPECT_EQ(parsed("", &err), 0);
    EXPECT_EQ(err, 0);
}

TEST(ParseNode, Decimal) {
    int err;
    EXPECT_EQ(parsed("0", &err), 0);
    EXPECT_EQ(err, 0);
    EXPECT_EQ(parsed("1", &err), 1);
    EXPECT_EQ(err, 0);
    EXPECT_EQ(parsed("16", &err), 16);
    EXPECT_EQ(err, 0);
    EXPECT_EQ(parsed("007", &err), 7);
    EXPECT_EQ(err, 0);
}

TEST(ParseNode, LargestNodeId) {
    int err;
    EXPECT_EQ(parsed("65535", &err), 65535);
    EXPECT_EQ(err, 0);
}

TEST(ParseNode, RejectsOutOfRange) {
    unsigned node = 0;
    EXPECT_EQ(parse_node("65536", &node), EINVAL);
    EXPECT_EQ(parse_node("99999999999999999999999", &node), EINVAL);
}

TEST(ParseNode, RejectsSignsSpacesAndJunk) {
    unsigned node = 0;
    for (const char *bad : {"-1", "+1", " 1", "1 ", "1x", "x1", "abc", "0x1", "1.0"})
        EXPECT_EQ(parse_node(bad, &node), EINVAL) << "value '" << bad << "'";
}

TEST(DevicePath, NodeZeroIsDevScif) {
    EXPECT_EQ(device_path(0), "/dev/scif");
}

TEST(DevicePath, OtherNodesCarryTheirNumber) {
    EXPECT_EQ(device_path(1), "/dev/scif1");
    EXPECT_EQ(device_path(12), "/dev/scif12");
}

TEST(MapOpenErrno, MissingDeviceOrDriverIsEnxio) {
    EXPECT_EQ(map_open_errno(ENOENT), ENXIO);
    EXPECT_EQ(map_open_errno(ENODEV), ENXIO);
    EXPECT_EQ(map_open_errno(ENXIO), ENXIO);
}

TEST(MapOpenErrno, ResourceAndPermissionErrorsPassThrough) {
    EXPECT_EQ(map_open_errno(EMFILE), EMFILE);
    EXPECT_EQ(map_open_errno(ENFILE), ENFILE);
    EXPECT_EQ(map_open_errno(ENOMEM), ENOMEM);
    EXPECT_EQ(map_open_errno(EACCES), EACCES);
}

TEST(CheckVersion, MatchingVersionIsAccepted) {
    EXPECT_EQ(check_version(0, 0, SCIF_ABI_VERSION), 0);
}

TEST(CheckVersion, OtherVersionIsEnxio) {
    EXPECT_EQ(check_version(0, 0, SCIF_ABI_VERSION + 1), ENXIO);
    EXPECT_EQ(check_version(0, 0, 0), ENXIO);
}

TEST(CheckVersion, DriverWithoutTheIoctlIsAccepted) {
    EXPECT_EQ(check_version(-1, ENOTTY, 0), 0);
    EXPECT_EQ(check_version(-1, EINVAL, 0), 0);
}

TEST(CheckVersion, OutOfMemoryIsReported) {
    EXPECT_EQ(check_version(-1, ENOMEM, 0), ENOMEM);
}

TEST(CheckVersion, OtherFailuresAreEnxio) {
    EXPECT_EQ(check_version(-1, EIO, 0), ENXIO);
    EXPECT_EQ(check_version(-1, EFAULT, 0), ENXIO);
}

TEST(ValidateRegister, AcceptsEveryProtCombination) {
    for (int prot :
         {0, int(SCIF_PROT_READ), int(SCIF_PROT_WRITE), int(SCIF_PROT_READ | SCIF_PROT_WRITE)})
        EXPECT_EQ(validate_register(prot, 0), 0) << prot;
}

TEST(ValidateRegister, RejectsUnknownProtBits) {
    EXPECT_EQ(validate_register(4, 0), EINVAL);
    EXPECT_EQ(validate_register(SCIF_PROT_READ | 0x100, 0), EINVAL);
    EXPECT_EQ(validate_register(-1, 0), EINVAL);
}

TEST(ValidateRegister, AcceptsMapFixed) {
    EXPECT_EQ(validate_register(SCIF_PROT_READ, SCIF_MAP_FIXED), 0);
}

TEST(ValidateRegister, RejectsMapKernelFromUserSpace) {
    EXPECT_EQ(validate_register(SCIF_PROT_READ, SCIF_MAP_KERNEL), EINVAL);
    EXPECT_EQ(validate_register(SCIF_PROT_READ, SCIF_MAP_FIXED | SCIF_MAP_KERNEL), EINVAL);
}

TEST(ValidateRegister, RejectsUnknownMapFlags) {
    EXPECT_EQ(validate_register(SCIF_PROT_READ, 1), EINVAL);
    EXPECT_EQ(validate_register(SCIF_PROT_READ, 0x40), EINVAL);
}

TEST(ValidateMmap, SameRulesAsRegister) {
    EXPECT_EQ(validate_mmap(SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED), 0);
    EXPECT_EQ(validate_mmap(SCIF_PROT_READ, SCIF_MAP_KERNEL), EINVAL);
    EXPECT_EQ(validate_mmap(8, 0), EINVAL);
    EXPECT_EQ(validate_mmap(SCIF_PROT_READ, 0x1), EINVAL);
}

TEST(MmapTranslation, Prot) {
    EXPECT_EQ(mmap_prot(0), PROT_NONE);
    EXPECT_EQ(mmap_prot(SCIF_PROT_READ), PROT_READ);
    EXPECT_EQ(mmap_prot(SCIF_PROT_WRITE), PROT_WRITE);
    EXPECT_EQ(mmap_prot(SCIF_PROT_READ | SCIF_PROT_WRITE), PROT_READ | PROT_WRITE);
}

TEST(MmapTranslation, Flags) {
    EXPECT_EQ(mmap_flags(0), 0);
    EXPECT_EQ(mmap_flags(SCIF_MAP_FIXED), MAP_FIXED);
}

TEST(PollTimeout, NegativeMeansForever) {
    EXPECT_EQ(poll_timeout(-1), -1);
    EXPECT_EQ(poll_timeout(-1000), -1);
    EXPECT_EQ(poll_timeout(LONG_MIN), -1);
}

TEST(PollTimeout, InRangeIsKept) {
    EXPECT_EQ(poll_timeout(0), 0);
    EXPECT_EQ(poll_timeout(1500), 1500);
    EXPECT_EQ(poll_timeout(INT_MAX), INT_MAX);
}

TEST(PollTimeout, TooLargeIsClamped) {
    EXPECT_EQ(poll_timeout(LONG_MAX), INT_MAX);
}

// The ioctl numbers of the Linux 5.9 uapi (x86-64).
TEST(IoctlAbi, Numbers) {
    EXPECT_EQ(SCIF_BIND, 0xC0087301UL);
    EXPECT_EQ(SCIF_LISTEN, 0x40047302UL);
    EXPECT_EQ(SCIF_CONNECT, 0xC0087303UL);
    EXPECT_EQ(SCIF_ACCEPTREQ, 0xC0107304UL);
    EXPECT_EQ(SCIF_ACCEPTREG, 0xC0087305UL);
    EXPECT_EQ(SCIF_SEND, 0xC0187306UL);
    EXPECT_EQ(SCIF_RECV, 0xC0187307UL);
    EXPECT_EQ(SCIF_REG, 0xC0287308UL);
    EXPECT_EQ(SCIF_UNREG, 0xC0107309UL);
    EXPECT_EQ(SCIF_READFROM, 0xC028730AUL);
    EXPECT_EQ(SCIF_WRITETO, 0xC028730BUL);
    EXPECT_EQ(SCIF_VREADFROM, 0xC028730CUL);
    EXPECT_EQ(SCIF_VWRITETO, 0xC028730DUL);
    EXPECT_EQ(SCIF_GET_NODEIDS, 0xC018730EUL);
    EXPECT_EQ(SCIF_FENCE_MARK, 0xC010730FUL);
    EXPECT_EQ(SCIF_FENCE_WAIT, 0xC0047310UL);
    EXPECT_EQ(SCIF_FENCE_SIGNAL, 0xC0287311UL);
}

TEST(IoctlAbi, Layouts) {
    EXPECT_EQ(offsetof(scifioctl_connect, self), 0u);
    EXPECT_EQ(offsetof(scifioctl_connect, peer), 4u);
    EXPECT_EQ(offsetof(scifioctl_accept, flags), 0u);
    EXPECT_EQ(offsetof(scifioctl_accept, peer), 4u);
    EXPECT_EQ(offsetof(scifioctl_accept, endpt), 8u);
    EXPECT_EQ(offsetof(scifioctl_msg, msg), 0u);
    EXPECT_EQ(offsetof(scifioctl_msg, len), 8u);
    EXPECT_EQ(offsetof(scifioctl_msg, flags), 12u);
    EXPECT_EQ(offsetof(scifioctl_msg, out_len), 16u);
    EXPECT_EQ(offsetof(scifioctl_reg, addr), 0u);
    EXPECT_EQ(offsetof(scifioctl_reg, len), 8u);
    EXPECT_EQ(offsetof(scifioctl_reg, offset), 16u);
    EXPECT_EQ(offsetof(scifioctl_reg, prot), 24u);
    EXPECT_EQ(offsetof(scifioctl_reg, flags), 28u);
    EXPECT_EQ(offsetof(scifioctl_reg, out_offset), 32u);
    EXPECT_EQ(offsetof(scifioctl_unreg, len), 8u);
    EXPECT_EQ(offsetof(scifioctl_copy, loffset), 0u);
    EXPECT_EQ(offsetof(scifioctl_copy, len), 8u);
    EXPECT_EQ(offsetof(scifioctl_copy, roffset), 16u);
    EXPECT_EQ(offsetof(scifioctl_copy, addr), 24u);
    EXPECT_EQ(offsetof(scifioctl_copy, flags), 32u);
    EXPECT_EQ(offsetof(scifioctl_fence_mark, mark), 8u);
    EXPECT_EQ(offsetof(scifioctl_fence_signal, lval), 8u);
    EXPECT_EQ(offsetof(scifioctl_fence_signal, roff), 16u);
    EXPECT_EQ(offsetof(scifioctl_fence_signal, rval), 24u);
    EXPECT_EQ(offsetof(scifioctl_fence_signal, flags), 32u);
    EXPECT_EQ(offsetof(scifioctl_node_ids, self), 8u);
    EXPECT_EQ(offsetof(scifioctl_node_ids, len), 16u);
}

TEST(Pack, Connect) {
    scif_portID dst{3, 2050};
    scifioctl_connect c = pack_connect(dst);
    EXPECT_EQ(c.peer.node, 3);
    EXPECT_EQ(c.peer.port, 2050);
    EXPECT_EQ(c.self.node, 0);
    EXPECT_EQ(c.self.port, 0);
}

TEST(Pack, Accept) {
    scifioctl_accept a = pack_accept(SCIF_ACCEPT_SYNC);
    EXPECT_EQ(a.flags, SCIF_ACCEPT_SYNC);
    EXPECT_EQ(a.endpt, 0u);
}

TEST(Pack, Msg) {
    char buf[4];
    scifioctl_msg m = pack_msg(buf, 4, SCIF_SEND_BLOCK);
    EXPECT_EQ(m.msg, reinterpret_cast<std::uintptr_t>(buf));
    EXPECT_EQ(m.len, 4);
    EXPECT_EQ(m.flags, SCIF_SEND_BLOCK);
    EXPECT_EQ(m.out_len, 0);
}

TEST(Pack, Reg) {
    char buf[1];
    scifioctl_reg r = pack_reg(buf, 8192, 0x10000, SCIF_PROT_READ, SCIF_MAP_FIXED);
    EXPECT_EQ(r.addr, reinterpret_cast<std::uintptr_t>(buf));
    EXPECT_EQ(r.len, 8192u);
    EXPECT_EQ(r.offset, 0x10000);
    EXPECT_EQ(r.prot, SCIF_PROT_READ);
    EXPECT_EQ(r.flags, SCIF_MAP_FIXED);
    EXPECT_EQ(r.out_offset, 0);
}

TEST(Pack, Unreg) {
    scifioctl_unreg u = pack_unreg(0x3000, 4096);
    EXPECT_EQ(u.offset, 0x3000);
    EXPECT_EQ(u.len, 4096u);
}

TEST(Pack, CopyWindowToWindowHasNoAddress) {
    scifioctl_copy c = pack_copy(0x1000, 64, 0x2000, SCIF_RMA_SYNC);
    EXPECT_EQ(c.loffset, 0x1000);
    EXPECT_EQ(c.len, 64u);
    EXPECT_EQ(c.roffset, 0x2000);
    EXPECT_EQ(c.addr, 0u);
    EXPECT_EQ(c.flags, SCIF_RMA_SYNC);
}

TEST(Pack, VcopyHasAddressAndNoLocalOffset) {
    char buf[1];
    scifioctl_copy c = pack_vcopy(buf, 100, 0x4000, SCIF_RMA_USECPU);
    EXPECT_EQ(c.addr, reinterpret_cast<std::uintptr_t>(buf));
    EXPECT_EQ(c.loffset, 0);
    EXPECT_EQ(c.len, 100u);
    EXPECT_EQ(c.roffset, 0x4000);
    EXPECT_EQ(c.flags, SCIF_RMA_USECPU);
}

TEST(Pack, FenceMark) {
    int mark = 0;
    scifioctl_fence_mark m = pack_fence_mark(SCIF_FENCE_INIT_PEER, &mark);
    EXPECT_EQ(m.flags, SCIF_FENCE_INIT_PEER);
    EXPECT_EQ(m.mark, reinterpret_cast<std::uintptr_t>(&mark));
}

TEST(Pack, FenceSignal) {
    scifioctl_fence_signal s =
        pack_fence_signal(8, 0x1122334455667788ULL, 16, 42, SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE);
    EXPECT_EQ(s.loff, 8);
    EXPECT_EQ(s.lval, 0x1122334455667788ULL);
    EXPECT_EQ(s.roff, 16);
    EXPECT_EQ(s.rval, 42u);
    EXPECT_EQ(s.flags, SCIF_SIGNAL_LOCAL | SCIF_SIGNAL_REMOTE);
}

TEST(Pack, NodeIds) {
    uint16_t nodes[4], self;
    scifioctl_node_ids n = pack_node_ids(nodes, 4, &self);
    EXPECT_EQ(n.nodes, reinterpret_cast<std::uintptr_t>(nodes));
    EXPECT_EQ(n.self, reinterpret_cast<std::uintptr_t>(&self));
    EXPECT_EQ(n.len, 4);
}

TEST(ErrnoSaver, RestoresErrno) {
    errno = EAGAIN;
    {
        ErrnoSaver keep;
        errno = EIO;
    }
    EXPECT_EQ(errno, EAGAIN);
}

TEST(FdGuard, ClosesOnScopeExitKeepingErrno) {
    scif_test::FakeDevice dev;
    int fd = dev.open("/dev/scif", 0);
    errno = ECONNRESET;
    { FdGuard guard(dev, fd); }
    EXPECT_EQ(errno, ECONNRESET);
    EXPECT_TRUE(dev.open_fds.empty());
    ASSERT_EQ(dev.of("close").size(), 1u);
    EXPECT_EQ(dev.of("close")[0].fd, fd);
}

TEST(FdGuard, ReleaseKeepsTheDescriptorOpen) {
    scif_test::FakeDevice dev;
    int fd = dev.open("/dev/scif", 0);
    {
        FdGuard guard(dev, fd);
        EXPECT_EQ(guard.get(), fd);
        EXPECT_EQ(guard.release(), fd);
    }
    EXPECT_EQ(dev.open_fds.count(fd), 1u);
    EXPECT_TRUE(dev.of("close").empty());
}

TEST(FdGuard, NegativeDescriptorIsNotClosed) {
    scif_test::FakeDevice dev;
    { FdGuard guard(dev, -1); }
    EXPECT_TRUE(dev.of("close").empty());
}

TEST(CallC, PassesTheResultThrough) {
    EXPECT_EQ(call_c(-1, [] { return 7; }), 7);
}

TEST(CallC, KeepsErrnoOfAFailure) {
    errno = 0;
    EXPECT_EQ(call_c(-1, [] { return fail_with(ECONNREFUSED, -1); }), -1);
    EXPECT_EQ(errno, ECONNREFUSED);
}

TEST(CallC, BadAllocIsEnomem) {
    errno = 0;
    EXPECT_EQ(call_c(-1, []() -> int { throw std::bad_alloc(); }), -1);
    EXPECT_EQ(errno, ENOMEM);
}

TEST(CallC, SystemErrorKeepsItsErrno) {
    errno = 0;
    EXPECT_EQ(call_c(-1, []() -> int { throw std::system_error(EACCES, std::generic_category()); }),
              -1);
    EXPECT_EQ(errno, EACCES);
}

TEST(CallC, AnyOtherExceptionIsEio) {
    errno = 0;
    EXPECT_EQ(call_c(-1, []() -> int { throw std::runtime_error("x"); }), -1);
    EXPECT_EQ(errno, EIO);
    errno = 0;
    EXPECT_EQ(call_c(-1, []() -> int { throw 42; }), -1);
    EXPECT_EQ(errno, EIO);
}

TEST(CallC, UsesTheCallsFailureValue) {
    void *failed = call_c(SCIF_MMAP_FAILED, []() -> void * { throw std::bad_alloc(); });
    EXPECT_EQ(failed, SCIF_MMAP_FAILED);
    off_t off = call_c(SCIF_REGISTER_FAILED, []() -> off_t { throw std::bad_alloc(); });
    EXPECT_EQ(off, SCIF_REGISTER_FAILED);
}
