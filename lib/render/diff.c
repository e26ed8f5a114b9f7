/* SPDX-License-Identifier: MIT */
/* Comparing two profiles in one of the diff formats: the function table
 * (text or JSON), differential folded stacks, the differential flame graph,
 * or pprof's -diff_base form.  `cprof diff` and the server's /api/v1/diff
 * both render through here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../folded.h"
#include "../pprof.h"
#include "../util.h"
#include "diffstat.h"
#include "render.h"

/* How many samples p's total of value v stands for: its "samples" (or
 * "count") value's total, else the total over the period when the period is
 * of the value's type, else the total itself. */
static double sample_count(const struct cp_profile *p, int v)
{
	const char *unit = cp_profile_string(p, p->sample_types[v].unit);
	int64_t total = cp_profile_total(p, v);

	for (size_t i = 0; i < p->ntypes; i++) {
		const char *ty = cp_profile_string(p, p->sample_types[i].type);

		if (!strcmp(ty, "samples") || !strcmp(ty, "count"))
			return (double)cp_profile_total(p, (int)i);
	}
	if (p->period > 0 && !strcmp(cp_profile_string(p, p->period_type.unit), unit))
		return (double)total / (double)p->period;
	return (double)total;
}

/* the significance of src's rows (the table's functions or the tree's
 * frames), as o asks (*have: made) */
static int significance(const struct cp_diffstat_source *src, const struct cp_profile *before, int vb,
			const struct cp_profile *after, int va, const struct cp_render_diff_opts *o,
			struct cp_diffstat *ds, bool *have)
{
	int err;

	*have = false;
	if (o->niv[0] && o->niv[1]) {
		const int vidx[2] = { vb, va };

		err = cp_diffstat_intervals(src, o->iv, o->niv, vidx, o->alpha, o->min_change, ds);
	} else if (o->significance) {
		const double n[2] = { sample_count(before, vb), sample_count(after, va) };

		err = cp_diffstat_counts(src, n, o->alpha, o->min_change, ds);
	} else {
		return 0;
	}
	if (err == -EINVAL)
		return 0; /* a side without samples: nothing to test, the diff still stands */
	*have = !err;
	return err;
}

static const char *d_subtitle(const struct cp_diffstat *ds)
{
	return ds->method == CP_DIFFSTAT_INTERVALS
		       ? "width: after; red: grew, blue: shrank (share: self, else total); grey: not significant (Welch's t over the intervals, FDR)"
		       : "width: after; red: grew, blue: shrank (share: self, else total); grey: not significant (test of sample counts, FDR)";
}

/* pprof's form carries the figures as comments (go tool pprof -comments
 * lists them): the test, then one per significant change, largest first */
static int sig_comments(struct cp_profile *p, const struct cp_fn_table *ft, const struct cp_diffstat *ds)
{
	uint32_t n = 0, *order = cp_diffstat_order(ds, true, &n);
	char line[512];
	int err;

	if (!order)
		return cp_error(ENOMEM, "out of memory ordering the changes");
	snprintf(line, sizeof(line), "cprof diff: %s, %zu %s before, %zu after; %u significant changes of more than %gpp at FDR %g",
		 cp_diffstat_method_name(ds), ds->n[0], ds->method == CP_DIFFSTAT_INTERVALS ? "intervals" : "samples",
		 ds->n[1], ds->nsignificant, 100 * ds->min_change, ds->alpha);
	err = cp_profile_add_comment(p, line);
	for (uint32_t i = 0; !err && i < n; i++) {
		for (int j = 0; !err && j < 2; j++) {
			const struct cp_fn_stat *s = &ds->rows[order[i]][j];

			if (!s->significant)
				continue;
			snprintf(line, sizeof(line), "cprof diff: %s %s %+.2fpp (%.2f%% -> %.2f%%), interval [%+.2fpp, %+.2fpp], q %.3g",
				 cp_strtab_get(&ft->names, ft->rows[order[i]].name), j ? "total" : "self",
				 100 * (s->share[1] - s->share[0]), 100 * s->share[0], 100 * s->share[1], 100 * s->t.lo,
				 100 * s->t.hi, s->q);
			err = cp_profile_add_comment(p, line);
		}
	}
	free(order);
	return err;
}

static bool wants_test(const struct cp_render_diff_opts *o)
{
	return o->significance || (o->niv[0] && o->niv[1]);
}

/* the function table of before (tb: as shown) and after, and the
 * significance o asks for of its functions, of unscaled (before as it was)
 * against after */
static int table_and_test(const struct cp_profile *tb, const struct cp_profile *unscaled, int vb,
			  const struct cp_profile *after, int va, const struct cp_render_diff_opts *o,
			  struct cp_fn_table **ft, struct cp_diffstat *ds, bool *have)
{
	struct cp_diffstat_source src;
	int err;

	if (!(*ft = cp_fn_table_new()))
		return cp_error(ENOMEM, "out of memory building the function table");
	if ((err = cp_fn_table_add(*ft, tb, vb, 0)) || (err = cp_fn_table_add(*ft, after, va, 1)))
		return err;
	cp_diffstat_functions(*ft, &src);
	return significance(&src, unscaled, vb, after, va, o, ds, have);
}

/* the significance o asks for of the frames of t (one per stack prefix) */
static int frames_test(const struct cp_tree *t, const struct cp_profile *unscaled, int vb, const struct cp_profile *after,
		       int va, const struct cp_render_diff_opts *o, struct cp_diffstat *ns, bool *have)
{
	struct cp_diffstat_source src;

	*have = false;
	if (!wants_test(o))
		return 0;
	cp_diffstat_frames(t, &src);
	return significance(&src, unscaled, vb, after, va, o, ns, have);
}

int cp_render_diff(FILE *out, const char *format, const struct cp_profile *before, int vb,
		   const struct cp_profile *after, int va, const struct cp_render_diff_opts *o)
{
	const struct cp_profile *unscaled = before;
	struct cp_diffstat ds = { 0 }, ns = { 0 };
	bool have_stat = false, have_ns = false;
	const char *unit = cp_profile_string(after, after->sample_types[va].unit);
	struct cp_merge_opts mo = { 0 };
	struct cp_fn_table *ft = NULL;
	struct cp_profile *scaled = NULL, *res = NULL;
	struct cp_tree *t = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = -ENOMEM;
	bool json = !strcmp(format, "json");

	if (o->normalize) {
		int64_t tb = cp_profile_total(before, vb), ta = cp_profile_total(after, va);

		mo.scale = tb ? (double)ta / (double)tb : 1;
		if (!(scaled = cp_profile_copy(before, &mo)))
			goto out;
		before = scaled;
	}
	if (json || !strcmp(format, "flamegraph")) {
		if (!(t = cp_tree_new()) || (err = cp_tree_add(t, before, vb, 0, false)) ||
		    (err = cp_tree_add(t, after, va, 1, false)) || (err = cp_tree_sort(t)))
			goto out;
	}
	if (!strcmp(format, "table") || json) {
		struct cp_diff_opts d = { o->limit, o->normalize, unit, NULL, o->max_nodes, NULL, false, NULL };

		if ((err = table_and_test(before, unscaled, vb, after, va, o, &ft, &ds, &have_stat)) ||
		    (json && o->with_tree && (err = frames_test(t, unscaled, vb, after, va, o, &ns, &have_ns))))
			goto out;
		d.tree = o->with_tree ? t : NULL;
		d.stat = have_stat ? &ds : NULL;
		d.tree_stat = have_ns ? &ns : NULL;
		d.only_significant = o->only_significant;
		err = json ? cp_render_diff_json(out, ft, &d) : cp_render_diff_table(out, ft, &d);
	} else if (!strcmp(format, "folded")) {
		err = cp_folded_write_diff(out, before, after, vb, va);
	} else if (!strcmp(format, "flamegraph")) {
		struct cp_flame_opts fo = { 0 };

		if ((err = frames_test(t, unscaled, vb, after, va, o, &ns, &have_ns)))
			goto out;
		fo.title = o->title ? o->title : "Differential Flame Graph";
		fo.subtitle = "width: after; red: grew, blue: shrank (self value)";
		if (have_ns) {
			fo.stat = &ns;
			fo.subtitle = d_subtitle(&ns);
		}
		fo.unit = unit;
		fo.diff = true;
		fo.icicle = o->icicle;
		err = cp_render_flame(out, t, &fo);
	} else if (!strcmp(format, "pprof")) { /* pprof's -diff_base form */
		mo.scale = -1;
		mo.tag_key = "pprof::base";
		mo.tag_value = "true";
		if ((err = cp_profile_compatible(after, before)) || !(res = cp_profile_copy(after, NULL))) {
			err = err ? err : -errno;
			goto out;
		}
		if ((err = cp_profile_merge(res, before, &mo)))
			goto out;
		if (wants_test(o) && ((err = table_and_test(unscaled, unscaled, vb, after, va, o, &ft, &ds, &have_stat)) ||
				      (have_stat && (err = sig_comments(res, ft, &ds)))))
			goto out;
		if ((err = cp_pprof_encode(res, 1, &buf, &len)))
			goto out;
		err = fwrite(buf, 1, len, out) == len ? 0 : cp_stream_check(out, NULL);
	} else {
		err = cp_error(EINVAL, "unknown diff format '%s' (choose table, flamegraph, folded, json or pprof)", format);
	}
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory");
	free(buf);
	cp_diffstat_release(&ds);
	cp_diffstat_release(&ns);
	cp_fn_table_free(ft);
	cp_tree_free(t);
	cp_profile_free(scaled);
	cp_profile_free(res);
	return err;
}
