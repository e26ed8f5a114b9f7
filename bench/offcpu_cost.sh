#!/bin/sh
# Benchmark (#17): what cprof record --off-cpu costs in a context-switch storm, against perf in the
# same run, and how far its sampled totals are from the exact ones.
#
# The storm: bench/pingpong.c, two threads ping-ponging a byte over pipes, paced to BENCH_SWITCHES
# (100000) context switches a second by the two threads (as getrusage and pidstat -w count them: a
# thread leaving the CPU; 0: as fast as they can, which on this guest moves tenfold with the other
# load), for BENCH_SECONDS (20).  cprof record --all --off-cpu (defaults: --off-cpu-period 10ms)
# writes to a store meanwhile; its CPU is its threads' run time (schedstat) plus its BPF programs'
# run time (kernel.bpf_stats_enabled, on for the run and restored).  perf record -e
# sched:sched_switch -a -g + perf script then run on the same storm again.
# Bias: the ping-pong threads' off-CPU time in cprof's store against the exact one: twice the wall
# time of their lives less their CPU time, as pingpong measures them (CLOCK_THREAD_CPUTIME_ID).
# Then a cross-check without bpf_stats (whose clock reads are part of each run time it reports, while
# the dispatch to the program is not): the added time per switch of the ping-pong pinned to one CPU.
# Targets (#17): <= 2% of a core; <= 1/10 of perf's CPU.  Needs root, perf, bpftool, jq, gcc.
# usage: bench/offcpu_cost.sh BUILDDIR   (run by `make bench`)
bench=offcpu_cost; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-20}
RATE=${BENCH_SWITCHES:-100000}
PERF=${PERF:-perf}
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
rec= pp= cal=
stop_at_exit rec pp cal
need_root "cprof record --all, perf record -a, kernel.bpf_stats_enabled"
need_tools "$PERF" "$BPFTOOL" jq gcc
${CC:-gcc} -O2 -pthread -o "$d/pingpong" "$src/bench/pingpong.c" || { echo "cannot build pingpong"; exit 1; }
# The calibration: an empty program on the same tracepoint (bench/switch_empty.bpf.c), attached in
# the same run: what bpf_stats reports for it is the stats' own clock reads, part of every run
# time it reports (on this guest about 45 ns of a run).  Needs clang and the build's vmlinux.h.
if command -v clang > /dev/null && [ -f "$b/bpf/vmlinux.h" ] &&
	clang -g -O2 -target bpf -I"$b/bpf" -c "$src/bench/switch_empty.bpf.c" -o "$d/switch_empty.bpf.o" 2> "$d/cal.err" &&
	${CC:-gcc} -O2 -o "$d/bpf_attach" "$src/bench/bpf_attach.c" -lbpf 2>> "$d/cal.err"; then
	mkfifo "$d/cal.in"
	"$d/bpf_attach" "$d/switch_empty.bpf.o" < "$d/cal.in" > "$d/cal.out" 2>> "$d/cal.err" &
	cal=$!
	exec 3> "$d/cal.in" # its input, open until the end
	i=0
	until grep -q attached "$d/cal.out" 2> /dev/null; do
		i=$((i + 1)); [ $i -lt 200 ] && kill -0 "$cal" 2> /dev/null || { cal=; break; }
		sleep 0.05
	done
fi
[ -n "$cal" ] || echo "(no calibration program: $(tail -1 "$d/cal.err" 2> /dev/null))"
# the run count and run time of the programs whose names start with $1
bpf_rt() { "$BPFTOOL" prog show -j | jq -r --arg p "$1" '[.[] | select((.name // "") | startswith($p))] | "\([.[].run_cnt // 0] | add // 0) \([.[].run_time_ns // 0] | add // 0)"'; }
bpf_stats_on
cpu_s() { cat /proc/"$1"/task/*/schedstat | awk '{ ns += $1 } END { printf "%.6f", ns / 1e9 }'; }
bpf_s() { "$BPFTOOL" prog show -j | jq '[.[] | select((.name // "") | startswith("cp_")) | .run_time_ns // 0] | add // 0 | . / 1e9'; }

echo "context-switch storm: two threads ping-ponging over pipes, ${SECS} s, paced to $RATE switches/s (0: unpaced); cprof record --all --off-cpu"
rec_start "$d/rec.err" "$b/cprof" record --all --off-cpu ${BENCH_RECORD_ARGS:-} --data "$d/store" --log-level debug
c0=$(cpu_s "$rec") b0=$(bpf_s) sw0=$(bpf_rt cp_switch) e0=$(bpf_rt bench_empty)
"$d/pingpong" "$SECS" "$RATE" > "$d/pp.out" &
pp=$!
wait "$pp"; pp=
c1=$(cpu_s "$rec") b1=$(bpf_s) sw1=$(bpf_rt cp_switch) e1=$(bpf_rt bench_empty)
sleep 1 # the last records drained
kill -INT "$rec"; wait "$rec" || { echo "cprof record failed"; tail -3 "$d/rec.err"; exit 1; }
rec=
set -- $(cat "$d/pp.out")
trips=$1 nsw=$4 steal=${5:-0}
exact=$(awk -v w="$2" -v c="$3" 'BEGIN { printf "%.0f", 2 * w - c }')
got=$("$b/cprof" query --data "$d/store" 'offcpu{comm="pingpong"}' --since 1h -f folded 2> /dev/null |
	awk '{ s += $NF } END { printf "%.0f", s }')
cpu=$(awk -v a="$c0" -v b="$c1" -v x="$b0" -v y="$b1" 'BEGIN { printf "%.3f", (b - a) + (y - x) }')
pct=$(awk -v c="$cpu" -v s="$SECS" 'BEGIN { printf "%.2f", 100 * c / s }')
sw=$(grep -o 'off-CPU: [0-9]* stacks sent' "$d/rec.err" | tail -1)
echo "  round trips: $trips; $nsw context switches of the two threads ($(awk -v t="$nsw" -v s="$SECS" 'BEGIN { printf "%.0f", t / s }')/s)"
echo "  cprof: $cpu s of CPU (user + sys + BPF) = $pct% of a core; $sw"
per=$(awk -v c0="$c0" -v c1="$c1" -v b0="$b0" -v b1="$b1" -v t="$nsw" 'BEGIN { if (t > 0) printf "%.0f ns per switch (BPF %.0f, user + sys %.0f)", (c1 - c0 + b1 - b0) * 1e9 / t, (b1 - b0) * 1e9 / t, (c1 - c0) * 1e9 / t }')
echo "  that is $per of the two threads; at 100k switches/s, $(awk -v c="$cpu" -v t="$nsw" -v s="$SECS" 'BEGIN { if (t > 0) printf "%.2f", 100 * c * 1e5 / t }')% of a core"
if [ -n "$cal" ]; then
	awk -v s0="$sw0" -v s1="$sw1" -v e0="$e0" -v e1="$e1" -v t="$nsw" -v secs="$SECS" -v cpu="$cpu" 'BEGIN {
		split(s0, a, " "); split(s1, b, " "); split(e0, x, " "); split(e1, y, " ")
		n = b[1] - a[1]; rt = b[2] - a[2]; en = y[1] - x[1]; et = y[2] - x[2]
		if (n > 0 && en > 0 && t > 0) {
			clk = n * et / en / 1e9 # s: the stats clock reads counted in the switch program
			printf "  the switch program: %.0f runs a second (%.2f a switch of the two), %.0f ns a run as bpf_stats reports\n", n / secs, n / t, rt / n
			printf "  it; an empty program on the same tracepoint in this run: %.0f ns a run, the stats%s own clock reads;\n", et / en, "\047"
			printf "  less those: %.3f s = %.2f%% of a core (not the cost: bpf_stats leaves out the dispatch to the\n", cpu - clk, 100 * (cpu - clk) / secs
			printf "  program; the cross-check below counts it)\n"
		} }'
fi
echo "  off-CPU time of the two threads: exact $(awk -v x="$exact" 'BEGIN { printf "%.3f", x / 1e9 }') s (2 x wall - CPU), cprof $(awk -v x="$got" 'BEGIN { printf "%.3f", x / 1e9 }') s: bias $(awk -v g="$got" -v x="$exact" 'BEGIN { printf "%+.1f%%", 100 * (g - x) / x }')"
# (the threads' CPU time leaves out what a hypervisor took meanwhile: up to that much of "exact" was no wait)
echo "  the machine's steal time over the storm: $(awk -v x="$steal" 'BEGIN { printf "%.3f", x / 1e9 }') s"

echo "perf record -e sched:sched_switch -a -g + perf script on the same storm"
"$d/pingpong" "$SECS" "$RATE" > /dev/null &
pp=$!
$TIME -f '%U %S' -o "$d/pr.t" "$PERF" record -e sched:sched_switch -a -g -o "$d/perf.data" -- sleep "$SECS" \
	> /dev/null 2> "$d/pr.err" || { echo "perf record failed"; tail -3 "$d/pr.err"; exit 1; }
wait "$pp"; pp=
$TIME -f '%U %S' -o "$d/ps.t" "$PERF" script -i "$d/perf.data" > /dev/null 2> "$d/ps.err" ||
	{ echo "perf script failed"; tail -3 "$d/ps.err"; exit 1; }
pcpu=$(cat "$d/pr.t" "$d/ps.t" | awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { s += $1 + $2 } END { printf "%.3f", s }')
echo "  perf: $pcpu s of CPU (record $(awk '{ printf "%.2f", $1 + $2 }' "$d/pr.t") s, script $(awk '{ printf "%.2f", $1 + $2 }' "$d/ps.t") s)"
rm -f "$d/perf.data"
# The cross-check, without bpf_stats: both ping-pong threads on one CPU, unpaced, so that the CPU is
# theirs alone and every switch is one of theirs; whatever cprof adds to a switch (its programs' run
# time and their dispatch, the caches they touch) is time per switch.  One ping-pong runs the whole
# check and reports its round trips every quarter second, while on another CPU cprof record --all
# --off-cpu and, as a control, cprof record --all without it are started and stopped in turn:
# BENCH_PINNED_CYCLES (6) of [nothing, --off-cpu, nothing, the control], BENCH_PINNED_SECONDS (3)
# each (the first half second after cprof starts left out).  On this guest one quarter second's ns a
# switch moves by a third from the next with nothing else running, so the windows of each kind are
# pooled and compared by their lower quartile (interference only adds time) and their median.
sysctl -qw kernel.bpf_stats_enabled="$_old_stats"
pinned=
if [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] && command -v taskset > /dev/null; then
	cyc=${BENCH_PINNED_CYCLES:-6} ph=${BENCH_PINNED_SECONDS:-3}
	taskset -c 0 "$d/pingpong" $((cyc * (4 * ph + 6) + 5)) 0 0.25 > /dev/null 2> "$d/pin.w" &
	pp=$!
	sleep 1
	: > "$d/pin.phases"
	i=0
	while [ "$i" -lt "$cyc" ]; do
		i=$((i + 1))
		for kind in off on off ctl; do
			if [ "$kind" = off ]; then
				t0=$(date +%s%N); sleep "$ph"; t1=$(date +%s%N)
				echo "off $t0 $t1" >> "$d/pin.phases"
				continue
			fi
			opt=; [ "$kind" = on ] && opt=--off-cpu
			rec_start "$d/rec2.err" taskset -c 1 "$b/cprof" record --all $opt ${BENCH_RECORD_ARGS:-} -o "$d/pin.pb.gz"
			t0=$(date +%s%N); sleep "$ph"; t1=$(date +%s%N)
			echo "$kind $((t0 + 500000000)) $t1" >> "$d/pin.phases"
			kill -INT "$rec"; wait "$rec" || { echo "cprof record failed"; tail -3 "$d/rec2.err"; exit 1; }
			rec=
		done
	done
	kill "$pp" 2> /dev/null; wait "$pp" 2> /dev/null || :; pp=
	# "KIND NS" for each window inside a phase: its ns a switch of the two threads
	awk 'FNR == NR { kind[NR] = $1; from[NR] = $2; to[NR] = $3; np = NR; next }
		$1 == "w" && $3 > 0 { for (k = 1; k <= np; k++) if ($2 - $4 >= from[k] && $2 <= to[k]) print kind[k], $4 / (2 * $3) }' \
		"$d/pin.phases" "$d/pin.w" > "$d/pin.vals"
	# q KIND FRACTION: that quantile of KIND's windows
	q() { awk -v k="$1" '$1 == k { print $2 }' "$d/pin.vals" | sort -n | awk -v f="$2" '{ v[NR] = $1 } END { printf "%.1f", NR ? v[int(NR * f) + 1] : 0 }'; }
	n_off=$(grep -c '^off ' "$d/pin.vals" || :) n_on=$(grep -c '^on ' "$d/pin.vals" || :) n_ctl=$(grep -c '^ctl ' "$d/pin.vals" || :)
	off25=$(q off 0.25) on25=$(q on 0.25) ctl25=$(q ctl 0.25) off50=$(q off 0.5) on50=$(q on 0.5) ctl50=$(q ctl 0.5)
	us=$(awk -v c0="$c0" -v c1="$c1" -v t="$nsw" 'BEGIN { printf "%.1f", (t > 0 ? (c1 - c0) * 1e9 / t : 0) }')
	add=$(awk -v a="$on25" -v b="$ctl25" 'BEGIN { printf "%.1f", a - b }')
	pinned=$(awk -v a="$add" -v u="$us" 'BEGIN { printf "%.2f", (a + u) * 1e5 / 1e9 * 100 }')
	echo "cross-check without bpf_stats: the two threads on one CPU, unpaced; ns a switch of quarter-second"
	echo "  windows ($n_off without cprof, $n_on with --off-cpu, $n_ctl with the CPU sampler alone), lower quartile / median:"
	echo "  without $off25 / $off50; --off-cpu $on25 / $on50; the control $ctl25 / $ctl50"
	echo "  (the control's difference from nothing, $(awk -v a="$ctl25" -v b="$off25" 'BEGIN { printf "%+.1f", a - b }') ns, is what any process on the other CPU does to"
	echo "  this one on this guest, which its CPU time does not show)"
	echo "  --off-cpu adds $add ns a switch to the control (lower quartiles: one program run each, its dispatch"
	echo "  included); with cprof's user + sys above ($us ns a switch): at 100k switches/s, $pinned% of a core"
fi
echo
echo "$(verdict '<=' "$pct" 2): cprof --off-cpu costs $pct% of a core in the storm of $(awk -v t="$nsw" -v s="$SECS" 'BEGIN { printf "%.0f", t / s }') switches/s (target <= 2% at ~100k/s)"
ratio=$(awk -v a="$cpu" -v b="$pcpu" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
echo "$(verdict '<=' "$ratio" 0.1): cprof's CPU is ${ratio}x perf's (target <= 1/10)"
