# cprof serve under hostile pushes that cost memory or CPU rather than crash: gzip bombs (a body that
# inflates far beyond --max-decompressed, a pprof of millions of empty Sample records), a series with
# thousands of labels, NUL bytes in label names and values, Pyroscope's forms, tries and sample_type_config
# at their limits.  Each is sent to the real server (under
# ASan in the sanitizer build); after each, the server must answer with a clear status, stay alive and
# keep the data stored before it.  The bombs are made here, by Debian's python3, not committed.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
[ -x /usr/bin/python3 ] || skip_all "python3 is not installed (apt-get install python3)"
before="$FIXTURES/cpu-before.pb.gz"

# gen KIND ARG >FILE: a hostile body (see each kind)
cat >"$T/gen.py" <<'PYEOF'
import base64, sys, zlib
kind, arg = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
def gz_chunks(chunks):  # a gzip stream of the chunks, level 9
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    for c in chunks:
        out.write(z.compress(c))
    out.write(z.flush())
if kind == 'empty':    # pprof: strings, one sample type, then ARG empty Sample records (2 bytes each)
    head = b'\x32\x00\x32\x07samples\x32\x05count\x0a\x04\x08\x01\x10\x02'
    gz_chunks([head] + [b'\x12\x00' * 1000000] * (arg // 1000000) + [b'\x12\x00' * (arg % 1000000)])
elif kind == 'zeros':  # ARG MiB of zero bytes
    gz_chunks([bytes(1 << 20)] * arg)
elif kind == 'lines':  # the 'lines' format: ARG stacks of one frame
    gz_chunks([b'main\n' * arg])
elif kind == 'labels': # writeraw: one series with __name__ and ARG other labels, the profile of argv[3]
    raw = base64.b64encode(open(sys.argv[3], 'rb').read()).decode()
    labels = ','.join('{"name":"l%d","value":"v"}' % i for i in range(arg))
    out.write(('{"series":[{"labels":{"labels":[{"name":"__name__","value":"lab"},%s]},'
               '"samples":[{"rawProfile":"%s"}]}]}' % (labels, raw)).encode())
elif kind == 'deeptrie':  # a Pyroscope trie: a chain of ARG nodes of 500-byte names, each with a value
    def uv(n):
        b = b''
        while n > 127:
            b += bytes([n & 0x7f | 0x80])
            n >>= 7
        return b + bytes([n])
    node = uv(500) + b'f' * 500 + uv(1) + uv(1)
    gz_chunks([uv(0) + uv(0) + uv(1)] + [node * 1000] * (arg // 1000) + [uv(1) + b'g' + uv(1) + uv(0)])
elif kind == 'parts':  # a multipart form of ARG tiny parts named x
    part = b'--XX\r\nContent-Disposition: form-data; name="x"\r\n\r\ny\r\n'
    out.write(part * arg + b'--XX--\r\n')
PYEOF
gen() { /usr/bin/python3 "$T/gen.py" "$@"; }
# hwm: the server's peak resident memory so far, in MiB
hwm() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$SPID/status"; }

serve_start serve --listen 127.0.0.1:0 --data "$T/data"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "the server listens"
total() { # SELECTOR: its total over the last day
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$1" --data-urlencode from=now-1d \
		--data-urlencode max_nodes=1 | jq -r .total
}
per=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
http POST '/api/v1/push?name=base&time=now' --data-binary @"$before"
is "$code" 200 "the data stored before the attacks"
alive() { # WHAT: the server answers /healthz and still has the earlier data
	http GET /healthz
	is "$code/$body" "200/ok" "$1: the server is alive"
	is "$(total base:samples)" "$per" "$1: the earlier data is intact"
}
err_is() { # REGEX WHAT: the last answer's error says why
	like "$(printf '%s' "$body" | jq -r .error 2>/dev/null)" "$1" "$2: saying why"
}

# ---- a 20 KB gzip of 10 M empty pprof Sample records (took 1.4 GB and 17 s) ----
gen empty 10000000 >"$T/empty.pb.gz"
diag "the empty-sample bomb: $(wc -c <"$T/empty.pb.gz") bytes"
http POST '/api/v1/push?name=bomb&time=now' --data-binary @"$T/empty.pb.gz"
is "$code" 413 "/api/v1/push of the empty-sample bomb: 413"
err_is 'over 1000000 samples' "/api/v1/push of the empty-sample bomb"
alive "/api/v1/push of the empty-sample bomb"
http POST '/ingest?name=bomb.cpu&format=pprof' --data-binary @"$T/empty.pb.gz"
is "$code" 413 "/ingest?format=pprof of the empty-sample bomb: 413"
err_is 'over 1000000 samples' "/ingest?format=pprof of the empty-sample bomb"
alive "/ingest?format=pprof of the empty-sample bomb"
printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"bomb"}]},"samples":[{"rawProfile":"%s"}]}]}' \
	"$(base64 -w0 "$T/empty.pb.gz")" >"$T/empty.json"
http POST /api/profiles/writeraw --data-binary @"$T/empty.json"
is "$code" 413 "writeraw of the empty-sample bomb: 413"
err_is 'rawProfile 0: .*over 1000000 samples' "writeraw of the empty-sample bomb"
alive "writeraw of the empty-sample bomb"
peak=$(hwm)
diag "the server's peak RSS after the empty-sample bombs: $peak MiB"
ok "it never held the bombs' records (peak $peak MiB, under 400; before: 1.4 GB)" test "$peak" -lt 400

# ---- a body that inflates past --max-decompressed (default 4 x --max-body: 128 MiB) ----
gen zeros 129 >"$T/z129.gz"
http POST '/ingest?name=zeros.cpu' --data-binary @"$T/z129.gz"
is "$code" 413 "a folded body that inflates to 129 MiB: 413"
err_is '^the decompressed body is over 128 MiB \(--max-decompressed\)$' "a folded body that inflates to 129 MiB"
alive "a folded body that inflates to 129 MiB"
http POST '/api/v1/push?name=zeros&time=now' --data-binary @"$T/z129.gz"
is "$code" 413 "/api/v1/push of a body that inflates to 129 MiB: 413"
err_is 'decompressed body is over 128 MiB' "/api/v1/push of a body that inflates to 129 MiB"
alive "/api/v1/push of a body that inflates to 129 MiB"

# four at once: they share a budget of --max-decompressed (413 for the one inflating, 503 for the others)
for i in 1 2 3 4; do
	curl -s -o "$T/c$i.body" -w '%{http_code}' --data-binary @"$T/z129.gz" "$URL/ingest?name=zeros.cpu" >"$T/c$i.code" &
	eval "c$i=\$!"
done
wait "$c1" "$c2" "$c3" "$c4"
for i in 1 2 3 4; do
	like "$(cat "$T/c$i.code") $(cat "$T/c$i.body")" '^(413 .*over 128 MiB|503 .*decompressed now take 128 MiB already \(--max-decompressed\): send it again later)' \
		"4 concurrent bodies that inflate to 129 MiB: $i is refused with 413 or 503"
done
alive "4 concurrent bodies that inflate to 129 MiB"

# ---- the 'lines' format: a line is a sample ----
gen lines 1000001 >"$T/lines.gz"
http POST '/ingest?name=lines.cpu&format=lines' --data-binary @"$T/lines.gz"
is "$code" 413 "a lines body of 1,000,001 stacks: 413"
err_is 'over 1000000 samples' "a lines body of 1,000,001 stacks"
alive "a lines body of 1,000,001 stacks"

# ---- Pyroscope's other shapes: a form, a trie, a sample_type_config ----
curl -s -o "$T/.body" -w '%{http_code}' -F "profile=@$T/empty.pb.gz" "$URL/ingest?name=formbomb" >"$T/.code"
code=$(cat "$T/.code")
body=$(cat "$T/.body")
is "$code" 413 "the empty-sample bomb in a multipart form without format= (the Node.js client's shape): 413"
err_is 'over 1000000 samples' "the empty-sample bomb in a form"
alive "the empty-sample bomb in a form"
gen deeptrie 50000 >"$T/deep.trie.gz"
diag "the deep trie: $(wc -c <"$T/deep.trie.gz") bytes, whose stacks would be 600 GB of folded text"
http POST '/ingest?name=deep.cpu&format=trie' --data-binary @"$T/deep.trie.gz"
is "$code" 413 "a gzipped trie of a 50,000-deep chain of stacks: 413"
err_is 'over 128 MiB' "the deep trie"
alive "the deep trie"
printf '\000\000\377\377\377\377\377\377\377\377\177' >"$T/wide.trie"
http POST '/ingest?name=wide.cpu' -H 'Content-Type: binary/octet-stream+trie' --data-binary @"$T/wide.trie"
is "$code" 400 "a trie root of 2^63 children: 400"
err_is 'trie: a node of [0-9]+ children' "a trie root of 2^63 children"
gen parts 200000 >"$T/parts.form"
http POST '/ingest?name=parts' -H 'Content-Type: multipart/form-data; boundary=XX' --data-binary @"$T/parts.form"
is "$code" 400 "a form of 200,000 parts, none of them the profile: 400"
err_is "no 'profile' part" "the form of 200,000 parts"
alive "the form of 200,000 parts"
/usr/bin/python3 -c 'import sys; sys.stdout.write("{" + ",".join("\"t%d\":{}" % i for i in range(20000)) + "}")' >"$T/stc.json"
curl -s -o "$T/.body" -w '%{http_code}' -F "profile=@$before" -F "sample_type_config=@$T/stc.json" \
	"$URL/ingest?name=stc" >"$T/.code"
code=$(cat "$T/.code")
body=$(cat "$T/.body")
is "$code" 413 "a sample_type_config of 200 KB: 413"
err_is 'sample_type_config: .* over the 65536 taken' "the sample_type_config of 200 KB"
alive "the sample_type_config of 200 KB"

# ---- labels: a series of 20,000 (160 k took 69 s), 64 at most, names and values of bounded length ----
gen labels 20000 "$before" >"$T/labels.json"
http POST /api/profiles/writeraw --data-binary @"$T/labels.json"
is "$code" 400 "writeraw with a series of 20,000 labels: 400"
err_is 'more than 64 labels' "writeraw with a series of 20,000 labels"
alive "writeraw with a series of 20,000 labels"
args=
for i in $(seq 1 64); do args="$args&l$i=v"; done
http POST "/api/v1/push?name=wide&time=now$args" --data-binary @"$before"
is "$code" 200 "a push with 64 labels: 200"
http POST "/api/v1/push?name=wide&time=now$args&l65=v" --data-binary @"$before"
is "$code" 400 "a push with 65 labels: 400"
err_is 'more than 64 labels' "a push with 65 labels"
long=$(head -c 2049 /dev/zero | tr '\0' v)
http POST "/api/v1/push?name=long&time=now&env=$long" --data-binary @"$before"
is "$code" 400 "a label value of 2049 bytes: 400"
err_is "value of label 'env' is longer than 2048 bytes" "a label value of 2049 bytes"
http POST "/api/v1/push?name=long&time=now&${long%?}=x" --data-binary @"$before"
is "$code" 400 "a label name of 2048 bytes: 400"
err_is 'longer than 1024 bytes' "a label name of 2048 bytes"
alive "the label limits"

# ---- a writeraw body of 150,000 empty JSON objects (30 MB of them took 2.3 GB in jansson) ----
/usr/bin/python3 -c 'import sys; sys.stdout.write("{\"series\":[{\"samples\":[" + ",".join(["{}"] * 150000) + "]}]}")' \
	>"$T/objects.json"
http POST /api/profiles/writeraw --data-binary @"$T/objects.json"
is "$code" 413 "writeraw of 150,000 empty objects: 413"
err_is 'over 100000 JSON objects and arrays' "writeraw of 150,000 empty objects"
alive "writeraw of 150,000 empty objects"

# ---- NUL bytes (%00) in label names and values (were cut there, silently) ----
for q in 'name=nul&time=now&env=a%00b' 'name=nul&time=now&e%00nv=x' 'name=nul%00x&time=now'; do
	http POST "/api/v1/push?$q" --data-binary @"$before"
	is "$code" 400 "/api/v1/push?$q: 400"
	err_is 'holds a NUL byte' "/api/v1/push?$q"
done
http POST '/ingest?name=nul.cpu%7Benv%3Da%00b%7D' --data-binary 'main;f 1'
is "$code" 400 "a Pyroscope name with a NUL in a label value: 400"
err_is 'holds a NUL byte' "a Pyroscope name with a NUL in a label value"
unlike "$(total nul:samples)" '^[0-9]' "nothing was stored under a cut name"
alive "NUL bytes in arguments"

kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops cleanly after all of it"

# ---- --max-decompressed, and max_decompressed in the configuration file ----
serve_start small --listen 127.0.0.1:0 --data "$T/data2" --max-decompressed 8M
gen zeros 512 >"$T/z512.gz"
http POST '/ingest?name=zeros.cpu' --data-binary @"$T/z512.gz"
is "$code" 413 "--max-decompressed 8M: a body that inflates to 512 MiB: 413"
err_is '^the decompressed body is over 8 MiB \(--max-decompressed\)$' "--max-decompressed 8M"
peak=$(hwm)
diag "the server's peak RSS after a 512 MiB bomb with --max-decompressed 8M: $peak MiB"
ok "it did not inflate the bomb (peak $peak MiB, under 128)" test "$peak" -lt 128
http GET /healthz
is "$code/$body" "200/ok" "--max-decompressed 8M: alive"
http POST '/ingest?name=ok.cpu' --data-binary @"$T/lines.gz"
like "$code" '^400$' "a body within it still gets to the decoder (not a folded line: 400, $code)"
kill -TERM $SPID
wait $SPID
printf 'max_decompressed: 4M\n' >"$T/cprof.yaml"
serve_start conf --listen 127.0.0.1:0 --data "$T/data3" --config "$T/cprof.yaml"
gen zeros 5 >"$T/z5.gz"
http POST '/ingest?name=zeros.cpu' --data-binary @"$T/z5.gz"
is "$code" 413 "max_decompressed: 4M in the configuration file: 413 for 5 MiB"
err_is 'over 4 MiB' "max_decompressed: 4M in the configuration file"
kill -TERM $SPID
wait $SPID
run "$CPROF" serve --max-decompressed 0 --data "$T/data4"
is "$rc" 2 "--max-decompressed 0: a usage error"
like "$err" '--max-decompressed: must be more than 0' "saying why"

# ---- the same bombs in a file: cprof import and query -i fail with one line ----
run "$CPROF" import --data "$T/imp" "$T/empty.pb.gz"
is "$rc" 1 "cprof import of the empty-sample bomb exits 1"
like "$err" '^cprof import: .*empty\.pb\.gz: the profile has over 1000000 samples' "with the reason"
is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
run "$CPROF" query -i "$T/empty.pb.gz"
is "$rc" 1 "cprof query -i of the empty-sample bomb exits 1"
is "$(printf '%s\n' "$err" | wc -l)" 1 "with one line"
gen zeros 300 >"$T/z300.gz"
run "$CPROF" import --data "$T/imp" "$T/z300.gz"
is "$rc" 1 "cprof import of a file that inflates to 300 MiB exits 1"
like "$err" 'decompressed data is over 256 MiB' "with the reason"
is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"

reports=$(cat "$T"/*.err | grep -E 'AddressSanitizer|LeakSanitizer|runtime error' | head -5)
is "$reports" "" "no sanitizer reports"
done_testing
