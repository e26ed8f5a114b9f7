# cprof record's Java frames (#52), with no agent and no flag on the JVM: Debian 12's OpenJDK 17.
# The workload (tests/fixtures/record/Hot.java) spends its time in Hot.spinA and Hot.spinB, 3:1,
# under Hot.outer, for a given CPU time; C2 compiles both within milliseconds, so that their
# frames are compiled code in the code cache (no frame pointer, no CFI), which only the nmethods'
# frame sizes unwind.  record -- CMD, -p PID of a JVM already running, --all into the store with
# the JVM started while recording, and top.  Needs root (CI runs as root) and a JDK (javac).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
JAVA=${JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
JAVAC=${JAVAC:-/usr/lib/jvm/java-17-openjdk-amd64/bin/javac}
bg=""
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
run "$JAVAC" -d "$T/cls" "$FIXTURES/record/Hot.java" "$FIXTURES/record/Inl.java" "$FIXTURES/record/Nap.java"
is "$rc" 0 "Debian's OpenJDK 17 compiles the workload"
v=$("$JAVA" -version 2>&1 | head -n 1)
diag "$v"

rec() { timeout -s KILL 300 "$CPROF" record "$@"; }

# check HOW FOLDED: the stacks of one JVM (in samples)
check() {
	# whole: from the thread's start through the JVM's C++ and its call stub to main, outer and the method
	hot_pair "$1" "$2" ';Hot\.spinA \(Hot\.java\)( |;)' ';Hot\.spinB \(Hot\.java\)( |;)' \
		'^__clone3;start_thread;.*;JavaMain;.*;Hot\.main \(Hot\.java\);Hot\.outer \(Hot\.java\);Hot\.spin[AB] '
}

# ---- record -- java ----
run rec -F 999 -o "$T/cmd.pb.gz" -- "$JAVA" -cp "$T/cls" Hot 4
is "$rc" 0 "record -- java exits 0"
check "record -- java" "$("$CPROF" query -t samples -f folded -i "$T/cmd.pb.gz")"
run "$CPROF" query -t samples -f json -i "$T/cmd.pb.gz"
like "$out" '"name":"Hot\.spinA \(Hot\.java\)","file":"Hot\.java"' "a Java method's file is its class's source file"
run env HOME="$T" go tool pprof -top "$T/cmd.pb.gz"
like "$out" ' Hot\.spinA \(Hot\.java\)$' "go tool pprof reads the profile, Hot.spinA in it"
# lines: of the bci the compiled frame's debug info gives (the loop, in spinA's body)
la=$(grep -n -m1 'static long spinA' "$FIXTURES/record/Hot.java" | cut -d: -f1)
run env HOME="$T" go tool pprof -lines -top "$T/cmd.pb.gz"
line=$(printf '%s\n' "$out" | sed -n 's/.* Hot\.spinA (Hot\.java) Hot\.java:\([0-9]*\)$/\1/p' | head -n 1)
ok "Hot.spinA's busiest line is in its body (Hot.java:${line:-none}, the method at $la-$((la + 5)))" \
	test -n "$line" -a "${line:-0}" -gt "$la" -a "${line:-0}" -le $((la + 5))

# ---- a JVM already running: record -p PID ----
record_p p "$JAVA" -cp "$T/cls" Hot 4
is "$?" 0 "record -p PID of java exits 0 when the JVM does"
check "record -p" "$("$CPROF" query -t samples -f folded -i "$T/p.pb.gz")"

# ---- the whole system into the store, the JVM started while recording ----
record_all all "$JAVA" -cp "$T/cls" Hot 4
is "$?" 0 "record --all, stopped by SIGTERM, exits 0"
# (the store's CPU time in samples: 2004008 ns each at 499 Hz)
check "record --all" "$("$CPROF" query -f folded --data "$T/all" "cpu{pid=\"$PID\"}" |
	in_samples 2004008)"

# ---- top ----
run timeout -s KILL 120 "$CPROF" top --stdio -n 1 -d 3 -s total --limit 50 -- "$JAVA" -cp "$T/cls" Hot 3
is "$rc" 0 "top -- java exits 0"
like "$out" ' Hot\.spinA \(Hot\.java\) +\[java\] ' "top lists Hot.spinA, in the [java] mapping"

# ---- with --no-runtimes the compiled frames end the stack, as before ----
run rec -F 499 --no-runtimes -o "$T/no.pb.gz" -- "$JAVA" -cp "$T/cls" Hot 1
f=$("$CPROF" query -t samples -f folded -i "$T/no.pb.gz")
is "$(printf '%s\n' "$f" | sum 'Hot\.spin')" 0 "with --no-runtimes no Java method is named"

# ---- methods C2 inlined: their own frames, from the nmethod's debug info ----
# Inl.mid is compiled into Inl.work, Inl.leaf keeps its frame (dontinline); the JVM's own
# -XX:+PrintInlining is the reference for what was inlined.  Without the scopes the stack
# would go from work straight to leaf.
run rec -F 499 -o "$T/inl.pb.gz" -- "$JAVA" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Inl.leaf \
	-XX:+UnlockDiagnosticVMOptions -XX:+PrintInlining -cp "$T/cls" Inl 2
is "$rc" 0 "record -- java Inl exits 0"
like "$out" 'Inl::mid \([0-9]+ bytes\) +inline' "the JVM says it inlined Inl.mid (-XX:+PrintInlining)"
f=$("$CPROF" query -t samples -f folded -i "$T/inl.pb.gz")
leaf=$(printf '%s\n' "$f" | sum ';Inl\.leaf \(Inl\.java\)( |;)')
via=$(printf '%s\n' "$f" | sum ';Inl\.work \(Inl\.java\);Inl\.mid \(Inl\.java\);Inl\.leaf \(Inl\.java\)( |;)')
ok "the inlined Inl.mid is between Inl.work and Inl.leaf in >= 95% of leaf's samples ($via of $leaf)" \
	test "$leaf" -ge 100 -a $((100 * via)) -ge $((95 * leaf))
# its line: the call to leaf in mid's body (the bci its scope gives), and work's the call to mid
lm=$(grep -n -m1 'return leaf(x)' "$FIXTURES/record/Inl.java" | cut -d: -f1)
lw=$(grep -n -m1 'x = mid(x)' "$FIXTURES/record/Inl.java" | cut -d: -f1)
run env HOME="$T" go tool pprof -lines -traces "$T/inl.pb.gz"
like "$out" "Inl\.mid \(Inl\.java\) Inl\.java:$lm
 +Inl\.work \(Inl\.java\) Inl\.java:$lw" "the inlined frame's line is its call (Inl.java:$lm), its caller's its own (Inl.java:$lw)"

# ---- off-CPU: a wait longer than the flush interval keeps its Java frames ----
# Their names come from the stack copy when the thread leaves the CPU; the wait is added when it
# ends, two flushes later, and must not be made again from bare pcs (JVM_Sleep alone).
REC_ARGS="--off-cpu --flush-interval 1s" record_all nap "$JAVA" -cp "$T/cls" Nap 3 2500
is "$?" 0 "record --all --off-cpu --flush-interval 1s exits 0"
REC_ARGS=
f=$("$CPROF" query -f folded --data "$T/nap" "offcpu{pid=\"$PID\"}")
slept=$(printf '%s\n' "$f" | sum ';JVM_Sleep( |;)')
named=$(printf '%s\n' "$f" | sum ';Nap\.main \(Nap\.java\);Nap\.nap \(Nap\.java\);java\.lang\.Thread\.sleep \(Thread\.java\);JVM_Sleep( |;)')
# (3 waits of 2.5 s: 7.5 s of off-CPU time in JVM_Sleep)
ok "the 2.5 s sleeps keep Nap.main, Nap.nap and Thread.sleep over JVM_Sleep across 1 s flushes ($named of $slept ns)" \
	test "$slept" -ge 7000000000 -a "$named" -ge $((slept * 99 / 100))
# top refreshes every second: each refresh is such a flush
run timeout -s KILL 120 "$CPROF" top --stdio --off-cpu -n 10 -d 1 -s total --limit 300 -- "$JAVA" -cp "$T/cls" Nap 2 2500
is "$rc" 0 "top --off-cpu -- java exits 0"
like "$out" ' Nap\.nap \(Nap\.java\) +\[java\] ' "top --off-cpu lists Nap.nap, its sleeps longer than a refresh"

done_testing
