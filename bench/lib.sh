# shellcheck shell=sh disable=SC2034,SC2154
# Shared set-up of the bench scripts, as tests/cli/lib.sh is the tests'.
# Each script sets its name and sources this first:
#     bench=NAME; . "$(dirname "$0")/lib.sh"
# with the build directory as its first argument (`make bench` passes it).
# Sets b (the build directory, absolute: the binary is "$b/cprof"), src (the
# source tree), d (a scratch directory, removed at exit; kept and named when
# BENCH_KEEP is set) and TIME (GNU time, for CPU seconds and peak RSS).
set -eu
b=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
TIME=/usr/bin/time
# no configuration file: a host's /etc/cprof/cprof.yaml must not change the figures
CPROF_CONFIG=
export CPROF_CONFIG
d=$(mktemp -d "${TMPDIR:-/tmp}/cprof-bench-$bench.XXXXXX")
_bench_vars=
# on_exit: a command run at exit, before the scratch directory goes (e.g. to restore a sysctl)
on_exit=:
_bench_cleanup() {
	set +e
	_pids=
	for _v in $_bench_vars; do eval "_pids=\"\$_pids \${$_v:-}\""; done
	for _p in $_pids; do kill "$_p" 2> /dev/null; done
	for _p in $_pids; do wait "$_p" 2> /dev/null; done
	eval "$on_exit"
	if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $d"; else rm -rf "$d"; fi
}
trap _bench_cleanup EXIT
trap 'exit 1' INT TERM HUP

# stop_at_exit VAR...: at exit, the background processes whose pids these variables then hold
# (a list, or empty once the script has stopped them itself) are stopped (SIGTERM) and reaped
stop_at_exit() { _bench_vars="$_bench_vars $*"; }
# rec_start ERRFILE COMMAND...: cprof record (COMMAND, which may start with taskset) in the
# background, its pid in rec, once it samples (its "sampling ..." line); exits 1 with its last
# messages if it does not start within 30 s
rec_start() {
	_err=$1
	shift
	: > "$_err" # before the job: its own redirection may come after the first grep below
	"$@" 2> "$_err" &
	rec=$!
	_i=0
	until grep -q 'cprof record: sampling ' "$_err"; do
		_i=$((_i + 1))
		[ $_i -lt 600 ] && kill -0 "$rec" 2> /dev/null || {
			echo "cprof record did not start:"; grep -v '^libbpf:' "$_err" | tail -5; exit 1; }
		sleep 0.05
	done
}
# rec_cost NAME 'RECORD-ARGS' CMD...: runs the workload CMD (its output thrown away; the caller
# lists rec and wl in stop_at_exit), joins it after 1 s with cprof record -p PID -F 99 RECORD-ARGS
# (its messages in $d/NAME.err) until it exits, and prints a line; sets us (CPU per sample once
# joined, in microseconds: cprof's threads from schedstat plus its BPF programs' run time, which
# needs kernel.bpf_stats_enabled and bpftool and jq), us_all (the same over the whole run, the
# joining included), join_ms (the CPU of the first JOIN_S = 2 s: reading the process's binaries,
# symbols, unwinding tables and runtime, once), n (samples) and wl_pid (the workload's pid).
# The samples after the first JOIN_S seconds are counted in proportion to the workload's CPU time
# then (all its threads: sampled by their CPU time).
JOIN_S=2
rec_cost() {
	_name=$1 _args=$2
	shift 2
	"$@" > /dev/null &
	wl=$!
	sleep 1
	# shellcheck disable=SC2086
	rec_start "$d/$_name.err" "$b/cprof" record -p "$wl" -F 99 $_args --log-level info
	_c0=$(_cpu_s "$rec") _b0=$(_bpf_s) _w0=$(_cpu_s "$wl")
	sleep "$JOIN_S"
	_cj=$(_cpu_s "$rec") _bj=$(_bpf_s) _wj=$(_cpu_s "$wl")
	_c1=$_cj _b1=$_bj _w1=$_wj
	# the CPU up to just before it exits (its summary is written after the last flush)
	while kill -0 "$rec" 2> /dev/null && ! grep -q 'samples in' "$d/$_name.err"; do
		_c1=$(_cpu_s "$rec" 2> /dev/null || echo "$_c1") _b1=$(_bpf_s)
		# (the workload's, until it has exited: a zombie has no tasks left to read)
		_w=$(_cpu_s "$wl" 2> /dev/null || echo 0)
		_w1=$(awk -v a="$_w" -v b="$_w1" 'BEGIN { print (a > b ? a : b) }')
		sleep 0.2
	done
	wait "$rec" || { echo "cprof record failed"; tail -3 "$d/$_name.err"; exit 1; }
	rec=
	wait "$wl" || :
	wl_pid=$wl
	wl=
	n=$(sed -n 's/.* \([0-9][0-9]*\) samples in .*/\1/p' "$d/$_name.err" | tail -1)
	_cpu=$(awk -v a="$_c0" -v b="$_c1" -v x="$_b0" -v y="$_b1" 'BEGIN { printf "%.4f", (b - a) + (y - x) }')
	us_all=$(awk -v c="$_cpu" -v n="${n:-0}" 'BEGIN { printf "%.1f", (n > 0 ? 1e6 * c / n : 0) }')
	join_ms=$(awk -v a="$_c0" -v b="$_cj" -v x="$_b0" -v y="$_bj" 'BEGIN { printf "%.1f", 1e3 * ((b - a) + (y - x)) }')
	us=$(awk -v a="$_cj" -v b="$_c1" -v x="$_bj" -v y="$_b1" -v n="${n:-0}" -v w0="$_w0" -v wj="$_wj" -v w1="$_w1" \
		'BEGIN { k = (w1 > w0 ? n * (w1 - wj) / (w1 - w0) : 0); printf "%.1f", (k > 0 ? 1e6 * ((b - a) + (y - x)) / k : 0) }')
	printf '  %-14s %8s samples  %8s s CPU (user + sys + BPF)  %6s us/sample joined (%s over the run, %s ms the first %s s)\n' \
		"$_name" "${n:-0}" "$_cpu" "$us" "$us_all" "$join_ms" "$JOIN_S"
}
_cpu_s() { cat /proc/"$1"/task/*/schedstat | awk '{ ns += $1 } END { printf "%.6f", ns / 1e9 }'; }
_bpf_s() {
	"${BPFTOOL:-bpftool}" prog show -j |
		jq '[.[] | select((.name // "") | startswith("cp_")) | .run_time_ns // 0] | add // 0 | . / 1e9'
}
# bpf_stats_on: turns kernel.bpf_stats_enabled on (BPF programs' run time counted), restored at exit
# (its value before in _old_stats)
bpf_stats_on() {
	_old_stats=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	on_exit='sysctl -qw kernel.bpf_stats_enabled=$_old_stats'
}
# need_root WHY: skip (exit 0) unless root
need_root() {
	[ "$(id -u)" = 0 ] || { echo "$bench: needs root ($1): skipped"; exit 0; }
}
# need_tools TOOL...: skip (exit 0) when one is missing
need_tools() {
	for _t; do
		command -v "$_t" > /dev/null 2>&1 || { echo "$bench: $_t not found: skipped"; exit 0; }
	done
}
# verdict OP VALUE LIMIT (OP one of < <= >= >): PASS or NOT MET
verdict() {
	awk -v v="$2" -v l="$3" -v op="$1" 'BEGIN {
		ok = op == "<" ? v < l : op == "<=" ? v <= l : op == ">" ? v > l : v >= l
		print ok ? "PASS" : "NOT MET" }'
}
# serve_start ARGS...: `cprof serve --listen 127.0.0.1:0 ARGS` in the background, its output in
# $d/serve.out and $d/serve.err; waits (10 s at most) for its "listening on URL" line; sets spid,
# url and port, or exits 1 saying why it did not start
serve_start() {
	"$b/cprof" serve --listen 127.0.0.1:0 "$@" > "$d/serve.out" 2> "$d/serve.err" &
	spid=$!
	stop_at_exit spid
	_i=0
	while ! grep -q '^listening on ' "$d/serve.out" 2> /dev/null; do
		_i=$((_i + 1))
		[ $_i -lt 100 ] && kill -0 "$spid" 2> /dev/null || {
			echo "$bench: cprof serve did not start:" >&2; cat "$d/serve.err" >&2; exit 1; }
		sleep 0.1
	done
	url=$(awk '/^listening on / { print $3; exit }' "$d/serve.out")
	port=${url##*:}
}
# peak_rss_mb PID: the process's peak resident set (VmHWM) in MiB
peak_rss_mb() { awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# ---- a storm of short-lived processes (storm.sh, recorder_cost.sh) ----
# storm_prepare: the small C file the storm compiles ($d/small.c), and ncpu
storm_prepare() {
	ncpu=$(getconf _NPROCESSORS_ONLN)
	cat > "$d/small.c" << 'EOF'
#include <stdio.h>
#include <string.h>
struct item { const char *name; int weight; };
static int cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	return x->weight != y->weight ? x->weight - y->weight : strcmp(x->name, y->name);
}
int sum(const struct item *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += v[i].weight * (int)strlen(v[i].name);
	return s;
}
int (*cmp_fn(void))(const void *, const void *) { return cmp; }
EOF
}
# run_storm SECONDS: one loop per CPU of short-lived programs, in the background; with
# STORM_INTERPRETERS=1 each round also runs a short node and python3 program (as busy hosts start them).
# The python3 is Debian's (STORM_PYTHON, default /usr/bin/python3), as on the hosts the benchmark
# stands for: one found first on PATH may be a shim (pyenv's runs bash and pyenv for each start) and
# a self-built interpreter with its DWARF, a different storm.
run_storm() {
	_py=${STORM_PYTHON:-/usr/bin/python3}
	storm=
	end=$(($(date +%s) + $1))
	for i in $(seq "$ncpu"); do
		(
			while [ "$(date +%s)" -lt "$end" ]; do
				sh -c 'ls /usr/bin | sort | head -n 3' > /dev/null
				gcc -O2 -c "$d/small.c" -o "$d/small$i.o"
				sh -c 'echo storm of small programs | tr a-z A-Z | wc -c' > /dev/null
				sed -n '$p' /etc/services > /dev/null
				if [ -n "${STORM_INTERPRETERS:-}" ]; then
					node -e 'let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; console.log(s)' > /dev/null
					"$_py" -c 'print(sum(i % 7 for i in range(300000)))' > /dev/null
				fi
			done
		) &
		storm="$storm $!"
	done
}
wait_storm() {
	for p in $storm; do wait "$p" || :; done
	storm=
}
# ---- what a store holds (docs/STORE.md: store.db, and a file per day) ----
# store_contents DIR: "DICT BLOCKS SERIES": the bytes of the days' dictionaries (their chunks'
# blobs and series rows), of their sample blocks and summaries (blobs), and the series over all
# days (a series present on several days counts once a day); needs sqlite3 (0 0 0 without it)
store_contents() {
	command -v sqlite3 > /dev/null 2>&1 || { echo "0 0 0"; return; }
	for _f in "$1"/days/*.db; do
		[ -f "$_f" ] || continue
		sqlite3 -readonly "$_f" "SELECT (SELECT coalesce(sum(length(data)), 0) FROM chunks) +
				(SELECT coalesce(sum(length(type) + length(labels)), 0) FROM series),
			(SELECT coalesce(sum(length(data) + length(series) + coalesce(length(ends), 0)), 0) FROM blocks) +
				(SELECT coalesce(sum(length(data) + length(series) + coalesce(length(ends), 0)), 0) FROM rollups),
			(SELECT count(*) FROM series)" 2> /dev/null | tr '|' ' '
	done | awk '{ a += $1; b += $2; c += $3 } END { printf "%d %d %d\n", a, b, c }'
}
