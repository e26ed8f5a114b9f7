/* SPDX-License-Identifier: MIT */
#include "remote.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../http/client.h"
#include "../base64.h"
#include "../pprof.h"
#include "../push/protocol.h"
#include "../util.h"
#include "backend.h"
#include "backends.h"

struct cp_remote {
	struct cp_store base; /* ops: remote_ops */
	struct cp_http_client *c;
	char *url, *token, *spool_dir;
	size_t spool_max;
	struct cp_pusher *pusher; /* on first use */
	const struct cp_push_protocol *proto; /* how appends are pushed: cprof's own, unless set */
	struct cp_push_opts popts;            /* its settings (strings owned) */
	char *headers[3]; /* the push's and the ping's extra headers, NULL-terminated */
	size_t nheaders;
};

static const struct cp_store_ops remote_ops;
static void remote_free(struct cp_remote *r);

struct cp_store *cp_store_open_remote(const char *url, const char *token, const char *spool_dir, size_t spool_max)
{
	struct cp_remote *r = calloc(1, sizeof(*r));
	int err = 0;

	if (!r || !(r->url = strdup(url)) || (token && !(r->token = strdup(token))) ||
	    (spool_dir && !(r->spool_dir = strdup(spool_dir)))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	r->base.ops = &remote_ops;
	r->proto = cp_push_protocol_find(NULL);
	r->spool_max = spool_max;
	if (!(r->c = cp_http_client_new(url, token, CP_REMOTE_TIMEOUT_MS)))
		err = -errno;
out:
	if (err) {
		remote_free(r);
		errno = -err;
		return NULL;
	}
	return &r->base;
}

static void remote_free(struct cp_remote *r)
{
	if (!r)
		return;
	cp_http_client_free(r->c);
	cp_pusher_free(r->pusher);
	free(r->url);
	free(r->token);
	free(r->spool_dir);
	free((char *)r->popts.service_label);
	free((char *)r->popts.spy_name);
	for (size_t i = 0; i < r->nheaders; i++)
		free(r->headers[i]);
	free(r);
}

static int pusher(struct cp_remote *r)
{
	if (r->pusher)
		return 0;
	r->pusher = cp_pusher_new(r->url, r->token, r->spool_dir, r->spool_max);
	if (!r->pusher)
		return -errno;
	return cp_pusher_set_headers(r->pusher, (const char *const *)r->headers, r->nheaders);
}

/* ---- requests ---- */

/* a time as the server's times take it: 19 digits of nanoseconds when it
 * has them, else RFC 3339 with nanoseconds */
static const char *fmt_time(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns / 1000000000LL, frac = ns % 1000000000LL;
	time_t t;
	struct tm tm;
	char day[48];

	if (ns >= 1000000000000000000LL) {
		snprintf(buf, len, "%" PRId64, ns);
		return buf;
	}
	if (frac < 0) {
		frac += 1000000000LL;
		s--;
	}
	t = (time_t)s;
	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09" PRId64 "Z", day, frac);
	return buf;
}

static int selector_arg(char **q, const char *name, const struct cp_selector *sel)
{
	if (sel && !sel->src)
		return cp_error(EINVAL, "a selector without its text cannot be sent to a server");
	return cp_http_query_add(q, name, sel ? sel->src : "");
}

static int range_args(char **q, const struct cp_store_query *sq)
{
	char a[64], b[64];
	int err;

	if ((err = cp_http_query_add(q, "from", fmt_time(sq->from, a, sizeof(a)))) ||
	    (err = cp_http_query_add(q, "to", fmt_time(sq->to, b, sizeof(b)))))
		return err;
	return 0;
}

/* GET path?q: the answer's body when it is 2xx, else the server's error */
static int get(struct cp_remote *r, const char *path, const char *q, struct cp_http_response *resp)
{
	char *pq = NULL;
	int err;

	if (asprintf(&pq, "%s%s%s", path, q && *q ? "?" : "", q ? q : "") < 0)
		return cp_error(ENOMEM, "out of memory");
	err = cp_http_request(r->c, "GET", pq, NULL, NULL, 0, resp);
	free(pq);
	if (err)
		return err;
	if ((err = cp_http_error_message(resp))) {
		cp_http_response_release(resp);
		return err;
	}
	return 0;
}

static int get_json(struct cp_remote *r, const char *path, const char *q, json_t **out)
{
	struct cp_http_response resp;
	json_error_t je;
	int err = get(r, path, q, &resp);

	if (err)
		return err;
	*out = json_loadb(resp.body, resp.len, 0, &je);
	cp_http_response_release(&resp);
	if (!*out)
		return cp_error(EBADMSG, "the answer of %s%s is not JSON (%s): is that a cprof server?", r->url, path,
				je.text);
	return 0;
}

static int bad_answer(struct cp_remote *r, const char *path, const char *what)
{
	return cp_error(EBADMSG, "unexpected answer from %s%s: %s", r->url, path, what);
}

/* ---- reading ---- */

static int label_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int one_series(struct cp_remote *r, json_t *js, struct cp_store_series *x)
{
	json_t *type = json_object_get(js, "type"), *labels = json_object_get(js, "labels"), *v;
	const char *k;
	size_t i = 0, n;
	char **pairs;

	if (!json_is_string(type) || (labels && !json_is_object(labels)))
		return bad_answer(r, "/api/v1/series", "a series without a type or with bad labels");
	n = labels ? json_object_size(labels) : 0;
	if (!(x->type = strdup(json_string_value(type))) || !(x->names = calloc(n + 1, sizeof(char *))) ||
	    !(x->values = calloc(n + 1, sizeof(char *))))
		return cp_error(ENOMEM, "out of memory");
	/* sorted by name, as the local store gives them: sort (name, value) pairs */
	if (!(pairs = calloc(2 * n + 2, sizeof(char *))))
		return cp_error(ENOMEM, "out of memory");
	if (labels) {
		json_object_foreach(labels, k, v) {
			if (!json_is_string(v)) {
				free(pairs);
				return bad_answer(r, "/api/v1/series", "a series without a type or with bad labels");
			}
			pairs[2 * i] = (char *)k;
			pairs[2 * i + 1] = (char *)json_string_value(v);
			i++;
		}
	}
	cp_qsort(pairs, n, 2 * sizeof(char *), label_cmp);
	for (i = 0; i < n; i++) {
		x->names[i] = strdup(pairs[2 * i]);
		x->values[i] = strdup(pairs[2 * i + 1]);
		x->nlabels = i + 1;
		if (!x->names[i] || !x->values[i]) {
			free(pairs);
			return cp_error(ENOMEM, "out of memory");
		}
	}
	free(pairs);
	return 0;
}

/* (a range bounded on one side or both is sent; the server's default is all time) */
static int remote_series(struct cp_remote *r, const struct cp_selector *sel, int64_t from, int64_t to,
			 struct cp_store_series **out, size_t *n)
{
	struct cp_store_series *ser = NULL;
	json_t *j = NULL;
	char *q = NULL, a[64], b[64];
	size_t i = 0, cnt = 0;
	int err;

	if ((err = selector_arg(&q, "query", sel)) ||
	    (from != INT64_MIN && (err = cp_http_query_add(&q, "from", fmt_time(from, a, sizeof(a))))) ||
	    (to != INT64_MAX && (err = cp_http_query_add(&q, "to", fmt_time(to, b, sizeof(b))))) ||
	    (err = get_json(r, "/api/v1/series", q, &j)))
		goto out;
	if (!json_is_array(j)) {
		err = bad_answer(r, "/api/v1/series", "not a JSON array");
		goto out;
	}
	cnt = json_array_size(j);
	if (!(ser = calloc(cnt + 1, sizeof(*ser)))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		ser[i].id = (int64_t)i + 1;
		if ((err = one_series(r, json_array_get(j, i), &ser[i]))) {
			i++;
			goto out;
		}
	}
	*out = ser;
	*n = cnt;
	ser = NULL;
out:
	cp_store_series_free(ser, i);
	json_decref(j);
	free(q);
	return err;
}

static int decode_into(struct cp_remote *r, const void *data, size_t len, struct cp_profile **p)
{
	*p = cp_pprof_decode(data, len);
	if (!*p)
		return cp_error_ctx(errno, "the profile from %s", r->url);
	return 0;
}

static int select_groups(struct cp_remote *r, const char *q, struct cp_store_result **out, size_t *n)
{
	static const char path[] = "/api/v1/profile";
	struct cp_store_result *res = NULL;
	json_t *j = NULL, *groups;
	size_t cnt = 0, i;
	int err;

	if ((err = get_json(r, path, q, &j)))
		return err;
	groups = json_object_get(j, "groups");
	if (!json_is_array(groups)) {
		err = bad_answer(r, path, "no \"groups\" array");
		goto out;
	}
	cnt = json_array_size(groups);
	if (!(res = calloc(cnt + 1, sizeof(*res)))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		json_t *g = json_array_get(groups, i), *name = json_object_get(g, "group"), *b64 = json_object_get(g, "pprof");
		gnutls_datum_t in, dec = { NULL, 0 };
		int rc;

		if (!json_is_string(name) || !json_is_string(b64)) {
			err = bad_answer(r, path, "a group without \"group\" or \"pprof\"");
			goto out;
		}
		if (!(res[i].group = strdup(json_string_value(name)))) {
			err = cp_error(ENOMEM, "out of memory");
			goto out;
		}
		in.data = (unsigned char *)json_string_value(b64);
		in.size = (unsigned int)json_string_length(b64);
		if ((rc = gnutls_base64_decode2(&in, &dec)) < 0) {
			err = cp_error(EBADMSG, "unexpected answer from %s%s: the profile of group '%s' is not base64 (%s)",
				       r->url, path, res[i].group, gnutls_strerror(rc));
			goto out;
		}
		err = decode_into(r, dec.data, dec.size, &res[i].profile);
		gnutls_free(dec.data);
		if (err)
			goto out;
	}
	*out = res;
	*n = cnt;
	res = NULL;
out:
	cp_store_results_free(res, cnt);
	json_decref(j);
	return err;
}

static int remote_select(struct cp_remote *r, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	struct cp_http_response resp = { 0 };
	struct cp_store_result *res = NULL;
	char *args = NULL;
	int err;

	if ((err = selector_arg(&args, "query", q->sel)) || (err = range_args(&args, q)) ||
	    (q->process_labels && (err = cp_http_query_add(&args, "process_labels", "1"))))
		goto out;
	if (q->group_by) {
		if ((err = cp_http_query_add(&args, "format", "groups")) || (err = cp_http_query_add(&args, "group_by", q->group_by)))
			goto out;
		err = select_groups(r, args, out, n);
		goto out;
	}
	if ((err = cp_http_query_add(&args, "format", "pprof")) || (err = get(r, "/api/v1/profile", args, &resp)))
		goto out;
	if (!(res = calloc(1, sizeof(*res))) || !(res->group = strdup(""))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	if ((err = decode_into(r, resp.body, resp.len, &res->profile)))
		goto out;
	*out = res;
	*n = 1;
	res = NULL;
out:
	cp_store_results_free(res, 1);
	cp_http_response_release(&resp);
	free(args);
	return err;
}

/* a time in an answer: nanoseconds as a number, or what cp_parse_time takes */
static int json_time(json_t *v, int64_t *ns)
{
	if (json_is_integer(v)) {
		*ns = (int64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		*ns = (int64_t)json_real_value(v);
		return 0;
	}
	if (json_is_string(v))
		return cp_parse_time(json_string_value(v), cp_now_ns(), ns);
	return cp_error(EINVAL, "a time that is neither a number nor text");
}

static int remote_over_time(struct cp_remote *r, const struct cp_store_query *q, int64_t step, int64_t **totals,
			struct cp_buckets *b, char **type)
{
	static const char path[] = "/api/v1/range";
	struct cp_buckets bk;
	int64_t *tot = NULL;
	json_t *j = NULL, *points, *jt, *res, *sv;
	int64_t rstep;
	char *args = NULL, stepbuf[32];
	size_t i;
	int err;

	if ((err = cp_buckets_align(q->from, q->to, step, &bk)))
		return err;
	if (step % 1000000)
		return cp_error(EINVAL, "a server takes steps of whole milliseconds");
	snprintf(stepbuf, sizeof(stepbuf), "%" PRId64 "ms", step / 1000000);
	if ((err = selector_arg(&args, "query", q->sel)) || (err = range_args(&args, q)) ||
	    (err = cp_http_query_add(&args, "step", stepbuf)) || (err = get_json(r, path, args, &j)))
		goto out;
	jt = json_object_get(j, "type");
	points = json_object_get(j, "points");
	if (!json_is_string(jt) || !json_is_array(points)) {
		err = bad_answer(r, path, "no \"type\" or \"points\"");
		goto out;
	}
	/* a server whose store has the range downsampled steps no finer than
	 * that, and says so: its grid */
	if (json_is_string(res = json_object_get(j, "resolution")) &&
	    !cp_parse_duration(json_string_value(res), &rstep) && rstep > 0) {
		if (q->resolution)
			*q->resolution = rstep;
		if (json_is_integer(sv = json_object_get(j, "step")) && json_integer_value(sv) > step &&
		    (err = cp_buckets_align(q->from, q->to, (int64_t)json_integer_value(sv), &bk)))
			goto out;
	}
	if (!(tot = calloc(bk.n, sizeof(*tot)))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	/* the server's buckets are the same grid: each point is a bucket's start */
	for (i = 0; i < json_array_size(points); i++) {
		json_t *pt = json_array_get(points, i), *v = json_object_get(pt, "value");
		int64_t t;
		ssize_t k;

		if (json_time(json_object_get(pt, "time"), &t) || !json_is_number(v)) {
			err = bad_answer(r, path, "a point without a \"time\" or a \"value\"");
			goto out;
		}
		if ((k = cp_buckets_index(&bk, t)) < 0)
			continue;
		tot[k] += json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)json_real_value(v);
	}
	if (!(*type = strdup(json_string_value(jt)))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	*totals = tot;
	*b = bk;
	tot = NULL;
out:
	free(tot);
	json_decref(j);
	free(args);
	return err;
}

static int remote_stats(struct cp_remote *r, struct cp_store_stats *st)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "series", offsetof(struct cp_store_stats, series) },
		{ "stacks", offsetof(struct cp_store_stats, stacks) },
		{ "locations", offsetof(struct cp_store_stats, locations) },
		{ "functions", offsetof(struct cp_store_stats, functions) },
		{ "blocks", offsetof(struct cp_store_stats, blocks) },
		{ "entries", offsetof(struct cp_store_stats, entries) },
		{ "samples", offsetof(struct cp_store_stats, samples) },
		{ "bytes", offsetof(struct cp_store_stats, bytes) },
	};
	json_t *j = NULL;
	int err;

	memset(st, 0, sizeof(*st));
	if ((err = get_json(r, "/api/v1/stats", NULL, &j)))
		return err;
	if (!json_is_object(j)) {
		json_decref(j);
		return bad_answer(r, "/api/v1/stats", "not a JSON object");
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *v = json_object_get(j, fields[i].name);

		if (json_is_integer(v))
			*(int64_t *)((char *)st + fields[i].off) = (int64_t)json_integer_value(v);
	}
	json_decref(j);
	return 0;
}

static int remote_ping(struct cp_remote *r)
{
	struct cp_http_response resp;
	int err;

	if (!r->proto->ping_path)
		return 0; /* the protocol has none: the first push will tell */
	cp_http_client_set_timeout(r->c, CP_PUSH_TIMEOUT_MS);
	err = cp_http_request(r->c, "GET", r->proto->ping_path, (const char *const *)r->headers, NULL, 0, &resp);
	cp_http_client_set_timeout(r->c, CP_REMOTE_TIMEOUT_MS);
	if (err)
		return 1; /* no answer */
	err = cp_http_error_message(&resp);
	if (err && cp_http_status_transient(resp.status)) {
		cp_error_ctx(-err, "%s", r->url);
		err = 1;
	}
	cp_http_response_release(&resp);
	return err;
}

/* ---- writing ---- */

static int push_target(const struct cp_remote *r, const struct cp_store_append *a, char **q)
{
	return r->proto->target(&r->popts, a, q);
}

static bool in_part(const struct cp_profile *src, uint32_t sample, void *arg)
{
	(void)src;
	return ((const bool *)arg)[sample];
}

/* p as the body of append a: the protocol's encoding, else gzipped pprof */
static int encode_body(const struct cp_remote *r, const struct cp_store_append *a, const struct cp_profile *p,
		       uint8_t **body, size_t *len)
{
	return r->proto->encode ? r->proto->encode(&r->popts, a, p, body, len) : cp_pprof_encode(p, 1, body, len);
}

/* a's profile as the protocol's body, only its samples a->sel when given */
static int encode_part(const struct cp_remote *r, const struct cp_store_append *a, uint8_t **body, size_t *len)
{
	struct cp_merge_opts o = { 0 };
	struct cp_profile *part;
	bool *in;
	int err;

	if (!a->sel)
		return encode_body(r, a, a->profile, body, len);
	if (!(in = calloc(a->profile->nsamples + 1, sizeof(*in))))
		return cp_error(ENOMEM, "out of memory encoding a profile");
	for (size_t i = 0; i < a->nsel; i++)
		if (a->sel[i] < a->profile->nsamples)
			in[a->sel[i]] = true;
	o.keep = in_part;
	o.keep_arg = in;
	part = cp_profile_copy(a->profile, &o);
	err = part ? encode_body(r, a, part, body, len) : cp_error(errno, "encoding a profile");
	cp_profile_free(part);
	free(in);
	return err;
}

static int remote_append(struct cp_remote *r, const struct cp_store_append *a, size_t n)
{
	bool spooled = false;
	int err = 0;
	size_t i;

	/* check every item first: a bad label stores nothing */
	for (i = 0; i < n; i++) {
		char *q = NULL;

		err = push_target(r, &a[i], &q);
		free(q);
		if (err)
			return err;
	}
	if ((err = pusher(r)))
		return err;
	for (i = 0; i < n; i++) {
		uint8_t *body = NULL;
		size_t len = 0;
		char *q = NULL;

		if ((err = push_target(r, &a[i], &q)) || (err = encode_part(r, &a[i], &body, &len))) {
			free(q);
			break;
		}
		err = cp_pusher_push_with(r->pusher, q, r->proto->headers, body, len);
		free(body);
		free(q);
		if (err < 0)
			break;
		spooled |= err == CP_PUSH_SPOOLED;
		err = 0;
	}
	if (err < 0 && i > 0) {
		char m[CP_ERRMSG_MAX];

		snprintf(m, sizeof(m), "%s", cp_errmsg(err));
		cp_error(-err, "%s (the %zu profile%s before it went through)", m, i, i == 1 ? "" : "s");
	}
	return err < 0 ? err : spooled ? CP_STORE_SPOOLED : 0;
}

static int remote_flush(struct cp_remote *r, bool now)
{
	int err = pusher(r);

	if (err)
		return err;
	err = now ? cp_pusher_flush(r->pusher) : cp_pusher_retry(r->pusher);
	return err == CP_PUSH_SPOOLED ? CP_STORE_SPOOLED : err;
}

/* ---- what a local store does itself and a server does for its own ---- */

static int remote_retain(struct cp_remote *r, int64_t keep_ns)
{
	(void)r;
	(void)keep_ns;
	return cp_error(EOPNOTSUPP, "retention runs in the server (cprof serve --retention)");
}

static int64_t remote_limit(struct cp_remote *r, uint64_t max_bytes)
{
	(void)r;
	(void)max_bytes;
	return cp_error(EOPNOTSUPP, "the server applies its own size limit (cprof serve --max-store-size)");
}

static int remote_size(struct cp_remote *r, uint64_t *bytes)
{
	struct cp_store_stats st;
	int err;

	if ((err = remote_stats(r, &st)))
		return err;
	*bytes = st.bytes > 0 ? (uint64_t)st.bytes : 0;
	return 0;
}

/* ---- the backend ---- */

static struct cp_remote *R(struct cp_store *s)
{
	return (struct cp_remote *)s;
}

static int op_append(struct cp_store *s, const struct cp_store_append *a, size_t n)
{
	return remote_append(R(s), a, n);
}

static int op_retain(struct cp_store *s, int64_t keep_ns)
{
	return remote_retain(R(s), keep_ns);
}

static int64_t op_limit(struct cp_store *s, uint64_t max_bytes)
{
	return remote_limit(R(s), max_bytes);
}

static int op_size(struct cp_store *s, uint64_t *bytes)
{
	return remote_size(R(s), bytes);
}

static int op_series(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
		     struct cp_store_series **out, size_t *n)
{
	return remote_series(R(s), sel, from, to, out, n);
}

static int op_select(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	return remote_select(R(s), q, out, n);
}

static int op_over_time(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
			struct cp_buckets *b, char **type)
{
	return remote_over_time(R(s), q, step, totals, b, type);
}

static int op_stats(struct cp_store *s, struct cp_store_stats *st)
{
	return remote_stats(R(s), st);
}

static void op_close(struct cp_store *s)
{
	remote_free(R(s));
}

struct cp_store *cp_store_open_remote_uri(const char *uri, const struct cp_store_open_opts *o)
{
	struct cp_store *s = cp_store_open_remote(uri, o->token, o->spool_dir, o->spool_max);
	int err;

	if (s && o->push && (err = cp_store_remote_set_push(s, o->push))) {
		cp_store_close(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/* ---- the calls only a server's store has ---- */

/* s as a server's store, or NULL when it is another backend's */
static struct cp_remote *as_remote(const struct cp_store *s)
{
	return s && s->ops == &remote_ops ? (struct cp_remote *)s : NULL;
}

int cp_store_remote_set_push(struct cp_store *s, const struct cp_remote_push *o)
{
	struct cp_remote *r = as_remote(s);
	char *h = NULL;

	if (!r)
		return 0;
	if (!(r->proto = cp_push_protocol_find(o->api)))
		return cp_error(EINVAL, "unknown push API '%.32s'", o->api);
	free((char *)r->popts.service_label);
	free((char *)r->popts.spy_name);
	r->popts.service_label = o->service_label ? strdup(o->service_label) : NULL;
	r->popts.spy_name = o->spy_name ? strdup(o->spy_name) : NULL;
	if ((o->service_label && !r->popts.service_label) || (o->spy_name && !r->popts.spy_name))
		return cp_error(ENOMEM, "out of memory");
	for (; r->nheaders; r->nheaders--)
		free(r->headers[r->nheaders - 1]), r->headers[r->nheaders - 1] = NULL;
	if (o->tenant) {
		if (strpbrk(o->tenant, "\r\n"))
			return cp_error(EINVAL, "the tenant has a line break");
		if (asprintf(&h, "X-Scope-OrgID: %s", o->tenant) < 0)
			return cp_error(ENOMEM, "out of memory");
		r->headers[r->nheaders++] = h;
	}
	if (o->basic_user) {
		char *pair = NULL, *b64 = NULL;
		size_t len = 0;
		int err;

		if (strpbrk(o->basic_user, "\r\n:"))
			return cp_error(EINVAL, "the basic auth user has a ':' or a line break");
		if (asprintf(&pair, "%s:%s", o->basic_user, r->token ? r->token : "") < 0)
			return cp_error(ENOMEM, "out of memory");
		err = cp_base64_encode((const uint8_t *)pair, strlen(pair), &b64, &len);
		free(pair);
		if (err)
			return err;
		h = NULL;
		if (asprintf(&h, "Authorization: Basic %s", b64) < 0)
			h = NULL;
		free(b64);
		if (!h)
			return cp_error(ENOMEM, "out of memory");
		r->headers[r->nheaders++] = h;
		/* the token is the password now, not a bearer token */
		free(r->token);
		r->token = NULL;
		cp_http_client_free(r->c);
		if (!(r->c = cp_http_client_new(r->url, NULL, CP_REMOTE_TIMEOUT_MS)))
			return -errno;
	}
	return 0;
}

int cp_store_remote_ping(struct cp_store *s)
{
	struct cp_remote *r = as_remote(s);

	return r ? remote_ping(r) : 0;
}

static int op_flush(struct cp_store *s, bool now)
{
	return remote_flush(as_remote(s), now);
}

static void op_pending(struct cp_store *s, struct cp_pusher_stats *st)
{
	struct cp_remote *r = as_remote(s);

	if (r->pusher)
		cp_pusher_stats(r->pusher, st);
	else
		memset(st, 0, sizeof(*st));
}

static const char *op_push_error(struct cp_store *s)
{
	struct cp_remote *r = as_remote(s);

	return r->pusher ? cp_pusher_last_error(r->pusher) : NULL;
}

static const char *op_location(const struct cp_store *s)
{
	return cp_http_client_url(as_remote(s)->c);
}

static const struct cp_store_ops remote_ops = {
	.name = "remote",
	.append = op_append,
	.retain = op_retain,
	.limit = op_limit,
	.size = op_size,
	.series = op_series,
	.select = op_select,
	.over_time = op_over_time,
	.stats = op_stats,
	.flush = op_flush,
	.pending = op_pending,
	.push_error = op_push_error,
	.location = op_location,
	.close = op_close,
};
