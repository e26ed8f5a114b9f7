/* SPDX-License-Identifier: MIT */
/* Loading a profile from a file whose format is sniffed: pprof (gzip or raw
 * protobuf), folded-stack text or a Java Flight Recording (jfr.h: every
 * event type side by side), each optionally gzipped. */
#ifndef CP_LOAD_H
#define CP_LOAD_H

#include <stddef.h>

#include "profile.h"

enum cp_format { CP_FORMAT_PPROF, CP_FORMAT_FOLDED, CP_FORMAT_JFR };

/* The format of decompressed data: "FLR\0" is JFR, text without control bytes
 * is folded, anything else pprof. */
enum cp_format cp_sniff_format(const void *data, size_t len);
/* Decode data of a sniffed format (gzip inflated first, within the limits of
 * lib/decode_limits.h). NULL + errno (EFBIG over a limit, EBUSY when other
 * threads inflating take the shared budget), reason in cp_errmsg(). */
struct cp_profile *cp_profile_decode(const void *data, size_t len);
/* Read and decode path ("-" = stdin); the message names the file. */
struct cp_profile *cp_profile_load(const char *path);

/* A file as the profile types it holds, for a store: a JFR recording gives
 * one part per event type, named as Pyroscope names them (process_cpu,
 * memory, mutex, block, wall: cp_jfr_to_parts); pprof and folded one part
 * with name NULL (from the profile).  0 with *parts (freed with
 * cp_load_parts_free), or -errno with the message naming the file; a
 * recording with none of the events read is -EINVAL. */
struct cp_load_part {
	struct cp_profile *profile;
	const char *name; /* static, or NULL */
};
int cp_profile_load_parts(const char *path, struct cp_load_part **parts, size_t *n);
void cp_load_parts_free(struct cp_load_part *parts, size_t n);



/* Load and merge several files (pprof merge semantics) using up to nthreads
 * threads (0: the number of online CPUs).  Each thread merges a contiguous
 * run of files; the runs are then merged in order, so the result does not
 * depend on timing.  NULL + errno, with a message naming the file. */
struct cp_profile *cp_profile_load_many(char *const *paths, int n, int nthreads);
#endif
