# cprof serve under hostile requests aimed at the store (#14 items 4, 6, 8): a day that cannot be
# written while many pushes arrive at once, values and times at the int64 limits.  After each, the
# server must be alive, answer with a clear status, and keep the data stored before.
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
command -v sqlite3 >/dev/null || skip_all "sqlite3 is not installed (apt-get install sqlite3)"

# folded text to pprof: ONE VALUE -> $T/ONE.pb.gz holding main;ONE with that value
pprof_of() {
	printf 'main;%s %s\n' "$1" "$2" >"$T/$1.folded"
	"$CPROF" query -i "$T/$1.folded" -f pprof -o "$T/$1.pb.gz"
}
pprof_of seven 7
pprof_of big 999999999999999999 # 18 digits, what folded text takes: ten of them pass INT64_MAX

serve_start serve --listen 127.0.0.1:0 --data "$T/data"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "the server listens"

# the times, fixed once (no day may change under the test): a good day and, later, a bad one
now=$(date +%s)
good=$((now - 3 * 86400))
bad=$((now - 86400))
total() { # SELECTOR [ARGS]: its total over the last 5 days (raw JSON number, no rounding by jq)
	_s=$1
	shift
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$_s" --data-urlencode "from=$((now - 5 * 86400))" \
		--data-urlencode max_nodes=1 "$@" | grep -Eo '"total":-?[0-9]+' | cut -d: -f2
}
http POST "/api/v1/push?name=base&time=$((now - 2 * 86400))" --data-binary @"$T/seven.pb.gz"
is "$code" 200 "the data stored before the attacks"
alive() {
	http GET /healthz
	is "$code/$body" "200/ok" "$1: the server is alive"
	is "$(total base:samples)" 7 "$1: the earlier data is intact"
}

# ---- a day that cannot be written, with many pushes at once (a failed group commit kept the days
# written before the bad one, and the writer's retry of each push alone stored them again) ----
http POST "/api/v1/push?name=late&time=$bad" --data-binary @"$T/seven.pb.gz"
is "$code" 200 "the bad day exists"
day=$(date -u -d "@$bad" +%Y%m%d)
# every insert into that day fails, as on a full disk (a trigger: chmod does not stop root)
sqlite3 "$T/data/days/$day.db" "CREATE TRIGGER broken BEFORE INSERT ON blocks BEGIN SELECT RAISE(ABORT, 'disk I/O error (test)'); END;"
: >"$T/codes"
for i in $(seq 1 200); do
	if [ $((i % 10)) = 0 ]; then echo "many $bad"; else echo "many $good"; fi
done | xargs -P 40 -L 1 sh -c 'curl -s -o /dev/null -w "%{http_code} $3\n" --data-binary @"$0" \
	"$1/api/v1/push?name=$2&time=$3"' "$T/seven.pb.gz" "$URL" >>"$T/codes" 2>&1
is "$(grep -c "^200 $good\$" "$T/codes")" 180 "180 pushes to the good day: 200"
is "$(grep -c "^500 $bad\$" "$T/codes")" 20 "20 pushes to the broken day: 500"
is "$(total many:samples)" 1260 "the good day holds 180 x 7, each push once"
run curl -s -G "$URL/api/v1/profile" --data-urlencode query=late:samples --data-urlencode "from=$((bad - 60))" \
	--data-urlencode max_nodes=1
like "$out" '"total":7,' "a query over the broken day answers, with what it held"
alive "a broken day under 200 concurrent pushes"
sqlite3 "$T/data/days/$day.db" "DROP TRIGGER broken;"
http POST "/api/v1/push?name=many&time=$bad" --data-binary @"$T/seven.pb.gz"
is "$code" 200 "once the day can be written again, a push to it: 200"
is "$(total many:samples)" 1267 "and it is stored once"

# ---- values near the int64 limits: sums saturate (they wrapped to negative) ----
# all ten in one hour-long step of the range: the previous whole hour, whatever the time of day
hour=$((now / 3600 * 3600 - 3600))
for i in $(seq 1 10); do
	http POST "/api/v1/push?name=big&time=$((hour + 60 + i))" --data-binary @"$T/big.pb.gz"
	[ "$code" = 200 ] || diag "push $i: $code $body"
done
is "$(total big:samples)" 9223372036854775807 "ten values of 1e18 - 1: the total saturates at INT64_MAX"
http GET "/api/v1/range?query=big:samples&from=$hour&to=$now&step=1h"
is "$code" 200 "their range answers"
like "$body" '"value": 9223372036854775807' "with the saturated total"
unlike "$body" '"value": -' "and no negative step"
http GET "/api/v1/diff?before=base:samples&after=big:samples&from=$((now - 5 * 86400))&to=$now"
is "$code" 200 "a diff against them answers"
like "$body" '"total_after":9223372036854775807,' "with the saturated total"
like "$body" '"name":"big","before":0,"after":9223372036854775807,"delta":9223372036854775807,' \
	"and delta (not wrapped)"
alive "int64 values"

# ---- times at the int64 limits ----
http POST '/api/v1/push?name=never&time=9223372036854775807' --data-binary @"$T/seven.pb.gz"
is "$code" 422 "a push at time=INT64_MAX (no query reaches it): 422"
like "$body" 'out of range' "saying the time is out of range"
http POST '/api/v1/push?name=never&time=1900-01-01T00:00:00Z' --data-binary @"$T/seven.pb.gz"
is "$code" 422 "a push before 1970: 422"
http POST '/api/v1/push?name=last&time=9223372036854775806' --data-binary @"$T/seven.pb.gz"
is "$code" 200 "a push at the last time a query reaches: 200"
http GET '/api/v1/profile?query=last:samples&from=9223372036854775806&to=9223372036854775807'
like "$code/$body" '^200/.*"total":7,' "and a query reaches it"
alive "times at the limits"
for q in "from=now-292y" "from=now-5d&to=9223372036854775807" "from=now-292y&to=9223372036854775807" \
	"from=0&to=now%2B200y"; do
	http GET "/api/v1/profile?query=base:samples&max_nodes=1&$q"
	like "$code/$body" '^200/.*"total":7,' "profile $q: 200 with the data"
	http GET "/api/v1/range?query=base:samples&$q"
	is "$code" 200 "range $q: 200"
done
http GET "/api/v1/range?query=base:samples&from=now-292y&to=$now"
ok "a range from now-292y ends near to, not at INT64_MAX (n x step passed it)" \
	test "$(printf '%s' "$body" | jq '.to < 9000000000000000000')" = true
for q in "from=now-300y" "to=now%2B300y" "to=9223372036854775808" "from=1600-01-01T00:00:00Z" \
	"to=2262-04-12T00:00:00Z"; do
	http GET "/api/v1/profile?query=base:samples&$q"
	is "$code" 400 "profile $q: 400"
	like "$body" 'out of range' "saying it is out of range"
done
http GET "/api/v1/range?query=base:samples&from=now-292y&step=100y"
is "$code" 400 "a step that puts the grid before INT64_MIN: 400"
alive "ranges at the limits"

kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops cleanly after all of it"
reports=$(grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$T/serve.err" | head -5)
is "$reports" "" "no sanitizer reports from the server"
done_testing
