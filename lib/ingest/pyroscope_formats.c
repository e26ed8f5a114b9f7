/* SPDX-License-Identifier: MIT */
/* The bodies POST /ingest takes besides pprof, folded and lines
 * (pyroscope.c): Pyroscope's legacy binary "trie" and "tree" uploads (older
 * agents, pyroscope-rs), each turned into folded text; the
 * sample_type_config part of a multipart pprof push; and the JFR hook. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode_limits.h"
#include "error.h"
#include "gzip.h"
#include "ingest/protocol.h"
#include "jfr.h"
#include "util.h"
#include "jfr/labels.pb-c.h"

/* ---- trie and tree: preorder nodes of (varint name length, name, varint
 * value, varint child count) ---- */

struct text_out {
	char *s;
	size_t n, cap;
};

static int out_add(struct text_out *o, const char *s, size_t n)
{
	size_t max = cp_decode_limits()->max_decompressed;

	if (o->n + n + 1 > max)
		return cp_decode_too_large(max);
	if (o->n + n + 1 > o->cap && cp_grow((void **)&o->s, &o->cap, o->n + n + 1, 1))
		return cp_error(ENOMEM, "out of memory");
	memcpy(o->s + o->n, s, n);
	o->n += n;
	o->s[o->n] = 0;
	return 0;
}

static int varint(const uint8_t *d, size_t len, size_t *pos, uint64_t *v, const char *what, const char *fmt)
{
	unsigned shift = 0;

	*v = 0;
	while (*pos < len) {
		uint8_t b = d[(*pos)++];

		if (shift == 63 && b > 1)
			return cp_error(EINVAL, "%s: a varint (%s) over 64 bits at byte %zu", fmt, what, *pos - 1);
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return cp_error(EINVAL, "%s: the body ends inside a node's %s (byte %zu)", fmt, what, *pos);
}

struct level {
	size_t keylen;  /* the key's length before this node's name */
	uint64_t left; /* its children still to come */
};

int cp_pyro_nodes_folded(const uint8_t *d, size_t len, int tree, char **text, size_t *tlen)
{
	const char *fmt = tree ? "tree" : "trie";
	struct text_out key = { 0 }, out = { 0 };
	struct level *lv = NULL;
	size_t nlv = 0, caplv = 0, pos = 0, nodes = 0, max = cp_decode_limits()->max_samples;
	int err = 0;

	*text = NULL;
	*tlen = 0;
	if (!len)
		return cp_error(EINVAL, "%s: the body is empty", fmt);
	while (pos < len) {
		uint64_t nlen, value, nchild;
		size_t before = key.n;

		if (++nodes > max) {
			err = cp_decode_too_many("nodes", max);
			goto out;
		}
		if ((err = varint(d, len, &pos, &nlen, "name length", fmt)))
			goto out;
		if (nlen > len - pos) {
			err = cp_error(EINVAL, "%s: a name of %" PRIu64 " bytes at byte %zu, past the body's end", fmt,
				       nlen, pos);
			goto out;
		}
		if (memchr(d + pos, '\n', nlen) || memchr(d + pos, '\r', nlen) || memchr(d + pos, 0, nlen)) {
			err = cp_error(EINVAL, "%s: a name at byte %zu holds a newline or NUL", fmt, pos);
			goto out;
		}
		/* a tree's names are frames below a root; a trie's are pieces of "a;b;c" */
		if (tree && nlv > 0 && key.n && (err = out_add(&key, ";", 1)))
			goto out;
		if ((!tree || nlv > 0) && (err = out_add(&key, (const char *)d + pos, nlen)))
			goto out;
		pos += nlen;
		if ((err = varint(d, len, &pos, &value, "value", fmt)) ||
		    (err = varint(d, len, &pos, &nchild, "child count", fmt)))
			goto out;
		if (value > INT64_MAX) {
			err = cp_error(EINVAL, "%s: a value of %" PRIu64 " is over 2^63-1", fmt, value);
			goto out;
		}
		if (value && key.n && (!tree || nlv > 0)) {
			char num[32];
			int k = snprintf(num, sizeof(num), " %" PRIu64 "\n", value);

			if ((err = out_add(&out, key.s, key.n)) || (err = out_add(&out, num, (size_t)k)))
				goto out;
		}
		if (nchild) {
			if (nchild > len - pos) { /* each child takes 3 bytes at least */
				err = cp_error(EINVAL, "%s: a node of %" PRIu64 " children at byte %zu, more than the body holds",
					       fmt, nchild, pos);
				goto out;
			}
			if (nlv == caplv && cp_grow((void **)&lv, &caplv, nlv + 1, sizeof(*lv))) {
				err = cp_error(ENOMEM, "out of memory");
				goto out;
			}
			lv[nlv].keylen = before;
			lv[nlv++].left = nchild;
			continue;
		}
		key.n = before; /* a leaf: back to its parent's key, and up past the finished parents */
		while (nlv && !--lv[nlv - 1].left)
			key.n = lv[--nlv].keylen;
	}
	if (nlv) {
		err = cp_error(EINVAL, "%s: the body ends with %" PRIu64 " children of a node still to come", fmt,
			       lv[nlv - 1].left);
		goto out;
	}
	if (!out.n) {
		err = cp_error(EINVAL, "%s: no stack has a value", fmt);
		goto out;
	}
	*text = out.s;
	*tlen = out.n;
	out.s = NULL;
out:
	free(out.s);
	free(key.s);
	free(lv);
	return err;
}

/* ---- sample_type_config: {"TYPE": {"display-name": ..., "units": ...,
 * "aggregation": ..., "cumulative": bool, "sampled": bool}, ...} ---- */

void cp_pyro_stc_free(struct cp_pyro_stc *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->e[i].type);
		free(c->e[i].display);
	}
	free(c->e);
	memset(c, 0, sizeof(*c));
}

const char *cp_pyro_stc_display(const struct cp_pyro_stc *c, const char *type)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (!strcmp(c->e[i].type, type))
			return c->e[i].display;
	return NULL;
}

#define STC_MAX_BYTES (64 * 1024)

int cp_pyro_stc_parse(const char *s, size_t len, struct cp_pyro_stc *out)
{
	json_error_t je;
	json_t *root, *v;
	const char *k;
	size_t cap = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (len > STC_MAX_BYTES)
		return cp_error(EFBIG, "sample_type_config: %zu bytes, over the %d taken", len, STC_MAX_BYTES);
	if (!(root = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je)))
		return cp_error(EINVAL, "sample_type_config: not JSON: %s (line %d)", je.text, je.line);
	if (!json_is_object(root)) {
		err = cp_error(EINVAL, "sample_type_config: not a JSON object of sample types");
		goto out;
	}
	json_object_foreach(root, k, v) {
		json_t *dn = json_object_get(v, "display-name"), *f;
		static const char *const strs[] = { "units", "aggregation" }, *const bools[] = { "cumulative", "sampled" };

		if (!json_is_object(v) || (dn && !json_is_string(dn))) {
			err = cp_error(EINVAL, "sample_type_config: '%.64s' is not an object with a string display-name", k);
			goto out;
		}
		for (size_t i = 0; i < 2; i++) {
			if ((f = json_object_get(v, strs[i])) && !json_is_string(f)) {
				err = cp_error(EINVAL, "sample_type_config: '%.64s': %s is not a string", k, strs[i]);
				goto out;
			}
			if ((f = json_object_get(v, bools[i])) && !json_is_boolean(f)) {
				err = cp_error(EINVAL, "sample_type_config: '%.64s': %s is not true or false", k, bools[i]);
				goto out;
			}
		}
		if (out->n == cap && cp_grow((void **)&out->e, &cap, out->n + 1, sizeof(*out->e))) {
			err = cp_error(ENOMEM, "out of memory");
			goto out;
		}
		out->e[out->n].type = strdup(k);
		out->e[out->n].display = dn && *json_string_value(dn) ? strdup(json_string_value(dn)) : NULL;
		out->n++;
		if (!out->e[out->n - 1].type || (dn && *json_string_value(dn) && !out->e[out->n - 1].display)) {
			err = cp_error(ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	json_decref(root);
	if (err)
		cp_pyro_stc_free(out);
	return err;
}

/* ---- JFR (format=jfr, or a multipart form with a "jfr" part) ---- */

/* ---- JFR's labels part: the context labels of its events ---- */

typedef Cprof__Jfr__LabelsSnapshot Snapshot;
static const Snapshot empty_snapshot = CPROF__JFR__LABELS_SNAPSHOT__INIT;

/* (map entries, sorted by key by read_snapshot and found by bsearch: a push may hold many) */
#define BY_KEY(name, Entry)                                            \
	static int name(const void *a, const void *b)                  \
	{                                                              \
		int64_t x = (*(Entry *const *)a)->key;                 \
		int64_t y = (*(Entry *const *)b)->key;                 \
		return x < y ? -1 : x > y;                             \
	}
BY_KEY(cmp_ctx, Cprof__Jfr__LabelsSnapshot__ContextsEntry)
BY_KEY(cmp_str_entry, Cprof__Jfr__LabelsSnapshot__StringsEntry)
#undef BY_KEY

static const char *snap_string(const Snapshot *s, int64_t id)
{
	Cprof__Jfr__LabelsSnapshot__StringsEntry k = { .key = id }, *kp = &k, **hit;

	hit = s->n_strings ? bsearch(&kp, s->strings, s->n_strings, sizeof(*s->strings), cmp_str_entry) : NULL;
	return hit ? (*hit)->value : NULL;
}

static const Cprof__Jfr__Context *snap_context(const Snapshot *s, int64_t id)
{
	Cprof__Jfr__LabelsSnapshot__ContextsEntry k = { .key = id }, *kp = &k, **hit;

	hit = s->n_contexts ? bsearch(&kp, s->contexts, s->n_contexts, sizeof(*s->contexts), cmp_ctx) : NULL;
	return hit ? (*hit)->value : NULL;
}

/* p's samples with a context id: its labels from s instead (none when s has no such context, as
 * Pyroscope), the other labels of the sample kept; samples that become alike summed (*p made
 * again).  A name or value id missing from the strings refuses the part (-EINVAL). */
static int label_contexts(struct cp_profile **p, const Snapshot *s)
{
	struct cp_profile *q = *p, *c;
	struct cp_label *buf = NULL;
	size_t cap = 0;
	int64_t key = -1;
	int err = 0;

	for (uint32_t k = 1; k < q->strs.n && key < 0; k++)
		if (!strcmp(cp_profile_string(q, k), CP_JFR_CONTEXT_LABEL))
			key = k;
	if (key < 0)
		return 0; /* no event had a context */
	for (uint32_t i = 0; i < q->nsamples && !err; i++) {
		const struct cp_span *ls = &q->labelsets[q->samples[i].labels];
		const Cprof__Jfr__Context *ctx = NULL;
		size_t n = 0, need;
		int64_t id;

		if (!q->samples[i].labels)
			continue;
		for (uint32_t j = 0; j < ls->len; j++)
			if (q->labels[ls->off + j].key == (uint32_t)key)
				ctx = snap_context(s, q->labels[ls->off + j].num);
		need = ls->len + (ctx ? ctx->n_labels : 0);
		if (cp_grow((void **)&buf, &cap, need + 1, sizeof(*buf))) {
			err = cp_error(ENOMEM, "out of memory");
			break;
		}
		for (uint32_t j = 0; j < ls->len; j++)
			if (q->labels[ls->off + j].key != (uint32_t)key)
				buf[n++] = q->labels[ls->off + j];
		for (size_t j = 0; ctx && j < ctx->n_labels && !err; j++) {
			const char *name = snap_string(s, ctx->labels[j]->key), *value = snap_string(s, ctx->labels[j]->value);
			int64_t nk, nv;

			if (!name || !value || !*name) {
				err = cp_error(EINVAL, "the labels part: a context's label refers to string %lld, which it "
						       "does not have", (long long)(!name || !*name ? ctx->labels[j]->key :
											  ctx->labels[j]->value));
				break;
			}
			if ((nk = cp_profile_str(q, name)) < 0 || (nv = cp_profile_str(q, value)) < 0) {
				err = cp_error(ENOMEM, "out of memory");
				break;
			}
			buf[n++] = (struct cp_label){ .key = (uint32_t)nk, .str = (uint32_t)nv };
		}
		if (!err && (id = cp_profile_labelset(q, buf, n)) < 0)
			err = (int)id;
		else if (!err)
			q->samples[i].labels = (uint32_t)id;
	}
	free(buf);
	if (err)
		return err;
	if (!(c = cp_profile_copy(q, NULL)))
		return cp_error(errno ? errno : ENOMEM, "out of memory");
	cp_profile_free(q);
	*p = c;
	return 0;
}

/* the labels part (gzipped or not) as a LabelsSnapshot, unpacked within the decode limits' memory */
static int read_snapshot(const uint8_t *buf, size_t len, Snapshot **out, struct cp_decode_budget *bud,
			 ProtobufCAllocator *alloc)
{
	uint8_t *raw = NULL;
	int err;

	*out = NULL;
	if (cp_is_gzip(buf, len)) {
		if ((err = cp_gunzip_limited(buf, len, &raw, &len)))
			return err;
		buf = raw;
	}
	*out = cprof__jfr__labels_snapshot__unpack(alloc, len, buf);
	free(raw);
	if (!*out)
		return bud->over ? cp_decode_too_large(bud->max) :
				   cp_error(EINVAL, "the labels part is not a LabelsSnapshot (protobuf)");
	if ((*out)->n_contexts)
		qsort((*out)->contexts, (*out)->n_contexts, sizeof(*(*out)->contexts), cmp_ctx);
	if ((*out)->n_strings)
		qsort((*out)->strings, (*out)->n_strings, sizeof(*(*out)->strings), cmp_str_entry);
	return 0;
}

int cp_jfr_label_contexts(struct cp_profile **p, const uint8_t *labels, size_t len)
{
	struct cp_decode_budget bud;
	ProtobufCAllocator alloc = { cp_decode_budget_alloc, cp_decode_budget_free, &bud };
	Snapshot *snap = NULL;
	int err;

	cp_decode_budget_init(&bud);
	if (labels && len && (err = read_snapshot(labels, len, &snap, &bud, &alloc)))
		return err;
	err = label_contexts(p, snap ? snap : &empty_snapshot);
	if (snap)
		protobuf_c_message_free_unpacked(&snap->base, &alloc);
	return err;
}

int cp_ingest_pyroscope_jfr(struct cp_req *r, struct cp_pyro_push *push, struct cp_ingest_batch *b)
{
	const uint8_t *body = push->body;
	size_t len = push->len;
	uint8_t *inflated = NULL;
	struct cp_jfr_part *parts = NULL;
	struct cp_decode_budget bud;
	ProtobufCAllocator alloc = { cp_decode_budget_alloc, cp_decode_budget_free, &bud };
	Snapshot *snap = NULL;
	const struct cp_kv *kv;
	size_t n = 0, nkv;
	int err;

	(void)r;
	cp_decode_budget_init(&bud);
	if (!len)
		return cp_error(EINVAL, "format=jfr: the recording is empty");
	if (cp_is_gzip(body, len)) { /* inflated within max_decompressed */
		if ((err = cp_gunzip_limited(body, len, &inflated, &len)))
			return err;
		body = inflated;
	}
	if (!cp_jfr_is(body, len)) {
		err = cp_error(EINVAL, "format=jfr: the body is not a JFR recording (no 'FLR' chunk magic)");
		goto out;
	}
	if ((err = cp_jfr_to_parts(body, len, &parts, &n))) {
		err = cp_error_ctx(-err, "format=jfr");
		goto out;
	}
	if (!n) {
		err = cp_error(EINVAL, "format=jfr: the recording has none of the events cprof reads "
				       "(jdk.ExecutionSample, wall-clock, allocation, monitor and park events)");
		goto out;
	}
	if (push->labels && push->labels_len &&
	    (err = read_snapshot(push->labels, push->labels_len, &snap, &bud, &alloc)))
		goto out;
	b->bytes = push->len;
	/* the labels' array, which the first append takes and the others share */
	kv = push->name->labels.kv;
	nkv = push->name->labels.n;
	for (size_t i = 0; i < n; i++) {
		/* each event type its own profile type, at the push's time */
		struct cp_store_append a = { 0 };

		a.labels = kv;
		a.nlabels = nkv;
		a.time_ns = push->from_ns;
		a.name = parts[i].name;
		/* the contexts' labels, or none: a context id alone means nothing past the push */
		if ((err = label_contexts(&parts[i].profile, snap ? snap : &empty_snapshot))) {
			err = cp_error_ctx(-err, "format=jfr");
			goto out;
		}
		parts[i].profile->time_nanos = push->from_ns;
		if (push->until_ns > push->from_ns)
			parts[i].profile->duration_nanos = push->until_ns - push->from_ns;
		b->profiles++;
		b->samples += parts[i].profile->nsamples;
		if ((err = cp_ingest_batch_add(b, parts[i].profile, &a, i ? NULL : &push->name->labels, NULL))) {
			b->internal = true;
			goto out;
		}
		parts[i].profile = NULL; /* the batch's */
	}
out:
	cp_jfr_parts_free(parts, n);
	free(inflated);
	if (snap)
		protobuf_c_message_free_unpacked(&snap->base, &alloc);
	return err;
}
