/* SPDX-License-Identifier: MIT */
/* lib/store/store.c: the local profile store (index, partitions, queries). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "error.h"
#include "folded.h"
#include "profile.h"
#include "selector.h"
#include "store/backends.h"
#include "store/blocks.h"
#include "store/handle.h"
#include "store/remote.h"
#include "store/store.h"
#include "testutil.h"

#define NS 1000000000LL
#define MS 1000000LL
/* 2026-11-18T11:06:40Z */
#define T0 (1795000000LL * NS)
#define DAY_NS (86400 * NS)
#define PERIOD (10 * MS)
#define CPU_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
#define COUNT_TYPE "process_cpu:samples:count:cpu:nanoseconds:delta"

/* ---- a scratch directory per test ---- */

static char dir[PATH_MAX];

static void dir_setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cprof-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
	rm_rf(dir);
}

/* Does DIR/name exist? */
static bool exists(const char *name)
{
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The day file of time t: DIR/days/YYYYMMDD.db. */
static void part_path(int64_t t, char *buf, size_t len)
{
	time_t secs = (time_t)(t / NS);
	struct tm tm;
	char day[16];

	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y%m%d", &tm);
	snprintf(buf, len, "%s/days/%s.db", dir, day);
}

/* The handle of the day of time t in store s (its dictionary, its series ids). */
static struct cp_part *day_handle(struct cp_store *s, int64_t t)
{
	struct cp_part *d = NULL;
	char name[16];

	cp_part_name(t, name, sizeof(name));
	ck_assert_int_eq(cp_parts_open(&((struct cp_local *)s)->parts, name, &d), 0);
	return d;
}

/* How many times str is among the strings of the dictionary of the day of t, as stored (equal ones
 * kept apart, as a writer that forgot its copy writes them again). */
static int dict_count(int64_t t, const char *str)
{
	struct cp_store *s = cp_store_open(dir, CP_STORE_READ);
	struct cp_part *d;
	int n = 0;

	ck_assert_ptr_nonnull(s);
	d = day_handle(s, t);
	ck_assert_int_eq(cp_dict_load(&d->dict), 0);
	for (uint32_t i = 1; i < d->dict.p->strs.n; i++)
		n += !strcmp(cp_strtab_get(&d->dict.p->strs, i), str);
	cp_store_close(s);
	return n;
}

/* ---- profiles ---- */

static uint32_t str(struct cp_profile *p, const char *s)
{
	int64_t id = cp_profile_str(p, s);

	ck_assert_int_ge(id, 0);
	return (uint32_t)id;
}

/* samples/count and cpu/nanoseconds, period cpu/nanoseconds, one mapping. */
static struct cp_profile *new_profile(int64_t duration)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_mapping m = { 0x400000, 0x500000, 0, 0, 0, true, true, true, false };

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	ck_assert_int_eq(cp_profile_set_period_type(p, "cpu", "nanoseconds", PERIOD), 0);
	m.filename = str(p, "/usr/bin/prog");
	m.build_id = str(p, "b1d");
	ck_assert_int_eq(cp_profile_mapping(p, &m), 1);
	p->time_nanos = T0;
	p->duration_nanos = duration;
	return p;
}

/* A location in mapping 1 calling `name` (its address derives from the name). */
static uint32_t fn_loc(struct cp_profile *p, const char *name)
{
	struct cp_function f = { str(p, name), str(p, name), str(p, "prog.c"), 1 };
	struct cp_line line = { 0, 0, 0 };
	int64_t fid = cp_profile_function(p, &f), lid;
	uint64_t addr = 0x401000;
	const char *c;

	for (c = name; *c; c++)
		addr = addr * 31 + (unsigned char)*c;
	ck_assert_int_gt(fid, 0);
	line.function = (uint32_t)fid;
	line.line = 10 + (int64_t)strlen(name);
	lid = cp_profile_location(p, 1, 0x400000 + addr % 0xf0000, &line, 1, false);
	ck_assert_int_gt(lid, 0);
	return (uint32_t)lid;
}

/* "a;b;c" (root first) -> a stack id (leaf first). */
static uint32_t stack_of(struct cp_profile *p, const char *frames)
{
	uint32_t locs[64], t;
	char buf[512], *save = NULL, *tok;
	size_t n = 0, i;
	int64_t id;

	snprintf(buf, sizeof(buf), "%s", frames);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		ck_assert_uint_lt(n, 64);
		locs[n++] = fn_loc(p, tok);
	}
	for (i = 0; i < n / 2; i++) {
		t = locs[i];
		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	id = cp_profile_stack(p, locs, n);
	ck_assert_int_ge(id, 0);
	return (uint32_t)id;
}

/* count samples, each of PERIOD nanoseconds */
static void add(struct cp_profile *p, const char *frames, uint32_t labels, int64_t count)
{
	int64_t v[2] = { count, count * PERIOD };

	ck_assert_int_eq(cp_profile_add_sample(p, stack_of(p, frames), labels, v), 0);
}

/* The usual test profile: 6 * k samples over main;work;burn, main;work, main;idle. */
static struct cp_profile *std_profile(int64_t k)
{
	struct cp_profile *p = new_profile(10 * NS);

	add(p, "main;work;burn", 0, 3 * k);
	add(p, "main;work", 0, 1 * k);
	add(p, "main;idle", 0, 2 * k);
	return p;
}

static char *folded(const struct cp_profile *p, int vidx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cp_folded_write(f, p, vidx, false), 0);
	fclose(f);
	return buf;
}

static void assert_same_folded(const struct cp_profile *a, int va, const struct cp_profile *b, int vb)
{
	char *x = folded(a, va), *y = folded(b, vb);

	ck_assert_str_eq(x, y);
	free(x);
	free(y);
}

/* ---- the store ---- */

static struct cp_store *open_store(enum cp_store_mode mode)
{
	struct cp_store *s;

	cp_error_clear();
	s = cp_store_open(dir, mode);
	ck_assert_msg(s != NULL, "opening %s: %s", dir, cp_errmsg(errno));
	return s;
}

/* labels as "k=v,k=v" */
static void append_at(struct cp_store *s, const struct cp_profile *p, int64_t t, const char *labels)
{
	struct cp_kv kv[8];
	char buf[256], *save = NULL, *tok;
	struct cp_store_append a = { .profile = p, .labels = kv, .nlabels = 0, .time_ns = t };
	int r;

	snprintf(buf, sizeof(buf), "%s", labels);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		ck_assert_ptr_nonnull(eq);
		*eq = '\0';
		kv[a.nlabels].name = tok;
		kv[a.nlabels++].value = eq + 1;
	}
	cp_error_clear();
	r = cp_store_append(s, &a, 1);
	ck_assert_msg(r == 0, "append: %d %s", r, cp_errmsg(r));
}

static struct cp_selector *sel_of(const char *text)
{
	struct cp_selector *sel = NULL;

	ck_assert_int_eq(cp_selector_parse(text, &sel), 0);
	return sel;
}

/* Select; returns the error (0 on success). */
static int try_select(struct cp_store *s, const char *sel_text, int64_t from, int64_t to, const char *group_by,
		      struct cp_store_result **res, size_t *n)
{
	struct cp_selector *sel = sel_of(sel_text);
	struct cp_store_query q = { sel, from, to, group_by, NULL, false };
	int r;

	cp_error_clear();
	*res = NULL;
	*n = 0;
	r = cp_store_select(s, &q, res, n);
	cp_selector_free(sel);
	return r;
}

/* One profile: the merge of sel over [from, to]. */
static struct cp_profile *select1(struct cp_store *s, const char *sel_text, int64_t from, int64_t to)
{
	struct cp_store_result *res;
	struct cp_profile *p;
	size_t n;
	int r = try_select(s, sel_text, from, to, NULL, &res, &n);

	ck_assert_msg(r == 0, "select %s: %d %s", sel_text, r, cp_errmsg(r));
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(res[0].group, "");
	p = res[0].profile;
	res[0].profile = NULL;
	cp_store_results_free(res, n);
	ck_assert_ptr_nonnull(p);
	return p;
}

static int64_t select_total(struct cp_store *s, const char *sel_text, int64_t from, int64_t to)
{
	struct cp_profile *p = select1(s, sel_text, from, to);
	int64_t t = cp_profile_total(p, 0);

	cp_profile_free(p);
	return t;
}

/* A select of all the store's samples fails as corrupt (EBADMSG), its
 * message saying what. */
static void assert_select_corrupt(struct cp_store *s, const char *what)
{
	struct cp_store_result *res;
	size_t n;
	int r = try_select(s, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n);

	ck_assert_int_eq(r, -EBADMSG);
	ck_assert_contains(cp_errmsg(r), what);
	ck_assert_ptr_null(res);
}

/* ---- tests ---- */

START_TEST(test_open_creates)
{
	struct cp_store *s;

	ck_assert(!exists("store.db"));
	s = open_store(CP_STORE_WRITE);
	ck_assert(exists("store.db"));
	ck_assert(exists("days"));
	cp_store_close(s);
	/* reopening either way works */
	s = open_store(CP_STORE_WRITE);
	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	cp_store_close(s);
	cp_store_close(NULL);
}
END_TEST

START_TEST(test_open_read_missing)
{
	char sub[PATH_MAX + 16];

	cp_error_clear();
	errno = 0;
	ck_assert_ptr_null(cp_store_open(dir, CP_STORE_READ));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), dir);
	ck_assert_contains(cp_errmsg(ENOENT), "cprof import");
	ck_assert(!exists("store.db")); /* reading creates nothing */
	ck_assert(!exists("days"));

	snprintf(sub, sizeof(sub), "%s/not/there", dir);
	errno = 0;
	ck_assert_ptr_null(cp_store_open(sub, CP_STORE_READ));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), "cprof import");
}
END_TEST

START_TEST(test_read_only_append)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_append a = { .profile = p, .time_ns = T0 };
	int r;

	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	r = cp_store_append(s, &a, 1);
	ck_assert_int_eq(r, -EPERM);
	ck_assert_contains(cp_errmsg(r), "read-only");
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* ---- the backends, opened by URI (backends.h) ---- */

START_TEST(test_open_uri)
{
	struct cp_store_open_opts w = { .mode = CP_STORE_WRITE };
	struct cp_remote_push bad = { .api = "nope" };
	struct cp_store_open_opts push = { .push = &bad };
	char uri[PATH_MAX + 16];
	struct cp_store *s;

	/* a path: the local store (WRITE creates it) */
	ck_assert_ptr_nonnull(s = cp_store_open_uri(dir, &w));
	ck_assert_str_eq(s->ops->name, "local");
	cp_store_close(s);
	/* file://PATH, the scheme in any case; no options: READ */
	snprintf(uri, sizeof(uri), "file://%s", dir);
	ck_assert_ptr_nonnull(s = cp_store_open_uri(uri, NULL));
	ck_assert_str_eq(s->ops->name, "local");
	cp_store_close(s);
	snprintf(uri, sizeof(uri), "FILE://%s", dir);
	ck_assert_ptr_nonnull(s = cp_store_open_uri(uri, NULL));
	ck_assert_str_eq(s->ops->name, "local");
	cp_store_close(s);
	/* the local backend's own errors, as cp_store_open's */
	snprintf(uri, sizeof(uri), "file://%s/none", dir);
	errno = 0;
	ck_assert_ptr_null(cp_store_open_uri(uri, NULL));
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_ptr_null(cp_store_open_uri("file://", NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(errno), "file://PATH");

	/* http(s)://: the remote backend; opening sends nothing (nothing listens on port 9) */
	ck_assert_ptr_nonnull(s = cp_store_open_uri("http://127.0.0.1:9", NULL));
	ck_assert_str_eq(s->ops->name, "remote");
	ck_assert_str_eq(cp_store_location(s), "http://127.0.0.1:9");
	cp_store_close(s);
	ck_assert_ptr_nonnull(s = cp_store_open_uri("HTTPS://127.0.0.1:9", NULL));
	ck_assert_str_eq(s->ops->name, "remote");
	cp_store_close(s);
	/* the push settings go to the remote backend, their errors with them */
	errno = 0;
	ck_assert_ptr_null(cp_store_open_uri("http://127.0.0.1:9", &push));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(errno), "unknown push API 'nope'");

	/* a scheme no backend takes: one line naming the schemes */
	cp_error_clear();
	errno = 0;
	ck_assert_ptr_null(cp_store_open_uri("ftp://127.0.0.1/x", &w));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(cp_errmsg(errno),
			 "unknown store scheme 'ftp://': the schemes are file, http or https (or give a path)");
	/* what is no scheme is a path */
	ck_assert_ptr_eq(cp_store_backend_find("relative/dir"), &cp_store_backends[0]);
	ck_assert_ptr_eq(cp_store_backend_find("./ftp://x"), &cp_store_backends[0]);
	ck_assert_ptr_eq(cp_store_backend_find("1x://y"), &cp_store_backends[0]);
	ck_assert_ptr_null(cp_store_backend_find("x-y.z+1://y"));
}
END_TEST

START_TEST(test_backend_table)
{
	size_t n = 0;

	ck_assert_str_eq(cp_store_backends[0].name, "local"); /* a bare path's */
	for (const struct cp_store_backend *b = cp_store_backends; b->name; b++, n++) {
		ck_assert_ptr_nonnull(b->open);
		ck_assert_ptr_nonnull(b->schemes);
		ck_assert_ptr_nonnull(b->schemes[0]);
		for (const struct cp_store_backend *c = cp_store_backends; c < b; c++)
			ck_assert_str_ne(c->name, b->name);
		for (const char *const *sc = b->schemes; *sc; sc++) {
			char uri[64];

			/* every scheme finds its own row, and so no other row has it */
			snprintf(uri, sizeof(uri), "%s://x", *sc);
			ck_assert_ptr_eq(cp_store_backend_find(uri), b);
		}
	}
	ck_assert_uint_eq(n, 2);
}
END_TEST

START_TEST(test_default_dir)
{
	char buf[PATH_MAX];

	setenv("CPROF_DATA", "/some/where", 1);
	ck_assert_str_eq(cp_store_default_dir(buf, sizeof(buf)), "/some/where");
	unsetenv("CPROF_DATA");
	if (geteuid() != 0) {
		setenv("XDG_DATA_HOME", "/xdg", 1);
		ck_assert_str_eq(cp_store_default_dir(buf, sizeof(buf)), "/xdg/cprof");
		unsetenv("XDG_DATA_HOME");
		setenv("HOME", "/home/u", 1);
		ck_assert_str_eq(cp_store_default_dir(buf, sizeof(buf)), "/home/u/.local/share/cprof");
	} else {
		ck_assert_str_eq(cp_store_default_dir(buf, sizeof(buf)), "/var/lib/cprof");
	}
}
END_TEST

START_TEST(test_type_name)
{
	struct cp_profile *p = std_profile(1);
	char buf[256];

	ck_assert_int_eq(cp_store_type_name(p, 0, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, COUNT_TYPE);
	ck_assert_int_eq(cp_store_type_name(p, 1, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, CPU_TYPE);
	ck_assert_int_eq(cp_store_type_name(p, 1, "myapp", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "myapp:cpu:nanoseconds:cpu:nanoseconds:delta");
	p->duration_nanos = 0;
	ck_assert_int_eq(cp_store_type_name(p, 1, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	ck_assert_int_eq(cp_store_type_name(p, 1, NULL, buf, 10), -ENAMETOOLONG);
	cp_profile_free(p);
}
END_TEST

/* More series than the writer caches the ids of: each series keeps its one
 * id, the cache stays bounded, and a series seen before the cache started
 * over gets its samples (a recorder on a host that starts processes all day). */
START_TEST(test_series_ids_bounded)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *q;
	const size_t n = CP_SERIES_IDS_MAX + 300;
	struct cp_kv *kv = calloc(n, sizeof(*kv));
	struct cp_store_append *a = calloc(n, sizeof(*a));
	char (*pid)[16] = calloc(n, sizeof(*pid));
	struct cp_store_series *ser;
	size_t nser;

	ck_assert_ptr_nonnull(kv);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(pid);
	for (size_t i = 0; i < n; i++) {
		snprintf(pid[i], sizeof(pid[i]), "%zu", i);
		kv[i] = (struct cp_kv){ "pid", pid[i] };
		a[i] = (struct cp_store_append){ .profile = p, .labels = &kv[i], .nlabels = 1, .time_ns = T0 };
	}
	size_t mem[3] = { cp_store_memory(s) }, dict[3] = { 0 };

	for (int round = 0; round < 2; round++) {
		cp_error_clear();
		ck_assert_msg(cp_store_append(s, a, n) == 0, "append: %s", cp_errmsg(-1));
		/* (the empty string leads the keys) */
		ck_assert_uint_le(day_handle(s, T0)->series.keys.n, CP_SERIES_IDS_MAX + 1);
		mem[round + 1] = cp_store_memory(s);
		dict[round + 1] = cp_profile_bytes(day_handle(s, T0)->dict.p);
	}
	/* the handle's memory: the day's dictionary and ids (none before a day was written); the
	 * dictionary holds the profile once, whatever the number of series */
	ck_assert_uint_eq(mem[0], 0);
	ck_assert_uint_gt(mem[1], mem[0]);
	ck_assert_uint_gt(mem[1], dict[1]);
	ck_assert_uint_eq(dict[2], dict[1]);
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &nser), 0);
	ck_assert_uint_eq(nser, 2 * n); /* two types each: no series twice */
	cp_store_series_free(ser, nser);
	/* the first series, whose id left the cache: both appends' samples */
	q = select1(s, "process_cpu:cpu{pid=\"0\"}", T0 - 1, T0 + 1);
	ck_assert_int_eq(cp_profile_total(q, 0), 2 * cp_profile_total(p, 1));
	cp_profile_free(q);
	q = select1(s, "process_cpu:cpu{pid=\"4300\"}", T0 - 1, T0 + 1);
	ck_assert_int_eq(cp_profile_total(q, 0), 2 * cp_profile_total(p, 1));
	cp_profile_free(q);
	free(pid);
	free(a);
	free(kv);
	cp_profile_free(p);
	cp_store_close(s);
}
END_TEST

START_TEST(test_append_series_select)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *q;
	struct cp_store_series *ser;
	struct cp_selector *sel;
	size_t n, i;

	append_at(s, p, T0, "pid=1,comm=a");
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	/* sorted by type */
	ck_assert_str_eq(ser[0].type, CPU_TYPE);
	ck_assert_str_eq(ser[1].type, COUNT_TYPE);
	for (i = 0; i < 2; i++) {
		ck_assert_int_gt(ser[i].id, 0);
		ck_assert_uint_eq(ser[i].nlabels, 2);
		ck_assert_str_eq(ser[i].names[0], "comm"); /* sorted by name */
		ck_assert_str_eq(ser[i].values[0], "a");
		ck_assert_str_eq(ser[i].names[1], "pid");
		ck_assert_str_eq(ser[i].values[1], "1");
	}
	ck_assert_int_ne(ser[0].id, ser[1].id);
	cp_store_series_free(ser, n);

	/* series with a selector */
	sel = sel_of("process_cpu:samples{comm=~\"a|b\"}");
	ck_assert_int_eq(cp_store_series(s, sel, &ser, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ser[0].type, COUNT_TYPE);
	cp_store_series_free(ser, n);
	cp_selector_free(sel);
	sel = sel_of("{comm=\"b\"}");
	ck_assert_int_eq(cp_store_series(s, sel, &ser, &n), 0);
	ck_assert_uint_eq(n, 0);
	cp_store_series_free(ser, n);
	cp_selector_free(sel);

	q = select1(s, "process_cpu:cpu", T0 - 1, T0 + 1);
	ck_assert_uint_eq(q->ntypes, 1);
	ck_assert_str_eq(cp_profile_string(q, q->sample_types[0].type), "cpu");
	ck_assert_str_eq(cp_profile_string(q, q->sample_types[0].unit), "nanoseconds");
	ck_assert_str_eq(cp_profile_string(q, q->period_type.type), "cpu");
	ck_assert_str_eq(cp_profile_string(q, q->period_type.unit), "nanoseconds");
	ck_assert_int_eq(cp_profile_total(q, 0), cp_profile_total(p, 1));
	ck_assert_int_eq(cp_profile_total(q, 0), 6 * PERIOD);
	ck_assert_int_eq(q->time_nanos, T0);
	assert_same_folded(q, 0, p, 1);
	/* the frames keep their mapping, file and line */
	ck_assert_uint_eq(q->nmappings, 1);
	ck_assert_str_eq(cp_profile_string(q, q->mappings[0].filename), "/usr/bin/prog");
	ck_assert_str_eq(cp_profile_string(q, q->mappings[0].build_id), "b1d");
	ck_assert_uint_eq(q->nfunctions, 4);
	for (i = 0; i < q->nfunctions; i++)
		ck_assert_str_eq(cp_profile_string(q, q->functions[i].filename), "prog.c");
	cp_profile_free(q);

	/* the other type, by its full name */
	q = select1(s, COUNT_TYPE "{pid=\"1\"}", T0, T0 + 1);
	ck_assert_int_eq(cp_profile_total(q, 0), 6);
	assert_same_folded(q, 0, p, 0);
	cp_profile_free(q);

	/* a range without samples: an empty profile, not an error */
	q = select1(s, "process_cpu:cpu", T0 + 1, T0 + 3600 * NS);
	ck_assert_uint_eq(q->nsamples, 0);
	ck_assert_uint_eq(q->ntypes, 1);
	ck_assert_int_eq(cp_profile_total(q, 0), 0);
	cp_profile_free(q);
	q = select1(s, "process_cpu:cpu", 0, T0 - 1);
	ck_assert_uint_eq(q->nsamples, 0);
	cp_profile_free(q);

	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_no_delta_suffix)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_series *ser;
	struct cp_store_append a = { .profile = p };
	size_t n;

	p->duration_nanos = 0;
	ck_assert_int_eq(cp_store_append(s, &a, 1), 0); /* time 0: the profile's */
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ser[0].type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	ck_assert_str_eq(ser[1].type, "process_cpu:samples:count:cpu:nanoseconds");
	ck_assert_uint_eq(ser[0].nlabels, 0);
	cp_store_series_free(ser, n);
	ck_assert_int_eq(select_total(s, "process_cpu:cpu", T0, T0 + 1), 6 * PERIOD);
	/* a name of our own */
	a.name = "burner";
	ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
	ck_assert_int_eq(select_total(s, "burner:cpu", T0, T0 + 1), 6 * PERIOD);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_select_errors)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_result *res;
	int64_t *totals = NULL;
	char *type = NULL;
	size_t n;
	int r;

	/* an empty store: nothing matches */
	r = try_select(s, "process_cpu:cpu", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, -ENOENT);

	append_at(s, p, T0, "comm=a");
	/* a name of two types (cpu and samples): its main type, as Pyroscope shows it */
	r = try_select(s, "process_cpu", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(cp_profile_string(res[0].profile, res[0].profile->sample_types[0].type), "cpu");
	cp_store_results_free(res, n);
	/* types of two names: an error that lists them */
	{
		struct cp_profile *h = std_profile(1);
		struct cp_kv kv[] = { { "comm", "a" } };
		struct cp_store_append ha = { .profile = h, .name = "heapish", .labels = kv,
		                              .nlabels = 1, .time_ns = T0 };

		ck_assert_int_eq(cp_store_append(s, &ha, 1), 0);
		cp_profile_free(h);
	}
	r = try_select(s, "{comm=\"a\"}", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_null(res);
	ck_assert_contains(cp_errmsg(r), CPU_TYPE);
	ck_assert_contains(cp_errmsg(r), COUNT_TYPE);
	r = try_select(s, "", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, -EINVAL);

	r = try_select(s, "memory", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_contains(cp_errmsg(r), "no stored series");
	r = try_select(s, "process_cpu:cpu{comm=\"b\"}", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_int_eq(r, -ENOENT);
	r = try_select(s, "process", 0, INT64_MAX, NULL, &res, &n); /* not a whole component */
	ck_assert_int_eq(r, -ENOENT);

	{
		struct cp_selector *sel = sel_of("process_cpu");
		struct cp_store_query q = { sel, T0, T0 + 10 * NS, NULL, NULL, false };
		struct cp_buckets b;

		/* two types of one name: its main type, as Pyroscope shows it (process_cpu:cpu) */
		ck_assert_int_eq(cp_store_over_time(s, &q, NS, &totals, &b, &type), 0);
		ck_assert_str_eq(type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
		free(totals);
		free(type);
		totals = NULL;
		type = NULL;
		cp_selector_free(sel);
		sel = sel_of("process_cpu:cpu");
		q.sel = sel;
		ck_assert_int_eq(cp_store_over_time(s, &q, 0, &totals, &b, &type), -EINVAL);
		q.to = q.from - 1;
		ck_assert_int_eq(cp_store_over_time(s, &q, NS, &totals, &b, &type), -EINVAL);
		q.to = q.from + 1000000;
		ck_assert_int_eq(cp_store_over_time(s, &q, 1, &totals, &b, &type), -EINVAL); /* too many steps */
		cp_selector_free(sel);
		ck_assert_ptr_null(totals);
		ck_assert_ptr_null(type);
	}
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

static void group_data(struct cp_store *s)
{
	struct cp_profile *p1 = std_profile(1), *p2 = std_profile(2), *p3 = std_profile(3);
	struct cp_kv a1[] = { { "comm", "a" }, { "pid", "1" } }, b2[] = { { "comm", "b" }, { "pid", "2" } },
		     a3[] = { { "pid", "3" }, { "comm", "a" } };
	/* one batch: three series at three times */
	struct cp_store_append batch[] = {
		{ .profile = p1, .labels = a1, .nlabels = 2, .time_ns = T0 },
		{ .profile = p2, .labels = b2, .nlabels = 2, .time_ns = T0 + 1 * NS },
		{ .profile = p3, .labels = a3, .nlabels = 2, .time_ns = T0 + 2 * NS },
	};

	ck_assert_int_eq(cp_store_append(s, batch, 3), 0);
	/* a second sample for pid 1, later */
	append_at(s, p1, T0 + 3 * NS + 500 * MS, "comm=a,pid=1");
	cp_profile_free(p1);
	cp_profile_free(p2);
	cp_profile_free(p3);
}

START_TEST(test_group_by)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_store_result *res;
	struct cp_profile *ref = std_profile(1);
	size_t n, i;
	int r;

	group_data(s);
	r = try_select(s, "process_cpu:cpu", T0, T0 + 10 * NS, "comm", &res, &n);
	ck_assert_msg(r == 0, "%s", cp_errmsg(r));
	ck_assert_uint_eq(n, 2);
	for (i = 0; i < n; i++) {
		int64_t want = !strcmp(res[i].group, "a") ? (1 + 3 + 1) * 6 * PERIOD : 2 * 6 * PERIOD;

		ck_assert(!strcmp(res[i].group, "a") || !strcmp(res[i].group, "b"));
		ck_assert_int_eq(cp_profile_total(res[i].profile, 0), want);
	}
	ck_assert_str_ne(res[0].group, res[1].group);
	cp_store_results_free(res, n);

	/* by pid */
	r = try_select(s, "process_cpu:cpu", T0, T0 + 10 * NS, "pid", &res, &n);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(n, 3);
	for (i = 0; i < n; i++) {
		int64_t k = atoi(res[i].group);

		ck_assert_int_eq(cp_profile_total(res[i].profile, 0), (k == 1 ? 2 : k) * 6 * PERIOD);
	}
	cp_store_results_free(res, n);

	/* a label no series has: one group "" */
	r = try_select(s, "process_cpu:cpu", T0, T0 + 10 * NS, "host", &res, &n);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(res[0].group, "");
	ck_assert_int_eq(cp_profile_total(res[0].profile, 0), 7 * 6 * PERIOD);
	cp_store_results_free(res, n);

	/* a group with no samples in range is an empty profile */
	r = try_select(s, "process_cpu:cpu", T0 + 1 * NS, T0 + 1 * NS + 1, "comm", &res, &n);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(n, 2);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(cp_profile_total(res[i].profile, 0), !strcmp(res[i].group, "b") ? 12 * PERIOD : 0);
	cp_store_results_free(res, n);

	/* filters and the time range */
	ck_assert_int_eq(select_total(s, "process_cpu:cpu{comm=\"a\"}", 0, INT64_MAX), 5 * 6 * PERIOD);
	ck_assert_int_eq(select_total(s, "process_cpu:cpu{comm!=\"a\"}", 0, INT64_MAX), 2 * 6 * PERIOD);
	ck_assert_int_eq(select_total(s, "process_cpu:cpu{pid=~\"[12]\"}", 0, INT64_MAX), 4 * 6 * PERIOD);
	ck_assert_int_eq(select_total(s, "process_cpu:cpu", T0 + 1 * NS, T0 + 2 * NS + 1), 5 * 6 * PERIOD);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", T0 + 2 * NS, INT64_MAX), 4 * 6);

	{ /* stacks merge across series */
		struct cp_profile *q = select1(s, "process_cpu:samples", 0, INT64_MAX);
		struct cp_profile *want = std_profile(7);

		assert_same_folded(q, 0, want, 0);
		cp_profile_free(want);
		cp_profile_free(q);
	}
	cp_store_close(s);
	cp_profile_free(ref);
}
END_TEST

START_TEST(test_over_time)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, T0, T0 + 4 * NS, NULL, NULL, false };
	struct cp_buckets b;
	int64_t *totals = NULL;
	char *type = NULL;
	int r;

	group_data(s);
	r = cp_store_over_time(s, &q, NS, &totals, &b, &type);
	ck_assert_msg(r == 0, "%s", cp_errmsg(r));
	ck_assert_str_eq(type, COUNT_TYPE);
	ck_assert_int_eq(b.start, T0);
	ck_assert_int_eq(b.step, NS);
	ck_assert_uint_eq(b.n, 5); /* [T0, T0 + 5 s) in 1 s steps: the last holds to */
	ck_assert_int_eq(totals[0], 6);
	ck_assert_int_eq(totals[1], 12);
	ck_assert_int_eq(totals[2], 18);
	ck_assert_int_eq(totals[3], 6); /* T0 + 3.5s */
	ck_assert_int_eq(totals[4], 0);
	free(totals);
	free(type);

	/* 2 s steps from T0 - 1 s to T0 + 6 s, on the grid of 2 s since the epoch:
	 * [T0-2, T0), [T0, T0+2), [T0+2, T0+4), [T0+4, T0+6), [T0+6, T0+8) */
	q.from = T0 - NS;
	q.to = T0 + 6 * NS;
	r = cp_store_over_time(s, &q, 2 * NS, &totals, &b, &type);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(b.start, T0 - 2 * NS);
	ck_assert_uint_eq(b.n, 5);
	ck_assert_int_eq(totals[0], 0);
	ck_assert_int_eq(totals[1], 18);
	ck_assert_int_eq(totals[2], 24);
	ck_assert_int_eq(totals[3], 0);
	ck_assert_int_eq(totals[4], 0);
	free(totals);
	free(type);

	/* the same buckets and totals from and to a second later: whole buckets */
	q.from = T0 - NS + NS / 2;
	q.to = T0 + 6 * NS + NS;
	r = cp_store_over_time(s, &q, 2 * NS, &totals, &b, &type);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(b.start, T0 - 2 * NS);
	ck_assert_uint_eq(b.n, 5);
	ck_assert_int_eq(totals[1], 18);
	ck_assert_int_eq(totals[2], 24);
	free(totals);
	free(type);

	/* with a label filter */
	cp_selector_free(sel);
	sel = sel_of("process_cpu:cpu{comm=\"b\"}");
	q.sel = sel;
	q.from = T0;
	q.to = T0 + 6 * NS;
	r = cp_store_over_time(s, &q, 10 * NS, &totals, &b, &type);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(totals[0], 12 * PERIOD);
	ck_assert_str_eq(type, CPU_TYPE);
	free(totals);
	free(type);
	cp_selector_free(sel);
	cp_store_close(s);
}
END_TEST

START_TEST(test_dedup)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_stats st1, st;
	int64_t oldest = -1, newest = -1;
	int i;

	/* an empty store holds no time */
	ck_assert_int_eq(cp_store_extent(s, &oldest, &newest), 0);
	ck_assert(oldest == 0 && newest == 0);
	append_at(s, p, T0, "comm=a");
	ck_assert_int_eq(cp_store_stats(s, &st1), 0);
	ck_assert_int_eq(st1.series, 2);
	ck_assert_int_eq(st1.stacks, 3);
	ck_assert_int_eq(st1.locations, 4);
	ck_assert_int_eq(st1.functions, 4);
	ck_assert_int_eq(st1.blocks, 1);
	ck_assert_int_eq(st1.entries, 6); /* 3 stacks x 2 series */
	ck_assert_int_gt(st1.samples, 0);
	ck_assert_int_gt(st1.bytes, 0);
	for (i = 1; i < 10; i++)
		append_at(s, p, T0 + i * 10 * NS, "comm=a");
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_int_eq(st.series, st1.series);
	ck_assert_int_eq(st.stacks, st1.stacks);
	ck_assert_int_eq(st.locations, st1.locations);
	ck_assert_int_eq(st.functions, st1.functions);
	ck_assert_int_eq(st.blocks, 10);
	ck_assert_int_eq(st.entries, 10 * st1.entries);
	/* the oldest and newest sample times: T0 and the last append's (its profile's length at most after) */
	ck_assert_int_eq(cp_store_extent(s, &oldest, &newest), 0);
	ck_assert_int_le(oldest, T0);
	ck_assert_int_gt(oldest, T0 - 86400 * NS);
	ck_assert_int_ge(newest, T0 + 90 * NS);
	ck_assert_int_le(newest, T0 + 90 * NS + 3600 * NS);
	ck_assert_int_eq(st.samples, 10 * st1.samples);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 60);
	/* the same profile twice at one time adds up */
	append_at(s, p, T0, "comm=a");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", T0, T0 + 1), 12);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_persistence)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *q;
	struct cp_store_stats st;

	append_at(s, p, T0, "comm=a,pid=1");
	append_at(s, p, T0 + NS, "comm=b,pid=2");
	cp_store_close(s);

	s = open_store(CP_STORE_READ);
	q = select1(s, "process_cpu:cpu{comm=\"a\"}", T0 - 1, T0 + 1);
	ck_assert_int_eq(cp_profile_total(q, 0), 6 * PERIOD);
	assert_same_folded(q, 0, p, 1);
	cp_profile_free(q);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 12);
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_int_eq(st.series, 4);
	ck_assert_int_eq(st.stacks, 3);
	cp_store_close(s);

	/* and a writer adds to what is there */
	s = open_store(CP_STORE_WRITE);
	append_at(s, p, T0 + 2 * NS, "comm=a,pid=1");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 18);
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_int_eq(st.series, 4);
	ck_assert_int_eq(st.stacks, 3);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* A profile with other functions (so new strings and dictionary rows). */
static struct cp_profile *other_profile(const char *fn)
{
	struct cp_profile *p = new_profile(10 * NS);
	char buf[128];

	snprintf(buf, sizeof(buf), "main;%s;%s_leaf", fn, fn);
	add(p, buf, 0, 5);
	return p;
}

/* A program's samples whose first frames are in a library: the selected
 * profile lists the program's mapping first when the series name it (exe),
 * as pprof's readers take the first mapping for the program. */
static struct cp_profile *lib_first_profile(void)
{
	struct cp_profile *p = new_profile(10 * NS); /* mapping 1: /usr/bin/prog */
	struct cp_mapping lib = { 0x7f0000000000, 0x7f0000100000, 0, 0, 0, true, true, true, false };
	struct cp_function f = { str(p, "deflate"), str(p, "deflate"), str(p, "deflate.c"), 1 };
	struct cp_line line = { 0, 0, 0 };
	uint32_t locs[2];
	int64_t fid, lid, sid, v[2] = { 3, 3 * PERIOD };

	lib.filename = str(p, "/usr/lib/libz.so.1");
	lib.build_id = str(p, "11b");
	ck_assert_int_eq(cp_profile_mapping(p, &lib), 2);
	fid = cp_profile_function(p, &f);
	ck_assert_int_gt(fid, 0);
	line.function = (uint32_t)fid;
	lid = cp_profile_location(p, 2, 0x7f0000001000, &line, 1, false);
	ck_assert_int_gt(lid, 0);
	locs[0] = (uint32_t)lid; /* the leaf, in the library */
	locs[1] = fn_loc(p, "main");
	sid = cp_profile_stack(p, locs, 2);
	ck_assert_int_ge(sid, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)sid, 0, v), 0);
	return p;
}

START_TEST(test_program_mapping_first)
{
	struct cp_store *w = open_store(CP_STORE_WRITE);
	struct cp_profile *p = lib_first_profile(), *q;

	append_at(w, p, T0, "comm=prog,exe=/usr/bin/prog,pid=1");
	append_at(w, p, T0, "comm=prog,exe=/usr/bin/prog,pid=2");
	append_at(w, p, T0, "comm=other,exe=/usr/bin/other");
	/* one program: its mapping first, the samples the same */
	q = select1(w, "process_cpu:samples{comm=\"prog\"}", 0, INT64_MAX);
	ck_assert_uint_eq(q->nmappings, 2);
	ck_assert_str_eq(cp_profile_string(q, q->mappings[0].filename), "/usr/bin/prog");
	ck_assert_str_eq(cp_profile_string(q, q->mappings[1].filename), "/usr/lib/libz.so.1");
	ck_assert_int_eq(cp_profile_total(q, 0), 6);
	ck_assert_str_eq(cp_profile_string(q, q->mappings[q->locations[0].mapping - 1].filename), "/usr/lib/libz.so.1");
	cp_profile_free(q);
	/* two programs: no one program, the order the samples reach them */
	q = select1(w, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_str_eq(cp_profile_string(q, q->mappings[0].filename), "/usr/lib/libz.so.1");
	ck_assert_int_eq(cp_profile_total(q, 0), 9);
	cp_profile_free(q);
	cp_profile_free(p);
	cp_store_close(w);
}
END_TEST

START_TEST(test_two_handles)
{
	struct cp_store *w = open_store(CP_STORE_WRITE), *r, *w2;
	struct cp_profile *p = std_profile(1), *o = other_profile("other"), *o2 = other_profile("third"), *q;
	char *text;

	append_at(w, p, T0, "comm=a");
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 6);
	/* the writer adds a profile with new functions after the reader looked */
	append_at(w, o, T0 + NS, "comm=a");
	q = select1(r, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_int_eq(cp_profile_total(q, 0), 11);
	text = folded(q, 0);
	ck_assert_contains(text, "main;other;other_leaf 5\n");
	ck_assert_contains(text, "main;work;burn 3\n");
	free(text);
	cp_profile_free(q);
	/* and a new series */
	append_at(w, p, T0 + 2 * NS, "comm=b");
	ck_assert_int_eq(select_total(r, "process_cpu:samples{comm=\"b\"}", 0, INT64_MAX), 6);

	/* a writer that selected, then another writer appended: it appends still */
	ck_assert_int_eq(select_total(w, "process_cpu:samples", 0, INT64_MAX), 17);
	w2 = open_store(CP_STORE_WRITE);
	append_at(w2, o2, T0 + 3 * NS, "comm=c");
	append_at(w, o, T0 + 4 * NS, "comm=c");
	append_at(w2, p, T0 + 5 * NS, "comm=c");
	ck_assert_int_eq(select_total(w, "process_cpu:samples{comm=\"c\"}", 0, INT64_MAX), 16);
	ck_assert_int_eq(select_total(w2, "process_cpu:samples{comm=\"c\"}", 0, INT64_MAX), 16);
	q = select1(r, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_int_eq(cp_profile_total(q, 0), 33);
	text = folded(q, 0);
	ck_assert_contains(text, "main;other;other_leaf 10\n");
	ck_assert_contains(text, "main;third;third_leaf 5\n");
	ck_assert_contains(text, "main;work;burn 9\n");
	free(text);
	cp_profile_free(q);
	cp_store_close(w2);
	cp_store_close(r);
	cp_store_close(w);
	cp_profile_free(p);
	cp_profile_free(o);
	cp_profile_free(o2);
}
END_TEST

/* A reader selecting while a writer keeps adding profiles with new stacks:
 * every select must succeed. */
struct writer_arg {
	int n;
	int err;
	int done; /* set (atomically) when the writer is through */
	char msg[256]; /* the writer's error message (messages are per thread) */
};

static void *writer(void *arg)
{
	struct writer_arg *wa = arg;
	struct cp_store *w = cp_store_open(dir, CP_STORE_WRITE);
	int i;

	if (!w) {
		wa->err = -errno;
		snprintf(wa->msg, sizeof(wa->msg), "%s", cp_errmsg(errno));
		__atomic_store_n(&wa->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	for (i = 0; i < wa->n && !wa->err; i++) {
		struct cp_profile *p = new_profile(10 * NS);
		struct cp_kv kv = { "comm", "a" };
		struct cp_store_append a = { .profile = p, .labels = &kv, .nlabels = 1, .time_ns = T0 + i * MS };
		char buf[64];
		int64_t v[2] = { 1, PERIOD };
		uint32_t locs[2];

		snprintf(buf, sizeof(buf), "fn%d", i);
		locs[0] = fn_loc(p, buf);
		locs[1] = fn_loc(p, "main");
		if (cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 2), 0, v))
			wa->err = -EINVAL;
		else
			wa->err = cp_store_append(w, &a, 1);
		cp_profile_free(p);
	}
	if (wa->err)
		snprintf(wa->msg, sizeof(wa->msg), "%s", cp_errmsg(wa->err));
	cp_store_close(w);
	__atomic_store_n(&wa->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_concurrent_reader)
{
	struct cp_store *w = open_store(CP_STORE_WRITE), *r;
	struct cp_profile *p = std_profile(1);
	struct writer_arg wa = { 150, 0, 0, "" };
	pthread_t th;
	int64_t last = 0;
	int fails = 0;
	bool done;
	char msg[256] = "";

	append_at(w, p, T0 - NS, "comm=a");
	cp_store_close(w);
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(pthread_create(&th, NULL, writer, &wa), 0);
	do { /* until a select after the writer is through */
		struct cp_store_result *res;
		size_t n;
		int e;

		done = __atomic_load_n(&wa.done, __ATOMIC_ACQUIRE);
		e = try_select(r, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n);
		if (e) {
			if (!fails++)
				snprintf(msg, sizeof(msg), "%s", cp_errmsg(e));
		} else {
			int64_t t = cp_profile_total(res[0].profile, 0);

			ck_assert_int_ge(t, last);
			last = t;
			cp_store_results_free(res, n);
		}
	} while (!done);
	pthread_join(th, NULL);
	ck_assert_msg(wa.err == 0, "writer: %s", wa.msg);
	ck_assert_msg(fails == 0, "%d selects failed, the first: %s", fails, msg);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 6 + wa.n);
	cp_store_close(r);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_downsample_policy)
{
	struct cp_downsample p;
	char buf[128];

	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &p), 0);
	ck_assert_uint_eq(p.n, 3);
	ck_assert_str_eq(cp_downsample_text(&p, buf, sizeof(buf)), CP_DOWNSAMPLE_DEFAULT);
	ck_assert_int_eq(cp_downsample_step(&p, 0), 0);
	ck_assert_int_eq(cp_downsample_step(&p, 2 * DAY_NS - 1), 0);
	ck_assert_int_eq(cp_downsample_step(&p, 2 * DAY_NS), 300 * NS);
	ck_assert_int_eq(cp_downsample_step(&p, 10 * DAY_NS - 1), 300 * NS);
	ck_assert_int_eq(cp_downsample_step(&p, 10 * DAY_NS), 3600 * NS);
	ck_assert_int_eq(cp_downsample_step(&p, 400 * DAY_NS), 3600 * NS);
	ck_assert_int_eq(cp_downsample_parse("off", &p), 0);
	ck_assert_uint_eq(p.n, 0);
	ck_assert_str_eq(cp_downsample_text(&p, buf, sizeof(buf)), "off");
	ck_assert_int_eq(cp_downsample_parse("raw", &p), 0);
	ck_assert_uint_eq(p.n, 0);
	ck_assert_int_eq(cp_downsample_parse("1h", &p), 0);
	ck_assert_int_eq(cp_downsample_step(&p, 0), 3600 * NS);
	/* steps must divide a day in whole seconds and grow; ages grow; only the last has none */
	ck_assert_int_eq(cp_downsample_parse("raw=2d,7m", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("raw=2d,500ms", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("10m=2d,1m", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("raw=14d,1m=2d,10m", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("raw,1m", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("raw=2d,1m=x", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("", &p), -EINVAL);
	ck_assert_int_eq(cp_downsample_parse("raw=1d,1m=2d,5m=3d,10m=4d,1h", &p), -EINVAL);
}
END_TEST

static int64_t part_count(int64_t t, const char *sql);

/* A sample's labelset of pid, thread_id, thread_name (as the recorder's) and span (another sample
 * label), made in p. */
static uint32_t proc_labels(struct cp_profile *p, const char *pid, const char *tid, const char *span)
{
	struct cp_label l[4];
	const char *kv[4][2] = { { "pid", pid }, { "thread_id", tid }, { "thread_name", "worker" }, { "span", span } };
	int64_t id;

	for (int i = 0; i < 4; i++)
		l[i] = (struct cp_label){ (uint32_t)cp_profile_str(p, kv[i][0]), (uint32_t)cp_profile_str(p, kv[i][1]), 0,
					  0 };
	id = cp_profile_labelset(p, l, 4);
	ck_assert_int_gt(id, 0);
	return (uint32_t)id;
}

/* Downsampled days keep each program's profile, not its processes': the samples' pid, thread_id
 * and thread_name go, so that the entries of many processes merge in a step; other sample labels
 * stay, and every total is exact.  A raw day keeps them all. */
START_TEST(test_downsample_thins_processes)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_store_result *res;
	struct cp_compact_stats st;
	struct cp_downsample pol;
	size_t n;
	int64_t raw_entries;

	/* 40 batches 10 s apart, each of another process (pids 100..139, a thread each) */
	for (int i = 0; i < 40; i++) {
		struct cp_profile *p = new_profile(10 * NS);
		char pid[16], tid[16];

		snprintf(pid, sizeof(pid), "%d", 100 + i);
		snprintf(tid, sizeof(tid), "%d", 100 + i);
		add(p, "main;work;burn", proc_labels(p, pid, tid, i % 2 ? "a" : "b"), 3);
		add(p, "main;idle", proc_labels(p, pid, tid, "a"), 1);
		append_at(s, p, T0 + i * 10 * NS, "comm=w");
		cp_profile_free(p);
	}
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "pid", &res, &n), 0);
	ck_assert_uint_eq(n, 40);
	cp_store_results_free(res, n);
	ck_assert_int_eq(cp_downsample_parse("raw=2d,10m", &pol), 0);
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + DAY_NS, 0, &st), 0); /* raw: laid out only */
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "pid", &res, &n), 0);
	ck_assert_uint_eq(n, 40);
	cp_store_results_free(res, n);
	raw_entries = part_count(T0, "SELECT sum(entries) FROM blocks");
	ck_assert_int_eq(raw_entries, 2 * 2 * 40); /* 2 stacks, 2 types, 40 processes */
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + 30 * DAY_NS, 0, &st), 1);
	/* 400 s in one or two 10m steps: per step, 2 types x (burn with span a, burn b, idle a) */
	ck_assert_int_le(part_count(T0, "SELECT sum(entries) FROM blocks"), 2 * 2 * 3);
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "pid", &res, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(res[0].group, "");
	ck_assert_int_eq(cp_profile_total(res[0].profile, 0), 40 * 4);
	cp_store_results_free(res, n);
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "thread_name", &res, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(res[0].group, "");
	cp_store_results_free(res, n);
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "span", &res, &n), 0);
	ck_assert_uint_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(cp_profile_total(res[i].profile, 0), !strcmp(res[i].group, "a") ? 20 * 3 + 40 : 20 * 3);
	cp_store_results_free(res, n);
	ck_assert_int_eq(select_total(s, "process_cpu:cpu", T0 - DAY_NS, T0 + DAY_NS), 40 * 4 * PERIOD);
	cp_store_close(s);
	/* what the compaction wrote (its label sets too) reads in another process's view */
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS, "span", &res, &n), 0);
	ck_assert_uint_eq(n, 2);
	cp_store_results_free(res, n);
	cp_store_close(s);
}
END_TEST

/* A query's answer drops the samples' process labels unless asked to keep them (top's processes):
 * the samples of a program's processes merge into one per stack and other labels, as before a
 * series per program; grouping by pid still parts them. */
START_TEST(test_select_process_labels)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, T0 - DAY_NS, T0 + DAY_NS, NULL, NULL, false };
	struct cp_store_result *res;
	size_t n;

	for (int i = 0; i < 6; i++) {
		struct cp_profile *p = new_profile(10 * NS);
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", 200 + i);
		add(p, "main;work;burn", proc_labels(p, pid, pid, "a"), 3);
		add(p, "main;idle", proc_labels(p, pid, pid, "b"), 1);
		append_at(s, p, T0 + i * 10 * NS, "comm=w");
		cp_profile_free(p);
	}
	ck_assert_int_eq(cp_store_select(s, &q, &res, &n), 0);
	ck_assert_uint_eq(n, 1);
	/* two samples (a stack each, its span), no pid among their labels */
	ck_assert_uint_eq(res[0].profile->nsamples, 2);
	for (uint32_t i = 0; i < res[0].profile->nsamples; i++) {
		const struct cp_profile *p = res[0].profile;
		const struct cp_span *ls = &p->labelsets[p->samples[i].labels];

		ck_assert_uint_eq(ls->len, 1);
		ck_assert_str_eq(cp_profile_string(p, p->labels[ls->off].key), "span");
	}
	ck_assert_int_eq(cp_profile_total(res[0].profile, 0), 6 * 4);
	cp_store_results_free(res, n);
	q.process_labels = true;
	ck_assert_int_eq(cp_store_select(s, &q, &res, &n), 0);
	ck_assert_uint_eq(res[0].profile->nsamples, 12);
	ck_assert_int_eq(cp_profile_total(res[0].profile, 0), 6 * 4);
	cp_store_results_free(res, n);
	q.process_labels = false;
	q.group_by = "pid";
	ck_assert_int_eq(cp_store_select(s, &q, &res, &n), 0);
	ck_assert_uint_eq(n, 6);
	cp_store_results_free(res, n);
	cp_selector_free(sel);
	cp_store_close(s);
}
END_TEST

/* A day merged into 1h steps (the default policy's, 30 days on) keeps every stack's total; a
 * query says 1h and over-time steps are raised to it; a second run does nothing. */
START_TEST(test_downsample_totals)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *before, *after;
	struct cp_compact_stats st;
	struct cp_downsample pol;
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, T0 - DAY_NS, T0 + DAY_NS, NULL, NULL, false };
	struct cp_buckets b;
	int64_t res = -1, *totals = NULL, sum = 0;
	char *type = NULL;
	int i;

	for (i = 0; i < 30; i++) /* 30 batches 20 s apart: 10 minutes */
		append_at(s, p, T0 + i * 20 * NS, i % 2 ? "comm=a" : "comm=b");
	before = select1(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS);
	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &pol), 0);
	/* a day old: raw, its closed hour laid out by series (the 30 appends' blocks, one block) */
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + DAY_NS, 0, &st), 0);
	ck_assert_int_eq(part_count(T0, "SELECT count(*) FROM blocks WHERE step = 0 AND layout = 1"), 1);
	ck_assert_int_eq(part_count(T0, "SELECT count(*) FROM blocks WHERE layout = 0"), 0);
	after = select1(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS);
	assert_same_folded(before, 0, after, 0);
	cp_profile_free(after);
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + 30 * DAY_NS, 0, &st), 1);
	ck_assert_int_eq(st.days, 1);
	ck_assert_int_eq(st.blocks_before, 1);
	ck_assert_int_le(st.blocks_after, 2);
	ck_assert_int_lt(st.entries_after, st.entries_before);
	after = select1(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS);
	assert_same_folded(before, 0, after, 0);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", T0 - DAY_NS, T0 + DAY_NS), 30 * 6);
	q.resolution = &res;
	ck_assert_int_eq(cp_store_over_time(s, &q, NS, &totals, &b, &type), 0);
	ck_assert_int_eq(res, 3600 * NS);
	ck_assert_int_eq(b.step, 3600 * NS);
	for (size_t k = 0; k < b.n; k++)
		sum += totals[k];
	ck_assert_int_eq(sum, 30 * 6);
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + 30 * DAY_NS, 0, &st), 0);
	free(totals);
	free(type);
	cp_selector_free(sel);
	cp_profile_free(before);
	cp_profile_free(after);
	cp_profile_free(p);
	cp_store_close(s);
	/* read-only: refused */
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + 30 * DAY_NS, 0, NULL), -EPERM);
	cp_store_close(s);
}
END_TEST

static int64_t part_count(int64_t t, const char *sql)
{
	char path[PATH_MAX + 32];
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;

	part_path(t, path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* n labels host=h000, host=h001, ... (their values in host) */
static void host_labels(int n, char (*host)[16], struct cp_kv *kv)
{
	for (int h = 0; h < n; h++) {
		snprintf(host[h], sizeof(host[h]), "h%03d", h);
		kv[h] = (struct cp_kv){ "host", host[h] };
	}
}

/* the CPU samples of host=host in [from, to) */
static int64_t host_total(struct cp_store *s, const char *host, int64_t from, int64_t to)
{
	char sel[64];

	snprintf(sel, sizeof(sel), "process_cpu:samples{host=\"%s\"}", host);
	return select_total(s, sel, from, to);
}

/* A closed hour's blocks, each holding every series of its batch, laid out by series: 120 hosts
 * appended together 120 times (more entries than a laid-out block holds); afterwards each block
 * holds a narrower range of series ids, a host's two types in the same block (their keys are the
 * same), and every host's total is what it was. */
START_TEST(test_layout_by_series)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_append a[120];
	struct cp_kv kv[120];
	char host[120][16];
	struct cp_downsample pol;
	int64_t before[120];

	host_labels(120, host, kv);
	for (int i = 0; i < 120; i++) {
		for (int h = 0; h < 120; h++)
			a[h] = (struct cp_store_append){ .profile = p, .labels = &kv[h], .nlabels = 1, .time_ns = T0 + i * 10 * NS };
		ck_assert_int_eq(cp_store_append(s, a, 120), 0);
	}
	for (int h = 0; h < 120; h++)
		before[h] = host_total(s, host[h], T0 - DAY_NS, T0 + DAY_NS);
	ck_assert_int_eq(part_count(T0, "SELECT min(s_max - s_min) FROM blocks"), 2 * 120 - 1); /* two types a host */
	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &pol), 0);
	ck_assert_int_eq(cp_store_compact(s, &pol, T0 + 2 * CP_HOUR_NS, 0, NULL), 0);
	ck_assert_int_eq(part_count(T0, "SELECT count(*) FROM blocks WHERE layout = 0"), 0);
	/* blocks of 64 Ki entries at most, holding whole series, a host's two in one (a host's series
	 * have consecutive ids, the first odd: a block's range starts at one and ends at the other) */
	ck_assert_int_lt(part_count(T0, "SELECT max(s_max - s_min) FROM blocks"), 2 * 120 - 1);
	ck_assert_int_gt(part_count(T0, "SELECT count(*) FROM blocks"), 1);
	ck_assert_int_eq(part_count(T0, "SELECT count(*) FROM blocks WHERE (s_max - s_min) % 2 = 0"), 0);
	for (int h = 0; h < 120; h++)
		ck_assert_int_eq(host_total(s, host[h], T0 - DAY_NS, T0 + DAY_NS), before[h]);
	cp_profile_free(p);
	cp_store_close(s);
}
END_TEST

/* Summaries of hours and days (compact.h): queries of whole hours and days
 * read them and get what the blocks say, partial ones mix them with blocks,
 * a late block drops the summaries of its time (a trigger) until the next
 * compaction makes them again, and queries do read them (with the blocks
 * deleted behind the trigger's back, their totals stay). */
START_TEST(test_rollups)
{
	const int64_t H = 3600 * NS, D0 = T0 - T0 % DAY_NS;
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *before, *after;
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, D0, D0 + DAY_NS, NULL, NULL, false };
	struct cp_compact_stats st;
	struct cp_downsample pol;
	struct cp_buckets b;
	int64_t *totals = NULL, res = -1;
	char *type = NULL, path[PATH_MAX + 32];
	sqlite3 *db;
	int h;

	for (h = 0; h < 24; h++) /* 6 samples 5 minutes into every hour */
		append_at(s, p, D0 + h * H + 300 * NS, h % 2 ? "comm=a" : "comm=b");
	append_at(s, p, D0 + DAY_NS + 60 * NS, "comm=a"); /* the next day */
	before = select1(s, "process_cpu:samples", D0, D0 + DAY_NS);
	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &pol), 0);
	/* the next day's first two hours are over: the day and all its hours (recent) */
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 2 * H, 0, &st), 0);
	ck_assert_int_eq(st.rollups, 1 + 24 + 1);
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 86400000000000"), 1);
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 3600000000000"), 24);
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 2 * H, 0, &st), 0);
	ck_assert_int_eq(st.rollups, 0); /* nothing more due */
	after = select1(s, "process_cpu:samples", D0, D0 + DAY_NS);
	assert_same_folded(before, 0, after, 0);
	cp_profile_free(after);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS), 24 * 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 25 * 6);
	/* hours 1-4 whole (summaries), hour 5's 5 minutes (a block) */
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0 + 1800 * NS, D0 + 5 * H + 600 * NS), 5 * 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0 + 1800 * NS, D0 + 5 * H + 200 * NS), 4 * 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=\"a\"}", D0, D0 + DAY_NS), 12 * 6);
	/* per hour over time: each summary in its bucket */
	q.resolution = &res;
	ck_assert_int_eq(cp_store_over_time(s, &q, H, &totals, &b, &type), 0);
	ck_assert_int_eq(res, 0);
	ck_assert_int_eq(b.start, D0);
	ck_assert_uint_ge(b.n, 24); /* (and the bucket where the range ends) */
	for (size_t k = 0; k < 24; k++)
		ck_assert_int_eq(totals[k], 6);
	free(totals);
	free(type);
	/* a late block in hour 3: the hour's and the day's summaries go */
	append_at(s, p, D0 + 3 * H + 1800 * NS, "comm=a");
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 86400000000000"), 0);
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 3600000000000"), 23);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS), 25 * 6);
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 2 * H, 0, &st), 0);
	ck_assert_int_eq(st.rollups, 2);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS), 25 * 6);
	/* hours fall out of the recent ones: only the day's summary is kept */
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 50 * H, 0, &st), 2); /* and both days at 1m */
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 3600000000000"), 0);
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 86400000000000"), 1);
	cp_store_close(s);
	/* the blocks gone behind the trigger's back: whole days still add up (read
	 * from the summary), parts of days do not */
	part_path(D0, path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP TRIGGER blocks_delete_rollups; DELETE FROM blocks", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS), 25 * 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS - 1), 0);
	cp_store_close(s);
	cp_selector_free(sel);
	cp_profile_free(before);
	cp_profile_free(p);
}
END_TEST

/* A day's summary of many series is summed a few series at a time (compact.c, DAY_SERIES_PASS): 150
 * hosts (300 series) appended together every hour; the day's rows each hold a range of series that
 * no other row of the day holds (so no key is in two rows), there are several of them, and every
 * host's whole day, read from the summary, is what the blocks said. */
START_TEST(test_rollups_day_by_series)
{
	const int64_t H = 3600 * NS, D0 = T0 - T0 % DAY_NS;
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	static struct cp_store_append a[150];
	static struct cp_kv kv[150];
	static char host[150][16];
	struct cp_downsample pol;
	int64_t before[150];

	host_labels(150, host, kv);
	for (int hr = 0; hr < 24; hr++) {
		for (int h = 0; h < 150; h++)
			a[h] = (struct cp_store_append){ .profile = p, .labels = &kv[h], .nlabels = 1,
							 .time_ns = D0 + hr * H + 300 * NS };
		ck_assert_int_eq(cp_store_append(s, a, 150), 0);
	}
	for (int h = 0; h < 150; h++) {
		before[h] = host_total(s, host[h], D0, D0 + DAY_NS);
		ck_assert_int_gt(before[h], 0);
	}
	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &pol), 0);
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 2 * H, 0, NULL), 0);
	ck_assert_int_ge(part_count(D0, "SELECT count(*) FROM rollups WHERE step = 86400000000000"), 300 / 64);
	ck_assert_int_eq(part_count(D0, "SELECT count(*) FROM rollups x JOIN rollups y ON x.id < y.id"
					" AND x.step = 86400000000000 AND y.step = 86400000000000"
					" AND x.s_max >= y.s_min AND y.s_max >= x.s_min"), 0);
	/* a whole day's entries: those of one hour, as every hour had the same */
	ck_assert_int_eq(part_count(D0, "SELECT sum(entries) FROM rollups WHERE step = 86400000000000"),
			 part_count(D0, "SELECT sum(entries) FROM rollups WHERE step = 3600000000000") / 24);
	for (int h = 0; h < 150; h++)
		ck_assert_int_eq(host_total(s, host[h], D0, D0 + DAY_NS), before[h]);
	cp_profile_free(p);
	cp_store_close(s);
}
END_TEST

/* The summaries keep programs, not processes: 6 processes of one program in each hour fall on one
 * entry per stack and other labels, and queries that ask about the processes (by pid, grouped by
 * pid, with their labels) read the blocks and get what they got before; the others get the same
 * answer from the summaries. */
START_TEST(test_rollups_programs)
{
	const int64_t H = 3600 * NS, D0 = T0 - T0 % DAY_NS;
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, D0, D0 + DAY_NS, NULL, NULL, false };
	struct cp_store_result *res;
	struct cp_profile *before, *after;
	struct cp_downsample pol;
	size_t n;

	for (int h = 0; h < 24; h++)
		for (int i = 0; i < 6; i++) {
			struct cp_profile *p = new_profile(10 * NS);
			char pid[16];

			snprintf(pid, sizeof(pid), "%d", 200 + i);
			add(p, "main;work;burn", proc_labels(p, pid, pid, "a"), 3 + i);
			add(p, "main;idle", proc_labels(p, pid, pid, "b"), 1);
			append_at(s, p, D0 + h * H + (60 + i) * NS, "comm=w");
			cp_profile_free(p);
		}
	before = select1(s, "process_cpu:samples", D0, D0 + DAY_NS);
	ck_assert_int_eq(cp_downsample_parse(CP_DOWNSAMPLE_DEFAULT, &pol), 0);
	ck_assert_int_eq(cp_store_compact(s, &pol, D0 + DAY_NS + 2 * H, 0, NULL), 0);
	/* four entries an hour (two types, a stack and span each), where the blocks hold 24 */
	ck_assert_int_eq(part_count(D0, "SELECT sum(entries) FROM rollups WHERE step = 3600000000000"), 24 * 4);
	ck_assert_int_eq(part_count(D0, "SELECT sum(entries) FROM rollups WHERE step = 86400000000000"), 4);
	ck_assert_int_eq(part_count(D0, "SELECT sum(entries) FROM blocks"), 24 * 24);
	after = select1(s, "process_cpu:samples", D0, D0 + DAY_NS);
	assert_same_folded(before, 0, after, 0);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", D0, D0 + DAY_NS), 24 * (33 + 6));
	/* by pid: the blocks' answer */
	ck_assert_int_eq(select_total(s, "process_cpu:samples{pid=\"203\"}", D0, D0 + DAY_NS), 24 * (6 + 1));
	ck_assert_int_eq(select_total(s, "process_cpu:samples{pid!=\"203\"}", D0 + H, D0 + 3 * H), 2 * (27 + 5));
	q.group_by = "pid";
	ck_assert_int_eq(cp_store_select(s, &q, &res, &n), 0);
	ck_assert_uint_eq(n, 6);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(cp_profile_total(res[i].profile, 0),
				 24 * (3 + atoi(res[i].group) - 200 + 1));
	cp_store_results_free(res, n);
	q.group_by = NULL;
	q.process_labels = true;
	ck_assert_int_eq(cp_store_select(s, &q, &res, &n), 0);
	ck_assert_uint_eq(res[0].profile->nsamples, 12);
	ck_assert_int_eq(cp_profile_total(res[0].profile, 0), 24 * (33 + 6));
	cp_store_results_free(res, n);
	cp_profile_free(before);
	cp_profile_free(after);
	cp_selector_free(sel);
	cp_store_close(s);
}
END_TEST

START_TEST(test_retention)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *o = other_profile("old");
	int64_t now = cp_now_ns(), old = now - 40 * 86400 * NS;
	char oldpart[PATH_MAX + 32], newpart[PATH_MAX + 32];

	append_at(s, o, old, "comm=a");
	append_at(s, p, now, "comm=a");
	part_path(old, oldpart, sizeof(oldpart));
	part_path(now, newpart, sizeof(newpart));
	ck_assert_int_eq(access(oldpart, F_OK), 0);
	ck_assert_int_eq(access(newpart, F_OK), 0);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 11);

	ck_assert_int_eq(cp_store_retain(s, 30 * 86400 * NS), 1);
	ck_assert_int_ne(access(oldpart, F_OK), 0);
	ck_assert_int_eq(access(newpart, F_OK), 0);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6);
	ck_assert_int_eq(cp_store_retain(s, 30 * 86400 * NS), 0);
	cp_store_close(s);

	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, now - 86400 * NS), 0);
	cp_store_close(s);

	/* appending to a day that retention removed makes it again */
	s = open_store(CP_STORE_WRITE);
	append_at(s, o, old, "comm=a");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, now - 86400 * NS), 5);
	cp_store_close(s);
	cp_profile_free(p);
	cp_profile_free(o);
}
END_TEST

START_TEST(test_corrupt_index)
{
	char path[PATH_MAX + 16];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/store.db", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (i = 0; i < 400; i++)
		fputs("this is not a database at all, just garbage text\n", f);
	fclose(f);

	cp_error_clear();
	errno = 0;
	ck_assert_ptr_null(cp_store_open(dir, CP_STORE_READ));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_contains(cp_errmsg(errno), "corrupt");
	ck_assert_contains(cp_errmsg(errno), dir);
	cp_error_clear();
	errno = 0;
	ck_assert_ptr_null(cp_store_open(dir, CP_STORE_WRITE));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_contains(cp_errmsg(errno), "corrupt");
}
END_TEST

START_TEST(test_foreign_sqlite)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	char path[PATH_MAX + 16];
	FILE *f;

	cp_store_close(s);
	/* an index of another schema version */
	{
		char cmd[PATH_MAX + 128];

		snprintf(path, sizeof(path), "%s/store.db", dir);
		snprintf(cmd, sizeof(cmd), "command -v sqlite3 >/dev/null && sqlite3 '%s' \"UPDATE meta SET value='99'\"",
			 path);
		if (system(cmd) == 0) {
			errno = 0;
			ck_assert_ptr_null(cp_store_open(dir, CP_STORE_READ));
			ck_assert_int_eq(errno, EPROTO);
			ck_assert_contains(cp_errmsg(errno), "schema version");
		}
	}
	/* an empty index file */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/store.db-wal", dir);
	unlink(path);
	errno = 0;
	cp_error_clear();
	ck_assert_ptr_null(cp_store_open(dir, CP_STORE_READ));
	ck_assert_int_ne(errno, 0);
	ck_assert(strlen(cp_errmsg(errno)) > 0);
}
END_TEST

static void truncate_and_select(off_t size)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_store_result *res;
	char path[PATH_MAX + 32];
	struct stat sb;
	size_t n;
	int r, i;

	/* enough samples for a partition of several pages */
	for (i = 0; i < 200; i++) {
		char fn[32];

		snprintf(fn, sizeof(fn), "main;f%d", i);
		add(p, fn, 0, i + 1);
	}
	for (i = 0; i < 20; i++)
		append_at(s, p, T0 + i * NS, "comm=a");
	cp_store_close(s);
	part_path(T0, path, sizeof(path));
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(truncate(path, size >= 0 ? size : sb.st_size / 2), 0);

	s = open_store(CP_STORE_READ);
	r = try_select(s, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n);
	ck_assert_msg(r < 0, "select on a truncated partition (%lld of %lld bytes) succeeded",
		      (long long)(size >= 0 ? size : sb.st_size / 2), (long long)sb.st_size);
	ck_assert(strlen(cp_errmsg(r)) > 0);
	ck_assert_ptr_null(res);
	cp_store_close(s);
	cp_profile_free(p);
}

/* Garbage over the header of the blocks table's root page (page 2: the
 * table is created first): SQLite fails the scan midway, which must be an
 * error, not a short result. */
START_TEST(test_corrupt_partition_page)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	char path[PATH_MAX + 32], junk[16];
	FILE *f;
	int i;

	for (i = 0; i < 20; i++)
		append_at(s, p, T0 + i * NS, "comm=a");
	cp_store_close(s);
	part_path(T0, path, sizeof(path));
	f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(fseek(f, 4096, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	fclose(f);

	s = open_store(CP_STORE_READ);
	assert_select_corrupt(s, "corrupt");
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* A block whose series list claims more series than it has bytes for: the
 * select fails as corrupt (EBADMSG, says which part), not as out of memory. */
START_TEST(test_corrupt_series_list)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	char path[PATH_MAX + 32];
	sqlite3 *db;

	append_at(s, p, T0, "comm=a");
	cp_store_close(s);
	part_path(T0, path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	/* 0xff 0x7f: a varint of 16383 series, then nothing */
	ck_assert_int_eq(sqlite3_exec(db, "UPDATE blocks SET series = x'ff7f'", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	s = open_store(CP_STORE_READ);
	cp_error_clear();
	assert_select_corrupt(s, "a sample block is corrupt (series list)");
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

struct seen {
	struct cp_block_entry e[8];
	size_t n;
	const int64_t *ids;
};

static int see(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t labels, int64_t value)
{
	struct seen *sn = ctx;

	ck_assert_uint_lt(sn->n, 8);
	sn->e[sn->n++] = (struct cp_block_entry){ sn->ids[k], t, (uint32_t)stack, (uint32_t)labels, value, 0 };
	return 0;
}

/* The block codec alone: what is encoded decodes the same, series by series, and a
 * series left out of want is skipped. */
START_TEST(test_block_roundtrip)
{
	const struct cp_block_entry e[] = {
		{ 3, T0, 7, 0, 20 * MS, T0 + 10 * NS }, { 3, T0 + NS, 7, 1, 10 * MS, T0 + 11 * NS },
		{ 3, T0 + NS, 9, 0, 30 * MS, T0 + 11 * NS }, { 8, T0 - NS, 2, 0, -5, 0 }, { 8, T0 + 2 * NS, 1, 4, INT64_MAX, 0 },
	};
	struct cp_block b;
	struct cp_block_reader rd = { 0 };
	struct seen sn = { .n = 0 };
	unsigned char want[2] = { 1, 1 };
	int64_t *ids = NULL, ends[2];
	size_t n = 0, i;

	ck_assert_int_eq(cp_block_encode(e, 5, &b), 0);
	ck_assert_int_eq(b.tmin, T0 - NS);
	ck_assert_int_eq(b.tmax, T0 + 2 * NS);
	ck_assert_int_eq(b.entries, 5);
	ck_assert_int_eq(b.samples, INT64_MAX); /* saturates */
	ck_assert_int_eq(b.smin, 3);
	ck_assert_int_eq(b.smax, 8);
	ck_assert_int_eq(cp_block_series(b.series, b.series_len, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], 3);
	ck_assert_int_eq(ids[1], 8);
	/* each series' end: its profiles' latest end (a profile without a duration ends at its time) */
	ck_assert_int_eq(cp_block_ends(b.ends, b.ends_len, b.tmin, b.tmax, ends, 2), 0);
	ck_assert_int_eq(ends[0], T0 + 11 * NS);
	ck_assert_int_eq(ends[1], T0 + 2 * NS);
	/* without ends (a store of schema 2): the block's last time */
	ck_assert_int_eq(cp_block_ends(NULL, 0, b.tmin, b.tmax, ends, 2), 0);
	ck_assert_int_eq(ends[0], T0 + 2 * NS);
	sn.ids = ids;
	ck_assert_int_eq(cp_block_decode(&rd, b.data, b.data_len, b.rawlen, b.tmin, want, n, see, &sn), 0);
	ck_assert_uint_eq(sn.n, 5);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(cp_block_entry_cmp(&sn.e[i], &e[i]), 0);
		ck_assert_int_eq(sn.e[i].value, e[i].value);
	}
	want[0] = 0;
	sn.n = 0;
	ck_assert_int_eq(cp_block_decode(&rd, b.data, b.data_len, b.rawlen, b.tmin, want, n, see, &sn), 0);
	ck_assert_uint_eq(sn.n, 2);
	ck_assert_int_eq(sn.e[0].series, 8);
	/* a cut block is corrupt */
	cp_error_clear();
	ck_assert_int_eq(cp_block_decode(&rd, b.data, b.data_len - 1, b.rawlen, b.tmin, want, n, see, &sn), -EBADMSG);
	ck_assert_contains(cp_errmsg(EBADMSG), "corrupt");
	free(ids);
	cp_block_release(&b);
	cp_block_reader_release(&rd);
}
END_TEST

static int sum_values(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t labels, int64_t value)
{
	uint64_t *got = ctx;

	(void)t;
	(void)stack;
	(void)labels;
	got[k] += (uint64_t)value;
	return 0;
}

/* raw compressed as a block's data (data, data_len and rawlen of b only) */
static int compress_block(const unsigned char *raw, size_t n, struct cp_block *b)
{
	uLongf zlen = compressBound(n);

	memset(b, 0, sizeof(*b));
	if (!(b->data = malloc(zlen)) || compress(b->data, &zlen, raw, n) != Z_OK)
		return -1;
	b->data_len = zlen;
	b->rawlen = n;
	return 0;
}

/* Sibling series (a profile's sample types: samples and cpu) with the same times, stacks and label
 * sets store those once: the block is much smaller than with different keys, and decodes the same,
 * also when only the sibling is wanted.  A block of format 1 (no mark, no shared flags: the first
 * schema 3 stores') still reads, and an unknown format is corrupt. */
START_TEST(test_block_shared_columns)
{
	enum { N = 400 };
	struct cp_block_entry *e = calloc(2 * N, sizeof(*e)), *f = calloc(2 * N, sizeof(*f));
	struct cp_block same, diff, old;
	struct cp_block_reader rd = { 0 };
	unsigned char want[2] = { 1, 1 }, *raw, *v1;
	uint64_t got[2], sum[2] = { 0 };
	uLongf zlen;
	size_t p;

	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(f);
	for (size_t k = 0; k < N; k++) {
		int64_t t = T0 + (int64_t)(k / 7) * NS;
		uint32_t stack = (uint32_t)(k % 7 * 13 + 1 + (k * 2654435761u) % 5), lab = (uint32_t)(k % 3);

		e[k] = (struct cp_block_entry){ 1, t, stack, lab, (int64_t)(k % 4 + 1), t };
		e[N + k] = (struct cp_block_entry){ 2, t, stack, lab, (int64_t)(k % 4 + 1) * 10000000, t };
		/* f: series 2 on other stacks, nothing to share */
		f[k] = e[k];
		f[N + k] = (struct cp_block_entry){ 2, t, stack + 1000, lab, (int64_t)(k % 4 + 1) * 10000000, t };
		sum[0] += (uint64_t)e[k].value;
		sum[1] += (uint64_t)e[N + k].value;
	}
	ck_assert_int_eq(cp_block_encode(e, 2 * N, &same), 0);
	ck_assert_int_eq(cp_block_encode(f, 2 * N, &diff), 0);
	ck_assert_uint_lt(same.rawlen, diff.rawlen * 7 / 10); /* the keys of 400 entries are 3/4 of them */
	ck_assert_uint_lt(same.data_len, diff.data_len);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(cp_block_decode(&rd, same.data, same.data_len, same.rawlen, same.tmin, want, 2, sum_values,
					 got), 0);
	ck_assert_uint_eq(got[0], sum[0]);
	ck_assert_uint_eq(got[1], sum[1]);
	memset(got, 0, sizeof(got));
	want[0] = 0;
	ck_assert_int_eq(cp_block_decode(&rd, same.data, same.data_len, same.rawlen, same.tmin, want, 2, sum_values,
					 got), 0);
	ck_assert_uint_eq(got[0], 0);
	ck_assert_uint_eq(got[1], sum[1]);
	want[0] = 1;

	/* diff's raw bytes, made format 1: no mark, no shared flags (both are 0: not shared) */
	raw = malloc(diff.rawlen);
	v1 = malloc(diff.rawlen);
	ck_assert_ptr_nonnull(raw);
	ck_assert_ptr_nonnull(v1);
	zlen = diff.rawlen;
	ck_assert_int_eq(uncompress(raw, &zlen, diff.data, diff.data_len), Z_OK);
	ck_assert_uint_eq(zlen, diff.rawlen);
	ck_assert_uint_eq(raw[0], 0); /* the mark */
	ck_assert_uint_eq(raw[1], CP_BLOCK_FORMAT);
	/* series 1: count 400 (2 varint bytes), gcd 1, shared 0, 4 columns of N varints; series 2 the same */
	p = 2;
	{
		size_t o = 0;

		for (int sidx = 0; sidx < 2; sidx++) {
			size_t start = p, c;

			ck_assert_uint_eq((raw[p] & 0x7f) | raw[p + 1] << 7, N); /* count: 2 varint bytes */
			p += 2;
			while (raw[p] & 0x80) /* gcd */
				p++;
			p++;
			memcpy(v1 + o, raw + start, p - start);
			o += p - start;
			ck_assert_uint_eq(raw[p], 0); /* shared: no */
			p++;
			start = p;
			for (c = 0; c < 4 * (size_t)N; c++) {
				while (raw[p] & 0x80)
					p++;
				p++;
			}
			memcpy(v1 + o, raw + start, p - start);
			o += p - start;
		}
		ck_assert_uint_eq(p, diff.rawlen);
		ck_assert_int_eq(compress_block(v1, o, &old), 0);
	}
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(cp_block_decode(&rd, old.data, old.data_len, old.rawlen, diff.tmin, want, 2, sum_values, got),
			 0);
	ck_assert_uint_eq(got[0], sum[0]);
	ck_assert_uint_eq(got[1], sum[1]);
	free(old.data);
	/* a mark of an unknown format */
	raw[1] = CP_BLOCK_FORMAT + 1;
	ck_assert_int_eq(compress_block(raw, diff.rawlen, &old), 0);
	cp_error_clear();
	ck_assert_int_eq(cp_block_decode(&rd, old.data, old.data_len, old.rawlen, diff.tmin, want, 2, sum_values, got),
			 -EBADMSG);
	ck_assert_contains(cp_errmsg(EBADMSG), "format");
	free(old.data);
	free(raw);
	free(v1);
	cp_block_release(&same);
	cp_block_release(&diff);
	cp_block_reader_release(&rd);
	free(e);
	free(f);
}
END_TEST

/* Garbage over each page header of the index and of the partition in
 * turn: opening or selecting fails with a message, or the select gives the
 * whole answer; never a short answer, never a crash. */
static void corrupt_each_page(const char *file, int64_t want)
{
	char path[PATH_MAX + 32];
	unsigned char *orig, junk[16];
	struct stat sb;
	off_t pg, psz;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ck_assert_int_eq(stat(path, &sb), 0);
	orig = malloc((size_t)sb.st_size);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(orig, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
	fclose(f);
	/* the file's page size: the header's 2 bytes at 16, big-endian (1: 65536) */
	ck_assert_int_ge(sb.st_size, 100);
	psz = orig[16] << 8 | orig[17];
	psz = psz == 1 ? 65536 : psz;
	ck_assert_msg(psz >= 512 && sb.st_size >= 3 * psz, "%s: %lld bytes of %lld-byte pages", file,
		      (long long)sb.st_size, (long long)psz);
	memset(junk, 0xa5, sizeof(junk));
	for (pg = psz; pg < sb.st_size; pg += psz) {
		struct cp_store *s;
		struct cp_store_result *res;
		size_t n;
		int r;

		f = fopen(path, "r+b");
		ck_assert_ptr_nonnull(f);
		fseek(f, pg, SEEK_SET);
		fwrite(junk, 1, sizeof(junk), f);
		fclose(f);

		cp_error_clear();
		s = cp_store_open(dir, CP_STORE_READ);
		if (s) {
			r = try_select(s, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n);
			if (r) {
				ck_assert_msg(strlen(cp_errmsg(r)) > 0, "no message");
				ck_assert_ptr_null(res);
			} else {
				ck_assert_msg(cp_profile_total(res[0].profile, 0) == want,
					      "%s page %lld damaged: select gave %" PRId64 " of %" PRId64, file,
					      (long long)(pg / psz + 1), cp_profile_total(res[0].profile, 0), want);
				cp_store_results_free(res, n);
			}
			cp_store_close(s);
		} else {
			ck_assert_int_ne(errno, 0);
			ck_assert(strlen(cp_errmsg(errno)) > 0);
		}
		f = fopen(path, "wb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(orig, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
		fclose(f);
	}
	free(orig);
}

START_TEST(test_corrupt_pages)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	char part[PATH_MAX + 32], rel[64];
	int i;

	for (i = 0; i < 300; i++) {
		char fn[64];

		snprintf(fn, sizeof(fn), "main;a_rather_long_function_name_%d;leaf_%d", i, i);
		add(p, fn, 0, 1);
	}
	/* enough blocks for a partition of several pages */
	for (i = 0; i < 100; i++)
		append_at(s, p, T0 + i * NS, i % 2 ? "comm=a" : "comm=b");
	cp_store_close(s);
	part_path(T0, part, sizeof(part));
	snprintf(rel, sizeof(rel), "days/%s", strrchr(part, '/') + 1);
	corrupt_each_page("store.db", 100 * 306);
	corrupt_each_page(rel, 100 * 306);
	/* and all is well again */
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 100 * 306);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* A checkpoint killed midway (kill -9, a crash) leaves the partition file
 * shorter than the page count of its header, which it wrote first, and the
 * write-ahead log whole: SQLite reads the missing pages from the log, so the
 * store is whole and reads whole.  Without the log it is corrupt. */
START_TEST(test_short_file_pages_in_wal)
{
	struct cp_store *w = open_store(CP_STORE_WRITE), *r;
	struct cp_profile *p = std_profile(1);
	char orig[PATH_MAX], path[PATH_MAX + 32], cmd[4 * PATH_MAX], wal[PATH_MAX + 40];
	unsigned char hdr[4];
	sqlite3 *db;
	sqlite3_stmt *st;
	struct stat sb;
	int64_t pages;
	FILE *f;
	int i;

	for (i = 0; i < 200; i++) {
		char fn[32];

		snprintf(fn, sizeof(fn), "main;f%d", i);
		add(p, fn, 0, 1);
	}
	append_at(w, p, T0, "comm=a");
	cp_store_close(w); /* the partition checkpointed: a file of a few pages, no log */
	w = open_store(CP_STORE_WRITE);
	for (i = 1; i <= 30; i++) /* in the log, past the file's end */
		append_at(w, p, T0 + i * NS, "comm=a");
	part_path(T0, path, sizeof(path));
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	pages = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_gt(pages * 1024, sb.st_size);
	/* the store as a crash leaves it, the log included */
	snprintf(orig, sizeof(orig), "%s", dir);
	ck_assert_int_lt(snprintf(dir, sizeof(dir), "%s-copy", orig), (int)sizeof(dir) - 1);
	ck_assert_int_lt(snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s' && rm -f '%s'/*-shm '%s'/days/*-shm", orig, dir,
				  dir, dir), (int)sizeof(cmd));
	ck_assert_int_eq(system(cmd), 0);
	cp_store_close(w);
	/* with page 1 of the checkpoint written: its count of pages */
	part_path(T0, path, sizeof(path));
	hdr[0] = (unsigned char)(pages >> 24);
	hdr[1] = (unsigned char)(pages >> 16);
	hdr[2] = (unsigned char)(pages >> 8);
	hdr[3] = (unsigned char)pages;
	ck_assert_ptr_nonnull(f = fopen(path, "r+b"));
	ck_assert_int_eq(fseek(f, 28, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(hdr, 1, 4, f), 4);
	fclose(f);
	/* and the same without its log (the copy's: the first reader's close checkpoints) */
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ck_assert_int_eq(access(wal, F_OK), 0);
	ck_assert_int_lt(snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s2' && rm '%s2'/days/*-wal", dir, dir, dir),
			 (int)sizeof(cmd));
	ck_assert_int_eq(system(cmd), 0);
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 31 * (6 + 200));
	cp_store_close(r);
	/* the log gone: the pages are missing */
	strncat(dir, "2", sizeof(dir) - strlen(dir) - 1);
	r = open_store(CP_STORE_READ);
	assert_select_corrupt(r, "truncated");
	cp_store_close(r);
	rm_rf(dir);
	dir[strlen(dir) - 1] = '\0';
	rm_rf(dir);
	snprintf(dir, sizeof(dir), "%s", orig);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_truncated_partition_half)
{
	truncate_and_select(-1);
}
END_TEST

START_TEST(test_truncated_partition_header)
{
	truncate_and_select(100);
}
END_TEST

START_TEST(test_truncated_partition_empty)
{
	truncate_and_select(0);
}
END_TEST

START_TEST(test_label_values_roundtrip)
{
	static const char *const odd = "he said \"hi\" \\ caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x94\xa5\ttab";
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv[] = { { "comm", odd }, { "empty", "" } };
	struct cp_store_append a = { .profile = p, .labels = kv, .nlabels = 2, .time_ns = T0 };
	struct cp_store_series *ser;
	struct cp_selector *sel;
	size_t n;

	ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ser[0].nlabels, 2);
	ck_assert_str_eq(ser[0].names[0], "comm");
	ck_assert_str_eq(ser[0].values[0], odd);
	ck_assert_str_eq(ser[0].names[1], "empty");
	ck_assert_str_eq(ser[0].values[1], "");
	cp_store_series_free(ser, n);

	sel = sel_of("{comm=\"he said \\\"hi\\\" \\\\ caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x94\xa5\\ttab\"}");
	ck_assert_int_eq(cp_store_series(s, sel, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	cp_store_series_free(ser, n);
	cp_selector_free(sel);
	sel = sel_of("{comm=~\".*caf\xc3\xa9 . .*\"}");
	ck_assert_int_eq(cp_store_series(s, sel, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	cp_store_series_free(ser, n);
	cp_selector_free(sel);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=~\"he said.*\"}", 0, INT64_MAX), 6);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_bad_label_value)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv[] = { { "comm", "bad \xff utf-8" } };
	struct cp_store_append a = { .profile = p, .labels = kv, .nlabels = 1, .time_ns = T0 };
	struct cp_store_series *ser;
	size_t n;
	int r;

	cp_error_clear();
	r = cp_store_append(s, &a, 1);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_contains(cp_errmsg(r), "comm");
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 0);
	cp_store_series_free(ser, n);
	/* the handle still works */
	kv[0].value = "good";
	ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_failed_batch_rolls_back)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1), *o = other_profile("other");
	struct cp_kv kv[] = { { "comm", "a" } };
	char longname[700];
	struct cp_store_append batch[] = {
		{ .profile = p, .labels = kv, .nlabels = 1, .time_ns = T0 },
		{ .profile = o, .name = longname, .labels = kv, .nlabels = 1, .time_ns = T0 },
	};
	struct cp_store_series *ser;
	struct cp_store_stats st;
	size_t n;
	int r;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	r = cp_store_append(s, batch, 2);
	ck_assert_int_eq(r, -ENAMETOOLONG);
	/* all or nothing */
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 0);
	cp_store_series_free(ser, n);
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_int_eq(st.stacks, 0);
	ck_assert_int_eq(st.samples, 0);
	/* the same series again, in a batch that works */
	ck_assert_int_eq(cp_store_append(s, batch, 1), 0);
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 2);
	cp_store_series_free(ser, n);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX), 6);
	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX), 6);
	cp_store_close(s);
	cp_profile_free(p);
	cp_profile_free(o);
}
END_TEST

static const struct cp_label *find_label(const struct cp_profile *p, uint32_t ls, const char *key)
{
	const struct cp_span *sp = &p->labelsets[ls];
	uint32_t i;

	for (i = 0; i < sp->len; i++)
		if (!strcmp(cp_profile_string(p, p->labels[sp->off + i].key), key))
			return &p->labels[sp->off + i];
	return NULL;
}

START_TEST(test_sample_labels)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = new_profile(10 * NS), *q;
	struct cp_label l[2];
	int64_t worker, io, seen_worker = 0, seen_io = 0, seen_none = 0;
	uint32_t i;

	l[0] = (struct cp_label){ str(p, "thread"), str(p, "worker"), 0, 0 };
	l[1] = (struct cp_label){ str(p, "bytes"), 0, 4096, str(p, "bytes") };
	worker = cp_profile_labelset(p, l, 2);
	l[0].str = str(p, "io \"thread\" \xc3\xa9");
	io = cp_profile_labelset(p, l, 1);
	ck_assert_int_gt(worker, 0);
	ck_assert_int_gt(io, 0);
	add(p, "main;work", (uint32_t)worker, 4);
	add(p, "main;work", (uint32_t)io, 2);
	add(p, "main;work", 0, 1);
	add(p, "main;read", (uint32_t)io, 3);
	append_at(s, p, T0, "comm=a");
	append_at(s, p, T0 + NS, "comm=b"); /* the same label sets in another series */
	cp_store_close(s);

	s = open_store(CP_STORE_READ);
	q = select1(s, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX);
	ck_assert_uint_eq(q->nsamples, 4);
	for (i = 0; i < q->nsamples; i++) {
		const struct cp_label *t = find_label(q, q->samples[i].labels, "thread");
		const struct cp_label *b = find_label(q, q->samples[i].labels, "bytes");
		int64_t v = cp_profile_values(q, i)[0];

		if (!t) {
			ck_assert_ptr_null(b);
			seen_none += v;
		} else if (!strcmp(cp_profile_string(q, t->str), "worker")) {
			ck_assert_ptr_nonnull(b);
			ck_assert_int_eq(b->str, 0);
			ck_assert_int_eq(b->num, 4096);
			ck_assert_str_eq(cp_profile_string(q, b->num_unit), "bytes");
			seen_worker += v;
		} else {
			ck_assert_str_eq(cp_profile_string(q, t->str), "io \"thread\" \xc3\xa9");
			ck_assert_ptr_null(b);
			seen_io += v;
		}
	}
	ck_assert_int_eq(seen_worker, 4);
	ck_assert_int_eq(seen_io, 5);
	ck_assert_int_eq(seen_none, 1);
	cp_profile_free(q);

	/* both series: label sets merge, values add */
	q = select1(s, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_uint_eq(q->nsamples, 4);
	ck_assert_int_eq(cp_profile_total(q, 0), 20);
	cp_profile_free(q);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* Appends that share one profile, each taking its samples (sel): each
 * series holds its own samples only, whole; a sample beyond the profile is
 * refused and nothing of the batch is stored. */
START_TEST(test_append_parts)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = new_profile(10 * NS), *q;
	struct cp_kv ka[] = { { "comm", "a" } }, kb[] = { { "comm", "b" } }, kc[] = { { "comm", "c" } };
	struct cp_label l = { str(p, "thread_id"), 0, 0, 0 };
	uint32_t ta, tb, rows_a[] = { 0, 2 }, rows_b[] = { 1, 3 }, bad[] = { 4 };
	char *f;

	l.str = str(p, "1");
	ta = (uint32_t)cp_profile_labelset(p, &l, 1);
	l.str = str(p, "2");
	tb = (uint32_t)cp_profile_labelset(p, &l, 1);
	add(p, "main;work;burn", ta, 3); /* rows 0, 2: a's */
	add(p, "main;work;burn", tb, 5); /* rows 1, 3: b's */
	add(p, "main;idle", ta, 2);
	add(p, "main;read", tb, 7);
	ck_assert_uint_eq(p->nsamples, 4);
	{
		struct cp_store_append parts[] = {
			{ .profile = p, .labels = ka, .nlabels = 1, .time_ns = T0, .sel = rows_a, .nsel = 2 },
			{ .profile = p, .labels = kb, .nlabels = 1, .time_ns = T0, .sel = rows_b, .nsel = 2 },
		};
		struct cp_store_append worse[] = {
			{ .profile = p, .labels = kc, .nlabels = 1, .time_ns = T0, .sel = rows_a, .nsel = 2 },
			{ .profile = p, .labels = kc, .nlabels = 1, .time_ns = T0, .sel = bad, .nsel = 1 },
		};

		cp_error_clear();
		ck_assert_int_eq(cp_store_append(s, parts, 2), 0);
		ck_assert_int_eq(cp_store_append(s, worse, 2), -EINVAL);
		ck_assert_ptr_nonnull(strstr(cp_errmsg(-EINVAL), "sample 4 of a profile of 4 samples"));
	}
	q = select1(s, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX);
	f = folded(q, 0);
	ck_assert_str_eq(f, "main;idle 2\nmain;work;burn 3\n");
	free(f);
	cp_profile_free(q);
	q = select1(s, "process_cpu:samples{comm=\"b\"}", 0, INT64_MAX);
	f = folded(q, 0);
	ck_assert_str_eq(f, "main;read 7\nmain;work;burn 5\n");
	free(f);
	cp_profile_free(q);
	q = NULL;
	{
		struct cp_store_result *res;
		size_t n;

		/* the refused batch stored nothing, its first part neither */
		ck_assert_int_eq(try_select(s, "process_cpu:samples{comm=\"c\"}", 0, INT64_MAX, NULL, &res, &n), -ENOENT);
		ck_assert_uint_eq(n, 0);
		free(res);
	}
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_many_partitions)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	int i;

	/* more days than the handle keeps open at once */
	for (i = 0; i < 12; i++)
		append_at(s, p, T0 + i * 86400 * NS, "comm=a");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 72);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", T0 + 86400 * NS, T0 + 3 * 86400 * NS + 1), 18);
	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 72);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* ---- the size limit ---- */

#define DAY (86400 * NS)
#define STEP (60 * NS) /* between two appends of one day */
#define PER 60            /* appends a day: 60 blocks of about 1 KiB */

/* Closes s and opens the store again (SQLite folds the WAL files in). */
static struct cp_store *reopen(struct cp_store *s)
{
	cp_store_close(s);
	return open_store(CP_STORE_WRITE);
}

/* A profile of n stacks main;mN;fN with counts drawn from seed: random
 * enough that its blocks do not compress to nothing. */
static struct cp_profile *big_profile(uint32_t seed, int n)
{
	struct cp_profile *p = new_profile(10 * NS);
	char frames[64];
	int i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		snprintf(frames, sizeof(frames), "main;m%d;f%d", i % 17, i);
		add(p, frames, 0, 1 + (seed >> 16) % 1000);
	}
	return p;
}

/* per appends a day for ndays days from T0 (day d, append i at
 * T0 + d * DAY + i * STEP); tot[d * per + i]: the samples of each. */
static void fill(struct cp_store *s, int ndays, int per, int64_t *tot)
{
	int d, i;

	for (d = 0; d < ndays; d++)
		for (i = 0; i < per; i++) {
			struct cp_profile *p = big_profile((uint32_t)(d * per + i + 1), 300);

			append_at(s, p, T0 + d * DAY + i * STEP, "comm=a");
			tot[d * per + i] = cp_profile_total(p, 0);
			cp_profile_free(p);
		}
}

static uint64_t store_size(struct cp_store *s)
{
	uint64_t n = 0;
	int r = cp_store_size(s, &n);

	ck_assert_msg(r == 0, "cp_store_size: %s", cp_errmsg(r));
	return n;
}

/* Column 0 of sql's first row in the SQLite file DIR/name. */
static int64_t sql_int(const char *name, const char *sql)
{
	char path[2 * PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A writer with a memory limit forgets its dictionary after an append and
 * writes equal entries anew: the rows repeat, every reader (and a writer
 * keeping all, that loads them) sees the same profiles, and the forgetting
 * writer's memory goes down; a select on it loads the dictionary whole. */
START_TEST(test_dict_forget)
{
	struct cp_store *w = open_store(CP_STORE_WRITE), *w2, *r;
	struct cp_profile *p = std_profile(1), *o = other_profile("other"), *o2 = other_profile("third"), *q;
	size_t whole;
	char *text;

	append_at(w, p, T0, "comm=a");
	append_at(w, o, T0 + NS, "comm=a");
	whole = cp_store_memory(w);
	cp_store_limit_memory(w, 1); /* forgets after each append from now on */
	append_at(w, o2, T0 + 2 * NS, "comm=a");
	ck_assert_uint_lt(cp_store_memory(w), whole);
	append_at(w, p, T0 + 3 * NS, "comm=a");
	ck_assert_int_eq(dict_count(T0, "burn"), 2);
	/* a writer that keeps all loads the repeated rows, id for id */
	w2 = open_store(CP_STORE_WRITE);
	append_at(w2, o2, T0 + 4 * NS, "comm=b");
	append_at(w, o, T0 + 5 * NS, "comm=b");
	append_at(w2, p, T0 + 6 * NS, "comm=b");
	r = open_store(CP_STORE_READ);
	q = select1(r, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_int_eq(cp_profile_total(q, 0), 38);
	/* equal entries as one: 8 functions, 5 stacks and the empty one */
	ck_assert_uint_eq(q->nfunctions, 8);
	ck_assert_uint_eq(q->nstacks, 6);
	text = folded(q, 0);
	ck_assert_str_eq(text, "main;idle 6\nmain;other;other_leaf 10\nmain;third;third_leaf 10\nmain;work 3\n"
			       "main;work;burn 9\n");
	free(text);
	cp_profile_free(q);
	ck_assert_int_eq(select_total(w, "process_cpu:samples{comm=\"b\"}", 0, INT64_MAX), 16);
	ck_assert_int_eq(select_total(w2, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX), 22);
	/* the writer selected (all of the dictionary): it appends still, and forgets again */
	append_at(w, o, T0 + 7 * NS, "comm=a");
	ck_assert_uint_lt(cp_store_memory(w), whole);
	/* a new writer whose limit the rows there are would pass does not load them */
	cp_store_close(w2);
	w2 = open_store(CP_STORE_WRITE);
	cp_store_limit_memory(w2, 64 * 40);
	append_at(w2, p, T0 + 8 * NS, "comm=b");
	ck_assert_int_eq(dict_count(T0, "burn"), 3);
	ck_assert_int_eq(select_total(r, "process_cpu:samples{comm=\"b\"}", 0, INT64_MAX), 22);
	ck_assert_int_eq(select_total(r, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX), 27);
	cp_store_close(r);
	cp_store_close(w2);
	cp_store_close(w);
	cp_profile_free(p);
	cp_profile_free(o);
	cp_profile_free(o2);
}
END_TEST

static int64_t limit(struct cp_store *s, uint64_t max)
{
	int64_t r;

	cp_error_clear();
	r = cp_store_limit(s, max);
	ck_assert_msg(r >= 0, "cp_store_limit(%" PRIu64 "): %s", max, cp_errmsg((int)r));
	return r;
}

/* The bytes of day d's files (.db, -wal, -shm). */
static uint64_t day_bytes(int d)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char path[PATH_MAX + 32], f[PATH_MAX + 64];
	struct stat sb;
	uint64_t n = 0;

	part_path(T0 + d * DAY, path, sizeof(path));
	for (int k = 0; k < 3; k++) {
		snprintf(f, sizeof(f), "%s%s", path, sfx[k]);
		if (!stat(f, &sb))
			n += (uint64_t)sb.st_size;
	}
	return n;
}

static int64_t day_total(struct cp_store *s, int d)
{
	return select_total(s, "process_cpu:samples", T0 - 11 * 3600 * NS + d * DAY,
			    T0 - 11 * 3600 * NS + (d + 1) * DAY);
}

/* The first of the appends [0, n) still there, asserting that every one
 * before it is gone and every one from it on is whole. */
static int first_kept(struct cp_store *s, const int64_t *tot, int per, int n)
{
	int i, k = -1;

	for (i = 0; i < n; i++) {
		int64_t t = select_total(s, "process_cpu:samples", T0 + (i / per) * DAY + (i % per) * STEP,
					 T0 + (i / per) * DAY + (i % per) * STEP + 1);

		if (k < 0 && t)
			k = i;
		if (k < 0)
			ck_assert_int_eq(t, 0);
		else
			ck_assert_msg(t == tot[i], "append %d: %" PRId64 " samples, not %" PRId64 " (the first kept: %d)", i,
				      t, tot[i], k);
	}
	return k < 0 ? n : k;
}

START_TEST(test_limit_days)
{
	struct cp_store *s = open_store(CP_STORE_WRITE), *r;
	int64_t tot[4 * PER], want[4] = { 0 }, freed;
	uint64_t size0, size, bound;
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, T0, T0 + DAY, NULL, NULL, false };
	struct cp_store_result *res;
	struct cp_store_stats st;
	char path[PATH_MAX + 32];
	int64_t *steps = NULL;
	struct cp_buckets bk;
	char *type = NULL;
	size_t n;
	int d, k;

	fill(s, 4, PER, tot);
	for (d = 0; d < 4; d++) {
		for (k = 0; k < PER; k++)
			want[d] += tot[d * PER + k];
		ck_assert_int_eq(day_total(s, d), want[d]);
	}
	s = reopen(s); /* without WAL files, so that the figures are the data's */
	size0 = store_size(s);
	ck_assert_uint_gt(size0, 300 * 1024);

	/* over the size: nothing to do */
	ck_assert_int_eq(limit(s, size0), 0);
	ck_assert_int_eq(limit(s, size0 + 10 * 1024 * 1024), 0);
	for (d = 0; d < 4; d++) {
		part_path(T0 + d * DAY, path, sizeof(path));
		ck_assert_int_eq(access(path, F_OK), 0);
		ck_assert_int_eq(day_total(s, d), want[d]);
	}

	/* the two oldest days' size: they go whole, the newest stay whole */
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), want[0] + want[1] + want[2] + want[3]);
	size0 = store_size(s); /* with the reader's -shm files */
	bound = size0 - day_bytes(0) - day_bytes(1);
	freed = limit(s, bound);
	size = store_size(s);
	ck_assert_msg(size <= bound, "%" PRIu64 " bytes left, over %" PRIu64, size, bound);
	ck_assert_int_eq(freed, (int64_t)(size0 - size));
	k = first_kept(s, tot, PER, 4 * PER);
	ck_assert_msg(k == 2 * PER, "the first append kept is %d, not %d", k, 2 * PER);
	for (d = 0; d < 4; d++) {
		part_path(T0 + d * DAY, path, sizeof(path));
		ck_assert_int_eq(access(path, F_OK) == 0, d >= k / PER);
		ck_assert_int_eq(day_total(s, d), d >= k / PER ? want[d] : 0);
		/* and a reader that had the store open sees the same */
		ck_assert_int_eq(day_total(r, d), d >= k / PER ? want[d] : 0);
	}
	/* the oldest day's range: an empty profile, zero totals over time */
	ck_assert_int_eq(try_select(s, "process_cpu:samples", T0, T0 + DAY, NULL, &res, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(res[0].profile->nsamples, 0);
	cp_store_results_free(res, n);
	ck_assert_int_eq(cp_store_over_time(s, &q, DAY, &steps, &bk, &type), 0);
	ck_assert_uint_eq(bk.n, 2); /* T0 is not on the grid of days: two buckets */
	ck_assert_int_eq(steps[0], 0);
	ck_assert_int_eq(steps[1], 0);
	free(steps);
	free(type);
	ck_assert_int_eq(sql_int("store.db", "SELECT count(*) FROM partitions"), 4 - k / PER);
	/* under the bound already */
	ck_assert_int_eq(limit(s, bound), 0);

	/* half a day more: the oldest day left loses its oldest blocks only */
	size0 = store_size(s);
	bound = size0 - day_bytes(2) / 2;
	freed = limit(s, bound);
	size = store_size(s);
	ck_assert_msg(size <= bound, "%" PRIu64 " bytes left, over %" PRIu64, size, bound);
	ck_assert_int_eq(freed, (int64_t)(size0 - size));
	k = first_kept(s, tot, PER, 4 * PER); /* and the rest is whole */
	ck_assert_msg(k > 2 * PER && k < 3 * PER, "the first append kept is %d, not within day 2", k);
	ck_assert_int_eq(first_kept(r, tot, PER, 4 * PER), k);
	ck_assert_int_eq(day_total(s, 3), want[3]);
	ck_assert_int_eq(sql_int("store.db", "SELECT count(*) FROM partitions"), 2);
	ck_assert_int_eq(sql_int("store.db", "SELECT min(t_min) FROM partitions"), T0 + 2 * DAY + (k - 2 * PER) * STEP);
	ck_assert_int_eq(limit(s, bound), 0);
	/* stats count the same files (nothing else is in the directory) */
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_uint_eq(store_size(s), (uint64_t)st.bytes);
	cp_store_close(r);
	cp_store_close(s);

	/* reopened, it reads the same */
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(first_kept(s, tot, PER, 4 * PER), k);
	cp_store_close(s);
	cp_selector_free(sel);
}
END_TEST

/* Trims the one day of a store to bound (fill()ed with per appends): the
 * oldest appends go, the newest stay, the size ends under the bound. */
static void check_trim(struct cp_store *s, const int64_t *tot, int per, uint64_t bound)
{
	uint64_t size0 = store_size(s), size;
	int64_t freed, total = 0;
	int k, i;

	freed = limit(s, bound);
	size = store_size(s);
	ck_assert_msg(size <= bound, "%" PRIu64 " bytes left, over %" PRIu64, size, bound);
	ck_assert_int_eq(freed, (int64_t)(size0 - size));
	k = first_kept(s, tot, per, per);
	ck_assert_msg(k > 0 && k < per, "the first append kept is %d of %d", k, per);
	for (i = k; i < per; i++)
		total += tot[i];
	ck_assert_int_eq(day_total(s, 0), total);
	/* the partition row starts at the first block left */
	ck_assert_int_eq(sql_int("store.db", "SELECT t_min FROM partitions"), T0 + k * STEP);
	/* the space went back to the file system, and the file can give back more */
	ck_assert_int_eq(sql_int("days/20261118.db", "PRAGMA freelist_count"), 0);
	ck_assert_int_eq(sql_int("days/20261118.db", "PRAGMA auto_vacuum"), 2);
}

START_TEST(test_limit_trim)
{
	struct cp_store *s = open_store(CP_STORE_WRITE), *r;
	int64_t tot[151];
	uint64_t size0, bound;
	char path[PATH_MAX + 32];
	int k, i;

	part_path(T0, path, sizeof(path));
	ck_assert_str_eq(path + strlen(dir), "/days/20261118.db");
	fill(s, 1, 150, tot);
	/* a new partition can shrink without a VACUUM */
	ck_assert_int_eq(sql_int("days/20261118.db", "PRAGMA auto_vacuum"), 2);
	s = reopen(s);
	r = open_store(CP_STORE_READ);
	ck_assert_int_gt(day_total(r, 0), 0);
	size0 = store_size(s);
	ck_assert_uint_gt(size0, 200 * 1024);
	bound = size0 - 60 * 1024;
	check_trim(s, tot, 150, bound);
	k = first_kept(r, tot, 150, 150); /* the reader that was open sees it too */
	cp_store_close(r);
	cp_store_close(s);

	/* reopened: the same, and appends go on */
	s = open_store(CP_STORE_WRITE);
	ck_assert_int_eq(first_kept(s, tot, 150, 150), k);
	ck_assert_int_eq(limit(s, bound), 0);
	{
		struct cp_profile *p = std_profile(1);

		append_at(s, p, T0 + 150 * STEP, "comm=a");
		ck_assert_int_eq(select_total(s, "process_cpu:samples", T0 + 150 * STEP, T0 + 151 * STEP), 6);
		tot[150] = 6;
		cp_profile_free(p);
	}
	/* trims again, deleting the next oldest */
	for (i = 0; i < k; i++)
		tot[i] = 0;
	s = reopen(s);
	check_trim(s, tot, 151, store_size(s) - 30 * 1024);
	ck_assert_int_gt(first_kept(s, tot, 151, 151), k);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", T0 + 150 * STEP, T0 + 151 * STEP), 6);
	cp_store_close(s);
}
END_TEST

/* A partition made before auto_vacuum (NONE): one VACUUM shrinks it and
 * turns auto_vacuum on for it. */
START_TEST(test_limit_trim_legacy)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	int64_t tot[100];
	uint64_t size;

	fill(s, 1, 100, tot);
	cp_store_close(s);
	{
		char path[2 * PATH_MAX];
		sqlite3 *db = NULL;

		snprintf(path, sizeof(path), "%s/days/20261118.db", dir);
		ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(db, "PRAGMA auto_vacuum=NONE; VACUUM", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(db);
	}
	ck_assert_int_eq(sql_int("days/20261118.db", "PRAGMA auto_vacuum"), 0);
	s = open_store(CP_STORE_WRITE);
	size = store_size(s);
	check_trim(s, tot, 100, size - 40 * 1024);
	cp_store_close(s);
}
END_TEST

/* The dictionary alone over the bound: every day but the newest goes, and
 * the newest's blocks; the store stays usable. */
START_TEST(test_limit_dictionary)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	int64_t tot[3 * 5], freed;
	uint64_t size0, size;
	char path[PATH_MAX + 32];
	struct stat sb;

	fill(s, 3, 5, tot);
	size0 = store_size(s);
	freed = limit(s, 1024);
	size = store_size(s);
	ck_assert_int_eq(freed, (int64_t)(size0 - size));
	ck_assert_uint_gt(size, 1024); /* the documented exception */
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 0);
	part_path(T0, path, sizeof(path));
	ck_assert_int_ne(access(path, F_OK), 0);
	part_path(T0 + 2 * DAY, path, sizeof(path)); /* the newest day's file stays, empty */
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(sql_int("store.db", "SELECT count(*) FROM partitions"), 1);
	/* what is left: the index, and the empty day of a few pages (its dictionary and series) */
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_le(sb.st_size, 16384);
	ck_assert_int_eq(sql_int("days/20261120.db", "SELECT count(*) FROM blocks"), 0);
	/* nothing more to free */
	ck_assert_int_eq(limit(s, 1024), 0);
	append_at(s, p, T0 + 2 * DAY + 3600 * NS, "comm=a");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* Files that no partition row lists (a crash between a deletion's commit
 * and its unlink) go before any data. */
START_TEST(test_limit_orphans)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	int64_t tot[2 * 20];
	char path[PATH_MAX + 32];
	uint64_t size;
	void *junk = calloc(1, 200 * 1024);
	FILE *f;

	fill(s, 2, 20, tot);
	s = reopen(s);
	snprintf(path, sizeof(path), "%s/days/20200101.db", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_uint_eq(fwrite(junk, 1, 200 * 1024, f), 200 * 1024);
	fclose(f);
	snprintf(path, sizeof(path), "%s/days/20200101.db-wal", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fclose(f);
	size = store_size(s);
	ck_assert_int_eq(limit(s, size - 100 * 1024), 200 * 1024);
	ck_assert(!exists("days/20200101.db"));
	ck_assert(!exists("days/20200101.db-wal"));
	ck_assert_int_eq(first_kept(s, tot, 20, 40), 0);
	cp_store_close(s);
	free(junk);
}
END_TEST

/* Readers selecting while the limit deletes days and trims the last one,
 * vacuums and checkpoints it: every select succeeds. */
struct reader_arg {
	int stop;  /* set (atomically) when the reader is to stop */
	int fails, selects;
	char msg[256];
};

static void *reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct cp_store *r = cp_store_open(dir, CP_STORE_READ);

	if (!r) {
		ra->fails++;
		snprintf(ra->msg, sizeof(ra->msg), "%s", cp_errmsg(errno));
		return NULL;
	}
	while (!__atomic_load_n(&ra->stop, __ATOMIC_ACQUIRE)) {
		struct cp_store_result *res;
		size_t n;
		int e = try_select(r, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n);

		ra->selects++;
		if (e) {
			if (!ra->fails++)
				snprintf(ra->msg, sizeof(ra->msg), "%s", cp_errmsg(e));
		} else {
			cp_store_results_free(res, n);
		}
	}
	cp_store_close(r);
	return NULL;
}

START_TEST(test_limit_concurrent_reader)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct reader_arg ra = { 0, 0, 0, "" };
	int64_t tot[3 * 80];
	uint64_t bound;
	pthread_t th;
	int i;

	fill(s, 3, 80, tot);
	s = reopen(s);
	bound = store_size(s);
	ck_assert_int_eq(pthread_create(&th, NULL, reader, &ra), 0);
	for (i = 0; i < 7; i++) { /* two days go, then blocks of the third */
		bound -= 25 * 1024;
		limit(s, bound);
	}
	__atomic_store_n(&ra.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ck_assert_msg(ra.fails == 0, "%d of %d selects failed, the first: %s", ra.fails, ra.selects, ra.msg);
	ck_assert_int_gt(ra.selects, 0);
	/* a reader may have kept a WAL for a while: with it gone, the bound holds */
	limit(s, bound);
	ck_assert_uint_le(store_size(s), bound);
	i = first_kept(s, tot, 80, 240);
	ck_assert_int_gt(i, 160);
	ck_assert_int_lt(i, 240);
	cp_store_close(s);
}
END_TEST

START_TEST(test_limit_read_only_remote)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	uint64_t size;
	int64_t r;

	append_at(s, p, T0, "comm=a");
	cp_store_close(s);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(cp_store_size(s, &size), 0);
	ck_assert_uint_gt(size, 0);
	cp_error_clear();
	r = cp_store_limit(s, 1);
	ck_assert_int_eq(r, -EPERM);
	ck_assert_contains(cp_errmsg((int)r), "read-only");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6);
	cp_store_close(s);

	/* a server applies its own limit (nothing is sent) */
	s = cp_store_open_remote("http://127.0.0.1:9", NULL, NULL, 0);
	ck_assert_ptr_nonnull(s);
	cp_error_clear();
	r = cp_store_limit(s, 1);
	ck_assert_int_eq(r, -EOPNOTSUPP);
	ck_assert_contains(cp_errmsg((int)r), "--max-store-size");
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* ---- batches over several days, concurrent first writes, int64 limits ---- */

/* Makes every insert into the partition of time t fail, as a full disk or an I/O error would
 * (a trigger: chmod does not stop root). */
static void break_day(int64_t t, bool broken)
{
	char path[2 * PATH_MAX];
	sqlite3 *db;

	part_path(t, path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_int_eq(sqlite3_exec(db, broken ? "CREATE TRIGGER broken BEFORE INSERT ON blocks"
						   " BEGIN SELECT RAISE(ABORT, 'disk I/O error (test)'); END;"
						 : "DROP TRIGGER broken", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static int64_t day_sum(struct cp_store *s, int64_t t)
{
	return select_total(s, "process_cpu:samples", t - t % DAY_NS, t - t % DAY_NS + DAY_NS);
}

START_TEST(test_batch_days_all_or_nothing)
{
	struct cp_store *s = open_store(CP_STORE_WRITE), *r;
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv[] = { { "comm", "a" } };
	struct cp_store_append batch[12];
	int i, e;

	/* days 0 and 2 have data; day 2's file then fails every write */
	append_at(s, p, T0, "comm=a");
	append_at(s, p, T0 + 2 * DAY_NS, "comm=a");
	break_day(T0 + 2 * DAY_NS, true);
	for (i = 0; i < 3; i++)
		batch[i] = (struct cp_store_append){ .profile = p, .labels = kv,
		                                     .nlabels = 1, .time_ns = T0 + i * DAY_NS };
	cp_error_clear();
	e = cp_store_append(s, batch, 3);
	ck_assert_int_ne(e, 0);
	ck_assert_contains(cp_errmsg(e), "disk I/O error (test)");
	/* nothing of the batch: not days 0 and 1, written before day 2 failed */
	ck_assert_int_eq(day_sum(s, T0), 6);
	ck_assert_int_eq(day_sum(s, T0 + DAY_NS), 0);
	ck_assert_int_eq(day_sum(s, T0 + 2 * DAY_NS), 6);
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 12);
	/* a batch of 12 days (more than the handles kept open) whose last fails: nothing either */
	for (i = 0; i < 12; i++)
		batch[i] = (struct cp_store_append){ .profile = p, .labels = kv,
		                                     .nlabels = 1, .time_ns = T0 - 9 * DAY_NS + i * DAY_NS };
	ck_assert_int_ne(cp_store_append(s, batch, 12), 0);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 12);
	/* each alone, as the server retries: the good days once each */
	for (i = 0; i < 12; i++)
		ck_assert_int_eq(cp_store_append(s, &batch[i], 1) == 0, i != 11);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 12 + 11 * 6);
	/* the disk is back: the whole batch goes in, every day of it */
	break_day(T0 + 2 * DAY_NS, false);
	ck_assert_int_eq(cp_store_append(s, batch, 12), 0);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 12 + 11 * 6 + 12 * 6);
	ck_assert_int_eq(day_sum(r, T0 - 9 * DAY_NS), 12);
	cp_store_close(r);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* A day whose commit fails after an earlier day's took (a disk filling up in between; here a file
 * size limit that only the big day's WAL passes): the earlier day's block is deleted again, and the
 * batch is stored nowhere. */
START_TEST(test_batch_late_commit_fails)
{
	struct cp_store *s = open_store(CP_STORE_WRITE), *r;
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv[] = { { "comm", "a" } };
	size_t n = 80000, i;
	struct cp_store_append *batch = calloc(n + 1, sizeof(*batch));
	struct rlimit rl;
	uint64_t x = 88172645463325252ULL;
	int64_t day1 = T0 + DAY_NS - (T0 + DAY_NS) % DAY_NS; /* the start of the UTC day after T0's */
	int e;

	ck_assert_ptr_nonnull(batch);
	append_at(s, p, T0, "comm=a");
	append_at(s, p, T0 + DAY_NS, "comm=a");
	/* day 0: one profile; day 1: n at random times, a block that does not compress to under the
	 * limit (index.db's WAL, some 120 KiB, and day 0's stay under it) */
	batch[0] = (struct cp_store_append){ .profile = p, .labels = kv, .nlabels = 1, .time_ns = T0 };
	for (i = 1; i <= n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		batch[i] = (struct cp_store_append){ .profile = p, .labels = kv,
		                                     .nlabels = 1, .time_ns = day1 + (int64_t)(x % (uint64_t)DAY_NS) };
	}
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = 256 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cp_error_clear();
	e = cp_store_append(s, batch, n + 1);
	rl.rlim_cur = RLIM_INFINITY;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_ne(e, 0);
	ck_assert_msg(!strstr(cp_errmsg(e), "part of the batch"), "%s", cp_errmsg(e));
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(day_sum(r, T0), 6);
	ck_assert_int_eq(day_sum(r, T0 + DAY_NS), 6);
	cp_store_close(r);
	/* without the limit it goes in */
	ck_assert_int_eq(cp_store_append(s, batch, n + 1), 0);
	ck_assert_int_eq(day_sum(s, T0), 12);
	ck_assert_int_eq(day_sum(s, T0 + DAY_NS), 6 + 6 * (int64_t)n);
	cp_store_close(s);
	cp_profile_free(p);
	free(batch);
}
END_TEST

/* Writers (each its own handle, as `cprof record` and `cprof serve` on one store) make new days
 * while readers query them: no query may fail (it once saw a day listed before its table existed:
 * "no such table: blocks"). */
#define RACE_DAYS 24
#define RACE_WRITERS 3

struct race {
	int writers_left;
	int err;
	char msg[256];
	pthread_mutex_t lock;
};

static void race_fail(struct race *rc, int err)
{
	pthread_mutex_lock(&rc->lock);
	if (!rc->err) {
		rc->err = err;
		snprintf(rc->msg, sizeof(rc->msg), "%s", cp_errmsg(err));
	}
	pthread_mutex_unlock(&rc->lock);
}

static void *race_writer(void *arg)
{
	struct race *rc = arg;
	struct cp_store *w = cp_store_open(dir, CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv = { "comm", "a" };
	int d, e;

	if (!w)
		race_fail(rc, -errno);
	for (d = 0; w && d < RACE_DAYS; d++) {
		struct cp_store_append a = { .profile = p, .labels = &kv, .nlabels = 1, .time_ns = T0 + d * DAY_NS };

		if ((e = cp_store_append(w, &a, 1)))
			race_fail(rc, e);
	}
	cp_store_close(w);
	cp_profile_free(p);
	__atomic_sub_fetch(&rc->writers_left, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	struct cp_store *r = NULL;
	struct cp_selector *sel = sel_of("process_cpu:samples");
	struct cp_store_query q = { sel, T0 - DAY_NS, T0 + RACE_DAYS * DAY_NS, NULL, NULL, false };
	int64_t last = 0;
	bool done;

	do {
		struct cp_store_result *res = NULL;
		size_t n = 0;
		int e;

		done = !__atomic_load_n(&rc->writers_left, __ATOMIC_ACQUIRE);
		if (!r && !(r = cp_store_open(dir, CP_STORE_READ)))
			continue; /* not made yet */
		e = cp_store_select(r, &q, &res, &n);
		if (e && e != -ENOENT) /* ENOENT: no series yet */
			race_fail(rc, e);
		if (!e) {
			int64_t t = cp_profile_total(res[0].profile, 0);

			if (t < last)
				race_fail(rc, cp_error(EIO, "a query went back in time: %" PRId64 " after %" PRId64, t, last));
			last = t;
		}
		cp_store_results_free(res, n);
	} while (!done);
	cp_store_close(r);
	cp_selector_free(sel);
	return NULL;
}

START_TEST(test_new_day_race)
{
	struct race rc = { RACE_WRITERS, 0, "", PTHREAD_MUTEX_INITIALIZER };
	pthread_t w[RACE_WRITERS], rd[2];
	struct cp_store *s;
	int i;

	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&rd[i], NULL, race_reader, &rc), 0);
	for (i = 0; i < RACE_WRITERS; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, race_writer, &rc), 0);
	for (i = 0; i < RACE_WRITERS; i++)
		pthread_join(w[i], NULL);
	for (i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);
	ck_assert_msg(rc.err == 0, "%s", rc.msg);
	s = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", 0, INT64_MAX), 6 * RACE_DAYS * RACE_WRITERS);
	cp_store_close(s);
}
END_TEST

/* A handle that wrote a day keeps its partition open; another handle's retention deletes the day
 * and then the first writes to that day again: the data must go into the day's new file, not into
 * the deleted one (where no reader finds it). */
START_TEST(test_dropped_day_written_again)
{
	struct cp_store *w1 = open_store(CP_STORE_WRITE), *w2 = open_store(CP_STORE_WRITE), *r;
	struct cp_profile *p = std_profile(1);
	int64_t t = cp_now_ns() - 10 * DAY_NS;

	append_at(w1, p, t, "comm=a");
	ck_assert_int_eq(cp_store_retain(w2, DAY_NS), 1);
	append_at(w1, p, t, "comm=a");
	r = open_store(CP_STORE_READ);
	ck_assert_int_eq(select_total(r, "process_cpu:samples", 0, INT64_MAX), 6);
	cp_store_close(r);
	/* and a reader that had the old file open reads the new one */
	ck_assert_int_eq(select_total(w2, "process_cpu:samples", 0, INT64_MAX), 6);
	cp_store_close(w1);
	cp_store_close(w2);
	cp_profile_free(p);
}
END_TEST

/* A profile of one sample of value v (both types) on main;work. */
static struct cp_profile *value_profile(int64_t v)
{
	struct cp_profile *p = new_profile(NS);
	int64_t vals[2] = { v, v };

	ck_assert_int_eq(cp_profile_add_sample(p, stack_of(p, "main;work"), 0, vals), 0);
	return p;
}

/* The value of the one sample that selecting sel over everything gives. */
static int64_t one_value(struct cp_store *s, const char *sel)
{
	struct cp_profile *p = select1(s, sel, 0, INT64_MAX);
	int64_t v;

	ck_assert_uint_eq(p->nsamples, 1);
	v = cp_profile_values(p, 0)[0];
	cp_profile_free(p);
	return v;
}

START_TEST(test_int64_values)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *big = value_profile(5000000000000000000LL), *max = value_profile(INT64_MAX);
	struct cp_profile *neg = value_profile(-5000000000000000000LL);
	struct cp_kv kv[] = { { "comm", "a" } };
	struct cp_store_append twice[] = {
		{ .profile = big, .labels = kv, .nlabels = 1, .time_ns = T0 },
		{ .profile = big, .labels = kv, .nlabels = 1, .time_ns = T0 },
	};
	struct cp_selector *sel = sel_of("process_cpu:samples{comm=\"a\"}");
	struct cp_store_query q = { sel, T0, T0 + 4 * NS, NULL, NULL, false };
	struct cp_buckets b;
	struct cp_store_stats st;
	int64_t *totals = NULL;
	char *type = NULL;

	/* two at one time (one entry), then at other times (summed by the query) */
	ck_assert_int_eq(cp_store_append(s, twice, 2), 0);
	ck_assert_int_eq(one_value(s, "process_cpu:samples{comm=\"a\"}"), INT64_MAX);
	append_at(s, big, T0 + NS, "comm=a");
	append_at(s, max, T0 + 2 * NS, "comm=a");
	ck_assert_int_eq(one_value(s, "process_cpu:samples{comm=\"a\"}"), INT64_MAX);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=\"a\"}", 0, INT64_MAX), INT64_MAX);
	ck_assert_int_eq(cp_store_over_time(s, &q, 10 * NS, &totals, &b, &type), 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(totals[0], INT64_MAX);
	free(totals);
	free(type);
	ck_assert_int_eq(cp_store_stats(s, &st), 0);
	ck_assert_int_ge(st.samples, 0);
	/* and at the other end */
	append_at(s, neg, T0, "comm=b");
	append_at(s, neg, T0 + NS, "comm=b");
	append_at(s, neg, T0 + NS, "comm=b");
	ck_assert_int_eq(one_value(s, "process_cpu:samples{comm=\"b\"}"), INT64_MIN);
	ck_assert_int_eq(select_total(s, "process_cpu:samples{comm=\"b\"}", 0, INT64_MAX), INT64_MIN);
	cp_selector_free(sel);
	cp_store_close(s);
	cp_profile_free(big);
	cp_profile_free(max);
	cp_profile_free(neg);
}
END_TEST

START_TEST(test_time_limits)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *p = std_profile(1);
	struct cp_kv kv[] = { { "comm", "a" } };
	struct cp_store_append a = { .profile = p, .labels = kv, .nlabels = 1, .time_ns = INT64_MAX };
	const int64_t bad[] = { INT64_MAX, -1, INT64_MIN };
	size_t i;

	/* a time no query can reach ([from, to) ends at INT64_MAX at most) is refused */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a.time_ns = bad[i];
		cp_error_clear();
		ck_assert_int_eq(cp_store_append(s, &a, 1), -EINVAL);
		ck_assert_contains(cp_errmsg(EINVAL), "out of range");
	}
	/* also as the profile's own time */
	a.time_ns = 0;
	p->time_nanos = INT64_MAX;
	ck_assert_int_eq(cp_store_append(s, &a, 1), -EINVAL);
	p->time_nanos = T0;
	/* nothing was stored, and the last time a query reaches is taken */
	ck_assert_int_eq(try_select(s, "process_cpu:samples", 0, INT64_MAX, NULL, &(struct cp_store_result *){ NULL },
				    &(size_t){ 0 }), -ENOENT);
	append_at(s, p, CP_STORE_TIME_MAX, "comm=a");
	append_at(s, p, 1, "comm=a");
	ck_assert_int_eq(select_total(s, "process_cpu:samples", CP_STORE_TIME_MAX, INT64_MAX), 6);
	ck_assert_int_eq(select_total(s, "process_cpu:samples", INT64_MIN, INT64_MAX), 12);
	cp_store_close(s);
	cp_profile_free(p);
}
END_TEST

/* An empty store and a push of zeros (nothing to sort: qsort(NULL, 0) is undefined). */
START_TEST(test_empty_and_zero)
{
	struct cp_store *s = open_store(CP_STORE_WRITE);
	struct cp_profile *z = value_profile(0), *q;
	struct cp_store_result *res;
	struct cp_store_series *ser;
	size_t n;

	ck_assert_int_eq(try_select(s, "process_cpu:samples", 0, INT64_MAX, NULL, &res, &n), -ENOENT);
	ck_assert_int_eq(cp_store_series(s, NULL, &ser, &n), 0);
	ck_assert_uint_eq(n, 0);
	cp_store_series_free(ser, n);
	append_at(s, z, T0, "comm=a");
	ck_assert_int_eq(cp_store_append(s, NULL, 0), 0);
	q = select1(s, "process_cpu:samples", 0, INT64_MAX);
	ck_assert_uint_eq(q->nsamples, 0);
	cp_profile_free(q);
	cp_store_close(s);
	cp_profile_free(z);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *open = tcase_create("open"), *query = tcase_create("query"), *life = tcase_create("lifecycle"),
	      *bad = tcase_create("corrupt"), *limit = tcase_create("limit");

	tcase_add_checked_fixture(open, dir_setup, dir_teardown);
	tcase_add_test(open, test_open_creates);
	tcase_add_test(open, test_open_read_missing);
	tcase_add_test(open, test_read_only_append);
	tcase_add_test(open, test_default_dir);
	tcase_add_test(open, test_open_uri);
	tcase_add_test(open, test_backend_table);
	tcase_add_test(open, test_type_name);
	suite_add_tcase(s, open);

	tcase_add_checked_fixture(query, dir_setup, dir_teardown);
	tcase_add_test(query, test_append_series_select);
	tcase_add_test(query, test_series_ids_bounded);
	tcase_add_test(query, test_no_delta_suffix);
	tcase_add_test(query, test_select_errors);
	tcase_add_test(query, test_group_by);
	tcase_add_test(query, test_over_time);
	tcase_add_test(query, test_label_values_roundtrip);
	tcase_add_test(query, test_sample_labels);
	tcase_add_test(query, test_append_parts);
	suite_add_tcase(s, query);

	tcase_add_checked_fixture(life, dir_setup, dir_teardown);
	tcase_set_timeout(life, 120);
	tcase_add_test(life, test_dedup);
	tcase_add_test(life, test_persistence);
	tcase_add_test(life, test_two_handles);
	tcase_add_test(life, test_dict_forget);
	tcase_add_test(life, test_program_mapping_first);
	tcase_add_test(life, test_concurrent_reader);
	tcase_add_test(life, test_retention);
	tcase_add_test(life, test_many_partitions);
	tcase_add_test(life, test_failed_batch_rolls_back);
	tcase_add_test(life, test_batch_days_all_or_nothing);
	tcase_add_test(life, test_batch_late_commit_fails);
	tcase_add_test(life, test_new_day_race);
	tcase_add_test(life, test_dropped_day_written_again);
	tcase_add_test(life, test_int64_values);
	tcase_add_test(life, test_time_limits);
	tcase_add_test(life, test_empty_and_zero);
	suite_add_tcase(s, life);

	tcase_add_checked_fixture(limit, dir_setup, dir_teardown);
	tcase_set_timeout(limit, 120);
	tcase_add_test(limit, test_limit_days);
	tcase_add_test(limit, test_downsample_policy);
	tcase_add_test(limit, test_downsample_totals);
	tcase_add_test(limit, test_downsample_thins_processes);
	tcase_add_test(limit, test_select_process_labels);
	tcase_add_test(limit, test_layout_by_series);
	tcase_add_test(limit, test_rollups);
	tcase_add_test(limit, test_rollups_programs);
	tcase_add_test(limit, test_rollups_day_by_series);
	tcase_add_test(limit, test_limit_trim);
	tcase_add_test(limit, test_limit_trim_legacy);
	tcase_add_test(limit, test_limit_dictionary);
	tcase_add_test(limit, test_limit_orphans);
	tcase_add_test(limit, test_limit_concurrent_reader);
	tcase_add_test(limit, test_limit_read_only_remote);
	suite_add_tcase(s, limit);

	tcase_add_checked_fixture(bad, dir_setup, dir_teardown);
	tcase_set_timeout(bad, 60);
	tcase_add_test(bad, test_corrupt_index);
	tcase_add_test(bad, test_foreign_sqlite);
	tcase_add_test(bad, test_corrupt_partition_page);
	tcase_add_test(bad, test_corrupt_series_list);
	tcase_add_test(bad, test_block_roundtrip);
	tcase_add_test(bad, test_block_shared_columns);
	tcase_add_test(bad, test_corrupt_pages);
	tcase_add_test(bad, test_truncated_partition_half);
	tcase_add_test(bad, test_short_file_pages_in_wal);
	tcase_add_test(bad, test_truncated_partition_header);
	tcase_add_test(bad, test_truncated_partition_empty);
	tcase_add_test(bad, test_bad_label_value);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
