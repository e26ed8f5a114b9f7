/* SPDX-License-Identifier: MIT */
/* The local backend: opening and closing the store, appending, and the
 * table of operations that ties the modules of the local store together
 * (local.h).  The SQLite schema of index.db is here; a partition's is in
 * parts.c; docs/STORE.md describes both. */
#include "handle.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"
#include "blocks.h"
#include "compact.h"
#include "db.h"
#include "limit.h"
#include "query.h"

#define SCHEMA_VERSION "2"

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

static const struct cp_store_ops local_ops;
static void local_close(struct cp_local *s);

/* ---- open / close ---- */

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

struct cp_store *cp_store_open(const char *dir, enum cp_store_mode mode)
{
	struct cp_local *s = calloc(1, sizeof(*s));
	char path[PATH_MAX];
	sqlite3_stmt *st = NULL;
	int err = 0;

	if (!s || !(s->dir = strdup(dir)) || cp_series_ids_init(&s->series) || cp_dict_reset(&s->dict)) {
		err = cp_error(ENOMEM, "out of memory opening the store");
		goto out;
	}
	s->base.ops = &local_ops;
	s->mode = mode;
	s->parts.dir = s->dir;
	s->parts.write = mode == CP_STORE_WRITE;
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
	if ((err = cp_db_open(path, mode == CP_STORE_WRITE, "", &s->db)))
		goto out;
	s->dict.db = s->db;
	/* the schema and its version in one transaction: a store is made whole or not at all (a full disk) */
	if (mode == CP_STORE_WRITE &&
	    ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE;", path)) || (err = cp_db_exec(s->db, index_schema, path)) ||
	     (err = cp_db_exec(s->db, "INSERT OR IGNORE INTO meta VALUES('schema', '" SCHEMA_VERSION "'); COMMIT;", path)))) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* the message stays err's */
		goto out;
	}
	if (!cp_db_count(s->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'meta'")) {
		err = cp_error(EPROTO, "%s: the store was never finished (was the disk full when it was made?): write to it"
				       " again (cprof import) or remove it", path);
		goto out;
	}
	if ((err = cp_db_prepare(s->db, "SELECT value FROM meta WHERE key = 'schema'", &st)))
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
	if (!s)
		return;
	cp_parts_close(&s->parts);
	cp_series_ids_release(&s->series); /* its statements first */
	sqlite3_close(s->db);
	cp_dict_release(&s->dict);
	free(s->dir);
	free(s);
}

/* ---- appending ---- */

/* the UTC day of t (>= 0): its partition */
static int64_t day_of(int64_t t)
{
	return t / CP_DAY_NS;
}

/* entries by day, then in the order of a block */
static int entry_cmp(const void *a, const void *b)
{
	const struct cp_block_entry *x = a, *y = b;

	if (day_of(x->t) != day_of(y->t))
		return day_of(x->t) < day_of(y->t) ? -1 : 1;
	return cp_block_entry_cmp(x, y);
}

/* Writes e[0..n) (one day, sorted) as one block into the partition db, in a
 * transaction left open: *pdb its partition, *id its row.  On error, nothing
 * is left open. */
static int write_block(sqlite3 *db, const struct cp_block_entry *e, size_t n, sqlite3 **pdb, int64_t *id)
{
	struct cp_block b;
	sqlite3_stmt *st = NULL;
	int err;

	if ((err = cp_block_encode(e, n, &b)))
		return err;
	if ((err = cp_db_exec(db, "BEGIN IMMEDIATE", "writing samples")) ||
	    (err = cp_db_prepare(db, "INSERT INTO blocks(t_min, t_max, entries, samples, rawlen, series, data)"
				  " VALUES(?, ?, ?, ?, ?, ?, ?)", &st)))
		goto out;
	cp_part_bind_block(st, &b);
	if (sqlite3_step(st) != SQLITE_DONE) {
		err = cp_db_error(db, "writing samples");
		goto out;
	}
	*pdb = db;
	*id = sqlite3_last_insert_rowid(db);
out:
	sqlite3_finalize(st);
	if (err && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	cp_block_release(&b);
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
		if ((e2 = cp_db_exec(blk[i].db, sql, "taking back a failed batch"))) {
			snprintf(also, sizeof(also), "%s", cp_errmsg(-e2));
			return cp_error(-err, "%s; and %s: part of the batch is stored", why, also);
		}
	}
	return cp_error(-err, "%s", why);
}

/* Merges p's dictionary into the store's: *ostack and *olabels (made
 * again) take each sample's stack and label set ids there.  The names
 * build() gives a selected profile's header are stored with the
 * dictionary too, so a select adds no strings of its own. */
static int merge_one(struct cp_local *s, const struct cp_profile *p, uint32_t **ostack, uint32_t **olabels)
{
	struct cp_merge_opts mo = { 0 };
	int err;

	free(*ostack);
	free(*olabels);
	*ostack = malloc(((size_t)p->nsamples + 1) * sizeof(**ostack));
	*olabels = malloc(((size_t)p->nsamples + 1) * sizeof(**olabels));
	if (!*ostack || !*olabels)
		return cp_error(ENOMEM, "out of memory writing to the store");
	mo.out_stack = *ostack;
	mo.out_labels = *olabels;
	if ((err = cp_profile_merge(s->dict.p, p, &mo)))
		return err;
	for (size_t k = 0; k <= p->ntypes; k++) {
		const struct cp_valuetype *vt = k < p->ntypes ? &p->sample_types[k] : &p->period_type;
		int64_t r1 = cp_profile_str(s->dict.p, cp_profile_string(p, vt->type));
		int64_t r2 = cp_profile_str(s->dict.p, cp_profile_string(p, vt->unit));

		if (r1 < 0 || r2 < 0)
			return (int)(r1 < 0 ? r1 : r2);
	}
	return 0;
}

static int local_append(struct cp_local *s, const struct cp_store_append *a, size_t n)
{
	struct cp_block_entry *e = NULL;
	size_t ne = 0, ecap = 0, i, j, k;
	uint32_t *ostack = NULL, *olabels = NULL;
	const struct cp_profile *merged = NULL;
	sqlite3_stmt *pst = NULL;
	sqlite3 *pdb;
	struct block *blk = NULL;
	size_t nb = 0, bcap = 0;
	bool in_tx = false;
	int err = 0;

	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only");
	if ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE", "writing to the store")))
		return err;
	in_tx = true;
	/* under the write lock: take in what other writers added, then ours */
	if ((err = cp_dict_catch_up(&s->dict)))
		goto out;
	for (i = 0; i < n; i++) {
		const struct cp_profile *p = a[i].profile;
		char type[512], *lj = NULL;
		int64_t t = a[i].time_ns ? a[i].time_ns : p->time_nanos ? p->time_nanos : cp_now_ns();
		size_t nsel = a[i].sel ? a[i].nsel : p->nsamples;

		if (t < CP_STORE_TIME_MIN || t > CP_STORE_TIME_MAX) {
			err = cp_error(EINVAL, "profile time %" PRId64 " ns is out of range: the store takes times from"
					       " 1970-01-01 up to 2262-04-11T23:47:16Z (%" PRId64 " ns), that a query can reach",
				       t, (int64_t)CP_STORE_TIME_MAX);
			goto out;
		}
		for (j = 0; a[i].sel && j < nsel; j++) {
			if (a[i].sel[j] >= p->nsamples) {
				err = cp_error(EINVAL, "sample %" PRIu32 " of a profile of %" PRIu32 " samples", a[i].sel[j],
					       p->nsamples);
				goto out;
			}
		}
		lj = cp_series_labels_json(a[i].labels, a[i].nlabels, &err);
		if (!lj)
			goto dict_error;
		/* a profile the last append merged already (its samples' ids are in
		 * ostack and olabels) */
		if (p != merged && (err = merge_one(s, p, &ostack, &olabels)))
			goto dict_error;
		merged = p;
		for (k = 0; k < p->ntypes; k++) {
			int64_t sid;

			if ((err = cp_store_type_name(p, (int)k, a[i].name, type, sizeof(type))) ||
			    (sid = cp_series_id(&s->series, s->db, type, lj)) < 0) {
				err = err ? err : (int)sid;
				break;
			}
			for (size_t js = 0; js < nsel; js++) {
				int64_t v;

				j = a[i].sel ? a[i].sel[js] : js;
				v = cp_profile_values(p, (uint32_t)j)[k];

				if (!v || ostack[j] == UINT32_MAX)
					continue;
				if (cp_grow((void **)&e, &ecap, ne + 1, sizeof(*e))) {
					err = cp_error(ENOMEM, "out of memory writing samples");
					break;
				}
				e[ne].series = sid;
				e[ne].t = t;
				e[ne].stack = cp_dict_row(ostack[j], s->dict.bstack); /* the rows' ids */
				e[ne].labels = cp_dict_row(olabels[j], s->dict.bls);
				e[ne].value = v;
				ne++;
			}
			if (err)
				break;
		}
		free(lj);
		if (err)
			goto out;
		continue;
dict_error:
		err = cp_dict_error(err, "adding a profile to the store's dictionary");
		free(lj);
		goto out;
	}
	if ((err = cp_dict_save(&s->dict)))
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
	if ((err = cp_db_prepare(s->db, "INSERT INTO partitions VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET"
				  " t_min = min(t_min, ?2), t_max = max(t_max, ?3)", &pst)))
		goto out;
	for (i = 0; i < ne; i = j) {
		int64_t tmin = INT64_MAX, tmax = INT64_MIN;
		char part[16];

		cp_part_name(e[i].t, part, sizeof(part));
		for (j = i; j < ne && day_of(e[j].t) == day_of(e[i].t); j++) {
			tmin = e[j].t < tmin ? e[j].t : tmin;
			tmax = e[j].t > tmax ? e[j].t : tmax;
		}
		/* the partition's file and schema exist before index.db lists it: a reader that sees the row
		 * finds the table (else a writer stopped in between left a row whose every query failed with
		 * "no such table: blocks", and an empty file that reads as a truncated one) */
		if ((err = cp_parts_open(&s->parts, part, &pdb)))
			goto out;
		sqlite3_bind_text(pst, 1, part, -1, SQLITE_STATIC);
		sqlite3_bind_int64(pst, 2, tmin);
		sqlite3_bind_int64(pst, 3, tmax);
		if ((err = cp_db_step(pst, "writing partitions")))
			goto out;
		/* the day's block, its transaction left open until every day's is written: a day that
		 * cannot be written (full disk, I/O error) fails the batch with nothing stored.  The
		 * days are taken in order of their names under index.db's write lock, by every
		 * appender, so two never wait for each other's days. */
		if (cp_grow((void **)&blk, &bcap, nb + 1, sizeof(*blk))) {
			err = cp_error(ENOMEM, "out of memory writing samples");
			goto out;
		}
		if ((err = write_block(pdb, e + i, j - i, &blk[nb].db, &blk[nb].id)))
			goto out;
		nb++;
	}
	/* the dictionary first: the blocks refer to it.  A crash before the
	 * blocks commit leaves unused dictionary rows, never dangling ids. */
	if ((err = cp_db_exec(s->db, "COMMIT", "writing to the store")))
		goto out;
	in_tx = false;
	for (i = 0; i < nb; i++)
		if ((err = cp_db_exec(blk[i].db, "COMMIT", "writing samples")))
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
		if (cp_series_ids_reset(&s->series) && !err)
			err = cp_error(ENOMEM, "out of memory writing to the store");
	}
	if (err)
		cp_dict_rolled_back(&s->dict);
	free(e);
	free(ostack);
	free(olabels);
	return err;
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
	return cp_local_retain(L(s), keep_ns);
}

static int64_t op_limit(struct cp_store *s, uint64_t max_bytes)
{
	return cp_local_limit(L(s), max_bytes);
}

static int op_size(struct cp_store *s, uint64_t *bytes)
{
	return cp_local_size(L(s), bytes);
}

static int op_series(struct cp_store *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n)
{
	return cp_series_list(L(s)->db, sel, out, n);
}

static int op_select(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	return cp_local_select(L(s), q, out, n);
}

static int op_over_time(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
			struct cp_buckets *b, char **type)
{
	return cp_local_over_time(L(s), q, step, totals, b, type);
}

static int op_over_time_groups(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			       struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b)
{
	return cp_local_over_time_groups(L(s), q, step, out, n, b);
}

static size_t op_memory(struct cp_store *s)
{
	const struct cp_local *l = L(s);

	return (l->dict.p ? cp_profile_bytes(l->dict.p) : 0) + cp_strtab_bytes(&l->series.keys) +
	       l->series.cap * sizeof(*l->series.ids);
}

static void op_limit_memory(struct cp_store *s, size_t bytes)
{
	L(s)->dict.max_bytes = bytes;
}

static int op_stats(struct cp_store *s, struct cp_store_stats *st)
{
	return cp_local_stats(L(s), st);
}

static int op_compact(struct cp_store *s, const struct cp_downsample *p, int64_t now, int max_days,
		      struct cp_compact_stats *st)
{
	return cp_local_compact(L(s), p, now, max_days, st);
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
	.over_time_groups = op_over_time_groups,
	.stats = op_stats,
	.memory = op_memory,
	.limit_memory = op_limit_memory,
	.compact = op_compact,
	.close = op_close,
};
