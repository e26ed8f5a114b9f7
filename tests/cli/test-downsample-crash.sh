# Crash safety of downsampling: a compaction killed with SIGKILL at random
# moments leaves the day's old blocks or its new ones, never both (totals
# doubled) and never neither (totals missing); a later run finishes it.
. "$srcdir/tests/cli/lib.sh"
D=$T/store
day=86400
policy=raw=2d,1m=14d,10m
# a profile with many stacks (folded), so that a day takes a while to compact
awk 'BEGIN { for (i = 0; i < 4000; i++) printf "main;serve%d;handle%d;work%d %d\n", i % 97, i % 389, i, 1 + i % 13 }' \
	>"$T/many.folded"
# noon (UTC) 20 days ago (to 10m steps) and 6 days ago (to 1m), 40 batches each
now=$(date +%s)
for i in $(seq 0 39); do
	"$CPROF" import --data "$D" -l host=a --time "$(((now / day - 20) * day + day / 2 + i * 61))" "$T/many.folded" >/dev/null
	"$CPROF" import --data "$D" -l host=b --time "$(((now / day - 6) * day + day / 2 + i * 59))" "$T/many.folded" >/dev/null
done
q() { "$CPROF" query --data "$1" --since 30d "${2:-samples}" -f folded 2>"$T/err" | sort | md5sum; }
sel=$("$CPROF" query --data "$D" --types | head -n 1)
want=$(q "$D" "$sel")
total=$("$CPROF" query --data "$D" --since 30d "$sel" -f json | jq .total)
# how long a whole compaction takes: the kills land within it
cp -a "$D" "$T/timed"
t0=$(date +%s%N)
"$CPROF" import --data "$T/timed" --downsample "$policy" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
diag "a whole compaction takes $ms ms"

bad=0; old=0; new=0; part=0
for round in $(seq 1 20); do
	W=$T/w$round
	cp -a "$D" "$W"
	"$CPROF" import --data "$W" --downsample "$policy" >/dev/null 2>&1 &
	pid=$!
	sleep "$(awk -v r="$(shuf -i 0-1000 -n 1)" -v ms="$ms" 'BEGIN { printf "%.3f", r * ms / 1000 / 1000 }')"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	got=$(q "$W" "$sel")
	t=$("$CPROF" query --data "$W" --since 30d "$sel" -f json 2>>"$T/err" | jq .total)
	raw=$(for p in "$W"/days/*.db; do sqlite3 "$p" 'SELECT count(*) FROM blocks WHERE step = 0'; done | awk '{ n += $1 } END { print n }')
	case $raw in 80) old=$((old + 1)) ;; 0) new=$((new + 1)) ;; *) part=$((part + 1)) ;; esac
	if [ "$got" != "$want" ] || [ "$t" != "$total" ]; then
		bad=$((bad + 1))
		diag "round $round: total $t, not $total: $(cat "$T/err")"
	fi
	for p in "$W"/days/*.db; do
		[ "$(sqlite3 "$p" 'pragma integrity_check')" = ok ] || { bad=$((bad + 1)); diag "round $round: $p is corrupt"; }
	done
	# a later run finishes what the killed one left
	"$CPROF" import --data "$W" --downsample "$policy" >/dev/null 2>&1 || { bad=$((bad + 1)); diag "round $round: a later run fails"; }
	[ "$(q "$W" "$sel")" = "$want" ] || { bad=$((bad + 1)); diag "round $round: totals differ after the later run"; }
	rm -rf "$W"
done
diag "killed before any day was done: $old, with one of the two days done: $part, after both: $new"
is "$bad" 0 "after 20 kill -9s of a compaction every stack has exactly its total (never doubled, never missing)"
done_testing
