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
for c in record serve scrape import query merge diff sql top help; do
	like "$out" "^   $c " "help lists $c"
done

run "$CPROF" help query
is "$rc" 0 "help query exits 0 (no terminal: usage)"
like "$out" '^usage: cprof query' "help query shows the query usage"

run "$CPROF" help nosuch
is "$rc" 2 "help of an unknown command is a usage error"

for c in record import query merge diff sql top help; do
	run "$CPROF" "$c" -h
	is "$rc" 0 "$c -h exits 0"
	like "$out" "^usage: cprof $c" "$c -h prints its usage"
	run "$CPROF" "$c" --help
	is "$rc" 0 "$c --help exits 0"
done

# record: what is checked before the sampler starts (no privileges needed)
run "$CPROF" record
is "$rc" 2 "record without a target is a usage error"
like "$err" "^cprof record: say what to record" "and says what to give"
for args in "--all -p 1" "--all -- true" "-p 1 -- true" "--all -F 0" "--all -F 10001" "--all -F x" "-p 0" \
	"-p x" "-p 1,,x" "--all -d 0" "--all -d soon" "--all --flush-interval 10ms" "--all -f svg" \
	"--all -f pprof" "--all -o x.pb.gz --data d" "--all -o x.pb.gz --flush-interval 10s" \
	"--all -f folded --retention 1d" "--all -f folded -l a=b" "--all -l 1a=b" "--all -l novalue" \
	"--all -d 1s -l a=1 -l a=2" "--all -d 1s -l __name__=x"; do
	# shellcheck disable=SC2086
	run "$CPROF" record $args
	is "$rc" 2 "record $args is a usage error"
	like "$err" "^cprof record: " "record $args: the error names the command"
done
run "$CPROF" record -p 2147483647
is "$rc" 1 "record -p of a process that does not exist exits 1"
like "$err" "^cprof record: no process 2147483647" "and names the pid"

# top: what is checked before the sampler starts or the store is opened
run "$CPROF" help top
is "$rc" 0 "help top exits 0 (no terminal: usage)"
like "$out" '^usage: cprof top' "help top shows the top usage"
like "$out" '--from-store' "help top mentions --from-store"
# top_usage DESCRIPTION ERROR-REGEX ARGS...: cprof top ARGS (no terminal) exits 2
# with a one-line error that names the problem, and prints nothing on stdout
top_usage() {
	_d=$1 _re=$2; shift 2
	run "$CPROF" top "$@" </dev/null
	_a="top${*:+ $*}"
	is "$rc" 2 "$_a: $_d is a usage error"
	like "$(printf '%s\n' "$err" | sed -n 1p)" "^cprof top: $_re" "$_a: the error says so"
	is "$(printf '%s\n' "$err" | grep -c '^cprof top:')" 1 "$_a: one error line"
	is "$out" "" "$_a: nothing on standard output"
}
top_usage "an unknown view" "unknown view 'bogus'" --view bogus
top_usage "an unknown sort key" "unknown sort key 'bogus'" -s bogus
top_usage "no frames left" "--no-kernel and --no-user together" --no-kernel --no-user --stdio
top_usage "a bad regular expression" "bad filter '\('" --filter '(' --stdio
top_usage "a bad frequency" "bad frequency '0'" -F 0 --stdio
top_usage "--type without --from-store" "--type .*--from-store" --type cpu --stdio
top_usage "-F with --from-store" "--from-store browses stored profiles: -F" --from-store -F 99 --stdio
top_usage "no terminal without --stdio" "the screen view needs a terminal: use --stdio"
top_usage "--function without --view callers" "--function goes with --view callers" --function main --stdio
top_usage "-n 0" "bad --iterations '0'" -n 0 --stdio
top_usage "a bad delay" "bad --delay 'soon'" -d soon --stdio
top_usage "two targets" "give one target" --all -p 1 --stdio
top_usage "-- CMD with --from-store" "--from-store browses stored profiles" --from-store --stdio -- true
top_usage "--since and --from" "give --since or --from, not both" --since 1h --from now-2h --stdio
run "$CPROF" top -p 2147483647 --stdio
is "$rc" 1 "top -p of a process that does not exist exits 1"
like "$err" "^cprof top: no process 2147483647" "and names the pid"

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
is "$(echo "$out" | tr '\n' ' ')" "record serve scrape import query merge diff sql top help " "--list-commands prints every command"
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
like "$err" '^cprof: write error on standard output: No space left on device' "and says why (the code of the write, not a guessed EIO)"
# each renderer reports the write's own code: its message is shown, not strerror(EIO)
run sh -c "\"$CPROF\" query -f flamegraph -i \"$FIXTURES/cpu-before.pb.gz\" > /dev/full"
is "$rc" 1 "a flame graph to a full disk exits 1"
like "$err" '^cprof query: write error on standard output: No space left on device' "with the write's reason"
run sh -c "\"$CPROF\" diff -f flamegraph \"$FIXTURES/cpu-before.pb.gz\" \"$FIXTURES/cpu-after.pb.gz\" > /dev/full"
is "$rc" 1 "a diff flame graph to a full disk exits 1"
like "$err" '^cprof diff: write error on standard output: No space left on device' "with the write's reason"
done_testing
