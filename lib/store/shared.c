/* SPDX-License-Identifier: MIT */
#include "store/shared.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "util.h"

#define POOL_MAX 4
#define BATCH_MAX 512

struct job {
	const struct cp_store_append *a;
	size_t n;
	int err;
	char msg[512];
	bool done;
	struct job *next;
};

struct cp_shared {
	char *dir;
	struct cp_upkeep upkeep;
	struct cp_store *w;
	pthread_t writer;
	bool writer_started;
	pthread_mutex_t lock;
	pthread_cond_t more, done;
	struct job *head, **tail;
	bool stopping;

	pthread_mutex_t plock;
	pthread_cond_t pfree;
	struct cp_store *pool[POOL_MAX];
	bool busy[POOL_MAX];
	int npool;
};

/* ---- the writer: group commit ---- */

static void commit(struct cp_shared *s, struct job *batch, size_t total)
{
	struct cp_store_append *all = calloc(total ? total : 1, sizeof(*all));
	struct job *j;
	size_t k = 0;
	int err;

	for (j = batch; all && j; j = j->next) {
		memcpy(all + k, j->a, j->n * sizeof(*all));
		k += j->n;
	}
	err = all ? cp_store_append(s->w, all, total) : cp_error(ENOMEM, "out of memory queueing a batch");
	free(all);
	if (err && batch->next) {
		/* one request may be what failed: commit each alone */
		for (j = batch; j; j = j->next)
			if ((j->err = cp_store_append(s->w, j->a, j->n)))
				snprintf(j->msg, sizeof(j->msg), "%s", cp_errmsg(-j->err));
	} else {
		for (j = batch; j; j = j->next) {
			j->err = err;
			if (err)
				snprintf(j->msg, sizeof(j->msg), "%s", cp_errmsg(-err));
		}
	}
}

static void *writer_main(void *arg)
{
	struct cp_shared *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct job *batch, *j;
		size_t total = 0, njobs = 0;

		while (!s->head && !s->stopping) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&s->more, &s->lock, &ts);
			if (!s->head) {
				pthread_mutex_unlock(&s->lock);
				cp_upkeep_run(&s->upkeep, s->w, cp_now_ns());
				pthread_mutex_lock(&s->lock);
			}
		}
		if (!s->head)
			break;
		/* take what is queued, up to BATCH_MAX requests */
		batch = s->head;
		for (j = batch; j && njobs < BATCH_MAX; j = j->next, njobs++) {
			total += j->n;
			if (njobs + 1 == BATCH_MAX || !j->next) {
				s->head = j->next;
				j->next = NULL;
				if (!s->head)
					s->tail = &s->head;
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);
		commit(s, batch, total);
		cp_upkeep_run(&s->upkeep, s->w, cp_now_ns()); /* when due, also under a steady load */
		pthread_mutex_lock(&s->lock);
		for (j = batch; j;) {
			struct job *next = j->next;

			j->done = true;
			j = next;
		}
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int cp_shared_append(struct cp_shared *s, const struct cp_store_append *a, size_t n, char *msg, size_t mlen)
{
	struct job j = { a, n, 0, "", false, NULL };

	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		snprintf(msg, mlen, "the server is shutting down: send again later");
		return cp_error(ESHUTDOWN, "the server is shutting down: send again later");
	}
	*s->tail = &j;
	s->tail = &j.next;
	pthread_cond_signal(&s->more);
	while (!j.done)
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	snprintf(msg, mlen, "%s", j.msg);
	return j.err;
}

/* ---- the read pool ---- */

struct cp_store *cp_shared_reader(struct cp_shared *s)
{
	struct cp_store *st = NULL;
	int i;

	pthread_mutex_lock(&s->plock);
	for (;;) {
		for (i = 0; i < s->npool && s->busy[i]; i++)
			;
		if (i < s->npool || s->npool < POOL_MAX)
			break;
		pthread_cond_wait(&s->pfree, &s->plock);
	}
	if (i == s->npool) {
		if (!(st = cp_store_open(s->dir, CP_STORE_READ))) {
			pthread_mutex_unlock(&s->plock);
			return NULL;
		}
		s->pool[s->npool++] = st;
	}
	s->busy[i] = true;
	st = s->pool[i];
	pthread_mutex_unlock(&s->plock);
	return st;
}

void cp_shared_release(struct cp_shared *s, struct cp_store *st)
{
	int i;

	pthread_mutex_lock(&s->plock);
	for (i = 0; i < s->npool; i++)
		if (s->pool[i] == st)
			s->busy[i] = false;
	pthread_cond_signal(&s->pfree);
	pthread_mutex_unlock(&s->plock);
}

/* ---- life ---- */

struct cp_shared *cp_shared_open(const char *dir, const struct cp_upkeep *upkeep)
{
	struct cp_shared *s = calloc(1, sizeof(*s));
	int err;

	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		cp_error(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (upkeep)
		s->upkeep = *upkeep;
	if (!s->upkeep.verb)
		s->upkeep.verb = "serve";
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->plock, NULL);
	pthread_cond_init(&s->more, NULL);
	pthread_cond_init(&s->done, NULL);
	pthread_cond_init(&s->pfree, NULL);
	if (!(s->w = cp_store_open(dir, CP_STORE_WRITE))) {
		err = errno;
		cp_shared_close(s);
		errno = err;
		return NULL;
	}
	cp_upkeep_run(&s->upkeep, s->w, cp_now_ns());
	if ((err = pthread_create(&s->writer, NULL, writer_main, s))) {
		cp_error(err, "cannot start the writer thread: %s", strerror(err));
		cp_shared_close(s);
		errno = err;
		return NULL;
	}
	s->writer_started = true;
	return s;
}

void cp_shared_stop(struct cp_shared *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->more);
	pthread_mutex_unlock(&s->lock);
	if (s->writer_started) {
		pthread_join(s->writer, NULL);
		s->writer_started = false;
	}
}

void cp_shared_close(struct cp_shared *s)
{
	int k;

	if (!s)
		return;
	cp_shared_stop(s);
	for (k = 0; k < s->npool; k++)
		cp_store_close(s->pool[k]);
	cp_store_close(s->w);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->plock);
	pthread_cond_destroy(&s->more);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->pfree);
	free(s->dir);
	free(s);
}
