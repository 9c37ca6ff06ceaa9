/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_scif_ops.h - the SCIF calls of the provider, through one table.
 *
 * Every SCIF call the provider makes goes through scif_ops(): by default
 * libscif itself; the unit tests install a fake (tests/fake_scif.*), as
 * libscif's own tests do with its Device, so connection state transitions,
 * partial reads and the accept/reject paths run without a kernel or a VM.
 * The members have libscif's signatures and errno contract.
 */
#ifndef DAPL_SCIF_OPS_H
#define DAPL_SCIF_OPS_H

#include <sys/types.h>

#include <scif.h>

namespace daplscif {

struct ScifOps {
    scif_epd_t (*open)(void);
    int (*close)(scif_epd_t epd);
    int (*bind)(scif_epd_t epd, uint16_t pn);
    int (*listen)(scif_epd_t epd, int backlog);
    int (*connect)(scif_epd_t epd, struct scif_portID *dst);
    int (*accept)(scif_epd_t epd, struct scif_portID *peer, scif_epd_t *newepd, int flags);
    int (*send)(scif_epd_t epd, void *msg, int len, int flags);
    int (*recv)(scif_epd_t epd, void *msg, int len, int flags);
    off_t (*reg)(scif_epd_t epd, void *addr, size_t len, off_t offset, int prot_flags,
                 int map_flags);
    int (*unreg)(scif_epd_t epd, off_t offset, size_t len);
    int (*vreadfrom)(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags);
    int (*vwriteto)(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags);
    int (*readfrom)(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags);
    int (*writeto)(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags);
    int (*get_nodeIDs)(uint16_t *nodes, int len, uint16_t *self);
    int (*get_fd)(scif_epd_t epd);
};

/* The table in use. */
const ScifOps &scif_ops();

/*
 * Replace the table (nullptr: libscif again).  For tests: only while no
 * IA is open, since endpoints made by one table must not reach another.
 */
void set_scif_ops(const ScifOps *ops);

} /* namespace daplscif */

#endif /* DAPL_SCIF_OPS_H */
