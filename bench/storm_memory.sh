#!/bin/sh
# Benchmark (#16, memory bounded by a budget, not by what ran): what `cprof record --all` into a
# store holds after a long storm of short-lived processes, and how fast that grows.
#
# cprof record --all -F BENCH_RATE (19) --data DIR --log-level debug runs while lib.sh's storm (sh
# pipelines, gcc -c, sed, a short node and python3 each round) runs for BENCH_SECONDS (600).
# Every 30 s: the recorder's resident set (VmRSS, and RssAnon: its heap, which the budget can only
# partly give back) and the store: its series (a program's once a day) and its files' size.  From the debug flush lines: the
# store handle's memory (cp_store_memory: the dictionary a writer keeps to find what is there, and
# the series ids it caches), which the budget's evictions do not give back: the writer forgets its
# dictionary past a sixteenth of --max-memory (lib/store/dict.h), and writes its working set again.
# The handle's peak over the run and how often it was forgotten (a flush line's handle under half
# the one before), and the growth of the series and of the store (the rows written again included)
# over the second half of the run (the first holds the start of every cache), extrapolated to the
# hour.  Compared with the reference: perf record -a keeps nothing per process in memory (it writes
# every record to perf.data, which grows instead); its file's growth is given for the same storm
# over 30 s.
#
# Target (#16): the recorder's memory is bounded by --max-memory whatever runs: PASS when the store
# handle's peak is within its share (a sixteenth of the budget, plus 1 MB for the series ids, 4,096
# at most), and the peak RSS is within the budget.
# Needs root, gcc, node and python3 (perf for the reference).  Exits 0 unless something failed to
# run; PASS and NOT MET lines give the verdicts.
# usage: bench/storm_memory.sh BUILDDIR   (run by `make bench`)
bench=storm_memory; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-600}
RATE=${BENCH_RATE:-19}
BUDGET_MB=64
PERF=${PERF:-perf}
rec= storm= prf=
stop_at_exit storm rec prf

need_root "cprof record --all"
need_tools gcc node "${STORM_PYTHON:-/usr/bin/python3}"
storm_prepare
STORM_INTERPRETERS=1

kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }
# handles: the store handle's memory in each flush line so far (KiB)
handles() { sed -n 's/.*store handle \([0-9]*\) KiB.*/\1/p' "$d/rec.err"; }
# handle_kib: in the last flush line (0 before the first)
handle_kib() { handles | tail -1 | awk '{ print $1 + 0 } END { if (!NR) print 0 }'; }
series() { store_contents "$d/store" | awk '{ print $3 }'; }
# index_bytes: the store's files (store.db, the days, their logs)
index_bytes() { find "$d/store" -type f -printf '%s\n' 2> /dev/null | awk '{ s += $1 } END { print s + 0 }'; }

echo "storm_memory: cprof record --all -F $RATE into a store, a storm of short-lived processes for $SECS s"
rec_start "$d/rec.err" "$b/cprof" record --all -F "$RATE" --data "$d/store" --log-level debug
run_storm "$SECS"
t=0 half=$((SECS / 2))
s0= i0=
printf '%6s %9s %9s %12s %8s %12s\n' "t (s)" "RSS MB" "anon MB" "handle MB" series "store MB"
while [ "$t" -lt "$SECS" ]; do
	sleep 30
	t=$((t + 30))
	h=$(handle_kib) s=$(series) i=$(index_bytes)
	awk -v t="$t" -v r="$(kb VmRSS $rec)" -v a="$(kb RssAnon $rec)" -v h="$h" -v s="$s" -v i="$i" \
		'BEGIN { printf "%6d %9.1f %9.1f %12.2f %8d %12.2f\n", t, r / 1024, a / 1024, h / 1024, s, i / 1048576 }'
	if [ -z "$s0" ] && [ "$t" -ge "$half" ]; then s0=$s i0=$i t0=$t; fi
done
wait_storm
peak=$(peak_rss_mb "$rec")
kill -INT "$rec"
wait "$rec" || { echo "storm_memory: cprof record failed:"; tail -5 "$d/rec.err"; exit 1; }
rec=
h1=$(handle_kib) s1=$(series) i1=$(index_bytes)
hpeak=$(handles | awk '$1 > m { m = $1 } END { printf "%.2f", m / 1024 }')
forgets=$(handles | awk 'NR > 1 && $1 < p / 2 { n++ } { p = $1 } END { print n + 0 }')
# the last flush (at the stop) is in h1: its time is the run's end
span=$((SECS - t0))
[ "$span" -gt 0 ] || { echo "storm_memory: BENCH_SECONDS=$SECS is too short"; exit 1; }
awk -v h="$h1" -v p="$hpeak" -v f="$forgets" -v m="$BUDGET_MB" -v s0="$s0" -v s1="$s1" -v i0="$i0" -v i1="$i1" -v sp="$span" 'BEGIN {
	printf "store handle: %.1f MB at the end, %.1f MB at most, forgotten %d times (past %.1f MB, a sixteenth of the budget)\n", h / 1024, p, f, m / 16
	printf "series: %.0f an hour; the store: %.1f MB an hour\n", (s1 - s0) * 3600 / sp, (i1 - i0) / 1048576 * 3600 / sp }'
echo "peak RSS $peak MB"

if command -v "$PERF" > /dev/null 2>&1; then
	# the reference: perf record -a keeps what it records on disk, not in memory
	run_storm 30
	"$TIME" -f %M -o "$d/perf.time" "$PERF" record -q -a -F "$RATE" --call-graph dwarf -o "$d/perf.data" -- sleep 30 \
		> /dev/null 2>&1 &
	prf=$!
	wait "$prf" || :
	prf=
	wait_storm
	echo "perf record -a -F $RATE --call-graph dwarf, 30 s of the same storm: peak RSS $(awk 'END { printf "%.0f", $1 / 1024 }' "$d/perf.time") MB, perf.data $(du -m "$d/perf.data" | cut -f1) MB (on disk, growing with every record)"
fi
share=$(awk -v m=$BUDGET_MB 'BEGIN { print m / 16 + 1 }')
echo "target: store handle <= a sixteenth of the budget + 1 MB ($share MB): $(verdict "<=" "$hpeak" "$share")"
echo "target: peak RSS <= $BUDGET_MB MB: $(verdict "<=" "$peak" "$BUDGET_MB")"
