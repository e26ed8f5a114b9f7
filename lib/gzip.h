/* SPDX-License-Identifier: MIT */
/* gzip in memory, for pprof files and HTTP bodies, and zlib streams for the
 * store's blocks and dictionary: compressed by libdeflate, gzip inflated by zlib
 * (a stream, bounded), zlib streams by libdeflate (whole).  The caller owns
 * what *out points to (malloc'ed) on success; on failure nothing is
 * allocated and the message is in cp_errmsg(): -ENOMEM, -EIO (zlib
 * failed), -EINVAL (corrupt or cut short), -EFBIG (over max), or the
 * reserve callback's code. */
#ifndef CP_GZIP_H
#define CP_GZIP_H

#include <stddef.h>
#include <stdint.h>

/* cp_gzip compresses (libdeflate's fastest level, 1); cp_gunzip accepts concatenated
 * members and refuses output above max. */
int cp_gzip(const void *in, size_t len, uint8_t **out, size_t *outlen);
int cp_gunzip(const void *in, size_t len, size_t max, uint8_t **out, size_t *outlen);
/* The same, calling reserve(+n, what it holds) before it grows its buffer
 * by n bytes and reserve(-all it reserved, ...) before it returns; a nonzero
 * (-errno) return from reserve stops it with that error. */
int cp_gunzip_reserve(const void *in, size_t len, size_t max, int (*reserve)(ptrdiff_t delta, size_t mine),
		      uint8_t **out, size_t *outlen);
/* zlib's format (what uncompress() reads) at libdeflate's level (1..12; zlib's
 * Z_DEFAULT_COMPRESSION and others outside it: 6), by libdeflate: smaller than
 * zlib's at the same level and faster (the recorder's store writes spent 6% of
 * its CPU in a storm in zlib's deflate); its compressors, whose set-up costs
 * more than a small blob's compression, are kept for the next call (a few per
 * level, shared by the threads).  -ENOMEM, -EIO, or -EFBIG (over 1 GiB). */
int cp_zlib_compress(const void *in, size_t len, int level, uint8_t **out, size_t *outlen);
/* Inflates zlib's format (what cp_zlib_compress writes) into out, which it must fill exactly
 * (outlen bytes: the store keeps each blob's length), with libdeflate: whole-buffer inflating at
 * twice zlib's speed, which a query of a fleet's day spends a fifth of its time in.  0, or
 * -EBADMSG (corrupt, or not outlen bytes) or -ENOMEM, with a general message: the caller says
 * which blob is bad. */
int cp_zlib_inflate_exact(const void *in, size_t len, void *out, size_t outlen);
/* Does data start with gzip's magic? */
static inline int cp_is_gzip(const void *data, size_t len)
{
	const unsigned char *d = data;
	return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

#endif
