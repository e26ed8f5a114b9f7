# cprof serve with the official Pyroscope Node.js client (@pyroscope/nodejs
# from npm, installed by tools/setup.sh; the current one on its newer Node, and
# 0.4.7 on Node 18, which pushes a multipart form without format=): its pushes are taken, with its
# labels (dots become '_', as Pyroscope does), under Pyroscope's type names,
# at the push's start time, and the shares of two known JS functions are
# right.  Also: Pyroscope label names and push times from curl, and that a
# rejected push is logged with its reason, rate-limited.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
use_test_npm
D=$T/data

start_server() { serve_start serve --listen 127.0.0.1:0 --data "$D" "$@"; } # the server's stderr: $T/serve.err
stop_server() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
metric() { # metric NAME API: a counter of /metrics
	curl -s "$URL/metrics" | awk -v m="$1{api=\"$2\"}" '$1 == m {print $2}'
}
total() { # total SELECTOR [query args]: the stored total
	sel=$1
	shift
	"$CPROF" query --data "$D" "$@" "$sel" -f json | jq -r .total
}
share() { # share SELECTOR: hotAlpha's share of hotAlpha + hotBeta, in percent
	a=$(total "$1" --focus '(^|:)hotAlpha(:|$)')
	b=$(total "$1" --focus '(^|:)hotBeta(:|$)')
	echo "$a $b" | awk '{ if ($1 + $2 > 0) printf "%d\n", 100 * $1 / ($1 + $2); else print "none" }'
}
in_range() { [ "$1" != none ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

start_server
ok "cprof serve started" test -n "$URL"

# ---- the real client ----
if node -e 'require("@pyroscope/nodejs")' 2>"$T/require.err"; then
	# 8 s: the client samples at 100 Hz, and its CPU-time shares are noisy over 4 s (59% once)
	run node "$FIXTURES/pyroscope/app.js" "$URL" 8000
	is "$rc" 0 "the node app with @pyroscope/nodejs ran"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | head -n 10 | sed 's/^/# /'
	t0=$(printf '%s\n' "$out" | awk '/^started / {print int($2 / 1000)}')
	t1=$(printf '%s\n' "$out" | awk '/^started / {print int($3 / 1000) + 1}')
	is "$(metric cprof_ingest_errors_total pyroscope)" 0 "no push of the client was refused (/metrics)"
	n=$(metric cprof_ingest_profiles_total pyroscope)
	ok "its pushes were stored ($n)" test "${n:-0}" -ge 2
	unlike "$(cat "$T/serve.err")" 'rejected' "and the server logged no rejected push"
	run "$CPROF" query --data "$D" --types
	like "$out" '^process_cpu:cpu:nanoseconds:cpu:nanoseconds(:delta)?$' \
		"its CPU time is process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	like "$out" '^wall:wall:nanoseconds:wall:nanoseconds(:delta)?$' "its wall time is wall:wall:nanoseconds:wall:nanoseconds"
	like "$out" '^memory:inuse_space:bytes:space:bytes$' "its heap is memory:inuse_space:bytes:space:bytes"
	like "$out" '^memory:inuse_objects:count:space:bytes$' "and memory:inuse_objects:count:space:bytes"
	unlike "$out" '^wall:cpu|^inuse_space|^space:|^objects' "no type is named after the pprof's period type"
	run "$CPROF" query --data "$D" --series 'process_cpu:cpu{service_name="nodeapp"}'
	like "$out" 'env="test"' "the app's tag env=test is a label"
	like "$out" 'otel_scope_name="com.grafana.pyroscope/nodejs"' "otel.scope.name is stored as otel_scope_name"
	like "$out" 'process_runtime_name="nodejs"' "process.runtime.name as process_runtime_name"
	like "$out" 'service_name="nodeapp"' "the app name is service_name"
	s=$(share 'process_cpu:cpu{service_name="nodeapp",env="test"}')
	ok "hotAlpha has 3/4 of the CPU time of hotAlpha + hotBeta (got $s%, 60-88% taken)" in_range "$s" 60 88
	s=$(share 'wall:wall{service_name="nodeapp"}')
	ok "and 3/4 of their wall time (got $s%, 60-88% taken)" in_range "$s" 60 88
	# the first profile covers from profiling's start: it is stored at that
	# time (the push's from), not when it was sent (the pprof's own time)
	first=$(total 'wall:wall{service_name="nodeapp"}' --from "$t0" --to "$t1")
	ok "the first wall profile is stored at the push's from, when profiling started ($first ns in [$t0, $t1))" \
		test "${first:-0}" -gt 0
else
	ok "the npm client @pyroscope/nodejs is installed in $NPM_PREFIX (tools/setup.sh)" false
	sed 's/^/# /' "$T/require.err" | head -n 5
fi

# ---- an older client: @pyroscope/nodejs 0.4.7, the newest that runs on Node 18 (Debian 12's) ----
# it posts a multipart form with a gzipped pprof part and no format= (its pushes were all refused once)
node18=$NPM_PREFIX/node18/node_modules/.bin/node
if [ -x "$node18" ] && PYRO_CLIENT=pyroscope-nodejs-old "$node18" -e 'require(process.env.PYRO_CLIENT)' 2>"$T/require.err"; then
	e0=$(metric cprof_ingest_errors_total pyroscope)
	n0=$(metric cprof_ingest_profiles_total pyroscope)
	sed 's/appName: .nodeapp./appName: "oldapp"/' "$FIXTURES/pyroscope/app.js" >"$T/oldapp.js"
	PYRO_CLIENT=pyroscope-nodejs-old run "$node18" "$T/oldapp.js" "$URL" 8000
	is "$rc" 0 "the node app with @pyroscope/nodejs 0.4.7 ran on Node $("$node18" --version)"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | head -n 10 | sed 's/^/# /'
	is "$(($(metric cprof_ingest_errors_total pyroscope) - e0))" 0 "no push of the 0.4 client was refused (/metrics)"
	n=$(($(metric cprof_ingest_profiles_total pyroscope) - n0))
	ok "its pushes were stored ($n)" test "$n" -ge 4
	run "$CPROF" query --data "$D" --series '{service_name="oldapp"}'
	like "$out" '^process_cpu:cpu:nanoseconds:cpu:nanoseconds(:delta)?\{env="test", pyroscope_spy="nodespy", service_name="oldapp"\}$' \
		"its CPU time is process_cpu:cpu:nanoseconds:cpu:nanoseconds{env, pyroscope_spy=nodespy, service_name}"
	like "$out" '^wall:wall:nanoseconds:wall:nanoseconds(:delta)?\{env="test", pyroscope_spy="nodespy", service_name="oldapp"\}$' \
		"its wall time is wall:wall:nanoseconds:wall:nanoseconds"
	like "$out" '^memory:inuse_space:bytes:space:bytes\{env="test", pyroscope_spy="nodespy", service_name="oldapp"\}$' \
		"its heap is memory:inuse_space:bytes:space:bytes"
	like "$out" '^memory:inuse_objects:count:space:bytes\{' "and memory:inuse_objects:count:space:bytes"
	s=$(share 'process_cpu:cpu{service_name="oldapp"}')
	ok "hotAlpha has 3/4 of the CPU time of hotAlpha + hotBeta (got $s%, 60-88% taken)" in_range "$s" 60 88
	s=$(share 'wall:wall{service_name="oldapp"}')
	if [ -n "${FAKETIME:-}" ]; then
		# (under libfaketime the 0.4 client weighs its wall samples with two clocks, see below:
		# the share it sends is as wrong as their sum, once 55%; both are there)
		ok "and both have wall time (got $s% for hotAlpha; the client's weights are wrong under faketime)" in_range "$s" 1 99
	else
		ok "and 3/4 of their wall time (got $s%, 60-88% taken)" in_range "$s" 60 88
	fi
	w=$(total 'wall:wall{service_name="oldapp"}')
	if [ -n "${FAKETIME:-}" ]; then
		# under libfaketime (tools/test.sh's pass with the clock 400 days ahead) the 0.4 client's time
		# profiler (@datadog/pprof) mixes the faked wall clock with the real monotonic one and sends
		# 20 to 30 times the time it ran: what cprof stores is what the client sent, checked above
		ok "its wall time is stored ($w ns; its length is the client's, wrong under faketime)" test "${w:-0}" -gt 0
	else
		ok "its wall time is about the 8 s it ran ($w ns, 6-12 s taken)" test "${w:-0}" -ge 6000000000 -a "${w:-0}" -le 12000000000
	fi
else
	ok "@pyroscope/nodejs 0.4.7 (pyroscope-nodejs-old) and Node 18 are installed in $NPM_PREFIX (tools/setup.sh)" false
	sed 's/^/# /' "$T/require.err" 2>/dev/null | head -n 5
fi

# ---- what the server commits stays visible to other processes ----
# (a read-pool store, opened by /metrics, used to drop the writer's SQLite
# locks; the next cprof query then deleted the WAL under the writer)
curl -s "$URL/metrics" >/dev/null
"$CPROF" query --data "$D" --types >/dev/null
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$FIXTURES/cpu-before.pb.gz" "$URL/api/v1/push?name=seen&time=now")
is "$code" 200 "a native push after /metrics and a cprof query: 200"
is "$(total 'seen:cpu')" "$("$CPROF" query -i "$FIXTURES/cpu-before.pb.gz" -t cpu -f json | jq .total)" \
	"cprof query sees it while the server runs"
ok "the store's WAL is still there" test -e "$D/store.db-wal"

# ---- label names as Pyroscope takes them, from curl ----
now=$(date +%s)
printf 'main;work 30\nmain;idle 10\n' >"$T/p.folded"
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" \
	"$URL/ingest?name=dotted.cpu%7Bservice.namespace%3Dshop,.lead%3D1,k8s.pod.name%3Dp-1%7D&from=$((now - 10))&until=$now")
is "$code" 200 "dotted label names are taken"
run "$CPROF" query --data "$D" --series 'process_cpu{service_name="dotted"}'
like "$out" 'service_namespace="shop"' "service.namespace becomes service_namespace"
like "$out" '_lead="1"' ".lead becomes _lead"
like "$out" 'k8s_pod_name="p-1"' "k8s.pod.name becomes k8s_pod_name"
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" "$URL/ingest?name=bad.cpu%7Ba.b%3D1,a_b%3D2%7D")
is "$code" 400 "a.b and a_b are the same label: 400"
like "$(jq -r .error "$T/b")" "'a_b' given twice" "saying so"
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" "$URL/ingest?name=bad.cpu%7Bservice-name%3D1%7D")
is "$code" 400 "a '-' in a label name is refused, as Pyroscope does: 400"
like "$(jq -r .error "$T/b")" "bad label name 'service-name'" "naming the label"
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" "$URL/ingest?name=bad.cpu%7B9lives%3D1%7D")
is "$code" 400 "a label name starting with a digit: 400"

# ---- the push's from is the profile's time, for pprof too ----
# the fixture's own time_nanos is some day in the past: it must not matter
before="$FIXTURES/cpu-before.pb.gz"
want=$("$CPROF" query -i "$before" -t cpu -f json | jq .total)
from=$((now - 7200))
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$before" \
	"$URL/ingest?name=timed%7B%7D&format=pprof&from=$from&until=$((from + 10))")
is "$code" 200 "a pprof pushed with from two hours ago: 200"
is "$(total 'process_cpu:cpu{service_name="timed"}' --from "$from" --to "$((from + 1))")" "$want" \
	"it is stored at from"
is "$(total 'process_cpu:cpu{service_name="timed"}' --from "$((from + 1))" --to "$((now + 60))")" 0 \
	"and at no later time"
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" \
	"$URL/ingest?name=ftimed.cpu&from=$from&until=$((from + 10))")
is "$(total 'process_cpu{service_name="ftimed"}' --from "$from" --to "$((from + 1))")" 400000000 \
	"a folded push is stored at from too"
run "$CPROF" query --data "$D" --types
like "$out" '^process_cpu:samples:count:cpu:nanoseconds' "a Go CPU pprof's samples count is process_cpu:samples:count:cpu:nanoseconds"

# ---- a rejected push is logged with its reason, one line a second at most ----
# a fresh server: the pushes refused above may have used this second's line
stop_server
grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$T/serve.err" >"$T/san-first.txt"
start_server
e0=$(metric cprof_ingest_errors_total pyroscope)
code=$(curl -s -o "$T/b" -w '%{http_code}' --data-binary @"$T/p.folded" "$URL/ingest?name=logged.cpu%7Bbad-label%3D1%7D")
is "$code" 400 "a bad label name: 400"
urls=
i=0
while [ $i -lt 20 ]; do
	urls="$urls $URL/ingest?name=burst.cpu%7Bx%3D1,x%3D2%7D"
	i=$((i + 1))
done
# shellcheck disable=SC2086 # one curl, 20 requests
curl -s --data-binary @"$T/p.folded" $urls >/dev/null
curl -s -o /dev/null --data-binary 'not a profile' "$URL/api/v1/push?name=junk"
is "$(($(metric cprof_ingest_errors_total pyroscope) - e0))" 21 "/metrics counts the 21 rejected Pyroscope pushes"
stop_server
log=$(cat "$T/serve.err")
like "$log" "rejected a pyroscope push to /ingest name=logged\.cpu\{bad-label=1\} \(400\): .*bad label name 'bad-label'" \
	"the first rejected push is logged with its name, status and reason"
like "$log" 'rejected a native push to /api/v1/push name=junk \(400\): the body is not a profile' \
	"the native API's rejected push too"
lines=$(grep -c 'rejected a pyroscope push' "$T/serve.err")
more=$(grep -o '([0-9]* more rejected since the last line)' "$T/serve.err" | tr -dc '0-9\n' | awk '{s += $1} END {print s + 0}')
left=$(awk '/more pyroscope pushes were rejected since the last line/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) {s += $i; break}} END {print s + 0}' "$T/serve.err")
is "$((lines + more + left))" "$((e0 + 21))" "every rejected push is a line or counted in one ($lines lines, $more + $left counted)"
ok "the burst of 20 is not 20 lines ($lines lines for $((e0 + 21)) pushes)" test "$lines" -lt 11
unlike "$log" 'rejected.*name=burst[^(]*\{x=1,x=2\}[^(]*$' "no line is cut short"
unlike "$log$(cat "$T/san-first.txt")" 'Sanitizer|runtime error' "the servers reported no memory or undefined-behaviour error"

done_testing
