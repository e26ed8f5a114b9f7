#!/bin/sh
# Benchmark: cprof serve (the release build) under hostile requests that cost
# memory or CPU.  Each attack is a function, attack_NAME, run in the order of
# ATTACKS (BENCH_HOSTILE_ATTACKS overrides it, e.g. "labels"); each reports
# its requests' statuses, the time they took and the server's peak RSS during
# the attack (VmHWM of /proc/PID/status, reset between attacks through
# /proc/PID/clear_refs), then /healthz must still answer.
#   gzip_bomb  gzipped pprof bodies of empty Sample records: 20 KB (10 M
#              records; took the server to 1.4 GB and 17 s) and 102 KB (50 M;
#              past 4 GB), and a 1 MB gzip that inflates to 1 GiB
#   labels     a Parca writeraw series of 160,000 labels (took 69 s)
#   folded     four concurrent 1 MB gzipped folded bodies, each inflating to
#              ~1 GiB of stacks (past 4 GB together)
#   json       a writeraw body of 10 M empty JSON objects (30 MB; took 2.3 GB
#              and 22 s in jansson)
#   regex      200 series whose job label is a{30}bN, then 4 concurrent
#              selectors job=~"(a+)+$" and 4 concurrent focus=(a+)+$ over
#              1,000 such frame names (took ~77 s and 139 s, holding every
#              read handle); /metrics is asked meanwhile
# Target: peak RSS <= 256 MB in every attack, and the server alive after
# each.  (4 concurrent bombs: the bodies being inflated at once share a budget
# of --max-decompressed; the ones past it are answered 503.)  Exits 0 unless something failed to run; PASS / NOT MET lines give
# the verdict.  To add an attack: write attack_NAME (send, then call
# `report NAME TARGET_MB`) and add NAME to ATTACKS.
# usage: bench/hostile.sh BUILDDIR   (run by `make bench`)
bench=hostile; . "$(dirname "$0")/lib.sh"
ATTACKS=${BENCH_HOSTILE_ATTACKS:-"gzip_bomb labels folded json regex"}
PY=/usr/bin/python3
for tool in curl "$PY"; do
	command -v "$tool" > /dev/null || { echo "hostile: $tool is not installed"; exit 1; }
done

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# peak_mb: the server's peak RSS since the last reset, in MB (10^6 bytes)
peak_mb() { awk '/^VmHWM:/ { printf "%.0f", $2 * 1024 / 1e6 }' "/proc/$spid/status"; }
reset_peak() { echo 5 > "/proc/$spid/clear_refs" 2> /dev/null || :; }
# post NAME PATH FILE: POSTs FILE, prints "NAME: STATUS in Ns: ERROR"
post() {
	_t=$(now)
	_o=$(mktemp "$d/answer.XXXXXX")
	_c=$(curl -s -o "$_o" -w '%{http_code}' -X POST --data-binary @"$3" "$url$2") || _c=000
	echo "  $1: $_c in $(since "$_t") s: $(head -c 200 "$_o")"
}
# get NAME PATH [NAME=VALUE...]: GETs PATH with the arguments (URL-encoded by curl), prints "NAME: STATUS in Ns: ERROR"
get() {
	_n=$1 _p=$2
	shift 2
	for _kv in "$@"; do set -- "$@" --data-urlencode "$_kv"; shift; done
	_t=$(now)
	_o=$(mktemp "$d/answer.XXXXXX")
	_c=$(curl -s -o "$_o" -w '%{http_code}' -G "$@" "$url$_p") || _c=000
	echo "  $_n: $_c in $(since "$_t") s: $(head -c 120 "$_o" | tr '\n' ' ')"
}
# report NAME TARGET_MB: the attack's peak RSS against the target, and whether the server is alive
report() {
	_p=$(peak_mb)
	_h=$(curl -s -m 5 "$url/healthz" || :)
	echo "  peak RSS during $1: $_p MB (target <= $2 MB): $(verdict '<=' "$_p" "$2")"
	[ "$_h" = ok ] && echo "  /healthz after $1: ok: PASS" || echo "  /healthz after $1: '$_h': NOT MET"
}

# gen KIND ARG [FILE]: a hostile body on stdout (see the attacks)
cat > "$d/gen.py" << 'PYEOF'
import base64, sys, zlib
kind, arg = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
def gz_chunks(chunks):
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    for c in chunks:
        out.write(z.compress(c))
    out.write(z.flush())
if kind == 'empty':    # pprof: a header, then ARG empty Sample records
    head = b'\x32\x00\x32\x07samples\x32\x05count\x0a\x04\x08\x01\x10\x02'
    gz_chunks([head] + [b'\x12\x00' * 1000000] * (arg // 1000000))
elif kind == 'zeros':  # ARG MiB of zero bytes
    gz_chunks([bytes(1 << 20)] * arg)
elif kind == 'folded': # ARG MiB of folded stacks
    line = b'main;serve;handle;parse;alloc 1\n'
    gz_chunks([line * ((1 << 20) // len(line))] * arg)
elif kind == 'objects': # writeraw: ARG empty objects as samples
    out.write(('{"series":[{"samples":[' + ','.join(['{}'] * arg) + ']}]}').encode())
elif kind == 'series': # writeraw: ARG series, job=a{30}bN, each with the profile of argv[3]
    raw = base64.b64encode(open(sys.argv[3], 'rb').read()).decode()
    series = ','.join('{"labels":{"labels":[{"name":"__name__","value":"re"},{"name":"job","value":"%sb%d"}]},'
                      '"samples":[{"rawProfile":"%s"}]}' % ('a' * 30, i, raw) for i in range(arg))
    out.write(('{"series":[%s]}' % series).encode())
elif kind == 'names':  # folded: ARG stacks main;a{30}bN
    out.write(''.join('main;%sb%d %d\n' % ('a' * 30, i, i + 1) for i in range(arg)).encode())
elif kind == 'labels': # writeraw: a series of __name__ and ARG labels, the profile of argv[3]
    raw = base64.b64encode(open(sys.argv[3], 'rb').read()).decode()
    labels = ','.join('{"name":"l%d","value":"v%d"}' % (i, i) for i in range(arg))
    out.write(('{"series":[{"labels":{"labels":[{"name":"__name__","value":"lab"},%s]},'
               '"samples":[{"rawProfile":"%s"}]}]}' % (labels, raw)).encode())
PYEOF
gen() { "$PY" "$d/gen.py" "$@"; }
size() { wc -c < "$1" | tr -d ' '; }

attack_gzip_bomb() {
	gen empty 10000000 > "$d/e10.gz"
	gen empty 50000000 > "$d/e50.gz"
	gen zeros 1024 > "$d/z1g.gz"
	echo "gzip_bomb: pprof of empty Sample records ($(size "$d/e10.gz") and $(size "$d/e50.gz") bytes gzipped)," \
		"and $(size "$d/z1g.gz") bytes that inflate to 1 GiB"
	post "10 M empty samples, /api/v1/push" '/api/v1/push?name=bomb' "$d/e10.gz"
	post "10 M empty samples, /ingest?format=pprof" '/ingest?name=bomb.cpu&format=pprof' "$d/e10.gz"
	post "50 M empty samples, /api/v1/push" '/api/v1/push?name=bomb' "$d/e50.gz"
	post "1 GiB of zeros, /ingest (folded)" '/ingest?name=bomb.cpu' "$d/z1g.gz"
	report gzip_bomb 256
}

attack_labels() {
	"$b/cprof" query -i "$b/../tests/fixtures/cpu-before.pb.gz" -f pprof -o "$d/small.pb.gz" 2> /dev/null ||
		gen empty 1 > "$d/small.pb.gz"
	gen labels 160000 "$d/small.pb.gz" > "$d/labels.json"
	echo "labels: a writeraw series of 160,000 labels ($(size "$d/labels.json") bytes)"
	post "160 k labels, writeraw" /api/profiles/writeraw "$d/labels.json"
	report labels 256
}

attack_folded() {
	gen folded 1024 > "$d/f1g.gz"
	echo "folded: 4 concurrent gzipped folded bodies of $(size "$d/f1g.gz") bytes, each inflating to 1 GiB"
	_pids=
	for i in 1 2 3 4; do
		post "folded $i, /ingest" '/ingest?name=bomb.cpu' "$d/f1g.gz" > "$d/folded$i.out" &
		_pids="$_pids $!"
	done
	wait $_pids
	cat "$d"/folded[1-4].out
	report folded 256
}

attack_json() {
	gen objects 10000000 > "$d/objects.json"
	echo "json: a writeraw body of 10 M empty JSON objects ($(size "$d/objects.json") bytes)"
	post "10 M empty objects, writeraw" /api/profiles/writeraw "$d/objects.json"
	report json 256
}

attack_regex() {
	[ -s "$d/small.pb.gz" ] || "$b/cprof" query -i "$b/../tests/fixtures/cpu-before.pb.gz" -f pprof \
		-o "$d/small.pb.gz" 2> /dev/null
	gen series 200 "$d/small.pb.gz" > "$d/series.json"
	gen names 1000 > "$d/names.folded"
	post "200 series job=a{30}bN, writeraw" /api/profiles/writeraw "$d/series.json" > /dev/null
	post "1,000 frames a{30}bN, /ingest" '/ingest?name=names.cpu' "$d/names.folded" > /dev/null
	reset_peak
	echo "regex: 4 concurrent selectors re{job=~\"(a+)+\$\"} over 200 series, then 4 concurrent" \
		"focus=(a+)+\$ over 1,000 frame names"
	_pids=
	for i in 1 2 3 4; do
		get "selector $i" '/api/v1/series' 'query=re{job=~"(a+)+$"}' > "$d/re$i.out" &
		_pids="$_pids $!"
	done
	get "/metrics during the selectors" /metrics | cut -c1-60
	wait $_pids
	cat "$d"/re[1-4].out
	_pids=
	for i in 1 2 3 4; do
		get "focus $i" /api/v1/profile 'query=process_cpu{service_name="names"}' 'from=now-1h' 'focus=(a+)+$' > "$d/fo$i.out" &
		_pids="$_pids $!"
	done
	get "/metrics during the focus" /metrics | cut -c1-60
	wait $_pids
	cat "$d"/fo[1-4].out
	report regex 256
}

# ---- the server: the release build, default limits ----
serve_start --data "$d/store"
echo "server: cprof serve --listen 127.0.0.1:0 (default --max-body 32M, --max-decompressed 128M) at $url" \
	"(pid $spid), $(peak_mb) MB resident at start"
for a in $ATTACKS; do
	reset_peak
	t=$(now)
	"attack_$a"
	echo "  $a took $(since "$t") s"
done
