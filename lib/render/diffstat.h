/* SPDX-License-Identifier: MIT */
/* Which changes between the two sides of a diff are more than chance.
 *
 * What is tested are rows, each with a self and a total value a side (a
 * struct cp_diffstat_source): the functions of a diff's table (tree.h;
 * cp_diffstat_functions) or the frames of its call tree, one per stack
 * prefix (cp_diffstat_frames), so that a frame is judged by its own change
 * and its subtree's, not by its function's over every stack.  For every row,
 * the change of its share of the total, self and total, with a confidence
 * interval, a p-value, and a q-value: Benjamini-Hochberg over all the tests
 * of the diff (two per row), so that among the changes called significant
 * at q <= alpha the expected fraction of false ones is at most alpha.
 *
 * Two methods (docs/DIFF.md says why and what they assume):
 * - intervals: each side is a series of profiles, one per interval of time
 *   (the store keeps one per process every 10 s).  A row's share is
 *   computed per interval, and Welch's t test compares the two sides' mean
 *   interval shares: the intervals are the independent units, so samples
 *   within an interval may be as correlated as they like (a loop that runs
 *   for a second is one burst, not a thousand independent samples).
 * - counts: one profile a side, no intervals.  The two-proportion test on
 *   sample counts, which assumes every sample independent: it overstates
 *   significance when they are not, and says so (method "counts").
 *
 * Ownership: a cp_diffstat owns its rows (cp_diffstat_release).  Errors:
 * -ENOMEM with the reason in cp_errmsg; -EINVAL when a side has no
 * intervals with samples, or no row could be tested (fewer than two
 * intervals a side, or no variance); a source's own errors. */
#ifndef CP_RENDER_DIFFSTAT_H
#define CP_RENDER_DIFFSTAT_H

#include <stdbool.h>
#include <stddef.h>

#include "../profile.h"
#include "../stats.h"
#include "tree.h"

/* The false discovery rate when none is asked for.  When nothing changed,
 * Benjamini-Hochberg flags anything at all with a chance of about alpha: at
 * 0.05, one A/A diff in twenty shows a "significant" change, which is the
 * noise users chase; at 0.01, one in a hundred.  A 3-point change of a 10%
 * function over 2 minutes at 99 Hz is still found (docs/DIFF.md). */
#define CP_DIFF_FDR 0.01

/* The smallest change of a share called significant, however sure: half a
 * percentage point.  Each side's intervals tell how much a share varies
 * within a run, not between runs, and some shares move between two runs of
 * the same program: the kernel's timer interrupt frames, whose share depends
 * on the sampling clock's phase against the tick, which is fixed for a run,
 * moved by 0.1 to 0.3 points between 2-minute runs of bench/diff_workload
 * at 99 Hz, and were all that its A/A pairs flagged (docs/DIFF.md).  A change
 * is then significant when the test rejects |change| <= this, not change = 0
 * (cp_stats_p_beyond). */
#define CP_DIFF_MIN_CHANGE 0.005

enum cp_diffstat_method { CP_DIFFSTAT_INTERVALS, CP_DIFFSTAT_COUNTS };

/* one test of a row (a function or a frame): of its self or its total share */
struct cp_fn_stat {
	double share[2];        /* of each side's total, 0..1 (intervals: the mean of the intervals') */
	struct cp_stats_test t; /* after - before, in share */
	double q;               /* Benjamini-Hochberg */
	bool tested;            /* false: nothing to test (no variance, too few intervals) */
	bool significant;       /* q <= alpha */
};

struct cp_diffstat {
	enum cp_diffstat_method method;
	size_t n[2];         /* intervals (counts: samples) per side */
	double alpha, level; /* the FDR asked for; the intervals' confidence level (1 - alpha) */
	double min_change;   /* the change of share tested against (0..1; CP_DIFF_MIN_CHANGE) */
	uint32_t nrows;      /* the source's rows when made */
	struct cp_fn_stat (*rows)[2]; /* rows[i][0]: self, rows[i][1]: total; i as in the source */
	uint32_t nsignificant;        /* rows with either significant */
};

/* Called by a source for each of its rows found in an interval's profile. */
typedef int (*cp_diffstat_put_fn)(void *ctx, uint32_t row, int64_t self, int64_t total);

/* The rows a diff tests, and how to read them from the two sides' sums
 * (the counts method) and from one interval's profile (the intervals
 * method). */
struct cp_diffstat_source {
	uint32_t nrows;
	int64_t total[2]; /* each side's total */
	const void *arg;  /* the table or the tree */
	/* row r's self and total value on side s */
	void (*values)(const void *arg, uint32_t r, int s, int64_t *self, int64_t *total);
	/* p's total (value vidx) in *sum, and put(ctx, row, self, total) for each
	 * row of the source that p has (what p has beyond them, e.g. what a
	 * filter left out of the sums, is left out); 0, -errno or put's error */
	int (*interval)(const void *arg, const struct cp_profile *p, int vidx, cp_diffstat_put_fn put, void *ctx,
			int64_t *sum);
};

/* The functions of a diff's table: row i is t->rows[i]. */
void cp_diffstat_functions(const struct cp_fn_table *t, struct cp_diffstat_source *src);
/* The frames of a diff's call tree (root first, as cp_tree_add without
 * invert makes it): row i is t->nodes[i], the root included (whose total
 * share is 1 on both sides: never tested).  An interval's frame is the
 * tree's frame of the same stack prefix. */
void cp_diffstat_frames(const struct cp_tree *t, struct cp_diffstat_source *src);

/* iv[s][0..n[s]): side s's interval profiles, value index vidx[s]; src the
 * rows to test, from the diff's sums of the two sides.  Intervals without
 * samples are left out.  min_change: the change of share below which
 * nothing is significant (0 to 1; negative: CP_DIFF_MIN_CHANGE): each
 * test's p is then that of |change| <= min_change (cp_stats_p_beyond). */
int cp_diffstat_intervals(const struct cp_diffstat_source *src, struct cp_profile *const *const iv[2], const size_t n[2],
			  const int vidx[2], double alpha, double min_change, struct cp_diffstat *out);
/* One profile a side: samples[s] the number of samples side s's total
 * stands for (the values are scaled to counts by samples / total). */
int cp_diffstat_counts(const struct cp_diffstat_source *src, const double samples[2], double alpha, double min_change,
		       struct cp_diffstat *out);
void cp_diffstat_release(struct cp_diffstat *d);

/* The q-values of d[0..n) redone together: Benjamini-Hochberg over the
 * counted tests of all of them, each marked significant at its own alpha
 * (regress.h: one false discovery rate over every group's tests).  The
 * makers above adjust each diff alone.  0 or -ENOMEM. */
int cp_diffstat_adjust(struct cp_diffstat *const *d, size_t n);

/* Whether test s counts among the diff's tests (Benjamini-Hochberg's n):
 * tested, and the row's shares before and after add up to at least
 * the smallest change, without which its change cannot exceed it (an
 * independent filter: it looks at the sum, which does not tell where the
 * change went).  The others keep q 1. */
bool cp_diffstat_counted(const struct cp_diffstat *d, const struct cp_fn_stat *s);

/* The rows in the order a reader wants them: significant changes first,
 * largest |change of share| (self, else total) first, then the rest by the
 * same; only the significant ones when only_significant.  NULL when out of
 * memory; *n rows. */
uint32_t *cp_diffstat_order(const struct cp_diffstat *d, bool only_significant, uint32_t *n);

/* "Welch's t test over the intervals, weighted by their samples" or "a test of sample counts (samples
 * assumed independent)" */
const char *cp_diffstat_method_name(const struct cp_diffstat *d);

#endif
