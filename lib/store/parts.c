/* SPDX-License-Identifier: MIT */
#include "parts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"
#include "blocks.h"
#include "db.h"

#define NPARTS 8 /* day handles kept open between calls */

/* A day's file (docs/STORE.md): its dictionary (every kind in compressed chunks), its series, its
 * blocks (with each series' end and the range of its series ids, s_min..s_max, so that a query skips a
 * block without a wanted series before reading its blobs) and their summaries. */
static const char part_schema[] =
	"CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, first INTEGER NOT NULL,"
	" count INTEGER NOT NULL, rawlen INTEGER NOT NULL, data BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, type TEXT NOT NULL, labels TEXT NOT NULL,"
	" UNIQUE(type, labels));"
	"CREATE TABLE IF NOT EXISTS blocks(id INTEGER PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER NOT NULL,"
	" entries INTEGER NOT NULL, samples INTEGER NOT NULL, rawlen INTEGER NOT NULL, series BLOB NOT NULL,"
	" data BLOB NOT NULL, step INTEGER NOT NULL DEFAULT 0, ends BLOB, s_min INTEGER NOT NULL DEFAULT 0,"
	" s_max INTEGER NOT NULL DEFAULT 0, layout INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS blocks_time ON blocks(t_max, t_min);"
	/* summaries of whole hours and days (compact.h); any write of blocks
	 * drops those of the time it touches, in its own transaction, so that a
	 * summary present is always the sum of the blocks it covers */
	"CREATE TABLE IF NOT EXISTS rollups(id INTEGER PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER NOT NULL,"
	" step INTEGER NOT NULL, res INTEGER NOT NULL, entries INTEGER NOT NULL, samples INTEGER NOT NULL,"
	" rawlen INTEGER NOT NULL, series BLOB NOT NULL, data BLOB NOT NULL, ends BLOB,"
	" s_min INTEGER NOT NULL DEFAULT 0, s_max INTEGER NOT NULL DEFAULT 0);"
	"CREATE TRIGGER IF NOT EXISTS blocks_insert_rollups AFTER INSERT ON blocks BEGIN"
	" DELETE FROM rollups WHERE t_max >= NEW.t_min AND t_min <= NEW.t_max; END;"
	"CREATE TRIGGER IF NOT EXISTS blocks_delete_rollups AFTER DELETE ON blocks BEGIN"
	" DELETE FROM rollups WHERE t_max >= OLD.t_min AND t_min <= OLD.t_max; END;"
	"CREATE TRIGGER IF NOT EXISTS blocks_update_rollups AFTER UPDATE OF t_min, t_max, data ON blocks BEGIN"
	" DELETE FROM rollups WHERE (t_max >= OLD.t_min AND t_min <= OLD.t_max)"
	" OR (t_max >= NEW.t_min AND t_min <= NEW.t_max); END;";

bool cp_part_has_step(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	bool has = sqlite3_prepare_v2(db, "SELECT step FROM blocks LIMIT 0", -1, &st, NULL) == SQLITE_OK;

	sqlite3_finalize(st);
	return has;
}

void cp_part_path(const struct cp_parts *ps, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s.db", ps->dir, ps->legacy ? "parts" : "days", name);
}

void cp_part_name(int64_t t, char *buf, size_t len)
{
	time_t secs = (time_t)(t / 1000000000);
	struct tm tm;

	if (t < 0 || !gmtime_r(&secs, &tm))
		secs = 0, gmtime_r(&secs, &tm);
	strftime(buf, len, "%Y%m%d", &tm);
}

/* closes day v's file and lets go of what it held */
static void part_close(struct cp_part *v)
{
	cp_series_ids_release(&v->series); /* its statements before the file */
	cp_dict_release(&v->dict);
	sqlite3_close(v->db);
	v->db = NULL;
}

/* The handle of day name (write: made with its schema if missing).  A handle in a transaction (an
 * append's, until it commits) is never closed to make room. */
int cp_parts_open(struct cp_parts *s, const char *name, struct cp_part **out)
{
	char path[PATH_MAX];
	struct stat sb;
	bool fresh, found = false;
	size_t i, slot = s->n;
	struct cp_part *v;
	int err;

	cp_part_path(s, name, path, sizeof(path));
	for (i = 0; i < s->n; i++) {
		if (s->v[i].db && !strcmp(s->v[i].name, name)) {
			found = true;
			break;
		}
	}
	if (found) {
		/* still the file at path? (retention or a size limit in another process may
		 * have deleted the day, and an append made it again) */
		if (!stat(path, &sb) && sb.st_dev == s->v[i].dev && sb.st_ino == s->v[i].ino) {
			*out = &s->v[i];
			return 0;
		}
		part_close(&s->v[i]);
	}
	for (i = 0; i < s->n && slot == s->n; i++)
		if (!s->v[i].db)
			slot = i;
	if (slot == s->n && s->n >= NPARTS) { /* full: close one not in a transaction */
		for (i = 0; i < s->n && slot == s->n; i++)
			if (sqlite3_get_autocommit(s->v[i].db)) {
				part_close(&s->v[i]);
				slot = i;
			}
	}
	if (slot == s->n) {
		if (cp_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
			return cp_error(ENOMEM, "out of memory opening a day of the store");
		memset(&s->v[s->n++], 0, sizeof(s->v[0]));
	}
	v = &s->v[slot];
	memset(v, 0, sizeof(*v));
	if (!s->write && access(path, F_OK) < 0)
		return cp_error(ENOENT, "the store's day %s is missing", path);
	if (s->write && !s->legacy) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/days", s->dir);
		if ((err = cp_mkdirs(dir, 0755)))
			return err;
	}
	/* auto_vacuum before the first table, so that a size limit that deletes
	 * the oldest blocks gives their pages back (PRAGMA incremental_vacuum);
	 * only in a new file: in one that has it, setting it again writes */
	fresh = s->write && (stat(path, &sb) < 0 || sb.st_size == 0);
	if ((err = cp_db_open(path, s->write,
			      fresh ? "PRAGMA page_size=1024; PRAGMA auto_vacuum=INCREMENTAL;" : "PRAGMA page_size=1024;",
			      &v->db)))
		return err;
	if ((s->write && !s->legacy && (err = cp_db_exec(v->db, part_schema, path))) ||
	    (stat(path, &sb) < 0 && (err = cp_error(errno, "%s: %s", path, strerror(errno)))) ||
	    (!s->legacy && ((err = cp_series_ids_init(&v->series)) || (err = cp_dict_reset(&v->dict))))) {
		part_close(v);
		return err;
	}
	v->dict.db = v->db;
	v->dict.max_bytes = s->max_dict;
	v->dev = sb.st_dev;
	v->ino = sb.st_ino;
	snprintf(v->name, sizeof(v->name), "%s", name);
	*out = v;
	return 0;
}

void cp_parts_forget(struct cp_parts *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].db && !strcmp(s->v[i].name, name))
			part_close(&s->v[i]);
}

uint64_t cp_parts_bytes(const struct cp_parts *s, const char *name)
{
	char base[PATH_MAX];

	cp_part_path(s, name, base, sizeof(base));
	return cp_db_files_bytes(base);
}

/* Deletes the partitions names[0..n): their rows, in the transaction on
 * store.db that the caller began (BEGIN IMMEDIATE, rolled back by the caller
 * on error), committed here, then their files.  Rows first: a crash in between
 * leaves files that no row lists (readers never see them; cp_store_limit
 * removes them), never a listed partition whose file is gone half-way. */
int cp_parts_drop(struct cp_parts *s, sqlite3 *index, const char (*names)[16], size_t n, const char *what)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	sqlite3_stmt *st = NULL;
	char path[PATH_MAX];
	size_t i;
	int err = 0;

	if ((err = cp_db_prepare(index, "DELETE FROM partitions WHERE name = ?", &st)))
		return err;
	for (i = 0; i < n; i++) {
		sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
		if ((err = cp_db_step(st, what)))
			break;
	}
	sqlite3_finalize(st);
	if (err || (err = cp_db_exec(index, "COMMIT", what)))
		return err;
	for (i = 0; i < n; i++) {
		cp_parts_forget(s, names[i]);
		for (size_t k = 0; k < 3; k++) {
			char base[PATH_MAX - 8];

			cp_part_path(s, names[i], base, sizeof(base));
			snprintf(path, sizeof(path), "%s%s", base, sfx[k]);
			unlink(path);
		}
	}
	return 0;
}


void cp_parts_close(struct cp_parts *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].db)
			part_close(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

void cp_part_bind_block(sqlite3_stmt *st, const struct cp_block *b)
{
	sqlite3_bind_int64(st, 1, b->tmin);
	sqlite3_bind_int64(st, 2, b->tmax);
	sqlite3_bind_int64(st, 3, b->entries);
	sqlite3_bind_int64(st, 4, b->samples);
	sqlite3_bind_int64(st, 5, (int64_t)b->rawlen);
	sqlite3_bind_blob(st, 6, b->series, (int)b->series_len, SQLITE_STATIC);
	sqlite3_bind_blob(st, 7, b->data, (int)b->data_len, SQLITE_STATIC);
	sqlite3_bind_blob(st, 8, b->ends, (int)b->ends_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 9, b->smin);
	sqlite3_bind_int64(st, 10, b->smax);
}
