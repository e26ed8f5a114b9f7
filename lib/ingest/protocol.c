/* SPDX-License-Identifier: MIT */
/* The ingest protocols (protocol.h): one row each; and what their decoders
 * share (the batch, time arguments). */
#include "ingest/protocol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "selector.h"
#include "util.h"

const struct cp_ingest_protocol cp_ingest_protocols[] = {
	/* native: cprof's own push (its api= label in /metrics since before the table) */
	{ .name = "native", .method = "POST", .path = "/api/v1/push", .route = "push", .decode = cp_ingest_cprof },
	{ .name = "pyroscope", .method = "POST", .path = "/ingest", .route = "pyroscope_ingest",
	  .decode = cp_ingest_pyroscope },
	{ .name = "parca", .method = "POST", .path = "/api/profiles/writeraw", .route = "parca_writeraw",
	  .decode = cp_ingest_parca, .answer = "{}\n" }, /* Parca answers {} */
	{ .name = "otlp", .method = "POST", .path = "/v1development/profiles", .route = "otlp_profiles",
	  .decode = cp_ingest_otlp, .respond = cp_otlp_respond },
	{ .name = NULL },
};

size_t cp_ingest_protocol_count(void)
{
	size_t n = 0;

	while (cp_ingest_protocols[n].name)
		n++;
	return n;
}

const struct cp_ingest_protocol *cp_ingest_protocol_at(const char *method, const char *path)
{
	for (const struct cp_ingest_protocol *p = cp_ingest_protocols; p->name; p++)
		if (!strcmp(p->method, method) && !strcmp(p->path, path))
			return p;
	return NULL;
}

int cp_ingest_time(struct cp_req *r, const char *param, int64_t now, int64_t *t)
{
	const char *v = cp_req_arg(r, param);
	int err;

	if (!v || !*v)
		return 0;
	if ((err = cp_parse_time(v, now, t)))
		return cp_error_ctx(-err, "%s", param);
	return 0;
}

int cp_ingest_batch_add(struct cp_ingest_batch *b, struct cp_profile *p, const struct cp_store_append *a,
			struct cp_labels *labels, char *name)
{
	if (b->n == b->cap) { /* the four arrays grow together, each to the same capacity */
		size_t cap = b->cap, cp = b->cap, cl = b->cap, cn = b->cap;

		if (cp_grow((void **)&b->a, &cap, b->n + 1, sizeof(*b->a)) ||
		    cp_grow((void **)&b->profiles_owned, &cp, cap, sizeof(*b->profiles_owned)) ||
		    cp_grow((void **)&b->labels, &cl, cap, sizeof(*b->labels)) ||
		    cp_grow((void **)&b->names, &cn, cap, sizeof(*b->names)))
			return cp_error(ENOMEM, "out of memory");
		b->cap = cap;
	}
	b->a[b->n] = *a;
	b->a[b->n].profile = b->profiles_owned[b->n] = p;
	memset(&b->labels[b->n], 0, sizeof(b->labels[b->n]));
	if (labels) {
		b->labels[b->n] = *labels;
		memset(labels, 0, sizeof(*labels));
		b->a[b->n].labels = b->labels[b->n].kv;
		b->a[b->n].nlabels = b->labels[b->n].n;
	}
	b->names[b->n] = name;
	if (name)
		b->a[b->n].name = name;
	b->n++;
	return 0;
}

void cp_ingest_batch_release(struct cp_ingest_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		cp_profile_free(b->profiles_owned[i]);
		cp_labels_release(&b->labels[i]);
		free(b->names[i]);
	}
	free(b->a);
	free(b->profiles_owned);
	free(b->labels);
	free(b->names);
	memset(b, 0, sizeof(*b));
}
