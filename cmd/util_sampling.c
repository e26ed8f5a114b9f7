/* SPDX-License-Identifier: MIT */
/* The options of the commands that sample, record and top (cmd.h's struct
 * sampling_args, perf's record_opts): the target (--all, -p, --cgroup,
 * -- CMD), how to sample (-F, --idle, --off-cpu, --no-kernel, --max-memory,
 * --off-cpu-min and -period), and where debug information comes from
 * (--debuginfo-path, --debuginfod). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/sampling/debuginfod.h"
#include "../lib/sampling/recorder.h"
#include "../lib/util.h"
#include "cmd.h"

/* -p PID[,PID...]: appends to *pids; EXIT_OK or an error (printed). */
static int parse_pid_list(const char *verb, char *arg, uint32_t **pids, size_t *npids)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v;
		uint32_t *np;

		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno || *end || end == tok || v == 0 || v > 0x7fffffff)
			return usage_error(verb, "bad pid '%s': want a process id (e.g. -p 1234,5678)", tok);
		np = realloc(*pids, (*npids + 1) * sizeof(*np));
		if (!np)
			return fail(verb, "out of memory");
		*pids = np;
		(*pids)[(*npids)++] = (uint32_t)v;
	}
	if (!*npids)
		return usage_error(verb, "-p wants a process id (e.g. -p 1234)");
	return EXIT_OK;
}

/* -F HZ: 1 to 10000; EXIT_OK or a usage error (printed). */
static int parse_freq(const char *verb, const char *arg, int *freq)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < 1 || v > 10000)
		return usage_error(verb, "bad frequency '%s': want 1 to 10000 (Hz)", arg);
	*freq = (int)v;
	return EXIT_OK;
}

int parse_offcpu_duration(const char *verb, bool period, const char *arg, int64_t *out)
{
	int64_t v;

	if (cp_parse_duration(arg, &v) || v < (period ? 1000000 : 0) || (period && v > 1000000000))
		return period ? usage_error(verb, "bad --off-cpu-period '%s': want 1ms to 1s, e.g. 10ms", arg)
			      : usage_error(verb, "bad --off-cpu-min '%s': want e.g. 1ms (or 0s)", arg);
	*out = v;
	return EXIT_OK;
}

/* --max-memory SIZE: 1M or more; EXIT_OK or a usage error (printed). */
static int parse_max_memory(const char *verb, const char *arg, uint64_t *out)
{
	int err = cp_parse_size(arg, out);

	if (err || *out < (1u << 20))
		return usage_error(verb, "--max-memory: %s", err ? cp_errmsg(err) : "want a size of 1M or more, such as 64M");
	return EXIT_OK;
}

int check_pids_exist(const char *verb, const uint32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%u", pids[i]);
		if (access(path, F_OK) != 0)
			return fail(verb, "no process %u: check the pid (ps -p %u)", pids[i], pids[i]);
	}
	return EXIT_OK;
}

bool pids_alive(const uint32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kill((pid_t)pids[i], 0) == 0 || errno == EPERM)
			return true;
	return false;
}

/* At start-up, before a command is launched: takes $DEBUGINFOD_URLS out of the environment into
 * o->env (libdw must not fetch on the sampling path; the recorder's fetcher sets it again). */
static void debuginfod_env_take(struct debuginfod_opt *o)
{
	static char *copy; /* one per process: record or top */
	const char *v = getenv("DEBUGINFOD_URLS");

	if (!copy && v && *v)
		copy = strdup(v);
	o->env = copy;
	unsetenv("DEBUGINFOD_URLS");
}

/* --debuginfod URLS (arg), or --no-debuginfod (arg NULL): EXIT_OK or a usage error (printed). */
static int debuginfod_option(const char *verb, const char *arg, struct debuginfod_opt *o)
{
	int err;

	if (arg && (err = cp_debuginfod_check_urls(arg)))
		return usage_error(verb, "--debuginfod: %s", cp_errmsg(err));
	o->urls = arg;
	o->off = !arg;
	return EXIT_OK;
}

/* The servers in effect: NULL when off, else --debuginfod's, else $DEBUGINFOD_URLS's (ignored
 * with a warning when not a list of URLs). */
static const char *debuginfod_servers(const char *verb, const struct debuginfod_opt *o)
{
	int err;

	if (o->off)
		return NULL;
	if (o->urls || !o->env)
		return o->urls;
	if ((err = cp_debuginfod_check_urls(o->env))) {
		cp_log(verb, CP_LOG_WARN, "ignoring $DEBUGINFOD_URLS: %s", cp_errmsg(err));
		return NULL;
	}
	return o->env;
}

void sampling_init(struct sampling_args *s, int freq, uint64_t max_memory)
{
	memset(s, 0, sizeof(*s));
	s->freq = freq;
	s->max_memory = max_memory;
	debuginfod_env_take(&s->dbgd); /* fetched off the sampling path, by the recorder */
}

bool sampling_option(const char *verb, struct sampling_args *s, int opt, char *arg, int *status)
{
	bool file = from_config();

	*status = EXIT_OK;
	switch (opt) {
	case 'a': *(file ? &s->cfg_all : &s->all) = true; return true;
	case 'p':
		*status = file ? parse_pid_list(verb, arg, &s->cfg_pids, &s->cfg_npids) :
				 parse_pid_list(verb, arg, &s->pids, &s->npids);
		return true;
	case OPT_S_CGROUP: *(file ? &s->cfg_cgroup : &s->cgroup) = arg; break;
	case 'F': *status = parse_freq(verb, arg, &s->freq); break;
	case OPT_S_IDLE: s->idle = true; break;
	case OPT_S_OFFCPU: s->offcpu = true; break;
	case OPT_S_NO_KERNEL: s->no_kernel = true; return true;
	case OPT_S_NO_RUNTIMES: s->no_runtimes = true; break;
	case OPT_S_DEBUGINFO: s->debuginfo = arg; break;
	case OPT_S_MAX_MEMORY: *status = parse_max_memory(verb, arg, &s->max_memory); break;
	case OPT_S_DEBUGINFOD:
	case OPT_S_NO_DEBUGINFOD:
		*status = debuginfod_option(verb, opt == OPT_S_DEBUGINFOD ? arg : NULL, &s->dbgd);
		break;
	default: return false;
	}
	s->tuned |= !file;
	return true;
}

int sampling_finish(const char *verb, struct sampling_args *s, char **cmd)
{
	s->cmd = cmd;
	if (!s->all && !s->npids && !s->cmd && !s->cgroup) { /* the file's target */
		s->all = s->cfg_all;
		s->cgroup = s->cfg_cgroup;
		free(s->pids);
		s->pids = s->cfg_pids;
		s->npids = s->cfg_npids;
		s->cfg_pids = NULL;
		s->cfg_npids = 0;
	}
	if ((int)s->all + (s->npids > 0) + (s->cmd != NULL) > 1)
		return usage_error(verb, "give one target: --all, -p PID or -- CMD (--cgroup narrows any of them)");
	return EXIT_OK;
}

void sampling_recorder_opts(const char *verb, const struct sampling_args *s, struct cp_recorder_opts *ro)
{
	memset(ro, 0, sizeof(*ro));
	ro->freq = s->freq;
	ro->pids = s->pids;
	ro->npids = s->npids;
	ro->cgroup = s->cgroup;
	ro->idle = s->idle;
	ro->no_kernel = s->no_kernel;
	ro->no_runtimes = s->no_runtimes;
	ro->offcpu = s->offcpu;
	ro->debuginfo = s->debuginfo;
	ro->max_memory = s->max_memory;
	ro->debuginfod = debuginfod_servers(verb, &s->dbgd);
	ro->verb = verb;
}

void sampling_release(struct sampling_args *s)
{
	free(s->pids);
	free(s->cfg_pids);
	s->pids = s->cfg_pids = NULL;
	s->npids = s->cfg_npids = 0;
}
