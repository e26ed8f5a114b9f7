# cprof record's series are programs, not processes (#48), and its CPU time
# has one type name wherever it goes (#47): a shell loop that starts 50
# short-lived processes of one program is recorded into the store, which then
# holds one series for the program whose samples carry the 50 pids the shell
# started; --group-by pid, {pid="N"} selectors and the SQL table's pid column
# give each process the same total, and all of them what record took; top
# --from-store lists the 50 processes by pid.  Then one workload of known CPU
# time (short.c burns its own CPU time) is recorded four ways: into the store,
# into a file then imported, pushed to cprof serve, and pushed to its
# Pyroscope endpoint: each is process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta
# and holds the workload's CPU time in nanoseconds, within sampling noise.
# Needs root (CI runs as root).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
SPID=
trap '[ -z "$SPID" ] || kill "$SPID" 2>/dev/null; rm -rf "$T"' EXIT
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta
P=$T/churn_qz
cc -O2 -g -o "$P" "$FIXTURES/record/short.c" 2>"$T/cc.err" || sed 's/^/# /' "$T/cc.err"
ok "builds the short-lived program (tests/fixtures/record/short.c)" test -x "$P"
[ -x "$P" ] || { done_testing; exit; }

# rec ARGS: cprof record, killed if it hangs (a test must end)
rec() { timeout -s KILL 120 "$CPROF" record "$@"; }
q() { "$CPROF" query --since 1h "$@"; }
# total ARGS: the JSON total of query ARGS
total() { q "$@" -f json | jq .total; }
# samples_of TEXT: the samples record says it took (its summary line)
samples_of() { printf '%s\n' "$1" | sed -n 's/^cprof record: \([0-9][0-9]*\) samples in .*/\1/p'; }

# ---- 50 processes of one program, one after the other, each 40 ms of CPU (about 20 samples at
# 499 Hz) and gone within a flush ----
S=$T/store
run rec -F 499 --flush-interval 1s --data "$S" -- \
	sh -c "for i in \$(seq 50); do '$P' 40 & echo \$! >> '$T/pids'; wait; done"
is "$rc" 0 "record -- a loop of 50 short-lived processes exits 0"
[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 5 | sed 's/^/#   stderr: /'
n=$(samples_of "$err")
pids=$(sort "$T/pids" 2>/dev/null)
is "$(printf '%s\n' "$pids" | grep -c .)" 50 "the shell started 50 of them"
run q --data "$S" --types
is "$out" "$CPU" "the store's type: CPU time as Pyroscope names it"
run q --data "$S" --series 'cpu{comm="churn_qz"}'
is "$(printf '%s\n' "$out" | grep -c .)" 1 "ONE series for the program, not one per process"
like "$out" "exe=\"$P\"" "labelled with its exe"
unlike "$out" 'pid=' "and no pid"
run q --data "$S" --values pid 'cpu{comm="churn_qz"}'
is "$out" "$pids" "its samples carry the 50 pids the shell started"
# the store: a series per program (the shell, seq, the program; cprof's own child before its exec),
# in the series table of each day's file (docs/STORE.md; a recording across midnight has two days)
programs=$(q --data "$S" --values comm | grep -c .)
series=$(for f in "$S"/days/*.db; do sqlite3 "$f" 'SELECT type || labels FROM series'; done | sort -u | grep -c .)
diag "programs: $(q --data "$S" --values comm | tr '\n' ' ')"
is "$series" "$programs" "the store holds one series per program ($programs), whatever the processes"

# ---- each process's total, three ways: --group-by pid, cpu{pid="N"} and SQL's pid column ----
q --data "$S" 'cpu{comm="churn_qz"}' --group-by pid -f folded |
	awk '{ g = $1; sub(/;.*/, "", g); sub(/^pid=/, "", g); s[g] += $NF } END { for (g in s) printf "%s %.0f\n", g, s[g] }' |
	sort >"$T/by-group"
"$CPROF" sql --data "$S" -f csv "SELECT pid, sum(value) FROM samples WHERE comm = 'churn_qz' GROUP BY pid" |
	tr ',' ' ' | tr -d '\r' | grep -E '^[0-9]+ [0-9]+$' | sort >"$T/by-sql"
: >"$T/by-selector"
for p in $pids; do
	printf '%s %s\n' "$p" "$(total --data "$S" "cpu{pid=\"$p\"}")" >>"$T/by-selector"
done
is "$(cut -d' ' -f1 "$T/by-group" | tr '\n' ' ')" "$(printf '%s\n' "$pids" | tr '\n' ' ')" \
	"--group-by pid: a group for each of the 50 processes"
is "$(cat "$T/by-selector")" "$(cat "$T/by-group")" "cpu{pid=\"N\"} selects each process's total, as --group-by pid has it"
is "$(cat "$T/by-sql")" "$(cat "$T/by-group")" "and SQL's pid column (a sample label) groups the same"
small=$(awk '$2 < 2004008 * 5 { n++ } END { print n + 0 }' "$T/by-group")
is "$small" 0 "every process has its 40 ms of CPU time in samples (5 or more of 2004008 ns)"
[ "$small" = 0 ] || sed 's/^/#   /' "$T/by-group"
is "$(q --data "$S" cpu --group-by pid -f folded | awk '{ s += $NF } END { printf "%.0f\n", s }')" \
	"$((${n:-0} * 2004008))" "all processes together hold every sample record took ($n, 2004008 ns each)"
is "$(total --data "$S" 'cpu{comm="churn_qz", pid!="'"$(head -n 1 "$T/pids")"'"}')" \
	"$(awk -v p="$(head -n 1 "$T/pids")" '$1 != p { s += $2 } END { printf "%.0f\n", s }' "$T/by-group")" \
	"pid!=\"N\" selects the others"

# ---- top --from-store: the processes view lists them by pid (a window that holds the whole run
# wherever it falls: windows are aligned to multiples of their length since the epoch, and
# 10000 days from 1997-05-19 reach 2024-10-04 and 2052-02-19) ----
run timeout -s KILL 60 "$CPROF" top --from-store --data "$S" --since 1h --window 10000d --stdio \
	--view processes --limit 100 --type 'cpu{comm="churn_qz"}'
is "$rc" 0 "top --from-store --view processes exits 0"
rows=$(printf '%s\n' "$out" | awk '/^ *CPU%/ { h = 1; next } h && NF')
is "$(printf '%s\n' "$rows" | awk '{ print $3 }' | sort | tr '\n' ' ')" "$(printf '%s\n' "$pids" | tr '\n' ' ')" \
	"top lists the 50 processes by their pid"
is "$(printf '%s\n' "$rows" | awk '{ print $4 " " $5 }' | sort -u)" "1 churn_qz" "each with its thread and the program's comm"
like "$out" 'processes 50   threads 50' "and counts them"

# ---- one workload, four ways: its CPU time (1.5 s, as the kernel counts it; the shell's `times`
# says how much it took) in process_cpu:cpu, in nanoseconds ----
# way NAME ARGS: record ARGS -- the workload; $T/NAME.cpu: its CPU time in ns
way() {
	_w=$1
	shift
	run rec -F 499 "$@" -- sh -c "'$P' 1500; times > '$T/$_w.times'"
	is "$rc" 0 "$_w: record exits 0"
	[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 5 | sed 's/^/#   stderr: /'
	awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1e9 }' \
		"$T/$_w.times" >"$T/$_w.cpu" 2>/dev/null
}
# near NAME GOT: GOT is the workload's CPU time within 10% (some 750 samples: their noise is a few %)
near() {
	_c=$(cat "$T/$1.cpu" 2>/dev/null)
	diag "$1: recorded $2 ns of the workload's ${_c:-?} ns of CPU time"
	ok "$1: the total is the workload's CPU time, in nanoseconds, within 10% ($2 of ${_c:-?})" \
		awk -v g="${2:-0}" -v c="${_c:-0}" 'BEGIN { exit !(c > 0 && g >= 0.9 * c && g <= 1.1 * c) }'
}
way store --flush-interval 1s --data "$T/s1"
is "$(q --data "$T/s1" --types)" "$CPU" "store: the type"
near store "$(total --data "$T/s1" 'cpu{comm="churn_qz"}')"

way file -o "$T/w.pb.gz"
run "$CPROF" import --data "$T/s2" "$T/w.pb.gz"
is "$rc" 0 "file: imported"
like "$(q --data "$T/s2" --types)" "^$CPU\$" "file: its CPU time imports as the same type (beside Go's sample count)"
near file "$(total --data "$T/s2" 'cpu{comm="churn_qz"}')"
is "$("$CPROF" query -i "$T/w.pb.gz" -f json | jq .total)" "$(total --data "$T/s2" cpu)" \
	"file: the file's default value is the CPU time the store shows"

serve_start serve --listen 127.0.0.1:0 --data "$T/srv"
ok "cprof serve starts ($URL)" test -n "$URL"
way remote --flush-interval 1s --remote "$URL" --spool "$T/spool1"
is "$(q --remote "$URL" --types)" "$CPU" "remote: the type"
near remote "$(total --remote "$URL" 'cpu{comm="churn_qz"}')"
kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=

serve_start serve2 --listen 127.0.0.1:0 --data "$T/srv2"
ok "cprof serve starts again ($URL)" test -n "$URL"
way pyroscope --flush-interval 1s --remote "$URL" --remote-api pyroscope --spool "$T/spool2"
is "$(q --remote "$URL" --types)" "$CPU" "pyroscope: the type, as Pyroscope's endpoint names it"
near pyroscope "$(total --remote "$URL" 'cpu{service_name="churn_qz"}')"
kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
done_testing
