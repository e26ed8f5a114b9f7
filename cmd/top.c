/* SPDX-License-Identifier: MIT */
/* cprof top: a live view of where the CPU goes (the same BPF sampler as
 * record), or of stored history stepped through in time windows; on the
 * terminal with ncurses, or as plain tables with --stdio. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/launch.h"
#include "../lib/recorder.h"
#include "../lib/regex.h"
#include "../lib/render/render.h"
#include "../lib/selector.h"
#include "../lib/topagg.h"
#include "../lib/util.h"
#include "cmd.h"

enum { OPT_CGROUP = 300, OPT_IDLE, OPT_NO_KERNEL, OPT_NO_USER, OPT_DEBUGINFO, OPT_STDIO, OPT_FROM_STORE,
       OPT_VIEW, OPT_FILTER, OPT_FUNCTION, OPT_TYPE, OPT_WINDOW, OPT_LIMIT };

static const struct option options[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "freq", required_argument, NULL, 'F' },
	{ "delay", required_argument, NULL, 'd' },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "iterations", required_argument, NULL, 'n' },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "sort", required_argument, NULL, 's' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "function", required_argument, NULL, OPT_FUNCTION },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
	{ "no-user", no_argument, NULL, OPT_NO_USER },
	{ "debuginfo-path", required_argument, NULL, OPT_DEBUGINFO },
	{ "from-store", no_argument, NULL, OPT_FROM_STORE },
	{ "type", required_argument, NULL, OPT_TYPE },
	STORE_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_top(int argc, char **argv);

const struct cmd cmd_top = {
	"top", "a live view of where the CPU goes, or of stored history", run_top, options, "+ap:F:d:n:s:h",
	"usage: cprof top [OPTIONS] [--all | -p PID[,PID...] | --cgroup PATH | -- CMD [ARGS...]]\n"
	"       cprof top --from-store [--since DUR] [--data DIR | --remote URL] [OPTIONS]\n"
	"\n"
	"Sample on-CPU stacks with eBPF, as cprof record does, and show which\n"
	"functions, processes and threads use the CPU, redrawn every second: a\n"
	"header with totals, then a table.  With --from-store (or --remote) it\n"
	"browses stored profiles instead, a time window at a time.  Keys: ? shows\n"
	"them all; q quits.  Live sampling needs root, or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"What to sample (default: the whole system):\n"
	"  -a, --all               the whole system (idle left out)\n"
	"  -p, --pid PID[,PID]     these processes (all their threads)\n"
	"      --cgroup PATH       tasks in this cgroup v2 directory and below\n"
	"  -- CMD [ARGS]           run CMD and sample it and its children\n"
	"  -F, --freq HZ           samples per second per CPU (default 99)\n"
	"      --idle              keep samples of the idle task (swapper)\n"
	"      --debuginfo-path P  where separate debug files are looked for\n"
	"\n"
	"History:\n"
	"      --from-store        browse the store instead of sampling; arrow keys\n"
	"                          left and right step through the time windows\n"
	"      --type SELECTOR     which profiles (default: cpu)\n"
	STORE_USAGE
	"\n"
	"Display:\n"
	"  -d, --delay DUR         refresh every DUR (default 1s; + and - change it)\n"
	"      --window DUR        live: the table covers the last DUR (default 10s);\n"
	"                          history: the length of a window (default: a 60th\n"
	"                          of the range, at least 10s)\n"
	"  -n, --iterations N      stop after N refreshes\n"
	"      --stdio             print the table to standard output at each refresh\n"
	"                          instead of drawing on the terminal\n"
	"      --view VIEW         functions (default), processes, threads, or callers\n"
	"                          (the callers and callees of --function, else of\n"
	"                          the function with the most self)\n"
	"  -s, --sort KEY          self (default), total or name\n"
	"      --filter REGEX      only rows whose name matches (PCRE2; / on the screen)\n"
	"      --function NAME     the function of --view callers\n"
	"      --limit N           rows of --stdio tables (default 25; 0: all)\n"
	"      --no-kernel         leave kernel frames out (k on the screen)\n"
	"      --no-user           leave user frames out (u on the screen)\n"
	"  -h, --help              show this help\n",
};

enum view { V_FUNCTIONS, V_PROCESSES, V_THREADS, V_CALLERS, V_COUNT };
static const char *const view_names[] = { "functions", "processes", "threads", "callers" };
enum sort { S_SELF, S_TOTAL, S_NAME };
static const char *const sort_names[] = { "self", "total", "name" };

struct row {
	uint8_t kind; /* V_*; in the callers view: 0 caller, 1 callee, 2 the function itself */
	uint32_t idx;
};

#define RATES 512

struct top {
	/* options */
	int freq, iterations, limit;
	bool all, idle, stdio, history, nothing_else;
	const char *cgroup, *debuginfo, *type, *function;
	uint32_t *pids;
	size_t npids;
	char **cmd;
	int64_t delay, window;
	struct store_args sa;
	/* live */
	struct cp_recorder *rec;
	struct cp_profile **ring;
	size_t ringcap, nring;
	uint64_t dropped, dropped_last;
	double rates[RATES];
	size_t nrates;
	int ncpus;
	struct cp_launch child; /* -- CMD */
	/* history */
	struct cp_selector *sel;
	int64_t hfrom, hto;
	size_t nwin, win;
	int64_t *totals;
	struct cp_store_result *res;
	size_t nres;
	struct pidcomm { uint32_t pid; char *comm; } *comms;
	size_t ncomms;
	char unit[64];
	/* what is shown */
	enum view view, back_view;
	enum sort sort;
	bool no_kernel, no_user, paused;
	uint32_t zoom_pid, zoom_tid;
	char zoom_what[96];
	char focus_name[512], focus_bin[256];
	char filter[256];
	struct cp_regex *re;       /* the row filter, or NULL */
	struct cp_regex_run *rerun; /* its matching state: limits, a time budget per rebuild of the rows */
	bool re_costly;            /* the filter reached a limit on the last rebuild */
	struct cp_topagg *agg;
	struct row *rows;
	size_t nrows, rowcap;
	enum view rows_view; /* the view the rows were built for */
	long sel_row, first_row;
	int64_t last_interval; /* ns the last live interval lasted */
	uint64_t last_samples;
	/* the screen */
	bool tui, utf8, help, prompt;
	char input[256];
	size_t ninput;
	char msg[256];
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}


static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- filter ---- */

/* Compiles the row filter (smart case: caseless unless it has a capital). */
static int set_filter(struct top *t, const char *re, char *why, size_t whylen)
{
	struct cp_regex *code = NULL;
	char m[128];
	size_t off;
	int err;

	if (re[0]) {
		bool upper = false;

		for (const char *c = re; *c; c++)
			upper |= *c >= 'A' && *c <= 'Z';
		if ((err = cp_regex_compile(re, upper ? 0 : CP_REGEX_CASELESS, &code, m, sizeof(m), &off))) {
			if (err == -ENOMEM)
				snprintf(why, whylen, "out of memory");
			else
				snprintf(why, whylen, "bad filter '%s': %s at offset %zu", re, m, off);
			return err;
		}
	}
	cp_regex_free(t->re);
	t->re = code;
	snprintf(t->filter, sizeof(t->filter), "%s", re);
	return 0;
}

/* Does the filter match s?  A filter too costly matches nothing (the screen says so). */
static bool matches(struct top *t, const char *s)
{
	int hit;

	if (!t->re)
		return true;
	if ((hit = cp_regex_match(t->rerun, t->re, s, strlen(s))) < 0)
		t->re_costly = true;
	return hit > 0;
}

/* ---- aggregation and rows ---- */

static const char *comm_of(struct top *t, uint32_t pid)
{
	for (size_t i = 0; i < t->ncomms; i++)
		if (t->comms[i].pid == pid)
			return t->comms[i].comm;
	return NULL;
}

static int rebuild(struct top *t)
{
	struct cp_topagg_opts o = { t->no_kernel, t->no_user, t->zoom_pid, t->zoom_tid, NULL, NULL };
	struct cp_topagg *a;
	int err = 0;

	if (t->focus_name[0]) {
		o.focus_name = t->focus_name;
		o.focus_binary = t->focus_bin;
	}
	if (!(a = cp_topagg_new(&o)))
		return -ENOMEM;
	if (t->history) {
		for (size_t i = 0; !err && i < t->nres; i++) {
			const struct cp_profile *p = t->res[i].profile;
			char *end;
			unsigned long pid = strtoul(t->res[i].group, &end, 10);

			if (*end || pid > UINT32_MAX)
				pid = 0;
			if (p && p->ntypes)
				err = cp_topagg_add(a, p, 0, (uint32_t)pid, comm_of(t, (uint32_t)pid));
		}
	} else {
		for (size_t i = 0; !err && i < t->nring; i++)
			err = cp_topagg_add(a, t->ring[i], 0, 0, NULL);
	}
	if (err) {
		cp_topagg_free(a);
		return err;
	}
	cp_topagg_free(t->agg);
	t->agg = a;
	return 0;
}

static struct top *sort_ctx;

static int cmp_name(uint32_t a, uint32_t b)
{
	return strcmp(cp_topagg_str(sort_ctx->agg, a), cp_topagg_str(sort_ctx->agg, b));
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b ? 1 : 0;
}

static int row_cmp(const void *x, const void *y)
{
	const struct row *ra = x, *rb = y;
	const struct cp_topagg *a = sort_ctx->agg;
	enum sort s = sort_ctx->sort;
	int c = 0;

	if (ra->kind != rb->kind)
		return ra->kind == 2 ? -1 : rb->kind == 2 ? 1 : (int)ra->kind - (int)rb->kind;
	switch (sort_ctx->view) {
	case V_FUNCTIONS: {
		const struct cp_top_fn *fa = &a->fns[ra->idx], *fb = &a->fns[rb->idx];

		if (s == S_NAME)
			c = cmp_name(fa->name, fb->name);
		else if (s == S_TOTAL)
			c = cmp_i64(fa->total, fb->total) ? cmp_i64(fa->total, fb->total) : cmp_i64(fa->self, fb->self);
		else
			c = cmp_i64(fa->self, fb->self) ? cmp_i64(fa->self, fb->self) : cmp_i64(fa->total, fb->total);
		return c ? c : cmp_name(fa->name, fb->name);
	}
	case V_PROCESSES: {
		const struct cp_top_proc *pa = &a->procs[ra->idx], *pb = &a->procs[rb->idx];

		c = s == S_NAME ? cmp_name(pa->comm, pb->comm) : cmp_i64(pa->value, pb->value);
		return c ? c : (pa->pid < pb->pid ? -1 : pa->pid > pb->pid);
	}
	case V_THREADS: {
		const struct cp_top_thread *ta = &a->threads[ra->idx], *tb = &a->threads[rb->idx];

		c = s == S_NAME ? cmp_name(ta->name, tb->name) : cmp_i64(ta->value, tb->value);
		return c ? c : (ta->tid < tb->tid ? -1 : ta->tid > tb->tid);
	}
	default: {
		const struct cp_top_edge *ea = ra->kind ? &a->callees[ra->idx] : &a->callers[ra->idx];
		const struct cp_top_edge *eb = rb->kind ? &a->callees[rb->idx] : &a->callers[rb->idx];

		c = s == S_NAME ? cmp_name(a->fns[ea->fn].name, a->fns[eb->fn].name) : cmp_i64(ea->value, eb->value);
		return c ? c : cmp_name(a->fns[ea->fn].name, a->fns[eb->fn].name);
	}
	}
}

static int push_row(struct top *t, uint8_t kind, uint32_t idx)
{
	if (t->nrows == t->rowcap) {
		size_t nc = t->rowcap ? t->rowcap * 2 : 256;
		struct row *n = realloc(t->rows, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->rows = n;
		t->rowcap = nc;
	}
	t->rows[t->nrows++] = (struct row){ kind, idx };
	return 0;
}

static int build_rows(struct top *t)
{
	const struct cp_topagg *a = t->agg;
	char buf[32];
	int err = 0;

	t->nrows = 0;
	cp_regex_run_reset(t->rerun); /* the filter's time budget is per rebuild */
	t->re_costly = false;
	switch (t->view) {
	case V_FUNCTIONS:
		for (uint32_t i = 0; !err && i < a->nfns; i++)
			if (a->fns[i].total && (matches(t, cp_topagg_str(a, a->fns[i].name)) ||
						matches(t, cp_topagg_str(a, a->fns[i].binary))))
				err = push_row(t, 0, i);
		break;
	case V_PROCESSES:
		for (uint32_t i = 0; !err && i < a->nprocs; i++) {
			snprintf(buf, sizeof(buf), "%u", a->procs[i].pid);
			if (matches(t, cp_topagg_str(a, a->procs[i].comm)) || matches(t, buf))
				err = push_row(t, 0, i);
		}
		break;
	case V_THREADS:
		for (uint32_t i = 0; !err && i < a->nthreads; i++) {
			snprintf(buf, sizeof(buf), "%u", a->threads[i].tid);
			if (matches(t, cp_topagg_str(a, a->threads[i].name)) ||
			    matches(t, cp_topagg_str(a, a->threads[i].comm)) || matches(t, buf))
				err = push_row(t, 0, i);
		}
		break;
	default:
		if (t->focus_name[0] && cp_topagg_find(a, t->focus_name, t->focus_bin) >= 0)
			err = push_row(t, 2, (uint32_t)cp_topagg_find(a, t->focus_name, t->focus_bin));
		/* all of them: the filter chose the function */
		for (uint32_t i = 0; !err && i < a->ncallers; i++)
			err = push_row(t, 0, i);
		for (uint32_t i = 0; !err && i < a->ncallees; i++)
			err = push_row(t, 1, i);
		break;
	}
	if (err)
		return err;
	t->rows_view = t->view;
	sort_ctx = t;
	if (t->nrows)
		qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
	return 0;
}

/* The function a row stands for (-1: none). */
static int64_t row_fn(const struct top *t, const struct row *r)
{
	if (t->view == V_FUNCTIONS)
		return r->idx;
	if (t->view == V_CALLERS)
		return r->kind == 2 ? (int64_t)r->idx : r->kind ? t->agg->callees[r->idx].fn : t->agg->callers[r->idx].fn;
	return -1;
}

/* What identifies the selected row, to find it again after a refresh. */
struct rowkey {
	char name[512], bin[256];
	uint32_t id;
	uint8_t kind;
	bool set;
};

static void row_key(const struct top *t, struct rowkey *k)
{
	const struct row *r;
	int64_t fn;

	k->set = false;
	if (!t->agg || t->rows_view != t->view || t->sel_row < 0 || (size_t)t->sel_row >= t->nrows)
		return;
	r = &t->rows[t->sel_row];
	k->set = true;
	k->kind = r->kind;
	fn = row_fn(t, r);
	if (fn >= 0) {
		snprintf(k->name, sizeof(k->name), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].name));
		snprintf(k->bin, sizeof(k->bin), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].binary));
	} else {
		k->id = t->view == V_PROCESSES ? t->agg->procs[r->idx].pid : t->agg->threads[r->idx].tid;
	}
}

static void find_key(struct top *t, const struct rowkey *k)
{
	if (!k->set)
		return;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		int64_t fn = row_fn(t, r);
		bool same;

		if (r->kind != k->kind)
			continue;
		if (fn >= 0)
			same = !strcmp(cp_topagg_str(t->agg, t->agg->fns[fn].name), k->name) &&
			       !strcmp(cp_topagg_str(t->agg, t->agg->fns[fn].binary), k->bin);
		else
			same = (t->view == V_PROCESSES ? t->agg->procs[r->idx].pid : t->agg->threads[r->idx].tid) == k->id;
		if (same) {
			t->sel_row = (long)i;
			return;
		}
	}
}

/* Aggregate again (keep_agg: only the rows) and keep the selection. */
static int refresh_view(struct top *t, bool keep_agg)
{
	struct rowkey k;
	int err;

	row_key(t, &k);
	if (!keep_agg && (err = rebuild(t)))
		return err;
	if ((err = build_rows(t)))
		return err;
	find_key(t, &k);
	if (t->sel_row >= (long)t->nrows)
		t->sel_row = (long)t->nrows - 1;
	if (t->sel_row < 0)
		t->sel_row = 0;
	return 0;
}

/* ---- formatting, shared by the screen and --stdio ---- */

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static const char *fmt_value(const struct top *t, int64_t v, char *buf, size_t len)
{
	if (!t->history || !t->unit[0] || !strcmp(t->unit, "count")) {
		snprintf(buf, len, "%lld", (long long)v);
		return buf;
	}
	return cp_format_value(v, t->unit, buf, len);
}

static const char *proc_label(const struct top *t, const struct cp_top_fn *f, char *buf, size_t len)
{
	const char *comm = cp_topagg_str(t->agg, f->comm);

	if (f->nprocs > 1)
		snprintf(buf, len, "%s +%u more", comm[0] ? comm : "?", f->nprocs - 1);
	else if (f->pid)
		snprintf(buf, len, "%s[%u]", comm[0] ? comm : "?", f->pid);
	else
		snprintf(buf, len, "%s", comm);
	return buf;
}

/* Column widths for a line of w cells. */
struct cols {
	int name, bin, proc;
};

static struct cols layout(int w)
{
	struct cols c = { 0, 18, 20 };
	int fixed = 7 + 1 + 7 + 1 + 9 + 2; /* SELF% TOTAL% SAMPLES */

	if (w - fixed - c.bin - c.proc - 2 < 24)
		c.proc = 0;
	if (w - fixed - c.bin - c.proc - 2 < 24)
		c.bin = 0;
	c.name = w - fixed - (c.bin ? c.bin + 1 : 0) - (c.proc ? c.proc + 1 : 0);
	if (c.name < 8)
		c.name = 8;
	return c;
}

static void column_header(const struct top *t, char *buf, size_t len, int w)
{
	struct cols c = layout(w);
	const char *valname = t->history && t->unit[0] && strcmp(t->unit, "count") ? "VALUE" : "SAMPLES";

	switch (t->view) {
	case V_FUNCTIONS:
		snprintf(buf, len, "%7s %7s %9s  %-*s%s%-*s%s%s", "SELF%", "TOTAL%", valname, c.name, "FUNCTION",
			 c.bin ? " " : "", c.bin, c.bin ? "BINARY" : "", c.proc ? " " : "", c.proc ? "PROCESS" : "");
		break;
	case V_PROCESSES:
		snprintf(buf, len, "%7s %9s %8s %7s  %s", "CPU%", valname, "PID", "THREADS", "COMMAND");
		break;
	case V_THREADS:
		snprintf(buf, len, "%7s %9s %8s %8s  %-16s %s", "CPU%", valname, "TID", "PID", "THREAD", "PROCESS");
		break;
	default:
		snprintf(buf, len, "%7s %9s  %-*s%s%s", "SHARE%", valname, c.name, "CALLERS / FUNCTION / CALLEES",
			 c.bin ? " " : "", c.bin ? "BINARY" : "");
		break;
	}
}

static void format_row(const struct top *t, const struct row *r, char *buf, size_t len, int w)
{
	const struct cp_topagg *a = t->agg;
	struct cols c = layout(w);
	char v[32], p[64];

	switch (t->view) {
	case V_FUNCTIONS: {
		const struct cp_top_fn *f = &a->fns[r->idx];

		snprintf(buf, len, "%6.2f%% %6.2f%% %9s  %-*.*s%s%-*.*s%s%.*s", pct(f->self, a->total),
			 pct(f->total, a->total), fmt_value(t, f->self, v, sizeof(v)), c.name, c.name,
			 cp_topagg_str(a, f->name), c.bin ? " " : "", c.bin, c.bin, c.bin ? cp_topagg_str(a, f->binary) : "",
			 c.proc ? " " : "", c.proc, c.proc ? proc_label(t, f, p, sizeof(p)) : "");
		break;
	}
	case V_PROCESSES: {
		const struct cp_top_proc *pr = &a->procs[r->idx];

		snprintf(buf, len, "%6.2f%% %9s %8u %7u  %s", pct(pr->value, a->total),
			 fmt_value(t, pr->value, v, sizeof(v)), pr->pid, pr->nthreads, cp_topagg_str(a, pr->comm));
		break;
	}
	case V_THREADS: {
		const struct cp_top_thread *th = &a->threads[r->idx];

		snprintf(buf, len, "%6.2f%% %9s %8u %8u  %-16s %s", pct(th->value, a->total),
			 fmt_value(t, th->value, v, sizeof(v)), th->tid, th->pid, cp_topagg_str(a, th->name),
			 cp_topagg_str(a, th->comm));
		break;
	}
	default: {
		const struct cp_top_fn *f;
		int64_t value;
		const char *mark;

		if (r->kind == 2) {
			char nm[600];

			f = &a->fns[r->idx];
			snprintf(nm, sizeof(nm), "%s  (self %.2f%%)", cp_topagg_str(a, f->name), pct(a->focus_self, a->focus_total));
			snprintf(buf, len, "%6.2f%% %9s  %-*.*s%s%.*s", 100.0, fmt_value(t, a->focus_total, v, sizeof(v)), c.name,
				 c.name, nm, c.bin ? " " : "", c.bin, c.bin ? cp_topagg_str(a, f->binary) : "");
			break;
		} else {
			const struct cp_top_edge *e = r->kind ? &a->callees[r->idx] : &a->callers[r->idx];

			f = &a->fns[e->fn];
			value = e->value;
			mark = r->kind ? "  -> " : "  <- ";
		}
		snprintf(buf, len, "%6.2f%% %9s  %s%-*.*s%s%.*s", pct(value, a->focus_total),
			 fmt_value(t, value, v, sizeof(v)), mark, c.name - (int)strlen(mark), c.name - (int)strlen(mark),
			 cp_topagg_str(a, f->name), c.bin ? " " : "", c.bin, c.bin ? cp_topagg_str(a, f->binary) : "");
		break;
	}
	}
}

/* A sparkline of values into buf: one cell each (UTF-8 blocks or ASCII). */
static void sparkline(const struct top *t, const double *v, size_t n, char *buf, size_t len)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587",
					      "\u2588" };
	static const char ascii[] = "_.-:=+*#";
	double max = 0;
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int lvl = max > 0 ? (int)(v[i] / max * 7.999) : 0;

		if (lvl < 0)
			lvl = 0;
		if (v[i] <= 0 && t->utf8) {
			if (o + 2 >= len)
				break;
			buf[o++] = ' ';
		} else if (t->utf8) {
			if (o + 4 >= len)
				break;
			memcpy(buf + o, blocks[lvl], 3);
			o += 3;
		} else {
			if (o + 2 >= len)
				break;
			buf[o++] = v[i] <= 0 ? ' ' : ascii[lvl];
		}
	}
	buf[o] = 0;
}

static const char *clock_str(int64_t ns, char *buf, size_t len, bool date)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	localtime_r(&s, &tm);
	strftime(buf, len, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
	return buf;
}

static const char *dur_str(int64_t ns, char *buf, size_t len)
{
	if (ns % 3600000000000LL == 0)
		snprintf(buf, len, "%lldh", (long long)(ns / 3600000000000LL));
	else if (ns % 60000000000LL == 0)
		snprintf(buf, len, "%lldm", (long long)(ns / 60000000000LL));
	else if (ns % 1000000000LL == 0)
		snprintf(buf, len, "%llds", (long long)(ns / 1000000000LL));
	else if (ns < 1000000000LL && ns % 1000000LL == 0)
		snprintf(buf, len, "%lldms", (long long)(ns / 1000000LL));
	else
		snprintf(buf, len, "%.2fs", (double)ns / 1e9);
	return buf;
}

static const char *target_str(const struct top *t, char *buf, size_t len)
{
	if (t->history)
		snprintf(buf, len, "%s", t->type ? t->type : "cpu");
	else if (t->cmd)
		snprintf(buf, len, "%s", t->cmd[0]);
	else if (t->npids)
		snprintf(buf, len, "pid %u%s", t->pids[0], t->npids > 1 ? ",..." : "");
	else if (t->cgroup)
		snprintf(buf, len, "cgroup %s", t->cgroup);
	else
		snprintf(buf, len, "whole system");
	return buf;
}

/* The header lines (title, totals, context). */
static void header_lines(const struct top *t, char lines[3][512])
{
	char a[64], b[64], c[64], d[128], tg[128];
	const struct cp_topagg *g = t->agg;

	if (t->history) {
		int64_t wf = t->hfrom + (int64_t)t->win * t->window;

		snprintf(lines[0], 512, "cprof top - history of %s: %s - %s (window %zu of %zu, %s each)",
			 target_str(t, tg, sizeof(tg)), clock_str(wf, a, sizeof(a), true),
			 clock_str(wf + t->window, b, sizeof(b), false), t->win + 1, t->nwin, dur_str(t->window, c, sizeof(c)));
		c[0] = 0;
		bool count = !t->unit[0] || !strcmp(t->unit, "count");
		double per_s = g ? (double)g->total * 1e9 / (double)t->window : 0;

		if (count)
			snprintf(d, sizeof(d), "samples %lld   samples/s %.1f", (long long)(g ? g->total : 0), per_s);
		else
			snprintf(d, sizeof(d), "total %s", fmt_value(t, g ? g->total : 0, c, sizeof(c)));
		snprintf(lines[1], 512, "%s   processes %u   threads %u   frames: %s", d, g ? g->nprocs : 0,
			 g ? g->nthreads : 0, t->no_kernel ? "user" : t->no_user ? "kernel" : "kernel+user");
	} else {
		snprintf(lines[0], 512, "cprof top - %s at %d Hz, every %s, the last %s%s   %s",
			 target_str(t, tg, sizeof(tg)), t->freq, dur_str(t->delay, a, sizeof(a)),
			 dur_str(t->window, b, sizeof(b)), t->paused ? "   [PAUSED]" : "",
			 clock_str(wall_ns(), c, sizeof(c), false));
		snprintf(lines[1], 512,
			 "samples/s %.0f   CPUs %d   processes %u   threads %u   dropped %llu   frames: %s",
			 t->last_interval > 0 ? (double)t->last_samples * 1e9 / (double)t->last_interval : 0.0, t->ncpus,
			 g ? g->nprocs : 0, g ? g->nthreads : 0, (unsigned long long)t->dropped,
			 t->no_kernel ? "user" : t->no_user ? "kernel" : "kernel+user");
	}
	snprintf(lines[2], 512, "view: %s   sort: %s%s%s%s%s%s", view_names[t->view], sort_names[t->sort],
		 t->filter[0] ? "   filter: /" : "", t->filter, t->filter[0] ? "/" : "", t->zoom_what[0] ? "   zoom: " : "",
		 t->zoom_what);
}

/* ---- --stdio ---- */

static int print_stdio(struct top *t)
{
	char lines[3][512], buf[1024];
	size_t n = t->limit && (size_t)t->limit < t->nrows ? (size_t)t->limit : t->nrows;

	header_lines(t, lines);
	printf("%s\n%s\n", lines[0], lines[1]);
	if (t->history && t->nwin > 1) {
		double *v = calloc(t->nwin, sizeof(*v));

		if (v) {
			for (size_t i = 0; i < t->nwin; i++)
				v[i] = (double)t->totals[i];
			sparkline(t, v, t->nwin, buf, sizeof(buf));
			printf("over time: |%s|\n", buf);
			free(v);
		}
	}
	printf("%s\n", lines[2]);
	if (t->view == V_CALLERS && t->focus_name[0])
		printf("function: %s (%s)\n", t->focus_name, t->focus_bin);
	column_header(t, buf, sizeof(buf), 120);
	printf("%s\n", buf);
	for (size_t i = 0; i < n; i++) {
		format_row(t, &t->rows[i], buf, sizeof(buf), 120);
		printf("%s\n", buf);
	}
	if (t->view == V_CALLERS && !t->focus_name[0] && t->function && t->agg && t->agg->nsamples)
		printf("(no function named %s, nor one whose name contains it)\n", t->function);
	else if (!t->nrows)
		printf("(%s)\n", t->re_costly ? "the filter is too costly to match: it matches nothing" :
				  t->filter[0] ? "no samples match the filter" : "no samples");
	printf("\n");
	fflush(stdout);
	return ferror(stdout) ? -EIO : 0;
}

/* ---- the screen ---- */

static void put_line(int y, const char *s, int attr)
{
	attrset(attr);
	move(y, 0);
	clrtoeol();
	addnstr(s, COLS);
	attrset(A_NORMAL);
}

static const char *const help_text[] = {
	"cprof top - keys",
	"",
	"  ?, h          this help (any key closes it)",
	"  q             quit",
	"  1 / 2 / 3     functions / processes / threads",
	"  4, c          callers and callees of the selected function",
	"  Tab           the next view",
	"  Enter         zoom: a process's or thread's functions, a function's",
	"                callers and callees, or follow a caller or callee",
	"  Esc, Bksp     back out of a zoom",
	"  s / t / n     sort by self / total / name",
	"  /             filter rows by regular expression (empty: none)",
	"  k / u         show or hide kernel / user frames",
	"  p, Space      pause (live)",
	"  + / -         refresh more or less often (live)",
	"  z             start the window afresh (live)",
	"  Left / Right  the previous / next time window (history)",
	"  Up, Down, PgUp, PgDn, Home, End   select a row",
	NULL,
};

static void draw(struct top *t)
{
	char lines[3][512], buf[2048];
	int y, body, top_y = 5;

	erase();
	if (LINES < 10 || COLS < 50) {
		snprintf(buf, sizeof(buf), "terminal too small (%dx%d): cprof top needs 50x10", COLS, LINES);
		mvaddnstr(0, 0, buf, COLS);
		refresh();
		return;
	}
	if (t->help) {
		for (y = 0; help_text[y] && y < LINES; y++)
			put_line(y, help_text[y], y == 0 ? A_BOLD : A_NORMAL);
		refresh();
		return;
	}
	header_lines(t, lines);
	put_line(0, lines[0], A_BOLD);
	put_line(1, lines[1], A_NORMAL);
	{
		double v[RATES];
		size_t n, w = (size_t)COLS > 24 ? (size_t)COLS - 24 : 1, cur = SIZE_MAX;
		const char *what;

		if (t->history) {
			size_t first = 0;

			n = t->nwin;
			if (n > w) { /* the part around the current window */
				first = t->win > w / 2 ? t->win - w / 2 : 0;
				if (first + w > n)
					first = n - w;
				n = w;
			}
			for (size_t i = 0; i < n; i++)
				v[i] = (double)t->totals[first + i];
			cur = t->win - first;
			what = "over time  ";
		} else {
			n = t->nrates < w ? t->nrates : w;
			n = n < RATES ? n : RATES;
			for (size_t i = 0; i < n; i++)
				v[i] = t->rates[(t->nrates - n + i) % RATES];
			what = "samples/s  ";
		}
		move(2, 0);
		clrtoeol();
		addstr(what);
		for (size_t i = 0; i < n; i++) {
			char cell[8];

			sparkline(t, &v[i], 1, cell, sizeof(cell));
			/* one value alone would be full height: scale against all */
			{
				double max = 0;

				for (size_t j = 0; j < n; j++)
					max = v[j] > max ? v[j] : max;
				if (max > 0) {
					double pair[2] = { v[i], max };

					sparkline(t, pair, 2, buf, sizeof(buf));
					snprintf(cell, sizeof(cell), "%.*s", t->utf8 ? (v[i] > 0 ? 3 : 1) : 1, buf);
				}
			}
			if (i == cur)
				attron(A_REVERSE);
			addstr(cell[0] ? cell : " ");
			if (i == cur)
				attroff(A_REVERSE);
		}
	}
	put_line(3, lines[2], A_NORMAL);
	column_header(t, buf, sizeof(buf), COLS);
	put_line(4, buf, A_REVERSE);
	body = LINES - top_y - 1;
	if (t->sel_row < t->first_row)
		t->first_row = t->sel_row;
	if (t->sel_row >= t->first_row + body)
		t->first_row = t->sel_row - body + 1;
	if (t->first_row < 0)
		t->first_row = 0;
	for (y = 0; y < body && (size_t)(t->first_row + y) < t->nrows; y++) {
		long i = t->first_row + y;

		format_row(t, &t->rows[i], buf, sizeof(buf), COLS);
		put_line(top_y + y, buf, i == t->sel_row ? A_REVERSE : A_NORMAL);
	}
	if (!t->nrows)
		put_line(top_y, t->re_costly ? "(the filter is too costly to match: it matches nothing)" :
				t->filter[0]  ? "(no rows match the filter)" : "(no samples yet)", A_DIM);
	if (t->prompt) {
		snprintf(buf, sizeof(buf), "filter (regex, Enter applies, Esc cancels): %.*s", (int)t->ninput, t->input);
		put_line(LINES - 1, buf, A_BOLD);
	} else {
		snprintf(buf, sizeof(buf), "%s", t->msg[0] ? t->msg : "? help   q quit   / filter   Enter zoom   Esc back");
		put_line(LINES - 1, buf, t->msg[0] ? A_BOLD : A_DIM);
	}
	refresh();
}

/* ---- history ---- */

static int hist_load(struct top *t)
{
	struct cp_store_query q = { t->sel, t->hfrom + (int64_t)t->win * t->window, 0, "pid" };
	int err;

	q.to = q.from + t->window;
	cp_store_results_free(t->res, t->nres);
	t->res = NULL;
	t->nres = 0;
	err = cp_store_select(t->sa.store, &q, &t->res, &t->nres);
	if (!err && t->nres && t->res[0].profile && t->res[0].profile->ntypes)
		snprintf(t->unit, sizeof(t->unit), "%s",
			 cp_profile_string(t->res[0].profile, t->res[0].profile->sample_types[0].unit));
	return err;
}

static int hist_open(struct top *t)
{
	struct cp_store_series *ser = NULL;
	struct cp_buckets b;
	size_t nser = 0;
	char *type = NULL;
	int err;
	struct cp_store_query q;

	if ((err = cp_selector_parse(t->type ? t->type : "cpu", &t->sel)))
		return err;
	if (t->npids) {
		/* -p: these processes' series */
		cp_selector_free(t->sel);
		t->sel = NULL;
		{
			char s[512];

			const char *ty = t->type ? t->type : "cpu";
			size_t n = strlen(ty);

			if (n && ty[n - 1] == '}') /* TYPE{...}: one more matcher */
				snprintf(s, sizeof(s), "%.*s%spid=\"%u\"}", (int)(n - 1), ty,
					 n >= 2 && ty[n - 2] == '{' ? "" : ", ", t->pids[0]);
			else
				snprintf(s, sizeof(s), "%s{pid=\"%u\"}", ty, t->pids[0]);
			if ((err = cp_selector_parse(s, &t->sel)))
				return err;
		}
	}
	t->hfrom = t->sa.t_from;
	t->hto = t->sa.t_to;
	if (!t->window) {
		t->window = cp_buckets_default_step(t->hfrom, t->hto);
		if (t->window < 10000000000LL)
			t->window = 10000000000LL;
	}
	/* the windows are the buckets of --over-time: aligned to multiples of the
	 * window since the epoch, the first holds --from, the last --to (now) */
	q = (struct cp_store_query){ t->sel, t->hfrom, t->hto, NULL };
	if ((err = cp_store_over_time(t->sa.store, &q, t->window, &t->totals, &b, &type)))
		return err;
	free(type);
	t->hfrom = b.start;
	t->nwin = b.n;
	t->win = t->nwin - 1;
	/* start at the newest window with data */
	while (t->win > 0 && !t->totals[t->win])
		t->win--;
	/* the processes' names, from the series labels */
	if ((err = cp_store_series(t->sa.store, t->sel, &ser, &nser)))
		return err;
	t->comms = calloc(nser + 1, sizeof(*t->comms));
	for (size_t i = 0; t->comms && i < nser; i++) {
		const char *pid = NULL, *comm = NULL;

		for (size_t j = 0; j < ser[i].nlabels; j++) {
			if (!strcmp(ser[i].names[j], "pid"))
				pid = ser[i].values[j];
			else if (!strcmp(ser[i].names[j], "comm"))
				comm = ser[i].values[j];
		}
		if (pid && comm && !comm_of(t, (uint32_t)strtoul(pid, NULL, 10))) {
			t->comms[t->ncomms].pid = (uint32_t)strtoul(pid, NULL, 10);
			if (!(t->comms[t->ncomms].comm = strdup(comm)))
				break;
			t->ncomms++;
		}
	}
	cp_store_series_free(ser, nser);
	if (!t->comms)
		return -ENOMEM;
	return hist_load(t);
}

/* ---- keys ---- */

static void set_msg(struct top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(struct top *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
}

static const int64_t delays[] = { 250000000LL, 500000000LL, 1000000000LL, 2000000000LL, 3000000000LL,
				  5000000000LL, 10000000000LL };

static void change_delay(struct top *t, int dir)
{
	size_t n = sizeof(delays) / sizeof(*delays), i;
	char b[32];

	for (i = 0; i < n && delays[i] < t->delay; i++)
		;
	if (dir > 0)
		i = i + 1 < n ? (delays[i] == t->delay ? i + 1 : i) : n - 1;
	else
		i = i > 0 ? i - 1 : 0;
	if (i >= n)
		i = n - 1;
	t->delay = delays[i];
	set_msg(t, "refresh every %s", dur_str(t->delay, b, sizeof(b)));
}

/* Enter: zoom into the selected row. */
static int zoom_in(struct top *t)
{
	const struct row *r;
	int64_t fn;

	if (!t->nrows)
		return 0;
	r = &t->rows[t->sel_row];
	switch (t->view) {
	case V_PROCESSES: {
		const struct cp_top_proc *p = &t->agg->procs[r->idx];

		t->zoom_pid = p->pid;
		t->zoom_tid = 0;
		snprintf(t->zoom_what, sizeof(t->zoom_what), "process %s[%u]", cp_topagg_str(t->agg, p->comm), p->pid);
		t->view = V_FUNCTIONS;
		break;
	}
	case V_THREADS: {
		const struct cp_top_thread *th = &t->agg->threads[r->idx];

		t->zoom_tid = th->tid;
		t->zoom_pid = th->pid;
		snprintf(t->zoom_what, sizeof(t->zoom_what), "thread %s[%u]", cp_topagg_str(t->agg, th->name), th->tid);
		t->view = V_FUNCTIONS;
		break;
	}
	default:
		fn = row_fn(t, r);
		if (fn < 0)
			return 0;
		if (t->view == V_FUNCTIONS)
			t->back_view = V_FUNCTIONS;
		snprintf(t->focus_name, sizeof(t->focus_name), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].name));
		snprintf(t->focus_bin, sizeof(t->focus_bin), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].binary));
		t->view = V_CALLERS;
		break;
	}
	t->sel_row = 0;
	t->first_row = 0;
	return refresh_view(t, false);
}

static int zoom_out(struct top *t)
{
	if (t->view == V_CALLERS) {
		t->view = t->back_view;
	} else if (t->zoom_pid || t->zoom_tid) {
		t->view = t->zoom_tid ? V_THREADS : V_PROCESSES;
		t->zoom_pid = t->zoom_tid = 0;
		t->zoom_what[0] = 0;
	} else {
		return 0;
	}
	t->sel_row = 0;
	return refresh_view(t, false);
}

/* The callers view of the selected function (or of the first row). */
static int show_callers(struct top *t)
{
	int64_t fn = t->nrows ? row_fn(t, &t->rows[t->sel_row]) : -1;

	if (fn < 0 && t->view != V_CALLERS) {
		/* from processes or threads: the function with the most self */
		for (uint32_t i = 0; i < t->agg->nfns; i++)
			if (fn < 0 || t->agg->fns[i].self > t->agg->fns[fn].self)
				fn = i;
	}
	if (fn < 0) {
		set_msg(t, "no function to show the callers of");
		return 0;
	}
	if (t->view != V_CALLERS)
		t->back_view = t->view;
	snprintf(t->focus_name, sizeof(t->focus_name), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].name));
	snprintf(t->focus_bin, sizeof(t->focus_bin), "%s", cp_topagg_str(t->agg, t->agg->fns[fn].binary));
	t->view = V_CALLERS;
	t->sel_row = 0;
	return refresh_view(t, false);
}

static int set_view(struct top *t, enum view v)
{
	if (v == V_CALLERS)
		return show_callers(t);
	t->view = v;
	t->sel_row = 0;
	t->first_row = 0;
	return refresh_view(t, true);
}

static int filter_key(struct top *t, int ch)
{
	if (ch == 27) { /* Esc */
		t->prompt = false;
		return 0;
	}
	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		char why[256];

		t->prompt = false;
		t->input[t->ninput] = 0;
		if (set_filter(t, t->input, why, sizeof(why)))
			set_msg(t, "%s", why);
		else
			set_msg(t, t->filter[0] ? "filter: /%s/" : "filter cleared", t->filter);
		t->sel_row = 0;
		return refresh_view(t, true);
	}
	if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (t->ninput)
			t->ninput--;
		return 0;
	}
	if (ch >= 32 && ch < 256 && t->ninput + 1 < sizeof(t->input))
		t->input[t->ninput++] = (char)ch;
	return 0;
}

/* One key. Returns 1 to quit, 0, or -errno. */
static int handle_key(struct top *t, int ch)
{
	long page = LINES > 8 ? LINES - 7 : 1;

	if (ch == KEY_RESIZE)
		return 0;
	if (t->prompt)
		return filter_key(t, ch);
	if (t->help) {
		t->help = false;
		return 0;
	}
	t->msg[0] = 0;
	switch (ch) {
	case 'q':
	case 'Q': return 1;
	case '?':
	case 'h': t->help = true; return 0;
	case '1': return set_view(t, V_FUNCTIONS);
	case '2': return set_view(t, V_PROCESSES);
	case '3': return set_view(t, V_THREADS);
	case '4':
	case 'c': return set_view(t, V_CALLERS);
	case '\t': return set_view(t, (enum view)((t->view + 1) % V_COUNT));
	case 's': t->sort = S_SELF; return refresh_view(t, true);
	case 't': t->sort = S_TOTAL; return refresh_view(t, true);
	case 'n': t->sort = S_NAME; return refresh_view(t, true);
	case '/':
		t->prompt = true;
		snprintf(t->input, sizeof(t->input), "%s", t->filter);
		t->ninput = strlen(t->input);
		return 0;
	case '\n':
	case '\r':
	case KEY_ENTER: return zoom_in(t);
	case 27:
	case KEY_BACKSPACE:
	case 127: return zoom_out(t);
	case 'k':
		t->no_kernel = !t->no_kernel;
		if (t->no_kernel)
			t->no_user = false;
		set_msg(t, "kernel frames %s", t->no_kernel ? "hidden" : "shown");
		return refresh_view(t, false);
	case 'u':
		t->no_user = !t->no_user;
		if (t->no_user)
			t->no_kernel = false;
		set_msg(t, "user frames %s", t->no_user ? "hidden" : "shown");
		return refresh_view(t, false);
	case 'p':
	case ' ':
		if (t->history) {
			set_msg(t, "history does not move: nothing to pause");
			return 0;
		}
		t->paused = !t->paused;
		set_msg(t, t->paused ? "paused: p resumes" : "resumed");
		return 0;
	case '+':
	case '=':
	case '-':
		if (t->history) {
			set_msg(t, "history: the window is --window (%lld s)", (long long)(t->window / 1000000000));
			return 0;
		}
		change_delay(t, ch == '-' ? 1 : -1);
		return 0;
	case 'z':
		if (!t->history) {
			for (size_t i = 0; i < t->nring; i++)
				cp_profile_free(t->ring[i]);
			t->nring = 0;
			set_msg(t, "the window starts afresh");
			return refresh_view(t, false);
		}
		return 0;
	case KEY_UP: t->sel_row--; break;
	case KEY_DOWN: t->sel_row++; break;
	case KEY_PPAGE: t->sel_row -= page; break;
	case KEY_NPAGE: t->sel_row += page; break;
	case KEY_HOME: t->sel_row = 0; break;
	case KEY_END: t->sel_row = (long)t->nrows - 1; break;
	case KEY_LEFT:
	case KEY_RIGHT:
	case '[':
	case ']':
		if (!t->history) {
			set_msg(t, "live: the time windows are for --from-store");
			return 0;
		}
		if ((ch == KEY_LEFT || ch == '[') && t->win > 0)
			t->win--;
		else if ((ch == KEY_RIGHT || ch == ']') && t->win + 1 < t->nwin)
			t->win++;
		else
			return 0;
		{
			int err = hist_load(t);

			if (err)
				return err;
		}
		return refresh_view(t, false);
	default:
		return 0;
	}
	if (t->sel_row >= (long)t->nrows)
		t->sel_row = (long)t->nrows - 1;
	if (t->sel_row < 0)
		t->sel_row = 0;
	return 0;
}

/* ---- options ---- */

static int parse_dur(const char *opt, const char *arg, int64_t min, int64_t *out)
{
	int64_t v = 0;

	if (arg[0] && strspn(arg, "0123456789.") == strlen(arg) && strlen(arg) < 12) {
		char *end;
		double d = strtod(arg, &end); /* plain seconds, as top -d takes */

		if (*end || d <= 0)
			return usage_error("top", "bad %s '%s': want e.g. 1s, 500ms or 2", opt, arg);
		v = (int64_t)(d * 1e9);
	} else if (cp_parse_duration(arg, &v)) {
		return usage_error("top", "bad %s '%s': want e.g. 1s, 500ms or 2", opt, arg);
	}
	if (v < min)
		return usage_error("top", "bad %s '%s': want %lld ms or more", opt, arg, (long long)(min / 1000000));
	*out = v;
	return EXIT_OK;
}

static int parse_options(struct top *t, int argc, char **argv)
{
	int opt, err;
	bool sampling_opt = false;

	while ((opt = next_option(&cmd_top, argc, argv)) != -1) {
		if (store_option(&t->sa, opt, optarg))
			continue;
		switch (opt) {
		case 'a': t->all = true; break;
		case 'p':
			if ((err = parse_pid_list("top", optarg, &t->pids, &t->npids)) != EXIT_OK)
				return err;
			break;
		case OPT_CGROUP: t->cgroup = optarg; sampling_opt = true; break;
		case 'F':
			if ((err = parse_freq("top", optarg, &t->freq)) != EXIT_OK)
				return err;
			sampling_opt = true;
			break;
		case 'd':
			if ((err = parse_dur("--delay", optarg, 100000000LL, &t->delay)) != EXIT_OK)
				return err;
			break;
		case OPT_WINDOW:
			if ((err = parse_dur("--window", optarg, 100000000LL, &t->window)) != EXIT_OK)
				return err;
			break;
		case 'n':
			if ((err = parse_count("top", "--iterations", optarg, &t->iterations)) != EXIT_OK)
				return err;
			if (t->iterations < 1)
				return usage_error("top", "bad --iterations '%s': want 1 or more", optarg);
			break;
		case OPT_LIMIT:
			if ((err = parse_count("top", "--limit", optarg, &t->limit)) != EXIT_OK)
				return err;
			break;
		case OPT_STDIO: t->stdio = true; break;
		case OPT_VIEW: {
			int v;

			for (v = 0; v < V_COUNT && strcmp(optarg, view_names[v]); v++)
				;
			if (v == V_COUNT)
				return usage_error("top", "unknown view '%s': want functions, processes, threads or callers",
						   optarg);
			t->view = (enum view)v;
			break;
		}
		case 's': {
			int s;

			for (s = 0; s < 3 && strcmp(optarg, sort_names[s]); s++)
				;
			if (s == 3)
				return usage_error("top", "unknown sort key '%s': want self, total or name", optarg);
			t->sort = (enum sort)s;
			break;
		}
		case OPT_FILTER: {
			char why[256];

			if (set_filter(t, optarg, why, sizeof(why)))
				return usage_error("top", "%s", why);
			break;
		}
		case OPT_FUNCTION: t->function = optarg; break;
		case OPT_IDLE: t->idle = true; sampling_opt = true; break;
		case OPT_NO_KERNEL: t->no_kernel = true; break;
		case OPT_NO_USER: t->no_user = true; break;
		case OPT_DEBUGINFO: t->debuginfo = optarg; sampling_opt = true; break;
		case OPT_FROM_STORE: t->history = true; break;
		case OPT_TYPE: t->type = optarg; break;
		case 'h': return show_usage(&cmd_top) == EXIT_OK ? -1 : EXIT_FAIL;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		t->cmd = argv + optind;
	if (t->sa.data || t->sa.since || t->sa.from || t->sa.to || t->sa.remote)
		t->history = true; /* store options: history */
	if (t->no_kernel && t->no_user)
		return usage_error("top", "--no-kernel and --no-user together leave no frames");
	if (t->function && t->view != V_CALLERS)
		return usage_error("top", "--function goes with --view callers");
	if (t->history) {
		if (t->cmd || t->all || t->cgroup || sampling_opt || t->npids > 1)
			return usage_error("top", "--from-store browses stored profiles: -F, --all, --cgroup, --idle, "
						  "--debuginfo-path and -- CMD are for live sampling (-p takes one pid)");
		if ((err = store_range("top", &t->sa)) != EXIT_OK)
			return err;
	} else {
		if (t->type)
			return usage_error("top", "--type selects stored profiles: it goes with --from-store");
		if (t->sa.token_file)
			return usage_error("top", "--token-file goes with --remote URL");
		if ((int)t->all + (t->npids > 0) + (t->cmd != NULL) > 1)
			return usage_error("top", "give one target: --all, -p PID or -- CMD (--cgroup narrows any of them)");
		if ((err = check_pids_exist("top", t->pids, t->npids)) != EXIT_OK)
			return err;
	}
	if (!t->stdio && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)))
		return usage_error("top", "the screen view needs a terminal: use --stdio for plain tables");
	return EXIT_OK;
}

/* ---- the command ---- */

static int start_live(struct top *t)
{
	struct cp_recorder_opts ro;
	uint32_t child_pid = 0;
	int err;

	if (t->cmd) {
		if ((err = cp_launch_start(&t->child, t->cmd)))
			return fail("top", "cannot start %s: %s", t->cmd[0], strerror(-err));
		child_pid = (uint32_t)t->child.pid;
	}
	memset(&ro, 0, sizeof(ro));
	ro.freq = t->freq;
	ro.pids = t->cmd ? &child_pid : t->pids;
	ro.npids = t->cmd ? 1 : t->npids;
	ro.follow_forks = t->cmd != NULL;
	ro.cgroup = t->cgroup;
	ro.idle = t->idle;
	ro.debuginfo = t->debuginfo;
	t->rec = cp_recorder_new(&ro);
	if (!t->rec) {
		int status = fail("top", "%s", cp_errmsg(errno));

		cp_launch_end(&t->child); /* never released: it exits */
		return status;
	}
	if (t->cmd && (err = cp_launch_release(&t->child)))
		return fail("top", "%s", cp_errmsg(err));
	return EXIT_OK;
}

/* A live refresh: the interval's profile joins the window. */
static int tick(struct top *t, int64_t interval)
{
	struct cp_profile *p = cp_recorder_take(t->rec);
	struct cp_sampler_counts c;
	size_t keep = (size_t)((t->window + t->delay - 1) / t->delay);

	if (!p)
		return -ENOMEM;
	cp_recorder_counts(t->rec, &c);
	t->dropped = c.dropped;
	t->last_interval = interval;
	t->last_samples = (uint64_t)cp_profile_total(p, 0);
	t->rates[t->nrates++ % RATES] = interval > 0 ? (double)t->last_samples * 1e9 / (double)interval : 0;
	if (t->nrates >= 2 * RATES)
		t->nrates -= RATES;
	if (t->paused) {
		cp_profile_free(p);
		return 0;
	}
	if (keep < 1)
		keep = 1;
	if (keep > t->ringcap) {
		struct cp_profile **n = realloc(t->ring, keep * sizeof(*n));

		if (!n) {
			cp_profile_free(p);
			return -ENOMEM;
		}
		t->ring = n;
		t->ringcap = keep;
	}
	while (t->nring >= keep) {
		cp_profile_free(t->ring[0]);
		memmove(t->ring, t->ring + 1, (t->nring - 1) * sizeof(*t->ring));
		t->nring--;
	}
	t->ring[t->nring++] = p;
	cp_recorder_prune(t->rec);
	return refresh_view(t, false);
}

/* --view callers: --function NAME (that name, else the function whose
 * name contains it with the most total), else the one with the most self. */
static void set_function(struct top *t)
{
	int64_t best = -1, part = -1;

	for (uint32_t i = 0; t->agg && i < t->agg->nfns; i++) {
		const struct cp_top_fn *f = &t->agg->fns[i];
		const char *name = cp_topagg_str(t->agg, f->name);

		if (!t->function) {
			if (best < 0 || f->self > t->agg->fns[best].self)
				best = i;
		} else if (!strcmp(name, t->function)) {
			if (best < 0 || f->total > t->agg->fns[best].total)
				best = i;
		} else if (strstr(name, t->function) && (part < 0 || f->total > t->agg->fns[part].total)) {
			part = i;
		}
	}
	if (best < 0)
		best = part;
	if (best >= 0) {
		snprintf(t->focus_name, sizeof(t->focus_name), "%s", cp_topagg_str(t->agg, t->agg->fns[best].name));
		snprintf(t->focus_bin, sizeof(t->focus_bin), "%s", cp_topagg_str(t->agg, t->agg->fns[best].binary));
	} else {
		t->focus_name[0] = 0;
	}
}

/* The callers view without a function yet: pick it from everything. */
static int ensure_focus(struct top *t, bool again)
{
	int err;

	if (t->view != V_CALLERS || (t->focus_name[0] && !again))
		return 0;
	t->focus_name[0] = 0;
	if ((err = rebuild(t)))
		return err;
	set_function(t);
	return 0;
}

/* The stdio output of one refresh. */
static int stdio_refresh(struct top *t)
{
	int err;

	/* --function, or the top function of this refresh */
	if ((err = ensure_focus(t, true)) || (err = refresh_view(t, false)))
		return err;
	return print_stdio(t);
}

static int run_loop(struct top *t)
{
	int64_t next = cp_mono_ns() + t->delay, last = cp_mono_ns();
	int iter = 0, err = 0, ch;
	bool dirty = true;

	for (;;) {
		int64_t now;

		if (t->history) {
			if (t->stdio)
				return stdio_refresh(t) ? EXIT_FAIL : EXIT_OK;
			/* history: only keys change things */
			ch = getch();
			if (stop_signal)
				break;
			if (ch != ERR) {
				if ((err = handle_key(t, ch)) != 0)
					break;
				dirty = true;
			}
			if (dirty)
				draw(t);
			dirty = false;
			continue;
		}
		err = cp_recorder_poll(t->rec, t->tui ? 20 : 50);
		if (err == -EINTR)
			err = 0;
		if (err)
			break;
		if (stop_signal)
			break;
		if (t->cmd && !t->child.exited && cp_launch_poll(&t->child)) {
			set_msg(t, "%s exited", t->cmd[0]);
		}
		while (t->tui && (ch = getch()) != ERR) {
			if ((err = handle_key(t, ch)) != 0)
				goto out;
			dirty = true;
		}
		now = cp_mono_ns();
		if (now >= next) {
			if ((err = tick(t, now - last)))
				break;
			last = now;
			next = now + t->delay;
			iter++;
			if (t->stdio && (err = stdio_refresh(t)))
				break;
			dirty = true;
			if (t->iterations && iter >= t->iterations)
				break;
			if (t->stdio && t->child.exited)
				break; /* the command is done: so are its tables */
			if (t->npids && !pids_alive(t->pids, t->npids)) {
				if (t->stdio)
					break;
				set_msg(t, "the processes are gone");
			}
		}
		if (t->tui && dirty) {
			draw(t);
			dirty = false;
		}
	}
out:
	if (err > 0)
		err = 0; /* q */
	if (err) {
		if (t->tui)
			endwin();
		t->tui = false;
		return fail("top", "%s", err == -EIO ? "cannot write to standard output" : cp_errmsg(err));
	}
	return EXIT_OK;
}

static int run_top(int argc, char **argv)
{
	struct top t;
	struct sigaction sa;
	int status;

	memset(&t, 0, sizeof(t));
	t.freq = 99;
	t.delay = 1000000000LL;
	t.limit = 25;
	cp_launch_init(&t.child);
	t.back_view = V_FUNCTIONS;
	unsetenv("DEBUGINFOD_URLS");
	status = parse_options(&t, argc, argv);
	if (status != EXIT_OK)
		goto out;
	t.rerun = cp_regex_run_new(NULL);
	t.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!t.rerun) {
		status = fail("top", "out of memory");
		goto out;
	}
	if (!t.history && !t.window)
		t.window = 10000000000LL;
	if (t.window && t.window < t.delay && !t.history)
		t.window = t.delay;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (t.history) {
		int err;

		if (!store_get("top", &t.sa)) {
			status = EXIT_FAIL;
			goto out;
		}
		if ((err = hist_open(&t))) {
			status = fail("top", "%s", cp_errmsg(err));
			goto out;
		}
		if (!t.stdio && ((err = ensure_focus(&t, false)) || (err = refresh_view(&t, false)))) {
			status = fail("top", "%s", cp_errmsg(err));
			goto out;
		}
	} else if ((status = start_live(&t)) != EXIT_OK) {
		goto out;
	}
	if (!t.stdio) {
		const char *cs;

		setlocale(LC_ALL, "");
		cs = nl_langinfo(CODESET);
		t.utf8 = cs && !strcmp(cs, "UTF-8");
		if (!initscr()) {
			status = fail("top", "cannot start the screen (TERM=%s): use --stdio", getenv("TERM") ? getenv("TERM") : "");
			goto out;
		}
		t.tui = true;
		cbreak();
		noecho();
		keypad(stdscr, TRUE);
		curs_set(0);
		set_escdelay(25);
		timeout(t.history ? 250 : 0);
		if (!t.history && ((status = ensure_focus(&t, false)) || (status = refresh_view(&t, false)))) {
			endwin();
			t.tui = false;
			status = fail("top", "%s", cp_errmsg(status));
			goto out;
		}
	}
	status = run_loop(&t);
	if (t.tui)
		endwin(); /* the terminal as it was */
	t.tui = false;
out:
	cp_launch_end(&t.child);
	cp_recorder_free(t.rec);
	for (size_t i = 0; i < t.nring; i++)
		cp_profile_free(t.ring[i]);
	free(t.ring);
	cp_topagg_free(t.agg);
	free(t.rows);
	cp_store_results_free(t.res, t.nres);
	free(t.totals);
	for (size_t i = 0; i < t.ncomms; i++)
		free(t.comms[i].comm);
	free(t.comms);
	cp_selector_free(t.sel);
	cp_regex_free(t.re);
	cp_regex_run_free(t.rerun);
	store_args_release(&t.sa);
	free(t.pids);
	return status < 0 ? EXIT_OK : status;
}
