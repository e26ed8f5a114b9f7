/* SPDX-License-Identifier: MIT */
/* Retention over simulated days: every sample of store SRC appended into store DST again and again
 * (cp_store_copy), each time a day later than the one before, as a host whose days are alike would
 * write them; after each day, retention of KEEP as a writer would apply it then (its "now" the
 * day's last time), and the store's size.  Prints "day K: SIZE bytes" per day, then the last day's
 * series, stacks and entries.
 * usage: store_shift SRC DST --days N [--retention DURATION] */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "selector.h"
#include "store/store.h"
#include "util.h"

#define DAY_NS (86400 * (int64_t)1000000000)

int main(int argc, char **argv)
{
	const char *src = NULL, *dst = NULL;
	int64_t keep = DAY_NS, last = INT64_MIN;
	int days = 3, err;
	struct cp_store *in, *out;
	struct cp_store_stats st;
	struct cp_store_query q = { NULL, 0, INT64_MAX - 1, NULL, NULL, false };
	struct cp_store_series *ser = NULL;
	size_t nser = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--days") && i + 1 < argc)
			days = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--retention") && i + 1 < argc && !cp_parse_duration(argv[i + 1], &keep))
			i++;
		else if (!src)
			src = argv[i];
		else if (!dst)
			dst = argv[i];
		else
			src = NULL;
	}
	if (!src || !dst || days < 1) {
		fprintf(stderr, "usage: store_shift SRC DST --days N [--retention DURATION]\n");
		return 2;
	}
	/* the source's last time: its days' ends */
	if (!(in = cp_store_open(src, CP_STORE_READ)) || (err = cp_store_series(in, NULL, &ser, &nser))) {
		fprintf(stderr, "store_shift: %s\n", cp_errmsg(errno));
		return 1;
	}
	for (size_t i = 0; i < nser; i++) {
		struct cp_selector *sel = NULL;
		struct cp_store_result *r = NULL;
		size_t n = 0;

		if (cp_selector_parse(ser[i].type, &sel))
			continue;
		q.sel = sel;
		if (!cp_store_select(in, &q, &r, &n) && n && r[0].profile->time_nanos &&
		    r[0].profile->time_nanos + r[0].profile->duration_nanos > last)
			last = r[0].profile->time_nanos + r[0].profile->duration_nanos;
		cp_store_results_free(r, n);
		cp_selector_free(sel);
	}
	cp_store_series_free(ser, nser);
	cp_store_close(in);
	if (!(out = cp_store_open(dst, CP_STORE_WRITE))) {
		fprintf(stderr, "store_shift: %s\n", cp_errmsg(errno));
		return 1;
	}
	/* the days, the first one `days` days before the source's own (all of them in the past, so that
	 * retention's "now" can be each day's last time) */
	for (int d = 0; d < days; d++) {
		int64_t shift = -(int64_t)(days - d) * DAY_NS;
		uint64_t bytes = 0;

		if ((err = cp_store_copy(src, out, shift)) ||
		    ((err = cp_store_retain(out, keep + (cp_now_ns() - (last + shift)))) < 0)) {
			fprintf(stderr, "store_shift: %s\n", cp_errmsg(-err));
			return 1;
		}
		/* the size at rest: closed, its logs in the files */
		cp_store_close(out);
		if (!(out = cp_store_open(dst, CP_STORE_WRITE))) {
			fprintf(stderr, "store_shift: %s\n", cp_errmsg(errno));
			return 1;
		}
		cp_store_size(out, &bytes);
		printf("day %d: %" PRIu64 " bytes\n", d + 1, bytes);
		if (getenv("STORE_SHIFT_FILES")) {
			char cmd[4200];

			snprintf(cmd, sizeof(cmd), "ls -l '%s' '%s/days' | awk 'NF > 5 { print \"  \" $5, $NF }'", dst, dst);
			if (system(cmd)) {
			}
		}
		fflush(stdout);
	}
	if (!cp_store_stats(out, &st))
		printf("last: %" PRId64 " series, %" PRId64 " stacks, %" PRId64 " entries, %" PRId64 " blocks\n", st.series,
		       st.stacks, st.entries, st.blocks);
	cp_store_close(out);
	return 0;
}
