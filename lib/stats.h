/* SPDX-License-Identifier: MIT */
/* Statistics for comparing profiles (`cprof diff`): Student's t
 * distribution, Welch's two-sample t test with its confidence interval, a
 * two-proportion test for counts, and the Benjamini-Hochberg adjustment for
 * many tests at once.
 *
 * Pure functions over the caller's arrays: nothing is allocated except by
 * cp_stats_bh (its scratch, freed before it returns).  Errors: cp_stats_bh
 * returns -ENOMEM; the tests return false when there is nothing to test
 * (fewer than two values on a side, or no variance anywhere) and leave the
 * result with p = 1. */
#ifndef CP_STATS_H
#define CP_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* P(T > t) for Student's t with df degrees of freedom (df > 0). */
double cp_stats_t_sf(double t, double df);
/* The t with P(T > t) = p (0 < p < 1). */
double cp_stats_t_isf(double p, double df);
/* P(Z > z) for the standard normal. */
double cp_stats_norm_sf(double z);

struct cp_stats_test {
	double delta;  /* mean of b - mean of a (or proportion of b - of a) */
	double se;     /* its standard error */
	double df;     /* Welch-Satterthwaite degrees of freedom (counts: infinite, 0 here) */
	double lo, hi; /* the confidence interval of delta at the level asked for */
	double p;      /* two-sided p-value of delta = 0 */
};

/* Welch's t test of mean(b) - mean(a), values a[0..na) and b[0..nb), with
 * a confidence interval at `level` (e.g. 0.95). */
bool cp_stats_welch(const double *a, size_t na, const double *b, size_t nb, double level, struct cp_stats_test *out);
/* The same with a weight per value (wa, wb > 0; NULL: all 1), for shares of
 * clusters of unequal size (an interval's share, weighted by its samples):
 * each side's mean is the weighted one, sum(w x) / sum(w), and its variance
 * the ratio estimator's of cluster sampling, m / (m - 1) * sum((w_i / W)^2
 * (x_i - mean)^2) for m values of total weight W, which is s^2 / m when the
 * weights are equal; Welch-Satterthwaite degrees of freedom with m - 1 a
 * side.  A small cluster moves the mean and the variance in proportion to
 * its weight, not as much as a whole one. */
bool cp_stats_welch_w(const double *a, const double *wa, size_t na, const double *b, const double *wb, size_t nb,
		      double level, struct cp_stats_test *out);

/* The two-proportion z test of xb/nb - xa/na (pooled variance for the
 * p-value, unpooled for the interval). */
bool cp_stats_prop(double xa, double na, double xb, double nb, double level, struct cp_stats_test *out);

/* The p-value of |delta| <= m against |delta| > m, from t's delta, se and
 * df (df 0: normal): under the least favourable null, a true change of m
 * towards the estimate, the chance of an estimate at least as far from it
 * either way, P(T > (|delta| - m) / se) + P(T > (|delta| + m) / se), at
 * most 1; t->p itself when m is 0 (where it is 2 P(T > |delta| / se)).  A
 * test of a change of more than m, where t->p tests a change at all. */
double cp_stats_p_beyond(const struct cp_stats_test *t, double m);

/* Benjamini-Hochberg adjusted p-values (q-values): q[i] <= alpha means test
 * i is a discovery at false discovery rate alpha.  q may be p. */
int cp_stats_bh(const double *p, size_t n, double *q);

#endif
