# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Selftests of the dapl area, included by selftests/Makefile.am (see the
# conventions there).  Maintainers: MAINTAINERS.
#
#   dapl/provider_test   provider behaviour through the DAT registry (C,
#                        dat2/udat.h, linked with -ldat: the linker script
#                        lib/dapl/libdat.so of this build)
#   dapl/rdma_test       small consumer: RDMA write and read over SCIF (-ldat)
#   dapl/interop_test    Debian's dapl2-utils: dtest, dtestcm, dtestsrq,
#                        dapltest -T T -V and -T P, loopback and node 0 -> 1
#   dapl/dapltest_race_test
#                        the LD_PRELOAD shim every dapltest of the tests
#                        runs with (dapl/dapltest_fix.c: dapltest's own
#                        teardown race) closes that race; valgrind shows it
#                        without the shim
#
# The programs run from the top build directory; they find the provider
# through DAT_OVERRIDE=lib/dapl/dat.conf.build, which dapl/dapl_env sets
# (the C programs re-exec themselves through it when DAT_OVERRIDE is unset).

if BUILD_DAPL
DAPL_SELFTEST_LDADD = -L$(top_builddir)/lib/dapl -ldat -lpthread
noinst_PROGRAMS += dapl/provider_test dapl/rdma_test
VM_SELFTESTS += dapl/provider_test dapl/rdma_test dapl/interop_test
dapl_provider_test_SOURCES = dapl/provider_test.c dapl/dapl_env.h
dapl_provider_test_LDADD = $(DAPL_SELFTEST_LDADD) $(top_builddir)/lib/libscif.la
EXTRA_dapl_provider_test_DEPENDENCIES = $(top_builddir)/lib/dapl/libdat.so
dapl_rdma_test_SOURCES = dapl/rdma_test.c dapl/dapl_env.h
dapl_rdma_test_LDADD = lib/libscif_selftest.la $(DAPL_SELFTEST_LDADD)
EXTRA_dapl_rdma_test_DEPENDENCIES = $(top_builddir)/lib/dapl/libdat.so
# -rpath: a shared object (.libs/dapltest_fix.so) for LD_PRELOAD, not an
# archive; never installed.
noinst_LTLIBRARIES += dapl/dapltest_fix.la
dapl_dapltest_fix_la_SOURCES = dapl/dapltest_fix.c
dapl_dapltest_fix_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
dapl_dapltest_fix_la_LIBADD = -ldl
VM_SELFTESTS += dapl/dapltest_race_test
endif
dist_noinst_SCRIPTS += dapl/interop_test dapl/dapltest_race_test
