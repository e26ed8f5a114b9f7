/* SPDX-License-Identifier: MIT */
/* The API of cprof serve (docs/API.md): push ingest (native, Pyroscope,
 * Parca), the query API, Parca's read API, /metrics, /healthz and the web
 * view's files, as routes for lib/http/server.h over a shared store
 * (lib/store/shared.h). */
#include "http/api.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base64.h"
#include "decode_limits.h"
#include "error.h"
#include "folded.h"
#include "ingest.h"
#include "load.h"
#include "log.h"
#include "pprof.h"
#include "regex.h"
#include "render/regress.h"
#include "render/render.h"
#include "scrape.h"
#include "selector.h"
#include "util.h"

enum api { API_NATIVE, API_PYROSCOPE, API_PARCA, API_SCRAPE, NAPIS };
static const char *const api_names[NAPIS] = { "native", "pyroscope", "parca", "scrape" };

struct cp_api {
	struct cp_shared *store;
	struct cp_server *http;     /* its request counters in /metrics; may be NULL */
	struct cp_scraper *scraper; /* --config with scrape_configs; may be NULL */
	_Atomic uint64_t profiles[NAPIS], samples[NAPIS], errors[NAPIS], bytes[NAPIS];
	/* rejected pushes: a warning each, at most one a second per API */
	pthread_mutex_t rlock;
	int64_t rlast[NAPIS];
	uint64_t rsuppressed[NAPIS];
};

/* ---- helpers for handlers ---- */

/* a response body written through stdio */
struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static int mem_open(struct mem *m, struct cp_resp *out)
{
	m->buf = NULL;
	m->len = 0;
	if (!(m->f = open_memstream(&m->buf, &m->len))) {
		cp_resp_error(out, 500, "out of memory");
		return -1;
	}
	return 0;
}

/* finish: err from the renderer, or 0 to send the body */
static void mem_close(struct mem *m, struct cp_resp *out, int err, const char *type)
{
	if (fclose(m->f) && !err)
		err = -ENOMEM;
	if (err) {
		free(m->buf);
		cp_resp_error(out, err == -CP_REGEX_ECOST ? 422 : 500, "%s", cp_errmsg(-err));
		return;
	}
	cp_resp_take(out, 200, type, m->buf, m->len);
}

static int store_status(int err)
{
	return err == -ENOENT ? 404 : err == -EINVAL ? 400 : err == -CP_REGEX_ECOST ? 422 : 500;
}

/* the selector in param (empty or missing: NULL, any series); false after answering 400 */
static bool get_selector(struct cp_req *r, struct cp_resp *out, const char *param, bool required,
			 struct cp_selector **sel)
{
	const char *q = cp_req_arg(r, param);
	int err;

	*sel = NULL;
	if (!q || !*q) {
		if (required)
			cp_resp_error(out, 400, "give the selector as %s=TYPE{label=\"value\"}", param);
		return !required;
	}
	if ((err = cp_selector_parse(q, sel))) {
		cp_resp_error(out, 400, "%s: %s", param, cp_errmsg(-err));
		return false;
	}
	return true;
}

static bool get_time(struct cp_req *r, struct cp_resp *out, const char *param, int64_t now, int64_t *t)
{
	const char *v = cp_req_arg(r, param);
	int err;

	if (!v || !*v)
		return true;
	if ((err = cp_parse_time(v, now, t))) {
		cp_resp_error(out, 400, "%s: %s", param, cp_errmsg(-err));
		return false;
	}
	return true;
}

/* from/to (default: the last hour); false after answering 400 */
static bool get_range(struct cp_req *r, struct cp_resp *out, const char *fparam, const char *tparam, int64_t dfrom,
		      int64_t dto, int64_t *from, int64_t *to)
{
	int64_t now = cp_now_ns();

	*from = dfrom ? dfrom : now - 3600 * (int64_t)1000000000;
	*to = dto ? dto : now;
	if (!get_time(r, out, fparam, now, from) || !get_time(r, out, tparam, now, to))
		return false;
	if (*from > *to) {
		cp_resp_error(out, 400, "the time range is empty: %s is after %s", fparam, tparam);
		return false;
	}
	return true;
}

static bool flag(struct cp_req *r, const char *param)
{
	const char *v = cp_req_arg(r, param);

	return v && (!*v || !strcmp(v, "1") || !strcmp(v, "true"));
}

static bool get_count(struct cp_req *r, struct cp_resp *out, const char *param, long dflt, long *v)
{
	const char *s = cp_req_arg(r, param);
	char *end;

	*v = dflt;
	if (!s || !*s)
		return true;
	errno = 0;
	*v = strtol(s, &end, 10);
	if (errno || *end || *v < 0 || *v > 100000000) {
		cp_resp_error(out, 400, "%s: '%.32s' is not a count", param, s);
		return false;
	}
	return true;
}

/* --focus / --ignore */
static bool get_filter(struct cp_req *r, struct cp_resp *out, struct cp_filter **f)
{
	const char *focus = cp_req_arg(r, "focus"), *ignore = cp_req_arg(r, "ignore");

	*f = NULL;
	if ((!focus || !*focus) && (!ignore || !*ignore))
		return true;
	if (!(*f = cp_filter_new(focus && *focus ? focus : NULL, ignore && *ignore ? ignore : NULL))) {
		cp_resp_error(out, 400, "%s", cp_errmsg(errno));
		return false;
	}
	return true;
}

/* the series matching the query parameter */
static bool get_series(struct cp_api *s, struct cp_req *r, struct cp_resp *out, struct cp_store_series **ser,
		       size_t *n)
{
	struct cp_selector *sel;
	struct cp_store *st;
	int err;

	if (!get_selector(r, out, "query", false, &sel))
		return false;
	if (!(st = cp_shared_reader(s->store))) {
		cp_selector_free(sel);
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_series(st, sel, ser, n);
	cp_shared_release(s->store, st);
	cp_selector_free(sel);
	if (err) {
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	return true;
}

/* merged profiles for a selector and range; false after answering.
 * resolution (may be NULL): the store's resolution of the data read */
static bool select_profiles(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
			    int64_t to, const char *group_by, struct cp_store_result **res, size_t *n,
			    int64_t *resolution, bool process_labels)
{
	struct cp_store_query q = { sel, from, to, group_by, resolution, process_labels };
	struct cp_store *st = cp_shared_reader(s->store);
	int err;

	if (!st) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_select(st, &q, res, n);
	cp_shared_release(s->store, st);
	if (err) {
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	return true;
}

/* sel's samples per interval over [from, to) (cp_store_select_intervals, as
 * cprof diff), filtered */
static bool select_intervals(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
			     int64_t to, struct cp_filter *filter, struct cp_store_intervals **iv, size_t *n)
{
	struct cp_store_query q = { sel, from, to, NULL, NULL, false };
	struct cp_store *st = cp_shared_reader(s->store);
	int err;

	*iv = NULL;
	*n = 0;
	if (!st) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_select_intervals(st, &q, CP_STORE_INTERVAL_STEP, CP_STORE_INTERVALS_MAX, iv, n);
	cp_shared_release(s->store, st);
	if (err) {
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	for (size_t i = 0; *n && i < (*iv)->n; i++)
		if (!((*iv)->iv[i] = cp_profile_filter((*iv)->iv[i], filter))) {
			cp_resp_error(out, errno == CP_REGEX_ECOST ? 422 : 500, "%s", cp_errmsg(errno));
			return false;
		}
	return true;
}

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
	if (!get_series(arg, r, out, &ser, &n))
		return;
	if ((err = cp_store_distinct(ser, n, what, label, &items, &ni)) || mem_open(&m, out)) {
		if (err)
			cp_resp_error(out, 500, "%s", cp_errmsg(-err));
	} else {
		mem_close(&m, out, cp_render_strings(m.f, items, ni, true), "application/json");
	}
	free(items);
	cp_store_series_free(ser, n);
}

static void h_types(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_TYPES);
}

static void h_labels(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_LABELS);
}

static void h_values(struct cp_req *r, struct cp_resp *out, void *arg)
{
	h_list(r, out, arg, CP_LIST_VALUES);
}

static void h_series(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_store_series *ser = NULL;
	size_t n = 0;
	struct mem m;

	if (!get_series(arg, r, out, &ser, &n))
		return;
	if (!mem_open(&m, out))
		mem_close(&m, out, cp_render_series(m.f, ser, n, true), "application/json");
	cp_store_series_free(ser, n);
}

static void h_range(struct cp_req *r, struct cp_resp *out, void *arg)
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

	if (!get_selector(r, out, "query", false, &sel) || !get_range(r, out, "from", "to", 0, 0, &from, &to))
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
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		goto out;
	}
	if (!mem_open(&m, out))
		mem_close(&m, out, cp_render_over_time_json(m.f, &ot), "application/json");
out:
	cp_over_time_release(&ot);
	cp_selector_free(sel);
}

static void h_stats(struct cp_req *r, struct cp_resp *out, void *arg)
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
	o.invert = flag(r, "invert");
	o.limit = (int)limit;
	o.max_nodes = (uint32_t)max_nodes;
	o.title = cp_req_arg(r, "title");
	o.icicle = flag(r, "icicle");
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

static void h_profile(struct cp_req *r, struct cp_resp *out, void *arg)
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
	if (!get_selector(r, out, "query", false, &sel) || !get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !get_count(r, out, "max_nodes", 20000, &max_nodes) || !get_count(r, out, "limit", 0, &limit) ||
	    !get_filter(r, out, &filter) ||
	    !select_profiles(arg, out, sel, from, to, group_by, &res, &n, &resolution, process_labels))
		goto out;
	if (mem_open(&m, out))
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
	mem_close(&m, out, err, fmt ? fmt->mime : "application/json");
out:
	cp_store_results_free(res, n);
	cp_filter_free(filter);
	cp_selector_free(sel);
}

static void h_diff(struct cp_req *r, struct cp_resp *out, void *arg)
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
	if (!get_selector(r, out, "before", true, &sb) || !get_selector(r, out, "after", true, &sa) ||
	    !get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !get_range(r, out, "before_from", "before_to", from, to, &bf, &bt) ||
	    !get_range(r, out, "after_from", "after_to", from, to, &af, &at) ||
	    !get_count(r, out, "max_nodes", 20000, &max_nodes) || !get_count(r, out, "limit", 0, &limit) ||
	    !get_filter(r, out, &filter) || !select_profiles(arg, out, sb, bf, bt, NULL, &rb, &nb, NULL, false) ||
	    !select_profiles(arg, out, sa, af, at, NULL, &ra, &na, NULL, false))
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
	o.significance = !(cp_req_arg(r, "significance") && !flag(r, "significance")) && !flag(r, "normalize");
	if (o.significance && (!select_intervals(arg, out, sb, bf, bt, filter, &iv[0], &niv[0]) ||
			       !select_intervals(arg, out, sa, af, at, filter, &iv[1], &niv[1])))
		goto out;
	o.only_significant = flag(r, "significant");
	for (int k = 0; k < 2; k++) {
		o.iv[k] = niv[k] ? iv[k]->iv : NULL;
		o.niv[k] = niv[k] ? iv[k]->n : 0;
	}
	if (mem_open(&m, out))
		goto out;
	o.limit = (int)limit;
	o.normalize = flag(r, "normalize");
	o.title = cp_req_arg(r, "title");
	o.icicle = flag(r, "icicle");
	o.with_tree = true;
	o.max_nodes = (uint32_t)max_nodes;
	err = cp_render_diff(m.f, fmt->name, rb[0].profile, 0, ra[0].profile, 0, &o);
	if (fmt->binary && !err)
		out->disposition = "attachment; filename=\"diff.pb.gz\"";
	mem_close(&m, out, err, fmt->mime);
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
static void h_regressions(struct cp_req *r, struct cp_resp *out, void *arg)
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
	if (!get_selector(r, out, "query", false, &sel))
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
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		goto out;
	}
	if (!mem_open(&m, out)) {
		err = cp_render_regressions(m.f, &reg, !table);
		mem_close(&m, out, err, table ? "text/plain; charset=utf-8" : "application/json");
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

	if (!get_series(arg, r, out, &ser, &n))
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
	if (!mem_open(&m, out))
		mem_close(&m, out, json_dumpf(root, m.f, JSON_COMPACT) ? -ENOMEM : 0, "application/json");
	json_decref(root);
out:
	free(items);
	cp_store_series_free(ser, n);
}

static void h_parca_types(struct cp_req *r, struct cp_resp *out, void *arg)
{
	parca_list(r, out, arg, CP_LIST_TYPES, NULL, "types");
}

static void h_parca_labels(struct cp_req *r, struct cp_resp *out, void *arg)
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

/* ---- writing handlers ---- */

static void ingest_done(struct cp_api *s, struct cp_resp *out, enum api api, int err, const char *msg,
			size_t profiles, size_t samples, size_t bytes)
{
	if (err) {
		atomic_fetch_add(&s->errors[api], 1);
		cp_resp_error(out, err == -ESHUTDOWN ? 503 : err == -EINVAL || err == -ENAMETOOLONG ? 422 : 500,
			      "nothing was stored: %s", msg);
		return;
	}
	atomic_fetch_add(&s->profiles[api], profiles);
	atomic_fetch_add(&s->samples[api], samples);
	atomic_fetch_add(&s->bytes[api], bytes);
	cp_resp_text(out, 200, "application/json", "{\"profiles\":%zu,\"samples\":%zu}\n", profiles, samples);
}


/* Logs a push the handler refused (out->status >= 400) with its reason: one
 * line a second per API at most, the next line counting those left out. */
static void log_rejected(struct cp_api *s, enum api api, struct cp_req *r, const struct cp_resp *out)
{
	const char *reason = NULL, *name = cp_req_arg(r, "name");
	json_t *j = NULL;
	int64_t now = cp_mono_ns();
	uint64_t skipped;
	char more[64] = "", line[768], *p;

	if (out->status < 400)
		return;
	pthread_mutex_lock(&s->rlock);
	if (s->rlast[api] && now - s->rlast[api] < 1000000000) {
		s->rsuppressed[api]++;
		pthread_mutex_unlock(&s->rlock);
		return;
	}
	s->rlast[api] = now;
	skipped = s->rsuppressed[api];
	s->rsuppressed[api] = 0;
	pthread_mutex_unlock(&s->rlock);
	if (out->body && out->len && (j = json_loadb(out->body, out->len, 0, NULL)))
		reason = json_string_value(json_object_get(j, "error"));
	if (skipped)
		snprintf(more, sizeof(more), " (%" PRIu64 " more rejected since the last line)", skipped);
	snprintf(line, sizeof(line), "rejected a %s push to %s%s%.128s (%d): %.300s%s", api_names[api],
		 cp_req_path(r), name ? " name=" : "", name ? name : "", out->status,
		 reason ? reason : "no reason given", more);
	json_decref(j);
	for (p = line; *p; p++) /* what clients sent stays on one line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	cp_log("serve", CP_LOG_WARN, "%s", line);
}

static void log_rejected_left(struct cp_api *s)
{
	int api;

	for (api = 0; api < NAPIS; api++)
		if (s->rsuppressed[api])
			cp_log("serve", CP_LOG_WARN, "%" PRIu64 " more %s pushes were rejected since the last line",
			       s->rsuppressed[api], api_names[api]);
}

static void bad_body(struct cp_api *s, struct cp_resp *out, enum api api, int status, const char *fmt, const char *m)
{
	atomic_fetch_add(&s->errors[api], 1);
	cp_resp_error(out, status, fmt, m);
}

/* a body the decoders refused (errno): over a limit of lib/decode_limits.h
 * 413, while other bodies take the decompression budget 503, else 400 */
static int decode_status(int err)
{
	return err == EFBIG ? 413 : err == EBUSY ? 503 : 400;
}

struct push_labels {
	struct cp_labels l;
	int err;
};

static int push_arg(void *ctx, const char *name, const char *value)
{
	struct push_labels *p = ctx;

	if (!strcmp(name, "name") || !strcmp(name, "time"))
		return 0;
	return p->err = cp_labels_add(&p->l, name, value);
}

static int push_header(void *ctx, const char *value)
{
	struct push_labels *p = ctx;
	const char *eq = strchr(value, '=');
	char name[256];

	if (!eq || (size_t)(eq - value) >= sizeof(name))
		return p->err = cp_error(EINVAL, "X-Cprof-Label wants name=value, not '%.64s'", value);
	memcpy(name, value, (size_t)(eq - value));
	name[eq - value] = 0;
	return p->err = cp_labels_add(&p->l, name, eq + 1);
}

static void push_native(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct push_labels pl = { { 0 }, 0 };
	struct cp_store_append a = { 0 };
	struct cp_profile *p = NULL;
	const uint8_t *body;
	char msg[512];
	int64_t t = 0;
	size_t len;
	int err;

	body = cp_req_body(r, &len);
	if (!len) {
		bad_body(s, out, API_NATIVE, 400, "%s", "the body is empty: POST a pprof profile (gzip or raw)");
		return;
	}
	if (!get_time(r, out, "time", cp_now_ns(), &t)) {
		atomic_fetch_add(&s->errors[API_NATIVE], 1);
		return;
	}
	cp_req_args(r, push_arg, &pl);
	if (!pl.err)
		cp_req_headers(r, "X-Cprof-Label", push_header, &pl);
	if (pl.err) {
		bad_body(s, out, API_NATIVE, 400, "%s", cp_errmsg(-pl.err));
		goto out;
	}
	if (!(p = cp_profile_decode(body, len))) {
		bad_body(s, out, API_NATIVE, decode_status(errno), "the body is not a profile: %s", cp_errmsg(errno));
		goto out;
	}
	a.profile = p;
	a.name = cp_req_arg(r, "name");
	if (a.name && !*a.name)
		a.name = NULL;
	if (a.name && !cp_type_name_valid(a.name)) {
		bad_body(s, out, API_NATIVE, 400, "name: '%.64s' takes letters, digits, '_', '.' and '-' (e.g. cpu)", a.name);
		goto out;
	}
	a.labels = pl.l.kv;
	a.nlabels = pl.l.n;
	a.time_ns = t;
	err = cp_shared_append(s->store, &a, 1, msg, sizeof(msg));
	ingest_done(s, out, API_NATIVE, err, msg, 1, p->nsamples, len);
out:
	cp_profile_free(p);
	cp_labels_release(&pl.l);
}

struct form_pick {
	const char *field;
	const uint8_t *data; /* points into a copy we own */
	uint8_t *copy;
	size_t len;
};

static int pick_field(void *ctx, const char *name, const char *filename, const uint8_t *data, size_t len)
{
	struct form_pick *f = ctx;

	(void)filename;
	if (strcmp(name, f->field) || f->copy)
		return 0;
	if (!(f->copy = malloc(len + 1)))
		return cp_error(ENOMEM, "out of memory copying the form field '%s' (%zu bytes)", name, len);
	memcpy(f->copy, data, len);
	f->data = f->copy;
	f->len = len;
	return 0;
}

static void push_pyroscope(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	const char *name = cp_req_arg(r, "name"), *format = cp_req_arg(r, "format"), *units = cp_req_arg(r, "units");
	const char *rate_s = cp_req_arg(r, "sampleRate"), *ctype = cp_req_header(r, "Content-Type");
	struct cp_pyro_name nm = { 0 };
	struct cp_pyro_type ty;
	struct cp_store_append a = { 0 };
	struct cp_profile *p = NULL;
	struct form_pick fp = { "profile", NULL, NULL, 0 };
	struct cp_pyro_part *parts = NULL;
	struct cp_store_append *as = NULL;
	int64_t now = cp_now_ns(), until = now, from = 0, rate = 100;
	const uint8_t *body;
	char msg[512], *end;
	size_t len, nparts = 0, i;
	bool pprof = false;
	int err;

	body = cp_req_body(r, &len);
	if (!name || !*name) {
		bad_body(s, out, API_PYROSCOPE, 400, "%s", "give the application: /ingest?name=APP.cpu{label=value}");
		return;
	}
	if ((err = cp_pyro_name_parse(name, &nm))) {
		bad_body(s, out, API_PYROSCOPE, 400, "%s", cp_errmsg(-err));
		return;
	}
	if (!get_time(r, out, "until", now, &until) || !get_time(r, out, "from", now, &from))
		goto bad;
	if (!cp_req_arg(r, "from"))
		from = until - 10 * (int64_t)1000000000;
	if (rate_s && *rate_s) {
		errno = 0;
		rate = strtoll(rate_s, &end, 10);
		if (errno || *end || rate <= 0) {
			cp_resp_error(out, 400, "sampleRate: '%.32s' is not a positive number", rate_s);
			goto bad;
		}
		if (rate > 1000000000) { /* a sample would weigh less than a nanosecond: 0 */
			cp_resp_error(out, 400, "sampleRate: %lld Hz is above 1e9 (a sample would weigh under 1 ns)",
				      (long long)rate);
			goto bad;
		}
	}
	format = format && *format ? format : "folded";
	if (units && *units && !cp_type_name_valid(units)) {
		cp_resp_error(out, 400, "units: '%.32s' takes letters, digits, '_', '.' and '-' (samples, objects, bytes)",
			      units);
		goto bad;
	}
	cp_pyro_type(nm.suffix, units && *units ? units : NULL, &ty);
	if (!strcmp(format, "folded") || !strcmp(format, "groups") || !strcmp(format, "lines")) {
		if (!len) {
			bad_body(s, out, API_PYROSCOPE, 400, "%s", "the body is empty: POST folded stacks");
			goto out;
		}
		if (cp_is_gzip(body, len)) { /* a gzipped text body */
			if ((err = cp_gunzip_limited(body, len, &fp.copy, &len))) {
				bad_body(s, out, API_PYROSCOPE, decode_status(-err), "%s", cp_errmsg(-err));
				goto out;
			}
			body = fp.copy;
		}
		p = cp_pyro_decode_text((const char *)body, len, !strcmp(format, "lines"), &ty, rate, from, until);
		a.name = ty.name;
	} else if (!strcmp(format, "pprof")) {
		if (ctype && !strncasecmp(ctype, "multipart/form-data", 19)) {
			if ((err = cp_req_form(r, pick_field, &fp))) {
				bad_body(s, out, API_PYROSCOPE, 400, "%s", cp_errmsg(-err));
				goto out;
			}
			if (!fp.data) {
				bad_body(s, out, API_PYROSCOPE, 400, "%s", "the form has no 'profile' field");
				goto out;
			}
			body = fp.data;
			len = fp.len;
		}
		if (!len) {
			bad_body(s, out, API_PYROSCOPE, 400, "%s", "the body is empty: POST a pprof profile");
			goto out;
		}
		/* stored at the push's from (until - 10 s when not given), as a
		 * folded push is: not at the pprof's own time, which clients set to
		 * when they stopped profiling (one flush late) */
		if ((p = cp_pprof_decode(body, len)))
			p->time_nanos = from;
		pprof = true;
	} else {
		bad_body(s, out, API_PYROSCOPE, 400, "format '%.32s' is not taken here: send folded, lines or pprof", format);
		goto out;
	}
	if (!p) {
		bad_body(s, out, API_PYROSCOPE, decode_status(errno), "the body is not a profile: %s", cp_errmsg(errno));
		goto out;
	}
	a.labels = nm.labels.kv;
	a.nlabels = nm.labels.n;
	a.time_ns = p->time_nanos ? p->time_nanos : from;
	if (pprof) { /* each kind of sample type under its Pyroscope name */
		size_t samples = p->nsamples;

		if ((err = cp_pyro_split(p, nm.suffix, &parts, &nparts))) {
			bad_body(s, out, API_PYROSCOPE, err == -ENOMEM ? 500 : 400, "%s", cp_errmsg(-err));
			goto out;
		}
		p = NULL; /* the parts have it */
		if (!(as = calloc(nparts, sizeof(*as)))) {
			bad_body(s, out, API_PYROSCOPE, 500, "%s", "out of memory");
			goto out;
		}
		for (i = 0; i < nparts; i++) {
			as[i] = a;
			as[i].profile = parts[i].profile;
			as[i].name = parts[i].name;
		}
		err = cp_shared_append(s->store, as, nparts, msg, sizeof(msg));
		ingest_done(s, out, API_PYROSCOPE, err, msg, 1, samples, len);
		goto out;
	}
	a.profile = p;
	err = cp_shared_append(s->store, &a, 1, msg, sizeof(msg));
	ingest_done(s, out, API_PYROSCOPE, err, msg, 1, p->nsamples, len);
	goto out;
bad:
	atomic_fetch_add(&s->errors[API_PYROSCOPE], 1);
out:
	free(fp.copy);
	free(as);
	cp_pyro_parts_free(parts, nparts);
	cp_profile_free(p);
	cp_pyro_name_release(&nm);
}

struct parca_batch {
	struct cp_store_append *a;
	struct cp_profile **p;
	struct cp_labels *labels;
	char **names;
	size_t n, cap, samples;
};

static int parca_one(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen)
{
	struct parca_batch *b = ctx;
	struct cp_labels ls = { 0 };
	char *name = NULL;
	size_t i;
	int err;

	for (i = 0; i < labels->n; i++) {
		if (!strcmp(labels->kv[i].name, "__name__")) {
			if (!cp_type_name_valid(labels->kv[i].value)) {
				err = cp_error(EINVAL, "__name__ '%.64s' takes letters, digits, '_', '.' and '-'",
					       labels->kv[i].value);
				goto fail;
			}
			free(name);
			name = strdup(labels->kv[i].value);
		}
		else if ((err = cp_labels_add(&ls, labels->kv[i].name, labels->kv[i].value)))
			goto fail;
	}
	if (b->n == b->cap) { /* the four arrays grow together, each to the same capacity */
		size_t cap = b->cap, cp = b->cap, cl = b->cap, cn = b->cap;

		if (cp_grow((void **)&b->a, &cap, b->n + 1, sizeof(*b->a)) ||
		    cp_grow((void **)&b->p, &cp, cap, sizeof(*b->p)) ||
		    cp_grow((void **)&b->labels, &cl, cap, sizeof(*b->labels)) ||
		    cp_grow((void **)&b->names, &cn, cap, sizeof(*b->names))) {
			err = cp_error(ENOMEM, "out of memory");
			goto fail;
		}
		b->cap = cap;
	}
	if (!(b->p[b->n] = cp_pprof_decode(raw, rawlen))) {
		err = cp_error_ctx(errno, "rawProfile %zu", b->n);
		goto fail;
	}
	b->samples += b->p[b->n]->nsamples;
	b->labels[b->n] = ls;
	b->names[b->n] = name;
	memset(&b->a[b->n], 0, sizeof(b->a[b->n]));
	b->a[b->n].profile = b->p[b->n];
	b->a[b->n].name = name;
	b->a[b->n].labels = ls.kv;
	b->a[b->n].nlabels = ls.n;
	b->n++;
	return 0;
fail:
	free(name);
	cp_labels_release(&ls);
	return err;
}

static void push_parca(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct parca_batch b = { 0 };
	const uint8_t *body;
	char msg[512];
	size_t len, i;
	int err;

	body = cp_req_body(r, &len);
	if ((err = cp_parca_writeraw((const char *)body, len, parca_one, &b))) {
		bad_body(s, out, API_PARCA, decode_status(-err), "%s", cp_errmsg(-err));
	} else if (!b.n) {
		bad_body(s, out, API_PARCA, 400, "%s", "the body holds no profiles (series[].samples[].rawProfile)");
	} else {
		err = cp_shared_append(s->store, b.a, b.n, msg, sizeof(msg));
		ingest_done(s, out, API_PARCA, err, msg, b.n, b.samples, len);
		if (!err) /* Parca answers an empty object */
			cp_resp_text(out, 200, "application/json", "{}\n");
	}
	for (i = 0; i < b.n; i++) {
		cp_profile_free(b.p[i]);
		cp_labels_release(&b.labels[i]);
		free(b.names[i]);
	}
	free(b.a);
	free(b.p);
	free(b.labels);
	free(b.names);
}

static void h_push(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_native(r, out, arg);
	log_rejected(arg, API_NATIVE, r, out);
}

static void h_pyroscope(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_pyroscope(r, out, arg);
	log_rejected(arg, API_PYROSCOPE, r, out);
}

static void h_parca_write(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_parca(r, out, arg);
	log_rejected(arg, API_PARCA, r, out);
}

/* ---- operations and the web view ---- */

static void h_healthz(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	cp_resp_text(out, 200, "text/plain", "ok\n");
}

static void h_metrics(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct cp_store_stats st = { 0 };
	struct cp_store *rs;
	struct mem m;
	int k;

	(void)r;
	if ((rs = cp_shared_reader(s->store))) {
		cp_store_stats(rs, &st);
		cp_shared_release(s->store, rs);
	}
	if (mem_open(&m, out))
		return;
#define COUNTER(metric, help, field)                                                                     \
	fprintf(m.f, "# HELP " metric " " help "\n# TYPE " metric " counter\n");                           \
	for (k = 0; k < NAPIS; k++)                                                                      \
		fprintf(m.f, metric "{api=\"%s\"} %llu\n", api_names[k], (unsigned long long)atomic_load(&s->field[k]));
	COUNTER("cprof_ingest_profiles_total", "Profiles stored from pushes.", profiles)
	COUNTER("cprof_ingest_samples_total", "Samples (distinct stacks and labels) stored from pushes.", samples)
	COUNTER("cprof_ingest_bytes_total", "Request body bytes of stored pushes.", bytes)
	COUNTER("cprof_ingest_errors_total", "Pushes refused or not stored.", errors)
#undef COUNTER
	fprintf(m.f, "# HELP cprof_store_bytes Bytes the store takes on disk.\n# TYPE cprof_store_bytes gauge\n"
		     "cprof_store_bytes %lld\n",
		(long long)st.bytes);
	fprintf(m.f, "# HELP cprof_store_series Stored series.\n# TYPE cprof_store_series gauge\ncprof_store_series %lld\n",
		(long long)st.series);
	fprintf(m.f, "# HELP cprof_store_entries Stored (series, time, stack, labels) entries.\n"
		     "# TYPE cprof_store_entries gauge\ncprof_store_entries %lld\n",
		(long long)st.entries);
	if (s->scraper) {
		struct cp_target_state *t = NULL;
		size_t n = 0;

		if (!cp_scraper_targets(s->scraper, &t, &n))
			cp_target_states_metrics(m.f, t, n);
		cp_target_states_free(t, n);
	}
	cp_server_metrics(s->http, m.f);
	mem_close(&m, out, 0, "text/plain; version=0.0.4; charset=utf-8");
}

static void asset(struct cp_resp *out, const char *name)
{
	const struct cp_asset *a = cp_asset_find(name);
	char *copy;

	if (!a || !(copy = malloc(a->len + 1))) {
		cp_resp_error(out, 404, "no such file: %s", name);
		return;
	}
	memcpy(copy, a->data, a->len);
	cp_resp_take(out, 200, a->type, copy, a->len);
}

static void h_index(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	asset(out, "index.html");
}

static void h_login(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	asset(out, "login.html");
}

static void h_ui(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)arg;
	asset(out, cp_req_path(r) + strlen("/ui/"));
}

/* scrape jobs in the server: each scraped profile goes through the writer */
int cp_api_scrape_sink(void *ctx, const struct cp_store_append *a, size_t n)
{
	struct cp_api *s = ctx;
	char msg[512];
	size_t i, samples = 0;
	int err = cp_shared_append(s->store, a, n, msg, sizeof(msg));

	if (err) {
		atomic_fetch_add(&s->errors[API_SCRAPE], 1);
		return cp_error(-err, "%s", msg);
	}
	for (i = 0; i < n; i++)
		samples += a[i].profile->nsamples;
	atomic_fetch_add(&s->profiles[API_SCRAPE], n);
	atomic_fetch_add(&s->samples[API_SCRAPE], samples);
	return 0;
}

static void h_targets(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct cp_target_state *t = NULL;
	size_t n = 0;
	struct mem m;
	int err;

	(void)r;
	if (s->scraper && (err = cp_scraper_targets(s->scraper, &t, &n))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		return;
	}
	if (!mem_open(&m, out))
		mem_close(&m, out, cp_target_states_json(m.f, t, n), "application/json");
	cp_target_states_free(t, n);
}

static const struct cp_route routes[] = {
	{ "GET", "/", "index", h_index, false },
	{ "GET", "/ui/", "ui", h_ui, false },
	{ "GET", "/login", "login", h_login, true },
	{ "GET", "/healthz", "healthz", h_healthz, false },
	{ "GET", "/ready", "ready", h_healthz, false }, /* Pyroscope's name for it */
	{ "GET", "/metrics", "metrics", h_metrics, false },
	{ "GET", "/api/v1/types", "types", h_types, false },
	{ "GET", "/api/v1/labels", "labels", h_labels, false },
	{ "GET", "/api/v1/values", "values", h_values, false },
	{ "GET", "/api/v1/series", "series", h_series, false },
	{ "GET", "/api/v1/range", "range", h_range, false },
	{ "GET", "/api/v1/profile", "profile", h_profile, false },
	{ "GET", "/api/v1/diff", "diff", h_diff, false },
	{ "GET", "/api/v1/regressions", "regressions", h_regressions, false },
	{ "GET", "/api/v1/stats", "stats", h_stats, false },
	{ "GET", "/api/v1/targets", "targets", h_targets, false },
	{ "POST", "/api/v1/push", "push", h_push, false },
	{ "POST", "/ingest", "pyroscope_ingest", h_pyroscope, false },
	{ "POST", "/api/profiles/writeraw", "parca_writeraw", h_parca_write, false },
	{ "GET", "/api/profiles/types", "parca_types", h_parca_types, false },
	{ "GET", "/api/profiles/labels", "parca_labels", h_parca_labels, false },
	{ "GET", "/api/profiles/labels/", "parca_label_values", h_parca_labels, false },
};


const struct cp_route *cp_api_routes(size_t *n)
{
	*n = sizeof(routes) / sizeof(routes[0]);
	return routes;
}

struct cp_api *cp_api_new(struct cp_shared *store)
{
	struct cp_api *s = calloc(1, sizeof(*s));
	int k;

	if (!s) {
		cp_error(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->store = store;
	pthread_mutex_init(&s->rlock, NULL);
	for (k = 0; k < NAPIS; k++) {
		atomic_init(&s->profiles[k], 0);
		atomic_init(&s->samples[k], 0);
		atomic_init(&s->errors[k], 0);
		atomic_init(&s->bytes[k], 0);
	}
	return s;
}

void cp_api_set_server(struct cp_api *s, struct cp_server *http)
{
	s->http = http;
}

void cp_api_set_scraper(struct cp_api *s, struct cp_scraper *scraper)
{
	s->scraper = scraper;
}

void cp_api_free(struct cp_api *s)
{
	if (!s)
		return;
	log_rejected_left(s);
	pthread_mutex_destroy(&s->rlock);
	free(s);
}
