// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Unit tests of addressing, qualifier mapping and I/O vector filling.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

#include "dapl_util.h"

using namespace daplscif;

static sockaddr_in v4(const char *s) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, s, &a.sin_addr);
    return a;
}

static bool only_loopback(uint32_t a) {
    return (a >> 24) == 127 || a == 0x0a000005; /* 10.0.0.5 is "ours" */
}

TEST(Addr, NodeAddressRoundTrip) {
    sockaddr_in a;
    node_to_sockaddr(3, &a);
    char buf[32];
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
    EXPECT_STREQ(buf, "127.83.0.3");
    uint16_t node = 99;
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
    EXPECT_EQ(node, 3);
}

TEST(Addr, HostAddressesMeanOwnNode) {
    uint16_t node = 99;
    sockaddr_in a = v4("127.0.0.1");
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 2, &node, only_loopback));
    EXPECT_EQ(node, 2);
    a = v4("10.0.0.5");
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
    EXPECT_EQ(node, 0);
    a = v4("192.0.2.1"); /* not ours */
    EXPECT_FALSE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
    a = v4("127.83.1.0"); /* node 256: out of range */
    EXPECT_FALSE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
    EXPECT_FALSE(sockaddr_to_node(nullptr, 0, &node, only_loopback));
}

TEST(Addr, Ipv6) {
    uint16_t node = 99;
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 1, &node, only_loopback));
    EXPECT_EQ(node, 1);
    inet_pton(AF_INET6, "::ffff:127.83.0.1", &a.sin6_addr);
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
    EXPECT_EQ(node, 1);
    inet_pton(AF_INET6, "2001:db8::1", &a.sin6_addr);
    EXPECT_FALSE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback));
}

static std::string name_of(const sockaddr_in &a) {
    char buf[32];
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
    return buf;
}

TEST(Cluster, ParseSelf) {
    EXPECT_EQ(parse_cluster_self("17 169.254.0.1 7170\n"), 17);
    EXPECT_EQ(parse_cluster_self("63 10.0.0.1 1\n"), 63);
    EXPECT_EQ(parse_cluster_self(""), 0); /* self not written yet */
    EXPECT_EQ(parse_cluster_self("\n"), 0);
    EXPECT_EQ(parse_cluster_self(nullptr), 0);
    EXPECT_EQ(parse_cluster_self("16 10.0.0.1 1"), 0); /* an emulated node's id */
    EXPECT_EQ(parse_cluster_self("256 10.0.0.1 1"), 0);
    EXPECT_EQ(parse_cluster_self("99999 10.0.0.1 1"), 0);
    EXPECT_EQ(parse_cluster_self("17x 10.0.0.1 1"), 0);
    EXPECT_EQ(parse_cluster_self("-17 10.0.0.1 1"), 0);
}

TEST(Cluster, ReadsTheSysfsFile) {
    char path[] = "/tmp/dapl-cluster-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "18 169.254.0.2 7170\n", 20), 20);
    close(fd);
    EXPECT_EQ(cluster_host_id(path), 18);
    unlink(path);
    EXPECT_EQ(cluster_host_id(path), 0); /* scif_rdma.ko not loaded */
}

TEST(Cluster, NodeZeroIsNamedByTheClusterId) {
    sockaddr_in a;
    node_to_name(0, 17, &a);
    EXPECT_EQ(name_of(a), "127.83.0.17");
    node_to_name(18, 17, &a);
    EXPECT_EQ(name_of(a), "127.83.0.18");
    node_to_name(1, 17, &a); /* an emulated node keeps its own id */
    EXPECT_EQ(name_of(a), "127.83.0.1");
    node_to_name(0, 0, &a);
    EXPECT_EQ(name_of(a), "127.83.0.0");
}

TEST(Cluster, ConnectToOwnClusterIdReachesNodeZero) {
    uint16_t node = 99;
    sockaddr_in a = v4("127.83.0.17");
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback, 17));
    EXPECT_EQ(node, 0);
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 1, &node, only_loopback, 17));
    EXPECT_EQ(node, 0); /* also from an IA on emulated node 1 */
    a = v4("127.83.0.18");
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback, 17));
    EXPECT_EQ(node, 18);
    a = v4("127.83.0.0");
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback, 17));
    EXPECT_EQ(node, 0);
    a = v4("127.83.0.17"); /* without a cluster id, 17 is just node 17 */
    ASSERT_TRUE(sockaddr_to_node(reinterpret_cast<sockaddr *>(&a), 0, &node, only_loopback, 0));
    EXPECT_EQ(node, 17);
}

TEST(Qual, PortMapping) {
    EXPECT_EQ(qual_to_port(0), 1024);
    EXPECT_EQ(qual_to_port(45248), 46272);
    EXPECT_EQ(qual_to_port(kQualPortRange), 1024);
    EXPECT_EQ(qual_to_port(53000), 54024);
    for (uint16_t p : {1024, 1088, 5000, 65535})
        EXPECT_EQ(qual_to_port(port_to_qual(p)), p);
}

TEST(Iov, FillOrder) {
    std::vector<uint8_t> a(4, 0xee), b(4, 0xee), c(4, 0xee);
    std::vector<Seg> segs = {
        {reinterpret_cast<uint64_t>(a.data()), 4},
        {reinterpret_cast<uint64_t>(b.data()), 4},
        {reinterpret_cast<uint64_t>(c.data()), 4},
    };
    uint8_t src[6] = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE(iov_scatter(segs, src, 6));
    EXPECT_EQ(a, (std::vector<uint8_t>{1, 2, 3, 4}));       /* full */
    EXPECT_EQ(b, (std::vector<uint8_t>{5, 6, 0xee, 0xee})); /* partial */
    EXPECT_EQ(c, (std::vector<uint8_t>(4, 0xee)));          /* untouched */
    EXPECT_FALSE(iov_scatter(segs, src, 13));               /* too small */
    EXPECT_EQ(iov_total(segs), 12u);
}

TEST(Iov, PlanSkipsEmptySegments) {
    std::vector<Seg> segs = {{0x1000, 0}, {0x2000, 8}, {0x3000, 8}};
    std::vector<Piece> plan;
    ASSERT_TRUE(iov_plan(segs, 10, &plan));
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[0].seg, 1u);
    EXPECT_EQ(plan[0].len, 8u);
    EXPECT_EQ(plan[1].seg, 2u);
    EXPECT_EQ(plan[1].len, 2u);
    ASSERT_TRUE(iov_plan(segs, 0, &plan));
    EXPECT_TRUE(plan.empty());
}

TEST(Wire, Layout) {
    EXPECT_EQ(sizeof(MsgHdr), 24u);
    EXPECT_EQ(sizeof(MrInfo), 40u);
    EXPECT_EQ(sizeof(ConnBody), 16u);
}

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

TEST(Range, Within) {
    EXPECT_TRUE(range_within(0x1000, 0x100, 0x1000, 0x100));
    EXPECT_TRUE(range_within(0x1000, 0x100, 0x10ff, 1));
    EXPECT_TRUE(range_within(0x1000, 0x100, 0x1100, 0));
    EXPECT_FALSE(range_within(0x1000, 0x100, 0x0fff, 1));
    EXPECT_FALSE(range_within(0x1000, 0x100, 0x10ff, 2));
    EXPECT_FALSE(range_within(0x1000, 0x100, 0x1101, 0));
}

TEST(Range, NoWrapAround2To64) {
    /* The end sum of these wraps to a small number inside the region. */
    EXPECT_FALSE(range_within(0x1000, 0x100, UINT64_MAX - 7, 16));
    EXPECT_FALSE(range_within(0x1000, 0x100, 0x1000, UINT64_MAX));
    EXPECT_FALSE(range_within(0x1000, 0x100, 0x1080, UINT64_MAX - 0x7f));
    /* A region reaching past 2^64 - 1 holds nothing. */
    EXPECT_FALSE(range_within(UINT64_MAX - 0xff, 0x200, UINT64_MAX - 0xff, 1));
    EXPECT_TRUE(range_within(UINT64_MAX - 0xff, 0xff, UINT64_MAX - 0xff, 0xff));
}

/* DAPLSCIF_RDMA_WORKERS: 0 .. 16 as given; unset, empty or anything else the default. */
TEST(RdmaWorkers, FromEnv) {
    EXPECT_EQ(rdma_workers_from_env(nullptr), kRdmaWorkersDefault);
    EXPECT_EQ(rdma_workers_from_env(""), kRdmaWorkersDefault);
    EXPECT_EQ(rdma_workers_from_env("0"), 0u);
    EXPECT_EQ(rdma_workers_from_env("1"), 1u);
    EXPECT_EQ(rdma_workers_from_env("16"), 16u);
    for (const char *bad : {"17", "-1", " 2", "2x", "x", "99999999999999999999999"})
        EXPECT_EQ(rdma_workers_from_env(bad), kRdmaWorkersDefault) << bad;
}

/*
 * DAPLSCIF_RMA_CACHE: "1" on, "0" off; unset, empty or anything else on
 * exactly when long-term pins are not limited.
 */
TEST(RmaCache, FromEnv) {
    for (bool unlimited : {false, true}) {
        EXPECT_EQ(rma_cache_from_env(nullptr, unlimited), unlimited);
        EXPECT_EQ(rma_cache_from_env("", unlimited), unlimited);
        EXPECT_TRUE(rma_cache_from_env("1", unlimited));
        EXPECT_FALSE(rma_cache_from_env("0", unlimited));
        for (const char *bad : {"2", "yes", " 1", "1 ", "01", "-1"})
            EXPECT_EQ(rma_cache_from_env(bad, unlimited), unlimited) << bad;
    }
}
