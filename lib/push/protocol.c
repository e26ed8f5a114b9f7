/* SPDX-License-Identifier: MIT */
/* The push protocols (protocol.h): one row each. */
#include "push/protocol.h"

#include <string.h>

#include "util.h"

const struct cp_push_protocol cp_push_protocols[] = {
	{ "cprof", "/healthz", false, cp_push_target_cprof, NULL, NULL },
	{ "pyroscope", "/ready", true, cp_push_target_pyroscope, NULL, NULL },
	/* OTLP has no GET to ping */
	{ "otlp", NULL, false, cp_push_target_otlp, cp_otlp_encode, cp_push_otlp_headers },
	{ NULL, NULL, false, NULL, NULL, NULL },
};

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
