/* SPDX-License-Identifier: MIT */
/* PCRE2 patterns matched under limits: see regex.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "util.h"

struct cp_regex {
	pcre2_code *code;
	char *pattern;
};

struct cp_regex_run {
	struct cp_regex_limits lim;
	pcre2_match_context *mc;
	pcre2_jit_stack *jit;
	pcre2_match_data *md;
	int64_t spent; /* ns in pcre2_match since the last reset */
};

int cp_regex_compile(const char *pattern, unsigned flags, struct cp_regex **out, char *why, size_t whylen,
		     size_t *offset)
{
	uint32_t opts = PCRE2_UTF;
	struct cp_regex *re;
	PCRE2_SIZE off = 0;
	int code;

	*out = NULL;
	*offset = 0;
	if (whylen)
		why[0] = '\0';
	/* the options, not a "^(?:...)$" around the text, which "a)|(b" would escape */
	if (flags & CP_REGEX_WHOLE)
		opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY;
	if (flags & CP_REGEX_CASELESS)
		opts |= PCRE2_CASELESS;
	if (!(re = calloc(1, sizeof(*re))) || !(re->pattern = strdup(pattern))) {
		free(re);
		return cp_error(ENOMEM, "out of memory compiling the regex '%.64s'", pattern);
	}
	if (!(re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL))) {
		if (code == PCRE2_ERROR_NOMEMORY) {
			cp_regex_free(re);
			return cp_error(ENOMEM, "out of memory compiling the regex '%.64s'", pattern);
		}
		if (whylen)
			pcre2_get_error_message(code, (PCRE2_UCHAR *)why, whylen);
		*offset = off;
		cp_regex_free(re);
		return -EINVAL;
	}
	/* JIT when this PCRE2 has it and the pattern allows (else the interpreter) */
	pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
	*out = re;
	return 0;
}

void cp_regex_free(struct cp_regex *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	free(re->pattern);
	free(re);
}

const char *cp_regex_pattern(const struct cp_regex *re)
{
	return re->pattern;
}

struct cp_regex_run *cp_regex_run_new(const struct cp_regex_limits *limits)
{
	static const struct cp_regex_limits dflt = { CP_REGEX_MATCH_LIMIT, CP_REGEX_DEPTH_LIMIT, CP_REGEX_HEAP_KIB,
						     CP_REGEX_JIT_KIB, CP_REGEX_BUDGET_NS };
	struct cp_regex_run *run = calloc(1, sizeof(*run));
	uint32_t jit = 0;

	if (!run)
		goto nomem;
	run->lim = limits ? *limits : dflt;
	/* one pair of offsets: only whether it matches counts */
	if (!(run->mc = pcre2_match_context_create(NULL)) || !(run->md = pcre2_match_data_create(1, NULL)))
		goto nomem;
	pcre2_set_match_limit(run->mc, run->lim.match);
	pcre2_set_depth_limit(run->mc, run->lim.depth);
	pcre2_set_heap_limit(run->mc, run->lim.heap_kib);
	if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit) {
		size_t max = (size_t)run->lim.jit_kib * 1024, start = max < 32 * 1024 ? max : 32 * 1024;

		if (!(run->jit = pcre2_jit_stack_create(start, max, NULL)))
			goto nomem;
		pcre2_jit_stack_assign(run->mc, NULL, run->jit);
	}
	return run;
nomem:
	cp_regex_run_free(run);
	errno = ENOMEM;
	return NULL;
}

void cp_regex_run_free(struct cp_regex_run *run)
{
	if (!run)
		return;
	pcre2_match_data_free(run->md);
	pcre2_jit_stack_free(run->jit);
	pcre2_match_context_free(run->mc);
	free(run);
}

void cp_regex_run_reset(struct cp_regex_run *run)
{
	run->spent = 0;
}


static int costly(const struct cp_regex_run *run, const struct cp_regex *re, int rc, size_t len)
{
	char what[128];

	switch (rc) {
	case PCRE2_ERROR_MATCHLIMIT:
		snprintf(what, sizeof(what), "more than %u backtracking steps on a %zu-byte value", run->lim.match,
			 len);
		break;
	case PCRE2_ERROR_DEPTHLIMIT:
		snprintf(what, sizeof(what), "backtracking deeper than %u on a %zu-byte value", run->lim.depth, len);
		break;
	case PCRE2_ERROR_HEAPLIMIT:
		snprintf(what, sizeof(what), "more than %u KiB of backtracking memory on a %zu-byte value",
			 run->lim.heap_kib, len);
		break;
	case PCRE2_ERROR_JIT_STACKLIMIT:
		snprintf(what, sizeof(what), "more than %u KiB of JIT stack on a %zu-byte value", run->lim.jit_kib,
			 len);
		break;
	default:
		snprintf(what, sizeof(what), "matching took more than %lld ms in all",
			 (long long)(run->lim.budget_ns / 1000000));
		break;
	}
	return cp_error(CP_REGEX_ECOST, "regex '%.200s' is too costly: %s", re->pattern, what);
}

int cp_regex_match(struct cp_regex_run *run, const struct cp_regex *re, const char *s, size_t len)
{
	int64_t t0;
	int rc;

	if (run->spent > run->lim.budget_ns)
		return costly(run, re, 0, len);
	t0 = cp_mono_ns();
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, run->md, run->mc);
	run->spent += cp_mono_ns() - t0;
	if (rc >= 0) /* 0: a match with more groups than the one pair of offsets */
		return 1;
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
	case PCRE2_ERROR_PARTIAL:
		return 0;
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
	case PCRE2_ERROR_JIT_STACKLIMIT:
		return costly(run, re, rc, len);
	case PCRE2_ERROR_NOMEMORY:
		return cp_error(ENOMEM, "out of memory matching regex '%.200s'", re->pattern);
	default:
		/* the subject is not valid UTF-8 (the other errors are about the
		 * arguments, which are right): it does not match */
		return 0;
	}
}
