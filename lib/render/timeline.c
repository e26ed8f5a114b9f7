/* SPDX-License-Identifier: MIT */
/* The samples-over-time view: a table with bars, and a sparkline. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../util.h"
#include "render.h"
#include "units.h"

static const char *const blocks[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };

static const char *when(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%" PRId64, ns);
	return buf;
}

int cp_render_over_time(FILE *out, const struct cp_over_time *o)
{
	int64_t max = 0, sum = 0;
	struct cp_unit_scale sc;
	char a[32], b[32], c[32], d[32], e[32];
	size_t i;
	int k;

	for (i = 0; i < o->n; i++) {
		max = o->totals[i] > max ? o->totals[i] : max;
		sum += o->totals[i];
	}
	sc = cp_unit_scale_for(max, o->unit);
	fprintf(out, "Type: %s\n", o->type);
	if (o->resolution)
		fprintf(out, "Resolution: %s\n", o->resolution);
	fprintf(out, "From %s to %s UTC, step %s, total %s, peak %s\n", when(o->from, a, sizeof(a)),
		when(o->to, b, sizeof(b)), cp_format_value(o->step, "nanoseconds", c, sizeof(c)),
		cp_format_scaled(sum, sc, d, sizeof(d)), cp_format_scaled(max, sc, e, sizeof(e)));
	for (i = 0; i < o->n; i++) {
		/* a bar of up to 50 cells in eighths */
		int eighths = max > 0 ? (int)((double)o->totals[i] * 400.0 / (double)max + 0.5) : 0;

		fprintf(out, "%s  %10s  ", when(o->from + o->step * (int64_t)i, a, sizeof(a)),
			cp_format_scaled(o->totals[i], sc, b, sizeof(b)));
		for (k = 0; k < eighths / 8; k++)
			fputs(blocks[8], out);
		if (eighths % 8)
			fputs(blocks[eighths % 8], out);
		fputc('\n', out);
	}
	fputs("Sparkline: ", out);
	for (i = 0; i < o->n; i++) {
		int level = max > 0 ? (int)((double)o->totals[i] * 7.0 / (double)max + 0.5) + 1 : 1;

		fputs(o->totals[i] ? blocks[level > 8 ? 8 : level] : blocks[0], out);
	}
	fputc('\n', out);
	return cp_stream_check(out, NULL);
}

int cp_render_over_time_json(FILE *out, const struct cp_over_time *o)
{
	json_t *root = json_object(), *points = json_array();
	size_t i;
	int err;

	if (!root || !points) {
		json_decref(root);
		json_decref(points);
		return cp_error(ENOMEM, "out of memory building JSON");
	}
	for (i = 0; i < o->n; i++) /* in uint64: i * step alone may pass INT64_MAX when from is negative */
		json_array_append_new(points, json_pack("{s:I,s:I}", "time",
							(json_int_t)(int64_t)((uint64_t)o->from + (uint64_t)o->step * i),
							"value", (json_int_t)o->totals[i]));
	json_object_set_new(root, "type", json_string(o->type));
	json_object_set_new(root, "unit", json_string(o->unit ? o->unit : ""));
	json_object_set_new(root, "from", json_integer(o->from));
	json_object_set_new(root, "to", json_integer(o->to));
	json_object_set_new(root, "step", json_integer(o->step));
	if (o->resolution)
		json_object_set_new(root, "resolution", json_string(o->resolution));
	json_object_set_new(root, "points", points);
	err = json_dumpf(root, out, JSON_INDENT(1)) ? cp_error(EIO, "cannot write JSON") : 0;
	json_decref(root);
	if (!err)
		fputc('\n', out);
	return err ? err : cp_stream_check(out, NULL);
}
