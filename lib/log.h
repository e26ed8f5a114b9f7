/* SPDX-License-Identifier: MIT */
/* Logging for the long-running parts (serve, record, scrape): one line per
 * event on stderr, "cprof VERB: message"; under systemd (stderr is the
 * journal's stream, $JOURNAL_STREAM) each line carries its priority, <N>.
 * The level is process-wide: set once at start-up, read by any thread. */
#ifndef CP_LOG_H
#define CP_LOG_H

#include <stdbool.h>

enum cp_log_level { CP_LOG_ERROR, CP_LOG_WARN, CP_LOG_INFO, CP_LOG_DEBUG };

/* CP_LOG_INFO unless changed (--log-level, -q); $CPROF_DEBUG also enables debug. */
extern int cp_log_level;

/* "error", "warn" (or "warning"), "info", "debug": the level, or -1. */
int cp_log_level_parse(const char *name);
/* The name of a level ("info"). */
const char *cp_log_level_name(int level);
/* Would a line at this level be written? */
bool cp_log_enabled(int level);
/* Writes "cprof VERB: message" when the level is enabled. */
void cp_log(const char *verb, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
