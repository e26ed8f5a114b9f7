/* SPDX-License-Identifier: MIT */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <zlib.h>

#include "../error.h"
#include "../util.h"
#include "../varint.h"
#include "backend.h"

#define SCHEMA_VERSION "2"
#define NPARTS 8 /* partition handles kept open between calls */
#define STACK_WINDOW 64 /* how many recent stacks a new one may refer to */

static const char index_schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS strings(id INTEGER PRIMARY KEY, s TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS functions(id INTEGER PRIMARY KEY, name INTEGER NOT NULL,"
	" system_name INTEGER NOT NULL, filename INTEGER NOT NULL, start_line INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS mappings(id INTEGER PRIMARY KEY, start INTEGER NOT NULL, lim INTEGER NOT NULL,"
	" off INTEGER NOT NULL, filename INTEGER NOT NULL, build_id INTEGER NOT NULL, flags INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, first INTEGER NOT NULL,"
	" count INTEGER NOT NULL, rawlen INTEGER NOT NULL, data BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, type TEXT NOT NULL, labels TEXT NOT NULL,"
	" UNIQUE(type, labels));"
	"CREATE TABLE IF NOT EXISTS partitions(name TEXT PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER NOT NULL);";

static const char part_schema[] =
	"CREATE TABLE IF NOT EXISTS blocks(id INTEGER PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER NOT NULL,"
	" entries INTEGER NOT NULL, samples INTEGER NOT NULL, rawlen INTEGER NOT NULL, series BLOB NOT NULL,"
	" data BLOB NOT NULL);"
	"CREATE INDEX IF NOT EXISTS blocks_time ON blocks(t_max, t_min);";

struct part {
	char name[16];
	sqlite3 *db;
	dev_t dev; /* the file db has open: another process may delete the day and make it again */
	ino_t ino;
};

struct cp_local {
	struct cp_store base; /* ops: local_ops */
	char *dir;
	enum cp_store_mode mode;
	sqlite3 *db;
	/* the dictionary as persisted: ids in dict are the rows' ids */
	struct cp_profile *dict;
	uint32_t nstr, nfn, nmap, nloc, nstack, nls;
	int64_t nchunk; /* the last row of chunks loaded */
	/* series cache: "type\x1elabels-json" -> id */
	struct cp_strtab skeys;
	int64_t *sids;
	size_t scap;
	/* open partitions: NPARTS at most, more while an append holds a transaction in each of its days */
	struct part *parts;
	size_t nparts, partcap;
};

/* ---- sqlite helpers ---- */

static int dberr(sqlite3 *db, const char *what)
{
	int code = sqlite3_extended_errcode(db);
	int e = (code & 0xff) == SQLITE_FULL ? ENOSPC : (code & 0xff) == SQLITE_BUSY ? EBUSY :
		(code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB ? EBADMSG : EIO;

	if (e == EBADMSG)
		return cp_error(e, "%s: the store is corrupt (%s); restore it from a backup or move it away",
				what, sqlite3_errmsg(db));
	if (e == ENOSPC)
		return cp_error(e, "%s: no space left on device; free disk space or lower --retention", what);
	return cp_error(e, "%s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql, const char *what)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : dberr(db, what);
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK ? 0 : dberr(db, "preparing a query");
}

/* The first column of the first row of sql (0 when none or on error). */
static int64_t count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int open_db(const char *path, bool write, const char *page_size, sqlite3 **out)
{
	int flags = write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE;
	sqlite3 *db = NULL;
	int err;

	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		err = db ? dberr(db, path) : cp_error(ENOMEM, "out of memory");
		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, 30000);
	/* partition blocks are a few KiB: small pages waste less of each last
	 * page (the size takes effect only while the file is new) */
	if ((err = exec(db, page_size, path)) ||
	    (err = exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", path))) {
		sqlite3_close(db);
		return err;
	}
	*out = db;
	return 0;
}

/* ---- open / close ---- */

/* A file shorter than the page count its SQLite header gives has lost its
 * end; SQLite would read the missing pages as empty and answer short. */
static int check_truncated(const char *path)
{
	unsigned char h[100];
	struct stat st;
	uint32_t psize, pages, counter, valid_for;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return 0;
	n = fread(h, 1, sizeof(h), f);
	if (fstat(fileno(f), &st) < 0)
		n = 0;
	fclose(f);
	if (n < sizeof(h) || memcmp(h, "SQLite format 3", 16))
		return 0; /* new, or not SQLite at all: SQLite itself will say */
	psize = (uint32_t)h[16] << 8 | h[17];
	psize = psize == 1 ? 65536 : psize;
	pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
	counter = (uint32_t)h[24] << 24 | (uint32_t)h[25] << 16 | (uint32_t)h[26] << 8 | h[27];
	valid_for = (uint32_t)h[92] << 24 | (uint32_t)h[93] << 16 | (uint32_t)h[94] << 8 | h[95];
	if (pages && counter == valid_for && (uint64_t)st.st_size < (uint64_t)pages * psize)
		return cp_error(EBADMSG, "%s: the store is corrupt (the file is truncated: %lld of %llu bytes);"
				" restore it from a backup or move it away", path, (long long)st.st_size,
				(unsigned long long)pages * psize);
	return 0;
}

/* The files this process has opened in SQLite (their device and inode).
 * Closing any descriptor of a file drops every POSIX lock the process holds
 * on it, those of its open SQLite connections among them: check_truncated()
 * reads a file only before this process first opens it, never while it may
 * have it open (else another process, seeing no lock, takes itself for the
 * WAL's last user, checkpoints and deletes it under the writer, whose later
 * commits no other process sees). */
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;
static struct opened { dev_t dev; ino_t ino; } *opened;
static size_t nopened, opened_cap;

static bool was_opened(const struct stat *st)
{
	size_t i;

	for (i = 0; i < nopened; i++)
		if (opened[i].dev == st->st_dev && opened[i].ino == st->st_ino)
			return true;
	return false;
}

/* check_truncated() unless this process has had the file open, then open_db() */
static int open_checked(const char *path, bool write, const char *page_size, sqlite3 **out)
{
	struct stat st;
	int err = 0;

	pthread_mutex_lock(&opened_lock);
	if (stat(path, &st) < 0 || !was_opened(&st))
		err = check_truncated(path);
	if (!err)
		err = open_db(path, write, page_size, out);
	if (!err && !stat(path, &st) && !was_opened(&st) &&
	    (nopened < opened_cap || !cp_grow((void **)&opened, &opened_cap, nopened + 1, sizeof(*opened)))) {
		opened[nopened].dev = st.st_dev;
		opened[nopened].ino = st.st_ino;
		nopened++;
	}
	pthread_mutex_unlock(&opened_lock);
	return err;
}



const char *cp_store_default_dir(char *buf, size_t len)
{
	const char *env = getenv("CPROF_DATA"), *home;

	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		snprintf(buf, len, "/var/lib/cprof");
	else if ((env = getenv("XDG_DATA_HOME")) && *env)
		snprintf(buf, len, "%s/cprof", env);
	else if ((home = getenv("HOME")) && *home)
		snprintf(buf, len, "%s/.local/share/cprof", home);
	else
		snprintf(buf, len, ".cprof");
	return buf;
}

static int reset_dict(struct cp_local *s)
{
	cp_profile_free(s->dict);
	s->dict = cp_profile_new();
	s->nstr = s->nfn = s->nmap = s->nloc = s->nstack = s->nls = 0;
	s->nchunk = 0;
	return s->dict ? 0 : -ENOMEM;
}

static const struct cp_store_ops local_ops;
static void local_close(struct cp_local *s);

struct cp_store *cp_store_open(const char *dir, enum cp_store_mode mode)
{
	struct cp_local *s = calloc(1, sizeof(*s));
	char path[PATH_MAX];
	sqlite3_stmt *st = NULL;
	int err = 0;

	if (!s || !(s->dir = strdup(dir)) || cp_strtab_init(&s->skeys) || reset_dict(s)) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	s->base.ops = &local_ops;
	s->mode = mode;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	if (mode == CP_STORE_READ && access(path, F_OK) < 0) {
		err = cp_error(ENOENT, "no store at %s: import or record profiles first (cprof import FILE), or give --data DIR",
			       dir);
		goto out;
	}
	if (mode == CP_STORE_WRITE) {
		snprintf(path, sizeof(path), "%s/parts", dir);
		if ((err = cp_mkdirs(path, 0755)))
			goto out;
		snprintf(path, sizeof(path), "%s/index.db", dir);
	}
	if ((err = open_checked(path, mode == CP_STORE_WRITE, "", &s->db)))
		goto out;
	if (mode == CP_STORE_WRITE &&
	    ((err = exec(s->db, index_schema, path)) ||
	     (err = exec(s->db, "INSERT OR IGNORE INTO meta VALUES('schema', '" SCHEMA_VERSION "')", path))))
		goto out;
	if ((err = prepare(s->db, "SELECT value FROM meta WHERE key = 'schema'", &st)))
		goto out;
	if (sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), SCHEMA_VERSION)) {
		err = cp_error(EPROTO, "%s: not a cprof store of schema version " SCHEMA_VERSION
				       " (written by another cprof version?)", path);
		goto out;
	}
out:
	sqlite3_finalize(st);
	if (err) {
		if (err == -ENOTDIR || err == -EBADMSG || err == -EIO)
			cp_error_ctx(err, "cannot open the store at %s", dir);
		local_close(s);
		errno = -err;
		return NULL;
	}
	return &s->base;
}

static void local_close(struct cp_local *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < (int)s->nparts; i++)
		sqlite3_close(s->parts[i].db);
	free(s->parts);
	sqlite3_close(s->db);
	cp_profile_free(s->dict);
	cp_strtab_release(&s->skeys);
	free(s->sids);
	free(s->dir);
	free(s);
}

/* ---- the dictionary: load what others wrote, write what we added ---- */

static int bad_row(const char *table, int64_t id)
{
	return cp_error(EBADMSG, "the store's dictionary is inconsistent (%s row %" PRId64
				 "); restore the store from a backup or move it away", table, id);
}

/* Decodes the cnt entries of one chunk (kind: locations, stacks or labelsets)
 * into the dictionary; -EBADMSG when they do not fit what came before. */
static int load_chunk(struct cp_local *s, const char *kind, const uint8_t *p, size_t len, int64_t cnt)
{
	struct cp_profile *d = s->dict;
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
			err = -ENOMEM;                                        \
			goto out;                                             \
		}                                                             \
	} while (0)
#define EXPECT(call, want)               \
	do {                             \
		r = (call);              \
		if (r < 0 && r != -EINVAL) { \
			err = (int)r;    \
			goto out;        \
		}                        \
		if (r != (int64_t)(want)) \
			goto bad;        \
	} while (0)

	for (i = 0; i < cnt; i++) {
		if (!strcmp(kind, "locations")) {
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
	err = -EBADMSG;
out:
#undef GET
#undef GROW
#undef EXPECT
	free(lines);
	free(labels);
	free(locs);
	return err;
}

static int load_dict(struct cp_local *s)
{
	struct cp_profile *d = s->dict;
	sqlite3_stmt *st = NULL;
	int err = 0, rc = SQLITE_DONE;
	bool own_tx = sqlite3_get_autocommit(s->db); /* else the caller's write transaction */
	uint8_t *raw = NULL;
	size_t rawcap = 0;

	/* each table's rows must all be read, not up to a failing step */
#define QUERY(sql, from)                                                      \
	do {                                                                  \
		if (st && rc != SQLITE_DONE) {                                \
			err = dberr(s->db, "reading the store");              \
			goto out;                                             \
		}                                                             \
		sqlite3_finalize(st);                                         \
		st = NULL;                                                    \
		if ((err = prepare(s->db, sql, &st)))                         \
			goto out;                                             \
		sqlite3_bind_int64(st, 1, from);                              \
	} while (0)
#define CHECK(cond, table, id) \
	if (!(cond)) {          \
		err = bad_row(table, id); \
		goto out;       \
	}

	/* strings only in memory (build() adds the names of sample types) would
	 * take the ids of the rows other writers added: start over */
	if (d->strs.n - 1 != s->nstr) {
		if (reset_dict(s))
			return cp_error(ENOMEM, "out of memory reading the store");
		d = s->dict;
	}
	if (own_tx && (err = exec(s->db, "BEGIN", "reading the store")))
		return err;
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
	/* locations, stacks and label sets come in compressed chunks, in the
	 * order they were written (a chunk refers only to what came before) */
	QUERY("SELECT id, kind, first, count, rawlen, data FROM chunks WHERE id > ? ORDER BY id", s->nchunk);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), first = sqlite3_column_int64(st, 2);
		int64_t cnt = sqlite3_column_int64(st, 3), rawlen = sqlite3_column_int64(st, 4);
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		uLongf dlen = (uLongf)rawlen;

		CHECK(kind && cnt > 0 && rawlen > 0 && rawlen < (1 << 30), "chunks", id);
		if (cp_grow((void **)&raw, &rawcap, (size_t)rawlen + 1, 1)) {
			err = -ENOMEM;
			goto out;
		}
		CHECK(uncompress(raw, &dlen, sqlite3_column_blob(st, 5), (uLong)sqlite3_column_bytes(st, 5)) == Z_OK &&
			      dlen == (uLongf)rawlen, "chunks", id);
		CHECK(!strcmp(kind, "locations") ? first == (int64_t)s->nloc + 1 :
		      !strcmp(kind, "stacks")    ? first == (int64_t)s->nstack + 1 :
		      !strcmp(kind, "labelsets") && first == (int64_t)s->nls + 1,
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
		err = dberr(s->db, "reading the store");
#undef QUERY
#undef CHECK
out:
	sqlite3_finalize(st);
	free(raw);
	if (own_tx)
		exec(s->db, "COMMIT", "reading the store");
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory reading the store");
	if (err)
		reset_dict(s);
	return err;
}

static int bind_exec(sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : dberr(sqlite3_db_handle(st), what);
}

/* One compressed chunk of count entries of kind, the first with id first. */
static int put_chunk(struct cp_local *s, sqlite3_stmt *st, const char *kind, int64_t first, int64_t count,
		     const uint8_t *raw, size_t n)
{
	uLongf zlen = compressBound(n);
	uint8_t *z;
	int err;

	if (count <= 0)
		return 0;
	if (!(z = malloc(zlen)))
		return -ENOMEM;
	if (compress2(z, &zlen, raw, n, 9) != Z_OK) {
		free(z);
		return cp_error(EIO, "compressing the dictionary failed");
	}
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, first);
	sqlite3_bind_int64(st, 3, count);
	sqlite3_bind_int64(st, 4, (int64_t)n);
	sqlite3_bind_blob(st, 5, z, (int)zlen, SQLITE_STATIC);
	err = bind_exec(st, "writing the dictionary");
	free(z);
	if (!err) /* ours, already in memory: the next load starts after it */
		s->nchunk = sqlite3_last_insert_rowid(s->db);
	return err;
}

/* Writes the dictionary entries added since the last sync. */
static int save_dict(struct cp_local *s)
{
	struct cp_profile *d = s->dict;
	sqlite3_stmt *st[4] = { NULL };
	uint8_t *buf = NULL;
	size_t cap = 0, n;
	uint32_t i, j;
	int err = 0;

	if ((err = prepare(s->db, "INSERT INTO strings(id, s) VALUES(?, ?)", &st[0])) ||
	    (err = prepare(s->db, "INSERT INTO functions VALUES(?, ?, ?, ?, ?)", &st[1])) ||
	    (err = prepare(s->db, "INSERT INTO mappings VALUES(?, ?, ?, ?, ?, ?, ?)", &st[2])) ||
	    (err = prepare(s->db, "INSERT INTO chunks(kind, first, count, rawlen, data) VALUES(?, ?, ?, ?, ?)", &st[3])))
		goto out;
	for (i = s->nstr + 1; i < d->strs.n; i++) {
		sqlite3_bind_int64(st[0], 1, i);
		sqlite3_bind_text(st[0], 2, cp_profile_string(d, i), -1, SQLITE_STATIC);
		if ((err = bind_exec(st[0], "writing strings")))
			goto out;
	}
	for (i = s->nfn; i < d->nfunctions; i++) {
		const struct cp_function *f = &d->functions[i];

		sqlite3_bind_int64(st[1], 1, i + 1);
		sqlite3_bind_int64(st[1], 2, f->name);
		sqlite3_bind_int64(st[1], 3, f->system_name);
		sqlite3_bind_int64(st[1], 4, f->filename);
		sqlite3_bind_int64(st[1], 5, f->start_line);
		if ((err = bind_exec(st[1], "writing functions")))
			goto out;
	}
	for (i = s->nmap; i < d->nmappings; i++) {
		const struct cp_mapping *m = &d->mappings[i];

		sqlite3_bind_int64(st[2], 1, i + 1);
		sqlite3_bind_int64(st[2], 2, (int64_t)m->start);
		sqlite3_bind_int64(st[2], 3, (int64_t)m->limit);
		sqlite3_bind_int64(st[2], 4, (int64_t)m->offset);
		sqlite3_bind_int64(st[2], 5, m->filename);
		sqlite3_bind_int64(st[2], 6, m->build_id);
		sqlite3_bind_int64(st[2], 7, m->has_functions | m->has_filenames << 1 | m->has_line_numbers << 2 |
						     m->has_inline_frames << 3);
		if ((err = bind_exec(st[2], "writing mappings")))
			goto out;
	}
	/* locations, stacks and label sets: one compressed chunk each */
	n = 0;
	for (i = s->nloc; i < d->nlocations; i++) {
		const struct cp_location *l = &d->locations[i];

		if (cp_grow((void **)&buf, &cap, n + CP_VARINT_MAX * (3 * (size_t)l->nlines + 4), 1)) {
			err = -ENOMEM;
			goto out;
		}
		n += cp_put_uvarint(buf + n, l->mapping);
		n += cp_put_uvarint(buf + n, l->address);
		n += cp_put_uvarint(buf + n, l->is_folded);
		n += cp_put_uvarint(buf + n, l->nlines);
		for (j = 0; j < l->nlines; j++) {
			const struct cp_line *ln = &d->lines[l->line_off + j];

			n += cp_put_uvarint(buf + n, ln->function);
			n += cp_put_uvarint(buf + n, cp_zigzag(ln->line));
			n += cp_put_uvarint(buf + n, cp_zigzag(ln->column));
		}
	}
	if ((err = put_chunk(s, st[3], "locations", s->nloc + 1, d->nlocations - s->nloc, buf, n)))
		goto out;
	n = 0;
	for (i = s->nstack + 1; i < d->nstacks; i++) {
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
		if (cp_grow((void **)&buf, &cap, n + CP_VARINT_MAX * ((size_t)sp->len + 3), 1)) {
			err = -ENOMEM;
			goto out;
		}
		n += cp_put_uvarint(buf + n, ref);
		if (ref)
			n += cp_put_uvarint(buf + n, shared);
		n += cp_put_uvarint(buf + n, sp->len - shared);
		for (j = 0; j < sp->len - shared; j++)
			n += cp_put_uvarint(buf + n, d->stack_locs[sp->off + j]);
	}
	if ((err = put_chunk(s, st[3], "stacks", s->nstack + 1, d->nstacks - 1 - s->nstack, buf, n)))
		goto out;
	n = 0;
	for (i = s->nls + 1; i < d->nlabelsets; i++) {
		const struct cp_span *sp = &d->labelsets[i];

		if (cp_grow((void **)&buf, &cap, n + CP_VARINT_MAX * (4 * (size_t)sp->len + 1), 1)) {
			err = -ENOMEM;
			goto out;
		}
		n += cp_put_uvarint(buf + n, sp->len);
		for (j = 0; j < sp->len; j++) {
			const struct cp_label *l = &d->labels[sp->off + j];

			n += cp_put_uvarint(buf + n, l->key);
			n += cp_put_uvarint(buf + n, l->str);
			n += cp_put_uvarint(buf + n, cp_zigzag(l->num));
			n += cp_put_uvarint(buf + n, l->num_unit);
		}
	}
	if ((err = put_chunk(s, st[3], "labelsets", s->nls + 1, d->nlabelsets - 1 - s->nls, buf, n)))
		goto out;
	s->nstr = d->strs.n - 1;
	s->nfn = d->nfunctions;
	s->nmap = d->nmappings;
	s->nloc = d->nlocations;
	s->nstack = d->nstacks - 1;
	s->nls = d->nlabelsets - 1;
out:
	for (i = 0; i < 4; i++)
		sqlite3_finalize(st[i]);
	free(buf);
	return err;
}

/* ---- series ---- */

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cp_kv *)a)->name, ((const struct cp_kv *)b)->name);
}

static bool is_text(const char *v)
{
	json_t *j = v ? json_string(v) : NULL; /* NULL unless UTF-8 */

	json_decref(j);
	return j != NULL;
}

/* Labels as canonical JSON (keys sorted), the form kept in series.labels.
 * NULL with the error in *err. */
static char *labels_json(const struct cp_kv *labels, size_t n, int *err)
{
	json_t *o = json_object();
	char *s = NULL;
	size_t i;

	*err = -ENOMEM;
	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!is_text(labels[i].name) || !is_text(labels[i].value)) {
			*err = cp_error(EINVAL, "label %s: names and values must be UTF-8 text",
					labels[i].name ? labels[i].name : "(null)");
			goto out;
		}
		if (json_object_set_new(o, labels[i].name, json_string(labels[i].value)))
			goto out;
	}
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	*err = s ? 0 : -ENOMEM;
out:
	json_decref(o);
	return s;
}

static int64_t series_id(struct cp_local *s, const char *type, const char *labels)
{
	size_t tl = strlen(type), ll = strlen(labels);
	char *key = malloc(tl + ll + 2);
	sqlite3_stmt *st = NULL;
	int64_t id = -ENOMEM, k;
	size_t cap = s->scap;

	if (!key)
		return -ENOMEM;
	memcpy(key, type, tl);
	key[tl] = '\x1e';
	memcpy(key + tl + 1, labels, ll + 1);
	if ((k = cp_strtab_find(&s->skeys, key, tl + ll + 1)) >= 0) {
		id = s->sids[k];
		goto out;
	}
	if (prepare(s->db, "INSERT INTO series(type, labels) VALUES(?1, ?2) ON CONFLICT DO NOTHING", &st))
		goto fail;
	sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, labels, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	if (prepare(s->db, "SELECT id FROM series WHERE type = ?1 AND labels = ?2", &st))
		goto fail;
	sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, labels, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto fail;
	id = sqlite3_column_int64(st, 0);
	k = cp_strtab_intern(&s->skeys, key, tl + ll + 1);
	if (k < 0 || cp_grow((void **)&s->sids, &cap, (size_t)k + 1, sizeof(*s->sids))) {
		id = -ENOMEM;
		goto out;
	}
	s->scap = cap;
	s->sids[k] = id;
	goto out;
fail:
	id = dberr(s->db, "writing series");
out:
	sqlite3_finalize(st);
	free(key);
	return id;
}

/* ---- partitions ---- */

static void part_name(int64_t t, char *buf, size_t len)
{
	time_t secs = (time_t)(t / 1000000000);
	struct tm tm;

	if (t < 0 || !gmtime_r(&secs, &tm))
		secs = 0, gmtime_r(&secs, &tm);
	strftime(buf, len, "%Y%m%d", &tm);
}

/* The handle of partition name (WRITE: made with its schema if missing).  A
 * handle in a transaction (an append's, until it commits) is never closed to
 * make room. */
static int part_open(struct cp_local *s, const char *name, sqlite3 **out)
{
	char path[PATH_MAX];
	struct stat sb;
	bool fresh, found = false;
	size_t i, slot = s->nparts;
	int err;

	snprintf(path, sizeof(path), "%s/parts/%s.db", s->dir, name);
	for (i = 0; i < s->nparts; i++) {
		if (s->parts[i].db && !strcmp(s->parts[i].name, name)) {
			found = true;
			break;
		}
	}
	if (found) {
		/* still the file at path? (retention or a size limit in another process may
		 * have deleted the day, and an append made it again) */
		if (!stat(path, &sb) && sb.st_dev == s->parts[i].dev && sb.st_ino == s->parts[i].ino) {
			*out = s->parts[i].db;
			return 0;
		}
		sqlite3_close(s->parts[i].db);
		s->parts[i].db = NULL;
	}
	for (i = 0; i < s->nparts && slot == s->nparts; i++)
		if (!s->parts[i].db)
			slot = i;
	if (slot == s->nparts && s->nparts >= NPARTS) { /* full: close one not in a transaction */
		for (i = 0; i < s->nparts && slot == s->nparts; i++)
			if (sqlite3_get_autocommit(s->parts[i].db)) {
				sqlite3_close(s->parts[i].db);
				s->parts[i].db = NULL;
				slot = i;
			}
	}
	if (slot == s->nparts) {
		if (cp_grow((void **)&s->parts, &s->partcap, s->nparts + 1, sizeof(*s->parts)))
			return cp_error(ENOMEM, "out of memory opening a partition");
		s->parts[s->nparts++].db = NULL;
	}
	if (s->mode == CP_STORE_READ && access(path, F_OK) < 0)
		return cp_error(ENOENT, "partition %s is missing", path);
	/* auto_vacuum before the first table, so that a size limit that deletes
	 * the oldest blocks gives their pages back (PRAGMA incremental_vacuum);
	 * only in a new file: in one that has it, setting it again writes */
	fresh = s->mode == CP_STORE_WRITE && (stat(path, &sb) < 0 || sb.st_size == 0);
	if ((err = open_checked(path, s->mode == CP_STORE_WRITE,
				fresh ? "PRAGMA page_size=1024; PRAGMA auto_vacuum=INCREMENTAL;" : "PRAGMA page_size=1024;",
				&s->parts[slot].db)))
		return err;
	if ((s->mode == CP_STORE_WRITE && (err = exec(s->parts[slot].db, part_schema, path))) ||
	    (stat(path, &sb) < 0 && (err = cp_error(errno, "%s: %s", path, strerror(errno))))) {
		sqlite3_close(s->parts[slot].db);
		s->parts[slot].db = NULL;
		return err;
	}
	s->parts[slot].dev = sb.st_dev;
	s->parts[slot].ino = sb.st_ino;
	snprintf(s->parts[slot].name, sizeof(s->parts[slot].name), "%s", name);
	*out = s->parts[slot].db;
	return 0;
}

static void part_forget(struct cp_local *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nparts; i++)
		if (s->parts[i].db && !strcmp(s->parts[i].name, name)) {
			sqlite3_close(s->parts[i].db);
			s->parts[i].db = NULL;
		}
}

/* ---- appending ---- */

struct entry {
	char part[16];
	int64_t series, t;
	uint32_t stack, labels;
	int64_t value;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->part, y->part);

	if (c)
		return c;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->labels < y->labels ? -1 : x->labels > y->labels;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Writes entries [from, to) (one partition, sorted) as one block, in a
 * transaction left open: *pdb its partition, *id its row.  On error, nothing
 * is left open. */
static int write_block(struct cp_local *s, const struct entry *e, size_t from, size_t to, sqlite3 **pdb, int64_t *id)
{
	uint8_t *raw = NULL, *sbuf = NULL, *z = NULL;
	size_t rn = 0, sn = 0, i, j, nseries = 0;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN, samples = 0, prev = 0;
	uint64_t gcd;
	uLongf zlen;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int err;

	if ((err = part_open(s, e[from].part, &db)))
		return err;
	for (i = from; i < to; i++) {
		tmin = e[i].t < tmin ? e[i].t : tmin;
		tmax = e[i].t > tmax ? e[i].t : tmax;
		samples = cp_add_sat(samples, e[i].value);
		nseries += i == from || e[i].series != e[i - 1].series;
	}
	raw = malloc((to - from) * 4 * CP_VARINT_MAX + nseries * 2 * CP_VARINT_MAX + 16);
	sbuf = malloc((nseries + 1) * CP_VARINT_MAX);
	if (!raw || !sbuf) {
		err = -ENOMEM;
		goto out;
	}
	sn = cp_put_uvarint(sbuf, nseries);
	for (i = from; i < to; i = j) {
		int64_t pt = tmin, ps = 0;

		for (j = i; j < to && e[j].series == e[i].series; j++)
			;
		sn += cp_put_uvarint(sbuf + sn, (uint64_t)(e[i].series - prev));
		prev = e[i].series;
		/* values as multiples of their gcd: CPU time is counts x the period */
		gcd = 0;
		for (size_t k = i; k < j && gcd != 1; k++)
			gcd = gcd_u64(gcd, e[k].value < 0 ? -(uint64_t)e[k].value : (uint64_t)e[k].value);
		gcd = gcd && gcd <= INT64_MAX ? gcd : 1;
		rn += cp_put_uvarint(raw + rn, j - i);
		rn += cp_put_uvarint(raw + rn, gcd);
		/* column by column: runs of alike numbers compress far better */
		for (size_t k = i; k < j; k++) {
			rn += cp_put_uvarint(raw + rn, cp_zigzag(e[k].t - pt));
			pt = e[k].t;
		}
		for (size_t k = i; k < j; k++) {
			rn += cp_put_uvarint(raw + rn, cp_zigzag((int64_t)e[k].stack - ps));
			ps = e[k].stack;
		}
		for (size_t k = i; k < j; k++)
			rn += cp_put_uvarint(raw + rn, e[k].labels);
		for (size_t k = i; k < j; k++)
			rn += cp_put_uvarint(raw + rn, cp_zigzag(e[k].value / (int64_t)gcd));
	}
	zlen = compressBound(rn);
	if (!(z = malloc(zlen))) {
		err = -ENOMEM;
		goto out;
	}
	if (compress2(z, &zlen, raw, rn, 9) != Z_OK) {
		err = cp_error(EIO, "compressing a sample block failed");
		goto out;
	}
	if ((err = exec(db, "BEGIN IMMEDIATE", "writing samples")) ||
	    (err = prepare(db, "INSERT INTO blocks(t_min, t_max, entries, samples, rawlen, series, data)"
			       " VALUES(?, ?, ?, ?, ?, ?, ?)", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, tmin);
	sqlite3_bind_int64(st, 2, tmax);
	sqlite3_bind_int64(st, 3, (int64_t)(to - from));
	sqlite3_bind_int64(st, 4, samples);
	sqlite3_bind_int64(st, 5, (int64_t)rn);
	sqlite3_bind_blob(st, 6, sbuf, (int)sn, SQLITE_STATIC);
	sqlite3_bind_blob(st, 7, z, (int)zlen, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		err = dberr(db, "writing samples");
		goto out;
	}
	*pdb = db;
	*id = sqlite3_last_insert_rowid(db);
out:
	sqlite3_finalize(st);
	if (err && db && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory writing samples");
	free(raw);
	free(sbuf);
	free(z);
	return err;
}

struct block {
	sqlite3 *db;
	int64_t id;
};

/* A batch whose day k failed to commit (err) after days 0..k-1 did: deletes
 * their blocks again, so that the batch is stored nowhere, and returns err.
 * Only when that fails too (the disk that failed the commit may fail this) is
 * part of the batch left stored: the error then says so. */
static int undo_blocks(const struct block *blk, size_t k, int err)
{
	char why[512];
	size_t i;

	snprintf(why, sizeof(why), "%s", cp_errmsg(-err));
	for (i = 0; i < k; i++) {
		char sql[64];

		char also[512];
		int e2;

		snprintf(sql, sizeof(sql), "DELETE FROM blocks WHERE id = %" PRId64, blk[i].id);
		if ((e2 = exec(blk[i].db, sql, "taking back a failed batch"))) {
			snprintf(also, sizeof(also), "%s", cp_errmsg(-e2));
			return cp_error(-err, "%s; and %s: part of the batch is stored", why, also);
		}
	}
	return cp_error(-err, "%s", why);
}

static int local_append(struct cp_local *s, const struct cp_store_append *a, size_t n)
{
	struct entry *e = NULL;
	size_t ne = 0, ecap = 0, i, j, k;
	uint32_t *ostack = NULL, *olabels = NULL;
	sqlite3_stmt *pst = NULL;
	sqlite3 *pdb;
	struct block *blk = NULL;
	size_t nb = 0, bcap = 0;
	bool in_tx = false;
	int err = 0;

	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only");
	if ((err = exec(s->db, "BEGIN IMMEDIATE", "writing to the store")))
		return err;
	in_tx = true;
	/* under the write lock: take in what other writers added, then ours */
	if ((err = load_dict(s)))
		goto out;
	for (i = 0; i < n; i++) {
		const struct cp_profile *p = a[i].profile;
		struct cp_merge_opts mo = { 0 };
		struct cp_kv *sorted = NULL;
		char type[512], *lj = NULL;
		int64_t t = a[i].time_ns ? a[i].time_ns : p->time_nanos ? p->time_nanos : cp_now_ns();

		if (t < CP_STORE_TIME_MIN || t > CP_STORE_TIME_MAX) {
			err = cp_error(EINVAL, "profile time %" PRId64 " ns is out of range: the store takes times from"
					       " 1970-01-01 up to 2262-04-11T23:47:16Z (%" PRId64 " ns), that a query can reach",
				       t, (int64_t)CP_STORE_TIME_MAX);
			goto out;
		}
		free(ostack);
		free(olabels);
		ostack = malloc(((size_t)p->nsamples + 1) * sizeof(*ostack));
		olabels = malloc(((size_t)p->nsamples + 1) * sizeof(*olabels));
		sorted = malloc((a[i].nlabels + 1) * sizeof(*sorted));
		if (!ostack || !olabels || !sorted) {
			free(sorted);
			err = -ENOMEM;
			goto out;
		}
		if (a[i].nlabels) /* labels may be NULL when there are none */
			memcpy(sorted, a[i].labels, a[i].nlabels * sizeof(*sorted));
		cp_qsort(sorted, a[i].nlabels, sizeof(*sorted), kv_cmp);
		lj = labels_json(sorted, a[i].nlabels, &err);
		free(sorted);
		mo.out_stack = ostack;
		mo.out_labels = olabels;
		if (!lj || (err = cp_profile_merge(s->dict, p, &mo))) {
			free(lj);
			goto out;
		}
		/* the names build() gives a selected profile's header: stored with
		 * the dictionary, a select adds no strings of its own */
		for (k = 0; k <= p->ntypes; k++) {
			const struct cp_valuetype *vt = k < p->ntypes ? &p->sample_types[k] : &p->period_type;
			int64_t r1 = cp_profile_str(s->dict, cp_profile_string(p, vt->type));
			int64_t r2 = cp_profile_str(s->dict, cp_profile_string(p, vt->unit));

			if (r1 < 0 || r2 < 0) {
				err = (int)(r1 < 0 ? r1 : r2);
				break;
			}
		}
		if (err) {
			free(lj);
			goto out;
		}
		for (k = 0; k < p->ntypes; k++) {
			int64_t sid;

			if ((err = cp_store_type_name(p, (int)k, a[i].name, type, sizeof(type))) ||
			    (sid = series_id(s, type, lj)) < 0) {
				err = err ? err : (int)sid;
				break;
			}
			for (j = 0; j < p->nsamples; j++) {
				int64_t v = cp_profile_values(p, (uint32_t)j)[k];

				if (!v || ostack[j] == UINT32_MAX)
					continue;
				if (cp_grow((void **)&e, &ecap, ne + 1, sizeof(*e))) {
					err = -ENOMEM;
					break;
				}
				part_name(t, e[ne].part, sizeof(e[ne].part));
				e[ne].series = sid;
				e[ne].t = t;
				e[ne].stack = ostack[j];
				e[ne].labels = olabels[j];
				e[ne].value = v;
				ne++;
			}
			if (err)
				break;
		}
		free(lj);
		if (err)
			goto out;
	}
	if ((err = save_dict(s)))
		goto out;
	cp_qsort(e, ne, sizeof(*e), entry_cmp);
	/* identical keys (two profiles of one series at one time) add up */
	for (i = 0, j = 0; i < ne; i++) {
		if (j && !entry_cmp(&e[j - 1], &e[i]))
			e[j - 1].value = cp_add_sat(e[j - 1].value, e[i].value);
		else
			e[j++] = e[i];
	}
	ne = j;
	if ((err = prepare(s->db, "INSERT INTO partitions VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET"
				  " t_min = min(t_min, ?2), t_max = max(t_max, ?3)", &pst)))
		goto out;
	for (i = 0; i < ne; i = j) {
		int64_t tmin = INT64_MAX, tmax = INT64_MIN;

		for (j = i; j < ne && !strcmp(e[j].part, e[i].part); j++) {
			tmin = e[j].t < tmin ? e[j].t : tmin;
			tmax = e[j].t > tmax ? e[j].t : tmax;
		}
		/* the partition's file and schema exist before index.db lists it: a reader that sees the row
		 * finds the table (else a writer stopped in between left a row whose every query failed with
		 * "no such table: blocks", and an empty file that reads as a truncated one) */
		if ((err = part_open(s, e[i].part, &pdb)))
			goto out;
		sqlite3_bind_text(pst, 1, e[i].part, -1, SQLITE_STATIC);
		sqlite3_bind_int64(pst, 2, tmin);
		sqlite3_bind_int64(pst, 3, tmax);
		if ((err = bind_exec(pst, "writing partitions")))
			goto out;
		/* the day's block, its transaction left open until every day's is written: a day that
		 * cannot be written (full disk, I/O error) fails the batch with nothing stored.  The
		 * days are taken in order of their names under index.db's write lock, by every
		 * appender, so two never wait for each other's days. */
		if (cp_grow((void **)&blk, &bcap, nb + 1, sizeof(*blk))) {
			err = -ENOMEM;
			goto out;
		}
		if ((err = write_block(s, e, i, j, &blk[nb].db, &blk[nb].id)))
			goto out;
		nb++;
	}
	/* the dictionary first: the blocks refer to it.  A crash before the
	 * blocks commit leaves unused dictionary rows, never dangling ids. */
	if ((err = exec(s->db, "COMMIT", "writing to the store")))
		goto out;
	in_tx = false;
	for (i = 0; i < nb; i++)
		if ((err = exec(blk[i].db, "COMMIT", "writing samples")))
			break;
	if (err) /* a late failure: take back the days committed so far */
		err = undo_blocks(blk, i, err);
out:
	for (i = 0; i < nb; i++)
		if (!sqlite3_get_autocommit(blk[i].db))
			sqlite3_exec(blk[i].db, "ROLLBACK", NULL, NULL, NULL);
	free(blk);
	sqlite3_finalize(pst);
	if (in_tx) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		/* the series this batch added are gone again: forget their ids */
		cp_strtab_release(&s->skeys);
		if (cp_strtab_init(&s->skeys) && !err)
			err = -ENOMEM;
	}
	if (err) {
		if (err == -ENOMEM)
			cp_error(ENOMEM, "out of memory writing to the store");
		reset_dict(s); /* what is in memory may not be what was committed */
	}
	free(e);
	free(ostack);
	free(olabels);
	return err;
}

/* The bytes of the SQLite file base with its -wal and -shm files. */
static uint64_t files_bytes(const char *base)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char path[PATH_MAX + 8];
	struct stat sb;
	uint64_t n = 0;

	for (size_t k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s%s", base, sfx[k]);
		if (!stat(path, &sb) && S_ISREG(sb.st_mode))
			n += (uint64_t)sb.st_size;
	}
	return n;
}

static uint64_t part_bytes(struct cp_local *s, const char *name)
{
	char base[PATH_MAX];

	snprintf(base, sizeof(base), "%s/parts/%s.db", s->dir, name);
	return files_bytes(base);
}

/* Deletes the partitions names[0..n): their rows, in the transaction on
 * index.db that the caller began (BEGIN IMMEDIATE, rolled back by the caller
 * on error), committed here, then their files.  Rows first: a crash in between
 * leaves files that no row lists (readers never see them; cp_store_limit
 * removes them), never a listed partition whose file is gone half-way. */
static int drop_parts(struct cp_local *s, const char (*names)[16], size_t n, const char *what)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	sqlite3_stmt *st = NULL;
	char path[PATH_MAX];
	size_t i;
	int err = 0;

	if ((err = prepare(s->db, "DELETE FROM partitions WHERE name = ?", &st)))
		return err;
	for (i = 0; i < n; i++) {
		sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
		if ((err = bind_exec(st, what)))
			break;
	}
	sqlite3_finalize(st);
	if (err || (err = exec(s->db, "COMMIT", what)))
		return err;
	for (i = 0; i < n; i++) {
		part_forget(s, names[i]);
		for (size_t k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "%s/parts/%s.db%s", s->dir, names[i], sfx[k]);
			unlink(path);
		}
	}
	return 0;
}

static int local_retain(struct cp_local *s, int64_t keep_ns)
{
	int64_t cutoff = cp_now_ns() - keep_ns;
	sqlite3_stmt *st = NULL;
	char (*names)[16] = NULL;
	size_t n = 0, cap = 0;
	int err, rc;

	if ((err = exec(s->db, "BEGIN IMMEDIATE", "applying retention")) ||
	    (err = prepare(s->db, "SELECT name FROM partitions WHERE t_max < ?", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, cutoff);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cp_grow((void **)&names, &cap, n + 1, sizeof(*names))) {
			err = -ENOMEM;
			goto out;
		}
		snprintf(names[n++], sizeof(names[0]), "%s", (const char *)sqlite3_column_text(st, 0));
	}
	/* a partition left off the list would lose its row but keep its file */
	if (rc != SQLITE_DONE) {
		err = dberr(s->db, "applying retention");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((err = drop_parts(s, (const char (*)[16])names, n, "applying retention")))
		goto out;
	err = (int)n;
out:
	sqlite3_finalize(st);
	if (err < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(names);
	return err;
}

/* ---- the size limit ---- */

/* DIR/parts/YYYYMMDD.db, -wal or -shm: the day's name into day (9 bytes). */
static bool part_file(const char *f, char *day)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (f[i] < '0' || f[i] > '9')
			return false;
	if (strcmp(f + 8, ".db") && strcmp(f + 8, ".db-wal") && strcmp(f + 8, ".db-shm"))
		return false;
	memcpy(day, f, 8);
	day[8] = '\0';
	return true;
}

static int local_size(struct cp_local *s, uint64_t *bytes)
{
	char path[PATH_MAX], f[PATH_MAX + 256];
	struct dirent *de;
	struct stat sb;
	uint64_t n;
	DIR *d;

	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	n = files_bytes(path);
	snprintf(path, sizeof(path), "%s/parts", s->dir);
	if (!(d = opendir(path))) {
		if (errno == ENOENT) { /* a store opened read-only that never had data */
			*bytes = n;
			return 0;
		}
		return cp_error(errno, "%s: %s", path, strerror(errno));
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (!((len > 3 && !strcmp(de->d_name + len - 3, ".db")) ||
		      (len > 7 && (!strcmp(de->d_name + len - 7, ".db-wal") || !strcmp(de->d_name + len - 7, ".db-shm")))))
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		if (!stat(f, &sb) && S_ISREG(sb.st_mode)) /* gone meanwhile: retention */
			n += (uint64_t)sb.st_size;
	}
	closedir(d);
	*bytes = n;
	return 0;
}

/* Checkpoints db's WAL into the database and truncates it to 0 bytes (which
 * also truncates a database file that incremental_vacuum shrank).  Readers
 * still on older snapshots make that wait; after a short while it gives up:
 * *busy is set then, and the WAL stays. */
static int truncate_wal(sqlite3 *db, bool *busy)
{
	int rc;

	sqlite3_busy_timeout(db, 2000);
	rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_busy_timeout(db, 30000);
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		*busy = true;
		return 0;
	}
	return rc == SQLITE_OK ? 0 : dberr(db, "checkpointing the store");
}

/* Gives a partition's free pages back to the file system: incremental_vacuum
 * for files made with auto_vacuum=INCREMENTAL; files made before that are
 * converted to it by one VACUUM (only when they have free pages). */
static int reclaim(sqlite3 *db, const char *name, bool *busy)
{
	int err;

	if (count(db, "PRAGMA auto_vacuum") == 2)
		err = exec(db, "PRAGMA incremental_vacuum", name);
	else if (count(db, "PRAGMA freelist_count") > 0)
		err = exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", name);
	else
		err = 0;
	return err ? err : truncate_wal(db, busy);
}

/* Deletes the oldest blocks of a partition (by t_max, then t_min, in one
 * transaction) that take about need bytes of its file, and at least one.
 * A block is reckoned at its blobs' length times the ratio of the file's used
 * pages to all blocks' blobs (pages are not full).  The caller vacuums,
 * measures, and comes back for what is still missing; a large need is aimed
 * at by 7/8 only, so that blocks unlike the average do not make it delete more
 * than the bound asks.  *deleted: how many (0: there were none). */
static int trim_blocks(sqlite3 *db, uint64_t need, int64_t *deleted)
{
	sqlite3_stmt *st = NULL, *del = NULL;
	double ratio, got = 0, aim;
	int64_t n = 0, nblocks, used, payload;
	int err, rc = SQLITE_DONE;

	*deleted = 0;
	if ((err = exec(db, "BEGIN IMMEDIATE", "applying the size limit")))
		return err;
	used = (count(db, "PRAGMA page_count") - count(db, "PRAGMA freelist_count")) * count(db, "PRAGMA page_size");
	nblocks = count(db, "SELECT count(*) FROM blocks");
	payload = count(db, "SELECT coalesce(sum(length(series) + length(data)), 0) FROM blocks");
	ratio = payload > 0 && used > payload ? (double)used / (double)payload : 1.0;
	aim = nblocks && need > 16 * (uint64_t)(used / nblocks) ? (double)need * 7 / 8 : (double)need;
	if ((err = prepare(db, "SELECT id, length(series) + length(data) FROM blocks ORDER BY t_max, t_min, id", &st)) ||
	    (err = prepare(db, "DELETE FROM blocks WHERE id = ?", &del)))
		goto out;
	while (got < aim && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_bind_int64(del, 1, sqlite3_column_int64(st, 0));
		if ((err = bind_exec(del, "applying the size limit")))
			goto out;
		got += (double)sqlite3_column_int64(st, 1) * ratio;
		n++;
	}
	if (got < aim && rc != SQLITE_DONE) {
		err = dberr(db, "applying the size limit");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (!(err = exec(db, "COMMIT", "applying the size limit")))
		*deleted = n;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	if (err)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

/* The partition's row starts at its earliest block left (queries and
 * retention go by the row).  Under the index's write lock, so that an append
 * that lowers t_min meanwhile is not undone. */
static int update_tmin(struct cp_local *s, sqlite3 *pdb, const char *name)
{
	sqlite3_stmt *st = NULL;
	int64_t tmin;
	int err, rc;

	if ((err = exec(s->db, "BEGIN IMMEDIATE", "applying the size limit")))
		return err;
	if ((err = prepare(pdb, "SELECT min(t_min) FROM blocks", &st)))
		goto out;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		err = dberr(pdb, "applying the size limit");
		goto out;
	}
	if (sqlite3_column_type(st, 0) == SQLITE_NULL) { /* no block left: keep the row as it is */
		err = exec(s->db, "COMMIT", "applying the size limit");
		goto out;
	}
	tmin = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if ((err = prepare(s->db, "UPDATE partitions SET t_min = ?1 WHERE name = ?2 AND t_min < ?1", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, tmin);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if (!(err = bind_exec(st, "applying the size limit")))
		err = exec(s->db, "COMMIT", "applying the size limit");
out:
	sqlite3_finalize(st);
	if (err)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

/* One step towards the bound for a store of size bytes: under the index's
 * write lock, deletes the partition files no row lists (left by a crash
 * between a deletion's commit and its unlink), then whole days, the oldest
 * first, as long as all of the day has to go (or it is empty, the day that
 * trimming emptied) and it is not the newest.  *dropped: whether anything was
 * deleted; if not, *oldest: the day to delete blocks of ("" when none). */
static int drop_oldest(struct cp_local *s, uint64_t size, uint64_t max, const char *empty, char *oldest,
		       bool *dropped)
{
	sqlite3_stmt *st = NULL;
	char (*rows)[16] = NULL, (*names)[16] = NULL, path[PATH_MAX], day[16];
	size_t nrows = 0, rcap = 0, n = 0, ncap = 0, i;
	struct dirent *de;
	uint64_t b;
	DIR *d = NULL;
	int err, rc;

	*oldest = '\0';
	*dropped = false;
	if ((err = exec(s->db, "BEGIN IMMEDIATE", "applying the size limit")) ||
	    (err = prepare(s->db, "SELECT name FROM partitions ORDER BY name", &st)))
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cp_grow((void **)&rows, &rcap, nrows + 1, sizeof(*rows))) {
			err = cp_error(ENOMEM, "out of memory applying the size limit");
			goto out;
		}
		snprintf(rows[nrows++], sizeof(rows[0]), "%s", (const char *)sqlite3_column_text(st, 0));
	}
	if (rc != SQLITE_DONE) {
		err = dberr(s->db, "applying the size limit");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	/* files without a row: appends add the row before the file, so under
	 * the lock these are dead (the names, rows and files, are sorted alike) */
	snprintf(path, sizeof(path), "%s/parts", s->dir);
	if ((d = opendir(path))) {
		while ((de = readdir(d))) {
			size_t lo = 0, hi = nrows;

			if (!part_file(de->d_name, day))
				continue;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (strcmp(rows[mid], day) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < nrows && !strcmp(rows[lo], day))
				continue;
			for (i = 0; i < n && strcmp(names[i], day); i++)
				;
			if (i < n)
				continue;
			if (cp_grow((void **)&names, &ncap, n + 1, sizeof(*names))) {
				err = cp_error(ENOMEM, "out of memory applying the size limit");
				goto out;
			}
			snprintf(names[n++], sizeof(names[0]), "%s", day);
			b = part_bytes(s, day);
			size -= b < size ? b : size;
		}
	}
	for (i = 0; i + 1 < nrows && size > max; i++) {
		b = part_bytes(s, rows[i]);
		if (size - max < b && strcmp(rows[i], empty))
			break; /* part of this day is enough */
		if (cp_grow((void **)&names, &ncap, n + 1, sizeof(*names))) {
			err = cp_error(ENOMEM, "out of memory applying the size limit");
			goto out;
		}
		snprintf(names[n++], sizeof(names[0]), "%s", rows[i]);
		size -= b < size ? b : size;
	}
	if (i < nrows)
		snprintf(oldest, 16, "%s", rows[i]);
	if (!n) {
		err = exec(s->db, "COMMIT", "applying the size limit");
		goto out;
	}
	if (!(err = drop_parts(s, (const char (*)[16])names, n, "applying the size limit")))
		*dropped = true;
out:
	if (d)
		closedir(d);
	sqlite3_finalize(st);
	if (err)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(rows);
	free(names);
	return err;
}

static int64_t local_limit(struct cp_local *s, uint64_t max_bytes)
{
	uint64_t size0, size;
	char oldest[16], empty[16] = "", path[PATH_MAX];
	bool ibusy = false, pbusy = false, dropped;
	int round, err;

	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only: the size limit is applied by the process that writes");
	if ((err = local_size(s, &size0)))
		return err;
	if (size0 <= max_bytes)
		return 0;
	/* what costs no data first: the index's WAL */
	if ((err = truncate_wal(s->db, &ibusy)))
		return err;
	/* each round measures again: what a deletion frees is estimated, and
	 * other processes may write meanwhile */
	for (round = 0; round < 64; round++) {
		int64_t deleted;
		sqlite3 *pdb;

		if ((err = local_size(s, &size)))
			return err;
		if (size <= max_bytes || pbusy)
			break;
		if ((err = drop_oldest(s, size, max_bytes, empty, oldest, &dropped)))
			return err;
		if (dropped) { /* and what deleting the rows added to the index's WAL */
			if ((err = truncate_wal(s->db, &ibusy)))
				return err;
			continue;
		}
		/* the oldest blocks of the oldest day (the newest, where appends go,
		 * when it is the only one), unless a reader kept the index's WAL,
		 * which may be what is over */
		snprintf(path, sizeof(path), "%s/parts/%s.db", s->dir, oldest);
		if (!*oldest || ibusy || access(path, F_OK) < 0)
			break;
		if ((err = part_open(s, oldest, &pdb)) || (err = reclaim(pdb, oldest, &pbusy)) ||
		    (err = local_size(s, &size)))
			return err;
		if (size <= max_bytes || pbusy)
			break;
		if ((err = trim_blocks(pdb, size - max_bytes, &deleted)))
			return err;
		if (!deleted && !strcmp(empty, oldest))
			break; /* no block left: the dictionary alone is over the bound */
		if (!deleted) { /* the day goes whole, unless it is the newest */
			snprintf(empty, sizeof(empty), "%s", oldest);
			continue;
		}
		if ((err = reclaim(pdb, oldest, &pbusy)) || (err = update_tmin(s, pdb, oldest)) ||
		    (err = truncate_wal(s->db, &ibusy)))
			return err;
	}
	if ((err = local_size(s, &size)))
		return err;
	return size0 > size ? (int64_t)(size0 - size) : 0;
}

/* ---- reading ---- */

static int parse_labels(const char *json, struct cp_store_series *r)
{
	json_t *o = json_loads(json, 0, NULL), *v;
	const char *k;
	size_t i = 0;

	if (!o || !json_is_object(o)) {
		json_decref(o);
		return cp_error(EBADMSG, "the store has a series with malformed labels: %s", json);
	}
	r->names = calloc(json_object_size(o) + 1, sizeof(char *));
	r->values = calloc(json_object_size(o) + 1, sizeof(char *));
	if (!r->names || !r->values) {
		json_decref(o);
		return -ENOMEM;
	}
	json_object_foreach(o, k, v) {
		r->names[i] = strdup(k);
		r->values[i] = strdup(json_is_string(v) ? json_string_value(v) : "");
		r->nlabels = ++i;
		if (!r->names[i - 1] || !r->values[i - 1]) {
			json_decref(o);
			return -ENOMEM;
		}
	}
	json_decref(o);
	return 0;
}

static int local_series(struct cp_local *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n)
{
	struct cp_store_series *r = NULL;
	size_t cnt = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int err, rc;

	if ((err = prepare(s->db, "SELECT id, type, labels FROM series ORDER BY type, labels", &st)))
		return err;
	if (sel) /* one budget for the selector's regexes over all the series */
		cp_selector_begin(sel);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cp_store_series x = { 0 };
		int hit = 1;

		x.id = sqlite3_column_int64(st, 0);
		x.type = strdup((const char *)sqlite3_column_text(st, 1));
		if (!x.type || (err = parse_labels((const char *)sqlite3_column_text(st, 2), &x))) {
			err = err ? err : -ENOMEM;
			cp_store_series_release(&x);
			goto out;
		}
		if (sel)
			hit = !cp_selector_match_type(sel, x.type) ?
				      0 :
				      cp_selector_match_labels(sel, (const char *const *)x.names,
							       (const char *const *)x.values, x.nlabels);
		if (hit <= 0) { /* < 0: a regex too costly, the error is the answer */
			cp_store_series_release(&x);
			if ((err = hit))
				goto out;
			continue;
		}
		if (cp_grow((void **)&r, &cap, cnt + 1, sizeof(*r))) {
			cp_store_series_release(&x);
			err = -ENOMEM;
			goto out;
		}
		r[cnt++] = x;
	}
	if (rc != SQLITE_DONE)
		err = dberr(s->db, "reading series");
out:
	sqlite3_finalize(st);
	if (err) {
		if (err == -ENOMEM)
			cp_error(ENOMEM, "out of memory reading series");
		cp_store_series_free(r, cnt);
		return err;
	}
	*out = r;
	*n = cnt;
	return 0;
}

/* field k (0-based) of a type name:sample_type:sample_unit:period_type:period_unit into buf */
static const char *type_field(const char *type, int k, char *buf, size_t len)
{
	const char *p = type, *e;

	while (k-- > 0 && (p = strchr(p, ':')))
		p++;
	if (!p)
		return "";
	e = strchr(p, ':');
	snprintf(buf, len, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
	return buf;
}

/* When the types of the series share one name (the selector said "wall" and the store holds wall:wall
 * and wall:samples), the name's main type, as Pyroscope shows it: the sample type named in this table,
 * else the one measured in its period's own type (process_cpu:cpu:...:cpu, wall:wall:...:wall). NULL
 * when there is no single such type. */
static const char *main_type(const struct cp_store_series *ser, size_t n)
{
	static const char *const mains[][2] = {
		{ "process_cpu", "cpu" }, { "wall", "wall" },	 { "memory", "inuse_space" },
		{ "mutex", "delay" },	  { "block", "delay" }, { "goroutines", "goroutine" },
	};
	const char *pick = NULL;
	char name[128], n2[128], st[128], pt[128];
	size_t i, k;

	type_field(ser[0].type, 0, name, sizeof(name));
	for (i = 0; i < n; i++)
		if (strcmp(type_field(ser[i].type, 0, n2, sizeof(n2)), name))
			return NULL;
	for (i = 0; i < n; i++) {
		const char *want = NULL;

		if (pick && !strcmp(pick, ser[i].type))
			continue;
		type_field(ser[i].type, 1, st, sizeof(st));
		for (k = 0; k < sizeof(mains) / sizeof(mains[0]); k++)
			if (!strcmp(mains[k][0], name))
				want = mains[k][1];
		if (want ? strcmp(st, want) : strcmp(st, type_field(ser[i].type, 3, pt, sizeof(pt))))
			continue;
		if (pick)
			return NULL;
		pick = ser[i].type;
	}
	return pick;
}

/* The matching series, which must be of one type (or of one name with a main type: main_type). */
static int resolve(struct cp_local *s, const struct cp_selector *sel, struct cp_store_series **ser, size_t *n)
{
	char list[512] = "";
	size_t i, used = 0, ntypes = 0;
	int err = local_series(s, sel, ser, n);

	if (err)
		return err;
	if (!*n) {
		cp_store_series_free(*ser, *n);
		*ser = NULL;
		return cp_error(ENOENT, "no stored series match the selector (cprof query --series lists them)");
	}
	for (i = 0; i < *n; i++) {
		if (i && !strcmp((*ser)[i].type, (*ser)[i - 1].type))
			continue;
		ntypes++;
		if (used < sizeof(list) - 1)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", (*ser)[i].type);
	}
	if (ntypes > 1 && main_type(*ser, *n)) {
		char *pick = strdup(main_type(*ser, *n));
		size_t kept = 0;

		if (!pick)
			return cp_error(ENOMEM, "out of memory");
		for (i = 0; i < *n; i++) {
			if (strcmp((*ser)[i].type, pick))
				cp_store_series_release(&(*ser)[i]);
			else
				(*ser)[kept++] = (*ser)[i];
		}
		free(pick);
		*n = kept;
		return 0;
	}
	if (ntypes > 1) {
		cp_store_series_free(*ser, *n);
		*ser = NULL;
		*n = 0;
		return cp_error(EINVAL, "the selector matches %zu profile types; name one: %s", ntypes, list);
	}
	return 0;
}

struct agg_entry {
	uint32_t stack, labels;
	int64_t value;
};

struct agg {
	struct agg_entry *e;
	size_t n, cap;
	struct cp_index idx;
	int64_t tmin, tmax;
};

static int agg_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct agg_entry *a = &((const struct agg *)ctx)->e[id], *b = key;

	return a->stack == b->stack && a->labels == b->labels;
}

static int agg_add(struct agg *g, uint32_t stack, uint32_t labels, int64_t v, int64_t t)
{
	struct agg_entry k = { stack, labels, v };
	uint32_t h = (uint32_t)cp_hash_u64(((uint64_t)stack << 32) | labels, 9);
	uint32_t id = cp_index_find(&g->idx, h, agg_eq, g, &k);

	g->tmin = t < g->tmin ? t : g->tmin;
	g->tmax = t > g->tmax ? t : g->tmax;
	if (id != UINT32_MAX) {
		g->e[id].value = cp_add_sat(g->e[id].value, v);
		return 0;
	}
	if (cp_grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e)) || cp_index_add(&g->idx, h, (uint32_t)g->n))
		return -ENOMEM;
	g->e[g->n++] = k;
	return 0;
}

/* Visits every entry of the wanted series (want[i]: series id, sorted) in
 * [from, to]; fn returns 0 to go on. */
typedef int (*visit_fn)(void *ctx, size_t series_index, int64_t t, uint32_t stack, uint32_t labels, int64_t v);

static long find_series(const int64_t *want, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (want[mid] == id)
			return (long)mid;
		if (want[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int scan(struct cp_local *s, const int64_t *want, size_t nwant, int64_t from, int64_t to, visit_fn fn, void *ctx)
{
	sqlite3_stmt *pst = NULL, *bst = NULL;
	uint8_t *raw = NULL;
	uint64_t *cols = NULL;
	char (*names)[16] = NULL;
	size_t rawcap = 0, colcap = 0, nnames = 0, namecap = 0, pi;
	int err = 0, rc;

	/* the partitions first: no statement of the index stays open during the
	 * scan, so that load_dict() below sees what writers committed since */
	if ((err = prepare(s->db, "SELECT name FROM partitions WHERE t_max >= ? AND t_min <= ? ORDER BY name", &pst)))
		return err;
	sqlite3_bind_int64(pst, 1, from);
	sqlite3_bind_int64(pst, 2, to);
	while ((rc = sqlite3_step(pst)) == SQLITE_ROW) {
		if (cp_grow((void **)&names, &namecap, nnames + 1, sizeof(*names))) {
			err = cp_error(ENOMEM, "out of memory reading the store");
			break;
		}
		snprintf(names[nnames++], sizeof(names[0]), "%s", (const char *)sqlite3_column_text(pst, 0));
	}
	if (!err && rc != SQLITE_DONE)
		err = dberr(s->db, "reading partitions");
	sqlite3_finalize(pst);
	for (pi = 0; !err && pi < nnames; pi++) {
		sqlite3 *db;

		if ((err = part_open(s, names[pi], &db))) {
			if (err == -ENOENT) { /* removed by retention since we listed it */
				err = 0;
				continue;
			}
			break;
		}
		if ((err = prepare(db, "SELECT rawlen, series, data, t_min FROM blocks WHERE t_max >= ? AND t_min <= ?"
				       " ORDER BY id", &bst)))
			break;
		sqlite3_bind_int64(bst, 1, from);
		sqlite3_bind_int64(bst, 2, to);
		while (!err && (rc = sqlite3_step(bst)) == SQLITE_ROW) {
			const uint8_t *sp = sqlite3_column_blob(bst, 1), *send = sp + sqlite3_column_bytes(bst, 1);
			const uint8_t *p, *end;
			uint64_t ns = 0, v, rawlen = (uint64_t)sqlite3_column_int64(bst, 0);
			long *idx = NULL;
			int64_t sid = 0;
			bool any = false;
			size_t used, i;
			uLongf dlen;

			if (!(used = cp_get_uvarint(sp, send, &ns)) || ns > (uint64_t)(send - sp) ||
			    !(idx = calloc(ns + 1, sizeof(*idx)))) {
				err = used ? -ENOMEM : cp_error(EBADMSG, "a sample block is corrupt (series list)");
				break;
			}
			sp += used;
			for (i = 0; i < ns; i++) {
				if (!(used = cp_get_uvarint(sp, send, &v))) {
					err = cp_error(EBADMSG, "a sample block is corrupt (series list)");
					break;
				}
				sp += used;
				sid += (int64_t)v;
				idx[i] = find_series(want, nwant, sid);
				any |= idx[i] >= 0;
			}
			if (err || !any) {
				free(idx);
				continue;
			}
			if (rawlen > (1u << 30) || cp_grow((void **)&raw, &rawcap, rawlen + 1, 1)) {
				free(idx);
				err = rawlen > (1u << 30) ? cp_error(EBADMSG, "a sample block is corrupt (size)") : -ENOMEM;
				break;
			}
			dlen = rawlen;
			if (uncompress(raw, &dlen, sqlite3_column_blob(bst, 2), (uLong)sqlite3_column_bytes(bst, 2)) != Z_OK ||
			    dlen != rawlen) {
				free(idx);
				err = cp_error(EBADMSG, "a sample block is corrupt (compressed data)");
				break;
			}
			p = raw;
			end = raw + rawlen;
			for (i = 0; i < ns && !err; i++) {
				uint64_t cnt = 0, gcd = 1, *col;
				int64_t t, stack = 0;
				size_t u0, k;

				/* every series's times start again from the block's t_min */
				if (!(used = cp_get_uvarint(p, end, &cnt)) || !(u0 = cp_get_uvarint(p + used, end, &gcd)) ||
				    !gcd || gcd > INT64_MAX || cnt > (uint64_t)(end - p)) {
					err = cp_error(EBADMSG, "a sample block is corrupt (entries)");
					break;
				}
				p += used + u0;
				/* four columns of cnt varints: times, stacks, label sets, values */
				if (cp_grow((void **)&cols, &colcap, 4 * cnt + 1, sizeof(*cols))) {
					err = -ENOMEM;
					break;
				}
				for (k = 0; k < 4 * cnt; k++) {
					if (!(used = cp_get_uvarint(p, end, &cols[k]))) {
						err = cp_error(EBADMSG, "a sample block is corrupt (entries)");
						break;
					}
					p += used;
				}
				if (err || idx[i] < 0)
					continue;
				t = sqlite3_column_int64(bst, 3);
				for (k = 0, col = cols; k < cnt; k++) {
					uint64_t c = col[2 * cnt + k];

					t += cp_unzigzag(col[k]);
					stack += cp_unzigzag(col[cnt + k]);
					/* a block written after load_dict() may use newer
					 * dictionary entries (committed before the block) */
					if ((stack < 0 || (uint64_t)stack > s->nstack || c > s->nls) &&
					    (stack < 0 || (err = load_dict(s)) || (uint64_t)stack > s->nstack ||
					     c > s->nls)) {
						if (!err)
							err = cp_error(EBADMSG, "a sample block refers to a stack the store does not have");
						break;
					}
					if (t < from || t >= to)
						continue;
					if ((err = fn(ctx, (size_t)idx[i], t, (uint32_t)stack, (uint32_t)c,
						      (int64_t)((uint64_t)cp_unzigzag(col[3 * cnt + k]) * gcd))))
						break;
				}
			}
			free(idx);
		}
		if (!err && rc != SQLITE_DONE)
			err = dberr(db, "reading samples");
		sqlite3_finalize(bst);
		bst = NULL;
	}
	free(names);
	free(raw);
	free(cols);
	return err;
}

struct select_ctx {
	struct agg *groups;
	size_t *group_of; /* series index -> group */
};

static int add_to_group(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v)
{
	struct select_ctx *c = ctx;

	return agg_add(&c->groups[c->group_of[si]], stack, labels, v, t);
}

static struct cp_profile *build(struct cp_local *s, const char *type, struct agg *g)
{
	char st[128], su[128], pt[128], pu[128];
	struct cp_profile *p = NULL;
	size_t i;
	int err;

	cp_profile_clear_samples(s->dict);
	if ((err = cp_profile_add_sample_type(s->dict, cp_store_type_part(type, 1, st, sizeof(st)),
					      cp_store_type_part(type, 2, su, sizeof(su)))) ||
	    (err = cp_profile_set_period_type(s->dict, cp_store_type_part(type, 3, pt, sizeof(pt)),
					      cp_store_type_part(type, 4, pu, sizeof(pu)), 0)))
		goto out;
	for (i = 0; i < g->n; i++)
		if (g->e[i].value && (err = cp_profile_add_sample(s->dict, g->e[i].stack, g->e[i].labels, &g->e[i].value)))
			goto out;
	if (g->n) {
		s->dict->time_nanos = g->tmin;
		s->dict->duration_nanos = cp_sub_sat(g->tmax, g->tmin);
	}
	p = cp_profile_copy(s->dict, NULL); /* only what the samples use */
	err = p ? 0 : -errno;
out:
	cp_profile_clear_samples(s->dict);
	if (err)
		errno = -err;
	return p;
}

struct series_group {
	int64_t id;
	size_t group;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct series_group *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int local_select(struct cp_local *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	struct cp_store_series *ser = NULL;
	struct cp_store_result *res = NULL;
	struct select_ctx c = { NULL, NULL };
	struct series_group *pairs = NULL;
	int64_t *want = NULL;
	size_t nser = 0, ngroups = 0, i, j;
	int err;

	if ((err = resolve(s, q->sel, &ser, &nser)) || (err = load_dict(s)))
		goto out;
	want = calloc(nser, sizeof(*want));
	pairs = calloc(nser, sizeof(*pairs));
	c.group_of = calloc(nser, sizeof(*c.group_of));
	res = calloc(nser + 1, sizeof(*res));
	c.groups = calloc(nser + 1, sizeof(*c.groups));
	if (!want || !pairs || !c.group_of || !res || !c.groups) {
		err = -ENOMEM;
		goto out;
	}
	/* groups by the label's value, in order of first appearance */
	for (i = 0; i < nser; i++) {
		const char *gv = "";

		if (q->group_by)
			for (j = 0; j < ser[i].nlabels; j++)
				if (!strcmp(ser[i].names[j], q->group_by))
					gv = ser[i].values[j];
		for (j = 0; j < ngroups && strcmp(res[j].group, gv); j++)
			;
		if (j == ngroups) {
			if (!(res[j].group = strdup(gv))) {
				err = -ENOMEM;
				goto out;
			}
			c.groups[j].tmin = INT64_MAX;
			c.groups[j].tmax = INT64_MIN;
			ngroups++;
		}
		pairs[i].id = ser[i].id;
		pairs[i].group = j;
	}
	/* the scan wants series ids sorted */
	cp_qsort(pairs, nser, sizeof(*pairs), pair_cmp);
	for (i = 0; i < nser; i++) {
		want[i] = pairs[i].id;
		c.group_of[i] = pairs[i].group;
	}
	if ((err = scan(s, want, nser, q->from, q->to, add_to_group, &c)))
		goto out;
	for (i = 0; i < ngroups; i++)
		if (!(res[i].profile = build(s, ser[0].type, &c.groups[i]))) {
			err = -errno;
			goto out;
		}
	*out = res;
	*n = ngroups;
	res = NULL;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory reading the store");
	for (i = 0; c.groups && i < nser + 1; i++) {
		free(c.groups[i].e);
		cp_index_release(&c.groups[i].idx);
	}
	free(c.groups);
	free(c.group_of);
	free(want);
	free(pairs);
	cp_store_results_free(res, ngroups);
	cp_store_series_free(ser, nser);
	return err;
}

static int id_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct over_ctx {
	struct cp_buckets b;
	int64_t *totals;
};

static int add_to_step(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v)
{
	struct over_ctx *c = ctx;
	ssize_t k = cp_buckets_index(&c->b, t);

	(void)si;
	(void)stack;
	(void)labels;
	if (k >= 0)
		c->totals[k] = cp_add_sat(c->totals[k], v);
	return 0;
}

static int local_over_time(struct cp_local *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
		       struct cp_buckets *b, char **type)
{
	struct cp_store_series *ser = NULL;
	struct over_ctx c = { { 0, 0, 0 }, NULL };
	int64_t *want = NULL;
	size_t nser = 0, i;
	int err;

	if ((err = cp_buckets_align(q->from, q->to, step, &c.b)))
		return err;
	if ((err = resolve(s, q->sel, &ser, &nser)) || (err = load_dict(s)))
		goto out;
	c.totals = calloc(c.b.n, sizeof(*c.totals));
	want = malloc(nser * sizeof(*want));
	if (!c.totals || !want || !(*type = strdup(ser[0].type))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nser; i++)
		want[i] = ser[i].id;
	cp_qsort(want, nser, sizeof(*want), id_cmp);
	/* whole buckets: from the first one's start to the last one's end */
	if ((err = scan(s, want, nser, c.b.start, cp_buckets_end(&c.b), add_to_step, &c))) {
		free(*type);
		*type = NULL;
		goto out;
	}
	*totals = c.totals;
	*b = c.b;
	c.totals = NULL;
out:
	free(c.totals);
	free(want);
	cp_store_series_free(ser, nser);
	return err;
}

static int local_stats(struct cp_local *s, struct cp_store_stats *st)
{
	char path[PATH_MAX];
	struct stat sb;
	struct dirent *de;
	sqlite3_stmt *ps = NULL;
	DIR *d;
	int err;

	memset(st, 0, sizeof(*st));
	st->series = count(s->db, "SELECT count(*) FROM series");
	if ((err = load_dict(s)))
		return err;
	st->stacks = s->nstack;
	st->locations = s->nloc;
	st->functions = count(s->db, "SELECT count(*) FROM functions");
	if ((err = prepare(s->db, "SELECT name FROM partitions", &ps)))
		return err;
	while (sqlite3_step(ps) == SQLITE_ROW) {
		sqlite3 *db;

		if (part_open(s, (const char *)sqlite3_column_text(ps, 0), &db))
			continue;
		st->blocks += count(db, "SELECT count(*) FROM blocks");
		st->entries += count(db, "SELECT coalesce(sum(entries), 0) FROM blocks");
		st->samples += count(db, "SELECT coalesce(sum(samples), 0) FROM blocks");
	}
	sqlite3_finalize(ps);
	/* bytes: every file of the store, as du would count them */
	for (int pass = 0; pass < 2; pass++) {
		snprintf(path, sizeof(path), pass ? "%s/parts" : "%s", s->dir);
		if (!(d = opendir(path)))
			continue;
		while ((de = readdir(d))) {
			char f[PATH_MAX + 256];

			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			if (!stat(f, &sb) && S_ISREG(sb.st_mode))
				st->bytes += sb.st_size;
		}
		closedir(d);
	}
	return 0;
}

/* ---- the backend ---- */

static struct cp_local *L(struct cp_store *s)
{
	return (struct cp_local *)s;
}

static int op_append(struct cp_store *s, const struct cp_store_append *a, size_t n)
{
	return local_append(L(s), a, n);
}

static int op_retain(struct cp_store *s, int64_t keep_ns)
{
	return local_retain(L(s), keep_ns);
}

static int64_t op_limit(struct cp_store *s, uint64_t max_bytes)
{
	return local_limit(L(s), max_bytes);
}

static int op_size(struct cp_store *s, uint64_t *bytes)
{
	return local_size(L(s), bytes);
}

static int op_series(struct cp_store *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n)
{
	return local_series(L(s), sel, out, n);
}

static int op_select(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	return local_select(L(s), q, out, n);
}

static int op_over_time(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
			struct cp_buckets *b, char **type)
{
	return local_over_time(L(s), q, step, totals, b, type);
}

static int op_stats(struct cp_store *s, struct cp_store_stats *st)
{
	return local_stats(L(s), st);
}

static void op_close(struct cp_store *s)
{
	local_close(L(s));
}

static const struct cp_store_ops local_ops = {
	.name = "local",
	.append = op_append,
	.retain = op_retain,
	.limit = op_limit,
	.size = op_size,
	.series = op_series,
	.select = op_select,
	.over_time = op_over_time,
	.stats = op_stats,
	.close = op_close,
};
