/* SPDX-License-Identifier: MIT */
/* An interning string table: id 0 is always "".  The table owns copies of
 * the strings it is given; ids and cp_strtab_get's pointers stay valid until
 * cp_strtab_release (pointers: until the next intern).  Interning fails with
 * -ENOMEM or -EOVERFLOW (past 4 GiB of text or 2^32 strings). */
#ifndef CP_STRTAB_H
#define CP_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"

struct cp_strtab {
	char *buf; /* NUL-terminated strings, back to back */
	size_t len, cap;
	uint32_t *off;
	uint32_t n, offcap;
	struct cp_index idx;
	bool dups; /* intern appends even when an equal string is there (a copy of rows that repeat) */
};

int cp_strtab_init(struct cp_strtab *t);
void cp_strtab_release(struct cp_strtab *t);
/* The id of s (interned on first use; with dups, a new id each time), or
 * -ENOMEM / -EOVERFLOW. */
int64_t cp_strtab_intern(struct cp_strtab *t, const char *s, size_t len);
/* The id of s if present, else -ENOENT. */
int64_t cp_strtab_find(const struct cp_strtab *t, const char *s, size_t len);
/* The bytes of memory it holds. */
static inline size_t cp_strtab_bytes(const struct cp_strtab *t)
{
	return t->cap + (size_t)t->offcap * sizeof(*t->off) + cp_index_bytes(&t->idx);
}

static inline const char *cp_strtab_get(const struct cp_strtab *t, uint32_t id)
{
	return t->buf + t->off[id];
}

#endif
