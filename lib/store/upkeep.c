/* SPDX-License-Identifier: MIT */
#include "store/upkeep.h"

#include <string.h>

#include "error.h"
#include "log.h"
#include "util.h"

#define MINUTE (60 * (int64_t)1000000000)

/* --max-store-size: cp_store_limit, and the line to log about it (a warning,
 * once, when the store stays over the bound). */
static void limit(struct cp_upkeep *u, struct cp_store *s)
{
	int64_t freed = cp_store_limit(s, u->max_size);
	uint64_t size = 0;
	char a[32], b[32];

	if (freed < 0) {
		cp_log(u->verb, CP_LOG_WARN, "--max-store-size: %s", cp_errmsg((int)-freed));
		return;
	}
	if (freed > 0)
		cp_log(u->verb, CP_LOG_INFO, "the store was over --max-store-size %s: deleted its oldest data (%s)",
		       cp_size_str((size_t)u->max_size, a, sizeof(a)), cp_size_str((size_t)freed, b, sizeof(b)));
	/* still over: the newest day's dictionary and series (what its samples use) alone are bigger,
	 * and they cannot shrink by deleting samples; said once */
	if (!u->warned && !cp_store_size(s, &size) && size > u->max_size) {
		u->warned = true;
		cp_log(u->verb, CP_LOG_WARN, "the store takes %s, over --max-store-size %s even with its samples deleted: "
					     "the newest day's dictionary alone is that big; raise the bound",
		       cp_size_str((size_t)size, a, sizeof(a)), cp_size_str((size_t)u->max_size, b, sizeof(b)));
	}
}

/* --downsample: cp_store_compact of one day (a day takes seconds, and a
 * server's writer waits meanwhile), and what it did in the log; 1 when it
 * did one (more may be due) */
static int compact(struct cp_upkeep *u, struct cp_store *s, int64_t now)
{
	struct cp_compact_stats st;
	int n = cp_store_compact(s, &u->downsample, now, 1, &st);

	if (n < 0)
		cp_log(u->verb, CP_LOG_WARN, "downsampling: %s", cp_errmsg(-n));
	else if (n > 0)
		cp_log(u->verb, CP_LOG_INFO, "downsampled %d day%s: %lld blocks of %lld entries into %lld blocks of %lld entries",
		       n, n == 1 ? "" : "s", (long long)st.blocks_before, (long long)st.entries_before,
		       (long long)st.blocks_after, (long long)st.entries_after);
	if (n >= 0 && st.rollups)
		cp_log(u->verb, CP_LOG_DEBUG, "summarized samples: %lld hours or days", (long long)st.rollups);
	return n > 0 || st.rollups > 0;
}

void cp_upkeep_run(struct cp_upkeep *u, struct cp_store *s, int64_t now)
{
	int64_t t = now ? now : cp_now_ns();
	int err;

	if (u->max_size && (!now || !u->last_limit || now - u->last_limit >= MINUTE)) {
		u->last_limit = now;
		limit(u, s);
	}
	if (u->retention && (!now || !u->last_retain || now - u->last_retain >= 60 * MINUTE)) {
		u->last_retain = now;
		if ((err = cp_store_retain(s, u->retention)) < 0)
			cp_log(u->verb, CP_LOG_WARN, "retention: %s", cp_errmsg(-err));
	}
	/* hourly, and every minute while days are due (a day at a time) */
	if (u->downsample.n && (!u->last_compact || t - u->last_compact >= (u->compacting ? MINUTE : 60 * MINUTE))) {
		u->last_compact = t;
		u->compacting = compact(u, s, t);
	}
}

int cp_upkeep_once(const struct cp_upkeep *u, struct cp_store *s, int64_t now, struct cp_upkeep_report *r)
{
	int64_t n;

	memset(r, 0, sizeof(*r));
	if (u->retention) {
		if ((n = cp_store_retain(s, u->retention)) < 0)
			return cp_error_ctx((int)n, "retention");
		r->retained_days = (int)n;
	}
	if (u->max_size) {
		if ((n = cp_store_limit(s, u->max_size)) < 0)
			return cp_error_ctx((int)n, "--max-store-size");
		r->freed = n;
		if ((n = cp_store_size(s, &r->size)) < 0)
			return cp_error_ctx((int)n, "--max-store-size");
	}
	if (u->downsample.n) {
		if ((n = cp_store_compact(s, &u->downsample, now ? now : cp_now_ns(), 0, &r->compact)) < 0)
			return cp_error_ctx((int)n, "downsampling");
		r->compacted_days = (int)n;
	}
	return 0;
}
