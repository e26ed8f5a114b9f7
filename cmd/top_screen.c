/* SPDX-License-Identifier: MIT */
/* cprof top's screen: ncurses drawing of lib/view's rows, the help, the
 * filter prompt and the keys (see top.h). */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/error.h"
#include "../lib/util.h"
#include "top.h"

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
	"  o             on-CPU samples / off-CPU time / wall-clock time (--off-cpu)",
	"  Left / Right  the previous / next time window (history)",
	"  Up, Down, PgUp, PgDn, Home, End   select a row",
	NULL,
};

void top_screen_draw(struct top *t)
{
	struct cp_view *v = t->v;
	char lines[3][CP_VIEW_LINE], buf[2048], tg[128];
	struct cp_view_title ti = top_title(t, tg, sizeof(tg));
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

void top_screen_msg(struct top *t, const char *fmt, ...)
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
		top_screen_msg(t, "no function to show the callers of");
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
			top_screen_msg(t, "%s", cp_errmsg(err));
		else
			top_screen_msg(t, t->v->filter[0] ? "filter: /%s/" : "filter cleared", t->v->filter);
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
int top_screen_key(struct top *t, int ch)
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
		top_screen_msg(t, "kernel frames %s", !v->no_kernel ? "hidden" : "shown");
		return cp_view_set_frames(v, !v->no_kernel, v->no_kernel && v->no_user);
	case 'u':
		top_screen_msg(t, "user frames %s", !v->no_user ? "hidden" : "shown");
		return cp_view_set_frames(v, v->no_user && v->no_kernel, !v->no_user);
	case 'p':
	case ' ':
		if (t->history) {
			top_screen_msg(t, "history does not move: nothing to pause");
			return 0;
		}
		v->paused = !v->paused;
		top_screen_msg(t, v->paused ? "paused: p resumes" : "resumed");
		return 0;
	case '+':
	case '=':
	case '-':
		if (t->history) {
			top_screen_msg(t, "history: the window is --window (%lld s)", (long long)(v->window / 1000000000));
			return 0;
		}
		t->delay = cp_view_next_delay(t->delay, ch == '-' ? 1 : -1);
		top_screen_msg(t, "refresh every %s", cp_view_duration(t->delay, buf, sizeof(buf)));
		return 0;
	case 'o': {
		static const char *const next[][2] = { { "", "offcpu" }, { "offcpu", "wall" }, { "wall", "samples" } };
		static const char *const what[] = { "off-CPU time", "wall-clock time (on + off the CPU)",
						    "on-CPU samples" };

		if (!t->s.offcpu) {
			top_screen_msg(t, "off-CPU and wall-clock time: start cprof top with --off-cpu");
			return 0;
		}
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(v->value, next[i][0])) {
				top_screen_msg(t, "showing %s", what[i]);
				return cp_view_set_value(v, next[i][1]);
			}
		return 0;
	}
	case 'z':
		if (t->history)
			return 0;
		top_screen_msg(t, "the window starts afresh");
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
			top_screen_msg(t, "live: the time windows are for --from-store");
			return 0;
		}
		return done(cp_view_history_step(v, ch == KEY_LEFT || ch == '[' ? -1 : 1));
	default:
		return 0;
	}
}


int top_screen_start(struct top *t)
{
	const char *cs;

	setlocale(LC_ALL, "");
	cs = nl_langinfo(CODESET);
	t->utf8 = cs && !strcmp(cs, "UTF-8");
	if (!initscr())
		return fail("top", "cannot start the screen (TERM=%s): use --stdio", getenv("TERM") ? getenv("TERM") : "");
	t->tui = true;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(t->history ? 250 : 0);
	return EXIT_OK;
}

void top_screen_end(struct top *t)
{
	if (t->tui)
		endwin(); /* the terminal as it was */
	t->tui = false;
}
