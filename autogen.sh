#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Generate configure and the Makefile.in files (needs autoconf, automake,
# libtool and pkg-config: Debian packages autoconf automake libtool
# pkg-config).
set -e
cd "$(dirname "$0")"
for t in autoreconf libtoolize pkg-config; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "autogen.sh: $t not found; install the Debian packages autoconf automake libtool pkg-config" >&2
		exit 1
	fi
done
mkdir -p m4 build-aux
autoreconf --force --install --verbose "$@"
echo "Now run ./configure (or, out of tree: mkdir build && cd build && ../configure) and make."
