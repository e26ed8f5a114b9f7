/* SPDX-License-Identifier: MIT */
/* cprof's own push (docs/API.md, POST /api/v1/push): a pprof profile (gzip
 * or raw) as the body, the series labels as query arguments and
 * X-Cprof-Label headers, name= the type name and time= its time. */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "ingest/protocol.h"
#include "load.h"
#include "selector.h"
#include "util.h"

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

int cp_ingest_cprof(struct cp_req *r, struct cp_ingest_batch *b)
{
	struct push_labels pl = { { 0 }, 0 };
	struct cp_store_append a = { 0 };
	struct cp_profile *p = NULL;
	const uint8_t *body;
	int64_t t = 0;
	size_t len;
	int err;

	body = cp_req_body(r, &len);
	if (!len)
		return cp_error(EINVAL, "the body is empty: POST a pprof profile (gzip or raw)");
	if ((err = cp_ingest_time(r, "time", cp_now_ns(), &t)))
		return err;
	cp_req_args(r, push_arg, &pl);
	if (!pl.err)
		cp_req_headers(r, "X-Cprof-Label", push_header, &pl);
	if ((err = pl.err))
		goto out;
	/* decoded within the limits of lib/decode_limits.h (cp_gunzip_limited, cp_pprof_decode) */
	if (!(p = cp_profile_decode(body, len))) {
		err = cp_error_ctx(errno ? errno : EINVAL, "the body is not a profile");
		goto out;
	}
	a.name = cp_req_arg(r, "name");
	if (a.name && !*a.name)
		a.name = NULL;
	if (a.name && !cp_type_name_valid(a.name)) {
		err = cp_error(EINVAL, "name: '%.64s' takes letters, digits, '_', '.' and '-' (e.g. cpu)", a.name);
		goto out;
	}
	a.time_ns = t;
	if ((err = cp_ingest_batch_add(b, p, &a, &pl.l, NULL))) {
		b->internal = true;
		goto out;
	}
	b->profiles = 1;
	b->samples = p->nsamples;
	p = NULL; /* the batch's */
	b->bytes = len;
out:
	cp_profile_free(p);
	cp_labels_release(&pl.l);
	return err;
}
