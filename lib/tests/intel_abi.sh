#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# intel_abi.sh: binaries linked against Intel's libscif.so.0 start with
# openscif's, and the reverse.  Intel's library exports the API under the
# symbol version SCIF_0.0; a binary records that node and the dynamic
# loader refuses to start it against a library without it ("version
# `SCIF_0.0' not found").
#
# Builds a stub libscif.so.0 whose version script is laid out like Intel's
# (every API function in node SCIF_0.0; each stub fails with ENOSYS), links
# a small program against the stub, checks it requires SCIF_0.0, and runs it
# with openscif's library; then links the program against openscif's library
# and runs it with the stub.  No kernel module is needed: the program only
# calls scif_open(), which fails without /dev/scif in either library, with
# ENOSYS only in the stub.
#
# Environment: LIBSCIF_SO (openscif's built libscif.so.0), SCIF_INCLUDE (the
# directory of scif.h), CC.  Exit 0 pass, 1 fail, 77 skip.
set -u

so=${LIBSCIF_SO:?LIBSCIF_SO not set}
inc=${SCIF_INCLUDE:?SCIF_INCLUDE not set}
cc=${CC:-cc}
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not found (binutils)"; exit 77; }
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/stub" "$tmp/ours"
ln -s "$(cd "$(dirname "$so")" && pwd)/$(basename "$so")" "$tmp/ours/libscif.so.0"
ln -s libscif.so.0 "$tmp/ours/libscif.so"

# The stub: every function of the classic API, in version node SCIF_0.0.
funcs="scif_open scif_close scif_bind scif_listen scif_connect scif_accept scif_send
scif_recv scif_register scif_unregister scif_readfrom scif_writeto scif_vreadfrom
scif_vwriteto scif_fence_mark scif_fence_wait scif_fence_signal scif_mmap scif_munmap
scif_get_nodeIDs scif_get_fd scif_poll"
{
	echo 'SCIF_0.0 {'
	echo '	global:'
	for f in $funcs; do echo "		$f;"; done
	echo '	local:'
	echo '		*;'
	echo '};'
} > "$tmp/intel.map"
{
	echo '#include <errno.h>'
	for f in $funcs; do echo "long $f(void) { errno = ENOSYS; return -1; }"; done
} > "$tmp/stub.c"
"$cc" -shared -fPIC -Wl,-soname,libscif.so.0 -Wl,--version-script="$tmp/intel.map" \
	-o "$tmp/stub/libscif.so.0" "$tmp/stub.c" || { echo "FAIL: cannot build the stub"; exit 1; }
ln -s libscif.so.0 "$tmp/stub/libscif.so"

cat > "$tmp/prog.c" <<'EOC'
#include <scif.h>
#include <stdio.h>
#include <string.h>
/* Prints which library answered: the stub fails with ENOSYS. */
int main(void)
{
	scif_epd_t epd = scif_open();

	if (epd != SCIF_OPEN_FAILED) {
		scif_close(epd);
		puts("library: openscif (scif_open succeeded)");
		return 0;
	}
	printf("library: %s (%s)\n", errno == ENOSYS ? "stub" : "openscif", strerror(errno));
	return 0;
}
EOC
status=0
check() { # description, command output, wanted library
	case $2 in
	*"library: $3"*) echo "ok: $1: $2" ;;
	*) echo "FAIL: $1: $2"; status=1 ;;
	esac
}

# 1. linked against Intel's library layout, run with openscif's
"$cc" -I"$inc" -o "$tmp/prog_intel" "$tmp/prog.c" -L"$tmp/stub" -lscif ||
	{ echo "FAIL: cannot link against the stub"; exit 1; }
if readelf -V "$tmp/prog_intel" | grep -q 'Name: SCIF_0.0'; then
	echo "ok: a binary linked against the Intel-style library requires SCIF_0.0"
else
	echo "FAIL: the test binary does not require SCIF_0.0"; status=1
fi
out=$(LD_LIBRARY_PATH=$tmp/ours "$tmp/prog_intel" 2>&1)
check "Intel-linked binary with openscif's libscif.so.0" "$out" openscif

# 2. linked against openscif, run with Intel's library layout
"$cc" -I"$inc" -o "$tmp/prog_ours" "$tmp/prog.c" -L"$tmp/ours" -lscif ||
	{ echo "FAIL: cannot link against openscif's library"; exit 1; }
out=$(LD_LIBRARY_PATH=$tmp/stub "$tmp/prog_ours" 2>&1)
check "openscif-linked binary with an Intel-style libscif.so.0" "$out" stub

exit $status
