// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// header_compat.c compiled as C++17: scif.h must serve C++ programs too.
#include "header_compat.c"
