/* SPDX-License-Identifier: MIT */
#include "load.h"

#include <errno.h>
#include <stdlib.h>

#include "error.h"
#include "folded.h"
#include "pprof.h"
#include "util.h"

enum cp_format cp_sniff_format(const void *data, size_t len)
{
	const unsigned char *d = data;
	size_t i, n = len < 4096 ? len : 4096;

	if (!len)
		return CP_FORMAT_PPROF;
	for (i = 0; i < n; i++)
		if (d[i] < 0x09 || (d[i] > 0x0d && d[i] < 0x20) || d[i] == 0x7f)
			return CP_FORMAT_PPROF;
	return CP_FORMAT_FOLDED;
}

struct cp_profile *cp_profile_decode(const void *data, size_t len)
{
	struct cp_profile *p;
	uint8_t *raw = NULL;
	size_t rawlen;
	int err;

	if (cp_is_gzip(data, len)) {
		err = cp_gunzip(data, len, CP_PPROF_MAX_SIZE, &raw, &rawlen);
		if (err) {
			errno = -err;
			return NULL;
		}
		data = raw;
		len = rawlen;
	}
	if (cp_sniff_format(data, len) == CP_FORMAT_FOLDED)
		p = cp_folded_decode(data, len);
	else
		p = cp_pprof_decode(data, len);
	err = errno;
	free(raw);
	errno = err;
	return p;
}

struct cp_profile *cp_profile_load(const char *path)
{
	struct cp_profile *p;
	uint8_t *data = NULL;
	size_t len = 0;
	int err;

	cp_error_clear();
	err = cp_read_file(path, CP_PPROF_MAX_SIZE, &data, &len);
	if (err) {
		errno = -err;
		return NULL;
	}
	p = cp_profile_decode(data, len);
	if (!p) {
		err = errno;
		cp_error_ctx(err, "%s", path);
		errno = err;
	}
	free(data);
	return p;
}
