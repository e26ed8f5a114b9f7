/* SPDX-License-Identifier: MIT */
/* Times merging every stored sample of a selector into one profile, the
 * way a store query does: open the store, cp_store_select over all time,
 * close; best of RUNS.  Prints the time, the profile's total of its first
 * sample type and its sample count; with -o, writes it as gzipped pprof.
 * usage: store_query STOREDIR [SELECTOR [RUNS [-o OUT]]] */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "pprof.h"
#include "profile.h"
#include "selector.h"
#include "store/store.h"
#include "util.h"

static double now_ms(void)
{
	return (double)cp_mono_ns() / 1e6;
}

int main(int argc, char **argv)
{
	const char *selstr = argc > 2 ? argv[2] : "cpu:cpu", *out = NULL;
	int runs = argc > 3 ? atoi(argv[3]) : 3, r, err;
	struct cp_selector *sel = NULL;
	double best = -1;
	int64_t total = 0;
	uint32_t nsamples = 0;

	if (argc == 6 && !strcmp(argv[4], "-o"))
		out = argv[5];
	if (argc < 2 || (argc > 4 && !out) || runs < 1) {
		fprintf(stderr, "usage: store_query STOREDIR [SELECTOR [RUNS [-o OUT]]]\n");
		return 2;
	}
	if ((err = cp_selector_parse(selstr, &sel))) {
		fprintf(stderr, "store_query: %s\n", cp_errmsg(-err));
		return 2;
	}
	for (r = 0; r < runs; r++) {
		struct cp_store_query q = { sel, 0, INT64_MAX, NULL, NULL, false };
		struct cp_store_result *res = NULL;
		size_t n = 0;
		double t0 = now_ms(), t;
		struct cp_store *s = cp_store_open(argv[1], CP_STORE_READ);

		if (!s) {
			fprintf(stderr, "store_query: %s\n", cp_errmsg(errno));
			return 1;
		}
		if ((err = cp_store_select(s, &q, &res, &n)) || n != 1) {
			fprintf(stderr, "store_query: %s\n", err ? cp_errmsg(-err) : "not one result");
			return 1;
		}
		cp_store_close(s);
		t = now_ms() - t0;
		if (best < 0 || t < best)
			best = t;
		total = cp_profile_total(res[0].profile, 0);
		nsamples = res[0].profile->nsamples;
		if (out && r == runs - 1) {
			uint8_t *buf = NULL;
			size_t len = 0;

			if ((err = cp_pprof_encode(res[0].profile, 1, &buf, &len)) ||
			    (err = cp_write_file_atomic(out, buf, len))) {
				fprintf(stderr, "store_query: %s: %s\n", out, cp_errmsg(-err));
				return 1;
			}
			free(buf);
		}
		cp_store_results_free(res, n);
	}
	printf("merge: %.1f ms (best of %d), total %" PRId64 ", %" PRIu32 " distinct samples\n", best, runs, total,
	       nsamples);
	cp_selector_free(sel);
	return 0;
}
