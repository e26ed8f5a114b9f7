/* SPDX-License-Identifier: MIT */
/* The lines of cprof top's view (view.h) as text: the header, the column
 * header and the rows, cut to a width, and the sparkline; the screen
 * (cmd/top.c) draws them, and cp_view_print writes them as plain tables
 * (--stdio).  Lines go into the caller's buffers, truncated to their size. */
#ifndef CP_VIEW_TEXT_H
#define CP_VIEW_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "view.h"

/* What the header says besides the view: where the data comes from. */
struct cp_view_title {
	const char *target;     /* "pid 12", "whole system", or history's type */
	int freq, ncpus;        /* live */
	int64_t delay, window;  /* live: the refresh, the span of the ring */
	uint64_t dropped;       /* live: samples the kernel dropped */
};

#define CP_VIEW_LINE 512
/* The three header lines: title, totals, and what is shown (view, sort,
 * filter, zoom).  The live title has the local time of day. */
void cp_view_header(const struct cp_view *v, const struct cp_view_title *t, char lines[3][CP_VIEW_LINE]);
/* The column header and row i of the rows, for a line of width cells. */
void cp_view_columns(const struct cp_view *v, char *buf, size_t len, int width);
void cp_view_row_text(const struct cp_view *v, size_t i, char *buf, size_t len, int width);
/* The values of the sparkline in up to width cells: history's window totals
 * around the window shown (*cur its cell), or the live rates of the last
 * refreshes (*cur SIZE_MAX).  Returns how many, at most width and CP_VIEW_RATES. */
size_t cp_view_spark_values(const struct cp_view *v, size_t width, double *out, size_t *cur);
/* n values as a sparkline, one cell each scaled to the largest: UTF-8 blocks
 * (3 bytes, a space for 0) or ASCII ("_.-:=+*#"). */
void cp_view_sparkline(const double *vals, size_t n, bool utf8, char *buf, size_t len);
/* The screen's sparkline in up to width cells (cp_view_spark_values as
 * cp_view_sparkline): the bytes of the window shown are buf[*off, *off + *n)
 * (*n 0 when live). */
void cp_view_spark_text(const struct cp_view *v, size_t width, bool utf8, char *buf, size_t len, size_t *off,
			size_t *n);
/* A duration as 2h, 5m, 10s, 250ms or 1.50s. */
const char *cp_view_duration(int64_t ns, char *buf, size_t len);
/* One refresh as --stdio prints it: the header, history's sparkline, the
 * column header and up to limit rows (0: all), or why there are none, then an
 * empty line.  0, or -EIO when out cannot be written. */
int cp_view_print(FILE *out, const struct cp_view *v, const struct cp_view_title *t, size_t limit);

#endif
