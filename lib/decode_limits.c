/* SPDX-License-Identifier: MIT */
#include "decode_limits.h"

#include <errno.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gzip.h"
#include "util.h"

static struct cp_decode_limits limits = {
	.max_decompressed = CP_DECODE_MAX_DECOMPRESSED,
	.max_samples = CP_DECODE_MAX_SAMPLES,
	.max_locations = CP_DECODE_MAX_LOCATIONS,
	.max_json_containers = CP_DECODE_MAX_JSON_CONTAINERS,
	.max_json_values = CP_DECODE_MAX_JSON_VALUES,
	.max_inflating = CP_DECODE_MAX_DECOMPRESSED,
	.setting = NULL,
};
/* bytes the threads inflating now hold (reserved before they grow) */
static _Atomic size_t inflating;

const struct cp_decode_limits *cp_decode_limits(void)
{
	return &limits;
}

void cp_decode_limits_set(const struct cp_decode_limits *l)
{
	limits.max_decompressed = l->max_decompressed ? l->max_decompressed : CP_DECODE_MAX_DECOMPRESSED;
	limits.max_samples = l->max_samples ? l->max_samples : CP_DECODE_MAX_SAMPLES;
	limits.max_locations = l->max_locations ? l->max_locations : CP_DECODE_MAX_LOCATIONS;
	limits.max_json_containers = l->max_json_containers ? l->max_json_containers : CP_DECODE_MAX_JSON_CONTAINERS;
	limits.max_json_values = l->max_json_values ? l->max_json_values : CP_DECODE_MAX_JSON_VALUES;
	limits.max_inflating = l->max_inflating ? l->max_inflating : limits.max_decompressed;
	limits.setting = l->setting;
}

int cp_inflate_reserve(ptrdiff_t delta, size_t mine)
{
	size_t had;

	if (delta <= 0) {
		atomic_fetch_sub(&inflating, (size_t)-delta);
		return 0;
	}
	had = atomic_fetch_add(&inflating, (size_t)delta);
	/* over the budget while others hold some of it; a body alone always goes */
	if (had + (size_t)delta > limits.max_inflating && had > mine) {
		atomic_fetch_sub(&inflating, (size_t)delta);
		return -EBUSY;
	}
	return 0;
}

int cp_gunzip_limited(const void *in, size_t len, uint8_t **out, size_t *outlen)
{
	int err = cp_gunzip_reserve(in, len, limits.max_decompressed, cp_inflate_reserve, out, outlen);
	char sz[32];

	if (err == -EBUSY) {
		cp_size_str(limits.max_inflating, sz, sizeof(sz));
		return cp_error(EBUSY, "the bodies being decompressed now take %s already (%s): send it again later",
				sz, limits.setting ? limits.setting : "the most a profile may inflate to");
	}
	if (err != -EFBIG)
		return err;
	cp_size_str(limits.max_decompressed, sz, sizeof(sz));
	if (limits.setting)
		return cp_error(EFBIG, "the decompressed body is over %s (%s)", sz, limits.setting);
	return cp_error(EFBIG, "the decompressed data is over %s (the most a profile may inflate to)", sz);
}

int cp_decode_too_many(const char *what, size_t limit)
{
	return cp_error(EFBIG, "the profile has over %zu %s (the most one profile may have)", limit, what);
}

int cp_decode_too_large(size_t limit)
{
	char sz[32];

	cp_size_str(limit, sz, sizeof(sz));
	return cp_error(EFBIG, "decoding the profile would take over %s of memory (twice %s)", sz,
			limits.setting ? limits.setting : "the most a profile may inflate to");
}

void cp_decode_budget_init(struct cp_decode_budget *b)
{
	*b = (struct cp_decode_budget){ .max = 2 * cp_decode_limits()->max_decompressed };
}

#define BUDGET_HDR 16 /* the block's size, before it (keeps any field's alignment) */

void *cp_decode_budget_alloc(void *budget, size_t size)
{
	struct cp_decode_budget *b = budget;
	uint8_t *m;

	if (size > b->max - b->used || b->max - b->used - size < BUDGET_HDR || !(m = malloc(size + BUDGET_HDR))) {
		b->over = true;
		return NULL;
	}
	memcpy(m, &size, sizeof(size));
	b->used += size + BUDGET_HDR;
	return m + BUDGET_HDR;
}

void cp_decode_budget_free(void *budget, void *ptr)
{
	struct cp_decode_budget *b = budget;
	uint8_t *m = ptr;
	size_t size;

	if (!m)
		return;
	m -= BUDGET_HDR;
	memcpy(&size, m, sizeof(size));
	b->used -= size + BUDGET_HDR;
	free(m);
}

int cp_json_bounded(const char *s, size_t len, const char *what)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	size_t containers = 0, values = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			containers++;
		} else if (c == ',') {
			values++;
		}
	}
	if (containers > lim->max_json_containers)
		return cp_error(EFBIG, "%s holds over %zu JSON objects and arrays (the most one may have)", what,
				lim->max_json_containers);
	if (values > lim->max_json_values)
		return cp_error(EFBIG, "%s holds over %zu JSON values (the most one may have)", what, lim->max_json_values);
	return 0;
}
