// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_api.cpp - the exported C ABI of libscif.
//
// Every function binds one operation of scif_internal.h to the real system
// calls and to the environment, behind call_c(): no C++ exception crosses
// the boundary, failures are -1 (or the call's *_FAILED value) with errno.
// Only these functions are exported (default visibility here, hidden
// elsewhere, and the version script lib/libscif.map assigns them SCIF_0.0,
// the version node of Intel's MPSS libscif.so.0).
//
// SCIF_NODE is read at every call that opens the device, so a process (or a
// child after fork()) may change it between calls; nothing is cached, so the
// library holds no shared mutable state and needs no locks.

// First, so that the API's declarations get default visibility.
#pragma GCC visibility push(default)
#include <scif.h>
#pragma GCC visibility pop

#include "scif_internal.h"

#include <cstdlib>

using scif::call_c;
using scif::system_device;
namespace ops = scif::ops;

namespace {
const char *node_env() {
    return std::getenv(scif::kNodeEnv);
}
} // namespace

extern "C" {

scif_epd_t scif_open(void) {
    return call_c(SCIF_OPEN_FAILED, [] { return ops::open_endpoint(system_device(), node_env()); });
}

int scif_close(scif_epd_t epd) {
    return call_c(-1, [&] { return ops::close_endpoint(system_device(), epd); });
}

int scif_bind(scif_epd_t epd, uint16_t pn) {
    return call_c(-1, [&] { return ops::bind(system_device(), epd, pn); });
}

int scif_listen(scif_epd_t epd, int backlog) {
    return call_c(-1, [&] { return ops::listen(system_device(), epd, backlog); });
}

int scif_connect(scif_epd_t epd, struct scif_portID *dst) {
    return call_c(-1, [&] { return ops::connect(system_device(), epd, dst); });
}

int scif_accept(scif_epd_t epd, struct scif_portID *peer, scif_epd_t *newepd, int flags) {
    return call_c(-1, [&] { return ops::accept(system_device(), epd, peer, newepd, flags); });
}

int scif_send(scif_epd_t epd, void *msg, int len, int flags) {
    return call_c(-1, [&] { return ops::send(system_device(), epd, msg, len, flags); });
}

int scif_recv(scif_epd_t epd, void *msg, int len, int flags) {
    return call_c(-1, [&] { return ops::recv(system_device(), epd, msg, len, flags); });
}

off_t scif_register(scif_epd_t epd, void *addr, size_t len, off_t offset, int prot_flags,
                    int map_flags) {
    return call_c(SCIF_REGISTER_FAILED, [&] {
        return ops::register_window(system_device(), epd, addr, len, offset, prot_flags, map_flags);
    });
}

int scif_unregister(scif_epd_t epd, off_t offset, size_t len) {
    return call_c(-1, [&] { return ops::unregister_window(system_device(), epd, offset, len); });
}

int scif_readfrom(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags) {
    return call_c(
        -1, [&] { return ops::readfrom(system_device(), epd, loffset, len, roffset, rma_flags); });
}

int scif_writeto(scif_epd_t epd, off_t loffset, size_t len, off_t roffset, int rma_flags) {
    return call_c(
        -1, [&] { return ops::writeto(system_device(), epd, loffset, len, roffset, rma_flags); });
}

int scif_vreadfrom(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags) {
    return call_c(
        -1, [&] { return ops::vreadfrom(system_device(), epd, addr, len, roffset, rma_flags); });
}

int scif_vwriteto(scif_epd_t epd, void *addr, size_t len, off_t roffset, int rma_flags) {
    return call_c(
        -1, [&] { return ops::vwriteto(system_device(), epd, addr, len, roffset, rma_flags); });
}

int scif_fence_mark(scif_epd_t epd, int flags, int *mark) {
    return call_c(-1, [&] { return ops::fence_mark(system_device(), epd, flags, mark); });
}

int scif_fence_wait(scif_epd_t epd, int mark) {
    return call_c(-1, [&] { return ops::fence_wait(system_device(), epd, mark); });
}

int scif_fence_signal(scif_epd_t epd, off_t loff, uint64_t lval, off_t roff, uint64_t rval,
                      int flags) {
    return call_c(
        -1, [&] { return ops::fence_signal(system_device(), epd, loff, lval, roff, rval, flags); });
}

void *scif_mmap(void *addr, size_t len, int prot_flags, int map_flags, scif_epd_t epd,
                off_t offset) {
    return call_c(SCIF_MMAP_FAILED, [&] {
        return ops::mmap(system_device(), addr, len, prot_flags, map_flags, epd, offset);
    });
}

int scif_munmap(void *addr, size_t len) {
    return call_c(-1, [&] { return ops::munmap(system_device(), addr, len); });
}

int scif_get_nodeIDs(uint16_t *nodes, int len, uint16_t *self) {
    return call_c(-1,
                  [&] { return ops::get_node_ids(system_device(), node_env(), nodes, len, self); });
}

int scif_get_fd(scif_epd_t epd) {
    return epd;
}

int scif_poll(struct scif_pollepd *epds, unsigned int nepds, long timeout) {
    return call_c(-1, [&] { return ops::poll(system_device(), epds, nepds, timeout); });
}

} // extern "C"
