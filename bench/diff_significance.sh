#!/bin/sh
# Benchmark (#19): does cprof diff know noise from change?  With known truth, from real recordings.
#
# bench/diff_workload.c spins in f1..f10, f1 weighted (10% of the CPU at weight 1, 13% at 1.345).
# Each pair records it twice, one run after the other, with `cprof record -F 99 -- CMD`
# (BENCH_SECONDS each, default 120: 12 intervals of 10 s), into one store, labelled run=aN and
# run=bN, then `cprof diff -f json` of the two.  The A/A pairs and the A/B pairs are two streams
# that run side by side (each workload is one thread, so each stream has a core), with a store
# each: 20 pairs take 2 x 20 x BENCH_SECONDS (80 minutes at the defaults), not twice that.  A/A: both runs at weight 1; A/B: the second at 1.345 (f1 +3 points).  Counts, over
# BENCH_PAIRS pairs (default 20): A/A pairs with any significant function (target: at most 1 of
# 20), A/B pairs with f1 significant (target: at least 19 of 20) and, per other function, the pairs
# where it was flagged (target: none in more than 1 of 20).  At the default FDR (0.01).  The reference:
# the same pairs compared as two files (the counts test, samples taken as independent).
# BENCH_STORES=DIR analyses the recordings kept in DIR/store-aa and DIR/store-ab (BENCH_KEEP of
# an earlier run) again instead of recording: the same data under another method.
# Needs root.  usage: bench/diff_significance.sh BUILDDIR
bench=diff_significance; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-120}
PAIRS=${BENCH_PAIRS:-20}
need_root "cprof record"
need_tools jq
${CC:-gcc} -O2 -fno-inline -o "$d/work" "$src/bench/diff_workload.c" || { echo "cannot build the workload"; exit 1; }
rec() { "$b/cprof" record -q -F 99 --data "$d/store-$1" -l run="$2" -- "$d/work" "$SECS" "$3" > /dev/null 2>> "$d/rec-$1.err"; }
# one stream: PAIRS pairs of KIND, recorded one after the other
stream() {
	j=0
	while [ "$j" -lt "$PAIRS" ]; do
		j=$((j + 1))
		w=1; [ "$1" = ab ] && w=1.345
		rec "$1" "a$j" 1 && rec "$1" "b$j" "$w" || { echo "cprof record failed" >> "$d/rec-$1.err"; return 1; }
	done
}
echo "cprof diff over intervals: $PAIRS A/A and $PAIRS A/B pairs of ${SECS} s recordings at 99 Hz (f1 10% -> 13% in A/B)"
if [ -n "${BENCH_STORES:-}" ]; then
	echo "(the recordings kept in $BENCH_STORES, analysed again)"
	cp -a "$BENCH_STORES/store-aa" "$BENCH_STORES/store-ab" "$d/"
else
	stream aa & pa=$!
	stream ab & pb=$!
	wait "$pa" || { echo "cprof record failed (A/A)"; tail -3 "$d/rec-aa.err"; exit 1; }
	wait "$pb" || { echo "cprof record failed (A/B)"; tail -3 "$d/rec-ab.err"; exit 1; }
fi
aa_any=0 aa_files=0 ab_f1=0 ab_files_f1=0 i=0
: > "$d/others"
while [ "$i" -lt "$PAIRS" ]; do
	i=$((i + 1))
	for kind in aa ab; do
		st="$d/store-$kind"
		"$b/cprof" diff --data "$st" --since 24h -f json "{run=\"a$i\"}" "{run=\"b$i\"}" > "$d/d.json"
		"$b/cprof" query --data "$st" --since 24h "{run=\"a$i\"}" -f pprof -o "$d/a.pb.gz"
		"$b/cprof" query --data "$st" --since 24h "{run=\"b$i\"}" -f pprof -o "$d/b.pb.gz"
		"$b/cprof" diff -f json "$d/a.pb.gz" "$d/b.pb.gz" > "$d/f.json"
		n=$(jq '.significance.significant' "$d/d.json")
		nf=$(jq '.significance.significant' "$d/f.json")
		iv=$(jq -r '"\(.significance.before)+\(.significance.after)"' "$d/d.json")
		if [ "$kind" = aa ]; then
			[ "$n" -gt 0 ] && aa_any=$((aa_any + 1))
			[ "$nf" -gt 0 ] && aa_files=$((aa_files + 1))
			echo "  A/A pair $i: $n significant over $iv intervals ($(jq -r '[.rows[] | select(.self.significant or .total.significant) | .name] | join(" ")' "$d/d.json")); as files $nf"
		else
			f1=$(jq -r '[.rows[] | select(.name == "f1") | .self.significant] | any' "$d/d.json")
			[ "$f1" = true ] && ab_f1=$((ab_f1 + 1))
			[ "$(jq -r '[.rows[] | select(.name == "f1") | .self.significant] | any' "$d/f.json")" = true ] && ab_files_f1=$((ab_files_f1 + 1))
			jq -r '.rows[] | select(.name != "f1" and (.self.significant or .total.significant)) | .name' "$d/d.json" >> "$d/others"
			echo "  A/B pair $i: f1 $(jq -r '.rows[] | select(.name == "f1") | "\(.self.change * 100 | . * 100 | round / 100)pp q \(.self.q)"' "$d/d.json") significant $f1; others flagged: $(jq -r '[.rows[] | select(.name != "f1" and (.self.significant or .total.significant)) | .name] | join(" ")' "$d/d.json")"
		fi
	done
done
worst=$(sort "$d/others" | uniq -c | sort -rn | head -n 1 | awk '{ print $2 " in " $1 }')
wn=$(printf '%s\n' "$worst" | awk '{ print $NF + 0 }')
echo
echo "  A/A: $aa_any of $PAIRS pairs with any function flagged (the counts test on the same pairs as files: $aa_files)"
echo "  A/B: f1 flagged in $ab_f1 of $PAIRS pairs (as files: $ab_files_f1); the other function flagged most: ${worst:-none}${worst:+ pairs}"
echo "$(verdict '<=' "$aa_any" "$(( (PAIRS + 19) / 20 ))"): A/A false positives: $aa_any of $PAIRS pairs (target <= 1 in 20)"
echo "$(verdict '>=' "$ab_f1" "$(( (PAIRS * 19 + 19) / 20 ))"): A/B detection: $ab_f1 of $PAIRS pairs (target >= 19 in 20)"
echo "$(verdict '<=' "$wn" "$(( (PAIRS + 19) / 20 ))"): A/B, other functions: at most $wn of $PAIRS pairs each (target <= 1 in 20)"
