/* SPDX-License-Identifier: MIT */
/* Pushing to Pyroscope's POST /ingest as its official clients do:
 * format=pprof, from and until (unix seconds: the interval),
 * name=SERVICE{service_name=SERVICE,k=v,...} (SERVICE is the value of
 * --service-label, else of service_name, job or comm, else "cprof"; the
 * other series labels are tags), spyName, and sampleRate for a profile
 * with a period in nanoseconds; the server names the types from the pprof's
 * sample types. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "http/client.h"
#include "push/protocol.h"
#include "selector.h"

/* s with Pyroscope's name syntax characters replaced, appended to f */
static void pyro_put(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(strchr(",{}", *s) ? '_' : *s, f);
}

int cp_pyro_name_format(const char *app, const struct cp_kv *labels, size_t n, char **out)
{
	size_t len = 0;
	FILE *f;

	*out = NULL;
	if (!(f = open_memstream(out, &len)))
		return cp_error(ENOMEM, "out of memory");
	pyro_put(f, app);
	fputs("{service_name=", f);
	pyro_put(f, app);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(labels[i].name, "service_name"))
			continue;
		fputc(',', f);
		pyro_put(f, labels[i].name);
		fputc('=', f);
		pyro_put(f, labels[i].value);
	}
	fputc('}', f);
	if (fclose(f) || !*out) {
		free(*out);
		*out = NULL;
		return cp_error(ENOMEM, "out of memory");
	}
	return 0;
}

int cp_push_target_pyroscope(const struct cp_push_opts *o, const struct cp_store_append *a, char **q)
{
	const char *service = cp_push_service(o, a), *skip;
	int64_t t = a->time_ns ? a->time_ns : a->profile->time_nanos ? a->profile->time_nanos : cp_now_ns();
	int64_t d = a->profile->duration_nanos;
	/* from and until: the interval in unix seconds, until at least a second after from */
	int64_t from = t / 1000000000, until = (t + (d > 0 ? d : 0) + 999999999) / 1000000000;
	struct cp_kv *tags;
	char *name = NULL, num[32];
	size_t n = 0;
	int err;

	skip = o->service_label ? o->service_label : "comm";
	if (until <= from)
		until = from + 1;
	if (!(tags = calloc(a->nlabels + 1, sizeof(*tags))))
		return cp_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i].name, skip))
			tags[n++] = a->labels[i];
	err = cp_pyro_name_format(service, tags, n, &name);
	free(tags);
	/* the arguments in the order the official Node.js client sends them */
	*q = NULL;
	if (!err)
		err = cp_http_query_add(q, "format", "pprof");
	if (!err) {
		snprintf(num, sizeof(num), "%" PRId64, from);
		err = cp_http_query_add(q, "from", num);
	}
	if (!err)
		err = cp_http_query_add(q, "name", name);
	if (!err)
		err = cp_http_query_add(q, "spyName", o->spy_name ? o->spy_name : "cprof");
	if (!err) {
		snprintf(num, sizeof(num), "%" PRId64, until);
		err = cp_http_query_add(q, "until", num);
	}
	if (!err && a->profile->period > 0 &&
	    !strcmp(cp_profile_string(a->profile, a->profile->period_type.unit), "nanoseconds")) {
		snprintf(num, sizeof(num), "%" PRId64, (int64_t)((1000000000 + a->profile->period / 2) / a->profile->period));
		err = cp_http_query_add(q, "sampleRate", num);
	}
	if (!err) {
		char *full = NULL;

		if (asprintf(&full, "/ingest?%s", *q) < 0)
			err = cp_error(ENOMEM, "out of memory");
		else {
			free(*q);
			*q = full;
		}
	}
	free(name);
	if (err) {
		free(*q);
		*q = NULL;
	}
	return err;
}
