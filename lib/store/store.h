/* SPDX-License-Identifier: MIT */
/* The store: every profile that record, scrape, serve or import gets,
 * indexed by time and labels (docs/STORE.md has the on-disk schema).  One
 * interface over two backends (backend.h): the local store described here
 * (lib/store/local.c, opened by cp_store_open) and a server's store over HTTP
 * (lib/store/remote.h, opened by cp_store_open_remote), both opened by URI
 * through lib/store/backends.h; every call below works on either unless it
 * says otherwise.
 *
 * DIR/store.db (SQLite, WAL): the store's schema version and the list of
 * days.  DIR/days/YYYYMMDD.db: one SQLite file per UTC day holding everything
 * that day's samples use: its dictionary (strings, functions, mappings,
 * locations, stacks, label sets), its series (type and program labels) and
 * its compressed sample blocks and hour/day summaries.  Retention and the
 * size limit delete whole files, so a deleted day takes its dictionary and
 * series with it; the size limit then trims the oldest blocks of the oldest
 * day left.  A sample is (series, timestamp, stack, label set, value); a
 * recorded series is a program, its processes' pid a sample label. */
#ifndef CP_STORE_H
#define CP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../labels.h" /* struct cp_kv */
#include "../profile.h"
#include "../selector.h"

struct cp_store;

enum cp_store_mode { CP_STORE_READ, CP_STORE_WRITE };

/* $CPROF_DATA, else /var/lib/cprof for root, else $XDG_DATA_HOME/cprof or
 * ~/.local/share/cprof. */
const char *cp_store_default_dir(char *buf, size_t len);
/* Opens (WRITE: creates) the local store in dir. NULL + errno, message in
 * cp_errmsg(). */
struct cp_store *cp_store_open(const char *dir, enum cp_store_mode mode);
/* Closes a store of either backend; NULL is fine. */
void cp_store_close(struct cp_store *s);


struct cp_store_append {
	const struct cp_profile *profile;
	const char *name;          /* type name; NULL: from the profile (process_cpu, memory, ...) */
	const struct cp_kv *labels; /* series labels */
	size_t nlabels;
	int64_t time_ns;           /* 0: the profile's time_nanos, else now */
	/* NULL: every sample of profile; else only these nsel (indices into its
	 * samples).  Appends that share one profile (the recorder's processes)
	 * each take their part, and its dictionary is merged once. */
	const uint32_t *sel;
	size_t nsel;
	/* the whole profile type to store it as (a copy from another store); NULL: name and the
	 * profile's sample types, one series each */
	const char *type;
	int64_t end_ns; /* when what the profile counts ended; 0: time + its duration */
};

/* The sample times the store takes (ns): from 1970 (a query can reach earlier
 * ones, the store keeps none) up to the last a query's exclusive end (at most
 * INT64_MAX) reaches. */
#define CP_STORE_TIME_MIN 0
#define CP_STORE_TIME_MAX (INT64_MAX - 1)

/* Every sample of the local store at src (this cprof's, or one of schema 2, read as it is) appended
 * to dst, as they were (series, labels, times, stacks; a schema 2 store's pid moved to its samples,
 * as a conversion does), each time moved by shift (ns; 0: none): the samples of a series at a time,
 * one profile, a block of src at a time, one batch.  0 or -errno with the message recorded. */
int cp_store_copy(const char *src, struct cp_store *dst, int64_t shift);

/* Appends profiles as one batch: each sample type of each profile is its own
 * series.  All or nothing: the dictionary and series go in one transaction,
 * the samples in one block per UTC day, each in a transaction left open until
 * every day's is written, then committed in turn; a failure before the last
 * commit stores no sample of the batch (a commit that fails after others took,
 * e.g. a disk filling up in between, deletes their blocks again; only when
 * that fails too is part of the batch left, and the error says so).  What
 * such a failure leaves are unused dictionary entries and series.  A time
 * (time_ns, else the profile's) outside [CP_STORE_TIME_MIN, CP_STORE_TIME_MAX]
 * is refused: -EINVAL.  Sums of values saturate at INT64_MIN / INT64_MAX.
 *
 * Returns 0 when the batch is stored, -errno (message in cp_errmsg) when it
 * failed, or CP_STORE_SPOOLED (> 0, only from a server's store opened with a
 * spool): the batch is taken, but the server did not answer, so some of its
 * profiles wait in the spool to be sent by a later append or
 * cp_store_flush; `err < 0` tests for failure. */
#define CP_STORE_SPOOLED 1
int cp_store_append(struct cp_store *s, const struct cp_store_append *a, size_t n);
/* Deletes partitions entirely older than now - keep_ns. Returns how many. */
int cp_store_retain(struct cp_store *s, int64_t keep_ns);
/* Keeps the store's files under max_bytes: deletes the oldest data first,
 * whole days (partitions) while more than one is left, then the oldest
 * blocks of the oldest day left.  Returns the bytes freed (>= 0) or -errno.
 *
 * A day goes whole only when all of it has to go, and the newest (where
 * appends go) never does: it loses its oldest blocks at most.  The size is
 * cp_store_size()'s; "freed" is how much it went down.  What
 * costs no data goes first: partition files that no row lists (a crash
 * between a deletion's commit and its unlink), the WAL of store.db, the free
 * pages and WAL of the day being trimmed.  store.db holds no samples and
 * stays a few pages; a day's dictionary and series go with its file.  When
 * the newest day alone is over max_bytes, it loses all its blocks (its file
 * with its dictionary stays) and the store is still over the bound: the
 * caller compares cp_store_size() with max_bytes afterwards to warn about it.
 * A reader (another process) on an old snapshot can keep a
 * WAL from being truncated for a while: the call then stops short of the
 * bound rather than delete more data for it, and a later call goes on.
 * -EPERM on a store opened read-only, -EOPNOTSUPP on a remote one (the
 * server applies its own limit). */
int64_t cp_store_limit(struct cp_store *s, uint64_t max_bytes);
/* Downsampling: which resolution the samples of a day are kept at, by the
 * age of the day's newest sample (now - its t_max).  Tier i keeps data at
 * step[i] (ns; 0: raw, as written) while the age is under keep[i]; the last
 * tier's keep is 0: for ever (until --retention).  Steps grow from tier to
 * tier and divide a day; keeps grow too.  n = 0: off. */
#define CP_DOWNSAMPLE_MAX 4
/* A partition's day and a summary's hour (compact.h), in ns */
#define CP_DAY_NS (86400 * (int64_t)1000000000)
#define CP_HOUR_NS (3600 * (int64_t)1000000000)
/* raw for 2 days, 5m until 10 days, then 1h: the steps and ages of Thanos' compactor (raw, 5m
 * after 40 hours, 1h after 10 days) */
#define CP_DOWNSAMPLE_DEFAULT "raw=2d,5m=10d,1h"
struct cp_downsample {
	size_t n;
	int64_t step[CP_DOWNSAMPLE_MAX], keep[CP_DOWNSAMPLE_MAX];
};
/* "off", or tiers "STEP=AGE,...,STEP" (STEP "raw" or a duration that divides
 * a day, e.g. "raw=2d,5m=10d,1h"): 0, or -EINVAL with the message. */
int cp_downsample_parse(const char *text, struct cp_downsample *p);
/* The policy as cp_downsample_parse reads it back ("off" for none). */
const char *cp_downsample_text(const struct cp_downsample *p, char *buf, size_t len);
/* The step (ns, 0: raw) a day whose newest sample is age ns old is kept at. */
int64_t cp_downsample_step(const struct cp_downsample *p, int64_t age);
/* A resolution for people: "raw" for 0, else a duration ("1m", "10m"). */
const char *cp_resolution_text(int64_t step, char *buf, size_t len);

struct cp_compact_stats {
	int64_t days, blocks_before, blocks_after, entries_before, entries_after;
	int64_t rollups; /* summaries made (of an hour or a day) */
};
/* Downsamples the days older than the policy's raw tier, at now (ns): each
 * day due for a coarser step than some of its blocks have gets those blocks'
 * entries summed per series, stack, label set and step-aligned time (the
 * time rounded down to a multiple of the step) into new blocks of that step,
 * in one transaction on that day's file (the old blocks or the new, never
 * both), then its free pages go back to the file system.  Totals stay exact.
 * At most max_days days are done (0: all; the oldest due first), so that a
 * writer's upkeep does a day at a time between its batches.  Then, as many
 * days again, the summaries due (docs/STORE.md "Summaries": of every day that
 * is over, of every hour over and less than 2 days old), counted in
 * st->rollups; queries read them for the whole days and hours of their range.
 * st (may be NULL) says what was done.  Returns how many days were compacted
 * or -errno (a day that fails, e.g. with a corrupt block, leaves it as it was
 * and the other days are still done; the last failure is returned); -EPERM on a store opened read-only, -EOPNOTSUPP on a remote one
 * (the server downsamples its own). */
int cp_store_compact(struct cp_store *s, const struct cp_downsample *p, int64_t now, int max_days,
		     struct cp_compact_stats *st);

/* The store's size on disk in bytes (every file: store.db, the days, WAL):
 * the sizes of DIR/store.db and DIR/days/YYYYMMDD.db with their -wal and -shm
 * files.  For a remote store, the server's figure. */
int cp_store_size(struct cp_store *s, uint64_t *bytes);

/* The profile type name cprof gives a profile without --name:
 * name:sample_type:sample_unit:period_type:period_unit[:delta] for value vidx. */
int cp_store_type_name(const struct cp_profile *p, int vidx, const char *name, char *buf, size_t len);

/* Component index (0 name, 1 sample type, 2 sample unit, 3 period type, 4
 * period unit) of a type name, into buf ("" when missing). */
const char *cp_store_type_part(const char *type, int index, char *buf, size_t len);

struct cp_store_series {
	int64_t id;
	char *type;
	size_t nlabels;
	char **names, **values; /* sorted by name */
	/* the selector's matchers of labels this series lacks, left to its samples' labels (pid,
	 * thread_id, state: cp_selector_match_series); 0: none */
	uint64_t deferred;
};
/* Series matching sel (NULL: all), sorted by type then labels. */
int cp_store_series(struct cp_store *s, const struct cp_selector *sel, struct cp_store_series **out, size_t *n);
/* The same, of the data in [from, to] (ns): the series of the days (UTC) that overlap it, as a local
 * store keeps its series by day (a series of such a day may have no sample in the range itself). */
int cp_store_series_in(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
		       struct cp_store_series **out, size_t *n);
void cp_store_series_free(struct cp_store_series *ser, size_t n);

enum cp_store_list { CP_LIST_TYPES, CP_LIST_LABELS, CP_LIST_VALUES };
/* The distinct types, label names, or values of label among series, sorted;
 * *items (malloc'ed) point into ser. */
int cp_store_distinct(const struct cp_store_series *ser, size_t n, enum cp_store_list what, const char *label,
		      const char ***items, size_t *nitems);

/* The values a label has in the samples of the matching series over [from, to) (a sample label, such
 * as an off-CPU wait's state, which no series carries), sorted, each once (a sample without it is
 * left out); *values and its strings are malloc'ed (cp_store_values_free).  Errors as
 * cp_store_select's. */
int cp_store_sample_values(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
			   const char *label, char ***values, size_t *n);
void cp_store_values_free(char **values, size_t n);

struct cp_store_query {
	const struct cp_selector *sel;
	int64_t from, to;     /* nanoseconds: [from, to) */
	const char *group_by; /* NULL: one profile */
	int64_t *resolution;  /* out, when not NULL: the coarsest step (ns) of the
			       * blocks read, 0 raw (downsampling); the local
			       * store sets it, a remote one leaves it */
	bool process_labels;  /* cp_store_select: keep the samples' pid, thread_id and
			       * thread_name (top's processes and threads); else they
			       * are dropped, and the samples of a program's processes
			       * merge, as before a series per program (dict.h) */
};

struct cp_store_result {
	char *group;          /* the group_by label's value ("" when missing) */
	struct cp_profile *profile;
};
/* Merge every matching sample into one profile per group.  The selector
 * must resolve to one profile type (an error lists them otherwise).  No
 * matching series is an error; no samples in the range gives empty profiles. */
int cp_store_select(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n);
void cp_store_results_free(struct cp_store_result *r, size_t n);

/* Total value per bucket for the matching series (one type): the buckets
 * of step (raised to a multiple of the coarsest resolution of the blocks in
 * the range, which q->resolution gets: a step finer than the data would show
 * empty buckets between full ones) over [from, to] aligned to multiples of the step (cp_buckets_align),
 * whole, so that the same data gives the same totals whatever "now" is.
 * *totals has b->n entries. */
int cp_store_over_time(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
		       struct cp_buckets *b, char **type);

/* cp_store_over_time's answer as query --over-time and the server's
 * /api/v1/range show it (lib/render cp_render_over_time*): the type, its unit,
 * the buckets [from, to) of step, the resolution read.  Its strings and totals
 * are its own (cp_over_time_release). */
struct cp_over_time {
	const char *type, *unit;
	int64_t from, to, step; /* nanoseconds; [from, to) */
	const char *resolution; /* the store's resolution of the range ("1m", "10m"; NULL: none said) */
	const int64_t *totals;
	size_t n;
	/* what the pointers above point into */
	char *type_buf;
	int64_t *totals_buf;
	char unit_buf[128], res_buf[32];
};
/* The one builder of it: cp_store_over_time of q at step (0: the range's
 * default step, cp_buckets_default_step), into *ot.  Errors as
 * cp_store_over_time's; *ot is then empty. */
int cp_store_over_time_build(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			     struct cp_over_time *ot);
void cp_over_time_release(struct cp_over_time *ot);

/* Totals over time per group of the matching samples (q->group_by: the
 * value of a series label, else of the samples' label, "" when neither has
 * it; without group_by, one group ""): cp_store_over_time's buckets and
 * totals, a row for each group, named as cp_store_select names its groups.
 * Groups without samples in the buckets may be there (all zero).  Errors as
 * cp_store_over_time's.  Free with cp_store_group_totals_free. */
struct cp_store_group_totals {
	char *group;
	int64_t *totals; /* b->n */
};
int cp_store_over_time_groups(struct cp_store *s, const struct cp_store_query *q, int64_t step,
			      struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b);
void cp_store_group_totals_free(struct cp_store_group_totals *g, size_t n);

/* The intervals `cprof diff` tests a stored selection over (docs/DIFF.md):
 * steps of at least CP_STORE_INTERVAL_STEP (the recorder flushes a profile
 * per process every 10 s, so a step holds whole flushes), at most
 * CP_STORE_INTERVALS_MAX of them. */
#define CP_STORE_INTERVAL_STEP (10 * (int64_t)1000000000)
#define CP_STORE_INTERVALS_MAX 200

struct cp_store_intervals {
	char *group;            /* the group_by value ("" when missing, and without group_by) */
	struct cp_profile **iv; /* iv[0..n): the steps that hold samples, in time order */
	size_t n;
	int64_t step;
};
/* The matching samples as one profile per interval of time, per group
 * (q->group_by, as cp_store_over_time_groups; without it, one), for tests of
 * significance (`cprof diff`, `cprof diff --baseline`): the span of [from,
 * to) that holds a group's samples (found in buckets of a thousandth of the
 * range, at least min_step) is cut into at most max_intervals steps, a
 * multiple of min_step (both > 0), aligned to multiples of the step; each
 * step that holds samples is a profile.  Each group is cut by its own span,
 * as a selection of that group alone is: a group gets the same intervals
 * whatever else the selector matches.  Groups without samples in the range
 * are left out (none: *n = 0).  A pass over the range to find the spans,
 * then a selection per piece of it between two groups' step boundaries.
 * Errors as cp_store_select's.  Free with cp_store_intervals_free. */
int cp_store_select_intervals(struct cp_store *s, const struct cp_store_query *q, int64_t min_step,
			      size_t max_intervals, struct cp_store_intervals **out, size_t *n);
void cp_store_intervals_free(struct cp_store_intervals *g, size_t n);

/* The bytes of memory the handle holds for what it wrote and read: the
 * dictionary (as a writer keeps all of it, to find what is there already)
 * and the series ids it caches; 0 for a server's store. */
size_t cp_store_memory(struct cp_store *s);

/* What a store whose appends wait to be sent does (a server's, with its spool: lib/http/push.h),
 * and nothing for one that writes them at once (the local store: backend.h's optional operations).
 * cp_store_flush sends what waits (unless now, only once the back-off after a failure has passed):
 * 0 when nothing waits, CP_STORE_SPOOLED when some still does, -errno.  cp_store_pending: whether
 * appends wait to be sent at all, and the figures of what was sent, spooled, dropped and is pending
 * (zeros before the first append).  cp_store_push_error: why the last push did not go through, or
 * NULL.  cp_store_location: the store's URL, NULL for the local store. */
struct cp_pusher_stats;
int cp_store_flush(struct cp_store *s, bool now);
bool cp_store_pending(struct cp_store *s, struct cp_pusher_stats *st);
const char *cp_store_push_error(struct cp_store *s);
const char *cp_store_location(const struct cp_store *s);
/* Does the store downsample its own days (cp_store_compact)?  A server's does that itself. */
bool cp_store_downsamples(const struct cp_store *s);
/* A writer that runs for long (record): past bytes (0: no limit, the
 * default), the handle forgets the dictionary it keeps after an append, and
 * adds what comes next anew, equal entries included (lib/store/dict.h): its
 * memory stays near bytes where processes come and go, and the store's
 * dictionary repeats what the writer's working set was at each forget.  A
 * query on the handle loads the dictionary whole again.  No-op for a
 * server's store. */
void cp_store_limit_memory(struct cp_store *s, size_t bytes);

/* Figures for `query --stats` and benchmarks. */
struct cp_store_stats {
	int64_t series, stacks, locations, functions, blocks, entries, samples, bytes;
};
int cp_store_stats(struct cp_store *s, struct cp_store_stats *st);

/* The times (ns) of the oldest and the newest sample the store keeps, at
 * the resolution of its days' bounds (a downsampled day's start may be
 * rounded down to its step): cheap, for "is there data, and since when".
 * 0 with both 0 when it holds none; -EOPNOTSUPP when the backend cannot
 * tell (a server's store). */
int cp_store_extent(struct cp_store *s, int64_t *oldest, int64_t *newest);

#endif
