/* SPDX-License-Identifier: MIT */
/* JSON output (jansson): a profile's top rows and call tree, or a diff table. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "../error.h"
#include "../util.h"
#include "diffstat.h"
#include "render.h"

uint32_t *cp_fn_table_sorted(const struct cp_fn_table *t, int mode, uint32_t *n);

/* which nodes a tree of at most max nodes keeps: the largest (by the
 * larger side), ties to the older node; a child is never larger than its
 * parent and is newer, so the kept set hangs together from the root */
static int64_t node_size(const struct cp_tree_node *n)
{
	return n->total[0] > n->total[1] ? n->total[0] : n->total[1];
}

/* the k-th largest of v[0..n) (k from 0), by quickselect; v is reordered */
static int64_t kth_largest(int64_t *v, long n, long k)
{
	long lo = 0, hi = n - 1;

	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], tmp;
		long i = lo, j = hi;

		while (i <= j) { /* Hoare: larger values to the left */
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j) {
				tmp = v[i], v[i] = v[j], v[j] = tmp;
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

static int prune(const struct cp_tree *t, uint32_t max, uint8_t **keep)
{
	int64_t *sizes, cut;
	uint32_t i, kept = 0;

	*keep = NULL;
	if (!max || t->nnodes <= max)
		return 0;
	sizes = malloc(t->nnodes * sizeof(*sizes));
	*keep = calloc(t->nnodes, 1);
	if (!sizes || !*keep) {
		free(sizes);
		free(*keep);
		*keep = NULL;
		return cp_error(ENOMEM, "out of memory pruning the call tree");
	}
	for (i = 0; i < t->nnodes; i++)
		sizes[i] = node_size(&t->nodes[i]);
	cut = kth_largest(sizes, (long)t->nnodes, (long)max - 1);
	free(sizes);
	/* everything above the cut, then nodes at it, oldest first */
	for (i = 0; i < t->nnodes; i++)
		if (node_size(&t->nodes[i]) > cut)
			(*keep)[i] = 1, kept++;
	for (i = 0; i < t->nnodes && kept < max; i++)
		if (node_size(&t->nodes[i]) == cut)
			(*keep)[i] = 1, kept++;
	(*keep)[0] = 1;
	return 1;
}

/* Nodes deeper than this are left out of the JSON tree (their totals stay in their ancestors', and the
 * answer says "truncated"): the tree is built and written recursively (here and in jansson's dump), two
 * nesting levels a frame, and parsers limit nesting too (jansson's to 2048, Python's to about 1000 by
 * its recursion limit, jq 1.6's to 256). */
#define JSON_TREE_MAX_DEPTH 256

/* a diff frame's tests (diffstat.h): the change of its self and total
 * shares, their q-values when tested, and which are significant */
static int node_stat_json(json_t *o, const struct cp_fn_stat *s)
{
	static const char *const kind[] = { "self", "total" };
	char key[32];

	for (int j = 0; j < 2; j++) {
		snprintf(key, sizeof(key), "%s_change", kind[j]);
		if (json_object_set_new(o, key, json_real(s[j].share[1] - s[j].share[0])))
			return -1;
		snprintf(key, sizeof(key), "%s_q", kind[j]);
		if (s[j].tested && json_object_set_new(o, key, json_real(s[j].q)))
			return -1;
	}
	if ((s[0].significant || s[1].significant) &&
	    json_object_set_new(o, "significant",
				json_string(s[0].significant && s[1].significant ? "self+total" : s[0].significant ? "self" : "total")))
		return -1;
	return 0;
}

static json_t *tree_json(const struct cp_tree *t, uint32_t id, bool diff, const uint8_t *keep,
			 const struct cp_diffstat *ns)
{
	const struct cp_tree_node *n = &t->nodes[id];
	json_t *o = json_object(), *kids = json_array();
	uint32_t c;

	if (!o || !kids)
		goto fail;
	if (json_object_set_new(o, "name", json_string(id ? cp_tree_name(t, id) : "root")))
		goto fail;
	if (diff ? json_object_set_new(o, "before", json_integer(n->total[0])) ||
			   json_object_set_new(o, "after", json_integer(n->total[1])) ||
			   json_object_set_new(o, "self_before", json_integer(n->self[0])) ||
			   json_object_set_new(o, "self_after", json_integer(n->self[1])) :
		   json_object_set_new(o, "value", json_integer(n->total[0])) ||
			   json_object_set_new(o, "self", json_integer(n->self[0])))
		goto fail;
	if (ns && id < ns->nrows && node_stat_json(o, ns->rows[id]))
		goto fail;
	for (c = n->child; c; c = t->nodes[c].sibling) {
		json_t *k;

		if ((keep && !keep[c]) || t->nodes[c].depth > JSON_TREE_MAX_DEPTH)
			continue;
		if (!(k = tree_json(t, c, diff, keep, ns)))
			goto fail;

		if (!k || json_array_append_new(kids, k))
			goto fail;
	}
	if (json_object_set_new(o, "children", kids))
		goto fail_o;
	return o;
fail:
	json_decref(kids);
fail_o:
	json_decref(o);
	return NULL;
}

static int dump(FILE *out, json_t *root)
{
	int err;

	if (!root)
		return cp_error(ENOMEM, "out of memory building JSON");
	err = json_dumpf(root, out, JSON_COMPACT | JSON_ENSURE_ASCII) ? cp_error(EIO, "cannot write JSON") : 0;
	json_decref(root);
	if (!err)
		fputc('\n', out);
	return err ? err : cp_stream_check(out, NULL);
}

int cp_render_json(FILE *out, const struct cp_profile *p, int vidx, bool invert)
{
	struct cp_json_opts o = { invert, 0, NULL };

	return cp_render_json_opts(out, p, vidx, &o);
}

/* the tree as JSON under key, pruned to max nodes and JSON_TREE_MAX_DEPTH ("truncated" when it was);
 * ns: its frames' tests (a diff's; NULL: none) */
static int set_tree(json_t *root, const struct cp_tree *t, bool diff, uint32_t max, const struct cp_diffstat *ns)
{
	uint8_t *keep = NULL;
	int pruned = prune(t, max, &keep);
	json_t *tree;

	if (pruned < 0)
		return pruned;
	if (t->max_depth > JSON_TREE_MAX_DEPTH)
		pruned = 1;
	tree = tree_json(t, 0, diff, keep, ns);
	free(keep);
	if (!tree || json_object_set_new(root, "tree", tree) ||
	    (pruned && json_object_set_new(root, "truncated", json_true())))
		return cp_error(ENOMEM, "out of memory building the JSON call tree");
	return 0;
}

int cp_render_json_opts(FILE *out, const struct cp_profile *p, int vidx, const struct cp_json_opts *jo)
{
	bool invert = jo->invert;
	struct cp_fn_table *ft = cp_fn_table_new();
	struct cp_tree *tree = cp_tree_new();
	json_t *root = NULL, *top = NULL, *types = NULL;
	uint32_t *order = NULL, n = 0, i;
	int err = -ENOMEM;
	size_t k;

	if (!ft || !tree || cp_fn_table_add(ft, p, vidx, 0) || cp_tree_add(tree, p, vidx, 0, invert) ||
	    cp_tree_sort(tree) || !(order = cp_fn_table_sorted(ft, 0, &n)))
		goto out;
	root = json_object();
	top = json_array();
	types = json_array();
	if (!root || !top || !types)
		goto out;
	for (k = 0; k < p->ntypes; k++)
		json_array_append_new(types, json_pack("{s:s,s:s}", "type", cp_profile_string(p, p->sample_types[k].type),
						       "unit", cp_profile_string(p, p->sample_types[k].unit)));
	for (i = 0; i < n; i++) {
		const struct cp_fn_row *r = &ft->rows[order[i]];

		json_array_append_new(top, json_pack("{s:s,s:s,s:I,s:I}", "name", cp_strtab_get(&ft->names, r->name),
						     "file", cp_strtab_get(&ft->names, r->file), "flat",
						     (json_int_t)r->flat[0], "cum", (json_int_t)r->cum[0]));
	}
	json_object_set_new(root, "type", json_string(cp_profile_string(p, p->sample_types[vidx].type)));
	json_object_set_new(root, "unit", json_string(cp_profile_string(p, p->sample_types[vidx].unit)));
	json_object_set_new(root, "total", json_integer(ft->total[0]));
	json_object_set_new(root, "sample_types", types);
	types = NULL;
	json_object_set_new(root, "time_nanos", json_integer(p->time_nanos));
	json_object_set_new(root, "duration_nanos", json_integer(p->duration_nanos));
	if (jo->resolution)
		json_object_set_new(root, "resolution", json_string(jo->resolution));
	json_object_set_new(root, "top", top);
	top = NULL;
	if ((err = set_tree(root, tree, false, jo->max_nodes, NULL)))
		goto out;
	err = dump(out, root);
	root = NULL;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory building JSON");
	json_decref(root);
	json_decref(top);
	json_decref(types);
	free(order);
	cp_fn_table_free(ft);
	cp_tree_free(tree);
	return err;
}

/* one test's figures: shares, change, interval, p and q */
static json_t *stat_json(const struct cp_fn_stat *s)
{
	json_t *j = json_pack("{s:f,s:f,s:f,s:b,s:b}", "share_before", s->share[0], "share_after", s->share[1], "change",
			      s->share[1] - s->share[0], "tested", s->tested, "significant", s->significant);

	if (j && s->tested) {
		json_object_set_new(j, "interval", json_pack("[f,f]", s->t.lo, s->t.hi));
		json_object_set_new(j, "p", json_real(s->t.p));
		json_object_set_new(j, "q", json_real(s->q));
	}
	return j;
}

int cp_render_diff_json(FILE *out, const struct cp_fn_table *t, const struct cp_diff_opts *o)
{
	double norm = t->total[0] ? (double)t->total[1] / (double)t->total[0] : 1;
	const struct cp_diffstat *d = o->stat;
	uint32_t n = 0, i, *order = d ? cp_diffstat_order(d, o->only_significant, &n)
				     : cp_fn_table_sorted(t, o->normalize ? 2 : 1, &n);
	json_t *root = json_object(), *rows = json_array();

	if (!order || !root || !rows) {
		free(order);
		json_decref(root);
		json_decref(rows);
		return cp_error(ENOMEM, "out of memory building JSON");
	}
	if (o->limit > 0 && (uint32_t)o->limit < n)
		n = (uint32_t)o->limit;
	for (i = 0; i < n; i++) {
		const struct cp_fn_row *r = &t->rows[order[i]];
		double nb = (double)r->flat[0] * norm;
		json_t *row = json_pack("{s:s,s:I,s:I,s:I,s:f}", "name", cp_strtab_get(&t->names, r->name), "before",
					(json_int_t)r->flat[0], "after", (json_int_t)r->flat[1], "delta",
					(json_int_t)cp_sub_sat(r->flat[1], r->flat[0]), "norm_delta", (double)r->flat[1] - nb);

		if (row && r->flat[0]) {
			json_object_set_new(row, "delta_pct", json_real(100.0 * ((double)r->flat[1] - (double)r->flat[0]) / (double)r->flat[0]));
			json_object_set_new(row, "norm_pct", json_real(100.0 * ((double)r->flat[1] - nb) / nb));
		}
		if (row && d) {
			json_object_set_new(row, "self", stat_json(&d->rows[order[i]][0]));
			json_object_set_new(row, "total", stat_json(&d->rows[order[i]][1]));
		}
		json_array_append_new(rows, row);
	}
	free(order);
	if (d)
		json_object_set_new(root, "significance",
				    json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:I}", "method",
					      d->method == CP_DIFFSTAT_INTERVALS ? "intervals" : "counts", "description",
					      cp_diffstat_method_name(d), "before", (json_int_t)d->n[0], "after",
					      (json_int_t)d->n[1], "alpha", d->alpha, "level", d->level, "min_change",
					      d->min_change, "significant", (json_int_t)d->nsignificant));
	json_object_set_new(root, "unit", json_string(o->unit ? o->unit : ""));
	json_object_set_new(root, "total_before", json_integer(t->total[0]));
	json_object_set_new(root, "total_after", json_integer(t->total[1]));
	json_object_set_new(root, "rows", rows);
	if (o->tree && set_tree(root, o->tree, true, o->max_nodes, o->tree_stat)) {
		json_decref(root);
		return cp_error(ENOMEM, "out of memory building JSON");
	}
	return dump(out, root);
}
