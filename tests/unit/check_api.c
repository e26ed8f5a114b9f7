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
	struct cp_store_query q = { sl, from, to, NULL, NULL, false };
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
	struct cp_store_append a = { .profile = p, .name = "cpu", .labels = labels,
	                             .nlabels = 2, .time_ns = now - 1000000000 };

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
	struct cp_store_append as[] = {
		{ .profile = p, .name = "cpu", .labels = l1, .nlabels = 1, .time_ns = now },
		{ .profile = p, .name = "cpu", .labels = l2, .nlabels = 1, .time_ns = now },
	};
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
	struct cp_store_append as[] = {
		{ .profile = p, .name = "cpu", .time_ns = t0 + 5 * sec },
		{ .profile = p, .name = "cpu", .time_ns = t0 + 65 * sec },
		{ .profile = p, .name = "cpu", .time_ns = t0 + 70 * sec },
	};
	struct cp_selector *sl = sel("cpu");
	struct cp_store_query q = { sl, t0, t0 + 180 * sec, NULL, NULL, false };
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
	struct cp_store_query q = { sl, 0, cp_now_ns(), NULL, NULL, false };
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
	struct cp_store_append a = { .profile = p, .name = "cpu", .time_ns = cp_now_ns() };
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

/* a profile as folded text (the order of its lines sorted by the writer) */
static char *folded_text(const struct cp_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cp_folded_write(f, p, 0, false), 0);
	fclose(f);
	return buf;
}

/* The backend interface: the same batch appended to a local store and to a server's store (through
 * the remote backend) reads back the same through either backend: series, selections per group,
 * totals over time, figures. */
START_TEST(test_backends_give_the_same_answers)
{
	char ldir[64];
	struct cp_store *remote = cp_store_open_remote(url, NULL, NULL, 0), *local;
	struct cp_profile *p = folded("main;work;alpha 30\nmain;work;beta 20\nmain;idle 7\n");
	struct cp_profile *o = folded("main;other 4\nmain;work;alpha 1\n");
	struct cp_kv l1[] = { { "job", "api" }, { "env", "test" } }, l2[] = { { "job", "db" } };
	int64_t sec = 1000000000, t0 = (cp_now_ns() / (60 * sec) - 10) * 60 * sec;
	struct cp_store_append as[] = {
		{ .profile = p, .name = "cpu", .labels = l1, .nlabels = 2, .time_ns = t0 + 5 * sec },
		{ .profile = o, .name = "cpu", .labels = l2, .nlabels = 1, .time_ns = t0 + 65 * sec },
		{ .profile = p, .name = "cpu", .labels = l2, .nlabels = 1, .time_ns = t0 + 70 * sec },
	};
	struct cp_store *st[2];
	struct cp_store_series *ser[2];
	struct cp_store_result *res[2];
	struct cp_store_stats sts[2];
	int64_t *tot[2];
	struct cp_buckets bk[2];
	char *type[2];
	size_t nser[2], nres[2], i, k;
	struct cp_selector *sl = sel("cpu");
	struct cp_store_query q = { sl, t0, t0 + 180 * sec, "job", NULL, false };

	snprintf(ldir, sizeof(ldir), "/tmp/cprof-check-api-local.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(ldir));
	local = cp_store_open(ldir, CP_STORE_WRITE);
	ck_assert_ptr_nonnull(local);
	ck_assert_ptr_nonnull(remote);
	ck_assert(cp_store_downsamples(local));
	ck_assert(!cp_store_downsamples(remote)); /* a server downsamples its own */
	ck_assert_int_eq(cp_store_append(local, as, 3), 0);
	ck_assert_int_eq(cp_store_append(remote, as, 3), 0);
	st[0] = local;
	st[1] = remote;
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(cp_store_series(st[k], NULL, &ser[k], &nser[k]), 0);
		ck_assert_int_eq(cp_store_select(st[k], &q, &res[k], &nres[k]), 0);
		ck_assert_int_eq(cp_store_over_time(st[k], &q, 60 * sec, &tot[k], &bk[k], &type[k]), 0);
		ck_assert_int_eq(cp_store_stats(st[k], &sts[k]), 0);
	}
	ck_assert_uint_eq(nser[0], 2);
	ck_assert_uint_eq(nser[1], nser[0]);
	for (i = 0; i < nser[0]; i++) {
		ck_assert_str_eq(ser[1][i].type, ser[0][i].type);
		ck_assert_uint_eq(ser[1][i].nlabels, ser[0][i].nlabels);
		for (k = 0; k < ser[0][i].nlabels; k++) {
			ck_assert_str_eq(ser[1][i].names[k], ser[0][i].names[k]);
			ck_assert_str_eq(ser[1][i].values[k], ser[0][i].values[k]);
		}
	}
	ck_assert_uint_eq(nres[0], 2);
	ck_assert_uint_eq(nres[1], nres[0]);
	for (i = 0; i < nres[0]; i++) {
		char *a = folded_text(res[0][i].profile), *b = folded_text(res[1][i].profile);

		ck_assert_str_eq(res[1][i].group, res[0][i].group);
		ck_assert_str_eq(b, a);
		free(a);
		free(b);
	}
	ck_assert_int_eq(cp_profile_total(res[0][0].profile, 0) + cp_profile_total(res[0][1].profile, 0), 57 + 5 + 57);
	ck_assert_str_eq(type[1], type[0]);
	ck_assert_uint_eq(bk[1].n, bk[0].n);
	for (i = 0; i < bk[0].n; i++)
		ck_assert_int_eq(tot[1][i], tot[0][i]);
	ck_assert_int_eq(tot[0][0], 57);
	ck_assert_int_eq(tot[0][1], 5 + 57);
	ck_assert_int_eq(sts[1].series, sts[0].series);
	ck_assert_int_eq(sts[1].entries, sts[0].entries);
	ck_assert_int_eq(sts[1].samples, sts[0].samples);
	for (k = 0; k < 2; k++) {
		cp_store_series_free(ser[k], nser[k]);
		cp_store_results_free(res[k], nres[k]);
		free(tot[k]);
		free(type[k]);
	}
	/* what only a server's store has does nothing on a local one; what a server does itself is refused */
	{
		struct cp_pusher_stats ps = { .pending = 9 };

		ck_assert_int_eq(cp_store_flush(local, true), 0);
		ck_assert(!cp_store_pending(local, &ps));
		ck_assert_uint_eq(ps.pending, 9); /* (untouched) */
		ck_assert(cp_store_pending(remote, &ps));
		ck_assert_uint_eq(ps.pending, 0);
		ck_assert_ptr_null(cp_store_push_error(local));
		ck_assert_ptr_null(cp_store_location(local));
		ck_assert_str_eq(cp_store_location(remote), url);
	}
	ck_assert_int_eq(cp_store_retain(remote, 1), -EOPNOTSUPP);
	cp_selector_free(sl);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
	cp_profile_free(o);
	rm_rf(ldir);
}
END_TEST

/* A server that cannot take an append (it is stopping: 503) with a spool: the append is taken, and
 * says so with CP_STORE_SPOOLED (not 0, not the pusher's own code); a flush says what is left the same
 * way; the server's store has none of it. */
START_TEST(test_append_to_a_spool_says_spooled)
{
	char spool[80];
	struct cp_store *remote, *local;
	struct cp_profile *p = folded("a;b 3\n");
	struct cp_store_append a = { .profile = p, .name = "cpu", .time_ns = cp_now_ns() };
	struct cp_store_stats st;
	int r;

	snprintf(spool, sizeof(spool), "%s.spool", dir);
	remote = cp_store_open_remote(url, NULL, spool, 1 << 20);
	ck_assert_ptr_nonnull(remote);
	cp_shared_stop(shared);
	r = cp_store_append(remote, &a, 1);
	ck_assert_msg(r == CP_STORE_SPOOLED, "append: %d (%s)", r, r < 0 ? cp_errmsg(r) : "");
	ck_assert_int_gt(CP_STORE_SPOOLED, 0);
	ck_assert_int_eq(cp_store_flush(remote, true), CP_STORE_SPOOLED);
	ck_assert_ptr_nonnull(cp_store_push_error(remote));
	local = cp_store_open(dir, CP_STORE_READ);
	ck_assert_int_eq(cp_store_stats(local, &st), 0);
	ck_assert_int_eq(st.entries, 0);
	cp_store_close(local);
	cp_store_close(remote);
	cp_profile_free(p);
	rm_rf(spool);
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
	tcase_add_test(tc, test_backends_give_the_same_answers);
	tcase_add_test(tc, test_append_to_a_spool_says_spooled);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
