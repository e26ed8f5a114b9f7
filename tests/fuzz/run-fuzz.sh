#!/bin/sh
# Runs each fuzz target: with libFuzzer (the sanitizer build with clang) for
# FUZZ_SECONDS each (make check: 15; make fuzz: 300), from the seed corpus
# and the crashes kept in tests/fuzz/regress/TARGET/; otherwise the replay
# driver over the same files, their prefixes and bit flips.  FUZZ_ONLY
# picks targets (default: all).  TAP output.
. "$srcdir/tests/cli/lib.sh"
seconds=${FUZZ_SECONDS:-15}
fuzz="$top_builddir/tests/fuzz"
mkdir -p "$T/seeds-pprof" "$T/seeds-folded" "$T/seeds-selector" "$T/seeds-procfs" "$T/seeds-ingest" "$T/seeds-config" \
	"$T/seeds-serve" "$T/seeds-debugfile"
cp "$FIXTURES"/*.pb.gz "$T/seeds-pprof/"
for f in "$FIXTURES"/*.pb.gz; do gzip -dc "$f" > "$T/seeds-pprof/raw-$(basename "$f" .gz)"; done
printf 'main;work;alpha 30\nmain;work;beta 20\nmain;viaDelta;gamma 10\n' > "$T/seeds-folded/a.folded"
printf '# comment\n\nroot 1\nx;y;z 1234567\n' > "$T/seeds-folded/b.folded"

printf 'process_cpu:cpu{comm="burn", pid!="1", host=~"a.*", x!~"b|c"}' > "$T/seeds-selector/a"
printf 'now-1h30m' > "$T/seeds-selector/b"
printf '2026-11-22T10:00:00.123+02:00' > "$T/seeds-selector/c"
printf "{a='x\\n', b=\`raw\`,}" > "$T/seeds-selector/d"
# procfs: the first byte picks the parser (0 maps, 1 cgroup, 2 perf map, 3 kallsyms; else all)
{ printf '\000'; printf '%s\n' '7f1c2a026000-7f1c2a17c000 r-xp 00026000 fe:00 332835   /usr/lib/libc.so.6' \
	'7ffc5e5f3000-7ffc5e5f5000 r-xp 00000000 00:00 0    [vdso]' '1000-2000 rw-p 00000000 00:00 0 ' \
	'1500-1800 r-xp 00001000 08:01 42    /opt/my app/x (deleted)'; } > "$T/seeds-procfs/maps"
printf '\001/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope' \
	1234abcd_5678_90ab_cdef_1234567890ab 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef \
	> "$T/seeds-procfs/cgroup"
{ printf '\002'; printf '%s\n' '7f0000001000 40 jit_a' '0x7f0000001020 0x10 LazyCompile:*foo /a.js:1' \
	'1000 1000 outer' '1100 10 inner' 'zz 1 bad'; } > "$T/seeds-procfs/perfmap"
printf '\003ffffffff81000000 T _stext\nffffffff81004000 D data\nffffffffc0a00000 t ext4_fill_super\t[ext4]\n' \
	> "$T/seeds-procfs/kallsyms"
{ printf '\004\001\002'; printf '%s\n' 'ffffffff81000000 T _stext' 'ffffffffc0a00000 t ext4_fill_super	[ext4]'; } \
	> "$T/seeds-procfs/kallsyms-cache"
printf 'A/system.slice/ssh.service\n1000-2000 r-xp 0 0:0 0 /x\n2000 10 f\nffffffff81000000 t f\n' > "$T/seeds-procfs/all"
# ingest (what cprof serve takes): the first byte picks the parser (0 Pyroscope name, 1 folded,
# 2 lines, 3 Parca writeraw, 4 base64; else all); for 1 and 2 the next byte picks type and rate
printf '\000myapp.cpu{env=prod, region = eu-1,service_name=x}' > "$T/seeds-ingest/name"
printf '\001\000main;work;alpha 30\nmain;work;beta 20\r\nmain 1\n' > "$T/seeds-ingest/folded"
printf '\001\010foo;bar 9223372036854775807\n' > "$T/seeds-ingest/folded-overflow"
printf '\002\001main;work;alpha\nmain;work;alpha\r\n\nmain;beta' > "$T/seeds-ingest/lines"
{ printf '\003{"series":[{"labels":{"labels":[{"name":"__name__","value":"process_cpu"},'
  printf '{"name":"job","value":"api"}]},"samples":[{"rawProfile":"%s"},{"rawProfile":"AAEC"}]}]}' \
	"$(base64 -w0 "$FIXTURES/cpu-short.pb.gz")"; } > "$T/seeds-ingest/writeraw"
{ printf '\004'; gzip -dc "$FIXTURES/cpu-short.pb.gz" | head -c 300 | base64 | tr '+/' '-_' | tr -d =; } \
	> "$T/seeds-ingest/base64"
printf '\377app.alloc_space{a=b}' > "$T/seeds-ingest/all"
# config: cprof serve --config files
printf '%s\n' '# cprof.yaml' 'listen: 0.0.0.0:7070' 'data: /var/lib/cprof' 'retention: 30d' \
	'token_file: /etc/cprof/token' 'tls_cert: "/etc/cprof/cert.pem"' "tls_key: '/etc/cprof/key.pem'" \
	'max_body: 32M' > "$T/seeds-config/full.yaml"
printf '%s\n' '---' 'listen: [a, b]' 'data: &d /x' 'retention: *d' 'max_body: {a: 1}' '...' > "$T/seeds-config/shapes.yaml"
printf '{listen: ":0", max_body: 1Gi}\n' > "$T/seeds-config/flow.yaml"
: > "$T/seeds-config/empty.yaml"
# config: scrape_configs as in Parca's parca.yaml, every key; then small broken ones
printf '%s\n' 'object_storage:' '  bucket: {type: FILESYSTEM, config: {directory: ./data}}' 'scrape_configs:' \
	'  - job_name: "api"' '    scrape_interval: "15s"' '    scrape_timeout: 20s' '    scheme: https' \
	'    params: {debug: "0", tag: [a, "b c"]}' '    static_configs:' \
	"      - targets: ['127.0.0.1:6060', '[::1]:6061']" '        labels: {env: prod, instance: web-1}' \
	'      - targets: [localhost:8080]' '    profiling_config:' '      path_prefix: /app' '      pprof_config:' \
	'        memory: {enabled: true, path: /debug/pprof/allocs, keep_sample_type: [{type: alloc_space, unit: bytes}, {type: inuse_space}]}' \
	'        block: {enabled: false}' '        goroutine: {enabled: yes, path: /debug/pprof/goroutine}' \
	'        mutex: {enabled: False}' \
	'        process_cpu: {enabled: true, path: /debug/pprof/profile, delta: true, seconds: 5}' \
	'        fgprof: {enabled: true, path: "/debug/fgprof?format=pprof", delta: true}' \
	'  - job_name: worker' '    static_configs: [{targets: ["10.0.0.2:6060"]}]' > "$T/seeds-config/scrape-full.yaml"
printf '%s\n' 'scrape_configs:' '  - &j {job_name: a, static_configs: &s [{targets: ["h:1"], labels: {x: "1"}}]}' \
	'  - {job_name: b, static_configs: *s, profiling_config: {pprof_config: {heap: {path: /debug/pprof/heap}}}}' \
	> "$T/seeds-config/scrape-alias.yaml"
i=0
for y in 'scrape_configs: [{job_name: a, relabel_configs: [{action: keep}]}]' \
	'scrape_configs: [{job_name: a, scrape_intervall: 10s}]' \
	'scrape_configs: [{static_configs: [{targets: ["h:1"]}]}]' \
	'scrape_configs: [{job_name: a}, {job_name: a}]' \
	'scrape_configs: [{job_name: a, static_configs: [{targets: ["h"]}, {targets: ["h:0", "h:65536", "a/b:1"]}]}]' \
	'scrape_configs: [{job_name: a, scrape_interval: 30s, scrape_timeout: 30s}]' \
	'scrape_configs: [{job_name: a, scrape_interval: 0s}]' \
	'scrape_configs: [{job_name: a, scheme: ftp}]' \
	'scrape_configs: [{job_name: a, static_configs: [{labels: {"0bad": x}}]}]' \
	'scrape_configs: [{job_name: a, profiling_config: {pprof_config: {fgprof: {enabled: true}}}}]' \
	'scrape_configs: [{job_name: a, profiling_config: {pprof_config: {process_cpu: {seconds: 86401}}}}]' \
	'scrape_configs: [{job_name: a, profiling_config: {pprof_config: {memory: {keep_sample_type: [{unit: bytes}]}}}}]' \
	'scrape_configs: [{job_name: a, profiling_config: {pprof_config: {memory: {enabled: maybe}}}}]' \
	'scrape_configs: [{job_name: a, profiling_config: {pprof_config: {"a b": {path: /x}}}}]' \
	'scrape_configs: [{job_name: a, params: {k: [[1]]}}]' \
	'scrape_configs: {job_name: a}' \
	'scrape_configs: [[job_name]]' \
	'scrape_configs: &a [*a]'; do
	i=$((i + 1))
	printf '%s\n' "$y" > "$T/seeds-config/scrape-bad-$i.yaml"
done
# serve: raw HTTP requests to the in-process server, several per input split by a line "#NEXT"
# req METHOD TARGET [BODYFILE [HEADER...]]: one request with its Content-Length
req() {
	_m=$1 _t=$2 _b=${3:-/dev/null}
	shift 2; [ $# -gt 0 ] && shift
	printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' "$_m" "$_t"
	for _h in "$@"; do printf '%s\r\n' "$_h"; done
	if [ "$_m" = POST ]; then printf 'Content-Length: %s\r\n\r\n' "$(wc -c < "$_b")"; cat "$_b"; else printf '\r\n'; fi
}
next() { printf '\n#NEXT\n'; }
S="$T/seeds-serve"
printf 'main;work;alpha 30\nmain;work;beta 20\n' > "$T/folded.txt"
{ req POST '/api/v1/push?name=cpu&time=now&env=fuzz' "$FIXTURES/cpu-short.pb.gz"; next
  req GET '/api/v1/profile?query=cpu&from=now-1h&format=json&max_nodes=5'; next
  req GET '/api/v1/profile?query=cpu%7Benv%3D%22fuzz%22%7D&format=folded&focus=main&ignore=beta'; next
  req GET '/api/v1/profile?query=cpu&format=groups&group_by=env'; } > "$S/push-query"
{ req POST '/ingest?name=app.cpu%7Benv%3Dprod%7D&from=now-10s&until=now&sampleRate=100' "$T/folded.txt"; next
  req GET '/api/v1/range?query=app.cpu&step=10s'; next
  req GET '/api/v1/series'; next
  req GET '/api/v1/labels'; next
  req GET '/api/v1/values?label=env'; } > "$S/pyroscope-folded"
{ printf -- '--XyZ\r\nContent-Disposition: form-data; name="profile"; filename="p.pprof"\r\n'
  printf 'Content-Type: application/octet-stream\r\n\r\n'; cat "$FIXTURES/cpu-short.pb.gz"; printf '\r\n--XyZ--\r\n'; } > "$T/form.bin"
req POST '/ingest?name=nodeapp.cpu%7Bservice_name%3Dn%7D&format=pprof' "$T/form.bin" \
	'Content-Type: multipart/form-data; boundary=XyZ' > "$S/pyroscope-multipart"
{ printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"process_cpu"},{"name":"job","value":"a"}]},'
  printf '"samples":[{"rawProfile":"%s"},{"rawProfile":"%s"}]}]}' "$(base64 -w0 "$FIXTURES/cpu-short.pb.gz")" \
	"$(base64 -w0 "$FIXTURES/cpu-short.pb.gz")"; } > "$T/writeraw.json"
{ req POST /api/profiles/writeraw "$T/writeraw.json"; next
  req GET /api/profiles/types; next
  req GET /api/profiles/labels/job/values; } > "$S/parca"
{ req POST '/api/v1/push?name=heap&time=now' "$FIXTURES/heap.pb.gz"; next
  req GET '/api/v1/diff?before=heap&after=heap&format=table'; next
  req GET '/api/v1/profile?query=heap&format=svg'; next
  req GET '/api/v1/profile?query=heap&format=pprof'; next
  req GET '/api/v1/profile?query=heap&format=top&limit=3'; next
  req GET /api/v1/stats; next
  req GET /metrics; next
  req GET /healthz; } > "$S/diff-render"
# debug files: a small program's, its DWARF compressed as distributions ship it (-gz=zlib), and the same
# split off with objcopy --only-keep-debug (section data gone, program headers kept)
printf 'volatile int s;\nstatic inline void f(int i) { s += i; }\nint main(void) { for (int i = 0; i < 9; i++) f(i); return 0; }\n' \
	> "$T/dbg.c"
D="$T/seeds-debugfile"
if cc -O2 -g -gz=zlib -o "$D/compressed" "$T/dbg.c" 2>/dev/null; then
	objcopy --only-keep-debug "$D/compressed" "$D/only-debug" 2>/dev/null || :
	cc -O2 -g -gz=none -o "$D/plain" "$T/dbg.c" 2>/dev/null || :
else
	printf '\177ELF' > "$D/stub"
fi
# crashes found before (the request shapes that once crashed the server, ...), kept as regression inputs
for d in "$srcdir"/tests/fuzz/regress/*/; do
	[ -d "$d" ] && cp "$d"* "$T/seeds-$(basename "$d")/"
done
for target in ${FUZZ_ONLY:-pprof folded selector procfs ingest config serve debugfile}; do
	bin="$fuzz/fuzz_$target"
	# (fuzz_debugfile's scratch cache directory: in $T, gone with it whichever way the fuzzer exits)
	TMPDIR=$T
	export TMPDIR
	if [ "${FUZZ_LIBFUZZER:-no}" = yes ]; then
		mkdir -p "$T/corpus-$target"
		# a crash's input goes to $FUZZ_ARTIFACTS (make fuzz: fuzz-crashes/) as TARGET-crash-...: copy it
		# into tests/fuzz/regress/TARGET/ with the fix, so that every make check replays it
		art=${FUZZ_ARTIFACTS:-$T}
		mkdir -p "$art"
		# (fuzz_serve in the short runs of make check: no leak check per input.  Once in ~6,000 inputs
		# LeakSanitizer saw 472 bytes allocated inside libmicrohttpd 0.9.75 (no symbols past it) that
		# replaying the input never reproduces; a check must not fail by chance.  The server's own leaks
		# are caught by the ASan CLI tests, whose servers exit under LeakSanitizer, and make fuzz keeps
		# the per-input check.)
		leaks=1
		[ "$target" = serve ] && [ -z "${FUZZ_ARTIFACTS:-}" ] && leaks=0
		run "$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
			-detect_leaks=$leaks -artifact_prefix="$art/$target-" "$T/corpus-$target" "$T/seeds-$target"
		runs=$(printf '%s\n' "$err" | sed -n 's/^stat::number_of_executed_units: *//p')
		is "$rc" 0 "libFuzzer ran fuzz_$target for ${seconds}s without a crash (${runs:-?} runs)"
		[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 30 | sed 's/^/# /'
	else
		run "$bin" "$T/seeds-$target"/*
		is "$rc" 0 "fuzz_$target replays its seeds, their prefixes and bit flips ($out)"
		[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 30 | sed 's/^/# /'
	fi
done
done_testing
