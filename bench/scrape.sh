#!/bin/sh
# Benchmark: cprof scrape pulling 100 Go targets.  One Go process
# (tests/fixtures/scrape/target.go -n 100, net/http/pprof on 100 ports of
# 127.0.0.1) is scraped by `cprof scrape --config F --data DIR` with one job
# at Parca's defaults: scrape_interval 10s, timeout 13s, the five default
# profiles (process_cpu delta with seconds=10, memory /debug/pprof/allocs,
# block, mutex, goroutine): 500 fetches per 10 s, decoded and stored, for
# BENCH_SCRAPE_SECONDS (60).  (Go takes one CPU profile at a time; the fixture
# lets concurrent /debug/pprof/profile requests of its 100 ports share one,
# so every CPU scrape is answered, as 100 separate processes would.)
# Reported: the scraper's CPU time (utime + stime from /proc/PID/stat) and
# CPU % of one core, its peak (VmHWM) and final (VmRSS) RSS, scrapes done and
# failed (from its targets' state), the bytes fetched (counted by the
# target), the series and the store size.
# References in the same run, the same 500 fetches per 10 s from the same
# target, for the same time, only fetched and written to files (no decoding,
# no store): (a) one `curl -Z` per round (parallel transfers in one process,
# libcurl like cprof), (b) `xargs -P 500` of one curl process per fetch.
# Their CPU is the rusage of the whole process tree (/usr/bin/time).
# Targets: scraper CPU < 5% of one core and RSS < 64 MB for 100 targets.
# Exits 0 unless something failed to run; PASS / NOT MET lines give the verdict.
# usage: bench/scrape.sh BUILDDIR   (run by `make bench`)
bench=scrape; . "$(dirname "$0")/lib.sh"
SECS=${BENCH_SCRAPE_SECONDS:-60}
N=${BENCH_SCRAPE_TARGETS:-100}
INTERVAL=10
GO=${GO:-go}
HZ=$(getconf CLK_TCK)
tpid='' spid=''
stop_at_exit spid tpid

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
stats() { curl -s "http://$(head -n 1 "$d/addrs")/stats"; }
now_ms() { date +%s%3N; }
# by_path STATS0 STATS1: "path N x B" for what was fetched between two /stats answers
by_path() {
	jq -rn --argjson a "$1" --argjson b "$2" '[$b.paths | keys[] as $k |
		($b.paths[$k] - ($a.paths[$k] // 0)) as $n | select($n > 0) |
		"\($k | sub("/debug/pprof/"; "")) \($n) x \((($b.path_bytes[$k] - ($a.path_bytes[$k] // 0)) / $n) | floor)"] | join(", ")'
}

for t in curl jq "$TIME"; do
	command -v "$t" > /dev/null || { echo "scrape bench: $t is not installed"; exit 1; }
done
if ! GOCACHE=${TMPDIR:-/tmp}/gocache GO111MODULE=off "$GO" build -o "$d/target" "$src/tests/fixtures/scrape/target.go" \
	2> "$d/go.err"; then
	echo "scrape bench: cannot build tests/fixtures/scrape/target.go with $GO:"; tail -5 "$d/go.err"; exit 1
fi

# ---- the targets ----
"$d/target" -n "$N" -cpu 0.05 -goroutines 10 > "$d/addrs" 2> "$d/target.err" &
tpid=$!
for _ in $(seq 100); do [ "$(wc -l < "$d/addrs")" -ge "$N" ] && break; sleep 0.1; done
[ "$(wc -l < "$d/addrs")" -ge "$N" ] || { echo "the target did not start:"; cat "$d/target.err"; exit 1; }
{
	echo "scrape_configs:"
	echo "  - job_name: bench"
	echo "    scrape_interval: ${INTERVAL}s"
	echo "    static_configs:"
	echo "      - targets:"
	sed 's/^/          - /' "$d/addrs"
} > "$d/scrape.yaml"
paths="/debug/pprof/profile?seconds=$INTERVAL /debug/pprof/allocs /debug/pprof/block /debug/pprof/mutex /debug/pprof/goroutine"
rounds=$(((SECS + INTERVAL - 1) / INTERVAL))
echo "load: $N targets (one Go process, target.go -n $N, net/http/pprof), one job: scrape_interval ${INTERVAL}s,"
echo "      Parca's default profiles: process_cpu (delta, seconds=$INTERVAL), memory (allocs), block, mutex, goroutine:"
echo "      $((N * 5)) fetches per ${INTERVAL} s for ${SECS} s; $(getconf _NPROCESSORS_ONLN) CPUs for the target and the scraper"

# ---- cprof scrape ----
s0=$(stats)
"$b/cprof" scrape --config "$d/scrape.yaml" --data "$d/store" > "$d/scrape.out" 2> "$d/scrape.err" &
spid=$!
t0=$(now_ms)
sleep 1
kill -0 "$spid" 2> /dev/null || { echo "cprof scrape did not start:"; cat "$d/scrape.err"; exit 1; }
rss_max=0
i=0
while [ $i -lt $((SECS - 1)) ]; do
	kill -0 "$spid" 2> /dev/null || { echo "cprof scrape exited early:"; tail -5 "$d/scrape.err"; exit 1; }
	r=$(status_kb "$spid" VmRSS)
	[ "$r" -le "$rss_max" ] || rss_max=$r
	sleep 1
	i=$((i + 1))
done
ticks=$(cpu_ticks "$spid")
hwm=$(status_kb "$spid" VmHWM)
rss_final=$(status_kb "$spid" VmRSS)
t1=$(now_ms)
"$b/cprof" scrape --targets --data "$d/store" -f json > "$d/targets.json" 2> "$d/targets.err" || :
kill -TERM "$spid"
wait "$spid" && stop_rc=0 || stop_rc=$?
spid=
s1=$(stats)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
cpu_s=$(awk -v t="$ticks" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
pct=$(awk -v c="$cpu_s" -v w="$wall" 'BEGIN { printf "%.2f", 100 * c / w }')
fetched=$(($(printf '%s' "$s1" | jq .bytes) - $(printf '%s' "$s0" | jq .bytes)))
requests=$(($(printf '%s' "$s1" | jq .requests) - $(printf '%s' "$s0" | jq .requests)))
if [ -s "$d/targets.json" ]; then
	scrapes=$(jq '[.[].scrapes] | add' "$d/targets.json")
	failures=$(jq '[.[].failures] | add' "$d/targets.json")
	ntargets=$(jq 'length' "$d/targets.json")
	downs=$(jq '[.[] | select(.health == "down")] | length' "$d/targets.json")
else
	scrapes='?' failures='?' ntargets='?' downs='?'
	echo "note: cprof scrape --targets said: $(head -n 1 "$d/targets.err")"
fi
series=$("$b/cprof" query --data "$d/store" --series 2> /dev/null | wc -l | tr -d ' ')
store_bytes=$(du -sb "$d/store" | cut -f1)
echo
echo "cprof scrape:  CPU ${cpu_s} s in ${wall} s = ${pct}% of one core" \
	"($(awk -v c="$cpu_s" -v n="$scrapes" 'BEGIN { printf "%.2f", (n > 0 ? c * 1000 / n : 0) }') ms per scrape);" \
	"RSS peak $(mb "$hwm") MB (VmHWM; largest 1 s sample $(mb "$rss_max") MB), final $(mb "$rss_final") MB"
echo "               scrapes $scrapes done, $failures failed ($ntargets target x profile, $downs down at the end);" \
	"the target answered $requests requests, $fetched bytes ($(mb $((fetched / 1024))) MB)"
echo "               store: $series series, $store_bytes bytes on disk; exit status on SIGTERM: $stop_rc"
echo "               fetched by path (requests x mean bytes): $(by_path "$s0" "$s1")"
grep -v -e 'retried in the next interval' -e ': up$' "$d/scrape.err" | grep . | tail -3 | sed 's/^/               said: /' || :

# ---- the references: the same fetches with curl ----
: > "$d/urls"
: > "$d/pairs"
: > "$d/curl.cfg"
mkdir "$d/out"
k=0
while read -r a; do
	for p in $paths; do
		echo "url = \"http://$a$p\"" >> "$d/curl.cfg"
		echo "output = \"$d/out/$k\"" >> "$d/curl.cfg"
		echo "$d/out/$k http://$a$p" >> "$d/pairs"
		k=$((k + 1))
	done
done < "$d/addrs"
# rounds CMD...: CMD every INTERVAL s (or right after the last one when it
# took longer), until SECS have passed
cat > "$d/rounds.sh" << 'EOF'
secs=$1 interval=$2
shift 2
start=$(date +%s%3N)
while [ $(($(date +%s%3N) - start)) -lt $((secs * 1000)) ]; do
	r=$(date +%s%3N)
	"$@" || :
	left=$((interval * 1000 - ($(date +%s%3N) - r)))
	[ "$left" -le 0 ] || sleep "$(awk -v l="$left" 'BEGIN { printf "%.3f", l / 1000 }')"
done
EOF
reference() { # NAME CMD...: prints "cpu_s peak_rss_kb requests bytes wall_s"
	_name=$1
	shift
	_s0=$(stats)
	_t0=$(now_ms)
	$TIME -f '%U %S %M' -o "$d/time.$_name" sh "$d/rounds.sh" "$SECS" "$INTERVAL" "$@" > /dev/null 2>&1 || :
	_t1=$(now_ms)
	_s1=$(stats)
	by_path "$_s0" "$_s1" > "$d/paths.$_name"
	awk -v r="$(tail -n 1 "$d/time.$_name")" -v w="$(awk -v a="$_t0" -v b="$_t1" 'BEGIN { print (b - a) / 1000 }')" \
		-v q="$(($(printf '%s' "$_s1" | jq .requests) - $(printf '%s' "$_s0" | jq .requests)))" \
		-v y="$(($(printf '%s' "$_s1" | jq .bytes) - $(printf '%s' "$_s0" | jq .bytes)))" \
		'BEGIN { split(r, t, " "); printf "%.2f %d %d %d %.1f\n", t[1] + t[2], t[3], q, y, w }'
}
read -r z_cpu z_rss z_req z_bytes z_wall << EOF
$(reference curlz curl -s -Z --parallel-immediate --parallel-max 300 -K "$d/curl.cfg")
EOF
read -r x_cpu x_rss x_req x_bytes x_wall << EOF
$(reference xargs sh -c "xargs -P $((N * 5)) -n 2 curl -s -o < '$d/pairs'")
EOF
echo
echo "reference (a): curl -Z --parallel-immediate --parallel-max 300, one process per round fetching the same $k URLs into files"
echo "               (no decoding, no store): CPU ${z_cpu} s in ${z_wall} s =" \
	"$(awk -v c="$z_cpu" -v w="$z_wall" 'BEGIN { printf "%.2f", 100 * c / w }')% of one core; peak RSS $(mb "$z_rss") MB;" \
	"$z_req requests, $z_bytes bytes"
echo "               by path: $(cat "$d/paths.curlz")"
echo "reference (b): xargs -P $((N * 5)) -n 2 curl -s -o FILE URL, one curl process per fetch, same rounds:"
echo "               CPU ${x_cpu} s in ${x_wall} s = $(awk -v c="$x_cpu" -v w="$x_wall" 'BEGIN { printf "%.2f", 100 * c / w }')% of one core;" \
	"peak RSS of one curl $(mb "$x_rss") MB; $x_req requests, $x_bytes bytes"
echo "               by path: $(cat "$d/paths.xargs")"
echo "               cprof scrape CPU / curl -Z CPU: $(awk -v a="$cpu_s" -v b="$z_cpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }');" \
	"/ xargs curl CPU: $(awk -v a="$cpu_s" -v b="$x_cpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"

echo
echo "$(verdict '<' "$pct" 5): scraper CPU ${pct}% of one core for $N targets (target < 5%)"
echo "$(verdict '<' "$(mb "$hwm")" 64): scraper peak RSS $(mb "$hwm") MB (target < 64 MB)"
if [ "$failures" = 0 ] && [ "$scrapes" != "?" ] && [ "$scrapes" -ge $((N * 5 * (rounds - 1))) ]; then
	echo "PASS: $scrapes scrapes, none failed (>= $((N * 5 * (rounds - 1))) expected in ${SECS} s)"
else
	echo "NOT MET: $scrapes scrapes, $failures failed (expected >= $((N * 5 * (rounds - 1))) in ${SECS} s, none failed)"
fi
