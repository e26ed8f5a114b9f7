/* SPDX-License-Identifier: MIT */
/* The local backend: opening and closing the store, appending, and the
 * table of operations that ties the modules of the local store together
 * (local.h).  The SQLite schema of store.db is here; a day's is in
 * parts.c; docs/STORE.md describes both. */
#include "handle.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"
#include "backends.h"
#include "blocks.h"
#include "compact.h"
#include "db.h"
#include "limit.h"
#include "query.h"

#define SCHEMA_VERSION "3"
#define INDEX_FILE "store.db" /* schema 3; schema 2's was index.db (migrate.h) */

/* what the index file holds: its schema version, and the list of days (docs/STORE.md) */
static const char index_schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
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

struct cp_local *cp_local_open(const char *dir, enum cp_store_mode mode, const char *index)
{
	struct cp_local *s = calloc(1, sizeof(*s));
	char path[PATH_MAX];
	sqlite3_stmt *st = NULL;
	int err = 0;

	if (!s || !(s->dir = strdup(dir))) {
		err = cp_error(ENOMEM, "out of memory opening the store");
		goto out;
	}
	s->base.ops = &local_ops;
	s->mode = mode;
	s->parts.dir = s->dir;
	s->parts.write = mode == CP_STORE_WRITE;
	snprintf(path, sizeof(path), "%s/%s", dir, index);
	if (mode == CP_STORE_READ && access(path, F_OK) < 0) {
		err = cp_error(ENOENT, "no store at %s: import or record profiles first (cprof import FILE), or give --data DIR",
			       dir);
		goto out;
	}
	if (mode == CP_STORE_WRITE) {
		snprintf(path, sizeof(path), "%s/days", dir);
		if ((err = cp_mkdirs(path, 0755)))
			goto out;
		snprintf(path, sizeof(path), "%s/%s", dir, index);
	}
	/* the index is a few rows, written at every append: small pages, and a log checkpointed often
	 * (the page size takes effect only while the file is new) */
	if ((err = cp_db_open(path, mode == CP_STORE_WRITE, "PRAGMA page_size=1024;", &s->db)))
		goto out;
	if (mode == CP_STORE_WRITE)
		sqlite3_wal_autocheckpoint(s->db, 64);
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
	return s;
}

struct cp_local *cp_local_open_dir(const char *dir, enum cp_store_mode mode)
{
	int err;

	/* a store of an earlier cprof is converted first (migrate.h) */
	if ((err = cp_local_migrate(dir, mode == CP_STORE_WRITE))) {
		errno = -err;
		return NULL;
	}
	return cp_local_open(dir, mode, INDEX_FILE);
}

struct cp_store *cp_store_open(const char *dir, enum cp_store_mode mode)
{
	struct cp_local *s = cp_local_open_dir(dir, mode);

	return s ? &s->base : NULL;
}

struct cp_store *cp_store_open_local_uri(const char *uri, const struct cp_store_open_opts *o)
{
	if (!strncasecmp(uri, "file://", 7)) {
		uri += 7;
		if (!*uri) {
			errno = -cp_error(EINVAL, "file:// wants a path: file://PATH");
			return NULL;
		}
	}
	return cp_store_open(uri, o->mode);
}

static void local_close(struct cp_local *s)
{
	if (!s)
		return;
	cp_parts_close(&s->parts);
	sqlite3_close(s->db);
	free(s->dir);
	free(s);
}

void cp_local_close(struct cp_local *s)
{
	local_close(s);
}

/* ---- appending ---- */

/* the UTC day of t (>= 0) */
static int64_t day_of(int64_t t)
{
	return t / CP_DAY_NS;
}

/* Writes e[0..n) (one day, sorted) as one block into the day's db, in its open transaction. */
static int write_block(sqlite3 *db, const struct cp_block_entry *e, size_t n, int64_t *id)
{
	struct cp_block b;
	sqlite3_stmt *st = NULL;
	int err;

	if ((err = cp_block_encode(e, n, &b)))
		return err;
	if ((err = cp_db_prepare(db, "INSERT INTO blocks(t_min, t_max, entries, samples, rawlen, series, data, ends,"
				  " s_min, s_max) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &st)))
		goto out;
	cp_part_bind_block(st, &b);
	if (sqlite3_step(st) != SQLITE_DONE) {
		err = cp_db_error(db, "writing samples");
		goto out;
	}
	*id = sqlite3_last_insert_rowid(db);
out:
	sqlite3_finalize(st);
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

/* Merges p's dictionary into the day's: *ostack and *olabels (made again)
 * take each sample's stack and label set ids there.  The names build() gives
 * a selected profile's header are stored with the dictionary too, so a
 * select adds no strings of its own. */
static int merge_one(struct cp_dict *d, const struct cp_profile *p, uint32_t **ostack, uint32_t **olabels)
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
	if ((err = cp_profile_merge(d->p, p, &mo)))
		return err;
	for (size_t k = 0; k <= p->ntypes; k++) {
		const struct cp_valuetype *vt = k < p->ntypes ? &p->sample_types[k] : &p->period_type;
		int64_t r1 = cp_profile_str(d->p, cp_profile_string(p, vt->type));
		int64_t r2 = cp_profile_str(d->p, cp_profile_string(p, vt->unit));

		if (r1 < 0 || r2 < 0)
			return (int)(r1 < 0 ? r1 : r2);
	}
	return 0;
}

/* an append's time */
static int64_t append_time(const struct cp_store_append *a)
{
	return a->time_ns ? a->time_ns : a->profile->time_nanos ? a->profile->time_nanos : cp_now_ns();
}

static int check_append(const struct cp_store_append *a, int64_t t)
{
	const struct cp_profile *p = a->profile;

	if (t < CP_STORE_TIME_MIN || t > CP_STORE_TIME_MAX)
		return cp_error(EINVAL, "profile time %" PRId64 " ns is out of range: the store takes times from"
					" 1970-01-01 up to 2262-04-11T23:47:16Z (%" PRId64 " ns), that a query can reach",
				t, (int64_t)CP_STORE_TIME_MAX);
	for (size_t j = 0; a->sel && j < a->nsel; j++)
		if (a->sel[j] >= p->nsamples)
			return cp_error(EINVAL, "sample %" PRIu32 " of a profile of %" PRIu32 " samples", a->sel[j],
					p->nsamples);
	if (a->type && p->ntypes != 1)
		return cp_error(EINVAL, "a profile stored as type %s has %zu sample types, not one", a->type, p->ntypes);
	return 0;
}

/* The entries of the appends a[k] with idx[k] of one day into the day's dictionary, series and one
 * block (in day's transaction, left open): *nb grows by the block. */
static int append_day(struct cp_local *s, struct cp_part *day, const struct cp_store_append *a, const size_t *idx,
		      size_t n, struct block *blk, size_t *nb)
{
	struct cp_block_entry *e = NULL;
	size_t ne = 0, ecap = 0, i, j, k;
	uint32_t *ostack = NULL, *olabels = NULL;
	const struct cp_profile *merged = NULL;
	int err;

	(void)s;
	if ((err = cp_db_exec(day->db, "BEGIN IMMEDIATE", "writing samples")))
		return err;
	blk[*nb].db = day->db;
	blk[*nb].id = 0;
	(*nb)++;
	/* under the day's write lock: take in what other writers added, then ours */
	if ((err = cp_dict_catch_up(&day->dict)))
		goto out;
	for (i = 0; i < n; i++) {
		const struct cp_store_append *ai = &a[idx[i]];
		const struct cp_profile *p = ai->profile;
		int64_t t = append_time(ai);
		int64_t end = ai->end_ns > t ? ai->end_ns : cp_add_sat(t, p->duration_nanos > 0 ? p->duration_nanos : 0);
		size_t nsel = ai->sel ? ai->nsel : p->nsamples;
		char type[512], *lj;

		if (!(lj = cp_series_labels_json(ai->labels, ai->nlabels, &err)))
			goto dict_error;
		/* a profile the last append merged already (its samples' ids are in
		 * ostack and olabels) */
		if (p != merged && (err = merge_one(&day->dict, p, &ostack, &olabels))) {
			free(lj);
			goto dict_error;
		}
		merged = p;
		for (k = 0; k < p->ntypes; k++) {
			int64_t sid;

			if (ai->type)
				snprintf(type, sizeof(type), "%s", ai->type);
			if ((!ai->type && (err = cp_store_type_name(p, (int)k, ai->name, type, sizeof(type)))) ||
			    (sid = cp_series_id(&day->series, day->db, type, lj)) < 0) {
				err = err ? err : (int)sid;
				break;
			}
			for (size_t js = 0; js < nsel; js++) {
				int64_t v;

				j = ai->sel ? ai->sel[js] : js;
				v = cp_profile_values(p, (uint32_t)j)[k];
				if (!v || ostack[j] == UINT32_MAX)
					continue;
				if (cp_grow((void **)&e, &ecap, ne + 1, sizeof(*e))) {
					err = cp_error(ENOMEM, "out of memory writing samples");
					break;
				}
				e[ne].series = sid;
				e[ne].t = t;
				e[ne].end = end;
				e[ne].stack = cp_dict_row(ostack[j], day->dict.bstack); /* the rows' ids */
				e[ne].labels = cp_dict_row(olabels[j], day->dict.bls);
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
	if ((err = cp_dict_save(&day->dict)))
		goto out;
	if (!ne)
		goto out; /* nothing but zeros: the series are there, no block */
	cp_qsort(e, ne, sizeof(*e), cp_block_entry_cmp);
	/* identical keys (two profiles of one series at one time) add up */
	for (i = 0, j = 0; i < ne; i++) {
		if (j && !cp_block_entry_cmp(&e[j - 1], &e[i])) {
			e[j - 1].value = cp_add_sat(e[j - 1].value, e[i].value);
			e[j - 1].end = e[i].end > e[j - 1].end ? e[i].end : e[j - 1].end;
		} else {
			e[j++] = e[i];
		}
	}
	err = write_block(day->db, e, j, &blk[*nb - 1].id);
	goto out;
dict_error:
	err = cp_dict_error(err, "adding a profile to the store's dictionary");
out:
	free(e);
	free(ostack);
	free(olabels);
	return err;
}

struct day_of_append {
	int64_t day;
	size_t i;
};

static int by_day(const void *x, const void *y)
{
	const struct day_of_append *a = x, *b = y;

	if (a->day != b->day)
		return a->day < b->day ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* A batch: the appends of each day (in the order of the days' names) into the day's dictionary,
 * series and a block, each in the day's transaction; then the days' bounds in the index; then the
 * days commit.  All writers take the index's write lock first, then the days' in order. */
static int local_append(struct cp_local *s, const struct cp_store_append *a, size_t n)
{
	struct day_of_append *da = NULL;
	size_t *idx = NULL, nb = 0, i, j, k;
	struct block *blk = NULL;
	sqlite3_stmt *pst = NULL;
	bool in_tx = false;
	int err = 0;

	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only");
	if (!n)
		return 0;
	if (!(da = calloc(n, sizeof(*da))) || !(idx = calloc(n, sizeof(*idx))) || !(blk = calloc(n, sizeof(*blk))))
		return cp_error(ENOMEM, "out of memory writing to the store");
	for (i = 0; i < n; i++) {
		int64_t t = append_time(&a[i]);

		if ((err = check_append(&a[i], t)))
			goto out;
		da[i].day = day_of(t);
		da[i].i = i;
	}
	cp_qsort(da, n, sizeof(*da), by_day);
	if ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE", "writing to the store")))
		goto out;
	in_tx = true;
	if ((err = cp_db_prepare(s->db, "INSERT INTO partitions VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET"
				  " t_min = min(t_min, ?2), t_max = max(t_max, ?3)", &pst)))
		goto out;
	for (i = 0; i < n; i = j) {
		int64_t tmin = INT64_MAX, tmax = INT64_MIN;
		struct cp_part *day;
		char name[16];

		for (j = i; j < n && da[j].day == da[i].day; j++) {
			int64_t t = append_time(&a[da[j].i]);

			idx[j - i] = da[j].i;
			tmin = t < tmin ? t : tmin;
			tmax = t > tmax ? t : tmax;
		}
		cp_part_name(tmin, name, sizeof(name));
		/* the day's file and schema exist before the index lists it */
		if ((err = cp_parts_open(&s->parts, name, &day)) || (err = append_day(s, day, a, idx, j - i, blk, &nb)))
			goto out;
		sqlite3_bind_text(pst, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(pst, 2, tmin);
		sqlite3_bind_int64(pst, 3, tmax);
		if ((err = cp_db_step(pst, "writing the list of days")))
			goto out;
	}
	/* the index first: a crash before the days commit leaves bounds of times without samples,
	 * never a day no row lists */
	if ((err = cp_db_exec(s->db, "COMMIT", "writing to the store")))
		goto out;
	in_tx = false;
	for (k = 0; k < nb; k++)
		if ((err = cp_db_exec(blk[k].db, "COMMIT", "writing samples")))
			break;
	if (err) /* a late failure: take back the days committed so far */
		err = undo_blocks(blk, k, err);
out:
	for (k = 0; k < nb; k++)
		if (!sqlite3_get_autocommit(blk[k].db)) {
			sqlite3_exec(blk[k].db, "ROLLBACK", NULL, NULL, NULL);
			/* what the day's dictionary and series ids hold is not what was committed */
			for (size_t v = 0; v < s->parts.n; v++)
				if (s->parts.v[v].db == blk[k].db) {
					cp_dict_rolled_back(&s->parts.v[v].dict);
					if (cp_series_ids_reset(&s->parts.v[v].series) && !err)
						err = cp_error(ENOMEM, "out of memory writing to the store");
				}
		}
	sqlite3_finalize(pst);
	if (in_tx)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(da);
	free(idx);
	free(blk);
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

static int op_series(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
		     struct cp_store_series **out, size_t *n)
{
	return cp_local_series(L(s), sel, from, to, out, n);
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
	size_t b = 0;

	for (size_t i = 0; i < l->parts.n; i++) {
		const struct cp_part *d = &l->parts.v[i];

		if (d->db)
			b += (d->dict.p ? cp_profile_bytes(d->dict.p) : 0) + cp_strtab_bytes(&d->series.keys) +
			     d->series.cap * sizeof(*d->series.ids);
	}
	return b;
}

static void op_limit_memory(struct cp_store *s, size_t bytes)
{
	struct cp_local *l = L(s);

	l->parts.max_dict = bytes;
	for (size_t i = 0; i < l->parts.n; i++)
		l->parts.v[i].dict.max_bytes = bytes;
}

static int op_extent(struct cp_store *s, int64_t *oldest, int64_t *newest)
{
	sqlite3_stmt *q = NULL;
	int err, rc;

	if ((err = cp_db_prepare(L(s)->db, "SELECT min(t_min), max(t_max) FROM partitions", &q)))
		return err;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		*oldest = sqlite3_column_int64(q, 0);
		*newest = sqlite3_column_int64(q, 1);
	} else if (rc != SQLITE_ROW) {
		err = cp_error(EIO, "reading the store's days: %s", sqlite3_errmsg(L(s)->db));
	}
	sqlite3_finalize(q);
	return err;
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
	.extent = op_extent,
	.memory = op_memory,
	.limit_memory = op_limit_memory,
	.compact = op_compact,
	.close = op_close,
};
