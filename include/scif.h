/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * scif.h - the SCIF user API of openscif (libscif, link with -lscif).
 *
 * Source compatible with the classic SCIF API (Intel MPSS libscif and the
 * Linux 4.4-5.9 driver): every name, type and constant keeps its historical
 * spelling and value.  Every call returns -1 (or the matching *_FAILED value)
 * and sets errno on failure; see the scif_*(3) man pages.
 *
 * Self-contained on purpose: the flag and port values below equal the
 * SCIF_ABI_* values of scif_ioctl.h, which libscif checks when it is built.
 */
#ifndef SCIF_H
#define SCIF_H

/*
 * The system headers Intel's scif.h pulled in: programs written against it
 * use errno, close(), select() and poll() without including them.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An endpoint descriptor: a file descriptor of the SCIF device. */
typedef int scif_epd_t;

#define SCIF_OPEN_FAILED ((scif_epd_t)-1)
#define SCIF_REGISTER_FAILED ((off_t)-1)
#define SCIF_MMAP_FAILED ((void *)-1)

/* Ports below this need CAP_SYS_ADMIN to bind. */
#define SCIF_ADMIN_PORT_END 1024
/* Ports below this are never handed out by scif_bind(epd, 0). */
#define SCIF_PORT_RSVD 1088

/*
 * Well-known ports of the MPSS services (historical names; openscif itself
 * uses none of them).  Each service has ten: *_PORT_0 .. *_PORT_9.
 */
#define SCIF_COI_PORT_0 40 /* Coprocessor Offload Infrastructure */
#define SCIF_COI_PORT_1 41
#define SCIF_COI_PORT_2 42
#define SCIF_COI_PORT_3 43
#define SCIF_COI_PORT_4 44
#define SCIF_COI_PORT_5 45
#define SCIF_COI_PORT_6 46
#define SCIF_COI_PORT_7 47
#define SCIF_COI_PORT_8 48
#define SCIF_COI_PORT_9 49
#define SCIF_OFED_PORT_0 60 /* OFED (ibscif, ccl-proxy) */
#define SCIF_OFED_PORT_1 61
#define SCIF_OFED_PORT_2 62
#define SCIF_OFED_PORT_3 63
#define SCIF_OFED_PORT_4 64
#define SCIF_OFED_PORT_5 65
#define SCIF_OFED_PORT_6 66
#define SCIF_OFED_PORT_7 67
#define SCIF_OFED_PORT_8 68
#define SCIF_OFED_PORT_9 69
#define SCIF_NETDEV_PORT_0 80 /* virtual network device */
#define SCIF_NETDEV_PORT_1 81
#define SCIF_NETDEV_PORT_2 82
#define SCIF_NETDEV_PORT_3 83
#define SCIF_NETDEV_PORT_4 84
#define SCIF_NETDEV_PORT_5 85
#define SCIF_NETDEV_PORT_6 86
#define SCIF_NETDEV_PORT_7 87
#define SCIF_NETDEV_PORT_8 88
#define SCIF_NETDEV_PORT_9 89
#define SCIF_RAS_PORT_0 100 /* reliability, availability, serviceability */
#define SCIF_RAS_PORT_1 101
#define SCIF_RAS_PORT_2 102
#define SCIF_RAS_PORT_3 103
#define SCIF_RAS_PORT_4 104
#define SCIF_RAS_PORT_5 105
#define SCIF_RAS_PORT_6 106
#define SCIF_RAS_PORT_7 107
#define SCIF_RAS_PORT_8 108
#define SCIF_RAS_PORT_9 109
#define SCIF_PM_PORT_0 120 /* power management */
#define SCIF_PM_PORT_1 121
#define SCIF_PM_PORT_2 122
#define SCIF_PM_PORT_3 123
#define SCIF_PM_PORT_4 124
#define SCIF_PM_PORT_5 125
#define SCIF_PM_PORT_6 126
#define SCIF_PM_PORT_7 127
#define SCIF_PM_PORT_8 128
#define SCIF_PM_PORT_9 129
#define SCIF_BT_PORT_0 130 /* board tools */
#define SCIF_BT_PORT_1 131
#define SCIF_BT_PORT_2 132
#define SCIF_BT_PORT_3 133
#define SCIF_BT_PORT_4 134
#define SCIF_BT_PORT_5 135
#define SCIF_BT_PORT_6 136
#define SCIF_BT_PORT_7 137
#define SCIF_BT_PORT_8 138
#define SCIF_BT_PORT_9 139
/* The MPSS daemon (card boot and configuration). */
#define MPSSD_MONRECV 160
#define MIC_NOTIFY 161
#define MPSSD_CRED 162
#define MPSSD_MONSEND 163
#define MPSSD_MICCTRL 164
#define MPSSD_RESV5 165
#define MPSSD_RESV6 166
#define MPSSD_RESV7 167
#define MPSSD_RESV8 168
#define MPSSD_RESV9 169
/* Coprocessor state management (MPSS4 / Linux COSM driver). */
#define SCIF_COSM_LISTEN_PORT 201
/* Unprivileged services between SCIF_ADMIN_PORT_END and SCIF_PORT_RSVD. */
#define SCIF_MYO_PORT_0 1025 /* MYO shared memory */
#define SCIF_MYO_PORT_1 1026
#define SCIF_MYO_PORT_2 1027
#define SCIF_MYO_PORT_3 1028
#define SCIF_MYO_PORT_4 1029
#define SCIF_MYO_PORT_5 1030
#define SCIF_MYO_PORT_6 1031
#define SCIF_MYO_PORT_7 1032
#define SCIF_MYO_PORT_8 1033
#define SCIF_MYO_PORT_9 1034
#define SCIF_ST_PORT_0 1044 /* SSG tools */
#define SCIF_ST_PORT_1 1045
#define SCIF_ST_PORT_2 1046
#define SCIF_ST_PORT_3 1047
#define SCIF_ST_PORT_4 1048
#define SCIF_ST_PORT_5 1049
#define SCIF_ST_PORT_6 1050
#define SCIF_ST_PORT_7 1051
#define SCIF_ST_PORT_8 1052
#define SCIF_ST_PORT_9 1053

/* A SCIF address: node id (0 is the host) and port. */
struct scif_portID {
    uint16_t node;
    uint16_t port;
};

/* Old spellings of struct scif_portID (deprecated since MPSS 2). */
#define portID scif_portID
typedef struct scif_portID portID_t;

/* Same layout as struct pollfd; events are the poll(2) bits. */
struct scif_pollepd {
    scif_epd_t epd;
    short events;
    short revents;
};

#define SCIF_POLLIN POLLIN
#define SCIF_POLLOUT POLLOUT
#define SCIF_POLLERR POLLERR
#define SCIF_POLLHUP POLLHUP
#define SCIF_POLLNVAL POLLNVAL

enum { SCIF_ACCEPT_SYNC = 1, SCIF_SEND_BLOCK = 1, SCIF_RECV_BLOCK = 1 };
/* Un-prefixed spellings of early MPSS releases (deprecated). */
#define ACCEPT_SYNC SCIF_ACCEPT_SYNC
#define SEND_BLOCK SCIF_SEND_BLOCK
#define RECV_BLOCK SCIF_RECV_BLOCK

enum { SCIF_PROT_READ = (1 << 0), SCIF_PROT_WRITE = (1 << 1) };

enum {
    SCIF_MAP_FIXED = 0x10,
    SCIF_MAP_KERNEL = 0x20 /* kernel clients only; EINVAL from user space */
};

enum {
    SCIF_FENCE_INIT_SELF = (1 << 0),
    SCIF_FENCE_INIT_PEER = (1 << 1),
    SCIF_SIGNAL_LOCAL = (1 << 4),
    SCIF_SIGNAL_REMOTE = (1 << 5)
};

/*
 * Fence flags of Intel's RAS tools (kernel clients only): scif_fence_mark()
 * and scif_fence_signal() from user space reject them with EINVAL.
 */
enum { SCIF_FENCE_RAS_SELF = (1 << 2), SCIF_FENCE_RAS_PEER = (1 << 3) };

enum {
    SCIF_RMA_USECPU = (1 << 0),
    SCIF_RMA_USECACHE = (1 << 1),
    SCIF_RMA_SYNC = (1 << 2),
    SCIF_RMA_ORDERED = (1 << 3)
};

/* Endpoints and connections */
scif_epd_t scif_open(void);
int scif_close(scif_epd_t epd);
int scif_bind(scif_epd_t epd, uint16_t pn);
int scif_listen(scif_epd_t epd, int backlog);
int scif_connect(scif_epd_t epd, struct scif_portID *dst);
int scif_accept(scif_epd_t epd, struct scif_portID *peer, scif_epd_t *newepd, int flags);

/* Messaging */
int scif_send(scif_epd_t epd, void *msg, int len, int flags);
int scif_recv(scif_epd_t epd, void *msg, int len, int flags);

/* Registered windows */
off_t scif_register(scif_epd_t epd, void *addr, size_t len, off_t offset, int prot_flags,
                    int map_flags);
int scif_unregister(scif_epd_t epd, off_t offset, size_t len);

/* Remote memory access */
int scif_readfrom(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags);
int scif_writeto(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags);
int scif_vreadfrom(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags);
int scif_vwriteto(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags);

/* Fences */
int scif_fence_mark(scif_epd_t epd, int flags, int *mark);
int scif_fence_wait(scif_epd_t epd, int mark);
int scif_fence_signal(scif_epd_t epd, off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                      int flags);

/* Mapping a peer's window */
void *scif_mmap(void *addr, size_t len, int prot_flags, int map_flags, scif_epd_t epd,
                off_t offset);
int scif_munmap(void *addr, size_t len);

/* Nodes, descriptors, polling */
int scif_get_nodeIDs(uint16_t *nodes, int len, uint16_t *self);
int scif_get_fd(scif_epd_t epd);
int scif_poll(struct scif_pollepd *epds, unsigned int nepds, long timeout);

#ifdef __cplusplus
}
#endif

#endif /* SCIF_H */
