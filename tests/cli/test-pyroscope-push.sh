# cprof pushing to Pyroscope (--remote-api pyroscope, #21): what cprof import
# and cprof record send has the shape of what the official client
# (@pyroscope/nodejs, from npm) sends, both caught by one capturing HTTP
# server on 127.0.0.1 (path, query arguments, headers, body); and cprof
# serve's Pyroscope endpoint stores cprof's pushes under the names a
# Pyroscope server gives them.  No Pyroscope server runs here.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
PY=/usr/bin/python3
use_test_npm
CAP_PID= SPID=
trap 'kill $CAP_PID $SPID 2>/dev/null; rm -rf "$T"' EXIT

# a server that answers 200 to everything and writes each request down:
# one JSON line per request in $T/cap/log, each body in $T/cap/N.body
mkdir -p "$T/cap"
cat > "$T/capture.py" << 'PYEOF'
import http.server, json, sys, urllib.parse, os
d = sys.argv[1]
n = [0]
class H(http.server.BaseHTTPRequestHandler):
    def handle_one(self, method):
        u = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        n[0] += 1
        open(os.path.join(d, '%d.body' % n[0]), 'wb').write(body)
        rec = {'n': n[0], 'method': method, 'path': u.path, 'args': urllib.parse.parse_qsl(u.query),
               'headers': {k.lower(): v for k, v in self.headers.items()}, 'size': len(body)}
        with open(os.path.join(d, 'log'), 'a') as f:
            f.write(json.dumps(rec) + '\n')
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', '3')
        self.end_headers()
        self.wfile.write(b'ok\n')
    def do_POST(self): self.handle_one('POST')
    def do_GET(self): self.handle_one('GET')
    def log_message(self, *a): pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PYEOF
"$PY" "$T/capture.py" "$T/cap" > "$T/cap.port" 2> "$T/cap.err" &
CAP_PID=$!
i=0
while [ $i -lt 100 ] && ! [ -s "$T/cap.port" ]; do sleep 0.1; i=$((i + 1)); done
CAP="http://127.0.0.1:$(cat "$T/cap.port")"
ok "the capturing server listens ($CAP)" test -s "$T/cap.port"
# reqs FILTER: the logged requests jq's FILTER selects, one JSON line each
reqs() { jq -c "$1" "$T/cap/log"; }
# shape N: what must be the same between clients: method, path, sorted argument names, content
# type, the authorization and tenant headers
shape() {
	jq -r "select(.n == $1) | [.method, .path, ([.args[][0]] | sort | join(\",\")), .headers[\"content-type\"],
		.headers.authorization // \"-\", .headers[\"x-scope-orgid\"] // \"-\"] | join(\" \")" "$T/cap/log"
}
arg() { jq -r "select(.n == $1) | .args[] | select(.[0] == \"$2\") | .[1]" "$T/cap/log"; }
printf 's3cret' > "$T/pw"

# ---- the official client ----
if node -e 'require("@pyroscope/nodejs")' 2>"$T/require.err"; then
	run env PYRO_TENANT=team-a PYRO_USER=alice PYRO_PASSWORD=s3cret node "$FIXTURES/pyroscope/app.js" "$CAP" 2500
	is "$rc" 0 "the node app with @pyroscope/nodejs pushed to the capturing server"
	nref=$(jq -r 'select(.path == "/ingest" and (.args | map(.[0]) | index("sampleRate"))) | .n' "$T/cap/log" | head -n 1)
	ok "it sent pushes to /ingest with a sampleRate (#$nref)" test -n "$nref"
else
	ok "the npm client @pyroscope/nodejs is installed in $NPM_PREFIX (tools/setup.sh)" false
	sed 's/^/# /' "$T/require.err" | head -n 5
	nref=
fi
ref=$(shape "${nref:-0}")
like "$ref" '^POST /ingest format,from,name,sampleRate,spyName,until application/octet-stream Basic [A-Za-z0-9+/=]+ team-a$' \
	"the client's push: POST /ingest, its arguments, octet-stream, basic auth and the tenant ($ref)"

# ---- cprof import, the same way ----
first=$(($(wc -l < "$T/cap/log") + 1))
run "$CPROF" import --remote "$CAP" --remote-api pyroscope --tenant team-a --basic-auth-user alice --token-file "$T/pw" \
	-l comm=my.prog -l pid=42 -l env=test --time now-30s "$FIXTURES/cpu-before.pb.gz"
is "$rc" 0 "cprof import --remote-api pyroscope exits 0"
n=$(jq -r "select(.n >= $first and .method == \"POST\") | .n" "$T/cap/log" | head -n 1)
ok "it pushed once (#$n)" test -n "$n"
is "$(shape "${n:-0}")" "$ref" "cprof's push has the client's shape: path, argument names, content type, auth, tenant"
is "$(jq -r "select(.n == ${n:-0}) | .headers.authorization" "$T/cap/log")" "Basic $(printf 'alice:s3cret' | base64)" \
	"basic auth is alice and the token file's secret"
is "$(arg "${n:-0}" format) $(arg "${n:-0}" spyName)" "pprof cprof" "format=pprof, spyName=cprof"
is "$(arg "${n:-0}" name)" "my.prog{service_name=my.prog,pid=42,env=test}" \
	"name: the comm as the service, given as service_name too, the other labels as tags"
from=$(arg "${n:-0}" from)
until=$(arg "${n:-0}" until)
now=$(date +%s)
ok "from and until are unix seconds around --time ($from $until)" \
	test "$from" -ge $((now - 40)) -a "$from" -le $((now - 20)) -a "$until" -gt "$from"
like "$(arg "${n:-0}" name)" '^[^{},]+\{[A-Za-z_][A-Za-z0-9_.]*=[^{},]*(,[A-Za-z_][A-Za-z0-9_.]*=[^{},]*)*\}$' \
	"the name parses as Pyroscope's app{k=v,...}"
[ -n "$nref" ] && like "$(arg "$nref" name)" '^[^{},]+\{[A-Za-z_][A-Za-z0-9_.]*=[^{},]*(,[A-Za-z_][A-Za-z0-9_.]*=[^{},]*)*\}$' \
	"and so does the client's"
is "$(od -An -tx1 -N2 "$T/cap/${n:-0}.body" | tr -d ' ')" 1f8b "the body is gzipped, as the client's"
[ -n "$nref" ] && is "$(od -An -tx1 -N2 "$T/cap/$nref.body" | tr -d ' ')" 1f8b "(the client's is gzipped)"
cp "$T/cap/${n:-0}.body" "$T/pushed.pb.gz"
is "$("$CPROF" query -i "$T/pushed.pb.gz" -f json | jq .total)" "$("$CPROF" query -i "$FIXTURES/cpu-before.pb.gz" -f json | jq .total)" \
	"and is the imported profile, whole"
# the service label, and bearer tokens
run "$CPROF" import --remote "$CAP" --remote-api pyroscope --service-label job --token-file "$T/pw" \
	-l job=api -l comm=x "$FIXTURES/cpu-before.pb.gz"
n=$(jq -r 'select(.method == "POST") | .n' "$T/cap/log" | tail -n 1)
is "$(arg "$n" name)" "api{service_name=api,comm=x}" "--service-label job: job names the service, comm is a tag"
is "$(jq -r "select(.n == $n) | [.headers.authorization, .headers[\"x-scope-orgid\"] // \"-\"] | join(\" \")" "$T/cap/log")" \
	"Bearer s3cret -" "without --basic-auth-user the token goes as a bearer token, and no tenant without --tenant"

# ---- bad options ----
run "$CPROF" import --remote "$CAP" --remote-api parca "$FIXTURES/cpu-before.pb.gz"
is "$rc" 2 "--remote-api parca: exit 2"
like "$err" "cprof import: --remote-api: cprof, pyroscope or otlp, not 'parca'" "... saying which are taken"
run "$CPROF" import --data "$T/d0" --tenant x "$FIXTURES/cpu-before.pb.gz"
is "$rc" 2 "--tenant without --remote: exit 2"
run "$CPROF" import --remote "$CAP" --tenant x "$FIXTURES/cpu-before.pb.gz"
is "$rc" 2 "--tenant with cprof's own API: exit 2"
run "$CPROF" import --remote "$CAP" --remote-api pyroscope --basic-auth-user alice "$FIXTURES/cpu-before.pb.gz"
is "$rc" 1 "--basic-auth-user without --token-file: exit 1"
like "$err" 'give the password in --token-file' "... saying where the password goes"
run "$CPROF" import --remote "$CAP" --remote-api pyroscope --service-label 9x "$FIXTURES/cpu-before.pb.gz"
is "$rc" 2 "--service-label 9x: exit 2"
run "$CPROF" record --remote-api pyroscope -o "$T/x.pb.gz" -d 1 -a
is "$rc" 2 "record --remote-api without --remote: exit 2"

# ---- cprof serve's Pyroscope endpoint names cprof's pushes as Pyroscope does ----
D=$T/data
serve_start serve --listen 127.0.0.1:0 --data "$D"
ok "cprof serve started ($URL)" test -n "$URL"
run "$CPROF" import --remote "$URL" --remote-api pyroscope -l comm=my.prog -l pid=42 --time now-30s "$FIXTURES/cpu-before.pb.gz"
is "$rc" 0 "import --remote-api pyroscope into cprof serve: exit 0"
run "$CPROF" query --data "$D" --types
like "$out" '^process_cpu:cpu:nanoseconds:cpu:nanoseconds' "the CPU time is process_cpu:cpu:nanoseconds:cpu:nanoseconds"
run "$CPROF" query --data "$D" --series 'process_cpu:cpu{service_name="my.prog"}'
like "$out" 'pid="42"' "the series is service_name=\"my.prog\" (dot kept), with pid=42"
unlike "$out" 'comm=' "comm named the service and is not a tag"
is "$("$CPROF" query --data "$D" --since 24h 'process_cpu:cpu{service_name="my.prog"}' -f json | jq .total)" \
	"$("$CPROF" query -i "$FIXTURES/cpu-before.pb.gz" -f json | jq .total)" "and holds the profile's CPU time, whole"
kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=

# ---- cprof record pushing to Pyroscope (root) ----
if [ "$(id -u)" != 0 ]; then
	_result 0 "record --remote-api pyroscope # SKIP cprof record needs root (or CAP_BPF+CAP_PERFMON)"
	done_testing
	exit
fi
cc -O2 -g -o "$T/work" "$FIXTURES/record/work.c" -lz 2>"$T/cc.err"
first=$(($(wc -l < "$T/cap/log") + 1))
run timeout -s KILL 90 "$CPROF" record -q -F 99 --flush-interval 1s --remote "$CAP" --remote-api pyroscope --tenant team-a \
	--spool "$T/spool" -- "$T/work" 3
is "$rc" 0 "record --remote-api pyroscope -- CMD exits 0"
is "$(jq -r "select(.n >= $first and .method == \"GET\") | .path" "$T/cap/log" | head -n 1)" /ready \
	"it asked GET /ready first (Pyroscope's readiness check)"
n=$(jq -r "select(.n >= $first and .method == \"POST\" and (.args | map(.[1]) | any(startswith(\"work{\")))) | .n" "$T/cap/log" | head -n 1)
ok "it pushed the workload's profiles (#$n)" test -n "$n"
like "$(shape "${n:-0}")" '^POST /ingest format,from,name,sampleRate,spyName,until application/octet-stream - team-a$' \
	"with the client's shape, the tenant, and no auth without a token"
is "$(arg "${n:-0}" sampleRate)" 99 "sampleRate is record's frequency"
like "$(arg "${n:-0}" name)" '^work\{service_name=work,.*exe=[^,}]*/work[,}]' "the name: comm as the service, the program's labels as tags"
unlike "$(arg "${n:-0}" name)" 'pid=' "not pid: a program is one series, its samples carry pid"
from=$(arg "${n:-0}" from)
until=$(arg "${n:-0}" until)
ok "each push covers its flush interval (from $from, until $until)" test "$until" -gt "$from" -a $((until - from)) -le 3
done_testing
