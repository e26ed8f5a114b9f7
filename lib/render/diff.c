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

/* the tree of both sides (side 0 before, 1 after), into *t */
static int both_tree(const struct cp_diff_pair *d, struct cp_tree **t)
{
	int err;

	if (!(*t = cp_tree_new()))
		return cp_error(ENOMEM, "out of memory");
	if ((err = cp_tree_add(*t, d->before, d->vb, 0, false)) || (err = cp_tree_add(*t, d->after, d->va, 1, false)) ||
	    (err = cp_tree_sort(*t)))
		return err;
	return 0;
}

static const char *pair_unit(const struct cp_diff_pair *d)
{
	return cp_profile_string(d->after, d->after->sample_types[d->va].unit);
}

/* table and json: the function table (json: with the call tree when o asks) */
static int fn_table(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o, bool json)
{
	struct cp_diff_opts dopt = { o->limit, o->normalize, pair_unit(d), NULL, o->max_nodes, NULL, false, NULL };
	struct cp_diffstat ds = { 0 }, ns = { 0 };
	struct cp_fn_table *ft = NULL;
	struct cp_tree *t = NULL;
	bool have_stat = false, have_ns = false;
	int err;

	if (!(err = table_and_test(d->before, d->unscaled, d->vb, d->after, d->va, o, &ft, &ds, &have_stat)) &&
	    !(json && o->with_tree &&
	      ((err = both_tree(d, &t)) ||
	       (err = frames_test(t, d->unscaled, d->vb, d->after, d->va, o, &ns, &have_ns))))) {
		dopt.tree = json && o->with_tree ? t : NULL;
		dopt.stat = have_stat ? &ds : NULL;
		dopt.tree_stat = have_ns ? &ns : NULL;
		dopt.only_significant = o->only_significant;
		err = json ? cp_render_diff_json(out, ft, &dopt) : cp_render_diff_table(out, ft, &dopt);
	}
	cp_diffstat_release(&ds);
	cp_diffstat_release(&ns);
	cp_fn_table_free(ft);
	cp_tree_free(t);
	return err;
}

int cp_render_diff_as_table(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o)
{
	return fn_table(out, d, o, false);
}

int cp_render_diff_as_json(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o)
{
	return fn_table(out, d, o, true);
}

int cp_render_diff_as_folded(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o)
{
	(void)o;
	return cp_folded_write_diff(out, d->before, d->after, d->vb, d->va);
}

int cp_render_diff_as_flame(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o)
{
	struct cp_flame_opts fo = { 0 };
	struct cp_diffstat ns = { 0 };
	struct cp_tree *t = NULL;
	bool have_ns = false;
	int err;

	if (!(err = both_tree(d, &t)) && !(err = frames_test(t, d->unscaled, d->vb, d->after, d->va, o, &ns, &have_ns))) {
		fo.title = o->title ? o->title : "Differential Flame Graph";
		fo.subtitle = "width: after; red: grew, blue: shrank (self value)";
		if (have_ns) {
			fo.stat = &ns;
			fo.subtitle = d_subtitle(&ns);
		}
		fo.unit = pair_unit(d);
		fo.diff = true;
		fo.icicle = o->icicle;
		err = cp_render_flame(out, t, &fo);
	}
	cp_diffstat_release(&ns);
	cp_tree_free(t);
	return err;
}

/* pprof's -diff_base form: after, and before negated with the sample label pprof::base=true */
int cp_render_diff_as_pprof(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o)
{
	struct cp_merge_opts mo = { .scale = -1, .tag_key = "pprof::base", .tag_value = "true" };
	struct cp_diffstat ds = { 0 };
	struct cp_fn_table *ft = NULL;
	struct cp_profile *res = NULL;
	bool have_stat = false;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if ((err = cp_profile_compatible(d->after, d->before)) || !(res = cp_profile_copy(d->after, NULL))) {
		err = err ? err : cp_error(ENOMEM, "out of memory");
		goto out;
	}
	if ((err = cp_profile_merge(res, d->before, &mo)))
		goto out;
	if (wants_test(o) &&
	    ((err = table_and_test(d->unscaled, d->unscaled, d->vb, d->after, d->va, o, &ft, &ds, &have_stat)) ||
	     (have_stat && (err = sig_comments(res, ft, &ds)))))
		goto out;
	if (!(err = cp_pprof_encode(res, 1, &buf, &len)))
		err = fwrite(buf, 1, len, out) == len ? 0 : cp_stream_check(out, NULL);
out:
	free(buf);
	cp_diffstat_release(&ds);
	cp_fn_table_free(ft);
	cp_profile_free(res);
	return err;
}

int cp_render_diff(FILE *out, const char *format, const struct cp_profile *before, int vb,
		   const struct cp_profile *after, int va, const struct cp_render_diff_opts *o)
{
	const struct cp_render_format *f = cp_render_format_find(format, CP_RENDER_DIFF);
	struct cp_diff_pair d = { before, before, after, vb, va };
	struct cp_profile *scaled = NULL;
	char names[128];
	int err;

	if (!f)
		return cp_error(EINVAL, "unknown diff format '%.32s' (choose %s)", format ? format : "",
				cp_render_format_names(CP_RENDER_DIFF, false, NULL, names, sizeof(names)));
	if (o->normalize) {
		int64_t tb = cp_profile_total(before, vb), ta = cp_profile_total(after, va);
		struct cp_merge_opts mo = { .scale = tb ? (double)ta / (double)tb : 1 };

		if (!(scaled = cp_profile_copy(before, &mo)))
			return cp_error(ENOMEM, "out of memory");
		d.before = scaled;
	}
	err = f->diff(out, &d, o);
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory");
	cp_profile_free(scaled);
	return err;
}
