/* SPDX-License-Identifier: MIT */
/* Regressions: for every group of series (by a label, e.g. each program's
 * comm), the functions whose share grew significantly between a baseline
 * range (a day or a week before) and the recent range of the same length.
 * What `cprof diff --baseline` prints and the server's /api/v1/regressions
 * returns.
 *
 * Each group is compared as `cprof diff` compares two stored selections
 * (diffstat.h: Welch's t test over the intervals), over the intervals a
 * diff of that group's selection has (cp_store_select_intervals: each
 * group's samples cut by their own span), and the Benjamini-Hochberg
 * q-values are taken over
 * the tests of all the groups together, so that the false discovery rate
 * holds for the whole list.  A group with no samples on one side is counted
 * (ngroups) but not compared.
 *
 * Ownership: a cp_regressions owns its rows and strings
 * (cp_regressions_release).  Errors: those of cp_store_select (a selector
 * that matches no series), -ENOMEM; messages in cp_errmsg. */
#ifndef CP_RENDER_REGRESS_H
#define CP_RENDER_REGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../selector.h"
#include "../store/store.h"
#include "diffstat.h"

struct cp_regression { /* one per function that grew */
	char *group;          /* the group label's value ("" when a series lacks it) */
	char *function;
	const char *kind;     /* what grew: "self", "total" (anywhere in the stack) or "self+total" */
	struct cp_fn_stat st; /* the larger growth's share before (baseline) and after (recent), change, q */
	size_t n[2];          /* intervals with samples, baseline and recent */
};

struct cp_regressions {
	const char *by;
	int64_t from, to, baseline; /* the recent range [from, to); the baseline is baseline earlier */
	double alpha, min_change;
	size_t ngroups, ncompared;  /* groups seen, groups with samples on both sides */
	struct cp_regression *rows; /* significant growths, largest change first */
	size_t nrows;
};

/* The regressions of the series sel matches, grouped by label `by`, over
 * [to - range, to) against the same range `baseline` earlier; alpha and
 * min_change as cp_diffstat_intervals takes them (0 and negative: the
 * defaults). */
int cp_regressions_find(struct cp_store *s, const struct cp_selector *sel, const char *by, int64_t to, int64_t range,
			int64_t baseline, double alpha, double min_change, struct cp_regressions *out);
void cp_regressions_release(struct cp_regressions *r);

/* A table (one row per regression, worst first) or JSON. */
int cp_render_regressions(FILE *out, const struct cp_regressions *r, bool json);

#endif
