/* SPDX-License-Identifier: MIT */
#include "base64.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int cp_base64_decode(const char *s, size_t len, uint8_t **out, size_t *outlen)
{
	gnutls_datum_t in, res = { NULL, 0 };
	char *copy = malloc(len + 4);
	size_t i, n = 0;
	int err;

	if (!copy)
		return cp_error(ENOMEM, "out of memory decoding base64 (%zu bytes)", len);
	for (i = 0; i < len; i++) { /* URL-safe to standard; whitespace dropped */
		char c = s[i];

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		copy[n++] = c == '-' ? '+' : c == '_' ? '/' : c;
	}
	while (n % 4)
		copy[n++] = '=';
	in.data = (unsigned char *)copy;
	in.size = (unsigned)n;
	if (n == 0) {
		free(copy);
		*out = malloc(1);
		*outlen = 0;
		return *out ? 0 : -ENOMEM;
	}
	err = gnutls_base64_decode2(&in, &res);
	free(copy);
	if (err < 0)
		return cp_error(EINVAL, "bad base64: %s", gnutls_strerror(err));
	*out = res.data;
	*outlen = res.size;
	return 0;
}

int cp_base64_encode(const uint8_t *d, size_t len, char **out, size_t *outlen)
{
	gnutls_datum_t in = { (unsigned char *)d, (unsigned)len }, res = { NULL, 0 };
	int err;

	if (len > (1u << 30))
		return cp_error(EFBIG, "too large to encode");
	if (!len) {
		*out = strdup("");
		*outlen = 0;
		return *out ? 0 : -ENOMEM;
	}
	if ((err = gnutls_base64_encode2(&in, &res)) < 0)
		return cp_error(ENOMEM, "base64: %s", gnutls_strerror(err));
	*out = (char *)res.data;
	*outlen = res.size;
	return 0;
}

/* gnutls allocates with gnutls_malloc, which is malloc unless an
 * application replaced it; cprof does not */
