/* SPDX-License-Identifier: MIT */
/* Operations and the web view: /healthz (and /ready), /metrics, the
 * scrape targets, and the web view's files. */
#include "http/api.h"
#include "http/api_impl.h"

/* ---- operations and the web view ---- */

void api_h_healthz(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	cp_resp_text(out, 200, "text/plain", "ok\n");
}

void api_h_metrics(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	struct cp_store_stats st = { 0 };
	struct cp_store *rs;
	struct mem m;
	size_t k;

	(void)r;
	if ((rs = cp_shared_reader(s->store))) {
		cp_store_stats(rs, &st);
		cp_shared_release(s->store, rs);
	}
	if (api_mem_open(&m, out))
		return;
#define COUNTER(metric, help, field)                                                                     \
	fprintf(m.f, "# HELP " metric " " help "\n# TYPE " metric " counter\n");                           \
	for (k = 0; k < s->napis; k++)                                                                   \
		fprintf(m.f, metric "{api=\"%s\"} %llu\n", api_name(s, k), (unsigned long long)atomic_load(&s->field[k]));
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
	api_mem_close(&m, out, 0, "text/plain; version=0.0.4; charset=utf-8");
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

void api_h_index(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	asset(out, "index.html");
}

void api_h_login(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r, (void)arg;
	asset(out, "login.html");
}

void api_h_ui(struct cp_req *r, struct cp_resp *out, void *arg)
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
		atomic_fetch_add(&s->errors[s->scrape], 1);
		return cp_error(-err, "%s", msg);
	}
	for (i = 0; i < n; i++)
		samples += a[i].profile->nsamples;
	atomic_fetch_add(&s->profiles[s->scrape], n);
	atomic_fetch_add(&s->samples[s->scrape], samples);
	return 0;
}

void api_h_targets(struct cp_req *r, struct cp_resp *out, void *arg)
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
	if (!api_mem_open(&m, out))
		api_mem_close(&m, out, cp_target_states_json(m.f, t, n), "application/json");
	cp_target_states_free(t, n);
}
