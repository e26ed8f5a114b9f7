#!/bin/sh
# Remote use against a real `cprof serve`: the same profiles imported into a
# local store and pushed to a server (import --remote) give the same answers
# to query, merge and diff with --data and with --remote (every format,
# lists, groups, over time, pprof byte for byte); tokens and unreachable or
# bad URLs give one-line errors; and, as root, record --remote pushes what it
# samples, spools while the server is down (killed with SIGKILL and
# restarted on the same port and store) and loses nothing: the server counts
# as many samples as record says it took.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy CPROF_REMOTE CPROF_TOKEN_FILE CPROF_DATA
srv_pid=""
bg=""
trap 'for p in $srv_pid $bg; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
command -v jq >/dev/null 2>&1 || skip_all "jq is not installed (apt-get install jq)"

# start_server DIR PORT [ARGS...]: cprof serve on 127.0.0.1:PORT (0: any
# free port) over the store DIR; sets $URL and $srv_pid; 1 if it does not start
start_server() {
	_dir=$1 _port=$2
	shift 2
	_try=0
	while :; do
		: >"$T/serve.out"
		"$CPROF" serve --listen "127.0.0.1:$_port" --data "$_dir" "$@" >"$T/serve.out" 2>"$T/serve.err" &
		srv_pid=$!
		_i=0
		while ! grep -q '^listening on ' "$T/serve.out" && kill -0 "$srv_pid" 2>/dev/null && [ $_i -lt 100 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		if grep -q '^listening on ' "$T/serve.out"; then
			URL=$(sed -n 's/^listening on //p' "$T/serve.out" | head -n 1)
			return 0
		fi
		kill -9 "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
		srv_pid=""
		# the port of a killed server can take a moment to be free again
		_try=$((_try + 1))
		[ "$_port" != 0 ] && [ $_try -lt 20 ] || { sed 's/^/#   serve: /' "$T/serve.err"; return 1; }
		sleep 0.25
	done
}
stop_server() {
	kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=""
}
# one_line VERB DESCRIPTION: $err is one line "cprof VERB: ..." (and the -h hint
# of a usage error)
one_line() {
	printf '%s\n' "$err" | grep -v "^Try 'cprof $1 -h' for more information\.$" >"$T/.lines"
	if [ "$(wc -l <"$T/.lines")" = 1 ] && grep -q "^cprof $1: " "$T/.lines"; then _result 0 "$2"; else
		_result 1 "$2"
		printf '%s\n' "$err" | sed 's/^/#   stderr: /'
	fi
}

# ---- the same profiles, in a local store and in a server ----
before="$FIXTURES/cpu-before.pb.gz"
after="$FIXTURES/cpu-after.pb.gz"
heap="$FIXTURES/heap.pb.gz"
now=$(date +%s)
ta=$((now - 2400)) # 40 minutes ago and 20 minutes ago: inside the default --since 1h
tb=$((now - 1200))
ok "starts cprof serve --listen 127.0.0.1:0" start_server "$T/srv" 0
[ -n "$srv_pid" ] || { done_testing; exit; }
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "serve prints the URL it listens on ($URL)"

for where in "--data $T/local" "--remote $URL"; do
	# shellcheck disable=SC2086
	run "$CPROF" import $where -l host=a --time "$ta" "$before" "$heap"
	is "$rc" 0 "import $where -l host=a: 2 files"
	# shellcheck disable=SC2086
	run "$CPROF" import $where -l host=b -l zone=eu --time "$tb" "$after"
	is "$rc" 0 "import $where -l host=b: 1 file"
done
like "$out" "^imported 1 profile into $URL\$" "import --remote says where the profiles went"

# same DESCRIPTION VERB ARGS...: cprof VERB --data L ARGS and cprof VERB
# --remote URL ARGS both succeed with the same, non-empty output
same() {
	_d=$1 _verb=$2
	shift 2
	"$CPROF" "$_verb" --data "$T/local" "$@" >"$T/same.l" 2>"$T/same.le"
	_rl=$?
	"$CPROF" "$_verb" --remote "$URL" "$@" >"$T/same.r" 2>"$T/same.re"
	_rr=$?
	if [ $_rl != 0 ] || [ $_rr != 0 ] || [ ! -s "$T/same.l" ]; then
		_result 1 "$_d"
		diag "local: exit $_rl, $(wc -c <"$T/same.l") bytes: $(head -c 300 "$T/same.le")"
		diag "remote: exit $_rr: $(head -c 300 "$T/same.re")"
	elif cmp -s "$T/same.l" "$T/same.r"; then
		_result 0 "$_d"
	else
		_result 1 "$_d"
		diff "$T/same.l" "$T/same.r" | head -n 20 | sed 's/^/#   /'
	fi
}

cpu='process_cpu:cpu'
same "query --types" query --types
same "query --labels" query --labels
same "query --values host" query --values host
same "query --series" query --series
same "query --series -f json" query --series -f json
same "query --labels of a selector" query --labels "$cpu{host=\"b\"}"
same "query: the top table" query "$cpu"
same "query -f folded" query -f folded "$cpu"
same "query -f folded --invert, with a regex matcher" query -f folded --invert "$cpu{host=~\"a|b\"}"
same "query -f json" query -f json "$cpu"
same "query -f json of one host" query -f json "$cpu{host=\"a\"}"
same "query -f flamegraph" query -f flamegraph --title remote "$cpu"
same "query --focus --ignore" query -f folded --focus 'main\.(alpha|gamma)' --ignore beta "$cpu"
same "query -n 3 on samples" query -n 3 process_cpu:samples
same "query a heap type" query -f folded memory:alloc_space
same "query --group-by host (top)" query --group-by host "$cpu"
same "query --group-by host -f folded" query --group-by host -f folded "$cpu"
same "query --group-by zone (a missing label is a group too)" query --group-by zone -f folded "$cpu"
# over time: an absolute range, so that both see the same steps
range="--from $((now - 3600)) --to $now"
# shellcheck disable=SC2086
same "query --over-time --step 5m" query --over-time --step 5m $range "$cpu"
# shellcheck disable=SC2086
same "query --over-time -f json --step 90s" query --over-time -f json --step 90s $range "$cpu"
# shellcheck disable=SC2086
same "query --over-time with the default step" query --over-time -f json $range "$cpu"
"$CPROF" query --remote "$URL" --over-time -f json --step 90s $range "$cpu" >"$T/ot.json"
is "$(jq '[.points[].value] | add' "$T/ot.json")" "$("$CPROF" query --remote "$URL" -f json "$cpu" | jq .total)" \
	"the steps add up to the total"
same "query --from --to" query -f folded --from "$((ta - 60))" --to "$((ta + 60))" "$cpu"
same "query -f pprof: the same bytes" query -f pprof -o - "$cpu"
"$CPROF" query --remote "$URL" -f pprof -o "$T/remote.pb.gz" "$cpu"
"$CPROF" query --data "$T/local" -f pprof -o "$T/local.pb.gz" "$cpu"
if [ -n "$GO" ]; then
	a=$(HOME=$T "$GO" tool pprof -top -nodecount=1000 "$T/local.pb.gz" 2>/dev/null)
	b=$(HOME=$T "$GO" tool pprof -top -nodecount=1000 "$T/remote.pb.gz" 2>/dev/null)
	like "$b" 'main\.alpha' "go tool pprof -top reads the profile from the server"
	is "$b" "$a" "and prints what it prints for the local one"
else
	ok "go tool pprof is installed (apt-get install golang-go)" false
fi
tot=$("$CPROF" query --remote "$URL" -f json "$cpu" | jq .total)
ta_tot=$("$CPROF" query -i "$before" -t cpu -f json | jq .total)
tb_tot=$("$CPROF" query -i "$after" -t cpu -f json | jq .total)
is "$tot" "$((ta_tot + tb_tot))" "the server's total is the two files' ($ta_tot + $tb_tot)"

same "merge two selectors (pprof)" merge -o - "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "merge -f json" merge -f json "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "merge -f top" merge -f top "$cpu"
same "diff two selectors (table)" diff "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "diff --normalize -f json" diff --normalize -f json "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "diff -f folded" diff -f folded "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "diff -f pprof" diff -f pprof -o - "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
same "diff --before-range --after-range of one selector" diff -f folded \
	--before-range "$((ta - 60))..$((ta + 60))" --after-range "$((tb - 60))..$((tb + 60))" "$cpu"

# the server's errors, as the local store's
run "$CPROF" query --remote "$URL" 'process_cpu:cpu{host="nope"}'
is "$rc" 1 "a selector that matches nothing fails with 1"
like "$err" '^cprof query: no stored series match the selector' "with the store's message"
one_line query "one line"
run "$CPROF" query --remote "$URL" '{host="a"}'
is "$rc" 1 "a selector of two types fails with 1"
like "$err" 'matches 6 profile types; name one: memory:' "and names them"
run "$CPROF" query --remote "$URL" -f json --over-time --step 1ms "$cpu"
is "$rc" 1 "too many steps fail"
like "$err" 'more than 100000 steps' "and say so"

# environment defaults, and what --remote does not go with
run env CPROF_REMOTE="$URL" "$CPROF" query --values host
is "$rc:$out" "0:$(printf 'a\nb')" "\$CPROF_REMOTE is the default store"
run env CPROF_REMOTE="$URL" "$CPROF" query --data "$T/nostore" --types
is "$rc" 1 "--data wins over \$CPROF_REMOTE"
like "$err" "no store at $T/nostore" "(the local store is read)"
run "$CPROF" query --remote "$URL" --data "$T/local" --types
is "$rc" 2 "--remote and --data together are a usage error"
run "$CPROF" query --remote "$URL" -i "$before"
is "$rc" 2 "--remote with -i FILE is a usage error"
run "$CPROF" import --remote "$URL" --retention 1d "$before"
is "$rc" 2 "import --remote --retention is a usage error"
like "$err" "cprof serve --retention" "and says where retention runs"

# ---- bad URLs, unreachable servers, tokens ----
run "$CPROF" query --remote ftp://127.0.0.1:7070 --types
is "$rc" 2 "an ftp:// URL is a usage error"
like "$err" "^cprof query: --remote: bad server URL 'ftp://127.0.0.1:7070': only http and https" "and says why"
one_line query "one line (and the hint)"
run "$CPROF" merge --remote 127.0.0.1:7070 "$cpu"
is "$rc" 2 "a URL without a scheme is a usage error"
run "$CPROF" import --remote "gopher://x" "$before"
is "$rc" 2 "import: a bad scheme is a usage error"

port=${URL##*:}
stop_server
run "$CPROF" query --remote "$URL" --types
is "$rc" 1 "a server that is not there fails with 1"
is "$err" "cprof query: cannot reach $URL: Connection refused (is cprof serve running there?)" \
	"in one line naming the URL"
run "$CPROF" diff --remote "$URL" "$cpu{host=\"a\"}" "$cpu{host=\"b\"}"
is "$rc" 1 "diff: the same"
like "$err" "cannot reach $URL" "diff names the URL"
run "$CPROF" import --remote "$URL" "$before"
is "$rc" 1 "import to a server that is not there fails"
like "$err" "^cprof import: cannot reach $URL: Connection refused" "and says so"

printf 's3cret-token\n' >"$T/token"
printf 'wrong\n' >"$T/bad-token"
: >"$T/empty-token"
ok "serve --token-file restarts on the same port and store" start_server "$T/srv" "$port" --token-file "$T/token"
run "$CPROF" query --remote "$URL" --types
is "$rc" 1 "no token: fails with 1"
like "$err" '^cprof query: .*token.*\(HTTP 401\)$' "the server's 401 message, with the status"
one_line query "one line"
run "$CPROF" query --remote "$URL" --token-file "$T/bad-token" --types
is "$rc" 1 "a wrong token fails with 1"
one_line query "one line"
run "$CPROF" import --remote "$URL" --token-file "$T/bad-token" "$before"
is "$rc" 1 "import with a wrong token fails with 1"
one_line import "one line"
run "$CPROF" query --remote "$URL" --token-file "$T/token" --values host
is "$rc:$out" "$(printf '0:a\nb')" "the right token reads (the data survived the restart)"
run env CPROF_REMOTE="$URL" CPROF_TOKEN_FILE="$T/token" "$CPROF" query --values zone
is "$rc:$out" "0:eu" "\$CPROF_TOKEN_FILE is the default token file"
run "$CPROF" query --remote "$URL" --token-file "$T/missing" --types
is "$rc" 1 "a missing token file fails with 1"
is "$err" "cprof query: cannot read the token file $T/missing: No such file or directory" "and names it"
run "$CPROF" query --remote "$URL" --token-file "$T/empty-token" --types
like "$err" "^cprof query: the token file $T/empty-token is empty$" "an empty token file is named empty"
run "$CPROF" query --token-file "$T/token" --types
is "$rc" 2 "--token-file without --remote is a usage error"
stop_server

# ---- https, with a private certificate authority ----
if command -v openssl >/dev/null 2>&1 &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost \
		-keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1; then
	ok "serve --tls-cert starts" start_server "$T/tls" 0 --tls-cert "$T/cert.pem" --tls-key "$T/key.pem"
	turl=https://localhost:${URL##*:}
	run env CURL_CA_BUNDLE="$T/cert.pem" "$CPROF" import --remote "$turl" -l host=t "$before"
	is "$rc" 0 "import --remote https:// with the CA in \$CURL_CA_BUNDLE"
	run env CURL_CA_BUNDLE= SSL_CERT_FILE="$T/cert.pem" "$CPROF" query --remote "$turl" --values host
	is "$rc:$out" "0:t" "query --remote https:// with the CA in \$SSL_CERT_FILE"
	run env CURL_CA_BUNDLE= SSL_CERT_FILE= "$CPROF" query --remote "$turl" --values host
	is "$rc" 1 "an unknown certificate authority fails"
	like "$err" "^cprof query: cannot reach $turl: TLS failed: " "and says it is TLS"
	one_line query "in one line"
	stop_server
else
	_result 0 "https # SKIP openssl cannot make a certificate"
fi

# ---- record --remote (root) ----
if [ "$(id -u)" != 0 ]; then
	_result 0 "record --remote # SKIP cprof record needs root (or CAP_BPF+CAP_PERFMON)"
	done_testing
	exit
fi
cc -O2 -g -fomit-frame-pointer -o "$T/work" "$FIXTURES/record/work.c" -lz 2>"$T/cc.err"
ok "builds the workload" test -x "$T/work"
[ -x "$T/work" ] || { done_testing; exit; }
# rec ARGS: cprof record with the debug summary, killed if it hangs
rec() { CPROF_DEBUG=1 timeout -s KILL 90 "$CPROF" record "$@"; }
# samples_of FILE: the samples record says it took (its summary on stderr)
samples_of() { sed -n 's/^cprof record: \([0-9][0-9]*\) samples in .*/\1/p' "$1"; }
# total SELECTOR [ARGS]: the server's total for SELECTOR over the last 10 minutes, in samples (CPU
# time, of 5025125 ns a sample at 199 Hz)
total() { _s=$1; shift; "$CPROF" query --remote "$URL" "$@" --since 10m -f json "$_s" | jq '.total / 5025125'; }
spooled() { find "$1" -name '*.push' 2>/dev/null | wc -l | tr -d ' '; }

ok "cprof serve starts again, without a token" start_server "$T/srv" "$port"
run rec -F 199 --flush-interval 500ms --remote "$URL" --spool "$T/spool1" -l run=r1 -- "$T/work" 2
is "$rc" 0 "record --remote -- CMD exits 0"
like "$err" "-> $URL \\(cprof query --remote $URL cpu\\)\$" "and names the server"
printf '%s\n' "$err" >"$T/r1.err"
n1=$(samples_of "$T/r1.err")
ok "record took samples ($n1)" test "${n1:-0}" -gt 0
is "$(total 'cpu{run="r1"}')" "$n1" "the server holds every sample record took"
run "$CPROF" query --remote "$URL" -f folded 'cpu{run="r1"}'
like "$out" '(^|;)main;run;hot_a [0-9]+$' "with complete stacks"
run "$CPROF" query --remote "$URL" --values comm 'cpu{run="r1"}'
like "$out" '^work$' "and the series labels (comm)"
is "$(spooled "$T/spool1")" 0 "nothing was spooled"

# the server is killed while record pushes, and comes back on the same port
rec -F 199 --flush-interval 300ms --remote "$URL" --spool "$T/spool2" -l run=r2 -- "$T/work" 7 2>"$T/r2.err" &
rp=$!
bg="$bg $rp"
sleep 2
kill -9 "$srv_pid"
wait "$srv_pid" 2>/dev/null
sleep 2.5
mid=$(spooled "$T/spool2")
ok "while the server is down, the pushes are spooled ($mid files)" test "$mid" -gt 0
ok "the server comes back on the same port and store" start_server "$T/srv" "$port"
wait "$rp"
rc=$?
is "$rc" 0 "record exits 0 after the server came back"
err=$(cat "$T/r2.err")
# (a push in flight when the server died breaks its connection; the next ones are refused)
like "$err" "cannot reach $URL: (Connection refused \\(is cprof serve running there\\?\\)|the connection broke \\([^)]*\\)); keeping the profiles in $T/spool2" \
	"record says it spools, and why"
like "$err" "$URL answers again: the spooled profiles are sent" "and that the server answers again"
like "$err" '\[pushes: sent [0-9]+ \([1-9][0-9]* from the spool\), spooled [1-9][0-9]*, dropped 0, refused 0, pending 0\]' \
	"its counters: spooled pushes were sent, none dropped, none left"
n2=$(samples_of "$T/r2.err")
ok "record took samples ($n2)" test "${n2:-0}" -gt 0
# (at least once, as lib/http/push.h says: a push that the server stored just before it was killed, its
# answer lost, is sent again from the spool, so the server may count one push twice, never fewer)
got2=$(total 'cpu{run="r2"}')
ok "nothing was lost: the server counts every sample record took ($got2 of $n2)" test "${got2:-0}" -ge "$n2"
[ "${got2:-0}" = "$n2" ] || diag "the push in flight when the server was killed was stored twice ($got2 > $n2)"
is "$(spooled "$T/spool2")" 0 "the spool is empty"

# a server that stays down for the whole run: the spool waits for the next run
stop_server
run rec -F 199 --flush-interval 300ms --remote "$URL" --spool "$T/spool3" -l run=r3 -- "$T/work" 1
is "$rc" 0 "record exits 0 when the server never answers"
like "$err" "profiles \\([0-9]+ [KM]?i?B?[a-z]*\\) stay in $T/spool3 for the next cprof record --remote to send" \
	"and says what stays in the spool"
like "$err" "cannot reach $URL: Connection refused \\(is cprof serve running there\\?\\); recording anyway: the profiles wait in $T/spool3 until it answers" \
	"and why it records anyway: the ping's own reason (not strerror of a guessed EIO)"
printf '%s\n' "$err" >"$T/r3.err"
n3=$(samples_of "$T/r3.err")
left=$(spooled "$T/spool3")
ok "the spool holds the run ($left files)" test "$left" -gt 0
ok "the server starts again" start_server "$T/srv" "$port"
run rec -F 199 --remote "$URL" --spool "$T/spool3" -l run=r3b -- true
is "$rc" 0 "the next record --remote exits 0"
like "$err" "sent $left profiles a previous run left in $T/spool3" "and sends what the last one left"
is "$(total 'cpu{run="r3"}')" "$n3" "every sample of the run the server missed is there"
is "$(spooled "$T/spool3")" 0 "the spool is empty"

# a bounded spool drops, and says so
stop_server
run rec -F 199 --flush-interval 300ms --remote "$URL" --spool "$T/spool4" --spool-size 1K -- "$T/work" 1
is "$rc" 0 "record with a full spool still exits 0"
like "$err" "cannot spool a push of [0-9]+ bytes: the spool holds 1024 bytes at most \\(dropped it\\)" \
	"and says what it dropped"
bytes=$(find "$T/spool4" -name '*.push' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
ok "the spool keeps to its bound ($bytes bytes)" test "$bytes" -le 1024

# errors, before any sampling
ok "serve --token-file starts again" start_server "$T/srv" "$port" --token-file "$T/token"
run rec --remote "$URL" --token-file "$T/bad-token" -- true
is "$rc" 1 "record --remote with a wrong token fails with 1"
one_line record "in one line"
like "$err" "token" "that says it is the token"
run rec -F 199 --remote "$URL" --token-file "$T/token" --spool "$T/spool5" -l run=r5 -- "$T/work" 1
is "$rc" 0 "with the right token it records"
printf '%s\n' "$err" >"$T/r5.err"
is "$(total 'cpu{run="r5"}' --token-file "$T/token")" "$(samples_of "$T/r5.err")" "and the server has all of it"
stop_server
run rec --remote ftp://127.0.0.1:1 -- true
is "$rc" 2 "record --remote with a bad scheme is a usage error"
run rec --remote "$URL" -o "$T/x.pb.gz" -- true
is "$rc" 2 "record --remote -o is a usage error"
run rec --spool "$T/spool6" -- true
is "$rc" 2 "--spool without --remote is a usage error"
run rec --remote "$URL" --spool-size lots -- true
is "$rc" 2 "a bad --spool-size is a usage error"
run rec --remote "$URL" --retention 1d -- true
is "$rc" 2 "record --remote --retention is a usage error"
run rec --remote "$URL" -l name=x -- true
is "$rc" 2 "record --remote -l name=... is a usage error (name is the push API's)"
mkdir -p "$T/spool7"
# a spool another cprof holds
(flock -x 9; : >"$T/spool7.held"; exec sleep 60) 9>"$T/spool7/.lock" &
lk=$!
bg="$bg $lk"
i=0
while [ ! -f "$T/spool7.held" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
run rec --remote "$URL" --spool "$T/spool7" -- true
is "$rc" 1 "a spool in use by another process fails with 1"
like "$err" "the spool $T/spool7 is in use by another cprof" "and says so"
kill "$lk" 2>/dev/null
done_testing
