/* SPDX-License-Identifier: MIT */
/* Which changes of a diff are more than chance (diffstat.h). */
#include "diffstat.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"

static int nomem(void)
{
	return cp_error(ENOMEM, "out of memory testing the changes of the diff");
}

bool cp_diffstat_counted(const struct cp_diffstat *d, const struct cp_fn_stat *s)
{
	return s->tested && s->share[0] + s->share[1] >= d->min_change;
}

/* q-values over every counted row and kind; the significant ones marked */
static int adjust(struct cp_diffstat *d)
{
	size_t n = 0, k = 0;
	double *p;

	for (uint32_t i = 0; i < d->nrows; i++)
		n += (size_t)cp_diffstat_counted(d, &d->rows[i][0]) + (size_t)cp_diffstat_counted(d, &d->rows[i][1]);
	if (!n)
		return 0;
	if (!(p = malloc(n * sizeof(*p))))
		return nomem();
	for (uint32_t i = 0; i < d->nrows; i++)
		for (int j = 0; j < 2; j++)
			if (cp_diffstat_counted(d, &d->rows[i][j]))
				p[k++] = d->rows[i][j].t.p;
	if (cp_stats_bh(p, n, p)) {
		free(p);
		return nomem();
	}
	k = 0;
	d->nsignificant = 0;
	for (uint32_t i = 0; i < d->nrows; i++) {
		bool any = false;

		for (int j = 0; j < 2; j++) {
			struct cp_fn_stat *s = &d->rows[i][j];

			if (!cp_diffstat_counted(d, s))
				continue;
			s->q = p[k++];
			s->significant = s->q <= d->alpha;
			any |= s->significant;
		}
		d->nsignificant += any;
	}
	free(p);
	return 0;
}

static int start(const struct cp_fn_table *t, double alpha, double min_change, enum cp_diffstat_method m,
		 struct cp_diffstat *d)
{
	memset(d, 0, sizeof(*d));
	d->method = m;
	d->alpha = alpha > 0 && alpha < 1 ? alpha : CP_DIFF_FDR;
	d->min_change = min_change >= 0 && min_change < 1 ? min_change : CP_DIFF_MIN_CHANGE;
	d->level = 1 - d->alpha;
	d->nrows = t->nrows;
	if (t->nrows && !(d->rows = calloc(t->nrows, sizeof(*d->rows))))
		return nomem();
	for (uint32_t i = 0; i < t->nrows; i++)
		d->rows[i][0].q = d->rows[i][1].q = 1;
	return 0;
}

int cp_diffstat_intervals(const struct cp_fn_table *t, struct cp_profile *const *const iv[2], const size_t n[2],
			  const int vidx[2], double alpha, double min_change, struct cp_diffstat *d)
{
	/* shares[(row * 2 + kind) * (n0 + n1) + column]: the intervals of side 0, then of side 1;
	 * weight[column]: the interval's samples */
	double *shares = NULL, *weight = NULL;
	size_t cols = 0, used[2] = { 0, 0 }, ntested = 0;
	int err = start(t, alpha, min_change, CP_DIFFSTAT_INTERVALS, d);

	if (err)
		return err;
	cols = n[0] + n[1];
	if (cols && (!(weight = calloc(cols, sizeof(*weight))) ||
		     (t->nrows && !(shares = calloc((size_t)t->nrows * 2 * cols, sizeof(*shares)))))) {
		err = nomem();
		goto out;
	}
	for (int s = 0; s < 2; s++) {
		for (size_t k = 0; k < n[s]; k++) {
			struct cp_fn_table *it = cp_fn_table_new();
			size_t col = (s ? n[0] : 0) + used[s];

			if (!it) {
				err = nomem();
				goto out;
			}
			if ((err = cp_fn_table_add(it, iv[s][k], vidx[s], 0)) || it->total[0] <= 0) {
				cp_fn_table_free(it);
				if (err)
					goto out;
				continue; /* no samples in this interval */
			}
			for (uint32_t r = 0; r < it->nrows; r++) {
				int64_t row = cp_fn_table_find(t, cp_strtab_get(&it->names, it->rows[r].name));

				if (row < 0)
					continue; /* filtered out of the table */
				shares[((size_t)row * 2 + 0) * cols + col] = (double)it->rows[r].flat[0] / (double)it->total[0];
				shares[((size_t)row * 2 + 1) * cols + col] = (double)it->rows[r].cum[0] / (double)it->total[0];
			}
			weight[col] = (double)it->total[0];
			used[s]++;
			cp_fn_table_free(it);
		}
	}
	d->n[0] = used[0];
	d->n[1] = used[1];
	if (!used[0] || !used[1]) {
		err = cp_error(EINVAL, "no samples %s to test the changes against",
			       !used[0] ? "before" : "after");
		goto out;
	}
	for (uint32_t r = 0; r < t->nrows; r++) {
		for (int j = 0; j < 2; j++) {
			const double *a = &shares[((size_t)r * 2 + (size_t)j) * cols], *b = a + n[0];
			struct cp_fn_stat *st = &d->rows[r][j];
			double sa = 0, sb = 0, wa = 0, wb = 0;

			/* side 1's intervals start at column n[0], whatever side 0 kept; each
			 * interval weighs its samples (a short one moves the test little) */
			for (size_t k = 0; k < used[0]; k++) {
				sa += weight[k] * a[k];
				wa += weight[k];
			}
			for (size_t k = 0; k < used[1]; k++) {
				sb += weight[n[0] + k] * b[k];
				wb += weight[n[0] + k];
			}
			st->share[0] = sa / wa;
			st->share[1] = sb / wb;
			st->tested = cp_stats_welch_w(a, weight, used[0], b, weight + n[0], used[1], d->level, &st->t);
			st->t.p = cp_stats_p_beyond(&st->t, d->min_change);
			ntested += st->tested;
		}
	}
	if (!ntested) { /* one interval a side, or all alike: the plain diff is all there is */
		err = cp_error(EINVAL, "too few intervals with samples to test the changes (%zu before, %zu after)",
			       used[0], used[1]);
		goto out;
	}
	err = adjust(d);
out:
	free(shares);
	free(weight);
	if (err)
		cp_diffstat_release(d);
	return err;
}

int cp_diffstat_counts(const struct cp_fn_table *t, const double samples[2], double alpha, double min_change,
		       struct cp_diffstat *d)
{
	int err = start(t, alpha, min_change, CP_DIFFSTAT_COUNTS, d);

	if (err)
		return err;
	d->n[0] = (size_t)llround(samples[0]);
	d->n[1] = (size_t)llround(samples[1]);
	if (t->total[0] <= 0 || t->total[1] <= 0 || !(samples[0] > 0) || !(samples[1] > 0)) {
		cp_diffstat_release(d);
		return cp_error(EINVAL, "no samples %s to test the changes against", t->total[0] <= 0 ? "before" : "after");
	}
	for (uint32_t r = 0; r < t->nrows; r++) {
		const struct cp_fn_row *row = &t->rows[r];

		for (int j = 0; j < 2; j++) {
			struct cp_fn_stat *st = &d->rows[r][j];
			double x0 = (double)(j ? row->cum[0] : row->flat[0]) / (double)t->total[0];
			double x1 = (double)(j ? row->cum[1] : row->flat[1]) / (double)t->total[1];

			st->share[0] = x0;
			st->share[1] = x1;
			st->tested = cp_stats_prop(x0 * samples[0], samples[0], x1 * samples[1], samples[1], d->level, &st->t);
			st->t.p = cp_stats_p_beyond(&st->t, d->min_change);
		}
	}
	if ((err = adjust(d)))
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
