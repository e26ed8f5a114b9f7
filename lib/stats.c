/* SPDX-License-Identifier: MIT */
/* Statistics for comparing profiles (stats.h). */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "error.h"

/* The continued fraction of the regularized incomplete beta function
 * I_x(a, b) (modified Lentz's method), for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, del;

		/* the even step */
		num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + num * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		h *= d * c;
		/* the odd step */
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + num * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

/* I_x(a, b) */
static double beta_inc(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double cp_stats_t_sf(double t, double df)
{
	double tail;

	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 0 : 1;
	/* P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2) */
	tail = 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));
	return t > 0 ? tail : 1 - tail;
}

double cp_stats_t_isf(double p, double df)
{
	double lo = -1e6, hi = 1e6;

	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * (1 + fabs(lo)); i++) {
		double mid = (lo + hi) / 2;

		if (cp_stats_t_sf(mid, df) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double cp_stats_norm_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2));
}

/* the z with P(Z > z) = p */
static double norm_isf(double p)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
		double mid = (lo + hi) / 2;

		if (cp_stats_norm_sf(mid) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* the weighted mean of v and the variance of that mean (cp_stats_welch_w) */
static void mean_var(const double *v, const double *w, size_t n, double *mean, double *var)
{
	double m = 0, s = 0, W = 0;

	for (size_t i = 0; i < n; i++) {
		W += w ? w[i] : 1;
		m += (w ? w[i] : 1) * v[i];
	}
	m /= W;
	for (size_t i = 0; i < n; i++) {
		double f = (w ? w[i] : 1) / W;

		s += f * f * (v[i] - m) * (v[i] - m);
	}
	*mean = m;
	*var = n > 1 ? s * (double)n / (double)(n - 1) : 0;
}

static bool weights_ok(const double *w, size_t n)
{
	for (size_t i = 0; w && i < n; i++)
		if (!(w[i] > 0))
			return false;
	return true;
}

bool cp_stats_welch_w(const double *a, const double *wa, size_t na, const double *b, const double *wb, size_t nb,
		      double level, struct cp_stats_test *out)
{
	double ma, sa, mb, sb, tq;

	out->delta = out->se = out->df = out->lo = out->hi = 0;
	out->p = 1;
	if (na < 2 || nb < 2 || !weights_ok(wa, na) || !weights_ok(wb, nb))
		return false;
	mean_var(a, wa, na, &ma, &sa);
	mean_var(b, wb, nb, &mb, &sb);
	out->delta = out->lo = out->hi = mb - ma;
	if (!(sa + sb > 0))
		return false; /* no variance: nothing says how far chance goes */
	out->se = sqrt(sa + sb);
	out->df = (sa + sb) * (sa + sb) / (sa * sa / (double)(na - 1) + sb * sb / (double)(nb - 1));
	out->p = 2 * cp_stats_t_sf(fabs(out->delta) / out->se, out->df);
	if (out->p > 1)
		out->p = 1;
	tq = cp_stats_t_isf((1 - level) / 2, out->df);
	out->lo = out->delta - tq * out->se;
	out->hi = out->delta + tq * out->se;
	return true;
}

bool cp_stats_welch(const double *a, size_t na, const double *b, size_t nb, double level, struct cp_stats_test *out)
{
	return cp_stats_welch_w(a, NULL, na, b, NULL, nb, level, out);
}

bool cp_stats_prop(double xa, double na, double xb, double nb, double level, struct cp_stats_test *out)
{
	double pa, pb, pp, se0, z;

	out->delta = out->se = out->df = out->lo = out->hi = 0;
	out->p = 1;
	if (!(na > 0 && nb > 0))
		return false;
	pa = xa / na;
	pb = xb / nb;
	out->delta = out->lo = out->hi = pb - pa;
	pp = (xa + xb) / (na + nb);
	se0 = sqrt(pp * (1 - pp) * (1 / na + 1 / nb));
	out->se = sqrt(pa * (1 - pa) / na + pb * (1 - pb) / nb);
	if (!(se0 > 0))
		return false;
	out->p = 2 * cp_stats_norm_sf(fabs(out->delta) / se0);
	if (out->p > 1)
		out->p = 1;
	z = norm_isf((1 - level) / 2);
	out->lo = out->delta - z * out->se;
	out->hi = out->delta + z * out->se;
	return true;
}

struct by_p {
	double p;
	size_t i;
};

static int cmp_p(const void *x, const void *y)
{
	double a = ((const struct by_p *)x)->p, b = ((const struct by_p *)y)->p;

	return a < b ? -1 : a > b;
}

int cp_stats_bh(const double *p, size_t n, double *q)
{
	struct by_p *s;
	double run = 1;

	if (!n)
		return 0;
	if (!(s = malloc(n * sizeof(*s))))
		return cp_error(ENOMEM, "out of memory adjusting p-values");
	for (size_t i = 0; i < n; i++)
		s[i] = (struct by_p){ isnan(p[i]) ? 1 : p[i], i };
	qsort(s, n, sizeof(*s), cmp_p);
	/* q of the k-th smallest: min over j >= k of p_(j) n / j */
	for (size_t k = n; k-- > 0;) {
		double v = s[k].p * (double)n / (double)(k + 1);

		if (v < run)
			run = v;
		q[s[k].i] = run;
	}
	free(s);
	return 0;
}

double cp_stats_p_beyond(const struct cp_stats_test *t, double m)
{
	double x, y, p;

	if (!(m > 0))
		return t->p;
	if (!(t->se > 0))
		return fabs(t->delta) > m ? t->p : 1;
	/* the least favourable null is the edge nearer the estimate, a change
	 * of m its way: an estimate at least this far from it, either way */
	x = (fabs(t->delta) - m) / t->se;
	y = (fabs(t->delta) + m) / t->se;
	p = t->df > 0 ? cp_stats_t_sf(x, t->df) + cp_stats_t_sf(y, t->df) : cp_stats_norm_sf(x) + cp_stats_norm_sf(y);
	return p > 1 ? 1 : p;
}
