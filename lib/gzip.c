/* SPDX-License-Identifier: MIT */
/* gzip and zlib streams in memory: compressed whole by libdeflate, gzip inflated by zlib as a
 * stream with a bound on the output (and an optional shared budget, lib/decode_limits.c), zlib's
 * format inflated whole by libdeflate. */
#include "gzip.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>

#include "error.h"
#include "util.h"

/* libdeflate's compressors, kept for the next call (one costs from tens to hundreds of KB to set
 * up: a recorder compresses a few small blobs a second, a server's writer many): a few per level,
 * taken and given back under a lock, as any thread may compress */
#define POOL_LEVELS 13
#define POOL_PER_LEVEL 4
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct libdeflate_compressor *pool[POOL_LEVELS][POOL_PER_LEVEL];
static int npool[POOL_LEVELS];

static struct libdeflate_compressor *take(int level)
{
	struct libdeflate_compressor *c = NULL;

	pthread_mutex_lock(&pool_lock);
	if (npool[level])
		c = pool[level][--npool[level]];
	pthread_mutex_unlock(&pool_lock);
	return c ? c : libdeflate_alloc_compressor(level);
}

static void give(int level, struct libdeflate_compressor *c)
{
	pthread_mutex_lock(&pool_lock);
	if (npool[level] < POOL_PER_LEVEL) {
		pool[level][npool[level]++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	libdeflate_free_compressor(c);
}

/* in as zlib's (gzip: false) or gzip's format at libdeflate's level (1..12) */
static int deflate_whole(const void *in, size_t len, int level, bool gzip, uint8_t **out, size_t *outlen)
{
	struct libdeflate_compressor *c;
	uint8_t *buf;
	size_t cap, n;

	if (len > 1u << 30)
		return cp_error(EFBIG, "%zu bytes is too much to compress at once", len);
	if (!(c = take(level)))
		return cp_error(ENOMEM, "cannot start compression");
	cap = gzip ? libdeflate_gzip_compress_bound(c, len) : libdeflate_zlib_compress_bound(c, len);
	if (!(buf = malloc(cap ? cap : 1))) {
		give(level, c);
		return cp_error(ENOMEM, "out of memory compressing %zu bytes", len);
	}
	n = gzip ? libdeflate_gzip_compress(c, in, len, buf, cap) : libdeflate_zlib_compress(c, in, len, buf, cap);
	give(level, c);
	if (!n) {
		free(buf);
		return cp_error(EIO, "compression failed");
	}
	*out = buf;
	*outlen = n;
	return 0;
}

int cp_zlib_compress(const void *in, size_t len, int level, uint8_t **out, size_t *outlen)
{
	return deflate_whole(in, len, level < 1 || level > 12 ? 6 : level, false, out, outlen);
}

int cp_gzip(const void *in, size_t len, uint8_t **out, size_t *outlen)
{
	return deflate_whole(in, len, 1, true, out, outlen);
}

int cp_gunzip(const void *in, size_t len, size_t max, uint8_t **out, size_t *outlen)
{
	return cp_gunzip_reserve(in, len, max, NULL, out, outlen);
}

int cp_gunzip_reserve(const void *in, size_t len, size_t max, int (*reserve)(ptrdiff_t delta, size_t mine),
		      uint8_t **out, size_t *outlen)
{
	const uint8_t *src = in;
	z_stream z = { 0 };
	uint8_t *buf = NULL, *nb;
	size_t cap = 0, n = 0, used = 0;
	int err = 0, r;
	char sz[32];

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return cp_error(ENOMEM, "cannot start gzip decompression");
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				err = cp_error(EFBIG, "decompressed data exceeds the %s limit", cp_size_str(max, sz, sizeof(sz)));
				goto out;
			}
			size_t want = cap ? cap * 2 : len * 4 + 4096;

			/* the gzip trailer holds the size (mod 2^32) of a single member */
			if (!cap && len >= 18) {
				const uint8_t *t = src + len - 4;
				size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;

				if (isize >= len / 2 && isize <= max)
					want = isize + 1;
			}
			if (want > max + 1) /* room for one byte over max, to see it is over */
				want = max + 1;
			if (reserve && (err = reserve((ptrdiff_t)(want - cap), cap)))
				goto out;
			if (!(nb = realloc(buf, want))) {
				if (reserve)
					reserve(-(ptrdiff_t)(want - cap), want);
				err = cp_error(ENOMEM, "out of memory decompressing");
				goto out;
			}
			buf = nb;
			cap = want;
		}
		z.next_in = (Bytef *)(src + used);
		z.avail_in = len - used > 1u << 30 ? 1u << 30 : (uInt)(len - used);
		z.next_out = buf + n;
		z.avail_out = cap - n > 1u << 30 ? 1u << 30 : (uInt)(cap - n);
		r = inflate(&z, Z_NO_FLUSH);
		used = (size_t)(z.next_in - src);
		n = (size_t)(z.next_out - buf);
		if (n > max) {
			err = cp_error(EFBIG, "decompressed data exceeds the %s limit", cp_size_str(max, sz, sizeof(sz)));
			goto out;
		}
		if (r == Z_STREAM_END) {
			if (used == len)
				break;
			if (!cp_is_gzip(src + used, len - used)) {
				err = cp_error(EINVAL, "unexpected data after the end of the gzip stream");
				goto out;
			}
			inflateReset(&z); /* another gzip member follows */
			continue;
		}
		if (r == Z_BUF_ERROR && used == len && z.avail_out) {
			err = cp_error(EINVAL, "truncated gzip data (the file is incomplete)");
			goto out;
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			err = cp_error(EINVAL, "corrupt gzip data: %s", z.msg ? z.msg : "inflate failed");
			goto out;
		}
	}
	*out = buf;
	*outlen = n;
	buf = NULL;
out:
	if (reserve && cap)
		reserve(-(ptrdiff_t)cap, cap);
	inflateEnd(&z);
	free(buf);
	return err;
}

int cp_zlib_inflate_exact(const void *in, size_t len, void *out, size_t outlen)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	enum libdeflate_result r;

	if (!d)
		return cp_error(ENOMEM, "out of memory inflating");
	r = libdeflate_zlib_decompress(d, in, len, out, outlen, NULL);
	libdeflate_free_decompressor(d);
	return r == LIBDEFLATE_SUCCESS ? 0 : cp_error(EBADMSG, "corrupt compressed data (or not %zu bytes)", outlen);
}
