/* SPDX-License-Identifier: MIT */
/* The view model of cprof top, apart from any screen: where the numbers come
 * from (a live ring of per-refresh profiles covering a window of time, or one
 * time window of stored history), their aggregation (aggregate.h), and the
 * rows shown: the view (functions, processes, threads, or the callers and
 * callees of one function), the row filter, the sort, the zoom into a
 * process, thread or function, and the selected row.  cmd/top.c draws it
 * with ncurses and changes it on keys; text.h prints it for --stdio.
 *
 * Ownership: a view owns its aggregation, rows, ring of profiles (each given
 * to cp_view_live_add), history results and selector; the store given to
 * cp_view_history_open is borrowed and must outlive the view.  Read the
 * fields freely; change them through the calls, which keep the rows in step.
 * Errors: 0 or -errno with a message in cp_errmsg() (-ENOMEM "out of memory",
 * -EINVAL a bad filter, the store's errors); a view is left usable after one.
 * A view is used by one thread. */
#ifndef CP_VIEW_VIEW_H
#define CP_VIEW_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../profile.h"
#include "../regex.h"
#include "../selector.h"
#include "../store/store.h"
#include "aggregate.h"

enum cp_view_kind { CP_VIEW_FUNCTIONS, CP_VIEW_PROCESSES, CP_VIEW_THREADS, CP_VIEW_CALLERS, CP_VIEW_COUNT };
enum cp_view_sort { CP_SORT_SELF, CP_SORT_TOTAL, CP_SORT_NAME, CP_SORT_COUNT };
/* "functions", "processes", "threads", "callers"; "self", "total", "name" */
extern const char *const cp_view_kind_names[CP_VIEW_COUNT];
extern const char *const cp_view_sort_names[CP_SORT_COUNT];

/* In the callers view, what a row is (sorted in this order); 0 elsewhere. */
enum { CP_ROW_CALLER = 0, CP_ROW_CALLEE = 1, CP_ROW_FOCUS = 2 };

struct cp_view_row {
	uint8_t kind;
	uint32_t idx; /* into agg->fns / procs / threads / callers / callees (by view and kind) */
};

#define CP_VIEW_RATES 512

struct cp_view {
	/* what is shown */
	enum cp_view_kind kind, back; /* back: where Esc leaves the callers view for */
	enum cp_view_sort sort;
	bool no_kernel, no_user;
	uint32_t zoom_pid, zoom_tid;            /* 0: none */
	char zoom_what[96];                     /* "process comm[pid]", "thread name[tid]" or "" */
	char focus_name[512], focus_bin[256];   /* the callers view's function ("": none) */
	char function[512];                     /* the function asked for (cp_view_pick_focus) */
	char filter[256];                       /* the row filter's text ("": none) */
	bool re_costly;                         /* the filter reached a limit on the last rows: it matched nothing */
	/* what is shown, built from the data */
	struct cp_aggregate *agg;               /* NULL before the first refresh */
	struct cp_view_row *rows;
	size_t nrows, rowcap;
	long sel;                               /* the selected row (0 when there is none) */
	/* live: the ring of the last profiles, and the rate of each refresh */
	bool paused;                            /* cp_view_live_add drops what it is given */
	struct cp_profile **ring;
	size_t nring, ringcap;
	double rates[CP_VIEW_RATES];            /* samples/s per refresh; the last nrates (mod CP_VIEW_RATES) */
	size_t nrates;
	int64_t last_interval;                  /* ns the last refresh's interval lasted */
	uint64_t last_samples;                  /* its samples */
	/* history: the time windows of the store */
	bool history;
	struct cp_store *store;                 /* borrowed */
	struct cp_selector *selector;
	int64_t from, window;                   /* the first window's start; their length (ns) */
	size_t nwin, win;                       /* how many windows; the one shown */
	int64_t *totals;                        /* the total of each window */
	struct cp_store_result *res;            /* the window's profiles, one per group */
	size_t nres;
	/* the window's groups: by comm, their processes told apart by their samples' pid (a series per
	 * program, as cprof record makes them); by pid when a sample has none (series that carry pid: a
	 * series per process, as record made them before, or imported with -l pid=), named by comms */
	bool by_pid;
	bool pid_series;                        /* some series carry pid */
	struct cp_view_comm { uint32_t pid; char *comm; } *comms; /* the series' labels', then the window's */
	size_t ncomms, ncomms_series, comms_cap;
	char unit[64];                          /* the sample unit of the stored type, or of value */
	char value[16];                         /* live: the sample type shown ("": the first, samples) */
	/* private */
	struct cp_regex *re;
	struct cp_regex_run *rerun;
	enum cp_view_kind rows_kind;            /* the view the rows were built for */
};

/* A view of functions sorted by self.  NULL (errno ENOMEM) when out of memory. */
struct cp_view *cp_view_new(void);
void cp_view_free(struct cp_view *v);

/* Parses a view or sort name: its enum value, or -1. */
int cp_view_kind_parse(const char *name);
int cp_view_sort_parse(const char *name);

/* The row filter: rows whose name (or binary, pid, thread, command) matches
 * the PCRE2 regex re, caseless unless re has a capital letter; "" for none.
 * Rebuilds the rows.  -EINVAL ("bad filter 're': why at offset N"): the filter
 * stays as it was. */
int cp_view_set_filter(struct cp_view *v, const char *re);
/* Aggregates the data again (again) or only rebuilds the rows (after the
 * view, sort or filter changed), keeping the selected row when it is still
 * there (clamped to the rows otherwise). */
int cp_view_refresh(struct cp_view *v, bool again);
/* Shows another view (the rows of the same aggregation).  CP_VIEW_CALLERS
 * shows the callers and callees of the selected function, or from processes
 * or threads of the function with the most self: 1 (nothing changed) when
 * there is no function. */
int cp_view_set_kind(struct cp_view *v, enum cp_view_kind kind);
int cp_view_set_sort(struct cp_view *v, enum cp_view_sort sort);
/* Leaves kernel or user frames out, and aggregates again (not both: with
 * no_kernel, no_user is taken as false). */
int cp_view_set_frames(struct cp_view *v, bool no_kernel, bool no_user);
/* Moves the selection to row (clamped). */
void cp_view_select(struct cp_view *v, long row);
/* The function index (into agg->fns) a row stands for, or -1 (a process or thread). */
int64_t cp_view_row_fn(const struct cp_view *v, const struct cp_view_row *r);
/* Zoom into the selected row: a process's or thread's functions, a
 * function's callers and callees, or follow a caller or callee.  Out: back
 * from the callers view, then out of a process or thread.  1 when there is
 * nothing to zoom into or out of. */
int cp_view_zoom_in(struct cp_view *v);
int cp_view_zoom_out(struct cp_view *v);
/* For the callers view: the function named function (exactly, the one with
 * the most total; else the one whose name contains it with the most total),
 * or with function NULL the one with the most self, among all the data (the
 * view aggregated without a focus).  No such function leaves focus_name "".
 * Then (in any view) aggregates again and rebuilds the rows. */
int cp_view_pick_focus(struct cp_view *v, const char *function);
/* Live: the refresh interval after delay on the ladder 250ms, 500ms, 1s, 2s,
 * 3s, 5s, 10s: dir > 0 the next longer one, else the next shorter one. */
int64_t cp_view_next_delay(int64_t delay, int dir);

/* Live: p (taken over, freed on error too) is the profile of the last
 * interval_ns; it counts in rates, and unless paused joins the ring, which
 * then keeps the last `keep` profiles (at least one); the data is aggregated
 * again. */
int cp_view_live_add(struct cp_view *v, struct cp_profile *p, int64_t interval_ns, size_t keep);
/* Live: which of the profiles' sample types is shown: "samples" (the
 * first), "offcpu" or "wall" (record --off-cpu's, in nanoseconds), and
 * aggregates again.  -EINVAL when the profiles have no such type (the view
 * stays as it was). */
int cp_view_set_value(struct cp_view *v, const char *type);
/* Live: empties the ring (the window starts afresh) and aggregates again. */
int cp_view_live_clear(struct cp_view *v);

/* History: the profiles of type (a selector's text, NULL: "cpu") in store,
 * with pid one of pids when npids, over [from, to), cut into windows of
 * window ns (0: a 60th of the range, at least 10 s) aligned as every time
 * bucket is (cp_buckets_align); loads the newest window with data and
 * aggregates it.  A selector matching no series is an error of the store. */
int cp_view_history_open(struct cp_view *v, struct cp_store *store, const char *type, const uint32_t *pids,
			 size_t npids, int64_t from, int64_t to, int64_t window);
/* History: shows window win + dir (dir -1 or 1).  1 at the first or last
 * window (nothing changed). */
int cp_view_history_step(struct cp_view *v, int dir);

#endif
