/* SPDX-License-Identifier: MIT */
/* lib/http/push.c (the spool: at least once, in order, bounded, across
 * restarts) and lib/http/client.c (URLs, escaping, errors, token files),
 * against a real HTTP server (lib/http/server.c) whose push handler answers
 * what each test asks for. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "http/client.h"
#include "http/push.h"
#include "http/server.h"
#include "testutil.h"
#include "util.h"

/* ---- a server that records the pushes it stores ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int answer = 200;   /* the status the push handler answers */
static int requests;       /* pushes the handler saw */
static char got[64][256];  /* "query|body" of each push stored (2xx) */
static int ngot;
static char auth[256];     /* the Authorization header of the last request */
static char tenant[256];   /* its X-Scope-OrgID */
static char types[64][128]; /* "Content-Type|Content-Encoding" of each push stored */

static int add_arg(void *ctx, const char *name, const char *value)
{
	char *q = ctx;
	size_t n = strlen(q);

	snprintf(q + n, 200 - n, "%s%s=%s", n ? "&" : "", name, value);
	return 0;
}

/* prefix: what is stored starts with it ("ingest:" for Pyroscope's path) */
static void take_push(struct cp_req *r, struct cp_resp *out, const char *prefix)
{
	char args[200] = "", q[220];
	const uint8_t *body;
	const char *a = cp_req_header(r, "Authorization"), *t = cp_req_header(r, "X-Scope-OrgID");
	const char *ct = cp_req_header(r, "Content-Type"), *ce = cp_req_header(r, "Content-Encoding");
	size_t len;
	int status;

	body = cp_req_body(r, &len);
	cp_req_args(r, add_arg, args);
	snprintf(q, sizeof(q), "%s%s", prefix, args);
	pthread_mutex_lock(&lock);
	requests++;
	status = answer;
	snprintf(auth, sizeof(auth), "%s", a ? a : "");
	snprintf(tenant, sizeof(tenant), "%s", t ? t : "");
	if (status / 100 == 2 && ngot < 64) {
		snprintf(types[ngot], sizeof(types[0]), "%s|%s", ct ? ct : "", ce ? ce : "");
		snprintf(got[ngot++], sizeof(got[0]), "%s|%.*s", q, (int)len, (const char *)body);
	}
	pthread_mutex_unlock(&lock);
	if (status / 100 == 2)
		cp_resp_text(out, status, "application/json", "{\"profiles\":1,\"samples\":1}\n");
	else
		cp_resp_error(out, status, "the test answers %d", status);
}

static void h_push(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)arg;
	take_push(r, out, "");
}

static void h_ingest(struct cp_req *r, struct cp_resp *out, void *arg)
{
	(void)arg;
	take_push(r, out, "ingest:");
}

static const struct cp_route routes[] = {
	{ "POST", "/api/v1/push", "push", h_push, false },
	{ "POST", "/ingest", "ingest", h_ingest, false },
};

static struct cp_server *srv;
static char url[64], dir[PATH_MAX], spool[PATH_MAX + 16];

static void set_answer(int status)
{
	pthread_mutex_lock(&lock);
	answer = status;
	pthread_mutex_unlock(&lock);
}

static int nrequests(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = requests;
	pthread_mutex_unlock(&lock);
	return n;
}

static void setup(void)
{
	struct cp_server_opts o = { 0 };
	const char *tmp = getenv("TMPDIR");

	o.listen = "127.0.0.1:0";
	o.routes = routes;
	o.nroutes = sizeof(routes) / sizeof(routes[0]);
	srv = cp_server_start(&o);
	ck_assert_msg(srv != NULL, "cannot start the test server: %s", cp_errmsg(errno));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", cp_server_port(srv));
	snprintf(dir, sizeof(dir), "%s/cprof-push-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	answer = 200;
	requests = ngot = 0;
}

static void teardown(void)
{
	cp_server_stop(srv);
	rm_rf(dir);
}

/* the number of *.push files in the spool */
static int spool_files(void)
{
	DIR *d = opendir(spool);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (strlen(e->d_name) > 5 && !strcmp(e->d_name + strlen(e->d_name) - 5, ".push"))
			n++;
	if (d)
		closedir(d);
	return n;
}

static int push(struct cp_pusher *p, int i)
{
	char q[64], body[64];

	snprintf(q, sizeof(q), "name=cpu&seq=%d", i);
	snprintf(body, sizeof(body), "body%d", i);
	return cp_pusher_push(p, q, body, strlen(body));
}

static void expect_got(int i, int seq)
{
	char want[256];

	snprintf(want, sizeof(want), "name=cpu&seq=%d|body%d", seq, seq);
	ck_assert_int_gt(ngot, i);
	ck_assert_str_eq(got[i], want);
}

/* ---- the pusher ---- */

START_TEST(test_push_direct)
{
	struct cp_pusher *p = cp_pusher_new(url, "s3cret", spool, 1 << 20);
	struct cp_pusher_stats st;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(push(p, 1), 0);
	ck_assert_int_eq(push(p, 2), 0);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.sent, 2);
	ck_assert_int_eq(st.spooled, 0);
	ck_assert_int_eq(st.pending, 0);
	ck_assert_int_eq(ngot, 2);
	expect_got(0, 1);
	expect_got(1, 2);
	ck_assert_str_eq(auth, "Bearer s3cret");
	ck_assert_int_eq(spool_files(), 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_spool_when_unreachable)
{
	struct cp_pusher *p;
	struct cp_pusher_stats st;

	cp_server_stop(srv); /* nothing listens there now */
	srv = NULL;
	p = cp_pusher_new(url, NULL, spool, 1 << 20);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	ck_assert_contains(cp_pusher_last_error(p), "cannot reach http://127.0.0.1:");
	ck_assert_contains(cp_pusher_last_error(p), "Connection refused");
	ck_assert_int_eq(push(p, 2), CP_PUSH_SPOOLED);
	ck_assert_int_eq(cp_pusher_flush(p), CP_PUSH_SPOOLED);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.spooled, 2);
	ck_assert_int_eq(st.pending, 2);
	ck_assert_int_eq(st.sent, 0);
	ck_assert_int_gt(st.pending_bytes, 2 * strlen("body1"));
	ck_assert_int_eq(spool_files(), 2);
	cp_pusher_free(p);
}
END_TEST

/* a push's own headers (OTLP's Content-Type and Content-Encoding) go with it,
 * through the spool too (a "cprof-push 2" entry), and a push without keeps
 * the default type */
START_TEST(test_spool_keeps_headers)
{
	static const char *const hdrs[] = { "Content-Type: application/x-protobuf", "Content-Encoding: identity", NULL };
	static const char *const bad[] = { "X-A: 1\r\nX-B: 2", NULL };
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	FILE *f;
	char line[64] = "";
	int v[2] = { 0, 0 };
	DIR *d;
	struct dirent *de;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_pusher_push_with(p, "name=cpu&seq=0", hdrs, "body0", 5), 0);
	ck_assert_str_eq(types[0], "application/x-protobuf|identity");
	set_answer(503);
	ck_assert_int_eq(cp_pusher_push_with(p, "name=cpu&seq=1", hdrs, "body1", 5), CP_PUSH_SPOOLED);
	ck_assert_int_eq(push(p, 2), CP_PUSH_SPOOLED);
	ck_assert_int_eq(spool_files(), 2);
	/* the entry with headers is a version 2 one, the other one stays version 1 */
	ck_assert_ptr_nonnull(d = opendir(spool));
	while ((de = readdir(d))) {
		char path[PATH_MAX + 320];

		if (!strstr(de->d_name, ".push"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		ck_assert_ptr_nonnull(f = fopen(path, "r"));
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
		fclose(f);
		ck_assert(!strncmp(line, "cprof-push 1 ", 13) || !strncmp(line, "cprof-push 2 ", 13));
		v[line[11] - '1']++;
	}
	closedir(d);
	ck_assert_int_eq(v[0], 1);
	ck_assert_int_eq(v[1], 1);
	set_answer(200);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	ck_assert_int_eq(ngot, 3);
	expect_got(1, 1);
	expect_got(2, 2);
	ck_assert_str_eq(types[1], "application/x-protobuf|identity");
	ck_assert_str_eq(types[2], "application/octet-stream|");
	ck_assert_int_eq(cp_pusher_push_with(p, "name=cpu", bad, "x", 1), -EINVAL);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_resend_in_order)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	struct cp_pusher_stats st;
	int before;

	ck_assert_ptr_nonnull(p);
	set_answer(503);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	ck_assert_contains(cp_pusher_last_error(p), "the test answers 503 (HTTP 503)");
	/* within the back-off the server is left alone: spooled behind */
	before = nrequests();
	ck_assert_int_eq(push(p, 2), CP_PUSH_SPOOLED);
	ck_assert_int_eq(push(p, 3), CP_PUSH_SPOOLED);
	ck_assert_int_eq(nrequests(), before);
	ck_assert_int_eq(spool_files(), 3);
	/* a flush tries now: still 503, everything stays */
	ck_assert_int_eq(cp_pusher_flush(p), CP_PUSH_SPOOLED);
	ck_assert_int_eq(nrequests(), before + 1);
	ck_assert_int_eq(spool_files(), 3);
	set_answer(200);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	ck_assert_int_eq(ngot, 3);
	expect_got(0, 1);
	expect_got(1, 2);
	expect_got(2, 3);
	ck_assert_int_eq(spool_files(), 0);
	/* and the next push goes straight through */
	ck_assert_int_eq(push(p, 4), 0);
	expect_got(3, 4);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.spooled, 3);
	ck_assert_int_eq(st.resent, 3);
	ck_assert_int_eq(st.sent, 4);
	ck_assert_int_eq(st.pending, 0);
	ck_assert_int_eq(st.pending_bytes, 0);
	cp_pusher_free(p);
}
END_TEST

/* a push to another path (Pyroscope's /ingest) keeps its path in the spool,
 * and the extra headers go with it when it is sent again */
START_TEST(test_spool_keeps_target)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	const char *h[] = { "X-Scope-OrgID: team-a", "Authorization: Basic dTpw" };

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_pusher_set_headers(p, h, 2), 0);
	set_answer(503);
	ck_assert_int_eq(cp_pusher_push(p, "/ingest?name=app&format=pprof", "b1", 2), CP_PUSH_SPOOLED);
	ck_assert_int_eq(cp_pusher_push(p, "name=cpu&seq=2", "body2", 5), CP_PUSH_SPOOLED);
	cp_pusher_free(p);
	/* another process takes the spool over */
	p = cp_pusher_new(url, NULL, spool, 1 << 20);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_pusher_set_headers(p, h, 2), 0);
	set_answer(200);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	ck_assert_int_eq(ngot, 2);
	ck_assert_str_eq(got[0], "ingest:name=app&format=pprof|b1");
	expect_got(1, 2);
	ck_assert_str_eq(tenant, "team-a");
	ck_assert_str_eq(auth, "Basic dTpw");
	ck_assert_int_eq(cp_pusher_set_headers(p, h, 5), -E2BIG);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_spool_goes_first)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);

	ck_assert_ptr_nonnull(p);
	set_answer(429);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	set_answer(200);
	usleep(1100 * 1000); /* past the first back-off (1 s) */
	ck_assert_int_eq(push(p, 2), 0);
	ck_assert_int_eq(ngot, 2);
	expect_got(0, 1); /* the spooled one first */
	expect_got(1, 2);
	ck_assert_int_eq(spool_files(), 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_retry_waits_for_backoff)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	int before;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_pusher_retry(p), 0); /* nothing spooled */
	set_answer(503);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	set_answer(200);
	before = nrequests();
	ck_assert_int_eq(cp_pusher_retry(p), CP_PUSH_SPOOLED); /* within the back-off: not sent */
	ck_assert_int_eq(nrequests(), before);
	ck_assert_int_eq(spool_files(), 1);
	usleep(1100 * 1000);
	ck_assert_int_eq(cp_pusher_retry(p), 0);
	ck_assert_int_eq(ngot, 1);
	expect_got(0, 1);
	ck_assert_int_eq(spool_files(), 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_permanent_errors)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	struct cp_pusher_stats st;
	int err;

	ck_assert_ptr_nonnull(p);
	set_answer(400);
	err = push(p, 1);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_str_eq(cp_errmsg(-err), "the test answers 400 (HTTP 400)");
	set_answer(401);
	ck_assert_int_eq(push(p, 2), -EACCES);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.spooled, 0);
	ck_assert_int_eq(st.pending, 0);
	ck_assert_int_eq(spool_files(), 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_spooled_refused)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	struct cp_pusher_stats st;

	ck_assert_ptr_nonnull(p);
	set_answer(500);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	ck_assert_int_eq(push(p, 2), CP_PUSH_SPOOLED);
	/* a refused token refuses everything: the spool is kept */
	set_answer(401);
	ck_assert_int_eq(cp_pusher_flush(p), -EACCES);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.pending, 2);
	ck_assert_int_eq(spool_files(), 2);
	/* a refused entry (400) is dropped so that the rest can go */
	set_answer(400);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.rejected, 2);
	ck_assert_int_eq(st.pending, 0);
	ck_assert_int_eq(spool_files(), 0);
	ck_assert_contains(cp_pusher_last_error(p), "refused a spooled push");
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_bound_drops_oldest)
{
	struct cp_pusher *p;
	struct cp_pusher_stats st;
	char sz[32];
	int err;

	/* one entry: "cprof-push 1 5\n" + "name=cpu&seq=N\n" + "bodyN" = 35 bytes */
	p = cp_pusher_new(url, NULL, spool, 3 * 35);
	ck_assert_ptr_nonnull(p);
	set_answer(503);
	for (int i = 1; i <= 5; i++)
		ck_assert_int_eq(push(p, i), CP_PUSH_SPOOLED);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.pending, 3);
	ck_assert_int_eq(st.pending_bytes, 3 * 35);
	ck_assert_int_eq(st.dropped, 2);
	ck_assert_int_eq(st.dropped_bytes, 2 * 35);
	ck_assert_int_eq(spool_files(), 3);
	set_answer(200);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	ck_assert_int_eq(ngot, 3); /* the newest three, in order */
	expect_got(0, 3);
	expect_got(1, 4);
	expect_got(2, 5);
	cp_pusher_free(p);

	/* a push larger than the whole spool is dropped, and said */
	p = cp_pusher_new(url, NULL, spool, 20);
	ck_assert_ptr_nonnull(p);
	set_answer(503);
	err = push(p, 1);
	ck_assert_int_eq(err, -EFBIG);
	ck_assert_contains(cp_errmsg(-err), cp_size_str(20, sz, sizeof(sz)));
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.dropped, 1);
	ck_assert_int_eq(st.pending, 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_spool_survives_restart)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, spool, 1 << 20);
	struct cp_pusher_stats st;
	char path[PATH_MAX + 64];
	FILE *f;

	ck_assert_ptr_nonnull(p);
	set_answer(502);
	ck_assert_int_eq(push(p, 1), CP_PUSH_SPOOLED);
	ck_assert_int_eq(push(p, 2), CP_PUSH_SPOOLED);
	cp_pusher_free(p);
	/* what a crash can leave: a half-written temporary file, and a file
	 * that is not a spooled push (sorted first) */
	snprintf(path, sizeof(path), "%s/.tmp-AbCdEf", spool);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("cprof-push 1 100\nname=half", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/00000000000000000001.push", spool);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("cprof-push 1 50\nname=cut\nshort", f);
	fclose(f);

	set_answer(200);
	p = cp_pusher_new(url, NULL, spool, 1 << 20);
	ck_assert_ptr_nonnull(p);
	snprintf(path, sizeof(path), "%s/.tmp-AbCdEf", spool);
	ck_assert_int_ne(access(path, F_OK), 0); /* cleaned up */
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.pending, 3);
	ck_assert_int_eq(cp_pusher_flush(p), 0);
	cp_pusher_stats(p, &st);
	ck_assert_int_eq(st.corrupt, 1);
	ck_assert_int_eq(st.resent, 2);
	ck_assert_int_eq(ngot, 2);
	expect_got(0, 1);
	expect_got(1, 2);
	ck_assert_int_eq(spool_files(), 0);
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_spool_locked)
{
	struct cp_pusher *a = cp_pusher_new(url, NULL, spool, 1 << 20), *b;

	ck_assert_ptr_nonnull(a);
	b = cp_pusher_new(url, NULL, spool, 1 << 20);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_contains(cp_errmsg(EBUSY), "in use by another cprof");
	cp_pusher_free(a);
	b = cp_pusher_new(url, NULL, spool, 1 << 20); /* free again */
	ck_assert_ptr_nonnull(b);
	cp_pusher_free(b);
}
END_TEST

START_TEST(test_no_spool)
{
	struct cp_pusher *p = cp_pusher_new(url, NULL, NULL, 0);
	int err;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(push(p, 1), 0);
	set_answer(503);
	err = push(p, 2);
	ck_assert_int_eq(err, -EAGAIN);
	ck_assert_contains(cp_errmsg(-err), "503");
	cp_server_stop(srv);
	srv = NULL;
	err = push(p, 3);
	ck_assert_int_eq(err, -ECONNREFUSED);
	ck_assert_contains(cp_errmsg(-err), "cannot reach");
	cp_pusher_free(p);
}
END_TEST

START_TEST(test_bad_url)
{
	ck_assert_ptr_null(cp_pusher_new("ftp://127.0.0.1:1", NULL, spool, 100));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_ne(access(spool, F_OK), 0); /* nothing created */
}
END_TEST

/* ---- the client ---- */

START_TEST(test_check_url)
{
	ck_assert_int_eq(cp_http_check_url("http://127.0.0.1:7070"), 0);
	ck_assert_int_eq(cp_http_check_url("https://profiles.example.com/cprof/"), 0);
	ck_assert_int_eq(cp_http_check_url("HTTP://[::1]:7070"), 0);
	ck_assert_int_eq(cp_http_check_url("ftp://host"), -EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "only http and https");
	ck_assert_int_eq(cp_http_check_url("127.0.0.1:7070"), -EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "no http:// or https://");
	ck_assert_int_eq(cp_http_check_url("http://"), -EINVAL);
	ck_assert_int_eq(cp_http_check_url("http://host/a?b=c"), -EINVAL);
	ck_assert_int_eq(cp_http_check_url("http://ho st"), -EINVAL);
	ck_assert_int_eq(cp_http_check_url("http://host:99999"), -EINVAL);
}
END_TEST

START_TEST(test_escape)
{
	char *e = cp_http_escape("a b&c=d/\xc3\xa9~_.-Z9");

	ck_assert_str_eq(e, "a%20b%26c%3Dd%2F%C3%A9~_.-Z9");
	free(e);
	e = cp_http_escape("");
	ck_assert_str_eq(e, "");
	free(e);
}
END_TEST

START_TEST(test_error_message)
{
	struct cp_http_response r = { 0 };
	char body[] = "{\"error\": \"no stored series match the selector\"}";
	char html[] = "<html>\nBad Gateway\n</html>";

	r.status = 404;
	r.body = body;
	r.len = strlen(body);
	ck_assert_int_eq(cp_http_error_message(&r), -ENOENT);
	ck_assert_str_eq(cp_errmsg(ENOENT), "no stored series match the selector (HTTP 404)");
	r.status = 502;
	r.body = html;
	r.len = strlen(html);
	ck_assert_int_eq(cp_http_error_message(&r), -EIO);
	ck_assert_str_eq(cp_errmsg(EIO), "<html> (HTTP 502)");
	r.status = 401;
	r.body = NULL;
	r.len = 0;
	ck_assert_int_eq(cp_http_error_message(&r), -EACCES);
	ck_assert_contains(cp_errmsg(EACCES), "token");
	r.status = 204;
	ck_assert_int_eq(cp_http_error_message(&r), 0);
}
END_TEST

START_TEST(test_request)
{
	struct cp_http_client *c = cp_http_client_new(url, NULL, 5000);
	struct cp_http_response r;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(cp_http_request(c, "POST", "/api/v1/push?name=x", NULL, "abc", 3, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"profiles\":1,\"samples\":1}\n");
	ck_assert_int_eq(r.len, strlen(r.body));
	ck_assert_ptr_nonnull(r.content_type);
	ck_assert_contains(r.content_type, "application/json");
	cp_http_response_release(&r);
	ck_assert_int_eq(cp_http_request(c, "GET", "/nowhere", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 404);
	cp_http_response_release(&r);
	ck_assert_int_eq(ngot, 1);
	ck_assert_str_eq(got[0], "name=x|abc");
	cp_http_client_free(c);
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_token_file)
{
	char path[PATH_MAX + 16], *tok = NULL;

	snprintf(path, sizeof(path), "%s/token", dir);
	write_file(path, "  s3cret-token\n\n");
	ck_assert_int_eq(cp_read_token_file(path, &tok), 0);
	ck_assert_str_eq(tok, "s3cret-token");
	free(tok);
	write_file(path, " \n\t\n");
	ck_assert_int_eq(cp_read_token_file(path, &tok), -EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "is empty");
	write_file(path, "one\ntwo\n");
	ck_assert_int_eq(cp_read_token_file(path, &tok), -EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "more than one line");
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_eq(cp_read_token_file(path, &tok), -ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), "cannot read the token file");
	ck_assert_contains(cp_errmsg(ENOENT), "No such file or directory");
	ck_assert_ptr_null(tok);
}
END_TEST

static Suite *push_suite(void)
{
	Suite *s = suite_create("push");
	TCase *p = tcase_create("pusher"), *c = tcase_create("client");

	tcase_add_checked_fixture(p, setup, teardown);
	tcase_add_test(p, test_push_direct);
	tcase_add_test(p, test_spool_when_unreachable);
	tcase_add_test(p, test_resend_in_order);
	tcase_add_test(p, test_spool_goes_first);
	tcase_add_test(p, test_spool_keeps_target);
	tcase_add_test(p, test_spool_keeps_headers);
	tcase_add_test(p, test_retry_waits_for_backoff);
	tcase_add_test(p, test_permanent_errors);
	tcase_add_test(p, test_spooled_refused);
	tcase_add_test(p, test_bound_drops_oldest);
	tcase_add_test(p, test_spool_survives_restart);
	tcase_add_test(p, test_spool_locked);
	tcase_add_test(p, test_no_spool);
	tcase_add_test(p, test_bad_url);
	suite_add_tcase(s, p);
	tcase_add_checked_fixture(c, setup, teardown);
	tcase_add_test(c, test_check_url);
	tcase_add_test(c, test_escape);
	tcase_add_test(c, test_error_message);
	tcase_add_test(c, test_request);
	tcase_add_test(c, test_token_file);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(push_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
