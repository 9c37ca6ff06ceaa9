/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * scif.h - the SCIF user API of openscif (libscif, link with -lscif).
 *
 * Source compatible with the classic SCIF API (Intel MPSS libscif and the
 * Linux 4.4-5.9 driver): every name, type and constant keeps its historical
 * spelling and value.  Every call returns -1 (or the matching *_FAILED value)
 * and sets errno on failure; see the scif_*(3) man pages.
 */
#ifndef SCIF_H
#define SCIF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <poll.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An endpoint descriptor: a file descriptor of the SCIF device. */
typedef int scif_epd_t;

#define SCIF_OPEN_FAILED	((scif_epd_t)-1)
#define SCIF_REGISTER_FAILED	((off_t)-1)
#define SCIF_MMAP_FAILED	((void *)-1)

/* Ports below this need CAP_SYS_ADMIN to bind. */
#define SCIF_ADMIN_PORT_END	1024
/* Ports below this are never handed out by scif_bind(epd, 0). */
#define SCIF_PORT_RSVD		1088

/* A SCIF address: node id (0 is the host) and port. */
struct scif_portID {
	uint16_t node;
	uint16_t port;
};

/* Same layout as struct pollfd. */
struct scif_pollepd {
	scif_epd_t epd;
	short events;
	short revents;
};

enum {
	SCIF_ACCEPT_SYNC = 1,
	SCIF_SEND_BLOCK = 1,
	SCIF_RECV_BLOCK = 1
};

enum {
	SCIF_PROT_READ = (1 << 0),
	SCIF_PROT_WRITE = (1 << 1)
};

enum {
	SCIF_MAP_FIXED = 0x10,
	SCIF_MAP_KERNEL = 0x20	/* kernel clients only; EINVAL from user space */
};

enum {
	SCIF_FENCE_INIT_SELF = (1 << 0),
	SCIF_FENCE_INIT_PEER = (1 << 1),
	SCIF_SIGNAL_LOCAL = (1 << 4),
	SCIF_SIGNAL_REMOTE = (1 << 5)
};

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
int scif_accept(scif_epd_t epd, struct scif_portID *peer, scif_epd_t *newepd,
		int flags);

/* Messaging */
int scif_send(scif_epd_t epd, void *msg, int len, int flags);
int scif_recv(scif_epd_t epd, void *msg, int len, int flags);

/* Registered windows */
off_t scif_register(scif_epd_t epd, void *addr, size_t len, off_t offset,
		    int prot_flags, int map_flags);
int scif_unregister(scif_epd_t epd, off_t offset, size_t len);

/* Remote memory access */
int scif_readfrom(scif_epd_t epd, off_t loffset, size_t len, off_t roffset,
		  int rma_flags);
int scif_writeto(scif_epd_t epd, off_t loffset, size_t len, off_t roffset,
		 int rma_flags);
int scif_vreadfrom(scif_epd_t epd, void *addr, size_t len, off_t roffset,
		   int rma_flags);
int scif_vwriteto(scif_epd_t epd, void *addr, size_t len, off_t roffset,
		  int rma_flags);

/* Fences */
int scif_fence_mark(scif_epd_t epd, int flags, int *mark);
int scif_fence_wait(scif_epd_t epd, int mark);
int scif_fence_signal(scif_epd_t epd, off_t loff, uint64_t lval, off_t roff,
		      uint64_t rval, int flags);

/* Mapping a peer's window */
void *scif_mmap(void *addr, size_t len, int prot_flags, int map_flags,
		scif_epd_t epd, off_t offset);
int scif_munmap(void *addr, size_t len);

/* Nodes, descriptors, polling */
int scif_get_nodeIDs(uint16_t *nodes, int len, uint16_t *self);
int scif_get_fd(scif_epd_t epd);
int scif_poll(struct scif_pollepd *epds, unsigned int nepds, long timeout);

#ifdef __cplusplus
}
#endif

#endif /* SCIF_H */
