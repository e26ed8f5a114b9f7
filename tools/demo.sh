#!/bin/sh
# The main job: while a Go program and perl keep the CPUs busy, record the
# whole system for 5 seconds with eBPF into the default store (as root,
# /var/lib/cprof), then show where the CPU went and which programs used it.
# Then the file commands on Go's own pprof profiles of the same program:
# merge two runs, compare them, write flame graphs.
# usage: tools/demo.sh [OUTDIR]   (default /tmp/cprof-demo; run as root)
set -eu
cd "$(dirname "$0")/.."
out=${1:-/tmp/cprof-demo}
cprof=./build/cprof
if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root: cprof record needs root (or CAP_BPF and CAP_PERFMON)" >&2
	exit 1
fi
mkdir -p "$out"
pids=
trap 'kill $pids 2>/dev/null || true' EXIT
trap 'exit 1' INT TERM

# burn burns CPU in main.alpha, main.beta and main.gamma (tests/fixtures/burn)
export GOCACHE="$out/go-cache" GOPATH="$out/go" GO111MODULE=off GOFLAGS='' CGO_ENABLED=0
(cd tests/fixtures/burn && go build -trimpath -o "$out/burn" burn.go)

echo "== cprof record --all -d 5s   (while burn and perl keep the CPUs busy)"
"$out/burn" -seconds 7 &
pids="$pids $!"
# Debian's perl has no frame pointers: its stacks are unwound with DWARF CFI
# shellcheck disable=SC2016
timeout 7 perl -e '$x = 0; while (1) { $x += sin($x) + length(sprintf("%d", $x)) }' &
pids="$pids $!"
sleep 0.5
$cprof record --all -d 5s
for p in $pids; do wait "$p" || true; done
pids=

echo
echo "== cprof query cpu --since 1m -n 12   (where the CPU went, all processes)"
$cprof query cpu --since 1m -n 12
echo
echo "== cprof query cpu --values comm   (the programs that ran)"
$cprof query cpu --values comm | tr '\n' ' '
echo
echo
echo "== cprof query 'cpu{comm=\"perl\"}' --since 1m -f folded   (one program's stacks)"
$cprof query 'cpu{comm="perl"}' --since 1m -f folded | awk '{ print $NF, $0 }' | sort -nr | cut -d' ' -f2- | head -n 5
$cprof query cpu --since 1m -f flamegraph -o "$out/record.svg"

echo
echo "== the same program's own Go profiles: merge two runs, compare them"
"$out/burn" -seconds 2 -weights 3,2,1 -cpuprofile "$out/cpu-before.pb.gz"
"$out/burn" -seconds 2 -weights 1,2,3 -cpuprofile "$out/cpu-after.pb.gz"
$cprof merge "$out/cpu-before.pb.gz" "$out/cpu-after.pb.gz" -o "$out/all.pb.gz"
$cprof query -i "$out/all.pb.gz" -n 5
echo
$cprof diff -n 5 "$out/cpu-before.pb.gz" "$out/cpu-after.pb.gz"
$cprof query -i "$out/all.pb.gz" -f flamegraph -o "$out/all.svg"
echo
echo "flame graphs (open in a browser): $out/record.svg (cprof record), $out/all.svg (Go profiles)"
