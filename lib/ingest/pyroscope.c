/* SPDX-License-Identifier: MIT */
/* Pyroscope's ingest API (POST /ingest, docs/API.md): its names
 * ("app.cpu{k=v}"), the profile types their suffixes and units give, pprof
 * bodies split by what each sample type measures, folded ("groups") and
 * lines bodies, gzipped or not; and the decoder of protocol.c's row. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode_limits.h"
#include "error.h"
#include "folded.h"
#include "gzip.h"
#include "ingest/protocol.h"
#include "pprof.h"
#include "selector.h"
#include "util.h"

void cp_pyro_name_release(struct cp_pyro_name *n)
{
	free(n->app);
	free(n->suffix);
	cp_labels_release(&n->labels);
	memset(n, 0, sizeof(*n));
}

static char *trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return strndup(s, n);
}

int cp_pyro_label_name(char *name)
{
	size_t i;

	if (!*name || (*name >= '0' && *name <= '9'))
		return -EINVAL;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.'))
			return -EINVAL;
	}
	for (i = 0; name[i]; i++)
		if (name[i] == '.')
			name[i] = '_';
	return 0;
}

int cp_pyro_name_parse(const char *s, struct cp_pyro_name *out)
{
	const char *brace = strchr(s, '{'), *end, *p, *dot;
	size_t head = brace ? (size_t)(brace - s) : strlen(s);
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!head)
		return cp_error(EINVAL, "name '%.64s' has no application name before '{'", s);
	for (dot = s + head; dot > s && dot[-1] != '.'; dot--)
		;
	if (dot > s + 1 && dot < s + head) {
		out->app = strndup(s, (size_t)(dot - 1 - s));
		out->suffix = strndup(dot, (size_t)(s + head - dot));
	} else {
		out->app = strndup(s, head);
		out->suffix = strdup("cpu");
	}
	if (!out->app || !out->suffix)
		goto nomem;
	if (!cp_type_name_valid(out->suffix)) {
		err = cp_error(EINVAL, "name '%.64s': the profile type after the last dot ('%.32s') takes letters, digits, "
				       "'_', '.' and '-' (e.g. app.cpu{env=prod})",
			       s, out->suffix);
		goto fail;
	}
	if (brace) {
		if (!(end = strchr(brace, '}')) || end[1]) {
			err = cp_error(EINVAL, "name '%.64s': labels go in one {k=v,...} at the end", s);
			goto fail;
		}
		for (p = brace + 1; p < end;) {
			const char *comma = memchr(p, ',', (size_t)(end - p)), *eq;
			char *k, *v;

			if (!comma)
				comma = end;
			eq = memchr(p, '=', (size_t)(comma - p));
			if (!eq) {
				if (comma - p > 0 && strspn(p, " \t") < (size_t)(comma - p)) {
					err = cp_error(EINVAL, "name '%.64s': a label without '=' (write k=v)", s);
					goto fail;
				}
			} else {
				k = trimmed(p, (size_t)(eq - p));
				v = trimmed(eq + 1, (size_t)(comma - eq - 1));
				if (!k || !v)
					err = -ENOMEM;
				else if (cp_pyro_label_name(k))
					err = cp_error(EINVAL,
						       "name '%.64s': bad label name '%.64s' (letters, digits, '_' and '.', "
						       "not starting with a digit)",
						       s, k);
				else
					err = cp_labels_add(&out->labels, k, v);
				free(k);
				free(v);
				if (err)
					goto fail;
			}
			p = comma + 1;
		}
	}
	{
		size_t i;

		for (i = 0; i < out->labels.n && strcmp(out->labels.kv[i].name, "service_name"); i++)
			;
		if (i == out->labels.n && (err = cp_labels_add(&out->labels, "service_name", out->app)))
			goto fail;
	}
	return 0;
nomem:
	err = cp_error(ENOMEM, "out of memory");
fail:
	cp_pyro_name_release(out);
	return err;
}

void cp_pyro_type(const char *suffix, const char *units, struct cp_pyro_type *t)
{
	static const struct {
		const char *suffix;
		struct cp_pyro_type t;
	} known[] = {
		{ "cpu", { "process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds", 1 } },
		{ "itimer", { "process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds", 1 } },
		{ "wall", { "wall", "wall", "nanoseconds", "wall", "nanoseconds", 1 } },
		{ "alloc_objects", { "memory", "alloc_objects", "count", "space", "bytes", 0 } },
		{ "alloc_space", { "memory", "alloc_space", "bytes", "space", "bytes", 0 } },
		{ "inuse_objects", { "memory", "inuse_objects", "count", "space", "bytes", 0 } },
		{ "inuse_space", { "memory", "inuse_space", "bytes", "space", "bytes", 0 } },
		{ "goroutines", { "goroutines", "goroutine", "count", "goroutine", "count", 0 } },
		{ "mutex_count", { "mutex", "contentions", "count", "contentions", "count", 0 } },
		{ "mutex_duration", { "mutex", "delay", "nanoseconds", "contentions", "count", 0 } },
		{ "block_count", { "block", "contentions", "count", "contentions", "count", 0 } },
		{ "block_duration", { "block", "delay", "nanoseconds", "contentions", "count", 0 } },
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(suffix, known[i].suffix)) {
			*t = known[i].t;
			return;
		}
	if (units && !strcmp(units, "samples")) {
		*t = known[0].t;
		t->name = suffix;
		return;
	}
	t->name = suffix;
	t->cpu = 0;
	if (units && !strcmp(units, "bytes")) {
		t->type = t->ptype = "space";
		t->unit = t->punit = "bytes";
	} else {
		t->type = t->ptype = units && *units ? units : "samples";
		t->unit = t->punit = "count";
	}
}

/* ---- pprof pushed to /ingest: named by what each sample type measures ---- */

struct pyro_class {
	const char *name;   /* NULL: no Pyroscope name; the store names it from the period type */
	const char *type;   /* the stored sample type, NULL: as sent */
	const char *ptype, *punit;
};

static bool has_type(const struct cp_profile *p, const char *type)
{
	size_t k;

	for (k = 0; k < p->ntypes; k++)
		if (!strcmp(cp_profile_string(p, p->sample_types[k].type), type))
			return true;
	return false;
}

static struct pyro_class pyro_classify(const struct cp_profile *p, size_t k, const char *suffix)
{
	const char *t = cp_profile_string(p, p->sample_types[k].type);
	const char *pt = cp_profile_string(p, p->period_type.type);
	struct pyro_class c = { NULL, NULL, NULL, NULL };

	if (!strcmp(t, "wall"))
		c = (struct pyro_class){ "wall", NULL, "wall", "nanoseconds" };
	else if (!strcmp(t, "offcpu")) /* cprof record --off-cpu's waits: not CPU time */
		c = (struct pyro_class){ "offcpu", NULL, "offcpu", "nanoseconds" };
	else if (strstr(t, "cpu"))
		c = (struct pyro_class){ "process_cpu", NULL, "cpu", "nanoseconds" };
	else if (!strcmp(t, "samples") || !strcmp(t, "sample")) {
		if (has_type(p, "wall") || !strcmp(pt, "wall"))
			c = (struct pyro_class){ "wall", "samples", "wall", "nanoseconds" };
		else if (has_type(p, "cpu") || !strcmp(pt, "cpu"))
			c = (struct pyro_class){ "process_cpu", "samples", "cpu", "nanoseconds" };
	} else if (!strcmp(t, "alloc_objects") || !strcmp(t, "alloc_space") || !strcmp(t, "inuse_objects") ||
		   !strcmp(t, "inuse_space"))
		c = (struct pyro_class){ "memory", NULL, "space", "bytes" };
	else if (!strcmp(t, "objects")) /* a heap profile of what is live (Node.js, V8) */
		c = (struct pyro_class){ "memory", "inuse_objects", "space", "bytes" };
	else if (!strcmp(t, "space"))
		c = (struct pyro_class){ "memory", "inuse_space", "space", "bytes" };
	else if (!strcmp(t, "goroutine") || !strcmp(t, "goroutines"))
		c = (struct pyro_class){ "goroutines", "goroutine", "goroutine", "count" };
	else if (!strcmp(t, "contentions") || !strcmp(t, "delay"))
		c = (struct pyro_class){ suffix && !strncmp(suffix, "block", 5) ? "block" : "mutex", NULL, "contentions",
					 "count" };
	return c;
}

static bool same_class(const struct pyro_class *a, const struct pyro_class *b)
{
	if (!a->name || !b->name)
		return !a->name && !b->name;
	return !strcmp(a->name, b->name) && !strcmp(a->ptype, b->ptype) && !strcmp(a->punit, b->punit);
}

/* Keeps p's sample types of one class (keep[k]), renamed as cls[k] says,
 * with the class's period type. */
static int pyro_retype(struct cp_profile *p, const struct pyro_class *cls, const bool *keep)
{
	const struct pyro_class *c = NULL;
	size_t k;
	int64_t id;

	for (k = 0; k < p->ntypes; k++) {
		if (!keep[k])
			continue;
		c = &cls[k];
		if (c->type) {
			if ((id = cp_profile_str(p, c->type)) < 0)
				return cp_error(ENOMEM, "out of memory naming the profile type '%s'", c->type);
			p->sample_types[k].type = (uint32_t)id;
		}
	}
	if (c && c->name && cp_profile_set_period_type(p, c->ptype, c->punit, p->period))
		return cp_error(ENOMEM, "out of memory setting the period type");
	return cp_profile_keep_types(p, keep);
}

void cp_pyro_parts_free(struct cp_pyro_part *parts, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cp_profile_free(parts[i].profile);
	free(parts);
}

int cp_pyro_split(struct cp_profile *p, const char *suffix, struct cp_pyro_part **out, size_t *nout)
{
	struct pyro_class *cls = NULL;
	struct cp_pyro_part *parts = NULL;
	bool *keep = NULL, *done = NULL;
	size_t k, j, n = 0;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (!p->ntypes)
		return cp_error(EINVAL, "the profile has no sample types");
	if (!(cls = calloc(p->ntypes, sizeof(*cls))) || !(keep = calloc(p->ntypes, sizeof(*keep))) ||
	    !(done = calloc(p->ntypes, sizeof(*done))) || !(parts = calloc(p->ntypes, sizeof(*parts)))) {
		err = -ENOMEM;
		goto out;
	}
	/* classify all first: renaming a type must not change another's class */
	for (k = 0; k < p->ntypes; k++)
		cls[k] = pyro_classify(p, k, suffix);
	for (k = 0; k < p->ntypes; k++) {
		bool last = true;

		if (done[k])
			continue;
		for (j = 0; j < p->ntypes; j++) {
			keep[j] = !done[j] && same_class(&cls[k], &cls[j]);
			done[j] = done[j] || keep[j];
		}
		for (j = k + 1; j < p->ntypes; j++)
			last = last && done[j];
		/* the last class takes p itself, the others a copy */
		if (last) {
			parts[n].profile = p;
		} else if (!(parts[n].profile = cp_profile_copy(p, NULL))) {
			err = -errno;
			goto out;
		}
		parts[n].name = cls[k].name;
		n++;
		if ((err = pyro_retype(parts[n - 1].profile, cls, keep))) {
			if (last)
				parts[--n].profile = NULL; /* p stays the caller's */
			goto out;
		}
		if (last)
			break;
	}
out:
	if (err) {
		if (n && parts[n - 1].profile == p)
			n--;
		cp_pyro_parts_free(parts, n);
		parts = NULL;
		n = 0;
		if (err == -ENOMEM)
			cp_error(ENOMEM, "out of memory");
	}
	free(cls);
	free(keep);
	free(done);
	*out = parts;
	*nout = n;
	return err;
}

struct cp_profile *cp_pyro_decode_text(const char *body, size_t len, int lines, const struct cp_pyro_type *t,
				       int64_t sample_rate, int64_t from_ns, int64_t until_ns)
{
	struct cp_profile *p = NULL;
	char *text = NULL;
	int64_t mult = 1, per, tid, uid;
	size_t i, n = 0;
	int err = 0;

	if (t->cpu && sample_rate <= 0) {
		cp_error(EINVAL, "sampleRate must be a positive number");
		errno = EINVAL;
		return NULL;
	}
	if (lines) { /* a stack a line, each counting 1: give every line the count */
		const char *s = body, *end = body + len;
		size_t nlines = 0, max = cp_decode_limits()->max_samples;

		if (!(text = malloc(len * 2 + 16)))
			goto nomem;
		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			size_t l = (nl ? (size_t)(nl - s) : (size_t)(end - s));

			if (l && s[l - 1] == '\r')
				l--;
			if (l && ++nlines > max) {
				err = -cp_decode_too_many("samples (lines)", max);
				free(text);
				errno = err;
				return NULL;
			}
			if (l) {
				memcpy(text + n, s, l);
				n += l;
				memcpy(text + n, " 1\n", 3);
				n += 3;
			}
			s = nl ? nl + 1 : end;
		}
		body = text;
		len = n;
	}
	if (!(p = cp_folded_decode(body, len))) {
		err = errno;
		free(text);
		errno = err;
		return NULL;
	}
	free(text);
	per = t->cpu ? 1000000000 / sample_rate : 1;
	if (t->cpu)
		mult = per;
	/* the folded profile is samples/count: retype it and scale its values */
	if ((tid = cp_profile_str(p, t->type)) < 0 || (uid = cp_profile_str(p, t->unit)) < 0 ||
	    cp_profile_set_period_type(p, t->ptype, t->punit, per))
		goto nomem;
	p->sample_types[0].type = (uint32_t)tid;
	p->sample_types[0].unit = (uint32_t)uid;
	for (i = 0; i < (size_t)p->nsamples * p->ntypes; i++) {
		if (__builtin_mul_overflow(p->values[i], mult, &p->values[i])) {
			cp_error(EINVAL, "a count times 1e9/sampleRate overflows");
			cp_profile_free(p);
			errno = EINVAL;
			return NULL;
		}
	}
	p->time_nanos = from_ns;
	p->duration_nanos = until_ns > from_ns ? until_ns - from_ns : 0;
	return p;
nomem:
	cp_profile_free(p);
	cp_error(ENOMEM, "out of memory");
	errno = ENOMEM;
	return NULL;
}

/* ---- the decoder of POST /ingest ---- */

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

int cp_ingest_pyroscope(struct cp_req *r, struct cp_ingest_batch *b)
{
	const char *name = cp_req_arg(r, "name"), *format = cp_req_arg(r, "format"), *units = cp_req_arg(r, "units");
	const char *rate_s = cp_req_arg(r, "sampleRate"), *ctype = cp_req_header(r, "Content-Type");
	struct cp_pyro_name nm = { 0 };
	struct cp_pyro_type ty;
	struct cp_store_append a = { 0 };
	struct cp_profile *p = NULL;
	struct form_pick fp = { "profile", NULL, NULL, 0 };
	struct cp_pyro_part *parts = NULL;
	int64_t now = cp_now_ns(), until = now, from = 0, rate = 100;
	const uint8_t *body;
	char *end, *tname = NULL;
	size_t len, nparts = 0, i;
	bool pprof = false;
	int err;

	body = cp_req_body(r, &len);
	if (!name || !*name)
		return cp_error(EINVAL, "give the application: /ingest?name=APP.cpu{label=value}");
	if ((err = cp_pyro_name_parse(name, &nm)))
		return err;
	if ((err = cp_ingest_time(r, "until", now, &until)) || (err = cp_ingest_time(r, "from", now, &from)))
		goto out;
	if (!cp_req_arg(r, "from"))
		from = until - 10 * (int64_t)1000000000;
	if (rate_s && *rate_s) {
		errno = 0;
		rate = strtoll(rate_s, &end, 10);
		if (errno || *end || rate <= 0) {
			err = cp_error(EINVAL, "sampleRate: '%.32s' is not a positive number", rate_s);
			goto out;
		}
		if (rate > 1000000000) { /* a sample would weigh less than a nanosecond: 0 */
			err = cp_error(EINVAL, "sampleRate: %lld Hz is above 1e9 (a sample would weigh under 1 ns)",
				       (long long)rate);
			goto out;
		}
	}
	format = format && *format ? format : "folded";
	if (units && *units && !cp_type_name_valid(units)) {
		err = cp_error(EINVAL, "units: '%.32s' takes letters, digits, '_', '.' and '-' (samples, objects, bytes)",
			       units);
		goto out;
	}
	cp_pyro_type(nm.suffix, units && *units ? units : NULL, &ty);
	if (!strcmp(format, "folded") || !strcmp(format, "groups") || !strcmp(format, "lines")) {
		if (!len) {
			err = cp_error(EINVAL, "the body is empty: POST folded stacks");
			goto out;
		}
		if (cp_is_gzip(body, len)) { /* a gzipped text body, inflated within max_decompressed */
			if ((err = cp_gunzip_limited(body, len, &fp.copy, &len)))
				goto out;
			body = fp.copy;
		}
		p = cp_pyro_decode_text((const char *)body, len, !strcmp(format, "lines"), &ty, rate, from, until);
	} else if (!strcmp(format, "pprof")) {
		if (ctype && !strncasecmp(ctype, "multipart/form-data", 19)) {
			if ((err = cp_req_form(r, pick_field, &fp)))
				goto out;
			if (!fp.data) {
				err = cp_error(EINVAL, "the form has no 'profile' field");
				goto out;
			}
			body = fp.data;
			len = fp.len;
		}
		if (!len) {
			err = cp_error(EINVAL, "the body is empty: POST a pprof profile");
			goto out;
		}
		/* stored at the push's from (until - 10 s when not given), as a
		 * folded push is: not at the pprof's own time, which clients set to
		 * when they stopped profiling (one flush late) */
		if ((p = cp_pprof_decode(body, len)))
			p->time_nanos = from;
		pprof = true;
	} else {
		err = cp_error(EINVAL, "format '%.32s' is not taken here: send folded, lines or pprof", format);
		goto out;
	}
	if (!p) {
		err = cp_error_ctx(errno ? errno : EINVAL, "the body is not a profile");
		goto out;
	}
	a.labels = nm.labels.kv;
	a.nlabels = nm.labels.n;
	a.time_ns = p->time_nanos ? p->time_nanos : from;
	b->profiles = 1;
	b->samples = p->nsamples;
	b->bytes = len;
	if (pprof) { /* each kind of sample type under its Pyroscope name */
		if ((err = cp_pyro_split(p, nm.suffix, &parts, &nparts))) {
			b->internal = err == -ENOMEM;
			goto out;
		}
		p = NULL; /* the parts have it */
		for (i = 0; i < nparts; i++) {
			a.name = parts[i].name;
			/* the first takes the labels, the others share them */
			if ((err = cp_ingest_batch_add(b, parts[i].profile, &a, i ? NULL : &nm.labels, NULL))) {
				b->internal = true;
				goto out;
			}
			parts[i].profile = NULL; /* the batch's */
		}
		goto out;
	}
	if (ty.name && !(tname = strdup(ty.name))) { /* ty.name may be nm's suffix */
		err = cp_error(ENOMEM, "out of memory");
		b->internal = true;
		goto out;
	}
	if ((err = cp_ingest_batch_add(b, p, &a, &nm.labels, tname))) {
		free(tname);
		b->internal = true;
		goto out;
	}
	p = NULL; /* the batch's */
out:
	free(fp.copy);
	cp_pyro_parts_free(parts, nparts);
	cp_profile_free(p);
	cp_pyro_name_release(&nm);
	return err;
}
