#!/bin/sh
# Benchmark: cprof sql against cprof query on the same generated store
# (bench/store_gen: 50 processes of 5 programs with comm/pid/node labels,
# 19 Hz x 8 CPUs, BENCH_SQL_HOURS simulated hours, default 4).  Times, best of
# 3: the issue's query, the CPU per comm over the last hour,
#     cprof sql "SELECT comm, sum(value) FROM samples WHERE time > now() - 3600e9 ... GROUP BY comm"
# against cprof query --since 1h --group-by comm; the same SQL over all the
# time (what the time condition's pushdown saves); and one comm's hour
# (comm = '...' pushed down to its series).  The answers of the two commands
# over one fixed hour are compared, comm by comm.
# usage: bench/sql.sh BUILDDIR   (run by `make bench`)
bench=sql; . "$(dirname "$0")/lib.sh"
H=${BENCH_SQL_HOURS:-4}
S=$d/store
CPU=cpu:cpu:nanoseconds:cpu:nanoseconds:delta

# best of 3 wall times of a command (seconds), its peak RSS (KiB) in $rss
best3() {
	best=
	for _ in 1 2 3; do
		$TIME -f '%e %M' -o "$d/t" "$@" > /dev/null
		read -r s r < "$d/t"
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; rss=$r; fi
	done
}

"$b/bench/store_gen" "$S" - --hours "$H" > "$d/gen.out"
echo "load: $(sed -n 's/^simulated: //p' "$d/gen.out")"
echo "      $(sed -n 's/^samples: //p' "$d/gen.out") samples; $(sed -n 's/^store: //p' "$d/gen.out")"

# the same answer over one fixed hour: [to - 1h, to)
to=$(date +%s)000000000
from=$((to - 3600000000000))
"$b/cprof" sql --data "$S" -f csv "SELECT comm, sum(value) FROM samples
	WHERE time >= $from AND time < $to AND type = '$CPU' GROUP BY comm" | tr -d '\r' | tail -n +2 | tr ',' ' ' | sort > "$d/sql.txt"
"$b/cprof" query --data "$S" --from "$from" --to "$to" --group-by comm -f folded cpu:cpu |
	awk '{ split($1, a, ";"); sub("^comm=", "", a[1]); s[a[1]] += $NF } END { for (k in s) printf "%s %.0f\n", k, s[k] }' |
	sort > "$d/query.txt"
if cmp -s "$d/sql.txt" "$d/query.txt" && [ -s "$d/sql.txt" ]; then
	echo "answers:              the same CPU time per comm for the hour ($(wc -l < "$d/sql.txt") comms)"
else
	echo "answers:              DIFFER"; diff "$d/sql.txt" "$d/query.txt" | head; exit 1
fi

best3 "$b/cprof" sql --data "$S" "SELECT comm, sum(value) FROM samples
	WHERE time > now() - 3600e9 AND type = '$CPU' GROUP BY comm"
sql_s=$best sql_rss=$rss
best3 "$b/cprof" query --data "$S" --since 1h --group-by comm -f top cpu:cpu
query_s=$best query_rss=$rss
best3 "$b/cprof" sql --data "$S" "SELECT comm, sum(value) FROM samples WHERE type = '$CPU' GROUP BY comm"
all_s=$best all_rss=$rss
best3 "$b/cprof" sql --data "$S" "SELECT sum(value) FROM samples
	WHERE time > now() - 3600e9 AND type = '$CPU' AND comm = 'billing'"
one_s=$best one_rss=$rss
echo "last hour by comm:    cprof sql ${sql_s} s (peak RSS ${sql_rss} KiB)" \
	"vs cprof query --since 1h --group-by comm ${query_s} s (${query_rss} KiB):" \
	"$(awk -v a="$sql_s" -v b="$query_s" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') times the time"
echo "all $H h by comm:      cprof sql ${all_s} s (${all_rss} KiB): without a time condition every day is read"
echo "one comm, last hour:  cprof sql ${one_s} s (${one_rss} KiB): comm = 'billing' reads its series only"
