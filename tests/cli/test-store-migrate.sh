# A store of the previous format (schema 2, tests/fixtures/store-v2: made by cprof 2131acc) is
# converted when this cprof opens it, and every query gives the answer that cprof gave (its own
# answers are beside the fixture): imported Go profiles, recorded CPU by pid (now a sample label),
# off-CPU time by state, in-use memory.  Also: the old files go once the new store stands, a
# conversion cut short is done again, and a reader that may not write the store is told how.
. "$srcdir/tests/cli/lib.sh"
F=$FIXTURES/store-v2
S=$T/s
cp -R "$F" "$S"
R1="--from 2026-11-20T00:00:00Z --to 2026-11-21T00:00:00Z"
R2="--from 2026-11-29T00:00:00Z --to 2026-11-29T23:59:59Z"
q() { "$CPROF" query --data "$S" "$@"; }

run q --types
is "$rc" 0 "the old store opens"
like "$err" "converting the store at $S" "it is converted, and says so"
ok "into store.db and days/" test -f "$S/store.db" -a -d "$S/days"
ok "the old index.db and parts/ are gone" test ! -e "$S/index.db" -a ! -e "$S/parts"
like "$out" '^process_cpu:samples:count:cpu:nanoseconds:delta$' "cprof record's cpu type is process_cpu now"
unlike "$out" '^cpu:' "and no cpu:... type is left"

# the same answers as the cprof that wrote it
# shellcheck disable=SC2086
is "$(q $R2 'cpu:samples{comm="work"}' --group-by pid -f folded | sort)" "$(cat "$F/cpu-by-pid.folded")" \
	"recorded CPU by pid: the same stacks and counts (pid is a sample label now)"
# shellcheck disable=SC2086
is "$(q $R2 offcpu --group-by state -f folded | sort)" "$(cat "$F/offcpu-by-state.folded")" \
	"off-CPU time by state: the same"
# shellcheck disable=SC2086
is "$(q $R1 'process_cpu:cpu{host="a"}' -f folded | sort)" "$(cat "$F/import-a.folded")" "an imported Go profile: the same"
# shellcheck disable=SC2086
is "$(q $R1 'memory:inuse_space' -f folded | sort)" "$(cat "$F/heap-inuse.folded")" "in-use memory: the same"
is "$(q --values comm)" "$(cat "$F/comm.values")" "--values comm: the same"
# the old series per process are one per program now, their pids the samples'
# shellcheck disable=SC2086
is "$(q $R2 --series 'cpu:samples{comm="work"}' | wc -l | tr -d ' ')" 1 "the two work processes: one series"
pids=$(sed -n 's/^pid=\([0-9]*\);.*/\1/p' "$F/cpu-by-pid.folded" | sort -u)
for p in $pids; do
	want=$(awk -v p="pid=$p;" 'index($0, p) == 1 { s += $NF } END { print s }' "$F/cpu-by-pid.folded")
	# shellcheck disable=SC2086
	is "$(q $R2 "cpu:samples{pid=\"$p\"}" -f folded | awk '{ s += $NF } END { print s }')" "$want" \
		"a selector on pid $p selects its samples ($want)"
done

# import --from-store: a copy of a store, the old kind read as it is (and left so), or this kind
S4=$T/s4
cp -R "$F" "$S4"
run "$CPROF" import --data "$T/copy" --from-store "$S4"
is "$rc" 0 "import --from-store of the old store: exit 0"
ok "the old store is left as it was (another's, say)" test -f "$S4/index.db" -a ! -e "$S4/store.db"
# shellcheck disable=SC2086
is "$("$CPROF" query --data "$T/copy" $R2 offcpu --group-by state -f folded | sort)" \
	"$(cat "$F/offcpu-by-state.folded")" "and the copy gives that cprof's answers"
run "$CPROF" import --data "$T/copy2" --from-store "$T/copy"
is "$rc" 0 "import --from-store of this cprof's store: exit 0"
# shellcheck disable=SC2086
is "$("$CPROF" query --data "$T/copy2" $R2 'cpu:samples{comm="work"}' --group-by pid -f folded | sort)" \
	"$(cat "$F/cpu-by-pid.folded")" "the same again"
run "$CPROF" import --data "$T/copy2" --from-store "$T/copy2"
is "$rc" 2 "--from-store of the store itself: a usage error"
run "$CPROF" import --data "$T/copy3" --from-store "$T/nowhere"
is "$rc/$(printf '%s\n' "$err" | wc -l | tr -d ' ')" "1/1" "--from-store of no store: exit 1, one line"
run "$CPROF" import --data "$T/copy3" --from-store "$S4" -l a=b
is "$rc" 2 "--from-store with -l: a usage error"

# a conversion cut short (leftovers of a new store beside the old one): done again, whole
S2=$T/s2
cp -R "$F" "$S2"
mkdir -p "$S2/days"
printf 'half a day\n' >"$S2/days/20261120.db"
printf 'half an index\n' >"$S2/store.db.new"
run "$CPROF" query --data "$S2" $R1 'process_cpu:cpu{host="a"}' -f folded
is "$rc" 0 "a store whose conversion was cut short converts again"
is "$(printf '%s\n' "$out" | sort)" "$(cat "$F/import-a.folded")" "with the same answers"
ok "and no leftover" test ! -e "$S2/store.db.new"

# a reader that may not write the old store: one line that says how
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	S3=$T/s3
	cp -R "$F" "$S3"
	chmod 755 "$T"
	chmod -R a+rX,go-w "$S3"
	cp "$CPROF" "$T/cprof"
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$T/cprof" query --data "$S3" --types
	is "$rc" 1 "another user, who may not write it: exit 1"
	like "$err" "^cprof query: .*store of an earlier cprof.*converted the first time a cprof that may write it opens it" \
		"saying what to do"
	ok "and nothing changed" test -f "$S3/index.db" -a ! -e "$S3/store.db"
fi
done_testing
