# cprof serve under hostile requests: each request shape that once crashed the server or lost data is
# sent to the real server (under ASan in the sanitizer build); after each, the server must be alive,
# answer with a clear status, and keep the data stored before it.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
before="$FIXTURES/cpu-before.pb.gz"
heap="$FIXTURES/heap.pb.gz"

serve_start serve --listen 127.0.0.1:0 --data "$T/data"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "the server listens"

# writeraw stores a profile at its own time: the fixture's, as old as the committed file
ftime=$(($("$CPROF" query -i "$before" -f json | jq .time_nanos) / 1000000000))
total() { # SELECTOR: its total from a day before the fixture's time (or now, if earlier) until now
	_now=$(date +%s)
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$1" \
		--data-urlencode "from=$((ftime < _now ? ftime - 86400 : _now - 86400))" \
		--data-urlencode max_nodes=1 | jq -r .total
}
per=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
http POST '/api/v1/push?name=base&time=now' --data-binary @"$before"
is "$code" 200 "the data stored before the attacks"
# alive WHAT: after each hostile request the server answers /healthz and still has the earlier data
alive() {
	http GET /healthz
	is "$code/$body" "200/ok" "$1: the server is alive"
	is "$(total base:samples)" "$per" "$1: the earlier data is intact"
}

# ---- Parca writeraw with 5 or more profiles in one request (the batch's arrays grew unevenly) ----
b64=$(base64 -w0 "$before")
s5=
for k in 1 2 3 4 5 6 7; do s5="$s5${s5:+,}{\"rawProfile\":\"$b64\"}"; done
printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"many"}]},"samples":[%s]}]}' "$s5" >"$T/wr7.json"
http POST /api/profiles/writeraw --data-binary @"$T/wr7.json"
is "$code" 200 "writeraw: one series with 7 samples: 200"
is "$(total many:samples)" "$((7 * per))" "all 7 are stored, once"
alive "writeraw 1x7"
ser=
for k in 1 2 3 4 5 6; do
	ser="$ser${ser:+,}{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":\"wide\"},{\"name\":\"k\",\"value\":\"$k\"}]},\"samples\":[{\"rawProfile\":\"$b64\"}]}"
done
printf '{"series":[%s]}' "$ser" >"$T/wr6.json"
http POST /api/profiles/writeraw --data-binary @"$T/wr6.json"
is "$code" 200 "writeraw: 6 series of one sample: 200"
is "$(total wide:samples)" "$((6 * per))" "all 6 are stored, once"
alive "writeraw 6x1"

# ---- multipart parts without a name (/ingest?format=pprof) ----
# form BOUNDARY-HEADER-LINE: a multipart body whose one part has the given disposition header
form() {
	{
		printf -- '--XyZ\r\n'
		[ -n "$1" ] && printf '%s\r\n' "$1"
		printf 'Content-Type: application/octet-stream\r\n\r\n'
		cat "$before"
		printf '\r\n--XyZ--\r\n'
	} >"$T/form"
}
for shape in '' 'Content-Disposition: form-data' 'Content-Disposition: form-data; name=' \
	'Content-Disposition: form-data; name=""' 'Content-Disposition: form-data; filename="p.pprof"'; do
	form "$shape"
	http POST '/ingest?name=formy.cpu&format=pprof' -H 'Content-Type: multipart/form-data; boundary=XyZ' \
		--data-binary @"$T/form"
	is "$code" 400 "a part with '${shape:-no Content-Disposition}': 400"
	like "$(printf '%s' "$body" | jq -r .error)" 'no name|no .profile. field|malformed' "saying why"
	alive "a part with '${shape:-no Content-Disposition}'"
done
printf -- '--XyZ\r\nContent-Disposition: form-data; name="pro\000file"\r\n\r\nabc\r\n--XyZ--\r\n' >"$T/form"
http POST '/ingest?name=formy.cpu&format=pprof' -H 'Content-Type: multipart/form-data; boundary=XyZ' \
	--data-binary @"$T/form"
is "$code" 400 "a part name with a NUL: 400"
alive "a part name with a NUL"

# ---- a sampleRate above 1e9 Hz: each sample would weigh 0 ns (answered 200 and stored nothing) ----
for rate in 1000000001 9223372036854775807; do
	http POST "/ingest?name=fast.cpu&sampleRate=$rate" --data-binary 'main;spin 5'
	is "$code" 400 "sampleRate=$rate: 400"
	like "$(printf '%s' "$body" | jq -r .error)" 'sampleRate' "naming sampleRate"
done
http POST "/ingest?name=fast.cpu&sampleRate=1000000000" --data-binary 'main;spin 5'
is "$code" 200 "sampleRate=1e9: 200"
is "$(total 'process_cpu{service_name="fast"}')" 5 "stored as 5 ns"
alive "sampleRate above 1e9"

# ---- both Content-Length and Transfer-Encoding (request smuggling behind a proxy) ----
if command -v python3 >/dev/null; then
	port=${URL##*:}
	cat >"$T/smuggle.py" <<'PYEOF'
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
te, cl = b'Transfer-Encoding: chunked\r\n', b'Content-Length: 4\r\n'
s.sendall(b'POST /api/v1/push?name=smuggled&time=now HTTP/1.1\r\nHost: x\r\n' + (cl + te if sys.argv[2] == 'cl' else te + cl) +
          b'\r\n0\r\n\r\n')
data = b''
try:
    while b'\r\n\r\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
print(data.split(b'\r\n', 1)[0].decode('latin-1'))
PYEOF
	for order in cl te; do
		like "$(/usr/bin/python3 "$T/smuggle.py" "$port" "$order" 2>&1)" '^HTTP/1\.1 400' \
			"Content-Length with Transfer-Encoding ($order first): 400"
		alive "Content-Length with Transfer-Encoding ($order first)"
	done
fi

# ---- a 20,000-frame stack rendered as JSON (recursion in the renderer and in jansson's dump) ----
awk 'BEGIN { s = "f0"; for (i = 1; i < 20000; i++) s = s ";f" i; print s " 5" }' >"$T/deep.folded"
"$CPROF" query -i "$T/deep.folded" -f pprof -o "$T/deep.pb.gz"
http POST '/api/v1/push?name=deep&time=now' --data-binary @"$T/deep.pb.gz"
is "$code" 200 "a pprof with one 20,000-frame stack is stored"
for rep in 1 2; do
	http GET /api/v1/profile -G --data-urlencode query=deep:samples --data-urlencode from=now-1h
	is "$code" 200 "the default JSON query over it answers (time $rep)"
	like "$body" '"truncated":true' "and says the tree is truncated"
	ok "the JSON is whole (Debian's python parses it)" /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/.body"
	alive "a deep stack as JSON (time $rep)"
done
run "$CPROF" query -i "$T/deep.pb.gz" -f json
is "$rc" 0 "cprof query -f json of the deep stack exits 0"
like "$out" '"total":5,' "with its total"

# ---- an all-zero push, and queries of a store that holds nothing of a type ----
printf 'main;zero 0\nmain;none 0\n' >"$T/zero.folded"
http POST '/api/v1/push?name=zero&time=now' --data-binary @"$T/zero.folded"
like "$code" '^(200|400)$' "an all-zero push: 200 or 400 ($code)"
for q in "/api/v1/profile?query=zero:samples" "/api/v1/range?query=zero:samples&step=1m" \
	"/api/v1/diff?before=zero:samples&after=zero:samples" "/api/v1/profile?query=nothing:samples&format=folded"; do
	http GET "$q"
	like "$code" '^(200|404)$' "$q: 200 or 404 ($code)"
	alive "$q"
done

kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops cleanly after all of it"

# ---- a store with nothing in it ----
serve_start serve2 --listen 127.0.0.1:0 --data "$T/empty"
for q in /api/v1/types /api/v1/labels /api/v1/series /api/v1/stats /metrics "/api/v1/values?label=comm" \
	"/api/v1/profile?query=cpu" "/api/v1/range?query=cpu&step=1m" "/api/v1/diff?before=cpu&after=cpu" /; do
	http GET "$q"
	like "$code" '^(200|400|404)$' "an empty store: $q answers ($code)"
done
http GET /healthz
is "$code/$body" "200/ok" "an empty store: the server is alive"
kill -TERM $SPID
wait $SPID
is "$?" 0 "the empty store's server stops cleanly"
reports=$(cat "$T/serve.err" "$T/serve2.err" | grep -E 'AddressSanitizer|LeakSanitizer|runtime error' | head -5)
is "$reports" "" "no sanitizer reports from the server"
done_testing
