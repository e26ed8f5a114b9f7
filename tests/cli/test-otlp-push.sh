# cprof pushing OTLP profiles (--remote-api otlp, #50): cprof import sends each profile as an
# ExportProfilesServiceRequest (gzipped protobuf) to URL/v1development/profiles. (1) Into a second cprof
# serve: the stored totals of every sample type equal `cprof query -i`'s, the series labels come back,
# pid (process.pid) as a sample label. (2) Into an independent receiver (Node's http with protobufjs
# loading the pinned .proto files, tests/fixtures/otlp/receive.js): the headers, the dictionary's zero
# entries, one Profile per sample type whose totals equal `cprof query -i`'s, the resource attributes
# named as OpenTelemetry names them. (3) A bad --remote-api lists the protocols.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
use_test_npm
node -e 'require("protobufjs")' 2>/dev/null || skip_all "protobufjs is not installed (tools/setup.sh installs it)"
D=$T/data
RPID=
serve_start serve --listen 127.0.0.1:0 --data "$D"
trap 'kill $SPID $RPID 2>/dev/null; rm -rf "$T"' EXIT
ok "cprof serve started" test -n "$URL"
# types FILE: "INDEX TYPE UNIT TOTAL" for each sample type of a pprof file, by cprof query -i
types() {
	i=0
	while "$CPROF" query -i "$1" -t $i -f json >"$T/.q" 2>/dev/null; do
		jq -r "\"$i \" + .type + \" \" + .unit + \" \" + (.total | tostring)" "$T/.q"
		i=$((i + 1))
	done
}

# ---- (1) into cprof serve ----
for f in cpu-before heap; do
	F=$FIXTURES/$f.pb.gz
	run "$CPROF" import --remote "$URL" --remote-api otlp -l service_name="otlp-$f" -l node=n1 -l region=eu \
		-l pid=42 --time now-60s "$F"
	is "$rc" 0 "cprof import --remote-api otlp $f.pb.gz exits 0"
	like "$out" "imported 1 profile into $URL" "it says where"
	n=0
	types "$F" >"$T/types"
	while read -r i t u want; do
		stored=$("$CPROF" query --data "$D" --types | grep ":$t:$u:" | head -n 1)
		ok "$f: sample type $t/$u is a stored type ($stored)" test -n "$stored"
		sel="$stored{service_name=\"otlp-$f\"}"
		is "$("$CPROF" query --data "$D" --since 24h "$sel" -f json | jq .total)" "$want" \
			"$f: $t/$u stored total equals cprof query -i's ($want)"
		is "$("$CPROF" query --data "$D" --since 24h "$stored{service_name=\"otlp-$f\",pid=\"42\"}" -f json |
			jq .total)" "$want" "$f: $t/$u: pid (process.pid) on every sample"
		n=$((n + 1))
	done <"$T/types"
	ok "$f has sample types ($n)" test "$n" -gt 1
	run "$CPROF" query --data "$D" --since 24h --series "{service_name=\"otlp-$f\"}"
	like "$out" 'node="n1"' "$f: node came back (host.name)"
	like "$out" 'region="eu"' "$f: another series label came back as it was"
done
# Go's CPU profile: samples/count is not taken for the eBPF profiler's counts of CPU periods
run "$CPROF" query --data "$D" --types
like "$out" 'process_cpu:samples:count:cpu:nanoseconds' "samples/count keeps its own type, as a pprof push stores it"

# ---- (2) into an independent receiver ----
node "$FIXTURES/otlp/receive.js" "$srcdir/proto/otlp" "$T/recv.log" >"$T/recv.port" 2>"$T/recv.err" &
RPID=$!
i=0
while [ $i -lt 100 ] && ! [ -s "$T/recv.port" ]; do sleep 0.1; i=$((i + 1)); done
ok "the protobufjs receiver listens" test -s "$T/recv.port"
RURL=http://127.0.0.1:$(cat "$T/recv.port")
F=$FIXTURES/heap.pb.gz
run "$CPROF" import --remote "$RURL" --remote-api otlp -l service_name=app -l node=n1 -l container=c1 -l pod=p1 \
	-l region=eu -l pid=42 "$F"
is "$rc" 0 "cprof import --remote-api otlp into the receiver exits 0"
is "$(wc -l <"$T/recv.log" | tr -d ' ')" 1 "one request for one profile"
r() { jq -r "$1" "$T/recv.log"; }
is "$(r .error)" null "protobufjs decoded it (after gunzip)"
is "$(r '[.method, .path, .content_type, .content_encoding] | join(" ")')" \
	"POST /v1development/profiles application/x-protobuf gzip" "POST /v1development/profiles, protobuf, gzip"
is "$(r .zero_entries)" true "string 0 is \"\", each dictionary table starts with its zero value"
is "$(r '.resources | length')" 1 "one ResourceProfiles"
is "$(r '.resources[0].scopes | join(",")')" cprof "one ScopeProfiles, scope cprof"
is "$(r '.resources[0].attributes | to_entries | map(.key + "=" + .value) | sort | join(",")')" \
	"container.id=c1,host.name=n1,k8s.pod.name=p1,process.pid=42,region=eu,service.name=app" \
	"the resource attributes: series labels by their OpenTelemetry names"
types "$F" >"$T/types"
is "$(r '.resources[0].profiles | length')" "$(wc -l <"$T/types" | tr -d ' ')" "one Profile per sample type"
while read -r i t u want; do
	is "$(r ".resources[0].profiles[$i] | [.type, .unit, .total] | join(\" \")")" "$t $u $want" \
		"Profile $i: $t/$u, total $want as cprof query -i"
done <"$T/types"
is "$(r '.resources[0].profiles[0].period_type')" "space/bytes" "the period type"
ok "the profile's time" test "$(r '.resources[0].profiles[0].time')" -gt 0

# --tenant and --service-label with OTLP, as with Pyroscope: X-Scope-OrgID, and service.name from a label
: >"$T/recv.log"
run "$CPROF" import --remote "$RURL" --remote-api otlp --tenant team-a --service-label region -l node=n1 -l region=eu "$F"
is "$rc" 0 "--remote-api otlp --tenant team-a --service-label region exits 0"
is "$(r .tenant)" "team-a" "the receiver got X-Scope-OrgID: team-a"
is "$(r '.resources[0].attributes["service.name"]')" "eu" "service.name is the --service-label's value"
: >"$T/recv.log"
run "$CPROF" import --remote "$RURL" --remote-api otlp -l comm=myprog -l node=n1 "$F"
is "$(r '.resources[0].attributes | [.["service.name"], .comm] | join(" ")')" "myprog myprog" \
	"without service_name: service.name is comm's value (as Pyroscope's app), comm kept"
is "$(r .tenant)" "null" "no --tenant, no X-Scope-OrgID"

# ---- (3) bad ----
run "$CPROF" import --remote "$RURL" --remote-api bogus "$F"
is "$rc" 2 "--remote-api bogus: exit 2"
like "$err" "cprof, pyroscope or otlp, not 'bogus'" "it lists the protocols"
run "$CPROF" import --remote "$RURL" --tenant t "$F"
is "$rc" 2 "--tenant with cprof's own protocol: exit 2"
like "$err" "--tenant is for --remote-api pyroscope or otlp" "saying which take it"
done_testing
