#!/bin/sh
# The main job until `cprof record` lands: profile a real Go program (three
# runs with different work mixes), merge the runs, show where the CPU went,
# compare two runs, keep them in a store and select from it, and write a
# flame graph.
set -eu
cd "$(dirname "$0")/.."
out=${1:-/tmp/cprof-demo}
sh tests/fixtures/make-fixtures.sh "$out" >/dev/null
./build/cprof merge "$out"/cpu-*.pb.gz -o "$out/all.pb.gz"
./build/cprof query -i "$out/all.pb.gz" -n 8
echo
./build/cprof diff -n 5 "$out/cpu-before.pb.gz" "$out/cpu-after.pb.gz"
echo
rm -rf "$out/store"
./build/cprof import --data "$out/store" -l run=before --time now-2m "$out/cpu-before.pb.gz"
./build/cprof import --data "$out/store" -l run=after --time now-1m "$out/cpu-after.pb.gz"
./build/cprof query --data "$out/store" --series 'process_cpu:cpu'
./build/cprof query --data "$out/store" --since 5m 'process_cpu:cpu{run="after"}' -n 3
./build/cprof query -i "$out/all.pb.gz" -f flamegraph -o "$out/all.svg"
echo
echo "flame graph: $out/all.svg"
