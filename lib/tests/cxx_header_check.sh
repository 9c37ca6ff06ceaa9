#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# cxx_header_check.sh: include/scif.hpp compiles without a warning under
# -Wall -Wextra -Werror -pedantic as C++17, and as C++20 when the compiler
# has it (else SKIP of that half).  Automake test protocol: 0 pass, 1 fail,
# 77 skip.  Uses $CXX and $SCIF_INCLUDE (set by lib/Makefile.am).
set -u
cxx=${CXX:-c++}
inc=${SCIF_INCLUDE:?SCIF_INCLUDE not set}
src=$(dirname "$0")/cxx_header_use.cpp
obj=$(mktemp "${TMPDIR:-/tmp}/cxx_header.XXXXXX") || exit 1
trap 'rm -f "$obj"' EXIT
flags="-Wall -Wextra -Werror -pedantic -I$inc"
failed=0
# shellcheck disable=SC2086 # flags is a word list
if $cxx -std=c++17 $flags -c -o "$obj" "$src"; then
	echo "PASS: scif.hpp as C++17"
else
	echo "FAIL: scif.hpp as C++17"
	failed=1
fi
# shellcheck disable=SC2086
if ! echo 'int main() { return 0; }' | $cxx -std=c++20 -x c++ -c -o "$obj" - 2> /dev/null; then
	echo "SKIP: $cxx has no -std=c++20"
elif $cxx -std=c++20 $flags -c -o "$obj" "$src"; then
	echo "PASS: scif.hpp as C++20"
else
	echo "FAIL: scif.hpp as C++20"
	failed=1
fi
exit $failed
