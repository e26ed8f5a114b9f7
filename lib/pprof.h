/* SPDX-License-Identifier: MIT */
/* pprof (perftools.profiles.Profile) decode and encode, gzip or raw.
 * Decoding makes a new profile the caller owns (or merges into the caller's);
 * every index the file carries is checked, and a failure is NULL/-errno with
 * the reason in cp_errmsg().  Encoding gives a malloc'ed buffer. */
#ifndef CP_PPROF_H
#define CP_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gzip.h"
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


#endif
