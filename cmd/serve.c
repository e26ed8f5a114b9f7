/* SPDX-License-Identifier: MIT */
/* cprof serve: the central server.  Push ingest (native, Pyroscope, Parca),
 * the query API, the web view, /metrics, retention; docs/API.md.
 *
 * Threads: libmicrohttpd runs a thread per connection.  Reads take a store
 * handle from a small pool (each keeps its dictionary loaded).  Writes go
 * through one writer thread that commits everything queued as one store
 * batch (group commit) and then answers each waiting request, so a 200
 * means the data is committed, and a request is stored whole or not at all. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/settings.h"
#include "../lib/decode_limits.h"
#include "../lib/error.h"
#include "../lib/folded.h"
#include "../lib/http/server.h"
#include "../lib/ingest.h"
#include "../lib/load.h"
#include "../lib/pprof.h"
#include "../lib/render/render.h"
#include "../lib/scrape.h"
#include "../lib/util.h"
#include "cmd.h"

enum { OPT_LISTEN = 256, OPT_CONFIG, OPT_TLS_CERT, OPT_TLS_KEY, OPT_MAX_BODY, OPT_RETENTION, OPT_MAX_STORE,
       OPT_LOG_LEVEL, OPT_MAX_DECOMPRESSED };

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "max-decompressed", required_argument, NULL, OPT_MAX_DECOMPRESSED },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-store-size", required_argument, NULL, OPT_MAX_STORE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_serve(int argc, char **argv);

const struct cmd cmd_serve = {
	"serve", "HTTP server: push ingest, query API, web view", run_serve, options, "h",
	"usage: cprof serve [OPTIONS]\n"
	"\n"
	"Serve the store over HTTP: profiles pushed by cprof record --remote,\n"
	"Pyroscope clients (/ingest) and Parca agents (/api/profiles/writeraw);\n"
	"the query API that cprof query|merge|diff --remote read; a web view at /;\n"
	"/metrics and /healthz.  Stops at SIGINT or SIGTERM.\n"
	"\n"
	"      --listen ADDR      HOST:PORT to listen on (default 127.0.0.1:7070;\n"
	"                         0.0.0.0:7070 for every interface, port 0 picks one)\n"
	"      --data DIR         the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"
	"                         else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"
	"      --config FILE      settings from a YAML file (options given here win), and\n"
	"                         scrape_configs (as Parca's) to scrape into the store\n"
	"                         (default: $CPROF_CONFIG, else " CP_SYSCONFDIR "/cprof/cprof.yaml\n"
	"                         if present)\n"
	"      --token-file FILE  require 'Authorization: Bearer TOKEN' on every endpoint\n"
	"      --tls-cert FILE    serve HTTPS with this PEM certificate (and --tls-key)\n"
	"      --tls-key FILE     the PEM private key of --tls-cert\n"
	"      --max-body SIZE    refuse larger request bodies with 413 (default 32M)\n"
	"      --max-decompressed SIZE  refuse with 413 a body that inflates to more,\n"
	"                         or a profile that would take twice SIZE to decode\n"
	"                         (default 4 x --max-body, at least 64M)\n"
	"      --retention DUR    delete stored data older than DUR (e.g. 30d), hourly\n"
	"      --max-store-size SIZE  keep the store under SIZE (e.g. 50G), deleting its\n"
	"                         oldest data, checked every minute\n"
	"      --log-level LEVEL  error, warn, info (default) or debug\n"
	"  -h, --help             show this help\n",
};

enum api { API_NATIVE, API_PYROSCOPE, API_PARCA, API_SCRAPE, NAPIS };
static const char *const api_names[NAPIS] = { "native", "pyroscope", "parca", "scrape" };

#define POOL_MAX 4
#define BATCH_MAX 512

struct job {
	struct cp_store_append *a;
	size_t n;
	int err;
	char msg[512];
	bool done;
	struct job *next;
};

struct server {
	const char *data;
	int64_t retention, last_retain;
	uint64_t max_store;
	int64_t last_limit;
	bool limit_warned;
	struct cp_store *w;
	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t more, done;
	struct job *head, **tail;
	bool stopping;

	pthread_mutex_t plock;
	pthread_cond_t pfree;
	struct cp_store *pool[POOL_MAX];
	bool busy[POOL_MAX];
	int npool;

	struct cp_server *http;
	struct cp_scraper *scraper; /* --config with scrape_configs */
	_Atomic uint64_t profiles[NAPIS], samples[NAPIS], errors[NAPIS], bytes[NAPIS];
	/* rejected pushes: a warning each, at most one a second per API */
	pthread_mutex_t rlock;
	int64_t rlast[NAPIS];
	uint64_t rsuppressed[NAPIS];
};

/* ---- the writer: group commit ---- */

static void retain(struct server *s)
{
	int64_t now = cp_now_ns();

	if (s->max_store && now - s->last_limit >= 60 * (int64_t)1000000000) {
		s->last_limit = now;
		limit_store("serve", s->w, s->max_store, &s->limit_warned);
	}
	if (!s->retention || now - s->last_retain < 3600 * (int64_t)1000000000)
		return;
	s->last_retain = now;
	if (cp_store_retain(s->w, s->retention) < 0)
		logmsg("serve", LOG_LEVEL_WARN, "retention: %s", cp_errmsg(EIO));
}

static void *writer_main(void *arg)
{
	struct server *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct job *batch, *j;
		struct cp_store_append *all = NULL;
		size_t total = 0, k = 0, njobs = 0;
		int err;

		while (!s->head && !s->stopping) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&s->more, &s->lock, &ts);
			if (!s->head) {
				pthread_mutex_unlock(&s->lock);
				retain(s);
				pthread_mutex_lock(&s->lock);
			}
		}
		if (!s->head)
			break;
		/* take what is queued, up to BATCH_MAX requests */
		batch = s->head;
		for (j = batch; j && njobs < BATCH_MAX; j = j->next, njobs++) {
			total += j->n;
			if (njobs + 1 == BATCH_MAX || !j->next) {
				s->head = j->next;
				j->next = NULL;
				if (!s->head)
					s->tail = &s->head;
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);

		all = calloc(total ? total : 1, sizeof(*all));
		for (j = batch; all && j; j = j->next) {
			memcpy(all + k, j->a, j->n * sizeof(*all));
			k += j->n;
		}
		err = all ? cp_store_append(s->w, all, total) : -ENOMEM;
		free(all);
		if (err && batch->next) {
			/* one request may be what failed: commit each alone */
			for (j = batch; j; j = j->next)
				if ((j->err = cp_store_append(s->w, j->a, j->n)))
					snprintf(j->msg, sizeof(j->msg), "%s", cp_errmsg(-j->err));
		} else {
			for (j = batch; j; j = j->next) {
				j->err = err;
				if (err)
					snprintf(j->msg, sizeof(j->msg), "%s", cp_errmsg(-err));
			}
		}
		retain(s); /* at most hourly, also under a steady load */
		pthread_mutex_lock(&s->lock);
		for (j = batch; j;) {
			struct job *next = j->next;

			j->done = true;
			j = next;
		}
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Queue appends and wait until they are committed: 0 or -errno with msg. */
static int submit(struct server *s, struct cp_store_append *a, size_t n, char *msg, size_t mlen)
{
	struct job j = { a, n, 0, "", false, NULL };

	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		snprintf(msg, mlen, "the server is shutting down: send again later");
		return -ESHUTDOWN;
	}
	*s->tail = &j;
	s->tail = &j.next;
	pthread_cond_signal(&s->more);
	while (!j.done)
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	snprintf(msg, mlen, "%s", j.msg);
	return j.err;
}

/* ---- the read pool ---- */

static struct cp_store *pool_get(struct server *s)
{
	struct cp_store *st = NULL;
	int i;

	pthread_mutex_lock(&s->plock);
	for (;;) {
		for (i = 0; i < s->npool && s->busy[i]; i++)
			;
		if (i < s->npool || s->npool < POOL_MAX)
			break;
		pthread_cond_wait(&s->pfree, &s->plock);
	}
	if (i == s->npool) {
		if (!(st = cp_store_open(s->data, CP_STORE_READ))) {
			pthread_mutex_unlock(&s->plock);
			return NULL;
		}
		s->pool[s->npool++] = st;
	}
	s->busy[i] = true;
	st = s->pool[i];
	pthread_mutex_unlock(&s->plock);
	return st;
}

static void pool_put(struct server *s, struct cp_store *st)
{
	int i;

	pthread_mutex_lock(&s->plock);
	for (i = 0; i < s->npool; i++)
		if (s->pool[i] == st)
			s->busy[i] = false;
	pthread_cond_signal(&s->pfree);
	pthread_mutex_unlock(&s->plock);
}

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
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		return;
	}
	cp_resp_take(out, 200, type, m->buf, m->len);
}

static int store_status(int err)
{
	return err == -ENOENT ? 404 : err == -EINVAL ? 400 : 500;
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
static bool get_series(struct server *s, struct cp_req *r, struct cp_resp *out, struct cp_store_series **ser,
		       size_t *n)
{
	struct cp_selector *sel;
	struct cp_store *st;
	int err;

	if (!get_selector(r, out, "query", false, &sel))
		return false;
	if (!(st = pool_get(s))) {
		cp_selector_free(sel);
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_series(st, sel, ser, n);
	pool_put(s, st);
	cp_selector_free(sel);
	if (err) {
		cp_resp_error(out, 500, "%s", cp_errmsg(-err));
		return false;
	}
	return true;
}

/* merged profiles for a selector and range; false after answering */
static bool select_profiles(struct server *s, struct cp_resp *out, const struct cp_selector *sel, int64_t from,
			    int64_t to, const char *group_by, struct cp_store_result **res, size_t *n)
{
	struct cp_store_query q = { sel, from, to, group_by };
	struct cp_store *st = pool_get(s);
	int err;

	if (!st) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return false;
	}
	err = cp_store_select(st, &q, res, n);
	pool_put(s, st);
	if (err) {
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
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
	struct server *s = arg;
	struct cp_selector *sel = NULL;
	struct cp_store_query q = { 0 };
	struct cp_over_time ot = { 0 };
	struct cp_buckets b;
	int64_t from, to, step = 0, *totals = NULL;
	const char *st_arg = cp_req_arg(r, "step");
	char *type = NULL, unit[64];
	struct cp_store *st;
	struct mem m;
	int err;

	if (!get_selector(r, out, "query", false, &sel) || !get_range(r, out, "from", "to", 0, 0, &from, &to))
		goto out;
	if (st_arg && *st_arg && (err = cp_parse_duration(st_arg, &step))) {
		cp_resp_error(out, 400, "step: %s", cp_errmsg(-err));
		goto out;
	}
	if (!step)
		step = cp_buckets_default_step(from, to);
	/* the buckets are checked before the store is asked */
	if ((err = cp_buckets_align(from, to, step, &b))) {
		cp_resp_error(out, 400, "step: %s", cp_errmsg(-err));
		goto out;
	}
	if (!(st = pool_get(s))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		goto out;
	}
	q.sel = sel;
	q.from = from;
	q.to = to;
	err = cp_store_over_time(st, &q, step, &totals, &b, &type);
	pool_put(s, st);
	if (err) {
		cp_resp_error(out, store_status(err), "%s", cp_errmsg(-err));
		goto out;
	}
	ot.type = type;
	ot.unit = cp_store_type_part(type, 2, unit, sizeof(unit));
	ot.from = b.start;
	ot.to = cp_buckets_end(&b);
	ot.step = b.step;
	ot.totals = totals;
	ot.n = b.n;
	if (!mem_open(&m, out))
		mem_close(&m, out, cp_render_over_time_json(m.f, &ot), "application/json");
out:
	free(totals);
	free(type);
	cp_selector_free(sel);
}

static void h_stats(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_store_stats stt;
	struct cp_store *st = pool_get(arg);
	int err;

	(void)r;
	if (!st) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		return;
	}
	err = cp_store_stats(st, &stt);
	pool_put(arg, st);
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

/* one profile rendered in a query format */
static int render_profile(FILE *f, const char *format, struct cp_profile *p, struct cp_req *r, long max_nodes,
			  long limit)
{
	bool invert = flag(r, "invert");

	if (!strcmp(format, "json")) {
		struct cp_json_opts jo = { invert, (uint32_t)max_nodes };

		return cp_render_json_opts(f, p, 0, &jo);
	}
	if (!strcmp(format, "folded"))
		return cp_folded_write(f, p, 0, invert);
	if (!strcmp(format, "top")) {
		struct cp_top_opts to = { (int)limit };

		return cp_render_top(f, p, 0, &to);
	}
	if (!strcmp(format, "svg")) {
		struct cp_flame_opts fo = { 0 };
		struct cp_tree *t = cp_tree_new();
		int err;

		fo.title = cp_req_arg(r, "title");
		fo.unit = cp_profile_string(p, p->sample_types[0].unit);
		fo.icicle = flag(r, "icicle");
		if (!t)
			return cp_error(ENOMEM, "out of memory");
		if (!(err = cp_tree_add(t, p, 0, 0, invert)) && !(err = cp_tree_sort(t)))
			err = cp_render_flame(f, t, &fo);
		cp_tree_free(t);
		return err;
	}
	{ /* pprof */
		uint8_t *buf = NULL;
		size_t len = 0;
		int err = cp_pprof_encode(p, 1, &buf, &len);

		if (!err && fwrite(buf, 1, len, f) != len)
			err = cp_error(ENOMEM, "out of memory");
		free(buf);
		return err;
	}
}

static const char *format_type(const char *format)
{
	return !strcmp(format, "json") || !strcmp(format, "groups") ? "application/json" :
	       !strcmp(format, "svg")				    ? "image/svg+xml" :
	       !strcmp(format, "pprof")				    ? "application/octet-stream" :
								      "text/plain; charset=utf-8";
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
	static const char *formats[] = { "json", "folded", "top", "svg", "pprof", "groups", NULL };
	const char *format = cp_req_arg(r, "format"), *group_by = cp_req_arg(r, "group_by");
	struct cp_store_result *res = NULL;
	struct cp_selector *sel = NULL;
	struct cp_filter *filter = NULL;
	int64_t from, to;
	long max_nodes, limit;
	size_t n = 0, i;
	struct mem m;
	int err;

	format = format && *format ? format : "json";
	for (i = 0; formats[i] && strcmp(formats[i], format); i++)
		;
	if (!formats[i]) {
		cp_resp_error(out, 400, "unknown format '%.32s' (choose json, folded, top, svg, pprof or groups)", format);
		return;
	}
	if (!strcmp(format, "groups") && (!group_by || !*group_by)) {
		cp_resp_error(out, 400, "format=groups wants group_by=LABEL");
		return;
	}
	if (strcmp(format, "groups"))
		group_by = NULL;
	if (!get_selector(r, out, "query", false, &sel) || !get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !get_count(r, out, "max_nodes", 20000, &max_nodes) || !get_count(r, out, "limit", 0, &limit) ||
	    !get_filter(r, out, &filter) || !select_profiles(arg, out, sel, from, to, group_by, &res, &n))
		goto out;
	if (mem_open(&m, out))
		goto out;
	if (group_by) {
		err = render_groups(m.f, res, n, filter);
	} else if (!(res[0].profile = cp_profile_filter(res[0].profile, filter))) {
		err = -errno;
	} else {
		err = render_profile(m.f, format, res[0].profile, r, max_nodes, limit);
	}
	if (!strcmp(format, "pprof") && !err)
		out->disposition = "attachment; filename=\"profile.pb.gz\"";
	mem_close(&m, out, err, format_type(format));
out:
	cp_store_results_free(res, n);
	cp_filter_free(filter);
	cp_selector_free(sel);
}

static void h_diff(struct cp_req *r, struct cp_resp *out, void *arg)
{
	static const char *formats[] = { "json", "svg", "folded", "pprof", "table", NULL };
	const char *format = cp_req_arg(r, "format");
	struct cp_store_result *rb = NULL, *ra = NULL;
	struct cp_selector *sb = NULL, *sa = NULL;
	struct cp_filter *filter = NULL;
	struct cp_render_diff_opts o = { 0 };
	int64_t from, to, bf, bt, af, at;
	size_t nb = 0, na = 0, i;
	long max_nodes, limit;
	struct mem m;
	int err;

	format = format && *format ? format : "json";
	for (i = 0; formats[i] && strcmp(formats[i], format); i++)
		;
	if (!formats[i]) {
		cp_resp_error(out, 400, "unknown format '%.32s' (choose json, svg, folded, pprof or table)", format);
		return;
	}
	if (!get_selector(r, out, "before", true, &sb) || !get_selector(r, out, "after", true, &sa) ||
	    !get_range(r, out, "from", "to", 0, 0, &from, &to) ||
	    !get_range(r, out, "before_from", "before_to", from, to, &bf, &bt) ||
	    !get_range(r, out, "after_from", "after_to", from, to, &af, &at) ||
	    !get_count(r, out, "max_nodes", 20000, &max_nodes) || !get_count(r, out, "limit", 0, &limit) ||
	    !get_filter(r, out, &filter) || !select_profiles(arg, out, sb, bf, bt, NULL, &rb, &nb) ||
	    !select_profiles(arg, out, sa, af, at, NULL, &ra, &na))
		goto out;
	if (!(rb[0].profile = cp_profile_filter(rb[0].profile, filter)) ||
	    !(ra[0].profile = cp_profile_filter(ra[0].profile, filter))) {
		cp_resp_error(out, 500, "%s", cp_errmsg(errno));
		goto out;
	}
	if ((err = cp_profile_compatible(ra[0].profile, rb[0].profile))) {
		cp_resp_error(out, 400, "before and after do not compare: %s", cp_errmsg(-err));
		goto out;
	}
	if (mem_open(&m, out))
		goto out;
	o.limit = (int)limit;
	o.normalize = flag(r, "normalize");
	o.title = cp_req_arg(r, "title");
	o.icicle = flag(r, "icicle");
	o.with_tree = true;
	o.max_nodes = (uint32_t)max_nodes;
	err = cp_render_diff(m.f, !strcmp(format, "svg") ? "flamegraph" : format, rb[0].profile, 0, ra[0].profile, 0, &o);
	if (!strcmp(format, "pprof") && !err)
		out->disposition = "attachment; filename=\"diff.pb.gz\"";
	mem_close(&m, out, err, format_type(format));
out:
	cp_store_results_free(rb, nb);
	cp_store_results_free(ra, na);
	cp_filter_free(filter);
	cp_selector_free(sb);
	cp_selector_free(sa);
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

static void ingest_done(struct server *s, struct cp_resp *out, enum api api, int err, const char *msg,
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

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Logs a push the handler refused (out->status >= 400) with its reason: one
 * line a second per API at most, the next line counting those left out. */
static void log_rejected(struct server *s, enum api api, struct cp_req *r, const struct cp_resp *out)
{
	const char *reason = NULL, *name = cp_req_arg(r, "name");
	json_t *j = NULL;
	int64_t now = mono_ns();
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
	logmsg("serve", LOG_LEVEL_WARN, "%s", line);
}

static void log_rejected_left(struct server *s)
{
	int api;

	for (api = 0; api < NAPIS; api++)
		if (s->rsuppressed[api])
			logmsg("serve", LOG_LEVEL_WARN, "%" PRIu64 " more %s pushes were rejected since the last line",
			       s->rsuppressed[api], api_names[api]);
}

static void bad_body(struct server *s, struct cp_resp *out, enum api api, int status, const char *fmt, const char *m)
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
	struct server *s = arg;
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
	err = submit(s, &a, 1, msg, sizeof(msg));
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
		return -ENOMEM;
	memcpy(f->copy, data, len);
	f->data = f->copy;
	f->len = len;
	return 0;
}

static void push_pyroscope(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct server *s = arg;
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
		err = submit(s, as, nparts, msg, sizeof(msg));
		ingest_done(s, out, API_PYROSCOPE, err, msg, 1, samples, len);
		goto out;
	}
	a.profile = p;
	err = submit(s, &a, 1, msg, sizeof(msg));
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
	struct server *s = arg;
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
		err = submit(s, b.a, b.n, msg, sizeof(msg));
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
	struct server *s = arg;
	struct cp_store_stats st = { 0 };
	struct cp_store *rs;
	struct mem m;
	int k;

	(void)r;
	if ((rs = pool_get(s))) {
		cp_store_stats(rs, &st);
		pool_put(s, rs);
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
static int scrape_sink(void *ctx, const struct cp_store_append *a, size_t n)
{
	struct server *s = ctx;
	char msg[512];
	size_t i, samples = 0;
	int err = submit(s, (struct cp_store_append *)a, n, msg, sizeof(msg));

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

static void scrape_log(void *ctx, const struct cp_target_state *t)
{
	char line[1280];

	(void)ctx;
	logmsg("serve", LOG_LEVEL_INFO, "scrape %s", cp_target_state_line(t, false, line, sizeof(line)));
}

static void *scrape_main(void *arg)
{
	struct server *s = arg;
	int err = cp_scraper_run(s->scraper, NULL);

	if (err)
		logmsg("serve", LOG_LEVEL_ERROR, "scraping stopped: %s", cp_errmsg(-err));
	return NULL;
}

static void h_targets(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct server *s = arg;
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
	{ "GET", "/metrics", "metrics", h_metrics, false },
	{ "GET", "/api/v1/types", "types", h_types, false },
	{ "GET", "/api/v1/labels", "labels", h_labels, false },
	{ "GET", "/api/v1/values", "values", h_values, false },
	{ "GET", "/api/v1/series", "series", h_series, false },
	{ "GET", "/api/v1/range", "range", h_range, false },
	{ "GET", "/api/v1/profile", "profile", h_profile, false },
	{ "GET", "/api/v1/diff", "diff", h_diff, false },
	{ "GET", "/api/v1/stats", "stats", h_stats, false },
	{ "GET", "/api/v1/targets", "targets", h_targets, false },
	{ "POST", "/api/v1/push", "push", h_push, false },
	{ "POST", "/ingest", "pyroscope_ingest", h_pyroscope, false },
	{ "POST", "/api/profiles/writeraw", "parca_writeraw", h_parca_write, false },
	{ "GET", "/api/profiles/types", "parca_types", h_parca_types, false },
	{ "GET", "/api/profiles/labels", "parca_labels", h_parca_labels, false },
	{ "GET", "/api/profiles/labels/", "parca_label_values", h_parca_labels, false },
};

/* ---- the command ---- */

static int read_pem(const char *opt, const char *path, char **out)
{
	uint8_t *d = NULL;
	size_t len = 0;
	int err = cp_read_file(path, 1 << 20, &d, &len);

	if (err)
		return fail("serve", "%s: %s", opt, cp_errmsg(-err));
	*out = realloc(d, len + 1);
	if (!*out) {
		free(d);
		return fail("serve", "out of memory");
	}
	(*out)[len] = 0;
	return EXIT_OK;
}

static const char *pick(const char *opt, const char *cfg)
{
	return opt ? opt : cfg;
}

static int run_serve(int argc, char **argv)
{
	const char *listen_o = NULL, *data_o = NULL, *config = NULL, *token_o = NULL, *cert_o = NULL, *key_o = NULL,
		   *maxb_o = NULL, *ret_o = NULL, *maxd_o = NULL, *listen, *v;
	struct cp_config cfg = { 0 };
	struct server s = { 0 };
	struct cp_server_opts so = { 0 };
	char dir[4096], host[300];
	char *token = NULL, *cert = NULL, *key = NULL;
	uint64_t max_body = 32u << 20, max_dec = 0;
	sigset_t sigs;
	int opt, status = EXIT_OK, err, sig, k;
	bool writer_started = false, scraping = false;
	pthread_t scrape_thread;

	while ((opt = next_option(&cmd_serve, argc, argv)) != -1) {
		switch (opt) {
		case OPT_LISTEN: listen_o = optarg; break;
		case OPT_DATA: data_o = optarg; break;
		case OPT_CONFIG: config = optarg; break;
		case OPT_TOKEN_FILE: token_o = optarg; break;
		case OPT_TLS_CERT: cert_o = optarg; break;
		case OPT_TLS_KEY: key_o = optarg; break;
		case OPT_MAX_BODY: maxb_o = optarg; break;
		case OPT_MAX_DECOMPRESSED: maxd_o = optarg; break;
		case OPT_RETENTION: ret_o = optarg; break;
		case OPT_MAX_STORE:
			if ((err = cp_parse_size(optarg, &s.max_store)) || !s.max_store)
				return usage_error("serve", "--max-store-size: %s",
						   err ? cp_errmsg(err) : "want a size such as 512M or 10G");
			break;
		case OPT_LOG_LEVEL:
			if ((err = parse_log_level("serve", optarg)) != EXIT_OK)
				return err;
			break;
		case 'h': return show_usage(&cmd_serve);
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (config && (err = cp_config_load(config, &cfg)))
		return usage_error("serve", "--config: %s", cp_errmsg(-err));
	listen = pick(listen_o, cfg.listen) ? pick(listen_o, cfg.listen) : "127.0.0.1:7070";
	if ((err = cp_listen_check(listen))) {
		status = usage_error("serve", "%s", cp_errmsg(-err));
		goto out;
	}
	if ((v = pick(maxb_o, cfg.max_body)) && ((err = cp_parse_size(v, &max_body)) || !max_body)) {
		status = usage_error("serve", "--max-body: %s", err ? cp_errmsg(-err) : "must be more than 0");
		goto out;
	}
	if ((v = pick(maxd_o, cfg.max_decompressed)) && ((err = cp_parse_size(v, &max_dec)) || !max_dec)) {
		status = usage_error("serve", "--max-decompressed: %s", err ? cp_errmsg(-err) : "must be more than 0");
		goto out;
	}
	if (!max_dec) /* 4 x --max-body, at least 64M */
		max_dec = 4 * max_body > 64u << 20 ? 4 * max_body : 64u << 20;
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = max_dec, .setting = "--max-decompressed" });
	if ((v = pick(ret_o, cfg.retention)) && (err = cp_parse_duration(v, &s.retention))) {
		status = usage_error("serve", "--retention: %s", cp_errmsg(-err));
		goto out;
	}
	if (!pick(cert_o, cfg.tls_cert) != !pick(key_o, cfg.tls_key)) {
		status = usage_error("serve", "HTTPS wants both --tls-cert and --tls-key");
		goto out;
	}
	if ((v = pick(token_o, cfg.token_file)) && (status = read_token("serve", v, &token)))
		goto out;
	if ((v = pick(cert_o, cfg.tls_cert)) &&
	    ((status = read_pem("--tls-cert", v, &cert)) || (status = read_pem("--tls-key", pick(key_o, cfg.tls_key), &key))))
		goto out;
	/* the file's data: is serve's own setting, so it wins over $CPROF_DATA (an empty one counts as unset) */
	if ((status = store_dir("serve", pick(data_o, cfg.data && *cfg.data ? cfg.data : NULL), dir, sizeof(dir))))
		goto out;
	s.data = dir;
	if (!(s.w = cp_store_open(s.data, CP_STORE_WRITE))) {
		status = fail("serve", "%s", cp_errmsg(errno));
		goto out;
	}
	s.tail = &s.head;
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.plock, NULL);
	pthread_mutex_init(&s.rlock, NULL);
	pthread_cond_init(&s.more, NULL);
	pthread_cond_init(&s.done, NULL);
	pthread_cond_init(&s.pfree, NULL);
	for (k = 0; k < NAPIS; k++) {
		atomic_init(&s.profiles[k], 0);
		atomic_init(&s.samples[k], 0);
		atomic_init(&s.errors[k], 0);
		atomic_init(&s.bytes[k], 0);
	}
	/* signals go to sigwait below, not to the server's threads */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	retain(&s);
	if ((err = pthread_create(&s.writer, NULL, writer_main, &s))) {
		status = fail("serve", "cannot start the writer thread: %s", strerror(err));
		goto out;
	}
	writer_started = true;
	so.listen = listen;
	so.token = token;
	so.tls_cert_pem = cert;
	so.tls_key_pem = key;
	so.max_body = (size_t)max_body;
	so.routes = routes;
	so.nroutes = sizeof(routes) / sizeof(routes[0]);
	so.arg = &s;
	if (!(s.http = cp_server_start(&so))) {
		status = fail("serve", "%s", cp_errmsg(errno));
		goto out;
	}
	if (cfg.scrape.njobs) {
		if (!(s.scraper = cp_scraper_new(&cfg.scrape, scrape_sink, &s))) {
			status = fail("serve", "%s", cp_errmsg(errno));
			goto out;
		}
		cp_scraper_set_log(s.scraper, scrape_log, NULL);
		if ((err = pthread_create(&scrape_thread, NULL, scrape_main, &s))) {
			status = fail("serve", "cannot start scraping: %s", strerror(err));
			goto out;
		}
		scraping = true;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(strrchr(listen, ':') - listen), listen);
	printf("listening on %s://%s:%d\n", cert ? "https" : "http", *host ? host : "0.0.0.0", cp_server_port(s.http));
	fflush(stdout);
	logmsg("serve", LOG_LEVEL_INFO, "store %s%s%s", s.data, token ? ", token required" : "",
	       scraping ? ", scraping" : "");
	sigwait(&sigs, &sig);
	logmsg("serve", LOG_LEVEL_INFO, "stopping (%s)", strsignal(sig));
out:
	if (scraping) { /* first: it feeds the writer */
		cp_scraper_stop(s.scraper);
		pthread_join(scrape_thread, NULL);
	}
	cp_server_stop(s.http); /* waits for the requests in flight */
	log_rejected_left(&s);
	cp_scraper_free(s.scraper);
	if (writer_started) {
		pthread_mutex_lock(&s.lock);
		s.stopping = true;
		pthread_cond_signal(&s.more);
		pthread_mutex_unlock(&s.lock);
		pthread_join(s.writer, NULL);
	}
	for (k = 0; k < s.npool; k++)
		cp_store_close(s.pool[k]);
	cp_store_close(s.w);
	free(token);
	free(cert);
	free(key);
	cp_config_release(&cfg);
	return status;
}
