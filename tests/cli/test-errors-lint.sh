#!/bin/sh
# lib/ records why it fails (lib/error.h): every `return -E...;` in lib/ goes
# through cp_error() ("return cp_error(EINVAL, "what failed");") so that the
# message printed is the one of this failure.  The few bare ones left are listed
# below with the reason; a new bare return fails this test until it records a
# message or is listed here with its reason.
. "$srcdir/tests/cli/lib.sh"

LIB=$(cd "$srcdir/lib" && pwd)

# FILE FUNCTION: why the bare return is right there
ALLOW='
sampling/proc.c cp_parse_maps_line            a malformed /proc maps line: the callers skip it (fuzzed, per line)
sampling/proc.c cp_proc_refresh               a status (ENOENT no such mapping, EAGAIN re-read too recent) the sampling path ignores
sampling/symbolize.c cp_symbolize_mapping     ENOENT: the address has no mapping, a status for the sampling path
sampling/sampler.c on_sample                  ECANCELED is no failure: it stops ring_buffer__poll after a bounded batch
sampling/scopes.c walk                        an inner step of cp_scopes_build, which sets errno ENOMEM for its caller
decode_limits.c cp_inflate_reserve   EBUSY: its caller cp_gunzip_limited records the message with the limit
ingest/pyroscope.c cp_pyro_label_name EINVAL: its caller records "bad label name" with the name
regex.c cp_regex_compile             EINVAL: why and offset go to the caller, which records the message
http/server.c split_listen           EINVAL: its callers record "--listen ADDR: give HOST:PORT..."
'

# bare FILE...: "path:line:function:text" for each bare return -E
bare() {
	awk '
	FNR == 1 { fn = "" }
	/^[a-zA-Z_].*[a-zA-Z0-9_]+\(/ && !/;[ \t]*$/ {
		s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ \t*]+/); fn = w[n]
	}
	/return -E[A-Z0-9_]+;/ { t = $0; sub(/^[ \t]+/, "", t); print FILENAME ":" FNR ":" fn ":" t }
	' "$@"
}

# every C file of lib/
files=$(cd "$LIB" && find . -name '*.c' | sed 's|^\./||' | sort)
ok "lib/ has C files to check" test -n "$files"

found=$(cd "$LIB" && bare $files)
left=$(printf '%s\n' "$found" | while IFS=: read -r f l fn rest; do
	[ -n "$f" ] || continue
	if printf '%s\n' "$ALLOW" | awk -v f="$f" -v fn="$fn" '$1 == f && $2 == fn { found = 1 } END { exit !found }'; then
		continue
	fi
	printf 'lib/%s:%s: in %s: %s\n' "$f" "$l" "$fn" "$rest"
done)
if [ -n "$left" ]; then
	printf '%s\n' "$left" | sed 's/^/# /'
	diag "record a message: return cp_error(E..., \"what failed\"), or list the function in ALLOW with why"
fi
is "$left" "" "no bare return -E in lib/ outside the allowlist"

# each listed function still has a bare return (a stale entry would hide a new one)
stale=$(printf '%s\n' "$ALLOW" | while read -r f fn why; do
	[ -n "$f" ] || continue
	printf '%s\n' "$found" | grep -q "^$f:[0-9]*:$fn:" || echo "$f $fn"
done)
is "$stale" "" "every allowlist entry still has a bare return"

# the check itself sees a bare return, and its function
printf 'static int helper(int x)\n{\n\tif (x)\n\t\treturn -EINVAL;\n\treturn cp_error(EIO, "io");\n}\n' >"$T/t.c"
is "$(cd "$T" && bare t.c)" "t.c:4:helper:return -EINVAL;" "the check finds a bare return and names its function"

done_testing
