/* SPDX-License-Identifier: MIT */
/* Parca's push (POST /api/profiles/writeraw, docs/API.md): a JSON body of
 * series, each with its labels and raw (base64 pprof) profiles; and the
 * decoder of protocol.c's row. */
#include <errno.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "decode_limits.h"
#include "error.h"
#include "ingest/protocol.h"
#include "pprof.h"
#include "selector.h"

int cp_parca_writeraw(const char *body, size_t len,
		      int (*fn)(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen),
		      void *ctx)
{
	json_error_t je;
	json_t *root, *series, *s;
	size_t i, j, k;
	int err = cp_json_bounded(body, len, "the body");

	if (err)
		return err;
	root = json_loadb(body, len, 0, &je);
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

/* ---- the decoder of POST /api/profiles/writeraw ---- */

static int parca_one(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen)
{
	struct cp_ingest_batch *b = ctx;
	struct cp_store_append a = { 0 };
	struct cp_profile *p;
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
	/* decoded within the limits of lib/decode_limits.h */
	if (!(p = cp_pprof_decode(raw, rawlen))) {
		err = cp_error_ctx(errno, "rawProfile %zu", b->n);
		goto fail;
	}
	if ((err = cp_ingest_batch_add(b, p, &a, &ls, name))) {
		cp_profile_free(p);
		goto fail;
	}
	b->profiles++;
	b->samples += p->nsamples;
	return 0;
fail:
	free(name);
	cp_labels_release(&ls);
	return err;
}

int cp_ingest_parca(struct cp_req *r, struct cp_ingest_batch *b)
{
	const uint8_t *body;
	size_t len;
	int err;

	body = cp_req_body(r, &len);
	if ((err = cp_parca_writeraw((const char *)body, len, parca_one, b)))
		return err;
	if (!b->n)
		return cp_error(EINVAL, "the body holds no profiles (series[].samples[].rawProfile)");
	b->bytes = len;
	return 0;
}
