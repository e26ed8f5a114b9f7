# cprof diff's significance (#19): which changes are more than chance.
# Stored selections are tested interval by interval (Welch's t test over the
# 10 s intervals, Benjamini-Hochberg q-values); files by sample counts.  The
# data: 12 intervals a side of 1,000 samples each, drawn (awk, fixed seeds)
# among ten functions with known shares, imported 10 s apart: so the truth is
# known.  A/A (the same shares) must flag nothing; A/B (f1 from 10% to 13%,
# the others down by a third of a point each) must flag f1 and only f1; and
# bursty intervals (f1's share drawn per interval between 4% and 16%) must
# flag nothing between stored selections.
. "$srcdir/tests/cli/lib.sh"
S="$T/store"
# draw SEED F1SHARE SPREAD: 1,000 samples, f1 with share F1SHARE +- SPREAD/2 (uniform per
# interval), the rest evenly among f2..f10; folded stacks on stdout
draw() {
	awk -v seed="$1" -v p1="$2" -v w="$3" 'BEGIN {
		srand(seed); s = p1 + (rand() - 0.5) * w
		for (i = 0; i < 1000; i++) {
			r = rand(); f = r < s ? 1 : 2 + int((r - s) / ((1 - s) / 9)); if (f > 10) f = 10
			n[f]++
		}
		for (f = 1; f <= 10; f++) if (n[f]) printf "main;work;f%d %d\n", f, n[f]
	}'
}
# side RUN SEED0 F1SHARE SPREAD START: 12 intervals imported 10 s apart from now-START s
side() {
	for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
		draw $(($2 + k)) "$3" "$4" > "$T/p.folded"
		"$CPROF" import --data "$S" -l run="$1" --time "now-$(($5 - 10 * k))s" "$T/p.folded" > /dev/null
	done
}
side a1 100 0.10 0 900
side a2 200 0.10 0 700
side b 300 0.13 0 500
side burst1 1000 0.10 0.12 1500
side burst2 2000 0.10 0.12 1300
ok "the store has the five runs" test "$("$CPROF" query --data "$S" --series --since 1h 2> /dev/null | grep -c run=)" -ge 5

d() { "$CPROF" diff --data "$S" --since 1h "$@"; }
# A/B
run d '{run="a1"}' '{run="b"}'
is "$rc" 0 "diff of two stored runs exits 0"
like "$out" "Significance: Welch's t test over the intervals, weighted by their samples \(12 intervals before, 12 after\)" \
	"the header names the test and the intervals of each side"
sig=$(printf '%s\n' "$out" | awk '/ name$/ { f = 1; next } f && / \* / { print $NF }' | tr '\n' ' ')
is "$sig" "f1 " "A/B: f1 (10% -> 13%) is the one significant change"
first=$(printf '%s\n' "$out" | awk '/ name$/ { getline; print $NF; exit }')
is "$first" "f1" "the significant change comes first"
run d -f json '{run="a1"}' '{run="b"}'
j=$out
is "$(printf '%s' "$j" | jq -r '.significance | [.method, .before, .after, .significant] | join(" ")')" "intervals 12 12 1" \
	"json: the method, the intervals and the number of significant rows"
is "$(printf '%s' "$j" | jq -r '.rows[] | select(.name == "f1") | .self | [.significant, (.change * 100 | . > 2 and . < 4), (.interval[0] < .change and .change < .interval[1]), (.q < 0.05)] | join(" ")')" \
	"true true true true" "json: f1's self change is about +3 points, inside its interval, q < 0.05"
is "$(printf '%s' "$j" | jq '[.rows[] | select(.name != "f1") | .self.significant] | any')" false \
	"json: no other function's self change is significant (they shrink by a third of a point)"
is "$(printf '%s' "$j" | jq -r '.significance | [.alpha, .min_change] | join(" ")')" "0.01 0.005" \
	"json: the false discovery rate and the smallest change called significant"
# the floor: f1's 3 points are not more than 5, however sure; a bad one is a usage error
run d --min-change 5 '{run="a1"}' '{run="b"}'
like "$out" 'Significant changes: 0 of ' "--min-change 5: f1's growth of 3 points is not significant"
like "$out" 'a change of more than 5pp at q <= 0.01' "... and the header says the floor"
run d --min-change -1 '{run="a1"}' '{run="b"}'
is "$rc" 2 "--min-change -1: exit 2"
like "$err" "bad --min-change '-1'" "... with a message"
run d --significant -f json '{run="a1"}' '{run="b"}'
is "$(printf '%s' "$out" | jq -r '[.rows[].name] | join(" ")')" "f1" "--significant keeps only f1"
# the differential flame graph: a change that chance explains is grey
d -f flamegraph -o "$T/ab.svg" '{run="a1"}' '{run="b"}'
fill() { grep -A2 "<title>$2 " "$1" | grep -o 'fill="rgb([0-9,]*)"' | head -n 1; }
is "$(fill "$T/ab.svg" f1)" 'fill="rgb(255,60,60)"' "flame graph: f1 (significant, grew the most) is the reddest"
n=0; for f in f2 f3 f4 f5 f6 f7 f8 f9 f10; do [ "$(fill "$T/ab.svg" $f)" = 'fill="rgb(221,221,221)"' ] && n=$((n + 1)); done
is "$n" 9 "flame graph: the nine functions that shrank by chance are grey"
like "$(cat "$T/ab.svg")" 'grey: not significant' "flame graph: the subtitle says what grey means"
d --no-significance -f flamegraph -o "$T/ab2.svg" '{run="a1"}' '{run="b"}'
unlike "$(fill "$T/ab2.svg" f9)" '221,221,221' "flame graph --no-significance: no grey"
# ... judged frame by frame (#47): light and heavy, both calling spin, trade share (light from 10%
# to 35% of the samples) under hot, which keeps its 60%, beside steady's 40%.  By function, spin did
# not change and light's and heavy's self is 0; by frame, light, heavy and the spin under each did
drawf() {
	awk -v seed="$1" -v pl="$2" 'BEGIN { srand(seed)
		for (i = 0; i < 1000; i++) { r = rand(); k = r < pl ? 1 : r < 0.6 ? 2 : 3; n[k]++ }
		printf "main;hot;light;spin %d\nmain;hot;heavy;spin %d\nmain;steady %d\n", n[1], n[2], n[3] }'
}
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	drawf $((4000 + k)) 0.10 > "$T/p.folded"
	"$CPROF" import --data "$S" -l run=fr1 --time "now-$((2500 - 10 * k))s" "$T/p.folded" > /dev/null
	drawf $((4100 + k)) 0.35 > "$T/p.folded"
	"$CPROF" import --data "$S" -l run=fr2 --time "now-$((2300 - 10 * k))s" "$T/p.folded" > /dev/null
done
d -f flamegraph -o "$T/fr.svg" '{run="fr1"}' '{run="fr2"}'
# fills NAME: the fills of NAME's frames, sorted
fills() { grep "<title>$1 " "$T/fr.svg" | grep -o 'fill="rgb([0-9,]*)"' | sort | tr '\n' ' '; }
like "$(fills light)" '^fill="rgb\(255,([0-9]+),\1\)" $' "by frame, over intervals: light (its total share grew) is red"
like "$(fills heavy)" '^fill="rgb\(([0-9]+),\1,255\)" $' "by frame, over intervals: heavy (its total share shrank) is blue"
is "$(fills spin | sed -E 's/fill="rgb\(255,([0-9]+),\1\)"/red/; s/fill="rgb\(([0-9]+),\1,255\)"/blue/g')" "red blue " \
	"by frame, over intervals: the spin under each is coloured, one red, one blue ($(fills spin))"
is "$(fills hot)$(fills steady)" 'fill="rgb(221,221,221)" fill="rgb(221,221,221)" ' \
	"by frame, over intervals: hot and steady, whose shares did not change, are grey"
run d '{run="fr1"}' '{run="fr2"}'
like "$(printf '%s\n' "$out" | awk '$NF == "spin"')" '^ +[56][0-9]\.[0-9]+% +[56][0-9]\.[0-9]+% +[-+][0-9.]+pp +\[[^*]*spin$' \
	"... where the table, by function, has spin at about 60% before and after, not significant"
# pprof's diff form carries the figures as comments, which go tool pprof -comments lists
[ -n "${GO:-}" ] || GO=$(command -v go || true)
d -f pprof -o "$T/ab.pb.gz" '{run="a1"}' '{run="b"}'
if [ -n "$GO" ]; then
	c=$(HOME=$T "$GO" tool pprof -comments "$T/ab.pb.gz" 2> /dev/null)
	like "$c" "cprof diff: Welch's t test over the intervals, weighted by their samples, 12 intervals before, 12 after; 1 significant" \
		"pprof: a comment names the test (go tool pprof -comments)"
	like "$c" 'cprof diff: f1 self \+[0-9.]+pp \(' "pprof: and one per significant change"
else
	ok "go is installed (tools/setup.sh installs golang-go) to read the pprof comments" false
fi
# A/A
run d '{run="a1"}' '{run="a2"}'
like "$out" 'Significant changes: 0 of ' "A/A (the same shares, other draws): nothing significant"
# bursty intervals: the intervals vary more than their samples say
run d '{run="burst1"}' '{run="burst2"}'
like "$out" 'Significant changes: 0 of ' "bursty intervals: nothing significant over the intervals"
# ... where the test of counts, taking the samples as independent, is fooled (these draws: f1 -1.1
# points, q 0.028: flagged at the usual 0.05 and any change, which the defaults, 0.01 and more
# than half a point, leave out)
"$CPROF" query --data "$S" --since 1h '{run="burst1"}' -f pprof -o "$T/u1.pb.gz"
"$CPROF" query --data "$S" --since 1h '{run="burst2"}' -f pprof -o "$T/u2.pb.gz"
run "$CPROF" diff --fdr 0.05 --min-change 0 "$T/u1.pb.gz" "$T/u2.pb.gz"
like "$out" 'Significant changes: 1 of ' \
	"the same bursty data as two files: the counts test flags a change that is chance (--fdr 0.05 --min-change 0)"
run "$CPROF" diff --fdr 0.05 "$T/u1.pb.gz" "$T/u2.pb.gz"
like "$out" 'Significant changes: 0 of ' "... which the default floor of half a point leaves out"
# one selector at two ranges is two sides too
run d --before-range now-1000s..now-600s --after-range now-600s..now-300s '{run=~"a1|b"}'
like "$out" '12 intervals before, 12 after' "one selector at two ranges: 12 intervals a side"
like "$(printf '%s\n' "$out" | awk '/ name$/ { getline; print; exit }')" ' \* .*f1$' "... and f1 significant first"
# files: counts
"$CPROF" query --data "$S" --since 1h '{run="a1"}' -f pprof -o "$T/a1.pb.gz"
"$CPROF" query --data "$S" --since 1h '{run="b"}' -f pprof -o "$T/b.pb.gz"
run "$CPROF" diff "$T/a1.pb.gz" "$T/b.pb.gz"
like "$out" 'Significance: a test of sample counts \(samples assumed independent\) \(12000 samples before, 12000 after\)' \
	"two files: the test of sample counts, said so, with the samples of each side"
run "$CPROF" diff -f json "$T/a1.pb.gz" "$T/b.pb.gz"
is "$(printf '%s' "$out" | jq -r '.significance.method')" counts "json: method counts"
# the plain table, and bad options
run "$CPROF" diff --no-significance "$T/a1.pb.gz" "$T/b.pb.gz"
like "$out" 'before +after +delta +delta% +norm\.delta +norm%' "--no-significance: the plain table"
unlike "$out" 'Significance' "--no-significance: no test"
run "$CPROF" diff --fdr 1.5 "$T/a1.pb.gz" "$T/b.pb.gz"
is "$rc" 2 "--fdr out of (0, 1): exit 2"
like "$err" "bad --fdr '1.5'" "... with a message"
run "$CPROF" diff --significant --no-significance "$T/a1.pb.gz" "$T/b.pb.gz"
is "$rc" 2 "--significant with --no-significance: exit 2"
# a side without samples: nothing to test, the diff still stands (the plain table)
run d --before-range now-2000s..now-1990s --after-range now-600s..now-300s '{run=~"a1|b"}'
is "$rc" 0 "no samples before: exit 0"
like "$out" 'before +after +delta' "... the plain table, as there is nothing to test"
# ---- --baseline: every program's last hour against the same hour a day before ----
B="$T/base"
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	for prog in api db; do
		p1=0.10; [ $prog = api ] && p1=0.14 # api's f1 grew by 4 points, db did not change
		draw $((600 + k)) 0.10 0 > "$T/p.folded"
		"$CPROF" import --data "$B" --name cpu -l comm=$prog --time "now-$((86400 + 300 - 10 * k))s" "$T/p.folded" > /dev/null
		draw $((700 + k)) $p1 0 > "$T/p.folded"
		"$CPROF" import --data "$B" --name cpu -l comm=$prog --time "now-$((300 - 10 * k))s" "$T/p.folded" > /dev/null
	done
done
draw 800 0.5 0 > "$T/p.folded"
"$CPROF" import --data "$B" --name cpu -l comm=newcomer --time now-100s "$T/p.folded" > /dev/null
run "$CPROF" diff --data "$B" --baseline 1d
is "$rc" 0 "diff --baseline 1d exits 0"
like "$out" 'against the same 1h 1d before, by comm' "--baseline: the header says the ranges and the grouping"
like "$out" '1 significant growths in 1 of 2 groups compared \(3 seen\)' \
	"--baseline: one growth, in one of the two programs with a baseline (the newcomer has none)"
like "$out" '(^|\n)api +self\+total +1[0-9]\.[0-9]+% +1[0-9]\.[0-9]+% +\+[3-5]\.[0-9]+pp .* f1(\n|$)' \
	"--baseline: api's f1 grew by about 4 points, self and total"
unlike "$out" '(^|\n)db ' "--baseline: db, unchanged, is not listed"
run "$CPROF" diff --data "$B" --baseline 1d -f json
is "$(printf '%s' "$out" | jq -r '[.groups, .compared, (.regressions | length), .regressions[0].group, .regressions[0].function, .regressions[0].kind, .baseline, .by] | join(" ")')" \
	"3 2 1 api f1 self+total 1d comm" "--baseline -f json: groups, compared, the regression, baseline and grouping"
# --baseline tests each program over the intervals a diff of its own selection has (#47): api's
# 12 imports a side fill 2 minutes of the range, which a diff cuts into 12 intervals of 10 s; cut
# from the range's start in steps of a 200th of the range, they were 6 of 20 s (--range 1h) or one
# of 440 s (--range 1d), where nothing can be tested
for r in 1h 1d; do
	secs=3600; [ $r = 1d ] && secs=86400
	run "$CPROF" diff --data "$B" -f json --before-range "now-$((86400 + secs))s..now-1d" --after-range "now-$r..now" 'cpu{comm="api"}'
	direct=$(printf '%s' "$out" | jq -c '[.significance.before, .significance.after] + [.rows[] | select(.name == "f1") | .self | .change, .p, .q]')
	like "$direct" '^\[12,12,0\.0[3-5][0-9]*,[0-9.e-]+,[0-9.e-]+\]$' \
		"diff of api's own selection, --range $r: 12 intervals a side, f1 up by about 4 points ($direct)"
	ok "... at q < 0.0001" jq -en --argjson d "$direct" '$d[4] < 0.0001'
	run "$CPROF" diff --data "$B" --baseline 1d --range "$r" -f json
	reg=$(printf '%s' "$out" | jq -c '[.regressions[] | select(.group == "api" and .function == "f1") | .intervals_before, .intervals_after, .change, .p]')
	is "$(printf '%s' "$reg" | jq -c '.[0:2]')" "[12,12]" "--baseline 1d --range $r: api has the diff's intervals, 12 a side"
	ok "--baseline 1d --range $r: api's f1 grew as the diff found, the same change and p ($reg, diff: $direct)" \
		jq -en --argjson r "$reg" --argjson d "$direct" '($r | length) == 4 and ($r[2] - $d[2] | fabs) < 1e-12 and ($r[3] - $d[3] | fabs) < 1e-15'
done
run "$CPROF" diff --data "$B" --baseline 1d --by pid
like "$out" 'by pid' "--by: another label groups"
run "$CPROF" diff --data "$B" --baseline 1d --range 1m
like "$out" '0 significant growths' "--range 1m: the last minute holds too few intervals to call anything"
run "$CPROF" diff --data "$B" --baseline 1w
like "$out" 'in 0 of 0 groups compared' "--baseline 1w: no data a week ago, nothing compared"
run "$CPROF" diff --data "$B" --baseline yesterday
is "$rc" 2 "--baseline with a bad duration: exit 2"
run "$CPROF" diff --data "$B" --baseline 1d -f flamegraph
is "$rc" 2 "--baseline with a format other than table or json: exit 2"
run "$CPROF" diff --data "$B" --range 1h 'cpu' 'cpu'
is "$rc" 2 "--range without --baseline: exit 2"
run "$CPROF" diff --data "$B" --baseline 1d 'nosuch{x="y"}'
is "$rc" 1 "--baseline with a selector that matches nothing: exit 1"
like "$err" 'no stored series match' "... saying so"
# ---- the server: /api/v1/regressions, and /api/v1/diff with the figures ----
serve_start srv --listen 127.0.0.1:0 --data "$B"
http GET '/api/v1/regressions?baseline=1d'
is "$code" 200 "GET /api/v1/regressions?baseline=1d: 200"
is "$(printf '%s' "$body" | jq -r '[.groups, .compared, .regressions[0].group, .regressions[0].function] | join(" ")')" \
	"3 2 api f1" "... the same regressions as cprof diff --baseline"
http GET '/api/v1/regressions?baseline=1d&format=table'
like "$body" '1 significant growths in 1 of 2 groups' "... and as a table"
http GET '/api/v1/regressions?baseline=soon'
is "$code" 400 "a bad baseline: 400"
http GET '/api/v1/regressions?baseline=1d&query=nosuch%7Bx%3D%22y%22%7D'
is "$code" 404 "a selector that matches nothing: 404"
kill $SPID 2> /dev/null; wait $SPID 2> /dev/null
serve_start srv2 --listen 127.0.0.1:0 --data "$S"
http GET '/api/v1/diff?before=%7Brun%3D%22a1%22%7D&after=%7Brun%3D%22b%22%7D&from=now-1h'
is "$code" 200 "GET /api/v1/diff of two stored runs: 200"
is "$(printf '%s' "$body" | jq -r '[.significance.method, .significance.before, .significance.after, .rows[0].name, .rows[0].self.significant] | join(" ")')" \
	"intervals 12 12 f1 true" "... with each change's significance over the intervals, f1 first"
http GET '/api/v1/diff?before=%7Brun%3D%22a1%22%7D&after=%7Brun%3D%22b%22%7D&from=now-1h&format=svg'
n=$(printf '%s' "$body" | grep -c 'fill="rgb(221,221,221)"')
ok "... and its flame graph greys the changes chance explains ($n frames)" test "$n" -ge 9
http GET '/api/v1/diff?before=%7Brun%3D%22a1%22%7D&after=%7Brun%3D%22b%22%7D&from=now-1h&significance=0'
is "$(printf '%s' "$body" | jq 'has("significance")')" false "significance=0: the plain diff"
kill $SPID 2> /dev/null; wait $SPID 2> /dev/null
done_testing
