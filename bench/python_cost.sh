#!/bin/sh
# Benchmark (#18): what cprof record costs per sample of a Python process (its Python frames read
# by the BPF program from the interpreter and named from its code objects) against a native one,
# at 99 Hz, and how many of the Python samples have their whole Python stack (down to <module>).
#
# The native process is tests/fixtures/record/work.c (main -> run -> hot_a / hot_b / zlib, built
# -O2 -fomit-frame-pointer); the Python one is Debian's python3 (CPython 3.11, stripped) running
# tests/fixtures/record/pywork.py (two threads: main -> outer -> hot_a / hot_b; a recursion 30
# deep, a generator, zlib).  Each runs for BENCH_SECONDS (20) + 2 s; cprof record -p PID -F 99 joins
# it after 1 s (its start-up is not measured) and records BENCH_SECONDS into a store.  CPU: cprof's
# threads (schedstat) plus its BPF programs' run time (kernel.bpf_stats_enabled, on for the run and
# restored), per sample once joined (after its first 2 s, bench/lib.sh).  Completeness: of the Python
# samples in the main evaluation loop (their native stack has PyEval_EvalCode;_PyEval_EvalFrameDefault),
# the share with <module> above it.
# Targets (#18): Python <= 2x the native cost per sample; >= 99% complete.
# Needs root, bpftool, jq, gcc, zlib.
# usage: bench/python_cost.sh BUILDDIR   (run by `make bench`)
bench=python_cost; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-20}
PY=${BENCH_PYTHON:-/usr/bin/python3}
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
rec= wl=
stop_at_exit rec wl
need_root "cprof record, kernel.bpf_stats_enabled"
need_tools "$BPFTOOL" jq gcc "$PY"
${CC:-gcc} -O2 -g -fomit-frame-pointer -I"$src/tests/fixtures/record" -o "$d/native" "$src/tests/fixtures/record/work.c" -lz ||
	{ echo "cannot build the native workload"; exit 1; }
bpf_stats_on
echo "cprof record -p PID -F 99 for ${SECS} s: a native process and a Python one (${PY})"
rec_cost native "-d ${SECS}s --data $d/store-native" "$d/native" $((SECS + 2))
nat=$us
rec_cost python "-d ${SECS}s --data $d/store-python" "$PY" "$src/tests/fixtures/record/pywork.py" $((SECS + 2))
pyus=$us
f=$("$b/cprof" query --data "$d/store-python" cpu -f folded --since 1h)
inloop=$(printf '%s\n' "$f" | awk '/PyEval_EvalCode;_PyEval_EvalFrameDefault/ { s += $NF } END { print s + 0 }')
whole=$(printf '%s\n' "$f" | awk '/PyEval_EvalCode;_PyEval_EvalFrameDefault;<module> / { s += $NF } END { print s + 0 }')
side=$(printf '%s\n' "$f" | awk '/Thread\._bootstrap / { s += $NF } END { print s + 0 }')
pct=$(awk -v w="$whole" -v n="$inloop" 'BEGIN { printf "%.2f", (n > 0 ? 100 * w / n : 0) }')
echo "  Python samples in the main evaluation loop: $inloop, with the stack from <module>: $whole ($pct%); the side thread's from Thread._bootstrap: $side"
ratio=$(awk -v a="$pyus" -v b="$nat" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
echo
echo "$(verdict '<=' "$ratio" 2): a Python sample costs ${ratio}x a native one (target <= 2x)"
echo "$(verdict '>=' "$pct" 99): $pct% of the Python samples have the whole Python stack (target >= 99%)"
