/* SPDX-License-Identifier: MIT */
/* Bounds on decoding untrusted profile data: how far a gzip body may
 * inflate, how many samples and locations one profile may hold, and how many
 * JSON objects and values a JSON body may hold.  A few kilobytes of gzip can
 * inflate to gigabytes, and an empty pprof Sample record is 2 bytes on the
 * wire but a hundred-odd bytes once unpacked: without these a small request
 * could take all the memory of the process that decodes it.
 *
 * cp_gunzip's callers, cp_pprof_decode*, cp_folded_decode, Parca's writeraw
 * JSON and the decoders built on them (each ingest protocol's,
 * lib/ingest/protocol.h) read the limits in force; a body over one fails
 * with -EFBIG and a message naming the limit (cprof serve answers 413).  The
 * limits are process-wide: set them once at start-up, before threads decode.
 * The threads inflating bodies at once share a budget (max_inflating), so
 * that concurrent bombs cannot each take max_decompressed. */
#ifndef CP_DECODE_LIMITS_H
#define CP_DECODE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cp_decode_limits {
	/* bytes a compressed body may inflate to; a pprof profile may also take
	 * at most twice this in memory while it is unpacked (estimated from its
	 * wire format before anything is allocated) */
	size_t max_decompressed;
	size_t max_samples;   /* samples (pprof Sample records, folded lines) per profile */
	size_t max_locations; /* locations (pprof Location records, distinct folded frames) */
	/* a JSON body's objects and arrays, and its values, counted on its text
	 * before it is parsed (jansson takes a few hundred bytes for an empty
	 * object: 30 MB of "{}," took 2.3 GB) */
	size_t max_json_containers;
	size_t max_json_values;
	/* bytes all the threads inflating at once may hold together (default:
	 * max_decompressed): a body that would take more while others hold some
	 * does not wait, it fails with -EBUSY (cprof serve answers 503, to be
	 * sent again) */
	size_t max_inflating;
	/* the setting that raises max_decompressed, named in its messages (e.g.
	 * "--max-decompressed"); static, or NULL */
	const char *setting;
};

#define CP_DECODE_MAX_DECOMPRESSED ((size_t)256 << 20)
#define CP_DECODE_MAX_SAMPLES ((size_t)1000000)
#define CP_DECODE_MAX_LOCATIONS ((size_t)1000000)
#define CP_DECODE_MAX_JSON_CONTAINERS ((size_t)100000)
#define CP_DECODE_MAX_JSON_VALUES ((size_t)1000000)

/* The limits in force (the defaults above until set). */
const struct cp_decode_limits *cp_decode_limits(void);
/* Replaces them; a 0 field keeps its default.  Not thread-safe against
 * decoders running at the same time. */
void cp_decode_limits_set(const struct cp_decode_limits *l);

/* cp_gunzip (lib/pprof.h) up to max_decompressed: -EFBIG with "the
 * decompressed body is over 256 MiB (--max-decompressed)" beyond it; -EBUSY
 * when the bodies being inflated by other threads hold max_inflating. */
int cp_gunzip_limited(const void *in, size_t len, uint8_t **out, size_t *outlen);
/* The budget of max_inflating, shared by the threads inflating at once:
 * reserve delta more bytes for a caller that holds mine of it already (or
 * give back, delta < 0).  0, or -EBUSY when others hold part of it and the
 * total would pass max_inflating (a caller alone always gets it). */
int cp_inflate_reserve(ptrdiff_t delta, size_t mine);
/* The limit messages: -EFBIG with "the profile has over N WHAT (the most one
 * profile may have)", and with "decoding the profile would take over SIZE
 * (twice --max-decompressed)". */
int cp_decode_too_many(const char *what, size_t limit);
/* A JSON text held to max_json_containers and max_json_values before jansson
 * parses it (jansson takes ~50 bytes for a number and a few hundred for an
 * empty object: 30 MB of "{}," took 2.3 GB), counted on the text: outside
 * strings '{' and '[' open a container, ',' separates values.  0, or -EFBIG
 * with "WHAT holds over N JSON objects and arrays (the most one may have)"
 * (or "... JSON values ..."); what names the text ("the body",
 * "format=speedscope: the body"). */
int cp_json_bounded(const char *s, size_t len, const char *what);
int cp_decode_too_large(size_t limit);

/* A decoder's allocations held to a budget of bytes: twice max_decompressed,
 * as a pprof profile's (cp_decode_budget_init).  cp_decode_budget_alloc and
 * _free have protobuf-c's allocator signature (ProtobufCAllocator { alloc,
 * free, &budget }); an allocation past the budget returns NULL and sets
 * over, and the decoder's caller then fails with cp_decode_too_large(max). */
struct cp_decode_budget {
	size_t used, max;
	bool over;
};
void cp_decode_budget_init(struct cp_decode_budget *b);
void *cp_decode_budget_alloc(void *budget, size_t size);
void cp_decode_budget_free(void *budget, void *ptr);

#endif
