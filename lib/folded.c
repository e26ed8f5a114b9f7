/* SPDX-License-Identifier: MIT */
#include "folded.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "strtab.h"
#include "util.h"

static int parse_count(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	if (!n || n > 18)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

struct cp_profile *cp_folded_decode(const char *text, size_t len)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	struct cp_profile *p = cp_profile_new();
	uint32_t *locs = NULL;
	size_t cap = 0, lineno = 0, nsamples = 0;
	const char *s = text, *end = text + len;
	int err = 0;

	if (!p)
		return NULL;
	if ((err = cp_profile_add_sample_type(p, "samples", "count")) ||
	    (err = cp_profile_set_period_type(p, "samples", "count", 1)))
		goto out;
	while (s < end) {
		const char *eol = memchr(s, '\n', (size_t)(end - s)), *sp, *f;
		size_t n = 0, ll;
		int64_t count, stack;

		if (!eol)
			eol = end;
		lineno++;
		ll = (size_t)(eol - s);
		while (ll && (s[ll - 1] == '\r' || s[ll - 1] == ' ' || s[ll - 1] == '\t'))
			ll--;
		if (!ll || s[0] == '#')
			goto next;
		for (sp = s + ll - 1; sp > s && *sp != ' ' && *sp != '\t'; sp--)
			;
		if (sp == s || parse_count(sp + 1, (size_t)(s + ll - sp - 1), &count)) {
			err = cp_error(EINVAL, "line %zu: expected 'frame;frame;... COUNT' (a stack, a space, a whole number)",
				       lineno);
			goto out;
		}
		while (sp > s && (sp[-1] == ' ' || sp[-1] == '\t'))
			sp--;
		if (++nsamples > lim->max_samples) {
			err = cp_decode_too_many("samples (lines)", lim->max_samples);
			goto out;
		}
		/* frames root first; the profile wants leaf first: fill, then reverse */
		for (f = s; f <= sp;) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			struct cp_function fn = { 0 };
			struct cp_line line = { 0 };
			int64_t name, fid, lid;

			if (!semi)
				semi = sp;
			name = cp_profile_strn(p, f, (size_t)(semi - f));
			if (name < 0) {
				err = (int)name;
				goto out;
			}
			fn.name = fn.system_name = (uint32_t)name;
			if ((fid = cp_profile_function(p, &fn)) < 0) {
				err = (int)fid;
				goto out;
			}
			line.function = (uint32_t)fid;
			if ((lid = cp_profile_location(p, 0, 0, &line, 1, false)) < 0) {
				err = (int)lid;
				goto out;
			}
			if (p->nlocations > lim->max_locations) {
				err = cp_decode_too_many("distinct frames", lim->max_locations);
				goto out;
			}
			/* the frames of the stacks kept and of this one, 8 bytes each
			 * (stored, and gathered here): within the memory a pprof
			 * profile may take, twice max_decompressed */
			if (p->nstack_locs + n + 1 > lim->max_decompressed / 4) {
				err = cp_decode_too_large(lim->max_decompressed * 2);
				goto out;
			}
			if (cp_grow((void **)&locs, &cap, n + 1, sizeof(*locs))) {
				err = -ENOMEM;
				goto out;
			}
			locs[n++] = (uint32_t)lid;
			f = semi + 1;
		}
		for (size_t i = 0; i < n / 2; i++) {
			uint32_t t = locs[i];

			locs[i] = locs[n - 1 - i];
			locs[n - 1 - i] = t;
		}
		if ((stack = cp_profile_stack(p, locs, n)) < 0) {
			err = (int)stack;
			goto out;
		}
		if (count && (err = cp_profile_add_sample(p, (uint32_t)stack, 0, &count)))
			goto out;
next:
		s = eol + 1;
	}
out:
	free(locs);
	if (err) {
		if (err == -ENOMEM)
			cp_error(ENOMEM, "out of memory reading folded stacks");
		cp_profile_free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

/* Folded lines of one or two profiles aggregated by their text. */
struct folded_set {
	struct cp_strtab keys;
	int64_t (*vals)[2];
	size_t cap;
	char *line;
	size_t linecap;
	struct cp_frame *frames;
	size_t fcap;
};

static int add_profile(struct folded_set *fs, const struct cp_profile *p, int vidx, int side, bool invert,
		       const char *root)
{
	char buf[128];
	uint32_t s;

	for (s = 0; s < p->nsamples; s++) {
		int64_t v = cp_profile_values(p, s)[vidx], id;
		uint32_t nkeys;
		int n = cp_profile_frames(p, p->samples[s].stack, &fs->frames, &fs->fcap), i;
		size_t len = 0;

		if (n < 0)
			return n;
		if (!v)
			continue;
		if (root) {
			size_t rl = strlen(root);

			if (cp_grow((void **)&fs->line, &fs->linecap, rl + 2, 1))
				return cp_error(ENOMEM, "out of memory writing folded stacks");
			memcpy(fs->line, root, rl);
			len = rl;
		}
		for (i = 0; i < n; i++) {
			/* root first unless inverted */
			const struct cp_frame *f = &fs->frames[invert ? i : n - 1 - i];
			const char *name = cp_frame_name(p, f, buf, sizeof(buf));
			size_t nl = strlen(name);

			if (cp_grow((void **)&fs->line, &fs->linecap, len + nl + 2, 1))
				return cp_error(ENOMEM, "out of memory writing folded stacks");
			if (i || root)
				fs->line[len++] = ';';
			memcpy(fs->line + len, name, nl);
			len += nl;
		}
		if (!n && !root) {
			if (cp_grow((void **)&fs->line, &fs->linecap, 16, 1))
				return cp_error(ENOMEM, "out of memory writing folded stacks");
			len = (size_t)snprintf(fs->line, 16, "[unknown]");
		}
		nkeys = fs->keys.n;
		id = cp_strtab_intern(&fs->keys, fs->line, len);
		if (id < 0 || cp_grow((void **)&fs->vals, &fs->cap, (size_t)id + 1, sizeof(*fs->vals)))
			return cp_error(ENOMEM, "out of memory writing folded stacks");
		if (fs->keys.n != nkeys) { /* a new line */
			fs->vals[id][0] = 0;
			fs->vals[id][1] = 0;
		}
		fs->vals[id][side] += v;
	}
	return 0;
}

static int key_cmp(const void *a, const void *b, void *keys)
{
	return strcmp(cp_strtab_get(keys, *(const uint32_t *)a), cp_strtab_get(keys, *(const uint32_t *)b));
}

static int write_set(FILE *out, struct folded_set *fs, int sides)
{
	uint32_t *order = malloc(((size_t)fs->keys.n + 1) * sizeof(*order)), i, n = 0;

	if (!order)
		return cp_error(ENOMEM, "out of memory sorting folded stacks");
	for (i = 1; i < fs->keys.n; i++)
		if (fs->vals[i][0] || fs->vals[i][1])
			order[n++] = i;
	cp_qsort_r(order, n, sizeof(*order), key_cmp, &fs->keys);
	for (i = 0; i < n; i++) {
		if (sides == 1)
			fprintf(out, "%s %" PRId64 "\n", cp_strtab_get(&fs->keys, order[i]), fs->vals[order[i]][0]);
		else
			fprintf(out, "%s %" PRId64 " %" PRId64 "\n", cp_strtab_get(&fs->keys, order[i]),
				fs->vals[order[i]][0], fs->vals[order[i]][1]);
	}
	free(order);
	return cp_stream_check(out, NULL);
}

static void set_release(struct folded_set *fs)
{
	cp_strtab_release(&fs->keys);
	free(fs->vals);
	free(fs->line);
	free(fs->frames);
}

int cp_folded_write_rooted(FILE *out, const struct cp_profile *p, int vidx, bool invert, const char *root)
{
	struct folded_set fs = { 0 };
	int err = cp_strtab_init(&fs.keys);

	if (!err)
		err = add_profile(&fs, p, vidx, 0, invert, root);
	if (!err)
		err = write_set(out, &fs, 1);
	set_release(&fs);
	return err;
}

int cp_folded_write(FILE *out, const struct cp_profile *p, int vidx, bool invert)
{
	return cp_folded_write_rooted(out, p, vidx, invert, NULL);
}

int cp_folded_write_diff(FILE *out, const struct cp_profile *before, const struct cp_profile *after,
			 int vidx_before, int vidx_after)
{
	struct folded_set fs = { 0 };
	int err = cp_strtab_init(&fs.keys);

	if (!err)
		err = add_profile(&fs, before, vidx_before, 0, false, NULL);
	if (!err)
		err = add_profile(&fs, after, vidx_after, 1, false, NULL);
	if (!err)
		err = write_set(out, &fs, 2);
	set_release(&fs);
	return err;
}
