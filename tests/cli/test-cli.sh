# The multiplexer: dispatch, help, version, exit codes, write errors.
. "$srcdir/tests/cli/lib.sh"

run "$CPROF" --version
is "$rc" 0 "--version exits 0"
like "$out" '^cprof [0-9]+\.[0-9]+\.[0-9]+$' "--version prints the version"

run "$CPROF"
is "$rc" 2 "no command is a usage error"
like "$out" 'query' "no command lists the commands"

run "$CPROF" help
is "$rc" 0 "help exits 0"
for c in record serve scrape import query merge diff top help; do
	like "$out" "^   $c " "help lists $c"
done

run "$CPROF" help query
is "$rc" 0 "help query exits 0 (no terminal: usage)"
like "$out" '^usage: cprof query' "help query shows the query usage"

run "$CPROF" help nosuch
is "$rc" 2 "help of an unknown command is a usage error"

for c in record import query merge diff help; do
	run "$CPROF" "$c" -h
	is "$rc" 0 "$c -h exits 0"
	like "$out" "^usage: cprof $c" "$c -h prints its usage"
	run "$CPROF" "$c" --help
	is "$rc" 0 "$c --help exits 0"
done

for c in top; do
	run "$CPROF" "$c"
	is "$rc" 1 "$c (not built yet) exits 1"
	like "$err" "^cprof: '$c' is not built yet" "$c says clearly that it is not built yet"
done

# record: what is checked before the sampler starts (no privileges needed)
run "$CPROF" record
is "$rc" 2 "record without a target is a usage error"
like "$err" "^cprof record: say what to record" "and says what to give"
for args in "--all -p 1" "--all -- true" "-p 1 -- true" "--all -F 0" "--all -F 10001" "--all -F x" "-p 0" \
	"-p x" "-p 1,,x" "--all -d 0" "--all -d soon" "--all --flush-interval 10ms" "--all -f svg" \
	"--all -f pprof" "--all -o x.pb.gz --data d" "--all -o x.pb.gz --flush-interval 10s" \
	"--all -f folded --retention 1d" "--all -f folded -l a=b" "--all -l 1a=b" "--all -l novalue"; do
	# shellcheck disable=SC2086
	run "$CPROF" record $args
	is "$rc" 2 "record $args is a usage error"
	like "$err" "^cprof record: " "record $args: the error names the command"
done
run "$CPROF" record -p 2147483647
is "$rc" 1 "record -p of a process that does not exist exits 1"
like "$err" "^cprof record: no process 2147483647" "and names the pid"

run "$CPROF" qurey
is "$rc" 2 "an unknown command is a usage error"
like "$err" "Did you mean 'query'\?" "an unknown command suggests the closest name"
run "$CPROF" mrege -h
like "$err" "Did you mean 'merge'\?" "a transposition suggests merge"
run "$CPROF" zzzzzz
unlike "$err" "Did you mean" "nothing close: no suggestion"

run "$CPROF" --bogus
is "$rc" 2 "an unknown global option is a usage error"
run "$CPROF" query --bogus -i x
is "$rc" 2 "an unknown command option is a usage error"
like "$err" "^cprof query: unknown or incomplete option '--bogus'" "the error names the option"
run "$CPROF" query -i
is "$rc" 2 "a missing option value is a usage error"
like "$err" "needs a value" "the error says a value is needed"

run "$CPROF" --list-commands
is "$(echo "$out" | tr '\n' ' ')" "record serve scrape import query merge diff top help " "--list-commands prints every command"
run "$CPROF" --list-options query
like "$out" '^--focus$' "--list-options lists long options"
like "$out" '^-i$' "--list-options lists short options"

# A full disk on standard output is an error, not silence
run sh -c "\"$CPROF\" help > /dev/full"
is "$rc" 1 "help to a full disk exits 1"
like "$err" 'No space left on device' "and says why"
run sh -c "\"$CPROF\" query -i \"$FIXTURES/cpu-before.pb.gz\" > /dev/full"
is "$rc" 1 "query to a full disk exits 1"
like "$err" '^cprof query: write error on standard output: No space left on device' "with a one-line reason"
run sh -c "\"$CPROF\" --version > /dev/full"
is "$rc" 1 "--version to a full disk exits 1"
done_testing
