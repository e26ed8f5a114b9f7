# cprof record on a Go program stripped as most Go in production is (-ldflags='-s -w': no .symtab, no
# DWARF): the burn fixture (tests/fixtures/burn/burn.go: main.alpha, main.beta and main.gamma at 3:2:1)
# built here twice, as is and stripped, and both recorded.  The stripped twin's functions, lines and
# callers come from Go's own table, with the shares of the twin with symbols, and its mapping says it
# has functions, file names, line numbers and inline frames (go tool pprof -raw: [FN][FL][LN][IN]).  A
# binary cprof cannot name (a C program stripped with strip: no symbols, no .gopclntab) gets a mapping
# that says it has none, so that go tool pprof symbolizes it itself, as it does here from the unstripped
# twin found by build id in PPROF_BINARY_PATH.  Needs root (CI runs as root) and Go.
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
[ -n "${GO:-}" ] || GO=$(command -v go || true)
[ -n "$GO" ] || skip_all "go is not installed (apt-get install golang-go)"
bg=""
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
gob() { GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= "$GO" build "$@" "$FIXTURES/burn/burn.go" 2>"$T/gobuild.err"; }
ok "builds the burn fixture" gob -o "$T/burn"
ok "builds it stripped (-ldflags='-s -w')" gob -ldflags='-s -w' -o "$T/burn-stripped"
[ -x "$T/burn" ] && [ -x "$T/burn-stripped" ] || { sed 's/^/# /' "$T/gobuild.err"; done_testing; exit; }
run readelf -S -W "$T/burn-stripped"
unlike "$out" ' \.symtab | \.debug_' "the stripped twin has no .symtab and no DWARF"
like "$out" ' \.gopclntab ' "but Go's own table, .gopclntab"

rec() { timeout -s KILL 60 "$CPROF" record "$@"; }
pp() { HOME=$T "$GO" tool pprof "$@" 2>/dev/null; }
# shares FILE: "alpha beta gamma" as percentages of their sum (flat, from go tool pprof -top)
shares() {
	pp -symbolize=none -top -nodefraction=0 "$1" | awk '
		$6 == "main.alpha" { a = $1 } $6 == "main.beta" { b = $1 } $6 == "main.gamma" { g = $1 }
		function v(x) { sub(/[a-z]+$/, "", x); return x + 0 }
		END { s = v(a) + v(b) + v(g); if (s > 0) printf "%d %d %d\n", 100 * v(a) / s, 100 * v(b) / s, 100 * v(g) / s }'
}
for twin in burn burn-stripped; do
	run rec -F 199 -o "$T/$twin.pb.gz" -- "$T/$twin" -seconds 4 -weights 3,2,1
	is "$rc" 0 "record -- $twin exits 0"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | sed 's/^/# /'
done
top=$(pp -symbolize=none -top -nodefraction=0 "$T/burn-stripped.pb.gz")
for f in alpha beta gamma; do
	like "$top" " main\\.$f\$" "go tool pprof -symbolize=none shows main.$f from the stripped binary"
done
s_plain=$(shares "$T/burn.pb.gz")
s_strip=$(shares "$T/burn-stripped.pb.gz")
diag "alpha:beta:gamma shares, with symbols: $s_plain; stripped: $s_strip (3:2:1 is 50 33 16)"
# each share near 3:2:1 and near the twin's (two recordings of 4 s at 199 Hz: ~800 samples each)
close=$(printf '%s %s\n' "$s_plain" "$s_strip" | awk 'NF == 6 {
	ok = 1
	for (i = 1; i <= 3; i++) { d = $i - $(i + 3); if (d < -12 || d > 12) ok = 0 }
	if ($4 < 38 || $4 > 62 || $5 < 22 || $5 > 45 || $6 < 8 || $6 > 28) ok = 0
	print ok ? "yes" : "no" }')
is "$close" yes "the stripped twin's shares are the twin's with symbols (within 12 points) and near 3:2:1"
# the callers and the lines, from the table too
traces=$(pp -symbolize=none -traces "$T/burn-stripped.pb.gz" | tr -s ' \n' '  ')
like "$traces" 'main\.gamma[[:space:]]+main\.viaDelta[[:space:]]+main\.work[[:space:]]+main\.main' \
	"its stacks go main.main -> main.work -> main.viaDelta -> main.gamma"
lines=$(pp -symbolize=none -lines -top -nodefraction=0 "$T/burn-stripped.pb.gz")
like "$lines" 'main\.alpha [^ ]*burn\.go:[0-9]+' "main.alpha has its lines in burn.go"
# the same lines as the twin with DWARF, for the hottest line of main.alpha
hot() { pp -symbolize=none -lines -top -nodefraction=0 "$1" | awk '$6 == "main.alpha" {print $7; exit}'; }
is "$(hot "$T/burn-stripped.pb.gz" | sed 's|.*/||')" "$(hot "$T/burn.pb.gz" | sed 's|.*/||')" \
	"main.alpha's hottest line is the twin's"
raw=$(pp -symbolize=none -raw "$T/burn-stripped.pb.gz" | sed -n '/^Mappings/,$p')
like "$raw" "burn-stripped +\\[FN\\]\\[FL\\]\\[LN\\]\\[IN\\]" "its mapping says it has functions, files, lines and inline frames"

# a C program stripped of everything: no names, and its mapping says so (without a build id: go tool
# pprof reads none from the files it finds, so it finds a binary for a mapping with one by no means)
if cc -O2 -g -Wl,--build-id=none -o "$T/work" "$FIXTURES/record/work.c" -lz 2>"$T/cc.err" &&
	strip -o "$T/work-stripped" "$T/work"; then
	run rec -F 199 -o "$T/c.pb.gz" -- "$T/work-stripped" 2
	is "$rc" 0 "record -- a stripped C program exits 0"
	raw=$(pp -symbolize=none -raw "$T/c.pb.gz" | sed -n '/^Mappings/,$p')
	line=$(printf '%s\n' "$raw" | grep ' /.*work-stripped ')
	like "$line" 'work-stripped' "the stripped C program has a mapping"
	unlike "$line" '\[FN\]|\[FL\]|\[LN\]|\[IN\]' "which says it has no functions, files, lines or inline frames"
	like "$raw" 'libc\.so\.6 .*\[FN\]' "(libc's mapping, named from its symbols, says it has functions)"
	unlike "$(pp -symbolize=none -top -nodefraction=0 "$T/c.pb.gz")" ' hot_a$' "cprof has no name for hot_a"
	# so go tool pprof names it itself, from its twin with symbols put in PPROF_BINARY_PATH under its name
	mkdir -p "$T/bins" && cp "$T/work" "$T/bins/work-stripped"
	named=$(PPROF_BINARY_PATH=$T/bins pp -top -nodefraction=0 "$T/c.pb.gz")
	like "$named" ' hot_a$' "go tool pprof symbolizes that mapping itself (from its twin with symbols): hot_a"
else
	sed 's/^/# /' "$T/cc.err"
	ok "builds and strips the C workload" false
fi
done_testing
