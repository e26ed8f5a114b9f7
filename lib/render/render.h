/* SPDX-License-Identifier: MIT */
/* Renderers: each writes to a stdio stream and returns 0 or -errno (a write
 * error on the stream is reported as its -errno, -EIO when the stream does not
 * say, with the reason in cp_errmsg). */
#ifndef CP_RENDER_H
#define CP_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "../profile.h"
#include "tree.h"
#include "../store/store.h"

/* Values in a unit, scaled the way pprof prints them: nanoseconds as
 * ns/us/ms/s/mins/hrs, bytes as B/kB/MB/GB/TB (1024-based), counts plain. */
const char *cp_format_value(int64_t v, const char *unit, char *buf, size_t len);

struct cp_table_opts {
	int limit; /* rows; 0 = all */
	const char *resolution; /* "Resolution: " line after Time (NULL: none) */
	/* the total before --focus/--ignore kept some samples (0: the profile's own): the percentages and
	 * "Total samples" are of it, as pprof shows them, under "Active filters:" and these lines */
	int64_t whole_total;
	const char *filters; /* "focus=RE", one a line (NULL: none) */
};
/* pprof's top table (the format -f top): flat flat% sum% cum cum% name */
int cp_render_table(FILE *out, const struct cp_profile *p, int vidx, const struct cp_table_opts *o);

/* JSON: type, unit, total, top rows, and the call tree. */
int cp_render_json(FILE *out, const struct cp_profile *p, int vidx, bool invert);
struct cp_json_opts {
	bool invert;        /* leaf-first tree */
	uint32_t max_nodes; /* keep the largest nodes of the tree (0: all); "truncated" says so */
	const char *resolution; /* a store's downsampled resolution ("1m", "10m"): "resolution" (NULL: none) */
};
int cp_render_json_opts(FILE *out, const struct cp_profile *p, int vidx, const struct cp_json_opts *o);

struct cp_diffstat;
struct cp_flame_opts {
	const char *title;    /* NULL: "Flame Graph" */
	const char *subtitle; /* NULL: none */
	const char *unit;     /* the unit of values, for the tooltip */
	bool diff;            /* widths from side 1 (after); colour from self after - before */
	/* diff: the significance of each frame's change (diffstat.h, rows: the
	 * tree's nodes; NULL: none).  A frame whose change was tested and is not
	 * significant, self nor total, is grey; the others are coloured by the
	 * change of their self share, or of their total share where only that
	 * is significant */
	const struct cp_diffstat *stat;
	bool icicle;          /* root at the top */
	int width;            /* pixels; 0 = 1200 */
};
/* A self-contained interactive SVG (hover: name, value, percent; click to
 * zoom; search).  For a plain graph the tree has side 0 only. */
int cp_render_flame(FILE *out, const struct cp_tree *t, const struct cp_flame_opts *o);

struct cp_diff_opts {
	int limit;      /* rows; 0 = all */
	bool normalize; /* sort by the normalised delta */
	const char *unit;
	const struct cp_tree *tree; /* JSON: add the two-sided call tree ("tree") */
	uint32_t max_nodes;         /* of that tree (0: all) */
	const struct cp_diffstat *stat; /* the rows' significance (diffstat.h): shown, and the order */
	bool only_significant;          /* with stat: only the significant rows */
	const struct cp_diffstat *tree_stat; /* JSON: the significance of tree's frames (rows: its nodes) */
};
/* Per function: before, after, delta, delta%, and the same normalised to
 * equal totals; sorted by the largest |delta|. */
int cp_render_diff_table(FILE *out, const struct cp_fn_table *t, const struct cp_diff_opts *o);
int cp_render_diff_json(FILE *out, const struct cp_fn_table *t, const struct cp_diff_opts *o);

struct cp_render_diff_opts {
	int limit;          /* table rows; 0 = all */
	bool normalize;     /* scale before to after's total */
	const char *title;  /* flame graph title (NULL: a default) */
	bool icicle;        /* flame graph hanging down */
	bool with_tree;     /* json: add the call tree with both sides */
	uint32_t max_nodes; /* of that tree */
	/* significance (diffstat.h): with intervals (niv[0] and niv[1] > 0)
	 * Welch's test over them, else with `significance` the test of sample
	 * counts; alpha the false discovery rate (0: CP_DIFF_FDR); min_change
	 * the smallest change of share called significant (negative:
	 * CP_DIFF_MIN_CHANGE) */
	bool significance, only_significant;
	double alpha;
	struct cp_profile *const *iv[2];
	size_t niv[2];
	double min_change;
};
/* Compare before (value vb) with after (va) in a diff format of the table below (table, json,
 * folded, flamegraph, pprof: the -diff_base form, gzipped; else -EINVAL naming them). */
int cp_render_diff(FILE *out, const char *format, const struct cp_profile *before, int vb,
		   const struct cp_profile *after, int va, const struct cp_render_diff_opts *o);

struct cp_render_opts {
	const char *output; /* what out is, named in write errors (NULL: "standard output" or "the output") */
	bool invert;        /* folded, json, flamegraph: leaf-first */
	int limit;          /* top: rows (0: all) */
	uint32_t max_nodes; /* json: keep the largest nodes of the tree (0: all) */
	const char *title;  /* flamegraph (NULL: "Flame Graph") */
	bool icicle;        /* flamegraph hanging down */
	const char *resolution; /* top, json: the store resolution the profile was
				 * selected at ("1m", "10m"; NULL: none said) */
	int64_t whole_total;    /* top: as cp_table_opts */
	const char *filters;    /* top: as cp_table_opts */
};
/* Value vidx of p in a profile format of the table below (else -EINVAL naming them).  pprof is
 * gzipped, with every value. */
int cp_render_profile(FILE *out, const char *format, const struct cp_profile *p, int vidx,
		      const struct cp_render_opts *o);

/* ---- the output formats: one table (format.c) ----
 * What cprof query, merge and diff take as --format, what the server's /api/v1/profile and
 * /api/v1/diff take as format=, and what usage, completions (cprof --list-formats) and test-docs
 * list, in the table's order.  A format renders one profile (profile), two compared (diff), or
 * both.  Adding one: its functions in a file of lib/render/, one row in format.c. */

/* two profiles compared: before (scaled to after's total with normalize), as given (unscaled: the
 * tests of significance count its samples), and after; the values vb and va */
struct cp_diff_pair {
	const struct cp_profile *before, *unscaled, *after;
	int vb, va;
};

struct cp_render_format {
	const char *name; /* as the commands take it */
	const char *api;  /* as the server's API takes it (svg: flamegraph) */
	const char *mime; /* its Content-Type */
	bool binary;      /* never written to a terminal */
	int (*profile)(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o); /* NULL: none */
	int (*diff)(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);      /* NULL: none */
};
enum { CP_RENDER_PROFILE = 1, CP_RENDER_DIFF = 2 };
/* The table, ending in a row without a name. */
extern const struct cp_render_format cp_render_formats[];
/* The format of kind (CP_RENDER_PROFILE or CP_RENDER_DIFF) called name, or NULL; _api: by its API name. */
const struct cp_render_format *cp_render_format_find(const char *name, unsigned kind);
const struct cp_render_format *cp_render_format_api(const char *name, unsigned kind);
/* The names (api: the API's) of the formats of kind and then extra (NULL: none), "a, b, c or d",
 * into buf (cut to its size). */
const char *cp_render_format_names(unsigned kind, bool api, const char *extra, char *buf, size_t size);

/* the rows' functions: profile.c and diff.c */
int cp_render_profile_as_top(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o);
int cp_render_profile_as_folded(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o);
int cp_render_profile_as_flame(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o);
int cp_render_profile_as_json(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o);
int cp_render_profile_as_pprof(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o);
int cp_render_diff_as_table(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);
int cp_render_diff_as_json(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);
int cp_render_diff_as_folded(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);
int cp_render_diff_as_flame(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);
int cp_render_diff_as_pprof(FILE *out, const struct cp_diff_pair *d, const struct cp_render_diff_opts *o);

/* Total per step (struct cp_over_time: store.h's cp_store_over_time_build): a table with bars, then a sparkline. */
int cp_render_over_time(FILE *out, const struct cp_over_time *o);
int cp_render_over_time_json(FILE *out, const struct cp_over_time *o);

/* One string a line, or a JSON array. */
int cp_render_strings(FILE *out, const char *const *items, size_t n, bool json);
/* Series as selectors (TYPE{k="v", ...}) a line, or JSON objects. */
int cp_render_series(FILE *out, const struct cp_store_series *ser, size_t n, bool json);

#endif
