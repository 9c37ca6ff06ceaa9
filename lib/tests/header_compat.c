// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * header_compat: a program written the way MPSS-era SCIF programs are, to
 * be compiled against <scif.h> alone (make check builds it as C and as
 * C++).  It uses every historical name of Intel's header and relies on the
 * system headers Intel's scif.h included (errno, close, select, poll), so it
 * fails to compile when one is missing; the values are those of the Linux
 * 5.9 uapi and of the MPSS headers (docs/architecture.md).
 */
#include <scif.h>

#include <stdio.h>

#define CHECK_VALUE(name, value) _Static_assert((name) == (value), #name " is " #value)
#ifdef __cplusplus
#undef CHECK_VALUE
#define CHECK_VALUE(name, value) static_assert((name) == (value), #name " is " #value)
#endif

/* Blocking flags and their un-prefixed spellings. */
CHECK_VALUE(SCIF_ACCEPT_SYNC, 1);
CHECK_VALUE(SCIF_SEND_BLOCK, 1);
CHECK_VALUE(SCIF_RECV_BLOCK, 1);
CHECK_VALUE(ACCEPT_SYNC, 1);
CHECK_VALUE(SEND_BLOCK, 1);
CHECK_VALUE(RECV_BLOCK, 1);

/* Protection, mapping, fence and RMA flags. */
CHECK_VALUE(SCIF_PROT_READ, 1);
CHECK_VALUE(SCIF_PROT_WRITE, 2);
CHECK_VALUE(SCIF_MAP_FIXED, 0x10);
CHECK_VALUE(SCIF_MAP_KERNEL, 0x20);
CHECK_VALUE(SCIF_FENCE_INIT_SELF, 1);
CHECK_VALUE(SCIF_FENCE_INIT_PEER, 2);
CHECK_VALUE(SCIF_FENCE_RAS_SELF, 4);
CHECK_VALUE(SCIF_FENCE_RAS_PEER, 8);
CHECK_VALUE(SCIF_SIGNAL_LOCAL, 0x10);
CHECK_VALUE(SCIF_SIGNAL_REMOTE, 0x20);
CHECK_VALUE(SCIF_RMA_USECPU, 1);
CHECK_VALUE(SCIF_RMA_USECACHE, 2);
CHECK_VALUE(SCIF_RMA_SYNC, 4);
CHECK_VALUE(SCIF_RMA_ORDERED, 8);

/* Poll bits are poll(2)'s. */
CHECK_VALUE(SCIF_POLLIN, POLLIN);
CHECK_VALUE(SCIF_POLLOUT, POLLOUT);
CHECK_VALUE(SCIF_POLLERR, POLLERR);
CHECK_VALUE(SCIF_POLLHUP, POLLHUP);
CHECK_VALUE(SCIF_POLLNVAL, POLLNVAL);

/* Port space and the services' reserved ports (first and last of each). */
CHECK_VALUE(SCIF_ADMIN_PORT_END, 1024);
CHECK_VALUE(SCIF_PORT_RSVD, 1088);
CHECK_VALUE(SCIF_COI_PORT_0, 40);
CHECK_VALUE(SCIF_COI_PORT_9, 49);
CHECK_VALUE(SCIF_OFED_PORT_0, 60);
CHECK_VALUE(SCIF_OFED_PORT_9, 69);
CHECK_VALUE(SCIF_NETDEV_PORT_0, 80);
CHECK_VALUE(SCIF_NETDEV_PORT_9, 89);
CHECK_VALUE(SCIF_RAS_PORT_0, 100);
CHECK_VALUE(SCIF_RAS_PORT_9, 109);
CHECK_VALUE(SCIF_PM_PORT_0, 120);
CHECK_VALUE(SCIF_PM_PORT_9, 129);
CHECK_VALUE(SCIF_BT_PORT_0, 130);
CHECK_VALUE(SCIF_BT_PORT_9, 139);
CHECK_VALUE(MPSSD_MONRECV, 160);
CHECK_VALUE(MIC_NOTIFY, 161);
CHECK_VALUE(MPSSD_CRED, 162);
CHECK_VALUE(MPSSD_MONSEND, 163);
CHECK_VALUE(MPSSD_MICCTRL, 164);
CHECK_VALUE(MPSSD_RESV9, 169);
CHECK_VALUE(SCIF_COSM_LISTEN_PORT, 201);
CHECK_VALUE(SCIF_MYO_PORT_0, 1025);
CHECK_VALUE(SCIF_MYO_PORT_9, 1034);
CHECK_VALUE(SCIF_ST_PORT_0, 1044);
CHECK_VALUE(SCIF_ST_PORT_9, 1053);

/* Every reserved port lies below the ones scif_bind(epd, 0) hands out. */
static const int reserved[] = {
    SCIF_COI_PORT_0,
    SCIF_COI_PORT_1,
    SCIF_COI_PORT_2,
    SCIF_COI_PORT_3,
    SCIF_COI_PORT_4,
    SCIF_COI_PORT_5,
    SCIF_COI_PORT_6,
    SCIF_COI_PORT_7,
    SCIF_COI_PORT_8,
    SCIF_COI_PORT_9,
    SCIF_OFED_PORT_0,
    SCIF_OFED_PORT_1,
    SCIF_OFED_PORT_2,
    SCIF_OFED_PORT_3,
    SCIF_OFED_PORT_4,
    SCIF_OFED_PORT_5,
    SCIF_OFED_PORT_6,
    SCIF_OFED_PORT_7,
    SCIF_OFED_PORT_8,
    SCIF_OFED_PORT_9,
    SCIF_NETDEV_PORT_0,
    SCIF_NETDEV_PORT_1,
    SCIF_NETDEV_PORT_2,
    SCIF_NETDEV_PORT_3,
    SCIF_NETDEV_PORT_4,
    SCIF_NETDEV_PORT_5,
    SCIF_NETDEV_PORT_6,
    SCIF_NETDEV_PORT_7,
    SCIF_NETDEV_PORT_8,
    SCIF_NETDEV_PORT_9,
    SCIF_RAS_PORT_0,
    SCIF_RAS_PORT_1,
    SCIF_RAS_PORT_2,
    SCIF_RAS_PORT_3,
    SCIF_RAS_PORT_4,
    SCIF_RAS_PORT_5,
    SCIF_RAS_PORT_6,
    SCIF_RAS_PORT_7,
    SCIF_RAS_PORT_8,
    SCIF_RAS_PORT_9,
    SCIF_PM_PORT_0,
    SCIF_PM_PORT_1,
    SCIF_PM_PORT_2,
    SCIF_PM_PORT_3,
    SCIF_PM_PORT_4,
    SCIF_PM_PORT_5,
    SCIF_PM_PORT_6,
    SCIF_PM_PORT_7,
    SCIF_PM_PORT_8,
    SCIF_PM_PORT_9,
    SCIF_BT_PORT_0,
    SCIF_BT_PORT_1,
    SCIF_BT_PORT_2,
    SCIF_BT_PORT_3,
    SCIF_BT_PORT_4,
    SCIF_BT_PORT_5,
    SCIF_BT_PORT_6,
    SCIF_BT_PORT_7,
    SCIF_BT_PORT_8,
    SCIF_BT_PORT_9,
    MPSSD_MONRECV,
    MIC_NOTIFY,
    MPSSD_CRED,
    MPSSD_MONSEND,
    MPSSD_MICCTRL,
    MPSSD_RESV5,
    MPSSD_RESV6,
    MPSSD_RESV7,
    MPSSD_RESV8,
    MPSSD_RESV9,
    SCIF_COSM_LISTEN_PORT,
    SCIF_MYO_PORT_0,
    SCIF_MYO_PORT_1,
    SCIF_MYO_PORT_2,
    SCIF_MYO_PORT_3,
    SCIF_MYO_PORT_4,
    SCIF_MYO_PORT_5,
    SCIF_MYO_PORT_6,
    SCIF_MYO_PORT_7,
    SCIF_MYO_PORT_8,
    SCIF_MYO_PORT_9,
    SCIF_ST_PORT_0,
    SCIF_ST_PORT_1,
    SCIF_ST_PORT_2,
    SCIF_ST_PORT_3,
    SCIF_ST_PORT_4,
    SCIF_ST_PORT_5,
    SCIF_ST_PORT_6,
    SCIF_ST_PORT_7,
    SCIF_ST_PORT_8,
    SCIF_ST_PORT_9,
};

/* The system headers Intel's scif.h included, used without including them. */
static int uses_system_headers(scif_epd_t epd) {
    fd_set set;
    struct timeval tv = {0, 0};
    struct pollfd pfd = {scif_get_fd(epd), POLLIN, 0};

    FD_ZERO(&set);
    if (epd >= 0 && epd < FD_SETSIZE)
        FD_SET(epd, &set);
    (void)select(0, NULL, NULL, NULL, &tv);
    (void)poll(&pfd, 0, 0);
    errno = 0;
    return close(-1) == -1 && errno == EBADF ? 0 : 1;
}

int main(void) {
    struct portID old_id = {0, SCIF_OFED_PORT_0};
    portID_t old_t = old_id;
    struct scif_pollepd pe = {-1, SCIF_POLLIN | SCIF_POLLOUT, 0};
    size_t i;
    int bad = uses_system_headers(-1);

    for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (reserved[i] <= 0 || reserved[i] >= SCIF_PORT_RSVD)
            bad = 1;
    if (old_t.port != 60 || pe.events != (POLLIN | POLLOUT))
        bad = 1;
    printf("%s: %zu reserved ports, old names and poll bits\n", bad ? "FAIL" : "ok",
           sizeof(reserved) / sizeof(reserved[0]));
    return bad;
}
