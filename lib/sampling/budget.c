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
/* how often the budget is looked at, at most */
#define RELEASE_EVERY_NS 250000000LL
/* how often the pages of the files read are let go, at most */
#define PAGES_EVERY_NS 1000000000LL
/* how often free heap is given back, at most, before anything is evicted */
#define TRIM_EVERY_NS 2000000000LL
/* binaries used this recently are the working set: not evicted */
#define WORKING_SET_NS 10000000000LL
/* the DWARF of the binaries in use is closed at most this often */
#define DWARF_EVERY_NS 10000000000LL

/* /proc/self/statm, opened once (and again in a forked child: the descriptor
 * names the process that opened it); read with pread, as an open of it is a
 * path walk through procfs, four times a second */
static int statm_fd = -1;
static pid_t statm_pid;

uint64_t cp_rss_bytes(void)
{
	char buf[128], *end;
	unsigned long long rss;
	pid_t pid = getpid();
	ssize_t n;

	if (statm_fd < 0 || statm_pid != pid) {
		int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return 0;
		if (statm_fd >= 0 && statm_pid != pid)
			close(statm_fd);
		statm_fd = fd;
		statm_pid = pid;
	}
	n = pread(statm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "size resident shared ...", in pages (strtoull: sscanf's machinery
	 * cost more than the read) */
	(void)strtoull(buf, &end, 10);
	if (end == buf || *end != ' ')
		return 0;
	rss = strtoull(end + 1, &end, 10);
	if (*end != ' ' && *end != '\n')
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
	b->released_ns = 0;
	b->trimmed_ns = INT64_MIN / 2;
	b->paged_ns = INT64_MIN / 2;
	b->dwarf_ns = INT64_MIN / 2;
	b->working_set_ns = WORKING_SET_NS;
	if (max)
		cp_modcache_on_open(cp_unwind_modcache(u), on_open, b);
}

void cp_budget_keep(struct cp_budget *b)
{
	struct cp_modcache *mc;
	uint64_t rss, limit;
	int64_t now, idle;
	size_t n;

	if (!b->max)
		return;
	/* when memory outside the caches is over the limit, act again only
	 * once the caches have grown by a quarter of it */
	limit = b->floor > b->max ? b->floor + b->max / 4 : b->max;
	now = cp_mono_ns();
	/* a look (reading /proc/self/statm) at most every 250 ms, over or
	 * under: it is called for every poll and every binary opened */
	if (now - b->released_ns < RELEASE_EVERY_NS)
		return;
	b->released_ns = now;
	rss = cp_rss_bytes();
	mc = cp_unwind_modcache(b->u);
	idle = now - b->working_set_ns;
	/* From 15/16 of the limit on, so that the resident set stays under
	 * it rather than going over first: what costs little to get back, the
	 * pages of the files read (idle binaries, every debug file, the
	 * kernel's symbols), once a second.  What is read again faults back
	 * from the page cache; the kernel maps 64 KB around each fault, so a
	 * storm's new addresses bring much of a file back within seconds, and
	 * letting go four times a second cost a third more CPU at 99 Hz.  The
	 * pages of binaries in use stay: their unwind tables are read for
	 * every new process. */
	if (rss > limit - limit / 16 && now - b->paged_ns >= PAGES_EVERY_NS) {
		b->paged_ns = now;
		cp_modcache_release_pages(mc, idle);
		cp_modcache_release_debug_pages(mc);
		cp_symbolize_release_pages(b->s);
		rss = cp_rss_bytes();
	}
	if (rss <= limit)
		return;
	/* then free heap (malloc_trim's madvise calls cost TLB shootdowns: at
	 * most one every 2 s, or a resident set that hovers at the budget
	 * pays them four times a second) */
	if (rss > b->max && now - b->trimmed_ns >= TRIM_EVERY_NS) {
		b->trimmed_ns = now;
		malloc_trim(0);
		rss = cp_rss_bytes();
	}
	/* then the idle binaries, least recently used first, a quarter at a
	 * time; those in use (the working set) stay, or they would be read
	 * again at once */
	while (rss > b->max && (n = cp_modcache_count(mc)) > KEEP_MIN &&
	       cp_modcache_evict_idle(mc, n - n / 4 - 1 > KEEP_MIN ? n - n / 4 - 1 : KEEP_MIN, idle)) {
		b->evictions++;
		malloc_trim(0);
		rss = cp_rss_bytes();
	}
	/* then the DWARF of the binaries in use: libdw keeps each compilation
	 * unit's line table it decoded (1.5 MB for some of CPython's) while the
	 * binary is open, and only an address not named before needs it (the
	 * symbolizer keeps its answers): such binaries are closed, and opened
	 * again when next used, at most every 10 s */
	if (rss > b->max && now - b->dwarf_ns >= DWARF_EVERY_NS) {
		b->dwarf_ns = now;
		if (cp_modcache_evict_dwarf(mc)) {
			b->evictions++;
			malloc_trim(0);
			rss = cp_rss_bytes();
		}
	}
	if (rss > b->max && cp_modcache_count(mc) <= KEEP_MIN) {
		/* nothing but the binaries being read: the rules and addresses */
		cp_unwind_forget_rules(b->u);
		cp_symbolize_forget(b->s);
		b->evictions++;
		malloc_trim(0);
		rss = cp_rss_bytes();
	}
	b->floor = rss > b->max ? rss : 0;
	if (b->floor && !b->warned) {
		b->warned = true;
		cp_log(b->verb, CP_LOG_DEBUG,
		       "%" PRIu64 " MB resident with the idle caches emptied, over the memory budget of %" PRIu64
		       " MB (--max-memory): what runs now needs more",
		       rss >> 20, b->max >> 20);
	}
}
