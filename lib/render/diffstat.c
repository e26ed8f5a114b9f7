/* SPDX-License-Identifier: MIT */
/* Which changes of a diff are more than chance (diffstat.h). */
#include "diffstat.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"

static int nomem(void)
{
	return cp_error(ENOMEM, "out of memory testing the changes of the diff");
}

bool cp_diffstat_counted(const struct cp_diffstat *d, const struct cp_fn_stat *s)
{
	return s->tested && s->share[0] + s->share[1] >= d->min_change;
}

int cp_diffstat_adjust(struct cp_diffstat *const *d, size_t nd)
{
	size_t n = 0, k = 0;
	double *p;

	for (size_t i = 0; i < nd; i++)
		for (uint32_t r = 0; r < d[i]->nrows; r++)
			n += (size_t)cp_diffstat_counted(d[i], &d[i]->rows[r][0]) +
			     (size_t)cp_diffstat_counted(d[i], &d[i]->rows[r][1]);
	if (!n)
		return 0;
	if (!(p = malloc(n * sizeof(*p))))
		return nomem();
	for (size_t i = 0; i < nd; i++)
		for (uint32_t r = 0; r < d[i]->nrows; r++)
			for (int j = 0; j < 2; j++)
				if (cp_diffstat_counted(d[i], &d[i]->rows[r][j]))
					p[k++] = d[i]->rows[r][j].t.p;
	if (cp_stats_bh(p, n, p)) {
		free(p);
		return nomem();
	}
	k = 0;
	for (size_t i = 0; i < nd; i++) {
		d[i]->nsignificant = 0;
		for (uint32_t r = 0; r < d[i]->nrows; r++) {
			bool any = false;

			for (int j = 0; j < 2; j++) {
				struct cp_fn_stat *s = &d[i]->rows[r][j];

				if (!cp_diffstat_counted(d[i], s))
					continue;
				s->q = p[k++];
				s->significant = s->q <= d[i]->alpha;
				any |= s->significant;
			}
			d[i]->nsignificant += any;
		}
	}
	free(p);
	return 0;
}

/* ---- the rows: functions of the table, frames of the tree ---- */

static void fn_values(const void *arg, uint32_t r, int s, int64_t *self, int64_t *total)
{
	const struct cp_fn_row *row = &((const struct cp_fn_table *)arg)->rows[r];

	*self = row->flat[s];
	*total = row->cum[s];
}

static int fn_interval(const void *arg, const struct cp_profile *p, int vidx, cp_diffstat_put_fn put, void *ctx,
		       int64_t *sum)
{
	const struct cp_fn_table *t = arg;
	struct cp_fn_table *it = cp_fn_table_new();
	int err;

	if (!it)
		return nomem();
	err = cp_fn_table_add(it, p, vidx, 0);
	*sum = it->total[0];
	for (uint32_t r = 0; !err && r < it->nrows; r++) {
		int64_t row = cp_fn_table_find(t, cp_strtab_get(&it->names, it->rows[r].name));

		if (row >= 0) /* else filtered out of the table */
			err = put(ctx, (uint32_t)row, it->rows[r].flat[0], it->rows[r].cum[0]);
	}
	cp_fn_table_free(it);
	return err;
}

void cp_diffstat_functions(const struct cp_fn_table *t, struct cp_diffstat_source *src)
{
	*src = (struct cp_diffstat_source){ t->nrows, { t->total[0], t->total[1] }, t, fn_values, fn_interval };
}

static void frame_values(const void *arg, uint32_t r, int s, int64_t *self, int64_t *total)
{
	const struct cp_tree_node *n = &((const struct cp_tree *)arg)->nodes[r];

	*self = n->self[s];
	*total = n->total[s];
}

/* the interval's own tree, each node matched to the diff tree's node of the
 * same stack prefix: a node is made after its parent, so its parent's match
 * is known when it is reached */
static int frame_interval(const void *arg, const struct cp_profile *p, int vidx, cp_diffstat_put_fn put, void *ctx,
			  int64_t *sum)
{
	const struct cp_tree *t = arg;
	struct cp_tree *it = cp_tree_new();
	uint32_t *match = NULL;
	int err;

	if (!it)
		return nomem();
	if ((err = cp_tree_add(it, p, vidx, 0, false)))
		goto out;
	if (!(match = malloc((size_t)it->nnodes * sizeof(*match)))) {
		err = nomem();
		goto out;
	}
	*sum = it->nodes[0].total[0];
	match[0] = 0;
	err = put(ctx, 0, it->nodes[0].self[0], it->nodes[0].total[0]);
	for (uint32_t i = 1; !err && i < it->nnodes; i++) {
		uint32_t parent = match[it->nodes[i].parent];
		int64_t id = parent == UINT32_MAX ? -1 : cp_tree_find(t, parent, cp_tree_name(it, i));

		match[i] = id < 0 ? UINT32_MAX : (uint32_t)id;
		if (id >= 0) /* else filtered out of the tree */
			err = put(ctx, (uint32_t)id, it->nodes[i].self[0], it->nodes[i].total[0]);
	}
out:
	free(match);
	cp_tree_free(it);
	return err;
}

void cp_diffstat_frames(const struct cp_tree *t, struct cp_diffstat_source *src)
{
	*src = (struct cp_diffstat_source){ t->nnodes, { t->nodes[0].total[0], t->nodes[0].total[1] }, t, frame_values,
					    frame_interval };
}

/* ---- the tests ---- */

static int start(const struct cp_diffstat_source *src, double alpha, double min_change, enum cp_diffstat_method m,
		 struct cp_diffstat *d)
{
	memset(d, 0, sizeof(*d));
	d->method = m;
	d->alpha = alpha > 0 && alpha < 1 ? alpha : CP_DIFF_FDR;
	d->min_change = min_change >= 0 && min_change < 1 ? min_change : CP_DIFF_MIN_CHANGE;
	d->level = 1 - d->alpha;
	d->nrows = src->nrows;
	if (src->nrows && !(d->rows = calloc(src->nrows, sizeof(*d->rows))))
		return nomem();
	for (uint32_t i = 0; i < src->nrows; i++)
		d->rows[i][0].q = d->rows[i][1].q = 1;
	return 0;
}

/* The intervals' values, sparse (a frame is in few of the intervals, and
 * rows times intervals can be more than memory holds): one entry per row
 * an interval has, its column the interval's (side 0's, then side 1's) */
struct entry {
	uint32_t row, col;
	int64_t self, total;
};

struct entries {
	struct entry *e;
	size_t n, cap;
	uint32_t col; /* the interval being read */
};

static int put_entry(void *ctx, uint32_t row, int64_t self, int64_t total)
{
	struct entries *es = ctx;

	if (!self && !total)
		return 0;
	if (cp_grow((void **)&es->e, &es->cap, es->n + 1, sizeof(*es->e)))
		return nomem();
	es->e[es->n++] = (struct entry){ row, es->col, self, total };
	return 0;
}

int cp_diffstat_intervals(const struct cp_diffstat_source *src, struct cp_profile *const *const iv[2], const size_t n[2],
			  const int vidx[2], double alpha, double min_change, struct cp_diffstat *d)
{
	/* weight[col]: the interval's samples; by_row: the entries in row order
	 * (rows' first entries at first[row]); share[kind * cols + col]: one
	 * row's shares, the intervals of side 0, then of side 1 */
	struct entries es = { NULL, 0, 0, 0 };
	double *weight = NULL, *share = NULL;
	size_t cols = n[0] + n[1], used[2] = { 0, 0 }, ntested = 0, *first = NULL, *by_row = NULL;
	int err = start(src, alpha, min_change, CP_DIFFSTAT_INTERVALS, d);

	if (err)
		return err;
	if (cols && (!(weight = calloc(cols, sizeof(*weight))) || !(share = calloc(2 * cols, sizeof(*share))))) {
		err = nomem();
		goto out;
	}
	for (int s = 0; s < 2; s++) {
		for (size_t k = 0; k < n[s]; k++) {
			size_t kept = es.n;
			int64_t sum = 0;

			es.col = (uint32_t)(used[0] + used[1]);
			if ((err = src->interval(src->arg, iv[s][k], vidx[s], put_entry, &es, &sum)))
				goto out;
			if (sum <= 0) { /* no samples in this interval */
				es.n = kept;
				continue;
			}
			weight[es.col] = (double)sum;
			used[s]++;
		}
	}
	d->n[0] = used[0];
	d->n[1] = used[1];
	if (!used[0] || !used[1]) {
		err = cp_error(EINVAL, "no samples %s to test the changes against", !used[0] ? "before" : "after");
		goto out;
	}
	/* the entries by row (a counting sort) */
	if (!(first = calloc((size_t)src->nrows + 2, sizeof(*first))) ||
	    (es.n && !(by_row = malloc(es.n * sizeof(*by_row))))) {
		err = nomem();
		goto out;
	}
	for (size_t i = 0; i < es.n; i++)
		first[es.e[i].row + 2]++;
	for (uint32_t r = 0; r < src->nrows; r++)
		first[r + 2] += first[r + 1];
	for (size_t i = 0; i < es.n; i++)
		by_row[first[es.e[i].row + 1]++] = i;
	cols = used[0] + used[1];
	for (uint32_t r = 0; r < src->nrows; r++) {
		for (size_t i = first[r]; i < first[r + 1]; i++) {
			const struct entry *e = &es.e[by_row[i]];

			share[e->col] += (double)e->self / weight[e->col];
			share[cols + e->col] += (double)e->total / weight[e->col];
		}
		for (int j = 0; j < 2; j++) {
			const double *a = &share[(size_t)j * cols], *b = a + used[0];
			struct cp_fn_stat *st = &d->rows[r][j];
			double sa = 0, sb = 0, wa = 0, wb = 0;

			/* each interval weighs its samples (a short one moves the test little) */
			for (size_t k = 0; k < used[0]; k++) {
				sa += weight[k] * a[k];
				wa += weight[k];
			}
			for (size_t k = 0; k < used[1]; k++) {
				sb += weight[used[0] + k] * b[k];
				wb += weight[used[0] + k];
			}
			st->share[0] = sa / wa;
			st->share[1] = sb / wb;
			st->tested = cp_stats_welch_w(a, weight, used[0], b, weight + used[0], used[1], d->level, &st->t);
			st->t.p = cp_stats_p_beyond(&st->t, d->min_change);
			ntested += st->tested;
		}
		for (size_t i = first[r]; i < first[r + 1]; i++) { /* zero again for the next row */
			share[es.e[by_row[i]].col] = 0;
			share[cols + es.e[by_row[i]].col] = 0;
		}
	}
	if (!ntested) { /* one interval a side, or all alike: the plain diff is all there is */
		err = cp_error(EINVAL, "too few intervals with samples to test the changes (%zu before, %zu after)",
			       used[0], used[1]);
		goto out;
	}
	err = cp_diffstat_adjust(&d, 1);
out:
	free(es.e);
	free(first);
	free(by_row);
	free(share);
	free(weight);
	if (err)
		cp_diffstat_release(d);
	return err;
}

int cp_diffstat_counts(const struct cp_diffstat_source *src, const double samples[2], double alpha, double min_change,
		       struct cp_diffstat *d)
{
	int err = start(src, alpha, min_change, CP_DIFFSTAT_COUNTS, d);

	if (err)
		return err;
	d->n[0] = (size_t)llround(samples[0]);
	d->n[1] = (size_t)llround(samples[1]);
	if (src->total[0] <= 0 || src->total[1] <= 0 || !(samples[0] > 0) || !(samples[1] > 0)) {
		cp_diffstat_release(d);
		return cp_error(EINVAL, "no samples %s to test the changes against",
				src->total[0] <= 0 ? "before" : "after");
	}
	for (uint32_t r = 0; r < src->nrows; r++) {
		int64_t v[2][2]; /* [side][self, total] */

		src->values(src->arg, r, 0, &v[0][0], &v[0][1]);
		src->values(src->arg, r, 1, &v[1][0], &v[1][1]);
		for (int j = 0; j < 2; j++) {
			struct cp_fn_stat *st = &d->rows[r][j];
			double x0 = (double)v[0][j] / (double)src->total[0];
			double x1 = (double)v[1][j] / (double)src->total[1];

			st->share[0] = x0;
			st->share[1] = x1;
			st->tested = cp_stats_prop(x0 * samples[0], samples[0], x1 * samples[1], samples[1], d->level, &st->t);
			st->t.p = cp_stats_p_beyond(&st->t, d->min_change);
		}
	}
	if ((err = cp_diffstat_adjust(&d, 1)))
		cp_diffstat_release(d);
	return err;
}

void cp_diffstat_release(struct cp_diffstat *d)
{
	free(d->rows);
	d->rows = NULL;
	d->nrows = 0;
}

const char *cp_diffstat_method_name(const struct cp_diffstat *d)
{
	return d->method == CP_DIFFSTAT_INTERVALS ? "Welch's t test over the intervals, weighted by their samples"
						  : "a test of sample counts (samples assumed independent)";
}

/* a row's change: self's, unless only the total's is significant */
static double size_of(const struct cp_diffstat *d, uint32_t i)
{
	const struct cp_fn_stat *s = d->rows[i];

	return !s[0].significant && s[1].significant ? fabs(s[1].t.delta) : fabs(s[0].t.delta);
}

static int by_change(const void *x, const void *y, void *arg)
{
	const struct cp_diffstat *d = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	bool sa = d->rows[a][0].significant || d->rows[a][1].significant;
	bool sb = d->rows[b][0].significant || d->rows[b][1].significant;
	double za, zb;

	if (sa != sb)
		return sa ? -1 : 1;
	za = size_of(d, a);
	zb = size_of(d, b);
	if (za != zb)
		return za > zb ? -1 : 1;
	return a < b ? -1 : a > b;
}

uint32_t *cp_diffstat_order(const struct cp_diffstat *d, bool only_significant, uint32_t *n)
{
	uint32_t *o = malloc(((size_t)d->nrows + 1) * sizeof(*o)), k = 0;

	if (!o) {
		nomem();
		return NULL;
	}
	for (uint32_t i = 0; i < d->nrows; i++)
		if (!only_significant || d->rows[i][0].significant || d->rows[i][1].significant)
			o[k++] = i;
	qsort_r(o, k, sizeof(*o), by_change, (void *)d);
	*n = k;
	return o;
}
