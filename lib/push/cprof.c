/* SPDX-License-Identifier: MIT */
/* cprof's own push (docs/API.md, POST /api/v1/push): the series labels as
 * query arguments, name= the type name and time= the nanoseconds. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "http/client.h"
#include "push/protocol.h"

int cp_push_target_cprof(const struct cp_push_opts *o, const struct cp_store_append *a, char **q)
{
	char t[32];
	int err;

	(void)o;
	*q = NULL;
	if (a->name && (err = cp_http_query_add(q, "name", a->name)))
		return err;
	if (a->time_ns) {
		snprintf(t, sizeof(t), "%" PRId64, a->time_ns);
		if ((err = cp_http_query_add(q, "time", t)))
			return err;
	}
	for (size_t i = 0; i < a->nlabels; i++) {
		if (!strcmp(a->labels[i].name, "name") || !strcmp(a->labels[i].name, "time"))
			return cp_error(EINVAL, "a series label cannot be called '%s' when pushing to a server "
						"(the push API takes name and time for itself)",
					a->labels[i].name);
		if ((err = cp_http_query_add(q, a->labels[i].name, a->labels[i].value)))
			return err;
	}
	if (!*q && !(*q = strdup("")))
		return cp_error(ENOMEM, "out of memory");
	return 0;
}
