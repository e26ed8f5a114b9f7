/* SPDX-License-Identifier: MIT */
/* The in-memory profile, with pprof semantics.
 *
 * Everything is deduplicated on insertion: strings, functions, mappings,
 * locations, stacks (lists of location ids, leaf first), label sets and
 * samples.  A sample is (stack, label set) -> one value per sample type; adding
 * a sample whose key exists adds the values.  Ids of functions, mappings and
 * locations are 1..N (0 = none), as pprof writes them; stack and label-set ids
 * are 0-based, with stack 0 the empty stack and label set 0 the empty set.
 * String id 0 is "". */
#ifndef CP_PROFILE_H
#define CP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "strtab.h"

struct cp_valuetype {
	uint32_t type, unit; /* string ids */
};

struct cp_function {
	uint32_t name, system_name, filename; /* string ids */
	int64_t start_line;
};

struct cp_mapping {
	uint64_t start, limit, offset;
	uint32_t filename, build_id; /* string ids */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct cp_line {
	uint32_t function; /* function id, 0 = none */
	int64_t line, column;
};

struct cp_location {
	uint32_t mapping; /* mapping id, 0 = none */
	uint64_t address;
	uint32_t line_off, nlines; /* into profile->lines; [0] is the innermost inlined callee */
	bool is_folded;
};

struct cp_label {
	uint32_t key, str; /* string ids; str == 0 means a numeric label */
	int64_t num;
	uint32_t num_unit; /* string id */
};

struct cp_span {
	uint32_t off, len;
};

struct cp_sample {
	uint32_t stack, labels; /* stack id, label-set id */
};

struct cp_profile {
	struct cp_strtab strs;

	struct cp_valuetype *sample_types;
	size_t ntypes;
	struct cp_valuetype period_type;
	int64_t period, time_nanos, duration_nanos;
	uint32_t default_sample_type, drop_frames, keep_frames, doc_url; /* string ids */
	uint32_t *comments; /* string ids */
	size_t ncomments;

	struct cp_function *functions; /* functions[id - 1] */
	uint32_t nfunctions;
	size_t fcap;
	struct cp_index fidx;

	struct cp_mapping *mappings;
	uint32_t nmappings;
	size_t mcap;
	struct cp_index midx;

	struct cp_location *locations;
	uint32_t nlocations;
	size_t lcap;
	struct cp_index lidx;
	struct cp_line *lines;
	uint32_t nlines;
	size_t linecap;

	struct cp_span *stacks; /* stacks[id] -> stack_locs[off .. off+len) */
	uint32_t nstacks;
	size_t stcap;
	uint32_t *stack_locs;
	size_t nstack_locs, slcap;
	struct cp_index stidx;

	struct cp_span *labelsets; /* labelsets[id] -> labels[off .. off+len) */
	uint32_t nlabelsets;
	size_t lscap;
	struct cp_label *labels;
	size_t nlabels, lbcap;
	struct cp_index lsidx;

	struct cp_sample *samples;
	int64_t *values; /* values[i * ntypes + t] */
	uint32_t nsamples;
	size_t sacap;
	struct cp_index saidx;

	/* unique per cp_profile_new(): identifies the profile to caches that
	 * outlive it (its address may be reused once it is freed) */
	uint64_t serial;

	/* set by cp_profile_keep_duplicates: each add makes a new entry */
	bool dups;
};

struct cp_profile *cp_profile_new(void);
void cp_profile_free(struct cp_profile *p);

/* Interning. Each returns the id (>= 0) or -ENOMEM / -EOVERFLOW. */
int64_t cp_profile_strn(struct cp_profile *p, const char *s, size_t len);
int64_t cp_profile_str(struct cp_profile *p, const char *s);
static inline const char *cp_profile_string(const struct cp_profile *p, uint32_t id)
{
	return cp_strtab_get(&p->strs, id);
}
int64_t cp_profile_function(struct cp_profile *p, const struct cp_function *f);
int64_t cp_profile_mapping(struct cp_profile *p, const struct cp_mapping *m);
int64_t cp_profile_location(struct cp_profile *p, uint32_t mapping, uint64_t address,
			    const struct cp_line *lines, size_t nlines, bool is_folded);
/* Replaces the lines of location id (symbols learnt after it was added);
 * its old lines stay unused in p->lines.  A location equal to the new one
 * may exist already: both then stand.  0, or -ENOMEM / -EOVERFLOW. */
int cp_profile_set_lines(struct cp_profile *p, uint32_t id, const struct cp_line *lines, size_t nlines);
int64_t cp_profile_stack(struct cp_profile *p, const uint32_t *locs, size_t n);
/* labels need not be sorted; the stored set is. */
int64_t cp_profile_labelset(struct cp_profile *p, const struct cp_label *labels, size_t n);
/* While on, each of the calls above (strings included) adds a new entry with
 * a new id even when an equal one is there: for a copy of rows that may
 * repeat themselves (a store's dictionary, lib/store/dict.h), id for id.
 * Lookups find the first of equal entries. */
void cp_profile_keep_duplicates(struct cp_profile *p, bool on);

/* Set the sample types (by name/unit strings); only while there are no samples. */
int cp_profile_add_sample_type(struct cp_profile *p, const char *type, const char *unit);
int cp_profile_set_period_type(struct cp_profile *p, const char *type, const char *unit, int64_t period);

/* Adds a comment (pprof's comment field), once. 0 or -ENOMEM. */
int cp_profile_add_comment(struct cp_profile *p, const char *text);
/* Adds values (ntypes of them) to the sample (stack, labels). 0 or -errno. */
int cp_profile_add_sample(struct cp_profile *p, uint32_t stack, uint32_t labels, const int64_t *values);

static inline const int64_t *cp_profile_values(const struct cp_profile *p, uint32_t sample)
{
	return p->values + (size_t)sample * p->ntypes;
}
static inline const struct cp_location *cp_profile_loc(const struct cp_profile *p, uint32_t id)
{
	return &p->locations[id - 1];
}

/* The bytes of memory p holds (its arrays' capacities and indexes). */
size_t cp_profile_bytes(const struct cp_profile *p);

/* Index of a sample type by name ("cpu"), by "type/unit", or by a decimal
 * index; NULL picks the default (default_sample_type, else the last).
 * Returns the index or -ENOENT with the message listing the types. */
int cp_profile_sample_index(const struct cp_profile *p, const char *name);
/* The sum of value vidx over the samples, saturated at INT64_MIN / INT64_MAX. */
int64_t cp_profile_total(const struct cp_profile *p, int vidx);

/* Merging with pprof semantics. */
struct cp_merge_opts {
	double scale;            /* multiply values (rounded); 0 means 1 */
	const char *tag_key;     /* when set, add this string label to every sample */
	const char *tag_value;
	/* labels with these keys are left out of the samples (ndrop of them, at most 8) */
	const char *const *drop_keys;
	size_t ndrop;
	/* keep only samples for which this returns true */
	bool (*keep)(const struct cp_profile *src, uint32_t sample, void *arg);
	void *keep_arg;
	/* Dictionary mode (the store): map src's stacks and label sets into dst
	 * without checking or merging headers and without adding samples;
	 * out_stack[i] / out_labels[i] receive sample i's ids in dst, UINT32_MAX
	 * for samples left out (keep() refused, or all values zero). */
	uint32_t *out_stack, *out_labels;
};
/* Checks that src is compatible with dst (period type and sample types); an
 * empty dst (no sample types) takes src's header. */
int cp_profile_compatible(const struct cp_profile *dst, const struct cp_profile *src);
int cp_profile_merge(struct cp_profile *dst, const struct cp_profile *src,
		     const struct cp_merge_opts *opts);
/* Locations locs[0..n) of src made dst's, in place (their mappings,
 * functions and strings come along; 0 stays 0): 0 or -ENOMEM. */
int cp_profile_import_locations(struct cp_profile *dst, const struct cp_profile *src, uint32_t *locs, size_t n);
/* A new profile with only the samples that pass; NULL + errno on error. */
struct cp_profile *cp_profile_copy(const struct cp_profile *src, const struct cp_merge_opts *opts);

/* Drop samples and sample types (the dictionary stays): the profile can take
 * another set of samples of other types. */
void cp_profile_clear_samples(struct cp_profile *p);

/* Keep only the sample types with keep[t] (in their order; the samples
 * stay, with fewer values). 0, or -EINVAL when none would be left. */
int cp_profile_keep_types(struct cp_profile *p, const bool *keep);

/* Frames of a stack, leaf first, with inline frames expanded.  A frame with
 * no function has name 0; then the location identifies it. */
struct cp_frame {
	uint32_t name;     /* string id of the function name, 0 if unknown */
	uint32_t filename; /* string id */
	int64_t line;
	uint32_t location; /* location id */
	bool inlined;      /* an inlined call inside location (not its outermost line) */
};
/* Fills frames (growing *frames / *cap with realloc) and returns the count,
 * or -ENOMEM. */
int cp_profile_frames(const struct cp_profile *p, uint32_t stack, struct cp_frame **frames, size_t *cap);
/* The display name of a frame: the function name, or for an unsymbolized one
 * "mapping+0xoffset" / "0xaddress", written into buf. */
const char *cp_frame_name(const struct cp_profile *p, const struct cp_frame *f, char *buf, size_t len);

/* Filtering (pprof -focus / -ignore): regular expressions (PCRE2, unanchored)
 * matched against frame names.  A sample is kept if some frame matches focus
 * (when given) and no frame matches ignore (when given).  The regexes are
 * matched under limits, with one budget of time for the filter's life
 * (regex.h): a filter serves one thread, for one request.  cp_filter_new:
 * NULL + errno (EINVAL with a message naming the regex, ENOMEM). */
struct cp_filter;
struct cp_filter *cp_filter_new(const char *focus, const char *ignore);
void cp_filter_free(struct cp_filter *f);
/* The keep() of cp_merge_opts.  After a regex is too costly it keeps nothing,
 * and cp_filter_error says why. */
bool cp_filter_keep(const struct cp_profile *p, uint32_t sample, void *filter);
/* 0, or the error that stopped the filter: -CP_REGEX_ECOST (with the message
 * "--focus: regex 'RE' is too costly: ..."), -ENOMEM.  It stays. */
int cp_filter_error(const struct cp_filter *f);
/* p filtered (p itself when f is NULL; else a copy, and p is freed);
 * NULL + errno on failure (ERANGE, i.e. CP_REGEX_ECOST: a regex was too
 * costly), p freed too. */
struct cp_profile *cp_profile_filter(struct cp_profile *p, struct cp_filter *f);

#endif
