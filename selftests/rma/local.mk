# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Selftests of the rma area, included by selftests/Makefile.am (see the
# conventions there).  Maintainers: MAINTAINERS.

RMA_PROGS = \
	rma/data_test \
	rma/dma_test \
	rma/dmabatch_test \
	rma/errno_test \
	rma/failnth_test \
	rma/fence_test \
	rma/filemap_test \
	rma/fork_test \
	rma/limits_test \
	rma/mmap_test \
	rma/peer_rma_test \
	rma/signal_test \
	rma/soak_test \
	rma/teardown_test \
	rma/thp_test
noinst_PROGRAMS += $(RMA_PROGS)
VM_SELFTESTS += $(RMA_PROGS)

rma_thp_test_SOURCES = rma/thp_test.c
rma_thp_test_LDADD = $(SELFTEST_LDADD)
rma_data_test_SOURCES = rma/data_test.c
rma_data_test_LDADD = $(SELFTEST_LDADD)
rma_dma_test_SOURCES = rma/dma_test.c
rma_dma_test_LDADD = $(SELFTEST_LDADD)
rma_dmabatch_test_SOURCES = rma/dmabatch_test.c
rma_dmabatch_test_LDADD = $(SELFTEST_LDADD)
rma_errno_test_SOURCES = rma/errno_test.c
rma_errno_test_LDADD = $(SELFTEST_LDADD)
rma_failnth_test_SOURCES = rma/failnth_test.c
rma_failnth_test_LDADD = $(SELFTEST_LDADD)
rma_fence_test_SOURCES = rma/fence_test.c
rma_fence_test_LDADD = $(SELFTEST_LDADD)
rma_filemap_test_SOURCES = rma/filemap_test.c
rma_filemap_test_LDADD = $(SELFTEST_LDADD)
rma_fork_test_SOURCES = rma/fork_test.c
rma_fork_test_LDADD = $(SELFTEST_LDADD)
rma_limits_test_SOURCES = rma/limits_test.c
rma_limits_test_LDADD = $(SELFTEST_LDADD)
rma_mmap_test_SOURCES = rma/mmap_test.c
rma_mmap_test_LDADD = $(SELFTEST_LDADD)
# against emulated node 1 here, across hosts in tools/vm/rdma-rma.test
rma_peer_rma_test_SOURCES = rma/peer_rma_test.c
rma_peer_rma_test_LDADD = $(SELFTEST_LDADD)
rma_signal_test_SOURCES = rma/signal_test.c
rma_signal_test_LDADD = $(SELFTEST_LDADD)
rma_soak_test_SOURCES = rma/soak_test.c
rma_soak_test_LDADD = $(SELFTEST_LDADD)
rma_teardown_test_SOURCES = rma/teardown_test.c
rma_teardown_test_LDADD = $(SELFTEST_LDADD)
