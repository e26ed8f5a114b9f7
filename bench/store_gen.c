/* SPDX-License-Identifier: MIT */
/* A synthetic continuous load for the store benchmark: 50 processes of 5
 * programs (10 each, every program with its own functions, mapping and call
 * tree, ~4000 distinct stacks each, depth 5-40, Zipf popularity), sampled at
 * 19 Hz per CPU on 8 busy CPUs (152 samples/s, hot processes get more) for H
 * simulated hours ending now.  Every 10 s of simulated time each process's
 * samples become one CPU profile (aggregated by stack and thread, as an agent
 * sends them), whose samples carry the process's pid and their thread's
 * thread_id and thread_name as sample labels (1 to 4 threads a process), as
 * cprof record's do; its series is its program's (comm, node), as record's
 * since #48.  The 50 profiles go to the store as one cp_store_append batch, as
 * record does, and each is also written as a gzipped pprof file, the way the
 * same data is kept without a store.  Deterministic (fixed seed).
 * --hosts N simulates N such hosts (node=host-000...; each host's 50
 * profiles of an interval are one append, as each host's agent pushes its
 * own, or with --group all the hosts' profiles of an interval are one append,
 * as a server's group commit takes the pushes that arrive together),
 * --cpus C busy CPUs per host (default 8), PPROFDIR "-" writes no pprof
 * files (bench/serve_scaling.sh).
 * --days D simulates D days ending now, each its last H hours (--hours, 24
 * by default with --days: whole days), for the downsampling benchmark
 * (bench/downsample.sh): the days 2 and 14 days ago are the ones the default
 * policy turns coarser.
 * --end S ends the simulated time at S (seconds since the epoch) instead
 * of now (bench/downsample.sh: a whole UTC day, --end at midnight).
 * usage: store_gen STOREDIR PPROFDIR|- [--hours H] [--days D] [--hosts N] [--cpus C] [--group] [--end S] */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "pprof.h"
#include "profile.h"
#include "store/store.h"
#include "util.h"

#define NPROG 5
#define PER_PROG 10
#define NPROC (NPROG * PER_PROG)
#define NLIBC 24       /* libc functions, first in every program's set */
#define NFUNCS 2000    /* functions per program, libc included */
#define SITES 4        /* call sites (locations) per function */
#define FANOUT 12      /* callees per function: the call graph */
#define NSTACKS 4000   /* distinct stacks per program */
#define MINDEPTH 5
#define MAXDEPTH 40
#define HZ 19
#define NCPU 8
#define INTERVAL 10    /* seconds per profile */
#define PERIOD (1000000000LL / HZ)

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static double now_s(void)
{
	return (double)cp_mono_ns() / 1e9;
}

static const char *const libc_names[NLIBC] = {
	"__memmove_avx_unaligned_erms", "__memset_avx2_unaligned_erms", "__strlen_avx2", "__memcmp_avx2_movbe",
	"malloc", "_int_malloc", "free", "_int_free", "__libc_read", "__libc_write", "epoll_wait", "__poll",
	"__GI___pthread_mutex_lock", "__GI___pthread_mutex_unlock", "__futex_abstimed_wait_common",
	"pthread_cond_wait", "__send", "__libc_recv", "syscall", "clock_gettime", "start_thread",
	"__GI___clone3", "__libc_start_call_main", "__libc_start_main_impl",
};

static const char *const prog_names[NPROG] = { "gateway", "billing", "search", "ingest", "python3" };

/* A program: names, two mappings, its call tree. Frames are func * SITES + site. */
struct program {
	char names[NFUNCS][96], files[NFUNCS][64];
	char path[64], build_id[41];
	uint16_t stack[NSTACKS][MAXDEPTH]; /* root first */
	uint8_t depth[NSTACKS];
	double cdf[NSTACKS];               /* Zipf popularity over a shuffled order */
};

static struct program progs[NPROG];

static uint32_t callee(uint32_t f, uint32_t c)
{
	uint64_t h = (uint64_t)f * 0x9e3779b97f4a7c15ULL + c * 0xc2b2ae3d27d4eb4fULL;

	h ^= h >> 29;
	return NLIBC + (uint32_t)(h % (NFUNCS - NLIBC));
}

static void make_names(struct program *pg, int prog)
{
	static const char *const gofmt[] = { "github.com/acme/%s/pkg%d.(*Handler%d).Serve%d",
					     "github.com/acme/%s/internal/store%d.(*Conn%d).exec%d" };
	int f;

	snprintf(pg->path, sizeof(pg->path), prog == 4 ? "/usr/bin/python3.11" : "/usr/local/bin/%s", prog_names[prog]);
	for (f = 0; f < 40; f++)
		pg->build_id[f] = "0123456789abcdef"[rnd(16)];
	pg->build_id[40] = '\0';
	for (f = 0; f < NFUNCS; f++) {
		if (f < NLIBC) {
			snprintf(pg->names[f], sizeof(pg->names[f]), "%s", libc_names[f]);
			pg->files[f][0] = '\0';
			continue;
		}
		switch (prog) {
		case 0:
		case 1:
			snprintf(pg->names[f], sizeof(pg->names[f]), gofmt[f & 1], prog_names[prog], f % 61, f % 17, f);
			snprintf(pg->files[f], sizeof(pg->files[f]), "/src/%s/pkg%d/file%d.go", prog_names[prog], f % 61,
				 f % 7);
			break;
		case 2:
			snprintf(pg->names[f], sizeof(pg->names[f]), "search::index%d::Segment%d::lookup%d(Query const&)",
				 f % 43, f % 11, f);
			snprintf(pg->files[f], sizeof(pg->files[f]), "/src/search/index%d/segment.cc", f % 43);
			break;
		case 3:
			snprintf(pg->names[f], sizeof(pg->names[f]), "ingest::pipeline%d::Stage%d::run%d", f % 37, f % 9, f);
			snprintf(pg->files[f], sizeof(pg->files[f]), "src/pipeline%d/stage.rs", f % 37);
			break;
		default:
			snprintf(pg->names[f], sizeof(pg->names[f]), f % 3 ? "_PyEval_EvalFrame%d" : "app.views%d:handle_%d",
				 f % 3 ? f : f % 29, f);
			snprintf(pg->files[f], sizeof(pg->files[f]), f % 3 ? "Python/ceval.c" : "/srv/app/views%d.py",
				 f % 29);
			break;
		}
	}
}

/* Stacks grow from a root chain or from a prefix of an earlier stack, then
 * follow the call graph; distinct (checked with a small hash set). */
static void make_stacks(struct program *pg)
{
	static const uint16_t roots[3][3] = {
		{ 23 * SITES, 22 * SITES, NLIBC * SITES },             /* __libc_start_main -> main */
		{ 21 * SITES, 20 * SITES, (NLIBC + 1) * SITES + 1 },   /* clone3 -> start_thread -> worker */
		{ 21 * SITES, 20 * SITES, (NLIBC + 2) * SITES + 2 },
	};
	static uint64_t set[1 << 14];
	uint32_t order[NSTACKS], k, i;
	double sum = 0;

	memset(set, 0, sizeof(set));
	for (k = 0; k < NSTACKS;) {
		uint16_t *s = pg->stack[k];
		uint32_t d = MINDEPTH + rnd(18) + rnd(18), p, f;
		uint64_t h = 1469598103934665603ULL;

		if (k < 16 || rnd(10) == 0) {
			memcpy(s, roots[rnd(3)], sizeof(roots[0]));
			p = 3;
		} else {
			uint32_t j = rnd(k), m = pg->depth[j] < d ? pg->depth[j] - 1u : d - 1;

			p = 3 + rnd(m - 2);
			memcpy(s, pg->stack[j], p * sizeof(*s));
		}
		for (i = p; i < d; i++) {
			/* the leaf is in libc a quarter of the time */
			f = i == d - 1 && rnd(4) == 0 ? rnd(20) : callee(s[i - 1] / SITES, rnd(FANOUT));
			s[i] = (uint16_t)(f * SITES + rnd(SITES));
		}
		for (i = 0; i < d; i++)
			h = (h ^ s[i]) * 1099511628211ULL;
		h |= 1;
		for (i = (uint32_t)h & ((1 << 14) - 1); set[i] && set[i] != h; i = (i + 1) & ((1 << 14) - 1))
			;
		if (set[i])
			continue; /* seen: draw again */
		set[i] = h;
		pg->depth[k++] = (uint8_t)d;
	}
	for (k = 0; k < NSTACKS; k++)
		order[k] = k;
	for (k = NSTACKS - 1; k > 0; k--) {
		uint32_t j = rnd(k + 1), t = order[k];

		order[k] = order[j];
		order[j] = t;
	}
	for (k = 0; k < NSTACKS; k++)
		pg->cdf[order[k]] = 1.0 / pow(k + 1, 1.1);
	for (k = 0; k < NSTACKS; k++)
		pg->cdf[k] = sum += pg->cdf[k];
	for (k = 0; k < NSTACKS; k++)
		pg->cdf[k] /= sum;
}

static uint32_t pick(const double *cdf, uint32_t n)
{
	double x = (double)rnd(1u << 30) / (double)(1u << 30);
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (cdf[mid] > x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int str_label(struct cp_profile *p, struct cp_label *l, const char *k, const char *v)
{
	int64_t ks = cp_profile_str(p, k), vs = cp_profile_str(p, v);

	if (ks < 0 || vs < 0)
		return -1;
	memset(l, 0, sizeof(*l));
	l->key = (uint32_t)ks;
	l->str = (uint32_t)vs;
	return 0;
}

#define MAXTHREADS 4

/* One process's profile for one interval, from the stacks drawn for it and
 * their threads (0 .. 1 + proc % MAXTHREADS), pid its pid. */
static struct cp_profile *build(int prog, int pid, const uint32_t *drawn, const uint8_t *thread, size_t n,
				int64_t t)
{
	int64_t ls[MAXTHREADS] = { 0 };
	static uint32_t locid[NFUNCS * SITES], fnid[NFUNCS];
	struct program *pg = &progs[prog];
	struct cp_profile *p = cp_profile_new();
	struct cp_mapping mb = { 0x400000, 0x400000 + NFUNCS * 256, 0, 0, 0, 1, 1, 1, 1 };
	struct cp_mapping ml = { 0x7f3a1c000000, 0x7f3a1c1d6000, 0x28000, 0, 0, 1, 0, 0, 0 };
	uint32_t locs[MAXDEPTH], mbin, mlibc;
	int64_t v[2] = { 1, PERIOD };
	size_t i;

	if (!p || cp_profile_add_sample_type(p, "samples", "count") ||
	    cp_profile_add_sample_type(p, "cpu", "nanoseconds") ||
	    cp_profile_set_period_type(p, "cpu", "nanoseconds", PERIOD))
		goto fail;
	p->time_nanos = t;
	p->duration_nanos = INTERVAL * 1000000000LL;
	mb.filename = (uint32_t)cp_profile_str(p, pg->path);
	mb.build_id = (uint32_t)cp_profile_str(p, pg->build_id);
	ml.filename = (uint32_t)cp_profile_str(p, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	ml.build_id = (uint32_t)cp_profile_str(p, "c289da5071a3399de893d2af81d6a30c62646e1e");
	mbin = (uint32_t)cp_profile_mapping(p, &mb);
	mlibc = (uint32_t)cp_profile_mapping(p, &ml);
	memset(locid, 0, sizeof(locid));
	memset(fnid, 0, sizeof(fnid));
	for (i = 0; i < n; i++) {
		const uint16_t *s = pg->stack[drawn[i]];
		uint32_t d = pg->depth[drawn[i]], k;
		int64_t st;

		for (k = 0; k < d; k++) { /* leaf first */
			uint32_t fr = s[d - 1 - k], f = fr / SITES, site = fr % SITES;

			if (!locid[fr]) {
				struct cp_line ln[2] = { { 0 }, { 0 } };
				uint32_t nl = 1, g;
				int64_t id;

				/* some call sites have an inlined callee (innermost first) */
				for (g = f >= NLIBC && site == 3 ? callee(f, 99) : f; ; g = f) {
					if (!fnid[g]) {
						struct cp_function cf = { 0 };

						cf.name = cf.system_name = (uint32_t)cp_profile_str(p, pg->names[g]);
						cf.filename = (uint32_t)cp_profile_str(p, pg->files[g]);
						cf.start_line = g < NLIBC ? 0 : 10 + (g % 500) * 7;
						if ((id = cp_profile_function(p, &cf)) < 0)
							goto fail;
						fnid[g] = (uint32_t)id;
					}
					if (g == f)
						break;
					ln[0].function = fnid[g];
					ln[0].line = 12 + (g % 500) * 7;
					nl = 2;
				}
				ln[nl - 1].function = fnid[f];
				ln[nl - 1].line = f < NLIBC ? 0 : 14 + (f % 500) * 7 + site * 2;
				if (f < NLIBC)
					id = cp_profile_location(p, mlibc, 0x7f3a1c028000 + f * 512 + site * 16, ln, 1, false);
				else
					id = cp_profile_location(p, mbin, 0x401000 + (uint64_t)f * 256 + site * 48, ln, nl,
								 false);
				if (id < 0)
					goto fail;
				locid[fr] = (uint32_t)id;
			}
			locs[k] = locid[fr];
		}
		if (!ls[thread[i]]) { /* the thread's label set: pid, thread_id, thread_name */
			struct cp_label lb[3];
			char ps[16], ts[16], tn[32];

			snprintf(ps, sizeof(ps), "%d", pid);
			snprintf(ts, sizeof(ts), "%d", pid + thread[i]);
			snprintf(tn, sizeof(tn), thread[i] ? "%.20s-w%u" : "%.20s", prog_names[prog], thread[i]);
			if (str_label(p, &lb[0], "pid", ps) || str_label(p, &lb[1], "thread_id", ts) ||
			    str_label(p, &lb[2], "thread_name", tn) || (ls[thread[i]] = cp_profile_labelset(p, lb, 3)) < 0)
				goto fail;
		}
		if ((st = cp_profile_stack(p, locs, d)) < 0 ||
		    cp_profile_add_sample(p, (uint32_t)st, (uint32_t)ls[thread[i]], v))
			goto fail;
	}
	return p;
fail:
	cp_profile_free(p);
	return NULL;
}

int main(int argc, char **argv)
{
	static uint32_t drawn[NPROC][HZ * NCPU * INTERVAL];
	static uint8_t thread[NPROC][HZ * NCPU * INTERVAL];
	struct cp_profile **prof;
	struct cp_store_append *batch;
	const char **fpid; /* each profile's pid (its file's name) */
	struct cp_kv (*labels)[NPROG][2];
	char (*pids)[NPROC][16], (*node)[32], path[4096];
	size_t ndrawn[NPROC], nb = 0;
	double proc_cdf[NPROC], sum = 0, t_append = 0, t_pprof = 0, t0, t1, start_s = now_s();
	int64_t start, samples = 0, pprof_bytes = 0, nfiles = 0, nappends = 0, nint, k;
	double hours = 0;
	int hosts = 1, cpus = NCPU, h, days = 0;
	int64_t nper, end_s = 0;
	bool files, group = false;
	struct cp_store *st;
	struct cp_store_stats stats;
	int i;

	for (i = 3; i < argc; i += 2) {
		if (!strcmp(argv[i], "--group")) {
			group = true;
			i--;
		} else if (i + 1 >= argc)
			break;
		else if (!strcmp(argv[i], "--hours"))
			hours = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--days"))
			days = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--hosts"))
			hosts = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cpus"))
			cpus = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--end"))
			end_s = atoll(argv[i + 1]);
		else
			break;
	}
	hours = hours ? hours : days ? 24 : 1;
	if (argc < 3 || i != argc || hours <= 0 || hosts < 1 || cpus < 1 || cpus > NCPU || days < 0 ||
	    (days && hours > 24)) {
		fprintf(stderr, "usage: store_gen STOREDIR PPROFDIR|- [--hours H] [--days D] [--hosts N] [--cpus C (1-%d)]"
			" [--group] [--end S]\n", NCPU);
		return 2;
	}
	days = days ? days : 1;
	prof = calloc((size_t)NPROC * (size_t)hosts, sizeof(*prof));
	batch = calloc((size_t)NPROC * (size_t)hosts, sizeof(*batch));
	fpid = calloc((size_t)NPROC * (size_t)hosts, sizeof(*fpid));
	labels = calloc((size_t)hosts, sizeof(*labels));
	pids = calloc((size_t)hosts, sizeof(*pids));
	node = calloc((size_t)hosts, sizeof(*node));
	if (!prof || !batch || !fpid || !labels || !pids || !node) {
		fprintf(stderr, "store_gen: out of memory\n");
		return 1;
	}
	files = strcmp(argv[2], "-") != 0;
	if (!(st = cp_store_open(argv[1], CP_STORE_WRITE))) {
		fprintf(stderr, "store_gen: %s\n", cp_errmsg(errno));
		return 1;
	}
	for (i = 0; i < NPROG; i++) {
		make_names(&progs[i], i);
		make_stacks(&progs[i]);
	}
	/* processes: program i / 10; hot ones get more CPU (Zipf 0.8, shuffled) */
	for (i = 0; i < NPROC; i++) {
		int j = rnd((uint32_t)i + 1);

		proc_cdf[i] = proc_cdf[j];
		proc_cdf[j] = 1.0 / pow(i + 1, 0.8);
	}
	/* each host: its node name, its programs' series labels, its pids */
	for (h = 0; h < hosts; h++) {
		snprintf(node[h], sizeof(node[h]), hosts == 1 ? "bench" : "host-%03d", h);
		for (i = 0; i < NPROG; i++) {
			labels[h][i][0] = (struct cp_kv){ "comm", prog_names[i] };
			labels[h][i][1] = (struct cp_kv){ "node", node[h] };
		}
		for (i = 0; i < NPROC; i++)
			snprintf(pids[h][i], sizeof(pids[h][i]), "%d", 1000 + i * 37 + h * 7919);
	}
	for (i = 0; i < NPROC; i++)
		proc_cdf[i] = sum += proc_cdf[i];
	for (i = 0; i < NPROC; i++)
		proc_cdf[i] /= sum;

	/* each day's last nper intervals, the oldest day first; the last ends now */
	nper = (int64_t)(hours * 3600 / INTERVAL);
	nint = nper * days;
	end_s = end_s > 0 ? end_s : cp_now_ns() / 1000000000LL;
	start = (end_s - nper * INTERVAL) / INTERVAL * INTERVAL * 1000000000LL;
	for (k = 0; k < nint; k++)
		for (h = 0; h < hosts; h++) {
			int64_t t = start - (days - 1 - k / nper) * 86400 * 1000000000LL + (k % nper) * INTERVAL * 1000000000LL;

			memset(ndrawn, 0, sizeof(ndrawn));
			for (i = 0; i < HZ * cpus * INTERVAL; i++) {
				uint32_t pr = pick(proc_cdf, NPROC);

				thread[pr][ndrawn[pr]] = (uint8_t)rnd(1 + pr % MAXTHREADS);
				drawn[pr][ndrawn[pr]++] = pick(progs[pr / PER_PROG].cdf, NSTACKS);
			}
			for (i = 0; i < NPROC; i++) {
				if (!ndrawn[i])
					continue; /* no sample: an agent sends nothing */
				if (!(prof[nb] = build(i / PER_PROG, atoi(pids[h][i]), drawn[i], thread[i], ndrawn[i], t))) {
					fprintf(stderr, "store_gen: out of memory\n");
					return 1;
				}
				batch[nb] = (struct cp_store_append){ .profile = prof[nb], .name = "cpu",
								      .labels = labels[h][i / PER_PROG], .nlabels = 2 };
				fpid[nb] = pids[h][i];
				samples += (int64_t)ndrawn[i];
				nb++;
			}
			if (group && h + 1 < hosts)
				continue; /* the interval's other hosts join this append */
			t0 = now_s();
			if (cp_store_append(st, batch, nb)) {
				fprintf(stderr, "store_gen: %s\n", cp_errmsg(errno));
				return 1;
			}
			t1 = now_s();
			t_append += t1 - t0;
			nappends++;
			for (size_t b = 0; b < nb; b++) {
				uint8_t *buf = NULL;
				size_t len = 0;
				int err;

				if (files) {
					snprintf(path, sizeof(path), "%s/%s-%s-%06" PRId64 ".pb.gz", argv[2],
						 batch[b].labels[0].value, fpid[b], k);
					if ((err = cp_pprof_encode(prof[b], 1, &buf, &len)) ||
					    (err = cp_write_file_atomic(path, buf, len))) {
						fprintf(stderr, "store_gen: %s: %s\n", path, cp_errmsg(-err));
						return 1;
					}
					pprof_bytes += (int64_t)len;
					nfiles++;
					free(buf);
				}
				cp_profile_free(prof[b]);
			}
			nb = 0;
			t_pprof += now_s() - t1;
		}
	cp_store_close(st);
	/* figures from a fresh read-only open: the WAL files are checkpointed away */
	if (!(st = cp_store_open(argv[1], CP_STORE_READ)) || cp_store_stats(st, &stats)) {
		fprintf(stderr, "store_gen: %s\n", cp_errmsg(errno));
		return 1;
	}
	cp_store_close(st);
	if (days > 1)
		printf("days: %d, the last %.4g h of each\n", days, hours);
	printf("simulated: %.4g h, %d host%s of %d processes of %d programs, %d Hz x %d CPUs, %" PRId64
	       " intervals of %d s\n",
	       hours * days, hosts, hosts == 1 ? "" : "s", NPROC, NPROG, HZ, cpus, nint, INTERVAL);
	printf("samples: %" PRId64 "\n", samples);
	printf("batches: %" PRId64 " appends of up to %d profiles (%" PRId64 " files)\n", nappends,
	       group ? NPROC * hosts : NPROC, nfiles);
	printf("store: %" PRId64 " series, %" PRId64 " stacks, %" PRId64 " locations, %" PRId64 " functions, %" PRId64
	       " blocks, %" PRId64 " entries, %" PRId64 " bytes\n",
	       stats.series, stats.stacks, stats.locations, stats.functions, stats.blocks, stats.entries, stats.bytes);
	printf("pprof files: %" PRId64 " files, %" PRId64 " bytes\n", nfiles, pprof_bytes);
	printf("append time: %.3f s\n", t_append);
	printf("ingest rate: %.0f samples/s\n", t_append > 0 ? (double)samples / t_append : 0.0);
	printf("pprof encode+write time: %.3f s; total %.3f s\n", t_pprof, now_s() - start_s);
	return 0;
}
