# Crash safety and concurrency: a writer killed with SIGKILL at random
# moments leaves a store that opens and answers, missing at most the batch
# being written; readers read while a writer writes.
. "$srcdir/tests/cli/lib.sh"
D=$T/store
b="$FIXTURES/cpu-before.pb.gz"
unit=$("$CPROF" query -i "$b" -f json | jq .total)
# a batch: the same profile 5 times, so a partial batch would show as a total
# that is not a multiple of 5 x unit
set -- "$b" "$b" "$b" "$b" "$b"
writer() {
	i=0
	while :; do
		i=$((i + 1))
		"$CPROF" import --data "$D" --time "now-${i}s" "$@" >/dev/null 2>&1 || exit 1
	done
}

bad=0
stored=false # until a batch is seen, a store with nothing yet (a writer killed before its first commit) is whole
for round in $(seq 1 25); do
	writer "$@" &
	pid=$!
	sleep "0.$(shuf -i 5-40 -n 1)"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	pkill -9 -f "cprof import --data $D" 2>/dev/null
	t=$("$CPROF" query --data "$D" --since 1d process_cpu:cpu -f json 2>"$T/err" | jq .total)
	if [ -z "$t" ] && ! $stored && grep -Eq 'no store at|no stored series match' "$T/err"; then
		t=0
	fi
	[ -n "$t" ] && [ "$t" != 0 ] && stored=true
	if [ -z "$t" ] || [ $((t % (5 * unit))) != 0 ]; then
		bad=$((bad + 1))
		diag "round $round: total '$t' is not a whole number of batches: $(cat "$T/err")"
	fi
done
is "$bad" 0 "after 25 kill -9s the store opens and holds only whole batches"
batches=$(( $("$CPROF" query --data "$D" --since 1d process_cpu:cpu -f json | jq .total) / (5 * unit) ))
ok "the writers got batches in before being killed ($batches)" test "$batches" -gt 0
run sqlite3 "$D/store.db" 'pragma integrity_check'
is "$out" ok "store.db passes SQLite's integrity check"
for p in "$D"/days/*.db; do
	is "$(sqlite3 "$p" 'pragma integrity_check')" ok "$(basename "$p") passes the integrity check"
done

# a batch whose partition file cannot be made (here a directory stands at its path; on a real disk: full,
# or an I/O error) stores nothing, not even store.db's row for that day, so later queries over the
# day still answer
D2=$T/noday
"$CPROF" import --data "$D2" --time now "$b" >/dev/null
day=$(date -u -d '2 days ago' +%Y%m%d)
mkdir -p "$D2/days/$day.db"
run "$CPROF" import --data "$D2" --time now-2d "$b"
is "$rc" 1 "a batch whose day's partition cannot be made fails"
is "$(sqlite3 "$D2/store.db" "SELECT count(*) FROM partitions WHERE name = '$day'")" 0 \
	"and store.db does not list that day"
run "$CPROF" query --data "$D2" --since 3d process_cpu:cpu -f json
is "$rc" 0 "a query over that day still answers"
is "$(printf '%s' "$out" | jq .total)" "$unit" "with the data stored before"

# concurrent readers while one writer writes
writer "$@" &
wpid=$!
fails=0; last=0; decreasing=0
for i in $(seq 1 40); do
	t=$("$CPROF" query --data "$D" --since 1d process_cpu:cpu -f json 2>"$T/err" | jq .total)
	if [ -z "$t" ] || [ $((t % (5 * unit))) != 0 ]; then
		fails=$((fails + 1)); diag "read $i: '$t' $(cat "$T/err")"
	elif [ "$t" -lt "$last" ]; then
		decreasing=$((decreasing + 1))
	else
		last=$t
	fi
done
kill -9 $wpid 2>/dev/null; wait $wpid 2>/dev/null
is "$fails" 0 "40 reads during writes all succeed with whole batches"
is "$decreasing" 0 "and never go back in time"

# two writers at once take turns
writer "$@" & w1=$!
writer "$@" & w2=$!
sleep 2
kill -9 $w1 $w2 2>/dev/null; wait $w1 $w2 2>/dev/null
t=$("$CPROF" query --data "$D" --since 1d process_cpu:cpu -f json | jq .total)
is "$((t % (5 * unit)))" 0 "two writers at once: still whole batches"
# a writer that wrote without taking in the other's rows would give its
# entries ids the other took: loading checks that every stored entry gets the
# next id, and refers only to entries before it
run "$CPROF" query --data "$D" --since 1d process_cpu:cpu -n 1
is "$rc" 0 "and the dictionary loads: every entry got the next id"
[ "$rc" = 0 ] || diag "$err"
done_testing
