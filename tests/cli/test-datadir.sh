#!/bin/sh
# Where the store is, for every command that opens one: record, import,
# serve, scrape (--config --once, a URL, --targets), query, merge, diff and
# top --from-store, each run for real with the store directory chosen each
# way: --data DIR, $CPROF_DATA, the configuration file's data: (at the top
# level, and in the command's section), and the default /var/lib/cprof.
# Writers must create store.db and days/ there and nowhere else; readers
# must read that store (every candidate directory holds a different one).
# Each run is in a private mount namespace in which / is read-only but for
# $T, and /var/lib/cprof is a directory of $T: a store written anywhere
# else (/, the working directory) fails, and the real /var/lib/cprof is
# never touched.  The precedence is the documented one (cprof(1),
# Precedence): flag > environment > the command's section > top level >
# default; for cprof serve, which reads the file's data: itself, the file
# wins over $CPROF_DATA (cprof-serve(1)).
. "$srcdir/tests/cli/lib.sh"
[ -n "${GO:-}" ] || GO=$(command -v go || true)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy CPROF_REMOTE CPROF_TOKEN_FILE CPROF_DATA \
	XDG_DATA_HOME
[ -n "$GO" ] || skip_all "go is not installed (apt-get install golang-go)"
command -v unshare >/dev/null || skip_all "unshare is not installed (apt-get install util-linux)"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
PIDS=
made_varlib=
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; [ -z "$made_varlib" ] || rmdir /var/lib/cprof 2>/dev/null; rm -rf "$T"' EXIT
export HOME="$T/home"
mkdir -p "$HOME"
# the mount point (left empty: removed at exit when this test made it)
if [ "$(id -u)" = 0 ] && ! [ -d /var/lib/cprof ]; then
	mkdir -p /var/lib/cprof && made_varlib=1
fi
mkdir -p "$T/probe"
unshare -m sh -c 'mount --bind "$1" /var/lib/cprof && mount --bind "$2" "$2" && mount -o remount,bind,ro /' \
	sh "$T/probe" "$T" 2>/dev/null ||
	skip_all "no private mount namespace here (unshare -m and mount need root)"

# in_ns VARLIB CWD COMMAND...: COMMAND from CWD in a private mount namespace
# where VARLIB is /var/lib/cprof and / is read-only but for $T
in_ns() {
	_v=$1 _cwd=$2
	shift 2
	${IN_NS_EXEC:+exec} unshare -m sh -c 'mkdir -p /var/lib/cprof && mount --bind "$1" /var/lib/cprof && mount --bind "$2" "$2" &&
		mount -o remount,bind,ro / && cd "$3" && shift 3 && exec "$@"' sh "$_v" "$T" "$_cwd" "$@"
}
# where D: the directories of case D that hold a store (store.db and days/),
# then any other of them that is not empty (NAME?), then / if it holds one
where() {
	_w=
	for _x in flag env cfgtop cfgsec varlib cwd home; do
		if [ -f "$1/$_x/store.db" ] && [ -d "$1/$_x/days" ]; then _w="$_w $_x"
		elif [ -n "$(ls -A "$1/$_x" 2>/dev/null)" ]; then _w="$_w $_x?"; fi
	done
	for _x in /store.db /days /spool /scrape-targets.json; do
		[ -e "$_x" ] && _w="$_w $_x"
	done
	printf '%s\n' "${_w# }"
}
# setup D COMMAND WAY [EXTRA-YAML]: a fresh case directory D for COMMAND chosen
# WAY (flag, env, cfgtop, cfgsec, default); sets $ENV (env arguments), $DATA
# (--data DIR or nothing) and writes $D/cprof.yaml (with EXTRA-YAML)
setup() {
	_d=$1 _c=$2 _way=$3 _extra=${4:-}
	rm -rf "$_d"
	mkdir -p "$_d/cwd" "$_d/varlib" "$_d/home"
	DATA='' ENV="-u CPROF_DATA CPROF_CONFIG="
	: >"$_d/cprof.yaml"
	case $_way in
	flag | env) printf 'data: %s\n%s:\n  data: %s\n' "$_d/cfgtop" "$_c" "$_d/cfgsec" >"$_d/cprof.yaml" ;;
	cfgtop) printf 'data: %s\n' "$_d/cfgtop" >"$_d/cprof.yaml" ;;
	cfgsec) printf 'data: %s\n%s:\n  data: %s\n' "$_d/cfgtop" "$_c" "$_d/cfgsec" >"$_d/cprof.yaml" ;;
	esac
	printf '%s' "$_extra" >>"$_d/cprof.yaml"
	case $_way in
	flag) DATA="--data=$_d/flag" ENV="CPROF_DATA=$_d/env CPROF_CONFIG=$_d/cprof.yaml" ;;
	env) ENV="CPROF_DATA=$_d/env CPROF_CONFIG=$_d/cprof.yaml" ;;
	cfgtop | cfgsec) ENV="-u CPROF_DATA CPROF_CONFIG=$_d/cprof.yaml" ;;
	esac
}
# expect WAY: the directory a command must use when chosen WAY
expect() { case $1 in default) echo varlib ;; *) echo "$1" ;; esac; }
WAYS="flag env cfgtop cfgsec default"
desc() { # WAY: how the directory was chosen, in words
	case $1 in
	flag) echo "--data DIR (over \$CPROF_DATA and the file's data:)" ;;
	env) echo "\$CPROF_DATA (over the file's data:, top level and section)" ;;
	cfgtop) echo "the file's top-level data:" ;;
	cfgsec) echo "the file's data: in the command's section (over the top level)" ;;
	default) echo "the default /var/lib/cprof" ;;
	esac
}

# ---- a real pprof target (Go net/http/pprof) ----
if ! GOCACHE=$T/gocache GO111MODULE=off "$GO" build -o "$T/target" "$FIXTURES/scrape/target.go" 2>"$T/gobuild.err"; then
	ok "go build of tests/fixtures/scrape/target.go" false
	sed 's/^/# /' "$T/gobuild.err"
	done_testing
	exit
fi
"$T/target" -die-after 600s -goroutines 7 >"$T/target.addr" 2>/dev/null &
PIDS="$PIDS $!"
i=0
while [ $i -lt 100 ] && ! [ -s "$T/target.addr" ]; do sleep 0.05; i=$((i + 1)); done
ADDR=$(head -n 1 "$T/target.addr")
like "$ADDR" '^127\.0\.0\.1:[0-9]+$' "the pprof target is up"
# scrape_configs of one job NAME against the target, goroutine profiles only
jobs_yaml() {
	printf 'scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: ["%s"]\n' "$1" "$ADDR"
	printf '    profiling_config:\n      pprof_config:\n'
	for p in process_cpu memory block mutex; do printf '        %s: {enabled: false}\n' "$p"; done
}

# ---- writers ----
for way in $WAYS; do
	w=$(expect "$way")
	# import
	D=$T/import-$way
	setup "$D" import "$way"
	run in_ns "$D/varlib" "$D/cwd" env $ENV "$CPROF" import $DATA --time now "$FIXTURES/cpu-before.pb.gz"
	is "$rc:$(where "$D")" "0:$w" "import, $(desc "$way"): the store is in $w and nowhere else"
	[ "$rc" = 0 ] || diag "$err"

	# scrape --config FILE --once: FILE is also read as the configuration file
	D=$T/scrape-$way
	setup "$D" scrape "$way" "$(jobs_yaml once)
"
	run in_ns "$D/varlib" "$D/cwd" env $ENV CPROF_CONFIG= "$CPROF" scrape --config "$D/cprof.yaml" --once $DATA
	is "$rc:$(where "$D")" "0:$w" "scrape --config FILE --once, $(desc "$way"): the store is in $w and nowhere else"
	[ "$rc" = 0 ] || diag "$err"
	ok "  and its targets' state beside it" test -s "$D/$w/scrape-targets.json"

	# scrape URL: one scrape into the store
	D=$T/scrape1-$way
	setup "$D" scrape "$way"
	run in_ns "$D/varlib" "$D/cwd" env $ENV "$CPROF" scrape --profile goroutine $DATA "http://$ADDR"
	is "$rc:$(where "$D")" "0:$w" "scrape URL, $(desc "$way"): the store is in $w and nowhere else"
	[ "$rc" = 0 ] || diag "$err"
done

# serve: the file's data: wins over $CPROF_DATA (documented)
serve_case() { # WAY EXPECTED DESCRIPTION
	D=$T/serve-$1
	setup "$D" serve "$1"
	[ "$1" != envfile ] || { setup "$D" serve cfgtop; ENV="CPROF_DATA=$D/env CPROF_CONFIG=$D/cprof.yaml"; }
	[ "$1" != env ] || ENV="CPROF_DATA=$D/env CPROF_CONFIG="
	: >"$D/out"
	# in a subshell that becomes the server (exec), so that killing $_p stops the server itself
	(IN_NS_EXEC=1; in_ns "$D/varlib" "$D/cwd" env $ENV "$CPROF" serve --listen 127.0.0.1:0 $DATA) >"$D/out" 2>"$D/err" &
	_p=$!
	PIDS="$PIDS $_p"
	i=0
	while [ $i -lt 200 ] && ! grep -q '^listening on ' "$D/out" && kill -0 "$_p" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	url=$(awk '/^listening on / {print $3; exit}' "$D/out")
	code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$FIXTURES/cpu-before.pb.gz" \
		"$url/api/v1/push?name=dd" 2>/dev/null)
	kill "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
	is "$code:$(where "$D")" "200:$2" "serve, $3: the store is in $2 and nowhere else"
	[ "$code" = 200 ] || sed 's/^/# /' "$D/err"
}
serve_case flag flag "$(desc flag)"
serve_case env env "\$CPROF_DATA"
serve_case envfile cfgtop "the file's data: (over \$CPROF_DATA, as cprof-serve(1) says)"
serve_case cfgtop cfgtop "$(desc cfgtop)"
serve_case cfgsec cfgsec "$(desc cfgsec)"
serve_case default varlib "$(desc default)"

# record (root: BPF)
if [ "$(id -u)" = 0 ]; then
	for way in $WAYS; do
		w=$(expect "$way")
		D=$T/record-$way
		setup "$D" record "$way"
		run in_ns "$D/varlib" "$D/cwd" env $ENV timeout -s KILL 60 "$CPROF" record -a -d 1s $DATA
		is "$rc:$(where "$D")" "0:$w" "record -a -d 1s, $(desc "$way"): the store is in $w and nowhere else"
		[ "$rc" = 0 ] || diag "$err"
	done
else
	ok "running as root: cprof record needs root or CAP_BPF+CAP_PERFMON, and CI runs this test as root" false
fi

# an empty --data is a usage error, not the root directory
D=$T/empty
for c in import query scrape serve record; do
	setup "$D" "$c" default
	case $c in
	import) set -- import "$FIXTURES/cpu-before.pb.gz" ;;
	query) set -- query cpu ;;
	scrape) set -- scrape --profile goroutine "http://$ADDR" ;;
	serve) set -- serve --listen 127.0.0.1:0 ;;
	record) set -- record -a -d 1s ;;
	esac
	run in_ns "$D/varlib" "$D/cwd" env $ENV timeout -s KILL 60 "$CPROF" "$@" --data ''
	is "$rc:$(where "$D")" "2:" "$c --data '': a usage error, and no store anywhere"
	like "$err" "^cprof $c: --data wants a directory" "  it says what is wrong"
done

# ---- readers ----
# every candidate directory holds its own store: profiles of type w_NAME
# (import) and the targets of job w_NAME (scrape --once)
S=$T/seeded
for x in flag env cfgtop cfgsec varlib; do
	"$CPROF" import --data "$S/$x" --name "w_$x" --time now "$FIXTURES/cpu-before.pb.gz" >/dev/null &&
		jobs_yaml "w_$x" >"$S/$x.yaml" &&
		CPROF_CONFIG= "$CPROF" scrape --config "$S/$x.yaml" --once --data "$S/$x" 2>/dev/null ||
		echo "# seeding $S/$x failed"
done
ok "five stores seeded" test "$(ls "$S"/*/store.db | wc -l)" = 5
reader() { # WAY DESCRIPTION COMMAND ARGS... (w_@ in ARGS: w_ and the name of the expected store)
	_way=$1 _what=$2
	shift 2
	w=$(expect "$_way")
	D=$T/read
	setup "$D" "$1" "$_way"
	for _x in flag env cfgtop cfgsec; do ln -s "$S/$_x" "$D/$_x"; done
	_c=$1
	shift
	_args=
	for _a in "$@"; do _args="$_args $(printf '%s' "$_a" | sed "s/@/$w/g")"; done
	# shellcheck disable=SC2086
	run in_ns "$S/varlib" "$D/cwd" env $ENV "$CPROF" "$_c" $DATA $_args
	_stray=$(ls -A "$D/cwd" "$D/home" "$D/varlib" 2>/dev/null | grep -v ':$' | grep -v '^$')
	for _x in /store.db /days; do [ -e "$_x" ] && _stray="$_stray $_x"; done
	is "$rc:$_stray" "0:" "$_c${_what:+ $_what}, $(desc "$_way"): it read the store in $w, wrote nothing elsewhere"
	[ "$rc" = 0 ] || diag "$err"
	[ -n "$out" ] || diag "no output"
}
for way in $WAYS; do
	reader "$way" "" query w_@:cpu -f json
	like "$out" '"total": *[1-9]' "  query: the profile of that store"
	reader "$way" "" merge w_@:cpu -f top
	reader "$way" "" diff w_@:cpu w_@:cpu
	reader "$way" "--from-store" top --from-store --stdio --type w_@:cpu
	reader "$way" "--targets" scrape --targets
	like "$out" "w_$w" "  scrape --targets: the targets of that store's scraper"
done

done_testing
