#!/bin/sh
# Benchmark: what cprof top costs while it watches a busy machine (one
# bench/stack_workload per online CPU), against perf top on the same load.
#
# Each runs BENCH_SECONDS (20) at 99 Hz over the whole system, printing a
# table every second: cprof top --stdio (DWARF-unwound user stacks, kernel
# stacks, a 10 s window re-aggregated at each refresh) and perf top --stdio -g
# (frame-pointer call chains only: perf top's --call-graph dwarf aborts on
# this perf).  Figures: CPU (user + sys) as a share of one core, peak RSS.
# Targets: cprof top <= 3% of a core, and no more CPU than perf top although
# it unwinds with DWARF; peak RSS <= 64 MB (as cprof record's).
# Needs root.  Exits 0 unless something failed to run; PASS/FAIL lines give
# the verdict.
# usage: bench/top.sh BUILDDIR   (run by `make bench`)
bench=top; . "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECONDS:-20}
CC=${CC:-cc}
PERF=${PERF:-perf}
busy= feeder=
stop_at_exit busy feeder

need_root "eBPF, perf events"
ncpu=$(getconf _NPROCESSORS_ONLN)
$CC -O2 -fomit-frame-pointer -g -o "$d/stack_workload" "$src/bench/stack_workload.c" -lz
for _ in $(seq "$ncpu"); do
	"$d/stack_workload" 0 > /dev/null &
	busy="$busy $!"
done
echo "top: load $ncpu x stack_workload, $SECS s each, 99 Hz, whole system, a table a second"

# run NAME CMD...: CPU seconds and peak RSS (KB) into $d/NAME.time
run() {
	name=$1
	shift
	$TIME -f '%U %S %M' -o "$d/$name.time" timeout -s INT "$SECS" "$@" > "$d/$name.out" 2> "$d/$name.err" || :
}
run cprof "$b/cprof" top --stdio --all -F 99 -d 1 --limit 20
# perf top reads keys from standard input: give it a pipe that stays silent
mkfifo "$d/silent"
sleep $((SECS + 5)) > "$d/silent" &
feeder=$!
run perf "$PERF" top --stdio -a -F 99 -g < "$d/silent"

set -- $(tail -n 1 "$d/cprof.time")
c_cpu=$(awk -v u="$1" -v s="$2" -v t="$SECS" 'BEGIN { printf "%.2f", 100 * (u + s) / t }')
c_rss=$(($3 / 1024))
tables=$(grep -c '^cprof top - ' "$d/cprof.out" || :)
if ! set -- $(tail -n 1 "$d/perf.time" 2> /dev/null) || [ $# -lt 3 ]; then
	echo "top: perf top did not run: $(tail -n 3 "$d/perf.err")"
	exit 1
fi
p_cpu=$(awk -v u="$1" -v s="$2" -v t="$SECS" 'BEGIN { printf "%.2f", 100 * (u + s) / t }')
p_rss=$(($3 / 1024))
printf '%-32s %10s %10s\n' "" "CPU %core" "peak RSS"
printf '%-32s %10s %8s MB   (%s tables)\n' "cprof top --stdio -F 99" "$c_cpu" "$c_rss" "$tables"
printf '%-32s %10s %8s MB\n' "perf top --stdio -F 99 -g" "$p_cpu" "$p_rss"
verdict() { if awk "BEGIN { exit !($2) }"; then echo "PASS: $1"; else echo "FAIL: $1"; fi; }
verdict "cprof top CPU $c_cpu% <= 3% of a core" "$c_cpu <= 3"
verdict "cprof top CPU $c_cpu% <= perf top's $p_cpu%" "$c_cpu <= $p_cpu"
verdict "cprof top peak RSS $c_rss MB <= 64 MB" "$c_rss <= 64"
