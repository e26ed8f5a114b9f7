/* SPDX-License-Identifier: MIT */
/* cprof sql: SQL over a local store, its answer as a table, CSV or JSON
 * (sql.h). */
#include "sql.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"
#include "sqlvtab.h"
#include "store.h"

const char *const cp_sql_formats[] = { "table", "csv", "json", NULL };

int cp_sql_format_parse(const char *s, enum cp_sql_format *f)
{
	char names[64];

	for (int i = 0; cp_sql_formats[i]; i++)
		if (!strcmp(s, cp_sql_formats[i])) {
			*f = (enum cp_sql_format)i;
			return 0;
		}
	return cp_error(EINVAL, "unknown format '%s' (choose %s)", s, cp_join_names(cp_sql_formats, 3, names, sizeof(names)));
}

/* a failed statement: the store's failure when one was recorded while it ran,
 * else SQLite's message as an error of the SQL */
static int sql_error(sqlite3 *db)
{
	int code = cp_error_code();

	if (code && code != EINVAL)
		return -code;
	if (sqlite3_errcode(db) == SQLITE_NOMEM)
		return cp_error(ENOMEM, "out of memory running the SQL");
	return cp_error(EINVAL, "SQL error: %s", sqlite3_errmsg(db));
}

/* a cell as text for table and csv (malloc'ed); NULL is "" */
static char *cell_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t;
	char buf[64];

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL: return strdup("");
	case SQLITE_INTEGER: snprintf(buf, sizeof(buf), "%lld", (long long)sqlite3_column_int64(st, i)); return strdup(buf);
	case SQLITE_FLOAT: snprintf(buf, sizeof(buf), "%.15g", sqlite3_column_double(st, i)); return strdup(buf);
	case SQLITE_BLOB: {
		int n = sqlite3_column_bytes(st, i);
		const unsigned char *b = sqlite3_column_blob(st, i);
		char *r = malloc(2 * (size_t)n + 1);

		for (int k = 0; r && k < n; k++)
			snprintf(r + 2 * k, 3, "%02x", b[k]);
		if (r)
			r[2 * n] = 0;
		return r;
	}
	default:
		t = sqlite3_column_text(st, i);
		return strdup(t ? (const char *)t : "");
	}
}

static void csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *k = (const unsigned char *)s; *k; k++) {
		if (*k == '"' || *k == '\\')
			fprintf(out, "\\%c", *k);
		else if (*k == '\n')
			fputs("\\n", out);
		else if (*k == '\t')
			fputs("\\t", out);
		else if (*k < 0x20)
			fprintf(out, "\\u%04x", *k);
		else
			fputc(*k, out);
	}
	fputc('"', out);
}

static void json_cell(FILE *out, sqlite3_stmt *st, int i)
{
	double d;
	char *t;

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL: fputs("null", out); break;
	case SQLITE_INTEGER: fprintf(out, "%lld", (long long)sqlite3_column_int64(st, i)); break;
	case SQLITE_FLOAT:
		d = sqlite3_column_double(st, i);
		if (isfinite(d))
			fprintf(out, "%.17g", d);
		else
			fputs("null", out);
		break;
	case SQLITE_BLOB:
		if ((t = cell_text(st, i))) {
			json_string(out, t);
			free(t);
		}
		break;
	default: json_string(out, (const char *)sqlite3_column_text(st, i));
	}
}

/* the rows of the table format, kept to size the columns */
struct grid {
	char **cells; /* row-major, ncols a row, the header first */
	bool *right;  /* a column of numbers: aligned right */
	size_t ncols, nrows, ncells, cap;
};

/* the next cell (owned by the grid from now on, also on failure) */
static int grid_add(struct grid *g, char *cell)
{
	if (!cell || cp_grow((void **)&g->cells, &g->cap, g->ncells + 1, sizeof(*g->cells))) {
		free(cell);
		return cp_error(ENOMEM, "out of memory keeping the rows");
	}
	g->cells[g->ncells++] = cell;
	return 0;
}

/* the columns text takes: its UTF-8 characters */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void grid_print(const struct grid *g, FILE *out)
{
	size_t *w = calloc(g->ncols + 1, sizeof(*w)), r, c;

	if (!w)
		return;
	for (r = 0; r < g->nrows; r++)
		for (c = 0; c < g->ncols; c++) {
			size_t n = width(g->cells[r * g->ncols + c]);

			w[c] = n > w[c] ? n : w[c];
		}
	for (r = 0; r < g->nrows; r++) {
		for (c = 0; c < g->ncols; c++) {
			const char *s = g->cells[r * g->ncols + c];
			size_t pad = w[c] - width(s);

			if (c)
				fputs("  ", out);
			if (g->right[c] && r)
				fprintf(out, "%*s%s", (int)pad, "", s);
			else if (c + 1 < g->ncols)
				fprintf(out, "%s%*s", s, (int)pad, "");
			else
				fputs(s, out);
		}
		fputc('\n', out);
		if (!r) { /* under the header */
			for (c = 0; c < g->ncols; c++) {
				if (c)
					fputs("  ", out);
				for (size_t k = 0; k < w[c]; k++)
					fputc('-', out);
			}
			fputc('\n', out);
		}
	}
	free(w);
}

/* Runs one prepared statement, writing its rows. */
static int run_stmt(sqlite3 *db, sqlite3_stmt *st, enum cp_sql_format fmt, FILE *out)
{
	struct grid g = { NULL, NULL, (size_t)sqlite3_column_count(st), 0, 0, 0 };
	size_t rows = 0, c;
	int err = 0, rc;

	if (fmt == CP_SQL_TABLE) {
		if (!(g.right = calloc(g.ncols + 1, sizeof(*g.right))))
			return cp_error(ENOMEM, "out of memory keeping the rows");
		for (c = 0; c < g.ncols; c++) {
			if ((err = grid_add(&g, strdup(sqlite3_column_name(st, (int)c)))))
				goto out;
			g.right[c] = true;
		}
		g.nrows = 1;
	} else if (fmt == CP_SQL_CSV && g.ncols) {
		for (c = 0; c < g.ncols; c++) {
			if (c)
				fputc(',', out);
			csv_field(out, sqlite3_column_name(st, (int)c));
		}
		fputs("\r\n", out);
	} else if (fmt == CP_SQL_JSON && g.ncols) {
		fputc('[', out);
	}
	cp_error_clear();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (c = 0; c < g.ncols; c++) {
			int type = sqlite3_column_type(st, (int)c);
			char *t;

			if (fmt == CP_SQL_TABLE) {
				if (type != SQLITE_INTEGER && type != SQLITE_FLOAT && type != SQLITE_NULL)
					g.right[c] = false;
				if ((err = grid_add(&g, cell_text(st, (int)c))))
					goto out;
			} else if (fmt == CP_SQL_CSV) {
				if (c)
					fputc(',', out);
				if (!(t = cell_text(st, (int)c))) {
					err = cp_error(ENOMEM, "out of memory writing a row");
					goto out;
				}
				csv_field(out, t);
				free(t);
			} else {
				fputs(c ? ", " : rows ? ",\n{" : "{", out);
				json_string(out, sqlite3_column_name(st, (int)c));
				fputs(": ", out);
				json_cell(out, st, (int)c);
			}
		}
		if (fmt == CP_SQL_TABLE)
			g.nrows++;
		else if (fmt == CP_SQL_CSV)
			fputs("\r\n", out);
		else
			fputc('}', out);
		rows++;
	}
	if (rc != SQLITE_DONE) {
		err = sql_error(db);
		goto out;
	}
	if (fmt == CP_SQL_TABLE && g.ncols)
		grid_print(&g, out);
	else if (fmt == CP_SQL_JSON && g.ncols)
		fputs("]\n", out);
out:
	for (size_t i = 0; i < g.ncells; i++)
		free(g.cells[i]);
	free(g.cells);
	free(g.right);
	return err;
}

int cp_sql_run(const char *dir, const char *sql, enum cp_sql_format fmt, FILE *out)
{
	struct cp_store *s;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	const char *tail = sql;
	char *q = NULL;
	int err = 0;

	/* the store's own error (no store, not a store) before SQLite's */
	if (!(s = cp_store_open(dir, CP_STORE_READ)))
		return -errno;
	cp_store_close(s);
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		err = cp_error(ENOMEM, "cannot open an SQLite database in memory");
		goto out;
	}
	q = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.samples USING cprof(%Q);"
			    "CREATE VIRTUAL TABLE temp.frames USING cprof(%Q, frames);",
			    dir, dir);
	if (!q || cp_sql_register(db) != SQLITE_OK) {
		err = cp_error(ENOMEM, "out of memory setting up the SQL tables");
		goto out;
	}
	if (sqlite3_exec(db, q, NULL, NULL, NULL) != SQLITE_OK) {
		err = cp_error(EIO, "cannot open the store's tables: %s", sqlite3_errmsg(db));
		goto out;
	}
	while (tail && *tail) {
		if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
			err = sql_error(db);
			goto out;
		}
		if (!st) /* white space or a comment */
			continue;
		if ((err = run_stmt(db, st, fmt, out)))
			goto out;
		sqlite3_finalize(st);
		st = NULL;
	}
	if (fflush(out) || ferror(out))
		err = cp_error(EIO, "cannot write the answer: %s", strerror(errno));
out:
	sqlite3_finalize(st);
	sqlite3_free(q);
	sqlite3_close(db);
	return err;
}
