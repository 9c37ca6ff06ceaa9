# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers of the two-host tests (tools/vm/rdma-pair.test,
# tools/vm/rdma-msg.test, tools/vm/rdma-rma.test and
# tools/vm/rdma-hostile.test, run by the top-level make check), included
# by selftests/Makefile.am.  Not an area of run-suite: nothing here is
# named *_test.  (rdma-rma.test runs rma/peer_rma_test, rdma-msg.test
# core/peer_test: programs of the areas on the peer fixture.)

noinst_PROGRAMS += rdma/scif_nodes
rdma_scif_nodes_SOURCES = rdma/scif_nodes.c
rdma_scif_nodes_CPPFLAGS = -I$(top_srcdir)/include
rdma_scif_nodes_LDADD = lib/libscif_selftest.la $(top_builddir)/lib/libscif.la

# Node loss across hosts: server and client halves on the peer fixture
# (tools/vm/rdma-msg.test).
noinst_PROGRAMS += rdma/remote_msg
rdma_remote_msg_SOURCES = rdma/remote_msg.c
rdma_remote_msg_LDADD = $(SELFTEST_LDADD)

# A hostile rdma_cm client: crafted HELLOs at a scif_rdma listener
# (tools/vm/rdma-hostile.test); only with librdmacm-dev.
if HAVE_RDMACM
noinst_PROGRAMS += rdma/hostile_hello
rdma_hostile_hello_SOURCES = rdma/hostile_hello.c
rdma_hostile_hello_LDADD = -lrdmacm -libverbs
endif
