#!/bin/sh
# Benchmark: short-lived processes in a system-wide recording.  A storm of
# shell pipelines (sh -c 'ls /usr/bin | sort | head', tr, wc, sed) and gcc
# compiles of a small file, one loop per online CPU, for BENCH_SECONDS (20),
# is recorded with cprof record --all -F 99, then run again and recorded with
# perf record -a -F 99 --call-graph dwarf --buildid-mmap.
#
# Per program (comm): the samples, and the share of samples with user frames
# whose user leaf frame has no mapping (a bare address: the process's
# mappings were not known when the sample was unwound).  cprof's side is read
# from its pprof file with go tool pprof -raw (a location without a mapping);
# perf's from perf script (a user frame in "[unknown]").  Target: for each
# program of the storm with >= 10 samples with user frames in both, cprof's share <= perf's +
# 1 percentage point, and for all of them together.  Also cprof's CPU time (user + sys) and perf's (record +
# script).
# Needs root, perf and go.  Exits 0 unless something failed to run; PASS/FAIL
# lines give the verdict.
# usage: bench/storm.sh BUILDDIR   (run by `make bench`)
bench=storm; . "$(dirname "$0")/lib.sh"
export LC_ALL=C
SECS=${BENCH_SECONDS:-20}
PERF=${PERF:-perf}
GO=${GO:-go}
rec= storm=
stop_at_exit storm rec

need_root "cprof record --all, perf record -a"
need_tools "$PERF" "$GO" gcc
storm_prepare

# ---- cprof ----
echo "storm: $ncpu loop(s) of sh -c 'ls | sort | head', gcc -O2 -c, sh -c 'echo | tr | wc', sed; ${SECS} s each run"
echo
echo "cprof record --all -F 99 -o cprof.pb.gz   (stopped with SIGINT after the storm)"
CPROF_DEBUG=1 $TIME -f '%U %S %M %e' -o "$d/cprof.t" "$b/cprof" record --all -F 99 -o "$d/cprof.pb.gz" \
	2> "$d/cprof.err" &
rec=$!
sleep 2 # started (symbol tables loaded)
run_storm "$SECS"
wait_storm
kill -INT "$(pgrep -P "$rec" -x cprof)" 2> /dev/null || :
wait "$rec" || { echo "cprof record failed:"; grep -v '^libbpf:' "$d/cprof.err" | tail -5; exit 1; }
rec=
read -r u s rss wall << EOF
$(tail -n 1 "$d/cprof.t")
EOF
c_cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
summary=$(grep '^cprof record: [0-9]* samples' "$d/cprof.err" || :)
echo "  $summary" | sed 's/ (cprof query.*//'

# ---- perf ----
echo
echo "perf record -a -F 99 --call-graph dwarf --buildid-mmap   (stopped with SIGINT after the storm); perf script"
$TIME -f '%U %S %M %e' -o "$d/pr.t" "$PERF" record -a -F 99 --call-graph dwarf --buildid-mmap \
	-o "$d/perf.data" > /dev/null 2> "$d/pr.err" &
rec=$!
sleep 2
run_storm "$SECS"
wait_storm
kill -INT "$(pgrep -P "$rec" -x perf)" 2> /dev/null || :
wait "$rec" || : # perf record exits 130 at SIGINT (also after writing its file)
grep -q 'Captured and wrote' "$d/pr.err" || { echo "perf record failed:"; tail -3 "$d/pr.err"; exit 1; }
rec=
$TIME -f '%U %S %M %e' -o "$d/ps.t" "$PERF" script -i "$d/perf.data" -F comm,pid,ip,dso > "$d/perf.txt" \
	2> "$d/ps.err" || { echo "perf script failed:"; tail -3 "$d/ps.err"; exit 1; }
read -r u1 s1 _ _ << EOF
$(tail -n 1 "$d/pr.t")
EOF
read -r u2 s2 _ _ << EOF
$(tail -n 1 "$d/ps.t")
EOF
p_cpu=$(awk -v a="$u1" -v b="$s1" -v c="$u2" -v e="$s2" 'BEGIN { printf "%.2f", a + b + c + e }')
echo "  $(grep -c '^[^[:space:]]' "$d/perf.txt") samples"

# ---- per program: samples, with user frames, bare user leaf ----
# cprof: go tool pprof -raw lists the samples (location ids, leaf first, then
# the labels) and the locations ("ID: 0xADDR M=MAPPING ...", no M= or M=0:
# no mapping); a user frame is one below the kernel's half of the address space
"$GO" tool pprof -raw "$d/cprof.pb.gz" 2> "$d/raw.err" > "$d/cprof.raw" ||
	{ echo "go tool pprof -raw failed:"; tail -3 "$d/raw.err"; exit 1; }
awk -f "$(dirname "$0")/bare_share.awk" "$d/cprof.raw" | sort > "$d/cprof.tab"
# perf: "COMM PID" then one "\tADDR (DSO)" line per frame, leaf first
awk '
	function done() { if (c == "") return; tot[c]++; if (leaf != "") { u[c]++; if (leaf == "[unknown]") nb[c]++ } }
	/^[^ \t]/ { done(); c = $1; for (i = 2; i < NF; i++) c = c "_" $i; leaf = ""; seen = 0; next }
	/^[ \t]+[0-9a-f]+ / {
		if (seen) next
		a = $1; dso = $NF; gsub(/[()]/, "", dso)
		if (length(a) < 16 || substr(a, 1, 1) < "8") { leaf = dso; seen = 1 }
	}
	END { done(); for (k in tot) print k, tot[k], u[k] + 0, nb[k] + 0 }' "$d/perf.txt" | sort > "$d/perf.tab"

join -a 1 -a 2 -e 0 -o 0,1.2,1.3,1.4,2.2,2.3,2.4 "$d/cprof.tab" "$d/perf.tab" > "$d/both.tab"
echo
printf '  %-16s %26s   %26s\n' "" "cprof" "perf"
printf '  %-16s %8s %8s %8s   %8s %8s %8s\n' "program" "samples" "user" "bare %" "samples" "user" "bare %"
awk '$2 + $5 >= 20' "$d/both.tab" | sort -k2,2nr |
	awk '{ printf "  %-16s %8d %8d %8s   %8d %8d %8s\n", $1, $2, $3, ($3 ? sprintf("%.1f", 100 * $4 / $3) : "-"),
		$5, $6, ($6 ? sprintf("%.1f", 100 * $7 / $6) : "-") }'
echo
awk -v storm="sh ls sort head gcc cc1 as tr wc sed" '
	BEGIN { split(storm, v, " "); for (i in v) want[v[i]] = 1 }
	function verdict(name, cu, cb, pu, pb) {
		cs = 100 * cb / cu; ps = 100 * pb / pu
		printf "%s: %s: bare user leaf %.1f%% of %d (cprof) vs %.1f%% of %d (perf) (target <= perf + 1 pp)\n",
			(cs <= ps + 1 ? "PASS" : "FAIL"), name, cs, cu, ps, pu
	}
	want[$1] { cu += $3; cb += $4; pu += $6; pb += $7 }
	want[$1] && $3 >= 10 && $6 >= 10 { verdict($1, $3, $4, $6, $7) }
	END { if (cu && pu) verdict("the storm'"'"'s programs together", cu, cb, pu, pb) }' "$d/both.tab"
echo
printf '  %-34s %s s (wall %s s, peak RSS %s MB)\n' "cprof CPU (user+sys):" "$c_cpu" "$wall" "$((rss / 1024))"
printf '  %-34s %s s (record %s s, script %s s)\n' "perf CPU (record+script):" "$p_cpu" \
	"$(awk -v a="$u1" -v b="$s1" 'BEGIN { printf "%.2f", a + b }')" \
	"$(awk -v a="$u2" -v b="$s2" 'BEGIN { printf "%.2f", a + b }')"
