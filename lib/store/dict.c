/* SPDX-License-Identifier: MIT */
#include "dict.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../error.h"
#include "../gzip.h"
#include "../index.h"
#include "../util.h"
#include "../varint.h"
#include "db.h"

#define STACK_WINDOW 64 /* how many recent stacks a new one may refer to */

int cp_dict_reset(struct cp_dict *s)
{
	cp_profile_free(s->p);
	s->p = cp_profile_new();
	s->nstr = s->nfn = s->nmap = s->nloc = s->nstack = s->nls = 0;
	s->bstr = s->bfn = s->bmap = s->bloc = s->bstack = s->bls = 0;
	s->nchunk = 0;
	s->forgot = false;
	return s->p ? 0 : cp_error(ENOMEM, "out of memory loading the store's dictionary");
}

/* The last rows of each kind, in the order of struct cp_dict's n fields,
 * then the last chunk. */
enum { L_STR, L_FN, L_MAP, L_LOC, L_STACK, L_LS, L_CHUNK, L_N };

/* Forgets p: empty from now on, standing past the rows last[]. */
static int forget_at(struct cp_dict *s, const uint32_t *last, int64_t chunk)
{
	struct cp_profile *p = cp_profile_new();

	if (!p)
		return cp_error(ENOMEM, "out of memory forgetting the store's dictionary");
	cp_profile_free(s->p);
	s->p = p;
	s->nstr = s->bstr = last[L_STR];
	s->nfn = s->bfn = last[L_FN];
	s->nmap = s->bmap = last[L_MAP];
	s->nloc = s->bloc = last[L_LOC];
	s->nstack = s->bstack = last[L_STACK];
	s->nls = s->bls = last[L_LS];
	s->nchunk = chunk;
	s->forgot = true;
	return 0;
}


static int bad_row(const char *table, int64_t id)
{
	return cp_error(EBADMSG, "the store's dictionary is inconsistent (%s row %" PRId64
				 "); restore the store from a backup or move it away", table, id);
}

/* Decodes the cnt entries of one chunk (kind: locations, stacks or labelsets)
 * into the dictionary; -EBADMSG (recorded) when they do not fit what came before. */
static int load_chunk(struct cp_dict *s, const char *kind, const uint8_t *p, size_t len, int64_t cnt)
{
	struct cp_profile *d = s->p;
	const uint8_t *end = p + len;
	struct cp_line *lines = NULL;
	struct cp_label *labels = NULL;
	uint32_t *locs = NULL;
	size_t lcap = 0, labcap = 0, loccap = 0, k;
	int64_t i, r;
	int err = 0;

#define GET(x)                                             \
	do {                                               \
		size_t u_ = cp_get_uvarint(p, end, &(x)); \
		if (!u_)                                   \
			goto bad;                          \
		p += u_;                                   \
	} while (0)
#define GROW(arr, cap, need)                                                  \
	do {                                                                  \
		if (cp_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))) { \
			err = cp_error(ENOMEM, "out of memory loading the store's dictionary"); \
			goto out;                                             \
		}                                                             \
	} while (0)
#define EXPECT(call, want)               \
	do {                             \
		r = (call);              \
		if (r < 0 && r != -EINVAL) { \
			err = cp_dict_error((int)r, "loading the store's dictionary"); \
			goto out;        \
		}                        \
		if (r != (int64_t)(want)) \
			goto bad;        \
	} while (0)

	for (i = 0; i < cnt; i++) {
		if (!strcmp(kind, "strings")) {
			uint64_t n;

			GET(n);
			if (n > (uint64_t)(end - p))
				goto bad;
			EXPECT(cp_profile_strn(d, (const char *)p, (size_t)n), s->nstr + 1);
			p += n;
			s->nstr++;
		} else if (!strcmp(kind, "functions")) {
			uint64_t name, sys, file, line;

			GET(name);
			GET(sys);
			GET(file);
			GET(line);
			if (name > s->nstr || sys > s->nstr || file > s->nstr)
				goto bad;
			EXPECT(cp_profile_function(d, &(struct cp_function){ (uint32_t)name, (uint32_t)sys, (uint32_t)file,
									     cp_unzigzag(line) }),
			       s->nfn + 1);
			s->nfn++;
		} else if (!strcmp(kind, "mappings")) {
			uint64_t start, lim, off, file, bid, flags;

			GET(start);
			GET(lim);
			GET(off);
			GET(file);
			GET(bid);
			GET(flags);
			if (file > s->nstr || bid > s->nstr)
				goto bad;
			EXPECT(cp_profile_mapping(d, &(struct cp_mapping){ start, lim, off, (uint32_t)file, (uint32_t)bid,
									   flags & 1, flags & 2, flags & 4, flags & 8 }),
			       s->nmap + 1);
			s->nmap++;
		} else if (!strcmp(kind, "locations")) {
			uint64_t mapping, address, folded, n, f, l, c;

			GET(mapping);
			GET(address);
			GET(folded);
			GET(n);
			if (mapping > s->nmap || n > 4096)
				goto bad;
			GROW(lines, lcap, n + 1);
			for (k = 0; k < n; k++) {
				GET(f);
				GET(l);
				GET(c);
				if (f > s->nfn)
					goto bad;
				lines[k].function = (uint32_t)f;
				lines[k].line = cp_unzigzag(l);
				lines[k].column = cp_unzigzag(c);
			}
			EXPECT(cp_profile_location(d, (uint32_t)mapping, address, lines, n, folded != 0), s->nloc + 1);
			s->nloc++;
		} else if (!strcmp(kind, "stacks")) {
			/* ref (0: none); with a ref, the root-side frames shared with
			 * it; then this stack's own frames, leaf first */
			uint64_t ref, shared = 0, n, v;

			GET(ref);
			if (ref > s->nstack)
				goto bad;
			if (ref) {
				GET(shared);
				if (!shared || shared > d->stacks[ref].len)
					goto bad;
			}
			GET(n);
			if (n > (1u << 20))
				goto bad;
			GROW(locs, loccap, n + shared + 1);
			for (k = 0; k < n; k++) {
				GET(v);
				if (!v || v > s->nloc)
					goto bad;
				locs[k] = (uint32_t)v;
			}
			if (ref)
				memcpy(locs + n, d->stack_locs + d->stacks[ref].off + d->stacks[ref].len - shared,
				       shared * sizeof(*locs));
			EXPECT(cp_profile_stack(d, locs, n + shared), s->nstack + 1);
			s->nstack++;
		} else {
			uint64_t n, key, str, num, unit;

			GET(n);
			if (n > 4096)
				goto bad;
			GROW(labels, labcap, n + 1);
			for (k = 0; k < n; k++) {
				GET(key);
				GET(str);
				GET(num);
				GET(unit);
				if (key > s->nstr || str > s->nstr || unit > s->nstr)
					goto bad;
				labels[k].key = (uint32_t)key;
				labels[k].str = (uint32_t)str;
				labels[k].num = cp_unzigzag(num);
				labels[k].num_unit = (uint32_t)unit;
			}
			EXPECT(cp_profile_labelset(d, labels, n), s->nls + 1);
			s->nls++;
		}
	}
	if (p == end)
		goto out;
bad:
	err = cp_error(EBADMSG, "the store's dictionary is inconsistent (a %s chunk)", kind);
out:
#undef GET
#undef GROW
#undef EXPECT
	free(lines);
	free(labels);
	free(locs);
	return err;
}

int cp_dict_load(struct cp_dict *s)
{
	struct cp_profile *d = s->p;
	sqlite3_stmt *st = NULL;
	int err = 0, rc = SQLITE_DONE;
	bool own_tx = sqlite3_get_autocommit(s->db); /* else the caller's write transaction */
	uint8_t *raw = NULL;
	size_t rawcap = 0;

	/* each table's rows must all be read, not up to a failing step */
#define QUERY(sql, from)                                                      \
	do {                                                                  \
		if (st && rc != SQLITE_DONE) {                                \
			err = cp_db_error(s->db, "reading the store");              \
			goto out;                                             \
		}                                                             \
		sqlite3_finalize(st);                                         \
		st = NULL;                                                    \
		if ((err = cp_db_prepare(s->db, sql, &st)))                         \
			goto out;                                             \
		sqlite3_bind_int64(st, 1, from);                              \
	} while (0)
#define CHECK(cond, table, id) \
	if (!(cond)) {          \
		err = bad_row(table, id); \
		goto out;       \
	}

	/* after a forget p is part of the rows; strings only in memory (build()
	 * adds the names of sample types) would take the ids of the rows other
	 * writers added: start over */
	if (s->forgot || d->strs.n - 1 != s->nstr) {
		if (cp_dict_reset(s))
			return cp_error(ENOMEM, "out of memory reading the store");
		d = s->p;
	}
	if (own_tx && (err = cp_db_exec(s->db, "BEGIN", "reading the store")))
		return err;
	/* the rows, id for id: equal ones too (written after a writer's forget) */
	cp_profile_keep_duplicates(d, true);
	if (!s->legacy)
		goto chunks;
	/* a store of schema version 2 (read to convert it): strings, functions and mappings are rows */
	QUERY("SELECT id, s FROM strings WHERE id > ? ORDER BY id", s->nstr);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);

		CHECK(v && cp_profile_str(d, v) == id && id == (int64_t)s->nstr + 1, "strings", id);
		s->nstr++;
	}
	QUERY("SELECT id, name, system_name, filename, start_line FROM functions WHERE id > ? ORDER BY id", s->nfn);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		struct cp_function f = { (uint32_t)sqlite3_column_int64(st, 1), (uint32_t)sqlite3_column_int64(st, 2),
					 (uint32_t)sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4) };

		CHECK(f.name <= s->nstr && f.system_name <= s->nstr && f.filename <= s->nstr &&
			      cp_profile_function(d, &f) == id && id == (int64_t)s->nfn + 1,
		      "functions", id);
		s->nfn++;
	}
	QUERY("SELECT id, start, lim, off, filename, build_id, flags FROM mappings WHERE id > ? ORDER BY id", s->nmap);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), flags = sqlite3_column_int64(st, 6);
		struct cp_mapping m = { (uint64_t)sqlite3_column_int64(st, 1), (uint64_t)sqlite3_column_int64(st, 2),
					(uint64_t)sqlite3_column_int64(st, 3), (uint32_t)sqlite3_column_int64(st, 4),
					(uint32_t)sqlite3_column_int64(st, 5), flags & 1, flags & 2, flags & 4, flags & 8 };

		CHECK(m.filename <= s->nstr && m.build_id <= s->nstr && cp_profile_mapping(d, &m) == id &&
			      id == (int64_t)s->nmap + 1,
		      "mappings", id);
		s->nmap++;
	}
chunks:
	/* every kind (schema 2: locations, stacks and label sets) comes in compressed chunks, in the
	 * order they were written (a chunk refers only to what came before) */
	QUERY("SELECT id, kind, first, count, rawlen, data FROM chunks WHERE id > ? ORDER BY id", s->nchunk);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), first = sqlite3_column_int64(st, 2);
		int64_t cnt = sqlite3_column_int64(st, 3), rawlen = sqlite3_column_int64(st, 4);
		const char *kind = (const char *)sqlite3_column_text(st, 1);

		CHECK(kind && cnt > 0 && rawlen > 0 && rawlen < (1 << 30), "chunks", id);
		if (cp_grow((void **)&raw, &rawcap, (size_t)rawlen + 1, 1)) {
			err = cp_error(ENOMEM, "out of memory reading the store");
			goto out;
		}
		if ((err = cp_zlib_inflate_exact(sqlite3_column_blob(st, 5), (size_t)sqlite3_column_bytes(st, 5), raw,
						 (size_t)rawlen))) {
			err = err == -ENOMEM ? cp_error(ENOMEM, "out of memory reading the store") : bad_row("chunks", id);
			goto out;
		}
		CHECK(!strcmp(kind, "locations") ? first == (int64_t)s->nloc + 1 :
		      !strcmp(kind, "stacks")    ? first == (int64_t)s->nstack + 1 :
		      !strcmp(kind, "labelsets") ? first == (int64_t)s->nls + 1 :
		      !strcmp(kind, "strings")   ? !s->legacy && first == (int64_t)s->nstr + 1 :
		      !strcmp(kind, "functions") ? !s->legacy && first == (int64_t)s->nfn + 1 :
		      !strcmp(kind, "mappings") && !s->legacy && first == (int64_t)s->nmap + 1,
		      "chunks", id);
		err = load_chunk(s, kind, raw, (size_t)rawlen, cnt);
		if (err == -EBADMSG) {
			err = bad_row("chunks", id);
			goto out;
		}
		if (err)
			goto out;
		s->nchunk = id;
	}
	if (rc != SQLITE_DONE)
		err = cp_db_error(s->db, "reading the store");
#undef QUERY
#undef CHECK
out:
	sqlite3_finalize(st);
	free(raw);
	if (own_tx) /* a read transaction: nothing to commit, no error to report over err */
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	cp_profile_keep_duplicates(d, false);
	if (err)
		cp_dict_reset(s);
	return err;
}

/* The last row of each kind (L_*), and the last chunk: -errno. */
static int last_rows(struct cp_dict *s, uint32_t *last, int64_t *chunk)
{
	static const char *const kinds[] = { "strings", "functions", "mappings", "locations", "stacks", "labelsets" };
	/* the chunks since the last one seen (all of them when none was, or ours were rolled back) */
	int64_t since = s->nchunk > 0 ? s->nchunk : 0, v[L_N] = { 0 };
	sqlite3_stmt *st = NULL;
	int err = 0, i, rc;

	v[L_STR] = since ? s->nstr : 0;
	v[L_FN] = since ? s->nfn : 0;
	v[L_MAP] = since ? s->nmap : 0;
	v[L_LOC] = since ? s->nloc : 0;
	v[L_STACK] = since ? s->nstack : 0;
	v[L_LS] = since ? s->nls : 0;
	v[L_CHUNK] = cp_db_count(s->db, "SELECT ifnull(max(id), 0) FROM chunks");
	if (v[L_CHUNK] == s->nchunk)
		goto out;
	/* a kind's chunks come in the order of their ids: its last is the newest */
	if ((err = cp_db_prepare(s->db, "SELECT kind, max(first + count - 1) FROM chunks WHERE id > ? GROUP BY kind", &st)))
		return err;
	sqlite3_bind_int64(st, 1, since);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);

		for (i = 0; kind && i < L_CHUNK; i++)
			if (!strcmp(kind, kinds[i]))
				v[i] = sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE)
		err = cp_db_error(s->db, "reading the store");
out:
	sqlite3_finalize(st);
	for (i = 0; !err && i < L_CHUNK; i++) {
		if (v[i] < 0 || v[i] >= UINT32_MAX)
			err = bad_row("chunks", v[i]);
		last[i] = (uint32_t)v[i];
	}
	*chunk = v[L_CHUNK];
	return err;
}

int cp_dict_catch_up(struct cp_dict *s)
{
	/* nothing read yet (after an open, or a failed load) */
	bool first = !s->nstr && !s->nfn && !s->nmap && !s->nchunk;
	uint32_t last[L_N];
	int64_t chunk = 0;
	int err;

	if (!s->forgot && !(first && s->max_bytes))
		return cp_dict_load(s);
	if ((err = last_rows(s, last, &chunk)))
		return err;
	if (!s->forgot) {
		/* a first load, with a limit: the rows it would bring, at 64 bytes each (less than
		 * any kind takes in memory), past the limit are not loaded at all */
		uint64_t rows = (uint64_t)last[L_STR] + last[L_FN] + last[L_MAP] + last[L_LOC] + last[L_STACK] +
				last[L_LS];

		return rows * 64 <= s->max_bytes ? cp_dict_load(s) : forget_at(s, last, chunk);
	}
	/* nothing new, and every string of p written (none only in memory) */
	if (last[L_STR] == s->nstr && last[L_FN] == s->nfn && last[L_MAP] == s->nmap && chunk == s->nchunk &&
	    s->p->strs.n - 1 == s->nstr - s->bstr)
		return 0;
	return forget_at(s, last, chunk);
}

/* One compressed chunk of count entries of kind, the first with id first. */
static int put_chunk(struct cp_dict *s, sqlite3_stmt *st, const char *kind, int64_t first, int64_t count,
		     const uint8_t *raw, size_t n)
{
	uint8_t *z;
	size_t zlen;
	int err;

	if (count <= 0)
		return 0;
	/* zlib's default: as small as its best on the dictionary's chunks (0.03%
	 * apart on a storm's), in two thirds of the time */
	if ((err = cp_zlib_compress(raw, n, Z_DEFAULT_COMPRESSION, &z, &zlen)))
		return err;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, first);
	sqlite3_bind_int64(st, 3, count);
	sqlite3_bind_int64(st, 4, (int64_t)n);
	sqlite3_bind_blob(st, 5, z, (int)zlen, SQLITE_STATIC);
	err = cp_db_step(st, "writing the dictionary");
	free(z);
	if (!err) /* ours, already in memory: the next load starts after it */
		s->nchunk = sqlite3_last_insert_rowid(s->db);
	return err;
}

/* room for n more bytes in *buf */
static int room(uint8_t **buf, size_t *cap, size_t used, size_t n)
{
	return cp_grow((void **)buf, cap, used + n, 1) ? cp_error(ENOMEM, "out of memory writing the dictionary") : 0;
}

/* Writes the dictionary entries added since the last sync: a compressed chunk per kind, in the order
 * a load reads them (each refers only to kinds before it). */
int cp_dict_save(struct cp_dict *s)
{
	struct cp_profile *d = s->p;
	sqlite3_stmt *st = NULL;
	uint8_t *buf = NULL;
	size_t cap = 0, n;
	uint32_t i, j;
	int err = 0;

	if (s->legacy)
		return cp_error(EPERM, "a store of schema version 2 is read only to convert it");
	if ((err = cp_db_prepare(s->db, "INSERT INTO chunks(kind, first, count, rawlen, data) VALUES(?, ?, ?, ?, ?)", &st)))
		goto out;
	n = 0;
	for (i = s->nstr - s->bstr + 1; i < d->strs.n; i++) {
		const char *str = cp_profile_string(d, i);
		size_t len = strlen(str);

		if ((err = room(&buf, &cap, n, CP_VARINT_MAX + len)))
			goto out;
		n += cp_put_uvarint(buf + n, len);
		memcpy(buf + n, str, len);
		n += len;
	}
	if ((err = put_chunk(s, st, "strings", s->nstr + 1, d->strs.n - 1 - (s->nstr - s->bstr), buf, n)))
		goto out;
	n = 0;
	for (i = s->nfn - s->bfn; i < d->nfunctions; i++) {
		const struct cp_function *f = &d->functions[i];

		if ((err = room(&buf, &cap, n, 4 * CP_VARINT_MAX)))
			goto out;
		n += cp_put_uvarint(buf + n, cp_dict_row(f->name, s->bstr));
		n += cp_put_uvarint(buf + n, cp_dict_row(f->system_name, s->bstr));
		n += cp_put_uvarint(buf + n, cp_dict_row(f->filename, s->bstr));
		n += cp_put_uvarint(buf + n, cp_zigzag(f->start_line));
	}
	if ((err = put_chunk(s, st, "functions", s->nfn + 1, d->nfunctions - (s->nfn - s->bfn), buf, n)))
		goto out;
	n = 0;
	for (i = s->nmap - s->bmap; i < d->nmappings; i++) {
		const struct cp_mapping *m = &d->mappings[i];

		if ((err = room(&buf, &cap, n, 6 * CP_VARINT_MAX)))
			goto out;
		n += cp_put_uvarint(buf + n, m->start);
		n += cp_put_uvarint(buf + n, m->limit);
		n += cp_put_uvarint(buf + n, m->offset);
		n += cp_put_uvarint(buf + n, cp_dict_row(m->filename, s->bstr));
		n += cp_put_uvarint(buf + n, cp_dict_row(m->build_id, s->bstr));
		n += cp_put_uvarint(buf + n, (uint64_t)(m->has_functions | m->has_filenames << 1 | m->has_line_numbers << 2 |
							m->has_inline_frames << 3));
	}
	if ((err = put_chunk(s, st, "mappings", s->nmap + 1, d->nmappings - (s->nmap - s->bmap), buf, n)))
		goto out;
	n = 0;
	for (i = s->nloc - s->bloc; i < d->nlocations; i++) {
		const struct cp_location *l = &d->locations[i];

		if ((err = room(&buf, &cap, n, CP_VARINT_MAX * (3 * (size_t)l->nlines + 4))))
			goto out;
		n += cp_put_uvarint(buf + n, cp_dict_row(l->mapping, s->bmap));
		n += cp_put_uvarint(buf + n, l->address);
		n += cp_put_uvarint(buf + n, l->is_folded);
		n += cp_put_uvarint(buf + n, l->nlines);
		for (j = 0; j < l->nlines; j++) {
			const struct cp_line *ln = &d->lines[l->line_off + j];

			n += cp_put_uvarint(buf + n, cp_dict_row(ln->function, s->bfn));
			n += cp_put_uvarint(buf + n, cp_zigzag(ln->line));
			n += cp_put_uvarint(buf + n, cp_zigzag(ln->column));
		}
	}
	if ((err = put_chunk(s, st, "locations", s->nloc + 1, d->nlocations - (s->nloc - s->bloc), buf, n)))
		goto out;
	n = 0;
	for (i = s->nstack - s->bstack + 1; i < d->nstacks; i++) {
		const struct cp_span *sp = &d->stacks[i];
		/* siblings share their callers: refer to the recent stack that
		 * shares the most root-side frames, and keep only our own */
		uint32_t ref = 0, shared = 0, k;

		for (k = i - 1; k >= 1 && k + STACK_WINDOW >= i; k--) {
			const struct cp_span *r = &d->stacks[k];
			uint32_t m = 0;

			while (m < r->len && m < sp->len &&
			       d->stack_locs[r->off + r->len - 1 - m] == d->stack_locs[sp->off + sp->len - 1 - m])
				m++;
			if (m > shared) {
				shared = m;
				ref = k;
			}
		}
		if (shared < 2)
			ref = shared = 0; /* a reference would not pay */
		if ((err = room(&buf, &cap, n, CP_VARINT_MAX * ((size_t)sp->len + 3))))
			goto out;
		n += cp_put_uvarint(buf + n, cp_dict_row(ref, s->bstack));
		if (ref)
			n += cp_put_uvarint(buf + n, shared);
		n += cp_put_uvarint(buf + n, sp->len - shared);
		for (j = 0; j < sp->len - shared; j++)
			n += cp_put_uvarint(buf + n, cp_dict_row(d->stack_locs[sp->off + j], s->bloc));
	}
	if ((err = put_chunk(s, st, "stacks", s->nstack + 1, d->nstacks - 1 - (s->nstack - s->bstack), buf, n)))
		goto out;
	n = 0;
	for (i = s->nls - s->bls + 1; i < d->nlabelsets; i++) {
		const struct cp_span *sp = &d->labelsets[i];

		if ((err = room(&buf, &cap, n, CP_VARINT_MAX * (4 * (size_t)sp->len + 1))))
			goto out;
		n += cp_put_uvarint(buf + n, sp->len);
		for (j = 0; j < sp->len; j++) {
			const struct cp_label *l = &d->labels[sp->off + j];

			n += cp_put_uvarint(buf + n, cp_dict_row(l->key, s->bstr));
			n += cp_put_uvarint(buf + n, cp_dict_row(l->str, s->bstr));
			n += cp_put_uvarint(buf + n, cp_zigzag(l->num));
			n += cp_put_uvarint(buf + n, cp_dict_row(l->num_unit, s->bstr));
		}
	}
	if ((err = put_chunk(s, st, "labelsets", s->nls + 1, d->nlabelsets - 1 - (s->nls - s->bls), buf, n)))
		goto out;
	s->nstr = s->bstr + d->strs.n - 1;
	s->nfn = s->bfn + d->nfunctions;
	s->nmap = s->bmap + d->nmappings;
	s->nloc = s->bloc + d->nlocations;
	s->nstack = s->bstack + d->nstacks - 1;
	s->nls = s->bls + d->nlabelsets - 1;
	if (s->max_bytes && cp_profile_bytes(d) > s->max_bytes) {
		uint32_t last[L_N] = { s->nstr, s->nfn, s->nmap, s->nloc, s->nstack, s->nls };

		err = forget_at(s, last, s->nchunk);
	}
out:
	sqlite3_finalize(st);
	free(buf);
	return err;
}

void cp_dict_rolled_back(struct cp_dict *s)
{
	if (s->forgot)
		s->nchunk = -1; /* no row's: the next catch-up forgets, past the rows there are */
	else
		cp_dict_reset(s);
}

void cp_dict_release(struct cp_dict *s)
{
	cp_profile_free(s->p);
	s->p = NULL;
}

int cp_dict_error(int err, const char *what)
{
	if (err == -ENOMEM)
		return cp_error(ENOMEM, "%s: out of memory", what);
	if (err == -EOVERFLOW)
		return cp_error(EOVERFLOW, "%s: the dictionary has no ids left (2^32 of a kind)", what);
	return err;
}

const char *const cp_process_labels[CP_PROCESS_LABELS] = { "pid", "thread_id", "thread_name" };

bool cp_dict_process_keys(const struct cp_profile *p, uint32_t *key)
{
	bool any = false;

	for (int i = 0; i < CP_PROCESS_LABELS; i++) {
		int64_t k = cp_strtab_find(&p->strs, cp_process_labels[i], strlen(cp_process_labels[i]));

		key[i] = k > 0 ? (uint32_t)k : 0;
		any |= k > 0;
	}
	return any;
}

size_t cp_dict_strip_labels(const struct cp_profile *p, uint32_t id, const uint32_t *key, struct cp_label *out)
{
	const struct cp_span *ls = &p->labelsets[id];
	size_t m = 0;

	for (uint32_t i = 0; i < ls->len; i++) {
		const struct cp_label *l = &p->labels[ls->off + i];
		int k;

		for (k = 0; k < CP_PROCESS_LABELS && (!key[k] || l->key != key[k]); k++)
			;
		if (k == CP_PROCESS_LABELS)
			out[m++] = *l;
	}
	return m;
}

static uint64_t labels_hash(const struct cp_label *l, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = cp_hash_u64(h ^ ((uint64_t)l[i].key << 32 | l[i].str), 3) ^
		    cp_hash_u64((uint64_t)l[i].num ^ (uint64_t)l[i].num_unit << 40, 5);
	return h;
}

static bool labels_eq(const struct cp_label *a, const struct cp_label *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].key != b[i].key || a[i].str != b[i].str || a[i].num != b[i].num || a[i].num_unit != b[i].num_unit)
			return false;
	return true;
}

int cp_dict_strip_map(const struct cp_profile *p, uint32_t **map, size_t *n)
{
	uint32_t key[CP_PROCESS_LABELS], nls = p->nlabelsets, *slot = NULL, *m = NULL, cap;
	struct cp_label *buf = NULL, *other = NULL;
	size_t bcap = 0, ocap = 0;
	int err = 0;

	*map = NULL;
	*n = 0;
	if (nls < 2 || !cp_dict_process_keys(p, key))
		return 0;
	/* the first set of each content without the process labels (open addressing; 0: empty) */
	for (cap = 64; cap < 2 * nls; cap *= 2)
		;
	if (!(slot = calloc(cap, sizeof(*slot))) || !(m = malloc((size_t)nls * sizeof(*m)))) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	m[0] = 0;
	for (uint32_t id = 1; id < nls; id++) {
		size_t k;
		uint32_t h;

		if (cp_grow((void **)&buf, &bcap, p->labelsets[id].len + 1, sizeof(*buf)) ||
		    cp_grow((void **)&other, &ocap, p->labelsets[id].len + 1, sizeof(*other))) {
			err = cp_error(ENOMEM, "out of memory reading the store");
			goto out;
		}
		if (!(k = cp_dict_strip_labels(p, id, key, buf))) {
			m[id] = 0;
			continue;
		}
		for (h = (uint32_t)labels_hash(buf, k) & (cap - 1); slot[h]; h = (h + 1) & (cap - 1))
			if (cp_dict_strip_labels(p, slot[h], key, other) == k && labels_eq(other, buf, k))
				break;
		if (!slot[h])
			slot[h] = id;
		m[id] = slot[h];
	}
	*map = m;
	*n = nls;
	m = NULL;
out:
	free(m);
	free(slot);
	free(buf);
	free(other);
	return err;
}
