# cprof query on real Go profiles: every format, filters, sample types, bad input.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
before="$FIXTURES/cpu-before.pb.gz"
heap="$FIXTURES/heap.pb.gz"

# top: the same figures as go tool pprof -top
run "$CPROF" query -i "$before"
is "$rc" 0 "query exits 0"
like "$out" '^Type: cpu$' "the type line"
like "$out" '^ +flat +flat% +sum% +cum +cum%$' "pprof's column header"
first=$(printf '%s\n' "$out" | awk '/flat%/ {getline; print $NF; exit}')
is "$first" "main.alpha" "the hottest function first (weights 3:2:1)"
if [ -n "$GO" ]; then
	ref=$(HOME=$T "$GO" tool pprof -top -nodefraction=0 -nodecount=1000 "$before" 2>/dev/null)
	for fn in main.alpha main.beta main.gamma; do
		mine=$(printf '%s\n' "$out" | awk -v f="$fn" '$NF == f {print $1, $2, $4, $5}')
		theirs=$(printf '%s\n' "$ref" | awk -v f="$fn" '$NF == f {print $1, $2, $4, $5}')
		is "$mine" "$theirs" "$fn: flat, flat%, cum, cum% as go tool pprof prints them"
	done
	is "$(printf '%s\n' "$out" | grep -o 'of [^ ]* total')" "$(printf '%s\n' "$ref" | grep -o 'of [^ ]* total')" \
		"the same total as go tool pprof"
else
	ok "go tool pprof is installed (apt-get install golang-go)" false
fi
pct=$(printf '%s\n' "$out" | awk '$NF == "main.alpha" {sub("%", "", $2); print int($2)}')
ok "main.alpha has about half of the CPU ($pct%)" test "$pct" -ge 40 -a "$pct" -le 60

run "$CPROF" query -i "$before" -n 2
like "$out" '^Showing top 2 nodes out of [0-9]+$' "--limit caps the rows"
is "$(printf '%s\n' "$out" | awk '/flat%/ {f=1; next} f' | wc -l | tr -d ' ')" 2 "--limit 2 prints two rows"

# sample types
run "$CPROF" query -i "$heap" -t alloc_space -n 5
like "$out" 'Type: alloc_space' "-t picks a sample type by name"
like "$out" 'main\.allocBig' "heap: main.allocBig shows up"
like "$out" '4MB .*main\.allocBig' "heap: main.allocBig allocated 4MB"
run "$CPROF" query -i "$heap" -t inuse_space/bytes -n 3
like "$out" 'Type: inuse_space' "-t accepts type/unit"
run "$CPROF" query -i "$before" -t 0 -n 1
like "$out" 'Type: samples' "-t accepts an index"
run "$CPROF" query -i "$before" -t wall
is "$rc" 1 "an unknown sample type fails"
like "$err" "no sample type 'wall' in this profile \(it has: samples, cpu\)" "and lists the types there are"

# folded
run "$CPROF" query -i "$before" -f folded
is "$rc" 0 "folded exits 0"
like "$out" '^runtime\.main;main\.main;main\.work;main\.alpha [0-9]+$' "folded: root first, a count last"
sum=$(printf '%s\n' "$out" | awk '{s += $NF} END {print s}')
is "$sum" "$(printf '%s\n' "$out" | awk '{s += $NF} END {print s}')" "folded counts are integers"
total=$("$CPROF" query -i "$before" -f json | jq .total)
is "$sum" "$total" "folded values sum to the profile's total"
"$CPROF" query -i "$before" -f folded > "$T/a.folded"
run "$CPROF" query -i "$T/a.folded" -f folded
is "$out" "$(cat "$T/a.folded")" "folded text reads back to the same stacks"
run "$CPROF" query -i "$before" -f folded --invert
like "$out" '^main\.alpha;main\.work;main\.main;runtime\.main [0-9]+$' "--invert puts the leaf first"

# filters
run "$CPROF" query -i "$before" -f folded --focus 'main\.gamma'
unlike "$out" 'main\.alpha' "--focus drops stacks without a match"
like "$out" 'main\.viaDelta;main\.gamma' "--focus keeps the whole matching stack"
run "$CPROF" query -i "$before" -f folded --ignore 'alpha|beta'
unlike "$out" 'main\.(alpha|beta)' "--ignore drops matching stacks"
like "$out" 'main\.gamma' "--ignore keeps the rest"
# --focus shows shares of the whole profile, as go tool pprof -focus does (not rescaled to 100%)
run "$CPROF" query -i "$before" --focus 'main\.alpha'
like "$out" '^Active filters:$' "--focus: pprof's 'Active filters:' line"
like "$out" '^   focus=main\\.alpha$' "naming the filter"
if [ -n "$GO" ]; then
	ref=$(HOME=$T "$GO" tool pprof -top -nodefraction=0 -nodecount=1000 -focus='main\.alpha' "$before" 2>/dev/null)
	is "$(printf '%s\n' "$out" | grep '^Showing nodes accounting for')" \
		"$(printf '%s\n' "$ref" | grep '^Showing nodes accounting for')" \
		"--focus: 'Showing nodes accounting for X, P% of the whole total', as go tool pprof -focus prints it"
	mine=$(printf '%s\n' "$out" | awk '$NF == "main.alpha" {print $1, $2, $4, $5}')
	theirs=$(printf '%s\n' "$ref" | awk '$NF == "main.alpha" {print $1, $2, $4, $5}')
	is "$mine" "$theirs" "--focus: main.alpha's flat, flat%, cum, cum% as go tool pprof -focus prints them"
fi
run "$CPROF" query -i "$before" --focus '('
is "$rc" 2 "a bad regex is a usage error"
like "$err" "^cprof query: bad --focus regex '\(' at offset 1" "the error names the regex and the offset"

# json
run "$CPROF" query -i "$before" -f json
is "$(printf '%s' "$out" | jq -r .type)" cpu "json: type"
is "$(printf '%s' "$out" | jq -r .unit)" nanoseconds "json: unit"
is "$(printf '%s' "$out" | jq -r '.top[0].name')" main.alpha "json: top rows sorted by flat"
is "$(printf '%s' "$out" | jq -r '.tree.children[0].name')" runtime.main "json: the tree starts at the root function"
is "$(printf '%s' "$out" | jq '.tree.value == .total')" true "json: the root holds the total"

# flame graph
run "$CPROF" query -i "$before" -f flamegraph --title 'burn CPU' -o "$T/f.svg"
is "$rc" 0 "flamegraph exits 0"
svg=$(cat "$T/f.svg")
like "$svg" '^<\?xml' "the SVG starts with an XML declaration"
like "$svg" '<title>main\.alpha \(1\.01s, 49\.51%\)' "frames carry name, value and percent"
like "$svg" '>burn CPU<' "the title is used"
like "$svg" '<script' "the SVG is interactive"
unlike "$svg" '(href|src)=|url\(http' "and self-contained (no external resources)"
if command -v xmllint >/dev/null; then ok "the SVG is well-formed XML" xmllint --noout "$T/f.svg"; fi

# pprof out: go tool pprof reads it and shows the same total
run "$CPROF" query -i "$before" -f pprof -o "$T/out.pb.gz"
is "$rc" 0 "pprof output exits 0"
if [ -n "$GO" ]; then
	a=$(HOME=$T "$GO" tool pprof -top "$T/out.pb.gz" 2>/dev/null | grep 'Total samples')
	b=$(HOME=$T "$GO" tool pprof -top "$before" 2>/dev/null | grep 'Total samples')
	is "$a" "$b" "go tool pprof reads our pprof output with the same totals"
fi

# bad input: a clear one-line error, exit 1, never a crash
printf 'garbage\001\002\003' > "$T/garbage"
run "$CPROF" query -i "$T/garbage"
is "$rc" 1 "garbage fails with 1"
like "$err" "^cprof query: $T/garbage: not a pprof profile" "garbage: the error names the file and the problem"
is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 1 "garbage: one line"
head -c 600 "$before" > "$T/trunc.pb.gz"
run "$CPROF" query -i "$T/trunc.pb.gz"
is "$rc" 1 "a truncated gzip fails with 1"
like "$err" "truncated gzip data" "and says it is truncated"
: > "$T/empty"
run "$CPROF" query -i "$T/empty"
like "$err" "empty profile" "an empty file is named empty"
run "$CPROF" query -i "$T/nope.pb.gz"
is "$rc" 1 "a missing file fails with 1"
like "$err" "cannot open $T/nope.pb.gz: No such file or directory" "and says so"
run "$CPROF" query -i "$T"
like "$err" "is a directory" "a directory is refused"
printf 'a;b 1\nno count here\n' > "$T/bad.folded"
run "$CPROF" query -i "$T/bad.folded"
like "$err" "line 2: expected" "bad folded text names the line"
# a type's name that is also a file in the working directory (a program built as ./cpu)
mkdir "$T/wd" && : > "$T/wd/cpu"
run sh -c 'cd "$1" && "$2" query --data "$1/nostore" cpu' _ "$T/wd" "$CPROF"
is "$rc" 2 "a selector that is also a file here is a usage error"
like "$err" "^cprof query: 'cpu' is a file here: read files with -i FILE, or write the stored type as 'cpu\{\}'" \
	"which says how to mean the type"
run sh -c 'cd "$1" && "$2" query --data "$1/nostore" "cpu{}"' _ "$T/wd" "$CPROF"
like "$err" "no store at" "and cpu{} is taken as the selector"
run "$CPROF" query --data "$T/nostore"
is "$rc" 1 "no -i and no store fails"
like "$err" "no store at $T/nostore: import or record profiles first" "and says what to do"
run "$CPROF" query -i "$before" -f svg
is "$rc" 2 "an unknown format is a usage error"
like "$err" "unknown format 'svg'" "and names it"
run "$CPROF" query -i "$before" -n lots
is "$rc" 2 "a bad --limit is a usage error"

# -o never leaves half a file
run "$CPROF" query -i "$before" -o "$T/no/such/dir/out.txt"
is "$rc" 1 "-o into a missing directory fails"
like "$err" "cannot create $T/no/such/dir/out.txt" "and names the file"
echo keep > "$T/keep.txt"
run "$CPROF" query -i "$T/garbage" -o "$T/keep.txt"
is "$(cat "$T/keep.txt")" keep "a failed query leaves an existing -o file alone"
is "$(ls "$T" | grep -c tmp)" 0 "no temporary files are left behind"

# -o onto what is not a regular file writes through it and never replaces it (as root, -o /dev/full once
# renamed a file over the device): a FIFO with a reader, then a symbolic link to a file
mkfifo "$T/fifo"
cat "$T/fifo" > "$T/from-fifo" &
reader=$!
run "$CPROF" query -i "$before" -f folded -o "$T/fifo"
is "$rc" 0 "-o onto a FIFO succeeds"
ok "the FIFO is still a FIFO" test -p "$T/fifo"
[ -p "$T/fifo" ] || kill "$reader" 2>/dev/null # the reader waits for a writer that never comes
wait "$reader" 2>/dev/null
like "$(cat "$T/from-fifo")" 'main\.alpha' "the reader of the FIFO got the folded stacks"
mkdir "$T/real"
echo old > "$T/real/target.txt"
ln -s real/target.txt "$T/link.txt"
run "$CPROF" query -i "$before" -f folded -o "$T/link.txt"
is "$rc" 0 "-o onto a symbolic link succeeds"
ok "the link is still a link" test -L "$T/link.txt"
like "$(cat "$T/real/target.txt")" 'main\.alpha' "and its file has the output"
is "$(find "$T" -name "*.tmp??????" | wc -l)" 0 "no temporary files are left beside the link or its file"
run "$CPROF" query -i "$before" -o "$T/real"
is "$rc" 1 "-o onto a directory fails"
like "$err" "$T/real: it is a directory" "and says so"

# standard input
run sh -c "\"$CPROF\" query -i - -f folded < \"$before\""
like "$out" 'main\.alpha' "-i - reads standard input"
done_testing
