// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fake_scif.h - SCIF in one process for the provider's unit tests.
 *
 * Endpoints are numbers from 1000 up; a connection is an AF_UNIX stream
 * socket pair, so poll, partial reads and a peer going away behave as on
 * a real connection; a listener is an eventfd that is readable while
 * connections wait in its backlog.  Every node is node 0.  Registration
 * and RMA fail with ENOSYS.  The tests use the same table to play the
 * peer by hand (FakeScif::ops()).
 */
#ifndef DAPL_TESTS_FAKE_SCIF_H
#define DAPL_TESTS_FAKE_SCIF_H

#include "dapl_scif_ops.h"

namespace fake_scif {

/* The table to pass to daplscif::set_scif_ops(). */
const daplscif::ScifOps &ops();

/* Endpoints still open (to catch leaks). */
int open_count();

} /* namespace fake_scif */

#endif /* DAPL_TESTS_FAKE_SCIF_H */
