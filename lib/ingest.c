/* SPDX-License-Identifier: MIT */
/* Push clients' formats: Pyroscope's names and text bodies, Parca's writeraw. */
#include "ingest.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "selector.h"

int cp_labels_add(struct cp_labels *l, const char *name, const char *value)
{
	size_t i;

	if (!cp_label_name_valid(name, strlen(name)))
		return cp_error(EINVAL, "bad label name '%.64s' (letters, digits and _, not starting with a digit)", name);
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->kv[i].name, name))
			return cp_error(EINVAL, "label '%.64s' given twice", name);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct cp_kv *kv = realloc(l->kv, cap * sizeof(*kv));

		if (!kv)
			return -ENOMEM;
		l->kv = kv;
		l->cap = cap;
	}
	l->kv[l->n].name = strdup(name);
	l->kv[l->n].value = strdup(value);
	if (!l->kv[l->n].name || !l->kv[l->n].value) {
		free((char *)l->kv[l->n].name);
		free((char *)l->kv[l->n].value);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

void cp_labels_release(struct cp_labels *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free((char *)l->kv[i].name);
		free((char *)l->kv[i].value);
	}
	free(l->kv);
	memset(l, 0, sizeof(*l));
}

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
				err = k && v ? cp_labels_add(&out->labels, k, v) : -ENOMEM;
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
		{ "goroutines", { "goroutine", "goroutine", "count", "goroutine", "count", 0 } },
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

		if (!(text = malloc(len * 2 + 16)))
			goto nomem;
		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			size_t l = (nl ? (size_t)(nl - s) : (size_t)(end - s));

			if (l && s[l - 1] == '\r')
				l--;
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

int cp_base64_decode(const char *s, size_t len, uint8_t **out, size_t *outlen)
{
	gnutls_datum_t in, res = { NULL, 0 };
	char *copy = malloc(len + 4);
	size_t i, n = 0;
	int err;

	if (!copy)
		return -ENOMEM;
	for (i = 0; i < len; i++) { /* URL-safe to standard; whitespace dropped */
		char c = s[i];

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		copy[n++] = c == '-' ? '+' : c == '_' ? '/' : c;
	}
	while (n % 4)
		copy[n++] = '=';
	in.data = (unsigned char *)copy;
	in.size = (unsigned)n;
	if (n == 0) {
		free(copy);
		*out = malloc(1);
		*outlen = 0;
		return *out ? 0 : -ENOMEM;
	}
	err = gnutls_base64_decode2(&in, &res);
	free(copy);
	if (err < 0)
		return cp_error(EINVAL, "bad base64: %s", gnutls_strerror(err));
	*out = res.data;
	*outlen = res.size;
	return 0;
}

int cp_base64_encode(const uint8_t *d, size_t len, char **out, size_t *outlen)
{
	gnutls_datum_t in = { (unsigned char *)d, (unsigned)len }, res = { NULL, 0 };
	int err;

	if (len > (1u << 30))
		return cp_error(EFBIG, "too large to encode");
	if (!len) {
		*out = strdup("");
		*outlen = 0;
		return *out ? 0 : -ENOMEM;
	}
	if ((err = gnutls_base64_encode2(&in, &res)) < 0)
		return cp_error(ENOMEM, "base64: %s", gnutls_strerror(err));
	*out = (char *)res.data;
	*outlen = res.size;
	return 0;
}

/* gnutls allocates with gnutls_malloc, which is malloc unless an
 * application replaced it; cprof does not */

int cp_parca_writeraw(const char *body, size_t len,
		      int (*fn)(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen),
		      void *ctx)
{
	json_error_t je;
	json_t *root = json_loadb(body, len, 0, &je), *series, *s;
	size_t i, j, k;
	int err = 0;

	if (!root)
		return cp_error(EINVAL, "the body is not JSON: %s (line %d)", je.text, je.line);
	series = json_object_get(root, "series");
	if (!json_is_array(series)) {
		err = cp_error(EINVAL, "the body has no \"series\" array");
		goto out;
	}
	json_array_foreach(series, i, s) {
		json_t *labels = json_object_get(json_object_get(s, "labels"), "labels"), *samples, *sm, *l;
		struct cp_labels ls = { 0 };

		samples = json_object_get(s, "samples");
		if (!json_is_object(s) || (labels && !json_is_array(labels)) || !json_is_array(samples)) {
			err = cp_error(EINVAL, "series %zu: wants {\"labels\":{\"labels\":[...]},\"samples\":[...]}", i);
			goto out;
		}
		json_array_foreach(labels, j, l) {
			const char *name = json_string_value(json_object_get(l, "name"));
			const char *value = json_string_value(json_object_get(l, "value"));

			if (!name || !value) {
				cp_labels_release(&ls);
				err = cp_error(EINVAL, "series %zu, label %zu: wants {\"name\":...,\"value\":...}", i, j);
				goto out;
			}
			if ((err = cp_labels_add(&ls, name, value))) {
				cp_labels_release(&ls);
				cp_error_ctx(-err, "series %zu", i);
				goto out;
			}
		}
		json_array_foreach(samples, k, sm) {
			const char *raw = json_string_value(json_object_get(sm, "rawProfile"));
			uint8_t *bytes = NULL;
			size_t n = 0;

			if (!raw) {
				err = cp_error(EINVAL, "series %zu, sample %zu: no \"rawProfile\" (base64 pprof)", i, k);
				break;
			}
			if ((err = cp_base64_decode(raw, strlen(raw), &bytes, &n))) {
				cp_error_ctx(-err, "series %zu, sample %zu: rawProfile", i, k);
				break;
			}
			err = fn(ctx, &ls, bytes, n);
			free(bytes);
			if (err)
				break;
		}
		cp_labels_release(&ls);
		if (err)
			goto out;
	}
out:
	json_decref(root);
	return err;
}
