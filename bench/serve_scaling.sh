#!/bin/sh
# Benchmark (#21): how far one `cprof serve` goes as the fleet grows, for docs/SCALING.md.
# For each HOSTS:HOURS of BENCH_SCALE (default "1:24 10:24 100:2"), bench/store_gen builds a
# store of HOSTS simulated hosts (node=host-NNN, each 50 processes of 5 programs, 19 Hz on
# BENCH_SCALE_CPUS (1) busy CPUs: a host one CPU busy on average) over HOURS ending now, all
# the hosts' profiles of an interval one append (--group: as the server's group commit takes the
# pushes that arrive together).  Then `cprof serve` on that store answers
# 2 clients (bench/serve_load.go, keep-alive) BENCH_SCALE_N (20) times per query: the profile of
# one host and of the whole fleet over the last hour and, when the store holds a day, the last
# day.  Reported per size: samples, bytes on disk and per host-day, the store's own append rate
# (no HTTP: bench/serve_ingest.sh measures pushes over HTTP), p50/p99 of each query, and the
# server's peak RSS.  First, as root, what one real agent sends: `cprof record --all -F 19` on
# this machine for BENCH_SCALE_AGENT (60) seconds pushing to a `cprof serve` (its /metrics:
# pushes, bytes and samples per flush interval).  Each store is compacted once it is written
# (`cprof import --downsample` of the default policy: what the server's upkeep does as each hour
# closes: the hours laid out by series, their summaries), its time printed.  Targets (#48), at
# 100 hosts x 24 h: the last day of all hosts <= 2 s, of one host <= 0.5 s, the last hour no
# slower than cprof 2131acc's (a series per process, blocks of every series: 0.89 s one host,
# 1.17 s all; its day: 14.4 s and 20.7 s); printed beside each figure.
# usage: bench/serve_scaling.sh BUILDDIR
bench=serve_scaling; . "$(dirname "$0")/lib.sh"
SCALE=${BENCH_SCALE:-1:24 10:24 100:2}
CPUS=${BENCH_SCALE_CPUS:-1}
N=${BENCH_SCALE_N:-20}
GO=${GO:-go}
uri() { jq -rn --arg s "$1" '$s | @uri'; }
need_tools jq curl
if ! GOCACHE=${TMPDIR:-/tmp}/gocache GO111MODULE=off "$GO" build -o "$d/serve_load" "$src/bench/serve_load.go" \
	2> "$d/go.err"; then
	echo "serve_scaling: cannot build bench/serve_load.go with $GO:"; tail -5 "$d/go.err"; exit 1
fi
AGENT=${BENCH_SCALE_AGENT:-60}
metric() { curl -s "$url/metrics" | awk -v m="$1{api=\"native\"}" '$1 == m { print $2 }'; }
if [ "$(id -u)" = 0 ] && [ -z "${BENCH_SCALE_BUILD_ONLY:-}" ]; then
	serve_start --data "$d/agent-store"
	"$b/cprof" record -q --all -F 19 -d "$AGENT" --remote "$url" --spool "$d/spool" 2> "$d/agent.err" ||
		{ echo "cprof record failed: $(tail -2 "$d/agent.err")"; exit 1; }
	p=$(metric cprof_ingest_profiles_total) by=$(metric cprof_ingest_bytes_total) sa=$(metric cprof_ingest_samples_total)
	echo "one real agent (cprof record --all -F 19 on this machine, $AGENT s, flush every 10 s): $p pushes," \
		"$by bytes, $sa stored entries (distinct stacks per profile)"
	awk -v p="$p" -v b="$by" -v s="$sa" -v t="$AGENT" 'BEGIN { printf "  = %.2f pushes/s, %.0f bytes/push, %.1f entries/s, %.0f bytes/s\n", p / t, (p ? b / p : 0), s / t, b / t }'
	kill "$spid"; wait "$spid" 2> /dev/null || true; spid=
	echo
fi
echo "one cprof serve, stores of simulated hosts at 19 Hz x $CPUS busy CPU(s) each (50 processes, 5 programs);"
echo "$N requests per query, 2 clients, keep-alive; $(getconf _NPROCESSORS_ONLN) CPUs for everything"
echo
printf '%-6s %-6s %12s %12s %14s %12s  %-28s %9s %9s %9s\n' hosts hours samples "disk bytes" "bytes/host-day" \
	"append/s" query "p50 ms" "p99 ms" "RSS MB"
for hh in $SCALE; do
	hosts=${hh%%:*} hours=${hh#*:}
	st="$d/store"
	[ -z "${BENCH_SCALE_STORES:-}" ] || st="$BENCH_SCALE_STORES/$hosts-$hours-$CPUS"
	# (a kept store of another schema or generator is made again: format 3, series per program)
	if ! [ -f "$st/gen.out" ] || [ "$(cat "$st/format" 2> /dev/null)" != 3 ]; then
		rm -rf "$st"
		mkdir -p "$st"
		date +%s > "$st/t_end"
		"$b/bench/store_gen" "$st/store" - --hours "$hours" --hosts "$hosts" --cpus "$CPUS" --group > "$st/gen.tmp" ||
			{ echo "store_gen failed"; exit 1; }
		c0=$(date +%s.%N)
		"$b/cprof" import --data "$st/store" --downsample raw=2d,5m=10d,1h > /dev/null 2> "$st/compact.err" ||
			{ echo "compaction failed: $(tail -2 "$st/compact.err")"; exit 1; }
		awk -v a="$c0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' > "$st/compact.s"
		echo 3 > "$st/format"
		mv "$st/gen.tmp" "$st/gen.out"
	fi
	[ -z "${BENCH_SCALE_BUILD_ONLY:-}" ] || continue
	t_end=$(cat "$st/t_end")
	cp "$st/gen.out" "$d/gen.out"
	samples=$(sed -n 's/^samples: //p' "$d/gen.out")
	rate=$(sed -n 's/^ingest rate: \([0-9]*\).*/\1/p' "$d/gen.out")
	bytes=$(du -sb "$st/store" | cut -f1)
	per=$(awk -v b="$bytes" -v h="$hosts" -v t="$hours" 'BEGIN { printf "%.0f", b / h / (t / 24) }')
	one=host-000; [ "$hosts" = 1 ] && one=bench
	to=$((t_end + 3600)) hour=$((t_end - 3600)) day=$((t_end - 86400))
	set -- "1h, one host|/api/v1/profile?format=json&query=$(uri "cpu:cpu{node=\"$one\"}")&from=$hour&to=$to" \
		"1h, all hosts|/api/v1/profile?format=json&query=$(uri 'cpu:cpu')&from=$hour&to=$to"
	if [ "$hours" -ge 24 ]; then
		set -- "$@" "24h, one host|/api/v1/profile?format=json&query=$(uri "cpu:cpu{node=\"$one\"}")&from=$day&to=$to" \
			"24h, all hosts|/api/v1/profile?format=json&query=$(uri 'cpu:cpu')&from=$day&to=$to"
	fi
	serve_start --data "$st/store"
	first=1
	echo "  ($hosts hosts x $hours h: compacted in $(cat "$st/compact.s") s after store_gen wrote it)"
	for q; do
		name=${q%%|*} path=${q#*|}
		code=$(curl -s -o "$d/one" -w '%{http_code}' "$url$path")
		[ "$code" = 200 ] || { echo "$name: answered $code: $(head -c 300 "$d/one")"; exit 1; }
		"$d/serve_load" -mode query -url "$url" -clients 2 -n "$N" "$path" > "$d/load.json" ||
			{ echo "serve_load failed"; exit 1; }
		rss=$(peak_rss_mb "$spid")
		if [ "$first" = 1 ]; then
			printf '%-6s %-6s %12s %12s %14s %12s  %-28s %9s %9s %9s\n' "$hosts" "$hours" "$samples" "$bytes" "$per" \
				"$rate" "$name" "$(jq .p50_ms "$d/load.json")" "$(jq .p99_ms "$d/load.json")" "$rss"
			first=0
		else
			printf '%-6s %-6s %12s %12s %14s %12s  %-28s %9s %9s %9s\n' "" "" "" "" "" "" "$name" \
				"$(jq .p50_ms "$d/load.json")" "$(jq .p99_ms "$d/load.json")" "$rss"
		fi
		[ "$(jq .errors "$d/load.json")" = 0 ] || echo "  errors: $(jq -r .first_error "$d/load.json")"
		if [ "$hosts" = 100 ] && [ "$hours" -ge 24 ]; then
			p50=$(jq .p50_ms "$d/load.json")
			case $name in
			"24h, all hosts") lim=2000 old=20700 ;;
			"24h, one host") lim=500 old=14400 ;;
			"1h, all hosts") lim=1168 old=1168 ;;
			*) lim=893 old=893 ;;
			esac
			echo "    $name: p50 $p50 ms (target <= $lim ms; cprof 2131acc: $old ms): $(verdict '<=' "$p50" "$lim")"
		fi
	done
	kill "$spid"; wait "$spid" 2> /dev/null || true; spid=
done
echo
echo "(bytes/host-day: the store's size over hosts x hours/24; append/s: samples/s of cp_store_append alone;"
echo " RSS: the server's peak (VmHWM) after the query; the json answer holds at most 20000 tree nodes)"
