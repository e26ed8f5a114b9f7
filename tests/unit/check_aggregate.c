/* SPDX-License-Identifier: MIT */
/* lib/view/aggregate.c: what cprof top shows, from hand-built profiles with known
 * stacks, binaries, processes and threads. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "profile.h"
#include "view/aggregate.h"

/* ---- a profile builder ---- */

static uint32_t mapping(struct cp_profile *p, const char *file, uint64_t start)
{
	struct cp_mapping m = { start, start + 0x100000, 0, (uint32_t)cp_profile_str(p, file), 0, true, false, false, false };
	int64_t id = cp_profile_mapping(p, &m);

	ck_assert_int_gt(id, 0);
	return (uint32_t)id;
}

/* A location with one line per name (inlined callee first); no names: unsymbolized. */
static uint32_t loc(struct cp_profile *p, uint32_t map, uint64_t addr, const char *name, const char *inlined_in)
{
	struct cp_line lines[2];
	size_t n = 0;
	int64_t id;

	for (const char *nm = name; nm; nm = nm == name ? inlined_in : NULL) {
		struct cp_function f = { (uint32_t)cp_profile_str(p, nm), 0, 0, 0 };
		int64_t fid = cp_profile_function(p, &f);

		ck_assert_int_gt(fid, 0);
		lines[n++] = (struct cp_line){ (uint32_t)fid, 1, 0 };
	}
	id = cp_profile_location(p, map, addr, lines, n, false);
	ck_assert_int_gt(id, 0);
	return (uint32_t)id;
}

static void label(struct cp_profile *p, struct cp_label *l, const char *k, const char *v)
{
	memset(l, 0, sizeof(*l));
	l->key = (uint32_t)cp_profile_str(p, k);
	l->str = (uint32_t)cp_profile_str(p, v);
}

/* A sample: locations leaf first, with pid/comm/tid labels (pid NULL: none). */
static void sample(struct cp_profile *p, const uint32_t *locs, size_t n, const char *pid, const char *comm,
		   const char *tid, int64_t value)
{
	struct cp_label l[4];
	size_t nl = 0;
	int64_t st = cp_profile_stack(p, locs, n), ls;

	if (pid) {
		label(p, &l[nl++], "pid", pid);
		label(p, &l[nl++], "comm", comm);
	}
	if (tid) {
		label(p, &l[nl++], "thread_id", tid);
		label(p, &l[nl++], "thread_name", comm);
	}
	ls = cp_profile_labelset(p, l, nl);
	ck_assert_int_ge(st, 0);
	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, (uint32_t)ls, &value), 0);
}

/*
 * app (pid 10, threads 10 and 11):       main -> run -> hot        60 (tid 10)
 *                                        main -> run -> cold       20 (tid 11)
 *                                        main -> run -> hot -> [kernel] write   10 (tid 10)
 *                                        main -> rec -> rec -> hot 10 (tid 10; recursion)
 * db (pid 20):                           main -> libz+0x10 (no symbol) 30, libz+0x20 10
 *                                        main -> run -> hot (inlined into run's location) 20
 * kworker (pid 30):                      [kernel] worker 20 (kernel frames only)
 */
static struct cp_profile *make(void)
{
	struct cp_profile *p = cp_profile_new();
	uint32_t app, libz, kern, db;
	uint32_t mainl, run, hot, cold, rec, write, zl1, zl2, dbmain, dbinl, worker;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	app = mapping(p, "/usr/bin/app", 0x400000);
	db = mapping(p, "/usr/sbin/db", 0x800000);
	libz = mapping(p, "/lib/libz.so.1", 0x7f0000000000);
	kern = mapping(p, "[kernel.kallsyms]", 0xffff800000000000ull);
	mainl = loc(p, app, 0x401000, "main", NULL);
	run = loc(p, app, 0x402000, "run", NULL);
	hot = loc(p, app, 0x403000, "hot", NULL);
	cold = loc(p, app, 0x404000, "cold", NULL);
	rec = loc(p, app, 0x405000, "rec", NULL);
	write = loc(p, kern, 0xffff800000001000ull, "write", NULL);
	zl1 = loc(p, libz, 0x7f0000000010, NULL, NULL);
	zl2 = loc(p, libz, 0x7f0000000020, NULL, NULL);
	dbmain = loc(p, db, 0x801000, "main", NULL);
	dbinl = loc(p, db, 0x802000, "hot", "run"); /* hot inlined in run */
	worker = loc(p, kern, 0xffff800000002000ull, "worker", NULL);
	sample(p, (uint32_t[]){ hot, run, mainl }, 3, "10", "app", "10", 60);
	sample(p, (uint32_t[]){ cold, run, mainl }, 3, "10", "app", "11", 20);
	sample(p, (uint32_t[]){ write, hot, run, mainl }, 4, "10", "app", "10", 10);
	sample(p, (uint32_t[]){ hot, rec, rec, mainl }, 4, "10", "app", "10", 10);
	sample(p, (uint32_t[]){ zl1, dbmain }, 2, "20", "db", "20", 30);
	sample(p, (uint32_t[]){ zl2, dbmain }, 2, "20", "db", "20", 10);
	sample(p, (uint32_t[]){ dbinl, dbmain }, 2, "20", "db", "20", 20);
	sample(p, (uint32_t[]){ worker }, 1, "30", "kworker", "30", 20);
	return p;
}

static const struct cp_agg_fn *fn(const struct cp_aggregate *a, const char *name, const char *bin)
{
	int64_t i = cp_aggregate_find(a, name, bin);

	ck_assert_msg(i >= 0, "no function %s in %s", name, bin);
	return &a->fns[i];
}

static struct cp_aggregate *agg(const struct cp_aggregate_opts *o, const struct cp_profile *p)
{
	struct cp_aggregate *a = cp_aggregate_new(o);

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(cp_aggregate_add(a, p, 0, 0, NULL), 0);
	return a;
}

START_TEST(test_aggregate_functions)
{
	struct cp_profile *p = make();
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a = agg(&o, p);
	const struct cp_agg_fn *f;

	ck_assert_int_eq(a->total, 180);
	ck_assert_int_eq(a->nsamples, 8);
	/* hot in app: leaf of 60 + 10 (rec), under write 10 */
	f = fn(a, "hot", "app");
	ck_assert_int_eq(f->self, 70);
	ck_assert_int_eq(f->total, 80);
	ck_assert_int_eq(f->pid, 10);
	ck_assert_str_eq(cp_aggregate_str(a, f->comm), "app");
	ck_assert_uint_eq(f->nprocs, 1);
	ck_assert(!f->kernel);
	/* the same name in another binary is another function */
	ck_assert_int_eq(fn(a, "hot", "db")->self, 20);
	ck_assert_int_eq(fn(a, "run", "db")->total, 20); /* the inline frame's caller */
	ck_assert_int_eq(fn(a, "run", "db")->self, 0);
	/* recursion counts once per sample */
	ck_assert_int_eq(fn(a, "rec", "app")->total, 10);
	ck_assert_int_eq(fn(a, "main", "app")->total, 100);
	/* kernel frames: binary [kernel] */
	f = fn(a, "write", "[kernel]");
	ck_assert(f->kernel);
	ck_assert_int_eq(f->self, 10);
	/* unsymbolized code: one row per binary */
	f = fn(a, "[libz.so.1]", "libz.so.1");
	ck_assert_int_eq(f->self, 40);
	ck_assert_int_eq(cp_aggregate_find(a, "libz.so.1+0x10", "libz.so.1"), -1);
	cp_aggregate_free(a);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_aggregate_processes_threads)
{
	struct cp_profile *p = make();
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a = agg(&o, p);
	int64_t app = -1, th11 = -1;

	ck_assert_uint_eq(a->nprocs, 3);
	for (uint32_t i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == 10)
			app = i;
	ck_assert_int_ge(app, 0);
	ck_assert_int_eq(a->procs[app].value, 100);
	ck_assert_uint_eq(a->procs[app].nthreads, 2);
	ck_assert_str_eq(cp_aggregate_str(a, a->procs[app].comm), "app");
	ck_assert_uint_eq(a->nthreads, 4);
	for (uint32_t i = 0; i < a->nthreads; i++)
		if (a->threads[i].tid == 11)
			th11 = i;
	ck_assert_int_ge(th11, 0);
	ck_assert_int_eq(a->threads[th11].value, 20);
	ck_assert_uint_eq(a->threads[th11].pid, 10);
	cp_aggregate_free(a);

	/* zoom into the process, then into a thread */
	o.pid = 10;
	a = agg(&o, p);
	ck_assert_int_eq(a->total, 100);
	ck_assert_uint_eq(a->nprocs, 1);
	ck_assert_int_eq(fn(a, "main", "db")->total, 0); /* known, but nothing of it counted */
	cp_aggregate_free(a);
	o.tid = 11;
	a = agg(&o, p);
	ck_assert_int_eq(a->total, 20);
	ck_assert_int_eq(fn(a, "cold", "app")->self, 20);
	cp_aggregate_free(a);
	cp_profile_free(p);
}
END_TEST

/* A fork's child runs a sample or two under its parent's name, then execs: its thread goes by the name
 * most of its samples carry, in whichever order they come. */
START_TEST(test_aggregate_thread_renamed)
{
	for (int order = 0; order < 2; order++) {
		struct cp_profile *p = cp_profile_new();
		struct cp_aggregate_opts o = { 0 };
		struct cp_aggregate *a;
		uint32_t bin, m;

		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
		bin = mapping(p, "/usr/bin/work", 0x400000);
		m = loc(p, bin, 0x401000, "main", NULL);
		if (order == 0)
			sample(p, (uint32_t[]){ m }, 1, "7", "sh", "7", 2);
		sample(p, (uint32_t[]){ m }, 1, "7", "work", "7", 30);
		sample(p, (uint32_t[]){ m }, 1, "7", "cprof", "7", 1);
		sample(p, (uint32_t[]){ m }, 1, "7", "work", "7", 20);
		if (order == 1)
			sample(p, (uint32_t[]){ m }, 1, "7", "sh", "7", 40);
		a = agg(&o, p);
		ck_assert_uint_eq(a->nthreads, 1);
		ck_assert_int_eq(a->threads[0].value, order == 0 ? 53 : 91);
		ck_assert_str_eq(cp_aggregate_str(a, a->threads[0].name), "work");
		cp_aggregate_free(a);
		cp_profile_free(p);
	}
}
END_TEST

/* Samples without a pid (a downsampled day keeps programs, not processes): a process row per
 * command, not one "pid 0" for all, and a function of both names both. */
START_TEST(test_aggregate_no_pids)
{
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a = cp_aggregate_new(&o);
	const char *comms[2] = { "make", "cc1" };

	ck_assert_ptr_nonnull(a);
	for (int i = 0; i < 2; i++) {
		struct cp_profile *p = cp_profile_new();
		uint32_t bin, m;

		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
		bin = mapping(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000000000);
		m = loc(p, bin, 0x7f0000001000, "malloc", NULL);
		sample(p, (uint32_t[]){ m }, 1, NULL, NULL, NULL, 10 * (i + 1));
		ck_assert_int_eq(cp_aggregate_add(a, p, 0, 0, comms[i]), 0);
		cp_profile_free(p);
	}
	ck_assert_uint_eq(a->nprocs, 2);
	for (uint32_t i = 0; i < 2; i++) {
		ck_assert_uint_eq(a->procs[i].pid, 0);
		ck_assert_uint_eq(a->procs[i].nthreads, 0);
		ck_assert_int_eq(a->procs[i].value, !strcmp(cp_aggregate_str(a, a->procs[i].comm), "make") ? 10 : 20);
	}
	ck_assert_uint_eq(fn(a, "malloc", "libc.so.6")->nprocs, 2);
	cp_aggregate_free(a);
}
END_TEST

START_TEST(test_aggregate_callers_callees)
{
	struct cp_profile *p = make();
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a;
	int64_t fr, fc = -1, fw = -1;

	o.focus_name = "hot";
	o.focus_binary = "app";
	a = agg(&o, p);
	ck_assert_int_eq(a->focus_total, 80);
	ck_assert_int_eq(a->focus_self, 70);
	ck_assert_uint_eq(a->ncallers, 2); /* run (70) and rec (10) */
	fr = cp_aggregate_find(a, "run", "app");
	for (uint32_t i = 0; i < a->ncallers; i++) {
		if (a->callers[i].fn == fr)
			ck_assert_int_eq(a->callers[i].value, 70);
		else
			fc = a->callers[i].fn;
	}
	ck_assert_str_eq(cp_aggregate_str(a, a->fns[fc].name), "rec");
	ck_assert_uint_eq(a->ncallees, 1);
	fw = a->callees[0].fn;
	ck_assert_str_eq(cp_aggregate_str(a, a->fns[fw].name), "write");
	ck_assert_int_eq(a->callees[0].value, 10);
	cp_aggregate_free(a);

	/* a function with recursion: its caller rec (itself) and main, each once per sample */
	o.focus_name = "rec";
	a = agg(&o, p);
	ck_assert_int_eq(a->focus_total, 10);
	ck_assert_uint_eq(a->ncallers, 2);
	for (uint32_t i = 0; i < a->ncallers; i++)
		ck_assert_int_eq(a->callers[i].value, 10);
	cp_aggregate_free(a);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_aggregate_hidden_frames)
{
	struct cp_profile *p = make();
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a;

	o.no_kernel = true;
	a = agg(&o, p);
	ck_assert_int_eq(a->total, 180); /* nothing is lost */
	ck_assert_int_eq(fn(a, "write", "[kernel]")->total, 0);
	ck_assert_int_eq(fn(a, "hot", "app")->self, 80); /* the write sample's user leaf */
	ck_assert_int_eq(fn(a, "[kernel]", "[kernel]")->self, 20); /* kworker: kernel frames only */
	cp_aggregate_free(a);
	o.no_kernel = false;
	o.no_user = true;
	a = agg(&o, p);
	ck_assert_int_eq(a->total, 180);
	ck_assert_int_eq(fn(a, "write", "[kernel]")->self, 10);
	ck_assert_int_eq(fn(a, "worker", "[kernel]")->self, 20);
	ck_assert_int_eq(fn(a, "[user]", "[user]")->self, 150);
	ck_assert_int_eq(fn(a, "hot", "app")->total, 0);
	cp_aggregate_free(a);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_aggregate_defaults_and_sum)
{
	struct cp_profile *p = cp_profile_new(), *q = make();
	struct cp_aggregate_opts o = { 0 };
	struct cp_aggregate *a = cp_aggregate_new(&o);
	uint32_t m, l;

	/* a stored series: no pid label, the process given with the profile */
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	m = mapping(p, "/usr/bin/app", 0x400000);
	l = loc(p, m, 0x403000, "hot", NULL);
	sample(p, &l, 1, NULL, NULL, NULL, 5);
	ck_assert_int_eq(cp_aggregate_add(a, p, 0, 77, "stored"), 0);
	ck_assert_int_eq(cp_aggregate_add(a, q, 0, 0, NULL), 0);
	/* two profiles add up, by name and binary */
	ck_assert_int_eq(fn(a, "hot", "app")->self, 75);
	ck_assert_uint_eq(fn(a, "hot", "app")->nprocs, 2);
	ck_assert_uint_eq(fn(a, "hot", "app")->pid, 77);
	ck_assert_uint_eq(a->nprocs, 4);
	ck_assert_int_eq(a->total, 185);
	/* a bad value index is an error, not a crash */
	ck_assert_int_eq(cp_aggregate_add(a, p, 3, 0, NULL), -EINVAL);
	cp_aggregate_free(a);
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

static Suite *aggregate_suite(void)
{
	Suite *s = suite_create("aggregate");
	TCase *tc = tcase_create("aggregate");

	tcase_add_test(tc, test_aggregate_functions);
	tcase_add_test(tc, test_aggregate_processes_threads);
	tcase_add_test(tc, test_aggregate_thread_renamed);
	tcase_add_test(tc, test_aggregate_no_pids);
	tcase_add_test(tc, test_aggregate_callers_callees);
	tcase_add_test(tc, test_aggregate_hidden_frames);
	tcase_add_test(tc, test_aggregate_defaults_and_sum);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(aggregate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
