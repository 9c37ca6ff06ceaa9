# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# OSCIF_KERNEL: the Linux kernel build tree the module is built against.
#
#   --with-linux=DIR       a kernel build tree (has a Makefile), e.g.
#                          /usr/src/linux-headers-6.1.0-56-amd64
#   --with-linux=RELEASE   a release name: /lib/modules/RELEASE/build or
#                          /usr/src/linux-headers-RELEASE
#   (neither)              the newest /usr/src/linux-headers-*-amd64, then
#                          the newest /lib/modules/*/build with a Makefile
#   --disable-kernel-module  user space only
#   --with-moduledir=DIR   where `make install` puts scif.ko (default
#                          /lib/modules/RELEASE/updates)
#
# Substitutes LINUX_BUILD, LINUX_RELEASE, moduledir; conditional
# BUILD_KERNEL_MODULE.
AC_DEFUN([OSCIF_KERNEL], [
	AC_ARG_ENABLE([kernel-module],
		[AS_HELP_STRING([--disable-kernel-module],
			[build user space only, not kernel/scif.ko])],
		[], [enable_kernel_module=yes])
	AC_ARG_WITH([linux],
		[AS_HELP_STRING([--with-linux=DIR|RELEASE],
			[kernel build tree or installed kernel release to build the module against (default: the newest installed linux-headers-*)])],
		[], [with_linux=])
	AC_ARG_WITH([moduledir],
		[AS_HELP_STRING([--with-moduledir=DIR],
			[install scif.ko here (default: /lib/modules/RELEASE/updates)])],
		[], [with_moduledir=])

	LINUX_BUILD=
	LINUX_RELEASE=
	oscif_kernel_summary=no
	AS_IF([test "x$enable_kernel_module" != xno], [
		AS_IF([test "x$with_linux" = xno],
			[AC_MSG_ERROR([--without-linux: use --disable-kernel-module to build user space only])])
		AC_MSG_CHECKING([for the kernel build tree])
		oscif_kdir=
		AS_CASE([$with_linux],
		[""|yes], [
			for d in `ls -d /usr/src/linux-headers-*-amd64 /usr/src/linux-headers-*-[[0-9]]* 2>/dev/null | sort -V -r`; do
				if test -f "$d/Makefile" && { test -f "$d/include/generated/utsrelease.h" || test -f "$d/include/config/kernel.release"; }; then
					oscif_kdir=$d
					break
				fi
			done
			if test -z "$oscif_kdir"; then
				for d in `ls -d /lib/modules/*/build 2>/dev/null | sort -V -r`; do
					if test -f "$d/Makefile"; then
						oscif_kdir=$d
						break
					fi
				done
			fi],
		[/*], [oscif_kdir=$with_linux],
		[*/*], [oscif_kdir=`cd "$with_linux" 2>/dev/null && pwd`],
		[
			for d in "/lib/modules/$with_linux/build" "/usr/src/linux-headers-$with_linux"; do
				if test -f "$d/Makefile"; then
					oscif_kdir=$d
					break
				fi
			done
			AS_IF([test -z "$oscif_kdir"], [
				AC_MSG_RESULT([no])
				AC_MSG_ERROR([no kernel build tree for release $with_linux; install the Debian package linux-headers-$with_linux, or use --disable-kernel-module])])
		])
		AS_IF([test -z "$oscif_kdir"], [
			AC_MSG_RESULT([no])
			AC_MSG_ERROR([no kernel build tree found; install the Debian package linux-headers-amd64 (or linux-headers-6.12-amd64), give --with-linux=DIR|RELEASE, or use --disable-kernel-module])])
		AS_IF([test ! -f "$oscif_kdir/Makefile"], [
			AC_MSG_RESULT([no])
			AC_MSG_ERROR([$oscif_kdir is not a kernel build tree (no Makefile); install the matching linux-headers package])])
		LINUX_BUILD=`cd "$oscif_kdir" && pwd -P`
		AC_MSG_RESULT([$LINUX_BUILD])

		AC_MSG_CHECKING([for the kernel release of $LINUX_BUILD])
		# UTS_RELEASE is what the module's vermagic carries (Debian's
		# include/config/kernel.release may hold the upstream version).
		oscif_uts="$LINUX_BUILD/include/generated/utsrelease.h"
		AS_IF([test -f "$oscif_uts"],
			[LINUX_RELEASE=`sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$oscif_uts"`])
		AS_IF([test -z "$LINUX_RELEASE" && test -f "$LINUX_BUILD/include/config/kernel.release"],
			[LINUX_RELEASE=`cat "$LINUX_BUILD/include/config/kernel.release"`])
		AS_IF([test -z "$LINUX_RELEASE"],
			[LINUX_RELEASE=`${MAKE-make} -s -C "$LINUX_BUILD" kernelrelease 2>/dev/null`])
		AS_IF([test -z "$LINUX_RELEASE"], [
			AC_MSG_RESULT([unknown])
			AC_MSG_ERROR([cannot tell the release of $LINUX_BUILD (no include/config/kernel.release); is it a prepared kernel build tree?])])
		AC_MSG_RESULT([$LINUX_RELEASE])
		AS_IF([test ! -f "$LINUX_BUILD/Module.symvers"],
			[AC_MSG_WARN([$LINUX_BUILD has no Module.symvers; the module build will warn about unresolved symbols])])
		AS_IF([test ! -f "/boot/vmlinuz-$LINUX_RELEASE"],
			[AC_MSG_WARN([no /boot/vmlinuz-$LINUX_RELEASE: the VM selftests cannot boot this kernel (they skip); install the Debian package linux-image-$LINUX_RELEASE])])
		oscif_kernel_summary="yes, $LINUX_RELEASE ($LINUX_BUILD)"
	])
	AS_IF([test -n "$with_moduledir"],
		[moduledir=$with_moduledir],
		[moduledir="/lib/modules/$LINUX_RELEASE/updates"])
	AC_SUBST([LINUX_BUILD])
	AC_SUBST([LINUX_RELEASE])
	AC_SUBST([moduledir])
	AM_CONDITIONAL([BUILD_KERNEL_MODULE], [test "x$enable_kernel_module" != xno])
])
