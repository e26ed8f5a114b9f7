# cprof record with the real BPF program: workloads with known call paths,
# built here without frame pointers (tests/fixtures/record/), are recorded
# and the profiles checked: functions and shares, complete stacks (through
# zlib too), inline frames and lines, -p, -- CMD and its children, --all into
# the store with labels, short-lived processes, continuous flushing, signals,
# folded output, JIT perf maps and the errors.  Needs root (CI runs as root).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
[ -n "${GO:-}" ] || GO=$(command -v go || true)
R="$FIXTURES/record"
bg=""      # background workloads, killed at exit
jitmap=""  # the JIT's perf map, removed at exit
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -f $jitmap; rm -rf "$T"' EXIT

build() { # OUT SOURCE [LIBS]
	out=$1; src=$2; shift 2
	cc -O2 -g -fomit-frame-pointer -o "$T/$out" "$R/$src" "$@" 2>"$T/cc.err" && return 0
	sed 's/^/# /' "$T/cc.err"; return 1
}
ok "builds the workload (cc -O2 -g -fomit-frame-pointer, with zlib)" build work work.c -lz
ok "builds the short-lived workload" build shortlived_qz short.c
ok "builds the JIT workload" build jit_qz jit.c
[ -x "$T/work" ] && [ -x "$T/shortlived_qz" ] && [ -x "$T/jit_qz" ] || { done_testing; exit; }

# rec ARGS: cprof record, killed if it hangs (a test must end)
rec() { timeout -s KILL 60 "$CPROF" record "$@"; }
folded() { "$CPROF" query -t samples -f folded "$@"; } # of a file, in samples
sfolded() { "$CPROF" query -f folded "$@"; }         # of the store
# (sum, lib.sh's, adds up samples of a file, the store's CPU time in nanoseconds)
# wait_gone PID: waits up to 15 s for a background process to exit; 0 if it did
wait_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$1" 2>/dev/null; then kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 1; fi
	return 0
}
# exits0 DESCRIPTION: $rc is 0; else shows the end of $err
exits0() {
	is "$rc" 0 "$1"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 15 | sed 's/^/#   stderr: /'
}
# one_line DESCRIPTION: $err (stderr of a failed command) is one line
# "cprof record: ...", followed for usage errors by the -h hint
one_line() {
	printf '%s\n' "$err" | grep -v "^Try 'cprof record -h' for more information\.$" > "$T/.lines"
	if [ "$(wc -l < "$T/.lines")" = 1 ] && grep -q '^cprof record: ' "$T/.lines"; then _result 0 "$1"; else
		_result 1 "$1"; printf '%s\n' "$err" | sed 's/^/#   stderr: /'; fi
}

# ---- a known workload, recorded as a command into a pprof file ----
run rec -F 499 -o "$T/w.pb.gz" -- "$T/work" 2
exits0 "record -- CMD -o FILE exits 0"
like "$err" '^cprof record: [0-9]+ samples in [0-9.]+ s -> .*w\.pb\.gz$' "and says what it wrote"
ok "the pprof file is written" test -s "$T/w.pb.gz"
f=$(folded -i "$T/w.pb.gz")
total=$(printf '%s\n' "$f" | sum '.')
a=$(printf '%s\n' "$f" | sum ';hot_a [0-9]+$')
b=$(printf '%s\n' "$f" | sum ';hot_b [0-9]+$')
diag "samples: $total; hot_a $a, hot_b $b"
ok "hot_a is in the profile" test "$a" -gt 0
ok "hot_b is in the profile" test "$b" -gt 0
share=$(( (a + b) > 0 ? 100 * a / (a + b) : 0 ))
ok "hot_a has a plausible share of hot_a + hot_b (3:1 by loop counts): $share% in 55..90%" \
	test "$share" -ge 55 -a "$share" -le 90
ok "-F 499 applies: more samples than 19 Hz could give in 2 s ($total)" test "$total" -ge 100
hot=$(printf '%s\n' "$f" | sum ';(hot_a|hot_b|inl_spin) [0-9]+$')
hot_main=$(printf '%s\n' "$f" | sum '(^|;)main;run;(hot_a|hot_b|hot_inline;inl_spin|inl_spin) [0-9]+$')
ok "the stacks of the hot functions reach main without frame pointers ($hot_main of $hot)" \
	test "$hot" -gt 0 -a "$((100 * hot_main))" -ge "$((98 * hot))"
with_main=$(printf '%s\n' "$f" | sum '(^|;)main;')
ok "nearly all samples reach main ($with_main of $total)" test "$((100 * with_main))" -ge "$((90 * total))"
z=$(printf '%s\n' "$f" | sum '(^|;)main;run;squeeze;compress2;deflate[; ]')
ok "zlib frames (compress2 -> deflate, no frame pointers) have main as ancestor ($z samples)" test "$z" -gt 0
zdeep=$(printf '%s\n' "$f" | sum '(^|;)main;run;squeeze;compress2;deflate;[^ ]+ [0-9]+$')
ok "and stacks with their leaf deeper in libz are complete too ($zdeep samples)" test "$zdeep" -gt 0
# inline frames and lines
inl=$(printf '%s\n' "$f" | sum ';run;hot_inline;inl_spin [0-9]+$')
ok "an always_inline function is its own frame under its caller (run;hot_inline;inl_spin: $inl samples)" \
	test "$inl" -gt 0
unlike "$(printf '%s\n' "$f" | grep inl_spin)" ';run;inl_spin [0-9]+$' "and its caller is not lost (no run;inl_spin)"
if [ -z "$GO" ]; then
	ok "go is installed (apt-get install golang-go): the file is checked with go tool pprof" false
else
	run env HOME="$T" "$GO" tool pprof -top "$T/w.pb.gz"
	is "$rc" 0 "go tool pprof reads the file"
	like "$out" ' hot_a$' "go tool pprof -top shows hot_a"
	like "$out" '^Type: cpu$' "the default sample type is cpu (nanoseconds)"
	run env HOME="$T" "$GO" tool pprof -lines -top "$T/w.pb.gz"
	like "$out" ' hot_a .*work\.c:[0-9]+$' "the profile has file:line (go tool pprof -lines)"
	like "$out" ' inl_spin .*work\.c:[0-9]+( \(inline\))?$' "inline frames have their own lines"
	run env HOME="$T" "$GO" tool pprof -traces "$T/w.pb.gz"
	like "$out" 'comm: +work' "samples carry the comm label"
	like "$out" 'thread_name: +work' "and the thread name"
fi

# ---- a binary without .debug_aranges (clang and rustc emit none, and
# libdwfl finds units only through them): its units are found by their own
# ranges, with their inline frames and lines ----
if cp "$T/work" "$T/work_noar" && objcopy --remove-section .debug_aranges "$T/work_noar" 2>/dev/null; then
	unlike "$(readelf -S "$T/work_noar")" 'debug_aranges' "a copy of the workload without .debug_aranges"
	run rec -q -F 499 -o "$T/noar.pb.gz" -- "$T/work_noar" 1
	exits0 "record of it exits 0"
	inl=$(folded -i "$T/noar.pb.gz" | sum ';run;hot_inline;inl_spin [0-9]+$')
	ok "its always_inline function is its own frame under its caller ($inl samples)" test "$inl" -gt 0
	run "$CPROF" query -i "$T/noar.pb.gz" -f json
	like "$out" '"name":"hot_a","file":"[^"]*work\.c"' "and its functions have their files"
else
	ok "objcopy removes .debug_aranges from a copy of the workload" false
fi

# ---- -f folded to standard output ----
run rec -q -F 199 -f folded -- "$T/work" 1
exits0 "record -f folded exits 0"
like "$out" '(^|;)main;run;hot_a [0-9]+$' "folded stacks go to standard output"
unlike "$out" '^[^ ]*$|[^0-9]$' "every line is 'stack count'"
is "$err" "" "-q: nothing on stderr"

# ---- threads: the main thread's stack and the ones glibc maps are copied
# by different paths in the BPF program; both unwind to their first frame ----
if build threads_qz threads.c -pthread; then
	run rec -q -F 499 -f folded -- "$T/threads_qz" 2
	exits0 "record -- a program with threads exits 0"
	# (a leaf may be in the kernel: the stacks go on past spin_*)
	w=$(printf '%s\n' "$out" | sum ';worker;spin_worker[; ]')
	w_up=$(printf '%s\n' "$out" | sum '^[^; ]+;[^; ]+;worker;spin_worker[; ]')
	m=$(printf '%s\n' "$out" | sum '(^|;)spin_main[; ]')
	m_start=$(printf '%s\n' "$out" | sum '^_start;([^; ]+;)*main;spin_main[; ]')
	all_w=$(printf '%s\n' "$out" | sum '(^|;)spin_worker[; ]')
	diag "spin_worker $all_w ($w under worker, $w_up from the thread's first frame); spin_main $m ($m_start from _start)"
	ok "the threads' samples unwind through worker ($w of $all_w)" \
		test "$all_w" -gt 50 -a "$((100 * w))" -ge "$((98 * all_w))"
	ok "to the thread's first frames, two above worker (clone3, start_thread: $w_up of $w)" \
		test "$w" -gt 0 -a "$((100 * w_up))" -ge "$((98 * w))"
	ok "the main thread's samples reach the program's first frame, _start ($m_start of $m)" \
		test "$m" -gt 20 -a "$((100 * m_start))" -ge "$((98 * m))"
else
	ok "builds the threads workload" false
fi

# ---- -p: only the given process ----
cp "$T/work" "$T/rec_one_qz"
cp "$T/work" "$T/rec_two_qz"
"$T/rec_one_qz" 4 & p1=$!
"$T/rec_two_qz" 4 & p2=$!
bg="$bg $p1 $p2"
sleep 0.3
run rec -p "$p1" -d 2s --data "$T/pstore"
exits0 "record -p PID -d 2s into a store exits 0"
like "$err" "-> $T/pstore \\(cprof query --data $T/pstore cpu\\)$" "and names the store"
run "$CPROF" query --data "$T/pstore" --values comm
is "$out" "rec_one_qz" "-p: only that process's comm is stored"
run "$CPROF" query --data "$T/pstore" --values pid
is "$out" "$p1" "-p: the samples' pid label is that process"
run "$CPROF" query --data "$T/pstore" --values exe
is "$out" "$T/rec_one_qz" "the exe label is its path"
run sfolded --data "$T/pstore" cpu
like "$out" '(^|;)main;run;hot_a [0-9]+$' "-p: the process's stacks are complete"
wait "$p1" "$p2"

# ---- a program whose file was deleted while it runs (a package upgrade) ----
cp "$T/work" "$T/del_qz"
"$T/del_qz" 3 & pd=$!
bg="$bg $pd"
sleep 0.3
rm -f "$T/del_qz"
run rec -q -F 199 -p "$pd" -d 1500ms -f folded
exits0 "record -p of a program whose file was deleted exits 0"
like "$out" '(^|;)main;run;hot_a [0-9]+$' "a deleted program is still symbolized and unwound (/proc/PID/map_files)"
unlike "$(printf '%s\n' "$out" | grep -F 'del_qz')" 'del_qz \(deleted\)\+0x' "no frames as 'del_qz (deleted)+0x...'"
wait "$pd"

# ---- -- CMD follows its children ----
run rec -F 199 --data "$T/kids" -- sh -c "echo \$\$ > \"$T/cmd.pid\"; \"$T/work\" 1 & echo \$! > \"$T/kid1.pid\";
	\"$T/work\" 1 & echo \$! > \"$T/kid2.pid\"; wait"
exits0 "record -- sh -c '...' exits 0"
run "$CPROF" query --data "$T/kids" --values pid 'cpu{comm="work"}'
is "$out" "$(sort "$T/kid1.pid" "$T/kid2.pid")" "-- CMD: both children of the shell are profiled (their pids)"
run "$CPROF" query --data "$T/kids" --values pid
# the command itself (comm cprof until its exec, then sh) and the children, nothing else
strays=$(printf '%s\n' "$out" | grep -vxF -e "$(cat "$T/cmd.pid")" -e "$(cat "$T/kid1.pid")" -e "$(cat "$T/kid2.pid")")
is "$strays" "" "-- CMD: nothing but the command and its children"
run sfolded --data "$T/kids" 'cpu{comm="work"}'
like "$out" '(^|;)main;run;hot_a [0-9]+$' "the children are symbolized and unwound"

# ---- --all into the store, continuous, with short-lived processes ----
"$T/work" 5 & pw=$!
bg="$bg $pw"
(
	end=$(($(date +%s) + 4))
	while [ "$(date +%s)" -lt "$end" ]; do "$T/shortlived_qz" 60; done
) & ps=$!
bg="$bg $ps"
sleep 0.2
run rec --all -F 99 -d 4s --flush-interval 1s --data "$T/all"
exits0 "record --all -d 4s --flush-interval 1s exits 0"
wait "$ps" "$pw"
run "$CPROF" query --data "$T/all" --types
is "$out" "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta" "--types: the profile type, CPU time as Pyroscope names it"
run "$CPROF" query --data "$T/all" --labels
for l in comm exe node; do
	like "$out" "^$l\$" "--all: series are labelled $l"
done
unlike "$out" '^pid$' "and not pid: a series is a program, pid labels its samples"
run "$CPROF" query --data "$T/all" --values node
is "$out" "$(uname -n)" "the node label is the host name"
run "$CPROF" query --data "$T/all" --series "cpu{exe=\"$T/work\"}"
like "$out" "comm=\"work\"" "the workload's series has its comm"
run "$CPROF" query --data "$T/all" --values pid "cpu{exe=\"$T/work\"}"
like "$out" "^$pw\$" "and its samples the workload's pid"
run "$CPROF" query --data "$T/all" cpu -n 100000
like "$out" ' hot_a$' "cprof query cpu shows the workload's function"
run sfolded --data "$T/all" "cpu{pid=\"$pw\"}"
like "$out" '(^|;)main;run;hot_a [0-9]+$' "--all: the workload's stacks are complete"
run "$CPROF" query --data "$T/all" "cpu{pid=\"$pw\"}" --over-time --since 2m --step 1s -f json
n=$(printf '%s' "$out" | jq '[.points[] | select(.value > 0)] | length')
ok "continuous mode: the workload's samples are stored in several batches ($n one-second steps)" \
	test "${n:-0}" -ge 3
run "$CPROF" query --data "$T/all" --values pid 'cpu{comm="shortlived_qz"}'
n=$(printf '%s\n' "$out" | grep -c .)
ok "short-lived processes are recorded ($n processes of ~60 ms)" test "$n" -ge 5
run sfolded --data "$T/all" 'cpu{comm="shortlived_qz"}'
like "$out" '(^|;)main;short_lived_spin_qz [0-9]+$' "short-lived processes are symbolized and unwound"
# A sample taken inside execve, between the new name and the new registers,
# still has the old program's user address while only the new program's
# mappings are known: it keeps its kernel frames only.  Allow 5% for what is
# left (a process started just before the recording), and show them when it
# fails (tests/cli/test-record-storm.sh checks a storm of such processes).
bare_re='^(0x[0-9a-f]+;)*0x[0-9a-f]+ [0-9]+$|(^|;)shortlived_qz[+]0x'
bare=$(printf '%s\n' "$out" | awk -v re="$bare_re" '$0 ~ re { b += $NF } { t += $NF } END { printf "%.0f %.0f", b, t }')
set -- $bare
ok "user stacks of short-lived processes are not bare addresses ($1 of $2 ns are)" \
	test $(( ${1:-1} * 20 )) -le "${2:-0}"
[ $(( ${1:-1} * 20 )) -le "${2:-0}" ] || printf '%s\n' "$out" | grep -E "$bare_re" | head -n 10 | sed 's/^/#   /'
# every stack through the spin function has main right above it (the
# function may be the leaf, or call now() -> clock_gettime -> the vDSO,
# whose first call page-faults into the kernel)
spin=$(printf '%s\n' "$out" | sum '(^|;)main;short_lived_spin_qz( |;)')
all=$(printf '%s\n' "$out" | sum 'short_lived_spin_qz')
ok "the spin function's samples have main as caller ($spin of $all)" \
	test "$all" -gt 0 -a "$((100 * spin))" -ge "$((95 * all))"
[ "$((100 * spin))" -ge "$((95 * all))" ] || printf '%s\n' "$out" | grep short_lived_spin_qz |
	grep -Ev '(^|;)main;short_lived_spin_qz( |;)' | head -n 10 | sed 's/^/#   /' 

# ---- a binary replaced while it runs (an upgrade): its symbols come from
# the file it mapped, not from the new one at its path.  The program sleeps
# first, so that the replacement comes after its mmap record and before
# its first sample is symbolized: it says it runs (a file), and the test
# replaces it then (a fixed delay raced with a slow start of record). ----
cat > "$T/upg.c" <<'CEOF'
#include <fcntl.h>
#include <unistd.h>
volatile unsigned long upg_sink;
__attribute__((noinline)) void upgraded_spin_qz(void) { for (unsigned long i = 0; i < 2000000000UL; i++) upg_sink += i; }
int main(int argc, char **argv) {
	if (argc > 1)
		close(open(argv[1], O_CREAT | O_WRONLY, 0644));
	usleep(800000);
	upgraded_spin_qz();
	return 0;
}
CEOF
cc -O1 -g -o "$T/upg_qz" "$T/upg.c" && cc -O2 -o "$T/upg_new" "$R/short.c" 2>/dev/null
rec -q -F 199 -d 3s -f folded -o "$T/upg.folded" -- "$T/upg_qz" "$T/upg.running" &
pu=$!
i=0
while [ ! -f "$T/upg.running" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
mv "$T/upg_new" "$T/upg_qz"
wait "$pu"
like "$(cat "$T/upg.folded" 2>/dev/null)" '(^|;)main;upgraded_spin_qz [0-9]+$' \
	"a binary replaced while it runs: symbolized from the file it mapped"
unlike "$(cat "$T/upg.folded" 2>/dev/null)" 'short_lived_spin_qz' "not from the new file at its path"

# ---- SIGINT and SIGTERM stop the recording and write what was collected ----
"$T/work" 5 & pw=$!
bg="$bg $pw"
# (199 Hz: enough of the workload's samples on a loaded machine too)
"$CPROF" record --all -F 199 -o "$T/int.pb.gz" 2>"$T/int.err" & r1=$!
"$CPROF" record --all -F 199 -f folded -o "$T/term.folded" 2>"$T/term.err" & r2=$!
# two seconds of sampling, counted from when both sample (a loaded machine
# may take a while to load the BPF program)
i=0
while ! { grep -q sampling "$T/int.err" && grep -q sampling "$T/term.err"; } 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
sleep 2
kill -INT "$r1" 2>/dev/null
kill -TERM "$r2" 2>/dev/null
ok "SIGINT stops record" wait_gone "$r1"
wait "$r1"; rc=$?
is "$rc" 0 "and it exits 0"
ok "SIGTERM stops record" wait_gone "$r2"
wait "$r2"; rc=$?
is "$rc" 0 "and it exits 0"
like "$(cat "$T/int.err")" '^cprof record: [0-9]+ samples in' "after SIGINT the summary is printed"
# (folded, not JSON: jq refuses JSON nested deeper than 256, and a stack of
# 128 frames somewhere on the machine makes the call tree that deep)
run folded -i "$T/int.pb.gz"
is "$rc" 0 "after SIGINT the pprof file is written and valid"
n=$(printf '%s\n' "$out" | sum '')
ok "and it has samples ($n)" test "${n:-0}" -gt 0
[ "${n:-0}" -gt 0 ] || sed 's/^/#   int.err: /' "$T/int.err"
ok "after SIGTERM the folded file is written" test -s "$T/term.folded"
like "$(cat "$T/term.folded")" ';hot_a [0-9]+$' "and has the workload's stacks"
wait "$pw"

# ---- JIT code announced in /tmp/perf-PID.map ----
"$T/jit_qz" 3 & pj=$!
bg="$bg $pj"
jitmap=/tmp/perf-$pj.map
sleep 0.3
ok "the JIT workload wrote its perf map" test -s "$jitmap"
run rec -F 499 -p "$pj" -d 2s -o "$T/jit.pb.gz"
exits0 "record -p of a JIT process exits 0"
run folded -i "$T/jit.pb.gz"
j=$(printf '%s\n' "$out" | sum '(^|;)jit_hot_loop [0-9]+$')
t=$(printf '%s\n' "$out" | sum '.')
ok "JIT frames get their names from the perf map ($j of $t samples in jit_hot_loop)" \
	test "$t" -gt 0 -a "$((100 * j))" -ge "$((80 * t))"
wait "$pj"
rm -f "$jitmap"

# ---- the caches: the kernel's symbols, and the kernel types the BPF program reads ----
# (kept across runs so that a run's start-up reads neither /proc/kallsyms nor the kernel's whole BTF)
C="$T/cache"
cached() { # cached NAME ARGS: record ARGS with the caches in $C; the hot samples reaching main in $T/NAME.pb.gz
	run env XDG_CACHE_HOME="$C" timeout -s KILL 60 "$CPROF" record -q -F 499 -o "$T/$1.pb.gz" -- "$T/work" 1
	f=$(folded -i "$T/$1.pb.gz" 2>/dev/null)
	hot=$(printf '%s\n' "$f" | sum ';(hot_a|hot_b|inl_spin) [0-9]+$')
	hot_main=$(printf '%s\n' "$f" | sum '(^|;)main;run;(hot_a|hot_b|hot_inline;inl_spin|inl_spin) [0-9]+$')
}
cached c1
exits0 "with an empty cache directory: exit 0"
btf=$(ls "$C"/cprof/btf-*.btf 2>/dev/null | head -n 1)
ok "the kernel types the program reads are cached in \$XDG_CACHE_HOME/cprof (${btf##*/})" test -s "$btf"
ok "and the kernel's symbols" test -s "$C/cprof/kallsyms"
is "$(stat -c %a "$C/cprof")" 700 "in a directory only its owner can read"
ok "a few types, not the kernel's 5 MB ($(wc -c <"$btf") bytes)" test "$(wc -c <"$btf")" -lt 65536
cached c2
ok "a second run with them: stacks reach main ($hot_main of $hot hot samples)" \
	test "$hot" -gt 0 -a "$((100 * hot_main))" -ge "$((98 * hot))"
# damaged caches: the run still works, with the kernel's own data, and makes them again
printf 'not BTF at all' >"$btf"
printf 'not kallsyms' >"$C/cprof/kallsyms"
cached c3
exits0 "damaged cache files: exit 0"
ok "the stacks still reach main ($hot_main of $hot hot samples)" \
	test "$hot" -gt 0 -a "$((100 * hot_main))" -ge "$((98 * hot))"
ok "the kernel's symbols are cached again" test "$(wc -c <"$C/cprof/kallsyms")" -gt 1000
ok "the damaged cut BTF is gone" test ! -e "$btf"
cached c3b
ok "and the next run makes it again" test "$(wc -c <"$btf" 2>/dev/null || echo 0)" -gt 100
chmod 755 "$C/cprof"
rm -f "$btf"
cached c4
exits0 "a cache directory others can read: exit 0"
ok "and it is not used (nothing written there)" test ! -e "$btf"

# ---- errors ----
chmod 711 "$T"
mkdir -m 777 "$T/pub"
run timeout -s KILL 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$CPROF" record --all -d 1s -o "$T/pub/x.pb.gz"
is "$rc" 1 "without privileges: exit 1"
one_line "stderr is one line starting with cprof record:"
like "$err" 'root' "it says root is needed"
like "$err" 'CAP_BPF' "or CAP_BPF"
like "$err" 'CAP_PERFMON' "and CAP_PERFMON"
ok "nothing is written" test ! -e "$T/pub/x.pb.gz"
run rec -p 2147483646 -d 1s -o "$T/e1.pb.gz"
is "$rc" 1 "-p of a process that does not exist: exit 1"
one_line "stderr is one line starting with cprof record:"
like "$err" '2147483646' "and it names the pid"
# --max-memory: a budget far below what the binaries in use need warns once
# and loses nothing (the working set stays; idle binaries would be closed)
run rec -F 499 --max-memory 1M --log-level debug -o "$T/mm.pb.gz" -- "$T/work" 1
exits0 "--max-memory 1M: record -- CMD exits 0"
like "$err" 'over the memory budget of 1 MB' "it says once that the budget is too small"
is "$(printf '%s\n' "$err" | grep -c 'over the memory budget')" 1 "only once"
f=$(folded -i "$T/mm.pb.gz")
total=$(printf '%s\n' "$f" | sum '.')
hot_main=$(printf '%s\n' "$f" | sum '(^|;)main;run;(hot_a|hot_b|hot_inline;inl_spin|inl_spin) [0-9]+$')
hot=$(printf '%s\n' "$f" | sum ';(hot_a|hot_b|inl_spin) [0-9]+$')
ok "the stacks are as complete and named as without the budget ($hot_main of $hot hot samples reach main)" \
	test "$hot" -gt 0 -a "$((100 * hot_main))" -ge "$((98 * hot))"
ok "with file:line" sh -c "'$CPROF' query -i '$T/mm.pb.gz' -f json | grep -q 'work\.c'"
# into a store, the dictionary the writer keeps is bounded too (a sixteenth of the budget, 64 KB
# here): 300 short gzip processes pass it, so it is forgotten and written again, and the store
# holds repeated rows; what a query gives is still every sample, each stack once
run rec -F 499 --max-memory 1M --flush-interval 1s --data "$T/mmstore" -- \
	sh -c 'for i in $(seq 300); do head -c 300000 /dev/urandom | gzip -1 > /dev/null; done'
exits0 "--max-memory 1M into a store, processes coming and going: exit 0"
n=$(printf '%s\n' "$err" | sed -n 's/.* \([0-9]*\) samples in .*/\1/p')
# the days' strings, read from their chunks as docs/STORE.md describes them (zlib, uvarint lengths)
rows_repeat() {
	python3 -c 'import sqlite3, sys, zlib
seen, rep = set(), 0
for f in sys.argv[1:]:
    for (data,) in sqlite3.connect(f).execute("SELECT data FROM chunks WHERE kind = ? ORDER BY id", ("strings",)):
        b, i = zlib.decompress(data), 0
        while i < len(b):
            n = s = 0
            while True:
                c = b[i]; i += 1; n |= (c & 0x7f) << s; s += 7
                if c < 0x80: break
            w = b[i:i + n]; i += n
            rep += w in seen; seen.add(w)
print(rep)' "$T"/mmstore/days/*.db
}
ok "the dictionary was forgotten and written again (rows repeat)" test "$(rows_repeat)" -gt 0
run "$CPROF" query --data "$T/mmstore" -f folded cpu
is "$(printf '%s\n' "$out" | sum '.')" "$((n * 2004008))" "the store holds every sample recorded ($n, 2004008 ns each at 499 Hz)"
is "$(printf '%s\n' "$out" | awk '{ $NF = ""; print }' | sort | uniq -d)" "" "and each stack once"
like "$out" '^gzip\+0x[0-9a-f]+;__libc_start_main;__libc_start_call_main;gzip\+0x' "gzip's stacks are whole (Debian's gzip is stripped)"
run rec --all --max-memory 100K -d 1s
is "$rc" 2 "--max-memory below 1M: usage error"
one_line "stderr is one line starting with cprof record:"
run rec --all --max-memory lots -d 1s
is "$rc" 2 "--max-memory that is not a size: usage error"
out=$("$CPROF" record --all --print-config 2>/dev/null)
like "$out" 'max-memory: 64M' "--print-config shows the default budget"
run rec -d 1s
is "$rc" 2 "no target: usage error"
one_line "stderr is one line starting with cprof record:"
run rec --all -F 0 -d 1s
is "$rc" 2 "-F 0: usage error"
one_line "stderr is one line starting with cprof record:"
run rec --all -d 5x
is "$rc" 2 "a bad --duration: usage error"
one_line "stderr is one line starting with cprof record:"
run rec --all -d -1s
is "$rc" 2 "a negative --duration: usage error"
run rec --cgroup /nonexistent -d 1s -o "$T/e2.pb.gz"
is "$rc" 1 "--cgroup of a missing directory: exit 1"
one_line "stderr is one line starting with cprof record:"
like "$err" '/nonexistent' "and it names the path"
run rec -o "$T/e3.pb.gz" -- /nonexistent/cmd
is "$rc" 1 "-- a command that does not exist: exit 1"
one_line "stderr is one line starting with cprof record:"
like "$err" '/nonexistent/cmd' "and it names the command"
run rec --all -d 1s -o /nonexistent-dir/x.pb.gz
is "$rc" 1 "-o in a missing directory: exit 1"
one_line "stderr is one line starting with cprof record:"
ok "nothing is written" test ! -e /nonexistent-dir/x.pb.gz
for e in e1 e2 e3; do
	ok "no file after a failure ($e)" test ! -e "$T/$e.pb.gz"
done
done_testing
