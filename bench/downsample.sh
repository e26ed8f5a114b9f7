#!/bin/sh
# Benchmark: downsampling (#20).  bench/store_gen writes the 24 hours to now
# of yesterday (UTC) of 50 processes at 19 Hz on 8 CPUs (about 4 minutes), repeated into
# BENCH_DS_DAYS whole days (default 30) and today to now; or, with BENCH_DS_HOURS=H,
# it generates the last H hours of each of the days (H = 24 takes some 2.5
# hours on 2 busy cores).  A copy
# is downsampled with the default policy (cprof import --downsample
# raw=2d,5m=10d,1h: merged days keep programs, not processes); reported: bytes on disk of both, the time to compact,
# and the wall time of `cprof query` (the top table, best of 3) of the whole range, of one
# day two weeks ago and of the last hour on both, with their totals compared.
# Sizes and the whole-range query scale with the hours per day: the figures
# for whole days are extrapolated (each day's dictionary counted once),
# pessimistically for steps longer than H.
# A second, finer policy (BENCH_DS_ALT, default raw=2d,1m=14d,10m: the default
# until schema 3) is measured for size too.
# Targets: the downsampled store <= 1/5 of the raw one; the whole-range query
# <= 1 s; the last hour as fast as without downsampling.
# usage: bench/downsample.sh BUILDDIR   (run by `make bench`)
bench=downsample; . "$(dirname "$0")/lib.sh"
need_tools jq
D=${BENCH_DS_DAYS:-30}
H=${BENCH_DS_HOURS:-24}
POLICY=${BENCH_DS_POLICY:-raw=2d,5m=10d,1h}
C=$b/cprof

DAYNS=86400000000000
now=$(date +%s)
midnight=$((now / 86400 * 86400))
# repeat_days STORE N: the store's one generated day (yesterday, UTC, whole: store_gen --end at
# midnight) copied into the N - 1 days before it, and into today up to now: a day's file holds
# everything its samples use (dictionary, series), so a copy is a file copy and an UPDATE of its
# blocks' times (their entries' times are offsets from t_min), and a row in store.db
repeat_days() {
	yday=$(sqlite3 "$1/store.db" "SELECT max(name) FROM partitions")
	[ "$(sqlite3 "$1/store.db" "SELECT count(*) FROM partitions")" = 1 ] ||
		{ echo "store_gen wrote more than one day: cannot repeat it"; exit 1; }
	k=-1
	while [ "$k" -le "$(($2 - 1))" ]; do
		[ "$k" != 0 ] || { k=1; continue; }
		name=$(date -u -d "@$((midnight - (k + 1) * 86400))" +%Y%m%d)
		cp "$1/days/$yday.db" "$1/days/$name.db"
		# (today: what lies before now)
		sqlite3 "$1/days/$name.db" "UPDATE blocks SET t_min = t_min - $k * $DAYNS, t_max = t_max - $k * $DAYNS;
			DELETE FROM blocks WHERE t_max >= $now * 1000000000; DELETE FROM rollups"
		sqlite3 "$1/store.db" "INSERT INTO partitions(name, t_min, t_max) SELECT '$name', t_min - $k * $DAYNS,
			min(t_max - $k * $DAYNS, $now * 1000000000 - 1) FROM partitions WHERE name = '$yday'"
		k=$((k + 1))
	done
}

if [ -n "${BENCH_DS_HOURS:-}" ]; then
	"$b/bench/store_gen" "$d/raw" - --days "$D" --hours "$H" > "$d/gen.out"
	echo "load: $(sed -n 's/^simulated: //p' "$d/gen.out")"
	echo "      $(sed -n 's/^days: //p' "$d/gen.out") ($D days; BENCH_DS_DAYS, BENCH_DS_HOURS)"
	echo "      $(sed -n 's/^samples: //p' "$d/gen.out") samples, generated in $(sed -n 's/.*; total //p' "$d/gen.out")"
else
	need_tools sqlite3
	"$b/bench/store_gen" "$d/raw" - --days 1 --hours 24 --end "$midnight" > "$d/gen.out"
	repeat_days "$d/raw" "$D"
	echo "load: $(sed -n 's/^simulated: //p' "$d/gen.out")"
	echo "      yesterday (UTC: $(sed -n 's/^samples: //p' "$d/gen.out") samples, generated in" \
		"$(sed -n 's/.*; total //p' "$d/gen.out")), repeated: $D whole days and today to now" \
		"(BENCH_DS_DAYS; BENCH_DS_HOURS=H generates the last H hours of each day instead)"
fi

cp -a "$d/raw" "$d/ds"
$TIME -f '%e %M' -o "$d/t" "$C" import --data "$d/ds" --downsample "$POLICY" > "$d/ds.out"
read -r compact_s compact_rss < "$d/t"
echo "compaction:   $compact_s s, peak RSS $((compact_rss / 1024)) MB ($POLICY): $(sed 's/ in [^:]*:/:/' "$d/ds.out")"

size() { du -sb "$1" | cut -f1; }
# a day's dictionary and series: its chunks' and series rows' bytes, summed over the days
dict_bytes() {
	for f in "$1"/days/*.db; do
		sqlite3 "$f" "SELECT (SELECT coalesce(sum(length(data)), 0) FROM chunks) +
			(SELECT coalesce(sum(length(type) + length(labels)), 0) FROM series)"
	done | awk '{ s += $1 } END { print s + 0 }'
}
raw_b=$(size "$d/raw"); ds_b=$(size "$d/ds")
raw_dict=$(dict_bytes "$d/raw"); ds_dict=$(dict_bytes "$d/ds")
awk -v r="$raw_b" -v s="$ds_b" -v i="$raw_dict" -v j="$ds_dict" -v h="$H" -v v="$(verdict '<=' \
	"$(awk -v a="$ds_b" -v b="$raw_b" 'BEGIN { print a / b }')" 0.2)" 'BEGIN {
	printf "on disk:      raw %d bytes, downsampled %d bytes = 1/%.2f (target <= 1/5: %s; cprof 2131acc: 1/2.64)\n", r, s, r / s, v
	printf "              of which the days'"'"' dictionaries and series: raw %d bytes, downsampled %d\n", i, j
	if (h < 24)
		printf "              whole days (x%g of the samples): raw %.0f, downsampled %.0f bytes = 1/%.2f\n",
			24 / h, i + (r - i) * 24 / h, j + (s - j) * 24 / h, (i + (r - i) * 24 / h) / (j + (s - j) * 24 / h)
}'

# another policy, for comparison (BENCH_DS_ALT; "off" to skip)
ALT=${BENCH_DS_ALT:-raw=2d,1m=14d,10m}
if [ "$ALT" != off ]; then
	cp -a "$d/raw" "$d/alt"
	"$C" import --data "$d/alt" --downsample "$ALT" > /dev/null
	alt_b=$(size "$d/alt")
	awk -v r="$raw_b" -v s="$alt_b" -v i="$raw_dict" -v h="$H" -v p="$ALT" 'BEGIN {
		printf "              with %s instead: %d bytes = 1/%.2f", p, s, r / s
		if (h < 24)
			printf "; whole days 1/%.2f", (i + (r - i) * 24 / h) / (i + (s - i) * 24 / h)
		printf "\n" }'
	rm -rf "$d/alt"
fi

# best of 3 wall times of a query (the top table, as a person runs it: -f json
# spends seconds building the call tree of a 20000-stack profile, whatever
# the store), then its total and resolution (-f json, not timed) into $qt $qr
best3() {
	best=
	for _ in 1 2 3; do
		$TIME -f '%e' -o "$d/t" "$C" query --data "$@" > "$d/q.top"
		s=$(cat "$d/t")
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
	done
	"$C" query --data "$@" -f json > "$d/q.json"
	qt=$(jq .total "$d/q.json")
	qr=$(jq -r '.resolution // "?"' "$d/q.json")
}
two=$(((now / 86400 - 14) * 86400))
for q in whole day last; do
	case $q in
	whole) args="--since $((D + 1))d"; what="the whole $D days" ;;
	day) args="--from $two --to $((two + 86400))"; what="one day 2 weeks ago" ;;
	# (fixed ends, taken once: with --since 1h the window slides between the queries of the two
	# stores, and a 10 s interval of samples slips out of it)
	last) args="--from $((now - 3600)) --to $now"; what="the last hour" ;;
	esac
	# shellcheck disable=SC2086
	best3 "$d/raw" $args cpu:cpu; rs=$best; rt=$qt
	# shellcheck disable=SC2086
	best3 "$d/ds" $args cpu:cpu; ds=$best
	case $q in
	whole) target=" (target <= 1 s: $(verdict '<=' "$ds" 1))" ;;
	last) target=" (target: as fast as raw: $(verdict '<=' "$ds" "$(awk -v a="$rs" 'BEGIN { print a * 1.1 + 0.02 }')"))" ;;
	*) target= ;;
	esac
	printf 'query %-22s raw %5ss, downsampled %5ss at %s%s; totals %s\n' "$what:" "$rs" "$ds" "$qr" "$target" \
		"$([ "$rt" = "$qt" ] && echo equal || echo "DIFFER ($rt, $qt)")"
	[ "$rt" = "$qt" ] || exit 1
done
[ "$H" = 24 ] || echo "(the whole-range query reads about $(awk -v h="$H" 'BEGIN { print 24 / h }') times as many entries with whole days)"

# BENCH_DS_REAL=DIR: a store recorded from a real machine (e.g. `cprof record --all -F 19` during a
# build and test run), its days downsampled as if they were 3 days old (5m) and 15 days old (1h)
# under faketime: entries and bytes of the sample partitions per tier, against store_gen's above
if [ -n "${BENCH_DS_REAL:-}" ]; then
	need_tools faketime sqlite3
	parts_stats() { # DIR: entries and bytes of its days
		e=0
		for f in "$1"/days/*.db; do
			e=$((e + $(sqlite3 "$f" "SELECT coalesce(sum(entries), 0) FROM blocks")))
		done
		echo "$e $(du -cb "$1"/days/*.db | tail -1 | cut -f1)"
	}
	rm -rf "$d/real"
	cp -a "$BENCH_DS_REAL" "$d/real"
	# whole pages: the recorder's open WAL folded in first
	for f in "$d"/real/days/*.db; do sqlite3 "$f" "PRAGMA wal_checkpoint(TRUNCATE); VACUUM" > /dev/null; done
	read -r re rb <<-EOT
	$(parts_stats "$d/real")
	EOT
	echo "a real store ($BENCH_DS_REAL): raw $re entries, $rb bytes"
	for age in 3 15; do
		rm -rf "$d/real$age"
		cp -a "$d/real" "$d/real$age"
		faketime -f "+${age}d" "$C" import --data "$d/real$age" --downsample "$POLICY" > /dev/null
		for f in "$d"/real$age/days/*.db; do sqlite3 "$f" "VACUUM" > /dev/null; done
		read -r e by <<-EOT
		$(parts_stats "$d/real$age")
		EOT
		awk -v a="$age" -v e="$e" -v b="$by" -v re="$re" -v rb="$rb" 'BEGIN {
			printf "  as if %2d days old: %d entries (1/%.2f), %d bytes (1/%.2f), summaries included\n",
				a, e, re / e, b, rb / b }'
	done
fi
