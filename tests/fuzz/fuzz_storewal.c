/* SPDX-License-Identifier: MIT */
/* Fuzz target: the write-ahead log beside a store's file, as opening the
 * store reads it (lib/store/db.c, cp_db_open): a file shorter than the page
 * count of its header is corrupt unless the log's committed frames hold the
 * missing pages (a checkpoint killed midway).  Each input is the log of a
 * fixed file whose header counts more pages than the file has (made once:
 * a table whose rows are in a log, and the file as it was then, its header
 * given the log's page count).  cp_db_open either refuses it, or opens it and
 * a query over the table answers or fails; it never crashes. */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "store/db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static char top[PATH_MAX];
static unsigned char *image; /* the short file, its header patched */
static size_t image_len;

static void cleanup(void)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_storewal: cannot remove %s\n", top);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 100 || fseek(f, 0, SEEK_SET) || !(b = malloc((size_t)n)) ||
	    fread(b, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void spit(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char src[PATH_MAX + 16];
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t pages;

	if (image)
		return;
	snprintf(top, sizeof(top), "%s/cp-fuzz-storewal-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(top))
		abort();
	atexit(cleanup);
	snprintf(src, sizeof(src), "%s/src.db", top);
	/* a file of two pages, then 40 rows in the log only */
	if (sqlite3_open(src, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x); PRAGMA wal_checkpoint(TRUNCATE);"
			     " PRAGMA wal_autocheckpoint=0; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1"
			     " FROM n WHERE i < 40) INSERT INTO t SELECT randomblob(300) FROM n;",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		abort();
	pages = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	image = slurp(src, &image_len);
	sqlite3_close(db);
	image[28] = (unsigned char)(pages >> 24);
	image[29] = (unsigned char)(pages >> 16);
	image[30] = (unsigned char)(pages >> 8);
	image[31] = (unsigned char)pages;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* a new file each time: cp_db_open checks a file only before this process first opens it */
	static unsigned long k;
	char path[PATH_MAX + 32], wal[PATH_MAX + 40], shm[PATH_MAX + 40];
	sqlite3 *db = NULL;
	int err;

	setup();
	snprintf(path, sizeof(path), "%s/f%lu.db", top, k++);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(shm, sizeof(shm), "%s-shm", path);
	spit(path, image, image_len);
	spit(wal, data, len);
	err = cp_db_open(path, false, "", &db);
	if (!err) {
		sqlite3_exec(db, "SELECT count(*), sum(length(x)) FROM t", NULL, NULL, NULL);
		sqlite3_close(db);
	} else if (err > 0 || !*cp_errmsg(err)) {
		abort(); /* every failure is -errno with a message */
	}
	cp_error_clear();
	unlink(path);
	unlink(wal);
	unlink(shm);
	return 0;
}
