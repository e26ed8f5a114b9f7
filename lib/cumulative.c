/* SPDX-License-Identifier: MIT */
/* Cumulative profiles made into deltas (cumulative.h). */
#include "cumulative.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

enum cp_value_kind cp_value_kind(const char *sample_type)
{
	/* Go's runtime/pprof: heap and allocs (alloc_* since the start, inuse_* now), block and mutex
	 * (contentions, delay: since the start), goroutine (now); Pyroscope's and Parca's names alike */
	static const char *const cumulative[] = { "alloc_objects", "alloc_space", "contentions", "delay" };
	static const char *const gauge[] = { "inuse_objects", "inuse_space", "goroutine", "goroutines" };

	for (size_t i = 0; i < sizeof(cumulative) / sizeof(cumulative[0]); i++)
		if (!strcmp(sample_type, cumulative[i]))
			return CP_VALUE_CUMULATIVE;
	for (size_t i = 0; i < sizeof(gauge) / sizeof(gauge[0]); i++)
		if (!strcmp(sample_type, gauge[i]))
			return CP_VALUE_GAUGE;
	return CP_VALUE_DELTA;
}

static bool is_cumulative(const struct cp_profile *p, size_t t)
{
	return cp_value_kind(cp_profile_string(p, p->sample_types[t].type)) == CP_VALUE_CUMULATIVE;
}

bool cp_profile_is_cumulative(const struct cp_profile *p)
{
	if (p->duration_nanos > 0)
		return false; /* taken over an interval already */
	for (size_t t = 0; t < p->ntypes; t++)
		if (is_cumulative(p, t))
			return true;
	return false;
}

/* the same sample types, in the same order */
static bool same_types(const struct cp_profile *a, const struct cp_profile *b)
{
	if (a->ntypes != b->ntypes)
		return false;
	for (size_t t = 0; t < a->ntypes; t++)
		if (strcmp(cp_profile_string(a, a->sample_types[t].type), cp_profile_string(b, b->sample_types[t].type)) ||
		    strcmp(cp_profile_string(a, a->sample_types[t].unit), cp_profile_string(b, b->sample_types[t].unit)))
			return false;
	return true;
}

/* sets the values of the types that are not cumulative to 0 */
static void zero_others(struct cp_profile *p)
{
	for (size_t t = 0; t < p->ntypes; t++)
		if (!is_cumulative(p, t))
			for (uint32_t i = 0; i < p->nsamples; i++)
				p->values[(size_t)i * p->ntypes + t] = 0;
}

static bool nonzero(const struct cp_profile *p, uint32_t sample, void *arg)
{
	(void)arg;
	for (size_t t = 0; t < p->ntypes; t++)
		if (p->values[(size_t)sample * p->ntypes + t])
			return true;
	return false;
}

int cp_cumulative_delta(const struct cp_profile *cur, const struct cp_profile *prev, struct cp_profile **out,
			bool *restarted)
{
	struct cp_merge_opts neg = { .scale = -1 }, keep = { .keep = nonzero };
	struct cp_profile *d = NULL, *before = NULL;
	int err = 0;

	*out = NULL;
	*restarted = false;
	if (!(d = cp_profile_copy(cur, NULL)))
		goto nomem;
	if (!prev) {
		/* the first scrape is where the totals are counted from: only its other values are kept */
		bool keep_t[64] = { false }, any = false;

		for (size_t t = 0; t < d->ntypes && t < 64; t++)
			any |= keep_t[t] = !is_cumulative(d, t);
		if (!any || d->ntypes > 64)
			cp_profile_clear_samples(d); /* nothing but cumulative values: nothing to store yet */
		else if ((err = cp_profile_keep_types(d, keep_t)))
			goto out;
	} else if (!same_types(cur, prev)) {
		*restarted = true; /* another program at that address: its totals since it started */
	} else {
		if (!(before = cp_profile_copy(prev, NULL)))
			goto nomem;
		zero_others(before); /* the others are cur's own */
		if ((err = cp_profile_merge(d, before, &neg)))
			goto out;
		for (uint32_t i = 0; i < d->nsamples && !*restarted; i++)
			for (size_t t = 0; t < d->ntypes; t++)
				if (d->values[(size_t)i * d->ntypes + t] < 0 && is_cumulative(d, t))
					*restarted = true;
		if (*restarted) {
			cp_profile_free(d);
			if (!(d = cp_profile_copy(cur, NULL)))
				goto nomem;
		}
	}
	if (!(*out = cp_profile_copy(d, &keep)))
		goto nomem;
	(*out)->time_nanos = prev ? prev->time_nanos : cur->time_nanos;
	(*out)->duration_nanos = prev && cur->time_nanos > prev->time_nanos ? cur->time_nanos - prev->time_nanos : 0;
	goto out;
nomem:
	err = cp_error(ENOMEM, "out of memory taking the difference of two scrapes");
out:
	cp_profile_free(d);
	cp_profile_free(before);
	return err;
}
