/* SPDX-License-Identifier: MIT */
/* lib/scrape.c through its library interface, against a real HTTP server
 * (lib/http/server.c on 127.0.0.1:0) that serves a Go-style cumulative
 * allocations profile which grows with each request, and paths that fail:
 * one scrape of a URL, a scraper's rounds (the sink's appends, their labels,
 * a cumulative profile stored as what happened since the last scrape, each
 * target's state), and the requests made from a command line's URL. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "http/server.h"
#include "pprof.h"
#include "profile.h"
#include "scrape.h"
#include "selector.h"
#include "testutil.h"
#include "util.h"

#define SEC ((int64_t)1000000000)

/* ---- the target: /debug/pprof/allocs, grown by each request ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int served; /* allocs profiles served */

static uint32_t str(struct cp_profile *p, const char *s)
{
	int64_t id = cp_profile_str(p, s);

	ck_assert_int_ge(id, 0);
	return (uint32_t)id;
}

/* a location calling name, in mapping 1 */
static uint32_t loc(struct cp_profile *p, const char *name, uint64_t addr)
{
	struct cp_function f = { str(p, name), str(p, name), str(p, "main.go"), 1 };
	struct cp_line line = { 0, 0, 0 };
	int64_t fid = cp_profile_function(p, &f), lid;

	ck_assert_int_gt(fid, 0);
	line.function = (uint32_t)fid;
	line.line = 12;
	lid = cp_profile_location(p, 1, addr, &line, 1, false);
	ck_assert_int_gt(lid, 0);
	return (uint32_t)lid;
}

/* Go's allocs profile after k requests: main.alloc has made k * 1000 bytes (k * 10 objects),
 * main.grow k * 4000 (k * 40); 100 and 400 bytes of them are in use (1 and 4 objects; inuse_*:
 * gauges). */
static struct cp_profile *allocs(int k)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_mapping m = { 0x400000, 0x500000, 0, 0, 0, true, true, true, false };
	const char *fn[2] = { "main.alloc", "main.grow" };

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "alloc_objects", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "alloc_space", "bytes"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "inuse_objects", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "inuse_space", "bytes"), 0);
	ck_assert_int_eq(cp_profile_set_period_type(p, "space", "bytes", 524288), 0);
	m.filename = str(p, "/usr/bin/app");
	m.build_id = str(p, "b1d");
	ck_assert_int_eq(cp_profile_mapping(p, &m), 1);
	p->time_nanos = cp_now_ns();
	for (int i = 0; i < 2; i++) {
		uint32_t locs[2] = { loc(p, fn[i], 0x401000 + 0x100 * (uint64_t)i), loc(p, "main.main", 0x402000) };
		int64_t st = cp_profile_stack(p, locs, 2), v[4] = { k * 10 * (3 * i + 1), k * 1000 * (3 * i + 1),
								 1 + 3 * i, 100 * (3 * i + 1) };

		ck_assert_int_ge(st, 0);
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, 0, v), 0);
	}
	return p;
}

static void h_allocs(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_profile *p;
	uint8_t *buf = NULL;
	size_t len = 0;
	int k;

	(void)r;
	(void)arg;
	pthread_mutex_lock(&lock);
	k = ++served;
	pthread_mutex_unlock(&lock);
	p = allocs(k);
	if (cp_pprof_encode(p, 1, &buf, &len))
		cp_resp_error(out, 500, "cannot encode");
	else
		cp_resp_take(out, 200, "application/octet-stream", (char *)buf, len);
	cp_profile_free(p);
}

static void h_broken(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r;
	(void)arg;
	cp_resp_error(out, 500, "the test's target is broken");
}

static void h_garbage(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)r;
	(void)arg;
	cp_resp_text(out, 200, "text/html", "<html>not a profile</html>\n");
}

static const struct cp_route routes[] = {
	{ "GET", "/debug/pprof/allocs", "allocs", h_allocs, false },
	{ "GET", "/broken", "broken", h_broken, false },
	{ "GET", "/garbage", "garbage", h_garbage, false },
};

static struct cp_server *srv;
static char host[64], base[96];

static void setup(void)
{
	struct cp_server_opts o = { 0 };

	o.listen = "127.0.0.1:0";
	o.routes = routes;
	o.nroutes = sizeof(routes) / sizeof(routes[0]);
	srv = cp_server_start(&o);
	ck_assert_msg(srv != NULL, "cannot start the test server: %s", cp_errmsg(errno));
	snprintf(host, sizeof(host), "127.0.0.1:%d", cp_server_port(srv));
	snprintf(base, sizeof(base), "http://%s", host);
	served = 0;
}

static void teardown(void)
{
	cp_server_stop(srv);
}

static int64_t total(const struct cp_profile *p, const char *type)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(cp_profile_string(p, p->sample_types[i].type), type))
			return cp_profile_total(p, (int)i);
	ck_abort_msg("no sample type %s", type);
	return -1;
}

/* ---- one scrape of a URL ---- */

/* The profile as served; a 500, a body that is no profile, and a port nobody listens on are errors
 * that name the URL and what went wrong. */
START_TEST(test_scrape_once)
{
	char url[160];
	struct cp_profile *p;
	size_t bytes = 0;

	snprintf(url, sizeof(url), "%s/debug/pprof/allocs", base);
	p = cp_scrape_once(url, 5 * SEC, &bytes);
	ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
	ck_assert_uint_gt(bytes, 50);
	ck_assert_int_eq(total(p, "alloc_space"), 5000);
	ck_assert_int_eq(total(p, "inuse_objects"), 5);
	cp_profile_free(p);

	snprintf(url, sizeof(url), "%s/broken", base);
	errno = 0;
	ck_assert_ptr_null(cp_scrape_once(url, 5 * SEC, &bytes));
	ck_assert_int_ne(errno, 0);
	ck_assert_contains(cp_errmsg(errno), "500");
	ck_assert_contains(cp_errmsg(errno), "/broken");

	snprintf(url, sizeof(url), "%s/garbage", base);
	ck_assert_ptr_null(cp_scrape_once(url, 5 * SEC, &bytes));
	ck_assert_contains(cp_errmsg(errno), "/garbage");

	cp_server_stop(srv); /* nobody there now */
	srv = NULL;
	snprintf(url, sizeof(url), "%s/debug/pprof/allocs", base);
	ck_assert_ptr_null(cp_scrape_once(url, 5 * SEC, &bytes));
	ck_assert_contains(cp_errmsg(errno), host);
}
END_TEST

/* ---- a scraper ---- */

struct sunk {
	int appends;
	char labels[256]; /* the first append's, "k=v,k=v" */
	char name[64];
	int64_t alloc_space, inuse_space; /* the last append's */
	bool has_alloc;
};

static int sink(void *ctx, const struct cp_store_append *a, size_t n)
{
	struct sunk *s = ctx;

	for (size_t i = 0; i < n; i++) {
		const struct cp_profile *p = a[i].profile;

		if (!s->appends++) {
			size_t len = 0;

			for (size_t k = 0; k < a[i].nlabels; k++)
				len += (size_t)snprintf(s->labels + len, sizeof(s->labels) - len, "%s%s=%s", k ? "," : "",
							a[i].labels[k].name, a[i].labels[k].value);
			snprintf(s->name, sizeof(s->name), "%s", a[i].name ? a[i].name : "");
		}
		s->has_alloc = false;
		for (size_t k = 0; k < p->ntypes; k++) {
			const char *t = cp_profile_string(p, p->sample_types[k].type);

			if (!strcmp(t, "alloc_space")) {
				s->alloc_space = cp_profile_total(p, (int)k);
				s->has_alloc = true;
			} else if (!strcmp(t, "inuse_space")) {
				s->inuse_space = cp_profile_total(p, (int)k);
			}
		}
	}
	return 0;
}

/* a job "app" of one target (this server, labelled env=test) and two profiles: memory at Go's
 * path, and one at a path that fails */
static void config(struct cp_scrape_config *c)
{
	struct cp_scrape_job *j = calloc(1, sizeof(*j));
	struct cp_scrape_static *st = calloc(1, sizeof(*st));
	struct cp_scrape_profile *pr = calloc(2, sizeof(*pr));

	ck_assert(j && st && pr);
	j->name = strdup("app");
	j->interval = 10 * SEC;
	j->timeout = 5 * SEC;
	j->scheme = strdup("http");
	st->targets = calloc(1, sizeof(*st->targets));
	st->targets[0] = strdup(host);
	st->ntargets = 1;
	st->labels = calloc(1, sizeof(*st->labels));
	st->labels[0] = (struct cp_kv){ strdup("env"), strdup("test") };
	st->nlabels = 1;
	j->statics = st;
	j->nstatics = 1;
	pr[0] = (struct cp_scrape_profile){ strdup("memory"), strdup("/debug/pprof/allocs"), true, false, 0, NULL, 0 };
	pr[1] = (struct cp_scrape_profile){ strdup("block"), strdup("/broken"), true, false, 0, NULL, 0 };
	j->profiles = pr;
	j->nprofiles = 2;
	c->jobs = j;
	c->njobs = 1;
}

static const struct cp_target_state *state_of(const struct cp_target_state *t, size_t n, const char *profile)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].profile, profile))
			return &t[i];
	ck_abort_msg("no target state for %s", profile);
	return NULL;
}

/* Two rounds: each scrapes both profiles; memory is stored with the job's and the target's labels,
 * the first scrape its gauges only (no earlier one to take the difference from), the second what
 * was allocated between them; the broken one is down with the server's status, failed twice, and
 * nothing of it reaches the sink. */
START_TEST(test_scraper_rounds)
{
	struct cp_scrape_config c = { 0 };
	struct cp_target_state *t = NULL;
	const struct cp_target_state *m, *b;
	struct cp_scraper *s;
	struct sunk got = { 0 };
	char inst[96];
	size_t n = 0;

	config(&c);
	ck_assert_ptr_nonnull(s = cp_scraper_new(&c, sink, &got));
	ck_assert_int_eq(cp_scraper_round(s), 0);
	ck_assert_int_eq(got.appends, 1);
	ck_assert_str_eq(got.name, "memory");
	snprintf(inst, sizeof(inst), "instance=%s", host);
	ck_assert_contains(got.labels, "job=app");
	ck_assert_contains(got.labels, inst);
	ck_assert_contains(got.labels, "env=test");
	ck_assert(!got.has_alloc || got.alloc_space == 0);
	ck_assert_int_eq(got.inuse_space, 500);
	ck_assert_int_eq(cp_scraper_round(s), 0);
	ck_assert_int_eq(got.appends, 2);
	ck_assert(got.has_alloc);
	ck_assert_int_eq(got.alloc_space, 5000); /* 10000 - 5000: the second request's growth */
	ck_assert_int_eq(got.inuse_space, 500);

	ck_assert_int_eq(cp_scraper_targets(s, &t, &n), 0);
	ck_assert_uint_eq(n, 2);
	m = state_of(t, n, "memory");
	b = state_of(t, n, "block");
	ck_assert(m->up);
	ck_assert_uint_eq(m->scrapes, 2);
	ck_assert_uint_eq(m->failures, 0);
	ck_assert_ptr_null(m->last_error);
	ck_assert_uint_gt(m->last_bytes, 0);
	ck_assert_str_eq(m->job, "app");
	ck_assert_contains(m->url, "/debug/pprof/allocs");
	ck_assert(!b->up);
	ck_assert_uint_eq(b->failures, 2);
	ck_assert_contains(b->last_error, "500");
	cp_target_states_free(t, n);
	cp_scraper_free(s);
	cp_scrape_config_release(&c);
}
END_TEST

/* ---- a command line's URL ---- */

/* cprof scrape URL: the profile from the path's last part (profile: process_cpu, with ?seconds=),
 * Go's default path for a bare host, the instance label, and errors for what is no http(s) URL. */
START_TEST(test_scrape_request)
{
	struct cp_scrape_request r;

	ck_assert_int_eq(cp_scrape_request_make("http://db:6060/debug/pprof/profile", NULL, 0, 0, &r), 0);
	ck_assert_str_eq(r.name, "process_cpu");
	ck_assert_contains(r.url, "seconds=10");
	ck_assert_str_eq(r.instance, "db:6060");
	cp_scrape_request_release(&r);
	ck_assert_int_eq(cp_scrape_request_make("http://db:6060/debug/pprof/allocs", NULL, 0, 0, &r), 0);
	ck_assert_str_eq(r.name, "memory");
	ck_assert_ptr_null(strstr(r.url, "seconds="));
	cp_scrape_request_release(&r);
	ck_assert_int_eq(cp_scrape_request_make("https://db", NULL, 0, 0, &r), 0);
	ck_assert_str_eq(r.name, "process_cpu");
	ck_assert_contains(r.url, "https://db/debug/pprof/profile");
	cp_scrape_request_release(&r);
	ck_assert_int_eq(cp_scrape_request_make("ftp://db/x", NULL, 0, 0, &r), -EINVAL);
	ck_assert_int_eq(cp_scrape_request_make("http://", NULL, 0, 0, &r), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scrape");
	TCase *tc = tcase_create("scrape");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scrape_once);
	tcase_add_test(tc, test_scraper_rounds);
	tcase_add_test(tc, test_scrape_request);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
