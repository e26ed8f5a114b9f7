#!/bin/sh
# A cprof built with --disable-bpf (tools/test.sh builds one in build-nobpf/ and runs this against it):
# no libbpf in the binary; record and live top say why they are absent, exit 1, and write nothing;
# the file-only commands (import, query, merge, diff, serve, top's history) work as in a full build.
. "$srcdir/tests/cli/lib.sh"

why='built without the BPF sampler \(configure --disable-bpf\)'
one_line() { [ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; }

run ldd "$CPROF"
unlike "$out" 'libbpf' "the binary does not link libbpf"

run "$CPROF" record -o "$T/r.pb.gz" -d 1 -- true
is "$rc" 1 "record -- CMD exits 1"
like "$err" "^cprof record: this cprof was $why" "record says why it is absent"
ok "record's error is one line" one_line
ok "record -o wrote no file" test ! -e "$T/r.pb.gz"

run "$CPROF" record --all -d 1 --data "$T/rs"
is "$rc" 1 "record --all exits 1"
like "$err" "$why" "record --all says why"
ok "record --all left no data behind" test ! -e "$T/rs/profiles.db"

run "$CPROF" record -h
is "$rc" 0 "record -h still shows the usage"
like "$out" '^usage: cprof record' "record -h prints the usage"

run "$CPROF" top --stdio -d 1
is "$rc" 1 "live top exits 1"
like "$err" "^cprof top: this cprof was $why" "live top says why it is absent"
ok "top's error is one line" one_line

# the file-only commands
run "$CPROF" query -i "$FIXTURES/cpu-before.pb.gz" -f top --limit 3
is "$rc" 0 "query reads a pprof file"
like "$out" 'main\.' "query shows the Go program's functions"
run "$CPROF" merge -o "$T/m.pb.gz" "$FIXTURES/cpu-before.pb.gz" "$FIXTURES/cpu-after.pb.gz"
is "$rc" 0 "merge writes a file"
ok "merge's output is a profile query can read" "$CPROF" query -i "$T/m.pb.gz"
run "$CPROF" diff "$FIXTURES/cpu-before.pb.gz" "$FIXTURES/cpu-after.pb.gz"
is "$rc" 0 "diff compares two files"
run "$CPROF" import --data "$T/s" -l comm=fixture "$FIXTURES/cpu-before.pb.gz"
is "$rc" 0 "import stores a file"
run "$CPROF" query --data "$T/s" --since 100000d -f top --limit 3 'process_cpu{comm="fixture"}'
is "$rc" 0 "query reads the store"
like "$out" 'main\.' "the stored profile has the Go program's functions"
run "$CPROF" top --from-store --data "$T/s" --since 100000d --stdio --type process_cpu --limit 3
is "$rc" 0 "top --from-store works without the sampler"
like "$out" 'main\.' "top's history shows the stored functions"

serve_start srv --data "$T/s" --listen 127.0.0.1:0
ok "serve starts" test -n "$URL"
if [ -n "$URL" ]; then
	http GET /healthz
	is "$code" 200 "serve answers /healthz"
	run "$CPROF" import --remote "$URL" -l comm=pushed "$FIXTURES/cpu-after.pb.gz"
	is "$rc" 0 "import pushes to the server"
	run "$CPROF" query --remote "$URL" --since 100000d -f top --limit 3 'process_cpu{comm="pushed"}'
	like "$out" 'main\.' "the server stored the pushed profile"
	kill "$SPID"
	wait "$SPID" 2>/dev/null
fi
done_testing
