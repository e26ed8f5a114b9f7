/* SPDX-License-Identifier: MIT */
/* cprof top's two halves in cmd/: top.c has the options, the live sampling
 * or the stored history, and the refresh loop; top_screen.c has the
 * ncurses screen and its keys.  What is shown (rows, sort, filter, zoom,
 * windows) is lib/view's; this struct only ties them together. */
#ifndef CPROF_CMD_TOP_H
#define CPROF_CMD_TOP_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/sampling/launch.h"
#include "../lib/sampling/recorder.h"
#include "../lib/view/text.h"
#include "../lib/view/view.h"
#include "cmd.h"

struct top {
	/* options */
	struct sampling_args s; /* what to sample and how (shared with record) */
	int iterations, limit;
	bool stdio, history;
	const char *show; /* --show: the sample type shown live (cp_view_set_value) */
	const char *type, *function;
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

/* What the header says about where the data comes from (buf holds the text). */
struct cp_view_title top_title(const struct top *t, char *buf, size_t len);

/* The screen: ncurses started (EXIT_OK, or EXIT_FAIL with the message
 * printed) and ended (the terminal as it was; safe when not started). */
int top_screen_start(struct top *t);
void top_screen_end(struct top *t);
/* Draw the header, the rows and the status line. */
void top_screen_draw(struct top *t);
/* One key: 0 (handled), 1 (quit) or -errno. */
int top_screen_key(struct top *t, int ch);
/* The status line's message until the next key. */
void top_screen_msg(struct top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
