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



/* Load and merge several files (pprof merge semantics) using up to nthreads
 * threads (0: the number of online CPUs).  Each thread merges a contiguous
 * run of files; the runs are then merged in order, so the result does not
 * depend on timing.  NULL + errno, with a message naming the file. */
struct cp_profile *cp_profile_load_many(char *const *paths, int n, int nthreads);
#endif
