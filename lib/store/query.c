/* SPDX-License-Identifier: MIT */
/* Reading the local store (query.h): day by day, each day with its own dictionary and series. */
#include "query.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../cumulative.h"
#include "../error.h"
#include "../index.h"
#include "../util.h"
#include "blocks.h"
#include "db.h"
#include "handle.h"
#include "series.h"

/* ---- the days of a range ---- */

/* The names of the days that overlap [from, to], into *names (malloc'ed).  No statement of the
 * index stays open afterwards. */
static int list_parts(struct cp_local *s, int64_t from, int64_t to, char (**names)[16], size_t *n)
{
	sqlite3_stmt *pst = NULL;
	size_t cap = 0;
	int err, rc;

	*names = NULL;
	*n = 0;
	if ((err = cp_db_prepare(s->db, "SELECT name FROM partitions WHERE t_max >= ? AND t_min <= ? ORDER BY name", &pst)))
		return err;
	sqlite3_bind_int64(pst, 1, from);
	sqlite3_bind_int64(pst, 2, to);
	while ((rc = sqlite3_step(pst)) == SQLITE_ROW) {
		if (cp_grow((void **)names, &cap, *n + 1, sizeof(**names))) {
			err = cp_error(ENOMEM, "out of memory reading the store");
			break;
		}
		snprintf((*names)[(*n)++], sizeof((*names)[0]), "%s", (const char *)sqlite3_column_text(pst, 0));
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(s->db, "reading the list of days");
	sqlite3_finalize(pst);
	if (err) {
		free(*names);
		*names = NULL;
		*n = 0;
	}
	return err;
}

/* day name, open; 1 when it is gone (removed by retention since it was listed) */
static int open_day(struct cp_local *s, const char *name, struct cp_part **day)
{
	int err = cp_parts_open(&s->parts, name, day);

	return err == -ENOENT ? 1 : err;
}

/* ---- the series of a selection, across days ---- */

static int ser_cmp(const void *a, const void *b)
{
	return cp_store_series_cmp(a, b);
}

/* ser[0..*n) sorted and each (type, labels) once */
static void sort_unique(struct cp_store_series *ser, size_t *n)
{
	size_t i, j;

	cp_qsort(ser, *n, sizeof(*ser), ser_cmp);
	for (i = 0, j = 0; i < *n; i++) {
		if (j && !cp_store_series_cmp(&ser[j - 1], &ser[i]))
			cp_store_series_release(&ser[i]);
		else
			ser[j++] = ser[i];
	}
	*n = j;
}

/* The series of the days that overlap [from, to] that sel matches (cp_local_series), and in *mask
 * the selector's matchers that the series that lack their label leave to their samples: those of
 * labels that none of the days' series has (a label some series have is a series label, and a series
 * without it has "" for it). */
static int local_series(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
			struct cp_store_series **out, size_t *n, uint64_t *mask)
{
	struct cp_store_series *all = NULL;
	char (*names)[16] = NULL;
	size_t nall = 0, cap = 0, nnames = 0, i, k;
	int err;

	*out = NULL;
	*n = 0;
	if ((err = list_parts(s, from, to, &names, &nnames)))
		return err;
	for (i = 0; !err && i < nnames; i++) {
		struct cp_store_series *ser = NULL;
		struct cp_part *day;
		size_t nser = 0;

		if ((err = open_day(s, names[i], &day)) == 1) {
			err = 0;
			continue;
		}
		if (err || (err = cp_series_list(day->db, NULL, 0, &ser, &nser)))
			break;
		if (cp_grow((void **)&all, &cap, nall + nser + 1, sizeof(*all))) {
			cp_store_series_free(ser, nser);
			err = cp_error(ENOMEM, "out of memory reading series");
			break;
		}
		for (k = 0; k < nser; k++)
			all[nall++] = ser[k];
		free(ser);
		sort_unique(all, &nall);
	}
	free(names);
	*mask = cp_series_deferrable(sel, all, nall);
	if (sel && !err) {
		cp_selector_begin(sel); /* one budget for the selector's regexes over all the series */
		for (i = 0, k = 0; i < nall; i++) {
			int hit = cp_series_match(sel, *mask, &all[i]);

			if (hit < 0)
				err = hit;
			if (hit > 0)
				all[k++] = all[i];
			else
				cp_store_series_release(&all[i]);
		}
		nall = k;
	}
	if (err) {
		cp_store_series_free(all, nall);
		return err;
	}
	/* a day's id means nothing across days: one of its own, the same in every list and store */
	for (k = 0; k < nall; k++) {
		uint64_t h = cp_hash_bytes(all[k].type, strlen(all[k].type) + 1, 0x5e7);

		for (size_t j = 0; j < all[k].nlabels; j++) {
			h = cp_hash_bytes(all[k].names[j], strlen(all[k].names[j]) + 1, h);
			h = cp_hash_bytes(all[k].values[j], strlen(all[k].values[j]) + 1, h);
		}
		all[k].id = (int64_t)(h >> 1) + 1;
	}
	*out = all;
	*n = nall;
	return 0;
}

int cp_local_series(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
		    struct cp_store_series **out, size_t *n)
{
	uint64_t mask;

	return local_series(s, sel, from, to, out, n, &mask);
}

/* What a selection reads: its series (one type), and in each day the ids of those the day has. */
struct selection {
	struct cp_store_series *ser; /* the series, sorted (cp_store_series_cmp) */
	size_t nser;
	uint64_t mask;               /* the selector's matchers left to the samples of the series that lack their label */
	bool gauge;                  /* of a gauge type: averaged over its times, never summed */
	char (*days)[16];
	size_t ndays;
};

static void selection_release(struct selection *x)
{
	cp_store_series_free(x->ser, x->nser);
	free(x->days);
	memset(x, 0, sizeof(*x));
}

/* The series of q's selector in the days of [from, to], of one type (cp_series_resolve), and those
 * days.  When none of them has a matching series, the other days are asked: a selector that matches
 * data outside the range gives an empty profile, not "no stored series match" (and only then are
 * days outside the range opened). */
static int selection_make(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
			  struct selection *x)
{
	char st[128];
	int err;

	memset(x, 0, sizeof(*x));
	if (!(err = local_series(s, sel, from, to, &x->ser, &x->nser, &x->mask)) && !x->nser) {
		free(x->ser);
		err = local_series(s, sel, INT64_MIN, INT64_MAX, &x->ser, &x->nser, &x->mask);
	}
	if (err || (err = cp_series_resolve(&x->ser, &x->nser)) || (err = list_parts(s, from, to, &x->days, &x->ndays))) {
		selection_release(x);
		return err;
	}
	x->gauge = cp_value_kind(cp_store_type_part(x->ser[0].type, 1, st, sizeof(st))) == CP_VALUE_GAUGE;
	return 0;
}

/* Whether q asks about the processes of its samples: their labels kept (process_labels), grouped
 * by one, or a matcher of one left to the samples.  The summaries then do not serve: they keep one
 * entry per program (compact.c), standing for its processes. */
static bool asks_processes(const struct cp_store_query *q, const struct selection *x)
{
	if (q->process_labels)
		return true;
	for (size_t i = 0; i < CP_PROCESS_LABELS; i++) {
		if (q->group_by && !strcmp(q->group_by, cp_process_labels[i]))
			return true;
		for (size_t k = 0; q->sel && k < q->sel->n && k < 64; k++)
			if ((x->mask >> k & 1) && !strcmp(q->sel->matchers[k].name, cp_process_labels[i]))
				return true;
	}
	return false;
}

/* The series of the selection in day (sorted by their ids there): want[k] the day's id,
 * which[k] the selection's series (index into x->ser). */
static int selection_day(const struct selection *x, struct cp_part *day, const struct cp_selector *sel,
			 int64_t **want, size_t **which, size_t *n)
{
	struct cp_store_series *ser = NULL;
	size_t nser = 0, i, k = 0;
	int err;

	*want = NULL;
	*which = NULL;
	*n = 0;
	if ((err = cp_series_list(day->db, sel, x->mask, &ser, &nser)))
		return err;
	*want = calloc(nser + 1, sizeof(**want));
	*which = calloc(nser + 1, sizeof(**which));
	if (!*want || !*which) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	/* the day's series of the selection's type, each found in the selection by its labels */
	for (i = 0; i < nser; i++) {
		size_t lo = 0, hi = x->nser;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			int c = cp_store_series_cmp(&x->ser[mid], &ser[i]);

			if (!c) {
				lo = mid;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < x->nser && !cp_store_series_cmp(&x->ser[lo], &ser[i])) {
			(*want)[k] = ser[i].id;
			(*which)[k++] = lo;
		}
	}
	/* by the day's ids, as a scan wants them */
	for (i = 1; i < k; i++)
		for (size_t j = i; j > 0 && (*want)[j - 1] > (*want)[j]; j--) {
			int64_t t = (*want)[j];
			size_t w = (*which)[j];

			(*want)[j] = (*want)[j - 1];
			(*which)[j] = (*which)[j - 1];
			(*want)[j - 1] = t;
			(*which)[j - 1] = w;
		}
	*n = k;
out:
	cp_store_series_free(ser, nser);
	if (err) {
		free(*want);
		free(*which);
		*want = NULL;
		*which = NULL;
	}
	return err;
}

/* ---- scanning a day ---- */

/* Every entry of the wanted series of a day: series_index into want, its time, stack and label set
 * ids (the day's), value, and when what it counts ended; fn returns 0 to go on. */
typedef int (*visit_fn)(void *ctx, size_t series_index, int64_t t, uint32_t stack, uint32_t labels, int64_t v,
			int64_t end);

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

/* a time a summary covers, [a, b] */
struct cover {
	int64_t a, b;
};

/* what scan_day hands cp_block_decode's visitor */
struct scan_ctx {
	struct cp_part *day;
	const long *idx;     /* the block's k-th series -> index in want */
	const int64_t *ends; /* the block's k-th series' end */
	int64_t from, to;
	visit_fn fn;
	void *ctx;
	const struct cover *cov; /* times read from summaries, sorted: blocks' entries there are skipped */
	size_t ncov;
};

static bool covered(const struct cover *c, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t < c[mid].a)
			hi = mid;
		else if (t > c[mid].b)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static int scan_entry(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t c, int64_t v)
{
	struct scan_ctx *sc = ctx;
	struct cp_dict *d = &sc->day->dict;
	int err = 0;

	/* a block written after the dictionary was loaded may use newer
	 * dictionary entries (committed before the block) */
	if ((stack < 0 || (uint64_t)stack > d->nstack || c > d->nls) &&
	    (stack < 0 || (err = cp_dict_load(d)) || (uint64_t)stack > d->nstack || c > d->nls))
		return err ? err : cp_error(EBADMSG, "a sample block refers to a stack the store does not have");
	if (t < sc->from || t >= sc->to || (sc->ncov && covered(sc->cov, sc->ncov, t)))
		return 0;
	return sc->fn(sc->ctx, (size_t)sc->idx[k], t, (uint32_t)stack, (uint32_t)c, v, sc->ends[k]);
}

/* The blocks (or summaries: from the rollups table) of the row of st: rawlen, series, data, t_min,
 * step (or res), t_max, ends, s_min, s_max.  A block whose range of series ids holds no wanted one
 * is skipped before its blobs are read, one none of whose series is wanted before it is inflated.
 * With res, raised to the step of a block read. */
static int scan_block(struct scan_ctx *sc, struct cp_block_reader *rd, sqlite3_stmt *st, const int64_t *want,
		      size_t nwant, int64_t *res)
{
	int64_t *ids = NULL, *ends = NULL, smin = sqlite3_column_int64(st, 7), smax = sqlite3_column_int64(st, 8);
	long *idx = NULL;
	unsigned char *wanted = NULL;
	bool any = false;
	size_t ns = 0, i, lo = 0, hi = nwant;
	int err;

	/* the first wanted id at or past s_min: past s_max, nothing of the block is wanted */
	while (smax && lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (want[mid] < smin)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (smax && (lo == nwant || want[lo] > smax))
		return 0;
	if ((err = cp_block_series(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), &ids, &ns)))
		return err;
	idx = calloc(ns + 1, sizeof(*idx));
	wanted = calloc(ns + 1, 1);
	ends = calloc(ns + 1, sizeof(*ends));
	if (!idx || !wanted || !ends) {
		err = cp_error(ENOMEM, "out of memory reading samples");
	} else {
		for (i = 0; i < ns; i++) {
			idx[i] = find_series(want, nwant, ids[i]);
			wanted[i] = idx[i] >= 0;
			any |= idx[i] >= 0;
		}
		sc->idx = idx;
		sc->ends = ends;
		if (any)
			cp_block_ends(sqlite3_column_blob(st, 6), (size_t)sqlite3_column_bytes(st, 6), sqlite3_column_int64(st, 3),
				      sqlite3_column_int64(st, 5), ends, ns);
		if (any && res && sqlite3_column_int64(st, 4) > *res)
			*res = sqlite3_column_int64(st, 4);
		if (any)
			err = cp_block_decode(rd, sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
					      (uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 3), wanted, ns,
					      scan_entry, sc);
	}
	free(ids);
	free(idx);
	free(wanted);
	free(ends);
	return err;
}

/* Whether every time of [a, b] is in c[0..n) (sorted, disjoint). */
static bool all_covered(const struct cover *c, size_t n, int64_t a, int64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first cover that ends at or after a */
		size_t mid = (lo + hi) / 2;

		if (c[mid].b < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || c[lo].a > a)
		return false;
	while (c[lo].b < b) /* on through adjacent covers */
		if (++lo == n || c[lo].a != c[lo - 1].b + 1)
			return false;
	return true;
}

/* Whether a summary of [a, b] can stand for its blocks in a scan of [from,
 * to) into buckets bk (NULL: one): inside the range, and in one bucket. */
static bool cover_fits(int64_t a, int64_t b, int64_t from, int64_t to, const struct cp_buckets *bk)
{
	return a >= from && b < to && (!bk || cp_buckets_index(bk, a) == cp_buckets_index(bk, b));
}

#define BLOCK_COLUMNS "rawlen, series, data, t_min, step, t_max, ends, s_min, s_max"
#define ROLLUP_COLUMNS "rawlen, series, data, t_min, res, t_max, ends, s_min, s_max"

/* The summaries of a day (compact.h) that a scan of [from, to) into buckets bk can read instead of
 * blocks: the day's when it fits, else the hours that do.  Their times into *cov (sorted;
 * malloc'ed), their entries to sc's visitor.  Gauges are never read from summaries: a summary sums
 * their times, which an average must count. */
static int scan_rollups(struct scan_ctx *sc, struct cp_block_reader *rd, sqlite3 *db, const int64_t *want,
			size_t nwant, const struct cp_buckets *bk, int64_t *res, struct cover **cov, size_t *ncov)
{
	sqlite3_stmt *list = NULL, *rows = NULL;
	int64_t day = 0;
	size_t cap = 0, i;
	int err, rc;

	*cov = NULL;
	*ncov = 0;
	if ((err = cp_db_prepare(db, "SELECT DISTINCT t_min, t_max, step FROM rollups WHERE t_min >= ?1 AND t_max < ?2"
				  " ORDER BY step DESC, t_min", &list)))
		return err;
	sqlite3_bind_int64(list, 1, sc->from);
	sqlite3_bind_int64(list, 2, sc->to);
	while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
		int64_t a = sqlite3_column_int64(list, 0), b = sqlite3_column_int64(list, 1), step = sqlite3_column_int64(list, 2);

		if (day && step < day)
			break; /* the day's serves */
		/* (covers never overlap: one kind of summary is read) */
		if (!cover_fits(a, b, sc->from, sc->to, bk) || (*ncov && a <= (*cov)[*ncov - 1].b))
			continue;
		if (cp_grow((void **)cov, &cap, *ncov + 1, sizeof(**cov))) {
			err = cp_error(ENOMEM, "out of memory reading samples");
			break;
		}
		(*cov)[(*ncov)++] = (struct cover){ a, b };
		if (b - a + 1 >= CP_DAY_NS)
			day = step;
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = cp_db_error(db, "reading summaries");
	sqlite3_finalize(list);
	if (!err && *ncov &&
	    !(err = cp_db_prepare(db, "SELECT " ROLLUP_COLUMNS " FROM rollups WHERE t_min = ?1 AND t_max = ?2 ORDER BY id",
				  &rows))) {
		for (i = 0; !err && i < *ncov; i++) {
			sqlite3_bind_int64(rows, 1, (*cov)[i].a);
			sqlite3_bind_int64(rows, 2, (*cov)[i].b);
			while (!err && (rc = sqlite3_step(rows)) == SQLITE_ROW)
				err = scan_block(sc, rd, rows, want, nwant, res);
			if (!err && rc != SQLITE_DONE)
				err = cp_db_error(db, "reading summaries");
			sqlite3_reset(rows);
		}
	}
	sqlite3_finalize(rows);
	if (err) {
		free(*cov);
		*cov = NULL;
		*ncov = 0;
	}
	return err;
}

/* The blocks of day that overlap [from, to] and may hold a wanted series, in *bst. */
static int open_blocks(struct cp_part *day, int64_t from, int64_t to, const int64_t *want, size_t nwant,
		       sqlite3_stmt **bst)
{
	int err;

	if ((err = cp_db_prepare(day->db, "SELECT " BLOCK_COLUMNS " FROM blocks WHERE t_max >= ?1 AND t_min <= ?2"
				  " AND s_max >= ?3 AND s_min <= ?4 ORDER BY id", bst)))
		return err;
	sqlite3_bind_int64(*bst, 1, from);
	sqlite3_bind_int64(*bst, 2, to);
	sqlite3_bind_int64(*bst, 3, nwant ? want[0] : 0);
	sqlite3_bind_int64(*bst, 4, nwant ? want[nwant - 1] : -1);
	return 0;
}

/* The entries of a day's series want[0..nwant) (sorted) in [from, to) to fn: from its blocks, or,
 * for the hours and the day that lie whole in the range (and in one of the buckets bk, when given),
 * from their summaries (not with raw: for gauges, and for a query that asks about processes).
 * With res, the coarsest step read. */
static int scan_day(struct cp_part *day, const int64_t *want, size_t nwant, int64_t from, int64_t to, visit_fn fn,
		    void *ctx, const struct cp_buckets *bk, bool raw, int64_t *res)
{
	struct scan_ctx sc = { day, NULL, NULL, from, to, fn, ctx, NULL, 0 };
	struct cp_block_reader rd = { 0 };
	struct cover *cov = NULL;
	sqlite3_stmt *bst = NULL;
	size_t ncov = 0;
	int err, rc;

	if (!nwant)
		return 0;
	if ((err = cp_dict_load(&day->dict)))
		return err;
	if (!raw && (err = scan_rollups(&sc, &rd, day->db, want, nwant, bk, res, &cov, &ncov)))
		goto out;
	sc.cov = cov;
	sc.ncov = ncov;
	if ((err = open_blocks(day, from, to, want, nwant, &bst)))
		goto out;
	while (!err && (rc = sqlite3_step(bst)) == SQLITE_ROW) {
		int64_t a = sqlite3_column_int64(bst, 3), b = sqlite3_column_int64(bst, 5);

		/* a block whose times a summary covers whole: read there */
		if (ncov && all_covered(cov, ncov, a, b))
			continue;
		err = scan_block(&sc, &rd, bst, want, nwant, res);
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(day->db, "reading samples");
out:
	sqlite3_finalize(bst);
	free(cov);
	cp_block_reader_release(&rd);
	return err;
}

/* ---- groups and the selector's matchers left to the samples ---- */

/* The groups of a selection by a label's value (q->group_by), in order of first appearance, named
 * alike in every day: a series label, else the samples'. */
struct groups {
	const char *by;
	char **names;
	size_t n, cap;
};

/* The group of value gv, made when new. */
static int group_index(struct groups *g, const char *gv, size_t *out)
{
	size_t j;

	for (j = 0; j < g->n && strcmp(g->names[j], gv); j++)
		;
	if (j == g->n) {
		if (cp_grow((void **)&g->names, &g->cap, j + 1, sizeof(*g->names)) || !(g->names[j] = strdup(gv)))
			return cp_error(ENOMEM, "out of memory reading the store");
		g->n++;
	}
	*out = j;
	return 0;
}

static void groups_release(struct groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->names[i]);
	free(g->names);
	memset(g, 0, sizeof(*g));
}

/* The selector's matchers of labels a series lacks, on its samples' labels (cp_selector_match_series):
 * a label set's answer is kept, for the set of matchers last asked (one, as a rule: the series that
 * lack pid all leave {pid="..."} to their samples). */
struct sample_filter {
	const struct cp_selector *sel;
	uint64_t mask;  /* the matchers the answers are for */
	uint8_t *known; /* label set id -> 0: not asked yet, 1: passes, 2: does not */
	size_t cap;
};

/* the value of the sample label key in label set id of the dictionary ("" when missing) */
static const char *sample_label(const struct cp_profile *p, uint32_t id, const char *key)
{
	if (id >= p->nlabelsets)
		return "";
	for (uint32_t i = 0; i < p->labelsets[id].len; i++) {
		const struct cp_label *l = &p->labels[p->labelsets[id].off + i];

		if (l->str && !strcmp(cp_profile_string(p, l->key), key))
			return cp_profile_string(p, l->str);
	}
	return "";
}

/* Does label set id of dict pass the matchers of mask?  1, 0, or an error (a costly regex). */
static int sample_passes(struct sample_filter *f, const struct cp_profile *dict, uint64_t mask, uint32_t id)
{
	const char *names[16], *values[16];
	char num[16][24];
	size_t n = 0;
	int hit;

	if (f->mask != mask) {
		if (f->known)
			memset(f->known, 0, f->cap);
		f->mask = mask;
	}
	if (id < f->cap && f->known[id])
		return f->known[id] == 1;
	if (id < dict->nlabelsets) {
		const struct cp_span *ls = &dict->labelsets[id];

		for (uint32_t i = 0; i < ls->len && n < 16; i++, n++) {
			const struct cp_label *l = &dict->labels[ls->off + i];

			names[n] = cp_profile_string(dict, l->key);
			if (l->str) {
				values[n] = cp_profile_string(dict, l->str);
			} else {
				snprintf(num[n], sizeof(num[n]), "%" PRId64, l->num);
				values[n] = num[n];
			}
		}
	}
	if ((hit = cp_selector_match_sample(f->sel, mask, names, values, n)) < 0)
		return hit;
	if (id >= f->cap) {
		size_t cap = f->cap;

		if (cp_grow((void **)&f->known, &f->cap, (size_t)id + 1, 1))
			return cp_error(ENOMEM, "out of memory reading samples");
		memset(f->known + cap, 0, f->cap - cap);
	}
	f->known[id] = hit ? 1 : 2;
	return hit;
}

/* ---- the scan as an iterator (query.h), a block at a time ---- */

struct cp_local_scanner {
	struct cp_local *s;
	const struct cp_selector *sel;
	const struct cp_store_series *ser; /* the caller's */
	struct sample_filter filter;
	int64_t *want;  /* the current day's */
	size_t *which;
	size_t nwant;
	struct scan_ctx sc;
	struct cp_block_reader rd;
	char (*names)[16];
	size_t nnames, pi;
	struct cp_part *day;
	sqlite3_stmt *bst; /* the blocks of names[pi - 1] */
	struct cp_local_entry *e; /* the current block's entries */
	size_t n, cap, i;
};

static int collect_entry(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v, int64_t end)
{
	struct cp_local_scanner *it = ctx;
	const struct cp_store_series *s = &it->ser[it->which[si]];
	int err;

	(void)end;
	/* the selector's matchers of labels the series lacks: on the sample's */
	if (s->deferred && (err = sample_passes(&it->filter, it->day->dict.p, s->deferred, labels)) <= 0)
		return err;
	if (cp_grow((void **)&it->e, &it->cap, it->n + 1, sizeof(*it->e)))
		return cp_error(ENOMEM, "out of memory reading samples");
	it->e[it->n++] = (struct cp_local_entry){ t, v, (uint32_t)it->which[si], stack, labels, it->day };
	return 0;
}

int cp_local_scan_open(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
		       struct cp_local_scanner **out)
{
	struct cp_local_scanner *it = calloc(1, sizeof(*it));
	int err;

	*out = NULL;
	if (!it)
		return cp_error(ENOMEM, "out of memory reading samples");
	it->s = s;
	it->sel = sel;
	it->sc = (struct scan_ctx){ NULL, NULL, NULL, from, to, collect_entry, it, NULL, 0 };
	if ((err = list_parts(s, from, to, &it->names, &it->nnames))) {
		cp_local_scan_close(it);
		return err;
	}
	*out = it;
	return 0;
}

int cp_local_scan_next(struct cp_local_scanner *it, const struct cp_store_series *ser, size_t nser,
		       struct cp_local_entry *e)
{
	struct selection x = { (struct cp_store_series *)ser, nser, 0, false, NULL, 0 };
	int err, rc;

	while (it->i >= it->n) {
		it->n = it->i = 0;
		if (it->bst && (rc = sqlite3_step(it->bst)) == SQLITE_ROW) {
			if ((err = scan_block(&it->sc, &it->rd, it->bst, it->want, it->nwant, NULL)))
				return err;
			continue;
		}
		if (it->bst) {
			err = rc == SQLITE_DONE ? 0 : cp_db_error(it->day->db, "reading samples");
			sqlite3_finalize(it->bst);
			it->bst = NULL;
			if (err)
				return err;
		}
		if (it->pi >= it->nnames)
			return 0;
		free(it->want);
		free(it->which);
		it->want = NULL;
		it->which = NULL;
		if ((err = open_day(it->s, it->names[it->pi++], &it->day)) == 1)
			continue;
		/* the day's series, each found in ser by its type and labels */
		if (err || (err = cp_dict_load(&it->day->dict)) ||
		    (err = selection_day(&x, it->day, NULL, &it->want, &it->which, &it->nwant)) ||
		    (err = open_blocks(it->day, it->sc.from, it->sc.to, it->want, it->nwant, &it->bst)))
			return err;
		it->sc.day = it->day;
		it->ser = ser;
		free(it->filter.known);
		memset(&it->filter, 0, sizeof(it->filter));
		it->filter.sel = it->sel;
	}
	*e = it->e[it->i++];
	return 1;
}

void cp_local_scan_close(struct cp_local_scanner *it)
{
	if (!it)
		return;
	sqlite3_finalize(it->bst);
	cp_block_reader_release(&it->rd);
	free(it->names);
	free(it->e);
	free(it->want);
	free(it->which);
	free(it->filter.known);
	free(it);
}

#define BY_SAMPLE SIZE_MAX
#define SKIP (SIZE_MAX - 1)

/* A day's view of the groups: the group of each of its wanted series (BY_SAMPLE: by the sample's
 * label), and the matchers each leaves to its samples. */
struct day_groups {
	struct groups *g;
	const struct cp_profile *dict;
	size_t *group_of;
	const size_t *which; /* the selection's series of each */
	uint64_t *deferred;
	struct sample_filter filter;
	uint32_t last_labels; /* the last sample label set looked up, and its group */
	size_t last_group;
};

static int day_groups_init(struct day_groups *dg, struct groups *g, const struct selection *x, const size_t *which,
			   size_t n, const struct cp_selector *sel, const struct cp_profile *dict)
{
	memset(dg, 0, sizeof(*dg));
	dg->g = g;
	dg->dict = dict;
	dg->which = which;
	dg->filter.sel = sel;
	dg->last_labels = UINT32_MAX;
	dg->group_of = calloc(n + 1, sizeof(*dg->group_of));
	dg->deferred = calloc(n + 1, sizeof(*dg->deferred));
	if (!dg->group_of || !dg->deferred)
		return cp_error(ENOMEM, "out of memory reading the store");
	for (size_t i = 0; i < n; i++) {
		const struct cp_store_series *s = &x->ser[which[i]];
		const char *gv = NULL;
		int err;

		for (size_t j = 0; g->by && j < s->nlabels; j++)
			if (!strcmp(s->names[j], g->by))
				gv = s->values[j];
		dg->deferred[i] = sel ? s->deferred : 0;
		if (g->by && !gv)
			dg->group_of[i] = BY_SAMPLE;
		else if ((err = group_index(g, gv ? gv : "", &dg->group_of[i])))
			return err;
	}
	return 0;
}

/* The group of an entry of series si (into the day's want) with label set labels; SKIP when its
 * labels do not pass the selector's matchers left to them. */
static int day_group_of(struct day_groups *dg, size_t si, uint32_t labels, size_t *out)
{
	size_t k = dg->group_of[si];
	int err;

	if (dg->deferred[si] && (err = sample_passes(&dg->filter, dg->dict, dg->deferred[si], labels)) <= 0) {
		*out = SKIP;
		return err;
	}
	if (k == BY_SAMPLE) { /* a label of the samples, not of the series */
		if (labels != dg->last_labels) {
			if ((err = group_index(dg->g, sample_label(dg->dict, labels, dg->g->by), &dg->last_group)))
				return err;
			dg->last_labels = labels;
		}
		k = dg->last_group;
	}
	*out = k;
	return 0;
}

static void day_groups_release(struct day_groups *dg)
{
	free(dg->group_of);
	free(dg->deferred);
	free(dg->filter.known);
	memset(dg, 0, sizeof(*dg));
}

/* ---- gauges: how many times each series has (in each bucket) ---- */

/* The distinct times of each series of a gauge selection (one bucket for a selection, a bucket per
 * step over time): its values are averaged over them. */
struct gauge_times {
	struct { uint64_t key; int64_t t; } *v; /* (series << 32 | bucket, time) */
	size_t n, cap;
	bool counted;
};

static int gt_cmp(const void *a, const void *b)
{
	const struct { uint64_t key; int64_t t; } *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int gauge_add(struct gauge_times *g, size_t series, size_t bucket, int64_t t)
{
	if (cp_grow((void **)&g->v, &g->cap, g->n + 1, sizeof(*g->v)))
		return cp_error(ENOMEM, "out of memory reading samples");
	g->v[g->n].key = (uint64_t)series << 32 | (uint32_t)bucket;
	g->v[g->n++].t = t;
	return 0;
}

/* sorted, each (series, bucket, time) once: then the count of a key is the length of its run */
static void gauge_count(struct gauge_times *g)
{
	size_t i, j;

	cp_qsort(g->v, g->n, sizeof(*g->v), gt_cmp);
	for (i = 0, j = 0; i < g->n; i++)
		if (!j || gt_cmp(&g->v[j - 1], &g->v[i]))
			g->v[j++] = g->v[i];
	g->n = j;
	g->counted = true;
}

/* how many times series has in bucket (at least 1) */
static double gauge_times_of(const struct gauge_times *g, size_t series, size_t bucket)
{
	uint64_t key = (uint64_t)series << 32 | (uint32_t)bucket;
	size_t lo = 0, hi = g->n, first;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	hi = g->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->v[mid].key <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > first ? (double)(lo - first) : 1;
}

/* ---- a selection: one profile per group ---- */

struct agg_entry {
	uint32_t stack, labels;
	int64_t value;
	double fvalue; /* a gauge's: the values divided by their series' times */
};

struct agg {
	struct agg_entry *e;
	size_t n, cap;
	struct cp_index idx;
	/* the entries of the empty label set (most of them once the process labels are dropped) by
	 * stack id: dense[stack] = entry + 1 (0: none), for stacks < ndense; the others in idx */
	uint32_t *dense;
	size_t ndense;
	int64_t tmin, tend; /* the first time, and when what the last counts ended */
};

/* The dense maps of one selection's aggregates take at most this much memory together (a group per
 * process of a day of many stacks would take gigabytes): past it, aggregates hash. */
#define AGG_DENSE_MAX ((size_t)64 << 20)

static int agg_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct agg_entry *a = &((const struct agg *)ctx)->e[id], *b = key;

	return a->stack == b->stack && a->labels == b->labels;
}

/* Adds v (fv) to g's entry of (stack, labels), made when new. */
static int agg_add(struct agg *g, uint32_t stack, uint32_t labels, int64_t v, double fv, int64_t t, int64_t end)
{
	struct agg_entry k = { stack, labels, v, fv };
	bool dense = !labels && stack < g->ndense;
	uint32_t h = 0, id;

	g->tmin = t < g->tmin ? t : g->tmin;
	g->tend = end > g->tend ? end : g->tend;
	if (dense) {
		id = g->dense[stack] - 1;
	} else {
		h = (uint32_t)cp_hash_u64(((uint64_t)stack << 32) | labels, 9);
		id = cp_index_find(&g->idx, h, agg_eq, g, &k);
	}
	if (id != UINT32_MAX) {
		g->e[id].value = cp_add_sat(g->e[id].value, v);
		g->e[id].fvalue += fv;
		return 0;
	}
	if (cp_grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e)) ||
	    (!dense && cp_index_add(&g->idx, h, (uint32_t)g->n)))
		return cp_error(ENOMEM, "out of memory reading samples");
	if (dense)
		g->dense[stack] = (uint32_t)g->n + 1;
	g->e[g->n++] = k;
	return 0;
}

/* Gives g a dense map of stacks 0 .. nstack when *budget (bytes) allows: the entries of a day are
 * then found by their stack id instead of a hash (a fleet's day is tens of millions of entries). */
static void agg_dense(struct agg *g, size_t nstack, size_t *budget)
{
	size_t bytes = (nstack + 1) * sizeof(*g->dense);

	if (g->dense || g->n || bytes > *budget || !(g->dense = calloc(nstack + 1, sizeof(*g->dense))))
		return;
	g->ndense = nstack + 1;
	*budget -= bytes;
}

static void agg_clear(struct agg *g, size_t *budget)
{
	g->n = 0;
	cp_index_release(&g->idx);
	memset(&g->idx, 0, sizeof(g->idx));
	*budget += g->ndense * sizeof(*g->dense);
	free(g->dense);
	g->dense = NULL;
	g->ndense = 0;
}

struct group_out {
	struct cp_profile *p; /* the days read so far */
	int64_t tmin, tend;   /* over all the days */
};

struct select_ctx {
	struct groups g;
	struct day_groups dg;
	struct agg *aggs; /* one per group, for the day being read */
	size_t naggs, cap;
	struct group_out *out; /* one per group */
	size_t nout, outcap;
	int64_t to; /* the range's end: no duration past it */
	bool gauge;
	struct gauge_times gt;
	uint32_t *strip; /* the day's label sets -> without the process labels (NULL: kept) */
	size_t nstrip;
	size_t nstack;       /* the day's stacks, when it was opened */
	size_t dense_budget; /* what the aggregates' dense maps may still take (AGG_DENSE_MAX) */
};

/* an aggregate and a result for every group made */
static int groups_grow(struct select_ctx *c)
{
	if ((c->g.n > c->naggs && cp_grow((void **)&c->aggs, &c->cap, c->g.n, sizeof(*c->aggs))) ||
	    (c->g.n > c->nout && cp_grow((void **)&c->out, &c->outcap, c->g.n, sizeof(*c->out))))
		return cp_error(ENOMEM, "out of memory reading the store");
	for (; c->naggs < c->g.n; c->naggs++) {
		memset(&c->aggs[c->naggs], 0, sizeof(c->aggs[0]));
		c->aggs[c->naggs].tmin = INT64_MAX;
		c->aggs[c->naggs].tend = INT64_MIN;
	}
	for (; c->nout < c->g.n; c->nout++)
		c->out[c->nout] = (struct group_out){ NULL, INT64_MAX, INT64_MIN };
	return 0;
}

static int count_time(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v, int64_t end)
{
	struct select_ctx *c = ctx;
	size_t g;
	int err;

	(void)stack;
	(void)v;
	(void)end;
	if ((err = day_group_of(&c->dg, si, labels, &g)) || g == SKIP)
		return err;
	return gauge_add(&c->gt, c->dg.which[si], 0, t);
}

static int add_to_group(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v, int64_t end)
{
	struct select_ctx *c = ctx;
	double fv = 0;
	size_t g;
	int err;

	if ((err = day_group_of(&c->dg, si, labels, &g)) || g == SKIP || (err = groups_grow(c)))
		return err;
	if (c->gauge)
		fv = (double)v / gauge_times_of(&c->gt, c->dg.which[si], 0);
	if (labels < c->nstrip)
		labels = c->strip[labels];
	if (!c->aggs[g].n)
		agg_dense(&c->aggs[g], c->nstack, &c->dense_budget);
	return agg_add(&c->aggs[g], stack, labels, v, fv, t, end > c->to ? c->to : end);
}

/* pprof's readers take a profile's first mapping for its program (go tool
 * pprof's and cprof query's "File:"), and a copy of the dictionary lists
 * mappings in the order the samples reach them: with exe (the selected
 * series' one program, their `exe` label), *p is made again with exe's
 * mapping first. */
static int main_first(struct cp_profile **p, const char *exe)
{
	struct cp_profile *q;
	struct cp_mapping m;
	int64_t f, b, r;
	uint32_t k;
	int err;

	for (k = 0; k < (*p)->nmappings; k++)
		if (!strcmp(cp_profile_string(*p, (*p)->mappings[k].filename), exe))
			break;
	if (k == 0 || k == (*p)->nmappings)
		return 0;
	if (!(q = cp_profile_new()))
		return cp_error(ENOMEM, "out of memory building the selected profile");
	m = (*p)->mappings[k];
	f = cp_profile_str(q, cp_profile_string(*p, m.filename));
	b = cp_profile_str(q, cp_profile_string(*p, m.build_id));
	m.filename = (uint32_t)f;
	m.build_id = (uint32_t)b;
	if ((err = (int)(f < 0 ? f : b < 0 ? b : 0)) || (r = cp_profile_mapping(q, &m)) < 0 ||
	    (err = cp_profile_merge(q, *p, NULL))) {
		cp_profile_free(q);
		return err ? err : (int)r;
	}
	cp_profile_free(*p);
	*p = q;
	return 0;
}

/* The profile of aggregate g, of one type, from dictionary d: a copy with only what its samples use. */
static int build(struct cp_dict *d, const char *type, const struct agg *g, bool gauge, bool strip,
		 struct cp_profile **out)
{
	struct cp_merge_opts drop = { .drop_keys = cp_process_labels, .ndrop = strip ? CP_PROCESS_LABELS : 0 };
	char st[128], su[128], pt[128], pu[128];
	size_t i;
	int err;

	*out = NULL;
	cp_profile_clear_samples(d->p);
	if ((err = cp_profile_add_sample_type(d->p, cp_store_type_part(type, 1, st, sizeof(st)),
					      cp_store_type_part(type, 2, su, sizeof(su)))) ||
	    (err = cp_profile_set_period_type(d->p, cp_store_type_part(type, 3, pt, sizeof(pt)),
					      cp_store_type_part(type, 4, pu, sizeof(pu)), 0)))
		goto out;
	for (i = 0; i < g->n; i++) {
		int64_t v = gauge ? llround(g->e[i].fvalue) : g->e[i].value;

		if (v && (err = cp_profile_add_sample(d->p, g->e[i].stack, g->e[i].labels, &v)))
			goto out;
	}
	*out = cp_profile_copy(d->p, &drop); /* only what the samples use (less the process labels) */
	err = *out ? 0 : -errno;
out:
	cp_profile_clear_samples(d->p);
	return cp_dict_error(err, "building the selected profile");
}

/* The value of label name that all n series have, or NULL. */
static const char *common_label(const struct cp_store_series *ser, size_t n, const char *name)
{
	const char *v = NULL;
	size_t i, j;

	for (i = 0; i < n; i++) {
		const char *w = NULL;

		for (j = 0; j < ser[i].nlabels; j++)
			if (!strcmp(ser[i].names[j], name))
				w = ser[i].values[j];
		if (!w || (v && strcmp(v, w)))
			return NULL;
		v = w;
	}
	return v;
}

/* The day's aggregates into the groups' results, each day's merged by content (ids differ per day). */
static int fold_day(struct select_ctx *c, struct cp_part *day, const char *type)
{
	int err = 0;

	for (size_t k = 0; !err && k < c->naggs; k++) {
		struct agg *a = &c->aggs[k];
		struct cp_profile *p = NULL;

		if (!a->n)
			continue;
		c->out[k].tmin = a->tmin < c->out[k].tmin ? a->tmin : c->out[k].tmin;
		c->out[k].tend = a->tend > c->out[k].tend ? a->tend : c->out[k].tend;
		if ((err = build(&day->dict, type, a, c->gauge, c->strip != NULL, &p)))
			break;
		if (!c->out[k].p) {
			c->out[k].p = p;
		} else {
			err = cp_profile_merge(c->out[k].p, p, NULL);
			cp_profile_free(p);
		}
		a->tmin = INT64_MAX;
		a->tend = INT64_MIN;
		agg_clear(a, &c->dense_budget);
	}
	return err;
}

/* One pass over the days of the selection: with count, the gauge's times; else the aggregates. */
static int select_pass(struct cp_local *s, const struct cp_store_query *q, const struct selection *x,
		       struct select_ctx *c, bool count)
{
	int err = 0;

	for (size_t i = 0; !err && i < x->ndays; i++) {
		struct cp_part *day;
		int64_t *want = NULL;
		size_t *which = NULL, nwant = 0;

		if ((err = open_day(s, x->days[i], &day)) == 1) {
			err = 0;
			continue;
		}
		if (err || (err = cp_dict_load(&day->dict)) ||
		    (err = selection_day(x, day, q->sel, &want, &which, &nwant)) ||
		    (err = day_groups_init(&c->dg, &c->g, x, which, nwant, q->sel, day->dict.p)) || (err = groups_grow(c)) ||
		    (!count && !q->process_labels && (err = cp_dict_strip_map(day->dict.p, &c->strip, &c->nstrip))))
			goto next;
		c->nstack = day->dict.nstack;
		if ((err = scan_day(day, want, nwant, q->from, q->to, count ? count_time : add_to_group, c, NULL,
				    x->gauge || asks_processes(q, x), q->resolution)))
			goto next;
		if (!count)
			err = fold_day(c, day, x->ser[0].type);
next:
		free(c->strip);
		c->strip = NULL;
		c->nstrip = 0;
		day_groups_release(&c->dg);
		free(want);
		free(which);
	}
	return err;
}

int cp_local_select(struct cp_local *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	struct selection x;
	struct select_ctx c = { 0 };
	struct cp_store_result *res = NULL;
	const char *exe;
	size_t i, j;
	int err;

	c.g.by = q->group_by;
	c.to = q->to;
	c.dense_budget = AGG_DENSE_MAX;
	if (q->resolution)
		*q->resolution = 0;
	if ((err = selection_make(s, q->sel, q->from, q->to, &x)))
		return err;
	c.gauge = x.gauge;
	if (x.gauge && !(err = select_pass(s, q, &x, &c, true)))
		gauge_count(&c.gt);
	if (err || (err = select_pass(s, q, &x, &c, false)))
		goto out;
	if (!c.g.n && ((err = group_index(&c.g, "", &j)) || (err = groups_grow(&c))))
		goto out; /* no sample: one empty profile */
	if (!(res = calloc(c.g.n + 1, sizeof(*res)))) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	exe = common_label(x.ser, x.nser, "exe");
	for (i = 0; i < c.g.n; i++) {
		char st[128], su[128], pt[128], pu[128];
		struct cp_profile *p = c.out[i].p;

		res[i].group = c.g.names[i];
		c.g.names[i] = NULL;
		c.out[i].p = NULL;
		if (!p) { /* a group without samples: an empty profile of the type */
			if (!(p = cp_profile_new()) ||
			    cp_profile_add_sample_type(p, cp_store_type_part(x.ser[0].type, 1, st, sizeof(st)),
						       cp_store_type_part(x.ser[0].type, 2, su, sizeof(su))) ||
			    cp_profile_set_period_type(p, cp_store_type_part(x.ser[0].type, 3, pt, sizeof(pt)),
						       cp_store_type_part(x.ser[0].type, 4, pu, sizeof(pu)), 0)) {
				cp_profile_free(p);
				err = cp_error(ENOMEM, "out of memory reading the store");
				goto out;
			}
		} else {
			p->time_nanos = c.out[i].tmin;
			p->duration_nanos = c.out[i].tend > c.out[i].tmin ? c.out[i].tend - c.out[i].tmin : 0;
		}
		res[i].profile = p;
		if (exe && (err = main_first(&res[i].profile, exe)))
			goto out;
	}
	*out = res;
	*n = c.g.n;
	res = NULL;
out:
	if (res)
		cp_store_results_free(res, c.g.n);
	for (i = 0; i < c.naggs; i++) {
		free(c.aggs[i].e);
		free(c.aggs[i].dense);
		cp_index_release(&c.aggs[i].idx);
	}
	for (i = 0; i < c.nout; i++)
		cp_profile_free(c.out[i].p);
	free(c.aggs);
	free(c.out);
	free(c.gt.v);
	groups_release(&c.g);
	selection_release(&x);
	return err;
}

/* ---- totals over time ---- */

/* The coarsest step (ns, 0: raw) of the blocks that overlap [from, to]. */
static int range_step(struct cp_local *s, int64_t from, int64_t to, int64_t *step)
{
	char (*names)[16] = NULL;
	size_t n = 0, i;
	int err;

	*step = 0;
	if ((err = list_parts(s, from, to, &names, &n)))
		return err;
	for (i = 0; i < n; i++) {
		sqlite3_stmt *st = NULL;
		struct cp_part *day;

		if ((err = open_day(s, names[i], &day)) == 1) {
			err = 0;
			continue;
		}
		if (err || (err = cp_db_prepare(day->db, "SELECT coalesce(max(step), 0) FROM blocks WHERE t_max >= ? AND t_min <= ?",
						&st)))
			break;
		sqlite3_bind_int64(st, 1, from);
		sqlite3_bind_int64(st, 2, to);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > *step)
			*step = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	free(names);
	return err;
}

struct over_ctx {
	struct cp_buckets b;
	struct groups g;
	struct day_groups dg;
	int64_t **totals; /* one row of b.n per group */
	double **ftotals; /* a gauge's */
	size_t ntotals, cap, fcap;
	bool gauge;
	struct gauge_times gt;
};

/* a row of totals for every group made */
static int totals_grow(struct over_ctx *c)
{
	size_t cap;

	for (; c->ntotals < c->g.n; c->ntotals++) {
		cap = c->cap;
		if (cp_grow((void **)&c->totals, &cap, c->ntotals + 1, sizeof(*c->totals)) ||
		    cp_grow((void **)&c->ftotals, &c->fcap, c->ntotals + 1, sizeof(*c->ftotals)))
			return cp_error(ENOMEM, "out of memory reading the store");
		c->cap = cap;
		c->totals[c->ntotals] = calloc(c->b.n + 1, sizeof(**c->totals));
		c->ftotals[c->ntotals] = c->gauge ? calloc(c->b.n + 1, sizeof(**c->ftotals)) : NULL;
		if (!c->totals[c->ntotals] || (c->gauge && !c->ftotals[c->ntotals])) {
			free(c->totals[c->ntotals]);
			free(c->ftotals[c->ntotals]);
			return cp_error(ENOMEM, "out of memory reading the store");
		}
	}
	return 0;
}

static int count_step(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v, int64_t end)
{
	struct over_ctx *c = ctx;
	ssize_t k = cp_buckets_index(&c->b, t);
	size_t g;
	int err;

	(void)stack;
	(void)v;
	(void)end;
	if (k < 0 || (err = day_group_of(&c->dg, si, labels, &g)) || g == SKIP)
		return k < 0 ? 0 : err;
	return gauge_add(&c->gt, c->dg.which[si], (size_t)k, t);
}

static int add_to_step(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v, int64_t end)
{
	struct over_ctx *c = ctx;
	ssize_t k = cp_buckets_index(&c->b, t);
	size_t g;
	int err;

	(void)stack;
	(void)end;
	if (k < 0)
		return 0;
	if ((err = day_group_of(&c->dg, si, labels, &g)) || g == SKIP || (err = totals_grow(c)))
		return err;
	if (c->gauge)
		c->ftotals[g][k] += (double)v / gauge_times_of(&c->gt, c->dg.which[si], (size_t)k);
	else
		c->totals[g][k] = cp_add_sat(c->totals[g][k], v);
	return 0;
}

static void over_release(struct over_ctx *c)
{
	for (size_t i = 0; i < c->ntotals; i++) {
		free(c->totals[i]);
		free(c->ftotals[i]);
	}
	free(c->totals);
	free(c->ftotals);
	free(c->gt.v);
	groups_release(&c->g);
}

static int over_pass(struct cp_local *s, const struct cp_store_query *q, const struct selection *x,
		     struct over_ctx *c, bool count)
{
	int err = 0;

	for (size_t i = 0; !err && i < x->ndays; i++) {
		struct cp_part *day;
		int64_t *want = NULL;
		size_t *which = NULL, nwant = 0;

		if ((err = open_day(s, x->days[i], &day)) == 1) {
			err = 0;
			continue;
		}
		/* whole buckets: from the first one's start to the last one's end */
		if (!err && !(err = cp_dict_load(&day->dict)) && !(err = selection_day(x, day, q->sel, &want, &which, &nwant)) &&
		    !(err = day_groups_init(&c->dg, &c->g, x, which, nwant, q->sel, day->dict.p)) && !(err = totals_grow(c)))
			err = scan_day(day, want, nwant, c->b.start, cp_buckets_end(&c->b), count ? count_step : add_to_step, c,
				       &c->b, x->gauge || asks_processes(q, x), NULL);
		day_groups_release(&c->dg);
		free(want);
		free(which);
	}
	return err;
}

/* The totals over time of each group of q's samples into c (released by
 * the caller), and their type (NULL: not wanted). */
static int over_time(struct cp_local *s, const struct cp_store_query *q, int64_t step, struct over_ctx *c, char **type)
{
	struct selection x = { 0 };
	int64_t res = 0;
	int err;

	memset(c, 0, sizeof(*c));
	c->g.by = q->group_by;
	/* never finer than the data: steps of whole multiples of its resolution */
	if ((err = range_step(s, q->from, q->to, &res)))
		return err;
	if (res > 0 && step % res)
		step = step < INT64_MAX - res ? (step / res + 1) * res : step;
	if (q->resolution)
		*q->resolution = res;
	if ((err = cp_buckets_align(q->from, q->to, step, &c->b)))
		return err;
	if ((err = selection_make(s, q->sel, c->b.start, cp_buckets_end(&c->b), &x)))
		return err;
	c->gauge = x.gauge;
	if (type && !(*type = strdup(x.ser[0].type))) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	if (x.gauge && !(err = over_pass(s, q, &x, c, true)))
		gauge_count(&c->gt);
	if (!err)
		err = over_pass(s, q, &x, c, false);
	/* a gauge's averages, rounded once */
	for (size_t g = 0; !err && c->gauge && g < c->ntotals; g++)
		for (size_t k = 0; k < c->b.n; k++)
			c->totals[g][k] = llround(c->ftotals[g][k]);
	if (err && type) {
		free(*type);
		*type = NULL;
	}
out:
	selection_release(&x);
	return err;
}

int cp_local_over_time(struct cp_local *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
		       struct cp_buckets *b, char **type)
{
	struct cp_store_query one = *q;
	struct over_ctx c;
	int err;

	one.group_by = NULL; /* every series in group "" */
	if (!(err = over_time(s, &one, step, &c, type))) {
		size_t j;

		if (!c.ntotals && ((err = group_index(&c.g, "", &j)) || (err = totals_grow(&c)))) {
			free(*type);
			*type = NULL;
		} else {
			*totals = c.totals[0];
			c.totals[0] = NULL;
			*b = c.b;
		}
	}
	over_release(&c);
	return err;
}

int cp_local_over_time_groups(struct cp_local *s, const struct cp_store_query *q, int64_t step,
			      struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b)
{
	struct over_ctx c;
	int err = over_time(s, q, step, &c, NULL);

	*out = NULL;
	*n = 0;
	if (!err && !(*out = calloc(c.ntotals + 1, sizeof(**out))))
		err = cp_error(ENOMEM, "out of memory reading the store");
	for (size_t i = 0; !err && i < c.ntotals; i++) {
		(*out)[i].group = c.g.names[i];
		(*out)[i].totals = c.totals[i];
		c.g.names[i] = NULL;
		c.totals[i] = NULL;
	}
	if (!err) {
		*n = c.ntotals;
		*b = c.b;
	}
	over_release(&c);
	return err;
}

/* ---- the store's figures ---- */

int cp_local_stats(struct cp_local *s, struct cp_store_stats *st)
{
	char path[PATH_MAX];
	struct stat sb;
	struct dirent *de;
	struct cp_store_series *ser = NULL;
	size_t nser = 0;
	sqlite3_stmt *ps = NULL;
	DIR *d;
	int err;

	memset(st, 0, sizeof(*st));
	if ((err = cp_local_series(s, NULL, INT64_MIN, INT64_MAX, &ser, &nser)))
		return err;
	cp_store_series_free(ser, nser);
	st->series = (int64_t)nser;
	if ((err = cp_db_prepare(s->db, "SELECT name FROM partitions", &ps)))
		return err;
	while (sqlite3_step(ps) == SQLITE_ROW) {
		struct cp_part *day;

		if (cp_parts_open(&s->parts, (const char *)sqlite3_column_text(ps, 0), &day))
			continue;
		if ((err = cp_dict_load(&day->dict)))
			break;
		st->stacks += day->dict.nstack;
		st->locations += day->dict.nloc;
		st->functions += day->dict.nfn;
		st->blocks += cp_db_count(day->db, "SELECT count(*) FROM blocks");
		st->entries += cp_db_count(day->db, "SELECT coalesce(sum(entries), 0) FROM blocks");
		st->samples += cp_db_count(day->db, "SELECT coalesce(sum(samples), 0) FROM blocks");
	}
	sqlite3_finalize(ps);
	if (err)
		return err;
	/* bytes: every file of the store, as du would count them */
	for (int pass = 0; pass < 2; pass++) {
		snprintf(path, sizeof(path), pass ? "%s/days" : "%s", s->dir);
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
