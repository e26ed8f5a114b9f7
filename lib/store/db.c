/* SPDX-License-Identifier: MIT */
#include "db.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"

int cp_db_error(sqlite3 *db, const char *what)
{
	int code = sqlite3_extended_errcode(db);
	int e = (code & 0xff) == SQLITE_FULL ? ENOSPC : (code & 0xff) == SQLITE_BUSY ? EBUSY :
		(code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB ? EBADMSG : EIO;

	/* a full disk can also come as an I/O error (growing the -shm file, say): the system's errno says */
	if (e == EIO && (code & 0xff) == SQLITE_IOERR && sqlite3_system_errno(db) == ENOSPC)
		e = ENOSPC;

	if (e == EBADMSG)
		return cp_error(e, "%s: the store is corrupt (%s); restore it from a backup or move it away",
				what, sqlite3_errmsg(db));
	if (e == ENOSPC)
		return cp_error(e, "%s: no space left on device; free disk space or lower --retention", what);
	return cp_error(e, "%s: %s", what, sqlite3_errmsg(db));
}

int cp_db_exec(sqlite3 *db, const char *sql, const char *what)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : cp_db_error(db, what);
}

int cp_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK ? 0 : cp_db_error(db, "preparing a query");
}

/* The first column of the first row of sql (0 when none or on error). */
int64_t cp_db_count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Opens path.  A reader that may not write the file (another user's store) opens it read-only and
 * leaves its pragmas alone (the writer set them).  Such a reader needs the writer's -wal and -shm
 * files; when there are none (no writer has the store open, and the reader may not make them), the
 * file is opened as immutable: it is at rest, and everything committed is in it. */
static int open_db(const char *path, bool write, const char *pragmas, sqlite3 **out)
{
	bool ro = !write && access(path, W_OK) < 0 && errno != ENOENT;
	int flags = write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	char wal[PATH_MAX + 8], *uri = NULL;
	sqlite3 *db = NULL;
	int err;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (ro && access(wal, R_OK) < 0) {
		if (!(uri = sqlite3_mprintf("file:%s?immutable=1", path)))
			return cp_error(ENOMEM, "out of memory");
		flags |= SQLITE_OPEN_URI;
	}
	if (sqlite3_open_v2(uri ? uri : path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		err = db ? cp_db_error(db, path) : cp_error(ENOMEM, "out of memory");
		sqlite3_close(db);
		sqlite3_free(uri);
		return err;
	}
	sqlite3_free(uri);
	sqlite3_busy_timeout(db, 30000);
	/* partition blocks are a few KiB: small pages waste less of each last
	 * page (the size takes effect only while the file is new) */
	if (!ro && ((err = cp_db_exec(db, pragmas, path)) ||
		    (err = cp_db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", path)))) {
		sqlite3_close(db);
		return err;
	}
	*out = db;
	return 0;
}

/* A file shorter than the page count its SQLite header gives has lost its
 * end; SQLite would read the missing pages as empty and answer short.  But
 * a checkpoint writes page 1 (the new count) before the pages that grow the
 * file: while another process checkpoints, the file looks short for a
 * moment (a reader once called a healthy store corrupt, in
 * test-store-crash), and a checkpoint killed midway leaves it short for
 * good.  Either way the write-ahead log holds the missing pages, and SQLite
 * reads them from there: a short file is corrupt only when its log does not
 * (looked at again for up to 50 ms, in case a checkpoint finished and the log
 * started anew in between). */
static int truncated_once(const char *path, struct stat *st, uint32_t *psize, uint32_t *pages);

/* the 32-bit word at p, big- or little-endian */
static uint32_t u32(const unsigned char *p, bool big)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return big ? be32toh(v) : le32toh(v);
}

static uint32_t be32(const unsigned char *p)
{
	return u32(p, true);
}

/* SQLite's write-ahead log checksum of n bytes (a multiple of 8) over s[2] */
static void wal_sum(const unsigned char *b, size_t n, bool big, uint32_t s[2])
{
	for (size_t i = 0; i < n; i += 8) {
		s[0] += u32(b + i, big) + s[1];
		s[1] += u32(b + i + 4, big) + s[0];
	}
}

/* 1 when the committed frames of the write-ahead log wal (its format:
 * sqlite.org/fileformat2.html, "The Write-Ahead Log") hold every page in
 * (from, to] of a file of psize-byte pages, else 0 */
static int wal_holds(const char *wal, uint32_t psize, uint32_t from, uint32_t to)
{
	unsigned char h[32], fh[24], *page = NULL;
	uint32_t s[2] = { 0, 0 }, magic, frame = 0, commit = 0, *at = NULL;
	size_t n = to > from ? to - from : 0;
	int ok = 0;
	bool big;
	FILE *f;

	if (!n || n > (1u << 20) || !(f = fopen(wal, "rb")))
		return !n;
	if (fread(h, 1, sizeof(h), f) != sizeof(h) || ((magic = be32(h)) & ~1u) != 0x377f0682 || be32(h + 8) != psize ||
	    !(page = malloc(psize)) || !(at = calloc(n, sizeof(*at))))
		goto out;
	big = magic & 1;
	wal_sum(h, 24, big, s);
	if (s[0] != be32(h + 24) || s[1] != be32(h + 28))
		goto out;
	/* frames until the first that is not this log's (salts) or is torn (checksum); a page
	 * counts when a commit frame (one with a database size) comes at or after it */
	while (fread(fh, 1, sizeof(fh), f) == sizeof(fh) && fread(page, 1, psize, f) == psize &&
	       !memcmp(fh + 8, h + 16, 8)) {
		uint32_t pg = be32(fh);

		wal_sum(fh, 8, big, s);
		wal_sum(page, psize, big, s);
		if (s[0] != be32(fh + 16) || s[1] != be32(fh + 20))
			break;
		frame++;
		if (pg > from && pg <= to && !at[pg - from - 1])
			at[pg - from - 1] = frame;
		if (be32(fh + 4))
			commit = frame;
	}
	ok = 1;
	for (size_t i = 0; i < n && ok; i++)
		ok = at[i] && at[i] <= commit;
out:
	fclose(f);
	free(page);
	free(at);
	return ok;
}

static int check_truncated(const char *path)
{
	char wal[4096];
	struct stat st, ws;
	uint32_t psize, pages;
	int err = truncated_once(path, &st, &psize, &pages);

	snprintf(wal, sizeof(wal), "%s-wal", path);
	/* a checkpoint under way, or killed: the log holds the pages.  Else the log may have been
	 * started anew since the header was read (a checkpoint that finished first): a look again */
	for (int i = 0; err && i < 5 && stat(wal, &ws) == 0 && ws.st_size > 0; i++) {
		struct timespec ten_ms = { 0, 10000000 };

		if (wal_holds(wal, psize, (uint32_t)(st.st_size / psize), pages)) {
			err = 0;
			break;
		}
		nanosleep(&ten_ms, NULL);
		err = truncated_once(path, &st, &psize, &pages);
	}
	if (err)
		return cp_error(EBADMSG, "%s: the store is corrupt (the file is truncated: %lld of %llu bytes);"
				" restore it from a backup or move it away", path, (long long)st.st_size,
				(unsigned long long)pages * psize);
	return 0;
}

/* 1 when the file is shorter than its header says (st, psize and pages set), else 0 */
static int truncated_once(const char *path, struct stat *st, uint32_t *psize_out, uint32_t *pages_out)
{
	unsigned char h[100];
	uint32_t psize, pages, counter, valid_for;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return 0;
	n = fread(h, 1, sizeof(h), f);
	if (fstat(fileno(f), st) < 0)
		n = 0;
	fclose(f);
	if (n < sizeof(h) || memcmp(h, "SQLite format 3", 16))
		return 0; /* new, or not SQLite at all: SQLite itself will say */
	psize = (uint32_t)h[16] << 8 | h[17];
	psize = psize == 1 ? 65536 : psize;
	pages = be32(h + 28);
	counter = be32(h + 24);
	valid_for = be32(h + 92);
	*psize_out = psize;
	*pages_out = pages;
	return pages && counter == valid_for && (uint64_t)st->st_size < (uint64_t)pages * psize;
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
int cp_db_open(const char *path, bool write, const char *pragmas, sqlite3 **out)
{
	struct stat st;
	int err = 0;

	pthread_mutex_lock(&opened_lock);
	if (stat(path, &st) < 0 || !was_opened(&st))
		err = check_truncated(path);
	if (!err)
		err = open_db(path, write, pragmas, out);
	if (!err && !stat(path, &st) && !was_opened(&st) &&
	    (nopened < opened_cap || !cp_grow((void **)&opened, &opened_cap, nopened + 1, sizeof(*opened)))) {
		opened[nopened].dev = st.st_dev;
		opened[nopened].ino = st.st_ino;
		nopened++;
	}
	pthread_mutex_unlock(&opened_lock);
	return err;
}



int cp_db_step(sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : cp_db_error(sqlite3_db_handle(st), what);
}

/* The bytes of the SQLite file base with its -wal and -shm files. */
uint64_t cp_db_files_bytes(const char *base)
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

