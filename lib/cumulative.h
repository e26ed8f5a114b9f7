/* SPDX-License-Identifier: MIT */
/* What a profile's values measure over time, and cumulative profiles made into deltas.
 *
 * A value is one of three kinds, decided by its sample type's name (cp_value_kind):
 * - cumulative: a total since the program started (Go's allocs, block and mutex profiles, and the
 *   alloc_* values of its heap profile): two scrapes in a row tell what happened between them;
 * - gauge: a value at a time (in-use memory, goroutines): never summed over time, a range shows
 *   their average;
 * - delta: what happened over the profile's own duration (CPU, wall and off-CPU time, samples, and
 *   a cumulative profile already taken over an interval, e.g. Go's ?seconds=): summed over time.
 *
 * cp_cumulative_delta turns two scrapes of a cumulative profile into the profile of what happened
 * between them, as Pyroscope's scrapers do: the cumulative values of the later one less those of the
 * earlier one, by stack and labels, the others as the later one has them.  A value that went down
 * means the target restarted (its totals started again): the later scrape's totals are then the
 * difference, the growth since the restart.
 *
 * Ownership: the result is the caller's (cp_profile_free).  Errors: 0 or -errno with the message
 * recorded (ENOMEM). */
#ifndef CP_CUMULATIVE_H
#define CP_CUMULATIVE_H

#include <stdbool.h>

#include "profile.h"

enum cp_value_kind { CP_VALUE_DELTA, CP_VALUE_CUMULATIVE, CP_VALUE_GAUGE };

/* The kind of the values of a sample type ("alloc_space", "inuse_space", "cpu"). */
enum cp_value_kind cp_value_kind(const char *sample_type);
/* A profile that is not over an interval (no duration) with a cumulative value: a scrape of it
 * wants the one before to be stored as what happened in between. */
bool cp_profile_is_cumulative(const struct cp_profile *p);

/* *out: cur's cumulative values less prev's (by stack and labels), its other values as they are;
 * prev NULL (the first scrape): only its other sample types are kept (none: no samples).  *restarted
 * says whether a cumulative value went down (then *out has cur's own).  *out's time is prev's, its
 * duration the time between the two (cur's time, 0 without prev).  Samples whose values are all 0
 * are left out. */
int cp_cumulative_delta(const struct cp_profile *cur, const struct cp_profile *prev, struct cp_profile **out,
			bool *restarted);

#endif
