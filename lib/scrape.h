/* SPDX-License-Identifier: MIT */
/* Pulling pprof profiles from HTTP endpoints (Go's net/http/pprof and the
 * like), configured as Parca's scrape_configs.  One thread drives every
 * transfer through libcurl's multi interface, so targets are scraped
 * concurrently and a slow one delays no other; each finished scrape is
 * decoded and handed to a sink (the store, a server, or serve's writer). */
#ifndef CP_SCRAPE_H
#define CP_SCRAPE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

/* ---- configuration (Parca's scrape_configs; parsed in lib/settings.c) ---- */

struct cp_scrape_keep {
	char *type, *unit; /* unit NULL: any */
};

struct cp_scrape_profile {
	char *name;   /* process_cpu, memory, block, mutex, goroutine, fgprof, ... */
	char *path;   /* /debug/pprof/profile */
	bool enabled, delta;
	int64_t seconds; /* delta: ?seconds= (nanoseconds; 0: the scrape interval) */
	struct cp_scrape_keep *keep;
	size_t nkeep;
};

struct cp_scrape_static {
	char **targets; /* host:port */
	size_t ntargets;
	struct cp_kv *labels; /* owned strings */
	size_t nlabels;
};

struct cp_scrape_job {
	char *name;
	int64_t interval, timeout; /* nanoseconds */
	char *scheme;              /* http or https */
	struct cp_kv *params;      /* extra URL parameters, owned */
	size_t nparams;
	struct cp_scrape_static *statics;
	size_t nstatics;
	char *path_prefix;
	struct cp_scrape_profile *profiles; /* the defaults merged with the job's pprof_config */
	size_t nprofiles;
};

struct cp_scrape_config {
	struct cp_scrape_job *jobs;
	size_t njobs;
};

void cp_scrape_config_release(struct cp_scrape_config *c);
/* The built-in profiles of a job (Parca's defaults): memory (/debug/pprof/allocs),
 * block, goroutine, mutex, process_cpu (/debug/pprof/profile, delta). */
int cp_scrape_default_profiles(struct cp_scrape_profile **out, size_t *n);
/* The default path of a profile name, or NULL. */
const char *cp_scrape_default_path(const char *name, bool *delta);

/* ---- scraping ---- */

/* What a scrape gives: appends of one profile (name = the profile entry's
 * name; labels job, instance, the static labels).  The sink owns nothing:
 * it must copy what it keeps.  Returns 0 or -errno (the scrape is then
 * counted as failed with cp_errmsg). */
typedef int (*cp_scrape_sink)(void *ctx, const struct cp_store_append *a, size_t n);

struct cp_target_state {
	char *job, *instance, *profile, *url;
	bool up;                  /* the last scrape succeeded */
	int64_t last_ns;          /* when the last scrape started (wall clock), 0: never */
	int64_t last_duration_ns; /* how long it took */
	char *last_error;         /* NULL when up */
	uint64_t scrapes, failures;
	uint64_t last_samples; /* samples in the last profile */
	uint64_t last_bytes;   /* size of the last body */
};

struct cp_scraper;
/* NULL + errno (message in cp_errmsg). */
struct cp_scraper *cp_scraper_new(const struct cp_scrape_config *cfg, cp_scrape_sink sink, void *ctx);
void cp_scraper_free(struct cp_scraper *s);
/* Called (from the scraping thread) when a target goes up or down, or its
 * error changes: what a log line is made of. */
void cp_scraper_set_log(struct cp_scraper *s, void (*fn)(void *ctx, const struct cp_target_state *t), void *ctx);
/* Where the last cumulative scrape of each target is kept (cp_scrape_last), so that the next run of a
 * scraper (--once from cron, a restart) takes the difference from it; NULL (the default): in memory
 * only.  Set before the first scrape; dir is copied. */
int cp_scraper_set_state_dir(struct cp_scraper *s, const char *dir);
/* Scrape every target on its schedule until *stop is set or
 * cp_scraper_stop is called (from another thread or a signal handler's
 * flag).  0 or -errno. */
int cp_scraper_run(struct cp_scraper *s, volatile sig_atomic_t *stop);
/* Wake cp_scraper_run so that it returns (thread-safe). */
void cp_scraper_stop(struct cp_scraper *s);
/* Scrape every target once, concurrently, and return when all are done. */
int cp_scraper_round(struct cp_scraper *s);
/* A snapshot of every target's state (thread-safe): free with
 * cp_target_states_free. */
int cp_scraper_targets(struct cp_scraper *s, struct cp_target_state **out, size_t *n);
void cp_target_states_free(struct cp_target_state *t, size_t n);
/* The states as JSON: [{"job","instance","profile","url","health":"up"|"down"|"unknown",
 * "last_scrape","last_duration_seconds","last_error","scrapes","failures","samples","bytes"}] */
int cp_target_states_json(FILE *out, const struct cp_target_state *t, size_t n);
/* ... and in Prometheus text (cprof_scrape_up, _last_duration_seconds,
 * _last_timestamp_seconds, _samples, _total, _failures_total by job,
 * instance and profile). */
int cp_target_states_metrics(FILE *out, const struct cp_target_state *t, size_t n);
/* A log line for a target's change: "JOB INSTANCE PROFILE: up", or
 * "...: down: ERROR" (plus that it is retried, when retried). */
const char *cp_target_state_line(const struct cp_target_state *t, bool retried, char *buf, size_t len);

/* One scrape of a URL given on the command line (cprof scrape URL): what
 * to fetch, and as what.  url_arg is http(s)://HOST[:PORT][/PATH[?QUERY]];
 * profile is --profile (NULL: from the path's last part, "profile" being
 * process_cpu and "allocs" memory; process_cpu for a URL without a path,
 * which then gets the profile's default path, Go's /debug/pprof/NAME for a
 * name without one); seconds is --seconds (ns; 0: not given: 10 s for a
 * delta profile), timeout --timeout (ns; 0: not given).  A delta profile
 * (process_cpu, fgprof, or any with --seconds) gets ?seconds= unless the
 * URL has it; the timeout is then the URL's seconds or N + 3 s, else 30 s.
 * 0, -EINVAL with a message (not an http(s) URL, no host, a bad profile
 * name), or -ENOMEM.  Release with cp_scrape_request_release. */
struct cp_scrape_request {
	char *url;          /* what to fetch */
	char *name;         /* the profile type name to store it as */
	char instance[256]; /* HOST[:PORT], the instance label */
	int64_t timeout;    /* ns */
};
int cp_scrape_request_make(const char *url_arg, const char *profile, int64_t seconds, int64_t timeout,
			   struct cp_scrape_request *r);
void cp_scrape_request_release(struct cp_scrape_request *r);
/* cp_scrape_since_last for the scrape of a request, with the last one kept in state_dir (NULL: none). */
int cp_scrape_request_since_last(const struct cp_scrape_request *r, const char *state_dir, struct cp_profile **p);

/* The last scrape of a cumulative profile (cumulative.h) of one target, which the next one is stored
 * as the difference from: in memory, and with a state directory in DIR/scrape-last/ (a file per
 * target, named by a hash of its key, written atomically), where the next run of a scraper finds it. */
struct cp_scrape_last {
	char *path;           /* NULL: memory only */
	struct cp_profile *p; /* the last scrape as it came, NULL: none yet */
	bool loaded;
};
/* key: what names the target and profile (job, instance, profile name, URL).  0 or -ENOMEM. */
int cp_scrape_last_init(struct cp_scrape_last *l, const char *state_dir, const char *key);
void cp_scrape_last_release(struct cp_scrape_last *l);
/* *p, a scrape as it came, taken at time t (ns, the scraper's clock), becomes what to store: when it is
 * cumulative, what happened since the last scrape (the first: only its other values; cumulative.h),
 * its time the last one's and its duration the time between them, and the last becomes *p as it came
 * (kept in the state directory too: a failure to write it is logged, not an error); else it stays.  0
 * or -errno (ENOMEM); on error *p is as it was. */
int cp_scrape_since_last(struct cp_scrape_last *l, struct cp_profile **p, int64_t t);

/* One scrape of url (a full URL) with a timeout: the decoded profile.
 * NULL + errno with a message naming the URL and what went wrong. */
struct cp_profile *cp_scrape_once(const char *url, int64_t timeout_ns, size_t *bytes);

#endif
