# cprof record's Ruby frames (#52), with no flag on the program: Debian 12's ruby (3.1).  The
# workload (tests/fixtures/record/hot.rb) spends its time in spin_a and spin_b, 3:1, called from a
# block of outer (Kernel#loop, a C function that yields), for a given CPU time.  The BPF walker
# reads the sampled thread's control frames; user space names their iseqs.  The layout cprof
# follows is checked against the installed Ruby's own MJIT header; then record -- CMD, -p PID of a
# ruby already running, --all into the store with ruby started while recording, top, a libruby
# whose version cprof does not know (said once, native stacks), and --no-runtimes.  Needs root
# (CI runs as root), ruby and ruby3.1-dev (tools/setup.sh installs them).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
RUBY=${RUBY:-/usr/bin/ruby}
APP=$FIXTURES/record/hot.rb
bg=""
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
run "$RUBY" -e 'print RUBY_VERSION'
is "$rc" 0 "Debian's ruby runs"
ver=$out
diag "ruby $ver ($RUBY)"

# ---- the layout: cprof's offsets and flags against the installed Ruby's MJIT header ----
hdr=$(ls /usr/include/*/ruby-"${ver%.*}".0/rb_mjit_min_header-"$ver".h 2>/dev/null | head -n 1)
ok "ruby's MJIT header is installed (ruby${ver%.*}-dev: ${hdr:-none})" test -n "$hdr"
run gcc -w -I"$(dirname "$hdr")" -I/usr/include/ruby-"${ver%.*}".0 -include "$hdr" -o "$T/layout" \
	"$FIXTURES/record/rb_layout.c" -lruby-"${ver%.*}"
is "$rc" 0 "the header's layout program builds"
"$T/layout" >"$T/hdr.txt"
"$top_builddir/tests/unit/ruby_layout" "${ver%%.*}" "$(echo "$ver" | cut -d. -f2)" $(cut -d' ' -f1 "$T/hdr.txt") >"$T/cprof.txt"
ok "the header gives the fields ($(wc -l <"$T/hdr.txt") of them)" test "$(wc -l <"$T/hdr.txt")" -ge 50
run diff "$T/cprof.txt" "$T/hdr.txt"
is "$out" "" "cprof's offsets and flags for Ruby $ver are the header's"

rec() { timeout -s KILL 300 "$CPROF" record "$@"; }

# check HOW FOLDED: the stacks of one ruby process (in samples)
check() {
	# whole: from _start through the interpreter's entry, the script, outer, the block Kernel#loop
	# yields to (loop's native frames between, but under YJIT) and the method
	hot_pair "$1" "$2" ';spin_a \(hot\.rb:[0-9]+\)( |;)' ';spin_b \(hot\.rb:[0-9]+\)( |;)' \
		'^_start;.*;ruby_run_node;.*;<main> \(hot\.rb\);outer \(hot\.rb:[0-9]+\);(.*;)?block in outer \(hot\.rb:[0-9]+\);spin_[ab] '
}

# ---- record -- ruby ----
run rec -F 999 -o "$T/cmd.pb.gz" -- "$RUBY" "$APP" 3
is "$rc" 0 "record -- ruby exits 0"
check "record -- ruby" "$("$CPROF" query -t samples -f folded -i "$T/cmd.pb.gz")"
la=$(grep -n -m1 '^def spin_a' "$APP" | cut -d: -f1)
run "$CPROF" query -t samples -f json -i "$T/cmd.pb.gz"
like "$out" "\"name\":\"spin_a \\(hot\\.rb:$la\\)\",\"file\":\"$APP\"" "a Ruby method is named with its first line; its file is the script's path"
run env HOME="$T" go tool pprof -top "$T/cmd.pb.gz"
like "$out" " spin_a \\(hot\\.rb:$la\\)\$" "go tool pprof reads the profile, spin_a in it"
# lines: of the instruction each frame runs (the loop, in spin_a's body; the def line is not)
run env HOME="$T" go tool pprof -lines -top "$T/cmd.pb.gz"
line=$(printf '%s\n' "$out" | sed -n 's/.* spin_a (hot\.rb:[0-9]*) .*hot\.rb:\([0-9]*\)$/\1/p' | head -n 1)
ok "spin_a's busiest line is in its loop (hot.rb:${line:-none}, the method at $la-$((la + 9)))" \
	test -n "$line" -a "${line:-0}" -gt "$la" -a "${line:-0}" -lt $((la + 9))
# Ruby's own answer: the lines of spin_a's loop body, from the iseq's line table
body=$("$RUBY" -e 'RubyVM::InstructionSequence.compile_file(ARGV[0]).each_child { |c|
	print c.trace_points.map(&:first).uniq.join(" ") if c.label == "spin_a" }' "$APP")
ok "that line is one Ruby's line table has for spin_a ($body)" sh -c "echo ' $body ' | grep -q ' $line '"

# ---- YJIT (ruby --yjit): its code is left by its frame pointer, past the rb_vm_exec that ran it;
# the Ruby frames of that run go above the outermost interpreter entry instead, in their order ----
run rec -F 999 -o "$T/yjit.pb.gz" -- "$RUBY" --yjit "$APP" 3
is "$rc" 0 "record -- ruby --yjit exits 0"
check "record -- ruby --yjit" "$("$CPROF" query -t samples -f folded -i "$T/yjit.pb.gz")"

# ---- a ruby already running: record -p PID ----
record_p p "$RUBY" "$APP" 3
is "$?" 0 "record -p PID of ruby exits 0 when ruby does"
check "record -p" "$("$CPROF" query -t samples -f folded -i "$T/p.pb.gz")"

# ---- the whole system into the store, ruby started while recording ----
record_all all "$RUBY" "$APP" 3
is "$?" 0 "record --all, stopped by SIGTERM, exits 0"
# (the store's CPU time in samples: 2004008 ns each at 499 Hz)
check "record --all" "$("$CPROF" query -f folded --data "$T/all" "cpu{pid=\"$PID\"}" |
	in_samples 2004008)"

# ---- threads: each thread's own Ruby stack ----
cat >"$T/threads.rb" <<'EOF'
def spin_in_thread(n)
  t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) + n
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) < t
  x
end

def main_waits(th)
  th.join
end

main_waits(Thread.new { spin_in_thread(1.5) })
EOF
run rec -F 999 -o "$T/thr.pb.gz" -- "$RUBY" "$T/threads.rb"
is "$rc" 0 "record -- ruby with a thread exits 0"
f=$("$CPROF" query -t samples -f folded -i "$T/thr.pb.gz")
n=$(printf '%s\n' "$f" | sum ';block in <main> \(threads\.rb:[0-9]+\);spin_in_thread \(threads\.rb:1\)')
w=$(printf '%s\n' "$f" | sum 'main_waits \(threads\.rb:[0-9]+\);.*spin_in_thread')
ok "the spinning thread's samples carry its own Ruby stack ($n of them)" test "$n" -ge 100
is "$w" 0 "none carries the main thread's stack (it waits in join)"

# ---- top ----
run timeout -s KILL 120 "$CPROF" top --stdio -n 1 -d 3 -s total --limit 50 -- "$RUBY" "$APP" 3
is "$rc" 0 "top -- ruby exits 0"
like "$out" " spin_a \\(hot\\.rb:$la\\) +\\[ruby\\] " "top lists spin_a, in the [ruby] mapping"

# ---- a libruby of a version cprof does not know: said once, native stacks ----
lib=$(ldd "$RUBY" | awk '/libruby/ { print $3 }')
mkdir -p "$T/lib"
cp "$lib" "$T/lib/"
# ruby_version's bytes ("3.1.2") in the file: its value, through the PT_LOAD segment that holds it (run
# with --disable-gems: rbconfig.rb refuses a ruby whose version is not its own)
at=$(readelf -Ws --dyn-syms "$lib" | awk '$8 == "ruby_version" { print $2; exit }')
fo=
readelf -lW "$lib" | awk '$1 == "LOAD" { print $2, $3, $5 }' >"$T/loads"
while read -r o v sz; do
	if [ $((0x$at)) -ge $((v)) ] && [ $((0x$at)) -lt $((v + sz)) ]; then
		fo=$((0x$at - v + o))
		break
	fi
done <"$T/loads"
ok "ruby_version is found in libruby ($at at file offset ${fo:-none})" test -n "$fo"
printf '3.9' | dd of="$T/lib/$(basename "$lib")" bs=1 seek="$fo" conv=notrunc 2>/dev/null
run env LD_LIBRARY_PATH="$T/lib" "$RUBY" --disable-gems -e 'print RUBY_VERSION'
is "$out" "3.9.2" "the copy says it is Ruby 3.9.2"
run rec -F 499 -o "$T/v.pb.gz" -- env LD_LIBRARY_PATH="$T/lib" "$RUBY" --disable-gems "$APP" 1
is "$rc" 0 "record -- ruby of another version exits 0"
is "$(printf '%s\n' "$err" | grep -c 'is Ruby 3\.9, whose frames cprof does not know')" 1 "the version is said once in the log"
f=$("$CPROF" query -t samples -f folded -i "$T/v.pb.gz")
is "$(printf '%s\n' "$f" | sum 'spin_[ab] ')" 0 "its frames stay native"
ok "its stacks are there, native ($(printf '%s\n' "$f" | sum 'libruby'))" test "$(printf '%s\n' "$f" | sum 'libruby')" -gt 100

# ---- with --no-runtimes no Ruby method is named ----
run rec -F 499 --no-runtimes -o "$T/no.pb.gz" -- "$RUBY" "$APP" 1
f=$("$CPROF" query -t samples -f folded -i "$T/no.pb.gz")
is "$(printf '%s\n' "$f" | sum 'spin_[ab] ')" 0 "with --no-runtimes no Ruby method is named"

done_testing
