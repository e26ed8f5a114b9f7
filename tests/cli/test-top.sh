# cprof top with the real BPF sampler against a workload with known shares
# (tests/fixtures/record/work.c: hot_a 3 parts, hot_b 1 part, both called by
# run): --stdio tables of every view, filters, sorting, frames, -- CMD and
# --all; history from the store and from a server; then the screen, driven
# under tmux (send-keys, capture-pane): the workload on top, help, views,
# zoom, callers, filter, pause, kernel frames, resizing, a too small
# terminal, quitting with the terminal restored, and history's time windows.
# Needs root (CI runs as root).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof top samples with eBPF, which needs root or CAP_BPF+CAP_PERFMON" false
	done_testing; exit
fi
R="$FIXTURES/record"
bg=""                        # background processes, killed at exit
TM="tmux -L cproftest$$ -f /dev/null"
CG=""                        # a cgroup made for the --cgroup test
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; $TM kill-server 2>/dev/null; [ -z "$CG" ] || rmdir "$CG" 2>/dev/null; rm -rf "$T"' EXIT

cc -O2 -g -fomit-frame-pointer -o "$T/topwork_qz" "$R/work.c" -lz 2>"$T/cc.err" || sed 's/^/# /' "$T/cc.err"
ok "builds the workload (cc -O2 -g -fomit-frame-pointer)" test -x "$T/topwork_qz"
[ -x "$T/topwork_qz" ] || { done_testing; exit; }

# top ARGS: cprof top, killed if it hangs (a test must end)
top_() { timeout -s KILL 60 "$CPROF" top "$@"; }
exits0() {
	is "$rc" 0 "$1"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 15 | sed 's/^/#   stderr: /'
}
# one_line DESCRIPTION: $err is one line "cprof top: ..." (plus the -h hint)
one_line() {
	printf '%s\n' "$err" | grep -v "^Try 'cprof top -h' for more information\.$" > "$T/.lines"
	if [ "$(wc -l < "$T/.lines")" = 1 ] && grep -q '^cprof top: ' "$T/.lines"; then _result 0 "$1"; else
		_result 1 "$1"; printf '%s\n' "$err" | sed 's/^/#   stderr: /'; fi
}
# rows: the table rows of the last block of --stdio output in $out
rows() { printf '%s\n' "$out" | awk '/^ *(SELF%|CPU%|SHARE%)/ { n = 0; delete r; h = 1; next } h && NF && !/^\(/ { r[++n] = $0 } END { for (i = 1; i <= n; i++) print r[i] }'; }
# col N: field N of the first row whose function is $1
self_of() { rows | awk -v f="$1" '$4 == f { sub("%", "", $1); print $1; exit }'; }

"$T/topwork_qz" 600 &
W=$!
bg="$bg $W"
sleep 0.3

# ---- --stdio, live ----
run top_ --stdio -n 3 -d 0.7 -F 499 -p "$W" --limit 0 # 499 Hz: ~5x the samples of 99 Hz, so the 3:1 ratio below is not at the mercy of a dozen hot_b samples
exits0 "top --stdio -n 3 -p PID exits 0"
is "$(printf '%s\n' "$out" | grep -c '^cprof top - pid ')" 3 "-n 3: three tables, each with its header"
like "$out" 'samples/s [1-9][0-9]*   CPUs [0-9]+   processes 1 ' "the header has samples/s, CPUs and the one process"
like "$out" 'dropped [0-9]+' "and the dropped samples"
# (zlib's code has no symbols: one row [libz...], which may outweigh hot_a)
first=$(rows | awk '$5 == "topwork_qz" { print $4; exit }')
is "$first" hot_a "of the workload's functions, the one with the most self comes first: hot_a"
a=$(self_of hot_a); b=$(self_of hot_b)
ok "hot_b is in the table too" test -n "$b"
ok "hot_a's self% ($a) is about 3 times hot_b's ($b): between 1.8 and 5" \
	awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { exit !(b > 0 && a / b > 1.8 && a / b < 5) }'
# (run's own code is its loop and the inlined now(): at 499 Hz a sample or two
# may land there, so its self is "under 1%", not "0.00%")
like "$(rows | awk '$4 == "run"')" '^ +0\.[0-9]+% +[0-9.]+% .* run +topwork_qz +topwork_qz\[' \
	"run has (almost) no self but a total, with its binary and process[pid]"
run_total=$(rows | awk '$4 == "run" { sub("%", "", $2); print $2 }')
ok "run's total% ($run_total) is at least hot_a's self% ($a)" \
	awk -v r="${run_total:-0}" -v a="${a:-0}" 'BEGIN { exit !(r >= a - 0.01) }'
like "$(rows | awk '$4 == "main"')" '^ +0\.00% +(9[0-9]|100)\.[0-9]+%' "main has (nearly) all of the total"

run top_ --stdio -n 1 -d 1 -p "$W" --view processes
exits0 "--view processes exits 0"
like "$(rows | head -n 1)" "^ *[0-9.]+% +[0-9]+ +$W +1  topwork_qz\$" "the process with its pid, threads and comm"
run top_ --stdio -n 1 -d 1 -p "$W" --view threads
like "$(rows | head -n 1)" "^ *[0-9.]+% +[0-9]+ +$W +$W  topwork_qz +topwork_qz\$" "--view threads: the thread (tid = pid)"
run top_ --stdio -n 1 -d 1 -p "$W" --view callers --function hot_a
exits0 "--view callers --function hot_a exits 0"
like "$out" 'function: hot_a \(topwork_qz\)' "names the function"
# (mostly self: the rest is kernel work under it, interrupts and faults)
like "$(rows | head -n 1)" '^100\.00% +[0-9]+  hot_a  \(self ([6-9][0-9]|100)\.[0-9]+%\)' "the function first, with its self share"
like "$(rows)" '  <- run +topwork_qz' "its caller run"
# (499 Hz for 2 s: hot_b has a sixth of run's time, a few samples in 1 s at 99 Hz; under ASan it
# once had none)
run top_ --stdio -n 1 -d 2 -F 499 -p "$W" --view callers --function run
like "$(rows)" '  -> hot_a ' "run's callees: hot_a"
like "$(rows)" '  -> hot_b ' "and hot_b"
like "$(rows)" '  <- main ' "and its caller main"

# (499 Hz for 2 s, as above: at 99 Hz for 1 s under ASan on a loaded CI machine hot_b had no sample)
run top_ --stdio -n 1 -d 2 -F 499 -p "$W" --filter 'hot_b'
is "$(rows | awk '{ print $4 }' | sort -u | tr '\n' ' ')" "hot_b " "--filter hot_b: only hot_b's row"
run top_ --stdio -n 1 -d 1 -p "$W" --filter 'HOT_[AB]'
is "$(rows | wc -l)" 0 "--filter with a capital is case-sensitive: HOT_ matches nothing"
like "$out" '\(no samples match the filter\)' "and says so"
run top_ --stdio -n 1 -d 1 -p "$W" -s name --limit 0
names=$(rows | awk '{ print $4 }')
is "$names" "$(printf '%s\n' "$names" | LC_ALL=C sort)" "-s name: rows in name order"
run top_ --stdio -n 1 -d 1 -p "$W" -s total --limit 3
is "$(rows | head -n 1 | awk '{ print $2 }')" "100.00%" "-s total: a function on every stack first"

# kernel and user frames: zlib's compress2 page-faults, the loop does not; --all has kernel work
run top_ --stdio -n 2 -d 1 --no-kernel --limit 0
exits0 "--all --no-kernel exits 0"
is "$(rows | awk '$5 == "[kernel]" && $4 != "[kernel]"' | wc -l)" 0 \
	"--no-kernel: no kernel function in the table (a kernel thread's samples count as [kernel])"
# (by name: another test's copy of the same binary, same build id, may run
# too, and one binary's rows take the path seen first)
like "$(rows)" '  hot_a ' "--all (the default) sees the workload"
run top_ --stdio -n 2 -d 1 --no-user --limit 0
exits0 "--no-user exits 0"
is "$(rows | awk '$5 != "[kernel]" && $5 != "[user]"' | wc -l)" 0 "--no-user: every row is a kernel function (or [user])"
like "$(rows)" '\[user\] +\[user\]' "samples without kernel frames count as [user]"

# -- CMD: runs it, stops when it exits
run top_ --stdio -d 0.5 -F 499 --limit 5 -- "$T/topwork_qz" 2 # 499 Hz: enough samples in its last table for the order of its rows
exits0 "top --stdio -- CMD exits 0 when the command is done"
like "$(rows | head -n 1)" ' hot_a ' "and shows the command's hot_a"
n=$(printf '%s\n' "$out" | grep -c '^cprof top - ')
ok "it stopped with the command: $n tables in 2 s at 0.5 s" test "$n" -ge 2 -a "$n" -le 6

# --cgroup: only the tasks of a cgroup v2 directory
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$cg2" ] && mkdir "$cg2/cprof-top-test-$$" 2>/dev/null; then
	CG="$cg2/cprof-top-test-$$"
	"$T/topwork_qz" 600 &
	W2=$!
	bg="$bg $W2"
	echo "$W2" > "$CG/cgroup.procs"
	run top_ --stdio -n 2 -d 0.7 --cgroup "$CG" --view processes --limit 0
	exits0 "--cgroup DIR exits 0"
	is "$(rows | awk '{ print $3 }' | sort -u | tr '\n' ' ')" "$W2 " "--cgroup: only the process in the cgroup"
	# (499 Hz, and hot_a first among the workload's own functions: a loaded run had 45 samples at 99 Hz,
	# a third of them in the kernel's pvm_irq_enable)
	run top_ --stdio -n 1 -d 1 -F 499 --cgroup "$CG" --limit 0
	is "$(rows | awk '$5 == "topwork_qz" { print $4; exit }')" hot_a "and its functions"
	kill "$W2" 2>/dev/null; wait "$W2" 2>/dev/null
	rmdir "$CG" 2>/dev/null && CG=""
else
	ok "a cgroup v2 hierarchy is mounted and writable (${cg2:-none}) for the --cgroup test" false
fi

# ---- errors ----
run "$CPROF" top --stdio -p 2147483646
is "$rc" 1 "a pid that does not exist: exit 1"
one_line "one line: no process"
like "$err" 'no process 2147483646' "that names the pid"
run "$CPROF" top --stdio -- /nonexistent/prog
is "$rc" 1 "-- CMD that cannot run: exit 1"
like "$err" "cannot run /nonexistent/prog: No such file" "says why"
run "$CPROF" top --stdio --cgroup /nonexistent/cg
is "$rc" 1 "--cgroup that does not exist: exit 1"
one_line "one line"

# ---- history: the store and a server ----
# History's windows are aligned to multiples of 10 s since the epoch, and top
# opens at the newest window with data: a 3 s run that crossed a boundary left
# that window a sliver of the run (1 sample, and not in hot_a). Start the run
# at the start of a window, so that it has the whole run (7 s left for start-up).
while [ "$(($(date +%s) % 10))" != 0 ]; do sleep 0.1; done
run timeout -s KILL 60 "$CPROF" record -q -F 199 --flush-interval 1s --data "$T/s" -- \
	sh -c "echo \$\$ > '$T/s.pid'; exec '$T/topwork_qz' 3"
exits0 "record -- work 3 into a store"
sp=$(cat "$T/s.pid")
run top_ --from-store --data "$T/s" --since 5m --window 10s --stdio --limit 5
exits0 "top --from-store --stdio exits 0"
like "$out" 'history of cpu: [0-9-]+ [0-9:]+ - [0-9:]+ \(window [0-9]+ of 31, 10s each\)' \
	"the header names the window (5m in 10 s windows on the 10 s grid: 31, the last holding now)"
like "$out" 'over time: \|[ _.:=+*#-]*[#][ _.:=+*#-]*\|' "a sparkline of the totals over time"
like "$out" 'total [0-9.]+m?s   processes 1   threads 1' "totals of the window (CPU time)"
is "$(rows | awk '$5 == "topwork_qz" { print $4; exit }')" hot_a "hot_a on top in the stored window"
like "$(rows | head -n 1)" " topwork_qz\\[$sp\\]\$" "with its process: the series' comm, the samples' pid (comm[pid])"
# (the program's series: a sample of the shell before its exec, a few ms, is the shell's series when a
# flush came between, and its thread's name is sh in the same flush)
run top_ --from-store --data "$T/s" --since 5m --stdio --view processes --type 'cpu{comm="topwork_qz"}'
like "$(rows | head -n 1)" "^ *[0-9.]+% +[0-9.]+m?s +$sp +1  topwork_qz\$" \
	"--from-store --view processes: the process by its pid (from its samples), threads and comm"
run top_ --from-store --data "$T/s" --since 5m --stdio --view threads --type 'cpu{comm="topwork_qz"}'
# (its thread ran a sample or two as cprof, then sh, before the exec under load: it goes by the name
# most of its samples carry)
like "$(rows | head -n 1)" "^ *[0-9.]+% +[0-9.]+m?s +$sp +$sp  topwork_qz +topwork_qz\$" \
	"--view threads: its thread (tid = pid), by the name of most of its samples"
run top_ --from-store --data "$T/s" --stdio --type 'memory'
is "$rc" 1 "--type matching no stored series: exit 1"
one_line "one line"
# a filter whose regex backtracks without end on these names ((a+)+$ on a...ab) hits lib/regex's limits:
# it says so and matches nothing, in well under the minute top_ allows (it took minutes unbounded)
awk 'BEGIN { for (i = 0; i < 300; i++) { s = ""; for (k = 0; k < 28; k++) s = s "a"; printf "main;%sb_%d %d\n", s, i, i + 1 } }' \
	>"$T/long.folded"
"$CPROF" import --data "$T/costly" --name cpu --time now "$T/long.folded" >/dev/null
run top_ --from-store --data "$T/costly" --since 5m --stdio --filter '(a+)+$'
exits0 "--filter with a regex too costly: exit 0"
like "$out" '^\(the filter is too costly to match: it matches nothing\)$' "and says the filter is too costly"
run top_ --from-store --data "$T/costly" --since 5m --stdio --filter 'b_17$'
like "$(rows)" '^ +[0-9.]+% +[0-9.]+% +18 +a+b_17 *$' "a plain filter on the same names still matches (b_17)"
# -p with several pids: the series of every one of them (pid 4003's left out), locally and from a server
# (the selector is built with matchers, and sent as its text)
# (one time for the three, so that they are in one window)
now=$(date +%s)
for i in 1 2 3; do
	printf 'main;work_%s %s\n' "$i" "$((40 - 12 * i))" >"$T/pid$i.folded" # 28, 16, 4 samples
	"$CPROF" import --data "$T/pids" --name cpu --time "$now" -l pid=$((4000 + i)) -l comm=w$i "$T/pid$i.folded" >/dev/null
done
run top_ --from-store --data "$T/pids" --since 5m -p 4001,4002 --stdio --view processes
exits0 "--from-store -p PID,PID exits 0"
is "$(rows | awk '{ print $3 "=" $2 }' | sort | tr '\n' ' ')" "4001=28 4002=16 " \
	"-p 4001,4002: both processes with their samples, not 4003"
like "$out" 'samples 44   samples/s [0-9.]+   processes 2 ' "the window's total counts both pids' samples (28 + 16)"
run top_ --from-store --data "$T/nonexistent" --stdio
is "$rc" 1 "--from-store on a missing store: exit 1"
one_line "one line"

"$CPROF" serve --data "$T/s" --listen 127.0.0.1:0 >"$T/serve.out" 2>&1 &
S=$!
bg="$bg $S"
i=0
while ! grep -q 'listening on' "$T/serve.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/serve.out" | head -n 1)
run top_ --remote "$URL" --since 5m --window 10s --stdio --limit 5
exits0 "top --remote URL --stdio exits 0"
is "$(rows | awk '$5 == "topwork_qz" { print $4; exit }')" hot_a "the server's history: hot_a on top"
kill "$S" 2>/dev/null; wait "$S" 2>/dev/null
"$CPROF" serve --data "$T/pids" --listen 127.0.0.1:0 >"$T/serve2.out" 2>&1 &
S=$!
bg="$bg $S"
i=0
while ! grep -q 'listening on' "$T/serve2.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/serve2.out" | head -n 1)
run top_ --remote "$URL" --since 5m --stdio -p 4001,4003 --type 'cpu{comm!="w2"}'
exits0 "top --remote URL -p PID,PID --type SELECTOR exits 0"
is "$(rows | awk '$4 ~ /^work_/ { print $4 "=" $3 }' | sort | tr '\n' ' ')" "work_1=28 work_3=4 " \
	"the server's history of both pids: work_1 and work_3 with their samples"
kill "$S" 2>/dev/null; wait "$S" 2>/dev/null

# ---- the screen, under tmux ----
if ! command -v tmux >/dev/null; then
	ok "tmux is installed (tools/setup.sh installs it)" false
	done_testing; exit
fi
SES=top # the tmux session the helpers below look at
screen() { $TM capture-pane -p -t "$SES" 2>/dev/null; }
# wait_screen REGEX [TENTHS]: until the screen matches (default 10 s)
wait_screen() {
	i=0
	while [ $i -lt "${2:-100}" ]; do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
# row N: line N of the table (1 = the first row)
row() { screen | sed -n "$((5 + $1))p"; }
# first_fn: the first function of the workload's binary in the table
first_fn() { screen | sed -n '6,$p' | awk '$5 == "topwork_qz" { print $4; exit }'; }
# wait_row1 NAME: until NAME is the workload's first function (the shares
# settle as samples come)
wait_row1() {
	i=0
	while [ $i -lt 150 ]; do
		[ "$(first_fn)" = "$1" ] && return 0
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
keys() { $TM send-keys -t "$SES" "$@"; }

$TM new-session -d -s top -x 120 -y 30 \
	"'$CPROF' top -p $W -F 199 -d 0.5; echo \"exit=\$?\" > '$T/tui.rc'; sleep 60"
ok "the screen comes up showing hot_a" wait_screen '^ +[0-9.]+% +[0-9.]+% +[0-9]+  hot_a '
ok "and hot_a comes to be the workload's first row" wait_row1 hot_a
like "$(screen | sed -n 1p)" '^cprof top - pid [0-9]+ at 199 Hz, every 500ms, the last 10s' "the title line"
like "$(screen | sed -n 2p)" '^samples/s [0-9]+   CPUs [0-9]+   processes 1   threads 1   dropped [0-9]+' \
	"the totals line"
like "$(screen | sed -n 5p)" 'SELF% +TOTAL% +SAMPLES +FUNCTION +BINARY +PROCESS' "the column headers"
like "$(screen | tail -n 1)" '\? help' "the key hint at the bottom"

keys '?'
ok "? shows the help screen" wait_screen '^cprof top - keys'
like "$(screen)" '/ +filter rows by regular expression' "which lists the keys"
keys x
ok "any key closes it" wait_screen 'SELF% +TOTAL%'

keys / h o t _ b Enter
ok "/hot_b Enter: the filter is shown" wait_screen 'filter: /hot_b/'
ok "and the rows are hot_b's" wait_screen '^ +[0-9.]+% +[0-9.]+% +[0-9]+  hot_b '
is "$(screen | sed -n '6,29p' | grep -c '% ')" 1 "only one row"
keys / BSpace BSpace BSpace BSpace BSpace Enter
ok "an empty filter clears it" wait_screen 'filter cleared'

keys 2
ok "2: the processes view" wait_screen 'view: processes'
like "$(row 1)" " $W +1  topwork_qz" "with the workload's pid, threads and comm"
keys Enter
ok "Enter zooms into the process" wait_screen "zoom: process topwork_qz\\[$W\\]"
ok "showing its functions" wait_screen 'view: functions'
ok "hot_a first" wait_row1 hot_a
keys / h o t _ a Enter
ok "/hot_a: hot_a selected, the only row" wait_screen 'filter: /hot_a/'
keys Enter
ok "Enter on a function: its callers and callees" wait_screen 'view: callers'
ok "hot_a with its self share" wait_screen '^100\.00% +[0-9]+  hot_a  \(self '
ok "the caller of hot_a is run" wait_screen '  <- run '
keys Escape
ok "Esc goes back to the functions" wait_screen 'view: functions'
keys / BSpace BSpace BSpace BSpace BSpace Enter
keys Escape
ok "Esc again leaves the zoom (processes)" wait_screen 'view: processes'
keys 1
ok "1: functions again" wait_screen 'view: functions'
keys 3
ok "3: threads" wait_screen 'view: threads'
like "$(row 1)" " $W +$W  topwork_qz" "the workload's thread"
keys 1 t
ok "t sorts by total" wait_screen 'sort: total'
keys s k
ok "k hides kernel frames" wait_screen 'frames: user'
keys k
ok "k shows them again" wait_screen 'frames: kernel\+user'

keys p
ok "p pauses" wait_screen '\[PAUSED\]'
a1=$(screen | sed -n '6,20p'); sleep 1.5; a2=$(screen | sed -n '6,20p')
is "$a2" "$a1" "paused: the table stays as it was"
keys p
ok "p resumes" wait_screen 'resumed'
keys +
ok "+ refreshes more often" wait_screen 'refresh every 250ms'
keys - -
ok "- less often" wait_screen 'refresh every 1s'

$TM resize-window -t "$SES" -x 70 -y 16
ok "resized to 70x16: drawn again in the new size" wait_screen '^ +SELF% +TOTAL% +SAMPLES +FUNCTION *$'
w=$(screen | sed 3d | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
ok "no line is wider than 70 ($w; the sparkline aside, whose cells may take 3 bytes)" test "$w" -le 70
like "$(screen | sed -n '6,$p')" '  hot_a' "hot_a still in the table"
$TM resize-window -t "$SES" -x 40 -y 8
ok "40x8: says the terminal is too small" wait_screen 'terminal too small \(40x8\)'
$TM resize-window -t "$SES" -x 120 -y 30
ok "back to 120x30: the table again" wait_screen 'SELF% +TOTAL% +SAMPLES +FUNCTION +BINARY +PROCESS'

keys q
i=0
while [ ! -s "$T/tui.rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
is "$(cat "$T/tui.rc" 2>/dev/null)" "exit=0" "q quits with status 0"
is "$($TM display -p -t "$SES" '#{alternate_on}')" 0 "the terminal is back on its normal screen"
unlike "$(screen)" 'SELF%' "with the table gone"

# history on the screen: the arrow keys step through the windows (a new
# session beside the first, whose shell still sleeps: killing the last
# session would stop the tmux server, racing with the next new-session)
SES=hist
$TM new-session -d -s hist -x 120 -y 30 \
	"'$CPROF' top --from-store --data '$T/s' --since 5m --window 10s; echo \"exit=\$?\" > '$T/tui2.rc'; sleep 60"
ok "history on the screen" wait_screen 'history of cpu: .*\(window [0-9]+ of 31, 10s each\)'
win=$(screen | sed -n 's/.*(window \([0-9]*\) of 31.*/\1/p' | head -n 1)
is "$(first_fn)" hot_a "hot_a on top of the newest window with data"
like "$(screen | sed -n 3p)" '^over time  ' "the sparkline of the totals"
keys Left
ok "Left: the window before" wait_screen "\\(window $((win - 1)) of 31"
keys Right
ok "Right: back" wait_screen "\\(window $win of 31"
keys q
i=0
while [ ! -s "$T/tui2.rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
is "$(cat "$T/tui2.rc" 2>/dev/null)" "exit=0" "q quits"

done_testing
