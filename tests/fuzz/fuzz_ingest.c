/* SPDX-License-Identifier: MIT */
/* Fuzz target: what push clients send to cprof serve, parsed as the ingest
 * decoders parse it (lib/ingest/pyroscope.c, parca.c): Pyroscope names ("app.cpu{k=v}"), Pyroscope folded and lines
 * bodies, Parca's writeraw JSON (each raw profile decoded as pprof, as the
 * server does, and every other one split by what it measures as /ingest
 * splits a pprof body), base64, Pyroscope's legacy trie and tree bodies (the
 * folded text they make decoded as /ingest does) and a multipart pprof push's
 * sample_type_config, and a JFR push's labels part (the LabelsSnapshot of its
 * contexts).  The first byte chooses the parser (0 name, 1 folded,
 * 2 lines, 3 writeraw, 4 base64, 5 trie, 6 tree, 7 sample_type_config, 8 JFR
 * labels) or,
 * for any other value, runs all of them in turn on the rest of the input.  For the text bodies, the second
 * byte picks the profile type and sampleRate. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "ingest/protocol.h"
#include "pprof.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void name(const uint8_t *data, size_t len)
{
	struct cp_pyro_name n;
	struct cp_pyro_type t;
	char *s = malloc(len + 1);

	if (!s)
		return;
	memcpy(s, data, len);
	s[len] = '\0';
	if (!cp_pyro_name_parse(s, &n)) {
		if (!n.app || !n.suffix || !n.labels.n)
			abort(); /* an accepted name has an app, a suffix and service_name */
		cp_pyro_type(n.suffix, NULL, &t);
		cp_pyro_type(n.suffix, "samples", &t);
		cp_pyro_type(n.suffix, "bytes", &t);
		cp_pyro_name_release(&n);
	}
	free(s);
}

static void text(const uint8_t *data, size_t len, int lines)
{
	static const char *const suffixes[] = { "cpu", "alloc_space", "goroutines", "custom" };
	static const int64_t rates[] = { 100, 1, 97, 1000000000, 1000000001, 0, -5 };
	struct cp_pyro_type t;
	struct cp_profile *p;
	unsigned sel = len ? data[0] : 0;
	uint8_t *buf = NULL;
	size_t blen = 0;

	if (len) {
		data++;
		len--;
	}
	cp_pyro_type(suffixes[sel % 4], (sel >> 2) & 1 ? "samples" : NULL, &t);
	/* the body itself is a buffer of exactly len bytes: no terminating NUL */
	p = cp_pyro_decode_text((const char *)data, len, lines, &t, rates[(sel >> 3) % 7], 1700000000000000000LL,
				1700000010000000000LL);
	if (!p)
		return;
	if (!cp_pprof_encode(p, 0, &buf, &blen)) {
		struct cp_profile *q = cp_pprof_decode(buf, blen);

		cp_profile_free(q);
	}
	free(buf);
	cp_profile_free(p);
}

struct parca_ctx {
	unsigned calls;
};

static int parca_one(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen)
{
	struct parca_ctx *c = ctx;
	struct cp_profile *p;
	size_t i;

	for (i = 0; i < labels->n; i++)
		if (!labels->kv[i].name || !labels->kv[i].value)
			abort();
	p = cp_pprof_decode(raw, rawlen);
	if (p && c->calls % 2) { /* as /ingest takes a pprof: split by what it measures */
		struct cp_pyro_part *parts;
		size_t n, k, t;

		if (!cp_pyro_split(p, c->calls % 4 == 1 ? "block" : "cpu", &parts, &n)) {
			for (k = 0; k < n; k++) {
				char type[512];

				if (!parts[k].profile->ntypes)
					abort(); /* no empty part */
				for (t = 0; t < parts[k].profile->ntypes; t++)
					cp_store_type_name(parts[k].profile, (int)t, parts[k].name, type, sizeof(type));
			}
			cp_pyro_parts_free(parts, n);
			p = NULL; /* the parts had it */
		}
	}
	cp_profile_free(p);
	/* stop early now and then, as the server does on a bad profile */
	return ++c->calls == 5 ? -ECANCELED : 0;
}

static void writeraw(const uint8_t *data, size_t len)
{
	struct parca_ctx c = { 0 };

	cp_parca_writeraw((const char *)data, len, parca_one, &c);
}

static void base64(const uint8_t *data, size_t len)
{
	uint8_t *out = NULL, *again = NULL;
	char *enc = NULL;
	size_t olen = 0, elen = 0, alen = 0;

	if (cp_base64_decode((const char *)data, len, &out, &olen))
		return;
	/* what decodes must encode and decode back to the same bytes */
	if (!cp_base64_encode(out, olen, &enc, &elen)) {
		if (cp_base64_decode(enc, elen, &again, &alen) || alen != olen || (olen && memcmp(again, out, olen)))
			abort();
	}
	free(again);
	free(enc);
	free(out);
}

static void nodes(const uint8_t *data, size_t len, int tree)
{
	struct cp_pyro_type t;
	struct cp_profile *p;
	char *text;
	size_t tlen;

	if (cp_pyro_nodes_folded(data, len, tree, &text, &tlen))
		return;
	if (!tlen || strlen(text) != tlen || text[tlen - 1] != '\n')
		abort(); /* whole lines of text, no NUL */
	cp_pyro_type("cpu", NULL, &t);
	p = cp_pyro_decode_text(text, tlen, 0, &t, 100, 1700000000000000000LL, 1700000010000000000LL);
	cp_profile_free(p);
	free(text);
}

static void stc(const uint8_t *data, size_t len)
{
	struct cp_pyro_stc c;

	if (cp_pyro_stc_parse((const char *)data, len, &c))
		return;
	/* each type once (duplicates are refused): its lookup finds its own entry */
	for (size_t i = 0; i < c.n; i++)
		if (!c.e[i].type || cp_pyro_stc_display(&c, c.e[i].type) != c.e[i].display)
			abort();
	cp_pyro_stc_free(&c);
}

/* a JFR push's labels part (cp_jfr_label_contexts) over a profile whose samples have contexts 1 to 4
 * (and one none): an accepted part keeps every sample's value */
static void jfr_labels(const uint8_t *data, size_t len)
{
	struct cp_profile *p = cp_profile_new();
	int64_t key, fn, loc, st, total = 0;
	struct cp_function f = { 0 };
	struct cp_line ln = { 0 };

	if (!p || cp_profile_add_sample_type(p, "wall", "nanoseconds") || (key = cp_profile_str(p, "contextId")) < 0 ||
	    (f.name = (uint32_t)cp_profile_str(p, "f")) == 0 || (fn = cp_profile_function(p, &f)) < 0)
		goto out;
	ln.function = (uint32_t)fn;
	if ((loc = cp_profile_location(p, 0, 0, &ln, 1, false)) < 0 ||
	    (st = cp_profile_stack(p, (const uint32_t[]){ (uint32_t)loc }, 1)) < 0)
		goto out;
	for (int c = 0; c <= 4; c++) {
		struct cp_label l = { .key = (uint32_t)key, .num = c };
		int64_t ls = c ? cp_profile_labelset(p, &l, 1) : 0, v = 10 + c;

		if (ls < 0 || cp_profile_add_sample(p, (uint32_t)st, (uint32_t)ls, &v))
			goto out;
		total += v;
	}
	if (!cp_jfr_label_contexts(&p, data, len) && cp_profile_total(p, 0) != total)
		abort();
out:
	cp_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t which;

	if (!len)
		return 0;
	which = data[0];
	data++;
	len--;
	switch (which) {
	case 0: name(data, len); break;
	case 1: text(data, len, 0); break;
	case 2: text(data, len, 1); break;
	case 3: writeraw(data, len); break;
	case 4: base64(data, len); break;
	case 5: nodes(data, len, 0); break;
	case 6: nodes(data, len, 1); break;
	case 7: stc(data, len); break;
	case 8: jfr_labels(data, len); break;
	default:
		name(data, len);
		text(data, len, 0);
		text(data, len, 1);
		writeraw(data, len);
		base64(data, len);
		nodes(data, len, 0);
		nodes(data, len, 1);
		stc(data, len);
		jfr_labels(data, len);
		break;
	}
	return 0;
}
