# Regular expressions that backtrack without end ((a+)+$ on "aaa...ab"), as focus=/ignore= and in
# selectors (=~, !~), against the CLI and the real server: PCRE2 stops them at its limits, and that is
# an error that says so (one line and exit 1; 422 with the reason), never a silent "no match" after
# seconds of work.  The server must stay alive, keep its data, and answer /metrics and /healthz after
# concurrent attacks (they once held every read handle for ~77 s).
. "$srcdir/tests/cli/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || skip_all "jq is not installed (apt-get install jq)"
before="$FIXTURES/cpu-before.pb.gz"
evil='(a+)+$'
a30=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa # 30 a's: 2^30 ways to fail for (a+)+$ on a30 and one more letter

# ---- the CLI: --focus / --ignore on a file with long frame names ----
awk -v a="$a30" 'BEGIN { for (i = 0; i < 1000; i++) print "main;work;" a "b_" i " 1"; print "main;hot_loop 5" }' \
	>"$T/names.folded"
for opt in --focus --ignore; do
	run "$CPROF" query -i "$T/names.folded" "$opt" "$evil"
	is "$rc" 1 "query $opt '$evil' over 1,000 long names: exit 1"
	like "$err" "^cprof query: $opt: regex '\(a\+\)\+\\$' is too costly: " "the error names the option and the regex"
	is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
	is "$out" "" "and nothing is printed as if it were the result"
done
run "$CPROF" diff "$T/names.folded" "$T/names.folded" --focus "$evil"
is "$rc" 1 "diff --focus '$evil': exit 1"
like "$err" "^cprof diff: --focus: regex .* is too costly" "saying why"
# ordinary patterns over the same names are untouched
run "$CPROF" query -i "$T/names.folded" --focus '^(main|run).*' -f json
is "$rc/$(printf '%s' "$out" | jq .total)" 0/1005 "--focus '^(main|run).*' keeps everything"
run "$CPROF" query -i "$T/names.folded" --focus 'hot_.*' -f json
is "$rc/$(printf '%s' "$out" | jq .total)" 0/5 "--focus 'hot_.*' keeps hot_loop"
run "$CPROF" query -i "$T/names.folded" --ignore 'a+b_[0-9]+$' -f json
is "$rc/$(printf '%s' "$out" | jq .total)" 0/5 "--ignore 'a+b_[0-9]+\$' drops the long names"

# ---- the server: 200 series whose job label the regex backtracks on ----
serve_start serve --listen 127.0.0.1:0 --data "$T/data"
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
like "$URL" '^http://127\.0\.0\.1:[0-9]+$' "the server listens"
b64=$(base64 -w0 "$before")
awk -v a="$a30" -v p="$b64" 'BEGIN {
	printf "{\"series\":["
	for (i = 0; i < 200; i++)
		printf "%s{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":\"x\"},{\"name\":\"job\",\"value\":\"%sb%d\"}]},\"samples\":[{\"rawProfile\":\"%s\"}]}", i ? "," : "", a, i, p
	printf "]}"
}' >"$T/wr.json"
http POST /api/profiles/writeraw --data-binary @"$T/wr.json"
is "$code" 200 "200 series stored"
http POST '/api/v1/push?name=names&time=now&job=j' --data-binary @"$T/names.folded"
is "$code" 200 "a profile with 1,000 long frame names stored"
per=$("$CPROF" query -i "$before" -t samples -f json | jq .total)
# writeraw stores a profile at its own time: the fixture's, as old as the committed file
ftime=$(($("$CPROF" query -i "$before" -f json | jq .time_nanos) / 1000000000))
since() { # a day before the fixture's time (or now, if earlier)
	_now=$(date +%s)
	echo $((ftime < _now ? ftime - 86400 : _now - 86400))
}
# count SELECTOR: the total of its matching samples
count() {
	curl -s -G "$URL/api/v1/profile" --data-urlencode "query=$1" --data-urlencode "from=$(since)" \
		--data-urlencode max_nodes=1 | jq -r .total
}
is "$(count 'x:samples{job=~"a+b1[0-9]"}')" "$((10 * per))" "an ordinary regex selects its 10 series"
alive() { # WHAT: after each attack the server answers /healthz and has the earlier data
	http GET /healthz
	is "$code/$body" "200/ok" "$1: the server is alive"
	is "$(count 'x:samples{job=~"a+b1[0-9]"}')" "$((10 * per))" "$1: the earlier data is intact"
}
# attack METHOD PATH ARGS...: answered 422, saying the regex is too costly
attack() {
	_what=$2
	http "$@"
	aerr=$(printf '%s' "$body" | jq -r .error)
	is "$code" 422 "$_what: 422"
	like "$aerr" 'regex .\(a\+\)\+\$. is too costly' "$_what: saying the regex is too costly"
	alive "$_what"
}
sel="x:samples{job=~\"$evil\"}"
attack GET /api/v1/profile -G --data-urlencode "query=$sel" --data-urlencode from=now-1d
like "$aerr" '^label job: ' "the selector's error names the label"
attack GET /api/v1/profile -G --data-urlencode "query=x:samples{job!~\"$evil\"}" --data-urlencode from=now-1d
attack GET /api/v1/series -G --data-urlencode "query=$sel"
attack GET /api/v1/labels -G --data-urlencode "query=$sel"
attack GET /api/v1/range -G --data-urlencode "query=$sel" --data-urlencode from=now-1d
attack GET /api/v1/diff -G --data-urlencode "before=$sel" --data-urlencode "after=x:samples" \
	--data-urlencode from=now-1d
attack GET /api/profiles/labels -G --data-urlencode "query=$sel"
for p in focus ignore; do
	for f in json folded svg; do
		attack GET /api/v1/profile -G --data-urlencode query=names --data-urlencode "$p=$evil" \
			--data-urlencode from=now-1d --data-urlencode format=$f
	done
	attack GET /api/v1/diff -G --data-urlencode before=names --data-urlencode after=names \
		--data-urlencode "$p=$evil" --data-urlencode from=now-1d
done
attack GET /api/v1/profile -G --data-urlencode query=names --data-urlencode format=groups \
	--data-urlencode group_by=job --data-urlencode "focus=$evil" --data-urlencode from=now-1d
# ordinary patterns as focus/ignore on the long names
http GET /api/v1/profile -G --data-urlencode query=names --data-urlencode 'focus=^(main|run).*' \
	--data-urlencode from=now-1d --data-urlencode max_nodes=1
is "$code/$(printf '%s' "$body" | jq .total)" 200/1005 "focus=^(main|run).* keeps everything"
http GET /api/v1/profile -G --data-urlencode query=names --data-urlencode 'focus=hot_.*' \
	--data-urlencode from=now-1d --data-urlencode max_nodes=1
is "$code/$(printf '%s' "$body" | jq .total)" 200/5 "focus=hot_.* keeps hot_loop"

# ---- concurrent attacks: more than the read handles, then the server still answers ----
for k in 1 2 3 4 5 6; do
	case $k in
	[1-4]) args="--data-urlencode query=$sel" ;;
	*) args="--data-urlencode query=names --data-urlencode focus=$evil" ;;
	esac
	# shellcheck disable=SC2086
	curl -s -o "$T/conc$k.body" -w '%{http_code}' -G "$URL/api/v1/profile" $args --data-urlencode from=now-1d \
		>"$T/conc$k.code" &
	eval "cpid$k=\$!"
done
http GET /metrics
is "$code" 200 "/metrics answers during the attacks"
like "$body" 'cprof_' "with the metrics"
for k in 1 2 3 4 5 6; do
	eval "wait \$cpid$k"
	is "$(cat "$T/conc$k.code")" 422 "concurrent attack $k: 422"
	like "$(jq -r .error "$T/conc$k.body")" 'is too costly' "concurrent attack $k: saying why"
done
http GET /metrics
is "$code" 200 "/metrics answers after the attacks"
alive "6 concurrent attacks"

# ---- the CLI's selectors: through the server, and from the store itself ----
run "$CPROF" query --remote "$URL" "$sel"
is "$rc" 1 "query --remote '$sel': exit 1"
like "$err" 'is too costly' "saying the regex is too costly"
is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
kill -TERM $SPID
wait $SPID
is "$?" 0 "the server stops cleanly after all of it"
for mode in "" --series --over-time; do
	run "$CPROF" query --data "$T/data" --since 1d $mode "$sel"
	is "$rc" 1 "query ${mode:+$mode }'$sel' on the store: exit 1"
	like "$err" "^cprof query: label job: regex '\(a\+\)\+\\$' is too costly: " "one line naming the label and the regex"
	is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
done
run "$CPROF" query --data "$T/data" --from "$(since)" 'x:samples{job=~"a+b1[0-9]"}' -f json
is "$rc/$(printf '%s' "$out" | jq .total)" "0/$((10 * per))" "an ordinary regex selects its series from the store"
reports=$(grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$T/serve.err" | head -5)
is "$reports" "" "no sanitizer reports from the server"
done_testing
