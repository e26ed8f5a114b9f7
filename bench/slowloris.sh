#!/bin/sh
# Benchmark: /healthz during a slowloris attack on cprof serve.  520 slow
# connections from 127.0.0.1 (bench/slowloris.py: each sends a request line,
# then one header line every 5 s, never the end of its headers, and is opened
# again whenever the server closes it) against a release `cprof serve` with
# its defaults (512 connections held, 15 s header deadline).  Once they are
# open, 20 /healthz probes one second apart, each on a new connection, from
# the same address.  Reported: the probes' statuses, median and max latency,
# how many slow connections the server closed, and the server's peak RSS
# (VmHWM).  Then the same with 200 KB of headers sent at once on each
# connection before the slow lines (the server keeps up to 256 KiB of request
# line and headers per connection).  Target (issue #14): every probe 200
# within 1 s.  Exits 0 unless
# something failed to run; PASS / NOT MET give the verdict.
# usage: bench/slowloris.sh BUILDDIR   (run by `make bench`)
bench=slowloris; . "$(dirname "$0")/lib.sh"
CONNS=${BENCH_SLOWLORIS_CONNS:-520}
PROBES=${BENCH_SLOWLORIS_PROBES:-20}
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((CONNS + 100)) ] || ulimit -n $((CONNS + 100))
serve_start --data "$d/data"

# phase NAME EXTRA-ARGS...: one attack, its report and verdicts
phase() {
	name=$1
	shift
	echo "== slowloris, $name: $CONNS slow connections (a header line every 5 s), $PROBES /healthz probes =="
	python3 "$src/bench/slowloris.py" loris "$port" "$CONNS" 5 $((PROBES + 60)) --reconnect --probes "$PROBES" "$@" \
		> "$d/r.json"
	hwm=$(awk '/^VmHWM:/ { print $2 }' /proc/$spid/status)
	jq -r '"probes: \(.probe_codes | map(tostring) | join(" "))",
		"healthz latency: median \(.probe_median) s, max \(.probe_max) s",
		"slow connections opened \(.opened), closed by the server \(.closed_by_server), open at the end \(.open_at_end)"' \
		"$d/r.json"
	echo "server peak RSS (VmHWM) so far: $((hwm / 1024)) MB"
	ok=$(jq '[.probe_codes[] | select(. == 200)] | length' "$d/r.json")
	max=$(jq '.probe_max' "$d/r.json")
	# a probe that got no answer fails at once (a refused connection): its latency says nothing
	echo "every probe 200 ($ok of $PROBES) within 1 s (max $max s):" \
		"$(awk -v m="$max" -v ok="$ok" -v n="$PROBES" 'BEGIN { print ok == n && m <= 1 ? "PASS" : "NOT MET" }')"
}
phase "small headers"
phase "200 KB headers" --header-bytes 200000
