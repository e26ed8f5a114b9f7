# cprof diff judges each frame of the differential flame graph by its own change (#47), against two
# runs of a real Go program: tests/fixtures/burn in -mode hotloop, where main.hotLoop calls
# main.light and main.heavy, both burning in main.spin.  The runs trade share between the two
# callees (light 1/15 -> 4/15 of the work, heavy 9/15 -> 6/15) while main.hotLoop keeps its 10/15
# and main.steady its 5/15: by function name, main.spin did not change (its self share is
# hotLoop's), and neither did main.light's or main.heavy's self (0), so every frame was grey or
# white; by frame, light, heavy and the main.spin under each changed.  The runs do a fixed amount
# of arithmetic (-rounds), not of time, so their shares and their number of samples (at 250 Hz)
# hold however busy the machine is.  The direction and size of the changes are checked against go
# tool pprof -diff_base.
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
if [ -z "$GO" ]; then
	ok "go is installed (tools/setup.sh installs golang-go): the diff of two Go runs is checked" false
	done_testing
	exit
fi
# a self-contained build, as tests/fixtures/make-fixtures.sh makes it
(cd "$FIXTURES/burn" && GOCACHE="$T/gocache" GOPATH="$T/gopath" GO111MODULE=off GOFLAGS='' CGO_ENABLED=0 \
	"$GO" build -trimpath -o "$T/burn" burn.go) 2> "$T/build.err"
ok "the Go burn program builds" test -x "$T/burn"
run "$T/burn" -mode hotloop -rounds 40 -hz 250 -weights 1,9,5 -cpuprofile "$T/before.pb.gz"
is "$rc" 0 "burn -mode hotloop -weights 1,9,5 (light, heavy, steady) writes a CPU profile"
run "$T/burn" -mode hotloop -rounds 40 -hz 250 -weights 4,6,5 -cpuprofile "$T/after.pb.gz"
is "$rc" 0 "burn -mode hotloop -weights 4,6,5 writes another"
b=$T/before.pb.gz
a=$T/after.pb.gz

# the reference: go tool pprof's cum of light and heavy, after - before, in milliseconds
ref=$(HOME=$T "$GO" tool pprof -top -cum -unit=ms -nodefraction=0 -diff_base "$b" "$a" 2> /dev/null)
pcum() { printf '%s\n' "$ref" | awk -v f="$1" '$NF == f { sub(/ms$/, "", $4); print $4 + 0; exit }'; }
pl=$(pcum main.light)
ph=$(pcum main.heavy)
ok "go tool pprof -diff_base: main.light grew ($pl ms) and main.heavy shrank ($ph ms)" \
	awk -v l="$pl" -v h="$ph" 'BEGIN { exit !(l > 0 && h < 0) }'

# the table: light and heavy are the significant changes, first, with the values tested (their
# total share changed; their self is 0 before and after)
run "$CPROF" diff "$b" "$a"
is "$rc" 0 "cprof diff of the two runs exits 0"
rows=$(printf '%s\n' "$out" | awk '/ name$/ { f = 1; next } f')
is "$(printf '%s\n' "$rows" | head -n 2 | awk '{ print $NF }' | sort | tr '\n' ' ')" "main.heavy main.light " \
	"table: main.light and main.heavy come first"
like "$(printf '%s\n' "$rows" | awk '$NF == "main.light"')" '\| +\+[1-9][0-9]*\.[0-9]+pp +<0\.0001 \* +main\.light$' \
	"table: main.light's total share grew by points, q < 0.0001 (*)"
like "$(printf '%s\n' "$rows" | awk '$NF == "main.heavy"')" '\| +-[1-9][0-9]*\.[0-9]+pp +<0\.0001 \* +main\.heavy$' \
	"table: main.heavy's total share shrank by points, q < 0.0001 (*)"
run "$CPROF" diff -f json "$b" "$a"
j=$out
# the change of value the total shares say: share after x total after - share before x total before
jcum() {
	printf '%s' "$j" | jq -r --arg f "$1" '. as $d | .rows[] | select(.name == $f) |
		(.total.share_after * $d.total_after - .total.share_before * $d.total_before) / 1e6 | . * 10 | round / 10'
}
cl=$(jcum main.light)
ch=$(jcum main.heavy)
# (pprof prints 3 significant digits: 1.23s)
near_ms() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 10.5 && d >= -10.5) }'; }
ok "json: main.light's total change is go tool pprof's ($cl ms, pprof $pl ms)" near_ms "$cl" "$pl"
ok "json: main.heavy's total change is go tool pprof's ($ch ms, pprof $ph ms)" near_ms "$ch" "$ph"
is "$(printf '%s' "$j" | jq -r '[.rows[] | select(.name == "main.light" or .name == "main.heavy") | .total.significant] | join(" ")')" \
	"true true" "json: both total changes significant"

# the differential flame graph: frame by frame
run "$CPROF" diff -f flamegraph -o "$T/d.svg" "$b" "$a"
is "$rc" 0 "cprof diff -f flamegraph exits 0"
# one line a frame: name x y width r g b
sed -n 's/^<g><title>\(.*\) (before .*<\/title><rect x="\([0-9.]*\)" y="\([0-9.]*\)" width="\([0-9.]*\)" height="[0-9]*" fill="rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))".*/\1 \2 \3 \4 \5 \6 \7/p' \
	"$T/d.svg" > "$T/frames"
fr() { awk -v f="$1" '$1 == f' "$T/frames"; }
# below NAME: the frame called main.spin right above NAME's (its callee)
spin_of() {
	awk -v f="$1" '$1 == f { x = $2; y = $3; w = $4 } { l[NR] = $0 } END {
		for (i = 1; i <= NR; i++) { split(l[i], a, " ")
			if (a[1] == "main.spin" && a[3] == y - 16 && a[2] >= x - 0.01 && a[2] + a[4] <= x + w + 0.01) print l[i] } }' "$T/frames"
}
red() { awk '{ exit !($5 == 255 && $6 == $7 && $6 < 250) }'; }
blue() { awk '{ exit !($7 == 255 && $5 == $6 && $5 < 250) }'; }
grey() { awk '{ exit !($5 == 221 && $6 == 221 && $7 == 221) }'; }
is "$(fr main.light | wc -l | tr -d ' ') $(fr main.heavy | wc -l | tr -d ' ') $(fr main.spin | wc -l | tr -d ' ')" "1 1 2" \
	"flame graph: a frame of main.light, one of main.heavy, and main.spin under each"
ok "flame graph: main.light (its total share grew) is red: $(fr main.light)" eval 'fr main.light | red'
ok "flame graph: main.heavy (its total share shrank) is blue: $(fr main.heavy)" eval 'fr main.heavy | blue'
ok "flame graph: the main.spin under main.light (its self share grew) is red: $(spin_of main.light)" \
	eval 'spin_of main.light | red'
ok "flame graph: the main.spin under main.heavy (its self share shrank) is blue: $(spin_of main.heavy)" \
	eval 'spin_of main.heavy | blue'
ok "flame graph: main.hotLoop, whose share did not change, is grey: $(fr main.hotLoop)" eval 'fr main.hotLoop | grey'
ok "flame graph: main.steady, whose share did not change, is grey: $(fr main.steady)" eval 'fr main.steady | grey'
like "$(grep -o '<title>main\.light ([^<]*' "$T/d.svg")" 'total share \+[0-9.]+pp q &lt;0\.001 \*' \
	"flame graph: main.light's tooltip has its tested change and q"
done_testing
