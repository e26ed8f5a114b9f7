/* SPDX-License-Identifier: MIT */
/* gzip in memory with zlib: compress, and inflate with a bound on the output
 * (and an optional shared budget, lib/decode_limits.c). */
#include "gzip.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <libdeflate.h>
#include <string.h>
#include <zlib.h>

#include "error.h"
#include "util.h"

/* The window and hash sizes for len bytes: a window that holds the whole
 * input finds every match a bigger one would, and the hash table grows with
 * it.  zlib's defaults (32 KiB, memLevel 8) set up about 256 KiB of state,
 * which malloc maps and unmaps at every call. */
static void sized_window(size_t len, int *wbits, int *mem)
{
	*wbits = 9;
	while (*wbits < 15 && ((size_t)1 << *wbits) < len)
		(*wbits)++;
	*mem = *wbits - 6 > 8 ? 8 : *wbits - 6;
}

int cp_zlib_compress(const void *in, size_t len, int level, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	int wbits, mem, r;
	uint8_t *buf;
	size_t cap;

	if (len > 1u << 30)
		return cp_error(EFBIG, "%zu bytes is too much to compress at once", len);
	sized_window(len, &wbits, &mem);
	if (deflateInit2(&z, level, Z_DEFLATED, wbits, mem, Z_DEFAULT_STRATEGY) != Z_OK)
		return cp_error(ENOMEM, "cannot start zlib compression");
	cap = deflateBound(&z, len);
	if (!(buf = malloc(cap ? cap : 1))) {
		deflateEnd(&z);
		return cp_error(ENOMEM, "out of memory compressing %zu bytes", len);
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	r = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(buf);
		return cp_error(EIO, "zlib compression failed (%d)", r);
	}
	*out = buf;
	return 0;
}

int cp_gzip(const void *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	uint8_t *buf = NULL;
	size_t cap;
	int err = 0, wbits, mem;

	sized_window(len, &wbits, &mem);
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, wbits + 16, mem, Z_DEFAULT_STRATEGY) != Z_OK)
		return cp_error(ENOMEM, "cannot start gzip compression");
	cap = deflateBound(&z, len) + 32;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	z.next_in = (Bytef *)in;
	z.next_out = buf;
	/* zlib counts in uInt: feed in slices */
	for (;;) {
		size_t in_left = len - (size_t)((const uint8_t *)z.next_in - (const uint8_t *)in);
		int r;

		z.avail_in = in_left > 1u << 30 ? 1u << 30 : (uInt)in_left;
		z.avail_out = cap - (size_t)(z.next_out - buf) > 1u << 30 ? 1u << 30 : (uInt)(cap - (size_t)(z.next_out - buf));
		r = deflate(&z, z.avail_in == in_left ? Z_FINISH : Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r != Z_OK && r != Z_BUF_ERROR) {
			err = cp_error(EIO, "gzip compression failed");
			goto out;
		}
	}
	*outlen = (size_t)(z.next_out - buf);
	*out = buf;
	buf = NULL;
out:
	deflateEnd(&z);
	free(buf);
	return err;
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
