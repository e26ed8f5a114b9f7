/* SPDX-License-Identifier: MIT */
/* lib/stats.c against closed forms (Student's t with 1 and 2 degrees of
 * freedom), published quantiles, and values computed by a separate numerical
 * integration of the t density (Simpson's rule, 200,000 steps, in Python:
 * the figures are in the comments). */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "stats.h"
#include "testutil.h"

START_TEST(test_t_closed_forms)
{
	for (double t = -20; t <= 20; t += 0.37) {
		/* df 1 (Cauchy): 1/2 - atan(t)/pi; df 2: 1/2 - t / (2 sqrt(t^2 + 2)) */
		ck_assert_double_eq_tol(cp_stats_t_sf(t, 1), 0.5 - atan(t) / M_PI, 1e-12);
		ck_assert_double_eq_tol(cp_stats_t_sf(t, 2), 0.5 - t / (2 * sqrt(t * t + 2)), 1e-12);
	}
	ck_assert_double_eq_tol(cp_stats_t_sf(0, 7.3), 0.5, 1e-15);
	ck_assert_double_eq(cp_stats_t_sf(INFINITY, 3), 0);
	ck_assert(isnan(cp_stats_t_sf(1, 0)));
}
END_TEST

START_TEST(test_t_reference)
{
	/* tables: t(0.975; 10) = 2.228139, t(0.95; 10) = 1.812461, t(0.975; 1) = 12.7062 */
	ck_assert_double_eq_tol(cp_stats_t_sf(2.228139, 10), 0.025, 1e-7);
	ck_assert_double_eq_tol(cp_stats_t_sf(1.812461, 10), 0.05, 1e-7);
	ck_assert_double_eq_tol(cp_stats_t_isf(0.025, 10), 2.228139, 1e-5);
	ck_assert_double_eq_tol(cp_stats_t_isf(0.025, 1), 12.7062, 1e-3);
	/* Simpson: 0.0943384845, 0.0026949820 (fractional df too) */
	ck_assert_double_eq_tol(cp_stats_t_sf(1.5, 5.5), 0.0943384845, 1e-8);
	ck_assert_double_eq_tol(cp_stats_t_sf(3.0, 30), 0.0026949820, 1e-8);
	/* many df: the normal */
	ck_assert_double_eq_tol(cp_stats_t_sf(1.959964, 1e6), cp_stats_norm_sf(1.959964), 1e-6);
	ck_assert_double_eq_tol(cp_stats_norm_sf(1.959964), 0.025, 1e-7);
}
END_TEST

START_TEST(test_welch)
{
	/* means 3 and 6, variances 2.5 and 10: t = 1.8973665961, df = 5.8823529412,
	 * p = 0.1075311949 (Simpson) */
	static const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 2, 4, 6, 8, 10 };
	static const double c[] = { 1, 1, 1 };
	struct cp_stats_test r;

	ck_assert(cp_stats_welch(a, 5, b, 5, 0.95, &r));
	ck_assert_double_eq_tol(r.delta, 3, 1e-12);
	ck_assert_double_eq_tol(r.se, sqrt(2.5), 1e-12);
	ck_assert_double_eq_tol(r.df, 5.8823529412, 1e-9);
	ck_assert_double_eq_tol(r.p, 0.1075311949, 1e-8);
	/* the interval holds 0 exactly when p > 0.05, and is delta -+ t se */
	ck_assert(r.lo < 0 && r.hi > 0);
	ck_assert_double_eq_tol((r.hi - r.lo) / 2, cp_stats_t_isf(0.025, r.df) * r.se, 1e-9);
	/* nothing to test: one value, or no variance */
	ck_assert(!cp_stats_welch(a, 1, b, 5, 0.95, &r));
	ck_assert_double_eq(r.p, 1);
	ck_assert(!cp_stats_welch(c, 3, c, 3, 0.95, &r));
	ck_assert_double_eq(r.p, 1);
}
END_TEST

/* weighted: a = .1, .2, .5 weighing 10, 10, 1 (mean 3.5/21, variance of the
 * mean 3/2 * sum((w/21)^2 (x - mean)^2) = 0.0022675737), b = .3, .35 weighing
 * 5, 5 (0.325, 0.000625): delta 0.1583333, se 0.0537827, df 2.8251846 (by
 * hand); equal weights are the unweighted test */
START_TEST(test_welch_weighted)
{
	static const double a[] = { 0.1, 0.2, 0.5 }, wa[] = { 10, 10, 1 }, b[] = { 0.3, 0.35 }, wb[] = { 5, 5 };
	static const double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 6, 8, 10 }, w7[] = { 7, 7, 7, 7, 7 };
	static const double wbad[] = { 10, 0, 1 };
	struct cp_stats_test r, u;

	ck_assert(cp_stats_welch_w(a, wa, 3, b, wb, 2, 0.95, &r));
	ck_assert_double_eq_tol(r.delta, 0.15833333333333335, 1e-12);
	ck_assert_double_eq_tol(r.se, 0.05378265237179293, 1e-12);
	ck_assert_double_eq_tol(r.df, 2.825184590374511, 1e-9);
	ck_assert_double_eq_tol(r.p, 2 * cp_stats_t_sf(r.delta / r.se, r.df), 1e-12);
	/* the small interval (weight 1, share .5) moves the mean by a 21st of its distance */
	ck_assert(cp_stats_welch(a, 3, b, 2, 0.95, &u));
	ck_assert(u.se > 2 * r.se);
	ck_assert(cp_stats_welch_w(x, w7, 5, y, w7, 5, 0.95, &r));
	ck_assert(cp_stats_welch(x, 5, y, 5, 0.95, &u));
	ck_assert_double_eq_tol(r.delta, u.delta, 1e-12);
	ck_assert_double_eq_tol(r.se, u.se, 1e-12);
	ck_assert_double_eq_tol(r.df, u.df, 1e-9);
	ck_assert_double_eq_tol(r.p, u.p, 1e-12);
	/* a weight that is not positive: nothing to test */
	ck_assert(!cp_stats_welch_w(a, wbad, 3, b, wb, 2, 0.95, &r));
	ck_assert_double_eq(r.p, 1);
}
END_TEST

START_TEST(test_prop)
{
	/* 40/100 against 60/100: pooled 0.5, se0 = sqrt(0.5 * 0.5 * 0.02) = 0.0707107,
	 * z = 2.828427, p = 2 * P(Z > z) = 0.0046777 */
	struct cp_stats_test r;

	ck_assert(cp_stats_prop(40, 100, 60, 100, 0.95, &r));
	ck_assert_double_eq_tol(r.delta, 0.2, 1e-12);
	ck_assert_double_eq_tol(r.p, 0.0046777, 1e-6);
	/* unpooled interval: 0.2 -+ 1.959964 sqrt(0.24/100 * 2) */
	ck_assert_double_eq_tol(r.hi - 0.2, 1.959964 * sqrt(0.0048), 1e-5);
	ck_assert(!cp_stats_prop(0, 0, 1, 2, 0.95, &r));
}
END_TEST

START_TEST(test_bh)
{
	/* sorted 0.005, 0.01, 0.03, 0.04: p n / k = 0.02, 0.02, 0.04, 0.04 */
	double p[] = { 0.01, 0.04, 0.03, 0.005 }, q[4];
	/* monotone: the k-th is the min over j >= k */
	double p2[] = { 0.001, 0.2, 0.0101 }, q2[3];

	ck_assert_int_eq(cp_stats_bh(p, 4, q), 0);
	ck_assert_double_eq_tol(q[0], 0.02, 1e-15);
	ck_assert_double_eq_tol(q[1], 0.04, 1e-15);
	ck_assert_double_eq_tol(q[2], 0.04, 1e-15);
	ck_assert_double_eq_tol(q[3], 0.02, 1e-15);
	ck_assert_int_eq(cp_stats_bh(p2, 3, q2), 0);
	ck_assert_double_eq_tol(q2[0], 0.003, 1e-15);
	ck_assert_double_eq_tol(q2[2], 0.01515, 1e-12);
	ck_assert_double_eq_tol(q2[1], 0.2, 1e-15);
	/* in place */
	ck_assert_int_eq(cp_stats_bh(p, 4, p), 0);
	ck_assert_double_eq_tol(p[1], 0.04, 1e-15);
	ck_assert_int_eq(cp_stats_bh(NULL, 0, NULL), 0);
}
END_TEST

/* a change of more than m: P(T > (|delta| - m) / se) + P(T > (|delta| +
 * m) / se); with df 2, P(T > x) = 1/2 - x / (2 sqrt(x^2 + 2)): delta 3, se
 * 1, m 1 gives x = 2 and 4, 1 - 1 / sqrt(6) - 2 / sqrt(18); m 3 gives 0 and
 * 6, 1 - 3 / sqrt(38); the normal's P(Z > 2.5) = 0.0062096653 and P(Z >
 * 3.5) = 0.0002326291 (tables) */
START_TEST(test_p_beyond)
{
	struct cp_stats_test t = { 3, 1, 2, 0, 0, 0.123 };
	struct cp_stats_test z = { -0.03, 0.01, 0, 0, 0, 0.0027 };

	ck_assert_double_eq(cp_stats_p_beyond(&t, 0), 0.123); /* m 0: the test of 0 itself */
	ck_assert_double_eq_tol(cp_stats_p_beyond(&t, 1), 1 - 1 / sqrt(6) - 2 / sqrt(18), 1e-12);
	ck_assert_double_eq_tol(cp_stats_p_beyond(&t, 3), 1 - 3 / sqrt(38), 1e-12); /* at the edge: about 1/2 */
	ck_assert_double_gt(cp_stats_p_beyond(&t, 30), 0.99); /* well inside: about 1 */
	t.delta = -3; /* either direction */
	ck_assert_double_eq_tol(cp_stats_p_beyond(&t, 1), 1 - 1 / sqrt(6) - 2 / sqrt(18), 1e-12);
	ck_assert_double_eq_tol(cp_stats_p_beyond(&z, 0.005), 0.0062096653 + 0.0002326291, 1e-9);
	/* a larger margin never makes a change more significant */
	for (double m = 0.001, last = 0; m < 0.04; m += 0.001) {
		double p = cp_stats_p_beyond(&z, m);

		ck_assert(p >= last);
		last = p;
	}
}
END_TEST

int main(void)
{
	const TTest *const tests[] = { test_t_closed_forms, test_t_reference, test_welch, test_welch_weighted, test_prop, test_bh,
				       test_p_beyond };

	return run_tests("stats", tests, sizeof(tests) / sizeof(*tests));
}
