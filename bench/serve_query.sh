#!/bin/sh
# Benchmark: the query API of cprof serve on a store of ~1 M samples
# (bench/store_gen, as bench/store.sh builds it: 50 processes of 5 programs,
# 19 Hz x 8 CPUs for BENCH_HOURS (2) simulated hours = 1,094,400 samples).
# 4 clients (bench/serve_load.go, Go net/http, keep-alive) send 400 GETs,
# round robin over a mix of paths: the profile of the whole type (json) over
# 1 h and over the whole 2 h, the profile with a label matcher, the total per
# minute (range), series, labels, values, and the diff of two label sets;
# p50 and p99 per path and overall.
# Reference in the same run: the same queries with the local CLI on the same
# store (cprof query|diff --data DIR, wall time of the whole process, median
# of BENCH_CLI_RUNS (3) runs): what a user without the server would wait.
# Target: the p99 of the profile query on the whole ~1 M samples <= 500 ms.
# Exits 0 unless something failed to run; PASS / NOT MET gives the verdict.
# usage: bench/serve_query.sh BUILDDIR   (run by `make bench`)
bench=serve_query; . "$(dirname "$0")/lib.sh"
H=${BENCH_HOURS:-2}
N=${BENCH_QUERIES:-400}
RUNS=${BENCH_CLI_RUNS:-3}
CLIENTS=4
GO=${GO:-go}
uri() { jq -rn --arg s "$1" '$s | @uri'; }
now_ms() { date +%s%3N; }

if ! GOCACHE=${TMPDIR:-/tmp}/gocache GO111MODULE=off "$GO" build -o "$d/serve_load" "$src/bench/serve_load.go" \
	2> "$d/go.err"; then
	echo "serve_query: cannot build bench/serve_load.go with $GO:"; tail -5 "$d/go.err"; exit 1
fi

# ---- the store: H simulated hours ending now ----
t_end=$(date +%s)
mkdir "$d/store" "$d/pprof"
"$b/bench/store_gen" "$d/store" "$d/pprof" --hours "$H" > "$d/gen.out"
rm -rf "$d/pprof" # store_gen writes them for bench/store.sh; not used here
samples=$(sed -n 's/^samples: //p' "$d/gen.out")
echo "store: $(sed -n 's/^simulated: //p' "$d/gen.out")"
echo "       $samples samples, $(du -sb "$d/store" | cut -f1) bytes on disk"
[ "$samples" -ge 1000000 ] || echo "WARNING: fewer than 1 M samples (BENCH_HOURS=$H)"
# absolute ranges, so that the whole store is in "all" however long this takes
all_from=$((t_end - H * 3600 - 60)) to=$((t_end + 3600)) hour_from=$((t_end - 3600))

# ---- the server ----
serve_start --data "$d/store"

# name|path|the same with the CLI (words; @ stands for --data DIR)
cat > "$d/mix" <<-EOF
	profile ${H}h (all)|/api/v1/profile?format=json&query=$(uri 'cpu:cpu')&from=$all_from&to=$to|query @ --from $all_from --to $to -f json cpu:cpu
	profile 1h|/api/v1/profile?format=json&query=$(uri 'cpu:cpu')&from=$hour_from&to=$to|query @ --from $hour_from --to $to -f json cpu:cpu
	profile {comm="search"} ${H}h|/api/v1/profile?format=json&query=$(uri 'cpu:cpu{comm="search"}')&from=$all_from&to=$to|query @ --from $all_from --to $to -f json cpu:cpu{comm="search"}
	range step 1m ${H}h|/api/v1/range?query=$(uri 'cpu:cpu')&from=$all_from&to=$to&step=1m|query @ --from $all_from --to $to --over-time --step 1m cpu:cpu
	series|/api/v1/series?query=$(uri 'cpu:cpu')|query @ --series cpu:cpu
	labels|/api/v1/labels?query=cpu|query @ --labels cpu
	values comm|/api/v1/values?label=comm|query @ --values comm
	diff gateway/billing ${H}h|/api/v1/diff?format=json&before=$(uri 'cpu:cpu{comm="gateway"}')&after=$(uri 'cpu:cpu{comm="billing"}')&from=$all_from&to=$to|diff @ --from $all_from --to $to -f json cpu:cpu{comm="gateway"} cpu:cpu{comm="billing"}
EOF
# each path answers 200 once before the clock starts (and fills the store's caches)
set --
while IFS='|' read -r name path _; do
	code=$(curl -s -o "$d/one" -w '%{http_code}' "$url$path")
	[ "$code" = 200 ] || { echo "$name: $path answered $code: $(head -c 300 "$d/one")"; exit 1; }
	set -- "$@" "$path"
done < "$d/mix"
total=$(curl -s "$url$(sed -n '1p' "$d/mix" | cut -d'|' -f2)" | jq .total)

"$d/serve_load" -mode query -url "$url" -clients "$CLIENTS" -n "$N" "$@" > "$d/load.json" || {
	echo "serve_load failed"; exit 1; }
errors=$(jq .errors "$d/load.json")
# the whole-store profile alone, one request at a time: its latency without the others' load
"$d/serve_load" -mode query -url "$url" -clients 1 -n 20 "$1" > "$d/alone.json" || {
	echo "serve_load failed"; exit 1; }

# ---- the reference: the local CLI, median of RUNS ----
cli_ms() {
	line=$1
	: > "$d/times"
	for _ in $(seq "$RUNS"); do
		t0=$(now_ms)
		# shellcheck disable=SC2086
		set -f; set -- ${line}; set +f
		verb=$1; shift
		shift # @
		"$b/cprof" "$verb" --data "$d/store" "$@" > /dev/null 2> "$d/cli.err" || {
			echo "cprof $line failed: $(cat "$d/cli.err")" >&2; echo "?"; return; }
		echo $(($(now_ms) - t0)) >> "$d/times"
	done
	sort -n "$d/times" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "server: $CLIENTS clients, $N requests round robin over $(wc -l < "$d/mix") paths, keep-alive;" \
	"$(getconf _NPROCESSORS_ONLN) CPUs for server and clients"
echo
printf '%-26s %10s %10s %10s   %s\n' "path" "p50 ms" "p99 ms" "max ms" "CLI ms (cprof --data, median of $RUNS)"
while IFS='|' read -r name path cli; do
	p50=$(jq -r --arg p "$path" '.paths[$p].p50_ms' "$d/load.json")
	p99=$(jq -r --arg p "$path" '.paths[$p].p99_ms' "$d/load.json")
	max=$(jq -r --arg p "$path" '.paths[$p].max_ms' "$d/load.json")
	printf '%-26s %10s %10s %10s   %s\n' "$name" "$p50" "$p99" "$max" "$(cli_ms "$cli")"
	[ "$name" != "profile ${H}h (all)" ] || target_p99=$p99
done < "$d/mix"
printf '%-26s %10s %10s\n' "all" "$(jq .p50_ms "$d/load.json")" "$(jq .p99_ms "$d/load.json")"
printf '%-26s %10s %10s %10s   %s\n' "profile ${H}h, 1 client" "$(jq .p50_ms "$d/alone.json")" \
	"$(jq .p99_ms "$d/alone.json")" "$(jq -r '.paths[].max_ms' "$d/alone.json")" "(20 requests, one at a time)"
echo
echo "(the server's json has at most 20000 tree nodes, its default (max_nodes); the CLI's json has"
echo " the whole tree, and its time includes starting the process and opening the store)"
echo "the whole store as one profile: total $total ns of CPU, $samples samples"
[ "$errors" = 0 ] || echo "errors: $errors, first: $(jq -r .first_error "$d/load.json")"
echo "$(verdict '<=' "$target_p99" 500): p99 of the profile query over the whole ${H}h ($samples samples)" \
	"= $target_p99 ms among $CLIENTS clients on the mix (alone: $(jq .p99_ms "$d/alone.json") ms) (target <= 500 ms)"
echo "$(verdict '<=' "$errors" 0): $errors failed requests of $N"
