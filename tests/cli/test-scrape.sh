#!/bin/sh
# cprof scrape against real Go net/http/pprof targets (tests/fixtures/scrape/
# target.go, one process per target, each burning CPU, allocating, blocking
# and contending in known functions): one-shot scrapes of every profile type
# checked with cprof query and go tool pprof; a continuous run of a Parca
# scrape config with good and bad targets (down, garbage, slow, 500) in the
# same job (the good ones keep their schedule, the bad ones are retried and
# reported); config errors; --once; --targets; serve --config (the API, the
# targets and /metrics); --remote into a server with a token.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy CPROF_REMOTE CPROF_TOKEN_FILE CPROF_DATA
[ -n "$GO" ] || skip_all "go is not installed (apt-get install golang-go)"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
# every background process, killed at exit ($(jobs -p) is empty in dash's trap subshell)
PIDS=
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
export HOME="$T"
# the default data directory (where a --remote scraper keeps its state), never /var/lib/cprof
CPROF_DATA=$T/default-data
export CPROF_DATA

if ! GOCACHE=$T/gocache GO111MODULE=off "$GO" build -o "$T/target" "$FIXTURES/scrape/target.go" 2>"$T/gobuild.err"; then
	ok "go build of tests/fixtures/scrape/target.go" false
	sed 's/^/# /' "$T/gobuild.err"
	done_testing
	exit
fi

# ---- helpers ----
# start_target NAME ARGS...: a target process; sets ADDR (HOST:PORT) and TPID.
# Its requests are logged in $T/NAME.log as "UNIXMILLI ADDR PATH?QUERY".
start_target() {
	_name=$1
	shift
	: >"$T/$_name.addr" # (not only in the background job, which may not have run yet when it is read)
	"$T/target" -die-after 300s -v "$@" >"$T/$_name.addr" 2>>"$T/$_name.log" &
	TPID=$!
	PIDS="$PIDS $TPID"
	_i=0
	while [ $_i -lt 100 ] && ! [ -s "$T/$_name.addr" ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	ADDR=$(head -n 1 "$T/$_name.addr")
}
# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s; 1 at the deadline
wait_for() {
	_w=$(($1 * 5))
	shift
	while [ "$_w" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
		_w=$((_w - 1))
	done
	return 1
}
# hits NAME PATH-REGEX: how many requests target NAME logged for paths matching
hits() { awk -v re="$2" '$3 ~ re' "$T/$1.log" | wc -l | tr -d ' '; }
# one_line DESCRIPTION: $err is one line "cprof scrape: ..." (and the -h hint of a usage error)
one_line() {
	printf '%s\n' "$err" | grep -v "^Try 'cprof scrape -h' for more information\.$" >"$T/.lines"
	if [ "$(wc -l <"$T/.lines")" = 1 ] && grep -q "^cprof scrape: " "$T/.lines"; then _result 0 "$1"; else
		_result 1 "$1"
		printf '%s\n' "$err" | head -n 5 | sed 's/^/#   stderr: /'
	fi
}
# cum FILE FUNCTION: the cum value of FUNCTION in a profile file (cprof query -i)
cum() { "$CPROF" query -i "$1" -f json | jq --arg f "$2" '[.top[] | select(.name == $f) | .cum] | add // 0'; }
# share FILE FUNCTION [SAMPLE-TYPE]: FUNCTION's cum as a percentage of the total
share() {
	"$CPROF" query -i "$1" ${3:+-t "$3"} -f json |
		jq --arg f "$2" '(([.top[] | select(.name == $f) | .cum] | add // 0) * 100 / (if .total > 0 then .total else 1 end)) | floor'
}
# gotop FILE [ARGS]: the first function of go tool pprof -top (by flat)
gotop() { f=$1; shift; "$GO" tool pprof -top "$@" "$f" 2>/dev/null | awk '$1 ~ /^[0-9.]/ && NF >= 6 {print $6; exit}'; }
# total SELECTOR: the stored total (local store $D)
total() { "$CPROF" query --data "$D" --since 10m "$1" -f json 2>/dev/null | jq '.total // 0'; }
# fcum SELECTOR FUNCTION: the cum of FUNCTION in the stored profile
fcum() {
	"$CPROF" query --data "$D" --since 10m "$1" -f json 2>/dev/null |
		jq --arg f "$2" '[.top[] | select(.name == $f) | .cum] | add // 0'
}

# ---- the targets ----
start_target g1 -cpu 0.25 -goroutines 11
G1=$ADDR G1PID=$TPID
start_target g2 -cpu 0.25 -goroutines 13
G2=$ADDR
start_target g3 -cpu 0.25 -goroutines 17
G3=$ADDR
start_target g4 -cpu 0.1 -goroutines 3
G4=$ADDR
start_target garbage -mode garbage
GARBAGE=$ADDR
start_target garbagegz -mode garbagegz
GARBAGEGZ=$ADDR
start_target slow -mode slow -delay 1h
SLOW=$ADDR
start_target error -mode error
ERROR=$ADDR
start_target down -mode error
DOWN=$ADDR
kill "$TPID"
wait "$TPID" 2>/dev/null
like "$G1 $G2 $G3 $G4 $GARBAGE $GARBAGEGZ $SLOW $ERROR $DOWN" '^(127\.0\.0\.1:[0-9]+ ?){9}$' "nine targets started (one stopped: down)"
ok "the down target's port is closed" sh -c "! curl -s -m 2 http://$DOWN/"

# ---- usage ----
run "$CPROF" scrape -h
is "$rc" 0 "scrape -h exits 0"
like "$out" '--config' "it lists --config"
like "$out" '--once' "and --once"
like "$out" '--targets' "and --targets"
like "$out" '--profile' "and --profile"
run "$CPROF" scrape
is "$rc" 2 "no URL and no --config: usage error"
one_line "in one line"
run "$CPROF" scrape "ftp://$G1"
is "$rc" 2 "an ftp:// URL: usage error"
one_line "in one line"
run "$CPROF" scrape --seconds 0 "http://$G1"
is "$rc" 2 "--seconds 0: usage error"
run "$CPROF" scrape --timeout soon "http://$G1"
is "$rc" 2 "--timeout soon: usage error"
run "$CPROF" scrape -l 'bad-name=1' "http://$G1"
is "$rc" 2 "a bad label name: usage error"
run "$CPROF" scrape -l team=a -l team=b -o "$T/twice.pb.gz" "http://$G1"
is "$rc" 2 "a label name given twice: usage error (the one -l rule of record, scrape and import)"
like "$err" "label 'team' is given twice" "saying which"
run "$CPROF" scrape --config /dev/null --retention soon
is "$rc" 2 "--retention soon: usage error"

# ---- one-shot scrapes ----
t0=$(date +%s%N)
run "$CPROF" scrape --seconds 2 -o "$T/cpu.pb.gz" "http://$G1"
t1=$(date +%s%N)
is "$rc" 0 "scrape --seconds 2 -o cpu.pb.gz http://G1: exit 0"
ok "it took the 2 s it asked for ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -ge 1900 -a $(((t1 - t0) / 1000000)) -lt 6000
like "$(grep '/debug/pprof/profile' "$T/g1.log" | tail -n 1)" 'profile\?seconds=2$' "the target was asked for /debug/pprof/profile?seconds=2"
is "$("$CPROF" query -i "$T/cpu.pb.gz" -f json | jq -r '.top[0].name')" main.cpuHog "cprof query -i: main.cpuHog comes first"
s=$(share "$T/cpu.pb.gz" main.cpuHog cpu)
ok "main.cpuHog has most of the CPU ($s%)" test "$s" -ge 60
is "$(gotop "$T/cpu.pb.gz")" main.cpuHog "go tool pprof -top reads the file: main.cpuHog first"
d=$("$GO" tool pprof -raw "$T/cpu.pb.gz" 2>/dev/null | awk '/^Duration:/ {print $2; exit}')
like "$d" '^(1\.9|2\.[0-3])' "the profile covers ~2 s (Duration: $d)"
cpu_total=$("$CPROF" query -i "$T/cpu.pb.gz" -t cpu -f json | jq .total)
ok "its CPU total is plausible for 0.25 of a core over 2 s ($cpu_total ns)" \
	test "$cpu_total" -ge 200000000 -a "$cpu_total" -le 1500000000

run "$CPROF" scrape --profile memory -o "$T/mem.pb.gz" "http://$G1"
is "$rc" 0 "--profile memory: exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/allocs$' "memory is /debug/pprof/allocs, cumulative (no seconds=)"
is "$(gotop "$T/mem.pb.gz" -sample_index=alloc_space)" main.allocHog "go tool pprof: main.allocHog allocates most"
s=$(share "$T/mem.pb.gz" main.allocHog alloc_space)
ok "cprof query -i agrees (main.allocHog $s% of alloc_space)" test "$s" -ge 50

# ---- cumulative profiles are stored as what happened between scrapes (#47 item 2) ----
# Go's allocs profile counts alloc_* since the program started.  Real scrapes of G1 (c1..c3, a second
# apart) and of a target started afresh (r1, r2: a restart, its totals start again) are served in
# that order, one a request, by a replay server; a continuous scraper stores what each scrape adds.
for i in 1 2 3; do curl -s -o "$T/c$i.pb.gz" "http://$G1/debug/pprof/allocs"; sleep 1; done
start_target fresh
FRESH=$ADDR
curl -s -o "$T/r1.pb.gz" "http://$FRESH/debug/pprof/allocs"
sleep 1
curl -s -o "$T/r2.pb.gz" "http://$FRESH/debug/pprof/allocs"
kill "$TPID"
cat >"$T/replay.py" <<'PYEOF'
import http.server, sys
files, served = sys.argv[2:], [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        data = open(files[min(served[0], len(files) - 1)], 'rb').read()
        served[0] += 1
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with open(sys.argv[1], 'w') as f:
            f.write('%d\n' % served[0])
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
print('127.0.0.1:%d' % s.server_port, flush=True)
s.serve_forever()
PYEOF
python3 "$T/replay.py" "$T/replay.n" "$T/c1.pb.gz" "$T/c2.pb.gz" "$T/c3.pb.gz" "$T/r1.pb.gz" "$T/r2.pb.gz" >"$T/replay.addr" &
PIDS="$PIDS $!"
wait_for 10 test -s "$T/replay.addr"
REPLAY=$(cat "$T/replay.addr")
cat >"$T/cum.yaml" <<EOF
scrape_configs:
  - job_name: cum
    scrape_interval: 1s
    static_configs:
      - targets: ['$REPLAY']
    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        goroutine: {enabled: false}
EOF
D=$T/cum
"$CPROF" scrape --config "$T/cum.yaml" --data "$D" -q 2>"$T/cum.err" &
cpid=$!
PIDS="$PIDS $cpid"
served() { [ "$(cat "$T/replay.n" 2>/dev/null || echo 0)" -ge 6 ]; }
wait_for 20 served
kill -TERM "$cpid"
wait "$cpid"
is "$?" 0 "the scraper of the replayed scrapes stopped with exit 0"
atot() { "$CPROF" query -i "$1" -t alloc_space -f json | jq .total; }
a1=$(atot "$T/c1.pb.gz") a3=$(atot "$T/c3.pb.gz") b2=$(atot "$T/r2.pb.gz")
# Go's own difference of two scrapes: go tool pprof -diff_base
gd=$("$GO" tool pprof -raw -sample_index=alloc_space -diff_base "$T/c1.pb.gz" "$T/c3.pb.gz" 2>/dev/null |
	awk '/^Samples:/ {s = 1; next} /^Locations/ {s = 0} s && $1 ~ /^-?[0-9]+$/ {t += $2} END {print t + 0}')
is "$gd" "$((a3 - a1))" "go tool pprof -diff_base c1 c3: the allocations between them are c3's totals less c1's"
stored=$("$CPROF" query --data "$D" --from 2000-01-01T00:00:00Z 'memory:alloc_space{job="cum"}' -f json | jq .total)
is "$stored" "$((a3 - a1 + b2))" \
	"stored alloc_space: what c2 and c3 added to c1, then all of r1 (the restart), then what r2 added: c3 - c1 + r2 ($stored)"
ok "not the scrapes' totals summed ($((a1 + a3 + b2)) and more)" test "$stored" -lt "$((a1 + a3))"
is "$("$CPROF" query --data "$D" --types | grep -c '^memory:alloc_space:bytes:space:bytes:delta$')" 1 \
	"the differences are stored as a delta type"
is "$("$CPROF" query --data "$D" --types | grep -c '^memory:inuse_space:bytes:space:bytes$')" 1 \
	"in-use memory, a gauge, as a value at a time (not :delta), from the first scrape on"
ok "the last scrape is kept in the data directory for the next run" test -n "$(ls "$D/scrape-last" 2>/dev/null)"

run "$CPROF" scrape --profile block -o "$T/block.pb.gz" "http://$G1"
is "$rc" 0 "--profile block: exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/block$' "from /debug/pprof/block"
s=$(share "$T/block.pb.gz" main.blockHog delay)
ok "main.blockHog has most of the blocking delay ($s%)" test "$s" -ge 40
ok "go tool pprof shows main.blockHog" sh -c "'$GO' tool pprof -top -sample_index=delay '$T/block.pb.gz' 2>/dev/null | grep -q 'main\.blockHog\$'"

run "$CPROF" scrape --profile mutex -o "$T/mutex.pb.gz" "http://$G1"
is "$rc" 0 "--profile mutex: exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/mutex$' "from /debug/pprof/mutex"
s=$(share "$T/mutex.pb.gz" main.mutexHog delay)
ok "main.mutexHog has the mutex delay ($s%)" test "$s" -ge 80

run "$CPROF" scrape --profile goroutine -o "$T/gor.pb.gz" "http://$G1"
is "$rc" 0 "--profile goroutine: exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/goroutine$' "from /debug/pprof/goroutine"
is "$(cum "$T/gor.pb.gz" main.parked)" 11 "main.parked: the 11 goroutines the target parked"
is "$("$GO" tool pprof -top -nodefraction=0 "$T/gor.pb.gz" 2>/dev/null | awk '$NF == "main.parked" {print $4}')" 11 \
	"go tool pprof counts the same 11"

run "$CPROF" scrape --profile heap -o "$T/heap.pb.gz" "http://$G1"
is "$rc" 0 "--profile heap: exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/heap$' "from /debug/pprof/heap"
run "$CPROF" scrape --profile threadcreate -o "$T/tc.pb.gz" "http://$G1"
is "$rc" 0 "--profile threadcreate (a name without a built-in path): exit 0"
like "$(tail -n 1 "$T/g1.log")" ' /debug/pprof/threadcreate$' "from /debug/pprof/threadcreate"
run "$CPROF" scrape -o "$T/url.pb.gz" "http://$G2/debug/pprof/goroutine?debug=0"
is "$rc" 0 "a full URL with a path and a query: exit 0"
like "$(tail -n 1 "$T/g2.log")" ' /debug/pprof/goroutine\?debug=0$' "that URL was fetched as given"
is "$(cum "$T/url.pb.gz" main.parked)" 13 "G2's 13 parked goroutines"

# into the store
D=$T/one
run "$CPROF" scrape --profile goroutine --data "$D" -l team=perf "http://$G2"
is "$rc" 0 "a scrape without -o goes into the store: exit 0"
is "$("$CPROF" query --data "$D" --series)" "goroutine:goroutine:count:goroutine:count{instance=\"$G2\", job=\"scrape\", team=\"perf\"}" \
	"one series: job=\"scrape\", instance=HOST:PORT and the -l label"
is "$(fcum "goroutine{instance=\"$G2\"}" main.parked)" 13 "it holds G2's 13 parked goroutines"
run "$CPROF" scrape --seconds 1 --data "$D" "http://$G2"
is "$rc" 0 "a CPU scrape (the default profile) into the store: exit 0"
like "$("$CPROF" query --data "$D" --series "{instance=\"$G2\"}")" \
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\\{instance=\"$G2\", job=\"scrape\"\\}" "stored as process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
like "$("$CPROF" query --data "$D" --series)" 'process_cpu:samples:count:cpu:nanoseconds:delta' "each sample type its own series"
ok "with CPU in it" test "$(total "process_cpu:cpu{instance=\"$G2\"}")" -gt 0

# one-shot failures
t0=$(date +%s%N)
run "$CPROF" scrape --profile memory -o "$T/x.pb.gz" "http://$DOWN"
is "$rc" 1 "a closed port: exit 1"
one_line "in one line"
like "$err" "$DOWN.*(refused|connect)" "naming the address and the refusal"
run "$CPROF" scrape --profile memory -o "$T/x.pb.gz" "http://$GARBAGE"
is "$rc" 1 "a target answering junk: exit 1"
one_line "in one line"
like "$err" "$GARBAGE.*(not a|malformed|invalid|decode)" "naming the address and saying it is no profile"
run "$CPROF" scrape --profile memory -o "$T/x.pb.gz" "http://$GARBAGEGZ"
is "$rc" 1 "a target answering gzipped junk: exit 1"
like "$err" "$GARBAGEGZ.*(not a|malformed|invalid|decode)" "naming the address and saying it is no profile"
run "$CPROF" scrape --profile memory -o "$T/x.pb.gz" "http://$ERROR"
is "$rc" 1 "a target answering 500: exit 1"
like "$err" '500' "naming the status"
t0=$(date +%s%N)
run "$CPROF" scrape --profile memory --timeout 1s -o "$T/x.pb.gz" "http://$SLOW"
t1=$(date +%s%N)
is "$rc" 1 "a target slower than --timeout 1s: exit 1"
like "$err" '[Tt]ime(out|d out)' "saying it timed out"
ok "after ~1 s ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -ge 900 -a $(((t1 - t0) / 1000000)) -lt 3000
ok "no output file was left by the failures" test ! -e "$T/x.pb.gz"

# ---- config errors: exit 2, one line naming the file:line, nothing stored ----
cfg_err() { # DESCRIPTION MESSAGE-REGEX: the YAML is $T/bad.yaml
	rm -rf "$T/bad-data"
	run "$CPROF" scrape --config "$T/bad.yaml" --data "$T/bad-data" --once
	is "$rc" 2 "$1: exit 2"
	one_line "$1: one line"
	like "$err" "$2" "$1: the message says what and where"
	ok "$1: nothing stored (no store created)" test ! -e "$T/bad-data"
}
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ["%s"]\n    scrape_intervall: 1s\n' "$G1" >"$T/bad.yaml"
cfg_err "an unknown key" "bad\\.yaml:5:.*scrape_intervall"
printf 'scrape_configs:\n  - job_name: a\n    scrape_interval: 2s\n    scrape_timeout: 2s\n    static_configs:\n      - targets: ["%s"]\n' "$G1" >"$T/bad.yaml"
cfg_err "timeout = interval with the delta process_cpu" "bad\\.yaml:[0-9]+:.*timeout"
printf 'scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    static_configs:\n      - targets: ["%s"]\n    profiling_config:\n      pprof_config:\n        process_cpu: {seconds: 30}\n' "$G1" >"$T/bad.yaml"
cfg_err "process_cpu seconds 30 > the default timeout (8s)" "bad\\.yaml:[0-9]+:.*(timeout|seconds)"
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ["%s", "nohostport"]\n' "$G1" >"$T/bad.yaml"
cfg_err "target nohostport" "bad\\.yaml:4:.*nohostport"
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets:\n          - host:99999\n' >"$T/bad.yaml"
cfg_err "target host:99999" "bad\\.yaml:5:.*host:99999"
printf 'scrape_configs:\n  - job_name: a\n    scrape_interval: 10 parsecs\n    static_configs:\n      - targets: ["%s"]\n' "$G1" >"$T/bad.yaml"
cfg_err "scrape_interval: 10 parsecs" "bad\\.yaml:3:.*10 parsecs"
printf 'scrape_configs:\n  - static_configs:\n      - targets: ["%s"]\n' "$G1" >"$T/bad.yaml"
cfg_err "a job without job_name" "bad\\.yaml:[0-9]+:.*job_name"
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ["%s"]\n        labels: {bad-name: x}\n' "$G1" >"$T/bad.yaml"
cfg_err "a bad label name" "bad\\.yaml:5:.*bad-name"
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ["%s"]\n    profiling_config:\n      pprof_config:\n        memory: {enabled: maybe}\n' "$G1" >"$T/bad.yaml"
cfg_err "enabled: maybe" "bad\\.yaml:7:.*enabled"
printf 'scrape_configs:\n  - job_name: a\n    static_configs: []\n' >"$T/bad.yaml"
cfg_err "a job without targets" "targets"
printf 'scrape_configs: [unclosed\n' >"$T/bad.yaml"
cfg_err "broken YAML" "bad\\.yaml:[0-9]+:"
run "$CPROF" scrape --config "$T/none.yaml" --data "$T/bad-data" --once
ok "a missing config file fails ($rc)" test "$rc" -ne 0
like "$err" 'none\.yaml' "naming the file"
printf 'scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ["%s"]\n' "$G1" >"$T/ok.yaml"
run "$CPROF" scrape --config "$T/ok.yaml" "http://$G1"
is "$rc" 2 "--config and a URL together: usage error"
run "$CPROF" scrape --config "$T/ok.yaml" --data "$T/bad-data" --remote "http://127.0.0.1:1"
is "$rc" 2 "--data and --remote together: usage error"

# ---- --once ----
cat >"$T/once.yaml" <<EOF
scrape_configs:
  - job_name: once
    scrape_interval: 1s
    static_configs:
      - targets: ['$G1', '$G2']
    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
EOF
D=$T/once
t0=$(date +%s%N)
run "$CPROF" scrape --config "$T/once.yaml" --data "$D" --once
t1=$(date +%s%N)
is "$rc" 0 "--once with good targets: exit 0"
ok "promptly ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 5000
is "$("$CPROF" query --data "$D" --series '{job="once"}' | sed 's/{.*//' | sort -u | tr '\n' ' ')" \
	"goroutine:goroutine:count:goroutine:count memory:inuse_objects:count:space:bytes memory:inuse_space:bytes:space:bytes " \
	"the enabled profiles were stored, each sample type a series; the cumulative ones (alloc_*) not yet: a first scrape is where they are counted from"
is "$("$CPROF" query --data "$D" --series 'goroutine{job="once"}' | wc -l | tr -d ' ')" 2 "one per target"
# a second run (as from cron) takes the difference from the first's scrapes, kept in the data directory
run "$CPROF" scrape --config "$T/once.yaml" --data "$D" --once
is "$rc" 0 "--once again: exit 0"
is "$("$CPROF" query --data "$D" --series '{job="once"}' | sed 's/{.*//' | sort -u | tr '\n' ' ')" \
	"goroutine:goroutine:count:goroutine:count memory:alloc_objects:count:space:bytes:delta memory:alloc_space:bytes:space:bytes:delta memory:inuse_objects:count:space:bytes memory:inuse_space:bytes:space:bytes " \
	"and stores what was allocated since the first run as a delta type"
is "$(fcum "goroutine{job=\"once\",instance=\"$G1\"}" main.parked)/$(fcum "goroutine{job=\"once\",instance=\"$G2\"}" main.parked)" \
	"11/13" "instance=G1 holds G1's goroutines, instance=G2 G2's: their average over the two runs' scrapes, not their sum"
ok "it wrote DIR/scrape-targets.json" jq -e 'length == 4' "$D/scrape-targets.json"
cat >"$T/once-bad.yaml" <<EOF
scrape_configs:
  - job_name: oncebad
    static_configs:
      - targets: ['$G1', '$DOWN']
    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        memory: {enabled: false}
EOF
run "$CPROF" scrape --config "$T/once-bad.yaml" --data "$D" --once
is "$rc" 1 "--once with a down target: exit 1"
like "$err" "$DOWN" "the failed target is named on stderr"
ok "the good target of that run was stored" test "$(fcum "goroutine{job=\"oncebad\",instance=\"$G1\"}" main.parked)" = 11
run "$CPROF" scrape --targets --data "$T/one"
is "$rc" 1 "--targets where no scraper ran: exit 1"
one_line "in one line"
run "$CPROF" scrape --targets --data "$D" -f json
is "$rc" 0 "scrape --targets --data D -f json: exit 0"
is "$(printf '%s' "$out" | jq -r --arg i "$DOWN" '.[] | select(.instance == $i) | .health')" down "the down target: health down"
is "$(printf '%s' "$out" | jq -r --arg i "$G1" '.[] | select(.job == "oncebad" and .instance == $i) | .health')" up "the good one: up"

# ---- continuous: good and bad targets in one job, a second job ----
cat >"$T/scrape.yaml" <<EOF
scrape_configs:
  - job_name: app
    scrape_interval: 1s
    scrape_timeout: 2s
    static_configs:
      - targets: ['$G1', '$G2']
        labels: {env: test, group: a}
      - targets: ['$G3', '$DOWN', '$GARBAGE', '$SLOW', '$ERROR']
        labels: {env: test, group: b}
    profiling_config:
      pprof_config:
        process_cpu: {seconds: 1}
        memory:
          keep_sample_type:
            - {type: alloc_space, unit: bytes}
        mutex: {enabled: false}
        wallclock: {path: /debug/pprof/goroutine}
  - job_name: solo
    scrape_interval: 2s
    scrape_timeout: 3s
    params: {foo: [bar]}
    static_configs:
      - targets: ['$G4']
    profiling_config:
      pprof_config:
        memory: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        goroutine: {enabled: false}
EOF
D=$T/cont
for n in g1 g2 g3 g4 garbage slow error; do : >"$T/$n.log"; done
cpu0=$(awk '{print $14 + $15}' "/proc/$G1PID/stat")
"$CPROF" scrape --config "$T/scrape.yaml" --data "$D" >"$T/cont.out" 2>"$T/cont.err" &
spid=$!
PIDS="$PIDS $spid"
t0=$(date +%s)
running() { kill -0 "$spid" 2>/dev/null; }
enough() { # five rounds of the good targets, two failures of each bad one
	for n in g1 g2 g3; do [ "$(hits $n '/debug/pprof/allocs$')" -ge 5 ] || return 1; done
	for n in garbage error; do [ "$(hits $n '/debug/pprof/allocs$')" -ge 2 ] || return 1; done
	"$CPROF" scrape --targets --data "$D" -f json 2>/dev/null |
		jq -e '[.[] | select(.profile == "memory" and .failures >= 2)] | length == 4' >/dev/null && running
}
wait_for 15 enough
ok "five rounds of the good targets and two failures of each bad one within 15 s ($(($(date +%s) - t0)) s)" enough
ok "the scraper is still running" running
# the state while it runs
run "$CPROF" scrape --targets --data "$D" -f json
tj=$(date +%s)
is "$rc" 0 "--targets while the scraper runs: exit 0"
printf '%s' "$out" >"$T/targets.json"
q() { jq -r "$1" "$T/targets.json"; }
is "$(q '[.[] | select(.job == "app")] | length')" 35 "app: 7 targets x 5 enabled profiles"
is "$(q '[.[] | select(.job == "solo")] | length')" 1 "solo: 1 target x process_cpu"
for a in "$G1" "$G2" "$G3"; do
	is "$(q "[.[] | select(.instance == \"$a\" and .job == \"app\") | .health] | unique | join(\",\")")" up "good target $a: up in every profile"
done
for a in "$DOWN" "$GARBAGE" "$SLOW" "$ERROR"; do
	is "$(q "[.[] | select(.instance == \"$a\") | .health] | unique | join(\",\")")" down "bad target $a: down in every profile"
	ok "$a: failed more than once (retried)" test "$(q "[.[] | select(.instance == \"$a\" and .profile == \"memory\") | .failures] | add")" -ge 2
done
like "$(q ".[] | select(.instance == \"$DOWN\" and .profile == \"memory\") | .last_error")" '(refused|connect)' "down: the error says the connection was refused"
like "$(q ".[] | select(.instance == \"$SLOW\" and .profile == \"memory\") | .last_error")" '[Tt]ime(out|d out)' "slow: the error says it timed out"
ok "slow: the attempt took the 2 s timeout" \
	test "$(q ".[] | select(.instance == \"$SLOW\" and .profile == \"memory\") | .last_duration_seconds * 10 | floor")" -ge 18 -a \
	"$(q ".[] | select(.instance == \"$SLOW\" and .profile == \"memory\") | .last_duration_seconds * 10 | floor")" -le 30
like "$(q ".[] | select(.instance == \"$ERROR\" and .profile == \"memory\") | .last_error")" '500' "error: the error has the status 500"
like "$(q ".[] | select(.instance == \"$GARBAGE\" and .profile == \"memory\") | .last_error")" '(not a|malformed|invalid|decode)' "garbage: the error says it is no profile"
ok "the good targets' last scrapes are recent (within 3 s of reading the state)" \
	test "$(q "[.[] | select(.health == \"up\" and .profile == \"memory\") | .last_scrape | if type == \"number\" then (if . > 1e15 then . / 1e9 elif . > 1e12 then . / 1e3 else . end) else (sub(\"\\\\.[0-9]+\"; \"\") | fromdateiso8601) end | floor] | min")" -ge $((tj - 3))
is "$(q '[.[] | select(.health == "up") | .last_error // ""] | unique | join("")')" "" "up targets have no error"
run "$CPROF" scrape --targets --data "$D"
like "$out" "$SLOW.*down|down.*$SLOW" "the table for people shows the slow target down"
like "$out" "$G1.*up|up.*$G1" "and G1 up"
kill -TERM "$spid"
t1=$(date +%s%N)
wait "$spid"
rc=$?
t2=$(date +%s%N)
is "$rc" 0 "SIGTERM stops cprof scrape with exit 0"
ok "within 3 s, a slow scrape in flight notwithstanding ($(((t2 - t1) / 1000000)) ms)" test $(((t2 - t1) / 1000000)) -lt 3000
cpu1=$(awk '{print $14 + $15}' "/proc/$G1PID/stat")
run_s=$(($(date +%s) - t0))
diag "ran ${run_s}s; G1 made $(hits g1 '/debug/pprof/allocs$') allocs and $(hits g1 '/debug/pprof/profile') CPU requests"

# the good targets' schedule was kept (the slow one, 2 s per attempt, did not hold it up)
gaps=$(awk '$3 ~ /\/debug\/pprof\/allocs$/ { if (p) { g = $1 - p; if (g > m) m = g }; p = $1 } END { print m + 0 }' "$T/g1.log")
ok "G1's memory scrapes came every ~1 s: the largest gap is $gaps ms (< 1800)" test "$gaps" -lt 1800 -a "$gaps" -gt 500
is "$(grep -c '/debug/pprof/profile?seconds=1$' "$T/g1.log")" "$(hits g1 '/debug/pprof/profile')" "G1's CPU requests all ask for seconds=1"
ok "G1 got at least 3 CPU scrapes" test "$(hits g1 '/debug/pprof/profile')" -ge 3
is "$(hits g1 '/debug/pprof/mutex')" 0 "mutex (enabled: false) was never fetched"
ok "the custom entry fetched /debug/pprof/goroutine as well: twice the goroutine requests" \
	test "$(hits g1 '/debug/pprof/goroutine$')" -ge $((2 * $(hits g1 '/debug/pprof/allocs$') - 2))
like "$(grep '/debug/pprof/profile' "$T/g4.log" | head -n 1)" 'seconds=2' "solo: delta without seconds asks for the interval (2 s)"
like "$(grep '/debug/pprof/profile' "$T/g4.log" | head -n 1)" 'foo=bar' "solo: with the job's params"
ok "solo: every 2 s (${run_s}s: $(hits g4 '/debug/pprof/profile') requests)" test "$(hits g4 '/debug/pprof/profile')" -ge 2 -a \
	"$(hits g4 '/debug/pprof/profile')" -le $((run_s / 2 + 2))
like "$(cat "$T/cont.err")" "$SLOW" "the slow target is logged on stderr"
like "$(cat "$T/cont.err")" "$GARBAGE" "the garbage target too"
like "$(cat "$T/cont.err")" "$DOWN.*(refused|connect)" "the down one with its error"
like "$(cat "$T/cont.err")" "$ERROR.*500" "the 500 one with its status"

# what was stored
want="block:contentions:count:contentions:count:delta
block:delay:nanoseconds:contentions:count:delta
goroutine:goroutine:count:goroutine:count
memory:alloc_space:bytes:space:bytes:delta
process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta
process_cpu:samples:count:cpu:nanoseconds:delta
wallclock:goroutine:count:goroutine:count"
is "$("$CPROF" query --data "$D" --series "{job=\"app\",instance=\"$G1\"}" | sed 's/{.*//' | sort)" "$want" \
	"G1: a series per sample type of the enabled profiles; keep_sample_type left memory:alloc_space only; no mutex; the custom entry"
is "$("$CPROF" query --data "$D" --series "{job=\"app\",instance=\"$G3\"}" | sed 's/{.*//' | sort)" "$want" "G3: the same"
is "$("$CPROF" query --data "$D" --series "goroutine{job=\"app\",instance=\"$G1\"}")" \
	"goroutine:goroutine:count:goroutine:count{env=\"test\", group=\"a\", instance=\"$G1\", job=\"app\"}" \
	"G1's series carry job, instance and its group's static labels"
like "$("$CPROF" query --data "$D" --series "goroutine{instance=\"$G3\"}")" 'group="b"' "G3's its own group's"
is "$("$CPROF" query --data "$D" --series "{instance=~\"$DOWN|$GARBAGE|$SLOW|$ERROR\"}" | wc -l | tr -d ' ')" 0 "nothing stored for the bad targets"
is "$("$CPROF" query --data "$D" --series '{job="solo"}' | sed 's/{.*//' | sort | tr '\n' ' ')" \
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta process_cpu:samples:count:cpu:nanoseconds:delta " "solo: process_cpu only"
run "$CPROF" scrape --targets --data "$D" -f json
printf '%s' "$out" >"$T/targets.json"
for spec in "$G1:11" "$G2:13" "$G3:17"; do
	a=${spec%:*} ng=${spec##*:}
	c=$(fcum "goroutine{job=\"app\",instance=\"$a\"}" main.parked)
	n=$(q ".[] | select(.instance == \"$a\" and .profile == \"goroutine\") | .scrapes")
	# goroutines are a gauge: over a range, their average (the same at every scrape), never their sum
	is "$c" "$ng" "instance $a: main.parked = its $ng goroutines, the average over its $n scrapes (not $((ng * n)))"
	is "$(fcum "wallclock{job=\"app\",instance=\"$a\"}" main.parked)" "$ng" "the custom entry too"
done
n=$(q ".[] | select(.instance == \"$G1\" and .profile == \"process_cpu\") | .scrapes")
cpu=$(total "process_cpu:cpu{job=\"app\",instance=\"$G1\"}")
per=$((cpu / (n > 0 ? n : 1) / 1000000))
ok "G1's CPU per 1 s scrape is about the 0.25 core it burns ($per ms in each of $n)" test "$per" -ge 100 -a "$per" -le 500
used=$(((cpu1 - cpu0) * 1000 / $(getconf CLK_TCK)))
ok "and all of it ($((cpu / 1000000)) ms) no more than G1 used while scraped ($used ms)" test $((cpu / 1000000)) -le $((used + 50))
s=$("$CPROF" query --data "$D" "process_cpu:cpu{instance=\"$G2\"}" -f json | jq -r '.top[0].name')
is "$s" main.cpuHog "G2's stored CPU profile: main.cpuHog first"
ok "G1's stored allocations: main.allocHog" test "$(fcum "memory:alloc_space{instance=\"$G1\"}" main.allocHog)" -gt 0

# ---- cprof serve --config: the same jobs inside the server ----
printf 's3cr3t\n' >"$T/token"
cat >"$T/serve.yaml" <<EOF
scrape_configs:
  - job_name: srv
    scrape_interval: 1s
    scrape_timeout: 2s
    static_configs:
      - targets: ['$G1', '$DOWN']
        labels: {env: serve}
    profiling_config:
      pprof_config:
        process_cpu: {seconds: 1}
        block: {enabled: false}
        mutex: {enabled: false}
EOF
"$CPROF" serve --listen 127.0.0.1:0 --data "$T/srv" --config "$T/serve.yaml" --token-file "$T/token" >"$T/srv.out" 2>"$T/srv.err" &
srvpid=$!
PIDS="$PIDS $srvpid"
wait_for 10 grep -q '^listening on ' "$T/srv.out"
URL=$(awk '/^listening on / {print $3; exit}' "$T/srv.out")
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "serve --config starts"
get() { _p=$1; shift; curl -s -H 'Authorization: Bearer s3cr3t' "$URL$_p" "$@"; }
srv_ready() { # G1's goroutine scraped twice and the down one failed twice
	get /api/v1/targets >"$T/st.json" &&
		jq -e --arg g "$G1" --arg d "$DOWN" '([.[] | select(.instance == $g and .profile == "goroutine" and .health == "up" and .scrapes >= 2)] | length == 1) and
		([.[] | select(.instance == $d and .profile == "goroutine" and .health == "down" and .failures >= 2)] | length == 1)' "$T/st.json"
}
wait_for 10 srv_ready
ok "GET /api/v1/targets: G1 up after two scrapes, the down target down after two failures" srv_ready
is "$(jq -r 'map(.job) | unique | join(",")' "$T/st.json")" srv "the targets are the config's job"
is "$(jq 'length' "$T/st.json")" 6 "2 targets x 3 enabled profiles"
like "$(jq -r --arg d "$DOWN" '.[] | select(.instance == $d and .profile == "memory") | .last_error' "$T/st.json")" '(refused|connect)' \
	"with the down target's error"
is "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/targets")" 401 "the targets need the token"
wait_for 5 sh -c "curl -s -H 'Authorization: Bearer s3cr3t' -G '$URL/api/v1/series' --data-urlencode 'query=process_cpu:cpu{job=\"srv\"}' | jq -e 'length == 1'"
is "$(get /api/v1/series -G --data-urlencode "query=goroutine{job=\"srv\"}" | jq -c '.[0].labels')" \
	"{\"env\":\"serve\",\"instance\":\"$G1\",\"job\":\"srv\"}" "the scraped series are queryable through the API, with their labels"
is "$(get /api/v1/series -G --data-urlencode "query=process_cpu:cpu{job=\"srv\"}" | jq -r '.[0].type')" \
	process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta "and the CPU one"
c=$(get /api/v1/profile -G --data-urlencode "query=goroutine{job=\"srv\"}" --data-urlencode from=now-1h -d format=json | jq '.total')
ok "the goroutine profile has data ($c)" test "${c:-0}" -gt 0
get /metrics >"$T/metrics"
like "$(cat "$T/metrics")" "cprof_scrape_up\\{job=\"srv\",instance=\"$G1\",profile=\"goroutine\"\\} 1" "/metrics: cprof_scrape_up 1 for G1"
like "$(cat "$T/metrics")" "cprof_scrape_up\\{job=\"srv\",instance=\"$DOWN\",profile=\"goroutine\"\\} 0" "and 0 for the down target"
# (the 1 s CPU profile takes 1 s and a little more, much more on a loaded
# machine; but the first may join one that an earlier scraper started in the
# same target process, and end sooner: the second is the server's own)
cpu_scraped_twice() {
	get /api/v1/targets | jq -e --arg g "$G1" \
		'[.[] | select(.instance == $g and .profile == "process_cpu" and .scrapes >= 2)] | length == 1' >/dev/null
}
wait_for 10 cpu_scraped_twice
get /metrics >"$T/metrics2"
d=$(awk -v i="$G1" 'index($0, "cprof_scrape_last_duration_seconds{") == 1 && index($0, "instance=\"" i "\"") &&
	index($0, "profile=\"process_cpu\"") { print $2 }' "$T/metrics2")
ok "cprof_scrape_last_duration_seconds: 1 s or a little more for the 1 s CPU profile ($d)" \
	awk -v d="${d:-0}" 'BEGIN { exit !(d >= 0.9 && d < 10) }'
awk -v d="${d:-0}" 'BEGIN { exit !(d >= 0.9 && d < 10) }' ||
	get /api/v1/targets | jq -c --arg g "$G1" '.[] | select(.instance == $g)' | sed 's/^/#   /'
ok "cprof_scrape_failures_total counts the down target's failures" \
	test "$(awk -v i="$DOWN" 'index($0, "cprof_scrape_failures_total{") == 1 && index($0, "instance=\"" i "\"") && index($0, "profile=\"goroutine\"") {print int($2)}' "$T/metrics")" -ge 2
run "$CPROF" scrape --targets --remote "$URL" --token-file "$T/token" -f json
is "$rc" 0 "scrape --targets --remote URL: exit 0"
is "$(printf '%s' "$out" | jq -r --arg g "$G1" '[.[] | select(.instance == $g) | .health] | unique | join(",")')" up "it shows the server's targets: G1 up"
is "$(printf '%s' "$out" | jq -r --arg d "$DOWN" '[.[] | select(.instance == $d) | .health] | unique | join(",")')" down "and the down one down"

# ---- --remote: a scraper pushing into the server ----
cat >"$T/remote.yaml" <<EOF
scrape_configs:
  - job_name: pushed
    scrape_interval: 1s
    static_configs:
      - targets: ['$G2']
    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
EOF
run "$CPROF" scrape --config "$T/remote.yaml" --remote "$URL" --once
is "$rc" 1 "--remote without the server's token: exit 1"
like "$err" '401|[Tt]oken|[Uu]nauthori' "saying the token is wrong"
"$CPROF" scrape --config "$T/remote.yaml" --remote "$URL" --token-file "$T/token" >"$T/push.out" 2>"$T/push.err" &
ppid=$!
PIDS="$PIDS $ppid"
# (the memory profile's alloc_* from its second scrape on: the first is where they are counted from)
pushed() { get /api/v1/series -G --data-urlencode 'query=goroutine{job="pushed"}' | jq -e 'length == 1' &&
	get /api/v1/series -G --data-urlencode 'query=memory:alloc_space{job="pushed"}' | jq -e 'length == 1'; }
wait_for 8 pushed
ok "cprof scrape --config F --remote URL: the server has the scraped series" pushed
remote_state() { # the --remote scraper's state (written every second) in the default data dir
	"$CPROF" scrape --targets -f json 2>/dev/null |
		jq -r --arg g "$G2" '[.[] | select(.job == "pushed" and .instance == $g) | .health] | unique | join(",")'
}
remote_up() { [ "$(remote_state)" = up ]; }
wait_for 3 remote_up
is "$(remote_state)" up "scrape --targets (the default data dir) shows the --remote scraper's targets: up"
kill -INT "$ppid"
wait "$ppid"
is "$?" 0 "and it stops on SIGINT with exit 0"
is "$(get /api/v1/series -G --data-urlencode 'query=memory{job="pushed"}' | jq -r '[.[].type] | sort | join(" ")')" \
	"memory:alloc_objects:count:space:bytes:delta memory:alloc_space:bytes:space:bytes:delta memory:inuse_objects:count:space:bytes memory:inuse_space:bytes:space:bytes" \
	"every memory sample type as its own series (the cumulative ones as the differences between scrapes)"
c=$(get /api/v1/profile -G --data-urlencode "query=goroutine{job=\"pushed\",instance=\"$G2\"}" --data-urlencode from=now-1h -d format=json |
	jq --arg f main.parked '[.top[] | select(.name == $f) | .cum] | add // 0')
ok "G2's 13 parked goroutines per pushed scrape ($c)" test "$((c % 13))" = 0 -a "$c" -ge 13
# ---- --remote-api pyroscope: the same scrapes pushed to the server's Pyroscope /ingest ----
run "$CPROF" scrape --config "$T/remote.yaml" --remote "$URL" --token-file "$T/token" --remote-api pyroscope --once
is "$rc" 0 "scrape --once --remote-api pyroscope: exit 0"
is "$(get /api/v1/series -G --data-urlencode 'query=goroutines{service_name="pushed"}' | jq -r '[.[].type] | join(" ")')" \
	"goroutines:goroutine:count:goroutine:count" "pushed to /ingest: the job names the service, the goroutines named as Pyroscope names them"
is "$(get /api/v1/series -G --data-urlencode 'query=goroutines{service_name="pushed"}' | jq -r '.[0].labels.instance')" "$G2" \
	"and the instance is a tag"
like "$(get /api/v1/series -G --data-urlencode 'query=memory{service_name="pushed"}' | jq -r '[.[].type] | sort | join(" ")')" \
	'memory:inuse_space:bytes:space:bytes' "the heap as memory:inuse_space:bytes:space:bytes"
kill -TERM "$srvpid"
wait "$srvpid"
is "$?" 0 "the server stops on SIGTERM with exit 0"

reports=$(cat "$T"/*.err 2>/dev/null | grep -E 'AddressSanitizer|LeakSanitizer|runtime error' | head -5)
is "$reports" "" "no sanitizer reports"
done_testing
