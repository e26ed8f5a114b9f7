/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "debuginfod.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef CP_HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>
#endif

#include "../error.h"
#include "../log.h"
#include "../util.h"

int cp_debuginfod_check_urls(const char *urls)
{
	const char *p = urls;
	int n = 0;

	while (p && *p) {
		size_t len, scheme;

		p += strspn(p, " \t");
		if (!*p)
			break;
		len = strcspn(p, " \t");
		scheme = !strncmp(p, "http://", 7) ? 7 : !strncmp(p, "https://", 8) ? 8 : !strncmp(p, "file://", 7) ? 7 : 0;
		if (!scheme)
			return cp_error(EINVAL, "debuginfod server '%.*s': want an http://, https:// or file:// URL",
					(int)(len > 200 ? 200 : len), p);
		if (len == scheme || (p[0] == 'h' && (p[scheme] == '/' || p[scheme] == ':')))
			return cp_error(EINVAL, "debuginfod server '%.*s': no host", (int)(len > 200 ? 200 : len), p);
		n++;
		p += len;
	}
	if (!n)
		return cp_error(EINVAL, "no debuginfod server given: want a URL such as http://HOST:8002");
	return 0;
}

#ifdef CP_HAVE_DEBUGINFOD

#define MAX_ENTRIES 4096

enum { QUEUED = 3, FETCHING = 4 };

struct entry {
	char id[129];
	int state; /* enum cp_debuginfod_state, QUEUED or FETCHING */
	char *path;
};

struct cp_debuginfod {
	pthread_t worker;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* work queued, a fetch done, or stop */
	struct entry *e;
	size_t n, cap;
	size_t queued; /* QUEUED or FETCHING */
	_Atomic uint64_t gen;
	atomic_bool stop;
	int timeout_ms;
	int64_t deadline; /* of the fetch in flight (worker only) */
	bool aborted;     /* it was given up (libdebuginfod then says ENOENT) */
	char verb[32];
	char *urls;
	bool warned;
	int64_t down_until; /* after a failure, the queue is given up until then */
};

/* how long the servers are not asked again after they failed */
#define BACKOFF_NS (60 * 1000000000LL)

static int progress(debuginfod_client *c, long a, long b)
{
	struct cp_debuginfod *d = debuginfod_get_user_data(c);

	(void)a;
	(void)b;
	if (atomic_load(&d->stop) || cp_mono_ns() > d->deadline)
		d->aborted = true;
	return d->aborted;
}

static void *worker(void *arg)
{
	struct cp_debuginfod *d = arg;
	debuginfod_client *c = debuginfod_begin();

	if (c) {
		debuginfod_set_user_data(c, d);
		debuginfod_set_progressfn(c, progress);
	}
	pthread_mutex_lock(&d->lock);
	while (!atomic_load(&d->stop)) {
		size_t i;
		char id[129], *path = NULL;
		int fd;

		for (i = 0; i < d->n && d->e[i].state != QUEUED; i++)
			;
		if (i == d->n) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		d->e[i].state = FETCHING;
		memcpy(id, d->e[i].id, sizeof(id));
		pthread_mutex_unlock(&d->lock);
		d->deadline = cp_mono_ns() + (int64_t)d->timeout_ms * 1000000;
		d->aborted = false;
		if (cp_mono_ns() < d->down_until)
			fd = -EAGAIN; /* not asked: a server that is down is waited for once */
		else
			fd = c ? debuginfod_find_debuginfo(c, (const unsigned char *)id, 0, &path) : -ENOMEM;
		if (fd >= 0)
			close(fd);
		else if (d->aborted)
			fd = -ETIMEDOUT;
		if (fd < 0 && fd != -ENOENT && fd != -EAGAIN && !atomic_load(&d->stop))
			d->down_until = cp_mono_ns() + BACKOFF_NS;
		if (fd < 0 && fd != -ENOENT && fd != -EAGAIN && !d->warned && !atomic_load(&d->stop)) {
			/* down, refusing, too slow: said once, then each build id
			 * just stays without debug info */
			d->warned = true;
			if (fd == -ETIMEDOUT)
				cp_log(d->verb, CP_LOG_WARN, "debuginfod: no answer from %s in %d s; binaries without "
				       "local debug info keep their symbol-table names", d->urls, d->timeout_ms / 1000);
			else
				cp_log(d->verb, CP_LOG_WARN, "debuginfod: cannot fetch debug info from %s: %s; binaries "
				       "without local debug info keep their symbol-table names", d->urls, strerror(-fd));
		}
		pthread_mutex_lock(&d->lock);
		for (i = 0; i < d->n && strcmp(d->e[i].id, id); i++)
			;
		if (i < d->n) {
			d->e[i].state = fd >= 0 && path ? CP_DEBUGINFOD_FOUND : CP_DEBUGINFOD_ABSENT;
			d->e[i].path = fd >= 0 ? path : NULL;
			if (fd < 0)
				free(path);
			path = NULL;
		}
		free(path);
		d->queued--;
		atomic_fetch_add(&d->gen, 1);
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		debuginfod_end(c);
	return NULL;
}

struct cp_debuginfod *cp_debuginfod_new(const char *urls, int timeout_ms, const char *verb)
{
	struct cp_debuginfod *d;
	pthread_condattr_t ca;
	int err;

	if ((err = cp_debuginfod_check_urls(urls))) {
		errno = -err;
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d))) || !(d->urls = strdup(urls))) {
		free(d);
		cp_error(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	d->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	snprintf(d->verb, sizeof(d->verb), "%s", verb ? verb : "record");
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* the only way to give libdebuginfod its servers; set before the
	 * worker starts, so no thread reads the environment meanwhile */
	if (setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1) ||
	    (err = pthread_create(&d->worker, NULL, worker, d))) {
		err = err ? err : errno;
		cp_debuginfod_free(d);
		cp_error(err, "cannot start the debuginfod fetcher: %s", strerror(err));
		errno = err;
		return NULL;
	}
	d->started = true;
	return d;
}

void cp_debuginfod_free(struct cp_debuginfod *d)
{
	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		atomic_store(&d->stop, true);
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->worker, NULL);
	}
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].path);
	free(d->e);
	free(d->urls);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

enum cp_debuginfod_state cp_debuginfod_lookup(struct cp_debuginfod *d, const char *build_id, char **path)
{
	enum cp_debuginfod_state st = CP_DEBUGINFOD_ABSENT;
	size_t i, len = strlen(build_id);

	if (path)
		*path = NULL;
	if (!len || len >= sizeof(d->e[0].id))
		return CP_DEBUGINFOD_ABSENT;
	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->n && strcmp(d->e[i].id, build_id); i++)
		;
	if (i == d->n) {
		if (d->n >= MAX_ENTRIES || cp_grow((void **)&d->e, &d->cap, d->n + 1, sizeof(*d->e)))
			goto out; /* not asked: absent */
		memset(&d->e[i], 0, sizeof(d->e[i]));
		memcpy(d->e[i].id, build_id, len + 1);
		d->e[i].state = QUEUED;
		d->n++;
		d->queued++;
		pthread_cond_broadcast(&d->cond);
	}
	switch (d->e[i].state) {
	case QUEUED:
	case FETCHING: st = CP_DEBUGINFOD_PENDING; break;
	case CP_DEBUGINFOD_FOUND:
		st = CP_DEBUGINFOD_FOUND;
		if (path)
			*path = strdup(d->e[i].path);
		break;
	default: break;
	}
out:
	pthread_mutex_unlock(&d->lock);
	return st;
}

uint64_t cp_debuginfod_generation(struct cp_debuginfod *d)
{
	return atomic_load(&d->gen);
}

void cp_debuginfod_wait(struct cp_debuginfod *d, int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&d->lock);
	while (d->queued && pthread_cond_timedwait(&d->cond, &d->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&d->lock);
}

#else /* !CP_HAVE_DEBUGINFOD */

struct cp_debuginfod *cp_debuginfod_new(const char *urls, int timeout_ms, const char *verb)
{
	(void)urls;
	(void)timeout_ms;
	(void)verb;
	cp_error(ENOSYS, "built without libdebuginfod: debug info cannot be fetched from debuginfod servers");
	errno = ENOSYS;
	return NULL;
}

void cp_debuginfod_free(struct cp_debuginfod *d)
{
	(void)d;
}

enum cp_debuginfod_state cp_debuginfod_lookup(struct cp_debuginfod *d, const char *build_id, char **path)
{
	(void)d;
	(void)build_id;
	if (path)
		*path = NULL;
	return CP_DEBUGINFOD_ABSENT;
}

uint64_t cp_debuginfod_generation(struct cp_debuginfod *d)
{
	(void)d;
	return 0;
}

void cp_debuginfod_wait(struct cp_debuginfod *d, int timeout_ms)
{
	(void)d;
	(void)timeout_ms;
}

#endif
