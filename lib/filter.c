/* SPDX-License-Identifier: MIT */
/* pprof-style -focus / -ignore on frame names, with PCRE2 regexes. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "profile.h"

struct cp_filter {
	pcre2_code *focus, *ignore;
	pcre2_match_data *md;
	/* per-location verdicts for the profile last seen (by serial, as its
	 * address may be another profile's once it is freed): bit0 known,
	 * bit1 focus, bit2 ignore */
	uint64_t seen;
	uint8_t *verdict;
	uint32_t nverdict;
};

static int compile(const char *what, const char *re, pcre2_code **out)
{
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE off;
	int code;

	if (!re)
		return 0;
	*out = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
	if (!*out) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		return cp_error(EINVAL, "bad %s regex '%s' at offset %zu: %s", what, re, (size_t)off, msg);
	}
	return 0;
}

struct cp_filter *cp_filter_new(const char *focus, const char *ignore)
{
	struct cp_filter *f = calloc(1, sizeof(*f));
	int err;

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	err = compile("--focus", focus, &f->focus);
	if (!err)
		err = compile("--ignore", ignore, &f->ignore);
	if (!err) {
		f->md = pcre2_match_data_create(4, NULL);
		if (!f->md)
			err = -ENOMEM;
	}
	if (err) {
		cp_filter_free(f);
		errno = -err;
		return NULL;
	}
	return f;
}

void cp_filter_free(struct cp_filter *f)
{
	if (!f)
		return;
	pcre2_code_free(f->focus);
	pcre2_code_free(f->ignore);
	pcre2_match_data_free(f->md);
	free(f->verdict);
	free(f);
}

static bool matches(struct cp_filter *f, pcre2_code *re, const char *s)
{
	return pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, f->md, NULL) >= 0;
}

static uint8_t verdict(struct cp_filter *f, const struct cp_profile *p, uint32_t loc)
{
	struct cp_frame fr[1];
	char buf[128];
	uint8_t v = 1;
	const struct cp_location *l;
	uint32_t j, n;

	if (f->verdict[loc])
		return f->verdict[loc];
	l = cp_profile_loc(p, loc);
	n = l->nlines ? l->nlines : 1;
	for (j = 0; j < n; j++) {
		const char *name;

		fr[0].location = loc;
		fr[0].name = l->nlines && p->lines[l->line_off + j].function ?
				     p->functions[p->lines[l->line_off + j].function - 1].name : 0;
		name = cp_frame_name(p, fr, buf, sizeof(buf));
		if (f->focus && matches(f, f->focus, name))
			v |= 2;
		if (f->ignore && matches(f, f->ignore, name))
			v |= 4;
	}
	return f->verdict[loc] = v;
}

bool cp_filter_keep(const struct cp_profile *p, uint32_t sample, void *arg)
{
	struct cp_filter *f = arg;
	const struct cp_span *st = &p->stacks[p->samples[sample].stack];
	bool focused = !f->focus;
	uint32_t i;

	if (f->seen != p->serial || f->nverdict != p->nlocations + 1) {
		uint8_t *v = calloc((size_t)p->nlocations + 1, 1);

		if (!v)
			return true; /* no cache: keep rather than lose data silently */
		free(f->verdict);
		f->verdict = v;
		f->nverdict = p->nlocations + 1;
		f->seen = p->serial;
	}
	for (i = 0; i < st->len; i++) {
		uint8_t v = verdict(f, p, p->stack_locs[st->off + i]);

		if (v & 4)
			return false;
		if (v & 2)
			focused = true;
	}
	return focused;
}

struct cp_profile *cp_profile_filter(struct cp_profile *p, struct cp_filter *f)
{
	struct cp_merge_opts mo = { 0 };
	struct cp_profile *q;
	int err;

	if (!f || !p)
		return p;
	mo.keep = cp_filter_keep;
	mo.keep_arg = f;
	q = cp_profile_copy(p, &mo);
	err = errno;
	cp_profile_free(p);
	errno = err;
	return q;
}
