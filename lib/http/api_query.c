/* SPDX-License-Identifier: MIT */
/* The query API (docs/API.md: types, labels, values, series, range, profile,
 * diff, regressions, stats) and Parca's read API. */
#include "http/api_impl.h"

/* ---- reading handlers ---- */

static void h_list(struct cp_req *r, struct cp_resp *out, void *arg, enum cp_store_list what)
{
	struct cp_store_series *ser = NULL;
	const char **items = NULL, *label = NULL;
	size_t n = 0, ni = 0;
	struct mem m;
	int err;

	if (what == CP_LIST_VALUES && !(label = cp_req_arg(r, "label"))) {
		cp_resp_error(out, 400, "give the label: /api/v1/values?label=NAME");
		return;
	}
	if (!api_get_series(arg, r, out, &ser, &n))
		return;
	if ((err = cp_store_distinct(ser, n, what, label, &items, &ni)) || api_mem_open(&m, out)) {
		if (err)
			cp_resp_error(out, 500, "%s", cp_errmsg(-err));
	} else {
		api_mem_close(&m, out, cp_render_strings(m.f, items, ni, true), "application/json");
	}
	free(items);
	cp_store_series_free(ser, n);
}

void api_h_types(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_TYPES);
}

void api_h_labels(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_LABELS);
}

void api_h_values(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_VALUES);
}

void api_h_series(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_store_series *ser = NULL;
	size_t n = 0;
	struct mem m;

	if (!api_get_series(arg, r, out, &ser, &n))
		return;
	if (!api_mem_open(&m, out))
		api_mem_close(&m, out, cp_render_series(m.f, ser, n, true), "application/json");
	cp_store_series_free(ser, n);
}

void api_h_range(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct cp_selector *sel = NULL;
	struct cp_store_query q = { 0 };
	struct cp_over_time ot = { 0 };
	struct cp_buckets b;
	int64_t from, to, step = 0;
	const char *st_arg = cp_req_arg(r, "step");
	struct cp_store *st;
	struct mem m;
	int err;

	if (!api_get_selector(r, out, "query", false, &sel) || !api_get_range(r, out, "from", "to", 0, 0, &from, &to))
		goto out;
	if (st_arg && *st_arg && (err = cp_parse_duration(st_arg, &step))) {
		cp_resp_error(out, 400, "step: %s", cp_errmsg(-err));
		goto out;
	}
	/* the buckets are checked before the store is asked */
	if ((err = cp_buckets_align(from, to, step ? step : cp_buckets_default_step(from, to), &b))) {
		cp_resp_error(out, 400, "step: %s", cp_errmsg(-err));
		goto out;
	}
	if (!(st = cp_shared_reader(s->store))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		goto out;
	}
	q.sel = sel;
	q.from = from;
	q.to = to;
	err = cp_store_over_time_build(st, &q, step, &ot);
	cp_shared_release(s->store, st);
	if (err) {
		cp_resp_error(out, api_store_status(err), "%s", cp_errmsg(-err));
		goto out;
	}
	if (!api_mem_open(&m, out))
		api_mem_close(&m, out, cp_render_over_time_json(m.f, &ot), "application/json");
out:
	cp_over_time_release(&ot);
	cp_selector_free(sel);
}

void api_h_stats(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct cp_store_stats stt;
	struct cp_store *st = cp_shared_reader(s->store);
	int err;

	(void)r;
	if (!st) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return;
	}
	err = cp_store_stats(st, &stt);
	cp_shared_release(s->store, st);
	if (err) {
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		return;
	}
	cp_resp_text(out, 200, "application/json",
		     "{\"series\":%lld,\"stacks\":%lld,\"locations\":%lld,\"functions\":%lld,\"blocks\":%lld,"
		     "\"entries\":%lld,\"samples\":%lld,\"bytes\":%lld}\n",
		     (long long)stt.series, (long long)stt.stacks, (long long)stt.locations, (long long)stt.functions,
		     (long long)stt.blocks, (long long)stt.entries, (long long)stt.samples, (long long)stt.bytes);
}

/* one profile rendered in format fmt (the table's: render.h) */
static int render_profile(FILE *f, const struct cp_render_format *fmt, struct cp_profile *p, struct cp_req *r,
			  long max_nodes, long limit, int64_t resolution)
{
	struct cp_render_opts o = { 0 };
	char rbuf[32];

	o.resolution = resolution > 0 ? cp_resolution_text(resolution, rbuf, sizeof(rbuf)) : NULL;
	o.invert = api_flag(r, "invert");
	o.limit = (int)limit;
	o.max_nodes = (uint32_t)max_nodes;
	o.title = cp_req_arg(r, "title");
	o.icicle = api_flag(r, "icicle");
	return fmt->profile(f, p, 0, &o);
}

/* The format of kind that the request's format= (API names: svg for flamegraph; dflt when none)
 * asks for; extra: one more the handler takes itself (NULL: none).  NULL with *extra_asked false
 * after answering 400 naming them. */
static const struct cp_render_format *get_format(struct cp_req *r, struct cp_resp *out, unsigned kind, const char *dflt,
						 const char *extra, bool *extra_asked)
{
	const char *format = cp_req_arg(r, "format");
	const struct cp_render_format *f;
	char names[160];

	format = format && *format ? format : dflt;
	*extra_asked = extra && !strcmp(format, extra);
	if (*extra_asked || (f = cp_render_format_api(format, kind)))
		return *extra_asked ? NULL : f;
	cp_resp_error(out, 400, "unknown format '%.32s' (choose %s)", format,
		      cp_render_format_names(kind, true, extra, names, sizeof(names)));
	return NULL;
}

static int render_groups(FILE *f, struct cp_store_result *res, size_t n, struct cp_filter *filter)
{
	json_t *root = json_object(), *arr = json_array();
	size_t i;
	int err = 0;

	if (!root || !arr || json_object_set_new(root, "groups", arr)) {
		json_decref(root);
		return cp_error(ENOMEM, "out of memory");
	}
	for (i = 0; i < n && !err; i++) {
		uint8_t *buf = NULL;
		char *b64 = NULL;
		size_t len = 0, blen = 0;

		if (!(res[i].profile = cp_profile_filter(res[i].profile, filter)))
			err = -errno;
		else if (!(err = cp_pprof_encode(res[i].profile, 1, &buf, &len)) &&
			 !(err = cp_base64_encode(buf, len, &b64, &blen)))
			err = json_array_append_new(arr, json_pack("{s:s,s:s}", "group", res[i].group, "pprof", b64)) ?
				      -ENOMEM : 0;
		free(buf);
		free(b64);
	}
	if (!err && json_dumpf(root, f, JSON_COMPACT))
		err = cp_error(ENOMEM, "out of memory");
	json_decref(root);
	return err;
}

void api_h_profile(struct cp_req *r, struct cp_resp *out, void *arg)
{
	const char *group_by = cp_req_arg(r, "group_by"), *pl;
	const struct cp_render_format *fmt;
	struct cp_store_result *res = NULL;
	struct cp_selector *sel = NULL;
	struct cp_filter *filter = NULL;
	int64_t from, to, resolution = -1;
	long max_nodes, limit;
	size_t n = 0;
	bool process_labels, groups;
	struct mem m;
	int err;

	/* groups: each group's profile, pprof in JSON */
	if (!(fmt = get_format(r, out, CP_RENDER_PROFILE, "json", "groups", &groups)) && !groups)
		return;
	if (groups && (!group_by || !*group_by)) {
		cp_resp_error(out, 400, "format=groups wants group_by=LABEL");
		return;
	}
	if (!groups)
		group_by = NULL;
	/* process_labels=1: the samples keep their pid, thread_id and thread_name (a remote top's) */
	process_labels = (pl = cp_req_arg(r, "process_labels")) && !strcmp(pl, "1");
	if (!api_get_selector(r, out, "query", false, &sel) || !api_get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !api_get_count(r, out, "max_nodes", 20000, &max_nodes) || !api_get_count(r, out, "limit", 0, &limit) ||
	    !api_get_filter(r, out, &filter) ||
	    !api_select_profiles(arg, out, sel, from, to, group_by, &res, &n, &resolution, process_labels))
		goto out;
	if (api_mem_open(&m, out))
		goto out;
	if (group_by) {
		err = render_groups(m.f, res, n, filter);
	} else if (!(res[0].profile = cp_profile_filter(res[0].profile, filter))) {
		err = -errno;
	} else {
		err = render_profile(m.f, fmt, res[0].profile, r, max_nodes, limit, resolution);
	}
	if (fmt && fmt->binary && !err)
		out->disposition = "attachment; filename=\"profile.pb.gz\"";
	api_mem_close(&m, out, err, fmt ? fmt->mime : "application/json");
out:
	cp_store_results_free(res, n);
	cp_filter_free(filter);
	cp_selector_free(sel);
}

void api_h_diff(struct cp_req *r, struct cp_resp *out, void *arg)
{
	const struct cp_render_format *fmt;
	struct cp_store_result *rb = NULL, *ra = NULL;
	struct cp_selector *sb = NULL, *sa = NULL;
	struct cp_filter *filter = NULL;
	struct cp_render_diff_opts o = { .min_change = -1 };
	struct cp_store_intervals *iv[2] = { NULL, NULL }; /* one group, or none */
	int64_t from, to, bf, bt, af, at;
	size_t nb = 0, na = 0, niv[2] = { 0, 0 };
	long max_nodes, limit;
	struct mem m;
	int err;

	bool none;

	if (!(fmt = get_format(r, out, CP_RENDER_DIFF, "json", NULL, &none)))
		return;
	if (!api_get_selector(r, out, "before", true, &sb) || !api_get_selector(r, out, "after", true, &sa) ||
	    !api_get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !api_get_range(r, out, "before_from", "before_to", from, to, &bf, &bt) ||
	    !api_get_range(r, out, "after_from", "after_to", from, to, &af, &at) ||
	    !api_get_count(r, out, "max_nodes", 20000, &max_nodes) || !api_get_count(r, out, "limit", 0, &limit) ||
	    !api_get_filter(r, out, &filter) || !api_select_profiles(arg, out, sb, bf, bt, NULL, &rb, &nb, NULL, false) ||
	    !api_select_profiles(arg, out, sa, af, at, NULL, &ra, &na, NULL, false))
		goto out;
	if (!(rb[0].profile = cp_profile_filter(rb[0].profile, filter)) ||
	    !(ra[0].profile = cp_profile_filter(ra[0].profile, filter))) {
		cp_resp_error(out, errno == CP_REGEX_ECOST ? 422 : 500, "%s", cp_errmsg(errno));
		goto out;
	}
	if ((err = cp_profile_compatible(ra[0].profile, rb[0].profile))) {
		cp_resp_error(out, 400, "before and after do not compare: %s", cp_errmsg(-err));
		goto out;
	}
	/* each change's significance, over the intervals, unless significance=0 */
	o.significance = !(cp_req_arg(r, "significance") && !api_flag(r, "significance")) && !api_flag(r, "normalize");
	if (o.significance && (!api_select_intervals(arg, out, sb, bf, bt, filter, &iv[0], &niv[0]) ||
			       !api_select_intervals(arg, out, sa, af, at, filter, &iv[1], &niv[1])))
		goto out;
	o.only_significant = api_flag(r, "significant");
	for (int k = 0; k < 2; k++) {
		o.iv[k] = niv[k] ? iv[k]->iv : NULL;
		o.niv[k] = niv[k] ? iv[k]->n : 0;
	}
	if (api_mem_open(&m, out))
		goto out;
	o.limit = (int)limit;
	o.normalize = api_flag(r, "normalize");
	o.title = cp_req_arg(r, "title");
	o.icicle = api_flag(r, "icicle");
	o.with_tree = true;
	o.max_nodes = (uint32_t)max_nodes;
	err = cp_render_diff(m.f, fmt->name, rb[0].profile, 0, ra[0].profile, 0, &o);
	if (fmt->binary && !err)
		out->disposition = "attachment; filename=\"diff.pb.gz\"";
	api_mem_close(&m, out, err, fmt->mime);
out:
	cp_store_intervals_free(iv[0], niv[0]);
	cp_store_intervals_free(iv[1], niv[1]);
	cp_store_results_free(rb, nb);
	cp_store_results_free(ra, na);
	cp_filter_free(filter);
	cp_selector_free(sb);
	cp_selector_free(sa);
}

/* GET /api/v1/regressions?query=SEL&baseline=1d&range=1h&by=comm[&fdr=Q][&format=table]:
 * what cprof diff --baseline prints (regress.h) */
void api_h_regressions(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	const char *format = cp_req_arg(r, "format"), *by = cp_req_arg(r, "by"), *v;
	struct cp_selector *sel = NULL;
	struct cp_regressions reg;
	int64_t base = 86400 * (int64_t)1000000000, range = 3600 * (int64_t)1000000000;
	double fdr = 0; /* cp_regressions_find's default */
	struct cp_store *st;
	struct mem m;
	bool table;
	int err;

	format = format && *format ? format : "json";
	table = !strcmp(format, "table");
	if (!table && strcmp(format, "json")) {
		cp_resp_error(out, 400, "unknown format '%.32s' (choose json or table)", format);
		return;
	}
	if ((v = cp_req_arg(r, "baseline")) && *v && (cp_parse_duration(v, &base) || base <= 0)) {
		cp_resp_error(out, 400, "baseline: want a duration, e.g. 1d or 1w, not '%.32s'", v);
		return;
	}
	if ((v = cp_req_arg(r, "range")) && *v && (cp_parse_duration(v, &range) || range <= 0)) {
		cp_resp_error(out, 400, "range: want a duration, e.g. 1h, not '%.32s'", v);
		return;
	}
	if ((v = cp_req_arg(r, "fdr")) && *v) {
		char *end;

		fdr = strtod(v, &end);
		if (end == v || *end || !(fdr > 0 && fdr < 1)) {
			cp_resp_error(out, 400, "fdr: want a number between 0 and 1, not '%.32s'", v);
			return;
		}
	}
	if (!api_get_selector(r, out, "query", false, &sel))
		return;
	if (!sel && (err = cp_selector_parse("cpu", &sel))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		return;
	}
	if (!(st = cp_shared_reader(s->store))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		goto out;
	}
	err = cp_regressions_find(st, sel, by && *by ? by : "comm", cp_now_ns(), range, base, fdr, -1, &reg);
	cp_shared_release(s->store, st);
	if (err) {
		cp_resp_error(out, api_store_status(err), "%s", cp_errmsg(-err));
		goto out;
	}
	if (!api_mem_open(&m, out)) {
		err = cp_render_regressions(m.f, &reg, !table);
		api_mem_close(&m, out, err, table ? "text/plain; charset=utf-8" : "application/json");
	}
	cp_regressions_release(&reg);
out:
	cp_selector_free(sel);
}

/* Parca's read API: {"types":[{...}]}, {"labelNames":[...]}, {"labelValues":[...]} */
static void parca_list(struct cp_req *r, struct cp_resp *out, void *arg, enum cp_store_list what, const char *label,
		       const char *key)
{
	struct cp_store_series *ser = NULL;
	const char **items = NULL;
	size_t n = 0, ni = 0, i;
	json_t *root, *arr;
	struct mem m;
	int err;

	if (!api_get_series(arg, r, out, &ser, &n))
		return;
	if ((err = cp_store_distinct(ser, n, what, label, &items, &ni))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		goto out;
	}
	root = json_object();
	arr = json_array();
	json_object_set_new(root, key, arr);
	for (i = 0; i < ni; i++) {
		char parts[5][128];
		int k;

		if (what != CP_LIST_TYPES) {
			json_array_append_new(arr, json_string(items[i]));
			continue;
		}
		for (k = 0; k < 5; k++)
			cp_store_type_part(items[i], k, parts[k], sizeof(parts[k]));
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "name", parts[0], "sampleType", parts[1],
						     "sampleUnit", parts[2], "periodType", parts[3], "periodUnit",
						     parts[4], "delta", strstr(items[i], ":delta") != NULL));
	}
	if (!api_mem_open(&m, out))
		api_mem_close(&m, out, json_dumpf(root, m.f, JSON_COMPACT) ? -ENOMEM : 0, "application/json");
	json_decref(root);
out:
	free(items);
	cp_store_series_free(ser, n);
}

void api_h_parca_types(struct cp_req *r, struct cp_resp *out, void *arg)
{
	parca_list(r, out, arg, CP_LIST_TYPES, NULL, "types");
}

void api_h_parca_labels(struct cp_req *r, struct cp_resp *out, void *arg)
{
	const char *path = cp_req_path(r), *rest;
	char label[256];
	size_t n;

	if (!strcmp(path, "/api/profiles/labels") || !strcmp(path, "/api/profiles/labels/")) {
		parca_list(r, out, arg, CP_LIST_LABELS, NULL, "labelNames");
		return;
	}
	rest = path + strlen("/api/profiles/labels/");
	n = strcspn(rest, "/");
	if (n >= sizeof(label) || strcmp(rest + n, "/values")) {
		cp_resp_error(out, 404, "no such endpoint: %.128s (try /api/profiles/labels/NAME/values)", path);
		return;
	}
	memcpy(label, rest, n);
	label[n] = 0;
	parca_list(r, out, arg, CP_LIST_VALUES, label, "labelValues");
}
