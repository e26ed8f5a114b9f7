/* SPDX-License-Identifier: MIT */
/* Profile selectors and time ranges, with Prometheus semantics:
 *   TYPE{label="v", l!="v", l=~"re", l!~"re"}
 * Regexes are fully anchored; a missing label matches as "". TYPE is a
 * profile type name:sample_type:sample_unit:period_type:period_unit[:delta]
 * or a prefix of its components ("cpu", "memory:alloc_space"). */
#ifndef CP_SELECTOR_H
#define CP_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "regex.h"

enum cp_match_op { CP_MATCH_EQ, CP_MATCH_NE, CP_MATCH_RE, CP_MATCH_NRE };

struct cp_matcher {
	char *name, *value;
	enum cp_match_op op;
	struct cp_regex *re;      /* for =~ and !~ */
	struct cp_regex_run *run; /* the selector's, for =~ and !~ */
};

/* The regexes are matched under limits (regex.h), with one budget of time per
 * evaluation (cp_selector_begin): a selector is matched by one thread at a
 * time. */
struct cp_selector {
	char *src;  /* the text it was parsed from (what a server is sent) */
	char *type; /* NULL: any type */
	struct cp_matcher *matchers;
	size_t n;
	struct cp_regex_run *run; /* when a matcher has a regex */
};

/* Parse; on error -EINVAL with a message naming the column. */
int cp_selector_parse(const char *s, struct cp_selector **out);
void cp_selector_free(struct cp_selector *sel);
/* Adds a matcher to sel without writing selector text, as if `name op
 * "value"` were one more matcher in its braces; the selector's src becomes
 * its text again (TYPE{...} with every matcher, values quoted), so it can
 * still be sent to a server.  0; -EINVAL with a message (a name that is not
 * a label name, an unknown op, a bad regex for =~ / !~); -ENOMEM.  On error
 * sel is as it was. */
int cp_selector_add_matcher(struct cp_selector *sel, const char *name, enum cp_match_op op, const char *value);
/* Adds a matcher that accepts a label equal to any of the n values (a
 * missing label counts as ""), as name=~"v1|v2|..." with each value's regex
 * characters escaped.  n = 0 is -EINVAL; otherwise as cp_selector_add_matcher. */
int cp_selector_add_any(struct cp_selector *sel, const char *name, const char *const *values, size_t n);
/* Does the type (full name) match the selector's TYPE (exactly or by a
 * prefix of whole components)?  A type's name (its first component) is
 * compared as cp_type_name_canonical gives it: "cpu" finds process_cpu, and
 * process_cpu finds a store's older cpu:... series. */
bool cp_selector_match_type(const struct cp_selector *sel, const char *type);
/* The name that a profile type name (n bytes of name) stands for: process_cpu for cpu (the name
 * cprof record gave CPU profiles before it took Pyroscope's), else the name itself (not
 * NUL-terminated then: *len says how long). */
const char *cp_type_name_canonical(const char *name, size_t *len);
/* Starts an evaluation (a pass over the series): the time budget of the
 * selector's regexes starts again. */
void cp_selector_begin(const struct cp_selector *sel);
/* Labels as parallel name/value arrays; missing labels count as "".  1 when
 * they match, 0 when not; -CP_REGEX_ECOST when a regex is too costly
 * (reached a limit on this value, or the evaluation's budget), with a
 * message naming the label and the regex; -ENOMEM. */
int cp_selector_match_labels(const struct cp_selector *sel, const char *const *names, const char *const *values,
			     size_t n);
/* A series' labels: as cp_selector_match_labels for the matchers of labels it has; a matcher of a
 * label it lacks, among those of mask (matcher i: bit i; labels that no series has: pid, thread_id,
 * an off-CPU wait's state), is left to its samples, its bit set in *deferred (the others count a
 * missing label as "", as do the matchers past the 64th). */
int cp_selector_match_series(const struct cp_selector *sel, const char *const *names, const char *const *values,
			     size_t n, uint64_t mask, uint64_t *deferred);
/* The matchers of mask (cp_selector_match_series's deferred) against a sample's labels (missing ones
 * count as ""): 1, 0, or an error as cp_selector_match_labels. */
int cp_selector_match_sample(const struct cp_selector *sel, uint64_t mask, const char *const *names,
			     const char *const *values, size_t n);
/* A label name as selectors take it: [A-Za-z_][A-Za-z0-9_]*. */
bool cp_label_name_valid(const char *s, size_t n);
/* A part of a profile type name (cpu, process_cpu, alloc_space): letters,
 * digits, '_', '.' and '-', what a selector can name. */
bool cp_type_name_valid(const char *s);
/* Does one matcher accept value (NULL = the label is missing)?  1, 0, or an
 * error as cp_selector_match_labels. */
int cp_matcher_match(const struct cp_matcher *m, const char *value);

/* Durations: "90s", "1h30m", "15d", "2w", "500ms" (Prometheus units: ms s m
 * h d w y). 0 or -EINVAL with a message. */
int cp_parse_duration(const char *s, int64_t *nanos);
/* Times: RFC 3339 ("2026-11-22T10:00:00Z", offsets too), unix seconds
 * (13 digits: ms, 16: us, 19: ns), "now", "now-30m", "now+5m".  A time
 * outside what nanoseconds in an int64 hold (1677-09-21 to 2262-04-11, e.g.
 * now-300y or 9223372036854775808) is refused, not clamped: -ERANGE with
 * "out of range" in the message; malformed text: -EINVAL. */
int cp_parse_time(const char *s, int64_t now_ns, int64_t *ns);
int64_t cp_now_ns(void);

/* Time buckets for totals over time, aligned as Prometheus aligns range
 * queries: to multiples of the step since the Unix epoch, so that the same
 * data gives the same buckets whatever "now" is.  The first bucket starts at
 * floor(from / step) * step, bucket i is [start + i*step, start + (i+1)*step),
 * and the last one holds `to` (a range of 10 steps gives 11 buckets).  The
 * buckets are whole: they may reach before `from` and after `to`. */
#define CP_BUCKETS_MAX 100000
struct cp_buckets {
	int64_t start, step; /* nanoseconds */
	size_t n;
};
/* 0, or -EINVAL with a message (a step that is not positive, to before from,
 * more than CP_BUCKETS_MAX buckets). */
int cp_buckets_align(int64_t from, int64_t to, int64_t step, struct cp_buckets *b);
/* The end of the last bucket (saturated at INT64_MAX). */
int64_t cp_buckets_end(const struct cp_buckets *b);
/* The bucket holding t, or -1 when t is outside them. */
ssize_t cp_buckets_index(const struct cp_buckets *b, int64_t t);
/* The step when none is given: about 60 buckets over [from, to), in whole
 * seconds, at least one second. */
int64_t cp_buckets_default_step(int64_t from, int64_t to);

#endif
