/* SPDX-License-Identifier: MIT */
/* pprof-style -focus / -ignore on frame names, with PCRE2 regexes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "profile.h"
#include "regex.h"

struct cp_filter {
	struct cp_regex *focus, *ignore;
	struct cp_regex_run *run; /* one budget for all the filter's matches */
	int err;                  /* sticky: a regex was too costly */
	/* per-location verdicts for the profile last seen (by serial, as its
	 * address may be another profile's once it is freed): bit0 known,
	 * bit1 focus, bit2 ignore */
	uint64_t seen;
	uint8_t *verdict;
	uint32_t nverdict;
};

static int compile(const char *what, const char *re, struct cp_regex **out)
{
	char msg[160];
	size_t off;
	int err;

	if (!re)
		return 0;
	if ((err = cp_regex_compile(re, 0, out, msg, sizeof(msg), &off)) == -EINVAL)
		return cp_error(EINVAL, "bad %s regex '%s' at offset %zu: %s", what, re, off, msg);
	return err;
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
	if (!err && !(f->run = cp_regex_run_new(NULL)))
		err = -ENOMEM;
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
	cp_regex_free(f->focus);
	cp_regex_free(f->ignore);
	cp_regex_run_free(f->run);
	free(f->verdict);
	free(f);
}

int cp_filter_error(const struct cp_filter *f)
{
	return f ? f->err : 0;
}

/* does re match s? false after an error, which the filter keeps */
static bool matches(struct cp_filter *f, const char *what, struct cp_regex *re, const char *s)
{
	int hit;

	if (f->err)
		return false;
	if ((hit = cp_regex_match(f->run, re, s, strlen(s))) < 0)
		f->err = hit == -CP_REGEX_ECOST ? cp_error_ctx(CP_REGEX_ECOST, "%s", what) : hit;
	return hit > 0;
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
		if (f->focus && matches(f, "--focus", f->focus, name))
			v |= 2;
		if (f->ignore && matches(f, "--ignore", f->ignore, name))
			v |= 4;
	}
	return f->err ? 0 : (f->verdict[loc] = v);
}

bool cp_filter_keep(const struct cp_profile *p, uint32_t sample, void *arg)
{
	struct cp_filter *f = arg;
	const struct cp_span *st = &p->stacks[p->samples[sample].stack];
	bool focused = !f->focus;
	uint32_t i;

	if (f->err) /* the copy is thrown away: no more matching */
		return false;
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

		if (f->err)
			return false;
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
	err = q ? 0 : errno;
	if (f->err) {
		/* the message is the regex's (cp_profile_copy records none after it) */
		cp_profile_free(q);
		q = NULL;
		err = -f->err;
	}
	cp_profile_free(p);
	errno = err;
	return q;
}
