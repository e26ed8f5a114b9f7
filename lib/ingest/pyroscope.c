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
		/* the Java agent's (async-profiler's) kinds, as Pyroscope names them */
		{ "lock_count", { "block", "contentions", "count", "contentions", "count", 0 } },
		{ "lock_duration", { "block", "delay", "nanoseconds", "contentions", "count", 0 } },
		{ "alloc_in_new_tlab_objects", { "memory", "alloc_in_new_tlab_objects", "count", "space", "bytes", 0 } },
		{ "alloc_in_new_tlab_bytes", { "memory", "alloc_in_new_tlab_bytes", "bytes", "space", "bytes", 0 } },
		{ "alloc_outside_tlab_objects", { "memory", "alloc_outside_tlab_objects", "count", "space", "bytes", 0 } },
		{ "alloc_outside_tlab_bytes", { "memory", "alloc_outside_tlab_bytes", "bytes", "space", "bytes", 0 } },
		{ "live", { "memory", "live", "count", "space", "bytes", 0 } },
		{ "exceptions", { "exceptions", "samples", "count", "samples", "count", 0 } },
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

static struct pyro_class pyro_classify(const struct cp_profile *p, size_t k, const char *suffix,
				       const struct cp_pyro_stc *stc)
{
	const char *t = cp_profile_string(p, p->sample_types[k].type);
	const char *pt = cp_profile_string(p, p->period_type.type);
	const char *dn = cp_pyro_stc_display(stc, t);
	struct pyro_class c = { NULL, NULL, NULL, NULL };

	/* a display-name from the push's sample_type_config says what it is */
	if (dn && strcmp(t, "wall")) {
		if (strstr(dn, "cpu"))
			return (struct pyro_class){ "process_cpu", NULL, "cpu", "nanoseconds" };
		if (strstr(dn, "alloc_") || strstr(dn, "inuse_") || !strcmp(dn, "space") || !strcmp(dn, "objects"))
			return (struct pyro_class){ "memory", NULL, "space", "bytes" };
		if (strstr(dn, "mutex_"))
			return (struct pyro_class){ "mutex", NULL, "contentions", "count" };
		if (strstr(dn, "block_"))
			return (struct pyro_class){ "block", NULL, "contentions", "count" };
		if (strstr(dn, "goroutines"))
			return (struct pyro_class){ "goroutines", NULL, "goroutine", "count" };
	}
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
	return cp_pyro_split_config(p, suffix, NULL, out, nout);
}

int cp_pyro_split_config(struct cp_profile *p, const char *suffix, const struct cp_pyro_stc *stc,
			 struct cp_pyro_part **out, size_t *nout)
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
		cls[k] = pyro_classify(p, k, suffix, stc);
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

/* the parts of a multipart push Pyroscope reads */
enum { F_PROFILE, F_PREV, F_STC, F_JFR, F_LABELS, F_N };
static const char *const form_fields[F_N] = { "profile", "prev_profile", "sample_type_config", "jfr", "labels" };

struct form_parts {
	uint8_t *data[F_N]; /* copies we own, NUL-terminated; NULL: no such part */
	size_t len[F_N];
	size_t nparts;
};

static int pick_fields(void *ctx, const char *name, const char *filename, const uint8_t *data, size_t len)
{
	struct form_parts *f = ctx;

	(void)filename;
	f->nparts++;
	for (int i = 0; i < F_N; i++) {
		if (strcmp(name, form_fields[i]) || f->data[i]) /* the first of a name counts, as in Pyroscope */
			continue;
		if (!(f->data[i] = malloc(len + 1)))
			return cp_error(ENOMEM, "out of memory copying the form's '%s' part (%zu bytes)", name, len);
		memcpy(f->data[i], data, len);
		f->data[i][len] = 0;
		f->len[i] = len;
	}
	return 0;
}

enum pyro_format { FMT_GROUPS, FMT_LINES, FMT_PPROF, FMT_JFR, FMT_TRIE, FMT_TREE, FMT_SPEEDSCOPE };

static const struct {
	const char *name;
	enum pyro_format f;
} pyro_formats[] = {
	{ "folded", FMT_GROUPS }, { "groups", FMT_GROUPS }, { "lines", FMT_LINES }, { "pprof", FMT_PPROF },
	{ "jfr", FMT_JFR },	  { "trie", FMT_TRIE },	    { "tree", FMT_TREE },   { "speedscope", FMT_SPEEDSCOPE },
};

static bool ctype_is(const char *ctype, const char *what)
{
	size_t n = strlen(what);

	return ctype && !strncasecmp(ctype, what, n) && (!ctype[n] || ctype[n] == ';' || ctype[n] == ' ');
}

/* Folded text never holds control bytes; a pprof always does (its first
 * field's length, a 0 in its string table). */
static bool looks_binary(const uint8_t *d, size_t len)
{
	for (size_t i = 0; i < len && i < 4096; i++)
		if (d[i] < 0x20 && d[i] != '\t' && d[i] != '\n' && d[i] != '\r')
			return true;
	return false;
}

/* The labels of every profile of the push: the name's, and pyroscope_spy
 * (Pyroscope's label for the client's spyName) when the push gives one. */
static int push_labels(struct cp_pyro_name *nm, const char *spy)
{
	size_t i;

	if (!spy || !*spy)
		return 0;
	for (i = 0; i < nm->labels.n; i++)
		if (!strcmp(nm->labels.kv[i].name, "pyroscope_spy"))
			return 0; /* the name's own */
	return cp_labels_add(&nm->labels, "pyroscope_spy", spy);
}

/* .NET's sample types are "inuse-space" and such: Pyroscope takes them as
 * "inuse_space" (renaming the string, so the period type too) */
static int dotnet_types(struct cp_profile *p)
{
	for (size_t k = 0; k <= p->ntypes; k++) {
		uint32_t *at = k < p->ntypes ? &p->sample_types[k].type : &p->period_type.type;
		const char *t = cp_profile_string(p, *at);
		char *u;
		int64_t id;

		if (!strchr(t, '-'))
			continue;
		if (!(u = strdup(t)))
			return cp_error(ENOMEM, "out of memory");
		for (char *c = u; *c; c++)
			if (*c == '-')
				*c = '_';
		id = cp_profile_str(p, u);
		free(u);
		if (id < 0)
			return cp_error(ENOMEM, "out of memory");
		*at = (uint32_t)id;
	}
	return 0;
}

int cp_ingest_pyroscope(struct cp_req *r, struct cp_ingest_batch *b)
{
	const char *name = cp_req_arg(r, "name"), *format = cp_req_arg(r, "format"), *units = cp_req_arg(r, "units");
	const char *rate_s = cp_req_arg(r, "sampleRate"), *ctype = cp_req_header(r, "Content-Type");
	const char *spy = cp_req_arg(r, "spyName");
	struct cp_pyro_name nm = { 0 };
	struct cp_pyro_type ty;
	struct cp_pyro_stc stc = { 0 };
	struct cp_store_append a = { 0 };
	struct cp_profile *p = NULL;
	struct form_parts fp = { 0 };
	struct cp_pyro_part *parts = NULL;
	int64_t now = cp_now_ns(), until = now, from = 0, rate = 100;
	enum pyro_format fmt = FMT_GROUPS;
	const uint8_t *body;
	uint8_t *inflated = NULL;
	char *end, *tname = NULL, *text = NULL;
	size_t len, nparts = 0, i, tlen;
	bool multipart = ctype_is(ctype, "multipart/form-data"), given = format && *format;
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
	if (units && *units && !cp_type_name_valid(units)) {
		err = cp_error(EINVAL, "units: '%.32s' takes letters, digits, '_', '.' and '-' (samples, objects, bytes)",
			       units);
		goto out;
	}
	if (spy && *spy && !cp_type_name_valid(spy)) {
		err = cp_error(EINVAL, "spyName: '%.32s' takes letters, digits, '_', '.' and '-' (e.g. nodespy)", spy);
		goto out;
	}
	if ((err = push_labels(&nm, spy)))
		goto out;
	cp_pyro_type(nm.suffix, units && *units ? units : NULL, &ty);

	/* the format: format= when given, else as Pyroscope tells it from the
	 * request (a trie or tree Content-Type, a multipart form is pprof) and,
	 * past Pyroscope, a binary body is a pprof rather than folded text */
	if (given) {
		for (i = 0; i < sizeof(pyro_formats) / sizeof(pyro_formats[0]); i++)
			if (!strcmp(format, pyro_formats[i].name))
				break;
		if (i == sizeof(pyro_formats) / sizeof(pyro_formats[0])) {
			err = cp_error(EINVAL,
				       "format '%.32s' is not one /ingest takes: folded (or groups), lines, pprof, jfr, trie, "
				       "tree or speedscope",
				       format);
			goto out;
		}
		fmt = pyro_formats[i].f;
	} else if (ctype_is(ctype, "binary/octet-stream+trie")) {
		fmt = FMT_TRIE;
	} else if (ctype_is(ctype, "binary/octet-stream+tree")) {
		fmt = FMT_TREE;
	} else if (multipart) {
		fmt = FMT_PPROF;
	}
	if (multipart && (fmt == FMT_PPROF || fmt == FMT_JFR)) {
		if ((err = cp_req_form(r, pick_fields, &fp))) {
			err = cp_error_ctx(-err, "the multipart form");
			goto out;
		}
		if (!fp.nparts) {
			err = cp_error(EINVAL, "the multipart form has no parts: send the profile in a part named 'profile'");
			goto out;
		}
		if (fp.data[F_JFR] && !fp.data[F_PROFILE])
			fmt = FMT_JFR;
	}
	if (fmt == FMT_JFR) {
		struct cp_pyro_push push = { &nm, spy, from, until, rate, body, len, NULL, 0 };

		if (fp.data[F_JFR]) {
			push.body = fp.data[F_JFR];
			push.len = fp.len[F_JFR];
			push.labels = fp.data[F_LABELS];
			push.labels_len = fp.len[F_LABELS];
		} else if (multipart) {
			err = cp_error(EINVAL, "format=jfr: the multipart form has no 'jfr' part");
			goto out;
		}
		err = cp_ingest_pyroscope_jfr(r, &push, b);
		goto out;
	}
	if (fmt == FMT_SPEEDSCOPE) { /* the raw body, as Pyroscope reads it, even with a multipart Content-Type */
		struct cp_pyro_push push = { &nm, spy, from, until, rate, body, len, NULL, 0 };

		err = cp_ingest_pyroscope_speedscope(&push, &ty, b);
		goto out;
	}
	if (fmt == FMT_PPROF && multipart) {
		if (!fp.data[F_PROFILE]) {
			err = cp_error(EINVAL, "the multipart form has no 'profile' part (its parts are profile, "
					       "prev_profile, sample_type_config)");
			goto out;
		}
		if (fp.len[F_PREV]) { /* as Pyroscope: cumulative profiles are for the client to subtract */
			err = cp_error(EINVAL, "the form's prev_profile part: a cumulative profile with the previous one "
					       "to subtract is from an old client, not taken (as by Pyroscope): update the "
					       "client, whose profiles are deltas");
			goto out;
		}
		if (fp.data[F_STC] && (err = cp_pyro_stc_parse((const char *)fp.data[F_STC], fp.len[F_STC], &stc)))
			goto out;
		body = fp.data[F_PROFILE];
		len = fp.len[F_PROFILE];
		if (!len) {
			err = cp_error(EINVAL, "the form's 'profile' part is empty: it holds the pprof profile");
			goto out;
		}
	}
	if (!len) {
		err = cp_error(EINVAL, "the body is empty: POST %s",
			       fmt == FMT_PPROF ? "a pprof profile" : fmt == FMT_TRIE || fmt == FMT_TREE ? "the profile" :
											    "folded stacks");
		goto out;
	}
	if (fmt != FMT_PPROF && cp_is_gzip(body, len)) { /* inflated within max_decompressed */
		if ((err = cp_gunzip_limited(body, len, &inflated, &len)))
			goto out;
		body = inflated;
	}
	if (!given && fmt == FMT_GROUPS && looks_binary(body, len))
		fmt = FMT_PPROF; /* a pprof pushed without format= */
	switch (fmt) {
	case FMT_PPROF:
		/* stored at the push's from (until - 10 s when not given), as a
		 * folded push is: not at the pprof's own time, which clients set to
		 * when they stopped profiling (one flush late) */
		if ((p = cp_pprof_decode(body, len)))
			p->time_nanos = from;
		if (!p && !given && !multipart) {
			err = cp_error_ctx(errno ? errno : EINVAL,
					   "the body is neither folded text nor a pprof profile (no format= given)");
			goto out;
		}
		break;
	case FMT_TRIE:
	case FMT_TREE:
		if ((err = cp_pyro_nodes_folded(body, len, fmt == FMT_TREE, &text, &tlen)))
			goto out;
		p = cp_pyro_decode_text(text, tlen, 0, &ty, rate, from, until);
		break;
	default:
		p = cp_pyro_decode_text((const char *)body, len, fmt == FMT_LINES, &ty, rate, from, until);
		break;
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
	if (fmt == FMT_PPROF) { /* each kind of sample type under its Pyroscope name */
		if (spy && !strcmp(spy, "dotnetspy") && (err = dotnet_types(p))) {
			b->internal = true;
			goto out;
		}
		if ((err = cp_pyro_split_config(p, nm.suffix, stc.n ? &stc : NULL, &parts, &nparts))) {
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
	for (i = 0; i < F_N; i++)
		free(fp.data[i]);
	free(inflated);
	free(text);
	cp_pyro_stc_free(&stc);
	cp_pyro_parts_free(parts, nparts);
	cp_profile_free(p);
	cp_pyro_name_release(&nm);
	return err;
}
