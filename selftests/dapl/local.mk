# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Selftests of the dapl area, included by selftests/Makefile.am (see the
# conventions there).  Owned by the dapl engineer.
