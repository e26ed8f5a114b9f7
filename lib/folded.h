/* SPDX-License-Identifier: MIT */
/* Folded stacks (Brendan Gregg's format): "root;caller;leaf 123" a line,
 * read into a new profile (the caller owns and frees it) and written from
 * one.  Reading fails with NULL + errno and the line's number in cp_errmsg();
 * writing returns 0 or the stream's -errno (cp_stream_check). */
#ifndef CP_FOLDED_H
#define CP_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile.h"

/* Parse folded text into a profile with one sample type, samples/count.
 * Blank lines and lines starting with '#' are skipped; a malformed line is an
 * error naming its number. NULL + errno (EFBIG past the samples, locations
 * or memory limits of lib/decode_limits.h). */
struct cp_profile *cp_folded_decode(const char *text, size_t len);
/* Write value index vidx as folded stacks, root first (invert: leaf first).
 * Lines are sorted; zero-valued stacks are left out. */
int cp_folded_write(FILE *out, const struct cp_profile *p, int vidx, bool invert);
/* The same with an extra root frame (e.g. "comm=nginx" for --group-by). */
int cp_folded_write_rooted(FILE *out, const struct cp_profile *p, int vidx, bool invert, const char *root);
/* Differential folded: "stack before after" (Gregg's difffolded). */
int cp_folded_write_diff(FILE *out, const struct cp_profile *before, const struct cp_profile *after,
			 int vidx_before, int vidx_after);

#endif
