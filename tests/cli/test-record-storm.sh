# cprof record on a storm of short-lived programs: real shell pipelines
# (sh -c, ls, sort, head) and a program built here that spins 10 ms of CPU in
# one image, execs a new image of itself that spins again, and exits.  Each
# sample must be unwound with the mappings its process had when it was
# taken, also when the process exec'd or exited before the sample was read
# (a forked shell's samples before its exec are the shell's): the share of
# samples whose user leaf frame is a bare address (no mapping known) stays
# small for every program of the storm (perf record --call-graph dwarf has
# 0-3%).  The storm is recorded as a command with its children, so that the
# samples are the storm's even on a busy machine; bench/storm.sh records it
# with --all against perf.  Needs root (CI runs as root) and go (go tool
# pprof reads the profile).
. "$srcdir/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
	done_testing; exit
fi
# spin_qz MS [PROG ARGS...]: spins MS ms of CPU time in before_exec_qz (the
# first image) or after_exec_qz (an image started by exec), then execs PROG
# ARGS if given
cat > "$T/spin.c" << 'CEOF'
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
volatile uint64_t sink;
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: as long on a loaded machine */
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
__attribute__((noinline, noclone)) static uint64_t spin(double s)
{
	double end = now() + s;
	uint64_t x = sink | 1;
	do {
		for (int i = 0; i < 20000; i++)
			x = (x * 6364136223846793005ull + 1442695040888963407ull) ^ (x >> 29);
	} while (now() < end);
	return x;
}
__attribute__((noinline)) void before_exec_qz(double s) { sink = spin(s); }
__attribute__((noinline)) void after_exec_qz(double s) { sink = spin(s); }
int main(int argc, char **argv)
{
	double s = (argc > 1 ? atof(argv[1]) : 30) / 1000;
	if (getenv("SPIN_EXECED"))
		after_exec_qz(s);
	else
		before_exec_qz(s);
	if (argc > 2) {
		setenv("SPIN_EXECED", "1", 1);
		execv(argv[2], argv + 2);
	}
	return 0;
}
CEOF
ok "builds the spinning program (cc -O2 -g)" cc -O2 -g -o "$T/spin_qz" "$T/spin.c"
[ -x "$T/spin_qz" ] || { done_testing; exit; }

# The storm: one loop per CPU, for 5 s, of shell pipelines (the shell forks
# children that exec soon after: some samples of theirs come before their
# exec, with the shell's code) and of the spinning program's two images.
cat > "$T/storm.sh" << 'EOF'
for _ in $(seq "$(getconf _NPROCESSORS_ONLN)"); do
	(
		end=$(($(date +%s) + 5))
		while [ "$(date +%s)" -lt "$end" ]; do
			sh -c 'ls /usr/bin | sort -r | head -n 1' > /dev/null
			sh -c 'echo a b c | tr a-z A-Z | wc -c' > /dev/null
			"$1" 10 "$1" 10
			sh -c 'i=0; while [ $i -lt 200 ]; do i=$((i + 1)); done; exec "$0" 10' "$1"
		done
	) &
done
wait
EOF
# Recorded as a command and its children (499 Hz: enough samples of each
# program, on a loaded machine too, and only the storm's; one profile for
# all, whose samples carry the comm they were taken with)
run timeout -s KILL 120 "$CPROF" record -F 499 -o "$T/storm.pb.gz" -- sh "$T/storm.sh" "$T/spin_qz"
diag "$(printf '%s\n' "$err" | tail -n 1)"
is "$rc" 0 "record -F 499 -o FILE -- the storm exits 0"
[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 5 | sed 's/^/#   stderr: /'

# Per program: "COMM SAMPLES WITH-USER-FRAMES BARE", read with go tool pprof
# -raw (samples: location ids, leaf first, and labels; locations: "ID:
# 0xADDR M=MAPPING ...", no M= when there is no mapping); the user leaf is
# the first location below the kernel's half of the address space.
[ -n "${GO:-}" ] || GO=$(command -v go || true)
if [ -z "$GO" ]; then
	ok "go is installed (apt-get install golang-go): the profile is read with go tool pprof" false
	done_testing; exit
fi
run env HOME="$T" "$GO" tool pprof -raw "$T/storm.pb.gz"
is "$rc" 0 "go tool pprof -raw reads the profile"
printf '%s\n' "$out" > "$T/storm.raw"
awk -f "$srcdir/bench/bare_share.awk" "$T/storm.raw" > "$T/storm.tab"
diag "program samples with-user-frames bare-user-leaf: $(grep -E '^(spin_qz|sh|sort|ls|head) ' "$T/storm.tab" | tr '\n' ',')"
for c in spin_qz sh sort ls head; do
	set -- $(awk -v c="$c" '$1 == c { print $3, $4 }' "$T/storm.tab")
	u=${1:-0} b=${2:-0}
	if [ "$c" = sh ] || [ "$c" = spin_qz ]; then
		ok "$c: samples with user frames recorded ($u)" test "$u" -ge 20
	fi
	[ "$u" -ge 20 ] || continue # too few to say
	# at most 2% and 2 samples (perf has 0-3% on such a storm; what is left
	# is a process started just before the recording and gone before its
	# first sample)
	max=$((u / 50 + 2))
	ok "$c: user leaf frames are not bare addresses ($b of $u samples are; at most $max)" test "$b" -le "$max"
	# on failure: the stacks of such samples (leaf first; a bare frame is
	# its address alone)
	[ "$b" -le "$max" ] || awk -v want="$c" '
		/^Samples:/ { sec = "s"; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = "m"; next }
		sec == "s" && /^ *[0-9]+ +[0-9]+:/ { n++; sub(/^[^:]*: */, ""); ids[n] = $0; next }
		sec == "s" && /comm:\[/ { c = $0; sub(/.*comm:\[/, "", c); sub(/\].*/, "", c); comm[n] = c; next }
		sec == "l" && /^ *[0-9]+: 0x/ {
			id = $1; sub(/:/, "", id); f = $2
			for (i = 3; i <= NF; i++) if ($i !~ /^M=/) { f = $i; break }
			name[id] = f; bare[id] = $0 !~ / M=[1-9]/
		}
		END {
			for (i = 1; i <= n && shown < 10; i++) {
				if (comm[i] != want) continue
				k = split(ids[i], v, " "); s = ""; b = 0
				for (j = 1; j <= k; j++) { s = s (j > 1 ? " <- " : "") name[v[j]]; if (bare[v[j]]) b = 1 }
				if (b) { print "#   " s; shown++ }
			}
		}' "$T/storm.raw"
done

# the spinning program's two images: each function with main as its caller
run "$CPROF" query -i "$T/storm.pb.gz" -t samples -f folded
like "$out" '(^|;)main;before_exec_qz(;spin)? [0-9]+$' \
	"the samples before exec are unwound in the first image"
like "$out" '(^|;)main;after_exec_qz(;spin)? [0-9]+$' \
	"the samples after exec are unwound in the new image"
done_testing
