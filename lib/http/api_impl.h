/* SPDX-License-Identifier: MIT */
/* What the parts of the server's API share (private to lib/http/api*.c): the API's state, the
 * helpers that read a request's arguments and write an answer, and the handlers that api.c's
 * route table names: api_query.c (the query API and Parca's read API), api_ingest.c (pushes:
 * one handler for every row of lib/ingest/protocol.h), api_ops.c (/healthz, /metrics, the
 * targets, the web view).
 * Ownership and errors: each helper's own; a handler answers through out. */
#ifndef CP_HTTP_API_IMPL_H
#define CP_HTTP_API_IMPL_H

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
#include "load.h"
#include "log.h"
#include "pprof.h"
#include "regex.h"
#include "render/regress.h"
#include "render/render.h"
#include "scrape.h"
#include "selector.h"
#include "util.h"

#include "http/server.h"
#include "ingest/protocol.h"
#include "store/shared.h"

/* The APIs counted in /metrics (profiles, samples, errors, bytes by api="NAME"): the ingest
 * protocols in their table's order (lib/ingest/protocol.h), then the scrapes (index s->scrape). */
#define API_MAX (CP_INGEST_PROTOCOLS_MAX + 1)

struct cp_api {
	struct cp_shared *store;
	struct cp_server *http;     /* its request counters in /metrics; may be NULL */
	struct cp_scraper *scraper; /* --config with scrape_configs; may be NULL */
	size_t napis, scrape; /* the APIs counted (the ingest protocols and the scrapes), the scrapes' index */
	_Atomic uint64_t profiles[API_MAX], samples[API_MAX], errors[API_MAX], bytes[API_MAX];
	/* rejected pushes: a warning each, at most one a second per API */
	pthread_mutex_t rlock;
	int64_t rlast[API_MAX];
	uint64_t rsuppressed[API_MAX];
};
/* The name of API k (its api="..." in /metrics). */
const char *api_name(const struct cp_api *s, size_t k);

/* a response body written through stdio */
struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

/* ---- helpers (api.c: each says what it does above its definition) ---- */
int api_mem_open(struct mem *m, struct cp_resp *out);
void api_mem_close(struct mem *m, struct cp_resp *out, int err, const char *type);
int api_store_status(int err);
bool api_get_selector(struct cp_req *r, struct cp_resp *out, const char *param, bool required,
		struct cp_selector **sel);
bool api_get_time(struct cp_req *r, struct cp_resp *out, const char *param, int64_t now, int64_t *t);
bool api_get_range(struct cp_req *r, struct cp_resp *out, const char *fparam, const char *tparam, int64_t dfrom,
		int64_t dto, int64_t *from, int64_t *to);
bool api_flag(struct cp_req *r, const char *param);
bool api_get_count(struct cp_req *r, struct cp_resp *out, const char *param, long dflt, long *v);
bool api_get_filter(struct cp_req *r, struct cp_resp *out, struct cp_filter **f);
bool api_get_series(struct cp_api *s, struct cp_req *r, struct cp_resp *out, struct cp_store_series **ser, size_t *n);
bool api_select_profiles(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
		int64_t to, const char *group_by, struct cp_store_result **res, size_t *n, int64_t *resolution,
		bool process_labels);
bool api_select_intervals(struct cp_api *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
		int64_t to, struct cp_filter *filter, struct cp_store_intervals **iv, size_t *n);

/* ---- handlers of the route table ---- */
/* api_query.c */
void api_h_types(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_labels(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_values(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_series(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_range(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_stats(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_profile(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_diff(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_regressions(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_parca_types(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_parca_labels(struct cp_req *r, struct cp_resp *out, void *arg);
/* api_ingest.c (and what cp_api_free logs of the pushes it rejected) */
void api_log_rejected_left(struct cp_api *s);
/* every ingest protocol's route: the row of the request's method and path */
void api_h_ingest(struct cp_req *r, struct cp_resp *out, void *arg);
/* api_ops.c */
void api_h_healthz(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_metrics(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_index(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_login(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_ui(struct cp_req *r, struct cp_resp *out, void *arg);
void api_h_targets(struct cp_req *r, struct cp_resp *out, void *arg);

#endif
