# cprof diff: table, normalisation, differential flame graph, folded, pprof.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
b="$FIXTURES/cpu-before.pb.gz"   # weights alpha 3, beta 2, gamma 1
a="$FIXTURES/cpu-after.pb.gz"    # weights alpha 1, beta 2, gamma 3

run "$CPROF" diff --no-significance "$b" "$a"
is "$rc" 0 "diff exits 0"
like "$out" '^Before: [0-9.]+s total +After: [0-9.]+s total' "the header has both totals"
like "$out" 'before +after +delta +delta% +norm\.delta +norm%' "the column header"
rows=$(printf '%s\n' "$out" | awk '/norm%/ {f=1; next} f')
top2=$(printf '%s\n' "$rows" | head -n 2 | awk '{print $NF}' | sort | tr '\n' ' ')
is "$top2" "main.alpha main.gamma " "the largest changes first: alpha and gamma"
gamma=$(printf '%s\n' "$rows" | awk '$NF == "main.gamma"')
alpha=$(printf '%s\n' "$rows" | awk '$NF == "main.alpha"')
like "$gamma" '^ +[0-9.]+s +[0-9.]+s +[0-9.]+s +\+[0-9.]+% ' "main.gamma grew"
like "$alpha" '^ +[0-9.]+s +[0-9.]+s +-[0-9.]+s +-[0-9.]+% ' "main.alpha shrank"
# the numbers: before/after equal the flat values query reports
bg=$("$CPROF" query -i "$b" -f json | jq '[.top[] | select(.name == "main.gamma")][0].flat')
ag=$("$CPROF" query -i "$a" -f json | jq '[.top[] | select(.name == "main.gamma")][0].flat')
run "$CPROF" diff --no-significance -f json "$b" "$a"
is "$(printf '%s' "$out" | jq '[.rows[] | select(.name == "main.gamma")][0] | [.before, .after, .delta] | join(" ")' -r)" \
	"$bg $ag $((ag - bg))" "json rows: before, after and delta of main.gamma"
is "$(printf '%s' "$out" | jq '.rows | map(.delta | fabs) | . == (sort | reverse)')" true "json rows sorted by |delta|"
run "$CPROF" diff -n 1 "$b" "$a"
like "$out" 'Showing top 1 functions out of' "--limit"

# normalisation: profiles of different length compare by share
run "$CPROF" diff --normalize "$FIXTURES/cpu-short.pb.gz" "$a"
like "$out" 'Sorted by \|norm\.delta\|' "--normalize sorts by the normalised delta"
run "$CPROF" diff -f json "$b" "$b"
is "$(printf '%s' "$out" | jq '[.rows[].delta] | map(select(. != 0)) | length')" 0 "a profile against itself: no change"

# differential flame graph
run "$CPROF" diff -f flamegraph -o "$T/d.svg" "$b" "$a"
is "$rc" 0 "diff flamegraph exits 0"
svg=$(cat "$T/d.svg")
like "$svg" '>Differential Flame Graph<' "titled as a differential flame graph"
g=$(grep -A2 '<title>main\.gamma ' "$T/d.svg" | grep -o 'fill="rgb([0-9]*,[0-9]*,[0-9]*)"' | head -n 1)
al=$(grep -A2 '<title>main\.alpha ' "$T/d.svg" | grep -o 'fill="rgb([0-9]*,[0-9]*,[0-9]*)"' | head -n 1)
red() { echo "$1" | sed 's/.*(\([0-9]*\),\([0-9]*\),\([0-9]*\)).*/\1 \3/'; }
set -- $(red "$g")
ok "main.gamma (grew) is red: $g" test "${1:-0}" -gt "${2:-0}"
set -- $(red "$al")
ok "main.alpha (shrank) is blue: $al" test "${2:-0}" -gt "${1:-0}"

# difffolded
run "$CPROF" diff -f folded "$b" "$a"
like "$out" '^runtime\.main;main\.main;main\.work;main\.alpha [0-9]+ [0-9]+$' "folded: stack before after"

# pprof diff profile: go tool pprof shows after - before, like -diff_base
run "$CPROF" diff --no-significance -f pprof -o "$T/d.pb.gz" "$b" "$a"
is "$rc" 0 "diff -f pprof exits 0"
if [ -n "$GO" ]; then
	mine=$(HOME=$T "$GO" tool pprof -top -nodefraction=0 "$T/d.pb.gz" 2>/dev/null | grep -v '^Time:')
	ref=$(HOME=$T "$GO" tool pprof -top -nodefraction=0 -diff_base "$b" "$a" 2>/dev/null | grep -v '^Time:')
	is "$mine" "$ref" "go tool pprof shows the same as go tool pprof -diff_base"
else
	ok "go tool pprof is installed (apt-get install golang-go)" false
fi

# errors
run "$CPROF" diff "$b"
is "$rc" 2 "one profile is a usage error"
like "$err" 'give two profiles: BEFORE AFTER' "and says what to give"
run "$CPROF" diff -f pprof "$b" "$FIXTURES/heap.pb.gz" -o "$T/x.pb.gz"
is "$rc" 1 "a pprof diff of CPU and heap fails"
like "$err" "^cprof diff: .*cpu-before\.pb\.gz: no sample type 'inuse_space' in this profile" "and says which profile lacks which type"
ok "and writes nothing" test ! -e "$T/x.pb.gz"
run "$CPROF" diff -t alloc_space "$b" "$a"
is "$rc" 1 "a sample type the profiles lack fails"
done_testing
