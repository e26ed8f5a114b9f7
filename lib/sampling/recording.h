/* SPDX-License-Identifier: MIT */
/* A recording into a store (cprof record without -o): every flush interval
 * the recorder's per-process profiles become the store's series
 * (cp_recorder_series: the series-label policy), the store's upkeep
 * (--retention, --max-store-size) runs, and, for a server's store, what
 * happened to the pushes (spooled, sent again, dropped, refused) is logged.
 * The caller owns the recorder and the store, and drives the loop. */
#ifndef CP_RECORDING_H
#define CP_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../http/push.h"
#include "recorder.h"
#include "../store/store.h"
#include "../store/upkeep.h"

struct cp_recording {
	/* set by the caller before cp_recording_start; not owned */
	struct cp_recorder *rec;     /* for_store */
	struct cp_store *store;      /* the local store or a server's */
	const char *verb;            /* log lines' prefix ("record") */
	const char *node;            /* the node label */
	const struct cp_kv *labels;  /* -l: over the recorder's labels */
	size_t nlabels;
	int64_t retention;           /* ns of data to keep; 0: all (a local store) */
	uint64_t max_store_size;     /* bytes; 0: no bound (a local store) */
	uint64_t max_memory;         /* --max-memory: a sixteenth for the store's dictionary (a local store) */
	struct cp_downsample downsample; /* n = 0: none (a local store) */
	const char *spool;           /* a server's store: the spool, for messages */
	size_t spool_size;
	/* state */
	int64_t interval_start;      /* wall clock ns: where the next flush's interval starts */
	struct cp_pusher_stats pushed; /* as last reported */
	bool spooling;               /* the server did not take the last push */
	struct cp_upkeep upkeep;
};

/* Before sampling starts: a server's store takes its spool now and sends
 * what a previous run left there (logged).  The caller then sets
 * interval_start, where the first interval starts.  0 or -errno with a
 * message (the spool cannot be read). */
int cp_recording_start(struct cp_recording *g);
/* How long the sampling loop waits for samples at now (CLOCK_MONOTONIC ns):
 * 100 ms when it watches a command or processes (to see them end), else up
 * to a second, or until the next flush or the deadline (0: none); the ring
 * wakes it sooner when it fills. */
int cp_recording_wait_ms(int64_t now, int64_t deadline, int64_t next_flush, bool watching);
/* Writes the interval from the last flush to now_wall, then resets the
 * recorder.  A push the server refused for this interval only (a bad body,
 * too large, the spool full) is logged and passes; 0, or -errno with a
 * message for what ends the recording (the token, not a cprof server, a
 * local store that cannot be written, out of memory). */
int cp_recording_flush(struct cp_recording *g, int64_t now_wall);
/* At the end, after the last flush: a server's store sends its spool once
 * more; what it still cannot take stays for the next run (a warning says
 * how much).  0 or -errno with a message. */
int cp_recording_end(struct cp_recording *g);
/* The run's one-line summary at info level (g->rec's counts over ns, then
 * where it went: remote, else the store data, else output or standard
 * output), logged as g->verb. */
void cp_recording_log_summary(struct cp_recording *g, int64_t ns, const char *remote, const char *data,
			      const char *output);
/* For the summary line: " [pushes: sent ...]" with the push figures. */
void cp_recording_push_figures(const struct cp_recording *g, FILE *out);

#endif
