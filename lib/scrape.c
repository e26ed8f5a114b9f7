/* SPDX-License-Identifier: MIT */
/* The scraper: every (job, target, profile) is a target with its own
 * schedule; one thread starts the due transfers on a libcurl multi handle
 * and handles each as it finishes, so a slow or dead target holds up none of
 * the others (each has its own timeout). */
#include "config.h"

#include "scrape.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cumulative.h"
#include "error.h"
#include "index.h"
#include "log.h"
#include "pprof.h"
#include "selector.h"
#include "util.h"

#define MAX_BODY ((size_t)256 << 20)

/* ---- configuration ---- */

static const struct {
	const char *name, *path;
	bool delta;
} defaults[] = {
	{ "memory", "/debug/pprof/allocs", false },
	{ "block", "/debug/pprof/block", false },
	{ "goroutine", "/debug/pprof/goroutine", false },
	{ "mutex", "/debug/pprof/mutex", false },
	{ "process_cpu", "/debug/pprof/profile", true },
};
#define NDEFAULTS (sizeof(defaults) / sizeof(defaults[0]))

const char *cp_scrape_default_path(const char *name, bool *delta)
{
	size_t i;

	for (i = 0; i < NDEFAULTS; i++)
		if (!strcmp(defaults[i].name, name)) {
			if (delta)
				*delta = defaults[i].delta;
			return defaults[i].path;
		}
	if (!strcmp(name, "heap")) {
		if (delta)
			*delta = false;
		return "/debug/pprof/heap";
	}
	if (!strcmp(name, "fgprof")) {
		if (delta)
			*delta = true;
		return "/debug/fgprof";
	}
	return NULL;
}

/* the seconds= a URL already asks for (0: none) */
static long url_seconds(const char *url)
{
	const char *q = strchr(url, '?'), *p;

	for (p = q; p && *p; p = strchr(p + 1, '&'))
		if (!strncmp(p + 1, "seconds=", 8))
			return atol(p + 9);
	return 0;
}

void cp_scrape_request_release(struct cp_scrape_request *r)
{
	free(r->url);
	free(r->name);
	memset(r, 0, sizeof(*r));
}

int cp_scrape_request_make(const char *url_arg, const char *profile, int64_t seconds, int64_t timeout,
			   struct cp_scrape_request *r)
{
	const char *scheme_end = strstr(url_arg, "://"), *path, *name = profile, *dpath;
	char pname[64];
	bool delta = false;
	long given;
	int n;

	memset(r, 0, sizeof(*r));
	if (!scheme_end || (strncmp(url_arg, "http://", 7) && strncmp(url_arg, "https://", 8)))
		return cp_error(EINVAL, "'%s' is not an http:// or https:// URL", url_arg);
	path = strchr(scheme_end + 3, '/');
	n = (int)(path ? path - scheme_end - 3 : (long)strlen(scheme_end + 3));
	snprintf(r->instance, sizeof(r->instance), "%.*s", n, scheme_end + 3);
	if (!*r->instance)
		return cp_error(EINVAL, "'%s' has no host", url_arg);
	n = (int)(path ? path - url_arg : (long)strlen(url_arg)); /* the URL up to its path */
	if (!path || !strcmp(path, "/")) { /* the profile's default path */
		if (!name)
			name = "process_cpu";
		if (!cp_type_name_valid(name))
			return cp_error(EINVAL, "--profile '%s': letters, digits, '_', '.' and '-' (e.g. memory)", name);
		/* a name without a known path: Go's /debug/pprof/NAME (threadcreate...) */
		if ((dpath = cp_scrape_default_path(name, &delta)))
			n = asprintf(&r->url, "%.*s%s", n, url_arg, dpath);
		else
			n = asprintf(&r->url, "%.*s/debug/pprof/%s", n, url_arg, name);
	} else {
		/* a URL with its path: the name from --profile, the path, or its last part */
		if (!name) {
			const char *last = strrchr(path, '/') + 1;

			snprintf(pname, sizeof(pname), "%.*s", (int)strcspn(last, "?"), last);
			for (size_t k = 0; pname[k]; k++)
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", pname[k]))
					pname[k] = '_';
			name = !strcmp(pname, "profile") ? "process_cpu" :
			       !strcmp(pname, "allocs")	 ? "memory" :
			       *pname			 ? pname :
							   "profile";
		}
		delta = !strcmp(name, "process_cpu") || !strcmp(name, "fgprof");
		n = asprintf(&r->url, "%s", url_arg);
	}
	if (n < 0) {
		r->url = NULL;
		return cp_error(ENOMEM, "out of memory making the scrape request");
	}
	if (!cp_type_name_valid(name)) {
		cp_scrape_request_release(r);
		return cp_error(EINVAL, "--profile '%s': letters, digits, '_', '.' and '-' (e.g. memory)", name);
	}
	delta = delta || seconds; /* Go takes ?seconds= on every profile: a delta over that time */
	if ((given = url_seconds(r->url)) > 0) { /* the URL says how long already */
		delta = false;
		if (!timeout)
			r->timeout = given * 1000000000LL + 3 * 1000000000LL;
	}
	if (delta) {
		char *u2 = NULL;
		long long secs = seconds ? seconds / 1000000000 : 10;

		if (asprintf(&u2, "%s%cseconds=%lld", r->url, strchr(r->url, '?') ? '&' : '?', secs) < 0) {
			cp_scrape_request_release(r);
			return cp_error(ENOMEM, "out of memory making the scrape request");
		}
		free(r->url);
		r->url = u2;
	}
	if (!r->timeout)
		r->timeout = timeout ? timeout :
			     delta   ? (seconds ? seconds : 10 * 1000000000LL) + 3 * 1000000000LL :
				       30 * 1000000000LL;
	if (!(r->name = strdup(name))) {
		cp_scrape_request_release(r);
		return cp_error(ENOMEM, "out of memory making the scrape request");
	}
	return 0;
}

int cp_scrape_request_since_last(const struct cp_scrape_request *r, const char *state_dir, struct cp_profile **p)
{
	struct cp_scrape_last last;
	char *key = NULL;
	int err;

	if (asprintf(&key, "scrape\n%s\n%s\n%s", r->instance, r->name, r->url) < 0)
		return cp_error(ENOMEM, "out of memory");
	err = cp_scrape_last_init(&last, state_dir, key);
	free(key);
	if (!err)
		err = cp_scrape_since_last(&last, p, cp_now_ns());
	cp_scrape_last_release(&last);
	return err;
}

int cp_scrape_default_profiles(struct cp_scrape_profile **out, size_t *n)
{
	struct cp_scrape_profile *p = calloc(NDEFAULTS, sizeof(*p));
	size_t i;

	if (!p)
		return cp_error(ENOMEM, "out of memory listing the default profiles");
	for (i = 0; i < NDEFAULTS; i++) {
		p[i].name = strdup(defaults[i].name);
		p[i].path = strdup(defaults[i].path);
		p[i].enabled = true;
		p[i].delta = defaults[i].delta;
		if (!p[i].name || !p[i].path) {
			*out = p;
			*n = i + 1;
			return cp_error(ENOMEM, "out of memory listing the default profiles");
		}
	}
	*out = p;
	*n = NDEFAULTS;
	return 0;
}

static void kv_free(struct cp_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free((char *)kv[i].name);
		free((char *)kv[i].value);
	}
	free(kv);
}

void cp_scrape_config_release(struct cp_scrape_config *c)
{
	size_t i, k, m;

	for (i = 0; i < c->njobs; i++) {
		struct cp_scrape_job *j = &c->jobs[i];

		free(j->name);
		free(j->scheme);
		free(j->path_prefix);
		kv_free(j->params, j->nparams);
		for (k = 0; k < j->nstatics; k++) {
			for (m = 0; m < j->statics[k].ntargets; m++)
				free(j->statics[k].targets[m]);
			free(j->statics[k].targets);
			kv_free(j->statics[k].labels, j->statics[k].nlabels);
		}
		free(j->statics);
		for (k = 0; k < j->nprofiles; k++) {
			for (m = 0; m < j->profiles[k].nkeep; m++) {
				free(j->profiles[k].keep[m].type);
				free(j->profiles[k].keep[m].unit);
			}
			free(j->profiles[k].keep);
			free(j->profiles[k].name);
			free(j->profiles[k].path);
		}
		free(j->profiles);
	}
	free(c->jobs);
	memset(c, 0, sizeof(*c));
}

/* ---- fetching ---- */

struct body {
	uint8_t *d;
	size_t len, cap;
	bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;

	if (b->len + n > MAX_BODY) {
		b->too_big = true;
		return 0; /* aborts the transfer */
	}
	if (cp_grow((void **)&b->d, &b->cap, b->len + n + 1, 1))
		return 0;
	memcpy(b->d + b->len, ptr, n);
	b->len += n;
	return n;
}

static void setup(CURL *e, const char *url, int64_t timeout_ns, struct body *b, char *errbuf)
{
	long ms = (long)(timeout_ns / 1000000);

	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 && ms < 5000 ? ms : 5000L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "cprof-scrape/" PACKAGE_VERSION);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	errbuf[0] = 0;
}

/* A finished transfer: the profile, or NULL with *err the -errno of the
 * message it recorded (cp_errmsg(-*err)). */
static struct cp_profile *finish(CURL *e, CURLcode rc, const char *url, struct body *b, const char *errbuf, int *err)
{
	struct cp_profile *p;
	long status = 0;

	if (b->too_big) {
		*err = cp_error(EFBIG, "%s: the answer is larger than %zu MiB", url, MAX_BODY >> 20);
		return NULL;
	}
	if (rc != CURLE_OK) {
		*err = cp_error(rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO, "%s: %s", url,
			 errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return NULL;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		size_t n = b->len < 120 ? b->len : 120, i;
		char snippet[128];

		for (i = 0; i < n && b->d[i] != '\n' && b->d[i] != '\r'; i++)
			snippet[i] = b->d[i] >= 0x20 && b->d[i] < 0x7f ? (char)b->d[i] : '?';
		snippet[i] = 0;
		*err = cp_error(EPROTO, "%s: HTTP %ld%s%s", url, status, i ? ": " : "", snippet);
		return NULL;
	}
	if (!b->len) {
		*err = cp_error(EPROTO, "%s: an empty answer, not a pprof profile", url);
		return NULL;
	}
	*err = 0;
	if (!(p = cp_pprof_decode(b->d, b->len)))
		*err = cp_error_ctx(errno ? errno : EPROTO, "%s", url);
	return p;
}

struct cp_profile *cp_scrape_once(const char *url, int64_t timeout_ns, size_t *bytes)
{
	char errbuf[CURL_ERROR_SIZE];
	struct body b = { 0 };
	struct cp_profile *p;
	CURL *e = curl_easy_init();
	CURLcode rc;
	int err;

	if (!e) {
		cp_error(ENOMEM, "cannot start an HTTP client");
		errno = ENOMEM;
		return NULL;
	}
	setup(e, url, timeout_ns, &b, errbuf);
	rc = curl_easy_perform(e);
	p = finish(e, rc, url, &b, errbuf, &err);
	if (bytes)
		*bytes = b.len;
	curl_easy_cleanup(e);
	free(b.d);
	if (!p)
		errno = -err; /* the code of the message finish() recorded */
	return p;
}

/* ---- the scraper ---- */

struct target {
	const struct cp_scrape_job *job;
	const struct cp_scrape_static *st;
	const char *instance;
	const struct cp_scrape_profile *prof;
	char *url;
	int64_t next;  /* monotonic ns */
	int64_t t0, w0; /* this transfer's start: monotonic, wall */
	CURL *easy;
	struct body body;
	bool busy;
	char errbuf[CURL_ERROR_SIZE];
	struct cp_kv *labels; /* job, instance, the static labels */
	size_t nlabels;
	struct cp_scrape_last last; /* of a cumulative profile: the next is stored as the difference from it */
	/* a finished scrape on its way to the sink */
	struct cp_profile *p;
	int err;
	char *msg;
	size_t bytes;
	int64_t t1;
	struct cp_target_state state; /* under the scraper's lock */
};

struct cp_scraper {
	CURLM *multi;
	struct target *t;
	size_t n;
	struct target **done;          /* drain's room: s->n of each */
	struct cp_store_append *batch;
	cp_scrape_sink sink;
	void *ctx;
	void (*log)(void *ctx, const struct cp_target_state *t);
	void *log_ctx;
	pthread_mutex_t lock;
	volatile sig_atomic_t stopping;
};


static char *build_url(CURL *esc, const struct cp_scrape_job *j, const char *target, const struct cp_scrape_profile *p)
{
	char *url = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&url, &len);
	char sep = '?';

	if (!f)
		return NULL;
	fprintf(f, "%s://%s%s%s", j->scheme, target, j->path_prefix ? j->path_prefix : "", p->path);
	if (strchr(p->path, '?'))
		sep = '&';
	for (i = 0; i < j->nparams; i++) {
		char *k = curl_easy_escape(esc, j->params[i].name, 0), *v = curl_easy_escape(esc, j->params[i].value, 0);

		if (k && v)
			fprintf(f, "%c%s=%s", sep, k, v);
		sep = '&';
		curl_free(k);
		curl_free(v);
	}
	if (p->delta)
		fprintf(f, "%cseconds=%lld", sep, (long long)((p->seconds ? p->seconds : j->interval) / 1000000000));
	if (fclose(f)) {
		free(url);
		return NULL;
	}
	return url;
}

static int target_labels(struct target *t)
{
	size_t i, j, n = 0;

	if (!(t->labels = calloc(t->st->nlabels + 2, sizeof(*t->labels))))
		return cp_error(ENOMEM, "out of memory labelling the target %s", t->url);
	t->labels[n++] = (struct cp_kv){ "job", t->job->name };
	t->labels[n++] = (struct cp_kv){ "instance", t->instance };
	for (i = 0; i < t->st->nlabels; i++) {
		for (j = 0; j < n && strcmp(t->labels[j].name, t->st->labels[i].name); j++)
			;
		t->labels[j] = t->st->labels[i]; /* a static label may replace job or instance */
		n += j == n;
	}
	t->nlabels = n;
	return 0;
}

void cp_scraper_free(struct cp_scraper *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		struct target *t = &s->t[i];

		if (t->easy) {
			if (t->busy)
				curl_multi_remove_handle(s->multi, t->easy);
			curl_easy_cleanup(t->easy);
		}
		free(t->body.d);
		free(t->url);
		free(t->labels);
		cp_profile_free(t->p);
		cp_scrape_last_release(&t->last);
		free(t->msg);
		free(t->state.job);
		free(t->state.instance);
		free(t->state.profile);
		free(t->state.url);
		free(t->state.last_error);
	}
	free(s->t);
	free(s->done);
	free(s->batch);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct cp_scraper *cp_scraper_new(const struct cp_scrape_config *cfg, cp_scrape_sink sink, void *ctx)
{
	struct cp_scraper *s = calloc(1, sizeof(*s));
	size_t i, k, m, q, cap = 0;
	CURL *esc = NULL;
	int err = 0;

	if (!s || curl_global_init(CURL_GLOBAL_DEFAULT) || !(esc = curl_easy_init()) || !(s->multi = curl_multi_init())) {
		free(s);
		curl_easy_cleanup(esc);
		cp_error(ENOMEM, "cannot start the HTTP client");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->sink = sink;
	s->ctx = ctx;
	for (i = 0; i < cfg->njobs; i++) {
		const struct cp_scrape_job *j = &cfg->jobs[i];

		for (k = 0; k < j->nstatics; k++)
			for (m = 0; m < j->statics[k].ntargets; m++)
				for (q = 0; q < j->nprofiles; q++) {
					struct target *t;

					if (!j->profiles[q].enabled)
						continue;
					if (cp_grow((void **)&s->t, &cap, s->n + 1, sizeof(*s->t))) {
						err = -ENOMEM;
						goto out;
					}
					t = &s->t[s->n++];
					memset(t, 0, sizeof(*t));
					t->job = j;
					t->st = &j->statics[k];
					t->instance = j->statics[k].targets[m];
					t->prof = &j->profiles[q];
					t->url = build_url(esc, j, t->instance, t->prof);
					if ((err = target_labels(t)))
						goto out;
					t->state.job = strdup(j->name);
					t->state.instance = strdup(t->instance);
					t->state.profile = strdup(t->prof->name);
					t->state.url = t->url ? strdup(t->url) : NULL;
					if (!t->url || !t->state.job || !t->state.instance || !t->state.profile || !t->state.url) {
						err = -ENOMEM;
						goto out;
					}
				}
	}
	if (!s->n)
		err = cp_error(EINVAL, "no targets to scrape: give scrape_configs with static_configs targets "
				       "and enabled profiles");
	else if (!(s->done = calloc(s->n, sizeof(*s->done))) || !(s->batch = calloc(s->n, sizeof(*s->batch))))
		err = -ENOMEM;
out:
	curl_easy_cleanup(esc);
	if (err) {
		if (err == -ENOMEM)
			cp_error(ENOMEM, "out of memory");
		cp_scraper_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

int cp_scraper_set_state_dir(struct cp_scraper *s, const char *dir)
{
	for (size_t i = 0; i < s->n; i++) {
		struct target *t = &s->t[i];
		char *key = NULL;
		int err;

		if (asprintf(&key, "%s\n%s\n%s\n%s", t->job->name, t->instance, t->prof->name, t->url) < 0)
			return cp_error(ENOMEM, "out of memory");
		cp_scrape_last_release(&t->last);
		err = cp_scrape_last_init(&t->last, dir, key);
		free(key);
		if (err)
			return err;
	}
	return 0;
}

void cp_scraper_set_log(struct cp_scraper *s, void (*fn)(void *ctx, const struct cp_target_state *t), void *ctx)
{
	s->log = fn;
	s->log_ctx = ctx;
}

static int start(struct cp_scraper *s, struct target *t)
{
	if (!t->easy && !(t->easy = curl_easy_init()))
		return cp_error(ENOMEM, "out of memory");
	curl_easy_reset(t->easy);
	t->body.len = 0;
	t->body.too_big = false;
	setup(t->easy, t->url, t->job->timeout, &t->body, t->errbuf);
	curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
	t->t0 = cp_mono_ns();
	t->w0 = cp_now_ns();
	if (curl_multi_add_handle(s->multi, t->easy) != CURLM_OK)
		return cp_error(ENOMEM, "cannot start a transfer");
	t->busy = true;
	return 0;
}

/* keep_sample_type: the profile's types that the entry keeps */
static int keep_types(const struct cp_scrape_profile *prof, struct cp_profile *p)
{
	bool keep[64] = { false };
	size_t i, k, kept = 0;

	if (!prof->nkeep)
		return 0;
	for (i = 0; i < p->ntypes && i < 64; i++) {
		const char *type = cp_profile_string(p, p->sample_types[i].type);
		const char *unit = cp_profile_string(p, p->sample_types[i].unit);

		for (k = 0; k < prof->nkeep; k++)
			if (!strcmp(prof->keep[k].type, type) && (!prof->keep[k].unit || !strcmp(prof->keep[k].unit, unit)))
				keep[i] = true;
		kept += keep[i];
	}
	if (!kept)
		return cp_error(ENOENT, "keep_sample_type keeps none of the profile's sample types");
	return cp_profile_keep_types(p, keep);
}

int cp_scrape_last_init(struct cp_scrape_last *l, const char *state_dir, const char *key)
{
	memset(l, 0, sizeof(*l));
	if (state_dir && asprintf(&l->path, "%s/scrape-last/%016llx.pb.gz", state_dir,
				  (unsigned long long)cp_hash_bytes(key, strlen(key), 0x5c4a9e)) < 0) {
		l->path = NULL;
		return cp_error(ENOMEM, "out of memory");
	}
	return 0;
}

void cp_scrape_last_release(struct cp_scrape_last *l)
{
	free(l->path);
	cp_profile_free(l->p);
	memset(l, 0, sizeof(*l));
}

/* what an earlier run kept (unreadable or absent: none, the next scrape starts the count again) */
static void last_load(struct cp_scrape_last *l)
{
	uint8_t *data = NULL;
	size_t len = 0;

	l->loaded = true;
	if (!l->path || cp_read_file(l->path, 64u << 20, &data, &len))
		return;
	l->p = cp_pprof_decode(data, len);
	free(data);
	cp_error_clear();
}

static void last_save(const struct cp_scrape_last *l)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char dir[PATH_MAX];
	int err;

	if (!l->path)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(l->path, '/') - l->path), l->path);
	if ((err = cp_mkdirs(dir, 0755)) || (err = cp_pprof_encode(l->p, 1, &buf, &len)) ||
	    (err = cp_write_file_atomic(l->path, buf, len)))
		cp_log("scrape", CP_LOG_WARN, "cannot keep the last cumulative scrape in %s: %s", l->path, cp_errmsg(err));
	free(buf);
}

int cp_scrape_since_last(struct cp_scrape_last *l, struct cp_profile **p, int64_t t)
{
	struct cp_profile *d = NULL;
	bool restarted;
	int err;

	if (!cp_profile_is_cumulative(*p))
		return 0;
	if (!l->loaded)
		last_load(l);
	/* the interval between two scrapes by the scraper's clock (the target's may be off, or not move:
	 * a cache in between) */
	(*p)->time_nanos = t;
	if ((err = cp_cumulative_delta(*p, l->p, &d, &restarted)))
		return err;
	if (restarted)
		cp_log("scrape", CP_LOG_DEBUG, "%s: the totals went down since the last scrape (a restart): stored"
		       " as they are", l->path ? l->path : "a target");
	cp_profile_free(l->p);
	l->p = *p;
	*p = d;
	last_save(l);
	return 0;
}

/* a finished transfer: decoded into t->p, or t->err with the reason */
static void finished(struct cp_scraper *s, struct target *t, CURLcode rc)
{
	t->p = finish(t->easy, rc, t->url, &t->body, t->errbuf, &t->err);
	if (t->p && !(t->err = keep_types(t->prof, t->p)))
		t->err = cp_scrape_since_last(&t->last, &t->p, t->w0);
	t->msg = t->err ? strdup(cp_errmsg(-t->err)) : NULL;
	t->bytes = t->body.len;
	t->t1 = cp_mono_ns();
	curl_multi_remove_handle(s->multi, t->easy);
	t->busy = false;
	free(t->body.d); /* bodies are not kept between scrapes */
	memset(&t->body, 0, sizeof(t->body));
}

/* the scrapes that finished since the last call: one sink call for all of
 * them (one store batch), then their states */
static int drain(struct cp_scraper *s)
{
	struct cp_store_append *a = s->batch;
	struct target **done = s->done;
	size_t n = 0, na = 0, i;
	CURLMsg *m;
	int left, err = 0;

	while ((m = curl_multi_info_read(s->multi, &left))) {
		struct target *t = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
		if (!t)
			continue;
		finished(s, t, m->data.result);
		done[n++] = t; /* each target at most once: n <= s->n */
		if (!t->err && t->p->nsamples) { /* a first cumulative scrape may leave nothing to store */
			memset(&a[na], 0, sizeof(a[na]));
			a[na].profile = t->p;
			a[na].name = t->prof->name;
			a[na].labels = t->labels;
			a[na].nlabels = t->nlabels;
			a[na].time_ns = t->p->time_nanos ? t->p->time_nanos : t->w0;
			na++;
		}
	}
	cp_error_clear(); /* the targets' messages are copied: the sink's failure is its own */
	if (na && (err = s->sink(s->ctx, a, na))) { /* nothing of the batch was stored */
		for (i = 0; i < n; i++)
			if (!done[i]->err) {
				done[i]->err = err;
				done[i]->msg = strdup(cp_errmsg(-err));
			}
	}
	for (i = 0; i < n; i++) {
		struct target *t = done[i];
		bool changed;

		pthread_mutex_lock(&s->lock);
		changed = t->state.scrapes == 0 || t->state.up != !t->err ||
			  (t->err && (!t->state.last_error || !t->msg || strcmp(t->state.last_error, t->msg)));
		t->state.up = !t->err;
		t->state.last_ns = t->w0;
		t->state.last_duration_ns = t->t1 - t->t0;
		t->state.scrapes++;
		t->state.failures += t->err != 0;
		t->state.last_bytes = t->bytes;
		if (t->p)
			t->state.last_samples = t->p->nsamples;
		free(t->state.last_error);
		t->state.last_error = t->msg;
		t->msg = NULL;
		pthread_mutex_unlock(&s->lock);
		if (changed && s->log)
			s->log(s->log_ctx, &t->state);
		cp_profile_free(t->p);
		t->p = NULL;
	}
	return 0;
}

static bool any_busy(const struct cp_scraper *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->t[i].busy)
			return true;
	return false;
}

/* a target's place in its interval, the same every run: spreads the load */
static int64_t offset(const struct target *t)
{
	uint64_t h = 1469598103934665603ULL;
	const char *c;

	for (c = t->url; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return (int64_t)(h % (uint64_t)(t->job->interval / 4 + 1));
}

/* targets due this close to now start together: fewer wake-ups */
#define SLACK_NS (20 * 1000000LL)

int cp_scraper_run(struct cp_scraper *s, volatile sig_atomic_t *stop)
{
	int64_t now = cp_mono_ns();
	size_t i;
	int running, err;

	for (i = 0; i < s->n; i++)
		s->t[i].next = now + offset(&s->t[i]);
	while (!s->stopping && !(stop && *stop)) {
		int64_t wait = 1000000000LL;

		now = cp_mono_ns();
		for (i = 0; i < s->n; i++) {
			struct target *t = &s->t[i];

			if (!t->busy && t->next <= now + SLACK_NS) {
				if ((err = start(s, t)))
					return err;
				t->next += t->job->interval;
				if (t->next <= now) /* fell behind (a slow target): the next one on schedule */
					t->next = now + t->job->interval - (now - t->next) % t->job->interval;
			}
			if (!t->busy && t->next - now < wait)
				wait = t->next - now;
		}
		/* sleeps until a transfer has something to do, a target falls due,
		 * or cp_scraper_stop */
		curl_multi_poll(s->multi, NULL, 0, (int)(wait > 0 ? wait / 1000000 : 0), NULL);
		curl_multi_perform(s->multi, &running);
		drain(s);
	}
	return 0;
}

void cp_scraper_stop(struct cp_scraper *s)
{
	s->stopping = 1;
	curl_multi_wakeup(s->multi);
}

int cp_scraper_round(struct cp_scraper *s)
{
	size_t i;
	int running, err;

	for (i = 0; i < s->n; i++)
		if (!s->t[i].busy && (err = start(s, &s->t[i])))
			return err;
	while (any_busy(s) && !s->stopping) {
		curl_multi_perform(s->multi, &running);
		drain(s);
		if (any_busy(s))
			curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
	}
	return 0;
}

int cp_scraper_targets(struct cp_scraper *s, struct cp_target_state **out, size_t *n)
{
	struct cp_target_state *r = calloc(s->n ? s->n : 1, sizeof(*r));
	size_t i;
	bool oom = !r;

	pthread_mutex_lock(&s->lock);
	for (i = 0; r && i < s->n; i++) {
		r[i] = s->t[i].state;
		r[i].job = strdup(s->t[i].state.job);
		r[i].instance = strdup(s->t[i].state.instance);
		r[i].profile = strdup(s->t[i].state.profile);
		r[i].url = strdup(s->t[i].state.url);
		r[i].last_error = s->t[i].state.last_error ? strdup(s->t[i].state.last_error) : NULL;
		oom |= !r[i].job || !r[i].instance || !r[i].profile || !r[i].url ||
		       (s->t[i].state.last_error && !r[i].last_error);
	}
	pthread_mutex_unlock(&s->lock);
	if (oom) {
		cp_target_states_free(r, r ? s->n : 0);
		return cp_error(ENOMEM, "out of memory");
	}
	*out = r;
	*n = s->n;
	return 0;
}

void cp_target_states_free(struct cp_target_state *t, size_t n)
{
	size_t i;

	for (i = 0; t && i < n; i++) {
		free(t[i].job);
		free(t[i].instance);
		free(t[i].profile);
		free(t[i].url);
		free(t[i].last_error);
	}
	free(t);
}

static const char *health(const struct cp_target_state *t)
{
	return !t->scrapes ? "unknown" : t->up ? "up" : "down";
}

int cp_target_states_json(FILE *out, const struct cp_target_state *t, size_t n)
{
	json_t *arr = json_array();
	size_t i;
	int err = 0;

	if (!arr)
		return cp_error(ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:f,s:I,s:I,s:I,s:I}", "job", t[i].job, "instance",
				      t[i].instance, "profile", t[i].profile, "url", t[i].url, "health", health(&t[i]),
				      "last_scrape", (json_int_t)t[i].last_ns, "last_duration_seconds",
				      (double)t[i].last_duration_ns / 1e9, "scrapes", (json_int_t)t[i].scrapes, "failures",
				      (json_int_t)t[i].failures, "samples", (json_int_t)t[i].last_samples, "bytes",
				      (json_int_t)t[i].last_bytes);

		if (!o || json_object_set_new(o, "last_error", t[i].last_error ? json_string(t[i].last_error) : json_null()) ||
		    json_array_append_new(arr, o)) {
			err = cp_error(ENOMEM, "out of memory");
			break;
		}
	}
	if (!err && json_dumpf(arr, out, JSON_INDENT(1) | JSON_ENSURE_ASCII))
		err = cp_error(EIO, "cannot write JSON");
	if (!err)
		fputc('\n', out);
	json_decref(arr);
	return err ? err : cp_stream_check(out, NULL);
}

const char *cp_target_state_line(const struct cp_target_state *t, bool retried, char *buf, size_t len)
{
	if (t->up)
		snprintf(buf, len, "%s %s %s: up", t->job, t->instance, t->profile);
	else
		snprintf(buf, len, "%s %s %s: down: %s%s", t->job, t->instance, t->profile,
			 t->last_error ? t->last_error : "failed", retried ? " (retried in the next interval)" : "");
	return buf;
}

/* a Prometheus label value: \\, \" and \n escaped */
static void put_label_value(FILE *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', out);
		if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}

int cp_target_states_metrics(FILE *out, const struct cp_target_state *t, size_t n)
{
	static const char *const help[][3] = {
		{ "cprof_scrape_up", "gauge", "1 when the last scrape of the target succeeded." },
		{ "cprof_scrape_last_duration_seconds", "gauge", "How long the last scrape took." },
		{ "cprof_scrape_last_timestamp_seconds", "gauge", "When the last scrape started." },
		{ "cprof_scrape_samples", "gauge", "Samples in the last scraped profile." },
		{ "cprof_scrape_total", "counter", "Scrapes of the target." },
		{ "cprof_scrape_failures_total", "counter", "Failed scrapes of the target." },
	};
	size_t h, i;

	for (h = 0; h < sizeof(help) / sizeof(help[0]); h++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", help[h][0], help[h][2], help[h][0], help[h][1]);
		for (i = 0; i < n; i++) {
			uint64_t c = h == 0 ? t[i].up : h == 3 ? t[i].last_samples : h == 4 ? t[i].scrapes : t[i].failures;
			int64_t ns = h == 1 ? t[i].last_duration_ns : t[i].last_ns;

			fprintf(out, "%s{job=\"", help[h][0]);
			put_label_value(out, t[i].job);
			fprintf(out, "\",instance=\"");
			put_label_value(out, t[i].instance);
			fprintf(out, "\",profile=\"%s\"} ", t[i].profile);
			if (h == 1 || h == 2) /* seconds, to the nanosecond */
				fprintf(out, "%lld.%09lld\n", (long long)(ns / 1000000000), (long long)(ns % 1000000000));
			else
				fprintf(out, "%llu\n", (unsigned long long)c);
		}
	}
	return cp_stream_check(out, NULL);
}
