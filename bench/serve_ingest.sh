#!/bin/sh
# Benchmark: push ingest into cprof serve.  16 clients (bench/serve_load.go,
# Go net/http with keep-alive) each POST a ~20 KB gzipped CPU profile
# (bench/gen_profiles: 250 stacks over 500 functions) to /api/v1/push as fast
# as the server answers, for BENCH_SERVE_SECONDS (60); each push has its own
# time and the label client=cI.  Reported: pushes/s, errors, latency, the
# server's CPU and its RSS every 5 s (is it flat?), and whether every
# accepted push is queryable: for each client, the server's total of
# bench:samples{client="cI"} must be the number of its 200 answers times its
# body's sample total.
# Reference in the same run: there is no Parca or Pyroscope server on this
# machine (neither is packaged in Debian, and there is no network), so the
# reference is the store's own ingest rate without HTTP: cprof import of the
# same bodies in one process (one transaction).
# Targets: >= 500 pushes/s, 0 errors, all queryable, memory flat.  Exits 0
# unless something failed to run; PASS / NOT MET lines give the verdict.
# usage: bench/serve_ingest.sh BUILDDIR   (run by `make bench`)
bench=serve_ingest; . "$(dirname "$0")/lib.sh"
SECONDS_=${BENCH_SERVE_SECONDS:-60}
CLIENTS=16
GO=${GO:-go}
rpid=
stop_at_exit rpid

js() { jq -r "$1" "$d/load.json"; }

# ---- the load generator and the bodies ----
if ! GOCACHE=${TMPDIR:-/tmp}/gocache GO111MODULE=off "$GO" build -o "$d/serve_load" "$src/bench/serve_load.go" \
	2> "$d/go.err"; then
	echo "serve_ingest: cannot build bench/serve_load.go with $GO:"; tail -5 "$d/go.err"; exit 1
fi
mkdir "$d/bodies"
"$b/bench/gen_profiles" "$d/bodies" "$CLIENTS" 250 500
set --
for i in $(seq 0 $((CLIENTS - 1))); do set -- "$@" "$d/bodies/$(printf 'p%03d.pb.gz' "$i")"; done
bytes=$(cat "$@" | wc -c)
mean=$((bytes / CLIENTS))
echo "load: $CLIENTS clients x POST /api/v1/push for ${SECONDS_}s, keep-alive, each its own body:"
echo "      $CLIENTS gzipped pprof CPU profiles of 250 stacks (500 functions), mean $mean bytes" \
	"($(awk -v m="$mean" 'BEGIN { printf "%.1f", m / 1024 }') KiB); $(getconf _NPROCESSORS_ONLN) CPUs for server and clients"

# ---- the server ----
serve_start --data "$d/store"
echo "server: cprof serve --listen 127.0.0.1:0 --data DIR at $url (pid $spid)"

# VmRSS (KB) every 5 s while the load runs: "seconds kb" lines
rss_poll() {
	t=0
	while kill -0 "$spid" 2> /dev/null; do
		echo "$t $(awk '/^VmRSS:/ { print $2 }' /proc/"$spid"/status 2> /dev/null || echo 0)" >> "$d/rss"
		sleep 5
		t=$((t + 5))
	done
}
cpu0=$(awk '{ print $14 + $15 }' /proc/"$spid"/stat)
rss_poll &
rpid=$!
"$d/serve_load" -mode push -url "$url" -clients "$CLIENTS" -duration "${SECONDS_}s" "$@" > "$d/load.json" || {
	echo "serve_load failed"; exit 1; }
cpu1=$(awk '{ print $14 + $15 }' /proc/"$spid"/stat)
kill "$rpid" 2> /dev/null || :
wait "$rpid" 2> /dev/null || :
rpid=

pushes=$(js .pushes) errors=$(js .errors) rate=$(js '.per_second | floor')
cpu_s=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz }')
echo
echo "cprof serve:         $pushes pushes in $(js '.seconds * 10 | floor / 10') s = $rate pushes/s" \
	"($(awk -v r="$rate" -v m="$mean" 'BEGIN { printf "%.1f", r * m / 1048576 }') MiB/s of bodies)," \
	"$errors errors"
echo "                     latency p50 $(js .p50_ms) ms, p99 $(js .p99_ms) ms;" \
	"server CPU $cpu_s s ($(awk -v c="$cpu_s" -v n="$pushes" 'BEGIN { printf "%.2f", (n ? c * 1000 / n : 0) }') ms per push)"
[ "$errors" = 0 ] || echo "                     first error: $(js .first_error)"
spb=$(for f in "$@"; do "$b/cprof" query -i "$f" -t samples -f json | jq .total; done | awk '{ s += $1 } END { printf "%.0f", s / NR }')
echo "                     $(awk -v r="$rate" -v s="$spb" 'BEGIN { printf "%.0f", r * s }') samples/s ingested" \
	"(a body holds $spb samples on average)"
curl -s "$url/api/v1/stats" > "$d/stats.json" || :
echo "                     the store after the run: $(jq .bytes "$d/stats.json") bytes on disk," \
	"$(jq .entries "$d/stats.json") entries, $(jq .series "$d/stats.json") series"

# ---- the reference: the same bodies through cprof import, one process ----
reps=$(( (pushes + CLIENTS - 1) / CLIENTS ))
[ "$reps" -le 64 ] || reps=64
[ "$reps" -ge 1 ] || reps=1
nref=$((reps * CLIENTS))
files=
for _ in $(seq "$reps"); do files="$files $*"; done
# shellcheck disable=SC2086
$TIME -f '%e %M' -o "$d/t" "$b/cprof" import --data "$d/ref" --name bench -l client=ref $files > /dev/null 2> "$d/import.err" || {
	echo "cprof import failed:"; tail -3 "$d/import.err"; exit 1; }
read -r ref_s ref_rss < "$d/t"
ref_rate=$(awk -v n="$nref" -v s="$ref_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
echo "reference:           cprof import of $nref of the same bodies in one process (one transaction, no HTTP):"
echo "                     ${ref_s}s = $ref_rate profiles/s, peak RSS $((ref_rss / 1024)) MB" \
	"(no Parca or Pyroscope server on this machine to compare with)"
echo "                     cprof serve / cprof import rate: $(awk -v a="$rate" -v b="$ref_rate" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"

# ---- every accepted push is queryable ----
bad=0 checked=0 expected_all=0 got_all=0
i=0
for body in "$@"; do
	[ "$i" -lt "$CLIENTS" ] || break
	n=$(js ".per_client[$i]")
	per=$("$b/cprof" query -i "$body" -t samples -f json | jq .total)
	want=$((n * per))
	got=$(curl -sf -G --data-urlencode "query=bench:samples{client=\"c$i\"}" --data-urlencode from=now-3h \
		-d format=json -d max_nodes=1 "$url/api/v1/profile" | jq .total) || got=error
	checked=$((checked + 1))
	if [ "$got" != "$want" ]; then
		bad=$((bad + 1))
		echo "  client c$i: $n pushes x $per samples = $want, the server's total is $got"
	else
		expected_all=$((expected_all + want))
		got_all=$((got_all + got))
	fi
	i=$((i + 1))
done

# ---- memory: flat? ----
# The first 10 s are warm-up (the store's caches and the connection threads
# fill); of the readings after them, the largest of the last third must be
# within 10% (or 8 MB) of the largest of the first third.
echo
echo "server VmRSS every 5 s (MB): $(awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), $2 / 1024 }' "$d/rss")"
flat=$(awk '$1 >= 10 { v[n++] = $2 }
	END {
		if (n < 3) { print "SKIP - (fewer than 3 readings after the warm-up: run longer)"; exit }
		k = int(n / 3); a = b = 0
		for (i = 0; i < k; i++) if (v[i] > a) a = v[i]
		for (i = n - k; i < n; i++) if (v[i] > b) b = v[i]
		ok = b <= a * 1.10 || b - a <= 8192
		printf "%s first third max %.1f MB, last third max %.1f MB (%+.1f%%)\n", ok ? "PASS" : "NOT MET",
			a / 1024, b / 1024, (a > 0 ? 100 * (b - a) / a : 0) }' "$d/rss")

echo
echo "$(verdict '>=' "$rate" 500): $rate pushes/s (target >= 500)"
echo "$(verdict '<=' "$errors" 0): $errors errors (target 0)"
if [ "$bad" = 0 ]; then
	echo "PASS: every accepted push is queryable ($checked clients, total $got_all samples = the pushes x their bodies)"
else
	echo "NOT MET: $bad of $checked clients' totals differ from their accepted pushes x their bodies"
fi
echo "${flat%% *}: memory flat: ${flat#* } (target: the last third's max within 10% or 8 MB of the first third's)"
if grep -v -e '^cprof serve: store ' "$d/serve.err" | grep -q .; then
	echo "note: the server said:"; grep -v -e '^cprof serve: store ' "$d/serve.err" | tail -5 | sed 's/^/  /'
fi
