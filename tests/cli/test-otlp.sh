# OTLP profiles into cprof serve (POST /v1development/profiles): a request encoded by protobufjs from the
# pinned .proto files (proto/otlp/), shaped as the OpenTelemetry eBPF profiler's exporter shapes it
# (tests/fixtures/otlp/export.js), stored with exact totals by service, pid and function; gzip; refusals.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
use_test_npm
node -e 'require("protobufjs")' 2>/dev/null || skip_all "protobufjs is not installed (tools/setup.sh installs it)"
D=$T/data
serve_start serve --listen 127.0.0.1:0 --data "$D"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
ok "cprof serve started" test -n "$URL"
total() { # SELECTOR [query args]: the stored total over the last day
	sel=$1
	shift
	"$CPROF" query --data "$D" --since 24h "$@" "$sel" -f json | jq -r .total
}
post() { # FILE [curl args]: POSTs FILE to the OTLP path
	_f=$1
	shift
	http POST /v1development/profiles -H 'Content-Type: application/x-protobuf' "$@" --data-binary @"$_f"
}

run node "$FIXTURES/otlp/export.js" "$srcdir/proto/otlp" "$T/req.pb"
is "$rc" 0 "protobufjs encoded the request from the pinned .proto files"
sent=$out
want=$(printf '%s' "$sent" | jq .total)
post "$T/req.pb"
is "$code" 200 "an OTLP export request (protobuf): 200"
is "$(wc -c <"$T/.body" | tr -d ' ')" 0 "the answer is an empty ExportProfilesServiceResponse (no partial_success)"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$want" \
	"the eBPF profiler's samples/count x period stored as process_cpu:cpu:nanoseconds, total exact"
run "$CPROF" query --data "$D" --since 24h --series '{service_name="otlp-app"}'
like "$out" 'node="node-1"' "host.name is the series' node"
like "$out" 'os_type="linux"' "other resource attributes with '.' made '_'"
for p in 1234 5678; do
	is "$(total "process_cpu:cpu{service_name=\"otlp-app\",pid=\"$p\"}")" "$(printf '%s' "$sent" | jq ".by_pid[\"$p\"]")" \
		"process.pid $p: its samples' total"
done
run "$CPROF" query --data "$D" --since 24h 'process_cpu:cpu{service_name="otlp-app"}' --group-by pid -f folded
like "$out" 'pid=1234;main;work;alpha 150000000' "--group-by pid, with the functions of the dictionary"
like "$out" 'pid=1234;main;work;do_syscall_64 250000000' "kernel frames too"
is "$(total 'process_cpu:cpu{service_name="otlp-app",thread_name="worker"}')" 250000000 "thread.name is a sample label"
is "$(total 'process_cpu:cpu{service_name="otlp-app",thread_id="1234"}')" 250000000 "thread.id is a sample label"
run "$CPROF" query --data "$D" --since 24h 'process_cpu:cpu{service_name="otlp-app"}' -f json
is "$(printf '%s' "$out" | jq '[.. | objects | select(.name? == "alpha") | .self] | add')" \
	"$(printf '%s' "$sent" | jq .alpha)" "alpha's own time"
is "$(total 'events:events{service_name="otlp-offcpu"}')" "$(printf '%s' "$sent" | jq .offcpu)" \
	"another sample type (events/nanoseconds) stored as it is named"

# gzip, as OTLP exporters compress
gzip -c "$T/req.pb" >"$T/req.pb.gz"
post "$T/req.pb.gz" -H 'Content-Encoding: gzip'
is "$code" 200 "Content-Encoding: gzip: 200"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 2))" "and stored again, exactly"
post "$T/req.pb" -H 'Content-Type: application/x-protobuf; charset=binary'
is "$code" 200 "a Content-Type with parameters"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 3))" "stored a third time"
run curl -s -o /dev/null -w '%{content_type}' -H 'Content-Type: application/x-protobuf' --data-binary @"$T/req.pb" \
	"$URL/v1development/profiles"
is "$out" "application/x-protobuf" "as application/x-protobuf, as OTLP/HTTP answers"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 4))" "stored a fourth time"

# OTLP/JSON, as the specification allows (protobufjs's proto3 JSON of the same request, the profile id in hex)
http POST /v1development/profiles -H 'Content-Type: application/json' --data-binary @"$T/req.pb.json"
is "$code" 200 "the same request as OTLP/JSON: 200"
is "$(cat "$T/.body")" "{}" "answered with an empty ExportProfilesServiceResponse in JSON"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 5))" "and stored exactly, a fifth time"
is "$(total 'events:events{service_name="otlp-offcpu"}')" "$(($(printf '%s' "$sent" | jq .offcpu) * 5))" \
	"its off-CPU profile too"
is "$(total "process_cpu:cpu{service_name=\"otlp-app\",pid=\"1234\"}")" "$(($(printf '%s' "$sent" | jq '.by_pid["1234"]') * 5))" \
	"with its samples' attributes (process.pid) as from protobuf"
gzip -c "$T/req.pb.json" >"$T/req.json.gz"
http POST /v1development/profiles -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary @"$T/req.json.gz"
is "$code" 200 "gzipped OTLP/JSON: 200"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 6))" "stored a sixth time"

# refusals: 400 with a message, nothing stored
# a refusal's body is a google.rpc.Status (protobuf), as OTLP/HTTP says: decoded here by protobufjs from
# the message's definition (proto/rpc/status.proto), its code INVALID_ARGUMENT (3) for a 400
err_is() {
	run node -e '
const protobuf = require("protobufjs"), fs = require("fs");
const S = protobuf.loadSync(process.argv[1]).lookupType("google.rpc.Status");
const m = S.decode(fs.readFileSync(process.argv[2]));
console.log(m.code + " " + m.message);' "$srcdir/proto/rpc/status.proto" "$T/.body"
	like "$out" "^3 .*$1" "$2: a google.rpc.Status, INVALID_ARGUMENT, saying why"
}
printf 'not a protobuf at all\377\377' >"$T/bad"
post "$T/bad"
is "$code" 400 "a body that is not a request: 400"
err_is 'not an OTLP ExportProfilesServiceRequest' "not a request"
head -c 500 "$T/req.pb" >"$T/cut"
post "$T/cut"
is "$code" 400 "a request cut short: 400"
err_is '' "a cut request"
http POST /v1development/profiles -H 'Content-Type: application/json' --data '{"resourceProfiles":[{"scopeProfiles":'
is "$code" 400 "malformed JSON: 400"
like "$(cat "$T/.body")" '"code": *3,.*"message": *"[^"]*malformed JSON' "a google.rpc.Status in JSON for a JSON request, saying why"
http POST /v1development/profiles -H 'Content-Type: application/json' \
	--data '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"profileId":"not-hex"}]}]}]}'
is "$code" 400 "a profile id that is not hex: 400"
like "$(cat "$T/.body")" 'profile_id: not hexadecimal' "saying so"
http POST /v1development/profiles -H 'Content-Type: text/plain' --data 'x'
is "$code" 400 "another Content-Type: 400"
post "$T/req.pb" -H 'Content-Encoding: br'
is "$code" 400 "an unknown Content-Encoding: 400"
printf 'xx' | gzip -c | head -c 10 >"$T/badgz"
post "$T/badgz" -H 'Content-Encoding: gzip'
is "$code" 400 "broken gzip: 400"
# a stack index outside the stack table (the request edited by protobufjs again)
node -e '
const protobuf = require("protobufjs"), path = require("path"), fs = require("fs");
const root = new protobuf.Root();
root.resolvePath = (o, t) => path.join(process.argv[1], t);
root.loadSync("opentelemetry/proto/collector/profiles/v1development/profiles_service.proto");
const R = root.lookupType("opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest");
const m = R.decode(fs.readFileSync(process.argv[2]));
m.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].stackIndex = 99;
fs.writeFileSync(process.argv[3], R.encode(m).finish());' "$srcdir/proto/otlp" "$T/req.pb" "$T/badstack.pb"
post "$T/badstack.pb"
is "$code" 400 "a stack index outside the table: 400"
err_is 'stack 99 is not in the stack table' "the index"
is "$(total 'process_cpu:cpu{service_name="otlp-app"}')" "$((want * 6))" "nothing of the refused bodies was stored"
http GET /metrics
like "$body" 'api="otlp"' "/metrics counts the OTLP pushes"
done_testing
