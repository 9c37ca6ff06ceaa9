// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_scif_ops.cpp - the table of SCIF calls: libscif by default.
 */
#include "dapl_scif_ops.h"

#include <atomic>

namespace daplscif {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wc++20-extensions"
#pragma GCC diagnostic error "-Wmissing-field-initializers"
static const ScifOps libscif_ops = {
    .open = scif_open,
    .close = scif_close,
    .bind = scif_bind,
    .listen = scif_listen,
    .connect = scif_connect,
    .accept = scif_accept,
    .send = scif_send,
    .recv = scif_recv,
    .reg = scif_register,
    .unreg = scif_unregister,
    .vreadfrom = scif_vreadfrom,
    .vwriteto = scif_vwriteto,
    .readfrom = scif_readfrom,
    .writeto = scif_writeto,
    .get_nodeIDs = scif_get_nodeIDs,
    .get_fd = scif_get_fd,
};
#pragma GCC diagnostic pop

static std::atomic<const ScifOps *> g_ops{&libscif_ops};

const ScifOps &scif_ops() {
    return *g_ops.load(std::memory_order_acquire);
}

void set_scif_ops(const ScifOps *ops) {
    g_ops.store(ops ? ops : &libscif_ops, std::memory_order_release);
}

} /* namespace daplscif */
