# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Selftests of the rma area, included by selftests/Makefile.am (see the
# conventions there).  Owned by the rma engineer.
