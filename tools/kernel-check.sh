#!/bin/sh
# SPDX-License-Identifier: MIT
# Does cprof record's BPF program pass the verifier of another kernel than the one running? Boots that kernel
# (by default Debian 12's own, the newest linux-image-6.1.0-NN-amd64 that apt offers) in a QEMU/KVM virtual
# machine whose root is this machine's / shared read-only over 9p, and there runs BUILDDIR/cprof record in
# the ways that load different programs (the verifier prunes on the read-only settings, so each way is a
# program of its own): a command, the whole system, with --off-cpu, a pid, a cgroup with --idle. A check
# passes when cprof exits 0 having taken samples (and, with --off-cpu, sent off-CPU stacks); a failing one
# prints the end of its log with libbpf's messages (CPROF_DEBUG=1), the verifier's log among them.
#
# usage: sh tools/kernel-check.sh BUILDDIR [KERNEL-IMAGE]
#   KERNEL-IMAGE: a bzImage (its modules from /lib/modules/VERSION) or a linux-image .deb (unpacked here);
#   default: the newest linux-image-6.1.0-*-amd64 package, downloaded with apt-get download (not installed:
#   nothing under /boot or /lib/modules changes, and no initramfs-tools or boot loader comes in).
#   Environment: KERNEL_CHECK_TIMEOUT, seconds the machine may run in all (default 600);
#   KERNEL_CHECK_ACCEL, kvm or tcg (default: kvm if /dev/kvm can run it, else tcg).
# Needs root, and what tools/setup.sh installs: qemu-system-x86, busybox-static, cpio.
# Prints the machine's results; exits 0 only if every check passed, 1 otherwise (with a one-line error), 2 on
# wrong usage.  tools/test.sh runs it.
set -u

die() {
	echo "kernel-check: $*" >&2
	exit 1
}

[ $# = 1 ] || [ $# = 2 ] || { echo "usage: sh tools/kernel-check.sh BUILDDIR [KERNEL-IMAGE]" >&2; exit 2; }
[ -d "$1" ] || die "$1: no such build directory"
build=$(cd "$1" && pwd)
cprof=$build/cprof
[ -x "$cprof" ] || die "$cprof: not built (run make in $build first)"
kernel=${2:-}
[ -z "$kernel" ] || [ -f "$kernel" ] || die "$kernel: no such kernel image"
case $kernel in '' | /*) ;; *) kernel=$(pwd)/$kernel ;; esac
limit=${KERNEL_CHECK_TIMEOUT:-600}
[ "$(id -u)" = 0 ] || die "run as root (apt-get, and the machine's root runs cprof record)"
# KVM where it can run a stock kernel; else QEMU's emulation (TCG: slower, but the verifier is the same code).
# A /dev/kvm of kvm_pvm (a PVM host, as in some sandboxes) runs only kernels built as PVM guests.
accel=${KERNEL_CHECK_ACCEL:-}
if [ -z "$accel" ]; then
	if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then accel=kvm; else accel=tcg; fi
fi
case $accel in
kvm) cpu=host ;;
tcg) cpu=max ;;
*) die "KERNEL_CHECK_ACCEL=$accel: kvm or tcg" ;;
esac

# What it runs (tools/setup.sh installs them): QEMU, a static busybox (the initramfs has no C library), cpio
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64 (tools/setup.sh installs qemu-system-x86)"
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
	die "no static busybox (tools/setup.sh installs busybox-static)"
command -v cpio >/dev/null || die "no cpio (tools/setup.sh installs it)"

tmp=$(mktemp -d) || die "cannot make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
chmod 755 "$tmp" # apt-get download runs as _apt

# The kernel and its modules: $image, $kver, $moddir.
unpack_deb() { # DEB: unpacks a linux-image package into $tmp/kernel
	dpkg-deb -x "$1" "$tmp/kernel" || die "$1: cannot unpack"
	for image in "$tmp"/kernel/boot/vmlinuz-*; do break; done
	[ -f "$image" ] || die "$1: no /boot/vmlinuz-* in it"
	kver=${image##*/vmlinuz-}
	moddir=$tmp/kernel/lib/modules/$kver
}
if [ -z "$kernel" ]; then
	latest() {
		apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null | cut -d' ' -f1 |
			sort -V | tail -n 1
	}
	pkg=$(latest)
	[ -n "$pkg" ] || { apt-get update -q >/dev/null 2>&1; pkg=$(latest); }
	[ -n "$pkg" ] || die "apt offers no linux-image-6.1.0-*-amd64 package (is this Debian 12?)"
	echo "kernel-check: downloading $pkg"
	(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || die "cannot download $pkg"
	unpack_deb "$tmp"/"$pkg"_*.deb
else
	case $kernel in
	*.deb) unpack_deb "$kernel" ;;
	*)
		image=$kernel
		# a bzImage's version string: its offset less 0x200 is at 0x20e (the x86 boot protocol)
		off=$(od -An -tu2 -j526 -N2 "$image" | tr -d ' ')
		kver=$(dd if="$image" bs=1 skip=$((off + 512)) count=256 2>/dev/null | tr '\0' '\n' | head -n 1 |
			cut -d' ' -f1)
		[ -n "$kver" ] || die "$image: not a bzImage (no version string)"
		moddir=/lib/modules/$kver
		;;
	esac
fi
[ -d "$moddir/kernel" ] || die "no modules for $kver in $moddir"

# The initramfs: a static busybox, the modules that the 9p root needs (each after those it depends on, as
# the modules' own depends= lists say) and an /init that mounts the root and runs the checks in it.
initrd=$tmp/initrd
mkdir -p "$initrd/bin" "$initrd/mods" "$initrd/proc" "$initrd/sys" "$initrd/dev" "$initrd/root"
cp /bin/busybox "$initrd/bin/busybox"
find "$moddir/kernel" -name '*.ko' >"$tmp/modules"
: >"$initrd/mods/order"
add_module() { # NAME: copies module NAME, after those it depends on; a built-in one (no .ko) is skipped
	grep -q "^$1\$" "$initrd/mods/order" && return
	f=$(grep -E "/($1|$(echo "$1" | tr _ -))\.ko\$" "$tmp/modules" | head -n 1)
	[ -n "$f" ] || return 0
	for dep in $(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | tr , ' '); do
		add_module "$dep"
	done
	f=$(grep -E "/($1|$(echo "$1" | tr _ -))\.ko\$" "$tmp/modules" | head -n 1)
	cp "$f" "$initrd/mods/$1.ko"
	echo "$1" >>"$initrd/mods/order"
}
for m in virtio_pci 9pnet_virtio 9p; do
	add_module "$m"
done
grep -q '^9p$' "$initrd/mods/order" || die "$moddir has no 9p module"

cat >"$initrd/init" <<'EOF'
#!/bin/busybox sh
# PID 1 of the check machine: the host's / (read-only) and a writable share for the results over 9p, the
# usual file systems in it, then /out/guest.sh chrooted into it; power off whatever happens.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /mods/order); do
	insmod "/mods/$m.ko" || echo "init: insmod $m failed"
done
r=/root
opts=trans=virtio,version=9p2000.L,msize=262144
if mount -t 9p -o "ro,$opts" root "$r"; then
	mount -t proc proc "$r/proc"
	mount -t sysfs sysfs "$r/sys"
	mount -t devtmpfs devtmpfs "$r/dev"
	mount -t tmpfs tmpfs "$r/tmp"
	mount -t tmpfs tmpfs "$r/run"
	mount -t debugfs debugfs "$r/sys/kernel/debug"
	mount -t tracefs tracefs "$r/sys/kernel/tracing"
	mount -t bpf bpf "$r/sys/fs/bpf"
	mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
	mkdir "$r/tmp/out"
	mount -t 9p -o "$opts" out "$r/tmp/out" &&
		chroot "$r" /bin/sh /tmp/out/guest.sh >"$r/tmp/out/results" 2>&1
	sync
	umount "$r/tmp/out"
else
	echo "init: cannot mount the 9p root"
fi
poweroff -f
EOF
chmod 755 "$initrd/init"
(cd "$initrd" && find . | cpio -o -H newc --quiet) >"$tmp/initrd.cpio" || die "cannot make the initramfs"

# The checks, run as root in the machine (from the share at /tmp/out): each ends in a PASS or FAIL line;
# the last line says how many passed.
mkdir "$tmp/out"
cat >"$tmp/out/guest.sh" <<EOF
cprof=$cprof
kver=$kver
EOF
cat >>"$tmp/out/guest.sh" <<'EOF'
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root XDG_CACHE_HOME=/tmp/cache CPROF_DATA=/tmp/data
cd /tmp
echo "kernel: $(uname -r) ($(cat /proc/version))"
[ "$(uname -r)" = "$kver" ] || echo "FAIL kernel: booted $(uname -r), not $kver"
[ -r /sys/kernel/btf/vmlinux ] || echo "FAIL btf: no /sys/kernel/btf/vmlinux"
pass=0 fail=0
loop='i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
# Busy and sleeping work for the whole-system, pid and cgroup checks, for a few seconds.
load() {
	timeout 4 sh -c 'while :; do :; done' &
	timeout 4 sh -c 'while :; do sleep 0.05; done' &
}
check() { # NAME ARGS...: cprof record ARGS (with -o); with --off-cpu, off-CPU stacks must be sent too
	name=$1
	shift
	# CPROF_DEBUG=1: libbpf's warnings, the verifier's log among them, and whether the cut BTF was taken
	CPROF_DEBUG=1 timeout 60 "$cprof" record --log-level debug -o "/tmp/out/$name.pb.gz" "$@" \
		>"/tmp/$name.log" 2>&1
	rc=$?
	summary=$(grep ' samples in ' "/tmp/$name.log" | tail -n 1)
	taken=$(echo "$summary" | sed -n 's/.*\[taken \([0-9]*\),.*/\1/p')
	sent=$(echo "$summary" | sed -n 's/.*off-CPU: \([0-9]*\) stacks sent.*/\1/p')
	why=
	if [ "$rc" != 0 ]; then
		why="exit $rc"
	elif [ "${taken:-0}" -eq 0 ]; then
		why="no samples taken"
	else
		case " $* " in *" --off-cpu "*) [ "${sent:-0}" -gt 0 ] || why="no off-CPU stacks sent" ;; esac
	fi
	if [ -z "$why" ]; then
		pass=$((pass + 1))
		echo "PASS $name (cprof record $*): $(echo "$summary" | sed 's/^cprof record: //; s/ \[.*\]//')," \
			"taken $taken${sent:+, off-CPU stacks sent $sent}"
		grep 'did not load with the cut BTF' "/tmp/$name.log" | sed 's/^/  note: /'
	else
		fail=$((fail + 1))
		echo "FAIL $name (cprof record $*): $why; the end of its log:"
		tail -n 60 "/tmp/$name.log" | sed 's/^/    /'
	fi
}
check cmd -F 99 -d 2s -- sh -c "$loop"
check cmd-offcpu -F 99 --off-cpu -d 2s -- sh -c "$loop; sleep 0.2; $loop"
load
check all -F 99 -d 2s --all
load
check all-offcpu -F 99 --off-cpu -d 2s --all
sh -c 'while :; do :; done' & # itself: -p follows no children (as timeout's)
busy=$!
check pid -F 99 -d 2s -p $busy
kill $busy
load
check cgroup-idle -F 99 --idle -d 2s --cgroup /sys/fs/cgroup
wait
echo "checks: $pass passed, $fail failed"
EOF

echo "kernel-check: booting $kver ($image) under $accel with ${cprof}, at most ${limit}s"
start=$(date +%s)
# -nodefaults: no network, no display; the console (ttyS0) goes to a file, shown if the checks did not run.
timeout -k 10 "$limit" qemu-system-x86_64 -nodefaults -no-user-config -accel "$accel" -cpu "$cpu" -m 2G -smp 2 \
	-display none -no-reboot -serial "file:$tmp/console" \
	-kernel "$image" -initrd "$tmp/initrd.cpio" \
	-append "console=ttyS0 panic=1 quiet loglevel=4 rdinit=/init" \
	-virtfs "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$tmp/out,mount_tag=out,security_model=none" </dev/null >"$tmp/qemu.log" 2>&1
rc=$?
secs=$(($(date +%s) - start))
if [ ! -s "$tmp/out/results" ]; then
	cat "$tmp/qemu.log" >&2
	tail -n 30 "$tmp/console" >&2
	[ "$rc" = 124 ] && die "the machine did not finish in ${limit}s (its console's end is above)"
	die "the machine ran no check (qemu exited $rc; its console's end is above)"
fi
cat "$tmp/out/results"
echo "kernel-check: the machine ran ${secs}s"
failed=$(grep -c '^FAIL' "$tmp/out/results")
[ "$failed" = 0 ] || die "$kver: $failed check(s) failed (above)"
grep -q '^checks: [1-9][0-9]* passed, 0 failed$' "$tmp/out/results" ||
	die "$kver: the checks did not all finish (qemu exited $rc)"
echo "kernel-check: $kver: every check passed"
