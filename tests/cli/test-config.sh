# The configuration file (cprof.yaml: the same keys as the options, a
# section per command, options win), record --print-config, --log-level
# (and the journal's priority prefix), and --max-store-size enforced by the
# commands that write the store.  Runs the real binary; record needs root.
. "$srcdir/tests/cli/lib.sh"
R="$FIXTURES/record"
bg=""
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
unset CPROF_DATA CPROF_REMOTE CPROF_TOKEN_FILE
# one_line VERB DESCRIPTION: $err is one "cprof VERB: " line (plus the -h hint)
one_line() {
	printf '%s\n' "$err" | grep -v "^Try 'cprof $1 -h' for more information\.$" > "$T/.lines"
	if [ "$(wc -l < "$T/.lines")" = 1 ] && grep -q "^cprof $1: " "$T/.lines"; then _result 0 "$2"; else
		_result 1 "$2"; printf '%s\n' "$err" | sed 's/^/#   stderr: /'; fi
}
pc() { "$CPROF" record --print-config "$@"; } # the settings in effect

# ---- reading the file ----
cat > "$T/c.yaml" <<EOF
# an agent's settings
data: $T/store
log_level: warn
retention: 15d
record:
  freq: 49
  flush-interval: 5s
  label: {env: prod, team: infra}
  max-store-size: 1G
  debuginfo-path: null
serve:
  listen: 127.0.0.1:0
query:
  since: 2h
EOF
export CPROF_CONFIG="$T/c.yaml"
run pc --all
is "$rc" 0 "record --print-config exits 0"
like "$out" "^# cprof record: the settings in effect \\(the configuration file: $T/c.yaml; then the options\\)" \
	"names the file it read"
like "$out" '^  freq: 49$' "a record: setting (freq)"
like "$out" '^  flush-interval: 5s$' "a setting with a dash (flush-interval)"
like "$out" '^  label: \{env: "prod", team: "infra"\}$' "a mapping: one --label per pair"
like "$out" '^  max-store-size: 1G$' "max-store-size"
like "$out" '^  retention: 15d$' "a top-level setting for every command that has it (retention)"
like "$out" "^  data: \"$T/store\"\$" "data from the file (as \$CPROF_DATA would)"
like "$out" '^  log-level: warn$' "log_level with an underscore"
like "$out" '^  debuginfo-path: null$' "null: not set"
like "$out" '^  all: true$' "the command line's target"

run pc --all -F 7 -l env=dev --log-level debug --flush-interval 2s
like "$out" '^  freq: 7$' "options win over the file (-F)"
like "$out" '^  label: \{team: "infra", env: "dev"\}$' "a label given as an option wins over the file's"
like "$out" '^  log-level: debug$' "--log-level wins"
like "$out" '^  flush-interval: 2s$' "--flush-interval wins"
CPROF_DATA="$T/elsewhere" run pc --all
like "$out" "^  data: \"$T/elsewhere\"\$" "the environment wins over the file (\$CPROF_DATA)"

# what --print-config prints is a file that gives the same settings
pc --all > "$T/printed.yaml"
CPROF_CONFIG="$T/printed.yaml" run pc
is "$(printf '%s\n' "$out" | sed 1d)" "$(sed 1d "$T/printed.yaml")" \
	"--print-config's output, read back as the file, gives the same settings (its target too)"

# a file's store settings do not apply to -o, and its target only without one
run pc -o "$T/x.pb.gz" -- true
is "$rc" 0 "-o FILE with the file's store settings (retention, labels, flush-interval): no error"
unlike "$out" 'retention|flush-interval|label' "and they are not in effect"
printf 'record:\n  pid: [1]\n' > "$T/target.yaml"
CPROF_CONFIG="$T/target.yaml" run pc
like "$out" '^  pid: \[1\]$' "the file's target when the command line gives none"
CPROF_CONFIG="$T/target.yaml" run pc --all
like "$out" '^  pid: \[\]$' "and not when it gives one"

# --config FILE beats $CPROF_CONFIG; CPROF_CONFIG= means no file
printf 'record:\n  freq: 13\n' > "$T/other.yaml"
run pc --all --config "$T/other.yaml"
like "$out" '^  freq: 13$' "--config FILE is read instead of \$CPROF_CONFIG"
CPROF_CONFIG= run pc --all
like "$out" '\(the configuration file: none; then the options\)' "CPROF_CONFIG= (empty): no file"
like "$out" '^  freq: 19$' "and the defaults"

# ---- bad files ----
bad() { # DESCRIPTION YAML EXPECTED-MESSAGE [COMMAND...]
	d=$1 y=$2 m=$3
	shift 3
	printf '%b' "$y" > "$T/bad.yaml"
	CPROF_CONFIG="$T/bad.yaml" run "$CPROF" "${@:-record}" --all
	is "$rc" 2 "$d: exit 2"
	like "$err" "$m" "$d: says so"
}
bad "a misspelt setting in a section" 'record:\n  freqq: 3\n' \
	"^cprof record: $T/bad.yaml:2: unknown setting 'freqq' in record: not an option of cprof record"
bad "a top-level setting no command has" 'nope: 1\n' \
	"^cprof record: $T/bad.yaml:1: unknown setting 'nope': not an option of any cprof command"
bad "a boolean that is not one" 'record:\n  idle: maybe\n' "bad.yaml:2: idle wants true or false, not 'maybe'"
bad "not YAML" 'record: {freq: 1\n' "^cprof record: $T/bad.yaml:[0-9]+: "
bad "a section that is not a mapping" 'record: 3\n' "bad.yaml:1: record: wants the settings of cprof record"
bad "a bad value" 'record:\n  freq: fast\n' "^cprof record: bad frequency 'fast'"
printf 'nope: 1\n' > "$T/bad.yaml"
CPROF_CONFIG="$T/bad.yaml" run "$CPROF" query --types
is "$rc" 2 "every command checks the file (query)"
one_line query "in one line"
CPROF_CONFIG="$T/bad.yaml" run "$CPROF" record -h
is "$rc" 0 "-h ignores a bad file"
run "$CPROF" record --all --config "$T/missing.yaml"
is "$rc" 1 "--config of a missing file: exit 1"
one_line record "one line"
like "$err" "missing.yaml" "naming the file"

# ---- the file at work: a recording, a query, a server ----
export CPROF_CONFIG= # none: each command below says which
cat > "$T/agent.yaml" <<EOF
data: $T/store
record:
  freq: 199
  flush-interval: 1s
  label: {team: infra}
query:
  since: 10m
EOF
if [ "$(id -u)" = 0 ]; then
	cc -O2 -g -fomit-frame-pointer -o "$T/work" "$R/work.c" -lz 2>/dev/null
	CPROF_CONFIG="$T/agent.yaml" run timeout -s KILL 60 "$CPROF" record -- "$T/work" 2
	is "$rc" 0 "record with the file's store, frequency and labels exits 0"
	like "$err" "-> $T/store " "into the file's store"
	CPROF_CONFIG="$T/agent.yaml" run "$CPROF" query --series 'cpu{comm="work"}'
	like "$out" 'team="infra"' "its series carry the file's label; query reads the file's store"
	CPROF_CONFIG="$T/agent.yaml" run "$CPROF" query -f folded 'cpu{comm="work"}'
	like "$out" ';hot_a [0-9]+$' "and the file's --since for query"
	# -o with the file's store settings
	CPROF_CONFIG="$T/agent.yaml" run timeout -s KILL 60 "$CPROF" record -o "$T/w.pb.gz" -- "$T/work" 1
	is "$rc" 0 "record -o with a file giving labels and a flush interval: exit 0"
	# --log-level
	CPROF_CONFIG= run timeout -s KILL 60 "$CPROF" record --log-level warn -o "$T/w2.pb.gz" -- "$T/work" 1
	is "$err" "" "--log-level warn: no info lines"
	CPROF_CONFIG= run timeout -s KILL 60 "$CPROF" record --log-level debug --data "$T/dbg" --flush-interval 500ms -- "$T/work" 1
	like "$err" '^cprof record: flush: [0-9]+ batches' "--log-level debug: the flushes"
	like "$err" '\[taken [0-9]+, dropped' "and the counters in the summary"
	# a bound the dictionary alone exceeds: said once, the recording goes on
	CPROF_CONFIG= run timeout -s KILL 60 "$CPROF" record --data "$T/tiny" --flush-interval 300ms --max-store-size 1K \
		-- "$T/work" 2
	is "$rc" 0 "record --max-store-size 1K exits 0"
	is "$(printf '%s\n' "$err" | grep -c "the newest day's dictionary alone is that big")" 1 \
		"a bound that the dictionary alone exceeds is a warning, given once"
	# under systemd, stderr is the journal's stream: the priority prefix
	: > "$T/journal"
	js=$(stat -c '%d:%i' "$T/journal")
	CPROF_CONFIG= JOURNAL_STREAM=$js timeout -s KILL 60 "$CPROF" record -o "$T/w3.pb.gz" -- "$T/work" 1 2>>"$T/journal"
	like "$(cat "$T/journal")" '^<6>cprof record: sampling ' "stderr as the journal's stream: <6> (info) before each line"
	CPROF_CONFIG= JOURNAL_STREAM=1:1 run timeout -s KILL 60 "$CPROF" record -o "$T/w4.pb.gz" -- "$T/work" 1
	like "$err" '^cprof record: sampling ' "another JOURNAL_STREAM: no prefix"
else
	ok "running as root (record needs it)" false
fi
run "$CPROF" record --all --log-level loud
is "$rc" 2 "--log-level loud: exit 2"
like "$err" "bad --log-level 'loud': want error, warn, info or debug" "says what it wants"

printf 'serve:\n  listen: 127.0.0.1:0\n  log-level: warn\ndata: %s\n' "$T/srv" > "$T/server.yaml"
CPROF_CONFIG="$T/server.yaml" "$CPROF" serve >"$T/serve.out" 2>"$T/serve.err" &
S=$!
bg="$bg $S"
i=0
while ! grep -q 'listening on' "$T/serve.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
like "$(cat "$T/serve.out")" '^listening on http://127\.0\.0\.1:[0-9]+$' "serve takes listen from its section"
ok "and its store from the top level" test -f "$T/srv/store.db"
kill -INT "$S"; wait "$S"
is "$(cat "$T/serve.err")" "" "and --log-level warn from its section: no info lines"

# ---- --max-store-size ----
# three days of profiles, 20 a day: 2000 stacks each, so that the days
# (the samples) weigh more than the dictionary they share
awk 'BEGIN { srand(7); for (i = 0; i < 2000; i++)
	printf "main;run_%d;work_%d;leaf_%d %d\n", i % 50, i % 400, i, 1 + int(rand() * 1000) }' > "$T/big.folded"
day=86400
now=$(date +%s)
for d in 3 2 1; do
	for i in $(seq 1 20); do
		CPROF_CONFIG= "$CPROF" import --data "$T/big" --name big -l day=$d --time $((now - d * day + i * 60)) \
			"$T/big.folded" >/dev/null
	done
done
size() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
before=$(size "$T/big")
CPROF_CONFIG= run "$CPROF" query --data "$T/big" --values day
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "1 2 3 " "three days stored"
limit=$((before * 2 / 3))
CPROF_CONFIG= run "$CPROF" import --data "$T/big" --name big -l day=0 --max-store-size "$limit" "$T/big.folded"
is "$rc" 0 "import --max-store-size exits 0"
after=$(size "$T/big")
ok "the store is under the bound now ($after <= $limit bytes; was $before)" test "$after" -le "$limit"
CPROF_CONFIG= run "$CPROF" query --data "$T/big" 'big{day="3"}' --since 4d -f folded
# (with their series: a day's file holds them)
like "$rc $err" "^1 cprof query: no stored series match" "the oldest day's profiles are gone, and their series"
CPROF_CONFIG= run "$CPROF" query --data "$T/big" 'big{day="0"}' --since 1h -f folded
is "$(printf '%s\n' "$out" | grep -c .)" 2000 "the newest profile is there, whole"
CPROF_CONFIG= run "$CPROF" import --data "$T/big" --max-store-size 0 "$T/big.folded"
is "$rc" 2 "--max-store-size 0: exit 2"
CPROF_CONFIG= run "$CPROF" record --all -o "$T/x.pb.gz" --max-store-size 1G
is "$rc" 2 "record -o with --max-store-size: exit 2"
one_line record "one line"

done_testing
