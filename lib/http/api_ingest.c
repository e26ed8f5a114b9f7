/* SPDX-License-Identifier: MIT */
/* Pushes: cprof's /api/v1/push, Pyroscope's /ingest, Parca's writeraw;
 * their counters and the log of what is rejected. */
#include "http/api_impl.h"

/* ---- writing handlers ---- */

static void ingest_done(struct cp_api *s, struct cp_resp *out, enum api api, int err, const char *msg,
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


/* Logs a push the handler refused (out->status >= 400) with its reason: one
 * line a second per API at most, the next line counting those left out. */
static void log_rejected(struct cp_api *s, enum api api, struct cp_req *r, const struct cp_resp *out)
{
	const char *reason = NULL, *name = cp_req_arg(r, "name");
	json_t *j = NULL;
	int64_t now = cp_mono_ns();
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
	cp_log("serve", CP_LOG_WARN, "%s", line);
}

void api_log_rejected_left(struct cp_api *s)
{
	int api;

	for (api = 0; api < NAPIS; api++)
		if (s->rsuppressed[api])
			cp_log("serve", CP_LOG_WARN, "%" PRIu64 " more %s pushes were rejected since the last line",
			       s->rsuppressed[api], api_names[api]);
}

static void bad_body(struct cp_api *s, struct cp_resp *out, enum api api, int status, const char *fmt, const char *m)
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
	struct cp_api *s = arg;
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
	if (!api_get_time(r, out, "time", cp_now_ns(), &t)) {
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
	err = cp_shared_append(s->store, &a, 1, msg, sizeof(msg));
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
		return cp_error(ENOMEM, "out of memory copying the form field '%s' (%zu bytes)", name, len);
	memcpy(f->copy, data, len);
	f->data = f->copy;
	f->len = len;
	return 0;
}

static void push_pyroscope(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
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
	if (!api_get_time(r, out, "until", now, &until) || !api_get_time(r, out, "from", now, &from))
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
		err = cp_shared_append(s->store, as, nparts, msg, sizeof(msg));
		ingest_done(s, out, API_PYROSCOPE, err, msg, 1, samples, len);
		goto out;
	}
	a.profile = p;
	err = cp_shared_append(s->store, &a, 1, msg, sizeof(msg));
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
	struct cp_api *s = arg;
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
		err = cp_shared_append(s->store, b.a, b.n, msg, sizeof(msg));
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

void api_h_push(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_native(r, out, arg);
	log_rejected(arg, API_NATIVE, r, out);
}

void api_h_pyroscope(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_pyroscope(r, out, arg);
	log_rejected(arg, API_PYROSCOPE, r, out);
}

void api_h_parca_write(struct cp_req *r, struct cp_resp *out, void *arg)
{
	push_parca(r, out, arg);
	log_rejected(arg, API_PARCA, r, out);
}
