/* SPDX-License-Identifier: MIT */
/* The push protocols (protocol.h): one row each. */
#include "push/protocol.h"

#include <string.h>

#include "util.h"

const struct cp_push_protocol cp_push_protocols[] = {
	{ .name = "cprof", .ping_path = "/healthz", .target = cp_push_target_cprof },
	{ .name = "pyroscope", .ping_path = "/ready", .service = true, .tenant = true,
	  .target = cp_push_target_pyroscope },
	/* OTLP has no GET to ping */
	{ .name = "otlp", .service = true, .tenant = true, .target = cp_push_target_otlp, .encode = cp_otlp_encode,
	  .headers = cp_push_otlp_headers },
	{ .name = NULL },
};

static const char *label_of(const struct cp_store_append *a, const char *name)
{
	for (size_t i = 0; name && i < a->nlabels; i++)
		if (!strcmp(a->labels[i].name, name))
			return a->labels[i].value;
	return NULL;
}

const char *cp_push_service(const struct cp_push_opts *o, const struct cp_store_append *a)
{
	static const char *const fallback[] = { "service_name", "job", "comm" };
	const char *service = label_of(a, o->service_label ? o->service_label : "comm");

	for (size_t i = 0; (!service || !*service) && i < sizeof(fallback) / sizeof(fallback[0]); i++)
		service = label_of(a, fallback[i]);
	return service && *service ? service : "cprof";
}

const struct cp_push_protocol *cp_push_protocol_find(const char *name)
{
	if (!name)
		return &cp_push_protocols[0];
	for (const struct cp_push_protocol *p = cp_push_protocols; p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

const char *cp_push_protocol_names(char *buf, size_t size)
{
	const char *names[8];
	size_t n = 0;

	for (const struct cp_push_protocol *p = cp_push_protocols; p->name && n < 8; p++)
		names[n++] = p->name;
	return cp_join_names(names, n, buf, size);
}
