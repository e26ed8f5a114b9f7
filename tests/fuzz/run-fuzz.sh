#!/bin/sh
# Runs each fuzz target: with libFuzzer (the sanitizer build with clang) for
# FUZZ_SECONDS each, from the seed corpus; otherwise the replay driver over
# the seeds, their prefixes and bit flips.  TAP output.
. "$srcdir/tests/cli/lib.sh"
seconds=${FUZZ_SECONDS:-15}
fuzz="$top_builddir/tests/fuzz"
mkdir -p "$T/seeds-pprof" "$T/seeds-folded" "$T/seeds-selector"
cp "$FIXTURES"/*.pb.gz "$T/seeds-pprof/"
for f in "$FIXTURES"/*.pb.gz; do gzip -dc "$f" > "$T/seeds-pprof/raw-$(basename "$f" .gz)"; done
printf 'main;work;alpha 30\nmain;work;beta 20\nmain;viaDelta;gamma 10\n' > "$T/seeds-folded/a.folded"
printf '# comment\n\nroot 1\nx;y;z 1234567\n' > "$T/seeds-folded/b.folded"

printf 'process_cpu:cpu{comm="burn", pid!="1", host=~"a.*", x!~"b|c"}' > "$T/seeds-selector/a"
printf 'now-1h30m' > "$T/seeds-selector/b"
printf '2026-11-22T10:00:00.123+02:00' > "$T/seeds-selector/c"
printf "{a='x\\n', b=\`raw\`,}" > "$T/seeds-selector/d"
for target in pprof folded selector; do
	bin="$fuzz/fuzz_$target"
	if [ "${FUZZ_LIBFUZZER:-no}" = yes ]; then
		mkdir -p "$T/corpus-$target"
		run "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			"$T/corpus-$target" "$T/seeds-$target"
		runs=$(printf '%s\n' "$err" | sed -n 's/^stat::number_of_executed_units: *//p')
		is "$rc" 0 "libFuzzer ran fuzz_$target for ${seconds}s without a crash (${runs:-?} runs)"
		[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 30 | sed 's/^/# /'
	else
		run "$bin" "$T/seeds-$target"/*
		is "$rc" 0 "fuzz_$target replays its seeds, their prefixes and bit flips ($out)"
		[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -n 30 | sed 's/^/# /'
	fi
done
done_testing
