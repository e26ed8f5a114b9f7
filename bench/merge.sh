#!/bin/sh
# Benchmark: merge 100 CPU profiles of ~10k samples each, cprof merge vs
# go tool pprof -proto in the same run, with the totals compared.
# usage: bench/merge.sh BUILDDIR   (run by `make bench`)
bench=merge; . "$(dirname "$0")/lib.sh"
N=${BENCH_PROFILES:-100}
S=${BENCH_SAMPLES:-10000}
GO=${GO:-go}
"$b/bench/gen_profiles" "$d" "$N" "$S"
echo "input: $N profiles x $S samples, $(du -sh "$d" | cut -f1) gzipped"
best=
for i in 1 2 3; do
	$TIME -f '%e %M' -o "$d/t" "$b/cprof" merge "$d"/p*.pb.gz -o "$d/cprof.pb.gz"
	set -- $(cat "$d/t")
	if [ -z "$best" ] || awk -v a="$1" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$1; rss=$2; fi
done
HOME=$d $TIME -f '%e %M' -o "$d/t" "$GO" tool pprof -proto "$d"/p*.pb.gz > "$d/go.pb.gz" 2>/dev/null
set -- $(cat "$d/t"); go_s=$1; go_rss=$2
ct=$("$b/cprof" query -i "$d/cprof.pb.gz" -f json | jq .total)
gt=$("$b/cprof" query -i "$d/go.pb.gz" -f json | jq .total)
gtop=$(HOME=$d "$GO" tool pprof -top "$d/cprof.pb.gz" 2>/dev/null | grep 'Total samples' || true)
echo "cprof merge:          ${best}s (best of 3), peak RSS $((rss / 1024)) MB, total cpu $ct ns"
echo "go tool pprof -proto: ${go_s}s, peak RSS $((go_rss / 1024)) MB, total cpu $gt ns"
awk -v a="$best" -v b="$go_s" 'BEGIN { if (a <= 0) a = 0.01; printf "speed-up: %.1fx (target >= 10x)\n", b / a }'
[ "$ct" = "$gt" ] && echo "totals: equal" || { echo "totals: DIFFER"; exit 1; }
echo "go tool pprof reads the cprof output: $gtop"
