# cprof serve with real clients: curl, a Go net/http program, the three ingest
# APIs, the query API, tokens, TLS, limits, metrics, restarts and retention.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
before="$FIXTURES/cpu-before.pb.gz"
after="$FIXTURES/cpu-after.pb.gz"
heap="$FIXTURES/heap.pb.gz"

# start_server NAME ARGS...: starts cprof serve, sets URL and SPID (of NAME)
start_server() {
	serve_start "$@"
	PIDS="$PIDS $SPID"
}
stop_server() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
PIDS=
# every process started here (dash's trap sees no jobs, so they are listed)
trap 'kill $PIDS 2>/dev/null; rm -rf "$T"' EXIT
# the fixtures' own time (unix seconds): data stored at it is as old as the committed file, whatever the clock
ftime=$(($("$CPROF" query -i "$before" -f json | jq .time_nanos) / 1000000000))
total() { # the total of a selector from a day before the fixtures' time (or now, if earlier) until now
	_now=$(date +%s)
	_since=$((ftime < _now ? ftime - 86400 : _now - 86400))
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$1" --data-urlencode "from=$_since" \
		--data-urlencode max_nodes=1 | jq -r .total
}

# ---- usage ----
run "$CPROF" serve -h
is "$rc" 0 "serve -h exits 0"
like "$out" '--listen ADDR' "serve -h lists --listen"
run "$CPROF" serve --listen nonsense
is "$rc" 2 "a bad --listen is a usage error"
like "$err" "^cprof serve: --listen 'nonsense': give HOST:PORT" "it names the option and the form"
run "$CPROF" serve --max-body lots
is "$rc" 2 "a bad --max-body is a usage error"
run "$CPROF" serve --tls-cert /nonexistent
is "$rc" 2 "--tls-cert without --tls-key is a usage error"
run "$CPROF" serve extra
is "$rc" 2 "an argument is a usage error"
printf 'listen: 127.0.0.1:0\nbogus: 1\n' >"$T/bad.yaml"
run "$CPROF" serve --config "$T/bad.yaml"
is "$rc" 2 "an unknown config key is a usage error"
like "$err" "bad.yaml:2: unknown setting 'bogus'" "the error names the file, line and key"
printf 'listen: [unclosed\n' >"$T/broken.yaml"
run "$CPROF" serve --config "$T/broken.yaml"
is "$rc" 2 "broken YAML is a usage error"
like "$err" 'broken.yaml:[0-9]+:' "with the line"
is "$(ls "$T" | grep -c '^data')" 0 "no store was created by refused starts"

# ---- a server ----
start_server s1 --listen 127.0.0.1:0 --data "$T/data"
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "serve prints the URL it listens on (port 0 picks one)"
http GET /healthz
is "$code/$body" "200/ok" "/healthz answers ok"

# a second server on the same port fails with a one-line error
port=${URL##*:}
run "$CPROF" serve --listen "127.0.0.1:$port" --data "$T/data2"
is "$rc" 1 "a port in use: exit 1"
like "$err" "^cprof serve: cannot listen on 127\.0\.0\.1:$port: Address already in use" "it says so"
is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 1 "in one line"
ok "and made no store in its --data directory" test ! -e "$T/data2"

# ---- native push with curl ----
# Pushes of current data say so (time=now): a profile without time= is stored at its own time (checked
# below), and a committed fixture's own time is days old.
http POST '/api/v1/push?name=cpu&service=before&version=1&time=now' --data-binary @"$before"
is "$code" 200 "native push (gzip pprof) with curl: 200"
is "$(printf '%s' "$body" | jq -r .profiles)" 1 "it answers the profiles stored"
gunzip -c "$after" >"$T/after.pb"
http POST '/api/v1/push?name=cpu&service=after&time=now' -H 'X-Cprof-Label: version=2' --data-binary @"$T/after.pb"
is "$code" 200 "native push (raw pprof, a label in a header): 200"
http POST '/api/v1/push?name=owntime&service=before' --data-binary @"$before"
is "$code" 200 "native push without time=: 200"
own() { # the total of owntime between the fixture's time + $1 s and + $2 s
	curl -s -G "$URL/api/v1/profile" --data-urlencode query=owntime:samples --data-urlencode "from=$((ftime + $1))" \
		--data-urlencode "to=$((ftime + $2))" --data-urlencode max_nodes=1 | jq -r .total
}
ok "without time= a profile is stored at its own time (time_nanos)" test "$(own -60 60)" -gt 0
is "$(own 60 86400)" 0 "and not later"
printf 'main;work;spin 7\nmain;idle 3\n' >"$T/f.folded"
http POST '/api/v1/push?name=folded&service=text' --data-binary @"$T/f.folded"
is "$code" 200 "native push of folded stacks: 200"

http GET /api/v1/types
like "$body" '"process_cpu:samples:count:cpu:nanoseconds:delta"' "types lists the pushed type (name=cpu is process_cpu)"
like "$body" '"folded:samples:count:samples:count"' "and the folded one"
http GET '/api/v1/values?label=service'
is "$(printf '%s' "$body" | jq -c .)" '["after","before","text"]' "values of service"
http GET '/api/v1/labels' -G --data-urlencode 'query=cpu:samples'
is "$(printf '%s' "$body" | jq -c .)" '["service","version"]' "label names, header labels included"
http GET /api/v1/series -G --data-urlencode 'query=cpu:samples{service="after"}'
is "$(printf '%s' "$body" | jq -r '.[0].labels.version')" 2 "series carry the header label"

# what was pushed reads back as cprof query prints the file
mine=$(curl -s -G "$URL/api/v1/profile" --data-urlencode 'query=cpu:samples{service="before"}' \
	--data-urlencode from=now-1d --data-urlencode format=top | grep -v -e '^Time:' -e '^Duration:' -e '^File:')
ref=$("$CPROF" query -i "$before" -t samples | grep -v -e '^Time:' -e '^Duration:' -e '^File:')
is "$mine" "$ref" "the stored profile's top table equals the file's"
is "$(total 'cpu:cpu{service="before"}')" "$("$CPROF" query -i "$before" -t cpu -f json | jq .total)" \
	"the cpu total survives the round trip"
is "$(total 'folded')" 10 "the folded push totals 10"

# every format
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-1d
is "$(printf '%s' "$body" | jq -r '.tree.name + " " + (.top | length > 0 | tostring)')" "root true" \
	"json: a tree and top rows"
is "$(printf '%s' "$body" | jq '.total')" "$(printf '%s' "$body" | jq '[.top[].flat] | add')" \
	"json: the flat values add up to the total"
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-1d --data-urlencode max_nodes=3
is "$(printf '%s' "$body" | jq '.truncated')" true "max_nodes truncates the tree"
is "$(printf '%s' "$body" | jq '[.tree | .. | objects | select(has("children"))] | length')" 3 "to 3 nodes"
http GET /api/v1/profile -G --data-urlencode 'query=folded' --data-urlencode from=now-1d --data-urlencode format=folded
is "$body" "$(printf 'main;idle 3\nmain;work;spin 7')" "folded"
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-1d --data-urlencode format=svg
like "$body" '^<\?xml|<svg' "svg: a flame graph"
like "$body" 'main\.alpha' "with the functions"
curl -s -D "$T/h" -o "$T/dl.pb.gz" -G "$URL/api/v1/profile" --data-urlencode 'query=cpu:samples{service="before"}' \
	--data-urlencode from=now-1d --data-urlencode format=pprof
like "$(cat "$T/h")" 'Content-Disposition: attachment; filename="profile.pb.gz"' "pprof comes as a download"
if [ -n "$GO" ]; then
	is "$(HOME=$T "$GO" tool pprof -top -nodefraction=0 "$T/dl.pb.gz" 2>/dev/null | awk '$NF=="main.alpha" {print $1}')" \
		"$(HOME=$T "$GO" tool pprof -top -nodefraction=0 -sample_index=samples "$before" 2>/dev/null | awk '$NF=="main.alpha" {print $1}')" \
		"go tool pprof reads the download: main.alpha as in the file"
fi
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-1d \
	--data-urlencode format=groups --data-urlencode group_by=service
is "$(printf '%s' "$body" | jq -r '[.groups[].group] | sort | join(",")')" "after,before" "groups: one per value"
printf '%s' "$body" | jq -r '.groups[] | select(.group=="after") | .pprof' | base64 -d >"$T/g.pb.gz"
is "$("$CPROF" query -i "$T/g.pb.gz" -f json | jq .total)" "$(total 'cpu:samples{service="after"}')" \
	"a group's pprof holds that group's samples"
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-1d \
	--data-urlencode format=top --data-urlencode focus=gamma
like "$body" 'main\.gamma' "focus keeps main.gamma"
unlike "$body" 'main\.alpha' "and drops the rest"

# range and diff
# buckets on the grid of the step since the epoch: the last 10 minutes in
# 1m steps are 11 buckets, the first holding from and the last holding to
http GET /api/v1/range -G --data-urlencode 'query=cpu:samples' --data-urlencode from=now-10m --data-urlencode step=1m
is "$(printf '%s' "$body" | jq '.points | length')" 11 "range: 11 steps of 1m (the last holds now)"
is "$(printf '%s' "$body" | jq '[.from, .to, (.points[].time)] | map(. % 60000000000) | add')" 0 \
	"range: from, to and every step on the minute"
rfrom=$(printf '%s' "$body" | jq .from)
rto=$(printf '%s' "$body" | jq .to)
is "$(printf '%s' "$body" | jq '[.points[].value] | add')" "$(curl -s -G "$URL/api/v1/profile" \
	--data-urlencode 'query=cpu:samples' --data-urlencode "from=$rfrom" --data-urlencode "to=$rto" --data-urlencode max_nodes=1 | jq .total)" \
	"range: the steps add up to the profile's total over their range"
m0=$(( $(date +%s) / 60 * 60 - 600 ))
http GET /api/v1/range -G --data-urlencode 'query=cpu:samples' --data-urlencode "from=$((m0 + 5))" --data-urlencode "to=$((m0 + 605))" --data-urlencode step=1m
r1=$body
http GET /api/v1/range -G --data-urlencode 'query=cpu:samples' --data-urlencode "from=$((m0 + 50))" --data-urlencode "to=$((m0 + 650))" --data-urlencode step=1m
is "$body" "$r1" "range: 45 s later (within a step) the same buckets and values"
http GET /api/v1/diff -G --data-urlencode 'before=cpu:samples{service="before"}' \
	--data-urlencode 'after=cpu:samples{service="after"}' --data-urlencode from=now-1d
is "$code" 200 "diff: 200"
is "$(printf '%s' "$body" | jq -r '.rows[0].name')" main.gamma "diff: the largest change first (main.gamma)"
cli=$("$CPROF" diff -f json "$before" "$after" -t samples | jq -c '.rows[0] | [.before, .after]')
is "$(printf '%s' "$body" | jq -c '.rows[0] | [.before, .after]')" "$cli" "diff: the same figures as cprof diff on the files"
is "$(printf '%s' "$body" | jq '.tree.before')" "$(printf '%s' "$body" | jq .total_before)" "diff: a two-sided tree"
http GET /api/v1/diff -G --data-urlencode 'before=cpu:samples{service="before"}' \
	--data-urlencode 'after=cpu:samples{service="after"}' --data-urlencode from=now-1d --data-urlencode format=svg
like "$body" 'Differential' "diff: a differential flame graph"
http GET /api/v1/stats
ok "stats: series counted" test "$(printf '%s' "$body" | jq .series)" -ge 5

# query errors
http GET /api/v1/profile -G --data-urlencode 'query=cpu{service="'
is "$code" 400 "a bad selector: 400"
like "$(printf '%s' "$body" | jq -r .error)" 'query: .*column' "with the column"
http GET /api/v1/profile -G --data-urlencode 'query=cpu:samples{service="nope"}'
is "$code" 404 "no matching series: 404"
http GET /api/v1/profile
is "$code" 400 "several types and no selector: 400"
like "$(printf '%s' "$body" | jq -r .error)" 'matches [0-9]+ profile types; name one' "naming the types"
http GET /api/v1/profile -G --data-urlencode 'query=folded' --data-urlencode from=yesterday
is "$code" 400 "a bad time: 400"
http GET /api/v1/profile -G --data-urlencode 'query=folded' --data-urlencode format=png
is "$code" 400 "a bad format: 400"
is "$(printf '%s' "$body" | jq -r .error)" "unknown format 'png' (choose top, folded, svg, json, pprof or groups)" \
	"naming the formats of the table (the API calls flamegraph svg)"
http GET /api/v1/profile -G --data-urlencode 'query=folded' --data-urlencode format=table
is "$code" 400 "format=table (a diff's) is not a profile's: 400"
http GET /api/v1/profile -G --data-urlencode 'query=folded' --data-urlencode format=flamegraph
is "$code" 400 "the API's name for the flame graph is svg: flamegraph is 400"
http GET /api/v1/diff -G --data-urlencode 'before=folded' --data-urlencode 'after=folded' --data-urlencode format=top
is "$code" 400 "format=top (a profile's) is not a diff's: 400"
is "$(printf '%s' "$body" | jq -r .error)" "unknown format 'top' (choose table, folded, svg, json or pprof)" \
	"naming the diff formats"
is "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$URL/api/v1/profile?query=folded&format=pprof")" \
	"200 application/octet-stream" "format=pprof: the table's Content-Type"
is "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$URL/api/v1/profile?query=folded&format=svg")" \
	"200 image/svg+xml" "format=svg: the table's Content-Type"
http GET /api/v1/values
is "$code" 400 "values without a label: 400"
http GET /api/v1/diff -G --data-urlencode 'before=folded'
is "$code" 400 "diff without after: 400"
http GET /nowhere
is "$code" 404 "an unknown path: 404"
http DELETE /api/v1/push
is "$code" 405 "a wrong method: 405"

# ---- bad pushes store nothing ----
n0=$(curl -s "$URL/api/v1/stats" | jq .series)
http POST '/api/v1/push?name=bad' --data-binary 'not a profile at all'
is "$code" 400 "a malformed body: 400"
like "$(printf '%s' "$body" | jq -r .error)" 'not a profile' "with the reason"
head -c 3000 /dev/urandom | gzip >"$T/junk.gz"
http POST '/api/v1/push?name=bad' --data-binary @"$T/junk.gz"
is "$code" 400 "gzipped junk: 400"
http POST '/api/v1/push?name=bad'
is "$code" 400 "an empty body: 400"
http POST '/api/v1/push?name=bad&bad-label=1' --data-binary @"$before"
is "$code" 400 "a bad label name: 400"
http POST '/api/v1/push?name=bad&time=tomorrow' --data-binary @"$before"
is "$code" 400 "a bad time: 400"
is "$(curl -s "$URL/api/v1/stats" | jq .series)" "$n0" "nothing was stored by the bad pushes"

# ---- Pyroscope ----
now=$(date +%s)
printf 'main;work;spin 30\nmain;idle 10\n' >"$T/p.folded"
http POST "/ingest?name=shop.cpu%7Benv%3Dprod%7D&from=$((now - 10))&until=$now&sampleRate=100&spyName=ebpfspy" \
	--data-binary @"$T/p.folded"
is "$code" 200 "pyroscope folded: 200"
is "$(total 'process_cpu{service_name="shop",env="prod"}')" 400000000 \
	"counts become nanoseconds (40 samples at 100 Hz = 0.4 s)"
printf 'main;lines;a\nmain;lines;a\nmain;lines;b\n' >"$T/p.lines"
http POST "/ingest?name=lines.cpu&format=lines&sampleRate=1000" --data-binary @"$T/p.lines"
is "$code" 200 "pyroscope lines: 200"
is "$(total 'process_cpu{service_name="lines"}')" 3000000 "each line counts once (3 at 1000 Hz = 3 ms)"
gzip -c "$T/p.folded" >"$T/p.folded.gz"
http POST "/ingest?name=zipped.cpu&sampleRate=100" -H 'Content-Encoding: gzip' --data-binary @"$T/p.folded.gz"
is "$(total 'process_cpu{service_name="zipped"}')" 400000000 "a gzipped folded body is taken too"
http POST "/ingest?name=heapy.alloc_space%7B%7D&units=bytes" --data-binary 'main;alloc 4096'
is "$(total 'memory:alloc_space{service_name="heapy"}')" 4096 ".alloc_space becomes memory:alloc_space:bytes"
http POST "/ingest?name=raw.cpu&format=pprof" --data-binary @"$before"
is "$code" 200 "pyroscope pprof in the body: 200"
http POST "/ingest?name=form.cpu&format=pprof" -F "profile=@$before" -F 'sample_type_config={"cpu":{"units":"nanoseconds"}}'
is "$code" 200 "pyroscope pprof as a multipart field (curl -F): 200"
is "$(total 'process_cpu:cpu{service_name="form"}')" "$("$CPROF" query -i "$before" -t cpu -f json | jq .total)" \
	"the multipart profile is stored whole"
http POST "/ingest?name=form.cpu&format=pprof" -F "other=@$before"
is "$code" 400 "multipart without a profile field: 400"
http POST "/ingest?format=folded" --data-binary @"$T/p.folded"
is "$code" 400 "pyroscope without a name: 400"
http POST "/ingest?name=x.cpu%7Benv%7D" --data-binary @"$T/p.folded"
is "$code" 400 "a label without = : 400"
http POST "/ingest?name=x.cpu&format=xml" --data-binary @"$T/p.folded"
is "$code" 400 "an unknown format: 400"
like "$(printf '%s' "$body" | jq -r .error)" "format 'xml' is not one .*: folded \\(or groups\\), lines, pprof" "saying which are taken"
http POST "/ingest?name=x.cpu&sampleRate=0" --data-binary @"$T/p.folded"
is "$code" 400 "sampleRate 0: 400"
http POST "/ingest?name=myapp.cpuenv=dev" --data-binary @"$T/p.folded"
is "$code" 400 "a type no selector could name (myapp.cpuenv=dev): 400"
http POST "/ingest?name=myapp.mine&units=a%20b" --data-binary @"$T/p.folded"
is "$code" 400 "units with a space: 400"
http POST "/api/v1/push?name=a%20b" --data-binary @"$before"
is "$code" 400 "a native push named with a space: 400"

# ---- Parca writeraw ----
b64() { base64 -w0 "$1"; }
printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"parca_agent_cpu"},{"name":"node","value":"n1"}]},"samples":[{"rawProfile":"%s"}]},{"labels":{"labels":[{"name":"__name__","value":"memory"},{"name":"job","value":"api"}]},"samples":[{"rawProfile":"%s"}]}],"normalized":true}' \
	"$(b64 "$before")" "$(b64 "$heap")" >"$T/wr.json"
http POST /api/profiles/writeraw --data-binary @"$T/wr.json"
is "$code/$body" "200/{}" "parca writeraw: 200 {}"
is "$(total 'parca_agent_cpu:samples{node="n1"}')" "$("$CPROF" query -i "$before" -t samples -f json | jq .total)" \
	"the agent's profile is stored under __name__ with its labels"
is "$(total 'memory:inuse_space{job="api"}')" "$("$CPROF" query -i "$heap" -t inuse_space -f json | jq .total)" \
	"and the second series too"
n0=$(curl -s "$URL/api/v1/stats" | jq .series)
printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"atomic"}]},"samples":[{"rawProfile":"%s"},{"rawProfile":"bm90IGEgcHJvZmlsZQ=="}]}]}' \
	"$(b64 "$before")" >"$T/half.json"
http POST /api/profiles/writeraw --data-binary @"$T/half.json"
is "$code" 400 "writeraw with one bad profile of two: 400"
is "$(curl -s "$URL/api/v1/stats" | jq .series)" "$n0" "nothing of that request was stored"
http POST /api/profiles/writeraw --data-binary '{"series":[{"samples":[{"rawProfile":"@@@"}]}]}'
is "$code" 400 "bad base64: 400"
http POST /api/profiles/writeraw --data-binary '{"nope":1}'
is "$code" 400 "no series: 400"
http GET /api/profiles/types
like "$body" '"name":"parca_agent_cpu","sampleType":"samples"' "parca's types API answers"
http GET /api/profiles/labels/job/values
is "$body" '{"labelValues":["api"]}' "parca's label values API answers"

# ---- a Go client (net/http) ----
if [ -n "$GO" ]; then
	if HOME=$T GOCACHE=$T/gocache GO111MODULE=off "$GO" build -o "$T/client" "$FIXTURES/serve/client.go" 2>"$T/gobuild.err"; then
		run "$T/client" "$URL" "" native "$before"
		like "$out" '^200 \{"profiles":1' "a Go net/http client pushes a profile"
		run "$T/client" "$URL" "" pyroscope "$after"
		like "$out" '^200 ' "a Go client pushes to /ingest as pyroscope-go does (multipart)"
		run "$T/client" "$URL" "" series
		like "$out" 'goclient:samples:count:cpu:nanoseconds:delta region=eu-west,service=checkout,version=1\.2\.3' \
			"the Go client reads its series back with the labels it sent"
		like "$out" 'process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta env=prod,pyroscope_spy=gospy,service_name=shop,team=payments' \
			"and the pyroscope-style push with the labels of its name"
	else
		ok "go build of the test client" false
		sed 's/^/# /' "$T/gobuild.err"
	fi
else
	ok "go is installed (apt-get install golang-go)" false
fi

# ---- concurrent queries (each thread renders its own tree) ----
if [ -x "$T/client" ] && HOME=$T GOCACHE=$T/gocache GO111MODULE=off "$GO" build -o "$T/load" "$srcdir/bench/serve_load.go" 2>/dev/null; then
	"$T/load" -mode query -url "$URL" -clients 8 -n 400 \
		"/api/v1/profile?query=cpu%3Asamples&from=now-1d&max_nodes=5" \
		"/api/v1/profile?query=cpu%3Acpu&from=now-1d&max_nodes=7" \
		"/api/v1/diff?before=cpu%3Asamples%7Bservice%3D%22before%22%7D&after=cpu%3Asamples&from=now-1d&max_nodes=4" \
		>"$T/q.json" 2>&1
	is "$(jq -r '"\(.requests) \(.errors)"' "$T/q.json")" "400 0" "400 concurrent pruned-tree queries from 8 clients: no errors"
	http GET /healthz
	is "$code" 200 "and the server is still up"
fi

# ---- limits ----
stop_server
start_server s2 --listen 127.0.0.1:0 --data "$T/data" --max-body 4K
head -c 20000 /dev/urandom >"$T/big"
http POST '/api/v1/push?name=big' --data-binary @"$T/big"
is "$code" 413 "a body over --max-body: 413"
like "$(printf '%s' "$body" | jq -r .error)" 'max-body' "naming the option"
http POST '/api/v1/push?name=big' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big"
is "$code" 413 "a chunked body over the limit: 413"
http POST '/api/v1/push?name=small&service=small&time=now' --data-binary @"$before"
is "$code" 200 "a body under the limit on the same server: 200"
http POST '/api/v1/push?name=junk' --data-binary 'junk'
is "$code" 400 "and a malformed one: 400"
http GET /api/v1/types
unlike "$body" '(big|junk):' "the refused bodies stored nothing"

# ---- metrics ----
http GET /metrics
like "$body" 'cprof_ingest_profiles_total\{api="native"\} 1' "metrics count the stored push"
like "$body" 'cprof_ingest_errors_total\{api="native"\} 1' "and the malformed one"
like "$body" 'cprof_http_requests_total\{handler="push",code="413"\} 2' "requests by handler and code"
like "$body" 'cprof_http_request_duration_seconds_bucket\{handler="push",le="\+Inf"\} [0-9]+' "a latency histogram"
like "$body" 'cprof_store_bytes [1-9][0-9]*' "the store's size"
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "SIGTERM stops the server with exit 0"

# ---- tokens and TLS ----
printf 's3cr3t-token\n' >"$T/token"
if command -v openssl >/dev/null; then
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 \
		-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
	start_server s3 --listen 127.0.0.1:0 --data "$T/data" --token-file "$T/token" --tls-cert "$T/cert.pem" \
		--tls-key "$T/key.pem"
	like "$URL" '^https://' "with --tls-cert it serves HTTPS"
	C="--cacert $T/cert.pem"
else
	start_server s3 --listen 127.0.0.1:0 --data "$T/data" --token-file "$T/token"
	C=
	ok "openssl is installed (apt-get install openssl)" false
fi
# shellcheck disable=SC2086
{
	http GET /api/v1/types $C
	is "$code" 401 "no token: 401"
	like "$(printf '%s' "$body" | jq -r .error)" 'Bearer' "saying how to send it"
	http GET /api/v1/types $C -H 'Authorization: Bearer wrong'
	is "$code" 401 "a wrong token: 401"
	http POST '/api/v1/push?name=cpu' $C -H 'Authorization: Bearer wrong' --data-binary @"$before"
	is "$code" 401 "a push with a wrong token: 401"
	http GET /api/v1/types $C -H 'Authorization: Bearer s3cr3t-token'
	is "$code" 200 "the right token: 200"
	http GET /healthz $C -b 'cprof_token=s3cr3t-token'
	is "$code" 200 "the token as the browser's cookie: 200"
	curl -s -D "$T/h303" -o /dev/null $C -H 'Accept: text/html' "$URL/?query=cpu&from=now-2h"
	like "$(cat "$T/h303")" '^HTTP/[0-9.]+ 303' "a browser without the token is sent to the login page"
	like "$(cat "$T/h303")" 'Location: /login\?next=%2F%3Fquery%3Dcpu%26from%3Dnow-2h' "and back to its view afterwards"
	http GET /login $C
	is "$code" 200 "the login page is served without the token"
	curl -s -o /dev/null -w '%{http_code}' "${URL%%:*}://127.0.0.1:1/" >/dev/null 2>&1
}
stop_server
run "$CPROF" serve --listen 127.0.0.1:0 --data "$T/data" --token-file "$T/missing"
is "$rc" 1 "a missing token file: exit 1"
like "$err" 'missing' "naming the file"
: >"$T/empty"
run "$CPROF" serve --listen 127.0.0.1:0 --data "$T/data" --token-file "$T/empty"
is "$rc" 1 "an empty token file: exit 1"
if command -v openssl >/dev/null; then
	run "$CPROF" serve --listen 127.0.0.1:0 --data "$T/data" --tls-cert "$T/cert.pem" --tls-key "$T/cert.pem"
	is "$rc" 1 "a certificate as its own key: exit 1"
	like "$err" 'TLS' "the error names TLS"
fi

# ---- a config file ----
printf 'listen: 127.0.0.1:0\ndata: %s\nmax_body: 2K\n' "$T/data" >"$T/cprof.yaml"
start_server s4 --config "$T/cprof.yaml"
http POST '/api/v1/push?name=cfg' --data-binary @"$T/big"
is "$code" 413 "--config sets max_body"
stop_server
start_server s5 --config "$T/cprof.yaml" --max-body 1M
http POST '/api/v1/push?name=cfg&service=cfg&time=now' --data-binary @"$before"
is "$code" 200 "an option given on the command line wins over the file"
stop_server

# ---- a restart while clients push: every answered push is kept ----
if [ -n "$GO" ] && HOME=$T GOCACHE=$T/gocache GO111MODULE=off "$GO" build -o "$T/load" "$srcdir/bench/serve_load.go" 2>/dev/null; then
	start_server s6 --listen 127.0.0.1:0 --data "$T/rdata"
	port=${URL##*:}
	"$T/load" -mode push -url "$URL" -clients 4 -duration 6s -start $(($(date +%s) - 1800)) "$before" >"$T/load.json" 2>&1 &
	lp=$!
	PIDS="$PIDS $lp"
	sleep 2
	kill -KILL "$SPID"
	wait "$SPID" 2>/dev/null
	sleep 1
	start_server s7 --listen "127.0.0.1:$port" --data "$T/rdata"
	wait $lp
	acc=$(jq .pushes "$T/load.json")
	errs=$(jq .errors "$T/load.json")
	per=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
	got=$(curl -s -G "$URL/api/v1/profile" --data-urlencode 'query=bench:samples' --data-urlencode from=now-2h \
		--data-urlencode max_nodes=1 | jq .total)
	diag "accepted $acc pushes, $errs failed while the server was down; stored total $got (each $per)"
	ok "pushes went on after the restart (some failed while it was down: $errs)" test "$errs" -gt 0
	ok "every answered push is stored ($got >= $acc x $per)" test "$got" -ge "$((acc * per))"
	ok "and no more than was sent ($got <= ($acc + $errs) x $per)" test "$got" -le "$(((acc + errs) * per))"
	ok "the store is sound after SIGKILL" sqlite3 "$T/rdata/store.db" 'PRAGMA integrity_check'
	stop_server
fi

# ---- retention runs in the server ----
start_server s8 --listen 127.0.0.1:0 --data "$T/ret"
http POST "/api/v1/push?name=old&service=old&time=now-3d" --data-binary @"$before"
is "$code" 200 "a push dated three days ago"
http POST "/api/v1/push?name=old&service=new&time=now" --data-binary @"$before"
# the series of a time range: those of the days that overlap it
series_in() { curl -s -G "$URL/api/v1/series" --data-urlencode 'query={}' "$@" | jq -r '[.[].labels.service] | unique | join(",")'; }
is "$(series_in)" "new,old" "/api/v1/series: every day's series"
is "$(series_in --data-urlencode from=now-1h)" "new" "with from=now-1h: today's only"
is "$(series_in --data-urlencode from=now-4d --data-urlencode to=now-2d)" "old" "with from=now-4d&to=now-2d: that day's only"
is "$(curl -s -G "$URL/api/v1/labels" --data-urlencode 'query={}' --data-urlencode from=now-1h | jq -c .)" '["service"]' \
	"/api/v1/labels takes the range too"
http GET /api/v1/series -G --data-urlencode 'query={}' --data-urlencode from=yesterdayish
is "$code" 400 "a bad from: 400"
stop_server
days_before=$(ls "$T/ret/days" | grep -c '\.db$')
start_server s9 --listen 127.0.0.1:0 --data "$T/ret" --retention 1d
sleep 0.5
is "$(curl -s -G "$URL/api/v1/profile" --data-urlencode 'query=old:samples{service="old"}' --data-urlencode from=now-5d \
	--data-urlencode max_nodes=1 | jq '.total // 0')" 0 "--retention 1d dropped the three-day-old data"
is "$(curl -s -G "$URL/api/v1/series" --data-urlencode 'query={service="old"}' | jq length)" 0 \
	"and its series (the day's file held them)"
ok "the current data stays" test "$(total 'old:samples{service="new"}')" -gt 0
is "$((days_before - $(ls "$T/ret/days" | grep -c '\.db$')))" 1 "one day's partition file was deleted"
stop_server

# a sanitizer build reports into the servers' stderr
reports=$(cat "$T"/s*.err | grep -E 'AddressSanitizer|LeakSanitizer|runtime error' | head -5)
is "$reports" "" "no sanitizer reports from the servers"

done_testing
