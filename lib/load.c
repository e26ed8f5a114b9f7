/* SPDX-License-Identifier: MIT */
#include "load.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>

#include "decode_limits.h"
#include "error.h"
#include "folded.h"
#include "jfr.h"
#include "pprof.h"
#include "util.h"

enum cp_format cp_sniff_format(const void *data, size_t len)
{
	const unsigned char *d = data;
	size_t i, n = len < 4096 ? len : 4096;

	if (!len)
		return CP_FORMAT_PPROF;
	if (cp_jfr_is(data, len))
		return CP_FORMAT_JFR;
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
		err = cp_gunzip_limited(data, len, &raw, &rawlen);
		if (err) {
			errno = -err;
			return NULL;
		}
		data = raw;
		len = rawlen;
	}
	switch (cp_sniff_format(data, len)) {
	case CP_FORMAT_FOLDED:
		p = cp_folded_decode(data, len);
		break;
	case CP_FORMAT_JFR:
		if ((err = cp_jfr_decode(data, len, &p)))
			errno = -err;
		break;
	default:
		p = cp_pprof_decode(data, len);
	}
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

void cp_load_parts_free(struct cp_load_part *parts, size_t n)
{
	for (size_t i = 0; parts && i < n; i++)
		cp_profile_free(parts[i].profile);
	free(parts);
}

int cp_profile_load_parts(const char *path, struct cp_load_part **parts, size_t *n)
{
	struct cp_jfr_part *jp = NULL;
	struct cp_load_part *out = NULL;
	uint8_t *data = NULL, *raw = NULL;
	size_t len = 0, rawlen, njp = 0, i;
	int err;

	*parts = NULL;
	*n = 0;
	cp_error_clear();
	if ((err = cp_read_file(path, CP_PPROF_MAX_SIZE, &data, &len)))
		return err;
	if (cp_is_gzip(data, len)) {
		if ((err = cp_gunzip_limited(data, len, &raw, &rawlen))) {
			cp_error_ctx(err, "%s", path);
			goto out;
		}
	} else {
		raw = data;
		rawlen = len;
		data = NULL;
	}
	if (!cp_jfr_is(raw, rawlen)) {
		if (!(out = calloc(1, sizeof(*out)))) {
			err = cp_error(ENOMEM, "out of memory reading %s", path);
			goto out;
		}
		if (!(out[0].profile = cp_profile_decode(raw, rawlen))) {
			err = cp_error_ctx(errno, "%s", path);
			goto out;
		}
		*n = 1;
		goto out;
	}
	if ((err = cp_jfr_to_parts(raw, rawlen, &jp, &njp))) {
		cp_error_ctx(err, "%s", path);
		goto out;
	}
	if (!njp) {
		err = cp_error(EINVAL, "%s: the recording has none of the events cprof reads (jdk.ExecutionSample, "
				       "jdk.ObjectAllocationSample, jdk.JavaMonitorEnter, jdk.ThreadPark...)", path);
		goto out;
	}
	if (!(out = calloc(njp, sizeof(*out)))) {
		err = cp_error(ENOMEM, "out of memory reading %s", path);
		goto out;
	}
	for (i = 0; i < njp; i++) {
		out[i].profile = jp[i].profile;
		out[i].name = jp[i].name;
		jp[i].profile = NULL;
	}
	*n = njp;
out:
	cp_jfr_parts_free(jp, njp);
	free(data);
	free(raw);
	if (err) {
		cp_load_parts_free(out, *n);
		*n = 0;
		return err;
	}
	*parts = out;
	return 0;
}

/* Adds one file to *acc (creating it from the first file). */
static int load_into(struct cp_profile **acc, const char *path, const char *first)
{
	struct cp_profile *q = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	int err;

	err = cp_read_file(path, CP_PPROF_MAX_SIZE, &data, &len);
	if (err)
		return err;
	if (!*acc) {
		*acc = cp_profile_decode(data, len);
		err = *acc ? 0 : -errno;
		if (err)
			cp_error_ctx(err, "%s", path);
		goto out;
	}
	if (cp_is_gzip(data, len) && len > 2) {
		/* pprof straight into the accumulator; folded text via a profile */
		uint8_t *raw = NULL;
		size_t rawlen;

		err = cp_gunzip_limited(data, len, &raw, &rawlen);
		if (err) {
			cp_error_ctx(err, "%s", path);
			goto out;
		}
		free(data);
		data = raw;
		len = rawlen;
	}
	if (cp_sniff_format(data, len) == CP_FORMAT_PPROF) {
		err = cp_pprof_decode_into(*acc, data, len);
		if (err == -EINVAL && strstr(cp_errmsg(err), "incompatible"))
			cp_error_ctx(err, "cannot merge %s with %s", path, first);
		else if (err)
			cp_error_ctx(err, "%s", path);
		goto out;
	}
	if (cp_sniff_format(data, len) == CP_FORMAT_JFR) {
		if ((err = cp_jfr_decode(data, len, &q))) {
			cp_error_ctx(err, "%s", path);
			goto out;
		}
	} else
		q = cp_folded_decode((const char *)data, len);
	if (!q) {
		err = cp_error_ctx(errno, "%s", path);
		goto out;
	}
	err = cp_profile_merge(*acc, q, NULL);
	if (err)
		cp_error_ctx(err, "cannot merge %s with %s", path, first);
out:
	cp_profile_free(q);
	free(data);
	return err;
}

struct chunk {
	char *const *paths;
	int n;
	const char *first;
	struct cp_profile *acc;
	int err;
	char msg[1024];
};

static void *load_chunk(void *arg)
{
	struct chunk *c = arg;
	int i;

	for (i = 0; i < c->n && !c->err; i++)
		c->err = load_into(&c->acc, c->paths[i], c->first);
	if (c->err)
		snprintf(c->msg, sizeof(c->msg), "%s", cp_errmsg(c->err));
	return NULL;
}

struct cp_profile *cp_profile_load_many(char *const *paths, int n, int nthreads)
{
	struct chunk *chunks;
	pthread_t *tids;
	struct cp_profile *p = NULL;
	int i, err = 0, started = 0;

	if (n <= 0) {
		cp_error(EINVAL, "no profiles to load");
		errno = EINVAL;
		return NULL;
	}
	if (nthreads <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = cpus > 0 ? (int)cpus : 1;
	}
	if (nthreads > n / 2)
		nthreads = n / 2 ? n / 2 : 1; /* a thread is worth it for two files or more */
	if (nthreads > 64)
		nthreads = 64;
	chunks = calloc((size_t)nthreads, sizeof(*chunks));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!chunks || !tids) {
		free(chunks);
		free(tids);
		cp_error(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < nthreads; i++) {
		int from = (int)((long)n * i / nthreads), to = (int)((long)n * (i + 1) / nthreads);

		chunks[i].paths = paths + from;
		chunks[i].n = to - from;
		chunks[i].first = paths[0];
	}
	for (i = 1; i < nthreads; i++) {
		if (pthread_create(&tids[i], NULL, load_chunk, &chunks[i]))
			break;
		started = i;
	}
	/* the calling thread takes the first chunk, and any that did not start */
	load_chunk(&chunks[0]);
	for (i = started + 1; i < nthreads; i++)
		load_chunk(&chunks[i]);
	for (i = 1; i <= started; i++)
		pthread_join(tids[i], NULL);
	for (i = 0; i < nthreads; i++) {
		if (!err && chunks[i].err) {
			err = chunks[i].err;
			cp_error(err, "%s", chunks[i].msg);
		}
		if (!err && i > 0) {
			err = cp_profile_merge(chunks[0].acc, chunks[i].acc, NULL);
			if (err)
				cp_error_ctx(err, "cannot merge %s with %s", chunks[i].paths[0], paths[0]);
		}
		if (i > 0)
			cp_profile_free(chunks[i].acc);
	}
	if (!err)
		p = chunks[0].acc;
	else
		cp_profile_free(chunks[0].acc);
	free(chunks);
	free(tids);
	if (!p)
		errno = -err;
	return p;
}
