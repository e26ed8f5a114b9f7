/* SPDX-License-Identifier: MIT */
/* Separate debug files fetched by build id from debuginfod servers
 * (libdebuginfod), off the sampling path: lookups never block; the first
 * one of a build id queues it for one worker thread, which fetches it with a
 * timeout into libdebuginfod's disk cache ($DEBUGINFOD_CACHE_PATH, else its
 * default) and bumps a generation counter when a fetch ends.  A server that
 * cannot be reached costs one warning, once.
 *
 * One fetcher per process: libdebuginfod takes the servers from
 * $DEBUGINFOD_URLS only, so cp_debuginfod_new sets it (from then on, only
 * the fetcher may ask libdebuginfod, and libdwfl's own synchronous client
 * must not run: see modcache.c). */
#ifndef CP_DEBUGINFOD_H
#define CP_DEBUGINFOD_H

#include <stdint.h>

enum cp_debuginfod_state {
	CP_DEBUGINFOD_ABSENT,  /* not on the servers, or they failed */
	CP_DEBUGINFOD_PENDING, /* queued or being fetched */
	CP_DEBUGINFOD_FOUND,   /* in the cache, at *path */
};

struct cp_debuginfod;

/* Checks a server list as $DEBUGINFOD_URLS holds it: space-separated
 * http://, https:// or file:// URLs.  0, or -EINVAL with the reason in
 * cp_errmsg(). */
int cp_debuginfod_check_urls(const char *urls);
/* A fetcher from urls (checked), each fetch given up after timeout_ms;
 * verb names the command in the warning.  NULL + errno (ENOSYS: built
 * without libdebuginfod), the reason in cp_errmsg(). */
struct cp_debuginfod *cp_debuginfod_new(const char *urls, int timeout_ms, const char *verb);
/* Aborts the fetch in flight and joins the worker. */
void cp_debuginfod_free(struct cp_debuginfod *d);
/* The state of the debug file of build_id (lowercase hex); queues it on
 * first sight.  When FOUND and path is not NULL, *path is a malloc'ed copy
 * of the cached file's name (NULL when out of memory). */
enum cp_debuginfod_state cp_debuginfod_lookup(struct cp_debuginfod *d, const char *build_id, char **path);
/* Changes whenever a fetch ends (FOUND or ABSENT). */
uint64_t cp_debuginfod_generation(struct cp_debuginfod *d);
/* Waits until nothing is queued or being fetched, at most timeout_ms. */
void cp_debuginfod_wait(struct cp_debuginfod *d, int timeout_ms);

#endif
