/* SPDX-License-Identifier: MIT */
#include "compact.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cumulative.h"
#include "../error.h"
#include "../util.h"
#include "blocks.h"
#include "db.h"
#include "dict.h"
#include "handle.h"
#include "limit.h"
#include "parts.h"

#define MINUTE_NS ((int64_t)60 * 1000000000)
/* a summary's entries kept in memory before they go out as one row (rows
 * of one time add up, but a key in two rows is read twice: this must hold a
 * day of a host's distinct entries, some 200 Ki on bench/store_gen's load),
 * and the entries gathered before they are summed into it (32 bytes each):
 * a summary is made in some 40 MB, whatever the day holds */
#define ROLLUP_ROW_MAX (1u << 19)
#define ROLLUP_FOLD_AT (1u << 17)
/* hours are summarized while they are this recent (days always) */
#define ROLLUP_HOURS_AGE (2 * CP_DAY_NS)

/* The ids of a day's series of gauge types (cumulative.h), sorted: merged over time, their values
 * are averaged over the times merged, never summed. */
struct gauges {
	int64_t *ids;
	size_t n;
};

static int gauges_of(sqlite3 *db, struct gauges *g)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int err, rc;

	memset(g, 0, sizeof(*g));
	if ((err = cp_db_prepare(db, "SELECT id, type FROM series ORDER BY id", &st)))
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char part[128];

		if (cp_value_kind(cp_store_type_part((const char *)sqlite3_column_text(st, 1), 1, part, sizeof(part))) !=
		    CP_VALUE_GAUGE)
			continue;
		if (cp_grow((void **)&g->ids, &cap, g->n + 1, sizeof(*g->ids))) {
			err = cp_error(ENOMEM, "out of memory downsampling");
			break;
		}
		g->ids[g->n++] = sqlite3_column_int64(st, 0);
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(db, "reading series to downsample");
	sqlite3_finalize(st);
	return err;
}

static bool is_gauge(const struct gauges *g, int64_t id)
{
	size_t lo = 0, hi = g->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->ids[mid] == id)
			return true;
		if (g->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* a gauge entry's (series, step, time it was taken at) */
struct gauge_time {
	int64_t series, step, t;
};

static int gt_cmp(const void *a, const void *b)
{
	const struct gauge_time *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* what one window's old blocks decode into */
struct gather {
	const int64_t *ids; /* the block's series */
	const int64_t *ends; /* and their ends */
	size_t nids;
	const struct gauges *gauges; /* NULL: none */
	struct gauge_time *gt;       /* the gauges' times */
	size_t ngt, gtcap;
	int64_t step, w0, w1; /* entries in [w0, w1) only */
	int64_t taken;        /* entries taken, over all windows */
	const uint32_t *thin; /* label set id -> without the process's labels, for ids < nthin (NULL: kept) */
	size_t nthin;
	bool by_series;       /* only the entries of series s_lo .. s_hi */
	int64_t s_lo, s_hi;
	struct cp_block_entry *e;
	size_t n, cap;
	/* with fold: called when n reaches fold_at, to take e[0..n) away */
	int (*fold)(struct gather *g);
	size_t fold_at;
	void *fold_ctx;
};

static int gather_entry(void *ctx, size_t k, int64_t t, int64_t stack, uint64_t labels, int64_t v)
{
	struct gather *g = ctx;

	if (k >= g->nids || stack < 0 || stack > UINT32_MAX || labels > UINT32_MAX || t < 0)
		return cp_error(EBADMSG, "a sample block is corrupt (entries)");
	if (t < g->w0 || t >= g->w1) /* another window's */
		return 0;
	if (g->by_series && (g->ids[k] < g->s_lo || g->ids[k] > g->s_hi)) /* another pass's */
		return 0;
	if (cp_grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e)))
		return cp_error(ENOMEM, "out of memory downsampling");
	g->taken++;
	if (labels < g->nthin)
		labels = g->thin[labels];
	g->e[g->n++] = (struct cp_block_entry){ g->ids[k], t - t % g->step, (uint32_t)stack, (uint32_t)labels, v,
						g->ends[k] };
	if (g->gauges && is_gauge(g->gauges, g->ids[k])) {
		if (cp_grow((void **)&g->gt, &g->gtcap, g->ngt + 1, sizeof(*g->gt)))
			return cp_error(ENOMEM, "out of memory downsampling");
		g->gt[g->ngt++] = (struct gauge_time){ g->ids[k], t - t % g->step, t };
	}
	return g->fold && g->n >= g->fold_at ? g->fold(g) : 0;
}

/* The gauges' sums among e[0..n) (sorted, merged) divided by the times they were taken at in their
 * step: their average over it.  Their times are forgotten then. */
static void gauge_average(struct gather *g, struct cp_block_entry *e, size_t n)
{
	size_t i, j, k = 0;

	if (!g->ngt)
		return;
	cp_qsort(g->gt, g->ngt, sizeof(*g->gt), gt_cmp);
	for (i = 0, j = 0; i < g->ngt; i++)
		if (!j || gt_cmp(&g->gt[j - 1], &g->gt[i]))
			g->gt[j++] = g->gt[i];
	g->ngt = j;
	for (i = 0; i < n; i++) {
		size_t lo, cnt = 0;

		if (!is_gauge(g->gauges, e[i].series))
			continue;
		while (k < g->ngt && (g->gt[k].series < e[i].series ||
				      (g->gt[k].series == e[i].series && g->gt[k].step < e[i].t)))
			k++;
		for (lo = k; lo < g->ngt && g->gt[lo].series == e[i].series && g->gt[lo].step == e[i].t; lo++)
			cnt++;
		if (cnt > 1)
			e[i].value = e[i].value / (int64_t)cnt + (2 * (e[i].value % (int64_t)cnt) >= (int64_t)cnt);
	}
	g->ngt = 0;
}

/* Decodes the blocks of db finer than step (in the caller's transaction)
 * that overlap [g->w0, g->w1): their entries in it, with times rounded down
 * to the step, into g. */
static int gather_window(sqlite3_stmt *q, struct cp_block_reader *rd, struct gather *g)
{
	unsigned char *all = NULL;
	int err = 0, rc;

	sqlite3_bind_int64(q, 1, g->step);
	sqlite3_bind_int64(q, 2, g->w0);
	sqlite3_bind_int64(q, 3, g->w1);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t *ids = NULL, *ends = NULL;
		size_t ns = 0;

		if ((err = cp_block_series(sqlite3_column_blob(q, 1), (size_t)sqlite3_column_bytes(q, 1), &ids, &ns)))
			break;
		free(all);
		if (!(all = malloc(ns + 1)) || !(ends = calloc(ns + 1, sizeof(*ends)))) {
			free(ids);
			err = cp_error(ENOMEM, "out of memory downsampling");
			break;
		}
		memset(all, 1, ns + 1);
		for (size_t i = 0; g->by_series && i < ns; i++) /* (the others are not even decoded) */
			all[i] = ids[i] >= g->s_lo && ids[i] <= g->s_hi;
		cp_block_ends(sqlite3_column_blob(q, 5), (size_t)sqlite3_column_bytes(q, 5), sqlite3_column_int64(q, 3),
			      sqlite3_column_int64(q, 4), ends, ns);
		g->ids = ids;
		g->ends = ends;
		g->nids = ns;
		err = cp_block_decode(rd, sqlite3_column_blob(q, 2), (size_t)sqlite3_column_bytes(q, 2),
				      (uint64_t)sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 3), all, ns, gather_entry, g);
		free(ids);
		free(ends);
		g->ids = g->ends = NULL;
		if (err)
			break;
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(sqlite3_db_handle(q), "reading samples to downsample");
	sqlite3_reset(q);
	free(all);
	return err;
}

/* A block laid out by series (cp_block_encode_by_series) holds at most CUT_ENTRIES entries. */
#define CUT_ENTRIES 65536

struct block_ins {
	sqlite3_stmt *ins;
	int64_t step;
	struct cp_compact_stats *st;
};

static int emit_block_row(void *ctx, const struct cp_block *b, size_t entries)
{
	struct block_ins *c = ctx;
	int err;

	cp_part_bind_block(c->ins, b);
	sqlite3_bind_int64(c->ins, 11, c->step);
	if ((err = cp_db_step(c->ins, "writing downsampled samples")))
		return err;
	c->st->blocks_after++;
	c->st->entries_after += (int64_t)entries;
	return 0;
}

/* Inserts e[0..n) (sorted) as blocks of step laid out by series, so that a query of a few series
 * skips the blocks of the others (their s_min, s_max). */
static int insert_block(sqlite3_stmt *ins, const struct cp_block_entry *e, size_t n, int64_t step,
			struct cp_compact_stats *st)
{
	struct block_ins c = { ins, step, st };

	return cp_block_encode_by_series(e, n, CUT_ENTRIES, emit_block_row, &c);
}

/* Sums entries with the same key (sorted) and drops the sums of 0; the
 * count left. */
static size_t merge_entries(struct cp_block_entry *e, size_t n)
{
	size_t i, j = 0;

	for (i = 0; i < n; i++) {
		if (j && !cp_block_entry_cmp(&e[j - 1], &e[i])) {
			e[j - 1].value = cp_add_sat(e[j - 1].value, e[i].value);
			e[j - 1].end = e[i].end > e[j - 1].end ? e[i].end : e[j - 1].end;
		} else {
			e[j++] = e[i];
		}
	}
	for (i = 0, n = j, j = 0; i < n; i++)
		if (e[i].value)
			e[j++] = e[i];
	return j;
}

/* Merges the blocks of db finer than step into blocks of step, one per window
 * of time, in the caller's transaction: a window at a time, so that memory
 * holds one window's entries (not a day's: tens of millions on a busy host),
 * and a query of part of an old day skips the other windows.  Then deletes
 * the old blocks.  The window is 3 steps, at least 10 minutes, at most an hour (a step when
 * 3 are longer): on
 * bench/store_gen's load, a day of 1m steps takes 8.9 MB in blocks of 10
 * minutes, 11.6 MB in blocks of an hour, 16.4 MB of 4 hours; of 10m steps 4.1
 * MB in blocks of 30 minutes, 4.5 MB of an hour, 6.8 MB of 4 hours (a long
 * column of a series' stack deltas compresses worse than a few short ones). */
static int merge_day(sqlite3 *db, int64_t step, const uint32_t *thin, size_t nthin, struct cp_compact_stats *st)
{
	/* (steps of an hour and more: a step a window, which holds as many entries as 3 steps of 20
	 * minutes; 3 hours of store_gen's load took 100 MB) */
	int64_t win = 3 * step > CP_HOUR_NS ? step : 3 * step > 10 * MINUTE_NS ? 3 * step : 10 * MINUTE_NS, lo, hi, w;
	struct gather g = { .step = step, .thin = thin, .nthin = nthin };
	struct gauges gauges = { 0 };
	int64_t entries;
	struct cp_block_reader rd = { 0 };
	sqlite3_stmt *q = NULL, *ins = NULL, *range = NULL;
	char sql[128];
	int err;

	if ((err = cp_db_prepare(db, "SELECT count(*), coalesce(sum(entries), 0), min(t_min), max(t_max) FROM blocks"
				  " WHERE step < ?", &range)))
		return err;
	sqlite3_bind_int64(range, 1, step);
	if (sqlite3_step(range) != SQLITE_ROW) {
		err = cp_db_error(db, "reading samples to downsample");
		goto out;
	}
	st->blocks_before += sqlite3_column_int64(range, 0);
	st->entries_before += (entries = sqlite3_column_int64(range, 1));
	lo = sqlite3_column_int64(range, 2);
	hi = sqlite3_column_int64(range, 3);
	if (!sqlite3_column_int64(range, 0))
		goto out;
	if ((err = gauges_of(db, &gauges)) ||
	    (err = cp_db_prepare(db, "SELECT rawlen, series, data, t_min, t_max, ends FROM blocks WHERE step < ?1"
				  " AND t_max >= ?2 AND t_min < ?3 ORDER BY id", &q)) ||
	    (err = cp_db_prepare(db, "INSERT INTO blocks(t_min, t_max, entries, samples, rawlen, series, data, ends,"
				  " s_min, s_max, step, layout) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", &ins)))
		goto out;
	g.gauges = &gauges;
	for (w = lo - lo % win; !err && w <= hi; w += win) {
		size_t n;

		g.w0 = w;
		g.w1 = w + win;
		g.n = 0;
		if ((err = gather_window(q, &rd, &g)))
			break;
		cp_qsort(g.e, g.n, sizeof(*g.e), cp_block_entry_cmp);
		n = merge_entries(g.e, g.n);
		gauge_average(&g, g.e, n);
		if (n)
			err = insert_block(ins, g.e, n, step, st);
	}
	/* every entry in exactly one window: else a block holds entries outside
	 * its bounds (corrupt), and deleting it would lose them */
	if (!err && g.taken != entries)
		err = cp_error(EBADMSG, "a sample block is corrupt (%" PRId64 " entries where the blocks say %" PRId64
					"): the day is left as it was", g.taken, entries);
	snprintf(sql, sizeof(sql), "DELETE FROM blocks WHERE step < %" PRId64, step);
	if (!err)
		err = cp_db_exec(db, sql, "downsampling");
out:
	sqlite3_finalize(range);
	sqlite3_finalize(q);
	sqlite3_finalize(ins);
	cp_block_reader_release(&rd);
	free(g.e);
	free(g.gt);
	free(gauges.ids);
	return err;
}

/* *map[id] for every label set id of the day's dictionary d (loaded whole, in the caller's write
 * transaction): the id of the same set without the process labels (dict.h: a downsampled day keeps
 * each program's profile over time, not its processes', docs/STORE.md "Downsampling", so that the
 * entries of a step merge however many processes came and went in it), interned in d when new
 * (saved by the caller with its blocks).  *n: how many ids the map has (0 and no map when no set
 * has them). */
static int thin_map(struct cp_dict *d, uint32_t **map, size_t *n)
{
	struct cp_profile *p;
	struct cp_label *keep = NULL;
	size_t cap = 0, m;
	uint32_t id, nls, key[CP_PROCESS_LABELS];
	int err;

	*map = NULL;
	*n = 0;
	if ((err = cp_dict_load(d)))
		return err;
	p = d->p;
	if (d->bls) /* ids are rows past a base (a writer's forget): leave the labels as they are */
		return 0;
	if (!cp_dict_process_keys(p, key) || (nls = p->nlabelsets) < 2)
		return 0;
	/* ids 1 .. nls - 1 (0: the empty set); the sets made below come after them */
	if (!(*map = malloc((size_t)nls * sizeof(**map))))
		return cp_error(ENOMEM, "out of memory downsampling");
	(*map)[0] = 0;
	for (id = 1; id < nls && !err; id++) {
		int64_t to;

		if (cp_grow((void **)&keep, &cap, p->labelsets[id].len + 1, sizeof(*keep))) {
			err = cp_error(ENOMEM, "out of memory downsampling");
			break;
		}
		if ((m = cp_dict_strip_labels(p, id, key, keep)) == p->labelsets[id].len)
			(*map)[id] = id;
		else if ((to = cp_profile_labelset(p, keep, m)) < 0)
			err = cp_dict_error((int)to, "thinning the samples' labels");
		else
			(*map)[id] = (uint32_t)to;
	}
	free(keep);
	if (err) {
		free(*map);
		*map = NULL;
		return err;
	}
	*n = nls;
	return 0;
}

/* Compacts partition name to step: 1 when it did, 0 when nothing was finer. */
static int compact_day(struct cp_local *s, const char *name, int64_t step, struct cp_compact_stats *st)
{
	struct cp_compact_stats day = { 0 };
	char path[PATH_MAX], sql[128];
	sqlite3_stmt *up = NULL;
	struct cp_part *part;
	sqlite3 *db;
	bool busy = false;
	uint32_t *thin = NULL;
	size_t nthin = 0;
	int err;

	/* gone since listed (retention, the size limit): not made again */
	cp_part_path(&s->parts, name, path, sizeof(path));
	if (access(path, F_OK) < 0)
		return 0;
	if ((err = cp_parts_open(&s->parts, name, &part)))
		return err;
	db = part->db;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM blocks WHERE step < %" PRId64, step);
	if (!cp_db_count(db, sql))
		return 0;
	/* the day's bounds take in the rounded-down times first: bounds wider
	 * than the samples are harmless, narrower ones would hide samples */
	if ((err = cp_db_prepare(s->db, "UPDATE partitions SET t_min = t_min - t_min % ?1 WHERE name = ?2", &up)))
		return err;
	sqlite3_bind_int64(up, 1, step);
	sqlite3_bind_text(up, 2, name, -1, SQLITE_STATIC);
	err = cp_db_step(up, "downsampling");
	sqlite3_finalize(up);
	if (err)
		return err;
	/* one transaction: the old blocks or the new (and the label sets they use), never both */
	if ((err = cp_db_exec(db, "BEGIN IMMEDIATE", "downsampling")) || (err = thin_map(&part->dict, &thin, &nthin)) ||
	    (err = merge_day(db, step, thin, nthin, &day)) || (err = cp_dict_save(&part->dict)) ||
	    (err = cp_db_exec(db, "COMMIT", "downsampling"))) {
		if (!sqlite3_get_autocommit(db))
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		cp_dict_rolled_back(&part->dict);
		goto out;
	}
	st->days++;
	st->blocks_before += day.blocks_before;
	st->blocks_after += day.blocks_after;
	st->entries_before += day.entries_before;
	st->entries_after += day.entries_after;
	/* the old blocks' pages back to the file system */
	err = cp_part_reclaim(db, name, &busy);
out:
	free(thin);
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err ? cp_error_ctx(err, "downsampling %s", name) : 1;
}

static int rollup_day(struct cp_local *s, const char *name, int64_t day0, int64_t now, struct cp_compact_stats *st);

/* ---- the layout by series of a closed hour's raw blocks ---- */

/* Rewrites the raw blocks (as appends wrote them: each holds every series of its batch) that lie
 * whole in hour [h, h + 1h) of db into blocks laid out by series (insert_block), in one
 * transaction: a query of a few series then reads their blocks only.  Exact: the entries stay as
 * they were, merged where equal. */
static int layout_hour(sqlite3 *db, int64_t h, struct cp_compact_stats *st)
{
	struct gather g = { .step = 1, .w0 = h, .w1 = h + CP_HOUR_NS };
	struct cp_block_reader rd = { 0 };
	sqlite3_stmt *q = NULL, *ins = NULL;
	char sql[256];
	size_t n;
	int err;

	if ((err = cp_db_exec(db, "BEGIN IMMEDIATE", "laying out samples")) ||
	    (err = cp_db_prepare(db, "SELECT rawlen, series, data, t_min, t_max, ends FROM blocks WHERE ?1 > 0 AND layout = 0"
				  " AND step = 0 AND t_min >= ?2 AND t_max < ?3 ORDER BY id", &q)) ||
	    (err = cp_db_prepare(db, "INSERT INTO blocks(t_min, t_max, entries, samples, rawlen, series, data, ends,"
				  " s_min, s_max, step, layout) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", &ins)) ||
	    (err = gather_window(q, &rd, &g)))
		goto out;
	cp_qsort(g.e, g.n, sizeof(*g.e), cp_block_entry_cmp);
	n = merge_entries(g.e, g.n);
	if (n && (err = insert_block(ins, g.e, n, 0, st)))
		goto out;
	snprintf(sql, sizeof(sql), "DELETE FROM blocks WHERE layout = 0 AND step = 0 AND t_min >= %" PRId64
		 " AND t_max < %" PRId64, h, h + CP_HOUR_NS);
	if (!(err = cp_db_exec(db, sql, "laying out samples")))
		err = cp_db_exec(db, "COMMIT", "laying out samples");
out:
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(q);
	sqlite3_finalize(ins);
	cp_block_reader_release(&rd);
	free(g.e);
	return err;
}

/* The closed hours of day name whose raw blocks are not laid out by series yet, laid out: 1 when
 * some were, 0 when none was due. */
static int layout_day(struct cp_local *s, const char *name, int64_t now, struct cp_compact_stats *st)
{
	char path[PATH_MAX], sql[192];
	struct cp_part *part;
	int64_t hours[25];
	size_t n = 0;
	sqlite3_stmt *q = NULL;
	int err, rc;

	cp_part_path(&s->parts, name, path, sizeof(path));
	if (access(path, F_OK) < 0)
		return 0;
	if ((err = cp_parts_open(&s->parts, name, &part)))
		return err;
	snprintf(sql, sizeof(sql), "SELECT DISTINCT t_min - t_min %% %" PRId64 " FROM blocks WHERE layout = 0 AND step = 0"
		 " AND t_max < ?1 ORDER BY 1", CP_HOUR_NS);
	if ((err = cp_db_prepare(part->db, sql, &q)))
		return err;
	sqlite3_bind_int64(q, 1, now - now % CP_HOUR_NS);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW && n < 25)
		hours[n++] = sqlite3_column_int64(q, 0);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = cp_db_error(part->db, "laying out samples");
	sqlite3_finalize(q);
	for (size_t i = 0; !err && i < n; i++)
		if (hours[i] + CP_HOUR_NS <= now)
			err = layout_hour(part->db, hours[i], st);
	/* a day that is over gets no more appends to fill the pages its old blocks left: back to the
	 * file system (a day's laid-out blocks take some 2/3 of the appends') */
	if (!err && n && hours[0] - hours[0] % CP_DAY_NS + CP_DAY_NS <= now) {
		bool busy = false;

		err = cp_part_reclaim(part->db, name, &busy);
	}
	return err ? cp_error_ctx(err, "laying out %s", name) : n > 0;
}


/* the partitions listed, with what a pass over them needs */
struct day {
	char name[16];
	int64_t tmax;
};
typedef int (*day_fn)(struct cp_local *s, const struct day *d, const struct cp_downsample *p, int64_t now,
		      struct cp_compact_stats *st);

static int layout_one(struct cp_local *s, const struct day *d, const struct cp_downsample *p, int64_t now,
		      struct cp_compact_stats *st)
{
	/* a day due for downsampling is laid out by its merge: not twice */
	if (cp_downsample_step(p, cp_sub_sat(now, d->tmax)) > 0)
		return 0;
	return layout_day(s, d->name, now, st);
}

static int downsample_one(struct cp_local *s, const struct day *d, const struct cp_downsample *p, int64_t now,
			  struct cp_compact_stats *st)
{
	int64_t step = cp_downsample_step(p, cp_sub_sat(now, d->tmax));

	return step > 0 ? compact_day(s, d->name, step, st) : 0;
}

static int rollup_one(struct cp_local *s, const struct day *d, const struct cp_downsample *p, int64_t now,
		      struct cp_compact_stats *st)
{
	(void)p;
	return rollup_day(s, d->name, d->tmax - d->tmax % CP_DAY_NS, now, st);
}

/* fn over days[0..n), until max_days (0: no limit) did something.  A day that
 * fails (a corrupt block) does not keep the others from being done: the last
 * error is kept in *last (with its message); out of memory or space, or no
 * permission, ends the pass (the next days would fail the same way) and is
 * returned.  The days done. */
static int each_day(struct cp_local *s, const struct day *days, size_t n, int max_days, day_fn fn,
		    const struct cp_downsample *p, int64_t now, struct cp_compact_stats *st, int *last)
{
	int done = 0;

	for (size_t i = 0; i < n && (!max_days || done < max_days); i++) {
		int r = fn(s, &days[i], p, now, st);

		if (r > 0)
			done++;
		else if (r < 0)
			*last = r;
		if (r == -ENOMEM || r == -ENOSPC || r == -EPERM)
			return r;
	}
	return done;
}

int cp_local_compact(struct cp_local *s, const struct cp_downsample *p, int64_t now, int max_days,
		     struct cp_compact_stats *st)
{
	struct cp_compact_stats none;
	sqlite3_stmt *q = NULL;
	struct day *days = NULL;
	size_t n = 0, cap = 0;
	int err = 0, rc, done = 0, last = 0;

	st = st ? st : &none;
	memset(st, 0, sizeof(*st));
	if (s->mode != CP_STORE_WRITE)
		return cp_error(EPERM, "the store was opened read-only");
	if (!p->n)
		return 0;
	if ((err = cp_db_prepare(s->db, "SELECT name, t_max FROM partitions ORDER BY name", &q)))
		return err;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (cp_grow((void **)&days, &cap, n + 1, sizeof(*days))) {
			err = cp_error(ENOMEM, "out of memory downsampling");
			break;
		}
		snprintf(days[n].name, sizeof(days[n].name), "%s", (const char *)sqlite3_column_text(q, 0));
		days[n++].tmax = sqlite3_column_int64(q, 1);
	}
	if (!err && rc != SQLITE_DONE)
		err = cp_db_error(s->db, "listing partitions to downsample");
	sqlite3_finalize(q);
	/* the closed hours laid out by series, the days to downsample, then the summaries, a day's at a
	 * time as well (the summaries last: a layout or a downsampling drops those of its time) */
	if (!err && (done = each_day(s, days, n, max_days, layout_one, p, now, st, &last)) >= 0 &&
	    (done = each_day(s, days, n, max_days, downsample_one, p, now, st, &last)) >= 0)
		err = each_day(s, days, n, max_days, rollup_one, p, now, st, &last);
	free(days);
	if (err < 0 || done < 0)
		return err < 0 ? err : done;
	return last ? last : done;
}

/* ---- summaries (rollups) ---- */

/* Merges the sorted, merged runs a[0..na) and b[0..nb) into *out (sorted,
 * merged, malloc'ed). */
static int merge_runs(const struct cp_block_entry *a, size_t na, const struct cp_block_entry *b, size_t nb,
		      struct cp_block_entry **out, size_t *nout)
{
	struct cp_block_entry *o = malloc((na + nb + 1) * sizeof(*o));
	size_t i = 0, j = 0, n = 0;

	if (!o)
		return cp_error(ENOMEM, "out of memory summarizing samples");
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cp_block_entry_cmp(&a[i], &b[j]);

		if (c < 0) {
			o[n++] = a[i++];
		} else if (c > 0) {
			o[n++] = b[j++];
		} else {
			o[n] = a[i++];
			o[n].value = cp_add_sat(o[n].value, b[j].value);
			o[n].end = b[j].end > o[n].end ? b[j].end : o[n].end;
			j++;
			n++;
		}
	}
	*out = o;
	*nout = n;
	return 0;
}

struct rollup_ins {
	sqlite3_stmt *ins;
	int64_t t0, len, res;
};

static int emit_rollup_row(void *ctx, const struct cp_block *b, size_t entries)
{
	struct rollup_ins *c = ctx;

	(void)entries;
	sqlite3_bind_int64(c->ins, 1, c->t0);
	sqlite3_bind_int64(c->ins, 2, c->t0 + c->len - 1);
	sqlite3_bind_int64(c->ins, 3, c->len);
	sqlite3_bind_int64(c->ins, 4, c->res);
	sqlite3_bind_int64(c->ins, 5, b->entries);
	sqlite3_bind_int64(c->ins, 6, b->samples);
	sqlite3_bind_int64(c->ins, 7, (int64_t)b->rawlen);
	sqlite3_bind_blob(c->ins, 8, b->series, (int)b->series_len, SQLITE_STATIC);
	sqlite3_bind_blob(c->ins, 9, b->data, (int)b->data_len, SQLITE_STATIC);
	sqlite3_bind_blob(c->ins, 10, b->ends, (int)b->ends_len, SQLITE_STATIC);
	sqlite3_bind_int64(c->ins, 11, b->smin);
	sqlite3_bind_int64(c->ins, 12, b->smax);
	return cp_db_step(c->ins, "writing summaries");
}

/* Inserts e[0..n) (sorted) as summary rows of [t0, t0 + len) at resolution res, laid out by series
 * as insert_block's blocks are. */
static int insert_rollup(sqlite3_stmt *ins, const struct cp_block_entry *e, size_t n, int64_t t0, int64_t len,
			 int64_t res)
{
	struct rollup_ins c = { ins, t0, len, res };

	return cp_block_encode_by_series(e, n, CUT_ENTRIES, emit_rollup_row, &c);
}

/* Whether [t0, t0 + len) has blocks and no summary of len. */
static bool rollup_due(sqlite3 *db, int64_t t0, int64_t len)
{
	char sql[192];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM rollups WHERE t_min = %" PRId64 " AND step = %" PRId64, t0, len);
	if (cp_db_count(db, sql))
		return false;
	snprintf(sql, sizeof(sql), "SELECT EXISTS(SELECT 1 FROM blocks WHERE t_max >= %" PRId64 " AND t_min < %" PRId64 ")",
		 t0, t0 + len);
	return cp_db_count(db, sql) > 0;
}

/* a summary being made: the sum so far (sorted, merged), and where its rows go */
struct rollup {
	struct cp_block_entry *acc;
	size_t nacc;
	sqlite3_stmt *ins;
	int64_t t0, len, res;
};

/* gather's fold: the entries gathered so far summed into the summary; a row
 * of it written when it grows past ROLLUP_ROW_MAX (rows of one time add up) */
static int rollup_fold(struct gather *g)
{
	struct rollup *r = g->fold_ctx;
	struct cp_block_entry *m = NULL;
	size_t nm = 0;
	int err;

	cp_qsort(g->e, g->n, sizeof(*g->e), cp_block_entry_cmp);
	g->n = merge_entries(g->e, g->n);
	if ((err = merge_runs(r->acc, r->nacc, g->e, g->n, &m, &nm)))
		return err;
	free(r->acc);
	r->acc = m;
	r->nacc = nm;
	g->n = 0;
	if (r->nacc >= ROLLUP_ROW_MAX) {
		err = insert_rollup(r->ins, r->acc, r->nacc, r->t0, r->len, r->res);
		r->nacc = 0;
	}
	return err;
}

/* series a pass of a day's summary takes (64 series of store_gen's programs: some 256 Ki entries) */
#define DAY_SERIES_PASS 64

/* The series ids of the day [t0, t0 + len)'s rows (from_hours: its hours' summaries) or blocks:
 * *lo .. *hi with *by_series, or no range (*by_series false: none, or a row without one). */
static int series_span(sqlite3 *db, bool from_hours, int64_t t0, int64_t len, bool *by_series, int64_t *lo,
		       int64_t *hi)
{
	sqlite3_stmt *st = NULL;
	int err;

	*by_series = false;
	*lo = *hi = 0;
	if ((err = cp_db_prepare(db, from_hours ?
				  "SELECT min(s_min), max(s_max), (count(*) - count(s_min)) + (count(*) - count(s_max)), count(*)"
				  " FROM rollups WHERE t_min >= ?1 AND t_max < ?2 AND step = ?3" :
				  "SELECT min(s_min), max(s_max), (count(*) - count(s_min)) + (count(*) - count(s_max)), count(*)"
				  " FROM blocks WHERE t_max >= ?1 AND t_min < ?2 AND ?3 > 0", &st)))
		return err;
	sqlite3_bind_int64(st, 1, t0);
	sqlite3_bind_int64(st, 2, t0 + len);
	sqlite3_bind_int64(st, 3, CP_HOUR_NS);
	if (sqlite3_step(st) != SQLITE_ROW) {
		err = cp_db_error(db, "summarizing samples");
	} else if (sqlite3_column_int64(st, 3) > 0 && sqlite3_column_int64(st, 2) == 0 &&
		   sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*lo = sqlite3_column_int64(st, 0);
		*hi = sqlite3_column_int64(st, 1);
		*by_series = *lo <= *hi;
	}
	sqlite3_finalize(st);
	return err;
}

/* Sums the entries of the blocks of d's day in [t0, t0 + len) per series,
 * stack and program: label set, stamped t0, into rows of rollups (in the
 * caller's transaction).  A label set stands for every set with the same
 * labels but the process's (cp_dict_strip_map: the first such set), so the
 * processes of a program fall on one entry; a query that wants the process
 * labels reads the blocks instead (query.c).  Each block is decoded once;
 * memory holds ROLLUP_FOLD_AT entries gathered and the sum so far.  A day
 * also checks that it took every entry its blocks hold (they hold only the
 * day's). */
static int rollup_period(struct cp_dict *d, int64_t t0, int64_t len, struct cp_compact_stats *st)
{
	struct rollup r = { NULL, 0, NULL, t0, len, 0 };
	struct gather g = { .step = len, .w0 = t0, .w1 = t0 + len, .fold = rollup_fold, .fold_at = ROLLUP_FOLD_AT,
			    .fold_ctx = &r };
	struct cp_block_reader rd = { 0 };
	sqlite3_stmt *q = NULL, *meta = NULL;
	sqlite3 *db = d->db;
	uint32_t *thin = NULL;
	int64_t entries = 0;
	bool from_hours;
	int err;

	/* (in the write transaction: the dictionary every block of the period uses) */
	if ((err = cp_dict_load(d)) || (!d->bls && (err = cp_dict_strip_map(d->p, &thin, &g.nthin))))
		return err;
	g.thin = thin;
	if ((err = cp_db_prepare(db, "SELECT coalesce(max(step), 0), coalesce(sum(entries), 0) FROM blocks"
				  " WHERE t_max >= ?1 AND t_min < ?2", &meta))) {
		free(thin);
		return err;
	}
	sqlite3_bind_int64(meta, 1, t0);
	sqlite3_bind_int64(meta, 2, t0 + len);
	if (sqlite3_step(meta) == SQLITE_ROW) {
		r.res = sqlite3_column_int64(meta, 0);
		entries = sqlite3_column_int64(meta, 1);
	} else {
		err = cp_db_error(db, "summarizing samples");
	}
	sqlite3_finalize(meta);
	if (err) {
		free(thin);
		return err;
	}
	/* a day whose every hour with blocks is summarized: the sum of those
	 * (a few million entries where its blocks hold tens of millions) */
	from_hours = len == CP_DAY_NS;
	for (int64_t h = t0; from_hours && h < t0 + len; h += CP_HOUR_NS)
		from_hours = !rollup_due(db, h, CP_HOUR_NS);
	/* A day is summed a few series at a time (their rows or blocks read, the others' entries not
	 * decoded): its hours each hold every series, and the sum of all of them overflows a row
	 * before the hours of a series meet in it (100 hosts' day: 46 M entries, its hours' sum,
	 * where 4 M are distinct).  An hour, or a day with rows of no series range, in one pass. */
	if (len == CP_DAY_NS &&
	    (err = series_span(db, from_hours, t0, len, &g.by_series, &g.s_lo, &g.s_hi)))
		goto out;
	if ((err = cp_db_prepare(db, from_hours ?
				  "SELECT rawlen, series, data, t_min, t_max, ends FROM rollups WHERE ?1 > 0 AND t_min >= ?2"
				  " AND t_max < ?3 AND step = ?4 AND (?5 IS NULL OR (s_max >= ?5 AND s_min <= ?6))"
				  " ORDER BY id" :
				  "SELECT rawlen, series, data, t_min, t_max, ends FROM blocks WHERE ?1 >= 0 AND t_max >= ?2"
				  " AND t_min < ?3 AND (?5 IS NULL OR (s_max >= ?5 AND s_min <= ?6)) ORDER BY id", &q)) ||
	    (from_hours && sqlite3_bind_int64(q, 4, CP_HOUR_NS) != SQLITE_OK &&
	     (err = cp_db_error(db, "summarizing samples"))) ||
	    (err = cp_db_prepare(db, "INSERT INTO rollups(t_min, t_max, step, res, entries, samples, rawlen, series, data,"
				  " ends, s_min, s_max) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &r.ins)))
		goto out;
	{
		int64_t last = g.s_hi;

		for (int64_t lo = g.s_lo; !err && lo <= last; lo += DAY_SERIES_PASS) {
			if (g.by_series) {
				g.s_lo = lo;
				g.s_hi = last - lo < DAY_SERIES_PASS ? last : lo + DAY_SERIES_PASS - 1;
				sqlite3_bind_int64(q, 5, g.s_lo);
				sqlite3_bind_int64(q, 6, g.s_hi);
			}
			if ((err = gather_window(q, &rd, &g)) || (g.n && (err = rollup_fold(&g))))
				break;
			/* a pass's sum is whole: its row, before the next pass's series */
			if (r.nacc && (err = insert_rollup(r.ins, r.acc, r.nacc, t0, len, r.res)))
				break;
			r.nacc = 0;
			if (!g.by_series)
				break;
		}
	}
	if (err)
		goto out;
	if (len == CP_DAY_NS && !from_hours && g.taken != entries)
		err = cp_error(EBADMSG, "a sample block is corrupt (%" PRId64 " entries where the blocks say %" PRId64
					"): the day is not summarized", g.taken, entries);
	if (!err)
		st->rollups++;
out:
	sqlite3_finalize(q);
	sqlite3_finalize(r.ins);
	cp_block_reader_release(&rd);
	free(g.e);
	free(r.acc);
	free(thin);
	return err;
}

/* The summaries due in partition name (its day starting at day0): the day
 * once it is over, its hours while they are recent; each in a transaction
 * of its own.  How many were made, or -errno. */
static int rollup_day(struct cp_local *s, const char *name, int64_t day0, int64_t now, struct cp_compact_stats *st)
{
	struct {
		int64_t t0, len;
	} due[25];
	char path[PATH_MAX];
	size_t n = 0, i;
	struct cp_part *part;
	sqlite3 *db;
	int err = 0, made = 0;

	cp_part_path(&s->parts, name, path, sizeof(path));
	if (access(path, F_OK) < 0)
		return 0;
	if ((err = cp_parts_open(&s->parts, name, &part)))
		return err;
	db = part->db;
	/* the hours first: a day whose hours are all summarized is summed from them */
	for (int64_t h = day0; h < day0 + CP_DAY_NS && h + CP_HOUR_NS <= now; h += CP_HOUR_NS)
		if (h + CP_HOUR_NS > now - ROLLUP_HOURS_AGE && rollup_due(db, h, CP_HOUR_NS))
			due[n].t0 = h, due[n++].len = CP_HOUR_NS;
	if (day0 + CP_DAY_NS <= now && rollup_due(db, day0, CP_DAY_NS))
		due[n].t0 = day0, due[n++].len = CP_DAY_NS;
	for (i = 0; !err && i < n; i++) {
		if ((err = cp_db_exec(db, "BEGIN IMMEDIATE", "summarizing samples")) ||
		    (err = rollup_period(&part->dict, due[i].t0, due[i].len, st)) ||
		    (err = cp_db_exec(db, "COMMIT", "summarizing samples")))
			break;
		made++;
	}
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	/* hours no longer recent: their day's summary serves */
	if (!err) {
		char cond[128], sql[160];

		snprintf(cond, sizeof(cond), "FROM rollups WHERE step < %" PRId64 " AND t_max < %" PRId64, CP_DAY_NS,
			 now - ROLLUP_HOURS_AGE);
		snprintf(sql, sizeof(sql), "SELECT count(*) %s", cond);
		if (cp_db_count(db, sql)) {
			snprintf(sql, sizeof(sql), "DELETE %s", cond);
			err = cp_db_exec(db, sql, "summarizing samples");
		}
	}
	return err ? cp_error_ctx(err, "summarizing %s", name) : made;
}

