/* SPDX-License-Identifier: MIT */
/* cprof top: a live view of where the CPU goes (the same BPF sampler as
 * record), or of stored history stepped through in time windows; on the
 * terminal with ncurses, or as plain tables with --stdio. */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/launch.h"
#include "../lib/recorder.h"
#include "../lib/util.h"
#include "../lib/view/text.h"
#include "../lib/view/view.h"
#include "cmd.h"

enum { OPT_CGROUP = 300, OPT_IDLE, OPT_NO_KERNEL, OPT_NO_USER, OPT_DEBUGINFO, OPT_STDIO, OPT_FROM_STORE,
       OPT_VIEW, OPT_FILTER, OPT_FUNCTION, OPT_TYPE, OPT_WINDOW, OPT_LIMIT };

static const struct option options[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "freq", required_argument, NULL, 'F' },
	{ "delay", required_argument, NULL, 'd' },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "iterations", required_argument, NULL, 'n' },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "sort", required_argument, NULL, 's' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "function", required_argument, NULL, OPT_FUNCTION },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
	{ "no-user", no_argument, NULL, OPT_NO_USER },
	{ "debuginfo-path", required_argument, NULL, OPT_DEBUGINFO },
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
	"      --debuginfo-path P  where separate debug files are looked for\n"
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
	"      --no-user           leave user frames out (u on the screen)\n"
	"  -h, --help              show this help\n",
};

struct top {
	/* options */
	int freq, iterations, limit;
	bool all, idle, stdio, history;
	const char *cgroup, *debuginfo, *type, *function;
	uint32_t *pids;
	size_t npids;
	char **cmd;
	int64_t delay, window;
	struct store_args sa;
	/* live */
	struct cp_recorder *rec;
	uint64_t dropped;
	int ncpus;
	struct cp_launch child; /* -- CMD */
	/* what is shown: lib/view */
	struct cp_view *v;
	/* the screen */
	long first_row;
	bool tui, utf8, help, prompt;
	char input[256];
	size_t ninput;
	char msg[256];
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* What the header says about where the data comes from. */
static struct cp_view_title title(const struct top *t, char *buf, size_t len)
{
	if (t->history)
		snprintf(buf, len, "%s", t->type ? t->type : "cpu");
	else if (t->cmd)
		snprintf(buf, len, "%s", t->cmd[0]);
	else if (t->npids)
		snprintf(buf, len, "pid %u%s", t->pids[0], t->npids > 1 ? ",..." : "");
	else if (t->cgroup)
		snprintf(buf, len, "cgroup %s", t->cgroup);
	else
		snprintf(buf, len, "whole system");
	return (struct cp_view_title){ buf, t->freq, t->ncpus, t->delay, t->window, t->dropped };
}

/* ---- the screen ---- */

static void put_line(int y, const char *s, int attr)
{
	attrset(attr);
	move(y, 0);
	clrtoeol();
	addnstr(s, COLS);
	attrset(A_NORMAL);
}

static const char *const help_text[] = {
	"cprof top - keys",
	"",
	"  ?, h          this help (any key closes it)",
	"  q             quit",
	"  1 / 2 / 3     functions / processes / threads",
	"  4, c          callers and callees of the selected function",
	"  Tab           the next view",
	"  Enter         zoom: a process's or thread's functions, a function's",
	"                callers and callees, or follow a caller or callee",
	"  Esc, Bksp     back out of a zoom",
	"  s / t / n     sort by self / total / name",
	"  /             filter rows by regular expression (empty: none)",
	"  k / u         show or hide kernel / user frames",
	"  p, Space      pause (live)",
	"  + / -         refresh more or less often (live)",
	"  z             start the window afresh (live)",
	"  Left / Right  the previous / next time window (history)",
	"  Up, Down, PgUp, PgDn, Home, End   select a row",
	NULL,
};

static void draw(struct top *t)
{
	struct cp_view *v = t->v;
	char lines[3][CP_VIEW_LINE], buf[2048], tg[128];
	struct cp_view_title ti = title(t, tg, sizeof(tg));
	size_t off, n;
	int y, body, top_y = 5;

	erase();
	if (LINES < 10 || COLS < 50) {
		snprintf(buf, sizeof(buf), "terminal too small (%dx%d): cprof top needs 50x10", COLS, LINES);
		mvaddnstr(0, 0, buf, COLS);
		refresh();
		return;
	}
	if (t->help) {
		for (y = 0; help_text[y] && y < LINES; y++)
			put_line(y, help_text[y], y == 0 ? A_BOLD : A_NORMAL);
		refresh();
		return;
	}
	cp_view_header(v, &ti, lines);
	put_line(0, lines[0], A_BOLD);
	put_line(1, lines[1], A_NORMAL);
	/* the sparkline, the window shown in reverse video */
	cp_view_spark_text(v, (size_t)COLS > 24 ? (size_t)COLS - 24 : 1, t->utf8, buf, sizeof(buf), &off, &n);
	move(2, 0);
	clrtoeol();
	addstr(v->history ? "over time  " : "samples/s  ");
	addnstr(buf, n ? (int)off : -1);
	if (n) {
		attron(A_REVERSE);
		addnstr(buf + off, (int)n);
		attroff(A_REVERSE);
		addstr(buf + off + n);
	}
	put_line(3, lines[2], A_NORMAL);
	cp_view_columns(v, buf, sizeof(buf), COLS);
	put_line(4, buf, A_REVERSE);
	body = LINES - top_y - 1;
	if (v->sel < t->first_row)
		t->first_row = v->sel;
	if (v->sel >= t->first_row + body)
		t->first_row = v->sel - body + 1;
	if (t->first_row < 0)
		t->first_row = 0;
	for (y = 0; y < body && (size_t)(t->first_row + y) < v->nrows; y++) {
		long i = t->first_row + y;

		cp_view_row_text(v, (size_t)i, buf, sizeof(buf), COLS);
		put_line(top_y + y, buf, i == v->sel ? A_REVERSE : A_NORMAL);
	}
	if (!v->nrows)
		put_line(top_y, v->re_costly ? "(the filter is too costly to match: it matches nothing)" :
				v->filter[0]  ? "(no rows match the filter)" : "(no samples yet)", A_DIM);
	if (t->prompt) {
		snprintf(buf, sizeof(buf), "filter (regex, Enter applies, Esc cancels): %.*s", (int)t->ninput, t->input);
		put_line(LINES - 1, buf, A_BOLD);
	} else {
		snprintf(buf, sizeof(buf), "%s", t->msg[0] ? t->msg : "? help   q quit   / filter   Enter zoom   Esc back");
		put_line(LINES - 1, buf, t->msg[0] ? A_BOLD : A_DIM);
	}
	refresh();
}

/* ---- keys ---- */

static void set_msg(struct top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(struct top *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
}

/* 1 from the view's calls is "nothing to do": not an error. */
static int done(int err)
{
	return err > 0 ? 0 : err;
}

static int set_view(struct top *t, enum cp_view_kind kind)
{
	int err = cp_view_set_kind(t->v, kind);

	if (err > 0)
		set_msg(t, "no function to show the callers of");
	return done(err);
}

static int filter_key(struct top *t, int ch)
{
	int err;

	if (ch == 27) { /* Esc */
		t->prompt = false;
		return 0;
	}
	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		t->prompt = false;
		t->input[t->ninput] = 0;
		if ((err = cp_view_set_filter(t->v, t->input)) == -ENOMEM)
			return err;
		if (err)
			set_msg(t, "%s", cp_errmsg(err));
		else
			set_msg(t, t->v->filter[0] ? "filter: /%s/" : "filter cleared", t->v->filter);
		return 0;
	}
	if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (t->ninput)
			t->ninput--;
		return 0;
	}
	if (ch >= 32 && ch < 256 && t->ninput + 1 < sizeof(t->input))
		t->input[t->ninput++] = (char)ch;
	return 0;
}

/* One key. Returns 1 to quit, 0, or -errno. */
static int handle_key(struct top *t, int ch)
{
	struct cp_view *v = t->v;
	long page = LINES > 8 ? LINES - 7 : 1;
	char buf[32];

	if (ch == KEY_RESIZE)
		return 0;
	if (t->prompt)
		return filter_key(t, ch);
	if (t->help) {
		t->help = false;
		return 0;
	}
	t->msg[0] = 0;
	switch (ch) {
	case 'q':
	case 'Q': return 1;
	case '?':
	case 'h': t->help = true; return 0;
	case '1': return set_view(t, CP_VIEW_FUNCTIONS);
	case '2': return set_view(t, CP_VIEW_PROCESSES);
	case '3': return set_view(t, CP_VIEW_THREADS);
	case '4':
	case 'c': return set_view(t, CP_VIEW_CALLERS);
	case '\t': return set_view(t, (enum cp_view_kind)((v->kind + 1) % CP_VIEW_COUNT));
	case 's': return cp_view_set_sort(v, CP_SORT_SELF);
	case 't': return cp_view_set_sort(v, CP_SORT_TOTAL);
	case 'n': return cp_view_set_sort(v, CP_SORT_NAME);
	case '/':
		t->prompt = true;
		snprintf(t->input, sizeof(t->input), "%s", v->filter);
		t->ninput = strlen(t->input);
		return 0;
	case '\n':
	case '\r':
	case KEY_ENTER: return done(cp_view_zoom_in(v));
	case 27:
	case KEY_BACKSPACE:
	case 127: return done(cp_view_zoom_out(v));
	case 'k':
		set_msg(t, "kernel frames %s", !v->no_kernel ? "hidden" : "shown");
		return cp_view_set_frames(v, !v->no_kernel, v->no_kernel && v->no_user);
	case 'u':
		set_msg(t, "user frames %s", !v->no_user ? "hidden" : "shown");
		return cp_view_set_frames(v, v->no_user && v->no_kernel, !v->no_user);
	case 'p':
	case ' ':
		if (t->history) {
			set_msg(t, "history does not move: nothing to pause");
			return 0;
		}
		v->paused = !v->paused;
		set_msg(t, v->paused ? "paused: p resumes" : "resumed");
		return 0;
	case '+':
	case '=':
	case '-':
		if (t->history) {
			set_msg(t, "history: the window is --window (%lld s)", (long long)(v->window / 1000000000));
			return 0;
		}
		t->delay = cp_view_next_delay(t->delay, ch == '-' ? 1 : -1);
		set_msg(t, "refresh every %s", cp_view_duration(t->delay, buf, sizeof(buf)));
		return 0;
	case 'z':
		if (t->history)
			return 0;
		set_msg(t, "the window starts afresh");
		return cp_view_live_clear(v);
	case KEY_UP: cp_view_select(v, v->sel - 1); return 0;
	case KEY_DOWN: cp_view_select(v, v->sel + 1); return 0;
	case KEY_PPAGE: cp_view_select(v, v->sel - page); return 0;
	case KEY_NPAGE: cp_view_select(v, v->sel + page); return 0;
	case KEY_HOME: cp_view_select(v, 0); return 0;
	case KEY_END: cp_view_select(v, (long)v->nrows - 1); return 0;
	case KEY_LEFT:
	case KEY_RIGHT:
	case '[':
	case ']':
		if (!t->history) {
			set_msg(t, "live: the time windows are for --from-store");
			return 0;
		}
		return done(cp_view_history_step(v, ch == KEY_LEFT || ch == '[' ? -1 : 1));
	default:
		return 0;
	}
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
		switch (opt) {
		case 'a': t->all = true; break;
		case 'p':
			if ((err = parse_pid_list("top", optarg, &t->pids, &t->npids)) != EXIT_OK)
				return err;
			break;
		case OPT_CGROUP: t->cgroup = optarg; sampling_opt = true; break;
		case 'F':
			if ((err = parse_freq("top", optarg, &t->freq)) != EXIT_OK)
				return err;
			sampling_opt = true;
			break;
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
		case OPT_IDLE: t->idle = true; sampling_opt = true; break;
		case OPT_NO_KERNEL: t->v->no_kernel = true; break;
		case OPT_NO_USER: t->v->no_user = true; break;
		case OPT_DEBUGINFO: t->debuginfo = optarg; sampling_opt = true; break;
		case OPT_FROM_STORE: t->history = true; break;
		case OPT_TYPE: t->type = optarg; break;
		case 'h': return show_usage(&cmd_top) == EXIT_OK ? -1 : EXIT_FAIL;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		t->cmd = argv + optind;
	if (t->sa.data || t->sa.since || t->sa.from || t->sa.to || t->sa.remote)
		t->history = true; /* store options: history */
	if (t->v->no_kernel && t->v->no_user)
		return usage_error("top", "--no-kernel and --no-user together leave no frames");
	if (t->function && t->v->kind != CP_VIEW_CALLERS)
		return usage_error("top", "--function goes with --view callers");
	if (t->history) {
		if (t->cmd || t->all || t->cgroup || sampling_opt)
			return usage_error("top", "--from-store browses stored profiles: -F, --all, --cgroup, --idle, "
						  "--debuginfo-path and -- CMD are for live sampling");
		if ((err = store_range("top", &t->sa)) != EXIT_OK)
			return err;
	} else {
		if (t->type)
			return usage_error("top", "--type selects stored profiles: it goes with --from-store");
		if (t->sa.token_file)
			return usage_error("top", "--token-file goes with --remote URL");
		if ((int)t->all + (t->npids > 0) + (t->cmd != NULL) > 1)
			return usage_error("top", "give one target: --all, -p PID or -- CMD (--cgroup narrows any of them)");
		if ((err = check_pids_exist("top", t->pids, t->npids)) != EXIT_OK)
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
	uint32_t child_pid = 0;
	int err;

	if (t->cmd) {
		if ((err = cp_launch_start(&t->child, t->cmd)))
			return fail("top", "cannot start %s: %s", t->cmd[0], strerror(-err));
		child_pid = (uint32_t)t->child.pid;
	}
	memset(&ro, 0, sizeof(ro));
	ro.freq = t->freq;
	ro.pids = t->cmd ? &child_pid : t->pids;
	ro.npids = t->cmd ? 1 : t->npids;
	ro.follow_forks = t->cmd != NULL;
	ro.cgroup = t->cgroup;
	ro.idle = t->idle;
	ro.debuginfo = t->debuginfo;
	t->rec = cp_recorder_new(&ro);
	if (!t->rec) {
		int status = fail("top", "%s", cp_errmsg(errno));

		cp_launch_end(&t->child); /* never released: it exits */
		return status;
	}
	if (t->cmd && (err = cp_launch_release(&t->child)))
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
	struct cp_view_title ti = title(t, tg, sizeof(tg));
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
				if ((err = handle_key(t, ch)) != 0)
					break;
				dirty = true;
			}
			if (dirty)
				draw(t);
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
		if (t->cmd && !t->child.exited && cp_launch_poll(&t->child)) {
			set_msg(t, "%s exited", t->cmd[0]);
		}
		while (t->tui && (ch = getch()) != ERR) {
			if ((err = handle_key(t, ch)) != 0)
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
			if (t->npids && !pids_alive(t->pids, t->npids)) {
				if (t->stdio)
					break;
				set_msg(t, "the processes are gone");
			}
		}
		if (t->tui && dirty) {
			draw(t);
			dirty = false;
		}
	}
out:
	if (err > 0)
		err = 0; /* q */
	if (err) {
		if (t->tui)
			endwin();
		t->tui = false;
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
	t.freq = 99;
	t.delay = 1000000000LL;
	t.limit = 25;
	cp_launch_init(&t.child);
	unsetenv("DEBUGINFOD_URLS");
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
		if ((err = cp_view_history_open(t.v, t.sa.store, t.type, t.pids, t.npids, t.sa.t_from, t.sa.t_to,
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
	if (!t.stdio) {
		const char *cs;

		setlocale(LC_ALL, "");
		cs = nl_langinfo(CODESET);
		t.utf8 = cs && !strcmp(cs, "UTF-8");
		if (!initscr()) {
			status = fail("top", "cannot start the screen (TERM=%s): use --stdio", getenv("TERM") ? getenv("TERM") : "");
			goto out;
		}
		t.tui = true;
		cbreak();
		noecho();
		keypad(stdscr, TRUE);
		curs_set(0);
		set_escdelay(25);
		timeout(t.history ? 250 : 0);
	}
	status = run_loop(&t);
	if (t.tui)
		endwin(); /* the terminal as it was */
	t.tui = false;
out:
	cp_launch_end(&t.child);
	cp_recorder_free(t.rec);
	cp_view_free(t.v);
	store_args_release(&t.sa);
	free(t.pids);
	return status < 0 ? EXIT_OK : status;
}
