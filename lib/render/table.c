/* SPDX-License-Identifier: MIT */
/* pprof's top table, and the diff table built on the same function table. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../util.h"
#include "diffstat.h"
#include "render.h"
#include "units.h"

struct sort_ctx {
	const struct cp_fn_table *t;
	int mode; /* 0: flat desc; 1: |delta| desc; 2: |norm delta| desc */
	double norm;
};

static double sort_key(const struct sort_ctx *c, const struct cp_fn_row *r)
{
	switch (c->mode) {
	case 1:
		return fabs((double)r->flat[1] - (double)r->flat[0]);
	case 2:
		return fabs((double)r->flat[1] - (double)r->flat[0] * c->norm);
	default:
		return (double)r->flat[0];
	}
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct cp_fn_row *x = &c->t->rows[*(const uint32_t *)a], *y = &c->t->rows[*(const uint32_t *)b];
	double kx = sort_key(c, x), ky = sort_key(c, y);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->cum[c->mode ? 1 : 0] != y->cum[c->mode ? 1 : 0])
		return x->cum[c->mode ? 1 : 0] > y->cum[c->mode ? 1 : 0] ? -1 : 1;
	return strcmp(cp_strtab_get(&c->t->names, x->name), cp_strtab_get(&c->t->names, y->name));
}

/* Row ids worth showing, sorted; *n is their count. */
static uint32_t *sorted_rows(const struct cp_fn_table *t, int mode, double norm, uint32_t *n)
{
	struct sort_ctx c = { t, mode, norm };
	uint32_t *order = malloc(((size_t)t->nrows + 1) * sizeof(*order)), i;

	if (!order)
		return NULL;
	*n = 0;
	for (i = 0; i < t->nrows; i++) {
		const struct cp_fn_row *r = &t->rows[i];

		if (r->flat[0] || r->cum[0] || r->flat[1] || r->cum[1])
			order[(*n)++] = i;
	}
	cp_qsort_r(order, *n, sizeof(*order), row_cmp, &c);
	return order;
}

int cp_render_table(FILE *out, const struct cp_profile *p, int vidx, const struct cp_table_opts *o)
{
	struct cp_fn_table *t = cp_fn_table_new();
	const char *type = cp_profile_string(p, p->sample_types[vidx].type);
	const char *unit = cp_profile_string(p, p->sample_types[vidx].unit);
	uint32_t *order = NULL, n = 0, shown, i;
	struct cp_unit_scale sc;
	char a[32], b[32], c[32], d[32], e[32];
	int64_t total, sum = 0;
	int err = -ENOMEM;

	if (!t || (err = cp_fn_table_add(t, p, vidx, 0)) || !(order = sorted_rows(t, 0, 1, &n))) {
		err = err ? err : -ENOMEM;
		goto out;
	}
	total = o && o->whole_total ? o->whole_total : t->total[0];
	sc = cp_unit_scale_for(total, unit);
	shown = o && o->limit > 0 && (uint32_t)o->limit < n ? (uint32_t)o->limit : n;
	for (i = 0; i < shown; i++)
		sum += t->rows[order[i]].flat[0];
	if (p->nmappings && p->mappings[0].filename) {
		const char *file = cp_profile_string(p, p->mappings[0].filename), *base = strrchr(file, '/');

		fprintf(out, "File: %s\n", base ? base + 1 : file);
	}
	fprintf(out, "Type: %s\n", type);
	if (p->time_nanos) {
		time_t secs = (time_t)(p->time_nanos / 1000000000);
		struct tm tm;

		if (gmtime_r(&secs, &tm) && strftime(a, sizeof(a), "%Y-%m-%d %H:%M:%S UTC", &tm))
			fprintf(out, "Time: %s\n", a);
	}
	if (o && o->resolution)
		fprintf(out, "Resolution: %s\n", o->resolution);
	if (p->duration_nanos && strcmp(unit, "nanoseconds"))
		fprintf(out, "Duration: %s\n", cp_format_value(p->duration_nanos, "nanoseconds", a, sizeof(a)));
	else if (p->duration_nanos)
		fprintf(out, "Duration: %s, Total samples = %s (%s)\n",
			cp_format_value(p->duration_nanos, "nanoseconds", a, sizeof(a)),
			cp_format_scaled(total, sc, b, sizeof(b)),
			cp_format_percent((double)total, (double)p->duration_nanos, c, sizeof(c)));
	if (o && o->filters && *o->filters) {
		const char *f = o->filters, *nl;

		fprintf(out, "Active filters:\n");
		for (; *f; f = *nl ? nl + 1 : nl) {
			nl = strchr(f, '\n');
			nl = nl ? nl : f + strlen(f);
			fprintf(out, "   %.*s\n", (int)(nl - f), f);
		}
	}
	fprintf(out, "Showing nodes accounting for %s, %s of %s total\n", cp_format_scaled(sum, sc, a, sizeof(a)),
		cp_format_percent((double)sum, (double)total, b, sizeof(b)), cp_format_scaled(total, sc, c, sizeof(c)));
	if (shown < n)
		fprintf(out, "Showing top %u nodes out of %u\n", shown, n);
	fprintf(out, "%10s %6s %6s %10s %6s\n", "flat", "flat%", "sum%", "cum", "cum%");
	sum = 0;
	for (i = 0; i < shown; i++) {
		const struct cp_fn_row *r = &t->rows[order[i]];

		sum += r->flat[0];
		fprintf(out, "%10s %6s %6s %10s %6s  %s\n", cp_format_scaled(r->flat[0], sc, a, sizeof(a)),
			cp_format_percent((double)r->flat[0], (double)total, b, sizeof(b)),
			cp_format_percent((double)sum, (double)total, c, sizeof(c)),
			cp_format_scaled(r->cum[0], sc, d, sizeof(d)),
			cp_format_percent((double)r->cum[0], (double)total, e, sizeof(e)),
			cp_strtab_get(&t->names, r->name));
	}
	err = cp_stream_check(out, NULL);
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory rendering the table");
	free(order);
	cp_fn_table_free(t);
	return err;
}

static const char *delta_pct(double before, double delta, char *buf, size_t len)
{
	if (before == 0)
		snprintf(buf, len, delta ? "new" : "0%%");
	else
		snprintf(buf, len, "%+.2f%%", 100.0 * delta / (double)before);
	return buf;
}

static const char *pp(double share, char *buf, size_t len)
{
	snprintf(buf, len, "%+.2fpp", 100 * share);
	return buf;
}

static const char *qval(const struct cp_fn_stat *s, char *buf, size_t len)
{
	if (!s->tested)
		snprintf(buf, len, "-");
	else if (s->q < 0.0001)
		snprintf(buf, len, "<0.0001%s", s->significant ? " *" : "");
	else
		snprintf(buf, len, "%.4f%s", s->q, s->significant ? " *" : "");
	return buf;
}

/* the diff table with each row's significance (diffstat.h): shares in
 * percent, their change in points, its interval and q-value, self and total */
static int stat_table(FILE *out, const struct cp_fn_table *t, const struct cp_diff_opts *o)
{
	const struct cp_diffstat *d = o->stat;
	uint32_t n = 0, shown, *order = cp_diffstat_order(d, o->only_significant, &n);
	char a[32], b[32], c[32], e[32], f[32], g[32], iv[72];

	if (!order)
		return cp_error(ENOMEM, "out of memory rendering the table");
	shown = o->limit > 0 && (uint32_t)o->limit < n ? (uint32_t)o->limit : n;
	fprintf(out, "Before: %s total   After: %s total\n", cp_format_value(t->total[0], o->unit, a, sizeof(a)),
		cp_format_value(t->total[1], o->unit, b, sizeof(b)));
	fprintf(out, "Significance: %s (%zu %s before, %zu after); significant (*): a change of more than %gpp "
		     "at q <= %g, the false discovery rate (Benjamini-Hochberg); intervals at %g%%\n",
		cp_diffstat_method_name(d), d->n[0], d->method == CP_DIFFSTAT_INTERVALS ? "intervals" : "samples", d->n[1],
		100 * d->min_change, d->alpha, 100 * d->level);
	fprintf(out, "Significant changes: %u of %u functions%s\n", d->nsignificant, d->nrows,
		o->only_significant ? " (only those shown)" : "");
	if (shown < n)
		fprintf(out, "Showing top %u functions out of %u\n", shown, n);
	fprintf(out, "%8s %8s %9s %21s %9s | %9s %9s  %s\n", "self", "self", "change", "interval", "q", "total",
		"q", "");
	fprintf(out, "%8s %8s %9s %21s %9s | %9s %9s  %s\n", "before", "after", "", "", "", "change", "", "name");
	for (uint32_t i = 0; i < shown; i++) {
		uint32_t r = order[i];
		const struct cp_fn_stat *s = d->rows[r];

		snprintf(iv, sizeof(iv), "[%s, %s]", pp(s[0].t.lo, a, sizeof(a)), pp(s[0].t.hi, b, sizeof(b)));
		fprintf(out, "%7.2f%% %7.2f%% %9s %21s %9s | %9s %9s  %s\n", 100 * s[0].share[0], 100 * s[0].share[1],
			pp(s[0].share[1] - s[0].share[0], c, sizeof(c)), s[0].tested ? iv : "-",
			qval(&s[0], e, sizeof(e)), pp(s[1].share[1] - s[1].share[0], f, sizeof(f)),
			qval(&s[1], g, sizeof(g)), cp_strtab_get(&t->names, t->rows[r].name));
	}
	free(order);
	return cp_stream_check(out, NULL);
}

int cp_render_diff_table(FILE *out, const struct cp_fn_table *t, const struct cp_diff_opts *o)
{
	double norm = t->total[0] ? (double)t->total[1] / (double)t->total[0] : 1;
	int64_t max = llabs(t->total[0]) > llabs(t->total[1]) ? t->total[0] : t->total[1];
	struct cp_unit_scale sc = cp_unit_scale_for(max, o->unit);
	uint32_t n = 0, shown, i, *order;
	char a[32], b[32], c[32], d[32], e[32], f[32];
	int err;

	if (o->stat)
		return stat_table(out, t, o);
	order = sorted_rows(t, o->normalize ? 2 : 1, norm, &n);
	if (!order)
		return cp_error(ENOMEM, "out of memory rendering the table");
	shown = o->limit > 0 && (uint32_t)o->limit < n ? (uint32_t)o->limit : n;
	fprintf(out, "Before: %s total   After: %s total   Change: %s (%s)\n", cp_format_scaled(t->total[0], sc, a, sizeof(a)),
		cp_format_scaled(t->total[1], sc, b, sizeof(b)), cp_format_scaled(cp_sub_sat(t->total[1], t->total[0]), sc, c, sizeof(c)),
		delta_pct((double)t->total[0], (double)(cp_sub_sat(t->total[1], t->total[0])), d, sizeof(d)));
	fprintf(out, "Sorted by %s; norm.: before scaled to the after total (x%.4f)\n",
		o->normalize ? "|norm.delta|" : "|delta|", norm);
	if (shown < n)
		fprintf(out, "Showing top %u functions out of %u\n", shown, n);
	fprintf(out, "%10s %10s %10s %8s %10s %8s\n", "before", "after", "delta", "delta%", "norm.delta", "norm%");
	for (i = 0; i < shown; i++) {
		const struct cp_fn_row *r = &t->rows[order[i]];
		double nb = (double)r->flat[0] * norm, nd = (double)r->flat[1] - nb;

		fprintf(out, "%10s %10s %10s %8s %10s %8s  %s\n", cp_format_scaled(r->flat[0], sc, a, sizeof(a)),
			cp_format_scaled(r->flat[1], sc, b, sizeof(b)),
			cp_format_scaled(cp_sub_sat(r->flat[1], r->flat[0]), sc, c, sizeof(c)),
			delta_pct((double)r->flat[0], (double)(cp_sub_sat(r->flat[1], r->flat[0])), d, sizeof(d)),
			cp_format_scaled((int64_t)llround(nd), sc, e, sizeof(e)),
			delta_pct(nb, nd, f, sizeof(f)),
			cp_strtab_get(&t->names, r->name));
	}
	free(order);
	err = cp_stream_check(out, NULL);
	return err;
}

/* exported for json.c */
uint32_t *cp_fn_table_sorted(const struct cp_fn_table *t, int mode, uint32_t *n)
{
	double norm = t->total[0] ? (double)t->total[1] / (double)t->total[0] : 1;

	return sorted_rows(t, mode, norm, n);
}
