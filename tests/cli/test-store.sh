# The store: import, selectors, time ranges, lists, group-by, over-time,
# merge and diff of stored selections, retention, errors.
. "$srcdir/tests/cli/lib.sh"
D=$T/store
b="$FIXTURES/cpu-before.pb.gz"
a="$FIXTURES/cpu-after.pb.gz"
h="$FIXTURES/heap.pb.gz"
total() { "$CPROF" query "$@" -f json | jq .total; }
cpu_b=$("$CPROF" query -i "$b" -f json | jq .total)
cpu_a=$("$CPROF" query -i "$a" -f json | jq .total)

run "$CPROF" import --data "$D" -l host=a -l version=1.2 --time now-3h "$b" "$h"
is "$rc" 0 "import exits 0"
like "$out" "^imported 2 profiles into $D$" "import says what it did"
ok "the store has an index" test -f "$D/store.db"
ok "and a partition for the profiles' day" test -n "$(ls "$D/days/"*.db)"
"$CPROF" import --data "$D" -l host=b -l version=1.3 --time now-10m "$a" >/dev/null

run "$CPROF" query --data "$D" --types
like "$out" '^process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta$' "--types: the CPU time series type"
like "$out" '^memory:inuse_space:bytes:space:bytes$' "--types: heap types, one per sample type"
is "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 6 "--types: 2 CPU + 4 heap types"
run "$CPROF" query --data "$D" --labels
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "host version " "--labels"
run "$CPROF" query --data "$D" --values host
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "a b " "--values host"
run "$CPROF" query --data "$D" --series 'process_cpu:cpu{host=~"a|b"}'
is "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 2 "--series filtered by a selector"
like "$out" '^process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\{host="b", version="1\.3"\}$' "--series prints selectors"
run "$CPROF" query --data "$D" --values host -f json
is "$(printf '%s' "$out" | jq -c .)" '["a","b"]' "lists as JSON"

# selection: totals as in the files
is "$(total --data "$D" --since 1000d 'process_cpu:cpu{host="a"}')" "$cpu_b" "a selector gives the stored profile's total"
is "$(total --data "$D" --since 1000d 'process_cpu:cpu')" "$((cpu_b + cpu_a))" "a selector over two series merges them"
is "$(total --data "$D" --since 1000d 'process_cpu:cpu{version!="1.2"}')" "$cpu_a" "!= matcher"
is "$(total --data "$D" --since 1000d 'process_cpu:cpu{version=~"1\\.[3-9]"}')" "$cpu_a" "=~ matcher (anchored)"
run "$CPROF" query --data "$D" --since 1000d 'process_cpu:cpu{host=~"b.+"}'
like "$err" 'no stored series match' "anchored: b.+ does not match b"
is "$(total --data "$D" --since 30m 'process_cpu:cpu')" "$cpu_a" "--since 30m: only the profile imported at now-10m"
is "$(total --data "$D" --from now-1h --to now-5m 'process_cpu:cpu')" "$cpu_a" "--from/--to with now-..."
from=$(date -u -d '3 hours ago 2 minutes ago' +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d '3 hours ago 2 minutes' +%Y-%m-%dT%H:%M:%SZ)
is "$(total --data "$D" --from "$from" --to "$to" 'process_cpu:cpu')" "$cpu_b" "--from/--to in RFC 3339"
"$CPROF" import --data "$T/own" "$b" >/dev/null
bt=$("$CPROF" query -i "$b" -f json | jq .time_nanos)
is "$(total --data "$T/own" --from "$((bt / 1000000000 - 1))" --to "$((bt / 1000000000 + 1))" 'process_cpu:cpu')" "$cpu_b" \
	"without --time a profile is stored at its own time (unix seconds in --from/--to)"
run "$CPROF" query --data "$D" --since 1000d 'process_cpu:cpu{host="a"}' -f folded
is "$out" "$("$CPROF" query -i "$b" -t cpu -f folded)" "stored stacks come back as they went in"
run "$CPROF" query --data "$D" --since 1000d 'memory:inuse_space' -n 3
like "$out" '4MB .*main\.allocBig' "heap series keep their values"
run "$CPROF" query --data "$D" --since 1000d 'process_cpu:cpu{host="a"}' --focus gamma -f folded
unlike "$out" 'alpha' "--focus works on stored profiles"

# group-by
run "$CPROF" query --data "$D" --since 1000d process_cpu:cpu --group-by host -n 1
like "$out" '^== host="a"$' "--group-by: a report per value (a)"
like "$out" '^== host="b"$' "--group-by: a report per value (b)"
run "$CPROF" query --data "$D" --since 1000d process_cpu:cpu --group-by version -f folded
like "$out" '^version=1\.3;runtime\.main;main\.main;main\.work;main\.viaDelta;main\.gamma [0-9]+$' \
	"--group-by with folded: the value is the root frame"

# over time
run "$CPROF" query --data "$D" --since 1h process_cpu:cpu --over-time --step 5m
is "$rc" 0 "--over-time exits 0"
like "$out" '^Sparkline: ' "--over-time draws a sparkline"
like "$out" 'step 5mins' "--over-time names the step"
run "$CPROF" query --data "$D" --since 1h process_cpu:cpu --over-time --step 5m -f json
is "$(printf '%s' "$out" | jq '[.points[].value] | add')" "$cpu_a" "--over-time: the steps add up to the total in range"

# over time: buckets are aligned to multiples of the step since the epoch, so
# that the same data draws the same bars whatever "now" is.  Two profiles at
# known times in a 5m grid: before at base+30s, after at base+570s (bucket 1).
base=$(( ($(date +%s) / 300 - 12) * 300 ))
"$CPROF" import --data "$T/ot" --time "$((base + 30))" "$b" >/dev/null
"$CPROF" import --data "$T/ot" --time "$((base + 570))" "$a" >/dev/null
ot() { "$CPROF" query --data "$T/ot" --from "$1" --to "$2" process_cpu:cpu --over-time --step 5m -f json; }
ot "$((base + 20))" "$((base + 1200))" >"$T/ot1.json"
ot "$((base + 100))" "$((base + 1290))" >"$T/ot2.json"
ok "--over-time: the same buckets and values from and to 80-90 s later (within a step)" cmp -s "$T/ot1.json" "$T/ot2.json"
is "$(jq -c '[.points[].value]' "$T/ot2.json")" "[$cpu_b,$cpu_a,0,0,0]" \
	"--over-time: whole buckets, the last one holds --to (5 of 5m: a profile 70 s before --from is in the first)"
is "$(jq -c '[.from, .step, .to]' "$T/ot1.json")" "[${base}000000000,300000000000,$((base + 1500))000000000]" \
	"--over-time -f json: from and to are the buckets' bounds, multiples of the step"
is "$(jq '[.points[] | .time % 300000000000] | add' "$T/ot1.json")" 0 "--over-time: every bucket starts at a multiple of the step"
is "$(jq '[.points[].value] | add' "$T/ot1.json")" \
	"$(total --data "$T/ot" --from "$base" --to "$((base + 1500))" process_cpu:cpu)" "--over-time: the buckets add up to the total over their range"
run "$CPROF" query --data "$T/ot" --from "$((base + 20))" --to "$((base + 1200))" process_cpu:cpu --over-time --step 5m
like "$out" "^From $(date -u -d "@$base" '+%Y-%m-%d %H:%M:%S') to $(date -u -d "@$((base + 1500))" '+%Y-%m-%d %H:%M:%S') UTC, step 5mins" \
	"--over-time: the table says the buckets' range"
like "$out" "^$(date -u -d "@$((base + 300))" '+%Y-%m-%d %H:%M:%S') " "--over-time: rows start on the grid"

# merge and diff of selections
run "$CPROF" merge --data "$D" --since 1000d 'process_cpu:cpu{host="a"}' 'process_cpu:cpu{host="b"}' -f json
is "$(printf '%s' "$out" | jq .total)" "$((cpu_a + cpu_b))" "merge of two selectors"
run "$CPROF" diff --data "$D" --since 1000d 'process_cpu:cpu{version="1.2"}' 'process_cpu:cpu{version="1.3"}' -f json
mine=$(printf '%s' "$out" | jq -c '[.rows[] | select(.name | startswith("main.")) | [.name, .delta]] | sort')
theirs=$("$CPROF" diff -t cpu -f json "$b" "$a" | jq -c '[.rows[] | select(.name | startswith("main.")) | [.name, .delta]] | sort')
is "$mine" "$theirs" "diff of two stored selections = diff of the files"
run "$CPROF" diff --data "$D" --before-range now-1000d..now-30m --after-range now-30m..now -f json process_cpu:cpu
is "$(printf '%s' "$out" | jq -c '[.rows[] | select(.name | startswith("main.")) | [.name, .delta]] | sort')" "$theirs" \
	"diff of one selector at two time ranges"

# errors
run "$CPROF" query --data "$D" 'process_cpu{host="a"'
is "$rc" 2 "a bad selector is a usage error"
like "$err" "bad selector at column 21: missing '}'" "and names the column"
run "$CPROF" query --data "$D" --since 1000d process_cpu -f json
is "$(printf '%s' "$out" | jq .total)" "$(total --data "$D" --since 1000d process_cpu:cpu)" \
	"a name of two types (process_cpu: cpu and samples) is its main type, as in Pyroscope (process_cpu:cpu)"
run "$CPROF" query --data "$D" --since 1000d '{host="a"}'
is "$rc" 1 "types of two names fail"
like "$err" 'matches [0-9]+ profile types; name one: memory:.*process_cpu:cpu:nanoseconds' "and list the types"
run "$CPROF" query --data "$D" 'nosuch'
like "$err" 'no stored series match' "nothing matching says so"
run "$CPROF" query --data "$T/nowhere" --types
is "$rc" 1 "a missing store fails"
like "$err" "no store at $T/nowhere: import or record profiles first" "and says what to do"
run "$CPROF" query --data "$D" --since yesterday x
is "$rc" 2 "a bad duration is a usage error"
run "$CPROF" query --data "$D" --from 2026-13-45 x
like "$err" "bad time '2026-13-45'" "a bad time names it"
run "$CPROF" query --data "$D" -i "$b" x
is "$rc" 2 "files and selectors do not mix in query"
run "$CPROF" query --data "$D" --since 1000d process_cpu:cpu --group-by host -f pprof
is "$rc" 2 "--group-by with pprof is refused"

# import is all or nothing
printf 'junk\001' > "$T/junk.pb"
n0=$("$CPROF" query --data "$D" --series | wc -l)
run "$CPROF" import --data "$D" "$a" "$T/junk.pb"
is "$rc" 1 "importing a corrupt file fails"
like "$err" 'junk\.pb: .*\(nothing was imported\)' "and says nothing was imported"
is "$("$CPROF" query --data "$D" --series | wc -l)" "$n0" "no series were added"
run "$CPROF" import --data "$D" -l 'bad-name=x' "$a"
is "$rc" 2 "a bad label name is a usage error"
run "$CPROF" import --data "$D" -l '__name__=x' "$a"
is "$rc" 2 "a reserved label name (__*) is a usage error (the one -l rule of record, scrape and import)"
like "$err" "reserved" "saying why"
run "$CPROF" import --data /proc/cprof-test "$a"
is "$rc" 1 "an unwritable store fails"
like "$err" 'cannot create /proc/cprof-test' "and names the directory"

# folded files import too, and CPROF_DATA picks the store
printf 'main;a 3\nmain;b 1\n' > "$T/x.folded"
run env CPROF_DATA="$T/env" "$CPROF" import --name app --time now "$T/x.folded"
is "$rc" 0 "CPROF_DATA: import"
run env CPROF_DATA="$T/env" "$CPROF" query 'app' -f folded
is "$out" "$(printf 'main;a 3\nmain;b 1')" "CPROF_DATA: query; --name sets the type name"

# retention drops whole old days
"$CPROF" import --data "$T/ret" --time now-40d "$a" >/dev/null
"$CPROF" import --data "$T/ret" --time now "$b" >/dev/null
is "$(ls "$T/ret/days" | grep -c '\.db$')" 2 "two days, two partitions"
run "$CPROF" import --data "$T/ret" --retention 30d --time now "$b"
is "$(ls "$T/ret/days" | grep -c '\.db$')" 1 "--retention 30d deletes the 40-day-old partition"
is "$(total --data "$T/ret" --since 1000d process_cpu:cpu)" "$((2 * cpu_b))" "and keeps the recent data"

# dedup: the same profile ten times adds samples, not stacks
for i in 1 2 3 4 5 6 7 8 9 10; do "$CPROF" import --data "$T/dd" --time "now-${i}m" "$b" >/dev/null; done
# (the stacks of the days' dictionaries: two days when this runs just after midnight)
stacks() { for p in "$T/dd"/days/*.db; do sqlite3 "$p" "select sum(count) from chunks where kind = 'stacks'"; done |
	awk '{ n += $1 } END { print n }'; }
s1=$(stacks)
"$CPROF" import --data "$T/dd" --time now "$b" >/dev/null
is "$(stacks)" "$s1" "stacks are stored once"
is "$(total --data "$T/dd" --since 1h process_cpu:cpu)" "$((11 * cpu_b))" "samples add up over imports"
# a corrupt store: a clear error, never a crash
mkdir -p "$T/bad"
head -c 4096 /dev/urandom > "$T/bad/store.db"
run "$CPROF" query --data "$T/bad" --types
is "$rc" 1 "a corrupt store.db fails with 1"
like "$err" "^cprof query: .*$T/bad" "and names the store"
cp -r "$T/dd" "$T/dd2"
for p in "$T/dd2"/days/*.db; do head -c 3000 "$p" > "$p.x" && mv "$p.x" "$p"; rm -f "$p-wal" "$p-shm"; done
run "$CPROF" query --data "$T/dd2" --since 1h process_cpu:cpu
is "$rc" 1 "a truncated partition fails with 1"
like "$err" "^cprof query: " "with a one-line error"

# a query's Duration runs to the end of its last profile (#47): the Go profile, 2.21 s long, three
# times 10 s apart, is 22.21 s of data, not the 20 s between the first and the last one's start
dur=$("$CPROF" query -i "$b" -f json | jq .duration_nanos)
for k in 0 10 20; do "$CPROF" import --data "$T/dur" --time "2026-11-20T10:00:${k}Z" "$b" >/dev/null; done
run "$CPROF" query --data "$T/dur" --from 2026-11-20T09:00:00Z --to 2026-11-20T11:00:00Z process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq .duration_nanos)" "$((20000000000 + dur))" \
	"a query's duration: from the first profile's start to the last one's end ($((20000000000 + dur)) ns)"
run "$CPROF" query --data "$T/dur" --from 2026-11-20T09:00:00Z --to 2026-11-20T11:00:00Z process_cpu:cpu
like "$out" "^Duration: 22\\.2[0-9]*s, Total samples = 6\\.12s \\(27\\.[0-9]*%\\)" \
	"the top table's Duration, and the share of it the samples stand for"
run "$CPROF" query --data "$T/dur" --from 2026-11-20T10:00:05Z --to 2026-11-20T10:00:21Z process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq .duration_nanos)" "$((21000000000 - 10000000000))" \
	"cut at the range's end: the profile at 10 s to the range's end at 21 s"
done_testing
