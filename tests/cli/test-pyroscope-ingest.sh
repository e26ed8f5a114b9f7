# cprof serve's POST /ingest with every request shape Pyroscope's server takes, sent by curl: a pprof
# body with and without format= (gzipped or not), a multipart form (its profile, sample_type_config and
# prev_profile parts), folded ("groups") and lines, Pyroscope's legacy binary trie and tree (by format=
# and by Content-Type), the spyName label; and a clear 4xx naming the problem for what it refuses (an
# unknown format, a damaged JFR recording, an empty, partless or truncated form, a bad sample_type_config);
# a JFR recording the JDK wrote (format=jfr, and a form's jfr part); speedscope JSON (format=speedscope).  The pprof and
# trie/tree bodies are made here by Debian's python3 (a hand-written protobuf encoder).
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
[ -x /usr/bin/python3 ] || skip_all "python3 is not installed (apt-get install python3)"
D=$T/data
before="$FIXTURES/cpu-before.pb.gz"

cat >"$T/gen.py" <<'PYEOF'
import gzip, sys
out = sys.stdout.buffer
def uv(n):
    b = b''
    while True:
        c = n & 0x7f
        n >>= 7
        if n:
            b += bytes([c | 0x80])
        else:
            return b + bytes([c])
def fld(num, payload):  # a length-delimited field
    return uv(num << 3 | 2) + uv(len(payload)) + payload
def vt(t, u):  # a ValueType of string ids
    return uv(1 << 3) + uv(t) + uv(2 << 3) + uv(u)
def packed(vals):
    return b''.join(uv(v) for v in vals)
kind = sys.argv[1]
if kind == 'mutex':  # a Go mutex profile: contentions/count and delay/nanoseconds, stacks main;lock (3, 3000) and main;wait (1, 500)
    strs = ['', 'contentions', 'count', 'delay', 'nanoseconds', 'main', 'lock', 'wait']
    if len(sys.argv) > 2:  # .NET's names
        strs[1], strs[3] = 'lock-count', 'lock-time'
    p = b''.join(fld(1, vt(a, b)) for a, b in ((1, 2), (3, 4)))
    p += fld(2, uv(1 << 3 | 2) + uv(2) + packed([2, 1]) + uv(2 << 3 | 2) + uv(3) + packed([3, 3000]))
    p += fld(2, uv(1 << 3 | 2) + uv(2) + packed([3, 1]) + uv(2 << 3 | 2) + uv(3) + packed([1, 500]))
    for i, f in ((1, 5), (2, 6), (3, 7)):  # locations 1..3 -> functions 1..3
        p += fld(4, uv(1 << 3) + uv(i) + fld(4, uv(1 << 3) + uv(i)))
        p += fld(5, uv(1 << 3) + uv(i) + uv(2 << 3) + uv(f))
    p += b''.join(fld(6, s.encode()) for s in strs)
    p += fld(11, vt(1, 2)) + uv(12 << 3) + uv(1)
    out.write(gzip.compress(p))
elif kind in ('trie', 'tree', 'trie-cut'):  # main;work 30, main;idle 10, main 5
    def node(name, val, kids):
        return uv(len(name)) + name + uv(val) + uv(len(kids)) + b''.join(kids)
    if kind == 'tree':
        body = node(b'', 0, [node(b'main', 5, [node(b'work', 30, []), node(b'idle', 10, [])])])
    else:  # names are pieces of the folded key
        body = node(b'', 0, [node(b'main', 5, [node(b';work', 30, []), node(b';idle', 10, [])])])
    out.write(body[:-8] if kind == 'trie-cut' else body)
PYEOF
gen() { /usr/bin/python3 "$T/gen.py" "$@"; }

serve_start serve --listen 127.0.0.1:0 --data "$D"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
ok "cprof serve started" test -n "$URL"
total() { # SELECTOR [query args]: the stored total over the last day
	sel=$1
	shift
	"$CPROF" query --data "$D" --since 24h "$@" "$sel" -f json | jq -r .total
}
err_is() { # REGEX WHAT: the last answer's error says why
	like "$(printf '%s' "$body" | jq -r .error 2>/dev/null)" "$1" "$2: saying why"
}
want=$("$CPROF" query -i "$before" -t cpu -f json | jq .total)
wants=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
gunzip -c "$before" >"$T/cpu.pb"

# ---- pprof without format= (Pyroscope takes a multipart form as pprof; cprof also a bare binary body) ----
http POST '/ingest?name=nofmt&spyName=gospy' --data-binary @"$before"
is "$code" 200 "a gzipped pprof body without format=: 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="nofmt"}')" "$want" "stored as a pprof: its CPU time"
is "$(total 'process_cpu:samples{service_name="nofmt"}')" "$wants" "and its samples"
run "$CPROF" query --data "$D" --series 'process_cpu:cpu{service_name="nofmt"}'
like "$out" 'pyroscope_spy="gospy"' "spyName is the label pyroscope_spy, as Pyroscope names it"
http POST '/ingest?name=nofmtraw' --data-binary @"$T/cpu.pb"
is "$code" 200 "a pprof body, not gzipped, without format=: 200"
is "$(total 'process_cpu:cpu{service_name="nofmtraw"}')" "$want" "stored as a pprof"
http POST '/ingest?name=form&spyName=nodespy' -F "profile=@$before"
is "$code" 200 "a multipart form with a profile part, no format= (the Node.js client 0.4): 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="form"}')" "$want" "its profile is stored"
http POST '/ingest?name=formfmt&format=pprof' -F "profile=@$before;type=application/octet-stream"
is "$code" 200 "a multipart form with format=pprof: 200"
is "$(total 'process_cpu:cpu{service_name="formfmt"}')" "$want" "its profile is stored"

# ---- sample_type_config: a display-name says which profile it is (Go's block and mutex share types) ----
gen mutex >"$T/mutex.pb.gz"
http POST '/ingest?name=lock' -F "profile=@$T/mutex.pb.gz"
is "$code" 200 "a mutex pprof in a form: 200"
run "$CPROF" query --data "$D" --types
like "$out" '^mutex:contentions:count:contentions:count' "contentions without a config: mutex:contentions:count:contentions:count"
like "$out" '^mutex:delay:nanoseconds:contentions:count' "and mutex:delay:nanoseconds:contentions:count"
is "$(total 'mutex:delay{service_name="lock"}')" 3500 "its delay total"
printf '{"contentions":{"display-name":"block_count","units":"lock_samples","cumulative":false},"delay":{"display-name":"block_duration","units":"lock_nanoseconds","aggregation":"sum"}}' >"$T/stc.json"
http POST '/ingest?name=blk' -F "profile=@$T/mutex.pb.gz" -F "sample_type_config=@$T/stc.json"
is "$code" 200 "the same with a sample_type_config naming them block_count and block_duration: 200 ($body)"
is "$(total 'block:contentions:count:contentions:count{service_name="blk"}')" 4 "stored as block:contentions:count"
is "$(total 'block:delay:nanoseconds:contentions:count{service_name="blk"}')" 3500 "and block:delay:nanoseconds"
run "$CPROF" query --data "$D" --series '{service_name="blk"}'
unlike "$out" '^mutex' "not as mutex"
http POST '/ingest?name=blk' -F "profile=@$T/mutex.pb.gz" -F 'sample_type_config={"delay":{"display-name":7}}'
is "$code" 400 "a sample_type_config whose display-name is not a string: 400"
err_is "sample_type_config: 'delay'" "naming the part and the type"
http POST '/ingest?name=blk' -F "profile=@$T/mutex.pb.gz" -F 'sample_type_config={"delay":'
is "$code" 400 "a sample_type_config that is not JSON: 400"
err_is "sample_type_config: not JSON" "naming the part"
http POST '/ingest?name=blk' -F "profile=@$T/mutex.pb.gz" -F "prev_profile=@$T/mutex.pb.gz"
is "$code" 400 "a form with a prev_profile (a cumulative profile, from an old Go client): 400, as Pyroscope"
err_is "prev_profile.*update the client" "naming the part and what to do"
gen mutex dotnet >"$T/dotnet.pb.gz"
http POST '/ingest?name=dn&spyName=dotnetspy' -F "profile=@$T/dotnet.pb.gz"
is "$code" 200 "a .NET pprof (sample types with '-'): 200"
run "$CPROF" query --data "$D" --types
like "$out" '^lock_count:lock_count:count:lock_count:count$' ".NET's lock-count is stored as lock_count, as Pyroscope does"

# ---- folded ("groups") and lines ----
now=$(date +%s)
printf 'main;work 30\nmain;idle 10\n' >"$T/p.folded"
for f in '' '&format=folded' '&format=groups'; do
	http POST "/ingest?name=fold${f#*=}.cpu&sampleRate=100$f" --data-binary @"$T/p.folded"
	is "$code" 200 "folded text${f:+ with $f}: 200"
	is "$(total "process_cpu:cpu{service_name=\"fold${f#*=}\"}")" 400000000 "40 samples at 100 Hz: 0.4 s of CPU"
done
gzip -c "$T/p.folded" >"$T/p.folded.gz"
http POST '/ingest?name=foldgz.alloc_space&units=bytes' --data-binary @"$T/p.folded.gz"
is "$code" 200 "gzipped folded text for alloc_space: 200"
is "$(total 'memory:alloc_space:bytes:space:bytes{service_name="foldgz"}')" 40 "stored as memory:alloc_space, not scaled"
http POST '/ingest?name=jv.lock_duration' --data-binary @"$T/p.folded"
is "$code" 200 "folded for the Java agent's lock_duration: 200"
is "$(total 'block:delay:nanoseconds:contentions:count{service_name="jv"}')" 40 "stored as block:delay, as Pyroscope names it"
http POST '/ingest?name=jv.alloc_in_new_tlab_bytes' --data-binary @"$T/p.folded"
is "$(total 'memory:alloc_in_new_tlab_bytes:bytes:space:bytes{service_name="jv"}')" 40 \
	"alloc_in_new_tlab_bytes: memory:alloc_in_new_tlab_bytes:bytes:space:bytes"
printf 'main;work\nmain;work\nmain;idle\n' >"$T/p.lines"
http POST '/ingest?name=ln.wall&format=lines&sampleRate=10' --data-binary @"$T/p.lines"
is "$code" 200 "lines: 200"
is "$(total 'wall:wall{service_name="ln"}')" 300000000 "3 lines at 10 Hz: 0.3 s of wall time"
is "$(total 'wall:wall{service_name="ln"}' --focus work)" 200000000 "two of them main;work"

# ---- Pyroscope's legacy binary trie and tree ----
gen trie >"$T/p.trie"
gen tree >"$T/p.tree"
gen trie-cut >"$T/p.trie-cut"
http POST '/ingest?name=tr.cpu&format=trie' --data-binary @"$T/p.trie"
is "$code" 200 "format=trie: 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="tr"}')" 450000000 "45 samples at 100 Hz"
http POST '/ingest?name=trc.cpu' -H 'Content-Type: binary/octet-stream+trie' --data-binary @"$T/p.trie"
is "$code" 200 "a trie told by Content-Type binary/octet-stream+trie: 200"
is "$(total 'process_cpu:cpu{service_name="trc"}' --focus work)" 300000000 "main;work's 30 samples"
http POST '/ingest?name=tre.cpu&format=tree' --data-binary @"$T/p.tree"
is "$code" 200 "format=tree: 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="tre"}')" 450000000 "45 samples at 100 Hz"
http POST '/ingest?name=trec.cpu' -H 'Content-Type: binary/octet-stream+tree' --data-binary @"$T/p.tree"
is "$code" 200 "a tree told by Content-Type binary/octet-stream+tree: 200"
is "$(total 'process_cpu:cpu{service_name="trec"}' --focus idle)" 100000000 "main;idle's 10 samples"
http POST '/ingest?name=cut.cpu&format=trie' --data-binary @"$T/p.trie-cut"
is "$code" 400 "a truncated trie: 400"
err_is '^the body is not a profile: trie: |trie: ' "saying it is the trie"

# ---- JFR (format=jfr, or a form's jfr part, as Pyroscope's Java agent sends it): a recording that
# OpenJDK 17 wrote (tests/fixtures/jfr), stored as cprof query -i reads the same file ----
jfr="$FIXTURES/jfr/small.jfr.gz"
jcpu=$("$CPROF" query -i "$jfr" -t cpu -f json | jq .total)
jlock=$("$CPROF" query -i "$jfr" -t mutex_contentions -f json | jq .total)
jalloc=$("$CPROF" query -i "$jfr" -t alloc_sample_objects -f json | jq .total)
http POST '/ingest?name=javaapp&format=jfr&spyName=javaspy' --data-binary @"$jfr"
is "$code" 200 "format=jfr, a gzipped recording: 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="javaapp"}')" "$jcpu" "its CPU time is the recording's ($jcpu ns)"
is "$(total 'mutex:contentions{service_name="javaapp"}')" "$jlock" "its monitor contentions ($jlock)"
is "$(total 'memory:alloc_sample_objects{service_name="javaapp"}')" "$jalloc" "its sampled allocations ($jalloc)"
run "$CPROF" query --data "$D" --since 24h --values pyroscope_spy 'process_cpu:cpu{service_name="javaapp"}'
is "$out" "javaspy" "with the spyName label"
gunzip -c "$jfr" >"$T/small.jfr"
printf '' >"$T/empty.labels"
http POST '/ingest?name=javaform' -F 'jfr=@'"$T/small.jfr" -F 'labels=@'"$T/empty.labels"
is "$code" 200 "a form with a jfr part (and an empty labels part): 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="javaform"}')" "$jcpu" "the same CPU time"

# ---- refused, with a 4xx naming the problem ----
http POST '/ingest?name=bad&format=bogus' --data-binary @"$T/p.folded"
is "$code" 400 "format=bogus: 400"
err_is "format 'bogus' is not one /ingest takes" "naming the format"
http POST '/ingest?name=j&format=jfr' --data-binary 'FLR'
is "$code" 400 "format=jfr with a recording cut after its magic: 400"
err_is "^format=jfr: " "naming JFR"
http POST '/ingest?name=j&format=jfr' --data-binary @"$T/p.folded"
is "$code" 400 "format=jfr with folded text: 400"
err_is "not a JFR recording" "saying it is not one"
http POST '/ingest?name=j' -F 'jfr=@'"$T/p.folded" -F 'labels=@'"$T/p.folded"
is "$code" 400 "a form whose jfr part is no recording: 400"
err_is "not a JFR recording" "saying so"
printf -- '--XX--\r\n' >"$T/none.form"
http POST '/ingest?name=e' -H 'Content-Type: multipart/form-data; boundary=XX' --data-binary @"$T/none.form"
is "$code" 400 "an empty multipart form: 400"
err_is "no parts|form" "saying the form is empty"
http POST '/ingest?name=e' -F 'other=@'"$T/p.folded"
is "$code" 400 "a form without a profile part: 400"
err_is "no 'profile' part" "naming the part"
: >"$T/empty"
http POST '/ingest?name=e' -F "profile=@$T/empty"
is "$code" 400 "a form whose profile part is empty: 400"
err_is "'profile' part is empty" "saying so"
printf -- '--XX\r\nContent-Disposition: form-data; name="profile"; filename="p"\r\n\r\n' >"$T/cut.form"
head -c 200 "$T/cpu.pb" >>"$T/cut.form"
http POST '/ingest?name=e' -H 'Content-Type: multipart/form-data; boundary=XX' --data-binary @"$T/cut.form"
is "$code" 400 "a truncated multipart form: 400"
err_is "form" "saying the form is malformed"
http POST '/ingest?name=e' -H 'Content-Type: multipart/form-data' --data-binary @"$T/cut.form"
is "$code" 400 "a multipart form without a boundary: 400"
http POST '/ingest?name=e&format=pprof' --data-binary @"$T/p.folded"
is "$code" 400 "folded text as format=pprof: 400"
err_is "not a profile" "saying the body is not a profile"
head -c 100 "$T/cpu.pb" >"$T/cut.pb"
http POST '/ingest?name=e' --data-binary @"$T/cut.pb"
is "$code" 400 "a truncated pprof without format=: 400"
err_is "neither folded text nor a pprof" "saying what it tried"

# ---- speedscope (format=speedscope): hand-written files of known totals, read as Pyroscope reads them ----
S='"$schema":"https://www.speedscope.app/file-format-schema.json"'
F='"shared":{"frames":[{"name":"main","file":"m.js","line":3},{"name":"work"},{"name":"idle"}]}'
# one sampled profile in milliseconds: main;work 15, main;idle 2.5, main 1 -> 18.5 ms of CPU in nanoseconds
cat >"$T/s.json" <<EOF
{$S,$F,"profiles":[{"type":"sampled","name":"p1","unit":"milliseconds","startValue":0,"endValue":20,
"samples":[[0,1],[0,1],[0,2],[0]],"weights":[10,5,2.5,1]}],"exporter":"hand","name":"s"}
EOF
http POST '/ingest?name=ss&format=speedscope' --data-binary @"$T/s.json"
is "$code" 200 "format=speedscope, a sampled profile: 200 ($body)"
is "$(total 'process_cpu:cpu{service_name="ss"}')" 18500000 "its weights in ms, stored as CPU nanoseconds"
is "$(total 'process_cpu:cpu{service_name="ss"}' --focus idle)" 2500000 "a fraction of a ms kept"
run "$CPROF" query --data "$D" --series 'process_cpu:cpu{service_name="ss"}'
like "$out" 'profile_name="p1"' "labelled profile_name, as Pyroscope labels it"
gzip -c "$T/s.json" >"$T/s.json.gz"
http POST '/ingest?name=ssgz&format=speedscope' --data-binary @"$T/s.json.gz"
is "$code" 200 "gzipped: 200"
is "$(total 'process_cpu:cpu{service_name="ssgz"}')" 18500000 "the same total"
# evented in microseconds: main open 0..1000, work nested 100..400 -> main 700, main;work 300
cat >"$T/e.json" <<EOF
{$S,$F,"profiles":[{"type":"evented","name":"ev","unit":"microseconds","startValue":0,"endValue":1000,"events":[
{"type":"O","at":0,"frame":0},{"type":"O","at":100,"frame":1},{"type":"C","at":400,"frame":1},
{"type":"C","at":1000,"frame":0}]}]}
EOF
http POST '/ingest?name=ssev.wall&format=speedscope' --data-binary @"$T/e.json"
is "$code" 200 "an evented profile under the name's type (.wall): 200 ($body)"
is "$(total 'wall:wall{service_name="ssev"}')" 1000000 "each stack weighs the time it is open (1000 us)"
is "$(total 'wall:wall{service_name="ssev"}' --focus work)" 300000 "the nested frame its 300 us"
# several profiles: each named by its unit (seconds -> wall, bytes -> memory); two of one name, type,
# unit and startValue are one
cat >"$T/m.json" <<EOF
{$S,$F,"profiles":[
{"type":"sampled","name":"one","unit":"seconds","startValue":0,"endValue":2,"samples":[[0,1]],"weights":[1]},
{"type":"sampled","name":"one","unit":"seconds","startValue":0,"endValue":2,"samples":[[0,2]],"weights":[2]},
{"type":"sampled","name":"two","unit":"seconds","startValue":0,"endValue":2,"samples":[[0]],"weights":[0.5]},
{"type":"sampled","name":"heap","unit":"bytes","startValue":0,"endValue":2,"samples":[[0,1]],"weights":[4096]}]}
EOF
http POST '/ingest?name=ssm&format=speedscope' --data-binary @"$T/m.json"
is "$code" 200 "several profiles: 200 ($body)"
is "$(printf '%s' "$body" | jq .profiles)" 3 "the two of one key merged: 3 profiles"
is "$(total 'wall:wall{service_name="ssm"}')" 3500000000 "the seconds ones as wall nanoseconds"
is "$(total 'wall:wall{service_name="ssm",profile_name="one"}')" 3000000000 "the merged one holds both"
is "$(total 'memory:samples{service_name="ssm"}')" 4096 "the bytes one as memory:samples:bytes"
# refused, each naming the problem
http POST '/ingest?name=e&format=speedscope' --data-binary '{}'
is "$code" 400 "format=speedscope without its \$schema: 400"
err_is 'schema' "naming it"
http POST '/ingest?name=e&format=speedscope' --data-binary '{"a":'
is "$code" 400 "not JSON: 400"
err_is 'not JSON' "saying so"
sed 's/\[0,2\]/[0,7]/' "$T/s.json" >"$T/bad.json"
http POST '/ingest?name=e&format=speedscope' --data-binary @"$T/bad.json"
is "$code" 400 "a frame index past the shared frames: 400"
err_is 'sample 2: frame index' "naming the sample"
sed 's/"C","at":400,"frame":1/"C","at":400,"frame":0/' "$T/e.json" >"$T/bad.json"
http POST '/ingest?name=e&format=speedscope' --data-binary @"$T/bad.json"
is "$code" 400 "an event closing a frame not open last: 400"
err_is 'event 2: closes frame 0' "naming the event"
sed 's/"milliseconds"/"furlongs"/' "$T/s.json" >"$T/bad.json"
http POST '/ingest?name=e&format=speedscope' --data-binary @"$T/bad.json"
is "$code" 400 "an unknown unit: 400"
err_is 'unknown "unit"' "naming it"

kill "$SPID"
wait "$SPID" 2>/dev/null
unlike "$(cat "$T/serve.err")" 'Sanitizer|runtime error' "the server reported no memory or undefined-behaviour error"
done_testing
