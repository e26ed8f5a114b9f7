/* SPDX-License-Identifier: MIT */
/* A recording into a store: see recording.h. */
#include "recording.h"

#include <errno.h>
#include <malloc.h>
#include <time.h>

#include "../error.h"
#include "../log.h"
#include "../util.h"

/* Say what happened to the pushes since the last report: the server stopped
 * answering (they are spooled), answers again (the spool is sent), the spool
 * dropped or the server refused some. */
static void report_push(struct cp_recording *g)
{
	struct cp_pusher_stats st;
	const char *why = cp_store_push_error(g->store);
	char sz[32];

	if (!cp_store_pending(g->store, &st))
		return; /* appends are written when made */
	if (st.spooled > g->pushed.spooled && !g->spooling)
		cp_log(g->verb, CP_LOG_WARN, "%s; keeping the profiles in %s and retrying",
		       why ? why : "the server did not take the profiles", g->spool);
	if (st.pending)
		g->spooling = true;
	if (st.dropped > g->pushed.dropped)
		cp_log(g->verb, CP_LOG_WARN, "the spool is full (--spool-size %s): dropped %llu of the oldest "
					    "profiles (%llu so far)",
		       cp_size_str(g->spool_size, sz, sizeof(sz)), (unsigned long long)(st.dropped - g->pushed.dropped),
		       (unsigned long long)st.dropped);
	if (st.rejected > g->pushed.rejected || st.corrupt > g->pushed.corrupt)
		cp_log(g->verb, CP_LOG_WARN, "%s", why ? why : "dropped spooled profiles");
	if (g->spooling && !st.pending) {
		if (st.resent > g->pushed.resent)
			cp_log(g->verb, CP_LOG_INFO, "%s answers again: the spooled profiles are sent",
			       cp_store_location(g->store));
		g->spooling = false;
	}
	g->pushed = st;
}

/* A push the server refused for this interval only (a bad body, too large,
 * the spool full): warn and go on.  Others (the token, not a cprof server,
 * out of memory) end the recording. */
static bool push_error_passes(int err)
{
	return err == -EINVAL || err == -EFBIG || err == -ENOSPC || err == -EDQUOT || err == -EIO;
}

int cp_recording_start(struct cp_recording *g)
{
	int err;

	g->upkeep.verb = g->verb; /* after every flush, not on a schedule */
	g->upkeep.retention = g->retention;
	g->upkeep.max_size = g->max_store_size;
	if (cp_store_downsamples(g->store))
		g->upkeep.downsample = g->downsample;
	/* the dictionary a writer keeps grows with every process; the rest of the budget is the
	 * recorder's caches' (nothing for a store that keeps no dictionary) */
	cp_store_limit_memory(g->store, (size_t)(g->max_memory / 16));
	/* a server's: takes the spool, and sends what a previous run left there */
	if ((err = cp_store_flush(g->store, true)) < 0)
		return err;
	report_push(g);
	if (g->pushed.resent)
		cp_log(g->verb, CP_LOG_INFO, "sent %llu profiles a previous run left in %s",
		       (unsigned long long)g->pushed.resent, g->spool);
	return 0;
}

/* this thread's CPU time (ns) */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) ? 0 : (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int cp_recording_flush(struct cp_recording *g, int64_t now_wall)
{
	struct cp_recorder_series c;
	struct cp_pusher_stats ps;
	bool pushes = cp_store_pending(g->store, &ps); /* appends wait to be sent: a server's store */
	int64_t cpu0 = cp_log_enabled(CP_LOG_DEBUG) ? thread_cpu_ns() : 0;
	int err = cp_recorder_series(g->rec, g->node, g->labels, g->nlabels, g->interval_start, now_wall, &c);

	if (err)
		goto out;
	if (c.n && (err = cp_store_append(g->store, c.a, c.n)) < 0) {
		if (!pushes || !push_error_passes(err))
			goto out;
		cp_log(g->verb, CP_LOG_WARN, "%s: the profiles of this interval are lost", cp_errmsg(err));
		err = 0;
	}
	if (pushes && !c.n && g->pushed.pending &&
	    (err = cp_store_flush(g->store, false)) < 0) /* nothing new: the spool still goes */
		goto out;
	err = 0;
	report_push(g);
	cp_upkeep_run(&g->upkeep, g->store, 0);
	cp_recorder_reset(g->rec);
	if (cp_log_enabled(CP_LOG_DEBUG)) {
		struct mallinfo2 mi = mallinfo2();

		cp_log(g->verb, CP_LOG_DEBUG, "flush: %zu batches, %zu processes, %.1f ms of CPU, heap in use %zu KiB "
					     "(arena %zu KiB, mmapped %zu KiB), store handle %zu KiB, CFI rules read %llu",
		       c.n, cp_recorder_nprocs(g->rec), (double)(thread_cpu_ns() - cpu0) / 1e6, mi.uordblks >> 10,
		       mi.arena >> 10, mi.hblkhd >> 10, cp_store_memory(g->store) >> 10,
		       (unsigned long long)cp_recorder_unwind_rules(g->rec));
	}
out:
	cp_recorder_series_release(&c);
	g->interval_start = now_wall;
	return err;
}

int cp_recording_wait_ms(int64_t now, int64_t deadline, int64_t next_flush, bool watching)
{
	int64_t ms = watching ? 100 : 1000;

	if (deadline && (deadline - now) / 1000000 + 1 < ms)
		ms = (deadline - now) / 1000000 + 1;
	if (next_flush && (next_flush - now) / 1000000 + 1 < ms)
		ms = (next_flush - now) / 1000000 + 1;
	return ms > 0 ? (int)ms : 0;
}

void cp_recording_log_summary(struct cp_recording *g, int64_t ns, const char *remote, const char *data,
			      const char *output)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m;

	if (!cp_log_enabled(CP_LOG_INFO) || !(m = open_memstream(&line, &len)))
		return;
	cp_recorder_summary(g->rec, m, ns);
	if (remote) {
		if (cp_log_enabled(CP_LOG_DEBUG))
			cp_recording_push_figures(g, m);
		fprintf(m, " -> %s (cprof query --remote %s cpu)", remote, remote);
	} else if (data) {
		fprintf(m, " -> %s (cprof query --data %s cpu)", data, data);
	} else {
		fprintf(m, " -> %s", output ? output : "standard output");
	}
	fclose(m);
	cp_log(g->verb, CP_LOG_INFO, "%s", line ? line : "");
	free(line);
}

int cp_recording_end(struct cp_recording *g)
{
	char sz[32];
	int err;

	/* once more what the server could not take: what it still cannot
	 * stays for the next run (nothing waits in a local store) */
	err = cp_store_flush(g->store, true);
	report_push(g);
	if (err == CP_STORE_SPOOLED)
		cp_log(g->verb, CP_LOG_WARN, "%s; %llu profiles (%s) stay in %s for the next cprof record --remote to send",
		       cp_store_push_error(g->store) ? cp_store_push_error(g->store) : "the server does not answer",
		       (unsigned long long)g->pushed.pending,
		       cp_size_str((size_t)g->pushed.pending_bytes, sz, sizeof(sz)), g->spool);
	return err < 0 ? err : 0;
}

void cp_recording_push_figures(const struct cp_recording *g, FILE *out)
{
	const struct cp_pusher_stats *ps = &g->pushed;

	fprintf(out, " [pushes: sent %llu (%llu from the spool), spooled %llu, dropped %llu, refused %llu, pending %llu]",
		(unsigned long long)ps->sent, (unsigned long long)ps->resent, (unsigned long long)ps->spooled,
		(unsigned long long)ps->dropped, (unsigned long long)ps->rejected, (unsigned long long)ps->pending);
}
