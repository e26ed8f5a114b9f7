# cprof merge against go tool pprof -proto, on committed fixtures and on
# profiles a real Go program writes during the test.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
if [ -z "$GO" ]; then
	ok "go is installed (apt-get install golang-go): merge is checked against go tool pprof" false
	done_testing; exit
fi
pprof_top() { HOME=$T "$GO" tool pprof -top -nodefraction=0 -nodecount=100000 "$@" 2>/dev/null | grep -v '^Time:'; }

# fresh profiles from the burn program
run sh "$FIXTURES/make-fixtures.sh" "$T/fresh"
is "$rc" 0 "the Go burn program writes fresh profiles"
[ "$rc" = 0 ] || printf '%s\n' "$err" | sed 's/^/# /'

for set in fixtures fresh; do
	if [ $set = fixtures ]; then d=$FIXTURES; else d=$T/fresh; fi
	run "$CPROF" merge "$d/cpu-before.pb.gz" "$d/cpu-after.pb.gz" "$d/cpu-short.pb.gz" -o "$T/$set.pb.gz"
	is "$rc" 0 "$set: merge of three CPU profiles exits 0"
	HOME=$T "$GO" tool pprof -proto "$d/cpu-before.pb.gz" "$d/cpu-after.pb.gz" "$d/cpu-short.pb.gz" \
		> "$T/$set-ref.pb.gz" 2>/dev/null
	mine=$(pprof_top "$T/$set.pb.gz")
	ref=$(pprof_top "$T/$set-ref.pb.gz")
	like "$mine" 'Total samples' "$set: go tool pprof reads the merged profile"
	is "$(printf '%s\n' "$mine" | grep 'Total samples')" "$(printf '%s\n' "$ref" | grep 'Total samples')" \
		"$set: same duration and total as go tool pprof -proto"
	is "$mine" "$ref" "$set: every function's flat and cum as go tool pprof -proto"
	# the merged total is the sum of the inputs
	t=0
	for f in cpu-before cpu-after cpu-short; do
		t=$((t + $("$CPROF" query -i "$d/$f.pb.gz" -f json | jq .total)))
	done
	is "$("$CPROF" query -i "$T/$set.pb.gz" -f json | jq .total)" "$t" "$set: merged total = sum of the inputs"
done

# ids 1..N, dedup: merging a profile with itself doubles values, keeps tables
"$CPROF" merge "$FIXTURES/cpu-before.pb.gz" "$FIXTURES/cpu-before.pb.gz" -o "$T/twice.pb.gz"
one=$("$CPROF" query -i "$FIXTURES/cpu-before.pb.gz" -f json | jq .total)
is "$("$CPROF" query -i "$T/twice.pb.gz" -f json | jq .total)" "$((one * 2))" "a profile merged with itself doubles"
is "$(HOME=$T "$GO" tool pprof -raw "$T/twice.pb.gz" 2>/dev/null | grep -c '^ *[0-9]*: ')" \
	"$(HOME=$T "$GO" tool pprof -raw "$FIXTURES/cpu-before.pb.gz" 2>/dev/null | grep -c '^ *[0-9]*: ')" \
	"and has no more locations than the original (deduplicated)"

# heap profiles merge too; formats
run "$CPROF" merge "$FIXTURES/heap.pb.gz" "$FIXTURES/heap.pb.gz" -f top -t alloc_space
like "$out" '8MB .*main\.allocBig' "heap merge: values add (2 x 4MB)"
run "$CPROF" merge "$FIXTURES/cpu-before.pb.gz" "$FIXTURES/cpu-after.pb.gz" -f folded
like "$out" '^runtime\.main;main\.main;main\.work;main\.viaDelta;main\.gamma [0-9]+$' "merge -f folded"

# folded inputs merge with folded inputs
printf 'a;b 2\na;c 3\n' > "$T/x.folded"
printf 'a;b 5\n' > "$T/y.folded"
run "$CPROF" merge -f folded "$T/x.folded" "$T/y.folded"
is "$out" "$(printf 'a;b 7\na;c 3')" "folded profiles merge by stack"

# errors
run "$CPROF" merge "$FIXTURES/cpu-before.pb.gz" "$FIXTURES/heap.pb.gz" -o "$T/bad.pb.gz"
is "$rc" 1 "merging CPU with heap fails"
like "$err" "^cprof merge: cannot merge .*heap\.pb\.gz with .*cpu-before\.pb\.gz: incompatible period types cpu/nanoseconds and space/bytes$" \
	"and names the difference"
ok "nothing is written on failure" test ! -e "$T/bad.pb.gz"
run "$CPROF" merge
is "$rc" 2 "merge without files is a usage error"
run "$CPROF" merge "$FIXTURES/cpu-before.pb.gz" -f png
is "$rc" 2 "merge with an unknown format is a usage error"
done_testing
