/* SPDX-License-Identifier: MIT */
/* cprof top's view as text (see text.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../render/render.h"
#include "text.h"

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

/* A type whose unit is not a count (history, or live off-CPU or wall time)
 * shows values in that unit. */
static bool has_unit(const struct cp_view *v)
{
	return v->unit[0] && strcmp(v->unit, "count");
}

/* The share column of processes and threads: of what */
static const char *share_name(const struct cp_view *v)
{
	return !strcmp(v->value, "offcpu") ? "OFF%" : !strcmp(v->value, "wall") ? "WALL%" : "CPU%";
}

static const char *fmt_value(const struct cp_view *v, int64_t n, char *buf, size_t len)
{
	if (!has_unit(v)) {
		snprintf(buf, len, "%lld", (long long)n);
		return buf;
	}
	return cp_format_value(n, v->unit, buf, len);
}

static const char *proc_label(const struct cp_view *v, const struct cp_agg_fn *f, char *buf, size_t len)
{
	const char *comm = cp_aggregate_str(v->agg, f->comm);

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

void cp_view_columns(const struct cp_view *v, char *buf, size_t len, int w)
{
	struct cols c = layout(w);
	const char *valname = has_unit(v) ? "VALUE" : "SAMPLES";

	switch (v->kind) {
	case CP_VIEW_FUNCTIONS:
		snprintf(buf, len, "%7s %7s %9s  %-*s%s%-*s%s%s", "SELF%", "TOTAL%", valname, c.name, "FUNCTION",
			 c.bin ? " " : "", c.bin, c.bin ? "BINARY" : "", c.proc ? " " : "", c.proc ? "PROCESS" : "");
		break;
	case CP_VIEW_PROCESSES:
		snprintf(buf, len, "%7s %9s %8s %7s  %s", share_name(v), valname, "PID", "THREADS", "COMMAND");
		break;
	case CP_VIEW_THREADS:
		snprintf(buf, len, "%7s %9s %8s %8s  %-16s %s", share_name(v), valname, "TID", "PID", "THREAD", "PROCESS");
		break;
	default:
		snprintf(buf, len, "%7s %9s  %-*s%s%s", "SHARE%", valname, c.name, "CALLERS / FUNCTION / CALLEES",
			 c.bin ? " " : "", c.bin ? "BINARY" : "");
		break;
	}
}

void cp_view_row_text(const struct cp_view *v, size_t i, char *buf, size_t len, int w)
{
	const struct cp_aggregate *a = v->agg;
	const struct cp_view_row *r = &v->rows[i];
	struct cols c = layout(w);
	char n[32], p[64];

	switch (v->kind) {
	case CP_VIEW_FUNCTIONS: {
		const struct cp_agg_fn *f = &a->fns[r->idx];

		snprintf(buf, len, "%6.2f%% %6.2f%% %9s  %-*.*s%s%-*.*s%s%.*s", pct(f->self, a->total),
			 pct(f->total, a->total), fmt_value(v, f->self, n, sizeof(n)), c.name, c.name,
			 cp_aggregate_str(a, f->name), c.bin ? " " : "", c.bin, c.bin, c.bin ? cp_aggregate_str(a, f->binary) : "",
			 c.proc ? " " : "", c.proc, c.proc ? proc_label(v, f, p, sizeof(p)) : "");
		break;
	}
	case CP_VIEW_PROCESSES: {
		const struct cp_agg_proc *pr = &a->procs[r->idx];

		char pid[16], nth[16];

		/* no pid and no thread: a program's samples without its processes (a downsampled day) */
		snprintf(pid, sizeof(pid), pr->pid || pr->nthreads ? "%u" : "-", pr->pid);
		snprintf(nth, sizeof(nth), pr->nthreads ? "%u" : "-", pr->nthreads);
		snprintf(buf, len, "%6.2f%% %9s %8s %7s  %s", pct(pr->value, a->total),
			 fmt_value(v, pr->value, n, sizeof(n)), pid, nth, cp_aggregate_str(a, pr->comm));
		break;
	}
	case CP_VIEW_THREADS: {
		const struct cp_agg_thread *th = &a->threads[r->idx];

		snprintf(buf, len, "%6.2f%% %9s %8u %8u  %-16s %s", pct(th->value, a->total),
			 fmt_value(v, th->value, n, sizeof(n)), th->tid, th->pid, cp_aggregate_str(a, th->name),
			 cp_aggregate_str(a, th->comm));
		break;
	}
	default: {
		const struct cp_agg_fn *f;
		const struct cp_agg_edge *e;
		const char *mark;

		if (r->kind == CP_ROW_FOCUS) {
			char nm[600];

			f = &a->fns[r->idx];
			snprintf(nm, sizeof(nm), "%s  (self %.2f%%)", cp_aggregate_str(a, f->name),
				 pct(a->focus_self, a->focus_total));
			snprintf(buf, len, "%6.2f%% %9s  %-*.*s%s%.*s", 100.0, fmt_value(v, a->focus_total, n, sizeof(n)),
				 c.name, c.name, nm, c.bin ? " " : "", c.bin, c.bin ? cp_aggregate_str(a, f->binary) : "");
			break;
		}
		e = r->kind == CP_ROW_CALLEE ? &a->callees[r->idx] : &a->callers[r->idx];
		f = &a->fns[e->fn];
		mark = r->kind == CP_ROW_CALLEE ? "  -> " : "  <- ";
		snprintf(buf, len, "%6.2f%% %9s  %s%-*.*s%s%.*s", pct(e->value, a->focus_total),
			 fmt_value(v, e->value, n, sizeof(n)), mark, c.name - (int)strlen(mark), c.name - (int)strlen(mark),
			 cp_aggregate_str(a, f->name), c.bin ? " " : "", c.bin, c.bin ? cp_aggregate_str(a, f->binary) : "");
		break;
	}
	}
}

void cp_view_sparkline(const double *vals, size_t n, bool utf8, char *buf, size_t len)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587",
					      "\u2588" };
	static const char ascii[] = "_.-:=+*#";
	double max = 0;
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		max = vals[i] > max ? vals[i] : max;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int lvl = max > 0 ? (int)(vals[i] / max * 7.999) : 0;

		if (lvl < 0)
			lvl = 0;
		if (vals[i] <= 0 && utf8) {
			if (o + 2 >= len)
				break;
			buf[o++] = ' ';
		} else if (utf8) {
			if (o + 4 >= len)
				break;
			memcpy(buf + o, blocks[lvl], 3);
			o += 3;
		} else {
			if (o + 2 >= len)
				break;
			buf[o++] = vals[i] <= 0 ? ' ' : ascii[lvl];
		}
	}
	buf[o] = 0;
}

size_t cp_view_spark_values(const struct cp_view *v, size_t w, double *out, size_t *cur)
{
	size_t n, first = 0;

	*cur = SIZE_MAX;
	if (w > CP_VIEW_RATES)
		w = CP_VIEW_RATES;
	if (v->history) {
		n = v->nwin;
		if (n > w) { /* the part around the current window */
			first = v->win > w / 2 ? v->win - w / 2 : 0;
			if (first + w > n)
				first = n - w;
			n = w;
		}
		for (size_t i = 0; i < n; i++)
			out[i] = (double)v->totals[first + i];
		*cur = v->win - first;
		return n;
	}
	n = v->nrates < w ? v->nrates : w;
	for (size_t i = 0; i < n; i++)
		out[i] = v->rates[(v->nrates - n + i) % CP_VIEW_RATES];
	return n;
}

void cp_view_spark_text(const struct cp_view *v, size_t width, bool utf8, char *buf, size_t len, size_t *off,
			size_t *n)
{
	double vals[CP_VIEW_RATES];
	size_t cur, nv = cp_view_spark_values(v, width, vals, &cur);

	cp_view_sparkline(vals, nv, utf8, buf, len);
	*off = *n = 0;
	for (size_t i = 0; i < nv && i < cur; i++)
		*off += utf8 && vals[i] > 0 ? 3 : 1;
	if (cur < nv)
		*n = utf8 && vals[cur] > 0 ? 3 : 1;
	if (*off + *n > strlen(buf)) /* cut short by len */
		*off = *n = 0;
}

static const char *clock_str(int64_t ns, char *buf, size_t len, bool date)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	localtime_r(&s, &tm);
	strftime(buf, len, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
	return buf;
}

const char *cp_view_duration(int64_t ns, char *buf, size_t len)
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

void cp_view_header(const struct cp_view *v, const struct cp_view_title *t, char lines[3][CP_VIEW_LINE])
{
	char a[64], b[64], c[64], d[128];
	const struct cp_aggregate *g = v->agg;
	const char *frames = v->no_kernel ? "user" : v->no_user ? "kernel" : "kernel+user";

	if (v->history) {
		int64_t wf = v->from + (int64_t)v->win * v->window;
		double per_s = g ? (double)g->total * 1e9 / (double)v->window : 0;

		snprintf(lines[0], CP_VIEW_LINE, "cprof top - history of %s: %s - %s (window %zu of %zu, %s each)",
			 t->target, clock_str(wf, a, sizeof(a), true), clock_str(wf + v->window, b, sizeof(b), false),
			 v->win + 1, v->nwin, cp_view_duration(v->window, c, sizeof(c)));
		if (!has_unit(v))
			snprintf(d, sizeof(d), "samples %lld   samples/s %.1f", (long long)(g ? g->total : 0), per_s);
		else
			snprintf(d, sizeof(d), "total %s", fmt_value(v, g ? g->total : 0, c, sizeof(c)));
		snprintf(lines[1], CP_VIEW_LINE, "%s   processes %u   threads %u   frames: %s", d, g ? g->nprocs : 0,
			 g ? g->nthreads : 0, frames);
	} else {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(lines[0], CP_VIEW_LINE, "cprof top - %s at %d Hz, every %s, the last %s%s   %s", t->target,
			 t->freq, cp_view_duration(t->delay, a, sizeof(a)), cp_view_duration(t->window, b, sizeof(b)),
			 v->paused ? "   [PAUSED]" : "",
			 clock_str((int64_t)now.tv_sec * 1000000000 + now.tv_nsec, c, sizeof(c), false));
		snprintf(lines[1], CP_VIEW_LINE,
			 "samples/s %.0f   CPUs %d   processes %u   threads %u   dropped %llu   frames: %s",
			 v->last_interval > 0 ? (double)v->last_samples * 1e9 / (double)v->last_interval : 0.0, t->ncpus,
			 g ? g->nprocs : 0, g ? g->nthreads : 0, (unsigned long long)t->dropped, frames);
	}
	snprintf(lines[2], CP_VIEW_LINE, "view: %s   sort: %s%s%s%s%s%s", cp_view_kind_names[v->kind],
		 cp_view_sort_names[v->sort], v->filter[0] ? "   filter: /" : "", v->filter, v->filter[0] ? "/" : "",
		 v->zoom_what[0] ? "   zoom: " : "", v->zoom_what);
}

int cp_view_print(FILE *out, const struct cp_view *v, const struct cp_view_title *t, size_t limit)
{
	char lines[3][CP_VIEW_LINE], buf[1024];
	size_t n = limit && limit < v->nrows ? limit : v->nrows;

	cp_view_header(v, t, lines);
	fprintf(out, "%s\n%s\n", lines[0], lines[1]);
	if (v->history && v->nwin > 1) {
		double *vals = calloc(v->nwin, sizeof(*vals));

		if (vals) {
			for (size_t i = 0; i < v->nwin; i++)
				vals[i] = (double)v->totals[i];
			cp_view_sparkline(vals, v->nwin, false, buf, sizeof(buf));
			fprintf(out, "over time: |%s|\n", buf);
			free(vals);
		}
	}
	fprintf(out, "%s\n", lines[2]);
	if (v->kind == CP_VIEW_CALLERS && v->focus_name[0])
		fprintf(out, "function: %s (%s)\n", v->focus_name, v->focus_bin);
	cp_view_columns(v, buf, sizeof(buf), 120);
	fprintf(out, "%s\n", buf);
	for (size_t i = 0; i < n; i++) {
		cp_view_row_text(v, i, buf, sizeof(buf), 120);
		fprintf(out, "%s\n", buf);
	}
	if (v->kind == CP_VIEW_CALLERS && !v->focus_name[0] && v->function[0] && v->agg && v->agg->nsamples)
		fprintf(out, "(no function named %s, nor one whose name contains it)\n", v->function);
	else if (!v->nrows)
		fprintf(out, "(%s)\n", v->re_costly ? "the filter is too costly to match: it matches nothing" :
				       v->filter[0] ? "no samples match the filter" : "no samples");
	fprintf(out, "\n");
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
