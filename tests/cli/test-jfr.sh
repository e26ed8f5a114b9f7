# Java Flight Recorder files: a recording that Debian's OpenJDK 17 writes while Work.java runs (a hot
# method, a contended lock, allocations, parked threads), read by cprof query -i, import, merge and
# diff, and compared with the JDK's own jfr summary (events per type) and jfr print (top methods).
# Broken and hostile recordings get a one-line error.
. "$srcdir/tests/cli/lib.sh"
JFIX="$FIXTURES/jfr"
if ! command -v javac >/dev/null 2>&1 || ! command -v jfr >/dev/null 2>&1; then
	ok "OpenJDK 17 is installed (javac, jfr: tools/setup.sh installs openjdk-17-jdk-headless)" false
	done_testing
	exit 1
fi

# ---- a recording of Work.java (3 s, settings=profile) ----
cp "$JFIX/Work.java" "$T/"
run javac -d "$T" "$T/Work.java"
is "$rc" 0 "javac compiles Work.java${err:+ ($err)}"
run java -Xmx256m -XX:StartFlightRecording=filename="$T/app.jfr",settings=profile -cp "$T" Work 3
is "$rc" 0 "java runs Work with the flight recorder"
ok "it wrote app.jfr" test -s "$T/app.jfr"
run jfr summary "$T/app.jfr"
summary=$out
count() { printf '%s\n' "$summary" | awk -v e="$1" '$1 == e {print $2; found=1} END {if (!found) print 0}'; }
# the sum of a sample type's values, from folded stacks
total() { "$CPROF" query -i "$1" -t "$2" -f folded | awk '{s += $NF} END {printf "%.0f\n", s}'; }
# the leaf that holds most of a type, and its value, from folded stacks
top_leaf() {
	"$CPROF" query -i "$1" -t "$2" -f folded |
		awk '{v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); t[f[n]] += v}
		     END {for (k in t) if (t[k] > b) {b = t[k]; m = k}; printf "%s %.0f\n", m, b}'
}
# the JDK's period for jdk.ExecutionSample in settings=profile
jfc=$(dirname "$(readlink -f "$(command -v java)")")/../lib/jfr/profile.jfc
period_ms=$(awk '/name="jdk.ExecutionSample"/ {f = 1} f && /name="period"/ {gsub(/<[^>]*>/, ""); print $1; exit}' "$jfc")
is "$period_ms" 10 "profile.jfc samples Java every 10 ms"
period=$((period_ms * 1000000))

n_exec=$(count jdk.ExecutionSample)
n_alloc=$(count jdk.ObjectAllocationSample)
n_lock=$(count jdk.JavaMonitorEnter)
n_park=$(count jdk.ThreadPark)
diag "jfr summary: $n_exec jdk.ExecutionSample, $n_alloc jdk.ObjectAllocationSample, $n_lock jdk.JavaMonitorEnter, $n_park jdk.ThreadPark"
ok "the recording has CPU samples, allocation samples, monitor waits and parks" \
	test "$n_exec" -gt 10 -a "$n_alloc" -gt 0 -a "$n_lock" -gt 0 -a "$n_park" -gt 0

# ---- cprof query -i app.jfr: every type side by side, counts as jfr summary's ----
run "$CPROF" query -i "$T/app.jfr" -n 5
is "$rc" 0 "query -i reads the recording${err:+ ($err)}"
like "$out" '^Type: cpu$' "the default type is cpu"
is "$(total "$T/app.jfr" cpu)" "$((n_exec * period))" "cpu: one 10 ms period per jdk.ExecutionSample ($n_exec)"
is "$(total "$T/app.jfr" alloc_sample_objects)" "$n_alloc" "alloc_sample_objects: one per jdk.ObjectAllocationSample"
is "$(total "$T/app.jfr" mutex_contentions)" "$n_lock" "mutex_contentions: one per jdk.JavaMonitorEnter"
is "$(total "$T/app.jfr" block_contentions)" "$n_park" "block_contentions: one per jdk.ThreadPark"
bytes=$(total "$T/app.jfr" alloc_sample_bytes)
ok "alloc_sample_bytes: the events' weights ($bytes bytes)" test "$bytes" -gt "$((n_alloc * 4096))"
delay=$(total "$T/app.jfr" mutex_delay)
ok "mutex_delay: the waits' durations ($delay ns)" test "$delay" -gt 0

# top methods: the leaf frames of jfr print's jdk.ExecutionSample stacks against cprof's
jtop=$(jfr print --events jdk.ExecutionSample "$T/app.jfr" |
	awk '/stackTrace = \[/ {getline; sub(/^ +/, ""); sub(/\(.*/, ""); n[$0]++}
	     END {for (k in n) if (n[k] > b) {b = n[k]; m = k}; print m, b}')
mtop=$(top_leaf "$T/app.jfr" cpu)
is "${mtop% *} $((${mtop#* } / period))" "$jtop" "the hottest method and its samples as jfr print has them ($jtop)"
is "${jtop% *}" "Work.hotLoop" "the hottest method is Work.hotLoop"
run "$CPROF" query -i "$T/app.jfr" -n 1
like "$out" 'Work\.hotLoop$' "query's top row is Work.hotLoop"
jlock=$(jfr print --events jdk.JavaMonitorEnter "$T/app.jfr" |
	awk '/stackTrace = \[/ {getline; sub(/^ +/, ""); sub(/\(.*/, ""); n[$0]++}
	     END {for (k in n) if (n[k] > b) {b = n[k]; m = k}; print m, b}')
mlock=$(top_leaf "$T/app.jfr" mutex_contentions)
is "$mlock" "$jlock" "the most contended method as jfr print has it ($jlock)"
like "$(top_leaf "$T/app.jfr" alloc_sample_bytes)" '^Work\.allocate ' "most bytes are allocated in Work.allocate"
like "$(top_leaf "$T/app.jfr" block_delay)" '^jdk\.internal\.misc\.Unsafe\.park ' "parked in Unsafe.park"
run "$CPROF" query -i "$T/app.jfr" -t cpu -f folded
like "$out" '^java\.lang\.Thread\.run;.*Work\.lambda\$main\$0;Work\.contend;Work\.hotLoop [0-9]+$' \
	"stacks root first: Thread.run, the worker lambda, contend, hotLoop"
run "$CPROF" query -i "$T/app.jfr" -t nosuch
like "$err" "alloc_sample_bytes, mutex_contentions" "an unknown type lists the recording's types"

# gzipped, as Pyroscope's agents may send it
gzip -c "$T/app.jfr" > "$T/app.jfr.gz"
is "$(total "$T/app.jfr.gz" block_contentions)" "$n_park" "a gzipped recording reads the same"

# a file of two chunks (as a long recording's repository rolls over): jfr summary counts both
cat "$T/app.jfr" "$T/app.jfr" > "$T/twochunks.jfr"
run jfr summary "$T/twochunks.jfr"
like "$out" 'Chunks: 2' "jfr summary sees two chunks"
summary=$out
is "$(total "$T/twochunks.jfr" mutex_contentions) $(total "$T/twochunks.jfr" alloc_sample_objects)" \
	"$(count jdk.JavaMonitorEnter) $(count jdk.ObjectAllocationSample)" "two chunks: the counts of jfr summary"
summary=$(jfr summary "$T/app.jfr")

# ---- merge and diff take recordings ----
run "$CPROF" merge -o "$T/two.pb.gz" "$T/app.jfr" "$T/app.jfr.gz"
is "$rc" 0 "merge takes two recordings${err:+ ($err)}"
is "$(total "$T/two.pb.gz" mutex_contentions)" "$((2 * n_lock))" "merged: twice the contentions"
run "$CPROF" diff "$T/app.jfr" "$T/two.pb.gz"
is "$rc" 0 "diff takes a recording${err:+ ($err)}"

# ---- import: one profile type per event type, named as Pyroscope names them ----
run "$CPROF" import --data "$T/store" "$T/app.jfr"
is "$rc" 0 "import takes the recording${err:+ ($err)}"
run "$CPROF" query --data "$T/store" --types
is "$out" "block:contentions:count:block:count:delta
block:delay:nanoseconds:block:count:delta
memory:alloc_sample_bytes:bytes:space:bytes:delta
memory:alloc_sample_objects:count:space:bytes:delta
mutex:contentions:count:mutex:count:delta
mutex:delay:nanoseconds:mutex:count:delta
process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta" "the stored types are Pyroscope's"
stored() { "$CPROF" query --data "$T/store" --from 2000-01-01 -f folded "$1" | awk '{s += $NF} END {printf "%.0f\n", s}'; }
is "$(stored process_cpu)" "$((n_exec * period))" "stored process_cpu: the samples times the period"
is "$(stored mutex:contentions:count:mutex:count:delta)" "$n_lock" "stored mutex contentions: jfr summary's count"
is "$(stored block:contentions:count:block:count:delta)" "$n_park" "stored block contentions: jfr summary's count"
is "$(stored memory:alloc_sample_objects:count:space:bytes:delta)" "$n_alloc" "stored allocation samples: jfr summary's count"

# ---- broken and hostile recordings: one line on stderr, exit 1, never a crash ----
one_line_error() { # FILE DESCRIPTION PATTERN
	run "$CPROF" query -i "$1"
	is "$rc" 1 "$2: exit 1"
	is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 1 "$2: one line"
	like "$err" "^cprof query: .*$3" "$2: says why"
}
head -c 5000 "$T/app.jfr" > "$T/cut.jfr"
one_line_error "$T/cut.jfr" "a recording cut short" "cut short"
size=$(wc -c < "$T/app.jfr")
# the chunk's size (bytes 8-15) said to be the cut length: the reader goes on into the cut metadata
python3 - "$T/app.jfr" "$T/cut2.jfr" 60000 << 'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read()[:int(sys.argv[3])])
d[8:16] = struct.pack(">Q", len(d))
open(sys.argv[2], "wb").write(d)
EOF
one_line_error "$T/cut2.jfr" "a chunk cut with its size" "not a valid JFR file"
{ printf 'FLR\000\000\002\000\001'; head -c 200 /dev/urandom; } > "$T/junk.jfr"
one_line_error "$T/junk.jfr" "junk after the magic" "(not a valid JFR file|not supported)"
python3 - "$T/app.jfr" "$T/huge.jfr" << 'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
d[24:32] = struct.pack(">Q", 2**63)
open(sys.argv[2], "wb").write(d)
EOF
one_line_error "$T/huge.jfr" "a metadata offset of 2^63" "metadata offset is outside its chunk"
run "$CPROF" import --data "$T/store2" "$T/cut.jfr"
is "$rc" 1 "import refuses a recording cut short"
like "$err" "nothing was imported" "and imports nothing"

# ---- context labels, as Pyroscope's Java agent pushes them: async-profiler's events carry a
# contextId, the push's labels part (a LabelsSnapshot, encoded here by protobufjs from
# proto/jfr/labels.proto) names each context's labels.  The events are written by the JVM
# (tests/fixtures/jfr/Ctx.java: 30 in context 1, 20 in context 2, 5 in none) ----
cp "$JFIX/Ctx.java" "$T/"
run javac -d "$T" "$T/Ctx.java"
is "$rc" 0 "javac compiles Ctx.java${err:+ ($err)}"
run java -XX:StartFlightRecording=filename="$T/ctx.jfr" -cp "$T" Ctx
is "$rc" 0 "java writes profiler.WallClockSample events with a contextId"
run jfr summary "$T/ctx.jfr"
is "$(printf '%s\n' "$out" | awk '$1 == "profiler.WallClockSample" {print $2}')" 55 "jfr summary counts the 55 events"
wall=$(total "$T/ctx.jfr" wall)
like "$wall" '^[1-9][0-9]*$' "cprof query -i reads them as wall time ($wall)"
use_test_npm
if node -e 'require("protobufjs")' 2>/dev/null; then
	node -e '
const protobuf = require("protobufjs"), fs = require("fs");
const S = protobuf.loadSync(process.argv[1]).lookupType("cprof.jfr.LabelsSnapshot");
const m = S.fromObject({ contexts: { 1: { labels: { 10: 11 } }, 2: { labels: { 10: 12, 13: 14 } } },
	strings: { 10: "span_name", 11: "GET /a", 12: "GET /b", 13: "user", 14: "ann" } });
fs.writeFileSync(process.argv[2], S.encode(m).finish());' "$srcdir/proto/jfr/labels.proto" "$T/labels.pb"
	ok "protobufjs encoded the labels part" test -s "$T/labels.pb"
	serve_start jserve --listen 127.0.0.1:0 --data "$T/jstore"
	trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
	http POST '/ingest?name=ctxapp' -F 'jfr=@'"$T/ctx.jfr" -F 'labels=@'"$T/labels.pb"
	is "$code" 200 "a form with the jfr and labels parts: 200 ($body)"
	stored() { "$CPROF" query --data "$T/jstore" --since 24h "$1" -f json | jq -r .total; }
	per=$((wall / 55))
	is "$(stored 'wall:wall{service_name="ctxapp"}')" "$wall" "all of it stored"
	is "$(stored 'wall:wall{service_name="ctxapp",span_name="GET /a"}')" "$((30 * per))" \
		"context 1's 30 events under span_name=\"GET /a\""
	is "$(stored 'wall:wall{service_name="ctxapp",span_name="GET /b",user="ann"}')" "$((20 * per))" \
		"context 2's 20 under its two labels"
	is "$(stored 'wall:wall{service_name="ctxapp",span_name=""}')" "$((5 * per))" "the 5 without a context, without them"
	run "$CPROF" query --data "$T/jstore" --since 24h 'wall:wall{service_name="ctxapp"}' --group-by contextId -f folded
	unlike "$out" 'contextId=[1-9]' "no contextId is stored: the labels stand for it"
	run "$CPROF" query --data "$T/jstore" --since 24h 'wall:wall{service_name="ctxapp",span_name="GET /a"}' -f folded
	like "$out" 'Ctx.spanA' "and its stacks are spanA's"
	printf 'not a snapshot \377\377\377' >"$T/bad.pb"
	http POST '/ingest?name=ctxbad' -F 'jfr=@'"$T/ctx.jfr" -F 'labels=@'"$T/bad.pb"
	is "$code" 400 "a labels part that is no LabelsSnapshot: 400"
	like "$body" "labels part is not a LabelsSnapshot" "saying so"
	node -e '
const protobuf = require("protobufjs"), fs = require("fs");
const S = protobuf.loadSync(process.argv[1]).lookupType("cprof.jfr.LabelsSnapshot");
fs.writeFileSync(process.argv[2], S.encode(S.fromObject({ contexts: { 1: { labels: { 10: 99 } } }, strings: { 10: "a" } })).finish());' \
		"$srcdir/proto/jfr/labels.proto" "$T/dangling.pb"
	http POST '/ingest?name=ctxbad' -F 'jfr=@'"$T/ctx.jfr" -F 'labels=@'"$T/dangling.pb"
	is "$code" 400 "a context label whose value is no string of the snapshot: 400"
	like "$body" "refers to string 99" "naming it"
	is "$("$CPROF" query --data "$T/jstore" --since 24h --series '{service_name="ctxbad"}' | wc -l | tr -d ' ')" 0 \
		"nothing of the refused pushes stored"
else
	ok "protobufjs is installed (tools/setup.sh)" false
fi
done_testing
