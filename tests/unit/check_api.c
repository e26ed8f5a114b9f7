/* SPDX-License-Identifier: MIT */
/* The two halves of cprof's HTTP protocol against each other, in-process:
 * the server's API (lib/http/api.c over lib/store/shared.c, served by
 * lib/http/server.c on 127.0.0.1:0) and the client's remote store
 * (lib/store/remote.c).  What goes in through one store comes out the same
 * through the other, and the server's errors reach the client as the
 * right error code with the server's reason. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "http/api.h"
#include "http/server.h"
#include "log.h"
#include "selector.h"
#include "store/remote.h"
#include "store/shared.h"
#include "testutil.h"
#include "util.h"

static char dir[64], url[64];
static struct cp_shared *shared;
static struct cp_api *api;
static struct cp_server *http;

static void setup(void)
{
	struct cp_server_opts so = { 0 };

	snprintf(dir, sizeof(dir), "/tmp/cprof-check-api.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	shared = cp_shared_open(dir, NULL);
	ck_assert_msg(shared, "%s", cp_errmsg(errno));
	api = cp_api_new(shared);
	ck_assert_ptr_nonnull(api);
	so.listen = "127.0.0.1:0";
	so.routes = cp_api_routes(&so.nroutes);
	so.arg = api;
	http = cp_server_start(&so);
	ck_assert_msg(http, "%s", cp_errmsg(errno));
	cp_api_set_server(api, http);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", cp_server_port(http));
}

static void teardown(void)
{
	cp_server_stop(http);
	cp_api_free(api);
	cp_shared_close(shared);
	rm_rf(dir);
}

static struct cp_profile *folded(const char *text)
{
	struct cp_profile *p = cp_folded_decode(text, strlen(text));

	ck_assert_msg(p, "%s", cp_errmsg(errno));
	return p;
}

static struct cp_selector *sel(const char *text)
{
	struct cp_selector *s = NULL;

	ck_assert_int_eq(cp_selector_parse(text, &s), 0);
	return s;
}

/* the total of what sel_text selects over [from, to) in store s */
static int64_t total(struct cp_store *s, const char *sel_text, int64_t from, int64_t to)
{
	struct cp_selector *sl = sel(sel_text);
	struct cp_store_query q = { sl, from, to, NULL };
	struct cp_store_result *r = NULL;
	size_t n = 0;
	int64_t t;
	int err = cp_store_select(s, &q, &r, &n);

	ck_assert_msg(!err, "select %s: %s", sel_text, cp_errmsg(-err));
	ck_assert_uint_eq(n, 1);
	t = cp_profile_total(r[0].profile, 0);
	cp_store_results_free(r, n);
	cp_selector_free(sl);
	return t;
}

/* pushed through the remote store, read back through both */
START_TEST(test_push_then_read_both_ways)
{
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0), *local;
	struct cp_profile *p = folded("main;work;alpha 30\nmain;work;beta 20\nmain;idle 7\n");
	struct cp_kv labels[] = { { "job", "api" }, { "env", "test" } };
	int64_t now = cp_now_ns();
	struct cp_store_append a = { p, "cpu", labels, 2, now - 1000000000 };

	ck_assert_ptr_nonnull(remote);
	ck_assert_int_eq(cp_store_append(remote, &a, 1), 0);
	local = cp_store_open(dir, CP_STORE_READ);
	ck_assert_ptr_nonnull(local);
	ck_assert_int_eq(total(remote, "cpu{job=\"api\"}", now - 3600000000000LL, now), 57);
	ck_assert_int_eq(total(local, "cpu{job=\"api\"}", now - 3600000000000LL, now), 57);
	ck_assert_int_eq(total(remote, "cpu{env=~\"te.*\"}", now - 3600000000000LL, now), 57);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
}
END_TEST

/* the series, their labels and the store's figures are the same seen from either side */
START_TEST(test_series_and_stats_agree)
{
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0), *local;
	struct cp_profile *p = folded("a;b 1\na;c 2\n");
	struct cp_kv l1[] = { { "job", "one" } }, l2[] = { { "job", "two" } };
	int64_t now = cp_now_ns();
	struct cp_store_append as[] = { { p, "cpu", l1, 1, now }, { p, "cpu", l2, 1, now } };
	struct cp_store_series *rs = NULL, *ls = NULL;
	struct cp_store_stats rst, lst;
	const char **items = NULL;
	size_t rn = 0, ln = 0, ni = 0;

	ck_assert_int_eq(cp_store_append(remote, as, 2), 0);
	local = cp_store_open(dir, CP_STORE_READ);
	ck_assert_int_eq(cp_store_series(remote, NULL, &rs, &rn), 0);
	ck_assert_int_eq(cp_store_series(local, NULL, &ls, &ln), 0);
	ck_assert_uint_eq(rn, 2);
	ck_assert_uint_eq(ln, 2);
	ck_assert_int_eq(cp_store_distinct(rs, rn, CP_LIST_VALUES, "job", &items, &ni), 0);
	ck_assert_uint_eq(ni, 2);
	ck_assert_str_eq(items[0], "one");
	ck_assert_str_eq(items[1], "two");
	free(items);
	ck_assert_int_eq(cp_store_stats(remote, &rst), 0);
	ck_assert_int_eq(cp_store_stats(local, &lst), 0);
	ck_assert_int_eq(rst.series, lst.series);
	ck_assert_int_eq(rst.entries, lst.entries);
	ck_assert_int_eq(rst.samples, lst.samples);
	cp_store_series_free(rs, rn);
	cp_store_series_free(ls, ln);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
}
END_TEST

/* totals over time: the same buckets and totals from the server as from the files */
START_TEST(test_over_time_agrees)
{
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0), *local;
	struct cp_profile *p = folded("x;y 5\n");
	int64_t sec = 1000000000, t0 = (cp_now_ns() / (60 * sec) - 10) * 60 * sec;
	struct cp_store_append as[] = { { p, "cpu", NULL, 0, t0 + 5 * sec }, { p, "cpu", NULL, 0, t0 + 65 * sec },
					{ p, "cpu", NULL, 0, t0 + 70 * sec } };
	struct cp_selector *sl = sel("cpu");
	struct cp_store_query q = { sl, t0, t0 + 180 * sec, NULL };
	int64_t *rt = NULL, *lt = NULL;
	struct cp_buckets rb, lb;
	char *rtype = NULL, *ltype = NULL;

	ck_assert_int_eq(cp_store_append(remote, as, 3), 0);
	local = cp_store_open(dir, CP_STORE_READ);
	ck_assert_int_eq(cp_store_over_time(remote, &q, 60 * sec, &rt, &rb, &rtype), 0);
	ck_assert_int_eq(cp_store_over_time(local, &q, 60 * sec, &lt, &lb, &ltype), 0);
	ck_assert_uint_eq(rb.n, lb.n);
	ck_assert_int_eq(rb.start, lb.start);
	ck_assert_uint_ge(rb.n, 2);
	for (size_t i = 0; i < rb.n; i++)
		ck_assert_int_eq(rt[i], lt[i]);
	ck_assert_int_eq(rt[0], 5);
	ck_assert_int_eq(rt[1], 10);
	ck_assert_str_eq(rtype, ltype);
	free(rt);
	free(lt);
	free(rtype);
	free(ltype);
	cp_selector_free(sl);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
}
END_TEST

/* a selection the server cannot answer: the client gets an error with the server's reason, not a profile */
START_TEST(test_server_errors_reach_the_client)
{
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0);
	struct cp_selector *sl = sel("nosuchtype");
	struct cp_store_query q = { sl, 0, cp_now_ns(), NULL };
	struct cp_store_result *r = NULL;
	size_t n = 0;
	int err = cp_store_select(remote, &q, &r, &n);

	ck_assert_int_lt(err, 0);
	ck_assert_msg(strstr(cp_errmsg(-err), "nosuchtype") || strstr(cp_errmsg(-err), "no "),
		      "the reason is the server's: %s", cp_errmsg(-err));
	cp_selector_free(sl);
	cp_store_close(remote);
}
END_TEST

/* once the shared store stops, appends are refused (503), none half-stored */
START_TEST(test_append_after_stop_is_refused)
{
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0), *local;
	struct cp_profile *p = folded("a 1\n");
	struct cp_store_append a = { p, "cpu", NULL, 0, cp_now_ns() };
	struct cp_store_stats st;
	int err;

	cp_shared_stop(shared);
	err = cp_store_append(remote, &a, 1);
	ck_assert_int_lt(err, 0);
	ck_assert_msg(strstr(cp_errmsg(err), "shutting down"), "%s", cp_errmsg(err));
	local = cp_store_open(dir, CP_STORE_READ);
	ck_assert_int_eq(cp_store_stats(local, &st), 0);
	ck_assert_int_eq(st.entries, 0);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("remote-vs-server");
	SRunner *sr;
	int failed;

	cp_log_level = CP_LOG_ERROR; /* the refused push of the last test is logged as a warning */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_push_then_read_both_ways);
	tcase_add_test(tc, test_series_and_stats_agree);
	tcase_add_test(tc, test_over_time_agrees);
	tcase_add_test(tc, test_server_errors_reach_the_client);
	tcase_add_test(tc, test_append_after_stop_is_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
