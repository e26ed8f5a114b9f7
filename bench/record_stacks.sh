#!/bin/sh
# Benchmark: stack completeness of cprof record, against perf record
# --call-graph dwarf on the same workload in the same run.
#
# bench/stack_workload.c is built -O2 -fomit-frame-pointer -g, with known
# call paths (main->a->b->leaf_b, main->c->leaf_c, main->rec^25->leaf_rec,
# main->big->leaf_big with a 6 KiB frame, main->d->d_inline with d_inline
# inlined into d, main->zpath->compress2->deflate... through Debian's libz,
# which has no frame pointers).  Both tools record one run of it at the same
# time (-p: the shares of its functions move by several points between two
# runs on a shared machine, as its speed does), for BENCH_SECONDS (10) at
# 499 Hz; for each we print the share of the workload's samples whose
# stack reaches main (target >= 99% for cprof) and each function's inclusive
# share (samples with it anywhere on the stack, inline frames included),
# side by side, with the difference (target: within 3 percentage points).
# Needs root (both tools); perf is optional (the comparison is skipped).
# Exits 0 unless something failed to run; PASS/FAIL lines give the verdict.
# usage: bench/record_stacks.sh BUILDDIR   (run by `make bench`)
bench=record_stacks; . "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECONDS:-10}
HZ=499
CC=${CC:-cc}
PERF=${PERF:-perf}
FUNCS="main a b leaf_b c leaf_c rec leaf_rec big leaf_big d d_inline zpath compress2 deflate"

need_root "cprof record and perf record sample the CPU"
$CC -O2 -fomit-frame-pointer -g -o "$d/stack_workload" "$src/bench/stack_workload.c" -lz
cd "$d"
echo "workload: ./stack_workload $SECS (-O2 -fomit-frame-pointer -g; libz: $(ldd ./stack_workload | awk '/libz/ { print $3 }'))"

# ---- both tools, attached to one run ----
# perf 6.1 on kernel 6.18 aborts ("assertion failed at util/build-id.c",
# "stack smashing detected") whenever it reads a build-id from an ELF file:
# at the end of perf record (also with -N), and in perf script after
# perf record -B.  --buildid-mmap has the kernel put the build-ids in the
# mmap records, so neither reads files for them.
have_perf= failed= wl= crec= prec=
stop_at_exit wl crec prec
command -v "$PERF" > /dev/null 2>&1 || echo "perf not found (comparison skipped)"
./stack_workload "$SECS" > /dev/null &
wl=$!
if command -v "$PERF" > /dev/null 2>&1; then
	"$PERF" record --buildid-mmap -F $HZ --call-graph dwarf -p "$wl" -o perf.data > /dev/null 2> perf.err &
	prec=$!
fi
# -p samples only the workload (and its children: it has none); it ends with it
CPROF_DEBUG=1 "$b/cprof" record -F $HZ -p "$wl" -o cprof.pb.gz > /dev/null 2> cprof.err &
crec=$!
wait "$wl"; wl=
wait "$crec" || {
	crec=; echo "cprof record failed:"; grep -v '^libbpf:' cprof.err | tail -5; exit 1; }
crec=
grep '^cprof record: [0-9]* samples' cprof.err | sed 's/^/  /'
# folded: root first, ';' between frames, the sample count last
"$b/cprof" query -i cprof.pb.gz -f folded -t samples > cprof.folded
awk '{
	n = $NF; s = substr($0, 1, length($0) - length($NF) - 1)
	gsub(/;/, "\n", s); print n; print s; print "" }' cprof.folded > cprof.stacks

# ---- perf ----
if [ -n "$prec" ]; then
	if wait "$prec"; then
		if "$PERF" script -i perf.data -F comm,pid,ip,sym > perf.script 2> perf.err; then
			have_perf=1
		else
			echo "perf script failed (comparison skipped):"; tail -3 perf.err; failed=1
		fi
		# comm pid line, then one "\tIP SYM" line per frame (leaf first; inline
		# frames are "SYM (inlined)"), then a blank line
		awk '
			/^[^ \t]/ { if (on) print ""; on = ($1 == "stack_workload"); if (on) print 1; next }
			on && /^[ \t]/ { sub(/^[ \t]+[0-9a-f]+ /, ""); sub(/ \(inlined\)$/, ""); print }
			END { if (on) print "" }' perf.script > perf.stacks
		[ -z "$have_perf" ] || echo "  perf record: $(grep -c '^1$' perf.stacks) samples of stack_workload"
	else
		echo "perf record failed (comparison skipped):"; tail -3 perf.err; failed=1
	fi
	prec=
fi

# stacks file (count, frames one a line, blank line) -> "total N", "FUNC N"
# and "recdepth N" (rec frames per leaf_rec sample, 25 when complete) lines;
# the stacks that miss main, root first, go to $2
shares() {
	awk -v funcs="$FUNCS" -v miss="$2" '
		BEGIN { nf = split(funcs, f, " ") }
		function done() {
			if (n == "") return
			total += n
			for (k in seen) c[k] += n
			if ("leaf_rec" in seen) { rs += n; rd += n * nrec }
			if (!("main" in seen)) print n, path > miss
			delete seen; n = ""; nrec = 0; path = ""
		}
		n == "" && NF { n = $0; next }
		!NF { done(); next }
		{ seen[$0] = 1; nrec += $0 == "rec"; path = path == "" ? $0 : path ";" $0 }
		END {
			done(); print "total", total + 0
			for (i = 1; i <= nf; i++) print f[i], c[f[i]] + 0
			print "recdepth", rs ? rd / rs : 0
		}' "$1"
}
shares cprof.stacks cprof.nomain > cprof.shares
: > perf.shares
[ -z "$have_perf" ] || shares perf.stacks perf.nomain > perf.shares

echo
awk -v perf="$have_perf" '
	FNR == 1 { file++ }
	file == 1 { c[$1] = $2; if ($1 != "total" && $1 != "recdepth") order[++n] = $1 }
	file == 2 { p[$1] = $2 }
	function pct(v, t) { return t > 0 ? 100 * v / t : 0 }
	END {
		printf "%-12s %12s %12s %9s\n", "function", "cprof %", "perf %", "diff pp"
		printf "%-12s %12d %12s\n", "(samples)", c["total"], perf ? p["total"] : "-"
		worst = 0
		for (i = 1; i <= n; i++) {
			f = order[i]; a = pct(c[f], c["total"])
			if (perf) {
				q = pct(p[f], p["total"]); dd = a - q
				ad = dd < 0 ? -dd : dd
				if (ad > worst) { worst = ad; wf = f }
				printf "%-12s %12.2f %12.2f %+9.2f\n", f, a, q, dd
			} else {
				printf "%-12s %12.2f %12s %9s\n", f, a, "-", "-"
			}
		}
		printf "%-12s %12.2f %12s   (rec frames per leaf_rec sample; 25 when complete)\n", "rec depth",
			c["recdepth"], perf ? sprintf("%.2f", p["recdepth"]) : "-"
		m = pct(c["main"], c["total"])
		print ""
		printf "%s: cprof stacks reaching main: %.2f%% (target >= 99%%)\n", (m >= 99 ? "PASS" : "FAIL"), m
		if (perf) {
			printf "      perf stacks reaching main:  %.2f%%\n", pct(p["main"], p["total"])
			printf "%s: largest difference from perf: %.2f pp (%s; target <= 3 pp)\n",
				(worst <= 3 ? "PASS" : "FAIL"), worst, wf
		}
	}' cprof.shares perf.shares
if [ -s cprof.nomain ]; then
	echo "cprof stacks that miss main (count, root first; the most frequent 5):"
	sort -rn cprof.nomain | head -5 | cut -c1-200 | sed 's/^/  /'
fi
[ -z "$failed" ] || exit 1
