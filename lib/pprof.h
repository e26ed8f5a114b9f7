/* SPDX-License-Identifier: MIT */
/* pprof (perftools.profiles.Profile) decode and encode, gzip or raw. */
#ifndef CP_PPROF_H
#define CP_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* Largest raw (not gzipped) profile file read; what a gzipped one may
 * inflate to is max_decompressed of lib/decode_limits.h. */
#define CP_PPROF_MAX_SIZE ((size_t)1 << 30)

/* Decode a profile from memory (gzip sniffed by its magic). NULL + errno,
 * with the reason in cp_errmsg(): EFBIG over a limit of lib/decode_limits.h
 * (checked on the wire format before anything is unpacked), EBUSY when the
 * bodies other threads are inflating take the shared budget. */
struct cp_profile *cp_pprof_decode(const void *data, size_t len);
/* Decode and merge into dst (pprof merge semantics; an empty dst takes the
 * file's header).  On error dst may hold part of the file: discard it. */
int cp_pprof_decode_into(struct cp_profile *dst, const void *data, size_t len);
/* Encode; *out is malloc'ed. gzip: compress. 0 or -errno. */
int cp_pprof_encode(const struct cp_profile *p, int gzip, uint8_t **out, size_t *outlen);

/* gzip helpers (zlib). cp_gunzip accepts concatenated members and refuses
 * output above max. */
int cp_gzip(const void *in, size_t len, uint8_t **out, size_t *outlen);
int cp_gunzip(const void *in, size_t len, size_t max, uint8_t **out, size_t *outlen);
/* The same, calling reserve(+n, what it holds) before it grows its buffer
 * by n bytes and reserve(-all it reserved, ...) before it returns; a nonzero
 * (-errno) return from reserve stops it with that error. */
int cp_gunzip_reserve(const void *in, size_t len, size_t max, int (*reserve)(ptrdiff_t delta, size_t mine),
		      uint8_t **out, size_t *outlen);
static inline int cp_is_gzip(const void *data, size_t len)
{
	const unsigned char *d = data;
	return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

#endif
