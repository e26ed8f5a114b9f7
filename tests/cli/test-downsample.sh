# Downsampling (cprof import --downsample): days older than the raw tier are
# merged into coarser steps with the same totals per stack; queries say the
# resolution they read and --over-time steps never go below it; stores whose
# partitions predate blocks.step stay readable.  Times are relative to now.
. "$srcdir/tests/cli/lib.sh"
D=$T/store
b="$FIXTURES/cpu-before.pb.gz"
a="$FIXTURES/cpu-after.pb.gz"
day=86400
policy=raw=2d,1m=14d,10m
folded() { "$CPROF" query --data "$D" --since 30d process_cpu:cpu -f folded | sort; }
blocks() { for p in "$D"/days/*.db; do sqlite3 "$p" 'SELECT count(*) FROM blocks'; done | awk '{ n += $1 } END { print n }'; }

# noon (UTC) 20 days ago (10m) and 5 days ago (1m), the last hour (raw): a few batches each, seconds
# apart, never across midnight
now=$(date +%s)
t20=$(((now / day - 20) * day + day / 2))
t5=$(((now / day - 5) * day + day / 2))
for i in 0 1 2 3 4 5; do
	"$CPROF" import --data "$D" -l host=a --time "$((t20 + i * 37))" "$b" "$a" >/dev/null
	"$CPROF" import --data "$D" -l host=b --time "$((t5 + i * 23))" "$b" >/dev/null
done
"$CPROF" import --data "$D" -l host=a --time now-50m "$a" >/dev/null
"$CPROF" import --data "$D" -l host=a --time now-10m "$b" >/dev/null
before=$(folded)
total=$("$CPROF" query --data "$D" --since 30d process_cpu:cpu -f json | jq .total)
nb=$(blocks)
run "$CPROF" query --data "$D" --since 30d process_cpu:cpu
unlike "$out" '^Resolution:' "before downsampling, a query reads raw data and says no resolution"
run "$CPROF" query --data "$D" --since 30d process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq -r '.resolution // "none"')" none "nor does its JSON"

run "$CPROF" import --data "$D" --downsample bogus
is "$rc" 2 "a bad --downsample policy is a usage error"
like "$err" "^cprof import: --downsample: " "and says so"
run "$CPROF" serve --data "$T/none" --downsample 7m
is "$rc" 2 "cprof serve refuses a bad --downsample"
like "$err" "^cprof serve: --downsample: " "and says so"
run "$CPROF" scrape --data "$T/none" --downsample 7m http://127.0.0.1:9/
is "$rc" 2 "so does cprof scrape"
like "$err" "^cprof scrape: --downsample: " "and says so"
run "$CPROF" scrape --remote http://127.0.0.1:9 --downsample 1m http://127.0.0.1:9/
like "$err" "^cprof scrape: --downsample applies to the local store" "--downsample is for a local store"
run "$CPROF" import --data "$D" --downsample raw=2d,7m=14d
is "$rc" 2 "a step that does not divide a day is refused"

run "$CPROF" import --data "$D" --downsample "$policy"
is "$rc" 0 "--downsample without files runs the downsampling"
like "$out" '^downsampled 2 days in ' "the two old days are downsampled"
is "$(folded)" "$before" "every stack keeps its exact total (folded, whole range)"
is "$("$CPROF" query --data "$D" --since 30d process_cpu:cpu -f json | jq .total)" "$total" "the total is the same"
na=$(blocks)
ok "the blocks shrank in number ($nb -> $na)" test "$na" -lt "$nb"
d20=$(date -u -d "@$t20" +%Y%m%d)
d5=$(date -u -d "@$t5" +%Y%m%d)
is "$(sqlite3 "$D/days/$d20.db" 'SELECT DISTINCT step FROM blocks')" 600000000000 "20 days ago is at 10m steps"
is "$(sqlite3 "$D/days/$d5.db" 'SELECT DISTINCT step FROM blocks')" 60000000000 "5 days ago is at 1m steps"
is "$(sqlite3 "$D/days/$d20.db" 'SELECT count(*) FROM blocks WHERE t_min % 600000000000 != 0')" 0 \
	"the times of a 10m block are multiples of 10m"

run "$CPROF" query --data "$D" --since 30d process_cpu:cpu
like "$out" '^Resolution: 10m$' "a query of the whole range says it read 10m data"
run "$CPROF" query --data "$D" --since 30d process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq -r .resolution)" 10m "and so does its JSON"
run "$CPROF" query --data "$D" --from "$((t5 - 3600))" --to "$((t5 + 3600))" process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq -r .resolution)" 1m "a query of 5 days ago reads 1m data"
run "$CPROF" query --data "$D" --since 1h process_cpu:cpu -f json
is "$(printf '%s' "$out" | jq -r '.resolution // "raw"')" raw "the last hour is raw"

run "$CPROF" query --data "$D" --since 30d process_cpu:cpu --over-time --step 1m -f json
is "$(printf '%s' "$out" | jq .step)" 600000000000 "--over-time steps finer than the data go up to its resolution"
is "$(printf '%s' "$out" | jq -r .resolution)" 10m "and the JSON says the resolution"
is "$(printf '%s' "$out" | jq '[.points[].value] | add')" "$total" "with the same total"
run "$CPROF" query --data "$D" --since 30d process_cpu:cpu --over-time --step 15m -f json
is "$(printf '%s' "$out" | jq .step)" 1200000000000 "a step between multiples goes up to the next multiple"
run "$CPROF" query --data "$D" --since 30d process_cpu:cpu --over-time --step 1d
like "$out" '^Resolution: 10m$' "--over-time's header names the resolution"
like "$out" ', step 24hrs,' "and keeps a step coarser than it"

# a server of the downsampled store says the resolution in its JSON, and cprof query --remote takes its steps
serve_start srv --listen 127.0.0.1:0 --data "$D" --downsample off
run "$CPROF" query --remote "$URL" --since 30d process_cpu:cpu --over-time --step 1m -f json
is "$(printf '%s' "$out" | jq -c '[.step, .resolution, ([.points[].value] | add)]')" "[600000000000,\"10m\",$total]" \
	"query --remote --over-time: the server's 10m steps, and the same total"
http GET "/api/v1/profile?query=process_cpu:cpu&from=now-30d&to=now"
is "$(printf '%s' "$body" | jq -r .resolution)" 10m "the server's /api/v1/profile says 10m"
kill "$SPID"; wait "$SPID" 2>/dev/null

run "$CPROF" import --data "$D" --downsample "$policy"
like "$out" '^downsampled 0 days' "downsampling again finds nothing to do"
is "$(folded)" "$before" "and changes nothing"
# raw data arriving late in a downsampled day is merged on the next run
"$CPROF" import --data "$D" -l host=a --time "$((t20 + 1000))" "$b" >/dev/null
before=$(folded)
run "$CPROF" import --data "$D" --downsample "$policy"
like "$out" '^downsampled 1 day in ' "a late batch in a downsampled day is merged next time"
is "$(folded)" "$before" "with exact totals"
is "$(sqlite3 "$D/days/$d20.db" 'SELECT count(*) FROM blocks WHERE step != 600000000000')" 0 "and no raw block left"

run "$CPROF" import --data "$D" --downsample off
like "$out" '^downsampled 0 days' "--downsample off does nothing"
done_testing
