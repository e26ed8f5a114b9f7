/* SPDX-License-Identifier: MIT */
#include "budget.h"

#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "../log.h"
#include "../util.h"
#include "modcache.h"

/* binaries kept whatever the budget: the ones being read */
#define KEEP_MIN 2
/* how often the pages and free heap are given back, and caches cut, at most */
#define RELEASE_EVERY_NS 250000000LL
#define EVICT_EVERY_NS 2000000000LL

uint64_t cp_rss_bytes(void)
{
	char buf[128];
	unsigned long long size, rss;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void on_open(void *arg)
{
	cp_budget_keep(arg);
}

void cp_budget_init(struct cp_budget *b, uint64_t max, struct cp_unwinder *u, struct cp_symbolizer *s,
		    const char *verb)
{
	b->verb = verb;
	b->max = max;
	b->floor = 0;
	b->u = u;
	b->s = s;
	b->evictions = 0;
	b->warned = false;
	b->released_ns = b->evicted_ns = 0;
	if (max)
		cp_modcache_on_open(cp_unwind_modcache(u), on_open, b);
}

void cp_budget_keep(struct cp_budget *b)
{
	struct cp_modcache *mc;
	uint64_t rss, limit;
	int64_t now;
	size_t n;

	if (!b->max)
		return;
	/* when memory outside the caches is over the limit, act again only
	 * once the caches have grown by a quarter of it */
	limit = b->floor > b->max ? b->floor + b->max / 4 : b->max;
	now = cp_mono_ns();
	if (now - b->released_ns < RELEASE_EVERY_NS || (rss = cp_rss_bytes()) <= limit)
		return;
	mc = cp_unwind_modcache(b->u);
	/* first what costs nothing to get back: the files' pages and free heap */
	b->released_ns = now;
	cp_modcache_release_pages(mc);
	malloc_trim(0);
	rss = cp_rss_bytes();
	/* then what costs a re-read, not so often that the binaries in use
	 * are read again and again (a storm of programs) */
	if (rss <= limit || (b->evicted_ns && now - b->evicted_ns < EVICT_EVERY_NS))
		return;
	b->evicted_ns = now;
	b->evictions++;
	/* the least recently used quarter of the binaries at a time */
	while (rss > b->max && (n = cp_modcache_count(mc)) > KEEP_MIN) {
		cp_modcache_evict(mc, n - n / 4 - 1 > KEEP_MIN ? n - n / 4 - 1 : KEEP_MIN);
		malloc_trim(0);
		rss = cp_rss_bytes();
	}
	if (rss > b->max) {
		cp_unwind_forget_rules(b->u);
		cp_symbolize_forget(b->s);
		malloc_trim(0);
		rss = cp_rss_bytes();
	}
	b->floor = rss > b->max ? rss : 0;
	if (b->floor && !b->warned) {
		b->warned = true;
		cp_log(b->verb, CP_LOG_WARN,
		       "%" PRIu64 " MB resident with the caches emptied, over the memory budget of %" PRIu64
		       " MB (--max-memory); the caches stay small",
		       rss >> 20, b->max >> 20);
	}
}
