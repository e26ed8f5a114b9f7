#!/bin/sh
# Benchmark (#48): the store where processes come and go.  `cprof record --all -F 19` into a store
# for BENCH_CHURN_SECONDS (600) while this machine builds and tests a real project: this one, a
# fresh clone, autoreconf, configure, `make -j2 check` over and over (BENCH_CHURN_WORK overrides the command, run
# in the clone).  Printed: samples, series, programs, the store's bytes (store.db, the days' files)
# and bytes per sample, the days' dictionary chunks and series rows, against cprof 2131acc's figures
# (schema 2, a series per process: #48); target: <= 4 bytes a sample for the whole store,
# dictionary included.  Then retention over simulated days (bench/store_shift): the recording
# appended again day after day, each a day later, with --retention 1d: the store's size after each
# day; target: it stops growing after the first day (day 3 within 10% of day 2).
# usage: bench/churn_store.sh BUILDDIR   (root: record needs it)
bench=churn_store; . "$(dirname "$0")/lib.sh"
need_root "cprof record"
need_tools git autoreconf
SECS=${BENCH_CHURN_SECONDS:-600}
DAYS=${BENCH_CHURN_DAYS:-4}
# (the suite again and again until the time is up: it takes less than the 10 minutes here)
work=${BENCH_CHURN_WORK:-autoreconf -fi >/dev/null 2>&1 && ./configure -q >/dev/null && while :; do make -s -j2 check; done}
rec= wpid=
stop_at_exit rec
on_exit='[ -z "$wpid" ] || kill -- -"$wpid" 2> /dev/null'

if [ -d "$src/.git" ]; then git clone -q "$src" "$d/clone"; else cp -R "$src" "$d/clone"; fi
rec_start "$d/rec.err" "$b/cprof" record --all -F 19 --data "$d/store"
t0=$(date +%s)
# the workload in a process group of its own, stopped as a whole at the end
setsid sh -c "cd '$d/clone' && $work" > "$d/work.out" 2>&1 &
wpid=$!
sleep "$SECS"
ran=$(($(date +%s) - t0))
kill -INT "$rec"
wait "$rec" || { echo "cprof record failed: $(tail -3 "$d/rec.err")"; exit 1; }
rec=
kill -- -"$wpid" 2> /dev/null || true
wait "$wpid" 2> /dev/null || true
wpid=

samples=$(sed -n 's/.*: \([0-9]*\) samples in .*/\1/p' "$d/rec.err" | tail -n 1)
q() { "$b/cprof" query --data "$d/store" --since 1d "$@" 2> /dev/null; }
series=$(q --series | wc -l)
programs=$(q --values comm | wc -l)
bytes() { find "$@" -type f -printf '%s\n' 2> /dev/null | awk '{ s += $1 } END { print s + 0 }'; }
top=$(bytes "$d/store"/store.db*)
days=$(bytes "$d/store/days")
all=$(bytes "$d/store")
echo "churn: cprof record --all -F 19 for ${ran}s while the machine ran: $work"
echo "  samples $samples, series $series, programs (comm) $programs"
echo "    (cprof 2131acc, a series per process, 10 minutes of this suite: 11462 samples, 2403 series, 145 programs)"
echo "  store: $all bytes: store.db $top, days $days"
if command -v sqlite3 > /dev/null; then
	for f in "$d/store"/days/*.db; do
		printf '  %s: ' "${f##*/}"
		sqlite3 "$f" "SELECT (SELECT count(*) FROM series) || ' series, ' || (SELECT count(*) FROM blocks) || ' blocks (' ||
			(SELECT coalesce(sum(length(data) + length(series) + coalesce(length(ends), 0)), 0) FROM blocks) || ' bytes), ' ||
			(SELECT count(*) FROM chunks) || ' dictionary chunks (' || (SELECT coalesce(sum(length(data)), 0) FROM chunks) || ' bytes)'" 2> /dev/null ||
			echo '-'
	done
fi
bps=$(awk -v a="$all" -v s="$samples" 'BEGIN { printf "%.2f", s ? a / s : 0 }')
echo "  bytes per sample: $bps (target <= 4; cprof 2131acc: 116): $(verdict '<=' "$bps" 4)"

# retention over simulated days: the recording again each day, --retention 1d
if [ -x "$b/bench/store_shift" ]; then
	"$b/bench/store_shift" "$d/store" "$d/days" --days "$DAYS" --retention 1d > "$d/days.out" ||
		{ echo "store_shift failed: $(tail -3 "$d/days.out")"; exit 1; }
	cat "$d/days.out"
	d2=$(awk '$1 == "day" && $2 == 2 { print $4 }' "$d/days.out")
	dl=$(awk '$1 == "day" { v = $4 } END { print v }' "$d/days.out")
	grow=$(awk -v a="$d2" -v b="$dl" 'BEGIN { printf "%.1f", a ? 100 * (b - a) / a : 0 }')
	echo "  growth from day 2 to day $DAYS with --retention 1d: $grow% (target <= 10%): $(verdict '<=' "$grow" 10)"
else
	echo "  (bench/store_shift not built: make bench builds it)"
fi
