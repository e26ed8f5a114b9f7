/* SPDX-License-Identifier: MIT */
/* lib/view/view.c and text.c: cprof top's view model (filter, sorts, zoom,
 * callers and callees, the live ring, history windows) and its text, from
 * hand-built profiles with known stacks, processes and threads. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "profile.h"
#include "selector.h"
#include "store/store.h"
#include "testutil.h"
#include "view/text.h"
#include "view/view.h"

#define NS 1000000000LL

/* ---- profiles ---- */

static struct cp_profile *prof(void)
{
	struct cp_profile *p = cp_profile_new();

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	return p;
}

static void label(struct cp_profile *p, struct cp_label *l, const char *k, const char *v)
{
	memset(l, 0, sizeof(*l));
	l->key = (uint32_t)cp_profile_str(p, k);
	l->str = (uint32_t)cp_profile_str(p, v);
}

/* A sample of value on the stack "root;...;leaf" in /usr/bin/app, with
 * pid/comm/thread labels when pid is not NULL (comm NULL: pid and the
 * thread's, as cprof record's series per program have them, the thread
 * named "t" and its id). */
static void add(struct cp_profile *p, const char *stack, const char *pid, const char *comm, const char *tid,
		int64_t value)
{
	struct cp_mapping m = { 0x400000, 0x500000, 0, (uint32_t)cp_profile_str(p, "/usr/bin/app"), 0, true, false,
				false, false };
	uint32_t locs[16], map = (uint32_t)cp_profile_mapping(p, &m);
	char buf[256], *save = NULL;
	size_t n = 0;
	struct cp_label l[4];
	size_t nl = 0;
	int64_t st, ls;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (char *nm = strtok_r(buf, ";", &save); nm; nm = strtok_r(NULL, ";", &save)) {
		struct cp_function f = { (uint32_t)cp_profile_str(p, nm), 0, 0, 0 };
		struct cp_line line = { (uint32_t)cp_profile_function(p, &f), 1, 0 };
		uint64_t addr = 0x400000;

		for (const char *c = nm; *c; c++) /* one address per name */
			addr = (addr * 31 + (unsigned char)*c) % 0x100000 + 0x400000;
		ck_assert_uint_lt(n, 16);
		memmove(locs + 1, locs, n * sizeof(*locs)); /* leaf first */
		locs[0] = (uint32_t)cp_profile_location(p, map, addr, &line, 1, false);
		n++;
	}
	if (pid) {
		char tname[32];

		snprintf(tname, sizeof(tname), "t%s", tid);
		label(p, &l[nl++], "pid", pid);
		if (comm)
			label(p, &l[nl++], "comm", comm);
		label(p, &l[nl++], "thread_id", tid);
		label(p, &l[nl++], "thread_name", comm ? comm : tname);
	}
	st = cp_profile_stack(p, locs, n);
	ls = cp_profile_labelset(p, l, nl);
	ck_assert_int_ge(st, 0);
	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, (uint32_t)ls, &value), 0);
}

/*
 * app (pid 10; threads 10 and 11):  main;run;hot 60 (tid 10), main;run;cold 20 (tid 11),
 *                                   main;Hot_loop 10 (tid 10)
 * db (pid 20):                      main;query 30, main;run;hot 10
 * total 130
 */
static struct cp_profile *workload(void)
{
	struct cp_profile *p = prof();

	add(p, "main;run;hot", "10", "app", "10", 60);
	add(p, "main;run;cold", "10", "app", "11", 20);
	add(p, "main;Hot_loop", "10", "app", "10", 10);
	add(p, "main;query", "20", "db", "20", 30);
	add(p, "main;run;hot", "20", "db", "20", 10);
	return p;
}

/* A live view of the workload. */
static struct cp_view *live(void)
{
	struct cp_view *v = cp_view_new();

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(cp_view_live_add(v, workload(), NS, 10), 0);
	return v;
}

/* The name shown in row i (functions, callers: the function; processes: comm; threads: name). */
static const char *row_name(const struct cp_view *v, size_t i)
{
	const struct cp_view_row *r = &v->rows[i];
	int64_t fn = cp_view_row_fn(v, r);

	ck_assert_uint_lt(i, v->nrows);
	if (fn >= 0)
		return cp_aggregate_str(v->agg, v->agg->fns[fn].name);
	if (v->kind == CP_VIEW_PROCESSES)
		return cp_aggregate_str(v->agg, v->agg->procs[r->idx].comm);
	return cp_aggregate_str(v->agg, v->agg->threads[r->idx].name);
}

/* The rows' names, space-separated. */
static const char *names(const struct cp_view *v)
{
	static char buf[512];
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < v->nrows; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "", row_name(v, i));
	return buf;
}

static long row_of(const struct cp_view *v, const char *name)
{
	for (size_t i = 0; i < v->nrows; i++)
		if (!strcmp(row_name(v, i), name))
			return (long)i;
	ck_abort_msg("no row %s in %s", name, names(v));
	return -1;
}

/* ---- tests ---- */

START_TEST(test_view_names)
{
	ck_assert_int_eq(cp_view_kind_parse("threads"), CP_VIEW_THREADS);
	ck_assert_int_eq(cp_view_kind_parse("callers"), CP_VIEW_CALLERS);
	ck_assert_int_eq(cp_view_kind_parse("thread"), -1);
	ck_assert_int_eq(cp_view_sort_parse("total"), CP_SORT_TOTAL);
	ck_assert_int_eq(cp_view_sort_parse("Total"), -1);
}
END_TEST

START_TEST(test_view_sorts)
{
	struct cp_view *v = live();

	/* self: hot 70, query 30, cold 20, Hot_loop 10, then the no-self ones by total: main 130, run 90 */
	ck_assert_int_eq(v->agg->total, 130);
	ck_assert_str_eq(names(v), "hot query cold Hot_loop main run");
	ck_assert_int_eq(cp_view_set_sort(v, CP_SORT_TOTAL), 0);
	ck_assert_str_eq(names(v), "main run hot query cold Hot_loop");
	ck_assert_int_eq(cp_view_set_sort(v, CP_SORT_NAME), 0);
	ck_assert_str_eq(names(v), "Hot_loop cold hot main query run"); /* strcmp: capitals first */
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "app db");
	ck_assert_int_eq(cp_view_set_sort(v, CP_SORT_SELF), 0);
	ck_assert_str_eq(names(v), "app db"); /* 90 before 40 */
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_THREADS), 0);
	ck_assert_uint_eq(v->nrows, 3);
	ck_assert_uint_eq(v->agg->threads[v->rows[0].idx].tid, 10); /* 70 */
	ck_assert_uint_eq(v->agg->threads[v->rows[2].idx].tid, 11); /* 20, after db's 40 */
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_filter)
{
	struct cp_view *v = live();

	/* lower case: caseless */
	ck_assert_int_eq(cp_view_set_filter(v, "hot"), 0);
	ck_assert_str_eq(names(v), "hot Hot_loop");
	ck_assert_str_eq(v->filter, "hot");
	/* a capital: case-sensitive */
	ck_assert_int_eq(cp_view_set_filter(v, "Hot"), 0);
	ck_assert_str_eq(names(v), "Hot_loop");
	ck_assert_int_eq(cp_view_set_filter(v, "HOT"), 0);
	ck_assert_uint_eq(v->nrows, 0);
	/* the binary matches too */
	ck_assert_int_eq(cp_view_set_filter(v, "^app$"), 0);
	ck_assert_uint_eq(v->nrows, 6);
	/* processes: by comm or pid */
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_int_eq(cp_view_set_filter(v, "^20$"), 0);
	ck_assert_str_eq(names(v), "db");
	/* a bad regex: -EINVAL, the filter as it was */
	cp_error_clear();
	ck_assert_int_eq(cp_view_set_filter(v, "a("), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(-EINVAL), "bad filter 'a('"), "%s", cp_errmsg(-EINVAL));
	ck_assert_str_eq(v->filter, "^20$");
	ck_assert_str_eq(names(v), "db");
	/* none */
	ck_assert_int_eq(cp_view_set_filter(v, ""), 0);
	ck_assert_str_eq(names(v), "app db");
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_zoom_process_thread)
{
	struct cp_view *v = live();

	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	cp_view_select(v, row_of(v, "db"));
	ck_assert_int_eq(cp_view_zoom_in(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_FUNCTIONS);
	ck_assert_str_eq(v->zoom_what, "process db[20]");
	ck_assert_int_eq(v->agg->total, 40);
	ck_assert_str_eq(names(v), "query hot main run");
	/* out: the processes again, all of them */
	ck_assert_int_eq(cp_view_zoom_out(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_PROCESSES);
	ck_assert_str_eq(v->zoom_what, "");
	ck_assert_int_eq(v->agg->total, 130);
	ck_assert_int_eq(cp_view_zoom_out(v), 1); /* nothing more to leave */
	/* a thread: tid 11 ran cold only */
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_THREADS), 0);
	cp_view_select(v, 2);
	ck_assert_int_eq(cp_view_zoom_in(v), 0);
	ck_assert_str_eq(v->zoom_what, "thread app[11]");
	ck_assert_int_eq(v->agg->total, 20);
	ck_assert_str_eq(names(v), "cold main run");
	ck_assert_int_eq(cp_view_zoom_out(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_THREADS);
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_callers_callees)
{
	struct cp_view *v = live();
	char buf[256];

	/* Enter on run: its callers and callees */
	cp_view_select(v, row_of(v, "run"));
	ck_assert_int_eq(cp_view_zoom_in(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_CALLERS);
	ck_assert_str_eq(v->focus_name, "run");
	ck_assert_str_eq(v->focus_bin, "app");
	/* the function first, then callers, then callees (by value) */
	ck_assert_str_eq(names(v), "run main hot cold");
	ck_assert_int_eq(v->rows[0].kind, CP_ROW_FOCUS);
	ck_assert_int_eq(v->rows[1].kind, CP_ROW_CALLER);
	ck_assert_int_eq(v->rows[2].kind, CP_ROW_CALLEE);
	ck_assert_int_eq(v->agg->focus_total, 90);
	ck_assert_int_eq(v->agg->callees[v->rows[2].idx].value, 70);
	/* shares of the function's total: hot 70 / 90 */
	cp_view_row_text(v, 2, buf, sizeof(buf), 120);
	ck_assert_msg(strstr(buf, " 77.78%") == buf && strstr(buf, "  -> hot "), "%s", buf);
	cp_view_row_text(v, 1, buf, sizeof(buf), 120);
	ck_assert_msg(strstr(buf, "100.00%") == buf && strstr(buf, "  <- main "), "%s", buf);
	cp_view_row_text(v, 0, buf, sizeof(buf), 120);
	ck_assert_msg(strstr(buf, "run  (self 0.00%)"), "%s", buf);
	/* follow a callee: hot's callers are run */
	cp_view_select(v, 2);
	ck_assert_int_eq(cp_view_zoom_in(v), 0);
	ck_assert_str_eq(v->focus_name, "hot");
	ck_assert_str_eq(names(v), "hot run");
	/* Esc: back to the functions */
	ck_assert_int_eq(cp_view_zoom_out(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_FUNCTIONS);
	/* from processes: the function with the most self */
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_CALLERS), 0);
	ck_assert_str_eq(v->focus_name, "hot");
	ck_assert_int_eq(cp_view_zoom_out(v), 0);
	ck_assert_int_eq(v->kind, CP_VIEW_PROCESSES);
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_pick_focus)
{
	struct cp_view *v = live();

	v->kind = CP_VIEW_CALLERS;
	ck_assert_int_eq(cp_view_pick_focus(v, NULL), 0); /* the most self */
	ck_assert_str_eq(v->focus_name, "hot");
	ck_assert_int_eq(cp_view_pick_focus(v, "cold"), 0); /* by name */
	ck_assert_str_eq(v->focus_name, "cold");
	ck_assert_int_eq(cp_view_pick_focus(v, "_lo"), 0); /* a part of a name */
	ck_assert_str_eq(v->focus_name, "Hot_loop");
	ck_assert_int_eq(cp_view_refresh(v, true), 0);
	ck_assert_str_eq(names(v), "Hot_loop main");
	ck_assert_int_eq(cp_view_pick_focus(v, "nosuch"), 0);
	ck_assert_str_eq(v->focus_name, "");
	ck_assert_str_eq(v->function, "nosuch");
	cp_view_free(v);
}
END_TEST

/* A profile of n samples of main;fn (no labels). */
static struct cp_profile *one(const char *fn, int64_t n)
{
	struct cp_profile *p = prof();
	char stack[64];

	snprintf(stack, sizeof(stack), "main;%s", fn);
	add(p, stack, NULL, NULL, NULL, n);
	return p;
}

START_TEST(test_view_ring)
{
	struct cp_view *v = cp_view_new();

	ck_assert_ptr_nonnull(v);
	/* a window of 3 refreshes: the 4th pushes the 1st out */
	ck_assert_int_eq(cp_view_live_add(v, one("a", 5), NS, 3), 0);
	ck_assert_int_eq(cp_view_live_add(v, one("b", 7), NS / 2, 3), 0);
	ck_assert_int_eq(cp_view_live_add(v, one("c", 11), NS, 3), 0);
	ck_assert_uint_eq(v->nring, 3);
	ck_assert_int_eq(v->agg->total, 23);
	ck_assert_int_eq(cp_view_live_add(v, one("d", 13), NS, 3), 0);
	ck_assert_uint_eq(v->nring, 3);
	ck_assert_int_eq(v->agg->total, 31);
	ck_assert_int_eq(cp_aggregate_find(v->agg, "a", "app"), -1);
	ck_assert_str_eq(names(v), "d c b main");
	/* each refresh's rate: b's 7 in half a second is 14/s */
	ck_assert_uint_eq(v->nrates, 4);
	ck_assert(v->rates[1] > 13.99 && v->rates[1] < 14.01);
	ck_assert_uint_eq(v->last_samples, 13);
	/* a smaller window keeps the newest */
	ck_assert_int_eq(cp_view_live_add(v, one("e", 17), NS, 2), 0);
	ck_assert_uint_eq(v->nring, 2);
	ck_assert_int_eq(v->agg->total, 30);
	/* paused: the rate counts, the window stays */
	v->paused = true;
	ck_assert_int_eq(cp_view_live_add(v, one("f", 19), NS, 2), 0);
	ck_assert_int_eq(v->agg->total, 30);
	ck_assert_uint_eq(v->nrates, 6);
	ck_assert_uint_eq(v->last_samples, 19);
	v->paused = false;
	/* z: afresh */
	ck_assert_int_eq(cp_view_live_clear(v), 0);
	ck_assert_uint_eq(v->nring, 0);
	ck_assert_int_eq(v->agg->total, 0);
	ck_assert_uint_eq(v->nrows, 0);
	cp_view_free(v);
}
END_TEST

/* A profile as top --off-cpu gets it: samples, offcpu ns, wall ns; "run"
 * on the CPU (3 samples of 10 ms), "wait" off it 50 ms. */
static struct cp_profile *offcpu_prof(void)
{
	struct cp_profile *p = prof();
	const char *fns[] = { "run", "wait" };
	const int64_t vals[2][3] = { { 3, 0, 30000000 }, { 0, 50000000, 50000000 } };

	ck_assert_int_eq(cp_profile_add_sample_type(p, "offcpu", "nanoseconds"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "wall", "nanoseconds"), 0);
	for (int i = 0; i < 2; i++) {
		struct cp_function f = { (uint32_t)cp_profile_str(p, fns[i]), 0, 0, 0 };
		struct cp_line line = { (uint32_t)cp_profile_function(p, &f), 1, 0 };
		uint32_t loc = (uint32_t)cp_profile_location(p, 0, 0x1000 + (uint64_t)i, &line, 1, false);
		int64_t st = cp_profile_stack(p, &loc, 1), ls = cp_profile_labelset(p, NULL, 0);

		ck_assert_int_ge(st, 0);
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, (uint32_t)ls, vals[i]), 0);
	}
	return p;
}

START_TEST(test_view_value)
{
	struct cp_view *v = cp_view_new();
	char buf[256];

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(cp_view_live_add(v, offcpu_prof(), NS, 3), 0);
	ck_assert_int_eq(v->agg->total, 3); /* samples by default */
	cp_view_columns(v, buf, sizeof(buf), 120);
	ck_assert_ptr_nonnull(strstr(buf, "SAMPLES"));
	ck_assert_int_eq(cp_view_set_value(v, "offcpu"), 0);
	ck_assert_int_eq(v->agg->total, 50000000);
	ck_assert_str_eq(names(v), "wait");
	cp_view_columns(v, buf, sizeof(buf), 120);
	ck_assert_ptr_nonnull(strstr(buf, "VALUE"));
	ck_assert_int_eq(cp_view_set_value(v, "wall"), 0);
	ck_assert_int_eq(v->agg->total, 80000000);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	cp_view_columns(v, buf, sizeof(buf), 120);
	ck_assert_ptr_nonnull(strstr(buf, "WALL%"));
	/* a type the profiles do not have: refused, the view as it was */
	ck_assert_int_eq(cp_view_set_value(v, "alloc"), -EINVAL);
	ck_assert_str_eq(v->value, "wall");
	ck_assert_int_eq(v->agg->total, 80000000);
	/* the next refresh is aggregated by the same value */
	ck_assert_int_eq(cp_view_live_add(v, offcpu_prof(), NS, 3), 0);
	ck_assert_int_eq(v->agg->total, 160000000);
	ck_assert_int_eq(cp_view_set_value(v, "samples"), 0);
	ck_assert_int_eq(v->agg->total, 6);
	ck_assert_str_eq(v->value, "");
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_selection_kept)
{
	struct cp_view *v = live();

	cp_view_select(v, row_of(v, "cold"));
	/* new data changes the order: cold is still the selected row */
	ck_assert_int_eq(cp_view_live_add(v, one("cold", 100), NS, 10), 0);
	ck_assert_str_eq(row_name(v, 0), "cold");
	ck_assert_int_eq(v->sel, 0);
	cp_view_select(v, 1000);
	ck_assert_int_eq(v->sel, (long)v->nrows - 1);
	cp_view_select(v, -3);
	ck_assert_int_eq(v->sel, 0);
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_frames_and_text)
{
	struct cp_view *v = live();
	struct cp_view_title t = { "pid 10", 99, 4, NS, 10 * NS, 3 };
	char lines[3][CP_VIEW_LINE], buf[256], *out = NULL;
	size_t len = 0;
	FILE *f;

	/* percentages of the total: hot 70 of 130 self, 80... */
	cp_view_row_text(v, 0, buf, sizeof(buf), 120);
	ck_assert_msg(!strncmp(buf, " 53.85%  53.85%        70  hot ", 31), "%s", buf);
	cp_view_row_text(v, (size_t)row_of(v, "run"), buf, sizeof(buf), 120);
	ck_assert_msg(!strncmp(buf, "  0.00%  69.23%         0  run ", 31), "%s", buf);
	ck_assert_msg(strstr(buf, "app +1 more"), "%s", buf); /* run ran in two processes */
	cp_view_columns(v, buf, sizeof(buf), 120);
	ck_assert_msg(strstr(buf, "SELF%  TOTAL%   SAMPLES  FUNCTION"), "%s", buf);
	cp_view_header(v, &t, lines);
	ck_assert_msg(!strncmp(lines[0], "cprof top - pid 10 at 99 Hz, every 1s, the last 10s   ", 54), "%s", lines[0]);
	ck_assert_str_eq(lines[1], "samples/s 130   CPUs 4   processes 2   threads 3   dropped 3   frames: kernel+user");
	ck_assert_str_eq(lines[2], "view: functions   sort: self");
	/* --stdio: a limit of 2 rows */
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	ck_assert_int_eq(cp_view_set_filter(v, "o"), 0);
	ck_assert_int_eq(cp_view_print(f, v, &t, 2), 0);
	fclose(f);
	ck_assert_msg(strstr(out, "view: functions   sort: self   filter: /o/\n"), "%s", out);
	ck_assert_msg(strstr(out, "  hot ") && strstr(out, "  Hot_loop ") == NULL, "%s", out);
	free(out);
	cp_view_free(v);
}
END_TEST

START_TEST(test_view_sparkline)
{
	double vals[] = { 0, 1, 8, 4 };
	char buf[64];

	cp_view_sparkline(vals, 4, false, buf, sizeof(buf));
	ck_assert_str_eq(buf, " _#:");
	cp_view_sparkline(vals, 4, true, buf, sizeof(buf));
	ck_assert_str_eq(buf, " \u2581\u2588\u2584");
	ck_assert_str_eq(cp_view_duration(250000000LL, buf, sizeof(buf)), "250ms");
	ck_assert_str_eq(cp_view_duration(120 * NS, buf, sizeof(buf)), "2m");
	ck_assert_str_eq(cp_view_duration(1500000000LL, buf, sizeof(buf)), "1.50s");
	/* + and -: the ladder of refresh intervals, from any interval */
	ck_assert_int_eq(cp_view_next_delay(NS, -1), NS / 2);
	ck_assert_int_eq(cp_view_next_delay(NS, 1), 2 * NS);
	ck_assert_int_eq(cp_view_next_delay(NS / 4, -1), NS / 4);
	ck_assert_int_eq(cp_view_next_delay(10 * NS, 1), 10 * NS);
	ck_assert_int_eq(cp_view_next_delay(700000000LL, 1), NS);    /* 0.7 s: up to 1 s */
	ck_assert_int_eq(cp_view_next_delay(700000000LL, -1), NS / 2); /* down to 500 ms */
}
END_TEST

/* ---- history ---- */

static char dir[64];
static int64_t t0;

/* A store with pid 101 (a) at t0+5s and t0+25s, pid 102 (b) at t0+25s and pid 103 (c) at t0+45s:
 * windows of 10 s from t0 (a multiple of 10 s). */
static struct cp_store *history_store(void)
{
	struct cp_store *s;
	struct { const char *pid, *comm, *fn; int64_t at, n; } pushes[] = {
		{ "101", "a", "fa", 5, 3 }, { "101", "a", "fa", 25, 4 }, { "102", "b", "fb", 25, 6 }, { "103", "c", "fc", 45, 9 },
	};

	snprintf(dir, sizeof(dir), "/tmp/check_view.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(s = cp_store_open(dir, CP_STORE_WRITE));
	t0 = (cp_now_ns() / (10 * NS) - 100) * 10 * NS;
	for (size_t i = 0; i < sizeof(pushes) / sizeof(*pushes); i++) {
		struct cp_kv kv[] = { { "comm", pushes[i].comm }, { "pid", pushes[i].pid } };
		struct cp_profile *p = one(pushes[i].fn, pushes[i].n);
		struct cp_store_append a = { .profile = p, .name = "cpu", .labels = kv,
		                             .nlabels = 2, .time_ns = t0 + pushes[i].at * NS };

		ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
		cp_profile_free(p);
	}
	return s;
}

START_TEST(test_view_history)
{
	struct cp_store *s = history_store();
	struct cp_view *v = cp_view_new();
	char lines[3][CP_VIEW_LINE];
	struct cp_view_title t = { "cpu", 0, 0, 0, 0, 0 };

	ck_assert_int_eq(cp_view_history_open(v, s, NULL, NULL, 0, t0, t0 + 55 * NS, 10 * NS), 0);
	ck_assert_uint_eq(v->nwin, 6); /* [t0, t0+60s): the last holds t0+55s */
	ck_assert_int_eq(v->from, t0);
	ck_assert_int_eq(v->totals[0], 3);
	ck_assert_int_eq(v->totals[2], 10);
	ck_assert_int_eq(v->totals[4], 9);
	ck_assert_int_eq(v->totals[5], 0);
	ck_assert_uint_eq(v->win, 4); /* the newest with data */
	ck_assert_str_eq(names(v), "fc main");
	/* back: window 3 is empty, window 2 has a and b with their comm from the series */
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_uint_eq(v->nrows, 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_uint_eq(v->win, 2);
	ck_assert_int_eq(v->agg->total, 10);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "b a");
	ck_assert_uint_eq(v->agg->procs[v->rows[1].idx].pid, 101);
	cp_view_header(v, &t, lines);
	ck_assert_msg(strstr(lines[0], "(window 3 of 6, 10s each)"), "%s", lines[0]);
	ck_assert_msg(!strncmp(lines[1], "samples 10   samples/s 1.0   processes 2 ", 41), "%s", lines[1]);
	/* zoom into a process of the window */
	cp_view_select(v, 1);
	ck_assert_int_eq(cp_view_zoom_in(v), 0);
	ck_assert_str_eq(v->zoom_what, "process a[101]");
	ck_assert_int_eq(v->agg->total, 4);
	ck_assert_int_eq(cp_view_zoom_out(v), 0);
	/* the screen's sparkline: window 3 of 6 (totals 3 0 10 0 9 0) in reverse video */
	{
		char sp[64];
		size_t off, n;

		cp_view_spark_text(v, 40, false, sp, sizeof(sp), &off, &n);
		ck_assert_str_eq(sp, "- # # ");
		ck_assert_uint_eq(off, 2);
		ck_assert_uint_eq(n, 1);
		cp_view_spark_text(v, 40, true, sp, sizeof(sp), &off, &n);
		ck_assert_uint_eq(off, 4); /* a block (3 bytes) and a space */
		ck_assert_uint_eq(n, 3);
		ck_assert_str_eq(sp + off + n, " \u2588 ");
	}
	/* the edges */
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_uint_eq(v->win, 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 1);
	ck_assert_uint_eq(v->win, 0);
	cp_view_free(v);
	cp_store_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_view_history_pids)
{
	struct cp_store *s = history_store();
	struct cp_view *v = cp_view_new();
	const uint32_t pids[] = { 103, 101 };

	/* every pid given: 101's 3 + 4 and 103's 9, not 102's 6 */
	ck_assert_int_eq(cp_view_history_open(v, s, "cpu{comm=~\"a|b|c\"}", pids, 2, t0, t0 + 55 * NS, 10 * NS), 0);
	ck_assert_int_eq(v->totals[0] + v->totals[2] + v->totals[4], 16);
	ck_assert_int_eq(v->totals[2], 4);
	ck_assert_str_eq(v->selector->src, "cpu{comm=~\"a|b|c\", pid=~\"103|101\"}");
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "a");
	cp_view_free(v);
	/* a type with no series: the store's error */
	v = cp_view_new();
	ck_assert_int_lt(cp_view_history_open(v, s, "memory", NULL, 0, t0, t0 + 55 * NS, 10 * NS), 0);
	cp_view_free(v);
	cp_store_close(s);
	rm_rf(dir);
}
END_TEST

/* cprof record's layout: a series per program (comm), its processes in the samples' pid.  At t0+5s
 * program a has pid 101 (3, thread 101) and pid 104 (2 + 1, threads 104 and 105), program b pid 102
 * (6); at t0+25s a's pid 101 again (5) and, with old, a per-process series of before beside it (pid
 * 103, comm c, 4: no pid in its samples). */
static struct cp_store *program_store(bool old_too)
{
	struct cp_store *s;
	struct { const char *comm, *pid, *tid, *fn; int64_t at, n; } samples[] = {
		{ "a", "101", "101", "fa", 5, 3 }, { "a", "104", "104", "fa", 5, 2 }, { "a", "104", "105", "ga", 5, 1 },
		{ "b", "102", "102", "fb", 5, 6 }, { "a", "101", "101", "fa", 25, 5 },
	};
	struct cp_kv old[] = { { "comm", "c" }, { "pid", "103" } };
	struct cp_profile *p;
	struct cp_store_append a;

	snprintf(dir, sizeof(dir), "/tmp/check_view.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(s = cp_store_open(dir, CP_STORE_WRITE));
	t0 = (cp_now_ns() / (10 * NS) - 100) * 10 * NS;
	for (size_t i = 0; i < sizeof(samples) / sizeof(*samples); i++) {
		struct cp_kv kv[] = { { "comm", samples[i].comm } };
		char stack[64];

		snprintf(stack, sizeof(stack), "main;%s", samples[i].fn);
		p = prof();
		add(p, stack, samples[i].pid, NULL, samples[i].tid, samples[i].n);
		a = (struct cp_store_append){ .profile = p, .name = "cpu", .labels = kv, .nlabels = 1,
					      .time_ns = t0 + samples[i].at * NS };
		ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
		cp_profile_free(p);
	}
	if (!old_too)
		return s;
	p = one("fc", 4);
	a = (struct cp_store_append){ .profile = p, .name = "cpu", .labels = old, .nlabels = 2, .time_ns = t0 + 25 * NS };
	ck_assert_int_eq(cp_store_append(s, &a, 1), 0);
	cp_profile_free(p);
	return s;
}

/* the pid of row i of the processes view */
static uint32_t row_pid(const struct cp_view *v, size_t i)
{
	ck_assert_uint_lt(i, v->nrows);
	return v->agg->procs[v->rows[i].idx].pid;
}

START_TEST(test_view_history_programs)
{
	struct cp_store *s = program_store(true);
	struct cp_view *v = cp_view_new();
	const uint32_t pids[] = { 104 };

	/* window 0: the processes of programs a and b, each with its pid and its program's name */
	ck_assert_int_eq(cp_view_history_open(v, s, NULL, NULL, 0, t0, t0 + 35 * NS, 10 * NS), 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_int_eq(cp_view_history_step(v, -1), 0);
	ck_assert_uint_eq(v->win, 0);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "b a a");
	ck_assert_uint_eq(row_pid(v, 0), 102);
	ck_assert_uint_eq(row_pid(v, 1), 101);
	ck_assert_uint_eq(row_pid(v, 2), 104);
	ck_assert_uint_eq(v->agg->procs[v->rows[2].idx].nthreads, 2);
	ck_assert_uint_eq(v->agg->nprocs, 3);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_THREADS), 0);
	ck_assert_str_eq(names(v), "t102 t101 t104 t105");
	/* window 2: a series per process (pid 103) beside program a's pid 101: grouped by pid, each named */
	ck_assert_int_eq(cp_view_history_step(v, 1), 0);
	ck_assert_int_eq(cp_view_history_step(v, 1), 0);
	ck_assert_uint_eq(v->win, 2);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "a c");
	ck_assert_uint_eq(row_pid(v, 0), 101);
	ck_assert_uint_eq(row_pid(v, 1), 103);
	ck_assert_int_eq(v->agg->total, 9);
	cp_view_free(v);
	cp_store_close(s);
	rm_rf(dir);
	/* -p: the pid matcher applies to the samples of a series per program (where no series of the
	 * range has pid: one that has makes pid a series label, "" for the others) */
	s = program_store(false);
	v = cp_view_new();
	ck_assert_int_eq(cp_view_history_open(v, s, NULL, pids, 1, t0, t0 + 35 * NS, 10 * NS), 0);
	ck_assert_uint_eq(v->win, 0);
	ck_assert_int_eq(v->totals[0], 3);
	ck_assert_int_eq(cp_view_set_kind(v, CP_VIEW_PROCESSES), 0);
	ck_assert_str_eq(names(v), "a");
	ck_assert_uint_eq(row_pid(v, 0), 104);
	cp_view_free(v);
	cp_store_close(s);
	rm_rf(dir);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *model = tcase_create("model"), *hist = tcase_create("history");

	tcase_add_test(model, test_view_names);
	tcase_add_test(model, test_view_sorts);
	tcase_add_test(model, test_view_filter);
	tcase_add_test(model, test_view_zoom_process_thread);
	tcase_add_test(model, test_view_callers_callees);
	tcase_add_test(model, test_view_pick_focus);
	tcase_add_test(model, test_view_ring);
	tcase_add_test(model, test_view_selection_kept);
	tcase_add_test(model, test_view_frames_and_text);
	tcase_add_test(model, test_view_sparkline);
	tcase_add_test(model, test_view_value);
	suite_add_tcase(s, model);
	tcase_set_timeout(hist, 60);
	tcase_add_test(hist, test_view_history);
	tcase_add_test(hist, test_view_history_pids);
	tcase_add_test(hist, test_view_history_programs);
	suite_add_tcase(s, hist);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(view_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
