#!/bin/sh
# Benchmark: the store under a continuous load (bench/store_gen: 50 processes,
# ~20k stacks, 19 Hz x 8 CPUs, 2 simulated hours = 1,094,400 samples written
# through cp_store_append, and the same data as one gzipped pprof per 10 s
# per process).  Reports bytes on disk per sample and against the pprof
# files, the ingest rate, and the time to merge every stored sample against
# go tool pprof -proto merging the pprof files, with the totals compared.
# usage: bench/store.sh BUILDDIR   (run by `make bench`)
bench=store; . "$(dirname "$0")/lib.sh"
H=${BENCH_HOURS:-2}
GO=${GO:-go}
mkdir "$d/store" "$d/pprof"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# target OP VALUE LIMIT: "met" or "MISSED"
target() { awk -v v="$2" -v l="$3" -v op="$1" 'BEGIN { ok = op == "<=" ? v <= l : v >= l; print ok ? "met" : "MISSED" }'; }
# best of 3 wall times of a command (seconds), its peak RSS in $rss
best3() {
	best=
	for _ in 1 2 3; do
		$TIME -f '%e %M' -o "$d/t" "$@"
		read -r s r < "$d/t"
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; rss=$r; fi
	done
}
total() { "$b/cprof" query -i "$1" -f json | jq .total; }

"$b/bench/store_gen" "$d/store" "$d/pprof" --hours "$H" > "$d/gen.out"
field() { sed -n "s/^$1: //p" "$d/gen.out"; }
samples=$(field samples)
nfiles=$(field "pprof files" | cut -d" " -f1)
echo "load: $(field simulated)"
echo "      $samples samples in $(field batches)
      $(field store)"
[ "$samples" -ge 1000000 ] || echo "WARNING: fewer than 1 M samples (BENCH_HOURS=$H)"

# ---- size ----
store_b=$(du -sb "$d/store" | cut -f1)
set -- $(store_contents "$d/store")
dict_b=$1 blocks_b=$2
pprof_b=$(du -sb "$d/pprof" | cut -f1)
bps=$(ratio "$store_b" "$samples")
x=$(ratio "$pprof_b" "$store_b")
echo "store on disk:        $store_b bytes = $bps bytes/sample (target <= 4: $(target '<=' "$bps" 4))"
echo "                      of which the days' dictionaries and series $dict_b bytes, sample blocks and summaries" \
	"$blocks_b bytes = $(ratio "$blocks_b" "$samples") bytes/sample (the rest: SQLite's pages and indexes)"
echo "pprof files:          $nfiles files, $pprof_b bytes = $(ratio "$pprof_b" "$samples") bytes/sample;" \
	"the store is ${x}x smaller (target >= 10x: $(target '>=' "$x" 10))"

# ---- ingest ----
echo "ingest:               $(field 'ingest rate') (cp_store_append: $(field 'append time') for $samples samples)"

# ---- merge every stored sample ----
"$b/bench/store_query" "$d/store" cpu:samples 1 > "$d/q.out"
merged=$(sed -n 's/.*total \([0-9]*\),.*/\1/p' "$d/q.out")
"$b/bench/store_query" "$d/store" cpu:cpu 3 -o "$d/store.pb.gz" > "$d/q.out"
ms=$(sed -n 's/^merge: \([0-9.]*\) ms.*/\1/p' "$d/q.out")
ct=$(sed -n 's/.*total \([0-9]*\),.*/\1/p' "$d/q.out")
[ "$(total "$d/store.pb.gz")" = "$ct" ] || { echo "the store's merged profile does not encode its total"; exit 1; }
echo "store merge:          $merged samples in $ms ms (cp_store_select, best of 3; target <= 200 ms:" \
	"$(target '<=' "$ms" 200))"
cli=
if "$b/cprof" query --help 2>&1 | grep -q -- --data; then
	best3 "$b/cprof" query --data "$d/store" --since "$((H + 1))h" -f pprof -o "$d/cli.pb.gz" cpu:cpu
	cli=$best
	clit=$(total "$d/cli.pb.gz")
	echo "cprof query --data:   ${cli}s (-f pprof, best of 3), peak RSS $((rss / 1024)) MB, total cpu $clit ns"
fi

# ---- go tool pprof -proto on the same data as pprof files ----
# relative names keep the 36000 arguments well under ARG_MAX
(cd "$d/pprof" && HOME=$d $TIME -f '%e %M' -o "$d/t" "$GO" tool pprof -proto ./*.pb.gz > "$d/go.pb.gz" 2> "$d/go.err") || {
	echo "go tool pprof failed:"; tail -3 "$d/go.err"; exit 1; }
read -r go_s go_rss < "$d/t"
gt=$(total "$d/go.pb.gz")
echo "go tool pprof -proto: ${go_s}s for $nfiles files, peak RSS $((go_rss / 1024)) MB, total cpu $gt ns"
echo "cprof store merge:    total cpu $ct ns"
sp=$(awk -v a="$ms" -v b="$go_s" 'BEGIN { if (a <= 0) a = 1; printf "%.0f", b * 1000 / a }')
echo "speed-up (store merge vs go tool pprof): ${sp}x (target >= 10x: $(target '>=' "$sp" 10))"
if [ -n "$cli" ]; then
	awk -v a="$cli" -v b="$go_s" 'BEGIN { if (a <= 0) a = 0.01; printf "speed-up (cprof query --data -f pprof, end to end): %.0fx\n", b / a }'
fi
if [ "$ct" = "$gt" ] && { [ -z "$cli" ] || [ "$clit" = "$gt" ]; }; then
	echo "totals: equal"
else
	echo "totals: DIFFER"
	exit 1
fi
