#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Checks the exported ABI of the built libscif.so: its soname, and that the
# dynamic symbols it defines are exactly the functions of the version script,
# each at version SCIF_0.0 (nothing else leaks out of the library).
#
# Environment: LIBSCIF_SO (the built library), LIBSCIF_MAP (the version
# script).  Exit status 0 = pass, 1 = fail, 77 = skip (tools missing).
set -u

so=${LIBSCIF_SO:?LIBSCIF_SO not set}
map=${LIBSCIF_MAP:?LIBSCIF_MAP not set}

for tool in nm readelf; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not found (install binutils)"
		exit 77
	fi
done
if [ ! -f "$so" ]; then
	echo "FAIL: $so not built"
	exit 1
fi

status=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" = "libscif.so.0" ]; then
	echo "ok: soname $soname"
else
	echo "FAIL: soname is '$soname', expected libscif.so.0"
	status=1
fi

# Names listed as "name;" in the global part of the version script.
sed -n '/global:/,/local:/p' "$map" | sed -n 's/^[[:space:]]*\(scif_[A-Za-z_]*\);.*/\1/p' |
	sort >"$tmp/want"
# Defined dynamic symbols, except the version node itself.
nm -D --defined-only "$so" | awk '$3 != "" { print $3 }' | grep -v '^SCIF_0\.0$' |
	sort >"$tmp/have"

if [ ! -s "$tmp/want" ]; then
	echo "FAIL: no symbols found in $map"
	status=1
fi
while read -r sym; do
	if ! grep -qx "$sym@@SCIF_0.0" "$tmp/have"; then
		echo "FAIL: $sym is not exported as $sym@@SCIF_0.0"
		status=1
	fi
done <"$tmp/want"
sed 's/@@SCIF_0\.0$//' "$tmp/have" | while read -r sym; do
	if ! grep -qx "$sym" "$tmp/want"; then
		echo "FAIL: $sym is exported but not part of the API"
		exit 1
	fi
done || status=1

[ $status -eq 0 ] && echo "ok: $(wc -l <"$tmp/want") symbols, all at SCIF_0.0, nothing else"
exit $status
