# bare_share.awk: per program (comm), from `go tool pprof -raw` of a cprof profile: the samples, those
# with user frames, and those whose user leaf frame has no mapping (a bare address), as
# "COMM SAMPLES WITH-USER-FRAMES BARE-USER-LEAF" lines. Used by bench/storm.sh and
# tests/cli/test-record-storm.sh. go tool pprof -raw lists the samples (location ids, leaf first, then
# the labels) and the locations ("ID: 0xADDR M=MAPPING ...", no M= or M=0: no mapping); a user frame
# is one below the kernel's half of the address space.
/^Samples:/ { sec = "s"; next }
/^Locations/ { sec = "l"; next }
/^Mappings/ { sec = "m"; next }
sec == "s" && /^ *[0-9]+ +[0-9]+:/ { n++; cnt[n] = $1; sub(/^[^:]*: */, ""); ids[n] = $0; next }
sec == "s" && /comm:\[/ { c = $0; sub(/.*comm:\[/, "", c); sub(/\].*/, "", c); gsub(/ /, "_", c); comm[n] = c; next }
sec == "l" && /^ *[0-9]+: 0x/ {
	id = $1; sub(/:/, "", id)
	a = $2; sub(/^0x/, "", a)
	user[id] = length(a) < 12 || (length(a) == 12 && substr(a, 1, 1) < "8")
	m = 0
	for (i = 3; i <= NF; i++) if ($i ~ /^M=/) { m = substr($i, 3) + 0; break }
	bare[id] = m == 0
}
END {
	for (i = 1; i <= n; i++) {
		k = split(ids[i], v, " ")
		tot[comm[i]] += cnt[i]
		for (j = 1; j <= k; j++) if (user[v[j]]) break
		if (j > k) continue
		u[comm[i]] += cnt[i]
		if (bare[v[j]]) nb[comm[i]] += cnt[i]
	}
	for (c in tot) print c, tot[c], u[c] + 0, nb[c] + 0
}
