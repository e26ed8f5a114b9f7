/* SPDX-License-Identifier: MIT */
/* Regressions: significant growths per group of series against a baseline
 * (regress.h). */
#include "regress.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../util.h"
#include "render.h"

struct group {
	char *name;
	struct cp_profile **iv[2]; /* owned */
	size_t n[2];
	struct cp_fn_table *ft;
	struct cp_diffstat ds;
	bool compared;
};

struct groups {
	struct group *g;
	size_t n, cap;
};

static int nomem(void)
{
	return cp_error(ENOMEM, "out of memory looking for regressions");
}

static struct group *group_get(struct groups *gs, const char *name)
{
	for (size_t i = 0; i < gs->n; i++)
		if (!strcmp(gs->g[i].name, name))
			return &gs->g[i];
	if (cp_grow((void **)&gs->g, &gs->cap, gs->n + 1, sizeof(*gs->g)))
		return NULL;
	memset(&gs->g[gs->n], 0, sizeof(gs->g[0]));
	if (!(gs->g[gs->n].name = strdup(name)))
		return NULL;
	return &gs->g[gs->n++];
}

static void groups_free(struct groups *gs)
{
	for (size_t i = 0; i < gs->n; i++) {
		struct group *g = &gs->g[i];

		for (int s = 0; s < 2; s++) {
			for (size_t k = 0; k < g->n[s]; k++)
				cp_profile_free(g->iv[s][k]);
			free(g->iv[s]);
		}
		cp_diffstat_release(&g->ds);
		cp_fn_table_free(g->ft);
		free(g->name);
	}
	free(gs->g);
}

/* side s's intervals of [from, to), per group: each group cut as a diff
 * of its own selection is (cp_store_select_intervals) */
static int load_side(struct cp_store *st, const struct cp_selector *sel, const char *by, int64_t from, int64_t to,
		     int s, struct groups *gs)
{
	struct cp_store_query q = { sel, from, to, by, NULL, false };
	struct cp_store_intervals *iv = NULL;
	size_t n = 0;
	int err = cp_store_select_intervals(st, &q, CP_STORE_INTERVAL_STEP, CP_STORE_INTERVALS_MAX, &iv, &n);

	for (size_t i = 0; !err && i < n; i++) {
		struct group *g = group_get(gs, iv[i].group);

		if (!g) {
			err = nomem();
			break;
		}
		g->iv[s] = iv[i].iv; /* taken */
		g->n[s] = iv[i].n;
		iv[i].iv = NULL;
		iv[i].n = 0;
	}
	cp_store_intervals_free(iv, n);
	return err;
}

/* the group's test, as cprof diff's (its own q-values are redone over all groups) */
static int compare(struct group *g, double alpha, double min_change)
{
	const int vidx[2] = { 0, 0 };
	int err;

	struct cp_diffstat_source src;

	if (!(g->ft = cp_fn_table_new()))
		return nomem();
	for (int s = 0; s < 2; s++)
		for (size_t k = 0; k < g->n[s]; k++)
			if ((err = cp_fn_table_add(g->ft, g->iv[s][k], 0, s)))
				return err;
	if (g->ft->total[0] <= 0 || g->ft->total[1] <= 0)
		return 0;
	cp_diffstat_functions(g->ft, &src);
	err = cp_diffstat_intervals(&src, (struct cp_profile *const *const[2]){ g->iv[0], g->iv[1] }, g->n, vidx, alpha,
				    min_change, &g->ds);
	if (err == -EINVAL)
		return 0; /* a side without samples */
	g->compared = !err;
	return err;
}

static int by_change(const void *a, const void *b)
{
	const struct cp_regression *x = a, *y = b;
	double dx = x->st.share[1] - x->st.share[0], dy = y->st.share[1] - y->st.share[0];

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->group, y->group);
}

int cp_regressions_find(struct cp_store *s, const struct cp_selector *sel, const char *by, int64_t to, int64_t range,
			int64_t baseline, double alpha, double min_change, struct cp_regressions *out)
{
	struct groups gs = { 0 };
	struct cp_diffstat **all = NULL;
	size_t nall = 0, cap = 0;
	int err;

	memset(out, 0, sizeof(*out));
	out->by = by;
	out->from = to - range;
	out->to = to;
	out->baseline = baseline;
	out->alpha = alpha > 0 && alpha < 1 ? alpha : CP_DIFF_FDR;
	out->min_change = min_change >= 0 && min_change < 1 ? min_change : CP_DIFF_MIN_CHANGE;
	if (range <= 0 || baseline <= 0)
		return cp_error(EINVAL, "the range and the baseline must be positive");
	if ((err = load_side(s, sel, by, to - range - baseline, to - baseline, 0, &gs)) ||
	    (err = load_side(s, sel, by, to - range, to, 1, &gs)))
		goto out;
	out->ngroups = gs.n;
	if (gs.n && !(all = malloc(gs.n * sizeof(*all)))) {
		err = nomem();
		goto out;
	}
	for (size_t i = 0; i < gs.n; i++) {
		if ((err = compare(&gs.g[i], out->alpha, out->min_change)))
			goto out;
		if (gs.g[i].compared)
			all[nall++] = &gs.g[i].ds;
	}
	out->ncompared = nall;
	/* one false discovery rate for the whole list */
	if ((err = cp_diffstat_adjust(all, nall)))
		goto out;
	for (size_t i = 0; i < gs.n; i++) {
		struct group *g = &gs.g[i];

		for (uint32_t r = 0; g->compared && r < g->ds.nrows; r++) {
			const struct cp_fn_stat *st = g->ds.rows[r];
			bool grew[2] = { st[0].significant && st[0].t.delta > 0, st[1].significant && st[1].t.delta > 0 };
			struct cp_regression *x;

			if (!grew[0] && !grew[1])
				continue;
			if (cp_grow((void **)&out->rows, &cap, out->nrows + 1, sizeof(*out->rows))) {
				err = nomem();
				goto out;
			}
			x = &out->rows[out->nrows++];
			memset(x, 0, sizeof(*x));
			/* one row a function: its self change, or its total's when only
			 * that grew or it grew more */
			x->kind = grew[0] && grew[1] ? "self+total" : grew[0] ? "self" : "total";
			x->st = grew[0] && (!grew[1] || st[0].t.delta >= st[1].t.delta) ? st[0] : st[1];
			x->n[0] = g->ds.n[0];
			x->n[1] = g->ds.n[1];
			if (!(x->group = strdup(g->name)) ||
			    !(x->function = strdup(cp_strtab_get(&g->ft->names, g->ft->rows[r].name)))) {
				err = nomem();
				goto out;
			}
		}
	}
	cp_qsort(out->rows, out->nrows, sizeof(*out->rows), by_change);
out:
	free(all);
	groups_free(&gs);
	if (err)
		cp_regressions_release(out);
	return err;
}

void cp_regressions_release(struct cp_regressions *r)
{
	for (size_t i = 0; r->rows && i < r->nrows; i++) {
		free(r->rows[i].group);
		free(r->rows[i].function);
	}
	free(r->rows);
	r->rows = NULL;
	r->nrows = 0;
}

/* a duration as the largest whole unit: 1w, 1d, 3h, 90m, 45s */
static const char *span(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t ns;
		const char *u;
	} units[] = { { 604800000000000, "w" }, { 86400000000000, "d" }, { 3600000000000, "h" }, { 60000000000, "m" },
		      { 1000000000, "s" } };

	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++)
		if (ns >= units[i].ns && ns % units[i].ns == 0) {
			snprintf(buf, len, "%lld%s", (long long)(ns / units[i].ns), units[i].u);
			return buf;
		}
	snprintf(buf, len, "%lldms", (long long)(ns / 1000000));
	return buf;
}

static const char *utc(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%lld", (long long)ns);
	return buf;
}

/* the groups that have a regression */
static size_t groups_with_rows(const struct cp_regressions *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nrows; i++) {
		size_t j;

		for (j = 0; j < i && strcmp(r->rows[j].group, r->rows[i].group); j++)
			;
		n += j == i;
	}
	return n;
}

static int render_json(FILE *out, const struct cp_regressions *r)
{
	json_t *root, *rows = json_array();
	char a[32], b[32], c[32];
	int err;

	for (size_t i = 0; rows && i < r->nrows; i++) {
		const struct cp_regression *x = &r->rows[i];

		json_array_append_new(rows, json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:[f,f],s:f,s:f,s:I,s:I}", "group",
						      x->group, "function", x->function, "kind", x->kind,
						      "share_before", x->st.share[0], "share_after", x->st.share[1], "change",
						      x->st.share[1] - x->st.share[0], "interval", x->st.t.lo, x->st.t.hi, "p",
						      x->st.t.p, "q", x->st.q, "intervals_before", (json_int_t)x->n[0],
						      "intervals_after", (json_int_t)x->n[1]));
	}
	root = json_pack("{s:s,s:s,s:s,s:s,s:f,s:f,s:s,s:I,s:I,s:o}", "by", r->by, "from", utc(r->from, a, sizeof(a)),
			 "to", utc(r->to, b, sizeof(b)), "baseline", span(r->baseline, c, sizeof(c)), "alpha", r->alpha,
			 "min_change", r->min_change,
			 "method", "Welch's t test over the intervals (weighted by their samples), Benjamini-Hochberg over all the groups", "groups",
			 (json_int_t)r->ngroups, "compared", (json_int_t)r->ncompared, "regressions", rows);
	if (!root)
		return nomem();
	err = json_dumpf(root, out, JSON_COMPACT | JSON_ENSURE_ASCII) ? cp_error(EIO, "cannot write JSON") : 0;
	json_decref(root);
	if (!err)
		fputc('\n', out);
	return err ? err : cp_stream_check(out, NULL);
}

int cp_render_regressions(FILE *out, const struct cp_regressions *r, bool json)
{
	char a[32], b[32], c[32], d[32];
	size_t w = 8;

	if (json)
		return render_json(out, r);
	fprintf(out, "Regressions: %s to %s against the same %s %s before, by %s\n", utc(r->from, a, sizeof(a)),
		utc(r->to, b, sizeof(b)), span(r->to - r->from, c, sizeof(c)), span(r->baseline, d, sizeof(d)), r->by);
	fprintf(out, "Welch's t test over the intervals, weighted by their samples; significant: a change of more than %gpp "
		     "at q <= %g over all the groups' tests (Benjamini-Hochberg)\n", 100 * r->min_change, r->alpha);
	fprintf(out, "%zu significant growths in %zu of %zu groups compared (%zu seen)\n", r->nrows,
		groups_with_rows(r), r->ncompared, r->ngroups);
	if (!r->nrows)
		return cp_stream_check(out, NULL);
	for (size_t i = 0; i < r->nrows; i++)
		if (strlen(r->rows[i].group) > w)
			w = strlen(r->rows[i].group) > 40 ? 40 : strlen(r->rows[i].group);
	fprintf(out, "%-*s %-10s %8s %8s %9s %21s %9s  %s\n", (int)w, r->by, "change of", "before", "after", "change",
		"interval", "q", "function");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct cp_regression *x = &r->rows[i];
		char iv[64], q[32];

		snprintf(iv, sizeof(iv), "[%+.2fpp, %+.2fpp]", 100 * x->st.t.lo, 100 * x->st.t.hi);
		if (x->st.q < 0.0001)
			snprintf(q, sizeof(q), "<0.0001");
		else
			snprintf(q, sizeof(q), "%.4f", x->st.q);
		fprintf(out, "%-*.*s %-10s %7.2f%% %7.2f%% %+7.2fpp %21s %9s  %s\n", (int)w, (int)w, x->group,
			x->kind, 100 * x->st.share[0], 100 * x->st.share[1],
			100 * (x->st.share[1] - x->st.share[0]), iv, q, x->function);
	}
	return cp_stream_check(out, NULL);
}
