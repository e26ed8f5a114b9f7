# Retention and the size limit shrink the store with its days (#48): a day's file holds the
# dictionary and series its samples use, and goes whole.  Killed with SIGKILL at any moment
# (and in the window between the deletion's commit and its unlinks, made here by hand), the store
# opens and answers with every kept sample, and the next run deletes what the killed one left.
. "$srcdir/tests/cli/lib.sh"
D=$T/store
day=86400
now=$(date +%s)
# 40 days, each with its own program and stacks (its dictionary and series are its own)
for k in $(seq 1 40); do
	awk -v k="$k" 'BEGIN { for (i = 0; i < 300; i++) printf "main;day%d_serve%d;work%d %d\n", k, i % 17, i, 1 + i % 7 }' \
		> "$T/d$k.folded"
	"$CPROF" import --data "$D" -l comm="prog$k" --time "$(((now / day - k) * day + day / 2))" "$T/d$k.folded" > /dev/null
done
is "$(ls "$D/days" | grep -c '\.db$')" 40 "40 days, a file each"
kept() { "$CPROF" query --data "$1" --from "$(((now / day - 10) * day))" --to "$now" -f folded 2> "$T/err" | sort | md5sum; }
want=$(kept "$D")
series_all() { "$CPROF" query --data "$1" --since 100d --series 2> /dev/null | wc -l; }
is "$(series_all "$D")" 40 "all 40 days hold 40 series"

# what retention keeps: the days whose newest sample is younger than 10.5 days (day 10 back and later)
cp -a "$D" "$T/timed"
t0=$(date +%s%N)
"$CPROF" import --data "$T/timed" --retention 10d12h > "$T/timed.out"
ms=$((($(date +%s%N) - t0) / 1000000))
like "$(cat "$T/timed.out")" "^deleted 30 days older than 10d12h from " "--retention alone is store upkeep: 30 days deleted"
is "$(ls "$T/timed/days" | grep -c '\.db$')" 10 "their files are gone"
is "$(series_all "$T/timed")" 10 "and their series with them"
is "$(kept "$T/timed")" "$want" "what was kept answers as before"
diag "a whole retention run takes $ms ms"

bad=0
for round in $(seq 1 12); do
	W=$T/w$round
	cp -a "$D" "$W"
	"$CPROF" import --data "$W" --retention 10d12h > /dev/null 2>&1 &
	pid=$!
	sleep "$(awk -v r="$(shuf -i 0-1000 -n 1)" -v ms="$ms" 'BEGIN { printf "%.3f", r * ms / 1000 / 1000 }')"
	kill -9 $pid 2> /dev/null
	wait $pid 2> /dev/null
	[ "$(kept "$W")" = "$want" ] || { bad=$((bad + 1)); diag "round $round: the kept days answer otherwise: $(cat "$T/err")"; }
	"$CPROF" import --data "$W" --retention 10d12h > /dev/null 2> "$T/err" ||
		{ bad=$((bad + 1)); diag "round $round: a later run fails: $(cat "$T/err")"; }
	[ "$(ls "$W/days" | grep -c '\.db$')" = 10 ] || { bad=$((bad + 1)); diag "round $round: $(ls "$W/days" | wc -l) files left"; }
	[ "$(kept "$W")" = "$want" ] || { bad=$((bad + 1)); diag "round $round: after the later run, the kept days differ"; }
	rm -rf "$W"
done
is "$bad" 0 "12 retention runs killed at random moments: the kept days answer whole, the next run finishes"

# the window between the commit and the unlinks: the rows gone, the files left
W=$T/window
cp -a "$D" "$W"
old=$(sqlite3 "$W/store.db" "SELECT name FROM partitions ORDER BY name LIMIT 5")
sqlite3 "$W/store.db" "DELETE FROM partitions WHERE name IN (SELECT name FROM partitions ORDER BY name LIMIT 5)"
is "$(kept "$W")" "$want" "a deletion killed before its unlinks: the store answers"
is "$(series_all "$W")" 35 "the days no longer listed are not read"
"$CPROF" import --data "$W" --retention 100d > "$T/out"
like "$(cat "$T/out")" "^deleted 0 days" "retention with nothing due"
left=0
for n in $old; do [ -e "$W/days/$n.db" ] && left=$((left + 1)); done
is "$left" 0 "and it deletes the files the killed run left"
is "$(kept "$W")" "$want" "what was kept still answers"
# the size limit, when the store is over it, deletes those first (they count in its size)
W=$T/window2
cp -a "$D" "$W"
sqlite3 "$W/store.db" "DELETE FROM partitions WHERE name IN (SELECT name FROM partitions ORDER BY name LIMIT 5)"
"$CPROF" import --data "$W" --max-store-size "$(($(du -sb "$W" | cut -f1) - 4096))" > /dev/null
left=0
for n in $old; do [ -e "$W/days/$n.db" ] && left=$((left + 1)); done
is "$left" 0 "--max-store-size alone deletes them first"
is "$(series_all "$W")" 35 "and nothing else"

# --max-store-size shrinks the store whole: dictionary and series go with the days
W=$T/limit
cp -a "$D" "$W"
before=$(du -sb "$W" | cut -f1)
"$CPROF" import --data "$W" --max-store-size "$((before / 4))" > "$T/out"
like "$(cat "$T/out")" "^deleted [0-9]+ bytes of the oldest data from .*: it takes [0-9]+ bytes$" "--max-store-size alone is store upkeep"
after=$(du -sb "$W" | cut -f1)
ok "the store is under a quarter of its size ($after of $before bytes)" test "$after" -le "$((before / 4))"
ok "with fewer series ($(series_all "$W") of 40)" test "$(series_all "$W")" -lt 15
"$CPROF" import --data "$W" --downsample raw=2d,1m=14d,10m > "$T/out"
like "$(cat "$T/out")" "^downsampled [0-9]+ days? in " "--downsample alone, as before"
done_testing
