/* SPDX-License-Identifier: MIT */
/* Writes N synthetic CPU profiles shaped like Go's (samples/count +
 * cpu/nanoseconds, a mapping, addresses, functions with files and lines),
 * each with about S distinct stacks drawn from one shared pool, the way a
 * fleet of processes of one program looks.  Deterministic (fixed seed).
 * usage: gen_profiles DIR N SAMPLES [FUNCS]  (FUNCS <= 3000, default 3000) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "pprof.h"
#include "profile.h"
#include "util.h"

#define NFUNCS 3000
#define POOL 40000
#define MAXDEPTH 32

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

int main(int argc, char **argv)
{
	static uint32_t pool[POOL][MAXDEPTH], depth[POOL];
	long n, samples, nfuncs = NFUNCS;
	char path[4096], name[64], file[64];
	int i;

	if (argc == 5)
		nfuncs = atol(argv[4]);
	if (argc < 4 || argc > 5 || (n = atol(argv[2])) <= 0 || (samples = atol(argv[3])) <= 0 || nfuncs < 16 ||
	    nfuncs > NFUNCS) {
		fprintf(stderr, "usage: gen_profiles DIR N SAMPLES [FUNCS]\n");
		return 2;
	}
	/* stacks: a few roots, then random callees; leaf first in the pool */
	for (i = 0; i < POOL; i++) {
		uint32_t d = 4 + rnd(MAXDEPTH - 4), k;

		depth[i] = d;
		for (k = 0; k < d; k++)
			pool[i][k] = k == d - 1 ? rnd(8) : 8 + rnd((uint32_t)nfuncs - 8);
	}
	for (long f = 0; f < n; f++) {
		struct cp_profile *p = cp_profile_new();
		struct cp_mapping m = { 0x400000, 0x400000 + (uint64_t)nfuncs * 64 + 4096, 0, 0, 0, 1, 1, 1, 0 };
		uint32_t fn[NFUNCS], loc[NFUNCS], locs[MAXDEPTH];
		uint8_t *buf = NULL;
		size_t len = 0;
		int64_t mid;

		if (!p)
			return 1;
		cp_profile_add_sample_type(p, "samples", "count");
		cp_profile_add_sample_type(p, "cpu", "nanoseconds");
		cp_profile_set_period_type(p, "cpu", "nanoseconds", 10000000);
		p->time_nanos = 1700000000000000000LL + f * 10000000000LL;
		p->duration_nanos = 10000000000LL;
		m.filename = (uint32_t)cp_profile_str(p, "/usr/local/bin/service");
		m.build_id = (uint32_t)cp_profile_str(p, "5b1c2d3e4f5061728394a5b6c7d8e9f0a1b2c3d4");
		mid = cp_profile_mapping(p, &m);
		for (i = 0; i < nfuncs; i++) {
			struct cp_function cf = { 0 };
			struct cp_line ln = { 0 };

			snprintf(name, sizeof(name), "service/pkg%d.(*Handler%d).Serve%d", i % 97, i % 13, i);
			snprintf(file, sizeof(file), "/src/service/pkg%d/handler.go", i % 97);
			cf.name = cf.system_name = (uint32_t)cp_profile_str(p, name);
			cf.filename = (uint32_t)cp_profile_str(p, file);
			cf.start_line = 10 + i;
			fn[i] = (uint32_t)cp_profile_function(p, &cf);
			ln.function = fn[i];
			ln.line = 20 + i;
			loc[i] = (uint32_t)cp_profile_location(p, (uint32_t)mid, 0x401000 + (uint64_t)i * 64, &ln, 1, false);
		}
		for (long s = 0; s < samples; s++) {
			uint32_t st = rnd(POOL), k;
			int64_t v[2];

			for (k = 0; k < depth[st]; k++)
				locs[k] = loc[pool[st][k]];
			v[0] = 1 + rnd(20);
			v[1] = v[0] * 10000000;
			if (cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, depth[st]), 0, v))
				return 1;
		}
		snprintf(path, sizeof(path), "%s/p%03ld.pb.gz", argv[1], f);
		if (cp_pprof_encode(p, 1, &buf, &len) || cp_write_file_atomic(path, buf, len)) {
			fprintf(stderr, "gen_profiles: %s: %s\n", path, cp_errmsg(errno));
			return 1;
		}
		free(buf);
		cp_profile_free(p);
	}
	return 0;
}
