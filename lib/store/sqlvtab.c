/* SPDX-License-Identifier: MIT */
/* The "cprof" virtual table module: samples and frames of a local store
 * (sqlvtab.h). */
#ifdef CP_SQL_EXT
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#endif

#include "sqlvtab.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../selector.h"
#include "../util.h"
#include "db.h"
#include "handle.h"
#include "query.h"

/* ---- the columns ---- */

enum { S_TIME, S_TYPE, S_SERIES, S_LABELS, S_COMM, S_PID, S_NODE, S_EXE, S_CONTAINER, S_POD, S_STACK, S_FUNCTION,
       S_VALUE, S_UNIT, S_SAMPLE_LABELS, S_SELECTOR, S_NCOLS };
/* the label columns, S_COMM..S_POD */
static const char *const label_cols[] = { "comm", "pid", "node", "exe", "container", "pod" };
#define NLABELCOLS (sizeof(label_cols) / sizeof(label_cols[0]))

static const char samples_schema[] =
	"CREATE TABLE x(time INTEGER, type TEXT, series INTEGER, labels TEXT, comm TEXT, pid TEXT, node TEXT,"
	" exe TEXT, container TEXT, pod TEXT, stack INTEGER, function TEXT, value INTEGER, unit TEXT,"
	" sample_labels TEXT, selector TEXT HIDDEN)";

enum { F_STACK, F_DEPTH, F_FUNCTION, F_FILE, F_LINE, F_INLINED, F_MAPPING, F_ADDRESS };
static const char frames_schema[] =
	"CREATE TABLE x(stack INTEGER, depth INTEGER, function TEXT, file TEXT, line INTEGER, inlined INTEGER,"
	" mapping TEXT, address INTEGER)";

/* ---- the table ---- */

struct vtab {
	sqlite3_vtab base;
	struct cp_local *local; /* the local store's own handle: its scans are no cp_store_* call */
	bool frames;
};

/* the store's error as the table's message; returns SQLITE_ERROR */
static int vtab_error(struct vtab *t, int err, const char *what)
{
	sqlite3_free(t->base.zErrMsg);
	t->base.zErrMsg = sqlite3_mprintf("cprof: %s%s%s", what ? what : "", what ? ": " : "", cp_errmsg(err));
	return err == -ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
}

/* an argument of CREATE VIRTUAL TABLE, its quotes taken off (malloc'ed) */
static char *unquote(const char *a)
{
	size_t n = strlen(a);
	char *r, q;

	while (n && (*a == ' ' || *a == '\t')) {
		a++;
		n--;
	}
	while (n && (a[n - 1] == ' ' || a[n - 1] == '\t'))
		n--;
	q = n >= 2 && (a[0] == '\'' || a[0] == '"') && a[n - 1] == a[0] ? a[0] : 0;
	if (!q)
		return strndup(a, n);
	if (!(r = malloc(n)))
		return NULL;
	size_t j = 0;
	for (size_t i = 1; i + 1 < n; i++) {
		r[j++] = a[i];
		if (a[i] == q && a[i + 1] == q) /* 'it''s' */
			i++;
	}
	r[j] = 0;
	return r;
}

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **errmsg)
{
	struct vtab *t = NULL;
	char *dir = NULL, *kind = NULL;
	int rc = SQLITE_ERROR;

	(void)aux;
	if (argc < 4 || argc > 5) {
		*errmsg = sqlite3_mprintf("cprof: give the store's directory, and samples (the default) or frames:"
					  " USING cprof('DIR') or cprof('DIR', frames)");
		return SQLITE_ERROR;
	}
	if (!(dir = unquote(argv[3])) || (argc == 5 && !(kind = unquote(argv[4])))) {
		rc = SQLITE_NOMEM;
		goto out;
	}
	if (kind && strcmp(kind, "samples") && strcmp(kind, "frames")) {
		*errmsg = sqlite3_mprintf("cprof: unknown table '%s': samples or frames", kind);
		goto out;
	}
	if (!(t = sqlite3_malloc(sizeof(*t)))) {
		rc = SQLITE_NOMEM;
		goto out;
	}
	memset(t, 0, sizeof(*t));
	t->frames = kind && !strcmp(kind, "frames");
	if (!(t->local = cp_local_open_dir(dir, CP_STORE_READ))) {
		*errmsg = sqlite3_mprintf("cprof: %s", cp_errmsg(errno));
		goto out;
	}
	if ((rc = sqlite3_declare_vtab(db, t->frames ? frames_schema : samples_schema)) != SQLITE_OK)
		goto out;
	*out = &t->base;
	t = NULL;
out:
	if (t) {
		cp_local_close(t->local);
		sqlite3_free(t);
	}
	free(dir);
	free(kind);
	return rc;
}

static int vt_disconnect(sqlite3_vtab *vt)
{
	struct vtab *t = (struct vtab *)vt;

	cp_local_close(t->local);
	sqlite3_free(t);
	return SQLITE_OK;
}

/* ---- planning: what goes down to the store ----
 * idxStr lists the constraints handed to xFilter, in argv order, one
 * character each: the column ('a' + column) after an op character: '>' (>),
 * ']' (>=), '<' (<), '[' (<=), '=' (=). */

static char op_char(unsigned char op)
{
	switch (op) {
	case SQLITE_INDEX_CONSTRAINT_GT: return '>';
	case SQLITE_INDEX_CONSTRAINT_GE: return ']';
	case SQLITE_INDEX_CONSTRAINT_LT: return '<';
	case SQLITE_INDEX_CONSTRAINT_LE: return '[';
	case SQLITE_INDEX_CONSTRAINT_EQ: return '=';
	default: return 0;
	}
}

static int vt_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
	struct vtab *t = (struct vtab *)vt;
	char *s = sqlite3_malloc(2 * info->nConstraint + 1);
	double cost = t->frames ? 1e6 : 1e9, rows = t->frames ? 1e5 : 1e8;
	bool lo = false, hi = false;
	int n = 0, i;

	if (!s)
		return SQLITE_NOMEM;
	for (i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		char op = op_char(c->op);
		bool take;

		if (!c->usable && !t->frames && c->iColumn == S_SELECTOR)
			goto refuse; /* only a plan that hands the selector over can answer */
		if (!c->usable || !op)
			continue;
		if (t->frames)
			take = c->iColumn == F_STACK && op == '=';
		else if (c->iColumn == S_TIME)
			take = true;
		else
			take = op == '=' && (c->iColumn == S_TYPE || c->iColumn == S_SERIES || c->iColumn == S_SELECTOR ||
					     (c->iColumn >= S_COMM && c->iColumn <= S_POD));
		if (!take)
			continue;
		s[2 * n] = op;
		s[2 * n + 1] = (char)('a' + c->iColumn);
		n++;
		info->aConstraintUsage[i].argvIndex = n;
		/* the selector is ours alone; time and type the scan answers
		 * exactly (xFilter); a label, which may be the samples', and the
		 * others SQLite checks again */
		info->aConstraintUsage[i].omit =
			!t->frames && (c->iColumn == S_SELECTOR || c->iColumn == S_TIME || c->iColumn == S_TYPE);
		if (t->frames) {
			cost = 10;
			rows = 10;
		} else if (c->iColumn == S_TIME) {
			lo |= op == '>' || op == ']' || op == '=';
			hi |= op == '<' || op == '[' || op == '=';
		} else {
			cost /= 10;
			rows /= 10;
		}
	}
	/* a range is the cheapest thing there is: a day of a store of years */
	if (lo) {
		cost /= 1000;
		rows /= 1000;
	}
	if (hi) {
		cost /= 2;
		rows /= 2;
	}
	s[2 * n] = 0;
	info->idxStr = s;
	info->needToFreeIdxStr = 1;
	info->idxNum = n;
	info->estimatedCost = cost;
	info->estimatedRows = (sqlite3_int64)rows;
	return SQLITE_OK;
refuse:
	sqlite3_free(s);
	return SQLITE_CONSTRAINT;
}

/* ---- the cursor ---- */

/* a series of the scan, with what its rows show */
struct ser {
	const struct cp_store_series *s;
	char *labels_json;
	char unit[128];
	const char *label[NLABELCOLS]; /* into s; NULL: missing */
};

struct cursor {
	sqlite3_vtab_cursor base;
	/* samples */
	struct cp_store_series *all;
	size_t nall;
	struct ser *ser;
	size_t nser;
	struct cp_local_scanner *it;
	struct cp_local_entry e; /* the row; e.series: index into ser */
	bool eof;
	int64_t rowid;
	uint32_t leaf_stack; /* the stack whose leaf is in leaf (UINT32_MAX: none), and its day */
	const struct cp_part *leaf_day;
	char leaf[512];
	struct cp_store_series *sub; /* the series scanned (shallow copies of all's, in its order) */
	/* frames */
	char (*days)[16];          /* the days whose stacks are listed, and the one being read */
	size_t ndays, di;
	struct cp_part *day;
	uint32_t stack, stack_end; /* the stack (in day), and the one after the last */
	struct cp_frame *fr;
	size_t nfr, frcap, depth;
	/* both */
	struct cp_frame *tmp;
	size_t tmpcap;
};

static int vt_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
	struct cursor *c = sqlite3_malloc(sizeof(*c));

	(void)vt;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	*out = &c->base;
	return SQLITE_OK;
}

static void cursor_reset(struct cursor *c)
{
	for (size_t i = 0; i < c->nser; i++)
		free(c->ser[i].labels_json);
	free(c->ser);
	free(c->sub);
	free(c->days);
	c->ser = NULL;
	c->sub = NULL;
	c->days = NULL;
	c->ndays = c->di = 0;
	c->day = NULL;
	c->nser = 0;
	cp_store_series_free(c->all, c->nall);
	c->all = NULL;
	c->nall = 0;
	cp_local_scan_close(c->it);
	c->it = NULL;
	c->eof = true;
	c->rowid = 0;
	c->leaf_stack = UINT32_MAX;
	c->nfr = c->depth = 0;
}

static int vt_close(sqlite3_vtab_cursor *cur)
{
	struct cursor *c = (struct cursor *)cur;

	cursor_reset(c);
	free(c->fr);
	free(c->tmp);
	sqlite3_free(c);
	return SQLITE_OK;
}

/* a time bound from an SQL value: the nanoseconds t with t > v (gt), or t >= v */
static int64_t bound(sqlite3_value *v, bool gt)
{
	double d;

	if (sqlite3_value_type(v) == SQLITE_INTEGER) {
		int64_t i = sqlite3_value_int64(v);

		return gt ? (i == INT64_MAX ? INT64_MAX : i + 1) : i;
	}
	d = sqlite3_value_double(v);
	if (isnan(d))
		return INT64_MIN;
	d = gt ? floor(d) + 1 : ceil(d);
	if (d >= 9.2e18)
		return INT64_MAX;
	if (d <= -9.2e18)
		return INT64_MIN;
	return (int64_t)d;
}

/* A stack's id in the tables: its day's number (days since 1970) and its id in the day's dictionary,
 * stacks being a day's own. */
static int64_t day_number(const char *name)
{
	struct tm tm = { 0 };

	if (sscanf(name, "%4d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) / 86400;
}

static int64_t stack_id(const struct cp_part *day, uint32_t stack)
{
	return stack ? (int64_t)((uint64_t)day_number(day->name) << 32 | stack) : 0;
}

static int filter_samples(struct vtab *t, struct cursor *c, const char *idx, int argc, sqlite3_value **argv)
{
	struct cp_selector *sel[8] = { 0 };
	size_t nsel = 0;
	const char *type = NULL, *label[NLABELCOLS] = { 0 };
	int64_t from = INT64_MIN, to = INT64_MAX, series = -1;
	bool none = false;
	size_t i, j;
	int err = 0;

	for (int k = 0; k < argc; k++) {
		char op = idx[2 * k];
		int col = idx[2 * k + 1] - 'a';
		sqlite3_value *v = argv[k];
		int64_t b;
		int nt;

		if (sqlite3_value_type(v) == SQLITE_NULL) { /* matches nothing */
			none = true;
			continue;
		}
		switch (col) {
		case S_TIME:
			nt = sqlite3_value_numeric_type(v);
			if (nt != SQLITE_INTEGER && nt != SQLITE_FLOAT) {
				/* text that is no number (or a blob): more than any
				 * number, as SQLite compares them */
				none |= op == '>' || op == ']' || op == '=';
				break;
			}
			if (op == '>' || op == ']' || op == '=') {
				b = bound(v, op == '>');
				from = b > from ? b : from;
			}
			if (op == '<' || op == '[' || op == '=') {
				b = bound(v, op != '<'); /* < v: t < ceil(v); <= v: t < floor(v) + 1 */
				to = b < to ? b : to;
			}
			break;
		case S_TYPE: type = (const char *)sqlite3_value_text(v); break;
		case S_SERIES: /* else SQLite compares */
			if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER)
				series = sqlite3_value_int64(v);
			break;
		case S_SELECTOR: /* several: every one must match */
			if (nsel == sizeof(sel) / sizeof(sel[0])) {
				err = cp_error(EINVAL, "more than %zu selectors", nsel);
				goto out;
			}
			if ((err = cp_selector_parse((const char *)sqlite3_value_text(v), &sel[nsel])))
				goto out;
			nsel++;
			break;
		default:
			if (col >= S_COMM && col <= S_POD)
				label[col - S_COMM] = (const char *)sqlite3_value_text(v);
		}
	}
	if (none || from >= to)
		goto out;
	if ((err = cp_local_series(t->local, sel[0], from, to, &c->all, &c->nall)))
		goto out;
	if (!(c->ser = calloc(c->nall + 1, sizeof(*c->ser))) || !(c->sub = calloc(c->nall + 1, sizeof(*c->sub)))) {
		err = cp_error(ENOMEM, "out of memory reading series");
		goto out;
	}
	for (i = 0; i < c->nall; i++) {
		struct cp_store_series *s = &c->all[i];
		struct ser *x = &c->ser[c->nser];
		bool keep = (!type || !strcmp(type, s->type)) && (series < 0 || s->id == series);

		for (j = 1; keep && j < nsel; j++) {
			int hit;

			cp_selector_begin(sel[j]);
			hit = !cp_selector_match_type(sel[j], s->type) ?
				      0 :
				      cp_selector_match_labels(sel[j], (const char *const *)s->names,
							       (const char *const *)s->values, s->nlabels);
			if (hit < 0) {
				err = hit;
				goto out;
			}
			keep = hit;
		}

		memset(x, 0, sizeof(*x));
		x->s = s;
		for (j = 0; j < s->nlabels; j++)
			for (size_t k = 0; k < NLABELCOLS; k++)
				if (!strcmp(s->names[j], label_cols[k]))
					x->label[k] = s->values[j];
		/* a series without the label may have it in its samples */
		for (j = 0; keep && j < NLABELCOLS; j++)
			keep = !label[j] || !x->label[j] || !strcmp(label[j], x->label[j]);
		if (!keep)
			continue;
		struct cp_kv *kv = calloc(s->nlabels + 1, sizeof(*kv));

		if (!kv) {
			err = cp_error(ENOMEM, "out of memory reading series");
			goto out;
		}
		for (j = 0; j < s->nlabels; j++)
			kv[j] = (struct cp_kv){ s->names[j], s->values[j] };
		x->labels_json = cp_series_labels_json(kv, s->nlabels, &err);
		free(kv);
		if (!x->labels_json)
			goto out;
		cp_store_type_part(s->type, 2, x->unit, sizeof(x->unit));
		c->sub[c->nser++] = *s;
	}
	if (c->nser && !(err = cp_local_scan_open(t->local, sel[0], from, to, &c->it)) &&
	    (err = cp_local_scan_next(c->it, c->sub, c->nser, &c->e)) > 0) {
		c->eof = false;
		err = 0;
	}
out:
	for (i = 0; i < nsel; i++)
		cp_selector_free(sel[i]);
	return err ? vtab_error(t, err, NULL) : SQLITE_OK;
}

/* the dictionary of the cursor's row: the day of its entry, or of its stack */
static const struct cp_profile *dict(struct cursor *c)
{
	return ((struct vtab *)c->base.pVtab)->frames ? c->day->dict.p : c->e.day->dict.p;
}

/* the frames of the cursor's stack into c->fr; skips empty stacks, and goes on to the next day */
static int load_frames(struct vtab *t, struct cursor *c)
{
	int n, err;

	for (;;) {
		for (; c->day && c->stack < c->stack_end; c->stack++) {
			if ((n = cp_profile_frames(c->day->dict.p, c->stack, &c->fr, &c->frcap)) < 0)
				return n;
			c->nfr = (size_t)n;
			c->depth = 0;
			if (n)
				return 0;
		}
		c->nfr = 0;
		c->day = NULL;
		if (c->di >= c->ndays)
			return 0;
		if ((err = cp_parts_open(&t->local->parts, c->days[c->di++], &c->day)) == -ENOENT)
			continue; /* gone since listed */
		if (err || (err = cp_dict_load(&c->day->dict)))
			return err;
		c->stack = 1;
		c->stack_end = c->day->dict.nstack + 1;
	}
}

static int filter_frames(struct vtab *t, struct cursor *c, int argc, sqlite3_value **argv)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int64_t want = -1;
	int err = 0, rc;

	if (argc == 1) {
		want = sqlite3_value_int64(argv[0]);
		if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER || (uint32_t)want < 1)
			return SQLITE_OK; /* no such stack */
	}
	/* the days: every one, or the one the stack is of */
	if ((err = cp_db_prepare(t->local->db, "SELECT name FROM partitions ORDER BY name", &st)))
		return vtab_error(t, err, "reading stacks");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (want >= 0 && day_number(name) != want >> 32)
			continue;
		if (cp_grow((void **)&c->days, &cap, c->ndays + 1, sizeof(*c->days))) {
			err = cp_error(ENOMEM, "out of memory reading stacks");
			break;
		}
		snprintf(c->days[c->ndays++], sizeof(c->days[0]), "%s", name);
	}
	sqlite3_finalize(st);
	if (err || (err = load_frames(t, c)))
		return vtab_error(t, err, "reading stacks");
	if (want >= 0 && c->day) { /* only that stack */
		uint32_t k = (uint32_t)want;

		c->stack = k < c->stack_end ? k : c->stack_end;
		c->stack_end = c->stack < c->stack_end ? c->stack + 1 : c->stack_end;
		c->ndays = 0;
		if ((err = load_frames(t, c)))
			return vtab_error(t, err, "reading stacks");
	}
	return SQLITE_OK;
}

static int vt_filter(sqlite3_vtab_cursor *cur, int idxnum, const char *idxstr, int argc, sqlite3_value **argv)
{
	struct cursor *c = (struct cursor *)cur;
	struct vtab *t = (struct vtab *)cur->pVtab;

	(void)idxnum;
	cursor_reset(c);
	cp_error_clear();
	if (t->frames)
		return filter_frames(t, c, argc, argv);
	return filter_samples(t, c, idxstr ? idxstr : "", argc, argv);
}

static int vt_next(sqlite3_vtab_cursor *cur)
{
	struct cursor *c = (struct cursor *)cur;
	struct vtab *t = (struct vtab *)cur->pVtab;
	int err;

	if (!t->frames) {
		if ((err = cp_local_scan_next(c->it, c->sub, c->nser, &c->e)) < 0)
			return vtab_error(t, err, NULL);
		c->eof = !err;
		c->rowid++;
		return SQLITE_OK;
	}
	if (++c->depth < c->nfr)
		return SQLITE_OK;
	c->stack++;
	if ((err = load_frames(t, c)))
		return vtab_error(t, err, "reading stacks");
	return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *cur)
{
	struct cursor *c = (struct cursor *)cur;

	if (((struct vtab *)cur->pVtab)->frames)
		return !c->day;
	return c->eof;
}

/* a JSON string of text */
static void json_str(sqlite3_str *s, const char *text)
{
	sqlite3_str_appendchar(s, 1, '"');
	for (const unsigned char *k = (const unsigned char *)text; *k; k++)
		if (*k < 0x20 || *k == '"' || *k == '\\')
			sqlite3_str_appendf(s, "\\u%04x", *k);
		else
			sqlite3_str_appendchar(s, 1, (char)*k);
	sqlite3_str_appendchar(s, 1, '"');
}

/* the JSON of sample label set id (sqlite3_malloc'ed), or NULL */
static char *sample_labels_json(const struct cp_profile *p, uint32_t id)
{
	sqlite3_str *s = sqlite3_str_new(NULL);

	sqlite3_str_appendchar(s, 1, '{');
	if (id < p->nlabelsets)
		for (uint32_t i = 0; i < p->labelsets[id].len; i++) {
			const struct cp_label *l = &p->labels[p->labelsets[id].off + i];

			if (i)
				sqlite3_str_appendchar(s, 1, ',');
			json_str(s, cp_profile_string(p, l->key));
			sqlite3_str_appendchar(s, 1, ':');
			if (l->str)
				json_str(s, cp_profile_string(p, l->str));
			else
				sqlite3_str_appendf(s, "%lld", (long long)l->num);
		}
	sqlite3_str_appendchar(s, 1, '}');
	return sqlite3_str_finish(s);
}

static const char *sample_label(const struct cp_profile *p, uint32_t id, const char *key)
{
	if (id >= p->nlabelsets)
		return NULL;
	for (uint32_t i = 0; i < p->labelsets[id].len; i++) {
		const struct cp_label *l = &p->labels[p->labelsets[id].off + i];

		if (l->str && !strcmp(cp_profile_string(p, l->key), key))
			return cp_profile_string(p, l->str);
	}
	return NULL;
}

static int samples_column(struct cursor *c, sqlite3_context *ctx, int col)
{
	const struct cp_local_entry *e = &c->e;
	const struct ser *s = &c->ser[e->series];
	const struct cp_profile *p = dict(c);
	const char *v;
	char *j;
	int n;

	switch (col) {
	case S_TIME: sqlite3_result_int64(ctx, e->t); break;
	case S_TYPE: sqlite3_result_text(ctx, s->s->type, -1, SQLITE_TRANSIENT); break;
	case S_SERIES: sqlite3_result_int64(ctx, s->s->id); break;
	case S_LABELS: sqlite3_result_text(ctx, s->labels_json, -1, SQLITE_TRANSIENT); break;
	case S_STACK: sqlite3_result_int64(ctx, stack_id(e->day, e->stack)); break;
	case S_FUNCTION:
		if (c->leaf_stack != e->stack || c->leaf_day != e->day) {
			if ((n = cp_profile_frames(p, e->stack, &c->tmp, &c->tmpcap)) < 0)
				return SQLITE_NOMEM;
			c->leaf[0] = 0;
			if (n) {
				v = cp_frame_name(p, &c->tmp[0], c->leaf, sizeof(c->leaf));
				if (v != c->leaf)
					snprintf(c->leaf, sizeof(c->leaf), "%s", v);
			}
			c->leaf_stack = e->stack;
			c->leaf_day = e->day;
		}
		if (e->stack)
			sqlite3_result_text(ctx, c->leaf, -1, SQLITE_TRANSIENT);
		break;
	case S_VALUE: sqlite3_result_int64(ctx, e->value); break;
	case S_UNIT: sqlite3_result_text(ctx, s->unit, -1, SQLITE_TRANSIENT); break;
	case S_SAMPLE_LABELS:
		if (!(j = sample_labels_json(p, e->labels)))
			return SQLITE_NOMEM;
		sqlite3_result_text(ctx, j, -1, sqlite3_free);
		break;
	case S_SELECTOR: break; /* NULL */
	default:
		if (col >= S_COMM && col <= S_POD) {
			v = s->label[col - S_COMM];
			if (!v)
				v = sample_label(p, e->labels, label_cols[col - S_COMM]);
			if (v)
				sqlite3_result_text(ctx, v, -1, SQLITE_TRANSIENT);
		}
	}
	return SQLITE_OK;
}

static int frames_column(struct cursor *c, sqlite3_context *ctx, int col)
{
	const struct cp_profile *p = dict(c);
	const struct cp_frame *f = &c->fr[c->depth];
	const struct cp_location *l = cp_profile_loc(p, f->location);
	char buf[512];

	switch (col) {
	case F_STACK: sqlite3_result_int64(ctx, stack_id(c->day, c->stack)); break;
	case F_DEPTH: sqlite3_result_int64(ctx, (int64_t)c->depth); break;
	case F_FUNCTION: sqlite3_result_text(ctx, cp_frame_name(p, f, buf, sizeof(buf)), -1, SQLITE_TRANSIENT); break;
	case F_FILE:
		if (f->filename)
			sqlite3_result_text(ctx, cp_profile_string(p, f->filename), -1, SQLITE_TRANSIENT);
		break;
	case F_LINE: sqlite3_result_int64(ctx, f->line); break;
	case F_INLINED: sqlite3_result_int(ctx, f->inlined); break;
	case F_MAPPING:
		if (l->mapping)
			sqlite3_result_text(ctx, cp_profile_string(p, p->mappings[l->mapping - 1].filename), -1,
					    SQLITE_TRANSIENT);
		break;
	case F_ADDRESS: sqlite3_result_int64(ctx, (int64_t)l->address); break;
	}
	return SQLITE_OK;
}

static int vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	struct cursor *c = (struct cursor *)cur;

	if (((struct vtab *)cur->pVtab)->frames)
		return frames_column(c, ctx, col);
	return samples_column(c, ctx, col);
}

static int vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	struct cursor *c = (struct cursor *)cur;

	if (((struct vtab *)cur->pVtab)->frames)
		*rowid = (sqlite3_int64)(((uint64_t)day_number(c->day->name) << 40) | ((uint64_t)c->stack << 16) | c->depth);
	else
		*rowid = c->rowid;
	return SQLITE_OK;
}

static const sqlite3_module cprof_module = {
	.iVersion = 1,
	.xCreate = vt_connect,
	.xConnect = vt_connect,
	.xBestIndex = vt_best_index,
	.xDisconnect = vt_disconnect,
	.xDestroy = vt_disconnect,
	.xOpen = vt_open,
	.xClose = vt_close,
	.xFilter = vt_filter,
	.xNext = vt_next,
	.xEof = vt_eof,
	.xColumn = vt_column,
	.xRowid = vt_rowid,
};

static void now_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	(void)argv;
	sqlite3_result_int64(ctx, cp_now_ns());
}

int cp_sql_register(sqlite3 *db)
{
	int rc = sqlite3_create_module(db, "cprof", &cprof_module, NULL);

	if (rc == SQLITE_OK)
		/* "deterministic": SQLite evaluates now() once per statement
		 * (a constant factored out of the loop), so that every row of a
		 * statement sees the same now */
		rc = sqlite3_create_function(db, "now", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, now_fn, NULL, NULL);
	return rc;
}
