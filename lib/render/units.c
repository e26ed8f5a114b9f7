/* SPDX-License-Identifier: MIT */
/* Value scaling the way pprof prints values: "1.20s", "250ms", "3.50MB". */
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

static const struct cp_unit_scale time_units[] = {
	{ 1, "ns" }, { 1e3, "us" }, { 1e6, "ms" }, { 1e9, "s" }, { 60e9, "mins" }, { 3600e9, "hrs" }, { 0, NULL },
};
static const struct cp_unit_scale byte_units[] = {
	{ 1, "B" }, { 1024.0, "kB" }, { 1048576.0, "MB" }, { 1073741824.0, "GB" }, { 1099511627776.0, "TB" }, { 0, NULL },
};

static const struct cp_unit_scale *table_for(const char *unit, double *mul)
{
	*mul = 1;
	if (!unit)
		return NULL;
	if (!strcmp(unit, "nanoseconds") || !strcmp(unit, "ns"))
		return time_units;
	if (!strcmp(unit, "microseconds") || !strcmp(unit, "us")) {
		*mul = 1e3;
		return time_units;
	}
	if (!strcmp(unit, "milliseconds") || !strcmp(unit, "ms")) {
		*mul = 1e6;
		return time_units;
	}
	if (!strcmp(unit, "seconds") || !strcmp(unit, "s")) {
		*mul = 1e9;
		return time_units;
	}
	if (!strcmp(unit, "bytes") || !strcmp(unit, "B"))
		return byte_units;
	return NULL;
}

struct cp_unit_scale cp_unit_scale_for(int64_t max, const char *unit)
{
	struct cp_unit_scale s = { 1, "" };
	double mul, v;
	const struct cp_unit_scale *t = table_for(unit, &mul);

	if (!t)
		return s;
	v = llabs(max) * mul;
	s.div = 1 / mul;
	s.suffix = t[0].suffix;
	for (; t->suffix; t++)
		if (v >= t->div) {
			s.div = t->div / mul;
			s.suffix = t->suffix;
		}
	return s;
}

const char *cp_format_scaled(int64_t v, struct cp_unit_scale s, char *buf, size_t len)
{
	size_t n;

	if (!s.suffix[0] && s.div == 1) {
		snprintf(buf, len, "%" PRId64, v);
		return buf;
	}
	snprintf(buf, len, "%.2f", (double)v / s.div);
	n = strlen(buf);
	if (n > 3 && !strcmp(buf + n - 3, ".00"))
		buf[n - 3] = '\0';
	if (!strcmp(buf, "0") || !strcmp(buf, "-0")) {
		snprintf(buf, len, "0");
		return buf;
	}
	n = strlen(buf);
	snprintf(buf + n, len - n, "%s", s.suffix);
	return buf;
}

const char *cp_format_value(int64_t v, const char *unit, char *buf, size_t len)
{
	return cp_format_scaled(v, cp_unit_scale_for(v, unit), buf, len);
}

const char *cp_format_percent(double num, double den, char *buf, size_t len)
{
	if (den == 0 || num == 0) {
		snprintf(buf, len, "0%%");
		return buf;
	}
	if (num == den) {
		snprintf(buf, len, "100%%");
		return buf;
	}
	snprintf(buf, len, "%.2f%%", 100.0 * num / den);
	return buf;
}
