/* SPDX-License-Identifier: MIT */
/* How values are shown: the unit pprof would pick for a column (ns as ms or
 * s, bytes as KB or MB) and percentages.  Pure functions into the caller's
 * buffer; they cannot fail (a short buffer cuts the text). */
#ifndef CP_RENDER_UNITS_H
#define CP_RENDER_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* A display unit: values are divided by div and suffixed. */
struct cp_unit_scale {
	double div;
	const char *suffix;
};

/* The unit pprof would print max in (counts: div 1, no suffix). */
struct cp_unit_scale cp_unit_scale_for(int64_t max, const char *unit);
const char *cp_format_scaled(int64_t v, struct cp_unit_scale s, char *buf, size_t len);
/* "12.34%", "100%", "0%" when den is 0 */
const char *cp_format_percent(double num, double den, char *buf, size_t len);

#endif
