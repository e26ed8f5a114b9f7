/* SPDX-License-Identifier: MIT */
/* Lists: strings (types, label names, values) and series, as lines or JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "../error.h"
#include "../util.h"
#include "render.h"

static int dump(FILE *out, json_t *v)
{
	int err;

	if (!v)
		return cp_error(ENOMEM, "out of memory building JSON");
	err = json_dumpf(v, out, JSON_INDENT(1) | JSON_SORT_KEYS) ? cp_error(EIO, "cannot write JSON") : 0;
	json_decref(v);
	if (!err)
		fputc('\n', out);
	return err ? err : cp_stream_check(out, NULL);
}

int cp_render_strings(FILE *out, const char *const *items, size_t n, bool json)
{
	json_t *arr;
	size_t i;

	if (!json) {
		for (i = 0; i < n; i++)
			fprintf(out, "%s\n", items[i]);
		return cp_stream_check(out, NULL);
	}
	arr = json_array();
	for (i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_string(items[i]));
	return dump(out, arr);
}

int cp_render_series(FILE *out, const struct cp_store_series *ser, size_t n, bool json)
{
	json_t *arr = json ? json_array() : NULL;
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (json) {
			json_t *labels = json_object();

			for (j = 0; labels && j < ser[i].nlabels; j++)
				json_object_set_new(labels, ser[i].names[j], json_string(ser[i].values[j]));
			json_array_append_new(arr, json_pack("{s:s,s:o?}", "type", ser[i].type, "labels", labels));
			continue;
		}
		/* the selector that picks exactly this series */
		fprintf(out, "%s{", ser[i].type);
		for (j = 0; j < ser[i].nlabels; j++) {
			const char *v;

			fprintf(out, "%s%s=\"", j ? ", " : "", ser[i].names[j]);
			for (v = ser[i].values[j]; *v; v++) {
				if (*v == '"' || *v == '\\')
					fputc('\\', out);
				if (*v == '\n')
					fputs("\\n", out);
				else
					fputc(*v, out);
			}
			fputc('"', out);
		}
		fputs("}\n", out);
	}
	return json ? dump(out, arr) : cp_stream_check(out, NULL);
}
