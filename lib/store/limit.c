/* SPDX-License-Identifier: MIT */
#include "limit.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"
#include "db.h"
#include "handle.h"
#include "parts.h"

/* The days store.db lists, sorted, into *rows (malloc'ed), in the caller's transaction. */
static int listed_days(struct cp_local *s, char (**rows)[16], size_t *nrows, const char *what)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int err, rc;

	*rows = NULL;
	*nrows = 0;
	if ((err = cp_db_prepare(s->db, "SELECT name FROM partitions ORDER BY name", &st)))
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cp_grow((void **)rows, &cap, *nrows + 1, sizeof(**rows))) {
			sqlite3_finalize(st);
			return cp_error(ENOMEM, "out of memory %s", what);
		}
		snprintf((*rows)[(*nrows)++], sizeof((*rows)[0]), "%s", (const char *)sqlite3_column_text(st, 0));
	}
	err = rc == SQLITE_DONE ? 0 : cp_db_error(s->db, what);
	sqlite3_finalize(st);
	return err;
}

/* DIR/days/YYYYMMDD.db, -wal or -shm: the day's name into day (9 bytes). */
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

/* The days' files that no row of rows[0..nrows) (sorted) lists, added to names[0..*n) (once
 * each).  Under store.db's write lock these are dead: an append lists its day in the
 * transaction that makes the file, and a deletion commits its rows before it unlinks (a crash
 * in between leaves them). */
static int unlisted_days(struct cp_local *s, char (*rows)[16], size_t nrows, char (**names)[16], size_t *n,
			 size_t *cap, const char *what)
{
	char path[PATH_MAX], day[16];
	struct dirent *de;
	int err = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/days", s->dir);
	if (!(d = opendir(path)))
		return 0;
	while (!err && (de = readdir(d))) {
		size_t lo = 0, hi = nrows, i;

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
		for (i = 0; i < *n && strcmp((*names)[i], day); i++)
			;
		if (i < *n)
			continue; /* its -wal or -shm, the .db seen already */
		if (cp_grow((void **)names, cap, *n + 1, sizeof(**names)))
			err = cp_error(ENOMEM, "out of memory %s", what);
		else
			snprintf((*names)[(*n)++], sizeof((*names)[0]), "%s", day);
	}
	closedir(d);
	return err;
}

int cp_local_retain(struct cp_local *s, int64_t keep_ns)
{
	int64_t cutoff = cp_now_ns() - keep_ns;
	sqlite3_stmt *st = NULL;
	char (*names)[16] = NULL, (*rows)[16] = NULL;
	size_t n = 0, cap = 0, nrows = 0, listed;
	int err, rc;

	if ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE", "applying retention")) ||
	    (err = cp_db_prepare(s->db, "SELECT name FROM partitions WHERE t_max < ?", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, cutoff);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cp_grow((void **)&names, &cap, n + 1, sizeof(*names))) {
			err = cp_error(ENOMEM, "out of memory applying retention");
			goto out;
		}
		snprintf(names[n++], sizeof(names[0]), "%s", (const char *)sqlite3_column_text(st, 0));
	}
	/* a partition left off the list would lose its row but keep its file */
	if (rc != SQLITE_DONE) {
		err = cp_db_error(s->db, "applying retention");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	/* and the files a deletion killed between its commit and its unlinks left (not counted) */
	listed = n;
	if ((err = listed_days(s, &rows, &nrows, "applying retention")) ||
	    (err = unlisted_days(s, rows, nrows, &names, &n, &cap, "applying retention")))
		goto out;
	if ((err = cp_parts_drop(&s->parts, s->db, (const char (*)[16])names, n, "applying retention")))
		goto out;
	err = (int)listed;
out:
	sqlite3_finalize(st);
	if (err < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(names);
	free(rows);
	return err;
}

/* ---- the size limit ---- */


int cp_local_size(struct cp_local *s, uint64_t *bytes)
{
	char path[PATH_MAX], f[PATH_MAX + 256];
	struct dirent *de;
	struct stat sb;
	uint64_t n;
	DIR *d;

	snprintf(path, sizeof(path), "%s/store.db", s->dir);
	n = cp_db_files_bytes(path);
	snprintf(path, sizeof(path), "%s/days", s->dir);
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
	return rc == SQLITE_OK ? 0 : cp_db_error(db, "checkpointing the store");
}

/* Gives a partition's free pages back to the file system: incremental_vacuum
 * for files made with auto_vacuum=INCREMENTAL; files made before that are
 * converted to it by one VACUUM (only when they have free pages). */
int cp_part_reclaim(sqlite3 *db, const char *name, bool *busy)
{
	int err;

	if (cp_db_count(db, "PRAGMA auto_vacuum") == 2)
		err = cp_db_exec(db, "PRAGMA incremental_vacuum", name);
	else if (cp_db_count(db, "PRAGMA freelist_count") > 0)
		err = cp_db_exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", name);
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
	if ((err = cp_db_exec(db, "BEGIN IMMEDIATE", "applying the size limit")))
		return err;
	used = (cp_db_count(db, "PRAGMA page_count") - cp_db_count(db, "PRAGMA freelist_count")) * cp_db_count(db, "PRAGMA page_size");
	nblocks = cp_db_count(db, "SELECT count(*) FROM blocks");
	payload = cp_db_count(db, "SELECT coalesce(sum(length(series) + length(data)), 0) FROM blocks");
	ratio = payload > 0 && used > payload ? (double)used / (double)payload : 1.0;
	aim = nblocks && need > 16 * (uint64_t)(used / nblocks) ? (double)need * 7 / 8 : (double)need;
	if ((err = cp_db_prepare(db, "SELECT id, length(series) + length(data) FROM blocks ORDER BY t_max, t_min, id", &st)) ||
	    (err = cp_db_prepare(db, "DELETE FROM blocks WHERE id = ?", &del)))
		goto out;
	while (got < aim && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_bind_int64(del, 1, sqlite3_column_int64(st, 0));
		if ((err = cp_db_step(del, "applying the size limit")))
			goto out;
		got += (double)sqlite3_column_int64(st, 1) * ratio;
		n++;
	}
	if (got < aim && rc != SQLITE_DONE) {
		err = cp_db_error(db, "applying the size limit");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (!(err = cp_db_exec(db, "COMMIT", "applying the size limit")))
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

	if ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE", "applying the size limit")))
		return err;
	if ((err = cp_db_prepare(pdb, "SELECT min(t_min) FROM blocks", &st)))
		goto out;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		err = cp_db_error(pdb, "applying the size limit");
		goto out;
	}
	if (sqlite3_column_type(st, 0) == SQLITE_NULL) { /* no block left: keep the row as it is */
		err = cp_db_exec(s->db, "COMMIT", "applying the size limit");
		goto out;
	}
	tmin = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if ((err = cp_db_prepare(s->db, "UPDATE partitions SET t_min = ?1 WHERE name = ?2 AND t_min < ?1", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, tmin);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if (!(err = cp_db_step(st, "applying the size limit")))
		err = cp_db_exec(s->db, "COMMIT", "applying the size limit");
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
	char (*rows)[16] = NULL, (*names)[16] = NULL;
	size_t nrows = 0, n = 0, ncap = 0, i;
	uint64_t b;
	int err;

	*oldest = '\0';
	*dropped = false;
	if ((err = cp_db_exec(s->db, "BEGIN IMMEDIATE", "applying the size limit")) ||
	    (err = listed_days(s, &rows, &nrows, "applying the size limit")) ||
	    (err = unlisted_days(s, rows, nrows, &names, &n, &ncap, "applying the size limit")))
		goto out;
	for (i = 0; i < n; i++) {
		b = cp_parts_bytes(&s->parts, names[i]);
		size -= b < size ? b : size;
	}
	for (i = 0; i + 1 < nrows && size > max; i++) {
		b = cp_parts_bytes(&s->parts, rows[i]);
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
		err = cp_db_exec(s->db, "COMMIT", "applying the size limit");
		goto out;
	}
	if (!(err = cp_parts_drop(&s->parts, s->db, (const char (*)[16])names, n, "applying the size limit")))
		*dropped = true;
out:
	if (err)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	free(rows);
	free(names);
	return err;
}

int64_t cp_local_limit(struct cp_local *s, uint64_t max_bytes)
{
	uint64_t size0, size;
	char oldest[16], empty[16] = "", path[PATH_MAX];
	bool ibusy = false, pbusy = false, dropped;
	int round, err;

	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only: the size limit is applied by the process that writes");
	if ((err = cp_local_size(s, &size0)))
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
		struct cp_part *day;
		sqlite3 *pdb;

		if ((err = cp_local_size(s, &size)))
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
		cp_part_path(&s->parts, oldest, path, sizeof(path));
		if (!*oldest || ibusy || access(path, F_OK) < 0)
			break;
		if ((err = cp_parts_open(&s->parts, oldest, &day)))
			return err;
		pdb = day->db;
		if ((err = cp_part_reclaim(pdb, oldest, &pbusy)) || (err = cp_local_size(s, &size)))
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
		if ((err = cp_part_reclaim(pdb, oldest, &pbusy)) || (err = update_tmin(s, pdb, oldest)) ||
		    (err = truncate_wal(s->db, &ibusy)))
			return err;
	}
	if ((err = cp_local_size(s, &size)))
		return err;
	return size0 > size ? (int64_t)(size0 - size) : 0;
}

