#!/bin/sh
# cprof record with debug files from a real debuginfod server (Debian's
# debuginfod, started here on 127.0.0.1): a program built with -g, split with
# objcopy --only-keep-debug and stripped, is recorded; its debug file is only
# on the server.  With the server: its functions, an inlined function and
# file:line are in the profile, also when the fetch lands after the program
# has exited (behind a proxy that answers late); with --no-debuginfod: not
# (the server is what names them); a server that is down: one warning, exit
# 0, the samples recorded; a bad --debuginfod: a usage error.  Needs root.
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
[ -n "${GO:-}" ] || GO=$(command -v go || true)
DPID=""  # the debuginfod server
PPID_="" # the slow proxy
trap 'for p in $DPID $PPID_; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
# libdebuginfod's cache: this test's own, empty
DEBUGINFOD_CACHE_PATH=$T/cache
export DEBUGINFOD_CACHE_PATH
unset DEBUGINFOD_URLS DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY

rec() { timeout -s KILL 60 "$CPROF" record "$@"; }
folded() { "$CPROF" query -t samples -f folded -i "$1"; }
exits0() {
	is "$rc" 0 "$1"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 15 | sed 's/^/#   stderr: /'
}
# free_port: a port nothing listens on now (the kernel's pick for port 0)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- the program, its debug file split off ----
mkdir -p "$T/bin" "$T/srv"
cc -O2 -g -fomit-frame-pointer -o "$T/bin/dbgd_qz" "$FIXTURES/record/dbgd.c" 2>"$T/cc.err" || sed 's/^/# /' "$T/cc.err"
ok "builds the program (cc -O2 -g)" test -x "$T/bin/dbgd_qz"
[ -x "$T/bin/dbgd_qz" ] || { done_testing; exit; }
ok "objcopy --only-keep-debug splits its debug file off" \
	objcopy --only-keep-debug "$T/bin/dbgd_qz" "$T/srv/dbgd_qz.debug"
ok "and strips the program" objcopy --strip-debug --strip-unneeded "$T/bin/dbgd_qz"
unlike "$(nm "$T/bin/dbgd_qz" 2>&1)" 'dbgd_outer_qz' "the stripped program has no symbol dbgd_outer_qz"
bid=$(readelf -n "$T/bin/dbgd_qz" | awk '/Build ID:/ { print $3 }')
like "$bid" '^[0-9a-f]{40}$' "it has a build id ($bid)"

# ---- the server: a free port (retried if taken meanwhile), ready when it serves the file ----
URL=""
for try in 1 2 3 4 5; do
	port=$(free_port)
	debuginfod -F -p "$port" -d "$T/db.sqlite" -t 0 -g 0 "$T/srv" >"$T/debuginfod.log" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 300 ] && kill -0 "$DPID" 2>/dev/null; do
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/buildid/$bid/debuginfo")
		[ "$code" = 200 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	if [ "$code" = 200 ]; then URL=http://127.0.0.1:$port; break; fi
	kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=""
done
ok "debuginfod serves the debug file by build id ($URL/buildid/$bid/debuginfo)" test -n "$URL"
[ -n "$URL" ] || { sed 's/^/# /' "$T/debuginfod.log" | tail -n 20; done_testing; exit; }

# named FILE WHAT INLINE: the program's samples in FILE are named: more than half under
# main;dbgd_outer_qz, the inlined dbgd_mix_qz its own frame, no address of the program inside a stack
named() {
	f=$(folded "$1")
	total=$(printf '%s\n' "$f" | sum .)
	outer=$(printf '%s\n' "$f" | sum ';main;dbgd_outer_qz(;|[ ])')
	inl=$(printf '%s\n' "$f" | sum ';main;dbgd_outer_qz;dbgd_mix_qz [0-9]+$')
	ok "$2 (main;dbgd_outer_qz: $outer of $total samples)" test "$outer" -gt $((total / 2))
	ok "$3 (dbgd_outer_qz;dbgd_mix_qz: $inl samples)" test "$inl" -gt 0
	unlike "$f" 'dbgd_qz\+0x[0-9a-f]+;' "no address of the program left inside a stack"
}

# ---- without the server's help: no names (what follows measures the server) ----
run env DEBUGINFOD_URLS="$URL" "$CPROF" record --no-debuginfod -F 499 -o "$T/none.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "record --no-debuginfod exits 0"
f=$(folded "$T/none.pb.gz")
ok "it has samples" test "$(printf '%s\n' "$f" | sum .)" -gt 0
unlike "$f" 'dbgd_outer_qz|dbgd_mix_qz' "and no names of the stripped program (it shows as dbgd_qz+0x...)"
like "$f" 'dbgd_qz\+0x' "its frames are addresses"
ok "nothing was fetched (the cache is empty)" test ! -e "$T/cache/$bid/debuginfo"

# ---- with $DEBUGINFOD_URLS: names, inline frames, lines ----
run env DEBUGINFOD_URLS="$URL" "$CPROF" record -F 499 -o "$T/srv.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "record with DEBUGINFOD_URLS exits 0"
unlike "$err" 'debuginfod' "no warning (libc's debug file is not on the server: that is no failure)"
named "$T/srv.pb.gz" "the stripped program's functions are named" "the inlined function is its own frame"
ok "the debug file is in the cache, by build id" test -s "$T/cache/$bid/debuginfo"
json=$("$CPROF" query -t samples -f json -i "$T/srv.pb.gz")
like "$json" '"name":"dbgd_mix_qz","file":"[^"]*dbgd\.c"' "functions have their source file"
if [ -z "$GO" ]; then
	ok "go is installed (apt-get install golang-go): lines are checked with go tool pprof" false
else
	run env HOME="$T" "$GO" tool pprof -lines -top "$T/srv.pb.gz"
	like "$out" ' dbgd_mix_qz .*dbgd\.c:[0-9]+( \(inline\))?$' "the inlined function has file:line (go tool pprof -lines)"
	like "$out" ' dbgd_outer_qz .*dbgd\.c:[0-9]+$' "and its caller too"
fi

# ---- a local debug file with compressed sections (as Debian's -dbg and dbgsym packages ship them) ----
# libdw would hold its sections uncompressed on the heap; cprof reads an uncompressed copy it keeps in
# its cache directory instead
d2=$(printf '%s' "$bid" | cut -c1-2) rest=$(printf '%s' "$bid" | cut -c3-)
mkdir -p "$T/dbg/.build-id/$d2" "$T/xdg"
chmod 700 "$T/xdg"
objcopy --compress-debug-sections=zlib "$T/srv/dbgd_qz.debug" "$T/dbg/.build-id/$d2/$rest.debug"
like "$(readelf -SW "$T/dbg/.build-id/$d2/$rest.debug" | grep ' .debug_info ')" ' C ' \
	"objcopy --compress-debug-sections compresses the debug file's .debug_info (flag C)"
copy=$T/xdg/cprof/debug-$bid.debug
run env XDG_CACHE_HOME="$T/xdg" "$CPROF" record --no-debuginfod --debuginfo-path "$T/dbg" -F 499 \
	-o "$T/z1.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "record with the compressed debug file in --debuginfo-path exits 0"
named "$T/z1.pb.gz" "the functions are named from it" "the inlined function is its own frame"
ok "an uncompressed copy is in the cache directory (debug-BUILDID.debug)" test -s "$copy"
unlike "$(readelf -SW "$copy" | grep ' .debug_')" ' C ' "with no section compressed"
ok "bigger than the compressed file" \
	test "$(wc -c <"$copy")" -gt "$(wc -c <"$T/dbg/.build-id/$d2/$rest.debug")"
ino=$(stat -c %i "$copy")
run env XDG_CACHE_HOME="$T/xdg" "$CPROF" record --no-debuginfod --debuginfo-path "$T/dbg" -F 499 \
	-o "$T/z2.pb.gz" -- "$T/bin/dbgd_qz" 1
named "$T/z2.pb.gz" "a second run: named (from the copy)" "and the inlined function"
is "$(stat -c %i "$copy")" "$ino" "the copy is reused, not written again"
printf 'damaged' >"$copy"
run env XDG_CACHE_HOME="$T/xdg" "$CPROF" record --no-debuginfod --debuginfo-path "$T/dbg" -F 499 \
	-o "$T/z3.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "a damaged copy: exit 0"
named "$T/z3.pb.gz" "still named" "and the inlined function"
ok "the copy is made again" test "$(wc -c <"$copy")" -gt 1000
chmod 755 "$T/xdg/cprof"
rm -f "$copy"
run env XDG_CACHE_HOME="$T/xdg" "$CPROF" record --no-debuginfod --debuginfo-path "$T/dbg" -F 499 \
	-o "$T/z4.pb.gz" -- "$T/bin/dbgd_qz" 1
named "$T/z4.pb.gz" "a cache directory others can read: named from the compressed file" "and the inlined function"
ok "and no copy is written there" test ! -e "$copy"

# ---- a fetch that lands after the program has exited: the end of the recording waits for it ----
# a proxy in front of the server answers each connection 2 s late: every
# sample of the 1 s program is taken before the file lands
cat >"$T/slow.py" <<'PY'
import socket, sys, threading, time
back, delay, portfile = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
open(portfile + ".tmp", "w").write(str(ls.getsockname()[1]))
import os; os.rename(portfile + ".tmp", portfile)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def serve(c):
    time.sleep(delay)
    s = socket.create_connection(("127.0.0.1", back))
    threading.Thread(target=pump, args=(c, s), daemon=True).start()
    pump(s, c)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$T/slow.py" "$port" 2 "$T/slow.port" &
PPID_=$!
i=0
while [ ! -s "$T/slow.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ok "the slow proxy listens" test -s "$T/slow.port"
rm -rf "$T/cache" # fetched again, late
run rec --debuginfod "http://127.0.0.1:$(cat "$T/slow.port")" -F 499 -o "$T/late.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "record --debuginfod URL (a server answering after the program's end) exits 0"
unlike "$err" 'lost' "no sample lost while the fetch was waiting"
named "$T/late.pb.gz" "the samples taken before the file landed are named" "with the inlined function"

# the same into the store (a profile per process, refreshed at each flush)
rm -rf "$T/cache"
run rec --debuginfod "http://127.0.0.1:$(cat "$T/slow.port")" --data "$T/store" -F 499 -- "$T/bin/dbgd_qz" 1
exits0 "record into the store, the server answering after the program's end: exit 0"
run "$CPROF" query -f folded --data "$T/store" 'cpu{comm="dbgd_qz"}'
total=$(printf '%s\n' "$out" | sum .)
outer=$(printf '%s\n' "$out" | sum ';main;dbgd_outer_qz(;|[ ])')
ok "the stored profile has the names ($outer of $total samples)" test "$outer" -gt $((total / 2))
kill "$PPID_" 2>/dev/null; wait "$PPID_" 2>/dev/null; PPID_=""

# ---- a server that is down: one warning, the samples recorded ----
rm -rf "$T/cache"
dead=$(free_port)
run rec --debuginfod "http://127.0.0.1:$dead" -F 499 -o "$T/down.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "a server that is down: exit 0"
is "$(printf '%s\n' "$err" | grep -c 'debuginfod')" 1 "one line about it"
like "$err" "^cprof record: debuginfod: cannot fetch debug info from http://127\.0\.0\.1:$dead: " "which says what failed"
f=$(folded "$T/down.pb.gz")
total=$(printf '%s\n' "$f" | sum .)
ok "the samples are recorded ($total)" test "$total" -gt 100
like "$err" "cprof record: $total samples in " "all of them"

# ---- a server that never answers: the end waits for the fetch's timeout (15 s), not longer ----
cat >"$T/mute.py" <<'PY'
import os, socket, sys
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(ls.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    held.append(ls.accept()[0])  # accepted, never answered
PY
python3 "$T/mute.py" "$T/mute.port" &
PPID_=$!
i=0
while [ ! -s "$T/mute.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rm -rf "$T/cache"
run rec --debuginfod "http://127.0.0.1:$(cat "$T/mute.port")" -F 499 -o "$T/mute.pb.gz" -- "$T/bin/dbgd_qz" 1
exits0 "a server that never answers: exit 0 (record ends: it was killed after 60 s otherwise)"
is "$(printf '%s\n' "$err" | grep -c 'debuginfod')" 1 "one line about it"
like "$err" "^cprof record: debuginfod: no answer from http://127\.0\.0\.1:[0-9]+ in 15 s" "which says it timed out"
secs=$(printf '%s\n' "$err" | sed -n 's/.* samples in \([0-9.]*\) s .*/\1/p')
ok "the summary gives the sampling time (${secs:-?} s), not the 15 s wait" awk "BEGIN { exit !(${secs:-99} < 14) }"
total=$(folded "$T/mute.pb.gz" | sum .)
ok "the samples are recorded ($total)" test "$total" -gt 100
kill "$PPID_" 2>/dev/null; wait "$PPID_" 2>/dev/null; PPID_=""

# ---- bad values ----
run "$CPROF" record --debuginfod "ftp://example.org" -o "$T/x.pb.gz" -- true
is "$rc" 2 "--debuginfod ftp://...: a usage error (exit 2)"
like "$err" "^cprof record: --debuginfod: debuginfod server 'ftp://example.org': want an http://, https:// or file:// URL$" \
	"which says what is wanted"
run "$CPROF" record --debuginfod "" -o "$T/x.pb.gz" -- true
is "$rc" 2 "--debuginfod '': a usage error"
run "$CPROF" record --debuginfod "http://" -o "$T/x.pb.gz" -- true
is "$rc" 2 "--debuginfod http:// (no host): a usage error"
run "$CPROF" top --debuginfod "nope" --stdio -n 1 -- true
is "$rc" 2 "top --debuginfod nope: a usage error"
like "$err" "^cprof top: --debuginfod: debuginfod server 'nope'" "from top too"
run env DEBUGINFOD_URLS="not a url" "$CPROF" record -F 99 -o "$T/env.pb.gz" -- "$T/bin/dbgd_qz" 0.2
exits0 "a bad \$DEBUGINFOD_URLS is ignored, with a warning"
like "$err" "ignoring \\\$DEBUGINFOD_URLS: debuginfod server 'not'" "which names it"

# ---- top names the program from the server too ----
rm -rf "$T/cache"
run env DEBUGINFOD_URLS="$URL" timeout -s KILL 60 "$CPROF" top --stdio -n 3 -d 1 -F 499 -- "$T/bin/dbgd_qz" 3
exits0 "top --stdio with DEBUGINFOD_URLS exits 0"
like "$out" 'dbgd_mix_qz|dbgd_outer_qz' "and shows the program's functions"

done_testing
