#!/bin/sh
# make install into a staging directory (DESTDIR): the binary, every manual
# page, the completions, the configuration file and the systemd units are
# there, the units name the installed binary and pass systemd-analyze verify,
# the configuration file is all comments and its examples are options of the
# commands; a reinstall keeps an edited configuration file and uninstall
# removes everything else; make install prefix=DIR makes units for DIR.  As
# root: cprof record with only the capabilities of cprof-record.service
# records and symbolizes a process of another user, one whose binary was
# deleted, and kernel frames; without CAP_BPF it fails in one line.
. "$srcdir/tests/cli/lib.sh"

MAKE=${MAKE:-make}
command -v "$MAKE" >/dev/null 2>&1 || skip_all "make is not installed"
bg="" # background workloads, killed at exit
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
TOP=$(cd "$top_builddir" && pwd)

# mk ARGS: make in the build tree (not the jobserver of the make running the
# tests), its output in $T/make.log, shown when it fails
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" -C "$TOP" "$@" >"$T/make.log" 2>&1 && return 0
	tail -n 20 "$T/make.log" | sed 's/^/#   make: /'
	return 1
}
# dirs [VAR=VALUE...]: sets bindir, man1dir, ... as make install would use them
dirs() {
	printf '%s\n' 'cprof-test-print-dirs:' \
		'	@echo "bindir='\''$(bindir)'\''; man1dir='\''$(man1dir)'\''; mandir='\''$(mandir)'\''"' \
		'	@echo "bashcompdir='\''$(bashcompdir)'\''; zshcompdir='\''$(zshcompdir)'\''"' \
		'	@echo "sysconfdir='\''$(sysconfdir)'\''; unitdir='\''$(systemdsystemunitdir)'\''"' \
		'	@echo "units='\''$(notdir $(systemdsystemunit_DATA))'\''"' >"$T/dirs.mk"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" -s -C "$TOP" -f Makefile -f "$T/dirs.mk" "$@" \
		cprof-test-print-dirs >"$T/dirs.sh" 2>"$T/dirs.err" && . "$T/dirs.sh"
}
ALL_UNITS="cprof-record.service cprof-record-once.service cprof-record.timer cprof-serve.service"

# ---- make install DESTDIR=stage ----
S=$T/stage
ok "the install directories are known (make -f Makefile)" dirs
[ -n "${bindir:-}" ] || { sed 's/^/#   /' "$T/dirs.err"; done_testing; exit; }
diag "bindir $bindir, sysconfdir $sysconfdir, units: ${units:-none} in $unitdir"
ok "make install DESTDIR=stage" mk install DESTDIR="$S"
B=$S$bindir/cprof
ok "bin/cprof is installed and executable" test -x "$B"
cp "$B" "$T/cprof-installed" # (for the end, after uninstall)
run "$B" --version
is "$rc:$out" "0:$("$CPROF" --version)" "the installed cprof runs: --version"

# every command but help has its manual page, and no page is left over
commands=$("$CPROF" --list-commands)
ok "man1/cprof.1" test -f "$S$man1dir/cprof.1"
pages=0
for c in $commands; do
	[ "$c" = help ] && continue
	ok "man1/cprof-$c.1 (cprof $c)" test -f "$S$man1dir/cprof-$c.1"
	pages=$((pages + 1))
done
is "$(ls "$S$man1dir" | grep -c '^cprof-.*\.1$')" "$pages" "one cprof-CMD.1 page per command, no other"
ok "the bash completion is installed" cmp "$srcdir/completions/cprof.bash" "$S$bashcompdir/cprof"
ok "the zsh completion is installed" cmp "$srcdir/completions/_cprof" "$S$zshcompdir/_cprof"

# ---- the configuration file ----
conf=$S$sysconfdir/cprof/cprof.yaml
ok "the configuration file is installed as \$(sysconfdir)/cprof/cprof.yaml" cmp "$srcdir/etc/cprof.yaml" "$conf"
is "$(grep -Ev '^(#.*)?$' "$conf")" "" "as installed, every line of it is a comment (it changes nothing)"
# its examples, uncommented: "#key: value", "#  key: value", "#  - item"
sed -E 's/^#((  )*([a-z_][a-z0-9_-]*:( |$)|- ))/\1/' "$conf" >"$T/examples.yaml"
if command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' 2>/dev/null; then
	run python3 -c 'import sys, yaml; sys.exit(yaml.safe_load(open(sys.argv[1])) is not None)' "$conf"
	is "$rc:$err" "0:" "it is valid YAML, empty (python3 yaml)"
	# the uncommented examples: "SECTION KEY" (- for the top level) per setting
	run python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert isinstance(d, dict), "not a mapping"
for k, v in d.items():
    if k in sys.argv[2:] and isinstance(v, dict):
        for kk in v:
            print(k, kk)
    elif k == "scrape_configs":
        assert isinstance(v, list) and all("job_name" in j for j in v), "scrape_configs: a list of jobs"
        print("-", k)
    else:
        print("-", k)' "$T/examples.yaml" $commands
	is "$rc:$err" "0:" "its examples, uncommented, are valid YAML"
	settings=$out
	ok "and there are examples of the settings ($(printf '%s\n' "$settings" | wc -l) of them)" \
		test "$(printf '%s\n' "$settings" | wc -l)" -ge 15
	for c in $commands; do "$CPROF" --list-options "$c" >"$T/opts.$c" 2>/dev/null; done
	# known SECTION KEY: KEY is an option of SECTION's command, or of any at the top level
	known() {
		k=$(printf '%s' "$2" | tr _ -)
		case $k in help | config | print-config) return 1 ;; esac
		[ "$1:$k" = "-:scrape-configs" ] && return 0
		if [ "$1" = - ]; then cat "$T"/opts.*; else cat "$T/opts.$1"; fi | grep -qx -- "--$k"
	}
	printf '%s\n' "$settings" >"$T/settings"
	while read -r sec key; do
		if [ "$key" = scrape_configs ]; then where="(Parca's scrape jobs)"; elif [ "$sec" = - ]; then
			where="at the top level: an option of some command"; else where="in $sec: an option of cprof $sec"; fi
		if known "$sec" "$key"; then _result 0 "example '$key' $where"; else
			_result 1 "example '$key' $where"; fi
	done <"$T/settings"
	for want in "- data" "- log-level" "- retention" "- max-store-size" "- remote" "- token-file" \
		"record freq" "record flush-interval" "record label" "record spool-size" \
		"serve listen" "serve max-body" "serve tls-cert" "serve tls-key" "- scrape_configs"; do
		like "$settings" "^$want\$" "the examples show '$want'"
	done
else
	_result 0 "the configuration file is valid YAML # SKIP python3-yaml is not installed"
fi

# ---- the systemd units ----
U=$S$unitdir
if [ -z "${units:-}" ]; then
	_result 0 "systemd units # SKIP configured --without-systemdsystemunitdir"
else
	is "$units" "$ALL_UNITS" "four units are installed"
	for u in $ALL_UNITS; do
		f=$U/$u
		ok "$u is in the unit directory ($unitdir)" test -f "$f"
		[ -f "$f" ] || continue
		unlike "$(cat "$f")" '@[A-Za-z_]+@' "$u: no @variable@ is left"
		like "$(cat "$f")" '^Documentation=man:cprof' "$u: Documentation= names its manual page"
		like "$(cat "$f")" '^WantedBy=(multi-user|timers)\.target$' "$u: [Install] WantedBy="
		case $u in *.timer) continue ;; esac
		exe=$(sed -n 's/^ExecStart=//p' "$f")
		like "$exe" "^$bindir/cprof (record|serve)( |\$)" "$u: ExecStart runs the installed binary ($exe)"
		# every option it gives is an option of the command
		set -- $exe
		cmd=$2
		shift 2
		for a in "$@"; do
			case $a in -*) ;; *) continue ;; esac
			if "$CPROF" --list-options "$cmd" | grep -qx -- "$a"; then _result 0 "$u: cprof $cmd has $a"; else
				_result 1 "$u: cprof $cmd has $a"; fi
		done
	done
	rec=$U/cprof-record.service once=$U/cprof-record-once.service
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$rec")
	like "$caps" 'CAP_BPF' "cprof-record.service: CapabilityBoundingSet has CAP_BPF ($caps)"
	is "$(sed -n 's/^AmbientCapabilities=//p' "$rec")" "$caps" "cprof-record.service: AmbientCapabilities are the same"
	# record's settings that would hide processes, /proc/kallsyms or /tmp/perf-PID.map
	is "$(grep -E '^(ProtectProc|ProcSubset|PrivatePIDs|PrivateUsers|ProtectKernelTunables|ProtectKernelLogs|PrivateTmp=yes)' "$rec" "$once")" "" \
		"the record units hide neither processes nor /proc/kallsyms nor /tmp"
	# the caches (kernel symbols, the BPF program's kernel types) are writable under ProtectSystem=strict
	for f in "$rec" "$once"; do
		like "$(cat "$f")" '^CacheDirectory=cprof$' "$(basename "$f"): CacheDirectory=cprof (/var/cache/cprof, the caches)"
		like "$(cat "$f")" '^CacheDirectoryMode=0700$' "$(basename "$f"): only root reads it (kernel addresses)"
	done
	# cprof-record-once.service has the hardening of cprof-record.service
	hardening() { sed -n '/^# --- privileges/,/^\[Install\]/p' "$1"; }
	ok "cprof-record-once.service has the hardening of cprof-record.service" \
		test -n "$(hardening "$rec")" -a "$(hardening "$rec")" = "$(hardening "$once")"
	is "$(sed -n 's/^Unit=//p' "$U/cprof-record.timer")" cprof-record-once.service "the timer starts cprof-record-once.service"
	is "$(grep -c '^CapabilityBoundingSet=$' "$U/cprof-serve.service")" 1 "cprof-serve.service has no capability"

	# systemd-analyze verify --root=ROOT: ROOT has the staged units in
	# /etc/systemd/system (units outside the search path are not found), the
	# installed binary at its path (ExecStart is checked in ROOT) and the
	# host's targets (the units' dependencies); the staged manual pages are
	# on MANPATH (Documentation= is checked with man).  verify exits 0 on
	# unknown keys and values it ignores: a clean unit has no output at all.
	if ! command -v systemd-analyze >/dev/null 2>&1; then
		_result 0 "systemd-analyze verify # SKIP systemd-analyze is not installed"
	else
		V=$T/root
		mkdir -p "$V/etc/systemd/system" "$V/usr/lib/systemd/system" "$V$bindir"
		cp "$B" "$V$bindir/cprof"
		for u in $ALL_UNITS; do cp "$U/$u" "$V/etc/systemd/system/"; done
		for d in /usr/lib/systemd/system /lib/systemd/system; do
			[ -f "$d/multi-user.target" ] && cp "$d"/*.target "$V/usr/lib/systemd/system/" && break
		done
		man=--man=yes
		if ! command -v man >/dev/null 2>&1; then man=--man=no; diag "man is not installed: Documentation= is not checked"; fi
		# verify UNIT...: 0 when systemd-analyze verify says nothing and exits 0
		verify() {
			paths=
			for u in "$@"; do paths="$paths /etc/systemd/system/$u"; done
			MANPATH=$S$mandir systemd-analyze verify "$man" --root="$V" $paths >"$T/verify.out" 2>&1
			vrc=$?
			[ "$vrc" = 0 ] && [ ! -s "$T/verify.out" ]
		}
		if verify $ALL_UNITS; then _result 0 "systemd-analyze verify: the four units are clean"; else
			_result 1 "systemd-analyze verify: the four units are clean"
			sed 's/^/#   /' "$T/verify.out"; diag "exit status $vrc"
		fi
		# and it can fail: broken copies of cprof-record.service
		r=$V/etc/systemd/system/cprof-record.service
		sed 's/^Restart=/Restrat=/' "$r" >"$V/etc/systemd/system/cprof-broken-key.service"
		sed "s|^ExecStart=$bindir/cprof |ExecStart=$bindir/cprof-missing |" "$r" >"$V/etc/systemd/system/cprof-broken-exec.service"
		sed 's|^Documentation=.*|Documentation=man:cprof-missing(1)|' "$r" >"$V/etc/systemd/system/cprof-broken-doc.service"
		sed 's/^KillSignal=.*/KillSignal=SIGNOPE/' "$r" >"$V/etc/systemd/system/cprof-broken-signal.service"
		for b in key exec doc signal; do
			[ $b = doc ] && [ $man = --man=no ] && continue
			if verify cprof-broken-$b.service; then
				_result 1 "systemd-analyze verify rejects a unit with a broken $b"; else
				_result 0 "systemd-analyze verify rejects a unit with a broken $b: $(head -n 1 "$T/verify.out")"
			fi
		done
		# the exposure levels, for the record
		for u in cprof-record.service cprof-serve.service; do
			l=$(systemd-analyze security --offline=yes --root="$V" "/etc/systemd/system/$u" 2>/dev/null | tail -n 1)
			[ -n "$l" ] && diag "systemd-analyze security: ${l#→ }"
		done
	fi
fi

# ---- make install again, onto an edited configuration file; uninstall ----
printf 'log-level: debug\n' >>"$conf"
cp "$conf" "$T/edited.yaml"
ok "make install DESTDIR=stage again" mk install DESTDIR="$S"
ok "it keeps the edited configuration file" cmp "$T/edited.yaml" "$conf"
like "$(cat "$T/make.log")" 'cprof\.yaml exists: kept' "and says so"
ok "make uninstall DESTDIR=stage" mk uninstall DESTDIR="$S"
is "$(cd "$S" && find . ! -type d | sort)" "./${sysconfdir#/}/cprof/cprof.yaml" \
	"it removes every file but the edited configuration file"
ok "which is intact" cmp "$T/edited.yaml" "$conf"
S2=$T/stage2
ok "make install DESTDIR=stage2" mk install DESTDIR="$S2"
ok "make uninstall DESTDIR=stage2 (an unedited configuration)" mk uninstall DESTDIR="$S2"
is "$(cd "$S2" && find . ! -type d | sort)" "" "it removes every file"

# ---- make install prefix=DIR: the units run DIR's binary ----
if [ -n "${units:-}" ]; then
	A=$T/alt S3=$T/stage3
	ok "make install prefix=DIR DESTDIR=stage3" mk install prefix="$A" DESTDIR="$S3"
	dirs prefix="$A"
	ok "the binary is in DIR/bin" test -x "$S3$A/bin/cprof"
	is "$(sed -n 's/^ExecStart=//p' "$S3$unitdir/cprof-record.service")" "$A/bin/cprof record --all" \
		"cprof-record.service runs DIR/bin/cprof"
	is "$(sed -n 's/^ExecStart=//p' "$S3$unitdir/cprof-serve.service")" "$A/bin/cprof serve" \
		"cprof-serve.service runs DIR/bin/cprof"
	dirs
	ok "make, without prefix=, makes the units for the configured prefix again" \
		mk systemd/cprof-record.service systemd/cprof-record-once.service systemd/cprof-record.timer systemd/cprof-serve.service
	like "$(sed -n 's/^ExecStart=//p' "$TOP/systemd/cprof-record.service")" "^$bindir/cprof " \
		"(systemd/cprof-record.service runs $bindir/cprof)"
fi

# ---- the capabilities of cprof-record.service are enough for record ----
if [ "$(id -u)" != 0 ]; then
	_result 0 "record with the capabilities of cprof-record.service # SKIP not root"
	done_testing; exit
fi
if ! command -v setpriv >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1; then
	_result 0 "record with the capabilities of cprof-record.service # SKIP no setpriv or cc"
	done_testing; exit
fi
# the unit's set (from its template when no unit is installed)
[ -n "${units:-}" ] || caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$srcdir/systemd/cprof-record.service.in")
B=$T/cprof-installed
# CAP_BPF CAP_PERFMON... -> +bpf,+perfmon,...
capset() { printf '%s\n' "$@" | tr 'A-Z' 'a-z' | sed 's/^cap_/+/' | paste -sd, -; }
set -- $caps
ok "setpriv knows every capability of the unit ($*)" setpriv --bounding-set "-all,$(capset "$@")" true
# capped ARGS: ARGS as root with only the unit's capabilities (bounding set;
# root's permitted and effective sets are the bounding set after exec)
capped() { timeout -s KILL 60 setpriv --bounding-set "-all,$(capset $caps)" --inh-caps -all "$@"; }
run capped setpriv --dump
bset=$(printf '%s\n' "$out" | sed -n 's/^Capability bounding set: //p')
diag "the bounding set recorded with: $bset"
extra=$(printf '%s\n' "$bset" | tr ',' '\n' | while read -r c; do
	printf '%s\n' $caps | tr 'A-Z' 'a-z' | grep -qx "cap_$c" || echo "$c"; done)
is "$extra" "" "and only those"

R=$FIXTURES/record
ok "builds the workload (cc -O2 -g -fomit-frame-pointer, with zlib)" \
	cc -O2 -g -fomit-frame-pointer -o "$T/work" "$R/work.c" -lz
[ -x "$T/work" ] || { done_testing; exit; }
# a process of another user, from a file only that user can read
# (CAP_DAC_READ_SEARCH), and a root process whose binary was deleted
# (CAP_SYS_PTRACE for its /proc/PID, CAP_CHECKPOINT_RESTORE for map_files/)
pids=""
if id nobody >/dev/null 2>&1; then
	chmod 711 "$T"
	mkdir "$T/nb" && cp "$T/work" "$T/nb/work" && chmod 700 "$T/nb" "$T/nb/work" && chown -R nobody "$T/nb"
	setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups "$T/nb/work" 30 & p=$!
	bg="$bg $p" pids="$pids nobody:$p"
else
	diag "no user nobody: the other user's process is left out"
fi
cp "$T/work" "$T/work-deleted"
"$T/work-deleted" 30 & p=$!
bg="$bg $p" pids="$pids deleted:$p"
# kernel frames: reading /dev/urandom (CAP_SYSLOG for the /proc/kallsyms addresses)
dd if=/dev/urandom of=/dev/null bs=64k 2>/dev/null & dd=$!
bg="$bg $dd"
sleep 0.5
rm -f "$T/work-deleted"

# the recordings run side by side, two seconds each, at 199 Hz: three workloads and dd share two cores, and
# at the default 19 Hz a workload got as few as 3 samples, none in hot_a
recs=""
for wp in $pids; do
	w=${wp%%:*} p=${wp#*:}
	capped "$B" record -q -F 199 -p "$p" -d 2s -o "$T/cap-$w.pb.gz" 2>"$T/cap-$w.err" & recs="$recs $!"
done
capped "$B" record -q -p "$dd" -d 2s -f folded -o "$T/cap-dd.folded" 2>"$T/cap-dd.err" & recs="$recs $!"
timeout -s KILL 60 "$B" record -q -p "$dd" -d 2s -f folded -o "$T/root-dd.folded" 2>/dev/null & recs="$recs $!"
for r in $recs; do wait "$r"; done
for wp in $pids; do
	w=${wp%%:*}
	case $w in
	nobody) what="another user's process, its binary readable by that user only" ;;
	*) what="a process whose binary was deleted" ;;
	esac
	if "$CPROF" query -i "$T/cap-$w.pb.gz" -f folded 2>/dev/null | grep -q ';hot_a [0-9]*$'; then
		_result 0 "with the unit's capabilities, record symbolizes $what (hot_a)"; else
		_result 1 "with the unit's capabilities, record symbolizes $what (hot_a)"
		sed 's/^/#   stderr: /' "$T/cap-$w.err"
		"$CPROF" query -i "$T/cap-$w.pb.gz" -f folded 2>&1 | head -n 5 | sed 's/^/#   /'
	fi
done
kre=';(ksys_read|vfs_read)(;| )'
if grep -Eq "$kre" "$T/root-dd.folded" 2>/dev/null; then
	if grep -Eq "$kre" "$T/cap-dd.folded"; then _result 0 "and kernel frames (vfs_read)"; else
		_result 1 "and kernel frames (vfs_read)"
		sed 's/^/#   stderr: /' "$T/cap-dd.err"; head -n 3 "$T/cap-dd.folded" | cut -c 1-300 | sed 's/^/#   /'
	fi
else
	_result 0 "and kernel frames # SKIP record as root shows no vfs_read either"
fi

# without CAP_BPF it fails, in one line
caps=$(printf '%s\n' $caps | grep -vx CAP_BPF)
run capped "$B" record -p "$dd" -d 1s -o "$T/nobpf.pb.gz"
is "$rc" 1 "without CAP_BPF, record exits 1"
like "$err" '^cprof record: .*CAP_BPF' "with an error naming CAP_BPF"
is "$(printf '%s\n' "$err" | wc -l)" 1 "in one line"
ok "and writes no file" test ! -e "$T/nobpf.pb.gz"

done_testing
