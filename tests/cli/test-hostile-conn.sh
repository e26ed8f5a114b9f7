# cprof serve under hostile connections: slow clients that hold connections
# (slowloris), a stop while a push is under way, and requests too large for the
# server's per-connection memory.  After each, the server answers /healthz and
# keeps the data stored before.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
command -v python3 >/dev/null || skip_all "python3 is not installed (apt-get install python3)"
SLOW="$srcdir/bench/slowloris.py"
before="$FIXTURES/cpu-before.pb.gz"
# the slow clients and the server's threads: well under the usual 1024 descriptors
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1024 ] || skip_all "fewer than 1024 file descriptors"

total() { # NAME: its samples total over the last day
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$1:samples" \
		--data-urlencode "from=now-1d" --data-urlencode max_nodes=1 | jq -r .total
}
per=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
alive() {
	http GET /healthz --max-time 10
	is "$code/$body" "200/ok" "$1: the server is alive"
	is "$(total base)" "$per" "$1: the earlier data is intact"
}

# ---- slowloris: more slow connections than the server holds (512), all from 127.0.0.1 ----
# The header deadline is long here (60 s), so only the reserve can let /healthz in.
serve_start serve --listen 127.0.0.1:0 --data "$T/data" --header-timeout 60s
trap 'kill $SPID $LPID 2>/dev/null; rm -rf "$T"' EXIT
LPID=
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "the server listens"
port=${URL##*:}
http POST '/api/v1/push?name=base&time=now' --data-binary @"$before"
is "$code" 200 "the data stored before the attacks"
python3 "$SLOW" loris "$port" 530 2 40 --ready "$T/ready" >"$T/loris.json" &
LPID=$!
i=0
while [ ! -s "$T/ready" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
is "$(cat "$T/ready")" 530 "530 slow connections opened"
# a generous limit: without the reserve it waits for a slot until the 60 s deadline
http GET /healthz --max-time 10
is "$code/$body" "200/ok" "/healthz answers while 530 slow connections are open"
http GET /healthz --max-time 10 -H 'Authorization: Bearer nothing'
is "$code/$body" "200/ok" "and again"
is "$(total base)" "$per" "the earlier data is intact under slowloris"
kill $LPID 2>/dev/null
wait $LPID 2>/dev/null
LPID=
alive "after slowloris"
http GET /metrics
like "$body" 'cprof_http_connections_closed_total\{reason="evicted"\} [1-9]' "/metrics counts the connections closed to make room"
kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops cleanly after slowloris"

# ---- the header deadline closes slow connections, even below the limit ----
serve_start serve2 --listen 127.0.0.1:0 --data "$T/data" --header-timeout 1s
port=${URL##*:}
# each sends a header line every second: the idle timeout (120 s) never fires; 30 s at most
python3 "$SLOW" loris "$port" 20 1 30 >"$T/loris2.json"
is "$(jq -r '"\(.opened) \(.closed_by_server) \(.open_at_end)"' "$T/loris2.json")" "20 20 0" \
	"the server closes connections whose headers do not end within --header-timeout"
alive "after the header deadline"
http GET /metrics
like "$body" 'cprof_http_connections_closed_total\{reason="header_timeout"\} 20$' "/metrics counts them"
# the deadline is for the headers: a body sent slowly (~3.5 s), and a kept-alive connection idle
# between requests (3 s), are not cut by it
python3 "$SLOW" slowpost "$port" '/api/v1/push?name=slowbody&time=now' "$before" 100 0.3 >"$T/post1.out"
is "$(head -n 1 "$T/post1.out")" 200 "a push whose body takes longer than --header-timeout is answered 200"
kept=$(python3 -c "
import socket, sys, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=30)
for i in range(2):
    if i:
        time.sleep(3)
    s.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')
    print(s.recv(4096).split(b' ')[1].decode(), end=' ')" "$port")
is "$kept" "200 200 " "a kept-alive connection idle longer than --header-timeout serves its next request"
run "$CPROF" serve --header-timeout 0s
like "$rc: $err" '^2: .*--header-timeout: want 1s to 1h' "--header-timeout 0s is refused"
kill -TERM $SPID
wait $SPID
# header_timeout in the configuration file, as --header-timeout
printf 'header_timeout: 1s\n' >"$T/cprof.yaml"
serve_start serveconf --listen 127.0.0.1:0 --data "$T/data" --config "$T/cprof.yaml"
python3 "$SLOW" loris "${URL##*:}" 3 1 30 >"$T/loris3.json"
is "$(jq -r '"\(.opened) \(.closed_by_server) \(.open_at_end)"' "$T/loris3.json")" "3 3 0" \
	"header_timeout: 1s in the configuration file: the server closes slow connections"
kill -TERM $SPID
wait $SPID
printf 'header_timeout: 0s\n' >"$T/cprof0.yaml"
run "$CPROF" serve --data "$T/data" --config "$T/cprof0.yaml"
like "$rc: $err" '^2: .*--header-timeout: want 1s to 1h' "header_timeout: 0s in the file is refused"

# ---- too many query arguments, a long URL, a long header ----
serve_start serve3 --listen 127.0.0.1:0 --data "$T/data"
args() { python3 -c "import sys; print('&'.join('a%d=1' % i for i in range(int(sys.argv[1]))))" "$1"; }
# 1,500 arguments once exhausted libmicrohttpd's connection memory: an empty reply
http GET "/healthz?$(args 1500)"
is "$code/$body" "200/ok" "1,500 query arguments are served"
alive "1,500 query arguments"
http GET "/api/v1/profile?$(args 3000)"
is "$code" 414 "3,000 query arguments: 414"
like "$body" '"error":"too many query arguments \(at most 2000\)"' "with the reason"
alive "3,000 query arguments"
# 300 KB: more than a connection's memory (256 KiB); past curl's argument limit too
code=$(python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=30)
try:
    s.sendall(b'GET /healthz?a=' + b'x' * 300000 + b' HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')
except OSError:
    pass
d = s.recv(64)
print(d.split(b' ')[1].decode() if d.startswith(b'HTTP/') else '000')" "${URL##*:}")
is "$code" 414 "a 300 KB URL: 414"
alive "a 300 KB URL"
python3 -c "print('X-Long: ' + 'x' * 300000)" >"$T/long.hdr"
http GET /healthz -H @"$T/long.hdr"
is "$code" 431 "a 300 KB header: 431"
alive "a 300 KB header"
kill -TERM $SPID
wait $SPID

# ---- a stop while a push is under way: answered, and stored (or refused, and not) ----
serve_start serve4 --listen 127.0.0.1:0 --data "$T/data"
port=${URL##*:}
n0=$(total slow)
# the body in 100-byte pieces 0.3 s apart: ~3.5 s; the stop comes after the first piece
python3 "$SLOW" slowpost "$port" '/api/v1/push?name=slow&time=now' "$before" 100 0.3 --ready "$T/sending" \
	>"$T/post.out" &
PPID_=$!
# and a push whose request line is sent before the stop, the rest after it
python3 "$SLOW" twostep "$port" '/api/v1/push?name=late&time=now' "$before" "$T/late-ready" "$T/late-go" \
	>"$T/late.out" &
LATE=$!
i=0
while { [ ! -s "$T/sending" ] || [ ! -s "$T/late-ready" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $SPID
# the stop has begun once the server refuses connections
i=0
while curl -s -o /dev/null "$URL/healthz"; [ $? != 7 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
touch "$T/late-go"
wait $PPID_
wait $LATE
wait $SPID
is "$?" 0 "the server stops cleanly with a push under way"
pcode=$(head -n 1 "$T/post.out")
like "$pcode" '^(200|503)$' "the push under way at the stop is answered (200 or 503), not cut off"
serve_start serve5 --listen 127.0.0.1:0 --data "$T/data"
if [ "$pcode" = 200 ]; then
	like "$(tail -n +2 "$T/post.out")" '"samples":' "the 200 carries the push's JSON answer"
	is "$(total slow)" "$per" "answered 200: the push is stored"
else
	is "$(total slow)" "$n0" "answered 503: the push is not stored"
fi
is "$(head -n 1 "$T/late.out")" 503 "a push whose headers end during the stop is refused: 503"
like "$(tail -n +2 "$T/late.out")" '"error":"the server is stopping' "with the reason"
is "$(total late)" "$n0" "and it is not stored"
alive "after a stop with a push under way"
# a stop with nothing under way is not delayed by idle keep-alive connections
kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops"

done_testing
