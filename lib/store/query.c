/* SPDX-License-Identifier: MIT */
#include "query.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../error.h"
#include "../index.h"
#include "../util.h"
#include "blocks.h"
#include "db.h"
#include "handle.h"
#include "series.h"

struct agg_entry {
	uint32_t stack, labels;
	int64_t value;
};

struct agg {
	struct agg_entry *e;
	size_t n, cap;
	struct cp_index idx;
	int64_t tmin, tmax;
};

static int agg_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct agg_entry *a = &((const struct agg *)ctx)->e[id], *b = key;

	return a->stack == b->stack && a->labels == b->labels;
}

static int agg_add(struct agg *g, uint32_t stack, uint32_t labels, int64_t v, int64_t t)
{
	struct agg_entry k = { stack, labels, v };
	uint32_t h = (uint32_t)cp_hash_u64(((uint64_t)stack << 32) | labels, 9);
	uint32_t id = cp_index_find(&g->idx, h, agg_eq, g, &k);

	g->tmin = t < g->tmin ? t : g->tmin;
	g->tmax = t > g->tmax ? t : g->tmax;
	if (id != UINT32_MAX) {
		g->e[id].value = cp_add_sat(g->e[id].value, v);
		return 0;
	}
	if (cp_grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e)) || cp_index_add(&g->idx, h, (uint32_t)g->n))
		return cp_error(ENOMEM, "out of memory reading samples");
	g->e[g->n++] = k;
	return 0;
}

/* Visits every entry of the wanted series (want[i]: series id, sorted) in
 * [from, to); fn returns 0 to go on. */
typedef int (*visit_fn)(void *ctx, size_t series_index, int64_t t, uint32_t stack, uint32_t labels, int64_t v);

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

/* what scan() hands cp_block_decode's visitor */
struct scan_ctx {
	struct cp_local *s;
	const long *idx; /* the block's k-th series -> index in want */
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
	struct cp_dict *d = &sc->s->dict;
	int err = 0;

	/* a block written after the dictionary was loaded may use newer
	 * dictionary entries (committed before the block) */
	if ((stack < 0 || (uint64_t)stack > d->nstack || c > d->nls) &&
	    (stack < 0 || (err = cp_dict_load(d)) || (uint64_t)stack > d->nstack || c > d->nls))
		return err ? err : cp_error(EBADMSG, "a sample block refers to a stack the store does not have");
	if (t < sc->from || t >= sc->to || (sc->ncov && covered(sc->cov, sc->ncov, t)))
		return 0;
	return sc->fn(sc->ctx, (size_t)sc->idx[k], t, (uint32_t)stack, (uint32_t)c, v);
}

/* The names of the partitions that overlap [from, to], into *names (malloc'ed).
 * No statement of the index stays open afterwards (nor during a scan), so
 * that cp_dict_load() sees what writers committed since. */
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
		err = cp_db_error(s->db, "reading partitions");
	sqlite3_finalize(pst);
	return err;
}

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
		sqlite3 *db;

		if ((err = cp_parts_open(&s->parts, names[i], &db))) {
			if (err == -ENOENT) {
				err = 0;
				continue;
			}
			break;
		}
		if (!cp_part_has_step(db)) /* written before downsampling: raw */
			continue;
		if ((err = cp_db_prepare(db, "SELECT coalesce(max(step), 0) FROM blocks WHERE t_max >= ? AND t_min <= ?", &st)))
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

/* The blocks of partition name that overlap [from, to], in *bst; 1 when the
 * partition is gone (removed by retention since it was listed). */
static int open_blocks(struct cp_local *s, const char *name, int64_t from, int64_t to, sqlite3_stmt **bst)
{
	sqlite3 *db;
	int err;

	if ((err = cp_parts_open(&s->parts, name, &db)))
		return err == -ENOENT ? 1 : err;
	/* blocks.step: the block's resolution (files written before
	 * downsampling have none: raw) */
	if ((err = cp_db_prepare(db, cp_part_has_step(db) ?
				  "SELECT rawlen, series, data, t_min, step, t_max FROM blocks WHERE t_max >= ? AND t_min <= ?"
				  " ORDER BY id" :
				  "SELECT rawlen, series, data, t_min, 0, t_max FROM blocks WHERE t_max >= ? AND t_min <= ?"
				  " ORDER BY id", bst)))
		return err;
	sqlite3_bind_int64(*bst, 1, from);
	sqlite3_bind_int64(*bst, 2, to);
	return 0;
}

/* The entries of the wanted series in the block of bst's current row to
 * sc->fn; a block none of whose series is wanted is skipped before it is
 * inflated.  With res, raised to the step of a block read. */
static int scan_block(struct scan_ctx *sc, struct cp_block_reader *rd, sqlite3_stmt *bst, const int64_t *want,
		      size_t nwant, int64_t *res)
{
	int64_t *ids = NULL;
	long *idx = NULL;
	unsigned char *wanted = NULL;
	bool any = false;
	size_t ns = 0, i;
	int err;

	if ((err = cp_block_series(sqlite3_column_blob(bst, 1), (size_t)sqlite3_column_bytes(bst, 1), &ids, &ns)))
		return err;
	idx = calloc(ns + 1, sizeof(*idx));
	wanted = calloc(ns + 1, 1);
	if (!idx || !wanted) {
		err = cp_error(ENOMEM, "out of memory reading samples");
	} else {
		for (i = 0; i < ns; i++) {
			idx[i] = find_series(want, nwant, ids[i]);
			wanted[i] = idx[i] >= 0;
			any |= idx[i] >= 0;
		}
		sc->idx = idx;
		if (any && res && sqlite3_column_int64(bst, 4) > *res)
			*res = sqlite3_column_int64(bst, 4);
		if (any)
			err = cp_block_decode(rd, sqlite3_column_blob(bst, 2), (size_t)sqlite3_column_bytes(bst, 2),
					      (uint64_t)sqlite3_column_int64(bst, 0), sqlite3_column_int64(bst, 3), wanted, ns,
					      scan_entry, sc);
	}
	free(ids);
	free(idx);
	free(wanted);
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

/* The summaries of partition db (compact.h) that a scan of [from, to) into
 * buckets bk can read instead of blocks: the day's when it fits, else the
 * hours that do.  Their times into *cov (sorted; malloc'ed), their entries
 * to sc's visitor. */
static int scan_rollups(struct scan_ctx *sc, struct cp_block_reader *rd, sqlite3 *db, const int64_t *want,
			size_t nwant, const struct cp_buckets *bk, int64_t *res, struct cover **cov, size_t *ncov)
{
	sqlite3_stmt *list = NULL, *rows = NULL;
	int64_t day = 0;
	size_t cap = 0, i;
	int err, rc;

	*cov = NULL;
	*ncov = 0;
	if (!cp_part_has_rollups(db))
		return 0;
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
	    !(err = cp_db_prepare(db, "SELECT rawlen, series, data, t_min, res FROM rollups WHERE t_min = ?1 AND t_max = ?2"
				   " ORDER BY id", &rows))) {
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

/* The entries of the series want[0..nwant) in [from, to) to fn: from the
 * blocks of the partitions that overlap the range, or, for the hours and
 * days that lie whole in the range (and in one of the buckets bk, when given),
 * from their summaries.  With res, the coarsest step read. */
static int scan(struct cp_local *s, const int64_t *want, size_t nwant, int64_t from, int64_t to, visit_fn fn, void *ctx,
		const struct cp_buckets *bk, int64_t *res)
{
	struct scan_ctx sc = { s, NULL, from, to, fn, ctx, NULL, 0 };
	struct cp_block_reader rd = { 0 };
	struct cover *cov = NULL;
	sqlite3_stmt *bst = NULL;
	char (*names)[16] = NULL;
	size_t nnames = 0, ncov = 0, pi;
	int err, rc;

	err = list_parts(s, from, to, &names, &nnames);
	for (pi = 0; !err && pi < nnames; pi++) {
		if ((err = open_blocks(s, names[pi], from, to, &bst)) == 1) {
			err = 0;
			continue;
		}
		if (err)
			break;
		sc.ncov = 0;
		if ((err = scan_rollups(&sc, &rd, sqlite3_db_handle(bst), want, nwant, bk, res, &cov, &ncov)))
			goto next;
		sc.cov = cov;
		sc.ncov = ncov;
		while (!err && (rc = sqlite3_step(bst)) == SQLITE_ROW) {
			int64_t a = sqlite3_column_int64(bst, 3), b = sqlite3_column_int64(bst, 5);

			/* a block whose times a summary covers whole: read there */
			if (ncov && all_covered(cov, ncov, a, b))
				continue;
			err = scan_block(&sc, &rd, bst, want, nwant, res);
		}
		if (!err && rc != SQLITE_DONE)
			err = cp_db_error(sqlite3_db_handle(bst), "reading samples");
	next:
		sqlite3_finalize(bst);
		bst = NULL;
		free(cov);
		cov = NULL;
		sc.ncov = 0;
	}
	free(names);
	cp_block_reader_release(&rd);
	return err;
}

/* ---- the scan as an iterator (query.h), a block at a time ---- */

struct cp_local_scanner {
	struct cp_local *s;
	int64_t *want;
	size_t nwant;
	struct scan_ctx sc;
	struct cp_block_reader rd;
	char (*names)[16];
	size_t nnames, pi;
	sqlite3_stmt *bst; /* the blocks of names[pi - 1] */
	struct cp_local_entry *e; /* the current block's entries */
	size_t n, cap, i;
};

static int collect_entry(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v)
{
	struct cp_local_scanner *it = ctx;

	if (cp_grow((void **)&it->e, &it->cap, it->n + 1, sizeof(*it->e)))
		return cp_error(ENOMEM, "out of memory reading samples");
	it->e[it->n++] = (struct cp_local_entry){ t, v, (uint32_t)si, stack, labels };
	return 0;
}

int cp_local_scan_open(struct cp_local *s, const int64_t *want, size_t nwant, int64_t from, int64_t to,
		       struct cp_local_scanner **out)
{
	struct cp_local_scanner *it = calloc(1, sizeof(*it));
	int err;

	*out = NULL;
	if (!it || !(it->want = malloc((nwant + 1) * sizeof(*want)))) {
		free(it);
		return cp_error(ENOMEM, "out of memory reading samples");
	}
	memcpy(it->want, want, nwant * sizeof(*want));
	it->s = s;
	it->nwant = nwant;
	it->sc = (struct scan_ctx){ s, NULL, from, to, collect_entry, it, NULL, 0 };
	if ((err = cp_dict_load(&s->dict)) || (err = list_parts(s, from, to, &it->names, &it->nnames))) {
		cp_local_scan_close(it);
		return err;
	}
	*out = it;
	return 0;
}

int cp_local_scan_next(struct cp_local_scanner *it, struct cp_local_entry *e)
{
	int err, rc;

	while (it->i >= it->n) {
		it->n = it->i = 0;
		if (it->bst && (rc = sqlite3_step(it->bst)) == SQLITE_ROW) {
			if ((err = scan_block(&it->sc, &it->rd, it->bst, it->want, it->nwant, NULL)))
				return err;
			continue;
		}
		if (it->bst) {
			err = rc == SQLITE_DONE ? 0 : cp_db_error(sqlite3_db_handle(it->bst), "reading samples");
			sqlite3_finalize(it->bst);
			it->bst = NULL;
			if (err)
				return err;
		}
		if (it->pi >= it->nnames)
			return 0;
		if ((err = open_blocks(it->s, it->names[it->pi++], it->sc.from, it->sc.to, &it->bst)) < 0)
			return err;
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
	free(it);
}

#define BY_SAMPLE SIZE_MAX

/* The groups of a query's samples by q->group_by: the value of a series
 * label, else of the samples' label (off-CPU's state, a thread's name), ""
 * when neither has it, in order of first appearance; without group_by, one
 * group "".  Shared by selections and totals over time, so that both name
 * the same groups. */
/* The selector's matchers of labels a series lacks, on its samples' labels (cp_selector_match_series):
 * a label set's answer is kept, for the set of matchers last asked (one, as a rule: the series that
 * lack pid all leave {pid="..."} to their samples). */
struct sample_filter {
	const struct cp_selector *sel;
	uint64_t mask;  /* the matchers the answers are for */
	uint8_t *known; /* label set id -> 0: not asked yet, 1: passes, 2: does not */
	size_t cap;
};

struct grouping {
	const char *by;
	char **names; /* the groups' values */
	size_t n, cap;
	size_t *group_of; /* series index (into want) -> group; BY_SAMPLE: by the sample's label */
	uint64_t *deferred; /* series index (into want) -> its matchers left to the samples */
	struct sample_filter filter;
	const struct cp_profile *dict;
	uint32_t last_labels; /* the last sample label set looked up, and its group */
	size_t last_group;
};

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

/* The group of value gv, made when new. */
static int group_index(struct grouping *g, const char *gv, size_t *out)
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

struct series_group {
	int64_t id;
	size_t group;
	uint64_t deferred;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct series_group *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The groups of series ser[0..nser), by `by` (NULL: one), and the ids to
 * scan in *want (sorted, as the scan wants them; group_of follows it); sel:
 * the selector that chose the series, whose matchers of labels a series
 * lacks its samples must pass (NULL: none). */
static int grouping_init(struct grouping *g, const char *by, const struct cp_selector *sel,
			 const struct cp_profile *dict, const struct cp_store_series *ser, size_t nser, int64_t **want)
{
	struct series_group *pairs = calloc(nser + 1, sizeof(*pairs));
	size_t i, j;
	int err = 0;

	memset(g, 0, sizeof(*g));
	g->by = by;
	g->dict = dict;
	g->filter.sel = sel;
	g->last_labels = UINT32_MAX;
	*want = calloc(nser + 1, sizeof(**want));
	g->group_of = calloc(nser + 1, sizeof(*g->group_of));
	g->deferred = calloc(nser + 1, sizeof(*g->deferred));
	if (!pairs || !*want || !g->group_of || !g->deferred) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	for (i = 0; i < nser; i++) {
		const char *gv = NULL;

		for (j = 0; by && j < ser[i].nlabels; j++)
			if (!strcmp(ser[i].names[j], by))
				gv = ser[i].values[j];
		if (by && !gv)
			j = BY_SAMPLE;
		else if ((err = group_index(g, gv ? gv : "", &j)))
			goto out;
		pairs[i].id = ser[i].id;
		pairs[i].group = j;
		pairs[i].deferred = sel ? ser[i].deferred : 0;
	}
	cp_qsort(pairs, nser, sizeof(*pairs), pair_cmp);
	for (i = 0; i < nser; i++) {
		(*want)[i] = pairs[i].id;
		g->group_of[i] = pairs[i].group;
		g->deferred[i] = pairs[i].deferred;
	}
out:
	free(pairs);
	return err;
}

/* The group of an entry of series si (into want) with label set labels;
 * SKIP when its labels do not pass the selector's matchers left to them. */
#define SKIP (SIZE_MAX - 1)
static int grouping_of(struct grouping *g, size_t si, uint32_t labels, size_t *out)
{
	size_t k = g->group_of[si];
	int err;

	if (g->deferred[si] && (err = sample_passes(&g->filter, g->dict, g->deferred[si], labels)) <= 0) {
		*out = SKIP;
		return err;
	}

	if (k == BY_SAMPLE) { /* a label of the samples, not of the series */
		if (labels != g->last_labels) {
			if ((err = group_index(g, sample_label(g->dict, labels, g->by), &g->last_group)))
				return err;
			g->last_labels = labels;
		}
		k = g->last_group;
	}
	*out = k;
	return 0;
}

static void grouping_release(struct grouping *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->names[i]);
	free(g->names);
	free(g->group_of);
}

struct select_ctx {
	struct grouping gr;
	struct agg *groups; /* one per group of gr */
	size_t ngroups, cap;
};

/* an aggregate for every group made */
static int aggs_grow(struct select_ctx *c)
{
	if (c->gr.n > c->ngroups && cp_grow((void **)&c->groups, &c->cap, c->gr.n, sizeof(*c->groups)))
		return cp_error(ENOMEM, "out of memory reading the store");
	for (; c->ngroups < c->gr.n; c->ngroups++) {
		memset(&c->groups[c->ngroups], 0, sizeof(c->groups[0]));
		c->groups[c->ngroups].tmin = INT64_MAX;
		c->groups[c->ngroups].tmax = INT64_MIN;
	}
	return 0;
}

static int add_to_group(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v)
{
	struct select_ctx *c = ctx;
	size_t g;
	int err;

	if ((err = grouping_of(&c->gr, si, labels, &g)) || g == SKIP || (err = aggs_grow(c)))
		return err;
	return agg_add(&c->groups[g], stack, labels, v, t);
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

/* The profile of group g, of one type, into *out; exe: its program, or NULL. */
static int build(struct cp_local *s, const char *type, struct agg *g, const char *exe, struct cp_profile **out)
{
	char st[128], su[128], pt[128], pu[128];
	size_t i;
	int err;

	cp_profile_clear_samples(s->dict.p);
	if ((err = cp_profile_add_sample_type(s->dict.p, cp_store_type_part(type, 1, st, sizeof(st)),
					      cp_store_type_part(type, 2, su, sizeof(su)))) ||
	    (err = cp_profile_set_period_type(s->dict.p, cp_store_type_part(type, 3, pt, sizeof(pt)),
					      cp_store_type_part(type, 4, pu, sizeof(pu)), 0)))
		goto out;
	for (i = 0; i < g->n; i++)
		if (g->e[i].value && (err = cp_profile_add_sample(s->dict.p, g->e[i].stack, g->e[i].labels, &g->e[i].value)))
			goto out;
	if (g->n) {
		s->dict.p->time_nanos = g->tmin;
		s->dict.p->duration_nanos = cp_sub_sat(g->tmax, g->tmin);
	}
	*out = cp_profile_copy(s->dict.p, NULL); /* only what the samples use */
	err = *out ? 0 : -errno;
	if (!err && exe && (err = main_first(out, exe))) {
		cp_profile_free(*out);
		*out = NULL;
	}
out:
	cp_profile_clear_samples(s->dict.p);
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

int cp_local_select(struct cp_local *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n)
{
	struct cp_store_series *ser = NULL;
	struct cp_store_result *res = NULL;
	struct select_ctx c = { 0 };
	int64_t *want = NULL;
	size_t nser = 0, i, j;
	int err;

	if ((err = cp_series_resolve(s->db, q->sel, &ser, &nser)) || (err = cp_dict_load(&s->dict)) ||
	    (err = grouping_init(&c.gr, q->group_by, q->sel, s->dict.p, ser, nser, &want)) || (err = aggs_grow(&c)))
		goto out;
	if (q->resolution)
		*q->resolution = 0;
	if ((err = scan(s, want, nser, q->from, q->to, add_to_group, &c, NULL, q->resolution)))
		goto out;
	if (!c.ngroups && nser && ((err = group_index(&c.gr, "", &j)) || (err = aggs_grow(&c))))
		goto out; /* no sample: one empty profile */
	if (!(res = calloc(c.ngroups + 1, sizeof(*res)))) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	for (i = 0; i < c.ngroups; i++) {
		res[i].group = c.gr.names[i];
		c.gr.names[i] = NULL;
	}
	for (i = 0; i < c.ngroups; i++)
		if ((err = build(s, nser ? ser[0].type : "", &c.groups[i], common_label(ser, nser, "exe"), &res[i].profile)))
			goto out;
	*out = res;
	*n = c.ngroups;
	res = NULL;
out:
	for (i = 0; i < c.ngroups; i++) {
		free(c.groups[i].e);
		cp_index_release(&c.groups[i].idx);
	}
	if (res)
		cp_store_results_free(res, c.ngroups);
	free(c.groups);
	grouping_release(&c.gr);
	free(want);
	cp_store_series_free(ser, nser);
	return err;
}

struct over_ctx {
	struct grouping gr;
	struct cp_buckets b;
	int64_t **totals; /* per group of gr: b.n */
	size_t ntotals, cap;
};

/* totals for every group made */
static int totals_grow(struct over_ctx *c)
{
	if (c->gr.n > c->ntotals && cp_grow((void **)&c->totals, &c->cap, c->gr.n, sizeof(*c->totals)))
		return cp_error(ENOMEM, "out of memory reading the store");
	for (; c->ntotals < c->gr.n; c->ntotals++)
		if (!(c->totals[c->ntotals] = calloc(c->b.n + 1, sizeof(**c->totals))))
			return cp_error(ENOMEM, "out of memory reading the store");
	return 0;
}

static int add_to_step(void *ctx, size_t si, int64_t t, uint32_t stack, uint32_t labels, int64_t v)
{
	struct over_ctx *c = ctx;
	ssize_t k = cp_buckets_index(&c->b, t);
	size_t g;
	int err;

	(void)stack;
	if (k < 0)
		return 0;
	if ((err = grouping_of(&c->gr, si, labels, &g)) || g == SKIP || (err = totals_grow(c)))
		return err;
	c->totals[g][k] = cp_add_sat(c->totals[g][k], v);
	return 0;
}

static void over_release(struct over_ctx *c)
{
	for (size_t i = 0; i < c->ntotals; i++)
		free(c->totals[i]);
	free(c->totals);
	grouping_release(&c->gr);
}

/* The totals over time of each group of q's samples into c (released by
 * the caller), and their type (NULL: not wanted). */
static int over_time(struct cp_local *s, const struct cp_store_query *q, int64_t step, struct over_ctx *c, char **type)
{
	struct cp_store_series *ser = NULL;
	int64_t *want = NULL;
	int64_t res = 0;
	size_t nser = 0;
	int err;

	memset(c, 0, sizeof(*c));
	/* never finer than the data: steps of whole multiples of its resolution */
	if ((err = range_step(s, q->from, q->to, &res)))
		return err;
	if (res > 0 && step % res)
		step = step < INT64_MAX - res ? (step / res + 1) * res : step;
	if (q->resolution)
		*q->resolution = res;
	if ((err = cp_buckets_align(q->from, q->to, step, &c->b)))
		return err;
	if ((err = cp_series_resolve(s->db, q->sel, &ser, &nser)) || (err = cp_dict_load(&s->dict)) ||
	    (err = grouping_init(&c->gr, q->group_by, q->sel, s->dict.p, ser, nser, &want)) || (err = totals_grow(c)))
		goto out;
	if (type && !(*type = strdup(ser[0].type))) {
		err = cp_error(ENOMEM, "out of memory reading the store");
		goto out;
	}
	/* whole buckets: from the first one's start to the last one's end */
	if ((err = scan(s, want, nser, c->b.start, cp_buckets_end(&c->b), add_to_step, c, &c->b, NULL)) && type) {
		free(*type);
		*type = NULL;
	}
out:
	free(want);
	cp_store_series_free(ser, nser);
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
		*totals = c.totals[0];
		c.totals[0] = NULL;
		*b = c.b;
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
		(*out)[i].group = c.gr.names[i];
		(*out)[i].totals = c.totals[i];
		c.gr.names[i] = NULL;
		c.totals[i] = NULL;
	}
	if (!err) {
		*n = c.ntotals;
		*b = c.b;
	}
	over_release(&c);
	return err;
}

int cp_local_stats(struct cp_local *s, struct cp_store_stats *st)
{
	char path[PATH_MAX];
	struct stat sb;
	struct dirent *de;
	sqlite3_stmt *ps = NULL;
	DIR *d;
	int err;

	memset(st, 0, sizeof(*st));
	st->series = cp_db_count(s->db, "SELECT count(*) FROM series");
	if ((err = cp_dict_load(&s->dict)))
		return err;
	st->stacks = s->dict.nstack;
	st->locations = s->dict.nloc;
	st->functions = cp_db_count(s->db, "SELECT count(*) FROM functions");
	if ((err = cp_db_prepare(s->db, "SELECT name FROM partitions", &ps)))
		return err;
	while (sqlite3_step(ps) == SQLITE_ROW) {
		sqlite3 *db;

		if (cp_parts_open(&s->parts, (const char *)sqlite3_column_text(ps, 0), &db))
			continue;
		st->blocks += cp_db_count(db, "SELECT count(*) FROM blocks");
		st->entries += cp_db_count(db, "SELECT coalesce(sum(entries), 0) FROM blocks");
		st->samples += cp_db_count(db, "SELECT coalesce(sum(samples), 0) FROM blocks");
	}
	sqlite3_finalize(ps);
	/* bytes: every file of the store, as du would count them */
	for (int pass = 0; pass < 2; pass++) {
		snprintf(path, sizeof(path), pass ? "%s/parts" : "%s", s->dir);
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

