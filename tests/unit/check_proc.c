/* SPDX-License-Identifier: MIT */
/* lib/sampling/proc.c (maps lines, cgroup labels, perf maps, a process's mappings) and
 * the kallsyms parser of lib/sampling/symbolize.c: the parsers of outside text the
 * sampler reads. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampling/proc.h"
#include "sampling/recorder.h"
#include "profile.h"
#include "sampling/symbolize.h"
#include "sampling/unwind.h"
#include "util.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UUID "1234abcd-5678-90ab-cdef-1234567890ab"
#define UUID_ "1234abcd_5678_90ab_cdef_1234567890ab"

/* ---- /proc/PID/maps lines ---- */

static struct cp_maps_line maps_ok(const char *text, char *buf, size_t len)
{
	struct cp_maps_line m;
	int r;

	ck_assert_uint_lt(strlen(text), len);
	strcpy(buf, text);
	r = cp_parse_maps_line(buf, &m);
	ck_assert_msg(r == 0, "parsing '%s' gave %d", text, r);
	ck_assert_ptr_nonnull(m.path);
	return m;
}

START_TEST(test_maps_normal)
{
	char buf[512];
	struct cp_maps_line m = maps_ok("7f1c2a026000-7f1c2a17c000 r-xp 00026000 fe:00 332835                     "
					"/usr/lib/x86_64-linux-gnu/libc.so.6\n", buf, sizeof(buf));

	ck_assert_uint_eq(m.start, 0x7f1c2a026000ull);
	ck_assert_uint_eq(m.end, 0x7f1c2a17c000ull);
	ck_assert_uint_eq(m.pgoff, 0x26000);
	ck_assert_str_eq(m.perms, "r-xp");
	ck_assert_str_eq(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6"); /* no newline */
	ck_assert(m.path > buf && m.path < buf + sizeof(buf));           /* points into the line */

	/* no newline at the end, a shared mapping, a big offset, 64-bit addresses */
	m = maps_ok("ffffffffff600000-ffffffffff601000 --xs 7fffffff0000 00:00 0                  /x", buf,
		    sizeof(buf));
	ck_assert_uint_eq(m.start, 0xffffffffff600000ull);
	ck_assert_uint_eq(m.end, 0xffffffffff601000ull);
	ck_assert_uint_eq(m.pgoff, 0x7fffffff0000ull);
	ck_assert_str_eq(m.perms, "--xs");
	ck_assert_str_eq(m.path, "/x");
}
END_TEST

START_TEST(test_maps_no_path)
{
	char buf[256];
	/* the kernel writes "inode " and no padding when there is no name */
	struct cp_maps_line m = maps_ok("7fa9f129e000-7fa9f12c0000 rw-p 00000000 00:00 0 \n", buf, sizeof(buf));

	ck_assert_uint_eq(m.start, 0x7fa9f129e000ull);
	ck_assert_uint_eq(m.end, 0x7fa9f12c0000ull);
	ck_assert_str_eq(m.perms, "rw-p");
	ck_assert_str_eq(m.path, "");
	m = maps_ok("1000-2000 r-xp 00000000 00:00 0\n", buf, sizeof(buf));
	ck_assert_str_eq(m.path, "");
	m = maps_ok("1000-2000 r-xp 00000000 00:00 0", buf, sizeof(buf));
	ck_assert_str_eq(m.path, "");
	ck_assert_uint_eq(m.end, 0x2000);
}
END_TEST

START_TEST(test_maps_pseudo_paths)
{
	char buf[256];
	struct cp_maps_line m = maps_ok("7ffc5e5f3000-7ffc5e5f5000 r-xp 00000000 00:00 0                          "
					"[vdso]\n", buf, sizeof(buf));

	ck_assert_str_eq(m.path, "[vdso]");
	ck_assert_str_eq(m.perms, "r-xp");
	m = maps_ok("5591a89a4000-5591a89c5000 rw-p 00000000 00:00 0                          [heap]\n", buf,
		    sizeof(buf));
	ck_assert_str_eq(m.path, "[heap]");
	m = maps_ok("7f0000000000-7f0000001000 r-xp 00000000 00:00 0    [anon:v8 code]\n", buf, sizeof(buf));
	ck_assert_str_eq(m.path, "[anon:v8 code]");
}
END_TEST

START_TEST(test_maps_spaces_and_deleted)
{
	char buf[256];
	struct cp_maps_line m = maps_ok("55d0c1a00000-55d0c1a10000 r-xp 00002000 08:01 4242                       "
					"/opt/my app/lib x.so\n", buf, sizeof(buf));

	ck_assert_str_eq(m.path, "/opt/my app/lib x.so");
	ck_assert_uint_eq(m.pgoff, 0x2000);
	/* a file replaced or removed while mapped: the line says so; the
	 * parser gives the text as it is (the caller decides what to do) */
	m = maps_ok("55d0c1a00000-55d0c1a10000 r-xp 00002000 08:01 4242                       "
		    "/usr/bin/my daemon (deleted)\n", buf, sizeof(buf));
	ck_assert_str_eq(m.path, "/usr/bin/my daemon (deleted)");
	ck_assert_str_eq(m.perms, "r-xp");
}
END_TEST

START_TEST(test_maps_garbage)
{
	static const char *const bad[] = {
		"",
		"\n",
		"hello world",
		"7f00",
		"7f00-",
		"7f00-7f10",
		"7f00-7f10\n",
		"7f00 7f10 r-xp 00000000 00:00 0",
		"7f00-7f10 r-x",
		"7f00-7f10 r-x 00000000 00:00 0 /x",
		"7f00-7f10 r-xpq 00000000 00:00 0 /x",
		"7f00-7f10 r-xp",
		"7f00-7f10 r-xp ",
		"7f00-7f10 r-xp zz 00:00 0 /x",
		"7f00-7f10 r-xp 00000000",
		"7f10-7f00 r-xp 00000000 00:00 0 /x", /* end before start */
		"xyz-7f10 r-xp 00000000 00:00 0 /x",
		"7f00-xyz r-xp 00000000 00:00 0 /x",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char buf[128];
		struct cp_maps_line m;
		int r;

		strcpy(buf, bad[i]);
		r = cp_parse_maps_line(buf, &m);
		ck_assert_msg(r == -EINVAL, "'%s' gave %d, not -EINVAL", bad[i], r);
	}
}
END_TEST

/* ---- cgroup paths ---- */

struct labels {
	char c[128], u[256], p[64];
};

static struct labels cg(const char *path)
{
	struct labels l;

	memset(&l, 'x', sizeof(l)); /* every buffer must be set */
	cp_cgroup_labels(path, l.c, sizeof(l.c), l.u, sizeof(l.u), l.p, sizeof(l.p));
	return l;
}

START_TEST(test_cgroup_docker)
{
	struct labels l = cg("/system.slice/docker-" HEX64 ".scope");

	ck_assert_str_eq(l.c, HEX64);
	ck_assert_str_eq(l.p, "");
	/* cgroupfs driver */
	l = cg("/docker/" HEX64B);
	ck_assert_str_eq(l.c, HEX64B);
	ck_assert_str_eq(l.u, "");
	ck_assert_str_eq(l.p, "");
	/* Podman, CRI-O */
	l = cg("/machine.slice/libpod-" HEX64 ".scope/container");
	ck_assert_str_eq(l.c, HEX64);
	l = cg("/kubepods.slice/crio-" HEX64B ".scope");
	ck_assert_str_eq(l.c, HEX64B);
}
END_TEST

START_TEST(test_cgroup_containerd)
{
	struct labels l = cg("/system.slice/cri-containerd-" HEX64 ".scope");

	ck_assert_str_eq(l.c, HEX64);
	ck_assert_str_eq(l.p, "");
}
END_TEST

START_TEST(test_cgroup_kubepods_cgroupfs)
{
	struct labels l = cg("/kubepods/burstable/pod" UUID "/" HEX64);

	ck_assert_str_eq(l.p, UUID);
	ck_assert_str_eq(l.c, HEX64);
	ck_assert_str_eq(l.u, "");
	l = cg("/kubepods/besteffort/pod" UUID "/" HEX64B);
	ck_assert_str_eq(l.p, UUID);
	ck_assert_str_eq(l.c, HEX64B);
	/* a guaranteed pod sits right under kubepods; its pause container too */
	l = cg("/kubepods/pod" UUID);
	ck_assert_str_eq(l.p, UUID);
	ck_assert_str_eq(l.c, "");
}
END_TEST

START_TEST(test_cgroup_kubepods_systemd)
{
	struct labels l = cg("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UUID_
			     ".slice/cri-containerd-" HEX64 ".scope");

	ck_assert_str_eq(l.p, UUID); /* '_' back to '-' */
	ck_assert_str_eq(l.c, HEX64);
	l = cg("/kubepods.slice/kubepods-pod" UUID_ ".slice");
	ck_assert_str_eq(l.p, UUID);
	ck_assert_str_eq(l.c, "");
	/* not a pod uid: wrong length, not hex, misplaced dashes */
	l = cg("/kubepods.slice/kubepods-burstable-pod1234.slice");
	ck_assert_str_eq(l.p, "");
	l = cg("/kubepods/burstable/pod1234abcd-5678-90ab-cdef-1234567890ag");
	ck_assert_str_eq(l.p, "");
	l = cg("/kubepods/burstable/pod1234abcd5-678-90ab-cdef-1234567890ab");
	ck_assert_str_eq(l.p, "");
	l = cg("/system.slice/ipod" UUID ".service"); /* "pod" inside a word */
	ck_assert_str_eq(l.p, "");
}
END_TEST

START_TEST(test_cgroup_units)
{
	struct labels l = cg("/system.slice/ssh.service");

	ck_assert_str_eq(l.u, "ssh.service");
	ck_assert_str_eq(l.c, "");
	ck_assert_str_eq(l.p, "");
	l = cg("/user.slice/user-0.slice/session-3.scope");
	ck_assert_str_eq(l.u, "session-3.scope");
	ck_assert_str_eq(l.c, "");
	/* the innermost unit */
	l = cg("/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
	       "vte-spawn-0b1c.scope");
	ck_assert_str_eq(l.u, "vte-spawn-0b1c.scope");
	l = cg("/user.slice/user-1000.slice/user@1000.service/init.scope");
	ck_assert_str_eq(l.u, "init.scope");
	l = cg("/system.slice/docker.socket");
	ck_assert_str_eq(l.u, "docker.socket");
	/* slices are not units of their own */
	l = cg("/system.slice");
	ck_assert_str_eq(l.u, "");
	l = cg("/system.slice/.service");
	ck_assert_str_eq(l.u, "");
}
END_TEST

START_TEST(test_cgroup_nothing)
{
	static const char *const none[] = {
		"/", "", "//", "/init", "/foo/bar",
		("/system.slice/docker-" HEX64 "x.scope"),           /* 65 characters */
		("/docker/" HEX64 "0"),                              /* likewise */
		("/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"), /* not hex */
	};

	for (size_t i = 0; i < sizeof(none) / sizeof(*none); i++) {
		struct labels l = cg(none[i]);

		ck_assert_msg(!l.c[0], "'%s': container '%s'", none[i], l.c);
		ck_assert_msg(!l.p[0], "'%s': pod '%s'", none[i], l.p);
		if (i < 5)
			ck_assert_msg(!l.u[0], "'%s': unit '%s'", none[i], l.u);
	}
	{
		struct labels l = cg(NULL);

		ck_assert_str_eq(l.c, "");
		ck_assert_str_eq(l.u, "");
		ck_assert_str_eq(l.p, "");
	}
}
END_TEST

START_TEST(test_cgroup_small_buffers)
{
	char c[8], u[4], p[2];

	cp_cgroup_labels("/kubepods/burstable/pod" UUID "/" HEX64, c, sizeof(c), u, sizeof(u), p, sizeof(p));
	ck_assert_str_eq(c, "0123456"); /* cut, terminated */
	ck_assert_str_eq(u, "");
	ck_assert_str_eq(p, "1");
	cp_cgroup_labels("/system.slice/ssh.service", c, sizeof(c), u, sizeof(u), p, sizeof(p));
	ck_assert_str_eq(u, "ssh");
	/* no buffers at all */
	cp_cgroup_labels("/system.slice/docker-" HEX64 ".scope", NULL, 0, NULL, 0, NULL, 0);
}
END_TEST

START_TEST(test_proc_set_cgroup)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p;

	ck_assert_ptr_nonnull(t);
	p = cp_procs_get(t, 42, true);
	ck_assert_ptr_nonnull(p);
	cp_proc_set_cgroup(p, "/kubepods.slice/kubepods-pod" UUID_ ".slice/cri-containerd-" HEX64 ".scope");
	ck_assert_str_eq(p->container, HEX64);
	ck_assert_str_eq(p->pod, UUID);
	ck_assert_str_eq(p->unit, "cri-containerd-" HEX64 ".scope");
	cp_proc_set_cgroup(p, "/");
	ck_assert_ptr_null(p->container); /* NULL when not in one */
	ck_assert_ptr_null(p->unit);
	ck_assert_ptr_null(p->pod);
	cp_proc_set_cgroup(p, "/system.slice/ssh.service");
	ck_assert_str_eq(p->unit, "ssh.service");
	cp_procs_free(t, NULL);
}
END_TEST

/* ---- perf-map files ---- */

static struct cp_perfmap pm_parse(const char *text)
{
	struct cp_perfmap m;
	int r;

	memset(&m, 0, sizeof(m));
	r = cp_perfmap_parse(text, strlen(text), &m);
	ck_assert_int_eq(r, 0);
	return m;
}

static const char *pm_find(const struct cp_perfmap *m, uint64_t addr)
{
	const char *s = cp_perfmap_find(m, addr);

	return s ? s : "(none)";
}

START_TEST(test_perfmap_basic)
{
	struct cp_perfmap m = pm_parse("7f0000002000 80 jit_b\n"
				       "0x7f0000001000 0x40 jit_a\n"
				       "7F0000003000 10 LazyCompile:*foo /app/x.js:12\n"
				       "7f0000004000 8 crlf\r\n"
				       "7f0000005000 4 last_no_newline");

	ck_assert_uint_eq(m.n, 5);
	for (size_t i = 1; i < m.n; i++)
		ck_assert_uint_lt(m.e[i - 1].start, m.e[i].start); /* sorted */
	ck_assert_str_eq(pm_find(&m, 0x7f0000001000), "jit_a");
	ck_assert_str_eq(pm_find(&m, 0x7f000000103f), "jit_a");
	ck_assert_str_eq(pm_find(&m, 0x7f0000001040), "(none)"); /* end excluded */
	ck_assert_str_eq(pm_find(&m, 0x7f0000000fff), "(none)");
	ck_assert_str_eq(pm_find(&m, 0), "(none)");
	ck_assert_str_eq(pm_find(&m, 0x7f0000002050), "jit_b");
	ck_assert_str_eq(pm_find(&m, 0x7f0000003008), "LazyCompile:*foo /app/x.js:12"); /* names keep spaces */
	ck_assert_str_eq(pm_find(&m, 0x7f0000004000), "crlf");
	ck_assert_str_eq(pm_find(&m, 0x7f0000005003), "last_no_newline");
	ck_assert_str_eq(pm_find(&m, 0x7f0000005004), "(none)");
	ck_assert_str_eq(pm_find(&m, UINT64_MAX), "(none)");
	cp_perfmap_release(&m);
	ck_assert_uint_eq(m.n, 0);
	cp_perfmap_release(&m); /* twice is fine */
}
END_TEST

START_TEST(test_perfmap_bad_lines)
{
	struct cp_perfmap m = pm_parse("garbage\n"
				       "\n"
				       "zz 10 bad_start\n"
				       "1000 zz bad_size\n"
				       "1000 0 zero_size\n"
				       "1000 10\n"
				       "1000 10 \n"
				       "1000\t10 tab\n"
				       "ffffffffffffffff 10 wraps\n"
				       "123456789abcdef01 10 too_big\n"
				       "2000 10 good\n"
				       "  \n");

	ck_assert_uint_eq(m.n, 1);
	ck_assert_str_eq(pm_find(&m, 0x2000), "good");
	ck_assert_str_eq(pm_find(&m, 0x1000), "(none)");
	cp_perfmap_release(&m);
	m = pm_parse("");
	ck_assert_uint_eq(m.n, 0);
	ck_assert_str_eq(pm_find(&m, 0x1000), "(none)");
	cp_perfmap_release(&m);
}
END_TEST

START_TEST(test_perfmap_nested)
{
	/* a stub region with functions inside, as some JITs write */
	struct cp_perfmap m = pm_parse("1000 1000 outer\n"
				       "1100 10 inner1\n"
				       "1200 10 inner2\n");

	ck_assert_str_eq(pm_find(&m, 0x1000), "outer");
	ck_assert_str_eq(pm_find(&m, 0x1105), "inner1");
	ck_assert_str_eq(pm_find(&m, 0x1110), "outer");
	ck_assert_str_eq(pm_find(&m, 0x1208), "inner2");
	ck_assert_str_eq(pm_find(&m, 0x1210), "outer"); /* only outer holds it */
	ck_assert_str_eq(pm_find(&m, 0x1fff), "outer");
	ck_assert_str_eq(pm_find(&m, 0x2000), "(none)");
	cp_perfmap_release(&m);
}
END_TEST

START_TEST(test_perfmap_reused)
{
	/* addresses reused: the file is appended to, the later entry wins */
	struct cp_perfmap m = pm_parse("5000 100 old\n"
				       "5000 100 new\n");

	ck_assert_str_eq(pm_find(&m, 0x5010), "new");
	cp_perfmap_release(&m);
	m = pm_parse("5080 100 old\n"
		     "5000 100 new\n");
	ck_assert_str_eq(pm_find(&m, 0x5090), "new");
	ck_assert_str_eq(pm_find(&m, 0x5170), "old");
	cp_perfmap_release(&m);
}
END_TEST

/* a process's perf map as its JIT writes it: read again, new lines only,
 * when an address is not in it (at most every millisecond) */
static void pm_write(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	usleep(2000);
}

START_TEST(test_perfmap_grows)
{
	struct cp_procs *t = cp_procs_new();
	/* a pid no process has (above any pid_max), this test's own file */
	uint32_t pid = 4000000000u + (uint32_t)getpid();
	struct cp_proc *p = cp_procs_get(t, pid, true);
	char path[64];
	const char *s;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	unlink(path);
	ck_assert_ptr_null(cp_proc_jit_symbol(p, 0x1010)); /* no file yet */
	usleep(2000);
	pm_write(path, "w", "1000 100 a\n2000 100 b\n3000 10");
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x1010), "a");
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x2010), "b");
	ck_assert_ptr_null(cp_proc_jit_symbol(p, 0x3005)); /* a line being written */
	pm_write(path, "a", "0 c\n");
	s = cp_proc_jit_symbol(p, 0x3005);
	ck_assert_str_eq(s ? s : "(null)", "c");
	/* lines before the old ones, and inside one (the later line wins) */
	pm_write(path, "a", "500 100 early\n1050 10 inner\n");
	s = cp_proc_jit_symbol(p, 0x550);
	ck_assert_str_eq(s ? s : "(null)", "early");
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x1055), "inner");
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x1060), "a");
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x2010), "b");
	ck_assert_uint_eq(p->jit->n, 5);
	/* rewritten shorter: read from the start */
	pm_write(path, "w", "4000 10 d\n");
	s = cp_proc_jit_symbol(p, 0x4005);
	ck_assert_str_eq(s ? s : "(null)", "d");
	ck_assert_uint_eq(p->jit->n, 1);
	/* the process gone and its file too: what was read stays */
	unlink(path);
	usleep(2000);
	ck_assert_ptr_null(cp_proc_jit_symbol(p, 0x9999));
	ck_assert_str_eq(cp_proc_jit_symbol(p, 0x4005), "d");
	cp_procs_free(t, NULL);
}
END_TEST

START_TEST(test_perfmap_stale)
{
	/* a perf map older than the process: another process's with this pid
	 * (runtimes leave their files, pids are reused); this test's own pid */
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, (uint32_t)getpid(), true);
	struct timespec old[2];
	struct stat st;
	char path[64];
	const char *s;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	pm_write(path, "w", "1000 100 stale\n");
	/* a day older, by the file system's clock (not a faked one) */
	ck_assert_int_eq(stat(path, &st), 0);
	old[0] = old[1] = st.st_mtim;
	old[0].tv_sec = old[1].tv_sec = st.st_mtim.tv_sec - 3600 * 24;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	ck_assert_ptr_null(cp_proc_jit_symbol(p, 0x1010));
	usleep(2000);
	pm_write(path, "w", "1000 100 fresh\n"); /* the process writes its own */
	s = cp_proc_jit_symbol(p, 0x1010);
	ck_assert_str_eq(s ? s : "(null)", "fresh");
	if (geteuid() == 0) {
		/* another user's file does not name a process's frames */
		struct cp_procs *t2 = cp_procs_new();
		struct cp_proc *p2 = cp_procs_get(t2, (uint32_t)getpid(), true);

		ck_assert_int_eq(chown(path, 65534, 65534), 0);
		ck_assert_ptr_null(cp_proc_jit_symbol(p2, 0x1010));
		cp_procs_free(t2, NULL);
	}
	unlink(path);
	cp_procs_free(t, NULL);
}
END_TEST

/* The name cp_symbolize_user gives addr in p, as a frame shows it. */
static const char *sym_name(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t addr,
			    char *buf, size_t len)
{
	int64_t loc = cp_symbolize_user(s, prof, p, addr, false, NULL), stack;
	struct cp_frame *frames = NULL;
	size_t cap = 0;
	uint32_t l;
	const char *name;

	ck_assert_int_gt(loc, 0);
	l = (uint32_t)loc;
	stack = cp_profile_stack(prof, &l, 1);
	ck_assert_int_gt(stack, 0);
	ck_assert_int_eq(cp_profile_frames(prof, (uint32_t)stack, &frames, &cap), 1);
	name = cp_frame_name(prof, &frames[0], buf, len);
	if (name != buf)
		snprintf(buf, len, "%s", name);
	free(frames);
	return buf;
}

START_TEST(test_jit_mappings)
{
	/* JIT code in every kind of anonymous executable memory is named from
	 * the perf map: "//anon" (mmap records), "" (/proc/PID/maps),
	 * "[anon:NAME]", memfd and deleted files (no ELF there) */
	static const struct {
		const char *path, *want;
	} m[] = {
		{ "//anon", "js_anon" },
		{ "", "js_empty" },
		{ "[anon:v8 code]", "js_named" },
		{ "/memfd:jit (deleted)", "js_memfd" },
		{ "/dev/zero (deleted)", "js_shared" },
		{ "//anon", "anon+0x60100" }, /* not in the perf map: its address */
	};
	struct cp_procs *t = cp_procs_new();
	uint32_t pid = 4100000000u + (uint32_t)getpid();
	struct cp_proc *p = cp_procs_get(t, pid, true);
	struct cp_unwinder *u = cp_unwinder_new(NULL);
	struct cp_symbolizer *s = cp_symbolizer_new(u, 0);
	struct cp_profile *prof = cp_profile_new();
	char path[64], buf[256], *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);

	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(prof);
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		uint64_t start = 0x10000 * (i + 1);

		ck_assert_int_eq(cp_proc_add_map(p, start, start + 0x10000, 0, m[i].path, NULL, 0), 0);
		if (strncmp(m[i].want, "anon+", 5))
			fprintf(f, "%llx 100 %s\n", (unsigned long long)start + 0x100, m[i].want);
	}
	/* a binary's file is not a JIT's: its own lookup stands */
	ck_assert_int_eq(cp_proc_add_map(p, 0x70000, 0x80000, 0, "/nonexistent/libx.so", NULL, 0), 0);
	fprintf(f, "70100 100 not_this\n");
	ck_assert_int_eq(fclose(f), 0);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	pm_write(path, "w", text);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		ck_assert_str_eq(sym_name(s, prof, p, 0x10000 * (i + 1) + 0x100, buf, sizeof(buf)), m[i].want);
	ck_assert_str_eq(sym_name(s, prof, p, 0x70100, buf, sizeof(buf)), "libx.so+0x100");
	/* an address in no mapping is a bare one */
	ck_assert_str_eq(sym_name(s, prof, p, 0x90100, buf, sizeof(buf)), "0x90100");
	unlink(path);
	free(text);
	cp_profile_free(prof);
	cp_symbolizer_free(s);
	cp_unwinder_free(u);
	cp_procs_free(t, NULL);
}
END_TEST

/* A map's mapping in a profile is kept with the map, for that profile only
 * and while the map stays as it is: a trimmed map, or another profile, gets
 * its own. */
START_TEST(test_symbolize_mapping_kept)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, 4100000001u, true);
	struct cp_unwinder *u = cp_unwinder_new(NULL);
	struct cp_symbolizer *s = cp_symbolizer_new(u, 0);
	struct cp_profile *a = cp_profile_new(), *b = cp_profile_new();
	char buf[256];

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(cp_proc_add_map(p, 0x100000, 0x120000, 0, "/nonexistent/liby.so", NULL, 0), 0);
	ck_assert_int_eq(cp_proc_add_map(p, 0x200000, 0x210000, 0, "/nonexistent/libz.so", NULL, 0), 0);
	ck_assert_str_eq(sym_name(s, a, p, 0x110100, buf, sizeof(buf)), "liby.so+0x10100");
	ck_assert_str_eq(sym_name(s, a, p, 0x110200, buf, sizeof(buf)), "liby.so+0x10200");
	ck_assert_uint_eq(a->nmappings, 1);
	/* another profile, whose first mapping is another file's */
	ck_assert_str_eq(sym_name(s, b, p, 0x200100, buf, sizeof(buf)), "libz.so+0x100");
	ck_assert_str_eq(sym_name(s, b, p, 0x110300, buf, sizeof(buf)), "liby.so+0x10300");
	ck_assert_uint_eq(b->nmappings, 2);
	ck_assert_str_eq(sym_name(s, a, p, 0x110380, buf, sizeof(buf)), "liby.so+0x10380");
	ck_assert_uint_eq(a->nmappings, 1);
	/* the map's first 32 KiB are mapped over: what is left starts at 0x108000, file offset 0x8000 */
	ck_assert_int_eq(cp_proc_add_map(p, 0x100000, 0x108000, 0, "/nonexistent/libw.so", NULL, 0), 0);
	ck_assert_str_eq(sym_name(s, a, p, 0x110400, buf, sizeof(buf)), "liby.so+0x10400");
	ck_assert_uint_eq(a->nmappings, 2);
	ck_assert_uint_eq(a->mappings[1].start, 0x108000);
	ck_assert_uint_eq(a->mappings[1].offset, 0x8000);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_symbolizer_free(s);
	cp_unwinder_free(u);
	cp_procs_free(t, NULL);
}
END_TEST

/* ---- a process's mappings ---- */

/* "start-end@pgoff:path|..." */
static const char *maps_str(const struct cp_proc *p, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		int n = snprintf(buf + off, len - off, "%s%llx-%llx@%llx:%s", i ? "|" : "",
				 (unsigned long long)p->maps[i].start, (unsigned long long)p->maps[i].end,
				 (unsigned long long)p->maps[i].pgoff, p->maps[i].path);

		ck_assert(n > 0 && (size_t)n < len - off);
		off += (size_t)n;
	}
	return buf;
}

static void add(struct cp_proc *p, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	ck_assert_int_eq(cp_proc_add_map(p, start, end, pgoff, path, NULL, 0), 0);
}

static const char *found(const struct cp_proc *p, uint64_t addr)
{
	const struct cp_map *m = cp_proc_find_map(p, addr);

	return m ? m->path : "(none)";
}

START_TEST(test_add_map_sorted_and_find)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, 7, true);
	char buf[1024];
	uint32_t gen;

	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(found(p, 0x1000), "(none)"); /* no mappings */
	gen = p->maps_gen;
	add(p, 0x5000, 0x6000, 0, "/c");
	ck_assert(p->have_maps);
	ck_assert_uint_ne(p->maps_gen, gen);
	add(p, 0x1000, 0x2000, 0x10000, "/a");
	add(p, 0x3000, 0x4000, 0, "[vdso]");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)), "1000-2000@10000:/a|3000-4000@0:[vdso]|5000-6000@0:/c");
	ck_assert_str_eq(found(p, 0x0fff), "(none)");
	ck_assert_str_eq(found(p, 0x1000), "/a");
	ck_assert_str_eq(found(p, 0x1fff), "/a");
	ck_assert_str_eq(found(p, 0x2000), "(none)"); /* end excluded */
	ck_assert_str_eq(found(p, 0x2fff), "(none)");
	ck_assert_str_eq(found(p, 0x3800), "[vdso]");
	ck_assert_str_eq(found(p, 0x5fff), "/c");
	ck_assert_str_eq(found(p, 0x6000), "(none)");
	ck_assert_str_eq(found(p, UINT64_MAX), "(none)");
	/* empty or inverted ranges are ignored */
	ck_assert_int_eq(cp_proc_add_map(p, 0x8000, 0x8000, 0, "/empty", NULL, 0), 0);
	ck_assert_int_eq(cp_proc_add_map(p, 0x9000, 0x8000, 0, "/inverted", NULL, 0), 0);
	ck_assert_uint_eq(p->nmaps, 3);
	/* NULL path: anonymous */
	add(p, 0x7000, 0x7100, 0, NULL);
	ck_assert_str_eq(found(p, 0x7000), "");
	cp_proc_clear_maps(p);
	ck_assert_uint_eq(p->nmaps, 0);
	ck_assert_str_eq(found(p, 0x1000), "(none)");
	cp_procs_free(t, NULL);
}
END_TEST

START_TEST(test_add_map_overlaps)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, 8, true);
	char buf[1024];

	/* split: a new mapping in the middle of an old one */
	add(p, 0x10000, 0x20000, 0x100, "/big");
	add(p, 0x14000, 0x15000, 0, "/mid");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)),
			 "10000-14000@100:/big|14000-15000@0:/mid|15000-20000@5100:/big");
	ck_assert_str_eq(found(p, 0x13fff), "/big");
	ck_assert_str_eq(found(p, 0x14000), "/mid");
	ck_assert_str_eq(found(p, 0x15000), "/big");
	/* trim the front of one and the back of another */
	add(p, 0x12000, 0x16000, 0x40, "/over");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)),
			 "10000-12000@100:/big|12000-16000@40:/over|16000-20000@6100:/big");
	/* trim left edge only */
	add(p, 0xf000, 0x11000, 0, "/left");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)),
			 "f000-11000@0:/left|11000-12000@1100:/big|12000-16000@40:/over|16000-20000@6100:/big");
	/* trim right edge only */
	add(p, 0x1f000, 0x21000, 0, "/right");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)), "f000-11000@0:/left|11000-12000@1100:/big|12000-16000@40:/over|"
							"16000-1f000@6100:/big|1f000-21000@0:/right");
	/* exact replacement */
	add(p, 0x12000, 0x16000, 0, "/again");
	ck_assert_str_eq(found(p, 0x12000), "/again");
	ck_assert_uint_eq(p->nmaps, 5);
	/* one mapping covering several */
	add(p, 0x10000, 0x20000, 0, "/all");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)), "f000-10000@0:/left|10000-20000@0:/all|20000-21000@1000:/right");
	/* covering everything */
	add(p, 0, 0x100000, 0, "/everything");
	ck_assert_str_eq(maps_str(p, buf, sizeof(buf)), "0-100000@0:/everything");
	/* many splits of one mapping (the array grows while splitting) */
	for (uint64_t a = 0x1000; a < 0x80000; a += 0x2000)
		add(p, a, a + 0x1000, a, "/hole");
	ck_assert_uint_eq(p->nmaps, 64 + 64 + 1);
	for (size_t i = 1; i < p->nmaps; i++) {
		ck_assert_uint_le(p->maps[i - 1].end, p->maps[i].start); /* sorted, disjoint */
		ck_assert_uint_lt(p->maps[i].start, p->maps[i].end);
	}
	ck_assert_str_eq(found(p, 0x1800), "/hole");
	ck_assert_str_eq(found(p, 0x2800), "/everything");
	ck_assert_uint_eq(cp_proc_find_map(p, 0x2800)->pgoff, 0x2000);
	ck_assert_str_eq(found(p, 0x90000), "/everything");
	cp_procs_free(t, NULL);
}
END_TEST

START_TEST(test_map_no_file)
{
	/* memory with no file behind it is never opened as a file */
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, (uint32_t)getpid(), true);
	size_t n = 99;

	ck_assert(cp_map_no_file(""));
	ck_assert(cp_map_no_file("//anon"));
	ck_assert(cp_map_no_file("[anon:v8]"));
	ck_assert(cp_map_no_file("[stack]"));
	ck_assert(!cp_map_no_file("[vdso]"));
	ck_assert(!cp_map_no_file("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	ck_assert(!cp_map_no_file("/memfd:jit (deleted)"));
	/* "//anon" would be opened as "/anon" */
	ck_assert_int_eq(cp_proc_add_map(p, 0x1000, 0x2000, 0, "//anon", NULL, 0), 0);
	ck_assert_ptr_null(cp_map_build_id((struct cp_map *)cp_proc_find_map(p, 0x1000), p, &n));
	ck_assert_uint_eq(n, 0);
	ck_assert(cp_proc_find_map(p, 0x1000)->build_id_read);
	cp_procs_free(t, NULL);
}
END_TEST

START_TEST(test_add_map_build_id_and_inherit)
{
	static const uint8_t bid[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, 9, true), *c;
	const struct cp_map *m;
	char buf[512], buf2[512];

	ck_assert_int_eq(cp_proc_add_map(p, 0x1000, 0x2000, 0, "/a", bid, sizeof(bid)), 0);
	ck_assert_int_eq(cp_proc_add_map(p, 0x3000, 0x4000, 0, "/b", NULL, 0), 0);
	m = cp_proc_find_map(p, 0x1000);
	ck_assert_uint_eq(m->build_id_len, 20);
	ck_assert(m->build_id_read);
	ck_assert_mem_eq(m->build_id, bid, 20);
	m = cp_proc_find_map(p, 0x3000);
	ck_assert_uint_eq(m->build_id_len, 0);
	ck_assert(!m->build_id_read);
	/* a too long build id is not taken */
	ck_assert_int_eq(cp_proc_add_map(p, 0x5000, 0x6000, 0, "/c", bid, 21), 0);
	ck_assert_uint_eq(cp_proc_find_map(p, 0x5000)->build_id_len, 0);
	/* a split keeps the build id on both parts */
	ck_assert_int_eq(cp_proc_add_map(p, 0x1400, 0x1800, 0, "/x", NULL, 0), 0);
	ck_assert_uint_eq(cp_proc_find_map(p, 0x1000)->build_id_len, 20);
	ck_assert_uint_eq(cp_proc_find_map(p, 0x1c00)->build_id_len, 20);

	snprintf(p->comm, sizeof(p->comm), "parent");
	p->exe = strdup("/usr/bin/parent");
	cp_proc_set_cgroup(p, "/system.slice/ssh.service");
	c = cp_procs_get(t, 10, true);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(cp_proc_inherit(c, p), 0);
	ck_assert_str_eq(maps_str(c, buf, sizeof(buf)), maps_str(p, buf2, sizeof(buf2)));
	ck_assert_str_eq(c->comm, "parent");
	ck_assert_str_eq(c->exe, "/usr/bin/parent");
	ck_assert_str_eq(c->unit, "ssh.service");
	ck_assert(c->have_maps);
	ck_assert_uint_eq(cp_proc_find_map(c, 0x1000)->build_id_len, 20);
	/* shared until one of them changes its own: a mapping the parent adds is not the child's, one
	 * the child adds not the parent's, and a second child's exec drops only its own */
	ck_assert_int_eq(cp_proc_add_map(p, 0x7000, 0x8000, 0, "/p", NULL, 0), 0);
	ck_assert_ptr_null(cp_proc_find_map(c, 0x7000));
	ck_assert_int_eq(cp_proc_add_map(c, 0x3800, 0x3c00, 0, "/q", NULL, 0), 0);
	ck_assert_str_eq(found(p, 0x3800), "/b");
	ck_assert_str_eq(found(c, 0x3800), "/q");
	{
		struct cp_proc *c2 = cp_procs_get(t, 11, true), *c3 = cp_procs_get(t, 12, true);

		ck_assert_int_eq(cp_proc_inherit(c2, c), 0);
		ck_assert_int_eq(cp_proc_inherit(c3, c), 0);
		ck_assert_str_eq(maps_str(c2, buf, sizeof(buf)), maps_str(c, buf2, sizeof(buf2)));
		cp_proc_drop_maps_before(c2, 1);
		ck_assert_uint_eq(c2->nmaps, 0);
		ck_assert_str_eq(found(c, 0x3800), "/q");
		ck_assert_str_eq(found(c3, 0x3800), "/q");
		cp_procs_remove(t, 12, NULL);
		cp_procs_remove(t, 11, NULL);
		ck_assert_str_eq(found(c, 0x3800), "/q");
	}
	{ /* two programs mapping one file hold one copy of its path, which outlives either */
		struct cp_proc *x = cp_procs_get(t, 13, true), *y = cp_procs_get(t, 14, true);

		ck_assert_int_eq(cp_proc_add_map(x, 0x1000, 0x2000, 0, "/lib/same.so", NULL, 0), 0);
		ck_assert_int_eq(cp_proc_add_map(y, 0x5000, 0x6000, 0, "/lib/same.so", NULL, 0), 0);
		ck_assert_ptr_eq(cp_proc_find_map(x, 0x1000)->path, cp_proc_find_map(y, 0x5000)->path);
		cp_procs_remove(t, 13, NULL);
		ck_assert_str_eq(found(y, 0x5000), "/lib/same.so");
		cp_procs_remove(t, 14, NULL);
	}
	ck_assert_uint_eq(cp_procs_count(t), 2);
	cp_procs_remove(t, 9, NULL);
	ck_assert_uint_eq(cp_procs_count(t), 1);
	ck_assert_ptr_null(cp_procs_get(t, 9, false));
	ck_assert_str_eq(found(cp_procs_get(t, 10, false), 0x3000), "/b"); /* the copy is its own */
	/* (paths are shared, counted: the split's two parts too) */
	ck_assert_str_eq(found(cp_procs_get(t, 10, false), 0x1000), "/a");
	ck_assert_str_eq(found(cp_procs_get(t, 10, false), 0x1c00), "/a");
	ck_assert_int_eq(cp_proc_add_map(cp_procs_get(t, 10, false), 0x1000, 0x1400, 0, "/y", NULL, 0), 0);
	ck_assert_str_eq(found(cp_procs_get(t, 10, false), 0x1c00), "/a");
	cp_procs_free(t, NULL);
}
END_TEST

/* ---- /proc/kallsyms ---- */

static const char kallsyms[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81001000 T start_kernel\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 t local_text\n"
	"ffffffff81002000 W weak_upper\n"
	"ffffffff81003000 w weak_lower\n"
	"ffffffff81004000 D some_data\n"
	"ffffffff81005000 b some_bss\n"
	"ffffffff81006000 R some_rodata\n"
	"ffffffff81007000 d local_data\n"
	"ffffffff81008000 A absolute\n"
	"0000000000000000 T hidden_by_kptr_restrict\n"
	"ffffffffc0a00000 t ext4_fill_super\t[ext4]\n"
	"ffffffffc0a01000 T ext4_mount\t[ext4]\n"
	"ffffffffc0a02000 d ext4_data\t[ext4]\n"
	"ffffffffc0b00000 t xfs_fs_fill_super\t[xfs]\n"
	"garbage line\n"
	"ffffffffc0c00000\n"
	"ffffffffc0c00000 T\n"
	"ffffffffc0c00000 TT two_letters\n";

static const char *ksym(const struct cp_ksyms *k, uint64_t addr, const char **mod)
{
	const char *s;

	*mod = "(unset)";
	s = cp_ksyms_find(k, addr, mod, NULL);
	return s ? s : "(none)";
}

START_TEST(test_ksyms)
{
	struct cp_ksyms *k = cp_ksyms_parse(kallsyms, sizeof(kallsyms) - 1);
	const char *mod;

	ck_assert_ptr_nonnull(k);
	/* _stext local_text start_kernel weak_upper weak_lower ext4_fill_super ext4_mount xfs_fs_fill_super */
	ck_assert_uint_eq(cp_ksyms_count(k), 8);
	ck_assert_str_eq(ksym(k, 0xffffffff81000000, &mod), "_stext");
	ck_assert_str_eq(mod, "");
	ck_assert_str_eq(ksym(k, 0xffffffff810000ff, &mod), "_stext");
	ck_assert_str_eq(ksym(k, 0xffffffff81000100, &mod), "local_text");
	ck_assert_str_eq(ksym(k, 0xffffffff81001234, &mod), "start_kernel");
	ck_assert_str_eq(mod, "");
	ck_assert_str_eq(ksym(k, 0xffffffff81002000, &mod), "weak_upper");
	ck_assert_str_eq(ksym(k, 0xffffffff81003010, &mod), "weak_lower");
	/* data symbols are gone: their addresses fall to the text before */
	ck_assert_str_eq(ksym(k, 0xffffffff81004010, &mod), "weak_lower");
	ck_assert_str_eq(ksym(k, 0xffffffff81008010, &mod), "weak_lower");
	ck_assert_str_eq(ksym(k, 0xffffffffc0a00010, &mod), "ext4_fill_super");
	ck_assert_str_eq(mod, "[ext4]");
	ck_assert_str_eq(ksym(k, 0xffffffffc0a02010, &mod), "ext4_mount");
	ck_assert_str_eq(mod, "[ext4]");
	ck_assert_str_eq(ksym(k, 0xffffffffc0b00020, &mod), "xfs_fs_fill_super");
	ck_assert_str_eq(mod, "[xfs]");
	/* below the first symbol, far beyond the last, zero */
	ck_assert_str_eq(ksym(k, 0xffffffff80ffffff, &mod), "(none)");
	ck_assert_str_eq(ksym(k, 0xffffffffc0b00000 + (4u << 20), &mod), "(none)");
	ck_assert_str_eq(ksym(k, 0, &mod), "(none)");
	ck_assert_ptr_null(cp_ksyms_find(k, 0x1000, NULL, NULL));
	ck_assert_str_eq(cp_ksyms_find(k, 0xffffffff81001000, NULL, NULL), "start_kernel"); /* module may be NULL */
	/* the span the same symbol is found for: up to the next one, and only
	 * the address itself after the last */
	{
		uint64_t span[2] = { 1, 1 };

		ck_assert_str_eq(cp_ksyms_find(k, 0xffffffff81001234, NULL, span), "start_kernel");
		ck_assert_uint_eq(span[0], 0xffffffff81001000);
		ck_assert_uint_eq(span[1], 0xffffffff81002000);
		ck_assert_str_eq(cp_ksyms_find(k, 0xffffffff81008010, NULL, span), "weak_lower");
		ck_assert_uint_eq(span[0], 0xffffffff81003000);
		ck_assert_uint_eq(span[1], 0xffffffffc0a00000);
		ck_assert_str_eq(cp_ksyms_find(k, 0xffffffffc0b00020, NULL, span), "xfs_fs_fill_super");
		ck_assert_uint_eq(span[0], 0xffffffffc0b00020);
		ck_assert_uint_eq(span[1], 0xffffffffc0b00021);
		span[0] = span[1] = 1;
		ck_assert_ptr_null(cp_ksyms_find(k, 0x1000, NULL, span));
		ck_assert_uint_eq(span[0], 1);
	}
	cp_ksyms_free(k);
	cp_ksyms_free(NULL);
}
END_TEST

START_TEST(test_ksyms_cache_image)
{
	/* the cache file's image decodes to the same table; a foreign key, a
	 * cut file and bad offsets or order are refused */
	struct cp_ksyms *k = cp_ksyms_parse(kallsyms, sizeof(kallsyms) - 1), *back;
	char *img;
	size_t len;
	const char *mod, *want;
	uint64_t addr;

	ksym(k, 0xffffffffc0a01010, &want);
	ck_assert_int_eq(cp_ksyms_encode(k, "boot-1", &img, &len), 0);
	back = cp_ksyms_decode(img, len, "boot-1");
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(cp_ksyms_count(back), cp_ksyms_count(k));
	ck_assert_str_eq(ksym(back, 0xffffffffc0a01010, &mod), "ext4_mount");
	ck_assert_str_eq(mod, want);
	ck_assert_str_eq(ksym(back, 0xffffffff81000010, &mod), "_stext");
	cp_ksyms_free(back);
	errno = 0;
	ck_assert_ptr_null(cp_ksyms_decode(img, len, "boot-2"));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_ptr_null(cp_ksyms_decode(img, len - 1, "boot-1"));
	ck_assert_ptr_null(cp_ksyms_decode(img, 10, "boot-1"));
	/* the first symbol's name offset (after the 96-byte header) past the text */
	memset(img + 96 + 8, 0xff, 4);
	ck_assert_ptr_null(cp_ksyms_decode(img, len, "boot-1"));
	free(img);
	/* out of order: the first address after the second */
	ck_assert_int_eq(cp_ksyms_encode(k, "boot-1", &img, &len), 0);
	addr = UINT64_MAX;
	memcpy(img + 96, &addr, 8);
	ck_assert_ptr_null(cp_ksyms_decode(img, len, "boot-1"));
	free(img);
	cp_ksyms_free(k);
}
END_TEST

START_TEST(test_ksyms_cache_file)
{
	/* cp_ksyms_load reads this kernel's table from the cache when the key
	 * is this boot's (a planted table proves it), else from /proc, and
	 * writes the cache in a directory only its owner reads */
	char dir[] = "/tmp/cprof-ksyms-XXXXXX", path[256], key[128], *img;
	static const char marker[] = "ffffffff81000000 T cprof_planted_marker\n";
	struct cp_ksyms *planted = cp_ksyms_parse(marker, sizeof(marker) - 1), *k;
	struct stat st;
	size_t len;
	const char *mod;

	if (geteuid() != 0)
		return; /* /proc/kallsyms has no addresses for others */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(setenv("XDG_CACHE_HOME", dir, 1), 0);
	ck_assert_int_eq(cp_ksyms_key(key, sizeof(key)), 0);
	snprintf(path, sizeof(path), "%s/cprof", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/cprof/kallsyms", dir);
	ck_assert_int_eq(cp_ksyms_encode(planted, key, &img, &len), 0);
	ck_assert_int_eq(cp_write_file_atomic(path, img, len), 0);
	k = cp_ksyms_load();
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(ksym(k, 0xffffffff81000010, &mod), "cprof_planted_marker");
	cp_ksyms_free(k);
	free(img);
	/* another boot's: /proc's table, and the cache rewritten with it */
	ck_assert_int_eq(cp_ksyms_encode(planted, "another-boot", &img, &len), 0);
	ck_assert_int_eq(cp_write_file_atomic(path, img, len), 0);
	free(img);
	k = cp_ksyms_load();
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_gt(cp_ksyms_count(k), 1000);
	cp_ksyms_free(k);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_gt((uint64_t)st.st_size, 100000);
	snprintf(path, sizeof(path), "%s/cprof", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	/* a directory others can read is not used */
	ck_assert_int_eq(chmod(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/cprof/kallsyms", dir);
	ck_assert_int_eq(unlink(path), 0);
	k = cp_ksyms_load();
	ck_assert_ptr_nonnull(k);
	cp_ksyms_free(k);
	ck_assert_int_ne(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/cprof", dir);
	rmdir(path);
	rmdir(dir);
	unsetenv("XDG_CACHE_HOME");
	cp_ksyms_free(planted);
}
END_TEST

START_TEST(test_ksyms_unprivileged_and_empty)
{
	/* without privileges every address reads as zero */
	static const char zeros[] = "0000000000000000 T _stext\n"
				    "0000000000000000 t local_text\n"
				    "0000000000000000 T ext4_mount\t[ext4]\n";
	struct cp_ksyms *k = cp_ksyms_parse(zeros, sizeof(zeros) - 1);
	const char *mod;

	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(cp_ksyms_count(k), 0);
	ck_assert_str_eq(ksym(k, 0xffffffff81000000, &mod), "(none)");
	cp_ksyms_free(k);
	k = cp_ksyms_parse("", 0);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(cp_ksyms_count(k), 0);
	cp_ksyms_free(k);
	/* the length bounds the text: a line cut in the middle */
	k = cp_ksyms_parse("ffffffff81000000 T one\nffffffff81001000 T two\n", 28);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(cp_ksyms_count(k), 1);
	ck_assert_str_eq(ksym(k, 0xffffffff81001000, &mod), "one");
	cp_ksyms_free(k);
}
END_TEST

/* ---- the series-label policy of cprof record (lib/sampling/recorder.c) ---- */

static const char *label(const struct cp_kv *kv, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].name, name))
			return kv[i].value;
	return NULL;
}

START_TEST(test_series_labels)
{
	struct cp_proc p = { .pid = 4242, .comm = "nginx", .exe = "/usr/sbin/nginx", .unit = "nginx.service" };
	struct cp_proc q = p;
	struct cp_kv extra[] = { { "env", "prod" }, { "comm", "web" } }, extra2[] = { { "exe", "/app" } };
	struct cp_kv kv[2 + CP_SERIES_OWN_LABELS], kv2[2 + CP_SERIES_OWN_LABELS];
	size_t n, n2;

	/* its own: comm, node, exe, and the unit it runs in; no container or pod; and no pid, which
	 * is its samples' label: a program is one series, whatever its processes */
	n = cp_series_labels(&p, "host1", NULL, 0, kv);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(label(kv, n, "comm"), "nginx");
	ck_assert_str_eq(label(kv, n, "node"), "host1");
	ck_assert_str_eq(label(kv, n, "exe"), "/usr/sbin/nginx");
	ck_assert_str_eq(label(kv, n, "unit"), "nginx.service");
	ck_assert_ptr_null(label(kv, n, "pid"));
	ck_assert_ptr_null(label(kv, n, "container"));
	ck_assert_ptr_null(label(kv, n, "pod"));
	/* sorted by name */
	for (size_t i = 1; i < n; i++)
		ck_assert_int_lt(strcmp(kv[i - 1].name, kv[i].name), 0);
	/* another process of the program: the same labels */
	q.pid = 4243;
	n2 = cp_series_labels(&q, "host1", NULL, 0, kv2);
	ck_assert_uint_eq(n2, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(kv2[i].name, kv[i].name);
		ck_assert_str_eq(kv2[i].value, kv[i].value);
	}
	/* -l labels are added, and replace one of its own of the same name */
	n = cp_series_labels(&p, "host1", extra, 2, kv);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(label(kv, n, "env"), "prod");
	ck_assert_str_eq(label(kv, n, "comm"), "web");
	/* an extra exe: one order whether it replaces the process's or is added to one without */
	q.exe = NULL;
	n = cp_series_labels(&p, "h", extra2, 1, kv);
	n2 = cp_series_labels(&q, "h", extra2, 1, kv2);
	ck_assert_uint_eq(n2, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(kv2[i].name, kv[i].name);
	/* a process whose comm is not known yet, in a container of a pod: all six */
	p = (struct cp_proc){ .pid = 1, .exe = "/app", .container = "abc", .unit = "u", .pod = "p" };
	n = cp_series_labels(&p, "h", NULL, 0, kv);
	ck_assert_uint_eq(n, CP_SERIES_OWN_LABELS);
	ck_assert_str_eq(label(kv, n, "comm"), "?");
	ck_assert_str_eq(label(kv, n, "container"), "abc");
	ck_assert_str_eq(label(kv, n, "pod"), "p");
}
END_TEST

static Suite *proc_suite(void)
{
	Suite *s = suite_create("proc");
	TCase *maps = tcase_create("maps"), *cgroup = tcase_create("cgroup"), *perfmap = tcase_create("perfmap"),
	      *pmaps = tcase_create("process-maps"), *ksyms = tcase_create("kallsyms");

	tcase_add_test(maps, test_maps_normal);
	tcase_add_test(maps, test_maps_no_path);
	tcase_add_test(maps, test_maps_pseudo_paths);
	tcase_add_test(maps, test_maps_spaces_and_deleted);
	tcase_add_test(maps, test_maps_garbage);
	suite_add_tcase(s, maps);
	tcase_add_test(cgroup, test_cgroup_docker);
	tcase_add_test(cgroup, test_cgroup_containerd);
	tcase_add_test(cgroup, test_cgroup_kubepods_cgroupfs);
	tcase_add_test(cgroup, test_cgroup_kubepods_systemd);
	tcase_add_test(cgroup, test_cgroup_units);
	tcase_add_test(cgroup, test_cgroup_nothing);
	tcase_add_test(cgroup, test_cgroup_small_buffers);
	tcase_add_test(cgroup, test_proc_set_cgroup);
	suite_add_tcase(s, cgroup);
	tcase_add_test(perfmap, test_perfmap_basic);
	tcase_add_test(perfmap, test_perfmap_bad_lines);
	tcase_add_test(perfmap, test_perfmap_nested);
	tcase_add_test(perfmap, test_perfmap_reused);
	tcase_add_test(perfmap, test_perfmap_grows);
	tcase_add_test(perfmap, test_perfmap_stale);
	tcase_add_test(perfmap, test_jit_mappings);
	tcase_add_test(perfmap, test_symbolize_mapping_kept);
	suite_add_tcase(s, perfmap);
	tcase_add_test(pmaps, test_add_map_sorted_and_find);
	tcase_add_test(pmaps, test_add_map_overlaps);
	tcase_add_test(pmaps, test_add_map_build_id_and_inherit);
	tcase_add_test(pmaps, test_map_no_file);
	tcase_add_test(pmaps, test_series_labels);
	suite_add_tcase(s, pmaps);
	tcase_add_test(ksyms, test_ksyms);
	tcase_add_test(ksyms, test_ksyms_unprivileged_and_empty);
	tcase_add_test(ksyms, test_ksyms_cache_image);
	tcase_add_test(ksyms, test_ksyms_cache_file);
	suite_add_tcase(s, ksyms);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
