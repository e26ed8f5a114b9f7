# Grafana reads cprof serve (#51): Pyroscope's query API, as Grafana's Pyroscope data source calls
# it, answered to a real Connect client: one generated from Pyroscope's own .proto files
# (proto/pyroscope) by buf with @bufbuild/protoc-gen-es, on @connectrpc/connect-node and
# @bufbuild/protobuf (tools/setup.sh installs them from npm), in the protobuf and the JSON encoding.
# The server holds what cprof import, cprof record (as root) and the official Pyroscope Node.js client
# put in; the totals of
# SelectMergeStacktraces, SelectMergeProfile and SelectSeries are cprof query's for the same
# selection; hostile requests get Connect's errors.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
use_test_npm
for m in @connectrpc/connect @connectrpc/connect-node @bufbuild/protobuf @bufbuild/protoc-gen-es @bufbuild/buf @pyroscope/nodejs; do
	[ -d "$NPM_PREFIX/node_modules/$m" ] || skip_all "$m is not installed (tools/setup.sh)"
done
SPID= SPID2=
trap 'kill $SPID $SPID2 2>/dev/null; rm -rf "$T"' EXIT

# ---- the client, generated from the pinned .proto files ----
mkdir -p "$T/client"
ln -s "$NPM_PREFIX/node_modules" "$T/client/node_modules" # an ES module finds its packages by its path
cp "$FIXTURES/grafana/client.mjs" "$T/client/"
cat >"$T/client/buf.gen.yaml" <<'YAML'
version: v2
plugins:
  - local: protoc-gen-es
    out: gen
    opt: [target=js, import_extension=js]
YAML
run env HOME="$T" BUF_CACHE_DIR="$T/bufcache" sh -c "cd '$T/client' && buf generate '$(cd "$srcdir" && pwd)/proto/pyroscope' --template buf.gen.yaml"
is "$rc" 0 "buf generates the client from proto/pyroscope${err:+: $err}"
ok "it has QuerierService" grep -q 'export const QuerierService' "$T/client/gen/querier/v1/querier_pb.js"

# ---- a server filled by cprof import and the Pyroscope Node.js client ----
D=$T/data
printf 'main;a;b 10\nmain;a;c 5\nmain;d 3\n' >"$T/web.folded"
ok "cprof import of a pprof" "$CPROF" import --data "$D" "$FIXTURES/cpu-before.pb.gz"
ok "cprof import of folded stacks as service_name=web" "$CPROF" import --data "$D" --name app --label service_name=web "$T/web.folded"
# cprof record's own types: on-CPU, off-CPU and wall with the waits' states (a series per program: comm)
recorded=no
if [ "$(id -u)" = 0 ]; then
	run timeout -s KILL 60 "$CPROF" record --data "$D" --off-cpu -F 99 -- \
		sh -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 0.3'
	is "$rc" 0 "cprof record --off-cpu of a shell loop and a sleep${err:+: $(printf '%s' "$err" | tail -n 1)}"
	[ "$rc" = 0 ] && recorded=yes
else
	diag "not root: no cprof record (it needs root or CAP_BPF and CAP_PERFMON)"
fi
start_ms=1000 # from 1970 on: the imported pprof is older than the server
serve_start s1 --listen 127.0.0.1:0 --data "$D"
[ -n "$URL" ] || { cat "$T/s1.err"; skip_all "cprof serve did not start"; }
run node "$FIXTURES/pyroscope/app.js" "$URL" 3000
is "$rc" 0 "the Pyroscope Node.js client pushes to cprof serve"
end_ms=$(($(date +%s) * 1000 + 60000))

# client TYPE SELECTOR ENCODING: the client's answers in $out
client() { run node "$T/client/client.mjs" "$URL" "$T/client/gen" "$3" "$1" "$2" "$start_ms" "$end_ms" ${4:-}; }
# query TYPE{SELECTOR}: cprof query's total over the same range
query() { "$CPROF" query --data "$D" "$1" --from 1 --to "$end_ms" -f json 2>/dev/null | jq -r .total; }

check() { # TYPE GRAFANA-SELECTOR CPROF-SELECTOR SERVICE
	want=$(query "$1$3")
	like "$want" '^[1-9][0-9]*$' "cprof query $1$3 has samples ($want)"
	for enc in proto json; do
		client "$1" "$2" $enc
		is "$rc" 0 "$enc: every method answers for $1$2"
		[ "$rc" = 0 ] || diag "$out"
		is "$(printf '%s' "$out" | jq -r .flamegraph.total)" "$want" "$enc: SelectMergeStacktraces' total is cprof query's"
		is "$(printf '%s' "$out" | jq -r '.flamegraph.root | join(",")')" "0,$want,0,0" "$enc: its root level is [0, total, 0, \"total\"]"
		is "$(printf '%s' "$out" | jq -r .flamegraph.levelsFit)" true "$enc: its levels fit in the total"
		is "$(printf '%s' "$out" | jq -r .small.total)" "$want" "$enc: with max_nodes 2 the total stays"
		is "$(printf '%s' "$out" | jq -r '(.small.names | length) <= .flamegraph.names')" true \
			"$enc: and no more names"
		is "$(printf '%s' "$out" | jq -r .stacktracesPprofTotal)" "$want" "$enc: SelectMergeStacktraces as pprof: the same total"
		is "$(printf '%s' "$out" | jq -r .pprof.total)" "$want" "$enc: SelectMergeProfile's total is cprof query's"
		is "$(printf '%s' "$out" | jq -r .trim.total)" "$want" "$enc: SelectMergeProfile with max_nodes 3: the same total"
		is "$(printf '%s' "$out" | jq -r .trim.sameTotals)" true "$enc: its nodes but other have their totals of the whole profile"
		is "$(printf '%s' "$out" | jq -r 'if .trim.due then (.trim.nodes < .trim.wholeNodes and .trim.other) else (.trim.nodes == .trim.wholeNodes and (.trim.other | not)) end')" \
			true "$enc: and fewer nodes, the rest in other, when a node is under the 3rd largest ($(printf '%s' "$out" | jq -c .trim | cut -c1-120))"
		is "$(printf '%s' "$out" | jq -r '[.selectSeries[].total] | add')" "$want" "$enc: SelectSeries' points add up to it"
		[ "$4" = '*' ] || # (*: whichever)
			is "$(printf '%s' "$out" | jq -r '[.selectSeries[].labels.service_name] | join(",")')" "$4" "$enc: grouped by service_name"
		is "$(printf '%s' "$out" | jq -r .type)" "$1" "$enc: ProfileTypes lists $1 with its parts"
		is "$(printf '%s' "$out" | jq -r .settings)" 0 "$enc: settings.v1.SettingsService/Get: no settings"
		is "$(printf '%s' "$out" | jq -r .stats.ingested)" true "$enc: GetProfileStats: data was ingested"
		ok "$enc: GetProfileStats: its oldest and newest times (ms) are in order and not in the future" \
			test "$(printf '%s' "$out" | jq -r .stats.oldest)" -gt 0 -a \
			"$(printf '%s' "$out" | jq -r .stats.oldest)" -le "$(printf '%s' "$out" | jq -r .stats.newest)" -a \
			"$(printf '%s' "$out" | jq -r .stats.newest)" -le "$end_ms"
		like "$(printf '%s' "$out" | jq -r '.series | map(.__profile_type__ + " " + .service_name) | join(",")')" "$1 " \
			"$enc: Series by __profile_type__ gives service_name"
		is "$(printf '%s' "$out" | jq -r '.errors | to_entries | map(.key + "=" + .value) | join(" ")')" \
			"badSelector=InvalidArgument badType=InvalidArgument negativeMaxNodes=InvalidArgument emptyRange=InvalidArgument twoGroupBy=Unimplemented maxNodesHuge=ok unknownType=ok hugeRange=InvalidArgument" \
			"$enc: bad selections get Connect's error codes"
	done
}
check process_cpu:cpu:nanoseconds:cpu:nanoseconds '{service_name="nodeapp"}' '{service_name="nodeapp"}' nodeapp
check wall:wall:nanoseconds:wall:nanoseconds '{service_name="nodeapp"}' '{service_name="nodeapp"}' nodeapp
check app:samples:count:samples:count '{service_name="web"}' '{service_name="web"}' web
# main;a;b 10, main;a;c 5, main;d 3: the 3 largest nodes are main (18), a (15) and b (10)
is "$(printf '%s' "$out" | jq -r .trim.stacks)" "main;a;b 10,main;a;other 5,main;other 3" \
	"SelectMergeProfile with max_nodes 3: c and d, under b's 10, are other"
# a series without service_name, job or comm is service_name="cprof"
check process_cpu:cpu:nanoseconds:cpu:nanoseconds '{service_name="cprof"}' '{service_name="",job="",comm=""}' cprof
if [ $recorded = yes ]; then
	# a recorded series' service_name is its comm
	check process_cpu:cpu:nanoseconds:cpu:nanoseconds '{service_name="sh"}' '{service_name="",comm="sh"}' sh
	check offcpu:offcpu:nanoseconds:offcpu:nanoseconds '{service_name=~"sh|sleep"}' '{service_name="",comm=~"sh|sleep"}' sh,sleep
	# the waits' states are labels of the samples, which selectors take
	check wall:wall:nanoseconds:wall:nanoseconds '{service_name="sleep",state="S"}' '{service_name="",comm="sleep",state="S"}' sleep
	all='*' # (sleep may have had a CPU sample or not)
else
	all=cprof,nodeapp
fi
# both: a selection of service_name over series that have it and series that do not
check process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' '' "$all"
check process_cpu:cpu:nanoseconds:cpu:nanoseconds '{service_name=~"node.*|cprof|sh|sleep",env!="x"}' '' "$all"

client process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' json
is "$(printf '%s' "$out" | jq -r '.profileTypes | index("process_cpu:cpu:nanoseconds:cpu:nanoseconds") != null')" true \
	"ProfileTypes: the Pyroscope ids (no :delta)"
is "$(printf '%s' "$out" | jq -r '.services | join(",")')" "$([ $recorded = yes ] && echo cprof,nodeapp,sh,sleep,web || echo cprof,nodeapp,web)" \
	"LabelValues service_name: every service"
is "$(printf '%s' "$out" | jq -r '.privateValues | length')" 0 "LabelValues of a __ label: none (private, as in Pyroscope)"
unlike "$(printf '%s' "$out" | jq -r '.labelNames | join(",")')" '__' "LabelNames hides the __ labels"
like "$(printf '%s' "$out" | jq -r '.labelNames | join(",")')" 'service_name' "LabelNames has service_name"
if [ $recorded = yes ]; then
	# pid and state are labels of the samples, not of the series: their values come from the samples
	want=$("$CPROF" query --data "$D" --from 1 --to "$end_ms" --values pid | LC_ALL=C sort | paste -sd, -)
	like "$want" '^[0-9]' "cprof query --values pid lists the recorded processes ($want)"
	is "$(printf '%s' "$out" | jq -r '.pids | join(",")')" "$want" "LabelValues of pid, a sample label: the pids cprof query --values pid lists"
	is "$(printf '%s' "$out" | jq -r '.sleepStates | index("S") != null')" true \
		"LabelValues of state with {service_name=\"sleep\"}: the sleep's wait (S) is there"
else
	is "$(printf '%s' "$out" | jq -r '.pids | length')" 0 "LabelValues of pid with nothing recorded: none"
fi

# ---- /pyroscope/render: the flamebearer JSON of Grafana's Profiles Drilldown ----
from_ms=$((end_ms - 7200000)) # the last two hours: the pushes and the folded import, not the older pprof

# the list methods take the time range: the old pprof's day (its series are service_name="cprof") is not in the last two hours
sv=$start_ms; start_ms=$from_ms
client process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' proto
start_ms=$sv
is "$(printf '%s' "$out" | jq -r '.services | join(",")')" "$([ $recorded = yes ] && echo nodeapp,sh,sleep,web || echo nodeapp,web)" \
	"LabelValues service_name over the last two hours: the services of those days only"
is "$(printf '%s' "$out" | jq -r '.profileTypes | index("process_cpu:samples:count:cpu:nanoseconds") == null')" true \
	"ProfileTypes over the last two hours: not the old pprof's samples type"
render() { _q=$1; shift; http GET /pyroscope/render -G --data-urlencode "query=$_q" --data-urlencode "from=$from_ms" \
	--data-urlencode "until=$end_ms" "$@"; }
for q in 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="nodeapp"}' 'wall:wall:nanoseconds:wall:nanoseconds{}' \
	'app:samples:count:samples:count{service_name="web"}'; do
	want=$("$CPROF" query --data "$D" "$q" --from "$from_ms" --to "$end_ms" -f json 2>/dev/null | jq -r .total)
	render "$q"
	is "$code $(printf '%s' "$body" | jq -r .flamebearer.numTicks)" "200 $want" "render $q: numTicks is cprof query's total"
	is "$(printf '%s' "$body" | jq -r '.timeline.samples | add')" "$want" "render $q: its timeline adds up to it"
	# the 3rd largest total of a node (not the root)
	third=$(printf '%s' "$body" | jq -r '[.flamebearer.levels[1:][] | . as $l | range(1; length; 4) | $l[.]] | sort | reverse | .[2] // 0')
	is "$(printf '%s' "$body" | jq -r '[.version, .flamebearer.levels[0][1], .metadata.format, .timeline.durationDelta] | join(" ")')" \
		"1 $want single 15" "render $q: version 1, the root level, format single, 15 s steps over two hours"
	render "$q" --data-urlencode groupBy=service_name --data-urlencode max-nodes=3
	is "$(printf '%s' "$body" | jq -r '[.groups[] | .samples | add] | add')" "$want" "render $q grouped by service_name: the groups add up"
	is "$(printf '%s' "$body" | jq -r '.flamebearer.numTicks')" "$want" "render $q with max-nodes=3: the total stays"
	is "$(printf '%s' "$body" | jq -r --argjson m "$third" '.flamebearer as $f | [$f.levels[1:][] | . as $l | range(0; length; 4) |
		select($f.names[$l[. + 3]] != "other") | $l[. + 1]] | all(. >= $m)')" true \
		"render $q with max-nodes=3: every node but other has at least the 3rd largest total ($third)"
done
render 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{}'
is "$(printf '%s' "$body" | jq -r .metadata.units,.metadata.sampleRate,.metadata.name | paste -sd' ')" "samples 1000000000 cpu" \
	"render of cpu: Pyroscope's units and sample rate"
render 'app:samples:count:samples:count{service_name="nobody"}'
is "$code $(printf '%s' "$body" | jq -c '[.flamebearer.numTicks, .flamebearer.names]')" '200 [0,[]]' "render of nothing: an empty flame graph"
for bad in 'query=x{' 'query=' 'query={a="b"}' 'query=cpu&from=now-300y' 'query=cpu&max-nodes=-1' 'query=cpu&from=now&until=now-1h' \
	'query=cpu&groupBy=a-b'; do
	http GET "/pyroscope/render?$bad" -g # (no globbing of the braces)
	is "$code $(printf '%s' "$body" | jq -r .code)" "400 invalid_argument" "render $bad: invalid_argument"
done
http GET '/pyroscope/render?query=cpu&format=dot'
is "$code $(printf '%s' "$body" | jq -r .code)" "501 unimplemented" "render format=dot: unimplemented"

# ---- /pyroscope/render-diff: two selections in one flame graph ----
L='process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="nodeapp"}' R='process_cpu:cpu:nanoseconds:cpu:nanoseconds{}'
lwant=$("$CPROF" query --data "$D" "$L" --from 1 --to "$end_ms" -f json 2>/dev/null | jq -r .total)
rwant=$("$CPROF" query --data "$D" "$R" --from 1 --to "$end_ms" -f json 2>/dev/null | jq -r .total)
for mn in 0 5; do
	http GET /pyroscope/render-diff -G --data-urlencode "leftQuery=$L" --data-urlencode "rightQuery=$R" \
		--data-urlencode leftFrom=1000 --data-urlencode rightFrom=1000 --data-urlencode "leftUntil=$end_ms" \
		--data-urlencode "rightUntil=$end_ms" --data-urlencode "max-nodes=$mn"
	is "$code $(printf '%s' "$body" | jq -r '[.leftTicks, .rightTicks, .flamebearer.numTicks, .metadata.format] | join(" ")')" \
		"200 $lwant $rwant $((lwant + rwant)) double" "render-diff (max-nodes $mn): leftTicks and rightTicks are cprof query's"
	is "$(printf '%s' "$body" | jq -c '.flamebearer.levels[0]')" "[0,$lwant,0,0,$rwant,0,0]" \
		"render-diff (max-nodes $mn): the root level holds both totals"
	# each level's nodes, on each side, end within the total (offsets from the previous node's end)
	is "$(printf '%s' "$body" | jq -r --argjson l "$lwant" --argjson r "$rwant" '[.flamebearer.levels[] |
		[range(0; length; 7) as $i | .[$i:$i+7]] | (map(.[0] + .[1]) | add) <= $l and (map(.[3] + .[4]) | add) <= $r] | all')" \
		true "render-diff (max-nodes $mn): every level fits on both sides"
done
http GET /pyroscope/render-diff -G --data-urlencode "leftQuery=$L" --data-urlencode 'rightQuery=wall:wall:nanoseconds:wall:nanoseconds{}'
is "$code $(printf '%s' "$body" | jq -r .code)" "400 invalid_argument" "render-diff of two types: invalid_argument"
http GET /pyroscope/render-diff -G --data-urlencode "leftQuery=$L"
is "$code $(printf '%s' "$body" | jq -r .code)" "400 invalid_argument" "render-diff without rightQuery: invalid_argument"
http POST /settings.v1.SettingsService/Set -H 'Content-Type: application/json' --data-binary '{}'
is "$code $(printf '%s' "$body" | jq -r .code)" "501 unimplemented" "settings.v1.SettingsService/Set: unimplemented"

# ---- Connect on the wire: curl ----
Q=/querier.v1.QuerierService
jcall() { http POST "$Q/$1" -H 'Content-Type: application/json' --data-binary "$2"; }
jcall ProfileTypes '{}'
is "$code" 200 "JSON ProfileTypes: 200"
like "$body" '"ID":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","name":"process_cpu","sampleType":"cpu"' "in proto3's JSON names"
run curl -s -o /dev/null -w '%{content_type}' -X POST -H 'Content-Type: application/proto' --data-binary '' "$URL$Q/ProfileTypes"
is "$out" application/proto "an empty protobuf request gets a protobuf answer"
jcall LabelValues '{"name":"service_name","matchers":["{__profile_type__=\"app:samples:count:samples:count\"}"]}'
is "$body" '{"names":["web"]}' "LabelValues with a __profile_type__ matcher"
jcall SelectMergeStacktraces '{"profile_typeID":"app:samples:count:samples:count","label_selector":"{service_name=\"web\"}","start":"1000","end":"'"$end_ms"'","max_nodes":"4"}'
is "$(printf '%s' "$body" | jq -c .flamegraph)" \
	'{"names":["total","main","a","b","c","other"],"levels":[{"values":["0","18","0","0"]},{"values":["0","18","0","1"]},{"values":["0","15","0","2","0","3","3","5"]},{"values":["0","10","10","3","0","5","5","4"]}],"total":"18","maxSelf":"10"}' \
	"the flame graph in Pyroscope's encoding (proto names taken): max_nodes 4 folds what is under the 4th total (d) into other"

# hostile requests: Connect's codes, never a crash
for c in '415 unimplemented text/plain {}' '400 invalid_argument application/json {' \
	'400 invalid_argument application/json []' '400 invalid_argument application/json {"start":"soon"}' \
	'400 invalid_argument application/json {"start":1e300}' '400 invalid_argument application/json {"matchers":"x"}' \
	'400 invalid_argument application/json {"matchers":[{"a":1}]}' '400 invalid_argument application/proto \377\377\377' \
	'400 invalid_argument application/json {"labelNames":["a"],"matchers":["{a=~\"(\"}"]}'; do
	set -- $c
	http POST "$Q/Series" -H "Content-Type: $3" --data-binary "$(printf "$4")"
	is "$code $(printf '%s' "$body" | jq -r .code 2>/dev/null)" "$1 $2" "Series with $3 '$4': $1 $2"
done
jcall SelectMergeStacktraces '{"profileTypeID":"process_cpu","labelSelector":"{service_name=~\"(a*)*b\"}","start":"1","end":"'"$end_ms"'"}'
like "$code" '^(200|400)$' "a costly regex: an answer ($code)"
jcall SelectMergeStacktraces "{\"profileTypeID\":\"process_cpu\",\"labelSelector\":\"{$(head -c 3000 /dev/zero | tr '\0' '(')\"}"
is "$(printf '%s' "$body" | jq -r .code)" invalid_argument "a deeply nested selector: invalid_argument"
jcall SelectSeries '{"profileTypeID":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","start":"1","end":"'"$end_ms"'","step":0.001}'
is "$(printf '%s' "$body" | jq -r .code)" invalid_argument "SelectSeries with too many steps: invalid_argument"
jcall SelectSeries '{"profileTypeID":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","start":"1","end":"'"$end_ms"'","step":"NaN"}'
is "$(printf '%s' "$body" | jq -r .code)" invalid_argument "SelectSeries with a step of NaN: invalid_argument"
jcall SelectMergeStacktraces '{"profileTypeID":"process_cpu","start":"-9223372036854775808","end":"9223372036854775807"}'
is "$(printf '%s' "$body" | jq -r .code)" invalid_argument "the widest range: invalid_argument"
jcall SelectMergeStacktraces '{"profileTypeID":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","format":"PROFILE_FORMAT_DOT"}'
is "$code $(printf '%s' "$body" | jq -r .code)" "501 unimplemented" "the DOT format: unimplemented"
jcall Nothing '{}'
is "$code $(printf '%s' "$body" | jq -r .code)" "501 unimplemented" "an unknown method: unimplemented"
http POST "$Q/Series" -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary '{}'
is "$(printf '%s' "$body" | jq -r .code)" unimplemented "a compressed body: unimplemented"
objs100=$(i=0; while [ $i -lt 100 ]; do printf '{},'; i=$((i + 1)); done)
printf '{"matchers":[' >"$T/deep.json"; head -c 20000 /dev/zero | tr '\0' '[' >>"$T/deep.json"
http POST "$Q/Series" -H 'Content-Type: application/json' --data-binary "@$T/deep.json"
is "$(printf '%s' "$body" | jq -r .code)" invalid_argument "JSON nested deep: invalid_argument"
# 150,000 empty objects (jansson would take hundreds of MB): refused on its count before it is parsed
{ printf '{"matchers":['; i=0; while [ $i -lt 1500 ]; do printf '%s' "$objs100"; i=$((i + 1)); done; printf '{}]}'; } \
	>"$T/many.json" 2>/dev/null || true
http POST "$Q/Series" -H 'Content-Type: application/json' --data-binary "@$T/many.json"
is "$code $(printf '%s' "$body" | jq -r .code)" "429 resource_exhausted" "150,000 JSON objects: resource_exhausted, before parsing"
like "$(printf '%s' "$body" | jq -r .message)" 'over 100000 JSON objects and arrays' "saying why"
http GET /healthz
is "$code" 200 "the server is still up"

# ---- the bearer token applies ----
printf 's3cret\n' >"$T/token"
SPID1=$SPID
serve_start s2 --listen 127.0.0.1:0 --data "$T/data2" --token-file "$T/token" # (URL becomes s2's)
SPID2=$SPID SPID=$SPID1
http POST "$Q/ProfileTypes" -H 'Content-Type: application/json' --data-binary '{}'
is "$code" 401 "without the token: 401"
# (start and end 0: the first call's body is empty; the server refuses a request without the token
# before reading its body and closes the connection, which a client still writing a body may see
# as EPIPE instead of the 401)
run node "$T/client/client.mjs" "$URL" "$T/client/gen" proto process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' 0 0 wrong
is "$(printf '%s' "$out" | jq -r .error.code)" Unauthenticated "the client with a wrong token: Unauthenticated"
run node "$T/client/client.mjs" "$URL" "$T/client/gen" proto process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' 1000 "$end_ms" s3cret
is "$(printf '%s' "$out" | jq -r '.profileTypes | length')" 0 "with the token: answers (an empty store)"
done_testing
