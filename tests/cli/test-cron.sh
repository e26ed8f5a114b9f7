#!/bin/sh
# The cron recipe, contrib/cron.d/cprof: its job line is checked (every 10
# minutes, as root, under flock -n, cprof record --all --duration 60s), then
# its command is run as cron would (sh -c), with this build's cprof, a lock
# and a store under the scratch dir and a 3 s capture, against a workload with
# known functions (tests/fixtures/record/work.c): two runs started together do
# not overlap (one records, the other exits at once with flock's status 1 and
# nothing stored), the capture shows the workload, and a run after the first
# has finished records again.  Needs root (CI runs as root) and flock(1).
. "$srcdir/tests/cli/lib.sh"
CRON="$srcdir/contrib/cron.d/cprof"
bg="" # background processes (the workload, the timeout of a job), killed at exit
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
# no configuration file of this host (/etc/cprof/cprof.yaml) changes what runs
CPROF_CONFIG=
export CPROF_CONFIG CPROF T
unset CPROF_DATA CPROF_REMOTE CPROF_TOKEN_FILE

# ---- the job line ----
ok "contrib/cron.d/cprof exists" test -f "$CRON"
[ -f "$CRON" ] || { done_testing; exit; }
# the jobs: the lines that are not blank, comments or VAR=value settings
jobs=$(grep -Ev '^[[:space:]]*(#|$)|^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*=' "$CRON")
is "$(printf '%s\n' "$jobs" | wc -l | tr -d ' ')" 1 "the file has one job line"
line=$(printf '%s\n' "$jobs" | head -n 1)
is "$(printf '%s\n' "$line" | awk '{ print $1, $2, $3, $4, $5 }')" "*/10 * * * *" "the job runs every 10 minutes"
is "$(printf '%s\n' "$line" | awk '{ print $6 }')" root "as root (a cron.d line has the user field)"
# the command: what follows the 5 schedule fields and the user
cmd=$(printf '%s\n' "$line" | sed -E 's/^[[:space:]]*([^[:space:]]+[[:space:]]+){6}//')
diag "command: $cmd"
like "$cmd" '^flock -n /run/lock/cprof-record\.lock ' "under flock -n /run/lock/cprof-record.lock"
like "$cmd" ' /[^ ]*/cprof record( .*)? --all( |$)' "it runs cprof record --all (by its full path)"
like "$cmd" ' --duration 60s( |$)' "for 60 s"
unlike "$cmd" '%' "no % on the line (cron turns it into a newline)"
is "$(tail -c 1 "$CRON" | od -An -c | tr -d ' ')" '\n' "the file ends with a newline (cron ignores a last line without one)"

if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
command -v flock >/dev/null 2>&1 || skip_all "flock is not installed (util-linux)"
command -v timeout >/dev/null 2>&1 || skip_all "timeout is not installed (coreutils)"

# the command as this test runs it: this build's cprof (from $CPROF) with a
# store, a lock (from $T) and a 3 s capture; the rest as it is
LOCK=$T/cprof-record.lock
tcmd=$(printf '%s\n' "$cmd" | sed -E \
	-e 's#(^|[[:space:]])/[^[:space:]]*/cprof record([[:space:]]|$)#\1"$CPROF" record --data "$T/store"\2#' \
	-e 's#/run/lock/cprof-record\.lock#"$T/cprof-record.lock"#' \
	-e 's#--duration [^[:space:]]+#--duration 3s#')
diag "run as: $tcmd"
like "$tcmd" '"\$CPROF" record --data "\$T/store"' "the test's command runs this build's cprof on a scratch store"
like "$tcmd" '^flock -n "\$T/cprof-record\.lock" ' "with a scratch lock"
like "$tcmd" ' --duration 3s( |$)' "for 3 s"

# job NAME: runs the command as cron does (sh -c), killed if it hangs; writes
# $T/NAME.start and .end (date +%s.%N), .rc, .out and .err
job() {
	date +%s.%N >"$T/$1.start"
	timeout -s KILL 60 sh -c "$tcmd" >"$T/$1.out" 2>"$T/$1.err" &
	echo $! >"$T/$1.pid"
	bg="$bg $!" # (in this shell; a job run in the background is added by its caller)
	wait $!
	echo $? >"$T/$1.rc"
	date +%s.%N >"$T/$1.end"
}
# captures: the number of distinct capture times in the store (the steps of
# 100 ms with samples over the last 10 minutes: all the profiles of one
# capture have its start as their time)
captures() {
	"$CPROF" query --data "$T/store" --since 10m --over-time --step 100ms cpu 2>"$T/captures.err" |
		awk '$1 ~ /^[0-9][0-9][0-9][0-9]-/ && $3 + 0 > 0 { n++ } END { print n + 0 }'
}
# took NAME: its wall time in seconds
took() { awk -v s="$(cat "$T/$1.start")" -v e="$(cat "$T/$1.end")" 'BEGIN { printf "%.2f", e - s }'; }

cc -O2 -g -fomit-frame-pointer -o "$T/work" "$FIXTURES/record/work.c" -lz 2>"$T/cc.err"
ok "builds the workload (cc -O2 -g -fomit-frame-pointer, with zlib)" test -x "$T/work"
[ -x "$T/work" ] || { sed 's/^/# /' "$T/cc.err"; done_testing; exit; }
"$T/work" 30 & work=$!
bg="$bg $work"

# ---- two runs at once: one records, the other exits at once ----
job first & j1=$!
bg="$bg $j1"
i=0 # the first run holds the lock once flock has created the file; give it a moment more
while [ ! -e "$LOCK" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.5
[ -f "$T/first.pid" ] && bg="$bg $(cat "$T/first.pid")"
job second
wait "$j1"
is "$(cat "$T/first.rc")" 0 "the first run records and exits 0"
[ "$(cat "$T/first.rc")" = 0 ] || sed 's/^/#   stderr: /' "$T/first.err"
is "$(cat "$T/first.err")" "" "and prints nothing (-q: cron mails output only when something went wrong)"
is "$(cat "$T/second.rc")" 1 "the second run, started while the first holds the lock, exits 1 (flock -n)"
is "$(cat "$T/second.out")$(cat "$T/second.err")" "" "and prints nothing"
t1=$(took first) t2=$(took second)
diag "first run: $t1 s; second: $t2 s"
ok "the first run lasts the capture (3 s: $t1 s)" awk -v t="$t1" 'BEGIN { exit !(t >= 2.9) }'
ok "the second exits well before the capture's 3 s ($t2 s)" awk -v t="$t2" 'BEGIN { exit !(t < 2) }'
ok "the second ends before the first" \
	awk -v a="$(cat "$T/second.end")" -v b="$(cat "$T/first.end")" 'BEGIN { exit !(a < b) }'
is "$(captures)" 1 "the store has exactly one capture"

run "$CPROF" query --data "$T/store" --since 10m cpu -f folded
is "$rc" 0 "cprof query --data STORE --since 10m cpu -f folded exits 0"
like "$out" '(^|;)main;run;hot_a [0-9]+$' "the capture shows the workload's hot function (main;run;hot_a)"
run "$CPROF" query --data "$T/store" --since 10m cpu --values comm
like "$out" '^work$' "and the workload's process (comm work)"

# ---- a run after the first has finished records too ----
job third
is "$(cat "$T/third.rc")" 0 "a run after the first has finished records and exits 0"
[ "$(cat "$T/third.rc")" = 0 ] || sed 's/^/#   stderr: /' "$T/third.err"
is "$(captures)" 2 "the store has a second capture"
run "$CPROF" query --data "$T/store" --from "$(cut -d. -f1 "$T/third.start")" cpu -f folded
like "$out" '(^|;)main;run;hot_a [0-9]+$' "which shows the workload too"
ok "and the lock is free again" flock -n "$LOCK" true

kill "$work" 2>/dev/null
done_testing
