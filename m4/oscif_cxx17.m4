# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# OSCIF_CXX17: make sure the C++ compiler accepts C++17 with -std=c++17
# (the one place that decides the C++ standard flag).  Sets and substitutes
# OSCIF_CXX17_FLAG, which every C++ compile of lib/ and lib/dapl/ uses.
AC_DEFUN([OSCIF_CXX17], [
	AC_REQUIRE([AC_PROG_CXX])
	AC_LANG_PUSH([C++])
	oscif_save_CXXFLAGS=$CXXFLAGS
	OSCIF_CXX17_FLAG=-std=c++17
	CXXFLAGS="$CXXFLAGS $OSCIF_CXX17_FLAG"
	AC_CACHE_CHECK([whether $CXX supports C++17 with $OSCIF_CXX17_FLAG],
		[oscif_cv_cxx17],
		[AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <optional>
#include <string_view>
#include <mutex>
#if __cplusplus < 201703L
#error not C++17
#endif
template <typename T> constexpr bool is_int() {
	if constexpr (sizeof(T) == sizeof(int)) return true; else return false;
}
]], [[
	std::optional<int> o = 3;
	std::string_view sv("x");
	std::mutex m;
	std::scoped_lock lock(m);
	auto [a, b] = std::pair<int, int>(1, 2);
	return (o.value_or(0) + a + b + static_cast<int>(sv.size()) + is_int<int>()) == 0;
]])], [oscif_cv_cxx17=yes], [oscif_cv_cxx17=no])])
	CXXFLAGS=$oscif_save_CXXFLAGS
	AC_LANG_POP([C++])
	AS_IF([test "x$oscif_cv_cxx17" != xyes],
		[AC_MSG_ERROR([a C++17 compiler is needed ($CXX $OSCIF_CXX17_FLAG failed); install the Debian package g++ (build-essential)])])
	AC_SUBST([OSCIF_CXX17_FLAG])
])
