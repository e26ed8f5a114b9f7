/* SPDX-License-Identifier: MIT */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

struct key {
	const char *s;
	size_t len;
};

static int eq(const void *ctx, uint32_t id, const void *k)
{
	const struct cp_strtab *t = ctx;
	const struct key *key = k;
	const char *s = t->buf + t->off[id];

	return strncmp(s, key->s, key->len) == 0 && s[key->len] == '\0';
}

int cp_strtab_init(struct cp_strtab *t)
{
	memset(t, 0, sizeof(*t));
	return cp_strtab_intern(t, "", 0) < 0 ? -ENOMEM : 0;
}

void cp_strtab_release(struct cp_strtab *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t->off);
	cp_index_release(&t->idx);
	memset(t, 0, sizeof(*t));
}

int64_t cp_strtab_find(const struct cp_strtab *t, const char *s, size_t len)
{
	struct key k = { s, len };
	uint32_t h = (uint32_t)cp_hash_bytes(s, len, 0);
	uint32_t id = cp_index_find(&t->idx, h, eq, t, &k);

	return id == UINT32_MAX ? -ENOENT : (int64_t)id;
}

int64_t cp_strtab_intern(struct cp_strtab *t, const char *s, size_t len)
{
	const char *nul = memchr(s, '\0', len);
	struct key k;
	uint32_t h, id;
	size_t cap;

	if (nul) /* a string ends at its first NUL */
		len = (size_t)(nul - s);
	k.s = s;
	k.len = len;
	h = (uint32_t)cp_hash_bytes(s, len, 0);
	id = t->dups ? UINT32_MAX : cp_index_find(&t->idx, h, eq, t, &k);
	if (id != UINT32_MAX)
		return id;
	if (t->n == UINT32_MAX - 1 || t->len + len + 1 > UINT32_MAX)
		return cp_error(EOVERFLOW, "the string table is full (over 4 GiB or %u strings)", UINT32_MAX - 1);
	cap = t->offcap;
	if (cp_grow((void **)&t->off, &cap, (size_t)t->n + 1, sizeof(*t->off)))
		return cp_error(ENOMEM, "out of memory interning a string");
	t->offcap = (uint32_t)cap;
	if (cp_grow((void **)&t->buf, &t->cap, t->len + len + 1, 1))
		return cp_error(ENOMEM, "out of memory interning a string");
	memcpy(t->buf + t->len, s, len);
	t->buf[t->len + len] = '\0';
	t->off[t->n] = (uint32_t)t->len;
	if (cp_index_add(&t->idx, h, t->n))
		return cp_error(ENOMEM, "out of memory interning a string");
	t->len += len + 1;
	return t->n++;
}
