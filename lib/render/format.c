/* SPDX-License-Identifier: MIT */
/* The output formats (render.h): one row each, with its functions.  The
 * commands' --format, the server's format=, usage, completions and test-docs
 * all take their lists from here. */
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "util.h"

#define TEXT "text/plain; charset=utf-8"

const struct cp_render_format cp_render_formats[] = {
	{ "top", "top", TEXT, false, cp_render_profile_as_top, NULL },
	{ "table", "table", TEXT, false, NULL, cp_render_diff_as_table },
	{ "folded", "folded", TEXT, false, cp_render_profile_as_folded, cp_render_diff_as_folded },
	{ "flamegraph", "svg", "image/svg+xml", false, cp_render_profile_as_flame, cp_render_diff_as_flame },
	{ "json", "json", "application/json", false, cp_render_profile_as_json, cp_render_diff_as_json },
	{ "pprof", "pprof", "application/octet-stream", true, cp_render_profile_as_pprof, cp_render_diff_as_pprof },
	{ NULL, NULL, NULL, false, NULL, NULL },
};

static bool of_kind(const struct cp_render_format *f, unsigned kind)
{
	return ((kind & CP_RENDER_PROFILE) && f->profile) || ((kind & CP_RENDER_DIFF) && f->diff);
}

static const struct cp_render_format *find(const char *name, unsigned kind, bool api)
{
	for (const struct cp_render_format *f = cp_render_formats; name && f->name; f++)
		if (of_kind(f, kind) && !strcmp(name, api ? f->api : f->name))
			return f;
	return NULL;
}

const struct cp_render_format *cp_render_format_find(const char *name, unsigned kind)
{
	return find(name, kind, false);
}

const struct cp_render_format *cp_render_format_api(const char *name, unsigned kind)
{
	return find(name, kind, true);
}

const char *cp_render_format_names(unsigned kind, bool api, const char *extra, char *buf, size_t size)
{
	const char *name[16];
	size_t n = 0;

	for (const struct cp_render_format *f = cp_render_formats; f->name && n < 15; f++)
		if (of_kind(f, kind))
			name[n++] = api ? f->api : f->name;
	if (extra)
		name[n++] = extra;
	return cp_join_names(name, n, buf, size);
}
