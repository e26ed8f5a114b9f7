/* SPDX-License-Identifier: MIT */
/* The API of cprof serve (docs/API.md), as routes for lib/http/server.h
 * over a shared store (lib/store/shared.h): the route table (the pushes'
 * routes from lib/ingest/protocol.h's table), the API's state, and the
 * helpers its handlers share; the handlers are in api_query.c, api_ingest.c
 * and api_ops.c (api_impl.h). */
#include "http/api.h"
#include "http/api_impl.h"
#include "http/api_querier.h"

const char *api_name(const struct cp_api *s, size_t k)
{
	return k < s->scrape ? cp_ingest_protocols[k].name : "scrape";
}

/* ---- helpers for handlers ---- */


int api_mem_open(struct mem *m, struct cp_resp *out)
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
void api_mem_close(struct mem *m, struct cp_resp *out, int err, const char *type)
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

int api_store_status(int err)
{
	return err == -ENOENT ? 404 : err == -EINVAL ? 400 : err == -CP_REGEX_ECOST ? 422 : 500;
}

/* the selector in param (empty or missing: NULL, any series); false after answering 400 */
bool api_get_selector(struct cp_req *r, struct cp_resp *out, const char *param, bool required,
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

bool api_get_time(struct cp_req *r, struct cp_resp *out, const char *param, int64_t now, int64_t *t)
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
bool api_get_range(struct cp_req *r, struct cp_resp *out, const char *fparam, const char *tparam, int64_t dfrom,
		      int64_t dto, int64_t *from, int64_t *to)
{
	int64_t now = cp_now_ns();

	*from = dfrom ? dfrom : now - 3600 * (int64_t)1000000000;
	*to = dto ? dto : now;
	if (!api_get_time(r, out, fparam, now, from) || !api_get_time(r, out, tparam, now, to))
		return false;
	if (*from > *to) {
		cp_resp_error(out, 400, "the time range is empty: %s is after %s", fparam, tparam);
		return false;
	}
	return true;
}

bool api_flag(struct cp_req *r, const char *param)
{
	const char *v = cp_req_arg(r, param);

	return v && (!*v || !strcmp(v, "1") || !strcmp(v, "true"));
}

bool api_get_count(struct cp_req *r, struct cp_resp *out, const char *param, long dflt, long *v)
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
bool api_get_filter(struct cp_req *r, struct cp_resp *out, struct cp_filter **f)
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
bool api_get_series(struct cp_api *s, struct cp_req *r, struct cp_resp *out, struct cp_store_series **ser,
		       size_t *n)
{
	int64_t now = cp_now_ns(), from = INT64_MIN, to = INT64_MAX;
	struct cp_selector *sel;
	struct cp_store *st;
	int err;

	/* (from and to optional: all time by default) */
	if (!api_get_time(r, out, "from", now, &from) || !api_get_time(r, out, "to", now, &to))
		return false;
	if (!api_get_selector(r, out, "query", false, &sel))
		return false;
	if (!(st = cp_shared_reader(s->store))) {
		cp_selector_free(sel);
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_series_in(st, sel, from, to, ser, n);
	cp_shared_release(s->store, st);
	cp_selector_free(sel);
	if (err) {
		cp_resp_error(out, api_store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	return true;
}

/* merged profiles for a selector and range; false after answering.
 * resolution (may be NULL): the store's resolution of the data read */
bool api_select_profiles(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
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
		cp_resp_error(out, api_store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	return true;
}

/* sel's samples per interval over [from, to) (cp_store_select_intervals, as
 * cprof diff), filtered */
bool api_select_intervals(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
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
		cp_resp_error(out, api_store_status(err), "%s", cp_errmsg(-err));
		return false;
	}
	for (size_t i = 0; *n && i < (*iv)->n; i++)
		if (!((*iv)->iv[i] = cp_profile_filter((*iv)->iv[i], filter))) {
			cp_resp_error(out, errno == CP_REGEX_ECOST ? 422 : 500, "%s", cp_errmsg(errno));
			return false;
		}
	return true;
}

/* the routes before the pushes' and after them (cp_api_routes puts the ingest table's between) */
static const struct cp_route routes_head[] = {
	{ "GET", "/", "index", api_h_index, false },
	{ "GET", "/ui/", "ui", api_h_ui, false },
	{ "GET", "/login", "login", api_h_login, true },
	{ "GET", "/healthz", "healthz", api_h_healthz, false },
	{ "GET", "/ready", "ready", api_h_healthz, false }, /* Pyroscope's name for it */
	{ "GET", "/metrics", "metrics", api_h_metrics, false },
	{ "GET", "/api/v1/types", "types", api_h_types, false },
	{ "GET", "/api/v1/labels", "labels", api_h_labels, false },
	{ "GET", "/api/v1/values", "values", api_h_values, false },
	{ "GET", "/api/v1/series", "series", api_h_series, false },
	{ "GET", "/api/v1/range", "range", api_h_range, false },
	{ "GET", "/api/v1/profile", "profile", api_h_profile, false },
	{ "GET", "/api/v1/diff", "diff", api_h_diff, false },
	{ "GET", "/api/v1/regressions", "regressions", api_h_regressions, false },
	{ "GET", "/api/v1/stats", "stats", api_h_stats, false },
	{ "GET", "/api/v1/targets", "targets", api_h_targets, false },
};
static const struct cp_route routes_tail[] = {
	{ "GET", "/api/profiles/types", "parca_types", api_h_parca_types, false },
	{ "GET", "/api/profiles/labels", "parca_labels", api_h_parca_labels, false },
	{ "GET", "/api/profiles/labels/", "parca_label_values", api_h_parca_labels, false },
	/* Pyroscope's query API, as Grafana's Pyroscope data source calls it (api_querier.c) */
	{ "POST", "/querier.v1.QuerierService/", "pyroscope_querier", api_h_querier, false },
	{ "GET", "/pyroscope/render", "pyroscope_render", api_h_pyroscope_render, false },
	{ "GET", "/pyroscope/render-diff", "pyroscope_render_diff", api_h_pyroscope_render_diff, false },
	{ "POST", "/settings.v1.SettingsService/", "pyroscope_settings", api_h_settings, false },
};

#define NHEAD (sizeof(routes_head) / sizeof(routes_head[0]))
#define NTAIL (sizeof(routes_tail) / sizeof(routes_tail[0]))
static struct cp_route routes[NHEAD + CP_INGEST_PROTOCOLS_MAX + NTAIL];
static size_t nroutes;
static pthread_once_t routes_once = PTHREAD_ONCE_INIT;

/* the route table: routes_head, a route for each row of the ingest table
 * (lib/ingest/protocol.h, all served by api_h_ingest), routes_tail */
static void routes_make(void)
{
	size_t n = 0;

	for (size_t i = 0; i < NHEAD; i++)
		routes[n++] = routes_head[i];
	for (size_t i = 0; cp_ingest_protocols[i].name && i < CP_INGEST_PROTOCOLS_MAX; i++) {
		const struct cp_ingest_protocol *p = &cp_ingest_protocols[i];

		routes[n++] = (struct cp_route){ p->method, p->path, p->route, api_h_ingest, false };
	}
	for (size_t i = 0; i < NTAIL; i++)
		routes[n++] = routes_tail[i];
	nroutes = n;
}

const struct cp_route *cp_api_routes(size_t *n)
{
	pthread_once(&routes_once, routes_make);
	*n = nroutes;
	return routes;
}

struct cp_api *cp_api_new(struct cp_shared *store)
{
	size_t nproto = cp_ingest_protocol_count(), k;
	struct cp_api *s;

	if (nproto > CP_INGEST_PROTOCOLS_MAX) {
		cp_error(EINVAL, "the ingest table has %zu rows, over CP_INGEST_PROTOCOLS_MAX (%d)", nproto,
			 CP_INGEST_PROTOCOLS_MAX);
		errno = EINVAL;
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		cp_error(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->store = store;
	s->scrape = nproto;
	s->napis = nproto + 1;
	pthread_mutex_init(&s->rlock, NULL);
	for (k = 0; k < API_MAX; k++) {
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
	api_log_rejected_left(s);
	pthread_mutex_destroy(&s->rlock);
	free(s);
}
