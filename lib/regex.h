/* SPDX-License-Identifier: MIT */
/* Regular expressions (PCRE2) matched at a bounded cost.
 *
 * A cp_regex is one compiled pattern, JIT-compiled when PCRE2 can (else the
 * interpreter runs it); once compiled it is only read, and threads may share
 * it.  A cp_regex_run is what matching needs (match data, match limits, a
 * bounded JIT stack) and a time budget shared by all the matches made with it:
 * it belongs to one thread at a time, and to one evaluation (a request, one
 * pass of a selector over the series).
 *
 * Every match is bounded by PCRE2's match limit (backtracking steps; the JIT
 * counts them too), depth and heap limits (the interpreter's backtracking) and
 * the size of the JIT stack; all the matches of a run together by a budget of
 * time spent in pcre2_match.  A pattern that reaches a bound is an error,
 * -CP_REGEX_ECOST with the message "regex 'P' is too costly: ...", never a
 * silent "no match".  Patterns that do not backtrack wildly (hot_.*,
 * ^(main|run).*) stay orders of magnitude below the limits. */
#ifndef CP_REGEX_H
#define CP_REGEX_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* the error of a regex that reached a bound (a server answers 422) */
#define CP_REGEX_ECOST ERANGE

struct cp_regex_limits {
	uint32_t match;    /* PCRE2 match limit per match */
	uint32_t depth;    /* PCRE2 depth limit per match (interpreter) */
	uint32_t heap_kib; /* PCRE2 heap limit per match, KiB (interpreter) */
	uint32_t jit_kib;  /* the JIT stack, KiB */
	int64_t budget_ns; /* time in pcre2_match for all the run's matches */
};
/* The defaults: a match at the limit takes milliseconds, and a run stops
 * after about a second of matching. */
#define CP_REGEX_MATCH_LIMIT 1000000
#define CP_REGEX_DEPTH_LIMIT 100000
#define CP_REGEX_HEAP_KIB (16 * 1024)
#define CP_REGEX_JIT_KIB 1024
#define CP_REGEX_BUDGET_NS 1000000000LL

/* Whole-value matching (selectors): anchored at both ends, '.' also matches
 * a newline, '$' only at the very end.  Without it: a search (pprof -focus). */
#define CP_REGEX_WHOLE 1u
/* Letters match either case. */
#define CP_REGEX_CASELESS 2u

struct cp_regex;
/* Compile pattern (UTF-8).  0, or -EINVAL with PCRE2's reason in why (and the
 * offset of the error in the pattern in *offset); -ENOMEM. */
int cp_regex_compile(const char *pattern, unsigned flags, struct cp_regex **out, char *why, size_t whylen,
		     size_t *offset);
void cp_regex_free(struct cp_regex *re);
/* The pattern as given. */
const char *cp_regex_pattern(const struct cp_regex *re);

struct cp_regex_run;
/* NULL limits: the defaults.  NULL + errno (ENOMEM) on failure. */
struct cp_regex_run *cp_regex_run_new(const struct cp_regex_limits *limits);
void cp_regex_run_free(struct cp_regex_run *run);
/* A new evaluation: the time budget starts again. */
void cp_regex_run_reset(struct cp_regex_run *run);

/* Does re match s (len bytes)?  1 or 0; -CP_REGEX_ECOST when this match
 * reaches a limit, or when the run's budget is spent (then every match of the
 * run fails so until a reset); -ENOMEM.  A subject that is not valid UTF-8
 * does not match. */
int cp_regex_match(struct cp_regex_run *run, const struct cp_regex *re, const char *s, size_t len);

#endif
