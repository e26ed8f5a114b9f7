#!/bin/sh
# The shape of the tree (docs/ARCHITECTURE.md): lib/ modules include each other without cycles and never
# include cmd/; every lib header opens with the comment that says what it owns and how it fails; each
# cmd/*.c stays a thin command (options -> library calls -> output), at most 600 lines; and each seam
# that grows (runtimes, output formats, push protocols, ingest protocols, store backends) has one
# registration point, its members' code in their own files, and no member named by code outside them.
. "$srcdir/tests/cli/lib.sh"

cd "$srcdir" || exit 1

# module = a path without .c/.h; an edge A -> B when A's .c or .h includes B's header
run python3 - <<'PY'
import os, re, sys
edges = {}
for root, _, files in os.walk("lib"):
    for f in files:
        if not f.endswith((".c", ".h")):
            continue
        path = os.path.join(root, f)
        a = os.path.splitext(path)[0]
        for inc in re.findall(r'^#include "([^"]+)"', open(path, encoding="utf-8").read(), re.M):
            for base in (root, "lib"):
                t = os.path.normpath(os.path.join(base, inc))
                if os.path.exists(t):
                    b = os.path.splitext(t)[0]
                    if b != a:
                        edges.setdefault(a, set()).add(b)
                    break
# a cycle: depth-first search with colours, printing the first one found
state, stack = {}, []
def visit(v):
    state[v] = 1
    stack.append(v)
    for w in sorted(edges.get(v, ())):
        if state.get(w) == 1:
            print(" -> ".join(stack[stack.index(w):] + [w]))
            sys.exit(1)
        if w not in state:
            visit(w)
    stack.pop()
    state[v] = 2
for v in sorted(edges):
    if v not in state:
        visit(v)
print(len(edges), "modules")
PY
is "$rc" 0 "no include cycle between lib modules"
[ "$rc" = 0 ] || diag "cycle: $out"
like "$out" '^[1-9][0-9]+ modules$' "the include graph has the lib modules in it"

run grep -rlE '#include "(\.\./)+cmd/' lib
is "$out" "" "lib/ never includes cmd/"

bare=
for h in $(find lib -name '*.h' ! -name '*.pb-c.h' | sort); do
	# the first lines after the SPDX tag are a comment of at least two lines
	n=$(sed -n '2,12p' "$h" | awk '/^\/\*/ {c = 1} c && /^( \*|\/\*)/ {n++} /\*\// {exit} END {print n + 0}')
	[ "$n" -ge 2 ] || bare="$bare $h"
done
is "$bare" "" "every lib header opens with the comment of what it owns and how it fails"

long=
for c in cmd/*.c; do
	[ "$(wc -l <"$c")" -le 600 ] || long="$long $c($(wc -l <"$c"))"
done
is "$long" "" "no cmd/*.c over 600 lines"
# ---- the seams: one registration point each (docs/ARCHITECTURE.md, "Adding a ...") ----

# runtimes: bpf/runtimes.h's list; each listed runtime has its files, and only they name it
# (CP_RUNTIMES: those with a walker; CP_RUNTIMES_NATIVE: those named from the native stack, user side only)
list=$(sed -n 's/^[[:space:]]*X([0-9]*, *\([a-z0-9_]*\)).*/\1/p' bpf/runtimes.h)
walkers=$(sed -n '/^#define CP_RUNTIMES(X)/,/^$/s/^[[:space:]]*X([0-9]*, *\([a-z0-9_]*\)).*/\1/p' bpf/runtimes.h)
like "$walkers" '^python' "bpf/runtimes.h lists the runtimes (python first)"
missing=
for rt in $list; do
	grep -rqs "^const struct cp_runtime cp_runtime_$rt = " "lib/sampling/runtimes/$rt/" || missing="$missing lib/sampling/runtimes/$rt/(cp_runtime_$rt)"
done
for rt in $walkers; do
	for f in "bpf/runtimes/$rt.h" "bpf/runtimes/$rt.bpf.h"; do
		[ -f "$f" ] || missing="$missing $f"
	done
	grep -q "^#include \"runtimes/$rt.bpf.h\"" bpf/runtimes.h || missing="$missing bpf/runtimes.h(#include runtimes/$rt.bpf.h)"
done
is "$missing" "" "each listed runtime has its walker, its data and its row"
unlisted=
for d in lib/sampling/runtimes/*/; do
	rt=$(basename "$d")
	printf '%s\n' $list | grep -qx "$rt" || unlisted="$unlisted $rt"
done
is "$unlisted" "" "each runtime's folder is in the list"
names=$(printf '%s|' $list)
run sh -c "grep -rlE 'runtimes/(${names%|})/|cp_runtime_(${names%|})\\b|cp_python_|struct cp_py_|cp_v8_' lib cmd --include=*.c --include=*.h |
	grep -v '^lib/sampling/runtimes/' | sort"
is "$out" "" "no code outside a runtime's folder names it (the recorder goes through lib/sampling/runtime.h)"
run sh -c 'sed "s#/\*.*\*/##" bpf/sampler.bpf.c | grep -nE "cp_py_|py_walk|python_frames"'
is "$out" "" "nor does the BPF program outside its walker"

# output formats: lib/render/format.c's table; commands, server and completions take their lists from it
run sh -c 'grep -rln "cp_render_formats\[\] = " lib cmd'
is "$out" "lib/render/format.c" "one table of output formats"
run sh -c 'grep -nE "strcmp\([a-z.>-]*format, \"pprof\"\)" cmd/*.c | grep -v "write_pprof" | grep -vE "^cmd/(record|scrape|top)\.c"'
is "$out" "" "commands ask the table whether a format is binary (no name compared)"
run grep -nE "flamegraph|folded" completions/cprof.bash
is "$out" "" "completions list no format (they ask cprof --list-formats)"

# push protocols: lib/push/protocol.c's table
run sh -c 'grep -rln "cp_push_protocols\[\] = " lib cmd'
is "$out" "lib/push/protocol.c" "one table of push protocols"
run sh -c 'grep -rnE "strcmp\([^)]*\"pyroscope\"" lib cmd | grep -v "^lib/push/"'
is "$out" "" "no code outside lib/push/ picks a push protocol by name"

# ingest protocols: lib/ingest/protocol.c's table; the HTTP side serves every row alike
run sh -c 'grep -rln "cp_ingest_protocols\[\] = " lib cmd'
is "$out" "lib/ingest/protocol.c" "one table of ingest protocols"
run sh -c 'grep -nE "cp_(pyro|parca)_|cp_ingest_(cprof|pyroscope|parca)\\b" lib/http/*.c cmd/*.c'
is "$out" "" "the server names no ingest protocol's decoder (lib/http/ takes them from the table)"

# store backends: lib/store/backends.c's table; everything outside lib/store/ opens a store by URI
run sh -c 'grep -rln "cp_store_backends\[\] = " lib cmd'
is "$out" "lib/store/backends.c" "one table of store backends"
run sh -c 'grep -rnE "cp_store_open(_remote)?\(" lib cmd --include=*.c | grep -v "^lib/store/"'
is "$out" "" "outside lib/store/ a store is opened by URI (cp_store_open_uri), not by backend"

done_testing
