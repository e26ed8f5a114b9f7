#!/bin/sh
# The whole test suite: the normal build (warnings are errors), then a clang
# build with AddressSanitizer + UndefinedBehaviorSanitizer that also runs the
# libFuzzer targets, then make distcheck. Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
status=0
summary() { # sums the automake test logs of a build dir
	awk '/^# (PASS|XFAIL|SKIP):/ {p += $3} /^# (FAIL|XPASS|ERROR):/ {f += $3} END {print p + 0, f + 0}' "$1/test-suite.log" 2>/dev/null || echo "0 1"
}
step() { echo "== $*"; }

step "build/: make check"
(cd build && make -s -j"$(nproc)" check) || status=1
set -- $(summary build); pass=$1; failed=$2

step "build-asan/: make check with ASan + UBSan (clang, libFuzzer)"
mkdir -p build-asan
(cd build-asan && { [ -f Makefile ] || "$top/configure" -q --enable-werror --enable-sanitizers --sysconfdir=/etc CC=clang; } &&
	ASAN_OPTIONS=detect_leaks=1 make -s -j"$(nproc)" check) || status=1
set -- $(summary build-asan); pass=$((pass + $1)); failed=$((failed + $2))

step "build/: make distcheck"
(cd build && make -s distcheck >distcheck.log 2>&1 && tail -n 4 distcheck.log) ||
	{
		tail -n 40 build/distcheck.log
		# the failing tests' own logs, so that a CI transcript says what broke
		grep -h '^\(FAIL\|ERROR\|XPASS\):' build/distcheck.log
		for l in build/cprof-*/_build/sub/test-suite.log; do
			[ -f "$l" ] && grep -v '^\(PASS\|ok\) ' "$l" | tail -n 80
		done
		status=1; failed=$((failed + 1))
	}

for d in build build-asan; do
	grep -h '^\(FAIL\|ERROR\|XPASS\):' "$d/test-suite.log" 2>/dev/null
done
echo "cprof: $pass passed, $failed failed"
[ "$failed" = 0 ] || status=1
exit $status
