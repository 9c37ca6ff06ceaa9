/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Transitional shim: the helpers of the RMA selftests moved into the
 * selftest library (selftests/lib/scif_test.h, libscif_selftest.la).  This
 * header keeps programs written against the old names compiling: it
 * includes the library and maps REQ(cond) onto CHECK(cond).  New programs
 * include "scif_test.h" and use CHECK; delete this file once none uses it.
 */
#ifndef OPENSCIF_SELFTESTS_RMA_TEST_H
#define OPENSCIF_SELFTESTS_RMA_TEST_H

#include "scif_test.h"

/* Old name of CHECK(cond) (file:line, expression and errno are shown). */
#define REQ(cond) CHECK(cond)

#endif /* OPENSCIF_SELFTESTS_RMA_TEST_H */
