/* SPDX-License-Identifier: MIT */
/* cprof top: a live view of where the CPU goes (the same BPF sampler as
 * record), or of stored history stepped through in time windows; on the
 * terminal with ncurses, or as plain tables with --stdio. */
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/util.h"
#include "top.h"

enum { OPT_NO_USER = 300, OPT_STDIO, OPT_FROM_STORE, OPT_VIEW, OPT_FILTER, OPT_FUNCTION, OPT_TYPE, OPT_WINDOW,
       OPT_LIMIT, OPT_SHOW };

static const struct option options[] = {
	SAMPLING_OPTIONS,
	{ "delay", required_argument, NULL, 'd' },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "iterations", required_argument, NULL, 'n' },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "sort", required_argument, NULL, 's' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "function", required_argument, NULL, OPT_FUNCTION },
	{ "show", required_argument, NULL, OPT_SHOW },
	{ "no-user", no_argument, NULL, OPT_NO_USER },
	{ "from-store", no_argument, NULL, OPT_FROM_STORE },
	{ "type", required_argument, NULL, OPT_TYPE },
	STORE_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_top(int argc, char **argv);

const struct cmd cmd_top = {
	"top", "a live view of where the CPU goes, or of stored history", run_top, options, "+ap:F:d:n:s:h",
	"usage: cprof top [OPTIONS] [--all | -p PID[,PID...] | --cgroup PATH | -- CMD [ARGS...]]\n"
	"       cprof top --from-store [--since DUR] [--data DIR | --remote URL] [OPTIONS]\n"
	"\n"
	"Sample on-CPU stacks with eBPF, as cprof record does, and show which\n"
	"functions, processes and threads use the CPU, redrawn every second: a\n"
	"header with totals, then a table.  With --from-store (or --remote) it\n"
	"browses stored profiles instead, a time window at a time.  Keys: ? shows\n"
	"them all; q quits.  Live sampling needs root, or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"What to sample (default: the whole system):\n"
	"  -a, --all               the whole system (idle left out)\n"
	"  -p, --pid PID[,PID]     these processes (all their threads)\n"
	"      --cgroup PATH       tasks in this cgroup v2 directory and below\n"
	"  -- CMD [ARGS]           run CMD and sample it and its children\n"
	"  -F, --freq HZ           samples per second per CPU (default 99)\n"
	"      --idle              keep samples of the idle task (swapper)\n"
	"      --off-cpu           also where threads wait off the CPU, as record\n"
	"                          --off-cpu: shows off-CPU time (o switches)\n"
	"      --show WHAT         cpu (on-CPU samples), offcpu or wall (on + off the\n"
	"                          CPU, in time); offcpu and wall imply --off-cpu\n"
	"      --debuginfo-path P  where separate debug files are looked for\n"
	"      --max-memory SIZE   keep the sampler's resident memory under SIZE by\n"
	"                          evicting cached binaries and symbols (default 64M)\n"
	"      --debuginfod URLS   fetch debug files missing locally from these debuginfod\n"
	"                          servers, in the background (default: $DEBUGINFOD_URLS)\n"
	"      --no-debuginfod     do not fetch debug files\n"
	"\n"
	"History:\n"
	"      --from-store        browse the store instead of sampling; arrow keys\n"
	"                          left and right step through the time windows\n"
	"      --type SELECTOR     which profiles (default: cpu)\n"
	STORE_USAGE
	"\n"
	"Display:\n"
	"  -d, --delay DUR         refresh every DUR (default 1s; + and - change it)\n"
	"      --window DUR        live: the table covers the last DUR (default 10s);\n"
	"                          history: the length of a window (default: a 60th\n"
	"                          of the range, at least 10s)\n"
	"  -n, --iterations N      stop after N refreshes\n"
	"      --stdio             print the table to standard output at each refresh\n"
	"                          instead of drawing on the terminal\n"
	"      --view VIEW         functions (default), processes, threads, or callers\n"
	"                          (the callers and callees of --function, else of\n"
	"                          the function with the most self)\n"
	"  -s, --sort KEY          self (default), total or name\n"
	"      --filter REGEX      only rows whose name matches (PCRE2; / on the screen)\n"
	"      --function NAME     the function of --view callers\n"
	"      --limit N           rows of --stdio tables (default 25; 0: all)\n"
	"      --no-kernel         leave kernel frames out (k on the screen)\n"
	"      --no-runtimes       name no Python, JavaScript, Java or Ruby frame\n"
	"                          from the process's memory (JIT code: perf maps only)\n"
	"      --no-user           leave user frames out (u on the screen)\n"
	"  -h, --help              show this help\n",
	.formats = NULL, /* no --format */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* What the header says about where the data comes from. */
struct cp_view_title top_title(const struct top *t, char *buf, size_t len)
{
	if (t->history)
		snprintf(buf, len, "%s", t->type ? t->type : "cpu");
	else if (t->s.cmd)
		snprintf(buf, len, "%s", t->s.cmd[0]);
	else if (t->s.npids)
		snprintf(buf, len, "pid %u%s", t->s.pids[0], t->s.npids > 1 ? ",..." : "");
	else if (t->s.cgroup)
		snprintf(buf, len, "cgroup %s", t->s.cgroup);
	else
		snprintf(buf, len, "whole system");
	if (!t->history && t->v->value[0]) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, ", %s", !strcmp(t->v->value, "wall") ? "wall-clock time" : "off-CPU time");
	}
	return (struct cp_view_title){ buf, t->s.freq, t->ncpus, t->delay, t->window, t->dropped };
}

/* ---- options ---- */

static int parse_dur(const char *opt, const char *arg, int64_t min, int64_t *out)
{
	int64_t v = 0;

	if (arg[0] && strspn(arg, "0123456789.") == strlen(arg) && strlen(arg) < 12) {
		char *end;
		double d = strtod(arg, &end); /* plain seconds, as top -d takes */

		if (*end || d <= 0)
			return usage_error("top", "bad %s '%s': want e.g. 1s, 500ms or 2", opt, arg);
		v = (int64_t)(d * 1e9);
	} else if (cp_parse_duration(arg, &v)) {
		return usage_error("top", "bad %s '%s': want e.g. 1s, 500ms or 2", opt, arg);
	}
	if (v < min)
		return usage_error("top", "bad %s '%s': want %lld ms or more", opt, arg, (long long)(min / 1000000));
	*out = v;
	return EXIT_OK;
}

static int parse_options(struct top *t, int argc, char **argv)
{
	int opt, err;
	bool sampling_opt = false;

	while ((opt = next_option(&cmd_top, argc, argv)) != -1) {
		if (store_option(&t->sa, opt, optarg))
			continue;
		if (sampling_option("top", &t->s, opt, optarg, &err)) {
			if (err)
				return err;
			continue;
		}
		switch (opt) {
		case 'd':
			if ((err = parse_dur("--delay", optarg, 100000000LL, &t->delay)) != EXIT_OK)
				return err;
			break;
		case OPT_WINDOW:
			if ((err = parse_dur("--window", optarg, 100000000LL, &t->window)) != EXIT_OK)
				return err;
			break;
		case 'n':
			if ((err = parse_count("top", "--iterations", optarg, &t->iterations)) != EXIT_OK)
				return err;
			if (t->iterations < 1)
				return usage_error("top", "bad --iterations '%s': want 1 or more", optarg);
			break;
		case OPT_LIMIT:
			if ((err = parse_count("top", "--limit", optarg, &t->limit)) != EXIT_OK)
				return err;
			break;
		case OPT_STDIO: t->stdio = true; break;
		case OPT_VIEW:
			if ((err = cp_view_kind_parse(optarg)) < 0)
				return usage_error("top", "unknown view '%s': want functions, processes, threads or callers",
						   optarg);
			t->v->kind = (enum cp_view_kind)err;
			break;
		case 's':
			if ((err = cp_view_sort_parse(optarg)) < 0)
				return usage_error("top", "unknown sort key '%s': want self, total or name", optarg);
			t->v->sort = (enum cp_view_sort)err;
			break;
		case OPT_FILTER:
			if ((err = cp_view_set_filter(t->v, optarg)))
				return err == -ENOMEM ? fail("top", "out of memory") : usage_error("top", "%s", cp_errmsg(err));
			break;
		case OPT_FUNCTION: t->function = optarg; break;
		case OPT_SHOW:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "offcpu") && strcmp(optarg, "wall"))
				return usage_error("top", "unknown --show '%s': want cpu, offcpu or wall", optarg);
			t->show = optarg;
			if (strcmp(optarg, "cpu"))
				t->s.offcpu = true;
			sampling_opt = true;
			break;
		case OPT_NO_USER: t->v->no_user = true; break;
		case OPT_FROM_STORE: t->history = true; break;
		case OPT_TYPE: t->type = optarg; break;
		case 'h': return show_usage(&cmd_top) == EXIT_OK ? -1 : EXIT_FAIL;
		default: return EXIT_USAGE;
		}
	}
	t->v->no_kernel = t->s.no_kernel; /* the view's: k on the screen shows them again */
	if (t->sa.data || t->sa.since || t->sa.from || t->sa.to || t->sa.remote)
		t->history = true; /* store options: history */
	if (t->v->no_kernel && t->v->no_user)
		return usage_error("top", "--no-kernel and --no-user together leave no frames");
	if (t->function && t->v->kind != CP_VIEW_CALLERS)
		return usage_error("top", "--function goes with --view callers");
	if (t->history) {
		if (optind < argc || t->s.all || t->s.cgroup || t->s.tuned || sampling_opt)
			return usage_error("top", "--from-store browses stored profiles: -F, --all, --cgroup, --idle, "
						  "--off-cpu, --show, --debuginfo-path, --max-memory, --debuginfod and -- CMD "
						  "are for live sampling (--type offcpu or wall shows stored off-CPU time)");
		if ((err = store_range("top", &t->sa)) != EXIT_OK)
			return err;
	} else {
		if (t->type)
			return usage_error("top", "--type selects stored profiles: it goes with --from-store");
		if (t->sa.token_file)
			return usage_error("top", "--token-file goes with --remote URL");
		if ((err = sampling_finish("top", &t->s, optind < argc ? argv + optind : NULL)))
			return err;
		if ((err = check_pids_exist("top", t->s.pids, t->s.npids)) != EXIT_OK)
			return err;
	}
	if (!t->stdio && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)))
		return usage_error("top", "the screen view needs a terminal: use --stdio for plain tables");
	return EXIT_OK;
}

/* ---- the command ---- */

static int start_live(struct top *t)
{
	struct cp_recorder_opts ro;
	int err;

	sampling_recorder_opts("top", &t->s, &ro); /* (off-CPU: record's default period, the sampling period) */
	ro.no_kernel = false;                      /* the view leaves them out, until k */
	if (!(t->rec = cp_recorder_start(&ro, t->s.cmd, &t->child)))
		return fail("top", "%s", cp_errmsg(errno));
	if (t->s.cmd && (err = cp_launch_release(&t->child)))
		return fail("top", "%s", cp_errmsg(err));
	if (t->s.offcpu && (err = cp_view_set_value(t->v, !t->show ? "offcpu" : !strcmp(t->show, "cpu") ? "samples" : t->show)))
		return fail("top", "%s", cp_errmsg(err));
	return EXIT_OK;
}

/* A live refresh: the interval's profile joins the window. */
static int tick(struct top *t, int64_t interval)
{
	struct cp_profile *p = cp_recorder_take(t->rec);
	struct cp_sampler_counts c;
	int err;

	if (!p)
		return -ENOMEM;
	cp_recorder_counts(t->rec, &c);
	t->dropped = c.dropped;
	err = cp_view_live_add(t->v, p, interval, (size_t)((t->window + t->delay - 1) / t->delay));
	cp_recorder_prune(t->rec);
	return err;
}

/* The stdio output of one refresh: --function, or the top function of this refresh. */
static int stdio_refresh(struct top *t)
{
	char tg[128];
	struct cp_view_title ti = top_title(t, tg, sizeof(tg));
	int err;

	if ((err = cp_view_pick_focus(t->v, t->function)))
		return err;
	return cp_view_print(stdout, t->v, &ti, (size_t)t->limit);
}

static int run_loop(struct top *t)
{
	int64_t next = cp_mono_ns() + t->delay, last = cp_mono_ns();
	int iter = 0, err = 0, ch;
	bool dirty = true;

	for (;;) {
		int64_t now;

		if (t->history) {
			if (t->stdio)
				return stdio_refresh(t) ? EXIT_FAIL : EXIT_OK;
			/* history: only keys change things */
			ch = getch();
			if (stop_signal)
				break;
			if (ch != ERR) {
				if ((err = top_screen_key(t, ch)) != 0)
					break;
				dirty = true;
			}
			if (dirty)
				top_screen_draw(t);
			dirty = false;
			continue;
		}
		err = cp_recorder_poll(t->rec, t->tui ? 20 : 50);
		if (err == -EINTR)
			err = 0;
		if (err)
			break;
		if (stop_signal)
			break;
		if (t->s.cmd && !t->child.exited && cp_launch_poll(&t->child)) {
			top_screen_msg(t, "%s exited", t->s.cmd[0]);
		}
		while (t->tui && (ch = getch()) != ERR) {
			if ((err = top_screen_key(t, ch)) != 0)
				goto out;
			dirty = true;
		}
		now = cp_mono_ns();
		if (now >= next) {
			if ((err = tick(t, now - last)))
				break;
			last = now;
			next = now + t->delay;
			iter++;
			if (t->stdio && (err = stdio_refresh(t)))
				break;
			dirty = true;
			if (t->iterations && iter >= t->iterations)
				break;
			if (t->stdio && t->child.exited)
				break; /* the command is done: so are its tables */
			if (t->s.npids && !pids_alive(t->s.pids, t->s.npids)) {
				if (t->stdio)
					break;
				top_screen_msg(t, "the processes are gone");
			}
		}
		if (t->tui && dirty) {
			top_screen_draw(t);
			dirty = false;
		}
	}
out:
	if (err > 0)
		err = 0; /* q */
	if (err) {
		top_screen_end(t);
		return fail("top", "%s", err == -EIO ? "cannot write to standard output" : cp_errmsg(err));
	}
	return EXIT_OK;
}

static int run_top(int argc, char **argv)
{
	struct top t;
	struct sigaction sa;
	int status;

	memset(&t, 0, sizeof(t));
	sampling_init(&t.s, 99, CP_RECORD_MAX_MEMORY);
	t.delay = 1000000000LL;
	t.limit = 25;
	cp_launch_init(&t.child);
	if (!(t.v = cp_view_new()))
		return fail("top", "out of memory");
	status = parse_options(&t, argc, argv);
	if (status != EXIT_OK)
		goto out;
	t.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!t.history && !t.window)
		t.window = 10000000000LL;
	if (t.window && t.window < t.delay && !t.history)
		t.window = t.delay;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (t.history) {
		int err;

		if (!store_get("top", &t.sa)) {
			status = EXIT_FAIL;
			goto out;
		}
		if ((err = cp_view_history_open(t.v, t.sa.store, t.type, t.s.pids, t.s.npids, t.sa.t_from, t.sa.t_to,
						t.window))) {
			status = fail("top", "%s", cp_errmsg(err));
			goto out;
		}
	} else if ((status = start_live(&t)) != EXIT_OK) {
		goto out;
	}
	if (!t.stdio && (status = cp_view_pick_focus(t.v, t.function))) { /* --view callers: its function */
		status = fail("top", "%s", cp_errmsg(status));
		goto out;
	}
	if (!t.stdio && (status = top_screen_start(&t)) != EXIT_OK)
		goto out;
	status = run_loop(&t);
	top_screen_end(&t);
out:
	cp_launch_end(&t.child);
	cp_recorder_free(t.rec);
	cp_view_free(t.v);
	store_args_release(&t.sa);
	sampling_release(&t.s);
	return status < 0 ? EXIT_OK : status;
}
