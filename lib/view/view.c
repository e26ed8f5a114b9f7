/* SPDX-License-Identifier: MIT */
/* The view model of cprof top (see view.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"
#include "view.h"

const char *const cp_view_kind_names[CP_VIEW_COUNT] = { "functions", "processes", "threads", "callers" };
const char *const cp_view_sort_names[CP_SORT_COUNT] = { "self", "total", "name" };

static int nomem(void)
{
	return cp_error(ENOMEM, "out of memory");
}

struct cp_view *cp_view_new(void)
{
	struct cp_view *v = calloc(1, sizeof(*v));

	if (!v || !(v->rerun = cp_regex_run_new(NULL))) {
		free(v);
		errno = ENOMEM;
		return NULL;
	}
	v->kind = v->back = v->rows_kind = CP_VIEW_FUNCTIONS;
	return v;
}

static void history_clear(struct cp_view *v)
{
	cp_store_results_free(v->res, v->nres);
	v->res = NULL;
	v->nres = 0;
	free(v->totals);
	v->totals = NULL;
	for (size_t i = 0; i < v->ncomms; i++)
		free(v->comms[i].comm);
	free(v->comms);
	v->comms = NULL;
	v->ncomms = v->ncomms_series = v->comms_cap = 0;
	cp_selector_free(v->selector);
	v->selector = NULL;
}

void cp_view_free(struct cp_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nring; i++)
		cp_profile_free(v->ring[i]);
	free(v->ring);
	history_clear(v);
	cp_aggregate_free(v->agg);
	free(v->rows);
	cp_regex_free(v->re);
	cp_regex_run_free(v->rerun);
	free(v);
}

int cp_view_kind_parse(const char *name)
{
	for (int i = 0; i < CP_VIEW_COUNT; i++)
		if (!strcmp(name, cp_view_kind_names[i]))
			return i;
	return -1;
}

int cp_view_sort_parse(const char *name)
{
	for (int i = 0; i < CP_SORT_COUNT; i++)
		if (!strcmp(name, cp_view_sort_names[i]))
			return i;
	return -1;
}

/* ---- the filter ---- */

static int compile_filter(struct cp_view *v, const char *re)
{
	struct cp_regex *code = NULL;
	char m[128];
	size_t off;
	int err;

	if (re[0]) {
		bool upper = false;

		for (const char *c = re; *c; c++)
			upper |= *c >= 'A' && *c <= 'Z';
		if ((err = cp_regex_compile(re, upper ? 0 : CP_REGEX_CASELESS, &code, m, sizeof(m), &off)))
			return err == -ENOMEM ? nomem() : cp_error(-err, "bad filter '%s': %s at offset %zu", re, m, off);
	}
	cp_regex_free(v->re);
	v->re = code;
	snprintf(v->filter, sizeof(v->filter), "%s", re);
	return 0;
}

int cp_view_set_filter(struct cp_view *v, const char *re)
{
	int err;

	if ((err = compile_filter(v, re)))
		return err;
	v->sel = 0;
	return v->agg ? cp_view_refresh(v, false) : 0;
}

/* Does the filter match s?  A filter too costly matches nothing. */
static bool matches(struct cp_view *v, const char *s)
{
	int hit;

	if (!v->re)
		return true;
	if ((hit = cp_regex_match(v->rerun, v->re, s, strlen(s))) < 0)
		v->re_costly = true;
	return hit > 0;
}

/* ---- aggregation and rows ---- */

/* pid's name in comms[0..n), sorted by pid, or NULL */
static const char *comm_in(const struct cp_view_comm *comms, size_t n, uint32_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (comms[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && comms[lo].pid == pid ? comms[lo].comm : NULL;
}

/* pid's name: its series' comm, else the window's (history_load) */
static const char *comm_of(const struct cp_view *v, uint32_t pid)
{
	const char *c = v->comms ? comm_in(v->comms, v->ncomms_series, pid) : NULL;

	return c || !v->comms ? c : comm_in(v->comms + v->ncomms_series, v->ncomms - v->ncomms_series, pid);
}

static int aggregate(struct cp_view *v)
{
	struct cp_aggregate_opts o = { v->no_kernel, v->no_user, v->zoom_pid, v->zoom_tid, NULL, NULL };
	struct cp_aggregate *a;
	int err = 0;

	if (v->focus_name[0]) {
		o.focus_name = v->focus_name;
		o.focus_binary = v->focus_bin;
	}
	if (!(a = cp_aggregate_new(&o)))
		return nomem();
	if (v->history) {
		for (size_t i = 0; !err && i < v->nres; i++) {
			const struct cp_profile *p = v->res[i].profile;
			const char *group = v->res[i].group;
			char *end;
			unsigned long pid = v->by_pid ? strtoul(group, &end, 10) : 0;

			if (v->by_pid && (*end || pid > UINT32_MAX))
				pid = 0;
			/* by comm: the samples' pid labels tell the processes apart */
			if (p && p->ntypes)
				err = cp_aggregate_add(a, p, 0, (uint32_t)pid,
						       v->by_pid ? comm_of(v, (uint32_t)pid) : *group ? group : NULL);
		}
	} else {
		for (size_t i = 0; !err && i < v->nring; i++) {
			int vidx = v->value[0] ? cp_profile_sample_index(v->ring[i], v->value) : 0;

			err = vidx < 0 ? vidx : cp_aggregate_add(a, v->ring[i], vidx, 0, NULL);
		}
	}
	if (err) {
		cp_aggregate_free(a);
		return err == -ENOMEM ? nomem() : err;
	}
	cp_aggregate_free(v->agg);
	v->agg = a;
	return 0;
}

static int cmp_name(const struct cp_aggregate *a, uint32_t x, uint32_t y)
{
	return strcmp(cp_aggregate_str(a, x), cp_aggregate_str(a, y));
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b ? 1 : 0;
}

static int row_cmp(const void *x, const void *y, void *arg)
{
	const struct cp_view *v = arg;
	const struct cp_view_row *ra = x, *rb = y;
	const struct cp_aggregate *a = v->agg;
	enum cp_view_sort s = v->sort;
	int c = 0;

	if (ra->kind != rb->kind)
		return ra->kind == CP_ROW_FOCUS ? -1 : rb->kind == CP_ROW_FOCUS ? 1 : (int)ra->kind - (int)rb->kind;
	switch (v->kind) {
	case CP_VIEW_FUNCTIONS: {
		const struct cp_agg_fn *fa = &a->fns[ra->idx], *fb = &a->fns[rb->idx];

		if (s == CP_SORT_NAME)
			c = cmp_name(a, fa->name, fb->name);
		else if (s == CP_SORT_TOTAL)
			c = cmp_i64(fa->total, fb->total) ? cmp_i64(fa->total, fb->total) : cmp_i64(fa->self, fb->self);
		else
			c = cmp_i64(fa->self, fb->self) ? cmp_i64(fa->self, fb->self) : cmp_i64(fa->total, fb->total);
		return c ? c : cmp_name(a, fa->name, fb->name);
	}
	case CP_VIEW_PROCESSES: {
		const struct cp_agg_proc *pa = &a->procs[ra->idx], *pb = &a->procs[rb->idx];

		c = s == CP_SORT_NAME ? cmp_name(a, pa->comm, pb->comm) : cmp_i64(pa->value, pb->value);
		return c ? c : (pa->pid < pb->pid ? -1 : pa->pid > pb->pid);
	}
	case CP_VIEW_THREADS: {
		const struct cp_agg_thread *ta = &a->threads[ra->idx], *tb = &a->threads[rb->idx];

		c = s == CP_SORT_NAME ? cmp_name(a, ta->name, tb->name) : cmp_i64(ta->value, tb->value);
		return c ? c : (ta->tid < tb->tid ? -1 : ta->tid > tb->tid);
	}
	default: {
		const struct cp_agg_edge *ea = ra->kind ? &a->callees[ra->idx] : &a->callers[ra->idx];
		const struct cp_agg_edge *eb = rb->kind ? &a->callees[rb->idx] : &a->callers[rb->idx];

		c = s == CP_SORT_NAME ? cmp_name(a, a->fns[ea->fn].name, a->fns[eb->fn].name) : cmp_i64(ea->value, eb->value);
		return c ? c : cmp_name(a, a->fns[ea->fn].name, a->fns[eb->fn].name);
	}
	}
}

static int push_row(struct cp_view *v, uint8_t kind, uint32_t idx)
{
	if (cp_grow((void **)&v->rows, &v->rowcap, v->nrows + 1, sizeof(*v->rows)))
		return nomem();
	v->rows[v->nrows++] = (struct cp_view_row){ kind, idx };
	return 0;
}

static int build_rows(struct cp_view *v)
{
	const struct cp_aggregate *a = v->agg;
	char buf[32];
	int err = 0;

	v->nrows = 0;
	cp_regex_run_reset(v->rerun); /* the filter's time budget is per rebuild */
	v->re_costly = false;
	switch (v->kind) {
	case CP_VIEW_FUNCTIONS:
		for (uint32_t i = 0; !err && i < a->nfns; i++)
			if (a->fns[i].total && (matches(v, cp_aggregate_str(a, a->fns[i].name)) ||
						matches(v, cp_aggregate_str(a, a->fns[i].binary))))
				err = push_row(v, 0, i);
		break;
	case CP_VIEW_PROCESSES:
		for (uint32_t i = 0; !err && i < a->nprocs; i++) {
			snprintf(buf, sizeof(buf), "%u", a->procs[i].pid);
			if (matches(v, cp_aggregate_str(a, a->procs[i].comm)) || matches(v, buf))
				err = push_row(v, 0, i);
		}
		break;
	case CP_VIEW_THREADS:
		for (uint32_t i = 0; !err && i < a->nthreads; i++) {
			snprintf(buf, sizeof(buf), "%u", a->threads[i].tid);
			if (matches(v, cp_aggregate_str(a, a->threads[i].name)) ||
			    matches(v, cp_aggregate_str(a, a->threads[i].comm)) || matches(v, buf))
				err = push_row(v, 0, i);
		}
		break;
	default: {
		int64_t f = v->focus_name[0] ? cp_aggregate_find(a, v->focus_name, v->focus_bin) : -1;

		if (f >= 0)
			err = push_row(v, CP_ROW_FOCUS, (uint32_t)f);
		/* all of them: the filter chose the function */
		for (uint32_t i = 0; !err && i < a->ncallers; i++)
			err = push_row(v, CP_ROW_CALLER, i);
		for (uint32_t i = 0; !err && i < a->ncallees; i++)
			err = push_row(v, CP_ROW_CALLEE, i);
		break;
	}
	}
	if (err)
		return err;
	v->rows_kind = v->kind;
	if (v->nrows)
		cp_qsort_r(v->rows, v->nrows, sizeof(*v->rows), row_cmp, v);
	return 0;
}

int64_t cp_view_row_fn(const struct cp_view *v, const struct cp_view_row *r)
{
	if (v->kind == CP_VIEW_FUNCTIONS)
		return r->idx;
	if (v->kind == CP_VIEW_CALLERS)
		return r->kind == CP_ROW_FOCUS ? (int64_t)r->idx : r->kind ? v->agg->callees[r->idx].fn :
									    v->agg->callers[r->idx].fn;
	return -1;
}

/* What identifies the selected row, to find it again after a refresh. */
struct rowkey {
	char name[512], bin[256];
	uint32_t id;
	uint8_t kind;
	bool set;
};

static void row_key(const struct cp_view *v, struct rowkey *k)
{
	const struct cp_view_row *r;
	int64_t fn;

	k->set = false;
	if (!v->agg || v->rows_kind != v->kind || v->sel < 0 || (size_t)v->sel >= v->nrows)
		return;
	r = &v->rows[v->sel];
	k->set = true;
	k->kind = r->kind;
	fn = cp_view_row_fn(v, r);
	if (fn >= 0) {
		snprintf(k->name, sizeof(k->name), "%s", cp_aggregate_str(v->agg, v->agg->fns[fn].name));
		snprintf(k->bin, sizeof(k->bin), "%s", cp_aggregate_str(v->agg, v->agg->fns[fn].binary));
	} else {
		k->id = v->kind == CP_VIEW_PROCESSES ? v->agg->procs[r->idx].pid : v->agg->threads[r->idx].tid;
	}
}

static void find_key(struct cp_view *v, const struct rowkey *k)
{
	if (!k->set)
		return;
	for (size_t i = 0; i < v->nrows; i++) {
		const struct cp_view_row *r = &v->rows[i];
		int64_t fn = cp_view_row_fn(v, r);
		bool same;

		if (r->kind != k->kind)
			continue;
		if (fn >= 0)
			same = !strcmp(cp_aggregate_str(v->agg, v->agg->fns[fn].name), k->name) &&
			       !strcmp(cp_aggregate_str(v->agg, v->agg->fns[fn].binary), k->bin);
		else
			same = (v->kind == CP_VIEW_PROCESSES ? v->agg->procs[r->idx].pid : v->agg->threads[r->idx].tid) ==
			       k->id;
		if (same) {
			v->sel = (long)i;
			return;
		}
	}
}

void cp_view_select(struct cp_view *v, long row)
{
	v->sel = row;
	if (v->sel >= (long)v->nrows)
		v->sel = (long)v->nrows - 1;
	if (v->sel < 0)
		v->sel = 0;
}

int cp_view_refresh(struct cp_view *v, bool again)
{
	struct rowkey k;
	int err;

	row_key(v, &k);
	if ((again || !v->agg) && (err = aggregate(v)))
		return err;
	if ((err = build_rows(v)))
		return err;
	find_key(v, &k);
	cp_view_select(v, v->sel);
	return 0;
}

/* ---- what is shown ---- */

static void focus_on(struct cp_view *v, int64_t fn)
{
	snprintf(v->focus_name, sizeof(v->focus_name), "%s", cp_aggregate_str(v->agg, v->agg->fns[fn].name));
	snprintf(v->focus_bin, sizeof(v->focus_bin), "%s", cp_aggregate_str(v->agg, v->agg->fns[fn].binary));
}

/* The callers view of the selected function (from processes or threads: the one with the most self). */
static int show_callers(struct cp_view *v)
{
	int64_t fn = v->nrows ? cp_view_row_fn(v, &v->rows[v->sel]) : -1;

	if (fn < 0 && v->kind != CP_VIEW_CALLERS)
		for (uint32_t i = 0; v->agg && i < v->agg->nfns; i++)
			if (fn < 0 || v->agg->fns[i].self > v->agg->fns[fn].self)
				fn = i;
	if (fn < 0)
		return 1;
	if (v->kind != CP_VIEW_CALLERS)
		v->back = v->kind;
	focus_on(v, fn);
	v->kind = CP_VIEW_CALLERS;
	v->sel = 0;
	return cp_view_refresh(v, true);
}

int cp_view_set_kind(struct cp_view *v, enum cp_view_kind kind)
{
	if (kind == CP_VIEW_CALLERS)
		return show_callers(v);
	v->kind = kind;
	v->sel = 0;
	return cp_view_refresh(v, false);
}

int cp_view_set_sort(struct cp_view *v, enum cp_view_sort sort)
{
	v->sort = sort;
	return cp_view_refresh(v, false);
}

int cp_view_set_frames(struct cp_view *v, bool no_kernel, bool no_user)
{
	v->no_kernel = no_kernel;
	v->no_user = no_user && !no_kernel;
	return cp_view_refresh(v, true);
}

int cp_view_zoom_in(struct cp_view *v)
{
	const struct cp_view_row *r;
	int64_t fn;

	if (!v->nrows)
		return 1;
	r = &v->rows[v->sel];
	switch (v->kind) {
	case CP_VIEW_PROCESSES: {
		const struct cp_agg_proc *p = &v->agg->procs[r->idx];

		v->zoom_pid = p->pid;
		v->zoom_tid = 0;
		snprintf(v->zoom_what, sizeof(v->zoom_what), "process %s[%u]", cp_aggregate_str(v->agg, p->comm), p->pid);
		v->kind = CP_VIEW_FUNCTIONS;
		break;
	}
	case CP_VIEW_THREADS: {
		const struct cp_agg_thread *th = &v->agg->threads[r->idx];

		v->zoom_tid = th->tid;
		v->zoom_pid = th->pid;
		snprintf(v->zoom_what, sizeof(v->zoom_what), "thread %s[%u]", cp_aggregate_str(v->agg, th->name), th->tid);
		v->kind = CP_VIEW_FUNCTIONS;
		break;
	}
	default:
		if ((fn = cp_view_row_fn(v, r)) < 0)
			return 1;
		if (v->kind == CP_VIEW_FUNCTIONS)
			v->back = CP_VIEW_FUNCTIONS;
		focus_on(v, fn);
		v->kind = CP_VIEW_CALLERS;
		break;
	}
	v->sel = 0;
	return cp_view_refresh(v, true);
}

int cp_view_zoom_out(struct cp_view *v)
{
	if (v->kind == CP_VIEW_CALLERS) {
		v->kind = v->back;
	} else if (v->zoom_pid || v->zoom_tid) {
		v->kind = v->zoom_tid ? CP_VIEW_THREADS : CP_VIEW_PROCESSES;
		v->zoom_pid = v->zoom_tid = 0;
		v->zoom_what[0] = 0;
	} else {
		return 1;
	}
	v->sel = 0;
	return cp_view_refresh(v, true);
}

int cp_view_pick_focus(struct cp_view *v, const char *function)
{
	int64_t best = -1, part = -1;
	int err;

	snprintf(v->function, sizeof(v->function), "%s", function ? function : "");
	if (v->kind != CP_VIEW_CALLERS)
		return cp_view_refresh(v, true);
	v->focus_name[0] = 0;
	if ((err = aggregate(v)))
		return err;
	for (uint32_t i = 0; i < v->agg->nfns; i++) {
		const struct cp_agg_fn *f = &v->agg->fns[i];
		const char *name = cp_aggregate_str(v->agg, f->name);

		if (!function) {
			if (best < 0 || f->self > v->agg->fns[best].self)
				best = i;
		} else if (!strcmp(name, function)) {
			if (best < 0 || f->total > v->agg->fns[best].total)
				best = i;
		} else if (strstr(name, function) && (part < 0 || f->total > v->agg->fns[part].total)) {
			part = i;
		}
	}
	if (best < 0)
		best = part;
	if (best >= 0)
		focus_on(v, best);
	return cp_view_refresh(v, true);
}

int64_t cp_view_next_delay(int64_t delay, int dir)
{
	static const int64_t delays[] = { 250000000LL, 500000000LL, 1000000000LL, 2000000000LL, 3000000000LL,
					  5000000000LL, 10000000000LL };
	size_t n = sizeof(delays) / sizeof(*delays), i;

	for (i = 0; i < n && delays[i] < delay; i++)
		;
	if (dir > 0)
		i = i + 1 < n ? (delays[i] == delay ? i + 1 : i) : n - 1;
	else
		i = i > 0 ? i - 1 : 0;
	return delays[i < n ? i : n - 1];
}

/* ---- live ---- */

int cp_view_set_value(struct cp_view *v, const char *type)
{
	char old[sizeof(v->value)], unit[sizeof(v->unit)];
	bool samples = !strcmp(type, "samples");

	if (strlen(type) >= sizeof(v->value))
		return cp_error(EINVAL, "no sample type '%s'", type);
	for (size_t i = 0; i < v->nring; i++)
		if (cp_profile_sample_index(v->ring[i], type) < 0)
			return cp_error(EINVAL, "no sample type '%s'", type);
	memcpy(old, v->value, sizeof(old));
	memcpy(unit, v->unit, sizeof(unit));
	snprintf(v->value, sizeof(v->value), "%s", samples ? "" : type);
	snprintf(v->unit, sizeof(v->unit), "%s", samples ? "" : "nanoseconds");
	if (cp_view_refresh(v, true)) {
		memcpy(v->value, old, sizeof(old));
		memcpy(v->unit, unit, sizeof(unit));
		return cp_view_refresh(v, true) ? -ENOMEM : cp_error(ENOMEM, "out of memory");
	}
	return 0;
}

int cp_view_live_add(struct cp_view *v, struct cp_profile *p, int64_t interval_ns, size_t keep)
{
	v->last_interval = interval_ns;
	v->last_samples = (uint64_t)cp_profile_total(p, 0);
	v->rates[v->nrates++ % CP_VIEW_RATES] = interval_ns > 0 ? (double)v->last_samples * 1e9 / (double)interval_ns : 0;
	if (v->nrates >= 2 * CP_VIEW_RATES)
		v->nrates -= CP_VIEW_RATES;
	if (v->paused) {
		cp_profile_free(p);
		return 0;
	}
	if (keep < 1)
		keep = 1;
	if (cp_grow((void **)&v->ring, &v->ringcap, keep, sizeof(*v->ring))) {
		cp_profile_free(p);
		return nomem();
	}
	while (v->nring >= keep) {
		cp_profile_free(v->ring[0]);
		memmove(v->ring, v->ring + 1, (v->nring - 1) * sizeof(*v->ring));
		v->nring--;
	}
	v->ring[v->nring++] = p;
	return cp_view_refresh(v, true);
}

int cp_view_live_clear(struct cp_view *v)
{
	for (size_t i = 0; i < v->nring; i++)
		cp_profile_free(v->ring[i]);
	v->nring = 0;
	return cp_view_refresh(v, true);
}

/* ---- history ---- */

static int comm_cmp(const void *a, const void *b)
{
	const struct cp_view_comm *x = a, *y = b;

	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : strcmp(x->comm, y->comm);
}

/* Adds pid's name to v->comms (then sorted by comms_sort). */
static int comm_add(struct cp_view *v, const char *pid, const char *comm)
{
	char *end;
	unsigned long n = strtoul(pid, &end, 10);

	if (!*pid || *end || n > UINT32_MAX || !*comm)
		return 0;
	if (cp_grow((void **)&v->comms, &v->comms_cap, v->ncomms + 1, sizeof(*v->comms)) ||
	    !(v->comms[v->ncomms].comm = strdup(comm)))
		return nomem();
	v->comms[v->ncomms++].pid = (uint32_t)n;
	return 0;
}

/* Sorts v->comms[from..] by pid, one name each (the least, when they differ). */
static void comms_sort(struct cp_view *v, size_t from)
{
	struct cp_view_comm *c;
	size_t n = v->ncomms - from, k = 0;

	if (!n)
		return;
	c = v->comms + from;
	cp_qsort(c, n, sizeof(*c), comm_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && c[k - 1].pid == c[i].pid)
			free(c[i].comm);
		else
			c[k++] = c[i];
	}
	v->ncomms = from + k;
}

/* the pid label of label set id of p, or NULL */
static const char *labelset_pid(const struct cp_profile *p, uint32_t id)
{
	const struct cp_span *ls = &p->labelsets[id];

	for (uint32_t j = 0; j < ls->len; j++) {
		const struct cp_label *l = &p->labels[ls->off + j];

		if (l->str && !strcmp(cp_profile_string(p, l->key), "pid"))
			return cp_profile_string(p, l->str);
	}
	return NULL;
}

/* Names the processes of the window's groups by comm from their samples'
 * pid labels (after the series' names).  1 when a sample has no pid (a
 * series per process), 0 when all have one; or -ENOMEM. */
static int window_comms(struct cp_view *v)
{
	int lacks = 0, err = 0;

	for (size_t i = 0; !err && i < v->nres; i++) {
		const struct cp_profile *p = v->res[i].profile;
		const char *last = NULL;

		/* (a selection's label sets are those of its samples) */
		for (uint32_t k = 0; p && !err && k < p->nlabelsets; k++) {
			const char *pid = labelset_pid(p, k);

			if (pid && (!last || strcmp(pid, last)))
				err = comm_add(v, pid, v->res[i].group);
			last = pid ? pid : last;
		}
		for (uint32_t k = 0; p && !lacks && k < p->nsamples; k++)
			lacks = !labelset_pid(p, p->samples[k].labels);
	}
	if (err)
		return err;
	comms_sort(v, v->ncomms_series);
	return lacks;
}

/* The window's profiles: one per comm, each sample with its pid (series
 * per program); where some series carry pid and a sample has none, one per
 * pid, named by the series' comm or, for the processes of series per
 * program, by the comm they had in the first selection. */
static int history_load(struct cp_view *v)
{
	struct cp_store_query q = { v->selector, v->from + (int64_t)v->win * v->window, 0, "comm", NULL, true };
	int err;

	q.to = q.from + v->window;
	cp_store_results_free(v->res, v->nres);
	v->res = NULL;
	v->nres = 0;
	for (size_t i = v->ncomms_series; i < v->ncomms; i++)
		free(v->comms[i].comm);
	v->ncomms = v->ncomms_series;
	v->by_pid = false;
	err = cp_store_select(v->store, &q, &v->res, &v->nres);
	if (!err && v->pid_series && (err = window_comms(v)) > 0) {
		cp_store_results_free(v->res, v->nres);
		v->res = NULL;
		v->nres = 0;
		q.group_by = "pid";
		v->by_pid = true;
		err = cp_store_select(v->store, &q, &v->res, &v->nres);
	}
	if (!err && v->nres && v->res[0].profile && v->res[0].profile->ntypes)
		snprintf(v->unit, sizeof(v->unit), "%s",
			 cp_profile_string(v->res[0].profile, v->res[0].profile->sample_types[0].unit));
	return err;
}

/* Whether some series carry pid, and their processes' names (their comm). */
static int history_comms(struct cp_view *v)
{
	struct cp_store_series *ser = NULL;
	size_t nser = 0;
	int err;

	if ((err = cp_store_series(v->store, v->selector, &ser, &nser)))
		return err;
	v->pid_series = false;
	for (size_t i = 0; !err && i < nser; i++) {
		const char *pid = NULL, *comm = NULL;

		for (size_t j = 0; j < ser[i].nlabels; j++) {
			if (!strcmp(ser[i].names[j], "pid"))
				pid = ser[i].values[j];
			else if (!strcmp(ser[i].names[j], "comm"))
				comm = ser[i].values[j];
		}
		v->pid_series |= pid != NULL;
		if (pid && comm)
			err = comm_add(v, pid, comm);
	}
	cp_store_series_free(ser, nser);
	if (!err)
		comms_sort(v, 0);
	v->ncomms_series = v->ncomms;
	return err;
}

/* The selector: type, and pid one of pids. */
static int history_selector(struct cp_view *v, const char *type, const uint32_t *pids, size_t npids)
{
	char (*ids)[16] = NULL;
	const char **vals = NULL;
	int err;

	if ((err = cp_selector_parse(type ? type : "cpu", &v->selector)) || !npids)
		return err;
	ids = calloc(npids, sizeof(*ids));
	vals = calloc(npids, sizeof(*vals));
	for (size_t i = 0; ids && vals && i < npids; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%u", pids[i]);
		vals[i] = ids[i];
	}
	err = ids && vals ? cp_selector_add_any(v->selector, "pid", vals, npids) : nomem();
	free(ids);
	free(vals);
	return err;
}

int cp_view_history_open(struct cp_view *v, struct cp_store *store, const char *type, const uint32_t *pids,
			 size_t npids, int64_t from, int64_t to, int64_t window)
{
	struct cp_store_query q;
	struct cp_buckets b;
	char *tname = NULL;
	int err;

	history_clear(v);
	v->history = true;
	v->store = store;
	if ((err = history_selector(v, type, pids, npids)))
		return err;
	if (!window) {
		window = cp_buckets_default_step(from, to);
		if (window < 10000000000LL)
			window = 10000000000LL;
	}
	v->window = window;
	/* the windows are the buckets of --over-time: aligned to multiples of the
	 * window since the epoch, the first holds from, the last to */
	q = (struct cp_store_query){ v->selector, from, to, NULL, NULL, false };
	if ((err = cp_store_over_time(store, &q, window, &v->totals, &b, &tname)))
		return err;
	free(tname);
	v->window = b.step; /* raised to the store's resolution of the range when finer */
	v->from = b.start;
	v->nwin = b.n;
	v->win = v->nwin - 1;
	/* start at the newest window with data */
	while (v->win > 0 && !v->totals[v->win])
		v->win--;
	if ((err = history_comms(v)) || (err = history_load(v)))
		return err;
	return cp_view_refresh(v, true);
}

int cp_view_history_step(struct cp_view *v, int dir)
{
	int err;

	if (!v->history || (dir < 0 && v->win == 0) || (dir > 0 && v->win + 1 >= v->nwin))
		return 1;
	v->win = dir < 0 ? v->win - 1 : v->win + 1;
	if ((err = history_load(v)))
		return err;
	return cp_view_refresh(v, true);
}
