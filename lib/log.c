/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cp_log_level = CP_LOG_INFO;

static const char *const names[] = { "error", "warn", "info", "debug" };

int cp_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, names[i]) || (i == CP_LOG_WARN && !strcmp(name, "warning")))
			return i;
	return -1;
}

const char *cp_log_level_name(int level)
{
	return level >= 0 && level < 4 ? names[level] : "?";
}

bool cp_log_enabled(int level)
{
	return level <= cp_log_level || (level == CP_LOG_DEBUG && getenv("CPROF_DEBUG"));
}

/* stderr is the journal's stream ($JOURNAL_STREAM is its device:inode) */
static bool to_journal(void)
{
	static int known = -1;
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (known < 0)
		known = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
			(unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	return known;
}

void cp_log(const char *verb, int level, const char *fmt, ...)
{
	static const int prio[] = { 3, 4, 6, 7 }; /* sd-daemon(3): err, warning, info, debug */
	char line[2048];
	va_list ap;

	if (!cp_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (to_journal())
		fprintf(stderr, "<%d>cprof %s: %s\n", prio[level], verb, line);
	else
		fprintf(stderr, "cprof %s: %s\n", verb, line);
}
