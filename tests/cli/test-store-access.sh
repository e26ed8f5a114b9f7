# Who may read a store, and a store made on a full disk (#47 item 7): another user reads a store it may
# not write (at rest, and while a server writes it); a store whose making a full disk cut short says
# so in one line, and writing to it again finishes it.  Needs root (another user, a small tmpfs).
. "$srcdir/tests/cli/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root: it reads a store as another user and mounts a small tmpfs"
command -v setpriv >/dev/null || skip_all "setpriv is not installed (util-linux)"
command -v unshare >/dev/null || skip_all "unshare is not installed (util-linux)"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
chmod 755 "$T" # another user reads the stores in it
cp "$CPROF" "$T/cprof" # and runs the binary from where it may
SPID=
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$T/cprof" "$@"; }
from=2026-11-22T00:00:00Z # the fixture's day (the query names it: no "now" against a committed file)

# ---- another user reads a store at rest ----
"$CPROF" import --data "$T/rest" "$FIXTURES/cpu-before.pb.gz" >/dev/null
want=$("$CPROF" query --data "$T/rest" process_cpu --from "$from" -f json | sed -n 's/.*"total": *\([0-9]*\).*/\1/p' | head -n 1)
run as_nobody query --data "$T/rest" process_cpu --from "$from" -f json
is "$rc" 0 "another user reads a store at rest that it may not write: exit 0"
unlike "$err" 'readonly|read-only' "without a read-only error"
like "$out" "\"total\": *$want[,}]" "and gets the same total ($want)"
ok "it wrote nothing there (no -wal or -shm file of its own)" test ! -e "$T/rest/store.db-wal"

# ---- and while a server writes it ----
serve_start serve --listen 127.0.0.1:0 --data "$T/live"
ok "cprof serve started" test -n "$URL"
http POST "/api/v1/push?name=live&time=1700000000" --data-binary @"$FIXTURES/cpu-before.pb.gz"
is "$code" 200 "a push to the server"
run as_nobody query --data "$T/live" --types
is "$rc" 0 "another user reads the store the server writes: exit 0"
like "$out" '^live:' "and sees what it stored"

# ---- a full disk while the store is made ----
mkdir "$T/mnt"
run unshare -m sh -c 'exec 2>&1; mount -t tmpfs -o size=256k tiny "$1" && dd if=/dev/zero of="$1/fill" bs=1k count=240 2>/dev/null
	"$2" import --data "$1/s" "$3"; echo "rc=$?"; rm -f "$1/fill"
	"$2" query --data "$1/s" --types; echo "rc=$?"
	"$2" import --data "$1/s" "$3" >/dev/null; echo "rc=$?"
	"$2" query --data "$1/s" --types; echo "rc=$?"' _ "$T/mnt" "$CPROF" "$FIXTURES/cpu-before.pb.gz"
like "$out" 'cprof import: .*no space left on device' "an import that makes a store on a full disk says the disk is full"
like "$out" '^rc=1$' "and exits 1"
like "$out" 'cprof query: [^ ]*: the store was never finished \(was the disk full when it was made\?\)' \
	"reading it says it was never finished"
is "$(printf '%s\n' "$out" | grep -c 'schema version')" 0 "not that it is another version's store"
like "$(printf '%s\n' "$out" | sed -n '/never finished/,$p' | tr '\n' ' ')" 'rc=1 rc=0 process_cpu:[^ ]* .*rc=0 $' \
	"once there is room, an import finishes it and it reads"
done_testing
