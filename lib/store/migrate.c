/* SPDX-License-Identifier: MIT */
/* A store of schema version 2 converted to schema 3 (handle.h, cp_local_migrate).
 *
 * Schema 2 kept one dictionary and the series for all time in DIR/index.db, and only the sample
 * blocks in the days' files (DIR/parts/YYYYMMDD.db), and a series per process (pid a series label).
 * Schema 3 keeps everything a day uses in the day's file (DIR/days/YYYYMMDD.db), its list of days in
 * DIR/store.db, and a series per program: pid is a sample label.
 *
 * The conversion reads every block of the old store, the samples of each series at each time as a
 * profile (from the old dictionary), and appends them to a new store made beside it (its index
 * DIR/store.db.new), with the old pid label moved to the samples and cprof record's CPU type name
 * cpu:... as process_cpu:...  The old store's write lock is held throughout (another writer of the
 * old kind waits), and nothing of it changes until the new one is whole: then store.db.new becomes
 * store.db (one rename), and the old files are removed.  A crash before that rename leaves the old
 * store as it was (the next open converts again, the leftovers removed first); after it, the next
 * open removes what is left of the old files. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../error.h"
#include "../log.h"
#include "../util.h"
#include "blocks.h"
#include "db.h"
#include "dict.h"
#include "handle.h"
#include "parts.h"
#include "series.h"

/* removes the files of dir/sub that end in .db, .db-wal or .db-shm, then dir/sub */
static void remove_days(const char *dir, const char *sub)
{
	char path[PATH_MAX], f[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if ((n > 3 && !strcmp(de->d_name + n - 3, ".db")) ||
		    (n > 7 && (!strcmp(de->d_name + n - 7, ".db-wal") || !strcmp(de->d_name + n - 7, ".db-shm")))) {
			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			unlink(f);
		}
	}
	closedir(d);
	rmdir(path);
}

static void remove_files(const char *dir, const char *base)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char path[PATH_MAX];

	for (size_t k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, base, sfx[k]);
		unlink(path);
	}
}

/* What a copy reads: a store's days and, for each, the dictionary and series its blocks refer to (a
 * schema 2 store's: one of each in its index; schema 3's: the day's own). */
struct old_store {
	const char *dir;
	bool legacy;                 /* schema 2 (then its pid and cpu are as this cprof has them) */
	sqlite3 *db;                 /* the index: schema 2's DIR/index.db, schema 3's DIR/store.db */
	struct cp_dict gdict;        /* schema 2's dictionary, all of it */
	struct cp_dict *dict;        /* the one the blocks being read refer to */
	struct cp_store_series *ser; /* the series they refer to, by id */
	size_t nser;
	struct cp_parts parts; /* the days, read-only */
	int64_t shift;         /* added to every time */
};

static int ser_by_id(const void *a, const void *b)
{
	const struct cp_store_series *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct cp_store_series *old_series(const struct old_store *o, int64_t id)
{
	size_t lo = 0, hi = o->nser;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (o->ser[mid].id == id)
			return &o->ser[mid];
		if (o->ser[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* a block's entries, in the order decoded (by series, then time) */
struct entry {
	size_t k; /* the block's k-th series */
	int64_t t, stack, labels, value, end;
};

struct entries {
	struct entry *e;
	size_t n, cap;
	const int64_t *ends; /* the block's series' */
};

static int take(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t labels, int64_t v)
{
	struct entries *x = ctx;

	if (cp_grow((void **)&x->e, &x->cap, x->n + 1, sizeof(*x->e)))
		return cp_error(ENOMEM, "out of memory converting the store");
	x->e[x->n++] = (struct entry){ k, t, stack, (int64_t)labels, v, x->ends ? x->ends[k] : t };
	return 0;
}

/* The new series of old series s: its labels without pid (into kv, *nkv; its pid into *pid, NULL
 * when it has none), its type with cprof record's cpu as process_cpu (into type). */
static void new_series(const struct cp_store_series *s, bool legacy, struct cp_kv *kv, size_t *nkv, const char **pid,
		       char *type, size_t tlen)
{
	size_t n = 0;

	*pid = NULL;
	for (size_t i = 0; i < s->nlabels; i++) {
		if (legacy && !strcmp(s->names[i], "pid"))
			*pid = s->values[i];
		else
			kv[n++] = (struct cp_kv){ s->names[i], s->values[i] };
	}
	*nkv = n;
	if (legacy && !strncmp(s->type, "cpu:", 4))
		snprintf(type, tlen, "process_cpu:%s", s->type + 4);
	else
		snprintf(type, tlen, "%s", s->type);
}

/* One old block into the new store: the samples of each series at each time as one profile. */
static int convert_block(struct old_store *o, struct cp_store *dst, sqlite3_stmt *st, struct cp_block_reader *rd,
			 struct entries *x)
{
	struct cp_store_append *a = NULL;
	struct cp_profile **profs = NULL;
	struct cp_kv *kv = NULL;
	char (*types)[256] = NULL;
	int64_t *ids = NULL, *ends = NULL;
	unsigned char *all = NULL;
	size_t ns = 0, i, j, na = 0;
	int err;

	x->n = 0;
	if ((err = cp_block_series(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), &ids, &ns)))
		return err;
	if (!(all = malloc(ns + 1)) || !(types = calloc(ns + 1, sizeof(*types))) || !(ends = calloc(ns + 1, sizeof(*ends)))) {
		err = cp_error(ENOMEM, "out of memory converting the store");
		goto out;
	}
	memset(all, 1, ns + 1);
	/* schema 3's blocks say when each series' profiles ended (5: t_max, 6: ends) */
	if (!o->legacy)
		cp_block_ends(sqlite3_column_blob(st, 5), (size_t)sqlite3_column_bytes(st, 5), sqlite3_column_int64(st, 3),
			      sqlite3_column_int64(st, 4), ends, ns);
	x->ends = o->legacy ? NULL : ends;
	if ((err = cp_block_decode(rd, sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
				   (uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 3), all, ns, take, x)))
		goto out;
	if (!(a = calloc(x->n + 1, sizeof(*a))) || !(profs = calloc(x->n + 1, sizeof(*profs))) ||
	    !(kv = calloc(x->n * 16 + 16, sizeof(*kv)))) {
		err = cp_error(ENOMEM, "out of memory converting the store");
		goto out;
	}
	for (i = 0; i < x->n; i = j) {
		const struct cp_store_series *s = x->e[i].k < ns ? old_series(o, ids[x->e[i].k]) : NULL;
		struct cp_merge_opts mo = { 0 };
		char st_[128], su[128], pt[128], pu[128];
		const char *pid;
		size_t n;

		for (j = i; j < x->n && x->e[j].k == x->e[i].k && x->e[j].t == x->e[i].t; j++)
			;
		if (!s) {
			err = cp_error(EBADMSG, "a sample block of the old store refers to a series it does not have");
			goto out;
		}
		if (s->nlabels > 15)
			continue; /* (no series of the old store's writers has that many) */
		new_series(s, o->legacy, kv + na * 16, &n, &pid, types[x->e[i].k], sizeof(types[0]));
		cp_profile_clear_samples(o->dict->p);
		if ((err = cp_profile_add_sample_type(o->dict->p, cp_store_type_part(s->type, 1, st_, sizeof(st_)),
						      cp_store_type_part(s->type, 2, su, sizeof(su)))) ||
		    (err = cp_profile_set_period_type(o->dict->p, cp_store_type_part(s->type, 3, pt, sizeof(pt)),
						      cp_store_type_part(s->type, 4, pu, sizeof(pu)), 0)))
			goto out;
		for (size_t k = i; k < j; k++) {
			if (x->e[k].stack < 0 || (uint64_t)x->e[k].stack > o->dict->nstack ||
			    (uint64_t)x->e[k].labels > o->dict->nls) {
				err = cp_error(EBADMSG, "a sample block of the old store refers to a stack it does not have");
				goto out;
			}
			if ((err = cp_profile_add_sample(o->dict->p, (uint32_t)x->e[k].stack, (uint32_t)x->e[k].labels,
							 &x->e[k].value)))
				goto out;
		}
		/* the old series' pid goes to its samples */
		if (pid) {
			mo.tag_key = "pid";
			mo.tag_value = pid;
		}
		if (!(profs[na] = cp_profile_copy(o->dict->p, &mo))) {
			err = -errno;
			goto out;
		}
		a[na] = (struct cp_store_append){ .profile = profs[na], .labels = kv + na * 16, .nlabels = n,
						  .time_ns = x->e[i].t + o->shift, .type = types[x->e[i].k],
						  .end_ns = x->e[i].end + o->shift };
		na++;
	}
	err = na ? cp_store_append(dst, a, na) : 0;
	if (err > 0)
		err = 0;
out:
	cp_profile_clear_samples(o->dict->p);
	for (i = 0; profs && i < na; i++)
		cp_profile_free(profs[i]);
	free(profs);
	free(a);
	free(kv);
	free(types);
	free(ids);
	free(ends);
	free(all);
	return cp_dict_error(err, "converting the store");
}

/* Every block of old day name into dst. */
static int convert_day(struct old_store *o, struct cp_store *dst, const char *name)
{
	struct cp_block_reader rd = { 0 };
	struct entries x = { 0 };
	struct cp_part *day;
	sqlite3_stmt *st = NULL;
	int err, rc;

	if ((err = cp_parts_open(&o->parts, name, &day)))
		return err == -ENOENT ? 0 : err; /* a day listed whose file is gone: nothing to convert */
	if (!o->legacy) { /* schema 3: the day's own dictionary and series */
		cp_store_series_free(o->ser, o->nser);
		o->ser = NULL;
		o->nser = 0;
		if ((err = cp_dict_load(&day->dict)) || (err = cp_series_list(day->db, NULL, 0, &o->ser, &o->nser)))
			return err;
		cp_qsort(o->ser, o->nser, sizeof(*o->ser), ser_by_id);
		o->dict = &day->dict;
	}
	if ((err = cp_db_prepare(day->db, o->legacy ? "SELECT rawlen, series, data, t_min, t_max, NULL FROM blocks ORDER BY id" :
						      "SELECT rawlen, series, data, t_min, t_max, ends FROM blocks ORDER BY id",
				 &st)))
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((err = convert_block(o, dst, st, &rd, &x)))
			break;
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(day->db, "reading the old store");
	sqlite3_finalize(st);
	cp_block_reader_release(&rd);
	free(x.e);
	cp_parts_forget(&o->parts, name);
	return err;
}

static int convert(const char *dir)
{
	struct old_store o = { .dir = dir };
	struct cp_local *dst = NULL;
	sqlite3_stmt *st = NULL;
	char path[PATH_MAX], to[PATH_MAX];
	int64_t t0 = cp_mono_ns();
	size_t days = 0;
	int err, rc;

	snprintf(path, sizeof(path), "%s/index.db", dir);
	if ((err = cp_db_open(path, true, "", &o.db)) || (err = cp_db_exec(o.db, "BEGIN IMMEDIATE", "converting the store")))
		goto out;
	/* another process converted it while this one waited for the lock */
	snprintf(path, sizeof(path), "%s/store.db", dir);
	if (!access(path, F_OK))
		goto out;
	if (cp_db_count(o.db, "SELECT count(*) FROM meta WHERE key = 'schema' AND value = '2'") != 1) {
		err = cp_error(EPROTO, "%s/index.db: not a cprof store of schema version 2 or 3 (written by another cprof"
				       " version?)", dir);
		goto out;
	}
	cp_log("store", CP_LOG_INFO, "converting the store at %s to this cprof's format (once: a dictionary per day,"
	       " a series per program)", dir);
	remove_days(dir, "days");
	remove_files(dir, "store.db.new");
	o.parts.dir = dir;
	o.parts.legacy = true;
	o.legacy = true;
	o.gdict.db = o.db;
	o.gdict.legacy = true;
	o.dict = &o.gdict;
	if ((err = cp_dict_reset(&o.gdict)) || (err = cp_dict_load(&o.gdict)) ||
	    (err = cp_series_list(o.db, NULL, 0, &o.ser, &o.nser)))
		goto out;
	cp_qsort(o.ser, o.nser, sizeof(*o.ser), ser_by_id);
	if (!(dst = cp_local_open(dir, CP_STORE_WRITE, "store.db.new"))) {
		err = -errno;
		goto out;
	}
	if ((err = cp_db_prepare(o.db, "SELECT name FROM partitions ORDER BY name", &st)))
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char name[16];

		snprintf(name, sizeof(name), "%s", (const char *)sqlite3_column_text(st, 0));
		if ((err = convert_day(&o, &dst->base, name)))
			break;
		days++;
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(o.db, "reading the old store");
	sqlite3_finalize(st);
	st = NULL;
	if (err)
		goto out;
	cp_local_close(dst); /* its last connection: the new index's log is in it */
	dst = NULL;
	snprintf(path, sizeof(path), "%s/store.db.new", dir);
	snprintf(to, sizeof(to), "%s/store.db", dir);
	if (rename(path, to) < 0) {
		err = cp_error(errno, "converting the store: %s: %s", to, strerror(errno));
		goto out;
	}
	cp_log("store", CP_LOG_INFO, "converted the store at %s: %zu days in %.1f s", dir, days,
	       (double)(cp_mono_ns() - t0) / 1e9);
out:
	sqlite3_finalize(st);
	cp_local_close(dst);
	cp_parts_close(&o.parts);
	cp_dict_release(&o.gdict);
	cp_store_series_free(o.ser, o.nser);
	if (o.db)
		sqlite3_exec(o.db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(o.db);
	if (err) {
		remove_days(dir, "days");
		remove_files(dir, "store.db.new");
		return cp_error_ctx(err, "converting the store at %s", dir);
	}
	/* the new store stands: the old files go */
	remove_files(dir, "index.db");
	remove_days(dir, "parts");
	return 0;
}

int cp_local_migrate(const char *dir, bool write)
{
	char v3[PATH_MAX], v2[PATH_MAX];

	snprintf(v3, sizeof(v3), "%s/store.db", dir);
	snprintf(v2, sizeof(v2), "%s/index.db", dir);
	if (!access(v3, F_OK)) {
		/* converted; a crash may have left old files, which a writer removes */
		if (write && !access(v2, F_OK)) {
			remove_files(dir, "index.db");
			remove_days(dir, "parts");
		}
		return 0;
	}
	if (access(v2, F_OK) < 0)
		return 0; /* neither: a new store, or none */
	if (!write && access(dir, W_OK) < 0)
		return cp_error(EPROTO, "%s holds a store of an earlier cprof (schema 2), which is converted the first time"
				       " a cprof that may write it opens it: run cprof import --data %s as its owner", dir, dir);
	return convert(dir);
}

int cp_store_copy(const char *src, struct cp_store *dst, int64_t shift)
{
	struct old_store o = { .dir = src, .shift = shift };
	struct cp_local *in = NULL;
	sqlite3_stmt *st = NULL;
	char path[PATH_MAX];
	int err, rc;

	snprintf(path, sizeof(path), "%s/store.db", src);
	if (access(path, F_OK) < 0) {
		/* a schema 2 store, read as it is (it is not converted: it may be another's) */
		snprintf(path, sizeof(path), "%s/index.db", src);
		if (access(path, F_OK) < 0)
			return cp_error(ENOENT, "no store at %s", src);
		o.legacy = true;
		o.parts.legacy = true;
		if ((err = cp_db_open(path, false, "", &o.db)))
			goto out;
		o.gdict.db = o.db;
		o.gdict.legacy = true;
		o.dict = &o.gdict;
		if ((err = cp_dict_reset(&o.gdict)) || (err = cp_dict_load(&o.gdict)) ||
		    (err = cp_series_list(o.db, NULL, 0, &o.ser, &o.nser)))
			goto out;
		cp_qsort(o.ser, o.nser, sizeof(*o.ser), ser_by_id);
	} else {
		if (!(in = cp_local_open(src, CP_STORE_READ, "store.db"))) {
			err = -errno;
			goto out;
		}
		o.db = in->db;
	}
	o.parts.dir = src;
	if ((err = cp_db_prepare(o.db, "SELECT name FROM partitions ORDER BY name", &st)))
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char name[16];

		snprintf(name, sizeof(name), "%s", (const char *)sqlite3_column_text(st, 0));
		if ((err = convert_day(&o, dst, name)))
			break;
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(o.db, "reading the store");
out:
	sqlite3_finalize(st);
	cp_parts_close(&o.parts);
	cp_dict_release(&o.gdict);
	cp_store_series_free(o.ser, o.nser);
	if (in)
		cp_local_close(in);
	else
		sqlite3_close(o.db);
	return err ? cp_error_ctx(err, "copying the store at %s", src) : 0;
}
