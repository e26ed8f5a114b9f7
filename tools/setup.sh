#!/bin/sh
# Installs what cprof needs on Debian 12 (as root) and builds it in build/:
# the BPF toolchain for record (clang, llvm, bpftool, libbpf, libdw) and
# linux-perf, which the benchmarks compare record with; the libraries of serve
# (libmicrohttpd, GnuTLS, libcurl, libyaml) and what its tests drive it with
# (curl, openssl, chromium for the web view, python3-pil for screenshots), ncurses
# for top and tmux to drive its screen in the tests; libdebuginfod (record's
# names for stripped binaries) and the debuginfod server its test runs; systemd (systemd-analyze
# verifies the units that make install installs) and python3-yaml (the test of
# the installed configuration file parses it); faketime (the suite runs the tests
# about stored time again with the clock moved ahead); with npm, the official
# Pyroscope Node.js client that test-pyroscope.sh drives serve with; python3-dev, whose
# headers and embedded interpreter check_python compares the Python frame layouts with.
# Safe to run again: it installs only what is missing and rebuilds what changed.
set -eu
cd "$(dirname "$0")/.."
PKGS="build-essential autoconf automake pkg-config protobuf-c-compiler libprotobuf-c-dev zlib1g-dev
libjansson-dev libpcre2-dev libsqlite3-dev sqlite3 check clang golang-go jq libxml2-utils groff man-db zsh time
libbpf-dev libdw-dev libelf-dev libdebuginfod-dev debuginfod bpftool llvm linux-perf
libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev libyaml-dev curl openssl chromium python3-pil
libncurses-dev tmux systemd python3-yaml faketime python3-dev"
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# the official Pyroscope Node.js client, for tests/cli/test-pyroscope.sh: from
# npm, outside the source tree, only when missing
NPM_PREFIX=/usr/local/lib/cprof-test-npm
if command -v npm >/dev/null && [ ! -f "$NPM_PREFIX/node_modules/@pyroscope/nodejs/package.json" ]; then
	echo "setup: installing @pyroscope/nodejs@0.6.4 in $NPM_PREFIX"
	npm install --prefix "$NPM_PREFIX" --no-save --no-audit --no-fund --loglevel=error @pyroscope/nodejs@0.6.4 >/dev/null
fi
[ -x configure ] && [ configure -nt configure.ac ] && [ Makefile.in -nt Makefile.am ] || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure -q --enable-werror --sysconfdir=/etc
make -s -j"$(nproc)"
echo "setup: built $(pwd)/cprof"
