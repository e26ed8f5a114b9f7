#!/bin/sh
# The shape of the tree (docs/ARCHITECTURE.md): lib/ modules include each other without cycles and never
# include cmd/; every lib header opens with the comment that says what it owns and how it fails; each
# cmd/*.c stays a thin command (options -> library calls -> output), at most 600 lines.
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
done_testing
