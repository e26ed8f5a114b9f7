#!/bin/sh
# The manual pages and the shell completions: the pages are clean for groff and
# man, they document every option and command that the real binary lists, and
# the bash and zsh completions complete what the binary offers.
. "$srcdir/tests/cli/lib.sh"

command -v groff >/dev/null 2>&1 || skip_all "groff is not installed (apt-get install groff)"

MAN=$(cd "$srcdir/man" && pwd)
COMPL=$(cd "$srcdir/completions" && pwd)
CMDS="record serve scrape import query merge diff sql top" # the commands that have a manual page

# render PAGE: the page as plain text, in lines long enough not to be broken
render() { groff -man -Tascii -P-c -P-b -P-u -rLL=250n "$1" 2>/dev/null; }
# section NAME: from rendered text on stdin, the lines of section NAME
section() { awk -v s="$1" '/^[A-Z]/ { on = ($0 == s) ; next } on'; }
# has_line TEXT REGEX: does a line of TEXT match REGEX?
has_line() { printf '%s\n' "$1" | grep -Eq -- "$2"; }

ok "cprof is executable ($CPROF)" test -x "$CPROF"
run "$CPROF" --list-commands
is "$rc" 0 "cprof --list-commands exits 0"
commands=$out
like "$commands" '^query$' "--list-commands lists query"
like "$commands" '^import$' "--list-commands lists import"
like "$commands" '^record$' "--list-commands lists record"
# every command that is built (its -h works) has a manual page in CMDS
for c in $commands; do
	[ "$c" = help ] && continue
	"$CPROF" "$c" -h >/dev/null 2>&1 || continue
	case " $CMDS " in
	*" $c "*) _result 0 "$c is built and has a manual page" ;;
	*) _result 1 "$c is built and has a manual page"; diag "add man/cprof-$c.1 and $c to CMDS" ;;
	esac
done

# --- man pages ----------------------------------------------------------
has_man_db=no
if command -v man >/dev/null 2>&1 && man --version 2>/dev/null | grep -q .; then
	man --help 2>&1 | grep -q -- '--warnings' && has_man_db=yes
fi

for page in cprof $(for c in $CMDS; do echo "cprof-$c"; done); do
	f=$MAN/$page.1
	ok "man/$page.1 exists" test -f "$f"
	[ -f "$f" ] || continue
	run groff -man -ww -z "$f"
	is "$rc:$out$err" "0:" "groff -man -ww -z man/$page.1: no warnings"
	if [ "$has_man_db" = yes ]; then
		run env MANWIDTH=80 man --warnings -l "$f"
		is "$rc:$err" "0:" "man --warnings -l man/$page.1: no warnings"
		like "$out" '^SYNOPSIS' "man -l man/$page.1 renders"
	else
		_result 0 "man --warnings -l man/$page.1 # SKIP man-db is not installed"
	fi
	like "$(sed -n 1p "$f")" '^\.TH .*"cprof 0\.1"' "man/$page.1: .TH names cprof 0.1"
	text=$(render "$f")
	for s in NAME SYNOPSIS DESCRIPTION "EXIT STATUS" EXAMPLES "SEE ALSO"; do
		like "$text" "^$s\$" "man/$page.1 has a $s section"
	done
done

for c in $CMDS; do
	f=$MAN/cprof-$c.1
	[ -f "$f" ] || continue
	run "$CPROF" --list-options "$c"
	is "$rc" 0 "cprof --list-options $c exits 0"
	like "$out" '^--help$' "cprof --list-options $c lists --help"
	opts=$out
	# the entries of OPTIONS: the tag lines, indented by 7 spaces
	tags=$(render "$f" | section OPTIONS | grep -E '^       [^ ]')
	for o in $opts; do
		# the option as a whole word: "-f" is not "--format", "-i" not "-in"
		re=$(printf '%s' "$o" | sed 's/[.[\*^$]/\\&/g')
		if has_line "$tags" "(^|[^-[:alnum:]_])$re([^-[:alnum:]_=]|\$)"; then
			_result 0 "cprof-$c.1 documents $o under OPTIONS"
		else
			_result 1 "cprof-$c.1 documents $o under OPTIONS"
			diag "OPTIONS entries:"; printf '%s\n' "$tags" | sed 's/^/#   /'
		fi
	done
	like "$(render "$MAN/cprof.1")" "cprof-$c\\(1\\)" "cprof.1 refers to cprof-$c(1)"
done

text=$(render "$MAN/cprof.1")
entries=$(printf '%s\n' "$text" | section COMMANDS | grep -E '^       [^ ]')
for c in $commands; do
	if has_line "$entries" "^       $c( |\$)"; then
		_result 0 "cprof.1 lists the command $c"
	else
		_result 1 "cprof.1 lists the command $c"
	fi
done
for o in --version -h --help; do
	like "$(printf '%s\n' "$text" | section OPTIONS | grep -E '^       [^ ]')" \
		"(^|[ ,])$o(,|\$)" "cprof.1 documents the global option $o"
done

# --- bash completion ----------------------------------------------------
# complete_bash DIR WORD...: COMPREPLY, one a line, for the command line WORD...
# (the last word is the one being completed) in a bash run in DIR without
# bash-completion; the program being completed is $CPROF
complete_bash() {
	_dir=$1; shift
	(cd "$_dir" && PATH="$(dirname "$CPROF"):$PATH" bash --norc --noprofile -c '
		. "$1" || exit 1
		shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_cprof
		printf "%s\n" "${COMPREPLY[@]}"' bash "$COMPL/cprof.bash" "$@")
}
# completes DESCRIPTION EXPECTED [NOT-EXPECTED] -- WORD...
completes() {
	_d=$1 _want=$2 _not=$3; shift 4
	run complete_bash "$T" "$@"
	if [ "$rc" != 0 ] || [ -n "$err" ]; then
		_result 1 "bash: $_d"; diag "rc=$rc stderr: $err"; return
	fi
	if ! has_line "$out" "^$_want\$"; then
		_result 1 "bash: $_d"; diag "COMPREPLY: $(printf '%s' "$out" | tr '\n' ' ')"; return
	fi
	if [ -n "$_not" ] && has_line "$out" "^$_not\$"; then
		_result 1 "bash: $_d"; diag "COMPREPLY has $_not: $(printf '%s' "$out" | tr '\n' ' ')"; return
	fi
	_result 0 "bash: $_d"
}

if command -v bash >/dev/null 2>&1; then
	ok "bash -n completions/cprof.bash" bash -n "$COMPL/cprof.bash"
	mkdir "$T/files" && : >"$T/cpu.pb.gz"
	completes "'cprof qu' completes query" query '' -- "$CPROF" qu
	completes "'cprof ' offers merge" merge '' -- "$CPROF" ''
	completes "'cprof query --fo' completes --format" --format '' -- "$CPROF" query --fo
	completes "'cprof query --format ' offers flamegraph" flamegraph table -- "$CPROF" query --format ''
	completes "'cprof query --format=fl' completes flamegraph" flamegraph '' -- "$CPROF" query --format = fl
	completes "'cprof merge -f ' offers pprof" pprof table -- "$CPROF" merge -f ''
	completes "'cprof diff -f ' offers table" table top -- "$CPROF" diff -f ''
	completes "'cprof diff --n' completes --normalize" --normalize '' -- "$CPROF" diff --n
	completes "'cprof help m' completes merge" merge '' -- "$CPROF" help m
	completes "'cprof query -i ' completes file names" cpu.pb.gz '' -- "$CPROF" query -i ''
	completes "'cprof query -o cp' completes file names" cpu.pb.gz '' -- "$CPROF" query -o cp
	completes "'cprof merge ' completes file names" cpu.pb.gz '' -- "$CPROF" merge ''
	completes "'cprof diff a.pb.gz ' completes file names" cpu.pb.gz '' -- "$CPROF" diff a.pb.gz ''
	completes "'cprof query -t cpu -f ' offers json" json '' -- "$CPROF" query -t cpu -f ''
	completes "'cprof imp' completes import" import '' -- "$CPROF" imp
	completes "'cprof import --da' completes --data" --data '' -- "$CPROF" import --da
	completes "'cprof import ' completes file names" cpu.pb.gz '' -- "$CPROF" import ''
	completes "'cprof import -l host=a ' completes file names" cpu.pb.gz '' -- "$CPROF" import -l host=a ''
	completes "'cprof import --data ' completes directories" files cpu.pb.gz -- "$CPROF" import --data ''
	completes "'cprof query --data=' completes directories" files cpu.pb.gz -- "$CPROF" query --data = ''
	completes "'cprof diff --before-range now-2h..now-1h --a' completes --after-range" --after-range '' \
		-- "$CPROF" diff --before-range now-2h..now-1h --a
	# record: its options, formats, pids, cgroup directories, files, and the command after --
	completes "'cprof rec' completes record" record '' -- "$CPROF" rec
	completes "'cprof record --fl' completes --flush-interval" --flush-interval '' -- "$CPROF" record --fl
	completes "'cprof record --no' completes --no-kernel" --no-kernel '' -- "$CPROF" record --no
	completes "'cprof record ' offers --all" --all cpu.pb.gz -- "$CPROF" record ''
	completes "'cprof record -f ' offers folded" folded top -- "$CPROF" record -f ''
	completes "'cprof record --format=pp' completes pprof" pprof '' -- "$CPROF" record --format = pp
	completes "'cprof record -o ' completes file names" cpu.pb.gz '' -- "$CPROF" record -o ''
	completes "'cprof record --cgroup ' completes directories" files cpu.pb.gz -- "$CPROF" record --cgroup ''
	completes "'cprof record --data ' completes directories" files cpu.pb.gz -- "$CPROF" record --data ''
	completes "'cprof record -p ' offers pid 1" 1 cpu.pb.gz -- "$CPROF" record -p ''
	completes "'cprof record -p \$\$' completes this shell's pid" "$$" '' -- "$CPROF" record -p "$$"
	completes "'cprof record --pid 1,' offers 1,1" 1,1 '' -- "$CPROF" record --pid 1,
	completes "'cprof record -- s' completes command names" sh '' -- "$CPROF" record -- s
	completes "'cprof record -a -- sh ' completes file names" cpu.pb.gz '' -- "$CPROF" record -a -- sh ''
	run complete_bash "$T" "$CPROF" record -- sh -
	unlike "$out" '^--all$' "bash: 'cprof record -- sh -' offers no record option"
	# the configuration file, --log-level and --max-store-size
	completes "'cprof record --print' completes --print-config" --print-config '' -- "$CPROF" record --print
	completes "'cprof record --config ' completes file names" cpu.pb.gz '' -- "$CPROF" record --config ''
	completes "'cprof record --log-level ' offers warn" warn cpu.pb.gz -- "$CPROF" record --log-level ''
	completes "'cprof serve --log-level=de' completes debug" debug '' -- "$CPROF" serve --log-level = de
	completes "'cprof scrape --max-st' completes --max-store-size" --max-store-size '' -- "$CPROF" scrape --max-st
	# top: its options, views, sort keys, pids, directories, and the command after --
	completes "'cprof to' completes top" top '' -- "$CPROF" to
	completes "'cprof top --from-s' completes --from-store" --from-store '' -- "$CPROF" top --from-s
	completes "'cprof top ' offers --stdio" --stdio cpu.pb.gz -- "$CPROF" top ''
	completes "'cprof top --view ' offers callers" callers self -- "$CPROF" top --view ''
	completes "'cprof top --view=th' completes threads" threads '' -- "$CPROF" top --view = th
	completes "'cprof top -s ' offers total" total functions -- "$CPROF" top -s ''
	completes "'cprof top --sort n' completes name" name '' -- "$CPROF" top --sort n
	completes "'cprof top -p ' offers pid 1" 1 cpu.pb.gz -- "$CPROF" top -p ''
	completes "'cprof top --cgroup ' completes directories" files cpu.pb.gz -- "$CPROF" top --cgroup ''
	completes "'cprof top --from-store --data ' completes directories" files cpu.pb.gz \
		-- "$CPROF" top --from-store --data ''
	completes "'cprof top --token-file ' completes file names" cpu.pb.gz '' -- "$CPROF" top --token-file ''
	completes "'cprof top -- s' completes command names" sh '' -- "$CPROF" top -- s
	completes "'cprof top --stdio -- sh ' completes file names" cpu.pb.gz '' -- "$CPROF" top --stdio -- sh ''
	run complete_bash "$T" "$CPROF" top -- sh -
	unlike "$out" '^--stdio$' "bash: 'cprof top -- sh -' offers no top option"
	# options that take a value (a duration, a time, a label) offer nothing
	for _words in "query --since" "query --from" "query --step" "query --group-by" "merge --to" \
		"diff --before-range" "import --time" "import --retention" "import --label" \
		"import --max-store-size" "serve --max-store-size" "record --max-store-size" \
		"record -F" "record --duration" "record --flush-interval" "record -l" \
		"top -d" "top --window" "top -n" "top --filter" "top --function" "top --type" "top --limit"; do
		# shellcheck disable=SC2086
		run complete_bash "$T" "$CPROF" $_words ''
		is "$rc:$out$err" "0:" "bash: 'cprof $_words ' offers nothing"
	done

	# the lists come from the binary once per command, however often TAB is pressed
	cat >"$T/cprof" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$T/calls"
	exec "$CPROF" "\$@"
	EOF
	chmod +x "$T/cprof"
	run bash --norc --noprofile -c '
		. "$1" || exit 1
		for line in "qu" "query --f" "query --i" "diff --n" "query -" "qu"; do
			read -ra COMP_WORDS <<<"$2 $line"
			COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
			_cprof
			printf "%s\n" "${COMPREPLY[@]}"
		done' bash "$COMPL/cprof.bash" "$T/cprof"
	like "$out" '^--invert$' "bash: the wrapped cprof (COMP_WORDS[0]) is asked"
	is "$(sort "$T/calls" 2>/dev/null | tr '\n' ,)" \
		"--list-commands,--list-options diff,--list-options query," \
		"bash: cprof is run once per list, then the answer is cached"
else
	_result 0 "bash completion # SKIP bash is not installed"
fi

# --- formats ------------------------------------------------------------
# One list per command (lib/render/format.c's table for query, merge and diff; the command's own
# for record, sql and scrape): --list-formats prints it, and -h, the manual page, bash's completion
# and the command's own check of --format all say the same.
for c in $CMDS; do
	run "$CPROF" --list-formats "$c"
	is "$rc" 0 "cprof --list-formats $c exits 0"
	fmts=$out
	[ -n "$fmts" ] || continue
	usage=$("$CPROF" "$c" -h | grep -E -- '--format')
	page=$(render "$MAN/cprof-$c.1" | section OPTIONS)
	for fm in $fmts; do
		like "$usage" "[ :]$fm(,| or| \\(|\$)" "cprof $c -h lists the format $fm"
		like "$page" "(^|[^[:alnum:]])$fm([^[:alnum:]]|\$)" "cprof-$c.1 names the format $fm under OPTIONS"
	done
	case $c in
	record) args="--all" ;;
	scrape) args="--targets" ;;
	sql) args="SELECT 1" ;;
	diff) args="a.pb.gz b.pb.gz" ;;
	*) args="x.pb.gz" ;;
	esac
	# shellcheck disable=SC2086 # (args: words)
	run "$CPROF" "$c" --format no-such-format $args
	want=$(printf '%s\n' $fmts | awk '{ a[NR] = $0 }
		END { for (i = 1; i <= NR; i++) printf "%s%s", (i == 1 ? "" : i == NR ? " or " : ", "), a[i] }')
	is "$rc:$(printf '%s' "$err" | head -1)" "2:cprof $c: unknown format 'no-such-format' (choose $want)" \
		"cprof $c --format no-such-format: exit 2, naming the formats"
	if command -v bash >/dev/null 2>&1; then
		run complete_bash "$T" "$CPROF" "$c" --format ''
		is "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" "$(printf '%s\n' $fmts | sort | tr '\n' ' ')" \
			"bash completes cprof $c --format with exactly its formats"
	fi
done

# --- zsh completion -----------------------------------------------------
if command -v zsh >/dev/null 2>&1; then
	ok "zsh -n completions/_cprof" zsh -n "$COMPL/_cprof"
else
	_result 0 "zsh -n completions/_cprof # SKIP zsh not installed"
fi
like "$(sed -n 1p "$COMPL/_cprof")" '^#compdef cprof$' "completions/_cprof starts with #compdef cprof"

done_testing
