/* SPDX-License-Identifier: MIT */
/* The store backends (backends.h): one row each. */
#include "backends.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "../error.h"
#include "../util.h"

static const char *const local_schemes[] = { "file", NULL };
static const char *const remote_schemes[] = { "http", "https", NULL };

const struct cp_store_backend cp_store_backends[] = {
	{ "local", local_schemes, cp_store_open_local_uri },
	{ "remote", remote_schemes, cp_store_open_remote_uri },
	{ NULL, NULL, NULL },
};

/* The length of uri's scheme when it is "SCHEME://..." (RFC 3986: a letter, then letters, digits,
 * '+', '-', '.'), else 0: a path. */
static size_t scheme_len(const char *uri)
{
	const char *sep = strstr(uri, "://");

	if (!sep || sep == uri || !isalpha((unsigned char)uri[0]))
		return 0;
	for (const char *p = uri; p < sep; p++)
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return 0;
	return (size_t)(sep - uri);
}

const struct cp_store_backend *cp_store_backend_find(const char *uri)
{
	size_t n = scheme_len(uri);

	if (!n)
		return &cp_store_backends[0];
	for (const struct cp_store_backend *b = cp_store_backends; b->name; b++)
		for (const char *const *s = b->schemes; *s; s++)
			if (strlen(*s) == n && !strncasecmp(*s, uri, n))
				return b;
	return NULL;
}

struct cp_store *cp_store_open_uri(const char *uri, const struct cp_store_open_opts *o)
{
	static const struct cp_store_open_opts none = { .mode = CP_STORE_READ };
	const struct cp_store_backend *b = cp_store_backend_find(uri);

	if (!b) {
		const char *names[8];
		char list[128];
		size_t n = 0;

		for (b = cp_store_backends; b->name; b++)
			for (const char *const *s = b->schemes; *s && n < 8; s++)
				names[n++] = *s;
		cp_join_names(names, n, list, sizeof(list));
		errno = -cp_error(EINVAL, "unknown store scheme '%.*s://': the schemes are %s (or give a path)",
				  (int)(scheme_len(uri) > 32 ? 32 : scheme_len(uri)), uri, list);
		return NULL;
	}
	return b->open(uri, o ? o : &none);
}
