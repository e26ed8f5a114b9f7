# cprof sql: SQL over the store, its answers compared with cprof query's on the
# same data; the pushdown of time to the store's days; errors; the sqlite3
# shell with the loadable extension.  Times are relative to now (the suite
# also runs under faketime).
. "$srcdir/tests/cli/lib.sh"
command -v jq >/dev/null 2>&1 || skip_all "jq is not installed (apt-get install jq)"
D=$T/store
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta

ok "import api (10 minutes ago)" "$CPROF" import --data "$D" -l comm=api -l node=n1 --time now-10m "$FIXTURES/cpu-before.pb.gz"
ok "import db (20 minutes ago)" "$CPROF" import --data "$D" -l comm=db -l node=n1 --time now-20m "$FIXTURES/cpu-after.pb.gz"
ok "import web (3 hours ago)" "$CPROF" import --data "$D" -l comm=web -l node=n2 --time now-3h "$FIXTURES/cpu-short.pb.gz"
ok "import old (3 days ago, a day of its own)" "$CPROF" import --data "$D" -l comm=old --time now-3d "$FIXTURES/cpu-after.pb.gz"
ok "import a heap profile (another type)" "$CPROF" import --data "$D" -l comm=api --time now-5m "$FIXTURES/heap.pb.gz"

# sorted "key value" lines from cprof query -f folded --group-by comm (lines "comm=X;frames value")
by_comm_query() { # RANGE-OPTIONS...
	"$CPROF" query --data "$D" "$@" --group-by comm -f folded process_cpu:cpu |
		awk '{ split($1, a, ";"); sub("^comm=", "", a[1]); s[a[1]] += $NF } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}
# the same from cprof sql's CSV
csv_pairs() { tr -d '\r' | tail -n +2 | tr ',' ' ' | sort; }

# --- the issue's example: the last hour by comm -------------------------------
run "$CPROF" sql --data "$D" -f csv "SELECT comm, sum(value) FROM samples
	WHERE time > now() - 3600e9 AND type = '$CPU' GROUP BY comm"
is "$rc" 0 "sql: the last hour by comm exits 0"
mine=$(printf '%s\n' "$out" | csv_pairs)
theirs=$(by_comm_query --since 1h)
is "$mine" "$theirs" "the last hour's CPU per comm: cprof sql = cprof query --group-by comm"
like "$mine" '^api [0-9]+$' "api is there"
unlike "$mine" 'web|old' "nothing older than the hour"

run "$CPROF" sql --data "$D" -f csv "SELECT comm, sum(value) FROM samples WHERE type = '$CPU' GROUP BY comm"
is "$(printf '%s\n' "$out" | csv_pairs)" "$(by_comm_query --since 5d)" "all the time per comm: the same as query --since 5d"

# per leaf function, over the last hour: query's folded lines end with the leaf
run "$CPROF" sql --data "$D" -f csv "SELECT function, sum(value) FROM samples
	WHERE time >= now() - 3600e9 AND type = '$CPU' GROUP BY function"
mine=$(printf '%s\n' "$out" | csv_pairs)
theirs=$("$CPROF" query --data "$D" --since 1h -f folded process_cpu:cpu |
	awk '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); s[f[n]] += v } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort)
is "$mine" "$theirs" "CPU per leaf function: cprof sql = cprof query -f folded"

# a selector in the hidden column, and a label column
run "$CPROF" sql --data "$D" -f csv "SELECT sum(value) FROM samples
	WHERE selector = 'process_cpu:cpu{comm=\"db\"}' AND time > now() - 3600e9"
theirs=$("$CPROF" query --data "$D" --since 1h -f folded 'process_cpu:cpu{comm="db"}' | awk '{ s += $NF } END { printf "%.0f\n", s }')
is "$(printf '%s\n' "$out" | csv_pairs)" "$theirs" "selector = '...': the same total as cprof query SELECTOR"
run "$CPROF" sql --data "$D" -f csv "SELECT count(*) FROM samples WHERE selector = 'process_cpu:cpu{comm=\"db\"}'"
direct=$(printf '%s\n' "$out" | csv_pairs)
run "$CPROF" sql --data "$D" -f csv "SELECT count(*) FROM (SELECT 'process_cpu:cpu{comm=\"db\"}' AS x) q
	JOIN samples s ON s.selector = q.x"
is "$(printf '%s\n' "$out" | csv_pairs)" "$direct" "a selector from another table (a join): the plan hands it over"
run "$CPROF" sql --data "$D" -f csv "SELECT (SELECT count(*) FROM samples WHERE series = 1) = (SELECT count(*) FROM samples WHERE series = '1'),
	(SELECT count(*) FROM samples WHERE time < 'soon') = (SELECT count(*) FROM samples),
	(SELECT count(*) FROM samples WHERE time > 'soon')"
is "$(printf '%s\n' "$out" | tr -d '\r' | sed -n 2p)" "1,1,0" "text compared with series and time: as SQLite compares (nothing lost by the pushdown)"
run "$CPROF" sql --data "$D" -f csv "SELECT count(DISTINCT comm), min(node), max(node) FROM samples WHERE node = 'n2'"
is "$(printf '%s\n' "$out" | csv_pairs)" "1 n2 n2" "node = 'n2': only its series"

# frames: the frames of the stacks; main.main is in every stack of the burn program
run "$CPROF" sql --data "$D" -f csv "SELECT sum(s.value) FROM samples s
	JOIN (SELECT DISTINCT stack FROM frames WHERE function = 'main.main') f ON f.stack = s.stack
	WHERE s.time > now() - 3600e9 AND s.type = '$CPU'"
theirs=$("$CPROF" query --data "$D" --since 1h -f folded process_cpu:cpu | awk '/(^|;)main\.main(;| )/ { s += $NF } END { printf "%.0f\n", s }')
is "$(printf '%s\n' "$out" | csv_pairs)" "$theirs" "samples JOIN frames: main.main's inclusive time = query's folded stacks through it"
run "$CPROF" sql --data "$D" -f csv "SELECT depth, function FROM frames
	WHERE stack = (SELECT stack FROM samples WHERE function = 'main.alpha' LIMIT 1) ORDER BY depth"
like "$(printf '%s\n' "$out" | tr -d '\r' | sed -n 2p)" '^0,main\.alpha$' "frames of a stack: the leaf at depth 0"

# --- output formats ---------------------------------------------------------
run "$CPROF" sql --data "$D" -f json "SELECT comm, sum(value) AS total, 'a\"b' AS q, NULL AS n FROM samples
	WHERE type = '$CPU' GROUP BY comm ORDER BY comm"
is "$rc" 0 "-f json exits 0"
is "$(printf '%s\n' "$out" | jq -r '.[0].comm, (.[0].total | type), .[0].q, .[0].n')" "api
number
a\"b
null" "-f json parses: strings, numbers, quotes and null"
is "$(printf '%s\n' "$out" | jq length)" 4 "-f json: one object per row"
run "$CPROF" sql --data "$D" -f csv "SELECT 'a,b' AS x, 'say \"hi\"' AS y, 1.5 AS z"
is "$out" "$(printf 'x,y,z\r\n"a,b","say ""hi""",1.5\r')" "-f csv quotes as RFC 4180"
run "$CPROF" sql --data "$D" "SELECT comm, count(*) AS n FROM samples WHERE comm = 'api' AND type = '$CPU' GROUP BY comm"
like "$out" '^comm +n$' "table: a header"
like "$out" '^---- +-+$' "table: a rule under it"
like "$out" '^api +[0-9]+$' "table: the row"
printf 'SELECT count(*) FROM samples;\nSELECT 42 AS answer;\n' > "$T/q.sql"
run "$CPROF" sql --data "$D" -f csv - < "$T/q.sql"
is "$rc" 0 "SQL from standard input (-)"
like "$out" 'answer' "every statement's rows are printed"

# --- pushdown: a last-hour query reads only the last hour's day -------------
cp -r "$D" "$T/broken"
# the day 3 days ago is corrupt; the last hour (today, maybe yesterday near midnight) is not touched
oldday=$(date -u -d '-3 days' +%Y%m%d)
ok "the old day has its own partition" test -f "$T/broken/days/$oldday.db"
printf 'this is not a database\n' > "$T/broken/days/$oldday.db"
run "$CPROF" sql --data "$T/broken" -f csv "SELECT comm, sum(value) FROM samples
	WHERE time > now() - 3600e9 AND type = '$CPU' GROUP BY comm"
is "$rc" 0 "a last-hour query does not read the corrupt old day (the time condition reaches the store)"
is "$(printf '%s\n' "$out" | csv_pairs)" "$(by_comm_query --since 1h)" "and gives the same answer"
run "$CPROF" sql --data "$T/broken" "SELECT comm, sum(value) FROM samples GROUP BY comm"
is "$rc" 1 "a query of all time reads it, and fails: exit 1"
like "$err" "^cprof sql: .*$oldday\\.db.*corrupt" "naming the file"
is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
run "$CPROF" sql --data "$T/broken" "SELECT count(*) FROM samples WHERE time + 0 > now() - 3600e9"
is "$rc" 1 "a condition on an expression of time cannot go down to the store: every day is read"

# --- errors -----------------------------------------------------------------
run "$CPROF" sql --data "$D" "SELEC 1"
is "$rc" 2 "bad SQL is a usage error (exit 2)"
is "$err" 'cprof sql: SQL error: near "SELEC": syntax error' "one line with SQLite's message"
run "$CPROF" sql --data "$D" "SELECT nosuch FROM samples"
is "$rc:$err" '2:cprof sql: SQL error: no such column: nosuch' "an unknown column: exit 2"
run "$CPROF" sql --data "$D" "SELECT count(*) FROM samples WHERE selector = 'cpu{'"
is "$rc" 2 "a bad selector: exit 2"
like "$err" "^cprof sql: .*selector" "the message says selector"
run "$CPROF" sql --data "$D" "DELETE FROM samples"
is "$rc" 2 "the tables are read-only: exit 2"
run "$CPROF" sql --data "$T/none" "SELECT 1"
is "$rc" 1 "a missing store: exit 1"
like "$err" "^cprof sql: no store at $T/none" "the message names the directory"
is "$(printf '%s\n' "$err" | wc -l)" 1 "on one line"
run "$CPROF" sql --data "$D" -f xml "SELECT 1"
is "$rc" 2 "an unknown format: exit 2"
run "$CPROF" sql --data "$D"
is "$rc" 2 "no SQL: exit 2"
run "$CPROF" sql --data "$D" " ; "
is "$rc" 2 "empty SQL: exit 2"

# --- the sqlite3 shell with the loadable extension -------------------------
so="$top_builddir/cprof_sql.so"
if ! command -v sqlite3 >/dev/null 2>&1; then
	_result 0 "sqlite3 .load cprof_sql # SKIP the sqlite3 shell is not installed (apt-get install sqlite3)"
elif [ ! -f "$so" ]; then
	_result 0 "sqlite3 .load cprof_sql # SKIP cprof_sql.so is not built in this configuration (sanitizers: the shell cannot load an ASan object)"
else
	run sqlite3 -csv :memory: ".load ${so%.so}" "CREATE VIRTUAL TABLE temp.samples USING cprof('$D');" \
		"SELECT comm, sum(value) FROM samples WHERE time > now() - 3600e9 AND type = '$CPU' GROUP BY comm;"
	is "$rc:$err" "0:" "sqlite3 loads cprof_sql and reads the store"
	is "$(printf '%s\n' "$out" | tr -d '\r' | tr ',' ' ' | sort)" "$(by_comm_query --since 1h)" \
		"the sqlite3 shell gives cprof query's answer"
	run sqlite3 -csv :memory: ".load ${so%.so}" "CREATE VIRTUAL TABLE temp.f USING cprof('$D', frames);" \
		"SELECT count(*) > 0 FROM f WHERE depth = 0;"
	is "$rc:$out" "0:1" "and the frames table"
	run sqlite3 :memory: ".load ${so%.so}" "CREATE VIRTUAL TABLE temp.s USING cprof('$T/none');"
	ok "a missing store: sqlite3 fails" test "$rc" -ne 0
	like "$err" "no store at $T/none" "with cprof's message"
fi

done_testing
