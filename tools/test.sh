#!/bin/sh
# The whole test suite: the normal build (warnings are errors), then a clang
# build with AddressSanitizer + UndefinedBehaviorSanitizer that also runs the
# libFuzzer targets, then make distcheck. Lists every skipped test with its reason, and ends with
# "cprof: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
status=0
pass=0 failed=0 skipped=0
count() { # DIR [LOG]: adds the counts of an automake test suite log (default test-suite.log); a missing log is a failure
	set -- $(awk '/^# (PASS|XFAIL):/ {p += $3} /^# SKIP:/ {s += $3} /^# (FAIL|XPASS|ERROR):/ {f += $3}
		END {print p + 0, f + 0, s + 0}' "$1/${2:-test-suite.log}" 2>/dev/null || echo "0 1 0")
	pass=$((pass + $1)); failed=$((failed + $2)); skipped=$((skipped + $3))
}
step() { echo "== $*"; }

step "build/: make check"
(cd build && make -s -j"$(nproc)" check) || status=1
count build

# The tests about stored time again with the clock 400 days ahead (libfaketime; the monotonic clock is left
# alone so that BPF timestamps still convert to the faked wall clock): no test may depend on how old a
# committed fixture is.
TIME_TESTS="tests/cli/test-store.sh tests/cli/test-downsample.sh tests/cli/test-query.sh tests/cli/test-sql.sh tests/cli/test-serve.sh tests/cli/test-pyroscope.sh tests/cli/test-remote.sh tests/cli/test-top.sh"
step "build/: the tests about stored time with the clock moved 400 days ahead (faketime)"
(cd build && FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "+400d" \
	make -s -j"$(nproc)" check TESTS="$TIME_TESTS" TEST_SUITE_LOG=test-suite-faketime.log) || status=1
count build test-suite-faketime.log

# The tests that are sensitive to load again with every core kept busy (as on a loaded production host).
LOAD_TESTS="tests/cli/test-record.sh tests/cli/test-record-programs.sh tests/cli/test-record-storm.sh tests/cli/test-jit.sh tests/cli/test-top.sh tests/cli/test-ruby.sh"
step "build/: the load-sensitive tests with $(nproc) busy loops"
busy=
trap 'kill $busy 2>/dev/null' EXIT
for _ in $(seq "$(nproc)"); do
	sh -c 'while :; do :; done' &
	busy="$busy $!"
done
(cd build && make -s check TESTS="$LOAD_TESTS" TEST_SUITE_LOG=test-suite-loaded.log) || status=1
kill $busy 2>/dev/null
wait $busy 2>/dev/null
count build test-suite-loaded.log

step "build-asan/: make check with ASan + UBSan (clang, libFuzzer)"
mkdir -p build-asan
(cd build-asan && { [ -f Makefile ] || "$top/configure" -q --enable-werror --enable-sanitizers --sysconfdir=/etc CC=clang; } &&
	ASAN_OPTIONS=detect_leaks=1 make -s -j"$(nproc)" check) || status=1
count build-asan
# the stage promises libFuzzer: without it the fuzz targets only replay their corpora
if [ -f build-asan/Makefile ] && ! grep -q '^have_libfuzzer = yes' build-asan/Makefile; then
	echo "build-asan: clang cannot link with libFuzzer (see build-asan/config.log), the fuzz targets did not fuzz"
	failed=$((failed + 1)); status=1
fi

# A build without the BPF sampler (no libbpf, clang, bpftool or kernel BTF needed): the file-only commands
# work, record and live top say why they are absent.
step "build-nobpf/: configure --disable-bpf, make cprof, tests/cli/test-nobpf.sh"
mkdir -p build-nobpf
if (cd build-nobpf && { [ -f Makefile ] || "$top/configure" -q --enable-werror --disable-bpf --sysconfdir=/etc \
	VMLINUX_BTF=/nonexistent; } && make -s -j"$(nproc)" cprof >/dev/null); then
	(cd build-nobpf && srcdir="$top" top_builddir=. sh "$top/tests/cli/test-nobpf.sh" >test-nobpf.log 2>&1)
	grep '^not ok' build-nobpf/test-nobpf.log | sed 's|^|build-nobpf/test-nobpf.log: |'
	s=$(grep -c '^ok.*# SKIP' build-nobpf/test-nobpf.log); skipped=$((skipped + s))
	pass=$((pass + $(grep -c '^ok' build-nobpf/test-nobpf.log) - s)); n=$(grep -c '^not ok' build-nobpf/test-nobpf.log)
	grep -q '^1\.\.[1-9]' build-nobpf/test-nobpf.log || n=$((n + 1)) # it stopped before its plan
	failed=$((failed + n)); [ "$n" = 0 ] || status=1
else
	echo "build-nobpf: the build without BPF failed"; failed=$((failed + 1)); status=1
fi

# Debian 12's own kernel (6.1, not necessarily the one running): cprof record's BPF programs through its
# verifier, in each way that loads a program of its own (tools/kernel-check.sh boots it under QEMU)
step "tools/kernel-check.sh: the BPF programs on Debian 12's 6.1 kernel, in a virtual machine"
if sh tools/kernel-check.sh build >build/kernel-check.log 2>&1; then
	n=$(grep -c '^PASS' build/kernel-check.log)
	pass=$((pass + n))
	grep -E '^(kernel|PASS|kernel-check)' build/kernel-check.log
else
	tail -n 80 build/kernel-check.log
	failed=$((failed + 1)); status=1
fi

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

# every skipped test with its reason (a test that skips says what it needs), then every failure
for l in build/test-suite.log build/test-suite-faketime.log build/test-suite-loaded.log build-asan/test-suite.log; do
	grep -h '^SKIP:' "$l" 2>/dev/null | sed "s|^|$l: |"
done
grep -h '^ok.*# SKIP' build-nobpf/test-nobpf.log 2>/dev/null | sed 's|^|build-nobpf/test-nobpf.log: SKIP: |'
for l in build/test-suite.log build/test-suite-faketime.log build/test-suite-loaded.log build-asan/test-suite.log; do
	grep -h '^\(FAIL\|ERROR\|XPASS\):' "$l" 2>/dev/null | sed "s|^|$l: |"
done
# what each failed check said (its diagnostics, up to its next check), so that a CI transcript tells why
for l in build/test-suite.log build/test-suite-faketime.log build/test-suite-loaded.log build-asan/test-suite.log; do
	[ -f "$l" ] && awk -v lf="$l" '/^not ok / { show = 1; n = 0; print lf ": " $0; next }
		/^(ok|not ok|PASS|FAIL|ERROR|SKIP)/ { show = 0 } show && n++ < 12 { print lf ": " $0 }' "$l"
done
echo "cprof: $pass passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] || status=1
exit $status
