/* SPDX-License-Identifier: MIT */
/* One profile in an output format: the profile side of the formats
 * (format.c's table), which cprof query, cprof merge and the server's
 * /api/v1/profile share. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "pprof.h"
#include "render/render.h"
#include "util.h"

int cp_render_profile_as_flame(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o)
{
	struct cp_tree *t = cp_tree_new();
	struct cp_flame_opts fo = { 0 };
	int err;

	if (!t)
		return cp_error(ENOMEM, "out of memory");
	fo.title = o->title;
	fo.unit = cp_profile_string(p, p->sample_types[vidx].unit);
	fo.subtitle = cp_profile_string(p, p->sample_types[vidx].type);
	fo.icicle = o->icicle;
	if (!(err = cp_tree_add(t, p, vidx, 0, o->invert)) && !(err = cp_tree_sort(t)))
		err = cp_render_flame(out, t, &fo);
	cp_tree_free(t);
	return err;
}

int cp_render_profile_as_pprof(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = cp_pprof_encode(p, 1, &buf, &len);

	(void)vidx; /* (every value) */

	if (!err && fwrite(buf, 1, len, out) != len)
		err = cp_stream_check(out, o ? o->output : NULL);
	free(buf);
	return err;
}

int cp_render_profile_as_top(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o)
{
	struct cp_table_opts to = { o->limit, o->resolution, o->whole_total, o->filters };

	return cp_render_table(out, p, vidx, &to);
}

int cp_render_profile_as_folded(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o)
{
	return cp_folded_write(out, p, vidx, o->invert);
}

int cp_render_profile_as_json(FILE *out, const struct cp_profile *p, int vidx, const struct cp_render_opts *o)
{
	struct cp_json_opts jo = { o->invert, o->max_nodes, o->resolution };

	return cp_render_json_opts(out, p, vidx, &jo);
}

int cp_render_profile(FILE *out, const char *format, const struct cp_profile *p, int vidx,
		      const struct cp_render_opts *o)
{
	static const struct cp_render_opts none = { 0 };
	const struct cp_render_format *f = cp_render_format_find(format, CP_RENDER_PROFILE);
	char names[128];

	if (!f)
		return cp_error(EINVAL, "unknown format '%.32s' (choose %s)", format ? format : "",
				cp_render_format_names(CP_RENDER_PROFILE, false, NULL, names, sizeof(names)));
	return f->profile(out, p, vidx, o ? o : &none);
}
