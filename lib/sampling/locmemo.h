/* SPDX-License-Identifier: MIT */
/* The recorder's memo of the locations its frames were given: (process,
 * the generation of its mappings, pc, kind) -> the location id in the profile
 * the process's samples go to.  A busy process repeats the same few thousand
 * pcs; with the memo, a frame seen before costs one probe instead of the
 * symbolizer's string interning into the profile (the mapping's file and
 * build id, each line's function and file: four to eight hashed strings).
 *
 * Direct-mapped and fixed in size: a collision overwrites, so memory does not
 * grow with what runs.  The memo is only as good as the profiles it names:
 * the owner calls cp_locmemo_clear (constant time, a generation) whenever a
 * profile an entry may name is dropped or replaced, and puts only locations
 * that stay the same while the mappings do (not a JIT's perf-map names).
 *
 * Ownership: the caller's (new/free).  Errors: cp_locmemo_new returns NULL
 * (ENOMEM); the rest cannot fail. */
#ifndef CP_LOCMEMO_H
#define CP_LOCMEMO_H

#include <stdbool.h>
#include <stdint.h>

/* what the pc is: the interrupted instruction, or a return address (the
 * call before it is what is named); user or kernel */
enum { CP_LOCMEMO_USER = 0, CP_LOCMEMO_USER_RET = 1, CP_LOCMEMO_KERNEL = 2, CP_LOCMEMO_KERNEL_RET = 3 };

struct cp_locmemo;

/* 2^bits entries (bits 4..24) of 24 bytes, in huge pages (hugepages.h),
 * allocated as they are touched */
struct cp_locmemo *cp_locmemo_new(unsigned bits);
void cp_locmemo_free(struct cp_locmemo *m);
/* Forgets every entry. */
void cp_locmemo_clear(struct cp_locmemo *m);
/* The location put for this key since the last clear, or 0. */
uint32_t cp_locmemo_get(struct cp_locmemo *m, uint32_t pid, uint32_t maps_gen, uint64_t pc, unsigned kind);
/* Remembers loc (> 0) for this key. */
void cp_locmemo_put(struct cp_locmemo *m, uint32_t pid, uint32_t maps_gen, uint64_t pc, unsigned kind, uint32_t loc);
/* probes and hits since creation */
void cp_locmemo_counts(const struct cp_locmemo *m, uint64_t *probes, uint64_t *hits);

#endif
